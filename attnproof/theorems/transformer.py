"""Section 4.1: one-layer Transformers, with an exact bias-free ReLU-FFN learner of our own.

The model (Sec. 4.1): ``TF(X) = w_o^T ReLU(alpha(X, W)^T X A)`` with ``W = K^T Q`` and
``A = V^T W_1^T`` (d x m), no biases.  On one token it is the FFN ``f(x) = w_o^T ReLU(A^T x)``.
The paper reduces learning TF to (i) an *assumed* FFN learner A_FFN on length-1 queries and
(ii) Thm 4.1 on antisymmetric queries ``VQ~(X) = VQ(X) - VQ(-X) = alpha(X, W)^T X (A w_o)``
(``sec4.1/relu-antisymmetry``), valid when ``v* = A w_o != 0``.

**Parity split** (``sec4.1/parity-split``).  With ``ReLU(z) = (z + |z|) / 2``,
``f(x) = 1/2 u^T x + 1/2 sum_k a_k |w_k^T x|`` with ``u = A w_o``, so ``f(x) - f(-x) = u^T x``:
VQ~ keeps d of the FFN's (d + 1) m numbers; the FFN itself must come from one-token queries.

**Identifiability** (``sec4.1/rescaling``, ``sec4.1/zero-sum-flip``, ``sec4.1/canonical-form``).
f determines u and, per distinct hyperplane n_j^T x = 0, one aggregate kink c_j; nothing
else.  Permutations, positive rescalings ``(w, a) -> (s w, a / s)``, merging / splitting units
on one hyperplane and flipping ``w_k -> -w_k`` on any subset S with ``sum_S a_k w_k = 0``
leave f unchanged.  :func:`~attnproof.models.canonical_ffn` is the canonical form
``f(x) = 1/2 u^T x + 1/2 sum_j c_j |n_j^T x|`` (n_j with its largest entry +1).

**A_FFN, beyond the paper** (:func:`learn_ffn`).  Every hyperplane passes through 0, so the
path ``U -> V -> -U`` (U, V random) crosses each exactly once, and f is linear on each
piece between crossings.  On a piece, f is *linear* (not affine: no biases), so d queries
``f(x0 + h e_i)`` and the value ``f(x0)`` give the gradient, ``G_i = (f(x0 + h e_i) - f(x0)) / h``,
with Euler's relation ``G^T x0 = f(x0)`` as a free check (``sec4.1/piece-gradient``; a check
that fails at every h with the same residual is an affine offset: biases, refused).
Between two pieces a, b the lines ``G_a^T x(s)``, ``G_b^T x(s)`` meet at ``s*`` with
``(G_b - G_a)^T x(s*) = 0`` (``sec4.1/kink-intersection``); if only one hyperplane lies
between, it is ``(G_b - G_a)^T x = 0`` and two off-path queries ``x* +- y`` confirm it
(predicted ``G_b^T (x* + y)`` and ``G_a^T (x* - y)``, y on the b side).  Otherwise a new piece is
opened at s* (or at the midpoint, when s* is outside the interval).  From the gradients
``G_U`` (start) and the jumps ``J_j = G_b - G_a`` the network is
``f(x) = G_U^T x + sum_j [J_j^T x has the sign of J_j^T dir_j] J_j^T x``: ``u = G_U + G_{-U}``
and ``c_j |n_j^T x| = |J_j^T x|`` (``sec4.1/canonical-from-jumps``).
Four more queries check ``f(s x) = s f(x)`` at ``x = +-U``, ``s = 2^+-16`` (a biased unit
invisible on the whole path shows there).  In generic position every path region is visited once:
``(L + 1)(d + 1) + 3 L + 4`` queries for L hyperplanes (:func:`ffn_query_count`); retries (a
smaller h, a point found inside a known region, a repeated confirmation) are counted in
``diagnostics["reasked_queries"]`` and itemised in ``diagnostics["ledger"]``.

Exactness and resolution.  In sympy every comparison is exact and the learner is exact
unless the random path is non-generic (a kink within ``2^-64 |x*|`` of an intersection point
tested); in mpmath the error follows 10^-dps.  In float64 every comparison carries a
tolerance derived from the gradients' a-posteriori errors (steps h down to 2^-26 |x|), so
hyperplanes whose kinks on the path are closer than about 2^-20 (relative) may be refused
(DegenerateProbeError, after up to two fresh paths, every query counted) or merged (f then
changes by at most what merging them can change, ``(|c_i| + |c_j|) |n_i - n_j|``); the answers
seen are checked against the result (free), and a bound above ``tolerance`` is refused.

**W* (Sec. 4.1 and beyond)** (:func:`learn_transformer`).  If ``u != 0``: Thm 4.1
(:func:`~attnproof.theorems.exact.learn_exact`) on VQ~, each VQ~ query costing two value
queries, ``2 (d + d^2)`` in all.  If ``u = 0`` (an even FFN: VQ~ == 0, where the paper stops)
W* is still identifiable: inside an open cone C where f is linear with gradient g != 0,
``TF(X) = g^T alpha^T X`` when every token is in C (``sec4.1/cone-probe``), so with
``M = x0 1^T + eps I`` (columns in C, eps below the distance of x0 to every hyperplane, known
from the recovered FFN) the map ``X -> X M^T`` turns TF into a Thm 4.1 oracle for
``(M^T W M, M^T g)`` (``sec4.1/cone-linear-map``) on the paper's basis probes, whose tokens
``c M (u + e_j)`` stay in C: ``d + d^2`` value queries, half the antisymmetric route's cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from ..arith import FLOAT64, MP, SYMPY, Arith, parse
from ..errors import (
    AssumptionError,
    DegenerateProbeError,
    InvalidInputError,
    NonIdentifiableError,
    PrecisionLossError,
)
from ..models import (
    Attention,
    OneLayerTransformer,
    ReluFFN,
    attention_weights,
    canonical_ffn,
    evaluate_canonical,
    normalize_normal,
    relu,
    scores,
)
from ..oracles import AntisymmetricOracle, LinearMapOracle, ValueOracle
from ..proof import (
    Check, Pair, expand_matrix, identity, learner, paper_weights, recovery_checks, run, symbols,
)
from .exact import learn_exact

#: (d, N, m) sizes at which the antisymmetric-query identity is proven symbolically.
TF_SIZES = ((2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 2))
#: A piece's gradient is first taken with steps h = 2^(e - H_LOG2), 2^e >= max |x0_i|.
H_LOG2 = 10
#: A failed Euler check divides h by 2^H_SHRINK_LOG2; at most H_ROUNDS attempts per piece.
H_SHRINK_LOG2 = 4
H_ROUNDS = 5
#: A split point whose gradient cannot be taken moves to the middle of its wider side, NUDGES times.
NUDGES = 3
#: Float comparisons accept a disagreement of TOL_ULPS * eps * (the magnitudes involved).
TOL_ULPS = 2**10
#: Resolution rho = 2^-k of the kink confirmation (|y| = rho |x*|): float64, sympy; mpmath
#: uses k = 3/4 of its bits.  Hyperplanes crossing the path within rho |x*| may be merged.
RESOLUTION_LOG2 = {"float64": 30, "sympy": 64}
#: Homogeneity f(S x) = S f(x) is checked at the path's ends with S = 2^SCALE_LOG2 (biases).
SCALE_LOG2 = 16


def ffn_query_count(d: int, L: int) -> int:
    """Queries of :func:`learn_ffn` in generic position: ``(L + 1)(d + 1) + 3 L + 4``.

    Each of the L + 1 regions the path crosses costs d perturbations plus one value (its
    centre), each of the L kinks three confirmation queries (x*, x* + y, x* - y); a failed
    first test at x* makes x* the centre of a new region.  For d = 1 the only hyperplane is
    {0}: the three end pieces, 3 (d + 1) = 6 queries, suffice.
    """
    return 3 * (d + 1) + 4 if d == 1 else (L + 1) * (d + 1) + 3 * L + 4


def kink_parameter(J: np.ndarray, X0: np.ndarray, direction: np.ndarray) -> Any:
    """s* where the lines ``G_a^T x(s)`` and ``G_b^T x(s)`` meet, ``J = G_b - G_a``,
    ``x(s) = X0 + s dir``: ``J^T x(s*) = 0`` (``sec4.1/kink-intersection``)."""
    return -(J @ X0) / (J @ direction)


def assemble_canonical(
    G_start: np.ndarray, G_end: np.ndarray, jumps: list[tuple[np.ndarray, np.ndarray]], arith: Arith
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The canonical form from the path's first and last gradients and its jumps
    (``sec4.1/canonical-from-jumps``).

    A jump ``J = lam n`` (n normalised) crossed along ``dir`` is the unit
    ``gamma ReLU(s n^T x)`` with ``s = sign(n^T dir)``, ``gamma = s lam``, i.e.
    ``gamma / 2 (s n^T x + |n^T x|)``: so ``c = s lam`` and ``u = G_start + G_end``.
    """
    rows = []
    for J, direction in jumps:
        n, lam = normalize_normal(J, arith)
        rows.append((n, lam if float(n @ direction) > 0 else -lam))
    rows.sort(key=lambda row: tuple(float(t) for t in row[0]))
    N = arith.zeros((len(rows), G_start.shape[0]))
    for j, (n, _) in enumerate(rows):
        N[j] = n
    c = arith.asarray([cj for _, cj in rows]) if rows else arith.zeros((0,))
    return G_start + G_end, N, c


def ffn_query_bound(d: int, max_steps: int | None = None, restarts: int = 2) -> int:
    """The most queries :func:`learn_ffn` can ask, whatever the oracle answers (termination).

    Three end pieces and the scale check, then per search step at most: a value, a
    confirmation pair, a bisection value, and NUDGES pieces, each of H_ROUNDS perturbation
    batches, a centre and a homogeneity query; all of it once per path (1 + restarts).
    """
    steps = 64 * (d + 8) ** 2 if max_steps is None else max_steps
    piece = d * H_ROUNDS + 2
    return (1 + restarts) * (3 * piece + 4 + steps * (1 + 2 + 1 + NUDGES * piece))


@dataclass(frozen=True)
class FFNRecovery:
    """A bias-free FFN in canonical form ``f(x) = 1/2 u^T x + 1/2 sum_j c_j |n_j^T x|``.

    Attributes
    ----------
    u : array (d,)
        ``A w_o`` (the part VQ~ sees).
    N : array (L, d)
        One normal per distinct hyperplane, its first largest entry +1, sorted.
    c : array (L,)
        Aggregate kinks.
    queries : int
        One-token value queries used (counted by the oracle).
    arith : str
    diagnostics : dict
        Query ledger, path facts and the float ``error_bound`` (a bound on
        ``sup_{||x||_inf <= 1} |f_hat(x) - f(x)|`` under the rounding model of :func:`learn_ffn`).
    """

    u: np.ndarray
    N: np.ndarray
    c: np.ndarray
    queries: int
    arith: str
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def L(self) -> int:
        """Number of distinct hyperplanes."""
        return self.N.shape[0]

    def __call__(self, x: Any) -> Any:
        """f_hat(x) for x of shape (d,) or (B, d), in the arithmetic it was learned in."""
        with parse(self.arith).context():
            return evaluate_canonical(self.u, self.N, self.c, x)

    def network(self) -> tuple[np.ndarray, np.ndarray]:
        """An equivalent bias-free network ``(A_hat, w_hat)`` of width L + 2.

        ``f = sum_j c_j ReLU(n_j^T x) + ReLU(g^T x) - ReLU(-g^T x)`` with
        ``g = (u - sum_j c_j n_j) / 2`` (``sec4.1/canonical-network``).
        """
        g = (self.u - self.c @ self.N) / 2
        A = np.concatenate([self.N.T, g[:, None], -g[:, None]], axis=1)
        w = np.concatenate([self.c, np.array([1, -1], dtype=self.c.dtype)])
        return A, w


class _OnHyperplane(Exception):
    """Internal: a gradient was asked at a point on a hyperplane (the caller moves it)."""


@dataclass
class _Piece:
    """A region of the path: a point x in it, f(x), the gradient G there and its error."""

    x: np.ndarray
    y: Any
    G: np.ndarray
    err: float = 0.0


@dataclass
class _Ledger:
    """Where the queries went: ``d (pieces + retries) + values + 2 pairs``.

    ``values`` counts single-point queries (region centres, kink points x*, midpoint checks),
    ``pairs`` the off-path confirmation pairs x* +- y.
    """

    pieces: int = 0
    retries: int = 0
    values: int = 0
    pairs: int = 0
    duplicate_pieces: int = 0
    regions_skipped: int = 0
    nudges: int = 0

    def total(self, d: int) -> int:
        return d * (self.pieces + self.retries) + self.values + 2 * self.pairs


class _PathSearch:
    """The state of :func:`learn_ffn`: the oracle, every answer seen, and the ledger."""

    def __init__(
        self, oracle: ValueOracle, arith: Arith, r: np.ndarray, min_gap: float, max_steps: int
    ) -> None:
        self.oracle, self.arith, self.r = oracle, arith, r
        self.d = oracle.d
        self.min_gap, self.max_steps, self.steps = min_gap, max_steps, 0
        self.ledger = _Ledger()
        #: max |G|_inf over the gradients met: the oracle rounds f(x) at ~ eps |G| |x| even where
        #: f(x) and the local gradient vanish (units cancelling on x's region).
        self.gscale = 0.0
        bits = RESOLUTION_LOG2.get(arith.name, int(0.75 * getattr(arith, "dps", 20) * np.log2(10)))
        self.rho = arith.scalar(2) ** -bits
        self.seen: list[tuple[np.ndarray, Any]] = []
        #: sum of |G_b - G_a|_1 over intervals taken as kink-free though their gradients differ
        self.hidden = 0.0

    def ask(self, X: np.ndarray) -> np.ndarray:
        """f at the rows of X (one-token queries, one batch)."""
        y = self.arith.asarray(self.oracle(X[:, None, :]))
        if self.arith.exact:  # e.g. a one-token softmax exp(-s) exp(s) = 1, left unsimplified
            y = np.array([sp.simplify(t) for t in y], dtype=object)
        else:
            self.arith.check_finite(y, "the oracle's answers")
            big = self.arith.abs_max(y)
            if self.arith is FLOAT64 and (
                big > 2.0**900 or 0 < float(np.abs(y[y != 0]).min(initial=1.0)) < 2.0**-1000
            ):
                raise PrecisionLossError(
                    "an answer is outside float64's safe range [2^-1000, 2^900] (near-subnormal or huge "
                    "values lose relative precision); recover in mpmath instead (arith=MP(dps))"
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
        return TOL_ULPS * self.arith.eps * size + err * float(xf.sum())

    def agrees(self, a: Any, b: Any, tol: float) -> bool:
        return self.arith.is_zero(a - b) if self.arith.exact else abs(float(a - b)) <= tol

    def piece(self, x0: np.ndarray, y0: Any = None) -> _Piece:
        """The gradient of the region containing x0 (``sec4.1/piece-gradient``).

        A failure of Euler's relation ``G^T x0 = f(x0)`` by the same amount at two step sizes
        means x0 lies on a hyperplane or f is affine there (biases: checked by
        :meth:`_homogeneity`); ``_OnHyperplane`` (the caller moves x0) is also raised when no
        step in H_ROUNDS attempts keeps the d perturbations in one region.

        Raises
        ------
        AssumptionError
            If f is not positively homogeneous (an FFN with biases).
        """
        arith, d = self.arith, self.d
        if y0 is None:
            y0 = self.ask(x0[None])[0]
            self.ledger.values += 1
        self.ledger.pieces += 1
        top = arith.abs_max(x0) if not arith.exact else max(abs(float(t)) for t in x0)
        h = arith.scalar(2) ** (int(np.ceil(np.log2(top))) - H_LOG2 if top > 0 else 0)
        residual_before = None
        for attempt in range(H_ROUNDS):
            if attempt:
                self.ledger.retries += 1
            y = self.ask(x0[None, :] + h * arith.eye(d))
            G = (y - y0) / h
            residual = G @ x0 - y0
            err = self._gradient_error(G, x0, y, y0, h)
            tol = self.tol(x0, y0, G=G, err=err)
            if self.agrees(residual, 0, tol):
                if not arith.exact:
                    self.gscale = max(self.gscale, float(np.abs(arith.to_float(G)).max()))
                return _Piece(x0, y0, G, err)
            if residual_before is not None and self.agrees(residual, residual_before, 2 * tol):
                self._homogeneity(x0, y0)
                raise _OnHyperplane
            residual_before = residual
            h = h / 2**H_SHRINK_LOG2
        raise _OnHyperplane  # no step keeps the perturbations in one region: x0 is (nearly) on one

    def end_piece(self, x0: np.ndarray) -> _Piece:
        """The gradient at an end of the path (no caller can move it: a failure is final)."""
        try:
            return self.piece(x0)
        except _OnHyperplane:
            raise DegenerateProbeError(
                "no gradient at a random end of the path: no step down to "
                f"2^-{H_LOG2 + H_SHRINK_LOG2 * (H_ROUNDS - 1)} max|x| keeps f linear there: hyperplanes "
                "closer than the arithmetic resolves, or not a bias-free ReLU FFN"
            ) from None

    def scale_check(self, pU: _Piece, pW: _Piece) -> None:
        """Four queries: ``f(s x) = s f(x)`` at ``x = +-U``, ``s = 2^+-SCALE_LOG2``.

        A biased unit ``ReLU(w^T x + b)`` invisible on the whole path (silent there, or active
        on a region where the other biases cancel its offset) shows at one of +-2^16 U or
        +-2^-16 U unless ``|b|`` is outside ``2^-16 |w^T U| .. 2^16 |w^T U|``.

        Raises
        ------
        AssumptionError
            If f is not positively homogeneous (an FFN with biases).
        """
        S = self.arith.scalar(2) ** SCALE_LOG2
        answers = self.ask(np.array([S * pU.x, S * pW.x, pU.x / S, pW.x / S]))
        self.ledger.values += 4
        for p, y, scale in zip((pU, pW, pU, pW), answers, (S, S, 1 / S, 1 / S)):
            if not self.agrees(y, scale * p.y, scale * self.tol(p.x, y / scale, p.y, G=p.G)):
                raise AssumptionError(
                    f"f(s x) - s f(x) = {float(y - scale * p.y):.6g} != 0 at s = {float(scale):g}: "
                    "f is not positively "
                    "homogeneous (an FFN with biases); the bias-free learner (Sec. 4.1) refuses it, as the "
                    "parity split f(x) - f(-x) = u^T x fails with biases"
                )

    def _homogeneity(self, x0: np.ndarray, y0: Any) -> None:
        """One query: ``f(2 x0) = 2 f(x0)`` for a bias-free FFN (``sec4.1/parity-split``).

        Raises
        ------
        AssumptionError
            If it fails: f is affine, not linear, on x0's region (an FFN with biases).
        """
        y2 = self.ask(2 * x0[None])[0]
        self.ledger.values += 1
        if not self.agrees(y2, 2 * y0, self.tol(x0, y2, y0, y0)):
            raise AssumptionError(
                f"f(2 x0) - 2 f(x0) = {float(y2 - 2 * y0):.6g} != 0: f is not positively homogeneous "
                "(an FFN with biases); the bias-free learner (Sec. 4.1) refuses it, as the parity "
                "split f(x) - f(-x) = u^T x fails with biases"
            )

    def _gradient_error(self, G: np.ndarray, x0: np.ndarray, y: np.ndarray, y0: Any, h: Any) -> float:
        """Bound on max_i |G_i - grad_i| from answers with relative error TOL_ULPS eps."""
        if self.arith.exact:
            return 0.0
        xf = np.abs(self.arith.to_float(x0))
        scale = (
            float(np.abs(self.arith.to_float(G)) @ xf)
            + abs(float(y0))
            + float(np.abs(self.arith.to_float(y)).max())
        )
        return TOL_ULPS * self.arith.eps * 2 * scale / float(h) + self.arith.eps * float(
            np.abs(self.arith.to_float(G)).max()
        )

    def same_gradient(self, a: _Piece, b: _Piece) -> bool:
        """Are a's and b's gradients equal, to within their errors and the rounding floor?

        The floor ``16 TOL_ULPS eps max|G|`` is the smallest jump a confirmation pair x* +- y with
        ``|y| <= |x*|`` can tell from the answers' rounding (``eps |G| |x|`` even where f is tiny,
        see :meth:`tol`); a jump below it (a unit whose kink is below float64's resolution beside
        large ones) is taken for none, and booked in ``hidden`` (the error bound adds half of it).
        """
        if self.arith.exact:
            return all(self.arith.is_zero(t) for t in a.G - b.G)
        floor = 16 * TOL_ULPS * self.arith.eps * self.gscale
        return float(np.abs(self.arith.to_float(a.G - b.G)).max()) <= 2 * (a.err + b.err) + floor

    def segment(self, a: _Piece, b: _Piece) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """Every kink on the segment from a.x to b.x: (jump J = G_b - G_a, direction, error of J)."""
        arith = self.arith
        X0, direction = a.x, b.x - a.x
        zero, one = arith.scalar(0), arith.scalar(1)
        stack = [(zero, a, one, b)]
        kinks: list[tuple[np.ndarray, np.ndarray, float]] = []
        tested: set[Any] = set()  # intersections already confirmed against (never twice)
        while stack:
            sa, pa, sb, pb = stack.pop()
            self.steps += 1
            if float(sb - sa) < self.min_gap or self.steps > self.max_steps:
                raise DegenerateProbeError(
                    f"kinks closer than the search resolves (interval {float(sb - sa):.3g} after "
                    f"{self.steps} steps): near-parallel hyperplanes"
                )
            y_split, s = None, None
            if self.same_gradient(pa, pb):
                s = (sa + sb) / 2
                x = X0 + s * direction
                y_split = self.ask(x[None])[0]
                self.ledger.values += 1
                if self.fits(pa, x, y_split):
                    if not self.arith.exact:  # any jump left between them is below the resolution
                        self.hidden += float(np.abs(self.arith.to_float(pb.G - pa.G)).sum())
                    continue  # one linear function on the whole interval: no kink
            else:
                J = pb.G - pa.G
                s = self._intersection(J, X0, direction, sa, sb, pa.err + pb.err)
                if s is not None and s not in tested:
                    tested.add(s)
                    status, y_split = self._confirm(pa, pb, X0 + s * direction, (sb - sa) * direction)
                    if status == "kink":
                        kinks.append((J, direction, pa.err + pb.err))
                        continue
                    inside = sa < s < sb
                    if inside and status in ("in_a", "in_b"):  # x* lies in pa's (pb's) own region
                        self.ledger.regions_skipped += 1
                        stack.append((s, pa, sb, pb) if status == "in_a" else (sa, pa, s, pb))
                        continue
                    if not (inside and status == "split"):
                        s = None
                else:
                    s = None
                mid = (sa + sb) / 2
                if s is None and mid not in tested and self._planes_meet(pa, pb, X0 + mid * direction):
                    # bisection has cornered the kink closer than s* (moved by the gradients'
                    # errors) could: confirm it at the midpoint, where the planes still agree
                    tested.add(mid)
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
                        self.ledger.regions_skipped += 1
                        stack.append((s, pa, sb, pb) if ra < rb else (sa, pa, s, pb))
                        continue
            self._split(stack, X0, direction, (sa, pa, s, sb, pb), y_split)
        return kinks

    def _split(self, stack: list, X0: np.ndarray, direction: np.ndarray, interval: tuple, y: Any) -> None:
        """Open the region at s (moved if s lies on a hyperplane) and push the two halves."""
        sa, pa, s, sb, pb = interval
        for _ in range(NUDGES):
            try:
                p = self.piece(X0 + s * direction, y)
                break
            except _OnHyperplane:
                self.ledger.nudges += 1
                s, y = ((sa + s) if s - sa > sb - s else (s + sb)) / 2, None  # into the wider half
        else:
            raise DegenerateProbeError(
                f"no gradient at {NUDGES} points of an interval of width {float(sb - sa):.3g}: every one "
                f"is within 2^-{H_LOG2 + H_SHRINK_LOG2 * (H_ROUNDS - 1)} max|x| of a hyperplane (kinks "
                "closer than the search resolves)"
            )
        if self.same_gradient(p, pa) or self.same_gradient(p, pb):
            self.ledger.duplicate_pieces += 1
            stack.append((s, pa, sb, pb) if self.same_gradient(p, pa) else (sa, pa, s, pb))
        else:
            stack.extend([(sa, pa, s, p), (s, p, sb, pb)])

    def _intersection(
        self, J: np.ndarray, X0: np.ndarray, direction: np.ndarray, sa: Any, sb: Any, err: float
    ) -> Any:
        """s* with J^T (X0 + s* dir) = 0 (``sec4.1/kink-intersection``) if it lies in (sa, sb)
        widened by its own uncertainty (the gradients' errors ``err`` move it), else None."""
        slope = J @ direction
        if self.arith.is_zero(slope):
            return None
        s = kink_parameter(J, X0, direction)
        if self.arith.exact:
            return s if sa < s < sb else None
        x = X0 + s * direction
        wobble = (4 * err * float(np.abs(self.arith.to_float(x)).sum()) + self.tol(x, G=J)) / abs(
            float(slope)
        )
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
        ``|y|`` of that region's boundary: the search's resolution rho (RESOLUTION_LOG2).

        Returns
        -------
        status : {"kink", "in_a", "in_b", "split", "unknown"}
            A confirmed kink; x* inside pa's (pb's) region (all three answers on its plane);
            x* opens a new piece; or no pattern was recognised (x* may lie on a hyperplane,
            so the caller bisects instead of opening a region there).
        y_x : f(x*)
        """
        arith = self.arith
        J = pb.G - pa.G
        y_x = self.ask(x[None])[0]
        self.ledger.values += 1
        if not (self.fits(pa, x, y_x) and self.fits(pb, x, y_x)):
            return "split", y_x
        size = arith.abs_max(x) if not arith.exact else max(abs(t) for t in x)
        y = self.r * (size * self.rho)
        if arith.is_zero(J @ y):
            y = reach * (
                size * self.rho / (arith.abs_max(reach) if not arith.exact else max(abs(t) for t in reach))
            )
        if not arith.exact:  # the test must be able to fail: |J^T y| well above the tolerances
            dz = max(float(np.abs(arith.to_float(x - p.x)).sum()) for p in (pa, pb))
            need = 16 * (self.tol(x, y_x, pa.y, pb.y, G=pa.G) + (pa.err + pb.err) * dz)
            if abs(float(J @ y)) < need:
                y = y * (need / abs(float(J @ y)))
        if (float(J @ y) > 0) != (float(J @ reach) > 0):
            y = -y
        plus, minus = self.ask(np.array([x + y, x - y]))
        self.ledger.pairs += 1
        if self.fits(pb, x + y, plus) and self.fits(pa, x - y, minus):
            return "kink", y_x
        if self.fits(pa, x + y, plus) and self.fits(pa, x - y, minus):
            return "in_a", y_x
        if self.fits(pb, x + y, plus) and self.fits(pb, x - y, minus):
            return "in_b", y_x
        return "unknown", y_x


@learner(
    name="ffn",
    result="beyond the paper (A_FFN of Sec. 4.1)",
    relies_on=(
        "sec4.1/parity-split",
        "sec4.1/piece-gradient",
        "sec4.1/kink-intersection",
        "sec4.1/canonical-from-jumps",
        "sec4.1/canonical-network",
        "sec4.1/canonical-form",
        "sec4.1/rescaling",
        "sec4.1/zero-sum-flip",
        "sec4.1/ffn-end-to-end",
    ),
    arithmetics=("float64", "mpmath", "sympy"),
    queries="(L + 1)(d + 1) + 3 L + 4 for L distinct hyperplanes (generic position)",
    count=lambda d, L, **_: ffn_query_count(d, L),
)
def learn_ffn(
    oracle: ValueOracle,
    *,
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    min_gap: float | None = None,
    max_steps: int | None = None,
    tolerance: float = 1e-6,
    restarts: int = 2,
) -> FFNRecovery:
    """Learn a bias-free FFN ``f(x) = w_o^T ReLU(A^T x)`` from one-token value queries (A_FFN).

    The paper (Sec. 4.1) assumes such a learner; this one is exact and needs no assumption on
    A beyond generic position of the random path (see the module docstring).

    Parameters
    ----------
    oracle : ValueOracle
        Answers ``f(x)`` for one-token queries ``[x^T]`` (a Transformer oracle will do).
    rng : numpy.random.Generator
        Draws the path U -> V -> -U and the off-path direction.
    arith : Arith
        float64, mpmath or sympy (exact: the path is rational).
    min_gap : float, optional
        Floor on the path interval searched (default 2^12 eps: 9e-13 in float64; 2^-200 in
        sympy): below it the kinks are declared unresolvable.
    max_steps : int, optional
        Bound on search steps (default 64 (d + 8)^2): termination whatever the oracle says.
    tolerance : float
        Promised relative accuracy (numeric arithmetics): a larger a-posteriori error bound
        raises PrecisionLossError.
    restarts : int
        A path that meets kinks closer than the arithmetic resolves (DegenerateProbeError,
        PrecisionLossError) is abandoned for a new random path, at most this many times; the
        abandoned queries are counted (``diagnostics["restarts"]`` says why).

    Returns
    -------
    FFNRecovery
        The canonical form, the queries used and diagnostics (``L``, the query ``ledger``,
        ``queries_formula`` = (L + 1)(d + 1) + 3 L + 4, ``reasked_queries``, ``restarts``,
        ``error_bound``).

    Raises
    ------
    NonIdentifiableError
        If f is identically 0 (nothing to learn, and W of a Transformer is then hidden).
    AssumptionError
        If f is not positively homogeneous (an FFN with biases).
    DegenerateProbeError
        If hyperplanes are closer than the search resolves (exact arithmetic too).
    PrecisionLossError
        If the a-posteriori error bound exceeds ``tolerance`` or the answers contradict the
        recovered network (numeric arithmetics).

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof.models import ReluFFN
    >>> from attnproof.oracles import ValueOracle
    >>> A = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]])
    >>> rec = learn_ffn(ValueOracle(ReluFFN(A, np.ones(3))), rng=np.random.default_rng(0))
    >>> rec.L, rec.queries == ffn_query_count(2, 3) + rec.diagnostics["reasked_queries"]
    (3, True)
    >>> bool(abs(rec(np.array([0.3, -2.0])) - 2.0) < 1e-12)  # ReLU(.3) + ReLU(-2) + ReLU(1.7)
    True
    """
    if rng is None:
        raise InvalidInputError("learn_ffn needs an explicit numpy.random.Generator (rng=...)")
    if not isinstance(tolerance, (int, float)) or not tolerance > 0:
        raise InvalidInputError(f"tolerance must be a positive number; got {tolerance!r}")
    if not isinstance(restarts, int) or restarts < 0:
        raise InvalidInputError(f"restarts must be a non-negative integer; got {restarts!r}")
    d = oracle.d
    start = oracle.queries
    if min_gap is None:
        min_gap = 2.0**-200 if arith.exact else 2**12 * arith.eps
    max_steps = 64 * (d + 8) ** 2 if max_steps is None else max_steps
    failures: list[str] = []
    spent = _Ledger()
    for attempt in range(restarts + 1):
        try:
            rec = _learn_ffn_once(oracle, rng, arith, min_gap, max_steps, tolerance, spent)
        except (DegenerateProbeError, PrecisionLossError) as err:
            # a path too close to a meeting of hyperplanes for this arithmetic: draw another
            if attempt == restarts or "safe range" in str(err):
                raise
            failures.append(f"{type(err).__name__}: {err}")
            continue
        queries = oracle.queries - start
        if spent.total(d) != queries:
            raise AssertionError(f"query ledger {spent} does not add up to {queries}")
        rec.diagnostics.update(
            queries_formula=ffn_query_count(d, rec.L),
            reasked_queries=queries - ffn_query_count(d, rec.L),
            ledger=dict(spent.__dict__),
            restarts=failures,
        )
        return FFNRecovery(rec.u, rec.N, rec.c, queries, rec.arith, rec.diagnostics)
    raise AssertionError("unreachable")  # pragma: no cover


def _learn_ffn_once(
    oracle: ValueOracle,
    rng: np.random.Generator,
    arith: Arith,
    min_gap: float,
    max_steps: int,
    tolerance: float,
    ledger: _Ledger,
) -> FFNRecovery:
    """One path U -> V -> -U (see :func:`learn_ffn`); queries are booked in ``ledger``."""
    d = oracle.d
    with arith.context():
        U, V, r = (arith.asarray(rng.standard_normal(d)) for _ in range(3))
        search = _PathSearch(
            oracle, arith, r / arith.abs_max(r) if not arith.exact else r, min_gap, max_steps
        )
        search.ledger = ledger
        pU, pV, pW = (search.end_piece(x) for x in (U, V, -U))
        search.scale_check(pU, pW)
        if d == 1:  # the only hyperplane is {0}, which any path between U and -U crosses at 0
            kinks = [] if search.same_gradient(pU, pW) else [(pW.G - pU.G, -U, pU.err + pW.err)]
        else:
            kinks = search.segment(pU, pV) + search.segment(pV, pW)
        u, N, c = assemble_canonical(pU.G, pW.G, [(J, direction) for J, direction, _ in kinks], arith)
    L = N.shape[0]
    info: dict[str, Any] = {"L": L, "steps": search.steps, "resolution": float(search.rho)}
    rec = FFNRecovery(u, N, c, 0, arith.name, info)
    _check_nonzero(rec, arith)
    if not arith.exact:
        # sup_{|x|_inf <= 1} |f_hat - f| <= (|du|_1 + sum_j |dJ_j|_1) / 2 (``||a| - |b|| <= |a - b|``)
        # plus half of every jump taken for none (below the resolution: ``search.hidden``)
        jumps = pU.err + pW.err + sum(e for _, _, e in kinks)
        info["error_bound"] = (
            0.5 * d * jumps + 0.5 * search.hidden + _size(rec, arith) * arith.eps * 4 * (L + 1)
        )
    _check_answers(rec, search, arith, tolerance)
    return rec


def _size(rec: FFNRecovery, arith: Arith) -> float:
    """``|u|_1 / 2 + sum_j |c_j| |n_j|_1 / 2``: a bound on |f_hat| over the unit inf-ball."""
    u, N, c = (arith.to_float(a) for a in (rec.u, rec.N, rec.c))
    return (
        0.5 * float(np.abs(u).sum() + np.abs(c) @ np.abs(N).sum(axis=1))
        if N.size
        else 0.5 * float(np.abs(u).sum())
    )


def _check_nonzero(rec: FFNRecovery, arith: Arith) -> None:
    if rec.L == 0 and all(arith.is_zero(t) for t in rec.u):
        raise NonIdentifiableError(
            "f is identically 0 (every region has gradient 0): there is no FFN to learn, and a "
            "Transformer with this FFN answers 0 to every query, so its W* is not identifiable"
        )


def _check_answers(rec: FFNRecovery, search: _PathSearch, arith: Arith, tolerance: float) -> None:
    """Every answer received must agree with the recovered network, and a numeric error
    bound must meet the promise (free: no query)."""
    bound = rec.diagnostics.get("error_bound", 0.0)
    if not arith.exact and bound > tolerance * max(_size(rec, arith), arith.eps):
        raise PrecisionLossError(
            f"a-posteriori error bound {bound:.3g} exceeds the promised relative {tolerance:.1g}: "
            "hyperplanes too close for this arithmetic; use mpmath (arith=MP(dps))"
        )
    for x, y in search.seen:
        xf = 0.0 if arith.exact else float(np.abs(arith.to_float(x)).max())
        if not search.agrees(rec(x), y, search.tol(x, y) + 2 * bound * xf):
            error = DegenerateProbeError if arith.exact else PrecisionLossError
            raise error(
                "an answer contradicts the recovered network: two hyperplanes were taken for one "
                "(kinks closer than the search resolves, or a path in non-generic position)"
            )


@dataclass(frozen=True)
class TransformerRecovery:
    """What :func:`learn_transformer` returns.

    Attributes
    ----------
    W : array (d, d)
        The attention matrix W* = K^T Q.
    ffn : FFNRecovery
        The FFN in canonical form (``A_hat, w_hat = ffn.network()`` for a network).
    queries : int
        Value queries used in all (counted by the Transformer's oracle).
    arith : str
    diagnostics : dict
        ``route`` ("antisymmetric" or "cone"), ``ffn_queries``, ``attention_queries``,
        ``formula`` (the count asserted), the Thm 4.1 run's diagnostics and ``error_bound``.
    """

    W: np.ndarray
    ffn: FFNRecovery
    queries: int
    arith: str
    diagnostics: dict[str, Any] = field(default_factory=dict)


#: Candidate cone centres drawn (no query) by the cone route; the widest-margin one is kept.
CONE_DRAWS = 32


def transformer_query_count(d: int, L: int, route: str = "antisymmetric") -> int:
    """``Q_FFN + 2 (d + d^2)`` (each VQ~ query is two value queries) or ``Q_FFN + d + d^2``
    (cone route), with ``Q_FFN = (L + 1)(d + 1) + 3 L + 4`` in generic position."""
    return ffn_query_count(d, L) + (2 if route == "antisymmetric" else 1) * (d + d * d)


@learner(
    name="transformer",
    result="Sec. 4.1 (A_FFN and the cone route beyond the paper)",
    relies_on=(
        "sec4.1/relu-antisymmetry",
        "sec4.1/antisymmetry-all-d",
        "sec4.1/run-high-precision",
        "sec4.1/parity-split",
        "sec4.1/piece-gradient",
        "sec4.1/kink-intersection",
        "sec4.1/canonical-from-jumps",
        "sec4.1/cone-probe",
        "sec4.1/cone-linear-map",
        "sec4.1/end-to-end",
        "thm4.1/one-token",
        "thm4.1/label-affine",
    ),
    arithmetics=("float64", "mpmath", "sympy"),
    queries="Q_FFN + 2 (d + d^2) (VQ~ route); Q_FFN + d + d^2 (cone route, v* = 0)",
    count=lambda d, L, route="antisymmetric", **_: transformer_query_count(d, L, route),
)
def learn_transformer(
    oracle: ValueOracle,
    *,
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    route: str = "auto",
    probes: str = "gaussian",
    tolerance: float = 1e-6,
) -> TransformerRecovery:
    """Learn ``TF(X) = w_o^T ReLU(alpha(X, W)^T X A)`` (Sec. 4.1) from value queries.

    The FFN comes from one-token queries (:func:`learn_ffn`); W* from Thm 4.1 on the
    antisymmetric oracle ``VQ(X) - VQ(-X)`` when ``v* = A w_o != 0`` (the paper's route), or on
    the cone oracle ``VQ(X M^T)`` otherwise (beyond the paper: the paper declares W* not
    identifiable from VQ~ then, and it is not, but it is from VQ).

    Parameters
    ----------
    oracle : ValueOracle
        Answers TF(X) for any X (N >= 1).
    rng : numpy.random.Generator
    arith : Arith
    route : {"auto", "antisymmetric", "cone"}
        "auto" takes the paper's route when the recovered u = A w_o is non-zero.
    probes : {"gaussian", "basis"}
        Thm 4.1's probe family on the antisymmetric route (the cone route uses "basis").
    tolerance : float
        Passed to :func:`learn_ffn`.

    Returns
    -------
    TransformerRecovery

    Raises
    ------
    NonIdentifiableError
        If the FFN is identically 0 (then TF == 0 and W* is hidden from every query).
    InvalidInputError
        For an unknown route, or the antisymmetric route with u = 0.

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof.models import OneLayerTransformer
    >>> from attnproof.oracles import ValueOracle
    >>> rng = np.random.default_rng(0)
    >>> W, A, w_o = rng.standard_normal((3, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    >>> rec = learn_transformer(ValueOracle(OneLayerTransformer(W, A, w_o)), rng=rng)
    >>> bool(np.abs(rec.W - W).max() < 1e-8), rec.diagnostics["route"]
    (True, 'antisymmetric')
    """
    if route not in ("auto", "antisymmetric", "cone"):
        raise InvalidInputError(f"unknown route {route!r}: use 'auto', 'antisymmetric' or 'cone'")
    if rng is None:
        raise InvalidInputError("learn_transformer needs an explicit numpy.random.Generator (rng=...)")
    d = oracle.d
    start = oracle.queries
    ffn = learn_ffn(oracle, rng=rng, arith=arith, tolerance=tolerance)
    u_zero = _u_vanishes(ffn, arith)
    if route == "auto":
        route = "cone" if u_zero else "antisymmetric"
    if route == "antisymmetric" and u_zero:
        raise InvalidInputError(
            "v* = A w_o = 0: VQ~ == 0 and W* is not identifiable from antisymmetric queries "
            "(Sec. 4.1); use route='cone'"
        )
    with arith.context():
        if route == "antisymmetric":
            derived = AntisymmetricOracle(oracle, scale=_unit_scale(ffn.u, arith))
            rec = learn_exact(derived, probes=probes, rng=rng, arith=arith)
            W = rec.W
            extra_bound = derived.amplification  # Thm 4.1's bound assumes VQ~'s own rounding
        else:
            M, info = cone_map(ffn, arith, rng)
            derived = LinearMapOracle(oracle, M=M, scale=_unit_scale(M.T @ info["cone_g"], arith))
            rec = learn_exact(derived, probes="basis", arith=arith)
            W = arith.solve(M.T, arith.solve(M.T, rec.W).T).T  # W' = M^T W M
            extra_bound = info["cond_M"] ** 2
    queries = oracle.queries - start
    formula = transformer_query_count(d, ffn.L, route)
    attention = queries - ffn.queries
    if attention != derived.cost * derived.queries:
        raise AssertionError(
            f"attention phase used {attention} value queries for {derived.queries} derived ones"
        )
    diagnostics: dict[str, Any] = {
        "route": route,
        "ffn_queries": ffn.queries,
        "attention_queries": attention,
        "queries_formula": formula,
        "reasked_queries": queries - formula,
        "thm4.1": rec.diagnostics,
    }
    if route == "cone":
        diagnostics.update(info)
    if not arith.exact:
        diagnostics["error_bound"] = rec.diagnostics["error_bound"] * extra_bound
    return TransformerRecovery(W, ffn, queries, arith.name, diagnostics)


def _unit_scale(v: np.ndarray, arith: Arith) -> Any:
    """The power of two ``2^-e`` with ``2^e <= max |v_i| < 2^(e + 1)`` (1 in exact arithmetic).

    The attention phase sees v* = u (VQ~) or ``M^T g`` (cone): a tiny FFN makes it tiny, and
    float64 error models square v's entries (underflow below 1e-154).  Scaling the derived
    oracle's answers by this exact power of two gives v* of order one, the same W* and the same
    relative rounding.
    """
    if arith.exact:
        return 1
    top = arith.abs_max(v)
    return arith.scalar(2) ** -int(np.floor(np.log2(float(top)))) if top > 0 else 1


def _u_vanishes(ffn: FFNRecovery, arith: Arith) -> bool:
    """u = A w_o is zero (exactly, or within the FFN's error bound in floating point)."""
    if arith.exact:
        return all(arith.is_zero(t) for t in ffn.u)
    return float(np.abs(arith.to_float(ffn.u)).sum()) <= 2 * ffn.diagnostics["error_bound"]


def cone_map(ffn: FFNRecovery, arith: Arith, rng: np.random.Generator) -> tuple[np.ndarray, dict[str, Any]]:
    """``M = x0 1^T + eps I`` whose columns and Thm 4.1 basis-probe tokens lie in one open cone.

    x0 is the draw (among CONE_DRAWS, no query) with the widest margin
    ``min_j |n_j^T x0| / |n_j|_1`` whose gradient g is non-zero; eps is the largest power of
    two below half that margin, so a token ``M z = (1^T z) x0 + eps z`` with
    ``z in {e_j, e_l + e_j, e_l + e_p + e_j}`` keeps every sign n_j^T x (``sec4.1/cone-probe``).

    Raises
    ------
    NonIdentifiableError
        If no draw has a non-zero gradient (f == 0).
    """
    d = ffn.u.shape[0]
    best = None
    for _ in range(CONE_DRAWS):
        x0 = arith.asarray(rng.standard_normal(d))
        z = ffn.N @ x0
        margins = [abs(float(t)) / float(np.abs(arith.to_float(n)).sum()) for t, n in zip(z, ffn.N)]
        margin = min(margins, default=1.0)
        signs = arith.asarray([1 if float(t) > 0 else -1 for t in z]) if len(z) else arith.zeros((0,))
        g = (ffn.u + (ffn.c * signs) @ ffn.N) / 2
        size = float(np.abs(arith.to_float(g)).max())
        if size > 2 * ffn.diagnostics.get("error_bound", 0.0) and (best is None or margin * size > best[0]):
            best = (margin * size, x0, margin, g)
    if best is None:
        raise NonIdentifiableError("every region of f has gradient 0: f == 0 and W* is hidden")
    _, x0, margin, g = best
    eps = arith.scalar(2) ** int(np.floor(np.log2(margin / 2)))
    M = x0[:, None] * arith.asarray(np.ones((1, d))) + eps * arith.eye(d)
    sv = np.linalg.svd(arith.to_float(M), compute_uv=False)
    return M, {"cone_margin": margin, "cone_eps": float(eps), "cond_M": float(sv[0] / sv[-1]), "cone_g": g}


def _piecewise_simplify(e: sp.Expr) -> sp.Expr:
    """simplify after rewriting Max and Abs as Piecewise, which sympy can case-split."""
    return sp.simplify(sp.piecewise_fold(sp.sympify(e).rewrite(sp.Piecewise)))


def _relu_as_abs(e: sp.Expr, canonical: Any, finish: Any) -> sp.Expr:
    """Rewrite every ReLU, Max(a, 0), as (a + |a|) / 2 (``sec4.1/relu-as-abs``) with ``a``
    put in ``canonical`` form first, then ``finish`` the whole expression."""

    def rewrite(*args: sp.Expr) -> sp.Expr:
        rest = [x for x in args if x != 0]
        if len(args) == 2 and len(rest) == 1:
            a = canonical(rest[0])
            return (a + sp.Abs(a)) / 2
        return sp.Max(*args)

    return finish(sp.sympify(e).replace(sp.Max, rewrite))


def _relu_as_abs_simplify(e: sp.Expr) -> sp.Expr:
    """ReLU as (a + |a|) / 2, everything simplified: the argument ``a`` first, so ReLU(z(-X)) and
    ReLU(-z(X)) meet in one canonical form and ``|-a| = |a|`` cancels them."""
    return _relu_as_abs(e, sp.simplify, sp.simplify)


def _relu_as_abs_cancel(e: sp.Expr) -> sp.Expr:
    """ReLU as (a + |a|) / 2, then a rational-function normal form (``cancel(together(.))``): enough
    when the arguments already meet syntactically (sympy writes ``|-a|`` as ``|a|``), and 6 times
    faster than :func:`_relu_as_abs_simplify` on the Transformer's softmax expressions."""
    return _relu_as_abs(e, lambda a: a, lambda x: sp.cancel(sp.together(x)))


@identity(
    id="sec4.1/relu-as-abs",
    scope="scalar",
    paper="Sec. 4.1 (lemma)",
    statement=r"\mathrm{ReLU}(z) = \max(z, 0) = \tfrac{1}{2}(z + |z|)",
    assumptions="z real",
    simplifier=_piecewise_simplify,
)
def relu_as_abs() -> list[Pair]:
    z = sp.Symbol("z", real=True)
    return [(relu(np.array([z], dtype=object))[0], (z + sp.Abs(z)) / 2)]


@identity(
    id="sec4.1/relu-antisymmetry",
    paper="Sec. 4.1",
    statement=r"\mathrm{ReLU}(z) - \mathrm{ReLU}(-z) = z,\quad \alpha(-X, W) = \alpha(X, W),"
    r"\ \text{hence}\ \mathrm{VQ}(X) - \mathrm{VQ}(-X) = \alpha(X, W)^\top X (A w_o)"
    r"\ \text{for}\ \mathrm{TF}(X) = w_o^\top \mathrm{ReLU}(\alpha(X,W)^\top X A)",
    uses=("sec4.1/relu-as-abs",),
    assumptions="z real; W real d x d, A real d x m, w_o real m-vector, X real N x d; left: the library's "
    "relu, attention_weights and OneLayerTransformer; right: alpha(X, W) and alpha(X, W)^T X (A w_o) "
    "written from Sec. 3 (proof.paper_weights), not the library's model; "
    "(d, N, m) in {(2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 2)}",
    simplifier=_relu_as_abs_cancel,
    scope="listed sizes: (d, N, m) = (2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 2)",
)
def relu_antisymmetry() -> list[Pair]:
    z = sp.Symbol("z", real=True)
    pairs: list[Pair] = [(relu(np.array([z], dtype=object))[0] - relu(np.array([-z], dtype=object))[0], z)]
    for d, N, m in TF_SIZES:
        W, A = symbols("W", (d, d), real=True), symbols("A", (d, m), real=True)
        w_o, X = symbols("w", (m,), real=True), symbols("X", (N, d), real=True)
        alpha = paper_weights(W, X)
        pairs.extend(zip(attention_weights(-X[None], W, SYMPY)[0], alpha))
        u = [sp.Add(*(A[a, k] * w_o[k] for k in range(m))) for a in range(d)]  # A w_o
        tf = OneLayerTransformer(W, A, w_o, SYMPY)
        pairs.append((tf(X) - tf(-X), sp.Add(*(alpha[i] * sp.Add(*(X[i, a] * u[a] for a in range(d)))
                                                 for i in range(N)))))
    return pairs


@identity(
    id="sec4.1/antisymmetry-all-d",
    paper="Sec. 4.1",
    statement=r"\forall d, N, m:\ (-x_i)^\top W (-x_N) = x_i^\top W x_N "
    r"\Rightarrow \alpha(-X, W) = \alpha(X, W);\ "
    r"\alpha^\top(-X)A = -\alpha^\top X A,\ "
    r"\mathrm{ReLU}(z) - \mathrm{ReLU}(-z) = z,\ (\alpha^\top X A)\, w_o = \alpha^\top X (A w_o)",
    uses=("sec4.1/relu-as-abs", "sec4.1/relu-antisymmetry"),
    simplifier=expand_matrix,
    assumptions="W d x d, x_i, x_N d x 1, alpha N x 1, X N x d, A d x m, w_o m x 1 MatrixSymbols of symbolic "
    "sizes; the scalar ReLU(z) - ReLU(-z) = z (entrywise) is sec4.1/relu-antisymmetry's first pair; "
    "together: TF(X) - TF(-X) = w_o^T (ReLU(z) - ReLU(-z)) = alpha^T X (A w_o) with z = A^T X^T alpha; "
    "the library's model at listed sizes: sec4.1/relu-antisymmetry",
    scope="all d (and every N, m: MatrixSymbol algebra of symbolic size, a proven scalar ReLU step)",
)
def antisymmetry_all_d() -> list[Pair]:
    d, N, m = sp.symbols("d N m", integer=True, positive=True)
    W, x, y = sp.MatrixSymbol("W", d, d), sp.MatrixSymbol("x", d, 1), sp.MatrixSymbol("y", d, 1)
    alpha, X = sp.MatrixSymbol("alpha", N, 1), sp.MatrixSymbol("X", N, d)
    A, w_o = sp.MatrixSymbol("A", d, m), sp.MatrixSymbol("w", m, 1)
    return [
        ((-x).T * W * (-y), x.T * W * y),
        (alpha.T * (-X) * A, -(alpha.T * X * A)),
        ((alpha.T * X * A) * w_o, alpha.T * X * (A * w_o)),
    ]


def _ffn_sizes() -> tuple[tuple[int, int], ...]:
    """(d, m) sizes at which the FFN identities are proven with fully symbolic weights."""
    return ((1, 2), (2, 2), (2, 3), (3, 2))


def _one_token(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=object)[None, :]


@identity(
    id="sec4.1/parity-split",
    scope="listed sizes: (d, m) = (1, 2), (2, 2), (2, 3), (3, 2)",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"f(x) = w_o^\top \mathrm{ReLU}(A^\top x) = \tfrac12 u^\top x"
    r" + \tfrac12 \sum_k a_k |w_k^\top x|,"
    r"\quad f(x) - f(-x) = u^\top x,\quad u = A w_o",
    uses=("sec4.1/relu-as-abs",),
    assumptions="A real d x m (columns w_k), w_o = (a_k) real, x real; "
    "(d, m) in {(1, 2), (2, 2), (2, 3), (3, 2)}",
    simplifier=_relu_as_abs_simplify,
)
def parity_split() -> list[Pair]:
    pairs: list[Pair] = []
    for d, m in _ffn_sizes():
        A, w_o, x = (
            symbols("A", (d, m), real=True),
            symbols("a", (m,), real=True),
            symbols("x", (d,), real=True),
        )
        f = ReluFFN(A, w_o, SYMPY)
        half = (x @ (A @ w_o) + sum(w_o[k] * sp.Abs(x @ A[:, k]) for k in range(m))) / 2
        pairs += [(f(_one_token(x)), half), (f(_one_token(x)) - f(_one_token(-x)), x @ (A @ w_o))]
    return pairs


@identity(
    id="sec4.1/rescaling",
    scope="listed sizes: (d, m) = (1, 2), (2, 2), (2, 3), (3, 2)",
    paper="Sec. 4.1 (identifiability, beyond the paper)",
    statement=r"w_o^\top \mathrm{ReLU}((A D)^\top x) \text{ with } w_o \to D^{-1} w_o \text{ is unchanged},"
    r"\ D = \mathrm{diag}(s_k),\ s_k > 0",
    uses=("sec4.1/relu-as-abs",),
    assumptions="A real d x m, w_o real, s_k positive, x real; (d, m) in {(1, 2), (2, 2), (2, 3), (3, 2)}",
    simplifier=_relu_as_abs_simplify,
)
def rescaling() -> list[Pair]:
    pairs: list[Pair] = []
    for d, m in _ffn_sizes():
        A, w_o, x = (
            symbols("A", (d, m), real=True),
            symbols("a", (m,), real=True),
            symbols("x", (d,), real=True),
        )
        s = symbols("s", (m,), positive=True)
        pairs.append(
            (ReluFFN(A * s[None, :], w_o / s, SYMPY)(_one_token(x)), ReluFFN(A, w_o, SYMPY)(_one_token(x)))
        )
    return pairs


@identity(
    id="sec4.1/zero-sum-flip",
    scope="listed sizes: d = 2, m = 4",
    paper="Sec. 4.1 (identifiability, beyond the paper)",
    statement=r"\sum_{k \in S} a_k w_k = 0 \Rightarrow \text{flipping } w_k \to -w_k\ (k \in S)"
    r" \text{ leaves } f \text{ unchanged; e.g. } \mathrm{ReLU}(x_1) + \mathrm{ReLU}(x_2) + "
    r"\mathrm{ReLU}(-x_1 - x_2) = \mathrm{ReLU}(-x_1) + \mathrm{ReLU}(-x_2) + \mathrm{ReLU}(x_1 + x_2)",
    uses=("sec4.1/parity-split",),
    assumptions="d = 2, m = 4: w_1, w_2, w_4, a_1, a_2, a_4 real, a_3 nonzero, "
    "w_3 = -(a_1 w_1 + a_2 w_2) / a_3 (so S = {1, 2, 3} sums to 0); x real",
    simplifier=_relu_as_abs_simplify,
)
def zero_sum_flip() -> list[Pair]:
    x = symbols("x", (2,), real=True)
    W12, w4 = symbols("w", (2, 2), real=True), symbols("v", (2,), real=True)
    a = np.array(
        [
            *sp.symbols("a_1 a_2", real=True),
            sp.Symbol("a_3", real=True, nonzero=True),
            sp.Symbol("a_4", real=True),
        ],
        dtype=object,
    )
    w3 = -(a[0] * W12[:, 0] + a[1] * W12[:, 1]) / a[2]
    A = np.column_stack([W12[:, 0], W12[:, 1], w3, w4])
    flipped = A * np.array([-1, -1, -1, 1], dtype=object)[None, :]
    example = np.array([[1, 0, -1], [0, 1, -1]], dtype=object)
    ones = np.ones(3, dtype=object)
    return [
        (ReluFFN(A, a, SYMPY)(_one_token(x)), ReluFFN(flipped, a, SYMPY)(_one_token(x))),
        (ReluFFN(example, ones, SYMPY)(_one_token(x)), ReluFFN(-example, ones, SYMPY)(_one_token(x))),
    ]


#: Rational targets on which the canonical form and the whole FFN learner are proven exact:
#: parallel units merged, an antiparallel unit on the same hyperplane, a zero column and a
#: dead unit (a = 0); a zero-sum triple; an antiparallel pair cancelling to a linear term;
#: m < d; m > d.
EXACT_FFN_TARGETS: tuple[tuple[list, list], ...] = (
    ([[1, 2, -1, 0, 3, 1], [0, 4, -2, 0, 1, 2]], [1, sp.Rational(1, 2), -2, 5, 0, 3]),
    ([[1, 0, -1], [0, 1, -1]], [1, 1, 1]),
    ([[1, -1, 2], [1, -1, 0], [0, 0, 1]], [1, -1, 3]),
    ([[2], [1], [-1]], [-3]),
    ([[3, -1, 2, 1, -2], [1, 2, -3, 1, 1]], [1, -2, sp.Rational(1, 3), 2, -1]),
)


def _exact_target(k: int) -> tuple[np.ndarray, np.ndarray]:
    A, w_o = EXACT_FFN_TARGETS[k]
    return SYMPY.asarray(A), SYMPY.asarray(w_o)


@identity(
    id="sec4.1/canonical-form",
    scope="listed sizes: fixed rational targets, d = 2, 3",
    paper="Sec. 4.1 (identifiability, beyond the paper)",
    statement=r"w_o^\top \mathrm{ReLU}(A^\top x) = \tfrac12 u^\top x"
    r" + \tfrac12 \sum_{j=1}^{L} c_j |n_j^\top x|"
    r"\ \text{(canonical\_ffn: one } n_j \text{ per hyperplane, largest entry } +1)",
    uses=("sec4.1/parity-split", "sec4.1/rescaling", "sec4.1/zero-sum-flip"),
    assumptions="x real; the rational targets EXACT_FFN_TARGETS (merged, antiparallel, dead, zero-sum, "
    "cancelling units; m < d and m > d)",
    simplifier=_relu_as_abs_simplify,
)
def canonical_form() -> list[Pair]:
    pairs: list[Pair] = []
    for k in range(len(EXACT_FFN_TARGETS)):
        A, w_o = _exact_target(k)
        x = symbols("x", (A.shape[0],), real=True)
        u, N, c = canonical_ffn(A, w_o, SYMPY)
        pairs.append((evaluate_canonical(u, N, c, x), ReluFFN(A, w_o, SYMPY)(_one_token(x))))
    return pairs


@identity(
    id="sec4.1/canonical-network",
    scope="listed sizes: (d, L) = (2, 1), (2, 3), (3, 2)",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"\tfrac12 u^\top x + \tfrac12 \sum_j c_j |n_j^\top x| = \sum_j c_j \mathrm{ReLU}(n_j^\top x)"
    r" + \mathrm{ReLU}(g^\top x) - \mathrm{ReLU}(-g^\top x),\ g = \tfrac12 (u - \textstyle\sum_j c_j n_j)",
    uses=("sec4.1/relu-as-abs",),
    assumptions="u, x real d-vectors, N real L x d, c real L-vector; (d, L) in {(2, 1), (2, 3), (3, 2)}",
    simplifier=_relu_as_abs_simplify,
)
def canonical_network() -> list[Pair]:
    pairs: list[Pair] = []
    for d, L in ((2, 1), (2, 3), (3, 2)):
        u, x = symbols("u", (d,), real=True), symbols("x", (d,), real=True)
        N, c = symbols("n", (L, d), real=True), symbols("c", (L,), real=True)
        rec = FFNRecovery(u, N, c, 0, SYMPY.name)
        pairs.append((ReluFFN(*rec.network(), SYMPY)(_one_token(x)), rec(x)))
    return pairs


class _LinearTarget:
    """f(x) = G^T x on one token: the FFN inside one region (for ``sec4.1/piece-gradient``)."""

    def __init__(self, G: np.ndarray) -> None:
        self.G, self.d, self.arith = G, G.shape[0], SYMPY

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=object)[:, 0, :] @ self.G


@identity(
    id="sec4.1/piece-gradient",
    scope="listed sizes: d = 1..4",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"f(x) = G^\top x \text{ near } x_0 \Rightarrow \frac{f(x_0 + h e_i) - f(x_0)}{h} = G_i"
    r"\ \text{and}\ G^\top x_0 - f(x_0) = 0 \ \text{(Euler: no bias)}",
    assumptions="G real d-vector (symbols), x0 rational; d = 1..4; the learner's own piece() in sympy",
)
def piece_gradient() -> list[Pair]:
    pairs: list[Pair] = []
    for d in range(1, 5):
        G = symbols("G", (d,), real=True)
        x0 = SYMPY.asarray([sp.Rational(3 * i + 1, 7) * (-1) ** i for i in range(d)])
        search = _PathSearch(ValueOracle(_LinearTarget(G)), SYMPY, SYMPY.asarray(np.ones(d)), 2.0**-200, 10)
        p = search.piece(x0)
        pairs.extend(zip(p.G, G))
        pairs.append((p.G @ x0 - p.y, sp.Integer(0)))
    return pairs


@identity(
    id="sec4.1/kink-intersection",
    scope="listed sizes: d = 2, 3",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"G_b = G_a + \gamma n \Rightarrow s^* = -\frac{J^\top X_0}{J^\top \mathrm{dir}}"
    r"\ (J = G_b - G_a)"
    r"\ \text{has}\ n^\top x(s^*) = 0 \text{ and } G_a^\top x(s^*) = G_b^\top x(s^*)",
    assumptions="G_a, n, X0, dir real d-vectors, gamma real nonzero, n^T dir nonzero; d = 2, 3",
)
def kink_intersection() -> list[Pair]:
    pairs: list[Pair] = []
    for d in (2, 3):
        Ga, n, X0, direction = (symbols(name, (d,), real=True) for name in ("G", "n", "p", "q"))
        gamma = sp.Symbol("gamma", real=True, nonzero=True)
        Gb = Ga + gamma * n
        s = kink_parameter(Gb - Ga, X0, direction)
        x = X0 + s * direction
        pairs += [(n @ x, sp.Integer(0)), (Ga @ x, Gb @ x)]
    return pairs


@identity(
    id="sec4.1/canonical-from-jumps",
    scope="listed sizes: d = 2, 3",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"f = G_U^\top x + \sum_j \gamma_j \mathrm{ReLU}(s_j n_j^\top x),\ J_j = \gamma_j s_j n_j"
    r" \Rightarrow \mathrm{assemble}(G_U, G_U + \textstyle\sum_j J_j, \{J_j\}) \text{ evaluates to } f",
    uses=("sec4.1/parity-split",),
    assumptions="G_U, x real symbols; rational normals, kink weights gamma_j of both signs and path "
    "directions crossing each hyperplane both ways; d = 2 (L = 3) and d = 3 (L = 2)",
    simplifier=_relu_as_abs_simplify,
)
def canonical_from_jumps() -> list[Pair]:
    pairs: list[Pair] = []
    cases = (
        ([[1, 2], [-3, 1], [0, 1]], [2, sp.Rational(-1, 2), 3], [1, -1]),
        ([[1, 0, 2], [-1, 1, 1]], [sp.Rational(5, 3), -4], [-2, 1, 1]),
    )
    for normals, gammas, direction in cases:
        Nn, g, dvec = (SYMPY.asarray(a) for a in (normals, gammas, direction))
        d = Nn.shape[1]
        G0, x = symbols("G", (d,), real=True), symbols("x", (d,), real=True)
        s = [1 if float(n @ dvec) > 0 else -1 for n in Nn]
        units = [(g[j], s[j] * Nn[j]) for j in range(len(g))]
        f = G0 @ x + sum(gj * sp.Max(w @ x, 0) for gj, w in units)
        jumps = [(gj * w, dvec) for gj, w in units]
        u, N, c = assemble_canonical(G0, G0 + sum(J for J, _ in jumps), jumps, SYMPY)
        pairs.append((evaluate_canonical(u, N, c, x), f))
    return pairs


@identity(
    id="sec4.1/ffn-end-to-end",
    scope="listed sizes: fixed rational targets, d = 2, 3 (end to end)",
    paper="Sec. 4.1 (A_FFN, beyond the paper)",
    statement=r"\mathrm{learn\_ffn}(\mathrm{VQ}_f) = \mathrm{canonical\_ffn}(A, w_o) \text{ exactly, with }"
    r" (L + 1)(d + 1) + 3L + 4 + \text{extra (ledgered) queries}",
    uses=(
        "sec4.1/canonical-form",
        "sec4.1/piece-gradient",
        "sec4.1/kink-intersection",
        "sec4.1/canonical-from-jumps",
    ),
    assumptions="the rational targets EXACT_FFN_TARGETS, in sympy, path drawn with seed 0",
)
def ffn_end_to_end() -> list[Pair]:
    pairs: list[Pair] = []
    for k in range(len(EXACT_FFN_TARGETS)):
        A, w_o = _exact_target(k)
        rec = learn_ffn(ValueOracle(ReluFFN(A, w_o, SYMPY)), rng=np.random.default_rng(0), arith=SYMPY)
        u, N, c = canonical_ffn(A, w_o, SYMPY)
        if (
            N.shape != rec.N.shape
            or rec.queries != rec.diagnostics["queries_formula"] + rec.diagnostics["reasked_queries"]
        ):
            raise AssertionError(f"target {k}: {rec.N.shape[0]} hyperplanes for {N.shape[0]}, or a bad count")
        pairs += list(zip(rec.u, u)) + list(zip(rec.N.reshape(-1), N.reshape(-1))) + list(zip(rec.c, c))
    return pairs


@identity(
    id="sec4.1/cone-probe",
    scope="listed sizes: d = m = 2",
    paper="Sec. 4.1 (beyond the paper: W* when A w_o = 0)",
    statement=r"\mathrm{sign}(A^\top x_i) = \sigma\ (i = 1, 2) \Rightarrow \mathrm{TF}(X) = "
    r"g^\top \alpha(X, W)^\top X,\ g = A\, \mathrm{diag}(\sigma > 0)\, w_o",
    uses=("sec4.1/parity-split", "thm4.1/softmax-to-sigmoid"),
    assumptions="d = m = 2, W real 2 x 2, w_o real; tokens x_i = A^{-T} (sigma * r_i) with r_i positive, "
    "A = [[1, 2], [-1, 3]] (invertible); every sign pattern sigma",
    simplifier=_relu_as_abs_simplify,
)
def cone_probe() -> list[Pair]:
    pairs: list[Pair] = []
    A = SYMPY.asarray([[1, 2], [-1, 3]])
    A_invT = np.array(sp.Matrix(A.tolist()).T.inv().tolist(), dtype=object)
    W, w_o = symbols("W", (2, 2), real=True), symbols("a", (2,), real=True)
    r = symbols("r", (2, 2), positive=True)
    for sigma in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        sg = np.array(sigma, dtype=object)
        X = np.array([A_invT @ (sg * r[i]) for i in range(2)], dtype=object)
        g = A @ (np.array([1 if t > 0 else 0 for t in sigma], dtype=object) * w_o)
        alpha = attention_weights(X[None], W, SYMPY)[0]
        pairs.append((OneLayerTransformer(W, A, w_o, SYMPY)(X), g @ (alpha @ X)))
    return pairs


@identity(
    id="sec4.1/cone-linear-map",
    scope="listed sizes: d = 2, N = 1..3",
    paper="Sec. 4.1 (beyond the paper)",
    statement=r"s_i(X M^\top, W) = s_i(X, M^\top W M),\ \text{so}\ g^\top \alpha(X M^\top, W)^\top X M^\top"
    r" = f_{M^\top W M,\, M^\top g}(X)",
    uses=("sec4.1/cone-probe",),
    assumptions="W, M real 2 x 2, g real, X real N x 2; N = 1, 2, 3",
)
def cone_linear_map() -> list[Pair]:
    pairs: list[Pair] = []
    W, M, g = symbols("W", (2, 2), real=True), symbols("M", (2, 2), real=True), symbols("g", (2,), real=True)
    for N in (1, 2, 3):
        X = symbols("X", (N, 2), real=True)
        Y = X @ M.T
        pairs.extend(zip(scores(Y[None], W)[0], scores(X[None], M.T @ W @ M)[0]))
        alpha = attention_weights(Y[None], W, SYMPY)[0]
        pairs.append((g @ (alpha @ Y), Attention(M.T @ W @ M, M.T @ g, SYMPY)(X)))
    return pairs


def _transformer_end_to_end(A: list, w_o: list, route: str) -> list[Pair]:
    """learn_transformer in sympy on symbolic W and a rational FFN."""
    W = symbols("W", (2, 2), real=True)
    A, w_o = SYMPY.asarray(A), SYMPY.asarray(w_o)
    oracle = ValueOracle(OneLayerTransformer(W, A, w_o, SYMPY))
    rec = learn_transformer(oracle, rng=np.random.default_rng(1), arith=SYMPY, probes="basis")
    if (
        rec.diagnostics["route"] != route
        or rec.queries != rec.diagnostics["queries_formula"] + rec.diagnostics["reasked_queries"]
    ):
        raise AssertionError(f"route {rec.diagnostics['route']} (expected {route}) or a bad count")
    return list(zip(rec.W.reshape(-1), W.reshape(-1)))


@identity(
    id="sec4.1/end-to-end",
    scope="listed sizes: d = 2 (end to end)",
    paper="Sec. 4.1",
    statement=r"\mathrm{learn\_transformer}(\mathrm{VQ}_{\mathrm{TF}}) = W \text{ exactly: by VQ}\sim"
    r"\ (A w_o \neq 0) \text{ and by cone probes } (A w_o = 0,\ \mathrm{VQ}\sim\ \equiv 0)",
    uses=(
        "sec4.1/relu-antisymmetry",
        "sec4.1/ffn-end-to-end",
        "sec4.1/cone-linear-map",
        "thm4.1/end-to-end-d2",
    ),
    assumptions="d = 2, W: 4 real symbols; FFN A = [[1, -1, 2], [1, 1, 0]], w_o = (1, -2, 1) (u != 0) "
    "and the "
    "even FFN A = [[1, -1], [2, -2]], w_o = (1, 1) (u = 0)",
)
def end_to_end() -> list[Pair]:
    return _transformer_end_to_end(
        [[1, -1, 2], [1, 1, 0]], [1, -2, 1], "antisymmetric"
    ) + _transformer_end_to_end([[1, -1], [2, -2]], [1, 1], "cone")


#: Digits of ``sec4.1/run-high-precision``; the errors must lie below 10^-(RUN_DPS - 10).
RUN_DPS = 50


@run(
    id="sec4.1/run-high-precision",
    paper="Sec. 4.1",
    statement=r"\mathrm{learn\_transformer}\ \text{in mpmath (50 digits)}: \|\hat W - W^\star\| \le 10^{-40};"
    r"\ \text{in float64}: \le \text{its error\_bound}",
    uses=("sec4.1/end-to-end",),
    assumptions="W* = [[1, -1/2], [1/4, 3/4]] with the FFNs of sec4.1/end-to-end (u = A w_o != 0: the VQ~ "
    "route; the even FFN: the cone route), basis probes, path seed 1; mpmath at 50 digits and float64; "
    "queries = the learner's formula plus its reported re-asks",
    scope="listed sizes: d = 2 (fixed targets)",
)
def run_high_precision() -> list[Check]:
    W0 = [[1, sp.Rational(-1, 2)], [sp.Rational(1, 4), sp.Rational(3, 4)]]
    ffns = ((([[1, -1, 2], [1, 1, 0]], [1, -2, 1]), "antisymmetric"), (([[1, -1], [2, -2]], [1, 1]), "cone"))
    checks: list[Check] = []
    for arith in (MP(RUN_DPS), FLOAT64):
        for (A, w_o), route in ffns:
            truth = {"W": arith.asarray(W0)}
            model = OneLayerTransformer(truth["W"], arith.asarray(A), arith.asarray(w_o), arith)
            oracle = ValueOracle(model)
            rec = learn_transformer(oracle, rng=np.random.default_rng(1), arith=arith, probes="basis")
            at = f"{arith.name}, {route} route"
            checks += recovery_checks(at, rec, truth, arith, None if arith is FLOAT64 else RUN_DPS - 10)
            info = rec.diagnostics
            checks += [
                (f"{at}: route taken is {route} (1 if not)", float(info["route"] != route), 0),
                (f"{at}: queries - (formula + re-asked)",
                 abs(rec.queries - info["queries_formula"] - info["reasked_queries"]), 0),
            ]
    return checks
