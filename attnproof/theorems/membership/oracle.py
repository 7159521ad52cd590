"""The membership oracle of App. B and the learner's window through rotated tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...oracles import ValueOracle


@dataclass
class MembershipOracle(ValueOracle):
    """Membership queries MQ(X) = 1[f*(X) > 0] (App. B, Eq. (8)): one bit per query.

    Counts queries and enforces the budget exactly like :class:`ValueOracle` (it is one, with
    a thresholded answer).  Convention, as in Eq. (8): ``f*(X) = 0`` answers **0** (the
    "else" branch), so ``h = 2 MQ - 1`` of Eq. (11) equals sign(f*) except on the zero set.
    Answers are ``numpy.int8`` 0/1; the sign is taken in the model's own arithmetic (an
    mpmath model at 50 digits answers at 50 digits).
    """

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        f = np.asarray(self.model(Xb))
        return np.array([1 if x > 0 else 0 for x in f.reshape(-1)], dtype=np.int8).reshape(f.shape)


class RotatedQueries:
    """The learner's window through rotated tokens: a virtual query Y is asked as ``X = Y Q^T``
    (every token ``x = Q y``), so the virtual target is ``(Q^T W* Q, Q^T v*)``
    (identity ``thmB.1/rotation``).  Queries are counted by the wrapped oracle."""

    def __init__(self, oracle: MembershipOracle, Q: np.ndarray) -> None:
        self.oracle, self.Q = oracle, Q

    @property
    def d(self) -> int:
        return self.oracle.d

    @property
    def queries(self) -> int:
        return self.oracle.queries

    @property
    def remaining(self) -> int | None:
        return self.oracle.remaining

    def __call__(self, Y: Any) -> Any:
        return self.oracle(np.asarray(Y) @ self.Q.T)
