"""The best bound any method could report from A_FFN's transcript: a proven floor (issue 22).

The argument of :mod:`attnproof.theorems.exact.indistinguishable`, for the FFN learner
(:func:`~attnproof.theorems.transformer.ffn.learn_ffn`, Sec. 4.1): if every answer the real oracle
gave for ``f*(x) = w^T ReLU(A^T x)`` is also an answer the naive declaration allows for two other
bias-free FFNs ``F_+-``, the three worlds give one transcript, one f_hat and one bound B, and a bound
rigorous for the declaration (``|f_hat(x) - f(x)| <= B |x|_inf`` for every x) satisfies, at any
point x0 with ``|x0|_inf = 1``,

    B >= |F_+(x0) - F_-(x0)| / 2 =: floor.

The declared set is the learner's naive reading (:func:`._path_search.answer_noise`, ``2^-43`` in
float64; :meth:`~attnproof.oracles.FFNNoiseAdversary.tolerance_at`): every answer y at x within
``noise (|F(x)| + |grad F(x)|^T |x|)`` of F(x), grad F the gradient of x's region; for a unit within
float64's rounding of its kink at x (``(d + 4) u |a_k|^T |x|``, the adversary's band) or whose sign
the balls leave open, the least gradient any on/off pattern of those units gives: the narrowest
reading, a subset of the exact one's set and of the adversary's.  The real float64 oracle does not
always answer inside it (:func:`_centre`): the worlds are then built around a centre with those
units moved off their kinks (``shifted``), which the argument allows (it needs the answers in the
two worlds' sets only).

The worlds: ``A_+- = A' +- t E`` (A' the centre, A itself unless shifted) with the same w (a change
of w_k is a rescaling of a_k for the function), so ``F_+(x0) - F_-(x0) = 2 t sum_{k on at x0} w_k
e_k^T x0`` exactly while x0's pattern holds. E solves a linear program (:func:`_direction`):
maximise that difference at a point x0 of the cube's surface subject to every recorded answer's
first-order move ``sum_{k on} w_k e_k^T x`` staying within :data:`~attnproof.indistinguishable.SAFETY`
of its proven margin at A' (a unit within :data:`NEAR` of its kink at x counted both on and off: F's
move there lies between the two linearisations), solved at every vertex of the cube (d <= 4; above,
at a few) and improved by taking x0 where the last E moves F most, over the whole surface (a
mixed-integer program over the units' on/off patterns, :func:`_farthest`: the first-order
difference is linear in x0 on each region, so its largest value may sit where a kink meets a face,
not at a vertex); t is then shrunk until every answer is proven allowed in both worlds.  Only E and
x0 come from the solvers: the worlds and the floor at x0 are proven.

Worlds one unit wider (``wider=True``): both add a unit ``+- t c ReLU(n^T x)`` (n kept off its kink
at every query), a column of the same program, n the direction of a fixed draw with the largest
reduced cost at the best x0 (:func:`_extra_units`).  A_FFN is told no width, so a rigorous bound
from its transcript must hold for these worlds too; the default keeps the target's width.

The proof, :func:`ffn_margins`, evaluates each world at each recorded query (not a linearisation: a
query on a kink may change sides): the pre-activations ``a_k^T x`` as
:func:`~attnproof.indistinguishable.dot2` balls, ``F(x) = sum_k w_k ReLU(a_k^T x)`` in Arb (a unit's
ball when its sign is proven, ``(z + |z|) / 2`` of it when not), and ``|grad F(x)|^T |x|`` bounded
below in float64 with the rounding of its sums charged (:func:`_gradient_low`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np
from flint import arb, ctx

from ...arith import FLOAT64
from ...errors import InvalidInputError, PrecisionLossError, ShapeError
from ...indistinguishable import MAX_D, NORM_DOWN, PREC, SAFETY, SHRINK, U, dot2, in_range, lower, transcript
from ...models import NAIVE, ReluFFN
from ...oracles import QueryRecord, ValueOracle
from ._path_search import answer_noise
from .ffn import learn_ffn
from .runner import transformer_target

#: The declared relative noise of a naive float64 answer (the learner's, ``2^-43``).
NOISE = answer_noise(FLOAT64, NAIVE)
#: A unit whose pre-activation at a query is within this share of ``|a_k|^T |x|`` of 0 is counted
#: both on and off in the linear program (its kink may move across the query; the moves are
#: ~NOISE relative, far below this).
NEAR = 2.0**-20
#: Units near their kink at one query beyond which the program refuses (2^NEAR_UNITS rows).
NEAR_UNITS = 6
#: Widths up to which every vertex of the cube is a candidate x0; above, :data:`SAMPLED` of them.
ALL_VERTICES = 16
SAMPLED = 2**14
#: Widths up to which the linear program is solved at every vertex (:func:`_direction`).
EVERY_VERTEX = 4
#: Start vertices besides the sign vector of u = A w, above :data:`EVERY_VERTEX`.
STARTS = 3
#: Solutions (the best) improved by moving x0 to the point of the cube they move most.
REFINED = 4
#: Rounds of that improvement, at most.
ROUNDS = 4
#: Branch-and-bound nodes of :func:`_farthest`'s program, at most.
NODES = 2000
#: Directions drawn for the extra unit of worlds one unit wider (:func:`_extra_units`), and the
#: best of them (by reduced cost) the program is solved with.
CANDIDATES = 4096
EXTRA_TRIES = 8
#: Entries of E in units of NOISE times A's largest entry, at most (keeps the program bounded).
BOX = 2.0**20
#: Candidate points (those the worlds' float64 difference is largest at) whose floor is proven.
PROVEN = 4
#: Radii and lower bounds computed in float64 from a few nonnegative terms: times this.
UP = 1 + 2.0**-40


def _check(A: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A (d, m) and w (m,) as float64, within the widths the rounding bounds cover."""
    A, w = np.asarray(A, dtype=np.float64), np.asarray(w, dtype=np.float64)
    if A.ndim != 2 or w.shape != (A.shape[1],):
        raise ShapeError(f"A must have shape (d, m) and w shape (m,); got {A.shape}, {w.shape}")
    if A.shape[0] > MAX_D or A.shape[1] > MAX_D:
        raise InvalidInputError(f"the proof's rounding bounds hold for d, m <= {MAX_D}; got {A.shape}")
    return A, w


def _queries(log: Sequence[QueryRecord], d: int) -> tuple[np.ndarray, np.ndarray]:
    """The recorded one-token queries (B, d) and their answers (B,)."""
    by_length = transcript(log, d)
    if set(by_length) - {1}:
        longer = sorted(set(by_length) - {1})
        raise InvalidInputError(f"an FFN reads one token; the record holds N = {longer}")
    X, y = by_length.get(1, (np.zeros((0, 1, d)), np.zeros(0)))
    return X[:, 0], y


def _pre_activations(X: np.ndarray, A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``a_k^T x_b`` as :func:`~attnproof.indistinguishable.dot2` balls ``s + c +- r``, each (B, m)."""
    B, m = X.shape[0], A.shape[1]
    s, c, r = dot2(np.repeat(X, m, axis=0), np.tile(A.T, (B, 1)))
    return s.reshape(B, m), c.reshape(B, m), r.reshape(B, m) * UP


def _gradient_low(X: np.ndarray, A: np.ndarray, w: np.ndarray, on: np.ndarray,
                  unsure: np.ndarray) -> np.ndarray:
    """A float64 lower bound of ``|grad F(x)|^T |x|`` at each query, over every on/off pattern of the
    ``unsure`` units (B, m): ``grad_i = S_i + sum_{unsure k} s_k w_k a_ik``, ``S_i`` the sure on
    units' sum, so ``|grad_i| >= |S_i| - sum_{unsure} |w_k a_ik|``.

    ``S`` is computed in float64 (products and m sums, any order: within ``gamma_{m+1}`` of
    ``sum |w_k a_ik|``, ``gamma_{m+2}`` charged); the subtrahend is inflated by :data:`UP` and
    ``2 u |S_i|``, so that its float64 difference with |S_i|, times ``1 - 2^-50``, is below the
    exact one, and the final sum over i (d nonnegative terms) is taken down by
    :data:`~attnproof.indistinguishable.NORM_DOWN`."""
    m = A.shape[1]
    WA = np.abs(w)[:, None] * np.abs(A.T)  # (m, d), each within u of |w_k a_ik|
    sure_on = (on & ~unsure).astype(np.float64)
    S = sure_on @ (w[:, None] * A.T)
    gamma = (m + 2) * U / (1 - (m + 2) * U)
    T = ((gamma * (sure_on @ WA) + unsure.astype(np.float64) @ WA) * (1 + 2 * U) ** 2 * UP
         + 2 * U * np.abs(S))
    low = np.maximum(np.abs(S) - T, 0.0) * (1 - 2.0**-50)
    return np.einsum("bi,bi->b", low, np.abs(X)) * NORM_DOWN


def _values(X: np.ndarray, A: np.ndarray, w: np.ndarray,
            band: float) -> tuple[list[arb], np.ndarray, np.ndarray]:
    """``F(x) = sum_k w_k ReLU(a_k^T x)`` at each row of X as Arb balls (to be read at
    :data:`~attnproof.indistinguishable.PREC` bits: call inside ``ctx.workprec(PREC)``), with the
    pre-activations' float64 values z (B, m) and the units whose sign counts as unsure (B, m): the
    ball leaves it open, or z is within ``band |x|^T |a_k|`` of 0."""
    s, c, r = _pre_activations(X, A)
    z = s + c
    unsure = (np.abs(z) <= 2 * r) | (np.abs(z) <= band * (np.abs(X) @ np.abs(A)))
    values = []
    for b in range(X.shape[0]):
        F = arb(0)
        for k in range(len(w)):
            zk = arb(s[b, k]) + arb(c[b, k]) + arb(0, r[b, k])
            if zk > 0:
                F += arb(w[k]) * zk
            elif not zk < 0:  # the sign open: (z + |z|) / 2 of the ball holds ReLU of each point
                F += arb(w[k]) * ((zk + abs(zk)) / 2)
        values.append(F)
    return values, z, unsure


def _margins(X: np.ndarray, y: np.ndarray, A: np.ndarray, w: np.ndarray, band: float) -> np.ndarray:
    """Lower bounds of ``noise (|F| + |grad F|^T |x|) - |y - F|``, the gradient's least over every
    pattern of the units within ``band`` of their kinks (:func:`_values`, :func:`_gradient_low`)."""
    with ctx.workprec(PREC):
        values, z, unsure = _values(X, A, w, band)
        grad = _gradient_low(X, A, w, z > 0, unsure)
        return np.array([lower(arb(NOISE) * (abs(F) + arb(g)) - abs(arb(yb) - F))
                         for F, g, yb in zip(values, grad, y, strict=True)])


def _band(d: int) -> float:
    """The declaration's float64 band around a kink, ``(d + 4) u`` of ``|a_k|^T |x|``."""
    return (d + 4) * FLOAT64.resolution


def ffn_margins(log: Sequence[QueryRecord], A: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Rigorous lower bounds on how far inside the naive declared set at ``F(x) = w^T ReLU(A^T x)``
    each recorded answer lies: ``noise (|F(x)| + |grad F(x)|^T |x|) - |y - F(x)|``, noise
    :data:`NOISE`, the gradient the least any pattern of the units within the declaration's
    float64 band of their kinks gives (:meth:`~attnproof.oracles.FFNNoiseAdversary.tolerance_at`'s
    ``(d + 4) u |x|^T |a_k|``) or whose sign the balls leave open.

    Parameters
    ----------
    log : sequence of QueryRecord
        A :class:`~attnproof.oracles.ValueOracle`'s ``log`` (``record=True``) of one-token queries.
    A : array (d, m)
    w : array (m,)

    Returns
    -------
    array (B,)
        In the record's order; a margin >= 0 proves the answer allowed (NaN or < 0: not proven).

    Raises
    ------
    ShapeError, InvalidInputError
        Mismatched shapes, a query of more than one token, or entries outside the range the error-free
        products assume (no overflow or underflow).
    """
    A, w = _check(A, w)
    X, y = _queries(log, A.shape[0])
    if not all(in_range(a) for a in (A, w, X)):
        raise InvalidInputError("entries outside the range the balls assume (no overflow or underflow)")
    return _margins(X, y, A, w, _band(A.shape[0]))


@dataclass(frozen=True)
class FFNFloor:
    """Two FFNs indistinguishable from ``w^T ReLU(A^T x)`` under the recorded transcript.

    Attributes
    ----------
    worlds : tuple of (A_+, A_-)
        Their first layers (float64, as checked), (d, m), or (d, m + 1) for worlds one unit wider.
    readouts : tuple of (w_+, w_-)
        Their second layers: the target's w, or it and ``+- t c`` for the extra unit.
    floor : float
        A proven lower bound on ``|F_+(x0) - F_-(x0)| / 2`` at ``point``.
    point : array (d,)
        x0, a point with ``|x0|_inf = 1`` (a vertex of the cube or :func:`_farthest`'s).
    shrinks : int
        Shrinkings by :data:`~attnproof.indistinguishable.SHRINK` the check asked for.
    answers : int
        Answers proven allowed in both worlds.
    shifted : int
        Units moved off their kinks at answers not proven allowed at the target (:func:`_centre`):
        0 when the worlds are centred at the target.
    """

    worlds: tuple[np.ndarray, np.ndarray]
    readouts: tuple[np.ndarray, np.ndarray]
    floor: float
    point: np.ndarray
    shrinks: int
    answers: int
    shifted: int


def _rows(X: np.ndarray, A: np.ndarray, w: np.ndarray, margins: np.ndarray,
          flexible: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The program's constraints ``|row^T E| <= cap`` (E column-major, unit by unit), and the query
    each bounds the move at (-1 for a unit's own bound, below): each query's
    first-order move ``sum_{k on} w_k e_k^T x`` within ``SAFETY margin``.  A unit within
    :data:`NEAR` of its kink may cross it: where the answer's margin holds over every pattern of
    those units (``flexible``, the margins at band NEAR), the move is bounded under each pattern
    (F's true move lies between them); elsewhere the unit may not come within twice the
    declaration's band of its kink (where it would count as unsure), ``|e_k^T x| <= SAFETY (|a_k^T x|
    - 2 band |a_k|^T |x|)``, and the move is bounded under the query's own pattern."""
    z, size = X @ A, np.abs(X) @ np.abs(A)
    near = np.abs(z) <= NEAR * size
    band = 2 * _band(A.shape[0])
    d, m = A.shape
    rows, caps, query = [], [], []
    for b, x in enumerate(X):
        units = np.flatnonzero(near[b])
        if len(units) > NEAR_UNITS:
            raise PrecisionLossError(f"a query within {NEAR:.1e} of {len(units)} kinks: too many patterns")
        if flexible[b] > 0:
            patterns, cap = list(product((False, True), repeat=len(units))), flexible[b]
        else:
            patterns, cap = [tuple(z[b, units] > 0)], margins[b]
            for k in units:
                pin = np.zeros((d, m))
                pin[:, k] = x
                rows.append(pin.ravel(order="F"))
                caps.append(SAFETY * max(abs(z[b, k]) - band * size[b, k], 0.0))
                query.append(-1)
        for pattern in patterns:
            on = z[b] > 0
            on[units] = pattern
            rows.append(np.outer(x, on * w).ravel(order="F"))
            caps.append(SAFETY * cap)
            query.append(b)
    return np.array(rows), np.array(caps), np.array(query)


def _vertices(d: int) -> np.ndarray:
    """Every vertex of the cube (d <= :data:`ALL_VERTICES`), else :data:`SAMPLED` of them (a fixed
    draw): the candidate points x0 the floor is proven at besides :func:`_farthest`'s."""
    if d <= ALL_VERTICES:
        return 1.0 - 2.0 * ((np.arange(2**d)[:, None] >> np.arange(d)[None, :]) & 1)
    return np.where(np.random.default_rng(0).random((SAMPLED, d)) < 0.5, -1.0, 1.0)


def _moves(V: np.ndarray, A: np.ndarray, w: np.ndarray, E: np.ndarray) -> np.ndarray:
    """``sum_{k on} w_k e_k^T x`` at each row x of V (float64, first order)."""
    return ((V @ A > 0) * (V @ E)) @ w


def _farthest(A: np.ndarray, w: np.ndarray, E: np.ndarray) -> np.ndarray | None:
    """The point x of the cube's surface (``|x|_inf = 1``) where E moves F most to first order,
    ``max sum_k w_k [a_k^T x > 0] e_k^T x``, each unit at least :data:`NEAR` ``|a_k|_1`` from its
    kink (so the worlds' kinks stay away from x): a mixed-integer program (z_k = unit k on,
    ``y_k = z_k x`` by its four linear bounds on the cube, 2 NEAR asked for the solver's
    tolerances), solved by HiGHS within :data:`NODES` nodes; None if it finds no such point.  The
    move is positively homogeneous in x, so the optimum lies on the surface; x is rescaled to it
    exactly (its largest entry +-1)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    d, m = A.shape
    An = A / np.abs(A).sum(axis=0)  # |a_k^T x| <= 1 on the cube: 2 is a big-M
    x_, y_, z_ = 0, d, d + m * d  # offsets of x, y (unit by unit), z
    n = z_ + m
    cons = []  # rows of (matrix, low, high)
    for k in range(m):
        row = np.zeros(n)
        row[x_:y_], row[z_ + k] = An[:, k], -2.0
        cons += [(row, 2 * NEAR - 2.0, np.inf), (row, -np.inf, -2 * NEAR)]  # on: >= 2 NEAR; off: <= -2 NEAR
        for i in range(d):
            for sx, sz, low, high in ((0, -1, -np.inf, 0), (0, 1, 0, np.inf),
                                      (-1, 1, -np.inf, 1), (-1, -1, -1, np.inf)):
                row = np.zeros(n)  # y <= z, y >= -z, y - x <= 1 - z, y - x >= z - 1
                row[y_ + k * d + i], row[x_ + i], row[z_ + k] = 1.0, sx, sz
                cons.append((row, low, high))
    c = np.zeros(n)
    c[y_:z_] = -(E * w).T.ravel()
    integrality = np.zeros(n)
    integrality[z_:] = 1
    res = milp(c, constraints=LinearConstraint(np.array([r for r, _, _ in cons]),
                                               [lo for _, lo, _ in cons], [hi for _, _, hi in cons]),
               integrality=integrality, bounds=Bounds(np.r_[-np.ones(z_), np.zeros(m)], np.ones(n)),
               options={"node_limit": NODES})
    if res.x is None or not np.any(res.x[x_:y_]):
        return None
    x = res.x[x_:y_]
    i = int(np.argmax(np.abs(x)))
    x = np.clip(x / abs(x[i]), -1.0, 1.0)
    x[i] = np.sign(x[i])
    return x if np.all(np.abs(x @ An) >= NEAR) else None


def _direction(X: np.ndarray, y: np.ndarray, A: np.ndarray, w: np.ndarray, margins: np.ndarray,
               at: np.ndarray | None = None,
               wider: bool = False) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, float] | None]:
    """E (d, m) maximising the first-order ``|F_+(x0) - F_-(x0)| / 2`` over the cube's surface
    subject to every answer's move within SAFETY of its margin (:func:`_rows`), the points x0 it
    was solved at (rows), and with ``wider`` the extra unit ``(n, c)`` (:func:`_extra_units`), else
    None.  A linear program per x0: at every vertex for ``d <=`` :data:`EVERY_VERTEX`, else at the
    sign vector of A w and :data:`STARTS` more vertices; from the :data:`REFINED` best,
    :data:`ROUNDS` rounds of "x0 the point of the cube's surface the last E moves most"
    (:func:`_farthest`) or the vertex it moves most, the better solution kept, while the largest
    first-order move over the candidates the floor is proven at grows.
    Given ``at`` (rows), the program is solved at those points only, unrefined.  Needs scipy (its
    HiGHS; installed with the ``lowrank`` extra, as cvxpy's)."""
    from scipy.optimize import linprog

    d, m = A.shape
    scale = NOISE * float(np.abs(A).max())
    rows, caps, query = _rows(X, A, w, margins, _margins(X, y, A, w, NEAR))
    h = np.concatenate([caps, caps]) / scale  # in units of scale: rows of size ~|x| |w|, caps ~ 1
    V = _vertices(d)

    def program(x0: np.ndarray, n: np.ndarray | None = None) -> tuple[float, np.ndarray, np.ndarray]:
        """The program's value at x0, its solution (with the extra unit ReLU(n^T x)'s weight last
        when n is given) and the signed duals of |row^T E| <= cap."""
        objective, M = -np.outer(x0, (x0 @ A > 0) * w).ravel(order="F"), rows
        if n is not None:
            objective = np.append(objective, -max(float(x0 @ n), 0.0))
            M = np.column_stack([rows, np.where(query >= 0, np.maximum(X[query] @ n, 0.0), 0.0)])
        res = linprog(objective, A_ub=np.vstack([M, -M]), b_ub=h, bounds=(-BOX, BOX), method="highs")
        if res.status != 0:
            return 0.0, np.zeros(len(objective)), np.zeros(len(rows))
        duals = res.ineqlin.marginals
        return -float(res.fun), res.x, duals[:len(rows)] - duals[len(rows):]

    def unit_by_unit(x: np.ndarray) -> np.ndarray:
        return x[:d * m].reshape((d, m), order="F")

    if at is not None:
        starts = list(at)
    elif d <= EVERY_VERTEX:
        starts = list(V)
    else:
        spread = np.linspace(0, len(V) - 1, STARTS + 2).astype(int)[1:-1]
        starts = [np.where(A @ w < 0, -1.0, 1.0), *V[spread]]

    def reach(E: np.ndarray, value: float) -> float:
        """The largest first-order move of E over the candidates the floor is proven at."""
        return max(value, float(np.abs(_moves(V, A, w, E)).max()))

    solved = sorted(((value, unit_by_unit(x), x0)
                     for x0, (value, x, _) in zip(starts, map(program, starts), strict=True)),
                    key=lambda s: -s[0])
    points = [x0 for _, _, x0 in solved[:REFINED]]
    best, best_E, best_x0 = max(((reach(E, value), E, x0) for value, E, x0 in solved), key=lambda s: s[0])
    for value, E, _ in solved[:REFINED] if at is None else ():
        for _ in range(ROUNDS):
            x1 = _farthest(A, w, E)
            tried = []
            for x0 in [V[int(np.argmax(np.abs(_moves(V, A, w, E))))], *([] if x1 is None else [x1])]:
                next_value, next_x, _ = program(x0)
                tried.append((reach(unit_by_unit(next_x), next_value), unit_by_unit(next_x), x0))
            next_value, next_E, x0 = max(tried, key=lambda s: s[0])
            if next_value <= reach(E, value):
                break
            points.append(x0)
            value, E = next_value, next_E
            if value > best:
                best, best_E, best_x0 = value, E, x0
    if not wider:
        return best_E * scale, np.array(points), None
    units = _extra_units(X, query, program(best_x0)[2], best_x0)
    tried = [(*program(best_x0, n)[:2], n) for n in units]
    value, x, n = max(tried, key=lambda s: s[0], default=(0.0, None, None))
    if value <= best:
        return best_E * scale, np.array(points), None
    return unit_by_unit(x) * scale, np.array(points), (n, float(x[-1]) * scale)


def _extra_units(X: np.ndarray, query: np.ndarray, duals: np.ndarray, x0: np.ndarray) -> list[np.ndarray]:
    """First layers n (unit length) of a unit ``+- c ReLU(n^T x)`` to add to the two worlds, the
    :data:`EXTRA_TRIES` best by their reduced cost in the program at x0, ``|ReLU(n^T x0) + sum_rows
    duals ReLU(n^T x_row)|`` (scipy's signed duals), over :data:`CANDIDATES` directions (a fixed
    draw, and x0's), each at least :data:`NEAR` of ``|n|^T |x|`` from its kink at every query and
    at x0."""
    d = X.shape[1]
    N = np.random.default_rng(0).standard_normal((d, CANDIDATES))
    N = np.column_stack([x0, N]) / np.linalg.norm(np.column_stack([x0, N]), axis=0)
    P = np.vstack([X, x0])
    clear = np.all(np.abs(P @ N) > NEAR * (np.abs(P) @ np.abs(N)), axis=0)
    N = N[:, clear]
    on = np.maximum(X @ N, 0.0)
    cost = np.maximum(x0 @ N, 0.0) + duals[query >= 0] @ on[query[query >= 0]]
    return list(N[:, np.argsort(-np.abs(cost))[:EXTRA_TRIES]].T)


def _centre(X: np.ndarray, y: np.ndarray, A: np.ndarray, w: np.ndarray,
            margins: np.ndarray) -> tuple[np.ndarray, int]:
    """The worlds' centre: A, with each unit within the declaration's band of its kink at a query
    whose answer is not proven allowed moved off it, to the side float64 puts it on (the real
    oracle's answer rounds it there), ``3 band |a_k|^T |x|`` away along x; and the number of such
    moves.

    The float64 answer at a point within rounding of a hyperplane may fit only the reading of the
    side float64 rounds it to: a unit off by its exact pre-activation and on by its rounded one,
    the others off, answers ``w_k fl(a_k^T x) != 0`` where ``f = 0`` and x's region has gradient 0
    (``d = 16, m = 4``, seed 4, query 362 of 428, a kink point: ``a_k^T x = -7.7e-17``, the answer
    ``-2.2e-16``; outside the exact reading's set, this narrowest one's, and
    :meth:`~attnproof.oracles.FFNNoiseAdversary.tolerance_at`'s as it reads the record's batch).
    The floor needs the answers inside the declared sets of the two worlds only, not at the
    target: both worlds are built around this centre, whose move (~u |x| per unit) is far inside
    the other answers' slack."""
    z, size = X @ A, np.abs(X) @ np.abs(A)
    band = _band(A.shape[0])
    P = np.zeros_like(A)
    moved = 0
    for b in np.flatnonzero(~(margins >= 0)):
        for k in np.flatnonzero(np.abs(z[b]) <= 2 * band * size[b]):
            side = 1.0 if z[b, k] >= 0 else -1.0
            P[:, k] += (3 * side * band * size[b, k] - z[b, k]) * X[b] / float(X[b] @ X[b])
            moved += 1
    return A + P, moved


def _half_distance(worlds: tuple[np.ndarray, np.ndarray], readouts: tuple[np.ndarray, np.ndarray],
                   x: np.ndarray) -> float:
    """A proven lower bound on ``|F_+(x) - F_-(x)| / 2`` at one point x (d,)."""
    with ctx.workprec(PREC):
        (Fp,), _, _ = _values(x[None], worlds[0], readouts[0], 0.0)
        (Fm,), _, _ = _values(x[None], worlds[1], readouts[1], 0.0)
        return lower(abs(Fp - Fm) / 2)


def indistinguishable(log: Sequence[QueryRecord], A: np.ndarray, w: np.ndarray,
                      max_shrinks: int = 40, at: np.ndarray | None = None, wider: bool = False) -> FFNFloor:
    """FFNs ``w^T ReLU((A' +- t E)^T x)`` that every recorded answer fits under the naive declaration,
    proven by :func:`ffn_margins`, and the floor they give (A' the centre, :func:`_centre`).

    Parameters
    ----------
    log : sequence of QueryRecord
        The real oracle's record of a :func:`~attnproof.theorems.transformer.ffn.learn_ffn` run
        (float64, naive answers).
    A, w : arrays (d, m), (m,)
        The real target.
    max_shrinks : int
    at : array (P, d), optional
        Points x0 (``|x0|_inf = 1``) to solve the program at, and only there (:func:`_direction`); the
        floor is still proven at the :data:`PROVEN` best of them and the cube's vertices.
    wider : bool
        Worlds one unit wider (width m + 1): each adds ``+- t c ReLU(n^T x)``, n chosen by
        :func:`_extra_units` (none added where it does not raise the program's value).  Legal where
        the declared class is bias-free FFNs of any width, as A_FFN's (it is told no m).

    Raises
    ------
    PrecisionLossError
        If an answer is not proven allowed at the centre, or no t is proven after ``max_shrinks``
        shrinkings.
    InvalidInputError
        ``at`` not rows of length d with ``|x0|_inf = 1``.
    """
    A, w = _check(A, w)
    X, y = _queries(log, A.shape[0])
    centre, shifted = _centre(X, y, A, w, ffn_margins(log, A, w))
    margins = ffn_margins(log, centre, w)
    if not np.all(margins >= 0):
        raise PrecisionLossError("an answer of the real oracle is not proven within the naive declaration "
                                 "at the target, nor with the units near their kinks moved off them")
    if at is not None and (np.ndim(at) != 2 or np.shape(at)[1] != A.shape[0]
                           or not np.array_equal(np.abs(at).max(axis=1), np.ones(len(at)))):
        raise InvalidInputError(f"at must be rows x0 of length {A.shape[0]} with |x0|_inf = 1")
    E, points, extra = _direction(X, y, centre, w, margins, at, wider)
    n, c = extra if extra is not None else (np.zeros((A.shape[0], 0)), 0.0)
    t, shrinks = 1.0, 0
    while True:
        worlds = (np.column_stack([centre + t * E, n]), np.column_stack([centre - t * E, n]))
        readouts = (np.append(w, t * c if extra else []), np.append(w, -t * c if extra else []))
        if all(np.all(ffn_margins(log, Aw, ww) >= 0) for Aw, ww in zip(worlds, readouts, strict=True)):
            break
        if shrinks >= max_shrinks:
            raise PrecisionLossError(f"no indistinguishable FFNs proven after {shrinks} shrinkings")
        t *= SHRINK
        shrinks += 1
    V = np.vstack([_vertices(A.shape[0]), points])
    moves = np.abs(_moves(V, centre, w, t * E) + (t * c * np.maximum(V @ n, 0.0) if extra else 0.0))
    floors = [(_half_distance(worlds, readouts, V[k]), k) for k in np.argsort(moves)[::-1][:PROVEN]]
    floor, k = max(floors)
    return FFNFloor(worlds, readouts, floor, V[k], shrinks, len(margins), shifted)


def _function_error(f_hat: Any, A: np.ndarray, w: np.ndarray, X: np.ndarray) -> float:
    """``max |f_hat(x) - f(x)| / |x|_inf`` over the rows of X (float64, an estimate: the bench's)."""
    truth = ReluFFN(A, w, FLOAT64)(X[:, None, :])
    return float(np.max(np.abs(f_hat(X) - truth) / np.abs(X).max(axis=1)))


def floor_row(d: int, m: int | None = None, seed: int = 0, wider: bool = False) -> dict[str, Any]:
    """One bench run of A_FFN (:func:`~attnproof.theorems.transformer.runner.run_ffn`'s target and
    draws: float64, naive answers, the learner's defaults) against a recording real oracle, and its
    floor: ``d, m, seed``, the bench's error ``err_W`` (max over its 256 Gaussian points of
    ``|f_hat(x) - f(x)| / |x|_inf``), ``err_cube`` (the same over those and the cube's vertices
    :func:`_vertices`: nearer the sup the bound bounds), the bound
    ``error_bound``, ``floor``, ``floor_over_error``, ``bound_over_floor``, ``floor_over_cube_error``,
    ``alt_error_over_bound`` (the larger ``|f_hat(x0) - F_+-(x0)| / error_bound``, float64: above 1,
    a world the declaration allows in which the bound fails), ``shrinks``, ``answers``, ``queries``,
    ``shifted`` (:class:`FFNFloor`) and the worlds' ``width`` (m, or m + 1 with ``wider``:
    :func:`indistinguishable`)."""
    m = 2 * d if m is None else m
    rng = np.random.default_rng(seed)
    _, A, w = transformer_target(d, m, rng)
    oracle = ValueOracle(ReluFFN(A, w, FLOAT64), record=True)
    rec = learn_ffn(oracle, rng=rng, arith=FLOAT64)
    err = _function_error(rec, A, w, rng.standard_normal((256, d)))
    found = indistinguishable(oracle.log, A, w, wider=wider)
    bound, x0 = float(rec.diagnostics["error_bound"]), found.point
    cube = max(err, _function_error(rec, A, w, _vertices(d)))
    return {"d": d, "m": m, "seed": seed, "err_W": err, "err_cube": cube,
            "error_bound": bound, "floor": found.floor, "floor_over_error": found.floor / err,
            "floor_over_cube_error": found.floor / cube,
            "bound_over_floor": bound / found.floor,
            "alt_error_over_bound": max(_function_error(rec, Aw, ww, x0[None])
                                        for Aw, ww in zip(found.worlds, found.readouts, strict=True)) / bound,
            "shrinks": found.shrinks, "answers": found.answers, "queries": rec.queries,
            "shifted": found.shifted, "width": found.worlds[0].shape[1]}


__all__ = ["FFNFloor", "NOISE", "ffn_margins", "floor_row", "indistinguishable"]
