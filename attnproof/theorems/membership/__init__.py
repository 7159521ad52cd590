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
``>= 1 - delta``).  The enclosures of W* are not clipped to the band (only p's
point estimate is, as in Eq. (28)), so they hold even if ``||W*||_F > W``; answers that put an
entry certainly beyond ``[-W, W]`` (where the clip would be wrong), or a bisection on an end of
Eq. (22)'s interval, are refused (:class:`AssumptionError`), as answers breaking the margin are;
``norm_lower_bound`` reports a certain lower bound on ``||W*||_F``.  Every bisection has a
precision floor (:class:`PrecisionLossError`) and
runs through the oracle's query budget.

**The room.**  :mod:`.parameters` (the known parameters, every constant and count),
:mod:`.oracle` (:class:`MembershipOracle`, the rotated window), :mod:`.learners` (the learners
and their ``@learner`` facts), :mod:`.identities` (the identities, bounds and runs the learners
rely on) and :mod:`.runner` (the learners' options, the bench's target and runners,
registered with :mod:`attnproof.room`).  Everything public is importable
from ``attnproof.theorems.membership``.
"""

from __future__ import annotations

from . import identities
from .learners import angle_probes, learn_membership, learn_membership_rotated, probe, random_orthogonal
from .oracle import MembershipOracle, RotatedQueries
from .parameters import (
    CHUNK,
    DELTA,
    DELTA_ROT,
    EPS_W,
    L_BAND,
    MAX_SAMPLES,
    MAX_VERBATIM_SAMPLES,
    METHOD,
    METHODS,
    TAU_CONST,
    W_BOUND,
    angle_tau,
    apriori_interval,
    bisection_steps,
    check_assumptions,
    check_precision,
    check_target,
    default_mu,
    entry_error_bound,
    generator,
    hoeffding_delta,
    hoeffding_radius,
    hoeffding_samples,
    information_floor,
    paper_eps_v,
    paper_tau,
    query_count,
    rotation_margin,
    sphere_constant,
    step_counts,
)

__all__ = [
    "CHUNK", "DELTA", "DELTA_ROT", "EPS_W", "L_BAND", "MAX_SAMPLES", "MAX_VERBATIM_SAMPLES", "METHOD",
    "METHODS",
    "MembershipOracle", "RotatedQueries", "TAU_CONST", "W_BOUND", "angle_probes", "angle_tau",
    "apriori_interval", "bisection_steps", "check_assumptions", "check_precision", "check_target",
    "default_mu", "entry_error_bound", "generator", "hoeffding_delta", "hoeffding_radius",
    "hoeffding_samples",
    "identities", "information_floor", "learn_membership", "learn_membership_rotated", "paper_eps_v",
    "paper_tau", "probe", "query_count", "random_orthogonal", "rotation_margin", "sphere_constant",
    "step_counts",
]
