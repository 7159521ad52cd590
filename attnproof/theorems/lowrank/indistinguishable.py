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

The matrix-free path (:func:`indistinguishable_cross`, large d; :func:`floor_row` above
:data:`DENSE_MAX_D`): :class:`CrossRecorder` keeps each probe as its pair and scale ``(k, l, e)``,
checked bit for bit (:class:`CrossTranscript`); :func:`cross_margins` encloses each answer from
exact-product balls on BLAS (:func:`_product_ball`) and one float64 pass over its d entries
(:func:`_world`); the move comes from the skeleton's own linearisation (:class:`_Cross`), the same
worlds and floor as the dense path where both run.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import ctx
from scipy.linalg import solve_sylvester
from scipy.sparse.linalg import LinearOperator, svds

from ...arith import FLOAT64
from ...errors import InvalidInputError, PrecisionLossError, ShapeError
from ...indistinguishable import (
    MAX_D, NORM_DOWN, PREC, SAFETY, SHRINK, U, dot2, in_range, lower, one_token_margins, transcript,
    transcript_margins, two_sum, two_token_margins,
)
from ...models import FactoredAttention
from ...oracles import QueryRecord, ValueOracle
from . import PRODUCT_SLICES, _slices, learn_skeleton, random_bases
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


def _signs(start: np.ndarray, gram: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Signs sigma making ``||G sigma||`` large: those of ``start`` (G's top right singular vector),
    then the hypercube power iteration ``sigma <- sign(G^T G sigma)`` (``gram`` applies ``G^T G``)."""
    sigma = np.sign(start)
    sigma[sigma == 0] = 1.0
    for _ in range(SIGN_ROUNDS):
        new = np.sign(gram(sigma))
        new[new == 0] = 1.0
        if np.array_equal(new, sigma):
            break
        sigma = new
    return sigma


def _slack(b: dict[str, Any], y: np.ndarray) -> np.ndarray:
    """Each two-token answer's first-order slack in logit units, from the balls' centres: how far
    its logit may move before y leaves the declared interval (0 where it is already at its edge)."""
    L, pv, a2 = (part[0] + part[1] for part in (b["L"], b["pv"], b["a2"]))
    sig = 1 / (1 + np.exp(-L))
    slope = sig * (1 - sig) * np.abs(pv)
    return np.maximum(slope * b["most"] + b["label"] - np.abs(y - (a2 + sig * pv)), 0.0) / slope


def _direction(b: dict[str, Any], y: np.ndarray, X: np.ndarray, K: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """(E, F) stacked (2r, d), first order: each query's logit moved by ``SAFETY`` of its slack r_q
    (as the exact module's ``_slack_direction``), with the signs of :func:`_signs`."""
    slack = _slack(b, y)
    A = _tangent_map(X, K, Q)
    pinv = np.linalg.pinv(A)  # least-norm (E, F) per unit logit move
    r, d = K.shape
    E, F = pinv[:r * d].reshape(r, d, -1), pinv[r * d:].reshape(r, d, -1)
    W_of = (np.einsum("aik,aj->ijk", E, Q) + np.einsum("ai,ajk->ijk", K, F)).reshape(d * d, -1)
    G = W_of * slack
    sigma = _signs(np.linalg.svd(G, full_matrices=False)[2][0], lambda x: G.T @ (G @ x))
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
    """A proven lower bound on ``||K_+^T Q_+ - K_-^T Q_-||_F / 2``: the difference is the product
    ``[K_+; -K_-]^T [Q_+; Q_-]`` (inner dimension 2r), its entries :func:`_product_ball` balls, each
    at least ``|hi| - (|lo| + rad)(1 + 4u)`` in size (one rounding above its value, within u of it);
    the float64 norm of these within :data:`~attnproof.indistinguishable.NORM_DOWN`."""
    (Kp, Qp), (Km, Qm) = plus, minus
    hi, lo, rad = _product_ball(np.ascontiguousarray(np.vstack([Kp, -Km]).T), np.vstack([Qp, Qm]))
    low = np.maximum(np.abs(hi) - (np.abs(lo) + rad) * (1 + 4 * U), 0.0)
    return float(np.linalg.norm(low) * NORM_DOWN**2 / 2)


def distance(W: np.ndarray, K: np.ndarray, Q: np.ndarray) -> float:
    """``||W - K^T Q||_F`` (float64, an estimate: for the report's ratios, not a proof)."""
    return float(np.linalg.norm(W - K.T @ Q))


# --- the matrix-free path: the skeleton's cross read in its own coordinates (d up to MAX_D) -------


def _product_ball(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``A B`` (float64, A m x n, B n x p, entries within :data:`SAFE_RANGE` or 0) as balls
    ``hi + lo +- rad`` entrywise, from exact float64 products on BLAS.

    Ozaki, Ogita, Oishi and Rump's error-free splitting (the slices of
    :func:`~attnproof.theorems.lowrank._slices`, for sums of ``S n`` terms): A's rows and B's columns
    are scaled by exact powers of two to largest entries in [1/2, 1), ``A = sum_s A_s + A_r``,
    ``B = sum_t B_t + B_r``, and each level ``P_k = sum_{s + t = k} A_s B_t`` is one exact product
    (inner dimension at most S n).  ``A B = sum_k P_k + Â B_r + A_r B`` with ``Â = A - A_r``,
    ``|Â| <= 2 |A|``.  The levels are summed by TwoSum: ``sum_k P_k = hi + sum_k e_k`` exactly, and
    ``lo = fl(sum_k e_k)`` is within ``gamma_{2S}(u) sum_k |e_k|`` of it (Higham (4.4); the float64
    ``sum_k |e_k|`` within gamma_{2S} of its value: the factor 2 covers it); the remainder
    ``2 |A| |B_r| + |A_r| |B|``, a nonnegative float64 BLAS product of inner dimension 2n, is at most
    ``1 / (1 - gamma_{2n}(u)) <= 1 + 16 n u`` of the computed (a product that underflows in it
    adds at most 2^-1075: ``n 2^-1070`` covers them).  Scaled back by
    ``2^(a + b)``, exact for hi and lo (nonzero ones at least 2^-520 in size), rounded up for the
    radius where it is subnormal; the radius's own float64 sum and products take ``1 + 16 u``.  So
    the radius is ``2^-56`` of the rows' and columns' largest entries' products, or less.

    Raises
    ------
    InvalidInputError
        For an entry outside the safe range (the exactness above would not hold).
    """
    if not (in_range(A) and in_range(B)):
        raise InvalidInputError("a product's entries lie outside the range its balls assume")
    n = A.shape[1]
    a = np.frexp(np.max(np.abs(A), axis=1, keepdims=True, initial=0.0))[1]
    b = np.frexp(np.max(np.abs(B), axis=0, keepdims=True, initial=0.0))[1]
    As_, Ar = _slices(np.ldexp(A, -a), PRODUCT_SLICES * n)
    Bs_, Br = _slices(np.ldexp(B, -b), PRODUCT_SLICES * n)
    pairs = [[(s, k - s) for s in range(k + 1) if s < PRODUCT_SLICES and k - s < PRODUCT_SLICES]
             for k in range(2 * PRODUCT_SLICES - 1)]
    levels = [np.hstack([As_[s] for s, _ in level]) @ np.vstack([Bs_[t] for _, t in level])
              for level in pairs]
    hi, lo, mass = levels[0], np.zeros_like(levels[0]), np.zeros_like(levels[0])
    for P in levels[1:]:
        hi, e = two_sum(hi, P)
        lo += e
        mass += np.abs(e)
    gamma = 2 * PRODUCT_SLICES * U / (1 - 2 * PRODUCT_SLICES * U)
    rest = np.hstack([np.abs(np.ldexp(A, -a)), np.abs(Ar)]) @ np.vstack([2 * np.abs(Br),
                                                                          np.abs(np.ldexp(B, -b))])
    rad = (rest * (1 + 16 * n * U) + 2 * gamma * mass + n * 2.0**-1070) * (1 + 16 * U)
    up = np.ldexp(rad, a + b)
    return np.ldexp(hi, a + b), np.ldexp(lo, a + b), np.where(up < 2.0**-1022, np.nextafter(up, np.inf), up)


@dataclass(frozen=True)
class CrossTranscript:
    """A skeleton run's transcript in its probes' coordinates: what the matrix-free floor reads.

    Thm 5.1's learner (:func:`~attnproof.theorems.lowrank.learn_skeleton`, float64, no biases) asks
    the one-token reads of v, then probes ``2^e [(p_k + q_l)^T; q_l^T]`` (first token rounded) for
    the entries ``M_kl = p_k^T W q_l`` of its cross, p_k and q_l the rows of its random bases P and
    Q (:func:`~attnproof.theorems.lowrank.random_bases`).  Each two-token answer is kept as
    ``(k, l, e, y)``: the query it names was checked equal, bit for bit, to the one asked
    (:func:`_name_queries`), so a proof about the named query is one about the recorded answer.

    Attributes
    ----------
    P, Q : arrays (d, d)
        The learner's bases (rows p_k, q_l).
    k, l, e : int arrays (n,)
        Each two-token query's probe pair and scale exponent.
    y : array (n,)
        Their answers.
    one : tuple (X (m, 1, d), y (m,))
        The one-token queries and answers.
    """

    P: np.ndarray
    Q: np.ndarray
    k: np.ndarray
    l: np.ndarray
    e: np.ndarray
    y: np.ndarray
    one: tuple[np.ndarray, np.ndarray]

    @property
    def answers(self) -> int:
        return len(self.y) + len(self.one[1])


def _name_queries(X: np.ndarray, P: np.ndarray, Q: np.ndarray, keys: tuple[np.ndarray, ...]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(k, l, e, named)`` of two-token queries X (B, 2, d): the scale ``2^e`` from ``||x_2||``, the
    nearest fingerprints ``q_l^T w`` of ``x_2 / 2^e`` and ``p_k^T w`` of ``(x_1 - x_2) / 2^e`` (``keys``:
    w, then P w and Q w sorted with their orders), and ``named``: the query equals ``[fl(2^e p_k +
    2^e q_l); 2^e q_l]`` bit for bit (the only claim the floor rests on)."""
    w, (pw, p_order), (qw, q_order) = keys
    x1, x2 = X[:, 0], X[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.rint(np.log2(np.linalg.norm(x2, axis=1)))
    e = np.where(np.isfinite(e), e, 0).astype(np.int64)

    def nearest(values: np.ndarray, sorted_keys: np.ndarray, order: np.ndarray) -> np.ndarray:
        at = np.clip(np.searchsorted(sorted_keys, values), 1, len(sorted_keys) - 1)
        left = np.abs(values - sorted_keys[at - 1]) <= np.abs(values - sorted_keys[at])
        return order[np.where(left, at - 1, at)]

    l = nearest(np.ldexp(x2 @ w, -e), qw, q_order)
    k = nearest(np.ldexp(x1 @ w - x2 @ w, -e), pw, p_order)
    q = np.ldexp(Q[l], e[:, None])
    named = np.all(x2 == q, axis=1) & np.all(x1 == np.ldexp(P[k], e[:, None]) + q, axis=1)
    return k, l, e, named


class _Namer:
    """Builds a :class:`CrossTranscript` from the calls of a run, in order: the one-token reads
    (the basis vectors e_1 ... e_d, in order, whose answers are the v the learner read), then
    two-token probes, named once the bases are drawn again from ``rng`` (a copy of the learner's
    generator as the learner received it: :func:`~attnproof.theorems.lowrank.random_bases` is its
    first draw).  Queries not named are counted (:meth:`transcript` refuses them)."""

    def __init__(self, d: int, rng: np.random.Generator) -> None:
        self.d, self.rng, self.bases, self.keys = d, rng, None, None
        self.ones: list[tuple[np.ndarray, np.ndarray]] = []
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.unnamed = 0

    def add(self, X: np.ndarray, y: np.ndarray) -> None:
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if X.shape[1] == 1 and self.bases is None:
            self.ones.append((X.copy(), y.copy()))
            return
        if X.shape[1] != 2 or not self._draw():
            self.unnamed += len(y)
            return
        k, l, e, named = _name_queries(X, *self.bases, self.keys)
        self.unnamed += int(np.sum(~named))
        self.parts.append((k[named], l[named], e[named], y[named]))

    def _draw(self) -> bool:
        """The learner's bases (once), from v as it read it; False if the reads were not e_1 ... e_d."""
        if self.bases is None:
            X1 = np.concatenate([X for X, _ in self.ones]) if self.ones else np.zeros((0, 1, self.d))
            if not np.array_equal(X1[:, 0], np.eye(self.d)):
                return False
            v = np.concatenate([y for _, y in self.ones])
            self.bases = random_bases(self.d, v, self.rng, FLOAT64)
            w = np.random.default_rng(0).standard_normal(self.d)
            self.keys = (w, *((np.sort(B @ w), np.argsort(B @ w)) for B in self.bases))
        return True

    def transcript(self) -> CrossTranscript:
        if self.unnamed or self.bases is None:
            raise PrecisionLossError(f"{self.unnamed} queries are not the skeleton's probes of its bases "
                                     "(or v was not read first): the matrix-free floor cannot name them")
        k, l, e, y = (np.concatenate([part[i] for part in self.parts]) for i in range(4))
        one = (np.concatenate([X for X, _ in self.ones]), np.concatenate([y for _, y in self.ones]))
        return CrossTranscript(*self.bases, k, l, e, y, one)


def cross_transcript(log: Sequence[QueryRecord], d: int, rng: np.random.Generator) -> CrossTranscript:
    """The :class:`CrossTranscript` of a recorded skeleton run (``rng``: a copy of the generator the
    learner was given, before it drew anything)."""
    namer = _Namer(d, rng)
    for record in log:
        namer.add(record.X, record.y)
    return namer.transcript()


@dataclass
class CrossRecorder(ValueOracle):
    """A :class:`~attnproof.oracles.ValueOracle` that keeps its skeleton run's
    :class:`CrossTranscript` (about 30 bytes an answer, where ``record=True`` keeps 16 d: 68 GB at
    d = 4096, r = 128), naming each two-token query as it is answered.  ``rng``: a copy of the
    generator the learner will be given.  :meth:`transcript` after the run."""

    rng: np.random.Generator | None = field(default=None, kw_only=True)
    _namer: _Namer | None = field(default=None, init=False, repr=False)

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        y = super()._answer(Xb)
        if self._namer is None:
            if self.rng is None:
                raise InvalidInputError("a CrossRecorder needs rng= (a copy of the learner's generator)")
            self._namer = _Namer(self.d, self.rng)
        self._namer.add(Xb, y)
        return y

    def transcript(self) -> CrossTranscript:
        if self._namer is None:
            raise PrecisionLossError("no query was answered")
        return self._namer.transcript()


#: Pairs x width of one block of :func:`_pair_sums` (64 MB per float64 temporary).
BLOCK_ENTRIES = 2**23
#: Radii summed in float64 from at most MAX_D nonnegative terms (each within gamma_{MAX_D} < 2^-40 of
#: its value) times this: covers their roundings many times over.
SUM_UP = 1 + 2.0**-30


def _groups(k: np.ndarray, l: np.ndarray, d: int) -> list[tuple[np.ndarray, str, int]]:
    """The distinct pairs in blocks that share one index: ``(pairs, "l" or "k", the shared index)``
    (a pair goes with the more frequent of its two indices: a cross's columns, then its rows),
    each of at most :data:`BLOCK_ENTRIES` / d pairs."""
    by_l, by_k = np.bincount(l, minlength=d), np.bincount(k, minlength=d)
    on_l = by_l[l] >= by_k[k]
    size = max(1, BLOCK_ENTRIES // d)
    out = []
    for name, key, mask in (("l", l, on_l), ("k", k, ~on_l)):
        idx = np.flatnonzero(mask)
        idx = idx[np.argsort(key[idx], kind="stable")]
        starts = np.flatnonzero(np.r_[True, np.diff(key[idx]) != 0])
        for group in np.split(idx, starts[1:]):
            for first in range(0, len(group), size):
                chunk = group[first:first + size]
                if len(chunk):
                    out.append((chunk, name, int(key[chunk[0]])))
    return out


def _pair_sums(ct: CrossTranscript, pk: np.ndarray, pl: np.ndarray,
               per_l: dict[str, tuple[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """For each distinct probe pair (k, l) (``pk``, ``pl``) at scale 1: its first token
    ``x = fl(p_k + q_l)``, the exact error ``err = p_k + q_l - x`` (TwoSum), so ``x - q_l = p_k - err``
    exactly, and the float64 row sums ``sum_i f(token)_i m_{l,i}`` for each ``name: (token,
    m)`` of ``per_l`` (m: a d x d array whose row l goes with q_l, or a vector (d,) for every pair;
    token one of "err", "|err|", "|x|", "|p|" with ``|p| = max(|p_k| - |err|, 0) <= |x - q_l|``)."""
    out = {name: np.empty(len(pk)) for name in per_l}
    P, Q = ct.P, ct.Q
    for pairs, by, at in _groups(pk, pl, P.shape[0]):
        a = P[pk[pairs]] if by == "l" else P[at][None, :]
        b = Q[at][None, :] if by == "l" else Q[pl[pairs]]
        x = a + b
        z = x - a
        err = (a - (x - z)) + (b - z)
        tokens = {"err": err, "|err|": np.abs(err), "|x|": np.abs(x)}
        if any(token == "|p|" for token, _ in per_l.values()):
            tokens["|p|"] = np.maximum(np.abs(a) - tokens["|err|"], 0.0)
        for name, (token, m) in per_l.items():
            t = tokens[token]
            if m.ndim == 1:
                out[name][pairs] = t @ m
            elif by == "l":
                out[name][pairs] = t @ m[at]
            else:
                out[name][pairs] = np.einsum("bi,bi->b", t, m[pl[pairs]])
    return out


@dataclass(frozen=True)
class _Pairs:
    """A transcript's distinct probe pairs and what of them does not depend on the world W: the
    query's pair index, ``v``'s balls and the label's lower bound at scale 1."""

    k: np.ndarray
    l: np.ndarray
    of: np.ndarray
    pv: tuple[np.ndarray, np.ndarray, np.ndarray]
    a2: tuple[np.ndarray, np.ndarray, np.ndarray]
    label: np.ndarray


def _pairs(ct: CrossTranscript, v: np.ndarray) -> _Pairs:
    """``p^T v = p_k^T v - err^T v`` (p_k^T v an exact-product ball, err^T v in float64 within
    ``gamma_d |err|^T |v|``), ``a2 = q_l^T v`` and ``label = g (|x| + |q_l|)^T |v|`` (lower bound:
    :data:`~attnproof.indistinguishable.NORM_DOWN` covers the float64 sums' roundings) at scale 1."""
    d = v.shape[0]
    codes, of = np.unique(ct.k.astype(np.int64) * d + ct.l, return_inverse=True)
    pk, pl = codes // d, codes % d
    sums = _pair_sums(ct, pk, pl, {"ev": ("err", v), "aev": ("|err|", np.abs(v)), "xv": ("|x|", np.abs(v))})
    Pv, Qv = (_product_ball(B, v[:, None]) for B in (ct.P, ct.Q))
    gamma = d * U / (1 - d * U)
    lo = Pv[1][pk, 0] - sums["ev"]
    rad = (Pv[2][pk, 0] + gamma * sums["aev"] + U * np.abs(lo)) * SUM_UP
    g = (d + 4) * U
    label = g * (sums["xv"] + (np.abs(ct.Q) @ np.abs(v))[pl]) * NORM_DOWN
    return _Pairs(pk, pl, of.ravel(), (Pv[0][pk, 0], lo, rad), tuple(part[pl, 0] for part in Qv), label)


Ball = tuple[np.ndarray, np.ndarray, np.ndarray]


def _ball_product(A: Ball, B: tuple[np.ndarray, np.ndarray | None, np.ndarray | None]) -> Ball:
    """The product of ball matrices ``A = A_h + A_l +- A_r`` (m x n) and ``B`` (n x p; ``B_l``,
    ``B_r`` None: 0): ``A_h B_h`` by :func:`_product_ball`, ``A_h B_l + A_l B_h`` in float64 within
    ``gamma_{2n}`` of their magnitudes' products, and ``|A_l| |B_l|``, ``A_r (|B_h| + |B_l| + B_r) +
    (|A_h| + |A_l|) B_r`` and the rounding of the new lo (u) in the radius (nonnegative float64 BLAS
    products: :data:`SUM_UP`)."""
    (Ah, Al, Ar), (Bh, Bl, Br) = A, B
    n = Ah.shape[1]
    gamma = 2 * n * U / (1 - 2 * n * U)
    hi, lo, rad = _product_ball(Ah, Bh)
    aAh, aAl, aBh = np.abs(Ah), np.abs(Al), np.abs(Bh)
    lo = lo + Al @ Bh
    rad = rad + gamma * (aAl @ aBh) + Ar @ aBh
    if Bl is not None:
        aBl = np.abs(Bl)
        lo = lo + Ah @ Bl
        rad = rad + gamma * (aAh @ aBl) + (aAl + Ar) @ aBl
    if Br is not None:
        rad = rad + (aAh + aAl + Ar) @ Br
    return hi, lo, (rad + U * np.abs(lo)) * SUM_UP


def _on_pairs(k: np.ndarray, l: np.ndarray, d: int,
              columns: Callable[[np.ndarray], tuple[np.ndarray, ...]],
              rows: Callable[[np.ndarray], tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """Entries (k, l) of a d x d matrix (or of several, a tuple) that is a product: ``columns(cols)``
    gives its columns ``cols`` (all k), ``rows(rows)`` its rows (all l); the pairs grouped by l (as
    :func:`_groups`: a cross's r pivot columns) are read from the first, the others from the second
    (a cross's r pivot rows): two d x r x (inner) products, no d x d one."""
    on_l = np.bincount(l, minlength=d)[l] >= np.bincount(k, minlength=d)[k]
    cols, rows_ = np.unique(l[on_l]), np.unique(k[~on_l])
    out: list[np.ndarray] = []
    for block, mask, at in ((columns, on_l, lambda: (k[on_l], np.searchsorted(cols, l[on_l]))),
                            (rows, ~on_l, lambda: (np.searchsorted(rows_, k[~on_l]), l[~on_l]))):
        if not mask.any():
            continue
        values = block(cols if block is columns else rows_)
        out = out or [np.empty(len(k)) for _ in values]
        where = at()
        for part, value in zip(out, values):
            part[mask] = value[where]
    return tuple(out)


def _cross_values(Kt: Ball, Zt: Ball, k: np.ndarray, l: np.ndarray) -> Ball:
    """Balls of ``Kt_k^T Zt_l`` for the pairs (k, l), by :func:`_ball_product` (:func:`_on_pairs`)."""
    KtT = tuple(part.T for part in Kt)
    return _on_pairs(k, l, Kt[0].shape[1],
                     lambda cols: _ball_product(KtT, tuple(part[:, cols] for part in Zt)),
                     lambda rows: _ball_product(tuple(part[rows] for part in KtT), Zt))


def _pair_products(A: np.ndarray, B: np.ndarray, k: np.ndarray, l: np.ndarray) -> np.ndarray:
    """``A_k^T B_l`` (rows of nonnegative d x d arrays) for the pairs, float64 (:func:`_on_pairs`)."""
    return _on_pairs(k, l, A.shape[0], lambda cols: (A @ B[cols].T,), lambda rows: (A[rows] @ B.T,))[0]


def _world(ct: CrossTranscript, pairs: _Pairs, K: np.ndarray, Q: np.ndarray,
           base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The world ``W = K^T Q``'s share of the answers' balls, by pair at scale 1, and its cross
    coordinates ``Kt = K P^T``, ``Zt = Q Q_b^T`` (balls; ``M_kl = p_k^T W q_l = Kt_k^T Zt_l``).

    The logit at scale 1 is ``(x - q_l)^T W q_l = (p_k - err)^T q = M_kl - err^T q``, ``q = W q_l =
    K^T Zt_l``: M_kl by :func:`_cross_values`, ``q`` a ball ``q_hi + q_lo +- q_rad`` (the
    :func:`_ball_product` of Zt^T and K), and ``err^T q`` as ``fl(err^T q_hi)`` within
    ``|err|^T (gamma_d |q_hi| + |q_lo| + q_rad)``.  The declaration's slack
    ``g (|x|^T |q| + |q_l|^T |q| + |p|^T |W| |q_l|)`` from below: ``|q| >= |q_hi| - |q_lo| - q_rad``,
    ``|W| >= |fl(K^T Q)| - gamma_r |K|^T |Q|`` (1 + 4 gamma_r covering the float64 product of
    magnitudes), ``|p| >= |p_k| - |err|``; each term a float64 sum of at most d products of such lower
    bounds, each computed within a few roundings above its value: NORM_DOWN covers them.

    ``base``: the target's (a ``_world`` without base), of which this world is a small move: the
    sums over each answer's d entries are then the base's, corrected by bounds from products on
    BLAS alone (no pass over the entries).  With ``Delta_l >= |q - q_0|`` entrywise (from the two
    balls), ``D >= |W - W_0|`` (an exact-product ball of ``[K; -K_0]^T [Q; Q_0]``) and ``|x| <= (1 +
    u)(|p_k| + |q_l|)`` (x is p_k + q_l rounded once), ``|err| <= u |x|`` and ``|p| <= |p_k| + |err|``:
    ``|err^T (q - q_0)| <= u |x|^T Delta_l`` joins the logit's radius, ``|x|^T |q| >= |x|^T q_low0 -
    |x|^T Delta_l`` and ``|p|^T |W| |q_l| >= |p|^T |W_0|_low |q_l| - |p|^T D |q_l|``, each
    ``|p_k|^T (.)_l`` a float64 product (within gamma_d: :data:`SUM_UP`)."""
    d, r = K.shape[1], K.shape[0]
    Kt, Zt = _product_ball(K, ct.P.T), _product_ball(Q, ct.Q.T)
    hi, lo, rad = _ball_product(tuple(part.T for part in Zt), (K, None, None))  # row l: Zt_l^T K = q^T
    gamma_r, gamma_d = r * U / (1 - r * U), d * U / (1 - d * U)
    q_low = np.maximum(np.abs(hi) - (np.abs(lo) + rad) * (1 + 4 * U), 0.0)
    absQ = np.abs(ct.Q)
    if base is None:
        absK = np.abs(K)
        q_rad = (gamma_d * np.abs(hi) + np.abs(lo) + rad) * SUM_UP
        W_low = np.maximum(np.abs(K.T @ Q) - (absK.T @ np.abs(Q)) * (gamma_r * (1 + 4 * gamma_r)), 0.0)
        W_q = absQ @ W_low.T  # row l: |W| |q_l| from below
        sums = _pair_sums(ct, pairs.k, pairs.l, {"eq": ("err", hi), "aeq": ("|err|", q_rad),
                                                  "xq": ("|x|", q_low), "pw": ("|p|", W_q)})
    else:
        h0, l0, r0 = base["q"]
        Delta = (np.abs(hi - h0) + np.abs(lo) + np.abs(l0) + rad + r0) * SUM_UP
        Dh, Dl, Dr = _product_ball(np.ascontiguousarray(np.vstack([K, -base["K"]]).T),
                                   np.vstack([Q, base["Q"]]))
        Dq = absQ @ ((np.abs(Dh) + np.abs(Dl) + Dr) * SUM_UP).T * SUM_UP  # row l: |W - W_0| |q_l| from above
        absP = np.abs(ct.P)
        x_up = ((_pair_products(absP, Delta, pairs.k, pairs.l) + np.einsum("li,li->l", absQ, Delta)[pairs.l])
                * (1 + U) * SUM_UP)
        p_up = ((_pair_products(absP, Dq, pairs.k, pairs.l) * (1 + 2 * U)
                 + 2 * U * np.einsum("li,li->l", absQ, Dq)[pairs.l]) * SUM_UP)
        old = base["sums"]
        sums = {"eq": old["eq"], "aeq": old["aeq"] * SUM_UP + U * x_up,
                "xq": np.maximum(old["xq"] - x_up, 0.0), "pw": np.maximum(old["pw"] - p_up, 0.0),
                "x_up": x_up, "p_up": p_up}
    g = (d + 4) * U
    M = _cross_values(Kt, Zt, pairs.k, pairs.l)
    L_lo = M[1] - sums["eq"]
    L_rad = (M[2] + sums["aeq"] * SUM_UP + U * np.abs(L_lo)) * SUM_UP
    most = g * (sums["xq"] + np.einsum("li,li->l", absQ, q_low)[pairs.l] + sums["pw"]) * NORM_DOWN
    return {"L": (M[0], L_lo, L_rad), "most": most, "Kt": Kt, "Zt": Zt, "q": (hi, lo, rad), "sums": sums,
            "K": K, "Q": Q}


def _query_balls(ct: CrossTranscript, pairs: _Pairs, world: dict[str, Any]) -> dict[str, Any]:
    """The keys :func:`~attnproof.indistinguishable.two_token_margins` reads, per two-token answer:
    its pair's balls at scale 1 times the exact powers of two of its scale ``s = 2^e`` (``x_1 = s x``,
    ``x_2 = s q_l``: L and ``most`` scale by s^2, ``p^T v``, ``a2`` and the label by s; no product
    leaves float64's normal range, checked)."""
    s1, s2 = ct.e, 2 * ct.e
    of = pairs.of

    def scaled(part: np.ndarray, e: np.ndarray) -> np.ndarray:
        x = part[of]
        out = np.ldexp(x, e)
        if not np.all(np.isfinite(out) & ((x == 0) | (np.abs(out) >= 2.0**-1000))):
            raise InvalidInputError("a scaled ball leaves float64's normal range")
        return out

    b = {"L": tuple(scaled(p, s2) for p in world["L"]), "pv": tuple(scaled(p, s1) for p in pairs.pv),
         "a2": tuple(scaled(p, s1) for p in pairs.a2), "most": scaled(world["most"], s2),
         "label": scaled(pairs.label, s1)}
    return b


def _two_token_lower(b: dict[str, Any], y: np.ndarray) -> np.ndarray:
    """:func:`~attnproof.indistinguishable.two_token_margins` at :data:`PREC` bits, as float64s
    certainly below them (:func:`~attnproof.indistinguishable.lower`), in blocks of 2^16 answers."""
    out = np.empty(len(y))
    old = ctx.prec
    ctx.prec = PREC
    try:
        for first in range(0, len(y), 2**16):
            part = slice(first, first + 2**16)
            block = {name: (tuple(p[part] for p in value) if isinstance(value, tuple) else value[part])
                     for name, value in b.items()}
            out[part] = [lower(m) for m in two_token_margins(block, y[part])]
    finally:
        ctx.prec = old
    return out


def _check_world(ct: CrossTranscript, K: np.ndarray, Q: np.ndarray, v: np.ndarray) -> None:
    d = v.shape[0]
    if K.ndim != 2 or K.shape != Q.shape or K.shape[1] != d or ct.P.shape != (d, d):
        raise ShapeError(f"K and Q must both have shape (r, {d}) for a transcript of width {ct.P.shape[0]}; "
                         f"got {K.shape}, {Q.shape}")
    if d > MAX_D:
        raise InvalidInputError(f"the float64 sums' bounds cover d <= {MAX_D}; got d = {d}")
    if not all(in_range(a) for a in (K, Q, v, ct.P, ct.Q)):
        raise InvalidInputError("entries outside the range the balls assume (no overflow or underflow)")


def _one_token_lower(ct: CrossTranscript, v: np.ndarray) -> np.ndarray:
    old = ctx.prec
    ctx.prec = PREC
    try:
        return np.array([lower(m) for m in one_token_margins(*ct.one, v)])
    finally:
        ctx.prec = old


def cross_margins(ct: CrossTranscript, K: np.ndarray, Q: np.ndarray, v: np.ndarray) -> dict[int, np.ndarray]:
    """:func:`factored_margins` of a :class:`CrossTranscript`, matrix-free (O(r d^2) products, O(d^2)
    memory; each answer's d entries read once): rigorous lower bounds on how far inside the naive
    declaration at ``(K^T Q, v)`` each answer lies (:func:`_world`, :func:`_pairs`, scaled by
    :func:`_query_balls`; the sigmoid in Arb by the shared
    :func:`~attnproof.indistinguishable.two_token_margins`).

    Returns
    -------
    dict
        ``{1: one-token margins, 2: two-token margins}`` (>= 0 proves an answer allowed).
    """
    K, Q, v = (np.asarray(a, dtype=np.float64) for a in (K, Q, v))
    _check_world(ct, K, Q, v)
    pairs = _pairs(ct, v)
    return {1: _one_token_lower(ct, v),
            2: _two_token_lower(_query_balls(ct, pairs, _world(ct, pairs, K, Q)), ct.y)}


class _Cross:
    """The skeleton's linearisation on its cross (Thm 5.1, ``thm5.1/skeleton-reconstruction``):
    ``M = C U^{-1} R`` moved by ``dC`` (the pivot columns J, every row) and ``dR`` (the pivot rows I
    off J) is moved, to first order, by ``S(dC, dR) = (dC - X dU) Y + X dR'`` (``X = C U^{-1}``,
    ``Y = U^{-1} R``, ``dU = dC[I]``, ``dR'`` = dR with dU in the columns J), a tangent vector of the
    rank-r matrices at M whose cross entries are the moves asked.  ``M = Kt^T Zt`` (the cross
    coordinates of :func:`_world`, centres)."""

    def __init__(self, pk: np.ndarray, pl: np.ndarray, Kt: np.ndarray, Zt: np.ndarray) -> None:
        d, r = Kt.shape[1], Kt.shape[0]
        I = np.flatnonzero(np.bincount(pk, minlength=d) == d)
        J = np.flatnonzero(np.bincount(pl, minlength=d) == d)
        if len(I) != r or len(J) != r or len(pk) != r * (2 * d - r):
            raise InvalidInputError("the answers are not one skeleton's cross of rank r (r pivot rows and "
                                    "columns measured whole): the matrix-free floor reads only those")
        self.d, self.I, self.J = d, I, J
        self.on_J = np.isin(pl, J)
        pos_I, pos_J = np.full(d, -1), np.full(d, -1)
        pos_I[I], pos_J[J] = np.arange(r), np.arange(r)
        self.c_at = (pk[self.on_J], pos_J[pl[self.on_J]])
        self.r_at = (pos_I[pk[~self.on_J]], pl[~self.on_J])
        if np.any(self.r_at[0] < 0):
            raise InvalidInputError("a measured entry lies off the skeleton's cross")
        self.Kt, self.Zt = Kt, Zt
        U_ = Kt[:, I].T @ Zt[:, J]
        self.X = np.linalg.solve(U_.T, (Kt.T @ Zt[:, J]).T).T
        self.Y = np.linalg.solve(U_, Kt[:, I].T @ Zt)
        self.U = U_

    def _split(self, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = len(self.I)
        dC, dR = np.zeros((self.d, r)), np.zeros((r, self.d))
        dC[self.c_at] = delta[self.on_J]
        dR[self.r_at] = delta[~self.on_J]
        dR[:, self.J] = dC[self.I]
        return dC, dR

    def move(self, delta: np.ndarray) -> np.ndarray:
        """S(delta): the d x d move of M for the moves ``delta`` of the measured entries (by pair)."""
        dC, dR = self._split(delta)
        return (dC - self.X @ dC[self.I]) @ self.Y + self.X @ dR

    def adjoint(self, Z: np.ndarray) -> np.ndarray:
        """S^T(Z), by pair."""
        XZ = self.X.T @ Z
        gC = Z @ self.Y.T
        gC[self.I] += XZ[:, self.J] - XZ @ self.Y.T
        out = np.empty(len(self.on_J))
        out[self.on_J] = gC[self.c_at]
        out[~self.on_J] = XZ[self.r_at]
        return out

    def factors(self, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Et, Ft) with ``S(delta) = Et^T Zt + Kt^T Ft``: ``Et^T = (dC - X dU) U^{-1} Kt[:, I]^T``,
        ``Ft = Zt[:, J] U^{-1} dR'``."""
        dC, dR = self._split(delta)
        Et = self.Kt[:, self.I] @ np.linalg.solve(self.U.T, (dC - self.X @ dC[self.I]).T)
        Ft = self.Zt[:, self.J] @ np.linalg.solve(self.U, dR)
        return Et, Ft

    def entries(self, Et: np.ndarray, Ft: np.ndarray) -> np.ndarray:
        """The tangent map on the cross: ``Et_k^T Zt_l + Kt_k^T Ft_l`` for each measured pair."""
        C = Et.T @ self.Zt[:, self.J] + self.Kt.T @ Ft[:, self.J]
        R = Et[:, self.I].T @ self.Zt + self.Kt[:, self.I].T @ Ft
        out = np.empty(len(self.on_J))
        out[self.on_J] = C[self.c_at]
        out[~self.on_J] = R[self.r_at]
        return out


def _cross_direction(ct: CrossTranscript, pairs: _Pairs, b: dict[str, Any], world: dict[str, Any],
                     K: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """:func:`_direction` matrix-free: each pair's move ``tau`` the least ``slack / s^2`` of its
    answers (the logit of a probe at scale s moves by s^2 that of its entry), the signs of
    :func:`_signs` (the top right singular vector of ``G = S diag(tau)`` by ARPACK on the operator),
    the factors' move (E, F) of :meth:`_Cross.factors` (``E = Et P``, ``F = Ft Q_b``) made the
    least-norm one (``pinv``'s) by the gauge ``(E + G K, F - G^T Q)`` that solves ``G K K^T + Q Q^T G
    = Q F^T - E K^T``, then scaled to :data:`SAFETY` of the slack its first-order moves use."""
    slack = _slack(b, ct.y)
    scale2 = np.ldexp(1.0, 2 * ct.e)
    tau = np.full(len(pairs.k), np.inf)
    np.minimum.at(tau, pairs.of, slack / scale2)
    cross = _Cross(pairs.k, pairs.l, world["Kt"][0], world["Zt"][0])
    G = LinearOperator((cross.d**2, len(tau)), dtype=np.float64,
                       matvec=lambda x: cross.move(np.ravel(x) * tau).ravel(),
                       rmatvec=lambda z: cross.adjoint(np.reshape(z, (cross.d, cross.d))) * tau)
    start = svds(G, k=1, return_singular_vectors="vh", random_state=0)[2][0]
    sigma = _signs(start, lambda x: G.rmatvec(G.matvec(x)))
    Et, Ft = cross.factors(sigma * tau)
    E, F = Et @ ct.P, Ft @ ct.Q
    gauge = solve_sylvester(Q @ Q.T, K @ K.T, Q @ F.T - E @ K.T)
    E, F = E + gauge @ K, F - gauge.T @ Q
    moved = cross.entries(E @ ct.P.T, F @ ct.Q.T)[pairs.of] * scale2
    used = np.max(np.abs(moved) / slack) if np.all(slack > 0) else np.inf
    EF = np.vstack([E, F])
    return SAFETY * EF / used if np.isfinite(used) and used > 0 else 0 * EF


def indistinguishable_cross(ct: CrossTranscript, K: np.ndarray, Q: np.ndarray, v: np.ndarray,
                            max_shrinks: int = 40) -> SkeletonFloor:
    """:func:`indistinguishable` matrix-free, for large d: worlds ``(K +- t E)^T (Q +- t F)`` of the
    same construction (:func:`_cross_direction`), every answer proven as by :func:`cross_margins`
    (the one-token answers, which do not read W, once), the floor by :func:`_half_distance`.

    Raises
    ------
    PrecisionLossError
        If an answer is not proven allowed at ``(K^T Q, v)``, or no t is proven after
        ``max_shrinks`` shrinkings.
    """
    K, Q, v = (np.asarray(a, dtype=np.float64) for a in (K, Q, v))
    _check_world(ct, K, Q, v)
    pairs = _pairs(ct, v)
    one_proven = bool(np.all(_one_token_lower(ct, v) >= 0))

    def proven(world: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        b = _query_balls(ct, pairs, world)
        return one_proven and bool(np.all(_two_token_lower(b, ct.y) >= 0)), b

    world = _world(ct, pairs, K, Q)
    ok, b = proven(world)
    if not ok:
        raise PrecisionLossError("an answer of the real oracle is not proven within its own naive "
                                 "declaration")
    EF = _cross_direction(ct, pairs, b, world, K, Q)
    r = K.shape[0]
    t, shrinks = 1.0, 0
    while True:
        worlds = ((K + t * EF[:r], Q + t * EF[r:]), (K - t * EF[:r], Q - t * EF[r:]))
        if all(proven(_world(ct, pairs, *w, base=world))[0] for w in worlds):
            break
        if shrinks >= max_shrinks:
            raise PrecisionLossError(f"no indistinguishable targets proven after {shrinks} shrinkings")
        t *= SHRINK
        shrinks += 1
    return SkeletonFloor(worlds, _half_distance(*worlds), shrinks, ct.answers)


#: Widths above which :func:`floor_row` takes the matrix-free path by default (the dense one builds
#: a queries x r(2d - r) matrix: 4.5 minutes at d = 128, r = 8).
DENSE_MAX_D = 32


def floor_row(d: int, rank: int, seed: int = 0, matrix_free: bool | None = None) -> dict[str, Any]:
    """One bench run of Thm 5.1 (:func:`~attnproof.theorems.lowrank.runner.run_lowrank`'s target and
    draws: float64, naive answers, the learner's defaults) against a recording real oracle, and its
    floor: ``d, rank, seed``, the true error ``err_W``, the bound ``error_bound``, ``floor``,
    ``floor_over_error``, ``bound_over_floor``, ``alt_error_over_bound`` (the larger
    ``||W_hat - W_+-||_F / error_bound``: above 1, a world the declaration allows in which the bound
    fails), ``shrinks``, ``answers``, ``path`` and the seconds of the learner and of the floor.

    ``matrix_free``: :class:`CrossRecorder` and :func:`indistinguishable_cross` (default above
    :data:`DENSE_MAX_D`), else ``record=True`` and :func:`indistinguishable`."""
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, rank, rng)
    matrix_free = d > DENSE_MAX_D if matrix_free is None else matrix_free
    model = FactoredAttention(K, Q, v)
    oracle = CrossRecorder(model, rng=copy.deepcopy(rng)) if matrix_free else ValueOracle(model, record=True)
    t0 = time.perf_counter()
    rec = learn_skeleton(oracle, rank=rank, rng=rng)
    t1 = time.perf_counter()
    found = (indistinguishable_cross(oracle.transcript(), K, Q, v) if matrix_free
             else indistinguishable(oracle.log, K, Q, v))
    t2 = time.perf_counter()
    err, bound = distance(rec.W, K, Q), float(rec.error_bound)
    return {"d": d, "rank": rank, "seed": seed, "err_W": err, "error_bound": bound, "floor": found.floor,
            "floor_over_error": found.floor / err, "bound_over_floor": bound / found.floor,
            "alt_error_over_bound": max(distance(rec.W, *w) for w in found.worlds) / bound,
            "shrinks": found.shrinks, "answers": found.answers,
            "path": "matrix-free" if matrix_free else "dense",
            "learner_seconds": t1 - t0, "floor_seconds": t2 - t1}


__all__ = ["CrossRecorder", "CrossTranscript", "SkeletonFloor", "cross_margins", "cross_transcript",
           "factored_margins", "floor_row", "indistinguishable", "indistinguishable_cross"]
