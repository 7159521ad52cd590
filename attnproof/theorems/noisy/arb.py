"""The noisy room's Arb enclosures (issue 20): Lemma A.1 and Thm 6.1 again, in ball arithmetic.

The registry's bounds ``lemmaA.1/lipschitz-bound``, ``thm6.1/design-tolerances`` and
``thm6.1/paper-tolerances`` claim ``mpmath.iv`` intervals; here the *mathematical expression of
each claim* is written once more from the paper and evaluated with Arb (``python-flint``, C code
independent of mpmath), on the same exact inputs the registry uses: the float64 constants and
tolerances this room computes (every float64 is an exact rational).  ``L = 2 + 2 cosh(band)`` is
Lemma A.1's closed form, where the registry encloses ``1 / (tau_clip (1 - tau_clip))``; the entry
error is Eq. (6) with Lemma A.1.  The engine (:mod:`attnproof.verify.arb`) loads this module and
compares; the room's ``__init__`` never imports it (flint is needed only when the leg runs).
"""

from __future__ import annotations

from flint import arb

from ...verify.enclosures import enclosure
from . import (
    CONSTANT_ULPS,
    CORRECTED,
    DESIGNS,
    TUNED,
    UNIT_ROUNDOFF,
    _grid,
    design_tolerances as _design_tolerances,
    paper_tolerances as _paper_tolerances,
)


def _q(x: float | int) -> arb:
    """A float64 or an int as the exact ball it denotes."""
    return arb(x)


def lipschitz(band: float | arb) -> arb:
    """Lemma A.1's constant in closed form, ``L = 2 + 2 cosh(band)``."""
    return 2 + 2 * arb(band).cosh()


def clip(band: float | arb) -> arb:
    """Thm 6.1's clipping level ``tau_clip = sigma(-band) = 1 / (1 + e^band)``."""
    return 1 / (1 + arb(band).exp())


def _close(value: float, exact: arb) -> arb:
    """``ulps u |exact| - |value - exact|``: >= 0 iff the float64 value is exact to
    :data:`~attnproof.theorems.noisy.CONSTANT_ULPS` roundings."""
    return CONSTANT_ULPS * _q(UNIT_ROUNDOFF) * abs(exact) - abs(_q(value) - exact)


def _entry_error(L: arb, a: arb, s: arb, tau_f: arb, tau_v: arb, mu: arb) -> arb:
    """Thm 6.1's proof, Eq. (6) with Lemma A.1, for a probe of scale s:
    ``L / (a s) [(tau_f + a tau_v) / (s mu / 2) + tau_v / (mu / 2)]``."""
    return L / (a * s) * ((tau_f + a * tau_v) / (s * mu / 2) + tau_v / (mu / 2))


@enclosure("lemmaA.1/lipschitz-bound")
def lipschitz_bound() -> list[arb]:
    """``lemmaA.1/lipschitz-bound``: 5 - L(1/2), L(1/2) - 4, and every design's float64
    ``lipschitz`` and ``clip`` against L(band) and sigma(-band)."""
    L = lipschitz(arb(1) / 2)
    out = [5 - L, L - 4]
    for design in DESIGNS.values():
        out += [_close(design.lipschitz, lipschitz(design.band)), _close(design.clip, clip(design.band))]
    return out


@enclosure("thm6.1/design-tolerances")
def design_tolerances() -> list[arb]:
    """``thm6.1/design-tolerances``: at each grid point, for CORRECTED and TUNED, the band
    conditions, tau_v <= mu / 2, sqrt(d) tau_v <= eps_v and d x (paired entry error) <= eps_W."""
    u = _q(UNIT_ROUNDOFF)
    out = []
    for design in (CORRECTED, TUNED):
        L, a, band = lipschitz(design.band), _q(design.a), _q(design.band)
        for d, W_bound, mu, eps_W, eps_v in _grid():
            tol = _design_tolerances(design, eps_W, eps_v, W_bound, mu, d)
            b, W, m = _q(design.b(W_bound)), _q(W_bound), _q(mu)
            b_pair = b * _q(design.pair_shrink)
            tau_f, tau_v = _q(tol.tau_f), _q(tol.tau_v)
            slack = 1 + 4 * u
            paired = _entry_error(L, a, b_pair, tau_f, tau_v, m) + _entry_error(L, a, b, tau_f, tau_v, m)
            out += [band * slack - a * b * W, band * slack - a * b_pair * arb(2).sqrt() * W,
                    m / 2 - tau_v, _q(eps_v) - arb(d).sqrt() * tau_v, _q(eps_W) - d * paired]
    return out


@enclosure("thm6.1/paper-tolerances")
def paper_tolerances() -> list[arb]:
    """``thm6.1/paper-tolerances``: the float64 ``paper_tolerances`` against
    ``tau_f = mu eps_W / (160 W^2 d)`` and ``tau_v = min(mu / 2, eps_v / sqrt d, tau_f)``."""
    out = []
    for d, W_bound, mu, eps_W, eps_v in _grid():
        tol = _paper_tolerances(eps_W, eps_v, W_bound, mu, d)
        m = _q(mu)
        tau = m * _q(eps_W) / (160 * _q(W_bound) ** 2 * d)
        tau_v = (m / 2).min(_q(eps_v) / arb(d).sqrt()).min(tau)
        out += [_close(tol.tau_f, tau), _close(tol.tau_v, tau_v)]
    return out


__all__ = ["lipschitz", "clip", "lipschitz_bound", "design_tolerances", "paper_tolerances"]
