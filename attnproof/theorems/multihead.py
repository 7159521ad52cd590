"""Proposition 7.1: multi-head attention is not identifiable from value queries."""

from __future__ import annotations

import sympy as sp

from ..arith import SYMPY
from ..models import Attention, MultiHeadAttention
from ..proof import Pair, identity, symbols


@identity(
    id="prop7.1/multihead-collapse",
    paper="Prop. 7.1",
    statement=r"W^{(h)} = A,\ v^{(h)} = \lambda_h b,\ \textstyle\sum_h \lambda_h = 1 \Rightarrow "
    r"\sum_{h=1}^H \alpha(X, W^{(h)})^\top X v^{(h)} = \alpha(X, A)^\top X b"
    r"\ \text{for every such}\ \lambda",
    assumptions="A real d x d, b real d-vector, X real N x d, lambda_1..lambda_{H-1} real symbols "
    "and lambda_H = 1 - sum of the others (the identity holds for every real lambda on the "
    "hyperplane, the paper's simplex included); (d, N, H) in {(2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)}",
)
def multihead_collapse() -> list[Pair]:
    pairs: list[Pair] = []
    for d, N, H in ((2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)):
        A, b, X = symbols("A", (d, d), real=True), symbols("b", (d,), real=True), symbols("X", (N, d), real=True)
        lam = list(sp.symbols(f"lambda_1:{H}", real=True))
        lam.append(1 - sum(lam))
        heads = [(A, l * b) for l in lam]
        pairs.append((MultiHeadAttention(heads, SYMPY)(X), Attention(A, b, SYMPY)(X)))
    return pairs
