"""Sec. 4.1: the bias-free FFN learner and the one-layer Transformer learner, attacked."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from attnproof import strategies as ast
from attnproof.theorems.transformer import strategies as tst
from attnproof.arith import FLOAT64, MP, SYMPY
from attnproof.errors import (
    AssumptionError,
    DegenerateProbeError,
    InvalidInputError,
    NonIdentifiableError,
    PrecisionLossError,
    QueryBudgetExceeded,
)
from attnproof.models import OneLayerTransformer, ReluFFN, canonical_ffn, faithful_available, normalize_normal
from attnproof.oracles import AntisymmetricOracle, ValueOracle
from attnproof.theorems.transformer import (
    ffn_query_bound,
    ffn_query_count,
    learn_ffn,
    learn_transformer,
    transformer_query_count,
)

from attnproof.theorems.transformer._path_search import TUNING
from attnproof.theorems.transformer.ffn import CHECKS, FFNRecovery
from attnproof.theorems.transformer.runner import run_ffn

seeds = st.integers(0, 2**32 - 1)
EPS = FLOAT64.eps


def recover_ffn(A, w, arith=FLOAT64, seed=0, answers="naive", **kw):
    oracle = ValueOracle(ReluFFN(A, w, arith, answers=answers), **kw)
    return learn_ffn(oracle, rng=np.random.default_rng(seed), arith=arith), oracle


def check_count(rec, oracle, d):
    """The exact query count: the oracle's count, the ledger and the formula in d and L."""
    assert rec.queries == oracle.queries == (rec.diagnostics["queries_formula"]
                                             + rec.diagnostics["reasked_queries"])
    assert rec.diagnostics["queries_formula"] == ffn_query_count(d, rec.L)
    assert rec.diagnostics["queries_formula"] == ((rec.L + 1) * (d + 1) + 3 * rec.L + 4 if d > 1 else 10)
    ledger = rec.diagnostics["ledger"]
    assert rec.queries == (d * (ledger["pieces"] + ledger["retries"]) + ledger["values"] + 2 * ledger["pairs"]
                           + ledger["checks"] + ledger["planes"])
    assert ledger["checks"] >= 2 * CHECKS * rec.diagnostics["paths"]  # a grid per segment, per path
    assert ledger["checks"] % CHECKS == 0
    assert rec.diagnostics["reasked_queries"] >= ledger["checks"]


def adversarial_points(A, rng, k=24):
    """Random points, points on and 1e-9 off every target hyperplane, basis vectors, and the
    same at scales 1e-3 and 1e3 (f is positively homogeneous)."""
    d = A.shape[0]
    X = [rng.standard_normal((k, d)), np.eye(d), -np.eye(d)]
    for w in A.T:
        if np.any(w):
            w = w / np.abs(w).max()
            P = rng.standard_normal((3, d))
            on = P - np.outer(P @ w, w) / (w @ w)
            X += [on, on + 1e-9 * w, on - 1e-9 * w]
    X = np.concatenate(X)
    return np.concatenate([X, 1e-3 * X, 1e3 * X])


def check_function(rec, A, w, rng, merge=0.0):
    """|f_hat(x) - f(x)| <= (bound + merge) |x|_inf (+ the float evaluation of both), at
    adversarial x; ``merge`` allows two hyperplanes merged below the search's resolution (the
    properties only: OPEN_MERGE_NARROWER_THAN_THE_PAIRS; the pinned and parametrized pair tests
    hold the learner to its own bound since helper tfunion)."""
    X = adversarial_points(A, rng)
    truth = ReluFFN(A, w)(X[:, None, :])
    scale = np.abs(X @ A) @ np.abs(w) + np.abs(X @ rec.N.T) @ np.abs(rec.c) + np.abs(X @ rec.u)
    rounding = 4 * (A.shape[0] + A.shape[1] + rec.L + 2) * EPS * scale
    allowed = (rec.diagnostics["error_bound"] + merge) * np.abs(X).max(axis=1) + rounding
    assert np.all(np.abs(rec(X) - truth) <= allowed)


def points_on(n, rng, k=16):
    """k points of the hyperplane n^T x = 0 with |x|_inf = 1 (x = 0 when d = 1: the only point)."""
    if len(n) == 1:
        return np.zeros((1, 1))
    X = rng.standard_normal((k, len(n)))
    X -= np.outer(X @ n, n) / (n @ n)
    return X / np.abs(X).max(axis=1, keepdims=True)


def canonical_truth(A, w):
    """``canonical_ffn(A, w, rtol=1e-12)`` with its sums exact (``math.fsum``): u = A w row by row,
    and the weights of the columns on one hyperplane (equal normalised normals) merged before
    canonical_ffn merges normals within rtol.  canonical_ffn sums in float64 in column order, where
    a tiny unit beside cancelling units is absorbed: (1.9e-94 - 1) + 1 = 0, a truth without the
    1.9e-94 unit that f = 1.9e-94 ReLU(x_0) has (OPEN_FLOAT_TINY_BESIDE_ZERO_SUM before)."""
    A, w = np.asarray(A, dtype=float), np.asarray(w, dtype=float)
    u = np.array([math.fsum(row * w) for row in A])
    groups: dict[tuple, list] = {}
    for k in range(A.shape[1]):
        if w[k] != 0 and np.any(A[:, k]):
            n, lam = normalize_normal(A[:, k], FLOAT64)
            groups.setdefault(tuple(n), []).append(w[k] * abs(lam))
    normals = np.array(list(groups), dtype=float).reshape(-1, A.shape[0]).T
    _, N, c = canonical_ffn(normals, np.array([math.fsum(v) for v in groups.values()]), rtol=1e-12)
    return u, N, c


def check_canonical(rec, A, w, rng=None):
    """The learner's per-kink guarantee (:meth:`FFNRecovery.kink_check`, a corollary of its bound
    B), both ways: every kink of f, read at points of its hyperplane, is within what B allows
    of f_hat's nearest kink, or light enough (for its margin to the other hyperplanes) to be
    dropped; so is every kink of f_hat against f's (no spurious heavy kink); and
    ``|du|_1 <= 2 B`` (``f(x) - f(-x) = u^T x``).  A kink lighter than its margin allows may
    be merged or dropped (f moves by its mass times its distance); an isolated heavy one must be
    recovered, its jump within the stated tolerance."""
    rng = np.random.default_rng(0) if rng is None else rng
    u, N, c = canonical_truth(A, w)
    B = rec.diagnostics["error_bound"]
    slack = 64 * EPS * (np.abs(u).sum() + np.abs(c).sum() + np.abs(rec.c).sum())
    assert np.abs(rec.u - u).sum() <= 2 * B + slack
    truth = FFNRecovery(u, N, c, 0, "float64", {"error_bound": B})
    for (N1, c1), other in (((N, c), rec), ((rec.N, rec.c), truth)):
        N1, c1 = np.asarray(N1, dtype=float), np.asarray(c1, dtype=float)
        for k in range(len(c1)):
            for x0 in points_on(N1[k], rng):
                for E, allowed in other.kink_check(N1[k], c1[k], x0, np.delete(N1, k, axis=0)):
                    assert E <= allowed + slack, (k, E, allowed)


def test_check_canonical_fails_on_a_heavy_kink_dropped_merged_or_flipped():
    """The per-kink guarantee (check_canonical) can fail: against f's own canonical form with
    bound B, a heavy isolated kink dropped, two merged into one, or a kink's sign flipped (which
    the old check, comparing c_j n_j only up to sign, passed) is caught; a 1e-10 kink at L1
    distance 0.125 merged into a unit one passes with the bound its merge needs, 2.5e-11 (the
    function moves by its mass times the distance), and is caught at a bound 100 times smaller."""
    A = np.array([[1.0, 0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.875, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0]])
    w = np.array([1.0, -0.5, 0.75, 1e-10, 0.5])
    u, N, c = canonical_ffn(A, w, rtol=1e-12)
    i, j = (int(np.flatnonzero(np.all(N[:, :2] == row, axis=1))[0]) for row in ([1.0, 0.875], [1.0, 1.0]))

    def rec(N_hat, c_hat, B):
        return FFNRecovery(u, np.asarray(N_hat), np.asarray(c_hat), 0, "float64", {"error_bound": B})

    def merge(k, l):  # kinks k and l as one: the sum of their jumps, on its own hyperplane
        P = c[k] * N[k] + c[l] * N[l]
        keep = [r for r in range(len(c)) if r not in (k, l)]
        return np.concatenate([N[keep], [P / np.abs(P).max()]]), np.concatenate([c[keep], [np.abs(P).max()]])

    # f - f_hat = (|a^T x| + |b^T x| - |(a + b)^T x|) / 2, a = c_j n_j, b = c_i n_i, is nonzero only
    # where a^T x and b^T x differ in sign, and then at most |b^T x| <= m_i delta |x|_inf
    mass = abs(c[i]) * np.abs(N[i]).sum()
    merge_error = mass * np.abs(N[i] / np.abs(N[i]).sum() - N[j] / np.abs(N[j]).sum()).sum()
    X = np.random.default_rng(0).uniform(-1, 1, (4096, 3))
    assert np.abs(rec(*merge(i, j), 0)(X) - ReluFFN(A, w)(X[:, None, :])).max() <= merge_error
    check_canonical(rec(*merge(i, j), merge_error), A, w)  # within the guarantee
    with pytest.raises(AssertionError):
        check_canonical(rec(*merge(i, j), merge_error / 100), A, w)
    B = 1e-9
    check_canonical(rec(N, c, B), A, w)  # f itself
    for N_bad, c_bad in (
        (np.delete(N, j, axis=0), np.delete(c, j)),  # a unit kink dropped
        merge(j, int(np.flatnonzero(np.all(N == [1.0, 0.0, 0.0], axis=1))[0])),  # two unit kinks merged
        (N, np.where(np.arange(len(c)) == j, -c, c)),  # a sign flipped
    ):
        with pytest.raises(AssertionError):
            check_canonical(rec(N_bad, c_bad, B), A, w)


# --- learn_ffn in float64 ---------------------------------------------------------------


def beyond_float64(A, w):
    """A live unit with a non-zero |a_k A_ik| below 2^-800 (or underflowing to 0): float64
    answers near its kink are near-subnormal, outside the safe range the learner claims (it
    must refuse: PrecisionLossError, or NonIdentifiableError when f rounds to 0 everywhere)."""
    products = np.abs(A) * np.abs(w)[None, :]
    return bool(np.any((A != 0) & (w != 0)[None, :] & (products < 2.0**-800)))


#: Hyperplanes closer than this (|n_i / |n_i| -+ n_j / |n_j||_1) may be merged or refused in float64
#: (merged beyond the learner's own bound at a few, OPEN_MERGE_NARROWER_THAN_THE_PAIRS, within
#: merge_allowance there): their kinks on the path are within ~ this relative
#: distance, below what the search resolves.  Measured (issue 23 item 7, helper openfloat;
#: pair_target, d = 2..8, 20 targets a d, path seed the target's): answered within the bound at
#: every angle from 3e-7 to 1e-3 (140 of 140 each); at 1e-7, 134 (4 refused, 2 off their own
#: bound: 5.5e-8 |x| against 3.3e-9 at d = 6, seed 4; 8.6e-8 against 4.3e-8 at d = 7, seed 6,
#: within a merge allowance the user cannot compute).  Since helper tfunion (the polish's
#: bisection for the region between merged kinks to 2^-40, and no uncertified merge charge in
#: d > 2 where no gradient between was measured, ``ffn._merge_charge``): 133 within the bound, 7
#: refused, none off it (the two off and two answered within it, with d = 8, now refused; 3e-7 and
#: 1e-6: 140 of 140 as before); on seeds 20-59 (280 targets) 264 / 6 / 10 off before, 268 / 10 / 2
#: off after (OPEN_MERGE_BELOW_PAIR), and at 3e-8 167 / 90 / 23 before.  Since helper merge23
#: (ffn._thin_wedge_contradiction; within / refused / off, d = 2..8, seeds 0-19 a d unless said):
#: 1e-7 131 / 9 / 0 (the same before), seeds 20-59 266 / 14 / 0 (265 / 13 / 2 before); 3e-8,
#: seeds 0-39, 139 / 141 / 0 (138 / 139 / 3); 1e-9 71 / 68 / 1 (74 / 58 / 8); 1e-10 108 / 27 / 5
#: (107 / 6 / 27; OPEN_MERGE_AT_THE_POLISH_RESOLUTION); 3e-7 139 / 1 / 0, 1e-6 and 1e-5
#: 140 / 0 / 0, 3e-6 138 / 2 / 0 (the same before).  Since helper thin24 (ffn._thin_wedge_contradiction's
#: pairs at x* and across it, thin24c's direction across; off counted at the adversarial points and
#: on the recovered hyperplanes): 1e-10 105 / 34 / 1 (107 / 27 / 6 before so counted, worst 4.7 times
#: the bound -> 1.17); 1e-9 70 / 70 / 0 (71 / 68 / 1); 3e-8 139 / 140 / 1 (139 / 141 / 0: 11.8 times,
#: MERGES_BETWEEN_M_AND_Y); 1e-7 (seeds 20-59) 264 / 16 / 0 (266 / 14 / 0); 1e-6
#: 140 / 0 / 0 (the same).  Since a point off both planes is followed by one at m +- y / THIN_MARGIN
#: (session 23): 1e-10 103 / 36 / 1 (the same 1.17 times); 1e-9 70 / 70 / 0; 3e-8 139 / 141 / 0;
#: 1e-7 (seeds 20-59) 264 / 16 / 0: off their own bound 7 of 840 on main before helper thin24, 1 then.
#: Since the wedge points' and pairs' reach is one-sided (session 24, ffn._reach_step): 1e-10
#: 100 / 40 / 0 (MERGES_BEYOND_THE_TWO_SIDED_REACH refused); 1e-9 70 / 70 / 0; 3e-8 144 / 136 / 0;
#: 1e-7 (seeds 20-59) 265 / 15 / 0: none of the 840 off its own bound; below them, 1e-11 120 / 18 / 2
#: (OPEN_MERGE_NARROWER_THAN_THE_PAIRS) and 1e-12 140 / 0 / 0.  With a point between off both planes
#: leaving the kink unconfirmed (MERGES_OFF_BOTH_PLANES_TWICE): 1e-10 103 / 37 / 0, the rest the same.
#: Not a resolution: at other seeds a hostile pass (helper-114, 8,500 targets) found 11 off their
#: bound (9 of them on 191b4f4 too), up to 8.7 times (MERGES_ACROSS_THE_HYPERPLANE).  With d - 1
#: pairs beside a kink (session 25, ``ffn.thin_pairs``): 1e-10 98 / 42 / 0, 1e-9 68 / 72 / 0, 3e-8
#: 143 / 137 / 0, 1e-7 (seeds 20-59) 265 / 15 / 0; of the 31 hostile targets off at some commit, 8
#: still off (23 before), up to 31 times (faithful answers, the search's network: refused since,
#: UNCONFIRMED_UNDER_FAITHFUL; 7 off, up to 1.5 times).
#: Before (821b8ee): 140 of 140 only from 1e-4; 136 at 3e-5, 102 at 1e-5, 31 at 3e-6, 16
#: at 1e-6 (the rest refused): the resolution was ~3e-5 rad, 30 times this angle.
FLOAT64_ANGLE = 2.0**-20


def axis_aligned_triple(e: float, b: float = 0.125) -> tuple[np.ndarray, np.ndarray]:
    """``ReLU(x_0 + x_1)`` beside the zero-sum triple of normals ``(e, 1/8)``, ``(0, -1/8 - b)``,
    ``(-e, b)`` (their sum 0), d = 2: three hyperplanes about e / b rad apart, the middle one
    ``x_1 = 0`` (thorough profile, --hypothesis-seed 252841: e = 2^-23, b = 1/8 and 3/16)."""
    return np.array([[1.0, e, 0.0, -e], [1.0, 0.125, -0.125 - b, b]]), np.ones(4)


#: Axis-aligned triples refused (DegenerateProbeError) on every path before session 24, for every e
#: from 2^-23 to 1e-4 (path seeds 0-2; 1e-3 and 1e-2 answered, the triple rotated by 1e-3 rad
#: answered too): a split point x* on the kink of ``x_1 = 0`` has ``x*_1 = 0`` exactly, and its
#: piece's step along e_1 crossed the next hyperplane, 8 e |x*_0| away, with Euler's relation
#: blind to G_1 there (G_1 = 0.176 between 0.125 and 0.25, an error of 9e-14 claimed); the next x*
#: lay at that piece's own point, bisected to the floor.  Since, the entries Euler's relation is
#: blind to (x_i 0, or 2.2e-16 at b = 3/16) are held to a step backwards
#: (``_PathSearch._blind_entries_hold``): answered within the bound.
AXIS_ALIGNED_TRIPLES = [
    (*axis_aligned_triple(e, b), seed)
    for e in (2.0**-23, 1e-6, 1e-4)
    for b in (0.125, 0.1875)
    for seed in (0, 1)
]


@pytest.mark.parametrize("A, w, seed", AXIS_ALIGNED_TRIPLES)
def test_axis_aligned_triple_answered_within_its_bound(A, w, seed):
    """Answered, four hyperplanes found, within the learner's own bound, every query counted."""
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, A.shape[0])
    assert rec.L == 4
    check_function(rec, A, w, np.random.default_rng(seed))


def test_without_the_blind_entries_check_an_axis_aligned_triple_is_refused(monkeypatch):
    """``_PathSearch._blind_entries_hold`` is what answers AXIS_ALIGNED_TRIPLES: taken away (every
    piece's blind entries trusted), the learner refuses again (the check can fail)."""
    from attnproof.theorems.transformer._path_search import _PathSearch

    monkeypatch.setattr(_PathSearch, "_blind_entries_hold", lambda self, x, y, p: True)
    for A, w, seed in AXIS_ALIGNED_TRIPLES[:4]:
        with pytest.raises(DegenerateProbeError):
            recover_ffn(A, w, seed=seed)


def merge_allowance(A, w):
    """Sum over pairs of target hyperplanes closer than FLOAT64_ANGLE of what merging them can
    change on the unit inf-ball: ``(|c_i| |n_i|_1 + |c_j| |n_j|_1) * distance(n_i, n_j)``.  Still
    needed by the properties (test_ffn_float64_recovers_every_kind, tf_float64_property): a pair
    merged inside the confirmation pair and confirmed by the polish is answered beyond the
    learner's own bound (OPEN_MERGE_NARROWER_THAN_THE_PAIRS: 2 of 140 pair targets at 1e-11 rad,
    none at 1e-12, 1e-10, 1e-9, 3e-8 and 1e-7 on the measured seeds; at other seeds 11 of 8,500 in a
    hostile pass, up to 8.7 times, session 24; since session 25's d - 1 pairs and the points
    beside an unconfirmed kink, 7 of those 31 targets, up to 1.5 times)."""
    _, N, c = canonical_ffn(A, w, rtol=1e-12)
    M = N / np.abs(N).sum(axis=1, keepdims=True) if len(c) else N
    total = 0.0
    for i in range(len(c)):
        for j in range(i):
            dist = min(np.abs(M[i] - M[j]).sum(), np.abs(M[i] + M[j]).sum())
            if dist < FLOAT64_ANGLE:
                total += (abs(c[i]) * np.abs(N[i]).sum() + abs(c[j]) * np.abs(N[j]).sum()) * 2 * dist
    return total


def closer_than_float64(A, w):
    """Two target hyperplanes closer than FLOAT64_ANGLE (``|n_i / |n_i|_1 -+ n_j / |n_j|_1|_1``):
    the learner may refuse them (typed), never answer beyond its bound."""
    _, N, c = canonical_ffn(A, w, rtol=1e-12)
    M = N / np.abs(N).sum(axis=1, keepdims=True) if len(c) else N
    return any(
        min(np.abs(M[i] - M[j]).sum(), np.abs(M[i] + M[j]).sum()) < FLOAT64_ANGLE
        for i in range(len(c)) for j in range(i)
    )


#: Cancellation a float64 target may have (see cancels_beyond_float64): the learner's rounding
#: model admits answers off by float64 tol_ulps = 2^10 eps relative (TUNING), no more.
FLOAT64_CANCELLATION = 2.0**10


def cancels_beyond_float64(A, w):
    """Units that cancel each other leave f far below its units: the float64 oracle's answers
    carry an absolute rounding of about ``eps sum_k |w_k| |A_k^T x|`` (each unit rounded, then
    summed), so their relative error is eps times the cancellation ratio
    ``kappa = sum_k |w_k| |A_k|_1 / (|u|_1 / 2 + sum_j |c_j| |n_j|_1 / 2)`` (units over the
    canonical form's size).  The learner's tolerances model answers off by at most tol_ulps eps
    = 2^10 eps relative: beyond ``kappa = 2^10`` a target is outside that model and may be refused
    (e.g. -ReLU(z) + ReLU(z) + 2e-12 ReLU(x_1 + x_2): kappa 5e11; -0.99999 ReLU(x) + 0.5 ReLU(2 x):
    kappa 2e5).  Such a target's tiny part may be noise in every answer (a 2.2e-16 unit beside a
    zero-sum triple: no linear region, DegenerateProbeError) or absorbed by the units' rounding
    (an 8e-72 unit beside -ReLU(z) - ReLU(z) + ReLU(2 z): every answer 0, NonIdentifiableError)."""
    u, N, c = canonical_ffn(A, w, rtol=1e-12)
    size = 0.5 * (np.abs(u).sum() + np.abs(c) @ np.abs(N).sum(axis=1))
    units = np.abs(w) @ np.abs(A).sum(axis=0)
    return bool(units > FLOAT64_CANCELLATION * size)


def solve_exactly(M: list[list[Fraction]], b: list[Fraction]) -> list[Fraction] | None:
    """The solution of the square system ``M x = b`` in rationals (Gaussian elimination), or None
    when M is singular."""
    n = len(M)
    R = [list(row) + [rhs] for row, rhs in zip(M, b)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if R[r][col] != 0), None)
        if pivot is None:
            return None
        R[col], R[pivot] = R[pivot], R[col]
        for r in range(n):
            if r != col and R[r][col] != 0:
                factor = R[r][col] / R[col][col]
                R[r] = [x - factor * y for x, y in zip(R[r], R[col])]
    return [R[r][n] / R[r][r] for r in range(n)]


def sup_on_the_ball(A, w):
    """``sup_{|x|_inf <= 1} |f(x)|`` for ``f = w^T ReLU(A^T x)``, exactly (rationals of the float
    entries): f is linear on each cell of the hyperplanes ``a_k^T x = 0`` within the cube, so |f|
    peaks at a vertex of a cell, where d independent constraints among ``a_k^T x = 0`` and
    ``x_i = +-1`` are active (a face among them: at x = 0, f = 0)."""
    d = A.shape[0]
    units = [k for k in range(A.shape[1]) if w[k] and np.any(A[:, k])]
    a = [[Fraction(float(t)) for t in A[:, k]] for k in units]
    wf = [Fraction(float(w[k])) for k in units]
    faces = [([Fraction(int(i == j)) for j in range(d)], Fraction(s)) for i in range(d) for s in (1, -1)]
    rows = [(row, Fraction(0)) for row in a] + faces
    best = Fraction(0)
    for combo in combinations(range(len(rows)), d):
        if all(r < len(a) for r in combo):
            continue
        x = solve_exactly([rows[r][0] for r in combo], [rows[r][1] for r in combo])
        if x is None or max(abs(t) for t in x) > 1:
            continue
        f = sum((wk * max(sum(p * q for p, q in zip(ak, x)), Fraction(0)) for ak, wk in zip(a, wf)),
                Fraction(0))
        best = max(best, abs(f))
    return best


@given(tst.ffn_targets(max_d=3, max_m=4), seeds)
def test_sup_on_the_ball_is_the_sup(target, seed):
    """The test's own exact sup: at least |f| (exact rationals) at random points and the cube's
    vertices, at most the canonical form's bound ``|u|_1 / 2 + sum_i |c_i| |n_i|_1 / 2``."""
    A, w = target[0], target[1]
    sup = sup_on_the_ball(A, w)
    X = np.random.default_rng(seed).uniform(-1, 1, (16, A.shape[0]))
    for x in np.concatenate([X, np.sign(X)]):
        x = [Fraction(float(t)) for t in x]
        f = sum(Fraction(float(w[j])) * max(sum(Fraction(float(a)) * t for a, t in zip(A[:, j], x)), 0)
                for j in range(len(w)))
        assert abs(f) <= sup
    u, N, c = canonical_ffn(A, w, SYMPY)
    assert sup <= (sum(abs(t) for t in u) + sum(abs(c[i]) * sum(map(abs, N[i])) for i in range(len(c)))) / 2


def below_units_rounding(A, w):
    """``sup_{|x|_inf <= 1} |f|`` (exactly: :func:`sup_on_the_ball`) within the naive declaration's
    rounding of the units, ``2^-43 sum_j |w_j| |a_j|_1``: answers the declared model cannot tell
    from those of f = 0.  (Bounded above through the canonical form before, ``|u|_1 / 2 + sum_i
    |c_i| |n_i|_1 / 2``, 1.0 for -ReLU(x_1) + ReLU(1e-13 x_0 + (1 + 1e-13) x_1), whose sup is
    2e-13 against the units' 2.3e-13: learn_ffn's NonIdentifiableError there failed
    test_near_parallel_hyperplanes_typed_error_or_right, thorough profile, --hypothesis-seed
    330177, the same on b9bdfa0; helper merge23.)"""
    units = sum(abs(float(w[j])) * float(np.abs(A[:, j]).sum()) for j in range(len(w)))
    return float(sup_on_the_ball(A, w)) <= 2.0**-43 * units


def is_zero_function(A, w):
    """f == 0 exactly: its canonical form (exact rationals) has u = 0 and no hyperplane."""
    u, N, _ = canonical_ffn(A, w, SYMPY)
    return N.shape[0] == 0 and all(SYMPY.is_zero(t) for t in u)


@given(tst.ffn_targets(), seeds)
# zero-sum triple (thorough profile, seed 9748): a confirmed kink with three kinks between it and
# the segment's end whose jumps cancel there, invisible on the path: 1 hyperplane of 4 (error
# 0.3 |x|); now a check point off the path contradicts f_hat and a path through it finds them
@example((np.array([[1.0, -0.5, -1.0, -1.5], [0.0, 1.0, 1.0, 2.0]]), np.array([1.0, -1.0, -1.0, 1.0]),
          "zero_sum"), 0)
# zero-sum triple (thorough profile, seed 48151): its error region is 28 % of the directions, and
# all 4 check points missed it (1 hyperplane of 4, error 1.2); 16 check points find it
@example((np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 2.0]]), np.array([1.0, -1.0, -1.0, 1.0]),
          "zero_sum"), 150)
@example((np.array([[2.22507386e-313]]), np.array([2.22507386e-313]), "generic"), 0)  # f rounds to 0
@example((np.array([[1.0]]), np.array([2.22507386e-313]), "generic"), 0)  # subnormal answers
# tiny zero-sum triple next to a unit one: its kinks (1e-175) are below the bound, invisible
@example(
    (
        np.array(
            [
                [-1.0, 0.0, 2.47899471e-175, -2.47899471e-175],
                [-1.0, 2.47899471e-175, 2.47899471e-175, -4.95798941e-175],
            ]
        ),
        np.array([1.0, 1.0, 1.0, 1.0]),
        "zero_sum",
    ),
    3568579821,
)
@example((np.array([[0.34375], [0.34375]]), np.array([-1.0]), "generic"), 0)  # oracle rounding at f = 0
@example((np.array([[1.0]]), np.array([0.3125]), "generic"), 0)  # d = 1: the path crosses {0} at 0
@example((np.array([[1e-300], [1.0]]), np.array([-1.0]), "generic"), 0)  # f = 4e-301 at a kink: normal
@example((np.array([[1.0, 2.0]]), np.array([-1.0, 0.5]), "parallel"), 0)  # -ReLU(x) + ReLU(2x) / 2 == 0
# two hyperplanes at angle 1.2e-7 ("generic" draws found by the thorough profile)
@example((np.array([[1.0, 1.0], [-1.1920929e-07, 0.0], [0.0, 0.0], [0.0, 0.0]]),
          np.array([1.0, 1.0]), "generic"), 0)
@example((np.array([[1.5625e-02, 0.0, 1.0, 0.0], [0.0, 0.0, 1.1920929e-07, 0.0], [0.0, 1.0, 0.0, 0.0]]),
          np.array([1.0, 1.0, 1.0, 1.0]), "generic"), 1)
# a 1e-8 unit beside a unit one (thorough profile, seed 777001; a strict xfail before): the path
# crosses both hyperplanes 0.0027 apart, and the pair x* +- y confirmed them as one kink (the sum
# of their jumps): a silent error of 1e-8 |x|; the points on each recovered hyperplane off the
# path, or the polish's tighter bound, now contradict it, and a further path separates them
@example((np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]), np.array([-1.0, 1e-8]), "generic"), 340)
# A = [[1, 1], [0, 1]], w = [1, 1e-8] (issue 23 item 7; a strict xfail before): bisection to the
# floor (DegenerateProbeError), a refusal of a good answer: a confirmation pair that would reach
# too far now opens a piece nearer the kink instead
@example((np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([1.0, 1e-8]), "generic"), 0)
# zero-sum triples (thorough profile, seeds 48151 and others; strict xfails before): f is 0 on a
# region up to the oracle's rounding of the cancelling units, and its gradient there, measured
# from that rounding (4e-14), claimed an error of 1e-23 (relative to answers that are all noise):
# the piece's prediction refused its own kink, no gradient at 3 points of an interval or at a
# random end (DegenerateProbeError on every path); such a gradient now carries the units' rounding
@example((np.array([[1.0, -0.75, -0.875, -0.3125], [0.0, 0.0, 0.25, -0.125]]),
          np.array([1.0, -1.0, 0.5, 1.0]), "zero_sum"), 20924)
@example((np.array([[1.0, 0.0, -0.667633, -0.44856592], [0.0, -0.667633, -0.667633, -0.89713185]]),
          np.array([1.0, -0.671875, -0.671875, 1.0]), "zero_sum"), 22)
@example((np.array([[1.0, -0.625, -0.625, -0.9375], [0.0, -0.625, -0.625, -0.9375]]),
          np.array([1.0, -0.75, -0.75, 1.0]), "zero_sum"), 10)
# a zero-sum group at d = 5 (thorough profile, --hypothesis-seed 5077; a strict xfail before): f is
# 0 up to its units' rounding on the half-space of every end met first, whose Euler check then had
# a tolerance of 0: no gradient at a random end (DegenerateProbeError on every attempt); an end
# refused before another end met the units' gradient is measured again after them
@example((np.array([[0.0, 1.0, 1.0, 0.75]] + [[-1.0, 1.0, 1.0, 0.75]] * 4), np.array([1.0, -1.0, 0.25, 1.0]),
          "zero_sum"), 0)
# a 2.2e-16 unit beside a zero-sum triple (thorough profile, --hypothesis-seed 91127; a strict xfail
# before, taken for a refusal of a good answer): the triple cancels to its rounding, ~eps |units| |x|,
# 8 times the tiny unit itself, so the answers have no linear region (DegenerateProbeError); 53 bits
# of cancellation, beyond the rounding model (premise: cancels_beyond_float64)
@example((np.array([[1.0, 1.0, 1.0, 2.0], [0.0, 1.0, 1.0, 2.0]]), np.array([2.22044605e-16, -1.0, -1.0, 1.0]),
          "zero_sum"), 3030)
# two 1e-8 units beside a unit one (thorough profile, --hypothesis-seed 73105; a regression of the
# units'-rounding error above, never on main): their region's gradient, measured with a step cut to
# 2^-26 |x|, was taken for the units' rounding (error 2e-5): refused; it passes Euler's relation to
# the relative model, and keeps its relative error
@example((np.array([[0.5, -1.0, -1.0], [-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]]),
          np.array([1.0, 1e-8, 1e-8]), "generic"), 0)
# -ReLU(x_1) + ReLU(x_1) beside a 2.7e-152 unit (a strict xfail of OPEN_FLOAT, which asked for an
# answer: u off by 2.7e-152, above the a-posteriori bound 4e-161, SILENTLY, when it was filed): the
# oracle sums the tiny unit into -ReLU(x_1) first and loses it wherever x_1 > 0 (answers 0 there,
# 5.4e-152 at (-1, 3)): its answers are no bias-free ReLU FFN
# (premise: cancels_beyond_float64); refused now (DegenerateProbeError, bisection to the floor),
# as the property allows such a target, and as its branch point (2ef56a5) already did
@example((np.array([[1.0, 1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0, 0.0]]),
          np.array([2.71662267e-152, 0.0, -1.0, -1.0, 1.0]), "zero_sum"), 41)
# two parallel units on (1, 1) (thorough profile, --hypothesis-seed 4108 on test_transformer_float64;
# a regression of this branch's jump to the smallest step, never on main): x* 1e-13 off the
# hyperplane, whose steps at 2^-26 |x| crossed it and passed Euler's check (it holds for any mix of
# the two sides' gradients on a hyperplane): every x* opened there was the same point, to max_steps
# (DegenerateProbeError); a jumped gradient is now kept only when the steps backwards agree
@example((np.array([[-0.4430591334161894, -1.3291774002485681], [-0.4430591334161894, -1.3291774002485681]]),
          np.array([-1.0, -1.0]), "parallel"), 1857577731)
# two 8.4e-229 units (thorough profile, --hypothesis-seed 930117; a regression of _PathSearch._mixes,
# never on main): its J^T J underflowed to 0 (ZeroDivisionError); lambda is now read from J scaled
# to |J|_inf = 1
@example((np.array([[1.0, 1.0], [0.5, 0.0]]), np.array([8.44664095e-229, 8.44664095e-229]), "generic"), 0)
# a 2.8e-4 unit 5.2e-7 rad from a 4.7e-3 one (L1 distance 1.05e-6, just above FLOAT64_ANGLE) beside a
# zero-sum triple, d = 4 (thorough profile, --hypothesis-seed 7391; a regression of helper tfunion's
# deeper bisection, never on main): the polish found a point between the pair, its gradient measured
# there, and the (A + B) charge, refused in d > 2 then (inf), refused every attempt; charged now
# (1.4e-9, the error 4.8e-12)
@example((np.array([[2.06751461e-002, -2.27558548e-001, 6.07969629e-227, -1.35300952e-002, -6.12709118e-011,
                     -6.06534430e-096, 0.2, 0.2, -0.4],
                    [6.02713369e-001, -1.19209290e-007, 0.0, 0.0, 0.0, 0.0, 0.2, 0.2, -0.4],
                    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.2, 0.2, -0.4],
                    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.2, 0.2, -0.4]]),
          np.array([0.02067515] * 6 + [1.0, 1.0, 1.0]), "zero_sum"), 5)
# an axis-aligned zero-sum triple, refused before (see test_transformer_float64's)
@example((AXIS_ALIGNED_TRIPLES[0][0], AXIS_ALIGNED_TRIPLES[0][1], "zero_sum"), 0)
def test_ffn_float64_recovers_every_kind(target, seed):
    """Recovered to the a-posteriori bound; typed errors only for targets beyond float64:
    near-subnormal weights, units cancelling beyond the rounding model (cancels_beyond_float64,
    as for learn_transformer), f == 0, or hyperplanes closer than FLOAT64_ANGLE (which may also
    be merged, within the derived merge allowance: still needed,
    OPEN_MERGE_NARROWER_THAN_THE_PAIRS)."""
    A, w, _kind = target
    close = closer_than_float64(A, w)
    try:
        rec, oracle = recover_ffn(A, w, seed=seed)
    except (PrecisionLossError, NonIdentifiableError, DegenerateProbeError) as err:
        zero = isinstance(err, NonIdentifiableError) and is_zero_function(A, w)
        outside = beyond_float64(A, w) or cancels_beyond_float64(A, w)
        assert outside or zero or (close and not isinstance(err, NonIdentifiableError))
        return
    check_count(rec, oracle, A.shape[0])
    check_function(rec, A, w, np.random.default_rng(seed), merge_allowance(A, w))
    if not close:
        check_canonical(rec, A, w)


def pair_target(d: int, seed: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """A unit on a random unit normal n, one on n turned by ``theta`` radians (norm 0.5-2), and 0..d
    random units beside them; output weights of random sign and magnitude 0.5-1.5."""
    rng = np.random.default_rng(1000 * d + seed)
    n = rng.standard_normal(d)
    n /= np.linalg.norm(n)
    t = rng.standard_normal(d)
    t -= (t @ n) * n
    t /= np.linalg.norm(t)
    others = rng.standard_normal((d, int(rng.integers(0, d + 1))))
    A = np.column_stack([n, (np.cos(theta) * n + np.sin(theta) * t) * rng.uniform(0.5, 2.0), others])
    w = rng.choice([-1.0, 1.0], size=A.shape[1]) * rng.uniform(0.5, 1.5, size=A.shape[1])
    return A, w


@pytest.mark.parametrize("theta", [1e-5, 1e-6])
@pytest.mark.parametrize("d", range(2, 9))
def test_unit_pairs_at_the_resolution_are_answered(d, theta):
    """Issue 23 item 7: pairs of unit hyperplanes 1e-5 and 1e-6 radians apart (1e-6: 1-2 times
    FLOAT64_ANGLE in L1 distance) were refused at 10 and 29 of these 35 targets (seeds 0-4): now
    every one is answered within its own bound (a merge allowance added for pairs closer than
    FLOAT64_ANGLE before helper tfunion), every query counted (helper openfloat; the measured
    table at FLOAT64_ANGLE)."""
    for seed in range(5):
        A, w = pair_target(d, seed, theta)
        rec, oracle = recover_ffn(A, w, seed=seed)
        check_count(rec, oracle, d)
        check_function(rec, A, w, np.random.default_rng(seed))


#: The two pair targets at 1e-7 rad (d, seed) answered beyond their own bound before helper tfunion
#: (5.5e-8 |x| against 3.3e-9; 8.6e-8 against 4.3e-8): the search merged the pair (opposite
#: convexities: f_hat on the wrong plane between x* and the nearer kink, ~3e-7 of the path), the
#: polish's confirmation saw it ("in_a", "in_b") and its 12-step bisection stopped 2^-12 short of
#: the region between them, so the search's network stood uncharged; and, found, its (A + B) charge
#: holds in d = 2 only (8.6e-8 against a charged 6.4e-8 at d = 7).
PAIRS_BEYOND_THEIR_BOUND = [(6, 4), (7, 6)]


@pytest.mark.parametrize("d, seed", PAIRS_BEYOND_THEIR_BOUND + [(d, 0) for d in range(2, 9)])
def test_unit_pairs_below_the_resolution_within_their_bound_or_refused(d, seed):
    """Issue 23: pairs of unit hyperplanes 1e-7 radians apart (below FLOAT64_ANGLE) are answered
    within the learner's own bound, every query counted, or refused (typed); never beyond it."""
    A, w = pair_target(d, seed, 1e-7)
    try:
        rec, oracle = recover_ffn(A, w, seed=seed)
    except (PrecisionLossError, DegenerateProbeError):
        return
    check_count(rec, oracle, d)
    check_function(rec, A, w, np.random.default_rng(seed))


def test_error_bound_formula_on_fixed_input():
    """The a-posteriori bound, pinned by hand (issue 22 item 5: a dropped factor must fail):
    d = 3, end gradients (1/2, 0, 0) with errors 1e-10 and 2e-10, one kink J = e_2 crossed along
    e_2 with error 3e-10, 4e-10 of jumps taken for none.  Then u = e_1, N = [e_2], c = [1], the
    size |u|_1 / 2 + |c| |n|_1 / 2 = 1, and the bound is d/2 (1 + 2 + 3) 1e-10 + 4e-10 / 2 +
    size eps 4 (L + 1) = 9e-10 + 2e-10 + 8 eps."""
    from types import SimpleNamespace

    from attnproof.theorems.transformer._path_search import _Piece
    from attnproof.theorems.transformer.ffn import _assemble

    G, e2 = np.array([0.5, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    search = SimpleNamespace(arith=FLOAT64, d=3, steps=0, rho=2.0**-30, paths=1, hidden=4e-10,
                             ends=(np.ones(3), -np.ones(3)))
    pU, pW = _Piece(np.ones(3), 0.5, G, 1e-10), _Piece(-np.ones(3), -0.5, G, 2e-10)
    rec = _assemble(search, pU, pW, [(e2, e2, 3e-10)])
    assert np.array_equal(rec.u, [1.0, 0.0, 0.0]) and np.array_equal(rec.N, [e2])
    assert np.array_equal(rec.c, [1.0])
    assert rec.diagnostics["error_bound"] == pytest.approx(9e-10 + 2e-10 + 8 * EPS, rel=1e-12, abs=0)


def test_rounding_model_on_fixed_input():
    """The search's rounding model, pinned by hand (issue 22 item 5): an answer may carry
    ``answer_noise`` = tol_ulps unit roundoffs relative (float64 2^10 2^-53 = 2^-43; mp:8 2^6 2^-30
    = 2^-24; sympy 0); a piece's gradient from answers y at x0 + h e_i and y0 at x0 is within
    ``noise 2 (|G|.|x0| + |y0| + max|y|) / h + u max_i |G_i| (|x0_i| / h + 2)`` per entry (the
    query point x0_i + h rounded, the subtraction), and values near x agree to
    ``noise (sum |values| + gscale |x|_1 + |G|.|x|) + err |x|_1``.  With G = (1, -2),
    x0 = (1, 1/2), y = (5/4, -1/2), y0 = 1/4, h = 1/4: 2^-43 2 (2 + 1/4 + 5/4) / (1/4)
    + 2^-53 max(1 (4 + 2), 2 (2 + 2)) = 28 2^-43 + 2^-50; tol(x0, 1/2, G, err = 2^-10)
    = 2^-43 (1/2 + 2) + 2^-10 3/2."""
    from attnproof.measure import Session
    from attnproof.theorems.transformer._path_search import _PathSearch, answer_noise

    assert answer_noise(FLOAT64) == 2.0**-43 and answer_noise(MP(8)) == 2.0**-24 and answer_noise(SYMPY) == 0
    search = _PathSearch(Session(ValueOracle(ReluFFN(np.eye(2), np.ones(2))), FLOAT64), np.ones(2), 0.0, 1)
    G, x0 = np.array([1.0, -2.0]), np.array([1.0, 0.5])
    err = search._gradient_error(G, x0, np.array([1.25, -0.5]), 0.25, 0.25)
    assert err == 28 * 2.0**-43 + 2.0**-50
    assert search.tol(x0, 0.5, G=G, err=2.0**-10) == 2.0**-43 * 2.5 + 2.0**-10 * 1.5


def test_ffn_query_ledger_explains_every_extra_query():
    """Generic position: L + 1 regions of d + 1 queries, 3 per kink, 4 for the scale checks;
    every query beyond that is a check point, a retried step, a point met inside a known region
    or a repeated confirmation pair, and the ledger says which."""
    rng = np.random.default_rng(4)
    d, m = 6, 5
    A, w = rng.standard_normal((d, m)), rng.standard_normal(m)
    rec, oracle = recover_ffn(A, w, seed=1)
    check_count(rec, oracle, d)
    ledger, L = rec.diagnostics["ledger"], rec.L
    assert L == 5 and rec.diagnostics["queries_formula"] == 6 * 7 + 15 + 4
    assert rec.diagnostics["reasked_queries"] == (
        d * (ledger["pieces"] + ledger["retries"] - (L + 1))
        + ledger["values"]
        - (2 * L + 5)
        + 2 * (ledger["pairs"] - L)
        + ledger["checks"]
        + ledger["planes"]
    )


@pytest.mark.parametrize("d, m, seed", [
    (4, 16, 0),
    # (a strict xfail before) since s* is where the pieces' predictions meet (helper benchref): the
    # search's steps and ledger unchanged, its pieces opened 1e-13 |x| elsewhere, the polish's
    # centres moved with the hyperplanes and its naive answers' rounding (2^-43) with them: 46.43 ->
    # 44.73 bits, within the bound (1.8e-13 against 2.3e-9); on the 45 naive bench targets bits
    # moved -1.70 .. +1.63, mean +0.04: 45 bits was where the naive rounding fell, not a bound.
    # Fixed by margin, not luck (issue 21 item 3): each inner region's gradient refitted by least
    # squares to every answer seen in it, no query, entry by entry where that bounds it tighter
    # (ffn._refitted): 44.73 -> 47.44 bits, the bound 3.0e-9 -> 2.4e-9; on the bench's 90 targets
    # min bits 44.73 -> 46.21 naive, 46.82 -> 47.06 faithful, every bound at most the old one
    (4, 16, 1),
    (8, 8, 0), (8, 8, 1), (16, 4, 0), (16, 4, 1),
])
def test_polish_recovers_45_bits_within_the_bound(d, m, seed):
    """Issue 21 item 3: each of the path's L + 1 regions re-measured at its centre (d + 1 counted
    queries a region) takes the relative error from 2^-33..2^-42 to 2^-45 or less (random
    targets, d, m <= 16; the bench's ``bits``), within the a-posteriori bound, which shrinks."""
    from attnproof.theorems.transformer.runner import run_ffn

    row = run_ffn(d, m=m, seed=seed)
    ledger, L = row["diagnostics"]["ledger"], row["L"]
    assert ledger["polished"] == L + 1
    assert row["bits"] >= 45, (d, m, seed, row["bits"])
    assert row["err_W"] <= row["error_bound"] < row["diagnostics"]["unpolished_bound"]
    assert row["queries"] == row["queries_formula"] + row["reasked_queries"]


def test_polish_refit_to_each_regions_answers_gains_bits(monkeypatch):
    """Issue 21 item 3: the refit of each inner region's gradient to every answer seen in it
    (``ffn._refitted``, least squares, no query) is what lifts d = 4, m = 16, seed 1 (naive) well
    above 45 bits: without it (the polished pieces as measured) the same queries give 2.7 bits
    less (44.73 against 47.44 measured), both within their bounds."""
    from attnproof.theorems.transformer import ffn
    from attnproof.theorems.transformer.runner import run_ffn

    row = run_ffn(4, m=16, seed=1)
    monkeypatch.setattr(ffn, "_refitted", lambda search, pieces: pieces)
    plain = run_ffn(4, m=16, seed=1)
    assert row["queries"] == plain["queries"]
    assert row["bits"] >= plain["bits"] + 1, (row["bits"], plain["bits"])
    for r in (row, plain):
        assert r["err_W"] <= r["error_bound"]


def test_the_exact_searchs_wedge_probes_are_designed_queries_not_re_asks():
    """The exact search's probes of an interval before it is dropped as kink-free
    (``ledger["wedges"]``) are planned queries: the row reports them among ``designed_queries``,
    so the CLI's line does not call them re-asks (on this target every extra is designed)."""
    row = run_ffn(2, arith="sympy", seed=0)
    ledger = row["diagnostics"]["ledger"]
    assert ledger["wedges"] > 0
    assert row["designed_queries"] == row["queries"] - row["queries_formula"]


def test_polish_off_asks_d_plus_1_fewer_queries_a_region():
    """``polish=False``: the search's network, with the same hyperplanes, (L + 1)(d + 1) queries
    fewer (the re-measured regions) and (3 + 2 (d - 1) + 2 thin_pairs(d)) L fewer (the polish's
    confirmation of each kink: its triple, its wedge points and the pairs of
    ffn._thin_wedge_contradiction), a larger bound."""
    from attnproof.theorems.transformer.ffn import thin_pairs

    rng = np.random.default_rng(5)
    A, w = rng.standard_normal((5, 4)), rng.standard_normal(4)
    on, _ = recover_ffn(A, w, seed=2)
    off = learn_ffn(ValueOracle(ReluFFN(A, w)), rng=np.random.default_rng(2), polish=False)
    assert off.L == on.L == 4 and off.diagnostics["ledger"]["polished"] == 0
    confirmed = (3 + 2 * (5 - 1) + 2 * thin_pairs(5)) * on.L
    assert off.diagnostics["ledger"]["confirmed"] == 0 and on.diagnostics["ledger"]["confirmed"] == confirmed
    assert on.queries - off.queries == (on.L + 1) * (5 + 1) + confirmed
    assert on.diagnostics["error_bound"] < off.diagnostics["error_bound"]
    assert off.diagnostics["error_bound"] == on.diagnostics["unpolished_bound"]


def test_path_regions_and_centres():
    """The regions of a path U -> V -> -U in order (one hyperplane flips between neighbours), and
    a centre in each whose margin keeps every axis step of the polish inside its region."""
    from attnproof.theorems.transformer.ffn import path_regions, region_centre

    rng = np.random.default_rng(3)
    N = rng.standard_normal((6, 4))
    U, V = rng.standard_normal(4), rng.standard_normal(4)
    regions = path_regions(N, (U, V, -U))
    assert len(regions) == 7
    assert np.array_equal(regions[0][0], np.sign(N @ U)) and np.array_equal(regions[-1][0], -np.sign(N @ U))
    for (s0, _), (s1, _) in zip(regions[:-1], regions[1:]):
        assert np.sum(s0 != s1) == 1
    for sigma, x in regions:
        c, t = region_centre(sigma[:, None] * N, x)
        assert t > 0 and np.abs(c).max() < 1
        steps = c[None, :] + 0.99 * t * np.concatenate([np.eye(4), -np.eye(4)])
        assert np.all(np.sign(steps @ N.T) == sigma)
        assert t >= (sigma * (N @ x) / np.abs(N).max(axis=1)).min() / np.abs(x).max()  # deeper than x


def test_check_points_are_evenly_spaced_in_angle():
    """The k-th check point of a segment a -> b sits at (k + 1/2) / checks of the angle from a to b
    (whatever |a| / |b|); (anti)parallel ends (d = 1) keep the even spacing in t."""
    from attnproof.theorems.transformer.ffn import check_parameters

    a, b = np.array([2.04091912, -2.55566503, 0.3]), np.array([0.41809885, -0.56776961, -0.1])
    alpha = np.arccos(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    for t, k in zip(check_parameters(a, b, 8), range(8)):
        x = a + t * (b - a)
        angle = np.arccos(a @ x / np.linalg.norm(a) / np.linalg.norm(x))
        assert angle == pytest.approx((k + 0.5) / 8 * alpha)
    assert check_parameters(np.array([1.0]), np.array([-3.0]), 4) == [0.125, 0.375, 0.625, 0.875]


# --- exact: sympy and mpmath ------------------------------------------------------------

#: learn_ffn's resolution in exact arithmetic (its Notes): a zero-sum group of kinks the path crosses
#: within this angle (radians) may be missed, a wider one is found.
WEDGE = 2.0 ** -TUNING["sympy"].wedge_log2


def narrowest_zero_sum_run(A, w, path):
    """The smallest angle (radians, seen from 0) between the first and last kink of a run of
    kinks consecutive on one segment of ``path`` (U, V, -U: learn_ffn's ``diagnostics["path"]``)
    whose jumps sum to zero, exactly; inf without one.  The jump of ``c_j |n_j^T x| / 2`` crossed
    along ``dir`` is ``c_j sign(n_j^T dir) n_j`` (``sec4.1/canonical-from-jumps``)."""
    _, N, c = canonical_ffn(A, w, SYMPY)
    ends = [SYMPY.asarray(np.asarray(e, dtype=float)) for e in path]
    narrowest = np.inf
    for a, b in zip(ends[:-1], ends[1:]):
        crossings = []
        for n, cj in zip(N, c):
            na, nb = n @ a, n @ b
            if (na > 0) != (nb > 0) and na != 0 and nb != 0:
                t = na / (na - nb)
                sign = 1 if n @ (b - a) > 0 else -1
                crossings.append((float(t), SYMPY.to_float(a + t * (b - a)), cj * sign * n))
        crossings.sort(key=lambda row: row[0])
        sums = [np.zeros(len(a), dtype=object)]
        for _, _, J in crossings:
            sums.append(sums[-1] + J)
        for i in range(len(crossings)):
            for k in range(i + 1, len(crossings)):
                if all(SYMPY.is_zero(v) for v in sums[k + 1] - sums[i]):
                    x, y = crossings[i][1], crossings[k][1]
                    cos = float(x @ y) / float(np.linalg.norm(x) * np.linalg.norm(y))
                    narrowest = min(narrowest, float(np.arccos(np.clip(cos, -1.0, 1.0))))
    return narrowest


@given(tst.ffn_targets(max_d=3, max_m=3, exact=True), st.integers(0, 3))
# zero-sum units with a cancelling antiparallel twin: the first intersection x* lay on a third
# hyperplane (u = 0: G_{-U} = -G_U); "never test a point twice" then skipped x* between the two
# pieces whose planes truly meet there, and bisection ran to the floor on every path (refused;
# before: 1 hyperplane of 4); now a point is tested again between other pieces
@example((np.array([[-3.0, -3.0, -1.0, 0.0, 1.5], [-3.0, -3.0, 3.0, 3.0, -9.0], [-3.0, -3.0, 0.0, 0.0, 0.0]]),
          np.array([-1.0, 1.0, 1.5, 1.5, 1.0]), "zero_sum"), 2)
# zero-sum triple (thorough profile, seed 48151): 1 hyperplane of 4 with 4 check points; 16 find it
@example((np.array([[4.0, -2.0, -1.0, -7.0], [1.0, 2.0, 2.0, 6.0]]), np.array([2.0, -4.0, 1.0, 1.0]),
          "zero_sum"), 2)
@example((np.array([[1.0, 2.0]]), np.array([2.0, -1.0]), "parallel"), 0)  # == 0 (thorough profile)
# a SILENT wrong answer (thorough profile, seed 31337; a strict xfail before): 1 hyperplane of 4.
# V ~ 0.2 U, so the segment V -> -U passes near 0 and crosses all 4 hyperplanes within t in
# [0.170, 0.177]: the zero-sum group of 3 lay between two of the 16 check points evenly spaced
# in t; they are now evenly spaced in angle (check_parameters), and one contradicts f_hat
@example((np.array([[-3.0, -1.5, -2.0, -5.0], [3.0, 1.0, 0.5, 0.0]]), np.array([-2.0, 2.0, -4.0, 1.0]),
          "zero_sum"), 3)
# zero-sum triples (thorough profile, seeds 48151, 31415, 5077; strict xfails before): the
# intersection x* of the lines of two pieces separated by two kinks of a zero-sum triple lies
# exactly on the third hyperplane (their jump is -2 times the third's); the piece opened there has
# that hyperplane through its own point, so its kink with the next piece sits at the interval's
# end, outside the open interval then searched: bisection to the floor on every path
# (DegenerateProbeError); the kink is now sought on the closed interval
@example((np.array([[4.0, 0.0, 4.0, -4.0], [0.0, 4.0, 4.0, -8.0]]), np.array([-4.0, 1.0, 1.0, 1.0]),
          "zero_sum"), 1)
@example((np.array([[1.0, 1.0, 0.0, 1.0], [3.0, 1.0, 1.0, 2.0]]), np.array([4.0, -1.0, -1.0, 1.0]),
          "zero_sum"), 0)
@example((np.array([[-2.0, 2.0, 0.0, -1.0, 3.0], [3.0, -4.0, 4.0, -4.0, 4.0]]),
          np.array([2.0, 1.0, 2.0, 3.0, 1.0]), "zero_sum"), 1)
@example((np.array([[1.0, 0.0, 4.0, -2.0], [0.0, -1.0, 1.0, 0.5]]), np.array([-1.0, 1.0, 0.5, 1.0]),
          "zero_sum"), 0)
def test_ffn_sympy_is_exact(target, seed):
    sympy_case(target, seed, assume)


def inside_contract(ok: bool) -> None:
    """The premise of a pinned case: inside learn_ffn's exact contract."""
    assert ok, "the path crosses a zero-sum run within WEDGE: outside learn_ffn's exact contract"


def sympy_case(target, seed, premise) -> None:
    """learn_ffn in sympy returns f's canonical form exactly, every query counted, when its path
    crosses no zero-sum run within WEDGE (``premise``: Hypothesis's assume, or inside_contract)."""
    A, w, _kind = target
    if is_zero_function(A, w):  # e.g. 2 ReLU(x) - ReLU(2 x): merged parallel units cancel
        with pytest.raises(NonIdentifiableError):
            recover_ffn(A, w, SYMPY, seed)
        return
    rec, oracle = recover_ffn(A, w, SYMPY, seed)
    check_count(rec, oracle, A.shape[0])
    # the contract (learn_ffn's Notes): exact unless its path crosses a zero-sum run within WEDGE
    premise(narrowest_zero_sum_run(A, w, rec.diagnostics["path"]) > WEDGE)
    u, N, c = canonical_ffn(A, w, SYMPY)
    assert rec.N.shape == N.shape
    assert all(
        SYMPY.is_zero(a - b)
        for a, b in zip(np.concatenate([rec.u, rec.N.ravel(), rec.c]), np.concatenate([u, N.ravel(), c]))
    )


def test_mpmath_error_falls_like_ten_to_minus_dps():
    """d = 8, m = 12: the error of (u, N, c) against the canonical form follows 10^-dps."""
    rng = np.random.default_rng(12)
    A, w = rng.standard_normal((8, 12)), rng.standard_normal(12)
    for dps in (30, 60):
        arith = MP(dps)
        rec, oracle = recover_ffn(A, w, arith, seed=3)
        check_count(rec, oracle, 8)
        u, N, c = canonical_ffn(A, w, arith)
        with arith.context():
            err = max(abs(x) for x in np.concatenate([rec.u - u, (rec.N - N).ravel(), rec.c - c]))
        assert rec.L == 12
        assert err <= rec.diagnostics["error_bound"] <= 10.0 ** (-dps + 12)


def sphere_vertices(normals: np.ndarray) -> np.ndarray:
    """The vertices of the arrangement of the hyperplanes ``n^T x = 0`` (rows of ``normals``) on
    the unit inf-sphere: points of a facet ``x_i = +-1`` where d - 1 further independent equalities
    hold among the hyperplanes and the other facets (float64).

    ``f_hat - f`` is linear on each cell of the arrangement of f's and f_hat's hyperplanes, so its
    largest magnitude on a facet's piece of a cell (a polytope) is at one of its vertices: the
    maximum over these points is the sup over the unit inf-sphere, however thin a cell (random
    points miss a wedge 1e-3 radians wide: three mpmath answers up to 4.9 times over their bound
    at 7-8 digits passed on 300 of them, helper lowprec)."""
    d = normals.shape[1]
    eye = np.eye(d)
    points = []
    for i in range(d):
        for s in (1.0, -1.0):
            facets = [(eye[k], t) for k in range(d) if k != i for t in (1.0, -1.0)]
            rows = [(n, 0.0) for n in normals] + facets
            for chosen in combinations(rows, d - 1):
                M = np.array([eye[i]] + [r for r, _ in chosen])
                if abs(np.linalg.det(M)) < 1e-12 * np.prod(np.abs(M).max(axis=1)):
                    continue
                x = np.linalg.solve(M, np.array([s] + [t for _, t in chosen]))
                if np.abs(x).max() <= 1 + 1e-12:
                    points.append(x / np.abs(x).max())
    return np.array(points).reshape(-1, d)


def sup_error(rec, A, w, arith, k=300, seed=1):
    """max |f_hat(x) - f(x)| over the unit inf-sphere (f in float64): at the vertices of the
    arrangement of f's and f_hat's hyperplanes there (:func:`sphere_vertices`, where it is
    attained) and at k random points."""
    X = np.random.default_rng(seed).standard_normal((k, A.shape[0]))
    X /= np.abs(X).max(axis=1, keepdims=True)
    normals = np.concatenate([A.T[np.abs(A).max(axis=0) > 0], arith.to_float(rec.N).reshape(-1, A.shape[0])])
    X = np.concatenate([X, sphere_vertices(normals)])
    with arith.context():
        got = np.array([float(rec(x)) for x in X])
    return float(np.abs(got - ReluFFN(A, w)(X[:, None, :])).max())


#: mpmath runs cost ~0.3 s each: a few in the ci profile, a tenth of the examples when thorough.
MP_EXAMPLES = max(4, settings.default.max_examples // 10) if settings.default.max_examples > 30 else 4


@settings(max_examples=MP_EXAMPLES)
@given(st.integers(2, 4), st.integers(1, 4), st.integers(0, 2**16), st.integers(7, 10),
       st.sampled_from([1e-2, 0.1, 0.5]))
# issue 23 item 2: at 8 digits a confirmation pair grown to clear the tolerances straddled two
# kinks 0.1 apart: 1 of 3 hyperplanes, sup error 0.7 against a reported bound 0.35
@example(3, 3, 2, 8, 0.5)
@example(3, 3, 2, 7, 0.5)  # the same at 7 digits with pairs up to 1/16 of their interval: 0.7 vs 0.0017
def test_low_precision_mpmath_within_bound_or_refused(d, m, seed, dps, tolerance):
    """mpmath at 7-10 digits with a user tolerance: the answer is within its bound, or refused."""
    low_precision_property(d, m, seed, dps, tolerance)


#: Fixed (a strict xfail before, OPEN_LOW_PRECISION; thorough profile, --hypothesis-seed 271127 on
#: test_low_precision_mpmath_within_bound_or_refused; the same on a4cbaa0): d = 2, m = 4, numpy seed
#: 59814, 7 digits, tolerance 1e-2: two lines 0.003 rad apart with kinks -1.41 and +0.74 merged into
#: one (L = 3 of 4, 111 queries), sup error 1.97e-3 on 300 random points (2.24e-3 at the
#: arrangement's vertices, :func:`sup_error` now) against the search's bound 6.94e-4 (2.8x, 3.2x
#: over; SILENT).  The search's confirmation pair straddled both lines (its tolerances, gradient
#: errors ~1e-4, hide the wedge between them); the polish's confirmation saw the merge ("in_b") and its
#: bisection a point between them off both planes, but its piece there, stepped by the margin to
#: the recovered lines (0.125), found no gradient, so the polish was dropped and the search's
#: network stood, its bound unchecked against the polish's answers.  Now that piece falls back to
#: the search's own steps (2^-13 |x| at the last), whose answers lie in the wedge, and the search's
#: network is held to the polish's answers when the polish is not kept: 1.6e-3 |x| off, beyond its
#: bound, a further path, then refused (DegenerateProbeError, lines closer than 7 digits resolve).
#: Either change alone leaves the silent answer (checked by reverting each).  On 600 targets with two
#: normals 3e-4 to 3e-2 rad apart (d = 2, 7-8 digits) the two changes turned three answers into
#: refusals, each SILENTLY over its bound before (1.1x, 3.7x, 4.9x at the vertices; 300 random points
#: passed them), and cost 7-13 queries more at a dozen others (the search's steps' piece).  Since
#: helper merge2 the merge the polish saw and did not resolve is charged to the search's network
#: (ffn._merge_charge, 4.2e-3): answered, L = 3, bound 4.9e-3 against the sup error 2.24e-3.
FIXED_LOW_PRECISION = [(2, 4, 59814, 7, 0.01)]


@pytest.mark.parametrize("d, m, seed, dps, tolerance", FIXED_LOW_PRECISION)
def test_fixed_low_precision_counterexamples(d, m, seed, dps, tolerance):
    low_precision_property(d, m, seed, dps, tolerance)


#: Fixed (strict xfails before, OPEN_LOW_PRECISION_MERGE; helper lowprec: 600 d = 2 targets with two
#: normals 3e-4 to 3e-2 rad apart, 7-8 digits, checked at the arrangement's vertices, :func:`sup_error`;
#: random points missed both): m = 2, a light unit (c = 0.0197; 0.0073) merged into a heavy one
#: (c = -0.102; 0.406) whose normal is 8e-4 (5.6e-4) rad from its own: L = 1, the search's network
#: kept (its polish not), sup error 1.573e-5 against the bound 1.500e-5 (4.9 % over) and 4.116e-6
#: against 4.045e-6 (1.7 % over): SILENT.  The polish saw the merge ("in_b", a point between the
#: lines off both planes: 7.9e-6 and 3.1e-5 off a's and b's; 3.4e-6 and 1.6e-4) and the piece it
#: inserted there failed its confirmation, so the search's network stood, every answer within its
#: bound.  Refusing there (a further path, no fallback) fixed both but refused 13 good answers of the
#: 600 (helper lowprec).  Now the search's network is charged what the merge seen can cost
#: (ffn._merge_charge: the point's distances from both planes, with their tolerances, over its
#: |x|_inf; 4.5e-5 and 1.1e-4): bounds 6.0e-5 and 1.1e-4, 3.8x and 27x the sup error (helper merge2;
#: the charge removed, both fail again).  On 600 other d = 2 targets (normals 3e-4 to 3e-2 rad apart,
#: 7-8 digits, tolerance 0.1) 13 were charged: 3 refused before now answered (bound 2.2x to 9.9x the
#: sup error), 10 bounds 3.6x to 105x it (1.0x to 3.7x before), none over, no new refusal; the
#: float64 bench unchanged row for row.  Since helper tfpar a merge seen and charged sends the
#: learner to another path first (the charged network the fallback, as for a polish no further path
#: explained): the first entry's charged network stands (83 -> 334 queries, two paths refused), the
#: second's next path resolves the merge (bound 1.1e-4 -> 9.8e-6 against the sup error 4.1e-6;
#: 102 -> 184 queries).
FIXED_LOW_PRECISION_MERGE = [
    (np.array([[-0.72399447, -0.04314904], [0.30418262, 0.01809437]]), np.array([0.02718063, -2.35402475]),
     63414, 7, 0.1),
    (np.array([[-0.28430008, -0.26189486], [0.14788499, 0.13608311]]), np.array([-0.02571687, 1.5485626]),
     25825, 8, 0.1),
]


@pytest.mark.parametrize("A, w, seed, dps, tolerance", FIXED_LOW_PRECISION_MERGE)
def test_fixed_low_precision_merge(A, w, seed, dps, tolerance):
    """Answered (the merge charged, not refused; or resolved by the next attempt, the merge charged
    on the first) and within the bound."""
    rec = low_precision_case(A, w, seed, dps, tolerance)
    assert rec is not None
    charged = [r for r in rec.diagnostics["restarts"] if "a merge the polish saw" in r]
    assert rec.diagnostics.get("merge_charge", 0.0) > 0 or charged


def low_precision_property(d: int, m: int, seed: int, dps: int, tolerance: float) -> None:
    """The FFN of a numpy seed learned in mpmath at ``dps`` digits with ``tolerance``: within its
    bound (sup error on the unit inf-sphere), or refused."""
    rng = np.random.default_rng(seed)
    low_precision_case(rng.standard_normal((d, m)), rng.standard_normal(m), seed, dps, tolerance)


def low_precision_case(
    A: np.ndarray, w: np.ndarray, seed: int, dps: int, tolerance: float
) -> FFNRecovery | None:
    """f(x) = w^T ReLU(A^T x) learned in mpmath at ``dps`` digits with ``tolerance`` (path seed
    ``seed``): within its bound (:func:`sup_error`; the recovery returned), or refused (None)."""
    arith = MP(dps)
    try:
        rec = learn_ffn(ValueOracle(ReluFFN(A, w, arith)), rng=np.random.default_rng(seed), arith=arith,
                        tolerance=tolerance)
    except (DegenerateProbeError, PrecisionLossError):
        return None
    assert sup_error(rec, A, w, arith) <= rec.diagnostics["error_bound"]
    return rec


SIXTY = (np.array([[1.0, 0.5, -0.5], [0.0, np.sqrt(3) / 2, np.sqrt(3) / 2], [0.0, 0.0, 0.0]]),
         np.array([1.0, -1.0, 0.5]))  # three hyperplanes 60 degrees apart


@pytest.mark.parametrize("dps", [8, 9, 10])
def test_benign_ffn_at_low_mpmath_precision(dps):
    """Issue 23 item 8: hyperplanes 60 degrees apart were refused below 13 digits (tolerances of
    2^10 10^-dps, a first step 2^-10 |x|, and the default tolerance 1e-6 of float64); answered now
    from 8 digits, all three hyperplanes, within the bound, with the default tolerance
    (resolution^(1/5)); 7 digits and fewer are refused (DegenerateProbeError)."""
    A, w = SIXTY
    arith = MP(dps)
    rec = learn_ffn(ValueOracle(ReluFFN(A, w, arith)), rng=0, arith=arith)
    assert rec.L == 3
    assert sup_error(rec, A, w, arith) <= rec.diagnostics["error_bound"] <= 1e4 * 10.0**-dps


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_ffn_at_eight_digits(seed):
    """Issue 23 item 8: ``attnproof recover ffn --d 3 --arith mp:8`` (d = 3, m = 6, the bench's
    random target) was refused (DegenerateProbeError: bisection to the floor) for seeds 0-3,
    though its hyperplanes are 30 degrees apart or more: the confirmation pair that could fail
    would reach farther off the path than reach_fraction of its interval, as the far pieces'
    gradient errors over their distance to x* (a thin region's gradient, its step cut 16-fold)
    never shrink while the search bisects.  Now all six hyperplanes, within the bound."""
    row = run_ffn(3, arith="mp:8", seed=seed)
    assert row["L"] == 6 and row["within_bound"]
    assert row["queries"] == row["queries_formula"] + row["reasked_queries"]


# --- failure cases: typed errors, never a wrong answer ----------------------------------


@given(tst.zero_ffns(), seeds)
@example((np.array([[8.0991872e-303, 8.0991872e-303]]), np.array([0.75, -0.75])), 0)  # subnormal noise
# FMA noise of 7e-18 read as u = -1.4e-17 with a polished bound of 3.4e-29, returned (the full suite's
# ci draw, session 19): refused now, u within the answers' rounding of the units' scale (1.1e-14)
@example((np.array([[0.21760915, 0.21760915]]), np.array([1.75, -1.75])), 0)
# FMA noise (thorough profile, --hypothesis-seed 31415; a strict xfail before): the scale check
# f(2^16 x) = 2^16 f(x) failed by 1.9e-13 and the refusal said "an FFN with biases"
# (AssumptionError); a violation within the rounding of units of gradient ~1 is PrecisionLossError
@example((np.array([[0.625, 0.625]]), np.array([0.6, -0.6])), 0)
def test_identically_zero_ffn_is_not_identifiable(target, seed):
    """NonIdentifiableError; or, when the float64 oracle answers rounding noise instead of 0
    (twin units a ReLU(z) - a ReLU(z) summed with an FMA: +-1e-17), DegenerateProbeError or,
    for near-subnormal noise, PrecisionLossError: noise is no ReLU network; refused."""
    zero_ffn_refused(target, seed)


def zero_ffn_refused(target, seed):
    A, w = target
    oracle = ValueOracle(ReluFFN(A, w), record=True)
    with pytest.raises((NonIdentifiableError, DegenerateProbeError, PrecisionLossError)) as info:
        learn_ffn(oracle, rng=np.random.default_rng(seed))
    if info.type is not NonIdentifiableError:  # noise (near-subnormal noise: PrecisionLossError)
        assert any(np.any(r.y != 0) for r in oracle.log)
    else:
        assert "identically 0" in str(info.value)


def test_biases_break_the_parity_split():
    """The counterexample: f(x) = ReLU(x - 1) has u = 1, but f(2) - f(-2) = 1 != u * 2."""
    f = ReluFFN([[1.0]], [1.0], b=[-1.0])
    u = float((f.A @ f.w_o)[0])
    assert f(np.array([[2.0]])) - f(np.array([[-2.0]])) == 1.0 != u * 2.0


@given(tst.biased_ffns(), seeds)
# -ReLU(x - 1/4) - ReLU(x + 1/4) = -2 ReLU(x) for |x| >= 1/4: the path never saw the biases;
# homogeneity is now also checked at 2^-16 U (thorough profile)
@example((np.array([[1.0, 1.0]]), np.array([-1.0, -1.0]), np.array([-0.25, 0.25])), 1)
# a subnormal bias beside a unit one (thorough profile, --hypothesis-seed 20261126; the same on
# main): a point with x_1 = 0 answers 2.2e-308, outside float64's safe range, before the bias
# shows: PrecisionLossError, as for any parameter beyond float64 (beyond_float64)
@example((np.array([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]), np.array([-1.0, -1.0]),
          np.array([-0.25, 2.22507386e-308])), 0)
# twin units with opposite weights (thorough profile, --hypothesis-seed 112822; the same on d70afe0):
# -ReLU(x + 1/4) + ReLU(x + 1/4) = 0, no bias to see: "identically 0" is right
@example((np.array([[1.0, 1.0]]), np.array([-1.0, 1.0]), np.array([0.25, 0.25])), 0)
# a subnormal weight of a bias-free unit beside a biased one (thorough profile, --hypothesis-seed
# 304411; the same on 9d266be): the answers near the unit's kink leave the safe range first, the
# PrecisionLossError of any parameter beyond float64 (beyond_float64), not a bias's
@example((np.array([[1.0, 1.0], [0.0, -2.22507386e-309], [0.0, 0.0]]), np.array([-1.0, -1.0]),
          np.array([-0.25, 0.0])), 0)
def test_biased_ffn_is_refused(target, seed):
    """AssumptionError ("biases"); or, when a bias or a weight is beyond float64 (non-zero, below
    2^-800 with its unit's weight), the safe range's PrecisionLossError; or, when the draw's units
    cancel to f = 0 (the strategy's biases then matter nowhere), NonIdentifiableError."""
    A, w, b = target
    oracle = ValueOracle(ReluFFN(A, w, b=b))
    subnormal = bool(np.any((b != 0) & (np.abs(b) * np.abs(w) < 2.0**-800))) or beyond_float64(A, w)
    with pytest.raises((AssumptionError, PrecisionLossError, NonIdentifiableError)) as info:
        learn_ffn(oracle, rng=np.random.default_rng(seed))
    if info.type is PrecisionLossError:
        assert subnormal and "safe range" in str(info.value)
    elif info.type is NonIdentifiableError:
        assert units_cancel(A, w, b) and "identically 0" in str(info.value)
    else:
        assert "biases" in str(info.value)


def units_cancel(A, w, b):
    """``sum_k w_k ReLU(a_k^T x + b_k) = 0`` because the units on each affine hyperplane (the same
    ``(a_k, b_k)`` up to a positive factor, compared in exact rationals) have weights that sum to 0
    (times that factor)."""
    groups: dict[tuple, Fraction] = {}
    for k in range(len(w)):
        z = [Fraction(float(t)) for t in (*A[:, k], b[k])]
        scale = max(abs(t) for t in z)
        if scale and w[k]:
            key = tuple(t / scale for t in z)
            groups[key] = groups.get(key, Fraction(0)) + Fraction(float(w[k])) * scale
    return all(total == 0 for total in groups.values())


@given(tst.near_parallel_ffns(), seeds)
# angle 1e-4: the kink pair's intersection x* fell inside the outer region, and a confirmation
# pair 1e-2 off the path straddled both hyperplanes: merged (error 5e-5); now |y| = 2^-30 |x*|
@example((np.array([[1.0, 0.9999], [0.0, 1e-4]]), np.array([-0.5, 1.0]), 1e-4), 0)
# jumps of (0, 1, 1) and (1, -1, -1) sum along (1, 0, 0), the third hyperplane: x* on x_1 = 0
# passed the pair test within float tolerance, three kinks taken for one (error 1.0); the
# pair's offset y now clears 16 times the tolerance of the predictions it is compared with
@example(
    (
        np.array([[1.0, 0.9999, -1.0, 0.0, 1.0], [0.0, 0.0, 0.0, -1.0, -1.0], [0.0, 0.0, -1.0, -1.0, -1.0]]),
        np.array([1.0, 1.0, 1.0, -1.0, 1.0]),
        1e-4,
    ),
    792,
)
@example((np.array([[1.0, 1.0], [0.0, 0.0]]), np.array([-1.0, 1.0]), 1e-17), 0)  # columns equal in float
# issue 23 item 7: twin units at angle 1e-4 cancel to f ~ 1e-4 |x| (f(2x) = 2 f(x) exactly), but the
# homogeneity check at 2^16 U, asked before the search had met a gradient of the units' size,
# held the oracle's rounding (eps |units| |x|) to eps |f|: "an FFN with biases"; the check now
# follows the search.  The first pair (d = 4, thorough) was a strict xfail; the others, hostile draws
@example((np.array([[1.0, 0.9999], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]), np.array([-1.0, 1.0]), 1e-4), 0)
@example((np.array([[1.35074732, 1.35071338], [0.34309058, 0.34306782], [-1.16299016, -1.16293047],
                    [-0.18708582, -0.18721373]]), np.array([-1.0, 1.0]), 1e-4), 2)
# angle 1e-12, cancelling units (-0.3125 and 0.25): merged, f_hat errs by 2.5e-13 |x| against a
# polished bound of 1.5e-13 (thorough profile, seed 20261126; the merge allowance was 0 then)
@example((np.array([[-0.5, -0.5 + 1e-12], [1.0, 1.0]]), np.array([-0.3125, 0.25]), 1e-12), 0)
@example((np.array([[-0.03992466, -0.0398603], [-1.25773672, -1.25775751], [2.57402319, 2.57402902],
                    [0.48179798, 0.48183165]]), np.array([-1.0, 1.0]), 1e-4), 3)
# angle 1e-13 (thorough profile, seed 52817): f = 1e-13 ReLU(x_0) beside units of 1, whose answers the
# naive declaration lets round by 2^-43 of the units: refused as not told from 0, which it is not
@example((np.array([[1.0, 1.0 - 1e-13], [0.0, 0.0]]), np.array([-1.0, 1.0]), 1e-13), 0)
# f = -ReLU(x_1) + ReLU(1e-13 x_0 + (1 + 1e-13) x_1), sup 2.0e-13 against the units' rounding 2.3e-13
# (thorough profile, --hypothesis-seed 330177, the same on b9bdfa0): refused as not told from 0,
# rightly; the test's below_units_rounding bounded sup |f| by 1.0 then (now exact, sup_on_the_ball)
@example((np.array([[0.0, 1e-13], [1.0, 1.0 + 1e-13]]), np.array([-1.0, 1.0]), 1e-13), 0)
# the same pair at 1e-10 (thorough profile, --hypothesis-seed 660117, the same on 66b9008): sup 2e-10,
# a thousand times the units' rounding, refused as identically 0: a step across the two kinks read as
# units of 8.2e3, a reading f(3 x0) and f(x0) asked again did not show, kept as the units' scale
# (_PathSearch._rounding_scale keeps a reading beyond the cap only once they show it)
@example((np.array([[0.0, 1e-10], [1.0, 1.0000000001]]), np.array([-1.0, 1.0]), 1e-10), 162789)
def test_near_parallel_hyperplanes_typed_error_or_right(target, seed):
    """A typed error, or the function to within the bound plus what merging the pair can
    change, when the learner found fewer hyperplanes than f has (exactly distinct ones; still
    needed at angles far below FLOAT64_ANGLE: OPEN_MERGE_NARROWER_THAN_THE_PAIRS).

    Merged, the pair ``a_1 ReLU(w_1^T x) + a_2 ReLU(w_2^T x)`` becomes one kink of jump
    ``K = a_1 w_1 + a_2 w_2`` on ``K^T x = 0``, oriented by the side the path crossed to.  Off
    the wedge between the two hyperplanes, f_hat errs only where the sign of ``K^T x`` flips
    against theirs, where ``|K^T x| <= |a_i| |(w_2 - w_1)^T x|``; in the wedge both
    ``|w_i^T x| <= delta |x|_inf``, ``delta = |w_2 - w_1|_1``, and f_hat is 0 or ``K^T x``: the
    change is at most ``2 (|a_1| + |a_2|) delta |x|_inf``.  (It was ``|a_2| delta`` and only when
    the canonical form at rtol 1e-12 told the two apart: the polished bound, 1e-13 where the
    search's was 1e-10, showed both wrong at angle 1e-12 with cancelling units, thorough profile,
    seed 20261126.)"""
    A, w, _eps = target
    try:
        rec, oracle = recover_ffn(A, w, seed=seed)
    except (DegenerateProbeError, PrecisionLossError):
        return
    except NonIdentifiableError:  # eps below float64's spacing: the twin columns cancel exactly, or
        # f below the answers' declared rounding of the units (learn_ffn's _check_nonzero)
        assert is_zero_function(A, w) or below_units_rounding(A, w)
        return
    check_count(rec, oracle, A.shape[0])
    merge = (
        2 * (abs(w[0]) + abs(w[1])) * np.abs(A[:, 1] - A[:, 0]).sum()
        if rec.L < len(canonical_ffn(A, w, rtol=0.0)[2])
        else 0.0
    )
    check_function(rec, A, w, np.random.default_rng(seed), merge)


#: Pairs below FLOAT64_ANGLE that the learner merged beyond its own bound (thorough profile,
#: --hypothesis-seed 7391 on test_near_parallel_hyperplanes_typed_error_or_right once its merge
#: allowance was dropped, helper tfunion; the same on d70afe0): -ReLU(x_0) + ReLU(x_0 + 1e-10 x_1) / 2,
#: one kink for two, f_hat 5.0e-11 |x| off against its bound 1.6e-12.  Opposite convexities: f_hat
#: is off between x* and the nearer kink only, 2e-10 of the path, inside the confirmation pair
#: (2^-30 |x*|) and far inside the wedge points' tilt; the polish confirmed the kink.
#: pair_target(8, 28, 1e-7) (helper tfunion's 280 pair targets at 1e-7, seeds 20-59; one of the 2 left
#: beyond their bound of 10 before): the polished network kept, 7.0e-8 |x| off against 7.8e-10.
#: The other, pair_target(8, 27, 1e-7): 7.7e-8 against 4.4e-10 (and the search's network too,
#: against 6.2e-8); pair_target(5, 23, 3e-8): 3.8e-8 against 2.4e-10 (the search's 2.1e-8).  A
#: strict xfail (OPEN_MERGE_BELOW_PAIR, the first two) before helper merge23: two points just off a
#: confirmed kink's hyperplane, away from the path where the merged wedge is wide, see the merge
#: and the attempt is abandoned (``ffn._thin_wedge_contradiction``): each now refused or answered
#: within its own bound.
MERGES_BELOW_THE_PAIR = [
    (np.array([[1.0, 1.0], [0.0, 1e-10]]), np.array([-1.0, 0.5]), 0),
    (*pair_target(8, 28, 1e-7), 28),
    (*pair_target(8, 27, 1e-7), 27),
    (*pair_target(5, 23, 3e-8), 23),
]

#: Pairs merged below the polish's own resolution, answered beyond its bound before helper thin24
#: (helper merge23's table, pair_target at 1e-10 and 1e-9 rad, d = 2..8, seeds 0-19; a strict xfail,
#: OPEN_MERGE_AT_THE_POLISH_RESOLUTION, the first two): f_hat 1.3e-10 |x| off against a polished
#: bound of 3.1e-11 (d = 3, seed 17, 1e-10 rad), 9.5e-10 against 2.0e-10 (d = 5, seed 19, 1e-9 rad),
#: 1.14, 1.48 and 4.7 times beyond it (d = 4, seeds 12 and 14, d = 5, seed 2, 1e-10 rad).
#: ``_thin_wedge_contradiction``'s pair stood at m = x* + t v, v the off-path direction r projected
#: onto the merged kink's hyperplane, where the merge's wedge was within 0.2-0.5 of the pair's
#: offset y: its width is linear in the point of the hyperplane, and v's x* component sees next to
#: nothing of it.  Since, one pair stands at x* and one across it (the direction whose point stands
#: farthest across x* for its size, ``ffn._thin_directions``), and each of these merges shows
#: (refused, or a further attempt answers within its bound); pair_target(5, 9, 1e-10), 1.6 times
#: beyond it before and 1.32 times with the pair across x* orthogonal to it (the farthest-reaching),
#: is refused since helper thin24c (PrecisionLossError).
MERGES_ACROSS_X_STAR = [
    (*pair_target(3, 17, 1e-10), 17), (*pair_target(5, 19, 1e-9), 19),
    (*pair_target(4, 12, 1e-10), 12), (*pair_target(4, 14, 1e-10), 14), (*pair_target(5, 2, 1e-10), 2),
    (*pair_target(5, 9, 1e-10), 9),
]

#: A pair merged below the polish's own resolution, the last of the pair targets off its own bound
#: (helper thin24c's tables, pair_target, d = 2..8: at 1e-10 rad, seeds 0-19, 1 of 140, none at
#: 1e-9, 3e-8 and 1e-7; a strict xfail, OPEN_MERGE_AT_THE_POLISH_RESOLUTION, session 23): f_hat
#: 1.17 times beyond the polished bound at d = 4, seed 13, 1e-10 rad.  The merge's wedge at the
#: pairs' points was 1.8e-10 and 5.1e-10 |m| against their offset y = 6.5e-10 |m|, its largest on
#: the merged hyperplane's unit ball 2.0e-9: the pair across x* stood 0.1-0.4 |x*| out, stopped by
#: hyperplanes BEHIND x* (the reach along +-v).  Since the reach is one-sided (session 24,
#: ``ffn._reach_step``: the hyperplanes ``x* + t v`` meets for t > 0, all the segment needs), the
#: pair stands 1.6 |x*| out, the wedge there 1.8e-9 |m| against y = 6.5e-10 |m|: refused (helper
#: simplex25's measurement).
MERGES_BEYOND_THE_TWO_SIDED_REACH = [(*pair_target(4, 13, 1e-10), 13)]

#: Pairs merged with a wedge narrower than the pairs' offset y at every point they stand (nothing the
#: answers show tells the merged kink from one): pair_target at 1e-11 rad, d = 2..8, seeds 0-19,
#: 120 within / 18 refused / 2 off their own bound, 1.16 times at d = 2, seed 14 and 1.04 times at
#: d = 6, seed 18 (session 24; at 1e-12 140 / 0 / 0 off, worst 0.80; at 1e-10 103 / 37 / 0); d = 6,
#: seed 18 refused since session 25 (MERGES_ACROSS_THE_HYPERPLANE).  A
#: charge for what such a merge may move f by, ``|J^T y| / |m|_inf`` a pair (THIN_MARGIN times the
#: two pieces' tolerances, spread over the ball), would hold them, but grew the polished bounds of
#: random FFNs at d = 2, 3 5x at the median (to 70x, helper thin24).  The properties
#: (test_ffn_float64_recovers_every_kind, tf_float64_property,
#: test_near_parallel_hyperplanes_typed_error_or_right) still add merge_allowance for them.
OPEN_MERGE_NARROWER_THAN_THE_PAIRS = [(*pair_target(2, 14, 1e-11), 14)]

#: Merges whose wedge is narrower than the pairs' offset y where the pairs stood (x* and one point
#: across it) and wider elsewhere on the merged hyperplane, d > 3 (helper-114's hostile pass, session
#: 24, 8,500 targets at seeds 20-159: 11 SILENTLY off their bound, 9 of them with d > 3): pair_target
#: (5, 36, 1e-9) 8.7 times beyond its polished bound (the pairs' offsets 5e-12 |m|, the pair's angle
#: 1.3e-9), (6, 45, 1e-10) 2.9, (8, 46, 3e-10) 3.8, (4, 91, 1e-9) 2.5; and pair_target(6, 18, 1e-11)
#: 1.04 (OPEN_MERGE_NARROWER_THAN_THE_PAIRS until session 25).  The wedge is linear on the merged
#: hyperplane: since session 25 ``d - 1`` pairs whose centres span it (``ffn.thin_pairs``) see each
#: one; refused.
MERGES_ACROSS_THE_HYPERPLANE = [
    (*pair_target(d, seed, angle), seed)
    for d, seed, angle in [(5, 36, 1e-9), (6, 45, 1e-10), (8, 46, 3e-10), (4, 91, 1e-9), (6, 18, 1e-11)]
]

#: Two kinks on one side of a pair's centre m within its offset y (helper thin24c's table, pair_target
#: at 3e-8 rad, d = 2..8, seeds 0-39: the one of 280 off its own bound, refused before helper thin24):
#: pair_target(8, 28, 3e-8), a further attempt's merged kink hemmed in by other hyperplanes (t <=
#: 0.04 |x*|); at x* the two kinks lie 3.3e-10 and 6.2e-10 |x*| off, against y = 4.4e-10 |x*|, so
#: m - y lies between them, off both planes, which did not count: f_hat 11.8 times its polished
#: bound.  The pair along r's own projection of main before thin24, at another m, saw it; a third
#: pair there took the bench's worst faithful bound / error from 842 to 1053 (helper thin24c).
#: Since session 23 a point off both planes is followed by one at m +- y / THIN_MARGIN, where one
#: kink recovered within the pieces' errors leaves f on its side's plane: here it is on the other
#: side's (misfit 3e-5 against 2.3 on its own), and the attempt is abandoned (refused).  Since the
#: reach is one-sided (session 24) the pairs stand farther out and see it without the point between
#: too; pair_target(5, 9, 1e-10) (MERGES_ACROSS_X_STAR's) is where it counts now: without it, the
#: polished network kept 1.33 times beyond its bound (the one of 840 pair targets, 1e-10 .. 1e-7).
MERGES_BETWEEN_M_AND_Y = [(*pair_target(8, 28, 3e-8), 28), (*pair_target(5, 9, 1e-10), 9)]


#: The same thorough run's other draw (refused on d70afe0 and b9bdfa0): the pair above without the
#: zero-sum triple (its units zero, w = (.., -0.913, -0.913, 1)), normals e_0 and (1, 5.2e-7) at L1
#: distance 1.05e-6, above FLOAT64_ANGLE, where test_ffn_float64_recovers_every_kind allows no
#: refusal: DegenerateProbeError ("kinks closer than the search resolves", interval 4.4e-13 after 31
#: steps).  Every piece opened between the two kinks (x_0 within 7.6e-7 of 0, |x| ~ 1.45) was measured
#: with steps of 2^-13 |x| or more that cross the one ahead (Euler's check blind to the gradient's
#: error along e_0, where x_0 ~ 0), a mix 1.6e-6 from the far end's gradient, the region's 2.8e-4 away;
#: the signed steps cross the one behind.  Since, such a mix is measured again at the smallest step,
#: 2^-26 |x|, kept when its steps backwards agree (:meth:`_PathSearch._opened`).
FIXED_PAIR_ABOVE_ANGLE = [(
    np.array([[2.06751461e-002, -2.27558548e-001, 6.07969629e-227, -1.35300952e-002, -6.12709118e-011,
               -6.06534430e-096, 0.0, 0.0, 0.0],
              [6.02713369e-001, -1.19209290e-007, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0] * 9, [0.0] * 9]),
    np.array([0.02067515] * 6 + [-0.9133731, -0.9133731, 1.0]), 5,
)]


@pytest.mark.parametrize("A, w, seed", FIXED_PAIR_ABOVE_ANGLE)
def test_pair_above_the_angle_answered(A, w, seed):
    """Answered within its bound, every query counted (the property's premise for such a pair; a
    strict xfail before, DegenerateProbeError), with the three hyperplanes found."""
    assert not closer_than_float64(A, w)
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, A.shape[0])
    assert rec.L == len(canonical_ffn(A, w, rtol=1e-12)[2]) == 3
    check_function(rec, A, w, np.random.default_rng(seed))


def within_own_bound_or_refused(A, w, seed, answers="naive"):
    """learn_ffn refuses (DegenerateProbeError, PrecisionLossError) or answers within its own bound
    (no merge allowance), every query counted."""
    try:
        rec, oracle = recover_ffn(A, w, seed=seed, answers=answers)
    except (DegenerateProbeError, PrecisionLossError):
        return
    check_count(rec, oracle, A.shape[0])
    check_function(rec, A, w, np.random.default_rng(seed))


@pytest.mark.parametrize("A, w, seed", MERGES_BELOW_THE_PAIR)
def test_merge_below_the_pair_within_its_own_bound_or_refused(A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, without the merge
    allowance (a strict xfail, OPEN_MERGE_BELOW_PAIR, before helper merge23)."""
    within_own_bound_or_refused(A, w, seed)


def test_without_the_thin_wedge_points_a_merge_below_the_pair_is_silent(monkeypatch):
    """The two points of ``ffn._thin_wedge_contradiction`` are what see MERGES_BELOW_THE_PAIR's
    merges: without them the polished network is kept beyond its bound again (the check can fail)."""
    from attnproof.theorems.transformer import ffn

    monkeypatch.setattr(ffn, "_thin_wedge_contradiction", lambda *args: None)
    for A, w, seed in MERGES_BELOW_THE_PAIR[:2]:
        rec, _ = recover_ffn(A, w, seed=seed)
        with pytest.raises(AssertionError):
            check_function(rec, A, w, np.random.default_rng(seed))


def no_audit(*args):
    """``ffn.audit`` taken away (the premise tests of the mechanisms before it): no charge, no kink
    skipped."""
    return 0.0, 0


def kept_silently_beyond_its_bound(A, w, seed, answers="naive"):
    """learn_ffn answers (no refusal), every query counted, and f_hat is beyond its own bound: the
    premise tests' silent answer, with the mechanism they take away."""
    rec, oracle = recover_ffn(A, w, seed=seed, answers=answers)
    check_count(rec, oracle, A.shape[0])
    with pytest.raises(AssertionError):
        check_function(rec, A, w, np.random.default_rng(seed))


@pytest.mark.parametrize("A, w, seed", MERGES_ACROSS_X_STAR)
def test_merge_across_x_star_within_its_own_bound_or_refused(A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, without the merge
    allowance (a strict xfail, OPEN_MERGE_AT_THE_POLISH_RESOLUTION, before helper thin24)."""
    within_own_bound_or_refused(A, w, seed)


@pytest.mark.parametrize("d", range(2, 9))
def test_thin_directions_stand_across_x_star_on_the_hyperplane(d):
    """``ffn._thin_directions``: on the hyperplane n^T z = 0, |v|_inf = 1, pointing away from 0; in
    d = 2 one pair, along x*; in d > 2 one at x* itself (None), then d - 2 across it, the first the
    candidate (r's and the coordinate directions' projections onto the hyperplane, as they are or
    made orthogonal to x* too, with either sign) whose point m = x* + t v stands farthest across x*
    for its size, t |v_perp| / |m|, t the largest power of two below min(0.9 of v's reach to a
    hyperplane x* + t v meets for t > 0, 4 |x*|_inf); the centres span the hyperplane."""
    from attnproof.theorems.transformer.ffn import _thin_directions, thin_pairs

    rng = np.random.default_rng(d)
    n, r, others = rng.standard_normal(d), rng.standard_normal(d), rng.standard_normal((3, d))
    x = rng.standard_normal(d)
    x -= (x @ n) / (n @ n) * n  # on the hyperplane, as x* is
    V = _thin_directions(n, x, r, others)
    P = np.eye(d) - np.outer(n, n) / (n @ n)
    v_r = P @ r / np.abs(P @ r).max() * np.sign(r @ P @ x)
    for v in V[1:]:
        assert np.abs(v).max() == 1.0 and abs(v @ n) <= 1e-12 * np.linalg.norm(n)
        assert v @ x >= -1e-12 * np.linalg.norm(x)
    if d == 2:
        assert len(V) == thin_pairs(d) == 1 and np.allclose(V[0], v_r, rtol=0, atol=1e-12)
        return
    assert len(V) == thin_pairs(d) == d - 1 and V[0] is None
    # the centres x* and x* + t v span the hyperplane (the merge's wedge is linear on it)
    assert np.linalg.matrix_rank(np.array([x, *V[1:]]), tol=1e-9) == d - 1
    xu = x / np.linalg.norm(x)
    Q = P - np.outer(xu, xu)  # onto the hyperplane, across x*

    def reach(u):  # ahead of x only: t >= 0 with o^T (x + t u) = 0
        ts = [-(o @ x) / (o @ u) for o in others if (o @ u) != 0]
        return min([t for t in ts if t >= 0], default=np.inf)

    def score(u):
        u = u / np.abs(u).max()
        t = 2.0 ** np.floor(np.log2(min(0.9 * reach(u), 4 * np.abs(x).max())))
        return t * np.linalg.norm(Q @ u) / np.linalg.norm(x + t * u)

    # as they are, pointing away from 0; across x*, orthogonal to it, either sign
    candidates = [P @ u * (1.0 if u @ P @ x >= 0 else -1.0) for u in [r, *np.eye(d)]]
    candidates += [sign * Q @ u for u in [r, *np.eye(d)] for sign in (1.0, -1.0)]
    assert score(V[1]) >= max(score(u) for u in candidates) * (1 - 1e-9) > 0


@pytest.mark.parametrize("A, w, seed", MERGES_BETWEEN_M_AND_Y)
def test_a_point_off_both_planes_is_followed_between(A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, without the merge
    allowance; a point ``m +- y`` off both planes is followed by one at ``m +- y / THIN_MARGIN``
    (``ffn._thin_wedge_contradiction``)."""
    within_own_bound_or_refused(A, w, seed)


def test_without_the_point_between_a_merge_is_silent(monkeypatch):
    """A point ``m +- y`` off both planes taken as its own side's (no point between asked), with
    two pairs a kink (as until session 25; the d - 1 pairs see this merge without the point
    between too): the polished network is kept SILENTLY beyond its bound at
    MERGES_BETWEEN_M_AND_Y's last (the check of test_a_point_off_both_planes_is_followed_between
    can fail)."""
    from attnproof.theorems.transformer import ffn

    monkeypatch.setattr(ffn, "thin_pairs", lambda d: min(d - 1, 2))

    side = ffn._thin_side

    def no_point_between(*args):  # a point off both planes read as on its own side's
        s = side(*args)
        return "own" if s == "neither" else s

    monkeypatch.setattr(ffn, "_thin_side", no_point_between)
    A, w, seed = MERGES_BETWEEN_M_AND_Y[-1]
    kept_silently_beyond_its_bound(A, w, seed)


#: Merges whose pair points and points between are all off both planes (hostile pass, session 24,
#: helper-114: pair_target at seeds 20-59 and 0-59, 1e-9 .. 1e-8 rad): pair_target(5, 36, 1e-8) 77 times
#: beyond its polished bound SILENTLY with the one-sided reach (within on 191b4f4), (5, 36, 3e-9) 23.5
#: times, (8, 36, 3e-9) 2.8 times: the point between asked and off both planes too was taken for
#: nothing.  Since, it leaves the kink unconfirmed and the search's network stands (8.1e-9, 8.1e-9,
#: 1.1e-7 holding errors of 4.1e-9, 1.25e-9, 2.3e-9); since session 25 charged for the merge
#: (MERGE_BETWEEN_OFF_THE_PATH): 8.3e-8 and 1.7e-8, the third refused.
MERGES_OFF_BOTH_PLANES_TWICE = [
    (*pair_target(5, 36, 1e-8), 36), (*pair_target(5, 36, 3e-9), 36), (*pair_target(8, 36, 3e-9), 36)
]


@pytest.mark.parametrize("A, w, seed", MERGES_OFF_BOTH_PLANES_TWICE)
def test_merge_off_both_planes_twice_within_its_own_bound_or_refused(A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, no merge allowance."""
    within_own_bound_or_refused(A, w, seed)


def test_without_the_point_between_off_both_planes_a_merge_is_silent(monkeypatch):
    """A point between off both planes taken for nothing (as before session 24), with two pairs a
    kink (as until session 25; the d - 1 pairs see this merge either way): the polished network of
    MERGES_OFF_BOTH_PLANES_TWICE's first is kept SILENTLY beyond its bound (the check can fail)."""
    from attnproof.theorems.transformer import ffn

    monkeypatch.setattr(ffn, "thin_pairs", lambda d: min(d - 1, 2))

    thin = ffn._thin_wedge_contradiction

    def neither_for_nothing(*args):
        seen = thin(*args)
        return None if seen is not None and seen[1] == "neither" else seen

    monkeypatch.setattr(ffn, "_thin_wedge_contradiction", neither_for_nothing)
    A, w, seed = MERGES_OFF_BOTH_PLANES_TWICE[0]
    kept_silently_beyond_its_bound(A, w, seed)


def two_sided_reach_step(others, x, v):
    """``ffn._reach_step`` as it was until session 24: stopped by the hyperplanes on either side of
    x along +-v (the merge tests' premise: with it the silent answer is back)."""
    from attnproof.theorems.transformer import ffn

    reach = ffn._plane_reach(others, x, v)
    t = min(ffn.MARGIN_USED * reach, 2.0**ffn.WEDGE_REACH_LOG2 * float(np.abs(x).max()))
    return 2.0 ** int(np.floor(np.log2(t))) if t > 0 else 0.0


@pytest.mark.parametrize("A, w, seed", MERGES_BEYOND_THE_TWO_SIDED_REACH)
def test_merge_beyond_the_two_sided_reach_within_its_own_bound_or_refused(monkeypatch, A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, without the merge
    allowance (a strict xfail, OPEN_MERGE_AT_THE_POLISH_RESOLUTION, before session 24).  With the
    reach two-sided again, the polished network is kept SILENTLY beyond its bound (the check can
    fail)."""
    from attnproof.theorems.transformer import ffn

    within_own_bound_or_refused(A, w, seed)
    monkeypatch.setattr(ffn, "_reach_step", two_sided_reach_step)
    kept_silently_beyond_its_bound(A, w, seed)


@pytest.mark.parametrize("A, w, seed", MERGES_ACROSS_THE_HYPERPLANE)
def test_merge_across_the_hyperplane_within_its_own_bound_or_refused(monkeypatch, A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, without the merge
    allowance.  With two pairs beside a kink in d > 2 again (x* and one across it, until session 25),
    the polished network is kept SILENTLY beyond its bound (the check can fail)."""
    from attnproof.theorems.transformer import ffn

    within_own_bound_or_refused(A, w, seed)
    monkeypatch.setattr(ffn, "thin_pairs", lambda d: min(d - 1, 2))
    kept_silently_beyond_its_bound(A, w, seed)


def tiny_beside_pair(d: int, seed: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """Two units theta rad apart (random normal n and n turned by theta) beside a unit of weight
    1e-10 and 0..d-1 more random units, column scales 0.5-2, weights +-0.5-1.5 (helper-114's
    ``tinypair`` targets, session 24)."""
    rng = np.random.default_rng(7919 * d + seed + 17)
    n = rng.standard_normal(d)
    n /= np.linalg.norm(n)
    t = rng.standard_normal((d, 2))[:, 0]
    t -= (n @ t) * n
    t /= np.linalg.norm(t)
    cols = [n, np.cos(theta) * n + np.sin(theta) * t, rng.standard_normal(d)]
    A = np.column_stack(cols + [rng.standard_normal(d) for _ in range(int(rng.integers(0, d)))])
    A = A * rng.uniform(0.5, 2.0, size=A.shape[1])
    w = rng.choice([-1.0, 1.0], size=A.shape[1]) * rng.uniform(0.5, 1.5, size=A.shape[1])
    w[2] = 1e-10 * np.sign(w[2])
    return A, w


#: A point between off both planes (``ffn._thin_wedge_contradiction``'s "neither") read as session 24
#: did, the search's network left standing uncharged: tiny_beside_pair(5, 175, 1e-8), units of
#: weight -1.44 and +1.30 1e-8 rad apart merged, kept 6.35 times beyond the search's bound SILENTLY
#: with session 25's d - 1 pairs (refused on 9d266be, whose two pairs saw nothing; helper-115's
#: hostile pass).  Since, that point is a point between two merged kinks as the path's bisection
#: finds them: a piece measured there, or the search's network charged (``ffn._merge_charge``).
MERGE_BETWEEN_OFF_THE_PATH = [(*tiny_beside_pair(5, 175, 1e-8), 175)]


@pytest.mark.parametrize("A, w, seed", MERGE_BETWEEN_OFF_THE_PATH)
def test_a_point_between_off_the_path_is_charged_or_split(monkeypatch, A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, no merge allowance.
    With no piece measured there and no charge (the search's network uncharged, as in session 24),
    and nothing asked beside the kinks the polish did not confirm (``ffn._beside_the_rest``, since
    session 26, which sees this merge too) and no audit of the network that stands (``ffn.audit``,
    since session 27, which measures it), it is kept SILENTLY beyond its bound (the check can fail)."""
    from attnproof.theorems.transformer import ffn

    within_own_bound_or_refused(A, w, seed)
    monkeypatch.setattr(ffn, "_piece_between", lambda *args: (None, None))
    monkeypatch.setattr(ffn, "_merge_charge", lambda *args: 0.0)
    monkeypatch.setattr(ffn, "_beside_the_rest", lambda *args: None)
    monkeypatch.setattr(ffn, "audit", no_audit)
    kept_silently_beyond_its_bound(A, w, seed)


#: A pair of units 1e-8 .. 3e-8 rad apart beside a tiny unit (weight 1e-10): helper-115's hostile
#: pass (session 25) found them kept beyond the learner's own bound SILENTLY, 1.9 to 6.6 times, the
#: same on 9d266be (tiny_beside_pair at seeds 160-199: 8 off at 1e-8; at seeds 200-259: 11 at 1e-8,
#: 17 at 3e-8), a strict xfail in session 25.  The search's network stood: the tiny unit's answers
#: contradicted the polished one first, and the pair's kink, merged, was never held to points
#: beside it away from x*.  Since session 26 the points beside every polished kink not confirmed
#: are asked at the search's grade (``ffn._beside_the_rest``) and the network kept after the last
#: further path is held to them (``ffn._holds``).
TINY_BESIDE_A_PAIR = [
    (*tiny_beside_pair(d, seed, angle), seed)
    for d, seed, angle in [(7, 247, 3e-8), (6, 238, 3e-8), (7, 177, 1e-8), (4, 170, 1e-8)]
]


@pytest.mark.parametrize("A, w, seed", TINY_BESIDE_A_PAIR)
def test_a_tiny_unit_beside_a_pair_within_its_own_bound_or_refused(A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, without the merge
    allowance."""
    within_own_bound_or_refused(A, w, seed)


def test_without_the_points_beside_the_rest_a_pair_beside_a_tiny_unit_is_silent(monkeypatch):
    """The premise: with nothing asked beside the kinks the polish did not confirm, each of
    TINY_BESIDE_A_PAIR is kept SILENTLY beyond its bound (the check can fail); and with the network
    kept after the last further path not held to the last polish's answers, the first is; both with
    no audit of the network that stands (``ffn.audit``, since session 27, which measures each)."""
    from attnproof.theorems.transformer import ffn

    monkeypatch.setattr(ffn, "audit", no_audit)
    with monkeypatch.context() as patch:
        patch.setattr(ffn, "_beside_the_rest", lambda *args: None)
        for A, w, seed in TINY_BESIDE_A_PAIR:
            kept_silently_beyond_its_bound(A, w, seed)
    monkeypatch.setattr(ffn, "_holds", lambda *args: True)
    kept_silently_beyond_its_bound(*TINY_BESIDE_A_PAIR[0])


#: tiny_beside_pair(5, 189, 1e-8): a strict xfail (OPEN_TINY_BESIDE_A_PAIR) in session 26, 1.34 times
#: beyond its bound SILENTLY (the search's network, charged for the tiny unit's merge into another
#: kink): the points beside the pair's kink found f within about the bound at their centres, and
#: the merge moves it by more only between them.  Since session 27 the network that stands
#: unpolished is audited (``ffn.audit``: at d - 1 orthonormal centres on each kink's hyperplane the
#: wedge is measured from f's own lines, and the bound charged the widest it can be between them):
#: charged 4.0e-8 (the bound 1.42e-8 -> 5.47e-8), within it (0.35 of it by the hostile judge).
AUDITED_TINY_BESIDE_A_PAIR = [(*tiny_beside_pair(5, 189, 1e-8), 189)]


@pytest.mark.parametrize("A, w, seed", AUDITED_TINY_BESIDE_A_PAIR)
def test_a_merge_the_points_beside_the_rest_miss_is_audited(monkeypatch, A, w, seed):
    """Refused (typed) or within the learner's own bound, every query counted, without the merge
    allowance; with no audit (``ffn.audit`` taken away), kept SILENTLY beyond its bound (the check
    can fail)."""
    from attnproof.theorems.transformer import ffn

    within_own_bound_or_refused(A, w, seed)
    monkeypatch.setattr(ffn, "audit", no_audit)
    kept_silently_beyond_its_bound(A, w, seed)


#: The search's network left standing, uncharged, where a polished kink fails its confirmation and
#: nothing resolves it (no wedge point, no region between): pair_target(5, 36, 1e-9) under faithful
#: answers (helper-114's hostile pass, session 24), 31 times beyond the search's bound SILENTLY (that
#: bound, as tight as the polish's under faithful answers, holds no merge the search's own pair at
#: x* does not see; the polish's failed kink is the merged pair).  Since session 25 the thin pairs
#: beside such a kink are asked too, their answers held to the search's network: they contradict
#: it, and the further paths end refused (since session 26 at the search's grade, beside every
#: kink the polish did not confirm: ``ffn._beside_the_rest``).
UNCONFIRMED_UNDER_FAITHFUL = (*pair_target(5, 36, 1e-9), 36)


@pytest.mark.skipif(not faithful_available(), reason="no x87 extended longdouble here")
def test_an_unconfirmed_kinks_thin_pairs_are_held_to_the_search_network(monkeypatch):
    """Refused (typed) or within the learner's own bound, every query counted, no merge allowance.
    Without the points asked beside the unconfirmed kinks (``ffn._beside_the_rest``) and the audit
    (``ffn.audit``, since session 27, which measures this merge too), the search's network is kept
    SILENTLY beyond its bound (the check can fail)."""
    from attnproof.theorems.transformer import ffn

    A, w, seed = UNCONFIRMED_UNDER_FAITHFUL
    within_own_bound_or_refused(A, w, seed, answers="faithful")
    monkeypatch.setattr(ffn, "_beside_the_rest", lambda *args: None)
    monkeypatch.setattr(ffn, "audit", no_audit)
    kept_silently_beyond_its_bound(A, w, seed, answers="faithful")


def _open(targets, reason):
    """Strict xfails (raises=AssertionError) of a recorded open class: the target beyond its bound."""
    mark = pytest.mark.xfail(strict=True, reason=f"open: {reason}", raises=AssertionError)
    return [pytest.param(*t, marks=mark) for t in targets]


@pytest.mark.parametrize("A, w, seed", _open(
    OPEN_MERGE_NARROWER_THAN_THE_PAIRS, "hyperplanes 1e-11 rad apart merged with a wedge narrower than "
    "the pairs' offset at every point, beyond the bound; the properties still add merge_allowance",
))
def test_open_merges_within_their_own_bound_or_refused(A, w, seed):
    """Refused (typed) or within the learner's own bound, without the merge allowance (each a
    strict xfail: it fails today, and passing would say the class is answered)."""
    within_own_bound_or_refused(A, w, seed)


@given(st.integers(0, ffn_query_count(3, 3) - 1))
def test_budget_is_respected(budget):
    A = np.array([[1.0, 0, -1], [0, 1, -1], [0.5, 0.25, 1]])
    oracle = ValueOracle(ReluFFN(A, np.ones(3)), budget=budget)
    with pytest.raises(QueryBudgetExceeded):
        learn_ffn(oracle, rng=np.random.default_rng(0))
    assert oracle.queries <= budget


class HostileFFN:
    """Answers one-token queries with deterministic nonsense (a hash of the query)."""

    def __init__(self, d, kind):
        self.d, self.arith, self.kind = d, FLOAT64, kind

    def __call__(self, X):
        X = np.asarray(X, float)[:, 0, :]
        if self.kind == "noise":
            return np.sin(1e3 * X.sum(axis=1)) * 1e3
        if self.kind == "step":
            return np.where(X[:, 0] > 0, 1.0, -1.0)
        return np.abs(X).max(axis=1) ** 1.5


@given(st.sampled_from(["noise", "step", "power"]), st.integers(1, 4), seeds)
def test_learner_terminates_against_a_hostile_oracle(kind, d, seed):
    """Every loop has a floor and a bound: a typed error within ffn_query_bound queries."""
    oracle = ValueOracle(HostileFFN(d, kind))
    with pytest.raises((AssumptionError, DegenerateProbeError, PrecisionLossError, NonIdentifiableError)):
        learn_ffn(oracle, rng=np.random.default_rng(seed))
    assert oracle.queries <= ffn_query_bound(d)


@pytest.mark.parametrize("kw", [
    {"rng": None}, {"rng": np.random.default_rng(0), "tolerance": 0}, {"rng": -1}, {"rng": True},
    {"rng": 0.5}, {"rng": 0, "arith": "float32"}, {"rng": 0, "arith": 64}, {"rng": 0, "checks": -1},
    {"rng": 0, "checks": 1.0}, {"rng": 0, "restarts": True}, {"rng": 0, "polish": "yes"},
    {"rng": 0, "polish": 1},
])
def test_bad_arguments(kw):
    """Typed errors (``rng=0.5``, ``arith=64`` were AttributeError / TypeError before)."""
    with pytest.raises(InvalidInputError):
        learn_ffn(ValueOracle(ReluFFN(np.eye(2), np.ones(2))), **kw)


def test_seed_and_arithmetic_names_are_accepted():
    """``rng=0`` and ``arith="float64"`` (AttributeError before) mean default_rng(0) and FLOAT64."""
    oracle = ValueOracle(ReluFFN(np.array([[1.0, 0.5], [-1.0, 1.0]]), np.array([1.0, -2.0])))
    rec = learn_ffn(oracle, rng=0, arith="float64")
    ref = learn_ffn(ValueOracle(oracle.model), rng=np.random.default_rng(0), arith=FLOAT64)
    assert rec.arith == "float64" and rec.L == ref.L == 2 and rec.queries == ref.queries
    assert np.array_equal(rec.N, ref.N) and np.array_equal(rec.c, ref.c)


@pytest.mark.parametrize("kw", [{"kinds": ("nope",)}, {"min_d": 3, "max_d": 2}, {"min_m": 0}])
def test_strategies_validate_eagerly(kw):
    with pytest.raises(InvalidInputError):
        tst.ffn_targets(**kw)


# --- learn_transformer ------------------------------------------------------------------


def recover_tf(W, A, w, arith=FLOAT64, seed=0, **kw):
    oracle = ValueOracle(OneLayerTransformer(W, A, w, arith))
    return learn_transformer(oracle, rng=np.random.default_rng(seed), arith=arith, **kw), oracle


def tf_float64_property(A, w, kind, W, seed):
    """The FFN to its bound (plus the merge allowance of hyperplanes closer than FLOAT64_ANGLE,
    as for :func:`learn_ffn` alone) and W* to its bound; typed errors only for targets beyond
    float64 (near-subnormal products, 20+ bits of cancellation, near-parallel hyperplanes),
    f == 0, or W* below float64's resolution."""
    d = A.shape[0]
    W = W[:d, :d]
    close = closer_than_float64(A, w)
    try:
        rec, oracle = recover_tf(W, A, w, seed=seed)
    except (PrecisionLossError, NonIdentifiableError, DegenerateProbeError) as err:
        # the output guard also refuses a W* below float64's resolution (W* = 0 included)
        w_zero = isinstance(err, PrecisionLossError) and np.abs(W).max() < 1e-140
        if isinstance(err, NonIdentifiableError):  # f == 0, or rounds to 0 everywhere
            assert is_zero_function(A, w) or beyond_float64(A, w) or cancels_beyond_float64(A, w)
        else:
            assert beyond_float64(A, w) or cancels_beyond_float64(A, w) or close or w_zero
        return
    route = rec.diagnostics["route"]
    assert route == ("cone" if kind == "even" else rec.diagnostics["route"])
    assert (
        rec.queries
        == oracle.queries
        == transformer_query_count(d, rec.ffn.L, route) + rec.diagnostics["reasked_queries"]
    )
    assert np.abs(rec.W - W).sum() <= rec.diagnostics["error_bound"] + 64 * EPS * d * d * np.abs(W).max()
    check_function(rec.ffn, A, w, np.random.default_rng(seed), merge_allowance(A, w))
    if not close:
        check_canonical(rec.ffn, A, w)


P3 = 0.3 * np.ones((4, 4))  # W* = its top-left d x d block


@given(tst.ffn_targets(max_d=4, max_m=5), seeds,
       st.sampled_from([0.3, 1.0, 2.0]).flatmap(lambda scale: ast.matrices(4, scale)))
# hyperplanes (1, 4e-12) and (1, 1e-12), at angle 3e-12, merged into one: the function is within
# its bound (the merge changes it by 1.5e-11), the canonical form cannot be (premise: a merge)
@example((np.array([[0.25, 1.0], [1e-12, 1e-12]]), np.array([-1.0, 1.0]), "generic"), 0, P3)
# a 1.4e-213 unit beside a unit one: its jump (between two regions of tiny gradient) is below the
# answers' rounding; the confirmation pair was scaled to 1e198 and overflowed (NonFiniteError);
# now a jump below the rounding floor is taken for none and booked in the bound
@example((np.array([[1.0, 1.0], [0.0, 1.0], [1.0, 1.0]]), np.array([1.36809046e-213, 1.0]), "generic"), 0, P3)
# a 1e-12 unit beside a 0.5 one: its gradient is exact to 1e-22, the other's to 1e-10; the
# planes-meet test held the large piece's prediction to the tiny one's tolerance: bisection to
# the floor (DegenerateProbeError); now the two predictions' tolerances add
@example((np.array([[0.5, 1e-12], [1e-12, 1e-12]]), np.array([1.0, 1.0]), "generic"), 0, P3)
@example((np.array([[0.5, 1e-12], [1e-12, 1e-12]]), np.array([1.0, 1.0]), "generic"), 0, np.zeros((4, 4)))
# -ReLU(z) + ReLU(z) + 2e-12 ReLU(x_1 + x_2): the oracle's rounding of the cancelling pair is 1e-4
# of f: refused (premise: cancels_beyond_float64)
@example((np.array([[1.0, 1.0, 1e-12, 1e-12], [1e-12] * 4]), np.array([-1.0, 1.0, 1.0, 1.0]), "generic"),
         0, P3)
# u = -0.375e-200: the attention phase's float64 error model squares v* (numpy's norm of 1e-200
# underflows to 0) and reported a W bound 50 times too small (error 7.7e-14, bound 2.4e-14); the
# derived oracle's answers are now scaled by an exact power of two that makes v* of order one
@example((np.array([[1e-200, 1e-200]]), np.array([-1.0, 0.625]), "generic"), 0, P3)
@example((np.array([[1.57130189e-257, 1.57130189e-257]]), np.array([-1.0, 0.625]), "generic"), 0, P3)
# weights of 1 beside 8.8e-220 (found under pytest-xdist, once open here): the search ended with
# DegenerateProbeError / NonFiniteError; fixed by the two FFN fixes above
@example((np.array([[8.84572775e-220] * 4, [1.0] + [8.84572775e-220] * 3,
                    [8.84572775e-220, -2.03184858e-154, 8.84572775e-220, 8.84572775e-220]]),
          np.ones(4), "generic"), 0, P3)
@example((np.array([[8.84572775e-220] * 2, [1.0, 8.84572775e-220], [8.84572775e-220] * 2]),
          np.ones(2), "generic"), 0, P3)
# -0.99999 ReLU(x) + 0.5 ReLU(2 x) = 1e-5 ReLU(x): kappa 2e5, refused at the path's end (premise)
@example((np.array([[1.0, 2.0]]), np.array([-0.99999, 0.5]), "parallel"), 0, np.zeros((4, 4)))
# zero-sum triple between a confirmed kink and the segment's end: U's region has gradient 0, V's
# -e_1; the kink of e_1 (s = 0.41) is confirmed by its pair, and the three zero-sum kinks at
# s = 0.74..0.79 leave both planes intact at V: 1 hyperplane of 4 was returned (error 1.09)
@example((np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, -1.0]]),
          np.array([-1.0, 1.0, -1.0, 1.0]), "zero_sum"), 5, np.ones((4, 4)))
# a 1.5e-8 unit (5.96e-8 x 0.25) beside unit ones (thorough profile, seed 26075), lost: FFN error
# 6.6e-6 at |x| = 1e3 against a bound 1.4e-9 |x| (a strict xfail before); found now (its kink
# contradicted a check point or an answer seen, and a further path found it)
@example((np.array([[1.0, 0.0, 5.96046448e-08, 0.5], [-1.0, 0.0, 0.0, -0.5], [0.0, 0.0, 0.0, 0.0]]),
          np.array([-1.0, 0.0, 0.25, -1.0]), "parallel"), 0, np.ones((4, 4)))
# a 1e-8 unit beside unit ones (thorough profile, seed 14589; a strict xfail before): its kink
# merged with a unit one's (the sum of their jumps confirmed as one), a silent error of 1e-8 |x|;
# found now as in test_ffn_float64_recovers_every_kind's seed-340 example
@example((np.array([[0.375, 0.25, 0.125], [1.0, 1.0, 0.5], [0.0, 0.0, 0.0]]), np.array([1e-8, -1.0, -1.0]),
          "parallel"), 0, np.ones((4, 4)))
# strict xfails before (OPEN_TF_FLOAT), fixed when a confirmation pair that would reach too far
# opens a piece nearer the kink instead of bisecting with the far pieces to the floor: a 1e-8 unit
# beside unit ones (thorough profile, seed 14589: its kink lost, 1e-8 |x|, or bisection to the
# floor); 2^-23 units beside unit ones (thorough, --hypothesis-seed 20261126: DegenerateProbeError
# or the output guard, refusals of good answers)
@example((np.array([[0.0, 0.25, 0.125], [1.0, 1.0, 0.5]]), np.array([1e-8, -1.0, -1.0]), "parallel"), 0,
         np.ones((4, 4)))
@example((np.array([[0.5, 1.0, 1.0, 1.0, -2.0], [1.0, 1.0, 1.0, 1.0, -2.0]]),
          np.array([2.0**-23, 2.0**-23, 1.0, 1.0, 1.0]), "generic"), 0, np.ones((4, 4)))
@example((np.array([[0.87164759, 0, 1.0, -0.44319615, 0.51117113, -0.06797498],
                    [1 / 3, 0, 0, 0.51117113, 0.51117113, -1.02234227]]),
          np.array([2.0**-23, 2.0**-23, 2.0**-23, 1.0, 1.0, 1.0]), "zero_sum"), 0, np.ones((4, 4)))
@example((np.array([[0.375, 1.0], [1.0, 0.0]]), np.array([1e-8, -1.0]), "generic"), 0, np.ones((4, 4)))
# a zero-sum group's rounding noise at f ~ 0 (thorough profile, --hypothesis-seed 91127, on main
# too) refused as "an FFN with biases" (AssumptionError): now PrecisionLossError, as the same noise
# of test_identically_zero_ffn_is_not_identifiable
@example((np.array([[0.015625, 1, 0, 1], [0.015625, 0, 0, -0.0]]), np.array([0.00390625, -1, 1, 1]),
          "zero_sum"), 60, np.zeros((4, 4)))
# an 8e-72 unit beside a zero-sum triple (thorough profile, --hypothesis-seed 91127, W* = 0; a
# strict xfail before): refused as the seed-20924 example of test_ffn_float64_recovers_every_kind
@example((np.array([[1, 1, 0.125, 1.125], [1, 0.125, 0.125, 0.25]]), np.array([8.16224014e-72, -1, -1, 1]),
          "zero_sum"), 0, np.zeros((4, 4)))
# an 8e-72 unit beside a zero-sum triple (the same run; a strict xfail before): every end of the
# path lies where the triple cancels (noise) or is silent (0): no gradient at a random end, on
# every attempt (DegenerateProbeError); the path is now probed for the units' scale
@example((np.array([[1, 0.5, 1, 0.125], [1, 1, 1, 0.5]]), np.array([8.16224014e-72, -0.75, 0.25, 1]),
          "zero_sum"), 510382, np.zeros((4, 4)))
# an 8e-72 unit beside -ReLU(z) - ReLU(z) + ReLU(2 z) (the same run; a strict xfail before): every
# answer is 0 in float64 (NonIdentifiableError), beyond its rounding model (premise:
# cancels_beyond_float64)
@example((np.array([[1.0, 1, 1, 2], [1, 1, 1, 2]]), np.array([8.16224014e-72, -1, -1, 1]), "zero_sum"), 0,
         np.zeros((4, 4)))
# an 8e-72 unit beside a zero-sum triple whose hyperplanes are 2-5 degrees apart (the same run; a
# strict xfail before): u = 0 (cone route) and f has a gradient only on 4 % of the directions, which
# all 32 cone draws missed (NonIdentifiableError "f == 0"); points beside each hyperplane now too
@example((np.array([[1, 0.5, 1, 1.5], [1, 0.125, 0.125, 0.25]]), np.array([8.16224014e-72, -1, -1, 1]),
          "zero_sum"), 0, np.zeros((4, 4)))
# 2^-24 units in a zero-sum triple (thorough profile, --hypothesis-seed 73106; the same regression,
# never on main): refused (no gradient at 3 points of an interval)
@example((np.array([[0.0, 0.25, 0.0, -0.0625], [-1.0, 0.0, 2.0**-24, -(2.0**-24)]]),
          np.array([-1.0, 0.25, 1.0, 1.0]), "zero_sum"), 0, np.zeros((4, 4)))
# 6.3e-298 entries beside a -1 (thorough profile, --hypothesis-seed 123911, after the end pieces'
# refit landed): an untyped LinAlgError, the refit's weighted rows Xr / s overflowing (s ~ 1e-311);
# such a piece is now kept as measured (ffn._fitted)
@example((np.array([[6.33697987e-298] * 2, [-1.0, 6.33697987e-298], [6.33697987e-298] * 2]),
          np.array([1.0, 1.0]), "generic"), 0, np.zeros((4, 4)))
# a zero-sum triple on axis-aligned hyperplanes (thorough profile, --hypothesis-seed 252841, the
# same on 191b4f4): DegenerateProbeError, a split point on x_1 = 0 whose e_1 step crossed the next
# hyperplane unseen by Euler's relation (AXIS_ALIGNED_TRIPLES; _PathSearch._blind_entries_hold)
@example((AXIS_ALIGNED_TRIPLES[0][0], AXIS_ALIGNED_TRIPLES[0][1], "zero_sum"), 0, np.zeros((4, 4)))
@example((AXIS_ALIGNED_TRIPLES[2][0], AXIS_ALIGNED_TRIPLES[2][1], "zero_sum"), 0, np.zeros((4, 4)))
def test_transformer_float64(target, seed, W):
    A, w, kind = target
    tf_float64_property(A, w, kind, W, seed)


def test_even_ffn_hides_W_from_vq_tilde_but_not_from_vq():
    rng = np.random.default_rng(2)
    d = 5
    B, a, W = rng.standard_normal((d, 4)), rng.standard_normal(4), rng.standard_normal((d, d)) / np.sqrt(d)
    A, w = np.concatenate([B, -B], axis=1), np.concatenate([a, a])
    X = rng.standard_normal((10, 3, d))
    assert np.abs(AntisymmetricOracle(ValueOracle(OneLayerTransformer(W, A, w)))(X)).max() < 1e-12
    rec, _oracle = recover_tf(W, A, w, seed=1)
    assert rec.diagnostics["route"] == "cone"
    assert rec.queries == transformer_query_count(d, 4, "cone") + rec.diagnostics["reasked_queries"]
    assert np.abs(rec.W - W).sum() <= rec.diagnostics["error_bound"]
    with pytest.raises(InvalidInputError, match="not identifiable"):
        recover_tf(W, A, w, route="antisymmetric")


def test_transformer_sympy_exact_both_routes():
    W = np.array([[1, -2], [3, 1]]) / 4
    for A, w, route in [
        ([[1, -1, 2], [1, 1, 0]], [1, -2, 1], "antisymmetric"),
        ([[1, -1], [2, -2]], [1, 1], "cone"),
    ]:
        rec, _oracle = recover_tf(W, np.array(A), np.array(w), SYMPY, probes="basis")
        assert rec.diagnostics["route"] == route
        assert all(SYMPY.is_zero(a - b) for a, b in zip(rec.W.ravel(), SYMPY.asarray(W).ravel()))


@given(tst.zero_ffns(max_d=3), seeds)
@example((np.array([[1e-300, 1e-300]]), np.array([1.5, -1.5])), 0)  # subnormal FMA noise (thorough)
@example((np.array([[0.42340664, 0.42340664]]), np.array([0.8125, -0.8125])), 1)  # FMA noise read as u (ci)
def test_transformer_with_zero_ffn_is_not_identifiable(target, seed):
    """As for the FFN alone: NonIdentifiableError, or DegenerateProbeError on FMA noise."""
    A, w = target
    oracle = ValueOracle(OneLayerTransformer(np.eye(A.shape[0]), A, w), record=True)
    with pytest.raises((NonIdentifiableError, DegenerateProbeError, PrecisionLossError)) as info:
        learn_transformer(oracle, rng=np.random.default_rng(seed))
    assert info.type is NonIdentifiableError or any(np.any(r.y != 0) for r in oracle.log)


# --- open: counterexamples of the thorough profile not yet fixed (strict xfail: a fix shows) ---

#: d = 2, a zero-sum triple c = (-8, 14, -6) on the normals (3/4, 1), (6/7, 1), (1, 1) beside
#: (1, 0) (a strict xfail before, OPEN_EXACT; thorough profile, --hypothesis-seed 7587 on
#: test_ffn_sympy_is_exact; the same on 7672df1): the triple's terms cancel outside the two wedges
#: between its lines (8.1 degrees each), so the pieces on both sides of it have one gradient, and an
#: interval whose midpoint missed the wedge was taken as kink-free (_PathSearch.segment's
#: same-gradient branch), as was one beside a kink whose confirmation the triple cannot fail: a
#: SILENT wrong answer, 1 hyperplane of 4 (57 queries) at seeds 2, 3 and 6 of 0-7, the checks
#: passing.  Fixed since every interval the search drops in exact arithmetic is first probed at
#: points 2^-4 radians apart in angle (_PathSearch.off_plane): 4 hyperplanes at seeds 0-7
#: (158-207 queries, 76-112 of them probes; 119-127 before at the seeds that found them).
NARROW_WEDGES = (np.array([[-2.0, -3.0, -3.0, -12.0], [0.0, -4.0, -3.0, -14.0]]),
                 np.array([1.0, -2.0, -2.0, 1.0]), "zero_sum")


@pytest.mark.parametrize("seed", range(8))
def test_fixed_exact_zero_sum_triple_in_8_degree_wedges(seed):
    sympy_case(NARROW_WEDGES, seed, inside_contract)


#: NARROW_WEDGES in float64 (a strict xfail before, OPEN_FLOAT_WEDGES; found by helper exact running
#: it in float64; the same on 7672df1): the same SILENT wrong answer as in sympy before its probes,
#: 1 hyperplane of 4 at seeds 2, 3 and 6 of 0-7, f off by the triple's bump (8.1 degree wedges, far
#: above FLOAT64_ANGLE: inside the float contract).  Fixed since float64 asks the probes of
#: _PathSearch.off_plane too (Tuning.wedge_log2 = 4), each held to its plane within the
#: prediction's tolerance: 4 hyperplanes at seeds 0-7, every query counted.  It waited for
#: sec4.1/run-bound-tight's cone target, built on a 1e-9 kink the FFN learner omits: the probes
#: meet that kink at path seed 11 (86 pieces its gradients cannot tell apart, each booked while a
#: duplicate's half was dropped: bound / error 2.1e5 against the slack 1e5; 2.1e4 now), so the
#: target moved to seed 21 (3.4e3, slack 1e4).
@pytest.mark.parametrize("seed", range(8))
def test_fixed_float_zero_sum_triple_in_8_degree_wedges(seed):
    A, w, _ = NARROW_WEDGES
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, 2)
    assert rec.L == 4
    _float_case(A, w, seed)


@pytest.mark.parametrize("family, arith", [("sympy", SYMPY), ("float64", FLOAT64)])
def test_probes_are_what_finds_the_8_degree_wedges(monkeypatch, family, arith):
    """Without the probes of the intervals dropped as kink-free (wedge_log2 None: the midpoint of
    an interval between pieces of one gradient only, as before), NARROW_WEDGES at seed 2 is the
    silent answer again, in sympy and float64: 1 hyperplane of 4, no probe asked (the tests
    above can fail)."""
    from dataclasses import replace

    monkeypatch.setitem(TUNING, family, replace(TUNING[family], wedge_log2=None))
    A, w, _ = NARROW_WEDGES
    rec, oracle = recover_ffn(A, w, arith, 2)
    check_count(rec, oracle, 2)
    assert rec.L == 1 and rec.diagnostics["ledger"]["wedges"] == 0


#: d = 2, the triple 2 ReLU(15/16 x_0 + x_1) - 4 ReLU(31/32 x_0 + x_1) + 2 ReLU(x_0 + x_1) beside
#: ReLU(x_0): its terms cancel outside two wedges of 1.85 degrees, below the resolution 2^-4
#: radians (3.6 degrees).
BELOW_RESOLUTION = (np.array([[0.9375, 0.96875, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]]),
                    np.array([2.0, -4.0, 2.0, 1.0]))


@st.composite
def zero_sum_triples_in_d2(draw):
    """d = 2: a zero-sum triple ``sum_k c_k ReLU(t_k x_0 + x_1)`` (t_1 < t_2 < t_3 dyadic, 1/64
    apart or more: wedges from 0.9 degrees up, around the resolution WEDGE; ``c = (t_2 - t_3,
    t_3 - t_1, t_1 - t_2)`` times a dyadic scale, so that ``sum_k c_k (t_k, 1) = 0``) beside
    a live dyadic unit (a target with no kink outside the triple is NonIdentifiableError when
    the triple is missed: no path to read the premise on)."""
    step = st.integers(1, 64).map(lambda k: k / 64)
    t1 = draw(st.integers(-128, 128).map(lambda k: k / 64))
    t2 = t1 + draw(step)
    t3 = t2 + draw(step)
    scale = draw(st.sampled_from([0.5, 1.0, -1.0, 4.0]))
    dyadic = st.integers(-8, 8).map(lambda k: k / 4)
    extra = [draw(st.tuples(dyadic, dyadic, dyadic.filter(bool)).filter(lambda u: u[0] or u[1]))]
    A = np.array([[t1, t2, t3] + [a for a, _, _ in extra], [1.0, 1.0, 1.0] + [b for _, b, _ in extra]])
    w = np.array([scale * (t2 - t3), scale * (t3 - t1), scale * (t1 - t2)] + [v for _, _, v in extra])
    return A, w, "zero_sum"


@given(zero_sum_triples_in_d2(), st.integers(0, 7))
def test_exact_zero_sum_triples_in_d2_at_the_resolution(target, seed):
    """The exact contract where it is sharp: zero-sum triples in wedges around WEDGE (0.9 degrees
    up), d = 2, learned exactly whenever the path crosses no zero-sum run within WEDGE (in d = 2:
    the wedge's own angle; narrower ones are filtered, and shown in the next test)."""
    sympy_case(target, seed, assume)


def test_exact_zero_sum_group_below_the_resolution_may_be_missed_silently():
    """The documented limitation, shown: a zero-sum triple in wedges narrower than WEDGE (1.85
    degrees against 3.6).  No finite set of queries sees arbitrarily thin wedges: at seeds 0-11
    the learner returns f exactly (a probe or check point happened to land inside: seeds 0, 2,
    5, 9-11) or SILENTLY f less the triple's terms (seeds 1, 3, 4, 6-8: u and the (1, 0) kink
    exact, the triple's three hyperplanes missing), never anything else; every query counted
    (the probes among them), and the contract's premise reads the miss (the run is narrower
    than WEDGE on the path)."""
    A, w = BELOW_RESOLUTION
    u, N, c = canonical_ffn(A, w, SYMPY)
    triple = [j for j in range(len(c)) if N[j][1] != 0]
    assert len(triple) == 3 and narrowest_zero_sum_run(A, w, [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]) < WEDGE
    missed = []
    for seed in range(12):
        rec, oracle = recover_ffn(A, w, SYMPY, seed)
        check_count(rec, oracle, 2)
        assert all(SYMPY.is_zero(a - b) for a, b in zip(rec.u, u))
        if rec.L == len(c):
            assert all(SYMPY.is_zero(a - b) for a, b in zip(np.concatenate([rec.N.ravel(), rec.c]),
                                                            np.concatenate([N.ravel(), c])))
            continue
        assert narrowest_zero_sum_run(A, w, rec.diagnostics["path"]) <= WEDGE
        rest = [j for j in range(len(c)) if j not in triple]
        assert rec.L == len(rest) and all(
            SYMPY.is_zero(a - b)
            for a, b in zip(np.concatenate([rec.N.ravel(), rec.c]),
                            np.concatenate([N[rest].ravel(), c[rest]]))
        )
        missed.append(seed)
    assert missed  # the limitation is real: no probe saw the wedge


# --- counterexamples of the thorough profile, fixed (each a strict xfail before) ---------------

#: 0.1875 |x_3| - 0.125 |x_2| and a 1.7e-12 kink on x_0 = 0, d = 5 (FIXED_FLOAT, its story there):
#: the search merges the tiny kink into the x_2 one's, below its grade but above the polish's.
MERGED_BELOW_SEARCH_GRADE = (
    np.array([[0.0, 0.0, 4.50630286e-12, 0.0, 0.0, 0.0], [0.0] * 6, [-1.0, 0.0, 0.0, 0.0, 0.0, -0.5],
              [0.0, 0.5, 0.0, 0.0, 0.0, 0.0], [0.0] * 6]),
    np.array([0.375, 0.375, 0.375, 0.375, 0.375, -1.0]),
)

_T94 = 1.9157733e-94

#: Counterexamples of the FFN alone (OPEN_FLOAT before), each a strict xfail before: answered right
#: since the FFN's jump-size rule (a further path's kink is on a known hyperplane only with the same
#: jump), every attempt's answers held by every network, and the end pieces re-measured at the
#: units' scale came together (merge of issue 23's two FFN branches), or since what its comment says.
FIXED_FLOAT = [
    # (strict xfails before, OPEN_FLOAT; thorough profile, --hypothesis-seed 66609 on
    # test_ffn_float64_recovers_every_kind; the same on main) hyperplanes (0, 1, 0, 0) and (1e-6, 1,
    # 0, 0), L1 distance 2e-6 of the normalised normals (2x FLOAT64_ANGLE), beside (0, 0, 0, 1),
    # d = 4: refused on all three paths of seed 0.  On the first path x* lies between the two
    # kinks, 2.6e-8 from each (x*_1 = 2.6e-8): Euler's residual was the same at steps 2^-10 and
    # 2^-14 |x| (both cross the (1e-6, 1) kink), taken for x* on a hyperplane, and the nudges left
    # the 5e-8 wide region; a step of 2^-18 passes Euler's check with a gradient (0, 1.993, 0, 1)
    # for (0, 1, 0, 1) (its error on a coordinate where x* is ~0: Euler's relation is blind there).
    # (--hypothesis-seed 91733, helper fwedge) d = 2, seed 0: (0.0625, 2^-24) beside (1, 0), L1
    # distance 9.54e-7: refused (no gradient at 3 points of an interval of width 6.1e-7).  Answered
    # since a residual repeated at two steps sends the piece to one attempt at the smallest step,
    # 2^-26 |x| (_PathSearch.piece; its gradient exact there, error ~1.5e-5 relative), and a
    # confirmation pair clears each piece's own error over its own distance to x*
    # (Tuning.pair_own_distance; helper openfloat)
    (np.array([[1e-06, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), np.ones(3), 0),
    (np.array([[0, 0.0625, 1, 0], [1, 2.0**-24, 0, 0]]), np.ones(4), 0),
    # (strict xfails before, OPEN_FLOAT; thorough profile, --hypothesis-seed 78304, the same on main)
    # d = 3, "wide": hyperplanes (1, 3.8e-6, 1) and (1, 0, 1), L1 distance 3.8e-6 (4x
    # FLOAT64_ANGLE), beside a twin pair on (1, 1, 1), and its mirror: refused at seed 1 (bisection
    # to the floor; no gradient at 3 points of an interval of width 5.7e-7); (--hypothesis-seed
    # 91733, helper fwedge) d = 2, an even target, (0.0234375, 2^-24) and (0.125, 0) at L1 distance
    # 2.5e-6: refused at seed 0 (bisection to the floor).  Answered since s* is where the pieces'
    # predictions f(x_p) + G_p^T (x - x_p) meet, not their planes through 0 (a measured G misses
    # Euler's relation by its error: x* off the kink by that over the slope, beyond the predictions'
    # tolerance near the piece, each piece opened there nearer the kink; helper benchref)
    (np.array([[-1.0, -1, -1, -1], [3.78507991e-06, 0, -1, -1], [-1.0, -1, -1, -1]]), np.ones(4), 1),
    (np.array([[1.0, 1, 1, 1], [3.78507991e-06, 0, 1, 1], [1.0, 1, 1, 1]]), np.ones(4), 1),
    (np.array([[0, 0.0234375, 0, 0.125, -0.0, -0.0234375, -0.0, -0.125],
               [0.375, 2.0**-24, 0, 0, -0.375, -(2.0**-24), -0.0, -0.0]]), np.full(8, 0.875), 0),
    # (thorough profile, --hypothesis-seed 73101; the same on main) a 1e-10 unit beside unit ones,
    # d = 4: bisection to the floor (DegenerateProbeError, interval 4e-13), a refusal
    (np.array([[0.0, 0.0, 0.0625, 0.0, 0.0625], [0.0, 1.0, 0.0625, 0.0625, 0.0625],
               [0.0625, 0.88963965, 0.0625, 0.0625, 0.0625], [0.0625, 0.0625, -0.5, 0.0625, 0.0625]]),
     np.array([1.0, 1.0, 1e-10, 1.0, 1.0]), 0),
    # NEW (thorough profile, --hypothesis-seed 73107; the same on main), d = 5, a 1e-10 unit beside
    # 1/16 and unit ones: a SILENT wrong answer (f outside its bound: its kink merged unbooked)
    (np.array([[0.0, 0.0, -0.5, -0.5, -0.5], [-0.5] * 5, [-0.5, -0.5, -1.0, -0.5, -0.5],
               [-0.5, -0.5, -0.5, 0.0, -0.5], [-0.5] * 5]),
     np.array([1.0, 0.0625, 0.0625, 1e-10, 0.0625]), 0),
    # the same run: a refusal (bisection to the floor)
    (np.array([[0.0, -0.25, 0.0, 1e-10, 1e-10]] + [[1e-10] * 5] * 4), np.ones(5), 0),
    # since the polish confirms each of its kinks at its own gradients' grade (a strict xfail
    # before, OPEN_FLOAT): the merge below seen by the polish's confirmation, the search's network
    # stands (its bound holds the merge)
    # (thorough profile, --hypothesis-seed 73101; the same on main): a 1e-10 unit beside unit
    # ones, d = 4.  A SILENT wrong answer first: its kink (c = 8.9e-11, below the search's gradient
    # errors ~2.5e-10) is confirmed merged with a unit kink's (the pair test resolves ~1/PAIR_MARGIN
    # of a jump), nothing is booked for it (kink_free 0), and the polish re-measures the recovered
    # regions, one of which holds the lost kink: error 8.6e-11 |x| against a polished bound 4.0e-11
    # (the search's, 5.3e-9, held); a bound matter (the polish's), with helper ffnbound's
    (np.array([[1.0, 0.0, 0.0, 0.0625, 0.0625], [0.0, 1.0, 0.0625, 0.0625, 0.0625],
               [0.0625, 0.0625, 0.88963965, 0.0625, 0.0625], [0.5, 0.0625, 0.0625, 0.0625, 0.0625]]),
     np.array([1.0, 1.0, 1e-10, 1.0, 1.0]), 0),
    # since the polish confirms each of its kinks at its own gradients' grade (a strict xfail
    # before, OPEN_FLOAT): the merge below seen by the polish's confirmation, the search's network
    # stands (its bound holds the merge)
    # (thorough profile, --hypothesis-seed 73107; the same on main), d = 5, a 1e-10 unit beside
    # 1/16 and unit ones: a merged canonical kink (the polished bound's tolerance asks for it)
    (np.array([[0.0, -1.0, -0.5, -0.5, -0.5], [-0.5] * 5, [-0.5, -0.5, 0.0, -0.5, -0.5],
               [-0.5, -0.5, -0.5, 0.0, -0.5], [-0.5] * 5]),
     np.array([1.0, 0.0625, 0.0625, 0.0625, 1e-10]), 0),
    # (a strict xfail before, OPEN_FLOAT; thorough profile, --hypothesis-seed 67115 on
    # test_ffn_float64_recovers_every_kind; the same on main), d = 5, "parallel": 0.1875 |x_3|
    # - 0.125 |x_2| and a 1.7e-12 kink on x_0 = 0: a SILENT wrong answer, |f_hat - f| =
    # 1.69e-12 |x| (x_0 < 0) against a polished bound 1.44e-12 (seeds 1, 2: 1.74e-12, 2.2e-12,
    # barely held; 3-5 right).  The search confirms the tiny kink
    # merged into a unit one's (its effect below the pair's tolerance at the search's errors
    # ~1e-10; nothing booked: kink_free 0, its bound 3.5e-10 holds); the polish re-measures the 3
    # recovered regions at their analytic centres, which have x_0 = 0 exactly (the recovered cones
    # do not involve x_0): forward steps there measured the x_0 > 0 side at both ends, so u_0 was
    # 2 m for m.  Since -U's region is measured at -c with mirrored steps, u is exact for any
    # missed kink (u_0 = 1.6899e-12; bits up by ~0.5 on the bench's 90 FFN runs, bounds as before),
    # but the kink now sits in the x_2 kink's normal (-1.35e-11): |f_hat - f| = m at x = -e_0,
    # half its own, half absorbed, against a polished bound 1.59e-12.  The polished bound's premise
    # (every kink above its grade found) fails for a kink the search merged unbooked; open: a charge
    # for kinks the polish's grade resolves but the search's did not.  Measured (helper ffn4):
    # the kinks cross the path close together (x_2 = 0 at x*_0 = 0.0709, x_0 = 0 just after):
    # that is why the search merged them, and why nothing near the path sees the lost one: at the
    # polish's confirmation of that kink f(x*) is off by m x*_0 = 1.2e-13 against a tolerance
    # 2.5e-13, and f_hat - f = -m |x_0| only where sign(x_0) != sign(x_2), so a check point shows
    # more than the polished bound only with |x_0| / |x|_inf > B / m = 0.94 (the two plane points
    # on x_2 = 0 have 0.026 and 0.249).  The search's per-jump charge d (err_a + err_b) / 2 for the
    # merge (1.75e-10) would hold it but is the unpolished bound (220x: faithful bound / true
    # error above the bench's 1e3); a rigorous polish-grade charge needs the jump of every
    # polished kink bounded off its hyperplane's other directions (~2 (d - 1) points a kink).
    # Fixed since the polish's confirmation of each kink asks its wedges (_wedge_contradiction:
    # 2 (d - 1) points x* + t (e_i +- n) beside it, t up to 4 |x*|_inf, held to the plane of
    # their side's piece through f(x*) at the polished gradients' errors): at seeds 0-2 a point
    # beside the x_2 kink is off by ~t m (the merged x_0 kink), a further path through it finds
    # no more (m is below the search's grade), and the search's network stands (bound 6e-10
    # holding the merge; seed 4 finds the x_0 kink, 3 hyperplanes, bound 1.6e-12)
    (*MERGED_BELOW_SEARCH_GRADE, 0),
    # the FFN of FIXED_TF_FLOAT's last entry alone (a 1e-7 kink beside a zero-sum triple's, x*
    # 1e-8 from the triple's kink): refused at seeds 0, 1 and 4 (no gradient at 3 points, bisection
    # to the floor); answered since a split point's duplicate piece steps away from the jump's
    # hyperplane (_PathSearch._opened)
    (np.array([[0.87164759, 0, 0, 0, 0, -0.44319615, -0.51117113, 0.95436729],
               [0, 0, 0, 0, 0, 0.14785201, -0.51117113, 0.36331913]]),
     np.array([2.0**-23, 0, 2.0**-23, 0, 0, 1.0, 1.0, 1.0]), 0),
    (np.array([[0.87164759, 0, 0, 0, 0, -0.44319615, -0.51117113, 0.95436729],
               [0, 0, 0, 0, 0, 0.14785201, -0.51117113, 0.36331913]]),
     np.array([2.0**-23, 0, 2.0**-23, 0, 0, 1.0, 1.0, 1.0]), 4),
    # (thorough profile, --hypothesis-seed 73101; the same on main; a strict xfail before,
    # OPEN_FLOAT, for the canonical check's premise) a 1e-10 unit beside unit ones, d = 4: f
    # within its bound 3.1e-11, the 1e-10 unit's kink (mass 1.2e-10) merged with the (0, 1, 1/16,
    # 1/16) unit's (L1 distance 0.105 of the normalised normals): f moves by at most m delta =
    # 1.25e-11 |x|, within B, but the jump of the merged kink is off by the tiny one's, 1.2e-10, 4x
    # the old check's 2 B (a tolerance nothing in the learner promised).  The learner's guarantee is
    # sup |f_hat - f| <= B; check_canonical now checks its per-kink corollary
    # (FFNRecovery.kink_check): this kink may be merged unless m > (4 / tau + 2) B, ~2.3e-9 at its
    # margin tau ~ 0.05 (measured: E / allowed 0.05 and 0.25 at the worst of 64 points).  Not
    # resolved: on the path the two kinks are ~1e-3 apart, below the search's gradient errors
    # (2.5e-10, steps 2^-10 |x|); at the polish's plane points its effect, <= 1.25e-11 |x|, is of
    # the order of the polished prediction's own error (estimated: gradient errors ~B / (d (L + 2))
    # = 2e-12 an entry over |x - x_a|_1 ~ 4): no reliable trigger, and a wedge measurement on each
    # side of every hyperplane would cost 4 L (d + 1) queries on every target, doubling the polish,
    # for a kink whose effect is already within B
    (np.array([[0.0, -0.5, 0.0625, 0.0625, 0.0625], [1.0, 0.0625, 1.0, 0.0625, 0.0625],
               [0.0625, -0.11036035, 0.0625, 0.0625, 0.0625], [0.0625, 0.0, 0.0625, 0.0625, 0.0625]]),
     np.array([1.0, 1.0, 1e-10, 1.0, 1.0]), 0),
    # (strict xfails before, OPEN_FLOAT_TINY_BESIDE_ZERO_SUM; thorough profile, --hypothesis-seed
    # 112713 on test_ffn_float64_recovers_every_kind; the same on e634946) a 1.9e-94 unit beside a
    # zero-sum triple, d = 2: refused on every path (no gradient at a random end: the ends lie
    # where the triple's units cancel, answering their rounding ~1e-16 |x|, and the gradients met,
    # 0 and the tiny unit's, left the tolerances at that scale; the units'-scale probes, pieces
    # at fixed fractions of the path, missed the regions of the triple's gradients).  Answered
    # since those probes ask the path's values 2^-4 radians apart and take gradients where
    # |f| / |x| is largest (_PathSearch._probe_scale): the first's piece lands where the far unit
    # (2e-3 (1, 0.5)) stands alone, its gradient a scale the ends' rounding fits (its close
    # normals 1e-3 radians apart; refused at seed 6 of 0-7, bisection to the floor), the second's
    # in a wide wedge of the triple (3 hyperplanes each)
    (np.array([[1, 1, 0.5, 0.49804688], [0, 0.5, 0.5, 0.49902344]]),
     np.array([1.9157733e-94, 1.953125e-03, -1, 1]), 1917645801),
    (np.array([[1, 1, 0.5, 0.5], [0, 0.5, 0.5, 0.0]]), np.array([1.9157733e-94, -1, 1, 1]), 233),
    # (a strict xfail before, in OPEN_FLOAT_TINY_BESIDE_ZERO_SUM, same seed) f = 1.9e-94 ReLU(x_0)
    # exactly (the pair on (-1, 0) cancels; the oracle answers 1.9e-94 x_0 or an exact 0), answered
    # exactly: u = (1.9e-94, 0), one kink c = 1.9e-94 on (1, 0), bound 3.9e-106.  Not the learner
    # nor the allowance (7.8e-106, from that bound) was wrong but the test's truth: canonical_ffn sums
    # the hyperplane's weights in float64, (1.9e-94 - 1) + 1 = 0, and u = A w alike, a truth without
    # the unit; check_canonical's truth now sums exactly (canonical_truth)
    (np.array([[1, -1, 0, -1], [0, 0, 0, 0.0]]), np.array([1.9157733e-94, -1, -1, 1]), 0),
    # (strict xfails before, OPEN_FLOAT_TINY_BESIDE_ZERO_SUM; thorough profile, --hypothesis-seed
    # 112713 on test_ffn_float64_recovers_every_kind; the same on e634946) a 1.9e-94 unit beside a
    # zero-sum triple, d = 2 (values as Hypothesis printed them, 8 digits), c_1 n_1 + c_2 n_2 + c_3
    # n_3 = 0 with n_2, n_3 3.1e-5 to 1.4e-4 radians apart and |c_1 n_1| ~ 6.1e-5: refused on every
    # path (DegenerateProbeError: "no gradient at a random end of the path").  Traced (helper
    # floatref): the units of weight 0.44 and 1 cancel on the half plane n_2^T x > 0 but in the
    # 1.4e-4 radian wedge, so the gradients met are 0, ~5e-9 and c_1 n_1 (6.1e-5) while an answer
    # carries the units' rounding, ~1e-16 |x|; every path has an end there, whose Euler residual,
    # ~1e-16 |x|_1 / h, grew as the step shrank and stood above its tolerance at every step (the
    # tolerances knew the units only from gscale, 6.1e-5 or 0; the gradient's error counted their
    # rounding only where no gradient stood above it), and the units'-scale probes, 2^-4 radians
    # apart, missed the wedge.  Answered since the units' scale is read from the answers' own
    # rounding when Euler's residual grows as the step shrinks (_PathSearch._rounding_scale: the
    # residual taken as one unit roundoff of the units, within 4 tol_ulps of the largest gradient
    # measured, gscale raised to it, the steps already asked re-read at no query), and such a
    # piece's error holds that rounding (_gradient_error; the float64 bench row for row unchanged):
    # 3 hyperplanes (the tiny unit below the resolution), 183-428 queries (0 or 1 restart), errors
    # 5.8e-16 .. 2.1e-12 against bounds 3.6e-11 .. 7.5e-8; at path seeds 0-5 all answer but the
    # fourth's seed 1 (refused)
    (np.array([[1, -1, 0.5, 0.21881104], [0, 0.5, 1, 0.43746948]]),
     np.array([_T94, 6.10351562e-05, -0.4375, 1]), 958822900),
    (np.array([[1, 1, 0.5, 0.50006104], [0, 0.5, 0.5, 0.50003052]]), np.array([_T94, -6.10351562e-05, -1, 1]),
     843903977),
    (np.array([[1, 1, 0.5, 0.49993896], [0, 0.5, 0.5, 0.49996948]]), np.array([_T94, 6.10351562e-05, -1, 1]),
     843903977),
    (np.array([[1, 0, 1, 0.4375], [0, 1, 1, 0.43756104]]), np.array([_T94, -6.10351562e-05, -0.4375, 1]), 0),
    # the same class, shrunk by the same seed's run after the units'-scale probes (helper floatref;
    # seeds 2 and 3 answered then; printed 6.10351562e-05, 1.00006104, 1.22070312e-04): normals
    # (1, 2^-14) and (1, 2^-13 / (1 + 2^-14)), 6.1e-5 radians apart
    (np.array([[1.0, 1.0, 2.0**-14, 1 + 2.0**-14], [0.0, 2.0**-14, 2.0**-14, 2.0**-13]]),
     np.array([_T94, -1.0, -1.0, 1.0]), 0),
]


def test_polish_wedges_hold_a_kink_merged_below_the_search_grade(monkeypatch):
    """MERGED_BELOW_SEARCH_GRADE at seeds 0-2: the polish was kept with its 1.7e-12 kink merged,
    f SILENTLY 6 % over the polished bound (a strict xfail before).  The polish's wedge points
    (:func:`~attnproof.theorems.transformer.ffn._wedge_contradiction`, 2 (d - 1) a kink, counted
    among the polish's confirmation) contradict the merged kink, or (seeds 0, 1 since session 24)
    the points of ``ffn._thin_wedge_contradiction`` beside the first kink confirmed are off both
    planes and so is the point between, and the search's network stands (bounds 3.5e-10 and
    6.4e-10 in 151 queries, where further paths took 636 for 7.9e-10 and 1.4e-9); f is within its
    bound, every query counted, at least one kink's confirmation asked.  Without both kinds of
    points (each sees this merge, helper merge23) the silent answer is back (the check can fail)."""
    from attnproof.theorems.transformer import ffn

    A, w = MERGED_BELOW_SEARCH_GRADE
    for seed in (0, 1, 2):
        rec, oracle = recover_ffn(A, w, seed=seed)
        check_function(rec, A, w, np.random.default_rng(seed))
        check_count(rec, oracle, 5)
        assert rec.diagnostics["ledger"]["confirmed"] >= 3 + 2 * (5 - 1)
    monkeypatch.setattr(ffn, "_wedge_contradiction", lambda *args: None)
    monkeypatch.setattr(ffn, "_thin_wedge_contradiction", lambda *args: None)
    rec, _ = recover_ffn(A, w, seed=0)
    with pytest.raises(AssertionError):
        check_function(rec, A, w, np.random.default_rng(0))


def test_a_further_path_pivots_off_a_hyperplane():
    """A contradicting plane point lies on a recovered hyperplane (to its errors), where no
    gradient can be taken: its further path was refused at its first step (``end_piece``:
    DegenerateProbeError; met on OPEN_TF_FLOAT's first entry before, a 2^-24 unit's kink merged
    and seen at a plane point 5e-9 off a unit hyperplane).  The pivot moves off along r
    (``ffn._pivot``), its gradient exact there, every query counted."""
    from attnproof.measure import Session
    from attnproof.theorems.transformer._path_search import _PathSearch
    from attnproof.theorems.transformer.ffn import _pivot

    # ReLU(x_0 - x_1) - ReLU(x_2) / 2
    A, w = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]]), np.array([1.0, -0.5])
    oracle = ValueOracle(ReluFFN(A, w))
    search = _PathSearch(Session(oracle, FLOAT64), np.array([0.25, -1.0, 0.75]), 2.0**-40, 100)
    z = np.array([0.5 - 2.0**-32, 0.5, 0.25])  # 2^-32 beside unit 0's hyperplane x_0 = x_1
    with pytest.raises(DegenerateProbeError, match="no gradient"):
        search.end_piece(z)
    p = _pivot(search, z)
    assert abs(p.x[0] - p.x[1]) > 2.0**-20
    assert np.allclose(p.G, A @ (w * (A.T @ p.x > 0)), rtol=0, atol=1e-9)
    assert search.ledger.nudges == 1 and search.ledger.total(3) == oracle.queries


def _float_case(A: np.ndarray, w: np.ndarray, seed: int) -> None:
    rec, _ = recover_ffn(A, w, seed=seed)
    check_function(rec, A, w, np.random.default_rng(seed))
    check_canonical(rec, A, w)


@pytest.mark.parametrize("A, w, seed", FIXED_FLOAT)
def test_fixed_float_counterexamples(A, w, seed):
    _float_case(A, w, seed)


def test_the_units_scale_read_from_rounding_is_what_answers_them(monkeypatch):
    """FIXED_FLOAT's 1.9e-94 units beside a triple in 6e-5 radian wedges (the last entry): answered,
    the units' scale read from the answers' rounding at some piece (``_Piece.rounding``); without
    the read (_PathSearch._rounding_scale never reading) refused again, no gradient at a random end
    of the path (the fixed test above can fail)."""
    from attnproof.theorems.transformer import _path_search

    A, w, seed = FIXED_FLOAT[-1]
    read = []
    accepted = _path_search._PathSearch._accepted

    def spy(self, *args, **kw):
        read.append(kw.get("rounding", False))
        return accepted(self, *args, **kw)

    monkeypatch.setattr(_path_search._PathSearch, "_accepted", spy)
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, 2)
    assert any(read) and rec.L == 3
    monkeypatch.setattr(_path_search._PathSearch, "_rounding_scale", lambda self, *args: False)
    with pytest.raises(DegenerateProbeError, match="random end of the path"):
        recover_ffn(A, w, seed=seed)


#: (a strict xfail before, the last of OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 48213 on
#: test_transformer_float64, helper fwedge; the same on main e634946), d = 3, "generic", W* = 0, seed
#: 1: a 1e-9 unit T on (1, 1, 0) beside units on (1, 1, 1) and K on (1, 0, 1): refused (bisection to
#: the floor; no gradient at 3 points of an interval before): a refusal of a good answer (its
#: sibling, the 1e-9 unit on (1, 1, 0) among others, answered: FIXED_TF_FLOAT).  Traced (helpers
#: openfloat, tffloat; the FFN alone at path seed 1): the jump J between the end pieces is K's plus
#: T's, so x* lies 1.9e-9 off K's hyperplane (x*_0 = -x*_2), in the region between K and T; the
#: piece opened there steps across K (h = 2^-10 |x|) and passes Euler's check (it holds for both of
#: K's sides, and any mix of them, at a point on K) with pa's gradient but for 2e-6 of K's jump
#: (0.7499995 on x_0 and x_2, x*'s own 0.5), 4.9e-7 from pa's, beyond its error 4.3e-10; told from
#: both ends, it was never measured again (the _opened signed steps were for duplicates only), and
#: every next x* landed beside it, ~2e-9 further along the path, until bisection reached the floor.
#: Answered since a piece whose gradient lies on the line from one end's to the other's (where no
#: region between them has its gradient), its steps backwards disagreeing, is measured again
#: stepping along +-sign(J) (_PathSearch._opened, _mixes): x*'s own gradient, pb's duplicate to the
#: 1e-9 jump; then 3 hyperplanes, bound 1.4e-11 (FFN path seeds 0-7 all 3 hyperplanes; seeds 2, 3,
#: 6 took 5338-9667 queries before, 2 of them merging T, 167-709 now); W* = 0 then refused by the
#: output guard (the FFN checked alone below)
MIXED_STEP_TF = (
    np.array([[1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 1.0, 1.0]]),
    np.array([0.25, 1e-09, 0.0, 0.25, 0.25]), "generic", 1, np.zeros((4, 4)),
)


#: (strict xfails before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 70529 on
#: test_transformer_float64, helper fwedge), d = 2, "zero_sum", W* = 0, seed 0: a 5.6e-80 unit on
#: (1, 0) beside a zero-sum triple, wedges of 3.9 and 8.1 degrees: refused (no gradient at a random
#: end of the path), the first also on e634946, the second a regression of float64's probes of
#: intervals dropped as kink-free (answered on e634946).  Traced (helper floatref): the triple's units
#: cancel outside its wedges, answering their rounding (~1e-16 |x|) where the tiny unit's or no
#: gradient stands, so the ends there failed Euler's check (the tolerances knew only the gradients
#: met, 5.6e-80 or 0) and the units'-scale probes, pieces at fixed fractions of the path, missed the
#: wedges; where every end passed (gradients exactly 0), the first probe of [U, V] off the plane of
#: 0 was such rounding (5.6e-17; the regression: e634946 asked the midpoint only), whose piece then
#: failed homogeneity within the units' rounding (PrecisionLossError), while a later probe of the
#: same batch lay in a wedge (|f| 4.6e-3).  Answered since the units'-scale probes ask the path's
#: values 2^-4 radians apart and take gradients where |f| / |x| is largest, and a batch of probes
#: returns the one farthest off the plane per |x| (_PathSearch._probe_scale, off_plane; either
#: alone answers the second): 3 hyperplanes (the tiny unit below the resolution), W* = 0 then
#: refused by the output guard (the FFN checked alone below).
TINY_BESIDE_TRIPLE_TF = [
    (np.array([[1.0, 0.75, 0.859375, 1.609375], [0.0, 0.859375, 0.859375, 1.71875]]),
     np.array([5.60266487e-80, -1.0, -1.0, 1.0]), "zero_sum", 0, np.zeros((4, 4))),
    (np.array([[1.0, 0.75, 1.0, 1.75], [0.0, 1.0, 1.0, 2.0]]),
     np.array([5.60266487e-80, -1.0, -1.0, 1.0]), "zero_sum", 0, np.zeros((4, 4))),
]

#: (a strict xfail before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 930118 on
#: test_transformer_float64, helper tffloat; the same at 9087253), d = 2, "zero_sum", W* = 0, seed 2:
#: units on one hyperplane x_0 + x_1 = 0 cancelling to -0.2445 ReLU(-0.39 (x_0 + x_1)) (kappa ~11)
#: beside three dead ones: refused (bisection to the floor, interval 3.45e-13 after 47 steps; FFN
#: path seeds 0, 1, 3 answered): a refusal of a good answer.  Traced (helpers tffloat, tffloat2):
#: the end piece on the dead side is exact (G = 0, error 0), the live one G = 0.0954 (error 3e-11);
#: x*, where their predictions meet, lies 2.3e-14 off the hyperplane on the live side (the live
#: gradient's error moves it), where f(x*) = -2.2e-15 is f's true value: on the live plane (its
#: tolerance 2.1e-11) but beyond the dead plane's 1.5e-15, and the confirmation asked f(x*) to fit
#: both ("split"); the piece opened there stepped across (the dead piece's duplicate), and each
#: later x* lay on the live side again, "split" at each, to the floor.  The answers' rounding was
#: not the cause (the units' pre-activations at x* are ~1e-14: f(x*) is exact to its last bits).
#: Answered since a kink is confirmed when f(x*) lies on either plane (the true plane of the side
#: x* is on, each prediction held to its own tolerance) and the pair on both sides
#: (_PathSearch._confirm); a pair recognising no kink leaves such an x* a split, as before: 1
#: hyperplane at FFN path seeds 0-3, W* = 0 then refused by the output guard (the FFN checked
#: alone below)
CANCELLING_BESIDE_DEAD_TF = (
    np.array([[-0.39] * 5 + [0.0, 0.0, -0.0]] * 2),
    np.array([0.8028724083713641, 0.44620010085831363, 0.0, -0.49360372854404655, -0.9999999999999999,
              1.0, 1.0, 1.0]), "zero_sum", 2, np.zeros((4, 4)),
)

#: (a strict xfail before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 281409 on
#: test_transformer_float64, the same at 9087253), d = 2, "parallel": two tiny parallel units (1e-10
#: and 5e-11 on e_0, weights -1 and -1: one hyperplane x_0 = 0 of mass 1.5e-10) beside ReLU(-x_1)
#: and ReLU(x_0 + x_1 / 16) (and a dead unit): refused at W* = 0, seed 70 (bisection to the floor,
#: interval 2.3e-13 after 55 steps) and at W* = 0.3, seed 69 (the FFN's bound 0.038 against the
#: promised 0.0013); the FFN alone refused at 11 of path seeds 0-79.  Traced (helper tfpar): the
#: search confirms the tiny kink T merged with the unit kink K on x_0 + x_1 / 16 = 0 (0.06 rad
#: away; T below its gradients' errors, its bound 2.7e-9 holds the merge); the polish's
#: confirmation sees it and finds a point x between K and T (x_0 = 0.0069), but the piece measured
#: there with the margin's step (2^-6, the margin counting the recovered hyperplanes only) crossed
#: T: a gradient 0.55 of the way across its jump, passing Euler's check, so the two kinks were not
#: confirmed apart, and the merge was charged (A + B) / |x|_inf = 0.048, A the answer's distance
#: from a's plane: K's own |K^T x|, not T's.  The search's network then failed the output guard
#: (seeds 69, 26-29, ...); at seed 70 both attempts so, and the third's further path kept K twice
#: (_union: K + T and K differ by 1.5e-10 in size, above their errors 1.25e-10), a check point on a
#: recovered line at |x| = 1.4e-17 (d = 2: the plane points are x*'s multiples 2 and 0) contradicted
#: it, and the path through ~0 bisected to the floor.  Answered since the piece between is held to
#: its steps backwards (_PathSearch.backward_error: the search's own steps, 2^-11, when they
#: disagree) and the merge is charged from it, ``|G_b - G_m|_1 + d (err_b + m_err)`` where K's
#: convexity is the merged kink's (:func:`ffn._merge_charge`): 4.2e-9, the FFN at path seeds 0-79
#: answered (L = 2 or 3); W* = 0 then refused by the output guard, W* = 0.3 answered.
PARALLEL_TINY_TF = (
    np.array([[1e-10, 0.0, 0.0, 1.0, 5e-11], [0.0, -1.0, 0.0, 0.0625, 0.0]]),
    np.array([-1.0, 1.0, 1.0, 1.0, -1.0]), "parallel",
)

#: (thorough profile, --hypothesis-seed 55123 on test_transformer_float64, helper tfpar; the same on
#: main 223cfe4), d = 2, "zero_sum", W* = 0, seed 5655: a zero-sum triple of 1.2e-7 units (its third
#: unit -(W2 a2) rounded) beside three 2.4e-40 units on (-1, -1) (one of 7.1e-40): refused, no
#: gradient at a random end of the path (FFN path seeds 0-7 answered, L = 3).  Traced: an end where
#: the triple cancels answers its rounding (f = -1.3e-23, units ~6e-8), which the tolerances, knowing
#: the 7.1e-40 unit's gradient only, refuse; the units' scale read there (7e-8) is beyond the cap
#: over the gradients measured, so the path is probed for it (_PathSearch._probe_scale), and the
#: first probe's piece, the tiny unit's gradient again, raised the scale by its rounding (1.2e-52
#: relative): taken for the units' scale, the probes stopped before the segment that crosses the
#: triple's wedges, and the end was refused again.  Answered since the probes stop only once the
#: scale exceeds SCALE_RISE = 2 times the refused end's (3 hyperplanes, bound 1.3e-18); and, alone,
#: since a scale read beyond the cap is kept when f(3 x0) shows its rounding too.
TINY_BESIDE_ROUNDED_TRIPLE_TF = (
    np.array([[-2.3672021176664842e-40] * 3 + [0.3125, 1.0, 1.564621926e-07],
              [-2.3672021176664842e-40] * 3 + [-1.0, 0.0, -1.192092896e-07]]),
    np.array([1.0, 1.0, 1.0, -1.192092896e-07, -1.192092896e-07, 1.0]), "zero_sum", 5655, np.zeros((4, 4)),
)

#: Counterexamples of the Transformer (OPEN_TF_FLOAT before), strict xfails before: answered right
#: since the same merge (FIXED_FLOAT) or what its comment says; the first also pinned in
#: tests/test_ffn_bound.py (V drawn again).
FIXED_TF_FLOAT = [
    # (a strict xfail before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 112726 on
    # test_transformer_float64), d = 3, "zero_sum", W* = 0, seed 0: units (1e-5, 1, 1) and
    # (0, 1/2, 1/2), hyperplanes 1e-5 apart: refused (no gradient at 3 points of an interval of
    # width 1.25e-7; or bisection to 4.5e-13).  Answered since s* is where the pieces' predictions
    # meet, not their planes through 0 (as FIXED_FLOAT's 3.8e-6 pairs; helper benchref)
    (np.array([[1e-05, 0.0, 0.5, -0.5], [1.0, 0.5, 0.5, -1.0], [1.0, 0.5, 0.5, -1.0]]),
     np.array([-1.0, 1.0, 1.0, 1.0]), "zero_sum", 0, np.zeros((4, 4))),
    # (strict xfails before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 53084 on
    # test_transformer_float64; the same on main), d = 3, a 2^-24 unit in a zero-sum target, W* = 0:
    # refused (bisection to the floor, or no gradient at 3 points of an interval of width 1.3e-6;
    # unchanged by the units'-scale read, helper floatedge): refusals of good answers.  Answered
    # since a residual repeated at two steps sends the piece to one attempt at the smallest step,
    # 2^-26 |x|, before it is taken for a point on a hyperplane (_PathSearch.piece), with the
    # confirmation pair's own distances (Tuning.pair_own_distance; helper openfloat)
    (np.array([[-1.0, 0.0, -0.375, 0.09375], [-1.0, 1.0, 0.0, -5.96046448e-08], [-1.0, 0.0, 0.0, -0.0]]),
     np.array([-1.0, 5.96046448e-08, 0.25, 1.0]), "zero_sum", 165467, np.zeros((4, 4))),
    (np.array([[-1.0, 0.0, 0.25, -0.0625], [-1.0, 1.0, 0.0, -5.96046448e-08], [-1.0, 0.0, 0.0, -0.0]]),
     np.array([-1.0, 5.96046448e-08, 0.25, 1.0]), "zero_sum", 165467, np.zeros((4, 4))),
    # (a strict xfail before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 271127 on
    # test_transformer_float64; the same on a4cbaa0), d = 2, "generic", W* = 0, seed 0: normals 1e-5
    # rad apart, (1e-5, 1) and (0, 1) (the latter a 1e-5 unit): bisection to 3.8e-13 after 35 steps.
    # Traced (helper lowprec): the unit kink and the 1e-5 one cross the path 4.1e-6 apart; the
    # confirmation pair of the latter is grown to 1e-5 to clear the far end piece's gradient error
    # over its distance 0.3 (|J| = 1e-5), so its minus point lies beyond the unit kink ("unknown"
    # at every bisection step).  Answered since a grown pair that fits no pattern is "far" (as a
    # pair beyond reach_fraction): a piece is opened halfway to x*, whose smaller error over its
    # distance shrinks the pair (_PathSearch._confirm; helper openfloat; the FFN bench unchanged)
    (np.array([[1e-05, 0.0, -1.0, 1e-05], [1.0, 1e-05, 1e-05, 1e-05]]), np.ones(4), "generic", 0,
     np.zeros((4, 4))),
    # (a strict xfail before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 112726 on
    # test_transformer_float64), its d = 4 sibling: units (1e-5, 1, 1, 1) and (0, 1/2, 1/2, 1/2),
    # W* = 0: refused at seed 0 (no gradient at 3 points of an interval of width 1.25e-7; or
    # bisection to 4.5e-13 after 45 steps).  Answered since a confirmation pair's reach needs only
    # each prediction's own error over its own distance to x* (_PathSearch._confirm): it took the
    # sum of both pieces' errors times the larger distance, so a piece opened between two close
    # kinks (error ~5e-7, steps 2^-24 |x|) times the far end piece's distance (~1) grew the pair
    # past the other kink ("unknown" at every bisection step, to the floor); helper openfloat
    (np.array([[1e-05, 0.0, 0.5, -0.5], [1.0, 0.5, 0.5, -1.0], [1.0, 0.5, 0.5, -1.0],
               [1.0, 0.5, 0.5, -1.0]]), np.array([-1.0, 1.0, 1.0, 1.0]), "zero_sum", 0, np.zeros((4, 4))),
    # (a strict xfail before, OPEN_TF_FLOAT_SILENT; thorough profile, --hypothesis-seed 48213 on
    # test_transformer_float64; the same on main e634946 and with float64's probes alone), d = 3,
    # "generic", seed 131073: a 1e-9 unit on (1, 1, -0.25) beside units on (1, 0, -0.5) and (1, 1, 1):
    # a SILENT wrong answer, 7 % over: 2 hyperplanes of 3 after one restart, sup |f_hat - f| =
    # 1.25e-9 |x|_inf against error_bound 1.17e-9.  Answered since the polish's two changes merged
    # beside the search's float probes (a failed kink split by bisection, helper tinyodd; wedge
    # points tilted along the confirmed kink's hyperplane, helper tilt; which of the two, not
    # separated): 3 hyperplanes, the antisymmetric route, W's error 2.4e-14 against its bound
    # 8.9e-10, 2745 queries (686 of them the search's probes)
    (np.array([[1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0, 1.0], [1.0, -0.25, 1.0, -0.5, 1.0]]),
     np.array([0.25, 1e-09, 0.0, 0.25, 0.25]), "generic", 131073, np.ones((4, 4))),
    # (a strict xfail before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 53084 on
    # test_transformer_float64; the same on main),
    # d = 4, "antiparallel": a 3.6e-9 kink (0.359 ReLU(1e-8 x_0 + 2.2e-16 x_3)) beside unit kinks on
    # x_3 = 0 and -0.5 x_1 + 0.63 x_3 = 0, the rest below 1e-10: a SILENT wrong answer, 0.8 % over:
    # sup |f_hat - f| = 3.59e-9 |x| against the search's bound 3.56e-9 (the polish's confirmation of
    # the second kink fails, so the search's network stands).  The search merged the tiny kink into
    # the x_3 one's (recovered normal (2.25e-7, 0, -1.7e-9, 1)): the merge moves f by its mass
    # m = 3.59e-9, just above the search's per-jump charge d (err_a + err_b) / 2 that is meant to
    # hold a merge below the pair's resolution.  Fixed since the polish asks a kink's wedge points
    # when its confirmation fails too: one contradicts it (x* opened a split: the merge), a further
    # path through it finds the 3.6e-9 kink (3 hyperplanes, error 2.8e-11, bound 4.4e-10, after two
    # restarts)
    (np.array([[3.4173546447305734e-41, 0.77882086784331461, 1e-08, 3.4173546447305734e-41,
                3.4173546447305734e-41, -1.7086773223652867e-41],
               [3.4173546447305734e-41, -3.6273490231903084e-167, -1.4012984643248171e-45,
                -2.8214483909605034e-67, -0.5, 0.25],
               [0.94519982868798236, 0.96536977053582307, 3.4173546447305734e-41, 3.4173546447305734e-41,
                3.4173546447305734e-41, -1.7086773223652867e-41],
               [3.4173546447305734e-41, -1.175494351e-38, 2.2204460492503131e-16, -0.060126202037269705,
                0.63054888123238317, -0.31527444061619159]]),
     np.array([-2.9409263812692595e-11, 1.7178824797658962e-53, 0.35871593684475456, 0.26513625832800281,
               -0.17958631279027304, 0.5]),
     "antiparallel", 378701006,
     np.array([[0.63094406791112201, -0.4790205038842944, 0.63094406791112201, 0.63094406791112201],
               [0.63094406791112201, 0.63094406791112201, -0.46420245483555689, 0.63094406791112201],
               [0.63094406791112201, 4.6480309007615256e-08, -4.1938268582630087e-85, 0.63094406791112201],
               [0.63094406791112201, 0.7478087569012728, -2.2250738585217783e-313, 0.63094406791112201]])),
    # (strict xfails before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 67777 on
    # test_transformer_float64; the same on main, for every W of the strategy's scales): a 2^-24 unit beside
    # unit ones, d = 3, seed 3547: the FFN refused (typed), its kink's jump (~4e-9) within the search's
    # gradient errors (7e-9 on the path): no gradient at a random end (DegenerateProbeError), bisection to the
    # floor, or the search's network kept at a bound 2.5e-6 above learn_transformer's tolerance 1e-6
    # (learn_ffn's own default is 6.6e-4); other seeds answer (bounds 8e-12 .. 7e-9, restarts 0-2).  Refusals
    # of good answers: such a kink should be booked as below the resolution, not bisected.
    # Answered since (a) learn_transformer's tolerance defaults to learn_ffn's (the session's promise, 6.6e-4
    # in float64; 1e-6 before re-imposed the FFN refusal issue 23 item 8 removed from learn_ffn, and W's bound
    # carries the FFN's own where it matters, the cone route), and (b) an interval bisected to the floor whose
    # jump charge is below FLOOR_CHARGE = 2^-20 of the largest gradient is booked in the bound as below the
    # resolution, once a segment, not refused (bounds now 2.9e-9 .. 8e-9: the 2^-24 unit's jump, ~5e-9,
    # charged)
    (np.array([[-0.52979247, 0, 1, 0], [0, 0, -0.12275559, 0], [-0.31287509, 0, 0, -0.09467205]]),
     np.array([1, 1, 1, 2.0**-24]), "generic", 3547, np.ones((4, 4))),
    (np.array([[-1.0, 1, 0, 0], [0, 0, 0.875, 0], [-0.5, 0, 0, 0.0625]]), np.array([1, 1, 1, 2.0**-24]),
     "generic", 3547, np.ones((4, 4))),
    (np.array([[-1.0, 1, 0, 0], [0, -0.125, 0, 0], [-0.5, 0, 0, 0.0625]]), np.array([1, 1, 1, 2.0**-24]),
     "generic", 3547, np.ones((4, 4))),
    # (thorough profile, --hypothesis-seed 5077, NEW with PAIR_MARGIN 4; 16 before refused six others) a
    # zero-sum triple whose third unit shares the hyperplane (1, 1) with a unit one (jumps 1 and
    # 0.03125): U's and V's pieces (gradients 0 and (1, 1)) differ by (1, 1), so their lines meet on
    # that hyperplane, and the pair there confirms one kink of jump (1, 1) where f has 1.03125 (1, 1)
    # and the triple's two others (3 % of the jump, below the pair's 1/PAIR_MARGIN); the checks
    # contradict it, but a further path's (1, 1) kink of the right jump is dropped by _union (same
    # hyperplane), and a contradicting answer at |x| = 1e-16 makes a path through 0 that bisects to
    # the floor (DegenerateProbeError): a refusal of a good answer
    (np.array([[1, 1, 0.125, 0.96875], [1, 0.125, 0.125, 0.09375]]), np.array([1, -1, 0.25, 1.0]), "zero_sum",
     1034672, np.zeros((4, 4))),
    # (thorough profile, --hypothesis-seed 73106; the same on main) 2^-24 units in a zero-sum group,
    # bisection to the floor
    # (DegenerateProbeError, interval 2.3e-13): a refusal
    (np.array([[0.0, 0.0, 0.0, 2.0**-24, 2.0**-26], [-6.91237349e-01, 0.0, 2.0**-24, 2.0**-24, 2.0**-25]]),
     np.array([-1.0, 0.0, -0.25, -0.25, 1.0]), "zero_sum", 0, np.zeros((4, 4))),
    # (thorough profile, --hypothesis-seed 73106; the same on main; a strict xfail before,
    # OPEN_TF_FLOAT): a 1e-9 unit beside a zero-sum triple, its kink (mass 5.3e-10) merged, above
    # the canonical check's tolerance 4.7e-10 from the polished bound; the polish's confirmation of
    # its kinks now sees the merge and the search's network stands (its tolerance holds the merge)
    (np.array([[2.59090089e-64, 3.31186467e-01, 9.92041577e-01, 9.92041577e-01, -3.01442320e-01],
               [-8.40005397e-01, 2.00000000e-01, -3.72245416e-01, 5.13625292e-01, 2.45236339e-02]]),
     np.array([1.0, 1e-9, 2.03860571e-01, 0.1, 1.0]), "zero_sum", 10677,
     np.array([[-0.79684502] * 4, [0.30142093] + [-0.79684502] * 3, [-0.79684502] * 3 + [-0.23861551],
               [-0.79684502] * 4])),
    # (thorough profile, --hypothesis-seed 5077; the same on main; a strict xfail before,
    # OPEN_TF_FLOAT, for the canonical check's premise) a 5e-11 unit beside unit ones: f and W*
    # within their bounds, its kink (5e-11, below the search's gradient errors 2.5e-10) confirmed
    # merged with the (1, 0.125) kink (the pair resolves ~1/PAIR_MARGIN of a jump): 2 hyperplanes
    # of 3, the merge moving f by m delta = 5e-11 * 0.222 = 1.1e-11 |x|, within the polished bound
    # 1.1e-11, its jump 5e-11 off, above the old check's 2 B = 2.2e-11.  As in FIXED_FLOAT's
    # 1e-10 case, check_canonical now checks the learner's per-kink corollary of B
    # (FFNRecovery.kink_check): the merge is allowed (E / allowed 0.12 and 0.25 at the worst of 64
    # points); not resolved, for the same reason (its effect at the plane points is of the order of
    # the polished prediction's own error)
    (np.array([[1, 0, 1e-10, 0, 0], [0.125, 1, 0, 0, 0]]), np.array([1, 1, 0.5, 0, 0.0]), "generic", 0,
     np.ones((4, 4))),
    # 2^-23 units beside a zero-sum triple (thorough profile, --hypothesis-seed 20261126; refused on
    # main too): the output guard (bound 3e-5) or, on every path, no gradient at 3 points of an
    # interval of width 5e-9.  Between V and a piece lie a triple's kink K and the 1e-7 kink of the
    # tiny unit; x* (from K plus it) falls within 1e-8 of K's hyperplane and misfits the far
    # piece's plane (shifted by the tiny kink); the piece opened at x* needs a step of 2^-26 |x|
    # (error 1.6e-5), is taken for the far piece's duplicate (the tiny jump is within that error),
    # and the half holding the tiny kink is dropped; bisection then corners K at x*, where the far
    # piece's plane still misses by the tiny kink: a refusal of a good answer (a strict xfail
    # before, OPEN_TF_FLOAT).  Now a split point whose steps had to shrink and whose piece is a
    # duplicate is also measured stepping along +-sign(J) (J = K + the tiny jump, K's normal to
    # 1e-7, _PathSearch._opened): one sign moves
    # every perturbation away from K, the step stays 2^-10 |x|, the region between K and the tiny
    # kink gets its gradient to 2e-10 and both kinks are confirmed (4 hyperplanes, bound 2.7e-11;
    # the FFN alone at seeds 0-4 too, 3 of them refused before)
    (np.array([[0.87164759, 0, 0, 0, 0, -0.44319615, -0.51117113, 0.95436729],
               [0, 0, 0, 0, 0, 0.14785201, -0.51117113, 0.36331913]]),
     np.array([2.0**-23, 0, 2.0**-23, 0, 0, 1.0, 1.0, 1.0]), "zero_sum", 0, np.ones((4, 4))),
    # (a strict xfail before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 271127 on
    # test_transformer_float64; the same on a4cbaa0), d = 2, "generic", W* = 0, seed 0: normals 1e-5
    # rad apart, (-1, 1e-5) and (-0.5, 1e-5) beside a twin on (0, 1): no gradient at a random end of
    # the path (seeds 0, 1).  Traced (helper lowprec): the units cancel but in the 1e-5 rad wedge, so
    # every gradient met is ~2.5e-5 while the answers carry the units' rounding (~3e-17 at |x|
    # 0.13): Euler's check failed at every step (OPEN_FLOAT_TINY_BESIDE_ZERO_SUM's class).  Answered
    # since the units' scale is read from the answers' own rounding (_PathSearch._rounding_scale, as
    # FIXED_FLOAT's 1.9e-94 units beside a triple): 3 hyperplanes, 212 queries, FFN error 7.3e-16
    # against its bound 9.3e-11 (FFN path seeds 0-5: answered but seed 4, refused); W* = 0 then
    # refused by the output guard
    (np.array([[-1.0, -0.5, 0.0, 0.0], [1e-05, 1e-05, 1e-05, 1e-05]]), np.array([-0.5, 1.0, 1.0, 1.0]),
     "generic", 0, np.zeros((4, 4))),
    *TINY_BESIDE_TRIPLE_TF,
    MIXED_STEP_TF,
    CANCELLING_BESIDE_DEAD_TF,
    (*PARALLEL_TINY_TF, 70, np.zeros((4, 4))),
    (*PARALLEL_TINY_TF, 69, P3),
    TINY_BESIDE_ROUNDED_TRIPLE_TF,
    # (a strict xfail before, OPEN_TF_FLOAT_TINY; thorough profile, --hypothesis-seed 61843 on
    # test_transformer_float64; the same with and without float64's probes of the intervals dropped
    # as kink-free), d = 2, "wide", W* = 0, seed 3822: a 1.76e-12 unit beside -ReLU(x_1) +
    # ReLU(x_0 - 0.5 x_1) (and its mirror order of units): refused (bisection to the floor, gradient
    # errors 5.7e-10; or no gradient at 3 points of an interval of width 1.9e-9), seeds 0-2 answering:
    # a refusal of a good answer.  Between the unit kink K (x_0 = 0.5 x_1) and the end piece pb on
    # the tiny unit's side lies the region of gradient 0; every piece opened there is pb's duplicate
    # (the jump 1.76e-12 is below the rounding floor 16 tol_ulps u max|G| = 2.7e-12, not below their
    # errors, 1e-20) and was dropped for pb, whose plane misses f by 9.5e-14 at K, far above its own
    # error: the confirmation at K failed on pb's plane and bisection cornered K to the floor.
    # Answered since float64 searches the half between a duplicate and its piece as an interval of
    # one gradient (Tuning.search_duplicates, as sympy does) instead of dropping it for pb (W* = 0
    # then refused by the output guard, as at seeds 0-2; the FFN phase checked below)
    (np.array([[0.0, -1.0, 1.0], [1.0, 1.0, -0.5]]), np.array([-1.0, 1.7580163e-12, 1.0]), "wide", 3822,
     np.zeros((4, 4))),
    (np.array([[0.0, -1.0, 1.0], [1.0, -0.5, 1.0]]), np.array([-1.0, 1.0, 1.7580163e-12]), "wide", 3822,
     np.zeros((4, 4))),
    # (a strict xfail before, OPEN_TF_FLOAT; thorough profile, --hypothesis-seed 48213 on
    # test_transformer_float64, helper fwedge; the same on main e634946), d = 3, "generic", W* = 0,
    # seed 1: a 1e-9 unit on (1, 1, 0) beside unit ones: refused (bisection to the floor, interval
    # 2.7e-13 after 45 steps, gradient errors 4.1e-10); answered since float64 searches the half
    # between a duplicate piece and its end piece (Tuning.search_duplicates)
    (np.array([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]]),
     np.array([1e-09, 1.0, 0.0, 1.0]), "generic", 1, np.zeros((4, 4))),
    # NEW (thorough profile, --hypothesis-seed 70529 on test_transformer_float64, helper fwedge; the
    # same on main e634946 and with float64's probes while a duplicate's half was dropped), d = 2,
    # "zero_sum", seed 1: a zero-sum triple on (0.8125, 0.875), (0.875, 0.875), (0.47, 0.44) (wedges
    # of about 2 degrees, the path crossing the group over 0.071 radians, above 2^-4) beside (1, 0):
    # a SILENT wrong answer, 1 hyperplane of 4, f off by the triple's bump.  The probes' interval
    # lay between a duplicate piece and its end piece, dropped unprobed; answered since that half
    # is searched and probed (Tuning.search_duplicates): 4 hyperplanes at seeds 0-7
    (np.array([[1.0, 0.8125, 0.875, 0.46875], [0.0, 0.875, 0.875, 0.4375]]), np.array([-1.0, 0.5, -1.0, 1.0]),
     "zero_sum", 1, np.ones((4, 4))),
]


@pytest.mark.parametrize("A, w, kind, seed, W", FIXED_TF_FLOAT)
def test_fixed_transformer_float_counterexamples(A, w, kind, seed, W):
    tf_float64_property(A, w, kind, W, seed)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("A, w, kind, _seed, W", TINY_BESIDE_TRIPLE_TF)
def test_fixed_tiny_unit_beside_triple_ffn_answered(A, w, kind, _seed, W, seed):
    """TINY_BESIDE_TRIPLE_TF's FFN alone (W* = 0 leaves the property the output guard's refusal),
    at path seeds 0-3: answered to its bound (refused on every path before), every query counted,
    the triple's three hyperplanes found."""
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, 2)
    assert rec.L >= 3
    _float_case(A, w, seed)


@pytest.mark.parametrize("seed", range(8))
def test_fixed_mixed_step_ffn_answered(seed):
    """MIXED_STEP_TF's FFN alone (W* = 0 leaves the property the output guard's refusal), at path
    seeds 0-7: answered to its bound (seed 1 refused before), every query counted, its three
    hyperplanes found, the 1e-9 unit's among them (merged into K's at seeds 2 and 3 before)."""
    A, w = MIXED_STEP_TF[:2]
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, 3)
    assert rec.L == 3
    _float_case(A, w, seed)


@pytest.mark.parametrize("seed", range(4))
def test_fixed_cancelling_units_beside_dead_ones_ffn_answered(seed):
    """CANCELLING_BESIDE_DEAD_TF's FFN alone (W* = 0 leaves the property the output guard's
    refusal), at path seeds 0-3: answered to its bound (seed 2 bisected to the floor before), every
    query counted, its one hyperplane found."""
    A, w = CANCELLING_BESIDE_DEAD_TF[:2]
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, 2)
    assert rec.L == 1
    _float_case(A, w, seed)


#: PARALLEL_TINY_TF's FFN path seeds refused before (of 0-79: 69 and 26-29, ... the merge charge;
#: 14 and 70 bisection to the floor), measured on 223cfe4
PARALLEL_TINY_REFUSED = (14, 26, 27, 28, 29, 46, 66, 69, 70, 77, 78)


@pytest.mark.parametrize("seed", PARALLEL_TINY_REFUSED)
def test_fixed_parallel_tiny_units_ffn_answered(seed):
    """PARALLEL_TINY_TF's FFN alone at the path seeds it was refused at: answered to its bound,
    every query counted, both unit hyperplanes found (the tiny one merged or found)."""
    A, w = PARALLEL_TINY_TF[:2]
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, 2)
    assert rec.L in (2, 3)
    _float_case(A, w, seed)


def test_a_merge_is_charged_from_the_gradient_between(monkeypatch):
    """PARALLEL_TINY_TF's FFN at path seed 69: the polish sees the tiny kink T merged into the unit
    kink K 0.06 rad away and cannot confirm them apart; the merge is charged from the gradient
    measured between them (``ffn._merge_charge``: T's jump and errors, ~4e-9), not from K's
    distance (0.048, refused by the output guard before).  Without the steps backwards that hold
    that gradient to its region (``_PathSearch.backward_error`` never agreeing) the charge is
    K's again and the FFN refused (the fixed test above can fail)."""
    from attnproof.theorems.transformer._path_search import _PathSearch

    A, w = PARALLEL_TINY_TF[:2]
    rec, oracle = recover_ffn(A, w, seed=69)
    check_count(rec, oracle, 2)
    assert 0 < rec.diagnostics["merge_charge"] < 1e-8
    assert rec.diagnostics["error_bound"] < 1e-8
    monkeypatch.setattr(_PathSearch, "backward_error", lambda self, *args: None)
    with pytest.raises(PrecisionLossError, match="a-posteriori bound"):
        recover_ffn(A, w, seed=69)


def test_steps_backwards_bound_a_gradient_across_a_tiny_kink():
    """A gradient whose steps cross a kink too small for Euler's relation (PARALLEL_TINY_TF's
    1.5e-10 hyperplane x_0 = 0, 0.0069 from x, steps of 2^-6 towards it) passes Euler's check with
    an error below its distance to x's region's gradient; its steps backwards disagree
    (``backward_error`` None, d queries counted); the search's own steps there agree, and the bound
    they give holds x's region's gradient (-1.5e-10, -1)."""
    from attnproof.measure import Session
    from attnproof.theorems.transformer._path_search import _PathSearch

    A, w = PARALLEL_TINY_TF[:2]
    oracle = ValueOracle(ReluFFN(A, w))
    search = _PathSearch(Session(oracle, FLOAT64), np.array([0.25, -1.0]), 2.0**-40, 100)
    search.gscale = 1.0
    x, signs, truth = np.array([0.0069, -0.4788]), np.array([-1.0, 1.0]), np.array([-1.5e-10, -1.0])
    crossed = search.piece(x, h=2.0**-6, signs=signs)
    assert np.abs(crossed.G - truth).max() > crossed.err
    assert search.backward_error(x, crossed.y, crossed.G, crossed.err, crossed.h, signs) is None
    own = search.piece(x, crossed.y)
    err = search.backward_error(x, own.y, own.G, own.err, own.h, None)
    assert err is not None and np.abs(own.G - truth).max() <= err
    assert search.ledger.total(2) == oracle.queries


def test_the_units_probe_stops_at_a_new_scale_only(monkeypatch):
    """TINY_BESIDE_ROUNDED_TRIPLE_TF's FFN at its path seed 5655: answered, its three hyperplanes
    found, every query counted.  Two changes answer it, each alone: the probes of the units' scale
    stopping at a new scale only (SCALE_RISE), and the triple's scale read at the refused end beyond
    the cap over the gradients measured (7e-8 beside the tiny unit's 7.1e-40), kept as f(3 x0) shows
    its rounding (``_PathSearch._rounding_scale``); with both undone (SCALE_RISE = 1, f(3 x0) taken
    as exactly 3 f(x0)) refused again, no gradient at a random end of the path."""
    from attnproof.theorems.transformer import _path_search

    A, w, _, seed, _ = TINY_BESIDE_ROUNDED_TRIPLE_TF
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, 2)
    assert rec.L == 3
    _float_case(A, w, seed)
    read = _path_search._PathSearch._rounding_scale

    def exact_triple(self, x0, y0, G, residuals, h, tripled):  # f(3 x0) = 3 f(x0), unasked
        return read(self, x0, y0, G, residuals, h, tripled or [3 * y0])

    monkeypatch.setattr(_path_search, "SCALE_RISE", 1)
    assert recover_ffn(A, w, seed=seed)[0].L == 3
    monkeypatch.setattr(_path_search._PathSearch, "_rounding_scale", exact_triple)
    try:  # both undone: refused where this test was written; answered on an AMD EPYC, whose BLAS
        # rounds the triple's answers otherwise (then within its bound, the property that matters)
        undone, _ = recover_ffn(A, w, seed=seed)
    except DegenerateProbeError as refusal:
        assert "random end of the path" in str(refusal)
    else:
        _float_case(A, w, seed)
        assert undone.L == 3
    monkeypatch.setattr(_path_search, "SCALE_RISE", 2)
    assert recover_ffn(A, w, seed=seed)[0].L == 3


def test_a_kink_is_confirmed_from_the_plane_of_the_side_x_star_is_on():
    """CANCELLING_BESIDE_DEAD_TF's FFN, pieces on both sides of its hyperplane: the dead one exact
    (G = 0, error 0), the live one with an error that moves x* (where their predictions meet) onto
    the live side, f(x*) its true value off the dead plane beyond that plane's tolerance.  The
    confirmation holds f(x*) to the plane of x*'s side (``_PathSearch._confirm``): a kink, its pair
    on both sides, three queries counted (a "split" before, each later x* the same: to the floor)."""
    from attnproof.measure import Session
    from attnproof.theorems.transformer._path_search import _PathSearch

    A, w = CANCELLING_BESIDE_DEAD_TF[:2]
    oracle = ValueOracle(ReluFFN(A, w))
    search = _PathSearch(Session(oracle, FLOAT64), np.array([0.25, -1.0]), 2.0**-40, 100)
    pa, pb = search.piece(np.array([0.25, -0.5])), search.piece(np.array([-0.25, 0.5]))
    assert pa.err > 0 and pb.err == 0 and not pb.G.any()
    s = search._intersection(pa, pb, pa.x, pb.x - pa.x, 0.0, 1.0)
    x = pa.x + s * (pb.x - pa.x)
    if x.sum() >= 0:
        # x* fell on the dead side (the live piece's gradient rounds by the platform's BLAS: 1.6e-13
        # past the hyperplane on an AMD EPYC, 2.3e-14 before it where this test was written): there
        # f(x*) = 0 fits both planes, a kink too; the case under test is its mirror image across
        # x_0 + x_1 = 0, the live side at the same distance
        before = oracle.queries
        assert search._confirm(pa, pb, x, pb.x - pa.x)[0] == "kink" and oracle.queries - before == 3
        x = -x[::-1]
    before = oracle.queries
    status, y = search._confirm(pa, pb, x, pb.x - pa.x)
    assert x.sum() < 0 and y == ReluFFN(A, w)(x[None, None, :])[0] != 0  # the live side, f's value
    assert search.fits(pa, x, y) and not search.fits(pb, x, y)
    assert status == "kink" and oracle.queries - before == 3
    assert search.ledger.total(2) == oracle.queries


def test_a_kink_at_the_origin_is_bisected_not_divided_by_zero():
    """``_PathSearch._confirm`` at x* = 0, where a further path through a pivot on U's ray meets
    every hyperplane (pair_target(2, 32, 3e-8), session 26): the pair ``x* +- y`` scales with
    ``|x*|``, so no pair can fail there; "unknown" (the caller bisects), one query counted, where
    the pair's growth divided by ``J^T y = 0`` before (ZeroDivisionError, an untyped error)."""
    from attnproof.measure import Session
    from attnproof.theorems.transformer._path_search import _PathSearch

    oracle = ValueOracle(ReluFFN(np.array([[1.0, -1.0], [0.5, 2.0]]), np.array([1.0, -0.7])))
    search = _PathSearch(Session(oracle, FLOAT64), np.array([0.25, -1.0]), 2.0**-40, 100)
    pa, pb = search.piece(np.array([1.0, 0.1])), search.piece(np.array([-1.0, -0.1]))
    assert pa.err > 0 and pb.err > 0 and not search.same_gradient(pa, pb)
    before = oracle.queries
    status, y = search._confirm(pa, pb, np.zeros(2), pb.x - pa.x)
    assert status == "unknown" and y == 0 and oracle.queries - before == 1
    assert search.ledger.total(2) == oracle.queries


def test_a_batch_of_probes_returns_the_one_farthest_off_the_plane():
    """TINY_BESIDE_TRIPLE_TF's second FFN, its second path's first interval [U, V], both ends
    where the triple cancels to an exact 0 (gradient 0, the tolerances at scale 0): among its
    probes (2^-4 radians apart) are the units' rounding where they cancel (~1e-16) and the
    triple's wedge (|f| ~ 4e-3); off_plane returns the wedge's probe (the first off the plane was
    rounding, whose piece failed homogeneity within the units' rounding: the regression)."""
    from attnproof.measure import Session
    from attnproof.theorems.transformer._path_search import _PathSearch, _Piece

    A, w = TINY_BESIDE_TRIPLE_TF[1][:2]
    oracle = ValueOracle(ReluFFN(A, w), record=True)
    search = _PathSearch(Session(oracle, FLOAT64), np.array([1.0, 0.5]), 2.0**-40, 100)
    U, V = np.array([1.30400005, 0.94708096]), np.array([-1.24591095, -0.73226735])
    s, y = search.off_plane(_Piece(U, 0.0, np.zeros(2)), 0.0, 1.0, U, V - U)
    answers = np.array([r.y for r in oracle.log]).ravel()
    assert np.any((answers != 0) & (np.abs(answers) < 1e-15))  # rounding, off the plane of 0
    assert abs(y) == np.abs(answers).max() > 1e-3
    assert y == ReluFFN(A, w)((U + s * (V - U))[None, None, :])[0]
    assert search.ledger.total(2) == oracle.queries == search.ledger.wedges


@pytest.mark.parametrize("A, w, kind, seed, W", FIXED_TF_FLOAT[-4:-2])
def test_fixed_tiny_unit_ffn_answered(A, w, kind, seed, W):
    """The last two (the 1.76e-12 unit): W* = 0 leaves the property the output guard's refusal,
    so the FFN phase is checked alone, with the same random stream: answered to its bound (a
    DegenerateProbeError before), every query counted, the unit kinks found (the tiny one is
    below the rounding floor: booked in the bound)."""
    rec, oracle = recover_ffn(A, w, seed=seed)
    check_count(rec, oracle, 2)
    assert rec.L == 2
    _float_case(A, w, seed)
