"""Sec. 7 and App. C on the bench: the multi-head learners' options and runners, random
Assumption C.1 targets, and the Hessian / SBD experiment (how many Hessians the commutant SBD
needs, against the necessity bound).

The room's registration with the engine (:mod:`attnproof.room`): ``orthogonal-heads`` and
``multihead-sbd`` declare their options once (:class:`OrthogonalHeadsOptions`,
:class:`MultiheadSBDOptions`); their runners draw a C.1 target (:func:`orthogonal_heads_target`),
recover it through a counting oracle and score the heads.  ``attnproof bench multihead`` prints
:func:`multihead_sbd_table` and :func:`minimal_hessians`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...arith import FLOAT64, Arith, parse
from ...errors import AttnproofError, InvalidInputError
from ...models import MultiHeadAttention
from ...oracles import ApproxOracle, MultiHeadRoundingAdversary, ValueOracle
from ...verify.registry import LEARNERS
from ...recovery import MultiHeadRecovery, score_heads
from ...room import Job, Options, Workload, int_at_least, job_key, option, part, runner, sweep
from .maps import cayley_bases
from .orthogonal import DEFAULT_CHECKS, HEADS, learn_orthogonal_heads
from .sbd import (
    fd_hessian,
    fd_queries,
    learn_multihead_sbd,
    min_hessians,
    probe_hessian,
    sbd_commutant,
    sbd_random_combination,
    subspace_error,
)

def _check_heads(d: int, H: int) -> None:
    """A C.1 target of H equal subspaces needs H to divide d."""
    if H < 1 or d % H:
        raise InvalidInputError(f"H must divide d; got d = {d}, H = {H}")


@dataclass(frozen=True)
class OrthogonalHeadsOptions(Options):
    """Options of the ``orthogonal-heads`` learner on the bench (Prop. C.2, the bases given)."""

    H: int = option(HEADS, low=1, help="heads: H equal subspaces of width d / H (H divides d)")
    checks: int = option(DEFAULT_CHECKS, low=0, help="held-out length-3 queries checking Assumption C.1 "
                         "(at least one per head: max(checks, H) are asked; 0 for none)")

    def check(self, d: int) -> None:
        """H must divide the width d."""
        super().check(d)
        _check_heads(d, self.H)


@dataclass(frozen=True)
class MultiheadSBDOptions(OrthogonalHeadsOptions):
    """Options of the ``multihead-sbd`` learner on the bench (App. C, the subspaces not given)."""

    checks: int = option(DEFAULT_CHECKS, low=1, help="held-out length-3 queries refusing wrong blocks (>= 1)")
    hessians: int | None = option(None, low=1, help="probe Hessians K (default max(2, d_h - 1))")
    tau: float | None = option(None, low=0.0, open_low=True,
                               help="float64: answers with noise uniform in [-tau, tau] (ApproxOracle)")


def orthogonal_heads_target(
    d: int, H: int, rng: np.random.Generator, arith: Arith = FLOAT64
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
    """A generic Assumption C.1 target: H equal subspaces of a random rotation (Cayley
    transform, orthogonal to the arithmetic's precision), ``W~ ~ N(0, 1/d_h)``, ``v~ ~ N(0, I)``."""

    _check_heads(d, H)
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

    out = []
    for H, dh in sorted({(r["H"], r["d_h"]) for r in rows}):
        ks = sorted((r["K"], r["commutant"]) for r in rows if (r["H"], r["d_h"]) == (H, dh))
        good = [k for k, rate in ks if rate == 1 and all(rr == 1 for kk, rr in ks if kk >= k)]
        out.append(
            {"H": H, "d_h": dh, "minimal_K": min(good) if good else None, "lower_bound": min_hessians(dh)}
        )
    return out


def _multihead_result(
    rec: MultiHeadRecovery, heads: list, arith: Arith, seconds: float, oracle: ValueOracle
) -> dict[str, Any]:
    """The multi-head learners' share of a result row: queries (and the registered formula), the
    heads' score (matched up to a permutation), the error bound, times and diagnostics."""
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


@runner("orthogonal-heads", OrthogonalHeadsOptions)
def run_orthogonal_heads(
    d: int, H: int = OrthogonalHeadsOptions.H, arith: str | Arith = "float64", seed: int = 0,
    checks: int = OrthogonalHeadsOptions.checks,
    probes: str = "basis", tol: float | None = None,
) -> dict[str, Any]:
    """Recover a random C.1 target with :func:`learn_orthogonal_heads` (Prop. C.2), bases known.

    ``checks``, ``probes`` and ``tol`` go to the learner.  Keys: ``d, H, learner, arith,
    seed, queries, expected_queries`` (the registry's formula ``sum_h (d_h + d_h^2) + max(checks, H)``,
    none for 0 checks),
    ``err_W, err_v, max_entry_err, bits, exact, error_bound, seconds, oracle_seconds``.
    """

    arith = parse(arith)
    rng = np.random.default_rng(seed)
    heads, bases = orthogonal_heads_target(d, H, rng, arith)
    oracle = ValueOracle(MultiHeadAttention(heads, arith))
    t0 = time.perf_counter()
    rec = learn_orthogonal_heads(oracle, bases, probes=probes, rng=rng, arith=arith, checks=checks, tol=tol)
    seconds = time.perf_counter() - t0
    result: dict[str, Any] = {
        "d": d,
        "H": H,
        "learner": "orthogonal-heads",
        "arith": arith.name,
        "seed": seed,
        "expected_queries": LEARNERS["orthogonal-heads"].count(d=d, H=H, checks=checks),
    }
    result.update(_multihead_result(rec, heads, arith, seconds, oracle))
    return result


@runner("multihead-sbd", MultiheadSBDOptions)
def run_multihead_sbd(
    d: int,
    H: int = MultiheadSBDOptions.H,
    arith: str | Arith = "float64",
    seed: int = 0,
    hessians: int | None = MultiheadSBDOptions.hessians,
    tau: float | None = MultiheadSBDOptions.tau,
    checks: int = MultiheadSBDOptions.checks,
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


__all__ = [
    "MultiheadSBDOptions", "OrthogonalHeadsOptions", "minimal_hessians", "multihead_sbd_table",
    "orthogonal_heads_target", "run_multihead_sbd", "run_orthogonal_heads",
]


# --- the room's share of the engine's sweeps that span rooms (attnproof.room.part) ------------

part("bounds", "small", 6, Workload("orthogonal-heads", 6, "float64", {"H": 2}, (0,)))


def orthogonal_heads_versus_adversary(
    d: int, arith: str | Arith, seed: int, H: int = OrthogonalHeadsOptions.H,
    checks: int = OrthogonalHeadsOptions.checks,
) -> dict[str, Any]:
    """An ``orthogonal-heads`` workload's target (:func:`run_orthogonal_heads`'s at this seed)
    learned against :class:`~attnproof.oracles.MultiHeadRoundingAdversary` (every two-token answer
    off by the most each head's naive model allows, every head's logit pushed up, the other heads'
    leak with it), scored as :func:`run_orthogonal_heads` scores: the row the bench scores, with
    ``adversary``.  The bound is the learner's own (:func:`.orthogonal._error_bounds`: each
    reduced oracle's naive model, the leak included).

    Raises
    ------
    InvalidInputError
        For a non-float64 workload (the adversary realizes the naive float64 model only).
    """
    arith = parse(arith)
    if arith.family not in MultiHeadRoundingAdversary.arithmetics:
        raise InvalidInputError(
            f"the multi-head adversary realizes the naive float64 model; got {arith.name}")
    rng = np.random.default_rng(seed)
    heads, bases = orthogonal_heads_target(d, H, rng, arith)
    oracle = MultiHeadRoundingAdversary(MultiHeadAttention(heads, arith))
    t0 = time.perf_counter()
    rec = learn_orthogonal_heads(oracle, bases, probes="basis", rng=rng, arith=arith, checks=checks)
    result = _multihead_result(rec, heads, arith, time.perf_counter() - t0, oracle)
    return {"d": d, "H": H, "learner": "orthogonal-heads", "arith": arith.name, "seed": seed, **result,
            "adversary": "MultiHeadRoundingAdversary"}


@part("bounds", "adversary", 3)
def _orthogonal_heads_adversary(learner: str, options: dict[str, Any]) -> Any:
    """``bench bounds``'s adversary of an ``orthogonal-heads`` workload
    (:func:`orthogonal_heads_versus_adversary`: its model declares the naive one); None for any other."""
    return orthogonal_heads_versus_adversary if learner == "orthogonal-heads" else None


# --- ``attnproof bench multihead``: the Hessian / SBD experiment as the room's sweep ----------


def hessian_source(text: str) -> str:
    """A Hessian source of :func:`multihead_sbd_table`: ``exact``, ``fd`` or ``mp:DIGITS``
    (an mpmath arithmetic :func:`attnproof.arith.parse` accepts), else an InvalidInputError."""
    if text in ("exact", "fd"):
        return text
    if not text.startswith("mp:"):
        raise InvalidInputError(f"use exact, fd or mp:DIGITS: {text!r}")
    try:
        parse(text)
    except AttnproofError as exc:
        raise InvalidInputError(str(exc)) from None
    return text


@dataclass(frozen=True)
class SBDSweepOptions(Options):
    """Options of ``attnproof bench multihead``."""

    seeds: int = option(3, low=1, parse=int_at_least(1), show_default=False, help="seeds per point")
    source: str = option("exact", check=hessian_source, parse=hessian_source, show_default=False,
                         help="Hessians exact (closed form), fd (finite differences) or mp:DIGITS")


def sbd_table(seeds: int, source: str) -> dict[str, Any]:
    """The one job of ``bench multihead``: ``{"rows": multihead_sbd_table(...)}`` over
    ``range(seeds)``."""
    return {"rows": multihead_sbd_table(seeds=range(seeds), source=source)}


def sbd_report(options: Options, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """``bench multihead``'s document and lines: the table's rows (success shares per (H, d_h, K))
    and, per (H, d_h), the minimal K against the necessity bound (:func:`minimal_hessians`)."""
    (job,) = rows
    table, seeds = job["rows"], options.values()["seeds"]
    minimal = minimal_hessians(table)
    lines = [f"Hessian SBD (App. C.2): share of {seeds} seed(s) per row whose K probe Hessians split "
             "into the H true heads, by the commutant and by a random combination"]
    lines += [f"H={r['H']} d_h={r['d_h']} K={r['K']}: commutant {r['commutant']:.2f}, "
              f"random combination {r['random_combination']:.2f}" for r in table]
    lines += [f"H={m['H']} d_h={m['d_h']}: minimal K = {m['minimal_K']} (lower bound {m['lower_bound']})"
              for m in minimal]
    return {"results": table, "minimal": minimal}, lines


@sweep("multihead", SBDSweepOptions, help="Hessian SBD (App. C.2): how many probe Hessians split the heads "
       "(runs in this process)", describe=lambda row: None, report=sbd_report, order=4, in_process=True)
def sbd_jobs(seeds: int = SBDSweepOptions.seeds, source: str = SBDSweepOptions.source) -> list[Job]:
    """The one job of ``bench multihead`` (:func:`sbd_table`)."""
    kwargs = {"seeds": seeds, "source": source}
    return [Job(job_key("multihead", **kwargs), sbd_table, kwargs, 0)]


__all__ += ["SBDSweepOptions", "hessian_source", "sbd_jobs", "sbd_report", "sbd_table"]
# the row keys the engine's line for a result row shows (part ("rows", "shown"), by a global order)
for _order, _key in ((3, "H"), (7, "adversary"), (8, "tau"), (9, "probes")):
    part("rows", "shown", _order, _key)
