"""Section 3: the merged parametrisation W = K^T Q, v = V^T w_o."""

from __future__ import annotations

import numpy as np
import sympy as sp

from ...arith import SYMPY
from ...models import Attention
from ...proof import Pair, expand_matrix, identity, symbols

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


@identity(
    id="sec3/qkv-merge-all-d",
    paper="Sec. 3",
    statement=r"\forall r, d, N:\ (K x)^\top (Q y) = x^\top (K^\top Q)\, y,\quad "
    r"(X V^\top) w_o = X (V^\top w_o)",
    simplifier=expand_matrix,
    assumptions="Q, K, V r x d, x, y d x 1, X N x d, w_o r x 1 MatrixSymbols of symbolic sizes r, d, N; "
    "scores and values of SHA are then those of f_{K^T Q, V^T w_o} token by token (sec3/qkv-merge checks "
    "the library's from_qkv at listed sizes)",
    scope="all d (and every r, N: MatrixSymbol algebra of symbolic size)",
)
def qkv_merge_all_d() -> list[Pair]:
    r, d, N = sp.symbols("r d N", integer=True, positive=True)
    Q, K, V = (sp.MatrixSymbol(n, r, d) for n in ("Q", "K", "V"))
    x, y, X = sp.MatrixSymbol("x", d, 1), sp.MatrixSymbol("y", d, 1), sp.MatrixSymbol("X", N, d)
    w = sp.MatrixSymbol("w", r, 1)
    return [((K * x).T * (Q * y), x.T * (K.T * Q) * y), ((X * V.T) * w, X * (V.T * w))]
