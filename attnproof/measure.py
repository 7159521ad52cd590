"""Bilinear measurements ``p^T W* q`` through two-token value queries, with adaptive scaling.

For vectors p, q the query ``X = s [(p + q)^T; q^T]`` has score difference
``s_1 - s_2 = s^2 p^T W* q`` (identities ``thm4.1/score-difference`` with q = e_j and
``thm5.1/rank-one-measurement`` in general), so its label is
``y = s (q^T v* + sigma(s^2 p^T W* q) p^T v*)`` and, once v* is known,
``p^T W* q = sigma^{-1}((y / s - q^T v*) / (p^T v*)) / s^2``.  Thm 4.1 uses p = u_l, q = e_j;
Thm 5.1 and the skeleton learner use random p and q.

The probe scale ``s = 2^k`` multiplies the logit by 4^k and the label by 2^k *without
rounding*.  A probe whose logit saturates the sigmoid is asked again with a smaller s; if every
logit of a pass is tiny (W far below unit scale), every probe is asked again with a larger s.
Extra queries are counted by the oracle and reported.  Exact arithmetic (sympy) never rescales.

A learner measures through one :class:`Session` (oracle, arithmetic, scaling policy, the
diagnostics it fills and a reusable probe buffer).  Diagnostics written here, the schema every
learner shares: ``rescaled_probes`` (probes asked at another scale), ``global_rescales`` (passes
re-asked at a larger scale), ``reasked_queries`` (every query beyond the learner's formula that
this cost) and ``max_abs_logit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from .arith import FLOAT64, Arith
from .errors import InvalidInputError, PrecisionLossError
from .oracles import ValueOracle
from .proof import LEARNERS
from .recovery import Recovery


@dataclass(frozen=True)
class ScalePolicy:
    """How probe scales ``s = 2^k`` are adapted so sigma^{-1} stays well conditioned.

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
        Largest |k| allowed (s in [2^-max_k, 2^max_k]); beyond it precision is lost.
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
    linear_err: np.ndarray | None = None

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

    def values(self, L: np.ndarray, k: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """p^T W* q from logits L measured at scale exponents k, for the probes p = P[rows].

        Whole-probe scaling: ``L / 4^k`` (``(L / 2^k - c^T p) / 2^k`` with a score bias);
        query-only scaling: ``(L - c^T p) / 2^k``.
        """
        s = self.arith.pow2(k)
        bias = 0 if self.linear is None else self.linear[rows]
        if self.scale_query_only:
            return (L - bias) / s
        return (L / s - bias) / s


def probe_batch(
    probes: Probes,
    kk: np.ndarray,
    ll: np.ndarray,
    s: np.ndarray | None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The two-token probes ``s [(p_k + q_l)^T; q_l^T]`` for each (k, l), shape (B, 2, d).

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
    query_only = probes.scale_query_only and s is not None
    if Q is None:
        unit = s if query_only else 1
        X[rows, 0, ll] = X[rows, 0, ll] + unit
        X[rows, 1, ll] = unit
    else:
        if query_only:
            X[:, 1, :] *= s[:, None]
        X[:, 0, :] += X[:, 1, :]
    if s is not None and not query_only:
        X *= s[:, None, None]
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


@dataclass
class Session:
    """One learner's measurement session.

    Carries what every measurement needs: the oracle, the arithmetic, the scaling policy, the
    batch size, the diagnostics the measurements fill (see the module docstring) and a reusable
    float64 probe buffer (refilling one buffer costs a fraction of faulting in fresh pages for
    every batch).

    Parameters
    ----------
    oracle : ValueOracle
    arith : Arith
    policy : ScalePolicy, optional
    max_batch_bytes : int
        Upper bound on the size of one batch of float64 probes sent to the oracle.
    """

    oracle: ValueOracle
    arith: Arith
    policy: ScalePolicy = field(default_factory=ScalePolicy)
    max_batch_bytes: int = 2**28
    diagnostics: dict[str, Any] = field(default_factory=dict)
    start: int = field(init=False)
    _buffer: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not all(hasattr(self.oracle, a) for a in ("d", "queries")) or not callable(self.oracle):
            raise InvalidInputError(
                f"a learner takes an oracle (e.g. ValueOracle(model)), which counts its queries; "
                f"got {self.oracle!r}"
            )
        mbb = self.max_batch_bytes
        if isinstance(mbb, bool) or not isinstance(mbb, (int, np.integer)) or mbb < 1:
            raise InvalidInputError(f"max_batch_bytes must be an integer >= 1; got {mbb!r}")
        self.policy = self.policy or ScalePolicy()
        self.start = self.oracle.queries

    @property
    def queries(self) -> int:
        """Queries asked since the session began."""
        return self.oracle.queries - self.start

    def recovery(
        self,
        learner: str,
        *,
        W: np.ndarray,
        v: np.ndarray,
        c: np.ndarray | None = None,
        beta: Any = None,
        W_error: float | None = None,
        v_error: float | None = None,
        rtol: float | None = None,
        guard: bool = True,
        **count: Any,
    ) -> Recovery:
        """The learner's result, with exact query accounting and the output guard.

        ``queries_formula`` is the registered learner's count (:data:`attnproof.proof.LEARNERS`)
        for ``count`` (d is filled in); ``reasked_queries`` is what rescaling cost.  In floating
        point ``W_error`` is the learner's a-posteriori bound on ||W_hat - W*||_F, reported as
        ``error_bound`` (``v_error`` as ``error_bound_v``).  ``guard=False`` is for a learner
        whose promise is absolute and checked before it queries (Thm 6.1's eps_W): its bound is
        reported, possibly infinite, and not compared with ``rtol``.

        Raises
        ------
        PrecisionLossError
            The output guard: the bound is not finite, or exceeds ``rtol ||W_hat||_F`` (default
            rtol: the arithmetic's resolution to the power 1/5, i.e. at least a fifth of the
            working digits are certified; the bound is a worst-case rounding model, typically
            10^3-10^5 times the true error, so the digits actually recovered are many more).  A W*
            too small for the arithmetic to resolve (||W_hat||_F itself within the bound, e.g.
            W* = 0 in float64) raises here too: the answer would be noise with no digit right.
        """
        info = self.diagnostics
        info["queries_formula"] = LEARNERS[learner].count(d=self.oracle.d, **count)
        info.setdefault("reasked_queries", 0)
        if W_error is not None and not guard:
            info.update(error_bound=float(W_error), error_bound_v=v_error)
        elif W_error is not None:
            promise = self.promise(rtol)
            size = self.arith.norm(W)
            info.update(error_bound=float(W_error), error_bound_v=v_error, promised_rtol=promise)
            if not (math.isfinite(W_error) and W_error <= promise * size):
                raise PrecisionLossError(
                    f"{learner}: the a-posteriori bound on ||W_hat - W*||_F is {W_error:.3g}, above the "
                    f"promised {promise:.1g} x ||W_hat||_F = {promise * size:.3g}: {self.arith.name} cannot "
                    "resolve this target to that accuracy (a W* this small, or saturated/ill-conditioned "
                    "probes); use mpmath with more digits (arith=MP(dps)) or rescale the inputs"
                )
        return Recovery(
            W=W, v=v, queries=self.queries, arith=self.arith, diagnostics=info, c=c, beta=beta
        )

    def promise(self, rtol: float | None) -> float:
        """The relative accuracy a learner promises: ``rtol``, or by default the arithmetic's
        resolution to the power 1/5 (a fifth of the working digits, certified: 6.6e-4 in float64;
        the worst-case bound is typically 10^3 to 10^5 times the true error, so a real
        all-MiniLM-L6-v2 head with an ill-conditioned skeleton needs this much headroom)."""
        return self.arith.resolution**0.2 if rtol is None else rtol

    def _chunk(self, n: int, d: int) -> tuple[int, np.ndarray | None]:
        """Batch size and (float64) buffer for n probes of width d."""
        if self.arith.dtype is object:  # object arrays are built per batch: a buffer only pays for float64
            return max(n, 1), None
        rows = max(1, min(n, self.max_batch_bytes // (2 * d * 8)))
        if self._buffer is None or self._buffer.shape[1:] != (2, d) or len(self._buffer) < rows:
            self._buffer = np.empty((rows, 2, d))
        return len(self._buffer), self._buffer

    def measure(
        self, probes: Probes, entries: tuple[np.ndarray, np.ndarray], k: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ask the probes for ``entries = (kk, ll)`` at scales 2^k; return the logits and k.

        The logit of entry (k, l) is ``s^2 p_k^T W* q_l``: ``alpha = (y / s - q_l^T v) / (p_k^T v)``
        (identity ``thm4.1/label-affine``) and the logit is ``sigma^{-1}(alpha)``.
        """
        arith = self.arith
        kk, ll = entries
        n = len(kk)
        k = np.zeros(n, dtype=np.int64) if k is None else k
        chunk, buffer = self._chunk(n, probes.d)
        L = np.empty(n, dtype=arith.dtype)
        with arith.context():  # mpmath's precision is global: in force for every step here
            for a in range(0, n, chunk):
                self._measure_chunk(probes, entries, k, slice(a, a + chunk), buffer, L)
        return L, k

    def _measure_chunk(
        self,
        probes: Probes,
        entries: tuple[np.ndarray, np.ndarray],
        k: np.ndarray,
        sl: slice,
        buffer: np.ndarray | None,
        L: np.ndarray,
    ) -> None:
        """One batch of :meth:`measure`: ask, subtract the known parts, invert sigma."""
        arith = self.arith
        kk, ll = entries
        pv, qv = probes.pv, probes.qv
        s = None if not np.any(k[sl]) else arith.pow2(k[sl])
        answers = self.oracle(probe_batch(probes, kk[sl], ll[sl], s, buffer))
        y = arith.asarray(answers, copy=False) - probes.offset
        if s is None:
            base = qv[ll[sl]]
        elif probes.scale_query_only:
            base = s * qv[ll[sl]]
        else:
            y, base = y / s, qv[ll[sl]]
        L[sl] = arith.logit((y - base) / pv[kk[sl]])

    def measure_adaptively(
        self,
        probes: Probes,
        entries: tuple[np.ndarray, np.ndarray],
        k0: int = 0,
        global_rescale: bool = True,
        policy: ScalePolicy | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Logits for ``entries`` with probe scales adapted until every one is well conditioned.

        Returns the logits L and the scale exponents k (see :meth:`Probes.values`); fills the
        session's diagnostics.  ``k0`` is the starting scale exponent (a learner measuring in
        several batches passes the scale its first batch settled on); ``global_rescale=False``
        keeps a batch whose values all happen to be small from being re-asked at a larger
        scale; ``policy`` overrides the session's policy for this call.

        Raises
        ------
        PrecisionLossError
            If a probe stays saturated at the smallest scale, or rescaling does not converge
            within ``policy.rounds`` rounds (every loop here is bounded).
        """
        policy = policy or self.policy
        info, arith = self.diagnostics, self.arith
        if arith.exact:  # exact arithmetic never saturates: no scale to adapt
            L, k = self.measure(probes, entries)
            info.setdefault("rescaled_probes", 0)
            return L, k
        kk, ll = entries
        L, k = self.measure(probes, entries, np.full(len(kk), k0, dtype=np.int64))
        mags = arith.magnitudes(L)
        global_rescales = reasked = 0
        # W far below unit scale: every logit sits in sigma's flat middle; scale every probe up.
        # k only grows and is capped at max_k, so this loop ends (at most max_k / zero_jump + 2
        # passes); if every logit is still 0 at s^2 = 2^(2 max_k), W* = 0 to that resolution.
        while global_rescale and len(mags) and np.all(np.isfinite(mags)) and mags.max() < policy.tiny:
            top = float(mags.max())
            step = policy.zero_jump if top == 0 else math.ceil(math.log2(policy.goal / top) / probes.order)
            step = min(step, policy.max_k - int(k.max()))
            if step <= 0:
                break
            k = k + step
            L, k = self.measure(probes, entries, k)
            mags = arith.magnitudes(L)
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
                ratio = np.log2(policy.goal / np.where(trusted, mags, 1.0))
            retarget = np.floor(ratio / probes.order).astype(np.int64)
            k = np.where(trusted, k + retarget, np.where(bad, k - policy.shrink_log2 // probes.order, k))
            if np.any(np.abs(k) > policy.max_k):
                raise PrecisionLossError(
                    f"a probe's sigmoid stays saturated even at scale 2^-{policy.max_k}: "
                    f"the target is beyond {arith.name}'s range; use mpmath with more digits"
                )
            idx = np.flatnonzero(bad)
            reasked += len(idx)
            Lb, _ = self.measure(probes, (kk[idx], ll[idx]), k[idx])
            L[idx] = Lb
            mags[idx] = arith.magnitudes(Lb)
        else:
            raise PrecisionLossError(f"probe rescaling did not converge in {policy.rounds} rounds")
        info["rescaled_probes"] = info.get("rescaled_probes", 0) + int(rescaled.sum())
        info["global_rescales"] = info.get("global_rescales", 0) + global_rescales
        info["reasked_queries"] = info.get("reasked_queries", 0) + reasked
        info["max_abs_logit"] = max(info.get("max_abs_logit", 0.0), float(mags.max(initial=0.0)))
        return L, k


def value_errors(
    probes: Probes,
    L: np.ndarray,
    k: np.ndarray,
    entries: tuple[np.ndarray, np.ndarray],
    W_norm: float,
    c_norm: float = 0.0,
) -> np.ndarray:
    """First-order bound on the rounding error of each measured value p^T W* q (float64).

    Model (every quantity rounded with unit roundoff eps; a dot product of length d + 4 with
    relative error g = (d + 4) eps), for the probe ``x_1 = s (p + q), x_2 = s q`` (whole-probe
    scaling) or ``x_1 = p + s q, x_2 = s q`` (query-only), s = 2^k:

    * the oracle's label ``y = beta + alpha x_1^T v + (1 - alpha) x_2^T v`` is off by
      ``g (|beta| + ||x_1|| ||v|| + ||x_2|| ||v||)``, and its logit ``(x_1 - x_2)^T (W x_2 + c)``
      by ``g (||W||_F (||x_1|| + ||x_2||) ||x_2|| + ||c|| (||x_1|| + ||x_2||))``;
    * the learner's v and beta carry the error of their one-token answers,
      ``4 eps (|v_i| + |beta|)`` and ``4 eps |beta|``;
    * alpha = (label - beta - base) / (p^T v) then carries those errors over |p^T v|, and the logit
      ``sigma^{-1}(alpha)`` amplifies an alpha error by ``1 / (alpha (1 - alpha))``;
    * the value is ``(L / s - c^T p) / s`` or ``(L - c^T p) / s``: the logit error over s^2 (or s),
      plus the error of the measured c^T p (``probes.linear_err``) over s.

    The same formula serves float64 and mpmath (eps = 10^-dps).  Returned as float64.
    """
    arith = probes.arith
    eps = arith.resolution
    kk, ll = entries
    P = arith.to_float(probes.P)
    Q = None if probes.Q is None else arith.to_float(probes.Q)
    v = arith.to_float(probes.v)
    beta = abs(float(arith.to_float(probes.offset)))
    g = (probes.d + 4) * eps
    v_err = 4 * eps * (np.linalg.norm(v) + np.sqrt(probes.d) * beta)
    p_norm = np.linalg.norm(P, axis=1)[kk]
    q_norm = np.ones(len(ll)) if Q is None else np.linalg.norm(Q, axis=1)[ll]
    pv = np.abs(arith.to_float(probes.pv))[kk]
    s = np.ldexp(1.0, k)
    if probes.scale_query_only:
        x1, x2, sx, sq = p_norm + s * q_norm, s * q_norm, np.ones_like(s), s
    else:
        x1, x2, sx, sq = s * (p_norm + q_norm), s * q_norm, s, np.ones_like(s)
    alpha = FLOAT64.sigmoid(arith.to_float(L))
    vn = np.linalg.norm(v)
    dy = g * (beta + (x1 + x2) * vn) + eps * beta * 4
    dalpha = (dy / sx + sq * q_norm * v_err + alpha * p_norm * v_err) / pv + 2 * eps
    ds = g * (W_norm * (x1 + x2) * x2 + c_norm * (x1 + x2))
    with np.errstate(divide="ignore"):
        dL = dalpha / (alpha * (1 - alpha)) + ds
    lin = 0.0 if probes.linear_err is None else probes.linear_err[kk]
    if probes.scale_query_only:
        return (dL + lin) / s
    return (dL / s + lin) / s


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
    return L / arith.pow2(2 * k)


__all__ = [
    "ScalePolicy",
    "sparing",
    "Probes",
    "Session",
    "probe_batch",
    "resolution",
    "value_errors",
    "bilinear_values",
]
