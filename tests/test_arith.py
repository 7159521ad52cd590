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


@given(st.lists(st.sampled_from([1.0, -2.5, 1e308, -1e308, 5e-324]), max_size=6), st.data())
def test_float_check_finite_is_exact_when_the_sum_overflows(entries, data):
    """Finite entries whose sum overflows (1e308 + 1e308) pass; one NaN or infinity anywhere
    (inf and -inf together sum to NaN) is refused."""
    a = np.array(entries)
    FLOAT64.check_finite(a, "x")
    bad = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    at = data.draw(st.integers(0, len(entries)))
    with pytest.raises(NonFiniteError):
        FLOAT64.check_finite(np.insert(a, at, bad), "x")


def test_mp_context_restores_global_precision():
    before = mpmath.mp.dps
    with MP(200).context():
        assert mpmath.mp.dps == 200
    assert mpmath.mp.dps == before


# --- the facts about an arithmetic the learners ask for (no branching outside arith.py) ------


@pytest.mark.parametrize("arith", [FLOAT64, MP(30)])
@pytest.mark.parametrize("e", [-300, -170, 0, 150, 300])
def test_norm_neither_underflows_nor_overflows(arith, e):
    x = arith.asarray(np.array([3.0, 4.0]) * 10.0**e)
    assert arith.norm(x) == pytest.approx(5 * 10.0**e, rel=1e-12)


def test_exact_facts_are_exact():
    x = np.array([sp.Integer(0), sp.Rational(1, 10**400), sp.Symbol("y", nonzero=True)], dtype=object)
    assert list(SYMPY.negligible(x, 1.0)) == [True, False, False]
    mags = SYMPY.magnitudes(x)
    assert mags[0] == 0 and mags[1] > 0 and mags[2] > 0  # non-zero is never reported as 0
    assert SYMPY.is_singular(np.array([[1, 2], [2, 4]], dtype=object))
    assert not SYMPY.is_singular(np.array([[1, 2], [2, 5]], dtype=object))
    assert list(SYMPY.pow2(np.array([-3, 4]))) == [sp.Rational(1, 8), 16]


def test_log2_abs_max_reaches_below_float64():
    m = MP(30)
    with m.context():
        x = m.asarray(["1e-400", "-3e-401"])
    assert m.log2_abs_max(x) == pytest.approx(-400 * np.log2(10), rel=1e-12)
    assert FLOAT64.log2_abs_max(np.zeros(3)) == -np.inf


@pytest.mark.parametrize("arith,family", [(FLOAT64, "float64"), (MP(20), "mpmath"), (SYMPY, "sympy")])
def test_family_names_what_learners_declare(arith, family):
    assert arith.family == family
    P = arith.asarray(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert np.array_equal(arith.to_float(arith.inverse_of_orthogonal(P)), [[0, 1], [1, 0]])
    assert list(arith.to_float(arith.maximum(arith.asarray([-1.0, 2.0])))) == [0.0, 2.0]
