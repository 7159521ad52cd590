"""The reduced-coordinates oracle of Prop. C.2's proof: queries confined to one head's subspace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ShapeError
from ...models import as_batch
from ...oracles import Model, ValueOracle


@dataclass
class ReducedOracle:
    """Value queries in the reduced coordinates of a subspace U = range(E) (proof of Prop. C.2).

    A query Z of shape (N, d_h) (or a batch (B, N, d_h)) is asked of ``parent`` as the
    sequence ``X = Z E^T`` whose tokens ``x_i = E z_i`` lie in U.  Every query is counted both
    here and by the parent (one reduced query is exactly one parent query), and the parent's
    budget applies.

    Parameters
    ----------
    parent : ValueOracle
        The oracle of the full model, of width d.
    E : array of shape (d, d_h)
        A basis of U (orthonormal for Prop. C.2; not checked here).

    Attributes
    ----------
    queries, calls : int
        Reduced queries answered and calls made through this adapter.
    """

    parent: ValueOracle
    E: np.ndarray
    queries: int = 0
    calls: int = 0

    def __post_init__(self) -> None:
        arith = self.parent.model.arith
        self.E = arith.asarray(self.E)
        if self.E.ndim != 2 or self.E.shape[0] != self.parent.d or not 1 <= self.E.shape[1] <= self.parent.d:
            raise ShapeError(
                f"E must have shape (d, d_h) with d = {self.parent.d}, 1 <= d_h <= d; got {self.E.shape}"
            )
        arith.check_finite(self.E, "basis E")

    @property
    def d(self) -> int:
        """Width d_h of the reduced queries."""
        return self.E.shape[1]

    @property
    def model(self) -> Model:
        """The parent's model (exposes only ``arith`` to the learners that read it)."""
        return self.parent.model

    def __call__(self, Z: Any) -> Any:
        """Answer Z (N, d_h) or (B, N, d_h) by asking the parent X = Z E^T."""
        arith = self.parent.model.arith
        with arith.context():
            Zb, batched = as_batch(Z, self.d, arith)
            X = (Zb.reshape(-1, self.d) @ self.E.T).reshape(Zb.shape[0], Zb.shape[1], -1)
        y = self.parent(X)
        self.queries += Zb.shape[0]
        self.calls += 1
        return y if batched else y[0]
