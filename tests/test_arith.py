"""The three arithmetics agree where they should and differ where they must."""

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from attnproof.arith import FLOAT64, MP, SYMPY, parse
from attnproof.errors import InvalidInputError, NonFiniteError


@pytest.mark.parametrize("spec,name", [("float64", "float64"), ("sympy", "sympy"), ("mp:40", "mp:40")])
def test_parse(spec, name):
    assert parse(spec).name == name


@pytest.mark.parametrize("spec", ["float32", "mp:", "mp:-3", "mp:3", "MP:40", ""])
def test_parse_rejects(spec):
    with pytest.raises(InvalidInputError):
        parse(spec)


@given(st.floats(-30, 30))
def test_float_logit_inverts_sigmoid(t):
    p = FLOAT64.sigmoid(np.array([t]))
    # sigma^{-1} has derivative 1/(p(1-p)); the round trip loses at most that factor of 2^-53.
    tol = 4 * FLOAT64.eps / (p[0] * (1 - p[0]))
    assert abs(FLOAT64.logit(p)[0] - t) <= tol


def test_mp_logit_inverts_sigmoid_to_working_precision():
    a = MP(80)
    with a.context():
        t = a.asarray([mpmath.mpf("3.25"), mpmath.mpf("-17.5")])
        back = a.logit(a.sigmoid(t))
        assert max(abs(x - y) for x, y in zip(back, t)) < mpmath.mpf(10) ** -70


def test_mp_logit_of_invalid_probability_is_nan():
    a = MP(30)
    out = a.logit(a.asarray([0, 1, 2, -1]))
    assert all(mpmath.isnan(x) for x in out)


def test_sympy_logit_is_exact():
    x = sp.Symbol("x", real=True)
    assert SYMPY.logit(SYMPY.sigmoid(np.array([x], dtype=object)))[0] == x


def test_float_softmax_is_stable_for_huge_scores():
    s = np.array([[1e308, -1e308, 0.0], [800.0, 799.0, -800.0]])
    a = FLOAT64.softmax(s)
    assert np.all(np.isfinite(a)) and np.allclose(a.sum(axis=1), 1)


def test_solve_agrees_across_arithmetics():
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    B = np.array([[1.0, 0.0], [0.0, 1.0]])
    exact = SYMPY.solve(SYMPY.asarray(A), SYMPY.asarray(B))
    assert exact[0, 0] == sp.Rational(3, 5)
    mp = MP(50).solve(MP(50).asarray(A), MP(50).asarray(B))
    with mpmath.workdps(50):
        assert abs(mp[0, 0] - mpmath.mpf(3) / 5) < mpmath.mpf(10) ** -48
    assert np.allclose(FLOAT64.solve(A, B), np.linalg.inv(A))


def test_check_finite():
    with pytest.raises(NonFiniteError):
        FLOAT64.check_finite(np.array([1.0, np.nan]), "x")
    with pytest.raises(NonFiniteError):
        MP(20).check_finite(MP(20).asarray([1.0, float("inf")]), "x")
    with pytest.raises(NonFiniteError):
        SYMPY.asarray([float("nan")])


def test_mp_context_restores_global_precision():
    before = mpmath.mp.dps
    with MP(200).context():
        assert mpmath.mp.dps == 200
    assert mpmath.mp.dps == before
