"""The floor under the FFN learner's naive bound (issue 22): two bias-free FFNs that every answer of
the real oracle fits under the naive declaration, proven answer by answer, so that no rigorous bound
from A_FFN's transcript can lie below half their distance at a vertex of the cube
(:mod:`attnproof.theorems.transformer.indistinguishable`)."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import numpy as np
import pytest

from attnproof.arith import FLOAT64
from attnproof.errors import InvalidInputError, ShapeError
from attnproof.models import ReluFFN
from attnproof.oracles import QueryRecord, ValueOracle
from attnproof.theorems.transformer.ffn import learn_ffn
from attnproof.theorems.transformer.indistinguishable import (
    NEAR, NOISE, _farthest, ffn_margins, floor_row, indistinguishable,
)
from attnproof.theorems.transformer.runner import run_ffn, transformer_target

SIZES = ((4, 4), (8, 8), (4, 8))
#: Heavier sizes (opt in with -m slow): the bench's largest.
SLOW_SIZES = ((16, 16), (16, 8), (8, 16), (4, 16))


def recorded_run(d: int, m: int, seed: int = 0):
    """A bench run of A_FFN (float64, naive answers, defaults) with every query recorded."""
    rng = np.random.default_rng(seed)
    _, A, w = transformer_target(d, m, rng)
    oracle = ValueOracle(ReluFFN(A, w, FLOAT64), record=True)
    return oracle.log, A, w, learn_ffn(oracle, rng=rng, arith=FLOAT64)


@pytest.fixture(scope="module", params=SIZES, ids=str)
def run(request):
    log, A, w, rec = recorded_run(*request.param)
    return log, A, w, rec, indistinguishable(log, A, w)


def _exact_value(x: np.ndarray, A: np.ndarray, w: np.ndarray) -> Fraction:
    """``w^T ReLU(A^T x)`` in rationals."""
    z = [sum(Fraction(xi) * Fraction(aik) for xi, aik in zip(x, A[:, k], strict=True)) for k in range(len(w))]
    return sum(Fraction(wk) * max(zk, Fraction(0)) for wk, zk in zip(w, z, strict=True))


def _check_worlds(log, A, w, rec, found):
    pairs = list(zip(found.worlds, found.readouts, strict=True))
    for target, readout in pairs:
        assert np.all(ffn_margins(log, target, readout) >= 0)
    if not found.shifted:  # the worlds are centred at the target, whose answers are allowed too
        assert np.all(ffn_margins(log, A, w) >= 0)
    assert found.answers == sum(len(r.y) for r in log) == rec.queries
    m = A.shape[1]
    assert all(np.any(Aw[:, :m] != A) and np.array_equal(ww[:m], w) for Aw, ww in pairs)
    x0 = found.point
    exact = [_exact_value(x0, Aw, ww) for Aw, ww in pairs]  # in rationals, beside the proof's Arb
    assert abs(exact[0] - exact[1]) / 2 >= Fraction(found.floor)
    F = [float(ReluFFN(Aw, ww)(x0[None, None])[0]) for Aw, ww in pairs]
    assert np.abs(x0).max() == 1  # |x0|_inf = 1: a vertex, or a point of a face
    bound = rec.diagnostics["error_bound"]
    err = float(np.max(np.abs(rec(x0[None]) - ReluFFN(A, w)(x0[None, None]))))
    assert err < found.floor <= bound
    # the bound holds in both worlds where the floor is read
    at = float(rec(x0[None])[0])
    assert all(abs(at - Fw) <= bound for Fw in F)


def test_every_answer_is_proven_at_the_target_and_in_both_worlds_and_the_bound_is_above_the_floor(run):
    _check_worlds(*run)


def _inflated(A: np.ndarray, w: np.ndarray, found) -> tuple[np.ndarray, np.ndarray]:
    """The first world moved 4 times as far from the target (its extra unit's weight too)."""
    m, (Aw, ww) = A.shape[1], (found.worlds[0], found.readouts[0])
    return np.column_stack([A + 4 * (Aw[:, :m] - A), Aw[:, m:]]), np.append(w, 4 * ww[m:])


def test_an_inflated_move_is_rejected(run):
    """The check can fail: the first layer moved 4 times as far leaves answers outside the declaration."""
    log, A, w, _, found = run
    assert np.any(~(ffn_margins(log, *_inflated(A, w, found)) >= 0))


@pytest.mark.parametrize("seed", (1, 3))
def test_worlds_one_unit_wider_raise_the_floor(seed):
    """Worlds of width m + 1 (a unit +- t c ReLU(n^T x) added to both; A_FFN is told no width):
    every answer proven in both, 4 times the move refused, and the floor above the same-width one
    at d = m = 4, seeds 1 and 3 (same width 3.78e-12 and 1.19e-12, 952 and 920 times the bench's
    error; wider 5.11e-12 and 1.58e-12)."""
    log, A, w, rec = recorded_run(4, 4, seed=seed)
    same, wider = indistinguishable(log, A, w), indistinguishable(log, A, w, wider=True)
    assert [Aw.shape for Aw in wider.worlds] == [(4, 5)] * 2
    _check_worlds(log, A, w, rec, wider)
    assert np.any(~(ffn_margins(log, *_inflated(A, w, wider)) >= 0))
    assert wider.floor > same.floor


def test_a_moved_answer_is_rejected():
    """One answer moved by twice its declared tolerance, beyond its margin at f*, is refused, the
    others still proven."""
    log, A, w, _ = recorded_run(4, 4)
    X, y = np.concatenate([r.X for r in log]), np.concatenate([r.y for r in log])
    before = ffn_margins([QueryRecord(X, y)], A, w)
    k = int(np.argmax(before))
    moved = y.copy()
    moved[k] += 2 * (before[k] + NOISE * abs(y[k])) + 2 * before[k]
    after = ffn_margins([QueryRecord(X, moved)], A, w)
    assert after[k] < 0
    assert np.all(np.delete(after, k) >= 0)


def _exact_margin(x: np.ndarray, y: float, A: np.ndarray, w: np.ndarray, band: float) -> Fraction:
    """``noise (|F| + min |grad F|^T |x|) - |y - F|`` in rationals, the minimum over every pattern of
    the units within ``band |a_k|^T |x|`` of their kinks."""
    d, m = A.shape
    xs, Af, wf = [Fraction(t) for t in x], [[Fraction(t) for t in row] for row in A], [Fraction(t) for t in w]
    z = [sum(xs[i] * Af[i][k] for i in range(d)) for k in range(m)]
    size = [sum(abs(xs[i]) * abs(Af[i][k]) for i in range(d)) for k in range(m)]
    F = sum(wf[k] * max(z[k], Fraction(0)) for k in range(m))
    unsure = [k for k in range(m) if abs(z[k]) <= Fraction(band) * size[k]]
    grads = []
    for pattern in product((False, True), repeat=len(unsure)):
        on = [z[k] > 0 for k in range(m)]
        for k, p in zip(unsure, pattern, strict=True):
            on[k] = p
        g = [sum(wf[k] * Af[i][k] for k in range(m) if on[k]) for i in range(d)]
        grads.append(sum(abs(g[i]) * abs(xs[i]) for i in range(d)))
    return Fraction(NOISE) * (abs(F) + min(grads)) - abs(Fraction(y) - F)


def test_the_margins_are_below_the_exact_ones():
    """Each proven margin is at most the exact one (rationals), at the target and in a world, on
    the queries nearest a kink (the path's kink points) and a few others."""
    log, A, w, _ = recorded_run(4, 4, seed=1)
    found = indistinguishable(log, A, w)
    X = np.concatenate([r.X[:, 0] for r in log])
    y = np.concatenate([r.y for r in log])
    closeness = np.min(np.abs(X @ A) / (np.abs(X) @ np.abs(A)), axis=1)
    picked = [*np.argsort(closeness)[:8], *range(0, len(y), 25)]
    for target in (A, found.worlds[1]):
        margins = ffn_margins(log, target, w)
        for b in picked:
            assert Fraction(margins[b]) <= _exact_margin(X[b], y[b], target, w, 8 * 2.0**-53)


def test_a_real_answer_outside_the_declaration_is_floored_around_a_centre():
    """Found by this floor (d = 16, m = 4, seed 4): the real float64 oracle's answer at a kink point
    lies outside the narrowest reading of the naive declared set: query 362 of 428, one unit's
    pre-activation 1.3e-15, within the declaration's band of its kink, so the reading takes it off
    (the least gradient), where f's other units' gradient allows only ~1e-28 around f = -1.05e-15,
    and float64 answers -9.0e-16.  (When this test was written the learner asked another point
    there, f = 0 exactly, answered -2.2e-16, outside ``FFNNoiseAdversary.tolerance_at``'s reading
    too; since the learner's changes this answer fits that wider reading.)  The floor needs the
    answers in the two worlds' sets only: they are built around a centre with that unit moved off
    its kink."""
    log, A, w, rec = recorded_run(16, 4, seed=4)
    X = np.concatenate([r.X[:, 0] for r in log])
    outside = np.flatnonzero(~(ffn_margins(log, A, w) >= 0))
    assert len(outside)
    band = (16 + 4) * 2.0**-53 * (np.abs(X[outside]) @ np.abs(A))
    assert np.all(np.any(np.abs(X[outside] @ A) <= band, axis=1))  # a unit within the band of its kink
    y = np.concatenate([r.y for r in log])
    alone = ffn_margins([QueryRecord(X[outside][:, None], ReluFFN(A, w)(X[outside][:, None]))], A, w)
    assert np.all(alone < 0) and np.array_equal(ReluFFN(A, w)(X[outside][:, None]), y[outside])  # asked again
    found = indistinguishable(log, A, w)
    assert found.shifted >= len(outside)
    _check_worlds(log, A, w, rec, found)


def test_the_floor_row_is_the_bench_run():
    """floor_row's run is run_ffn's: the same target, answers, f_hat, bound and error."""
    row, bench = floor_row(4, 4, seed=2), run_ffn(4, m=4, seed=2)
    assert (row["err_W"], row["error_bound"], row["queries"]) == (bench["err_W"], bench["error_bound"],
                                                                  bench["queries"])
    assert row["floor_over_error"] > 1 and row["bound_over_floor"] >= 1
    assert row["alt_error_over_bound"] <= 1


def test_the_floor_is_above_each_vertexs_program_alone():
    """The program is solved at every vertex and then at the points off the vertices its solutions
    move F most (:func:`_farthest`): at d = m = 4, seed 1 the floor is above the floor of the
    program solved at any one vertex alone (every world pair proven), i.e. above what any search
    over vertices gives (the code before took one vertex by a local search: 2.27e-12, below the best
    single vertex's 2.70e-12; now 3.78e-12)."""
    log, A, w, rec = recorded_run(4, 4, seed=1)
    found = indistinguishable(log, A, w)
    _check_worlds(log, A, w, rec, found)
    alone = [indistinguishable(log, A, w, at=np.array([v])) for v in product((-1.0, 1.0), repeat=4)]
    for one in alone:
        _check_worlds(log, A, w, rec, one)
    assert found.floor > max(one.floor for one in alone)
    assert np.abs(found.point).min() < 1  # off the vertices


def _first_order_move(A: np.ndarray, w: np.ndarray, E: np.ndarray, x: np.ndarray) -> float:
    """``sum_{k: a_k^T x > 0} w_k e_k^T x``, unit by unit."""
    return sum(w[k] * float(E[:, k] @ x) for k in range(len(w)) if float(A[:, k] @ x) > 0)


@pytest.mark.parametrize("seed", range(3))
def test_the_farthest_point_moves_f_more_than_every_vertex_and_sampled_point_of_the_surface(seed):
    """:func:`_farthest` finds the largest first-order move over the cube's surface: at least that at
    every vertex and at 4000 random points of the faces, the point on the surface, each unit at
    least NEAR |a_k|_1 from its kink."""
    rng = np.random.default_rng(seed)
    d, m = 4, 6
    A, w, E = rng.standard_normal((d, m)), rng.standard_normal(m), rng.standard_normal((d, m))
    x = _farthest(A, w, E)
    assert np.abs(x).max() == 1
    assert np.all(np.abs(x @ A) >= NEAR * np.abs(A).sum(axis=0) * (1 - 2.0**-40))
    faces = rng.uniform(-1, 1, (4000, d))
    faces[np.arange(4000), rng.integers(0, d, 4000)] = rng.choice([-1.0, 1.0], 4000)
    others = [*faces, *(np.array(v) for v in product((-1.0, 1.0), repeat=d))]
    best = max(_first_order_move(A, w, E, p) for p in others)
    assert best > 0
    assert _first_order_move(A, w, E, x) >= best * (1 - 2.0**-10)


def test_the_floor_is_above_1e3_times_the_error_at_the_benchs_weakest_target():
    """d = 4, m = 16, seed 3, the one bench target whose floor was within 1e3 of the learner's
    error (363 at the target's width, 475 one unit wider: f_hat 1.57e-13 off, its u from the
    mirrored end pieces as measured 5.5e-14 off in an entry).  With the end pieces refitted
    (``ffn._refitted``, u bounded against the measured pair, issue 22) the same answers give an
    error 2.6e-14, the floor 2.18e3 times it: no rigorous bound from these answers is within 1e3
    of the error; every world still proven and the bound above the floor."""
    log, A, w, rec = recorded_run(4, 16, seed=3)
    found = indistinguishable(log, A, w)
    _check_worlds(log, A, w, rec, found)
    row = floor_row(4, 16, seed=3)
    assert row["floor_over_error"] > 1e3
    assert row["floor"] <= row["error_bound"] and row["alt_error_over_bound"] <= 1


def test_bad_input_is_refused():
    log, A, w, _ = recorded_run(4, 4)
    with pytest.raises(InvalidInputError):  # |x0|_inf = 1/2
        indistinguishable(log, A, w, at=np.full((1, 4), 0.5))
    with pytest.raises(ShapeError):
        ffn_margins(log, A, w[:2])
    with pytest.raises(InvalidInputError):
        ffn_margins([QueryRecord(np.ones((1, 2, 4)), np.zeros(1))], A, w)
    with pytest.raises(InvalidInputError):  # A 1e-150: the products would underflow
        ffn_margins(log, A * 1e-150, w)


@pytest.mark.slow
@pytest.mark.parametrize("size", SLOW_SIZES, ids=str)
@pytest.mark.parametrize("seed", range(2))
def test_the_floor_at_the_benchs_largest(size, seed):
    log, A, w, rec = recorded_run(*size, seed=seed)
    _check_worlds(log, A, w, rec, indistinguishable(log, A, w))
