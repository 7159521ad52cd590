"""Theorem 6.1 and Lemma A.1 attacked: adversarial oracles, edge-of-assumption targets, errata."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnproof import strategies as ast
from attnproof.errors import AssumptionError, InvalidInputError, NonIdentifiableError, ToleranceViolation
from attnproof.models import Attention
from attnproof.oracles import ADVERSARIES, ApproxOracle, ValueOracle
from attnproof.theorems.noisy import (
    BETA_STAR,
    CORRECTED,
    PAPER,
    TUNED,
    design_tolerances,
    guarantee,
    learn_noisy,
    paper_tolerances,
)

adversaries = st.sampled_from(ADVERSARIES)
#: eps near 1 and near 0 included explicitly.
epsilons = st.one_of(st.sampled_from([0.999, 0.5, 1e-3]), st.floats(1e-4, 0.999))

#: Erratum E1's minimal counterexample: ||W*||_F = W_bound = 2 concentrated on W*_11 = W*_21,
#: v* = (0, 1), mu = 1/2 (so |v*_2| > mu, the pivot p = 2 of the proof; the pair probe for i = 1
#: has logit sqrt(2)/2 > 1/2 and its attention weight is clipped).
E1_TARGET = (np.array([[math.sqrt(2), 0.0], [math.sqrt(2), 0.0]]), np.array([0.0, 1.0]), 2.0, 0.5)


def run(target, design, tol, adversary, seed=0):
    W, v, W_bound, mu = target
    oracle = ApproxOracle(Attention(W, v), tau=tol.tau, adversary=adversary, seed=seed)
    rec = learn_noisy(oracle, W_bound=W_bound, mu=mu, design=design)
    return rec, guarantee(rec, W, v), oracle


# --- the oracles -------------------------------------------------------------------------


@given(st.integers(1, 5), st.data(), adversaries, st.floats(1e-12, 10.0))
def test_approx_oracle_stays_within_tau_and_is_deterministic(d, data, adversary, tau):
    W, v = data.draw(ast.matrices(d, 10.0)), data.draw(ast.vectors(d))
    model = Attention(W, v)
    oracle = ApproxOracle(model, tau=tau, adversary=adversary, seed=data.draw(st.integers(0, 2**31)))
    X = data.draw(arrays(np.float64, (data.draw(st.integers(1, 6)), data.draw(st.integers(1, 3)), d),
                         elements=st.floats(-1e3, 1e3)))
    y = oracle(X)
    assert np.all(np.abs(y - model(X)) <= tau)
    assert np.array_equal(y, oracle(X))  # deterministic: same X, same answer
    assert np.array_equal(y[:1], oracle(X[:1]))  # and independent of the batch it came in


def test_oracle_that_would_break_its_tolerance_raises():
    class Broken(ApproxOracle):
        def _error(self, Xb, f):
            return 2 * self.tau * np.ones_like(f)

    with pytest.raises(ToleranceViolation):
        Broken(Attention(np.eye(2), np.ones(2)), tau=0.1)(np.ones((1, 2)))


@pytest.mark.parametrize("kw", [dict(tau=0.0), dict(tau=-1.0), dict(tau=float("nan")), dict(tau=0.1, adversary="nice")])
def test_bad_oracle_arguments(kw):
    with pytest.raises(InvalidInputError):
        ApproxOracle(Attention(np.eye(2), np.ones(2)), **kw)


# --- Lemma A.1 as a property, in exact-enough arithmetic ----------------------------------


@given(st.floats(0, 1), st.one_of(st.floats(-1e300, 1e300), st.floats(-2, 3)))
@example(0.0, 0.0)
@example(1.0, 1.0)
def test_lemma_a1_clipped_logit_is_5_lipschitz(position, alpha_hat):
    with mpmath.workdps(50):
        lo = 1 / (1 + mpmath.exp(mpmath.mpf(1) / 2))
        alpha_star = lo + (1 - 2 * lo) * mpmath.mpf(position)
        clipped = min(max(mpmath.mpf(alpha_hat), lo), 1 - lo)
        logit = lambda p: mpmath.log(p / (1 - p))  # noqa: E731
        lhs = abs(logit(clipped) - logit(alpha_star))
        L = 1 / (lo * (1 - lo))
        assert lhs <= L * abs(mpmath.mpf(alpha_hat) - alpha_star) * (1 + mpmath.mpf(10) ** -40)
        assert L <= 5


# --- Theorem 6.1 attacked ----------------------------------------------------------------


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="Erratum E1: the paper's paired probes saturate the clip")
@given(ast.margin_targets(), epsilons, epsilons, adversaries)
@example(E1_TARGET, 0.5, 0.5, "worst")
def test_theorem_6_1_as_stated(target, eps_W, eps_v, adversary):
    """The proof's learner at the proof's tolerances. FAILS: kept as the erratum's witness."""
    W, v, W_bound, mu = target
    tol = paper_tolerances(eps_W, eps_v, W_bound, mu, len(v))
    _, err, _ = run(target, PAPER, tol, adversary)
    assert err["err_W"] <= eps_W and err["err_v"] <= eps_v


@pytest.mark.parametrize("design", [CORRECTED, TUNED], ids=lambda d: d.name)
@given(target=ast.margin_targets(), eps_W=epsilons, eps_v=epsilons, adversary=adversaries, seed=st.integers(0, 99))
@example(target=E1_TARGET, eps_W=0.5, eps_v=0.5, adversary="worst", seed=0)
@example(target=E1_TARGET, eps_W=1e-3, eps_v=1e-3, adversary="bias", seed=0)
@example(target=(np.array([[2.0]]), np.array([1.0]), 2.0, 1.0), eps_W=0.999, eps_v=0.999, adversary="worst", seed=0)
@example(target=(np.zeros((3, 3)), np.array([0.0, 0.0, 0.1]), 2.0, 0.1), eps_W=1e-3, eps_v=0.5, adversary="round", seed=0)
def test_corrected_theorem_6_1(design, target, eps_W, eps_v, adversary, seed):
    """The corrected learner meets both guarantees at its derived tolerance, for every adversary."""
    W, v, W_bound, mu = target
    tol = design_tolerances(design, eps_W, eps_v, W_bound, mu, len(v))
    rec, err, oracle = run(target, design, tol, adversary, seed)
    assert err["err_W"] <= eps_W
    assert err["err_v"] <= eps_v
    assert rec.queries == oracle.queries == len(v) + len(v) ** 2


def test_erratum_e1_fails_for_every_tolerance():
    """The clipping bias of E1 does not shrink with tau: it is (sqrt 2 - 1) W_bound, not O(tau)."""
    W, v, W_bound, mu = E1_TARGET
    for tau in (1e-3, 1e-6, 1e-12):
        oracle = ApproxOracle(Attention(W, v), tau=tau, adversary="random")
        err = guarantee(learn_noisy(oracle, W_bound=W_bound, mu=mu, design=PAPER), W, v)
        assert err["err_W"] > 0.8
    exact = guarantee(learn_noisy(ValueOracle(Attention(W, v)), W_bound=W_bound, mu=mu, design=PAPER), W, v)
    assert exact["err_W"] == pytest.approx(math.sqrt(2) - (W_bound - math.sqrt(2)), rel=1e-12)


def test_tuned_design_supports_a_larger_tolerance():
    assert BETA_STAR * math.tanh(BETA_STAR / 2) == pytest.approx(2, rel=1e-14)
    for d, W_bound, mu in ((1, 2.0, 1.0), (5, 2.0, 0.3), (10, 20.0, 0.01)):
        paper = paper_tolerances(0.1, 0.1, W_bound, mu, d).tau_f
        assert design_tolerances(CORRECTED, 0.1, 0.1, W_bound, mu, d).tau_f > paper
        assert design_tolerances(TUNED, 0.1, 0.1, W_bound, mu, d).tau_f > 5 * paper


# --- assumptions and failure cases ---------------------------------------------------------


@pytest.mark.parametrize("W_bound,mu,eps", [(1.5, 0.5, 0.1), (2.0, 0.0, 0.1), (2.0, -1.0, 0.1), (2.0, 2.0, 0.1),
                                            (2.0, 0.5, 0.0), (2.0, 0.5, 1.0), (float("inf"), 0.5, 0.1)])
def test_assumption_errors(W_bound, mu, eps):
    with pytest.raises(AssumptionError):
        paper_tolerances(eps, eps, W_bound, mu, 3)


def test_paper_design_has_no_valid_tolerance():
    with pytest.raises(AssumptionError, match="Erratum E1"):
        design_tolerances(PAPER, 0.1, 0.1, 2.0, 0.5, 3)


def test_v_zero_is_not_identifiable_under_noise():
    oracle = ApproxOracle(Attention(np.eye(3), np.zeros(3)), tau=1e-4, adversary="worst")
    with pytest.raises(NonIdentifiableError):
        learn_noisy(oracle, W_bound=2.0, mu=0.5)
    assert oracle.queries == 3


def test_margin_violation_is_detected():
    v = np.array([0.25, 1.0, 0.0]) / np.linalg.norm([0.25, 1.0])  # 0.24 < mu = 0.5
    oracle = ApproxOracle(Attention(np.eye(3), v), tau=1e-4, adversary="random")
    with pytest.raises(AssumptionError, match="margin"):
        learn_noisy(oracle, W_bound=2.0, mu=0.5)


# --- the room convention (one module per result) -------------------------------------------

#: Content hashes of the room's identities, pinned when noisy_identities.py was merged in.
NOISY_HASHES = {
    "lemmaA.1/lipschitz-bound": "38d2455d9f30a87196bd2b35c4c83d0e3fa09b849c88223259cbed83538fb436",
    "lemmaA.1/lipschitz-closed-form": "39eb2938e82eb134c4c46b307ffe7db9dd3c23e5c71ea1ace9197c030360bc7f",
    "lemmaA.1/logit-derivative": "1a50d32fb8c02c47fa6a9e1261d6fe5d2284c713ab1f1b013871a039f4387403",
    "thm6.1/erratum-E1": "5b0b6a7c44eee9fa943662d3668d8068596c5185120fa2caae8e29931dd80629",
    "thm6.1/optimal-beta": "5ce07e59c930da724c98b3c4d64023d4d548b6f3277e71dc8c93053e0418fee5",
    "thm6.1/paired-logit-corrected": "dc601a617aaf5f72a88aa6b7d4e8ba7924f4700fab7c94b0d934352d3c9f14ef",
    "thm6.1/probe-logit": "c55f80e589c592219d5cdd3c607d44ae100fa6e1641b042ce1eed062d0ee812f",
    "thm6.1/tolerance-algebra": "f5725249b0dec680bb7c82562f234a338880b2bf6b2b8a88ab63c632ab128a79",
}


def test_room_is_one_module_with_unchanged_identities():
    import importlib.util
    import inspect

    from attnproof.proof import REGISTRY, content_hash
    from attnproof.theorems import noisy

    assert importlib.util.find_spec("attnproof.theorems.noisy_identities") is None
    for ident, digest in NOISY_HASHES.items():
        entry = REGISTRY[ident]
        assert entry.build.__module__ == noisy.__name__
        assert content_hash(entry, entry.build()) == digest
    # W always means a matrix: the norm bound is W_bound; the logit band is not called beta
    for fn in (noisy.check_assumptions, noisy.paper_tolerances, noisy.design_tolerances,
               noisy.entry_error_per_tau, noisy.ProbeDesign.b):
        params = inspect.signature(fn).parameters
        assert "W_bound" in params and "W" not in params, fn.__name__
    assert CORRECTED.band == 0.5 and not hasattr(CORRECTED, "beta")
