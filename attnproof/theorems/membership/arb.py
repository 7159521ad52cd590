"""The membership room's Arb enclosures (issue 20): App. B's interval claims again, with Arb.

The registry's bounds ``thmB.1/apriori-interval``, ``thmB.1/accuracy-algebra`` and
``thmB.1/angle-to-vector`` claim ``mpmath.iv`` intervals; here the *mathematical expression of
each claim* is written once more from the paper (App. B, Eqs. (26)-(29), in the registry's
variables u, z, eta) and evaluated with Arb (``python-flint``, C code independent of mpmath) on
the room's constants as the exact rationals they are.  The engine (:mod:`attnproof.verify.arb`)
loads this module and compares; the room's ``__init__`` never imports it (flint is needed only
when the leg runs).
"""

from __future__ import annotations

from fractions import Fraction

import flint
from flint import arb

from ...verify.enclosures import enclosure
from . import L_BAND, TAU_CONST


def _box(lo: float, hi: float) -> arb:
    """The ball covering [lo, hi]."""
    return arb(lo).union(arb(hi))


@enclosure("thmB.1/apriori-interval")
def apriori_interval() -> list[arb]:
    """``thmB.1/apriori-interval``: sigma(t) - 1/4 over |t| <= 1/2."""
    t = _box(-0.5, 0.5)
    return [1 / (1 + (-t).exp()) - arb(1) / 4]


@enclosure("thmB.1/accuracy-algebra")
def accuracy_algebra() -> list[arb]:
    """``thmB.1/accuracy-algebra``: L_BAND - (2 + 2 cosh 1/2) (Lemma A.1's constant at the band
    1/2, in closed form), and 1 - error / eta_W over the box u, z, eta in [0, 1] (mu = u^2,
    W = 2 / z^2, eps_W = eta d).

    App. B, Eqs. (26)-(29): ``eps_v = eps_W mu^3 / (40 W d)``, ``tau = eta mu^3 C / (8 L W^2)``
    (C = TAU_CONST), ``Delta = 2 eps_v / (mu (mu - eps_v))``, error
    ``2 W L [2 W (1/mu + Delta) sqrt(2 / (W mu)) tau + Delta / mu]``; in u, z, eta (worked by
    hand, sqrt(2 / (W mu)) = z / u) the error over eta is
    ``C u^3 z / 2 + C Delta u^5 z / 2 + 8 L / D``
    with ``D = 80 - eta u^4 z^2`` and ``Delta = 2 eta u^2 z^2 / D``."""
    L = arb(flint.fmpq(*Fraction(str(L_BAND)).as_integer_ratio()))  # 4.26 as the decimal it is
    C = arb(flint.fmpq(*Fraction(TAU_CONST).as_integer_ratio()))
    u = z = eta = _box(0.0, 1.0)
    D = 80 - eta * u**4 * z**2
    delta = 2 * eta * u**2 * z**2 / D
    ratio = C * u**3 * z / 2 + C * delta * u**5 * z / 2 + 8 * L / D
    return [L - (2 + 2 * (arb(1) / 2).cosh()), 1 - ratio]


@enclosure("thmB.1/angle-to-vector")
def angle_to_vector() -> list[arb]:
    """``thmB.1/angle-to-vector``: ``1/(2 sqrt 2) - tau_psi / mu`` at its largest, eps_v = mu / 2,
    d = 1: ``1/(2 sqrt 2) - mu^2 / 32`` over mu in [0, 1]."""
    mu = _box(0.0, 1.0)
    return [1 / (2 * arb(2).sqrt()) - (mu / 2) * mu / 16]


__all__ = ["apriori_interval", "accuracy_algebra", "angle_to_vector"]
