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
from typing import Any

import numpy as np

from ..arith import FLOAT64, Arith
from ..errors import AssumptionError, DegenerateProbeError, InvalidInputError, PrecisionLossError
from ..measure import Probes, ScalePolicy, bilinear_values, measure_adaptively, resolution
from ..oracles import ValueOracle
from ..recovery import Recovery
from .exact import learn_v

#: A random basis vector p is redrawn when |p^T v*| < this * ||v*|| / sqrt(d).
BASIS_DEGENERACY = 1e-6


def random_bases(
    d: int, r: int, v: np.ndarray, rng: np.random.Generator, arith: Arith, max_draws: int = 50
) -> tuple[np.ndarray, np.ndarray, int]:
    """Random orthonormal bases P, Q of R^d (rows), with p_k^T v* bounded away from 0.

    Built as the complete QR factor of a d x r Gaussian matrix, O(d^2 r).  Returns (P, Q, the
    number of redraws of P).
    """
    for redraws in range(max_draws):
        P = np.linalg.qr(rng.standard_normal((d, max(r, 1))), mode="complete")[0].T
        if arith.exact:  # symbolic v: only an exact zero can be excluded
            usable = not any(arith.is_zero(x) for x in arith.asarray(P) @ v)
        else:
            vf = arith.to_float(v)
            usable = bool(np.all(np.abs(P @ vf) >= BASIS_DEGENERACY * np.linalg.norm(vf) / np.sqrt(d)))
        if usable:
            Q = np.linalg.qr(rng.standard_normal((d, max(r, 1))), mode="complete")[0].T
            return arith.asarray(P), arith.asarray(Q), redraws
    raise DegenerateProbeError(f"no random basis with every p_k^T v* != 0 in {max_draws} draws")


def _invert_basis(P: np.ndarray, arith: Arith) -> np.ndarray:
    """P^{-1}: P^T for float64 (P is orthogonal to rounding), an exact solve otherwise."""
    return P.T if arith is FLOAT64 else arith.solve(P, arith.eye(P.shape[0]))


def skeleton_entries(d: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(k, l) of the skeleton of a d x d matrix: columns l < r (all k), then rows k < r (l >= r).

    Exactly r(2d - r) entries; column-major in the first block so that whole columns of
    first tokens are broadcasts of P.
    """
    l1, k1 = np.divmod(np.arange(d * r), d)
    k2, l2 = np.divmod(np.arange(r * (d - r)), d - r) if d > r else (np.zeros(0, int), np.zeros(0, int))
    return np.concatenate([k1, k2]), np.concatenate([l1, l2 + r])


def numerical_rank(U: np.ndarray, arith: Arith, tol: float) -> tuple[int, float]:
    """Rank of U (exact for sympy; singular values above tol * sigma_max otherwise) and cond."""
    if U.size == 0:
        return 0, 1.0
    if arith.exact:
        import sympy as sp

        return int(sp.Matrix(U.tolist()).rank(simplify=True)), float("nan")
    s = np.linalg.svd(arith.to_float(U), compute_uv=False)
    if s[0] == 0:
        return 0, float("inf")
    k = int(np.sum(s > tol * s[0]))
    return k, float(s[0] / s[k - 1]) if k else float("inf")


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
) -> Recovery:
    """Recover (W*, v*) with rank(W*) <= ``rank`` from exactly d + r(2d - r) value queries.

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
        Relative singular-value threshold for the numerical rank of the corner U.

    Returns
    -------
    Recovery
        Diagnostics: declared and found rank, cond(U), rescaled probes, redraws, timings.

    Raises
    ------
    AssumptionError
        A check query disagrees with the reconstruction: rank(W*) > the declared r.
    PrecisionLossError
        The skeleton corner is too ill-conditioned for the arithmetic.
    """
    d = oracle.d
    if not (isinstance(rank, (int, np.integer)) and 0 <= rank <= d):
        raise InvalidInputError(f"rank must be an integer in [0, d = {d}]; got {rank!r}")
    rank_tol = _default_rank_tol(arith) if rank_tol is None else rank_tol
    start, t0 = oracle.queries, time.perf_counter()
    info: dict[str, Any] = {"learner": "skeleton", "rank_declared": int(rank)}
    with arith.context():
        v = learn_v(oracle, arith)
        P, Q, info["basis_redraws"] = random_bases(d, rank, v, rng, arith)
        probes = Probes(P, Q, v, arith)
        kk, ll = skeleton_entries(d, rank)
        L, k = measure_adaptively(oracle, probes, (kk, ll), policy, info, max_batch_bytes)
        M = arith.zeros((d, d))
        M[kk, ll] = bilinear_values(L, k, arith)  # the skeleton of M = P W* Q^T
        found, cond = numerical_rank(M[:rank, :rank], arith, rank_tol)
        info.update(rank_found=found, cond_U=cond)
        if not arith.exact and found and cond * arith.eps > 1e-3:
            raise PrecisionLossError(
                f"ill-conditioned skeleton: cond(U) = {cond:.2e} in {arith.name}; "
                "recover in mpmath, or with a smaller declared rank"
            )
        W = _invert_basis(P, arith) @ reconstruct(M, found, arith) @ _invert_basis(Q, arith).T
        if checks:
            _check_rank(oracle, W, v, d, checks, rng, arith, policy, info)
    queries = oracle.queries - start
    info.update(extra_queries=queries - (d + rank * (2 * d - rank)), seconds=time.perf_counter() - t0)
    return Recovery(W=W, v=v, queries=queries, arith=arith.name, diagnostics=info)


def _check_rank(
    oracle: ValueOracle,
    W: np.ndarray,
    v: np.ndarray,
    d: int,
    checks: int,
    rng: np.random.Generator,
    arith: Arith,
    policy: ScalePolicy | None,
    info: dict[str, Any],
) -> None:
    """Compare ``checks`` fresh measurements a^T W* b with the reconstruction."""
    A, B, _ = random_bases(d, 1, v, rng, arith)
    probes = Probes(A[:checks], B[:checks], v, arith)
    idx = np.arange(checks)
    L, k = measure_adaptively(oracle, probes, (idx, idx), policy, {}, 2**28)
    measured = bilinear_values(L, k, arith)
    predicted = np.array([A[i] @ W @ B[i] for i in range(checks)], dtype=measured.dtype)
    scale = max(arith.abs_max(measured), arith.abs_max(predicted), 1e-300)
    gap = arith.abs_max(measured - predicted) / scale if not arith.exact else (
        0.0 if all(arith.is_zero(x) for x in measured - predicted) else 1.0
    )
    info["check_gap"] = gap
    if gap > max(1e-6, 1e6 * arith.eps):
        raise AssumptionError(
            f"a check measurement disagrees with the rank-{info['rank_found']} reconstruction "
            f"(relative gap {gap:.2e}): rank(W*) exceeds the declared {info['rank_declared']}"
        )


def learn_skeleton_adaptive(
    oracle: ValueOracle,
    *,
    rng: np.random.Generator,
    arith: Arith = FLOAT64,
    policy: ScalePolicy | None = None,
    rank_tol: float | None = None,
    max_batch_bytes: int = 2**28,
) -> Recovery:
    """Recover (W*, v*) without knowing r: grow the skeleton until the residual vanishes.

    Step k measures the new column k (rows k..d-1) and row k (columns k+1..d-1) of
    ``M = P W* Q^T``, 2(d - k) - 1 queries, and stops when the Schur complement of that
    row and column w.r.t. the rank-k skeleton is below ``rank_tol`` times the largest entry
    measured.  Total: d + r(2d - r) + 2(d - r) - 1 queries for rank r < d, and d + d^2 when
    W* turns out to have full rank (reported as ``rank_found = d``).
    """
    d = oracle.d
    rank_tol = _default_rank_tol(arith) if rank_tol is None else rank_tol
    start, t0 = oracle.queries, time.perf_counter()
    info: dict[str, Any] = {"learner": "skeleton-adaptive", "rank_tol": rank_tol}
    with arith.context():
        v = learn_v(oracle, arith)
        P, Q, info["basis_redraws"] = random_bases(d, d, v, rng, arith)
        probes = Probes(P, Q, v, arith)
        M = arith.zeros((d, d))
        scale, residual, floor, r = 0.0, 0.0, 0.0, d
        for step in range(d):
            # the new column `step` (rows >= step) and row `step` (columns > step)
            kk = np.concatenate([np.arange(step, d), np.full(d - step - 1, step)])
            ll = np.concatenate([np.full(d - step, step), np.arange(step + 1, d)])
            L, k = measure_adaptively(oracle, probes, (kk, ll), policy, info, max_batch_bytes)
            M[kk, ll] = values = bilinear_values(L, k, arith)
            scale = max(scale, arith.abs_max(values))
            floor = max(floor, 64 * float(resolution(probes, (kk, ll), k).max()))
            # Schur complement of the new row and column w.r.t. the rank-`step` skeleton
            schur = M[step:, step:] - M[step:, :step] @ arith.solve(M[:step, :step], M[:step, step:]) if step else M
            residual = max(arith.abs_max(schur[:, 0]), arith.abs_max(schur[0, :]))
            if residual == 0 if arith.exact else residual <= rank_tol * scale + floor:
                r = step
                break
        info.update(rank_found=r, residual=float(residual) / scale if scale else 0.0)
        W = _invert_basis(P, arith) @ reconstruct(M, r, arith) @ _invert_basis(Q, arith).T
    queries = oracle.queries - start
    floor = d + r * (2 * d - r)
    info.update(floor_queries=floor, extra_queries=queries - floor, seconds=time.perf_counter() - t0)
    return Recovery(W=W, v=v, queries=queries, arith=arith.name, diagnostics=info)


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
    problem.solve(solver=solver)
    info.update(status=problem.status, solver_seconds=time.perf_counter() - t0)
    if W.value is None:
        raise PrecisionLossError(f"the nuclear-norm program ended with status {problem.status!r}")
    What = np.asarray(W.value)
    info["residual"] = float(np.max(np.abs(np.sum((A @ What) * B, axis=1) - t)))
    return Recovery(W=What, v=v, queries=oracle.queries - start, arith="float64", diagnostics=info)


__all__ = [
    "learn_skeleton",
    "learn_skeleton_adaptive",
    "learn_lowrank_cvx",
    "random_bases",
    "skeleton_entries",
    "reconstruct",
    "numerical_rank",
]
