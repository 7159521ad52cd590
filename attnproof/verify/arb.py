"""The numerics leg of the formal checks (issue 20): every mpmath.iv enclosure again, with Arb.

The registry's bounds whose claims are ``mpmath.iv`` intervals (Lemma A.1's constant, the
design- and paper-tolerance grids of Thm 6.1, the App. B a-priori interval, accuracy algebra
and angle step) are recomputed here with Arb ball arithmetic (``python-flint``, C code
independent of mpmath) at :data:`PREC` bits.  The Arb side evaluates the *mathematical
expression of each claim*, written once below from the paper (``L = 2 + 2 cosh(band)``, the
closed form, where the registry encloses ``1 / (tau_clip (1 - tau_clip))``; Eq. (6) with Lemma
A.1; App. B Eqs. (26)-(29) in the registry's variables u, z, eta), on the same exact inputs the
registry uses: the float64 constants and tolerances the library computes (every float64 is an
exact rational), read through :func:`inputs`.  A claim passes only when the two enclosures
overlap and both are ``>= 0``.
"""

from __future__ import annotations

import time
from fractions import Fraction
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import flint
from flint import arb

#: Working precision of the Arb enclosures, in bits.
PREC = 200


def inputs() -> dict[str, Any]:
    """The registry and the library inputs the enclosures are computed from (the one adapter).

    ``REGISTRY`` (:mod:`attnproof.proof`), and from :mod:`attnproof.theorems.noisy` and
    :mod:`attnproof.theorems.membership` the designs, the tolerance grid, the library functions
    under test (``design_tolerances``, ``paper_tolerances``) and the constants."""
    from .registry import REGISTRY
    from ..theorems import membership, noisy  # importing the rooms registers every entry
    return {
        "REGISTRY": REGISTRY, "noisy": noisy, "membership": membership,
        "grid": list(noisy._grid()), "u": noisy.UNIT_ROUNDOFF, "ulps": noisy.CONSTANT_ULPS,
    }


def _q(x: float | int) -> arb:
    """A float64 or an int as the exact ball it denotes."""
    return arb(x)


def _box(lo: float, hi: float) -> arb:
    """The ball covering [lo, hi]."""
    return arb(lo).union(arb(hi))


def lipschitz(band: float | arb) -> arb:
    """Lemma A.1's constant in closed form, ``L = 2 + 2 cosh(band)``."""
    return 2 + 2 * arb(band).cosh()


def clip(band: float | arb) -> arb:
    """Thm 6.1's clipping level ``tau_clip = sigma(-band) = 1 / (1 + e^band)``."""
    return 1 / (1 + arb(band).exp())


def _close(value: float, exact: arb, u: float, ulps: int) -> arb:
    """``ulps u |exact| - |value - exact|``: >= 0 iff the float64 value is exact to ``ulps`` roundings."""
    return ulps * _q(u) * abs(exact) - abs(_q(value) - exact)


def _entry_error(L: arb, a: arb, s: arb, tau_f: arb, tau_v: arb, mu: arb) -> arb:
    """Thm 6.1's proof, Eq. (6) with Lemma A.1, for a probe of scale s:
    ``L / (a s) [(tau_f + a tau_v) / (s mu / 2) + tau_v / (mu / 2)]``."""
    return L / (a * s) * ((tau_f + a * tau_v) / (s * mu / 2) + tau_v / (mu / 2))


def lipschitz_bound(inp: dict[str, Any]) -> list[arb]:
    """``lemmaA.1/lipschitz-bound``: 5 - L(1/2), L(1/2) - 4, and every design's float64
    ``lipschitz`` and ``clip`` against L(band) and sigma(-band)."""
    L = lipschitz(arb(1) / 2)
    out = [5 - L, L - 4]
    for design in inp["noisy"].DESIGNS.values():
        out += [_close(design.lipschitz, lipschitz(design.band), inp["u"], inp["ulps"]),
                _close(design.clip, clip(design.band), inp["u"], inp["ulps"])]
    return out


def design_tolerances(inp: dict[str, Any]) -> list[arb]:
    """``thm6.1/design-tolerances``: at each grid point, for CORRECTED and TUNED, the band
    conditions, tau_v <= mu / 2, sqrt(d) tau_v <= eps_v and d x (paired entry error) <= eps_W."""
    noisy, u = inp["noisy"], _q(inp["u"])
    out = []
    for design in (noisy.CORRECTED, noisy.TUNED):
        L, a, band = lipschitz(design.band), _q(design.a), _q(design.band)
        for d, W_bound, mu, eps_W, eps_v in inp["grid"]:
            tol = noisy.design_tolerances(design, eps_W, eps_v, W_bound, mu, d)
            b, W, m = _q(design.b(W_bound)), _q(W_bound), _q(mu)
            b_pair = b * _q(design.pair_shrink)
            tau_f, tau_v = _q(tol.tau_f), _q(tol.tau_v)
            slack = 1 + 4 * u
            paired = _entry_error(L, a, b_pair, tau_f, tau_v, m) + _entry_error(L, a, b, tau_f, tau_v, m)
            out += [band * slack - a * b * W, band * slack - a * b_pair * arb(2).sqrt() * W,
                    m / 2 - tau_v, _q(eps_v) - arb(d).sqrt() * tau_v, _q(eps_W) - d * paired]
    return out


def paper_tolerances(inp: dict[str, Any]) -> list[arb]:
    """``thm6.1/paper-tolerances``: the float64 ``paper_tolerances`` against
    ``tau_f = mu eps_W / (160 W^2 d)`` and ``tau_v = min(mu / 2, eps_v / sqrt d, tau_f)``."""
    out = []
    for d, W_bound, mu, eps_W, eps_v in inp["grid"]:
        tol = inp["noisy"].paper_tolerances(eps_W, eps_v, W_bound, mu, d)
        m = _q(mu)
        tau = m * _q(eps_W) / (160 * _q(W_bound) ** 2 * d)
        tau_v = (m / 2).min(_q(eps_v) / arb(d).sqrt()).min(tau)
        out += [_close(tol.tau_f, tau, inp["u"], inp["ulps"]),
                _close(tol.tau_v, tau_v, inp["u"], inp["ulps"])]
    return out


def apriori_interval(inp: dict[str, Any]) -> list[arb]:
    """``thmB.1/apriori-interval``: sigma(t) - 1/4 over |t| <= 1/2."""
    t = _box(-0.5, 0.5)
    return [1 / (1 + (-t).exp()) - arb(1) / 4]


def accuracy_algebra(inp: dict[str, Any]) -> list[arb]:
    """``thmB.1/accuracy-algebra``: L_BAND - (2 + 2 cosh 1/2), and 1 - error / eta_W over the box
    u, z, eta in [0, 1] (mu = u^2, W = 2 / z^2, eps_W = eta d).

    App. B, Eqs. (26)-(29): ``eps_v = eps_W mu^3 / (40 W d)``, ``tau = eta mu^3 C / (8 L W^2)``
    (C = TAU_CONST), ``Delta = 2 eps_v / (mu (mu - eps_v))``, error
    ``2 W L [2 W (1/mu + Delta) sqrt(2 / (W mu)) tau + Delta / mu]``; in u, z, eta (worked by
    hand, sqrt(2 / (W mu)) = z / u) the error over eta is
    ``C u^3 z / 2 + C Delta u^5 z / 2 + 8 L / D``
    with ``D = 80 - eta u^4 z^2`` and ``Delta = 2 eta u^2 z^2 / D``."""
    memb = inp["membership"]
    L = arb(flint.fmpq(*Fraction(str(memb.L_BAND)).as_integer_ratio()))  # 4.26 as the decimal it is
    C = arb(flint.fmpq(*Fraction(memb.TAU_CONST).as_integer_ratio()))
    u = z = eta = _box(0.0, 1.0)
    D = 80 - eta * u**4 * z**2
    delta = 2 * eta * u**2 * z**2 / D
    ratio = C * u**3 * z / 2 + C * delta * u**5 * z / 2 + 8 * L / D
    return [L - lipschitz(arb(1) / 2), 1 - ratio]


def angle_to_vector(inp: dict[str, Any]) -> list[arb]:
    """``thmB.1/angle-to-vector``: ``1/(2 sqrt 2) - tau_psi / mu`` at its largest, eps_v = mu / 2,
    d = 1: ``1/(2 sqrt 2) - mu^2 / 32`` over mu in [0, 1]."""
    mu = _box(0.0, 1.0)
    return [1 / (2 * arb(2).sqrt()) - (mu / 2) * mu / 16]


#: entry ID -> the Arb enclosures of its interval claims, in the registry's order.
ENCLOSURES: dict[str, Callable[[dict[str, Any]], list[arb]]] = {
    "lemmaA.1/lipschitz-bound": lipschitz_bound,
    "thm6.1/design-tolerances": design_tolerances,
    "thm6.1/paper-tolerances": paper_tolerances,
    "thmB.1/apriori-interval": apriori_interval,
    "thmB.1/accuracy-algebra": accuracy_algebra,
    "thmB.1/angle-to-vector": angle_to_vector,
}


@dataclass
class ArbReport:
    """The Arb leg on one entry: ``passed``, ``seconds``, ``version``, ``detail`` (the checker seam),
    and the claims that failed, as ``(description, mpmath interval, Arb ball, why)``."""

    id: str
    passed: bool
    seconds: float
    version: str
    detail: str
    failures: list[tuple[str, str, str, str]]

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "seconds": self.seconds, "version": self.version,
                "detail": self.detail}


def compare(desc: str, iv: Any, ball: arb) -> str:
    """Why an mpmath interval and an Arb ball of one claim fail (empty when they pass): they must
    overlap and both be >= 0."""
    lo, hi = iv._mpi_
    mp = _mpf_ball(lo).union(_mpf_ball(hi))
    if not mp.overlaps(ball):
        return f"the enclosures do not overlap: mpmath.iv {iv}, Arb {ball.str(20, radius=True)}"
    if not iv.a >= 0:
        return f"mpmath.iv does not show >= 0: {iv}"
    if not ball >= 0:
        return f"Arb does not show >= 0: {ball.str(20, radius=True)}"
    return ""


def _mpf_ball(raw: tuple[int, int, int, int]) -> arb:
    """An endpoint of an mpmath interval (a raw binary float ``(sign, man, exp, bc)``) as the exact
    Arb ball it denotes; an infinite endpoint is the whole line."""
    sign, man, exp, _ = raw
    if man == 0:
        return arb(0) if exp == 0 else arb("+inf").union(arb("-inf"))
    return (-1) ** sign * arb(flint.fmpz(int(man))) * arb(2) ** int(exp)


#: Bounds whose interval claims are not closed-form expressions for Arb to re-evaluate but the
#: output of a certified computation carrying its own proof: the RUB brackets (a branch and bound
#: over the sphere with interval enclosures and float64 rounding covered, ``theorems/lowrank/rub.py``)
#: and the Hessian-count minors (an exact rational determinant, beside which the entry already
#: shows a 256-bit Arb ball).  Re-running those computations in Arb is left open; the list keeps
#: every interval claim of the registry accounted for (``tests/test_arb.py``).
OWN_CERTIFICATE: dict[str, str] = {
    "def2.1/rub-certified": "branch and bound with interval enclosures (its own certificate)",
    "thmA.2/rub-condition": "branch and bound with interval enclosures (its own certificate)",
    **{f"sec7/hessian-count-H{H}-dh{dh}": "an exact rational minor, with its Arb ball in the entry"
       for H, dh in ((2, 2), (3, 2), (2, 3), (3, 3), (2, 4), (3, 4), (2, 5), (2, 6))},
}


def check_entry(id: str, inp: dict[str, Any] | None = None,
                enclosures: dict[str, Callable[[dict[str, Any]], list[arb]]] | None = None) -> ArbReport:
    """Compare the registry's interval claims of ``id`` with their Arb enclosures."""
    inp = inp or inputs()
    fn = (enclosures or ENCLOSURES)[id]
    t0 = time.perf_counter()
    claims = [(desc, q) for desc, q in inp["REGISTRY"][id].build() if hasattr(q, "a") and hasattr(q, "b")]
    with flint.ctx.workprec(PREC):
        balls = fn(inp)
    failures = []
    if len(balls) != len(claims):
        failures.append(("", "", "", f"{len(claims)} interval claims, {len(balls)} Arb enclosures"))
    for (desc, q), ball in zip(claims, balls):
        why = compare(desc, q, ball)
        if why:
            failures.append((desc, str(q), ball.str(20, radius=True), why))
    seconds = time.perf_counter() - t0
    detail = (f"{len(claims)} interval claims: mpmath.iv and Arb ({PREC} bits) overlap and both >= 0"
              if not failures else f"{len(failures)} of {len(claims)} claims fail; first: "
              f"{failures[0][0]}: {failures[0][3]}")
    return ArbReport(id, not failures, seconds, f"python-flint {flint.__version__}", detail, failures)


def check_all() -> list[ArbReport]:
    """:func:`check_entry` on every entry of :data:`ENCLOSURES`."""
    inp = inputs()
    return [check_entry(i, inp) for i in ENCLOSURES]


__all__ = ["PREC", "inputs", "lipschitz", "clip", "ENCLOSURES", "OWN_CERTIFICATE", "ArbReport", "compare",
           "check_entry", "check_all"]
