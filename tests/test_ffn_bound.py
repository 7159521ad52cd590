"""The FFN learner's a-posteriori bound reads the oracle's declaration (issue 22 item 4, issue 23).

A :class:`~attnproof.models.ReluFFN` evaluated in extended precision and rounded once declares
:data:`~attnproof.models.FAITHFUL`; the path search then allows an answer ``final + tol_ulps term``
(``2^-53 + 2^-54``) of the magnitudes instead of naive's ``tol_ulps u = 2^-43``, and the bound
shrinks ~700x (bound / true error 52-375 on the bench's random targets without a kink-free
interval, 1.4e4-7.6e6 naive).  Every changed formula is pinned on a fixed input, the gradient's
bound is shown nearly attained by an oracle that rounds as badly as its declaration allows, and
the union of further paths' kinks and the attempts' shared answers (issue 23's silent tiny units)
on hand-made cases.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnproof.arith import FLOAT64, MP, SYMPY
from attnproof.errors import AttnproofError, InvalidInputError, PrecisionLossError
from attnproof.measure import Session
from attnproof.models import FAITHFUL, NAIVE, ReluFFN, faithful_available
from attnproof.oracles import ValueOracle
from attnproof.theorems.transformer import learn_ffn
from attnproof.theorems.transformer._path_search import TUNING, _PathSearch, _Piece, answer_noise
from attnproof.theorems.transformer.ffn import (
    FFNRecovery, _anchor_residuals, _anchored_tol, _assemble, _fitted, _mirror_distance, _RefitEnd, _stands,
    _Unpolished, _union,
)
from attnproof.theorems.transformer.runner import run_ffn

U = 2.0**-53
needs_faithful = pytest.mark.skipif(not faithful_available(), reason="no x87 extended longdouble here")


def _exact_ffn(A: np.ndarray, w: np.ndarray, x: np.ndarray) -> tuple[Fraction, Fraction]:
    """f(x) and ``S = |w|^T |A^T x|`` in exact rational arithmetic."""
    z = [sum(Fraction(float(xi)) * Fraction(float(a)) for xi, a in zip(x, col)) for col in A.T]
    f = sum(Fraction(float(w[k])) * max(z[k], Fraction(0)) for k in range(len(z)))
    return f, sum(abs(Fraction(float(w[k]))) * abs(z[k]) for k in range(len(z)))


# --- the model's declaration ------------------------------------------------------------------


@needs_faithful
def test_faithful_relu_ffn_is_within_its_declaration():
    """``answers="faithful"``: each answer within ``final |f| + (1 + final) (d + m + 4) term S``
    of the exact f (S = |w|^T |A^T x|), with cancelling units (w = +-1 pairs) among them; the
    naive evaluation misses it on the same points (so the check can fail)."""
    g = np.random.default_rng(7)
    d, m = 5, 6
    A = g.standard_normal((d, m))
    A[:, 1] = A[:, 0]  # unit 1 cancels unit 0 ...
    w = g.standard_normal(m)
    w[1] = -w[0] * (1 + 2.0**-40)  # ... up to 2^-40 of it
    X = g.standard_normal((200, d))
    model = ReluFFN(A, w, answers="faithful")
    assert model.rounding is FAITHFUL and ReluFFN(A, w).rounding is NAIVE
    assert ValueOracle(model).rounding is FAITHFUL
    y, naive = model(X[:, None, :]), ReluFFN(A, w)(X[:, None, :])
    worst_naive = 0.0
    for x, yk, nk in zip(X, y, naive):
        f, S = _exact_ffn(A, w, x)
        term = (d + m + 4) * Fraction(FAITHFUL.term) * S
        allowed = FAITHFUL.final * abs(f) + (1 + FAITHFUL.final) * term
        assert abs(Fraction(float(yk)) - f) <= allowed
        worst_naive = max(worst_naive, float(abs(Fraction(float(nk)) - f) / allowed))
    assert worst_naive > 1  # the naive answers are off by more than the faithful declaration


def test_faithful_answers_are_refused_outside_float64():
    with pytest.raises(InvalidInputError):
        ReluFFN(np.eye(2), np.ones(2), MP(20), answers="faithful")
    with pytest.raises(InvalidInputError):
        ReluFFN(np.eye(2), np.ones(2), answers="exact")


# --- the search's rounding model, pinned by hand ----------------------------------------------


def test_answer_noise_reads_the_declaration():
    """naive: tol_ulps u (float64 2^10 2^-53 = 2^-43, unchanged); faithful float64: final +
    tol_ulps term = 2^-53 + 2^10 2^-64 = 2^-53 + 2^-54; an mpmath search that holds float64 exactly
    (40 digits) the same at its tol_ulps 2^6; a coarser one (8 digits: u = 2^-30 > 2^-53) rounds
    the answers again (naive's 2^6 2^-30); sympy allows none."""
    assert TUNING["float64"].tol_ulps == 2**10 and TUNING["mpmath"].tol_ulps == 2**6
    assert answer_noise(FLOAT64) == answer_noise(FLOAT64, NAIVE) == 2.0**-43
    assert answer_noise(FLOAT64, FAITHFUL) == 2.0**-53 + 2.0**-54
    assert answer_noise(MP(40), FAITHFUL) == 2.0**-53 + 2.0**-58
    assert answer_noise(MP(8), FAITHFUL) == answer_noise(MP(8)) == 2.0**-24
    assert answer_noise(SYMPY, FAITHFUL) == 0


class _Declared:
    """A linear f(x) = g^T x (d = 2) declaring ``rounding``, whose answers at ``low`` are one ulp
    low and elsewhere one ulp high: as badly rounded as the faithful declaration allows (checked)."""

    d = 2
    arith = FLOAT64

    def __init__(self, g: np.ndarray, low: np.ndarray, rounding) -> None:
        self.g, self.low, self.rounding = g, low, rounding

    def __call__(self, X):
        Xb = np.asarray(X, dtype=float).reshape(-1, 1, 2)[:, 0, :]
        out = []
        for x in Xb:
            y = float(sum(Fraction(float(xi)) * Fraction(float(gi)) for xi, gi in zip(x, self.g)))
            out.append(np.nextafter(y, -np.inf if np.array_equal(x, self.low) else np.inf))
        out = np.array(out)
        return out if np.ndim(X) == 3 else out[0]


def _faithful_search(g: np.ndarray, x0: np.ndarray) -> _PathSearch:
    oracle = ValueOracle(_Declared(g, x0, FAITHFUL))
    return _PathSearch(Session(oracle, FLOAT64), np.ones(2), 0.0, 1)


def test_faithful_search_noise_and_gradient_error_on_fixed_input():
    """A faithful oracle at d = 2: answer noise 2^-53 + 2^-54 = 3 2^-54; comparisons add the
    learner's own roundings 2 (d + 4) u = 12 2^-53.  The gradient error of G = (1, -2) from
    y = (5/4, -1/2) at x0 = (1, 1/2), y0 = 1/4, h = 1/4:
    ``3 2^-54 2 (2 + 1/4 + 5/4) / (1/4) + 2^-53 max(1 (4 + 2), 2 (2 + 2))`` = 84 2^-54 + 16 2^-54
    = 100 2^-54."""
    search = _faithful_search(np.array([1.0, -2.0]), np.zeros(2))
    assert search.answer_noise == 3 * 2.0**-54
    assert search.noise == 3 * 2.0**-54 + 12 * U
    G, x0 = np.array([1.0, -2.0]), np.array([1.0, 0.5])
    err = search._gradient_error(G, x0, np.array([1.25, -0.5]), 0.25, 0.25)
    assert err == 100 * 2.0**-54
    naive = _PathSearch(Session(ValueOracle(ReluFFN(np.eye(2), np.ones(2))), FLOAT64), np.ones(2), 0.0, 1)
    assert naive.noise == naive.answer_noise == 2.0**-43  # naive comparisons unchanged


def test_faithful_gradient_bound_is_nearly_attained():
    """An oracle whose answers are as far off as the faithful declaration allows (x0's one ulp
    low, the perturbed points' one ulp high, each within ``answer_noise |y|``): the measured
    gradient is off by ``2 ulp / h`` = 2^-40, the bound ``_gradient_error`` below 10 times that
    (a dropped term or a 2^10 too small noise fails here; a looser bound fails the ratio)."""
    g, x0 = np.array([1.5, 1.75]), np.array([1.0, 1.0])
    search = _faithful_search(g, x0)
    piece = search.piece(x0)
    for x, y in search.seen:  # the answers are within the declaration the bound assumes
        exact = sum(Fraction(float(xi)) * Fraction(float(gi)) for xi, gi in zip(x, g))
        assert abs(Fraction(float(y)) - exact) <= Fraction(search.answer_noise) * abs(Fraction(float(y)))
    off = float(np.abs(piece.G - g).max())
    assert off == 2.0**-40
    assert off <= piece.err < 10 * off, (off, piece.err)


# --- the polish's least-squares refit of each region (issue 21 item 3) --------------------------


def test_refit_bound_on_fixed_input():
    """f = x_1 + 2 x_2 on the positive quadrant (``ReluFFN(I, (1, 2))``, exact answers at dyadic
    points): a piece whose gradient is 2^-30 off in its first entry (error 2^-29), refitted to four
    answers of its region (``ffn._fitted``), lands on (1, 2) exactly, with the bound
    ``max_i (|M| s)_i``, ``M = (X^T W^2 X)^-1 X^T W^2``, ``W = diag(1 / s)`` (the normal equations
    here, a pseudo-inverse there), ``s = noise / (1 - noise) (|y| + (|G_p| + err_p)^T |x|)`` plus
    the residuals' rounding ``(d + 2) u_w`` of the magnitudes (u_w the widest arithmetic's; the
    residuals at (1, 2) are 0): far below p's own 2^-29, so both entries take the fit."""
    oracle = ValueOracle(ReluFFN(np.eye(2), np.array([1.0, 2.0])))
    search = _PathSearch(Session(oracle, FLOAT64), np.ones(2), 0.0, 1)
    X = np.array([[1.0, 1.0], [1.0, 0.5], [0.5, 1.0], [0.25, 0.75]])
    y = search.ask(X)
    p = _Piece(X[0], y[0], np.array([1 + 2.0**-30, 2.0]), 2.0**-29)
    q = _fitted(search, p, np.arange(4), X)
    assert q.G.tolist() == [1.0, 2.0]
    magnitude = np.abs(y) + np.abs(X) @ (np.abs(p.G) + p.err)
    u_w = float(np.finfo(np.longdouble).eps) / 2
    s = search.answer_noise / (1 - search.answer_noise) * magnitude
    s_rounded = s + 4 * u_w * (magnitude + 2.0**-30 * np.abs(X).sum(axis=1))
    W2 = np.diag(1 / s**2)
    M = np.linalg.solve(X.T @ W2 @ X, X.T @ W2)
    assert q.err == pytest.approx(float((np.abs(M) @ s_rounded).max()), rel=1e-9, abs=0)
    assert q.err < 2.0**-39 < p.err


@needs_faithful
@pytest.mark.parametrize("push", ["random", "ray"])
def test_refitted_gradients_within_their_bound_against_the_noise_adversary(monkeypatch, push):
    """Against answers pushed as far as the naive declaration allows (FFNNoiseAdversary, d = m = 4,
    seed 2; the polish kept under both pushes), every gradient the polish refits (``ffn._fitted``)
    is within its bound ``|M| (s + |r'|) / (1 - D)`` entry by entry (p's where p's is tighter):
    at 0.15 and 0.19 of it measured (0.06-0.65 on the 10 runs with a refit among d, m <= 8, seeds
    0-2, both pushes), and below p's own bound on some region."""
    from attnproof.oracles import FFNNoiseAdversary
    from attnproof.theorems.transformer import ffn
    from attnproof.theorems.transformer.runner import transformer_target

    fits = []

    def spy(search, p, rows, X):
        fits.append((p, _fitted(search, p, rows, X)))
        return fits[-1][1]

    monkeypatch.setattr(ffn, "_fitted", spy)
    rng = np.random.default_rng(2)
    _, A, w = transformer_target(4, 4, rng)
    oracle = FFNNoiseAdversary(ReluFFN(A, w), noise=answer_noise(FLOAT64, NAIVE), push=push, seed=2)
    learn_ffn(oracle, rng=rng)
    refitted = [(p, q) for p, q in fits if q is not p]
    assert refitted
    for _, q in refitted:
        assert np.abs(q.G - A @ (w * (A.T @ q.x > 0))).max() <= q.err
    assert any(q.err < p.err for p, q in refitted)


def _refit_ends_case():
    """d = 3: ends measured at (1/2, 0, 0) with errors 1e-10 and 2e-10 (u_m = e_1), refitted to
    (1/2 + 2^-20, 0, 0) and (1/2, -2^-21, 0) with errors 1e-11 and 2e-11, one kink J = e_2 with error
    3e-10, 4e-10 of jumps taken for none."""
    from types import SimpleNamespace

    search = SimpleNamespace(arith=FLOAT64, d=3, steps=0, rho=2.0**-30, paths=1, hidden=4e-10,
                             ends=(np.ones(3), -np.ones(3)))
    G = np.array([0.5, 0.0, 0.0])
    mU, mW = _Piece(np.ones(3), 0.5, G, 1e-10), _Piece(-np.ones(3), -0.5, G, 2e-10)
    pU = _RefitEnd(np.ones(3), 0.5, np.array([0.5 + 2.0**-20, 0.0, 0.0]), 1e-11, measured=mU)
    pW = _RefitEnd(-np.ones(3), -0.5, np.array([0.5, -(2.0**-21), 0.0]), 2e-11, measured=mW)
    e2 = np.array([0.0, 1.0, 0.0])
    return search, (mU, mW), (pU, pW), [(e2, e2, 3e-10)]


def test_refitted_ends_bound_u_by_the_measured_pair_on_fixed_input():
    """The a-posteriori bound with refitted ends (``ffn._assemble``, :class:`ffn._RefitEnd`), by
    hand: u = (1 + 2^-20, -2^-21, 0), its distance to the measured pair's u_m = e_1 is
    ``|u - u_m|_1 = 3 2^-21`` (read with w = 2^-52: ``(3 2^-21 + 2 w |G_U^m + G_W^m|_1)(1 + 8 w)``),
    and the bound is ``(d (1e-10 + 2e-10) + that) / 2 + d 3e-10 / 2 + 4e-10 / 2 + size eps 4 (L + 1)``,
    size ``|u|_1 / 2 + 1 / 2``: the measured ends' errors, not the refitted ones' (1e-11, 2e-11),
    for u.  A dropped ``|u - u_m|_1``, the refitted errors in its place, or a dropped d fails."""
    search, _, (pU, pW), kinks = _refit_ends_case()
    rec = _assemble(search, pU, pW, kinks)
    assert rec.u.tolist() == [1 + 2.0**-20, -(2.0**-21), 0.0]
    w = 2.0**-52
    distance = (3 * 2.0**-21 + 2 * w * 1.0) * (1 + 8 * w)
    size = (1 + 2.0**-20 + 2.0**-21) / 2 + 0.5
    expected = (3 * 3e-10 + distance) / 2 + 3 * 3e-10 / 2 + 4e-10 / 2 + size * U * 4 * 2
    assert rec.diagnostics["error_bound"] == pytest.approx(expected, rel=1e-14, abs=0)


def test_refitted_ends_off_by_a_missed_kink_stay_within_the_bound(monkeypatch):
    """Mutation: the refit's premise fails (a kink the hyperplanes miss moved both refitted ends,
    u off by 3 2^-21 entrywise-summed, each claimed within 1e-11): the truth is the measured pair's
    u_m (exact whatever kink is missed, up to its errors), so ``sup_{|x|_inf <= 1} |f_hat - f|``
    reaches ``|u - u_m|_1 / 2`` at x = sign(u - u_m), which the bound holds; with the distance
    term dropped (``_mirror_distance`` 0), or with the refitted errors for u (ends not marked
    refitted), it does not."""
    from attnproof.theorems.transformer import ffn

    search, (mU, mW), (pU, pW), kinks = _refit_ends_case()
    truth = FFNRecovery(mU.G + mW.G, np.array([[0.0, 1.0, 0.0]]), np.array([1.0]), 0, "float64")
    rec = _assemble(search, pU, pW, kinks)
    x = np.sign(rec.u - truth.u)
    off = abs(float(rec(x)) - float(truth(x)))
    assert off == 3 * 2.0**-22
    assert off <= rec.diagnostics["error_bound"]
    plain = [_Piece(p.x, p.y, p.G, p.err) for p in (pU, pW)]
    assert _assemble(search, *plain, kinks).diagnostics["error_bound"] < off
    monkeypatch.setattr(ffn, "_mirror_distance", lambda *args: 0.0)
    assert _assemble(search, pU, pW, kinks).diagnostics["error_bound"] < off


def test_mirror_distance_charges_its_rounding():
    """``ffn._mirror_distance`` with u = u_m exactly: ``|u - u_m|_1`` reads 0 in float64, and the
    bound is the rounding charge alone, ``2 w (|G_U| + |G_W|)_1 (1 + 8 w)``, w = 2^-53 + 2^-53
    (float64's roundoff, and its reading): here ``|G_U|_1 + |G_W|_1 = 3 + 4``; in mpmath at 30
    digits w = 1e-30 + 2^-53."""
    mU = _Piece(np.ones(2), 0.0, np.array([1.0, -2.0]))
    mW = _Piece(-np.ones(2), 0.0, np.array([3.0, 1.0]))
    w = 2.0**-52
    assert _mirror_distance(mU.G + mW.G, mU, mW, FLOAT64) == pytest.approx(
        2 * w * 7 * (1 + 8 * w), rel=1e-15, abs=0)
    mp = MP(30)
    with mp.context():
        GU, GW = mp.asarray([1.0, -2.0]), mp.asarray([3.0, 1.0])
    wm = 1e-30 + 2.0**-53
    got = _mirror_distance(GU + GW, _Piece(np.ones(2), 0, GU), _Piece(-np.ones(2), 0, GW), mp)
    assert got == pytest.approx(2 * wm * 7 * (1 + 8 * wm), rel=1e-12, abs=0)


def test_the_ends_are_refitted_and_u_is_within_the_measured_pairs_bound(monkeypatch):
    """Issue 22: d = 4, m = 16, seed 3 (naive), the bench's weakest floor / error: -U's piece as
    measured is 4.7e-14 off its gradient, u = G_U + G_W 5.5e-14 off in an entry, most of f_hat's
    error 1.57e-13.  Refitted (``ffn._refitted``, both ends :class:`ffn._RefitEnd`), u is within
    a third of that (1.3e-14 measured), and within ``|u - u_m|_1 + d (err_U^m + err_W^m)`` of A w, as
    ``ffn._assemble`` charges it; the run's error drops below 5e-14 (2.6e-14 measured)."""
    from attnproof.theorems.transformer import ffn
    from attnproof.theorems.transformer.runner import transformer_target

    seen, original = [], ffn._refitted

    def spy(search, pieces):
        seen.append(original(search, pieces))
        return seen[-1]

    monkeypatch.setattr(ffn, "_refitted", spy)
    rng = np.random.default_rng(3)
    _, A, w = transformer_target(4, 16, rng)
    rec = learn_ffn(ValueOracle(ReluFFN(A, w)), rng=rng)
    pU, pW = seen[-1][0], seen[-1][-1]
    assert isinstance(pU, _RefitEnd) and isinstance(pW, _RefitEnd)
    truth = A @ w
    u_m = pU.measured.G + pW.measured.G
    assert np.array_equal(rec.u, pU.G + pW.G)
    assert np.abs(rec.u - truth).max() < np.abs(u_m - truth).max() / 3
    assert np.abs(rec.u - truth).sum() <= np.abs(rec.u - u_m).sum() + 4 * (pU.measured.err + pW.measured.err)
    row = run_ffn(4, 16, seed=3)
    assert row["err_W"] < 5e-14 and row["err_W"] <= row["error_bound"]


@pytest.mark.parametrize("d, m, seed, answers", [(8, 4, 1, "faithful"), (4, 16, 3, "naive")])
def test_the_ends_are_refitted_only_where_the_bound_does_not_grow(monkeypatch, d, m, seed, answers):
    """``ffn._refitted`` keeps the refitted ends only where ``|u - u_m|_1`` is at most what they take
    off the jumps' errors: the bound is then at most the one with the ends as measured (same
    answers).  Refitted unconditionally, (8, 4, 1) faithful grew 3.321e-13 -> 3.345e-13 when
    measured (issue 21; the refit's gain on its ends below its distance to u_m; 18 of the 45
    faithful targets grew so); (4, 16, 3) naive takes the refit, its bound lower (2.865e-9 ->
    2.832e-9).  (8, 4, 1) faithful is asked with two thin pairs a kink, as until session 25, where
    its ends are declined (3.018e-13 either way now): with the d - 1 pairs' answers no faithful
    target measured declines (the bench's 45, and 300 random ones, d <= 8, m <= 8, seeds 5-29:
    unconditional refits grew none), so the witness of the declining branch is kept so."""
    if answers == "faithful" and not faithful_available():
        pytest.skip("no x87 extended longdouble here")
    from attnproof.theorems.transformer import ffn

    if answers == "faithful":
        monkeypatch.setattr(ffn, "thin_pairs", lambda d: min(d - 1, 2))
    row = run_ffn(d, m, seed=seed, answers=answers)
    original = ffn._refitted

    def measured_ends(search, pieces):
        return [p.measured if isinstance(p, _RefitEnd) else p for p in original(search, pieces)]

    monkeypatch.setattr(ffn, "_refitted", measured_ends)
    plain = run_ffn(d, m, seed=seed, answers=answers)
    assert row["queries"] == plain["queries"]
    assert row["error_bound"] <= plain["error_bound"]
    assert (row["error_bound"] < plain["error_bound"]) == (answers == "naive")


# --- the wedge points' charge read against q's plane through the origin (issue 22) -------------


def test_anchored_tol_on_fixed_input():
    """f = x_1 + 2 x_2 (``ReluFFN(I, (1, 2))``, naive, gscale 0), q at (1, 1) with y_q = 3,
    G_q = (1, 2) and err 2^-30, the answer 1 at p = (1/2, 1/4): both residuals 0;
    ``t_q = nu (m(p) + m(x_q)) + 6 u_w (1 + 3 + |G|^T |p - x_q|) + err |p - x_q|_1
    = 8 nu + 36 u_w + 1.25 err`` (m(p) = 1 + 1, m(x_q) = 3 + 3, ``|G|^T |p - x_q| = 2``) and
    ``t_0 = nu m(p) + 6 u_w (1 + |G|^T |p|) + err |p|_1 = 2 nu + 12 u_w + 0.75 err``: the origin's,
    times ``1 + 2^-48``, below the search's own ``5 nu + 1.25 err``.  An answer 2^-20 off agrees
    with neither anchor (inf); a misrecorded y_q leaves the origin's."""
    oracle = ValueOracle(ReluFFN(np.eye(2), np.array([1.0, 2.0])))
    search = _PathSearch(Session(oracle, FLOAT64), np.ones(2), 0.0, 1)
    nu, u_w, err = search.answer_noise, float(np.finfo(np.longdouble).eps) / 2, 2.0**-30
    q, p = _Piece(np.array([1.0, 1.0]), 3.0, np.array([1.0, 2.0]), err), np.array([0.5, 0.25])
    y = float(search.ask(p[None])[0])
    assert y == 1.0 and nu == 2.0**-43 and search.gscale == 0
    t_q, t_0 = 8 * nu + 36 * u_w + 1.25 * err, 2 * nu + 12 * u_w + 0.75 * err
    expected = [(0.0, pytest.approx(t, rel=1e-12, abs=0)) for t in (t_q, t_0)]
    assert _anchor_residuals(search, q, p, y) == expected
    assert _anchored_tol(search, q, p, y) == pytest.approx(t_0 * (1 + 2.0**-48), rel=1e-12, abs=0)
    assert _anchored_tol(search, q, p, y) < search.prediction_tol(q, p, y) == 5 * nu + 1.25 * err
    assert _anchored_tol(search, q, p, y + 2.0**-20) == np.inf
    misrecorded = _Piece(q.x, 3.0 + 2.0**-20, q.G, err)
    assert _anchored_tol(search, misrecorded, p, y) == _anchored_tol(search, q, p, y)


@needs_faithful
def test_anchored_tol_holds_against_the_noise_adversary(monkeypatch):
    """Against answers pushed as far as the naive declaration allows (FFNNoiseAdversary, d = m = 4,
    seed 2, every push of FFN_PUSHES), every wedge point's residual against each anchor is within
    its ``t_a`` (``ffn._anchor_residuals``: the declared noise at p and a, the gradient's error
    over ``|p - a|_1``; the largest ``|r_a| / t_a`` measured 0.018 up and away, 0.27 random, 0.39
    ray), f_hat stays within its bound at random points and on every unit's hyperplane, and the
    anchored reading is the tighter at some wedge point (under ``up`` and ``away``; under
    ``random`` and ``ray`` the pushed residuals keep ``|r_a| + t_a`` above the search's tolerance,
    which is charged)."""
    from attnproof.oracles import FFN_PUSHES, FFNNoiseAdversary
    from attnproof.theorems.transformer import ffn
    from attnproof.theorems.transformer.runner import transformer_target

    seen: list = []

    def spy(search, q, p, y):
        anchored = _anchored_tol(search, q, p, y)
        seen.append((push, _anchor_residuals(search, q, p, y), anchored, search.prediction_tol(q, p, y)))
        return anchored

    monkeypatch.setattr(ffn, "_anchored_tol", spy)
    g = np.random.default_rng(5)
    for push in FFN_PUSHES:
        rng = np.random.default_rng(2)
        _, A, w = transformer_target(4, 4, rng)
        oracle = FFNNoiseAdversary(ReluFFN(A, w), noise=answer_noise(FLOAT64, NAIVE), push=push, seed=2)
        rec = learn_ffn(oracle, rng=rng)
        assert any(s[0] == push for s in seen)
        X = [g.standard_normal((64, 4))]
        X += [(P := g.standard_normal((4, 4))) - np.outer(P @ a, a) / (a @ a) for a in A.T]
        for x in np.concatenate(X):
            f, _ = _exact_ffn(A, w, x)
            terms = abs(rec.u) @ abs(x) / 2 + abs(rec.c) @ abs(rec.N @ x) / 2
            allowed = rec.diagnostics["error_bound"] * np.abs(x).max() + 4 * (4 + rec.L + 2) * U * terms
            assert abs(float(Fraction(float(rec(x))) - f)) <= allowed
    ratios = {push: max(r / t for s in seen if s[0] == push for r, t in s[1]) for push in FFN_PUSHES}
    assert all(ratio <= 1 for ratio in ratios.values())
    assert {s[0] for s in seen if s[2] < s[3]} >= {"up", "away"}


# --- the union of further paths' kinks (issue 23) ---------------------------------------------


def test_union_needs_the_same_jump_size_on_a_hyperplane():
    """A further path's tiny kink (jump 7.8e-9, error 2.6e-9: its normal known to O(1), within
    the normals' tolerance of a unit kink's) is a hyperplane of its own: its |lam| differs from
    the unit kink's 3.38; the unit kink found again (the same |lam| to within the errors) is not
    added twice."""
    search = _PathSearch(Session(ValueOracle(ReluFFN(np.eye(3), np.ones(3))), FLOAT64), np.ones(3), 0.0, 1)
    n1, n2 = np.array([0.56076374, -0.24821522, 1.0]), np.array([0.78124909, 1.0, -0.00412462])
    direction = np.ones(3)
    unit = (-3.38138415 * n1, direction, 2.29e-9)
    tiny = (7.77e-9 * n2, direction, 2.64e-9)
    again = (-3.38138415 * (1 + 1e-10) * n1, direction, 2.64e-9)
    assert len(_union([unit], [tiny], search)) == 2
    assert len(_union([unit], [again], search)) == 1
    assert len(_union([unit], [again, tiny], search)) == 2


def test_union_replaces_a_merge_a_further_path_resolved():
    """A first path's jump K + T (a 1.6e-8 kink merged with a unit one's: its normal K's to
    |T| / |K|, its size not, as in OPEN_TINY_ODD's former case) beside a further path's K and T
    found apart: the merge gives way to them (kept, f_hat counted K twice: L = 3 for 2).  A
    zero-sum group's third kink J_1 + J_2 (its own hyperplane) stays beside J_1 and J_2."""
    search = _PathSearch(Session(ValueOracle(ReluFFN(np.eye(3), np.ones(3))), FLOAT64), np.ones(3), 0.0, 1)
    direction = np.ones(3)
    K = np.array([3.94992142, -7.65049499, -1.94450401])
    T = np.array([9.36254757e-09, 1.49801043e-08, 1.61589141e-08])
    merged = (K + T, direction, 5.07e-9)
    union = _union([merged], [(K, direction, 3.5e-9), (T, direction, 3.5e-9)], search)
    assert len(union) == 2 and all(J is not merged[0] for J, _, _ in union)
    J1, J2 = np.array([1.0, 0.0, 0.5]), np.array([0.0, 1.0, -0.25])
    group = [(J1, direction, 1e-9), (J2, direction, 1e-9)]
    assert len(_union([(J1 + J2, direction, 1e-9)], group, search)) == 3


def _merge_changed_its_size() -> tuple[_PathSearch, tuple, tuple]:
    """Helper tfpar's trace (tests/test_transformer.py's PARALLEL_TINY_TF at FFN path seed 70,
    before the merge charge from the gradient between, which no longer reaches it): the first
    path's kink on x_0 + x_1 / 16 = 0 carried the 1.5e-10 kink T merged, ``(-0.99999999985,
    -0.0625)``, error 9.9e-11; a further path found K alone, ``(-1, -0.0625)``, error 2.6e-11, and
    T nowhere.  Their normals agree to 1e-11 (one hyperplane), their sizes differ by 1.5e-10, above
    the errors' 1.25e-10."""
    search = _PathSearch(Session(ValueOracle(ReluFFN(np.eye(2), np.ones(2))), FLOAT64), np.ones(2), 0.0, 1)
    direction = np.array([-1.0, 0.5])
    merged = (np.array([-0.9999999998500186, -0.0625]), direction, 9.936098038404475e-11)
    alone = (np.array([-1.0, -0.0625]), direction, 2.5633785713749177e-11)
    return search, merged, alone


def test_union_keeps_one_kink_a_hyperplane_when_a_merge_changed_its_size():
    """A strict xfail before (helper tfpar): both kept, f_hat counted K twice (L = 3 for 2); a
    check contradicted it (not silent) and the further path through that check point (on a
    recovered line at |x| = 1.4e-17: in d = 2 the plane points are x*'s multiples 2 and 0)
    bisected to the floor, refused.  Now one kink a hyperplane, the one of the smaller error
    (K alone), either way round; the unit kink and the 7.8e-9 one of the test above (sizes apart
    by far more than half: two hyperplanes) stay two."""
    search, merged, alone = _merge_changed_its_size()
    for kinks, more in (([merged], [alone]), ([alone], [merged])):
        union = _union(kinks, more, search)
        assert len(union) == 1 and union[0][0] is alone[0]


def test_union_charges_the_light_kink_it_drops_to_the_bound():
    """The kink kept for K + T and K (:func:`_union`) carries T's mass into the bound: the
    network's a-posteriori bound (``ffn._assemble``) exceeds K's alone by at least
    ``|T|_1 + d (err_{K+T} + err_K)``, T the jumps' difference summed by hand (1.4998e-10 in x_0),
    which f_hat may be off by (T missing, or put on K's hyperplane).  Without the charge the one
    kink's bound is K's (the kept error unchanged)."""
    search, merged, alone = _merge_changed_its_size()
    d = 2
    pU = _Piece(np.array([1.0, 0.0]), 0.0, np.array([0.5, 0.25]), 1e-12)
    pW = _Piece(np.array([-1.0, 0.0]), 0.0, np.array([-0.5, 0.0]), 1e-12)
    T = Fraction(-0.9999999998500186) - Fraction(-1.0)  # the x_1 entries agree exactly
    charged = float(abs(T)) + d * (merged[2] + alone[2])
    union = _union([merged], [alone], search)
    bound = _assemble(search, pU, pW, union).diagnostics["error_bound"]
    without = _assemble(search, pU, pW, [alone]).diagnostics["error_bound"]
    assert bound >= without + charged * (1 - 1e-12)
    assert bound <= without + charged * (1 + 1e-12) + 1e-15  # nothing else added


def test_a_fallback_contradicted_by_a_later_attempt_is_refused():
    """The network every attempt fell back to is held to every attempt's answers: one answer off
    by more than its bound and tolerance is a typed refusal; within them it stands."""
    search = _PathSearch(Session(ValueOracle(ReluFFN(np.eye(2), np.ones(2))), FLOAT64), np.ones(2), 0.0, 1)
    rec = FFNRecovery(np.ones(2), np.eye(2), np.ones(2), 0, "float64", {"error_bound": 1e-9})  # f = sum ReLU
    x = np.array([1.0, -1.0])  # f(x) = 1
    fallback = _Unpolished(rec, search, PrecisionLossError("earlier"))
    search.seen[:] = [(x, 1.0 + 0.9e-9)]
    assert _stands(fallback, None, np.random.default_rng(0)) is rec
    # two single kinks, one centre each (d = 2): four far points and the first pair, no rung climbed
    assert search.ledger.audited == 2 * 6 and 0 < rec.diagnostics["audit_charge"] < 1e-2 * 1e-9
    # back to the bound the answers below were sized against (the audit added its ~1e-11 charge)
    rec.diagnostics["error_bound"] = 1e-9
    search.seen.append((x, 1.0 + 1.1e-9))
    with pytest.raises(PrecisionLossError, match="later attempt"):
        _stands(fallback, None, np.random.default_rng(0))


# --- end to end: the bench's targets ----------------------------------------------------------


@needs_faithful
# (8, 8, 3): a strict xfail before (issue 22): the path search books the half a duplicate piece
# drops (a rigor fix: a 1e-7 kink there went unbooked) as d (err_p + err_q) at the search's coarse
# gradient errors, which the polish did not revisit: 87 -> 2.7e3 x the truth; now the polish
# measures those pieces again with steps away from the nearest hyperplane (237 x)
# (4, 16, 2): refused before on every path (issue 22/23: the one refusal of the 90 bench runs,
# "no gradient at 3 points of an interval of width 4.1e-08") at a lone kink 1e-3 from the next:
# s* was where the pieces' planes through 0 meet, 4.5e-13 past the kink, as a measured G misses
# Euler's relation by its error; f(x*) then missed the near piece's prediction (7.4e-13 against
# 1.1e-13) and each piece opened there lay nearer the kink; now s* is where the predictions meet
# (16, 4, 0), (4, 8, 2): 1.04e3 and 1.19e3 x the truth once the refit (issue 21 item 3) cut the
# errors and not the wedge points' charge, most of the bound (8.1e-13 of 1.63e-12, 1.3e-12 of
# 1.85e-12); now read against q's plane through the origin (ffn._anchored_tol): 680 and 599
@pytest.mark.parametrize("d, m, seed", [(4, 8, 1), (8, 8, 3), (4, 16, 2), (16, 4, 0), (4, 8, 2)])
def test_faithful_bound_within_1e3_of_the_truth(d, m, seed):
    """The bench's random FFN (``bench bounds``): faithful answers give a bound within 1e3 of the
    true error (623, 718, 679, 592, 440 measured since session 24's one-sided reach, the errors
    lower, the bounds too) and at least 100x tighter than naive's (530-590 times)."""
    naive, faithful = run_ffn(d, m, seed=seed), run_ffn(d, m, seed=seed, answers="faithful")
    assert faithful["err_W"] <= faithful["error_bound"] <= 1e3 * faithful["err_W"]
    assert naive["err_W"] <= naive["error_bound"]
    assert faithful["error_bound"] < naive["error_bound"] / 100


@needs_faithful
@settings(max_examples=max(3, settings().max_examples // 10))
@given(st.integers(0, 2**16), st.integers(2, 6), st.integers(1, 8))
def test_faithful_ffn_meets_its_bound(seed, d, m):
    """Random FFNs with faithful answers: f_hat within the (tighter) bound at random points and
    on every unit's hyperplane, or a typed refusal."""
    g = np.random.default_rng(seed)
    A, w = g.standard_normal((d, m)), g.standard_normal(m)
    oracle = ValueOracle(ReluFFN(A, w, answers="faithful"))
    try:
        rec = learn_ffn(oracle, rng=np.random.default_rng(seed))
    except AttnproofError:
        return
    assert rec.queries == oracle.queries
    X = [g.standard_normal((64, d))]
    for col in A.T:
        P = g.standard_normal((4, d))
        X.append(P - np.outer(P @ col, col) / (col @ col))
    X = np.concatenate(X)
    for x, got in zip(X, rec(X)):
        f, _ = _exact_ffn(A, w, x)
        # f_hat's own float evaluation: 4 (d + L + 2) u of its terms
        terms = abs(rec.u) @ abs(x) / 2 + abs(rec.c) @ abs(rec.N @ x) / 2
        allowed = rec.diagnostics["error_bound"] * np.abs(x).max() + 4 * (d + rec.L + 2) * U * terms
        assert abs(float(Fraction(float(got)) - f)) <= allowed


# --- the kink-free intervals charged again at the polish's grade (issue 22) --------------------


def test_step_margin_steps_away_from_the_nearest_hyperplane():
    """Hand-computed: x = (-1/4, 1) beside the hyperplanes x_1 = 0 and x_2 = 0 steps -e_1 (away
    from x_1 = 0, which +e_1 reaches at 1/4) and +e_2, both unblocked: margin |x|_inf = 1.  With
    n = (1, 1) too at x = (-1/4, 1/2) (N x = (-1/4, 1/2, 1/4)), both signs of e_1 reach a
    hyperplane at 1/4 (+e_1 x_1 = 0, -e_1 n): the tie steps +e_1, margin 1/4; on a hyperplane
    the margin is 0."""
    from attnproof.theorems.transformer.ffn import step_margin

    signs, t = step_margin(np.eye(2), np.array([-0.25, 1.0]))
    assert signs.tolist() == [-1.0, 1.0] and t == 1.0
    signs, t = step_margin(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([-0.25, 0.5]))
    assert signs.tolist() == [1.0, 1.0] and t == 0.25
    assert step_margin(np.eye(2), np.array([0.0, 1.0]))[1] == 0.0


def test_a_signed_step_keeps_a_point_beside_a_hyperplane_in_its_region():
    """f = ReLU(x_1) + ReLU(x_2) at x0 = (-2^-20, 1): steps of 1/2 along -e_1 and +e_2 stay in
    x0's region (the gradient (0, 1) exactly, at the first step), where +e_1 crosses x_1 = 0:
    Euler's check fails by the same -2^-20 at 1/2 and 1/32, and x0 is taken for a point on the
    hyperplane."""
    from attnproof.theorems.transformer._path_search import _OnHyperplane

    search = _PathSearch(Session(ValueOracle(ReluFFN(np.eye(2), np.ones(2))), FLOAT64), np.ones(2), 0.0, 1)
    x0 = np.array([-(2.0**-20), 1.0])
    p = search.piece(x0, h=0.5, signs=np.array([-1.0, 1.0]))
    assert p.G.tolist() == [0.0, 1.0] and p.h == 0.5 and search.ledger.retries == 0
    with pytest.raises(_OnHyperplane):
        search.piece(x0, h=0.5)
    assert search.ledger.retries == 1


def test_a_split_point_whose_steps_cross_a_hyperplane_near_it_is_measured_off_it():
    """f = ReLU(x_0) + ReLU(x_1) at x = (-2^-34, 1), a split point between pa (G = (1, 1)) and pb
    (G = (0, 1)), 2^-34 off the hyperplane x_0 = 0 on pb's side: the plain step h = 2^-10 along
    +e_0 crosses it, and Euler's check passes the gradient (1 - 2^-24, 1) (the mix of the two
    sides is blind to it at a point on the hyperplane), 6e-8 off beyond its error, told from both
    pa and pb (OPEN_TF_FLOAT's 1e-9 unit beside unit ones before: every next x* beside it, to the
    floor).  It lies on the line from pa's gradient to pb's, where no region between them has its
    gradient: the steps backwards disagree, and the piece stepping along +-sign(J) away from the
    hyperplane is kept, x's own gradient (0, 1) exactly; every query counted."""
    oracle = ValueOracle(ReluFFN(np.eye(2), np.ones(2)))
    search = _PathSearch(Session(oracle, FLOAT64), np.ones(2), 0.0, 1)
    pa, pb = search.piece(np.array([1.0, 1.0])), search.piece(np.array([-1.0, 1.0]))
    x = np.array([-(2.0**-34), 1.0])
    plain = search.piece(x)
    assert plain.h == 2.0**-10 and plain.G[0] == 1 - 2.0**-24 and plain.err < 2.0**-24
    assert search._mixes(plain, pa, pb)
    p = search._opened(x, None, pa, pb)
    assert p.G.tolist() == [0.0, 1.0] and p.h == 2.0**-10
    assert search.ledger.total(2) == oracle.queries


def test_kink_parameter_is_where_the_pieces_predictions_meet():
    """Hand-computed, f = ReLU(x_1) on the path (-1/8, 1) -> (7/8, 1): pa at its start with f = 0
    and a measured G = (0, 2^-10), which misses Euler's relation G^T x = f(x) by 2^-10 (within its
    error 2^-10), pb at its end with G = (1, 0).  The predictions 0 and x_1 meet at s* = 1/8, on
    the kink, where f(x*) = 0 fits both; the planes through 0, ``(G_b - G_a)^T x(s) = 0``, meet at
    s = 1/8 + 2^-10, where f = 2^-10 misses pa's prediction 0 by more than its tolerance
    (``2^-10 (1/8 + 2^-10)`` and the rounding's): the bench's refusal, see
    test_faithful_bound_within_1e3_of_the_truth."""
    from attnproof.theorems.transformer._path_search import _Piece, kink_parameter

    relu_x1 = ValueOracle(ReluFFN(np.eye(2)[:, :1], np.ones(1)))
    search = _PathSearch(Session(relu_x1, FLOAT64), np.ones(2), 0.0, 1)
    pa = _Piece(np.array([-0.125, 1.0]), 0.0, np.array([0.0, 2.0**-10]), 2.0**-10)
    pb = _Piece(np.array([0.875, 1.0]), 0.875, np.array([1.0, 0.0]), 0.0)
    X0, direction = pa.x, pb.x - pa.x
    s = search._intersection(pa, pb, X0, direction, 0.0, 1.0)
    assert s == 0.125
    x = X0 + s * direction
    assert search.fits(pa, x, 0.0) and search.fits(pb, x, 0.0)
    through_0 = kink_parameter(pb.G - pa.G, X0, direction)
    assert through_0 == 0.125 + 2.0**-10
    assert not search.fits(pa, X0 + through_0 * direction, 2.0**-10)


def test_hidden_charge_is_the_gradients_difference_plus_their_errors():
    """``|G_b - G_a|_1 + d (err_a + err_b)``: (1, -2) vs (1.5, -2) with errors 1e-3 and 2e-3 at
    d = 2: 0.5 + 2 * 3e-3."""
    from attnproof.theorems.transformer._path_search import _Piece

    search = _PathSearch(Session(ValueOracle(ReluFFN(np.eye(2), np.ones(2))), FLOAT64), np.ones(2), 0.0, 1)
    a = _Piece(np.ones(2), 0.0, np.array([1.0, -2.0]), 1e-3)
    b = _Piece(np.ones(2), 0.0, np.array([1.5, -2.0]), 2e-3)
    assert search.hidden_charge(a, b) == pytest.approx(0.5 + 6e-3, rel=1e-14, abs=0)
    search.take_as_kink_free(a, b)
    assert search.hidden == search.hidden_charge(a, b) and search.kink_free_pairs == [(a, b)]


# --- V redrawn out of U's and -U's regions (issue 22: no kink-free segment) -------------------


def test_v_is_redrawn_out_of_the_ends_regions():
    """A V in U's region (or -U's) leaves a segment kink-free, and the bound its hidden-kink
    allowance at the search's resolution (the 6 of 45 bench targets at 1e3-2.2e4 x the truth);
    V is drawn again, so no segment of the path is kink-free there, and the faithful bound is
    within 1e3 of the truth (d = 16, m = 4, seed 2: 2.2e4 before, 184 now)."""
    row = run_ffn(16, 4, seed=2, answers="faithful")
    assert row["diagnostics"]["ledger"]["kink_free"] == 0
    assert row["err_W"] <= row["error_bound"] <= 1e3 * row["err_W"]


# former strict xfails of tests/test_transformer.py (OPEN_EXACT's second, OPEN_TF_FLOAT's last:
# refusals of good answers beside zero-sum groups), answered since V is redrawn out of the ends'
# regions; the lead deletes them from those lists at merge
@pytest.mark.parametrize(
    "A, w, seed",
    [(np.array([[1.0, 1.0, 0.0, 1.0], [3.0, 1.0, 1.0, 2.0]]), np.array([4.0, -1.0, -1.0, 1.0]), 0)],
)
def test_former_open_exact_zero_sum(A, w, seed):
    from test_transformer import recover_ffn

    from attnproof.models import canonical_ffn

    rec, _ = recover_ffn(A, w, SYMPY, seed)
    assert rec.N.shape == canonical_ffn(A, w, SYMPY)[1].shape


def test_former_open_transformer_zero_sum():
    from test_transformer import tf_float64_property

    A = np.array([[1, 1, 0.125, 0.96875], [1, 0.125, 0.125, 0.09375]])
    tf_float64_property(A, np.array([1, -1, 0.25, 1.0]), "zero_sum", np.zeros((4, 4)), 1034672)


def test_wedge_charge_is_the_residual_plus_its_tolerance(monkeypatch):
    """Each wedge point that agrees with q's plane is charged ``(|r| + tol) / |p|_inf``, r its
    residual against q's prediction and tol the prediction's tolerance: a kink merged near p moves
    f off q's plane by up to both (the answers' and prediction's rounding and q's gradient error
    stand between r and that move), where the tolerance alone, charged before, could cover half of
    it.  The anchored reading (``_anchored_tol``) switched off here, so every charge is that one;
    naive answers (tol > 0) pushed by FFNNoiseAdversary, d = m = 4."""
    from attnproof.theorems.transformer import ffn

    inside, priced, charged = [False], [], []
    original_tol, original_wedge = _PathSearch.prediction_tol, ffn._wedge_contradiction

    def tol_spy(self, q, p, y):
        t = original_tol(self, q, p, y)
        if inside[0]:
            r = abs(float(FLOAT64.to_float(np.array([y - self.predict(q, p)]))[0]))
            priced.append((r, t, float(np.abs(p).max())))
        return t

    def wedge_spy(search, a, b, x, others, resolution=None):
        inside[0] = True
        before = len(resolution) if resolution is not None else 0
        try:
            return original_wedge(search, a, b, x, others, resolution)
        finally:
            inside[0] = False
            if resolution is not None:
                charged.extend(resolution[before:])

    monkeypatch.setattr(_PathSearch, "prediction_tol", tol_spy)
    monkeypatch.setattr(ffn, "_wedge_contradiction", wedge_spy)
    monkeypatch.setattr(ffn, "_anchored_tol", lambda *args: np.inf)
    from attnproof.oracles import FFNNoiseAdversary

    rng = np.random.default_rng(3)
    A, w = rng.standard_normal((4, 4)), rng.standard_normal(4)
    # answers pushed along rays as far as the naive declaration allows: residuals of a fair share
    # of the tolerance (the real oracle's are below 1 % of it)
    oracle = FFNNoiseAdversary(ReluFFN(A, w), noise=answer_noise(FLOAT64, NAIVE), push="ray", seed=2)
    learn_ffn(oracle, rng=rng)
    finite = [c for c in charged if np.isfinite(c)]
    assert finite and len(finite) == len(priced)
    assert finite == pytest.approx([(r + t) / top for r, t, top in priced], rel=1e-12, abs=0)
    assert any(r > 0.01 * t for r, t, _ in priced)  # the residual's share is seen: tol alone differs


# --- the query bound's piece (termination) -----------------------------------------------------


class _Scripted:
    """A linear f(x) = (1, 2, ..., d)^T x but at the points of ``bumps``, raised there by its value
    (an oracle answering whatever the bound's "whatever the oracle answers" admits)."""

    def __init__(self, d: int, bumps: dict[tuple[float, ...], float]) -> None:
        self.d, self.arith, self.bumps = d, FLOAT64, bumps
        self.c = np.arange(1.0, d + 1)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, float)[:, 0, :]
        return np.array([self.c @ x + self.bumps.get(tuple(x), 0.0) for x in X])


def _scripted_search(d: int, residuals: tuple[float, ...]) -> tuple[ValueOracle, _PathSearch]:
    """A search at x0 = (1, ..., 1) over :class:`_Scripted` whose Euler residual at the k-th step along
    e_0 (``|x0|_inf = 1``) is ``residuals[k]`` times the step."""
    tuned = TUNING["float64"]
    bumps = {}
    for k, residual in enumerate(residuals):
        x = np.ones(d)
        x[0] += 2.0 ** -(tuned.h_log2 + tuned.h_shrink_log2 * k)  # the k-th step
        bumps[tuple(x)] = residual * (x[0] - 1)
    oracle = ValueOracle(_Scripted(d, bumps))
    return oracle, _PathSearch(Session(oracle, FLOAT64), np.ones(d), 2.0**-40, 100)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_a_piece_asks_at_most_its_query_bound_and_can_ask_all_of_it(d):
    """:func:`~attnproof.theorems.transformer.ffn.piece_query_bound`, the piece
    :func:`~attnproof.theorems.transformer.ffn.ffn_query_bound` charges, attained: Euler's residual
    1, 1/2, 1/4, 1/4 at the first four steps (answers raised along e_0, never growing 4x: no
    units' scale read), so the fourth repeats the third (the homogeneity query, then the jump to
    the smallest step), the fifth batch passes Euler's check and asks its steps backwards: a
    centre, 5 d perturbations, one homogeneity query and d steps backwards, all counted; the
    bound charged d H_ROUNDS + 2 before (d fewer)."""
    from attnproof.theorems.transformer._path_search import H_ROUNDS
    from attnproof.theorems.transformer.ffn import piece_query_bound

    oracle, search = _scripted_search(d, (1.0, 0.5, 0.25, 0.25))
    p = search.piece(np.ones(d))
    assert np.array_equal(p.G, np.arange(1.0, d + 1)) and p.h == 2.0 ** -search.smallest_h_log2
    assert search.ledger.retries == H_ROUNDS and search.ledger.total(d) == oracle.queries
    assert oracle.queries == piece_query_bound(d) == d * (H_ROUNDS + 1) + 2


@pytest.mark.parametrize("d", [2, 3])
def test_a_piece_that_asked_f_of_three_x_does_not_jump(d):
    """Euler's residual 1, 1/2, 2, 2 at the first four steps: the third grew 4 times, a units' scale
    read far beyond the cap over the gradients measured, so f(3 x0) is asked (exactly 3 f(x0): no
    rounding shown, not read, and not kept as the units' scale, ``units_scale``: a kink's residual,
    kept before); the fourth repeats it (the homogeneity query), and the piece, having asked
    f(3 x0), does not jump to the smallest step (:func:`~attnproof.theorems.transformer.ffn.
    piece_query_bound` holds): no gradient, a centre, 4 d perturbations and the two single queries,
    all counted."""
    from attnproof.theorems.transformer._path_search import _OnHyperplane
    from attnproof.theorems.transformer.ffn import piece_query_bound

    oracle, search = _scripted_search(d, (1.0, 0.5, 2.0, 2.0))
    with pytest.raises(_OnHyperplane):
        search.piece(np.ones(d))
    assert "units_scale" not in search.session.diagnostics and not search.beyond_cap
    assert search.ledger.total(d) == oracle.queries == 4 * d + 3 <= piece_query_bound(d)
