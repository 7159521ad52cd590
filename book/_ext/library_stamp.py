"""Sphinx extension: the execution cache never serves outputs of an older library.

jupyter-book's execution cache (``execute_notebooks: cache``) re-runs a chapter only when its
cells change. The chapters' numbers also depend on the ``attnproof`` source, so this extension
hashes that source at every build: when the hash differs from the one the cache was filled
with, the cache is emptied and every chapter is read (and executed) again.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.environment import BuildEnvironment

import attnproof

STAMP = "attnproof-source.sha256"


def source_hash() -> str:
    """SHA-256 over the path and bytes of every file of the installed ``attnproof`` package."""
    root = Path(attnproof.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def check_stamp(app: Sphinx, config: Config) -> None:
    """Empty the execution cache and mark the build stale when the library changed."""
    cache = Path(config.nb_execution_cache_path or Path(app.outdir).parent / ".jupyter_cache")
    stamp, digest = cache.parent / STAMP, source_hash()
    app.attnproof_stale = not stamp.exists() or stamp.read_text() != digest  # type: ignore[attr-defined]
    if app.attnproof_stale:  # type: ignore[attr-defined]
        shutil.rmtree(cache, ignore_errors=True)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)


def reread_all(app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str],
               removed: set[str]) -> list[str]:
    """Every chapter, when the library changed since the last build (else none extra)."""
    return sorted(env.found_docs) if app.attnproof_stale else []  # type: ignore[attr-defined]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", check_stamp, priority=400)
    app.connect("env-get-outdated", reread_all)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
