"""Sphinx extension: the build says which chapter it is reading (executing) and how long it took.

Executing a chapter (MyST-NB, through the execution cache) happens while Sphinx reads it, between
the ``source-read`` and ``doctree-read`` events: this extension prints a line at each, with the
chapter's time, so a build on a loaded machine is never minutes of silence, and a failed chapter
is named the moment it fails.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

_started: dict[str, float] = {}


def _say(line: str) -> None:
    print(f"[book] {line}", file=sys.stdout, flush=True)


def chapter_started(app: Sphinx, docname: str, source: list[str]) -> None:
    _started[docname] = time.perf_counter()
    _say(f"{docname}: reading (executes its cells unless the cache holds them)")


def chapter_read(app: Sphinx, doctree: nodes.document) -> None:
    docname = app.env.docname
    t0 = _started.pop(docname, None)
    if t0 is not None:
        _say(f"{docname}: done in {time.perf_counter() - t0:.1f} s")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", chapter_started)
    app.connect("doctree-read", chapter_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
