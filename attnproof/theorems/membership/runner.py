"""Thm B.1 (App. B) on the bench: the two learners' options and runners, and their targets.

The room's registration with the engine (:mod:`attnproof.room`): ``membership`` and
``membership-rotated`` declare their options once (:class:`MembershipOptions`,
:class:`RotatedOptions`, whose defaults are the room's declared defaults in
:mod:`.parameters`), and their runners draw a target meeting the assumptions
(:func:`membership_target`), recover it through a counting :class:`~.oracle.MembershipOracle`
and score it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...arith import Arith, parse
from ...errors import InvalidInputError
from ...models import Attention
from ...room import Options, Workload, guarantee_missed, option, part, result_row, runner
from .learners import learn_membership, learn_membership_rotated
from .oracle import MembershipOracle
from .parameters import DELTA, DELTA_ROT, EPS_W, METHOD, METHODS, W_BOUND, default_mu, information_floor


def _check_margin(mu: float, d: int) -> None:
    """A unit v* with every ``|v*_i| >= mu`` exists only for ``mu <= 1/sqrt(d)``."""
    if not 0 < mu <= 1 / np.sqrt(d):
        raise InvalidInputError(f"mu must be in (0, 1/sqrt(d)] for a unit v with every |v_i| >= mu; got {mu}")


@dataclass(frozen=True)
class MembershipOptions(Options):
    """Options of the ``membership`` learner on the bench (Thm B.1)."""

    method: str = option(METHOD, choices=METHODS,
                         help="bisect (angle bisection, beyond the paper) or paper (App. B verbatim)")
    W_bound: float = option(W_BOUND, low=0.0, open_low=True, help="the known bound W_bound >= 2 on ||W*||_F")
    mu: float | None = option(None, low=0.0, open_low=True,
                              help="the margin min |v*_i| >= mu (default 1/(2 sqrt d))")
    eps_W: float = option(EPS_W, low=0.0, high=1.0, open_low=True, open_high=True,
                          help="the accuracy asked for W, in (0, 1)")
    delta: float = option(DELTA, low=0.0, high=1.0, open_low=True, open_high=True,
                          help="the failure probability of paper's sampling, in (0, 1)")
    samples: int | None = option(None, low=1,
                                 help="paper: the sample budget (the verbatim count is astronomical)")

    def check(self, d: int) -> None:
        """The margin must fit the width: ``mu <= 1/sqrt(d)``."""
        super().check(d)
        if self.mu is not None:
            _check_margin(self.mu, d)


@dataclass(frozen=True)
class RotatedOptions(Options):
    """Options of the ``membership-rotated`` learner on the bench (Thm B.1 without the margin)."""

    W_bound: float = option(W_BOUND, low=0.0, open_low=True, help="the known bound W_bound >= 2 on ||W*||_F")
    eps_W: float = option(EPS_W, low=0.0, high=1.0, open_low=True, open_high=True,
                          help="the accuracy asked for W, in (0, 1)")
    delta_rot: float = option(DELTA_ROT, low=0.0, high=1.0, open_low=True, open_high=True,
                              help="the probability that the rotation misses the margin, in (0, 1)")


def membership_target(
    d: int, rng: np.random.Generator, W_bound: float, mu: float
) -> tuple[np.ndarray, np.ndarray]:
    """A target meeting Thm B.1's assumptions: ||W*||_F = 0.9 W and a unit v* with every |v*_i| >= mu
    (|v*_i|^2 = mu^2 + a random share of the spare mass 1 - d mu^2, random signs)."""
    _check_margin(mu, d)
    W = rng.standard_normal((d, d))
    shares = rng.dirichlet(np.ones(d))
    v = rng.choice([-1.0, 1.0], d) * np.sqrt(mu**2 + shares * (1 - d * mu**2))
    return W * 0.9 * W_bound / np.linalg.norm(W), v / np.linalg.norm(v)


@runner("membership", MembershipOptions)
def run_membership(
    d: int,
    method: str = METHOD,
    arith: str | Arith = "float64",
    seed: int = 0,
    W_bound: float = W_BOUND,
    mu: float | None = None,
    eps_W: float = EPS_W,
    delta: float = DELTA,
    samples: int | None = None,
) -> dict[str, Any]:
    """Recover a Thm B.1 target through a counting MembershipOracle and score it.

    ``mu`` defaults to :func:`~.parameters.default_mu`, ``1 / (2 sqrt(d))``; ``samples`` is
    ``paper``'s sample budget (:func:`~.learners.learn_membership`).  :func:`result_row`'s keys
    (``err_v`` against the unit v*: only the direction is identifiable from signs), plus
    ``method, floor_queries, err_v_inf, eps_W, eps_v, W_bound, mu, delta, guarantee_met``.
    """
    arith = parse(arith)
    mu = default_mu(d) if mu is None else mu
    rng = np.random.default_rng(seed)
    W, v = membership_target(d, rng, W_bound, mu)
    model = Attention(W, v, arith)
    oracle = MembershipOracle(model)
    t0 = time.perf_counter()
    rec = learn_membership(oracle, W_bound=W_bound, mu=mu, eps_W=eps_W, delta=delta, method=method,
                           samples=samples, rng=rng, arith=arith)
    seconds = time.perf_counter() - t0
    with arith.context():  # the float64 v* is unit only to rounding: score against its exact direction
        unit = model.v / arith.sqrt(model.v @ model.v)
        err_inf = max(abs(x - y) for x, y in zip(rec.v, unit, strict=True))
    row = result_row("membership", d, seed, rec, oracle, seconds, model.W, unit, method=method,
                     floor_queries=information_floor(d, W_bound, eps_W))
    diag = rec.diagnostics
    row.update(
        err_v_inf=float(err_inf), eps_W=eps_W, eps_v=diag["eps_v"], W_bound=W_bound, mu=mu, delta=delta,
        guarantee_met=row["err_W"] <= eps_W and float(err_inf) <= diag["eps_v"] and diag["guarantee_met"],
    )
    return row


@runner("membership-rotated", RotatedOptions)
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


part("bounds", "small", 7, Workload("membership", 3, "float64", {"eps_W": 1e-2}, (0,)))
part("bounds", "small", 8, Workload("membership-rotated", 3, "mp:40", {"eps_W": 1e-2}, (0,)))


__all__ = [
    "MembershipOptions", "RotatedOptions", "membership_target", "run_membership",
    "run_membership_rotated",
]

# the row keys the engine's line for a result row shows (part ("rows", "shown"), by a global order)
part("rows", "shown", 5, "method")


@part("rows", "note", 1)
def _guarantee_note(row: dict[str, Any]) -> str | None:
    """The line of a ``membership`` or ``membership-rotated`` row: whether Thm B.1's guarantee held."""
    if row.get("learner") not in ("membership", "membership-rotated"):
        return None
    return f"eps_W={row['eps_W']}: guarantee {'met' if row['guarantee_met'] else 'MISSED'}"


part("rows", "failed", 0, guarantee_missed)
