"""The identities behind Theorem 4.1, proven about the library's own model and learner code.

Each builder evaluates :class:`~attnproof.models.Attention` (or runs
:func:`~attnproof.theorems.exact.learn_exact`) in the sympy arithmetic on symbolic inputs, so
what is verified is the code that runs, not a transcription of it.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..arith import SYMPY
from ..models import Attention, scores
from ..oracles import ValueOracle
from ..proof import Pair, identity, symbols
from .exact import learn_exact

#: Widths at which the per-d identities are proven with fully symbolic W, v, x.
SMALL_D = range(1, 7)


def _unit(d: int, j: int) -> np.ndarray:
    e = np.zeros(d, dtype=object)
    e.fill(sp.Integer(0))
    e[j] = sp.Integer(1)
    return e


def _two_token_probe(u: np.ndarray, j: int) -> np.ndarray:
    """X = [(u + e_j)^T; e_j^T] (proof of Thm 4.1)."""
    e = _unit(len(u), j)
    return np.array([u + e, e], dtype=object)


@identity(
    id="thm4.1/one-token",
    paper="Thm 4.1, phase (i)",
    statement=r"f_{W,v}([x^\top]) = x^\top v \quad \text{(independent of } W)",
    assumptions="W real d x d, v and x real d-vectors; for every d = 1..6",
)
def one_token() -> list[Pair]:
    pairs: list[Pair] = []
    for d in SMALL_D:
        W, v, x = symbols("W", (d, d), real=True), symbols("v", (d,), real=True), symbols("x", (d,), real=True)
        pairs.append((Attention(W, v, SYMPY)(x[None, :]), x @ v))
    return pairs


@identity(
    id="thm4.1/softmax-to-sigmoid",
    paper="Thm 4.1, Eq. (1)",
    statement=r"\mathrm{softmax}(s_1, s_2)_1 = \frac{e^{s_1}}{e^{s_1} + e^{s_2}} = \sigma(s_1 - s_2)",
    assumptions="s_1, s_2 real",
)
def softmax_to_sigmoid() -> list[Pair]:
    s1, s2 = sp.symbols("s_1 s_2", real=True)
    weights = SYMPY.softmax(np.array([s1, s2], dtype=object))
    sigma = 1 / (1 + sp.exp(-(s1 - s2)))
    return [(weights[0], sigma), (SYMPY.sigmoid(np.array([s1 - s2], dtype=object))[0], sigma)]


@identity(
    id="thm4.1/score-difference",
    paper="Thm 4.1, proof (ii)",
    statement=r"X = \begin{bmatrix}(u + e_j)^\top \\ e_j^\top\end{bmatrix} \Rightarrow "
    r"s_1 - s_2 = u^\top W e_j = u^\top w_j",
    assumptions="W real d x d, u real d-vector; for every d = 1..6 and every column j",
)
def score_difference() -> list[Pair]:
    pairs: list[Pair] = []
    for d in SMALL_D:
        W, u = symbols("W", (d, d), real=True), symbols("u", (d,), real=True)
        for j in range(d):
            s = scores(_two_token_probe(u, j)[None], W)[0]
            pairs.append((s[0] - s[1], u @ W[:, j]))
    return pairs


@identity(
    id="thm4.1/label-affine",
    paper="Thm 4.1, proof (ii)",
    statement=r"f_{W,v}\!\left(\begin{bmatrix}(u + e_j)^\top \\ e_j^\top\end{bmatrix}\right)"
    r" = v_j + \sigma(u^\top w_j)\,(u^\top v)",
    uses=("thm4.1/softmax-to-sigmoid", "thm4.1/score-difference"),
    assumptions="W real d x d, u, v real d-vectors; for every d = 1..3 and every column j",
)
def label_affine() -> list[Pair]:
    pairs: list[Pair] = []
    for d in range(1, 4):
        W, v, u = symbols("W", (d, d), real=True), symbols("v", (d,), real=True), symbols("u", (d,), real=True)
        model = Attention(W, v, SYMPY)
        for j in range(d):
            y = model(_two_token_probe(u, j))
            pairs.append((y, v[j] + (u @ v) / (1 + sp.exp(-(u @ W[:, j])))))
    return pairs


def _end_to_end(d: int, probe_matrices: list) -> list[Pair]:
    """Run the learner in sympy on a symbolic target through a symbolic oracle."""
    W = symbols("W", (d, d), real=True)
    v = symbols("v", (d,), real=True, nonzero=True)
    pairs: list[Pair] = []
    for probes in probe_matrices:
        oracle = ValueOracle(Attention(W, v, SYMPY))
        rec = learn_exact(oracle, probes=probes, arith=SYMPY)
        if rec.queries != d + d * d:
            raise AssertionError(f"learner used {rec.queries} queries, expected d + d^2 = {d + d * d}")
        pairs.extend(zip(rec.W.reshape(-1), W.reshape(-1)))
        pairs.extend(zip(rec.v, v))
    return pairs


_END_TO_END = dict(
    statement=r"\mathrm{learn\_exact}(\mathrm{VQ}_{W,v}) = (W, v) \text{ exactly, with } d + d^2 \text{ queries}",
    uses=("thm4.1/one-token", "thm4.1/label-affine"),
)


@identity(
    id="thm4.1/end-to-end-d2",
    paper="Thm 4.1",
    assumptions="d = 2; W: 4 real symbols, v: 2 nonzero real symbols; the paper's basis probes "
    "and the fixed rational probe matrix [[1, 2], [3, -1]]",
    **_END_TO_END,
)
def end_to_end_d2() -> list[Pair]:
    return _end_to_end(2, ["basis", [[1, 2], [3, -1]]])


@identity(
    id="thm4.1/end-to-end-d3",
    paper="Thm 4.1",
    assumptions="d = 3; W: 9 real symbols, v: 3 nonzero real symbols; the paper's basis probes",
    **_END_TO_END,
)
def end_to_end_d3() -> list[Pair]:
    return _end_to_end(3, ["basis"])
