"""Section 4.1: one-layer Transformers through antisymmetric queries VQ(X) - VQ(-X)."""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..arith import SYMPY
from ..models import OneLayerTransformer, attention_weights, relu
from ..proof import Pair, identity, symbols

#: (d, N, m) sizes at which the antisymmetric-query identity is proven symbolically.
TF_SIZES = ((2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 2))


def _piecewise_simplify(e: sp.Expr) -> sp.Expr:
    """simplify after rewriting Max and Abs as Piecewise, which sympy can case-split."""
    return sp.simplify(sp.piecewise_fold(sp.sympify(e).rewrite(sp.Piecewise)))


def _relu_as_abs_simplify(e: sp.Expr) -> sp.Expr:
    """simplify after rewriting every ReLU, Max(a, 0), as (a + |a|) / 2 (``sec4.1/relu-as-abs``).

    The argument ``a`` is simplified first, so ReLU(z(-X)) and ReLU(-z(X)) meet in one
    canonical form and ``|-a| = |a|`` cancels them.
    """

    def rewrite(*args: sp.Expr) -> sp.Expr:
        rest = [x for x in args if x != 0]
        if len(args) == 2 and len(rest) == 1:
            a = sp.simplify(rest[0])
            return (a + sp.Abs(a)) / 2
        return sp.Max(*args)

    return sp.simplify(sp.sympify(e).replace(sp.Max, rewrite))


@identity(
    id="sec4.1/relu-as-abs",
    paper="Sec. 4.1 (lemma)",
    statement=r"\mathrm{ReLU}(z) = \max(z, 0) = \tfrac{1}{2}(z + |z|)",
    assumptions="z real",
    simplifier=_piecewise_simplify,
)
def relu_as_abs() -> list[Pair]:
    z = sp.Symbol("z", real=True)
    return [(relu(np.array([z], dtype=object))[0], (z + sp.Abs(z)) / 2)]


@identity(
    id="sec4.1/relu-antisymmetry",
    paper="Sec. 4.1",
    statement=r"\mathrm{ReLU}(z) - \mathrm{ReLU}(-z) = z,\quad \alpha(-X, W) = \alpha(X, W),"
    r"\ \text{hence}\ \mathrm{VQ}(X) - \mathrm{VQ}(-X) = \alpha(X, W)^\top X (A w_o)"
    r"\ \text{for}\ \mathrm{TF}(X) = w_o^\top \mathrm{ReLU}(\alpha(X,W)^\top X A)",
    uses=("sec4.1/relu-as-abs",),
    assumptions="z real; W real d x d, A real d x m, w_o real m-vector, X real N x d; "
    "(d, N, m) in {(2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 2)}",
    simplifier=_relu_as_abs_simplify,
)
def relu_antisymmetry() -> list[Pair]:
    z = sp.Symbol("z", real=True)
    pairs: list[Pair] = [(relu(np.array([z], dtype=object))[0] - relu(np.array([-z], dtype=object))[0], z)]
    for d, N, m in TF_SIZES:
        W, A = symbols("W", (d, d), real=True), symbols("A", (d, m), real=True)
        w_o, X = symbols("w", (m,), real=True), symbols("X", (N, d), real=True)
        alpha = attention_weights(X[None], W, SYMPY)[0]
        pairs.extend(zip(attention_weights(-X[None], W, SYMPY)[0], alpha))
        tf = OneLayerTransformer(W, A, w_o, SYMPY)
        pairs.append((tf(X) - tf(-X), alpha @ X @ (A @ w_o)))
    return pairs
