"""Query oracles: the only window a learner has on its target.

Every oracle counts its own queries (one sequence X = one query, whether it arrives alone or
in a batch), so counts can never be lost in a module global.  A budget, if given, is checked
*before* a batch is answered: a batch that would exceed it is refused whole with
:class:`~attnproof.errors.QueryBudgetExceeded`.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import time
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from .arith import FLOAT64
from .errors import InvalidInputError, PrecisionLossError, QueryBudgetExceeded, ToleranceViolation
from .models import (
    NAIVE, FactoredAttention, MultiHeadAttention, OneLayerTransformer, ReluFFN, Rounding, as_batch,
    attention_weights, canonical_ffn, declared_rounding, faithful_available,
)


class Model(Protocol):
    """What an oracle needs from a target: a width ``d``, an ``arith`` and a batched ``__call__``.

    ``__call__`` takes a validated batch X of shape (B, N, d) in ``arith``'s number type and
    returns the B values f(X) (shape (B,)).  The learner never sees the model, only the oracle
    wrapped around it; an oracle that needs more than this protocol (the ``worst`` adversary of
    :class:`ApproxOracle` reads ``W`` and ``v``) says so in its own docstring.

    An oracle exposes its accuracy as a read-only ``tolerance``: every answer lies within
    ``tolerance`` of f*(X).  :class:`ValueOracle` is exact (``tolerance == 0.0``); an approximate
    oracle reports its tau there, so a learner reads the tolerance from the oracle's interface.
    """

    d: int
    arith: Any

    def __call__(self, X: Any) -> Any: ...


@dataclass
class QueryRecord:
    """One logged call: the queries asked (B, N, d) and the answers given (B,)."""

    X: np.ndarray
    y: np.ndarray


def _check_model(model: Any) -> None:
    """A :class:`Model`: callable, with an ``arith`` and an integer width ``d >= 1``."""
    d = getattr(model, "d", None)
    if not callable(model) or not hasattr(model, "arith") or not isinstance(d, (int, np.integer)):
        raise InvalidInputError(
            f"an oracle needs a model with a width d, an arith and a batched __call__; got {model!r}"
        )
    if isinstance(d, (bool, np.bool_)) or d < 1:
        raise InvalidInputError(f"a model's width must be an integer d >= 1; got d = {d!r}")


def _check_budget(budget: Any) -> int | None:
    """``None`` or a non-negative integer (Python or numpy); bools and floats are refused."""
    if budget is None:
        return None
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise InvalidInputError(f"a query budget must be None or a non-negative integer; got {budget!r}")
    return int(budget)


@dataclass
class ValueOracle:
    """Exact value queries VQ(X) = f*(X) (Sec. 3).

    Parameters
    ----------
    model : Model
        The hidden target (positional), of width d >= 1.  A learner must only call the oracle,
        never read ``model``.
    budget : int, optional
        Keyword only.  Maximum number of queries; ``None`` means unlimited.  A Python or numpy
        integer >= 0; bools and floats (even integral ones) raise
        :class:`~attnproof.errors.InvalidInputError`.
    record : bool
        Keyword only.  Keep a copy of every query and answer in :attr:`log` (for figures and audits).

    Raises
    ------
    InvalidInputError
        A model without the :class:`Model` protocol or with d < 1, or a bad budget.

    Attributes
    ----------
    queries : int
        Number of sequences answered so far (starts at 0; not a constructor argument).
    calls : int
        Number of calls (a batch is one call).
    seconds : float
        Wall-clock time spent answering queries: checking each answered query (shape, finite
        entries, budget) and evaluating the target -- the oracle's work, none of it the learner's.
    log : list of QueryRecord
        The recorded calls (empty unless ``record``).
    """

    model: Model
    _: KW_ONLY
    budget: int | None = None
    record: bool = False
    queries: int = field(default=0, init=False)
    calls: int = field(default=0, init=False)
    seconds: float = field(default=0.0, init=False)
    log: list[QueryRecord] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        _check_model(self.model)
        self.budget = _check_budget(self.budget)

    @property
    def d(self) -> int:
        """Token width of the target (public: the learner must know the input format)."""
        return self.model.d

    @property
    def tolerance(self) -> float:
        """Every answer is within this distance of f*(X): 0.0, the answers are exact.

        An approximate subclass overrides it with its tau (see the :class:`Model` protocol)."""
        return 0.0

    @property
    def rounding(self) -> Rounding:
        """How the answers are rounded (:class:`~attnproof.models.Rounding`), as the model declares
        it (``Attention(..., answers="faithful")``); :data:`~attnproof.models.NAIVE` -- evaluated in
        the model's arithmetic in any order -- for a model that declares nothing.  Public, like
        :attr:`tolerance`: a learner reads the declaration, never the model."""
        return declared_rounding(self.model)

    @property
    def remaining(self) -> int | None:
        """Queries left in the budget (None if unlimited)."""
        return None if self.budget is None else self.budget - self.queries

    def __call__(self, X: Any) -> Any:
        """Answer one query (N, d) with a scalar, or a batch (B, N, d) with shape (B,)."""
        t0 = time.perf_counter()  # the oracle's time: checking a query is part of answering it
        Xb, batched = as_batch(X, self.d, self.model.arith)
        n = Xb.shape[0]
        if self.budget is not None and self.queries + n > self.budget:
            raise QueryBudgetExceeded(
                f"a batch of {n} queries would exceed the query budget of {self.budget}: "
                f"{self.queries} used, {self.budget - self.queries} left"
            )
        y = self._answer(Xb)
        self.seconds += time.perf_counter() - t0
        self.queries += n
        self.calls += 1
        if self.record:
            self.log.append(QueryRecord(np.copy(Xb), np.copy(y)))
        return y if batched else y[0]

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        return np.asarray(self.model(Xb))


@runtime_checkable
class DeclaresTolerance(Protocol):
    """The tolerance protocol: an oracle that declares how far its answers may be from f*.

    ``tolerance`` is the largest ``|answer - f*(X)|`` the oracle may return, for every query
    it answers: ``tau`` for an :class:`ApproxOracle`; an exact oracle, which answers ``f*(X)``
    itself, declares 0.  A learner that needs a tolerance (Thm 6.1's
    :func:`~attnproof.theorems.noisy.learn_noisy`) reads it from an oracle that declares it, and
    otherwise demands it as an argument: it never guesses.
    """

    @property
    def tolerance(self) -> float: ...


#: Adversary policies of :class:`ApproxOracle`.
ADVERSARIES = ("worst", "random", "bias", "round")


@dataclass(kw_only=True)
class ApproxOracle(ValueOracle):
    """Approximate value queries AVQ(X; tau) in [f*(X) - tau, f*(X) + tau] (Sec. 6).

    Deterministic: the same X always gets the same answer (the error is a function of X).
    Every answer is checked against the truth before it is returned; an adversary that
    would leave the band raises :class:`~attnproof.errors.ToleranceViolation` (a bug).  A batch
    holding an answer whose float64 spacing exceeds tau is refused whole (and not counted)
    with :class:`~attnproof.errors.PrecisionLossError`: float64 cannot honour such a tau.
    Declares its tolerance (:class:`DeclaresTolerance`): ``tolerance == tau``.

    Parameters
    ----------
    model : Attention
        The hidden float64 target (the only positional argument).
    tau : float
        The promised tolerance (> 0, finite; numpy scalars accepted).  Keyword-only and
        required: there is no meaningful default.
    adversary : {"worst", "random", "bias", "round"}
        ``worst``: one-token answers are pulled towards 0 (so |v_hat_i| shrinks and every
        ratio ``1 / v_hat_i`` grows); for two tokens the error moves the implied attention
        weight alpha_1 = sigma(s_1 - s_2) *away* from 1/2, towards and past the clipping
        bounds; longer queries are pulled towards 0.
        ``random``: uniform in [-tau, tau], a deterministic hash of (seed, X).
        ``bias``: always +tau.  ``round``: f rounded to the grid 2 tau Z.
    seed : int
        Seed of the ``random`` adversary (numpy integers accepted).
    budget, record
        As for :class:`ValueOracle` (keyword-only here).
    """

    tau: float
    adversary: str = "worst"
    seed: int = 0
    queries: int = field(default=0, init=False)
    calls: int = field(default=0, init=False)
    seconds: float = field(default=0.0, init=False)
    log: list[QueryRecord] = field(default_factory=list, init=False)
    _memory: dict[bytes, float] = field(default_factory=dict, init=False, repr=False)

    #: the arithmetics it answers in, as a learner declares its own: its adversaries round in
    #: float64 (the model's arithmetic must be one of these)
    arithmetics: ClassVar[tuple[str, ...]] = ("float64",)

    def __post_init__(self) -> None:
        super().__post_init__()
        tau = self.tau
        real = isinstance(tau, numbers.Real) and not isinstance(tau, (bool, np.bool_))
        if not (real and math.isfinite(tau) and tau > 0):
            raise InvalidInputError(f"tau must be a finite positive number; got {tau!r}")
        self.tau = float(tau)
        if isinstance(self.seed, (bool, np.bool_)) or not isinstance(self.seed, numbers.Integral):
            raise InvalidInputError(f"seed must be an integer; got {self.seed!r}")
        self.seed = int(self.seed)
        if self.adversary not in ADVERSARIES:
            raise InvalidInputError(f"unknown adversary {self.adversary!r}: use one of {ADVERSARIES}")
        if self.model.arith.family not in self.arithmetics:
            raise InvalidInputError("ApproxOracle answers in float64; give it a float64 model")

    @property
    def tolerance(self) -> float:
        """The declared tolerance (:class:`DeclaresTolerance`): tau."""
        return self.tau

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        """Answers remembered per sequence: float evaluation of f may differ in the last bit
        with the batch a query arrives in, so determinism is enforced, not assumed."""
        keys = [x.tobytes() for x in Xb]  # d is fixed, so the length encodes N
        new = [k for k, key in enumerate(keys) if key not in self._memory]
        if new:
            for k, y in zip(new, self._fresh_answers(Xb[new])):
                self._memory[keys[k]] = y
        return np.array([self._memory[key] for key in keys])

    def _fresh_answers(self, Xb: np.ndarray) -> np.ndarray:
        f = np.asarray(self.model(Xb), dtype=np.float64)
        coarse = np.spacing(np.abs(f)) > self.tau
        if coarse.any():
            k = int(np.argmax(coarse))
            raise PrecisionLossError(
                f"tau = {self.tau:.3g} is below the float64 resolution {np.spacing(abs(f[k])):.3g} of the "
                f"answer f = {f[k]:.17g}: float64 cannot honour it (the float64 value of f* alone may be "
                "off by more)"
            )
        y = f + self._error(Xb, f)
        # the rounding of eta and of f + eta can overshoot the band by an ulp or two (e.g. the
        # grid 2 tau Z of ``round`` when tau is near ulp(f)): step back inside, a bounded walk
        for _ in range(4):
            over = np.abs(y - f) > self.tau
            if not over.any():
                break
            y[over] = np.nextafter(y[over], f[over])
        if not np.all(np.abs(y - f) <= self.tau):  # NaN fails too
            raise ToleranceViolation(f"adversary {self.adversary!r} answered outside +-{self.tau}")
        return y

    def _error(self, Xb: np.ndarray, f: np.ndarray) -> np.ndarray:
        tau = self.tau
        if self.adversary == "bias":
            return np.full_like(f, tau)
        if self.adversary == "round":
            return 2 * tau * np.round(f / (2 * tau)) - f
        if self.adversary == "random":
            return tau * np.array([self._uniform(x) for x in Xb])
        eta = -tau * np.sign(f)  # worst: towards 0 (one-token and long queries)
        if Xb.shape[1] == 2:
            alpha1 = attention_weights(Xb, self.model.W, FLOAT64)[:, 0]
            slope = (Xb[:, 0, :] - Xb[:, 1, :]) @ self.model.v  # dy / d alpha_1
            away = np.where(alpha1 >= 0.5, 1.0, -1.0)
            eta = np.where(slope != 0, tau * away * np.sign(slope), eta)
        return eta

    def _uniform(self, x: np.ndarray) -> float:
        key = self.seed.to_bytes(8, "little", signed=True)
        digest = hashlib.blake2b(np.ascontiguousarray(x).tobytes(), key=key)
        return int.from_bytes(digest.digest()[:8], "little") / 2**63 - 1.0


@dataclass
class DerivedOracle:
    """An oracle built from another one (Sec. 4.1): each of its queries is answered by
    ``cost`` queries of ``base``, which counts them too, so neither count can be lost.

    Attributes
    ----------
    base : ValueOracle
        The oracle actually asked.
    queries : int
        Queries answered by this derived oracle (``base.queries`` grows by ``cost`` each).
    scale : number
        A power of two every answer is multiplied by (exact in binary floating point, away from
        overflow and underflow): a learner conditions a tiny or huge v* to order one with it,
        since Thm 4.1's W* does not depend on the scale of v* (default 1).
    """

    base: ValueOracle
    queries: int = 0
    cost: int = 1
    scale: Any = 1

    @property
    def d(self) -> int:
        return self.base.d

    @property
    def model(self) -> Any:
        """What the learner may know about the target's format (width and arithmetic)."""
        return self.base.model

    def __call__(self, X: Any) -> Any:
        Xb, batched = as_batch(X, self.d, self.base.model.arith)
        y = self._answer(Xb)
        if self.scale != 1:
            y = y * self.scale
        self.queries += Xb.shape[0]
        return y if batched else y[0]

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@dataclass
class AntisymmetricOracle(DerivedOracle):
    """VQ~(X) = VQ(X) - VQ(-X) (Sec. 4.1): two value queries per query, asked as one batch."""

    cost: int = 2
    #: max over batches of 2 max |VQ(+-X)| / max |VQ~(X)|: how much the difference amplifies the
    #: value oracle's relative rounding (numeric arithmetics; 1 if never measured).
    amplification: float = 1.0

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        y = np.asarray(self.base(np.concatenate([Xb, -Xb])))
        n = Xb.shape[0]
        out = y[:n] - y[n:]
        if not self.base.model.arith.exact:  # scale of the two answers over scale of their difference
            size = float(np.max(np.abs(np.asarray(y, dtype=float)), initial=0.0))
            diff = float(np.max(np.abs(np.asarray(out, dtype=float)), initial=0.0))
            if size > 0:
                self.amplification = max(self.amplification, 2 * size / diff if diff > 0 else np.inf)
        return out


@dataclass
class LinearMapOracle(DerivedOracle):
    """VQ(X M^T): every token x is replaced by M x (one value query per query).

    Scores become ``x_i^T (M^T W M) x_N``; inside a cone where the FFN is linear with
    gradient g this is a Thm 4.1 oracle for ``(M^T W M, M^T g)`` (``sec4.1/cone-probe``).
    """

    M: np.ndarray | None = None

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        return np.asarray(self.base(Xb @ self.M.T))


def _naive_push(
    x1: np.ndarray, x2: np.ndarray, Wx2: np.ndarray, W_norm: float, v: np.ndarray, c: np.ndarray,
    beta: float, d: int, used: float, towards: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One head's naive rounding model on a batch of two-token queries (float64, u = 2^-53):
    ``(dw, dy, weight, label)``, pushing each answer towards the sign ``towards`` (+-1 a query;
    default ``sign(p^T v)``, p = x_1 - x_2: the weight of x_1 and the recovered logit rise).  The
    logit ``p^T (W x_2 + c)``, moved by ``used`` times ``g (||x_1|| + ||x_2||) (||W x_2|| + ||c||)``
    up or down (so that the answer moves towards ``towards``), moves the answer by ``dw =
    (sigma(logit + ds) - sigma(logit)) p^T v``; the label's own push is ``dy = used g (|beta| +
    (||x_1|| + ||x_2||) ||v||) towards``, ``g = (d + 4) u``.
    ``weight`` and ``label``: the most :func:`attnproof.measure.value_errors`' naive model lets each
    move the answer, the weight's change under the whole logit error the model declares (the query
    vector's rounding ``g ||W||_F ||p|| ||x_2||`` too, which the push leaves unused, either way) and
    the label's term (all of which the push uses)."""
    g = (d + 4) * FLOAT64.resolution
    n1, n2 = np.linalg.norm(x1, axis=1), np.linalg.norm(x2, axis=1)
    p = x1 - x2
    logit = np.einsum("bi,bi->b", p, Wx2 + c)
    pv = p @ v
    towards = np.sign(pv) if towards is None else towards
    size = np.linalg.norm(Wx2, axis=1) + np.linalg.norm(c)
    label = g * (abs(beta) + (n1 + n2) * np.linalg.norm(v))
    pushed = g * (n1 + n2) * size  # once: ``most`` below is at least it, rounded as it is
    ds = towards * np.sign(pv) * (used * pushed)
    dw = (FLOAT64.sigmoid(logit + ds) - FLOAT64.sigmoid(logit)) * pv
    most = pushed + g * (W_norm * np.linalg.norm(p, axis=1) * n2)
    base = FLOAT64.sigmoid(logit)
    ends = [FLOAT64.sigmoid(logit + t) for t in (most, -most)]
    # float64's sigmoid is monotone only up to its own rounding (e^-|t|, 1 + z, the quotient, and
    # two branches: at t = -0.8467307923812019 the larger shift gave the smaller value, one ulp):
    # the float64 differences dw and swing each lie within 8 u (sigma + sigma') of the exact ones
    slack = 16 * FLOAT64.unit_roundoff * (base + np.maximum(*ends))
    swing = np.maximum(*(np.abs(end - base) for end in ends)) + slack
    return dw, used * towards * label, swing * np.abs(pv), label


def _check_push(name: str, *parts: tuple[np.ndarray, np.ndarray]) -> None:
    """Each ``(push, allowed)`` part of an answer's push within what the declaration allows of it
    (NaN fails too), else ToleranceViolation."""
    for push, allowed in parts:
        if not np.all(np.abs(push) <= allowed):
            k = int(np.argmax(~(np.abs(push) <= allowed)))
            raise ToleranceViolation(
                f"{name} answered outside its declared naive model: a part off by {abs(push[k]):.3g}, "
                f"{allowed[k]:.3g} allowed")


class _NaivePushAdversary(ValueOracle):
    """The base of the float64 oracles whose two-token answers carry the naive rounding model's
    worst case (:func:`_naive_push`): one-token answers exact, every push checked against what
    the model allows before the answer is returned (:func:`_check_push`), NAIVE declared.  A
    subclass gives :meth:`_push`."""

    #: the arithmetics its model may compute in: it pushes float64 answers
    arithmetics: ClassVar[tuple[str, ...]] = ("float64",)
    #: the share of the pushed terms of the naive model the push uses (all of them)
    USED: ClassVar[float] = 1.0

    @property
    def rounding(self) -> Rounding:
        return NAIVE

    def _push(self, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(dw, dy, weight, label)`` of :func:`_naive_push` for a batch of first and last tokens."""
        raise NotImplementedError

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        y = np.asarray(self.model(Xb), dtype=np.float64)
        if Xb.shape[1] != 2:
            return y
        dw, dy, weight, label = self._push(np.asarray(Xb[:, 0], float), np.asarray(Xb[:, 1], float))
        _check_push(type(self).__name__, (dw, weight), (dy, label))
        return y + dw + dy


class RoundingAdversary(_NaivePushAdversary):
    """A float64 value oracle whose two-token answers are off by the most the naive rounding model
    allows (:func:`attnproof.measure.value_errors` with :data:`~attnproof.models.NAIVE`), every
    error pushing the recovered logit the same way: the score difference by
    ``+g (||x_1|| + ||x_2||) (||W x_2|| + ||c||)`` and the label by
    ``g (|beta| + (||x_1|| + ||x_2||) ||v||)`` towards a larger weight, ``g = (d + 4) u``
    (u = 2^-53; :func:`_naive_push`): the normwise relaxation of the naive declaration
    (:class:`~attnproof.models.Rounding`), so some pushes exceed what its componentwise form
    allows, a harsher oracle than the declaration's.  One-token answers are exact.  Against it a
    learner's error comes within a small factor of its ``error_bound``, so a bound that drops a factor fails
    (``thm4.1/run-tight``, ``thm5.1/run-tight``).  Every push is checked against the naive model
    before the answer is returned, the weight's part and the label's each against what the model
    allows it (:class:`~attnproof.errors.ToleranceViolation` otherwise; ``USED`` is the share of
    the pushed terms it uses).  It declares
    :data:`~attnproof.models.NAIVE` whatever its model declares: its answers are the naive model's
    worst case.  Reads the model's v, c and beta, and ``W x_2``: through a
    :class:`~attnproof.models.FactoredAttention`'s factors, ``K^T (Q x_2)`` (O(d r) a query, as the
    model's own answer: d = 4096, r = 128 in about the oracle's time), else through its dense W
    (d x d)."""

    def _push(self, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, ...]:
        m = self.model
        c = np.zeros(m.d) if m.c is None else np.asarray(m.c, float)
        beta = 0.0 if m.beta is None else float(m.beta)
        return _naive_push(x1, x2, self._query_image(x2), self._W_norm(), np.asarray(m.v, float), c, beta,
                           m.d, self.USED)

    def _query_image(self, x2: np.ndarray) -> np.ndarray:
        """The rows ``W x_2`` of a batch of last tokens (B, d), in float64: ``K^T (Q x_2)`` for a
        factored model (two r x d products), ``W x_2`` for a dense one."""
        m = self.model
        if isinstance(m, FactoredAttention):
            return (x2 @ np.asarray(m.Q, float).T) @ np.asarray(m.K, float)
        return x2 @ np.asarray(m.W, float).T

    def _W_norm(self) -> float:
        """``||W||_F`` (through the factors' r x r Gram matrices for a factored model)."""
        m = self.model
        if isinstance(m, FactoredAttention):
            K, Q = np.asarray(m.K, float), np.asarray(m.Q, float)
            return float(np.sqrt(max(np.sum((K @ K.T) * (Q @ Q.T)), 0.0)))
        return float(np.linalg.norm(np.asarray(m.W, float)))


class MultiHeadRoundingAdversary(_NaivePushAdversary):
    """A float64 oracle for a :class:`~attnproof.models.MultiHeadAttention` whose two-token answers
    are off by the most the naive model of each head allows (Sec. 7, Prop. C.2's reduced oracles):
    each head's pushed as :class:`RoundingAdversary` pushes a single head (:func:`_naive_push`, at
    the model's width d), all towards the sign of the head with the largest ``|(x_1 - x_2)^T
    v^(h)|`` (whose logit rises: a query in one head's subspace sees the others' rounded values,
    the *leak* of :func:`~attnproof.theorems.multihead.orthogonal._error_bounds`, pushed the same
    way as its own).  One-token answers are exact.  Every push is checked against the sum of the heads' naive
    models before the answer is returned, the weights' part and the labels' each
    (:class:`~attnproof.errors.ToleranceViolation` otherwise).  It declares
    :data:`~attnproof.models.NAIVE`.  Reads every head's W and v (the heads carry no biases)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        m = self.model
        if not isinstance(m, MultiHeadAttention) or m.arith.family not in self.arithmetics:
            raise InvalidInputError(
                f"MultiHeadRoundingAdversary needs a float64 MultiHeadAttention; got {m!r}")

    def _push(self, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, ...]:
        zero = np.zeros(self.d)
        pv = np.array([(x1 - x2) @ np.asarray(h.v, float) for h in self.model.heads])  # (H, B)
        towards = np.sign(pv[np.argmax(np.abs(pv), axis=0), np.arange(len(x1))])
        pushes = []
        for head in self.model.heads:
            W, v = np.asarray(head.W, float), np.asarray(head.v, float)
            pushes.append(_naive_push(x1, x2, x2 @ W.T, float(np.linalg.norm(W)), v, zero, 0.0, self.d,
                                      self.USED, towards))
        return tuple(np.array(t).sum(axis=0) for t in zip(*pushes))


#: Policies of :class:`FFNNoiseAdversary`: the sign s(x) of each answer's push.
FFN_PUSHES = ("up", "away", "random", "ray")


@dataclass(kw_only=True)
class FFNNoiseAdversary(ValueOracle):
    """A float64 oracle for a ReLU FFN (:class:`~attnproof.models.ReluFFN`, Sec. 4.1) whose answers
    are off by (nearly) the most the FFN learner's naive declaration allows, ``f(x) + s(x) tau(x)``.

    :func:`~attnproof.theorems.transformer.ffn.learn_ffn` reads the naive model as a relative
    rounding ``noise`` (its ``answer_noise``, ``2^10 u = 2^-43`` in float64) of the magnitudes
    it sees at an answer: every answer within ``noise (|f(x)| + |grad f(x)|^T |x|)`` of f(x)
    (:meth:`tolerance_at`; the search's tolerances add the largest gradient met, ``gscale
    |x|_1``, which only widens them).  This oracle pushes every one-token answer by
    ``tau(x) = (1 - 2^-6)`` of that, the sign set by ``push``: ``up`` (+1 everywhere, a consistent
    perturbation), ``away`` (sign f(x): |f| grows), ``random`` (+-1 by a hash of (seed, x): each
    finite difference of the search as wrong as the declaration allows) or ``ray`` (+-1 by a hash
    of (seed, x / |x|_inf): as ``random`` between rays, but the answers stay positively
    homogeneous under the learner's doublings, ``y(2 x) = 2 y(x)``, tau being of degree one).
    The reference f(x) is the extended-precision evaluation rounded once to float64
    (:meth:`reference`: 80-bit longdouble, within ``(d + m) 2^-64`` per term of f*, far inside the
    2^-6 margin left); every answer is checked
    against ``noise (|f| + |grad f|^T |x|)`` before it is returned, and one outside it raises
    :class:`~attnproof.errors.ToleranceViolation` (a bug).  It declares
    :data:`~attnproof.models.NAIVE`.  Deterministic (the same x, the same answer, in any batch).

    Parameters
    ----------
    model : ReluFFN
        A bias-free float64 FFN (positional); the oracle reads its ``A`` and ``w_o``.
    noise : float
        The declared relative noise (> 0, finite), keyword only: the learner's
        ``answer_noise(FLOAT64, NAIVE)``.
    push : {"up", "away", "random"}
    seed : int
        Seed of the ``random`` push.
    budget, record
        As for :class:`ValueOracle`.

    Raises
    ------
    InvalidInputError
        A model that is not a bias-free float64 ReluFFN, a bad noise, push or seed, or a machine
        without an 80-bit longdouble (no extended-precision reference).
    """

    noise: float
    push: str = "random"
    seed: int = 0
    #: the part of the declared noise the push uses: the rest covers the reference's and the
    #: push's own float64 roundings (a few u |f|, 2^-49 / 2^-53 = 16 u of the magnitudes at least)
    USED: ClassVar[float] = 1 - 2.0**-6
    #: the arithmetics its model may compute in: it pushes float64 answers
    arithmetics: ClassVar[tuple[str, ...]] = ("float64",)

    def __post_init__(self) -> None:
        super().__post_init__()
        m = self.model
        if not isinstance(m, ReluFFN) or m.b is not None or m.arith.family not in self.arithmetics:
            raise InvalidInputError(f"FFNNoiseAdversary needs a bias-free float64 ReluFFN; got {m!r}")
        noise = self.noise
        if not (isinstance(noise, numbers.Real) and not isinstance(noise, (bool, np.bool_))
                and math.isfinite(noise) and noise > 0):
            raise InvalidInputError(f"noise must be a finite positive number; got {noise!r}")
        self.noise = float(noise)
        if self.push not in FFN_PUSHES:
            raise InvalidInputError(f"unknown push {self.push!r}: use one of {FFN_PUSHES}")
        if isinstance(self.seed, (bool, np.bool_)) or not isinstance(self.seed, numbers.Integral):
            raise InvalidInputError(f"seed must be an integer; got {self.seed!r}")
        if not faithful_available():
            raise InvalidInputError("FFNNoiseAdversary needs an 80-bit longdouble for its reference f(x)")

    @property
    def rounding(self) -> Rounding:
        return NAIVE

    def reference(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(A^T x, f(x))`` for a batch of tokens x (B, d): the pre-activations in 80-bit longdouble
        and f rounded once to float64, row by row the same in any batch (numpy multiplies longdouble
        without BLAS, one row at a time; a BLAS product rounds a row by the batch's shape, and the
        same x would be answered differently in two batches)."""
        xl = np.asarray(x, dtype=np.float64).astype(np.longdouble)
        z = xl @ np.asarray(self.model.A, dtype=np.float64).astype(np.longdouble)
        w = np.asarray(self.model.w_o, dtype=np.float64).astype(np.longdouble)
        return z, (np.maximum(z, 0) @ w).astype(np.float64)

    def tolerance_at(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(f, noise (|f| + |grad f|^T |x|))`` for a batch of one-token queries X (B, 1, d): the
        reference f(x) and the declared noise there, grad f the gradient of x's region (a unit
        whose pre-activation is within its float64 rounding of 0 counted on the side giving the
        smaller magnitude).

        Row by row the same in any batch, as :meth:`reference` (in float64 BLAS products, 31 of
        a 428-query record's f and tolerances moved between the batch and the row alone, one, at
        a kink point, from 0 to 8.1e-13: the same x was answered differently)."""
        x = np.asarray(X[:, 0, :], dtype=np.float64).astype(np.longdouble)
        A = np.asarray(self.model.A, dtype=np.float64).astype(np.longdouble)
        w = np.asarray(self.model.w_o, dtype=np.float64).astype(np.longdouble)
        z, f = self.reference(X[:, 0, :])
        unsure = np.abs(z) <= (self.d + 4) * FLOAT64.resolution * (np.abs(x) @ np.abs(A))
        grad = np.minimum(*((np.abs((on * w) @ A.T) * np.abs(x)).sum(axis=1)
                            for on in (z > 0, (z > 0) | unsure)))
        return f, self.noise * (np.abs(f) + grad.astype(np.float64))

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        if Xb.shape[1] != 1:
            raise InvalidInputError(f"an FFN reads one token (N = 1); got N = {Xb.shape[1]}")
        f, tol = self.tolerance_at(Xb)
        if self.push == "up":
            s = np.ones_like(f)
        elif self.push == "away":
            s = np.where(f < 0, -1.0, 1.0)
        else:
            key = int(self.seed).to_bytes(8, "little", signed=True)
            top = np.maximum(np.abs(Xb).max(axis=(1, 2), keepdims=True), np.finfo(float).tiny)
            rays = Xb if self.push == "random" else Xb / top
            s = np.array([1.0 if hashlib.blake2b(x.tobytes(), key=key).digest()[0] & 1 else -1.0
                          for x in rays])
        y = f + s * (self.USED * tol)
        if not np.all(np.abs(y - f) <= tol):  # NaN fails too
            raise ToleranceViolation(
                f"push {self.push!r} answered outside the declared noise {self.noise:.3g} of the magnitudes")
        return y



@dataclass(kw_only=True)
class TransformerNoiseAdversary(ValueOracle):
    """A float64 oracle for a one-layer Transformer (:class:`~attnproof.models.OneLayerTransformer`,
    Sec. 4.1) whose answers are off by (nearly) the most the Transformer learner's naive
    declaration allows.

    :func:`~attnproof.theorems.transformer.learn_transformer` reads the naive model twice: its FFN
    phase (one-token queries) as :class:`FFNNoiseAdversary` realizes it, and its attention phase
    (longer queries) as ``TF(X)`` within ``nu |z|_inf`` of the FFN at the attention output
    ``z = alpha(X, W)^T X``, ``nu = noise S`` (:func:`~attnproof.theorems.transformer.oracle_error`:
    S = ``|u|_1 / 2 + sum_j |c_j| |n_j|_1 / 2``, the canonical form's size).  One-token answers are
    :class:`FFNNoiseAdversary`'s (this ``push`` and ``seed``); a longer query's answer is
    ``f(z) + s (1 - 2^-6) nu |z|_inf`` with ``s = sign(u^T (x_1 - x_N))``: the queries X and -X of
    ``VQ~(X) = VQ(X) - VQ(-X)`` (same weights, z and -z) are pushed oppositely, so every VQ~ label
    is off by ``2 (1 - 2^-6) nu |z|_inf`` towards a larger weight of x_1, each recovered logit
    pushed the same way.  On two tokens z itself carries the attention's rounding as Thm 4.1's
    naive model of VQ~ allows it (:func:`_naive_push` with v* = u, as :class:`RoundingAdversary`
    pushes the logit: the weight of x_1 up, the same for X and -X), checked against that model.
    f(z) is the extended-precision FFN rounded once (as :class:`FFNNoiseAdversary`'s reference;
    z in float64); S is the true FFN's canonical size (the learner's, from its recovered FFN, is
    within its bound of it, far inside the 2^-6 left).  Every answer is checked against ``nu
    |z|_inf`` before it is returned (:class:`~attnproof.errors.ToleranceViolation` otherwise).  It
    declares :data:`~attnproof.models.NAIVE`.

    Parameters
    ----------
    model : OneLayerTransformer
        A float64 Transformer (positional); the oracle reads its W, A and w_o.
    noise : float
        The declared relative noise (> 0, finite), keyword only: ``answer_noise(FLOAT64, NAIVE)``.
    push, seed
        :class:`FFNNoiseAdversary`'s, for the one-token answers.
    budget, record
        As for :class:`ValueOracle`.

    Raises
    ------
    InvalidInputError
        A model that is not a float64 OneLayerTransformer, or what :class:`FFNNoiseAdversary`
        refuses.
    """

    noise: float
    push: str = "random"
    seed: int = 0
    _ffn: Any = field(default=None, init=False, repr=False)
    _size: float = field(default=0.0, init=False, repr=False)

    #: the part of ``nu |z|_inf`` the push uses (as :class:`FFNNoiseAdversary`'s)
    USED: ClassVar[float] = FFNNoiseAdversary.USED
    #: the arithmetics its model may compute in: it pushes float64 answers
    arithmetics: ClassVar[tuple[str, ...]] = ("float64",)

    def __post_init__(self) -> None:
        super().__post_init__()
        m = self.model
        if not isinstance(m, OneLayerTransformer) or m.arith.family not in self.arithmetics:
            raise InvalidInputError(
                f"TransformerNoiseAdversary needs a float64 OneLayerTransformer; got {m!r}")
        self._ffn = FFNNoiseAdversary(ReluFFN(m.A, m.w_o), noise=self.noise, push=self.push, seed=self.seed)
        self.noise = self._ffn.noise
        u, N, c = canonical_ffn(m.A, m.w_o)
        self._size = 0.5 * float(np.abs(u).sum() + np.abs(c) @ np.abs(N).sum(axis=1))

    @property
    def rounding(self) -> Rounding:
        return NAIVE

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        if Xb.shape[1] == 1:
            return self._ffn._answer(Xb)
        m = self.model
        X = np.asarray(Xb, dtype=np.float64)
        W, u = np.asarray(m.W, float), np.asarray(m.A, float) @ np.asarray(m.w_o, float)
        z = np.einsum("bn,bnd->bd", attention_weights(X, W, FLOAT64), X)
        if X.shape[1] == 2:  # the attention's own rounding: Thm 4.1's naive push of the logit, v* = u
            x1, x2 = X[:, 0], X[:, 1]
            dw, _, weight, _ = _naive_push(x1, x2, x2 @ W.T, float(np.linalg.norm(W)), u, np.zeros(self.d),
                                           0.0, self.d, 1.0)
            _check_push(type(self).__name__, (dw, weight))
            pu = (x1 - x2) @ u
            z = z + np.divide(dw, pu, out=np.zeros_like(dw), where=pu != 0)[:, None] * (x1 - x2)
        f = self._ffn.reference(z)[1]
        tol = self.noise * self._size * np.abs(z).max(axis=1)
        s = np.sign((X[:, 0] - X[:, -1]) @ u)
        y = f + s * (self.USED * tol)
        if not np.all(np.abs(y - f) <= tol):  # NaN fails too
            raise ToleranceViolation(
                f"the Transformer's push answered outside nu |z|_inf, nu = {self.noise:.3g} S")
        return y


__all__ = [
    "ValueOracle", "ApproxOracle", "DeclaresTolerance", "DerivedOracle",
    "AntisymmetricOracle", "LinearMapOracle", "RoundingAdversary", "MultiHeadRoundingAdversary",
    "FFNNoiseAdversary", "FFN_PUSHES", "TransformerNoiseAdversary",
    "ADVERSARIES", "QueryRecord", "Model",
]
