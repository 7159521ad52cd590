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
``(G_b - G_a)^T x(s*) = 0`` (``sec4.1/kink-intersection``; in floating point where their
predictions ``f(x_a) + G_a^T (x - x_a)`` and ``f(x_b) + G_b^T (x - x_b)`` meet, as a measured G
misses Euler's relation by its error); if only one hyperplane lies
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
``diagnostics["reasked_queries"]`` and itemised in ``diagnostics["ledger"]``.  So are the
polish's ``(L + 1)(d + 1)`` queries: the search's gradients are finite differences with steps
``h ~ 2^-10 |x|`` (error ``eps |f| / h``); once the hyperplanes are known, each region of the path
is measured again from a point deep inside its cone (steps ~ 0.1 |x|), for about 6 more bits; the
polished network is kept only when each of its kinks is confirmed at that grade (three queries a
kink, and 2 (d - 1) points in its wedges, along its hyperplane and tilted to either side, where
a kink the search merged into it shows), and an
interval the search took as kink-free is charged from its end pieces measured again with steps
away from the nearest hyperplane (d queries a piece).
A V in U's or -U's region (same gradient) is drawn again (at most twice, its piece counted): its
segment would cross no hyperplane, and a segment taken as kink-free keeps in the bound a kink below
the search's resolution there (its gradients' errors at steps ~ 2^-10 |x|).  The bound reads the
oracle's declared rounding (``oracle.rounding``): answers evaluated in extended precision and
rounded once (``ReluFFN(..., answers="faithful")``) are allowed ``2^-53 + 2^-54`` of the
magnitudes, naive ones ``2^-43`` (the units' cancellation the model admits): bound / true error
52-650 (faithful, 45 random targets d, m in {4, 8, 16}) against 1e4-6e4 (naive).

Exactness and resolution.  In sympy every comparison is exact and the learner is exact
unless the random path is non-generic (a kink within ``2^-64 |x*|`` of an intersection point
tested) or it crosses a group of kinks whose jumps sum to zero (``sec4.1/zero-sum-flip``) within
``2^-4`` radians: f is one plane on both sides of such a group, and every interval the search
drops as kink-free is probed at points ``2^-4`` radians apart in angle first (a narrower group may
be missed silently; in d = 2 the angle is the wedge's own; float64 asks the same probes; see
:func:`learn_ffn`'s Notes); in
mpmath the error follows 10^-dps.  In float64 every comparison carries a
tolerance derived from the gradients' a-posteriori errors (steps h down to 2^-26 |x|), so
hyperplanes whose kinks on the path are closer than about 2^-20 (relative) may be refused
(measured: unit pairs 3e-7 to 1e-3 radians apart all answered, d = 2..8; at 1e-7, 5 of 140
refused; :func:`learn_ffn`'s Notes) (DegenerateProbeError, after up to two fresh paths, every query
counted; a jump below 2^-20 of the largest gradient, a tiny unit's, left at the floor is booked in
the bound instead) or merged (f then changes by at most what merging them can change, ``(|c_i| +
|c_j|) |n_i - n_j|``); the answers
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

**The units' probe** (:func:`units_probe`, beyond the paper).  The oracle rounds TF at the
scale of the FFN's units, which may be far above f (``ReLU(b^T x) + K ReLU(a^T x) - K ReLU(a^T
x)`` is its small unit, rounded at K times it), and W*'s float bound must know that scale.
Sixteen more one-token queries, ``f(3 x) = 3 f(x)`` at ``+-x_p`` for four random x_p, read it
from the answers' rounding (:func:`units_reading`, :func:`oracle_error`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...arith import FLOAT64, Arith
from ...errors import InvalidInputError, NonIdentifiableError
from ...oracles import AntisymmetricOracle, LinearMapOracle, ValueOracle
from ...measure import Session
from ...verify.registry import LEARNERS, learner
from ..exact import learn_exact
from ._path_search import answer_noise
from .ffn import FFNRecovery, _size, ffn_query_bound, ffn_query_count, learn_ffn


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
        ``units_queries`` (the units' probe's), ``formula`` (the count asserted), the Thm 4.1 run's
        diagnostics and, in floating point, ``error_bound`` on ||W_hat - W*||_F: Thm 4.1's bound on
        the derived oracle times ``reduction_factor`` (:func:`reduction_factor`, from the oracle's
        error ``oracle_error``, :func:`oracle_error`, which reads the units' scale ``units_read``,
        :func:`units_reading`), lifted through M on the cone (:func:`lifted_bound`).
    """

    W: np.ndarray
    ffn: FFNRecovery
    queries: int
    arith: str
    diagnostics: dict[str, Any] = field(default_factory=dict)


#: The units' probe (:func:`units_probe`): UNITS_DIRECTIONS random directions x and their negatives,
#: each asked at x and at UNITS_SCALE x (not a power of two: 2 x scales every rounding exactly), and
#: the unit roundoffs of its magnitudes each probe answer is read as rounded by (:func:`units_reading`:
#: a float evaluation of an FFN rounds by a few, so the reading stays a lower estimate of the units,
#: and naive's 2^10 roundoffs of them in nu stand 2^7 above the rounding read, :func:`oracle_error`).
#: Four directions, not two: the attention's answers rounded at up to 12 times the probe's reading
#: (54 with two; 35 large-unit targets), as a unit's rounding shows only where a small one is active.
UNITS_DIRECTIONS, UNITS_SCALE, UNITS_READ_ULPS = 4, 3, 8
#: The units' probe's queries: f at 2 UNITS_DIRECTIONS points and at UNITS_SCALE times each.
UNITS_QUERIES = 4 * UNITS_DIRECTIONS
#: Candidate cone centres drawn (no query) by the cone route; the widest-margin one is kept.
CONE_DRAWS = 32
#: Draws projected onto each hyperplane, and the offsets 2^-1 .. 2^-CONE_PLANE_STEPS beside it, tried
#: when no draw lands where f has a gradient (:func:`cone_map`).
CONE_PLANE_DRAWS, CONE_PLANE_STEPS = 4, 20


def transformer_query_count(d: int, L: int, route: str = "antisymmetric") -> int:
    """``Q_FFN + 2 (d + d^2) + 16`` (each VQ~ query is two value queries) or ``Q_FFN + d + d^2 + 16``
    (cone route), with ``Q_FFN = (L + 1)(d + 1) + 3 L + 4`` in generic position and the units' probe's
    ``4 UNITS_DIRECTIONS = 16`` one-token queries (:func:`units_probe`)."""
    return ffn_query_count(d, L) + (2 if route == "antisymmetric" else 1) * (d + d * d) + UNITS_QUERIES


@learner(
    name="transformer",
    result="Sec. 4.1 (A_FFN and the cone route beyond the paper)",
    relies_on=(
        "sec4.1/relu-antisymmetry",
        "sec4.1/antisymmetry-all-d",
        "sec4.1/run-high-precision",
        "sec4.1/run-bound-tight",
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
    queries=f"Q_FFN + 2 (d + d^2) + {UNITS_QUERIES} (VQ~ route); Q_FFN + d + d^2 + {UNITS_QUERIES} (cone "
    f"route, v* = 0); {UNITS_QUERIES}: the units' probe",
    count=lambda d, L, route="antisymmetric", **_: transformer_query_count(d, L, route),
)
def learn_transformer(
    oracle: ValueOracle,
    *,
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    route: str = "auto",
    probes: str = "gaussian",
    tolerance: float | None = None,
) -> TransformerRecovery:
    """Learn ``TF(X) = w_o^T ReLU(alpha(X, W)^T X A)`` (Sec. 4.1) from value queries.

    The FFN comes from one-token queries (:func:`learn_ffn`); W* from Thm 4.1 on the
    antisymmetric oracle ``VQ(X) - VQ(-X)`` when ``v* = A w_o != 0`` (the paper's route), or on
    the cone oracle ``VQ(X M^T)`` otherwise (beyond the paper: the paper declares W* not
    identifiable from VQ~ then, and it is not, but it is from VQ).  Last, the units' probe
    (:func:`units_probe`, 16 one-token queries, drawn from rng after the attention phase, in every
    arithmetic so the count is one formula) reads the scale the oracle rounds at, for the bound.

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
    tolerance : float, optional
        Passed to :func:`learn_ffn` (default: its own, the session's promise, 6.6e-4 in float64;
        1e-6 before, which refused good FFNs that learn_ffn answers, issue 23 item 8: W's bound
        carries the FFN's error where W depends on it, the cone route, :func:`oracle_error`).

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
    session = Session(oracle, arith, learner=LEARNERS["transformer"])
    with session.phase("ffn"):
        ffn = learn_ffn(oracle, rng=rng, arith=arith, tolerance=tolerance)
    u_zero = _u_vanishes(ffn, arith)
    if route == "auto":
        route = "cone" if u_zero else "antisymmetric"
    if route == "antisymmetric" and u_zero:
        raise InvalidInputError(
            "v* = A w_o = 0: VQ~ == 0 and W* is not identifiable from antisymmetric queries "
            "(Sec. 4.1); use route='cone'"
        )
    with arith.context(), session.phase("attention"):
        if route == "antisymmetric":
            scale = _unit_scale(ffn.u, arith)
            derived = AntisymmetricOracle(oracle, scale=scale)
            rec = learn_exact(derived, probes=probes, rng=rng, arith=arith)
            W, lift = rec.W, None
        else:
            M, info = cone_map(ffn, arith, rng)
            scale = _unit_scale(M.T @ info["cone_g"], arith)
            derived = LinearMapOracle(oracle, M=M, scale=scale)
            rec = learn_exact(derived, probes="basis", arith=arith)
            W = arith.solve(M.T, arith.solve(M.T, rec.W).T).T  # W' = M^T W M
            lift = arith.to_float(M)
    with session.phase("units"):
        probe = units_probe(session, rng)
    attention = session.spent["attention"]
    if attention != derived.cost * derived.queries:
        raise AssertionError(
            f"attention phase used {attention} value queries for {derived.queries} derived ones"
        )
    session.diagnostics.update(route=route, ffn_queries=session.spent["ffn"], attention_queries=attention,
                               units_queries=session.spent["units"])
    session.diagnostics["thm4.1"] = rec.diagnostics
    if route == "cone":
        session.diagnostics.update(info)
    bound = rec.diagnostics.get("error_bound")  # none in exact arithmetic
    if bound is not None:
        units = units_reading(*probe, arith)
        nu = oracle_error(ffn, arith, cone=lift is not None, units=units)
        # both in the derived oracle's units (scaled by an exact power of two: no underflow)
        v = arith.to_float(rec.v)
        factor = reduction_factor(nu * float(scale), v, derived.cost, lift, arith.resolution)
        bound = lifted_bound(bound * factor, arith.to_float(rec.W), lift, arith.resolution)
        session.diagnostics.update(oracle_error=nu, reduction_factor=factor, units_read=units)
    diagnostics = session.close(reasked="rest", error_bound=bound, L=ffn.L, route=route)
    return TransformerRecovery(W, ffn, session.queries, arith.name, diagnostics)


def _unit_scale(v: np.ndarray, arith: Arith) -> Any:
    """The power of two ``2^-e`` with ``2^e <= max |v_i| < 2^(e + 1)`` (1 for v = 0).

    The attention phase sees v* = u (VQ~) or ``M^T g`` (cone): a tiny FFN makes it tiny, and
    float64 error models square v's entries (underflow below 1e-154).  Scaling the derived
    oracle's answers by this exact power of two gives v* of order one, the same W* and the same
    relative rounding (exact arithmetic: the same answers, scaled exactly).
    """
    top = arith.abs_max(v)
    return arith.scalar(2) ** -int(np.floor(np.log2(float(top)))) if top > 0 else 1


def units_probe(session: Session, rng: np.random.Generator) -> tuple[np.ndarray, Any, Any]:
    """The units' probe: f at ``+-x_p`` (UNITS_DIRECTIONS Gaussian directions, drawn from rng) and at
    UNITS_SCALE times each, one batch of UNITS_QUERIES one-token queries, counted by the session.

    A bias-free FFN is positively homogeneous, ``f(s x) = s f(x)`` exactly
    (``sec4.1/parity-split``), so what separates the two answers is the oracle's rounding, which
    is at the scale of the FFN's units, not of f (:func:`units_reading`).  Every unit is active
    at one of ``x_p``, ``-x_p``.

    Returns
    -------
    X : array (2 UNITS_DIRECTIONS, d)
        The points.
    y, y_s
        The answers at X and at ``UNITS_SCALE X``.
    """
    arith, d = session.arith, session.oracle.d
    x = rng.standard_normal((UNITS_DIRECTIONS, d))
    with arith.context():  # s x at the arithmetic's precision (mpmath: not the global one)
        X = arith.asarray(np.concatenate([x, -x]))
        answers = session.ask(np.concatenate([X, arith.scalar(UNITS_SCALE) * X])[:, None, :])
    arith.check_finite(answers, "the oracle's answers")
    return X, answers[: len(X)], answers[len(X):]


def units_reading(X: np.ndarray, y: Any, y_s: Any, arith: Arith) -> float:
    """U, the units' magnitude per unit of ``|x|_inf`` the probe's residuals read (float64, mpmath):
    ``max_p |f(s x_p) - s f(x_p)| / (2 s rho u |x_p|_inf)``, s = UNITS_SCALE, rho = UNITS_READ_ULPS,
    u the unit roundoff (:func:`units_probe`'s points and answers).

    ``f(s x) = s f(x)`` exactly, so the residual is rounding: each answer's, which a float
    evaluation of ``w_o^T ReLU(A^T x)`` makes at the scale of its magnitudes ``M(x) = sum_k |w_k|
    |a_k^T x|`` (the units, which cancel to f ~ 1/K of them in ``ReLU(b^T x) + K ReLU(a^T x) - K
    ReLU(a^T x)``), and f's own: the point ``s x`` rounded and ``s f(x)`` rounded, within
    ``4 s u S |x|_inf`` in all (S the canonical form's size, f's inf-norm Lipschitz constant),
    which reads as at most S / 4.  Read rigorously: if every probe answer is rounded by at most
    rho unit roundoffs of its magnitudes, ``U <= max_p M(x_p) / |x_p|_inf``, a lower estimate of
    the units (a residual shows rounding, never its ceiling).
    """
    grain = 2 * UNITS_SCALE * UNITS_READ_ULPS * arith.unit_roundoff
    with arith.context():
        s = arith.scalar(UNITS_SCALE)
        return max(float(abs(b - s * a)) / (grain * float(arith.abs_max(x))) for x, a, b in zip(X, y, y_s))


def oracle_error(ffn: FFNRecovery, arith: Arith, cone: bool, units: float = 0.0) -> float:
    """nu: the Transformer oracle's answer ``TF(X)`` is within ``nu |z|_inf`` of the model the
    attention phase assumes, z = alpha(X, W)^T X the attention output (float64, mpmath).

    Rounding: the FFN sums its units before any cancellation shows, so an answer is rounded at
    the scale of the units, not of f (``-0.99 ReLU(x) + ReLU(x)``: units 199 times f).  The
    units are invisible to every query; the model :func:`learn_ffn` accepts answers in allows
    ``tol_ulps`` unit roundoffs times the magnitudes (:func:`answer_noise`), i.e. units up to 2^10
    times the canonical form's size ``S = |u|_1 / 2 + sum_j |c_j| |n_j|_1 / 2`` (>= sup |f| on the
    unit inf-ball) in float64, whence ``answer_noise S`` (it covers the rounding of the cone
    route's tokens ``M x`` too: f is S-Lipschitz in the inf-norm).  Where the FFN's answers showed
    units beyond S (Euler's residual growing as the step shrank, read as one unit roundoff of
    units of scale U, ``diagnostics["units_scale"]``, :meth:`_PathSearch._rounding_scale`), the
    model is ``answer_noise max(S, U)``: tol_ulps roundoffs of the units read, the margin it keeps
    over S (``ReLU(b^T x) + 1e6 ReLU(a^T x) - 1e6 ReLU(a^T x)``: W* off by 1.9e-9 against a bound
    of 2.5e-10 before, U read ~1e5, bound 1.6e-5).  Where no gradient of the search showed them
    (units 1e5 and 3e6 times f, every gradient accepted at its first step: W* 6.0 and 6.4 times its
    bound before, strict xfails), the units' probe does (``units``, :func:`units_reading`: the
    rounding of ``f(3 x) = 3 f(x)`` at 8 points read as 8 unit roundoffs of units of scale U), and
    the model is ``answer_noise max(S, U_path, U_probe)``.

    What this promises.  Each reading is a lower estimate of the units (a residual shows rounding,
    never its ceiling), and the naive model bounds no oracle's rounding by what it showed: an
    oracle rounding the probe's one-token answers exactly and longer ones at 2^10 roundoffs of
    units beyond 2^10 S stays within it and defeats every reading.  The bound holds when the
    attention phase's answers are rounded within ``nu |z|_inf``, i.e. (the assumption) within
    ``tol_ulps / 8 = 2^7`` times the rounding per unit of ``|x|_inf`` the probe read, or within
    the model at S.  Measured on the large-unit class (K 1e3 .. 1e8, d 2 .. 4, both variants):
    the attention's answers rounded at most 0.11 nu (68 answered of 150 draws; 12 times the probe's
    rounding read as one roundoff), W* at least 411 times inside its bound there and 1.3e3 times
    over 99 answered of 300 more draws, the rest refused by the FFN learner (194 DegenerateProbeError,
    1 PrecisionLossError, and 6 AssumptionError, open: tests/test_transformer_route.py's
    ``test_large_units_refused_as_biased``).
    Ordinary targets read below S, their bounds unchanged (U / S <= 0.09 over 114 random float64
    targets, <= 0.06 over 14 in mp:30); units beyond S widen it where the model held already (1/199
    cancelling: bound / error 63 -> 368).  One-token answers pushed by the whole naive model with
    random signs (:class:`~attnproof.oracles.TransformerNoiseAdversary`'s ``random`` and ``ray``
    pushes) read as units 2^7 times their magnitudes, and the bound grows by that, as it cannot tell
    the two apart (bench: bound / error 24.6 -> 1.6e3 and 1.5e3; its ``up`` push, homogeneous, 25.7).

    On the cone route also the FFN's own error bound: f is linear on the cone only up to kinks
    the FFN learner could not resolve, which the cone cannot avoid (a unit of weight 1e-9, its
    kink below the learner's resolution, whose hyperplane crosses the cone: W off by 6e-9 for a
    bound of 3e-11 before, issue 23); with f_hat linear on the cone and ``|f - f_hat| <=
    error_bound |x|_inf``, f is that linear function up to ``error_bound |x|_inf``.  VQ~ needs
    no FFN: ``VQ(X) - VQ(-X) = alpha^T X u`` whatever the units (``sec4.1/relu-antisymmetry``).
    """
    nu = answer_noise(arith) * max(_size(ffn, arith), ffn.diagnostics.get("units_scale", 0.0), units)
    return nu + ffn.diagnostics["error_bound"] if cone else nu


def reduction_factor(nu: float, v: np.ndarray, cost: int, M: np.ndarray | None, resolution: float) -> float:
    """F >= 1 with Thm 4.1's bound times F a bound for the derived oracle's answers.

    Thm 4.1's bound (:func:`~attnproof.theorems.exact.learn_exact`) models a label off by
    ``(d + 4) res (|x_1| + |x_2|) |v|`` and v (its one-token answers) off by ``4 res |v|`` in
    all; the derived oracle (``cost`` answers of TF at tokens ``M x``, M = I for VQ~) adds
    ``cost nu |M z|_inf <= cost nu R (|x_1| + |x_2|)`` to a label (R: the largest row norm of M)
    and ``cost nu C`` to v (``C^2 = sum_j max_i M_ij^2``).  The bound is a sum of non-negative
    terms, linear in those two errors, so scaling both by ``1 + cost nu max(R / (d + 4), C / 4) /
    (res |v|)`` scales it by at most that; R <= C (each row's entries are below the columns'
    maxima), so the second term is the larger: ``F = 1 + cost nu C / (4 res |v|)``.
    ``nu`` and ``v`` (the derived oracle's v*: u for VQ~, M^T g on the cone) in the derived
    oracle's units (both times its ``scale``).
    """
    C = np.sqrt(v.shape[0]) if M is None else float(np.linalg.norm(np.abs(M).max(axis=0)))
    return 1.0 + cost * nu * C / (4 * resolution * float(np.linalg.norm(v)))


def lifted_bound(bound: float, W_derived: np.ndarray, M: np.ndarray | None, resolution: float) -> float:
    """The bound on W* from the derived oracle's ``W' = M^T W* M`` (cone route; VQ~: W' = W*).

    ``W = M^{-T} W' M^{-1}``: ``|dW|_F <= |M^{-1}|_2^2 |dW'|_F``, plus the two solves' rounding,
    ``(d + 4) res cond(M)`` relative each, ``2 (d + 4) res cond(M) |M^{-1}|_2^2 |W'|_F``.
    """
    if M is None:
        return bound
    sv = np.linalg.svd(M, compute_uv=False)
    inv2 = float(1 / sv[-1]) ** 2
    d = M.shape[0]
    rounding = 2 * (d + 4) * resolution * float(sv[0] / sv[-1]) * float(np.linalg.norm(W_derived))
    return inv2 * (bound + rounding)


def _u_vanishes(ffn: FFNRecovery, arith: Arith) -> bool:
    """u = A w_o is zero (exactly, or within the FFN's error bound in floating point)."""
    return arith.within(sum(abs(t) for t in ffn.u), 2 * ffn.diagnostics.get("error_bound", 0.0))


def cone_map(ffn: FFNRecovery, arith: Arith, rng: np.random.Generator) -> tuple[np.ndarray, dict[str, Any]]:
    """``M = x0 1^T + eps I`` whose columns and Thm 4.1 basis-probe tokens lie in one open cone.

    x0 is the draw (among CONE_DRAWS, no query) with the widest margin
    ``min_j |n_j^T x0| / |n_j|_1`` whose gradient g is non-zero; eps is the largest power of
    two below half that margin, so a token ``M z = (1^T z) x0 + eps z`` with
    ``z in {e_j, e_l + e_j, e_l + e_p + e_j}`` keeps every sign n_j^T x (``sec4.1/cone-probe``).

    Raises
    ------
    NonIdentifiableError
        If no draw, nor any point beside a hyperplane, has a non-zero gradient (f == 0).
    """
    d = ffn.u.shape[0]
    best = None

    def consider(x0: np.ndarray, best: tuple | None) -> tuple | None:
        z = ffn.N @ x0
        margins = [abs(float(t)) / float(np.abs(arith.to_float(n)).sum()) for t, n in zip(z, ffn.N)]
        margin = min(margins, default=1.0)
        signs = arith.asarray([1 if float(t) > 0 else -1 for t in z]) if len(z) else arith.zeros((0,))
        g = (ffn.u + (ffn.c * signs) @ ffn.N) / 2
        size = float(np.abs(arith.to_float(g)).max())
        if size > 2 * ffn.diagnostics.get("error_bound", 0.0) and (best is None or margin * size > best[0]):
            return (margin * size, x0, margin, g)
        return best

    draws = [arith.asarray(rng.standard_normal(d)) for _ in range(CONE_DRAWS)]
    for x0 in draws:
        best = consider(x0, best)
    if best is None:
        # f vanishes on every drawn cone (a zero-sum group: f != 0 only on thin wedges between its
        # hyperplanes, 4 % of the directions, thorough profile): a hyperplane with c_j != 0 has a
        # non-zero gradient on one side, so try points beside each, 2^-k |x|_inf off it (no query)
        for x0 in draws[:CONE_PLANE_DRAWS]:
            for n in ffn.N:
                p = x0 - (n @ x0) / (n @ n) * n
                step = arith.abs_max_scalar(p) / arith.abs_max_scalar(n)
                for k in range(1, CONE_PLANE_STEPS + 1):
                    for side in (1, -1):
                        best = consider(p + side * step * arith.scalar(2) ** -k * n, best)
    if best is None:
        raise NonIdentifiableError("every region of f has gradient 0: f == 0 and W* is hidden")
    _, x0, margin, g = best
    eps = arith.scalar(2) ** int(np.floor(np.log2(margin / 2)))
    M = x0[:, None] * arith.asarray(np.ones((1, d))) + eps * arith.eye(d)
    sv = np.linalg.svd(arith.to_float(M), compute_uv=False)
    return M, {"cone_margin": margin, "cone_eps": float(eps), "cond_M": float(sv[0] / sv[-1]), "cone_g": g}


# the identities register on import, after the learners they check
from . import identities  # noqa: E402, F401

__all__ = [
    "FFNRecovery", "TransformerRecovery", "learn_ffn", "learn_transformer", "ffn_query_count",
    "ffn_query_bound", "transformer_query_count", "cone_map", "CONE_DRAWS", "oracle_error",
    "reduction_factor", "lifted_bound", "units_probe", "units_reading", "UNITS_QUERIES",
]
