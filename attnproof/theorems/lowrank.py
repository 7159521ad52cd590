"""Theorem 5.1: low-rank W* (rank <= r) from O(r d) queries -- and at the floor d + r(2d - r).

**The paper's method** (:func:`learn_lowrank_cvx`): two-token probes ``X = [(a + b)^T; b^T]``
with Gaussian a, b give the rank-one measurement ``t = a^T W* b = <a b^T, W*>`` (identity
``thm5.1/rank-one-measurement``); m of them and nuclear-norm minimisation
``min ||W||_* s.t. <a_k b_k^T, W> = t_k`` (Eq. (2)) recover W* when m >= C r (2d) (Cai and
Zhang's RUB, Thm A.2), with C unspecified.

**The floor** (:func:`learn_skeleton`): a rank-r d x d matrix has r(2d - r) degrees of freedom
and v* has d, so no learner can do with fewer than d + r(2d - r) value queries for generic
targets.  Adaptive probes reach it without a convex program: in random orthonormal bases
P, Q (rows p_k, q_l) measure only the skeleton of ``M = P W* Q^T`` -- its first r columns
C and first r rows R, sharing the r x r corner U, each entry one bilinear query -- and
reconstruct ``M = C U^{-1} R`` (identity ``thm5.1/skeleton-reconstruction``), so
``W* = P^T C U^{-1} R Q``.  :func:`learn_skeleton_adaptive` grows the skeleton one rank at a
time until the Schur complement of the new row and column vanishes, for unknown r, with at
most 2(d - r) - 1 extra queries.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from ..arith import FLOAT64, Arith
from ..errors import AssumptionError, InvalidInputError, PrecisionLossError
from ..measure import Probes, ScalePolicy, bilinear_values, measure_adaptively, resolution, sparing
from ..oracles import ValueOracle
from ..proof import learner
from ..recovery import Recovery
from .bias import learn_beta_v, learn_score_bias, tame_rows
from .exact import learn_v

def random_bases(d: int, v: np.ndarray, rng: np.random.Generator, arith: Arith) -> tuple[np.ndarray, np.ndarray]:
    """Random orthonormal bases P, Q of R^d (as rows) with P v* balanced.

    Q is Haar-random; P is Haar-random followed by the Householder reflection that maps
    P v* / ||v*|| to a random sign vector / sqrt(d), so every ``p_k^T v* = +-||v*|| / sqrt(d)``:
    no probe divides by a small ``p^T v*`` (the label error is amplified by
    ``(|p^T v| + 2 |q^T v|) / |p^T v|``).  For exact arithmetic (symbolic v*) P is Haar-random.
    """
    R = np.linalg.qr(rng.standard_normal((d, d)))[0].T
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0].T
    if not arith.exact:
        vf = arith.to_float(v)
        u = R @ vf / np.linalg.norm(vf)
        w = rng.choice([-1.0, 1.0], size=d) / np.sqrt(d)
        h = u - w
        if np.linalg.norm(h) > 0:
            R = R - np.outer(2 * h / (h @ h), h @ R)
    return arith.asarray(R), arith.asarray(Q)


def _invert_basis(P: np.ndarray, arith: Arith) -> np.ndarray:
    """P^{-1}: P^T for float64 (P is orthogonal to rounding), an exact solve otherwise."""
    return P.T if arith is FLOAT64 else arith.solve(P, arith.eye(P.shape[0]))


def reconstruct(M: np.ndarray, k: int, arith: Arith) -> np.ndarray:
    """M = C_k U_k^{-1} R_k from its rank-k skeleton (``thm5.1/skeleton-reconstruction``).

    Only the first k columns C_k, the first k rows R_k and their corner U_k of ``M`` are read.
    """
    d = M.shape[0]
    if k == 0:
        return arith.zeros((d, d))
    return M[:, :k] @ arith.solve(M[:k, :k], M[:k, :])


def _default_rank_tol(arith: Arith) -> float:
    return 0.0 if arith.exact else float(np.sqrt(max(arith.eps, 2.0**-53))) * 1e-1


def cross_approximation(
    oracle: ValueOracle,
    probes: Probes,
    max_rank: int,
    rank_tol: float,
    policy: ScalePolicy | None,
    info: dict[str, Any],
    max_batch_bytes: int = 2**28,
) -> tuple[np.ndarray, np.ndarray]:
    """Pivoted cross approximation of ``M = P W* Q^T``, each entry one bilinear query.

    Step s measures the pivot column j_s where not yet known (d - s entries), picks the row
    i_s with the largest residual, and -- if that pivot is not negligible -- measures row i_s
    where not yet known (d - s - 1 entries): r steps use exactly r(2d - r) queries, the
    skeleton of :func:`reconstruct` with rows and columns chosen by partial pivoting, which
    keeps it well conditioned.  The next column is the largest residual entry of the row.
    Stops after ``max_rank`` steps or when a pivot column's residual is below
    ``rank_tol * max|M_measured|`` (plus the rounding resolution): that costs d - r queries.

    Returns
    -------
    (A, B) with ``M = A @ B``, A of shape (d, r), B of shape (r, d), r the rank found.
    """
    arith = probes.arith
    d = probes.d
    M = arith.zeros((d, d))
    known = np.zeros((d, d), dtype=bool)
    A, B = arith.zeros((d, 0)), arith.zeros((0, d))
    free_rows, free_cols = np.ones(d, dtype=bool), np.ones(d, dtype=bool)
    scale, floor, pivots = 0.0, 0.0, []
    j, k0, first = 0, 0, True
    policy = sparing(policy)  # a pivot column may be small compared with the rest of M
    buffer = np.empty((min(d, max(1, max_batch_bytes // (16 * d))), 2, d)) if arith is FLOAT64 else None

    def ask(kk: np.ndarray, ll: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One batch; the first settles the scale (W* may be far from unit size), the rest start there."""
        nonlocal k0, first
        L, k = measure_adaptively(oracle, probes, (kk, ll), policy, info, max_batch_bytes, k0, first, buffer)
        if first and len(k):
            k0, first = int(np.median(k)), False
        return L, k

    for _ in range(max_rank):
        rows = np.flatnonzero(~known[:, j])
        if len(rows):
            L, k = ask(rows, np.full(len(rows), j))
            M[rows, j] = values = probes.values(L, k, rows)
            known[rows, j] = True
            scale = max(scale, arith.abs_max(values))
            floor = max(floor, 64 * float(resolution(probes, (rows, np.full(len(rows), j)), k).max()))
        col = M[:, j] - A @ B[:, j]
        mags = _sizes(col, arith)
        mags[~free_rows] = -1.0
        i = int(np.argmax(mags))
        if mags[i] <= 0 or (not arith.exact and mags[i] <= rank_tol * scale + floor):
            break  # the residual column vanishes: rank found
        cols = np.flatnonzero(~known[i, :])
        if len(cols):
            L, k = ask(np.full(len(cols), i), cols)
            M[i, cols] = values = probes.values(L, k, np.full(len(cols), i))
            known[i, cols] = True
            scale = max(scale, arith.abs_max(values))
        row = M[i, :] - A[i, :] @ B
        pivots.append(float(mags[i]))
        A = np.concatenate([A, (col / col[i])[:, None]], axis=1)
        B = np.concatenate([B, row[None, :]], axis=0)
        free_rows[i], free_cols[j] = False, False
        rmags = _sizes(row, arith)
        rmags[~free_cols] = -1.0
        j = int(np.argmax(rmags)) if free_cols.any() else j
        if not free_cols.any():
            break
    info["rank_found"] = A.shape[1]
    info["pivot_ratio"] = (min(pivots) / max(pivots)) if pivots else 1.0
    return A, B


def _sizes(x: np.ndarray, arith: Arith) -> np.ndarray:
    """|x| as floats for pivoting; in exact arithmetic 0 only for a provable zero."""
    if arith.exact:
        return np.array([0.0 if arith.is_zero(t) else 1.0 + float(abs(t)) for t in x])
    return arith.to_float(np.abs(x))


@learner(
    name="skeleton",
    result="Thm 5.1 (at the floor)",
    relies_on=(
        "thm4.1/one-token", "thm4.1/label-affine", "thm5.1/rank-one-measurement", "thm5.1/skeleton-reconstruction",
        "bias/score-expansion", "bias/value-offset", "bias/zero-token", "bias/zero-last-token",
    ),
    arithmetics=("float64", "mpmath", "sympy"),
    queries="d + r(2d - r) (+ d + 1 with biases)",
    count=lambda d, r, bias=False, **_: d + r * (2 * d - r) + (d + 1 if bias else 0),
)
def learn_skeleton(
    oracle: ValueOracle,
    *,
    rank: int,
    rng: np.random.Generator,
    arith: Arith = FLOAT64,
    policy: ScalePolicy | None = None,
    checks: int = 0,
    rank_tol: float | None = None,
    max_batch_bytes: int = 2**28,
    bias: bool = False,
) -> Recovery:
    """Recover (W*, v*) with rank(W*) <= ``rank`` from at most d + r(2d - r) value queries.

    Exactly d + r(2d - r) when rank(W*) = r (the information-theoretic floor); a lower rank is
    detected on the way and costs fewer queries.

    Parameters
    ----------
    oracle : ValueOracle
    rank : int
        The declared bound r on rank(W*), 0 <= r <= d.
    rng : numpy.random.Generator
        Source of the random bases.
    arith : Arith
    policy : ScalePolicy, optional
        Probe scaling (float64 / mpmath).
    checks : int
        Extra random bilinear queries a^T W* b compared with the reconstruction: each
        detects a rank larger than declared with probability 1 (0 keeps the count at the floor).
    rank_tol : float, optional
        Relative size below which a residual pivot counts as 0.
    bias : bool
        A head with biases: also recover c and beta (d + 1 more queries).

    Raises
    ------
    AssumptionError
        A check query disagrees with the reconstruction: rank(W*) > the declared r.
    """
    d = oracle.d
    if not (isinstance(rank, (int, np.integer)) and 0 <= rank <= d):
        raise InvalidInputError(f"rank must be an integer in [0, d = {d}]; got {rank!r}")
    return _learn_by_crosses(oracle, int(rank), rng, arith, policy, checks, rank_tol, max_batch_bytes, "skeleton", bias)


@learner(
    name="skeleton-adaptive",
    result="Thm 5.1 (unknown rank)",
    relies_on=(
        "thm4.1/one-token", "thm4.1/label-affine", "thm5.1/rank-one-measurement", "thm5.1/skeleton-reconstruction",
        "bias/score-expansion", "bias/value-offset", "bias/zero-token", "bias/zero-last-token",
    ),
    arithmetics=("float64", "mpmath", "sympy"),
    queries="d + r(2d - r) + (d - r) (+ d + 1 with biases)",
    count=lambda d, r, bias=False, **_: d + r * (2 * d - r) + (d - r) + (d + 1 if bias else 0),
)
def learn_skeleton_adaptive(
    oracle: ValueOracle,
    *,
    rng: np.random.Generator,
    arith: Arith = FLOAT64,
    policy: ScalePolicy | None = None,
    rank_tol: float | None = None,
    max_batch_bytes: int = 2**28,
    bias: bool = False,
) -> Recovery:
    """Recover (W*, v*) without knowing r: cross approximation until a pivot column vanishes.

    d + r(2d - r) + (d - r) queries for rank r < d (the extra d - r measure the column that
    shows the residual is 0), and d + d^2 when W* has full rank (``rank_found = d``).
    """
    return _learn_by_crosses(oracle, oracle.d, rng, arith, policy, 0, rank_tol, max_batch_bytes, "skeleton-adaptive", bias)


def _learn_by_crosses(
    oracle: ValueOracle,
    max_rank: int,
    rng: np.random.Generator,
    arith: Arith,
    policy: ScalePolicy | None,
    checks: int,
    rank_tol: float | None,
    max_batch_bytes: int,
    name: str,
    bias: bool = False,
) -> Recovery:
    d = oracle.d
    rank_tol = _default_rank_tol(arith) if rank_tol is None else rank_tol
    start, t0 = oracle.queries, time.perf_counter()
    info: dict[str, Any] = {"learner": name, "rank_declared": max_rank if name == "skeleton" else None}
    with arith.context():
        beta, v = learn_beta_v(oracle, arith) if bias else (0, learn_v(oracle, arith))
        P, Q = random_bases(d, v, rng, arith)
        t_c, shorten = None, np.ones(d)
        if bias:
            t_c = learn_score_bias(oracle, P, v, beta, arith, policy, info)
            shorten = tame_rows(t_c, arith)  # rows p_k with |c^T p_k| > 2 become 2^-m p_k
        probes = Probes(P * shorten[:, None], Q, v, arith, offset=beta,
                        linear=None if t_c is None else t_c * shorten, scale_query_only=bias)
        A, B = cross_approximation(oracle, probes, max_rank, rank_tol, policy, info, max_batch_bytes)
        A = A / shorten[:, None]  # M' = D M for the shortened rows: M = D^{-1} M'
        W = (_invert_basis(P, arith) @ A) @ (B @ _invert_basis(Q, arith).T)
        c = _invert_basis(P, arith) @ t_c if bias else None
        if checks:
            _check_rank(oracle, probes, W, c, checks, rng, policy, info)
    queries = oracle.queries - start
    r = info["rank_found"]
    floor = d + r * (2 * d - r) + (d + 1 if bias else 0)
    info.update(floor_queries=floor, extra_queries=queries - floor, seconds=time.perf_counter() - t0)
    return Recovery(W=W, v=v, queries=queries, arith=arith.name, diagnostics=info, c=c, beta=beta if bias else None)


def _check_rank(
    oracle: ValueOracle,
    probes: Probes,
    W: np.ndarray,
    c: np.ndarray | None,
    checks: int,
    rng: np.random.Generator,
    policy: ScalePolicy | None,
    info: dict[str, Any],
) -> None:
    """Compare ``checks`` fresh measurements a^T W* b with the reconstruction."""
    arith, d = probes.arith, probes.d
    A, B = random_bases(d, probes.v, rng, arith)
    A, B = A[:checks], B[:checks]
    linear = None if c is None else A @ c
    fresh = Probes(A, B, probes.v, arith, offset=probes.offset, linear=linear, scale_query_only=probes.scale_query_only)
    idx = np.arange(checks)
    L, k = measure_adaptively(oracle, fresh, (idx, idx), policy, {}, 2**28)
    measured = fresh.values(L, k, idx)
    predicted = np.array([A[i] @ W @ B[i] for i in range(checks)], dtype=measured.dtype)
    if arith.exact:
        gap = 0.0 if all(arith.is_zero(x) for x in measured - predicted) else 1.0
    else:
        gap = arith.abs_max(measured - predicted) / max(arith.abs_max(measured), arith.abs_max(predicted), 1e-300)
    info["check_gap"] = gap
    if gap > max(1e-6, 1e6 * arith.eps):
        raise AssumptionError(
            f"a check measurement disagrees with the rank-{info['rank_found']} reconstruction "
            f"(relative gap {gap:.2e}): rank(W*) exceeds the declared {info['rank_declared']}"
        )


@learner(
    name="lowrank-cvx",
    result="Thm 5.1",
    relies_on=("thm4.1/one-token", "thm4.1/label-affine", "thm5.1/rank-one-measurement"),
    arithmetics=("float64",),
    queries="d + m (m = 3 r(2d - r) by default)",
    count=lambda d, r, m=None, **_: d + (3 * r * (2 * d - r) if m is None else m),
)
def learn_lowrank_cvx(
    oracle: ValueOracle,
    *,
    m: int,
    rng: np.random.Generator,
    solver: str = "CLARABEL",
    policy: ScalePolicy | None = None,
) -> Recovery:
    """Thm 5.1 as the paper states it: m Gaussian rank-one measurements + nuclear-norm min.

    ``t_k = sigma^{-1}((y_k - b_k^T v) / (a_k^T v)) = a_k^T W* b_k`` from the probe
    ``[(a_k + b_k)^T; b_k^T]``, then ``min ||W||_* s.t. <a_k b_k^T, W> = t_k`` (Eq. (2)).
    The solver is Clarabel (an interior-point conic solver shipped with cvxpy on PyPI):
    it handles the semidefinite cone of the nuclear norm and reaches ~1e-8 relative
    accuracy, which first-order solvers such as SCS do not at these sizes.

    Returns
    -------
    Recovery
        Diagnostics: m, solver, status, solver seconds, measurement residual.
    """
    import cvxpy as cp

    d = oracle.d
    start = oracle.queries
    info: dict[str, Any] = {"learner": "lowrank-cvx", "m": int(m), "solver": solver}
    v = learn_v(oracle, FLOAT64)
    A, B = rng.standard_normal((m, d)), rng.standard_normal((m, d))
    keep = np.abs(A @ v) >= 1e-3 * np.linalg.norm(v)
    A[~keep] = rng.standard_normal(((~keep).sum(), d))  # a^T v ~ 0 would carry no information
    info["redrawn"] = int((~keep).sum())
    probes = Probes(A, B, v, FLOAT64)
    idx = np.arange(m)
    L, k = measure_adaptively(oracle, probes, (idx, idx), policy, info)
    t = bilinear_values(L, k, FLOAT64)
    W = cp.Variable((d, d))
    problem = cp.Problem(cp.Minimize(cp.normNuc(W)), [cp.sum(cp.multiply(A @ W, B), axis=1) == t])
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # "may be inaccurate" is reported as the status instead
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=solver)
    info.update(status=problem.status, solver_seconds=time.perf_counter() - t0)
    if W.value is None:
        raise PrecisionLossError(f"the nuclear-norm program ended with status {problem.status!r}")
    What = np.asarray(W.value)
    info["residual"] = float(np.max(np.abs(np.sum((A @ What) * B, axis=1) - t)))
    queries = oracle.queries - start
    info["extra_queries"] = queries - (d + m)  # saturated Gaussian probes asked again, rescaled
    return Recovery(W=What, v=v, queries=queries, arith="float64", diagnostics=info)


__all__ = [
    "learn_skeleton",
    "learn_skeleton_adaptive",
    "learn_lowrank_cvx",
    "cross_approximation",
    "random_bases",
    "reconstruct",
]
