"""Thm B.1's known parameters and every constant the learners use (App. B).

The assumption checks, the paper's ``eps_v`` and ``tau``, the sphere constant R and the
Hoeffding count (Eqs. (12)-(15)), the a-priori interval (22), the angle accuracy of ``bisect``,
the step and query counts, the information floor and the rotation margin ``mu'``: the functions
the room's bounds (:mod:`.identities`) prove things about and the learners (:mod:`.learners`)
call.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from ...arith import FLOAT64, MP, Arith
from ...errors import AssumptionError, InvalidInputError, NonFiniteError, PrecisionLossError, check_rng

#: Upper bound on the Lipschitz constant of sigma^{-1} on [sigma(-1/2), sigma(1/2)],
#: 2 + 2 cosh(1/2) = 4.2553 (the proof uses 5; bound ``thmB.1/accuracy-algebra``).
L_BAND = 4.26
#: The proof's unnamed "Const" in tau = eta_W mu^3 Const / (8 L W^2), made explicit.
TAU_CONST = 1 / 8
#: Largest verbatim Hoeffding count the ``paper`` learner runs without an explicit budget.
MAX_VERBATIM_SAMPLES = 10**8
#: The ceiling on any sample budget k of ``paper`` (about an hour of sampling at d = 6 on one
#: core): a larger k is refused before any query, whatever the oracle's budget.
MAX_SAMPLES = 10**9
#: Samples per oracle call in the sampling step (memory, not queries).
CHUNK = 2**16
#: The learners' methods: App. B verbatim, and the angle bisection (beyond the paper).
METHODS = ("paper", "bisect")

# --- the defaults, declared once (the learners, the registered counts and the bench read them) ---

#: The method when none is named.
METHOD = "bisect"
#: The known norm bound ``W >= 2`` of a bench run or a count when none is given (a learner takes
#: it as a required argument: it is the theorem's known W).
W_BOUND = 4.0
#: The accuracy asked for W when none is given.
EPS_W = 1e-3
#: The failure probability of ``paper``'s sampling step.
DELTA = 0.01
#: The probability that the rotation misses the margin (``learn_membership_rotated``).
DELTA_ROT = 0.01


def default_mu(d: int) -> float:
    """The margin of a bench run or a count when none is given: ``1 / (2 sqrt d)``, inside the
    theorem's range ``(0, 1/sqrt(d)]`` at every d (a unit v* with every ``|v*_i| >= mu`` exists)."""
    return 1 / (2 * math.sqrt(d))


# --- the parameters of the theorem ---------------------------------------------------------


def _real(name: str, x: Any) -> float:
    """``x`` as a float: Python and numpy reals accepted; bools, strings, None and complex refused
    (:class:`InvalidInputError`), and NaN (:class:`NonFiniteError`); an infinity is left to the
    range checks."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise InvalidInputError(f"{name} must be a real number; got {x!r}")
    if math.isnan(x):
        raise NonFiniteError(f"{name} must be a real number; got NaN")
    return float(x)


def generator(rng: Any) -> np.random.Generator:
    """The learners' source of randomness: a Generator as given, an integer seed (numpy's too) as
    ``default_rng(seed)``, None as ``default_rng(0)`` (reproducible); anything else is
    :class:`InvalidInputError`."""
    return np.random.default_rng(0) if rng is None else check_rng("rng", rng)


def check_assumptions(
    W_bound: Any, mu: Any, eps_W: Any, delta: Any, d: int
) -> tuple[float, float, float, float]:
    """Raise unless Thm B.1's known parameters make sense; return them as floats.

    ``W >= 2``; ``0 < mu <= 1/sqrt(d)`` (``||v*|| = 1`` with every ``|v*_i| >= mu`` forces
    ``d mu^2 <= 1``); ``eps_W`` and ``delta`` in (0, 1) (:class:`AssumptionError`).  Numpy
    scalars are accepted; a non-real or d not a positive integer is :class:`InvalidInputError`.
    """
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1:
        raise InvalidInputError(f"d must be a positive integer; got {d!r}")
    W_bound, mu, eps_W, delta = (_real(n, x) for n, x in
                                 (("W_bound", W_bound), ("mu", mu), ("eps_W", eps_W), ("delta", delta)))
    if not (math.isfinite(W_bound) and W_bound >= 2):
        raise AssumptionError(f"Thm B.1 needs a known norm bound W >= 2 on ||W*||_F; got W = {W_bound}")
    if not (math.isfinite(mu) and 0 < mu <= 1 / math.sqrt(d) * (1 + 1e-12)):
        raise AssumptionError(
            f"Thm B.1 needs a margin 0 < mu <= 1/sqrt(d) = {1 / math.sqrt(d):.4g} (||v*|| = 1 and every "
            f"|v*_i| >= mu); got mu = {mu}. With mu = 0 see check_target"
        )
    for name, x in (("eps_W", eps_W), ("delta", delta)):
        if not 0 < x < 1:
            raise AssumptionError(f"Thm B.1 is stated for {name} in (0, 1); got {x!r}")
    return W_bound, mu, eps_W, delta


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
    return arith.evaluate(lambda m: m.gamma(m.mpf(d) / 2) / (m.sqrt(m.pi) * m.gamma(m.mpf(d + 1) / 2)))


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
    with arith.context():
        W, m = arith.scalar(W_bound), arith.scalar(mu)
        return arith.sqrt(m / (8 * W)), arith.sqrt(1 / (2 * W * m))


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
    W_bound, mu, eps_W, delta = check_assumptions(W_bound, mu, eps_W, delta, d)
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


def rotation_margin(d: int, delta_rot: float) -> float:
    """mu' with ``P(min_i |u_i| < mu') <= delta_rot`` for u uniform on S^{d-1}.

    ``|u_1|`` has density ``c_d (1 - t^2)^((d-3)/2)``, ``c_d = Gamma(d/2) / (sqrt(pi) Gamma((d-1)/2))``,
    largest at t = 0 for d >= 3, so ``P(|u_i| < m) <= 2 m c_d``; for d = 2,
    ``P = (2/pi) arcsin(m) <= m`` (c_2 := 1/2); d = 1: u = +-1.  A union bound over the d
    coordinates gives ``mu' = delta_rot / (2 d c_d)`` (about ``delta_rot / (0.8 d^{3/2})``).
    """
    delta_rot = _real("delta_rot", delta_rot)
    if not 0 < delta_rot < 1:
        raise AssumptionError(f"delta_rot must be in (0, 1); got {delta_rot!r}")
    if d == 1:
        return 1.0
    c = 0.5 if d == 2 else math.exp(math.lgamma(d / 2) - math.lgamma((d - 1) / 2)) / math.sqrt(math.pi)
    return delta_rot / (2 * d * c)
