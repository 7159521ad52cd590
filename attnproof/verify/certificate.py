"""The verifier: every registered entry checked by its checkers, and the certificate it makes.

:func:`verify` runs one entry's builder and every checker of its kind
(:mod:`attnproof.verify.checkers`); :func:`verify_all` verifies the registry (or some IDs and
what they use) and resolves each entry's and learner's status through the one graph
(:mod:`attnproof.verify.graph`): an identity is *fully verified* only when it and everything it
uses (transitively) verify, a learner when every identity it relies on does.  The
:class:`Certificate` carries each entry's SHA-256 content hash (statement and expressions, never
the checkers), so a citation pins exactly what was verified; its renderings live in
:mod:`attnproof.verify.render`.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from . import render
from .checkers import Checker, Verdict, cached_verdict, checkers_for, store_verdict
from .graph import FAILED, NOT_IMPLEMENTED, STRENGTHS, VERIFIED, Graph, Node, Status, strength
from .registry import LEARNERS, REGISTRY, Identity, Learner, content_hash, version_of_attnproof

#: Called once per verified entry (and learner), e.g. to print a progress line.
Progress = Callable[["Entry | LearnerEntry"], None]


@dataclass
class LearnerEntry:
    """The verification status of one learner, through the identities it relies on."""

    name: str
    result: str
    relies_on: list[str]
    arithmetics: list[str]
    queries: str
    passed: bool
    failing: list[str]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Entry:
    """The verification record of one identity, bound or run.

    ``checkers`` maps each engine that ran to ``{"passed", "seconds", "version", "detail"}``
    (``passed`` None: the engine has no evidence for this entry).
    """

    id: str
    kind: str
    paper: str
    statement: str
    assumptions: str
    uses: list[str]
    pairs: int
    symbolic: bool
    numeric_max_err: float
    own_passed: bool
    passed: bool
    seconds: float
    sha256: str
    scope: str = ""
    error: str = ""
    #: For a run: every check as ``{"check", "measured", "allowed", "passed"}`` (floats).
    checks: list[dict[str, Any]] = field(default_factory=list)
    checkers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Who checked it, when verified (:data:`attnproof.verify.graph.STRENGTHS`), else "".
    strength: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    @property
    def passed_engines(self) -> list[str]:
        """The engines whose verdict on this entry is a pass (not run and no verdict never are)."""
        return [k for k, v in self.checkers.items() if v.get("passed") is True]

    def citation(self, version: str | None = None) -> str:
        """One line that pins this entry: ID, paper reference, attnproof version, full SHA-256."""
        return (
            f"attnproof identity {self.id} ({self.paper}), verified with attnproof "
            f"{version or version_of_attnproof()}, SHA-256 {self.sha256}"
        )

    def bibtex(self, version: str | None = None, year: int | None = None) -> str:
        """A BibTeX ``@misc`` entry citing this identity (ID, paper reference, version, SHA-256)."""
        return render.entry_bibtex(self, version or version_of_attnproof(), year)

    def to_markdown(self, version: str | None = None, year: int | None = None) -> str:
        """The entry's badge block (:func:`attnproof.verify.render.entry_markdown`)."""
        return render.entry_markdown(self, version or version_of_attnproof(), year)


@dataclass
class Certificate:
    """The outcome of :func:`verify_all`, ready to be cited."""

    entries: list[Entry]
    versions: dict[str, str]
    created: str
    seconds: float
    learners: list[LearnerEntry] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(e.passed for e in self.entries) and all(lr.passed for lr in self.learners)

    def entry(self, id: str) -> Entry:
        for e in self.entries:
            if e.id == id:
                return e
        raise KeyError(id)

    def engines(self) -> dict[str, dict[str, Any]]:
        """Per engine: entries it checked (a verdict, pass or fail), passed, failed, not run (or
        no verdict), seconds (as measured when computed, cached or not), and verdicts reused from
        the cache."""
        out: dict[str, dict[str, Any]] = {}
        for e in self.entries:
            for name, v in e.checkers.items():
                row = out.setdefault(name, {"checked": 0, "passed": 0, "failed": 0, "not run": 0,
                                            "seconds": 0.0, "cached": 0})
                row["checked"] += v["passed"] is not None
                row["passed"] += v["passed"] is True
                row["failed"] += v["passed"] is False
                row["not run"] += v["passed"] is None
                row["seconds"] += float(v.get("seconds", 0.0))
                row["cached"] += bool(v.get("cached"))
        return out

    def strengths(self) -> dict[str, int]:
        """How many entries have each strength (verified ones only)."""
        return {s: n for s in STRENGTHS if (n := sum(e.strength == s for e in self.entries))}

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "created": self.created,
            "seconds": self.seconds,
            "versions": self.versions,
            "engines": self.engines(),
            "strengths": self.strengths(),
            "identities": [e.as_dict() for e in self.entries],
            "learners": [lr.as_dict() for lr in self.learners],
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)

    def select(self, ids: Iterable[str]) -> Certificate:
        """The same verification restricted to ``ids`` (in that order), e.g. to show in a chapter
        only the identities it discusses while their status still counts what they use."""
        return Certificate([self.entry(i) for i in ids], self.versions, self.created, self.seconds)

    def summary(self) -> str:
        """One paragraph: when, how many, whether all verified, how long, with which versions."""
        return render.certificate_summary(self)

    def identities_markdown(self) -> str:
        """The identities as one narrow Markdown table (:mod:`attnproof.verify.render`)."""
        return render.identities_markdown(self)

    def learners_markdown(self) -> str:
        """The learners as a Markdown list, each verified or not through its identities."""
        return render.learners_markdown(self)

    def to_markdown(self) -> str:
        """The whole certificate as one Markdown document (``attnproof verify --out``)."""
        return render.certificate_markdown(self)

    def _repr_markdown_(self) -> str:
        """In a notebook: each entry's badge block (the book shows certificates this way)."""
        return render.entries_markdown(self)

    def to_latex(self) -> str:
        """A standalone LaTeX document (:func:`attnproof.verify.render.certificate_latex`)."""
        return render.certificate_latex(self)


def _run_checker(checker: Checker, ident: Identity, built: list[Any],
                 digest: str) -> tuple[dict[str, Any], Verdict | None]:
    """One checker's ``checkers[engine]`` record for one entry, from the verdict cache when the
    checker has a ``cache_key`` and a verdict is stored under it (then the Verdict is None)."""
    version = checker.version()
    key_of = getattr(checker, "cache_key", None)
    key = key_of(ident, digest) if key_of is not None else None
    if key is not None and (hit := cached_verdict(checker.engine, version, key)) is not None:
        return {**hit, "cached": True}, None
    t1 = time.perf_counter()
    try:
        v = checker.check(ident, built)
    finally:
        seconds = time.perf_counter() - t1
    record = {"passed": v.passed, "seconds": seconds, "version": version, "detail": v.detail, **v.extra}
    if key is not None:
        store_verdict(checker.engine, version, key, record)
    return record, v


def verify(id: str) -> Entry:
    """Verify one identity on its own (its ``uses`` are not checked here): build it, hash it, and
    run every checker of its kind, in order, until one raises (a failure is reported, not raised)."""
    ident = REGISTRY[id]
    t0 = time.perf_counter()
    error = ""
    digest, npairs, rows = "", 0, []
    verdicts: dict[str, dict[str, Any]] = {}
    measure = float("inf")
    symbolic = False
    checkers = checkers_for(ident.kind)
    try:
        built = ident.build()
        npairs = len(built)
        hashed = [(desc, allowed) for desc, _, allowed in built] if ident.kind == "run" else built
        digest = content_hash(ident, hashed)
        for checker in checkers:
            record, v = _run_checker(checker, ident, built, digest)
            verdicts[checker.engine] = record
            if checker.engine == "sympy":
                symbolic = bool(record["passed"])
            if v is not None and v.measure is not None:
                measure, rows = v.measure, v.rows or rows
    except Exception as exc:  # a failing proof is reported, not raised
        error = f"{type(exc).__name__}: {exc}"
    for checker in checkers:  # the engines that did not get to run say so
        verdicts.setdefault(checker.engine, {"passed": None, "seconds": 0.0, "version": checker.version(),
                                             "detail": "not run: " + (error or "no checks")})
    said = [v["passed"] for v in verdicts.values() if v["passed"] is not None]
    own = bool(said and all(said) and npairs > 0 and not error)
    return Entry(
        id=ident.id, kind=ident.kind, paper=ident.paper, statement=ident.statement,
        assumptions=ident.assumptions, uses=list(ident.uses), pairs=npairs, symbolic=symbolic,
        numeric_max_err=measure, own_passed=own, passed=own, seconds=time.perf_counter() - t0,
        sha256=digest, scope=ident.scope, error=error, checks=rows, checkers=verdicts,
    )


def graph() -> Graph:
    """The registry's identities (resting on what they use) and learners (on what they rely on)."""
    return Graph([*(Node(i.id, i.kind, i.uses) for i in REGISTRY.values()),
                  *(Node("learner:" + lr.name, "learner", lr.relies_on) for lr in LEARNERS.values())])


def _resolve(entries: dict[str, Entry]) -> dict[str, Status]:
    """Each entry's and learner's status through the one graph (:meth:`Graph.resolve`)."""
    g = Graph([*(Node(e.id, e.kind, tuple(e.uses)) for e in entries.values()),
               *(Node("learner:" + lr.name, "learner", lr.relies_on) for lr in LEARNERS.values())])

    def own(i: str) -> Status:
        if i.startswith("learner:"):
            return Status(VERIFIED if LEARNERS[i.removeprefix("learner:")].relies_on else NOT_IMPLEMENTED)
        return Status(VERIFIED if entries[i].own_passed else FAILED)

    return g.resolve(own)


def _kernel_checked(entries: dict[str, Entry]) -> dict[str, bool]:
    """Whether Coq passed each entry and every entry it uses, transitively (a use outside
    ``entries`` or on a cycle is not kernel-checked)."""
    memo: dict[str, bool] = {}

    def kernel(i: str, stack: tuple[str, ...]) -> bool:
        if i not in memo:
            e = entries.get(i)
            memo[i] = bool(e is not None and i not in stack and e.passed and "coq" in e.passed_engines
                           and all(kernel(u, stack + (i,)) for u in e.uses))
        return memo[i]

    return {i: kernel(i, ()) for i in entries}


def learner_status(lr: Learner, entries: dict[str, Entry]) -> LearnerEntry:
    """A learner is verified when every identity it relies on is fully verified (and exists)."""
    st = _resolve(entries)["learner:" + lr.name]
    return LearnerEntry(name=lr.name, result=lr.result, relies_on=list(lr.relies_on),
                        arithmetics=list(lr.arithmetics), queries=lr.queries, passed=st.verified,
                        failing=[i for i in lr.relies_on if i not in entries or not entries[i].passed])


def verify_all(ids: Iterable[str] | None = None, progress: Progress | None = None) -> Certificate:
    """Verify the registered identities (all, or ``ids`` and what they use).

    An identity passes only if its own checks pass and every identity it uses passes; a
    learner (listed when every identity it relies on was verified here) when all of those pass.
    ``progress`` is called with each entry as it is verified, then with each learner.
    """
    t0 = time.perf_counter()
    wanted = list(REGISTRY) if ids is None else graph().closure(ids)
    entries: dict[str, Entry] = {}
    for i in wanted:
        entries[i] = verify(i)
        if progress is not None:
            progress(entries[i])
    statuses = _resolve(entries)
    for i in wanted:
        entries[i].passed = statuses[i].verified
    kernel = _kernel_checked(entries)
    for i in wanted:
        entries[i].strength = strength(entries[i].passed_engines, kernel[i]) if entries[i].passed else ""
    learners = [learner_status(lr, entries) for lr in LEARNERS.values()
                if ids is None or set(lr.relies_on) <= set(wanted)]
    for lr in learners if progress is not None else ():
        progress(lr)
    return Certificate(
        entries=[entries[i] for i in wanted],
        learners=learners,
        versions={
            "attnproof": version_of_attnproof(),
            "python": platform.python_version(),
            "sympy": sp.__version__,
            "mpmath": mpmath.__version__,
            "numpy": np.__version__,
        },
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        seconds=time.perf_counter() - t0,
    )


__all__ = ["Entry", "LearnerEntry", "Certificate", "Progress", "verify", "verify_all", "learner_status",
           "graph"]
