"""The proof that a transcript of answers fits the naive declaration at a target: the shared level
of the rooms' floors (issue 22, item 4; ``theorems/exact/indistinguishable.py`` for Thm 4.1,
``theorems/lowrank/indistinguishable.py`` for Thm 5.1's skeleton).

A learner sees only answers.  If every answer a real oracle gave for W* also lies in the set the
naive declaration (:class:`~attnproof.models.Rounding`, componentwise) allows at two other targets
``W_+-``, the three worlds give one transcript, one W_hat and one bound B, and a bound rigorous for
the declaration satisfies ``B >= ||W_+ - W_-|| / 2``: the *floor*.  The rooms build the worlds;
this module holds what their proofs share: error-free float64 dot products with a proven radius
(:func:`dot2`), their balls in python-flint's Arb (:func:`ball`), the margins of one- and two-token
answers inside the declared set (:func:`one_token_margins`, :func:`two_token_margins`) and a
float64 certainly below a ball (:func:`lower`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from flint import arb, ctx

from .errors import InvalidInputError, ShapeError
from .oracles import QueryRecord

#: float64's unit roundoff.
U = 2.0**-53
#: Lower bounds of float64 norms (and of products and sums of a few of them): the computed value
#: times this.  A norm of n <= 2^24 terms (``||W||_F`` at d <= 2^12) computed in float64, in any
#: summation order, is within ``(n / 2 + 2) u < 2^-30`` of its value.
NORM_DOWN = 1 - 2.0**-28
#: The largest width :data:`NORM_DOWN` covers.
MAX_D = 2**12
#: The range of magnitudes in which :func:`dot2`'s error-free transformations neither overflow
#: nor underflow (nonzero entries of the queries, W and v: q = s W e_j within its square, the
#: products of a query with q or v within its cube, their errors above 2^-653, normal).
SAFE_RANGE = (2.0**-200, 2.0**200)
#: Share of each query's first-order slack that :func:`indistinguishable` uses.
SAFETY = 0.98
#: Factor a column's Delta is shrunk by when one of its answers is not proven allowed.
SHRINK = 0.8
#: Bits of the Arb balls.
PREC = 128


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split: ``a = hi + lo`` exactly, each with at most 26 significant bits."""
    c = 134217729.0 * a  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProduct: ``a b = p + e`` exactly (no overflow or underflow)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


def dot2(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise ``x_b^T y_b`` of (B, n) float64 arrays as balls ``s + c +- radius``.

    Ogita, Rump and Oishi's Dot2 (SIAM J. Sci. Comput. 26, 2005, Sec. 5) without its last rounding:
    the TwoProduct and TwoSum steps are error-free, so the unevaluated pair ``s + c`` is off only
    by the float64 sum c of the 2n errors, at most ``gamma_2n`` times their magnitudes, themselves at
    most ``gamma_n |x|^T |y|``: the radius is ``2 gamma_2n^2 |x|^T |y|`` (``|x|^T |y|`` computed in
    float64, within ``gamma_n``, covered by the factor 2).  Assumes no overflow or underflow.
    """
    s = np.zeros(x.shape[0])
    c = np.zeros(x.shape[0])
    for i in range(x.shape[1]):
        p, e = two_product(x[:, i], y[:, i])
        t = s + p
        z = t - s
        c += ((s - (t - z)) + (p - z)) + e
        s = t
    n = 2 * x.shape[1]
    gamma = n * U / (1 - n * U)
    return s, c, 2 * gamma * gamma * np.einsum("bi,bi->b", np.abs(x), np.abs(y))


def ball(parts: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> arb:
    """The k-th ball of :func:`dot2` in Arb (s + c exact at :data:`PREC` bits)."""
    s, c, r = parts
    return arb(s[k]) + arb(c[k]) + arb(0, r[k])


def centre(parts: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    return parts[0] + parts[1]


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: ``a + b = s + e`` exactly."""
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


def transcript(log: Sequence[QueryRecord], d: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The recorded queries and answers by sequence length N: ``{N: (X (B, N, d), y (B,))}``."""
    by_length: dict[int, list[QueryRecord]] = {}
    for record in log:
        X = np.asarray(record.X, dtype=np.float64)
        if X.ndim != 3 or X.shape[2] != d:
            raise ShapeError(f"recorded queries must have shape (B, N, {d}); got {X.shape}")
        by_length.setdefault(X.shape[1], []).append(record)
    return {n: (np.concatenate([np.asarray(r.X, np.float64) for r in rs]),
                np.concatenate([np.asarray(r.y, np.float64) for r in rs])) for n, rs in by_length.items()}


def in_range(a: np.ndarray) -> bool:
    """Every nonzero |entry| of ``a`` within :data:`SAFE_RANGE` (NaN and inf fail)."""
    m = np.abs(a[a != 0])
    return bool(np.all((m >= SAFE_RANGE[0]) & (m <= SAFE_RANGE[1])))


def sigma(t: arb) -> arb:
    return 1 / (1 + (-t).exp())


def one_token_margins(X: np.ndarray, y: np.ndarray, v: np.ndarray) -> list[arb]:
    """Arb balls of ``tol - |y - x^T v|`` for the one-token answers y of the queries X (B, 1, d):
    a one-token answer is the readout alone, declared within ``4 u |x|^T |v|`` (what the learners
    assume of their reads of v: ``4 t |v_i|``)."""
    f = dot2(X[:, 0], np.broadcast_to(v, X[:, 0].shape))
    tol = 4 * U * (np.abs(X[:, 0]) @ np.abs(v)) * NORM_DOWN
    return [arb(tol[k]) - abs(arb(y[k]) - ball(f, k)) for k in range(len(y))]


def two_token_margins(b: dict[str, np.ndarray], y: np.ndarray) -> list[arb]:
    """Arb balls of ``tol - |y - f|`` for the two-token answers y: the distance of y inside the
    declared interval ``[a2 + min sigma(L +- most) pv - label, a2 + max ... + label]``."""
    margins = []
    pv_sign = centre(b["pv"])
    for k, yk in enumerate(y):
        L, pv, a2 = (ball(b[name], k) for name in ("L", "pv", "a2"))
        most, label = arb(b["most"][k]), arb(b["label"][k])
        up, down = a2 + sigma(L + most) * pv, a2 + sigma(L - most) * pv
        hi = (up if pv_sign[k] >= 0 else down) + label  # sigma increases: the larger end
        lo = (down if pv_sign[k] >= 0 else up) - label
        if not (pv > 0 or pv < 0):  # p^T v's sign unproven: the smaller interval, both ways
            hi, lo = a2 + label - abs(up - a2) - abs(down - a2), a2 - label + abs(up - a2) + abs(down - a2)
        yk = arb(yk)
        margins.append(_min(hi - yk, yk - lo))
    return margins


def _min(a: arb, b: arb) -> arb:
    return (a + b - abs(a - b)) / 2


def lower(m: arb) -> float:
    """A float64 certainly at most every point of the ball (NaN for a non-finite ball)."""
    if not m.is_finite():
        return float("nan")
    lo = float(m.mid() - m.rad())
    step = abs(lo) * 2.0**-50 + 2.0**-1074
    while not arb(lo) <= m:
        lo -= step
        step *= 2
    return lo


def transcript_margins(log: Sequence[QueryRecord], v: np.ndarray,
                       two_token_balls: Callable[[np.ndarray], dict[str, np.ndarray]],
                       theorem: str) -> dict[int, np.ndarray]:
    """Every recorded answer's margin inside the declared set, by sequence length:
    :func:`one_token_margins` for one token, :func:`two_token_margins` of the room's balls
    ``two_token_balls(X)`` for two, as float64s certainly below them (:func:`lower`), at
    :data:`PREC` bits.

    Returns
    -------
    dict
        ``{N: margins (B,)}`` (a margin >= 0 proves the answer allowed; NaN or < 0: not proven).

    Raises
    ------
    InvalidInputError
        For a query of more than two tokens (``theorem``'s learner asks none).
    """
    out: dict[int, np.ndarray] = {}
    old = ctx.prec
    ctx.prec = PREC
    try:
        for n, (X, y) in transcript(log, v.shape[0]).items():
            if n == 1:
                margins = one_token_margins(X, y, v)
            elif n == 2:
                margins = two_token_margins(two_token_balls(X), y)
            else:
                raise InvalidInputError(f"the floor reads queries of one or two tokens ({theorem}); "
                                        f"got N = {n}")
            out[n] = np.array([lower(m) for m in margins])
    finally:
        ctx.prec = old
    return out


__all__ = ["NORM_DOWN", "MAX_D", "PREC", "SAFE_RANGE", "SAFETY", "SHRINK", "U", "ball", "centre", "dot2",
           "in_range", "lower", "one_token_margins", "sigma", "transcript", "transcript_margins",
           "two_product", "two_sum", "two_token_margins"]
