"""Prop. C.2 learned: every head of an orthogonal-heads target from its subspaces' bases.

Thm 4.1's learner (:func:`~attnproof.theorems.exact.learn_exact`, the declared reduction) runs
through a :class:`~.oracle.ReducedOracle` per head, and the result is
lifted back; held-out length-3 queries check Assumption C.1 (the room's docstring has the maths).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...arith import FLOAT64, Arith
from ...errors import AssumptionError, InvalidInputError, ShapeError
from ...models import MultiHeadAttention
from ...oracles import ValueOracle
from ...measure import Session
from ...verify.registry import LEARNERS, learner
from ...recovery import MultiHeadRecovery, Recovery
from ..exact import learn_exact
from .maps import lift
from .oracle import ReducedOracle

#: Length of the held-out check queries (N = 3: the shortest length at which the
#: short-input collapse is visible, see ``sec7/short-input-collapse``).
CHECK_LENGTH = 3
#: Held-out check queries the learners ask by default.
DEFAULT_CHECKS = 3
#: Heads of a run or a count when none is given (H equal subspaces of width d / H).
HEADS = 2


def heads_count(d: int, H: int = HEADS, dims: Any = None) -> int:
    """Value queries of Prop. C.2's per-head learning: ``sum_h (d_h + d_h^2)``, for the head widths
    ``dims`` (default H equal widths d / H)."""
    return sum(n + n * n for n in (dims if dims is not None else [d // H] * H))


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
            "Assumption C.1 needs the subspaces to span R^d: "
            f"sum_h d_h = {sum(E.shape[1] for E in out)} != d = {d}"
        )
    with arith.context():
        E_all = np.concatenate(out, axis=1)
        G = E_all.T @ E_all - arith.eye(d)
        ok = all(arith.within(x, 64 * d * arith.eps) for x in arith.nsimplify(G).reshape(-1))
    if not ok:
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
        "propC.2/one-head",
        "propC.2/reduced-head",
        "propC.2/end-to-end",
        "propC.2/run-high-precision",
        "thm4.1/one-token",
        "thm4.1/label-affine",
        "thm4.1/end-to-end-d2",
    ),
    arithmetics=("float64", "mpmath", "sympy"),
    queries="sum_h (d_h + d_h^2) + checks (3)",
    count=lambda d, H=HEADS, checks=DEFAULT_CHECKS, dims=None, **_: heads_count(d, H, dims) + checks,
)
def learn_orthogonal_heads(
    oracle: ValueOracle,
    bases: list[Any],
    *,
    probes: str = "basis",
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    checks: int = DEFAULT_CHECKS,
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
    session = Session(oracle, arith, learner=_ORTHOGONAL_HEADS)
    with arith.context():
        Es = [arith.nsimplify(E) for E in check_bases(bases, oracle.d, arith)]  # sympy: exact bases
        heads: list[Recovery] = []
        for E in Es:
            sub = ReducedOracle(oracle, E)
            red = learn_exact(sub, probes=probes, rng=rng, arith=arith)
            W, v = lift(red.W, red.v, E)
            heads.append(Recovery(W=W, v=v, queries=sub.queries, arith=arith, diagnostics=red.diagnostics))
    dims = [E.shape[1] for E in Es]
    session.diagnostics.update(d_h=dims, checks=checks)
    # floating point only: exact arithmetic has no rounding error to bound
    bound = None if arith.exact else _error_bound(heads, Es, oracle.d, arith)
    if tol is not None and bound is not None:
        session.guard(bound, None, tol, what="the heads' sqrt(sum_h ||W_hat^(h) - W^(h)||_F^2)")
    if checks:
        session.diagnostics["check_residual"] = _check(session, heads, bound, checks, rng)
    info = session.close(reasked=sum(int(h.diagnostics.get("reasked_queries", 0)) for h in heads),
                         error_bound=bound, H=len(Es), dims=dims, checks=checks)
    return MultiHeadRecovery(tuple(heads), tuple(Es), session.queries, arith.name, info)


_ORTHOGONAL_HEADS = LEARNERS["orthogonal-heads"]


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
        b = (
            rec.diagnostics["error_bound"] * (d + 4 + 3 * dh) / (dh + 4)
            + ((2 * dh + 2) * eps + 2 * defect) * Wt
        )
        total += b * b
    return float(np.sqrt(total))


def _check(session: Session, heads: list[Recovery], bound: float | None, checks: int,
           rng: np.random.Generator | None) -> float:
    """Ask ``checks`` random length-3 queries and compare with the recovered heads (whose
    a-posteriori error bound is ``bound``; None in exact arithmetic).

    Tolerance (numeric arithmetics), first order in the errors: the softmax is 2-Lipschitz from
    the scores (max norm) to the weights (1-norm), and ``|x_i^T dW x_N| <= |x_i| |x_N| ||dW||_F``,
    so a head contributes ``max_i |x_i^T dv| + 2 max_i |x_i^T v| max_i |x_i| |x_N| eps_W``;
    twice that (second-order slack) plus ``4 (d + N + 4) eps`` times the answer's magnitude.
    Exact arithmetic (eps = 0, no bound): the tolerance is 0 and the answers must be equal
    (:meth:`~attnproof.arith.Arith.within`).  Returns the worst residual over tolerance.

    Raises
    ------
    AssumptionError
        If some answer disagrees beyond the tolerance.
    """
    arith, d = session.arith, session.oracle.d
    gen = rng if rng is not None else np.random.default_rng(0)
    X = arith.asarray(gen.standard_normal((checks, CHECK_LENGTH, d)))
    y = arith.asarray(session.ask(X))
    pred = arith.asarray(MultiHeadAttention([(h.W, h.v) for h in heads], arith)(X))
    eps_W = 0.0 if bound is None else bound
    worst = 0.0
    for b in range(checks):
        with arith.context():
            diff = arith.simplify(np.array([y[b] - pred[b]], dtype=object))[0]
        Xf = arith.to_float(X[b])
        norms = np.linalg.norm(Xf, axis=1)
        size, tol = 0.0, 0.0
        for head in heads:
            xv = np.abs(Xf @ arith.to_float(head.v))
            size += float(xv.max())
            eps_v = 4 * (d + 4) * arith.eps * float(np.abs(arith.to_float(head.v)).sum())
            tol += float(norms.max()) * eps_v + 2 * float(xv.max()) * float(norms.max() * norms[-1]) * eps_W
        tol = 2 * tol + 4 * (d + CHECK_LENGTH + 4) * arith.eps * size * (1 + float(norms.max()) ** 2)
        residual = abs(float(arith.to_float(np.array([diff]))[0]))
        ok = arith.within(diff, tol)
        if not ok:
            raise AssumptionError(
                f"check query {b} (length {CHECK_LENGTH}) disagrees with the recovered heads "
                f"(|f*(X) - f_hat(X)| = {residual:.3g}): the target does not satisfy Assumption C.1 "
                "for the given bases, so Prop. C.2 does not apply"
            )
        worst = max(worst, residual / tol if tol > 0 else 0.0)
    return worst
