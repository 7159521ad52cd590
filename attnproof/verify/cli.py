"""``attnproof ledger``: the paper's claims, their checks and computed status, from the shell.

The linked tests' outcomes come from the latest record (:data:`~attnproof.verify.outcomes.RECORD`,
written by ``python3 dev.py test``) unless ``--results FILE`` or ``--run-tests`` says otherwise;
the text output's first line says when and on what code they were recorded, and outcomes of
other code are *stale*.  With no record it says, in one line, how to make one (exit 2).  A
results file is validated before any work (a bad one: one line, exit 2).

Progress goes to stderr, one line per identity, learner, measured check, linked test and claim
as each ends, and the total at the end, so ``--json`` on stdout stays clean.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import AttnproofError, InvalidInputError
from .ledger import evaluate
from .outcomes import RECORD, Outcomes, has_tests

#: What ``attnproof ledger`` does, in one line (its parser's description and the CLI's help).
SUMMARY = ("the paper's claims, their checks and computed status; exit 0 when every status is as it "
           "should be, 1 when a linked check failed, did not run or is stale, 2 for a bad argument or "
           "no recorded test outcomes")


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
                     help="test outcomes recorded by `pytest --ledger-results PATH` (default: the latest "
                          "record of `python3 dev.py test`)")
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


#: How to make the record ``attnproof ledger`` reads by default, in one line.
HOW_TO_RECORD = ("record them with `python3 dev.py test` (or `pytest -p attnproof.verify.outcomes`), "
                 "or run `attnproof ledger --run-tests`")


def recorded_outcomes(results: str | None) -> Outcomes:
    """The outcomes to read: the file ``results``, else the latest record (:data:`RECORD`).

    Raises
    ------
    InvalidInputError
        No such file (with how to make the record), or not a results file.
    """
    if results:
        if not Path(results).is_file():
            raise InvalidInputError(f"no results file {results}")
        return Outcomes.load(results)
    if not RECORD.is_file():
        where = (f"at {RECORD}" if has_tests()
                 else "(the test suite is not beside the package: pass --results FILE)")
        raise InvalidInputError(f"no recorded test outcomes {where}: {HOW_TO_RECORD}")
    outcomes = Outcomes.load(RECORD)
    outcomes.source = "the latest record"
    return outcomes


def run_ledger(args: argparse.Namespace) -> int:
    """Evaluate and print the ledger for parsed ``args`` (see :func:`add_arguments`)."""
    t0 = time.perf_counter()
    progress = None if getattr(args, "quiet", False) else say
    try:
        outcomes = None if args.run_tests else recorded_outcomes(args.results)
    except InvalidInputError as exc:  # before any work: one line, exit 2
        print(f"attnproof ledger: error: {exc}", file=sys.stderr)
        return 2
    try:
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
        if "provenance" in ledger.tests:
            print(ledger.tests["provenance"] + "\n")
        print(ledger.to_markdown(), end="")
        if args.errata:
            print("\n" + ledger.errata_markdown(), end="")
    return 0 if ledger.passed else 1


def main(argv: list[str] | None = None) -> int:
    """``attnproof ledger [--json] [--run-tests | --results PATH] [--errata] [--quiet]``."""
    return run_ledger(build_parser().parse_args(argv))


__all__ = ["SUMMARY", "HOW_TO_RECORD", "add_arguments", "build_parser", "say", "recorded_outcomes",
           "run_ledger", "main"]
