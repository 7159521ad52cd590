"""Properties that the mutation run (``tools/mutation.py``) found unguarded.

Each test states a contract of the public API: a scoring definition, an oracle's counting or
adversary, a constant's defining formula, a tolerance's promise, a scale policy's landing
interval, a learner's query count.  ``mutation/SURVIVORS.md`` lists which mutant each one kills.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnproof.arith import FLOAT64
from attnproof.errors import DegenerateProbeError, PrecisionLossError
from attnproof.measure import PILOT_SLACK, BilinearSession, ScalePolicy
from attnproof.models import Attention, attention_weights
from attnproof.oracles import ApproxOracle, ValueOracle
from attnproof.recovery import MultiHeadRecovery, Recovery, score, score_heads
from attnproof.theorems.exact import learn_exact, probe_matrix
from attnproof.theorems.lowrank import learn_skeleton
from attnproof.theorems.noisy import (
    CORRECTED,
    TUNED,
    design_tolerances,
    float64_floor,
    guarantee,
    learn_noisy,
)

seeds = st.integers(0, 2**32 - 1)
EPS = np.finfo(float).eps


# --- scoring (recovery.py) ------------------------------------------------------------------


@given(st.integers(2, 6), seeds)
def test_score_err_W_is_the_frobenius_norm_of_the_difference(d, seed):
    """err_W and err_v are Frobenius / 2-norms, not the largest entry (which they exceed for d >= 2)."""
    rng = np.random.default_rng(seed)
    W, v = rng.standard_normal((d, d)), rng.standard_normal(d)
    dW, dv = rng.standard_normal((d, d)), rng.standard_normal(d)
    s = score(Recovery(W=W + dW, v=v + dv, queries=0, arith=FLOAT64), W, v)
    # rounding: forming W + dW - W costs an ulp of |W| + |dW| per entry, the norm a few more
    tol_W = 4 * d * EPS * (np.linalg.norm(W) + np.linalg.norm(dW))
    tol_v = 4 * d * EPS * (np.linalg.norm(v) + np.linalg.norm(dv))
    assert abs(s.err_W - np.linalg.norm(dW)) <= tol_W
    assert abs(s.err_v - np.linalg.norm(dv)) <= tol_v
    assert s.err_W > np.abs(dW).max() + tol_W  # a d x d Gaussian difference has more than one entry


@given(st.integers(1, 5), st.integers(-30, 30), st.integers(1, 40), seeds)
def test_bits_are_binary_digits_of_agreement(d, top_exp, err_exp, seed):
    """max |W*| = 2^a and an error 2^(a - b) in one entry is b bits (powers of two: log2 is exact);
    the same for a multi-head score.  Positive: more bits means a better recovery."""
    rng = np.random.default_rng(seed)
    W = np.ldexp(rng.uniform(-1, 1, (d, d)), top_exp)
    i, j = rng.integers(d, size=2)
    W[i, j] = 2.0**top_exp  # the largest entry, exactly
    v = np.ones(d)
    W_hat = W.copy()
    W_hat[i, j] += 2.0 ** (top_exp - err_exp)  # exact: one bit of W[i, j] at position -err_exp
    rec = Recovery(W=W_hat, v=v, queries=0, arith=FLOAT64)
    assert score(rec, W, v).bits_W == err_exp
    heads = MultiHeadRecovery(heads=(rec,), bases=(np.eye(d),), queries=0, arith="float64")
    # score_heads counts against the largest entry of W* and v* = 1: 2^max(a, 0)
    expected = max(top_exp, 0) - top_exp + err_exp
    assert score_heads(heads, [(W, v)], FLOAT64)["bits"] == expected


# --- oracles.py -------------------------------------------------------------------------------


def test_approx_oracle_counts_a_repeated_query():
    """Every query is counted, also one the oracle remembers (its answer is then the same)."""
    rng = np.random.default_rng(0)
    model = Attention(rng.standard_normal((3, 3)), rng.standard_normal(3))
    for adversary in ("worst", "random", "bias", "round"):
        oracle = ApproxOracle(model, tau=1e-3, adversary=adversary)
        X = rng.standard_normal((4, 2, 3))
        first = oracle(X)
        again = oracle(np.concatenate([X[:2], rng.standard_normal((1, 2, 3))]))
        assert oracle.queries == 7
        assert np.array_equal(again[:2], first[:2])


@given(st.integers(1, 6), seeds)
def test_worst_adversary_moves_the_implied_attention_weight_away_from_one_half(d, seed):
    """For two tokens the error eta = y - f shifts alpha_1 = (y - x_2^T v) / ((x_1 - x_2)^T v)
    by eta / slope: the worst adversary pushes it away from 1/2 by the full tau / |slope|."""
    rng = np.random.default_rng(seed)
    W, v = rng.standard_normal((d, d)), rng.standard_normal(d)
    model = Attention(W, v)
    tau = 1e-4
    oracle = ApproxOracle(model, tau=tau, adversary="worst")
    X = rng.standard_normal((16, 2, d))
    eta = oracle(X) - model(X)
    slope = (X[:, 0, :] - X[:, 1, :]) @ v
    alpha1 = attention_weights(X, W, FLOAT64)[:, 0]
    shift = eta / slope
    ok = np.abs(alpha1 - 0.5) > 1e-12
    assert np.all(shift[ok] * (alpha1[ok] - 0.5) > 0)
    # |eta| = tau up to the rounding of f + eta (an ulp of f, and the step back inside the band)
    assert np.allclose(np.abs(eta), tau, rtol=0, atol=4 * np.spacing(np.abs(model(X)).max()))


# --- Thm 6.1 (theorems/noisy/__init__.py) ------------------------------------------------------------


@pytest.mark.parametrize("design", [CORRECTED, TUNED], ids=lambda x: x.name)
def test_lipschitz_constant_is_the_logit_slope_at_the_clip(design):
    """Lemma A.1: L = max of (sigma^{-1})' = 1 / (p (1 - p)) over [p_clip, 1 - p_clip], reached at
    the clip p_clip = 1 / (1 + e^band); evaluated here from the definition, not the closed form."""
    p = 1 / (1 + math.exp(design.band))
    assert design.lipschitz == pytest.approx(1 / (p * (1 - p)), rel=16 * EPS, abs=0)
    grid = np.linspace(p, 1 - p, 1001)
    assert design.lipschitz >= (1 / (grid * (1 - grid))).max() * (1 - 16 * EPS)


@given(st.integers(1, 8), st.floats(1e-6, 1e-2), st.sampled_from([CORRECTED, TUNED]))
def test_design_tolerance_tau_v_delivers_eps_v(d, eps_v, design):
    """``sqrt(d) (tau_v + floor) <= eps_v``: every entry of v_hat within tau_v plus float64's floor,
    so ||v_hat - v*||_2 <= eps_v, whatever eps_W allows for W."""
    W_bound, mu, eps_W = 2.0, 0.5 / math.sqrt(d), 0.5
    tol = design_tolerances(design, eps_W, eps_v, W_bound, mu, d)
    floor = float64_floor(design, W_bound, d)
    assert math.sqrt(d) * (tol.tau_v + floor.tau) <= eps_v


@pytest.mark.parametrize("d", [1, 4, 9])
def test_noisy_learner_refuses_an_eps_v_that_only_float64_rounding_breaks(d):
    """eps_v between the proven sqrt(d) tau and the float64 total sqrt(d) (tau + floor): the exact
    analysis would deliver it, float64 cannot, so the learner refuses before any query."""
    W_bound, mu, tau = 2.0, 0.5 / math.sqrt(d), 1e-6
    floor = float64_floor(CORRECTED, W_bound, d)
    eps_v = math.sqrt(d) * (tau + floor.tau / 2)
    assert math.sqrt(d) * tau <= eps_v < math.sqrt(d) * (tau + floor.tau)
    rng = np.random.default_rng(d)
    oracle = ApproxOracle(Attention(rng.standard_normal((d, d)) * 0.1, np.full(d, mu)), tau=tau)
    with pytest.raises(PrecisionLossError, match="eps_v"):
        learn_noisy(oracle, W_bound=W_bound, mu=mu, eps_W=0.9, eps_v=eps_v)
    assert oracle.queries == 0


def _margin_target(d: int, zeros: int, mu: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """v* with ``zeros`` zero entries and every other |v*_i| exactly mu (the margin's edge)."""
    v = mu * rng.choice([-1.0, 1.0], d)
    v[rng.choice(d, zeros, replace=False)] = 0.0
    W = rng.standard_normal((d, d))
    return W / np.linalg.norm(W) * 1.5, v


@pytest.mark.parametrize("design", [CORRECTED, TUNED], ids=lambda x: x.name)
@pytest.mark.parametrize("seed", range(4))
def test_noisy_learner_splits_zero_and_margin_entries_of_v_exactly(design, seed):
    """|v*_i| = mu answered pulled towards 0 by the worst adversary is still non-zero, and v*_i = 0
    still zero (the split sits at mu / 2, tau away from both): the paired rows are exactly the
    zero entries, and both guarantees hold."""
    rng = np.random.default_rng(seed)
    d, mu, eps_W, eps_v = 4, 0.4, 0.1, 0.05
    W, v = _margin_target(d, 1 + seed % 2, mu, rng)
    tol = design_tolerances(design, eps_W, eps_v, 2.0, mu, d)
    oracle = ApproxOracle(Attention(W, v), tau=tol.tau, adversary="worst")
    rec = learn_noisy(oracle, W_bound=2.0, mu=mu, eps_W=eps_W, eps_v=eps_v, design=design)
    assert rec.diagnostics["paired_rows"] == int(np.sum(v == 0))
    achieved = guarantee(rec, W, v)
    assert achieved["err_W"] <= eps_W and achieved["err_v"] <= eps_v


def test_noisy_learner_meets_eps_v_at_the_designed_tolerance():
    """eps_v much finer than eps_W: the designed tau still delivers ||v_hat - v*||_2 <= eps_v
    against the worst adversary (tau_v must carry eps_v / sqrt(d))."""
    rng = np.random.default_rng(3)
    d, mu, eps_W, eps_v = 4, 0.3, 0.5, 1e-4
    v = rng.uniform(mu, 0.5, d) * rng.choice([-1.0, 1.0], d)
    W = rng.standard_normal((d, d))
    W = W / np.linalg.norm(W) * 1.9
    for design in (CORRECTED, TUNED):
        tol = design_tolerances(design, eps_W, eps_v, 2.0, mu, d)
        oracle = ApproxOracle(Attention(W, v), tau=tol.tau, adversary="worst")
        rec = learn_noisy(oracle, W_bound=2.0, mu=mu, eps_W=eps_W, eps_v=eps_v, design=design)
        achieved = guarantee(rec, W, v)
        assert achieved["err_v"] <= eps_v and achieved["err_W"] <= eps_W


# --- Thm 4.1 probes and the scale policy (theorems/exact/__init__.py, measure.py) ---------------------


def test_gaussian_probes_redraw_the_documented_eight_percent_of_rows():
    """A row is redrawn when |u^T v| < ||v|| / 10: for d = 1 (cond = 1, no matrix redraws) each
    draw fails with p = P(|z| < 0.1) = erf(0.1 / sqrt 2) ~ 0.08, so n probe matrices redraw a
    geometric total of mean n p / (1 - p); the count must sit within 6 standard deviations."""
    rng = np.random.default_rng(0)
    n = 2000
    total = sum(probe_matrix("gaussian", np.array([1.0]), FLOAT64, rng)[1]["redrawn_rows"] for _ in range(n))
    p = math.erf(0.1 / math.sqrt(2))
    mean, sd = n * p / (1 - p), math.sqrt(n * p) / (1 - p)
    assert abs(total - mean) <= 6 * sd


@pytest.mark.parametrize("d", [12, 16, 32])
def test_custom_probe_within_dot_product_rounding_of_v_perp_is_refused(d):
    """A custom probe row with |u^T v| = d eps ||u|| ||v|| -- the rounding bound of a d-term dot
    product, so indistinguishable from u^T v = 0 -- is refused.  v = e_1 makes u^T v = u_1
    exactly; the other rows (e_1, e_1 + e_j) keep Z well conditioned, so the refusal is about u."""
    v = np.zeros(d)
    v[0] = 1.0
    Z = np.zeros((d, d))
    Z[0, 1] = 1.0
    Z[0, 0] = d * EPS * np.linalg.norm(Z[0])
    Z[1:, 0] = 1.0
    Z[np.arange(2, d), np.arange(2, d)] = 1.0
    assert np.linalg.cond(Z) < 10 * d
    with pytest.raises(DegenerateProbeError, match="u_0 has u"):
        probe_matrix(Z, v, FLOAT64, None)


@pytest.mark.parametrize(
    "scale,bias", [(1e-3, False), (1e-5, False), (1e-7, False), (1e-3, True), (1e3, True)]
)
def test_the_learned_scale_lands_far_targets_below_saturation_within_the_slack(scale, bias):
    """W* far from unit scale: the learner learns its size from the first measurements, so every
    accepted logit stays below the policy's ``accept`` level and the re-asks stay within
    PILOT_SLACK (a scale that overshoots saturates probes and re-asks them; one that undershoots
    loses the measurements to rounding)."""
    rng = np.random.default_rng(7)
    d, policy = 4, ScalePolicy()
    W, v = scale * rng.standard_normal((d, d)), rng.standard_normal(d)
    model = Attention(W, v, c=rng.standard_normal(d), beta=0.0) if bias else Attention(W, v)
    rec = learn_exact(ValueOracle(model), probes="gaussian", rng=rng, bias=bias)
    diag = rec.diagnostics
    assert diag["reasked_queries"] <= PILOT_SLACK
    assert policy.ceiling / 4 <= diag["max_abs_logit"] <= policy.accept


@pytest.mark.parametrize("c_scale", [0.0, 1e-20, 1e-10])
@pytest.mark.parametrize("d", [4, 16])
def test_a_zero_or_tiny_score_bias_costs_no_prelude_reasks(d, c_scale):
    """A head declared with biases whose score bias c* is 0 (or far below rounding at s = 1)
    answers the c^T p prelude with logits lost to rounding.  c^T p enters the later logits
    unscaled, so such a reading is good enough (within its bound ``error_bound_c``); before the
    fix the prelude searched for a scale that reads it, moving each probe up to 2^max_k (80
    re-asks at d = 4 and 168 at d = 16 for c* = 0; 12 and 32 for c* ~ 1e-20, whose error then
    exceeded error_bound_c 8-40 times)."""
    rng = np.random.default_rng(7)
    W, v = rng.standard_normal((d, d)), rng.standard_normal(d)
    model = Attention(W, v, c=c_scale * rng.standard_normal(d), beta=0.0)
    rec = learn_exact(ValueOracle(model), probes="gaussian", rng=rng, bias=True)
    assert rec.diagnostics["reasked_queries"] <= PILOT_SLACK
    assert np.linalg.norm(rec.c - model.c) <= rec.diagnostics["error_bound_c"]
    assert np.linalg.norm(rec.W - W) <= rec.diagnostics["error_bound"]


# --- Thm 5.1 (theorems/lowrank/__init__.py) ----------------------------------------------------------


@pytest.mark.parametrize("ratio", [1e-3, 1e-5, 1e-7])
def test_skeleton_keeps_a_weak_component_above_float64_resolution(ratio):
    """sigma_2 / sigma_1 = ratio, far above sqrt(eps) ~ 1.5e-8: the declared rank 2 is found and
    W* recovered to the relative accuracy of a well-conditioned target (not cut at rank 1)."""
    rng = np.random.default_rng(11)
    d = 6
    U, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    V, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    W = U @ np.diag([1.0, ratio]) @ V.T
    v = rng.standard_normal(d)
    rec = learn_skeleton(ValueOracle(Attention(W, v)), rank=2, rng=rng)
    assert rec.diagnostics["rank_found"] == 2
    s = score(rec, W, v)
    assert s.err_W <= rec.error_bound
    assert s.rel_err_W < 1e-9  # the accuracy tests/test_lowrank.py asks of generic targets


@given(st.integers(1, 8).flatmap(lambda d: st.tuples(st.just(d), st.integers(1, d))), seeds)
def test_registered_count_of_the_biased_skeleton_is_what_the_oracle_counted(dr, seed):
    """The learner's queries_formula (the registered count: v and beta with d + 1 one-token
    queries, f([0]) included, then d + r(2d - r)) plus its re-asked probes is the oracle's count."""
    d, r = dr
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, r)) @ rng.standard_normal((r, d))
    model = Attention(W, rng.standard_normal(d), c=rng.standard_normal(d), beta=float(rng.standard_normal()))
    oracle = ValueOracle(model)
    rec = learn_skeleton(oracle, rank=r, rng=rng, bias=True)
    assert rec.diagnostics["queries_formula"] + rec.diagnostics["reasked_queries"] == oracle.queries


# --- the sampled mutants of the run at seed 7 (mutation/SURVIVORS.md) -------------------------------


def test_score_of_a_zero_target_is_zero_when_exact_and_infinite_otherwise():
    """rel_err = err / ||truth||, with ||truth|| = 0: 0 for an exact recovery, inf for any error
    (here err_W = ||1 e_11||_F = 1 exactly and err_v = ||(0, 0)|| = 0)."""
    W0, v0 = np.zeros((2, 2)), np.zeros(2)
    exact = score(Recovery(W=W0.copy(), v=v0.copy(), queries=0, arith=FLOAT64), W0, v0)
    assert (exact.rel_err_W, exact.rel_err_v) == (0.0, 0.0)
    W1 = W0.copy()
    W1[0, 0] = 1.0
    off = score(Recovery(W=W1, v=v0.copy(), queries=0, arith=FLOAT64), W0, v0)
    assert off.err_W == 1.0 and off.rel_err_W == math.inf and off.rel_err_v == 0.0


@pytest.mark.parametrize("d", [0, -1])
def test_an_oracle_refuses_a_model_of_width_below_one(d):
    """Widths d < 1 are refused at construction (d = 0 just past the threshold d >= 1); d = 1 is taken."""
    from attnproof.errors import InvalidInputError

    class Width:
        arith = FLOAT64

        def __init__(self, d):
            self.d = d

        def __call__(self, X):
            return np.zeros(len(X))

    with pytest.raises(InvalidInputError):
        ValueOracle(Width(d))
    assert ValueOracle(Width(1)).queries == 0


def test_transformer_runner_times_its_learner_within_the_wall_clock():
    """``seconds`` is the learner's wall time: at least the oracle's share, at most the time the
    whole run took, measured around it."""
    import time

    from attnproof.theorems.transformer.runner import run_transformer

    t0 = time.perf_counter()
    out = run_transformer(2, seed=0)
    wall = time.perf_counter() - t0
    assert 0.0 <= out["oracle_seconds"] <= out["seconds"] <= wall
    assert out["learner_seconds"] == out["seconds"] - out["oracle_seconds"]


def test_membership_monotone_claim_is_the_derivative_at_the_chosen_s():
    """thmB.1/monotone checks sign(alpha) F'(a) > 0 at s = -sign(alpha) / (2W), with F'(a) = alpha -
    sigma(W_ij s) s / a^2 (thmB.1/monotone-derivative).  By hand: -sign(alpha) sigma(W_ij s) s / a^2
    = sigma(W_ij s) / (2 W a^2), so each claim is |alpha| + sigma(-sign(alpha) W_ij / (2W)) / (2 W a^2):
    the a^-2 is what makes F blow up as a -> 0 (a claim without it is a different, weaker statement)."""
    import sympy as sp

    from attnproof.theorems.membership.identities import monotone

    a, Wb, beta = sp.symbols("a W beta", positive=True)
    w = sp.Symbol("W_ij", real=True)
    claims = monotone()
    assert len(claims) == 2
    for sign, (_, expr) in zip((1, -1), claims):
        sigma = 1 / (1 + sp.exp(sign * w / (2 * Wb)))  # sigma(W_ij s), s = -sign / (2W)
        assert sp.simplify(expr - (beta + sigma / (2 * Wb * a**2))) == 0


@pytest.mark.parametrize("reflections", [0, 1, 2])
def test_basis_rounding_is_the_documented_dct_and_reflection_sum(reflections):
    """_basis_rounding at d = 8, eps = 2^-52, by hand from its docstring: the DCT's d^2 = 64 entries
    each within (6 pi + 5) eps sqrt(2 / 8) = (6 pi + 5) eps / 2 give a Frobenius bound of
    8 (6 pi + 5) eps / 2 = 4 (6 pi + 5) eps (= (6 pi + 5) eps sqrt(2 d)); each reflection adds
    2 gamma_8 sqrt(8) + 2 gamma_11 + eps sqrt(8), gamma_n = n eps / (1 - n eps)."""
    from attnproof.theorems.lowrank import DCT_ENTRY_ROUNDING, _basis_rounding

    eps = 2.0**-52
    assert DCT_ENTRY_ROUNDING == 6 * math.pi + 5  # 3 x 2 pi (the angle), 2 (cos), 3 (the scaling)
    dct = 4 * (6 * math.pi + 5) * eps
    gamma_8, gamma_11 = 8 * eps / (1 - 8 * eps), 11 * eps / (1 - 11 * eps)
    per_reflection = 2 * gamma_8 * math.sqrt(8) + 2 * gamma_11 + eps * math.sqrt(8)
    expected = dct + reflections * per_reflection
    assert _basis_rounding(8, eps, reflections) == pytest.approx(expected, rel=1e-14, abs=0)


def test_exact_error_bound_is_inverse_norm_times_dT_plus_the_solves_rounding(monkeypatch):
    """Thm 4.1's bound ||W_hat - W*||_F <= ||Z^{-1}||_2 ||dT||_F + g cond(Z) ||W||_F, g = (d + 4) u
    (u = 2^-53, float64's unit roundoff), pinned at fixed inputs with the per-entry value errors
    dT held at 1 (16 entries: ||dT||_F = 4) and those of t = Z c at 2 (||.|| = 4).  By hand, d = 4,
    W = 2 I (||W||_F = 4), c = (1, 1, 1, 1) (||c|| = 2), ||Z^{-1}|| <= 3, ||Z|| <= 5 (cond 15):
    W: 4 * 3 + 8 u * 15 * 4 = 12 + 480 u;  c: 4 * 3 + 8 u * 15 * 2 = 12 + 240 u."""
    from types import SimpleNamespace

    import attnproof.theorems.exact as exact

    u = 2.0**-53
    monkeypatch.setattr(exact, "value_errors", lambda *args, **kwargs: np.ones(16))
    probes = SimpleNamespace(arith=FLOAT64, d=4, linear_err=np.full(4, 2.0))
    W_bound, c_bound, cond = exact._error_bound(probes, 2 * np.eye(4), np.ones(4), None, None, 3.0, 5.0)
    assert cond == 15.0
    assert W_bound == pytest.approx(12 + 480 * u, rel=1e-15, abs=0)
    assert c_bound == pytest.approx(12 + 240 * u, rel=1e-15, abs=0)
    assert W_bound > 12 and c_bound > 12  # the solve's share is there, not rounded away


def test_gaussian_probe_margin_scales_with_the_norm_of_v():
    """The margin is relative: |u^T v| < ||v|| / 10.  With v = (4) (d = 1): |4 z| < 0.4 iff |z| < 0.1, the
    same p = erf(0.1 / sqrt 2) ~ 0.08 as for a unit v (an absolute 0.1, or 0.1 / ||v||, would give
    p(|z| < 0.025) ~ 0.02 or p(|z| < 0.00625) ~ 0.005: 20+ standard deviations off at n = 2000)."""
    rng = np.random.default_rng(1)
    n = 2000
    total = sum(probe_matrix("gaussian", np.array([4.0]), FLOAT64, rng)[1]["redrawn_rows"] for _ in range(n))
    p = math.erf(0.1 / math.sqrt(2))
    mean, sd = n * p / (1 - p), math.sqrt(n * p) / (1 - p)
    assert abs(total - mean) <= 6 * sd


@pytest.mark.parametrize("answers", ["naive", "faithful"])
def test_a_heads_score_bias_adds_c_transpose_x_i(answers):
    """Scores x_i^T W x_N + c^T x_i (Sec. 3 with biases), in both evaluations.  By hand, d = 1, W = 0,
    v = 1, c = 1 on X = [(1), (0)] (x_N = 0): scores (1, 0), weights (e, 1) / (e + 1), f = e / (e + 1)
    = sigma(1); with beta = 1/2 it is sigma(1) + 1/2 (a subtracted c would give sigma(-1))."""
    sigma1 = 1 / (1 + math.exp(-1.0))
    model = Attention(np.zeros((1, 1)), np.ones(1), c=np.ones(1), beta=0.5, answers=answers)
    assert model(np.array([[[1.0], [0.0]]]))[0] == pytest.approx(sigma1 + 0.5, rel=4 * EPS, abs=0)


def test_worst_adversary_answers_a_one_token_query_towards_zero():
    """A one-token query x has f = v^T x; the worst adversary answers f - tau sign(f) (towards 0):
    v = (1), tau = 1/4 (exact in float64): f(2) = 2 -> 7/4, f(-2) = -2 -> -7/4."""
    oracle = ApproxOracle(Attention(np.eye(1), np.ones(1)), tau=0.25, adversary="worst")
    assert list(oracle(np.array([[[2.0]], [[-2.0]]]))) == [1.75, -1.75]


# --- the seed-7 sample's survivors (SURVIVORS.md) ---------------------------------------------


@pytest.mark.parametrize("d", [4, 16])
def test_typical_estimate_charges_w_x2_rounding_as_frobenius_over_d(d):
    """value_errors' typical model (``Wq`` given): W x_2 is computed once, each entry off by about
    eps' ||W||_F ||x_2|| / sqrt(d) (eps' = eps / sqrt 3, the RMS of a uniform rounding; a spread
    W x_2), and that error meets the logit through (x_1 - x_2)^T = s p^T, a dot product of
    size ||s p|| ||dy|| / sqrt(d): eps' ||W||_F ||x_2|| ||s p|| / d.  At s = 1 (k = 0), p = e_1,
    q = e_1 (||x_2|| = 1), c = 0 and ||W q|| = 0 (Wq = 0) that is the only term growing with
    ||W||_F, added in quadrature: est(w)^2 - est(0)^2 = (eps' w / d)^2."""
    from attnproof.measure import Probes, value_errors

    v = np.zeros(d)
    v[0] = 1.0
    probes = Probes(np.eye(d)[:1], None, v, FLOAT64)
    idx = np.zeros(1, dtype=int)
    L, k = np.zeros(1), np.zeros(1, dtype=int)

    def estimate(W_norm: float) -> float:
        return float(value_errors(probes, L, k, (idx, idx), W_norm, 0.0, Wq=np.zeros(1))[0])

    w = 1e9  # the W x_2 term then dominates the label's and the logit's own (~eps)
    expected = EPS / 2 / math.sqrt(3) * w / d  # resolution 2^-53 = EPS / 2
    assert expected > 1e6 * estimate(0.0)
    assert math.sqrt(estimate(w) ** 2 - estimate(0.0) ** 2) == pytest.approx(expected, rel=1e-9, abs=0)


@pytest.mark.parametrize("route", ["antisymmetric", "cone"])
def test_transformer_end_to_end_counts_reasks_on_top_of_the_formula(monkeypatch, route):
    """sec4.1/end-to-end accepts a run whose queries are the formula plus the re-asks it reports
    (queries = formula + reasked, the transformer room's count rule), and refuses one short of that.
    In exact sympy runs the learner re-asks nothing, so the rule is pinned with a stand-in learner:
    formula 10, 3 re-asks -> 13 queries accepted, 12 refused (a rule formula - reasked accepts 7)."""
    from types import SimpleNamespace

    import attnproof.theorems.transformer.identities as ti

    def fake(queries):
        return lambda *a, **kw: SimpleNamespace(
            W=np.zeros((2, 2)), queries=queries,
            diagnostics={"route": route, "queries_formula": 10, "reasked_queries": 3})

    ffns = {"antisymmetric": ([[1, -1, 2], [1, 1, 0]], [1, -2, 1]), "cone": ([[1, -1], [2, -2]], [1, 1])}
    A, w_o = ffns[route]
    monkeypatch.setattr(ti, "learn_transformer", fake(13))
    assert len(ti._transformer_end_to_end(A, w_o, route)) == 4
    for wrong in (12, 7):
        monkeypatch.setattr(ti, "learn_transformer", fake(wrong))
        with pytest.raises(AssertionError, match="bad count"):
            ti._transformer_end_to_end(A, w_o, route)


def _unit_kinds(A: np.ndarray, w: np.ndarray) -> set[str]:
    """The kinds of unit of an FFN w^T ReLU(A^T x) (columns a_k of A), found from their definitions:
    a zero column with w_k != 0, a dead unit (w_k = 0, a_k != 0), two columns that are positive /
    negative multiples (parallel / antiparallel), an antiparallel pair whose ReLUs cancel to a linear
    term (a_k = t a_j, t < 0: w_j ReLU(z) + w_k |t| ReLU(-z) is w_j z iff w_j = -|t| w_k = t w_k), a zero-sum
    triple (three live units, sum w_k a_k = 0, no two parallel), m < d, m > d."""
    import itertools

    import sympy as sp

    A = sp.Matrix(A)
    w = list(map(sp.nsimplify, w))
    d, m = A.shape
    cols = [A[:, k] for k in range(m)]
    kinds = {"m < d"} if m < d else ({"m > d"} if m > d else set())
    kinds |= {"zero column" for k in range(m) if cols[k].is_zero_matrix and w[k] != 0}
    kinds |= {"dead" for k in range(m) if w[k] == 0 and not cols[k].is_zero_matrix}
    live = [k for k in range(m) if w[k] != 0 and not cols[k].is_zero_matrix]
    for j, k in itertools.combinations(live, 2):
        if sp.Matrix.hstack(cols[j], cols[k]).rank() == 1:
            t = next(cols[k][i] / cols[j][i] for i in range(d) if cols[j][i] != 0)
            kinds.add("parallel" if t > 0 else "antiparallel")
            if t < 0 and w[j] == t * w[k]:
                kinds.add("linear pair")
    for trio in itertools.combinations(live, 3):
        if sum((w[k] * cols[k] for k in trio), sp.zeros(d, 1)).is_zero_matrix and all(
                sp.Matrix.hstack(cols[j], cols[k]).rank() == 2 for j, k in itertools.combinations(trio, 2)):
            kinds.add("zero-sum triple")
    return kinds


def test_exact_ffn_targets_cover_the_kinds_their_identities_claim():
    """EXACT_FFN_TARGETS (sec4.1/canonical-form, sec4.1/ffn-end-to-end) promise: parallel units merged,
    an antiparallel unit on the same hyperplane, a zero column and a dead unit; a zero-sum triple;
    an antiparallel pair cancelling to a linear term; m < d; m > d.  Each target in that order has
    its kinds, found from the definitions (a changed entry can silently drop a kind the identities
    then no longer cover)."""
    from attnproof.theorems.transformer.identities import EXACT_FFN_TARGETS

    promised = [{"parallel", "antiparallel", "zero column", "dead"}, {"zero-sum triple"},
                {"antiparallel", "linear pair"}, {"m < d"}, {"m > d"}]
    assert len(EXACT_FFN_TARGETS) == len(promised)
    for (A, w), kinds in zip(EXACT_FFN_TARGETS, promised):
        assert kinds <= _unit_kinds(np.array(A, dtype=object), np.array(w, dtype=object))


@given(st.data())
def test_zero_sum_ffn_targets_end_in_a_live_zero_sum_triple(data):
    """ffn_targets' zero_sum kind appends W2 (two units, weights a2) and -(W2 a2) (weight 1): three
    units with sum w_k a_k = 0, each with a non-zero weight (a zero weight in a2 would make the
    triple a dead unit and a pair: not the kind)."""
    from attnproof.theorems.transformer.strategies import ffn_targets

    A, w, kind = data.draw(ffn_targets(kinds=("zero_sum",), exact=data.draw(st.booleans())))
    assert kind == "zero_sum"
    assert np.all(w[-3:] != 0)
    assert np.array_equal(A[:, -3:-1] @ w[-3:-1], -A[:, -1] * w[-1])


def test_membership_run_target_is_within_the_runs_assumptions_with_no_zero_entry():
    """thmB.1/run's target: ||W*||_F <= W_bound = 2, v* a unit vector with every |v*_i| >= mu = 1/2
    (its assumptions), and every entry of W* non-zero and of distinct magnitude, so a learner that
    drops or swaps an entry fails the run (a zero entry would let a learner answering 0 there pass)."""
    import sympy as sp

    from attnproof.theorems.membership.identities import MEMBERSHIP_RUN_TARGET

    W, v = (sp.Matrix(x) for x in MEMBERSHIP_RUN_TARGET)
    assert sum(x**2 for x in W) <= 4
    assert sum(x**2 for x in v) == 1 and all(abs(x) >= sp.Rational(1, 2) for x in v)
    assert len({abs(x) for x in W}) == len(W) and all(x != 0 for x in W)


def test_apriori_interval_bound_encloses_sigma_on_the_whole_band():
    """thmB.1/apriori-interval needs sigma(t) >= 1/4 on the band |t| = |W_ij s| <= 1/2 (s = +-1/(2W),
    |W_ij| <= W).  Its first claim is the enclosure of sigma(t) - 1/4 on that band, so its ends are
    sigma(-1/2) - 1/4 = 1/(1 + e^(1/2)) - 1/4 ~ 0.1275 and sigma(1/2) - 1/4 ~ 0.3725 (a narrower
    interval would check a weaker, irrelevant statement)."""
    from attnproof.theorems.membership.identities import apriori_interval_bound

    name, enclosure = apriori_interval_bound()[0]
    assert "1/2" in name
    lo, hi = 1 / (1 + math.exp(0.5)) - 0.25, 1 / (1 + math.exp(-0.5)) - 0.25
    assert float(enclosure.a) == pytest.approx(lo, rel=1e-12, abs=0)
    assert float(enclosure.b) == pytest.approx(hi, rel=1e-12, abs=0)


def test_skeleton_reconstruction_checks_exactly_the_sizes_its_text_lists():
    """thm5.1/skeleton-reconstruction's scope and assumptions list (d, r) = (2, 1), (3, 1), (3, 2),
    (4, 2): its pairs must be, size by size in that order, the d^2 entries of M = A B (A: d x r,
    B: r x d real symbols) and then the two count identities.  A checked size that differs from the
    listed one (true as well, so no check fails) makes the text claim a size never checked."""
    import re

    import sympy as sp

    from attnproof.theorems.lowrank import skeleton_reconstruction
    from attnproof.verify import REGISTRY
    from attnproof.verify.formulas import symbols

    ident = REGISTRY["thm5.1/skeleton-reconstruction"]
    sizes = [tuple(map(int, m)) for m in re.findall(r"\((\d+), ?(\d+)\)", ident.scope)]
    assert sizes == [tuple(map(int, m)) for m in re.findall(r"\((\d+), ?(\d+)\)", ident.assumptions)]
    assert len(sizes) >= 2
    pairs = skeleton_reconstruction()
    M_entries = [x for d, r in sizes
                 for x in (symbols("A", (d, r), real=True) @ symbols("B", (r, d), real=True)).reshape(-1)]
    assert len(pairs) == len(M_entries) + 2
    assert all(sp.expand(m - rhs) == 0 for m, (_, rhs) in zip(M_entries, pairs))


def test_row_sizes_are_the_three_row_norms_rounded_up_by_two_to_the_minus_20():
    """models.RowSizes.of, by hand: M = [[3, -4], [0, 1]] has ||M||_F = sqrt 26, the rows' largest
    entries (4, 1) give sqrt 17 and their 1-norms (7, 1) sqrt 50; each is rounded up by the
    documented factor 1 + 2^-20 (the float64 sums' rounding is below it), so each declared size
    exceeds the exact one.  measure._ext_error and the componentwise bounds read these sizes: a
    size that is not rounded up (or is 2^-20 of the norm) makes their bounds too small."""
    from attnproof.models import RowSizes

    up = 1 + 2.0**-20
    sizes = RowSizes.of(np.array([[3.0, -4.0], [0.0, 1.0]]))
    for got, exact in zip((sizes.frobenius, sizes.largest, sizes.one), (26, 17, 50), strict=True):
        assert got == pytest.approx(math.sqrt(exact) * up, rel=4 * EPS, abs=0)
        assert got > math.sqrt(exact)


def test_value_errors_componentwise_declaration_charges_the_final_rounding_of_the_label():
    """value_errors with a componentwise declaration (a faithful factored head's FactorSizes): the
    answer's final rounding (within ``final |y|``) is charged on the label's size, ``final (beta +
    |x_2^T v| + dw_1 + dw_2) (1 + 8 t)`` absolute and ``final (1 + 8 t)`` relative to alpha (the
    share alpha |(x_1 - x_2)^T v| of |y|), besides through v's error.  By hand at d = 1, p = q = v =
    1, beta = 0, s = 1, L = 0 (alpha = 1/2; the dw_i ~ 2^-64 are below the tolerance): absolute,
    the label's final |x_2^T v| = final and v's (4 t + final) through |q|^T |v|: 2 final; relative,
    v's error through p^T v and the label's relative share: 2 final.  The logit carries the absolute
    part times 1 / (alpha (1 - alpha)) = 4 and the relative part times 1 / (1 - alpha) = 2:
    declaring final = 2^-53 instead of 0 raises the bound by 8 + 4 = 12 final (everything else is
    the same: _faithful_errors does not read final).  (18 final while value_errors charged every
    part of alpha's error at 4: skel3's split, issue 22.)"""
    from attnproof.measure import Probes, value_errors
    from attnproof.models import FactorSizes, Rounding

    probes = Probes(np.ones((1, 1)), np.ones((1, 1)), np.ones(1), FLOAT64)
    sizes = FactorSizes.of(np.ones((1, 1)), np.ones((1, 1)), np.ones(1))
    t, final = 2.0**-64, 2.0**-53
    idx = np.zeros(1, dtype=np.int64)

    def bound(f: float) -> float:
        return value_errors(probes, np.zeros(1), idx, (idx, idx), 0.0,
                            rounding=Rounding("faithful", t, f, sizes))[0]

    assert bound(final) - bound(0.0) == pytest.approx(12 * final, rel=1e-9, abs=0)


def test_min_hessians_is_the_necessity_bound_by_hand():
    """multihead.sbd.min_hessians, the proven necessity bound on the number K of Hessians: 1 for
    d_h = 1, else max(2, d_h - 1) (2, 2, 3, 4 for d_h = 2..5).  A bound of 0 at d_h = 1 would let a
    certificate claim that no Hessian at all is necessary."""
    from attnproof.theorems.multihead.sbd import min_hessians

    assert [min_hessians(dh) for dh in range(1, 6)] == [1, 2, 2, 3, 4]


def test_extra_end_pieces_are_two_refused_ends_and_both_segments_scale_probes():
    """transformer._path_search.EXTRA_END_PIECES, read by ffn_query_bound: the pieces end_pieces may
    measure beyond the three ends are the two refused ends again and the scale probes (middle, then
    quarters: 3 of them) of both segments, 2 + 2 x 3 = 8; fewer would let the query bound undercount."""
    from attnproof.theorems.transformer._path_search import EXTRA_END_PIECES, SCALE_PROBES

    assert SCALE_PROBES == (0.5, 0.25, 0.75)
    assert EXTRA_END_PIECES == 8


def test_reduced_oracle_ratio_is_the_larger_of_the_label_and_one_token_ratios_by_hand():
    """multihead.orthogonal._reduced_oracle_ratio, by hand: the label's ratio ((d + 4 + 3 d_h) eps vt +
    leak) / ((d_h + 4) eps vt) and the one-token ratio one_token / (4 eps vt), the larger.  At d = 4,
    d_h = 2, eps = 2^-53, vt = 1: no leak and a small one-token error give (4 + 4 + 6) / 6 = 7/3; a
    leak of 6 eps adds 6 eps / (6 eps) = 1 (10/3); a one-token error of 20 eps gives 5."""
    from attnproof.theorems.multihead.orthogonal import _reduced_oracle_ratio

    eps = 2.0**-53
    assert _reduced_oracle_ratio(4, 2, eps, 1.0, 0.0, eps) == pytest.approx(7 / 3, rel=1e-15, abs=0)
    assert _reduced_oracle_ratio(4, 2, eps, 1.0, 6 * eps, eps) == pytest.approx(10 / 3, rel=1e-15, abs=0)
    assert _reduced_oracle_ratio(4, 2, eps, 1.0, 0.0, 20 * eps) == pytest.approx(5, rel=1e-15, abs=0)


def test_the_recovery_condition_takes_s_equal_to_one_and_cannot_hold_at_s_equal_to_r():
    """``rub.recovery_condition`` accepts the smallest legal s = 1 (kills ``s >= 1`` -> ``s > 1``,
    rub.py's validation, open in mutation/SURVIVORS.md); at s = r the lemma's condition
    ``c2 < sqrt(s / r) c1`` reads c2 < c1, which no ensemble meets (c1 <= c2 by definition)."""
    from attnproof.errors import InvalidInputError
    from attnproof.theorems.lowrank.rub import recovery_condition

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((6, 2)), rng.standard_normal((6, 2))
    cond = recovery_condition(a, b, 1, s=1)
    assert cond.s == 1 and not cond.holds and cond.c1.attained <= cond.c2.attained
    with pytest.raises(InvalidInputError):
        recovery_condition(a, b, 1, s=0)


def test_the_cvx_run_draws_its_measurements_with_the_seed_its_assumptions_name(monkeypatch):
    """``thm5.1/run-cvx``'s assumptions name the seed of its Gaussian measurements: the run must
    hand the learner exactly that generator (a run on another seed passes too, so only this test
    sees a text that names a seed never run; mutation/SURVIVORS.md, lowrank const 0 -> 1)."""
    import re

    import attnproof.theorems.lowrank as lowrank
    from attnproof.verify import REGISTRY

    seed = int(re.search(r"drawn with seed (\d+)", REGISTRY["thm5.1/run-cvx"].assumptions).group(1))
    seen = []
    real = lowrank.learn_lowrank_cvx

    def spy(oracle, m, rng):
        seen.append(rng.bit_generator.state)
        return real(oracle, m=m, rng=rng)

    monkeypatch.setattr(lowrank, "learn_lowrank_cvx", spy)
    lowrank.run_cvx()
    assert seen == [np.random.default_rng(seed).bit_generator.state]


@pytest.mark.parametrize("nonzeros, dense", [(1, False), (2, True)])
def test_last_token_image_switches_to_the_dense_product_just_above_d_over_8_nonzeros(
    monkeypatch, nonzeros, dense
):
    """``models._last_token_image`` reads a last token sparsely up to B d / 8 non-zeros and takes the
    split BLAS product above it: the threshold ``measure._dense_batches`` mirrors (a batch whose
    tokens keep more than d / 8 non-zeros each is dense), so the componentwise bound assumes the
    path the model takes.  Both sides of the threshold at B = 1, d = 8: one non-zero (= B d / 8) is
    sparse, two are dense (kills ``>`` -> ``>=``, models.py, open in mutation/SURVIVORS.md)."""
    import attnproof.models as models

    calls = []
    real = models._ext_product
    monkeypatch.setattr(models, "_ext_product", lambda A, B: calls.append(A.shape) or real(A, B))
    x = np.zeros((1, 8))
    x[0, :nonzeros] = [0.75, -1.5][:nonzeros]
    M = np.arange(24.0).reshape(3, 8) / 7
    got = models._last_token_image(x, M)
    assert bool(calls) == dense
    exact = x.astype(np.longdouble) @ M.T.astype(np.longdouble)  # two terms at most: within 2^-62
    assert np.all(np.abs(got - exact) <= np.ldexp(np.abs(exact), -60))


# --- the last four open survivors of the seed-7 run (SURVIVORS.md) ------------------------------


def test_value_errors_charges_the_probe_entries_underflow_times_the_norm_of_v(monkeypatch):
    """value_errors' gradual-underflow term of the label: ``2^-1074`` per product, ``2 d + 4`` of
    them in v's scaled units (``2^e``, e the exponent that brings max |v*| into [1, 2)), plus each
    probe entry's own ``2^-1074`` met through v: ``sqrt(d) ||v||`` (``||dx||_2 <= sqrt(d) 2^-1074``
    times ``||v||`` in the same scaled units).  By hand, with an oracle that declares exact answers
    (term = final = 0), no offset and Q = the basis (so the label's and q^T v's other errors are 0):
    d = 4, v* = 1.75 (1, 1, 1, 1) 2^-e, ``||v|| = 3.5``, sqrt(d) = 2: ``(12 2^e + 7) 2^-1074``,
    exact in subnormal arithmetic.  alpha's absolute error is that over s p^T v (whole-probe,
    s = 2^-60, p = e_1: p^T v = 1.75 in the scaled units), read where value_errors hands it to the
    logit (its relative part, eps-sized, hides it in the returned bound)."""
    from attnproof import measure
    from attnproof.models import Rounding

    seen: list[np.ndarray] = []
    spread = measure._logit_spread

    def spy(alpha, absolute, relative=0.0):
        seen.append(np.array(absolute, dtype=float))
        return spread(alpha, absolute, relative)

    monkeypatch.setattr(measure, "_logit_spread", spy)
    d, tiny, k = 4, 2.0**-1074, -60
    idx, s = np.zeros(1, dtype=np.int64), 2.0**k
    for e in (0, 3):
        probes = measure.Probes(np.eye(d), None, np.full(d, math.ldexp(1.75, -e)), FLOAT64)
        measure.value_errors(probes, np.zeros(1), np.full(1, k), (idx, idx), 0.0,
                             rounding=Rounding("exact", 0.0, 0.0))
        dy = (math.ldexp(2 * d + 4, e) + math.sqrt(d) * 3.5) * tiny
        assert seen[-1][0] == pytest.approx(dy / s / 1.75, rel=1e-12, abs=0)


def test_rotation_fit_accepts_a_misfit_equal_to_its_allowance_and_refuses_one_ulp_above():
    """_check_rotation_fit refuses only a misfit ``||r - J k_hat||`` that *exceeds* its allowance
    ``||tol + ||J||_2 k0 (2 k0 + 2^-20)|| (1 + 8 n eps)`` (its docstring; Raises).  Both sides of
    the threshold, with J = 0 (no rotation: the allowance is the tolerances' norm): tol = (1),
    allowance 1 + 8 * 2^-53 = 1 + 2^-50 exactly; a residual of exactly that passes, the next float
    up is refused."""
    from attnproof.errors import AssumptionError
    from attnproof.theorems.multihead.rotation import _check_rotation_fit

    J, k_hat, tol = np.zeros((1, 1)), np.zeros(1), np.ones(1)
    allowed = 1 + 2.0**-50
    assert allowed == 1 + 8 * FLOAT64.eps  # the allowance's factor, exact here
    assert float(np.linalg.norm(np.array([allowed]))) == allowed  # the misfit is read exactly
    _check_rotation_fit(J, np.array([allowed]), k_hat, tol, 0.0)
    with pytest.raises(AssumptionError):
        _check_rotation_fit(J, np.array([np.nextafter(allowed, 2.0)]), k_hat, tol, 0.0)


def test_ffn_learner_searches_with_the_step_budget_its_query_bound_assumes(monkeypatch):
    """learn_ffn's default step budget is the ``64 (d + 8)^2`` of its docstring and of
    ffn_query_bound's default (which bounds the queries "whatever the oracle says" only for the
    budget the learner actually uses): 6400 at d = 2, read where the learner hands it to each
    path search."""
    from attnproof.theorems.transformer import ffn
    from attnproof.theorems.transformer.ffn import ffn_query_bound, learn_ffn
    from attnproof.models import ReluFFN

    budgets: list[int] = []
    search = ffn._PathSearch

    class Spy(search):  # type: ignore[misc, valid-type]
        def __init__(self, session, r, min_gap, max_steps):
            budgets.append(max_steps)
            super().__init__(session, r, min_gap, max_steps)

    monkeypatch.setattr(ffn, "_PathSearch", Spy)
    d = 2
    A = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]])
    learn_ffn(ValueOracle(ReluFFN(A, np.ones(3))), rng=np.random.default_rng(0))
    assert budgets and set(budgets) == {64 * (d + 8) ** 2}
    assert ffn_query_bound(d) == ffn_query_bound(d, max_steps=budgets[0])


def test_a_saturated_probe_is_retargeted_to_the_goal_within_one_step_of_its_order():
    """A saturated but trusted logit m (accept < |m| <= trust) is asked again at the scale that
    brings it to the policy's goal: whole-probe scaling (order 2: the logit grows as 4^k), so k
    moves by ``floor(log2(goal / m) / 2)`` and the new logit lands in (goal / 4, goal].  By hand,
    d = 1, p = q = v = 1, W* = 20: at s = 1 the logit is 20 (> accept = 8, <= trust = 30);
    ``floor(log2(2 / 20) / 2) = floor(-1.66) = -2``, so k = -2 and the logit 20 / 16 = 1.25, one
    query asked again.  (Ignoring the order, k = -4 and the logit 20 / 256: far below the goal,
    and digits lost.)"""
    from attnproof.measure import BilinearSession, Probes

    policy = ScalePolicy()
    m = 20.0
    assert policy.accept < m <= policy.trust
    session = BilinearSession(ValueOracle(Attention(np.array([[m]]), np.ones(1))), FLOAT64)
    probes = Probes(np.ones((1, 1)), None, np.ones(1), FLOAT64)
    assert probes.order == 2
    idx = np.zeros(1, dtype=np.int64)
    L, k = session.measure_adaptively(probes, (idx, idx))
    assert int(k[0]) == math.floor(math.log2(policy.goal / m) / 2) == -2
    assert float(L[0]) == pytest.approx(m / 16, rel=1e-12, abs=0)
    assert policy.goal / 4 < float(L[0]) <= policy.goal
    assert session.diagnostics["reasked_queries"] == 1


# --- the seed-23 run's survivors (SURVIVORS.md) -----------------------------------------------


@pytest.mark.parametrize("cores, B, blocks", [(4, 8, [(0, 2), (2, 4), (4, 6), (6, 8)]),
                                              (8, 3, [(0, 1), (1, 2), (2, 3)]), (1, 8, [(0, 8)])])
def test_a_large_probe_batch_is_written_in_one_block_per_core(monkeypatch, cores, B, blocks):
    """``measure._in_blocks`` writes a large batch in one block of consecutive rows per core (at most
    8, at most one per row): ``min(cores, 8, B)`` blocks cutting 0..B evenly, every row in exactly
    one; one core: the whole batch in one block.  By hand: 4 cores, B = 8: four blocks of two rows;
    8 cores, B = 3: one row each."""
    from attnproof import measure

    monkeypatch.setattr(measure, "_cores", lambda: cores)
    seen: list[tuple[int, int]] = []
    d = -(-measure._PARALLEL_ENTRIES // (2 * B))  # 2 B d >= _PARALLEL_ENTRIES: a large batch
    measure._in_blocks(lambda a, b: seen.append((a, b)), B, d)
    assert sorted(seen) == blocks


def test_canonical_ffn_drops_a_negligible_kink_beside_negative_ones():
    """canonical_ffn with ``rtol`` drops kinks within rtol of the largest *magnitude*: with every
    weight negative, units e_1 (weight -1) and e_2 (weight -1e-9), rtol = 1e-6 drops the second
    (|-1e-9| <= 1e-6 x 1) and keeps c = (-1) on the hyperplane e_1; u = A w_o = (-1, -1e-9) keeps
    both (the linear part is not a kink)."""
    from attnproof.models import canonical_ffn

    A, w_o = np.eye(2), np.array([-1.0, -1e-9])
    u, N, c = canonical_ffn(A, w_o, rtol=1e-6)
    assert np.array_equal(N, [[1.0, 0.0]]) and np.array_equal(c, [-1.0])
    assert np.array_equal(u, w_o)


def test_faithful_errors_charge_each_tokens_own_score_bias_error():
    """measure._faithful_errors: a score bias c adds to the logit's error each token's own ``c^T x_i``
    error ``dc_i`` (:func:`measure._ext_error` of that token's sizes with c's RowSizes), once as
    itself and once in the ``3 u`` of ``|s_1| + |s_2|``, and ``3 u ||c||_F (||x_1|| + ||x_2||)``: with c
    minus without, ``(dc_1 + dc_2) (1 + 3 u) + 3 u ||c||_F (||x_1|| + ||x_2||)``, by hand from the
    parts.  Tokens of different sizes (||x_1|| = 2, ||x_2|| = 1, as p = q = e_1 at s = 1), so dc_1
    != dc_2."""
    from attnproof.measure import _ext_error, _faithful_errors
    from attnproof.models import FactorSizes, RowSizes

    d, u = 3, 2.0**-64
    K, Q, v, c = np.eye(d)[:2], np.eye(d)[:2], np.ones(d), np.array([0.5, -2.0, 1.0])
    t1 = (np.array([2.0]), np.array([2.0]), np.array([2.0]))
    t2 = (np.array([1.0]), np.array([1.0]), np.array([1.0]))
    xd = np.array([1.0])

    def ds(sizes: FactorSizes) -> float:
        return float(_faithful_errors(sizes, u, d, (t1, t2), xd, True, 0)[0][0])

    with_c, without = FactorSizes.of(K, Q, v, c), FactorSizes.of(K, Q, v)
    cs = RowSizes.of(c)
    dc1, dc2 = float(_ext_error(d, u, t1, cs)[0]), float(_ext_error(d, u, t2, cs)[0])
    assert dc1 > 1.5 * dc2  # the two tokens' errors differ
    want = (dc1 + dc2) * (1 + 3 * u) + 3 * u * cs.frobenius * (2.0 + 1.0)
    assert ds(with_c) - ds(without) == pytest.approx(want, rel=1e-9, abs=0)


def test_the_skeleton_rooms_full_bounds_workloads_are_the_ones_its_note_names():
    """``bench bounds --full``'s skeleton share runs what its help says it runs (issue 22's headline
    workload, part ("bounds", "note") of the lowrank room: "skeleton d = 4096 r = 128 seeds 0-4"):
    every full workload of the room is the skeleton at that d and rank, over those seeds."""
    import re

    import attnproof.theorems.lowrank.runner  # noqa: F401  (registers the room's parts)
    from attnproof.room import PARTS

    mine = [p for p in PARTS if p.room == "lowrank" and p.sweep == "bounds"]
    (note,) = [p.value for p in mine if p.name == "note"]
    words = re.fullmatch(r"skeleton d = (\d+) r = (\d+) seeds (\d+)-(\d+)", note)
    d, r, first, last = map(int, words.groups())
    full = [p.value for p in mine if p.name == "full"]
    assert full and all(
        (w.learner, w.d, w.options["rank"], w.seeds) == ("skeleton", d, r, tuple(range(first, last + 1)))
        for w in full)


@pytest.mark.parametrize("b", [(-1.0, 1.0), (-1.0, 0.01), (0.2, 3.0)])
def test_ffn_check_points_are_evenly_spaced_in_angle_on_an_obtuse_segment(b):
    """transformer.ffn.check_parameters: the point ``a + t (b - a)`` of the k-th parameter lies at
    the angle ``(k + 1/2) / checks`` of the angle alpha between a and b, seen from 0 -- obtuse angles
    (135 degrees, nearly 180) included, where the cosine a.b / (|a| |b|) is negative.  The angle of
    each point is measured with atan2, independently of the sine rule the function uses."""
    from attnproof.theorems.transformer.ffn import check_parameters

    a, b = np.array([1.0, 0.0]), np.array(b)
    alpha = math.atan2(b[1], b[0])  # a = e_1, b in the upper half plane: its angle from a
    checks = 4
    # the function's arccos amplifies the cosine's rounding by 1 / sin(alpha) near pi (b = (-1, 0.01):
    # 1.4e-12 relative, measured against mpmath at 50 digits)
    rel = 2.0**-40 / math.sin(alpha)
    for k, t in enumerate(check_parameters(a, b, checks)):
        x = a + t * (b - a)
        assert math.atan2(x[1], x[0]) == pytest.approx((2 * k + 1) / (2 * checks) * alpha, rel=rel, abs=0)


def test_sbd_commutant_with_null_tol_counts_the_singular_values_below_it_relative_to_the_largest():
    """multihead.sbd.sbd_commutant with ``null_tol`` (noisy matrices): singular values of the
    commutator map below ``null_tol * s_max`` count as zero.  Three random symmetric matrices,
    block-diagonal with blocks of sizes 2 and 2, plus symmetric noise of 1e-9: their commutant is
    the scalars on each block (dimension 2: generic blocks are irreducible and not isomorphic),
    so at null_tol = 1e-4 -- between the noise and 1 -- two values count as zero, and the two
    blocks are found (a cut relative to the *smallest* singular value would count none)."""
    from attnproof.theorems.multihead.sbd import sbd_commutant

    rng = np.random.default_rng(5)
    As = []
    for _ in range(3):
        A = np.zeros((4, 4))
        for lo in (0, 2):
            B = rng.standard_normal((2, 2))
            A[lo:lo + 2, lo:lo + 2] = B + B.T
        N = 1e-9 * rng.standard_normal((4, 4))
        As.append(A + N + N.T)
    bases, info = sbd_commutant(As, rng, FLOAT64, null_tol=1e-4)
    assert info["commutant_dim"] == 2
    assert sorted(b.shape[1] for b in bases) == [2, 2]


@pytest.mark.parametrize("d, W_bound", [(1, 2.0), (3, 2.0), (5, 7.5)])
def test_noisy_margin_target_meets_the_theorems_assumptions_as_documented(d, W_bound):
    """noisy.runner.margin_target: ``||W*||_F = 0.9 W_bound`` (inside Thm 6.1's ``||W*||_F <= W``),
    ``||v*||_2 = 1`` and mu = min |v*_i|, to rounding."""
    from attnproof.theorems.noisy.runner import margin_target

    W, v, mu = margin_target(d, np.random.default_rng(d), W_bound)
    assert np.linalg.norm(W) == pytest.approx(0.9 * W_bound, rel=1e-14, abs=0)
    assert np.linalg.norm(v) == pytest.approx(1.0, rel=1e-14, abs=0)
    assert mu == np.abs(v).min()


def test_identity_residual_tolerances_by_hand_for_two_one_dimensional_heads():
    """multihead.rotation.identity_residuals' tolerance, by hand at d = 2, H = 2, d_h = 1 (bases e_1,
    e_2, gamma = 0), heads W = 0, v^(h) = e_h (S = 2): per identity b, each of its two answers'
    rounding ``4 (d + 6) eps sum_k max_i |x_i^T v^(k)|`` = 32 eps (sum of |X[i, k]| maxima; W = 0: no
    score term), plus ``||x_1||`` times the measured sum of the v's error: the one-token answers'
    ``sqrt(H d) (d + H + 2)`` = 12, the lift's ``d_max + 1`` = 2 and the dot product's d = 2, times
    eps S: 16 eps S; all times ``1 + 8 d eps``."""
    from attnproof.measure import Session
    from attnproof.models import MultiHeadAttention
    from attnproof.theorems.multihead.rotation import identity_residuals

    d, eps = 2, FLOAT64.eps
    E = np.eye(d)
    heads = [Recovery(np.zeros((d, d)), E[h], 0, FLOAT64) for h in range(2)]
    oracle = ValueOracle(MultiHeadAttention([(np.zeros((d, d)), E[h]) for h in range(2)]))
    Q, X1, _, tol = identity_residuals(Session(oracle, FLOAT64), heads, [E[:, :1], E[:, 1:]], 0.0,
                                       np.random.default_rng(3))
    for b in range(len(X1)):
        rounding = sum(np.abs(X[:, k]).max() for X in Q[2 * b : 2 * b + 2] for k in range(2))
        want = (32 * eps * rounding + np.linalg.norm(X1[b]) * 16 * eps * 2) * (1 + 8 * d * eps)
        assert tol[b] == pytest.approx(want, rel=1e-12, abs=0)


@pytest.mark.parametrize("theta", [1e-6, 1e-8])
def test_orthogonal_heads_rotation_bound_covers_the_true_rotation_off_the_bases(theta):
    """learn_orthogonal_heads on two one-dimensional heads whose subspaces are the given bases e_1,
    e_2 rotated by theta (C.1 up to a rotation): the bound it reports on the rotation's coefficient
    ``||k||_2`` (``rotation_bound``; k along the unit generator ``(e_1 e_2^T - e_2 e_1^T) / sqrt(2)``,
    so ``||k|| = sqrt(2) theta``) covers the true one, and is tight within a factor 2 (it is
    ``||k_hat||`` plus its uncertainty)."""
    from attnproof.models import MultiHeadAttention
    from attnproof.theorems.multihead.orthogonal import learn_orthogonal_heads

    c, s = math.cos(theta), math.sin(theta)
    R, E = np.array([[c, -s], [s, c]]), np.eye(2)
    u1, u2 = R @ E[0], R @ E[1]
    heads = [(1.5 * np.outer(u1, u1), 0.8 * u1), (-0.7 * np.outer(u2, u2), 1.1 * u2)]
    rec = learn_orthogonal_heads(ValueOracle(MultiHeadAttention(heads)), [E[:, :1], E[:, 1:]],
                                 rng=np.random.default_rng(0))
    k = math.sqrt(2) * theta
    assert k <= rec.diagnostics["rotation_bound"] <= 2 * k


@given(st.data())
def test_membership_targets_margin_holds_exactly_for_the_exact_direction(data):
    """membership.strategies.membership_targets: every entry of the *exact* direction v* / ||v*||
    meets the margin, ``mu^2 ||v*||^2 <= min v*_i^2`` in rationals (the strategy's docstring: mu sits
    1e-15 relative below the float ratio "so that the exact direction meets the margin despite
    rounding").  d = 6 at mu = 1 / sqrt(6) (every |v*_i| = mu) is a case where the float ratio
    min |v*_i| / ||v*|| overestimates the exact one by more than one rounding: a shrink of 1e-16
    (one ulp) leaves mu above it."""
    from fractions import Fraction

    from attnproof.theorems.membership.strategies import membership_targets

    d = data.draw(st.one_of(st.just(6), st.integers(1, 12)))
    _, v, _, mu = data.draw(membership_targets(st.just(d), max_W_bound=4.0))
    exact = [Fraction(float(x)) for x in v]
    assert Fraction(mu) ** 2 * sum(x * x for x in exact) <= min(x * x for x in exact)


def test_every_identity_a_claim_cites_is_registered():
    """Every ``id:`` check a ledger claim (or erratum) links names a registered identity: a claim
    citing one that does not exist would raise only when the ledger is evaluated."""
    from attnproof.cli import build_parser
    from attnproof.verify import CLAIMS, ERRATA, REGISTRY

    build_parser()  # imports every room: the registry and the ledger complete
    cited = {c.removeprefix("id:") for item in [*CLAIMS, *ERRATA] for c in item.checks if c.startswith("id:")}
    assert cited and not cited - set(REGISTRY)


def test_ffn_query_bound_fixed_overhead_by_hand_at_zero_steps():
    """ffn_query_bound, counted event by event at d = 2 with no search step, no check point and no
    restart (max_steps = 0, checks = 0, restarts = 0), each query charged at most once.

    A piece (a gradient) costs d H_ROUNDS perturbations, a centre, a homogeneity query and, after
    the jump to the smallest step, its d steps backwards (ffn.piece_query_bound): 14.
    Before the search: the three ends U, V, -U; when all three are refused before the units'
    scale is known, the scale probes (three points of both segments: 2 x 3, placed by each
    segment's values at most 2^-4 radians apart, WEDGE_POINTS = 51 each) and the three ends again
    (end_pieces re-measures every refused end): 12 pieces and 102 values; V drawn again
    REDRAWS = 2 times; the scale check's 4 single queries.  Then 1 + CHECK_ROUNDS = 4 reconstructions with no
    kink (L = 0): each polish measures its L + 1 = 1 region and again each piece at an end of a
    kink-free interval, at most the paths' 3 + CHECK_ROUNDS = 6 ends: 7 pieces; between them
    CHECK_ROUNDS = 3 further paths, each pivot up to 1 + NUDGES = 4 pieces.  In all
    12 + 2 + 4 x 7 + 3 x 4 = 54 pieces and 102 + 4 queries: 54 x 14 + 106 = 862; each restart
    repeats all of it."""
    from attnproof.theorems.transformer.ffn import ffn_query_bound

    piece = 2 * 5 + 2 + 2
    pieces = (3 + 2 * 3 + 3) + 2 + 4 * (1 + 6) + 3 * (1 + 3)
    assert (piece, pieces, pieces * piece + 2 * 51 + 4) == (14, 54, 862)
    assert ffn_query_bound(2, max_steps=0, restarts=0, checks=0) == 862
    assert ffn_query_bound(2, max_steps=0, restarts=2, checks=0) == 3 * 862


def test_ffn_polish_asks_nothing_again_for_a_piece_without_error():
    """transformer.ffn._remeasured measures a piece again only when its gradient has an error to
    shrink: a piece with error 0 (exact arithmetic, or a float64 piece on a dead region, where f,
    every answer and the gradient are exactly 0) is returned as it is, with no query and nothing
    booked in ``ledger.remeasured``.  Here x = (1, 1) lies at margin 1 from the one recovered
    hyperplane x_1 = 0 and p's step is 2^-10: the margin would allow a step 2^-1, so only the
    error decides; the same piece with an error is re-measured (d queries, booked once)."""
    from attnproof.measure import Session
    from attnproof.models import ReluFFN
    from attnproof.theorems.transformer._path_search import _Piece
    from attnproof.theorems.transformer.ffn import _PathSearch, _remeasured

    oracle = ValueOracle(ReluFFN(np.array([[-1.0], [0.0]]), np.ones(1)))  # ReLU(-x_1): 0 for x_1 > 0
    session = Session(oracle, FLOAT64)
    search = _PathSearch(session, np.array([0.0, 1.0]), 2.0**-40, 100)
    x, zero = np.array([1.0, 1.0]), np.zeros(2)
    N = np.array([[1.0, 0.0]])
    exact = _Piece(x, 0.0, zero, 0.0, np.zeros(2), 2.0**-10)
    assert _remeasured(search, exact, N) is exact
    assert (session.queries, search.ledger.remeasured) == (0, 0)
    rough = _Piece(x, 0.0, zero, 1e-9, np.zeros(2), 2.0**-10)
    _remeasured(search, rough, N)
    assert (session.queries, search.ledger.remeasured) == (2, 1)


@pytest.mark.parametrize("scale", [1.0, 2.0**-20])
def test_nuclear_norm_learner_redraws_rows_by_a_scale_free_rule(scale):
    """learn_lowrank_cvx draws a row a_k again when a_k^T v is below 1e-3 ||v|| (a^T v ~ 0 carries
    no information): a rule relative to ||v||, so the rows redrawn do not depend on v's scale.  At
    d = 3, m = 12 and the rng of seed 0 (its first draw is A), no row of A has |a_k^T v| below
    1e-3 ||v|| for v = (1, -0.5, 0.75) (counted here from A), at v and at 2^-20 v alike (an absolute
    threshold 1e-3 would redraw every row of the small one)."""
    from attnproof.theorems.lowrank import learn_lowrank_cvx

    d, m = 3, 12
    W = np.outer([1.0, 2.0, -1.0], [0.5, -1.0, 1.0])
    v = np.array([1.0, -0.5, 0.75])
    A = np.random.default_rng(0).standard_normal((m, d))
    small = int((np.abs(A @ v) < 1e-3 * np.linalg.norm(v)).sum())
    rec = learn_lowrank_cvx(ValueOracle(Attention(W, scale * v)), m=m, rng=np.random.default_rng(0))
    assert rec.diagnostics["redrawn"] == small == 0


@pytest.mark.parametrize("query_only", [False, True])
def test_resolution_is_the_labels_rounding_through_the_logit_by_hand(query_only):
    """measure.resolution: the label ``beta + s q^T v + alpha s_p p^T v`` rounds by ``eps (|beta| +
    s_p |p^T v| + 2 s |q^T v|)``, the logit by 4 times that over ``s_p |p^T v|``, plus the prelude's
    typical ``c^T p`` error; the value is the logit over ``s^order``.  Fixed input: v = (1, 1/2),
    beta = 1/2 (in [1, 2) after no rescaling: e = 0), P = diag(1, 2), Q = the basis, so p^T v = (1,
    1), q^T v = (1, 1/2); entries (0, 0) at k = 0 and (1, 1) at k = 1 (s = 2).  By hand, in units of
    eps: entry 0 is 4 (1/2 + 1 + 2) = 14 both ways; entry 1 is 4 (1/2 + 2 + 2) / 2 / 4 = 9/4 whole-probe
    (s_p = 2, order 2), 4 (1/2 + 1 + 2) / 2 = 7 query-only (s_p = 1, order 1).  With a typical c^T p
    error t = (3, 5) eps: entry 0 gains 3 eps, entry 1 gains 5 eps / s^order.  Every number is a
    dyadic of a few bits: the floats are exact."""
    from attnproof.measure import Probes, resolution

    eps = FLOAT64.eps
    P, v = np.diag([1.0, 2.0]), np.array([1.0, 0.5])
    entries, k = (np.array([0, 1]), np.array([0, 1])), np.array([0, 1])
    order = 1 if query_only else 2
    without = Probes(P, None, v, FLOAT64, offset=0.5, scale_query_only=query_only)
    second = 7.0 if query_only else 9 / 4
    assert resolution(without, entries, k).tolist() == [14 * eps, second * eps]
    typical = np.array([3 * eps, 5 * eps])
    with_c = Probes(P, None, v, FLOAT64, offset=0.5, scale_query_only=query_only, linear=np.zeros(2),
                    linear_typical=typical)
    assert resolution(with_c, entries, k).tolist() == [17 * eps, (second + 5 / 2**order) * eps]


@pytest.mark.parametrize("count, low", [(8, 0.25), (7, 0.25 / 16)])
def test_the_learned_scale_moves_up_just_below_tiny_and_stays_at_it(count, low):
    """Scale.learn (the default ScalePolicy: tiny = 1/4, pilot = 8, ceiling = 4): the scale moves up
    only when the largest value is asked below tiny (below tiny / 16 from fewer than pilot values),
    so a unit-scale W* stays at s = 1.  At k = 0 (whole-probe, order 2) a largest value of exactly
    that leaves k at 0; one a hair below moves k to where it is asked at the ceiling (a quarter of
    it from fewer than pilot values): floor((log2 ceiling - log2 value) / 2), by hand floor((2 + 2.06) / 2)
    = 2 and floor((0 + 6.06) / 2) = 3."""
    from attnproof.measure import Scale

    policy = ScalePolicy()
    at, below = Scale(), Scale()
    at.learn(np.full(count, math.log2(low)), 2, policy)
    below.learn(np.full(count, math.log2(low * 0.96)), 2, policy)
    assert at.k == 0
    assert below.k == (2 if count >= policy.pilot else 3)


@pytest.mark.parametrize("d, levels", [(3, 4), (5, 5)])
def test_product_errors_charge_the_pairwise_trees_ceil_log2_d_levels(d, levels):
    """measure._product_errors (float64): ``K = 4 gamma_{2d} eps (ceil(log2 d) + 2) (|M| |x|)_k (1 + 2 d
    eps) + 4 d 2^-1074``, and the bound ``(|computed - res| + eps |res| + K) (1 + 4 eps)``.  A row that
    cancels exactly, M = (1, ..., 1, -(d - 1)), x = 1 (``M x`` = 0 computed and recomputed, |M| |x| =
    2 (d - 1)), leaves K alone; at d = 3 and 5 (not powers of two, where ceil and floor differ) the
    pairwise tree has ceil(log2 d) = 2 and 3 levels (an odd width is padded with a zero: 3 -> 2 -> 1,
    5 -> 3 -> 2 -> 1), so levels = 4 and 5, by hand."""
    from attnproof.measure import UNDERFLOW, _product_errors

    eps = FLOAT64.eps
    M = np.append(np.ones(d - 1), -(d - 1.0))[None, :]
    x = np.ones(d)
    magnitude = np.abs(M) @ np.abs(x)
    got = _product_errors(M, x, M @ x, magnitude, eps)
    gamma = 2 * d * eps / (1 - 2 * d * eps)
    K = 4 * gamma * eps * levels * 2 * (d - 1) * (1 + 2 * d * eps) + 4 * d * UNDERFLOW
    assert (M @ x)[0] == 0.0
    assert got[0] == pytest.approx(K * (1 + 4 * eps), rel=1e-12, abs=0)


@pytest.mark.parametrize("name", ["eps_W", "delta_rot"])
def test_rotated_membership_options_take_probabilities_on_the_whole_open_unit_interval(name):
    """RotatedOptions' eps_W and delta_rot are documented "in (0, 1)": the largest float below 1 and
    the smallest above 0 are taken, 0 and 1 refused (a typed error naming the option)."""
    from attnproof.errors import InvalidInputError
    from attnproof.theorems.membership.runner import RotatedOptions

    for x in (math.nextafter(1.0, 0.0), 0.5, 5e-324):
        assert getattr(RotatedOptions(**{name: x}), name) == x
    for x in (0.0, 1.0):
        with pytest.raises(InvalidInputError, match=name):
            RotatedOptions(**{name: x})


def test_hessian_count_certificate_bound_is_within_a_factor_of_eight_of_the_determinant():
    """The sufficiency claims' exponent k = bitlen(q) - bitlen(|p|) + 2 for det = p / q: with
    2^(bitlen(|p|) - 1) <= |p| < 2^bitlen(|p|) (likewise q), |det| / 8 < 2^-k <= |det| / 2.  The claim
    |det| - 2^-k >= 0 is then a certificate that the minor is non-singular *with its size*: a k that
    drops the numerator's length (a true but weaker claim, which verify cannot fail) is refused.
    Checked on the cheapest pattern, H = 2, d_h = 2."""
    import sympy as sp

    from attnproof.theorems.multihead.identities import _sufficiency_claims, hessian_count_certificate

    det = abs(sp.Rational(hessian_count_certificate(2, 2)["det"]))
    (_, bound) = _sufficiency_claims(2, 2)[1]
    power = det - bound  # 2^-k
    assert det / 8 < power <= det / 2
    assert power == sp.Integer(2) ** -(det.q.bit_length() - det.p.bit_length() + 2)


def test_a_batch_that_would_run_past_the_buffer_starts_at_row_0():
    """``BilinearSession._place``: a call of n probes asked from row ``at`` keeps its place only
    when ``at + n`` rows fit in the buffer, else starts at row 0 (seed-47 survivor ``measure.py``
    ``_place`` without ``+ n``, which would write past the buffer's end).  The buffer here holds
    max_batch_bytes // (2 d 8) = 8 rows at d = 4; checked on both sides of the edge."""
    session = BilinearSession(ValueOracle(Attention(np.eye(4), np.ones(4))), FLOAT64, ScalePolicy(),
                              max_batch_bytes=2 * 4 * 8 * 8)
    ll = np.zeros(5, dtype=np.int64)
    chunk, buffer, at = session._place(5, 4, ll, 3)  # rows 3..7: fits
    assert (chunk, at) == (8, 3) and buffer is not None and len(buffer.X) == 8
    chunk, _, at = session._place(5, 4, ll, 4)  # rows 4..8: one past the end
    assert (chunk, at) == (8, 0)


def test_check_tolerance_weighs_each_tokens_spread_by_its_reach_into_the_heads_subspace_by_hand():
    """multihead.orthogonal._check_tolerance on one fixed check query, by hand (d = 2, one head,
    rows x_1 = e_1, x_N = e_2, W = 0: alpha = (1/2, 1/2); v = (2, 0): y = (2, 0), alpha^T y = 1,
    spread 2; basis column E = (1/2, 3/4), gamma = 1/4, eps = 0: no rounding term).  The W term is
    ``sum_i alpha_i |y_i - alpha^T y| p_i p_N`` with ``p_i = |E^T x_i| + gamma |x_i|`` = (3/4, 1):
    1/2 3/4 + 1/2 = 7/8 (below the spread, so uncapped), times eps_W = 1; v's term max |x_i| eps_v =
    1/4; twice the sum: 9/4 (every step exact in binary).  Seed-47 survivor ``orthogonal.py``
    ``alpha * |y - alpha^T y| * proj * proj[-1]`` without ``proj`` (1 instead of 7/8: 5/2)."""
    from attnproof.theorems.multihead.orthogonal import _check_tolerance

    Gb, E = np.eye(2), np.array([[0.5], [0.75]])
    tol = _check_tolerance(Gb, [np.zeros((2, 2))], [np.array([2.0, 0.0])], [E], [(1.0, 0.25)], 0.25, 2, 0.0)
    assert tol == 2 * (0.25 + 0.875)


def test_ffn_network_is_the_canonical_form_with_the_linear_part_halved_by_hand():
    """FFNRecovery.network at d = 2, L = 1 (u = (1, 0), n_1 = (0, 1), c_1 = 2): ``g = (u - c_1 n_1) / 2
    = (1/2, -1)``, so ``A_hat = [n_1, g, -g]``, ``w_hat = (2, 1, -1)`` (``sec4.1/canonical-network``),
    and that network answers f_hat's values: 3/2 at (1, 1) and (1, -1), -1/2 at (-1, 0), by hand
    from ``f = 1/2 u^T x + 1/2 sum_j c_j |n_j^T x|``.  Seed-47 survivor ``ffn.py`` g without ``/ 2``
    (f_hat's linear part doubled: 1 at (1, 1))."""
    from attnproof.models import ReluFFN
    from attnproof.theorems.transformer.ffn import FFNRecovery

    rec = FFNRecovery(np.array([1.0, 0.0]), np.array([[0.0, 1.0]]), np.array([2.0]), 0, FLOAT64.name)
    A, w = rec.network()
    assert np.array_equal(A, [[0.0, 0.5, -0.5], [1.0, -1.0, 1.0]]) and np.array_equal(w, [2.0, 1.0, -1.0])
    X = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 0.0]])
    want = [1.5, 1.5, -0.5]
    assert [ReluFFN(A, w)(x[None, :]) for x in X] == want and list(rec(X)) == want


def test_multihead_sbd_tables_default_success_threshold_is_the_books():
    """The SBD chapter reports "Success rate (subspaces within $10^{-k}$)" from ``multihead_sbd_table``
    run with its default ``tol`` (book/multihead.md's cell passes shapes and seeds only): the
    threshold the text names is the default's.  Seed-47 survivor ``multihead/runner.py`` tol 1e-6 ->
    1e-7 (the table would count a 5e-7 subspace error as a failure the chapter calls a success)."""
    import inspect
    import re

    from helpers import BOOK

    from attnproof.theorems.multihead.runner import multihead_sbd_table

    text = (BOOK / "multihead.md").read_text()
    (k,) = re.findall(r"Success rate \(subspaces\s+within \$10\^\{-(\d+)\}\$\)", text)
    (cell,) = re.findall(r"\nsbd = multihead_sbd_table\((.*)\)\n", text)
    assert "shapes=" in cell and "tol" not in cell
    assert inspect.signature(multihead_sbd_table).parameters["tol"].default == 10.0 ** -int(k)


def test_noisy_arb_entry_error_is_eq_6_by_hand():
    """The Arb leg's own entry error (noisy/arb.py, Thm 6.1's Eq. (6) with Lemma A.1), exact balls at
    L = 4, a = 1/2, s = 2, tau_f = 3, tau_v = 1, mu = 1: ``L / (a s) [(tau_f + a tau_v) / (s mu / 2)
    + tau_v / (mu / 2)]`` = 4 (7/2 + 2) = 22, by hand.  Seed-47 survivor ``noisy/arb.py`` ``mu / 2``
    -> ``mu / 1`` in the second term (18)."""
    arb = pytest.importorskip("flint").arb
    from attnproof.theorems.noisy.arb import _entry_error

    e = _entry_error(arb(4), arb(0.5), arb(2), arb(3), arb(1), arb(1))
    assert e.is_exact() and e == 22


def test_adaptive_skeleton_counts_a_pivot_far_above_its_default_rank_tol_without_a_resumed_stop():
    """learn_skeleton_adaptive's default ``rank_tol`` is 0.1 sqrt(eps) ~ 1.5e-9 relative: W* =
    diag(1, 2^-13, 0, 0) at d = 4 has its second pivot 5e5 times above it, so the cross takes rank
    2 at once and stops on the zero third pivot, checked once: the docstring's d + r (2d - r) + (d - r)
    + STOP_CHECK_MIXES (d - r) = 4 + 12 + 2 + 3 * 2 = 24 queries, no resumed stop.  The curated mutant
    ``skeleton-rank-tol`` (default 1e-2) stops at rank 1, where the stop check sees the residual and
    resumes the cross: the same W, 33 queries (tests/test_lowrank.py killed it in the seed-7 and
    seed-23 runs and no longer does on this tree)."""
    from attnproof.theorems.lowrank import STOP_CHECK_MIXES, learn_skeleton_adaptive

    d, r = 4, 2
    oracle = ValueOracle(Attention(np.diag([1.0, 2.0**-13, 0.0, 0.0]), np.array([1.0, -0.5, 0.25, 2.0])))
    rec = learn_skeleton_adaptive(oracle, rng=np.random.default_rng(0))
    assert rec.diagnostics["rank_found"] == r and not rec.diagnostics.get("stop_resumed")
    assert rec.queries == oracle.queries == d + r * (2 * d - r) + (d - r) + STOP_CHECK_MIXES * (d - r) == 24


# --- the shared levels' sample (tools/mutation.py --files ..., seed 1128, session 19) --------------


def test_split_product_bound_by_hand():
    """arith.split_product's bound at d = 1 by hand: A = 1 + 2^-40, B = 1 + 2^-35 split at t = s = 26
    into A1 = 1, A2 = 2^-40, B1 = 1, B2 = 2^-35; rest = g (|A1| |B2| + |A2| |B|), g = u / (1 - u);
    S = A1 B2 + A2 B, X = A1 B1 + S; bound = (rest (1 + 2 g) + u (|S| + |X|)) (1 + 3 u) (k = 1), no
    underflow term above 1e-300 (the survivor: rest's sum as a difference moves it by 2^-39 g)."""
    from attnproof.arith import split_product

    u = 2.0**-53
    g = u / (1 - u)
    X, bound = split_product(np.array([[1 + 2.0**-40]]), np.array([[1 + 2.0**-35]]))
    S = 2.0**-35 + 2.0**-40
    expected = (g * (2.0**-35 + 2.0**-40 * (1 + 2.0**-35)) * (1 + 2 * g) + u * (S + 1 + S)) * (1 + 3 * u)
    assert X[0, 0] == 1 + S
    assert bound == pytest.approx(expected, rel=2.0**-45, abs=0)


def test_split_product_guards_a_large_column_beside_a_small_one():
    """A column of B near overflow beside a unit one: the guard takes the largest column's exponent
    (F.max()), so the plain product and its worst case are returned, finite and exact here; with the
    smallest column's in ``F.max() + 53 - s``, the split's sigma would overflow (NaN entries).  The
    sampled survivor, F.min() in the guard's first term ``F.max() + E.max() + b``, is equivalent:
    that term exceeds the second, ``F.max() + b + t``, only where ``E.max() > t``, which the guard
    tests first."""
    from attnproof.arith import split_product

    A, B = np.array([[1.0, 1.0]]), np.array([[2.0**1000, 1.0], [0.0, 1.0]])
    X, bound = split_product(A, B)
    assert np.array_equal(X, A @ B) and math.isfinite(bound) and bound >= 0


def test_lower_is_tight_where_the_midpoint_rounds_up():
    """indistinguishable.lower at a ball whose float64 lower end rounds above it (1 - 2^-60 -> 1):
    stepped down by 2^-50 |lo|, it stays within 2^-49 of the ball (the survivor, steps of |lo|,
    returned 0)."""
    from flint import arb, ctx

    from attnproof.indistinguishable import lower

    prec, ctx.prec = ctx.prec, 200
    try:
        m = arb(1) - arb(2) ** -60  # exact at 200 bits: its float64 rounding is 1, above it
        assert not arb(float(m.mid())) <= m
        lo = lower(m)
        assert arb(lo) <= m and lo >= 1 - 2.0**-49
    finally:
        ctx.prec = prec
