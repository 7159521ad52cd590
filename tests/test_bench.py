"""The learner table and the bench: one source of truth for names, arithmetics and counts."""

from __future__ import annotations

import pytest

from attnproof.bench import RUNNERS, options_of, run
from attnproof.errors import InvalidInputError
from attnproof.proof import LEARNERS, REGISTRY

SMALL = {
    "exact": {},
    "skeleton": {"rank": 2},
    "skeleton-adaptive": {"rank": 2},
    "lowrank-cvx": {"rank": 1},
    "noisy": {},
    "ffn": {"m": 6},
    "transformer": {"m": 6},
    "orthogonal-heads": {"H": 2},
    "multihead-sbd": {"H": 2},
    "membership": {"eps_W": 1e-2},
    "membership-rotated": {"eps_W": 1e-2},
}


def test_every_registered_learner_has_a_runner_and_declares_real_identities():
    assert set(RUNNERS) == set(LEARNERS)
    for name, lr in LEARNERS.items():
        assert lr.relies_on and set(lr.relies_on) <= set(REGISTRY), name
        assert set(lr.arithmetics) <= {"float64", "mpmath", "sympy"} and lr.count is not None


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_queries_are_the_learners_formula_plus_counted_reasks(learner):
    if learner == "lowrank-cvx":
        pytest.importorskip("cvxpy")
    arith = "mp:40" if learner == "membership-rotated" else "float64"  # its margin needs digits
    r = run(learner, 4, arith, 0, **SMALL.get(learner, {}))
    reasked = r["diagnostics"]["reasked_queries"]
    assert r["queries"] == r["queries_formula"] + reasked
    assert r["within_bound"] is not False


def test_run_refuses_unknown_learners_options_and_arithmetics():
    with pytest.raises(InvalidInputError, match="unknown learner"):
        run("nope", 4)
    with pytest.raises(InvalidInputError, match="takes no option"):
        run("exact", 4, tau=0.1)
    with pytest.raises(InvalidInputError, match="runs in float64"):
        run("noisy", 4, "mp:30")
    assert "rank" in options_of("skeleton") and "rank" not in options_of("exact")
