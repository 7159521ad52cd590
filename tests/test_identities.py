"""The registry checks the code that runs: mutants of the learners' constants fail ``verify``.

Each test puts one mutant into the library (the kind of slip an audit found surviving every
check) and asserts that the entries stating that constant now fail, and that they pass
without it (the fixture ``certificate`` of ``tests/test_proof.py`` covers the unmutated run).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from attnproof import verify
from attnproof.theorems import noisy


def _failing(ids: list[str]) -> set[str]:
    return {i for i in ids if not verify.verify(i).own_passed}


NOISY_CONSTANT_ENTRIES = [
    "lemmaA.1/lipschitz-bound", "thm6.1/design-tolerances", "thm6.1/run-float64",
]


def test_noisy_constant_entries_pass_unmutated():
    assert _failing(NOISY_CONSTANT_ENTRIES) == set()


def test_lipschitz_mutant_fails_verify(monkeypatch):
    """ProbeDesign.lipschitz = 2 + cosh(band) instead of 2 + 2 cosh(band): 26 % low at band 1/2."""
    monkeypatch.setattr(noisy.ProbeDesign, "lipschitz", property(lambda self: 2 + math.cosh(self.band)))
    assert _failing(NOISY_CONSTANT_ENTRIES) >= {"lemmaA.1/lipschitz-bound", "thm6.1/design-tolerances"}


def test_tau_v_mutant_fails_verify(monkeypatch):
    """design_tolerances' tau_v without its eps_v / sqrt(d) term: the v guarantee is missed."""
    original = noisy.design_tolerances

    def mutant(design, eps_W, eps_v, W_bound, mu, d):
        tol = original(design, eps_W, eps_v, W_bound, mu, d)
        floor = noisy.float64_floor(design, W_bound, d).tau
        return dataclasses.replace(tol, tau_v=min(math.nextafter(mu / 2 - floor, 0), tol.tau_f))

    monkeypatch.setattr(noisy, "design_tolerances", mutant)
    assert _failing(NOISY_CONSTANT_ENTRIES) == {"thm6.1/design-tolerances", "thm6.1/run-float64"}


def test_clip_mutant_fails_verify(monkeypatch):
    """The clipping level sigma(-band) replaced by sigma(-2 band) (the interval too wide)."""
    monkeypatch.setattr(noisy.ProbeDesign, "clip", property(lambda self: noisy.sigmoid(-2 * self.band)))
    assert "lemmaA.1/lipschitz-bound" in _failing(NOISY_CONSTANT_ENTRIES)


@pytest.mark.parametrize("threshold", [lambda mu: mu / 4, lambda mu: 3 * mu / 4, lambda mu: mu])
def test_support_split_mutant_fails_verify(monkeypatch, threshold):
    """The mu/2 zero / non-zero split of v_hat moved: some tolerance tau < mu/2 then misclassifies."""
    monkeypatch.setattr(noisy, "support_threshold", threshold)
    assert _failing(["thm6.1/support-split"]) == {"thm6.1/support-split"}


def test_paper_tolerances_mutant_fails_verify(monkeypatch):
    """The paper's tau with 80 instead of 160 (the proof's last line halves it)."""
    original = noisy.paper_tolerances

    def mutant(eps_W, eps_v, W_bound, mu, d):
        tol = original(eps_W, eps_v, W_bound, mu, d)
        return dataclasses.replace(tol, tau_f=2 * tol.tau_f)

    monkeypatch.setattr(noisy, "paper_tolerances", mutant)
    assert _failing(["thm6.1/paper-tolerances"]) == {"thm6.1/paper-tolerances"}


def _transposed_scores(X, W, c=None):
    """A wrong score s_i = x_N^T W x_i (the query and key swapped): the bug that library-vs-library
    identities could not see."""
    k = X[:, -1, :] @ W  # (B, d): W^T x_N
    s = (X @ k[:, :, None])[..., 0]
    return s if c is None else s + X @ c


@pytest.mark.parametrize("ident", ["prop7.1/multihead-collapse", "sec4.1/relu-antisymmetry"])
def test_library_vs_paper_identities_see_a_wrong_score(monkeypatch, ident):
    from attnproof import models

    assert verify.verify(ident).own_passed
    monkeypatch.setattr(models, "scores", _transposed_scores)
    assert not verify.verify(ident).own_passed


def test_estimator_mutant_fails_verify(monkeypatch):
    """learn_noisy's estimator subtracting the wrong row for a paired probe (pivot off by one)."""
    original = noisy.estimate

    def mutant(y, v, nonzero, p, *rest):
        return original(y, v, nonzero, (p + 1) % len(v), *rest)

    assert _failing(["thm6.1/estimator"]) == set()
    monkeypatch.setattr(noisy, "estimate", mutant)
    assert _failing(["thm6.1/estimator", "thm6.1/run-float64"]) == {"thm6.1/estimator", "thm6.1/run-float64"}


@pytest.mark.parametrize(
    ("name", "count", "entries"),
    [
        ("exact", lambda d, bias=False, **_: d + d * d + (d if bias else 0),
         {"thm4.1/query-count", "thm4.1/end-to-end-bias", "thm4.1/run-high-precision"}),
        ("skeleton", lambda d, r, rank, bias=False, **_: d + r * (2 * d - r) + (d + 1 if bias else 0),
         {"thm5.1/query-count", "thm5.1/skeleton-end-to-end"}),
        ("noisy", lambda d, **_: d * d, {"thm6.1/run-float64"}),
    ],
)
def test_query_count_mutants_fail_verify(monkeypatch, name, count, entries):
    """A registered count= that forgets a term (f([0]) with biases; the lower-rank column; phase 1)."""
    monkeypatch.setitem(verify.LEARNERS, name, dataclasses.replace(verify.LEARNERS[name], count=count))
    assert _failing(sorted(entries)) == entries


def test_rotated_membership_mutant_fails_verify(monkeypatch):
    """RotatedQueries asking Y Q instead of Y Q^T (the tokens rotated the wrong way)."""
    from attnproof.theorems import membership

    assert _failing(["thmB.1/run-rotated"]) == set()
    monkeypatch.setattr(membership.RotatedQueries, "__call__",
                        lambda self, Y: self.oracle(np.asarray(Y) @ self.Q))
    assert _failing(["thmB.1/run-rotated"]) == {"thmB.1/run-rotated"}


def test_sbd_finite_difference_mutant_fails_verify(monkeypatch):
    """fd_hessian's mixed differences divided by 2 h^2 instead of 4 h^2 (off-diagonal entries doubled)."""
    from attnproof.theorems.multihead import sbd

    original = sbd.fd_hessian

    def mutant(*args):
        Hs = original(*args)
        return 2 * Hs - np.diag(np.diag(Hs))

    assert _failing(["sec7/run-sbd"]) == set()
    monkeypatch.setattr(sbd, "fd_hessian", mutant)
    assert _failing(["sec7/run-sbd"]) == {"sec7/run-sbd"}


def test_cvx_measurement_mutant_fails_verify(monkeypatch):
    """learn_lowrank_cvx fed the measurements t_k = a_k^T W* b_k with the wrong sign."""
    from attnproof.theorems import lowrank

    original = lowrank.bilinear_values
    assert _failing(["thm5.1/run-cvx"]) == set()
    monkeypatch.setattr(lowrank, "bilinear_values", lambda *args: -original(*args))
    assert _failing(["thm5.1/run-cvx"]) == {"thm5.1/run-cvx"}
