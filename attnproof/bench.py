"""Measurements of the learners: query counts, errors, bits and time (CLI and book)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .arith import FLOAT64, Arith, parse
from .models import Attention, FactoredAttention, MultiHeadAttention
from .oracles import ADVERSARIES, ApproxOracle, ValueOracle
from .recovery import score
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



# --- multi-head attention (Sec. 7, App. C) --------------------------------------------------


def orthogonal_heads_target(
    d: int, H: int, rng: np.random.Generator, arith: Arith = FLOAT64
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
    """A generic Assumption C.1 target: H equal subspaces of a random rotation (Cayley
    transform, orthogonal to the arithmetic's precision), ``W~ ~ N(0, 1/d_h)``, ``v~ ~ N(0, I)``."""
    from .theorems.multihead import cayley_bases

    if H < 1 or d % H:
        raise ValueError(f"H must divide d; got d = {d}, H = {H}")
    dh = d // H
    bases = cayley_bases([dh] * H, rng.standard_normal((d, d)), arith)
    with arith.context():
        heads = [
            (
                E @ arith.asarray(rng.standard_normal((dh, dh)) / np.sqrt(dh)) @ E.T,
                E @ arith.asarray(rng.standard_normal(dh)),
            )
            for E in bases
        ]
    return heads, bases


def _multihead_result(
    rec: Any, heads: list, arith: Arith, seconds: float, oracle: ValueOracle
) -> dict[str, Any]:
    from .recovery import score_heads

    s = score_heads(rec, heads, arith)
    return {
        "queries": rec.queries,
        "err_W": s["err_W"],
        "err_v": s["err_v"],
        "max_entry_err": s["max_entry_err"],
        "bits": s["bits"],
        "exact": s["exact"],
        "seconds": seconds,
        "oracle_seconds": oracle.seconds,
        "learner_seconds": seconds - oracle.seconds,
    }


def run_orthogonal_heads(
    d: int, H: int, arith: str | Arith = "float64", seed: int = 0, **opts: Any
) -> dict[str, Any]:
    """Recover a random C.1 target with :func:`learn_orthogonal_heads` (Prop. C.2), bases known.

    ``opts`` go to the learner (``probes``, ``checks``, ``tol``).  Keys: ``d, H, learner, arith,
    seed, queries, expected_queries`` (the registry's formula ``sum_h (d_h + d_h^2) + checks``),
    ``err_W, err_v, max_entry_err, bits, exact, error_bound, seconds, oracle_seconds``.
    """
    from .proof import LEARNERS
    from .theorems.multihead import learn_orthogonal_heads

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


def multihead_sbd_table(
    shapes: tuple[tuple[int, int], ...] = ((2, 2), (3, 2), (2, 3), (3, 3), (2, 4), (3, 4), (2, 5), (2, 6)),
    seeds: range = range(5),
    source: str = "exact",
    tol: float = 1e-6,
) -> list[dict[str, Any]]:
    """The Hessian / SBD experiment: for each (H, d_h) and K = 1 .. d_h + 1 Hessians of App. C's F
    at z = 0 (q = e_1 .. e_K), how often each SBD method returns the head subspaces.

    ``source``: ``exact`` (closed form, float64), ``fd`` (finite differences of value queries,
    float64, step 2^-13) or ``mp:DIGITS`` (finite differences in mpmath).  A method succeeds
    when the largest sin(angle) between a true subspace and its block is below ``tol``.

    Returns one row per (H, d_h, K): ``H, d_h, d, K, commutant`` / ``random_combination``
    (success rates), ``commutant_blocks`` / ``random_blocks`` (block sizes of the first seed),
    ``hessian_error`` (max entry error of the Hessians against the closed form) and
    ``hessian_queries`` (value queries per Hessian, 0 for ``exact``).
    """
    from .theorems.multihead import (
        fd_hessian,
        fd_queries,
        probe_hessian,
        sbd_commutant,
        sbd_random_combination,
        subspace_error,
    )

    arith = FLOAT64 if source in ("exact", "fd") else parse(source)
    rows = []
    for H, dh in shapes:
        d = H * dh
        for K in range(1, dh + 2):
            ok_c = ok_r = 0
            blocks_c = blocks_r = None
            herr = 0.0
            for seed in seeds:
                rng = np.random.default_rng(seed)
                heads, bases = orthogonal_heads_target(d, H, rng, arith)
                I, zero = arith.eye(d), arith.zeros(d)
                exact = [probe_hessian(heads, I[j], zero, arith) for j in range(K)]
                if source == "exact":
                    As = exact
                else:
                    oracle = ValueOracle(MultiHeadAttention(heads, arith))
                    step = 2.0 ** round(np.log2(arith.eps) / 4)
                    As = [fd_hessian(oracle, I[j], zero, step, arith) for j in range(K)]
                    with arith.context():
                        herr = max(herr, max(arith.abs_max(A - B) for A, B in zip(As, exact)))
                null_tol = None if source == "exact" else arith.eps**0.25
                found, info = sbd_commutant(As, rng, arith, null_tol=null_tol)
                ok_c += subspace_error(found, bases, arith) < tol
                naive, ninfo = sbd_random_combination(
                    [arith.to_float(A) for A in As], rng, tol=1e-8 if source == "exact" else 1e-4
                )
                ok_r += subspace_error(naive, bases) < tol
                if blocks_c is None:
                    blocks_c, blocks_r = info["block_sizes"], ninfo["block_sizes"]
            n = len(seeds)
            rows.append(
                {
                    "H": H,
                    "d_h": dh,
                    "d": d,
                    "K": K,
                    "commutant": ok_c / n,
                    "random_combination": ok_r / n,
                    "commutant_blocks": sorted(blocks_c),
                    "random_blocks": blocks_r,
                    "hessian_error": herr,
                    "hessian_queries": 0 if source == "exact" else fd_queries(d),
                }
            )
    return rows


def minimal_hessians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """From :func:`multihead_sbd_table`: per (H, d_h), the least K at which the commutant method
    succeeded on every seed (and stays successful for larger K in the table), against the
    necessity bound max(2, d_h - 1) (1 when d_h = 1)."""
    from .theorems.multihead import min_hessians

    out = []
    for H, dh in sorted({(r["H"], r["d_h"]) for r in rows}):
        ks = sorted((r["K"], r["commutant"]) for r in rows if (r["H"], r["d_h"]) == (H, dh))
        good = [k for k, rate in ks if rate == 1 and all(rr == 1 for kk, rr in ks if kk >= k)]
        out.append(
            {"H": H, "d_h": dh, "minimal_K": min(good) if good else None, "lower_bound": min_hessians(dh)}
        )
    return out


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
    from .proof import LEARNERS
    from .theorems.multihead import learn_multihead_sbd, min_hessians, subspace_error

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


__all__ = [
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
