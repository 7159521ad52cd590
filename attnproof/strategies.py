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

from .errors import InvalidInputError

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
    W = draw(bounded_matrices(n, W_bound))
    return W, v, float(W_bound), float(mu)


@st.composite
def bounded_matrices(draw: st.DrawFn, d: int, W_bound: float) -> np.ndarray:
    """A d x d matrix with ``||W||_F <= W_bound``: often exactly at the bound, often concentrated
    on one column or on a single entry (the edges of the norm assumption of Thms 6.1 and B.1)."""
    shape = draw(st.sampled_from(["dense", "one-column", "single"]))
    W = draw(matrices(d))
    if shape != "dense":
        j = draw(st.integers(0, d - 1))
        keep = np.zeros((d, d), dtype=bool)
        keep[:, j] = True
        if shape == "single":
            keep[:, :] = False
            keep[draw(st.integers(0, d - 1)), j] = True
        W = np.where(keep, W, 0.0)
    norm = np.linalg.norm(W)
    if norm > 0:  # W / norm first: W_bound / norm overflows for subnormal W
        W = W / norm * (W_bound * draw(st.one_of(st.just(1.0), st.floats(0.0, 1.0))))
        for _ in range(8):  # rounding must not break ||W||_F <= W_bound: step entries towards 0
            if np.linalg.norm(W) <= W_bound:
                break
            W = np.nextafter(W, 0.0)
        assume(np.linalg.norm(W) <= W_bound)
    return W


def membership_targets(
    d: st.SearchStrategy[int] | None = None, max_W_bound: float = 50.0
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, float, float]]:
    """(W*, v*, W, mu) satisfying Thm B.1's assumptions, pushed to their edges.

    ``||W*||_F <= W`` (often exactly at the bound, often concentrated), ``W >= 2``;
    ``||v*||_2 = 1`` (to rounding) with *every* ``|v*_i| >= mu``, often = mu, and mu up to its
    largest value ``1 / sqrt(d)`` (then every |v*_i| = mu); "= mu" means to 1e-15 relative,
    so that the exact direction v*/||v*|| meets the margin despite rounding.

    Raises
    ------
    InvalidInputError
        At once if ``max_W_bound < 2`` (Thm B.1 needs W >= 2) or d is not a strategy; when
        drawing if d draws a non-positive width.
    """
    if not (isinstance(max_W_bound, (int, float)) and max_W_bound >= 2):
        raise InvalidInputError(f"membership_targets: max_W_bound must be a number >= 2; got {max_W_bound!r}")
    if d is not None and not isinstance(d, st.SearchStrategy):
        raise InvalidInputError(
            f"membership_targets: d must be a strategy of widths, e.g. st.integers(1, 4); got {d!r}"
        )
    return _membership_targets(d if d is not None else st.integers(1, 10), float(max_W_bound))


@st.composite
def _membership_targets(
    draw: st.DrawFn, d: st.SearchStrategy[int], max_W_bound: float
) -> tuple[np.ndarray, np.ndarray, float, float]:
    n = draw(d)
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise InvalidInputError(f"membership_targets: d must draw positive integers; got {n!r}")
    W_bound = draw(st.one_of(st.just(2.0), st.floats(2.0, max_W_bound)))
    mu_max = 1 / np.sqrt(n)
    mu = draw(st.one_of(st.just(mu_max), st.floats(1e-2, 1.0).map(lambda t: t * mu_max)))
    shares = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    if shares.sum() == 0:
        shares[draw(st.integers(0, n - 1))] = 1.0
    mags = np.sqrt(mu**2 + shares / shares.sum() * max(0.0, 1 - n * mu**2))
    signs = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)))
    v = signs * mags / np.linalg.norm(mags)
    # the exact direction v / ||v|| (what membership identifies) differs from v by rounding:
    # mu sits 1e-15 relative below its smallest entry, so the margin holds exactly
    mu = min(mu, float(np.abs(v).min() / np.linalg.norm(v))) * (1 - 1e-15)
    return draw(bounded_matrices(n, W_bound)), v, float(W_bound), float(mu)


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


__all__ = [
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
    "bounded_matrices",
    "membership_targets",
    "bad_queries",
]
