"""The identities, bounds and runs of Thm B.1 (App. B): each runs the room's own code in sympy,
in mpmath interval arithmetic, or end to end (the runs)."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from ...arith import FLOAT64, MP, SYMPY
from ...models import Attention
from ...verify.formulas import _within, symbols
from ...verify.registry import (
    LEARNERS, RunCheck as Check, BoundClaim as Claim, Pair, bound, identity, run_check as run,
)
from .learners import angle_probes, learn_membership, learn_membership_rotated, probe
from .oracle import MembershipOracle
from .parameters import (
    L_BAND,
    angle_tau,
    apriori_interval,
    entry_error_bound,
    paper_eps_v,
    paper_tau,
    rotation_margin,
    sphere_constant,
)

#: Digits of the interval enclosures (``mpmath.iv``) in this room's bounds.
IV_DPS = 30


def _sigma(t: sp.Expr) -> sp.Expr:
    return 1 / (1 + sp.exp(-t))


@identity(
    id="thmB.1/sphere-constant",
    scope="listed sizes: d = 1..8",
    paper="App. B, Eq. (12)",
    statement=r"R = \mathbb{E}_{x \sim U(S^{d-1})}|x_1| = \frac{\int_{-1}^1 |t|(1-t^2)^{\frac{d-3}{2}}dt}"
    r"{\int_{-1}^1 (1-t^2)^{\frac{d-3}{2}}dt} = "
    r"\frac{\Gamma(d/2)}{\sqrt\pi\,\Gamma(\frac{d+1}{2})},\ d = 1..8",
    assumptions="x_1 of a uniform point of S^{d-1} has density proportional to (1 - t^2)^((d-3)/2) (d >= 2); "
    "d = 1: x_1 = +-1",
)
def sphere_constant_identity() -> list[Pair]:
    t = sp.Symbol("t", positive=True)
    pairs: list[Pair] = [(sp.Integer(1), sphere_constant(1, SYMPY))]
    for d in range(2, 9):
        density = (1 - t**2) ** sp.Rational(d - 3, 2)
        mean = sp.integrate(t * density, (t, 0, 1)) / sp.integrate(density, (t, 0, 1))
        pairs.append((mean, sphere_constant(d, SYMPY)))
    return pairs


@identity(
    id="thmB.1/halfspace-mean-d2",
    scope="listed sizes: d = 2",
    paper="App. B, Eqs. (12)-(13)",
    statement=r"\frac{1}{2\pi}\int_0^{2\pi} \mathrm{sign}(v^\top x_\theta)\, x_\theta\, d\theta "
    r"= R_2\, v,\quad "
    r"x_\theta = (\cos\theta, \sin\theta),\ v = (\cos\phi, \sin\phi),\ R_2 = \tfrac{2}{\pi}",
    uses=("thmB.1/sphere-constant",),
    assumptions="phi real; substituting theta = phi + psi, sign(cos psi) = +1 on (-pi/2, pi/2), -1 elsewhere",
)
def halfspace_mean_d2() -> list[Pair]:
    phi, psi = sp.symbols("phi psi", real=True)
    pairs: list[Pair] = []
    for k, comp in enumerate((sp.cos, sp.sin)):
        f = comp(phi + psi)
        positive = sp.integrate(f, (psi, -sp.pi / 2, sp.pi / 2))
        mean = (positive - sp.integrate(f, (psi, sp.pi / 2, 3 * sp.pi / 2))) / (2 * sp.pi)
        pairs.append((mean, sphere_constant(2, SYMPY) * comp(phi)))
    return pairs


@identity(
    id="thmB.1/hoeffding-count",
    scope="scalar (t, R, delta, d positive symbols: every d)",
    paper="App. B, Eq. (15)",
    statement=r"k = \frac{2}{t^2R^2}\log\frac{2d}{\delta} \iff "
    r"2d\exp\left(-\frac{t^2R^2k}{2}\right) = \delta",
    assumptions="t, R, delta, d positive; each coordinate of sign(v^T x) x lies in [-1, 1] (range 2)",
)
def hoeffding_count() -> list[Pair]:
    t, R, delta, d = sp.symbols("t R delta d", positive=True)
    k = 2 / (t**2 * R**2) * sp.log(2 * d / delta)
    return [(2 * d * sp.exp(-(t**2) * R**2 * k / 2), delta)]


def _probe_value(d: int, i: int, j: int) -> tuple[sp.Expr, dict[str, sp.Expr]]:
    """f_{W,v}(X(a)) by the library's model and probe, in sympy; and the symbols used."""
    a = sp.Symbol("a", positive=True)
    s_ = sp.Symbol("s", real=True, nonzero=True)
    W, v = symbols("W", (d, d), real=True), symbols("v", (d,), real=True, nonzero=True)
    f = Attention(W, v, SYMPY)(probe(i, j, a, s_, d, SYMPY))
    return f, {"a": a, "s": s_, "W": W[i, j], "vi": v[i], "vj": v[j]}


@identity(
    id="thmB.1/probe-value",
    scope="listed sizes: d = 1..3",
    paper="App. B, Eqs. (16)-(19)",
    statement=r"X(a) = \begin{bmatrix}(\frac{s}{a}e_i + a e_j)^\top\\ (a e_j)^\top\end{bmatrix} \Rightarrow "
    r"f_{W,v}(X(a)) = a v_j + \sigma(s W_{ij})\frac{s}{a} v_i = v_i F(a),\ "
    r"F(a) = a\alpha + \frac{\sigma(sW_{ij})s}{a}",
    uses=("thm4.1/softmax-to-sigmoid",),
    assumptions="W real d x d, v real nonzero, a > 0, s real nonzero, alpha = v_j / v_i; d = 1..3, "
    "every (i, j)",
)
def probe_value() -> list[Pair]:
    pairs: list[Pair] = []
    for d in range(1, 4):
        for i in range(d):
            for j in range(d):
                f, x = _probe_value(d, i, j)
                sig = _sigma(x["s"] * x["W"])
                pairs.append((f, x["a"] * x["vj"] + sig * x["s"] / x["a"] * x["vi"]))
                alpha = x["vj"] / x["vi"]
                pairs.append((f, x["vi"] * (x["a"] * alpha + sig * x["s"] / x["a"])))
    return pairs


@identity(
    id="thmB.1/monotone-derivative",
    scope="listed sizes: d = 2",
    paper="App. B, Eq. (20)",
    statement=r"F'(a) = \frac{d}{da}\frac{f_{W,v}(X(a))}{v_i} = \alpha - \frac{\sigma(W_{ij}s)\,s}{a^2}",
    uses=("thmB.1/probe-value",),
    assumptions="as thmB.1/probe-value, d = 2, every (i, j)",
)
def monotone_derivative() -> list[Pair]:
    pairs: list[Pair] = []
    for i in range(2):
        for j in range(2):
            f, x = _probe_value(2, i, j)
            rhs = x["vj"] / x["vi"] - _sigma(x["W"] * x["s"]) * x["s"] / x["a"] ** 2
            pairs.append((sp.diff(f / x["vi"], x["a"]), rhs))
    return pairs


@bound(
    id="thmB.1/monotone",
    scope="scalar",
    paper="App. B, Eq. (20) and after",
    statement=r"s = -\frac{\mathrm{sign}(\alpha)}{2W} \Rightarrow \mathrm{sign}(\alpha)\,F'(a) = |\alpha| + "
    r"\frac{\sigma(W_{ij}s)}{2Wa^2} > 0:\ F \text{ strictly monotone, one sign change of MQ}(X(a))",
    uses=("thmB.1/monotone-derivative",),
    assumptions="a, W, beta = |alpha| positive, W_ij real; F'(a) = alpha - sigma(W_ij s) s / a^2; "
    "F -> sign(s) oo as a -> 0 and sign(alpha) oo as a -> oo",
)
def monotone() -> list[Claim]:
    a, Wb, beta = sp.symbols("a W beta", positive=True)
    w = sp.Symbol("W_ij", real=True)
    claims: list[Claim] = []
    for sign in (1, -1):
        s_ = -sp.Integer(sign) / (2 * Wb)
        dF = sign * beta - _sigma(w * s_) * s_ / a**2
        claims.append((f"sign(alpha) F'(a) > 0 for sign(alpha) = {sign:+d}", sp.simplify(sign * dF)))
    return claims


@bound(
    id="thmB.1/apriori-interval",
    scope="scalar",
    paper="App. B, Eqs. (21)-(22)",
    statement=r"a^{\star 2} = \frac{\sigma(W_{ij}s)}{2W|\alpha|} \in "
    r"\left[\frac{\mu}{8W}, \frac{1}{2W\mu}\right]"
    r"\ \text{for}\ |W_{ij}s| \le \tfrac12,\ |\alpha| \in [\mu, \tfrac1\mu]",
    uses=("thmB.1/monotone",),
    assumptions="sigma(t) in [1/4, 1] on |t| <= 1/2 (interval arithmetic); lower end: 1/|alpha| = mu + r, "
    "sigma = 1/4 + q; upper end: |alpha| = mu + r, sigma = 1 - q; q, r >= 0; the ends are apriori_interval's",
)
def apriori_interval_bound() -> list[Claim]:
    Wb, mu = sp.symbols("W mu", positive=True)
    q, r = sp.symbols("q r", nonnegative=True)
    lo, hi = apriori_interval(Wb, mu, SYMPY)
    with FLOAT64.interval(IV_DPS) as iv:
        sig = 1 / (1 + iv.exp(-iv.mpf([-0.5, 0.5])))
        return [
            ("sigma(t) - 1/4 >= 0 on |t| <= 1/2", sig - iv.mpf(1) / 4),
            ("a*^2 - lo^2 >= 0", sp.expand((sp.Rational(1, 4) + q) * (mu + r) / (2 * Wb) - lo**2)),
            ("hi^2 - a*^2 >= 0", sp.factor(sp.together(hi**2 - (1 - q) / (2 * Wb * (mu + r))))),
        ]


@identity(
    id="thmB.1/ratio-error",
    scope="scalar",
    paper="App. B, Delta_alpha display",
    statement=r"\frac{v_j + \Delta_j}{v_i + \Delta_i} - \frac{v_j}{v_i} = "
    r"\frac{v_i\Delta_j - v_j\Delta_i}{v_i(v_i + \Delta_i)}\ \text{(the paper prints } v_i - \Delta_i"
    r"\text{ and } + v_j\Delta_i\text{; typos, harmless under } |\cdot|)",
    assumptions="v_i, v_i + Delta_i nonzero reals",
)
def ratio_error() -> list[Pair]:
    vi, vj, Di, Dj = sp.symbols("v_i v_j Delta_i Delta_j", real=True)
    return [((vj + Dj) / (vi + Di) - vj / vi, (vi * Dj - vj * Di) / (vi * (vi + Di)))]


@bound(
    id="thmB.1/ratio-bound",
    scope="scalar",
    paper="App. B, Delta_alpha display",
    statement=r"|\Delta_\alpha| \le \frac{(|v_i| + |v_j|)\epsilon_v}{|v_i|(|v_i| - \epsilon_v)} \le "
    r"\frac{2\epsilon_v}{\mu(\mu - \epsilon_v)} \le \frac{4\epsilon_v}{\mu^2}\ (\epsilon_v \le \mu/2)",
    uses=("thmB.1/ratio-error",),
    assumptions="|v_i| = mu + x, |v_j| <= 1, mu = 1/(1 + y), mu = eps + c (c > 0), and for the last step "
    "mu = 2 eps + m; x, y, m >= 0, eps, c > 0",
)
def ratio_bound() -> list[Claim]:
    eps, c = sp.symbols("epsilon c", positive=True)
    x, y, m = sp.symbols("x y m", nonnegative=True)
    mu = eps + c
    mu2 = 2 * eps + m
    return [
        ("decreasing in |v_i|: value at |v_i| = mu, |v_j| = 1 minus value at mu + x (mu <= 1 below)",
         sp.factor(sp.together((mu + 1) * eps / (mu * (mu - eps))
                               - (mu + x + 1) * eps / ((mu + x) * (mu + x - eps))))),
        ("(mu + 1) <= 2 when mu = 1/(1+y)", sp.together(1 - 1 / (1 + y))),
        ("4 eps / mu^2 - 2 eps / (mu (mu - eps)) >= 0",
         sp.factor(sp.together(4 * eps / mu2**2 - 2 * eps / (mu2 * (mu2 - eps))))),
    ]


@bound(
    id="thmB.1/accuracy-algebra",
    scope="scalar (interval arithmetic over the whole parameter box; every d through eps_W / d)",
    paper="App. B, Eqs. (26)-(29)",
    statement=r"\tau = \frac{\eta_W\mu^3}{64 L W^2},\ \epsilon_v = \frac{\epsilon_W\mu^3}{40Wd},\ "
    r"L = 4.26 \ge 2 + 2\cosh\tfrac12 \Rightarrow "
    r"2WL\left[2W\left(\tfrac1\mu + \Delta_\alpha\right)\sqrt{\tfrac{2}{W\mu}}\,\tau"
    r" + \tfrac{\Delta_\alpha}{\mu}\right] \le \eta_W = \tfrac{\epsilon_W}{d}",
    uses=("thmB.1/apriori-interval", "thmB.1/ratio-bound", "lemmaA.1/lipschitz-closed-form"),
    assumptions="the library's entry_error_bound / paper_tau / paper_eps_v in sympy with mu = u^2, "
    "W = 2 / z^2, "
    "eps_W = eta d, then interval arithmetic over the whole box u, z, eta in [0, 1] (mu <= 1, W >= 2, "
    "eps_W / d <= 1; the constants read as the rationals 213/50 and 1/8); the error chain: "
    "|p_hat - p| <= 2W|alpha_hat| |a_hat^2 - a*^2| + Delta_alpha / mu, "
    "clipping is 1-Lipschitz, sigma^{-1} is L-Lipschitz on the band, W_ij = sigma^{-1}(p) / s, |1/s| = 2W",
)
def accuracy_algebra() -> list[Claim]:
    mu, Wb, eps, d = sp.symbols("mu W epsilon_W d", positive=True)
    u, z, eta = sp.symbols("u z eta", positive=True)
    ratio = entry_error_bound(Wb, mu, paper_tau(eps, mu, Wb, d), paper_eps_v(eps, mu, Wb, d)) / (eps / d)
    ratio = sp.cancel(sp.powsimp(ratio.subs({mu: u**2, Wb: 2 / z**2, eps: eta * d}), force=True))
    ratio = sp.nsimplify(ratio, rational=True)  # the constants 4.26 and 1/8 as the rationals they denote
    with FLOAT64.interval(IV_DPS) as iv:
        fn = sp.lambdify((u, z, eta), ratio, modules=[{"mpf": iv.mpf, "sqrt": iv.sqrt}, "mpmath"])
        box = iv.mpf([0, 1])
        L = 2 + iv.exp(iv.mpf(1) / 2) + iv.exp(-iv.mpf(1) / 2)
        return [("L_BAND - (2 + 2 cosh 1/2) >= 0", iv.mpf(str(L_BAND)) - L),
                ("1 - error / eta_W >= 0", 1 - fn(box, box, box))]


@identity(
    id="thmB.1/angle-sign",
    scope="listed sizes: d = 2..4",
    paper="beyond the paper (Thm B.1, step 1)",
    statement=r"v_j = v_0\tan\psi,\ x(\theta) = \sin\theta\, e_0 - \cos\theta\, e_j \Rightarrow "
    r"f_{W,v}([x(\theta)^\top]) = \frac{v_0}{\cos\psi}\sin(\theta - \psi)",
    uses=("thm4.1/one-token",),
    assumptions="theta, psi real, cos psi != 0; the library's angle_probes and model in sympy, "
    "d = 2..4, every j",
)
def angle_sign() -> list[Pair]:
    theta, psi = sp.symbols("theta psi", real=True)
    pairs: list[Pair] = []
    for d in range(2, 5):
        W, v = symbols("W", (d, d), real=True), symbols("v", (d,), real=True)
        X = angle_probes([theta] * (d - 1), d, SYMPY)
        for j in range(1, d):
            vj = v.copy()
            vj[j] = v[0] * sp.tan(psi)
            pairs.append((Attention(W, vj, SYMPY)(X[j - 1]), v[0] / sp.cos(psi) * sp.sin(theta - psi)))
    return pairs


@bound(
    id="thmB.1/angle-to-vector",
    scope="scalar (d a positive symbol: every d)",
    paper="beyond the paper (Thm B.1, step 1)",
    statement=r"|\hat\psi_j - \psi_j| \le \tau_\psi = \frac{\epsilon_v\mu^2}{16\sqrt d} \Rightarrow "
    r"\|\hat v - v^\star\|_\infty \le \frac{2\sqrt{d-1}}{\|w\|}\cdot\frac{8\tau_\psi}{\mu^2} \le \epsilon_v",
    uses=("thmB.1/angle-sign",),
    assumptions="w = (1, tan psi_1, ...), ||w|| >= 1, |tan psi| <= 1/mu so sec^2 psi <= 2 / mu^2 "
    "(mu = 1/(1+y)); "
    "tau_psi <= mu / (2 sqrt 2) <= cos(psi) / 2 so sec^2 on the interval <= 4 sec^2 psi (eps_v <= mu / 2, "
    "interval arithmetic over mu in [0, 1]); "
    "||a/|a| - b/|b||| <= 2 |a - b| / |a|; the last step compared as squares",
)
def angle_to_vector() -> list[Claim]:
    y = sp.Symbol("y", nonnegative=True)
    eps, mu, d = sp.symbols("epsilon_v mu d", positive=True)
    mu1 = 1 / (1 + y)
    tau = angle_tau(eps, mu, d)
    # tau_psi is linear in eps_v <= mu / 2 and largest at d = 1: tau_psi / mu <= angle_tau(1/2, mu, 1)
    with FLOAT64.interval(IV_DPS) as iv:
        small = 1 / (2 * iv.sqrt(2)) - angle_tau(iv.mpf(1) / 2, iv.mpf([0, 1]), iv.mpf(1))
    return [
        ("2/mu^2 - (1 + 1/mu^2) >= 0", sp.expand(2 / mu1**2 - 1 - 1 / mu1**2)),
        ("(mu/(2 sqrt 2) - tau_psi) / mu >= 0 over mu in [0, 1]", small),
        ("eps_v^2 - (2 sqrt(d-1) 8 tau_psi / mu^2)^2 >= 0",
         sp.simplify(eps**2 - 4 * (d - 1) * (8 * tau / mu**2) ** 2)),
    ]


@identity(
    id="thmB.1/rotation",
    scope="listed sizes: d = 2",
    paper="beyond the paper (Thm B.1 without the margin)",
    statement=r"Q^\top Q = I \Rightarrow f_{W,v}(Y Q^\top) = f_{Q^\top W Q,\, Q^\top v}(Y)",
    uses=("thm4.1/one-token",),
    assumptions="d = 2, Q the rotation by a real angle phi, Y any real 2 x 2 or 1 x 2 query; the library's "
    "model on both sides and RotatedQueries' map Y -> Y Q^T",
)
def rotation() -> list[Pair]:
    phi = sp.Symbol("phi", real=True)
    Q = np.array([[sp.cos(phi), -sp.sin(phi)], [sp.sin(phi), sp.cos(phi)]], dtype=object)
    W, v = symbols("W", (2, 2), real=True), symbols("v", (2,), real=True)
    pairs: list[Pair] = []
    for n in (1, 2):
        Y = symbols("y", (n, 2), real=True)
        lhs = Attention(W, v, SYMPY)(np.asarray(Y) @ Q.T)
        rhs = Attention(Q.T @ W @ Q, Q.T @ v, SYMPY)(Y)
        pairs.append((lhs, rhs))
    return pairs


#: Fixed target of ``thmB.1/run``: ||W*||_F = sqrt(30)/4 <= W_bound = 2, unit v*, every |v*_i| >= 1/2.
MEMBERSHIP_RUN_TARGET = ([[1, sp.Rational(-1, 2)], [sp.Rational(1, 4), sp.Rational(3, 4)]],
                         [sp.Rational(3, 5), sp.Rational(-4, 5)])


@run(
    id="thmB.1/run",
    paper="Thm B.1",
    statement=r"\|\hat W - W^\star\|_F \le \epsilon_W,\ \|\hat v - v^\star\|_\infty \le \epsilon_v = "
    r"\tfrac{\epsilon_W\mu^3}{40 W d}\ \text{with exactly the counted membership queries}",
    uses=("thmB.1/accuracy-algebra", "thmB.1/angle-to-vector", "thmB.1/monotone"),
    assumptions="learn_membership (method bisect) on MEMBERSHIP_RUN_TARGET (d = 2), W_bound = 2, mu = 0.5, "
    "in float64 with eps_W = 1e-6 and in mpmath (40 digits) with eps_W = 1e-25; the error within eps and "
    "within the learner's a-posteriori error_bound; queries = LEARNERS['membership'].count",
    scope="listed sizes: d = 2 (a fixed target)",
)
def membership_run() -> list[Check]:
    W0, v0 = MEMBERSHIP_RUN_TARGET
    W_bound, mu = 2.0, 0.5
    checks: list[Check] = []
    for arith, eps_W in ((FLOAT64, 1e-6), (MP(40), 1e-25)):
        W_true, v_true = arith.asarray(W0), arith.asarray(v0)
        oracle = MembershipOracle(Attention(W_true, v_true, arith))
        rec = learn_membership(oracle, W_bound=W_bound, mu=mu, eps_W=eps_W, method="bisect", arith=arith)
        with arith.context():
            err_W = arith.norm(rec.W - W_true)
            err_v = float(max(abs(x) for x in (rec.v - v_true)))
        count = LEARNERS["membership"].count(d=2, method="bisect", W_bound=W_bound, mu=mu, eps_W=eps_W)
        at = f"{arith.name}, eps_W = {eps_W:g}"
        checks += [
            (f"{at}: ||W_hat - W*||_F <= eps_W", err_W, eps_W),
            (f"{at}: ||W_hat - W*||_F / error_bound <= 1",
             _within(float(err_W), rec.diagnostics["error_bound"]), 1.0),
            (f"{at}: ||v_hat - v*||_inf <= eps_v", err_v, paper_eps_v(eps_W, mu, W_bound, 2)),
            (f"{at}: queries - count", abs(rec.queries - count), 0),
        ]
    return checks


#: Fixed targets of ``thmB.1/run-rotated``: v* with a zero entry (no margin at all, what the rotation
#: is for) at d = 2 and d = 3; ||W*||_F <= W_bound = 2, ||v*|| = 1.
ROTATED_RUN_TARGETS = (
    ([[1, sp.Rational(-1, 2)], [sp.Rational(1, 4), sp.Rational(3, 4)]], [1, 0]),
    ([[sp.Rational(1, 2), 0, -1], [sp.Rational(1, 3), sp.Rational(1, 2), 0],
      [0, sp.Rational(-1, 4), sp.Rational(1, 2)]], [0, sp.Rational(3, 5), sp.Rational(-4, 5)]),
)


@run(
    id="thmB.1/run-rotated",
    paper="beyond the paper (Thm B.1 without the margin)",
    statement=r"\mathrm{learn\_membership\_rotated}:\ \|\hat W - W^\star\|_F \le \epsilon_W,\ "
    r"\|\hat v - v^\star\|_2 \le \sqrt d\, \epsilon_v(\mu'),\ \mu' = \tfrac{\delta_{rot}}{2 d c_d},\ "
    r"\text{with exactly the counted membership queries, for } v^\star \text{ with a zero entry}",
    uses=("thmB.1/rotation", "thmB.1/run"),
    assumptions="ROTATED_RUN_TARGETS (d = 2, 3; a zero entry of v*: learn_membership itself refuses them), "
    "W_bound = 2, Q drawn with seed 0 (for which min |Q^T v*| >= mu' holds: the learner raises otherwise); "
    "float64 with eps_W = 1e-2, delta_rot = 0.2 (float64's floor rules out a smaller mu') and mpmath (40 "
    "digits) with eps_W = 1e-10, delta_rot = 0.01; the errors also within the learner's a-posteriori "
    "error_bound and error_bound_v2; queries = LEARNERS['membership-rotated'].count",
    scope="listed sizes: d = 2, 3 (fixed targets)",
)
def rotated_run() -> list[Check]:
    W_bound = 2.0
    checks: list[Check] = []
    for arith, eps_W, delta_rot in ((FLOAT64, 1e-2, 0.2), (MP(40), 1e-10, 0.01)):
        for W0, v0 in ROTATED_RUN_TARGETS:
            d = len(v0)
            W_true, v_true = arith.asarray(W0), arith.asarray(v0)
            oracle = MembershipOracle(Attention(W_true, v_true, arith))
            rec = learn_membership_rotated(oracle, W_bound=W_bound, eps_W=eps_W, delta_rot=delta_rot,
                                           rng=np.random.default_rng(0), arith=arith)
            with arith.context():
                err_W, err_v = arith.norm(rec.W - W_true), arith.norm(rec.v - v_true)
            count = LEARNERS["membership-rotated"].count(d=d, W_bound=W_bound, eps_W=eps_W,
                                                         delta_rot=delta_rot)
            eps_v = paper_eps_v(eps_W, rotation_margin(d, delta_rot), W_bound, d)
            at = f"{arith.name}, d = {d}, eps_W = {eps_W:g}"
            checks += [
                (f"{at}: ||W_hat - W*||_F <= eps_W", err_W, eps_W),
                (f"{at}: ||W_hat - W*||_F / error_bound <= 1",
                 _within(float(err_W), rec.diagnostics["error_bound"]), 1.0),
                (f"{at}: ||v_hat - v*||_2 <= sqrt(d) eps_v(mu')", err_v, math.sqrt(d) * eps_v),
                (f"{at}: ||v_hat - v*||_2 / error_bound_v2 <= 1",
                 _within(float(err_v), rec.diagnostics["error_bound_v2"]), 1.0),
                (f"{at}: queries - count", abs(rec.queries - count), 0),
                (f"{at}: queries asked - queries reported", abs(oracle.queries - rec.queries), 0),
            ]
    return checks

