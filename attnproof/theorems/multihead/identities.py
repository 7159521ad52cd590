"""The identities and runs of Sec. 7 and App. C: each runs the room's own code in sympy, or
end to end in mpmath and float64 (the runs)."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np
import sympy as sp

from ...arith import FLOAT64, MP, SYMPY, Arith
from ...models import Attention, MultiHeadAttention
from ...oracles import ValueOracle
from ...verify.checkers import expand_matrix
from ...verify.enclosures import own_certificate
from ...verify.formulas import paper_head, recovery_checks, symbols
from ...verify.registry import LEARNERS, RunCheck as Check, Pair, bound, identity, run_check as run
from ...recovery import Recovery
from .maps import cayley_bases, flip_heads, lift, reduced_parameters
from .oracle import ReducedOracle
from .orthogonal import learn_orthogonal_heads
from .sbd import commutator_map, hessian_probe, learn_multihead_sbd, min_hessians, probe_hessian


def _sym_heads(d: int, H: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """H heads with fully symbolic (W^(h), v^(h))."""
    return [
        (symbols(f"W{h + 1}", (d, d), real=True), symbols(f"v{h + 1}", (d,), real=True)) for h in range(H)
    ]


def _mha(heads: list[tuple[Any, Any]], X: np.ndarray) -> sp.Expr:
    return MultiHeadAttention(heads, SYMPY)(X)


@identity(
    id="prop7.1/multihead-collapse",
    paper="Prop. 7.1",
    statement=r"W^{(h)} = A,\ v^{(h)} = \lambda_h b,\ \textstyle\sum_h \lambda_h = 1 \Rightarrow "
    r"\sum_{h=1}^H \alpha(X, W^{(h)})^\top X v^{(h)} = \alpha(X, A)^\top X b"
    r"\ \text{for every such}\ \lambda",
    assumptions="A real d x d, b real d-vector, X real N x d, lambda_1..lambda_{H-1} real symbols "
    "and lambda_H = 1 - sum of the others (the identity holds for every real lambda on the "
    "hyperplane, the paper's simplex included); left: the library's MultiHeadAttention; right: "
    "the single head written from Sec. 3 (proof.paper_head), not the library's model; "
    "(d, N, H) in {(2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)}",
    scope="listed sizes: (d, N, H) = (2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)",
)
def multihead_collapse() -> list[Pair]:
    pairs: list[Pair] = []
    for d, N, H in ((2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)):
        A, b, X = (
            symbols("A", (d, d), real=True),
            symbols("b", (d,), real=True),
            symbols("X", (N, d), real=True),
        )
        lam = list(sp.symbols(f"lambda_1:{H}", real=True))
        lam.append(1 - sum(lam))
        heads = [(A, l * b) for l in lam]
        pairs.append((MultiHeadAttention(heads, SYMPY)(X), paper_head(A, b, X)))
    return pairs


@identity(
    id="prop7.1/collapse-all-d",
    paper="Prop. 7.1",
    statement=r"\forall d, N, H:\ \alpha^\top X (\lambda b) + \alpha^\top X (\mu b) = "
    r"\alpha^\top X ((\lambda + \mu) b)\ \text{(two heads with the same } W = A \text{ merge), so by "
    r"induction on } H\ \sum_{h=1}^H \alpha(X, A)^\top X (\lambda_h b) = "
    r"\alpha(X, A)^\top X \big(\textstyle\sum_h \lambda_h\big) b = \alpha(X, A)^\top X b",
    simplifier=expand_matrix,
    assumptions="alpha = alpha(X, A) an N x 1, X an N x d, b a d x 1 MatrixSymbol of symbolic sizes; "
    "lambda, mu real (every head shares alpha, since it shares W = A); H - 1 merges of the induction, "
    "then sum_h lambda_h = 1; the library's model at listed (d, N, H): prop7.1/multihead-collapse",
    scope="all d (and every N, H: MatrixSymbol algebra and induction on H)",
)
def collapse_all_d() -> list[Pair]:
    d, N = sp.symbols("d N", integer=True, positive=True)
    alpha, X, b = sp.MatrixSymbol("alpha", N, 1), sp.MatrixSymbol("X", N, d), sp.MatrixSymbol("b", d, 1)
    lam, mu = sp.symbols("lambda mu", real=True)
    return [(alpha.T * X * (lam * b) + alpha.T * X * (mu * b), alpha.T * X * ((lam + mu) * b))]


@identity(
    id="prop7.1/symmetries",
    scope="listed sizes: d = 2, N = 3, H <= 3",
    paper="Prop. 7.1 (beyond the paper: the other exact symmetries)",
    statement=r"f^H \text{ is unchanged by } (\mathrm{i})\ \text{permuting heads},\ "
    r"(\mathrm{ii})\ (W, v) \to (W, a v), (W, (1 - a) v)\ "
    r"(a \in \mathbb{R};\ \text{read backwards: merging}),\ "
    r"(\mathrm{iii})\ \text{adding a head } (W', 0)\ \text{with any } W'",
    assumptions="all W, W', v, X, a real symbols; d = 2, N = 3, H = 3 for (i), 1 -> 2 for (ii), "
    "1 -> 2 for (iii)",
)
def multihead_symmetries() -> list[Pair]:
    d, N = 2, 3
    X = symbols("X", (N, d), real=True)
    (W1, v1), (W2, v2), (W3, v3) = _sym_heads(d, 3)
    a = sp.Symbol("a", real=True)
    zero = np.array([sp.Integer(0)] * d, dtype=object)
    return [
        (_mha([(W1, v1), (W2, v2), (W3, v3)], X), _mha([(W3, v3), (W1, v1), (W2, v2)], X)),
        (_mha([(W1, v1)], X), _mha([(W1, a * v1), (W1, (1 - a) * v1)], X)),
        (_mha([(W1, v1)], X), _mha([(W1, v1), (W2, zero)], X)),
    ]


def _phi(t: sp.Expr) -> sp.Expr:
    """phi = sigma - 1/2, the odd part of the sigmoid."""
    return 1 / (1 + sp.exp(-t)) - sp.Rational(1, 2)


@identity(
    id="sec7/short-input-decomposition",
    scope="listed sizes: H = 2, d = 1..3",
    paper="Sec. 7 (new: what inputs of length <= 2 see)",
    statement=r"f^H([x^\top]) = x^\top \textstyle\sum_h v^{(h)},\quad "
    r"f^H\!\left(\begin{bmatrix}x_1^\top \\ x_2^\top\end{bmatrix}\right) = "
    r"\tfrac12 (x_1 + x_2)^\top \textstyle\sum_h v^{(h)} \\ "
    r"+ \textstyle\sum_h \phi\big((x_1 - x_2)^\top W^{(h)} x_2\big)\,(x_1 - x_2)^\top v^{(h)},"
    r"\quad \phi = \sigma - \tfrac12 \text{ odd}",
    uses=("thm4.1/softmax-to-sigmoid",),
    assumptions="W^(h) real d x d, v^(h), x, x_1, x_2 real d-vectors; H = 2, d = 1..3",
)
def short_input_decomposition() -> list[Pair]:
    pairs: list[Pair] = []
    for d in range(1, 4):
        heads = _sym_heads(d, 2)
        x1, x2 = symbols("x1", (d,), real=True), symbols("x2", (d,), real=True)
        vsum = sum((v for _, v in heads), np.zeros(d, dtype=int))
        pairs.append((_mha(heads, x1[None, :]), x1 @ vsum))
        rhs = (x1 + x2) @ vsum / 2 + sum(_phi((x1 - x2) @ W @ x2) * ((x1 - x2) @ v) for W, v in heads)
        pairs.append((_mha(heads, np.array([x1, x2])), rhs))
    return pairs


@identity(
    id="sec7/short-input-flip",
    scope="listed sizes: d = 2, H = 2",
    paper="Sec. 7 (new: the length-<=2 symmetry group)",
    statement=r"N \le 2:\ f^H_{\{(W_h, v_h)\}}(X) = "
    r"f^{H+1}_{\{(s_h W_h,\, s_h v_h)\} \cup \{(0,\, 2\sum_{h \in S} v_h)\}}(X),"
    r"\ s_h = -1 \text{ on } S,\ +1 \text{ off } S",
    uses=("sec7/short-input-decomposition",),
    assumptions="W_h real d x d, v_h, x_1, x_2 real; d = 2, H = 2, every non-empty S, N = 1 and 2; "
    "the right-hand side is built by the library's flip_heads",
)
def short_input_flip() -> list[Pair]:
    d = 2
    heads = _sym_heads(d, 2)
    X = symbols("x", (2, d), real=True)
    pairs: list[Pair] = []
    for S in ({0}, {1}, {0, 1}):
        flipped = flip_heads(heads, S)
        for N in (1, 2):
            pairs.append((_mha(heads, X[:N]), _mha(flipped, X[:N])))
    return pairs


@identity(
    id="sec7/short-input-collapse",
    scope="listed sizes: d = 1..3, N = 1, 2",
    paper="Sec. 7 (new: short inputs identify even less)",
    statement=r"N \le 2:\ \alpha(X, W)^\top X v + \alpha(X, -W)^\top X v = \alpha(X, 0)^\top X (2v) "
    r"= \tfrac{2}{N} \textstyle\sum_i x_i^\top v \quad (\sigma(s) + \sigma(-s) = 1)",
    uses=("sec7/short-input-flip",),
    assumptions="W real d x d, v, x_i real d-vectors; N = 1, 2 and d = 1..3 (at N = 3 the two sides "
    "differ: property test)",
)
def short_input_collapse() -> list[Pair]:
    pairs: list[Pair] = []
    for d in range(1, 4):
        W, v = symbols("W", (d, d), real=True), symbols("v", (d,), real=True)
        zero = np.full((d, d), sp.Integer(0), dtype=object)
        for N in (1, 2):
            X = symbols("x", (N, d), real=True)
            pairs.append((_mha([(W, v), (-W, v)], X), Attention(zero, 2 * v, SYMPY)(X)))
            pairs.append((Attention(zero, 2 * v, SYMPY)(X), sp.Rational(2, N) * sum(X @ v)))
    return pairs


#: Exactly orthonormal rational bases (columns): d = 3 split 1 + 2, d = 4 split 2 + 2.
_Q3 = np.array([[2, -1, 2], [2, 2, -1], [-1, 2, 2]], dtype=object) * sp.Rational(1, 3)
_Q4 = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]], dtype=object) * sp.Rational(
    1, 2
)
_C1_CASES = ((_Q3, (1, 2)), (_Q4, (2, 2)))


def _c1_target(Q: np.ndarray, dims: tuple[int, ...]) -> tuple[list, list, list]:
    """Bases E_h, reduced symbolic parameters (W~_h, v~_h) and the C.1 heads (E W~ E^T, E v~)."""
    cuts = np.cumsum([0, *dims])
    Es = [Q[:, a:b] for a, b in itertools.pairwise(cuts)]
    red = [
        (symbols(f"B{h + 1}", (n, n), real=True), symbols(f"c{h + 1}", (n,), real=True, nonzero=True))
        for h, n in enumerate(dims)
    ]
    return Es, red, [lift(Wt, vt, E) for (Wt, vt), E in zip(red, Es)]


@identity(
    id="propC.2/one-head",
    scope="listed sizes: d = 3 (split 1 + 2), d = 4 (split 2 + 2)",
    paper="Prop. C.2, proof",
    statement=r"\text{rows of } X \text{ in } U_h \Rightarrow "
    r"f^H_{W,v}(X) = \alpha(X, W^{(h)})^\top X v^{(h)}",
    assumptions="C.1 heads W^(h) = E_h B_h E_h^T, v^(h) = E_h c_h with symbolic B_h, c_h and exactly "
    "orthonormal rational E_h (d = 3 split 1 + 2, d = 4 split 2 + 2); X = Z E_h^T, Z symbolic, N = 2, 3",
)
def one_head() -> list[Pair]:
    pairs: list[Pair] = []
    for Q, dims in _C1_CASES:
        Es, _, heads = _c1_target(Q, dims)
        for E, (W, v) in zip(Es, heads):
            for N in (2, 3):
                X = symbols("z", (N, E.shape[1]), real=True) @ E.T
                pairs.append((_mha(heads, X), Attention(W, v, SYMPY)(X)))
    return pairs


@identity(
    id="propC.2/reduced-head",
    scope="listed sizes: d = 3 (split 1 + 2), d = 4 (split 2 + 2)",
    paper="Prop. C.2, proof",
    statement=r"\mathrm{VQ}(Z E_h^\top) = \alpha(Z, \widetilde W^{(h)})^\top Z \widetilde v^{(h)},\quad "
    r"\widetilde W^{(h)} = E_h^\top W^{(h)} E_h,\ \widetilde v^{(h)} = E_h^\top v^{(h)}",
    uses=("propC.2/one-head",),
    assumptions="as propC.2/one-head with N = 2 (the lengths the learner asks; N = 3 is covered by "
    "propC.2/one-head); the left side is asked through the library's ReducedOracle, the reduced "
    "parameters computed by reduced_parameters",
)
def reduced_head() -> list[Pair]:
    pairs: list[Pair] = []
    for Q, dims in _C1_CASES:
        Es, red, heads = _c1_target(Q, dims)
        oracle = ValueOracle(MultiHeadAttention(heads, SYMPY))
        for E, (Wt, vt), (W, v) in zip(Es, red, heads):
            Wr, vr = reduced_parameters(W, v, E)
            pairs.extend(zip(Wr.reshape(-1), Wt.reshape(-1)))
            pairs.extend(zip(vr, vt))
            Z = symbols("z", (2, E.shape[1]), real=True)
            pairs.append((ReducedOracle(oracle, E)(Z), Attention(Wt, vt, SYMPY)(Z)))
    return pairs


@identity(
    id="propC.2/end-to-end",
    scope="listed sizes: d = 3 split 1 + 2 (end to end)",
    paper="Prop. C.2",
    statement=r"\mathrm{learn\_orthogonal\_heads}(\mathrm{VQ}, (E_h)_h) = (W^{(h)}, v^{(h)})_h "
    r"\text{ exactly, with } \textstyle\sum_h (d_h + d_h^2) \text{ queries}",
    uses=("propC.2/reduced-head", "thm4.1/end-to-end-d2"),
    assumptions="C.1 target with symbolic reduced parameters (B_h real, c_h nonzero real), d = 3 split "
    "1 + 2 with the exactly orthonormal rational basis; basis probes, no check queries",
)
def end_to_end() -> list[Pair]:
    Es, _, heads = _c1_target(*_C1_CASES[0])
    oracle = ValueOracle(MultiHeadAttention(heads, SYMPY))
    rec = learn_orthogonal_heads(oracle, Es, arith=SYMPY, checks=0, certify=False)
    expected = sum(E.shape[1] + E.shape[1] ** 2 for E in Es)
    if rec.queries != expected or oracle.queries != expected:
        raise AssertionError(f"learner used {rec.queries} queries, expected sum_h (d_h + d_h^2) = {expected}")
    pairs: list[Pair] = []
    for got, (W, v) in zip(rec.heads, heads):
        pairs.extend(zip(got.W.reshape(-1), W.reshape(-1)))
        pairs.extend(zip(got.v, v))
    return pairs


def _model_hessian(heads: list, q: np.ndarray, z: np.ndarray) -> sp.Matrix:
    """sympy's Hessian in z of the library's model on App. C's probe (the constant q^T sum v drops)."""
    return sp.hessian(_mha(heads, hessian_probe(z, q)), list(z))


@identity(
    id="sec7/probe-hessian",
    scope="listed sizes: (d, H) = (1, 2), (2, 1)",
    paper="App. C, conjecture",
    statement=r"\nabla_z^2 F(z) = U D_2 U^\top + U D_1 V^\top + V D_1 U^\top,\ "
    r"D_1 = \mathrm{Diag}(\sigma'(U^\top z)),\ D_2 = \mathrm{Diag}(\sigma''(U^\top z) \odot V^\top z)",
    assumptions="F(z) = f([(z + q)^T; q^T]), W^(h) real d x d, v^(h), z real; q = e_1 (the paper's probe); "
    "(d, H) = (1, 2) (the sum over heads) and (2, 1) (the matrix structure); right side: probe_hessian",
)
def probe_hessian_identity() -> list[Pair]:
    pairs: list[Pair] = []
    for d, H in ((1, 2), (2, 1)):
        heads = _sym_heads(d, H)
        z = symbols("z", (d,), real=True)
        q = np.eye(d, dtype=int).astype(object)[0]
        lhs = _model_hessian(heads, q, z)
        rhs = probe_hessian(heads, q, z, SYMPY)
        pairs.extend((lhs[a, b], rhs[a, b]) for a in range(d) for b in range(a, d))
    return pairs


@identity(
    id="sec7/hessian-at-zero",
    scope="listed sizes: d = 3, H = 2",
    paper="App. C, conjecture",
    statement=r"4 \nabla_z^2 F(0) = U^{(j)} V^\top + V (U^{(j)})^\top,\quad U^{(j)} = [W^{(h)} e_j]_h",
    uses=("sec7/probe-hessian",),
    assumptions="W^(h) real d x d, v^(h) real; d = 3, H = 2, every j; "
    "left side: sympy's Hessian of the model",
)
def hessian_at_zero() -> list[Pair]:
    d = 3
    heads = _sym_heads(d, 2)
    z = symbols("z", (d,), real=True)
    I = np.eye(d, dtype=int).astype(object)
    V = np.stack([v for _, v in heads], axis=1)
    pairs: list[Pair] = []
    for j in range(d):
        U = np.stack([W @ I[j] for W, _ in heads], axis=1)
        Hz = _model_hessian(heads, I[j], z).subs({s: 0 for s in z})
        rhs = U @ V.T + V @ U.T
        pairs.extend((4 * Hz[a, b], rhs[a, b]) for a in range(d) for b in range(d))
    return pairs


@identity(
    id="sec7/hessian-invariant",
    scope="listed sizes: d = 3 (split 1 + 2), d = 4 (split 2 + 2)",
    paper="App. C, conjecture",
    statement=r"\text{C.1} \Rightarrow E_g^\top \nabla_z^2 F(z) E_h = 0 \ (g \ne h) \text{ for every } z:"
    r"\ \text{every Hessian leaves every } U_h \text{ invariant}",
    uses=("sec7/probe-hessian",),
    simplifier=lambda e: sp.expand(e.xreplace({a: sp.Dummy() for a in e.atoms(sp.exp)})),  # E_g^T E_h = 0
    assumptions="C.1 heads with symbolic reduced parameters and exactly orthonormal rational bases "
    "(d = 3 split 1 + 2, d = 4 split 2 + 2); z symbolic, q = e_1; the Hessian from probe_hessian; "
    "simplified with every exp(.) an opaque symbol (so the zeros hold for any values of the sigmoids)",
)
def hessian_invariant() -> list[Pair]:
    pairs: list[Pair] = []
    for Q, dims in _C1_CASES:
        Es, _, heads = _c1_target(Q, dims)
        d = Q.shape[0]
        A = probe_hessian(heads, np.eye(d, dtype=int).astype(object)[0], symbols("z", (d,), real=True), SYMPY)
        for g, Eg in enumerate(Es):
            for h, Eh in enumerate(Es):
                if g != h:
                    pairs.extend((x, sp.Integer(0)) for x in (Eg.T @ A @ Eh).reshape(-1))
    return pairs


#: Digits of ``propC.2/run-high-precision``; the errors must lie below 10^-(RUN_DPS - 10).
RUN_DPS = 50


def _rational_head(n: int, k: int) -> tuple[list, list]:
    """A fixed rational reduced head (W~, v~) of width n, the k-th of a target."""
    W = [[sp.Rational(k + 2 * i - j + 1, 3) for j in range(n)] for i in range(n)]
    return W, [sp.Rational(2 * i - k, 2) + 1 for i in range(n)]


def _run_target(Q: np.ndarray, dims: tuple[int, ...], arith: Arith) -> tuple[list, list]:
    """The bases E_h of a C.1 case and its heads lifted from :func:`_rational_head`, in ``arith``."""
    with arith.context():
        Es = [arith.asarray(Q)[:, a:b] for a, b in itertools.pairwise(np.cumsum([0, *dims]))]
        heads = [lift(*(arith.asarray(x) for x in _rational_head(n, k)), E)
                 for k, (n, E) in enumerate(zip(dims, Es))]
    return Es, heads


@run(
    id="propC.2/run-high-precision",
    paper="Prop. C.2",
    statement=r"\mathrm{learn\_orthogonal\_heads}\ \text{in mpmath (50 digits)}: \|\hat W^{(h)} - W^{(h)}\| "
    r"\le 10^{-40};\ \text{in float64}: \le \text{its error\_bound};\ \text{the checks pass}",
    uses=("propC.2/end-to-end",),
    assumptions="the C.1 targets of propC.2/one-head (d = 3 split 1 + 2, d = 4 split 2 + 2, exactly "
    "orthonormal rational bases) with fixed rational reduced heads, built inside the arithmetic's "
    "precision; Gaussian probes (seed 0) and the default 3 check queries; mpmath at 50 digits and float64",
    scope="listed sizes: d = 3, 4 (fixed targets)",
)
def run_high_precision() -> list[Check]:
    checks: list[Check] = []
    for arith, digits in ((MP(RUN_DPS), RUN_DPS - 10), (FLOAT64, None)):  # float64: within its bound
        for Q, dims in _C1_CASES:
            Es, heads = _run_target(Q, dims, arith)
            oracle = ValueOracle(MultiHeadAttention(heads, arith))
            rng = np.random.default_rng(0)
            rec = learn_orthogonal_heads(oracle, Es, probes="gaussian", rng=rng, arith=arith)
            for h, (got, (W, v)) in enumerate(zip(rec.heads, heads)):
                at = f"{arith.name}, d = {Q.shape[0]}, head {h + 1}"
                got_with_bound = Recovery(W=got.W, v=got.v, queries=got.queries, arith=got.arith,
                                          diagnostics={"error_bound": rec.diagnostics.get("error_bound")})
                checks += recovery_checks(at, got_with_bound, {"W": W, "v": v}, arith, digits)
            info = rec.diagnostics
            checks.append((f"{arith.name}, d = {Q.shape[0]}: queries - (formula + re-asked)",
                           abs(rec.queries - info["queries_formula"] - info["reasked_queries"]), 0))
    return checks


#: Head 2's v in ``propC.2/run-small-head`` is scaled by this (about 7.5e-9): its reduced oracle is
#: swamped by head 1's rounding, so the bound is the leak term's (issue 23, item 1).
SMALL_HEAD = 2.0**-27
#: ``propC.2/run-small-head``: the small head's bound may exceed its error by at most this (measured
#: 0.8e3-1.6e3 for seeds 0-2: the leak's worst case ``kappa`` is ~10 eps where rounding leaks ~1 eps).
SMALL_HEAD_TIGHTNESS = 1e4


@run(
    id="propC.2/run-small-head",
    paper="Prop. C.2",
    statement=r"\mathrm{learn\_orthogonal\_heads}\ \text{(float64), head 2's } v \text{ at } 2^{-27}:"
    r"\ \|\hat W^{(h)} - W^{(h)}\|_F \le b_h \le 10^4\,\|\hat W^{(2)} - W^{(2)}\|_F\ (h = 2),\ "
    r"\|\hat v^{(h)} - v^{(h)}\|_2 \le b^v_h",
    uses=("propC.2/run-high-precision",),
    assumptions="d = 4 split 2 + 2, bases from cayley_bases of a fixed rational S in float64 (orthonormal to "
    "rounding), heads lifted from the fixed rational reduced heads of propC.2/run-high-precision with head "
    "2's v scaled by 2^-27; Gaussian probes (seed 0), the default checks, certify=False (C.1 taken for "
    "the given bases: the bound's rounding part alone, no C.1 identities; with them a rotation below "
    "their resolution, ~1e-14, could move a head this small by ~1e-4, and the learner refuses it); b_h, "
    "b^v_h the learner's per-head error_bounds / error_bounds_v. The bound is nearly tight here (10^3 x "
    "the error) and made of the other head's rounding leak: dropping the reduced oracle's factor or the "
    "lift's term fails it",
    scope="listed sizes: d = 4 (a fixed target)",
)
def run_small_head() -> list[Check]:
    S = np.array([[(3 * i + 5 * j) % 7 - 3 for j in range(4)] for i in range(4)], dtype=float) / 2
    bases = cayley_bases([2, 2], S, FLOAT64)
    heads = []
    for k, E in enumerate(bases):
        W, v = (np.array(x, dtype=float) for x in _rational_head(2, k))
        heads.append(lift(W, v * (SMALL_HEAD if k else 1.0), E))
    rec = learn_orthogonal_heads(ValueOracle(MultiHeadAttention(heads)), bases, probes="gaussian",
                                 rng=np.random.default_rng(0), certify=False)
    info = rec.diagnostics
    checks: list[Check] = []
    for h, (got, (W, v)) in enumerate(zip(rec.heads, heads)):
        err_W = float(np.linalg.norm(got.W - W))
        # ratios against constants: the hashed allowed values never carry measured last bits
        checks += [(f"head {h + 1}: ||W_hat - W||_F / its bound <= 1", err_W / info["error_bounds"][h], 1.0),
                   (f"head {h + 1}: ||v_hat - v||_2 / its bound <= 1",
                    float(np.linalg.norm(got.v - v)) / info["error_bounds_v"][h], 1.0)]
    checks.append((f"head 2: its bound / ||W_hat - W||_F <= {SMALL_HEAD_TIGHTNESS:g}",
                   info["error_bounds"][1] / float(np.linalg.norm(rec.heads[1].W - heads[1][0])),
                   SMALL_HEAD_TIGHTNESS))
    return checks


#: ``propC.2/run-lift``: head 1's basis is ``(1 + LIFT_DEFECT) e_1`` (Gram defect ~2 LIFT_DEFECT, inside
#: check_bases' 64 d eps at d = 4), so the lift ``E W~ E^T`` errs by ~3 LIFT_DEFECT ||W~||: the lift's term.
LIFT_DEFECT = 15 * 2.0**-50
#: ``propC.2/run-lift``: head 1's bound may exceed its error by at most this (measured 1.84).
LIFT_TIGHTNESS = 4.0


@run(
    id="propC.2/run-lift",
    paper="Prop. C.2",
    statement=r"\mathrm{learn\_orthogonal\_heads}\ \text{(float64), head 1's basis } (1 + \delta) e_1,\ "
    r"\delta = 120\,u:\ \|\hat W^{(1)} - W^{(1)}\|_F \le b_1 \le 4\,\|\hat W^{(1)} - W^{(1)}\|_F",
    uses=("propC.2/run-small-head",),
    assumptions="d = 4 split 1 + 1 + 1 + 1, bases e_k with head 1's scaled by 1 + 15 * 2^-50 (u = 2^-53: a "
    "Gram defect of 240 u, accepted by check_bases), heads E_k w_k E_k^T, E_k v_k with w = (3/4, -1/2, -1/2, "
    "-1/2), v = (1, 2^-10, 2^-10, 2^-10); basis probes, the default checks, certify=False (C.1 taken for the "
    "given bases); b_1 the learner's error_bounds[0]. The lift's rounding and the bases' defect "
    "((2 d_h + 2) u + 2 gamma) ||W~||_F are 56 % of b_1 and the error is 3 delta ||W~||: dropping the lift's "
    "term fails it",
    scope="listed sizes: d = 4 (a fixed target)",
)
def run_lift() -> list[Check]:
    Es = [np.eye(4)[:, [k]] * ((1.0 + LIFT_DEFECT) if k == 0 else 1.0) for k in range(4)]
    heads = [lift(np.array([[0.75 if k == 0 else -0.5]]), np.array([1.0 if k == 0 else 2.0**-10]), E)
             for k, E in enumerate(Es)]
    rec = learn_orthogonal_heads(ValueOracle(MultiHeadAttention(heads)), Es, certify=False)
    err_W = float(np.linalg.norm(rec.heads[0].W - heads[0][0]))
    bound = rec.diagnostics["error_bounds"][0]
    # ratios against constants: the hashed allowed values never carry measured last bits
    return [("head 1: ||W_hat - W||_F / its bound <= 1", err_W / bound, 1.0),
            (f"head 1: its bound / ||W_hat - W||_F <= {LIFT_TIGHTNESS:g}", bound / err_W, LIFT_TIGHTNESS)]


def _matched_errors(found: tuple[Recovery, ...], heads: list, arith: Arith) -> list[tuple[Any, Any]]:
    """``(||W_hat - W||_F, ||v_hat - v||_2)`` per true head, the found heads matched to the true
    ones by the permutation with the smallest total error (the SBD returns blocks in any order)."""
    with arith.context():
        err = [[(arith.norm(g.W - W), arith.norm(g.v - v)) for g in found] for W, v in heads]
    if len(found) != len(heads):
        return [(float("inf"), float("inf"))] * len(heads)
    best = min(itertools.permutations(range(len(heads))),
               key=lambda p: sum(float(err[t][f][0] + err[t][f][1]) for t, f in enumerate(p)))
    return [err[t][f] for t, f in enumerate(best)]


@run(
    id="sec7/run-sbd",
    paper="App. C, conjecture (learned)",
    statement=r"\mathrm{learn\_multihead\_sbd}:\ "
    r"\big(\textstyle\sum_h \|\hat W^{(h)} - W^{(h)}\|_F^2\big)^{1/2} \le b,\ "
    r"\big(\sum_h \|\hat v^{(h)} - v^{(h)}\|_2^2\big)^{1/2} \le b^v\ "
    r"\text{(its bounds, the blocks' rotation included)}\ "
    r"\text{in float64 and mpmath (30, 50 digits)},\ \text{the checks passing},\ "
    r"\text{with exactly the counted queries}",
    uses=("sec7/hessian-at-zero", "sec7/hessian-invariant", "propC.2/run-high-precision"),
    assumptions="the C.1 targets of propC.2/run-high-precision (d = 3 split 1 + 2, d = 4 split 2 + 2), the "
    "subspaces not given; K = max_h max(2, d_h - 1) Hessians (the necessity bound), seed 0, the learner's "
    "own step h ~ eps^(1/4); b, b^v the learner's error_bound, error_bound_v: Prop. C.2's per-head bounds "
    "plus the term of the blocks' rotation off the true subspaces that the C.1 identities cannot exclude "
    "(rotation.py: first order, the re-run learner's one-sided slopes measured); the heads matched to the "
    "true ones by the permutation of least error; the learner's held-out checks pass: worst residual / "
    "tolerance <= 1; queries = LEARNERS['multihead-sbd'].count plus the re-asked queries",
    scope="listed sizes: d = 3, 4 (fixed targets)",
)
def run_sbd() -> list[Check]:
    checks: list[Check] = []
    for arith in (FLOAT64, MP(30), MP(RUN_DPS)):
        for Q, dims in _C1_CASES:
            _, heads = _run_target(Q, dims, arith)
            K = max(min_hessians(n) for n in dims)
            oracle = ValueOracle(MultiHeadAttention(heads, arith))
            rec = learn_multihead_sbd(oracle, hessians=K, rng=np.random.default_rng(0), arith=arith)
            info = rec.diagnostics
            errors = _matched_errors(rec.heads, heads, arith)
            err_W = float(np.sqrt(sum(float(e) ** 2 for e, _ in errors)))
            err_v = float(np.sqrt(sum(float(e) ** 2 for _, e in errors)))
            at = f"{arith.name}, d = {Q.shape[0]}"
            count = LEARNERS["multihead-sbd"].count(d=Q.shape[0], H=len(dims), K=K, dims=dims)
            # ratios against constants: the hashed allowed values never carry measured last bits
            checks += [
                (f"{at}: sqrt(sum_h ||W_hat - W||_F^2) / error_bound <= 1", err_W / info["error_bound"], 1.0),
                (f"{at}: sqrt(sum_h ||v_hat - v||_2^2) / error_bound_v <= 1",
                 err_v / info["error_bound_v"], 1.0),
                (f"{at}: check residual / tolerance <= 1", info["check_residual"], 1),
                (f"{at}: queries - (count + re-asked)",
                 abs(rec.queries - count - info["reasked_queries"]), 0),
            ]
    return checks


# --- the Hessian count suffices for almost every target (issue 21, item 2) -------------------

#: The (H, d_h) patterns the bench's Hessian / SBD sweep covers (runner.multihead_sbd_table).
SUFFICIENCY_PATTERNS = ((2, 2), (3, 2), (2, 3), (3, 3), (2, 4), (3, 4), (2, 5), (2, 6))
#: The prime of the modular elimination that *chooses* the minor (the proof is its exact determinant).
_PRIME = 2**61 - 1
#: Householder reflections whose product is the point's rotation Q (few: small denominators).
REFLECTIONS = 6
#: Bits of the Arb enclosure of the minor.
_ARB_BITS = 256


def _lcg(n: int, seed: int) -> list[int]:
    """n small integers in [-9, 9] from a linear congruential generator: a fixed, reproducible
    parameter point with no structure (exact rational coordinates follow from them)."""
    out, x = [], seed
    for _ in range(n):
        x = (1103515245 * x + 12345) % 2**31
        out.append((x >> 16) % 19 - 9)
    return out


def _householder(u: list[int]) -> np.ndarray:
    """``I - 2 u u^T / u^T u`` with exact rational (fmpq) entries: an orthogonal reflection."""
    import flint

    uu = sum(x * x for x in u)
    d = len(u)
    return np.array([[flint.fmpq(int(i == j)) - flint.fmpq(2 * u[i] * u[j], uu) for j in range(d)]
                     for i in range(d)], dtype=object)


def sufficiency_point(H: int, d_h: int) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The parameter point of ``sec7/hessian-count-H<H>-dh<d_h>``: Q, a product of d Householder
    reflections of integer vectors (exactly orthogonal and rational), the bases ``E_h`` =
    consecutive column groups of Q, and heads
    ``(E_h W~_h E_h^T, E_h v~_h)`` with W~ in Z/4, v~ in Z/2 (non-zero), all fmpq object arrays."""
    import flint

    d = H * d_h
    Q = _householder([x or 1 for x in _lcg(d, 1)])
    for m in range(2, REFLECTIONS + 1):
        Q = Q @ _householder([x or 1 for x in _lcg(d, m)])
    heads = []
    for h in range(H):
        E = Q[:, h * d_h:(h + 1) * d_h]
        r = _lcg(d_h * d_h + d_h, 7 + h)
        Wt = np.array([flint.fmpq(x, 4) for x in r[:d_h * d_h]], dtype=object).reshape(d_h, d_h)
        vt = np.array([flint.fmpq(x or 1, 2) for x in r[d_h * d_h:]], dtype=object)
        heads.append(lift(Wt, vt, E))
    return Q, heads


def _rank_pivots(M: np.ndarray) -> tuple[list[int], list[int]]:
    """Rows and columns of a square submatrix of the fmpq matrix M of full rank modulo
    :data:`_PRIME`, as large as M's rank there: column pivots of M, then row pivots of those
    columns (flint's modular elimination; only a *choice*, the determinant decides)."""
    import flint

    def mod(A: np.ndarray) -> Any:
        vals = [int(x.p) % _PRIME * pow(int(x.q) % _PRIME, -1, _PRIME) % _PRIME for x in A.reshape(-1)]
        return flint.nmod_mat(A.shape[0], A.shape[1], vals, _PRIME)

    def pivots(A: np.ndarray) -> list[int]:
        R, r = mod(A).rref()
        return [next(j for j in range(A.shape[1]) if int(R[i, j])) for i in range(r)]

    cols = pivots(M)
    rows = pivots(M[:, cols].T)
    return rows, cols


def hessian_count_certificate(H: int, d_h: int, K: int | None = None) -> dict[str, Any]:
    """Certify at :func:`sufficiency_point` that K Hessians at z = 0 (q = e_1..e_K; default
    ``K = max(2, d_h - 1)``) have exactly the block algebra as symmetric commutant.

    The Hessians are ``A_k = U_k V^T + V U_k^T`` (4 times ``nabla^2 F(0)``, ``sec7/hessian-at-zero``),
    the commutant map M is :func:`~.sbd.commutator_map` (n = d(d + 1)/2 columns), and every
    ``P_h = E_h E_h^T`` is in its null space (checked exactly), so ``rank M <= n - H``; a non-zero
    ``(n - H)``-minor gives equality (with K below the necessity bound the largest non-zero minor
    is smaller).  Returns ``n``, ``rank`` (= the minor's size), ``det`` (the
    minor, exact fmpq), ``arb`` (its Arb enclosure at :data:`_ARB_BITS` bits) and ``null_residual``
    (the largest ``|M vec(P_h)|`` entry, exactly 0).
    """
    import flint

    Q, heads = sufficiency_point(H, d_h)
    K = max(2, d_h - 1) if K is None else K
    V = np.stack([v for _, v in heads], axis=1)
    As = []
    for k in range(K):
        U = np.stack([W[:, k] for W, _ in heads], axis=1)  # W^(h) e_k
        As.append(U @ V.T + V @ U.T)
    M, idx = commutator_map(As)
    null = max(abs(x) for h in range(H)
               for E in [Q[:, h * d_h:(h + 1) * d_h]]
               for x in M @ np.array([(E @ E.T)[a, b] for a, b in idx], dtype=object))
    rows, cols = _rank_pivots(M)
    minor = flint.fmpq_mat([[M[i, j] for j in cols] for i in rows])
    saved = flint.ctx.prec
    flint.ctx.prec = _ARB_BITS
    try:
        enclosure = flint.arb_mat(minor).det()
    finally:
        flint.ctx.prec = saved
    return {"n": len(idx), "rank": len(cols), "det": minor.det(), "arb": enclosure, "null_residual": null}


def _sufficiency_claims(H: int, d_h: int) -> list[Any]:
    """The bound claims of one pattern: the minor's size is ``n - H``, ``|det| - 2^-k >= 0`` exactly
    (sympy) and by the Arb enclosure (an mpmath.iv interval), and ``-max |M vec(P_h)| >= 0``."""
    c = hessian_count_certificate(H, d_h)
    p, q = int(c["det"].p), int(c["det"].q)
    k = q.bit_length() - abs(p).bit_length() + 2  # 2^-k <= |det| / 2 (0 < |p| / q)
    with FLOAT64.interval() as iv:
        lo, hi = (iv.mpf(int(x.man_exp()[0])) * iv.mpf(2) ** int(x.man_exp()[1])
                  for x in (c["arb"].abs_lower(), c["arb"].abs_upper()))
        enclosed = iv.mpf([lo.a, hi.b]) - iv.mpf(2) ** -k
    at = f"H = {H}, d_h = {d_h}, K = {max(2, d_h - 1)}"
    return [
        (f"{at}: minor size - (n - H) >= 0, n = {c['n']}", sp.Integer(c["rank"] - (c["n"] - H))),
        (f"{at}: |det| - 2^-{k} >= 0 (the exact rational minor)",
         sp.Abs(sp.Rational(p, q)) - sp.Integer(2) ** -k),
        (f"{at}: |det| - 2^-{k} >= 0 (Arb, {_ARB_BITS} bits)", enclosed),
        (f"{at}: -max_h |M vec(P_h)| >= 0 (the block algebra is in the null space)",
         -sp.Rational(int(c["null_residual"].p), int(c["null_residual"].q))),
    ]


for _H, _dh in SUFFICIENCY_PATTERNS:
    _K = max(2, _dh - 1)
    bound(
        id=f"sec7/hessian-count-H{_H}-dh{_dh}",
        paper="App. C, conjecture (new: the Hessian count suffices generically)",
        statement=rf"H = {_H},\ d_h = {_dh},\ K = \max(2, d_h - 1) = {_K}:\ "
        r"\{X = X^\top : X A_k = A_k X,\ k \le K\} = \mathrm{span}\{P_1, \dots, P_H\}"
        r"\ \text{for almost every C.1 target},\ A_k = \nabla_z^2 F(0) \text{ at } q = e_k",
        uses=("sec7/hessian-at-zero", "sec7/hessian-invariant"),
        assumptions="C.1 targets parameterised by (Q, W~_h, v~_h) in O(d) x R^N (E_h = consecutive column "
        "groups of Q, W^(h) = E_h W~_h E_h^T, v^(h) = E_h v~_h); A_k = U_k V^T + V U_k^T (4 nabla^2 F(0), "
        "sec7/hessian-at-zero), M = commutator_map(A_1..A_K) on symmetric X (n = d(d+1)/2 columns). "
        "Every P_h is in null(M) (claimed exactly here; sec7/hessian-invariant for every target), so "
        "rank M <= n - H; an (n - H)-minor of M is a polynomial in (Q, W~, v~), non-zero at the rational "
        "point sufficiency_point (exact determinant, and Arb encloses it away from 0), hence not "
        "identically 0 on the component of O(d) holding that point, nor on the other (a column sign of "
        "Q is the linear change (W~, v~) -> (D W~ D, D v~)): outside its zero set (Haar x Lebesgue "
        "measure zero) null(M) = span{P_h}, and the commutant SBD's generic element sum c_h P_h "
        "(distinct c_h, probability 1) has the U_h as eigenspaces. Necessity (proven in the room's "
        "docstring): K >= d_h - 1 (a common kernel), and K >= 2 for d_h >= 2 (one A has the "
        "eigenvalues u.v +- |u||v| on U_h); so K = max(2, d_h - 1) is the least count for almost "
        "every target of this pattern. The minor is chosen by modular elimination (p = 2^61 - 1); "
        "only its exact determinant decides",
        scope=f"listed sizes: H = {_H}, d_h = {_dh} (d = {_H * _dh}, K = {_K}); almost every parameter",
    )(functools.partial(_sufficiency_claims, _H, _dh))
    own_certificate("an exact rational minor, with its Arb ball in the entry",
                    f"sec7/hessian-count-H{_H}-dh{_dh}")  # no Arb re-run (verify.enclosures)
