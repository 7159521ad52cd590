"""The seam of the Arb leg (issue 19): where a room registers its Arb enclosures, without flint.

A bound whose claims are ``mpmath.iv`` intervals is recomputed with Arb ball arithmetic by the
engine :mod:`attnproof.verify.arb`; the expression Arb evaluates is the room's mathematics, so it
lives in the room, ``theorems/<room>/arb.py``, registered here with :func:`enclosure`.  That module
imports ``python-flint``; the room's ``__init__`` never imports it (the engine loads every room's
``arb.py`` when it runs, :func:`attnproof.verify.arb.load`), so importing a room or the CLI does
not import flint.  A bound whose interval claims are the output of a certified computation of
its own (not a closed form to re-evaluate) is declared where it is registered, with
:func:`own_certificate`.  Every interval claim of the registry is in exactly one of the two
(``tests/test_arb.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import AttnproofError

#: Entry ID -> its Arb enclosures: a function of no argument returning one Arb ball per interval
#: claim of the entry, in the registry's order (evaluated by the engine at its precision).
ENCLOSURES: dict[str, Callable[[], list[Any]]] = {}

#: Entry ID -> why its interval claims carry their own certificate (no Arb enclosure).
OWN_CERTIFICATE: dict[str, str] = {}


def enclosure(id: str) -> Callable[[Callable[[], list[Any]]], Callable[[], list[Any]]]:
    """Register the decorated function as the Arb enclosures of the interval claims of ``id``.

    Raises
    ------
    AttnproofError
        If ``id`` already has enclosures or is declared its own certificate.
    """

    def register(fn: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
        if id in ENCLOSURES or id in OWN_CERTIFICATE:
            raise AttnproofError(f"Arb enclosures of {id!r} are registered twice")
        ENCLOSURES[id] = fn
        return fn

    return register


def own_certificate(why: str, *ids: str) -> None:
    """Declare that the interval claims of ``ids`` are the output of a certified computation
    carrying its own proof (``why``), which the Arb leg does not re-evaluate.

    Raises
    ------
    AttnproofError
        If an ID already has enclosures or is already declared.
    """
    for id in ids:
        if id in ENCLOSURES or id in OWN_CERTIFICATE:
            raise AttnproofError(f"Arb enclosures of {id!r} are registered twice")
    OWN_CERTIFICATE.update(dict.fromkeys(ids, why))


__all__ = ["ENCLOSURES", "OWN_CERTIFICATE", "enclosure", "own_certificate"]
