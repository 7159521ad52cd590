"""The floor under Thm 5.1's naive bound (issue 22): two rank-r targets that every answer of the real
oracle fits under the naive declaration, proven answer by answer, so that no rigorous bound from the
skeleton's transcript can lie below half their distance
(:mod:`attnproof.theorems.lowrank.indistinguishable`); its matrix-free path (large d) against the
dense one and against exact rationals."""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import numpy as np
import pytest

from attnproof.errors import InvalidInputError, PrecisionLossError, ShapeError
from attnproof.indistinguishable import U, transcript
from attnproof.models import FactoredAttention
from attnproof.oracles import QueryRecord, ValueOracle
from attnproof.theorems.lowrank import learn_skeleton
from attnproof.theorems.lowrank.indistinguishable import (
    CrossRecorder, _factored_balls, _half_distance, _pairs, _product_ball, _query_balls, _world,
    cross_margins, cross_transcript, factored_margins, floor_row, indistinguishable, indistinguishable_cross,
)
from attnproof.theorems.lowrank.runner import low_rank_target

SIZES = ((8, 2), (16, 4))


def recorded_run(d: int, rank: int, seed: int = 0, start: list | None = None):
    """A bench run of Thm 5.1 (float64, naive answers, defaults) with every query recorded; a copy of
    the learner's generator as it received it is appended to ``start`` when given."""
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, rank, rng)
    if start is not None:
        start.append(copy.deepcopy(rng))
    oracle = ValueOracle(FactoredAttention(K, Q, v), record=True)
    return oracle.log, K, Q, v, learn_skeleton(oracle, rank=rank, rng=rng)


@pytest.fixture(scope="module", params=SIZES, ids=str)
def run(request):
    start = []
    log, K, Q, v, rec = recorded_run(*request.param, start=start)
    ct = cross_transcript(log, request.param[0], start[0])
    return log, K, Q, v, rec, indistinguishable(log, K, Q, v), ct


def test_every_answer_is_proven_at_the_target_and_in_both_worlds(run):
    log, K, Q, v, rec, found, _ = run
    for factors in ((K, Q), *found.worlds):
        margins = factored_margins(log, *factors, v)
        assert set(margins) == {1, 2}
        assert all(np.all(m >= 0) for m in margins.values())
    assert found.answers == sum(len(r.y) for r in log) == rec.queries
    assert all(np.any(Kw.T @ Qw != K.T @ Q) for Kw, Qw in found.worlds)
    assert all(Kw.shape == K.shape for Kw, _ in found.worlds)  # rank <= r by construction


def test_the_bound_is_above_the_floor_and_the_floor_above_the_error(run):
    _, K, Q, _, rec, found, _ = run
    err = float(np.linalg.norm(rec.W - K.T @ Q))
    assert err < found.floor <= rec.error_bound
    assert all(np.linalg.norm(rec.W - Kw.T @ Qw) <= rec.error_bound for Kw, Qw in found.worlds)


def test_an_inflated_move_is_rejected(run):
    """The check can fail: the factors moved 4 times as far leave answers outside the declaration."""
    log, K, Q, v, _, found, _ = run
    (Kp, Qp), _ = found.worlds
    margins = factored_margins(log, K + 4 * (Kp - K), Q + 4 * (Qp - Q), v)
    assert np.any(~(margins[2] >= 0))
    assert np.all(margins[1] >= 0)  # v's reads do not depend on W


def test_the_logit_ball_holds_the_exact_logit():
    """The factored enclosure of ``x_1^T K^T Q x_2 - x_2^T K^T Q x_2``, checked in exact rationals."""
    log, K, Q, v, _ = recorded_run(8, 2)
    X = np.concatenate([r.X for r in log if r.X.shape[1] == 2])[:12]
    s, c, rad = _factored_balls(X, K, Q, v)["L"]
    Wf = [[sum(Fraction(K[a, i]) * Fraction(Q[a, j]) for a in range(K.shape[0])) for j in range(8)]
          for i in range(8)]
    for b in range(len(X)):
        p = [Fraction(X[b, 0, i]) - Fraction(X[b, 1, i]) for i in range(8)]
        exact = sum(p[i] * Wf[i][j] * Fraction(X[b, 1, j]) for i in range(8) for j in range(8))
        assert abs(Fraction(s[b]) + Fraction(c[b]) - exact) <= Fraction(rad[b])


def test_the_floor_row():
    row = floor_row(8, 2, seed=1)
    assert row["floor_over_error"] > 1 and row["bound_over_floor"] >= 1
    assert row["alt_error_over_bound"] <= 1 and row["answers"] == 8 + 2 * (2 * 8 - 2)


def test_bad_input_is_refused():
    log, K, Q, v, _ = recorded_run(8, 2)
    with pytest.raises(ShapeError):
        factored_margins(log, K, Q[:, :4], v)
    with pytest.raises(InvalidInputError):
        factored_margins([QueryRecord(np.ones((1, 3, 8)), np.zeros(1))], K, Q, v)
    with pytest.raises(InvalidInputError):  # factors 1e-150: products would underflow
        factored_margins(log, K * 1e-150, Q, v)


def exact_product(A: np.ndarray, B: np.ndarray) -> list[list[Fraction]]:
    return [[sum(Fraction(A[i, a]) * Fraction(B[a, j]) for a in range(A.shape[1])) for j in range(B.shape[1])]
            for i in range(A.shape[0])]


def test_the_product_ball_holds_the_exact_product_tightly():
    """Exact-product balls (the matrix-free path's products), against rationals: entries of many
    magnitudes, an entry that cancels to 0; the radius below ``2^-50 n`` of the row's and column's
    largest entries' product (the slices leave less than 2^-56 of them)."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((5, 9)) * np.ldexp(1.0, rng.integers(-40, 40, (5, 9)))
    B = rng.standard_normal((9, 4)) * np.ldexp(1.0, rng.integers(-40, 40, (9, 4)))
    B[:, 3] = 0.0
    B[0, 3], B[1, 3] = A[0, 1], -A[0, 0]  # (A B)_03 = A_00 A_01 - A_01 A_00 = 0
    hi, lo, rad = _product_ball(A, B)
    exact = exact_product(A, B)
    for i in range(5):
        for j in range(4):
            assert abs(Fraction(hi[i, j]) + Fraction(lo[i, j]) - exact[i][j]) <= Fraction(rad[i, j])
            assert rad[i, j] <= 2.0**-50 * 9 * np.max(np.abs(A[i])) * np.max(np.abs(B[:, j]))
    assert exact[0][3] == 0 and abs(hi[0, 3] + lo[0, 3]) <= rad[0, 3]


def test_the_matrix_free_path_gives_the_dense_floor(run):
    """The matrix-free floor (:func:`indistinguishable_cross`, read from the named transcript) and the
    dense one: the same worlds (up to which is +), the same floor to the floors' own precision (each
    within NORM_DOWN^2 = 1 - 2^-27 of its exact half distance, both worlds' moves equal to rounding),
    and every answer's margin at the target within 10^-6 of the dense margin (two lower bounds of one
    distance, both enclosures' radii below 2^-40 of it)."""
    log, K, Q, v, rec, found, ct = run
    assert ct.answers == rec.queries == found.answers
    free = indistinguishable_cross(ct, K, Q, v)
    assert free.shrinks == found.shrinks
    assert abs(free.floor - found.floor) <= 2.0**-26 * found.floor
    W = [Kw.T @ Qw for Kw, Qw in found.worlds]
    Wf = [Kw.T @ Qw for Kw, Qw in free.worlds]
    gap = np.linalg.norm(W[0] - W[1])
    assert min(np.linalg.norm(W[0] - Wf[0]), np.linalg.norm(W[0] - Wf[1])) <= 1e-6 * gap
    dense, matrix_free = factored_margins(log, K, Q, v), cross_margins(ct, K, Q, v)
    assert np.array_equal(dense[1], matrix_free[1])
    assert np.all(matrix_free[2] >= 0)
    assert np.all(np.abs(matrix_free[2] - dense[2]) <= 1e-6 * np.abs(dense[2]))


def test_the_matrix_free_worlds_refuse_an_inflated_move(run):
    log, K, Q, v, _, _, ct = run
    free = indistinguishable_cross(ct, K, Q, v)
    for Kw, Qw in free.worlds:
        assert all(np.all(m >= 0) for m in cross_margins(ct, Kw, Qw, v).values())
    (Kp, Qp), _ = free.worlds
    margins = cross_margins(ct, K + 4 * (Kp - K), Q + 4 * (Qp - Q), v)
    assert np.any(~(margins[2] >= 0)) and np.all(margins[1] >= 0)


@pytest.mark.parametrize("moved", [False, True], ids=["target", "world from the target's sums"])
def test_the_matrix_free_balls_hold_the_exact_values(moved):
    """Each answer's balls (logit, p^T v, x_2^T v) hold the exact values of its recorded query, in
    rationals, and the slacks' lower bounds are below the declared ``g (|x_1|^T |q| + |x_2|^T |q| +
    |p|^T |W| |x_2|)`` and ``g (|x_1| + |x_2|)^T |v|`` and within 2^-20 of them (the proof is tight):
    at the target, and at a world whose sums over the entries are the target's corrected by
    :func:`_world`'s ``base`` bounds."""
    d, start = 8, []
    log, K, Q, v, _ = recorded_run(d, 2, start=start)
    ct = cross_transcript(log, d, start[0])
    pairs = _pairs(ct, v)
    world = _world(ct, pairs, K, Q)
    if moved:
        (K, Q), _ = indistinguishable_cross(ct, K, Q, v).worlds
        world = _world(ct, pairs, K, Q, base=world)
    b = _query_balls(ct, pairs, world)
    X, y = transcript(log, d)[2]
    W = exact_product(K.T, Q)
    g = Fraction(d + 4) * Fraction(U)
    for n in range(len(y)):
        x1, x2 = [Fraction(t) for t in X[n, 0]], [Fraction(t) for t in X[n, 1]]
        p = [a - c for a, c in zip(x1, x2)]
        q = [sum(W[i][j] * x2[j] for j in range(d)) for i in range(d)]
        exact = {"L": sum(p[i] * q[i] for i in range(d)), "pv": sum(p[i] * Fraction(v[i]) for i in range(d)),
                 "a2": sum(x2[i] * Fraction(v[i]) for i in range(d))}
        for name, value in exact.items():
            hi, lo, rad = (part[n] for part in b[name])
            assert abs(Fraction(hi) + Fraction(lo) - value) <= Fraction(rad)
        most = g * (sum((abs(x1[i]) + abs(x2[i])) * abs(q[i]) for i in range(d))
                    + sum(abs(p[i]) * abs(W[i][j]) * abs(x2[j]) for i in range(d) for j in range(d)))
        label = g * sum((abs(x1[i]) + abs(x2[i])) * abs(Fraction(v[i])) for i in range(d))
        for name, value in (("most", most), ("label", label)):
            assert value * (1 - Fraction(1, 2**20)) <= Fraction(b[name][n]) <= value


def test_the_half_distance_is_a_tight_lower_bound(run):
    """The floor against the worlds' exact half distance (rationals): below it, within 2^-26."""
    *_, found, _ = run
    (Kp, Qp), (Km, Qm) = found.worlds
    D = exact_product(np.vstack([Kp, -Km]).T, np.vstack([Qp, Qm]))
    half = math.sqrt(sum(x * x for row in D for x in row)) / 2  # float sqrt of the exact square: within 2^-52
    assert half * (1 - 2.0**-26) <= _half_distance(*found.worlds) <= half * (1 - 2.0**-50)


def test_the_recorder_names_the_probes_and_refuses_the_rest():
    """:class:`CrossRecorder` keeps the transcript :func:`cross_transcript` reads from a full record;
    a query one bit off the skeleton's probe is not named (refused), nor a recorder without the
    learner's generator, nor a transcript that is not one skeleton's cross."""
    d, r, start = 16, 4, []
    log, K, Q, v, _ = recorded_run(d, r, start=start)
    rng = np.random.default_rng(0)
    low_rank_target(d, r, rng)
    oracle = CrossRecorder(FactoredAttention(K, Q, v), rng=copy.deepcopy(rng))
    learn_skeleton(oracle, rank=r, rng=rng)
    kept, read = oracle.transcript(), cross_transcript(log, d, copy.deepcopy(start[0]))
    for name in ("P", "Q", "k", "l", "e", "y"):
        assert np.array_equal(getattr(kept, name), getattr(read, name))
    assert len(kept.y) == r * (2 * d - r) and kept.answers == d + r * (2 * d - r)
    bad = [QueryRecord(np.copy(rec.X), rec.y) for rec in log]
    two = next(rec for rec in bad if rec.X.shape[1] == 2)
    two.X[0, 0, 3] = np.nextafter(two.X[0, 0, 3], np.inf)
    with pytest.raises(PrecisionLossError):
        cross_transcript(bad, d, copy.deepcopy(start[0]))
    with pytest.raises(InvalidInputError):
        CrossRecorder(FactoredAttention(K, Q, v))(np.eye(d)[:, None, :])
    with pytest.raises(InvalidInputError):  # a column's answers dropped: no cross of rank r
        indistinguishable_cross(type(read)(read.P, read.Q, read.k[1:], read.l[1:], read.e[1:], read.y[1:],
                                           read.one), K, Q, v)


@pytest.mark.slow
@pytest.mark.parametrize(("d", "rank"), [(256, 8), (512, 16), (1024, 32)])
def test_the_floor_at_large_d(d, rank):
    """The matrix-free floor where the dense one cannot run: above 10^3 times the error (bound /
    error <= 10^3 is out of reach of any rigorous bound from these answers), below the bound, and
    the bound holding in both worlds."""
    row = floor_row(d, rank, matrix_free=True)
    assert row["path"] == "matrix-free" and row["shrinks"] == 0
    assert row["answers"] == d + rank * (2 * d - rank)
    assert row["floor_over_error"] > 1e3 and row["bound_over_floor"] >= 1 and row["alt_error_over_bound"] <= 1


def test_a_worlds_corrections_bound_its_move_tightly():
    """The bounds that carry the target's sums to a world (:func:`_world` with ``base``), in
    rationals at scale 1 (``x = fl(p_k + q_l)``, ``p = x - q_l``): ``x_up >= |x|^T |q - q_0|`` and
    ``p_up >= |p|^T |W - W_0| |q_l|``, each within 2 times of the form it takes, ``(|p_k| +
    |q_l|)^T |q - q_0|`` and ``|p_k|^T |W - W_0| |q_l|`` (the balls' radii are far below the move),
    and the world's sums they give below ``|x|^T |q|`` and ``|p|^T |W| |q_l|``."""
    d, start = 8, []
    log, K, Q, v, _ = recorded_run(d, 2, start=start)
    ct = cross_transcript(log, d, start[0])
    pairs = _pairs(ct, v)
    base = _world(ct, pairs, K, Q)
    (Kw, Qw), _ = indistinguishable_cross(ct, K, Q, v).worlds
    sums = _world(ct, pairs, Kw, Qw, base=base)["sums"]
    W0, W = exact_product(K.T, Q), exact_product(Kw.T, Qw)
    D = [[abs(W[i][j] - W0[i][j]) for j in range(d)] for i in range(d)]
    for n, (k, l) in enumerate(zip(pairs.k, pairs.l)):
        x = ct.P[k] + ct.Q[l]
        pk, ql = [Fraction(t) for t in ct.P[k]], [Fraction(t) for t in ct.Q[l]]
        p = [Fraction(a) - b for a, b in zip(x, ql)]
        dq = [sum(D[i][j] * abs(ql[j]) for j in range(d)) for i in range(d)]  # |W - W_0| |q_l|
        move = [abs(sum((W[i][j] - W0[i][j]) * ql[j] for j in range(d))) for i in range(d)]  # |q - q_0|
        moved = sum(abs(Fraction(x[i])) * move[i] for i in range(d))
        through = sum(abs(p[i]) * dq[i] for i in range(d))
        tiny = Fraction(2.0**-60)
        assert moved <= Fraction(sums["x_up"][n]) <= 2 * sum((abs(pk[i]) + abs(ql[i])) * move[i]
                                                             for i in range(d)) + tiny
        assert through <= Fraction(sums["p_up"][n]) <= 2 * sum(abs(pk[i]) * dq[i] for i in range(d)) + tiny
        q = [sum(W[i][j] * ql[j] for j in range(d)) for i in range(d)]  # the world's sums, from below
        assert Fraction(sums["xq"][n]) <= sum(abs(Fraction(x[i])) * abs(q[i]) for i in range(d))
        assert Fraction(sums["pw"][n]) <= sum(abs(p[i]) * abs(W[i][j]) * abs(ql[j])
                                              for i in range(d) for j in range(d))
