"""Arb as a checker of the verifier (issue 20, item 3): every interval enclosure computed twice.

The bounds whose claims are ``mpmath.iv`` intervals (the rooms' enclosures,
:data:`attnproof.verify.enclosures.ENCLOSURES`) are recomputed with Arb ball arithmetic
(``python-flint``); the entry passes the ``arb`` check only when both enclosures overlap and both
are ``>= 0`` (:func:`attnproof.verify.arb.check_entry`).  A bound whose claims are sympy
expressions has no enclosure to compare: ``"not run"``.  Verdicts are cached under the entry's
SHA-256 and the SHA-256 of :mod:`~attnproof.verify.arb` and of the room's module that holds the
entry's enclosures.
"""

from __future__ import annotations

import inspect
from typing import Any

import flint

from . import arb
from .checkers import Verdict, register_checker, source_sha256


class ArbChecker:
    """Arb (python-flint) beside mpmath.iv, as a :class:`~attnproof.verify.checkers.Checker`."""

    engine = "arb"
    kinds = ("bound",)

    def version(self) -> str:
        return f"python-flint {flint.__version__}"

    def cache_key(self, ident: Any, digest: str) -> str:
        """The entry's statement hash (it covers the interval claims) and the Arb side's source:
        the engine and the room's module of the entry's enclosures."""
        fn = arb.load().get(ident.id)
        return f"{digest}:{source_sha256(arb, *([inspect.getmodule(fn)] if fn else []))}"

    def check(self, ident: Any, built: list[Any]) -> Verdict:
        if ident.id not in arb.load():
            return Verdict(None, "not run: no interval enclosure (the claims are sympy expressions)")
        report = arb.check_entry(ident.id)
        return Verdict(report.passed, report.detail)


ARB = register_checker(ArbChecker())

__all__ = ["ArbChecker", "ARB"]
