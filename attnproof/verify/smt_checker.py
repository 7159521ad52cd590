"""z3 and cvc5 as checkers of the verifier (issue 20, item 2): the SMT leg behind the seam.

Each solver is one :class:`SmtChecker` (engine ``z3`` or ``cvc5``) of the identities and bounds:
:func:`attnproof.verify.smt.check_entry` translates the entry's statement to SMT-LIB and asks the
solver for ``unsat`` of its negation.  The verdict the certificate records:

* ``passed`` True: every goal (and its argument-identity guard) ``unsat``: proved;
* ``passed`` False: the solver found a model of the negated statement (``sat``): the statement,
  as encoded, is contradicted, and the entry's own checks fail;
* ``passed`` None: ``"not run: <reason>"`` when the translation cannot encode the statement
  soundly (e.g. an interval claim, a float constant), or ``"no verdict: ..."`` when the solver
  answered ``unknown`` within :data:`TIMEOUT_MS`, failed, or a guard was not proved (sympy's
  choice of instances, not the statement, is then at fault).  Never counted as passed.

Verdicts are cached (:mod:`attnproof.verify.checkers`) under the entry's SHA-256 and the SHA-256
of the translation's source, per solver version and time limit.
"""

from __future__ import annotations

import functools
from typing import Any

from . import smt
from .checkers import Verdict, register_checker, source_sha256

#: Per-query time limit of each solver (ms).  Measured over the registry's 74 SMT entries on 2
#: busy cores, cvc5 proved 53 at smt.TIMEOUT_MS = 5 s (342 s) and 51 at 1 s (209 s): 1 s lost
#: thmB.1/ratio-error and prop7.1/multihead-collapse, which 2 s and 3 s both prove.  3 s keeps every
#: proof with a margin; its unknowns (fraction-with-exp identities no limit up to 5 s decides) cost
#: 2 x 3 s instead of 2 x 5 s each.
TIMEOUT_MS = 3_000


@functools.cache
def _version(engine: str) -> str:
    return smt.version(engine)


@functools.cache
def _source() -> str:
    return source_sha256(smt)


class SmtChecker:
    """One SMT solver (``z3`` or ``cvc5``) as a :class:`~attnproof.verify.checkers.Checker`."""

    kinds = ("identity", "bound")

    def __init__(self, engine: str) -> None:
        self.engine = engine

    def version(self) -> str:
        return f"{_version(self.engine)} (per query {TIMEOUT_MS} ms)"

    def cache_key(self, ident: Any, digest: str) -> str:
        """The entry's statement hash and the translation's source hash."""
        return f"{digest}:{_source()}"

    def check(self, ident: Any, built: list[Any]) -> Verdict:
        res = smt.check_entry(ident, (self.engine,), TIMEOUT_MS)
        if res.unsupported:
            return Verdict(None, f"not run: {res.unsupported}")
        report = res.reports[self.engine]
        if report.passed:
            return Verdict(True, report.detail)
        if report.counterexample:  # a model of the negated statement: contradicted
            return Verdict(False, report.detail)
        return Verdict(None, f"no verdict: {report.detail}")


Z3 = register_checker(SmtChecker("z3"))
CVC5 = register_checker(SmtChecker("cvc5"))

__all__ = ["TIMEOUT_MS", "SmtChecker", "Z3", "CVC5"]
