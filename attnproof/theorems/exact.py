"""Theorem 4.1: exact recovery of single-head attention with d + d^2 value queries.

Phase 1 (N = 1): ``f([x^T]) = x^T v`` whatever W is, so the d queries ``X = [e_i^T]`` read v.

Phase 2 (N = 2): for a probe u and a column j, ``X = [(u + e_j)^T; e_j^T]`` has scores with
``s_1 - s_2 = u^T w_j`` (``w_j = W e_j``), so the softmax is the sigmoid ``alpha = sigma(u^T w_j)``
(Eq. (1)) and the label is ``y = v_j + alpha (u^T v)``.  Inverting,
``u^T w_j = sigma^{-1}((y - v_j) / (u^T v))``; d independent probes u_1..u_d (the rows of Z)
give ``Z w_j = t`` and ``W = Z^{-1} T``.

Beyond the paper (float64 and mpmath only; sympy is exact and needs none of it):

* Probes are scaled by powers of two, ``X = c [(u + e_j)^T; e_j^T]`` with ``c = 2^k``: the logit
  becomes ``c^2 u^T w_j`` and the label ``c (v_j + alpha u^T v)``, with no rounding introduced.
  A probe whose logit saturates the sigmoid (``|c^2 u^T w_j| > accept``) is asked again with a
  smaller c; if every logit is tiny (W far below 1) all probes are asked again with a larger c.
  Each extra query is counted and reported.  With unit-scale targets no probe is rescaled and
  the learner uses exactly d + d^2 queries, as the theorem says.
* Near-degenerate probes are avoided: the basis family pairs e_l with the pivot e_p whenever
  |v_l| < 10^-3 |v_p| (the paper does so only when v_l = 0; the result is exact either way),
  and Gaussian rows with |u^T v| < 10^-3 ||v||_2 are redrawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arith import FLOAT64, Arith
from ..errors import (
    DegenerateProbeError,
    InvalidInputError,
    NonIdentifiableError,
    PrecisionLossError,
    ShapeError,
)
from ..oracles import ValueOracle
from ..recovery import Recovery

#: A probe u_l is "near-degenerate" when |u_l^T v| falls below this fraction of ||v||_2
#: (Gaussian family) or |v_l| below this fraction of max |v| (basis family).
DEGENERACY_RATIO = 1e-3


@dataclass(frozen=True)
class ScalePolicy:
    """How probe scales ``c = 2^k`` are adapted so sigma^{-1} stays well conditioned.

    Attributes
    ----------
    accept : float
        A logit with |L| <= accept is used as measured (float64 loses ~e^accept * 2^-53).
    goal : float
        |logit| aimed at when a probe is rescaled.
    trust : float
        A saturated logit with |L| <= trust is still accurate enough to retarget from; above
        it (or for an answer outside (0, 1)) the scale is divided by 2^shrink_log2.
    shrink_log2 : int
        log2 of the factor by which c^2 shrinks for a fully saturated probe.
    tiny : float
        If every |logit| of the first pass is below this, W is far below unit scale and every
        probe is asked again with a larger c.
    max_k : int
        Largest |k| allowed (c in [2^-max_k, 2^max_k]); beyond it precision is lost.
    zero_jump : int
        k used when every first-pass logit is exactly 0 (W = 0 or below resolution).
    rounds : int
        Bound on the number of rescaling rounds (termination guarantee).
    """

    accept: float = 8.0
    goal: float = 2.0
    trust: float = 30.0
    shrink_log2: int = 16
    tiny: float = 0.25
    max_k: int = 240
    zero_jump: int = 120
    rounds: int = 64


def learn_exact(
    oracle: ValueOracle,
    *,
    probes: str | Any = "gaussian",
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    policy: ScalePolicy | None = None,
    max_batch_bytes: int = 2**28,
) -> Recovery:
    """Recover (W*, v*) from a value oracle (Thm 4.1).

    Parameters
    ----------
    oracle : ValueOracle
        Answers f*(X); the learner sees nothing else.
    probes : {"gaussian", "basis"} or array of shape (d, d)
        The probe rows u_1..u_d: i.i.d. N(0, I) (needs ``rng``), the paper's deterministic
        ``e_l`` / ``e_l + e_p``, or a user-supplied invertible matrix Z.
    rng : numpy.random.Generator, optional
        Source of the Gaussian probes.
    arith : Arith
        Arithmetic the learner computes in (float64, mpmath, sympy).
    policy : ScalePolicy, optional
        Probe-scaling policy (numeric arithmetics only).
    max_batch_bytes : int
        Upper bound on the size of one batch of float64 probes sent to the oracle.

    Returns
    -------
    Recovery
        W, v, the number of queries used and diagnostics (probe family, redraws, rescaled
        probes, cond(Z), a first-order float error bound).

    Raises
    ------
    NonIdentifiableError
        If v* = 0: f* is identically 0 and every W gives the same function.
    DegenerateProbeError
        If a user-supplied probe has u^T v* = 0 or Z is singular.
    PrecisionLossError
        If the arithmetic cannot resolve the target even with rescaled probes.
    """
    policy = policy or ScalePolicy()
    d = oracle.d
    start = oracle.queries
    with arith.context():
        v = _learn_v(oracle, arith)
        Z, info = probe_matrix(probes, v, arith, rng)
        uv = Z @ v
        if arith.exact:
            L, k = _measure(oracle, Z, v, uv, _all_entries(d), None, arith, max_batch_bytes)
            info["rescaled_probes"] = 0
        else:
            L, k = _measure_adaptively(oracle, Z, v, uv, arith, policy, max_batch_bytes, info)
        T = (L / _pow2(2 * k, arith)).reshape(d, d).T  # T[l, j] = u_l^T w_j
        W = arith.solve(Z, T)
    queries = oracle.queries - start
    info["extra_queries"] = queries - (d + d * d)
    if not arith.exact:
        info.update(_error_bound(Z, v, W, L.reshape(d, d).T, k.reshape(d, d).T, arith))
    return Recovery(W=W, v=v, queries=queries, arith=arith.name, diagnostics=info)


def _learn_v(oracle: ValueOracle, arith: Arith) -> np.ndarray:
    """Phase 1: v_i = f([e_i^T]) (identity ``thm4.1/one-token``)."""
    d = oracle.d
    v = arith.asarray(oracle(arith.eye(d)[:, None, :]))
    if all(arith.is_zero(x) for x in v):
        raise NonIdentifiableError(
            "v* = 0: every one-token query answered 0, so f* is identically 0 "
            "(f(X) = alpha^T X v* = 0 for every X) and every W induces the same function; "
            "W* is not identifiable from value queries (Thm 4.1)"
        )
    if not arith.exact:
        arith.check_finite(v, "the oracle's answers")
        big = arith.abs_max(v)
        if arith is FLOAT64 and not 2.0**-900 <= big <= 2.0**900:
            raise PrecisionLossError(
                f"max |v*| = {big:.3g} is outside float64's safe range [2^-900, 2^900]; "
                "recover in mpmath instead (arith=MP(dps))"
            )
    return v


def probe_matrix(
    probes: str | Any, v: np.ndarray, arith: Arith, rng: np.random.Generator | None
) -> tuple[np.ndarray, dict[str, Any]]:
    """The probe rows Z = [u_1; ...; u_d] for Thm 4.1, and facts about them.

    Parameters
    ----------
    probes : {"gaussian", "basis"} or array of shape (d, d)
    v : array of shape (d,)
        The recovered v* (phase 1).
    arith : Arith
    rng : numpy.random.Generator, optional
        Needed for ``"gaussian"``.

    Returns
    -------
    Z : array of shape (d, d)
    info : dict
        ``probes`` (family), ``redrawn_rows`` (Gaussian), ``pivot`` and ``paired_rows`` (basis).
    """
    d = v.shape[0]
    if isinstance(probes, str):
        if probes == "basis":
            return _basis_probes(v, arith)
        if probes == "gaussian":
            return _gaussian_probes(v, arith, rng)
        raise InvalidInputError(f"unknown probe family {probes!r}: use 'gaussian', 'basis' or a (d, d) array")
    Z = arith.asarray(probes)
    if Z.shape != (d, d):
        raise ShapeError(f"probe matrix must have shape ({d}, {d}); got {Z.shape}")
    arith.check_finite(Z, "probe matrix")
    row_norms = np.sqrt(np.sum(arith.to_float(Z) ** 2, axis=1)) if not arith.exact else 1.0
    thresholds = 64 * d * arith.eps * _vnorm(v, arith) * row_norms
    degenerate = np.flatnonzero(_negligible(Z @ v, arith, thresholds))
    if degenerate.size:
        l = int(degenerate[0])
        raise DegenerateProbeError(
            f"probe u_{l} has u^T v* = 0: its two-token query carries no information "
            "about W (y = v_j whatever W is); choose u with u^T v* != 0"
        )
    _check_invertible(Z, arith)
    return Z, {"probes": "custom"}


def _basis_probes(v: np.ndarray, arith: Arith) -> tuple[np.ndarray, dict[str, Any]]:
    """The paper's deterministic probes: u_l = e_l, or e_l + e_p when v_l is (near) zero."""
    d = v.shape[0]
    if arith.exact:
        p = next(i for i in range(d) if not arith.is_zero(v[i]))
        paired = [l for l in range(d) if arith.is_zero(v[l])]
    else:
        mags = arith.to_float(np.abs(v))
        p = int(np.argmax(mags))
        paired = [l for l in range(d) if mags[l] < DEGENERACY_RATIO * mags[p]]
    Z = arith.eye(d)
    for l in paired:
        Z[l, p] = Z[l, p] + 1
    return Z, {"probes": "basis", "pivot": p, "paired_rows": len(paired)}


def _gaussian_probes(
    v: np.ndarray, arith: Arith, rng: np.random.Generator | None, max_draws: int = 100
) -> tuple[np.ndarray, dict[str, Any]]:
    """i.i.d. N(0, I) probe rows; rows with |u^T v| < 10^-3 ||v|| are redrawn (and counted)."""
    if rng is None:
        raise InvalidInputError("Gaussian probes need an explicit numpy.random.Generator (rng=...)")
    d = v.shape[0]
    Zf = rng.standard_normal((d, d))
    redrawn = 0
    for _ in range(max_draws):
        Z = arith.asarray(Zf)
        bad = np.flatnonzero(_negligible(Z @ v, arith, DEGENERACY_RATIO * _vnorm(v, arith)))
        if not bad.size and np.linalg.cond(Zf) < 1e10:
            return Z, {"probes": "gaussian", "redrawn_rows": redrawn}
        if not bad.size:  # numerically singular draw: redraw everything
            bad = np.arange(d)
        Zf[bad] = rng.standard_normal((len(bad), d))
        redrawn += len(bad)
    raise DegenerateProbeError(f"no usable Gaussian probe matrix in {max_draws} draws")


def _vnorm(v: np.ndarray, arith: Arith) -> float:
    return 0.0 if arith.exact else float(np.sqrt(np.sum(arith.to_float(v) ** 2)))


def _negligible(x: np.ndarray, arith: Arith, threshold: Any) -> np.ndarray:
    """Boolean mask: exactly zero for sympy; |x| < threshold for the numeric arithmetics."""
    if arith.exact:
        return np.array([arith.is_zero(t) for t in x], dtype=bool)
    return np.abs(arith.to_float(x)) < threshold


def _check_invertible(Z: np.ndarray, arith: Arith) -> None:
    if arith.exact:
        import sympy as sp

        singular = sp.Matrix(Z.tolist()).det() == 0
    else:
        singular = np.linalg.cond(arith.to_float(Z)) > 1 / (64 * max(arith.eps, 2.0**-53))
    if singular:
        raise DegenerateProbeError("the probe rows are linearly dependent: Z w_j = t has no unique solution")


def _all_entries(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(l, j) for every measurement, column-major: entry e = j * d + l."""
    j, l = np.divmod(np.arange(d * d), d)
    return l, j


def _pow2(k: np.ndarray, arith: Arith) -> np.ndarray:
    """2^k elementwise, exactly, in the given arithmetic."""
    if arith is FLOAT64:
        return np.ldexp(1.0, k)
    two = arith.scalar(2)
    out = np.empty(k.shape, dtype=object)
    for i, ki in enumerate(k.reshape(-1)):
        out.reshape(-1)[i] = two ** int(ki)
    return out


def probe_batch(
    Z: np.ndarray,
    l: np.ndarray,
    j: np.ndarray,
    c: np.ndarray | None,
    arith: Arith,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The two-token probes ``c [(u_l + e_j)^T; e_j^T]`` for each (l, j), shape (B, 2, d).

    ``out`` (float64 only) is a reusable buffer of shape (>= B, 2, d): refilling it costs a
    fraction of allocating fresh pages for every batch.
    """
    B, d = len(l), Z.shape[1]
    if out is None:
        X = arith.zeros((B, 2, d))
        X[:, 0, :] = Z[l]
    else:
        X = out[:B]
        if B % d == 0 and np.array_equal(l.reshape(-1, d), np.broadcast_to(np.arange(d), (B // d, d))):
            X.reshape(B // d, d, 2, d)[:, :, 0, :] = Z  # whole columns: u_1..u_d, broadcast
        else:
            np.take(Z, l, axis=0, out=X[:, 0, :], mode="clip")  # l is in range: no buffering
        X[:, 1, :] = 0
    rows = np.arange(B)
    X[rows, 0, j] = X[rows, 0, j] + 1
    X[rows, 1, j] = 1
    if c is not None:
        X *= c[:, None, None]
    return X


def _measure(
    oracle: ValueOracle,
    Z: np.ndarray,
    v: np.ndarray,
    uv: np.ndarray,
    entries: tuple[np.ndarray, np.ndarray],
    k: np.ndarray | None,
    arith: Arith,
    max_batch_bytes: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Ask the probes for ``entries`` at scales 2^k; return the logits c^2 u_l^T w_j and k.

    The label is ``y = c (v_j + alpha u_l^T v)``, so ``alpha = (y / c - v_j) / (u_l^T v)``
    (identity ``thm4.1/label-affine``) and the logit is ``sigma^{-1}(alpha)``.
    """
    l, j = entries
    n = len(l)
    k = np.zeros(n, dtype=np.int64) if k is None else k
    d = Z.shape[1]
    chunk = max(1, max_batch_bytes // (2 * d * 8)) if arith is FLOAT64 else n
    buffer = np.empty((min(chunk, n), 2, d)) if arith is FLOAT64 else None
    L = np.empty(n, dtype=np.float64 if arith is FLOAT64 else object)
    for s in range(0, n, chunk):
        sl = slice(s, s + chunk)
        c = None if not np.any(k[sl]) else _pow2(k[sl], arith)
        y = arith.asarray(oracle(probe_batch(Z, l[sl], j[sl], c, arith, buffer)), copy=False)
        if c is not None:
            y = y / c
        L[sl] = arith.logit((y - v[j[sl]]) / uv[l[sl]])
    return L, k


def _measure_adaptively(
    oracle: ValueOracle,
    Z: np.ndarray,
    v: np.ndarray,
    uv: np.ndarray,
    arith: Arith,
    policy: ScalePolicy,
    max_batch_bytes: int,
    info: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray]:
    """All d^2 logits, with probe scales adapted until every one is well conditioned."""
    d = Z.shape[0]
    l, j = _all_entries(d)
    L, k = _measure(oracle, Z, v, uv, (l, j), None, arith, max_batch_bytes)
    mags = _magnitudes(L, arith)
    global_rescales = 0
    # W far below unit scale: every logit sits in sigma's flat middle; scale every probe up.
    # k only grows and is capped at max_k, so this loop ends (at most max_k / zero_jump + 2
    # passes); if every logit is still 0 at c^2 = 2^(2 max_k), W* = 0 to that resolution.
    while np.all(np.isfinite(mags)) and mags.max() < policy.tiny:
        top = float(mags.max())
        step = policy.zero_jump if top == 0 else math.ceil(math.log2(policy.goal / top) / 2)
        step = min(step, policy.max_k - int(k.max()))
        if step <= 0:
            break
        k = k + step
        L, k = _measure(oracle, Z, v, uv, (l, j), k, arith, max_batch_bytes)
        mags = _magnitudes(L, arith)
        global_rescales += 1
    rescaled = np.zeros(d * d, dtype=bool)
    for _ in range(policy.rounds):
        bad = ~np.isfinite(mags) | (mags > policy.accept)
        if not bad.any():
            break
        rescaled |= bad
        trusted = bad & np.isfinite(mags) & (mags <= policy.trust)
        with np.errstate(divide="ignore"):
            retarget = np.floor(np.log2(policy.goal / np.where(trusted, mags, 1.0)) / 2).astype(np.int64)
        k = np.where(trusted, k + retarget, np.where(bad, k - policy.shrink_log2 // 2, k))
        if np.any(np.abs(k) > policy.max_k):
            raise PrecisionLossError(
                f"a probe's sigmoid stays saturated even at scale 2^-{policy.max_k}: "
                f"the target is beyond {arith.name}'s range; use mpmath with more digits"
            )
        idx = np.flatnonzero(bad)
        Lb, _ = _measure(oracle, Z, v, uv, (l[idx], j[idx]), k[idx], arith, max_batch_bytes)
        L[idx] = Lb
        mags[idx] = _magnitudes(Lb, arith)
    else:
        raise PrecisionLossError(f"probe rescaling did not converge in {policy.rounds} rounds")
    info["rescaled_probes"] = int(rescaled.sum())
    info["global_rescales"] = global_rescales
    info["max_abs_logit"] = float(mags.max())
    return L, k


def _magnitudes(L: np.ndarray, arith: Arith) -> np.ndarray:
    """|L| as float64, NaN where the measurement was invalid (alpha outside (0, 1))."""
    if arith is FLOAT64:
        return np.abs(L)
    return np.abs(arith.to_float(L))


def _error_bound(
    Z: np.ndarray, v: np.ndarray, W: np.ndarray, L: np.ndarray, k: np.ndarray, arith: Arith
) -> dict[str, float]:
    """First-order bound on ||W_hat - W*||_F from rounding (oracle and learner), and cond(Z).

    Model: the oracle evaluates f in the same arithmetic with relative error ~ (d + 4) eps
    per dot product.  With alpha = sigma(L), a label error dy and a score error ds move the
    logit by ``(dy / c + dv_j + alpha d(u^T v)) / (|u^T v| alpha (1 - alpha)) + ds``; dividing
    by c^2 gives the error of T = Z W, and ``||Z^{-1}||_2 ||dT||_F`` (+ the solve's own
    rounding) bounds the error of W.
    """
    d = Z.shape[0]
    eps = arith.eps
    g = (d + 4) * eps
    Zf, vf, Wf = (arith.to_float(a) for a in (Z, v, W))
    Lf = arith.to_float(L)
    c2 = np.ldexp(1.0, 2 * k)
    alpha = FLOAT64.sigmoid(Lf)
    uv_abs = np.abs(Zf) @ np.abs(vf)  # sum_i |u_li v_i|, shape (d,)
    uv = np.abs(Zf @ vf)
    dy = g * (np.abs(vf)[None, :] + uv_abs[:, None])  # label error / c, indexed [l, j]
    dalpha = (dy + eps * np.abs(vf)[None, :] + alpha * g * uv_abs[:, None]) / uv[:, None]
    ds = g * c2 * (np.abs(Zf) @ np.abs(Wf) + 2 * np.abs(np.diag(Wf))[None, :])
    dT = (dalpha / (alpha * (1 - alpha)) + ds) / c2
    sv = np.linalg.svd(Zf, compute_uv=False)
    cond = float(sv[0] / sv[-1])
    bound = float(_norm(dT) / sv[-1] + g * cond * _norm(Wf))
    return {"cond_Z": cond, "error_bound": bound}


def _norm(a: np.ndarray) -> float:
    """Frobenius norm without underflow of the squares (entries may be ~1e-200)."""
    top = float(np.max(np.abs(a), initial=0.0))
    return top * float(np.linalg.norm(a / top)) if top > 0 else 0.0


__all__ = ["learn_exact", "probe_matrix", "probe_batch", "ScalePolicy", "DEGENERACY_RATIO"]
