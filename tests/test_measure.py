"""The measuring level: bilinear probes, scaling, the session's accounting and error model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnproof.arith import FLOAT64, MP
from attnproof.errors import PrecisionLossError
from attnproof.measure import (
    Probes, ScalePolicy, Session, balanced, probe_batch, random_orthogonal, value_errors,
)
from attnproof.models import Attention
from attnproof.oracles import ValueOracle


def test_probe_batch_builds_the_documented_tokens():
    P, Q = np.array([[1.0, 2.0]]), np.array([[3.0, -1.0]])
    probes = Probes(P, Q, np.ones(2), FLOAT64)
    X = probe_batch(probes, np.array([0]), np.array([0]), np.array([4.0]))
    assert np.array_equal(X[0], 4.0 * np.array([P[0] + Q[0], Q[0]]))  # s [(p + q)^T; q^T]
    query_only = Probes(P, Q, np.ones(2), FLOAT64, scale_query_only=True)
    X = probe_batch(query_only, np.array([0]), np.array([0]), np.array([4.0]))
    assert np.array_equal(X[0], np.array([P[0] + 4.0 * Q[0], 4.0 * Q[0]]))  # [(p + s q)^T; (s q)^T]


@given(st.integers(1, 5), st.integers(0, 2**32 - 1), st.integers(-60, 60))
def test_session_measures_p_W_q_within_its_error_model(d, seed, e):
    rng = np.random.default_rng(seed)
    W, v = rng.standard_normal((d, d)) * 2.0**e, rng.standard_normal(d) + 2.0
    P, Q = rng.standard_normal((d, d)), rng.standard_normal((d, d))
    session = Session(ValueOracle(Attention(W, v)), FLOAT64)
    probes = Probes(P, Q, v, FLOAT64)
    idx = np.arange(d)
    L, k = session.measure_adaptively(probes, (idx, idx))
    measured = probes.values(L, k, idx)
    truth = np.einsum("ij,jk,ik->i", P, W, Q)
    bound = value_errors(probes, L, k, (idx, idx), np.linalg.norm(W))
    assert np.all(np.abs(measured - truth) <= bound)
    info = session.diagnostics
    assert session.queries == d + info["reasked_queries"]  # every query counted, re-asks included


def test_session_measurements_are_exact_in_mpmath_to_the_working_precision():
    m = MP(50)
    W, v = np.array([[0.5, -1.0], [2.0, 0.25]]), np.array([1.0, -2.0])
    session = Session(ValueOracle(Attention(W, v, m)), m)
    probes = Probes(m.asarray(np.eye(2)), None, m.asarray(v), m)
    L, k = session.measure_adaptively(probes, (np.array([0, 1]), np.array([1, 0])))
    assert np.max(np.abs(m.to_float(probes.values(L, k, np.array([0, 1]))) - [W[0, 1], W[1, 0]])) < 1e-45


def test_saturation_beyond_the_scale_range_raises_and_terminates():
    W, v = np.full((2, 2), 1e300), np.ones(2)
    oracle = ValueOracle(Attention(W, v))
    session = Session(oracle, FLOAT64, ScalePolicy(max_k=8))
    with pytest.raises(PrecisionLossError, match="saturated"):
        session.measure_adaptively(Probes(np.eye(2), None, v, FLOAT64), (np.array([0]), np.array([0])))
    assert oracle.queries <= 1 + ScalePolicy().rounds


@given(
    st.integers(1, 6), st.integers(0, 2**32 - 1), st.sampled_from(["column", "row", "scattered"]),
    st.booleans(), st.booleans(), st.integers(-3, 3),
)
def test_buffered_probe_batch_equals_the_documented_tokens(d, seed, shape, basis, query_only, e):
    """The one-pass assembly into a buffer (rows read from scaled copies of P and Q) writes exactly
    the tokens ``s [(p + q)^T; q^T]`` (``[(p + s q)^T; (s q)^T]`` query-only) of the plain path."""
    rng = np.random.default_rng(seed)
    P, Q = rng.standard_normal((d, d)), None if basis else rng.standard_normal((d, d))
    probes = Probes(P, Q, np.ones(d), FLOAT64, scale_query_only=query_only)
    n = 2 * d
    fixed, free = np.full(n, d - 1), rng.integers(0, d, n)
    kk = {"column": rng.integers(0, d, n), "row": fixed, "scattered": free}[shape]
    ll = {"column": fixed, "row": free, "scattered": rng.integers(0, d, n)}[shape]
    s = np.full(n, 2.0**e)
    buffered = probe_batch(probes, kk, ll, s, np.full((n + 3, 2, d), np.nan)).copy()
    assert np.array_equal(buffered, probe_batch(probes, kk, ll, s))
    again = probe_batch(probes, kk, ll, s, np.zeros((n, 2, d)))  # the cached scaled copies, reused
    assert np.array_equal(again, buffered)


@given(st.integers(1, 64), st.integers(0, 2**32 - 1))
def test_random_orthogonal_and_balanced_bases(d, seed):
    """O(d^2) bases: orthogonal to rounding (a product of d-term sums: d eps per entry), spread
    over every coordinate, and balanced: |p_k^T v| = ||v|| / sqrt(d) for every row."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(d)
    P = balanced(random_orthogonal(d, rng), v, rng)
    assert np.abs(P @ P.T - np.eye(d)).max() <= 8 * d * FLOAT64.eps
    assert np.allclose(np.abs(P @ v), np.linalg.norm(v) / np.sqrt(d), rtol=16 * d * FLOAT64.eps, atol=0)
