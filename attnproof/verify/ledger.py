"""The verification ledger: every claim of the paper, the checks that bear on it, and its status.

Status is computed, never typed (:func:`evaluate`), by the one status rule of
:mod:`attnproof.verify.graph` over the claims' ``depends`` edges: *verified* only if every linked
check passed in this run and every claim it depends on is verified (or an erratum whose
correction is); *erratum* when :data:`~attnproof.verify.claims.ERRATA` holds a counterexample to
the claim as stated, reported with the corrected claim's own status; *open* for a conjecture;
*not yet implemented* when nothing checks it (the claim states why).  A check that failed makes
its claim *failed*; a test with no recorded outcome is *not run*, never passed; a test outcome
recorded on other code (its code hash differs, :meth:`Outcomes.stale`) makes its claim *stale*.

The claims are Bhattamishra et al.'s (arXiv 2601.16873), each room's in its
``theorems/<room>/claims.py`` (registered through :mod:`attnproof.verify.claims`); the
evidence kinds are in :mod:`attnproof.verify.evidence`; the tests run in a pytest subprocess
(:mod:`attnproof.verify.outcomes`) while the identities and benchmarks run in this process.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import theorems  # noqa: F401  (imports every room: every room's claims are registered)
from ..errors import AttnproofError
from . import render
from .certificate import Certificate, Entry, LearnerEntry, verify_all
from .claims import CLAIMS, ERRATA, Claim, Erratum
from .evidence import INDEPENDENT_KINDS, NOT_RUN, CheckResult, Evidence, Link, identities_of, parse_check
from .graph import (
    ERRATUM, FAILED, NOT_IMPLEMENTED, OPEN, STALE, VERIFIED, STRENGTHS, Graph, Node, Status, weakest,
)
from .graph import NOT_RUN as NOT_RUN_STATUS
from .outcomes import Outcomes, check_node_ids, code_hash, finish_tests, has_tests, start_tests

#: Called with one line per identity, learner, measured check, test and claim as they end.
Progress = Callable[[str], None]


@dataclass
class ClaimResult:
    """A claim with its checks' outcomes and its computed status."""

    claim: Claim
    checks: list[CheckResult]
    status: str = ""
    blocking: list[str] = field(default_factory=list)  # failing checks, or unverified dependencies
    errata: list[str] = field(default_factory=list)
    correction: str = ""  # the corrected claim's ID, when an erratum applies

    @property
    def kinds(self) -> list[str]:
        return sorted({c.kind for c in self.checks if c.kind in INDEPENDENT_KINDS})

    @property
    def strength(self) -> str:
        """Who checked a verified claim: the weakest strength of its registry entries, *measured*
        when only tests and runs check it; "" unless verified (:mod:`attnproof.verify.graph`)."""
        if self.status != VERIFIED:
            return ""
        return weakest(c.strength for c in self.checks if c.spec.startswith("id:"))

    def as_dict(self) -> dict[str, Any]:
        c = self.claim
        return {
            "id": c.id, "paper": c.paper, "kind": c.kind, "statement": c.statement, "chapter": c.chapter,
            "status": self.status, "strength": self.strength, "depends": list(c.depends),
            "blocking": self.blocking,
            "errata": self.errata, "correction": self.correction, "reason": c.reason,
            "kinds": self.kinds, "checks": [r.as_dict() for r in self.checks],
        }


@dataclass
class ErratumResult:
    """An erratum with its witnesses' outcomes and the corrected claim's status."""

    erratum: Erratum
    checks: list[CheckResult]
    correction_status: str = ""

    @property
    def witnessed(self) -> bool:
        return all(r.passed for r in self.checks)

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.erratum.__dict__)
        d.update(checks=[r.as_dict() for r in self.checks], witnessed=self.witnessed,
                 correction_status=self.correction_status)
        return d


@dataclass
class Ledger:
    """The evaluated ledger: every claim's computed status, the errata, and what ran."""

    claims: list[ClaimResult]
    errata: list[ErratumResult]
    tests: dict[str, Any]  # where the test outcomes came from: source, commit, created, code, stale
    created: str
    seconds: float

    def claim(self, id: str) -> ClaimResult:
        for c in self.claims:
            if c.claim.id == id:
                return c
        raise KeyError(id)

    @property
    def passed(self) -> bool:
        """Every status is as it should be: no linked check failed, went unrun or is stale, every
        erratum is witnessed and its correction verified.  (A claim resting on an open or not yet implemented
        claim is *unverified dependency*, which is as it should be.)"""
        return all(e.witnessed for e in self.errata) and not any(
            c.status in (FAILED, NOT_RUN_STATUS, STALE)
            or c.status == ERRATUM and self.claim(c.correction).status != VERIFIED
            for c in self.claims
        )

    def summary(self) -> dict[str, Any]:
        statuses: dict[str, int] = {}
        for c in self.claims:
            statuses[c.status] = statuses.get(c.status, 0) + 1
        kinds: dict[str, int] = {}
        unique = {r.spec: r.kind for c in self.claims for r in c.checks}
        unique.update({r.spec: r.kind for e in self.errata for r in e.checks})
        for kind in unique.values():
            kinds[kind] = kinds.get(kind, 0) + 1
        strengths = {k: n for k in STRENGTHS if (n := sum(c.strength == k for c in self.claims))}
        return {"claims": len(self.claims), "statuses": statuses, "strengths": strengths, "checks": kinds,
                "errata": len(self.errata), "passed": self.passed}

    def as_dict(self) -> dict[str, Any]:
        return {"created": self.created, "seconds": self.seconds, "tests": self.tests,
                "summary": self.summary(), "claims": [c.as_dict() for c in self.claims],
                "errata": [e.as_dict() for e in self.errata]}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)

    def status_text(self, c: ClaimResult) -> str:
        """A claim's status in words (:func:`attnproof.verify.render.status_text`)."""
        return render.status_text(self, c)

    def to_markdown(self, links: bool = False) -> str:
        """The claims as a table, or a list for the book (:func:`attnproof.verify.render.ledger_markdown`)."""
        return render.ledger_markdown(self, links)

    def errata_markdown(self) -> str:
        """Every erratum and slip (:func:`attnproof.verify.render.errata_markdown`)."""
        return render.errata_markdown(self)


def _links(claims: Sequence[Claim], errata: Sequence[Erratum]) -> dict[str, Link]:
    return {s: parse_check(s) for c in [*claims, *errata] for s in c.checks}


def linked_node_ids() -> list[str]:
    """Every pytest node ID the ledger links, in order of first appearance."""
    return list(dict.fromkeys(x.target for x in _links(CLAIMS, ERRATA).values() if x.kind == "property"))


def linked_identities() -> list[str]:
    """The registry IDs the ledger's checks need: linked ones and those the linked learners rely
    on (their ``uses`` are added by :func:`attnproof.verify.certificate.verify_all`)."""
    return identities_of(_links(CLAIMS, ERRATA).values())


def claim_graph(claims: Sequence[Claim], errata: Sequence[Erratum] = ()) -> Graph:
    """The claims as nodes of the verification graph, resting on what they depend on; an
    erratum's claim is corrected by the claim stating the correction."""
    fixes: dict[str, str] = {}
    for e in errata:
        if e.kind == "erratum":
            fixes.setdefault(e.claim, e.corrected)  # the first erratum of a claim names its correction
    return Graph(Node(c.id, "claim", c.depends, fixes.get(c.id, "")) for c in claims)


def _own_status(r: ClaimResult, errata: list[Erratum]) -> Status:
    """A claim's status from its own checks alone (the first that applies, in this order)."""
    failed = [x.spec for x in r.checks if x.outcome not in (*NOT_RUN, STALE) and not x.passed]
    if failed:
        return Status(FAILED, failed)
    if r.claim.open:
        return Status(OPEN)
    if any(e.kind == "erratum" for e in errata):
        return Status(ERRATUM)
    if not r.checks:
        return Status(NOT_IMPLEMENTED)
    stale = [x.spec for x in r.checks if x.outcome == STALE]
    if stale:
        return Status(STALE, stale)
    unrun = [x.spec for x in r.checks if x.outcome in NOT_RUN]
    return Status(NOT_RUN_STATUS, unrun) if unrun else Status(VERIFIED)


def _check_references(claims: Sequence[Claim], errata: Sequence[Erratum]) -> dict[str, list[Erratum]]:
    ids = {c.id for c in claims}
    for c in claims:
        unknown = [d for d in c.depends if d not in ids]
        if unknown:
            raise AttnproofError(f"claim {c.id!r} depends on unknown claims {unknown}")
    by_claim: dict[str, list[Erratum]] = {}
    for e in errata:
        if e.claim not in ids or (e.corrected and e.corrected not in ids):
            raise AttnproofError(f"erratum {e.id} names an unknown claim")
        by_claim.setdefault(e.claim, []).append(e)
    return by_claim


def _say(progress: Progress | None) -> Callable[[Entry | LearnerEntry], None] | None:
    """A certificate progress hook printing one line per identity and learner."""
    if progress is None:
        return None

    def line(x: Entry | LearnerEntry) -> None:
        if isinstance(x, Entry):
            progress(f"identity {x.id}: {'verified' if x.own_passed else 'FAILED'} ({x.seconds:.1f} s)")
        else:
            progress(f"learner {x.name}: {'verified' if x.passed else 'NOT verified'}")

    return line


def evaluate(
    certificate: Certificate | None = None,
    outcomes: Outcomes | None = None,
    *,
    run_tests: bool = False,
    claims: Sequence[Claim] | None = None,
    errata: Sequence[Erratum] | None = None,
    progress: Progress | None = None,
) -> Ledger:
    """Run every check the ledger links and compute each claim's status.

    Parameters
    ----------
    certificate : Certificate, optional
        A certificate from :func:`attnproof.verify.certificate.verify_all` covering the linked
        identities (``verify --out`` passes the one it just computed); verified here when omitted.
    outcomes : Outcomes, optional
        Test outcomes from a pytest run (e.g. ``Outcomes.load(path)``).  Without outcomes and
        without ``run_tests`` every linked test is *not run*.  Either way, when the test suite
        is present, every linked node ID is checked against what pytest collects.
    run_tests : bool
        Run the linked tests now, in a pytest subprocess, while the identities and benchmarks
        run in this process.
    claims, errata : sequences, optional
        The claims and errata to evaluate (default: every registered one).
    progress : callable, optional
        Called with one line per identity, measured check, test and claim as each ends.

    Raises
    ------
    AttnproofError
        For a link to an unknown identity, learner or test, or a dependency cycle.
    """
    t0 = time.perf_counter()
    claims = CLAIMS if claims is None else claims
    errata = ERRATA if errata is None else errata
    by_claim = _check_references(claims, errata)
    graph = claim_graph(claims, errata)
    if loop := graph.cycle():
        raise AttnproofError(f"the ledger's dependencies have a cycle through {loop[-1]!r}")
    links = _links(claims, errata)
    nodes = list(dict.fromkeys(x.target for x in links.values() if x.kind == "property"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.json"
        tests = start_tests(nodes, path, progress) if run_tests and nodes else None
        try:
            if certificate is None:
                certificate = verify_all(identities_of(links.values()), progress=_say(progress))
            evidence = Evidence(certificate)
            for link in links.values():
                if link.prefix == "bench":
                    r = evidence.result(link)
                    if progress is not None:
                        progress(f"{link.kind} {link.spec.removeprefix('bench:')}: {r.outcome} ({r.detail})")
        finally:
            if tests is not None:
                outcomes = finish_tests(tests)
                outcomes.source = "pytest run by the ledger"
    if not run_tests and has_tests():  # when it runs them, pytest itself refuses a missing node ID
        check_node_ids(nodes)
    evidence.outcomes = outcomes
    code = code_hash()
    evidence.stale = outcomes is not None and outcomes.stale(code)

    results = {c.id: ClaimResult(c, [evidence.result(links[s]) for s in c.checks]) for c in claims}
    for i, es in by_claim.items():  # a slip's proof is part of its claim's evidence
        results[i].errata = [e.id for e in es]
        results[i].checks += [evidence.result(links[s]) for e in es if e.kind != "erratum" for s in e.checks]
    for i, st in graph.resolve(lambda i: _own_status(results[i], by_claim.get(i, []))).items():
        results[i].status, results[i].blocking = st.status, st.blocking
        results[i].correction = graph.nodes[i].corrected_by if st.status == ERRATUM else ""
    if progress is not None:
        for r in results.values():
            progress(f"claim {r.claim.id}: {r.status}")
    errata_results = [
        ErratumResult(e, [evidence.result(links[s]) for s in e.checks],
                      results[e.corrected].status if e.corrected else "")
        for e in errata
    ]
    tested: dict[str, Any] = {"source": "", "commit": "", "created": ""}
    if outcomes is not None:
        tested = {"source": outcomes.source, "commit": outcomes.commit, "created": outcomes.created,
                  "code": outcomes.code, "dirty": outcomes.dirty, "stale": evidence.stale,
                  "provenance": outcomes.provenance(code)}
    return Ledger(list(results.values()), errata_results, tested, _now(), time.perf_counter() - t0)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def closure(ids: Iterable[str], claims: Sequence[Claim] | None = None) -> tuple[Claim, ...]:
    """The claims ``ids`` and everything they depend on, in ledger order (to evaluate a part)."""
    claims = CLAIMS if claims is None else claims
    wanted = set(claim_graph(claims).closure(ids))
    return tuple(c for c in claims if c.id in wanted)


def write(
    out: str | os.PathLike[str], certificate: Certificate, *, outcomes: Outcomes | None = None,
    progress: Progress | None = None,
) -> Ledger:
    """Write ``ledger.json`` and ``ledger.md`` into ``out`` and return the ledger.

    ``attnproof verify --out DIR`` calls this with the certificate it just computed; the linked
    tests are run now (a pytest subprocess) unless recorded ``outcomes`` are given or the test
    suite is absent (an installed copy: the tests are then *not run*).
    """
    ledger = evaluate(certificate, outcomes, run_tests=outcomes is None and has_tests(), progress=progress)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ledger.json").write_text(ledger.to_json())
    (out / "ledger.md").write_text("# attnproof verification ledger\n\n" + ledger.to_markdown()
                                   + "\n## Errata\n\n" + ledger.errata_markdown())
    return ledger


__all__ = [
    "Progress", "ClaimResult", "ErratumResult", "Ledger", "linked_node_ids", "linked_identities",
    "claim_graph",
    "evaluate", "closure", "write",
]
