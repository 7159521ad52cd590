"""The configured lint (pyproject's [tool.ruff]) holds for the library and the tests, and the
tests' own rule: a relative approx states its absolute tolerance."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with the [test] extra)")
    out = subprocess.run(
        [ruff, "check", "attnproof", "tests", "tools", "book/_ext", "dev.py"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_relative_approx_states_its_absolute_tolerance():
    """``pytest.approx(x, rel=r)`` keeps approx's default ``abs=1e-12``: a pin of a bound near 1e-15
    with ``rel=1e-14`` then passes for any value within 1e-12, and cannot fail (found on 30 calls:
    a ``(d + 5)`` mutant of ``arith._first_order`` survived its pins).  Every approx that states
    ``rel`` states ``abs`` too."""
    loose = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            keywords = {k.arg for k in node.keywords}
            if name == "approx" and "rel" in keywords and "abs" not in keywords:
                loose.append(f"{path.name}:{node.lineno}")
    assert not loose, f"approx(rel=...) without abs=: {loose}"
