"""Real attention heads have biases: what they add, what stays identifiable, how to learn it.

With ``q = W_q x + b_q``, ``k = W_k x + b_k``, ``val = W_v x + b_v``, head dimension r and a
readout w_o, a BERT head computes ``w_o^T sum_i alpha_i val_i`` with
``alpha = softmax_i(k_i^T q_N / sqrt(r))``.  Expanding (identities ``bias/score-expansion`` and
``bias/value-offset``)::

    k_i^T q_N / sqrt(r) = x_i^T W x_N + c^T x_i + (terms constant in i)
    W = W_k^T W_q / sqrt(r),  c = W_k^T b_q / sqrt(r),  v = W_v^T w_o,  beta = w_o^T b_v,

and softmax ignores terms constant in i, so the head is
``f(X) = softmax_i(x_i^T W x_N + c^T x_i)^T (X v) + beta``: (W, c, v, beta) is what a value
oracle can see, and all of it is identifiable when v != 0 (b_k only enters through the
constant terms, and b_q, b_v only through c and beta):

* ``beta = f([0])``: a zero token has value 0 (``bias/zero-token``), 1 query;
* ``v_i = f([e_i]) - beta``: d queries;
* ``c^T u`` from ``X = [u^T; 0^T]``: a zero last token kills W (``bias/zero-last-token``), so the
  logit is ``c^T u``; d probes u give c, d queries;
* W as before, the logit of a probe at scale s being ``s^2 p^T W q + s c^T p``.

So biases cost exactly d + 1 extra queries.  The measurements live in :mod:`attnproof.prelude`
(shared by the exact and skeleton learners, ``bias=True``); this room holds their identities.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ...arith import SYMPY
from ...models import Attention
from ...proof import Pair, expand_matrix, identity, symbols


@identity(
    id="bias/score-expansion",
    scope="listed sizes: (r, d) = (2, 3)",
    paper="beyond the paper (real heads)",
    statement=r"\frac{(W_k x_i + b_k)^\top (W_q x_N + b_q)}{\sqrt r} = x_i^\top W x_N + c^\top x_i + "
    r"\underbrace{\tfrac{b_k^\top (W_q x_N + b_q)}{\sqrt r}}_{\text{constant in } i},\ "
    r"W = \tfrac{W_k^\top W_q}{\sqrt r},\ c = \tfrac{W_k^\top b_q}{\sqrt r}",
    assumptions="W_q, W_k real r x d, b_q, b_k real r-vectors, x_i, x_N real d-vectors, r positive; "
    "(r, d) = (2, 3)",
)
def score_expansion() -> list[Pair]:
    r, d = 2, 3
    Wq, Wk = symbols("Wq", (r, d), real=True), symbols("Wk", (r, d), real=True)
    bq, bk = symbols("bq", (r,), real=True), symbols("bk", (r,), real=True)
    x, xN = symbols("x", (d,), real=True), symbols("y", (d,), real=True)
    root = sp.sqrt(r)
    W, c = Wk.T @ Wq / root, Wk.T @ bq / root
    const = bk @ (Wq @ xN + bq) / root
    return [((Wk @ x + bk) @ (Wq @ xN + bq) / root, x @ W @ xN + c @ x + const)]


@identity(
    id="bias/value-offset",
    scope="listed sizes: (r, d, N) = (2, 3, 3)",
    paper="beyond the paper (real heads)",
    statement=r"\sum_i \alpha_i\, w_o^\top (W_v x_i + b_v) = \alpha^\top X v + \beta,\ "
    r"v = W_v^\top w_o,\ \beta = w_o^\top b_v \quad (\textstyle\sum_i \alpha_i = 1)",
    assumptions="W_v real r x d, b_v, w_o real r-vectors, X real N x d, alpha_N = 1 - sum of the others; "
    "(r, d, N) = (2, 3, 3)",
)
def value_offset() -> list[Pair]:
    r, d, N = 2, 3, 3
    Wv, bv, wo = (
        symbols("Wv", (r, d), real=True), symbols("bv", (r,), real=True), symbols("wo", (r,), real=True)
    )
    X = symbols("X", (N, d), real=True)
    a = list(sp.symbols(f"alpha_1:{N}", real=True))
    alpha = np.array(a + [1 - sum(a)], dtype=object)
    lhs = sum(alpha[i] * (wo @ (Wv @ X[i] + bv)) for i in range(N))
    return [(lhs, alpha @ (X @ (Wv.T @ wo)) + wo @ bv)]


@identity(
    id="bias/zero-token",
    scope="listed sizes: d = 1..4",
    paper="beyond the paper (real heads)",
    statement=r"f([0^\top]) = \beta,\qquad f([e_i^\top]) = v_i + \beta",
    assumptions="W real d x d, c, v real d-vectors, beta real; d = 1..4",
)
def zero_token() -> list[Pair]:
    pairs: list[Pair] = []
    beta = sp.Symbol("beta", real=True)
    for d in range(1, 5):
        W, c, v = (
            symbols("W", (d, d), real=True), symbols("c", (d,), real=True), symbols("v", (d,), real=True)
        )
        model = Attention(W, v, SYMPY, c=c, beta=beta)
        pairs.append((model(np.zeros((1, d), dtype=int)), beta))
        for i in range(d):
            pairs.append((model(np.eye(d, dtype=int)[i : i + 1]), v[i] + beta))
    return pairs


@identity(
    id="bias/zero-last-token",
    scope="listed sizes: d = 1..3",
    paper="beyond the paper (real heads)",
    statement=r"f\!\left(\begin{bmatrix}u^\top \\ 0^\top\end{bmatrix}\right) = "
    r"\beta + \sigma(c^\top u)\, u^\top v;"
    r"\quad f\!\left(\begin{bmatrix}(p + q)^\top \\ q^\top\end{bmatrix}\right) = \beta + q^\top v + "
    r"\sigma(p^\top W q + c^\top p)\, p^\top v",
    uses=("thm4.1/softmax-to-sigmoid",),
    assumptions="W real d x d, c, v, u, p, q real d-vectors, beta real; d = 1..3",
)
def zero_last_token() -> list[Pair]:
    pairs: list[Pair] = []
    beta = sp.Symbol("beta", real=True)
    for d in range(1, 4):
        W, c, v = (
            symbols("W", (d, d), real=True), symbols("c", (d,), real=True), symbols("v", (d,), real=True)
        )
        u, p, q = (symbols(n, (d,), real=True) for n in ("u", "p", "q"))
        model = Attention(W, v, SYMPY, c=c, beta=beta)
        zero = np.array([sp.Integer(0)] * d, dtype=object)
        pairs.append((model(np.array([u, zero])), beta + (u @ v) / (1 + sp.exp(-(c @ u)))))
        pairs.append(
            (model(np.array([p + q, q])), beta + q @ v + (p @ v) / (1 + sp.exp(-(p @ W @ q + c @ p))))
        )
    return pairs


@identity(
    id="bias/expansion-all-d",
    paper="beyond the paper (real heads)",
    statement=r"\forall r, d, N:\ (W_k x + b_k)^\top (W_q y + b_q) = x^\top (W_k^\top W_q) y "
    r"+ x^\top (W_k^\top b_q) + b_k^\top (W_q y + b_q);\ \alpha^\top (X W_v^\top + \mathbf 1 b_v^\top) w_o = "
    r"\alpha^\top X (W_v^\top w_o) + (\alpha^\top \mathbf 1)(b_v^\top w_o)",
    simplifier=expand_matrix,
    assumptions="W_q, W_k, W_v r x d, b_q, b_k, b_v, w_o r x 1, x, y d x 1, X N x d, alpha and 1 N x 1 "
    "MatrixSymbols of symbolic sizes (x^T c = c^T x is a scalar; alpha^T 1 = 1 for softmax weights; "
    "the 1/sqrt(r) is a scalar factor); "
    "bias/score-expansion and bias/value-offset check the same at listed sizes",
    scope="all d (and every r, N: MatrixSymbol algebra of symbolic size)",
)
def expansion_all_d() -> list[Pair]:
    r, d, N = sp.symbols("r d N", integer=True, positive=True)
    Wq, Wk, Wv = (sp.MatrixSymbol(n, r, d) for n in ("Wq", "Wk", "Wv"))
    bq, bk, bv, wo = (sp.MatrixSymbol(n, r, 1) for n in ("bq", "bk", "bv", "wo"))
    x, y, X = sp.MatrixSymbol("x", d, 1), sp.MatrixSymbol("y", d, 1), sp.MatrixSymbol("X", N, d)
    alpha, ones = sp.MatrixSymbol("alpha", N, 1), sp.MatrixSymbol("J", N, 1)
    return [
        ((Wk * x + bk).T * (Wq * y + bq), x.T * (Wk.T * Wq) * y + x.T * (Wk.T * bq) + bk.T * (Wq * y + bq)),
        (alpha.T * (X * Wv.T + ones * bv.T) * wo, alpha.T * X * (Wv.T * wo) + (alpha.T * ones) * (bv.T * wo)),
    ]


__all__: list[str] = []  # identities only: the learners are `bias=True` of exact and skeleton
