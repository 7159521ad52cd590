"""Thm 6.1 on the bench: margin targets through an adversarial approximate oracle.

The room's registration with the engine (:mod:`attnproof.room`): the ``noisy`` learner's
options and runner (:func:`run_noisy`), the tolerance each design is proven to support
(:func:`theorem_tolerances`) and how far beyond it a design still holds
(:func:`tolerance_headroom`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...oracles import ADVERSARIES, ApproxOracle
from ...models import Attention
from ...room import Options, Workload, default_of, guarantee_missed, option, part, result_row, runner
from . import DESIGNS, PAPER, Tolerances, design_tolerances, learn_noisy, paper_tolerances


@dataclass(frozen=True)
class NoisyOptions(Options):
    """Options of the ``noisy`` learner on the bench (Thm 6.1)."""

    design: str = option(default_of(learn_noisy, "design").name, choices=tuple(DESIGNS),
                         help="the probe design")
    tau: float | None = option(None, low=0.0, open_low=True,
                               help="the oracle's tolerance (default: the design's proven one)")
    adversary: str = option("worst", choices=tuple(ADVERSARIES), help="how the oracle spends its tolerance")
    eps_W: float = option(0.1, low=0.0, high=1.0, open_low=True, open_high=True,
                          help="the accuracy asked for W, in (0, 1)")
    eps_v: float = option(0.1, low=0.0, high=1.0, open_low=True, open_high=True,
                          help="the accuracy asked for v, in (0, 1)")
    W_bound: float = option(2.0, low=0.0, open_low=True, help="the known bound W_bound >= 2 on ||W*||_F")


def margin_target(
    d: int, rng: np.random.Generator, W_bound: float = NoisyOptions.W_bound
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


@runner("noisy", NoisyOptions)
def run_noisy(
    d: int,
    design: str = NoisyOptions.design,
    tau: float | None = NoisyOptions.tau,
    adversary: str = NoisyOptions.adversary,
    eps_W: float = NoisyOptions.eps_W,
    eps_v: float = NoisyOptions.eps_v,
    W_bound: float = NoisyOptions.W_bound,
    seed: int = 0,
    target: tuple[np.ndarray, np.ndarray, float] | None = None,
) -> dict[str, Any]:
    """Recover a margin target through an adversarial ApproxOracle (Thm 6.1) and score it (the
    options' defaults are :class:`NoisyOptions`').

    ``tau`` defaults to the design's proven tolerance for (eps_W, eps_v).  The result has the
    keys of :func:`~attnproof.theorems.exact.runner.run_exact` plus ``eps_W, eps_v, tau,
    tau_theorem, guarantee_W, guarantee_v`` (float64: the learner's only arithmetic).
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
    W_bound = NoisyOptions.W_bound
    proven = [theorem_tolerances(design, eps, eps, W_bound, mu, d).tau for _, _, mu in targets]
    safe = 0.0
    for k in range(max_doublings):
        ok = all(
            r["guarantee_W"] and r["guarantee_v"]
            for s, target, tau in zip(seeds, targets, proven, strict=True)
            for a in ADVERSARIES
            for r in [run_noisy(d, design, tau * 2.0**k, a, eps, eps, seed=s, target=target)]
        )
        if not ok:
            break
        safe = 2.0**k
    mu = targets[0][2]
    paper = paper_tolerances(eps, eps, W_bound, mu, d).tau
    return {"design": design, "safe_multiplier": safe, "proven_over_paper": proven[0] / paper,
            "empirical_over_paper": safe * proven[0] / paper}


__all__ = ["NoisyOptions", "margin_target", "theorem_tolerances", "run_noisy", "tolerance_headroom"]


# --- the room's share of the engine's sweeps that span rooms (attnproof.room.part) ------------

part("bounds", "small", 3, Workload("noisy", 8, "float64", {}, (0, 1)))
# the row keys the engine's line for a result row shows (part ("rows", "shown"), by a global order)
for _order, _key in ((6, "design"), (7, "adversary"), (8, "tau")):
    part("rows", "shown", _order, _key)


@part("rows", "note", 0)
def _guarantee_note(row: dict[str, Any]) -> str | None:
    """The line of a ``noisy`` row: whether Thm 6.1's guarantee held for W and for v."""
    if row.get("learner") != "noisy":
        return None
    return (f"eps_W={row['eps_W']}: {'met' if row['guarantee_W'] else 'MISSED'}, "
            f"eps_v={row['eps_v']}: {'met' if row['guarantee_v'] else 'MISSED'}")


part("rows", "failed", 0, guarantee_missed)
