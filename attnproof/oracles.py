"""Query oracles: the only window a learner has on its target.

Every oracle counts its own queries (one sequence X = one query, whether it arrives alone or
in a batch), so counts can never be lost in a module global.  A budget, if given, is checked
*before* a batch is answered: a batch that would exceed it is refused whole with
:class:`~attnproof.errors.QueryBudgetExceeded`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .errors import InvalidInputError, QueryBudgetExceeded
from .models import as_batch


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


__all__ = ["ValueOracle", "QueryRecord", "Model"]
