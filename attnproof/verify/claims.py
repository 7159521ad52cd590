"""The ledger's claims and errata: what they are, and how a room registers its own.

*Provably Learning Attention with Queries* (Bhattamishra et al., arXiv 2601.16873) states
numbered results (Thm 4.1, Sec. 4.1's reduction, Thm 5.1 with the cited Thm A.2 and Def. 2.1 of
Cai and Zhang, Thm 6.1, Lemma A.1, Prop. 7.1, Thm B.1, Assumption C.1, Prop. C.2 and the App. C
conjecture), displayed equations its proofs rely on, query counts and probability statements.
Each is a :class:`Claim` with a stable ID; every erratum and slip found is an :class:`Erratum`.
This module is the machinery only: the data lives in the rooms, each result's claims in
``attnproof/theorems/<room>/claims.py`` next to its learner, registered with :func:`register`
(``attnproof.theorems`` imports every room's ``claims.py``, so :data:`CLAIMS` and :data:`ERRATA`
are full once the package is imported).

**The ledger's order** is the paper's, by an explicit key: a room registers its list at its
``PLACE``, the paper's section as a tuple (``(4,)`` for Thm 4.1, ``(4, 1)`` for Sec. 4.1), and
:data:`CLAIMS` is kept sorted by (place, position in the room's list) whatever order the rooms are
imported in (:data:`ORDER`).  :func:`register_claim` and :func:`register_erratum` add one item
after all others.

**A room's claim** (``attnproof/theorems/<room>/claims.py``)::

    from ...verify.claims import T, claim, register

    PLACE = (5,)  # Sec. 5
    register(PLACE, claims=[
        claim("thm5.1/rub", "Def. 2.1", "cited", "lowrank",
              r"the statement, one line of Markdown",
              "id:def2.1/rub",                             # an identity registered in any room
              f"test:{T}lowrank.py::test_rub_holds",      # a property test, by node ID
              "bench:lowrank-cvx d=4 rank=1 tol=1e-6",     # a measured run of a learner
              depends=("thm5.1/measurement",)),          # claims it rests on, by ID
    ])

Each check is one string (:mod:`attnproof.verify.evidence` parses and evaluates them): ``id:<ID>``
names an entry of :data:`attnproof.verify.registry.REGISTRY` -- an identity, bound or run that
any room registers with ``@identity`` / ``@bound`` / ``@run_check`` -- by its ID alone, so a claim
rests on a room's new identity by adding that one line; the link is resolved when the ledger is
evaluated (after every room is imported), and an unknown ID is an error then, never a silent
pass.  ``learner:<name>`` repeats the identities a registered learner relies on.  ``depends``
names other claims (an erratum's claim is sound only while its correction is verified).
"""


from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import AttnproofError


@dataclass(frozen=True)
class Claim:
    """One claim of the paper (or a claim the project adds beyond it).

    Attributes
    ----------
    id : str
        Stable ID, ``<result>`` or ``<result>/<part>`` (never renumbered).
    paper : str
        Where the paper states it (``"Thm 4.1, Eq. (1)"``).
    kind : str
        ``result``, ``definition``, ``equation``, ``query count``, ``probability``,
        ``assumption``, ``cited``, ``conjecture`` or ``beyond the paper``.
    statement : str
        The claim in one line (Markdown, inline math allowed).
    chapter : str
        The book chapter that discusses it (a docname of ``book/``).
    checks : tuple of str
        Linked checks (see the module docstring).
    depends : tuple of str
        Claims this one rests on.
    reason : str
        Why it has fewer than two independent kinds of check (or none), when it has.
    open : bool
        A conjecture: its status is *open* whatever its supporting checks say (a failing
        supporting check still fails it).
    """

    id: str
    paper: str
    kind: str
    statement: str
    chapter: str
    checks: tuple[str, ...] = ()
    depends: tuple[str, ...] = ()
    reason: str = ""
    open: bool = False


@dataclass(frozen=True)
class Erratum:
    """An erratum (the claim as stated is false) or a slip (a step is wrong, the claim holds).

    ``checks`` witness the counterexample (for an erratum) or prove the corrected step (for a
    slip); ``corrected`` names the claim that states the correction, whose status is reported.
    """

    id: str
    claim: str
    kind: str  # "erratum", "slip" or "typo"
    statement: str
    counterexample: str
    failing_step: str
    correction: str
    checks: tuple[str, ...]
    corrected: str = ""
    source: str = ""


def claim(id: str, paper: str, kind: str, chapter: str, statement: str, *checks: str,
       depends: Sequence[str] = (), reason: str = "", open: bool = False) -> Claim:
    """A :class:`Claim`, its check links written one per argument (one line each in the data)."""
    return Claim(id, paper, kind, statement, chapter, tuple(checks), tuple(depends), reason, open)


#: Node IDs in check links are relative to the repository root: ``f"test:{T}exact.py::..."``.
T = "tests/test_"

#: An order key: the room's place in the paper (its section, as a tuple), then the position in
#: its list.  An item registered without a place sorts after every placed one, in order.
OrderKey = tuple[tuple[float, ...], int]

#: Every registered claim, in the ledger's order (:data:`ORDER`); filled by the rooms.
CLAIMS: list[Claim] = []
#: Every registered erratum and slip, in the same order; filled by the rooms.
ERRATA: list[Erratum] = []
#: The order key of every registered claim and erratum, by kind and ID.
ORDER: dict[tuple[str, str], OrderKey] = {}
_UNPLACED = (math.inf,)


def _insert(items: list, kind: str, item: Claim | Erratum, key: OrderKey | None) -> None:
    if any(x.id == item.id for x in items):
        raise AttnproofError(f"{kind} {item.id!r} is registered twice")
    keys = [ORDER.get((kind, x.id), (_UNPLACED, i)) for i, x in enumerate(items)]
    if key is None:  # after every item so far
        key = (_UNPLACED, 1 + max((k[1] for k in keys if k[0] == _UNPLACED), default=len(items)))
    ORDER[(kind, item.id)] = key
    items.insert(bisect_right(keys, key), item)


def register(place: tuple[float, ...], claims: Sequence[Claim] = (), errata: Sequence[Erratum] = ()) -> None:
    """File a room's ``claims`` and ``errata`` in the ledger at ``place`` (the paper's section as a
    tuple), each list in its given order: :data:`CLAIMS` and :data:`ERRATA` stay sorted by
    (place, position) whichever room registers first.

    Raises
    ------
    AttnproofError
        If an ID is already registered (IDs are stable and unique), or ``place`` is empty or
        already taken by another room's claims.
    """
    if not place or not all(isinstance(p, int) and p >= 0 for p in place):
        raise AttnproofError(f"a place in the ledger is a tuple of section numbers, not {place!r}")
    taken = {k[0] for (kind, _), k in ORDER.items() if kind == "claim" and k[0] == tuple(place)}
    if taken and claims:
        raise AttnproofError(f"the ledger's place {place} is already taken by another room's claims")
    for i, c in enumerate(claims):
        _insert(CLAIMS, "claim", c, (tuple(place), i))
    for i, e in enumerate(errata):
        _insert(ERRATA, "erratum", e, (tuple(place), i))


def register_claim(c: Claim) -> Claim:
    """Add the claim ``c`` to :data:`CLAIMS`, after every claim registered before it.

    Raises
    ------
    AttnproofError
        If a claim of that ID is already registered (IDs are stable and unique).
    """
    _insert(CLAIMS, "claim", c, None)
    return c


def register_erratum(e: Erratum) -> Erratum:
    """Add the erratum ``e`` to :data:`ERRATA`, after every erratum registered before it.

    Raises
    ------
    AttnproofError
        If an erratum of that ID is already registered.
    """
    _insert(ERRATA, "erratum", e, None)
    return e


__all__ = ["Claim", "Erratum", "claim", "T", "OrderKey", "CLAIMS", "ERRATA", "ORDER", "register",
           "register_claim", "register_erratum"]
