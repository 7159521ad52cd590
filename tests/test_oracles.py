"""Oracles count every query, enforce budgets and never answer malformed queries."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnproof import strategies as ast
from attnproof.errors import InvalidInputError, QueryBudgetExceeded, ShapeError, NonFiniteError
from attnproof.models import Attention
from attnproof.oracles import ValueOracle


def oracle(d=3, **kw):
    rng = np.random.default_rng(0)
    return ValueOracle(Attention(rng.standard_normal((d, d)), rng.standard_normal(d)), **kw)


@given(st.lists(st.integers(0, 6), max_size=8))
def test_one_sequence_is_one_query(batches):
    o = oracle()
    for b in batches:
        o(np.ones((b, 2, 3)))
    o(np.ones((2, 3)))
    assert o.queries == sum(batches) + 1
    assert o.calls == len(batches) + 1


def test_budget_refuses_a_batch_whole():
    o = oracle(budget=5)
    o(np.ones((4, 1, 3)))
    with pytest.raises(QueryBudgetExceeded, match="budget of 5"):
        o(np.ones((2, 1, 3)))
    assert o.queries == 4  # the refused batch was not answered, not counted
    o(np.ones((1, 3)))
    assert o.remaining == 0
    with pytest.raises(QueryBudgetExceeded):
        o(np.ones((1, 3)))


@pytest.mark.parametrize("budget", [-1, 2.5, "3"])
def test_bad_budget(budget):
    with pytest.raises(InvalidInputError):
        oracle(budget=budget)


@given(ast.bad_queries(3))
def test_malformed_queries_are_not_counted(X):
    o = oracle()
    with pytest.raises((ShapeError, NonFiniteError)):
        o(X)
    assert o.queries == 0


def test_log_records_copies():
    o = oracle(record=True)
    X = np.ones((2, 2, 3))
    y = o(X)
    X[:] = 7.0
    assert len(o.log) == 1
    assert np.all(o.log[0].X == 1.0) and np.array_equal(o.log[0].y, y)


def test_time_is_accounted():
    o = oracle()
    o(np.ones((100, 2, 3)))
    assert o.seconds > 0
