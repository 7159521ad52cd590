"""The identities behind Theorem 5.1 and the skeleton learner."""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..arith import SYMPY
from ..models import Attention, scores
from ..proof import Pair, identity, symbols
from .lowrank import reconstruct


@identity(
    id="thm5.1/rank-one-measurement",
    paper="Thm 5.1, proof",
    statement=r"X = \begin{bmatrix}(a + b)^\top \\ b^\top\end{bmatrix} \Rightarrow s_1 - s_2 = a^\top W b "
    r"= \langle a b^\top, W\rangle,\quad f_{W,v}(X) = b^\top v + \sigma(a^\top W b)\, a^\top v",
    uses=("thm4.1/softmax-to-sigmoid",),
    assumptions="W real d x d, a, b, v real d-vectors; d = 1..3",
)
def rank_one_measurement() -> list[Pair]:
    pairs: list[Pair] = []
    for d in range(1, 4):
        W, v = symbols("W", (d, d), real=True), symbols("v", (d,), real=True)
        a, b = symbols("a", (d,), real=True), symbols("b", (d,), real=True)
        X = np.array([a + b, b], dtype=object)
        s = scores(X[None], W)[0]
        t = a @ W @ b
        pairs.append((s[0] - s[1], t))
        pairs.append((sp.Add(*(a[i] * b[j] * W[i, j] for i in range(d) for j in range(d))), t))
        pairs.append((Attention(W, v, SYMPY)(X), b @ v + a @ v / (1 + sp.exp(-t))))
    return pairs


@identity(
    id="thm5.1/skeleton-reconstruction",
    paper="beyond Thm 5.1 (CUR / Nystrom)",
    statement=r"\operatorname{rank} M = r,\ U = M_{[:r, :r]} \text{ invertible} \Rightarrow "
    r"M = M_{[:, :r]}\, U^{-1} M_{[:r, :]}, \quad |\text{skeleton}| = \sum_{s=0}^{r-1}(2d - 2s - 1) = r(2d - r) = d^2 - (d - r)^2",
    assumptions="M = A B with A (d x r), B (r x d) real symbols, (d, r) in {(2,1), (3,1), (3,2), (4,2)}; "
    "the reconstruction is the library's own `reconstruct` run in sympy",
)
def skeleton_reconstruction() -> list[Pair]:
    pairs: list[Pair] = []
    for d, r in ((2, 1), (3, 1), (3, 2), (4, 2)):
        M = symbols("A", (d, r), real=True) @ symbols("B", (r, d), real=True)
        pairs.extend(zip(reconstruct(M, r, SYMPY).reshape(-1), M.reshape(-1)))
    dd, rr = sp.symbols("d r", positive=True)
    # cross approximation: step s measures d - s column entries and d - s - 1 row entries
    s = sp.Symbol("s", integer=True)
    pairs.append((sp.summation(2 * dd - 2 * s - 1, (s, 0, rr - 1)), rr * (2 * dd - rr)))
    pairs.append((rr * (2 * dd - rr), dd**2 - (dd - rr) ** 2))
    return pairs
