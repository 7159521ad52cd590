"""Theorem B.1 (App. B): recovery from membership queries MQ(X) = 1[f*(X) > 0], one bit each.

Assumptions (App. B): ``||W*||_F <= W`` for a known ``W >= 2``, ``||v*||_2 = 1`` and the value
margin ``min_i |v*_i| >= mu > 0``.  Only the *direction* of v* is identifiable from signs
(``sign`` is invariant under ``v -> c v``, c > 0), so every learner returns a unit v_hat.

**Step 1, the paper's v (Eqs. (12)-(15)).**  For one token, ``f([x^T]) = x^T v`` and
``E_{x ~ U(S^{d-1})}[sign(v^T x) x] = R v / ||v||`` with
``R = Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2))`` (identities ``thmB.1/sphere-constant`` and
``thmB.1/halfspace-mean-d2``).  ``v_hat = (1/(R k)) sum_i (2 MQ(x_i) - 1) x_i``; each coordinate
of ``(2 MQ - 1) x`` lies in [-1, 1], so Hoeffding (Eq. (15)) and a union bound over the d
coordinates give ``||v_hat - v*||_inf <= t`` with probability ``1 - 2 d exp(-t^2 R^2 k / 2)``,
i.e. ``k = 2 log(2d / delta) / (R^2 eps_v^2)`` (:func:`hoeffding_samples`) for the theorem's
``eps_v = eps_W mu^3 / (40 W d)``: about 1.1e20 queries at d = 6, W = 4, mu = 0.1,
eps_W = 1e-3, delta = 0.01.  The ``paper`` learner therefore takes an explicit sample budget
and reports what that budget buys (:func:`hoeffding_radius`, :func:`hoeffding_delta`).

**Step 2, the paper's W (Eqs. (16)-(29)).**  With ``alpha = v_j / v_i``, ``s = -sign(alpha)/(2W)``
and the probe ``X(a) = [((s/a) e_i + a e_j)^T; (a e_j)^T]`` (:func:`probe`),
``f(X(a)) = a v_j + sigma(s W_ij) (s/a) v_i = v_i F(a)`` with ``F(a) = a alpha + sigma(s W_ij) s / a``
(Eq. (19), identity ``thmB.1/probe-value``).  ``F'(a) = alpha - sigma(s W_ij) s / a^2`` has the sign
of alpha (Eq. (20), ``thmB.1/monotone``), so MQ flips exactly once, at
``a*^2 = sigma(s W_ij) / (2 W |alpha|)`` (Eq. (21)), which lies in
``[sqrt(mu / (8W)), sqrt(1 / (2 W mu))]`` (Eq. (22), bound ``thmB.1/apriori-interval``).  Bisection
to ``|a_hat - a*| <= tau`` and ``p_hat = 2 W |alpha_hat| a_hat^2``, clipped to
``[sigma(-1/2), sigma(1/2)]``, give ``W_ij = -2 W sign(alpha) sigma^{-1}(p)``.  The ratio error is
``|Delta_alpha| <= 2 eps_v / (mu (mu - eps_v)) <= 4 eps_v / mu^2`` (``thmB.1/ratio-error``).

**The accuracy algebra, made explicit.**  The proof leaves ``tau = eta_W mu^3 / (8 L W^2) Const``
with an unnamed Const.  With the proof's own ``L <= 5`` its eps_v term alone,
``2 eps_v / (W mu^3) = eta_W / (20 W^2)``, already *equals* its budget ``eta_W / (4 W^2 L)``,
leaving nothing for the bisection: the chain closes only because the true constant is
``L = 2 + 2 cosh(1/2) = 4.255 < 5`` strictly.  We take ``Const = 1/8`` (:data:`TAU_CONST`) and prove
that every entry is then within ``eta_W = eps_W / d`` (bound ``thmB.1/accuracy-algebra``,
interval arithmetic over all ``mu in (0, 1]``, ``W >= 2``, ``eps_W / d <= 1``).  Two typos of
the displayed ``Delta_alpha`` chain (a ``v_i - Delta_i`` and a ``+`` for ``-`` in the numerator)
do not affect the bound.

**Beyond the paper: ``bisect``.**  On the plane of e_0 and e_j, the query
``x(theta) = sin(theta) e_0 - cos(theta) e_j`` has ``v^T x = (v_0 / cos psi_j) sin(theta - psi_j)``
with ``psi_j = atan(v_j / v_0)`` (``thmB.1/angle-sign``): the answer flips exactly at
``theta = psi_j``.  One query for sign(v_0) and ``n_v`` bisection steps per angle over
``[-pi/2, pi/2]`` find every ratio deterministically, with no failure probability.
``tau_psi = eps_v mu^2 / (16 sqrt d)`` suffices for ``||v_hat - v*||_inf <= eps_v``
(``thmB.1/angle-to-vector``), so ``bisect`` meets the theorem's guarantee with
``1 + (d - 1) n_v + d^2 n_W`` queries (:func:`query_count`), against the paper's
``k + d^2 n_W``.  Each answer is one bit, so ``d^2 log2(W / eps_W)`` queries are a lower bound
(:func:`information_floor`): the W step is optimal up to a constant, the Hoeffding step is not.

Both learners bisect on intervals that provably contain the unknown (closed intervals: the
``f = 0`` answer 0 is consistent with either side), and the diagnostics report an
a-posteriori error bound computed with mpmath interval arithmetic from the final intervals
(certain for ``bisect``; for ``paper`` it holds on the Hoeffding event, probability
``>= 1 - delta``).  Every bisection has a precision floor (:class:`PrecisionLossError`) and
runs through the oracle's query budget.
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from ..arith import FLOAT64, MP, SYMPY, Arith
from ..errors import AssumptionError, InvalidInputError, PrecisionLossError, QueryBudgetExceeded
from ..models import Attention
from ..oracles import MembershipOracle
from ..verify.formulas import symbols
from ..verify.registry import (
    LEARNERS, BoundClaim as Claim, Pair, RunCheck as Check, bound, identity, learner, run_check as run,
)
from ..recovery import Recovery

#: Upper bound on the Lipschitz constant of sigma^{-1} on [sigma(-1/2), sigma(1/2)],
#: 2 + 2 cosh(1/2) = 4.2553 (the proof uses 5; bound ``thmB.1/accuracy-algebra``).
L_BAND = 4.26
#: The proof's unnamed "Const" in tau = eta_W mu^3 Const / (8 L W^2), made explicit.
TAU_CONST = 1 / 8
#: Largest verbatim Hoeffding count the ``paper`` learner runs without an explicit budget.
MAX_VERBATIM_SAMPLES = 10**8
#: Samples per oracle call in the sampling step (memory, not queries).
CHUNK = 2**16
METHODS = ("paper", "bisect")


# --- the parameters of the theorem ---------------------------------------------------------


def check_assumptions(W_bound: float, mu: float, eps_W: float, delta: float, d: int) -> None:
    """Raise :class:`AssumptionError` unless Thm B.1's known parameters make sense.

    ``W >= 2``; ``0 < mu <= 1/sqrt(d)`` (``||v*|| = 1`` with every ``|v*_i| >= mu`` forces
    ``d mu^2 <= 1``); ``eps_W`` and ``delta`` in (0, 1).
    """
    if not isinstance(d, (int, np.integer)) or d < 1:
        raise InvalidInputError(f"d must be a positive integer; got {d!r}")
    if not (math.isfinite(W_bound) and W_bound >= 2):
        raise AssumptionError(f"Thm B.1 needs a known norm bound W >= 2 on ||W*||_F; got W = {W_bound}")
    if not (math.isfinite(mu) and 0 < mu <= 1 / math.sqrt(d) * (1 + 1e-12)):
        raise AssumptionError(
            f"Thm B.1 needs a margin 0 < mu <= 1/sqrt(d) = {1 / math.sqrt(d):.4g} (||v*|| = 1 and every "
            f"|v*_i| >= mu); got mu = {mu}. With mu = 0 see check_target"
        )
    for name, x in (("eps_W", eps_W), ("delta", delta)):
        if not (isinstance(x, (int, float)) and 0 < x < 1):
            raise AssumptionError(f"Thm B.1 is stated for {name} in (0, 1); got {x!r}")


def check_target(W: Any, v: Any, W_bound: float, mu: float) -> None:
    """Raise :class:`AssumptionError` unless a (float64) target meets Thm B.1's assumptions.

    * ``||W*||_F > W``: the a-priori interval (22) may miss the sign change.
    * ``||v*||_2 != 1``: membership answers are invariant under ``v -> c v`` (c > 0), so
      only the direction is identifiable; pass ``v / ||v||`` (what the learners return).
    * some ``|v*_i| < mu`` (e.g. ``v*_i = 0``): the margin fails.  Still identifiable:
      which entries are zero (``MQ(e_i) = MQ(-e_i) = 0``), the direction of v*, and W* (by
      rotated probes, since v* != 0); not by the paper's coordinate probes, whose ratio
      ``alpha = v_j / v_i`` is then 0 or undefined.
    """
    W, v = np.asarray(W, float), np.asarray(v, float)
    if np.linalg.norm(W) > W_bound:
        raise AssumptionError(f"||W*||_F = {np.linalg.norm(W):.6g} exceeds the known bound W = {W_bound}")
    norm = np.linalg.norm(v)
    if abs(norm - 1) > 1e-12:
        raise AssumptionError(
            f"||v*||_2 = {norm:.6g} != 1: membership queries only identify the direction v*/||v*|| "
            "(sign(f) is invariant under v -> c v, c > 0); normalise v* first"
        )
    small = np.flatnonzero(np.abs(v) < mu)
    if small.size:
        raise AssumptionError(
            f"margin fails: |v*_i| < mu = {mu} at i = {small.tolist()} (v*_i = 0 at "
            f"{np.flatnonzero(v == 0).tolist()}); the ratios v_j / v_i of the paper's probes are then 0 "
            "or undefined. Zero entries are still detected exactly (MQ(e_i) = MQ(-e_i) = 0), and the "
            "direction of v* and W* stay identifiable through rotated probes"
        )


def paper_eps_v(eps_W: float, mu: float, W_bound: float, d: int) -> float:
    """The theorem's ``eps_v = eps_W mu^3 / (40 W d)``."""
    return eps_W * mu**3 / (40 * W_bound * d)


def sphere_constant(d: int, arith: Arith = FLOAT64) -> Any:
    """``R = Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2)) = E|x_1|``, x uniform on S^{d-1} (Eq. (12))."""
    if arith is SYMPY:
        return sp.gamma(sp.Rational(d, 2)) / (sp.sqrt(sp.pi) * sp.gamma(sp.Rational(d + 1, 2)))
    with arith.context() if arith is not FLOAT64 else mpmath.workdps(30):  # float64: correctly rounded
        R = mpmath.gamma(mpmath.mpf(d) / 2) / (mpmath.sqrt(mpmath.pi) * mpmath.gamma(mpmath.mpf(d + 1) / 2))
        return float(R) if arith is FLOAT64 else R


def hoeffding_samples(eps_v: float, d: int, delta: float) -> int:
    """Eq. (15) solved for k: ``ceil(2 log(2d / delta) / (R^2 eps_v^2))`` (an exact Python int)."""
    with mpmath.workdps(30):
        R = sphere_constant(d, MP(30))
        return int(mpmath.ceil(2 * mpmath.log(2 * d / mpmath.mpf(delta)) / (R**2 * mpmath.mpf(eps_v) ** 2)))


def hoeffding_radius(k: int, d: int, delta: float) -> float:
    """The ``t`` that k samples buy at confidence 1 - delta: ``sqrt(2 log(2d/delta) / (R^2 k))``."""
    return math.sqrt(2 * math.log(2 * d / delta) / (sphere_constant(d) ** 2 * k))


def hoeffding_delta(k: int, eps_v: float, d: int) -> float:
    """The failure probability k samples leave at radius eps_v: ``min(1, 2d exp(-eps_v^2 R^2 k / 2))``."""
    return min(1.0, 2 * d * math.exp(-(eps_v**2) * sphere_constant(d) ** 2 * k / 2))


def apriori_interval(W_bound: Any, mu: Any, arith: Arith = FLOAT64) -> tuple[Any, Any]:
    """Eq. (22): the sign change of MQ(X(a)) lies in ``[sqrt(mu / (8W)), sqrt(1 / (2 W mu))]``."""
    sqrt = sp.sqrt if arith is SYMPY else mpmath.sqrt
    with arith.context():
        W, m = arith.scalar(W_bound), arith.scalar(mu)
        return sqrt(m / (8 * W)), sqrt(1 / (2 * W * m))


def paper_tau(eps_W: Any, mu: Any, W_bound: Any, d: Any) -> Any:
    """The bisection accuracy on a: ``tau = eta_W mu^3 Const / (8 L W^2)``, eta_W = eps_W / d."""
    return eps_W / d * mu**3 * TAU_CONST / (8 * L_BAND * W_bound**2)


def _sqrt(x: Any) -> Any:
    """Square root of a float, an mpmath interval or a sympy expression (the bounds run this code)."""
    return sp.sqrt(x) if isinstance(x, sp.Basic) else x**0.5


def angle_tau(eps_v: Any, mu: Any, d: Any) -> Any:
    """Accuracy of each angle psi_j giving ``||v_hat - v*||_inf <= eps_v``: ``eps_v mu^2 / (16 sqrt d)``."""
    return eps_v * mu**2 / (16 * _sqrt(d))


def bisection_steps(width: float, tau: float) -> int:
    """Smallest n >= 0 with ``width / 2^(n+1) <= tau`` (the midpoint of the last interval is
    then within tau of anything in it).  Exact: computed on the binary exponents."""
    if not (width > 0 and tau > 0):
        raise InvalidInputError(f"bisection needs width > 0 and tau > 0; got {width}, {tau}")
    n = max(0, math.ceil(math.log2(width / tau)) - 1)
    while n > 0 and math.ldexp(width, -n) <= tau:  # log2 rounding: step back while n - 1 suffices
        n -= 1
    while math.ldexp(width, -(n + 1)) > tau:
        n += 1
    return n


def check_precision(d: int, W_bound: float, mu: float, eps_W: float, method: str,
                    arith: Arith = FLOAT64) -> None:
    """Raise :class:`PrecisionLossError` (before any query) if a bisection must resolve below the
    arithmetic's floor: the angles to ``8 u pi/2`` (``bisect``), a to ``64 u a_hi / mu`` (a sign
    answer near the root is only as reliable as f*, whose slope there is >= mu); u = unit roundoff."""
    eps_v = paper_eps_v(eps_W, mu, W_bound, d)
    a_hi = float(apriori_interval(W_bound, mu)[1])
    floors = [("a", paper_tau(eps_W, mu, W_bound, d), 64 * arith.eps * a_hi / mu)]
    if method == "bisect" and d > 1:
        floors.append(("the angles psi_j", angle_tau(eps_v, mu, d), 8 * arith.eps * math.pi / 2))
    for what, tau, floor in floors:
        if tau < floor:
            raise PrecisionLossError(
                f"eps_W = {eps_W:g} needs {what} to {tau:.3g}, below {arith.name}'s floor {floor:.3g}; "
                "use mpmath with more digits"
            )


def step_counts(d: int, W_bound: float, mu: float, eps_W: float) -> tuple[int, int]:
    """(n_v, n_W): bisection steps per angle (``bisect``) and per entry of W (both methods)."""
    lo, hi = apriori_interval(W_bound, mu)
    n_W = bisection_steps(float(hi - lo), paper_tau(eps_W, mu, W_bound, d))
    n_v = bisection_steps(math.pi, angle_tau(paper_eps_v(eps_W, mu, W_bound, d), mu, d))
    return n_v, n_W


def query_count(d: int, method: str, W_bound: float, mu: float, eps_W: float, delta: float,
                samples: int | None = None) -> int:
    """Exact number of membership queries of :func:`learn_membership`.

    ``bisect``: ``1 + (d - 1) n_v + d^2 n_W``; ``paper``: ``k + d^2 n_W`` with k = ``samples``
    (default: the verbatim :func:`hoeffding_samples`).
    """
    check_assumptions(W_bound, mu, eps_W, delta, d)
    n_v, n_W = step_counts(d, W_bound, mu, eps_W)
    if method == "bisect":
        return 1 + (d - 1) * n_v + d * d * n_W
    if method == "paper":
        k = hoeffding_samples(paper_eps_v(eps_W, mu, W_bound, d), d, delta) if samples is None else samples
        return k + d * d * n_W
    raise InvalidInputError(f"unknown method {method!r}: use one of {METHODS}")


def information_floor(d: int, W_bound: float, eps_W: float) -> int:
    """``ceil(d^2 log2(W / eps_W))``: one bit per query, and an eps_W-cover of the Frobenius
    ball of radius W in R^{d x d} has at least ``(W / eps_W)^{d^2}`` points (volume ratio)."""
    return math.ceil(d * d * math.log2(W_bound / eps_W))


def entry_error_bound(W_bound: Any, mu: Any, tau: Any, eps_v: Any) -> Any:
    """A-priori bound on ``|W_hat_ij - W*_ij|`` from the proof's chain, with
    ``Delta_alpha <= 2 eps_v / (mu (mu - eps_v))``:
    ``2 W L [2 W (1/mu + Delta_alpha) sqrt(2 / (W mu)) tau + Delta_alpha / mu]``."""
    D = 2 * eps_v / (mu * (mu - eps_v))
    return 2 * W_bound * L_BAND * (2 * W_bound * (1 / mu + D) * _sqrt(2 / (W_bound * mu)) * tau + D / mu)


# --- the learners --------------------------------------------------------------------------


def _bisect(oracle: MembershipOracle, lo: np.ndarray, hi: np.ndarray, probes: Any, lo_answer: np.ndarray,
            steps: int, arith: Arith) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` parallel bisections (one batch per step); ``probes(t)`` builds the queries at
    the midpoints t, and an answer equal to ``lo_answer`` moves ``lo`` up.  The intervals stay
    closed, so a zero answer (f = 0) at the midpoint is consistent either way.

    Raises
    ------
    PrecisionLossError
        A midpoint rounds to an endpoint: the arithmetic cannot halve the interval further.
    """
    for _ in range(steps):
        mid = (lo + hi) / 2
        if np.any((mid == lo) | (mid == hi)):
            raise PrecisionLossError(f"{arith.name} cannot halve a bisection interval further")
        ans = np.asarray(oracle(probes(mid)))
        up = ans == lo_answer
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return lo, hi


def probe(i: int, j: int, a: Any, s: Any, d: int, arith: Arith = FLOAT64) -> np.ndarray:
    """``X(a) = [((s/a) e_i + a e_j)^T; (a e_j)^T]`` (App. B, before Eq. (19))."""
    X = arith.zeros((2, d))
    X[0, i] = s / a
    X[0, j] = X[0, j] + a
    X[1, j] = a
    return X


def _trig(arith: Arith) -> tuple[Any, Any, Any]:
    """(sin, cos, tan) of the arithmetic."""
    if arith is SYMPY:
        return sp.sin, sp.cos, sp.tan
    if arith is FLOAT64:
        return math.sin, math.cos, math.tan
    return mpmath.sin, mpmath.cos, mpmath.tan


def angle_probes(theta: Any, d: int, arith: Arith = FLOAT64) -> np.ndarray:
    """One-token queries ``x(theta_j) = sin(theta_j) e_0 - cos(theta_j) e_j``, j = 1..d-1: (d-1, 1, d)."""
    sin, cos, _ = _trig(arith)
    X = arith.zeros((d - 1, 1, d))
    for j, t in enumerate(theta, start=1):
        X[j - 1, 0, 0] = sin(t)
        X[j - 1, 0, j] = -cos(t)
    return X


def _v_by_angles(oracle: MembershipOracle, n_v: int, arith: Arith) -> tuple[np.ndarray, list]:
    """sign(v_0) with one query, then every psi_j = atan(v_j / v_0) by bisection.

    Returns the unit v_hat and the enclosures (mpmath.iv) of v*/||v*||."""
    d = oracle.d
    with arith.context():
        e0 = arith.zeros((1, d))
        e0[0, 0] = arith.scalar(1)
        sign0 = 1 if oracle(e0) == 1 else -1
        half_pi = arith.scalar(mpmath.pi / 2) if arith is not FLOAT64 else math.pi / 2
        lo = np.array([-half_pi] * (d - 1), dtype=object if arith is not FLOAT64 else float)
        hi = -lo
        # sign(v_0) sign(v^T x(theta)) = sign(theta - psi): theta below psi answers 0 if v_0 > 0
        lo, hi = _bisect(oracle, lo, hi, lambda t: angle_probes(t, d, arith), np.int8(sign0 < 0), n_v, arith)
        tan = _trig(arith)[2]
        w = np.array([arith.scalar(1)] + [tan((a + b) / 2) for a, b in zip(lo, hi)], dtype=object)
        norm = mpmath.sqrt(mpmath.fsum(x * x for x in w)) if arith is not FLOAT64 else math.hypot(*w)
        v = arith.asarray(sign0 * w / norm)
        iv_w = [mpmath.iv.mpf(1)] + [mpmath.iv.tan(mpmath.iv.mpf([a, b])) for a, b in zip(lo, hi)]
        iv_norm = mpmath.iv.sqrt(sum(x * x for x in iv_w))
        return v, [sign0 * x / iv_norm for x in iv_w]


def _v_by_sampling(oracle: MembershipOracle, k: int, delta: float, rng: np.random.Generator,
                   arith: Arith) -> tuple[np.ndarray, list]:
    """Eq. (14): v_hat = (1 / (R k)) sum (2 MQ(x_i) - 1) x_i, x_i uniform on the sphere, in chunks;
    the enclosures are v_hat +- t (Hoeffding radius at delta)."""
    d = oracle.d
    total = np.zeros(d)
    for start in range(0, k, CHUNK):
        x = rng.standard_normal((min(CHUNK, k - start), d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        h = 2.0 * np.asarray(oracle(x[:, None, :]), dtype=float) - 1.0
        total += h @ x
    with arith.context():
        v = arith.asarray(total) / (sphere_constant(d, arith) * k)
        t = hoeffding_radius(k, d, delta)
        return v, [mpmath.iv.mpf([x - t, x + t]) for x in v]


def _logit(p: Any) -> Any:
    return mpmath.log(p / (1 - p))


@learner(
    name="membership",
    result="Thm B.1",
    relies_on=(
        "thm4.1/one-token", "thmB.1/sphere-constant", "thmB.1/halfspace-mean-d2", "thmB.1/probe-value",
        "thmB.1/monotone", "thmB.1/apriori-interval", "thmB.1/ratio-error", "thmB.1/accuracy-algebra",
        "thmB.1/angle-sign", "thmB.1/angle-to-vector", "lemmaA.1/lipschitz-closed-form", "thmB.1/run",
    ),
    arithmetics=("float64", "mpmath"),
    queries="bisect: 1 + (d-1) n_v + d^2 n_W; paper: k + d^2 n_W (n_v, n_W = log2(width / tau))",
    count=lambda d, method="bisect", W_bound=4.0, mu=0.1, eps_W=1e-3, delta=0.01, samples=None, **_: (
        query_count(d, method, W_bound, mu, eps_W, delta, samples)),
)
def learn_membership(
    oracle: MembershipOracle,
    *,
    W_bound: float,
    mu: float,
    eps_W: float,
    delta: float = 0.01,
    method: str = "bisect",
    samples: int | None = None,
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
) -> Recovery:
    """Recover (W*, v*/||v*||) from membership queries (Thm B.1).

    Parameters
    ----------
    oracle : MembershipOracle
        Answers 1[f*(X) > 0]; its budget bounds every loop.
    W_bound, mu : float
        Known ``W >= 2`` with ``||W*||_F <= W`` and margin ``min |v*_i| >= mu``.
    eps_W, delta : float
        Target ``||W_hat - W*||_F <= eps_W`` (and ``||v_hat - v*||_inf <= eps_v``, the theorem's
        eps_v); delta is the failure probability of ``paper`` (``bisect`` never fails).
    method : {"bisect", "paper"}
        ``paper``: App. B verbatim (Hoeffding sampling, then the W bisection); ``bisect``: angle
        bisection for v (beyond the paper), then the same W bisection.
    samples : int, optional
        ``paper`` only: the sample budget k.  Default: the verbatim Hoeffding count, refused if
        it exceeds :data:`MAX_VERBATIM_SAMPLES`.  A smaller k is run as given, and the
        diagnostics report the radius and the probability it actually buys.
    rng : numpy.random.Generator, optional
        ``paper`` only: source of the sphere samples (seeded for reproducibility).
    arith : Arith
        float64 or mpmath: the bisection is limited only by the arithmetic.

    Returns
    -------
    Recovery
        Diagnostics: method, n_v, n_W, tau, k, the bought (eps_v, delta), the a-posteriori
        bounds ``error_bound`` / ``error_bound_v`` from the final intervals, ``guarantee_met``.

    Raises
    ------
    AssumptionError
        Bad (W, mu, eps_W, delta), or answers contradicting the margin assumption.
    PrecisionLossError
        tau is below what the arithmetic can resolve.
    QueryBudgetExceeded
        The oracle's budget (or, for the verbatim count, MAX_VERBATIM_SAMPLES) is too small.

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof.models import Attention
    >>> from attnproof.oracles import MembershipOracle
    >>> W, v = np.array([[1.0, -0.5], [0.25, 1.5]]), np.array([0.6, -0.8])
    >>> oracle = MembershipOracle(Attention(W, v))
    >>> rec = learn_membership(oracle, W_bound=2.0, mu=0.5, eps_W=1e-6, method="bisect")
    >>> rec.queries == query_count(2, "bisect", 2.0, 0.5, 1e-6, 0.01) == oracle.queries
    True
    >>> bool(np.linalg.norm(rec.W - W) <= 1e-6), rec.diagnostics["guarantee_met"]
    (True, True)
    """
    d = oracle.d
    check_assumptions(W_bound, mu, eps_W, delta, d)
    if method not in METHODS:
        raise InvalidInputError(f"unknown method {method!r}: use one of {METHODS}")
    check_precision(d, W_bound, mu, eps_W, method, arith)
    start = oracle.queries
    eps_v = paper_eps_v(eps_W, mu, W_bound, d)
    n_v, n_W = step_counts(d, W_bound, mu, eps_W)
    diag: dict[str, Any] = {"method": method, "n_W": n_W, "eps_v": eps_v,
                            "tau": paper_tau(eps_W, mu, W_bound, d),
                            "direction_only": "v_hat estimates v*/||v*||: signs are invariant under v -> c v"}
    iv_dps = (arith.dps if isinstance(arith, MP) else 15) + 10
    with mpmath.workdps(iv_dps):
        mpmath.iv.dps = iv_dps
        try:
            if method == "bisect":
                diag.update(n_v=n_v, tau_psi=angle_tau(eps_v, mu, d))
                v, v_iv = _v_by_angles(oracle, n_v, arith)
                diag["confidence"] = 1.0
            else:
                verbatim = hoeffding_samples(eps_v, d, delta)
                if samples is None and verbatim > MAX_VERBATIM_SAMPLES:
                    raise QueryBudgetExceeded(
                        f"the verbatim Hoeffding count is k = {verbatim:.3e} queries "
                        f"(eps_v = {eps_v:.3e}); pass "
                        "samples=k explicitly: the learner reports the radius and probability that k buys"
                    )
                k = verbatim if samples is None else samples
                if not isinstance(k, (int, np.integer)) or k < 1:
                    raise InvalidInputError(f"samples must be a positive integer; got {k!r}")
                if oracle.remaining is not None and k + d * d * n_W > oracle.remaining:
                    raise QueryBudgetExceeded(f"{k + d * d * n_W} queries needed, {oracle.remaining} left")
                v, v_iv = _v_by_sampling(oracle, int(k), delta, rng or np.random.default_rng(0), arith)
                diag.update(k=int(k), k_verbatim=verbatim, eps_v_bought=hoeffding_radius(k, d, delta),
                            delta_bought=hoeffding_delta(k, eps_v, d), confidence=1 - delta)
            small = [i for i, x in enumerate(v_iv) if abs(x).b < mu]
            if small:
                raise AssumptionError(
                    f"|v*_i / ||v*||| < mu = {mu} certainly at i = {small}: the margin assumption fails "
                    "(a zero entry of v*?); see check_target for what stays identifiable"
                )
            W, w_iv, diag["boundary_hits"] = _w_by_bisection(oracle, v, v_iv, W_bound, mu, n_W, arith)
            diag.update(_posterior(W, w_iv, v, v_iv, eps_W, eps_v))
            # a bisection ending on an end of Eq. (22)'s interval means a* may lie outside it
            diag["guarantee_met"] = diag["guarantee_met"] and diag["boundary_hits"] == 0
        finally:
            mpmath.iv.dps = 15
    queries = oracle.queries - start
    diag.update(queries_formula=query_count(d, method, W_bound, mu, eps_W, delta, diag.get("k")),
                reasked_queries=0)  # a bisection never re-asks: every query halves an interval
    return Recovery(W=W, v=v, queries=queries, arith=arith, diagnostics=diag)


# --- beyond the paper: dropping the margin by rotating the tokens ---------------------------


def rotation_margin(d: int, delta_rot: float) -> float:
    """mu' with ``P(min_i |u_i| < mu') <= delta_rot`` for u uniform on S^{d-1}.

    ``|u_1|`` has density ``c_d (1 - t^2)^((d-3)/2)``, ``c_d = Gamma(d/2) / (sqrt(pi) Gamma((d-1)/2))``,
    largest at t = 0 for d >= 3, so ``P(|u_i| < m) <= 2 m c_d``; for d = 2,
    ``P = (2/pi) arcsin(m) <= m`` (c_2 := 1/2); d = 1: u = +-1.  A union bound over the d
    coordinates gives ``mu' = delta_rot / (2 d c_d)`` (about ``delta_rot / (0.8 d^{3/2})``).
    """
    if not 0 < delta_rot < 1:
        raise AssumptionError(f"delta_rot must be in (0, 1); got {delta_rot!r}")
    if d == 1:
        return 1.0
    c = 0.5 if d == 2 else math.exp(math.lgamma(d / 2) - math.lgamma((d - 1) / 2)) / math.sqrt(math.pi)
    return delta_rot / (2 * d * c)


def random_orthogonal(d: int, rng: np.random.Generator, arith: Arith = FLOAT64) -> np.ndarray:
    """A Haar-random orthogonal Q (QR of a Gaussian matrix, signs fixed), orthogonal to the
    arithmetic's precision (mpmath: the QR is done at its digits)."""
    G = rng.standard_normal((d, d))
    if arith is FLOAT64:
        Q, R = np.linalg.qr(G)
        return Q * np.sign(np.diag(R))
    with arith.context():
        Q, R = mpmath.qr(mpmath.matrix(G.tolist()))
        return np.array([[Q[i, k] * mpmath.sign(R[k, k]) for k in range(d)] for i in range(d)], dtype=object)


class RotatedQueries:
    """The learner's window through rotated tokens: a virtual query Y is asked as ``X = Y Q^T``
    (every token ``x = Q y``), so the virtual target is ``(Q^T W* Q, Q^T v*)``
    (identity ``thmB.1/rotation``).  Queries are counted by the wrapped oracle."""

    def __init__(self, oracle: MembershipOracle, Q: np.ndarray) -> None:
        self.oracle, self.Q = oracle, Q

    @property
    def d(self) -> int:
        return self.oracle.d

    @property
    def queries(self) -> int:
        return self.oracle.queries

    @property
    def remaining(self) -> int | None:
        return self.oracle.remaining

    def __call__(self, Y: Any) -> Any:
        return self.oracle(np.asarray(Y) @ self.Q.T)


@learner(
    name="membership-rotated",
    result="beyond the paper (Thm B.1 without the margin)",
    relies_on=(
        "thm4.1/one-token", "thmB.1/probe-value", "thmB.1/monotone", "thmB.1/apriori-interval",
        "thmB.1/ratio-error", "thmB.1/ratio-bound", "thmB.1/accuracy-algebra", "thmB.1/angle-sign",
        "thmB.1/angle-to-vector", "thmB.1/rotation", "thmB.1/run-rotated",
    ),
    arithmetics=("float64", "mpmath"),
    queries="1 + (d-1) n_v + d^2 n_W at mu' = delta_rot / (2 d c_d)",
    count=lambda d, W_bound=4.0, eps_W=1e-3, delta_rot=0.01, **_: query_count(
        d, "bisect", W_bound, rotation_margin(d, delta_rot), eps_W, 0.5),
)
def learn_membership_rotated(
    oracle: MembershipOracle,
    *,
    W_bound: float,
    eps_W: float,
    delta_rot: float = 0.01,
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
) -> Recovery:
    """Thm B.1 without the per-coordinate margin: ``bisect`` on the rotated target (Q^T W* Q, Q^T v*).

    For a Haar-random Q, ``Q^T v*`` is uniform on the sphere, so every coordinate is at least
    ``mu' = rotation_margin(d, delta_rot)`` with probability ``>= 1 - delta_rot``; the Frobenius
    error is invariant under ``W -> Q W Q^T``, and ``||Q Delta||_2 <= sqrt(d) ||Delta||_inf``.
    Only ``||W*||_F <= W`` and ``v* != 0`` are assumed.  Cost: mu' replaces mu in
    :func:`query_count`, i.e. about ``(3.5 d^2 + 5 (d - 1)) log2(mu / mu')`` more queries and
    ``5 log10(mu / mu')`` more digits (the angle accuracy scales like mu^5).

    Returns
    -------
    Recovery
        ``W = Q W'_hat Q^T``, ``v = Q v'_hat``; diagnostics of the inner ``bisect`` run plus
        ``mu_rot``, ``delta_rot``, ``margin_found`` (min |v'_hat_i|) and ``error_bound_v2``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof.arith import MP
    >>> from attnproof.models import Attention
    >>> from attnproof.oracles import MembershipOracle
    >>> W, v = np.array([[1.0, -0.5], [0.25, 1.5]]), np.array([1.0, 0.0])   # v*_2 = 0: no margin
    >>> oracle = MembershipOracle(Attention(W, v, MP(40)))
    >>> rec = learn_membership_rotated(oracle, W_bound=2.0, eps_W=1e-3, rng=np.random.default_rng(0),
    ...                                arith=MP(40))
    >>> float(np.sqrt(np.sum((rec.W - W) ** 2))) <= 1e-3, rec.diagnostics["guarantee_met"]
    (True, True)
    """
    d = oracle.d
    mu_rot = rotation_margin(d, delta_rot)
    Q = random_orthogonal(d, rng or np.random.default_rng(0), arith)
    inner = learn_membership(RotatedQueries(oracle, Q), W_bound=W_bound, mu=mu_rot, eps_W=eps_W, delta=0.5,
                             method="bisect", arith=arith)
    with arith.context():
        W, v = Q @ inner.W @ Q.T, Q @ inner.v
        margin = float(min(abs(x) for x in inner.v))
    diag = dict(inner.diagnostics, method="rotated", mu_rot=mu_rot, delta_rot=delta_rot, margin_found=margin,
                queries_formula=query_count(d, "bisect", W_bound, mu_rot, eps_W, 0.5),
                error_bound_v2=math.sqrt(d) * inner.diagnostics["error_bound_v"], confidence=1 - delta_rot)
    return Recovery(W=W, v=v, queries=inner.queries, arith=arith.name, diagnostics=diag)


def _w_by_bisection(oracle: MembershipOracle, v: np.ndarray, v_iv: list, W_bound: float, mu: float, n_W: int,
                    arith: Arith) -> tuple[np.ndarray, list, int]:
    """Eqs. (18)-(28) for all d^2 entries in parallel: one batch of d^2 probes per step.

    Returns W_hat, the enclosures ``(interval, i, j)`` of W*_ij, and how many bisections ended
    on an end of the a-priori interval (0 whenever the assumptions hold)."""
    d = oracle.d
    iv = mpmath.iv
    with arith.context():
        a_lo, a_hi = apriori_interval(W_bound, mu, arith)
        i_idx, j_idx = np.divmod(np.arange(d * d), d)
        alpha = [v[j] / v[i] for i, j in zip(i_idx, j_idx)]
        sgn = [1 if x > 0 else -1 for x in alpha]
        s = [-g / (2 * arith.scalar(W_bound)) for g in sgn]
        # below a*, sign f(X(a)) = sign(v_i) sign(s): the answer that moves lo up
        lo_answer = np.array([np.int8((v[i] > 0) == (g < 0)) for i, g in zip(i_idx, sgn)])

        def probes(a: np.ndarray) -> np.ndarray:
            return np.stack([probe(i, j, x, t, d, arith) for i, j, x, t in zip(i_idx, j_idx, a, s)])

        kind = float if arith is FLOAT64 else object
        lo, hi = _bisect(oracle, np.array([a_lo] * (d * d), dtype=kind),
                         np.array([a_hi] * (d * d), dtype=kind), probes, lo_answer, n_W, arith)
        band = (1 / (1 + mpmath.exp(mpmath.mpf(1) / 2)), 1 / (1 + mpmath.exp(-mpmath.mpf(1) / 2)))

        def clip(p: Any) -> Any:
            return min(max(p, band[0]), band[1])

        W = arith.zeros((d, d))
        w_iv = []
        for k, (i, j) in enumerate(zip(i_idx, j_idx)):
            p = clip(2 * W_bound * abs(alpha[k]) * ((lo[k] + hi[k]) / 2) ** 2)  # Eqs. (26)-(28)
            W[i, j] = arith.scalar(-2 * W_bound * sgn[k] * _logit(p))
            p_iv = 2 * W_bound * abs(v_iv[j] / v_iv[i]) * iv.mpf([lo[k], hi[k]]) ** 2
            p_iv = iv.mpf([clip(p_iv.a), clip(p_iv.b)])
            w_iv.append((-2 * W_bound * sgn[k] * iv.log(p_iv / (1 - p_iv)), int(i), int(j)))
        hits = sum(int(lo[k] == a_lo or hi[k] == a_hi) for k in range(d * d))
    return W, w_iv, hits


def _posterior(W: np.ndarray, w_iv: list, v: np.ndarray, v_iv: list, eps_W: float,
               eps_v: float) -> dict[str, Any]:
    """A-posteriori bounds from the enclosures: the largest distance from the estimate to an
    end of its enclosure (certain for bisect; on the Hoeffding event for paper)."""
    def dist(x: Any, enc: Any) -> mpmath.mpf:
        return max(abs(mpmath.mpf(x) - enc.a), abs(mpmath.mpf(x) - enc.b))

    entry = [dist(W[i, j], e) for e, i, j in w_iv]
    err_W = float(mpmath.sqrt(mpmath.fsum(e * e for e in entry)))
    err_v = float(max(dist(x, e) for x, e in zip(v, v_iv)))
    return {"error_bound": err_W, "error_bound_v": err_v, "max_entry_bound": float(max(entry)),
            "guarantee_met": err_W <= eps_W and err_v <= eps_v}


# --- identities and bounds ---------------------------------------------------------------


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
    iv = mpmath.iv
    saved = iv.dps
    iv.dps = 30
    try:
        sig = 1 / (1 + iv.exp(-iv.mpf([-0.5, 0.5])))
        return [
            ("sigma(t) - 1/4 >= 0 on |t| <= 1/2", sig - iv.mpf(1) / 4),
            ("a*^2 - lo^2 >= 0", sp.expand((sp.Rational(1, 4) + q) * (mu + r) / (2 * Wb) - lo**2)),
            ("hi^2 - a*^2 >= 0", sp.factor(sp.together(hi**2 - (1 - q) / (2 * Wb * (mu + r))))),
        ]
    finally:
        iv.dps = saved


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
    iv = mpmath.iv
    saved = iv.dps
    iv.dps = 30
    try:
        fn = sp.lambdify((u, z, eta), ratio, modules=[{"mpf": iv.mpf, "sqrt": iv.sqrt}, "mpmath"])
        box = iv.mpf([0, 1])
        L = 2 + iv.exp(iv.mpf(1) / 2) + iv.exp(-iv.mpf(1) / 2)
        return [("L_BAND - (2 + 2 cosh 1/2) >= 0", iv.mpf(str(L_BAND)) - L),
                ("1 - error / eta_W >= 0", 1 - fn(box, box, box))]
    finally:
        iv.dps = saved


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
    iv = mpmath.iv
    saved = iv.dps
    iv.dps = 30
    try:  # tau_psi is linear in eps_v <= mu / 2 and largest at d = 1: tau_psi / mu <= angle_tau(1/2, mu, 1)
        small = 1 / (2 * iv.sqrt(2)) - angle_tau(iv.mpf(1) / 2, iv.mpf([0, 1]), iv.mpf(1))
    finally:
        iv.dps = saved
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


#: Fixed target of ``thmB.1/run``: ||W*||_F = 1.5 <= W_bound = 2, unit v* with every |v*_i| >= 0.5.
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
            (f"{at}: ||W_hat - W*||_F <= error_bound", err_W, rec.diagnostics["error_bound"]),
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
                (f"{at}: ||W_hat - W*||_F <= error_bound", err_W, rec.diagnostics["error_bound"]),
                (f"{at}: ||v_hat - v*||_2 <= sqrt(d) eps_v(mu')", err_v, math.sqrt(d) * eps_v),
                (f"{at}: ||v_hat - v*||_2 <= error_bound_v2", err_v, rec.diagnostics["error_bound_v2"]),
                (f"{at}: queries - count", abs(rec.queries - count), 0),
                (f"{at}: queries asked - queries reported", abs(oracle.queries - rec.queries), 0),
            ]
    return checks
