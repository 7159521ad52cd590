"""Model-level maps of Sec. 7 and App. C: reduced coordinates of a head, the short-input flip,
and orthonormal bases of pairwise orthogonal subspaces (Assumption C.1)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...arith import Arith
from ...errors import ShapeError


def reduced_parameters(W: np.ndarray, v: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prop. C.2's reduced parameters ``(E^T W E, E^T v)`` of one head in the basis E."""
    return E.T @ W @ E, E.T @ v


def lift(Wt: np.ndarray, vt: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Back from reduced coordinates: ``(E W~ E^T, E v~)`` (end of the proof of Prop. C.2)."""
    return E @ Wt @ E.T, E @ vt


def flip_heads(heads: list[tuple[Any, Any]], S: set[int]) -> list[tuple[Any, Any]]:
    """The short-input family: heads in S become ``(-W, -v)``, plus a linear head ``(0, 2 sum_S v)``.

    The result agrees with ``heads`` on every input of length N <= 2 (``sec7/short-input-flip``).
    """
    if not S:
        return list(heads)
    out = [(-W if h in S else W, -v if h in S else v) for h, (W, v) in enumerate(heads)]
    d = np.asarray(heads[0][1]).shape[0]
    linear = sum((heads[h][1] for h in sorted(S)), 0 * heads[0][1])
    out.append((0 * np.asarray(heads[0][0]).reshape(d, d), 2 * linear))
    return out


def cayley_bases(dims: list[int], S: Any, arith: Arith) -> list[np.ndarray]:
    """Orthonormal bases of pairwise orthogonal subspaces with ``sum(dims) = d``, in ``arith``.

    The Cayley transform ``Q = (I - K)(I + K)^{-1}`` of the skew part ``K = (S - S^T) / 2`` of a
    d x d matrix S is orthogonal exactly (sympy, rational S gives rational Q) or to the working
    precision; consecutive column groups of Q of sizes ``dims`` are the bases E_h.
    """
    d = sum(dims)
    S = arith.asarray(S)
    if S.shape != (d, d) or min(dims, default=0) < 1:
        raise ShapeError(f"S must be ({d}, {d}) and every d_h >= 1; got {S.shape}, dims {dims}")
    with arith.context():
        K = (S - S.T) / 2
        I = arith.eye(d)
        Q = arith.solve((I + K).T, (I - K).T).T  # (I - K)(I + K)^{-1}; I + K is invertible (K skew)
        cuts = np.cumsum([0, *dims])
        return [Q[:, a:b] for a, b in itertools.pairwise(cuts)]
