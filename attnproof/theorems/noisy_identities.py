"""The identities and bounds behind Theorem 6.1 and Lemma A.1 (and Erratum E1)."""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from ..arith import SYMPY
from ..models import Attention, scores
from ..proof import Claim, Pair, bound, identity, symbols


def _sigma(t: sp.Expr) -> sp.Expr:
    return 1 / (1 + sp.exp(-t))


@bound(
    id="lemmaA.1/lipschitz-bound",
    paper="Lemma A.1",
    statement=r"\tau_{\mathrm{clip}} = \sigma(-\tfrac12),\quad L_{\tau_{\mathrm{clip}}} = "
    r"\frac{1}{\tau_{\mathrm{clip}}(1 - \tau_{\mathrm{clip}})} \le 5",
    assumptions="interval arithmetic (mpmath.iv) at 60 digits encloses 5 - L",
)
def lipschitz_bound() -> list[Claim]:
    iv = mpmath.iv
    saved = iv.dps
    iv.dps = 60
    try:
        tau = 1 / (1 + iv.exp(iv.mpf(1) / 2))
        L = 1 / (tau * (1 - tau))
        return [("5 - L >= 0", 5 - L), ("L - 4 >= 0 (the constant is not loose by more than 1)", L - 4)]
    finally:
        iv.dps = saved


@identity(
    id="lemmaA.1/logit-derivative",
    paper="Lemma A.1, proof",
    statement=r"\frac{d}{dp}\,\sigma^{-1}(p) = \frac{1}{p(1-p)} \ \text{on}\ (0, 1)",
    assumptions="p in (0, 1): p positive and 1 - p = q positive",
)
def logit_derivative() -> list[Pair]:
    p = sp.Symbol("p", positive=True)
    logit = SYMPY.logit(np.array([p], dtype=object))[0]
    q = sp.Symbol("q", positive=True)  # q = 1 - p > 0
    return [(sp.diff(logit, p).subs(p, 1 - q), 1 / ((1 - q) * q))]


@identity(
    id="lemmaA.1/lipschitz-closed-form",
    paper="Lemma A.1 (generalised)",
    statement=r"\frac{1}{\sigma(-\beta)\,(1 - \sigma(-\beta))} = 2 + 2\cosh\beta",
    assumptions="beta real",
)
def lipschitz_closed_form() -> list[Pair]:
    beta = sp.Symbol("beta", real=True)
    return [(1 / (_sigma(-beta) * (1 - _sigma(-beta))), (2 + 2 * sp.cosh(beta)).rewrite(sp.exp))]


@identity(
    id="thm6.1/probe-logit",
    paper="Thm 6.1, proof, Eqs. (3)-(4)",
    statement=r"X = \begin{bmatrix}(b u + a e_j)^\top \\ (a e_j)^\top\end{bmatrix} \Rightarrow "
    r"s_1 - s_2 = a b\, u^\top W e_j,\quad f_{W,v}(X) = a v_j + \sigma(a b\, u^\top W e_j)\, b\, u^\top v",
    uses=("thm4.1/softmax-to-sigmoid",),
    assumptions="W real d x d, u, v real d-vectors, a, b real; d = 1..3, every column j",
)
def probe_logit() -> list[Pair]:
    a, b = sp.symbols("a b", real=True)
    pairs: list[Pair] = []
    for d in range(1, 4):
        W, v, u = symbols("W", (d, d), real=True), symbols("v", (d,), real=True), symbols("u", (d,), real=True)
        for j in range(d):
            e = np.array([sp.Integer(int(k == j)) for k in range(d)], dtype=object)
            X = np.array([b * u + a * e, a * e], dtype=object)
            s = scores(X[None], W)[0]
            t = a * b * (u @ W[:, j])
            pairs.append((s[0] - s[1], t))
            pairs.append((Attention(W, v, SYMPY)(X), a * v[j] + _sigma(t) * b * (u @ v)))
    return pairs


@bound(
    id="thm6.1/tolerance-algebra",
    paper="Thm 6.1, proof",
    statement=r"\tau_f = \tau_v = \frac{\mu\epsilon_W}{80 W^2 d},\ W \ge 2 \Rightarrow "
    r"\frac{2W}{\mu}\tau_f + \frac{W+2}{\mu}\tau_v \le \frac{\epsilon_W}{10 W d}"
    r"\ \text{and}\ \frac{5}{ab}\cdot\frac{\epsilon_W}{10 W d} \le \frac{\epsilon_W}{d}\ (a = \tfrac12, b = \tfrac1W)",
    uses=("lemmaA.1/lipschitz-bound",),
    assumptions="mu, eps_W, d positive; W = 2 + s with s >= 0",
)
def tolerance_algebra() -> list[Claim]:
    mu, eps, d = sp.symbols("mu epsilon_W d", positive=True)
    s = sp.Symbol("s", nonnegative=True)
    W = 2 + s
    tau = mu * eps / (80 * W**2 * d)
    a, b = sp.Rational(1, 2), 1 / W
    slack_alpha = eps / (10 * W * d) - (2 * W / mu * tau + (W + 2) / mu * tau)
    slack_entry = eps / d - 5 / (a * b) * eps / (10 * W * d)
    return [
        ("|alpha_hat - alpha*| <= eps_W / (10 W d)", sp.factor(sp.simplify(slack_alpha))),
        ("L / (ab) * eps_W / (10 W d) <= eps_W / d", sp.simplify(slack_entry)),
    ]


@bound(
    id="thm6.1/erratum-E1",
    paper="Thm 6.1, proof, case v*_i = 0 (Erratum E1)",
    statement=r"W^\star = \begin{bmatrix}\sqrt2 & 0\\ \sqrt2 & 0\end{bmatrix},\ W = 2:\quad "
    r"\|W^\star\|_F \le W \ \text{but}\ a b\,(W^\star_{11} + W^\star_{21}) = \tfrac{\sqrt2}{2} > \tfrac12",
    assumptions="the paper's a = 1/2, b = 1/W; paired probe u = e_1 + e_2 (v*_1 = 0, p = 2)",
)
def erratum_e1() -> list[Claim]:
    W11 = W21 = sp.sqrt(2)
    W = sp.Integer(2)
    a, b = sp.Rational(1, 2), 1 / W
    return [
        ("||W*||_F <= W", W - sp.sqrt(W11**2 + W21**2)),
        ("the paired logit leaves the clipping band [-1/2, 1/2]", a * b * (W11 + W21) - sp.Rational(1, 2)),
    ]


@bound(
    id="thm6.1/paired-logit-corrected",
    paper="Thm 6.1, corrected (Erratum E1)",
    statement=r"b_{\mathrm{pair}} = \frac{b}{\sqrt2}:\quad |a\, b_{\mathrm{pair}} (W_{ij} + W_{pj})| "
    r"\le \frac{a b}{\sqrt2}\sqrt2\sqrt{W_{ij}^2 + W_{pj}^2} \le a b W = \beta",
    assumptions="X = |W_ij|, Y = |W_pj| non-negative; (X + Y)^2 <= 2 (X^2 + Y^2) (Cauchy-Schwarz); "
    "a = 1/2, b = 2 beta / W, W > 0",
)
def paired_logit_corrected() -> list[Claim]:
    X, Y = sp.symbols("X Y", nonnegative=True)
    beta, W = sp.symbols("beta W", positive=True)
    a, b = sp.Rational(1, 2), 2 * beta / W
    return [
        ("2(X^2 + Y^2) - (X + Y)^2 >= 0", sp.factor(2 * (X**2 + Y**2) - (X + Y) ** 2)),
        ("beta - a (b / sqrt 2) sqrt 2 W >= 0", sp.simplify(beta - a * (b / sp.sqrt(2)) * sp.sqrt(2) * W)),
    ]


@identity(
    id="thm6.1/optimal-beta",
    paper="Thm 6.1 (beyond the paper)",
    statement=r"\frac{d}{d\beta}\,\frac{1 + \cosh\beta}{\beta^2} = "
    r"\frac{2\cosh^2(\beta/2)}{\beta^3}\left(\beta\tanh\tfrac{\beta}{2} - 2\right)",
    uses=("lemmaA.1/lipschitz-closed-form",),
    assumptions="beta positive; the error per unit tolerance scales like (1 + cosh beta) / beta^2",
)
def optimal_beta() -> list[Pair]:
    beta = sp.Symbol("beta", positive=True)
    lhs = sp.diff((1 + sp.cosh(beta)) / beta**2, beta)
    rhs = 2 * sp.cosh(beta / 2) ** 2 / beta**3 * (beta * sp.tanh(beta / 2) - 2)
    return [(lhs.rewrite(sp.exp), rhs.rewrite(sp.exp))]
