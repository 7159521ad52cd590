"""Public Hypothesis strategies for attention-recovery targets and probes.

Reuse them to attack your own learner::

    from hypothesis import given
    from attnproof import strategies as ast

    @given(ast.targets())
    def test_mine(target):
        W, v = target
        ...

    @given(ast.hostile_targets())
    def test_mine_survives(h):
        oracle = ValueOracle(h.model())  # h: W, v, c, beta, declared_rank, dps, family
        ...

All arrays are float64.  Scales are drawn as powers of ten so that the strategies reach the
edges of float64's useful range, not just the unit ball.

Every argument is checked when the strategy is *built*, as ``hypothesis.extra.numpy`` does: a
bad one raises :class:`~attnproof.errors.InvalidInputError` whose message names it, instead of
an obscure Hypothesis error (or a silently wrong label) at draw time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from .arith import FLOAT64, MP, Arith
from .errors import InvalidInputError
from .models import Attention
from .oracles import ADVERSARIES

#: Widths the default strategies draw from.
MIN_D, MAX_D = 1, 12

#: Decimal exponents of the scales of W and v inside which float64 recovery is claimed.
SUPPORTED_LOG10_SCALE = (-100, 100)

#: Decimal exponents a power-of-ten scale may take: 10^e is a normal, finite float64.
SCALE_LOG10_RANGE = (-307, 308)

#: sigma(t) = 1 / (1 + e^-t) rounds to exactly 1.0 in float64 for t above this (e^-t < 2^-54).
SATURATION_LOGIT = 54 * math.log(2.0)

_unit = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
_seeds = st.integers(0, 2**32 - 1)


# --- argument checks (eager, named) -----------------------------------------------------


def _fail(name: str, expected: str, got: Any) -> InvalidInputError:
    return InvalidInputError(f"{name} must be {expected}; got {got!r}")


def _check_int(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    """A Python or numpy integer (not a bool) in [lo, hi]."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not ok or value < lo or (hi is not None and value > hi):
        raise _fail(name, f"an integer >= {lo}" + (f" and <= {hi}" if hi is not None else ""), value)
    return int(value)


def _check_float(name: str, value: Any, lo: float, hi: float = math.inf, lo_open: bool = False) -> float:
    """A finite real number (not a bool) in [lo, hi] (or (lo, hi] when ``lo_open``)."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if not ok or not math.isfinite(value) or value > hi or value < lo or (lo_open and value == lo):
        raise _fail(name, f"a finite number in {'(' if lo_open else '['}{lo}, {hi}]", value)
    return float(value)


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise _fail(name, "a bool", value)
    return bool(value)


def _check_strategy(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, st.SearchStrategy):
        raise _fail(name, "None or a Hypothesis strategy", value)


def _check_order(lo_name: str, lo: float, hi_name: str, hi: float) -> None:
    if lo > hi:
        raise InvalidInputError(f"{lo_name} = {lo!r} must be <= {hi_name} = {hi!r}")


def _check_names(name: str, value: Any, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A non-empty sequence (not a string) of names from ``allowed``."""
    names = () if isinstance(value, str) else tuple(value)
    if not names or any(x not in allowed for x in names):
        raise _fail(name, f"a non-empty sequence of names from {allowed}", value)
    return names


def _drawn_width(draw: st.DrawFn, d: st.SearchStrategy[int] | None, lo: int = 1) -> int:
    """A width drawn from ``d`` (default :func:`dims`), checked: a strategy yields bad values lazily."""
    n = draw(d if d is not None else dims(lo))
    if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)) or n < lo:
        raise InvalidInputError(f"d drew the width {n!r}; widths here must be integers >= {lo}")
    return int(n)


# --- widths, scales, vectors, matrices ------------------------------------------------


def dims(min_d: int = MIN_D, max_d: int = MAX_D) -> st.SearchStrategy[int]:
    """Token widths d in [min_d, max_d] (min_d >= 1)."""
    lo, hi = _check_int("min_d", min_d, 1), _check_int("max_d", max_d, 1)
    _check_order("min_d", lo, "max_d", hi)
    return st.integers(lo, hi)


def scales(lo: int = -6, hi: int = 6) -> st.SearchStrategy[float]:
    """Powers of ten 10^lo .. 10^hi (W's and v's magnitudes), lo and hi in SCALE_LOG10_RANGE."""
    lo = _check_int("lo", lo, *SCALE_LOG10_RANGE)
    hi = _check_int("hi", hi, *SCALE_LOG10_RANGE)
    _check_order("lo", lo, "hi", hi)
    return st.integers(lo, hi).map(lambda e: 10.0**e)


def vectors(
    d: int, scale: float = 1.0, sparse: bool = False, nonzero: bool = True
) -> st.SearchStrategy[np.ndarray]:
    """A vector of width d >= 1 with entries in [-scale, scale]; ``sparse`` zeroes a random subset.

    ``nonzero=True`` guarantees v != 0 (at least one entry of magnitude >= scale / 2).
    ``scale`` is a finite number > 0.
    """
    return _vectors(
        _check_int("d", d, 1),
        _check_float("scale", scale, 0.0, lo_open=True),
        _check_bool("sparse", sparse),
        _check_bool("nonzero", nonzero),
    )


@st.composite
def _vectors(draw: st.DrawFn, d: int, scale: float, sparse: bool, nonzero: bool) -> np.ndarray:
    v = draw(arrays(np.float64, d, elements=_unit)) * scale
    if sparse:
        mask = draw(arrays(np.bool_, d))
        v = np.where(mask, 0.0, v)
    if nonzero:
        i = draw(st.integers(0, d - 1))
        v[i] = draw(st.sampled_from([-1.0, 1.0])) * draw(st.floats(0.5, 1.0)) * scale
    return v


def matrices(d: int, scale: float = 1.0) -> st.SearchStrategy[np.ndarray]:
    """A d x d matrix (d >= 1) with entries in [-scale, scale] (zeros, repeats and extremes included)."""
    d, scale = _check_int("d", d, 1), _check_float("scale", scale, 0.0, lo_open=True)
    return arrays(np.float64, (d, d), elements=_unit).map(lambda M: M * scale)


# --- targets ----------------------------------------------------------------------------


def targets(
    d: st.SearchStrategy[int] | None = None,
    w_scale: st.SearchStrategy[float] | None = None,
    v_scale: st.SearchStrategy[float] | None = None,
    sparse_v: st.SearchStrategy[bool] | None = None,
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """Identifiable targets (W, v) with v != 0, over widths and scales.

    Every argument is ``None`` (the default strategy) or a strategy: ``d`` of widths >= 1,
    ``w_scale`` and ``v_scale`` of scales > 0 (e.g. :func:`scales`), ``sparse_v`` of bools.
    """
    for name, value in (("d", d), ("w_scale", w_scale), ("v_scale", v_scale), ("sparse_v", sparse_v)):
        _check_strategy(name, value)
    return _targets(d, w_scale, v_scale, sparse_v)


@st.composite
def _targets(
    draw: st.DrawFn,
    d: st.SearchStrategy[int] | None,
    w_scale: st.SearchStrategy[float] | None,
    v_scale: st.SearchStrategy[float] | None,
    sparse_v: st.SearchStrategy[bool] | None,
) -> tuple[np.ndarray, np.ndarray]:
    n = _drawn_width(draw, d)
    ws = draw(w_scale if w_scale is not None else scales())
    vs = draw(v_scale if v_scale is not None else scales())
    sparse = draw(sparse_v if sparse_v is not None else st.booleans())
    return draw(matrices(n, ws)), draw(vectors(n, vs, sparse=sparse))


def zero_v_targets(
    d: st.SearchStrategy[int] | None = None,
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """Non-identifiable targets: any W, v = 0 (Thm 4.1's excluded case); ``d``: widths >= 1."""
    _check_strategy("d", d)
    return _zero_v_targets(d)


@st.composite
def _zero_v_targets(draw: st.DrawFn, d: st.SearchStrategy[int] | None) -> tuple[np.ndarray, np.ndarray]:
    n = _drawn_width(draw, d)
    return draw(matrices(n, draw(scales()))), np.zeros(n)


def low_rank_targets(
    d: st.SearchStrategy[int] | None = None, rank: int | None = None
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, int]]:
    """(W, v, r) with W = K^T Q, K and Q of shape (r, d), so rank(W) <= r <= d (Sec. 5).

    ``r`` is the rank bound a learner is told: Hypothesis factors (zeros, repeats, tiny and
    huge entries) can make rank(W) smaller.  ``rank`` fixes r (an integer >= 0); then the
    default widths start at max(r, 1), and a width drawn from ``d`` below r raises
    :class:`InvalidInputError`.  Use :func:`hostile_targets` for a rank that is exact.
    """
    _check_strategy("d", d)
    r = None if rank is None else _check_int("rank", rank, 0)
    if d is None and r is not None:
        d = dims(max(r, 1), max(r, MAX_D))
    return _low_rank_targets(d, r)


@st.composite
def _low_rank_targets(
    draw: st.DrawFn, d: st.SearchStrategy[int] | None, rank: int | None
) -> tuple[np.ndarray, np.ndarray, int]:
    n = _drawn_width(draw, d, max(rank or 1, 1))
    r = rank if rank is not None else draw(st.integers(0, n))
    K = draw(arrays(np.float64, (r, n), elements=_unit))
    Q = draw(arrays(np.float64, (r, n), elements=_unit))
    return K.T @ Q, draw(vectors(n)), r


def degenerate_probes(v: np.ndarray) -> st.SearchStrategy[tuple[np.ndarray, int]]:
    """An invertible probe matrix Z whose row ``l`` has u_l^T v = 0 exactly (in float64).

    The bad row is ``u = v_k e_i - v_i e_k``: ``u^T v = v_k v_i - v_i v_k`` is exactly 0 when
    summed from rounded products, ``(u * v).sum()``; a dot product with a fused multiply-add
    (BLAS) may leave the rounding error of one product, at most eps |v_i v_k| / 2.
    ``v`` must be a finite float vector of width d >= 2 with v != 0.
    """
    arr = np.asarray(v)
    if arr.ndim != 1 or arr.dtype.kind not in "iuf" or len(arr) < 2:
        raise _fail("v", "a 1-d numeric array of width d >= 2", v)
    if not np.all(np.isfinite(arr)) or not np.any(arr != 0):
        raise _fail("v", "finite and non-zero", v)
    return _degenerate_probes(arr.astype(np.float64))


@st.composite
def _degenerate_probes(draw: st.DrawFn, v: np.ndarray) -> tuple[np.ndarray, int]:
    d = len(v)
    i, k = draw(st.lists(st.integers(0, d - 1), min_size=2, max_size=2, unique=True))
    assume(v[i] != 0 or v[k] != 0)
    Z = draw(arrays(np.float64, (d, d), elements=st.floats(-1, 1).filter(lambda x: abs(x) > 1e-3)))
    l = draw(st.integers(0, d - 1))
    Z[l] = 0.0
    Z[l, i], Z[l, k] = v[k], -v[i]
    assume(np.linalg.cond(Z) < 1e8)
    return Z, l


def margin_targets(
    d: st.SearchStrategy[int] | None = None,
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, float, float]]:
    """(W*, v*, W, mu) satisfying Thm 6.1's assumptions, pushed to their edges.

    ``||W*||_F <= W`` (often exactly at the bound, often concentrated on one or two entries of
    one column), ``W >= 2``; ``||v*||_2 <= 1`` with a random support whose non-zero entries
    have magnitude >= mu (often exactly mu), and mu as large as the support allows.
    ``d``: widths >= 1 (default 1..10).
    """
    _check_strategy("d", d)
    return _margin_targets(d if d is not None else st.integers(1, 10))


@st.composite
def _margin_targets(
    draw: st.DrawFn, d: st.SearchStrategy[int]
) -> tuple[np.ndarray, np.ndarray, float, float]:
    n = _drawn_width(draw, d)
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


# --- hostile targets --------------------------------------------------------------------

#: The families :func:`hostile_targets` draws from (magnitudes up to the rounding of 10.0**e).
HOSTILE_FAMILIES = (
    "mixed-scales",  # |W_ij| in [1e-150, 1e150), both ends in one W (d >= 2)
    "tiny-W",  # every |W_ij| in [1e-150, 1e-100)
    "huge-W",  # every |W_ij| in [1e100, 1e150)
    "zero-W-tiny-v",  # W = 0, v with entries ~ 1e-150 .. 1e-100
    "huge-bias",  # score bias |c_i| ~ 1e8 .. 1e12, offset |beta| <= 1e15
    "under-declared-rank",  # rank(W) = declared_rank + 1, last singular value 1e-12 .. 1 relative
    "near-singular-v",  # one entry of v dominates the others by 1e6 .. 1e16
    "low-precision",  # a target to be evaluated in mpmath at 5 .. 15 digits
)


@dataclass(frozen=True)
class HostileTarget:
    """A target drawn by :func:`hostile_targets`, with what a test needs to attack a learner.

    Attributes
    ----------
    family : str
        One of :data:`HOSTILE_FAMILIES`.
    W, v : numpy.ndarray
        The target, float64, shapes (d, d) and (d,).
    c, beta : numpy.ndarray or None, float or None
        Score bias and value offset (only the ``huge-bias`` family has them).
    declared_rank : int
        The rank bound to tell a rank-taking learner: rank(W) <= declared_rank, except in
        ``under-declared-rank`` where rank(W) = declared_rank + 1 on purpose.
    rank : int or None
        rank(W) when the construction fixes it (``under-declared-rank``, ``zero-W-tiny-v``).
    dps : int or None
        Working precision (decimal digits) of the ``low-precision`` family.
    """

    family: str
    W: np.ndarray
    v: np.ndarray
    declared_rank: int
    c: np.ndarray | None = None
    beta: float | None = None
    rank: int | None = None
    dps: int | None = None

    @property
    def d(self) -> int:
        """Token width."""
        return len(self.v)

    @property
    def arith(self) -> Arith:
        """The arithmetic the target is meant to be evaluated in: MP(dps) or FLOAT64."""
        return MP(self.dps) if self.dps is not None else FLOAT64

    def model(self) -> Attention:
        """The target as an :class:`~attnproof.models.Attention` head in :attr:`arith`."""
        return Attention(self.W, self.v, self.arith, c=self.c, beta=self.beta)


def _log_uniform(lo_exp: float, hi_exp: float) -> st.SearchStrategy[float]:
    """10^e for e uniform in [lo_exp, hi_exp] (mantissas included, not just powers of ten)."""
    return st.floats(lo_exp, hi_exp).map(lambda e: 10.0**e)


def _signed(draw: st.DrawFn, magnitudes: np.ndarray) -> np.ndarray:
    signs = draw(arrays(np.bool_, magnitudes.shape))
    return np.where(signs, -magnitudes, magnitudes)


def _with_singular_values(s: np.ndarray, d: int, rng: np.random.Generator) -> np.ndarray:
    """U diag(s) V^T with U, V random (d, len(s)) orthonormal factors (Householder QR).

    The rank is exactly ``len(s)`` when every s_k > 0 (up to rounding of order d eps s_max).
    """
    k = len(s)
    U = np.linalg.qr(rng.standard_normal((d, d)))[0][:, :k]
    V = np.linalg.qr(rng.standard_normal((d, d)))[0][:, :k]
    return (U * s) @ V.T


def hostile_targets(
    d: st.SearchStrategy[int] | None = None, families: Sequence[str] | None = None
) -> st.SearchStrategy[HostileTarget]:
    """Targets built to break learners: extreme and mixed scales, huge biases, a rank larger
    than declared, a near-singular v, low working precision.

    A correct learner either recovers such a target within its reported error bound or raises
    a typed :mod:`attnproof.errors` exception; it never returns a silently wrong answer.

    Parameters
    ----------
    d : strategy of int, optional
        Widths >= 1 (default :func:`dims`).
    families : sequence of str, optional
        A non-empty subset of :data:`HOSTILE_FAMILIES` (default: all of them).

    Returns
    -------
    strategy of HostileTarget
    """
    _check_strategy("d", d)
    chosen = HOSTILE_FAMILIES if families is None else _check_names("families", families, HOSTILE_FAMILIES)
    return _hostile_targets(d, chosen)


@st.composite
def _hostile_targets(
    draw: st.DrawFn, d: st.SearchStrategy[int] | None, families: tuple[str, ...]
) -> HostileTarget:
    n = _drawn_width(draw, d)
    family = draw(st.sampled_from(families))
    W, v = draw(matrices(n)), draw(vectors(n))
    mantissas = _signed(draw, draw(arrays(np.float64, (n, n), elements=st.floats(1.0, 9.999))))
    if family == "mixed-scales":
        exps = draw(arrays(np.int64, (n, n), elements=st.integers(-150, 149)))
        if n > 1:  # both ends present in the same W
            exps.flat[draw(st.permutations(range(n * n)))[:2]] = [-150, 149]
        return HostileTarget(family, mantissas * 10.0**exps, v, declared_rank=n)
    if family in ("tiny-W", "huge-W"):
        exp = draw(st.integers(-150, -101) if family == "tiny-W" else st.integers(100, 149))
        return HostileTarget(family, mantissas * 10.0**exp, v, declared_rank=n)
    if family == "zero-W-tiny-v":
        return HostileTarget(family, np.zeros((n, n)), v * 10.0 ** -draw(st.integers(100, 150)), 0, rank=0)
    if family == "huge-bias":
        c = _signed(draw, draw(arrays(np.float64, n, elements=_log_uniform(8, 12))))
        beta = draw(st.floats(-1e15, 1e15))
        return HostileTarget(family, W, v, declared_rank=n, c=c, beta=beta)
    if family == "under-declared-rank":
        r = draw(st.integers(0, n - 1))
        last = draw(_log_uniform(-12, 0))  # relative to s_1 <= 1: s_{r+1} / s_1 in [1e-12, 1]
        top = draw(arrays(np.float64, r, elements=st.floats(1e-3, 1.0)))
        s = np.append(np.sort(np.maximum(top, last))[::-1], last)
        rng = np.random.default_rng(draw(_seeds))
        return HostileTarget(family, _with_singular_values(s, n, rng), v, declared_rank=r, rank=r + 1)
    if family == "near-singular-v":
        i = draw(st.integers(0, n - 1))
        v = v * 10.0 ** -draw(st.integers(6, 16))
        v[i] = draw(st.sampled_from([-1.0, 1.0]))
        return HostileTarget(family, W, v, declared_rank=n)
    return HostileTarget(family, W, v, declared_rank=n, dps=draw(st.integers(5, 15)))  # low-precision


# --- oracles and saturation -------------------------------------------------------------


def adversarial_oracles(
    min_log10_tau: float = -12, max_log10_tau: float = -1, adversaries: Sequence[str] = ADVERSARIES
) -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments for :class:`~attnproof.oracles.ApproxOracle`: ``tau``, ``adversary``, ``seed``.

    ``tau = 10^e`` with e uniform in [min_log10_tau, max_log10_tau] (within float64's normal
    range), ``adversary`` from a non-empty subset of :data:`~attnproof.oracles.ADVERSARIES`,
    ``seed`` in [0, 2^32).  Use as ``ApproxOracle(model, **params)``.
    """
    lo = _check_float("min_log10_tau", min_log10_tau, -300.0, 300.0)
    hi = _check_float("max_log10_tau", max_log10_tau, -300.0, 300.0)
    _check_order("min_log10_tau", lo, "max_log10_tau", hi)
    chosen = _check_names("adversaries", adversaries, ADVERSARIES)
    return st.fixed_dictionaries(
        {"tau": _log_uniform(lo, hi), "adversary": st.sampled_from(chosen), "seed": _seeds}
    )


def saturated_logit_targets(
    d: st.SearchStrategy[int] | None = None, below: float = 16.0, above: float = 4.0
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """Targets (W, v) whose basis-probe logits sit at float64's sigmoid saturation.

    Thm 4.1's basis probes [e_l + e_j ...; e_j] have the logits W_lj (and sums of two entries),
    so every entry here has |W_lj| in [SATURATION_LOGIT - below, SATURATION_LOGIT + above]:
    1 - sigma(|W_lj|) <= e^below 2^-54 (2^-31 at the default below = 16), so sigma resolves
    the logit to at most ~22 of float64's 53 bits, and from SATURATION_LOGIT on it rounds to
    exactly 1.0.  ``below`` lies in [0, SATURATION_LOGIT), ``above`` in [0, 700]; v is a
    generic vector (v != 0).
    """
    _check_strategy("d", d)
    lo = SATURATION_LOGIT - _check_float("below", below, 0.0, SATURATION_LOGIT)
    if lo <= 0:
        raise _fail("below", f"< SATURATION_LOGIT = {SATURATION_LOGIT}", below)
    hi = SATURATION_LOGIT + _check_float("above", above, 0.0, 700.0)
    return _saturated_logit_targets(d, lo, hi)


@st.composite
def _saturated_logit_targets(
    draw: st.DrawFn, d: st.SearchStrategy[int] | None, lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray]:
    n = _drawn_width(draw, d)
    W = _signed(draw, draw(arrays(np.float64, (n, n), elements=st.floats(lo, hi))))
    return W, draw(vectors(n))


def bad_queries(d: int) -> st.SearchStrategy[np.ndarray]:
    """Malformed queries for a width-d model (d >= 1): wrong rank, wrong width, N = 0, or NaN/inf."""
    return _bad_queries(_check_int("d", d, 1))


@st.composite
def _bad_queries(draw: st.DrawFn, d: int) -> np.ndarray:
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
    "SCALE_LOG10_RANGE",
    "SATURATION_LOGIT",
    "HOSTILE_FAMILIES",
    "HostileTarget",
    "dims",
    "scales",
    "vectors",
    "matrices",
    "targets",
    "zero_v_targets",
    "low_rank_targets",
    "degenerate_probes",
    "margin_targets",
    "hostile_targets",
    "adversarial_oracles",
    "saturated_logit_targets",
    "bounded_matrices",
    "bad_queries",
]
