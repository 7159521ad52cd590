"""Theorem 4.1: exact recovery of single-head attention with d + d^2 value queries.

Phase 1 (N = 1): ``f([x^T]) = x^T v`` whatever W is, so the d queries ``X = [e_i^T]`` read v.

Phase 2 (N = 2): for a probe u and a column j, ``X = [(u + e_j)^T; e_j^T]`` has scores with
``s_1 - s_2 = u^T w_j`` (``w_j = W e_j``), so the softmax is the sigmoid ``alpha = sigma(u^T w_j)``
(Eq. (1)) and the label is ``y = v_j + alpha (u^T v)``.  Inverting,
``u^T w_j = sigma^{-1}((y - v_j) / (u^T v))``; d independent probes u_1..u_d (the rows of Z)
give ``Z w_j = t`` and ``W = Z^{-1} T``.

Beyond the paper (float64 and mpmath only; sympy is exact and needs none of it):

* Probes are scaled by powers of two, ``X = c [(u + e_j)^T; e_j^T]`` with ``c = 2^k``: the logit
  becomes ``c^2 u^T w_j`` and the label ``c (v_j + alpha u^T v)``, with no rounding introduced.
  The learner learns the size of W from its first measurements (batches of growing size) and
  asks the rest at the scale they call for; a probe whose logit still saturates the sigmoid
  (``|c^2 u^T w_j| > accept``) is asked again with a smaller c (:mod:`attnproof.measure`).  Each
  extra query is counted and reported: a few for a target of any size, and none for most
  unit-scale targets, which cost exactly d + d^2 queries, as the theorem says.
* The default probes are a random orthogonal Z (O(d^2) to draw, no QR), balanced so that every
  |u^T v| = ||v|| / sqrt(d): cond(Z) = 1, where a Gaussian Z has cond(Z) ~ d and loses about
  log2(d) bits in the solve (d = 1024: 42.8 bits with Gaussian probes).
* Near-degenerate probes are avoided: the basis family pairs e_l with the pivot e_p whenever
  |v_l| < 10^-3 |v_p| (the paper does so only when v_l = 0; the result is exact either way),
  and Gaussian rows with |u^T v| < 10^-1 ||v||_2 are redrawn (a redraw costs no query; the
  label error is amplified by ~ ||v|| / |u^T v|), as is a Gaussian Z with cond(Z) > 100 d.
* ``bias=True`` also recovers a real head's score bias c and output offset beta
  (:mod:`attnproof.theorems.bias`), with d + 1 more queries.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy as sp

from ...arith import FLOAT64, MP, SYMPY, Arith, norm2, split_rows
from ...errors import DegenerateProbeError, InvalidInputError, ShapeError
from ...measure import (
    UNDERFLOW, BilinearSession, Probes, ScalePolicy, balanced, effective_terms, random_orthogonal,
    value_errors,
)
from ...models import NAIVE, Attention, Rounding, scores
from ...oracles import RoundingAdversary, ValueOracle
from ...prelude import check_tolerance, prepare_probes, read_v
from ...verify.checkers import expand_matrix
from ...verify.formulas import recovery_checks, symbols
from ...verify.registry import LEARNERS, RunCheck as Check, Pair, identity, learner, run_check as run
from ...recovery import Recovery

#: The probe families :func:`probe_matrix` builds (a (d, d) array is the fifth way: custom).
PROBE_FAMILIES = ("orthogonal", "gaussian", "basis")
#: Basis family: u_l = e_l + e_p replaces e_l when |v_l| < DEGENERACY_RATIO max |v| (the paper
#: pairs only when v_l = 0; the result is exact either way, and a small |v_l| amplifies error).
DEGENERACY_RATIO = 1e-3
#: A Gaussian probe row u is redrawn when |u^T v| < GAUSSIAN_MARGIN * ||v||_2 (about 8 % of rows).
GAUSSIAN_MARGIN = 0.1
#: A Gaussian probe matrix is redrawn when cond(Z) > GAUSSIAN_COND * d (typical: a few d).
GAUSSIAN_COND = 100


@learner(
    name="exact",
    result="Thm 4.1",
    relies_on=(
        "thm4.1/one-token", "thm4.1/softmax-to-sigmoid", "thm4.1/score-difference", "thm4.1/label-affine",
        "thm4.1/end-to-end-d2", "thm4.1/end-to-end-d3", "thm4.1/end-to-end-paired", "thm4.1/end-to-end-bias",
        "thm4.1/probes-all-d", "thm4.1/query-count", "thm4.1/run-high-precision", "thm4.1/run-tight",
        "bias/score-expansion", "bias/value-offset", "bias/zero-token", "bias/zero-last-token",
        "bias/expansion-all-d",
    ),
    arithmetics=("float64", "mpmath", "sympy"),
    queries="d + d^2 (+ d + 1 with biases)",
    count=lambda d, bias=False, **_: d + d * d + (d + 1 if bias else 0),
)
def learn_exact(
    oracle: ValueOracle,
    *,
    probes: str | Any = "orthogonal",
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    policy: ScalePolicy | None = None,
    max_batch_bytes: int = 2**28,
    bias: bool = False,
    rtol: float | None = None,
) -> Recovery:
    """Recover (W*, v*) from a value oracle (Thm 4.1).

    Runs unchanged in float64, mpmath and sympy (exact: no rescaling, no error bound needed).

    Parameters
    ----------
    oracle : ValueOracle
        Answers f*(X); the learner sees nothing else.
    probes : {"orthogonal", "gaussian", "basis"} or array of shape (d, d)
        The probe rows u_1..u_d: a random orthogonal Z balanced against v (the default: cond(Z)
        = 1, so no measurement error is amplified by the solve; needs ``rng``), i.i.d. N(0, I)
        (needs ``rng``; cond(Z) ~ d costs about log2(d) bits), the paper's deterministic
        ``e_l`` / ``e_l + e_p``, or a user-supplied invertible matrix Z.
    rng : numpy.random.Generator, optional
        Source of the orthogonal and Gaussian probes.
    arith : Arith
        Arithmetic the learner computes in (float64, mpmath, sympy).
    policy : ScalePolicy, optional
        Probe-scaling policy (numeric arithmetics only).
    max_batch_bytes : int
        Upper bound on the size of one batch of float64 probes sent to the oracle.
    bias : bool
        The target is a head with biases (:mod:`attnproof.theorems.bias`): also recover the
        score bias c and the output offset beta, with d + 1 more queries.
    rtol : float, optional
        The promised accuracy (floating point): the a-posteriori bound on ||W_hat - W*||_F must
        be <= rtol ||W_hat||_F, else :class:`PrecisionLossError`.  Default: the resolution to
        the power 1/5 (6.6e-4 in float64, 10^(-dps/5) in mpmath): a worst-case certificate for a
        fifth of the digits (measured on random targets: with the orthogonal probes the true error
        is 23, 25 and 45 times below the bound at d = 64, 256 and 1024 against an oracle that
        declares faithful answers, :attr:`ValueOracle.rounding` -- the product ``Z^T M`` is formed
        by :func:`attnproof.arith.split_product`, whose rounding is bounded a posteriori near ``u
        ||W||`` where a plain product's worst case ``gamma_d |Z|^T |M|`` grew like d^(3/2) u: it
        was 64, 145 and 1.05e3 -- so the measured values' error model dominates; 9e2-5e3 times
        against naive answers; with the basis and Gaussian probes, solved by LU with the solve's
        error bounded from its residual (:meth:`attnproof.arith.Arith.solve_error`), 12-40 and
        65-270 times against faithful answers at d = 64-256).

    Returns
    -------
    Recovery
        W, v (c, beta), the number of queries used and diagnostics (probe family, redraws,
        rescaled probes, cond(Z), in floating point an a-posteriori error bound
        ``error_bound`` and an estimate ``error_estimate`` of ||W_hat - W*||_F, and ``time``).

    Raises
    ------
    NonIdentifiableError
        If v* = 0: f* is identically 0 and every W gives the same function.
    DegenerateProbeError
        If a user-supplied probe has u^T v* = 0 or Z is singular.
    PrecisionLossError
        If the arithmetic cannot resolve the target even with rescaled probes, or the
        a-posteriori error bound exceeds the learner's promise.

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof import Attention, ValueOracle, learn_exact
    >>> W, v = np.array([[1.0, -2.0], [0.5, 3.0]]), np.array([1.0, 2.0])
    >>> rec = learn_exact(ValueOracle(Attention(W, v)), probes="basis")
    >>> rec.queries, bool(np.allclose(rec.W, W, rtol=0, atol=1e-12))
    (6, True)
    """
    d = oracle.d
    rtol = check_tolerance("rtol", rtol, optional=True, zero=True)  # before any query
    session = BilinearSession(oracle, arith, policy or ScalePolicy(), max_batch_bytes,
                              learner=LEARNERS["exact"])
    with arith.context():
        beta, v = read_v(session, bias)
        with session.timed("basis"):
            Z, info = probe_matrix(probes, v, arith, rng)
            orthogonal = info["probes"] == "orthogonal"
            delta = _defect(arith.to_float(Z)) if orthogonal else math.inf
            Z_inv_norm, Z_norm = _norms(arith.to_float(Z), orthogonal, delta)
        session.diagnostics.update(info)
        probe_set, shorten = prepare_probes(session, Z, None, v, beta, bias, Z_inv_norm)
        entries = _all_entries(d)
        L, k = session.measure_adaptively(probe_set, entries)
        T = probe_set.values(L, k, entries[0]).reshape(d, d).T  # T[l, j] = u_l^T w_j (shortened u_l)
        solve = None  # the orthogonal family's solve error, computed for these M (and m)
        if orthogonal:  # (D Z)^{-1} = Z^T D^{-1}: a product, no LU
            M, m = T / shorten[:, None], probe_set.linear / shorten if bias else None
            (W, W_solve), (c, c_solve) = (
                (None, None) if b is None else arith.orthogonal_solve(Z, b, delta, Z_norm, Z_inv_norm)
                for b in (M, m))
            solve = (W_solve, c_solve)
        else:
            W = arith.solve(probe_set.P, T)
            c = arith.solve(probe_set.P, probe_set.linear) if bias else None
        W_error = None
        if not arith.exact:  # exact arithmetic has no rounding error to bound
            D = arith.to_float(shorten)  # the measured rows are D Z: ||(D Z)^{-1}|| <= ||Z^{-1}|| / min D
            norms = Z_inv_norm / D.min(), Z_norm * D.max()
            if not orthogonal:  # the solve's own error, from its residual (float64: verified)
                solve = tuple(None if x is None else arith.solve_error(probe_set.P, x, b, *norms)
                              for x, b in ((W, T), (c, probe_set.linear)))
            W_error, c_error, cond = _error_bound(probe_set, W, c, L, k, *norms, session.rounding, solve)
            estimate, terms = _error_estimate(probe_set, W, c, L, k, orthogonal, cond)
            session.diagnostics.update(cond_Z=cond, error_bound_c=c_error, error_estimate=estimate,
                                       error_estimate_terms=terms)
        return session.recovery(
            W=W, v=v, c=c, beta=beta if bias else None, W_error=W_error, rtol=rtol, bias=bias
        )


def probe_matrix(
    probes: str | Any, v: np.ndarray, arith: Arith, rng: np.random.Generator | None
) -> tuple[np.ndarray, dict[str, Any]]:
    """The probe rows Z = [u_1; ...; u_d] for Thm 4.1, and facts about them.

    Parameters
    ----------
    probes : {"gaussian", "basis"} or array of shape (d, d)
    v : array of shape (d,)
        The recovered v* (phase 1).
    arith : Arith
    rng : numpy.random.Generator, optional
        Needed for ``"gaussian"``.

    Returns
    -------
    Z : array of shape (d, d)
    info : dict
        ``probes`` (family), ``redrawn_rows`` (Gaussian), ``pivot`` and ``paired_rows`` (basis).
    """
    d = v.shape[0]
    if isinstance(probes, str):
        if probes == "basis":
            return _basis_probes(v, arith)
        if probes == "gaussian":
            return _gaussian_probes(v, arith, rng)
        if probes == "orthogonal":
            return _orthogonal_probes(v, arith, rng)
        raise InvalidInputError(
            f"unknown probe family {probes!r}: use 'orthogonal', 'gaussian', 'basis' or a (d, d) array"
        )
    Z = arith.asarray(probes)
    if Z.shape != (d, d):
        raise ShapeError(f"probe matrix must have shape ({d}, {d}); got {Z.shape}")
    arith.check_finite(Z, "probe matrix")
    row_norms = np.array([arith.norm(u) for u in Z])
    degenerate = np.flatnonzero(arith.negligible(Z @ v, 64 * d * arith.eps * arith.norm(v) * row_norms))
    if degenerate.size:
        raise DegenerateProbeError(
            f"probe u_{int(degenerate[0])} has u^T v* = 0: its two-token query carries no information "
            "about W (y = v_j whatever W is); choose u with u^T v* != 0"
        )
    if arith.is_singular(Z):
        raise DegenerateProbeError("the probe rows are linearly dependent: Z w_j = t has no unique solution")
    return Z, {"probes": "custom"}


def _basis_probes(v: np.ndarray, arith: Arith) -> tuple[np.ndarray, dict[str, Any]]:
    """The paper's deterministic probes: u_l = e_l, or e_l + e_p when v_l is (near) zero.

    The pivot p has the largest |v_p|; exact arithmetic pairs exactly the provable zeros only
    when every other entry is comparable (its magnitudes are 0 exactly for a provable zero).
    """
    d = v.shape[0]
    mags = arith.magnitudes(v)
    p = int(np.argmax(mags))
    paired = [l for l in range(d) if mags[l] < DEGENERACY_RATIO * mags[p]]
    Z = arith.eye(d)
    for l in paired:
        Z[l, p] = Z[l, p] + 1
    return Z, {"probes": "basis", "pivot": p, "paired_rows": len(paired)}


def _orthogonal_probes(
    v: np.ndarray, arith: Arith, rng: np.random.Generator | None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Random orthonormal probe rows (:func:`attnproof.measure.random_orthogonal`), balanced so
    that every ``|u^T v| = ||v|| / sqrt(d)`` (:func:`attnproof.measure.balanced`): cond(Z) = 1, so
    the solve amplifies no measurement error, and no row divides by a small u^T v.  A symbolic v
    has no numeric size: Z is then left unbalanced."""
    if not hasattr(rng, "standard_normal"):
        raise InvalidInputError("orthogonal probes need an explicit numpy.random.Generator (rng=...)")
    Z = random_orthogonal(v.shape[0], rng)
    if math.isfinite(arith.norm(v)):
        Z = balanced(Z, arith.to_float(v), rng)
    return arith.asarray(Z), {"probes": "orthogonal"}


def _gaussian_probes(
    v: np.ndarray, arith: Arith, rng: np.random.Generator | None, max_draws: int = 100
) -> tuple[np.ndarray, dict[str, Any]]:
    """i.i.d. N(0, I) probe rows; rows with |u^T v| < GAUSSIAN_MARGIN ||v|| are redrawn, and the
    whole matrix when cond(Z) > GAUSSIAN_COND d (redraws cost no query; they are counted)."""
    if not hasattr(rng, "standard_normal"):
        raise InvalidInputError("Gaussian probes need an explicit numpy.random.Generator (rng=...)")
    d = v.shape[0]
    Zf = rng.standard_normal((d, d))
    redrawn = 0
    for _ in range(max_draws):
        Z = arith.asarray(Zf)
        bad = np.flatnonzero(arith.negligible(Z @ v, GAUSSIAN_MARGIN * arith.norm(v)))
        if not bad.size and np.linalg.cond(Zf) < GAUSSIAN_COND * d:
            return Z, {"probes": "gaussian", "redrawn_rows": redrawn}
        if not bad.size:  # an ill-conditioned draw (cond(Z) amplifies every error): redraw it all
            bad = np.arange(d)
        Zf[bad] = rng.standard_normal((len(bad), d))
        redrawn += len(bad)
    raise DegenerateProbeError(f"no usable Gaussian probe matrix in {max_draws} draws")


def _all_entries(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(l, j) for every measurement, column-major: entry e = j * d + l."""
    j, l = np.divmod(np.arange(d * d), d)
    return l, j


def _defect(Z: np.ndarray) -> float:
    """An upper bound on Z's orthogonality defect ``||Z Z^T - I||_F`` (float64 Z, nonzero rows of
    normal scale), computed nearly exactly.

    Z = Z1 + Z2 (:func:`attnproof.arith.split_rows`, ``t = floor((51 - log2 d) / 2)``: row i of Z1
    is a multiple of ``2^(E_i - t)``, at most ``2^E_i``): every product and partial sum of entry
    (i, j) of ``Z1 Z1^T`` is a multiple of ``2^(E_i + E_j - 2t)``, at most ``d 2^(E_i + E_j) <=
    2^51`` such quanta, so BLAS forms it exactly in any order; only ``Z1 Z2^T + Z2 Z1^T + Z2 Z2^T``
    (``2^-t`` smaller) rounds, by at most
    ``gamma_d (2 |Z1| |Z2|^T + |Z2| |Z2|^T)`` entrywise (Higham, Eq. (3.13)), and the three
    additions to ``Z1 Z1^T - I`` by ``3 u`` of the result; the norm's sums by ``(d^2 + 2) u``.  A
    plain ``fl(Z Z^T)`` could only be bounded by ``gamma_d |Z| |Z|^T``, about ``0.64 d^2 u``: three
    orders of magnitude above the true defect at d = 1024.
    """
    d, u = Z.shape[0], FLOAT64.eps
    g = d * u / (1 - d * u)
    Z1, Z2 = split_rows(Z, int((51 - math.ceil(math.log2(max(d, 2)))) // 2))
    cross = Z1 @ Z2.T
    small = cross + cross.T + Z2 @ Z2.T
    D = (Z1 @ Z1.T - np.eye(d)) + small
    A1, A2 = np.abs(Z1), np.abs(Z2)
    allowance = g * (1 + 2 * g) * norm2((2 * (A1 @ A2.T) + A2 @ A2.T).reshape(-1))
    return float((norm2(D.reshape(-1)) * (1 + 3 * u) + allowance) * (1 + (d * d + 2) * u))


def _norms(Z: np.ndarray, orthogonal: bool, delta: float | None = None) -> tuple[float, float]:
    """Upper bounds on ||Z^{-1}||_2 and ||Z||_2 (float64 Z).

    For an orthogonal family one product instead of an SVD: with
    ``delta`` >= ``||Z Z^T - I||_F`` (:func:`_defect`, unless given) < 1/2, every singular value
    lies in ``[sqrt(1 - delta), sqrt(1 + delta)]``.  Otherwise float64's SVD, whose singular
    values are off by about ``u ||Z||_2`` (relative ``u cond(Z)`` for the smallest): the one
    estimate, not a bound, left in the bound of the basis and Gaussian families (open).
    """
    if orthogonal:
        delta = _defect(Z) if delta is None else delta
        if delta < 0.5:
            return 1 / math.sqrt(1 - delta), math.sqrt(1 + delta)
    sv = np.linalg.svd(Z, compute_uv=False)
    return float(1 / sv[-1]), float(sv[0])


def _error_bound(
    probes: Probes,
    W: np.ndarray,
    c: np.ndarray | None,
    L: np.ndarray,
    k: np.ndarray,
    inv_norm: float,
    norm: float,
    rounding: Rounding = NAIVE,
    solve: tuple[float, float | None] | None = None,
) -> tuple[float, float | None, float]:
    """First-order bounds on ||W_hat - W*||_F and ||c_hat - c*|| from rounding, and cond(Z).

    The measured T = Z W (Z = the probe rows) is off by the per-entry bound of
    :func:`attnproof.measure.value_errors`; ``||Z^{-1}||_2 ||dT||_F`` plus the solve's own
    rounding ``g cond(Z) ||W||_F`` bounds the error of W (and likewise of c from t = Z c), with
    ``inv_norm`` >= ||Z^{-1}||_2 and ``norm`` >= ||Z||_2.  The score of the probe for column j,
    ``(x_1 - x_2)^T W x_2`` with ``x_2 = s e_j``, rounds componentwise by ``g |x_1 - x_2|^T |W| |x_2|
    <= g ||x_1 - x_2|| s ||W e_j||``: each entry's model takes its column's norm ``||W e_j||``, not
    ``||W||_F`` (a factor up to sqrt(d) tighter, and still the same rounding model).  ``rounding``:
    the oracle's declaration (:attr:`attnproof.measure.BilinearSession.rounding`) for dT.
    ``solve``: the solve's own error for W (and c), as the caller computed it
    (:meth:`attnproof.arith.Arith.orthogonal_solve` for the orthogonal family,
    :meth:`attnproof.arith.Arith.solve_error` otherwise: in float64 both are rigorous a-posteriori
    bounds); None: the normwise first-order ``g cond(Z) ||W||_F`` of a backward-stable solve.
    """
    arith = probes.arith
    d = probes.d
    W_norm = arith.norm(W)
    c_norm = 0.0 if c is None else arith.norm(c)
    entries = _all_entries(d)
    # ||W e_j|| of each entry (l, j); norm2: a W* of 1e200 (1e-200) neither overflows (underflows) in squares
    columns = norm2(arith.to_float(W), axis=0)[entries[1]]
    dT = value_errors(probes, L, k, entries, columns, c_norm, rounding=rounding)
    cond = norm * inv_norm
    g = (d + 4) * arith.resolution
    W_solve, c_solve = solve if solve is not None else (g * cond * W_norm, g * cond * c_norm)
    bound = FLOAT64.norm(dT) * inv_norm + W_solve
    c_bound = None if c is None else FLOAT64.norm(probes.linear_err) * inv_norm + c_solve
    # each product of the norm and ||Z^{-1}|| may round down by 2^-1075 below float64's normal
    # range (an mpmath W* of 1e-293 has a bound of 1e-343: it rounded to 0, issue 23); the sums are
    # exact there, so one smallest subnormal more keeps the bound above the error
    bound, c_bound = bound + UNDERFLOW, None if c_bound is None else c_bound + UNDERFLOW
    return float(bound), c_bound, cond


def _error_estimate(
    probes: Probes,
    W: np.ndarray,
    c: np.ndarray | None,
    L: np.ndarray,
    k: np.ndarray,
    orthogonal: bool,
    cond: float,
) -> tuple[float, float]:
    """An estimate of ||W_hat - W*||_F (not a bound), and how many roundings it rests on.

    The typical rounding error of each measured value (:func:`attnproof.measure.value_errors`
    with ``Wq``), carried through ``W = Z^{-1} T`` in quadrature -- column l of Z^{-1} spreads
    the errors of row l of T, ``||Z^{-1} e_l||`` each (1 / shorten_l for the orthogonal family;
    else from Z^{-1}) -- plus ``eps cond(Z) ||W||_F`` for the solve (a backward-stable solve's
    forward error) and the final rounding.

    The second value is the effective number of measurements the estimate adds up
    (:func:`attnproof.measure.effective_terms` of their shares of the squared estimate; d^2 for
    equal shares).  An estimate is the error's typical size: from many independent roundings
    the error is close to it; from about one (a probe asked before the scale was known, at a
    logit 2^6 below the rest, carries 98 % of it) the error is one draw, which may fall 10 times
    below its typical size (a uniform rounding does so with probability 0.06).
    """
    arith = probes.arith
    d = probes.d
    Wf = arith.to_float(W)
    entries = _all_entries(d)
    columns = norm2(Wf, axis=0)  # ||W e_j||: q = e_j
    c_norm = 0.0 if c is None else arith.norm(c)
    sigma = value_errors(probes, L, k, entries, arith.norm(W), c_norm, Wq=columns[entries[1]])
    Zf = arith.to_float(probes.P)
    spread = 1 / np.linalg.norm(Zf, axis=1) if orthogonal else np.linalg.norm(np.linalg.inv(Zf), axis=0)
    shares = sigma.reshape(d, d) * spread  # entry e = j d + l, spread by ||Z^{-1} e_l||
    estimate = float(norm2(shares.reshape(-1)) + arith.resolution * cond * arith.norm(W))
    return estimate, effective_terms(np.square(shares / max(float(shares.max()), UNDERFLOW)))


# --- The identities this room relies on: proven about the library's own model and learner code
#: Widths at which the per-d identities are proven with fully symbolic W, v, x.
SMALL_D = range(1, 7)


def _unit(d: int, j: int) -> np.ndarray:
    e = np.zeros(d, dtype=object)
    e.fill(sp.Integer(0))
    e[j] = sp.Integer(1)
    return e


def _two_token_probe(u: np.ndarray, j: int) -> np.ndarray:
    """X = [(u + e_j)^T; e_j^T] (proof of Thm 4.1)."""
    e = _unit(len(u), j)
    return np.array([u + e, e], dtype=object)


@identity(
    id="thm4.1/one-token",
    scope="listed sizes: d = 1..6",
    paper="Thm 4.1, phase (i)",
    statement=r"f_{W,v}([x^\top]) = x^\top v \quad \text{(independent of } W)",
    assumptions="W real d x d, v and x real d-vectors; for every d = 1..6",
)
def one_token() -> list[Pair]:
    pairs: list[Pair] = []
    for d in SMALL_D:
        W, v, x = (
            symbols("W", (d, d), real=True), symbols("v", (d,), real=True), symbols("x", (d,), real=True)
        )
        pairs.append((Attention(W, v, SYMPY)(x[None, :]), x @ v))
    return pairs


@identity(
    id="thm4.1/softmax-to-sigmoid",
    scope="scalar",
    paper="Thm 4.1, Eq. (1)",
    statement=r"\mathrm{softmax}(s_1, s_2)_1 = \frac{e^{s_1}}{e^{s_1} + e^{s_2}} = \sigma(s_1 - s_2)",
    assumptions="s_1, s_2 real",
)
def softmax_to_sigmoid() -> list[Pair]:
    s1, s2 = sp.symbols("s_1 s_2", real=True)
    weights = SYMPY.softmax(np.array([s1, s2], dtype=object))
    sigma = 1 / (1 + sp.exp(-(s1 - s2)))
    return [(weights[0], sigma), (SYMPY.sigmoid(np.array([s1 - s2], dtype=object))[0], sigma)]


@identity(
    id="thm4.1/score-difference",
    scope="listed sizes: d = 1..6",
    paper="Thm 4.1, proof (ii)",
    statement=r"X = \begin{bmatrix}(u + e_j)^\top \\ e_j^\top\end{bmatrix} \Rightarrow "
    r"s_1 - s_2 = u^\top W e_j = u^\top w_j",
    assumptions="W real d x d, u real d-vector; for every d = 1..6 and every column j",
)
def score_difference() -> list[Pair]:
    pairs: list[Pair] = []
    for d in SMALL_D:
        W, u = symbols("W", (d, d), real=True), symbols("u", (d,), real=True)
        for j in range(d):
            s = scores(_two_token_probe(u, j)[None], W)[0]
            pairs.append((s[0] - s[1], u @ W[:, j]))
    return pairs


@identity(
    id="thm4.1/label-affine",
    scope="listed sizes: d = 1..3",
    paper="Thm 4.1, proof (ii)",
    statement=r"f_{W,v}\!\left(\begin{bmatrix}(u + e_j)^\top \\ e_j^\top\end{bmatrix}\right)"
    r" = v_j + \sigma(u^\top w_j)\,(u^\top v)",
    uses=("thm4.1/softmax-to-sigmoid", "thm4.1/score-difference"),
    assumptions="W real d x d, u, v real d-vectors; for every d = 1..3 and every column j",
)
def label_affine() -> list[Pair]:
    pairs: list[Pair] = []
    for d in range(1, 4):
        W, v, u = (
            symbols("W", (d, d), real=True), symbols("v", (d,), real=True), symbols("u", (d,), real=True)
        )
        model = Attention(W, v, SYMPY)
        for j in range(d):
            y = model(_two_token_probe(u, j))
            pairs.append((y, v[j] + (u @ v) / (1 + sp.exp(-(u @ W[:, j])))))
    return pairs

#: A dimension of symbolic size, for the identities proven for every d.
D = sp.Symbol("d", integer=True, positive=True)


def two_token_reduction() -> list[Pair]:
    """The scalar half of the all-d proofs: with scores s_1, s_2 and values p_1, p_2 of two
    tokens, ``softmax(s)^T p = p_2 + sigma(s_1 - s_2) (p_1 - p_2)``."""
    s1, s2, p1, p2 = sp.symbols("s_1 s_2 p_1 p_2", real=True)
    two = (sp.exp(s1) * p1 + sp.exp(s2) * p2) / (sp.exp(s1) + sp.exp(s2))
    return [(two, p2 + (p1 - p2) / (1 + sp.exp(-(s1 - s2))))]


@identity(
    id="thm4.1/probes-all-d",
    paper="Thm 4.1, proof (i) and (ii)",
    statement=r"\forall d:\ X = \begin{bmatrix}(u + e)^\top \\ e^\top\end{bmatrix} \Rightarrow "
    r"s_1 - s_2 = (u + e)^\top W e - e^\top W e = u^\top W e,\ "
    r"(u + e)^\top v - e^\top v = u^\top v;\ \text{with}\ \tfrac{e^{s_1}p_1 + e^{s_2}p_2}{e^{s_1} + e^{s_2}}"
    r" = p_2 + \sigma(s_1 - s_2)(p_1 - p_2):\ f_{W,v}(X) = e^\top v + \sigma(u^\top W e)\, u^\top v",
    uses=("thm4.1/softmax-to-sigmoid",),
    simplifier=expand_matrix,
    assumptions="W a d x d, u, e, v d x 1 MatrixSymbols of symbolic size d (any e, e_j included); "
    "s_i = x_i^T W x_N (Sec. 3); the scalar two-token reduction with s_1, s_2, p_1, p_2 real; the numeric "
    "cross-check draws d in 1..4; the library's own code at listed sizes: thm4.1/label-affine",
    scope="all d (MatrixSymbol algebra of symbolic size, and a proven scalar reduction)",
)
def probes_all_d() -> list[Pair]:
    W, u, e, v = (sp.MatrixSymbol(n, D, D if n == "W" else 1) for n in ("W", "u", "e", "v"))
    x1 = u + e
    return [
        (x1.T * W * e - e.T * W * e, u.T * W * e),
        (x1.T * v - e.T * v, u.T * v),
        *two_token_reduction(),
    ]


def _count(d: Any, bias: bool = False) -> Any:
    """The query count the learner registered (``LEARNERS["exact"].count``): one source."""
    return LEARNERS["exact"].count(d=d, bias=bias)


def _end_to_end(d: int, probe_matrices: list, zero: tuple[int, ...] = ()) -> list[Pair]:
    """Run the learner in sympy on a symbolic target through a symbolic oracle (v_i = 0 for i in
    ``zero``: the basis family then pairs e_i with the pivot)."""
    W = symbols("W", (d, d), real=True)
    v = symbols("v", (d,), real=True, nonzero=True)
    v[list(zero)] = sp.Integer(0)
    pairs: list[Pair] = []
    for probes in probe_matrices:
        oracle = ValueOracle(Attention(W, v, SYMPY))
        rec = learn_exact(oracle, probes=probes, arith=SYMPY)
        if rec.queries != _count(d) or oracle.queries != rec.queries:
            raise AssertionError(f"learner used {rec.queries} queries, its registered count is {_count(d)}")
        if zero and rec.diagnostics.get("paired_rows") != len(zero):
            raise AssertionError(f"expected {len(zero)} paired probes; got {rec.diagnostics}")
        pairs.extend(zip(rec.W.reshape(-1), W.reshape(-1), strict=True))
        pairs.extend(zip(rec.v, v, strict=True))
    return pairs


_END_TO_END = dict(
    statement=r"\mathrm{learn\_exact}(\mathrm{VQ}_{W,v}) = (W, v) \text{ exactly, with } "
    r"d + d^2 \text{ queries}",
    uses=("thm4.1/one-token", "thm4.1/label-affine", "thm4.1/query-count"),
)


@identity(
    id="thm4.1/end-to-end-d2",
    paper="Thm 4.1",
    assumptions="d = 2; W: 4 real symbols, v: 2 nonzero real symbols; the paper's basis probes "
    "and the fixed rational probe matrix [[1, 2], [3, -1]]",
    scope="listed sizes: d = 2 (end to end)",
    **_END_TO_END,
)
def end_to_end_d2() -> list[Pair]:
    return _end_to_end(2, ["basis", [[1, 2], [3, -1]]])


@identity(
    id="thm4.1/end-to-end-d3",
    paper="Thm 4.1",
    assumptions="d = 3; W: 9 real symbols, v: 3 nonzero real symbols; the paper's basis probes",
    scope="listed sizes: d = 3 (end to end)",
    **_END_TO_END,
)
def end_to_end_d3() -> list[Pair]:
    return _end_to_end(3, ["basis"])


@identity(
    id="thm4.1/end-to-end-paired",
    paper="Thm 4.1, proof (ii): u = e_l + e_p when v_l = 0",
    assumptions="v_2 = 0 exactly (d = 3: v_1, v_3 nonzero real symbols) and v_1 = 0 (d = 2); W real "
    "symbols; the paper's basis probes, so the zero entry is probed with u = e_l + e_p",
    scope="listed sizes: d = 2, 3 (end to end)",
    **_END_TO_END,
)
def end_to_end_paired() -> list[Pair]:
    return _end_to_end(2, ["basis"], zero=(0,)) + _end_to_end(3, ["basis"], zero=(1,))


@identity(
    id="thm4.1/end-to-end-bias",
    paper="beyond the paper (real heads), via Thm 4.1",
    statement=r"\mathrm{learn\_exact}(\mathrm{VQ}_{W,c,v,\beta}, \mathrm{bias}) = (W, c, v, \beta) "
    r"\text{ exactly, with } d + d^2 + (d + 1) \text{ queries}",
    uses=("bias/zero-token", "bias/zero-last-token", "thm4.1/label-affine", "thm4.1/query-count"),
    assumptions="d = 2, 3; W, c real symbols, v nonzero real symbols, beta real; the basis probes; "
    "the learner's bias prelude (beta from f([0]), c from d zero-last-token probes) run in sympy",
    scope="listed sizes: d = 2, 3 (end to end)",
)
def end_to_end_bias() -> list[Pair]:
    pairs: list[Pair] = []
    beta = sp.Symbol("beta", real=True)
    for d in (2, 3):
        W, c = symbols("W", (d, d), real=True), symbols("c", (d,), real=True)
        v = symbols("v", (d,), real=True, nonzero=True)
        oracle = ValueOracle(Attention(W, v, SYMPY, c=c, beta=beta))
        rec = learn_exact(oracle, probes="basis", arith=SYMPY, bias=True)
        if rec.queries != _count(d, bias=True) or oracle.queries != rec.queries:
            raise AssertionError(f"learner used {rec.queries} queries, its count is {_count(d, bias=True)}")
        pairs += list(zip(rec.W.reshape(-1), W.reshape(-1), strict=True))
        pairs += list(zip(rec.c, c, strict=True)) + list(zip(rec.v, v, strict=True))
        pairs.append((rec.beta, beta))
    return pairs


@identity(
    id="thm4.1/query-count",
    paper="Thm 4.1, proof (last line)",
    statement=r"\mathrm{count}(d) = d + d^2\ \text{(d one-row and } d^2 \text{ two-row probes)},\quad "
    r"\mathrm{count}(d, \mathrm{bias}) = d + d^2 + (d + 1)",
    assumptions="d a positive integer symbol; the learner's registered count (LEARNERS['exact'].count, "
    "which the CLI, the bench and the end-to-end entries read) evaluated on it",
    scope="all d (the count evaluated on a symbol)",
)
def query_count() -> list[Pair]:
    d = sp.Symbol("d", integer=True, positive=True)
    return [(_count(d), d + d**2), (_count(d, bias=True), d + d**2 + (d + 1))]


#: Fixed rational target of ``thm4.1/run-high-precision`` (d = 3): W*, v*, and the head's c*, beta*.
RUN_TARGET = (
    [[1, -2, sp.Rational(1, 2)], [sp.Rational(3, 4), 0, -1], [2, sp.Rational(1, 3), 1]],
    [1, sp.Rational(-1, 2), sp.Rational(2, 3)],
    [sp.Rational(1, 2), -1, sp.Rational(1, 4)],
    sp.Rational(-3, 2),
)
#: Digits of the mpmath runs; their errors must lie below 10^-(RUN_DPS - 10).
RUN_DPS = 50


@run(
    id="thm4.1/run-high-precision",
    paper="Thm 4.1",
    statement=r"\mathrm{learn\_exact}\ \text{in mpmath (50 digits)}: \|\hat W - W^\star\| \le 10^{-40}"
    r"\|W^\star\|;\ \text{in float64}: \|\hat W - W^\star\|_F \le \text{its error\_bound}",
    uses=("thm4.1/end-to-end-d3", "thm4.1/end-to-end-paired", "thm4.1/end-to-end-bias"),
    assumptions="the fixed rational target RUN_TARGET (d = 3), Gaussian probes (seed 0) and the basis "
    "probes, with and without biases (c*, beta*); the float64 and mpmath code paths (probe scaling, "
    "Gaussian redraws, the error bound) that the sympy proofs never take; queries = LEARNERS['exact'].count "
    "plus the re-asked queries the learner reports",
    scope="listed sizes: d = 3 (a fixed target)",
)
def run_high_precision() -> list[Check]:
    W0, v0, c0, beta0 = RUN_TARGET
    checks: list[Check] = []
    for arith, digits in ((MP(RUN_DPS), RUN_DPS - 10), (FLOAT64, None)):  # None: within its own bound
        for probes, bias in (("gaussian", False), ("basis", False), ("gaussian", True)):
            truth = {"W": arith.asarray(W0), "v": arith.asarray(v0)}
            if bias:
                truth.update(c=arith.asarray(c0), beta=arith.scalar(beta0))
            model = Attention(truth["W"], truth["v"], arith, c=truth.get("c"), beta=truth.get("beta"))
            rec = learn_exact(ValueOracle(model), probes=probes, rng=np.random.default_rng(0), arith=arith,
                              bias=bias)
            at = f"{arith.name}, {probes} probes{', bias' if bias else ''}"
            checks += recovery_checks(at, rec, truth, arith, digits)
            reasked = rec.diagnostics["reasked_queries"]  # a saturated probe asked again at a smaller scale
            checks.append((f"{at}: queries - (count(d) + re-asked {reasked})",
                           abs(rec.queries - _count(3, bias) - reasked), 0))
    return checks


class OpposedPreludeAdversary(RoundingAdversary):
    """:class:`~attnproof.oracles.RoundingAdversary` whose answers to the score-bias prelude's probes
    (a zero last token: :func:`attnproof.prelude.learn_score_bias`) are pushed the other way, towards
    a smaller weight, by the same amount.

    With biases each measured value of W* is ``(L - c^T p) / s``: pushed one way, the error of the
    probe's logit L and that of the prelude's ``c^T p`` partly cancel (``thm4.1/run-tight``: W's error
    with biases was 0.31 of ``error_bound``); opposed, they add (0.74).  c's own error is the same size
    either way.  Each such answer is ``y_0 - (y - y_0)`` (``y_0`` the model's own answer, ``y``
    RoundingAdversary's): its push, negated, to within one rounding of the answer.  Without biases no
    probe has a zero last token, and the two adversaries answer alike."""

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        y = super()._answer(Xb)
        if Xb.shape[1] != 2:
            return y
        y0 = np.asarray(self.model(Xb), dtype=np.float64)
        prelude = ~np.any(np.asarray(Xb[:, 1], dtype=np.float64), axis=1)
        return np.where(prelude, y0 - (y - y0), y)


#: Width of ``thm4.1/run-tight``'s target.  The naive model charges each dot product the oracle
#: forms ``(d + 4) u``, which :class:`RoundingAdversary` realizes, but the learner's own roundings
#: (alpha's two, the logit's two logarithms, its probe) ``O(u)`` whatever d, and no oracle answer
#: can realize those: at d = 3 they and the one-token answers' declared errors (which the adversary
#: leaves exact) held half of c's bound (c's error reached 0.498 of ``error_bound_c``, so a halved c
#: bound passed); at d = 16 the realized share dominates (0.82 on this target; the mean over the grid
#: targets of seeds 0-3: 0.70, 0.80, 0.85, 0.89 at d = 8, 16, 24, 32).
TIGHT_D = 16


def _grid_target(d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A generic head on the grid Z / 16: W* ~ N(0, 1/d), v* ~ N(0, I), c* ~ N(0, I/4) (seeded)
    rounded to multiples of 1/16, beta* = -1/2 -- exact binary fractions, the same rational
    numbers in every arithmetic."""
    rng = np.random.default_rng(seed)
    W, v, c = rng.standard_normal((d, d)) / math.sqrt(d), rng.standard_normal(d), rng.standard_normal(d) / 2
    return (*(np.round(16 * a) / 16 for a in (W, v, c)), -0.5)


#: Fixed target of ``thm4.1/run-tight``: W*, v*, and c*, beta* for the run with biases (d = TIGHT_D).
TIGHT_TARGET = _grid_target(TIGHT_D, seed=0)
#: ``thm4.1/run-tight``: the errors of W and c against :class:`OpposedPreludeAdversary` are at least
#: this fraction of ``error_bound`` and ``error_bound_c`` (measured: W 0.75, 0.74 with biases, c 0.82),
#: so a bound that drops a factor of 1.4 fails, and so does one inflated by 1/fraction.
TIGHT_FRACTION = 0.5


@run(
    id="thm4.1/run-tight",
    paper="Thm 4.1 (the float64 error bound)",
    statement=r"\mathrm{learn\_exact}\ \text{against answers off by the most its rounding model allows}:\ "
    r"\tfrac12 \mathrm{error\_bound} \le \|\hat W - W^\star\|_F \le \mathrm{error\_bound},\ "
    r"\tfrac12 \mathrm{error\_bound\_c} \le \|\hat c - c^\star\| \le \mathrm{error\_bound\_c}",
    uses=("thm4.1/label-affine", "bias/zero-last-token"),
    assumptions="float64; the fixed target TIGHT_TARGET (d = 16: W*, v*, c* drawn with seed 0 on the grid "
    "Z / 16, beta* = -1/2), orthogonal probes (seed 0), without and with biases (c*, beta*: the score-bias "
    "prelude of the bias room, and c's bound error_bound_c); the oracle OpposedPreludeAdversary pushes "
    "each two-token answer by the full label and score error of measure.value_errors' model (the "
    "prelude's the other way, so that its error and the probes' add in W), which at d = 16 dominates the "
    "learner's own roundings, so the bounds are nearly attained and a dropped factor fails",
    scope="listed sizes: d = 16 (a fixed target, an adversarial oracle)",
)
def run_tight() -> list[Check]:
    W0, v0, c0, beta0 = TIGHT_TARGET
    checks: list[Check] = []
    for bias in (False, True):
        model = Attention(W0, v0, FLOAT64, c=c0 if bias else None, beta=beta0 if bias else None)
        rec = learn_exact(OpposedPreludeAdversary(model), rng=np.random.default_rng(0), bias=bias)
        at = f"float64{', bias' if bias else ''}"
        # ratios against 1: the hash pins what is checked, not the measured numbers
        err, bound = float(np.linalg.norm(rec.W - model.W)), rec.diagnostics["error_bound"]
        checks += _nearly_attained(at, "||W_hat - W*||_F", "error_bound", err, bound)
        if bias:
            err, bound = float(np.linalg.norm(rec.c - model.c)), rec.diagnostics["error_bound_c"]
            checks += _nearly_attained(at, "||c_hat - c*||", "error_bound_c", err, bound)
    return checks


def _nearly_attained(at: str, error_name: str, bound_name: str, error: float, bound: float) -> list[Check]:
    """The two checks of a bound nearly attained: ``error / bound <= 1`` (it holds) and
    ``TIGHT_FRACTION bound / error <= 1`` (it is within 1 / TIGHT_FRACTION of the error), as ratios
    against the constant 1."""
    return [(f"{at}: {error_name} / {bound_name} <= 1", error / bound, 1.0),
            (f"{at}: {TIGHT_FRACTION} {bound_name} / {error_name} <= 1", TIGHT_FRACTION * bound / error, 1.0)]


__all__ = [
    "OpposedPreludeAdversary", "RoundingAdversary", "TIGHT_D", "TIGHT_FRACTION", "TIGHT_TARGET",
    "learn_exact", "probe_matrix", "PROBE_FAMILIES", "DEGENERACY_RATIO", "GAUSSIAN_MARGIN", "GAUSSIAN_COND",
]
