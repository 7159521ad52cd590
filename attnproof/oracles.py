"""Query oracles: the only window a learner has on its target.

Every oracle counts its own queries (one sequence X = one query, whether it arrives alone or
in a batch), so counts can never be lost in a module global.  A budget, if given, is checked
*before* a batch is answered: a batch that would exceed it is refused whole with
:class:`~attnproof.errors.QueryBudgetExceeded`.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .arith import FLOAT64
from .errors import InvalidInputError, QueryBudgetExceeded, ToleranceViolation
from .models import as_batch, attention_weights


class Model(Protocol):
    """Anything with a width ``d``, an ``arith`` and a batched ``__call__``."""

    d: int
    arith: Any

    def __call__(self, X: Any) -> Any: ...


@dataclass
class QueryRecord:
    """One logged call: the queries asked (B, N, d) and the answers given (B,)."""

    X: np.ndarray
    y: np.ndarray


@dataclass
class ValueOracle:
    """Exact value queries VQ(X) = f*(X) (Sec. 3).

    Parameters
    ----------
    model : Model
        The hidden target.  A learner must only call the oracle, never read ``model``.
    budget : int, optional
        Maximum number of queries; ``None`` means unlimited.
    record : bool
        Keep a copy of every query and answer in :attr:`log` (for figures and audits).

    Attributes
    ----------
    queries : int
        Number of sequences answered so far.
    calls : int
        Number of calls (a batch is one call).
    seconds : float
        Wall-clock time spent evaluating the target.
    """

    model: Model
    budget: int | None = None
    record: bool = False
    queries: int = 0
    calls: int = 0
    seconds: float = 0.0
    log: list[QueryRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.budget is not None and (not isinstance(self.budget, int) or self.budget < 0):
            raise InvalidInputError(f"a query budget must be a non-negative integer; got {self.budget!r}")

    @property
    def d(self) -> int:
        """Token width of the target (public: the learner must know the input format)."""
        return self.model.d

    @property
    def remaining(self) -> int | None:
        """Queries left in the budget (None if unlimited)."""
        return None if self.budget is None else self.budget - self.queries

    def __call__(self, X: Any) -> Any:
        """Answer one query (N, d) with a scalar, or a batch (B, N, d) with shape (B,)."""
        Xb, batched = as_batch(X, self.d, self.model.arith)
        n = Xb.shape[0]
        if self.budget is not None and self.queries + n > self.budget:
            raise QueryBudgetExceeded(
                f"query budget of {self.budget} exhausted: {self.queries} used, "
                f"a batch of {n} more was refused"
            )
        t0 = time.perf_counter()
        y = self._answer(Xb)
        self.seconds += time.perf_counter() - t0
        self.queries += n
        self.calls += 1
        if self.record:
            self.log.append(QueryRecord(np.copy(Xb), np.copy(y)))
        return y if batched else y[0]

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        return np.asarray(self.model(Xb))


#: Adversary policies of :class:`ApproxOracle`.
ADVERSARIES = ("worst", "random", "bias", "round")


@dataclass
class ApproxOracle(ValueOracle):
    """Approximate value queries AVQ(X; tau) in [f*(X) - tau, f*(X) + tau] (Sec. 6).

    Deterministic: the same X always gets the same answer (the error is a function of X).
    Every answer is checked against the truth before it is returned; an adversary that
    would leave the band raises :class:`~attnproof.errors.ToleranceViolation` (a bug).

    Parameters
    ----------
    model : Attention
        The hidden float64 target.
    tau : float
        The promised tolerance (> 0).
    adversary : {"worst", "random", "bias", "round"}
        ``worst``: one-token answers are pulled towards 0 (so |v_hat_i| shrinks and every
        ratio ``1 / v_hat_i`` grows); for two tokens the error moves the implied attention
        weight alpha_1 = sigma(s_1 - s_2) *away* from 1/2, towards and past the clipping
        bounds; longer queries are pulled towards 0.
        ``random``: uniform in [-tau, tau], a deterministic hash of (seed, X).
        ``bias``: always +tau.  ``round``: f rounded to the grid 2 tau Z.
    seed : int
        Seed of the ``random`` adversary.
    """

    tau: float = 0.0
    adversary: str = "worst"
    seed: int = 0
    _memory: dict[bytes, float] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (isinstance(self.tau, (int, float)) and math.isfinite(self.tau) and self.tau > 0):
            raise InvalidInputError(f"tau must be a finite positive number; got {self.tau!r}")
        if self.adversary not in ADVERSARIES:
            raise InvalidInputError(f"unknown adversary {self.adversary!r}: use one of {ADVERSARIES}")
        if self.model.arith is not FLOAT64:
            raise InvalidInputError("ApproxOracle answers in float64; give it a float64 model")

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
        y = f + self._error(Xb, f)
        # rounding of f + eta can overshoot the band by half an ulp: step back inside
        over = np.abs(y - f) > self.tau
        y[over] = np.nextafter(y[over], f[over])
        if np.any(np.abs(y - f) > self.tau):
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
        digest = hashlib.blake2b(np.ascontiguousarray(x).tobytes(), key=self.seed.to_bytes(8, "little", signed=True))
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
    """

    base: ValueOracle
    queries: int = 0
    cost: int = 1

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


__all__ = [
    "DerivedOracle", "AntisymmetricOracle", "LinearMapOracle",
    "ValueOracle", "ApproxOracle", "ADVERSARIES", "QueryRecord", "Model",
]
