"""One graph of typed nodes (identities, learners, claims), with one closure and one status.

Every node rests on others: an identity on the identities it ``uses``, a learner on the
identities it ``relies_on``, a claim of the paper on the claims it ``depends`` on.  A node's
*own* status comes from its own evidence (its checkers, or its linked checks); its status in the
graph is :func:`resolve`'s, the one rule for all three kinds (as a Lean blueprint colours a
theorem): a node whose own evidence is ``verified`` stays verified only when everything it rests
on is *sound* (verified, or an erratum whose correction is verified); otherwise it is an
``unverified dependency`` and names what blocks it.  Any other own status (failed, not run, open,
erratum, not yet implemented, stale) is kept.  A node on a dependency cycle is never verified.

A *verified* node also has a **strength** (issue 20), saying who checked it, strongest first:
*kernel-checked* (Coq's kernel, with every node it rests on kernel-checked), *two engines* (at
least two of the :data:`PROOF_ENGINES` passed), *one engine*, *measured* (only numbers at sample
points or a measured run).  An engine that did not run, or reached no verdict, never counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..errors import AttnproofError

#: Every status a node can have.
VERIFIED = "verified"
FAILED = "failed"
NOT_RUN = "not run"
OPEN = "open"
ERRATUM = "erratum"
NOT_IMPLEMENTED = "not yet implemented"
UNVERIFIED_DEPENDENCY = "unverified dependency"
#: Evidence recorded on other code than the code read now (a test outcome whose code hash differs).
STALE = "stale"
STATUSES = (VERIFIED, ERRATUM, OPEN, NOT_IMPLEMENTED, UNVERIFIED_DEPENDENCY, STALE, NOT_RUN, FAILED)

#: The strength of a verified node, strongest first (see the module docstring).
KERNEL_CHECKED = "kernel-checked"
TWO_ENGINES = "two engines"
ONE_ENGINE = "one engine"
MEASURED = "measured"
STRENGTHS = (KERNEL_CHECKED, TWO_ENGINES, ONE_ENGINE, MEASURED)
#: The engines whose pass is a proof: sympy's simplification (or its assumptions / an mpmath.iv
#: enclosure for a bound), z3, cvc5, Arb, Coq.  mpmath's random points and a learner's run measure.
PROOF_ENGINES = ("sympy", "z3", "cvc5", "arb", "coq")


def strength(passed_engines: Iterable[str], kernel: bool) -> str:
    """The strength of a verified node whose checkers ``passed_engines`` passed; ``kernel``: Coq
    passed and every node it rests on is kernel-checked."""
    proofs = {e for e in passed_engines if e in PROOF_ENGINES}
    if kernel and "coq" in proofs:
        return KERNEL_CHECKED
    return TWO_ENGINES if len(proofs) >= 2 else ONE_ENGINE if proofs else MEASURED


def weakest(strengths: Iterable[str]) -> str:
    """The weakest of ``strengths`` (:data:`MEASURED` for none)."""
    return max(strengths, key=STRENGTHS.index, default=MEASURED)


@dataclass(frozen=True)
class Node:
    """A node of the verification graph.

    Attributes
    ----------
    id : str
        The identity ID, learner name or claim ID.
    kind : str
        ``identity``, ``bound``, ``run``, ``learner`` or ``claim``.
    rests_on : tuple of str
        The nodes it rests on (``uses``, ``relies_on`` or ``depends``).
    corrected_by : str
        For an erratum's claim: the claim stating the correction.
    """

    id: str
    kind: str
    rests_on: tuple[str, ...] = ()
    corrected_by: str = ""


@dataclass
class Status:
    """A node's resolved status and what blocks it (failing evidence or unsound nodes)."""

    status: str
    blocking: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED


class Graph:
    """Nodes in registration order, looked up by ID."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes: dict[str, Node] = {n.id: n for n in nodes}

    def __contains__(self, id: object) -> bool:
        return id in self.nodes

    def closure(self, ids: Iterable[str]) -> list[str]:
        """``ids`` and everything they rest on, transitively, in the graph's order.

        Raises
        ------
        KeyError
            For an ID (given or rested on) that is not a node.
        """
        wanted: set[str] = set()
        stack = list(ids)
        while stack:
            i = stack.pop()
            if i not in self.nodes:
                raise KeyError(f"unknown node {i!r}")
            if i not in wanted:
                wanted.add(i)
                stack.extend(self.nodes[i].rests_on)
        return [i for i in self.nodes if i in wanted]

    def cycle(self) -> list[str]:
        """A dependency cycle as a path of IDs, or [] when there is none."""
        state: dict[str, int] = {}

        def visit(i: str, path: list[str]) -> list[str]:
            if state.get(i) == 1:
                return [*path, i]
            if state.get(i) == 2 or i not in self.nodes:
                return []
            state[i] = 1
            for d in self.nodes[i].rests_on:
                if found := visit(d, [*path, i]):
                    return found
            state[i] = 2
            return []

        for i in self.nodes:
            if found := visit(i, []):
                return found
        return []

    def resolve(self, own: Callable[[str], Status], *, cycles: str = "fail") -> dict[str, Status]:
        """Every node's status from its own (``own(id)``) and what it rests on (module docstring).

        Parameters
        ----------
        own : callable
            A node's status from its own evidence alone (``blocking``: its failing evidence).
        cycles : {"fail", "raise"}
            A node on a cycle is never verified; with ``"raise"`` a cycle is an error instead.

        Raises
        ------
        AttnproofError
            With ``cycles="raise"``, naming a node on the cycle.
        """
        if cycles == "raise" and (loop := self.cycle()):
            raise AttnproofError(f"the dependencies have a cycle through {loop[-1]!r}")
        done: dict[str, Status] = {}

        def sound(i: str, stack: tuple[str, ...]) -> bool:
            if i not in self.nodes or i in stack:  # missing, or on a cycle: never sound
                return False
            st = status(i, stack)
            fix = self.nodes[i].corrected_by
            return st.verified or st.status == ERRATUM and bool(fix) and status(fix, ()).verified

        def status(i: str, stack: tuple[str, ...]) -> Status:
            if i in done:
                return done[i]
            rests_on = self.nodes[i].rests_on
            unsound = [d for d in rests_on if not sound(d, (*stack, i))]
            st = own(i)
            if st.verified and unsound:
                st = Status(UNVERIFIED_DEPENDENCY, unsound)
            done[i] = st
            return st

        for i in self.nodes:
            status(i, ())
        return done


__all__ = [
    "VERIFIED", "FAILED", "NOT_RUN", "OPEN", "ERRATUM", "NOT_IMPLEMENTED", "UNVERIFIED_DEPENDENCY", "STALE",
    "STATUSES", "KERNEL_CHECKED", "TWO_ENGINES", "ONE_ENGINE", "MEASURED", "STRENGTHS", "PROOF_ENGINES",
    "strength", "weakest", "Node", "Status", "Graph",
]
