"""Scoring a recovery: scaled norms, bits for W and v separately, biases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from attnproof.arith import FLOAT64, MP, SYMPY
from attnproof.recovery import Recovery, score


def rec_of(W, v, arith=FLOAT64, **kw):
    return Recovery(W=arith.asarray(W), v=arith.asarray(v), queries=0, arith=arith, **kw)


@given(st.integers(-300, 300))
def test_sign_flipped_W_is_never_scored_as_exact_at_any_scale(e):
    """W_hat = -W* is wrong in every entry: relative error 2 and -1 bits, at 1e-300 or 1e300."""
    W, v = np.eye(3) * 10.0**e, np.ones(3)
    s = score(rec_of(-W, v), W, v)
    assert s.rel_err_W == pytest.approx(2.0) and s.bits_W == pytest.approx(-1.0)
    assert s.bits_v is None and s.bits == s.bits_W  # v exact: bits are W's, not a mix


def test_mpmath_errors_far_below_float64_range_are_reported():
    m = MP(60)
    W = m.asarray(np.eye(2))
    with m.context():
        What = W + m.asarray([[0, "1e-400"], [0, 0]])
    s = score(Recovery(W=What, v=m.asarray([1, 1]), queries=0, arith=m), W, m.asarray([1, 1]))
    assert 0 < s.err_W and s.bits_W == pytest.approx(400 * math.log2(10), rel=1e-9, abs=0)


def test_exact_recovery_has_no_bits_and_biases_are_scored():
    x = sp.Rational(1, 3)
    W, v = np.array([[x]], dtype=object), np.array([x], dtype=object)
    rec = rec_of(W, v, SYMPY, c=np.array([x], dtype=object), beta=x)
    s = score(rec, W, v, c=np.array([x], dtype=object), beta=x + 1)
    assert s.bits is None and s.err_W == 0 and s.err_c == 0 and s.err_beta == 1.0


def test_recovery_parses_its_arithmetic_name():
    rec = Recovery(W=np.eye(1), v=np.ones(1), queries=0, arith="mp:30")
    assert rec.arith.name == "mp:30" and rec.arith.family == "mpmath"
