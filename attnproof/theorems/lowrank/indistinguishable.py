"""The best bound any method could report from Thm 5.1's transcript: a proven floor (issue 22).

The argument of :mod:`attnproof.theorems.exact.indistinguishable`, for the skeleton learner
(:func:`~attnproof.theorems.lowrank.learn_skeleton`): if every answer the real oracle gave for
``W* = K^T Q`` is also an answer the naive declaration (:class:`~attnproof.models.Rounding`, the
componentwise form) allows for two targets ``W_+- = K_+-^T Q_+-`` of rank <= r with the same v, the
transcript, ``W_hat`` and the bound B are the same in the three worlds, so a bound rigorous for the
declaration and the declared rank satisfies ``B >= ||W_+ - W_-||_F / 2 =: floor``.

The worlds stay of rank r by construction: ``K_+- = K +- t E`` and ``Q_+- = Q +- t F``, so
``W_+ - W_- = 2 t (E^T Q + K^T F)`` exactly (the second-order ``t^2 E^T F`` is in both and cancels),
a move in the tangent space of the rank-r matrices at W*.  Its dimension ``r (2d - r)`` is the
number of entries ``p_k^T W q_l`` the cross measures, so (E, F) can be solved for (least squares)
to move every measured logit by a chosen share :data:`SAFETY` of its first-order slack, with
signs chosen (:func:`_signs`) to make ``||E^T Q + K^T F||_F`` large; t is then shrunk until every
answer is proven allowed in both worlds.

The proof, :func:`factored_margins`: the skeleton's probes ``[x_1; x_2]`` have a dense last token
(``s q_l``), so the logit ``x_1^T W x_2 - x_2^T W x_2`` is enclosed through the factors:
``K x_i`` and ``Q x_2`` as :func:`~attnproof.indistinguishable.dot2` balls (double
words with a proven radius), then their inner products by ``dot2`` again, the radii carried
through; the declaration's componentwise slack ``g (|x_1|^T |q| + |x_2|^T |q| + |p|^T |W| |x_2|)``
(``q = W x_2``, ``p = x_1 - x_2``, ``g = (d + 4) 2^-53``) is bounded below from the same balls,
and the answers' distance inside the declared set is taken in Arb by the shared
:func:`~attnproof.indistinguishable.two_token_margins`; one-token answers (the reads of v) by
:func:`~attnproof.indistinguishable.one_token_margins`.

The declaration speaks of the dense evaluation (the query vector ``W x_N``, its entries dot
products of length d); a factored head forms ``K x_i`` and ``Q x_N`` instead: that the real
oracle's answers are inside it at W* is checked too (:func:`indistinguishable` refuses otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidInputError, PrecisionLossError, ShapeError
from ...indistinguishable import NORM_DOWN, SAFETY, SHRINK, U, dot2, in_range, transcript, transcript_margins
from ...models import FactoredAttention
from ...oracles import QueryRecord, ValueOracle
from . import learn_skeleton
from .runner import low_rank_target

#: Radii computed in float64 (sums and products of a few nonnegative terms) times this: covers their
#: roundings many times over.
RADIUS_UP = 1 + 2.0**-40
#: Sign-pattern refinements of :func:`_signs`.
SIGN_ROUNDS = 20


def _product_balls(x: np.ndarray, F: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``F x_b`` for each row x_b of x (B, d) and F (r, d): balls ``hi + lo +- rad``, each (B, r)."""
    B, r = x.shape[0], F.shape[0]
    xs = np.repeat(x, r, axis=0)
    Fs = np.tile(F, (B, 1))
    s, c, rad = dot2(xs, Fs)
    return s.reshape(B, r), c.reshape(B, r), rad.reshape(B, r) * RADIUS_UP


def _inner(a: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]],
           b: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise ``sum_i sign_i a_i^T b`` of balls (B, r) as one ball: the double words' products
    by ``dot2`` (exact up to its radius), plus ``|a| rb + ra |b| + ra rb`` for the radii."""
    bh, bl, rb = b
    left, right, rad = [], [], np.zeros(bh.shape[0])
    b_abs = np.abs(bh) + np.abs(bl)
    for ah, al, ra, sign in a:
        left += [sign * ah, sign * ah, sign * al, sign * al]
        right += [bh, bl, bh, bl]
        a_abs = np.abs(ah) + np.abs(al)
        rad = rad + np.einsum("bi,bi->b", a_abs, rb) + np.einsum("bi,bi->b", ra, b_abs + rb)
    s, c, r = dot2(np.hstack(left), np.hstack(right))
    return s, c, (r + rad * (1 + 2.0**-30)) * RADIUS_UP


def _factored_balls(X: np.ndarray, K: np.ndarray, Q: np.ndarray, v: np.ndarray) -> dict[str, Any]:
    """For two-token queries X (B, 2, d) at ``(K^T Q, v)``: balls of the logit L, of ``p^T v`` and of
    ``x_2^T v``, and lower bounds of the componentwise declaration's logit slack ``most`` and label
    slack ``label`` (the keys :func:`~attnproof.indistinguishable.two_token_margins` reads)."""
    x1, x2 = X[:, 0], X[:, 1]
    k1, k2, q2 = _product_balls(x1, K), _product_balls(x2, K), _product_balls(x2, Q)
    L = _inner([(*k1, 1.0), (*k2, -1.0)], q2)
    pv = dot2(np.hstack([x1, -x2]), np.hstack([np.broadcast_to(v, x1.shape)] * 2))
    a2 = dot2(x2, np.broadcast_to(v, x2.shape))
    d = v.shape[0]
    g = (d + 4) * U
    # q = K^T (Q x_2) and W = K^T Q, entrywise balls; their magnitudes' lower bounds
    KT = np.ascontiguousarray(K.T)
    q_parts = [_inner([(np.broadcast_to(KT[i], q2[0].shape), np.zeros(q2[0].shape), np.zeros(q2[0].shape),
                        1.0)], q2) for i in range(d)]
    q_low = np.stack([np.maximum(np.abs(s) - np.abs(c) - r, 0.0) for s, c, r in q_parts], axis=1)
    Ws, Wc, Wr = dot2(np.repeat(KT, d, axis=0), np.tile(Q.T, (d, 1)))
    W_low = np.maximum(np.abs(Ws) - np.abs(Wc) - Wr * RADIUS_UP, 0.0).reshape(d, d)
    scores = np.einsum("bi,bi->b", np.abs(x1) + np.abs(x2), q_low)
    query = np.einsum("bi,ij,bj->b", np.abs(x1 - x2), W_low, np.abs(x2)) * (1 - 2 * U)
    most = g * (scores + query) * NORM_DOWN**3 * (1 - 2.0**-40)
    label = g * ((np.abs(x1) + np.abs(x2)) @ np.abs(v)) * NORM_DOWN**2
    return {"L": L, "pv": pv, "a2": a2, "most": most, "label": label, "p": x1 - x2}


def factored_margins(log: Sequence[QueryRecord], K: np.ndarray, Q: np.ndarray,
                     v: np.ndarray) -> dict[int, np.ndarray]:
    """Rigorous lower bounds on how far inside the naive (componentwise) declaration at
    ``(K^T Q, v)`` each recorded answer lies: the skeleton's queries, one token (v's reads) or two
    with any last token.

    Parameters
    ----------
    log : sequence of QueryRecord
        A :class:`~attnproof.oracles.ValueOracle`'s ``log`` (``record=True``).
    K, Q : arrays (r, d)
        The factors of the target ``W = K^T Q`` (float64): rank <= r by construction.
    v : array (d,)

    Returns
    -------
    dict
        ``{N: margins (B,)}``, as :func:`~attnproof.theorems.exact.indistinguishable.naive_margins`
        (a margin >= 0 proves the answer allowed).
    """
    K, Q, v = (np.asarray(a, dtype=np.float64) for a in (K, Q, v))
    d = v.shape[0]
    if K.ndim != 2 or K.shape != Q.shape or K.shape[1] != d:
        raise ShapeError(f"K and Q must both have shape (r, {d}); got {K.shape}, {Q.shape}")
    if not all(in_range(a) for a in (K, Q, v, *(np.asarray(r.X, dtype=np.float64) for r in log))):
        raise InvalidInputError("entries outside the range the balls assume (no overflow or underflow)")
    return transcript_margins(log, v, lambda X: _factored_balls(X, K, Q, v), "Thm 5.1")


def _all_proven(margins: dict[int, np.ndarray]) -> bool:
    return all(bool(np.all(m >= 0)) for m in margins.values())


@dataclass(frozen=True)
class SkeletonFloor:
    """Two rank-r targets indistinguishable from ``K^T Q`` under the skeleton's transcript.

    Attributes
    ----------
    worlds : tuple of ((K_+, Q_+), (K_-, Q_-))
        Their factors (float64, as checked).
    floor : float
        A proven lower bound on ``||K_+^T Q_+ - K_-^T Q_-||_F / 2``.
    shrinks : int
        Shrinkings by :data:`SHRINK` the check asked for.
    answers : int
        Answers proven allowed at W* and in both worlds.
    """

    worlds: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    floor: float
    shrinks: int
    answers: int


def _tangent_map(X: np.ndarray, K: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """The logit moves ``p^T (E^T Q + K^T F) x_2`` of each query (rows) per coordinate of (E, F)."""
    p, x2 = X[:, 0] - X[:, 1], X[:, 1]
    dE = np.einsum("bi,ab->bai", p, Q @ x2.T)  # d/dE_ai: p_i (Q x_2)_a
    dF = np.einsum("ab,bj->baj", K @ p.T, x2)  # d/dF_aj: (K p)_a x2_j
    return np.hstack([dE.reshape(len(p), -1), dF.reshape(len(p), -1)])


def _signs(G: np.ndarray) -> np.ndarray:
    """Signs sigma making ``||G sigma||`` large (G's top singular vector's signs, then the
    hypercube power iteration ``sigma <- sign(G^T G sigma)``)."""
    sigma = np.sign(np.linalg.svd(G, full_matrices=False)[2][0])
    sigma[sigma == 0] = 1.0
    for _ in range(SIGN_ROUNDS):
        new = np.sign(G.T @ (G @ sigma))
        new[new == 0] = 1.0
        if np.array_equal(new, sigma):
            break
        sigma = new
    return sigma


def _direction(b: dict[str, Any], y: np.ndarray, X: np.ndarray, K: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """(E, F) stacked (2r, d), first order: each query's logit moved by ``SAFETY`` of its slack r_q
    (as the exact module's ``_slack_direction``), with the signs of :func:`_signs`."""
    L, pv, a2 = (part[0] + part[1] for part in (b["L"], b["pv"], b["a2"]))
    sig = 1 / (1 + np.exp(-L))
    slope = sig * (1 - sig) * np.abs(pv)
    slack = np.maximum(slope * b["most"] + b["label"] - np.abs(y - (a2 + sig * pv)), 0.0) / slope
    A = _tangent_map(X, K, Q)
    pinv = np.linalg.pinv(A)  # least-norm (E, F) per unit logit move
    r, d = K.shape
    E, F = pinv[:r * d].reshape(r, d, -1), pinv[r * d:].reshape(r, d, -1)
    W_of = (np.einsum("aik,aj->ijk", E, Q) + np.einsum("ai,ajk->ijk", K, F)).reshape(d * d, -1)
    sigma = _signs(W_of * slack)
    x = pinv @ (sigma * slack)
    used = np.max(np.abs(A @ x) / slack) if np.all(slack > 0) else np.inf
    return (SAFETY * x / used if np.isfinite(used) and used > 0 else 0 * x).reshape(2 * r, d)


def indistinguishable(log: Sequence[QueryRecord], K: np.ndarray, Q: np.ndarray, v: np.ndarray,
                      max_shrinks: int = 40) -> SkeletonFloor:
    """Rank-r targets ``(K +- t E)^T (Q +- t F)`` that every recorded answer fits under the naive
    declaration, proven by :func:`factored_margins`.

    Parameters
    ----------
    log : sequence of QueryRecord
        The real oracle's record of a :func:`~attnproof.theorems.lowrank.learn_skeleton` run
        (float64, naive answers, no biases).
    K, Q, v : arrays
        The real target's factors and v.
    max_shrinks : int

    Raises
    ------
    PrecisionLossError
        If an answer is not proven allowed at ``(K^T Q, v)`` itself, or no t is proven after
        ``max_shrinks`` shrinkings.
    """
    K, Q, v = (np.asarray(a, dtype=np.float64) for a in (K, Q, v))
    truth = factored_margins(log, K, Q, v)
    if not _all_proven(truth):
        raise PrecisionLossError("an answer of the real oracle is not proven within its own naive "
                                 "declaration")
    X, y = transcript(log, v.shape[0])[2]
    EF = _direction(_factored_balls(X, K, Q, v), y, X, K, Q)
    r = K.shape[0]
    t, shrinks = 1.0, 0
    while True:
        worlds = ((K + t * EF[:r], Q + t * EF[r:]), (K - t * EF[:r], Q - t * EF[r:]))
        if all(_all_proven(factored_margins(log, *w, v)) for w in worlds):
            break
        if shrinks >= max_shrinks:
            raise PrecisionLossError(f"no indistinguishable targets proven after {shrinks} shrinkings")
        t *= SHRINK
        shrinks += 1
    return SkeletonFloor(worlds, _half_distance(*worlds), shrinks, sum(m.size for m in truth.values()))


def _half_distance(plus: tuple[np.ndarray, np.ndarray], minus: tuple[np.ndarray, np.ndarray]) -> float:
    """A proven lower bound on ``||K_+^T Q_+ - K_-^T Q_-||_F / 2`` (entries as ``dot2`` balls)."""
    (Kp, Qp), (Km, Qm) = plus, minus
    d = Kp.shape[1]
    left = np.hstack([np.repeat(Kp.T, d, axis=0), -np.repeat(Km.T, d, axis=0)])
    right = np.hstack([np.tile(Qp.T, (d, 1)), np.tile(Qm.T, (d, 1))])
    s, c, rad = dot2(left, right)
    low = np.maximum(np.abs(s) - np.abs(c) - rad * RADIUS_UP, 0.0) * (1 - 2.0**-40)
    return float(np.linalg.norm(low) * NORM_DOWN / 2)


def distance(W: np.ndarray, K: np.ndarray, Q: np.ndarray) -> float:
    """``||W - K^T Q||_F`` (float64, an estimate: for the report's ratios, not a proof)."""
    return float(np.linalg.norm(W - K.T @ Q))


def floor_row(d: int, rank: int, seed: int = 0) -> dict[str, Any]:
    """One bench run of Thm 5.1 (:func:`~attnproof.theorems.lowrank.runner.run_lowrank`'s target and
    draws: float64, naive answers, the learner's defaults) against a recording real oracle, and its
    floor: ``d, rank, seed``, the true error ``err_W``, the bound ``error_bound``, ``floor``,
    ``floor_over_error``, ``bound_over_floor``, ``alt_error_over_bound`` (the larger
    ``||W_hat - W_+-||_F / error_bound``: above 1, a world the declaration allows in which the bound
    fails), ``shrinks`` and ``answers``."""
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, rank, rng)
    oracle = ValueOracle(FactoredAttention(K, Q, v), record=True)
    rec = learn_skeleton(oracle, rank=rank, rng=rng)
    found = indistinguishable(oracle.log, K, Q, v)
    err, bound = distance(rec.W, K, Q), float(rec.error_bound)
    return {"d": d, "rank": rank, "seed": seed, "err_W": err, "error_bound": bound, "floor": found.floor,
            "floor_over_error": found.floor / err, "bound_over_floor": bound / found.floor,
            "alt_error_over_bound": max(distance(rec.W, *w) for w in found.worlds) / bound,
            "shrinks": found.shrinks, "answers": found.answers}


__all__ = ["SkeletonFloor", "factored_margins", "floor_row", "indistinguishable"]
