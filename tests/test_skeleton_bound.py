"""The skeleton learner's error bound (issue 22 item 4, issue 21 item 4): the work it shares is shared
bitwise, and its tightened terms stay rigorous (an oracle erring as declared stays within them)."""

from __future__ import annotations

import numpy as np
import pytest

import attnproof.theorems.lowrank as lowrank
from attnproof.bench import low_rank_target
from attnproof.measure import Probes, value_errors
from attnproof.models import FAITHFUL, NAIVE, FactoredAttention
from attnproof.oracles import ValueOracle
from attnproof.theorems.lowrank import learn_skeleton


def _captured(monkeypatch, d, r, seed, answers="naive"):
    """A skeleton run's (session, probes, cross, W_norm, c_norm, unshorten) as _cross_error sees them."""
    seen = []
    error = lowrank._cross_error
    monkeypatch.setattr(lowrank, "_cross_error", lambda *a: seen.append(a) or error(*a))
    K, Q, v = low_rank_target(d, r, np.random.default_rng(seed))
    rec = learn_skeleton(ValueOracle(FactoredAttention(K, Q, v, answers=answers)), rank=r,
                         rng=np.random.default_rng(seed + 1))
    return rec, seen[0][:6]


@pytest.mark.parametrize("answers", ["naive", "faithful"])
def test_shared_bound_work_is_bitwise_the_fresh_computation(monkeypatch, answers):
    """Probes.memo (row sizes, |P| |v|, the a-posteriori P v errors, the dense check) and the image
    norms computed once change no bit: value_errors on a probe set that has served the learner's
    bound and estimate equals it on a fresh copy of the probes, bound and typical alike; and
    _cross_error with the learner's images equals it computing its own."""
    d, r = 24, 3
    rec, (session, probes, cross, W_norm, c_norm, unshorten) = _captured(monkeypatch, d, r, 4, answers)
    assert probes._memo  # the learner's bound filled it
    fresh = Probes(probes.P, probes.Q, probes.v, probes.arith, offset=probes.offset, linear=probes.linear,
                   scale_query_only=probes.scale_query_only, linear_err=probes.linear_err,
                   linear_typical=probes.linear_typical)
    rows, cols = np.nonzero(cross.known)
    images = lowrank._image_norms(cross, session.arith, unshorten)
    args = (cross.L[rows, cols], cross.k[rows, cols], (rows, cols), W_norm, c_norm)
    for kw in ({"rounding": session.rounding, "images": images[cols]}, {"Wq": images[cols]}):
        warm, cold = value_errors(probes, *args, **kw), value_errors(fresh, *args, **kw)
        assert fresh._memo and np.array_equal(warm, cold)
    shared = lowrank._cross_error(session, probes, cross, W_norm, c_norm, unshorten, images)
    assert shared == lowrank._cross_error(session, fresh, cross, W_norm, c_norm, unshorten)
    assert rec.error_bound >= shared > 0
