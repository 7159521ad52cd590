"""The audit of a network that stands unpolished (:func:`.ffn.learn_ffn`, issue 23): every
kink's hyperplane probed at ``d - 1`` centres spanning it, for two kinks the search took for one.

Two kinks K and T merged into one of jump ``J = K + T`` (``sec4.1/canonical-from-jumps``)
leave ``D = f - f_hat`` nonzero only in the wedge between their hyperplanes and J's, and on a
line ``m + s n`` across it (n J's normal) D is at most ``|J^T n| h(m)``, h(m) the width of that
wedge along n measured from where the line crosses J's hyperplane: of opposite convexities D
rises from 0 there with slope ``|J^T n|`` to the heavier kink and falls to 0 at the other; of
one, it is a tent of height at most ``min(|k|, |t|) h <= |J^T n| h`` (:func:`.ffn._merge_charge`).
No biases: every hyperplane passes through 0, so h is linear on J's hyperplane, and its values
at d - 1 centres spanning the hyperplane bound it everywhere.

At each centre m the audit reads f's own lines on either side from answers beyond any such
wedge (``m +- S n`` and ``m +- 2 S n``), where they cross (``s_J``: J's crossing, not the
network's, whose hyperplane is off f's by its own error), and asks the pair ``s_J +- y``, y
first at the answers' rounding: a point off its side's line lies inside a wedge wider than y,
and y doubles until both points lie on their lines (``h(m) <= y``) or reach ``S / 2``: S at
least 16 times the offset the network's bound allows its kink, a wedge that wide moves f by up
to 8 times that bound, and the network is refused.  The charge, per unit
``|x|_inf``, is ``|J^T n| sup_{|z|_inf <= 1} |h(z)|`` over the linear h with ``|h(m_i)| <= y_i``
(:func:`spread`), summed over the kinks.

The points beside a kink at the search's grade (:func:`.ffn._beside_the_rest`) stand where the
path crossed it and across that point only as far as the other hyperplanes let them, and a merge
that moved f by less than about the bound at those centres and more between them was kept SILENTLY
(``tests/test_transformer.py``, AUDITED_TINY_BESIDE_A_PAIR: tiny_beside_pair(5, 189, 1e-8), 1.34 times
the bound): here the centres are drawn orthonormal on the hyperplane, wherever the other hyperplanes
lie (f's lines are read, not the pieces' planes, which hold in the kink's two regions only), and
the wedge is measured, not compared with the bound.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ._path_search import _PathSearch

#: The far points stand at least ``S = 2^REACH_LOG2 |m|_inf`` off J's hyperplane (and 2 S): beyond
#: the wedge of hyperplanes 2^-20 rad apart, which the search resolves (``tests/test_transformer.py``,
#: FLOAT64_ANGLE: every pair target from 3e-7 rad up answered within its bound).
REACH_LOG2 = -16
#: The pair's offset starts at this many times the answers' rounding over ``|J^T n|``.
ROUNDING_MARGIN = 4
#: The most doublings of the pair's offset, from its first (at least ``2^-RUNGS S``) to ``S / 2``.
RUNGS = 48
#: The points per centre before the ladder: four far points and the first pair.
POINTS = 6
#: Centres tried for each of the ``d - 1`` directions (the other hyperplanes at least 8 S off).
TRIES = 8


def audit_query_bound(d: int, L: int) -> int:
    """The most queries :func:`audit` asks of a network with L kinks in dimension d:
    ``L (d - 1) (POINTS + 2 RUNGS)``."""
    return L * max(d - 1, 0) * (POINTS + 2 * RUNGS)


def spread(M: np.ndarray, y: np.ndarray) -> float:
    """A bound on ``sup |h(z)|`` over ``|z|_inf <= 1`` on the span of M's columns (the centres) and
    over the linear h with ``|h(m_i)| <= y_i``: ``z = M alpha``, ``alpha = M^+ z``, ``h(z) = alpha^T
    h(M)``, so ``|h(z)| <= max_sigma (sigma y)^T M^+ z``, at most ``max_sigma |(sigma y)^T M^+|_1``
    (z over the whole cube, not only the span: an upper bound; the ``2^(k-1)`` sign vectors for
    k <= 12 centres, else ``sum_i |row_i(M^+)|_1 y_i``).  Float64, no query."""
    P = np.linalg.pinv(M)
    k = P.shape[0]
    if k > 12:
        return float(np.abs(P).sum(axis=1) @ y)
    return max(
        float(np.abs((np.array((1.0, *signs)) * y) @ P).sum())
        for signs in itertools.product((1.0, -1.0), repeat=k - 1)
    )


def _centres(N: np.ndarray, j: int, n: np.ndarray, S: float, rng: np.random.Generator) -> list[np.ndarray]:
    """``d - 1`` centres spanning the hyperplane ``n^T z = 0`` (``|m|_inf = 1``), each at least
    ``8 S`` along n from every other hyperplane (the far points' lines cross no other kink of the
    network), of TRIES draws per direction; fewer when a direction has none (float64, no query)."""
    d = len(n)
    Q = np.linalg.qr(np.column_stack([n, rng.standard_normal((d, d - 1))]))[0][:, 1:]
    others = np.delete(N, j, axis=0)
    out: list[np.ndarray] = []
    for i in range(d - 1):
        for k in range(TRIES):
            e = Q[:, i] if k == 0 else Q[:, i] + Q @ rng.standard_normal(d - 1) / (2 * np.sqrt(d))
            m = e / np.abs(e).max()
            if np.all(np.abs(others @ m) > 8 * S * np.abs(others @ n)):
                out.append(m)
                break
    return out


def audit(
    search: _PathSearch, N: Any, c: Any, bound: float, rng: np.random.Generator
) -> tuple[float, int]:
    """The charge for the kinks of the network ``(N, c)`` (the canonical form's hyperplanes and
    weights, :func:`~attnproof.models.evaluate_canonical`) whose bound is ``bound``, per unit
    ``|x|_inf`` (module docstring; counted:
    ``ledger.values``, ``ledger.audited``), and how many kinks were not audited; the charge is inf
    when a kink's wedge does not close within ``S / 2`` at a centre, or f has no kink near it where
    the network's is beyond its bound (the caller refuses).

    The far points stand ``S = max(2^REACH_LOG2, 2^4 bound / |J^T n|)`` off the hyperplane, beyond
    where the bound lets f's kink lie, and 8 S from every other hyperplane; a kink with another
    hyperplane nearer than that in some direction at every centre drawn (a pair the network resolved
    closer than its own bound places them: pair_target(3, 18, 3e-8), the search's bound 6.3e-5) is
    not audited: its centres would read both kinks at once."""
    arith = search.arith
    if search.d == 1:
        return 0.0, 0  # every hyperplane is {0}: nothing to merge
    N, c = arith.to_float(N).reshape(-1, search.d), arith.to_float(c)
    charge, skipped = 0.0, 0
    for j in np.flatnonzero(c):
        n = N[j] / np.abs(N[j]).max()
        own = abs(c[j] * float(N[j] @ n))  # the network's jump along n
        S = 2.0 ** np.ceil(np.log2(max(2.0**REACH_LOG2, 16 * bound / own)))
        centres = _centres(N, int(j), n, S, rng) if S <= 2.0**-4 else []
        if len(centres) < search.d - 1:
            skipped += 1
            continue
        widths, slopes = [], []
        for m in centres:
            jump, y = _wedge(search, arith.asarray(m), arith.asarray(n), arith.scalar(S), own, bound)
            if y is None:
                return np.inf, skipped
            widths.append(y)
            slopes.append(jump)
        charge += max(slopes) * spread(np.column_stack(centres), np.array(widths))
    return charge, skipped


def _wedge(
    search: _PathSearch, m: Any, n: Any, S: Any, own: float, bound: float
) -> tuple[float, float | None]:
    """``(|J^T n|, y)`` at the centre m: f's lines on either side from ``m +- S n``, ``m +- 2 S n``,
    and the smallest offset y of the ladder whose pair ``s_J +- y`` lies on them (None when none
    up to ``S / 2`` does: a wedge wider than that; counted: ``ledger.values``, ``ledger.audited``).
    Where f's two lines are one (no kink of f within 2 S of m), the network's kink there, of jump
    ``own`` along n, moves f_hat off f by ``own S / 4`` somewhere on the segment: None when that
    exceeds its bound, else ``(own, S)``."""
    arith = search.arith
    far = _ask(search, [m + S * n, m + 2 * S * n, m - S * n, m - 2 * S * n])
    up, down = (far[1] - far[0]) / S, (far[2] - far[3]) / S  # the slopes along n on either side
    line_tol = 3 * max(search.tol(m, v) for v in far)
    if arith.within(up - down, 2 * line_tol / float(S)):
        return (own, float(S)) if own * float(S) <= 4 * (bound + 2 * line_tol) else (own, None)
    s_J = (far[2] + down * S - far[0] + up * S) / (up - down)  # where f's lines cross

    def line(s: Any) -> Any:
        return far[0] + up * (s - S) if s > s_J else far[2] + down * (s + S)

    jump = abs(float(arith.to_float(up - down)))
    # a kink so light that the first offset exceeds S / 2 moves f by less than the rounding there
    y = min(max(ROUNDING_MARGIN * 2 * line_tol / jump, float(S) * 2.0**-RUNGS), float(S) / 2)
    while y <= float(S) / 2:
        s = [s_J + arith.scalar(y), s_J - arith.scalar(y)]
        got = _ask(search, [m + t * n for t in s])
        if all(arith.within(g - line(t), line_tol + search.tol(m, g)) for g, t in zip(got, s)):
            return jump, y
        y *= 2
    return jump, None


def _ask(search: _PathSearch, points: list[Any]) -> list[Any]:
    """f at ``points`` (one batch), counted as values asked by the audit."""
    answers = search.ask(np.array(points))
    search.ledger.values += len(points)
    search.ledger.audited += len(points)
    return list(answers)
