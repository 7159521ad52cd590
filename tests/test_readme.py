"""The README's examples run as written (what a new user copies first)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_five_line_example_runs_and_prints_what_its_comment_says():
    block = python_blocks()[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    queries, error = out.getvalue().split()
    assert int(queries) == 72  # d + d^2 at d = 8, as the comment says
    assert float(error) < 1e-11  # "error ~1e-12"
