"""Prop. C.2 learned: every head of an orthogonal-heads target from its subspaces' bases.

Thm 4.1's learner (:func:`~attnproof.theorems.exact.learn_exact`, the declared reduction) runs
through a :class:`~.oracle.ReducedOracle` per head, and the result is
lifted back; held-out length-3 queries check Assumption C.1 (the room's docstring has the maths).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ...arith import FLOAT64, Arith
from ...errors import (
    AssumptionError, InvalidInputError, PrecisionLossError, ShapeError, check_rng, located,
)
from ...models import MultiHeadAttention
from ...oracles import ValueOracle
from ...measure import Session
from ...verify.registry import LEARNERS, learner
from ...recovery import MultiHeadRecovery, Recovery
from ..exact import learn_exact
from .maps import flip_heads, lift
from .oracle import ReducedOracle
from .rotation import _check_scale, identity_count, identity_residuals, rotation_terms, sum_v_error

#: Length of the held-out check queries (N = 3: the shortest length at which the
#: short-input collapse is visible, see ``sec7/short-input-collapse``).
CHECK_LENGTH = 3
#: Held-out check queries the learners ask by default.
DEFAULT_CHECKS = 3
#: Heads of a run or a count when none is given (H equal subspaces of width d / H).
HEADS = 2


def check_count(checks: int, H: int) -> int:
    """Check queries asked for ``checks`` requested and H heads: at least one per head, ``max(checks,
    H)`` (query b takes head b mod H, and only a head's own queries test its short-input flip:
    :func:`check_heads`), 0 for none."""
    return max(checks, H) if checks else 0


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
    queries="sum_h (d_h + d_h^2) + max(checks (3), H) + 6 sum_{g<h} d_g d_h (C.1 identities, 3 answers each)",
    count=lambda d, H=HEADS, checks=DEFAULT_CHECKS, dims=None, certify=True, **_: (
        heads_count(d, H, dims) + check_count(checks, len(dims) if dims else H)
        + (identity_count(dims or [d // H] * H) if certify else 0)
    ),
)
def learn_orthogonal_heads(
    oracle: ValueOracle,
    bases: list[Any],
    *,
    probes: str = "basis",
    rng: np.random.Generator | None = None,
    arith: Arith = FLOAT64,
    checks: int = DEFAULT_CHECKS,
    certify: bool = True,
    tol: float | None = None,
) -> MultiHeadRecovery:
    """Recover every head of an orthogonal-heads target from its subspaces' bases (Prop. C.2).

    For each h, Thm 4.1's learner runs on the reduced oracle ``Z -> f(Z E_h^T)`` (width d_h)
    and the result is lifted back, ``W^(h) = E_h W~ E_h^T`` and ``v^(h) = E_h v~``.  Then
    ``max(checks, H)`` held-out queries of length 3 (at least one per head; none if ``checks = 0``)
    compare the recovered model with the target.

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
        Held-out length-3 queries, raised to H if fewer (:func:`check_count`: a head no query takes
        would not be flip-tested); 0 and ``certify=False`` give exactly ``sum_h (d_h + d_h^2)`` queries.
    certify : bool
        Ask ``6 sum_{g<h} d_g d_h`` C.1 identity queries (:mod:`.rotation`) and add to each head's
        bound what a rotation of the subspaces off the given bases, consistent with their answers,
        could do to it (first order): the bound then holds for targets that satisfy C.1 only up to
        such a rotation (issue 23, item 1), at the price of a looser bound for a small head beside
        large ones (the identities scale their tokens up only until the largest head's scores are ~1,
        :func:`~.rotation.identity_queries`).
        ``False``: C.1 is taken for the given bases (up to their rounding).
    tol : float, optional
        Promised accuracy: raise PrecisionLossError if the a-posteriori bound on
        ``sqrt(sum_h ||W_hat^(h) - W^(h)||_F^2)`` exceeds it.  Default: every head's own bound
        must be at most the arithmetic's resolution^(1/5) times its ``||W_hat^(h)||_F`` (as
        :func:`learn_exact` promises), so a head swamped by the others' rounding is refused.
        With or without ``tol``, every head's v bound must be at most that promise times its
        ``||v_hat^(h)||`` (the check queries take it as their tolerance).

    Returns
    -------
    MultiHeadRecovery
        Per-head W, v, queries; ``queries`` = ``sum_h (d_h + d_h^2) + max(checks, H)`` for unit-scale
        targets (more if a probe had to be rescaled, see :func:`learn_exact`).  In floating point
        the diagnostics carry per-head bounds ``error_bounds`` (W, Frobenius) and
        ``error_bounds_v``, and their root sums of squares ``error_bound``, ``error_bound_v``
        (:func:`_error_bounds`: the other heads' rounding leak included).

    Raises
    ------
    AssumptionError
        If the bases violate C.1, or a check query disagrees with the recovered model beyond
        the error bound, or the identities measure a rotation beyond first order (the target does
        not satisfy C.1 for these bases).
    NonIdentifiableError
        If some head has v~ = 0 (C.1 requires v^(h) != 0).
    PrecisionLossError
        If the a-posteriori error bound exceeds ``tol`` (or a head's exceeds the default promise),
        or a head's v bound exceeds the default promise (e.g. infinite: a rotation the identities
        cannot see, as between heads that attend uniformly, moves that head's v),
        or a rotation below the identities' resolution could move a small head beyond first order,
        or no check query of a head resolves its short-input flip (:func:`check_heads`: a uniform head's
        leak of -2 v^(h) into U_h would return head h flipped; its W too small beside the others' to
        reach unit scores far from overflow, or its v beside their rounding).

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof import MultiHeadAttention, ValueOracle
    >>> E = np.eye(4)
    >>> heads = [(np.diag([1.0, 2.0, 0, 0]), np.array([1.0, -1.0, 0, 0])),
    ...          (np.diag([0, 0, 0.5, -1.0]), np.array([0, 0, 2.0, 1.0]))]
    >>> oracle = ValueOracle(MultiHeadAttention(heads))
    >>> rec = learn_orthogonal_heads(oracle, [E[:, :2], E[:, 2:]], checks=0, certify=False)
    >>> rec.queries, float(np.abs(rec.heads[0].W - heads[0][0]).max()) < 1e-12
    (12, True)
    """
    if not isinstance(checks, int) or checks < 0:
        raise InvalidInputError(f"checks must be a non-negative integer; got {checks!r}")
    if not isinstance(certify, bool):
        raise InvalidInputError(f"certify must be True or False; got {certify!r}")
    rng = check_rng("rng", rng)
    session = Session(oracle, arith, learner=_ORTHOGONAL_HEADS)
    with arith.context():
        Es = [arith.nsimplify(E) for E in check_bases(bases, oracle.d, arith)]  # sympy: exact bases
        heads: list[Recovery] = []
        rngs = []  # each reduced run's generator as it started (the rotation term re-runs it)
        for h, E in enumerate(Es, start=1):
            rngs.append(copy.deepcopy(rng))
            sub = ReducedOracle(oracle, E)
            with located(f"head {h} (its reduced oracle, Prop. 7.1)"):  # the same refusal, saying which head
                red = learn_exact(sub, probes=probes, rng=rng, arith=arith)
            W, v = lift(red.W, red.v, E)
            heads.append(Recovery(W=W, v=v, queries=sub.queries, arith=arith, diagnostics=red.diagnostics))
    dims = [E.shape[1] for E in Es]
    checks = check_count(checks, len(Es))
    session.diagnostics.update(d_h=dims, checks=checks, certify=certify)
    # the reduced runs bound their error in floating point only (exact arithmetic has none)
    rounding_only = heads[0].diagnostics.get("error_bound") is not None
    bounds = _error_bounds(heads, Es, oracle.d, arith) if rounding_only else None
    rotation = 0.0  # the bound on the rotation of the target's subspaces off the bases (C.1 taken: 0)
    if certify and len(Es) > 1:  # Assumption C.1 up to a rotation: measured, and bounded (rotation.py)
        gamma = _gram_defect(Es, oracle.d, arith)
        gen = rng if rng is not None else np.random.default_rng(0)
        Q, X1, r, tol_r = identity_residuals(session, heads, Es, gamma, gen)
        if bounds is not None:
            terms, rotation = rotation_terms(heads, Es, arith, Q, X1, r, tol_r, probes, rngs)
            bounds = [(bW + aW, bv + av) for (bW, bv), (aW, av) in zip(bounds, terms)]
            session.diagnostics.update(rotation_bound=rotation, rotation_terms=[aW for aW, _ in terms])
    bound = bound_v = None
    if bounds is not None:
        bound = float(np.sqrt(sum(bW * bW for bW, _ in bounds)))
        bound_v = float(np.sqrt(sum(bv * bv for _, bv in bounds)))
        session.diagnostics.update(error_bounds=[bW for bW, _ in bounds],
                                   error_bounds_v=[bv for _, bv in bounds])
        if tol is not None:
            session.guard(bound, None, tol, what="the heads' sqrt(sum_h ||W_hat^(h) - W^(h)||_F^2)")
        why = (" (a head whose v is small beside the other heads' is swamped by their rounding in its "
               "subspace, or C.1 holds only up to a rotation the identities cannot resolve)")
        for h, ((bW, bv), rec) in enumerate(zip(bounds, heads)):
            if tol is None:
                session.guard(bW, arith.norm(rec.W), None, what=f"head {h + 1}'s ||W_hat - W*||_F", why=why)
            # v's bound always: the check queries take it as their tolerance, so an unbounded v
            # (a rotation the identities cannot see moves it) would pass any check (issue 23, item 1)
            session.guard(bv, arith.norm(rec.v), None, what=f"head {h + 1}'s ||v_hat - v*||_2",
                          of="||v_hat||_2", why=why)
    if checks:
        session.diagnostics["check_residual"] = check_heads(session, heads, Es, bounds, checks, rng, rotation)
    info = session.close(reasked=sum(int(h.diagnostics.get("reasked_queries", 0)) for h in heads),
                         error_bound=bound, error_bound_v=bound_v, H=len(Es), dims=dims, checks=checks,
                         certify=certify)
    return MultiHeadRecovery(tuple(heads), tuple(Es), session.queries, arith.name, info)


_ORTHOGONAL_HEADS = LEARNERS["orthogonal-heads"]


def _gram_defect(Es: list[np.ndarray], d: int, arith: Arith) -> float:
    """``gamma >= ||E^T E - I||_2`` for the bases stacked, ``E = [E_1 ... E_H]``: the computed
    Frobenius norm plus the product's own rounding ``d eps || |E|^T |E| ||_F`` (0 in exact
    arithmetic)."""
    with arith.context():
        E_all = np.concatenate(Es, axis=1)
        gram = arith.norm(E_all.T @ E_all - arith.eye(d))  # Frobenius, >= the 2-norm
    absE = np.abs(arith.to_float(E_all))
    return (gram + d * arith.eps * float(np.linalg.norm(absE.T @ absE))) * (1 + 4 * d * FLOAT64.eps)


def _error_bounds(
    heads: list[Recovery], Es: list[np.ndarray], d: int, arith: Arith
) -> list[tuple[float, float]]:
    """A-posteriori bounds ``(||W_hat^(h) - W^(h)||_F, ||v_hat^(h) - v^(h)||_2)`` per head (first order).

    Thm 4.1's bound for the reduced run (``error_bound`` of :func:`learn_exact`) assumes an oracle
    whose label errs by ``(d_h + 4) eps |x| ||v~||`` and whose one-token answers give a v~ off by
    ``4 eps ||v~||``.  The reduced oracle of head h answers worse, in two ways:

    * relative: the lift ``x = E_h z`` rounds (``d_h eps |z|``; a one-token ``z = e_i`` lifts
      exactly) and the model runs at width d with H heads summed, so the label errs by
      ``(d + 4 + 3 d_h) eps |x| ||v~||`` (the lift moves the scores by ``2 d_h eps``) and a
      one-token answer by ``(d + H) eps ||v~||``;
    * absolute, the *leak*: the other heads' values ``x^T v^(g)`` are 0 only in exact arithmetic.
      Rounded they are at most ``kappa |x| ||v^(g)||``, ``kappa = (d + d_h + d_max + H + 2) eps +
      gamma``: the oracle's dot product of length d, the lift, the rounding of a target's
      ``v^(g) = E_g v~`` (d_max = max_g d_g: C.1 is taken to hold up to that rounding), the sum
      of the heads, and ``gamma >= ||E^T E - I||_2`` for all bases stacked (computed, plus its own
      rounding ``d eps || |E|^T |E| ||_F``).  A softmax average of them is no larger.  With
      ``S_h = sum_{g != h} ||v_hat^(g)||`` a head whose v is small beside the others is swamped:
      its answers carry ``kappa S_h |x|`` of absolute error, ``kappa S_h / ||v~_h||`` relative.

    Every term of the reduced bound is linear in the label error or in v~'s error (the solve's
    rounding is scaled too, harmlessly), so the reduced bound times the larger of the two
    actual/assumed ratios bounds the error of W~.  v~'s error: its entries err by
    ``e_1 = (d + H) eps ||v~|| + kappa S_h`` times ``|E_h^T| |x|`` summed, so ``||dv~|| <=
    || |E_h| ||_2 e_1``.  The lift ``E W~ E^T`` adds ``(2 d_h + 2) eps ||W~||_F`` and the bases'
    defect ``2 gamma ||W~||_F`` (``E v~``: ``((d_h + 1) eps + gamma) ||v~||``).
    """
    eps, H = arith.eps, len(Es)
    gamma = _gram_defect(Es, d, arith)
    slack = 1 + 4 * d * FLOAT64.eps  # float64's own rounding of a norm
    d_max = max(E.shape[1] for E in Es)
    v_norms = [arith.norm(rec.v) for rec in heads]
    out = []
    for h, (rec, E) in enumerate(zip(heads, Es)):
        dh, vt = E.shape[1], v_norms[h]
        leak = ((d + dh + d_max + H + 2) * eps + gamma) * (sum(v_norms) - vt)
        one_token = ((d + H) * eps * vt + leak) * float(np.linalg.norm(np.abs(arith.to_float(E)), 2)) * slack
        ratio = _reduced_oracle_ratio(d, dh, eps, vt, leak, one_token)
        bW = rec.diagnostics["error_bound"] * ratio + _lift_error(dh, eps, gamma, arith.norm(rec.W))
        bv = one_token + ((dh + 1) * eps + gamma) * vt
        out.append((float(bW), float(bv)))
    return out


def _reduced_oracle_ratio(d: int, dh: int, eps: float, vt: float, leak: float, one_token: float) -> float:
    """How much worse the reduced oracle answers than Thm 4.1's bound assumes (:func:`_error_bounds`):
    the larger of the label's ratio ``((d + 4 + 3 d_h) eps ||v~|| + leak) / ((d_h + 4) eps ||v~||)``
    and the one-token ratio ``one_token / (4 eps ||v~||)``."""
    return max(((d + 4 + 3 * dh) * eps * vt + leak) / ((dh + 4) * eps * vt), one_token / (4 * eps * vt))


def _lift_error(dh: int, eps: float, gamma: float, Wt: float) -> float:
    """The lift ``E W~ E^T``'s rounding ``(2 d_h + 2) eps ||W~||_F`` and the bases' defect
    ``2 gamma ||W~||_F`` (:func:`_error_bounds`)."""
    return ((2 * dh + 2) * eps + 2 * gamma) * Wt


def check_heads(session: Session, heads: list[Recovery], Es: list[np.ndarray],
                bounds: list[tuple[float, float]] | None, checks: int,
                rng: np.random.Generator | None, rotation: float) -> float:
    """Ask ``checks`` length-3 queries across the subspaces and compare with the recovered heads
    (whose a-posteriori error bounds per head are ``bounds``, :func:`_error_bounds`; None in exact
    arithmetic), for a target whose subspaces lie within a rotation ``exp(K)``, ``||K||_F <= rotation``
    (radians, :func:`~.rotation.rotation_terms`; 0 when C.1 is taken for the bases) off them.

    Query b takes k = b mod H and the tokens ``x_1 = E_k a_1``, ``x_2 = sum_{g != k} E_g a_g``
    (generic in the complement of U_k, so blocks that split a head are seen) and ``x_3 = E_k a_3``
    (Gaussian a; every token in U_k when H = 1).  Under
    Assumption C.1 head k attends over x_1, x_3 (its score of x_2 is 0) and every other head
    attends uniformly (``W^(h) x_3 = 0``), so these answers test head k's three-token behaviour
    (two heads sharing U_k differ from any one head there) and every head's ``W^(h)`` against a
    leak into U_k, to first order and with no other head's error in the tolerance (the recovered
    heads lie in their subspaces: a uniformly attending head's prediction carries no W error).
    Each query's tokens in U_k are scaled by a power of two (exact, :func:`_check_scale`) so that
    head k's recovered scores are about 1: down (x_2 with them), as a saturated softmax would hide
    an error of W, or up (x_2 left), as a nearly uniform head k hides its short-input flip.

    Tolerance (numeric arithmetics), :func:`_check_tolerance` (rounding-level answers only, as the heads'
    bounds assume).  Exact arithmetic (eps = 0, no bound): the tolerance is 0 and the answers must
    be equal (:meth:`~attnproof.arith.Arith.within`).

    The flip test: a uniform head whose v leaks ``-2 v^(k)`` into U_k makes U_k answer every query
    of length <= 2 as head k's short-input flip ``(-W^(k), -v^(k))`` would (``sec7/short-input-flip``),
    and the C.1 identities cannot see a uniform head, so only these length-3 answers tell the two
    apart.  Each checked head k needs one of its queries where the recovered model and its flip
    (head k negated, plus the linear head ``(0, 2 v_hat^(k))``) differ by more than twice the
    tolerance; otherwise a flipped head (v off by ``2 |v^(k)|``) would pass unseen.  A head that no
    query takes as k is not flip-tested: :func:`learn_orthogonal_heads` asks at least H queries
    (:func:`check_count`; with 3 queries and H = 4 a unit head 4 came back flipped, v off by 2.0,
    bound 4e-11).  Returns the worst residual over tolerance.

    Raises
    ------
    AssumptionError
        If some answer disagrees beyond the tolerance.
    PrecisionLossError
        If no query of a checked head k resolves its short-input flip (head k's scores, or its
        values beside the other heads', are below the checks' resolution).
    """
    arith, d, H = session.arith, session.oracle.d, len(Es)
    gen = rng if rng is not None else np.random.default_rng(0)
    Wf = [arith.to_float(h.W) for h in heads]
    vf = [arith.to_float(h.v) for h in heads]
    Ef = [arith.to_float(E) for E in Es]
    w_max = max(float(np.linalg.norm(W)) for W in Wf)
    queries, subject = [], []
    for b in range(checks):
        k = b % H
        others = [g for g in range(H) if g != k] or [k]
        a = [gen.standard_normal(Es[k].shape[1]), [gen.standard_normal(Es[g].shape[1]) for g in others],
             gen.standard_normal(Es[k].shape[1])]
        x1, x3 = Ef[k] @ a[0], Ef[k] @ a[2]
        top = float(np.abs(np.array([x1, x3]) @ Wf[k] @ x3).max())
        reach = max(float(np.linalg.norm(x1)), float(np.linalg.norm(x3))) * float(np.linalg.norm(x3))
        c = _check_scale(top, reach, w_max)
        with arith.context():
            x2 = sum(Es[g] @ arith.asarray(min(c, 1.0) * x) for g, x in zip(others, a[1]))
            queries.append(np.stack([Es[k] @ arith.asarray(c * a[0]), x2, Es[k] @ arith.asarray(c * a[2])]))
        subject.append(k)
    X = np.stack(queries)
    y = arith.asarray(session.ask(X))
    pred = arith.asarray(MultiHeadAttention([(h.W, h.v) for h in heads], arith)(X))
    G = arith.to_float(X)
    gamma = _gram_defect(Es, d, arith)
    per_head = bounds if bounds is not None else [(0.0, 0.0)] * len(heads)
    tols = [_check_tolerance(G[b], Wf, vf, Ef, per_head, gamma, d, arith.eps, rotation)
            for b in range(checks)]
    worst = 0.0
    for b in range(checks):
        with arith.context():
            diff = arith.simplify(np.array([y[b] - pred[b]], dtype=object))[0]
        residual = abs(float(arith.to_float(np.array([diff]))[0]))
        if not arith.within(diff, tols[b]):
            raise AssumptionError(
                f"check query {b} (length {CHECK_LENGTH}) disagrees with the recovered heads "
                f"(|f*(X) - f_hat(X)| = {residual:.3g}, tolerance {tols[b]:.3g}): the target does not "
                "satisfy Assumption C.1 for the given bases, so Prop. C.2 does not apply"
            )
        worst = max(worst, residual / tols[b] if tols[b] > 0 else 0.0)
    _flip_test(heads, X, pred, tols, subject, arith)
    return worst


def _flip_test(heads: list[Recovery], X: np.ndarray, pred: np.ndarray, tols: list[float],
               subject: list[int], arith: Arith) -> None:
    """The flip test of :func:`check_heads`: for every head k some query b of k (``subject[b] = k``)
    where the recovered model's prediction ``pred[b]`` and its short-input flip's (head k negated, plus
    ``(0, 2 v_hat^(k))``, ``sec7/short-input-flip``) differ by more than ``2 tols[b]`` (no query), the
    gap read in float64 (its sign-free size; exact arithmetic, tolerance 0: any non-zero gap)."""
    for k in sorted(set(subject)):
        flipped = MultiHeadAttention(flip_heads([(h.W, h.v) for h in heads], {k}), arith)
        gaps = []
        for b in (b for b, s in enumerate(subject) if s == k):
            with arith.context():
                gaps.append(abs(float(arith.to_float(np.array([flipped(X[b]) - pred[b]], dtype=object))[0])))
            if gaps[-1] > 2 * tols[b]:  # exact arithmetic: tols 0, any non-zero gap is seen
                break
        else:
            raise PrecisionLossError(
                f"head {k + 1}'s short-input flip (-W, -v) plus a uniform head's leak -2 v into its subspace "
                f"(sec7/short-input-flip) is below the checks' resolution: its check queries' answers differ "
                f"from the flip's by {max(gaps):.3g}, within twice their tolerance {2 * max(tols):.3g} (its "
                "scores are too small beside the other heads' W to reach 1 far from overflow, or its values "
                "beside the other heads' rounding), so its sign and v cannot be certified"
            )


def _check_tolerance(Gb: np.ndarray, Wf: list[np.ndarray], vf: list[np.ndarray], Ef: list[np.ndarray],
                     per_head: list[tuple[float, float]], gamma: float, d: int, eps: float,
                     rotation: float = 0.0) -> float:
    """The tolerance of one check query ``Gb`` (rows x_i, float64) of :func:`check_heads`, first order
    in the errors, with each head's *own* bounds ``(eps_W^(h), eps_v^(h))``.

    With ``y_i = x_i^T v^(h)`` and weights alpha_i, the output moves by ``sum_i alpha_i
    |y_i - alpha^T y| e_i`` (the softmax's Jacobian) where ``e_i >= |x_i^T (W_hat - W) x_N|``.
    W_hat = E W~ E^T lies in U_h (E = E_h) up to the lift's rounding, and the target's head in the
    rotated ``R U_h``, ``W = R E M E^T R^T``, ``||R - I||_2 <= e^k - 1``, k = ``rotation``.  With
    ``u' = E^T x``, ``u = E^T R^T x`` (``|u - u'| <= delta |x|``, ``delta = (1 + gamma)(e^k - 1)``),
    ``x^T W_hat y - x^T W y = u'^T (W~ - M) w' + (u' - u)^T
    M w' + u^T M (w' - w)``, so with ``p(x) = |E_h^T x| + (gamma + d eps) |x| >= |u'|`` (:func:`_gram_defect`)

        e_i = p(x_i) p(x_N) eps' + ||M|| delta (|x_i| p(x_N) + p(x_i) |x_N| + delta |x_i| |x_N|),

    ``||M||_2 <= ||W_hat^(h)||_F + eps_W^(h)``, ``eps' = eps_W^(h) + ||M|| D (2 + D)`` (``||W~ - M||``:
    ``E^T R E = I + Delta``, ``||Delta|| <= D = (1 + gamma)(k^2 e^k / 2 + gamma k)``, as K is off-block).
    The first term alone (k = 0) is ~0 for a head that attends uniformly over U_k's tokens (its
    prediction carries no W error); the second counts the target's W^(h) outside U_h, which sees U_k's
    tokens (scaled up) through the rotation: without it a target rotated by 1e-12 rad, within the
    identities' bound 1.8e-12, beside a head of W ~100, was refused by a check at 4.5x its tolerance
    (9 of 108 such draws).  v's errors ``dv_h`` by ``sum_h alpha^(h)
    . X dv_h`` (:func:`_v_term`: at most ``max_i |x_i| sum_h eps_v^(h)``, less when the heads' v errors
    must cancel); twice the sum (second-order slack) plus ``4 (d + N + 4) eps`` times ``sum_h max_i
    |y_i| (1 + max_i |x_i| |x_N| ||W^(h)||_F)`` (the rounding of both evaluations) and three times
    ``max_i (|x_i|^T |v^(h)| - |x_i^T v^(h)|)``, as :func:`~.rotation._answer_rounding`: a length-d
    dot product rounds by at most ``d eps |x|^T |v|``, which ``|y_i|`` understates by up to 1 / eps
    at a float basis (a head's values at another subspace's tokens, ~eps of their sizes).  However far its
    scores move, a softmax average moves by at most the spread of its values, ``max y - min y``:
    each head's W term and its scores' rounding are capped there (the checks scale U_k's tokens up
    to head k's unit scores, where another head's rounded scores of them may be anything, and its
    output still within its values' range: :func:`_check_scale`).
    """
    norms = np.linalg.norm(Gb, axis=1)
    reach = float((norms * norms[-1]).max())
    unit = 4 * (d + CHECK_LENGTH + 4) * eps
    first, rounding, alphas = 0.0, 0.0, []
    delta = (1 + gamma) * float(np.expm1(rotation))
    D = (1 + gamma) * (rotation * rotation * float(np.exp(rotation)) / 2 + gamma * rotation)
    for W, v, E, (eps_W, _) in zip(Wf, vf, Ef, per_head):
        # |E_h^T x_i| (rounded, and the bases' defect) bounds the reach of W_hat's error inside U_h
        proj = np.linalg.norm(Gb @ E, axis=1) + (gamma + d * eps) * norms
        M = float(np.linalg.norm(W)) + eps_W
        err = (proj * proj[-1] * (eps_W + M * D * (2 + D))
               + M * delta * (norms * proj[-1] + proj * norms[-1] + delta * norms * norms[-1]))
        s = Gb @ W @ Gb[-1]
        alpha = np.exp(s - s.max())
        alpha /= alpha.sum()
        alphas.append(alpha)
        yv = Gb @ v
        spread, size = float(yv.max() - yv.min()), float(np.abs(yv).max())
        excess = float((np.abs(Gb) @ np.abs(v) - np.abs(yv)).max())
        first += min(float(np.sum(alpha * np.abs(yv - alpha @ yv) * err)), spread)
        rounding += unit * (size + 3 * excess) + min(unit * size * reach * float(np.linalg.norm(W)), spread)
    sigma = sum_v_error(vf, [E.shape[1] for E in Ef], d, gamma, eps)
    first += _v_term(Gb, alphas, [eps_v for _, eps_v in per_head], sigma)
    return 2 * first + rounding


def _v_term(Gb: np.ndarray, alphas: list[np.ndarray], eps_v: list[float], sigma: float) -> float:
    """A bound on ``|sum_h alpha^(h) . X dv_h|`` for one check query X (rows x_i, :func:`_check_tolerance`),
    the heads' weights ``alpha^(h)`` and v errors ``||dv_h|| <= eps_v^(h)`` with ``||sum_h dv_h|| <= sigma``.

    Each head alone: ``|alpha . X dv| <= max_i |x_i| ||dv||``.  Together the errors must nearly cancel:
    every head's v is read from the same one-token answers, which measure ``sum_h v^(h)`` whatever
    Assumption C.1's truth (:func:`~.rotation.sum_v_error`: sigma), so for any probability vector u

        sum_h alpha^(h) . X dv_h = sum_h (alpha^(h) - u) . X dv_h + u . X sum_h dv_h,

    and a vector w summing to 0 has ``|w . y| <= ||w||_1 (max y - min y) / 2``, where ``max_{i,j} |(x_i -
    x_j)^T dv_h| <= D eps_v^(h)``, ``D = max_{i,j} |x_i - x_j|``: at most ``sum_h ||alpha^(h) - u||_1 D
    eps_v^(h) / 2 + max_i |x_i| sigma``, u ranging over the heads' own weights.  The smaller of the two
    bounds.  A rotation between heads that the C.1 identities resolve poorly moves every head's v
    (certified v bounds ~1e-4 among heads of W <= 2^-20, issues 22/23, SMALL_LEAK) but not their sum:
    it counts only through how differently the heads attend, 0 between two that both attend uniformly.
    """
    norms = np.linalg.norm(Gb, axis=1)
    alone = float(norms.max()) * sum(eps_v)
    D = float(np.linalg.norm(Gb[:, None, :] - Gb[None, :, :], axis=2).max())
    together = min(sum(float(np.abs(a - u).sum()) * e for a, e in zip(alphas, eps_v)) for u in alphas)
    return min(alone, together * D / 2 + float(norms.max()) * sigma)
