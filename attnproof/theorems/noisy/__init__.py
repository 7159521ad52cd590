"""Theorem 6.1 and Lemma A.1: recovery from approximate value queries (answers within +-tau).

The probes are scaled so that every logit handed to sigma^{-1} stays in a band where sigma^{-1}
is Lipschitz: with ``a = 1/2``, ``b = 1/W_bound`` and ``X = [(b u + a e_j)^T; (a e_j)^T]`` the
logit is ``a b u^T W* e_j`` (identity ``thm6.1/probe-logit``); the estimated attention weight is
clipped to ``[sigma(-1/2), 1 - sigma(-1/2)]`` and Lemma A.1 bounds the error of sigma^{-1}.

The module follows the room convention: this derivation, the assumption checks
(:func:`check_assumptions`), the tolerances, the learner :func:`learn_noisy`, then the identities
and bounds it relies on (Lemma A.1, the probe logit, the tolerance algebra, Erratum E1).

**Erratum E1 (found by the property tests, see the book chapter).**  For a coordinate with
``v*_i = 0`` the proof probes with ``u = e_i + e_p``; its logit is ``a b (W*_ij + W*_pj)``,
which can reach ``(1/2)(1/W_bound)(sqrt(2) W_bound) = 0.707 > 1/2`` when ``||W*||_F <= W_bound``
is concentrated on those two entries.  Then ``alpha*`` lies outside the clipping interval,
Lemma A.1 does not apply, and clipping biases the estimate by up to
``(sqrt(2) - 1) W_bound >= 0.83`` -- for *every* tolerance, even tau = 0.  The correction used by
:data:`CORRECTED` and :data:`TUNED` scales the paired probes by ``1/sqrt(2)``
(``b_pair = b / sqrt(2)``), which restores ``|logit| <= 1/2``; :func:`design_tolerances`
re-derives the tolerance for it.

**Beyond the paper.**  The logit band 1/2 is a choice.  With ``b = 2 band / W_bound`` the
Lipschitz constant is ``L(band) = 1 / (sigma(band) sigma(-band)) = 2 + 2 cosh(band)``
(identity ``lemmaA.1/lipschitz-closed-form``, whose symbol is called beta) while the noise
amplification ``1 / (a b)`` and ``1 / b`` fall like 1/band, so the error per unit of tau scales
like ``(1 + cosh band) / band^2``, minimised where ``band tanh(band / 2) = 2``, i.e.
``band* = 2.3994`` (:data:`BETA_STAR`, identity ``thm6.1/optimal-beta``): :data:`TUNED`
supports a tolerance several times larger than the paper's for the same guarantee.

**Names.**  ``W`` is always a matrix (``W*`` the target, ``W_hat`` the estimate); the known
bound on ``||W*||_F`` -- the paper's scalar W -- is ``W_bound``.  The logit band is
:attr:`ProbeDesign.band` (the paper's 1/2), not ``beta``, which names the output offset of a
head with biases (:class:`attnproof.recovery.Recovery`).

**float64.**  The proof is exact; the learner is float64, and so are the oracles and their
adversaries.  An answer is known to ``~u |f|`` (``u = 2^-53``) and the proof's chain amplifies it
like tau, by ``~ L W_bound^2 / (a band^2 mu)``: below some tolerance (``W_bound >~ 1e7``, or
``eps_W <~ 1e-14``) float64 cannot deliver the guarantee at all.  :func:`float64_floor` derives
what each step adds, :func:`design_tolerances` subtracts it, and :func:`learn_noisy` refuses
(:class:`~attnproof.errors.PrecisionLossError`: before any query when no margin could help, else
from the measured |v_hat| after the d one-token queries) rather than return a wrong answer;
each recovery carries an a-posteriori ``error_bound``.  Refusing rather than switching to mpmath
is deliberate: answers that arrive as float64 carry no more digits, whatever precision
the learner computes in.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import numbers
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from ...arith import FLOAT64, SYMPY, Arith
from ...errors import (
    AssumptionError,
    InvalidInputError,
    NonFiniteError,
    NonIdentifiableError,
    PrecisionLossError,
)
from ...measure import Session
from ...models import NAIVE, Attention, Rounding, declared_rounding, scores
from ...oracles import ADVERSARIES, ApproxOracle, DeclaresTolerance, ValueOracle
from ...verify.formulas import _within, symbols
from ...verify.registry import (
    LEARNERS, RunCheck as Check, BoundClaim as Claim, Pair, bound, identity, learner, run_check as run,
)
from ...recovery import Recovery


def sigmoid(t: float) -> float:
    """sigma(t) = 1 / (1 + e^{-t})."""
    return 1.0 / (1.0 + math.exp(-t))


@dataclass(frozen=True)
class ProbeDesign:
    """How the Thm 6.1 probes are scaled.

    Attributes
    ----------
    name : str
    band : float
        Bound on |logit| of a direct probe: ``b = 2 band / W_bound`` (the paper: band = 1/2,
        b = 1/W_bound).  Called ``beta`` in the identities ``lemmaA.1/lipschitz-closed-form``
        and ``thm6.1/optimal-beta``; renamed here so as not to collide with a head's output
        offset beta.
    pair_shrink : float
        Factor applied to b for the paired probes ``u = e_i + e_p`` (the paper: 1, which is
        Erratum E1; the correction: 1/sqrt(2)).
    a : float
        Scale of e_j in both tokens (the paper: 1/2).
    """

    name: str
    band: float
    pair_shrink: float
    a: float = 0.5

    def __post_init__(self) -> None:
        a = self.a
        if not (isinstance(a, float) and a > 0 and math.frexp(a)[0] == 0.5):
            raise InvalidInputError(
                f"the probe scale a must be a positive power of two (so that s + a is exact); got {a!r}"
            )

    @property
    def clip(self) -> float:
        """tau_clip = sigma(-band): the clipping interval is [tau_clip, 1 - tau_clip]."""
        return sigmoid(-self.band)

    @property
    def lipschitz(self) -> float:
        """L = 1 / (tau_clip (1 - tau_clip)) = 2 + 2 cosh(band) (Lemma A.1)."""
        return 2 + 2 * math.cosh(self.band)

    @property
    def pairs_in_band(self) -> bool:
        """Whether paired probes keep |logit| <= band (false for PAPER: Erratum E1)."""
        return self.pair_shrink * math.sqrt(2) <= 1 + 1e-12

    def b(self, W_bound: float) -> float:
        """Scale of u in the direct probes: ``2 band / W_bound`` (W_bound > 0 finite), rounded down
        to a float64 s with ``s + a`` exact (:meth:`exact_scale`)."""
        W_bound = _real("W_bound", W_bound)
        if not (0 < W_bound < math.inf):
            raise AssumptionError(f"the norm bound must be positive and finite; got W_bound = {W_bound}")
        return self.exact_scale(2 * self.band / W_bound)

    def b_pair(self, W_bound: float) -> float:
        """Scale of u = e_i + e_p in the paired probes: ``pair_shrink b``, rounded down as ``b``."""
        return self.exact_scale(self.b(W_bound) * self.pair_shrink)

    def exact_scale(self, s: float) -> float:
        """The largest multiple of ``q = ulp(a + s)`` not above ``s``: a probe entry ``s' + a`` is then
        exact in float64 (a, a power of two at most a + s, and s' are multiples of q, and
        ``s' + a <= s + a`` stays in q's binade), so the probe is what the proof asks for at s' and
        its rounding costs nothing.  s' <= s keeps every logit in the band (relative change
        ``<= q / s``).

        Raises
        ------
        PrecisionLossError
            If s < q (W_bound >~ 9e15 for a = 1/2): float64 cannot hold s beside a at all.
        """
        q = math.ulp(self.a + s)
        if s < q:
            raise PrecisionLossError(
                f"the probe scale {s:.3g} is below the float64 spacing {q:.3g} of the entries a + s "
                f"(a = {self.a}): float64 cannot write these probes; the norm bound is too large"
            )
        return math.floor(s / q) * q


#: Theorem 6.1's proof, verbatim: a = 1/2, b = 1/W_bound, paired probes with the same b.
PAPER = ProbeDesign("paper", band=0.5, pair_shrink=1.0)
#: The proof with Erratum E1 corrected: paired probes scaled by 1/sqrt(2).
CORRECTED = ProbeDesign("corrected", band=0.5, pair_shrink=1 / math.sqrt(2))
#: band* solving band tanh(band / 2) = 2, the minimiser of (1 + cosh band) / band^2.
BETA_STAR = float(mpmath.findroot(lambda t: t * mpmath.tanh(t / 2) - 2, 2.4))
#: The corrected design at the error-optimal logit band band*.
TUNED = ProbeDesign("tuned", band=BETA_STAR, pair_shrink=1 / math.sqrt(2))

DESIGNS = {d.name: d for d in (PAPER, CORRECTED, TUNED)}


@dataclass(frozen=True)
class Tolerances:
    """Oracle tolerances for the one-token (tau_v) and two-token (tau_f) queries."""

    tau_f: float
    tau_v: float

    @property
    def tau(self) -> float:
        """A single tolerance valid for every query."""
        return min(self.tau_f, self.tau_v)


def _real(name: str, x: Any) -> float:
    """``x`` as a float: numpy scalars accepted; bools, strings, None refused; NaN refused."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise InvalidInputError(f"{name} must be a real number; got {x!r}")
    value = float(x)
    if math.isnan(value):
        raise NonFiniteError(f"{name} is NaN")
    return value


def _width(d: Any) -> int:
    """``d`` as an int: numpy integers accepted; bools, floats and d <= 0 refused."""
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral) or d <= 0:
        raise InvalidInputError(f"the width d must be a positive integer; got {d!r}")
    return int(d)


def _design(design: Any) -> ProbeDesign:
    """``design`` if it is a :class:`ProbeDesign`, else :class:`InvalidInputError`."""
    if not isinstance(design, ProbeDesign):
        raise InvalidInputError(f"design must be a ProbeDesign (PAPER, CORRECTED, TUNED); got {design!r}")
    return design


def check_assumptions(
    W_bound: float, mu: float, eps_W: float | None = None, eps_v: float | None = None
) -> tuple[float, float, float | None, float | None]:
    """Validate Thm 6.1's parameters; return them as floats ``(W_bound, mu, eps_W, eps_v)``.

    Raises
    ------
    InvalidInputError
        A parameter is not a real number (:class:`NonFiniteError` if it is NaN).
    AssumptionError
        Outside the theorem's range (infinities included): ``W_bound >= 2`` finite,
        ``0 < mu <= 1``, ``eps in (0, 1)``.
    """
    W_bound, mu = _real("W_bound", W_bound), _real("mu", mu)
    eps = [None if e is None else _real(name, e) for name, e in (("eps_W", eps_W), ("eps_v", eps_v))]
    if not (math.isfinite(W_bound) and W_bound >= 2):
        raise AssumptionError(
            f"Thm 6.1 needs a known norm bound W_bound >= 2 on ||W*||_F; got W_bound = {W_bound}"
        )
    if not mu > 0:
        raise AssumptionError(
            f"Thm 6.1 needs a margin mu > 0 (min |v*_i| over v*_i != 0); got mu = {mu}: "
            "with mu = 0 no tolerance tau > 0 can guarantee anything"
        )
    if mu > 1:
        raise AssumptionError(f"mu = {mu} > 1 contradicts ||v*||_2 <= 1")
    for name, e in zip(("eps_W", "eps_v"), eps, strict=True):
        if e is not None and not 0 < e < 1:
            raise AssumptionError(f"Thm 6.1 is stated for {name} in (0, 1); got {e}")
    return W_bound, mu, eps[0], eps[1]


def support_threshold(mu: Any) -> Any:
    """The split of Thm 6.1's proof: ``|v_hat_i| > mu / 2`` means ``v*_i != 0``.

    With answers within ``tau < mu / 2``, a zero v*_i answers at most tau and a non-zero one at
    least ``mu - tau``: mu / 2 is the one threshold that separates them for every such tau
    (bound ``thm6.1/support-split``); the learner also refuses ``tau >=`` it.  Any arithmetic
    (the bound evaluates it on a sympy symbol).
    """
    return mu / 2


def paper_tolerances(eps_W: float, eps_v: float, W_bound: float, mu: float, d: int) -> Tolerances:
    """The proof's explicit tolerances (first case halved, as its last line says).

    ``tau_f = mu eps_W / (160 W_bound^2 d)`` and
    ``tau_v = min(mu / 2, eps_v / sqrt(d), mu eps_W / (160 W_bound^2 d))``; the proof's displayed
    choice of tau_v omits eps_v / sqrt(d), which its first paragraph needs for
    ``||v_hat - v*||_2 <= eps_v``.  Exact arithmetic: see :func:`design_tolerances` for float64.
    """
    W_bound, mu, eps_W, eps_v = check_assumptions(W_bound, mu, eps_W, eps_v)
    d = _width(d)
    t = mu * eps_W / (160 * W_bound**2 * d)
    return Tolerances(tau_f=t, tau_v=min(support_threshold(mu), eps_v / math.sqrt(d), t))


def _per_tau(design: ProbeDesign, s: float, m: float) -> float:
    """Error of ``T_ij = sigma^{-1}(clip alpha_hat) / (a s)`` per unit tolerance, for a probe of
    scale ``s`` whose answer is divided by ``s v_hat`` with ``|v_hat| >= m``.

    ``alpha_hat - alpha* = (N_hat - N) / (s v_hat) + alpha* (v - v_hat) / v_hat`` with
    ``|N_hat - N| <= (1 + a) tau`` and ``alpha* <= 1``; Lemma A.1 multiplies by L, and the
    division by ``a s`` gives ``L / (a s) ((1 + a) / (s m) + 1 / m)``.
    """
    a, L = design.a, design.lipschitz
    return L / (a * s) * ((1 + a) / (s * m) + 1 / m)


def entry_error_per_tau(design: ProbeDesign, W_bound: float, mu: float) -> tuple[float, float]:
    """Worst-case error of a direct and of a paired entry of W_hat per unit tolerance.

    From the proof's chain (Eq. (6) and Lemma A.1) with tau_f = tau_v = tau, for a probe of
    scale b: ``|alpha_hat - alpha*| <= (2 / (b mu)) (1 + a) tau + (2 / mu) tau`` (as
    ``|v_hat_i| >= mu / 2``) and ``|W_hat_ij - W*_ij| <= L / (a b) |alpha_hat - alpha*|``; a
    paired entry adds the error of W_hat_pj.
    """
    design = _design(design)
    W_bound, mu, _, _ = check_assumptions(W_bound, mu)
    b = design.b(W_bound)
    m = support_threshold(mu)  # every row is divided by a |v_hat| above the split
    direct = _per_tau(design, b, m)
    return direct, direct + _per_tau(design, design.b_pair(W_bound), m)


#: Unit roundoff of float64.
UNIT_ROUNDOFF = 2.0**-53


@dataclass(frozen=True)
class Float64Floor:
    """What float64 adds to the proven error of :func:`learn_noisy` (see :func:`float64_floor`).

    Attributes
    ----------
    tau : float
        Bound on the error of a float64 answer ``fl(f*(X))`` for every probe: it adds to the
        oracle's tolerance.
    direct, paired : float
        Bound on the error the learner's own float64 steps add to a direct / paired entry.
    """

    tau: float
    direct: float
    paired: float


def float64_floor(design: ProbeDesign, W_bound: float, d: int, rounding: Rounding = NAIVE) -> Float64Floor:
    """First-order float64 rounding of Thm 6.1's learner, doubled to cover higher orders (but a
    faithful answer's single final rounding, which has none).

    ``rounding``: how the oracle declares its answers rounded (:class:`~attnproof.models.Rounding`;
    ``u`` below is its ``term`` in the answers' dot products, u itself for :data:`NAIVE`, and a
    faithful answer adds its one final rounding ``final |f| <= final (a + b)``).

    With ``u = 2^-53``, ``b = design.b(W_bound)`` and a probe of scale ``s`` (``b`` or ``b_pair``):

    * **answers**: ``f = a v_j + alpha s u^T v`` with ``|f| <= a + b``.  Evaluating it in
      float64 (dot products of length d, softmax) errs by ``(d + 4) u (2 a + 2 b)``; the
      scores ``s_1, s_2`` err by ``2 (d + 2) u |x|^2 W_bound`` with ``|x| <= a + sqrt(2) b``,
      which moves f by at most ``alpha' s sqrt(2)`` times that, i.e. by
      ``(d + 2) u sqrt(2) band (a + sqrt(2) b)^2`` (as ``b W_bound = 2 band``).  This acts as
      an extra tolerance, amplified by the ``1 / (b mu)`` of the proof's chain: the floor
      grows like ``d u W_bound^2 / mu``.
      The final rounding of a faithful answer is one rounding of the extended-precision value
      ``y_ext``: ``final |y_ext| <= final (a + b) + final E`` (E the doubled dot-product terms
      above, which cover ``final E``), so it is charged once, not doubled.
    * **probe**: none.  b and b_pair are float64 scales s with ``s + a`` exact
      (:meth:`ProbeDesign.exact_scale`), so the probes are exactly the proof's (issue 23 item 9:
      ``fl(s + a) - a`` was charged ``(L + band) u (s + a) / (a s^2)`` per entry, 0.1 at
      W_bound = 1e7).
    * **learner**: alpha_hat (relative ``3 u``), sigma^{-1} (absolute ``3 u (band + 1)``), the
      division by ``a s`` and the paired subtraction: ``3 u (L + 2 band + 1) / (a s)``.
    """
    design, d = _design(design), _width(d)
    u, a, L, band = UNIT_ROUNDOFF, design.a, design.lipschitz, design.band
    b, b_pair = design.b(W_bound), design.b_pair(W_bound)

    def steps(s: float) -> float:
        return 2 * 3 * u * (L + 2 * band + 1) / (a * s)

    t = u if rounding.term is None else rounding.term  # the answers' unit per term
    tau = (2 * (d + 4) * t * ((2 * a + 2 * b) + math.sqrt(2) * band * (a + math.sqrt(2) * b) ** 2)
           + rounding.final * (a + b))
    return Float64Floor(tau=tau, direct=steps(b), paired=steps(b) + steps(b_pair))


def design_tolerances(
    design: ProbeDesign, eps_W: float, eps_v: float, W_bound: float, mu: float, d: int
) -> Tolerances:
    """The largest tau_f = tau_v for which the (corrected) analysis guarantees both bounds in float64.

    Every entry error, float64 rounding included (:func:`float64_floor`), is at most
    ``eps_W / d`` (so ``||W_hat - W*||_F <= eps_W``), and ``sqrt(d) (tau_v + floor) <= eps_v``;
    ``tau_v + floor < mu / 2`` keeps the zero / non-zero split of v exact.

    Raises
    ------
    AssumptionError
        For the paper's own design, whose paired probes can leave the clipping band
        (Erratum E1): no tolerance makes its analysis valid.
    PrecisionLossError
        If the tolerance would be below the float64 resolution of the answers: float64
        cannot deliver (eps_W, eps_v) for this (W_bound, mu, d) at any tolerance.
    """
    design = _design(design)
    W_bound, mu, eps_W, eps_v = check_assumptions(W_bound, mu, eps_W, eps_v)
    d = _width(d)
    if not design.pairs_in_band:
        raise AssumptionError(
            f"design {design.name!r}: paired probes u = e_i + e_p have logits up to "
            f"{design.band * design.pair_shrink * math.sqrt(2):.3f} > band = {design.band}, outside the "
            "clipping interval, so Lemma A.1 does not apply (Erratum E1); use CORRECTED or TUNED"
        )
    _, paired = entry_error_per_tau(design, W_bound, mu)
    floor = float64_floor(design, W_bound, d)
    shrink = 1 - 64 * UNIT_ROUNDOFF  # so that learn_noisy's recomputed bounds, rounded, stay within eps
    t = ((eps_W / d - floor.paired) / paired - floor.tau) * shrink
    t_v = (eps_v / math.sqrt(d) - floor.tau) * shrink
    if min(t, t_v) < floor.tau:
        raise PrecisionLossError(
            f"float64 cannot deliver eps_W = {eps_W:g}, eps_v = {eps_v:g} for W_bound = {W_bound:g}, "
            f"mu = {mu:g}, d = {d} with design {design.name!r}: the proven tolerances ({t:.3g}, {t_v:.3g}) "
            f"are below the float64 resolution {floor.tau:.3g} of the answers (the error grows like "
            "d u W_bound^2 / mu); run the target and learner in higher precision"
        )
    return Tolerances(tau_f=t, tau_v=min(math.nextafter(support_threshold(mu) - floor.tau, 0), t_v, t))


def _tolerance(oracle: Any, tau: Any) -> tuple[float, str]:
    """The tolerance learn_noisy works with, and where it came from (see :class:`DeclaresTolerance`)."""
    declared = None
    if isinstance(oracle, DeclaresTolerance):
        declared = _real("the oracle's tolerance", oracle.tolerance)
    if tau is None:
        if declared is None:
            raise InvalidInputError(
                f"{type(oracle).__name__} does not declare its tolerance "
                "(attnproof.oracles.DeclaresTolerance): pass tau=, the largest |answer - f*(X)| it may "
                "return (0 for an exact oracle)"
            )
        return declared, "oracle"
    tau = _real("tau", tau)
    if tau < 0:
        raise InvalidInputError(f"tau must be >= 0; got {tau}")
    if declared is not None and tau < declared:
        raise InvalidInputError(f"tau = {tau} is smaller than the tolerance {declared} the oracle declares")
    return tau, "argument"


def _row_factors(design: ProbeDesign, W_bound: float, v: np.ndarray, nonzero: np.ndarray,
                 floor: Float64Floor) -> tuple[np.ndarray, np.ndarray]:
    """Per row i of W_hat: the error per unit tolerance and the learner's own float64 error.

    A direct row is divided by ``|v_hat_i|`` (:func:`_per_tau` at scale b, plus ``floor.direct``);
    a paired row (``u = e_i + e_p``) by ``|v_hat_p|`` at scale ``b_pair`` and subtracts row p
    (both :func:`_per_tau` terms, plus ``floor.paired``).  ``v`` holds the measured |v_hat| (or,
    before any query, the magnitudes assumed)."""
    b = design.b(W_bound)
    m = np.abs(np.asarray(v, dtype=np.float64))
    pivot = float(m.max())
    paired = _per_tau(design, design.b_pair(W_bound), pivot) + _per_tau(design, b, pivot)
    per_tau = np.array([_per_tau(design, b, float(mi)) if nz else paired for mi, nz in zip(m, nonzero)])
    return per_tau, np.where(nonzero, floor.direct, floor.paired)


def _check_precision(per_tau: np.ndarray, own: np.ndarray, tau: float, floor: Float64Floor,
                     eps_W: float | None, eps_v: float | None, what: str) -> None:
    """Raise :class:`PrecisionLossError` if float64, not tau, keeps (eps_W, eps_v) out of reach.

    With the row factors of :func:`_row_factors`, ``B_W = sqrt(d sum_i (per_tau_i (tau +
    floor.tau) + own_i)^2)`` (d entries per row) and ``B_v = sqrt(d) (tau + floor.tau)``; their
    exact-arithmetic parts drop the floor.  Refused: a floor alone at or above eps (or above 1,
    the top of the theorem's range, if eps is not given), and a tau that the proof covers but
    float64 does not.  ``what`` names the magnitudes the factors were computed from.
    """
    d = len(per_tau)

    def frobenius(rows: np.ndarray) -> float:
        return float(math.sqrt(d * np.sum(rows**2)))

    bounds = (
        ("eps_W", eps_W, frobenius(per_tau * tau), frobenius(per_tau * (tau + floor.tau) + own),
         frobenius(per_tau * floor.tau + own)),
        ("eps_v", eps_v, math.sqrt(d) * tau, math.sqrt(d) * (tau + floor.tau), math.sqrt(d) * floor.tau),
    )
    for name, eps, exact, total, alone in bounds:
        reach = 1.0 if eps is None else eps
        if alone >= reach or (eps is not None and total > eps >= exact):
            asked = f"{name} = {reach:g}" + ("" if eps is not None else " (the top of (0, 1))")
            raise PrecisionLossError(
                f"float64 cannot deliver {asked}: "
                f"at tau = {tau:.3g} the proven bound is {exact:.3g}, float64 rounding raises it to "
                f"{total:.3g} (float64 alone: {alone:.3g}; answers resolved to {floor.tau:.3g}) for "
                f"d = {d}, {what}"
            )


@learner(
    name="noisy",
    result="Thm 6.1",
    relies_on=(
        "thm4.1/one-token", "lemmaA.1/lipschitz-bound", "lemmaA.1/logit-derivative",
        "lemmaA.1/lipschitz-closed-form", "thm6.1/probe-logit", "thm6.1/tolerance-algebra",
        "thm6.1/paired-logit-corrected", "thm6.1/optimal-beta", "thm6.1/design-tolerances",
        "thm6.1/support-split", "thm6.1/estimator", "thm6.1/run-float64",
    ),
    arithmetics=("float64",),
    queries="d + d^2",
    count=lambda d, **_: d + d * d,
)
def learn_noisy(
    oracle: ValueOracle,
    *,
    W_bound: float,
    mu: float,
    tau: float | None = None,
    eps_W: float | None = None,
    eps_v: float | None = None,
    design: ProbeDesign = CORRECTED,
) -> Recovery:
    """Thm 6.1's learner: d one-token and d^2 scaled two-token queries, clipped sigma^{-1}.

    Parameters
    ----------
    oracle : ValueOracle or ApproxOracle
        Answers within +-tau of f*.
    W_bound : float
        Known bound W_bound >= 2 on ||W*||_F (the paper's W).
    mu : float
        Known margin: every non-zero |v*_i| is >= mu.
    tau : float, optional
        The oracle's tolerance: the largest |answer - f*(X)| it may return (0 for an exact
        oracle).  Required unless the oracle declares it (:class:`~attnproof.oracles.DeclaresTolerance`,
        e.g. :class:`~attnproof.oracles.ApproxOracle`); never below the declared one.
    eps_W, eps_v : float in (0, 1), optional
        The accuracy asked for (see :func:`design_tolerances` for the tau that guarantees it).
        Given, the learner refuses (:class:`~attnproof.errors.PrecisionLossError`) when float64
        cannot deliver it: before any query when no margin could (every |v*_i| = 1), else from the
        measured |v_hat| after the d one-token queries, before the d^2 two-token ones (the worst
        case |v_hat_i| = mu / 2 with every row paired used to refuse good answers).
        A tau larger than the proof allows for them is not refused (benchmarks probe beyond
        the proof on purpose): ``error_bound`` then says what is guaranteed.
    design : ProbeDesign
        :data:`PAPER` (the proof verbatim, with Erratum E1), :data:`CORRECTED` or :data:`TUNED`.

    Returns
    -------
    Recovery
        Diagnostics: design, band, pivot p, the rows probed in pairs, how many estimated
        weights were clipped, the tolerance used and its source, the float64 resolution of
        the answers, and ``error_bound`` / ``error_bound_v``: a-posteriori bounds on
        ``||W_hat - W*||_F`` and ``||v_hat - v*||_2`` from the measured ``|v_hat|`` (the proven
        per-entry bound at ``tau`` plus :func:`float64_floor`); ``error_bound`` is infinite when
        paired rows were probed with :data:`PAPER` (Erratum E1: no bound holds).  float64 only:
        the approximate oracles and their adversaries answer in float64.

    Raises
    ------
    InvalidInputError
        Malformed arguments (:class:`~attnproof.errors.NonFiniteError` for NaN), an oracle that
        declares no tolerance without ``tau=``, or NaN / infinite answers (naming the query).
    AssumptionError
        (W_bound, mu, eps) outside the theorem, ``tau >= mu / 2`` (no guarantee is possible),
        or answers that contradict the margin assumption or ``||v*||_2 <= 1``.
    PrecisionLossError
        float64 cannot deliver (eps_W, eps_v) -- or, without them, any accuracy below 1 -- at the
        measured margins (after the d one-token queries) or at any margin (before any query).
    NonIdentifiableError
        Every |v_hat_i| is within tau of 0: v* = 0, W* not identifiable.

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof import Attention
    >>> from attnproof.oracles import ApproxOracle
    >>> W_star, v_star = np.array([[1.0, -0.5], [0.25, 0.0]]), np.array([0.6, -0.8])
    >>> tol = design_tolerances(CORRECTED, 0.1, 0.1, 2.0, 0.6, 2)
    >>> oracle = ApproxOracle(Attention(W_star, v_star), tau=tol.tau, adversary="worst")
    >>> rec = learn_noisy(oracle, W_bound=2.0, mu=0.6, eps_W=0.1, eps_v=0.1)
    >>> rec.queries, bool(guarantee(rec, W_star, v_star)["err_W"] <= rec.error_bound <= 0.1)
    (6, True)
    """
    design = _design(design)
    W_bound, mu, eps_W, eps_v = check_assumptions(W_bound, mu, eps_W, eps_v)
    tau, source = _tolerance(oracle, tau)
    split = support_threshold(mu)
    if not tau < split:
        raise AssumptionError(
            f"tau = {tau} >= mu/2 = {split}: an answer mu/2 fits both v*_i = 0 and |v*_i| = mu, so no "
            "tolerance this large can separate the support of v*; Thm 6.1 guarantees nothing"
        )
    d = _width(oracle.d)
    floor = float64_floor(design, W_bound, d, declared_rounding(oracle))
    tau_e = tau + floor.tau  # the tolerance the answers actually carry
    if not tau_e < split:
        raise PrecisionLossError(
            f"tau = {tau} < mu/2 = {split}, but with the float64 resolution of the answers "
            f"({floor.tau:.3g}) it is not: float64 cannot separate the support of v*"
        )
    # before any query, the best case (every row direct, every |v_hat_i| at its largest, 1 + tau):
    # what no measured margin can rescue; the measured margins decide after the d one-token queries
    best = np.full(d, 1 + tau_e)
    _check_precision(*_row_factors(design, W_bound, best, np.ones(d, bool), floor), tau, floor, eps_W, eps_v,
                     f"W_bound = {W_bound:g}, design {design.name!r} and the best case |v*_i| = 1")
    session = Session(oracle, FLOAT64, learner=LEARNERS["noisy"])
    v = np.asarray(session.ask(np.eye(d)[:, None, :]), dtype=np.float64)
    _check_answers(v, lambda k: f"one-token query X = [e_{k}]")
    inside = (np.abs(v) > tau_e) & (np.abs(v) < mu - tau_e)
    if inside.any():
        k = int(np.argmax(inside))
        raise AssumptionError(
            f"|v_hat_{k}| = {abs(v[k]):.6g} lies in (tau, mu - tau) = ({tau_e:.3g}, {mu - tau_e:.6g}), "
            "between the tolerance bands of 0 and of mu: the margin assumption min |v*_i| >= mu over "
            "v*_i != 0 does not hold"
        )
    if np.linalg.norm(v) > 1 + math.sqrt(d) * tau_e:
        raise AssumptionError(f"||v_hat||_2 = {np.linalg.norm(v):.6g} contradicts ||v*||_2 <= 1 within tau")
    nonzero = np.abs(v) > split
    if not nonzero.any():
        raise NonIdentifiableError(
            f"every |v_hat_i| <= tau = {tau_e:.3g}: v* = 0 within the tolerance, so f* = 0 and W* "
            "is not identifiable (Thm 6.1 assumes v* != 0)"
        )
    per_tau, own = _row_factors(design, W_bound, v, nonzero, floor)
    _check_precision(per_tau, own, tau, floor, eps_W, eps_v,
                     f"W_bound = {W_bound:g}, design {design.name!r} and the measured |v_hat| "
                     f"(min over the support {float(np.abs(v[nonzero]).min()):.3g}, {int((~nonzero).sum())} "
                     "rows paired)")
    p = int(np.argmax(np.abs(v)))
    a, b = design.a, design.b(W_bound)
    X, scale_u = probes(nonzero, p, a, b, design.b_pair(W_bound), FLOAT64)
    i, j = np.divmod(np.arange(d * d), d)
    y = np.asarray(session.ask(X), dtype=np.float64)
    _check_answers(y, lambda k: f"two-token query for entry ({i[k]}, {j[k]})")
    lo, hi = design.clip, 1 - design.clip
    W, alpha = estimate(y, v, nonzero, p, scale_u, a, lambda t: np.clip(t, lo, hi), FLOAT64)
    clipped = int(np.sum((alpha < lo) | (alpha > hi)))
    rows = per_tau * tau_e + own
    e1 = not design.pairs_in_band and not nonzero.all()
    session.diagnostics.update(
        design=design.name, band=design.band, pivot=p, paired_rows=int((~nonzero).sum()), clipped=clipped,
        tau=tau, tau_source=source, float64_resolution=floor.tau,
    )
    # the promise (eps_W, eps_v at the proven tau) was checked before any query; the bound says
    # what holds at the tau actually used (infinite for PAPER's paired rows: Erratum E1)
    return session.recovery(
        W=W, v=v, guard=False,
        W_error=math.inf if e1 else float(math.sqrt(d * np.sum(rows**2))), v_error=math.sqrt(d) * tau_e,
    )


def probes(
    nonzero: np.ndarray, p: int, a: Any, b: Any, b_pair: Any, arith: Arith
) -> tuple[np.ndarray, np.ndarray]:
    """Thm 6.1's d^2 two-token probes ``X = [(s u_i + a e_j)^T; (a e_j)^T]``, row-major in (i, j).

    ``u_i = e_i`` at scale ``s = b`` where ``nonzero[i]``, else ``u_i = e_i + e_p`` at ``b_pair``.
    Returns X (d^2, 2, d) and the scale of each row.  Any arithmetic (the sympy identity
    ``thm6.1/estimator`` runs it on symbols).
    """
    d = len(nonzero)
    scale_u = np.array([b if nz else b_pair for nz in nonzero], dtype=object)
    U = arith.zeros((d, d))
    for r in range(d):
        U[r, r] = scale_u[r]
        if not nonzero[r]:
            U[r, p] = U[r, p] + scale_u[r]  # u = e_i + e_p for v*_i = 0
    X = arith.zeros((d * d, 2, d))
    for k, (r, c) in enumerate(itertools.product(range(d), range(d))):
        X[k, 0, :] = U[r]
        X[k, 0, c] = X[k, 0, c] + a
        X[k, 1, c] = a
    return X, arith.asarray(scale_u)  # float64: plain floats; sympy: exact, as built


def estimate(
    y: np.ndarray, v: np.ndarray, nonzero: np.ndarray, p: int, scale_u: np.ndarray, a: Any, clip: Any,
    arith: Arith,
) -> tuple[np.ndarray, np.ndarray]:
    """W_hat from the answers y to :func:`probes` (Eqs. (5)-(6) and the paired case).

    ``alpha_hat = (y - a v_hat_j) / (s v_hat_i)`` (``v_hat_p`` for a paired row), ``T_ij =
    sigma^{-1}(clip(alpha_hat)) / (a s)``, and a paired row subtracts the pivot's:
    ``W_hat_ij = T_ij - T_pj``.  Returns (W_hat, alpha_hat).  Any arithmetic.
    """
    d = len(v)
    i, j = np.divmod(np.arange(d * d), d)
    denom = np.array([v[r] if nonzero[r] else v[p] for r in i], dtype=object) * scale_u[i]
    alpha = arith.asarray((y - a * v[j]) / denom)  # float64: plain floats; sympy: exact
    T = (arith.logit(clip(alpha)) / (a * scale_u[i])).reshape(d, d)  # T[i, j] = u_i^T W e_j
    W = T.copy()
    W[~nonzero] -= T[p]  # paired rows measured W_ij + W_pj
    return W, alpha


def _check_answers(y: np.ndarray, query: Any) -> None:
    """Raise :class:`NonFiniteError` naming the first query whose answer is NaN or infinite."""
    bad = ~np.isfinite(y)
    if bad.any():
        k = int(np.argmax(bad))
        raise NonFiniteError(f"the oracle answered {y[k]} to the {query(k)}: answers must be finite")


def guarantee(rec: Recovery, W: Any, v: Any) -> dict[str, float]:
    """Achieved errors ||W_hat - W*||_F and ||v_hat - v*||_2 (for tests and the book)."""
    return {
        "err_W": float(np.linalg.norm(np.asarray(rec.W) - np.asarray(W))),
        "err_v": float(np.linalg.norm(np.asarray(rec.v) - np.asarray(v))),
    }


# --- the identities and bounds behind Theorem 6.1 and Lemma A.1 (and Erratum E1) ------------


@contextlib.contextmanager
def _iv_dps(dps: int) -> Iterator[None]:
    """Set mpmath.iv's (global) precision for a block, and restore it."""
    saved = mpmath.iv.dps
    mpmath.iv.dps = dps
    try:
        yield
    finally:
        mpmath.iv.dps = saved


def clip_enclosure(band: float = 0.5, dps: int = 60) -> Any:
    """Rigorous enclosure of ``tau_clip = sigma(-band)`` (Thm 6.1's clipping level), at ``dps`` digits."""
    with _iv_dps(dps):
        return 1 / (1 + mpmath.iv.exp(mpmath.iv.mpf(band)))


def lipschitz_enclosure(band: float = 0.5, dps: int = 60) -> Any:
    """Rigorous enclosure of Lemma A.1's constant ``L = 1 / (tau_clip (1 - tau_clip))``.

    ``tau_clip = sigma(-band)`` (:func:`clip_enclosure`); interval arithmetic (``mpmath.iv``) at
    ``dps`` digits, leaving mpmath's global precision as it was.  :attr:`ProbeDesign.lipschitz`
    is its float64 value (``2 + 2 cosh(band)``, identity ``lemmaA.1/lipschitz-closed-form``); the
    bound ``lemmaA.1/lipschitz-bound`` checks that the learner's constant is this one.

    Examples
    --------
    >>> L = lipschitz_enclosure(0.5, dps=30)
    >>> bool(4 < L.a <= L.b < 5)
    True
    """
    with _iv_dps(dps):
        clip = clip_enclosure(band, dps)
        return 1 / (clip * (1 - clip))


#: How close (in units of roundoff u = 2^-53, relative) a float64 constant of the learner must be
#: to its rigorous enclosure: a few roundings, absorbed by design_tolerances' shrink (64 u).
CONSTANT_ULPS = 8


def _close(value: float, exact: Any) -> Any:
    """``CONSTANT_ULPS u |exact| - |value - exact|`` as an interval: >= 0 iff the float64 ``value``
    the learner uses is the rigorous ``exact`` (an interval) to CONSTANT_ULPS roundings."""
    x = mpmath.iv.mpf(value)  # exact: a float64 has 53 bits
    return CONSTANT_ULPS * UNIT_ROUNDOFF * abs(exact) - abs(x - exact)


def _sigma(t: sp.Expr) -> sp.Expr:
    return 1 / (1 + sp.exp(-t))


@bound(
    id="lemmaA.1/lipschitz-bound",
    paper="Lemma A.1",
    statement=r"\tau_{\mathrm{clip}} = \sigma(-\tfrac12),\quad L_{\tau_{\mathrm{clip}}} = "
    r"\frac{1}{\tau_{\mathrm{clip}}(1 - \tau_{\mathrm{clip}})} \le 5"
    r"\ \text{and the learner's } (L, \tau_{\mathrm{clip}}) \text{ are these, for every design's band}",
    assumptions="interval arithmetic (mpmath.iv) at 60 digits encloses 5 - L; for each design in DESIGNS "
    "the float64 ProbeDesign.lipschitz and ProbeDesign.clip that learn_noisy and design_tolerances use "
    "are compared with the enclosures of 1 / (tau_clip (1 - tau_clip)) and sigma(-band) to 8 roundings",
    scope="scalar (every design's band)",
)
def lipschitz_bound() -> list[Claim]:
    with _iv_dps(60):
        L = lipschitz_enclosure(0.5, dps=60)
        claims: list[Claim] = [
            ("5 - L >= 0", 5 - L), ("L - 4 >= 0 (the constant is not loose by more than 1)", L - 4),
        ]
        for design in DESIGNS.values():
            claims += [
                (f"{design.name}: ProbeDesign.lipschitz = L(band) to {CONSTANT_ULPS} roundings",
                 _close(design.lipschitz, lipschitz_enclosure(design.band, dps=60))),
                (f"{design.name}: ProbeDesign.clip = sigma(-band) to {CONSTANT_ULPS} roundings",
                 _close(design.clip, clip_enclosure(design.band, dps=60))),
            ]
        return claims


@identity(
    id="lemmaA.1/logit-derivative",
    scope="scalar",
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
    scope="scalar",
    paper="Lemma A.1 (generalised)",
    statement=r"\frac{1}{\sigma(-\beta)\,(1 - \sigma(-\beta))} = 2 + 2\cosh\beta",
    assumptions="beta real",
)
def lipschitz_closed_form() -> list[Pair]:
    beta = sp.Symbol("beta", real=True)
    return [(1 / (_sigma(-beta) * (1 - _sigma(-beta))), (2 + 2 * sp.cosh(beta)).rewrite(sp.exp))]


@identity(
    id="thm6.1/probe-logit",
    scope="listed sizes: d = 1..3",
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
        W, v = symbols("W", (d, d), real=True), symbols("v", (d,), real=True)
        u = symbols("u", (d,), real=True)
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
    scope="scalar (mu, eps_W, d, W symbols: every d)",
    paper="Thm 6.1, proof",
    statement=r"\tau_f = \tau_v = \frac{\mu\epsilon_W}{80 W^2 d},\ W \ge 2 \Rightarrow "
    r"\frac{2W}{\mu}\tau_f + \frac{W+2}{\mu}\tau_v \le \frac{\epsilon_W}{10 W d}"
    r"\ \text{and}\ \frac{5}{ab}\cdot\frac{\epsilon_W}{10 W d} \le \frac{\epsilon_W}{d}"
    r"\ (a = \tfrac12, b = \tfrac1W)",
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
    scope="scalar (a counterexample at d = 2)",
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
    scope="scalar",
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


#: Where ``thm6.1/design-tolerances`` evaluates design_tolerances: every combination of these.
TOLERANCE_GRID = {
    "d": (1, 2, 5, 30),
    "W_bound": (2.0, 3.0, 16.0),
    "mu": (1.0, 0.05),
    "eps": ((0.5, 1e-4), (1e-3, 0.5), (1e-6, 1e-6)),  # (eps_W, eps_v)
}


def _grid() -> Iterator[tuple[int, float, float, float, float]]:
    """Every point ``(d, W_bound, mu, eps_W, eps_v)`` of :data:`TOLERANCE_GRID`."""
    g = TOLERANCE_GRID
    for d, W_bound, mu, (eps_W, eps_v) in itertools.product(g["d"], g["W_bound"], g["mu"], g["eps"]):
        yield d, W_bound, mu, eps_W, eps_v


def _paper_entry_error(L: Any, a: Any, s: Any, tau_f: Any, tau_v: Any, mu: Any) -> Any:
    """Thm 6.1's proof, Eq. (6) and Lemma A.1, for a probe of scale s, written from the paper:
    ``|alpha_hat - alpha*| <= (tau_f + a tau_v) / (s mu / 2) + tau_v / (mu / 2)`` (``|v_hat_i| >= mu / 2``,
    ``alpha* <= 1``) and ``|W_hat_ij - W*_ij| <= L / (a s) |alpha_hat - alpha*|``."""
    return L / (a * s) * ((tau_f + a * tau_v) / (s * mu / 2) + tau_v / (mu / 2))


def _design_claims(design: ProbeDesign, eps_W: float, eps_v: float, W_bound: float, mu: float,
                   d: int) -> list[Claim]:
    """The claims of ``thm6.1/design-tolerances`` at one point (intervals at 40 digits)."""
    iv = mpmath.iv
    tol = design_tolerances(design, eps_W, eps_v, W_bound, mu, d)
    at = f"{design.name}, d={d}, W={W_bound:g}, mu={mu:g}, eps=({eps_W:g}, {eps_v:g})"
    L = lipschitz_enclosure(design.band, dps=40)
    a, b, W, m = iv.mpf(design.a), iv.mpf(design.b(W_bound)), iv.mpf(W_bound), iv.mpf(mu)
    b_pair = b * iv.mpf(design.pair_shrink)  # >= the learner's b_pair (design.b_pair rounds it down)
    tau_f, tau_v = iv.mpf(tol.tau_f), iv.mpf(tol.tau_v)
    band = iv.mpf(design.band) * (1 + 4 * iv.mpf(UNIT_ROUNDOFF))  # b is a float64 quotient
    paired = _paper_entry_error(L, a, b_pair, tau_f, tau_v, m) + _paper_entry_error(L, a, b, tau_f, tau_v, m)
    return [
        (f"{at}: a b W <= band (direct logits inside the clip band)", band - a * b * W),
        (f"{at}: a b_pair sqrt2 W <= band (paired logits, |W_ij + W_pj| <= sqrt2 ||W||_F)",
         band - a * b_pair * iv.sqrt(2) * W),
        (f"{at}: tau_v <= mu / 2", m / 2 - tau_v),
        (f"{at}: sqrt(d) tau_v <= eps_v", eps_v - iv.sqrt(d) * tau_v),
        (f"{at}: d x (paired entry error) <= eps_W", eps_W - d * paired),
    ]


@bound(
    id="thm6.1/design-tolerances",
    paper="Thm 6.1, proof (corrected: Erratum E1)",
    statement=r"\tau = \mathrm{design\_tolerances}(\ldots) \Rightarrow |a b W| \le \beta,\ "
    r"|a b_{\mathrm{pair}} \sqrt2 W| \le \beta,\ \tau_v \le \tfrac{\mu}{2},\ \sqrt d\,\tau_v \le \epsilon_v,"
    r"\ d\Big(\tfrac{L}{a b_{\mathrm{pair}}}\Delta_\alpha(b_{\mathrm{pair}}) + "
    r"\tfrac{L}{a b}\Delta_\alpha(b)\Big) \le \epsilon_W,\ "
    r"\Delta_\alpha(s) = \tfrac{\tau_f + a\tau_v}{s\mu/2} + \tfrac{\tau_v}{\mu/2}",
    uses=("lemmaA.1/lipschitz-bound", "thm6.1/paired-logit-corrected"),
    assumptions="the tolerances the learner is run at (design_tolerances, float64, for CORRECTED and TUNED) "
    "against the paper's chain, Eq. (6) and Lemma A.1, re-evaluated in interval arithmetic with "
    "L = 1 / (tau_clip (1 - tau_clip)) enclosed from its definition; on the grid TOLERANCE_GRID "
    "(d = 1, 2, 5, 30; W = 2, 3, 16; mu = 1, 0.05; (eps_W, eps_v) = (0.5, 1e-4), (1e-3, 0.5), "
    "(1e-6, 1e-6)); the paper's design is refused (Erratum E1)",
    scope="listed sizes: d = 1, 2, 5, 30 (a grid of parameters)",
)
def design_tolerances_bound() -> list[Claim]:
    claims: list[Claim] = []
    with _iv_dps(40):
        for design in (CORRECTED, TUNED):
            for d, W_bound, mu, eps_W, eps_v in _grid():
                claims += _design_claims(design, eps_W, eps_v, W_bound, mu, d)
    try:
        design_tolerances(PAPER, 0.5, 0.5, 2.0, 1.0, 2)
        refused = -1
    except AssumptionError:
        refused = 1
    claims.append(("design_tolerances refuses the paper's design (Erratum E1)", sp.Integer(refused)))
    return claims


@bound(
    id="thm6.1/paper-tolerances",
    paper="Thm 6.1, proof (last lines)",
    statement=r"\mathrm{paper\_tolerances} = \Big(\tau_f = \frac{\mu\epsilon_W}{160 W^2 d},\ "
    r"\tau_v = \min\big\{\tfrac{\mu}{2}, \tfrac{\epsilon_v}{\sqrt d}, "
    r"\tfrac{\mu\epsilon_W}{160 W^2 d}\big\}\Big)",
    assumptions="the paper's tau = mu eps_W / (80 W^2 d), halved ('dividing the tolerance values for the "
    "first case by 2'), plus eps_v / sqrt d, which its first paragraph needs; the float64 "
    "paper_tolerances compared with these closed forms in interval arithmetic to 8 roundings, on "
    "TOLERANCE_GRID",
    scope="listed sizes: d = 1, 2, 5, 30 (a grid of parameters)",
)
def paper_tolerances_bound() -> list[Claim]:
    iv = mpmath.iv
    claims: list[Claim] = []
    with _iv_dps(40):
        for d, W_bound, mu, eps_W, eps_v in _grid():
            tol = paper_tolerances(eps_W, eps_v, W_bound, mu, d)
            m = iv.mpf(mu)
            tau = m * iv.mpf(eps_W) / (160 * iv.mpf(W_bound) ** 2 * d)
            tau_v = min((m / 2, iv.mpf(eps_v) / iv.sqrt(d), tau), key=lambda x: x.mid)
            at = f"d={d}, W={W_bound:g}, mu={mu:g}, eps=({eps_W:g}, {eps_v:g})"
            claims += [(f"{at}: tau_f", _close(tol.tau_f, tau)), (f"{at}: tau_v", _close(tol.tau_v, tau_v))]
    return claims


@bound(
    id="thm6.1/support-split",
    paper="Thm 6.1, proof (approximating v*)",
    statement=r"0 \le \tau < \tfrac{\mu}{2}:\quad v^\star_i = 0 \Rightarrow |\hat v_i| \le \tau < \theta,"
    r"\quad |v^\star_i| \ge \mu \Rightarrow |\hat v_i| \ge \mu - \tau > \theta,"
    r"\quad \theta = \mathrm{support\_threshold}(\mu) \ (= \tfrac{\mu}{2})",
    assumptions="mu positive, tau = mu / 2 - s with s positive (every tolerance the learner accepts); "
    "theta is the learner's own support_threshold evaluated on the sympy symbol mu",
    scope="scalar (every mu > 0 and tau in [0, mu/2))",
)
def support_split() -> list[Claim]:
    mu, s = sp.symbols("mu s", positive=True)
    tau = mu / 2 - s
    theta = support_threshold(mu)
    return [
        ("theta - tau > 0: a zero v*_i is classified zero", sp.simplify(theta - tau)),
        ("(mu - tau) - theta > 0: a non-zero v*_i is classified non-zero", sp.simplify(mu - tau - theta)),
    ]


@identity(
    id="thm6.1/estimator",
    paper="Thm 6.1, proof, Eqs. (3)-(5) and the case v*_i = 0",
    statement=r"\hat f = f^\star,\ \hat v = v^\star \Rightarrow "
    r"\mathrm{estimate}(\mathrm{answers\ to\ probes}) = W^\star"
    r"\quad (\hat\alpha = \tfrac{f - a v_j}{s v_i},\ W_{ij} = \tfrac{\sigma^{-1}(\hat\alpha)}{a s},"
    r"\ \text{paired rows: } - W_{pj})",
    uses=("thm6.1/probe-logit", "lemmaA.1/logit-derivative"),
    assumptions="the learner's own probes() and estimate() run in sympy on the exact answers of a symbolic "
    "target (W real symbols, v nonzero real symbols, a, b, b_pair positive symbols); d = 2 with v_2 = 0 "
    "and d = 3 with v_1 = 0 (paired probes through the pivot) and with every v_i nonzero; clip is the "
    "identity there, as alpha* lies in the clipping band (thm6.1/design-tolerances, Lemma A.1)",
    scope="listed sizes: d = 2, 3 (the estimator's algebra, exact answers)",
)
def estimator() -> list[Pair]:
    a, b, b_pair = sp.symbols("a b b_pair", positive=True)
    pairs: list[Pair] = []
    for d, zero in ((2, (1,)), (3, (0,)), (3, ())):
        W = symbols("W", (d, d), real=True)
        v = symbols("v", (d,), real=True, nonzero=True)
        v[list(zero)] = sp.Integer(0)
        nonzero = np.array([k not in zero for k in range(d)])
        p = next(k for k in range(d) if nonzero[k])
        X, scale_u = probes(nonzero, p, a, b, b_pair, SYMPY)
        y = np.array([Attention(W, v, SYMPY)(x) for x in X], dtype=object)
        W_hat, _ = estimate(y, v, nonzero, p, scale_u, a, lambda t: t, SYMPY)
        pairs.extend(zip(W_hat.reshape(-1), W.reshape(-1), strict=True))
    return pairs


#: Fixed targets of ``thm6.1/run-float64`` (d = 3, ||W*||_F <= W_bound = 2, ||v*|| <= 1, margin 0.3):
#: the second has a zero v*_1 (a paired probe) with W* concentrated on the paired entries (E1's worst case).
NOISY_RUN_TARGETS = (
    ([[0.5, -0.25, 0.75], [0.125, 1.0, -0.5], [-0.625, 0.25, 0.375]], [0.6, -0.3, 0.5]),
    ([[1.25, 0.0, 0.0], [1.25, 0.0, 0.0], [0.0, 0.0, 0.5]], [0.0, 0.8, -0.3]),
)


@run(
    id="thm6.1/run-float64",
    paper="Thm 6.1",
    statement=r"\|\hat W - W^\star\|_F \le \epsilon_W,\ \|\hat v - v^\star\|_2 \le \epsilon_v"
    r"\ \text{from } d + d^2 \text{ answers within } \tau = \mathrm{design\_tolerances}(\ldots)",
    uses=("thm6.1/design-tolerances", "thm6.1/support-split"),
    assumptions="learn_noisy in float64 on NOISY_RUN_TARGETS (d = 3; one has v*_1 = 0, a paired probe), "
    "W_bound = 2, mu = 0.3, eps_W = 0.5, eps_v = 1e-4 (so that eps_v, not eps_W, sets tau_v); designs "
    "CORRECTED and TUNED; every adversary of ApproxOracle; the query count is LEARNERS['noisy'].count",
    scope="listed sizes: d = 3 (fixed targets and adversaries)",
)
def run_float64() -> list[Check]:
    W_bound, mu, eps_W, eps_v = 2.0, 0.3, 0.5, 1e-4
    checks: list[Check] = []
    for k, (W, v) in enumerate(NOISY_RUN_TARGETS):
        W, v = np.array(W), np.array(v)
        d = len(v)
        for design in (CORRECTED, TUNED):
            tau = design_tolerances(design, eps_W, eps_v, W_bound, mu, d).tau
            for adversary in ADVERSARIES:
                oracle = ApproxOracle(Attention(W, v), tau=tau, adversary=adversary)
                rec = learn_noisy(oracle, W_bound=W_bound, mu=mu, eps_W=eps_W, eps_v=eps_v, design=design)
                err = guarantee(rec, W, v)
                at = f"target {k}, {design.name}, {adversary}"
                checks += [
                    (f"{at}: ||W_hat - W*||_F <= eps_W", err["err_W"], eps_W),
                    (f"{at}: ||v_hat - v*||_2 <= eps_v", err["err_v"], eps_v),
                    (f"{at}: ||W_hat - W*||_F / the learner's error_bound <= 1",
                     _within(err["err_W"], rec.error_bound), 1.0),
                    (f"{at}: queries = count(d)", abs(rec.queries - LEARNERS["noisy"].count(d=d)), 0),
                ]
    return checks


@identity(
    id="thm6.1/optimal-beta",
    scope="scalar",
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


__all__ = [
    "ProbeDesign",
    "PAPER",
    "CORRECTED",
    "TUNED",
    "BETA_STAR",
    "DESIGNS",
    "Tolerances",
    "check_assumptions",
    "paper_tolerances",
    "design_tolerances",
    "entry_error_per_tau",
    "UNIT_ROUNDOFF",
    "Float64Floor",
    "float64_floor",
    "lipschitz_enclosure",
    "clip_enclosure",
    "support_threshold",
    "learn_noisy",
    "probes",
    "estimate",
    "guarantee",
]
