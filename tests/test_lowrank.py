"""Theorem 5.1 and the skeleton learners: the floor d + r(2d - r), known and unknown rank."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.special import gammainc, gammaincinv

from attnproof import strategies as ast
from attnproof.arith import FLOAT64, MP
from attnproof.bench import low_rank_target
from attnproof.errors import AssumptionError, InvalidInputError, NonIdentifiableError, PrecisionLossError
from attnproof.measure import PILOT_SLACK, ScalePolicy
from attnproof.models import NAIVE, Attention, FactoredAttention
from attnproof.oracles import ValueOracle
from attnproof.recovery import score
from attnproof.theorems.lowrank import (
    STOP_CHECK_MIXES, learn_lowrank_cvx, learn_skeleton, learn_skeleton_adaptive,
)
from attnproof.theorems.lowrank.runner import run_lowrank

from helpers import declaring, seeds


def generic(d, r, seed):
    K, Q, v = low_rank_target(d, r, np.random.default_rng(seed))
    return FactoredAttention(K, Q, v)


@given(st.integers(1, 12).flatmap(lambda d: st.tuples(st.just(d), st.integers(0, d))), seeds)
@example((12, 12), 0)  # r = d: the skeleton is the whole matrix
@example((5, 0), 0)  # W = 0
@example((12, 1), 125454)  # one saturated probe re-asked (thorough profile)
def test_skeleton_uses_exactly_the_floor_and_is_accurate(dr, seed):
    d, r = dr
    model = generic(d, r, seed)
    oracle = ValueOracle(model)
    rec = learn_skeleton(oracle, rank=r, rng=np.random.default_rng(seed + 1))
    # exactly the floor, plus any probe whose logit saturated and was re-asked at a smaller scale
    assert rec.queries == oracle.queries == d + r * (2 * d - r) + rec.diagnostics.get("reasked_queries", 0)
    assert rec.diagnostics["rank_found"] == r
    s = score(rec, model.W, model.v, FLOAT64)
    assert s.rel_err_W < 1e-9 if r else s.err_W == 0




@given(
    st.integers(1, 12).flatmap(lambda d: st.tuples(st.just(d), st.integers(1, d))),
    ast.scales(-3, 3), st.floats(1.0, 10.0), st.booleans(), seeds,
)
def test_skeleton_queries_stay_at_the_floor_at_every_scale(dr, scale, mantissa, bias, seed):
    (d, r), rng = dr, np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, r, rng)
    c, beta = (rng.standard_normal(d), float(rng.standard_normal())) if bias else (None, None)
    model = FactoredAttention(K * (scale * mantissa), Q, v, c=c, beta=beta)
    oracle = ValueOracle(model)
    rec = learn_skeleton(oracle, rank=r, rng=rng, bias=bias)
    floor = d + r * (2 * d - r) + (d + 1 if bias else 0)
    assert rec.queries == oracle.queries == floor + rec.diagnostics["reasked_queries"]
    assert rec.queries <= floor + PILOT_SLACK
    assert score(rec, model.W, model.v, FLOAT64).err_W <= rec.error_bound


def chance_factor(n: float, tail: float = 1e-6) -> float:
    """How far below its typical size a sum of n independent roundings falls with probability
    ``tail``: ``1 / sqrt(q / n)`` with q the ``tail`` quantile of chi^2_n (Gaussian terms; a
    single uniform rounding, the case n = 1, is below a tenth of its RMS with probability 0.06,
    less than a Gaussian's 0.08)."""
    return 1 / math.sqrt(gammaincinv(n / 2, tail) * 2 / n)


@given(
    st.integers(16, 32).flatmap(lambda d: st.tuples(st.just(d), st.integers(1, d))),
    ast.scales(-3, 3), st.floats(1.0, 10.0), st.booleans(), seeds,
)
# one probe re-asked at 2^-16, nine powers of two below the rest (its logit carried c^T p, so
# the early re-ask missed it, until issue 23: it reads the signal without the bias now)
@example((16, 1), 10.0, 3.8, True, 16)  # estimate 1.37e-10, error 6.0e-12 (issue 23; thorough)
@example((16, 7), 100.0, 2.0625, True, 725425)  # 5.6e-10 vs 3.4e-11 (thorough, seed 26744)
# rank 26 of 28: the 4 unmeasured entries dominate (Y up to 18), a draw low by chance: 1.0e-9 vs
# 6.4e-11 before the corner entries' weights were exact (n = 3.4; thorough, seed 26744)
@example((28, 26), 100.0, 6.125, True, 2187)
# the first pivot column (fixed, column 0) 800 times below ||W||_F / sqrt(d) (||U^-1 R|| = 3279):
# its 16 entries' error is the rounding of the head's query Q x_2, one scalar for the column, which
# C U^-1 R cancels (it keeps the column of the rank-1 K^T (Q + dQ)).  Estimate 3.55e-12 against
# 2.69e-13 (13.2x) at n = 10.85, counting that share as 16 roundings; as 1 (issue 23), n = 1.03.
# K, Q rounded to 2^-20 (W exactly rank 1): the factored head 4.5e-13, a dense head (q = W x_2, 16
# coordinates, no cancellation) 4.1e-12, the estimate's size.
@example((16, 1), 1.0, 2.75, False, 70748515)  # thorough, --hypothesis-seed 13061
# the lower side of the same fix: Q x_2 computed two ways in the pivot column (BLAS row blocks), so
# it does not cancel: 0.97x; an estimate without the query share would be 0.076x (issue 23)
@example((16, 1), 0.001, 3.264623317701809, False, 2078106034)
def test_skeleton_error_estimate_is_within_10x_of_the_true_error(dr, scale, mantissa, bias, seed):
    """``error_estimate`` (typical rounding through d(C U^-1 R); issue 13) is never 10 times
    below ||W_hat - W*||_F, and not 10 times above it where it is a sum of many independent
    roundings (``error_estimate_terms`` n from 6.4 on).

    Where a few terms dominate the realised error is a few roundings, which can fall far below
    their typical size by chance: one probe asked at a scale 2^3-2^9 below the rest, or the few
    unmeasured entries of a nearly full-rank skeleton with a large U^-1 R.  The estimate is then
    held to the factor by which sqrt(chi^2_n / n) falls short with probability 1e-6 (about 10^3
    for n = 2).  A pivot column's share from the head's query vector is r such terms (one per
    coordinate of Q x_2, shared by the column's queries), and can vanish: a factored head's
    C U^-1 R cancels it where the column's queries were evaluated alike (a BLAS kernel's row
    blocks may not be: d = 16, r = 1, scale 10^-3, mantissa 3.2646, seed 2078106034 has two values
    3.6e-14 apart, and its error is the estimate's, 0.97x).  Measured (900 draws, issue 23):
    estimate / error 0.32 .. 13.2, above 10 once (n = 1.04); n's quartiles 3.5, 14.5, 38; 3000
    draws of d = 16, r = 1, no bias: 0.17 .. 23, above 10 in 18, each at n < 1.44."""
    (d, r), rng = dr, np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, r, rng)
    c, beta = (rng.standard_normal(d), float(rng.standard_normal())) if bias else (None, None)
    model = FactoredAttention(K * (scale * mantissa), Q, v, c=c, beta=beta)
    rec = learn_skeleton(ValueOracle(model), rank=r, rng=rng, bias=bias)
    err, estimate = score(rec, model.W, model.v, FLOAT64).err_W, rec.diagnostics["error_estimate"]
    terms = rec.diagnostics["error_estimate_terms"]
    assert 1 <= terms <= 2 * d * d
    assert err / 10 <= estimate <= max(10.0, chance_factor(terms)) * err


def test_a_pivot_columns_query_rounding_stays_in_its_column():
    """Why the count takes a pivot column's query share as r terms that may vanish (issue 23): a
    factored head's rounding dq of its query ``Q x_2``, shared by the column's queries, moves the
    column by ``K^T dq``, and the skeleton reconstruction keeps exactly that column of the rank-r
    ``K^T (Q + dQ)``: nothing through U^-1 R (exact rationals, d = 5, r = 2)."""
    import sympy as sp

    from attnproof.arith import SYMPY
    from attnproof.theorems.lowrank import reconstruct

    rng = np.random.default_rng(3)
    K, Q = (sp.Matrix(rng.integers(-4, 5, (2, 5))) for _ in range(2))
    dq = sp.Matrix([sp.Rational(1, 2**40), sp.Rational(-3, 2**41)])
    M, moved = K.T * Q, K.T * Q
    moved[:, 1] += K.T * dq  # pivot column 1 of J = {0, 1}
    exact = [np.array(A.tolist(), dtype=object) for A in (M, moved)]
    change = reconstruct(exact[1], 2, SYMPY) - exact[0]
    assert change[:, 1].tolist() == list(K.T * dq) and not np.any(np.delete(change, 1, axis=1))


def test_error_estimate_terms_by_hand(monkeypatch):
    """The count of :func:`_cross_estimate` on a fixed input, by hand (issue 23; the mutation
    survivor ``lin / (top or 1.0)`` -> ``lin * (top or 1.0)`` changed only it): M = [[1, 1], [1, 1]],
    r = 1 (I = J = [0]), so X = Y = [1, 1] and ||G||^2 = 2 at each measured entry (the corner's
    (x^2 - 1)(y^2 - 1) + 1).  Every sigma = top = 2^-40 (V = 1); the pivot column's query share 3/4
    (sigma without it top / 2); each row's c^T p rounding lin = top / 2 (1/4).  Inputs: the column's
    entries 2 (1 - 3/4 - 1/4) = 0 each, the row's (0, 1) 2 (1 - 1/4) = 3/2, the column's query share
    one term 2 (3/4) 2 = 3, the rows' shared 2/4 + 2/4 = 1 and 2/4: 6 in all, squares 12.5, n_in =
    36 / 12.5 = 2.88; outputs 1, 1, 1 and 1 + 1 + 1 at (1, 1): n_out = 36 / 12 = 3."""
    import attnproof.theorems.lowrank as lowrank
    from attnproof.measure import Probes

    top = 2.0**-40
    monkeypatch.setattr(lowrank, "value_errors", lambda probes, L, k, entries, W_norm, c_norm, Wq: (
        np.full(len(entries[0]), top if W_norm > 0 else top / 2)))
    probes = Probes(np.eye(2), np.eye(2), np.ones(2), FLOAT64, linear_typical=np.full(2, top / 2))
    known = np.array([[True, True], [True, False]])
    cross = lowrank.Cross(np.ones((2, 1)), np.ones((1, 2)), np.ones((2, 2)), known, np.zeros((2, 2)),
                          np.zeros((2, 2), int), [0], [0], None, 0.0)
    W_norm = FLOAT64.norm(np.eye(2))
    estimate, terms = lowrank._cross_estimate(probes, cross, W_norm, 0.0, np.ones(2), images=np.ones(2))
    assert terms == pytest.approx(2.88, rel=1e-12, abs=0)
    assert estimate == pytest.approx(top * math.sqrt(6) + FLOAT64.resolution * math.sqrt(2), rel=1e-12, abs=0)


@pytest.mark.parametrize(
    "d, r, rank, bias", [(12, 3, 5, False), (12, 3, 5, True), (10, 2, 10, False), (9, 9, 9, True)]
)
def test_error_estimate_inputs_and_outputs_agree(monkeypatch, d, r, rank, bias):
    """The estimate's variance summed over the measured entries (each sigma_e^2 ||G_e||^2, the
    corner's ||G||^2 = (x^2 - u^2)(y^2 - 1) + u^2) equals the same variance summed over the
    entries of dW (three paths into each unmeasured entry): two derivations of one number,
    with shortened rows (biases) and a stop column (rank found below the declared one)."""
    import attnproof.theorems.lowrank as lowrank

    totals = []
    count = lowrank._effective_terms
    monkeypatch.setattr(lowrank, "_effective_terms", lambda t, sq: totals.append(t) or count(t, sq))
    rng = np.random.default_rng(1)
    K, Q, v = rng.standard_normal((r, d)), rng.standard_normal((r, d)), rng.standard_normal(d)
    c, beta = (8 * rng.standard_normal(d), 0.3) if bias else (None, None)  # some rows shortened
    learn_skeleton(ValueOracle(FactoredAttention(K, Q, v, c=c, beta=beta)), rank=rank, rng=rng, bias=bias)
    inputs, outputs = totals
    assert inputs > 0 and outputs == pytest.approx(inputs, rel=1e-9, abs=0)


def test_error_estimate_terms_see_one_dominant_probe():
    """The count that relaxes the property above is not always small: in the pinned biased head
    one entry's rounding is the error (about two roundings; the cases pinned before, a probe left
    at 2^-16 by the early re-ask, then seed 29, have ~11 since issue 23's re-ask and the balanced
    reflection's fix), a generic head without biases many."""
    def terms(d, r, scale, bias, seed):
        rng = np.random.default_rng(seed)
        K, Q, v = low_rank_target(d, r, rng)
        c, beta = (rng.standard_normal(d), float(rng.standard_normal())) if bias else (None, None)
        rec = learn_skeleton(ValueOracle(FactoredAttention(K * scale, Q, v, c=c, beta=beta)),
                             rank=r, rng=rng, bias=bias)
        return rec.diagnostics["error_estimate_terms"]

    assert terms(16, 1, 1.0, True, 8) < 3 < chance_factor(3) / 10
    assert chance_factor(terms(24, 4, 1.0, False, 0)) < 10


@given(
    st.integers(1, 12).flatmap(lambda d: st.tuples(st.just(d), st.integers(0, d - 1), st.integers(0, d - 1))),
    st.sampled_from(["entry", "column", "row"]), ast.scales(-3, 3), seeds,
)
@example((4, 0, 0), "entry", 1.0, 0)  # e_1 e_1^T
def test_coherent_targets_against_the_structured_bases(dij, shape, scale, seed):
    """The O(d^2) bases (DCT with random signs and a random reflection, not Haar) on the targets
    most aligned with the coordinate axes: W = e_i e_j^T, a single column w e_j^T, a single row
    e_i w^T.  Rank 1 is found at the floor, and W is recovered within its bound."""
    (d, i, j), rng = dij, np.random.default_rng(seed)
    W = np.zeros((d, d))
    if shape == "entry":
        W[i, j] = scale
    elif shape == "column":
        W[:, j] = rng.standard_normal(d) * scale
    else:
        W[i, :] = rng.standard_normal(d) * scale
    v = rng.standard_normal(d)
    oracle = ValueOracle(Attention(W, v))
    rec = learn_skeleton_adaptive(oracle, rng=rng)
    assert rec.diagnostics["rank_found"] == 1
    floor = d + (2 * d - 1) + (d - 1)  # the skeleton of rank 1, and the column that shows rank 1
    designed = rec.diagnostics["designed_queries"]
    assert designed == STOP_CHECK_MIXES * (d - 1)  # the stop's check: random mixes of columns, rows off I
    assert rec.queries == oracle.queries == floor + rec.diagnostics["reasked_queries"]
    assert rec.queries <= floor + designed + PILOT_SLACK
    s = score(rec, W, v, FLOAT64)
    assert s.err_W <= rec.error_bound and s.rel_err_W < 1e-9  # as for generic targets


@given(ast.low_rank_targets(), seeds)
@example((np.array([[3.75529917e-37]]), np.array([-1.0]), 1), 0)  # tiny W: upscaled, then shrunk 8 times
# a subnormal W* (thorough, seed 15961): since the scale reaches 2^-500 it is answered (27 bits), and
# the bound's sum of squares underflowed to 0 (bound 4e-323 vs error 8.6e-318): now a hypot
@example((np.array([[1.7853053e-309]]), np.array([-1.0]), 1), 0)
# a subnormal pivot (thorough, seed 90817; issue 23): LAPACK divided by U = 1.7e-311 through its
# reciprocal, U^{-1} R came out infinite and the bound and the estimate read inf * 0 = NaN (numpy's
# "invalid value" RuntimeWarning, no error); now the pivot block is scaled into range first
@example((np.full((2, 2), 2.22507386e-311), np.array([-1.0, 0.0]), 1), 0)
@pytest.mark.filterwarnings("error::RuntimeWarning")  # a NaN in a bound is a defect, not a warning
def test_skeleton_on_adversarial_factors(target, seed):
    """Hypothesis factors (zeros, repeats, tiny and huge entries): the floor plus counted
    re-asked probes, a bounded total, and an error within the reported bound -- or a refusal;
    no RuntimeWarning (an overflow or a NaN on the way)."""
    W, v, r = target
    d = len(v)
    oracle = ValueOracle(Attention(W, v))
    try:
        rec = learn_skeleton(oracle, rank=r, rng=np.random.default_rng(seed))
    except PrecisionLossError:  # the output guard: only a W* below float64's resolution may refuse
        assert np.abs(W).max(initial=0.0) < 1e-140
        return
    found = rec.diagnostics["rank_found"]
    # the floor for the rank found, plus the column that showed a lower rank, plus re-asked probes
    expected = d + found * (2 * d - found) + (d - found if found < r else 0)
    assert rec.queries == oracle.queries == expected + rec.diagnostics["reasked_queries"]
    # every rescaling loop is bounded: a probe is re-asked at most `rounds` + 3 times
    assert rec.queries <= d + r * (2 * d - r) * (ScalePolicy().rounds + 3)
    s = score(rec, W, v, FLOAT64)
    assert s.err_W <= rec.error_bound
    assert s.err_W <= 1e-6 * max(np.linalg.norm(W), 1e-300) or s.err_W < 1e-100


@given(st.integers(2, 12).flatmap(lambda d: st.tuples(st.just(d), st.integers(0, d))), seeds)
@example((5, 1), 27531240)  # one probe saturates and is re-asked (thorough profile)
@example((5, 0), 0)  # W = 0: the r = 0 branch, asserted exactly
def test_adaptive_finds_the_rank(dr, seed):
    d, r = dr
    model = generic(d, r, seed)
    oracle = ValueOracle(model)
    if r == 0:  # W* = 0: one column shows it, and the output guard refuses to certify noise
        with pytest.raises(PrecisionLossError, match="a-posteriori bound"):
            learn_skeleton_adaptive(oracle, rng=np.random.default_rng(seed + 1))
        policy = ScalePolicy()  # v, one column, the stop's check columns, their bounded rescaling passes
        asked = (2 + STOP_CHECK_MIXES) * d
        assert asked <= oracle.queries <= asked + (1 + STOP_CHECK_MIXES) * d * (policy.max_k + policy.rounds)
        return
    rec = learn_skeleton_adaptive(oracle, rng=np.random.default_rng(seed + 1))
    assert rec.diagnostics["rank_found"] == r
    floor = d + r * (2 * d - r)
    extra = rec.queries - floor - rec.diagnostics.get("reasked_queries", 0)  # minus re-asked saturated probes
    if r == d:
        assert extra == 0 == rec.diagnostics["designed_queries"]  # full rank: at d + d^2 like Thm 4.1
    else:
        assert extra == d - r  # one more column shows the residual is 0 (r = 0: the first, d queries)
        # and counted mixes check the stop
        assert rec.diagnostics["designed_queries"] == STOP_CHECK_MIXES * (d - r)
    s = score(rec, model.W, model.v, FLOAT64)
    assert s.rel_err_W < 1e-9 if r else (np.all(rec.W == 0) and s.err_W == 0)  # W* = 0 is found exactly


@pytest.mark.parametrize("dps", [30, 60])
def test_skeleton_is_exact_in_mpmath(dps):
    d, r = 10, 3
    K, Q, v = low_rank_target(d, r, np.random.default_rng(3))
    model = FactoredAttention(K, Q, v, MP(dps))
    rec = learn_skeleton(ValueOracle(model), rank=r, rng=np.random.default_rng(4), arith=MP(dps))
    s = score(rec, model.W, model.v, MP(dps))
    assert rec.queries == d + r * (2 * d - r)
    assert dps - 6 <= -np.log10(s.max_entry_err / np.abs(MP(dps).to_float(model.W)).max()) <= dps + 6


def test_rank_larger_than_declared_is_detected():
    model = generic(8, 3, 0)
    with pytest.raises(AssumptionError, match="exceeds the declared 2"):
        learn_skeleton(ValueOracle(model), rank=2, rng=np.random.default_rng(1), checks=1)
    rec = learn_skeleton(ValueOracle(model), rank=3, rng=np.random.default_rng(1), checks=1)
    assert rec.queries == 8 + 3 * 13 + 1 and rec.diagnostics["check_residual"] < 1e-9


def test_rank_checks_allow_the_largest_gap_and_charge_what_it_hides(monkeypatch):
    """_check_rank's threshold is the largest allowed gap over the checks, 2 (measurement bound +
    W_error) of the loosest check, and what passing checks cannot exclude, CHECK_MARGIN d x that
    gap, joins the bound: pinned against the per-check bounds recorded from the run (three checks
    whose allowed gaps differ, so a smallest-gap threshold would fail)."""
    import attnproof.theorems.lowrank as lowrank

    seen = {}
    real_errors, real_check = lowrank.value_errors, lowrank._check_rank

    def errors(probes, *args, **kwargs):
        out = real_errors(probes, *args, **kwargs)
        if probes.P.shape[0] == 3:  # the fresh check probes (the cross's have d = 8 rows)
            seen["bounds"] = out
        return out

    def check(*args):
        seen["W_error"] = args[7]
        seen["unseen"] = real_check(*args)
        return seen["unseen"]

    monkeypatch.setattr(lowrank, "value_errors", errors)
    monkeypatch.setattr(lowrank, "_check_rank", check)
    rec = learn_skeleton(ValueOracle(generic(8, 2, 3)), rank=2, rng=np.random.default_rng(5), checks=3)
    allowed = 2 * (seen["bounds"] + seen["W_error"])
    assert allowed.max() > allowed.min() * (1 + 1e-6)  # premise: the checks' gaps differ
    info = rec.diagnostics
    assert info["check_threshold"] == float(allowed.max())
    assert seen["unseen"] == info["check_unseen_bound"] == lowrank.CHECK_MARGIN * 8 * float(allowed.max())
    assert rec.error_bound == seen["W_error"] + seen["unseen"]
    assert 0 <= info["check_residual"] <= info["check_threshold"]


def test_rank_smaller_than_declared_costs_less():
    model = generic(8, 2, 0)
    rec = learn_skeleton(ValueOracle(model), rank=5, rng=np.random.default_rng(1))
    assert rec.diagnostics["rank_found"] == 2
    # the skeleton of rank 2, the column that shows it, and the counted check of that stop
    info = rec.diagnostics
    assert info["designed_queries"] == info["reasked_queries"] == STOP_CHECK_MIXES * (8 - 2)
    assert rec.queries == 8 + 2 * 14 + (8 - 2) + STOP_CHECK_MIXES * (8 - 2)
    assert score(rec, model.W, model.v, FLOAT64).rel_err_W < 1e-9


def test_the_low_rank_row_and_line_name_the_designed_check_of_a_stop():
    """The stop's check queries are counted extras the row reports as designed (``designed_queries``,
    what the evidence reads) and the human line names them, apart from re-asks."""
    from attnproof.cli import _describe

    row = run_lowrank(8, 2, learner="skeleton-adaptive", seed=0)
    designed = STOP_CHECK_MIXES * (8 - 2)
    assert row["designed_queries"] == designed == row["diagnostics"]["designed_queries"]
    formula = row["queries_formula"]
    assert row["queries"] == formula + row["reasked_queries"] >= formula + designed
    line, what = _describe(row), "the check of a stop below the declared rank on random mixes of columns"
    assert f"{designed} designed: {what}" in line


def test_the_stop_checks_charge_replaces_the_truncation_and_joins_the_bound(monkeypatch):
    """A generic rank-2 target declared rank 5 (d = 8, no bias: no row shortened): the check of the
    stop at rank 2 passes (its residual within the allowed errors), and the bound is the skeleton's
    errors (:func:`_cross_error` without the stop's truncation term), the assembly's and the check's
    charge on the unmeasured block (:func:`_stop_charge` of what the mixes measured), exactly."""
    import attnproof.theorems.lowrank as lowrank

    parts, calls = {}, []
    for name in ("_cross_error", "_assembly_error", "_stop_charge"):
        real = getattr(lowrank, name)

        def wrapped(*args, real=real, name=name, **kwargs):
            parts[name] = real(*args, **kwargs)  # the last call: the final cross's
            calls.append((name, args))
            return parts[name]

        monkeypatch.setattr(lowrank, name, wrapped)
    rec = learn_skeleton(ValueOracle(generic(8, 2, 0)), rank=5, rng=np.random.default_rng(1))
    info = rec.diagnostics
    assert info["rank_found"] == 2 and not info.get("stop_resumed")
    assert 0 <= info["stop_check_residual"] <= info["stop_check_allowed"]
    assert info["stop_check_mixes"] == STOP_CHECK_MIXES == len(info["stop_check_mix_norm"])
    assert info["stop_check_failure"] == lowrank.STOP_CHECK_FAILURE
    (cross,) = {id(args[2]): args[2] for name, args in calls if name == "_cross_error"}.values()
    assert cross.stop_col is None  # the bound read the skeleton without the stop's truncation term
    assert info["stop_check_unseen"] == parts["_stop_charge"] > 0
    assert rec.error_bound == parts["_cross_error"] + parts["_stop_charge"] + parts["_assembly_error"]


def test_the_stop_checks_margin_is_the_chernoff_bound_at_its_failure_probability():
    """``_stop_check_margin(k, delta) = sqrt(e) delta^(-1/k)``, by hand: 10 sqrt(e) = 16.4872 at the
    learner's (3, 1e-3), 2 sqrt(e) at (1, 1/2); and what it claims, against the exact chi-square
    law: for a residual of rank m with equal singular values (m = 1 the worst case),
    ``P(sum_j ||S g_j||^2 < k ||S||_F^2 / c^2) = P(chi^2_{k m} < k m / c^2) <= delta``, for every m,
    and not far below it at m = 1 (the bound is tight to a factor ~3, not the old sqrt(m))."""
    import attnproof.theorems.lowrank as lowrank

    margin, failure = lowrank._stop_check_margin, lowrank.STOP_CHECK_FAILURE
    assert lowrank.STOP_CHECK_MARGIN == margin(STOP_CHECK_MIXES, failure)
    assert lowrank.STOP_CHECK_MARGIN == pytest.approx(10 * math.sqrt(math.e), rel=1e-15, abs=0)
    assert lowrank._stop_check_margin(1, 0.5) == pytest.approx(2 * math.sqrt(math.e), rel=1e-15, abs=0)
    assert (STOP_CHECK_MIXES, lowrank.STOP_CHECK_FAILURE) == (3, 1e-3)
    for k, delta in ((1, 0.5), (1, 1e-3), (3, 1e-3), (5, 1e-6)):
        c = lowrank._stop_check_margin(k, delta)
        misses = [gammainc(k * m / 2, k * m / c**2 / 2) for m in (1, 2, 10, 1000)]  # chi^2 law
        assert all(p <= delta for p in misses), (k, delta, misses)
        assert misses[0] >= delta / 10 and misses == sorted(misses, reverse=True)


def test_the_registered_counts_name_the_stop_checks_mixes():
    """The learners' registered query texts (what the CLI and the ledger print) name the designed
    extras of a stop's check with the learner's own number of mixes."""
    from attnproof.verify.registry import LEARNERS

    for name in ("skeleton", "skeleton-adaptive"):
        said = LEARNERS[name].queries
        assert f"counted extras: {STOP_CHECK_MIXES} (d - s) designed per check of a stop" in said


def test_the_stop_charge_by_hand():
    """``_stop_charge`` at a fixed input, by hand: mixes of norms (2, 1), rows unshortened by (1, 2),
    measured residuals |rho| = I and errors e = [[0, 0], [1, 0]]: the mixes see ``||u (|rho_j| +
    e_j)|| = sqrt(1 + 4), 2``, through ||g_j||: 2 sqrt(5) and 2, rms sqrt((20 + 4) / 2) = 2 sqrt(3),
    times the margin; a normalisation error delta leaves ``1 - margin delta rms(||g||)`` of it
    (rms(||g||) = sqrt(5 / 2)): at half the charge doubles, below none it is infinite."""
    import attnproof.theorems.lowrank as lowrank

    c = lowrank.STOP_CHECK_MARGIN
    args = (np.array([2.0, 1.0]), np.eye(2), np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([1.0, 2.0]))
    assert lowrank._stop_charge(*args, 0.0) == pytest.approx(c * 2 * math.sqrt(3), rel=1e-15, abs=0)
    half = 1 / (2 * c * math.sqrt(2.5))
    assert lowrank._stop_charge(*args, half) == pytest.approx(c * 4 * math.sqrt(3), rel=1e-12, abs=0)
    assert lowrank._stop_charge(*args, 3 * half) == math.inf  # past none: no bound


def test_the_pinned_escape_needs_the_stop_charge(monkeypatch):
    """The thorough draw pinned below (d = 4, t = 1.75 2^-37, adaptive, seed 31178885): the check
    sees the cut residual and the cross resumes at the noise floor.  Resumed without a lead (as
    before issue 23's led resume; the check's row dropped here), it stops at rank 1 again (the
    column it reads shows it below the floor), and the second check sees it again: the answer is
    within its bound, and outside the bound less the stop's charge (1.5e-11 against the skeleton's
    and the assembly's errors alone, ~2e-13): dropping the charge reopens the silent escape.  Led by
    the row the check saw it in (row 0: its largest residual, column 2, is the next pivot), the
    resume finds rank 2 (error 2.8e-15, bound 1.6e-12, measured), the overturned column's entries
    off the new pivot rows counted as designed queries."""
    import attnproof.theorems.lowrank as lowrank

    W, v = _two_scales(4, 1.75 * 2.0**-37), np.random.default_rng(31178885).standard_normal(4)
    oracle = ValueOracle(Attention(W, v))
    rec = learn_skeleton_adaptive(oracle, rng=np.random.default_rng(31178886))
    info = rec.diagnostics
    assert info["stop_resumed"] and info["rank_found"] == 2
    assert info["stop_check_residual"] <= info["stop_check_allowed"]  # the second check, at rank 2
    checks = STOP_CHECK_MIXES * ((4 - 1) + (4 - 2))
    assert info["stop_lead_queries"] == 4 - 1 - 1  # column 3's rows off {1, 0}
    assert info["designed_queries"] == checks + info["stop_lead_queries"] == info["reasked_queries"]
    assert rec.queries == oracle.queries == info["queries_formula"] + info["reasked_queries"]
    assert score(rec, W, v, FLOAT64).err_W <= rec.error_bound < 1e-11

    check = lowrank._check_stop
    monkeypatch.setattr(lowrank, "_check_stop", lambda *a: check(*a)[:3] + (None,))
    oracle = ValueOracle(Attention(W, v))
    rec = learn_skeleton_adaptive(oracle, rng=np.random.default_rng(31178886))
    info = rec.diagnostics
    assert info["stop_resumed"] and info["rank_found"] == 1 and info["stop_lead_queries"] == 0
    assert info["stop_check_residual"] > info["stop_check_allowed"]  # the second check sees it too
    assert info["designed_queries"] == 2 * STOP_CHECK_MIXES * (4 - 1)  # two checks, rows off I
    assert info["stop_check_failure"] == 2 * 1e-3  # the final check's, or the first's that chose it
    err = score(rec, W, v, FLOAT64).err_W
    assert rec.error_bound - info["stop_check_unseen"] < err <= rec.error_bound < 100 * err


def test_failure_cases():
    with pytest.raises(NonIdentifiableError):
        learn_skeleton(ValueOracle(FactoredAttention(np.ones((1, 3)), np.ones((1, 3)), np.zeros(3))),
                       rank=1, rng=np.random.default_rng(0))
    for bad in (-1, 4, 1.5):
        with pytest.raises(InvalidInputError):
            learn_skeleton(ValueOracle(generic(3, 1, 0)), rank=bad, rng=np.random.default_rng(0))


def test_factored_model_equals_dense_model():
    rng = np.random.default_rng(5)
    K, Q, v = low_rank_target(6, 2, rng)
    X = rng.standard_normal((4, 3, 6))
    assert np.allclose(FactoredAttention(K, Q, v)(X), Attention(K.T @ Q, v)(X), rtol=1e-13, atol=1e-13)


def test_nuclear_norm_learner_recovers_a_small_target():
    pytest.importorskip("cvxpy")
    d, r = 8, 1
    model = generic(d, r, 2)
    oracle = ValueOracle(model)
    m = 5 * r * (2 * d - r)
    rec = learn_lowrank_cvx(oracle, m=m, rng=np.random.default_rng(0))
    extra = rec.diagnostics["reasked_queries"]
    assert rec.queries == oracle.queries == d + m + extra
    assert (extra > 0) == (rec.diagnostics["rescaled_probes"] > 0)  # only saturated probes cost more
    assert rec.diagnostics["status"].startswith("optimal")
    assert score(rec, model.W, model.v, FLOAT64).rel_err_W < 1e-6


def test_cvx_redraws_probes_with_a_orthogonal_to_v():
    """a^T v* = 0 makes a rank-one measurement carry no information: such a is redrawn."""
    pytest.importorskip("cvxpy")
    d, r, m = 6, 1, 40
    model = generic(d, r, 3)
    real = np.random.default_rng(0)

    class Stub:
        first = True

        def standard_normal(self, shape):
            out = real.standard_normal(shape)
            if self.first and shape == (m, d):
                v = model.v
                out[0] = np.zeros(d)
                out[0][0], out[0][1] = v[1], -v[0]  # a^T v = 0 exactly
                self.first = False
            return out

    rec = learn_lowrank_cvx(ValueOracle(model), m=m, rng=Stub())
    assert rec.diagnostics["redrawn"] >= 1


def _two_scales(d: int, t: float) -> np.ndarray:
    """W* = e_1 e_2^T + t e_0 e_3^T (rank 2, its second singular value t)."""
    W = np.zeros((d, d))
    W[1, 2], W[0, 3] = 1.0, t
    return W


def test_rank_cut_below_rank_tol_is_checked_and_resumed():
    """The pinned witness (was a strict xfail, found by the thorough profile): W* = e_1 e_2^T +
    3.9e-9 e_0 e_3^T declared rank 2.  The cross stops at rank 1, the rotated residual in the
    column it measured being below ``rank_tol * max|M|`` (~1e-9), while the residual elsewhere made
    the error 4.7e-9 against a truncation term of 2.1e-9.  Now the stop is checked on random mixes
    of the other columns (STOP_CHECK_MIXES (d - 1) = 9 counted, designed queries), which see the
    residual, and the cross resumes at the noise floor (no query asked twice): rank 2, within its
    bound.  Since issue 23's led resume, the row the check saw the residual in (row 0) is asked
    (2 more designed queries, its entries off the pivot column and the stop column) and its
    largest residual, column 2, is the pivot in place of the stop column 3's 4.5e-10: pivot ratio
    6.6e-9 (was 1.2e-9), bound 3.4e-13 (was 1.6e-12), error 1.9e-15 (was 6.4e-15), measured; the
    stop column's entries off the new pivot rows, 2, are the designed extras."""
    W, v = _two_scales(4, 3.90625e-09), np.array([-1.0, 0.0, 0.0, 0.0])
    oracle = ValueOracle(Attention(W, v))
    rec = learn_skeleton(oracle, rank=2, rng=np.random.default_rng(11))
    info = rec.diagnostics
    assert info["stop_resumed"] and info["rank_found"] == 2
    assert info["stop_check_residual"] > info["stop_check_allowed"]  # what made it resume
    checked, led = STOP_CHECK_MIXES * (4 - 1), info["stop_lead_queries"]
    assert led == 4 - 2
    assert info["designed_queries"] == info["reasked_queries"] == checked + led
    assert info["queries_formula"] == 4 + 2 * (2 * 4 - 2)
    assert rec.queries == oracle.queries == info["queries_formula"] + checked + led
    s = score(rec, W, v, FLOAT64)
    assert s.err_W <= rec.error_bound < 1e-12


def test_no_seed_of_the_pinned_family_escapes_its_bound():
    """The witness' family over the 300 seeds that let 25 escape (d = 4, declared rank 2, second
    singular value 3.9e-9): every answer within its bound, every query counted (the formula for
    the rank found plus the designed check columns)."""
    W, v = _two_scales(4, 3.90625e-09), np.array([-1.0, 0.0, 0.0, 0.0])
    for seed in range(300):
        oracle = ValueOracle(Attention(W, v))
        rec = learn_skeleton(oracle, rank=2, rng=np.random.default_rng(seed))
        info = rec.diagnostics
        assert rec.queries == oracle.queries == info["queries_formula"] + info["reasked_queries"], seed
        assert 0 <= info["designed_queries"] <= info["reasked_queries"], seed
        assert score(rec, W, v, FLOAT64).err_W <= rec.error_bound, seed


@given(st.integers(4, 8), st.integers(-44, -14), st.floats(1.0, 2.0), st.booleans(), seeds)
# (thorough profile, a fresh seed) the adaptive learner without the stop check's charge: error
# 1.5e-11 outside a bound of 7.1e-13 (the charge was briefly reported only, for the book's d = 1024);
# test_the_pinned_escape_needs_the_stop_charge pins it by itself
@example(4, -37, 1.75, True, 31178885)
def test_a_second_singular_value_near_the_rank_cut_is_within_the_bound(d, e, mantissa, adaptive, seed):
    """W* = e_1 e_2^T + t e_0 e_3^T with t = mantissa 2^e around the cut ``rank_tol`` ~ 1.5e-9 ~ 2^-29,
    declared rank 2 (or unknown): found or cut, the error is within the reported bound, and every
    query is counted (a stop's check: STOP_CHECK_MIXES (d - r) designed)."""
    W, v = _two_scales(d, mantissa * 2.0**e), np.random.default_rng(seed).standard_normal(d)
    oracle = ValueOracle(Attention(W, v))
    rng = np.random.default_rng(seed + 1)
    rec = learn_skeleton_adaptive(oracle, rng=rng) if adaptive else learn_skeleton(oracle, rank=2, rng=rng)
    info = rec.diagnostics
    assert rec.queries == oracle.queries == info["queries_formula"] + info["reasked_queries"]
    designed, r = info["designed_queries"], info["rank_found"]
    if info.get("stop_resumed"):  # a first check at a lower rank s (k (d - s)), maybe a second at r,
        led = info["stop_lead_queries"]  # and the entries of a led resume off the final skeleton
        assert 0 <= led <= 2 * d and STOP_CHECK_MIXES * (d - r) < designed - led <= 2 * STOP_CHECK_MIXES * d
    else:  # a check at the stop (k (d - r)), or no stop below the declared rank
        assert designed == (STOP_CHECK_MIXES * (d - r) if r < (d if adaptive else 2) else 0)
    assert score(rec, W, v, FLOAT64).err_W <= rec.error_bound



def test_a_saturation_hidden_by_the_labels_rounding_is_refused_not_answered():
    """The pinned example of the pipelined property (thorough, --hypothesis-seed=19748): d = 4, r = 1,
    W* = 2^-20 K^T Q with biases (||W*||_F = 1.97e-6).  The first column's rows 0, 2, 3 are read at
    query scale 2^49, where ``s q^T v`` ~ 2^49 puts the label's ulp (~0.06) above the signal
    ``alpha p^T v``: the true logit 2^49 x 1.67e-6 ~ 1e9 saturates (alpha = 1), the rounded label reads
    alpha ~ 0.6, and the first-order value model charges each entry 5.9e-7 against a true error up to
    1.67e-6.  At the default rtol the guard refuses (bound 1.15e-6, dominated by those three entries'
    errors in C: sqrt(3) x 5.9e-7 = 1.0e-6, through ||Y|| = 0.5: 0.5e-6); with a permissive rtol the
    answer (error 1.87e-6, 95 % of ||W*||) was returned above its bound (a strict xfail).  Since
    value_errors carries alpha's error through sigma^{-1} exactly (measure._logit_spread: infinite
    once alpha's interval reaches 1) those entries' bound is infinite: a typed refusal at any rtol,
    or (a learner that asks them again smaller) an answer within its bound."""
    rng = np.random.default_rng(1)
    K, Q, v = low_rank_target(4, 1, rng)
    c = rng.standard_normal(4)
    model = FactoredAttention(K * 2.0**-20, Q, v, c=c, beta=0.5)
    try:
        rec = learn_skeleton(ValueOracle(model), rank=1, rng=rng, bias=True, rtol=100.0)
    except PrecisionLossError as refusal:
        assert "is inf" in str(refusal)
        return
    assert score(rec, model.W, model.v, FLOAT64).err_W <= rec.error_bound


def test_a_biased_probe_shrunk_blindly_is_asked_again_at_the_learned_scale(monkeypatch):
    """The case pinned in the 10x property above: the first column's probe (2, 0) saturates, is
    shrunk by 2^16 (no trusted logit), and must be asked again at the learned scale 2^-7.  Was
    open: BilinearSession.measure_adaptively asked again only probes whose logit |L| is below
    ``policy.tiny`` -- and with a bias L ~ c^T p ~ 1 whatever the signal s p^T W* q -- so its
    value stayed 2^9 times less resolved than the rest (it alone made the error:
    error_estimate_terms ~ 2).  The early re-ask now reads the signal without the bias, as
    ``_learn`` does."""
    import attnproof.theorems.lowrank as lowrank

    crosses = []
    measure = lowrank.cross_approximation
    monkeypatch.setattr(lowrank, "cross_approximation", lambda *a: crosses.append(measure(*a)) or crosses[-1])
    rng = np.random.default_rng(16)
    K, Q, v = low_rank_target(16, 1, rng)
    c, beta = rng.standard_normal(16), float(rng.standard_normal())
    learn_skeleton(ValueOracle(FactoredAttention(K * 38.0, Q, v, c=c, beta=beta)), rank=1, rng=rng, bias=True)
    (cross,) = crosses
    k = cross.M.at(*cross.M.entries(), "k")
    assert k.min() > cross.scale.k - 8  # the early re-ask's own criterion


@pytest.mark.parametrize("d, mantissa, seed", [(16, 1.5, 18), (23, 3.0, 1209)])  # seeds 271828, 314159
def test_the_estimate_charges_w_x2_rounding_through_p_only(d, mantissa, seed):
    """Found by the thorough profile (seed 271828) in the 10x property: d = 16, r = 1, biases,
    seed 18: estimate 1.98e-11 against 1.76e-12 (11x; 12x the RMS over 30 nearby mantissas, so
    not chance; error_estimate_terms 9.4).  The first column is asked at s = 2^7, where
    ``value_errors(Wq=...)`` put W x_2's rounding (the ``||W||_F / sqrt(d)`` part of its size)
    into each score with weight ||x_1|| + ||x_2|| ~ 2s, 30x the column's actual errors; the
    oracle computes y = W x_2 (or Q x_2) once, and the logit (x_1 - x_2)^T y meets its rounding
    only through p (s p with whole-probe scaling).  Weighted by ||s p|| now: 1.14x here (was
    11.3x), and 0.58x for the second find (seed 314159: d = 23, mantissa 3, seed 1209, was 12x);
    150 random draws of the 10x property: median 1.03 either way, max 6.6 -> 4.5."""
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, 1, rng)
    c, beta = rng.standard_normal(d), float(rng.standard_normal())
    model = FactoredAttention(K * mantissa, Q, v, c=c, beta=beta)
    rec = learn_skeleton(ValueOracle(model), rank=1, rng=rng, bias=True)
    assert rec.diagnostics["error_estimate"] <= 10 * score(rec, model.W, model.v, FLOAT64).err_W


def test_a_solver_breakdown_is_a_typed_refusal_and_a_failed_phase_point(monkeypatch):
    """Clarabel can fail numerically (seen: d = 24, r = 4, m = 704 > d^2): the learner raises
    PrecisionLossError, not cvxpy's SolverError, and the phase sweep counts it as a failure."""
    cp = pytest.importorskip("cvxpy")
    from attnproof.bench import phase_point

    def broken(self, *args, **kwargs):
        raise cp.error.SolverError("Solver 'CLARABEL' failed.")

    monkeypatch.setattr(cp.Problem, "solve", broken)
    K, Q, v = low_rank_target(6, 1, np.random.default_rng(0))
    with pytest.raises(PrecisionLossError, match="could not be solved"):
        learn_lowrank_cvx(ValueOracle(Attention(K.T @ Q, v)), m=20, rng=np.random.default_rng(1))
    point = phase_point(6, 1, 2.0, [0])
    assert point["success"] == 0.0 and point["max_rel_err"] == float("inf")


# --- Def 2.1 (RUB) with certified brackets ------------------------------------------------------
from attnproof.theorems.lowrank.rub import (  # noqa: E402
    ensemble, recovery_condition, rub_bracket, rub_ratio,
)
from attnproof.theorems.lowrank.strategies import rop_ensembles  # noqa: E402


def test_rub_bracket_on_the_coordinate_design():
    """A(Z) = (Z_11, Z_22) (a_k = b_k = e_k): by hand, sup over all Z of (|Z_11| + |Z_22|) / 2 is
    sqrt(2) / 2 (Z = I / sqrt 2), over rank 1 it is 1/2 (u = v = e_1), and inf = 0 (Z = e_1 e_2^T)."""
    a = b = np.eye(2)
    for rank, exact in (("all", np.sqrt(2) / 2), ("1", 0.5)):
        sup = rub_bracket(a, b, rank, "sup", rtol=1e-2)
        assert sup.attained <= exact * (1 + 1e-12) and exact <= sup.certified <= exact * (1 + 1.1e-2)
        assert abs(rub_ratio(a, b, sup.Z) - sup.attained) <= 1e-12
        inf = rub_bracket(a, b, rank, "inf", rtol=1e-2)
        assert inf.certified <= 0.0 <= inf.attained <= 1e-12


@given(rop_ensembles(), st.sampled_from(["1", "all"]), seeds)
def test_rub_bracket_encloses_the_ratio_at_random_matrices(ens, rank, seed):
    """Whatever the budget, no matrix of the set has a ratio outside the certified ends."""
    a, b = ens
    d = a.shape[1]
    rng = np.random.default_rng(seed)
    lo = rub_bracket(a, b, rank, "inf", max_boxes=500)
    hi = rub_bracket(a, b, rank, "sup", max_boxes=500)
    assert lo.certified <= lo.attained <= hi.attained <= hi.certified
    for _ in range(50):
        Z = np.outer(*rng.standard_normal((2, d))) if rank == "1" else rng.standard_normal((d, d))
        assert lo.certified <= rub_ratio(a, b, Z) <= hi.certified


def test_rub_condition_refuted_by_attained_values_and_typed_errors():
    a, b = ensemble(2, 40, np.random.default_rng(0))
    cond = recovery_condition(a, b, 1)
    assert not cond.holds and cond.attained_ratio >= np.sqrt(2)  # too few measurements: refuted
    with pytest.raises(InvalidInputError):
        rub_bracket(a, b, "2", "inf")
    with pytest.raises(InvalidInputError):
        rub_bracket(a, b, "1", "max")
    with pytest.raises(InvalidInputError):
        recovery_condition(a, b, 0)
    with pytest.raises(InvalidInputError):
        ensemble(0, 3, np.random.default_rng(0))


@pytest.mark.slow
def test_rub_condition_proven_for_a_drawn_ensemble():
    cond = recovery_condition(*ensemble(2, 300, np.random.default_rng(0)), 1)
    assert cond.holds and cond.c2.certified < np.sqrt(2) * cond.c1.certified


# --- The skeleton's a-posteriori bound: its formula pinned, its looseness measured --------------
def test_measured_entries_read_as_the_dense_arrays():
    """A cross keeps its entries on the lines it asked (:class:`Measured`), not as d x d arrays: every
    block its readers take is what numpy's indexing of the d x d arrays gave -- the same values, the
    same layout (C or Fortran order: the products and solves that read them add in the same order,
    bitwise) -- the entries come in np.nonzero's order, and an entry where a row meets a column
    reads the last value written to either (a row across two stored columns, a column asked again)."""
    from attnproof.errors import InvalidInputError
    from attnproof.theorems.lowrank import Cross, Measured

    rng = np.random.default_rng(7)
    d = 9
    M, L, k, known = np.zeros((d, d)), np.zeros((d, d)), np.zeros((d, d), np.int32), np.zeros((d, d), bool)
    store = Measured.empty(d, FLOAT64)
    for kk, ll in ((rng.permutation(d)[:5], 3), (2, rng.permutation(d)[:6]), (rng.permutation(d)[:4], 7),
                   (5, np.arange(d)), (np.arange(d), 3)):
        n = len(np.atleast_1d(kk)) if np.ndim(kk) else len(ll)
        values, logits, exponents = rng.standard_normal(n), rng.standard_normal(n), rng.integers(-5, 5, n)
        M[kk, ll], L[kk, ll], k[kk, ll], known[kk, ll] = values, logits, exponents, True
        store.put(kk, ll, values, logits, exponents)
    rows, cols = store.entries()
    assert np.array_equal(rows, np.nonzero(known)[0]) and np.array_equal(cols, np.nonzero(known)[1])
    assert store.count() == known.sum()
    for part, dense in (("M", M), ("L", L), ("k", k), ("known", known)):
        got = store.at(rows, cols, part)
        assert np.array_equal(got, dense[rows, cols]) and got.dtype == dense.dtype
    I, J = [5, 2], [3, 7]
    Io, Jo = np.setdiff1d(np.arange(d), I), np.setdiff1d(np.arange(d), J)
    blocks = ((store.columns(J), M[:, J]), (store.rows_of(I), M[I, :]), (store.block(I, J), M[np.ix_(I, J)]),
              (store.block(Io, J, "F"), M.T[np.ix_(J, Io)].T),
              (store.block(I, Jo, "F"), M.T[np.ix_(Jo, I)].T))
    for got, want in blocks:
        assert np.array_equal(got, want)
        assert (got.flags.c_contiguous, got.flags.f_contiguous) == (want.flags.c_contiguous,
                                                                    want.flags.f_contiguous)
    copy = store.copy()
    copy.put(2, np.array([3]), np.array([1.5]), np.array([0.5]), np.array([1]))
    assert store.column(3)["M"][2] == M[2, 3] and copy.column(3)["M"][2] == 1.5  # the copy is its own
    assert np.array_equal(store[I, :], M[I, :]) and np.array_equal(store[np.ix_(I, J)], M[np.ix_(I, J)])
    cross = Cross(np.zeros((d, 0)), np.zeros((0, d)), M, known, L, k, [], [], None, 0.0)
    assert np.array_equal(cross.M.rows_of(range(d)), M) and cross.known is None
    with pytest.raises(InvalidInputError):
        Cross(np.zeros((d, 0)), np.zeros((0, d)), M, known, None, k, [], [], None, 0.0)


def _pinned_cross(stop_col, shift=0.0):
    """The rank-1 cross of M = [[2, 4], [1, 2]], pivot (0, 0); ``shift`` added to the measured M[0, 1]."""
    from attnproof.theorems.lowrank import Cross

    M = np.array([[2.0, 4.0 + shift], [1.0, 2.0]])  # rank 1 (shift 0): C = (2, 1)^T, R = (2, 4), U = 2
    known = np.array([[True, True], [True, False]])  # column 0, then row 0: r (2d - r) = 3 entries
    A, B = np.array([[1.0], [0.5]]), np.array([[2.0, 4.0]])
    return Cross(A, B, M, known, np.zeros((2, 2)), np.zeros((2, 2), dtype=np.int64), [0], [0],
                 stop_col, 1e-10 if stop_col is not None else 0.0, 3e-10 if stop_col is not None else 0.0)


def _gamma(n):
    u = 2.0**-53
    return n * u / (1 - n * u)


@pytest.mark.parametrize("e", [-460, -449, -400, 0, 400, 510, 513])
def test_float64_norm_one_pass_agrees_with_the_scaled_norm(e):
    """FLOAT64.norm (the skeleton's W_norm, a d x d pass) takes ``sqrt(a . a)`` when the sum of squares
    lies in [2^-900, inf), else factors out the largest entry: on both sides of either end (squares
    near 2^-920 .. 2^-898 and 2^800 .. 2^1026, entries spread over 2^+-40) it agrees with norm2, the
    power-of-two-scaled norm, to a few units in the last place."""
    from attnproof.arith import norm2

    rng = np.random.default_rng(e + 1000)
    a = np.ldexp(rng.standard_normal((30, 20)), rng.integers(-40, 1, (30, 20)) + e)
    assert FLOAT64.norm(a) == pytest.approx(float(norm2(a)), rel=8 * 2.0**-53, abs=0)


def test_cross_rounding_is_pinned():
    """_cross_rounding by hand on the rank-1 cross of _pinned_cross with R measured as (2, 4 + 2^-20)
    (B = (2, 4) computed for it).  _sliced_residual scales A's rows and B's columns to largest
    entries 1/2 (row 0 of A by 2^-1, row 1 by 2^0; B's columns by 2^-2, 2^-3): every slice but the
    first is 0, the one product is exact, and M' - P_0 is 0 but at (0, 1), where it is 2^-24 (2^-20
    scaled by 2^-4).  There the bound is (2^-24 (1 + 2u) + 2u 2^-24 + 2^-1070) (1 + 16u) scaled back:
    2^-20 (1 + 5 2^-51) after float64's roundings (u = 2^-53); elsewhere only the absolute n 2^-1070
    (1 + 16u), scaled back by 2^(a + b) and rounded up in the subnormal range: (2^(4 + a + b) + 1)
    2^-1074."""
    import attnproof.theorems.lowrank as lowrank

    cross = _pinned_cross(None, shift=2.0**-20)
    cols, rows = lowrank._cross_rounding(cross, FLOAT64)
    tiny = 2.0**-1074
    assert cols[:, 0].tolist() == [(2**7 + 1) * tiny, (2**6 + 1) * tiny]  # a + b = 1 + 2, 0 + 2
    assert rows[0].tolist() == [(2**7 + 1) * tiny, 2.0**-20 * (1 + 5 * 2.0**-51)]  # a + b = 1 + 2, 1 + 3


def test_cross_rounding_bounds_the_exact_residual_on_hostile_factors():
    """_sliced_residual against the exact residual (Fractions) where its splitting is strained: entries
    spread over 2^+-90 (most of their bits below the slices, in the remainder), exact zeros, rows and
    columns near the bottom of float64's range (their scaling underflows), and M = A B to a relative
    2^-52 (the residual cancels to its last bits)."""
    from fractions import Fraction

    import attnproof.theorems.lowrank as lowrank

    rng = np.random.default_rng(7)
    for trial in range(40):
        m, n, p = (int(x) for x in rng.integers(1, 9, 3))
        A = rng.standard_normal((m, n)) * np.ldexp(1.0, rng.integers(-90, 90, (m, n)))
        B = rng.standard_normal((n, p)) * np.ldexp(1.0, rng.integers(-90, 90, (n, p)))
        A[rng.random((m, n)) < 0.2] = 0.0
        if trial % 4 == 0:
            A = np.ldexp(A, -980)  # products near float64's subnormal range
        M = (A @ B) * (1 + rng.integers(-2, 3, size=(m, p)) * 2.0**-52)
        bound = lowrank._sliced_residual(M, A, B)
        for i in range(m):
            for j in range(p):
                exact = Fraction(M[i, j]) - sum(Fraction(A[i, k]) * Fraction(B[k, j]) for k in range(n))
                assert abs(exact) <= Fraction(float(bound[i, j]))


@given(st.integers(1, 64), st.integers(0, 2**32 - 1))
def test_slices_split_exactly_and_their_level_products_are_exact(n, seed):
    """_slices: X is the sum of its slices and remainder exactly, the remainder no larger than X, and
    the products of one level s + t (inner dimension up to S n) equal the exact sums (Fractions):
    what _sliced_residual's bound rests on."""
    from fractions import Fraction

    import attnproof.theorems.lowrank as lowrank

    rng = np.random.default_rng(seed)
    S = lowrank.PRODUCT_SLICES
    X = rng.uniform(-1, 1, (3, n)) * np.ldexp(1.0, rng.integers(-30, 1, (3, n)))
    Y = rng.uniform(-1, 1, (n, 2)) * np.ldexp(1.0, rng.integers(-30, 1, (n, 2)))
    (Xs, Xr), (Ys, _) = lowrank._slices(X, S * n), lowrank._slices(Y, S * n)
    for i in range(3):
        for k in range(n):
            assert sum(Fraction(x[i, k]) for x in [*Xs, Xr]) == Fraction(X[i, k])
    assert np.all(np.abs(Xr) <= np.abs(X))
    for level in range(2 * S - 1):
        pairs = [(s, level - s) for s in range(S) if 0 <= level - s < S]
        P = np.hstack([Xs[s] for s, _ in pairs]) @ np.vstack([Ys[t] for _, t in pairs])
        for i in range(3):
            for j in range(2):
                exact = sum(Fraction(Xs[s][i, k]) * Fraction(Ys[t][k, j]) for s, t in pairs for k in range(n))
                assert Fraction(P[i, j]) == exact


@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**32 - 1), st.integers(-60, 60))
def test_cross_rounding_bounds_the_exact_residual(d, r, seed, e):
    """_cross_rounding's bound holds against the exact residual ``M - A B`` (Fractions) of random
    float64 crosses, their skeleton entries measured with a relative 2^-52 perturbation and an
    exact product of up to r terms cancelling in the residual; scaled by 2^e (within range)."""
    from fractions import Fraction

    import attnproof.theorems.lowrank as lowrank
    from attnproof.theorems.lowrank import Cross

    rng = np.random.default_rng(seed)
    r = min(r, d)
    A, B = np.ldexp(rng.standard_normal((d, r)), e), rng.standard_normal((r, d))
    M = (A @ B) * (1 + rng.integers(-2, 3, size=(d, d)) * 2.0**-52)
    I, J = list(rng.permutation(d)[:r]), list(rng.permutation(d)[:r])
    cross = Cross(A, B, M, np.ones((d, d), bool), np.zeros((d, d)), np.zeros((d, d), dtype=np.int64),
                  [int(i) for i in I], [int(j) for j in J], None, 0.0)
    cols, rows = lowrank._cross_rounding(cross, FLOAT64)

    def exact(i, j):
        return abs(Fraction(M[i, j]) - sum(Fraction(A[i, k]) * Fraction(B[k, j]) for k in range(r)))

    for i in range(d):
        for a, j in enumerate(J):
            assert exact(i, j) <= Fraction(float(cols[i, a]))
    for a, i in enumerate(I):
        for j in range(d):
            assert exact(i, j) <= Fraction(float(rows[a, j]))


@pytest.mark.parametrize("stop_col", [None, 1])
def test_skeleton_cross_error_formula_is_pinned(monkeypatch, stop_col):
    """_cross_error on a hand-made rank-1 cross (d = 2, pivot (0, 0)): X = C/U = (1, 1/2)^T,
    Y = R/U = (1, 2).  Each skeleton entry's error is e plus the cross's rounding: A B = M exactly
    here, so that is _cross_rounding's absolute term alone (below 2^-1060, test_cross_rounding_is_pinned),
    lost in e = 1e-9: E_00 = E_10 = E_01 = e.  On the skeleton
    the error is the entries' own; the unmeasured entry (1, 1) moves by
    dC° Y° + X° dR° - X° dU Y° = 2 E_10 + E_01 / 2 + (1/2)(2) E_00 at most, so the bound
    is sqrt(E_00^2 + E_10^2 + E_01^2 + (2 E_10 + E_01 / 2 + E_00)^2).  A stop on column 1 adds
    d x (max(threshold, residual) + its largest entry error + the residual's rounding
    gamma_2(2^-53) max(|M| + |A||B|), in float64 there) = 2 (3e-10 + e + 8 gamma_2(2^-53))."""
    import types

    import attnproof.theorems.lowrank as lowrank

    e = 1e-9
    monkeypatch.setattr(lowrank, "value_errors",
                        lambda probes, L, k, entries, *a, **kw: np.full(len(entries[0]), e))
    session, probes = types.SimpleNamespace(arith=FLOAT64, rounding=NAIVE), types.SimpleNamespace(d=2)
    got = lowrank._cross_error(session, probes, _pinned_cross(stop_col), 5.0, 0.0, np.ones(2))
    E00 = E10 = E01 = e
    want = np.sqrt(E00**2 + E10**2 + E01**2 + (2 * E10 + E01 / 2 + E00) ** 2)
    want += 2 * (3e-10 + e + 8 * _gamma(2)) if stop_col is not None else 0.0
    assert abs(got - want) <= 1e-14 * want


def test_serial_lapack_restores_the_threads_and_keeps_the_norms():
    """The bounds' SVDs run one-threaded (_serial_lapack, where OpenBLAS is found): inside the block
    the calling thread's BLAS has one thread, after it the setting it had; the one-threaded
    spectral norm and singular values agree with numpy's within the bounds' 1 + 2^-20 allowance."""
    import attnproof.theorems.lowrank as lowrank

    Y = np.random.default_rng(3).standard_normal((40, 300))
    assert lowrank._spectral_norm(Y) == pytest.approx(np.linalg.norm(Y, 2), rel=2.0**-20, abs=0)
    U, sigma = lowrank._singular(Y)
    assert np.allclose(sigma, np.linalg.svd(Y, compute_uv=False), rtol=2.0**-20, atol=0)
    assert np.allclose((U * sigma**2) @ U.T, Y @ Y.T, rtol=0, atol=1e-12 * sigma[0] ** 2)  # Y Y^T = U S^2 U^T
    set_local = lowrank._blas_threads_local()
    if set_local is None:  # another BLAS (or platform): the block changes nothing
        return
    was = set_local(3)
    try:
        with lowrank._serial_lapack():
            inside = set_local(1)  # returns the setting in force: one thread
        assert (inside, set_local(3)) == (1, 3)  # the 3 put back
    finally:
        set_local(was)


def test_through_is_pinned_and_bounds_every_sign_choice():
    """_through(E, Y) >= ||S Y||_F for every |S| <= E (all 2^6 sign patterns of a 2 x 3 E), and by
    hand for Y = [[3, 0], [0, 1]] (singular vectors e_1, e_2): row e = (1, 2) gives
    min(||e|| 3, ||(1 * 3, 2 * 1)||) = min(3 sqrt 5, sqrt 13) = sqrt 13."""
    import itertools

    import attnproof.theorems.lowrank as lowrank

    by_hand = lowrank._through(np.array([[1.0, 2.0]]), np.diag([3.0, 1.0]))
    assert by_hand == pytest.approx(np.sqrt(13), rel=1e-14, abs=0)
    rng = np.random.default_rng(0)
    E, Y = rng.random((2, 3)), rng.standard_normal((3, 4))
    bound = lowrank._through(E, Y)
    worst = max(np.linalg.norm((E * np.reshape(signs, (2, 3))) @ Y)
                for signs in itertools.product((-1.0, 1.0), repeat=6))
    assert worst <= bound <= np.linalg.norm(E) * np.linalg.norm(Y, 2)


def test_cross_rounding_is_needed_for_a_rigorous_bound(monkeypatch):
    """The computed factors need not reproduce the measured skeleton: here the row B = (2, 4) was
    computed for a measured R = (2, 4 + delta) (a rounded residual update, exaggerated).  With exact
    measurements the target is the rank-1 completion of the measured skeleton, [[2, 4 + delta],
    [1, (4 + delta) / 2]], which A B misses by delta sqrt(5/4): the bound covers it through
    _cross_rounding's a-posteriori residual, and without that term it would be 0."""
    import types

    import attnproof.theorems.lowrank as lowrank

    delta = 2.0**-20
    cross = _pinned_cross(None, shift=delta)
    U, C, R = cross.M.block([0], [0])[0, 0], cross.M.columns([0]), cross.M.rows_of([0])
    truth = np.linalg.norm(cross.A @ cross.B - C @ R / U)
    assert truth == pytest.approx(delta * np.sqrt(1.25), rel=1e-12, abs=0)
    monkeypatch.setattr(lowrank, "value_errors",
                        lambda probes, L, k, entries, *a, **kw: np.zeros(len(entries[0])))
    session, probes = types.SimpleNamespace(arith=FLOAT64, rounding=NAIVE), types.SimpleNamespace(d=2)
    bound = lowrank._cross_error(session, probes, cross, 5.0, 0.0, np.ones(2))
    assert truth <= bound <= (1 + 1e-8) * truth  # + gamma_2 (|M| + |A||B|), 2e-15 against delta = 1e-6
    monkeypatch.setattr(lowrank, "_cross_rounding", lambda cross, arith: (np.zeros((2, 1)), np.zeros((1, 2))))
    assert lowrank._cross_error(session, probes, cross, 5.0, 0.0, np.ones(2)) < truth


def test_assembly_error_formula_is_pinned():
    """_assembly_error for P = Q = I (d = 2), A = (1, 1/2)^T, B = (2, 4): the basis products
    gamma_2 (|| |P| ||_2 ||A||_F ||B||_2 + ||A||_2 ||B||_F || |Q| ||_2) = 2 gamma_2 sqrt(5/4) sqrt 20
    = 10 gamma_2, their product gamma_1 || |A||B| ||_F = 5 gamma_1, and 2 (d + 4) d eps ||W||_F for
    inverses solved for (mpmath); the float64 transposes P^T, Q^T a posteriori (the residuals, the
    bases' defect 2 dP + dP^2 from _basis_rounding (two reflections, one) only in ||P^{-1}||_2);
    _basis_rounding(d) = (6 pi + 5) eps sqrt(2d) + reflections (2 gamma_d sqrt d + 2 gamma_{d+3} +
    eps sqrt d)."""
    import attnproof.theorems.lowrank as lowrank

    u = 2.0**-53
    for d, n in ((2, 1), (4, 2), (4096, 2)):
        want = (6 * np.pi + 5) * u * np.sqrt(2 * d) + n * (
            2 * _gamma(d) * np.sqrt(d) + 2 * _gamma(d + 3) + u * np.sqrt(d))
        assert lowrank._basis_rounding(d, u, n) == pytest.approx(want, rel=1e-14, abs=0)
    A, B, eye = np.array([[1.0], [0.5]]), np.array([[2.0, 4.0]]), np.eye(2)
    dP, dQ = lowrank._basis_rounding(2, u, 2), lowrank._basis_rounding(2, u, 1)
    # float64 transposes: a posteriori, F1 = A + (2^-30, 0)^T so that E1 = P F1 - A = (2^-30, 0)^T
    # (read by _verified_residual, pinned below), E2 = 0 (its split-product bound only), over
    # sqrt((1 - eta_P) (1 - eta_Q)), eta = 2 dP + dP^2; ||A||_2 = sqrt(5/4), ||B||_2 = sqrt 20
    # (times 1 + 2^-20); plus W's own gamma_1 ||F1|| ||F2||
    F1 = A + np.array([[2.0**-30], [0.0]])
    e1, e2 = lowrank._verified_residual(eye, F1, A), lowrank._verified_residual(eye, B.T, B.T)
    assert e1 == pytest.approx(2.0**-30, rel=2e-6, abs=0)
    up = 1 + 2.0**-20
    inverse = 1 / np.sqrt((1 - 2 * dP - dP**2) * (1 - 2 * dQ - dQ**2))
    want = _gamma(1) * np.linalg.norm(F1) * np.sqrt(20) + inverse * (
        e1 * (np.sqrt(20) * up + e2) + np.sqrt(1.25) * up * e2)
    got = lowrank._assembly_error(FLOAT64, (eye, eye), (eye.T, eye.T), A, B, F1, B, 5.0)
    assert got == pytest.approx(want, rel=1e-12, abs=0)
    solved = 10 * _gamma(2) + 5 * _gamma(1) + 2 * 6 * 2 * u * 5.0  # an inverse that was solved for
    assert lowrank._assembly_error(FLOAT64, (eye, eye), (eye.copy(), eye.copy()), A, B, A, B, 5.0) == \
        pytest.approx(solved, rel=1e-12, abs=0)


def test_basis_rounding_bounds_the_bases_actual_defect():
    """The learner's float64 bases P^T P - I stay within 2 dP + dP^2 (computed in longdouble,
    d = 64 and 128; measured 4e2-8e2 and 1e3-1.4e3 times below (2e3-4e3 at d = 256): the worst
    case of d-term sums, gamma_d, against their typical sqrt(d) eps growth)."""
    import attnproof.theorems.lowrank as lowrank

    for d in (64, 128):
        rng = np.random.default_rng(d)
        P, Q = lowrank.random_bases(d, rng.standard_normal(d), rng, FLOAT64)
        for basis, n in ((P, 2), (Q, 1)):
            X = basis.astype(np.longdouble)
            defect = np.linalg.norm((X.T @ X - np.eye(d)).astype(float), 2)
            dP = lowrank._basis_rounding(d, 2.0**-53, n)
            assert 0 < defect <= 2 * dP + dP**2


@pytest.mark.parametrize("d, r, seed", [(32, 2, 2), (128, 16, 6)])
def test_cross_error_propagation_is_nearly_attained(monkeypatch, d, r, seed):
    """The propagation of _cross_error is not where the bound is loose: some choice of the skeleton
    entries' errors within their per-entry bounds E (signs found by a power iteration on the
    first-order map dM -> dC Y + X dR - X dU Y) moves A B by at least half the bound (measured:
    0.62-0.87 at d = 32-256; 0.33-0.76 for the earlier triangle-inequality form, which this pin
    rejects).  What separates the bound from the true error is E itself (measure.value_errors'
    worst case per entry, 40-85 x the entries' actual errors at d = 256-1024 with faithful answers)
    and the random signs of real roundings (a further factor 8-12 there)."""
    import attnproof.theorems.lowrank as lowrank
    from attnproof.measure import value_errors

    seen = []
    error = lowrank._cross_error
    monkeypatch.setattr(lowrank, "_cross_error", lambda *a: seen.append(a) or error(*a))
    K, Q, v = low_rank_target(d, r, np.random.default_rng(seed))
    learn_skeleton(ValueOracle(FactoredAttention(K, Q, v)), rank=r, rng=np.random.default_rng(seed + 1))
    (session, probes, cross, W_norm, c_norm, unshorten, _images), = seen
    bound = error(session, probes, cross, W_norm, c_norm, unshorten)
    I, J = cross.rows, cross.cols
    used = np.zeros((d, d), dtype=bool)
    used[:, J], used[I, :] = True, True
    E = np.zeros((d, d))
    rows, cols = np.nonzero(used)
    E[rows, cols] = value_errors(probes, cross.M.at(rows, cols, "L"), cross.M.at(rows, cols, "k"),
                                 (rows, cols), W_norm,
                                 c_norm, rounding=session.rounding,
                                 images=lowrank._image_norms(cross, session.arith, unshorten)[cols])
    U = cross.M.block(I, J)
    X, Y = np.linalg.solve(U.T, cross.M.columns(J).T).T, np.linalg.solve(U, cross.M.rows_of(I))

    def move(S):
        return S[:, J] @ Y + X @ S[I, :] - X @ S[np.ix_(I, J)] @ Y

    def pull(Z):
        G = np.zeros((d, d))
        G[:, J] += Z @ Y.T
        G[I, :] += X.T @ Z
        G[np.ix_(I, J)] -= X.T @ Z @ Y.T
        return G

    S = E * used
    for _ in range(20):
        S = E * np.sign(pull(move(S)))
    assert bound / 2 <= np.linalg.norm(move(S)) <= bound


@pytest.mark.parametrize("seed", [0, 2])
def test_skeleton_bound_is_within_1e3_of_the_true_error(seed):
    """Issue 22 item 4 with faithful answers (the oracle declares FAITHFUL): the bound is within
    1e3 of the true error (measured at d = 128, r = 8, seeds 0-4: 44-284 with the faithful head's
    componentwise declaration and the a-posteriori assembly, 46-338 before; 9.3e3 before the
    per-entry model read q = W x_2's rounding through x_1 - x_2 and ||W q||, and the learner's own
    P v, Q v a posteriori).  Naive answers are out of reach by construction: an oracle keeping only the naive
    promise is itself 1e3 x worse than typical (tests/test_measure.py's checked statement)."""
    d, r = 128, 8
    K, Q, v = low_rank_target(d, r, np.random.default_rng(seed))
    rec = learn_skeleton(ValueOracle(FactoredAttention(K, Q, v, answers="faithful")), rank=r,
                         rng=np.random.default_rng(seed + 1))
    from attnproof.models import _ext_product

    error = float(np.linalg.norm((rec.W - _ext_product(K.T, Q)).astype(np.float64)))  # W* to ~2^-60
    assert error <= rec.error_bound <= 1e3 * error


def test_run_lowrank_reports_the_oracles_cost_per_query():
    """The bench row sets the oracle's time per query beside its flop count (6 d r: K x_1, K x_2,
    Q x_2), so a reader sees how close a run is to the machine (issue 21, item 4)."""
    row = run_lowrank(16, 3, seed=1)
    assert row["oracle_seconds_per_query"] * row["queries"] == pytest.approx(row["oracle_seconds"])
    assert row["oracle_flops_per_query"] == 6 * 16 * 3


def test_image_norms_are_pinned_and_scale_free():
    """_image_norms: ||D^{-1} A B e_l|| by hand for A = (1, 2)^T, B = (3, 4), D^{-1} = diag(1, 1/2)
    (D^{-1} A = (1, 1)^T): (3 sqrt 2, 4 sqrt 2); the same for A scaled by 2^-1000, whose squares
    (2^-2000) would underflow to 0 without the factors' scaling into range."""
    import types

    import attnproof.theorems.lowrank as lowrank

    cross = types.SimpleNamespace(A=np.array([[1.0], [2.0]]), B=np.array([[3.0, 4.0]]))
    unshorten = np.array([1.0, 0.5])
    want = np.array([3.0, 4.0]) * np.sqrt(2)
    assert np.allclose(lowrank._image_norms(cross, FLOAT64, unshorten), want, rtol=1e-15, atol=0)
    cross.A = cross.A * 2.0**-1000
    assert np.allclose(lowrank._image_norms(cross, FLOAT64, unshorten), want * 2.0**-1000, rtol=1e-15, atol=0)
    cross.A, cross.B = np.zeros((2, 0)), np.zeros((0, 2))  # no pivot: W = 0
    assert np.array_equal(lowrank._image_norms(cross, FLOAT64, unshorten), [0.0, 0.0])


def test_declared_rounding_bound_is_attained_by_a_shared_query_adversary(monkeypatch):
    """An oracle declaring a rounding (term 2^-40, final 2^-53) whose answers are off by the most that
    declaration allows, every error raising the logit: the query q = W x_2 pushed by
    g ||W||_F ||x_2|| along x_1 - x_2, each score's dot product by g ||x_i|| ||q||, the label by
    g (||x_1|| + ||x_2||) ||v|| (g = (d + 4) 2^-40).  The skeleton's bound holds against it and is
    attained to 0.42 (d = 16, r = 2), so a value model that drops a factor of 3 fails."""
    from attnproof.models import Rounding

    declared = Rounding("faithful", term=2.0**-40, final=2.0**-53)

    class SharedQueryAdversary(ValueOracle):
        @property
        def rounding(self) -> Rounding:
            return declared

        def _answer(self, Xb: np.ndarray) -> np.ndarray:
            y = np.asarray(self.model(Xb), dtype=np.float64)
            if Xb.shape[1] != 2:
                return y
            W, v = np.asarray(self.model.W, float), np.asarray(self.model.v, float)
            g = (self.model.d + 4) * declared.term
            x1, x2 = np.asarray(Xb[:, 0], float), np.asarray(Xb[:, 1], float)
            n1, n2, n12 = (np.linalg.norm(x, axis=1) for x in (x1, x2, x1 - x2))
            q = x2 @ W.T
            logit, pv = np.einsum("bi,bi->b", x1 - x2, q), (x1 - x2) @ v
            ds = g * (np.linalg.norm(W) * n12 * n2 + np.linalg.norm(q, axis=1) * (n1 + n2))
            dy = g * (n1 + n2) * np.linalg.norm(v)
            return y + (FLOAT64.sigmoid(logit + ds) - FLOAT64.sigmoid(logit)) * pv + np.sign(pv) * dy

    K, Q, v = low_rank_target(16, 2, np.random.default_rng(1))

    _attained_and_a_third_fails(SharedQueryAdversary, K, Q, v, monkeypatch)


def test_componentwise_faithful_bound_is_attained_by_an_adversary_within_its_declaration(monkeypatch):
    """A factored head declaring its sizes (:class:`~attnproof.models.FactorSizes`, with an
    exaggerated unit 2^-40 so the oracle's share dominates the learner's own rounding) whose answers
    are off by the most that componentwise declaration allows (measure._faithful_errors: the logit
    raised by ds, the label pushed by the value images' dw_1 + dw_2 and the readout's 7 t): the
    skeleton's bound holds against it and is attained to 0.39 (d = 16, r = 2), so a value model that
    drops a factor of 3 fails."""
    import dataclasses

    import attnproof.measure as measure
    from attnproof.models import FAITHFUL, FactorSizes

    K, Q, v = low_rank_target(16, 2, np.random.default_rng(1))
    declared = dataclasses.replace(FAITHFUL, term=2.0**-40, sizes=FactorSizes.of(K, Q, v))

    def pushed(Xb: np.ndarray, y: np.ndarray) -> np.ndarray:
        if Xb.shape[1] != 2:
            return y
        d, u = K.shape[1], declared.term
        x1, x2 = np.asarray(Xb[:, 0], float), np.asarray(Xb[:, 1], float)
        tokens = tuple((np.linalg.norm(x, axis=1), np.abs(x).sum(axis=1), np.abs(x).max(axis=1))
                       for x in (x1, x2))
        ds, dw1, dw2 = measure._faithful_errors(declared.sizes, u, d, tokens,
                                                np.linalg.norm(x1 - x2, axis=1), True, 0)
        W = K.T @ Q
        logit, pv = np.einsum("bi,bi->b", x1 - x2, x2 @ W.T), (x1 - x2) @ v
        dy = dw1 + dw2 + 7 * u * (np.abs(x1 @ v) + np.abs(x2 @ v))
        return y + (FLOAT64.sigmoid(logit + ds) - FLOAT64.sigmoid(logit)) * pv + np.sign(pv) * dy

    _attained_and_a_third_fails(declaring(declared, pushed), K, Q, v, monkeypatch)


def _mp_assembly_truth(P: np.ndarray, Q: np.ndarray, A: np.ndarray, B: np.ndarray):
    """``P^{-1} A B Q^{-T}`` to 50 digits (mpmath), as a float64 array (exact to ~1e-50 relative)."""
    import mpmath

    with mpmath.workdps(50):
        M = mpmath.inverse(mpmath.matrix(P.tolist())) * mpmath.matrix(A.tolist()) \
            * mpmath.matrix(B.tolist()) * mpmath.inverse(mpmath.matrix(Q.tolist())).T
        return np.array(M.tolist(), dtype=object)


@given(st.integers(2, 12), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_assembly_error_bounds_the_true_assembly(d, r, seed):
    """lowrank._assembly_error (float64, a posteriori: the residuals P F1 - A and F2 Q^T - B read by
    an extended-precision product) bounds ``||fl(F1 F2) - P^{-1} A B Q^{-T}||_F`` against mpmath, for
    the learner's bases (random_bases: P balanced, transposes as inverses)."""
    import attnproof.theorems.lowrank as lowrank

    rng = np.random.default_rng(seed)
    r = min(r, d)
    P, Q = lowrank.random_bases(d, rng.standard_normal(d), rng, FLOAT64)
    A, B = rng.standard_normal((d, r)), rng.standard_normal((r, d))
    F1, F2 = P.T @ A, B @ Q
    W = F1 @ F2
    bound = lowrank._assembly_error(FLOAT64, (P, Q), (P.T, Q.T), A, B, F1, F2, float(np.linalg.norm(W)))
    truth = _mp_assembly_truth(P, Q, A, B)
    error = math.sqrt(sum(float(x) ** 2 for x in (W - truth).reshape(-1)))
    assert error <= bound


def test_assembly_error_reads_a_perturbed_factor_within_a_factor_sqrt2():
    """The a-posteriori assembly bound is tight: factors F1, F2 perturbed by 1e-9 (far above
    rounding; r = 1, so ||delta f^T||_F = ||delta|| ||f|| exactly) give a true error within
    sqrt(2) of the bound (the two perturbations' terms add in the bound, in quadrature in the truth):
    a bound that dropped either residual, or either factor, fails one side."""
    import attnproof.theorems.lowrank as lowrank

    rng = np.random.default_rng(3)
    d = 10
    P, Q = lowrank.random_bases(d, rng.standard_normal(d), rng, FLOAT64)
    A, B = rng.standard_normal((d, 1)), rng.standard_normal((1, d))
    F1 = P.T @ A + 1e-9 * rng.standard_normal((d, 1))
    F2 = B @ Q + 1e-9 * rng.standard_normal((1, d))
    W = F1 @ F2
    bound = lowrank._assembly_error(FLOAT64, (P, Q), (P.T, Q.T), A, B, F1, F2, float(np.linalg.norm(W)))
    truth = _mp_assembly_truth(P, Q, A, B)
    error = math.sqrt(sum(float(x) ** 2 for x in (W - truth).reshape(-1)))
    assert error <= bound <= 1.5 * error


def test_verified_residual_is_pinned():
    """lowrank._verified_residual by hand: X = (1, 2), F = (3, 4)^T, Z = 10: the residual 11 - 10 = 1
    (exact in longdouble), times (1 + u) (1 + 2^-20), plus the split product's bound
    (measure._ext_error at d = 2: tau = 2^-26, x = (sqrt 5, 3, 2), F's column (5, 4, 7) rounded up);
    Z = 11: that bound alone."""
    import attnproof.theorems.lowrank as lowrank
    from attnproof.measure import _ext_error
    from attnproof.models import RowSizes

    u = float(np.finfo(np.longdouble).eps) / 2
    got = lowrank._verified_residual(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]]), np.array([[10.0]]))
    up = 1 + 2.0**-20
    split = _ext_error(2, u, (np.array([math.sqrt(5)]), np.array([3.0]), np.array([2.0])),
                       RowSizes(5 * up, 4 * up, 7 * up))[0]
    assert split < 1e-17
    assert got == pytest.approx((1 + u) * up + split, rel=1e-15, abs=0)
    exact = lowrank._verified_residual(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]]), np.array([[11.0]]))
    assert exact == pytest.approx(split, rel=1e-12, abs=0)  # no residual: only the product's bound


@given(st.integers(2, 40).flatmap(lambda d: st.tuples(st.just(d), st.integers(1, min(d, 4)))),
       st.integers(-20, 20), st.booleans(), seeds)
# both refuse, identically: a 2^-20 head with biases whose first column is read at 2^49 (thorough
# profile, --hypothesis-seed=19748; the refusal's own soundness: test_a_saturation_hidden_by_the_labels_...)
@example((4, 1), -20, True, 1)
def test_skeleton_pipelined_is_bitwise_the_serial_learner(dr, scale, bias, seed):
    """The skeleton learner with its probe batches written ahead while the oracle answers (``pipeline``)
    asks bitwise the queries of the serial session, in the same order and number, and
    returns bitwise the same W, v and error bound -- or refuses with the same typed error after the
    same queries; its line reports the assembly it overlapped."""
    import attnproof.measure as measure

    d, r = dr
    runs = []
    for pipeline in (False, True):
        rng = np.random.default_rng(seed)
        K, Q, v = low_rank_target(d, r, rng)
        c, beta = (rng.standard_normal(d), 0.5) if bias else (None, None)
        oracle = ValueOracle(FactoredAttention(K * 2.0**scale, Q, v, c=c, beta=beta), record=True)
        real = measure.BilinearSession.__post_init__

        def serial(self, real=real, pipeline=pipeline):
            real(self)
            self.pipeline = pipeline

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(measure.BilinearSession, "__post_init__", serial)
            try:
                outcome = learn_skeleton(oracle, rank=r, rng=rng, bias=bias)
            except PrecisionLossError as exc:  # a refusal is an outcome too: the same one, or a failure
                outcome = exc
        runs.append((outcome, oracle.queries, oracle.log))
    (a, queries_a, log_a), (b, queries_b, log_b) = runs
    assert queries_a == queries_b and len(log_a) == len(log_b)
    for x, y in zip(log_a, log_b, strict=True):
        assert np.array_equal(x.X, y.X) and np.array_equal(x.y, y.y)
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b) and str(a) == str(b)
        return
    assert a.queries == b.queries == queries_a
    assert np.array_equal(a.W, b.W) and np.array_equal(a.v, b.v) and a.error_bound == b.error_bound
    assert "overlapped_assembly" not in a.diagnostics and b.diagnostics["overlapped_assembly"] > 0


def test_the_low_rank_line_shows_the_oracle_cost_per_query_and_the_overlapped_assembly():
    """The human line of a low-rank run sets the oracle's time per query beside its 6 d r flops and
    says how much of the learner's probe assembly ran inside the oracle's wall time (issue 21,
    item 4: learner/oracle is wall clock, so that work is named)."""
    from attnproof.cli import _describe

    row = run_lowrank(16, 3, seed=1)
    line = _describe(row)
    seconds = row["oracle_seconds_per_query"]
    rate = 288 / seconds / 1e9
    assert f"oracle {seconds * 1e6:.1f} us/query for 6 d r = 288 flop ({rate:.1f} Gflop/s)" in line
    assert "overlapped" not in line and "overlapped_assembly" not in row["diagnostics"]  # serial by default


def _attained_and_a_third_fails(
    adversary: type, K: np.ndarray, Q: np.ndarray, v: np.ndarray, monkeypatch
) -> None:
    """The skeleton's bound (d = 16, r = 2) holds against ``adversary`` and is attained to at least
    a quarter; with the value model divided by 3 the same adversary breaks it."""
    import attnproof.theorems.lowrank as lowrank

    def ratio() -> float:
        oracle = adversary(FactoredAttention(K, Q, v))
        rec = learn_skeleton(oracle, rank=2, rng=np.random.default_rng(2))
        return float(np.linalg.norm(rec.W - K.T @ Q) / rec.error_bound)

    assert 0.25 <= ratio() <= 1
    true_model = lowrank.value_errors
    monkeypatch.setattr(lowrank, "value_errors", lambda *a, **k: true_model(*a, **k) / 3)
    assert ratio() > 1
