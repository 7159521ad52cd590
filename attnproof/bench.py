"""Measurements of the learners: query counts, errors, bits and time (CLI and book)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .arith import Arith, parse
from .models import Attention
from .oracles import ValueOracle
from .recovery import score
from .theorems.exact import learn_exact


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


def precision_sweep(
    d: int, digits: list[int], probes: str = "gaussian", seed: int = 0
) -> list[dict[str, Any]]:
    """:func:`run_exact` on one target at several mpmath precisions (plus float64 first).

    An exact algorithm shows an error that falls like 10^-dps; an approximate one would
    stall at a floor.
    """
    return [run_exact(d, arith, probes, seed) for arith in ["float64", *(f"mp:{p}" for p in digits)]]


__all__ = ["random_target", "run_exact", "precision_sweep"]
