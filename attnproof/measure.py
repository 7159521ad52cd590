"""Bilinear measurements ``p^T W* q`` through two-token value queries, with adaptive scaling.

For vectors p, q the query ``X = c [(p + q)^T; q^T]`` has score difference
``s_1 - s_2 = c^2 p^T W* q`` (identities ``thm4.1/score-difference`` with q = e_j and
``thm5.1/rank-one-measurement`` in general), so its label is
``y = c (q^T v* + sigma(c^2 p^T W* q) p^T v*)`` and, once v* is known,
``p^T W* q = sigma^{-1}((y / c - q^T v*) / (p^T v*)) / c^2``.  Thm 4.1 uses p = u_l, q = e_j;
Thm 5.1 and the skeleton learner use random p and q.

The scale ``c = 2^k`` multiplies the logit by 4^k and the label by 2^k *without rounding*.
A probe whose logit saturates the sigmoid is asked again with a smaller c; if every logit of a
pass is tiny (W far below unit scale), every probe is asked again with a larger c.  Extra
queries are counted by the oracle and reported.  Exact arithmetic (sympy) never rescales.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from .arith import FLOAT64, Arith
from .errors import PrecisionLossError
from .oracles import ValueOracle


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
        If every |logit| of a pass is below this, W is far below unit scale and every probe is
        asked again with a larger c.
    max_k : int
        Largest |k| allowed (c in [2^-max_k, 2^max_k]); beyond it precision is lost.
    zero_jump : int
        Step of k when every logit of a pass is exactly 0 (W = 0 or below resolution).
    rounds : int
        Bound on the number of per-probe rescaling rounds (termination guarantee).
    """

    accept: float = 8.0
    goal: float = 2.0
    trust: float = 30.0
    shrink_log2: int = 16
    tiny: float = 0.25
    max_k: int = 240
    zero_jump: int = 120
    rounds: int = 64


def sparing(policy: ScalePolicy | None) -> ScalePolicy:
    """``policy`` with the global upscaling reserved for logits lost to rounding (< 1e-6).

    For learners that measure in many small batches (one column at a time): a batch whose
    values are merely small is accurate enough and must not cost a second pass.
    """
    policy = policy or ScalePolicy()
    return replace(policy, tiny=min(policy.tiny, 1e-6))


@dataclass(frozen=True)
class Probes:
    """Left vectors p_k (rows of P) and right vectors q_l (rows of Q; None = the basis e_l).

    Every p_k must have p_k^T v* != 0.  For a head with biases (scores
    ``x_i^T W x_N + c^T x_i``, output ``+ beta``), ``offset`` is beta and ``linear`` holds
    ``c^T p_k``.  With ``scale_query_only`` the scale s multiplies only q:
    ``X = [(p + s q)^T; (s q)^T]`` has logit ``s p^T W q + c^T p`` and label
    ``beta + s q^T v + alpha p^T v``, so desaturating never shrinks the signal ``alpha p^T v``
    against the offset beta (scaling the whole probe would, by the factor s).
    """

    P: np.ndarray
    Q: np.ndarray | None
    v: np.ndarray
    arith: Arith
    offset: Any = 0
    linear: np.ndarray | None = None
    scale_query_only: bool = False

    @property
    def order(self) -> int:
        """How the logit grows with the scale exponent k: 4^k (whole probe) or 2^k (query only)."""
        return 1 if self.scale_query_only else 2

    @property
    def d(self) -> int:
        return self.P.shape[1]

    @cached_property
    def pv(self) -> np.ndarray:
        """P v*, computed once per probe set (it is read by every batch)."""
        return self.P @ self.v

    @cached_property
    def qv(self) -> np.ndarray:
        return self.v if self.Q is None else self.Q @ self.v

    def values(self, L: np.ndarray, k: np.ndarray, kk: np.ndarray) -> np.ndarray:
        """p_k^T W* q from logits L at scale exponents k.

        Whole-probe scaling: ``L / 4^k`` (``(L / 2^k - c^T p_k) / 2^k`` with a score bias);
        query-only scaling: ``(L - c^T p_k) / 2^k``.
        """
        s = pow2(k, self.arith)
        bias = 0 if self.linear is None else self.linear[kk]
        if self.scale_query_only:
            return (L - bias) / s
        return (L / s - bias) / s


def pow2(k: np.ndarray, arith: Arith) -> np.ndarray:
    """2^k elementwise, exactly, in the given arithmetic."""
    if arith is FLOAT64:
        return np.ldexp(1.0, k)
    two = arith.scalar(2)
    out = np.empty(k.shape, dtype=object)
    for i, ki in enumerate(k.reshape(-1)):
        out.reshape(-1)[i] = two ** int(ki)
    return out


def probe_batch(
    probes: Probes,
    kk: np.ndarray,
    ll: np.ndarray,
    c: np.ndarray | None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The two-token probes ``c [(p_k + q_l)^T; q_l^T]`` for each (k, l), shape (B, 2, d).

    ``out`` (float64 only) is a reusable buffer of shape (>= B, 2, d): refilling it costs a
    fraction of allocating fresh pages for every batch.  With q_l = e_l (``Q is None``) and
    whole columns in order (k = 0..d-1 for each l), the first tokens are a broadcast of P.
    """
    P, Q, arith = probes.P, probes.Q, probes.arith
    B, d = len(kk), probes.d
    rows = np.arange(B)
    if out is None:
        X = arith.zeros((B, 2, d))
        X[:, 0, :] = P[kk]
        if Q is not None:
            X[:, 1, :] = Q[ll]
    else:
        X = out[:B]
        _gather(P, kk, X[:, 0, :])
        if Q is None:
            X[:, 1, :] = 0
        else:
            _gather(Q, ll, X[:, 1, :])
    query_only = probes.scale_query_only and c is not None
    if Q is None:
        unit = c if query_only else 1
        X[rows, 0, ll] = X[rows, 0, ll] + unit
        X[rows, 1, ll] = unit
    else:
        if query_only:
            X[:, 1, :] *= c[:, None]
        X[:, 0, :] += X[:, 1, :]
    if c is not None and not query_only:
        X *= c[:, None, None]
    return X


def _gather(M: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """out[b] = M[idx[b]] without a temporary: a broadcast when idx is constant or cycles
    through every row of M in order (whole columns / rows of a skeleton), else an in-place take."""
    m = M.shape[0]
    B = len(idx)
    if B and np.all(idx == idx[0]):
        out[...] = M[idx[0]]
    elif B % m == 0 and np.array_equal(idx.reshape(-1, m), np.broadcast_to(np.arange(m), (B // m, m))):
        out.reshape(B // m, m, -1)[...] = M
    else:
        breaks = np.flatnonzero(np.diff(idx) != 1) + 1  # runs of consecutive rows: slice copies
        if len(breaks) < max(64, B // 8):
            for a, b in zip(np.concatenate([[0], breaks]), np.concatenate([breaks, [B]])):
                out[a:b] = M[idx[a] : idx[a] + (b - a)]
        else:
            np.take(M, idx, axis=0, out=out, mode="clip")  # idx is in range: no buffering


def measure(
    oracle: ValueOracle,
    probes: Probes,
    entries: tuple[np.ndarray, np.ndarray],
    k: np.ndarray | None = None,
    max_batch_bytes: int = 2**28,
    buffer: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Ask the probes for ``entries = (kk, ll)`` at scales 2^k; return the logits and k.

    ``buffer`` (float64): a reusable (chunk, 2, d) array for the probes; a learner that
    measures in many batches passes one, so fresh pages are not faulted in for every batch.

    The logit of entry (k, l) is ``c^2 p_k^T W* q_l``: ``alpha = (y / c - q_l^T v) / (p_k^T v)``
    (identity ``thm4.1/label-affine``) and the logit is ``sigma^{-1}(alpha)``.
    """
    arith = probes.arith
    kk, ll = entries
    n = len(kk)
    k = np.zeros(n, dtype=np.int64) if k is None else k
    d = probes.d
    pv, qv = probes.pv, probes.qv
    chunk = max(1, max_batch_bytes // (2 * d * 8)) if arith is FLOAT64 else max(n, 1)
    if arith is FLOAT64 and (buffer is None or len(buffer) < min(chunk, n)):
        buffer = np.empty((min(chunk, n), 2, d))
    chunk = len(buffer) if arith is FLOAT64 else chunk
    L = np.empty(n, dtype=np.float64 if arith is FLOAT64 else object)
    for s in range(0, n, chunk):
        sl = slice(s, s + chunk)
        c = None if not np.any(k[sl]) else pow2(k[sl], arith)
        y = arith.asarray(oracle(probe_batch(probes, kk[sl], ll[sl], c, buffer)), copy=False) - probes.offset
        if c is None:
            base = qv[ll[sl]]
        elif probes.scale_query_only:
            base = c * qv[ll[sl]]
        else:
            y, base = y / c, qv[ll[sl]]
        L[sl] = arith.logit((y - base) / pv[kk[sl]])
    return L, k


def measure_adaptively(
    oracle: ValueOracle,
    probes: Probes,
    entries: tuple[np.ndarray, np.ndarray],
    policy: ScalePolicy | None = None,
    info: dict[str, Any] | None = None,
    max_batch_bytes: int = 2**28,
    k0: int = 0,
    global_rescale: bool = True,
    buffer: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Logits for ``entries`` with probe scales adapted until every one is well conditioned.

    Returns the logits L and the scale exponents k (see :meth:`Probes.values`).  Diagnostics
    (rescaled probes, global rescales, ``reasked_queries`` = the extra oracle queries all
    this cost, max |logit|) are added to ``info``.
    ``k0`` is the starting scale exponent (a learner measuring in several batches passes the
    scale its first batch settled on); ``global_rescale=False`` keeps a batch whose values
    all happen to be small from being re-asked at a larger scale.

    Raises
    ------
    PrecisionLossError
        If a probe stays saturated at the smallest scale, or rescaling does not converge
        within ``policy.rounds`` rounds (every loop here is bounded).
    """
    policy = policy or ScalePolicy()
    info = {} if info is None else info
    arith = probes.arith
    if arith.exact:
        L, k = measure(oracle, probes, entries, None, max_batch_bytes)
        info["rescaled_probes"] = 0
        return L, k
    kk, ll = entries
    L, k = measure(oracle, probes, entries, np.full(len(kk), k0, dtype=np.int64), max_batch_bytes, buffer)
    mags = magnitudes(L, arith)
    global_rescales = reasked = 0
    # W far below unit scale: every logit sits in sigma's flat middle; scale every probe up.
    # k only grows and is capped at max_k, so this loop ends (at most max_k / zero_jump + 2
    # passes); if every logit is still 0 at c^2 = 2^(2 max_k), W* = 0 to that resolution.
    while global_rescale and len(mags) and np.all(np.isfinite(mags)) and mags.max() < policy.tiny:
        top = float(mags.max())
        step = policy.zero_jump if top == 0 else math.ceil(math.log2(policy.goal / top) / probes.order)
        step = min(step, policy.max_k - int(k.max()))
        if step <= 0:
            break
        k = k + step
        L, k = measure(oracle, probes, entries, k, max_batch_bytes, buffer)
        mags = magnitudes(L, arith)
        global_rescales += 1
        reasked += len(kk)
    rescaled = np.zeros(len(kk), dtype=bool)
    for _ in range(policy.rounds):
        bad = ~np.isfinite(mags) | (mags > policy.accept)
        if not bad.any():
            break
        rescaled |= bad
        trusted = bad & np.isfinite(mags) & (mags <= policy.trust)
        with np.errstate(divide="ignore"):
            retarget = np.floor(np.log2(policy.goal / np.where(trusted, mags, 1.0)) / probes.order).astype(np.int64)
        k = np.where(trusted, k + retarget, np.where(bad, k - policy.shrink_log2 // probes.order, k))
        if np.any(np.abs(k) > policy.max_k):
            raise PrecisionLossError(
                f"a probe's sigmoid stays saturated even at scale 2^-{policy.max_k}: "
                f"the target is beyond {arith.name}'s range; use mpmath with more digits"
            )
        idx = np.flatnonzero(bad)
        reasked += len(idx)
        Lb, _ = measure(oracle, probes, (kk[idx], ll[idx]), k[idx], max_batch_bytes, buffer)
        L[idx] = Lb
        mags[idx] = magnitudes(Lb, arith)
    else:
        raise PrecisionLossError(f"probe rescaling did not converge in {policy.rounds} rounds")
    info["rescaled_probes"] = info.get("rescaled_probes", 0) + int(rescaled.sum())
    info["global_rescales"] = info.get("global_rescales", 0) + global_rescales
    info["reasked_queries"] = info.get("reasked_queries", 0) + reasked
    info["max_abs_logit"] = max(info.get("max_abs_logit", 0.0), float(mags.max(initial=0.0)))
    return L, k


def magnitudes(L: np.ndarray, arith: Arith) -> np.ndarray:
    """|L| as float64, NaN where the measurement was invalid (alpha outside (0, 1))."""
    if arith is FLOAT64:
        return np.abs(L)
    return np.abs(arith.to_float(L))


def resolution(probes: Probes, entries: tuple[np.ndarray, np.ndarray], k: np.ndarray) -> np.ndarray:
    """Rounding resolution of each measured value p^T W* q (float64 estimate).

    At alpha ~ 1/2 the logit is accurate to ~ 4 d_alpha with
    ``d_alpha ~ eps (|p^T v| + 2 |q^T v|) / |p^T v|``; the value is the logit over 4^k.  A value
    below this is indistinguishable from 0.
    """
    arith = probes.arith
    kk, ll = entries
    pv, qv = np.abs(arith.to_float(probes.pv)), np.abs(arith.to_float(probes.qv))
    return 4 * arith.eps * (1 + 2 * qv[ll] / pv[kk]) * np.ldexp(1.0, -probes.order * k)


def bilinear_values(L: np.ndarray, k: np.ndarray, arith: Arith) -> np.ndarray:
    """p^T W* q = L / 4^k."""
    return L / pow2(2 * k, arith)


__all__ = [
    "ScalePolicy",
    "sparing",
    "Probes",
    "pow2",
    "probe_batch",
    "measure",
    "measure_adaptively",
    "magnitudes",
    "resolution",
    "bilinear_values",
]
