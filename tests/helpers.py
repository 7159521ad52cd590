"""Helpers shared by the test files: ``from helpers import seeds, rel, cli``.

pytest puts ``tests/`` on ``sys.path`` (rootdir-relative "prepend" import mode, no
``__init__.py``), so this module imports like any other; fixtures and the Hypothesis profiles
stay in ``conftest.py``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

#: Seeds for ``numpy.random.default_rng``: the whole range numpy accepts as one 32-bit word.
seeds = st.integers(0, 2**32 - 1)


def rel(a: object, b: object) -> float:
    """||a - b|| / ||b|| in float64 (||b|| floored at 1e-300 so that b = 0 gives ||a|| / 1e-300)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``attnproof ARGS`` as a user does (a fresh interpreter), capturing text output."""
    return subprocess.run(
        [sys.executable, "-m", "attnproof.cli", *args], capture_output=True, text=True, timeout=timeout
    )


#: The book's source folder.
BOOK = Path(__file__).resolve().parent.parent / "book"
JB = Path(sys.executable).parent / "jupyter-book"


def build(source: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``jupyter-book build source -W --keep-going`` (warnings are errors); output and seconds."""
    t0 = time.perf_counter()
    r = subprocess.run([str(JB), "build", str(source), "-W", "--keep-going", *args],
                       capture_output=True, text=True, timeout=3600)
    return r, time.perf_counter() - t0


def declaring(declared: object, push) -> type:
    """A :class:`~attnproof.oracles.ValueOracle` class that declares ``declared`` as its rounding and
    answers the model's value moved by ``push(X, y)``: the adversaries that spend a declared error
    model, to show a bound holds against them and is nearly attained."""
    from attnproof.oracles import ValueOracle

    class Declared(ValueOracle):
        @property
        def rounding(self):
            return declared

        def _answer(self, Xb: np.ndarray) -> np.ndarray:
            return push(Xb, np.asarray(self.model(Xb), dtype=np.float64))

    return Declared
