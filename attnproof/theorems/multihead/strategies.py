"""Hypothesis strategies of the multi-head room (Sec. 7, App. C): equivalent parameter sets,
short-input pairs, orthogonal-heads targets and their C.1 violations.

Built on the shared builders of :mod:`attnproof.strategies`; the room's ``__init__`` never
imports this module, so the library itself runs without Hypothesis being imported.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ...arith import FLOAT64
from ...errors import InvalidInputError
from ...strategies import MAX_D, matrices, scales, vectors
from .maps import cayley_bases, flip_heads, lift

#: Kinds of exact symmetry :func:`equivalent_multihead_pairs` draws from.
SYMMETRIES = ("hyperplane", "permute", "split", "merge", "zero-head")


def _check_optional_int(name: str, x: int | None, lo: int, hi: int) -> None:
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
    _check_optional_int("d", d, 1, MAX_D)
    _check_optional_int("H", H, 1, 6)
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
    _check_optional_int("d", d, 1, MAX_D)
    _check_optional_int("H", H, 1, 6)
    return _short_pairs(d, H)


@st.composite
def _short_pairs(draw: st.DrawFn, d: int | None, H: int | None) -> tuple[list, list, set]:
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
    _check_optional_int("max_H", max_H, 1, 6)
    _check_optional_int("max_dh", max_dh, 1, 6)
    return _orthogonal_targets(dims, max_H, max_dh, scale)


@st.composite
def _orthogonal_targets(
    draw: st.DrawFn, dims: list[int] | None, max_H: int, max_dh: int, scale: float
) -> tuple[list, list]:
    sizes = dims if dims is not None else draw(st.lists(st.integers(1, max_dh), min_size=1, max_size=max_H))
    d = sum(sizes)
    if draw(st.booleans()):
        bases = cayley_bases(sizes, draw(matrices(d)), FLOAT64)
    else:
        cuts = np.cumsum([0, *sizes])
        bases = [np.eye(d)[:, a:b] for a, b in itertools.pairwise(cuts)]
    heads = [lift(draw(matrices(k, scale)), draw(vectors(k, scale)), E)
             for k, E in zip(sizes, bases, strict=True)]
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


@st.composite
def uniform_leak_violations(draw: st.DrawFn, max_H: int = 3, max_dh: int = 3) -> tuple[list, list, str, int]:
    """``(heads, bases, how, h)``: an orthogonal-heads target whose head g attends (nearly) uniformly,
    ``W^(g)`` times t in {0, 2^-1074, 1e-308, 1e-200, 1e-20}, with v^(g) leaking into another U_h:
    a uniform head is linear, ``mean_i x_i^T v^(g)``, so U_h sees head h plus a linear term, which
    the C.1 identities cannot see.  ``how``: ``flip`` (the leak is ``-2 v^(h)``: U_h then sees, at
    N <= 2, exactly the flipped head ``(-W^(h), -v^(h))``, ``sec7/short-input-flip``, and only
    N = 3 differs, by O(scores^2)) or ``leak-v`` (a multiple of a basis vector of U_h); head h's W
    is scaled by 2^-j, j in {0, 2, 4, 8} (its scores at unit scale small) or {20, 30, 40, 44} (a small
    head among large ones when H = 3: ~1e-6..1e-13 of the third head's W, below the checks' former cap
    at eps^(1/2), issue 23).  h is returned: head h carries no leak, so a recovery must get it right.
    """
    heads, bases = draw(_orthogonal_targets(None, max_H, max_dh, 1.0).filter(lambda t: len(t[1]) >= 2))
    g, h = draw(st.permutations(range(len(bases))))[:2]
    heads = list(heads)
    how = draw(st.sampled_from(["flip", "leak-v"]))
    leak = -2 * heads[h][1] if how == "flip" else draw(st.sampled_from([1.0, 0.3, 0.05])) * bases[h][:, 0]
    t = draw(st.sampled_from([0.0, 5e-324, 1.11253693e-308, 1e-200, 1e-20]))
    heads[g] = (t * heads[g][0], heads[g][1] + leak)
    heads[h] = (np.ldexp(heads[h][0], -draw(st.sampled_from([0, 2, 4, 8, 20, 30, 40, 44]))), heads[h][1])
    return heads, bases, how, h


#: The leaks lambda of :func:`tiny_head_leaks` (0: a C.1 target, the control) and the exponents j of
#: head 1's W = 2^-j: SMALL_LEAK's neighbourhood (issues 22/23).
TINY_LEAKS = (-0.5, -0.05, -0.005, 0.0, 0.05)
TINY_EXPONENTS = (20, 32, 44)


@st.composite
def tiny_head_leaks(draw: st.DrawFn) -> tuple[list, list, str, int]:
    """``(heads, bases, how, 0)``: SMALL_LEAK's neighbourhood (issues 22/23; the format of
    :func:`uniform_leak_violations`).  d in {2, 3}, one-dimensional subspaces (coordinate axes or
    Cayley bases, :func:`~.maps.cayley_bases`): head 1 is ``(2^-j E_1 E_1^T, -E_1)``, j in
    :data:`TINY_EXPONENTS`; head 2 attends uniformly (``1e-20 E_2 E_2^T``) with ``v = -E_2 + lambda
    v^(1)``, lambda in :data:`TINY_LEAKS`; for d = 3 head 3 is the unit head ``(E_3 E_3^T, -E_3)``.
    To first order in head 1's W, U_1 then sees the C.1 head ``(W / (1 + lambda), (1 + lambda) v)``;
    only its scores at O(1) tell them apart.  ``how``: ``leak-v``, or ``c1`` for lambda = 0 (the
    control: a C.1 target).  Head 1 carries no leak, so a recovery must get it right."""
    d = draw(st.sampled_from([2, 3]))
    bases = (cayley_bases([1] * d, draw(matrices(d)), FLOAT64) if draw(st.booleans())
             else [np.eye(d)[:, i:i + 1] for i in range(d)])
    first = lift(np.array([[2.0 ** -draw(st.sampled_from(TINY_EXPONENTS))]]), np.array([-1.0]), bases[0])
    lam = draw(st.sampled_from(TINY_LEAKS))
    W2, v2 = lift(np.array([[1e-20]]), np.array([-1.0]), bases[1])
    heads = [first, (W2, v2 + lam * first[1])]
    heads += [lift(np.array([[1.0]]), np.array([-1.0]), E) for E in bases[2:]]
    return heads, bases, "leak-v" if lam else "c1", 0


def small_head_targets(max_H: int = 3, max_dh: int = 3) -> st.SearchStrategy[tuple[list, list]]:
    """``(heads, bases)``: an Assumption C.1 target (H >= 2) with one head's v scaled by
    ``10^-k``, k in 0..18 -- a small head among large ones, whose reduced oracle the other heads'
    rounding swamps (issue 23, item 1).

    Raises
    ------
    InvalidInputError
        Eagerly, if max_H is not in [2, 6] or max_dh not in [1, 6].
    """
    _check_optional_int("max_H", max_H, 2, 6)
    _check_optional_int("max_dh", max_dh, 1, 6)
    return _small_head(max_H, max_dh)


@st.composite
def _small_head(draw: st.DrawFn, max_H: int, max_dh: int) -> tuple[list, list]:
    heads, bases = draw(_orthogonal_targets(None, max_H, max_dh, 1.0).filter(lambda t: len(t[1]) >= 2))
    h = draw(st.integers(0, len(heads) - 1))
    W, v = heads[h]
    heads = list(heads)
    heads[h] = (W, v * 10.0 ** -draw(st.integers(0, 18)))
    return heads, bases


__all__ = [
    "SYMMETRIES",
    "multihead_params",
    "equivalent_multihead_pairs",
    "short_input_pairs",
    "orthogonal_heads_targets",
    "c1_violations",
    "uniform_leak_violations",
    "tiny_head_leaks",
    "small_head_targets",
]
