"""The floor under Thm 5.1's naive bound (issue 22): two rank-r targets that every answer of the real
oracle fits under the naive declaration, proven answer by answer, so that no rigorous bound from the
skeleton's transcript can lie below half their distance
(:mod:`attnproof.theorems.lowrank.indistinguishable`)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from attnproof.errors import InvalidInputError, ShapeError
from attnproof.models import FactoredAttention
from attnproof.oracles import QueryRecord, ValueOracle
from attnproof.theorems.lowrank import learn_skeleton
from attnproof.theorems.lowrank.indistinguishable import (
    _factored_balls, factored_margins, floor_row, indistinguishable,
)
from attnproof.theorems.lowrank.runner import low_rank_target

SIZES = ((8, 2), (16, 4))


def recorded_run(d: int, rank: int, seed: int = 0):
    """A bench run of Thm 5.1 (float64, naive answers, defaults) with every query recorded."""
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, rank, rng)
    oracle = ValueOracle(FactoredAttention(K, Q, v), record=True)
    return oracle.log, K, Q, v, learn_skeleton(oracle, rank=rank, rng=rng)


@pytest.fixture(scope="module", params=SIZES, ids=str)
def run(request):
    log, K, Q, v, rec = recorded_run(*request.param)
    return log, K, Q, v, rec, indistinguishable(log, K, Q, v)


def test_every_answer_is_proven_at_the_target_and_in_both_worlds(run):
    log, K, Q, v, rec, found = run
    for factors in ((K, Q), *found.worlds):
        margins = factored_margins(log, *factors, v)
        assert set(margins) == {1, 2}
        assert all(np.all(m >= 0) for m in margins.values())
    assert found.answers == sum(len(r.y) for r in log) == rec.queries
    assert all(np.any(Kw.T @ Qw != K.T @ Q) for Kw, Qw in found.worlds)
    assert all(Kw.shape == K.shape for Kw, _ in found.worlds)  # rank <= r by construction


def test_the_bound_is_above_the_floor_and_the_floor_above_the_error(run):
    _, K, Q, _, rec, found = run
    err = float(np.linalg.norm(rec.W - K.T @ Q))
    assert err < found.floor <= rec.error_bound
    assert all(np.linalg.norm(rec.W - Kw.T @ Qw) <= rec.error_bound for Kw, Qw in found.worlds)


def test_an_inflated_move_is_rejected(run):
    """The check can fail: the factors moved 4 times as far leave answers outside the declaration."""
    log, K, Q, v, _, found = run
    (Kp, Qp), _ = found.worlds
    margins = factored_margins(log, K + 4 * (Kp - K), Q + 4 * (Qp - Q), v)
    assert np.any(~(margins[2] >= 0))
    assert np.all(margins[1] >= 0)  # v's reads do not depend on W


def test_the_logit_ball_holds_the_exact_logit():
    """The factored enclosure of ``x_1^T K^T Q x_2 - x_2^T K^T Q x_2``, checked in exact rationals."""
    log, K, Q, v, _ = recorded_run(8, 2)
    X = np.concatenate([r.X for r in log if r.X.shape[1] == 2])[:12]
    s, c, rad = _factored_balls(X, K, Q, v)["L"]
    Wf = [[sum(Fraction(K[a, i]) * Fraction(Q[a, j]) for a in range(K.shape[0])) for j in range(8)]
          for i in range(8)]
    for b in range(len(X)):
        p = [Fraction(X[b, 0, i]) - Fraction(X[b, 1, i]) for i in range(8)]
        exact = sum(p[i] * Wf[i][j] * Fraction(X[b, 1, j]) for i in range(8) for j in range(8))
        assert abs(Fraction(s[b]) + Fraction(c[b]) - exact) <= Fraction(rad[b])


def test_the_floor_row():
    row = floor_row(8, 2, seed=1)
    assert row["floor_over_error"] > 1 and row["bound_over_floor"] >= 1
    assert row["alt_error_over_bound"] <= 1 and row["answers"] == 8 + 2 * (2 * 8 - 2)


def test_bad_input_is_refused():
    log, K, Q, v, _ = recorded_run(8, 2)
    with pytest.raises(ShapeError):
        factored_margins(log, K, Q[:, :4], v)
    with pytest.raises(InvalidInputError):
        factored_margins([QueryRecord(np.ones((1, 3, 8)), np.zeros(1))], K, Q, v)
    with pytest.raises(InvalidInputError):  # factors 1e-150: products would underflow
        factored_margins(log, K * 1e-150, Q, v)
