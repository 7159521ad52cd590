"""The path search of :func:`~attnproof.theorems.transformer.ffn.learn_ffn` (Sec. 4.1, beyond the paper).

A random path ``U -> V -> -U`` crosses every hyperplane of a bias-free ReLU FFN once; the search
finds every kink on it from piece gradients, line intersections and confirmation pairs (see the
package docstring).  Private to the room: :class:`_PathSearch` holds the oracle, every answer
seen and the query ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...errors import (
    AssumptionError,
    DegenerateProbeError,
    PrecisionLossError,
)
from ...arith import Arith
from ...measure import Session
from ...models import NAIVE, Rounding, declared_rounding

@dataclass(frozen=True)
class Tuning:
    """The search's constants for one family of arithmetic (:data:`TUNING`).

    Attributes
    ----------
    tol_ulps : float
        Float comparisons accept a disagreement of ``tol_ulps u`` times the magnitudes involved,
        u the arithmetic's unit roundoff (:attr:`~attnproof.arith.Arith.unit_roundoff`: 2^-53, or
        2^-prec in mpmath, 3 to 14 times below its nominal 10^-dps): float64's answers carry up
        to 2^10 u (relative to the canonical form's size) with the cancellation its properties
        admit; mpmath's 2^6 u (the 2^4 10^-dps of before, 43 to 224 u, at its low end) cover the
        (d + m)-term sums of an mpmath oracle (2^10 10^-dps refused every FFN below 13 digits:
        issue 23 item 8).
    h_log2 : int
        A piece's gradient is first taken with steps ``h = 2^(e - h_log2)``, ``2^e >= max |x0_i|``:
        mpmath at a few digits needs the longer first step, the gradient's rounding error being
        ~ u |f| / h; Euler's check shrinks a step that crosses a kink.
    h_shrink_log2 : int
        A failed Euler check divides h by ``2^h_shrink_log2`` (at most H_ROUNDS attempts per
        piece).  mpmath halves it twice (down to 2^-13 |x|, below which a few digits tell no
        gradient): a region too thin for 2^-5 |x| then costs a gradient 4 times, not 16 times,
        less accurate (at 8 digits its kinks were left unconfirmed: issue 23 item 8).
    resolution_log2 : int or None
        Resolution ``rho = 2^-k`` of the kink confirmation (``|y| = rho |x*|``); None: 3/4 of the
        arithmetic's bits (its digits times log2 10).  Hyperplanes crossing the path within
        ``rho |x*|`` may be merged.
    reach_fraction : float
        A confirmation pair x* +- y farther off the path than this fraction of the interval's
        reach is no test (it may straddle other kinks of the interval): a piece nearer x* is
        opened instead.  mpmath at 7-10 digits merged kinks 0.1 apart this way (issue 23 item 2:
        1 of 3 hyperplanes, error 0.7 against a bound 0.35; with 2^-4, at 7 digits, error 0.7
        against 0.0017); float64 keeps no limit, as a pair grown far off the path is what
        confirms a unit 1e-12 beside unit ones (its straddling risk stays open there).
    wedge_log2 : int or None
        sympy and float64: an interval of the path the search drops as kink-free (its ends on one
        plane) is first probed at points evenly spaced in angle, at most ``2^-wedge_log2`` radians
        apart (:meth:`_PathSearch.off_plane`): a zero-sum group of kinks (``sec4.1/zero-sum-flip``)
        that the path crosses over a wider angle holds one (issue 23: a triple in two 8.1 degree
        wedges, d = 2, missed SILENTLY at 3 of 8 seeds in both).  None (mpmath, not measured
        there): the midpoint of an interval between pieces of one gradient only, as before.
    pair_own_distance : bool
        A confirmation pair x* +- y is grown until ``|J^T y|`` clears PAIR_MARGIN times its two
        tests' tolerances: True (float64, sympy) takes each piece's gradient error over its own
        distance to x* (what :meth:`_PathSearch.fits` holds each test to); False (mpmath) both
        errors times the larger distance, a larger pair (with the own distances, mpmath at 7
        digits refused FIXED_LOW_PRECISION_MERGE's first entry, normals 3e-4 rad apart, answered
        with its merge charged before; not traced).  In float64 the larger pair reached past a kink
        1e-5 away when a piece opened between the two (error ~5e-7) stood beside a far end piece
        (issue 23 item 7: hyperplane pairs 1e-5 rad apart refused at 38 of 140 random targets).
    search_duplicates : bool
        A piece opened inside an interval with an end's gradient (a duplicate): True (sympy and
        float64) searches the half between them as an interval of one gradient, probed before it
        is dropped (it may hold a zero-sum group: a triple in 2 degree wedges, d = 2, crossed
        over 0.07 radians, missed SILENTLY in float64 when that half was dropped; or a kink below
        the rounding floor, whose end piece's plane misses f beyond its error: a 1.76e-12 unit
        refused, bisected to the floor); False (mpmath) drops and books it unprobed
        (:meth:`_PathSearch._split`).
    """

    tol_ulps: float
    h_log2: int
    h_shrink_log2: int
    resolution_log2: int | None
    reach_fraction: float
    wedge_log2: int | None = None
    search_duplicates: bool = False
    pair_own_distance: bool = False


#: Per family of arithmetic (see :class:`Tuning`).
TUNING = {
    "float64": Tuning(
        tol_ulps=2**10, h_log2=10, h_shrink_log2=4, resolution_log2=30, reach_fraction=np.inf, wedge_log2=4,
        search_duplicates=True, pair_own_distance=True,
    ),
    "mpmath": Tuning(tol_ulps=2**6, h_log2=5, h_shrink_log2=2, resolution_log2=None, reach_fraction=2.0**-8),
    "sympy": Tuning(
        tol_ulps=0, h_log2=10, h_shrink_log2=4, resolution_log2=64, reach_fraction=np.inf, wedge_log2=4,
        search_duplicates=True, pair_own_distance=True,
    ),
}
#: Euler-check attempts per piece (see :attr:`Tuning.h_shrink_log2`).
H_ROUNDS = 5
#: A split point whose gradient cannot be taken moves to the middle of its wider side, NUDGES times.
NUDGES = 3
#: A confirmation pair x* +- y must see |J^T y| at least PAIR_MARGIN times the tolerances of its two
#: predictions (y is grown to it): the test can then fail.
PAIR_MARGIN = 4
#: Answers a float64 search accepts (near-subnormal or huge values lose relative precision).
ANSWER_RANGE = (2.0**-1000, 2.0**900)
#: Where each segment of the path is probed for the units' scale when no end shows it
#: (:meth:`_PathSearch.end_pieces`): its middle, then its quarters (mpmath; sympy and float64 take
#: as many pieces where the segment's values are largest per |x|, :meth:`_PathSearch._probe_scale`).
SCALE_PROBES = (0.5, 0.25, 0.75)
#: :meth:`_PathSearch._probe_scale` stops once the largest gradient met exceeds SCALE_RISE times the
#: scale the refused end saw (a gradient of the same units measured again raises it by its rounding).
SCALE_RISE = 2
#: Pieces :meth:`_PathSearch.end_pieces` may measure beyond the three ends: two refused ends again
#: (the third raised the scale) and the probes of both segments (for :func:`ffn_query_bound`).
EXTRA_END_PIECES = 2 + 2 * len(SCALE_PROBES)
#: An interval bisected to the floor (min_gap) whose jump charge (:meth:`_PathSearch.hidden_charge`) is
#: at most this fraction of the largest gradient met is booked as kink-free (once a segment), not
#: refused: a unit below the search's resolution 2^-20 (see the package docstring), its kink within
#: the gradients' errors; a larger jump (near-parallel hyperplanes) is refused, and a fresh path drawn.
FLOOR_CHARGE = 2.0**-20
#: Homogeneity f(S x) = S f(x) is checked at the path's ends with S = 2^SCALE_LOG2 (biases).
SCALE_LOG2 = 16


def wedge_points(angle: float, wedge_log2: int | None) -> int:
    """Points :meth:`_PathSearch.off_plane` asks on an interval of the path sweeping ``angle``
    radians: ``ceil(angle 2^wedge_log2)``, at least 1 (one midpoint when ``wedge_log2`` is None)."""
    return 1 if wedge_log2 is None else max(1, int(np.ceil(angle * 2.0**wedge_log2)))


#: The most points one interval's probe asks in any arithmetic (the path sweeps pi radians in all:
#: 51 at 2^-4), read by :func:`~attnproof.theorems.transformer.ffn.ffn_query_bound`.
WEDGE_POINTS = max(wedge_points(np.pi, t.wedge_log2) for t in TUNING.values())


def tuning(arith: Arith) -> Tuning:
    """The search's constants for ``arith`` (by its family)."""
    return TUNING[arith.family]


def answer_noise(arith: Arith, rounding: Rounding = NAIVE) -> float:
    """The relative rounding the search allows an answer, relative to the magnitudes of
    :meth:`_PathSearch.tol` (0 in exact arithmetic).

    Naive answers (the default declaration, :data:`~attnproof.models.NAIVE`): ``tol_ulps`` unit
    roundoffs of the arithmetic, the cancellation of units its model admits (their sum
    ``n |w_o|^T |A^T x|``, n the terms of the evaluation, up to ``tol_ulps`` times those
    magnitudes).  Answers declared faithful (:data:`~attnproof.models.FAITHFUL`, float64 answers)
    to an arithmetic that holds them exactly (unit roundoff at most ``final``): the same admitted
    cancellation at the declared unit per term, plus the answer's one final rounding,
    ``final + tol_ulps term`` (float64: ``2^-53 + 2^-54``, 683 times below naive's ``2^-43``).  A
    coarser arithmetic rounds the answers again (naive's then), an exact one allows none.
    """
    naive = tuning(arith).tol_ulps * arith.unit_roundoff
    if rounding.term is None or arith.unit_roundoff > rounding.final or not tuning(arith).tol_ulps:
        return naive
    return rounding.final + tuning(arith).tol_ulps * rounding.term


def kink_parameter(J: np.ndarray, X0: np.ndarray, direction: np.ndarray) -> Any:
    """s* where the lines ``G_a^T x(s)`` and ``G_b^T x(s)`` meet, ``J = G_b - G_a``,
    ``x(s) = X0 + s dir``: ``J^T x(s*) = 0`` (``sec4.1/kink-intersection``)."""
    return -(J @ X0) / (J @ direction)


def check_parameters(a: np.ndarray, b: np.ndarray, checks: int) -> list[float]:
    """``checks`` parameters t of the segment ``a + t (b - a)`` whose points are evenly spaced in
    *angle* (at ``(k + 1/2) / checks`` of the angle alpha between a and b; float64, no query).

    By the sine rule, the ray at angle phi from a meets the segment at
    ``t = |a| sin phi / (|a| sin phi + |b| sin(alpha - phi))``.  Even spacing in t is not enough:
    a segment passing near 0 (V almost parallel to U but shorter) sweeps most of its angle, and
    crosses most hyperplanes, in a short stretch of t (issue 23: the 4 kinks of an exact FFN
    within t in [0.170, 0.177], a zero-sum group between no two of 16 check points).  Where a
    and b are (anti)parallel (d = 1) the spacing in t stays.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    fractions = [(2 * k + 1) / (2 * checks) for k in range(checks)]
    cos = float(np.clip(a @ b / (na * nb), -1.0, 1.0)) if na and nb else 1.0
    alpha = float(np.arccos(cos))
    if not 1e-6 < alpha < np.pi - 1e-6:
        return fractions
    return [
        na * np.sin(q * alpha) / (na * np.sin(q * alpha) + nb * np.sin((1 - q) * alpha)) for q in fractions
    ]


class _OnHyperplane(Exception):
    """Internal: a gradient was asked at a point on a hyperplane (the caller moves it)."""


@dataclass
class _Piece:
    """A region of the path: a point x in it, f(x), the gradient G there and its error."""

    x: np.ndarray
    y: Any
    G: np.ndarray
    err: float = 0.0
    #: the answers at x + h e_i and the step h the gradient came from (its error is recomputed
    #: when the search meets a larger gradient: :meth:`_PathSearch.end_pieces`)
    ys: np.ndarray | None = None
    h: Any = None
    #: its answers showed the units' rounding (Euler's residual grew as the step shrank:
    #: :meth:`_PathSearch._rounding_scale`), which its error holds (:meth:`_PathSearch._gradient_error`)
    rounding: bool = False


@dataclass
class _Ledger:
    """Where the queries went: ``d (pieces + retries) + values + 2 pairs + checks + planes``.

    ``values`` counts single-point queries (region centres, kink points x*, midpoint checks),
    ``pairs`` the off-path confirmation pairs x* +- y, ``checks`` the fresh check points asked
    after each reconstruction, ``planes`` the check points on the recovered hyperplanes off the
    path; ``kink_free`` the intervals taken as kink-free although their gradients may differ
    within their errors; ``polished`` the regions re-measured at their centres (their
    queries are among ``pieces``, ``retries`` and ``values``), ``confirmed`` the queries of the
    polish's confirmation of its kinks (among ``values`` and ``pairs``), ``remeasured`` the
    pieces at the ends of kink-free intervals measured again by the polish (among ``pieces``),
    ``wedges`` the points probing an interval before it is dropped as kink-free in exact
    arithmetic (:meth:`_PathSearch.off_plane`, among ``values``), ``audited`` the points of the
    audit of a network that stands unpolished (:func:`._kink_audit.audit`, among ``values``).
    """

    pieces: int = 0
    retries: int = 0
    values: int = 0
    pairs: int = 0
    duplicate_pieces: int = 0
    regions_skipped: int = 0
    nudges: int = 0
    checks: int = 0
    planes: int = 0
    polished: int = 0
    confirmed: int = 0
    remeasured: int = 0
    kink_free: int = 0
    wedges: int = 0
    audited: int = 0

    def total(self, d: int) -> int:
        return d * (self.pieces + self.retries) + self.values + 2 * self.pairs + self.checks + self.planes


class _PathSearch:
    """The state of :func:`learn_ffn`: its session (oracle, arithmetic, query count), every
    answer seen, and the ledger."""

    def __init__(self, session: Session, r: np.ndarray, min_gap: float, max_steps: int) -> None:
        self.session, self.arith, self.r = session, session.arith, r
        arith = self.arith
        self.d = session.oracle.d
        self.min_gap, self.max_steps, self.steps = min_gap, max_steps, 0
        #: paths searched: U -> V -> -U, then one U -> z -> -U per contradicting point z
        self.paths = 1
        self.ledger = _Ledger()
        #: max |G|_inf over the gradients met: the oracle rounds f(x) at ~ eps |G| |x| even where
        #: f(x) and the local gradient vanish (units cancelling on x's region); at least the units'
        #: scale an earlier path read from the answers' rounding (``rounded``)
        carried = session.diagnostics.get("units_rounded", 0.0)
        self.gscale = carried
        #: the first gradient step's log2, its shrink's and the farthest a pair may reach
        self.tuning = tuning(arith)
        self.h_log2, self.h_shrink_log2 = self.tuning.h_log2, self.tuning.h_shrink_log2
        self.reach = self.tuning.reach_fraction
        #: the smallest step a gradient is taken with is 2^-smallest_h_log2 max|x|
        self.smallest_h_log2 = self.h_log2 + self.h_shrink_log2 * (H_ROUNDS - 1)
        #: the relative rounding an answer may carry, as the oracle declares (:func:`answer_noise`)
        self.answer_noise = answer_noise(arith, declared_rounding(session.oracle))
        #: the comparisons' tolerance: the answers' rounding, plus the learner's own in a
        #: prediction ``y_p + G_p^T (z - x_p)`` (d + 4 roundings) when the answers are tighter than
        #: naive (whose 2^10 units cover it)
        self.noise = self.answer_noise + (
            2 * (self.d + 4) * arith.unit_roundoff if self.answer_noise < answer_noise(arith) else 0.0
        )
        bits = self.tuning.resolution_log2
        self.rho = arith.scalar(2) ** -(int(0.75 * arith.digits * np.log2(10)) if bits is None else bits)
        self.seen: list[tuple[np.ndarray, Any]] = []
        #: sum of |G_b - G_a|_1 + d (err_a + err_b) over intervals taken as kink-free: the most
        #: jump mass a kink below the gradients' errors can have there (:meth:`hidden_charge`)
        self.hidden = 0.0
        #: the pieces (a, b) at the ends of those intervals, for the polish to measure again
        self.kink_free_pairs: list[tuple[_Piece, _Piece]] = []
        #: the first path's ends U, V, -U (``diagnostics["path"]``: where the resolution of
        #: :meth:`off_plane` is read)
        self.ends: tuple[np.ndarray, ...] = ()
        #: max |G|_inf over the gradients measured (gscale without the scales read from rounding)
        self.gmax = 0.0
        #: a units' scale beyond the cap over the gradients measured was read (:meth:`_rounding_scale`)
        self.beyond_cap = False
        #: a units' scale was read from the answers' rounding, within the cap or beyond it
        #: (:meth:`_rounding_scale`): every gradient's error holds the units' rounding from then on
        #: (:meth:`_gradient_error`); a later path of the same learner starts from it
        #: (``units_rounded`` in the session's diagnostics: the largest reading of an earlier path)
        self.rounded = carried > 0
        #: the path's end pieces are taken (:meth:`end_pieces`, which recomputes their errors at the
        #: scale its ends read): a piece measured since keeps the error it was measured with
        self.settled = False

    def ask(self, X: np.ndarray) -> np.ndarray:
        """f at the rows of X (one-token queries, one batch)."""
        # sympy simplifies, e.g. a one-token softmax exp(-s) exp(s) = 1 left unsimplified
        y = self.arith.simplify(self.arith.asarray(self.session.ask(X[:, None, :])))
        self.arith.check_finite(y, "the oracle's answers")
        if self.arith.safe_range is not None and (  # float64: the answers' own safe range
            self.arith.abs_max(y) > ANSWER_RANGE[1]
            or 0 < float(np.abs(y[y != 0]).min(initial=1.0)) < ANSWER_RANGE[0]
        ):
            raise PrecisionLossError(
                f"an answer is outside {self.arith.name}'s safe range [2^-1000, 2^900] (near-subnormal or "
                "huge values lose relative precision); recover in mpmath instead (arith=MP(dps))"
            )
        self.seen.extend(zip(X, y))
        return y

    def tol(self, x: np.ndarray, *values: Any, G: np.ndarray | None = None, err: float = 0.0) -> float:
        """Allowed float disagreement of values of f near x (0 in exact arithmetic)."""
        if self.arith.exact:
            return 0.0
        xf = np.abs(self.arith.to_float(x))
        size = sum(abs(float(v)) for v in values) + self.gscale * float(xf.sum())
        if G is not None:
            size += float(np.abs(self.arith.to_float(G)) @ xf)
        return self.noise * size + err * float(xf.sum())

    def agrees(self, a: Any, b: Any, tol: float) -> bool:
        """a = b to within tol (exactly, in exact arithmetic)."""
        return self.arith.within(a - b, tol)

    def piece(self, x0: np.ndarray, y0: Any = None, h: Any = None, signs: np.ndarray | None = None) -> _Piece:
        """The gradient of the region containing x0 (``sec4.1/piece-gradient``), with first step
        ``h`` (default ``2^(e - h_log2)``, ``2^e >= max |x0_i|``), taken at ``x0 + h s_i e_i``
        (``signs`` s, entries +-1, default all +1: a step away from a hyperplane near x0).

        A failure of Euler's relation ``G^T x0 = f(x0)`` by the same amount at two step sizes
        means x0 lies on a hyperplane or f is affine there (biases: checked by
        :meth:`_homogeneity`); ``_OnHyperplane`` (the caller moves x0) is also raised when no
        step in H_ROUNDS attempts keeps the d perturbations in one region.

        Raises
        ------
        AssumptionError
            If f is not positively homogeneous (an FFN with biases).
        """
        if y0 is None:
            y0 = self.ask(x0[None])[0]
            self.ledger.values += 1
        self.ledger.pieces += 1
        # the search's own steps (not the polish's, h given) may go straight to the smallest step
        # once a kink is seen within the first ones (see below)
        smallest = None if h is not None else self._smallest_step(x0)
        if h is None:
            h = self._first_step(x0)
        steps = self._step_matrix(signs)
        residual_before = None
        tried: list[tuple[np.ndarray, np.ndarray, Any]] = []  # (G, answers, h) of the failed steps
        # f(3 x0) and f(x0) again, asked in one batch once a piece (:meth:`_rounding_scale`)
        tripled: list[Any] = []
        jumped = False
        for attempt in range(H_ROUNDS):
            if attempt:
                self.ledger.retries += 1
            y = self.ask(x0[None, :] + h * steps)
            G = (y - y0) / h if signs is None else (y - y0) / h * np.asarray(signs, dtype=float)
            residual = G @ x0 - y0
            err = self._gradient_error(G, x0, y, y0, h)
            tol = self.tol(x0, y0, G=G, err=err)
            if self.agrees(residual, 0, tol) and (not jumped or self._two_sided(x0, y0, G, err, h, signs)):
                return self._accepted(x0, y0, G, err, y, h)
            if jumped:  # the one attempt after the jump to the smallest step: no more
                raise _OnHyperplane
            if residual_before is not None and self.agrees(residual, residual_before, 2 * tol):
                self._homogeneity(x0, y0, G, err, tripled)
                if smallest is None or not h > smallest or tripled:
                    raise _OnHyperplane  # (a piece that asked f(3 x0) does not jump: piece_query_bound)
                # the same residual at two steps: a kink within them (or x0 on it).  x0 may lie in a
                # region between two kinks ~1e-7 |x| apart (hyperplanes ~1e-6 rad apart), which
                # only the smallest step stays in: the steps between cross a kink along a
                # coordinate where x0 is ~0, and Euler's check, blind to G's error there, passed a
                # gradient off by its jump (2^-18 |x|: (0, 1.993, 0, 1) for (0, 1, 0, 1), issue 23
                # item 7, OPEN_FLOAT's first entry); one attempt at the smallest step (a kink
                # within 2^-26 |x| of x0 along such a coordinate stays unseen by Euler's check, as
                # at any step; the confirmations test the piece's plane), counted as a retry, and
                # kept only when the steps backwards agree (:meth:`_two_sided`)
                jumped, h = True, smallest
                continue
            tried.append((G, y, h))
            read = residual_before is not None and self._rounding_scale(
                x0, y0, G, (residual, residual_before), h, tripled
            )
            if read:
                for G, y, h in tried:  # the larger steps first (their rounding error is the smaller)
                    err = self._gradient_error(G, x0, y, y0, h, rounding=True)
                    if self.agrees(G @ x0 - y0, 0, self.tol(x0, y0, G=G, err=err)):
                        return self._accepted(x0, y0, G, err, y, h, rounding=True)
            residual_before = residual
            h = h / 2**self.h_shrink_log2
        raise _OnHyperplane  # no step keeps the perturbations in one region: x0 is (nearly) on one

    def _step_matrix(self, signs: np.ndarray | None) -> np.ndarray:
        """The d gradient steps' directions ``s_i e_i`` as rows (``signs`` s, default all +1)."""
        eye = self.arith.eye(self.d)
        return eye if signs is None else eye * np.asarray(signs, dtype=float)[:, None]

    def _two_sided(
        self, x0: np.ndarray, y0: Any, G: np.ndarray, err: float, h: Any, signs: np.ndarray | None
    ) -> bool:
        """Does the gradient measured stepping backwards, ``x0 - h s_i e_i`` (d queries, a retry),
        agree with G to within the two errors (each a bound on its distance to the gradient of
        x0's region, :meth:`_gradient_error`)?

        Euler's relation cannot tell a step across a hyperplane through or near x0: on a
        hyperplane ``J^T x0 = 0`` it holds for the gradients of both its sides and any mix of them
        (a point 1e-13 off one, measured at 2^-26 |x|, passed with a gradient 3.5e-5 of the way
        across its jump, and every x* opened beside it was the same point, to max_steps: thorough
        profile, --hypothesis-seed 4108, two parallel units).  The backward steps stay on x0's
        side of a hyperplane the forward ones cross (and the reverse), so a crossing within h
        shows as a disagreement; inside a region both are its gradient."""
        return self.backward_error(x0, y0, G, err, h, signs) is not None

    def backward_error(
        self, x0: np.ndarray, y0: Any, G: np.ndarray, err: float, h: Any, signs: np.ndarray | None,
        h_back: Any = None,
    ) -> float | None:
        """The steps backwards of :meth:`_two_sided`, ``x0 - h_back s_i e_i`` (default ``h_back =
        h``; d queries, a retry): None when their gradient disagrees with G (measured with steps
        ``h s_i e_i``) beyond the two errors, else a bound on ``max_i |G_i - g_i|``, g the gradient
        of x0's region, that holds when the steps of one direction stay in that region (0 in exact
        arithmetic, whose gradients carry no error and then agree exactly).

        With ``back`` the backward gradient and ``e`` its error: where the forward steps stay in x0's
        region, ``|G - g| <= err``; where they cross a kink (the backward ones staying),
        ``G = g + D``, D the crossing's share of its jump, and ``|D| <= |G - back| + err + e``, so
        ``|G - g| <= 2 err + e + |G - back|`` either way.  A kink too small for Euler's relation to
        see (a 1.5e-10 unit's beside unit ones, crossed by a polish step of 2^-6 |x|: a gradient 0.55
        of the way across its jump, told by its steps backwards) is so held to the errors; a region
        thinner than the step on both sides of x0 is not."""
        arith = self.arith
        h = h if h_back is None else h_back
        steps = self._step_matrix(signs)
        self.ledger.retries += 1
        y = self.ask(x0[None, :] - h * steps)
        back = (y0 - y) / h if signs is None else (y0 - y) / h * np.asarray(signs, dtype=float)
        e = self._gradient_error(back, x0, y, y0, h)
        if not all(arith.within(t, err + e) for t in G - back):
            return None
        return 2 * err + e + float(np.abs(arith.to_float(G - back)).max())

    def _accepted(
        self, x0: np.ndarray, y0: Any, G: np.ndarray, err: float, y: np.ndarray, h: Any,
        rounding: bool = False,
    ) -> _Piece:
        """The piece of a gradient that passed Euler's check; ``gscale`` grows to it (numeric)."""
        if not self.arith.exact:
            self.gmax = max(self.gmax, float(np.abs(self.arith.to_float(G)).max()))
            self.gscale = max(self.gscale, self.gmax)
        return _Piece(x0, y0, G, err, y, h, rounding)

    def _rounding_scale(
        self, x0: np.ndarray, y0: Any, G: np.ndarray, residuals: tuple[Any, Any], h: Any, tripled: list[Any]
    ) -> bool:
        """Read the units' scale from the answers' own rounding when Euler's residual grew as the
        step shrank (by ``2^(h_shrink_log2 / 2)`` or more: True, ``gscale`` raised to it).

        Where units cancel but in narrow wedges (a zero-sum group), every gradient met may be far
        below the units, whose rounding ``~ u |units| |x|`` the answers carry; the tolerances know
        the units only from ``gscale`` (:meth:`tol`), so Euler's check fails at every step (issue
        23: a 1.9e-94 unit beside a zero-sum triple, gradients met 6e-5, no gradient at a random
        end of the path).  Answers off by ``e`` give ``G`` off by ``2 e / h``, a residual up to
        ``e (2 |x0|_1 / h + 1)`` that grows as h shrinks; a kink crossed by the steps leaves one
        that stays (x0 on its hyperplane: :meth:`piece`) or shrinks as the steps leave it.  The
        residual is read as ``e`` one unit roundoff of units of scale S at ``|x0|_1``, ``e = u S
        |x0|_1``: the tolerances (``noise gscale |x|_1``, ``noise / u`` times that) keep the
        rounding model's own margin over the rounding seen, and the piece's error holds it
        (``rounding``, :meth:`_gradient_error`).  A kink between x0 and every step point (x0 just
        off the region the steps see) grows the residual as 1/h too, f(x0) off that region's plane
        by a fixed amount: S is read only within ``4 tol_ulps`` times the largest gradient measured
        (``gmax``, or G's), the cancellation of units the answers' model admits (a 2^-23 unit
        beside a zero-sum triple, its kink 1e-8 from x*: S 5.9e7 read beside gradients of ~1; and
        ``-ReLU(z) + ReLU(z) + 2e-12 ReLU(x_1 + x_2)``, units 1e11 times f, beyond the model: read,
        its W* was off by 2.6e-3 against a bound of 4e-10, as no bound downstream knew the units),
        or beyond it when the answers show that rounding at ``3 x0`` too: ``|f(3 x0) - 3 f(x0)| >=
        e / 8``, or ``f(x0)`` asked again moves by ``e / 8`` (``3 x0`` and ``x0`` in one batch, two
        queries once a piece, ``tripled``, counted among ``values``; :meth:`_homogeneity` reads its
        check from them).  A factor 3 re-rounds every unit (a power of two would not:
        :meth:`_not_homogeneous`), while f itself is homogeneous, kink or none: an offset read from
        a kink leaves ``f(3 x0) = 3 f(x0)`` to the rounding of the gradients measured, ``4
        tol_ulps`` times below e at least, and a function answers x0 alike every time (issue 23,
        the hostile ``large_units`` class of tests/test_transformer_route.py, K = 1e3 .. 1e8: 89 of
        180 draws answered, the rest refused, mostly no gradient at a random end of the path, the
        units' rounding read 30 times beyond the cap at K = 1e6; 173 answered so, W* within its
        bound at each; then 175).  The batch: an oracle may round a point alone as it rounds 3
        times it alone, and every point of a batch otherwise (a matmul's other kernel): x0 alone
        0, each step point of a batch the same 1e-13 .. 5e-9 off at every step size, f(3 x0)
        alone exactly 3 f(x0); 4 of those 180 draws were refused so on every path (K >= 1e7, two
        units), answered since (179 of 180, W* and the FFN within their bounds at each).  Every
        scale read, within the cap or beyond it and shown by ``3 x0`` or ``x0`` again, is kept in
        the session's diagnostics, ``units_scale`` (the largest; ``diagnostics["units_scale"]`` of
        :func:`learn_ffn`'s recovery, over all its attempts): the Transformer's bound takes the
        units from it where it exceeds f's size (:func:`~attnproof.theorems.transformer.oracle_error`),
        and :func:`~attnproof.theorems.transformer.ffn.learn_ffn` refuses an f within their rounding
        as not told from 0.  A reading beyond the cap that ``3 x0`` and ``x0`` do not show is a
        kink's, not the units': it was kept too, before (thorough profile, --hypothesis-seed 660117,
        ``-ReLU(x_1) + ReLU(1e-10 x_0 + (1 + 1e-10) x_1)``, sup 2e-10 on the ball, units ~2: a step
        across the two kinks read as units of 8.2e3, 4e3 times theirs, and learn_ffn refused f as
        identically 0, NonIdentifiableError, where the answers tell it from 0).

        Once a scale is read (``rounded``) every gradient's error holds the units' rounding at
        ``gscale`` (:meth:`_gradient_error`), as its entries' errors may cancel in Euler's residual;
        a piece measured before holds none, or less.  The end pieces' errors are recomputed when
        they are all taken (:meth:`end_pieces`); a first reading, or one that raises gscale, after
        that (``settled``) abandons the path (PrecisionLossError: :func:`learn_ffn` draws another),
        and the next path starts from it (``units_rounded``).  Issue 23, large_units at K = 1e5,
        d = 3, seed 4: U's gradient, taken at 2^-25 |x| (Euler's residual the same at two steps,
        the units' rounding unread), 1.4e-4 off against its error 5.2e-5 at the scale read by V
        (803, within the cap), left a spurious kink beside U, the FFN SILENTLY 1.45 times over its
        bound; at K = 6.2e3, d = 4, seed 79, U's gradient 1.5e-9 off against 6.0e-10, 1.17 times.
        Both answered within their bounds since."""
        residual, before = residuals
        if not self.noise or not abs(float(residual)) >= 2.0 ** (self.h_shrink_log2 / 2) * abs(float(before)):
            return False
        size = float(np.abs(self.arith.to_float(x0)).sum())
        rounding = abs(float(residual)) / (2 * size / float(h) + 1)  # e = u S |x0|_1
        scale = rounding / (self.arith.unit_roundoff * size)
        seen = self.session.diagnostics
        if scale > 4 * self.tuning.tol_ulps * max(self.gmax, float(np.abs(self.arith.to_float(G)).max())):
            # beyond the cancellation the model admits over the gradients measured: kept only when
            # f(3 x0), or f(x0) asked again, shows that rounding too (one batch, once a piece)
            if not tripled:
                tripled.extend(self.ask(np.array([3 * x0, x0])))
                self.ledger.values += 2
            # f(3 x0) against 3 f(x0), f(x0) asked again against f(x0)
            if not any(abs(float(t - s * y0)) >= rounding / 8 for t, s in zip(tripled, (3, 1))):
                return False
            self.beyond_cap = True
        seen["units_scale"] = max(seen.get("units_scale", 0.0), scale)
        if not self.rounded or scale > self.gscale:
            # every gradient's error holds the units' rounding at gscale from here: one measured since
            # the end pieces, before the first reading or at a lower scale, holds too little of it
            seen["units_rounded"] = max(seen.get("units_rounded", 0.0), scale, self.gscale)
            if self.settled:
                raise PrecisionLossError(
                    f"the answers' rounding read as units of {scale:.3g} (the scale so far "
                    f"{self.gscale:.3g}) after the path's pieces were measured: their errors hold no "
                    "rounding at that scale (a later path starts from it)"
                )
        self.rounded = True
        self.gscale = max(self.gscale, scale)
        return True

    def end_pieces(self, ends: tuple[np.ndarray, ...]) -> list[_Piece]:
        """The gradients at the path's ends (:meth:`end_piece`), each with its error at the scale of
        the largest gradient met on any of them.

        Where units cancel (a zero-sum group, or twin units), f is 0 on a region up to the oracle's
        rounding of the units, ``~ eps |units| |x|``, which the tolerances know only from the
        gradients met (``gscale``): an end in such a region measured first fails Euler's check
        against a tolerance of 0 (no gradient at a random end, on every path: thorough profile).
        An end refused before another end raised ``gscale`` is measured once more after them
        (its queries counted); when no end raised it (every end where the units cancel or are
        silent: an 8e-72 unit beside a zero-sum triple, thorough profile), the path is probed for
        it first (:meth:`_probe_scale`).  The errors of the ends measured before it rose are
        recomputed from their answers (:meth:`_gradient_error`, free).

        Raises
        ------
        DegenerateProbeError
            If an end has no gradient at the final ``gscale`` either.
        AssumptionError, PrecisionLossError
            As :meth:`piece`.
        """
        pieces: list[_Piece | None] = []
        refused: list[tuple[int, float]] = []
        for x0 in ends:
            gscale = self.gscale
            try:
                pieces.append(self.piece(x0))
            except _OnHyperplane:
                pieces.append(None)
                refused.append((len(pieces) - 1, gscale))
        for k, gscale in refused:
            if not self.gscale > gscale:
                self._probe_scale(ends, gscale)
            if not self.gscale > gscale:
                raise self._no_end_gradient()
            pieces[k] = self.end_piece(ends[k])
        self.settled = True
        return [replace(p, err=self._gradient_error(p.G, p.x, p.ys, p.y, p.h, p.rounding)) if p.h is not None
                else p for p in pieces]

    def _probe_scale(self, ends: tuple[np.ndarray, ...], gscale: float) -> None:
        """Gradients along the path (len(SCALE_PROBES) points of each segment, counted) until one
        exceeds ``gscale``: the units' scale, when every end lies where they cancel or are silent
        (f 0 up to rounding on the ends' regions, a real gradient only between them).

        sympy and float64 (:attr:`Tuning.wedge_log2`) first ask each segment's values at points
        ``2^-wedge_log2`` radians apart (as :meth:`off_plane`; counted, ``ledger.values``) and take
        the gradients at the points of largest ``|f(x)| / |x|_inf``: where the units cancel on the
        ends' regions (a zero-sum group, beside a tiny unit), they show only in the group's wedges,
        which the fixed SCALE_PROBES fractions miss (a 5.6e-80 unit beside a zero-sum triple in 3.9
        degree wedges, d = 2: no gradient at a random end on every path, thorough profile); mpmath
        keeps the fractions.  A wedge narrower than the probes' spacing may still be missed (a
        1.9e-94 unit beside a triple in 1.4e-4 radian wedges, refused before: the units' scale is
        read from the answers' rounding there, :meth:`_rounding_scale`).  The probes stop once the
        scale exceeds SCALE_RISE times ``gscale``: a gradient of the units already met, measured
        again, raises it by its rounding only (a 7.1e-40 unit's, 1.2e-52 above its first reading,
        stopped them before the segment that crosses a 1.2e-7 triple's wedges: no gradient at a
        random end, thorough profile)."""
        arith = self.arith
        for a, b in zip(ends[:-1], ends[1:]):
            points = [a + arith.scalar(t) * (b - a) for t in SCALE_PROBES]
            if self.tuning.wedge_log2 is not None:
                X = np.array([a + t * (b - a) for t in self._angle_parameters(a, b)])
                answers = self.ask(X)
                self.ledger.values += len(X)
                size = [abs(float(y)) / float(arith.abs_max(x)) for x, y in zip(X, answers)]
                points = [X[i] for i in np.argsort(size, kind="stable")[::-1][: len(SCALE_PROBES)]]
            for x in points:
                try:
                    self.piece(x)
                except _OnHyperplane:
                    continue
                if self.gscale > SCALE_RISE * gscale:
                    return

    def _angle_parameters(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Parameters t of the points ``a + t (b - a)`` evenly spaced in angle seen from 0, at most
        ``2^-wedge_log2`` radians apart and half that from the ends (:func:`check_parameters`,
        :func:`wedge_points`; no query); a, b nonzero."""
        arith = self.arith
        ua, ub = arith.to_float(a / arith.abs_max(a)), arith.to_float(b / arith.abs_max(b))  # no underflow
        cos = float(ua @ ub) / float(np.linalg.norm(ua) * np.linalg.norm(ub))
        k = wedge_points(float(np.arccos(np.clip(cos, -1.0, 1.0))), self.tuning.wedge_log2)
        return arith.asarray(check_parameters(arith.to_float(a), arith.to_float(b), k))

    def _no_end_gradient(self) -> DegenerateProbeError:
        return DegenerateProbeError(
            f"no gradient at a random end of the path: no step down to 2^-{self.smallest_h_log2} max|x| "
            "keeps f linear there: hyperplanes closer than the arithmetic resolves, or not a bias-free "
            "ReLU FFN"
        )

    def end_piece(self, x0: np.ndarray) -> _Piece:
        """The gradient at an end of the path (no caller can move it: a failure is final)."""
        try:
            return self.piece(x0)
        except _OnHyperplane:
            raise self._no_end_gradient() from None

    def scale_check(self, pU: _Piece, pW: _Piece) -> None:
        """Four queries: ``f(s x) = s f(x)`` at ``x = +-U``, ``s = 2^+-SCALE_LOG2``.

        A biased unit ``ReLU(w^T x + b)`` invisible on the whole path (silent there, or active
        on a region where the other biases cancel its offset) shows at one of +-2^16 U or
        +-2^-16 U unless ``|b|`` is outside ``2^-16 |w^T U| .. 2^16 |w^T U|``.

        Raises
        ------
        AssumptionError
            If f is not positively homogeneous (an FFN with biases).
        PrecisionLossError
            If it fails by no more than the rounding of units of gradient ~1 (see
            :meth:`_not_homogeneous`).
        """
        S = self.arith.scalar(2) ** SCALE_LOG2
        answers = self.ask(np.array([S * pU.x, S * pW.x, pU.x / S, pW.x / S]))
        self.ledger.values += 4
        for p, y, scale in zip((pU, pW, pU, pW), answers, (S, S, 1 / S, 1 / S)):
            if not self.agrees(y, scale * p.y, self.scaling_tol(p.x, p.y, scale, p.G, p.err)):
                what = f"f(s x) - s f(x) at s = {float(scale):g}"
                self._not_homogeneous(y, p.y, p.x, scale, (p.G, p.err), what)

    def scaling_tol(self, x: np.ndarray, y: Any, scale: Any, G: np.ndarray, err: float) -> float:
        """The most ``f(s x) - s f(x)`` may differ from 0 in the answers of a bias-free FFN that keep
        their declaration (0 when none is declared, as in exact arithmetic), s = ``scale`` > 0 a power
        of two, or 3 (:meth:`_homogeneity`: the rounding of ``3 x`` and ``3 f(x)`` is within the slack).

        Each answer is within ``noise (|f(x)| + |grad f(x)|^T |x|)`` of f (the naive model, or the
        declared one: :func:`answer_noise`), and without biases ``f(s x) = s f(x)`` and
        ``grad f(s x) = grad f(x)``: the difference is at most ``2 s noise (F + g)``, F = |f(x)|,
        g = |grad f(x)|^T |x| (the gradient of either side where x is on a hyperplane).  Both are
        bounded from what was measured: ``g <= gb = max(gscale |x|_1, (|G| + err)^T |x|)`` (the
        largest gradient met, and the one measured at x with its error) and, as y answers f(x),
        ``F <= (|y| + noise gb) / (1 - noise)``.  The factor ``(1 + u) (1 + 2^-48)`` covers the
        rounding of the difference itself (u the arithmetic's) and of these few float64 operations.
        The old allowance, ``noise (|f(sx)| / s + 2 |f(x)| + gscale |x|_1)`` (gradients of order
        one), was below this where ``|grad f|^T |x|`` is larger: answers within the declaration
        refused as biases (d = m = 16, ``FFNNoiseAdversary``).
        """
        if not self.noise:  # no rounding declared (exact arithmetic): no allowance, whatever the sizes
            return 0.0
        xf = np.abs(self.arith.to_float(x))
        bound = (np.abs(self.arith.to_float(G)) + err) @ xf
        gb = max(self.gscale * float(xf.sum()), float(bound))
        F = (abs(float(y)) + self.noise * gb) / (1 - self.noise)
        slack = (1 + self.arith.unit_roundoff) * (1 + 2.0**-48)
        return 2 * float(scale) * self.noise * (F + gb) * slack

    def _homogeneity(
        self, x0: np.ndarray, y0: Any, G: np.ndarray, err: float, tripled: list[Any] | tuple = ()
    ) -> None:
        """One query: ``f(2 x0) = 2 f(x0)`` for a bias-free FFN (``sec4.1/parity-split``), to within
        :meth:`scaling_tol` (G, err: the gradient measured at x0 and its error).

        A piece that asked ``f(3 x0)`` and ``f(x0)`` in one batch (``tripled``, :meth:`_rounding_scale`)
        asks nothing: ``f(3 x0) = 3 f(x0)`` between those two answers is the same test (the piece's
        queries stay within :func:`~attnproof.theorems.transformer.ffn.piece_query_bound`); the
        tolerance at s = 3, ``6 noise (F + g)``, holds the rounding of ``3 x0`` and ``3 f(x0)``,
        ``u`` times those magnitudes, ``2^10`` times over in float64.

        Raises
        ------
        AssumptionError
            If it fails: f is affine, not linear, on x0's region (an FFN with biases).
        PrecisionLossError
            If it fails by no more than the rounding of units of gradient ~1.
        """
        if tripled:
            (y_s, y_x), scale, what = tripled, self.arith.scalar(3), "f(3 x0) - 3 f(x0)"
        else:
            y_s, y_x, scale, what = self.ask(2 * x0[None])[0], y0, self.arith.scalar(2), "f(2 x0) - 2 f(x0)"
            self.ledger.values += 1
        if not self.agrees(y_s, scale * y_x, self.scaling_tol(x0, y_x, scale, G, err)):
            self._not_homogeneous(y_s, y_x, x0, scale, (G, err), what)

    def _not_homogeneous(
        self, y_sx: Any, y_x: Any, x: np.ndarray, scale: Any, gradient: tuple[np.ndarray, float], what: str
    ) -> None:
        """Refuse answers ``y_sx``, ``y_x`` of f at ``s x``, ``x`` that break ``f(s x) = s f(x)`` (s =
        ``scale``, a power of two or 3; ``gradient``: x's measured gradient and its error).

        The tolerance scales with |f| and the gradients seen, but the oracle rounds at the scale of
        its units, which no query shows: units cancelling to f ~ 0 (f == 0 with FMA noise, issue 23
        item 7), or units K times larger than f (``large_units`` of tests/test_transformer_route.py),
        answer noise that breaks homogeneity by up to ``u |units| |x|``.  One evaluation rounds
        ``f(2^k x)`` exactly as 2^k times ``f(x)``'s, so such a violation shows only between answers
        rounded differently: the same point answered alone and in a batch (the oracle's matmul takes
        other paths; 2.9e-11 apart at K = 1e4).  Where arithmetic rounds (a declared noise), both
        points are asked again, together and each alone (four counted queries): an answer that moves
        from its first by more than two answers of one point may differ under the declaration
        (:meth:`scaling_tol` at s and at 1) breaks the declared model, and the violation is its
        rounding, not biases, which answer alike every time: PrecisionLossError, an honest "cannot
        hold the answers to the model".  So is a violation within the rounding a network with
        gradients of order one would carry, ``answer_noise |s x|_1``.  Any other is an FFN with biases.
        In exact arithmetic (no noise declared) every violation is one, and nothing is asked.

        Raises
        ------
        PrecisionLossError, AssumptionError
        """
        violation = y_sx - scale * y_x
        sx = self.arith.to_float(scale * x)
        size = abs(float(violation))
        if self.noise:
            together = self.ask(np.array([scale * x, x]))
            alone = np.concatenate([self.ask((scale * x)[None]), self.ask(x[None])])
            self.ledger.values += 4
            G, err = gradient
            tols = (self.scaling_tol(x, y_x, scale, G, err), self.scaling_tol(x, y_x, 1, G, err))
            moved = [abs(float(again[k] - first)) - tols[k]
                     for again in (together, alone) for k, first in enumerate((y_sx, y_x))]
            if max(moved) > 0:
                raise PrecisionLossError(
                    f"{what} = {size:.3g}, and the oracle answers the same points again up to "
                    f"{max(moved) + max(tols):.3g} apart (batched otherwise), beyond the {max(tols):.3g} "
                    "its declared rounding allows: units far larger than f (cancelling to f) round its "
                    "answers beyond the declared relative model, and f cannot be held to it (not biases, "
                    "which answer alike every time)"
                )
        if size <= self.noise * float(np.abs(sx).sum()):
            raise PrecisionLossError(
                f"{what} = {size:.3g}, within float rounding of units of gradient ~1 at |x|_1 = "
                f"{float(np.abs(sx).sum()):.3g}: f is 0 or below the arithmetic's "
                "resolution up to its units' rounding (units cancelling), or an FFN with biases below it; "
                "the answers cannot tell which"
            )
        raise AssumptionError(
            f"{what} = {float(violation):.6g} != 0: f is not positively homogeneous (an FFN with biases); "
            "the bias-free learner (Sec. 4.1) refuses it, as the parity split f(x) - f(-x) = u^T x fails "
            "with biases"
        )

    def _gradient_error(
        self, G: np.ndarray, x0: np.ndarray, y: np.ndarray, y0: Any, h: Any, rounding: bool = False
    ) -> float:
        """Bound on ``max_i |G_i - grad_i|`` for ``G_i = (f(x0 + h e_i) - f(x0)) / h`` (0 in exact
        arithmetic, whose G may be symbolic; h a power of two).

        The two answers are off by the declared noise (:attr:`answer_noise`) times
        ``scale = |G|^T |x0| + |f(x0)| + max_i |f(x0 + h e_i)|`` each; the query point
        ``x0_i + h`` is rounded by ``u |x0_i + h|``, moving the answer by ``grad_i`` times that;
        the subtraction by ``u |G_i| h``: in all ``2 noise scale / h + u |G_i| (|x0_i| / h + 2)``.

        A gradient from answers that fail Euler's relation to the relative model, within the
        units' rounding of zero (``|G|_inf <= noise gscale (2 |x0|_1 + h) / h``) or from answers that
        showed that rounding (``rounding``: Euler's residual grew as the step shrank,
        :meth:`_rounding_scale`), is measured where the units' rounding ``noise gscale |x|_1``
        (which :meth:`tol` allows every answer) stands above f's own (units cancelling on x0's
        region, f 0 or far below them there): its answers are f to that rounding, not to ``noise``
        relative, and its error holds that term too, ``noise gscale (2 |x0|_1 + h) / h``, the step
        points' answers rounded at ``|x0 + h e_i|_1 <= |x0|_1 + h`` (an error of
        1e-23 claimed for a gradient of 4e-14 made the piece's prediction refuse its own kink,
        thorough profile; a gradient of 6e-5 beside units of ~1 cancelling but in a 1.4e-4 radian
        wedge failed Euler's check at every step, issue 23).  The failure of any other gradient is
        left to Euler's check: this error taken wherever the relation failed made a step across a
        kink, whose residual stays or shrinks as the step does, pass for rounding at 2^-20 |x| (a
        gradient 0.0585 between 0 and 0.0625 accepted with an error of 3e-8).  Exact zeros of a
        dead region, and a tiny unit alone on its region, pass that relation and keep their
        relative error (a 2e-8 unit's gradient, measured with a step cut to 2^-26 |x|, was refused
        otherwise).  The step points' share, ``noise gscale h / h``, matters where the steps reach
        beyond the point (the polish's one region of an f without kinks, measured at the centre of
        the unit ball, x0 ~ 0, h = 1/2: ``ReLU(b x) - ReLU(-b x) + 1e3 ReLU(1.5 x) - 1e3 ReLU(1.5
        x)``, d = 1, b = -1.6e-4, the units' rounding read beyond the cap, and the polished bound
        with the old term ``2 noise gscale |x0|_1 / h`` at |x0| = 7.7e-16 was 3.7e-17 against an
        error of 1.1e-13).
        """
        if self.arith.exact:
            return 0.0
        xf = np.abs(self.arith.to_float(x0))
        Gf = np.abs(self.arith.to_float(G))
        scale = float(Gf @ xf) + abs(float(y0)) + float(np.abs(self.arith.to_float(y)).max())
        hf = float(h)
        relative = self.answer_noise * 2 * scale / hf + self.arith.unit_roundoff * float(
            np.max(Gf * (xf / hf + 2))
        )
        cancelled = self.noise * self.gscale * (2 * float(xf.sum()) + hf) / hf
        # Euler's relation to the relative model alone: answers f to noise relative (exact zeros of a
        # dead region, a tiny unit alone on its region) pass it; the units' rounding does not
        residual = abs(float(G @ x0 - y0))
        consistent = residual <= self.noise * (abs(float(y0)) + float(Gf @ xf)) + relative * float(xf.sum())
        # the units' rounding; once read (:meth:`_rounding_scale`) on every gradient: its entries'
        # errors may cancel in Euler's residual (a gradient 1e-8 off at K = 1e5 passed it, the FFN
        # SILENTLY 1.8 times over its bound, issue 23's large_units; within the cap, 1.5e-9 off
        # against an error of 6.0e-10 at K = 6.2e3, d = 4: the FFN 1.17 times over its bound)
        noisy = self.rounded or (not consistent and (rounding or float(Gf.max()) <= cancelled))
        return relative + (cancelled if noisy else 0.0)

    def hidden_charge(self, a: _Piece, b: _Piece) -> float:
        """The most jump mass a kink between a and b can have when their gradients agree within
        their errors: ``|G_b - G_a|_1 + d (err_a + err_b)`` (a kink's jump is the difference of
        the gradients on its two sides, each within its error of the measured one)."""
        return float(np.abs(self.arith.to_float(b.G - a.G)).sum()) + self.d * (a.err + b.err)

    def take_as_kink_free(self, a: _Piece, b: _Piece) -> None:
        """Book the interval between a and b, taken as kink-free, in ``hidden`` (the error bound
        adds half of it) and ``kink_free_pairs``."""
        self.hidden += self.hidden_charge(a, b)
        self.kink_free_pairs.append((a, b))

    def same_gradient(self, a: _Piece, b: _Piece) -> bool:
        """Are a's and b's gradients equal, to within their errors and the rounding floor?

        The floor ``16 tol_ulps u max|G|`` is the smallest jump a confirmation pair x* +- y with
        ``|y| <= |x*|`` can tell from the answers' rounding (``u |G| |x|`` even where f is tiny,
        see :meth:`tol`); a jump below it (a unit whose kink is below float64's resolution beside
        large ones) is taken for none, and booked in ``hidden`` (the error bound adds half of it).
        """
        tol = 2 * (a.err + b.err) + 16 * self.noise * self.gscale  # 0 in exact arithmetic
        return all(self.arith.within(t, tol) for t in a.G - b.G)

    def segment(self, a: _Piece, b: _Piece) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """Every kink on the segment from a.x to b.x: (jump J = G_b - G_a, direction, error of J)."""
        arith = self.arith
        X0, direction = a.x, b.x - a.x
        zero, one = arith.scalar(0), arith.scalar(1)
        stack = [(zero, a, one, b)]
        kinks: list[tuple[np.ndarray, np.ndarray, float]] = []
        # (point, pa, pb) already confirmed (never twice: the same test gives the same answer); the
        # same point is tested again between other pieces, whose planes may meet only there
        tested: set[tuple[Any, int, int]] = set()
        floors = 0  # intervals booked at the floor (min_gap)
        while stack:
            sa, pa, sb, pb = stack.pop()
            self.steps += 1
            if (float(sb - sa) < self.min_gap and self.steps <= self.max_steps and not floors
                    and self.hidden_charge(pa, pb) < FLOOR_CHARGE * self.gscale):
                # kinks closer than the search resolves, their jump below FLOOR_CHARGE of the
                # largest gradient (gscale 0 in exact arithmetic: never): booked as below the
                # resolution (its charge in the bound), not refused (issue 23: a 2^-24 unit's
                # kink, its jump ~4e-9 within the gradients' errors 7e-9, bisected to the floor
                # on every path: a refusal of a good answer);
                # once a segment (a second floor: the pieces near it disagree within their errors
                # at every scale, and booking each leaf of that bisection ran to max_steps)
                floors += 1
                self.take_as_kink_free(pa, pb)
                self.ledger.kink_free += 1
                continue
            if float(sb - sa) < self.min_gap or self.steps > self.max_steps:
                raise DegenerateProbeError(
                    f"kinks closer than the search resolves (interval {float(sb - sa):.3g} after "
                    f"{self.steps} steps): near-parallel hyperplanes, or a kink whose jump is within "
                    f"the gradients' errors ({pa.err + pb.err:.3g}: a unit far smaller than the others)"
                )
            y_split, s = None, None
            if self.same_gradient(pa, pb):
                hit = self.off_plane(pa, sa, sb, X0, direction, midpoint=True)
                if hit is None:
                    # any jump left between them is below the resolution (or a zero-sum group
                    # the path crosses within 2^-wedge_log2 radians, :meth:`off_plane`):
                    # at most |G_b - G_a| + the two gradients' errors, per entry
                    self.take_as_kink_free(pa, pb)
                    self.ledger.kink_free += 1
                    continue  # one linear function on the whole interval: no kink
                s, y_split = hit
            else:
                J = pb.G - pa.G
                s = self._intersection(pa, pb, X0, direction, sa, sb)
                if s is not None and (s, id(pa), id(pb)) not in tested:
                    tested.add((s, id(pa), id(pb)))
                    status, y_split = self._confirm(pa, pb, X0 + s * direction, (sb - sa) * direction)
                    if status == "kink":
                        # a zero-sum group beside x* passes the confirmation too (:meth:`off_plane`)
                        hit = self.off_plane(pa, sa, s, X0, direction)
                        hit = hit or self.off_plane(pb, s, sb, X0, direction)
                        if hit is None:
                            kinks.append((J, direction, pa.err + pb.err))
                            continue
                        (s, y_split), status = hit, "split"
                    inside = sa < s < sb
                    if inside and status == "far":
                        # the pieces' errors over their distance to x* need a pair reaching too
                        # far: open a piece halfway from x* to the piece whose prediction there
                        # is the less certain (it replaces that piece when on its plane)
                        far_a = pa.err * float(s - sa) >= pb.err * float(sb - s)
                        middle = (sa + s) / 2 if far_a else (s + sb) / 2
                        self._split(stack, X0, direction, (sa, pa, middle, sb, pb), None, toward=s)
                        continue
                    if inside and status in ("in_a", "in_b"):  # x* lies in pa's (pb's) own region
                        hit = self._skip(stack, (sa, pa, s, sb, pb), status == "in_a", X0, direction)
                        if hit is None:
                            continue
                        s, y_split = hit
                    elif not (inside and status == "split"):
                        s = None
                else:
                    s = None
                mid = (sa + sb) / 2
                if (
                    s is None
                    and (mid, id(pa), id(pb)) not in tested
                    and self._planes_meet(pa, pb, X0 + mid * direction)
                ):
                    # bisection has cornered the kink closer than s* (moved by the gradients'
                    # errors) could: confirm it at the midpoint, where the planes still agree
                    tested.add((mid, id(pa), id(pb)))
                    status, y_split = self._confirm(pa, pb, X0 + mid * direction, (sb - sa) * direction)
                    if status == "kink":
                        kinks.append((J, direction, pa.err + pb.err))
                        continue
                if s is None:  # bisect: one value tells whether the midpoint is in pa's or pb's region
                    s = (sa + sb) / 2
                    x = X0 + s * direction
                    y_split = self.ask(x[None])[0]
                    self.ledger.values += 1
                    ra, rb = self.misfit(pa, x, y_split), self.misfit(pb, x, y_split)
                    if min(ra, rb) <= 1:  # on pa's plane or pb's: the closer fit decides
                        hit = self._skip(stack, (sa, pa, s, sb, pb), ra < rb, X0, direction)
                        if hit is None:
                            continue
                        s, y_split = hit
            self._split(stack, X0, direction, (sa, pa, s, sb, pb), y_split)
        return kinks

    def _skip(
        self, stack: list, interval: tuple, in_a: bool, X0: np.ndarray, direction: np.ndarray
    ) -> tuple[Any, Any] | None:
        """Drop the part of ``interval = (sa, pa, s, sb, pb)`` between s (a point on pa's plane
        when ``in_a``, else on pb's) and that piece, and push the rest; or, when a probe of the
        dropped part (:meth:`off_plane`; none in mpmath) answers off that plane, push nothing
        and return that point ``(s', f(x(s')))`` for the caller to split the whole interval at."""
        sa, pa, s, sb, pb = interval
        hit = self.off_plane(pa, sa, s, X0, direction) if in_a else self.off_plane(pb, s, sb, X0, direction)
        if hit is None:
            self.ledger.regions_skipped += 1
            stack.append((s, pa, sb, pb) if in_a else (sa, pa, s, pb))
        return hit

    def off_plane(
        self, q: _Piece, lo: Any, hi: Any, X0: np.ndarray, direction: np.ndarray, midpoint: bool = False
    ) -> tuple[Any, Any] | None:
        """The probe of the path's interval ``[lo, hi]`` farthest off q's plane per ``|x|_inf``
        among those off it (:meth:`fits`), ``(s, f(X0 + s dir))``, or None, before the interval is
        dropped as kink-free (its ends on q's plane: pieces of one gradient, or a point on q's plane).

        Two pieces of one gradient may have a group of kinks between them whose jumps sum to
        zero (``sec4.1/zero-sum-flip``): f minus q's plane is then a bump supported between the
        group's first and last kink, 0 at both ends with its gradient, nonzero inside (but for
        isolated rays): only a probe inside sees it (issue 23: a zero-sum triple in two 8.1
        degree wedges, d = 2, taken as kink-free from a midpoint outside them, 1 hyperplane of 4
        returned SILENTLY, in sympy and float64).  sympy and float64 (:attr:`Tuning.wedge_log2`):
        ``k = ceil(alpha 2^wedge_log2)`` probes evenly spaced in angle (:func:`check_parameters`;
        alpha the angle the interval sweeps, seen from 0), at most ``2^-wedge_log2`` radians apart
        and half that from the ends, so a group the path crosses over a wider angle holds one
        (counted: ``ledger.values`` and ``ledger.wedges``); in float64 a probe is off the plane
        beyond the prediction's tolerance (a group whose difference stays within it is below the
        resolution, as a kink within the gradients' errors is).  mpmath: the midpoint when
        ``midpoint`` (pieces of one gradient, within their errors), else no probe.
        """
        arith, bits = self.arith, self.tuning.wedge_log2
        if (bits is None and not midpoint) or lo == hi:
            return None
        a, b = X0 + lo * direction, X0 + hi * direction
        if bits is None:
            params = [(lo + hi) / 2]
        else:
            if np.abs(a).max() == 0 or np.abs(b).max() == 0:  # an end at 0: one ray, f linear on it
                return None
            params = [lo + t * (hi - lo) for t in self._angle_parameters(a, b)]
            self.ledger.wedges += len(params)
        X = np.array([X0 + t * direction for t in params])
        answers = self.ask(X)
        self.ledger.values += len(params)
        off = [(t, x, y) for t, x, y in zip(params, X, answers) if not self.fits(q, x, y)]
        if not off:
            return None
        # the probe farthest off the plane per unit of |x|: where units cancel, an answer carries
        # their rounding (~ u |units| |x|), which the tolerances know only from the gradients met;
        # a zero-sum group's bump, where a probe meets it, is larger (the first probe off the plane
        # was such rounding, d = 2: its piece failed homogeneity within the units' rounding, while
        # a later probe was in the group's wedge, thorough profile)
        def off_by(o: tuple) -> float:  # |f - prediction| / |x|_inf
            return abs(float(o[2] - self.predict(q, o[1]))) / float(arith.abs_max(o[1]))

        t, _, y = max(off, key=off_by)
        return t, y

    def _split(
        self, stack: list, X0: np.ndarray, direction: np.ndarray, interval: tuple, y: Any, toward: Any = None
    ) -> None:
        """Open the region at s (moved if s lies on a hyperplane) and push the two halves; a piece
        opened towards a kink at ``toward`` replaces the end piece it duplicates when nearer in
        effect (see :meth:`segment`)."""
        sa, pa, s, sb, pb = interval
        for _ in range(NUDGES):
            try:
                p = self._opened(X0 + s * direction, y, pa, pb)
                break
            except _OnHyperplane:
                self.ledger.nudges += 1
                s, y = ((sa + s) if s - sa > sb - s else (s + sb)) / 2, None  # into the wider half
        else:
            raise DegenerateProbeError(
                f"no gradient at {NUDGES} points of an interval of width {float(sb - sa):.3g}: every one "
                f"is within 2^-{self.smallest_h_log2} max|x| of a hyperplane (kinks "
                "closer than the search resolves)"
            )
        if self.same_gradient(p, pa) or self.same_gradient(p, pb):
            # p lies in pa's (pb's) region; opened towards a kink at s* (``toward``), it stands
            # for that piece when its prediction at s* is the more certain (error times distance)
            self.ledger.duplicate_pieces += 1
            if self.tuning.search_duplicates:
                # the half between p and the piece it duplicates may hold a zero-sum group; it is
                # searched as an interval of one gradient (probed before it is dropped,
                # :meth:`off_plane`); mpmath drops and books it unprobed
                stack.extend([(sa, pa, s, p), (s, p, sb, pb)])
                return
            # the half between p and the piece it duplicates is dropped: any jump there is below
            # the resolution, booked as for an interval taken as kink-free (a 1e-7 kink beside a
            # zero-sum triple's was dropped unbooked, thorough profile)
            q = pa if self.same_gradient(p, pa) else pb
            self.take_as_kink_free(p, q)

            def nearer(q: _Piece, sq: Any) -> bool:  # p predicts f at s* better than q at sq does
                return toward is not None and p.err * abs(float(toward - s)) < q.err * abs(float(toward - sq))

            if self.same_gradient(p, pa):
                stack.append((s, p if nearer(pa, sa) else pa, sb, pb))
            else:
                stack.append((sa, pa, s, p if nearer(pb, sb) else pb))
        else:
            stack.extend([(sa, pa, s, p), (s, p, sb, pb)])

    def _opened(self, x: np.ndarray, y: Any, pa: _Piece, pb: _Piece) -> _Piece:
        """The piece at a split point x between pa and pb (:meth:`piece`); when its step had to
        shrink below the first (x within ``~h |x|`` of a hyperplane: its error grows as the step
        shrinks) and it cannot be told from pa or pb (:meth:`same_gradient`), also measured with
        every coordinate stepping along ``sigma sign(J)``, sigma = +-1, ``J = G_b - G_a``
        (counted, ``ledger.pieces``/``retries``): the one of smaller error that pa and pb both
        tell from itself is kept, else the plain piece (a duplicate, as before).  So is a plain
        piece that mixes pa's and pb's gradients (:meth:`_mixes`) when its steps backwards
        disagree with it (:meth:`_two_sided`, d counted queries): the signed piece of smaller
        error that does not mix them is kept (a duplicate allowed), else the plain piece.

        A kink point x* where pa's and pb's planes meet, their jump ``J = K + T`` a large kink
        K's plus a tiny kink T's, lies on neither hyperplane but within ``~|T| / |K|`` of K's, on
        the region between the two (issue 23: a 1e-7 kink beside a zero-sum triple's, x* 1e-8 from
        K): its plain steps cross K, shrink to 2^-26 |x| and leave a gradient off by 1e-5, which
        cannot tell that region from the far piece's (the tiny kink's half was dropped, then
        bisection met K at x*: a refusal of a good answer).  K's normal is J's to ``|T| / |K|``, so
        one sign sigma moves every perturbation away from K (``K^T x`` grows in magnitude): the
        first step then stays on x*'s region, up to the next hyperplane, and its gradient tells
        that region from pb's.  Only a duplicate is measured again: a piece that pa and pb already
        tell from itself resolves its interval as it is (measured on the bench's 45 random
        targets: replacing every shrunk piece by its best signed one changed 19 of 90 runs, one
        bound 375 -> 1577 times its true error).  A point with no gradient at any step (x on a
        hyperplane to ``2^-26 |x|``) is moved by the caller as before: a piece stepping off a
        hyperplane through its own point stands for a region it only touches (measured: d = m = 8,
        seed 3, then bisected to the floor on its first path).

        With ``|T| / |K|`` below the first step (a 1e-9 unit beside unit ones, x* 2e-9 |x| off
        K), the plain first step crosses K and passes Euler's check (which holds for either side
        of K, and any mix of them, at a point on it): pa's gradient but for 2e-9 / 2^-10 of K's
        jump (x lies on pb's side of K), 5e-7 from pa's, beyond its error 4e-10: told from both
        ends, so never measured again; each next x* (between pa and that mix) lay beside it, 2e-9
        further along the path, to the floor (issue 23, OPEN_TF_FLOAT's last entry: a refusal of
        a good answer).  Such a mix lies on the line from pa's gradient to pb's, where no region
        between them has its gradient (:meth:`_mixes`); the steps backwards show the crossing,
        and one sign sigma keeps every step on x's side of K (x's own gradient, a duplicate of pb
        there: the half beside it is searched as usual).  A gradient on that line whose backward
        steps agree is kept: hyperplanes 1e-6 rad apart put a region's gradient on the line to
        within the errors of a step of 2^-26 |x| (FIXED_FLOAT's second entry, refused when it was
        replaced).

        A mix that neither sign escapes (x between two near-parallel kinks, one ahead of each sign)
        is measured once more with the plain steps at the smallest step, ``2^-26 |x|``
        (:meth:`_smallest_step`), kept when its steps backwards agree (d more queries): the steps
        that pass Euler's check cross a kink along a coordinate where x is ~0, blind to the
        gradient's error there (tests/test_transformer.py, FIXED_PAIR_ABOVE_ANGLE: normals
        e_0 and (1, 5.2e-7), d = 4; x 7e-7 behind the one, 4e-8 past the other, every piece there
        measured at 2^-13 |x| and at its signs 1.6e-6 from the far end's gradient, the region's
        2.8e-4 away: bisected to the floor, refused; answered since, within its bound).  At most
        four pieces and 2 d steps backwards at the last split point, the earlier ones (no gradient)
        one piece each: within :func:`~attnproof.theorems.transformer.ffn.ffn_query_bound`'s NUDGES
        times three pieces (NUDGES >= 2).

        A plain piece kept as it is (neither a mix of pa's and pb's gradients nor a shrunk
        duplicate) whose entries Euler's relation cannot see (x_i ~ 0) is held to a step backwards
        along each (:meth:`_blind_entries_hold`; at most d queries a split point, none on random
        targets: the bench's 90 runs ask the same queries); a mix off the line from pa's gradient
        to pb's (another kink's crossing) is not told by :meth:`_mixes`.

        Raises
        ------
        _OnHyperplane
            If the plain steps give no gradient, or a step backwards along a zero coordinate
            leaves the plain piece's plane (the caller moves x).
        """
        arith = self.arith
        if y is None:
            y = self.ask(x[None])[0]
            self.ledger.values += 1
        plain = self.piece(x, y)

        def duplicate(p: _Piece) -> bool:
            return self.same_gradient(p, pa) or self.same_gradient(p, pb)

        if self.d == 1 or not plain.err:
            return plain
        mixed = self._mixes(plain, pa, pb) and not self._two_sided(x, y, plain.G, plain.err, plain.h, None)
        if not mixed and not (plain.h < self._first_step(x) and duplicate(plain)):
            if not self._blind_entries_hold(x, y, plain):
                raise _OnHyperplane
            return plain
        best = plain
        base = np.where(arith.to_float(pb.G - pa.G) < 0, -1.0, 1.0)
        for sigma in (1.0, -1.0):
            try:
                q = self.piece(x, y, signs=sigma * base)
            except _OnHyperplane:
                continue
            refused = self._mixes(q, pa, pb) if mixed else duplicate(q)
            if not refused and (best is plain or q.err < best.err):
                best = q
        if mixed and best is plain:  # every step crosses a kink: the smallest may fit between them
            try:
                q = self.piece(x, y, h=self._smallest_step(x))
            except _OnHyperplane:
                return best
            if self._two_sided(x, y, q.G, q.err, q.h, None):
                return q
        return best

    def _blind_entries_hold(self, x: np.ndarray, y: Any, p: _Piece) -> bool:
        """Does f one step backwards, ``x - h e_i`` (h p's step), lie on p's plane
        (:meth:`fits`) for every coordinate i Euler's relation is blind to (one query each,
        counted among ``values``; none where there is none)?

        Euler's relation ``G^T x = f(x)`` (:meth:`piece`) weighs the entry G_i by x_i: where
        x_i is 0, or so small that the largest error a crossing can leave in G_i, a jump's entry,
        at most ``2 gscale`` (twice the largest gradient met), moves ``G^T x`` by no more than the
        relation's tolerance (p's error over ``|x|_1`` and the answers' rounding, :meth:`tol`),
        any G_i passes it, so a step along e_i that crosses a hyperplane, or x on the hyperplane
        ``x_i = 0`` itself, goes unseen.  A split point x* on a kink of an axis-aligned
        hyperplane has ``x*_i`` 0 or within rounding of it (thorough profile, --hypothesis-seed 252841: the
        zero-sum triple ``(e, 1/8), (0, -1/4), (-e, 1/8)`` beside ``(1, 1)``, d = 2, e = 2^-23;
        the piece at x* = (-0.18, 0) stepped 2.4e-4 along e_1, across the hyperplane 1.4e-4 away
        at e = 1e-4: G_1 = 0.176, a mix of 0.125 and 0.25 with an error of 9e-14 claimed; the
        next x* at its own point, bisected to the floor: a refusal for every e up to 1e-4, the
        same triple rotated by 1e-3 rad answered).  A step backwards along e_i lands on the far
        side of a hyperplane through x (or of one within h) and misses p's plane by the jump's
        share: the caller moves x (:meth:`_split`).  Its second draw, the triple (e, 1/8),
        (0, -5/16), (-e, 3/16), put x*_1 at 2.2e-16, not 0 (--hypothesis-seed 252841 again)."""
        arith = self.arith
        xf = np.abs(arith.to_float(x))
        allowed = p.err * float(xf.sum()) + self.tol(x, y, G=p.G)
        zero = [i for i in range(self.d) if 2 * self.gscale * float(xf[i]) <= allowed]
        if not zero:
            return True
        back = x[None, :] - p.h * arith.asarray(np.eye(self.d)[zero])
        answers = self.ask(back)
        self.ledger.values += len(zero)
        return all(self.fits(p, z, got) for z, got in zip(back, answers))

    def _mixes(self, p: _Piece, pa: _Piece, pb: _Piece) -> bool:
        """Does p's gradient lie on the line through pa's and pb's, ``G_p = G_a + lambda J``,
        ``J = G_b - G_a``, to within their errors, told from both (:meth:`same_gradient`; pa and
        pb told apart)?  Numeric pieces only (:meth:`_opened` returns an exact one before).

        No region strictly between pa's and pb's has such a gradient: its kinks towards pa would
        sum to ``lambda J``, those towards pb to ``(1 - lambda) J``, two groups of jumps of one
        direction on either side (one hyperplane, which the path crosses once, but for parallel
        sums of several).  A gradient whose steps cross a hyperplane K near its point, where pa's
        and pb's planes meet (``J = K + T``, T a kink far smaller than K), mixes K's two sides:
        ``G_a + lambda J`` to within lambda |T|, lambda the fraction of the steps short of K
        (:meth:`_opened`).  lambda is read from J scaled to ``|J|_inf = 1`` (gradients of 8e-229
        underflowed ``J^T J`` to 0: ZeroDivisionError, thorough profile)."""
        if any(self.same_gradient(*pair) for pair in ((pa, pb), (p, pa), (p, pb))):
            return False
        J, D = self.arith.to_float(pb.G - pa.G), self.arith.to_float(p.G - pa.G)
        top = float(np.abs(J).max())  # > 0: pa and pb are told apart
        unit = J / top
        lam = float((D / top) @ unit) / float(unit @ unit)
        tol = 2 * (p.err + abs(1 - lam) * pa.err + abs(lam) * pb.err) + 16 * self.noise * self.gscale
        return bool(np.all(np.abs(D - lam * J) <= tol))

    def _smallest_step(self, x0: np.ndarray) -> Any:
        """A gradient's smallest step at x0: the first (:meth:`_first_step`) over
        ``2^(h_shrink_log2 (H_ROUNDS - 1))``."""
        return self._first_step(x0) / 2 ** (self.smallest_h_log2 - self.h_log2)

    def _first_step(self, x0: np.ndarray) -> Any:
        """A gradient's first step at x0: ``2^(e - h_log2)``, ``2^e >= max |x0_i|`` (1 at x0 = 0)."""
        top = self.arith.abs_max(x0)
        return self.arith.scalar(2) ** (int(np.ceil(np.log2(top))) - self.h_log2 if top > 0 else 0)

    def _intersection(
        self, pa: _Piece, pb: _Piece, X0: np.ndarray, direction: np.ndarray, sa: Any, sb: Any
    ) -> Any:
        """s* where pa's and pb's planes meet on the path (``sec4.1/kink-intersection``) if it lies
        in [sa, sb] widened by its own uncertainty (the gradients' errors move it), else None.

        Exact arithmetic: ``J^T (X0 + s* dir) = 0``, ``J = G_b - G_a`` (a piece's plane passes
        through 0).  Numeric: where the pieces' predictions ``f(x_p) + G_p^T (x - x_p)`` meet
        (:meth:`predict`), the planes :meth:`_confirm` then holds f(x*) to: a measured G misses
        Euler's relation ``G^T x_p = f(x_p)`` by up to its error times ``|x_p|``, and the planes
        through 0 then meet off the kink by that over the slope, beyond the predictions'
        tolerance near x_p (faithful float64 answers, d = 4, m = 16, seed 2: x* 4.5e-13 past a
        lone kink, f(x*) 7.4e-13 off pa's prediction against a tolerance of 1.1e-13; every
        opened piece then closer to the kink, bisected into a refusal on every path).

        The ends count: a piece opened at an earlier s* may have a hyperplane through its own
        point.  Two kinks of a zero-sum group ``J_1 + J_2 + J_3 = 0`` crossed with one orientation
        flipped leave a jump ``-2 J_3`` between their pieces, whose lines then meet exactly on the
        third hyperplane; its kink with the next piece lies at that piece's end (exactly, in exact
        arithmetic: an open interval never contains it, and bisection ran to the floor)."""
        J = pb.G - pa.G
        slope = J @ direction
        if self.arith.is_zero(slope):
            return None
        if self.arith.exact:
            s = kink_parameter(J, X0, direction)
            return s if sa <= s <= sb else None
        s = (self.predict(pa, X0) - self.predict(pb, X0)) / slope
        x = X0 + s * direction
        err = pa.err + pb.err
        size = float(np.abs(self.arith.to_float(x)).sum())
        wobble = (4 * err * size + self.tol(x, G=J)) / abs(float(slope))
        return s if float(sa) - wobble < float(s) < float(sb) + wobble else None

    def misfit(self, p: _Piece, z: np.ndarray, got: Any) -> float:
        """|f(z) - prediction| / tolerance, predicting f(z) from p as ``f(x_p) + G_p^T (z - x_p)``,
        whose error grows with |z - x_p| only (a thin region's gradient is still useful nearby).
        Exact arithmetic: 0 on p's plane, inf off it."""
        predicted = self.predict(p, z)
        if self.arith.exact:
            return 0.0 if self.arith.is_zero(got - predicted) else np.inf
        tol = self.prediction_tol(p, z, got)
        diff = abs(float(got - predicted))
        return diff / tol if tol > 0 else (0.0 if diff == 0 else np.inf)

    @staticmethod
    def predict(p: _Piece, z: np.ndarray) -> Any:
        """f(z) predicted from p's plane: ``f(x_p) + G_p^T (z - x_p)``."""
        return p.y + p.G @ (z - p.x)

    def prediction_tol(self, p: _Piece, z: np.ndarray, got: Any) -> float:
        """How far a value ``got`` of f near z may lie from p's prediction of f(z) (numeric only):
        the answers' rounding plus p's gradient error over the distance ``|z - x_p|_1``."""
        dz = float(np.abs(self.arith.to_float(z - p.x)).sum())
        return self.tol(z, got, p.y, G=p.G) + p.err * dz

    def fits(self, p: _Piece, z: np.ndarray, got: Any) -> bool:
        """Does f(z) = ``got`` lie on p's plane (to within the prediction's tolerance)?"""
        return self.misfit(p, z, got) <= 1

    def _planes_meet(self, pa: _Piece, pb: _Piece, x: np.ndarray) -> bool:
        """Do pa's and pb's predictions of f(x) agree to within their tolerances (numeric only)?

        Both predictions carry an error (each piece's gradient error over its distance to x), so
        the tolerances add: a piece with a tiny gradient (and error) beside one with a large gradient
        must not hold the other's prediction to its own tolerance alone.
        """
        if self.arith.exact:
            return False
        ya, yb = self.predict(pa, x), self.predict(pb, x)
        return abs(float(ya - yb)) <= self.prediction_tol(pa, x, yb) + self.prediction_tol(pb, x, ya)

    def _confirm(self, pa: _Piece, pb: _Piece, x: np.ndarray, reach: np.ndarray) -> tuple[str, Any]:
        """Is ``(G_b - G_a)^T x = 0`` the only hyperplane between pa and pb?

        First ``f(x*) = G_a^T x*`` (one query; if it fails x* opens a new piece), then
        ``f(x* + y) = G_b^T (x* + y)`` and ``f(x* - y) = G_a^T (x* - y)`` with y off the path on
        pb's side, ``|y|_inf = rho |x*|_inf`` (two queries): they rule out an x* inside pa's or
        pb's own region, where the first test holds by construction, unless x* lies within
        ``|y|`` of that region's boundary: the search's resolution rho (:attr:`Tuning.resolution_log2`).

        A kink is confirmed when f(x*) lies on either piece's plane (to its own prediction
        tolerance, :meth:`fits`) and the pair on both sides.  With one kink between pa and pb,
        f(x*) is the true plane of the side x* lies on, which each prediction holds only to its
        own tolerance; x* (where the predictions meet, :meth:`_intersection`) is off the kink by
        the gradients' errors, so f(x*) is within the other plane's tolerance only when x* falls
        within that of the kink (issue 23, OPEN_TF_FLOAT: units cancelling to -0.24 ReLU(-0.39
        (x_0 + x_1)) beside dead ones; the dead side's piece exact, G = 0, error 0; x* 2.3e-14 off
        the hyperplane on the live side, f(x*) = -2.2e-15 its true value, beyond the dead plane's
        tolerance 1.5e-15 but within the live one's 2.1e-11: every x* after lay on the live side
        again, "split" at each, bisection to the floor).  A pair that recognises no kink then
        leaves such an x* a split, as before (only both planes' fit tells x* inside one region).

        Returns
        -------
        status : {"kink", "in_a", "in_b", "split", "far", "unknown"}
            A confirmed kink; x* inside pa's (pb's) region (all three answers on its plane);
            x* opens a new piece; the pair that could fail would reach farther than reach_fraction
            of the interval, or, grown beyond ``rho |x*|``, recognised no pattern (the caller opens
            a piece nearer x*, whose smaller error over its distance shrinks the pair); or an
            ungrown pair recognised no pattern (x* may lie on a hyperplane, so the caller bisects
            instead of opening a region there).
        y_x : f(x*)
        """
        arith = self.arith
        J = pb.G - pa.G
        y_x = self.ask(x[None])[0]
        self.ledger.values += 1
        on_a, on_b = self.fits(pa, x, y_x), self.fits(pb, x, y_x)
        if not (on_a or on_b):
            return "split", y_x
        size = arith.abs_max_scalar(x)
        y = self.r * (size * self.rho)
        if arith.is_zero(J @ y):
            y = reach * (size * self.rho / arith.abs_max_scalar(reach))
        if arith.is_zero(J @ y):
            # no pair can fail: x* = 0 (a further path through a pivot on U's ray meets every
            # hyperplane at 0: pair_target(2, 32, 3e-8), a ZeroDivisionError before session 26),
            # or J orthogonal to r and to the path; the caller bisects as for an ungrown pair
            return "unknown", y_x
        grown = False  # y grown beyond rho |x*| for the test to be able to fail
        if not arith.exact:  # the test must be able to fail: |J^T y| well above the tolerances
            # the two tests' own tolerances at x* (:meth:`prediction_tol`: each piece's error over
            # its own distance), or both errors times the larger distance (Tuning.pair_own_distance)
            dz = [float(np.abs(arith.to_float(x - p.x)).sum()) for p in (pa, pb)]
            if self.tuning.pair_own_distance:
                spread = pa.err * dz[0] + pb.err * dz[1]
            else:
                spread = (pa.err + pb.err) * max(dz)
            need = PAIR_MARGIN * (self.tol(x, y_x, pa.y, pb.y, G=pa.G) + spread)
            grown = abs(float(J @ y)) < need
            if grown:
                y = y * (need / abs(float(J @ y)))
                if float(arith.abs_max_scalar(y)) > self.reach * float(arith.abs_max_scalar(reach)):
                    # a pair this far off the path may straddle the other kinks of the interval
                    # (merging them into one): no verdict; the caller measures a piece nearer
                    # x*, whose prediction there carries less of its gradient's error (x* off
                    # either plane: a split, as before)
                    return ("far" if on_a and on_b else "split"), y_x
        if (float(J @ y) > 0) != (float(J @ reach) > 0):
            y = -y
        plus, minus = self.ask(np.array([x + y, x - y]))
        self.ledger.pairs += 1
        if self.fits(pb, x + y, plus) and self.fits(pa, x - y, minus):
            return "kink", y_x
        if not (on_a and on_b):
            return "split", y_x
        if self.fits(pa, x + y, plus) and self.fits(pa, x - y, minus):
            return "in_a", y_x
        if self.fits(pb, x + y, plus) and self.fits(pb, x - y, minus):
            return "in_b", y_x
        # a grown pair that fits no pattern may straddle another kink near x* (hyperplanes 1e-5 rad
        # apart, a 1e-5 unit's jump: the pair grown to 1e-5 |x| to clear the far piece's error over
        # its distance 0.3, its minus point past the unit kink 4e-6 away, "unknown" at every
        # bisection step, issue 23 item 7): as for "far", a piece nearer x* shrinks the pair
        return ("far" if grown else "unknown"), y_x
