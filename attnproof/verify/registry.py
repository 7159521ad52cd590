"""The registries: identities (with bounds and run checks) and learners, and their records.

An identity is registered with a stable ID (``<result>/<short-name>``, never renumbered), the
paper reference, a LaTeX statement, the identities it ``uses`` and a builder returning sympy
``(lhs, rhs)`` pairs under stated assumptions (carried by the symbols themselves, e.g.
``real=True``).  A *bound* (:func:`bound`) is a list of claims ``quantity >= 0``
(:data:`BoundClaim`); a *run* (:func:`run_check`) executes a learner end to end in float64 or in
mpmath at high precision on a fixed target and returns checks ``measured <= allowed``
(:data:`RunCheck`).  Every entry states its ``scope``: "all d (how)", "listed sizes: ..." or
"scalar".  A learner (:func:`learner`) declares the identities it ``relies_on`` (Bhattamishra et
al., arXiv 2601.16873: every learner of the paper rests on the identities of its proof).

:func:`content_hash` is the SHA-256 a citation pins: statement and expressions only, never which
checker ran (:mod:`attnproof.verify.checkers`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..errors import AttnproofError

Pair = tuple[sp.Expr, sp.Expr]

#: A bound claim: a description and a quantity that must be >= 0, given either as a sympy
#: expression (proven non-negative by sympy's assumptions system) or as an mpmath interval
#: (``mpmath.iv``), a rigorous enclosure whose lower endpoint must be >= 0.
BoundClaim = tuple[str, Any]

#: A run check: a description, the error measured and the error allowed; it passes when
#: ``measured <= allowed`` with both finite (a NaN or an infinity never passes).
RunCheck = tuple[str, Any, Any]

#: The kinds of registered entry, in the order the certificate explains them.
KINDS = ("identity", "bound", "run")


@dataclass(frozen=True)
class Identity:
    """A registered identity, bound or run (see the module docstring)."""

    id: str
    paper: str
    statement: str
    build: Callable[[], list[Any]]  # (lhs, rhs) pairs for an identity, claims for a bound
    uses: tuple[str, ...] = ()
    assumptions: str = ""
    simplifier: Callable[[sp.Expr], sp.Expr] = sp.simplify
    kind: str = "identity"  # or "bound", or "run"
    #: What the proof covers: "all d" (symbolic size, or a reduction to a proven scalar
    #: identity), "listed sizes: ..." (checked at fixed dimensions), or "scalar".
    scope: str = ""


REGISTRY: dict[str, Identity] = {}


def _registrar(
    kind: str,
    *,
    id: str,
    paper: str,
    statement: str,
    uses: Iterable[str] = (),
    assumptions: str = "",
    simplifier: Callable[[sp.Expr], sp.Expr] = sp.simplify,
    scope: str = "",
) -> Callable[[Callable[[], list[Any]]], Callable[[], list[Any]]]:
    def deco(fn: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
        if id in REGISTRY:
            raise AttnproofError(f"identity {id!r} is registered twice")
        REGISTRY[id] = Identity(id, paper, statement, fn, tuple(uses), assumptions, simplifier, kind, scope)
        return fn

    return deco


def identity(
    *,
    id: str,
    paper: str,
    statement: str,
    uses: Iterable[str] = (),
    assumptions: str = "",
    simplifier: Callable[[sp.Expr], sp.Expr] = sp.simplify,
    scope: str = "",
) -> Callable[[Callable[[], list[Pair]]], Callable[[], list[Pair]]]:
    """Register ``fn`` (returning (lhs, rhs) pairs) as the identity ``id``.

    Raises
    ------
    AttnproofError
        If the ID is already registered (IDs are stable and unique).
    """
    return _registrar("identity", id=id, paper=paper, statement=statement, uses=uses,
                      assumptions=assumptions, simplifier=simplifier, scope=scope)


def bound(
    *, id: str, paper: str, statement: str, uses: Iterable[str] = (), assumptions: str = "", scope: str = "",
) -> Callable[[Callable[[], list[BoundClaim]]], Callable[[], list[BoundClaim]]]:
    """Register ``fn`` (returning ``(description, quantity)`` claims ``quantity >= 0``) as a bound.

    Verification is rigorous: sympy must prove ``quantity.is_nonnegative`` from the symbols'
    assumptions, or the interval enclosure's lower endpoint must be >= 0.  The numeric
    cross-check evaluates sympy quantities at random points with mpmath (they must be >= 0)
    and reports the smallest margin found.
    """
    return _registrar("bound", id=id, paper=paper, statement=statement, uses=uses,
                      assumptions=assumptions, scope=scope)


def run_check(
    *, id: str, paper: str, statement: str, uses: Iterable[str] = (), assumptions: str = "", scope: str = "",
) -> Callable[[Callable[[], list[RunCheck]]], Callable[[], list[RunCheck]]]:
    """Register ``fn`` (returning ``(description, measured, allowed)`` checks) as a *run*.

    A run executes a learner end to end in an arithmetic that is not sympy's (a float64
    learner on a fixed adversary, or the learner in mpmath at high precision on a fixed rational
    target) and compares what it returned with the target: the evidence is numeric, not a
    proof, and says so in the certificate (``Entry.checks`` holds every check).  It is what makes
    ``verify`` fail when the code path a user actually runs is wrong, not only the sympy path.
    """
    return _registrar("run", id=id, paper=paper, statement=statement, uses=uses,
                      assumptions=assumptions, scope=scope)


@dataclass(frozen=True)
class Learner:
    """A registered learner: the one table the CLI, the bench and the certificate read.

    Attributes
    ----------
    name : str
        Stable name used by the CLI (``attnproof recover --learner NAME``) and the bench.
    fn : callable
        The learner itself; its first argument is the oracle.
    result : str
        The paper's result it implements (``"Thm 4.1"``, or ``"beyond the paper"``).
    relies_on : tuple of str
        IDs of the identities and bounds its correctness rests on.  The learner is reported
        as *verified through its identities* only when every one of them is fully verified
        (status by dependency, as a Lean blueprint colours a theorem).
    arithmetics : tuple of str
        Arithmetics it runs in: a subset of ``("float64", "mpmath", "sympy")``.
    queries : str
        Its query count as a formula of d (and r), for unit-scale targets.
    count : callable, optional
        The same formula as a function of keyword arguments (``d``, ``r``, ``bias``).
    """

    name: str
    fn: Callable[..., Any]
    result: str
    relies_on: tuple[str, ...]
    arithmetics: tuple[str, ...]
    queries: str
    count: Callable[..., int] | None = None


LEARNERS: dict[str, Learner] = {}


def learner(
    *,
    name: str,
    result: str,
    relies_on: Iterable[str],
    arithmetics: Iterable[str],
    queries: str,
    count: Callable[..., int] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the learner ``name`` (see :class:`Learner`); sets ``fn.relies_on``.

    Raises
    ------
    AttnproofError
        If the name is already registered, or an arithmetic is not one of the three.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in LEARNERS:
            raise AttnproofError(f"learner {name!r} is registered twice")
        ariths = tuple(arithmetics)
        unknown = set(ariths) - {"float64", "mpmath", "sympy"}
        if unknown:
            raise AttnproofError(f"learner {name!r}: unknown arithmetics {sorted(unknown)}")
        LEARNERS[name] = Learner(name, fn, result, tuple(relies_on), ariths, queries, count)
        fn.relies_on = tuple(relies_on)  # type: ignore[attr-defined]
        return fn

    return deco


def content_hash(ident: Identity, pairs: list[Pair]) -> str:
    """SHA-256 of the identity's canonical statement and its (lhs, rhs) expressions.

    For a run, ``pairs`` are ``(description, allowed)``: what is checked, not the measured
    numbers (which may differ in the last bits between BLAS builds).  Which checkers ran is not
    hashed: adding a checker never changes a published hash."""
    h = hashlib.sha256()
    for part in (ident.id, ident.paper, ident.statement, ident.assumptions, ",".join(ident.uses)):
        h.update(part.encode())
        h.update(b"\0")
    for lhs, rhs in pairs:
        h.update((lhs if isinstance(lhs, str) else sp.srepr(lhs)).encode())
        h.update(b"=")
        h.update((sp.srepr(rhs) if isinstance(rhs, sp.Basic) else repr(rhs)).encode())
        h.update(b"\0")
    return h.hexdigest()


def version_of_attnproof() -> str:
    """The installed distribution's version (package metadata: no import of the package)."""
    try:
        return importlib.metadata.version("attnproof")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree not installed
        return "unknown"


__all__ = [
    "Pair", "BoundClaim", "RunCheck", "KINDS", "Identity", "REGISTRY", "identity", "bound", "run_check",
    "Learner", "LEARNERS", "learner", "content_hash",
    "version_of_attnproof",
]
