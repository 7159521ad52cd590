"""The identities and the high-precision run of Sec. 4.1 (the one-layer Transformer room)."""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from ...arith import FLOAT64, MP, SYMPY
from ...models import (
    Attention,
    OneLayerTransformer,
    ReluFFN,
    attention_weights,
    canonical_ffn,
    evaluate_canonical,
    relu,
    scores,
)
from ...measure import Session
from ...oracles import ValueOracle
from ...verify.checkers import expand_matrix
from ...verify.formulas import paper_weights, recovery_checks, symbols
from ...verify.registry import RunCheck as Check, Pair, identity, run_check as run
from . import learn_transformer
from ._path_search import _PathSearch, kink_parameter
from .ffn import FFNRecovery, assemble_canonical, learn_ffn

#: (d, N, m) sizes at which the antisymmetric-query identity is proven symbolically.
TF_SIZES = ((2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 2))


def _piecewise_simplify(e: sp.Expr) -> sp.Expr:
    """simplify after rewriting Max and Abs as Piecewise, which sympy can case-split."""
    return sp.simplify(sp.piecewise_fold(sp.sympify(e).rewrite(sp.Piecewise)))


def _relu_as_abs(e: sp.Expr, canonical: Any, finish: Any) -> sp.Expr:
    """Rewrite every ReLU, Max(a, 0), as (a + |a|) / 2 (``sec4.1/relu-as-abs``) with ``a``
    put in ``canonical`` form first, then ``finish`` the whole expression."""

    def rewrite(*args: sp.Expr) -> sp.Expr:
        rest = [x for x in args if x != 0]
        if len(args) == 2 and len(rest) == 1:
            a = canonical(rest[0])
            return (a + sp.Abs(a)) / 2
        return sp.Max(*args)

    return finish(sp.sympify(e).replace(sp.Max, rewrite))


def _relu_as_abs_simplify(e: sp.Expr) -> sp.Expr:
    """ReLU as (a + |a|) / 2, everything simplified: the argument ``a`` first, so ReLU(z(-X)) and
    ReLU(-z(X)) meet in one canonical form and ``|-a| = |a|`` cancels them."""
    return _relu_as_abs(e, sp.simplify, sp.simplify)


def _relu_as_abs_cancel(e: sp.Expr) -> sp.Expr:
    """ReLU as (a + |a|) / 2, then a rational-function normal form (``cancel(together(.))``): enough
    when the arguments already meet syntactically (sympy writes ``|-a|`` as ``|a|``), and 6 times
    faster than :func:`_relu_as_abs_simplify` on the Transformer's softmax expressions."""
    return _relu_as_abs(e, lambda a: a, lambda x: sp.cancel(sp.together(x)))


@identity(
    id="sec4.1/relu-as-abs",
    scope="scalar",
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
    assumptions="z real; W real d x d, A real d x m, w_o real m-vector, X real N x d; left: the library's "
    "relu, attention_weights and OneLayerTransformer; right: alpha(X, W) and alpha(X, W)^T X (A w_o) "
    "written from Sec. 3 (proof.paper_weights), not the library's model; "
    "(d, N, m) in {(2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 2)}",
    simplifier=_relu_as_abs_cancel,
    scope="listed sizes: (d, N, m) = (2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 2)",
)
def relu_antisymmetry() -> list[Pair]:
    z = sp.Symbol("z", real=True)
    pairs: list[Pair] = [(relu(np.array([z], dtype=object))[0] - relu(np.array([-z], dtype=object))[0], z)]
    for d, N, m in TF_SIZES:
        W, A = symbols("W", (d, d), real=True), symbols("A", (d, m), real=True)
        w_o, X = symbols("w", (m,), real=True), symbols("X", (N, d), real=True)
        alpha = paper_weights(W, X)
        pairs.extend(zip(attention_weights(-X[None], W, SYMPY)[0], alpha))
        u = [sp.Add(*(A[a, k] * w_o[k] for k in range(m))) for a in range(d)]  # A w_o
        tf = OneLayerTransformer(W, A, w_o, SYMPY)
        pairs.append((tf(X) - tf(-X), sp.Add(*(alpha[i] * sp.Add(*(X[i, a] * u[a] for a in range(d)))
                                                 for i in range(N)))))
    return pairs


@identity(
    id="sec4.1/antisymmetry-all-d",
    paper="Sec. 4.1",
    statement=r"\forall d, N, m:\ (-x_i)^\top W (-x_N) = x_i^\top W x_N "
    r"\Rightarrow \alpha(-X, W) = \alpha(X, W);\ "
    r"\alpha^\top(-X)A = -\alpha^\top X A,\ "
    r"\mathrm{ReLU}(z) - \mathrm{ReLU}(-z) = z,\ (\alpha^\top X A)\, w_o = \alpha^\top X (A w_o)",
    uses=("sec4.1/relu-as-abs", "sec4.1/relu-antisymmetry"),
    simplifier=expand_matrix,
    assumptions="W d x d, x_i, x_N d x 1, alpha N x 1, X N x d, A d x m, w_o m x 1 MatrixSymbols of symbolic "
    "sizes; the scalar ReLU(z) - ReLU(-z) = z (entrywise) is sec4.1/relu-antisymmetry's first pair; "
    "together: TF(X) - TF(-X) = w_o^T (ReLU(z) - ReLU(-z)) = alpha^T X (A w_o) with z = A^T X^T alpha; "
    "the library's model at listed sizes: sec4.1/relu-antisymmetry",
    scope="all d (and every N, m: MatrixSymbol algebra of symbolic size, a proven scalar ReLU step)",
)
def antisymmetry_all_d() -> list[Pair]:
    d, N, m = sp.symbols("d N m", integer=True, positive=True)
    W, x, y = sp.MatrixSymbol("W", d, d), sp.MatrixSymbol("x", d, 1), sp.MatrixSymbol("y", d, 1)
    alpha, X = sp.MatrixSymbol("alpha", N, 1), sp.MatrixSymbol("X", N, d)
    A, w_o = sp.MatrixSymbol("A", d, m), sp.MatrixSymbol("w", m, 1)
    return [
        ((-x).T * W * (-y), x.T * W * y),
        (alpha.T * (-X) * A, -(alpha.T * X * A)),
        ((alpha.T * X * A) * w_o, alpha.T * X * (A * w_o)),
    ]


def _ffn_sizes() -> tuple[tuple[int, int], ...]:
    """(d, m) sizes at which the FFN identities are proven with fully symbolic weights."""
    return ((1, 2), (2, 2), (2, 3), (3, 2))


def _one_token(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=object)[None, :]


@identity(
    id="sec4.1/parity-split",
    scope="listed sizes: (d, m) = (1, 2), (2, 2), (2, 3), (3, 2)",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"f(x) = w_o^\top \mathrm{ReLU}(A^\top x) = \tfrac12 u^\top x"
    r" + \tfrac12 \sum_k a_k |w_k^\top x|,"
    r"\quad f(x) - f(-x) = u^\top x,\quad u = A w_o",
    uses=("sec4.1/relu-as-abs",),
    assumptions="A real d x m (columns w_k), w_o = (a_k) real, x real; "
    "(d, m) in {(1, 2), (2, 2), (2, 3), (3, 2)}",
    simplifier=_relu_as_abs_simplify,
)
def parity_split() -> list[Pair]:
    pairs: list[Pair] = []
    for d, m in _ffn_sizes():
        A, w_o, x = (
            symbols("A", (d, m), real=True),
            symbols("a", (m,), real=True),
            symbols("x", (d,), real=True),
        )
        f = ReluFFN(A, w_o, SYMPY)
        half = (x @ (A @ w_o) + sum(w_o[k] * sp.Abs(x @ A[:, k]) for k in range(m))) / 2
        pairs += [(f(_one_token(x)), half), (f(_one_token(x)) - f(_one_token(-x)), x @ (A @ w_o))]
    return pairs


@identity(
    id="sec4.1/rescaling",
    scope="listed sizes: (d, m) = (1, 2), (2, 2), (2, 3), (3, 2)",
    paper="Sec. 4.1 (identifiability, beyond the paper)",
    statement=r"w_o^\top \mathrm{ReLU}((A D)^\top x) \text{ with } w_o \to D^{-1} w_o \text{ is unchanged},"
    r"\ D = \mathrm{diag}(s_k),\ s_k > 0",
    uses=("sec4.1/relu-as-abs",),
    assumptions="A real d x m, w_o real, s_k positive, x real; (d, m) in {(1, 2), (2, 2), (2, 3), (3, 2)}",
    simplifier=_relu_as_abs_simplify,
)
def rescaling() -> list[Pair]:
    pairs: list[Pair] = []
    for d, m in _ffn_sizes():
        A, w_o, x = (
            symbols("A", (d, m), real=True),
            symbols("a", (m,), real=True),
            symbols("x", (d,), real=True),
        )
        s = symbols("s", (m,), positive=True)
        pairs.append(
            (ReluFFN(A * s[None, :], w_o / s, SYMPY)(_one_token(x)), ReluFFN(A, w_o, SYMPY)(_one_token(x)))
        )
    return pairs


@identity(
    id="sec4.1/zero-sum-flip",
    scope="listed sizes: d = 2, m = 4",
    paper="Sec. 4.1 (identifiability, beyond the paper)",
    statement=r"\sum_{k \in S} a_k w_k = 0 \Rightarrow \text{flipping } w_k \to -w_k\ (k \in S)"
    r" \text{ leaves } f \text{ unchanged; e.g. } \mathrm{ReLU}(x_1) + \mathrm{ReLU}(x_2) + "
    r"\mathrm{ReLU}(-x_1 - x_2) = \mathrm{ReLU}(-x_1) + \mathrm{ReLU}(-x_2) + \mathrm{ReLU}(x_1 + x_2)",
    uses=("sec4.1/parity-split",),
    assumptions="d = 2, m = 4: w_1, w_2, w_4, a_1, a_2, a_4 real, a_3 nonzero, "
    "w_3 = -(a_1 w_1 + a_2 w_2) / a_3 (so S = {1, 2, 3} sums to 0); x real",
    simplifier=_relu_as_abs_simplify,
)
def zero_sum_flip() -> list[Pair]:
    x = symbols("x", (2,), real=True)
    W12, w4 = symbols("w", (2, 2), real=True), symbols("v", (2,), real=True)
    a = np.array(
        [
            *sp.symbols("a_1 a_2", real=True),
            sp.Symbol("a_3", real=True, nonzero=True),
            sp.Symbol("a_4", real=True),
        ],
        dtype=object,
    )
    w3 = -(a[0] * W12[:, 0] + a[1] * W12[:, 1]) / a[2]
    A = np.column_stack([W12[:, 0], W12[:, 1], w3, w4])
    flipped = A * np.array([-1, -1, -1, 1], dtype=object)[None, :]
    example = np.array([[1, 0, -1], [0, 1, -1]], dtype=object)
    ones = np.ones(3, dtype=object)
    return [
        (ReluFFN(A, a, SYMPY)(_one_token(x)), ReluFFN(flipped, a, SYMPY)(_one_token(x))),
        (ReluFFN(example, ones, SYMPY)(_one_token(x)), ReluFFN(-example, ones, SYMPY)(_one_token(x))),
    ]


#: Rational targets on which the canonical form and the whole FFN learner are proven exact:
#: parallel units merged, an antiparallel unit on the same hyperplane, a zero column and a
#: dead unit (a = 0); a zero-sum triple; an antiparallel pair cancelling to a linear term;
#: m < d; m > d.
EXACT_FFN_TARGETS: tuple[tuple[list, list], ...] = (
    ([[1, 2, -1, 0, 3, 1], [0, 4, -2, 0, 1, 2]], [1, sp.Rational(1, 2), -2, 5, 0, 3]),
    ([[1, 0, -1], [0, 1, -1]], [1, 1, 1]),
    ([[1, -1, 2], [1, -1, 0], [0, 0, 1]], [1, -1, 3]),
    ([[2], [1], [-1]], [-3]),
    ([[3, -1, 2, 1, -2], [1, 2, -3, 1, 1]], [1, -2, sp.Rational(1, 3), 2, -1]),
)


def _exact_target(k: int) -> tuple[np.ndarray, np.ndarray]:
    A, w_o = EXACT_FFN_TARGETS[k]
    return SYMPY.asarray(A), SYMPY.asarray(w_o)


@identity(
    id="sec4.1/canonical-form",
    scope="listed sizes: fixed rational targets, d = 2, 3",
    paper="Sec. 4.1 (identifiability, beyond the paper)",
    statement=r"w_o^\top \mathrm{ReLU}(A^\top x) = \tfrac12 u^\top x"
    r" + \tfrac12 \sum_{j=1}^{L} c_j |n_j^\top x|"
    r"\ \text{(canonical\_ffn: one } n_j \text{ per hyperplane, largest entry } +1)",
    uses=("sec4.1/parity-split", "sec4.1/rescaling", "sec4.1/zero-sum-flip"),
    assumptions="x real; the rational targets EXACT_FFN_TARGETS (merged, antiparallel, dead, zero-sum, "
    "cancelling units; m < d and m > d)",
    simplifier=_relu_as_abs_simplify,
)
def canonical_form() -> list[Pair]:
    pairs: list[Pair] = []
    for k in range(len(EXACT_FFN_TARGETS)):
        A, w_o = _exact_target(k)
        x = symbols("x", (A.shape[0],), real=True)
        u, N, c = canonical_ffn(A, w_o, SYMPY)
        pairs.append((evaluate_canonical(u, N, c, x), ReluFFN(A, w_o, SYMPY)(_one_token(x))))
    return pairs


@identity(
    id="sec4.1/canonical-network",
    scope="listed sizes: (d, L) = (2, 1), (2, 3), (3, 2)",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"\tfrac12 u^\top x + \tfrac12 \sum_j c_j |n_j^\top x| = \sum_j c_j \mathrm{ReLU}(n_j^\top x)"
    r" + \mathrm{ReLU}(g^\top x) - \mathrm{ReLU}(-g^\top x),\ g = \tfrac12 (u - \textstyle\sum_j c_j n_j)",
    uses=("sec4.1/relu-as-abs",),
    assumptions="u, x real d-vectors, N real L x d, c real L-vector; (d, L) in {(2, 1), (2, 3), (3, 2)}",
    simplifier=_relu_as_abs_simplify,
)
def canonical_network() -> list[Pair]:
    pairs: list[Pair] = []
    for d, L in ((2, 1), (2, 3), (3, 2)):
        u, x = symbols("u", (d,), real=True), symbols("x", (d,), real=True)
        N, c = symbols("n", (L, d), real=True), symbols("c", (L,), real=True)
        rec = FFNRecovery(u, N, c, 0, SYMPY.name)
        pairs.append((ReluFFN(*rec.network(), SYMPY)(_one_token(x)), rec(x)))
    return pairs


class _LinearTarget:
    """f(x) = G^T x on one token: the FFN inside one region (for ``sec4.1/piece-gradient``)."""

    def __init__(self, G: np.ndarray) -> None:
        self.G, self.d, self.arith = G, G.shape[0], SYMPY

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=object)[:, 0, :] @ self.G


@identity(
    id="sec4.1/piece-gradient",
    scope="listed sizes: d = 1..4",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"f(x) = G^\top x \text{ near } x_0 \Rightarrow \frac{f(x_0 + h e_i) - f(x_0)}{h} = G_i"
    r"\ \text{and}\ G^\top x_0 - f(x_0) = 0 \ \text{(Euler: no bias)}",
    assumptions="G real d-vector (symbols), x0 rational; d = 1..4; the learner's own piece() in sympy",
)
def piece_gradient() -> list[Pair]:
    pairs: list[Pair] = []
    for d in range(1, 5):
        G = symbols("G", (d,), real=True)
        x0 = SYMPY.asarray([sp.Rational(3 * i + 1, 7) * (-1) ** i for i in range(d)])
        session = Session(ValueOracle(_LinearTarget(G)), SYMPY)
        search = _PathSearch(session, SYMPY.asarray(np.ones(d)), 2.0**-200, 10)
        p = search.piece(x0)
        pairs.extend(zip(p.G, G))
        pairs.append((p.G @ x0 - p.y, sp.Integer(0)))
    return pairs


@identity(
    id="sec4.1/kink-intersection",
    scope="listed sizes: d = 2, 3",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"G_b = G_a + \gamma n \Rightarrow s^* = -\frac{J^\top X_0}{J^\top \mathrm{dir}}"
    r"\ (J = G_b - G_a)"
    r"\ \text{has}\ n^\top x(s^*) = 0 \text{ and } G_a^\top x(s^*) = G_b^\top x(s^*)",
    assumptions="G_a, n, X0, dir real d-vectors, gamma real nonzero, n^T dir nonzero; d = 2, 3",
)
def kink_intersection() -> list[Pair]:
    pairs: list[Pair] = []
    for d in (2, 3):
        Ga, n, X0, direction = (symbols(name, (d,), real=True) for name in ("G", "n", "p", "q"))
        gamma = sp.Symbol("gamma", real=True, nonzero=True)
        Gb = Ga + gamma * n
        s = kink_parameter(Gb - Ga, X0, direction)
        x = X0 + s * direction
        pairs += [(n @ x, sp.Integer(0)), (Ga @ x, Gb @ x)]
    return pairs


@identity(
    id="sec4.1/canonical-from-jumps",
    scope="listed sizes: d = 2, 3",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"f = G_U^\top x + \sum_j \gamma_j \mathrm{ReLU}(s_j n_j^\top x),\ J_j = \gamma_j s_j n_j"
    r" \Rightarrow \mathrm{assemble}(G_U, G_U + \textstyle\sum_j J_j, \{J_j\}) \text{ evaluates to } f",
    uses=("sec4.1/parity-split",),
    assumptions="G_U, x real symbols; rational normals, kink weights gamma_j of both signs and path "
    "directions crossing each hyperplane both ways; d = 2 (L = 3) and d = 3 (L = 2)",
    simplifier=_relu_as_abs_simplify,
)
def canonical_from_jumps() -> list[Pair]:
    pairs: list[Pair] = []
    cases = (
        ([[1, 2], [-3, 1], [0, 1]], [2, sp.Rational(-1, 2), 3], [1, -1]),
        ([[1, 0, 2], [-1, 1, 1]], [sp.Rational(5, 3), -4], [-2, 1, 1]),
    )
    for normals, gammas, direction in cases:
        Nn, g, dvec = (SYMPY.asarray(a) for a in (normals, gammas, direction))
        d = Nn.shape[1]
        G0, x = symbols("G", (d,), real=True), symbols("x", (d,), real=True)
        s = [1 if float(n @ dvec) > 0 else -1 for n in Nn]
        units = [(g[j], s[j] * Nn[j]) for j in range(len(g))]
        f = G0 @ x + sum(gj * sp.Max(w @ x, 0) for gj, w in units)
        jumps = [(gj * w, dvec) for gj, w in units]
        u, N, c = assemble_canonical(G0, G0 + sum(J for J, _ in jumps), jumps, SYMPY)
        pairs.append((evaluate_canonical(u, N, c, x), f))
    return pairs


@identity(
    id="sec4.1/ffn-end-to-end",
    scope="listed sizes: fixed rational targets, d = 2, 3 (end to end)",
    paper="Sec. 4.1 (A_FFN, beyond the paper)",
    statement=r"\mathrm{learn\_ffn}(\mathrm{VQ}_f) = \mathrm{canonical\_ffn}(A, w_o) \text{ exactly, with }"
    r" (L + 1)(d + 1) + 3L + 4 + \text{extra (ledgered) queries}",
    uses=(
        "sec4.1/canonical-form",
        "sec4.1/piece-gradient",
        "sec4.1/kink-intersection",
        "sec4.1/canonical-from-jumps",
    ),
    assumptions="the rational targets EXACT_FFN_TARGETS, in sympy, path drawn with seed 0",
)
def ffn_end_to_end() -> list[Pair]:
    pairs: list[Pair] = []
    for k in range(len(EXACT_FFN_TARGETS)):
        A, w_o = _exact_target(k)
        rec = learn_ffn(ValueOracle(ReluFFN(A, w_o, SYMPY)), rng=np.random.default_rng(0), arith=SYMPY)
        u, N, c = canonical_ffn(A, w_o, SYMPY)
        if (
            N.shape != rec.N.shape
            or rec.queries != rec.diagnostics["queries_formula"] + rec.diagnostics["reasked_queries"]
        ):
            raise AssertionError(f"target {k}: {rec.N.shape[0]} hyperplanes for {N.shape[0]}, or a bad count")
        pairs += list(zip(rec.u, u)) + list(zip(rec.N.reshape(-1), N.reshape(-1))) + list(zip(rec.c, c))
    return pairs


@identity(
    id="sec4.1/cone-probe",
    scope="listed sizes: d = m = 2",
    paper="Sec. 4.1 (beyond the paper: W* when A w_o = 0)",
    statement=r"\mathrm{sign}(A^\top x_i) = \sigma\ (i = 1, 2) \Rightarrow \mathrm{TF}(X) = "
    r"g^\top \alpha(X, W)^\top X,\ g = A\, \mathrm{diag}(\sigma > 0)\, w_o",
    uses=("sec4.1/parity-split", "thm4.1/softmax-to-sigmoid"),
    assumptions="d = m = 2, W real 2 x 2, w_o real; tokens x_i = A^{-T} (sigma * r_i) with r_i positive, "
    "A = [[1, 2], [-1, 3]] (invertible); every sign pattern sigma",
    simplifier=_relu_as_abs_simplify,
)
def cone_probe() -> list[Pair]:
    pairs: list[Pair] = []
    A = SYMPY.asarray([[1, 2], [-1, 3]])
    A_invT = np.array(sp.Matrix(A.tolist()).T.inv().tolist(), dtype=object)
    W, w_o = symbols("W", (2, 2), real=True), symbols("a", (2,), real=True)
    r = symbols("r", (2, 2), positive=True)
    for sigma in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        sg = np.array(sigma, dtype=object)
        X = np.array([A_invT @ (sg * r[i]) for i in range(2)], dtype=object)
        g = A @ (np.array([1 if t > 0 else 0 for t in sigma], dtype=object) * w_o)
        alpha = attention_weights(X[None], W, SYMPY)[0]
        pairs.append((OneLayerTransformer(W, A, w_o, SYMPY)(X), g @ (alpha @ X)))
    return pairs


@identity(
    id="sec4.1/cone-linear-map",
    scope="listed sizes: d = 2, N = 1..3",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"s_i(X M^\top, W) = s_i(X, M^\top W M),\ \text{so}\ g^\top \alpha(X M^\top, W)^\top X M^\top"
    r" = f_{M^\top W M,\, M^\top g}(X)",
    uses=("sec4.1/cone-probe",),
    assumptions="W, M real 2 x 2, g real, X real N x 2; N = 1, 2, 3",
)
def cone_linear_map() -> list[Pair]:
    pairs: list[Pair] = []
    W, M, g = symbols("W", (2, 2), real=True), symbols("M", (2, 2), real=True), symbols("g", (2,), real=True)
    for N in (1, 2, 3):
        X = symbols("X", (N, 2), real=True)
        Y = X @ M.T
        pairs.extend(zip(scores(Y[None], W)[0], scores(X[None], M.T @ W @ M)[0]))
        alpha = attention_weights(Y[None], W, SYMPY)[0]
        pairs.append((g @ (alpha @ Y), Attention(M.T @ W @ M, M.T @ g, SYMPY)(X)))
    return pairs


def _transformer_end_to_end(A: list, w_o: list, route: str) -> list[Pair]:
    """learn_transformer in sympy on symbolic W and a rational FFN."""
    W = symbols("W", (2, 2), real=True)
    A, w_o = SYMPY.asarray(A), SYMPY.asarray(w_o)
    oracle = ValueOracle(OneLayerTransformer(W, A, w_o, SYMPY))
    rec = learn_transformer(oracle, rng=np.random.default_rng(1), arith=SYMPY, probes="basis")
    if (
        rec.diagnostics["route"] != route
        or rec.queries != rec.diagnostics["queries_formula"] + rec.diagnostics["reasked_queries"]
    ):
        raise AssertionError(f"route {rec.diagnostics['route']} (expected {route}) or a bad count")
    return list(zip(rec.W.reshape(-1), W.reshape(-1)))


@identity(
    id="sec4.1/end-to-end",
    scope="listed sizes: d = 2 (end to end)",
    paper="Sec. 4.1",
    statement=r"\mathrm{learn\_transformer}(\mathrm{VQ}_{\mathrm{TF}}) = W \text{ exactly: by VQ}\sim"
    r"\ (A w_o \neq 0) \text{ and by cone probes } (A w_o = 0,\ \mathrm{VQ}\sim\ \equiv 0)",
    uses=(
        "sec4.1/relu-antisymmetry",
        "sec4.1/ffn-end-to-end",
        "sec4.1/cone-linear-map",
        "thm4.1/end-to-end-d2",
    ),
    assumptions="d = 2, W: 4 real symbols; FFN A = [[1, -1, 2], [1, 1, 0]], w_o = (1, -2, 1) (u != 0) "
    "and the "
    "even FFN A = [[1, -1], [2, -2]], w_o = (1, 1) (u = 0)",
)
def end_to_end() -> list[Pair]:
    return _transformer_end_to_end(
        [[1, -1, 2], [1, 1, 0]], [1, -2, 1], "antisymmetric"
    ) + _transformer_end_to_end([[1, -1], [2, -2]], [1, 1], "cone")


#: Digits of ``sec4.1/run-high-precision``; the errors must lie below 10^-(RUN_DPS - 10).
RUN_DPS = 50


@run(
    id="sec4.1/run-high-precision",
    paper="Sec. 4.1",
    statement=r"\mathrm{learn\_transformer}\ \text{in mpmath (50 digits)}: \|\hat W - W^\star\| \le 10^{-40};"
    r"\ \text{in float64}: \le \text{its error\_bound}",
    uses=("sec4.1/end-to-end",),
    assumptions="W* = [[1, -1/2], [1/4, 3/4]] with the FFNs of sec4.1/end-to-end (u = A w_o != 0: the VQ~ "
    "route; the even FFN: the cone route), basis probes, path seed 1; mpmath at 50 digits and float64; "
    "queries = the learner's formula plus its reported re-asks",
    scope="listed sizes: d = 2 (fixed targets)",
)
def run_high_precision() -> list[Check]:
    W0 = [[1, sp.Rational(-1, 2)], [sp.Rational(1, 4), sp.Rational(3, 4)]]
    ffns = ((([[1, -1, 2], [1, 1, 0]], [1, -2, 1]), "antisymmetric"), (([[1, -1], [2, -2]], [1, 1]), "cone"))
    checks: list[Check] = []
    for arith, digits in ((MP(RUN_DPS), RUN_DPS - 10), (FLOAT64, None)):  # float64: its own bound
        for (A, w_o), route in ffns:
            truth = {"W": arith.asarray(W0)}
            model = OneLayerTransformer(truth["W"], arith.asarray(A), arith.asarray(w_o), arith)
            oracle = ValueOracle(model)
            rec = learn_transformer(oracle, rng=np.random.default_rng(1), arith=arith, probes="basis")
            at = f"{arith.name}, {route} route"
            checks += recovery_checks(at, rec, truth, arith, digits)
            info = rec.diagnostics
            checks += [
                (f"{at}: route taken is {route} (1 if not)", float(info["route"] != route), 0),
                (f"{at}: queries - (formula + re-asked)",
                 abs(rec.queries - info["queries_formula"] - info["reasked_queries"]), 0),
            ]
    return checks


#: Targets of ``sec4.1/run-bound-tight``: W*, A, w_o, the path seed, the route they take and the
#: slack: each bound is pinned from below (a dropped factor fails: the error exceeds it) and
#: from above (at most slack times the error).
TIGHT_TARGETS: tuple[tuple[list, list, list, int, str, float], ...] = (
    # ReLU(3/16 x) - 0.99 ReLU(3/16 x): the oracle rounds at the units' scale, 199 times f's
    ([[0.3]], [[0.1875, 0.1875]], [1.0, -0.99], 0, "antisymmetric", 1e3),
    # an even FFN (A = [B, -B], w_o = [a, a]) plus a unit of weight 1e-9 whose kink, omitted by the
    # FFN learner (2 hyperplanes of 3), the cone crosses: the error is 7.7e-9, the bound 2.6e-5
    # (3.4e3 times it), without the FFN's own error 8.5e-10 (path seed 21).  Seed 11 before (slack
    # 1e5): since float64's search probes the intervals it drops as kink-free (Tuning.wedge_log2),
    # they meet the tiny kink there, bound 1.9e-5 for an error of 9.0e-10 (2.1e4 times it; 2.1e5
    # while a duplicate piece's half was dropped and booked).  Seeds 0-24 measured: 5 fail without
    # the FFN's error (11, 12, 18, 19, 21; bound / error 2.1e4, 2.7e4, 2.6e4, 2.4e4, 3.4e3); the
    # others' cones meet no such kink within their errors (error 1e-14 .. 5e-12) or the bound
    # covers them without it
    ([[-0.2, -0.16, -0.39], [-0.61, -0.23, 0.28], [-0.14, 0.55, -0.12]],
     [[2.04, -2.56, -2.04, 2.56, -0.87], [0.42, -0.57, -0.42, 0.57, 3.32], [-0.45, -0.22, 0.45, 0.22, 0.23]],
     [-2.02, -0.23, -2.02, -0.23, 1e-9], 21, "cone", 1e4),
)
@run(
    id="sec4.1/run-bound-tight",
    paper="Sec. 4.1",
    statement=r"\mathrm{learn\_transformer}\ \text{in float64}: "
    r"\|\hat W - W^\star\|_F \le \text{error\_bound}"
    r" \le \text{slack}\, \|\hat W - W^\star\|_F\ \text{at targets where the bound is nearly attained}",
    uses=("sec4.1/run-high-precision",),
    assumptions="TIGHT_TARGETS (slack 1e3 and 1e4): units cancelling to 1/199 of f (the VQ~ route; "
    "without the units' rounding in the bound, or without the reduction factor, the error exceeds it); "
    "an even FFN plus a 1e-9 unit whose omitted kink the cone crosses (without the FFN's own error in "
    "the bound, the error exceeds it); "
    "float64, Gaussian probes (VQ~) and basis probes (cone)",
    scope="listed sizes: d = 1, 3 (fixed targets)",
)
def run_bound_tight() -> list[Check]:
    checks: list[Check] = []
    for W, A, w_o, seed, route, slack in TIGHT_TARGETS:
        W0 = FLOAT64.asarray(W)
        oracle = ValueOracle(OneLayerTransformer(W0, FLOAT64.asarray(A), FLOAT64.asarray(w_o), FLOAT64))
        rec = learn_transformer(oracle, rng=np.random.default_rng(seed))
        at = f"d = {len(W)}, {route} route"
        err, bound = FLOAT64.norm(rec.W - W0), rec.diagnostics["error_bound"]
        # ratios against constants: the hashed allowed values never carry measured last bits
        checks += [
            (f"{at}: route taken is {route} (1 if not)", float(rec.diagnostics["route"] != route), 0),
            (f"{at}: ||W_hat - W*||_F / error_bound <= 1", err / bound, 1.0),
            (f"{at}: error_bound / ||W_hat - W*||_F <= {slack:g}", bound / err, slack),
        ]
    return checks
