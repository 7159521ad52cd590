"""Measurements of the learners: query counts, errors, bits and time (CLI and book)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .arith import FLOAT64, Arith, parse
from .models import Attention, FactoredAttention
from .oracles import ADVERSARIES, ApproxOracle, ValueOracle
from .recovery import Recovery, score
from .theorems.exact import learn_exact
from .theorems.lowrank import learn_lowrank_cvx, learn_skeleton, learn_skeleton_adaptive
from .theorems.noisy import DESIGNS, PAPER, Tolerances, design_tolerances, learn_noisy, paper_tolerances


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
        ``d, arith, probes, seed, queries, expected_queries (d + d^2), err_W, rel_err_W,
        err_v, bits, exact, seconds, oracle_seconds, learner_seconds, diagnostics``.
    """
    arith = parse(arith)
    rng = np.random.default_rng(seed)
    W, v = random_target(d, rng, scale)
    model = Attention(W, v, arith)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    rec = learn_exact(oracle, probes=probes, rng=rng, arith=arith)
    seconds = time.perf_counter() - t0
    result: dict[str, Any] = {
        "d": d,
        "arith": arith.name,
        "probes": probes,
        "seed": seed,
        "queries": rec.queries,
        "expected_queries": d + d * d,
    }
    result.update(score(rec, model.W, model.v, arith).as_dict())
    result.update(
        seconds=seconds,
        oracle_seconds=oracle.seconds,
        learner_seconds=seconds - oracle.seconds,
        diagnostics=rec.diagnostics,
    )
    return result


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
        raise ValueError(f"unknown low-rank learner {learner!r}")
    seconds = time.perf_counter() - t0
    result: dict[str, Any] = {"d": d, "rank": rank, "learner": learner, "arith": arith.name, "seed": seed,
                              "queries": rec.queries, "floor_queries": d + rank * (2 * d - rank),
                              "expected_queries": d + d * d}
    result.update(score(rec, model.W, model.v, arith if learner != "lowrank-cvx" else FLOAT64).as_dict())
    result.update(seconds=seconds, oracle_seconds=oracle.seconds, learner_seconds=seconds - oracle.seconds,
                  diagnostics=rec.diagnostics)
    return result


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
    rows = []
    for layer, head, model in heads:
        d, r = model.d, model.rank_bound
        oracle = ValueOracle(model)
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        if learner == "skeleton":
            rec = learn_skeleton(oracle, rank=r, rng=rng, bias=True)
        elif learner == "skeleton-adaptive":
            rec = learn_skeleton_adaptive(oracle, rng=rng, bias=True)
        else:
            rec = learn_exact(oracle, rng=rng, bias=True)
        W = model.W
        rows.append({
            "layer": layer, "head": head, "queries": rec.queries,
            "floor_queries": 2 * d + 1 + r * (2 * d - r), "dense_queries": 2 * d + 1 + d * d,
            "rank_found": rec.diagnostics.get("rank_found", d),
            "rel_err_W": float(np.linalg.norm(rec.W - W) / np.linalg.norm(W)),
            "rel_err_c": float(np.linalg.norm(rec.c - model.c) / max(np.linalg.norm(model.c), 1e-300)),
            "rel_err_v": float(np.linalg.norm(rec.v - model.v) / np.linalg.norm(model.v)),
            "err_beta": float(abs(rec.beta - model.beta)),
            "seconds": time.perf_counter() - t0, "oracle_seconds": oracle.seconds,
        })
    return rows


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
    rec = learn_noisy(oracle, W_bound=W_bound, mu=mu, design=DESIGNS[design])
    seconds = time.perf_counter() - t0
    result: dict[str, Any] = {"d": d, "arith": "float64", "learner": "noisy", "design": design,
                              "adversary": adversary, "seed": seed, "queries": rec.queries,
                              "expected_queries": d + d * d}
    result.update(score(rec, W, v, FLOAT64).as_dict())
    result.update(
        eps_W=eps_W, eps_v=eps_v, tau=tau, tau_theorem=proven, mu=mu, W_bound=W_bound,
        guarantee_W=result["err_W"] <= eps_W, guarantee_v=result["err_v"] <= eps_v,
        seconds=seconds, oracle_seconds=oracle.seconds, learner_seconds=seconds - oracle.seconds,
        diagnostics=rec.diagnostics,
    )
    return result


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


def run_transformer(
    d: int, m: int, arith: Arith | str = "float64", seed: int = 0, **opts: Any
) -> dict[str, Any]:
    """Recover a random one-layer Transformer (Sec. 4.1) through a counting oracle, and score it.

    Options: ``even`` (an even FFN, cone route), ``route``, ``probes`` (see
    :func:`~attnproof.theorems.transformer.learn_transformer`).

    Returns
    -------
    dict
        ``d, m, learner, arith, seed, route, L, queries, query_formula`` (the formula's name),
        ``query_formula_value``, ``extra_queries``, ``ffn_queries``, ``attention_queries``,
        ``err_W, rel_err_W, bits`` (of W), ``ffn_err`` (max |f_hat(x) - f(x)| / |x|_inf over
        256 random and 8 d points on the hyperplanes), ``error_bound_W``, ``error_bound_ffn``,
        ``seconds, oracle_seconds``.
    """
    from .models import OneLayerTransformer, ReluFFN
    from .theorems.transformer import learn_transformer

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
    return {
        "d": d, "m": m, "learner": "transformer", "arith": arith.name, "seed": seed, "route": route,
        "L": rec.ffn.L, "queries": rec.queries,
        "query_formula": "(L+1)(d+1) + 3L + 2 + " + ("2(d + d^2)" if route == "antisymmetric" else "d + d^2"),
        "query_formula_value": rec.diagnostics["formula"], "extra_queries": rec.diagnostics["extra_queries"],
        "ffn_queries": rec.diagnostics["ffn_queries"],
        "attention_queries": rec.diagnostics["attention_queries"],
        "err_W": s.err_W, "rel_err_W": s.rel_err_W, "bits": s.bits, "ffn_err": ffn_err,
        "error_bound_W": rec.diagnostics.get("error_bound", 0.0),
        "error_bound_ffn": rec.ffn.diagnostics.get("error_bound", 0.0),
        "restarts": len(rec.ffn.diagnostics["restarts"]),
        "seconds": seconds, "oracle_seconds": oracle.seconds,
    }


__all__ = [
    "transformer_target",
    "run_transformer",
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
