"""The numerics leg of the formal checks (issue 20): every mpmath.iv enclosure again, with Arb.

The registry's bounds whose claims are ``mpmath.iv`` intervals are recomputed with Arb ball
arithmetic (``python-flint``, C code independent of mpmath) at :data:`PREC` bits.  The Arb side
evaluates the *mathematical expression of each claim*, written once more from the paper in the
claim's room (``theorems/<room>/arb.py``, registered with
:func:`attnproof.verify.enclosures.enclosure`), on the same exact inputs the registry uses.  This
module is the engine: it loads the rooms' enclosures (:func:`load`), evaluates them at
:data:`PREC` bits and compares (:func:`check_entry`).  A claim passes only when the two
enclosures overlap and both are ``>= 0``.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import flint
from flint import arb

from .. import theorems  # importing the rooms registers every entry (and every own certificate)
from .enclosures import ENCLOSURES, OWN_CERTIFICATE
from .registry import REGISTRY

#: Working precision of the Arb enclosures, in bits.
PREC = 200


@dataclass
class ArbReport:
    """The Arb leg on one entry: ``passed``, ``seconds``, ``version``, ``detail`` (the checker seam),
    and the claims that failed, as ``(description, mpmath interval, Arb ball, why)``."""

    id: str
    passed: bool
    seconds: float
    version: str
    detail: str
    failures: list[tuple[str, str, str, str]]

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "seconds": self.seconds, "version": self.version,
                "detail": self.detail}


def compare(desc: str, iv: Any, ball: arb) -> str:
    """Why an mpmath interval and an Arb ball of one claim fail (empty when they pass): they must
    overlap and both be >= 0."""
    lo, hi = iv._mpi_
    mp = _mpf_ball(lo).union(_mpf_ball(hi))
    if not mp.overlaps(ball):
        return f"the enclosures do not overlap: mpmath.iv {iv}, Arb {ball.str(20, radius=True)}"
    if not iv.a >= 0:
        return f"mpmath.iv does not show >= 0: {iv}"
    if not ball >= 0:
        return f"Arb does not show >= 0: {ball.str(20, radius=True)}"
    return ""


def _mpf_ball(raw: tuple[int, int, int, int]) -> arb:
    """An endpoint of an mpmath interval (a raw binary float ``(sign, man, exp, bc)``) as the exact
    Arb ball it denotes; an infinite endpoint is the whole line."""
    sign, man, exp, _ = raw
    if man == 0:
        return arb(0) if exp == 0 else arb("+inf").union(arb("-inf"))
    return (-1) ** sign * arb(flint.fmpz(int(man))) * arb(2) ** int(exp)


@functools.cache
def load() -> dict[str, Callable[[], list[arb]]]:
    """Import every room's ``arb.py`` (rooms found by :data:`attnproof.theorems.ROOMS`), which
    registers its enclosures; return :data:`~attnproof.verify.enclosures.ENCLOSURES`."""
    for room in theorems.ROOMS:
        if (Path(theorems.__path__[0]) / room / "arb.py").is_file():
            importlib.import_module(f"{theorems.__name__}.{room}.arb")
    return ENCLOSURES


def check_entry(id: str, enclosures: dict[str, Callable[[], list[arb]]] | None = None) -> ArbReport:
    """Compare the registry's interval claims of ``id`` with their Arb enclosures (the rooms'
    registered ones, or ``enclosures``)."""
    fn = (enclosures or load())[id]
    t0 = time.perf_counter()
    claims = [(desc, q) for desc, q in REGISTRY[id].build() if hasattr(q, "a") and hasattr(q, "b")]
    with flint.ctx.workprec(PREC):
        balls = fn()
    failures = []
    if len(balls) != len(claims):
        failures.append(("", "", "", f"{len(claims)} interval claims, {len(balls)} Arb enclosures"))
    for (desc, q), ball in zip(claims, balls):
        why = compare(desc, q, ball)
        if why:
            failures.append((desc, str(q), ball.str(20, radius=True), why))
    seconds = time.perf_counter() - t0
    detail = (f"{len(claims)} interval claims: mpmath.iv and Arb ({PREC} bits) overlap and both >= 0"
              if not failures else f"{len(failures)} of {len(claims)} claims fail; first: "
              f"{failures[0][0]}: {failures[0][3]}")
    return ArbReport(id, not failures, seconds, f"python-flint {flint.__version__}", detail, failures)


def check_all() -> list[ArbReport]:
    """:func:`check_entry` on every registered enclosure (:func:`load`)."""
    return [check_entry(i) for i in load()]


__all__ = ["PREC", "load", "ENCLOSURES", "OWN_CERTIFICATE", "ArbReport", "compare", "check_entry",
           "check_all"]
