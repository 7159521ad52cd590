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
  the learner uses exactly d + d^2 queries, as the theorem says (:mod:`attnproof.measure`).
* Near-degenerate probes are avoided: the basis family pairs e_l with the pivot e_p whenever
  |v_l| < 10^-3 |v_p| (the paper does so only when v_l = 0; the result is exact either way),
  and Gaussian rows with |u^T v| < 10^-1 ||v||_2 are redrawn (a redraw costs no query; the
  label error is amplified by ~ ||v|| / |u^T v|), as is a Gaussian Z with cond(Z) > 100 d.
* ``bias=True`` also recovers a real head's score bias c and output offset beta
  (:mod:`attnproof.theorems.bias`), with d + 1 more queries.
"""

from __future__ import annotations

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
from ..measure import Probes, ScalePolicy, measure_adaptively
from ..oracles import ValueOracle
from ..proof import learner
from ..recovery import Recovery
from .bias import learn_beta_v, learn_score_bias, tame_rows

#: A probe u_l is "near-degenerate" when |u_l^T v| falls below this fraction of ||v||_2
#: (Gaussian family) or |v_l| below this fraction of max |v| (basis family).
DEGENERACY_RATIO = 1e-3
#: A Gaussian probe row u is redrawn when |u^T v| < GAUSSIAN_MARGIN * ||v||_2 (about 8 % of rows).
GAUSSIAN_MARGIN = 0.1
#: A Gaussian probe matrix is redrawn when cond(Z) > GAUSSIAN_COND * d (typical: a few d).
GAUSSIAN_COND = 100


@learner(
    name="exact",
    result="Thm 4.1",
    relies_on=(
        "thm4.1/one-token", "thm4.1/softmax-to-sigmoid", "thm4.1/score-difference", "thm4.1/label-affine",
        "thm4.1/end-to-end-d2", "thm4.1/end-to-end-d3", "bias/score-expansion", "bias/value-offset", "bias/zero-token", "bias/zero-last-token",
    ),
    arithmetics=("float64", "mpmath", "sympy"),
    queries="d + d^2 (+ d + 1 with biases)",
    count=lambda d, bias=False, **_: d + d * d + (d + 1 if bias else 0),
)
def learn_exact(
    oracle: ValueOracle,
    *,
    probes: str | Any = "gaussian",
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    policy: ScalePolicy | None = None,
    max_batch_bytes: int = 2**28,
    bias: bool = False,
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
    bias : bool
        The target is a head with biases (:mod:`attnproof.theorems.bias`): also recover the
        score bias c and the output offset beta, with d + 1 more queries.

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
    d = oracle.d
    start = oracle.queries
    with arith.context():
        beta, v = learn_beta_v(oracle, arith) if bias else (0, learn_v(oracle, arith))
        Z, info = probe_matrix(probes, v, arith, rng)
        t_c = None
        if bias:
            t_c = learn_score_bias(oracle, Z, v, beta, arith, policy, info)
            shorten = tame_rows(t_c, arith)  # rows u_l with |c^T u_l| > 2 become 2^-m u_l
            Z, t_c = Z * shorten[:, None], t_c * shorten
        entries = _all_entries(d)
        probe_set = Probes(Z, None, v, arith, offset=beta, linear=t_c, scale_query_only=bias)
        L, k = measure_adaptively(oracle, probe_set, entries, policy, info, max_batch_bytes)
        T = probe_set.values(L, k, entries[0]).reshape(d, d).T  # T[l, j] = u_l^T w_j
        W = arith.solve(Z, T)
        c = arith.solve(Z, t_c) if bias else None
    queries = oracle.queries - start
    info["extra_queries"] = queries - (d + d * d) - (d + 1 if bias else 0)
    if not arith.exact and not bias:
        info.setdefault("global_rescales", 0)
        info.setdefault("max_abs_logit", 0.0)
        info.update(_error_bound(Z, v, W, L.reshape(d, d).T, k.reshape(d, d).T, arith))
    return Recovery(W=W, v=v, queries=queries, arith=arith.name, diagnostics=info, c=c, beta=beta if bias else None)


def learn_v(oracle: ValueOracle, arith: Arith) -> np.ndarray:
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
    """i.i.d. N(0, I) probe rows; rows with |u^T v| < GAUSSIAN_MARGIN ||v|| are redrawn, and the
    whole matrix when cond(Z) > GAUSSIAN_COND d (redraws cost no query; they are counted)."""
    if rng is None:
        raise InvalidInputError("Gaussian probes need an explicit numpy.random.Generator (rng=...)")
    d = v.shape[0]
    Zf = rng.standard_normal((d, d))
    redrawn = 0
    for _ in range(max_draws):
        Z = arith.asarray(Zf)
        bad = np.flatnonzero(_negligible(Z @ v, arith, GAUSSIAN_MARGIN * _vnorm(v, arith)))
        if not bad.size and np.linalg.cond(Zf) < GAUSSIAN_COND * d:
            return Z, {"probes": "gaussian", "redrawn_rows": redrawn}
        if not bad.size:  # an ill-conditioned draw (cond(Z) amplifies every error): redraw it all
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


__all__ = ["learn_exact", "learn_v", "probe_matrix", "DEGENERACY_RATIO", "GAUSSIAN_MARGIN"]
