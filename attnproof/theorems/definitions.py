"""Section 3: the merged parametrisation W = K^T Q, v = V^T w_o."""

from __future__ import annotations

import numpy as np

from ..arith import SYMPY
from ..models import Attention
from ..proof import Pair, identity, symbols

#: (r, d) sizes at which the merge is proven with fully symbolic matrices.
QKV_SIZES = ((1, 2), (2, 2), (2, 3), (3, 2))


@identity(
    id="sec3/qkv-merge",
    scope="listed sizes: (r, d) = (1, 2), (2, 2), (2, 3), (3, 2); N = 2",
    paper="Sec. 3",
    statement=r"x^\top K^\top Q\, y = x^\top W y \text{ with } W = K^\top Q, \quad "
    r"X V^\top w_o = X v \text{ with } v = V^\top w_o, \text{ hence } "
    r"\mathrm{SHA}_{Q,K,V,w_o} = f_{K^\top Q,\, V^\top w_o}",
    assumptions="Q, K, V real r x d, w_o real r-vector, x, y real d-vectors, X real N x d; "
    "checked for (r, d) in {(1,2), (2,2), (2,3), (3,2)} and N = 2",
)
def qkv_merge() -> list[Pair]:
    pairs: list[Pair] = []
    for r, d in QKV_SIZES:
        Q, K, V = (symbols(n, (r, d), real=True) for n in ("Q", "K", "V"))
        w_o = symbols("w", (r,), real=True)
        x, y = symbols("x", (d,), real=True), symbols("y", (d,), real=True)
        X = symbols("X", (2, d), real=True)
        model = Attention.from_qkv(Q, K, V, w_o, arith=SYMPY)
        pairs.append(((K @ x) @ (Q @ y), x @ model.W @ y))
        pairs.extend(zip(X @ (V.T @ w_o), X @ model.v))
        # the full single-head attention of Sec. 3, written with Q, K, V, w_o directly
        scores = [(K @ X[i]) @ (Q @ X[-1]) for i in range(2)]
        weights = SYMPY.softmax(np.array(scores, dtype=object))
        pairs.append((model(X), weights @ (X @ V.T @ w_o)))
    return pairs
