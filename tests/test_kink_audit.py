"""The audit of a network that stands unpolished (``attnproof/theorems/transformer/_kink_audit.py``):
its extrapolation bound, the wedge it measures on a merged pair, and its refusals."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnproof.arith import FLOAT64
from attnproof.measure import Session
from attnproof.models import ReluFFN
from attnproof.oracles import ValueOracle
from attnproof.theorems.transformer._kink_audit import (
    REACH_LOG2,
    ROUNDING_MARGIN,
    RUNGS,
    _wedge,
    audit_query_bound,
    spread,
)
from attnproof.theorems.transformer._path_search import _PathSearch


@given(st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_spread_bounds_every_linear_function_within_its_centres_widths(d, seed):
    """For centres spanning a hyperplane (d - 1 of them, ``|m|_inf = 1``) and widths y, every linear
    h on the hyperplane with ``|h(m_i)| <= y_i`` stays within spread(M, y) on the cube's section;
    and spread is attained up to the cube/section gap (at least the largest y_i)."""
    rng = np.random.default_rng(seed)
    n = rng.standard_normal(d)
    M = np.linalg.qr(np.column_stack([n, rng.standard_normal((d, d - 1))]))[0][:, 1:]
    M = M / np.abs(M).max(axis=0)
    y = rng.uniform(0.1, 1.0, d - 1)
    bound = spread(M, y)
    assert bound >= y.max() * (1 - 1e-12)  # h may reach y_i at m_i itself
    for _ in range(50):
        h_at = y * rng.uniform(-1, 1, d - 1)  # h's values at the centres
        g = np.linalg.pinv(M).T @ h_at  # h(z) = g^T z on the span
        z = M @ rng.standard_normal(d - 1)
        z /= np.abs(z).max()  # |z|_inf = 1, on the hyperplane
        assert abs(g @ z) <= bound * (1 + 1e-9)


def _pair_search(theta: float) -> tuple[_PathSearch, np.ndarray, float]:
    """A search over f = ReLU(k^T x) - 0.5 ReLU(t^T x), k = (1, theta, 0), t = (1, 2 theta, 0): two
    units of opposite convexities ~theta rad apart merged into ``J = k - t / 2 = (1/2, 0, 0)``; on
    the line ``m + s e_0`` through m = (0, 1, 0) on J's hyperplane the kinks cross at ``s_J = 0``,
    ``s_K = -theta`` and ``s_T = -2 theta``: the wedge is ``h = 2 theta`` wide from J's crossing."""
    k, t = np.array([1.0, theta, 0.0]), np.array([1.0, 2 * theta, 0.0])
    oracle = ValueOracle(ReluFFN(np.column_stack([k, t]), np.array([1.0, -0.5])))
    search = _PathSearch(Session(oracle, FLOAT64), np.ones(3), 0.0, 1)
    return search, np.array([0.0, 1.0, 0.0]), 2 * theta


@pytest.mark.parametrize("theta", [1e-10, 1e-9, 1e-8, 1e-7])
def test_the_wedge_of_a_merged_pair_is_measured_within_twice_its_width(theta):
    """At a centre m on J's hyperplane the ladder stops at the first offset y at least the wedge's
    width h from J's crossing (its far kink), below 2 h: the charge it makes, ``|J^T n| y``, holds
    the merge's D on that line (``|D| <= |J^T n| h``) and is at most twice it; every query counted."""
    search, m, h = _pair_search(theta)
    n = np.array([1.0, 0.0, 0.0])
    jump, y = _wedge(search, m, n, 2.0**REACH_LOG2, 0.5, 1e-12)
    assert y is not None and h <= y <= 2 * h
    assert jump == pytest.approx(0.5, rel=1e-6, abs=0)
    assert search.ledger.audited == search.session.queries == 4 + 2 * (1 + np.log2(y / y_first(search, m, n)))


def y_first(search: _PathSearch, m: np.ndarray, n: np.ndarray) -> float:
    """The ladder's first offset at m (as :func:`_wedge` sizes it), from the four far answers."""
    S = 2.0**REACH_LOG2
    far = [float(v) for x, v in search.seen[:4]]
    line_tol = 3 * max(search.tol(m, v) for v in far)
    jump = abs((far[1] - far[0]) / S - (far[2] - far[3]) / S)
    return max(ROUNDING_MARGIN * 2 * line_tol / jump, S * 2.0**-RUNGS)


def test_a_wedge_wider_than_the_far_points_is_refused():
    """A pair 1e-5 rad apart merged: its wedge, 2e-5 |m| at the centre, is wider than half the far
    points' offset 2^-16: no rung closes (None: the caller refuses); every query counted."""
    search, m, h = _pair_search(1e-5)
    jump, y = _wedge(search, m, np.array([1.0, 0.0, 0.0]), 2.0**REACH_LOG2, 0.5, 1e-12)
    assert y is None and h > 2.0**REACH_LOG2 / 2
    assert search.ledger.audited == search.session.queries > 4


def test_a_kink_f_does_not_have_is_charged_or_refused_by_its_size():
    """Where f is one line across (no kink within 2 S of m), the network's kink of jump ``own`` moves
    f_hat off f by ``own S / 4`` somewhere: refused (None) when that exceeds the bound, else charged
    at the width S."""
    oracle = ValueOracle(ReluFFN(np.eye(2)[:, :1], np.ones(1)))  # f = ReLU(x_0): linear near m
    search = _PathSearch(Session(oracle, FLOAT64), np.ones(2), 0.0, 1)
    m, n, S = np.array([1.0, 0.0]), np.array([0.0, 1.0]), 2.0**REACH_LOG2
    assert _wedge(search, m, n, S, 1.0, 1e-9) == (1.0, None)
    assert _wedge(search, m, n, S, 1.0, 1.0) == (1.0, S)


def test_the_audits_query_bound_counts_every_rung():
    """``L (d - 1) (POINTS + 2 RUNGS)``: none in d = 1 (every hyperplane is {0})."""
    assert audit_query_bound(1, 5) == 0
    assert audit_query_bound(3, 2) == 2 * 2 * (6 + 2 * 48)
