"""Sec. 7 and App. C: multi-head attention -- what queries cannot see, and what they can.

The model (Sec. 7, App. C): ``f^H(X) = sum_h alpha(X, W^(h))^T (X v^(h))``.

**Non-identifiability (Prop. 7.1, and beyond).**  Equal matrices ``W^(h) = A`` with
``v^(h) = lambda_h b`` and ``sum_h lambda_h = 1`` compute ``alpha(X, A)^T X b`` for *every*
real lambda on the hyperplane, not only the simplex the paper states
(``prop7.1/multihead-collapse``).  Further exact symmetries, each proven as an identity about
:class:`~attnproof.models.MultiHeadAttention`: permuting heads, splitting a head
``(W, v) -> (W, a v), (W, (1 - a) v)`` or merging heads with equal W, and adding or removing
a head with ``v = 0`` and *any* W (``prop7.1/symmetries``).

**Short inputs identify even less (new).**  For N = 2 the weights of one head are
``(sigma(t), sigma(-t))`` with ``t = (x_1 - x_2)^T W x_2``, and ``sigma(t) + sigma(-t) = 1``.
Writing ``phi = sigma - 1/2`` (odd), every input of length <= 2 gives

    f^H(X) = 1/2 (x_1 + x_2)^T sum_h v^(h) + sum_h phi((x_1 - x_2)^T W^(h) x_2) (x_1 - x_2)^T v^(h)

(``sec7/short-input-decomposition``; N = 1 is the case x_1 = x_2).  So the length-<=2 answers
are *exactly* the pair (``sum_h v^(h)``, the odd part ``G``), and any change of parameters that
keeps both is invisible to every length-1 and length-2 query.  Since ``phi`` is odd, flipping a
head ``(W, v) -> (-W, -v)`` keeps its contribution to G and changes the sum of the v's by
``-2 v``, which a linear head ``(0, 2 v)`` (a head with W = 0 has ``phi(0) = 0``) restores:

    for any set S of heads: {(W_h, v_h)} ~_{N <= 2} {(s_h W_h, s_h v_h)} + {(0, 2 sum_{h in S} v_h)},
    s_h = -1 on S, +1 off S                                            (``sec7/short-input-flip``)

The pair ``(W, v), (-W, v)`` is the case S = {2} followed by a merge: it equals the single
head ``(0, 2 v)`` on every input with N <= 2 (``sec7/short-input-collapse``) but differs at
N = 3 by O(1) for generic W (property tests).  Consequence: any method that only asks
length-1 and length-2 queries -- Thm 4.1's, Prop. C.2's, and the Hessian probes of App. C's
conjecture -- can at best recover ``(sum_h v^(h), G)``, never general multi-head parameters.
Under Assumption C.1 this loophole closes: a flipped head ``(-W, -v)`` with the same
subspace plus a linear head ``(0, 2v)`` in that subspace puts two heads in one U_h.

**Prop. C.2 (orthogonal heads), learned.**  Inputs whose tokens lie in U_h see head h only
(``propC.2/one-head``), and in the coordinates ``X = Z E_h^T`` of an orthonormal basis E_h
they see the single head ``(E_h^T W^(h) E_h, E_h^T v^(h))`` of width d_h
(``propC.2/reduced-head``).  :func:`learn_orthogonal_heads` therefore runs the library's own
Thm 4.1 learner (:func:`~attnproof.theorems.exact.learn_exact`) through a
:class:`~attnproof.oracles.ReducedOracle` per head and lifts back ``W = E W~ E^T``,
``v = E v~``: ``sum_h (d_h + d_h^2)`` queries (``propC.2/end-to-end``), plus ``checks`` held-out
length-3 queries (default 3) that detect a target violating C.1 for the given bases.

**The conjecture (App. C), executable.**  With ``X = [(z + q)^T; q^T]``, ``F(z) = f(X) - q^T sum v``
has Hessian ``U D_2 U^T + U D_1 V^T + V D_1 U^T`` (``sec7/probe-hessian``), and
``4 nabla^2 F(0) = U V^T + V U^T`` (``sec7/hessian-at-zero``), with ``U = [W^(h) q]_h``.
Under C.1 every Hessian leaves every U_h invariant (``sec7/hessian-invariant``).  Two
simultaneous block diagonalisations (SBD) are implemented: :func:`sbd_random_combination`
(eigenspaces of one random combination, joined when some A_k couples them) and
:func:`sbd_commutant` (eigenspaces of a generic symmetric element of the commutant
``{X : X A_k = A_k X}``, Murota, Kanno, Kojima and Kojima 2010).

*Lemma (necessity, proven here).*  At z = 0 each Hessian restricted to U_h is
``sym(u v^T)`` with ``u = W^(h) q``, so every vector of U_h orthogonal to
``span(v^(h), W^(h) q_1, ..., W^(h) q_K)`` is in the kernel of all K Hessians.  With
``K < d_h - 1`` that kernel is non-zero in each such head, the kernels of different heads form
one common invariant subspace on which every A_k is 0, and the finest SBD cannot separate
them: at least ``max_h d_h - 1`` Hessians (and at least 1) are necessary.  That this many also
*suffice* for generic heads is measured (:func:`~attnproof.bench.multihead_sbd_table`), not
proven.  A random combination ``sum_k c_k A_k`` has rank <= 2 on each U_h, so with
``d_h >= 3`` its eigenvalue 0 has multiplicity ``sum_h (d_h - 2)`` spread over all heads: the
random-combination heuristic cannot split that eigenspace, whatever K.

:func:`learn_multihead_sbd` chains finite-difference Hessians (2 d^2 + 1 value queries each),
the commutant SBD and :func:`learn_orthogonal_heads`: learning under Assumption C.1 *without*
knowing the subspaces, with value queries only (measured; its correctness for generic targets
is not proven).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from ..arith import FLOAT64, SYMPY, Arith
from ..errors import AssumptionError, InvalidInputError, PrecisionLossError, ShapeError
from ..models import Attention, MultiHeadAttention
from ..oracles import ReducedOracle, ValueOracle
from ..proof import Pair, identity, learner, symbols
from ..recovery import MultiHeadRecovery, Recovery
from .exact import learn_exact

#: Length of the held-out check queries (N = 3: the shortest length at which the
#: short-input collapse is visible, see ``sec7/short-input-collapse``).
CHECK_LENGTH = 3


# --- model-level maps ----------------------------------------------------------------------


def reduced_parameters(W: np.ndarray, v: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prop. C.2's reduced parameters ``(E^T W E, E^T v)`` of one head in the basis E."""
    return E.T @ W @ E, E.T @ v


def lift(Wt: np.ndarray, vt: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Back from reduced coordinates: ``(E W~ E^T, E v~)`` (end of the proof of Prop. C.2)."""
    return E @ Wt @ E.T, E @ vt


def flip_heads(heads: list[tuple[Any, Any]], S: set[int]) -> list[tuple[Any, Any]]:
    """The short-input family: heads in S become ``(-W, -v)``, plus a linear head ``(0, 2 sum_S v)``.

    The result agrees with ``heads`` on every input of length N <= 2 (``sec7/short-input-flip``).
    """
    if not S:
        return list(heads)
    out = [(-W if h in S else W, -v if h in S else v) for h, (W, v) in enumerate(heads)]
    d = np.asarray(heads[0][1]).shape[0]
    linear = sum((heads[h][1] for h in sorted(S)), 0 * heads[0][1])
    out.append((0 * np.asarray(heads[0][0]).reshape(d, d), 2 * linear))
    return out


def cayley_bases(dims: list[int], S: Any, arith: Arith) -> list[np.ndarray]:
    """Orthonormal bases of pairwise orthogonal subspaces with ``sum(dims) = d``, in ``arith``.

    The Cayley transform ``Q = (I - K)(I + K)^{-1}`` of the skew part ``K = (S - S^T) / 2`` of a
    d x d matrix S is orthogonal exactly (sympy, rational S gives rational Q) or to the working
    precision; consecutive column groups of Q of sizes ``dims`` are the bases E_h.
    """
    d = sum(dims)
    S = arith.asarray(S)
    if S.shape != (d, d) or min(dims, default=0) < 1:
        raise ShapeError(f"S must be ({d}, {d}) and every d_h >= 1; got {S.shape}, dims {dims}")
    with arith.context():
        K = (S - S.T) / 2
        I = arith.eye(d)
        Q = arith.solve((I + K).T, (I - K).T).T  # (I - K)(I + K)^{-1}; I + K is invertible (K skew)
        cuts = np.cumsum([0, *dims])
        return [Q[:, a:b] for a, b in zip(cuts[:-1], cuts[1:])]


# --- Assumption C.1 ------------------------------------------------------------------------


def check_bases(bases: list[Any], d: int, arith: Arith) -> list[np.ndarray]:
    """Validate Prop. C.2's bases: E_h of shape (d, d_h), orthonormal, pairwise orthogonal,
    ``sum_h d_h = d`` (Assumption C.1: the U_h form a direct sum of R^d).

    Orthonormality is checked exactly in sympy and to ``64 d eps`` in the numeric arithmetics
    (``||E^T E - I||_max``, all bases stacked).

    Raises
    ------
    ShapeError
        If a basis is not a (d, d_h) matrix with d_h >= 1.
    AssumptionError
        If the bases are not orthonormal, not pairwise orthogonal, or do not span R^d.
    """
    if not isinstance(bases, (list, tuple)) or not bases:
        raise InvalidInputError("bases must be a non-empty list of (d, d_h) matrices E_h")
    out = []
    for h, E in enumerate(bases):
        E = arith.asarray(E)
        if E.ndim != 2 or E.shape[0] != d or E.shape[1] < 1:
            raise ShapeError(f"basis E_{h} must have shape ({d}, d_h) with d_h >= 1; got {E.shape}")
        arith.check_finite(E, f"basis E_{h}")
        out.append(E)
    if sum(E.shape[1] for E in out) != d:
        raise AssumptionError(
            f"Assumption C.1 needs the subspaces to span R^d: sum_h d_h = {sum(E.shape[1] for E in out)} != d = {d}"
        )
    with arith.context():
        E_all = np.concatenate(out, axis=1)
        G = E_all.T @ E_all - arith.eye(d)
        if arith.exact:
            bad = any(not arith.is_zero(sp.nsimplify(x)) for x in G.reshape(-1))
        else:
            bad = arith.abs_max(G) > 64 * d * arith.eps
    if bad:
        raise AssumptionError(
            "the bases are not orthonormal and pairwise orthogonal (E^T E != I): Prop. C.2 needs "
            "orthonormal bases E_h of pairwise orthogonal subspaces U_h"
        )
    return out


# --- the Prop. C.2 learner -----------------------------------------------------------------


@learner(
    name="orthogonal-heads",
    result="Prop C.2",
    relies_on=(
        "propC.2/one-head", "propC.2/reduced-head", "propC.2/end-to-end",
        "thm4.1/one-token", "thm4.1/label-affine", "thm4.1/end-to-end-d2",
    ),
    arithmetics=("float64", "mpmath", "sympy"),
    queries="sum_h (d_h + d_h^2) + checks (3)",
    count=lambda d, H=1, checks=CHECK_LENGTH, **_: H * ((d // H) + (d // H) ** 2) + checks,
)
def learn_orthogonal_heads(
    oracle: ValueOracle,
    bases: list[Any],
    *,
    probes: str = "basis",
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    checks: int = 3,
    tol: float | None = None,
) -> MultiHeadRecovery:
    """Recover every head of an orthogonal-heads target from its subspaces' bases (Prop. C.2).

    For each h, Thm 4.1's learner runs on the reduced oracle ``Z -> f(Z E_h^T)`` (width d_h)
    and the result is lifted back, ``W^(h) = E_h W~ E_h^T`` and ``v^(h) = E_h v~``.  Then
    ``checks`` held-out queries of length 3 compare the recovered model with the target.

    Parameters
    ----------
    oracle : ValueOracle
        Answers f*(X) for the hidden multi-head target of width d.
    bases : list of arrays of shape (d, d_h)
        Orthonormal bases E_h of the pairwise orthogonal subspaces U_h (Assumption C.1).
    probes : {"basis", "gaussian"}
        Thm 4.1's probe family inside each R^{d_h} (``"gaussian"`` needs ``rng``).
    rng : numpy.random.Generator, optional
        For Gaussian probes and the check tokens (default: a fixed ``default_rng(0)``).
    arith : Arith
        float64, mpmath or sympy.
    checks : int
        Held-out length-3 queries (0 gives exactly ``sum_h (d_h + d_h^2)`` queries).
    tol : float, optional
        Promised accuracy: raise PrecisionLossError if the a-posteriori bound exceeds it.

    Returns
    -------
    MultiHeadRecovery
        Per-head W, v, queries; ``queries`` = ``sum_h (d_h + d_h^2) + checks`` for unit-scale
        targets (more if a probe had to be rescaled, see :func:`learn_exact`).

    Raises
    ------
    AssumptionError
        If the bases violate C.1, or a check query disagrees with the recovered model beyond
        the error bound (the target does not satisfy C.1 for these bases).
    NonIdentifiableError
        If some head has v~ = 0 (C.1 requires v^(h) != 0).
    PrecisionLossError
        If the a-posteriori error bound exceeds ``tol``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof import MultiHeadAttention, ValueOracle
    >>> E = np.eye(4)
    >>> heads = [(np.diag([1.0, 2.0, 0, 0]), np.array([1.0, -1.0, 0, 0])),
    ...          (np.diag([0, 0, 0.5, -1.0]), np.array([0, 0, 2.0, 1.0]))]
    >>> oracle = ValueOracle(MultiHeadAttention(heads))
    >>> rec = learn_orthogonal_heads(oracle, [E[:, :2], E[:, 2:]], checks=0)
    >>> rec.queries, float(np.abs(rec.heads[0].W - heads[0][0]).max()) < 1e-12
    (12, True)
    """
    if not isinstance(checks, int) or checks < 0:
        raise InvalidInputError(f"checks must be a non-negative integer; got {checks!r}")
    d = oracle.d
    start = oracle.queries
    with arith.context():
        Es = check_bases(bases, d, arith)
        if arith.exact:
            Es = [np.vectorize(sp.nsimplify, otypes=[object])(E) for E in Es]
        heads: list[Recovery] = []
        for E in Es:
            sub = ReducedOracle(oracle, E)
            red = learn_exact(sub, probes=probes, rng=rng, arith=arith)
            W, v = lift(red.W, red.v, E)
            heads.append(Recovery(W=W, v=v, queries=sub.queries, arith=arith.name, diagnostics=red.diagnostics))
    info: dict[str, Any] = {"d_h": [E.shape[1] for E in Es], "checks": checks}
    if not arith.exact:
        info["error_bound"] = _error_bound(heads, Es, d, arith)
        if tol is not None and not info["error_bound"] <= tol:
            raise PrecisionLossError(
                f"a-posteriori bound {info['error_bound']:.3g} on the heads' error exceeds the promised {tol:.3g}"
            )
    rec = MultiHeadRecovery(tuple(heads), tuple(Es), oracle.queries - start, arith.name, info)
    if checks:
        info["check_residual"] = _check(oracle, rec, checks, rng, arith)
    return MultiHeadRecovery(tuple(heads), tuple(Es), oracle.queries - start, arith.name, info)


def _error_bound(heads: list[Recovery], Es: list[np.ndarray], d: int, arith: Arith) -> float:
    """A-posteriori bound on sqrt(sum_h ||W_hat^(h) - W^(h)||_F^2).

    Thm 4.1's first-order bound for the reduced run assumes an oracle with relative error
    ``(d_h + 4) eps`` per answer; the reduced oracle adds the lift ``Z E^T`` (tokens off by
    ``d_h eps``, so scores by ``2 d_h eps`` and labels by ``d_h eps``) and the full-width model
    evaluation (``(d + 4) eps``), so that bound is scaled by ``(d + 4 + 3 d_h) / (d_h + 4)``.
    The lift ``E W~ E^T`` adds ``(2 d_h + 2) eps ||W~||_F`` and the bases' orthonormality
    defect ``delta`` at most ``2 delta ||W~||_F``.
    """
    eps = arith.eps
    total = 0.0
    for rec, E in zip(heads, Es):
        dh = E.shape[1]
        with arith.context():
            defect = arith.abs_max(E.T @ E - arith.eye(dh)) + dh * eps
        Wt = float(np.linalg.norm(arith.to_float(rec.W)))
        b = rec.diagnostics["error_bound"] * (d + 4 + 3 * dh) / (dh + 4) + ((2 * dh + 2) * eps + 2 * defect) * Wt
        total += b * b
    return float(np.sqrt(total))


def _check(
    oracle: ValueOracle, rec: MultiHeadRecovery, checks: int, rng: np.random.Generator | None, arith: Arith
) -> float:
    """Ask ``checks`` random length-3 queries and compare with the recovered model.

    Tolerance (numeric arithmetics), first order in the errors: the softmax is 2-Lipschitz from
    the scores (max norm) to the weights (1-norm), and ``|x_i^T dW x_N| <= |x_i| |x_N| ||dW||_F``,
    so a head contributes ``max_i |x_i^T dv| + 2 max_i |x_i^T v| max_i |x_i| |x_N| eps_W``;
    twice that (second-order slack) plus ``4 (d + N + 4) eps`` times the answer's magnitude.
    Exact arithmetic: the answers must be equal.  Returns the worst residual over tolerance.

    Raises
    ------
    AssumptionError
        If some answer disagrees beyond the tolerance.
    """
    d = oracle.d
    gen = rng if rng is not None else np.random.default_rng(0)
    X = arith.asarray(gen.standard_normal((checks, CHECK_LENGTH, d)))
    y = arith.asarray(oracle(X))
    model = MultiHeadAttention(rec.params, arith)
    pred = arith.asarray(model(X))
    worst = 0.0
    for b in range(checks):
        diff = y[b] - pred[b]
        if arith.exact:
            ok = arith.is_zero(sp.simplify(diff))
            ratio = 0.0 if ok else float("inf")
        else:
            Xf = arith.to_float(X[b])
            norms = np.linalg.norm(Xf, axis=1)
            eps_W = rec.diagnostics["error_bound"]
            size, tol = 0.0, 0.0
            for head in rec.heads:
                xv = np.abs(Xf @ arith.to_float(head.v))
                size += float(xv.max())
                eps_v = 4 * (d + 4) * arith.eps * float(np.abs(arith.to_float(head.v)).sum())
                tol += float(norms.max()) * eps_v + 2 * float(xv.max()) * float(norms.max() * norms[-1]) * eps_W
            tol = 2 * tol + 4 * (d + CHECK_LENGTH + 4) * arith.eps * size * (1 + float(norms.max()) ** 2)
            ratio = abs(float(arith.to_float(np.array([diff]))[0])) / tol if tol > 0 else float("inf")
            ok = ratio <= 1
        if not ok:
            raise AssumptionError(
                f"check query {b} (length {CHECK_LENGTH}) disagrees with the recovered heads "
                f"(|f*(X) - f_hat(X)| = {abs(float(arith.to_float(np.array([diff]))[0])):.3g}): the target does "
                "not satisfy Assumption C.1 for the given bases, so Prop. C.2 does not apply"
            )
        worst = max(worst, ratio)
    return worst
