"""The skeleton bound's work restricted to what it reads (issue 21 item 4): ``_shared_v_error`` builds
only the pivot columns and rows of the coefficients' matrix, not the whole d x d, and must give
bitwise what the dense construction gives (the bound is compared to the last bit before and after)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnproof.theorems.lowrank as lowrank
from attnproof.arith import FLOAT64
from attnproof.measure import SharedV


def _dense_reference(shared, entries, pivots, X, Y, unshorten, bases):
    """The construction the bound used before (the whole d x d matrices of the coefficients), kept here
    as the reference the restricted one must equal bitwise."""
    (rows, cols), (I, J) = entries, pivots
    d = len(unshorten)
    Wp, Wq = np.zeros((d, d)), np.zeros((d, d))
    Wp[rows, cols], Wq[rows, cols] = shared.p, shared.q
    top = float(max(np.max(np.abs(Wp)), np.max(np.abs(Wq))))
    if not top > 0:
        return 0.0, 0.0, 0.0
    e = -math.floor(math.log2(top))
    Wp, Wq = np.ldexp(Wp, e), np.ldexp(Wq, e)
    a, b = (math.ldexp(x * shared.norm, -e) for x in bases)
    Io, Jo = np.setdiff1d(np.arange(d), I), np.setdiff1d(np.arange(d), J)

    def rows_max(Z, G=None):
        q = np.sum(Z * Z, axis=1) if G is None else np.einsum("ij,jk,ik->i", Z, G, Z)
        return math.sqrt(max(float(np.max(q, initial=0.0)), 0.0)) * (1 + 2.0**-20)

    Cp, Cq = Wp[:, J] * unshorten[:, None], Wq[:, J] * unshorten[:, None]
    Rp, Rq = Wp[np.ix_(I, Jo)], Wq[np.ix_(I, Jo)]
    skeleton_C = rows_max(Cp) * a + rows_max(Cq.T) * b
    skeleton_R = rows_max(Rp * unshorten[I, None]) * a + rows_max((Rq * unshorten[I, None]).T) * b
    XX, YY = X.T @ X, Y @ Y.T
    dC = rows_max(Cp[Io], YY) * a + lowrank._gram_norm((Cq[Io].T @ Cq[Io]) * YY) * b
    dR = lowrank._gram_norm(XX * (Rp @ Rp.T)) * a + rows_max(Rq.T, XX) * b
    Up, Uq = Wp[np.ix_(I, J)], Wq[np.ix_(I, J)]
    UY = Up @ Y
    dU = lowrank._gram_norm(XX * (UY @ UY.T)) * a + lowrank._gram_norm((Uq.T @ XX @ Uq) * YY) * b
    return skeleton_C, skeleton_R, dC + dR + dU


@pytest.mark.parametrize("d, r, size, seed", [(9, 2, 1.0, 0), (16, 5, 1e-300, 1), (16, 5, 1e250, 2),
                                              (7, 7, 1.0, 3), (12, 4, 0.0, 4)])
def test_shared_v_error_on_the_pivot_blocks_is_bitwise_the_dense_construction(d, r, size, seed):
    """Random pivots (in the cross's pivoting order, not sorted), a skeleton's entries with a stop
    column's left out, coefficients of any size (tiny, huge, all zero) and shortened rows: the restricted
    construction returns the dense one's three numbers exactly."""
    rng = np.random.default_rng(seed)
    I, J = [int(i) for i in rng.permutation(d)[:r]], [int(j) for j in rng.permutation(d)[:r]]
    on = np.zeros((d, d), dtype=bool)
    on[I, :], on[:, J] = True, True
    stop = next((j for j in range(d) if j not in J), None)
    if stop is not None:
        on[:, stop] &= np.isin(np.arange(d), I)
    rows, cols = np.nonzero(on)
    n = len(rows)
    shared = SharedV(rng.standard_normal(n) * size, rng.standard_normal(n) * size * 0.5,
                     norm=float(rng.uniform(0.5, 2)))
    Io, Jo = np.setdiff1d(np.arange(d), I), np.setdiff1d(np.arange(d), J)
    X, Y = rng.standard_normal((len(Io), r)), rng.standard_normal((r, len(Jo)))
    unshorten = np.ldexp(1.0, rng.integers(-3, 4, d)).astype(float)
    bases = (1 + 1e-14, 1 + 3e-15)
    got = lowrank._shared_v_error(shared, (rows, cols), (I, J), X, Y, unshorten, bases)
    want = _dense_reference(shared, (rows, cols), (I, J), X, Y, unshorten, bases)
    assert got == want and (size == 0) == (got == (0.0, 0.0, 0.0))


def test_bench_perf_line_shows_the_oracles_cost_per_query_against_its_flops():
    """``bench perf``'s learner/oracle line carries the rooms' words on the timing run, as the CLI's line
    does: for a low-rank run the oracle's seconds per query against its 6 d r flops (issue 21 item 4)."""
    from attnproof.bench import perf_summary, perf_table
    from attnproof.theorems.lowrank.runner import _oracle_cost_note

    d, r, queries, oracle = 64, 4, 1000, 0.5
    timed = {"part": "time", "learner": "skeleton", "d": d, "rank": r, "seconds": 0.75,
             "oracle_seconds": oracle, "learner_seconds": 0.25, "oracle_seconds_per_query": oracle / queries,
             "oracle_flops_per_query": 6 * d * r, "diagnostics": {"time": {"oracle": oracle, "solve": 0.25}}}
    (entry,) = perf_summary([timed])["learner_over_oracle"]
    note = _oracle_cost_note(timed)
    assert note is not None and "us/query" in note and entry["notes"] == [note]
    table = perf_table(perf_summary([timed]))
    line = next(row["ratio"] for row in table if row["ratio"].startswith("learner"))
    assert note in line and "solve 0.2 s" in line
    untimed = {k: v for k, v in timed.items() if not k.startswith("oracle_") or k == "oracle_seconds"}
    assert perf_summary([untimed])["learner_over_oracle"][0]["notes"] == []


def test_block_is_the_rows_then_columns_copy_in_its_layout():
    """``Measured.block(rows, cols, "F")`` (the cross's entries on its lines) is ``M[rows][:, cols]`` of
    the d x d M bitwise and in the same memory layout (the bound's products and norms read it, and
    their summation order follows the layout), for pivots in any order, read from the stored columns
    or from the stored rows."""
    rng = np.random.default_rng(5)
    M = rng.standard_normal((11, 11))
    by_cols = lowrank.Measured.from_dense(M, np.ones((11, 11), bool), np.zeros((11, 11)),
                                          np.zeros((11, 11), np.int32))
    by_rows = lowrank.Measured.empty(11, FLOAT64)
    for i in range(11):
        by_rows.put(i, np.arange(11), M[i], np.zeros(11), np.zeros(11, np.int32))
    rows, cols = np.setdiff1d(np.arange(11), [7, 2]), [7, 2, 9]
    for store in (by_cols, by_rows):
        for r_, c_ in ((rows, cols), ([7, 2, 9], rows)):
            got, want = store.block(r_, c_, "F"), M[r_][:, c_]
            assert got.tobytes(order="A") == want.tobytes(order="A") and got.strides == want.strides
