"""Measurements of the learners: query counts, errors, bits and time (CLI and book).

:data:`RUNNERS` maps every registered learner (:data:`attnproof.proof.LEARNERS`, the one table
of names, arithmetics and query counts) to a function that draws a target for it, recovers
it through a counting oracle and scores it; :func:`run` is the entry point the CLI uses.
Every result is a dict with the shared keys of :func:`result_row`.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .arith import FLOAT64, Arith, parse
from .errors import AttnproofError, InvalidInputError
from .models import Attention, FactoredAttention
from .oracles import ADVERSARIES, ApproxOracle, MembershipOracle, ValueOracle
from .proof import LEARNERS
from .recovery import Recovery, score
from .theorems.exact import learn_exact
from .theorems.lowrank import learn_lowrank_cvx, learn_skeleton, learn_skeleton_adaptive
from .theorems.membership import information_floor, learn_membership, learn_membership_rotated
from .theorems.noisy import DESIGNS, PAPER, Tolerances, design_tolerances, learn_noisy, paper_tolerances


def result_row(
    learner: str, d: int, seed: int, rec: Recovery, oracle: Any, seconds: float, W: Any, v: Any, **extra: Any
) -> dict[str, Any]:
    """The shared result shape: learner, d, arith, seed, queries (and the learner's formula),
    the score (errors, bits for W and v), the error bound, times and diagnostics."""
    row: dict[str, Any] = {"learner": learner, "d": d, "arith": rec.arith.name, "seed": seed}
    row.update(extra)
    row.update(queries=rec.queries, queries_formula=rec.diagnostics.get("queries_formula"))
    row.update(score(rec, W, v).as_dict())
    row.update(
        error_bound=rec.error_bound,
        within_bound=None if rec.error_bound is None else row["err_W"] <= rec.error_bound,
        seconds=seconds,
        oracle_seconds=oracle.seconds,
        learner_seconds=seconds - oracle.seconds,
        diagnostics=rec.diagnostics,
    )
    return row


def random_target(d: int, rng: np.random.Generator, scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A generic target: W with i.i.d. N(0, scale^2) entries (default scale 1/sqrt(d)), v ~ N(0, I).

    Returned in float64; any arithmetic converts it exactly (binary floats are exact
    rationals), so the same target serves every backend.
    """
    scale = 1 / np.sqrt(d) if scale is None else scale
    return rng.standard_normal((d, d)) * scale, rng.standard_normal(d)


def run_exact(
    d: int,
    arith: str | Arith = "float64",
    probes: str = "gaussian",
    seed: int = 0,
    scale: float | None = None,
) -> dict[str, Any]:
    """Draw a random target, recover it with Thm 4.1 through a counting oracle, and score it.

    Returns
    -------
    dict
        :func:`result_row`'s keys, plus ``probes`` and ``expected_queries`` (d + d^2).
    """
    arith = parse(arith)
    rng = np.random.default_rng(seed)
    W, v = random_target(d, rng, scale)
    model = Attention(W, v, arith)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    rec = learn_exact(oracle, probes=probes, rng=rng, arith=arith)
    seconds = time.perf_counter() - t0
    return result_row("exact", d, seed, rec, oracle, seconds, model.W, model.v, probes=probes,
                      expected_queries=d + d * d)


def low_rank_target(d: int, r: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K, Q of shape (r, d) with N(0, 1/sqrt(r)) entries (so p^T K^T Q q = O(1) for unit p, q),
    and v ~ N(0, I)."""
    s = r ** -0.25 if r else 1.0
    return rng.standard_normal((r, d)) * s, rng.standard_normal((r, d)) * s, rng.standard_normal(d)


def run_lowrank(
    d: int,
    rank: int,
    learner: str = "skeleton",
    arith: str | Arith = "float64",
    seed: int = 0,
    m: int | None = None,
    checks: int = 0,
) -> dict[str, Any]:
    """Recover a factored rank-r target with ``skeleton``, ``skeleton-adaptive`` or ``lowrank-cvx``.

    ``m`` (cvx only) defaults to 3 r (2d - r) measurements.  Keys as :func:`run_exact`, plus
    ``rank``, ``learner``, ``floor_queries`` = d + r(2d - r).
    """
    arith = parse(arith)
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, rank, rng)
    model = FactoredAttention(K, Q, v, arith)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    if learner == "skeleton":
        rec = learn_skeleton(oracle, rank=rank, rng=rng, arith=arith, checks=checks)
    elif learner == "skeleton-adaptive":
        rec = learn_skeleton_adaptive(oracle, rng=rng, arith=arith)
    elif learner == "lowrank-cvx":
        rec = learn_lowrank_cvx(oracle, m=m or 3 * rank * (2 * d - rank), rng=rng)
    else:
        raise InvalidInputError(f"unknown low-rank learner {learner!r}: use skeleton, skeleton-adaptive or lowrank-cvx")
    seconds = time.perf_counter() - t0
    return result_row(learner, d, seed, rec, oracle, seconds, model.W, model.v, rank=rank,
                      floor_queries=d + rank * (2 * d - rank), expected_queries=d + d * d)


def phase_transition(
    dims: list[int], ranks: list[int], ratios: list[float], seeds: range, threshold: float = 1e-6
) -> list[dict[str, Any]]:
    """Success rate of the nuclear-norm learner versus m / (r (2d - r)) (Thm 5.1's constant C)."""
    rows = []
    for d in dims:
        for r in ranks:
            for ratio in ratios:
                m = max(1, int(round(ratio * r * (2 * d - r))))
                errs = [run_lowrank(d, r, "lowrank-cvx", seed=s, m=m)["rel_err_W"] for s in seeds]
                rows.append({"d": d, "rank": r, "ratio": ratio, "m": m,
                             "success": float(np.mean([e < threshold for e in errs])), "max_rel_err": max(errs)})
    return rows


def recover_heads(
    heads: list[tuple[int, int, Any]], learner: str = "skeleton", seed: int = 0
) -> list[dict[str, Any]]:
    """Recover (W, c, v, beta) of real heads with biases through counting oracles.

    ``learner``: ``skeleton`` (rank r = the head dimension), ``skeleton-adaptive`` or
    ``exact`` (Thm 4.1 with biases).  Per head: queries, the two reference counts
    d + 1 + d + r(2d - r) and d + 1 + d + d^2, relative errors of W, c, v and |beta error|.
    """
    fn = LEARNERS[learner].fn if learner in LEARNERS else None
    if fn is None or "bias" not in inspect.signature(fn).parameters:
        with_bias = sorted(n for n, lr in LEARNERS.items() if "bias" in inspect.signature(lr.fn).parameters)
        raise InvalidInputError(f"learner {learner!r} does not learn heads with biases: use one of {with_bias}")
    rows = []
    for layer, head, model in heads:
        d, r = model.d, model.rank_bound
        oracle = ValueOracle(model)
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        kwargs = {"rank": r} if learner == "skeleton" else {}
        rec = fn(oracle, rng=rng, bias=True, **kwargs)
        s = score(rec, model.W, model.v, c=model.c, beta=model.beta)
        rows.append({
            "layer": layer, "head": head, "queries": rec.queries,
            "floor_queries": 2 * d + 1 + r * (2 * d - r), "dense_queries": 2 * d + 1 + d * d,
            "rank_found": rec.diagnostics.get("rank_found", d),
            "rel_err_W": s.rel_err_W,
            "rel_err_c": s.err_c / max(FLOAT64.norm(model.c), 1e-300),
            "rel_err_v": s.rel_err_v,
            "err_beta": s.err_beta,
            "error_bound": rec.error_bound,
            "seconds": time.perf_counter() - t0, "oracle_seconds": oracle.seconds,
        })
    return rows


def supported_range(
    d: int = 4, log10_scales: tuple[int, ...] = (-200, -170, -150, -100, 0, 100, 150, 200), seed: int = 0
) -> list[dict[str, Any]]:
    """What the float64 exact learner does across target scales: recovered within its bound
    (relative error, bound / ||W*||, queries) or refused with a typed error (its class)."""
    rows = []
    for e in log10_scales:
        try:
            r = run_exact(d, "float64", "gaussian", seed, scale=10.0**e)
        except AttnproofError as exc:
            rows.append({"log10_scale": e, "outcome": f"refused: {type(exc).__name__}"})
            continue
        norm = r["err_W"] / r["rel_err_W"] if r["rel_err_W"] else math.nan
        rows.append({"log10_scale": e, "outcome": "recovered", "rel_err_W": r["rel_err_W"],
                     "bound_over_norm": r["error_bound"] / norm, "queries": r["queries"]})
    return rows


def markdown_table(rows: list[dict[str, Any]], columns: dict[str, str]) -> str:
    """A Markdown table of ``rows`` (the book shows tables this way, not as printed text):
    ``columns`` maps a row key to its header; floats print with 2 significant digits."""
    def fmt(x: Any) -> str:
        if isinstance(x, float):
            return "–" if math.isnan(x) else f"{x:.2g}"
        return "–" if x is None else str(x)

    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(k)) for k in columns) + " |" for r in rows]
    return "\n".join(lines)


def precision_sweep(
    d: int, digits: list[int], probes: str = "gaussian", seed: int = 0
) -> list[dict[str, Any]]:
    """:func:`run_exact` on one target at several mpmath precisions (plus float64 first).

    An exact algorithm shows an error that falls like 10^-dps; an approximate one would
    stall at a floor.
    """
    return [run_exact(d, arith, probes, seed) for arith in ["float64", *(f"mp:{p}" for p in digits)]]


def margin_target(d: int, rng: np.random.Generator, W_bound: float = 2.0) -> tuple[np.ndarray, np.ndarray, float]:
    """A target meeting Thm 6.1's assumptions: ||W*||_F = 0.9 W, ||v*||_2 = 1, mu = min |v*_i|."""
    W = rng.standard_normal((d, d))
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    return W * 0.9 * W_bound / np.linalg.norm(W), v, float(np.abs(v).min())


def theorem_tolerances(design: str, eps_W: float, eps_v: float, W_bound: float, mu: float, d: int) -> Tolerances:
    """The tolerance each design is proven to support (the paper's own for ``paper``)."""
    if design == PAPER.name:
        return paper_tolerances(eps_W, eps_v, W_bound, mu, d)
    return design_tolerances(DESIGNS[design], eps_W, eps_v, W_bound, mu, d)


def run_noisy(
    d: int,
    design: str = "corrected",
    tau: float | None = None,
    adversary: str = "worst",
    eps_W: float = 0.1,
    eps_v: float = 0.1,
    W_bound: float = 2.0,
    seed: int = 0,
    target: tuple[np.ndarray, np.ndarray, float] | None = None,
) -> dict[str, Any]:
    """Recover a margin target through an adversarial ApproxOracle (Thm 6.1) and score it.

    ``tau`` defaults to the design's proven tolerance for (eps_W, eps_v).  The result has the
    keys of :func:`run_exact` plus ``eps_W, eps_v, tau, tau_theorem, guarantee_W, guarantee_v``.
    """
    rng = np.random.default_rng(seed)
    W, v, mu = target if target is not None else margin_target(d, rng, W_bound)
    proven = theorem_tolerances(design, eps_W, eps_v, W_bound, mu, d).tau
    tau = proven if tau is None else tau
    oracle = ApproxOracle(Attention(W, v), tau=tau, adversary=adversary, seed=seed)
    t0 = time.perf_counter()
    rec = learn_noisy(oracle, W_bound=W_bound, mu=mu, design=DESIGNS[design])  # no eps: may probe past the proof
    seconds = time.perf_counter() - t0
    row = result_row("noisy", d, seed, rec, oracle, seconds, W, v, design=design, adversary=adversary,
                     expected_queries=d + d * d)
    row.update(
        eps_W=eps_W, eps_v=eps_v, tau=tau, tau_theorem=proven, mu=mu, W_bound=W_bound,
        guarantee_W=row["err_W"] <= eps_W, guarantee_v=row["err_v"] <= eps_v,
    )
    row["guarantee_met"] = row["guarantee_W"] and row["guarantee_v"]
    return row


def tolerance_headroom(
    design: str, d: int = 4, eps: float = 0.1, seeds: range = range(8), max_doublings: int = 40
) -> dict[str, Any]:
    """How far beyond its proven tau a design still meets both guarantees, empirically.

    Doubles the multiplier m of the proven tolerance until some (seed, adversary) pair
    breaks a guarantee; reports the last safe m and that tolerance relative to the paper's.
    """
    targets = [margin_target(d, np.random.default_rng(s)) for s in seeds]
    proven = [theorem_tolerances(design, eps, eps, 2.0, mu, d).tau for _, _, mu in targets]
    safe = 0.0
    for k in range(max_doublings):
        ok = all(
            r["guarantee_W"] and r["guarantee_v"]
            for s, target, tau in zip(seeds, targets, proven)
            for a in ADVERSARIES
            for r in [run_noisy(d, design, tau * 2.0**k, a, eps, eps, seed=s, target=target)]
        )
        if not ok:
            break
        safe = 2.0**k
    mu = targets[0][2]
    paper = paper_tolerances(eps, eps, 2.0, mu, d).tau
    return {"design": design, "safe_multiplier": safe, "proven_over_paper": proven[0] / paper,
            "empirical_over_paper": safe * proven[0] / paper}


def membership_target(
    d: int, rng: np.random.Generator, W_bound: float, mu: float
) -> tuple[np.ndarray, np.ndarray]:
    """A target meeting Thm B.1's assumptions: ||W*||_F = 0.9 W and a unit v* with every |v*_i| >= mu
    (|v*_i|^2 = mu^2 + a random share of the spare mass 1 - d mu^2, random signs)."""
    if not 0 < mu <= 1 / np.sqrt(d):
        raise ValueError(f"mu must be in (0, 1/sqrt(d)] for a unit v with every |v_i| >= mu; got {mu}")
    W = rng.standard_normal((d, d))
    shares = rng.dirichlet(np.ones(d))
    v = rng.choice([-1.0, 1.0], d) * np.sqrt(mu**2 + shares * (1 - d * mu**2))
    return W * 0.9 * W_bound / np.linalg.norm(W), v / np.linalg.norm(v)


def run_membership(
    d: int,
    method: str = "bisect",
    arith: str | Arith = "float64",
    seed: int = 0,
    W_bound: float = 4.0,
    mu: float | None = None,
    eps_W: float = 1e-3,
    delta: float = 0.01,
    **opts: Any,
) -> dict[str, Any]:
    """Recover a Thm B.1 target through a counting MembershipOracle and score it.

    ``mu`` defaults to ``1 / (2 sqrt(d))`` (any unit v* with every |v*_i| >= mu exists up to
    1 / sqrt(d)).  ``opts`` go to :func:`~attnproof.theorems.membership.learn_membership`
    (``samples`` for ``paper``).  :func:`result_row`'s keys (``err_v`` against the unit v*:
    only the direction is identifiable from signs), plus ``method, floor_queries, err_v_inf,
    eps_W, eps_v, W_bound, mu, delta, guarantee_met``.
    """
    arith = parse(arith)
    mu = 1 / (2 * math.sqrt(d)) if mu is None else mu
    rng = np.random.default_rng(seed)
    W, v = membership_target(d, rng, W_bound, mu)
    model = Attention(W, v, arith)
    oracle = MembershipOracle(model)
    opts = {k: x for k, x in opts.items() if x is not None}
    t0 = time.perf_counter()
    rec = learn_membership(oracle, W_bound=W_bound, mu=mu, eps_W=eps_W, delta=delta, method=method,
                           rng=rng, arith=arith, **opts)
    seconds = time.perf_counter() - t0
    with arith.context():  # the float64 v* is unit only to rounding: score against its exact direction
        unit = model.v / arith.sqrt(model.v @ model.v)
        err_inf = max(abs(x - y) for x, y in zip(rec.v, unit))
    row = result_row("membership", d, seed, rec, oracle, seconds, model.W, unit, method=method,
                     floor_queries=information_floor(d, W_bound, eps_W))
    diag = rec.diagnostics
    row.update(
        err_v_inf=float(err_inf), eps_W=eps_W, eps_v=diag["eps_v"], W_bound=W_bound, mu=mu, delta=delta,
        guarantee_met=row["err_W"] <= eps_W and float(err_inf) <= diag["eps_v"] and diag["guarantee_met"],
    )
    return row


def run_membership_rotated(
    d: int, arith: str | Arith = "mp:50", seed: int = 0, W_bound: float = 4.0, eps_W: float = 1e-3,
    delta_rot: float = 0.05,
) -> dict[str, Any]:
    """Thm B.1 without the margin (rotated tokens) on a target whose v* has zero entries: the
    first half of v*'s coordinates are 0, which the paper's learner cannot handle.  Keys as
    :func:`run_membership` (no ``method``)."""
    arith = parse(arith)
    rng = np.random.default_rng(seed)
    W, v = membership_target(d, rng, W_bound, 1 / math.sqrt(d))
    v[: d // 2] = 0.0
    model = Attention(W, v / np.linalg.norm(v), arith)
    oracle = MembershipOracle(model)
    t0 = time.perf_counter()
    rec = learn_membership_rotated(oracle, W_bound=W_bound, eps_W=eps_W, delta_rot=delta_rot, rng=rng, arith=arith)
    seconds = time.perf_counter() - t0
    with arith.context():
        unit = model.v / arith.sqrt(model.v @ model.v)
    row = result_row("membership-rotated", d, seed, rec, oracle, seconds, model.W, unit, eps_W=eps_W)
    row["guarantee_met"] = row["err_W"] <= eps_W and bool(rec.diagnostics["guarantee_met"])
    return row


#: learner name -> runner(d, arith, seed, **options): one entry per registered learner (a test
#: checks that the keys are exactly :data:`attnproof.proof.LEARNERS`).
RUNNERS: dict[str, Callable[..., dict[str, Any]]] = {
    "exact": lambda d, arith, seed, probes="gaussian", scale=None: run_exact(d, arith, probes, seed, scale),
    "skeleton": lambda d, arith, seed, rank, checks=0: run_lowrank(d, rank, "skeleton", arith, seed, checks=checks),
    "skeleton-adaptive": lambda d, arith, seed, rank: run_lowrank(d, rank, "skeleton-adaptive", arith, seed),
    "lowrank-cvx": lambda d, arith, seed, rank, m=None: run_lowrank(d, rank, "lowrank-cvx", arith, seed, m=m),
    "noisy": lambda d, arith, seed, design="corrected", tau=None, adversary="worst", eps_W=0.1, eps_v=0.1,
    W_bound=2.0: run_noisy(d, design, tau, adversary, eps_W, eps_v, W_bound, seed),
    "membership": lambda d, arith, seed, method="bisect", W_bound=4.0, mu=None, eps_W=1e-3, delta=0.01,
    samples=None: run_membership(d, method, arith, seed, W_bound, mu, eps_W, delta, samples=samples),
    "membership-rotated": lambda d, arith, seed, W_bound=4.0, eps_W=1e-3, delta_rot=0.05: run_membership_rotated(
        d, arith, seed, W_bound, eps_W, delta_rot),
}


def options_of(learner: str) -> set[str]:
    """The options :func:`run` accepts for ``learner`` (beyond d, arith and seed)."""
    return set(inspect.signature(RUNNERS[learner]).parameters) - {"d", "arith", "seed"}


def run(learner: str, d: int, arith: str | Arith = "float64", seed: int = 0, **options: Any) -> dict[str, Any]:
    """Run the registered learner ``learner`` on a random target of width d (see :data:`RUNNERS`).

    Raises
    ------
    InvalidInputError
        For an unknown learner, an option it does not take, or an arithmetic it does not run in.
    """
    if learner not in LEARNERS or learner not in RUNNERS:
        raise InvalidInputError(f"unknown learner {learner!r}: use one of {sorted(LEARNERS)}")
    unknown = set(options) - options_of(learner)
    if unknown:
        raise InvalidInputError(f"the {learner} learner takes no option {sorted(unknown)}; it takes {sorted(options_of(learner))}")
    arith = parse(arith)
    if arith.family not in LEARNERS[learner].arithmetics:
        raise InvalidInputError(
            f"the {learner} learner runs in {', '.join(LEARNERS[learner].arithmetics)}, not {arith.name}"
        )
    return RUNNERS[learner](d=d, arith=arith, seed=seed, **options)


__all__ = [
    "membership_target",
    "run_membership",
    "run_membership_rotated",
    "RUNNERS",
    "run",
    "supported_range",
    "markdown_table",
    "options_of",
    "result_row",
    "random_target",
    "run_exact",
    "precision_sweep",
    "low_rank_target",
    "recover_heads",
    "run_lowrank",
    "phase_transition",
    "margin_target",
    "theorem_tolerances",
    "run_noisy",
    "tolerance_headroom",
]
