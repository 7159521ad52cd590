"""``attnproof ledger``: the paper's claims, their checks and computed status, from the shell.

Progress goes to stderr, one line per identity, learner, measured check, linked test and claim
as each ends, and the total at the end, so ``--json`` on stdout stays clean.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import AttnproofError
from .ledger import evaluate
from .outcomes import Outcomes

#: What ``attnproof ledger`` does, in one line (its parser's description and the CLI's help).
SUMMARY = ("the paper's claims, their checks and computed status; exit 0 when every status is as it "
           "should be, 1 when a linked check failed or did not run, 2 for a bad argument")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (as the rest of the CLI)
        self.exit(2, f"attnproof ledger: error: {message}\n")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``attnproof ledger`` (shared by :func:`build_parser` and the CLI's subcommand)."""
    p.add_argument("--json", action="store_true", help="machine-readable output")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--run-tests", action="store_true",
                     help="run the linked tests now (pytest subprocess; needs the source checkout)")
    src.add_argument("--results", metavar="PATH",
                     help="test outcomes recorded by `pytest --ledger-results PATH`")
    p.add_argument("--errata", action="store_true", help="also print the errata (text output)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``attnproof ledger`` when run on its own (:func:`main`)."""
    p = _Parser(prog="attnproof ledger", description=SUMMARY[0].upper() + SUMMARY[1:] + ".")
    add_arguments(p)
    return p


def say(line: str) -> None:
    """One progress line on stderr (stdout stays the result)."""
    print(line, file=sys.stderr, flush=True)


def run_ledger(args: argparse.Namespace) -> int:
    """Evaluate and print the ledger for parsed ``args`` (see :func:`add_arguments`)."""
    t0 = time.perf_counter()
    progress = None if getattr(args, "quiet", False) else say
    try:
        outcomes = None
        if args.results:
            if not Path(args.results).is_file():
                print(f"attnproof ledger: error: no results file {args.results}", file=sys.stderr)
                return 2
            outcomes = Outcomes.load(args.results)
        ledger = evaluate(outcomes=outcomes, run_tests=args.run_tests, progress=progress)
    except AttnproofError as exc:
        print(f"attnproof ledger: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if progress is not None:
        s = ledger.summary()
        progress(f"ledger: {s['claims']} claims, " + ", ".join(f"{n} {k}" for k, n in s["statuses"].items())
                 + f"; every status as it should be: {'yes' if ledger.passed else 'NO'} "
                 f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        print(ledger.to_json())
    else:
        print(ledger.to_markdown(), end="")
        if args.errata:
            print("\n" + ledger.errata_markdown(), end="")
    return 0 if ledger.passed else 1


def main(argv: list[str] | None = None) -> int:
    """``attnproof ledger [--json] [--run-tests | --results PATH] [--errata] [--quiet]``."""
    return run_ledger(build_parser().parse_args(argv))


__all__ = ["SUMMARY", "add_arguments", "build_parser", "say", "run_ledger", "main"]
