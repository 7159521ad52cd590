"""The evidence kinds: a claim's check links, parsed and evaluated, one function per kind.

A claim (:mod:`attnproof.verify.claims`) links to checks written as one string each:

``id:<identity ID>``
    an entry of :data:`attnproof.verify.registry.REGISTRY`; its kind (``identity``, ``bound``,
    or a high-precision ``run``) is read from the registry, never typed;
``test:<pytest node ID>``
    a property test, passed only when an actual pytest run recorded it as passed on this code
    (outcomes recorded on other code are ``stale``, never passed: :meth:`Outcomes.stale`);
``xfail:<pytest node ID>``
    a strict-xfail witness of an erratum, passed only when the run recorded it as xfailed;
``bench:<learner> key=value ...``
    a measured run of :func:`attnproof.bench.run` at small size: it passes when the queries
    are the learner's formula plus the extras it counts (``reasked_queries``: re-asked probes, and
    the FFN learner's designed extras ``designed_queries``: check points against silent zero-sum
    kinks, points on the recovered hyperplanes, the polish), the re-asks beyond the designed
    extras no more than the formula itself, and the error is within the learner's reported bound (or its
    guarantee, or ``tol=`` for learners without a bound); with ``arith=mp:N`` it is a
    high-precision ``run``, otherwise a ``benchmark``;
``learner:<name>``
    the learner's status in :data:`attnproof.verify.registry.LEARNERS` (verified through its
    identities).  It repeats identity evidence, so it does not count as an independent kind.

:data:`EVALUATORS` maps each link's prefix to the function that evaluates it against the
:class:`Evidence` of one run (a certificate, test outcomes, measured benchmarks).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..bench import run as bench_run
from ..errors import AttnproofError
from .certificate import Certificate, learner_status
from .graph import STALE
from .outcomes import Outcomes
from .registry import LEARNERS, REGISTRY

#: The independent kinds of evidence a claim can have (``learner`` repeats identity evidence).
INDEPENDENT_KINDS = ("identity", "bound", "run", "property", "benchmark")
#: Test outcomes that mean the test did not run (a skip is never a pass).
NOT_RUN = ("not run", "skipped")


@dataclass(frozen=True)
class Link:
    """A parsed check link: its kind is derived from the link (and the registry), never typed."""

    spec: str
    kind: str
    target: str
    options: tuple[tuple[str, str], ...] = ()

    @property
    def prefix(self) -> str:
        """``id``, ``test``, ``xfail``, ``bench`` or ``learner``: which evaluator reads it."""
        return self.spec.partition(":")[0]


def parse_check(spec: str) -> Link:
    """Parse one check link (see the module docstring).

    Raises
    ------
    AttnproofError
        For an unknown prefix, an identity ID not in the registry, an unknown learner, or a
        node ID that is not ``tests/<file>.py::<test>``.
    """
    prefix, _, rest = spec.partition(":")
    if prefix == "id":
        if rest not in REGISTRY:
            raise AttnproofError(f"ledger links unknown identity {rest!r}")
        return Link(spec, REGISTRY[rest].kind, rest)
    if prefix in ("test", "xfail"):
        if not re.fullmatch(r"tests/[\w/]+\.py::\w+", rest):
            raise AttnproofError(f"ledger links a malformed pytest node ID {rest!r}")
        return Link(spec, "property", rest, (("expect", "passed" if prefix == "test" else "xfailed"),))
    if prefix == "bench":
        learner, *pairs = rest.split()
        if learner not in LEARNERS:
            raise AttnproofError(f"ledger links unknown learner {learner!r}")
        options = tuple(tuple(p.split("=", 1)) for p in pairs)
        if any(len(o) != 2 for o in options):
            raise AttnproofError(f"ledger benchmark options must be key=value: {spec!r}")
        arith = dict(options).get("arith", "float64")
        return Link(spec, "benchmark" if arith == "float64" else "run", learner, options)  # type: ignore[arg-type]
    if prefix == "learner":
        if rest not in LEARNERS:
            raise AttnproofError(f"ledger links unknown learner {rest!r}")
        return Link(spec, "learner", rest)
    raise AttnproofError(f"unknown check kind in {spec!r}")


def identities_of(links: Iterable[Link]) -> list[str]:
    """The registry IDs ``links`` need: linked ones and those the linked learners rely on."""
    ids: list[str] = []
    for link in links:
        if link.kind == "learner":
            ids += LEARNERS[link.target].relies_on
        elif link.prefix == "id":
            ids.append(link.target)
    return list(dict.fromkeys(ids))


@dataclass
class CheckResult:
    """The outcome of one check in this run."""

    spec: str
    kind: str
    outcome: str  # "passed", "failed", "not run", or the pytest outcome
    passed: bool
    detail: str = ""
    #: For a passing registry entry: who checked it (:data:`attnproof.verify.graph.STRENGTHS`).
    strength: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Evidence:
    """What one evaluation ran: a certificate, test outcomes, and each link's result (memoized,
    so a benchmark is measured once however many claims link it).  ``stale``: the outcomes were
    recorded on other code than the code evaluated now."""

    certificate: Certificate
    outcomes: Outcomes | None = None
    stale: bool = False
    results: dict[str, CheckResult] = field(default_factory=dict)

    def result(self, link: Link) -> CheckResult:
        """The link's result, evaluated by its prefix's evaluator (:data:`EVALUATORS`)."""
        if link.spec not in self.results:
            self.results[link.spec] = EVALUATORS[link.prefix](link, self)
        return self.results[link.spec]


def bench_evidence(link: Link, _: Evidence) -> CheckResult:
    """A measured run: the registered query count, and the error within the learner's bound."""
    opts: dict[str, Any] = dict(link.options)
    tol = float(opts.pop("tol")) if "tol" in opts else None
    for k, v in opts.items():
        if k != "arith":
            opts[k] = int(v) if v.isdigit() else (float(v) if re.fullmatch(r"[\d.e+-]+", v) else v)
    try:
        row = bench_run(link.target, **opts)
    except AttnproofError as exc:
        return CheckResult(link.spec, link.kind, "failed", False, f"{type(exc).__name__}: {exc}")
    extras = row.get("reasked_queries") or 0
    designed = row.get("designed_queries") or 0
    counted = (row["queries"] == row["queries_formula"] + extras
               and 0 <= designed <= extras <= designed + row["queries_formula"])
    if row.get("within_bound") is not None:
        accurate = bool(row["within_bound"])
        how = f"err_W {row['err_W']:.1e} <= bound {row['error_bound']:.1e}"
    elif "guarantee_met" in row:
        accurate, how = bool(row["guarantee_met"]), f"guarantee met: err_W {row['err_W']:.1e}"
    else:
        accurate, how = tol is not None and row["err_W"] <= tol, f"err_W {row['err_W']:.1e} <= tol {tol}"
    of = f", {designed} of them designed" if designed else ""
    detail = (f"{row['queries']} queries (formula {row['queries_formula']} + {extras} counted extras{of}); "
              f"{how}")
    ok = counted and accurate
    return CheckResult(link.spec, link.kind, "passed" if ok else "failed", ok, detail)


def identity_evidence(link: Link, ev: Evidence) -> CheckResult:
    """A registry entry's status in the certificate (not run when the certificate lacks it)."""
    cert = ev.certificate
    if link.target not in {x.id for x in cert.entries}:  # e.g. a certificate of selected IDs
        return CheckResult(link.spec, link.kind, "not run", False, "not in this certificate")
    e = cert.entry(link.target)
    outcome = "passed" if e.passed else "failed"
    detail = e.error or ("" if e.passed else "own checks pass, a used identity fails" if e.own_passed else "")
    return CheckResult(link.spec, link.kind, outcome, e.passed,
                       "; ".join(x for x in (f"sha256 {e.sha256[:16]}", detail) if x), e.strength)


def learner_evidence(link: Link, ev: Evidence) -> CheckResult:
    """A learner's status through the identities it relies on, in the certificate."""
    st = learner_status(LEARNERS[link.target], {e.id: e for e in ev.certificate.entries})
    return CheckResult(link.spec, link.kind, "passed" if st.passed else "failed", st.passed,
                       "" if st.passed else "failing: " + ", ".join(st.failing))


def property_evidence(link: Link, ev: Evidence) -> CheckResult:
    """A test's recorded outcome against the one expected (passed, or xfailed for a witness);
    ``stale`` whatever it was when it was recorded on other code."""
    got = "not run" if ev.outcomes is None else ev.outcomes.outcome(link.target)
    expect = dict(link.options)["expect"]
    if ev.stale and got not in NOT_RUN:
        return CheckResult(link.spec, link.kind, STALE, False, f"recorded {got} on other code")
    return CheckResult(link.spec, link.kind, got, got == expect,
                       "" if got == expect or got in NOT_RUN else f"expected {expect}")


#: Each link prefix's evaluator: a new kind of evidence is one function and one entry here.
EVALUATORS: dict[str, Callable[[Link, Evidence], CheckResult]] = {
    "id": identity_evidence,
    "test": property_evidence,
    "xfail": property_evidence,
    "bench": bench_evidence,
    "learner": learner_evidence,
}

__all__ = [
    "INDEPENDENT_KINDS", "NOT_RUN", "Link", "parse_check", "identities_of", "CheckResult", "Evidence",
    "bench_evidence", "identity_evidence", "learner_evidence", "property_evidence", "EVALUATORS",
]
