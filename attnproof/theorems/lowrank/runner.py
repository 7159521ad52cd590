"""Thm 5.1 on the bench: factored rank-r targets, the three low-rank learners, the phase transition.

The room's registration with the engine (:mod:`attnproof.room`): the options and runner
(:func:`run_lowrank`) of ``skeleton``, ``skeleton-adaptive`` and ``lowrank-cvx``, and the
nuclear-norm learner's phase transition (:func:`phase_transition`, Thm 5.1's constant C).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...arith import Arith, parse
from ...errors import InvalidInputError, PrecisionLossError
from ...models import ANSWERS, FactoredAttention
from ...oracles import RoundingAdversary, ValueOracle
from ...verify.registry import LEARNERS
from ...room import (
    FloorTarget, Job, Options, TimingRun, Workload, default_of, job_key,
    option, part, random_biases, result_row, runner, sweep,
)
from . import learn_lowrank_cvx, learn_skeleton, learn_skeleton_adaptive

#: the low-rank learners :func:`run_lowrank` runs
LOWRANK_LEARNERS = ("skeleton", "skeleton-adaptive", "lowrank-cvx")


@dataclass(frozen=True)
class RankOptions(Options):
    """Options of a low-rank learner on the bench: the rank r of the target W* = K^T Q."""

    rank: int = option(low=0, help="r = rank of the target W = K^T Q (<= d)")
    answers: str = option(
        default_of(FactoredAttention, "answers"), choices=tuple(ANSWERS),
        help="how the oracle evaluates and rounds its answers: in float64 in any order (naive), or in "
        "extended precision rounded once (faithful: declared, so the skeleton's bound is tighter)",
    )

    def check(self, d: int) -> None:
        if self.rank > d:
            raise InvalidInputError(f"option rank: must be <= d = {d}; got {self.rank}")


@dataclass(frozen=True)
class SkeletonOptions(RankOptions):
    """Options of ``skeleton`` (Thm 5.1 at the floor): the rank it is told, and check queries."""

    checks: int = option(default_of(learn_skeleton, "checks"), low=0, help="extra check queries (<= d)")
    exchanges: int = option(default_of(learn_skeleton, "exchanges"), low=0,
                            help="maxvol pivot-column exchanges (<= d), d - r counted queries each")

    def check(self, d: int) -> None:
        super().check(d)
        for name in ("checks", "exchanges"):
            if getattr(self, name) > d:
                raise InvalidInputError(f"option {name}: must be <= d = {d}; got {getattr(self, name)}")


@dataclass(frozen=True)
class CvxOptions(RankOptions):
    """Options of ``lowrank-cvx`` (the paper's nuclear-norm learner)."""

    m: int | None = option(None, low=1, help="measurements (default 3 r (2d - r))")

    def check(self, d: int) -> None:
        super().check(d)
        if self.rank == 0 and self.m is None:
            raise InvalidInputError("option rank: lowrank-cvx needs rank >= 1 (or an explicit m)")


def low_rank_target(d: int, r: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K, Q of shape (r, d) with N(0, 1/sqrt(r)) entries (so p^T K^T Q q = O(1) for unit p, q),
    and v ~ N(0, I)."""
    s = r ** -0.25 if r else 1.0
    return rng.standard_normal((r, d)) * s, rng.standard_normal((r, d)) * s, rng.standard_normal(d)


@runner("lowrank-cvx", CvxOptions, learner="lowrank-cvx")
@runner("skeleton-adaptive", RankOptions, learner="skeleton-adaptive")
@runner("skeleton", SkeletonOptions, learner="skeleton")
def run_lowrank(
    d: int,
    rank: int,
    learner: str = "skeleton",
    arith: str | Arith = "float64",
    seed: int = 0,
    m: int | None = CvxOptions.m,
    checks: int = SkeletonOptions.checks,
    answers: str = RankOptions.answers,
    exchanges: int = SkeletonOptions.exchanges,
) -> dict[str, Any]:
    """Recover a factored rank-r target with ``skeleton``, ``skeleton-adaptive`` or ``lowrank-cvx``.

    ``m`` (cvx only) defaults to 3 r (2d - r) measurements.  ``answers``: the model's evaluation
    (:class:`~attnproof.models.Rounding`), which the oracle declares and the bounds read.
    ``exchanges`` (skeleton only): its maxvol pivot-column exchanges.  Keys as
    :func:`~attnproof.theorems.exact.runner.run_exact`, plus ``rank``, ``learner``,
    ``floor_queries`` = d + r(2d - r), ``designed_queries`` (the skeletons' checks of a stop below
    the declared rank, counted extras) and ``designed_what``, and the oracle's own cost:
    ``oracle_seconds_per_query``
    against ``oracle_flops_per_query`` = 6 d r (a two-token query of the factored head computes
    K x_1, K x_2 and Q x_2, three r x d products; the value readout and the two scores are O(d + r)).
    """
    arith = parse(arith)
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, rank, rng)
    model = FactoredAttention(K, Q, v, arith, answers=answers)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    if learner == "skeleton":
        rec = learn_skeleton(oracle, rank=rank, rng=rng, arith=arith, checks=checks, exchanges=exchanges)
    elif learner == "skeleton-adaptive":
        rec = learn_skeleton_adaptive(oracle, rng=rng, arith=arith)
    elif learner == "lowrank-cvx":
        rec = learn_lowrank_cvx(oracle, m=m or 3 * rank * (2 * d - rank), rng=rng)
    else:
        raise InvalidInputError(f"unknown low-rank learner {learner!r}: use one of {list(LOWRANK_LEARNERS)}")
    seconds = time.perf_counter() - t0
    return result_row(learner, d, seed, rec, oracle, seconds, model.W, model.v, rank=rank,
                      floor_queries=d + rank * (2 * d - rank), expected_queries=d + d * d,
                      designed_queries=rec.diagnostics.get("designed_queries", 0),
                      designed_what="the check of a stop below the declared rank on random mixes of columns"
                      if not rec.diagnostics.get("exchanged_columns") else
                      "the maxvol pivot-column exchanges (d - r each) and any check of a stop",
                      oracle_seconds_per_query=oracle.seconds / max(oracle.queries, 1),
                      oracle_flops_per_query=6 * d * rank)


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


@dataclass(frozen=True)
class LowrankSweepOptions(Options):
    """Options of ``attnproof bench lowrank``: one rank per width."""

    d: tuple[int, ...] = option(help="widths, comma-separated")
    rank: tuple[int, ...] = option(low=0, help="one rank per width, comma-separated")
    learner: str = option("skeleton", choices=LOWRANK_LEARNERS, help="the low-rank learner")
    arith: str = option("float64", check=parse, help="float64, mp:DIGITS or sympy")
    seed: int = option(0, low=0, help="seed of the targets and the learner's draws")

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.rank) != len(self.d):
            raise InvalidInputError("option rank: one rank per width (e.g. d 1024,4096 with rank 32,128)")
        for n, r in zip(self.d, self.rank, strict=True):
            if r > n:
                raise InvalidInputError(f"option rank: rank {r} exceeds d = {n}")


@sweep("lowrank", LowrankSweepOptions, help="the low-rank learners at the floor d + r (2d - r)")
def lowrank_jobs(
    d: tuple[int, ...], rank: tuple[int, ...], learner: str = LowrankSweepOptions.learner,
    arith: str = LowrankSweepOptions.arith, seed: int = LowrankSweepOptions.seed,
) -> list[Job]:
    """One :func:`run_lowrank` job per (d, rank) pair (``bench lowrank``)."""
    if learner not in LOWRANK_LEARNERS:
        raise InvalidInputError(f"unknown low-rank learner {learner!r}: use one of {list(LOWRANK_LEARNERS)}")
    return [
        Job(job_key(learner, d=n, rank=r, arith=arith, seed=seed), run_lowrank,
            {"d": n, "rank": r, "learner": learner, "arith": arith, "seed": seed},
            LEARNERS["skeleton"].count(d=n, r=r, rank=r))
        for n, r in zip(d, rank, strict=True)
    ]


def describe_phase(row: dict[str, Any]) -> str:
    """One line for a :func:`phase_point` row."""
    return (f"d={row['d']:3d} r={row['rank']} m/(r(2d-r))={row['ratio']:.2f} m={row['m']:5d} "
            f"success={row['success']:.2f} max rel err={row['max_rel_err']:.1e}")


@dataclass(frozen=True)
class PhaseSweepOptions(Options):
    """Options of ``attnproof bench phase``."""

    d: tuple[int, ...] = option((64, 256, 1024), low=1, help="widths, comma-separated")
    rank: tuple[int, ...] = option((1, 2, 4), low=1, help="ranks, comma-separated")
    ratios: tuple[float, ...] = option((1.0, 1.5, 2.0, 2.5, 3.0, 4.0), low=0.0, open_low=True,
                                       help="measurements m / (r (2d - r)), comma-separated")
    seeds: int = option(3, low=1, help="seeds per point")


@sweep("phase", PhaseSweepOptions, help="the nuclear-norm learner's phase transition (Thm 5.1's constant)",
       describe=describe_phase)
def phase_jobs(
    d: tuple[int, ...], rank: tuple[int, ...], ratios: tuple[float, ...], seeds: int | range
) -> list[Job]:
    """One :func:`phase_point` job per (d, rank, ratio) (``bench phase``); ``seeds``: how many
    (from 0), or a range."""
    seeds = range(seeds) if isinstance(seeds, int) else seeds
    jobs = []
    for n in d:
        for r in rank:
            for ratio in ratios:
                m = max(1, int(round(ratio * r * (2 * n - r))))
                jobs.append(Job(
                    job_key("phase", d=n, rank=r, ratio=ratio, seeds=f"{seeds.start}-{seeds.stop - 1}"),
                    phase_point, {"d": n, "rank": r, "ratio": ratio, "seeds": list(seeds)},
                    len(seeds) * LEARNERS["lowrank-cvx"].count(d=n, m=m),
                ))
    return jobs


__all__ = [
    "LOWRANK_LEARNERS", "RankOptions", "SkeletonOptions", "CvxOptions", "low_rank_target", "run_lowrank",
    "phase_point", "phase_transition", "LowrankSweepOptions", "lowrank_jobs", "describe_phase",
    "PhaseSweepOptions", "phase_jobs",
]


# --- the room's share of the engine's sweeps that span rooms (attnproof.room.part) ------------


def floor_target(
    d: int, rank: int, scale: float, bias: bool, probes: str, rng: np.random.Generator
) -> tuple[FactoredAttention, Any, dict[str, Any]]:
    """``bench perf``'s query-count target of Thm 5.1 (a :class:`~attnproof.room.FloorTarget`):
    :func:`low_rank_target` of rank ``rank`` scaled to ``||W*||_F = scale``, with biases when
    ``bias``, learned by :func:`~attnproof.theorems.lowrank.learn_skeleton` at that rank (its
    probes are random bases whatever ``probes`` says)."""
    K, Q, v = low_rank_target(d, rank, rng)
    f = np.sqrt(scale / np.linalg.norm(K.T @ Q))
    c, beta = random_biases(d, rng, bias)
    model = FactoredAttention(K * f, Q * f, v, c=c, beta=beta)
    return model, lambda oracle: learn_skeleton(oracle, rank=rank, rng=rng, bias=bias), {
        "rank": rank, "probes": "random bases"}


part("perf", "floor", 1, FloorTarget("skeleton", ("gaussian",), floor_target))
part("perf", "time", 0, TimingRun("skeleton", {"small": {"d": 128, "rank": 8},
                                               "medium": {"d": 1024, "rank": 32},
                                               "full": {"d": 4096, "rank": 128}}))
part("bounds", "small", 1, Workload("skeleton", 256, "float64", {"rank": 8}, (0, 1)))
part("bounds", "small", 1.5, Workload("skeleton", 256, "float64", {"rank": 8, "answers": "faithful"}, (0, 1)))
part("bounds", "small", 2, Workload("skeleton-adaptive", 64, "float64", {"rank": 4}, (0,)))
part("bounds", "small", 2.5,
     Workload("skeleton-adaptive", 64, "float64", {"rank": 4, "answers": "faithful"}, (0,)))
part("bounds", "full", 1, Workload("skeleton", 4096, "float64", {"rank": 128}, (0, 1, 2, 3, 4)))
part("bounds", "full", 1.5, Workload("skeleton", 4096, "float64",
                                     {"rank": 128, "answers": "faithful", "exchanges": 4}, (0, 1, 2, 3, 4)))
part("bounds", "note", 1, "skeleton d = 4096 r = 128 seeds 0-4")


def skeleton_versus_adversary(
    d: int, arith: str | Arith, seed: int, rank: int, answers: str = RankOptions.answers,
    checks: int = SkeletonOptions.checks, exchanges: int = SkeletonOptions.exchanges,
    learner: str = "skeleton",
) -> dict[str, Any]:
    """A naive ``skeleton`` or ``skeleton-adaptive`` workload's target (:func:`run_lowrank`'s at this
    seed) learned by ``learner`` against :class:`~attnproof.oracles.RoundingAdversary` (every
    two-token answer off by the most the naive model of :func:`attnproof.measure.value_errors`
    allows, each pushing the recovered logit one way; its factored path costs O(d r) a query): the
    row of :func:`run_lowrank`'s keys the bench scores, with ``adversary``.  The bound is the
    learner's own a-posteriori bound of this run (the adaptive learner's: the skeleton's at the
    rank it found plus its stop check's charge).  ``checks`` and ``exchanges``: ``skeleton`` only.

    Raises
    ------
    InvalidInputError
        For a faithful or non-float64 workload: the adversary realizes the naive float64 model only;
        or a learner other than the two skeletons.
    """
    arith = parse(arith)
    if answers != "naive" or arith.family not in RoundingAdversary.arithmetics:
        raise InvalidInputError("the skeleton's adversary realizes the naive float64 model; "
                                f"got answers={answers!r}, arith={arith.name}")
    if learner not in SKELETONS:
        raise InvalidInputError(f"the skeleton's adversary runs {list(SKELETONS)}; got {learner!r}")
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, rank, rng)
    model = FactoredAttention(K, Q, v, arith)
    oracle = RoundingAdversary(model)
    t0 = time.perf_counter()
    if learner == "skeleton":
        rec = learn_skeleton(oracle, rank=rank, rng=rng, arith=arith, checks=checks, exchanges=exchanges)
    else:
        rec = learn_skeleton_adaptive(oracle, rng=rng, arith=arith)
    return result_row(learner, d, seed, rec, oracle, time.perf_counter() - t0, model.W, model.v,
                      rank=rank, adversary="RoundingAdversary")


#: the learners :func:`skeleton_versus_adversary` runs (their bounds read the naive model alike)
SKELETONS = ("skeleton", "skeleton-adaptive")


@part("bounds", "adversary", 1)
def _skeleton_adversary(learner: str, options: dict[str, Any]) -> Any:
    """``bench bounds``'s adversary of a naive float64 ``skeleton`` or ``skeleton-adaptive``
    workload (:func:`skeleton_versus_adversary` with that learner); None for any other."""
    naive = options.get("answers", RankOptions.answers) == "naive"
    return partial(skeleton_versus_adversary, learner=learner) if learner in SKELETONS and naive else None


# the row keys the engine's line for a result row shows (part ("rows", "shown"), by a global order)
part("rows", "shown", 0, "rank")
part("rows", "shown", 9, "probes")


@part("rows", "note", 2)
def _oracle_cost_note(row: dict[str, Any]) -> str | None:
    """The line of a low-rank row: the oracle's own cost per query against its flop count (6 d r,
    :func:`run_lowrank`) and the rate that makes, so a reader sees how close the whole run is to
    the machine (issue 21, item 4); and the learner's probe assembly done in a worker thread while
    the oracle answered (``overlapped_assembly``: the line's learner/oracle is wall clock, where
    that work counts in the oracle's time)."""
    seconds, flops = row.get("oracle_seconds_per_query"), row.get("oracle_flops_per_query")
    if seconds is None or flops is None or not seconds > 0:
        return None
    overlapped = row.get("diagnostics", {}).get("overlapped_assembly")
    hidden = "" if overlapped is None else f"; {overlapped:.2f} s of probe assembly overlapped the oracle"
    return (f"oracle {seconds * 1e6:.1f} us/query for 6 d r = {flops:.3g} flop "
            f"({flops / seconds / 1e9:.1f} Gflop/s){hidden}")
