"""Bilinear measurements ``p^T W* q`` through two-token value queries, with adaptive scaling.

For vectors p, q the query ``X = s [(p + q)^T; q^T]`` has score difference
``s_1 - s_2 = s^2 p^T W* q`` (identities ``thm4.1/score-difference`` with q = e_j and
``thm5.1/rank-one-measurement`` in general), so its label is
``y = s (q^T v* + sigma(s^2 p^T W* q) p^T v*)`` and, once v* is known,
``p^T W* q = sigma^{-1}((y / s - q^T v*) / (p^T v*)) / s^2``.  Thm 4.1 uses p = u_l, q = e_j;
Thm 5.1 and the skeleton learner use random p and q.

The probe scale ``s = 2^k`` multiplies the logit by 4^k and the label by 2^k *without
rounding*.  The learner does not know the size of W*, so it learns it from its own first
measurements (beyond the paper): a call measures its entries in batches of growing size (1, 2,
4, ...), and every batch is asked at the scale that maps
the largest informative value seen so far (a :class:`Scale`, which a learner measuring in
several calls carries from one to the next) to a logit of at most ``ScalePolicy.ceiling``.  A
probe whose logit still saturates the sigmoid is asked again with a smaller s; a batch whose
logits are all lost to rounding moves the scale up for the next batch; and the few probes asked
before the scale was known, at a smaller s than it turned out to need, are asked again at the
end.  So a target of any size costs a handful of re-asked queries, not a second pass over
every probe.  Extra queries are counted by the oracle and reported.  Exact arithmetic (sympy)
never rescales.

Every learner works through one :class:`Session` (oracle, arithmetic, its registered
:class:`~attnproof.verify.registry.Learner`, query counting, timing, the output guard, and the result
closed with the shared schema: ``queries_formula``, ``reasked_queries``, ``error_bound``,
``time``); a learner that measures ``p^T W* q`` uses :class:`BilinearSession`, the layer on top
(scaling policy, reusable probe buffers, the adaptive measurement).  Diagnostics written by the
layer: ``rescaled_probes`` (probes asked again at another scale), ``global_rescales`` (batches
moved to a larger scale because every logit was lost to rounding), ``reasked_queries`` (every
query beyond the learner's formula that this cost), ``max_abs_logit`` and ``time``, the
session's wall-clock seconds in four parts that add up to the whole: ``'oracle'`` (inside the
oracle's calls), ``'basis'`` (drawing the probe vectors), ``'assembly'`` (building the probe
batches) and ``'solve'`` (everything else: inverting the answers, pivoting, the solve or the
reconstruction, the error bound).  A base session's time has the parts ``'oracle'`` and
``'solve'``.  An adaptive measurement writes its next probe batch in a worker thread while the
oracle answers the current one (:class:`BilinearSession`'s ``pipeline``, off by default): that
work is in the oracle's wall time, and its own seconds are reported as ``overlapped_assembly``.
"""

from __future__ import annotations

import math
import os
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache, cached_property, reduce
from typing import Any, ClassVar, Literal, Protocol

import numpy as np

from .arith import FLOAT64, Arith, check_real, norm2, parse
from .errors import InvalidInputError, PrecisionLossError, ShapeError, check_tolerance
from .models import NAIVE, FactorSizes, Rounding, RowSizes, declared_rounding
from .verify.registry import Learner
from .recovery import Recovery



#: What learning a target's size costs (issue 13): a generic target -- i.i.d. Gaussian W, or
#: W = K^T Q from generic factors, at any scale ||W|| from 1e-3 to 1e3, with or without biases --
#: is recovered by the exact and skeleton learners with at most their query floor plus this many
#: counted re-asks (measured: at most 6 in 1500 random draws; before the learner learned the
#: scale from its first measurements, such a W cost up to 2x the floor).  Property-tested in
#: tests/test_exact.py and tests/test_lowrank.py.  Not a bound for a sparse W whose measured
#: values span more than ~2^16 (entries near rounding beside unit ones): the first values seen
#: then mislead the scale (measured: up to 18 re-asks at d <= 7); those stay counted.
PILOT_SLACK = 8

@dataclass(frozen=True)
class ScalePolicy:
    """How probe scales ``s = 2^k`` are adapted so sigma^{-1} stays well conditioned.

    Attributes
    ----------
    accept : float
        A logit with |L| <= accept is used as measured (float64 loses ~e^accept * 2^-53).
    goal : float
        |logit| aimed at when a saturated probe is rescaled.
    ceiling : float
        The largest informative value seen so far is asked at a logit of at most this (within
        a factor 4 below it for whole-probe scaling, 2 for query-only): accept / ceiling is the
        headroom left for larger values still to come.
    informative : float
        A logit with |L| >= informative tells the size of its value (relative error about
        eps / informative); smaller ones (0 included) are lost to rounding and tell nothing.
    pilot : int
        Until this many informative values are known, the scale aims at a quarter of the
        ceiling (a few samples underestimate the largest value); it also caps the probes moved
        up together while every value is lost to rounding.
    trust : float
        A saturated logit with |L| <= trust is still accurate enough to retarget from; above
        it (or for an answer outside (0, 1)) the scale is divided by 2^shrink_log2.
    shrink_log2 : int
        log2 of the factor by which the logit shrinks for a fully saturated probe.
    tiny : float
        The scale moves up when the largest value is asked below this.  A probe asked before
        the scale was known, with a logit below this and 256 times or more below what the learned
        scale would give it, is asked again at the learned scale.
    max_k : int
        Largest |k| allowed (s in [2^-max_k, 2^max_k]); beyond it precision is lost.
    rounds : int
        Bound on the number of per-probe rescaling rounds (termination guarantee).
    """

    accept: float = 8.0
    goal: float = 2.0
    ceiling: float = 4.0
    informative: float = 1e-6
    pilot: int = 8
    trust: float = 30.0
    shrink_log2: int = 16
    tiny: float = 0.25
    max_k: int = 500
    rounds: int = 64


@dataclass
class Scale:
    """What a learner has learned about the size of the values it measures (one probe set).

    ``log2_top`` is log2 of the largest informative ``|p^T W* q|`` measured so far (-inf: none
    yet), ``count`` how many informative values were measured, ``jumps`` how many times the
    scale moved up past rounding, and ``k`` the scale exponent the next batch is asked at;
    ``k_unguessed`` is the scale before the first jump (None: no jump), the last one not guessed
    from values lost to rounding.
    Values are scale-free (``p^T W* q`` itself), so one Scale serves every call on the same
    probe set.
    """

    k: int = 0
    log2_top: float = -math.inf
    jumps: int = 0
    count: int = 0
    k_unguessed: int | None = None

    @property
    def known(self) -> bool:
        """Has an informative value been measured?"""
        return self.log2_top > -math.inf

    def learn(self, log2_values: np.ndarray, order: int, policy: ScalePolicy) -> None:
        """Take in log2 |p^T W* q| of the informative values of a batch (possibly none).

        The scale moves down as soon as the largest value would be asked above the ceiling; it
        moves up only when the largest value is asked below ``tiny`` (from fewer than
        ``policy.pilot`` values: below tiny / 16), so a unit-scale W* stays at s = 1.  It moves
        to where the largest value is asked at the ceiling -- at a quarter of it while fewer
        than ``policy.pilot`` values are known, as a few samples underestimate the largest."""
        if len(log2_values):
            self.log2_top = max(self.log2_top, float(np.max(log2_values)))
            self.count += len(log2_values)
        if not self.known:
            return
        enough = self.count >= policy.pilot
        ceiling = policy.ceiling if enough else policy.ceiling / 4
        asked = self.log2_top + order * self.k  # log2 of the largest value's logit at the current k
        low = math.log2(policy.tiny) - (0 if enough else 4)
        if asked > math.log2(policy.ceiling) or asked < low:
            k = math.floor((math.log2(ceiling) - self.log2_top) / order)
            self.k = max(-policy.max_k, min(policy.max_k, k))

    def jump(self, log2_logit: float, order: int, policy: ScalePolicy) -> None:
        """Nothing informative yet, every logit at most 2^log2_logit: move the scale up so that
        such a logit would reach the ceiling (a value lost to rounding becomes readable)."""
        step = max(1, math.floor((math.log2(policy.ceiling) - log2_logit) / order))
        if self.k < policy.max_k:
            if self.k_unguessed is None:
                self.k_unguessed = self.k
            self.k, self.jumps = min(policy.max_k, self.k + step), self.jumps + 1


#: How many scaled copies of P a probe set keeps (:meth:`Probes.scaled`; two: a skeleton alternates
#: between the scales of its columns and of its rows).
SCALES_KEPT = 2


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
    linear_typical: np.ndarray | None = None
    _scaled: dict[float, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)
    _memo: dict[tuple[Any, ...], Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def memo(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """``compute()``, computed once per probe set and ``key``: the per-probe quantities the error
        bounds read (row norms, ``|P| |v|``, the a-posteriori ``P v`` errors, ...) do not depend on
        the entries asked, and a learner reads them for its bound, its estimate and its checks."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def scaled(self, a: float) -> np.ndarray:
        """a P for a power of two a (exact; P itself for a = 1), kept for the last :data:`SCALES_KEPT`
        a asked: a column of M reads every row of P, so the batches of a call read one copy
        written once (a block of rows per core, :func:`_in_blocks`; bitwise ``P * a``: one product
        each).  Q is not copied: a batch reads few of its rows (a column's one, a row's changed
        ones) and scales them as it reads them (:func:`_gather`'s ``times``), which spares 128 MB
        of fresh pages at d = 4096."""
        if a == 1:
            return self.P
        if a not in self._scaled:
            while len(self._scaled) >= SCALES_KEPT:  # the oldest first (dicts keep insertion order)
                del self._scaled[next(iter(self._scaled))]
            self._scaled[a] = _times(self.P, a)
        return self._scaled[a]

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


def _times(M: np.ndarray, a: float) -> np.ndarray:
    """``M * a`` for a 2-D M, a block of rows per core when M is float64 and large
    (:func:`_in_blocks`): each entry the one product ``M * a`` makes, so bitwise the same."""
    if M.dtype != np.float64 or M.ndim != 2:
        return M * a
    out = np.empty_like(M)
    _in_blocks(lambda first, stop: np.multiply(M[first:stop], a, out=out[first:stop]), *M.shape)
    return out


def random_orthogonal(d: int, rng: np.random.Generator) -> np.ndarray:
    """A random orthogonal d x d matrix ``H C D`` in O(d^2) (float64; orthogonal to rounding).

    D flips the sign of each column at random, C is the orthonormal DCT-II matrix
    ``C[k, n] = sqrt(2/d) cos(pi k (2n + 1) / (2d))`` (row 0: sqrt(1/d)) and H the reflection
    ``I - 2 h h^T / h^T h`` with a Gaussian h.  Every row ``e_k^T H C D`` is spread over all
    coordinates like a Haar-random one (``|p^T x| ~ ||x|| / sqrt(d)`` for a fixed x, coherent
    x = e_i included), and the Gaussian h makes the rows a continuous random family, so a fixed
    W* meets a degenerate skeleton with probability 0 -- as with Haar-random bases, whose two
    dense QR factorisations cost O(d^3) (the learner's largest cost at d = 4096).

    The angle ``k (2n + 1) mod 4d`` takes only 4d values: their scaled cosines are computed once
    and C is read from that table, a block of rows at a time (bitwise the entries of computing
    each one: the same operations on the same numbers; the angles in 32-bit integers while
    ``2 d^2`` fits, twice as fast), D is applied to each block while it is in cache, and H a block
    of rows at a time (no d x d temporary); the blocks are shared out between the cores
    (:func:`_in_blocks`: each row written by one of them, bitwise as in turn).
    """
    scaled_cos = np.cos(np.arange(4 * d) * (np.pi / (2 * d)))  # every angle, reduced exactly
    scaled_cos *= math.sqrt(2.0 / d)
    index = np.int32 if 2 * d * d < 2**31 else np.int64  # k (2n + 1) < 2 d^2
    odd = 2 * np.arange(d, dtype=index) + 1
    signs = rng.choice([-1.0, 1.0], size=d)
    C = np.empty((d, d))

    def fill(first: int, stop: int) -> None:
        for a, b in _row_blocks(d, start=first, stop=stop):
            np.take(scaled_cos, (np.arange(a, b, dtype=index)[:, None] * odd) % index(4 * d), out=C[a:b],
                    mode="clip")  # in range: "clip" writes straight into C ("raise" buffers)
            if a == 0:
                C[0] = math.sqrt(1.0 / d)
            C[a:b] *= signs

    _in_blocks(fill, d, d)
    h = rng.standard_normal(d)
    u, w = h * (2 / (h @ h)), h @ C
    _subtract_outer(C, u, w, C)
    return C


def _subtract_outer(M: np.ndarray, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out = M - x y^T`` (d x d) a block of rows at a time through a reused block of ``x y^T``
    (no d x d temporary; bitwise the same products and differences), one per core
    (:func:`_in_blocks`); ``out`` may be M."""
    d = len(x)

    def fill(first: int, stop: int) -> None:
        blocks = list(_row_blocks(d, start=first, stop=stop))
        outer = np.empty((max((b - a for a, b in blocks), default=0), len(y)))
        for a, b in blocks:
            np.multiply(x[a:b, None], y, out=outer[: b - a])
            np.subtract(M[a:b], outer[: b - a], out=out[a:b])

    _in_blocks(fill, d, len(y))


def _row_blocks(
    d: int, entries: int = 2**18, width: int | None = None, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, int]]:
    """Consecutive row ranges [a, b) of a d x ``width`` matrix (default d x d), about ``entries``
    entries each (at least one row), over its rows ``start`` to ``stop`` (default d)."""
    rows, stop = max(1, entries // max(d if width is None else width, 1)), d if stop is None else stop
    return ((a, min(stop, a + rows)) for a in range(start, stop, rows))


def balanced(
    P: np.ndarray, v: np.ndarray, rng: np.random.Generator, out: np.ndarray | None = None
) -> np.ndarray:
    """``P`` (orthogonal, float64) followed by the Householder reflection that maps P v / ||v|| to
    a random sign vector / sqrt(d) (the one of the pair +-sigma that is far from P v / ||v||, so
    h does not cancel): every row then has ``p_k^T v = +-||v|| / sqrt(d)``, so no probe
    divides by a small ``p^T v`` (the label error is amplified by ``(|p^T v| + 2 |q^T v|) / |p^T v|``).
    ``out``: where the result is written, P itself allowed (P is read whole, by P v and h^T P,
    before a row is written; no fresh d x d pages); default a new array."""
    d = P.shape[0]
    u = P @ v / norm2(v)  # norm2: a v* of 1e-300 (or 1e300) neither underflows nor overflows
    sigma = rng.choice([-1.0, 1.0], size=d)
    # the target -sign(u^T sigma) sigma / sqrt(d) keeps ||h||^2 >= 2: no cancellation in h (with u
    # near sigma / sqrt(d), h = u - sigma / sqrt(d) was small and |p_k^T v| off by 7.5e-15 relative)
    h = u + math.copysign(1.0, u @ sigma) * sigma / math.sqrt(d)
    x, y = 2 * h / (h @ h), h @ P
    out = np.empty_like(P) if out is None else out
    _subtract_outer(P, x, y, out)
    return out


def probe_batch(
    probes: Probes,
    kk: np.ndarray,
    ll: np.ndarray,
    s: np.ndarray | None,
    out: np.ndarray | None = None,
    held: np.ndarray | None = None,
    parallel: bool = True,
) -> np.ndarray:
    """The two-token probes ``s [(p_k + q_l)^T; q_l^T]`` for each (k, l), shape (B, 2, d).

    (``[(p_k + s q_l)^T; (s q_l)^T]`` with ``probes.scale_query_only``.)  ``out`` (float64 only)
    is a reusable buffer of shape (>= B, 2, d), filled in place: refilling it costs a fraction of
    allocating fresh pages for every batch.  When every probe of the batch has the same scale
    (the rule: a batch is asked at its learned scale), the rows are read from a copy of P scaled
    once (:meth:`Probes.scaled`) and from Q scaled as they are read (:func:`_fill`), and each token
    is written in one pass: a column of M (q fixed) as ``p_k + q`` straight from P, a row (p fixed)
    as ``q_l + p``.

    ``held`` (int64, one per row of ``out``): the index l of the query token each row of ``out``
    already holds, written by an earlier batch of the same probes at the same scale (-1: none);
    such a row's query token is not written again (it is bitwise what would be written), and
    ``held`` is updated to what ``out`` holds on return.  The caller resets it when the probes or
    the scale change.  Successive rows of M share almost every query token, so a row asked in
    the slots of the one before rewrites only the first token.  ``parallel``: a large batch is
    written by one thread per core (:func:`_in_blocks`); False: by the calling thread alone (the
    prefill thread, which works while the oracle computes).
    """
    P, Q, arith = probes.P, probes.Q, probes.arith
    B, d = len(kk), probes.d
    if out is not None and (s is None or not B or np.all(s == s[0])):
        X = out[:B]
        scale = 1.0 if s is None or not B else float(s[0])
        Ps = probes.scaled(1.0 if probes.scale_query_only else scale)
        memo = None if held is None else held[:B]
        _in_blocks(
            lambda a, b: _fill(Ps, Q, kk[a:b], ll[a:b], scale, X[a:b], None if memo is None else memo[a:b]),
            B, d, parallel,
        )
        return X
    if held is not None:
        held[:B] = -1  # written below from P and Q, scaled per probe
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


def _fill(
    Ps: np.ndarray, Q: np.ndarray | None, kk: np.ndarray, ll: np.ndarray, scale: float, X: np.ndarray,
    held: np.ndarray | None = None,
) -> None:
    """Write the probes (k, l) of one scale into X (B, 2, d): the fast path of :func:`probe_batch`,
    from the scaled copy ``Ps = a P`` and the rows of ``s Q`` (Q None: q_l = e_l), scaled as they
    are read (:func:`_gather`'s ``times``: the one product ``s q`` per entry, bitwise what a scaled
    copy of Q would hold); ``held`` as there (the query tokens X already holds: only the others are
    written)."""
    B = len(kk)
    first, second = X[:, 0, :], X[:, 1, :]
    if Q is None:
        rows = np.arange(B)
        _gather(Ps, kk, first)
        second[...] = 0
        first[rows, ll] += scale
        second[rows, ll] = scale
        if held is not None:
            held[...] = -1  # the basis tokens e_l are not tracked
        return
    stale = None if held is None else np.flatnonzero(held != ll)
    if B and np.all(ll == ll[0]):
        q = _scaled(Q[ll[0]], scale)
        if stale is None or len(stale):
            second[...] = q
        _gather(Ps, kk, first, plus=q)
    else:
        if stale is None or len(stale) == B:
            _gather(Q, ll, second, times=scale)
        elif len(stale):
            second[stale] = _scaled(Q[ll[stale]], scale)
        if B and np.all(kk == kk[0]):
            np.add(second, Ps[kk[0]], out=first)
        else:
            _gather(Ps, kk, first)
            first += second
    if held is not None:
        held[...] = ll


#: Probe batches of at least this many float64 entries are written by several threads (below it the
#: threads cost more than they save); numpy's copies and additions release the GIL.
_PARALLEL_ENTRIES = 2**20


@cache
def _pool(workers: int) -> ThreadPoolExecutor:
    """The threads that write probe batches (created on first use, shared by every session; a
    forked child, which inherits the pool but not its threads, creates its own)."""
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="attnproof-probes")


os.register_at_fork(after_in_child=_pool.cache_clear)


@cache
def _prefiller() -> ThreadPoolExecutor:
    """The thread that writes a session's next probe batch while the oracle answers the current one
    (:meth:`BilinearSession.measure`'s ``then``; one thread: at most one batch is pending)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="attnproof-prefill")


os.register_at_fork(after_in_child=_prefiller.cache_clear)


@cache
def _cores() -> int:
    """``os.cpu_count()``, read once (it reads /proc on every call: slow beside a probe batch)."""
    return os.cpu_count() or 1


def _in_blocks(fill: Callable[[int, int], None], B: int, d: int, parallel: bool = True) -> None:
    """Run ``fill(a, b)`` over consecutive blocks of the rows 0..B - 1, one per core when the batch
    is large: writing a batch of probes is bound by memory bandwidth, which one core does not
    saturate (at d = 4096: ~17 us per probe on one core, ~9 on two).  Each row is written by
    exactly one block with the same elementwise operations, so the result is bitwise the same.
    The calling thread writes the last block itself (it would only wait: one hand-off to a pool
    thread fewer per batch, which a loaded machine makes wait for a core).  Not ``parallel``: one
    block, in the calling thread."""
    large = parallel and 2 * B * d >= _PARALLEL_ENTRIES
    workers = min(_cores(), 8, B) if large else 1
    if workers < 2:
        fill(0, B)
        return
    cuts = [int(c) for c in np.linspace(0, B, workers + 1).astype(int)]
    pool = _pool(workers - 1)
    started = [pool.submit(fill, a, b) for a, b in zip(cuts[:-2], cuts[1:-1], strict=True)]
    try:
        fill(cuts[-2], cuts[-1])
    finally:  # every block done before the batch is read (or a block's error raised)
        for done in started:
            done.result()  # re-raises a block's exception here


#: Rows :func:`_gather` scales at a time (1 MB at d = 4096): its second pass over them (the product,
#: then ``+ plus``) reads what the first wrote from the core's cache, not from memory.
GATHER_ROWS = 32


def _scaled(row: np.ndarray, times: float) -> np.ndarray:
    """``row * times`` (a new array), or ``row`` itself for times = 1 (bitwise the product)."""
    return row if times == 1 else row * times


def _gather(
    M: np.ndarray, idx: np.ndarray, out: np.ndarray, plus: np.ndarray | None = None, times: float = 1.0
) -> None:
    """out[b] = M[idx[b]] * times (+ the vector ``plus``) without a temporary of out's size: a
    broadcast when idx is constant or (times = 1) cycles through every row of M in order (whole
    columns / rows of a skeleton), slice copies for runs of consecutive rows, else an in-place take.
    Each entry is the one product ``M[i, j] * times`` (then the one sum with ``plus``), bitwise what
    a copy ``M * times`` would give; with times != 1 a run or take goes :data:`GATHER_ROWS` rows at a
    time."""
    m = M.shape[0]
    B = len(idx)
    step = B if times == 1 else GATHER_ROWS

    def put(rows: np.ndarray | slice, at: slice) -> None:
        """out[at] = M[rows] * times (+ plus), the rows a slice (copied) or indices (taken)."""
        o = out[at]
        if isinstance(rows, slice):
            if times != 1:
                np.multiply(M[rows], times, out=o)
            elif plus is not None:
                np.add(M[rows], plus, out=o)  # one pass
                return
            else:
                o[...] = M[rows]
        else:
            np.take(M, rows, axis=0, out=o, mode="clip")  # idx is in range: no buffering
            if times != 1:
                o *= times
        if plus is not None:
            o += plus

    if B and np.all(idx == idx[0]):
        row = _scaled(M[idx[0]], times)
        out[...] = row if plus is None else row + plus
    elif times == 1 and B % m == 0 and np.array_equal(idx.reshape(-1, m),
                                                      np.broadcast_to(np.arange(m), (B // m, m))):
        out.reshape(B // m, m, -1)[...] = M if plus is None else M + plus
    else:
        breaks = np.flatnonzero(np.diff(idx) != 1) + 1  # runs of consecutive rows: slice copies
        if len(breaks) < max(64, B // 8):
            for a, b in zip(np.concatenate([[0], breaks]), np.concatenate([breaks, [B]]), strict=True):
                for c in range(a, b, step):
                    e = min(c + step, b)
                    put(slice(idx[c], idx[c] + (e - c)), slice(c, e))
        else:
            for c in range(0, B, step):
                put(idx[c : c + step], slice(c, c + step))


#: The query hooks in force (:meth:`Session.observe`): each is called with the number of queries
#: every :meth:`Session.ask` cost.  A context variable, so a hook is seen only by the thread (or
#: task) that installed it.
_QUERY_HOOKS: ContextVar[tuple[Callable[[int], None], ...]] = ContextVar("attnproof_query_hooks", default=())


class Oracle(Protocol):
    """What a session needs of an oracle: its width d, its query count, and answers."""

    @property
    def d(self) -> int: ...

    @property
    def queries(self) -> int: ...

    def __call__(self, X: Any) -> Any: ...


def check_answers(X: Any, answers: Any) -> None:
    """An oracle's answers to the batch X: one real number per query (a scalar for one sequence
    of shape (N, d), shape (B,) for a batch (B, N, d)); NaN and infinities are the learners' to
    judge (a saturated probe is asked again), anything else is refused here.

    Raises
    ------
    ShapeError
        If the answers do not have the shape ``X.shape[:-2]``.
    InvalidInputError
        If an answer is a string, None or a complex number.
    """
    got = answers if isinstance(answers, np.ndarray) else np.asarray(answers, dtype=object)
    want = np.shape(X)[:-2]
    if got.shape != want:
        raise ShapeError(
            f"the oracle answered shape {got.shape} to queries of shape {np.shape(X)}; expected {want}"
        )
    try:
        check_real(got)
    except InvalidInputError as exc:
        raise InvalidInputError(f"the oracle's answers must be real numbers: {exc}") from exc


@dataclass
class Session:
    """One learner's session with its oracle: the base every learner shares (Sec. 3's currency).

    Carries the oracle, the arithmetic, the registered :class:`~attnproof.verify.registry.Learner` (its
    query count, its arithmetics), the queries asked since the session began, wall-clock time by
    part, and the diagnostics the learner fills; it asks the oracle (:meth:`ask`), books queries
    by phase (:meth:`phase`), applies the output guard (:meth:`guard`) and closes the result
    with the shared schema (:meth:`close`, :meth:`recovery`).  A learner that measures bilinear
    values ``p^T W* q`` uses the layer on top, :class:`BilinearSession`.

    Parameters
    ----------
    oracle : Oracle
        Anything with ``d``, ``queries`` and answers (a ValueOracle, a MembershipOracle, a
        derived oracle): the session counts *its* queries.
    arith : Arith or str
        A spelling (``"float64"``, ``"mp:30"``, ``"sympy"``) is parsed; anything else that is not
        an :class:`Arith` raises InvalidInputError.
    learner : Learner, keyword only
        The registered learner (``attnproof.verify.registry.LEARNERS[name]``, or the ``@learner``'s
        record): its ``count`` gives ``queries_formula``; the arithmetic must be one it declares.
    diagnostics : dict, keyword only
        Learner-specific facts; the session adds the shared schema when it closes.

    Raises
    ------
    InvalidInputError
        If the oracle does not count queries, or the learner does not run in ``arith``.
    """

    oracle: Oracle
    arith: Arith
    learner: Learner | None = field(default=None, kw_only=True)
    diagnostics: dict[str, Any] = field(default_factory=dict, kw_only=True)
    start: int = field(init=False)
    started: float = field(init=False)
    time: dict[str, float] = field(init=False)
    #: queries spent inside each :meth:`phase` (by name)
    spent: dict[str, int] = field(default_factory=dict, init=False)

    #: The parts of the wall-clock time reported: ``'oracle'`` (inside the oracle's calls) and
    #: ``'solve'`` (everything else; it is what the other parts leave of the whole).
    TIME_PARTS: ClassVar[tuple[str, ...]] = ("oracle", "solve")

    def __post_init__(self) -> None:
        self.arith = parse(self.arith)  # "float64", "mp:30", "sympy" spell an arithmetic too
        if not all(hasattr(self.oracle, a) for a in ("d", "queries")) or not callable(self.oracle):
            raise InvalidInputError(
                f"a learner takes an oracle (e.g. ValueOracle(model)), which counts its queries; "
                f"got {self.oracle!r}"
            )
        learner = self.learner
        if isinstance(learner, Learner) and self.arith.family not in learner.arithmetics:
            raise InvalidInputError(
                f"the {learner.name} learner runs in {', '.join(learner.arithmetics)}, not {self.arith.name}"
            )
        self.time = dict.fromkeys(self.TIME_PARTS, 0.0)
        self.start = self.oracle.queries
        self.started = time.perf_counter()

    @classmethod
    @contextmanager
    def observe(cls, on_queries: Callable[[int], None]) -> Iterator[None]:
        """Inside the block, every session's :meth:`ask` calls ``on_queries(n)`` with the n
        queries it cost (e.g. a progress bar counting a sweep's queries live).  A session on a
        derived oracle reports that oracle's queries."""
        token = _QUERY_HOOKS.set((*_QUERY_HOOKS.get(), on_queries))
        try:
            yield
        finally:
            _QUERY_HOOKS.reset(token)

    @property
    def queries(self) -> int:
        """Queries asked since the session began (counted by its oracle)."""
        return self.oracle.queries - self.start

    @contextmanager
    def timed(self, part: str) -> Iterator[None]:
        """Add the wall-clock time of the block to ``time[part]`` (see :attr:`TIME_PARTS`)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.time[part] = self.time.get(part, 0.0) + time.perf_counter() - t0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Book the queries asked inside the block (through any oracle that forwards to the
        session's) under ``spent[name]`` (added up over blocks of one name; nested phases
        each book them)."""
        before = self.oracle.queries
        try:
            yield
        finally:
            self.spent[name] = self.spent.get(name, 0) + self.oracle.queries - before

    def ask(self, X: Any, via: Oracle | None = None) -> Any:
        """The oracle's answers to the batch X (its time goes to ``time['oracle']``).

        ``via``: ask through another oracle, e.g. a derived one built on the session's (its
        queries are counted where they land, by the session's oracle).

        Raises
        ------
        InvalidInputError
            If an answer is no real number (a string, None, a complex number), or
            :class:`ShapeError` if there is not one answer per query (:func:`check_answers`):
            the one place every learner's oracle answers are checked, before any is used.
        """
        before = self.oracle.queries
        with self.timed("oracle"):
            answers = (self.oracle if via is None else via)(X)
        spent = self.oracle.queries - before
        for hook in _QUERY_HOOKS.get():
            hook(spent)
        check_answers(X, answers)
        return answers

    @property
    def registered(self) -> Learner:
        """The session's registered learner."""
        if self.learner is None:
            raise InvalidInputError("this session has no registered learner (Session(..., learner=...))")
        return self.learner

    def formula(self, **count: Any) -> int:
        """The registered learner's query count for ``count`` (d is filled in)."""
        return self.registered.count(d=self.oracle.d, **count)

    def promise(self, rtol: float | None) -> float:
        """The relative accuracy a learner promises: ``rtol``, or by default the arithmetic's
        resolution to the power 1/5 (a fifth of the working digits, certified: 6.6e-4 in float64;
        the worst-case bound is typically 10^3 to 10^5 times the true error, so a real
        all-MiniLM-L6-v2 head with an ill-conditioned skeleton needs this much headroom).

        Raises
        ------
        InvalidInputError
            If ``rtol`` is not None or a finite real number > 0 (:func:`attnproof.errors.check_tolerance`).
        """
        rtol = check_tolerance("rtol", rtol, optional=True)
        return self.arith.resolution**0.2 if rtol is None else rtol

    def guard(
        self,
        bound: float,
        size: float | None,
        rtol: float | None = None,
        *,
        what: str = "||W_hat - W*||_F",
        of: str = "||W_hat||_F",
        why: str = "",
    ) -> float:
        """The output guard: the a-posteriori ``bound`` must be finite and at most ``promise(rtol)
        * size`` (``size`` None: ``rtol`` is absolute).  Returns the promise.

        Raises
        ------
        PrecisionLossError
            Naming the learner, the bound on ``what``, the promise (times ``of``) and ``why``.
        """
        promise = self.promise(rtol)
        allowed = promise if size is None else promise * size
        if not (math.isfinite(bound) and bound <= allowed):
            times = "" if size is None else f" x {of} = {allowed:.3g}"
            name = "the learner" if self.learner is None else self.registered.name
            found = (f"is {bound:.3g}, above" if not math.isnan(bound)
                     else "could not be evaluated (NaN: an overflow or 0 x inf in its terms), not within")
            raise PrecisionLossError(
                f"{name}: the a-posteriori bound on {what} {found} the "
                f"promised {promise:.1g}{times}: {self.arith.name} cannot resolve this target to that "
                f"accuracy{why}; use mpmath with more digits (arith=MP(dps)) or rescale the inputs"
            )
        return promise

    def close(
        self,
        *,
        reasked: int | Literal["rest"] | None = None,
        error_bound: float | None = None,
        error_bound_v: float | None = None,
        **count: Any,
    ) -> dict[str, Any]:
        """Fill the shared schema into the diagnostics and return them: ``time`` (by part),
        ``queries_formula`` (the registered count for ``count``), ``reasked_queries`` (what the
        measurements recorded, or ``reasked``; ``"rest"``: every query beyond the formula) and,
        in floating point, ``error_bound`` (on ||W_hat - W*||_F) and ``error_bound_v``."""
        info = self.diagnostics
        elapsed = time.perf_counter() - self.started
        measured = sum(t for part, t in self.time.items() if part != "solve")
        info["time"] = dict(self.time, solve=max(0.0, elapsed - measured))
        info["queries_formula"] = self.formula(**count)
        if reasked == "rest":
            reasked = self.queries - info["queries_formula"]
        if reasked is None:
            info.setdefault("reasked_queries", 0)
        else:
            info["reasked_queries"] = reasked
        if error_bound is not None:
            info.update(error_bound=float(error_bound), error_bound_v=error_bound_v)
        return info

    def recovery(
        self,
        *,
        W: np.ndarray,
        v: np.ndarray,
        c: np.ndarray | None = None,
        beta: Any = None,
        W_error: float | None = None,
        v_error: float | None = None,
        rtol: float | None = None,
        guard: bool = True,
        reasked: int | Literal["rest"] | None = None,
        W_norm: float | None = None,
        **count: Any,
    ) -> Recovery:
        """The learner's :class:`Recovery`, closed (:meth:`close`) and guarded.

        ``queries_formula`` is the registered learner's count for ``count`` (d is filled in);
        ``reasked_queries`` is what rescaling cost.  In floating point ``W_error`` is the
        learner's a-posteriori bound on ||W_hat - W*||_F, reported as ``error_bound``
        (``v_error`` as ``error_bound_v``).  ``guard=False`` is for a learner whose promise is
        absolute and checked before it queries (Thm 6.1's eps_W): its bound is reported,
        possibly infinite, and not compared with ``rtol``.  ``reasked`` as for :meth:`close`.
        ``W_norm``: ``||W_hat||_F`` as the learner computed it (``arith.norm(W)``), so the guard does
        not read W a second time (a d x d pass); None: computed here.

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
        info = self.close(reasked=reasked, error_bound=W_error, error_bound_v=v_error, **count)
        if W_error is not None and guard:
            why = " (a W* this small, or saturated/ill-conditioned probes)"
            size = self.arith.norm(W) if W_norm is None else W_norm
            info["promised_rtol"] = self.guard(W_error, size, rtol, why=why)
        return Recovery(
            W=W, v=v, queries=self.queries, arith=self.arith, diagnostics=info, c=c, beta=beta
        )


@dataclass
class _ProbeBuffer:
    """A reusable float64 probe buffer ``X`` (rows, 2, d) and the query token each row holds
    (``held``, as :func:`probe_batch` reads it), valid for the probes ``owner`` at the scale
    exponent ``k``."""

    X: np.ndarray
    held: np.ndarray
    owner: Callable[[], Probes | None] = lambda: None
    k: int = 0

    def hold(self, probes: Probes, k: np.ndarray) -> None:
        """Before a batch of ``probes`` at scale exponents k: forget the held tokens unless they
        were written for these probes at this one scale (a batch of mixed scales forgets the rows
        it writes, in :func:`probe_batch`)."""
        if len(k) and np.all(k == k[0]) and (self.owner() is not probes or self.k != int(k[0])):
            self.held[:] = -1
            self.owner, self.k = weakref.ref(probes), int(k[0])


@dataclass
class _Prefill:
    """A probe batch written ahead by the prefill thread (:meth:`BilinearSession.measure`'s
    ``then``): the entries (kk, ll) at the one scale exponent ``k``, at row ``at`` of ``buffer``,
    for ``probes``; ``done`` the thread's work (its seconds, or its exception)."""

    probes: Probes
    kk: np.ndarray
    ll: np.ndarray
    k: int
    buffer: _ProbeBuffer
    at: int
    done: Future[float]
    joined: bool = False

    def holds(self, probes: Probes, kk: np.ndarray, ll: np.ndarray, k: np.ndarray, buffer: _ProbeBuffer,
              at: int) -> bool:
        """Is this the batch ``(kk, ll)`` of ``probes`` at scale exponents k, at row ``at`` of ``buffer``?"""
        return (self.probes is probes and self.buffer is buffer and self.at == at and len(k) > 0
                and bool(np.all(k == self.k)) and np.array_equal(self.kk, kk) and np.array_equal(self.ll, ll))


@dataclass
class BilinearSession(Session):
    """The bilinear adaptive measurement, a layer on :class:`Session`: ``p^T W* q`` through
    two-token value queries, with probe scales adapted (see the module docstring).

    Adds the scaling policy, the batch size and reusable float64 probe buffers (refilling one
    buffer costs a fraction of faulting in fresh pages for every batch): one for batches that ask
    a single query token (a column of M) and one for the others (a row of M), so alternating
    columns and rows do not overwrite each other's tokens, and a row asked in the slots of the
    row before rewrites only its first tokens (:func:`probe_batch`'s ``held``).  The oracle
    receives a read-only view of a buffer.  With ``pipeline``, the next batch of an adaptive
    measurement is written by a worker thread while the oracle answers the current one (into
    other rows of the buffers: the probes, the queries and their count are bitwise those of the
    serial order; a guess the answers overturn -- a new scale -- is written again).  Its time has
    four parts (:attr:`TIME_PARTS`: wall clock, so a batch written during the oracle's call counts
    in ``'oracle'``), the seconds the worker spent writing batches are ``overlapped_assembly`` (the
    learner's work hidden in the oracle's wall time), and its measurements fill
    ``rescaled_probes``, ``global_rescales``, ``reasked_queries`` and ``max_abs_logit``.

    Parameters
    ----------
    oracle : ValueOracle
    arith : Arith
    policy : ScalePolicy, optional
    max_batch_bytes : int
        Upper bound on the size of one batch of float64 probes sent to the oracle (each of the
        two buffers holds at most one batch).
    pipeline : bool, keyword only
        Write the next batch while the oracle answers; False (default): strictly in turn.  Off
        by default: at d = 4096, r = 128 on two cores it moved ~12 s of probe writing into the
        oracle's wall time (the oracle slowed by as much: 69.5 -> 81.9 s) and left the total
        unchanged (90.5 vs 91.3 s), so it only flatters learner/oracle.
    learner, diagnostics : keyword only
        As for :class:`Session`.
    """

    policy: ScalePolicy = field(default_factory=ScalePolicy)
    max_batch_bytes: int = 2**28
    pipeline: bool = field(default=False, kw_only=True)
    _buffers: dict[bool, _ProbeBuffer] = field(default_factory=dict, init=False, repr=False)
    _ahead: _Prefill | None = field(default=None, init=False, repr=False)

    TIME_PARTS: ClassVar[tuple[str, ...]] = ("oracle", "basis", "assembly", "solve")

    def __post_init__(self) -> None:
        super().__post_init__()
        mbb = self.max_batch_bytes
        if isinstance(mbb, bool) or not isinstance(mbb, (int, np.integer)) or mbb < 1:
            raise InvalidInputError(f"max_batch_bytes must be an integer >= 1; got {mbb!r}")
        self.policy = self.policy or ScalePolicy()

    @property
    def rounding(self) -> Rounding:
        """How the oracle declares its answers rounded (:attr:`attnproof.oracles.ValueOracle.rounding`),
        for :func:`value_errors`; :data:`~attnproof.models.NAIVE` when it declares nothing (a
        derived oracle: its answers are combinations of others)."""
        return declared_rounding(self.oracle)

    def _chunk(self, n: int, d: int, one_query: bool, at: int = 0) -> tuple[int, _ProbeBuffer | None]:
        """Batch size and (float64) buffer for n probes of width d asked from row ``at``, within
        ``max_batch_bytes`` (no buffer, one batch, where the arithmetic builds its arrays per batch:
        :meth:`Arith.buffer`).  The batch size is the buffer's length, at least n rows (one batch)
        where they fit in ``max_batch_bytes``.  A buffer has at least d rows, and ``at + n``: each
        batch at its place in its call (a row of M, each token in its slot: :func:`probe_batch`'s
        ``held``; with ``pipeline``, the next batch after this one).  But one for serial batches
        that ask one query token (``one_query``: a column of M, which has no token to keep from one
        batch to the next) is written with half of d rows (or ``at + n``): an adaptive column's
        largest batch (:meth:`measure_adaptively` doubles them: at most ceil(n / 2) of n entries,
        asked from row 0 when they do not fit at their place), and written again only for a batch
        larger than it (128 MB of fresh pages fewer at d = 4096)."""
        most = max(1, self.max_batch_bytes // (2 * d * 8))
        placed = self.pipeline or not one_query  # every batch at its place
        rows = min(max(at + n, d if placed else (d + 1) // 2), most)
        buf = self._buffers.get(one_query)
        if buf is None or buf.X.shape[1:] != (2, d) or len(buf.X) < (rows if placed else min(n, most)):
            X = self.arith.buffer((rows, 2, d))
            if X is None:
                return max(n, 1), None
            buf = self._buffers[one_query] = _ProbeBuffer(X, np.full(rows, -1, dtype=np.int64))
        return len(buf.X), buf

    def release(self, probes: Probes) -> None:
        """Drop the probe buffers and the scaled copies of P of ``probes`` (:meth:`Probes.scaled`)
        once a learner has asked what it needed (the next measurement writes them again): at
        d = 4096 640 MB, which a learner's later arrays (W, its bounds' d x d temporaries) then reuse
        instead of faulting in fresh pages (~0.75 s of system time per 128 MB on a virtual machine
        that hands its free pages back to the host).  Nothing measured changes."""
        self._join()
        self._ahead = None
        self._buffers.clear()
        probes._scaled.clear()

    def _place(self, n: int, d: int, ll: np.ndarray, at: int) -> tuple[int, _ProbeBuffer | None, int]:
        """Batch size, buffer and first row of a call of n probes with query indices ``ll`` asked
        from row ``at`` (0 when they would not fit there): :meth:`_chunk`."""
        chunk, buffer = self._chunk(n, d, bool(n) and bool(np.all(ll == ll[0])), at)
        return chunk, buffer, at if at + n <= chunk else 0

    def measure(
        self,
        probes: Probes,
        entries: tuple[np.ndarray, np.ndarray],
        k: np.ndarray | None = None,
        at: int = 0,
        then: tuple[np.ndarray, np.ndarray, int, int] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ask the probes for ``entries = (kk, ll)`` at scales 2^k; return the logits and k.

        The logit of entry (k, l) is ``s^2 p_k^T W* q_l``: ``alpha = (y / s - q_l^T v) / (p_k^T v)``
        (identity ``thm4.1/label-affine``) and the logit is ``sigma^{-1}(alpha)``.  ``at``: the
        row of the buffer the first probe is written to (a batch of a larger call sits at its
        place in the call, so the next call in the same order finds its query tokens there); 0
        when the batch would not fit there.  ``then = (kk, ll, k, at)``: the batch the caller
        expects to ask next (at the one scale exponent k), written by the prefill thread while the
        oracle answers this call's last batch (with ``pipeline``, float64, where it fits in other
        rows than this batch's); the next call that asks exactly it reads it from the buffer.
        """
        arith = self.arith
        kk, ll = entries
        n = len(kk)
        k = np.zeros(n, dtype=np.int64) if k is None else k
        self._join()
        chunk, buffer, at = self._place(n, probes.d, ll, at)
        L = np.empty(n, dtype=arith.dtype)
        with arith.context():  # mpmath's precision is global: in force for every step here
            for a in range(0, n, chunk):
                ahead = then if a + chunk >= n else None
                self._measure_chunk(probes, entries, k, slice(a, a + chunk), buffer, at, L, ahead)
        return L, k

    def _join(self, quiet: bool = False) -> None:
        """Wait for the prefill thread's batch, if one is pending, and book its seconds under
        ``overlapped_assembly``; its exception is raised here (``quiet``: dropped, while another
        is on its way).  The batch stays readable (:meth:`_written_ahead`)."""
        ahead = self._ahead
        if ahead is None or ahead.joined:
            return
        ahead.joined = True
        try:
            seconds = ahead.done.result()
        except BaseException:
            self._ahead = None
            if quiet:
                return
            raise
        info = self.diagnostics
        info["overlapped_assembly"] = info.get("overlapped_assembly", 0.0) + seconds

    def _written_ahead(
        self, probes: Probes, kk: np.ndarray, ll: np.ndarray, k: np.ndarray, buffer: _ProbeBuffer, at: int
    ) -> bool:
        """Did the prefill thread write this batch (joined: :meth:`_join`)?  Read once; a batch
        written ahead is forgotten once another is written over its rows."""
        ahead = self._ahead
        if ahead is None:
            return False
        if ahead.holds(probes, kk, ll, k, buffer, at):
            self._ahead = None
            return True
        if ahead.buffer is buffer and at < ahead.at + len(ahead.kk) and ahead.at < at + len(kk):
            self._ahead = None
        return False

    def _write_ahead(
        self,
        probes: Probes,
        then: tuple[np.ndarray, np.ndarray, int, int],
        busy: tuple[_ProbeBuffer, int, int],
    ) -> None:
        """Start writing the batch ``then = (kk, ll, k, at)`` in the prefill thread, unless it would
        not fit in one batch or would overwrite the rows ``busy = (buffer, first, stop)`` the oracle
        is reading."""
        kk, ll, k, at = then
        n = len(kk)
        chunk, buffer, at = self._place(n, probes.d, ll, at)
        mine, first, stop = busy
        if buffer is None or not n or n > chunk or (buffer is mine and at < stop and first < at + n):
            return
        s = None if k == 0 else np.full(n, self.arith.pow2(k))
        kk, ll, ks = kk.copy(), ll.copy(), np.full(n, k, dtype=np.int64)

        def write() -> float:
            t0 = time.perf_counter()
            buffer.hold(probes, ks)
            probe_batch(probes, kk, ll, s, buffer.X[at:], buffer.held[at:], parallel=False)
            return time.perf_counter() - t0

        self._ahead = _Prefill(probes, kk, ll, k, buffer, at, _prefiller().submit(write))

    def _measure_chunk(
        self,
        probes: Probes,
        entries: tuple[np.ndarray, np.ndarray],
        k: np.ndarray,
        sl: slice,
        buffer: _ProbeBuffer | None,
        at: int,
        L: np.ndarray,
        then: tuple[np.ndarray, np.ndarray, int, int] | None = None,
    ) -> None:
        """One batch of :meth:`measure` (written at row ``at`` of the buffer, or read there when the
        prefill thread wrote it): ask (while the prefill thread writes ``then``), subtract the
        known parts, invert sigma."""
        arith = self.arith
        kk, ll = entries
        pv, qv = probes.pv, probes.qv
        with self.timed("assembly"):
            self._join()  # a batch written ahead: done (its error raised) before the buffers are read
            s = None if not np.any(k[sl]) else arith.pow2(k[sl])
            if buffer is None:
                X = probe_batch(probes, kk[sl], ll[sl], s)
            else:
                B = len(kk[sl])
                if self._written_ahead(probes, kk[sl], ll[sl], k[sl], buffer, at):
                    X = buffer.X[at : at + B].view()
                else:
                    buffer.hold(probes, k[sl])
                    X = probe_batch(probes, kk[sl], ll[sl], s, buffer.X[at:], buffer.held[at:]).view()
                X.flags.writeable = False  # the buffer's tokens are reused: the oracle only reads them
                if then is not None and self.pipeline:
                    self._write_ahead(probes, then, (buffer, at, at + B))
        try:
            answers = self.ask(X)
        except BaseException:
            self._join(quiet=True)  # the oracle's error is the one raised; the thread is not left running
            raise
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
        scale: Scale | None = None,
        policy: ScalePolicy | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Logits for ``entries`` with probe scales adapted until every one is well conditioned.

        Returns the logits L and the scale exponents k (see :meth:`Probes.values`); fills the
        session's diagnostics.  The entries are asked in batches of growing size, each at the
        scale ``scale`` has learned so far (see the module docstring); ``scale`` carries that
        knowledge from one call to the next on the same probe set (default: a fresh one, which
        starts at s = 1); ``policy`` overrides the session's policy for this call.

        Raises
        ------
        PrecisionLossError
            If a probe stays saturated at the smallest scale, or rescaling does not converge
            within ``policy.rounds`` rounds (every loop here is bounded).
        """
        try:
            L, k = self._measure_adaptively(probes, entries, scale, policy)
        except BaseException:
            self._join(quiet=True)  # the error raised is the measurement's; no thread is left writing
            raise
        self._join()  # a batch written ahead that the answers overturned: its thread is done
        return L, k

    def _measure_adaptively(
        self,
        probes: Probes,
        entries: tuple[np.ndarray, np.ndarray],
        scale: Scale | None,
        policy: ScalePolicy | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`measure_adaptively`'s body; each batch names the next one, of twice its size at
        its scale, for the prefill thread (the answers may overturn the guess)."""
        policy = policy or self.policy
        info, arith = self.diagnostics, self.arith
        if arith.exact:  # exact arithmetic never saturates: no scale to adapt
            L, k = self.measure(probes, entries)
            info.setdefault("rescaled_probes", 0)
            return L, k
        scale = Scale() if scale is None else scale
        kk, ll = entries
        n = len(kk)
        L = np.empty(n, dtype=arith.dtype)
        k = np.zeros(n, dtype=np.int64)
        mags = np.zeros(n)
        rescaled = np.zeros(n, dtype=bool)
        jumps, reasked = scale.jumps, 0
        start, size = 0, 1  # a call may measure values of another size (a pivot row): one probe first
        while start < n:  # at most (jumps + 1) (log2(n) + 1) batches
            b = np.arange(start, min(n, start + size))
            k[b] = scale.k
            guess = np.arange(start + len(b), min(n, start + len(b) + 2 * size))
            then = (kk[guess], ll[guess], scale.k, start + len(b)) if len(guess) else None
            reasked += self._settle(
                probes, entries, L, k, mags, b, rescaled, policy, scale.k_unguessed, start, then
            )
            before = scale.jumps
            self._learn(probes, entries, L, k, b, scale, policy)
            # a jump guesses the scale from values near rounding: growth restarts at one probe, so a
            # wrong guess costs one saturated probe, not a doubled batch of them (issue 23)
            start, size = start + len(b), 1 if scale.jumps > before else 2 * size
        # every value lost to rounding: W* tiny or 0; move a few spread-out probes up until one is
        # informative (each jump keeps a lost value below the ceiling)
        search = np.unique(np.linspace(0, n - 1, min(n, policy.pilot)).astype(np.int64))
        while n and not scale.known:  # each pass but the last jumps k up, to at most max_k: <= 2 max_k passes
            before = scale.jumps
            self._learn(probes, entries, L, k, search, scale, policy, patient=False)
            # no jump (at the largest scale: W* = 0 to resolution), or none above where the probes are;
            # the probes may sit below scale.k after _settle shrank saturated ones (labels beyond
            # float64's range): without the first test they were moved up and shrunk again forever
            if scale.known or scale.jumps == before or scale.k <= int(k[search].max()):
                break
            k[search] = scale.k
            reasked += len(search) + self._settle(probes, entries, L, k, mags, search, rescaled, policy)
            rescaled[search] = True
        # probes asked before the scale was known, at one 256 times smaller or more than it turned out
        # to allow: ask them again (a probe that then saturates is rescaled like any other).  Their
        # signal is read without the score bias c^T p, which does not grow with s (as in _learn):
        # with a bias the whole logit stays ~ c^T p however far below the scale a probe was asked
        early = np.flatnonzero(
            (probes.order * (scale.k - k) >= 8) & (self._signal(probes, entries, L, k) < policy.tiny)
        )
        if early.size:
            k[early] = scale.k
            reasked += len(early) + self._settle(probes, entries, L, k, mags, early, rescaled, policy)
            rescaled[early] = True
            self._learn(probes, entries, L, k, early, scale, policy)
        info["rescaled_probes"] = info.get("rescaled_probes", 0) + int(rescaled.sum())
        info["global_rescales"] = info.get("global_rescales", 0) + scale.jumps - jumps
        info["reasked_queries"] = info.get("reasked_queries", 0) + reasked
        info["max_abs_logit"] = max(info.get("max_abs_logit", 0.0), float(mags.max(initial=0.0)))
        return L, k

    def _settle(
        self,
        probes: Probes,
        entries: tuple[np.ndarray, np.ndarray],
        L: np.ndarray,
        k: np.ndarray,
        mags: np.ndarray,
        b: np.ndarray,
        rescaled: np.ndarray,
        policy: ScalePolicy,
        unguessed: int | None = None,
        at: int = 0,
        then: tuple[np.ndarray, np.ndarray, int, int] | None = None,
    ) -> int:
        """Ask the probes ``b`` at their scales k[b] and ask again every one whose logit saturates
        (retargeted to ``goal`` from a trusted logit, else shrunk by 2^shrink_log2) until none
        does; fills L, k, mags in place and returns the number of queries asked again.

        ``unguessed`` (:attr:`Scale.k_unguessed`, for probes asked for the first time): a probe
        saturated above it (the scale jumped, guessed from values lost to rounding) goes back at
        least to it -- the jump was wrong for this probe, and shrinking 2^shrink_log2 at a time
        would ask it once per 2^shrink_log2 of the jump (issue 23).  Not for the probes moved up
        by the jumps themselves: they were lost at that scale.  ``at``: where the batch goes in the
        probe buffer, ``then`` the batch expected next (:meth:`measure`)."""
        kk, ll = entries
        L[b], _ = self.measure(probes, (kk[b], ll[b]), k[b], at, then)
        mags[b] = self.arith.magnitudes(L[b])
        reasked = 0
        for _ in range(policy.rounds):
            bad = b[~np.isfinite(mags[b]) | (mags[b] > policy.accept)]
            if not bad.size:
                return reasked
            rescaled[bad] = True
            m = mags[bad]
            trusted = np.isfinite(m) & (m <= policy.trust)
            with np.errstate(divide="ignore"):
                retarget = np.floor(np.log2(policy.goal / np.where(trusted, m, 1.0)) / probes.order)
            k[bad] += np.where(trusted, retarget.astype(np.int64), -(policy.shrink_log2 // probes.order))
            if unguessed is not None:
                k[bad] = np.where(trusted, k[bad], np.minimum(k[bad], unguessed))
            if np.any(np.abs(k[bad]) > policy.max_k):
                raise PrecisionLossError(
                    f"a probe's sigmoid stays saturated even at scale 2^-{policy.max_k}: "
                    f"the target is beyond {self.arith.name}'s range; use mpmath with more digits"
                )
            reasked += len(bad)
            L[bad], _ = self.measure(probes, (kk[bad], ll[bad]), k[bad])
            mags[bad] = self.arith.magnitudes(L[bad])
        raise PrecisionLossError(f"probe rescaling did not converge in {policy.rounds} rounds")

    def _signal(
        self, probes: Probes, entries: tuple[np.ndarray, np.ndarray], L: np.ndarray, k: np.ndarray
    ) -> np.ndarray:
        """``|s^order p^T W* q|`` of each entry (float64): its logit L without the score bias
        (``s c^T p`` whole-probe, ``c^T p`` query-only), which does not grow with s."""
        arith = self.arith
        return arith.magnitudes(probes.values(L, k, entries[0]) * arith.pow2(probes.order * k))

    def _learn(
        self,
        probes: Probes,
        entries: tuple[np.ndarray, np.ndarray],
        L: np.ndarray,
        k: np.ndarray,
        b: np.ndarray,
        scale: Scale,
        policy: ScalePolicy,
        patient: bool = True,
    ) -> None:
        """Update ``scale`` from the settled batch ``b``: its informative values, or, if it has
        none and nothing is known yet, a jump past the rounding that hid them -- when its logits
        are clearly above rounding noise (a tiny W*), or else only if not ``patient`` (every
        entry was lost: zeros alone do not tell a tiny W* from a sparse one)."""
        order = probes.order
        kk, ll = entries
        signal = self._signal(probes, (kk[b], ll[b]), L[b], k[b])
        with np.errstate(divide="ignore"):
            log2_values = np.log2(signal) - order * k[b]
        scale.learn(log2_values[signal >= policy.informative], order, policy)
        if not scale.known:
            top = float(signal.max(initial=0.0))
            # the logits' rounding noise: the values' resolution times s^order, i.e. the resolution at
            # k = 0 (taken there: at k = 500, 10^-50 / 2^1000 underflows float64)
            noise = float(np.max(resolution(probes, (kk[b], ll[b]), np.zeros_like(k[b]))))
            if top > 1024 * noise or not patient:  # clearly a tiny W*, or the last resort
                scale.jump(math.log2(max(top, noise)), order, policy)


#: The absolute error a float64 product may add below the normal range (2^-1074 >= the 2^-1075 of
#: gradual underflow; additions are exact there).  :func:`value_errors` charges it in every
#: arithmetic: mpmath does not underflow in this range, and there it only over-estimates labels
#: below ~1e-290 (no branch on the arithmetic).
UNDERFLOW = float(np.finfo(np.float64).smallest_subnormal)


def _into_range(probes: Probes) -> int:
    """The exponent e with ``max(|v*|, |beta|) 2^e`` in [1, 2) (0 when both are 0): the rounding
    model's terms in v* and beta are homogeneous, so it reads them scaled by 2^e (exact)."""
    top = probes.arith.log2_abs_max(np.append(np.asarray(probes.v, dtype=object), probes.offset))
    return -math.floor(top) if math.isfinite(top) else 0


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a b = h + l`` exactly (Dekker's TwoProduct, float64, no FMA; Ogita, Rump and Oishi 2005,
    Alg. 3.3): exact unless a product or a partial one falls below the normal range or |a|, |b|
    exceed 2^996."""
    factor = 134217729.0  # 2^27 + 1: splits a float64 into two halves of 26 bits
    ca, cb = factor * a, factor * b
    a_hi, b_hi = ca - (ca - a), cb - (cb - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    h = a * b
    return h, a_lo * b_lo - (((h - a_hi * b_hi) - a_lo * b_hi) - a_hi * b_lo)


def _product_errors(
    M: np.ndarray, x: np.ndarray, computed: np.ndarray, magnitude: np.ndarray, eps: float
) -> np.ndarray:
    """A bound on ``|computed_k - (M x)_k|`` for each row k: the rounding of a learner's own ``M x``
    (``P v*``, ``Q v*``), which every probe's alpha divides by or subtracts.

    float64 (``eps`` = 2^-53): a posteriori, against ``M x`` recomputed to twice the working
    precision (Ogita, Rump and Oishi's Dot2, 2005: TwoProduct, then a pairwise tree of TwoSums whose
    errors are added separately), within ``eps |res| + K`` of the exact value with
    ``K = 4 gamma_{2d} eps (log2 d + 2) (|M| |x|)_k`` (the tree's ``ceil(log2 d)`` levels each err by
    at most ``eps sum |h|``, their and the low parts' float sums by ``gamma_{2d}`` of that) and
    ``4 d 2^-1074`` for products below the normal range.  So the bound is the distance to that
    result plus ``eps |res| + K`` -- the error actually made (about ``eps sqrt(d)`` of |M| |x| for
    BLAS), not the worst case ``gamma_d |M| |x|`` of any summation order (d / sqrt(d) times larger).
    Any other ``eps`` (mpmath, 10^-dps): that a-priori ``gamma_d |M| |x|``.  ``magnitude`` is
    ``|M| |x|`` (computed in float64: within ``gamma_d`` of it, hence the factors ``1 + 2 d eps``)."""
    d = M.shape[1]
    if eps != FLOAT64.eps:
        return (d * eps / (1 - d * eps)) * magnitude * (1 + 2 * d * FLOAT64.eps)
    res = np.empty(M.shape[0])
    block = max(1, 2**16 // max(d, 1))  # a block's temporaries stay in cache; each row's sums are its own
    for a in range(0, M.shape[0], block):
        h, low = _two_product(M[a : a + block], x[None, :])
        errors = low.sum(axis=1)
        while h.shape[1] > 1:  # pairwise TwoSum: h's row sums = the first column + the errors, exactly
            if h.shape[1] % 2:
                h = np.hstack([h, np.zeros((h.shape[0], 1))])
            left, right = h[:, 0::2], h[:, 1::2]
            h = left + right
            z = h - left
            errors = errors + ((left - (h - z)) + (right - z)).sum(axis=1)
        res[a : a + block] = h[:, 0] + errors
    levels = math.ceil(math.log2(max(d, 1))) + 2
    gamma = 2 * d * eps / (1 - 2 * d * eps)
    K = 4 * gamma * eps * levels * magnitude * (1 + 2 * d * FLOAT64.eps) + 4 * d * UNDERFLOW
    return (np.abs(computed - res) + eps * np.abs(res) + K) * (1 + 4 * eps)


def _ext_error(d: int, u: float, x: tuple[np.ndarray, np.ndarray, np.ndarray], M: RowSizes) -> np.ndarray:
    """A bound on ``||fl(M x) - M x||`` for :func:`attnproof.models._ext_product` (inner length d),
    ``x = (||x||, ||x||_1, max |x|)`` per probe token, ``M``'s declared :class:`RowSizes`.

    The product splits x = x_1 + x_2 and each row m = m_1 + m_2 exactly, with ``|x_2| <= tau max|x|``,
    ``|m_2| <= tau max|m|`` (tau = ``2^(rho - 53)``, ``rho = ceil((53 + log2 d) / 2)``); ``x_1^T m_1`` is
    exact, the three other float64 dot products err by ``gamma_d(2^-53)`` times ``|x_1|^T |m_2| +
    |x_2|^T |m_1| + |x_2|^T |m_2| <= S = tau (||x||_1 max|m| + max|x| ||m||_1) + 3 d tau^2 max|x| max|m|``,
    and their four parts add in longdouble with ``gamma_3(u)`` of ``|x|^T |m| + (2 + gamma) S``.  Over
    the rows, by the triangle inequality, ``max|m|`` and ``||m||_1`` become ``M.largest``, ``M.one``,
    and ``|x|^T |m|`` at most ``||x|| M.frobenius``."""
    norm, one, top = x
    rho = math.ceil((53 + math.log2(max(d, 1))) / 2)
    tau = 2.0 ** (rho - 53)
    G = d * FLOAT64.eps / (1 - d * FLOAT64.eps)
    split = tau * (one * M.largest + top * M.one) + 3 * d * tau**2 * top * M.largest
    return G * split + 3 * u / (1 - 3 * u) * (norm * M.frobenius + (2 + G) * split)


def _float_bases(probes: Probes) -> tuple[np.ndarray, np.ndarray | None]:
    """P and Q (None without Q) as float64, converted once per probe set."""
    arith = probes.arith
    return probes.memo(("float",), lambda: (
        arith.to_float(probes.P), None if probes.Q is None else arith.to_float(probes.Q)))


def _row_sizes(probes: Probes) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...] | None]:
    """``(||p_k||, ||p_k||_1, max|p_k|)`` for every row of P, and the same for Q (None without Q),
    computed once per probe set (float64), a block of rows at a time: each block's temporaries stay
    in cache (at d = 4096 a whole-matrix pass is 134 MB), and each row's sums are bitwise those of
    the whole matrix (a reduction along a row reads that row alone)."""
    def sizes(M: np.ndarray) -> tuple[np.ndarray, ...]:
        out = np.empty((3, M.shape[0]))
        for a, b in _row_blocks(M.shape[0], 2**15, M.shape[1]):
            rows = np.abs(M[a:b])
            out[0, a:b], out[1, a:b], out[2, a:b] = norm2(M[a:b], axis=1), rows.sum(axis=1), rows.max(axis=1)
        return out[0], out[1], out[2]

    P, Q = _float_bases(probes)
    return probes.memo(("rows",), lambda: (sizes(P), None if Q is None else sizes(Q)))


def _rows_through(M: np.ndarray, f: np.ufunc, x: np.ndarray) -> np.ndarray:
    """``f(M) @ x`` for an elementwise ufunc ``f`` (``np.abs``, ``np.square``) and a float64 M, a block
    of rows at a time through one reused block: no temporary of M's size (at d = 4096 134 MB of
    fresh pages, which a cold machine backs at a cost of seconds), and each row's product bitwise
    the whole matrix's (a matrix-vector product's row reads that row alone)."""
    out = np.empty(M.shape[0])
    blocks = list(_row_blocks(M.shape[0], 2**15, M.shape[1]))
    block = np.empty((max((b - a for a, b in blocks), default=0), M.shape[1]))
    for a, b in blocks:
        np.matmul(f(M[a:b], out=block[: b - a]), x, out=out[a:b])
    return out


def _token_sizes(
    probes: Probes, kk: np.ndarray, ll: np.ndarray, s: np.ndarray
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """``(||x||, ||x||_1, max|x|)`` (upper bounds) of the probe tokens x_1, x_2 of each entry (k, l)
    at scale s: ``x_2 = s q``, ``x_1 = s (p + q)`` or ``p + s q`` (query only), computed by the
    learner in float64 (``|fl(p + q)| <= (1 + eps) (|p| + |q|)``); ``q = e_l`` without Q."""
    up = 1 + 2 * FLOAT64.eps  # the learner's p + q, and these sums' own rounding (d eps) below 2^-20
    up = up * (1 + 2.0**-20)
    p_rows, q_rows = _row_sizes(probes)
    p = tuple(x[kk] for x in p_rows)
    q = (np.ones(len(ll)),) * 3 if q_rows is None else tuple(x[ll] for x in q_rows)
    a, b = (np.ones_like(s), s) if probes.scale_query_only else (s, s)
    x1 = tuple(up * (a * pi + b * qi) for pi, qi in zip(p, q, strict=True))
    x2 = tuple(up * s * qi for qi in q)
    return x1, x2


def _dense_batches(probes: Probes, k: np.ndarray) -> bool:
    """Does every batch asking these probes take :func:`attnproof.models._ext_product` for its last
    tokens (more than d / 8 non-zeros per token, :func:`attnproof.models._last_token_image`)?  A
    bilinear session asks each batch of one probe set (its last tokens are ``s q_l``) at scales
    within ``2^-max_k`` of :class:`ScalePolicy` or this call's own: so yes when every q_l keeps more
    than d / 8 non-zeros scaled by the smallest of those."""
    if probes.Q is None:
        return False
    d = probes.d
    kept = probes.memo(("kept",), lambda: -np.partition(  # the (d // 8 + 1)-th largest |q_lj| of each row
        -np.abs(_float_bases(probes)[1]), d // 8, axis=1)[:, d // 8])
    low = min(int(np.min(k, initial=0)), -ScalePolicy.max_k)
    return bool(np.all(np.ldexp(kept, low) > 0))


def _faithful_errors(
    sizes: FactorSizes, u: float, d: int, tokens: tuple[tuple[np.ndarray, ...], ...], xd: np.ndarray,
    dense: bool, e: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The errors a faithful factored evaluation (:func:`attnproof.models._faithful`, declared by
    :class:`~attnproof.models.FactorSizes`) adds to a two-token probe's logit and to its two value
    images, before its final rounding: ``(ds, dw_1, dw_2)`` per probe, the dw in v's units scaled
    by 2^e (:func:`_into_range`).

    ``tokens`` = ((||x_i||, ||x_i||_1, max|x_i|) for i = 1, 2), ``xd`` = ``||x_1 - x_2||``.  With
    ``k_i = K x_i``, ``q = Q x_N`` (N = 2) computed within dk_i, dq (:func:`_ext_error`; a last
    token read term by term when the batch is not all dense, ``gamma_d(u) ||x_N|| ||Q||_F``), each
    score ``k_i^T q`` summed over r terms (``gamma_r(u) |k_i|^T |q|``) plus ``c^T x_i`` (within dc_i,
    one more rounding), the logit ``s_1 - s_2`` is off by at most ``(dk_1 + dk_2) ||q|| +
    ||K||_2 ||x_1 - x_2|| dq + gamma_r(u) (||k_1|| + ||k_2||) ||q|| + dc_1 + dc_2`` (q's error is
    shared: it meets the logit through ``K (x_1 - x_2)``) plus ``3 u`` of ``|s_1| + |s_2|`` (the bias's
    addition and the softmax's subtraction) and ``4 u`` for the longdouble exp."""
    g_r = sizes.r * u / (1 - sizes.r * u)
    (x1, *_), (x2, *_) = tokens
    dq = _ext_error(d, u, tokens[1], sizes.query)
    if not dense:  # a sparse batch: x_N's non-zeros (at most d) multiplied and added in longdouble
        dq = np.maximum(dq, d * u / (1 - d * u) * x2 * sizes.query.frobenius)
    dk = [_ext_error(d, u, t, sizes.key) for t in tokens]
    qn = sizes.query_2 * x2 + dq
    kn = [sizes.key_2 * x + dk_i for x, dk_i in zip((x1, x2), dk, strict=True)]
    zero = np.zeros_like(x1)
    dc = [zero, zero] if sizes.c is None else [_ext_error(d, u, t, sizes.c) for t in tokens]
    cn = [zero, zero] if sizes.c is None else [sizes.c.frobenius * x + dc_i
                                              for x, dc_i in zip((x1, x2), dc, strict=True)]
    size = sum((1 + g_r) * k * qn + c for k, c in zip(kn, cn, strict=True))
    ds = ((dk[0] + dk[1]) * qn + sizes.key_2 * xd * dq + g_r * (kn[0] + kn[1]) * qn + dc[0] + dc[1]
          + 3 * u * size + 4 * u)
    v = RowSizes(*(math.ldexp(x, e) for x in (sizes.v.frobenius, sizes.v.largest, sizes.v.one)))
    dw = [_ext_error(d, u, t, v) for t in tokens]
    return ds, dw[0], dw[1]


@dataclass
class SharedV:
    """v's error as one vector, filled by :func:`value_errors` (``shared=``), per unit of the bound b
    it returns (so a value model scaled by a factor scales both parts).

    The learner's v (and beta) carry the error dv of their one-token answers, one vector for every
    probe: to first order it moves the value of entry e = (k, l) by exactly ``b[e] (p[e] p_k^T dv +
    q[e] q_l^T dv)`` (signed coefficients, 0 at an entry not split), ``||dv|| <= norm`` (in v's
    units, as :func:`value_errors` reads them), and the rest of the entry's error is at most
    ``own[e] b[e]`` (``own`` = 1 where not split).  A caller that carries the linear part through its
    solve jointly (``sum_l (q_l^T dv)^2 <= ||Q||_2^2 ||dv||^2``) instead of as a worst case per entry
    (``|q_l^T dv| <= |q_l|^T |dv|`` each, summed) saves about sqrt(d) on it (issue 22)."""

    p: np.ndarray | None = None
    q: np.ndarray | None = None
    own: np.ndarray | None = None
    norm: float = 0.0


def value_errors(
    probes: Probes,
    L: np.ndarray,
    k: np.ndarray,
    entries: tuple[np.ndarray, np.ndarray],
    W_norm: float,
    c_norm: float = 0.0,
    Wq: np.ndarray | None = None,
    rounding: Rounding = NAIVE,
    images: np.ndarray | None = None,
    shared: SharedV | None = None,
    exact_probes: np.ndarray | None = None,
) -> np.ndarray:
    """First-order bound on the rounding error of each measured value p^T W* q (float64).

    Model (the learner's own quantities rounded with its unit roundoff eps; the oracle's as it
    declares, ``rounding`` (:class:`~attnproof.models.Rounding`): a dot product of length d + 4
    with relative error g = (d + 4) t, t = ``rounding.term`` (eps for :data:`NAIVE`), and the
    answer y rounded by ``rounding.final |y|``), for the probe ``x_1 = s (p + q), x_2 = s q``
    (whole-probe scaling) or ``x_1 = p + s q, x_2 = s q`` (query-only), s = 2^k:

    * the oracle's label ``y = beta + alpha x_1^T v + (1 - alpha) x_2^T v`` is off by
      ``g (|beta| + ||x_1|| ||v|| + ||x_2|| ||v||) + final (|beta| + |x_1^T v| + |x_2^T v|)``, and
      its logit ``s_1 - s_2``, each score ``s_i = x_i^T q + c^T x_i`` read from one query vector
      ``q = W x_2`` (computed once, its d entries each a dot product), by
      ``g (||W||_F ||x_1 - x_2|| ||x_2|| + ||W x_2|| (||x_1|| + ||x_2||) + ||c|| (||x_1|| + ||x_2||))``:
      q's rounding (at most ``g ||W||_F ||x_2||``) enters the difference through ``x_1 - x_2`` (of
      norm ``s ||p||``, ``||p||`` query-only), each score's own dot products through ``||x_i||``;
    * the learner's probe ``x_1`` is itself rounded (``p + q`` in float64): ``eps ||x_1||`` moves
      the label by ``eps ||x_1|| ||v||`` and the score by ``eps ||x_1|| (||W x_2|| + ||c||)``;
    * the learner's own ``P v`` and ``Q v`` (the alpha below subtracts ``q^T v`` and divides by
      ``p^T v``) are off by what :func:`_product_errors` bounds (float64: measured a posteriori);
    * the learner's v and beta carry the error of their one-token answers: ``|dv_i| <=
      (4 t + final) |v_i| + 2 (4 t + final) |beta|`` (+ ``eps |v_i|`` for the learner's subtraction
      of a beta != 0), which meets the probe as ``q^T dv`` (``<= (4 t + final) |q|^T |v| + ...``),
      and ``4 eps |beta|``;
    * alpha = (label - beta - base) / (p^T v) then carries those errors over |p^T v|, and the logit
      ``sigma^{-1}(alpha)`` amplifies an alpha error by ``1 / (alpha (1 - alpha))``; but the errors of
      the learner's x_1, of its p^T v and of alpha's own two roundings move alpha only in proportion
      to alpha (the label carries x_1^T v times alpha; alpha is a quotient by p^T v), so they meet
      the logit as ``1 / (1 - alpha)`` times their relative size (issue 22: at a logit of -5 that is
      150 times less than the absolute form); the logit
      ``log(alpha) - log(1 - alpha)`` itself rounds by ``eps (2 |log alpha| + 2 |log(1 - alpha)| + |L|)``
      (two library logarithms within 2 eps each, and the difference);
    * the value is ``(L / s - c^T p) / s`` or ``(L - c^T p) / s``: the logit error over s^2 (or s),
      plus the error of the measured c^T p (``probes.linear_err``; ``linear_typical`` for the
      estimate) over s.

    A declaration with ``sizes`` (a faithful factored head, :class:`~attnproof.models.FactorSizes`)
    replaces the label's and the logit's ``g`` terms by :func:`_faithful_errors`: the split products
    and longdouble sums the evaluation does, bounded from the declared sizes of K, Q, c, v* (the
    truth's, not the estimate's) and the probes' own ``||x||``, ``||x||_1``, ``max|x|``.

    ``images`` (per entry, ``||W q|| / ||q||`` of the recovered W, first order) sizes ``||W x_2||``
    in the bound; without it ``||W||_F`` (``W_norm``) bounds it.

    With ``shared`` (a :class:`SharedV`, bound only) the same bound is returned, and ``shared`` says
    which part of it is v's error, where splitting that off leaves a smaller own part
    (:func:`_split_v`), as one vector's linear effect: for the caller to bound jointly (issue 22:
    the bound summed ``|q_l^T dv| <= |q_l|^T |dv|`` per entry, about sqrt(d) times the ``||Q dv||
    <= ||dv||`` all of them share).

    ``exact_probes`` (a mask of the entries, float64 bound only): the learner's rounding of those
    entries' x_1 is read a posteriori (:func:`_probe_rounding`, O(d) each) instead of bounded by
    ``eps (|p| + |q|)^T |v|`` (a random walk, not a sum of magnitudes: ~sqrt(d) less).

    With ``Wq`` (per entry, ``||W q|| / ||q||`` of the recovered W) the same model gives the
    *typical* error instead of a bound (an estimate, not a certificate): one rounding is off by
    eps / sqrt(3) (the RMS of a uniform error), a dot product ``x^T y`` by about that times
    ``|x^T y| + ||x o y||`` (x o y: its summands; ``||x|| ||y|| / sqrt(d)`` when y is spread out),
    so the label's error is that for ``x_i^T v``, the score's for ``x_i^T (W x_2)`` and ``x_i^T c``
    (plus the rounding of ``W x_2`` itself, computed once: it meets the logit only through
    ``x_1 - x_2``, of norm ``s ||p||`` or ``||p||``), and a one-token answer is exact without an offset.
    A learner adds these up in quadrature through its solve.

    The same formula serves float64 and mpmath (eps = 10^-dps).  Returned as float64.

    Entry by entry: evaluated :data:`VALUE_ERRORS_CHUNK` entries at a time (each entry's bound
    the same formula as in one pass, equal to a few ulps: numpy's vector loops and BLAS may round
    an entry differently in a batch of another shape), so that its few dozen per-entry temporaries
    stay small and are reused by the allocator (a skeleton at d = 4096, r = 128 asks a million
    entries: 8 MB of fresh pages for each).
    ``W_norm`` and ``c_norm`` may be per-entry arrays.
    """
    if Wq is not None and shared is not None:
        raise InvalidInputError("value_errors: shared (v's error as one vector) belongs to a bound, "
                                "not to an estimate")
    n = len(entries[0])
    # whether every batch took the split product reads the call's scales as a whole, not a chunk's
    dense = Wq is None and rounding.sizes is not None and _dense_batches(probes, k)
    bound, parts = np.empty(n), []
    for a in range(0, max(n, 1), VALUE_ERRORS_CHUNK):
        chunk = slice(a, a + VALUE_ERRORS_CHUNK)

        def cut(x: Any) -> Any:
            """A per-entry argument's chunk (a scalar or None as it is)."""
            return x[chunk] if x is not None and np.ndim(x) > 0 else x

        part = None if shared is None else SharedV()
        bound[chunk] = _chunk_errors(probes, cut(L), cut(k), (cut(entries[0]), cut(entries[1])),
                                     cut(W_norm), cut(c_norm), cut(Wq), rounding, cut(images), part,
                                     cut(exact_probes), dense)
        parts.append(part)
    if shared is not None:
        shared.p, shared.q, shared.own = (np.concatenate([getattr(x, f) for x in parts])
                                          for f in ("p", "q", "own"))
        shared.norm = parts[0].norm
    return bound


#: Entries per pass of :func:`value_errors` (its per-entry temporaries: 256 kB each).  A multiple of
#: numpy's SIMD blocks, so that most entries meet the vector loops where one pass would (their scalar
#: tails round some functions differently: chunks of 8 moved one ``SharedV.own`` by an ulp at d = 9);
#: not all: at d = 20 one entry of 400 moved by 2-3 ulps in chunks of 128 (thorough profile, seed
#: 281408), so a chunked pass equals one pass to a few ulps, not bitwise.
VALUE_ERRORS_CHUNK = 2**15


def _chunk_errors(
    probes: Probes, L: np.ndarray, k: np.ndarray, entries: tuple[np.ndarray, np.ndarray], W_norm: Any,
    c_norm: Any, Wq: np.ndarray | None, rounding: Rounding, images: np.ndarray | None,
    shared: SharedV | None, exact_probes: np.ndarray | None, dense: bool,
) -> np.ndarray:
    """:func:`value_errors` of some entries (its arguments, per entry where they are arrays), with
    ``dense`` the call's :func:`_dense_batches` (read where the declaration has sizes)."""
    arith = probes.arith
    typical = Wq is not None
    eps = arith.resolution / math.sqrt(3) if typical else arith.resolution  # RMS of a uniform rounding
    kk, ll = entries
    P, Q = _float_bases(probes)
    # alpha's error is homogeneous of degree 0 in (v, beta): both are scaled by one exact power of
    # two into range, so a v* of 1e-300 (or 1e300, or 1e-400 in mpmath) neither underflows nor
    # overflows in the squares and products below
    e = _into_range(probes)
    v = arith.to_float(arith.ldexp(probes.v, e))
    beta = abs(float(arith.to_float(arith.ldexp(probes.offset, e))))
    d = probes.d
    term = eps if typical or rounding.term is None else rounding.term  # the oracle's unit per term
    g = eps if typical else (d + 4) * term
    # the one-token answers: exact without an offset; typically eps |beta| per entry, and a unit
    # vector meets d of those in a sum of random sign.  The bound, per entry: |dv_i| <= a |v_i| + b
    # (v_i = y_i - y_0: both answers off by (4 t + final) of their size, the subtraction by eps)
    v_err = eps * beta
    v_rel = 4 * term + rounding.final + (eps if beta else 0.0)
    v_abs = 2 * (4 * term + rounding.final) * beta
    p_rows, q_rows = _row_sizes(probes)
    p_norm = p_rows[0][kk]
    q_norm = np.ones(len(ll)) if q_rows is None else q_rows[0][ll]
    pv = np.abs(arith.to_float(arith.ldexp(probes.pv, e)))[kk]
    s = np.ldexp(1.0, k)
    if probes.scale_query_only:
        x1, x2, sx, sq = p_norm + s * q_norm, s * q_norm, np.ones_like(s), s
    else:
        x1, x2, sx, sq = s * (p_norm + q_norm), s * q_norm, s, np.ones_like(s)
    Lf = arith.to_float(L)
    alpha = FLOAT64.sigmoid(Lf)
    vn = norm2(v)
    # a bound adds the errors; independent roundings add in quadrature (hypot: the errors of a
    # subnormal W* would square to 0)
    add = (lambda *t: reduce(np.hypot, t)) if typical else (lambda *t: sum(t))
    qv = np.abs(arith.to_float(arith.ldexp(probes.qv, e)))[ll]
    if typical:  # eps times the label's terms: |x^T v| and ||x o v|| (x o v: the summands)
        pvv, qvv = probes.memo(("summands", e), lambda: (
            np.sqrt(_rows_through(P, np.square, v * v)),
            np.abs(v) if Q is None else np.sqrt(_rows_through(Q, np.square, v * v))))
        pvv, qvv = pvv[kk], qvv[ll]
        if probes.scale_query_only:
            x1v, x1vv = np.abs(pv + s * qv), np.sqrt(pvv**2 + (s * qvv) ** 2)
        else:
            x1v, x1vv = s * np.abs(pv + qv), s * np.sqrt(pvv**2 + qvv**2)
        dy = eps * add(beta, x1v, s * qv, x1vv, s * qvv)
    else:  # |x_1^T v| + |x_2^T v| bounds |y - beta| (alpha in [0, 1]): the final rounding's share
        x1v = np.abs(pv + s * qv) if probes.scale_query_only else s * (pv + qv)
        if rounding.sizes is None:
            dy = g * (beta + (x1 + x2) * vn) + eps * beta * 4 + rounding.final * (beta + x1v + s * qv)
        else:  # declared componentwise: the value images' errors dw_i (alpha, 1 - alpha <= 1), the
            # readout's 2 products, 2 sums and division and beta's addition in longdouble (7 t), final
            # x_1 - x_2 as the oracle sees it: s (fl(p + q) - q), within eps ||x_1|| of s p
            ds_f, dw1, dw2 = _faithful_errors(rounding.sizes, term, d, _token_sizes(probes, kk, ll, s),
                                              sx * p_norm + eps * x1, dense, e)
            size = beta + x1v + s * qv + dw1 + dw2
            # the final rounding, of |y| <= |beta| + |x_2^T v| + alpha |(x_1 - x_2)^T v| (+ the dw): the part
            # alpha |(x_1 - x_2)^T v| <= alpha sx (|p^T v| + probe) is relative (below, ``final_part``)
            dy = (dw1 + dw2 + 7 * term * size + eps * beta * 4
                  + rounding.final * (beta + s * qv + dw1 + dw2) * (1 + 8 * term))
            final_part = rounding.final * (1 + 8 * term)
        # the learner's own probe x_1 = p + q (p + s q) rounded: |dx_1| <= eps |x_1|, so dx_1^T v is at
        # most eps (|p| + |q|)^T |v| (times s; eps (|p| + s |q|)^T |v| query-only)
        Pabs, Qabs = probes.memo(("abs", e), lambda: (
            _rows_through(P, np.abs, np.abs(v)),
            np.abs(v) if Q is None else _rows_through(Q, np.abs, np.abs(v))))
        pav, qav = Pabs[kk], Qabs[ll]
        probe = eps * (pav + s * qav if probes.scale_query_only else pav + qav)  # in alpha p^T v's units
        if exact_probes is not None and eps == FLOAT64.eps and np.any(exact_probes):
            at = np.flatnonzero(exact_probes)
            read = _probe_rounding(P, Q, v, v_rel * np.abs(v) + v_abs, (kk[at], ll[at]),
                                   s[at] if probes.scale_query_only else None)
            probe[at] = np.minimum(probe[at], read)
        if rounding.sizes is None:
            final_part = 0.0  # the naive form keeps its final rounding (0 for NAIVE) absolute, in dy
    # float64's gradual underflow: a product (or a probe entry) landing below 2^-1022 is also off by up
    # to 2^-1075 absolute (sums are exact there): the label's 2 d + 4 products in v's scaled units, and
    # the probe entries' error times v; once the probe scale s is far from 1 (a W* of 1e200 is asked
    # at s ~ 1e-100) such labels are where a tiny v* ends up, and this term keeps the bound honest
    tiny = UNDERFLOW
    dy = add(dy, np.ldexp(tiny * (2.0 * d + 4), e) + tiny * np.sqrt(d) * vn)
    if typical:
        dalpha = add(add(dy / sx, sq * q_norm * v_err, alpha * p_norm * v_err) / pv, eps)
    else:  # v's error through |q|, |p|; the learner's own q^T v and p^T v; alpha's two roundings
        dpv, dqv = probes.memo(("products", e), lambda: (
            _product_errors(P, v, arith.to_float(arith.ldexp(probes.pv, e)), Pabs, arith.resolution),
            None if Q is None else _product_errors(
                Q, v, arith.to_float(arith.ldexp(probes.qv, e)), Qabs, arith.resolution)))
        dpv, dqv = dpv[kk], 0.0 if dqv is None else dqv[ll]
        # q^T dv <= v_rel |q|^T |v| + v_abs ||q||_1 (||q||_1 <= sqrt(d) ||q||), likewise p
        dq_v, dp_v = v_rel * qav + v_abs * np.sqrt(d) * q_norm, v_rel * pav + v_abs * np.sqrt(d) * p_norm
        dq, dp = dq_v + dqv, dp_v + dpv
        # alpha's errors in two parts, ``dalpha = absolute + alpha relative``: the label's and q^T v's
        # move it by their size; the learner's probe x_1, p^T v and alpha's own two roundings (the
        # subtraction and the division, each of a result of size alpha) only in proportion to alpha:
        # the label is beta + alpha x_1^T v + (1 - alpha) s q^T v, so with x_1 off by dx_1 the learner's
        # (y - beta - s q^T v) / (s p^T v) (whole-probe; query-only without the s) is alpha (1 +
        # dx_1^T v / (s p^T v)), and with p^T v off by dp, alpha (1 - dp / p^T v)
        absolute = (dy / sx + sq * dq) / pv
        relative = (probe + dp) / pv + 2 * eps + final_part * (1 + probe / pv)
    if typical:  # ||x o y|| ~ ||x|| ||y|| / sqrt(d) for a spread y (W x_2, c); W x_2 is computed
        # once, so its own rounding dy (~ ||W||_F ||x_2|| / sqrt(d)) meets the logit only through
        # (x_1 - x_2)^T dy = s p^T dy (p^T dy query-only): weighted by ||s p||, not ||x_1|| + ||x_2||
        Wx2 = (Wq * (x1 + x2) + W_norm / np.sqrt(d) * sx * p_norm) * x2
        ds = g * add(Wx2 / np.sqrt(d), c_norm * (x1 + x2) / np.sqrt(d))
    else:  # q = W x_2's rounding through x_1 - x_2 (norm sx ||p||), each score's dot products
        Wx = W_norm if images is None else images  # ||W x_2|| / ||x_2||
        if rounding.sizes is None:
            ds = g * (W_norm * sx * p_norm * x2 + Wx * (x1 + x2) * x2 + c_norm * (x1 + x2))
        else:
            ds = ds_f
        # the learner's rounded x_1 moves the score (x_1 - x_2)^T (W x_2 + c) by dx_1^T (W x_2 + c)
        ds = ds + eps * x1 * (Wx * x2 + c_norm)
    # underflow in the scores: their d^2 + 2 d products, and the probe entries' times W x_2 + c
    ds = add(ds, tiny * (d * d + 2.0 * d + np.sqrt(d) * (W_norm * x2 + c_norm)))
    with np.errstate(divide="ignore", invalid="ignore"):
        if typical:
            dL = add(dalpha / (alpha * (1 - alpha)), ds)
        else:  # alpha's error through sigma^{-1} exactly, not to first order (:func:`_logit_spread`:
            # to first order 1 / (alpha (1 - alpha)) for the absolute part, 1 / (1 - alpha) for the
            # relative), and the logit's own rounding: log(alpha) - log1p(-alpha)
            spread = _logit_spread(alpha, absolute, relative)
            dL = spread + ds
            dL = dL + eps * (2 * (np.abs(np.log(alpha)) + np.abs(np.log1p(-alpha))) + np.abs(Lf))
    lin = probes.linear_typical if typical else probes.linear_err
    lin = 0.0 if lin is None else lin[kk]

    def value(dL: np.ndarray) -> np.ndarray:
        """The value's error from the logit's: over s^2 (or s), with c^T p's; a bound below float64's
        range (mpmath at s = 2^500: 10^-50 / 2^1000) rounded up to the smallest subnormal, never 0."""
        err = add(dL, lin) if probes.scale_query_only else add(dL / s, lin)
        return np.maximum(err / s, np.where(err > 0, UNDERFLOW, 0.0))

    bound = value(dL)
    if shared is not None:  # v's error as one vector where that leaves the smaller own part
        own, c_p, c_q = _split_v(alpha, absolute, relative, (sq * dq_v / pv, dp_v / pv), (
            (dy / sx + sq * dqv) / pv, relative - dp_v / pv), dpv / pv)
        with np.errstate(invalid="ignore"):  # inf - inf where an entry saturates: not split below
            own = value(own + (dL - spread))  # ds and the log's rounding
        split = (own < bound) & np.isfinite(bound)
        with np.errstate(divide="ignore", invalid="ignore"):  # per unit of the bound (0 where not split)
            unit = np.where(split, np.sign(arith.to_float(arith.ldexp(probes.pv, e)))[kk]
                            / (pv * s**probes.order * bound), 0.0)
            shared.own = np.where(split, np.nextafter(own / bound, np.inf), 1.0)
        shared.p, shared.q = c_p * unit, c_q * sq * unit
        shared.norm = float(norm2(v_rel * np.abs(v) + v_abs))
    return bound


def _probe_rounding(
    P: np.ndarray, Q: np.ndarray | None, v: np.ndarray, dv: np.ndarray,
    entries: tuple[np.ndarray, np.ndarray], s: np.ndarray | None,
) -> np.ndarray:
    """A bound on ``|dx^T v*|`` for the learner's float64 probe tokens ``x = fl(p_k + s q_l)`` of the
    entries (k, l) (``s`` None: 1, the whole probe's scale being an exact power of two; ``q_l = e_l``
    without Q), ``v* = v - dv`` with ``|dv| <= dv`` entrywise, read a posteriori: TwoSum's error
    ``delta = x - (p + s q)`` is exact (Knuth), so ``|delta^T v*| <= |fl(delta^T v)| + gamma_d
    |delta|^T |v| + |delta|^T dv`` (the last two summed in float64 together: times ``1 + 2
    gamma_d``, and the final addition by one more rounding).  The
    worst case ``eps (|p| + s |q|)^T |v|`` sums magnitudes; this is the random walk the roundings
    make, about sqrt(d) less (issue 22)."""
    kk, ll = entries
    d, n = P.shape[1], len(kk)
    g = d * FLOAT64.eps / (1 - d * FLOAT64.eps)
    out = np.empty(n)
    block = max(1, 2**15 // max(d, 1))  # a block's temporaries stay in cache
    weights = np.column_stack([v, g * np.abs(v) + dv])

    def fill(first: int, stop: int) -> None:
        """The blocks first..stop - 1 (of ``block`` entries), through four reused (block, d) arrays:
        the operations of one block as one would write them with temporaries, bitwise."""
        p, q, x, z = np.empty((4, min(block, n), d))
        for a in range(first * block, min(stop * block, n), block):
            b = slice(a, a + block)
            m = len(kk[b])
            p_, q_, x_, z_ = p[:m], q[:m], x[:m], z[:m]
            np.take(P, kk[b], axis=0, out=p_, mode="clip")  # in range: "clip" writes straight into p_
            if Q is None:
                q_[...] = 0.0
                q_[np.arange(m), ll[b]] = 1.0
            else:
                np.take(Q, ll[b], axis=0, out=q_, mode="clip")
            if s is not None:
                q_ *= s[b, None]
            np.add(p_, q_, out=x_)
            np.subtract(x_, p_, out=z_)
            x_ -= z_
            np.subtract(p_, x_, out=p_)
            np.subtract(q_, z_, out=q_)
            p_ += q_  # delta, TwoSum's error
            signed = p_ @ weights[:, 0]
            np.abs(p_, out=p_)
            out[b] = (np.abs(signed) + (p_ @ weights[:, 1]) * (1 + 2 * g)) * (1 + 2.0**-52)

    if n:  # the blocks shared out between the cores (:func:`_in_blocks`): each entry's by one thread
        _in_blocks(fill, -(-n // block), block * d)
    return out


def _logit_spread(alpha: np.ndarray, absolute: np.ndarray, relative: np.ndarray | float = 0.0) -> np.ndarray:
    """``max |sigma^{-1}(a) - sigma^{-1}(alpha)|`` over every true alpha ``a`` the errors allow: the
    computed alpha is off by at most ``absolute + a relative`` (:func:`value_errors`: the label's and
    q^T v's errors move it by their size, the learner's probe, p^T v and alpha's own roundings in
    proportion to it), in either order, so ``a`` lies in ``[alpha (1 - R) - absolute, (alpha +
    absolute) / (1 - R)]`` with ``R = relative (1 + relative)`` (a product of relative factors
    summing to ``relative`` is within ``e^relative - 1`` of 1).  Infinite once that interval reaches 0
    or 1 (a saturated logit whose label cannot tell it from a finite one), else the larger of its two
    ends through the increasing sigma^{-1}, each written as a sum of magnitudes of ``log1p``s (no
    cancellation: within 8 float64 roundings, charged).  Never below the first-order
    ``absolute / (alpha (1 - alpha)) + relative / (1 - alpha)``: the interval holds
    ``alpha +- (absolute + alpha relative)``, and sigma^{-1}'s slope grows away from 1/2 on the side
    of the farther end.  (A thorough draw, 2^-20 K^T Q with biases asked at query scale 2^49: the
    label read alpha ~ 0.6 for a true alpha of 1, which the first-order model charged 1.7 logit
    units; ``tests/test_lowrank.py``, ``tests/test_bias.py``.)"""
    R, down_gap, up_gap, reach = _alpha_gaps(alpha, absolute, relative)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ok = ~reach
        up = (np.log1p(np.where(ok, absolute / alpha, 0.0)) - np.log1p(-np.where(ok, R, 0.0))
              - np.log1p(-np.where(ok, up_gap / (1 - alpha), 0.0)))
        down = (-np.log1p(-np.where(ok, down_gap / alpha, 0.0))
                + np.log1p(np.where(ok, down_gap / (1 - alpha), 0.0)))
    return np.where(reach, np.inf, np.maximum(up, down) * (1 + 2.0**-48))


def _alpha_gaps(
    alpha: np.ndarray, absolute: np.ndarray, relative: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The interval of :func:`_logit_spread`: ``R = relative (1 + relative)``, how far below and
    above alpha the true alpha may lie (``absolute + alpha R`` and that over ``1 - R``), and where
    the interval reaches 0 or 1 (``reach``)."""
    R = relative * (1 + relative)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        down_gap = absolute + alpha * R  # alpha - (the lowest a)
        up_gap = down_gap / (1 - R)  # (the highest a) - alpha
        reach = (down_gap >= alpha) | (up_gap >= 1 - alpha) | (R >= 1) | ~np.isfinite(up_gap / alpha)
    return R, down_gap, up_gap, reach


def _split_v(
    alpha: np.ndarray, absolute: np.ndarray, relative: np.ndarray,
    v_box: tuple[np.ndarray, np.ndarray], own: tuple[np.ndarray, np.ndarray], dpv: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split v's part off the logit's error (:func:`value_errors`): ``(rest, c_p, c_q)`` with the
    logit's error at most ``rest + |c_p p^T dv + c_q q^T dv| / |p^T v|`` (first order, as there).

    The learner's ``alpha = (y - beta - s q^T v) / (s p^T v)`` (query-only: ``s q^T v``, no s
    below) with the learner's ``v = v* + dv`` is off from the true ``a`` by exactly ``-(a p^T dv +
    s_q q^T dv) / p^T v`` (s_q = 1, query-only s) plus the other errors ``own`` = (absolute,
    relative) (``v_box`` = v's parts of them, ``|q^T dv| s_q / |p^T v|`` and ``|p^T dv| / |p^T
    v|``).  By the mean value theorem the logit moves by ``L'(xi)`` times that, xi in the interval
    [lo, hi] that every error allows (:func:`_alpha_gaps` of the totals), where ``L' = 1 / (x (1 -
    x))`` lies in [S_min, S_max] (its minimum 4 at 1/2, its maximum at an end).  So with ``V =
    v_box[0] + hi v_box[1]``: ``|dL - L'(alpha) D_v| <= S_max (own gap + R_own V / (1 - R_own)) +
    (S_max - S_min) V + S_max ((hi - lo) v_box[1] + V dpv / (1 - dpv))``: own's interval
    (:func:`_alpha_gaps`; relative factors times v's part, second order), L' between the ends and at
    alpha, the true a for alpha in ``a p^T dv``, and the exact ``p^T v`` for the learner's (off by
    ``dpv`` of it).  ``c_p = -L'(alpha) alpha``, ``c_q = -L'(alpha)`` (times ``s_q`` and divided by
    ``p^T v`` and the scale by the caller).  Infinite where the interval reaches 0 or 1 or
    ``dpv >= 1``."""
    _, down, up, reach = _alpha_gaps(alpha, absolute, relative)
    R_own, _, own_up, own_reach = _alpha_gaps(alpha, *own)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lo, hi = alpha - down, alpha + up
        slope = 1 / (alpha * (1 - alpha))
        s_max = np.maximum(1 / (lo * (1 - lo)), 1 / (hi * (1 - hi)))
        mid = np.clip(0.5, lo, hi)
        s_min = 1 / (mid * (1 - mid))
        V = v_box[0] + hi * v_box[1]
        rest = (s_max * (own_up + R_own * V / (1 - R_own) + (hi - lo) * v_box[1] + V * dpv / (1 - dpv))
                + (s_max - s_min) * V) * (1 + 2.0**-48)
        bad = reach | own_reach | ~(dpv < 1) | ~np.isfinite(rest)
    return np.where(bad, np.inf, rest), np.where(bad, 0.0, -slope * alpha), np.where(bad, 0.0, -slope)


def resolution(probes: Probes, entries: tuple[np.ndarray, np.ndarray], k: np.ndarray) -> np.ndarray:
    """Rounding resolution of each measured value p^T W* q (float64 estimate).

    The label ``y = beta + s q^T v + alpha s_p p^T v`` (``s_p = s`` whole-probe, 1 query-only) is
    rounded by about ``eps (|beta| + s_p |p^T v| + 2 s |q^T v|)``, so alpha by that over ``s_p |p^T
    v|`` and, at alpha ~ 1/2, the logit by 4 times it; with a score bias the logit is also read
    against ``c^T p``, whose typical error (``probes.linear_typical``, the prelude's) adds to it.
    The value is the logit over ``s^order``.  A value below this is indistinguishable from 0.
    Every term is needed: without the offset and ``c^T p`` a biased probe's noise read 4.4e-16
    where it was 5.9e-13 (``|beta| / |p^T v|`` = 170), a column of zeros looked like a tiny W*, and
    the scale jumped past float64's reach (``tests/test_bias.py``, ``test_biased_exact_learner``).
    """
    arith = probes.arith
    kk, ll = entries
    e = _into_range(probes)  # a ratio of values in v*'s units: read in range
    pv, qv = (np.abs(arith.to_float(arith.ldexp(x, e))) for x in (probes.pv, probes.qv))
    beta = float(np.abs(arith.to_float(arith.ldexp(np.asarray([probes.offset], dtype=object), e)))[0])
    s = np.ldexp(1.0, k)
    s_p = 1.0 if probes.scale_query_only else s
    logit = 4 * arith.eps * (beta + s_p * pv[kk] + 2 * s * qv[ll]) / (s_p * pv[kk])
    if probes.linear_typical is not None:
        logit = logit + np.asarray(probes.linear_typical, dtype=np.float64)[kk]
    return logit * np.ldexp(1.0, -probes.order * k)


def effective_terms(variances: np.ndarray) -> float:
    """``(sum a)^2 / sum a^2`` for the variances a of independent error terms: how many terms
    a typical-error estimate (``value_errors`` with ``Wq``) effectively adds up (n for n equal
    terms, about 1 where one dominates), 1 for a sum of zeros.  The realised error is about the
    estimate times ``sqrt(chi^2_n / n)``: close to it for many terms, possibly far below for few.
    Read in range (scaled by the largest term), so tiny or huge variances neither underflow nor
    overflow."""
    a = np.asarray(variances, dtype=float).reshape(-1)
    top = float(a.max(initial=0.0))
    if not top > 0:
        return 1.0
    a = a / top
    return float(a.sum() ** 2 / (a * a).sum())


def bilinear_values(L: np.ndarray, k: np.ndarray, arith: Arith) -> np.ndarray:
    """p^T W* q = L / 4^k."""
    return L / arith.pow2(2 * k)


__all__ = [
    "PILOT_SLACK",
    "ScalePolicy",
    "Scale",
    "Probes",
    "Oracle",
    "Session",
    "BilinearSession",
    "check_answers",
    "probe_batch",
    "random_orthogonal",
    "balanced",
    "resolution",
    "value_errors",
    "SharedV",
    "effective_terms",
    "bilinear_values",
]
