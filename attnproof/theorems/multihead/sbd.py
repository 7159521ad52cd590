"""The conjecture of App. C, executable: probe Hessians, simultaneous block diagonalisation (SBD),
and :func:`learn_multihead_sbd` (Hessians -> SBD -> Prop. C.2, the subspaces not given)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...arith import FLOAT64, Arith
from ...errors import (
    AssumptionError, InvalidInputError, PrecisionLossError, ShapeError, check_rng, check_tolerance,
)
from ...oracles import ValueOracle
from ...measure import Session
from ...verify.registry import LEARNERS, learner
from ...recovery import MultiHeadRecovery
from .orthogonal import DEFAULT_CHECKS, HEADS, check_count, heads_count, learn_orthogonal_heads
from .rotation import identity_count


def hessian_probe(z: np.ndarray, q: np.ndarray) -> np.ndarray:
    """App. C's probe ``X = [(z + q)^T; q^T]`` (the paper takes q = e_j)."""
    return np.stack([z + q, q])


def probe_hessian(heads: list[tuple[Any, Any]], q: Any, z: Any, arith: Arith) -> np.ndarray:
    """Closed form of ``nabla_z^2 F(z)`` for ``F(z) = f(hessian_probe(z, q)) - q^T sum_h v^(h)`` (App. C).

    ``U D_2 U^T + U D_1 V^T + V D_1 U^T`` with ``U = [W^(h) q]_h``, ``V = [v^(h)]_h``,
    ``D_1 = Diag(sigma'(U^T z))``, ``D_2 = Diag(sigma''(U^T z) * (V^T z))``; identity
    ``sec7/probe-hessian`` proves it equal to sympy's Hessian of the model code.  This is the
    *exact Hessian oracle* the paper assumes (it reads the parameters: experiments only).
    """
    with arith.context():
        q, z = arith.asarray(q), arith.asarray(z)
        U = np.stack([arith.asarray(W) @ q for W, _ in heads], axis=1)
        V = np.stack([arith.asarray(v) for _, v in heads], axis=1)
        sig = arith.sigmoid(z @ U)
        d1 = sig * (1 - sig)  # sigma'
        d2 = d1 * (1 - 2 * sig) * (z @ V)  # sigma'' (U^T z) * (V^T z)
        return (U * d2) @ U.T + (U * d1) @ V.T + (V * d1) @ U.T


def min_hessians(dh: int) -> int:
    """The necessity bound on K (module docstring, proven): 1 if d_h = 1, else max(2, d_h - 1)."""
    return 1 if dh == 1 else max(2, dh - 1)


def fd_queries(d: int) -> int:
    """Value queries of one central-difference Hessian: ``1 + 2 d + 4 d(d - 1)/2 = 2 d^2 + 1``."""
    return 2 * d * d + 1


def fd_hessian(ask: Callable[[Any], Any], q: Any, z: Any, step: Any, arith: Arith) -> np.ndarray:
    """``nabla^2 F(z)`` by central differences of value queries (App. C), ``2 d^2 + 1`` queries,
    asked as one batch of ``ask`` (a value oracle, or a learner's ``Session.ask``); d = len(q).

    Diagonal: ``(F(z + h e_a) - 2 F(z) + F(z - h e_a)) / h^2``; off-diagonal:
    ``(F(z + h e_a + h e_b) - F(z + h e_a - h e_b) - F(z - h e_a + h e_b) + F(z - h e_a - h e_b)) / (4 h^2)``.
    Truncation error O(h^2 ||f^(4)||), rounding O(eps |f| / h^2): ``h ~ eps^(1/4)`` balances them.
    """
    with arith.context():
        q, z, h = arith.asarray(q), arith.asarray(z), arith.scalar(step)
        d = q.shape[0]
        I = arith.eye(d) * h
        pairs = [(a, b) for a in range(d) for b in range(a + 1, d)]
        pts = [z] + [z + s * I[a] for a in range(d) for s in (1, -1)]
        pts += [z + s * I[a] + t * I[b] for a, b in pairs for s in (1, -1) for t in (1, -1)]
        y = arith.asarray(ask(np.stack([hessian_probe(p, q) for p in pts])))
        Hs = arith.zeros((d, d))
        for a in range(d):
            Hs[a, a] = (y[1 + 2 * a] - 2 * y[0] + y[2 + 2 * a]) / (h * h)
        for k, (a, b) in enumerate(pairs):
            pp, pm, mp_, mm = y[1 + 2 * d + 4 * k : 5 + 2 * d + 4 * k]
            Hs[a, b] = Hs[b, a] = (pp - pm - mp_ + mm) / (4 * h * h)
        return Hs


def _split_by_gaps(lam: np.ndarray, blocks: int, arith: Arith) -> list[np.ndarray]:
    """Indices of sorted eigenvalues cut at the ``blocks - 1`` largest gaps."""
    gaps = arith.to_float(np.diff(lam))
    cuts = np.sort(np.argsort(gaps, kind="stable")[len(gaps) - blocks + 1 :] + 1) if blocks > 1 else []
    return [idx for idx in np.split(np.arange(len(lam)), cuts)]


def _check_family(As: list[Any], arith: Arith) -> list[np.ndarray]:
    if not As:
        raise InvalidInputError("SBD needs at least one matrix")
    out = [arith.asarray(A) for A in As]
    d = out[0].shape[0]
    for A in out:
        if A.shape != (d, d):
            raise ShapeError(f"every matrix must be ({d}, {d}); got {A.shape}")
        arith.check_finite(A, "Hessian")
    return out


def commutator_map(As: list[np.ndarray]) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The matrix of ``X -> (X A_k - A_k X)_k`` on symmetric X (Murota et al. 2010's commutant).

    Column ``(a, b)`` (a <= b, in the returned order) is the image of ``S_ab = e_a e_b^T + e_b
    e_a^T`` (``e_a e_a^T`` when a = b), the K commutators stacked row-major: ``S_ab A`` has the rows
    ``A[b, :]`` at a and ``A[a, :]`` at b, ``A S_ab`` the columns ``A[:, a]`` at b and ``A[:, b]``
    at a.  Only additions of the entries: any element type (float64, mpf, sympy, flint's fmpq).
    Its null space is the symmetric commutant; under Assumption C.1 it contains every
    ``sum_h c_h P_h`` (``sec7/hessian-invariant``).
    """
    d = As[0].shape[0]
    idx = [(a, b) for a in range(d) for b in range(a, d)]
    cols = []
    for a, b in idx:
        parts = []
        for A in As:
            C = A * 0
            C[a, :] += A[b, :]
            C[:, b] -= A[:, a]
            if a != b:
                C[b, :] += A[a, :]
                C[:, a] -= A[:, b]
            parts.append(C.reshape(-1))
        cols.append(np.concatenate(parts))
    return np.stack(cols, axis=1), idx


def sbd_commutant(
    As: list[Any], rng: np.random.Generator, arith: Arith = FLOAT64, null_tol: float | None = None
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Finest simultaneous block diagonalisation of symmetric A_1..A_K via their commutant.

    The symmetric solutions X of ``X A_k - A_k X = 0`` for all k form the symmetric part of the
    commutant algebra (Murota, Kanno, Kojima and Kojima 2010).  Its dimension m is read off the
    largest gap of the singular values of the linear map ``X -> (X A_k - A_k X)_k`` on
    symmetric X; a random element ``sum_i c_i N_i`` of its null space has m distinct
    eigenvalues (generically, when the irreducible blocks are pairwise inequivalent) whose
    eigenspaces are the blocks.

    Parameters
    ----------
    As : list of symmetric (d, d) arrays
    rng : numpy.random.Generator
        For the generic element of the commutant.
    arith : Arith
        float64 or mpmath.
    null_tol : float, optional
        Singular values below ``null_tol * s_max`` count as zero (use it for noisy matrices,
        between their relative noise and 1); default: cut at the largest ratio of consecutive
        singular values, those below ``64 d eps s_max`` counted as equal.

    Returns
    -------
    bases : list of arrays (d, d_b)
        Orthonormal bases of the blocks (in ``arith``).
    info : dict
        ``commutant_dim`` m, ``null_gap`` (ratio of the singular values around the cut: large
        means a clear decision), ``block_sizes``.
    """
    As = _check_family(As, arith)
    d = As[0].shape[0]
    with arith.context():
        M, idx = commutator_map(As)
        s, null_basis = arith.right_singular(M)  # ascending
        sf = np.maximum(arith.to_float(s), 64 * d * arith.eps * max(float(arith.to_float(s).max()), 1e-300))
        ratios = sf[1:] / sf[:-1]
        m = int(np.argmax(ratios)) + 1 if null_tol is None else max(1, int(np.sum(sf < null_tol * sf.max())))
        c = arith.asarray(rng.standard_normal(m))
        x = null_basis[:, :m] @ c
        X = arith.zeros((d, d))
        for k, (a, b) in enumerate(idx):
            X[a, b] = X[b, a] = x[k]
        lam, Q = arith.eigh(X)
        groups = _split_by_gaps(lam, m, arith)
    bases = [Q[:, g] for g in groups]
    return bases, {
        "commutant_dim": m,
        "null_gap": float(ratios[m - 1]),
        "block_sizes": [len(g) for g in groups],
    }


def sbd_random_combination(
    As: list[Any], rng: np.random.Generator, tol: float = 1e-8
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """The widely used SBD heuristic (float64): eigenspaces of one random combination, joined.

    ``M = sum_k c_k A_k`` with Gaussian c; eigenvalues within ``tol ||M||`` of each other form one
    eigenspace; two eigenspaces are joined when some ``||Q_a^T A_k Q_b|| > tol ||A_k||``; the
    connected components are the blocks.  An eigenvalue shared by several true blocks (here:
    0, of multiplicity ``sum_h (d_h - 2)`` when ``d_h >= 3``) glues them together.
    """
    As = [np.asarray(A, dtype=np.float64) for A in _check_family(As, FLOAT64)]
    M = sum(c * A for c, A in zip(rng.standard_normal(len(As)), As))
    lam, Q = np.linalg.eigh(M)
    scale = max(float(np.abs(lam).max()), 1e-300)
    spaces = np.split(np.arange(len(lam)), np.flatnonzero(np.diff(lam) > tol * scale) + 1)
    n = len(spaces)
    parent = list(range(n))

    def root(a: int) -> int:
        while parent[a] != a:
            a = parent[a]
        return a

    for a in range(n):
        for b in range(a + 1, n):
            if any(
                np.linalg.norm(Q[:, spaces[a]].T @ A @ Q[:, spaces[b]]) > tol * max(np.linalg.norm(A), 1e-300)
                for A in As
            ):
                parent[root(b)] = root(a)
    comps: dict[int, list[int]] = {}
    for a in range(n):
        comps.setdefault(root(a), []).extend(spaces[a].tolist())
    bases = [Q[:, sorted(c)] for c in comps.values()]
    return bases, {
        "eigenspaces": n,
        "largest_eigenspace": max(len(s) for s in spaces),
        "block_sizes": sorted(len(c) for c in comps.values()),
    }


def subspace_error(bases: list[np.ndarray], truth: list[np.ndarray], arith: Arith = FLOAT64) -> float:
    """Largest sin(angle) between each true subspace and its best-matching found block
    (``||(I - P_found) E_true||_2``, computed in float64: floor ~1e-16), or ``inf`` if the
    block sizes differ."""
    if sorted(b.shape[1] for b in bases) != sorted(E.shape[1] for E in truth):
        return float("inf")
    worst = 0.0
    for E in truth:
        Ef = arith.to_float(E)
        best = min(
            float(np.linalg.norm(Ef - (Bf := arith.to_float(B)) @ (Bf.T @ Ef), 2))
            for B in bases
            if B.shape[1] == E.shape[1]
        )
        worst = max(worst, best)
    return worst


@learner(
    name="multihead-sbd",
    result="beyond the paper (App. C conjecture)",
    relies_on=(
        "sec7/probe-hessian",
        "sec7/hessian-at-zero",
        "sec7/hessian-invariant",
        "propC.2/one-head",
        "propC.2/reduced-head",
        "propC.2/end-to-end",
        "sec7/run-sbd",
    ),
    arithmetics=("float64", "mpmath"),
    queries="K (2 d^2 + 1) + sum_h (d_h + d_h^2) + max(checks, H) + 6 sum_{g<h} d_g d_h, K Hessians",
    count=lambda d, H=HEADS, K=None, checks=DEFAULT_CHECKS, dims=None, **_: (
        (K if K is not None else min_hessians(d // H)) * fd_queries(d) + heads_count(d, H, dims)
        + check_count(checks, len(dims) if dims else H)
        + identity_count(dims or [d // H] * H)
    ),
)
def learn_multihead_sbd(
    oracle: ValueOracle,
    *,
    hessians: int,
    rng: np.random.Generator,
    arith: Arith = FLOAT64,
    step: float | None = None,
    noise: float = 0.0,
    checks: int = DEFAULT_CHECKS,
) -> MultiHeadRecovery:
    """Learn an orthogonal-heads target *without* its subspaces: Hessians -> SBD -> Prop. C.2.

    ``hessians`` = K finite-difference Hessians of App. C's F at z = 0 with q = e_1..e_K
    (``2 d^2 + 1`` queries each), the commutant SBD (:func:`sbd_commutant`) of them, then
    :func:`learn_orthogonal_heads` in the blocks found, with its C.1 identities: the blocks are the
    heads' subspaces only up to the finite differences' rotation (~eps^(1/2)), which the identities
    measure and each head's bound carries (:mod:`.rotation`, first order): the bound holds for the
    answer, not only given the blocks (issue 23, item 5).  K must be at least ``max_h d_h - 1``
    (the necessity lemma of the module docstring; sufficiency certified for the bench's patterns).

    Parameters
    ----------
    oracle : ValueOracle
    hessians : int
        K, between 1 and d.
    rng : numpy.random.Generator
        For the generic commutant element and the check tokens.
    arith : Arith
        float64 or mpmath.
    step : float, optional
        Finite-difference step (default the power of two nearest ``eps^(1/4)``).
    noise : float
        Absolute error of the oracle's answers: at most the arithmetic's unit roundoff (the
        heads' bounds model rounding-level answers; above it no bound holds: refused).  Singular
        values of the commutant map below ``eps^(1/4)`` (relative) count as zero.
    checks : int
        Held-out length-3 queries (at least 1) across the blocks found
        (:func:`~.orthogonal.check_heads`, each head's bound as tolerance): blocks that are not
        the heads' subspaces (too few Hessians, a target violating C.1) are refused, not returned.

    Returns
    -------
    MultiHeadRecovery
        With diagnostics ``sbd`` (commutant facts), ``hessian_queries``, ``heads_queries``,
        ``sbd_residual`` (max relative off-block mass of the Hessians in the found blocks),
        ``error_bound``, ``error_bounds`` (per head, the blocks' rotation included),
        ``rotation_bound`` (the blocks' rotation, radians) and ``check_residual`` (worst residual
        over tolerance, <= 1).

    Raises
    ------
    InvalidInputError
        If ``hessians`` is not in [1, d], ``checks`` < 1 or ``noise`` not in [0, 1).
    PrecisionLossError
        Before any query, if ``noise`` exceeds the unit roundoff; or if a head's bound exceeds the
        default promise (resolution^(1/5)).
    AssumptionError
        If a check or the identities disagree: the blocks found are not the heads' subspaces.

    Examples
    --------
    A generic target (random subspaces: the coordinate blocks with probes q = e_1, e_2 inside one
    head would be refused, the other head unseen):

    >>> import numpy as np
    >>> from attnproof import MultiHeadAttention, ValueOracle
    >>> from attnproof.theorems.multihead.runner import orthogonal_heads_target
    >>> heads, _ = orthogonal_heads_target(4, 2, np.random.default_rng(0))
    >>> oracle = ValueOracle(MultiHeadAttention(heads))
    >>> rec = learn_multihead_sbd(oracle, hessians=2, rng=np.random.default_rng(0))
    >>> formula = 2 * (2 * 16 + 1) + 2 * (2 + 4) + 3 + 6 * 4  # Hessians, heads, checks, identities
    >>> info = rec.diagnostics  # plus the answers a head's run asked again, counted (platform's rounding)
    >>> info["queries_formula"] == formula, rec.queries == formula + info["reasked_queries"], len(rec.heads)
    (True, True, 2)
    """
    d = oracle.d
    if not isinstance(hessians, int) or not 1 <= hessians <= d:
        raise InvalidInputError(f"hessians must be an integer in [1, d = {d}]; got {hessians!r}")
    if not isinstance(checks, int) or isinstance(checks, bool) or checks < 1:
        raise InvalidInputError(
            f"checks must be a positive integer (the held-out queries are what refuse wrong blocks); "
            f"got {checks!r}"
        )
    if not (isinstance(noise, (int, float)) and 0 <= noise < 1):
        raise InvalidInputError(f"noise must be a number in [0, 1); got {noise!r}")
    rng = check_rng("rng", rng, required=True)
    step = check_tolerance("step", step, optional=True)
    session = Session(oracle, arith, learner=_MULTIHEAD_SBD)  # finite differences: float64 or mpmath
    if noise > arith.eps:  # before any query: Prop. C.2's per-head bound models rounding-level answers
        raise PrecisionLossError(
            f"multihead-sbd: answers with noise {noise:.2g} above the arithmetic's unit roundoff "
            f"{arith.eps:.2g}: the heads' bounds (Thm 4.1's, per reduced oracle) hold for rounding-level "
            "answers only, so no bound would hold; use an exact oracle"
        )
    h = step if step is not None else 2.0 ** round(np.log2(arith.eps) / 4)
    with arith.context(), session.phase("hessians"):
        I, zero = arith.eye(d), arith.zeros(d)
        As = [fd_hessian(session.ask, I[j], zero, h, arith) for j in range(hessians)]
    bases, sbd = sbd_commutant(As, rng, arith, null_tol=arith.eps**0.25)  # FD error ~ eps^(1/2)
    # the blocks are the heads' subspaces only up to the finite differences' rotation: the C.1
    # identities measure it and each head's bound carries it (rotation.py); the checks refuse
    # blocks that are not the subspaces at all
    try:
        with session.phase("heads"):
            rec = learn_orthogonal_heads(oracle, bases, arith=arith, checks=checks, rng=rng)
    except AssumptionError as err:
        raise AssumptionError(
            f"the {len(bases)} blocks the commutant SBD found from {hessians} Hessians are not the heads' "
            f"subspaces: {err}; ask for more Hessians (at least max(2, d_h - 1)) or check Assumption C.1"
        ) from None
    info = session.diagnostics
    info.update(
        rec.diagnostics,
        sbd=sbd,
        hessian_queries=session.spent["hessians"],
        heads_queries=session.spent["heads"],
        sbd_residual=_off_block(As, bases, arith),
        fd_step=float(h),
    )
    session.close(reasked=rec.diagnostics["reasked_queries"], error_bound=info["error_bound"],
                  error_bound_v=info["error_bound_v"], K=hessians, H=len(bases),
                  dims=[B.shape[1] for B in bases], checks=check_count(checks, len(bases)))
    return MultiHeadRecovery(rec.heads, rec.bases, session.queries, arith.name, info)


_MULTIHEAD_SBD = LEARNERS["multihead-sbd"]


def _off_block(As: list[np.ndarray], bases: list[np.ndarray], arith: Arith) -> float:
    """max_k sum_{g != h} ||E_g^T A_k E_h||_F / ||A_k||_F: 0 for an exact SBD."""
    worst = 0.0
    for A in As:
        Af = arith.to_float(A)
        Bf = [arith.to_float(B) for B in bases]
        off = sum(
            np.linalg.norm(Bg.T @ Af @ Bh) ** 2
            for g, Bg in enumerate(Bf)
            for h, Bh in enumerate(Bf)
            if g != h
        )
        worst = max(worst, float(np.sqrt(off) / max(np.linalg.norm(Af), 1e-300)))
    return worst
