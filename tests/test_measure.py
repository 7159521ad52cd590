"""The measuring level: bilinear probes, scaling, the session's accounting and error model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnproof.arith import FLOAT64, MP
from attnproof.errors import PrecisionLossError
from attnproof.measure import Probes, ScalePolicy, Session, probe_batch, value_errors
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
