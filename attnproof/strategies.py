"""Public Hypothesis strategies for attention-recovery targets and probes.

Reuse them to attack your own learner::

    from hypothesis import given
    from attnproof import strategies as ast

    @given(ast.targets())
    def test_mine(target):
        W, v = target
        ...

All arrays are float64.  Scales are drawn as powers of ten so that the strategies reach the
edges of float64's useful range, not just the unit ball.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

#: Widths the default strategies draw from.
MIN_D, MAX_D = 1, 12

#: Decimal exponents of the scales of W and v inside which float64 recovery is claimed.
SUPPORTED_LOG10_SCALE = (-100, 100)

_unit = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)


def dims(min_d: int = MIN_D, max_d: int = MAX_D) -> st.SearchStrategy[int]:
    """Token widths d."""
    return st.integers(min_d, max_d)


def scales(lo: int = -6, hi: int = 6) -> st.SearchStrategy[float]:
    """Powers of ten 10^lo .. 10^hi (W's and v's magnitudes)."""
    return st.integers(lo, hi).map(lambda e: 10.0**e)


@st.composite
def vectors(draw: st.DrawFn, d: int, scale: float = 1.0, sparse: bool = False, nonzero: bool = True) -> np.ndarray:
    """A vector of width d with entries in [-scale, scale]; ``sparse`` zeroes a random subset.

    ``nonzero=True`` guarantees v != 0 (at least one entry of magnitude >= scale / 2).
    """
    v = draw(arrays(np.float64, d, elements=_unit)) * scale
    if sparse:
        mask = draw(arrays(np.bool_, d))
        v = np.where(mask, 0.0, v)
    if nonzero:
        i = draw(st.integers(0, d - 1))
        v[i] = draw(st.sampled_from([-1.0, 1.0])) * draw(st.floats(0.5, 1.0)) * scale
    return v


@st.composite
def matrices(draw: st.DrawFn, d: int, scale: float = 1.0) -> np.ndarray:
    """A d x d matrix with entries in [-scale, scale] (zeros, repeats and extremes included)."""
    return draw(arrays(np.float64, (d, d), elements=_unit)) * scale


@st.composite
def targets(
    draw: st.DrawFn,
    d: st.SearchStrategy[int] | None = None,
    w_scale: st.SearchStrategy[float] | None = None,
    v_scale: st.SearchStrategy[float] | None = None,
    sparse_v: st.SearchStrategy[bool] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Identifiable targets (W, v) with v != 0, over widths and scales."""
    n = draw(d if d is not None else dims())
    ws = draw(w_scale if w_scale is not None else scales())
    vs = draw(v_scale if v_scale is not None else scales())
    sparse = draw(sparse_v if sparse_v is not None else st.booleans())
    return draw(matrices(n, ws)), draw(vectors(n, vs, sparse=sparse))


@st.composite
def zero_v_targets(draw: st.DrawFn, d: st.SearchStrategy[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Non-identifiable targets: any W, v = 0 (Thm 4.1's excluded case)."""
    n = draw(d if d is not None else dims())
    return draw(matrices(n, draw(scales()))), np.zeros(n)


@st.composite
def low_rank_targets(
    draw: st.DrawFn, d: st.SearchStrategy[int] | None = None, rank: int | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """(W, v, r) with W = K^T Q, K and Q of shape (r, d), so rank(W) <= r (Sec. 5)."""
    n = draw(d if d is not None else dims())
    r = rank if rank is not None else draw(st.integers(0, n))
    K = draw(arrays(np.float64, (r, n), elements=_unit))
    Q = draw(arrays(np.float64, (r, n), elements=_unit))
    return K.T @ Q, draw(vectors(n)), r


@st.composite
def degenerate_probes(draw: st.DrawFn, v: np.ndarray) -> tuple[np.ndarray, int]:
    """An invertible probe matrix Z whose row ``l`` has u_l^T v = 0 exactly (in float64).

    The bad row is ``u = v_k e_i - v_i e_k``: ``u^T v = v_k v_i - v_i v_k`` is exactly 0 in
    floating point.  Needs d >= 2.
    """
    d = len(v)
    i, k = draw(st.lists(st.integers(0, d - 1), min_size=2, max_size=2, unique=True))
    assume(v[i] != 0 or v[k] != 0)
    Z = draw(arrays(np.float64, (d, d), elements=st.floats(-1, 1).filter(lambda x: abs(x) > 1e-3)))
    l = draw(st.integers(0, d - 1))
    Z[l] = 0.0
    Z[l, i], Z[l, k] = v[k], -v[i]
    assume(np.linalg.cond(Z) < 1e8)
    return Z, l


@st.composite
def margin_targets(
    draw: st.DrawFn, d: st.SearchStrategy[int] | None = None
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(W*, v*, W, mu) satisfying Thm 6.1's assumptions, pushed to their edges.

    ``||W*||_F <= W`` (often exactly at the bound, often concentrated on one or two entries of
    one column), ``W >= 2``; ``||v*||_2 <= 1`` with a random support whose non-zero entries
    have magnitude >= mu (often exactly mu), and mu as large as the support allows.
    """
    n = draw(d if d is not None else st.integers(1, 10))
    W_bound = draw(st.one_of(st.just(2.0), st.floats(2.0, 50.0)))
    m = draw(st.integers(1, n))
    support = draw(st.permutations(range(n)))[:m]
    mu_max = 1 / np.sqrt(m)
    mu = draw(st.one_of(st.just(mu_max), st.floats(1e-3, 1.0).map(lambda t: t * mu_max)))
    spare = max(0.0, 1 - m * mu**2)
    shares = draw(st.lists(st.floats(0, 1), min_size=m, max_size=m))
    at_margin = draw(st.booleans())
    weights = np.zeros(m) if at_margin or sum(shares) == 0 else np.array(shares) / max(1.0, sum(shares))
    mags = np.sqrt(mu**2 + weights * spare)
    signs = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=m, max_size=m)))
    v = np.zeros(n)
    v[support] = signs * mags
    v *= min(1.0, 1 / np.linalg.norm(v))  # guard against rounding above 1
    mu = min(mu, float(np.abs(v[support]).min()))
    shape = draw(st.sampled_from(["dense", "one-column", "single"]))
    W = draw(matrices(n))
    if shape != "dense":
        j = draw(st.integers(0, n - 1))
        keep = np.zeros((n, n), dtype=bool)
        keep[:, j] = True
        if shape == "single":
            keep[:, :] = False
            keep[draw(st.integers(0, n - 1)), j] = True
        W = np.where(keep, W, 0.0)
    norm = np.linalg.norm(W)
    if norm > 0:  # W / norm first: W_bound / norm overflows for subnormal W
        W = W / norm * (W_bound * draw(st.one_of(st.just(1.0), st.floats(0.0, 1.0))))
        for _ in range(8):  # rounding must not break ||W*||_F <= W: step entries towards 0
            if np.linalg.norm(W) <= W_bound:
                break
            W = np.nextafter(W, 0.0)
        assume(np.linalg.norm(W) <= W_bound)
    return W, v, float(W_bound), float(mu)


@st.composite
def bad_queries(draw: st.DrawFn, d: int) -> np.ndarray:
    """Malformed queries for a width-d model: wrong rank, wrong width, N = 0, or NaN/inf."""
    kind = draw(st.sampled_from(["rank1", "rank4", "width", "empty", "nan", "inf"]))
    if kind == "rank1":
        return np.ones(d)
    if kind == "rank4":
        return np.ones((1, 1, 1, d))
    if kind == "width":
        return np.ones((2, d + draw(st.integers(1, 3))))
    if kind == "empty":
        return np.ones((0, d))
    X = np.ones((draw(st.integers(1, 3)), d))
    X[draw(st.integers(0, X.shape[0] - 1)), draw(st.integers(0, d - 1))] = np.nan if kind == "nan" else np.inf
    return X


# --- Sec. 4.1: bias-free ReLU FFNs, their edge cases and their failure cases ---------------

#: Kinds of FFN targets :func:`ffn_targets` draws (each an edge case of the FFN learner).
FFN_KINDS = ("generic", "dead", "parallel", "antiparallel", "zero_sum", "wide", "narrow", "even")


def _check_sizes(min_d: int, max_d: int, min_m: int, max_m: int) -> None:
    from .errors import InvalidInputError

    for name, lo, hi in (("d", min_d, max_d), ("m", min_m, max_m)):
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise InvalidInputError(f"need integers 1 <= min_{name} <= max_{name}; got {lo}, {hi}")


def _integer_entries(draw: st.DrawFn, shape: tuple[int, ...], halves: bool) -> np.ndarray:
    """Small integers (or halves): exact in every arithmetic, many ties and sign patterns."""
    vals = draw(arrays(np.int64, shape, elements=st.integers(-4, 4)))
    return vals / (2.0 if halves else 1.0)


def ffn_targets(
    kinds: tuple[str, ...] = FFN_KINDS,
    min_d: int = 1,
    max_d: int = 5,
    min_m: int = 1,
    max_m: int = 6,
    exact: bool = False,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Bias-free FFN targets ``(A, w_o, kind)`` for ``f(x) = w_o^T ReLU(A^T x)`` (Sec. 4.1).

    ``kind`` is one of :data:`FFN_KINDS`: ``generic``; ``dead`` (a_k = 0 or w_k = 0 units);
    ``parallel`` / ``antiparallel`` (units on one hyperplane, same or opposite orientation);
    ``zero_sum`` (a subset with sum a_k w_k = 0, whose orientation the function does not fix);
    ``wide`` (m > d) and ``narrow`` (m < d); ``even`` (u = A w_o = 0, so VQ~ == 0).  The
    target is never identically zero.  ``exact=True`` draws small integers and halves
    (exact in sympy), else floats in [-1, 1].

    Raises
    ------
    InvalidInputError
        Eagerly, for an unknown kind or bad size bounds.
    """
    from .errors import InvalidInputError

    unknown = set(kinds) - set(FFN_KINDS)
    if unknown or not kinds:
        raise InvalidInputError(f"unknown FFN kinds {sorted(unknown)}: use a subset of {FFN_KINDS}")
    _check_sizes(min_d, max_d, min_m, max_m)
    return _ffn_targets(tuple(kinds), min_d, max_d, min_m, max_m, exact)


@st.composite
def _ffn_targets(
    draw: st.DrawFn, kinds: tuple[str, ...], min_d: int, max_d: int, min_m: int, max_m: int, exact: bool
) -> tuple[np.ndarray, np.ndarray, str]:
    kind = draw(st.sampled_from(kinds))
    d = draw(st.integers(max(min_d, 2 if kind in ("zero_sum", "narrow") else 1), max(max_d, 2)))
    m = draw(st.integers(min_m, max_m))
    if kind == "wide":
        m = max(m, d + 1)
    if kind == "narrow":
        m = min(m, d - 1)

    def entries(shape: tuple[int, ...]) -> np.ndarray:
        if exact:
            return _integer_entries(draw, shape, halves=draw(st.booleans()))
        return draw(arrays(np.float64, shape, elements=st.floats(-1, 1)))

    A, w = entries((d, m)), entries((m,))
    base = draw(st.integers(0, m - 1))
    if not np.any(A[:, base]):
        A[draw(st.integers(0, d - 1)), base] = 1.0
    if w[base] == 0:
        w[base] = draw(st.sampled_from([-1.0, 1.0]))
    if kind == "dead":
        extra = np.zeros((d, 2))
        extra[:, 1] = entries((d,))
        dead = [draw(st.sampled_from([1.0, -2.0])), 0.0]  # a zero column with a != 0; a = 0 on a live column
        A, w = np.concatenate([A, extra], axis=1), np.concatenate([w, dead])
    elif kind in ("parallel", "antiparallel"):
        scale = draw(st.sampled_from([0.5, 2.0, 3.0])) * (1 if kind == "parallel" else -1)
        A = np.concatenate([A, scale * A[:, base : base + 1]], axis=1)
        w = np.concatenate([w, [draw(st.sampled_from([-1.0, 0.5, 1.0]))]])
    elif kind == "zero_sum":
        W2, a2 = entries((d, 2)), entries((2,))
        a2 = np.where(a2 == 0, 1.0, a2)
        A, w = np.concatenate([A, W2, -(W2 @ a2)[:, None]], axis=1), np.concatenate([w, a2, [1.0]])
    elif kind == "even":
        A, w = np.concatenate([A, -A], axis=1), np.concatenate([w, w])
    return A, w, kind


def near_parallel_ffns(
    min_log10: int = -17, max_log10: int = -4, min_d: int = 2, max_d: int = 5
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, float]]:
    """``(A, w_o, eps)``: two units on hyperplanes at angle ~ eps (w and w + eps r), plus others.

    Kinks this close may be beyond float64: the learner must then raise a typed error, never
    return a wrong network.
    """
    from .errors import InvalidInputError

    if not (isinstance(min_log10, int) and isinstance(max_log10, int) and min_log10 <= max_log10 <= 0):
        raise InvalidInputError(f"need integers min_log10 <= max_log10 <= 0; got {min_log10}, {max_log10}")
    _check_sizes(min_d, max_d, 1, 1)
    return _near_parallel_ffns(min_log10, max_log10, min_d, max_d)


@st.composite
def _near_parallel_ffns(
    draw: st.DrawFn, min_log10: int, max_log10: int, min_d: int, max_d: int
) -> tuple[np.ndarray, np.ndarray, float]:
    d = draw(st.integers(min_d, max_d))
    eps = 10.0 ** draw(st.integers(min_log10, max_log10))
    w = draw(arrays(np.float64, d, elements=st.floats(-1, 1)))
    w[draw(st.integers(0, d - 1))] = 1.0
    r = draw(arrays(np.float64, d, elements=st.floats(-1, 1)))
    r[0] = 1.0 if w[0] != 1.0 else -1.0
    others = draw(arrays(np.float64, (d, draw(st.integers(0, 3))), elements=st.floats(-1, 1)))
    A = np.concatenate([w[:, None], (w + eps * r)[:, None], others], axis=1)
    a = draw(arrays(np.float64, A.shape[1], elements=st.floats(0.25, 1)))
    return A, a * draw(arrays(np.float64, A.shape[1], elements=st.sampled_from([-1.0, 1.0]))), eps


def zero_ffns(min_d: int = 1, max_d: int = 5) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """FFNs that are identically zero: a = 0, w = 0, or a unit cancelled by its twin."""
    _check_sizes(min_d, max_d, 1, 1)
    return _zero_ffns(min_d, max_d)


@st.composite
def _zero_ffns(draw: st.DrawFn, min_d: int, max_d: int) -> tuple[np.ndarray, np.ndarray]:
    d = draw(st.integers(min_d, max_d))
    A = draw(arrays(np.float64, (d, 2), elements=st.floats(-1, 1)))
    how = draw(st.sampled_from(["a", "w", "twin"]))
    if how == "a":
        return A, np.zeros(2)
    if how == "w":
        return np.zeros((d, 2)), draw(arrays(np.float64, 2, elements=st.floats(-1, 1)))
    return np.column_stack([A[:, 0], A[:, 0]]), np.array([1.0, -1.0]) * draw(st.floats(0.5, 2))


def biased_ffns(
    min_d: int = 1, max_d: int = 4
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(A, w_o, b)``: an FFN ``w_o^T ReLU(A^T x + b)`` whose biases matter near the unit ball
    (|b_k| <= |w_k|_1 / 2, b != 0): not positively homogeneous, refused by the bias-free learner."""
    _check_sizes(min_d, max_d, 1, 1)
    return _biased_ffns(min_d, max_d)


@st.composite
def _biased_ffns(draw: st.DrawFn, min_d: int, max_d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = draw(st.integers(min_d, max_d))
    m = draw(st.integers(1, 4))
    A = draw(arrays(np.float64, (d, m), elements=st.floats(-1, 1)))
    A[0] = np.where(np.abs(A[0]) < 0.25, 1.0, A[0])
    w = draw(arrays(np.float64, m, elements=st.floats(0.25, 1))) * draw(
        arrays(np.float64, m, elements=st.sampled_from([-1.0, 1.0]))
    )
    frac = draw(arrays(np.float64, m, elements=st.floats(-0.5, 0.5)))
    b = frac * np.abs(A).sum(axis=0)
    k = draw(st.integers(0, m - 1))
    b[k] = 0.25 * np.abs(A[:, k]).sum() * draw(st.sampled_from([-1.0, 1.0]))
    return A, w, b


__all__ = [
    "FFN_KINDS",
    "ffn_targets",
    "near_parallel_ffns",
    "zero_ffns",
    "biased_ffns",
    "MIN_D",
    "MAX_D",
    "SUPPORTED_LOG10_SCALE",
    "dims",
    "scales",
    "vectors",
    "matrices",
    "targets",
    "zero_v_targets",
    "low_rank_targets",
    "degenerate_probes",
    "margin_targets",
    "bad_queries",
]
