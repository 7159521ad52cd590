"""Thm 4.1 on the bench: a random target, recovered through a counting oracle and scored.

The room's registration with the engine (:mod:`attnproof.room`): the ``exact`` learner's
options and its runner :func:`run_exact`, plus the sweeps the chapter shows
(:func:`precision_sweep`, :func:`supported_range`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...arith import Arith, parse
from ...errors import AttnproofError
from ...models import ANSWERS, Attention
from ...oracles import ValueOracle
from ...verify.registry import LEARNERS
from ...room import (
    FloorTarget, Job, Options, TimingRun, Workload, default_of,
    job_key, option, part, random_biases, result_row, runner, sweep,
)
from . import PROBE_FAMILIES, learn_exact


@dataclass(frozen=True)
class ExactOptions(Options):
    """Options of the ``exact`` learner on the bench (Thm 4.1)."""

    probes: str = option(
        default_of(learn_exact, "probes"), choices=PROBE_FAMILIES,
        help="the probe rows: random orthogonal, i.i.d. Gaussian or the paper's basis probes",
    )
    scale: float | None = option(None, low=0.0, open_low=True, help="std of W's entries (default 1/sqrt(d))")
    answers: str = option(
        default_of(Attention, "answers"), choices=tuple(ANSWERS),
        help="how the oracle evaluates and rounds its answers: in float64 in any order (naive), or in "
        "extended precision rounded once (faithful: declared, so the bound is ~100x tighter)",
    )


def random_target(
    d: int, rng: np.random.Generator, scale: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A generic target: W with i.i.d. N(0, scale^2) entries (default scale 1/sqrt(d)), v ~ N(0, I).

    Returned in float64; any arithmetic converts it exactly (binary floats are exact
    rationals), so the same target serves every backend.
    """
    scale = 1 / np.sqrt(d) if scale is None else scale
    return rng.standard_normal((d, d)) * scale, rng.standard_normal(d)


@runner("exact", ExactOptions)
def run_exact(
    d: int,
    arith: str | Arith = "float64",
    probes: str = ExactOptions.probes,
    seed: int = 0,
    scale: float | None = ExactOptions.scale,
    answers: str = ExactOptions.answers,
) -> dict[str, Any]:
    """Draw a random target, recover it with Thm 4.1 through a counting oracle, and score it.

    ``answers``: the model's evaluation (:class:`~attnproof.models.Rounding`), which the oracle
    declares and the learner's bound reads.

    Returns
    -------
    dict
        :func:`~attnproof.room.result_row`'s keys, plus ``probes`` and ``expected_queries`` (d + d^2).
    """
    arith = parse(arith)
    rng = np.random.default_rng(seed)
    W, v = random_target(d, rng, scale)
    model = Attention(W, v, arith, answers=answers)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    rec = learn_exact(oracle, probes=probes, rng=rng, arith=arith)
    seconds = time.perf_counter() - t0
    return result_row("exact", d, seed, rec, oracle, seconds, model.W, model.v, probes=probes,
                      expected_queries=d + d * d)


@dataclass(frozen=True)
class ExactSweepOptions(Options):
    """Options of ``attnproof bench exact``."""

    d: tuple[int, ...] = option((64, 256, 1024), low=1, help="widths, comma-separated")
    arith: str = option("float64", check=parse, help="float64, mp:DIGITS or sympy")
    probes: str = option(default_of(learn_exact, "probes"), choices=PROBE_FAMILIES,
                         help="the probes: random orthogonal, i.i.d. Gaussian or the paper's basis probes")
    seed: int = option(0, low=0, help="seed of the targets and the learner's draws")


@sweep("exact", ExactSweepOptions, help="Thm 4.1's learner at several widths: queries, errors, bits, time")
def exact_jobs(
    d: tuple[int, ...], arith: str = ExactSweepOptions.arith, probes: str = ExactSweepOptions.probes,
    seed: int = ExactSweepOptions.seed,
) -> list[Job]:
    """One :func:`run_exact` job per width in ``d`` (``bench exact``)."""
    return [
        Job(job_key("exact", d=n, arith=arith, probes=probes, seed=seed), run_exact,
            {"d": n, "arith": arith, "probes": probes, "seed": seed}, LEARNERS["exact"].count(d=n))
        for n in d
    ]


def precision_sweep(
    d: int, digits: list[int], probes: str = "gaussian", seed: int = 0
) -> list[dict[str, Any]]:
    """:func:`run_exact` on one target at several mpmath precisions (plus float64 first).

    An exact algorithm shows an error that falls like 10^-dps; an approximate one would
    stall at a floor.
    """
    return [run_exact(d, arith, probes, seed) for arith in ["float64", *(f"mp:{p}" for p in digits)]]


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


__all__ = [
    "ExactOptions", "random_target", "run_exact", "ExactSweepOptions", "exact_jobs", "precision_sweep",
    "supported_range",
]


# --- the room's share of the engine's sweeps that span rooms (attnproof.room.part) ------------


def floor_target(
    d: int, rank: int, scale: float, bias: bool, probes: str, rng: np.random.Generator
) -> tuple[Attention, Any, dict[str, Any]]:
    """``bench perf``'s query-count target of Thm 4.1 (a :class:`~attnproof.room.FloorTarget`):
    :func:`random_target` scaled to ``||W*||_F = scale``, with biases when ``bias``, learned by
    :func:`~attnproof.theorems.exact.learn_exact` with ``probes`` (``rank`` unused: the learner
    reads all of W*, the row shows rank d)."""
    W, v = random_target(d, rng)
    c, beta = random_biases(d, rng, bias)
    model = Attention(W * (scale / np.linalg.norm(W)), v, c=c, beta=beta)
    return model, lambda oracle: learn_exact(oracle, probes=probes, rng=rng, bias=bias), {
        "rank": d, "probes": probes}


part("perf", "floor", 0, FloorTarget("exact", ("orthogonal", "gaussian", "basis"), floor_target))
part("perf", "time", 1, TimingRun("exact", {"small": {"d": 64}, "medium": {"d": 256}, "full": {"d": 1024}},
                                  bits=True))
part("bounds", "small", 0, Workload("exact", 64, "float64", {}, (0, 1)))
part("bounds", "small", 0.5, Workload("exact", 64, "float64", {"answers": "faithful"}, (0, 1)))
part("bounds", "full", 0, Workload("exact", 1024, "float64", {}, (0,)))
part("bounds", "full", 0.5, Workload("exact", 1024, "float64", {"answers": "faithful"}, (0,)))
part("bounds", "note", 0, "exact d = 1024")
# the row keys the engine's line for a result row shows (part ("rows", "shown"), by a global order)
part("rows", "shown", 9, "probes")
