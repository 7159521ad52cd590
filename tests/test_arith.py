"""The three arithmetics agree where they should and differ where they must."""

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from attnproof.arith import FLOAT64, MP, SYMPY, parse, split_product, split_rows
from attnproof.errors import DegenerateProbeError, InvalidInputError, NonFiniteError, PrecisionLossError


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
        assert max(abs(x - y) for x, y in zip(back, t, strict=True)) < mpmath.mpf(10) ** -70


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
    assert arith.norm(x) == pytest.approx(5 * 10.0**e, rel=1e-12, abs=0)


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
    assert m.log2_abs_max(x) == pytest.approx(-400 * np.log2(10), rel=1e-12, abs=0)
    assert FLOAT64.log2_abs_max(np.zeros(3)) == -np.inf


@pytest.mark.parametrize("arith,family", [(FLOAT64, "float64"), (MP(20), "mpmath"), (SYMPY, "sympy")])
def test_family_names_what_learners_declare(arith, family):
    assert arith.family == family
    P = arith.asarray(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert np.array_equal(arith.to_float(arith.inverse_of_orthogonal(P)), [[0, 1], [1, 0]])
    assert list(arith.to_float(arith.maximum(arith.asarray([-1.0, 2.0])))) == [0.0, 2.0]


# --- what the rooms reached for by branching: each a method, checked in all three arithmetics --

ALL = [FLOAT64, MP(40), SYMPY]


def _close(arith, x, y, digits=None):
    """x == y exactly in sympy, to the working digits otherwise."""
    if arith.exact:
        return sp.simplify(x - y) == 0
    digits = arith.digits - 2 if digits is None else digits
    with arith.context():
        return abs(x - y) <= 10.0**-digits * max(1, abs(y))


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_pi_and_trig_are_the_arithmetics_own(arith):
    with arith.context():
        half = arith.pi / 2
        assert _close(arith, arith.sin(arith.pi / 6), arith.scalar(1) / 2)
        assert _close(arith, arith.cos(arith.pi / 3), arith.scalar(1) / 2)
        assert _close(arith, arith.tan(arith.pi / 4), arith.scalar(1))
        assert _close(arith, 2 * half, arith.pi)
        t = np.array([arith.scalar(0), arith.pi / 4], dtype=arith.dtype)
        out = arith.tan(t)
        assert out.dtype == np.dtype(arith.dtype) and out.shape == (2,)
        assert _close(arith, out[1], arith.scalar(1))
    if arith is SYMPY:
        assert arith.pi is sp.pi and arith.sin(arith.pi / 6) == sp.Rational(1, 2)
    elif arith is FLOAT64:  # math's correctly rounded functions, as the rooms used them
        assert arith.pi == math.pi and arith.tan(0.3) == math.tan(0.3) and arith.sin(0.3) == math.sin(0.3)
    else:  # every digit of mpmath's pi at 40 digits
        with mpmath.workdps(60):
            assert abs(arith.pi - mpmath.pi) < mpmath.mpf(10) ** -39


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_hypot_is_a_number_of_the_arithmetic(arith):
    w = arith.asarray([1, 2, 2])
    assert _close(arith, arith.hypot(w), arith.scalar(3))
    with arith.context():
        r = arith.hypot(arith.asarray([1, 1]))
        assert _close(arith, r * r, arith.scalar(2))
    if arith is SYMPY:
        assert arith.hypot(w) == 3 and arith.hypot(arith.asarray([1, 1])) == sp.sqrt(2)
    elif arith is FLOAT64:
        assert arith.hypot([3e200, 4e200]) == math.hypot(3e200, 4e200)  # no overflow
    else:
        assert isinstance(r, mpmath.mpf)


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_closed_form_is_correctly_rounded(arith):
    R = arith.closed_form("gamma(3/2) / (sqrt(pi) * gamma(2))")  # E|x_1| on S^2 = 1/2
    assert _close(arith, R, arith.scalar(1) / 2)
    third = arith.closed_form("1/3")
    if arith is SYMPY:
        assert third == sp.Rational(1, 3)
    elif arith is FLOAT64:
        assert third == 1 / 3
    else:
        with arith.context():
            assert third == mpmath.mpf(1) / 3


def _sphere(d):
    """E|x_1| on S^{d-1} = Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2)), written with mpmath's names."""
    return lambda m: m.gamma(m.mpf(d) / 2) / (m.sqrt(m.pi) * m.gamma(m.mpf(d + 1) / 2))


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
@pytest.mark.parametrize("d", [1, 2, 3, 7, 30])
def test_evaluate_a_closed_form(arith, d):
    R = arith.evaluate(_sphere(d))
    exact = sp.gamma(sp.Rational(d, 2)) / (sp.sqrt(sp.pi) * sp.gamma(sp.Rational(d + 1, 2)))
    if arith is SYMPY:
        assert sp.simplify(R - exact) == 0
    elif arith is FLOAT64:  # at 30 digits, then one rounding
        with mpmath.workdps(30):
            assert R == float(_sphere(d)(mpmath)) and isinstance(R, float)
        assert R == pytest.approx(float(sp.N(exact, 30)), rel=2**-52, abs=0)
    else:  # mpmath at its own digits, bit for bit
        with arith.context():
            assert R == _sphere(d)(mpmath)
        assert _close(arith, R, arith.scalar(exact))


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_abs_max_scalar_and_argmax_abs(arith):
    a = arith.asarray([1, -3, 3, 2])
    top = arith.abs_max_scalar(a)
    assert _close(arith, top, arith.scalar(3)) and arith.argmax_abs(a) == 1  # the first largest
    assert arith.abs_max_scalar(arith.asarray(np.zeros(0))) == 0
    if arith is SYMPY:  # exact: a rational scale keeps exact computations exact
        x = arith.asarray([sp.Rational(1, 3), -sp.Rational(2, 3)])
        assert arith.abs_max_scalar(x) == sp.Rational(2, 3)
        assert arith.argmax_abs(arith.asarray([sp.Rational(1, 10**400), 0])) == 0  # below float64
    else:
        assert isinstance(top, float) and top == arith.abs_max(a)


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_within_is_a_tolerance_or_exact_zero(arith):
    assert arith.within(arith.scalar(0), 0.0)
    assert not arith.within(arith.scalar(1), 0.5)
    tiny = arith.scalar(sp.Rational(1, 10**20))
    assert arith.within(tiny, 1e-10) is (not arith.exact)  # exact arithmetic ignores tolerances


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_simplify_and_nsimplify(arith):
    s = sp.Symbol("s", real=True)
    if arith is SYMPY:
        y = np.array([sp.exp(-s) * sp.exp(s), sp.sin(s) ** 2 + sp.cos(s) ** 2], dtype=object)
        assert list(arith.simplify(y)) == [1, 1]
        assert list(arith.nsimplify(np.array([0.5, 0.7071067811865476], dtype=object))) == [
            sp.Rational(1, 2), sp.sqrt(2) / 2]
    else:  # floating point: nothing to canonicalise, the very array comes back
        a = arith.asarray([0.5, 0.25])
        assert arith.simplify(a) is a and arith.nsimplify(a) is a


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_eigh_of_the_symmetric_part(arith):
    M = arith.asarray([[2, 1], [1, 2]])
    lam, Q = arith.eigh(M)
    assert _close(arith, lam[0], arith.scalar(1)) and _close(arith, lam[1], arith.scalar(3))
    with arith.context():
        for k in range(2):  # M q = lam q and q^T q = 1
            q = Q[:, k]
            assert all(_close(arith, x, y) for x, y in zip(M @ q, lam[k] * q, strict=True))
            assert _close(arith, q @ q, arith.scalar(1))
    lam_ns, _ = arith.eigh(arith.asarray([[1, 4], [0, 1]]))  # the symmetric part [[1, 2], [2, 1]]
    assert _close(arith, lam_ns[0], arith.scalar(-1)) and _close(arith, lam_ns[1], arith.scalar(3))


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_interval_context_restores_the_saved_precision(arith):
    mpmath.iv.dps = 37  # not the default: a block that "restores" 15 would be caught
    try:
        with arith.interval() as iv:
            assert iv is mpmath.iv and mpmath.iv.dps == arith.digits + 10
            one_third = iv.mpf(1) / 3
            assert one_third.delta < 10.0 ** -(arith.digits + 8)
        assert mpmath.iv.dps == 37
        with pytest.raises(ZeroDivisionError), arith.interval(50):
            assert mpmath.iv.dps == 50
            raise ZeroDivisionError
        assert mpmath.iv.dps == 37  # restored on error too
        with pytest.raises(InvalidInputError):
            with arith.interval(0):
                pass
    finally:
        mpmath.iv.dps = 15


@pytest.mark.parametrize(
    "arith,digits,error",
    [(FLOAT64, 15, PrecisionLossError), (MP(40), 40, PrecisionLossError), (SYMPY, 15, DegenerateProbeError)],
    ids=["float64", "mp:40", "sympy"],
)
def test_digits_and_what_an_unresolved_disagreement_means(arith, digits, error):
    assert arith.digits == digits and arith.unresolved is error


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_buffer_only_where_arrays_are_machine_numbers(arith):
    buf = arith.buffer((3, 2, 4))
    if arith is FLOAT64:  # refilled in place batch after batch
        assert buf.shape == (3, 2, 4) and buf.dtype == np.float64
    else:  # object arrays are built per batch: nothing to reuse
        assert buf is None


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_qr_has_a_non_negative_diagonal(arith):
    A = arith.asarray([[0, 2], [-3, 1]])
    Q, R = arith.qr(A)
    with arith.context():
        assert all(_close(arith, x, y) for x, y in zip((Q @ R).reshape(-1), A.reshape(-1), strict=True))
        QtQ = Q.T @ Q
        assert all(_close(arith, QtQ[i, j], arith.scalar(int(i == j))) for i in range(2) for j in range(2))
    assert all(arith.to_float(np.diag(R)) >= 0) and arith.is_zero(R[1, 0])
    if arith is FLOAT64:  # numpy's QR, its signs fixed: what the rooms computed before
        Qn, Rn = np.linalg.qr(np.array([[0.0, 2.0], [-3.0, 1.0]]))
        assert np.array_equal(Q, Qn * np.sign(np.diag(Rn)))


@pytest.mark.parametrize("arith", ALL, ids=lambda a: a.name)
def test_right_singular_values_ascending_with_their_vectors(arith):
    M = arith.asarray([[3, 0], [0, 0], [0, 4]])  # singular values 3, 4; M^T M = diag(9, 16)
    s, V = arith.right_singular(M)
    assert _close(arith, s[0], arith.scalar(3)) and _close(arith, s[1], arith.scalar(4))
    with arith.context():
        for k in range(2):  # ||M v_k|| = s_k and ||v_k|| = 1
            assert _close(arith, arith.hypot(M @ V[:, k]), s[k]) and _close(arith, arith.hypot(V[:, k]), 1)


@pytest.mark.parametrize("scale", [1e-300, 1e300, 5e-324 * 2**40])
def test_norm2_scales_by_a_power_of_two_so_nothing_underflows_or_overflows(scale):
    """np.linalg.norm([1e-300, ...]) is 0 and np.linalg.norm([1e300, ...]) inf; norm2 and
    Float64.norm scale each vector into range by an exact power of two first."""
    from attnproof.arith import norm2

    a = np.array([[3.0, 4.0, 0.0], [0.0, 5.0, 12.0]])
    np.testing.assert_allclose(norm2(a * scale, axis=1) / scale, [5.0, 13.0], rtol=1e-12)
    np.testing.assert_allclose(norm2(a.T * scale, axis=0) / scale, [5.0, 13.0], rtol=1e-12)
    np.testing.assert_allclose(FLOAT64.norm(a * scale) / scale, np.sqrt(25.0 + 169.0), rtol=1e-12)
    assert norm2(np.zeros(3)) == 0.0 and np.isnan(norm2(np.array([1.0, np.nan])))
    assert FLOAT64.ldexp(a * scale, 0).tolist() == (a * scale).tolist()


def test_ldexp_is_exact_where_two_to_the_k_is_not_a_float():
    assert FLOAT64.ldexp(np.array([2.0**-1074]), 1074)[0] == 1.0  # 2^1074 itself overflows
    m = MP(20)
    with mpmath.workdps(20):
        assert m.ldexp(m.asarray([1]), -2000)[0] == mpmath.ldexp(1, -2000)
    assert SYMPY.ldexp(np.array([sp.Integer(3)], dtype=object), -2)[0] == sp.Rational(3, 4)


# --- split_product: a float64 product whose rounding is bounded a posteriori (Thm 4.1's solve)
def _exact_error_squared(A, B, X):
    """``||X - A B||_F^2`` in exact rationals (float64 entries are exact binary fractions)."""
    from fractions import Fraction

    Af = [[Fraction(x) for x in row] for row in A.tolist()]
    Bf = [[Fraction(x) for x in row] for row in B.tolist()]
    return sum((sum(Af[i][l] * Bf[l][j] for l in range(A.shape[1])) - Fraction(X[i, j])) ** 2
               for i in range(A.shape[0]) for j in range(B.shape[1]))


@pytest.mark.parametrize("d, seed, scale, tight", [
    (2, 0, 1.0, 3), (3, 1, 1.0, 3), (5, 2, 1e-3, 3), (16, 0, 1.0, 3), (16, 1, 1e200, 3), (32, 3, 1.0, 3),
    (16, 2, 1e-310, 64), (8, 4, 2.0**-1040, 64),  # subnormal B: products underflow (the d eta term)
    (4, 5, 1e307, 64),  # B so large that a split's sigma would overflow: the plain product's worst case
])
def test_split_product_bound_holds_and_is_tight_against_exact_rationals(d, seed, scale, tight):
    """``split_product(A, B)`` (A = Q^T of a float64 QR factor, B with column scales spread by
    e^N(0,1)): its rounding error, computed exactly in rationals, is below the bound and within a
    factor 3 of it (normal range: A1 B1 is exact, so only the final roundings remain, ~u ||X||; a
    plain product's bound gamma_d |A| |B| sits ~d^(3/2) above); within 64 where products underflow
    or the plain product is the fallback."""
    from fractions import Fraction

    rng = np.random.default_rng(seed)
    A = np.linalg.qr(rng.standard_normal((d, d)))[0].T
    B = rng.standard_normal((d, d)) * scale * np.exp(rng.standard_normal(d))
    X, bound = split_product(A, B)
    truth2 = _exact_error_squared(A, B, X)
    assert 0 < truth2 <= Fraction(bound) ** 2 <= tight**2 * truth2


def test_split_product_on_fixed_inputs():
    """By hand: A = I, B = diag(3, 4) split exactly (A2 = B2 = 0), so X = B exactly and the bound is
    the two additions' ``u (||S||_F + ||X||_F) = 5 u`` (times the norms' ``1 + 6 u``) plus the
    underflow term ``3 sqrt(4) 2 eta``; a vector B keeps its shape; A = 2^40 I is beyond the
    split's range (2^t): the plain product's worst case ``gamma_2 (1 + 2 gamma_2) ||2^40 B||_F``."""
    u, eta = 2.0**-53, 2.0**-1074
    g = 2 * u / (1 - 2 * u)
    B = np.diag([3.0, 4.0])
    X, bound = split_product(np.eye(2), B)
    assert np.array_equal(X, B)
    assert bound == pytest.approx(5 * u * (1 + 6 * u) + 12 * eta, rel=1e-15, abs=0)
    x, _ = split_product(np.eye(2), np.array([3.0, 4.0]))
    assert x.shape == (2,) and np.array_equal(x, [3.0, 4.0])
    X, bound = split_product(2.0**40 * np.eye(2), B)
    assert np.array_equal(X, 2.0**40 * B)
    assert bound == pytest.approx(g * (1 + 2 * g) * 2.0**40 * 5 + 12 * eta, rel=1e-15, abs=0)


def test_split_rows_is_exact_and_short():
    """``A = A1 + A2`` exactly; row i of A1 is a multiple of ``2^(E_i - t)`` (a negative entry's
    ``a + sigma`` falls a binade below sigma: its quantum is half the positive one's), A2 at most that."""
    A = np.random.default_rng(7).standard_normal((5, 9)) * np.array([[1.0], [1e-300], [1e290], [0.0], [3.0]])
    A1, A2 = split_rows(A, 20)
    E = np.ceil(np.log2(np.maximum(np.max(np.abs(A), axis=1), 2.0**-900)))
    assert np.array_equal(A1 + A2, A)
    assert np.all(np.abs(A2) <= np.ldexp(1.0, (E - 20).astype(int))[:, None])
    assert np.all(np.mod(np.ldexp(A1, (20 - E).astype(int)[:, None]), 1.0) == 0)
    with pytest.raises(InvalidInputError):  # 2^(E + 53 - t) overflows: no exact split with sigma
        split_rows(np.array([[1e300]]), 20)
    with pytest.raises(InvalidInputError):  # a quantum below 2^-1074
        split_rows(np.array([[1.0]]), 20, np.array([-1055.0]))


@pytest.mark.parametrize("d, seed, family", [
    (2, 0, "gaussian"), (3, 1, "gaussian"), (5, 2, "gaussian"), (8, 3, "gaussian"),
    (4, 0, "basis"), (7, 1, "basis"),
])
def test_solve_error_holds_and_is_tight_against_exact_rationals(d, seed, family):
    """``Float64.solve_error`` (the residual's bound ``||A^{-1}|| ||A X - B||``, A X by
    :func:`split_product`) against ``||X - A^{-1} B||_F`` computed exactly in rationals, for
    ``np.linalg.solve`` on a Gaussian A (cond 4-100) and Thm 4.1's paired basis probes scaled by
    powers of two: below the bound and within 32 times it (measured 2.3-18)."""
    import sympy

    rng = np.random.default_rng(seed)
    if family == "gaussian":
        A = rng.standard_normal((d, d))
    else:
        A = np.eye(d)
        A[1:, 0] += 1
        A *= 2.0 ** rng.integers(-3, 3, size=(d, 1))
    B = rng.standard_normal((d, d)) * np.exp(rng.standard_normal(d))
    X = np.linalg.solve(A, B)
    sv = np.linalg.svd(A, compute_uv=False)
    bound = FLOAT64.solve_error(A, X, B, 1 / sv[-1], sv[0])
    As, Bs, Xs = (sympy.Matrix([[sympy.Rational(x) for x in row] for row in M.tolist()]) for M in (A, B, X))
    truth2 = sum(e**2 for e in Xs - As.LUsolve(Bs))
    assert 0 < truth2 <= sympy.Rational(bound) ** 2 <= 32**2 * truth2


def test_solve_error_on_fixed_inputs():
    """By hand: A = I, B = diag(3, 4): X = B leaves no residual, so the bound is ``||A^{-1}|| = 2``
    times split_product's ``5 u (1 + 6 u) + 12 eta``; X = B + 2^-20 E_11 leaves the residual
    2^-20 (times the norm's and subtraction's ``(1 + u)(1 + 6 u)``); a non-finite X: inf; an mpmath
    solve keeps the first-order ``(d + 4) u cond ||X||_F``."""
    u, eta = 2.0**-53, 2.0**-1074
    B = np.diag([3.0, 4.0])
    exact_fit = FLOAT64.solve_error(np.eye(2), B, B, 2.0, 1.0)
    assert exact_fit == pytest.approx(2 * (5 * u * (1 + 6 * u) + 12 * eta), rel=1e-14, abs=0)
    X = B + np.diag([2.0**-20, 0.0])
    product = split_product(np.eye(2), X)[1]
    assert FLOAT64.solve_error(np.eye(2), X, B, 2.0, 1.0) == pytest.approx(
        2 * (2.0**-20 * (1 + u) * (1 + 6 * u) + product), rel=1e-14, abs=0)
    assert FLOAT64.solve_error(np.eye(2), np.full((2, 2), np.inf), B, 2.0, 1.0) == math.inf
    mp = MP(30)
    first_order = mp.solve_error(mp.eye(2), mp.asarray(B), mp.asarray(B), 2.0, 3.0)
    assert first_order == pytest.approx(6 * mp.resolution * 6 * 5, rel=1e-14, abs=0)
    assert SYMPY.solve_error(SYMPY.eye(2), SYMPY.asarray(B), SYMPY.asarray(B), 2.0, 3.0) == 0.0
    # far below float64's range (50 digits of 1e-293: 5e-343) rounded up, not to 0 (issue 23)
    mp50 = MP(50)
    tiny = mp50.asarray([[1e-293]])
    assert mp50.solve_error(mp50.eye(1), tiny, tiny, 1.0, 1.0) == 5e-324
    assert mp50.orthogonal_solve(mp50.eye(1), tiny, 0.0, 1.0, 1.0)[1] == 5e-324


def test_widened_reads_float64_in_longdouble_and_mpmath_in_itself():
    """Arith.widened (the arithmetic a rounding is read a posteriori in): float64 in numpy's
    longdouble at its unit roundoff (2^-64 with x87 extended precision, 2^-53 where longdouble is
    float64), exactly (the values unchanged); mpmath in itself, at its resolution."""
    x = np.array([1 + 2.0**-52, -3.0])
    wide, u = FLOAT64.widened(x)
    assert wide.dtype == np.longdouble and u == float(np.finfo(np.longdouble).eps) / 2
    assert np.all(wide == x) and (u == 2.0**-64 or np.finfo(np.longdouble).nmant < 63)
    arith = MP(30)
    with arith.context():
        a = arith.asarray([mpmath.mpf(1) / 3])
        wide, u = arith.widened(a)
        assert wide.dtype == object and wide[0] == a[0] and u == arith.resolution
