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

import itertools

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



# --- multi-head attention (Sec. 7, App. C) --------------------------------------------------

#: Kinds of exact symmetry :func:`equivalent_multihead_pairs` draws from.
SYMMETRIES = ("hyperplane", "permute", "split", "merge", "zero-head")


def _check_int(name: str, x: int | None, lo: int, hi: int) -> None:
    if x is not None and (not isinstance(x, int) or isinstance(x, bool) or not lo <= x <= hi):
        raise InvalidInputError(f"{name} must be an integer in [{lo}, {hi}] or None; got {x!r}")


@st.composite
def multihead_params(
    draw: st.DrawFn, d: int, H: int, scale: float = 1.0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """H heads (W^(h), v^(h)) of width d, entries in [-scale, scale], every v^(h) != 0."""
    return [(draw(matrices(d, scale)), draw(vectors(d, scale))) for _ in range(H)]


def equivalent_multihead_pairs(
    d: int | None = None, H: int | None = None, kinds: tuple[str, ...] = SYMMETRIES
) -> st.SearchStrategy[tuple[list, list, str]]:
    """Pairs of *different* multi-head parameter sets computing the *same* function (Prop. 7.1+).

    ``(heads_a, heads_b, kind)`` with kind in :data:`SYMMETRIES`: ``hyperplane`` (all W equal,
    ``v^(h) = lambda_h b`` with two different lambda on the hyperplane ``sum lambda = 1``,
    negative weights included), ``permute`` (a non-trivial permutation of distinct heads),
    ``split`` (a head (W, v) -> (W, a v), (W, (1 - a) v)), ``merge`` (the reverse: heads
    with equal W summed into one), ``zero-head`` (an extra head (W', 0) with any W').
    Identities ``prop7.1/multihead-collapse`` and ``prop7.1/symmetries``.

    Raises
    ------
    InvalidInputError
        Eagerly, if d is not in [1, 12], H not in [1, 6] (2..6 for ``permute``/``hyperplane``),
        or a kind is unknown.
    """
    _check_int("d", d, 1, MAX_D)
    _check_int("H", H, 1, 6)
    unknown = set(kinds) - set(SYMMETRIES)
    if not kinds or unknown:
        raise InvalidInputError(f"kinds must be a non-empty subset of {SYMMETRIES}; got {kinds!r}")
    if H == 1 and set(kinds) <= {"hyperplane", "permute"}:
        raise InvalidInputError("hyperplane and permute need H >= 2")
    return _equivalent_pairs(d, H, tuple(kinds))


@st.composite
def _equivalent_pairs(
    draw: st.DrawFn, d: int | None, H: int | None, kinds: tuple[str, ...]
) -> tuple[list, list, str]:
    n = d if d is not None else draw(st.integers(1, 6))
    m = H if H is not None else draw(st.integers(2, 4))
    kind = draw(st.sampled_from([k for k in kinds if m >= 2 or k not in ("hyperplane", "permute")]))
    # dyadic weights (<= 11 bits) and values (<= 21 bits): lambda_h b, a v and (1 - a) v are then
    # exact in float64, so each pair is an *exact* instance of its symmetry in every arithmetic
    weights = st.integers(-768, 768).filter(bool).map(lambda k: k / 256)
    dyadic = arrays(np.float64, n, elements=st.integers(-(2**20), 2**20).map(lambda k: k / 2**20))
    if kind == "hyperplane":
        A, b = draw(matrices(n)), draw(dyadic.filter(np.any))
        lam = [draw(st.lists(weights, min_size=m - 1, max_size=m - 1)) for _ in range(2)]
        assume(lam[0] != lam[1])
        sets = [[(A, l * b) for l in ls + [1.0 - sum(ls)]] for ls in lam]
        return sets[0], sets[1], kind
    heads = [(draw(matrices(n)), draw(dyadic.filter(np.any))) for _ in range(m)]
    if kind == "permute":
        perm = draw(st.permutations(range(m)))
        assume(
            perm != list(range(m))
            and any(not np.array_equal(heads[i][0], heads[p][0]) for i, p in enumerate(perm))
        )
        return heads, [heads[p] for p in perm], kind
    h = draw(st.integers(0, m - 1))
    W, v = heads[h]
    a = draw(weights)
    split = heads[:h] + [(W, a * v), (W, v - a * v)] + heads[h + 1 :]
    if kind == "split":
        return heads, split, kind
    if kind == "merge":
        return split, heads, kind
    return heads, heads + [(draw(matrices(n, draw(scales(-2, 2)))), np.zeros(n))], kind


def short_input_pairs(
    d: int | None = None, H: int | None = None
) -> st.SearchStrategy[tuple[list, list, set]]:
    """``(heads, flipped, S)``: equal on every input of length <= 2, different parameters.

    ``flipped`` = heads in S negated, ``(W, v) -> (-W, -v)``, plus a linear head
    ``(0, 2 sum_{h in S} v_h)`` (identity ``sec7/short-input-flip``); for generic heads the two
    functions differ at N = 3.  W entries have magnitude >= 1/4 on the diagonal so that the
    heads are far from linear.

    Raises
    ------
    InvalidInputError
        Eagerly, if d is not in [1, 12] or H not in [1, 6].
    """
    _check_int("d", d, 1, MAX_D)
    _check_int("H", H, 1, 6)
    return _short_pairs(d, H)


@st.composite
def _short_pairs(draw: st.DrawFn, d: int | None, H: int | None) -> tuple[list, list, set]:
    from .theorems.multihead import flip_heads

    n = d if d is not None else draw(st.integers(1, 5))
    m = H if H is not None else draw(st.integers(1, 3))
    heads = draw(multihead_params(n, m))
    heads = [(W + np.diag(np.where(np.diag(W) >= 0, 0.25, -0.25)), v) for W, v in heads]
    S = set(draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=m, unique=True)))
    return heads, flip_heads(heads, S), S


def orthogonal_heads_targets(
    dims: list[int] | None = None, max_H: int = 3, max_dh: int = 3, scale: float = 1.0
) -> st.SearchStrategy[tuple[list, list]]:
    """``(heads, bases)`` satisfying Assumption C.1 (Prop. C.2): random pairwise orthogonal
    subspaces U_h (a Cayley-transform rotation, or the coordinate blocks), orthonormal bases
    E_h, ``W^(h) = E_h W~ E_h^T`` and ``v^(h) = E_h v~ != 0``.

    Raises
    ------
    InvalidInputError
        Eagerly, if ``dims`` holds a non-positive size or sums above 12, or max_H / max_dh < 1.
    """
    if dims is not None and (
        not dims or any(not isinstance(k, int) or k < 1 for k in dims) or sum(dims) > MAX_D
    ):
        raise InvalidInputError(f"dims must be positive integers summing to at most {MAX_D}; got {dims!r}")
    _check_int("max_H", max_H, 1, 6)
    _check_int("max_dh", max_dh, 1, 6)
    return _orthogonal_targets(dims, max_H, max_dh, scale)


@st.composite
def _orthogonal_targets(
    draw: st.DrawFn, dims: list[int] | None, max_H: int, max_dh: int, scale: float
) -> tuple[list, list]:
    from .arith import FLOAT64
    from .theorems.multihead import cayley_bases, lift

    sizes = dims if dims is not None else draw(st.lists(st.integers(1, max_dh), min_size=1, max_size=max_H))
    d = sum(sizes)
    if draw(st.booleans()):
        bases = cayley_bases(sizes, draw(matrices(d)), FLOAT64)
    else:
        cuts = np.cumsum([0, *sizes])
        bases = [np.eye(d)[:, a:b] for a, b in itertools.pairwise(cuts)]
    heads = [lift(draw(matrices(k, scale)), draw(vectors(k, scale)), E) for k, E in zip(sizes, bases)]
    return heads, bases


@st.composite
def c1_violations(draw: st.DrawFn, max_H: int = 3, max_dh: int = 3) -> tuple[list, list, str]:
    """``(heads, bases, how)``: an orthogonal-heads target broken so C.1 fails for ``bases``.

    ``how``: ``leak-v`` (v^(h) gets a component in another U_g), ``leak-W`` (W^(h) gets one),
    ``shared`` (an extra head living in U_1 too: two heads in one subspace).  Needs H >= 2
    for the leaks, which the strategy ensures.
    """
    heads, bases = draw(_orthogonal_targets(None, max_H, max_dh, 1.0).filter(lambda t: len(t[1]) >= 2))
    how = draw(st.sampled_from(["leak-v", "leak-W", "shared"]))
    g, h = draw(st.permutations(range(len(bases))))[:2]
    eps = draw(st.sampled_from([1.0, 0.3, 0.05]))
    heads = list(heads)
    W, v = heads[h]
    u = bases[g][:, 0]
    if how == "leak-v":
        heads[h] = (W, v + eps * u)
    elif how == "leak-W":
        heads[h] = (W + eps * np.outer(u, bases[h][:, 0]) + eps * np.outer(bases[h][:, 0], u), v)
    else:
        E = bases[0]
        heads.append((E @ draw(matrices(E.shape[1])) @ E.T, E @ draw(vectors(E.shape[1]))))
    return heads, bases, how


__all__ = [
    "SYMMETRIES",
    "multihead_params",
    "equivalent_multihead_pairs",
    "short_input_pairs",
    "orthogonal_heads_targets",
    "c1_violations",
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
