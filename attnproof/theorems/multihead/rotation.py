"""Assumption C.1 up to a small rotation: identity queries that measure it, and the first-order
term it adds to Prop. C.2's bound (issue 23, items 1 and 5).

**The C.1 identity (new).**  Under Assumption C.1, for ``x_1 in U_h`` and ``x_2 in U_g``
(``g != h``) every head's scores of ``[+-x_1; x_2]`` are the same (head h's are 0: ``W^(h) x_2 =
0``; head g's are ``(0, x_2^T W^(g) x_2)``; the others' 0) and only head h sees the sign of x_1,
with uniform weights, so

    f([x_1; x_2]) - f([-x_1; x_2]) = x_1^T v^(h) = x_1^T sum_k v^(k),

and ``x_1^T sum_k v^(k)`` is what a one-token answer measures (Prop. 7.1 at N = 1: every head's weight
is 1, whatever C.1's truth): the learner's ``sum_k v_hat^(k)`` (read at the bases: they split it, their
sum is the whole), or ``f([x_1])`` asked at the identity's own token, whichever rounds less
(:func:`identity_residuals`: the latter at a pair of small heads beside a large one).  The identity holds
to the answers' rounding only, with no learned W in it, so its tolerance is at the rounding level.

The identity queries are scaled (:func:`identity_queries`) up until the largest score the pair's
heads (g and h) could compute from them is about 1: the identity holds at every scale, and a rotation
moves it through the heads' scores, so at unit tokens among heads of W ~2^-32 a rotation was resolved
only to ~1e-4 rad (issues 22/23, SMALL_LEAK).  The other heads see the pair's tokens only through the
rotation (their scores are quadratic in it, their part of the identity cubic): J leaves them out and
:func:`_outside_heads` bounds their part, so a pair of small heads is resolved beside a unit head too
(SMALL_LEAK_3, where the largest score of *any* head capped the scale at 1 and 1.4e-4 rad).

**A rotation.**  If the target satisfies C.1 for the subspaces ``R U_h`` (``R = exp(K)``, K skew;
its part inside each U_h only changes the basis of U_h, so K is taken off-block,
``K = sum_{g<h} E_g A_gh E_h^T - E_h A_gh^T E_g^T``, coordinates k = the entries of the A_gh in the
Frobenius-orthonormal basis of :func:`off_block_directions`), then to first order in k the
identities' residuals are ``J k``, J the derivative of the identities of the recovered model rotated
by ``exp(K)`` (central differences of the model, no query).  The measured residuals r satisfy
``|r - J k| <= tol`` (rounding), so with J of full column rank ``k = J^+ (J k)`` and, entrywise,
``|k - J^+ r| <= |J^+| (tol + 2 ||J||_2 ||k||^2)`` (the second term: the identities' second order,
with a factor 2 of margin).  J being tall, residuals that no rotation explains (``r - J J^+ r``
beyond that noise) are seen, and refused as a violation of C.1 beyond a rotation.  The learned
heads' errors beyond Prop. C.2's bound are the learner's response to k, measured by re-running
the reduced learner on the recovered model rotated along each direction (no query): the
response is positively homogeneous but not linear (the learner's discrete choices make kinks at
k = 0; one-sided slopes differ by up to 10x), so each direction j
counts with the larger one-sided slope ``s_hj``, and head h's bound gains

    sum_j s_hj |k_j|  (|k_j| <= |(J^+ r)_j| + its spread)  + the second-order remainder,

exact for a convex response (sublinear), measured (0 of 400 hostile draws outside) otherwise.  A
direction of rotation that J does not see (its kernel) and that moves a head makes that head's
bound infinite (a refusal).  ``3 IDENTITIES_PER_DIRECTION`` answers per off-block direction: J is a
tall matrix, which keeps ``||J^+||`` near the identities' typical sensitivity.  A rotation that
perturbs some head's reduced oracle by more than :data:`MAX_ROTATION` of its size (``rho_h = ||k||
(1 + sum_{g != h} ||v^(g)|| / ||v^(h)||)``: the others' values leak ``||k|| ||v^(g)||`` into it) is refused
as a C.1 violation (or, every identity within its tolerance, as beyond float64's resolution), and
below it the second-order remainder is taken as ``2 (||k|| (rho_h ||s_h|| + 2 ||k|| ||W^(h)||_F) + c_h)``
(the lift's own is ``2 ||k||^2 ||W||``; the re-run learner's is rho_h times its first-order response
plus c_h, its curvature measured over the rotation k_hat itself: the re-run's answer at k_hat minus
the one its derivative along k_hat predicts; with a factor 2 of margin: measured, not proven).  The
learner amplifies the leak (~1e2x for a small head), so its nonlinearity sets in at the relative
size of its *response*, not of its input rho_h: issue 23's thorough-profile draw (seed 43926) had
c_h = 4e-6 where ``rho_h ||s_h|| ||k||`` was 1e-8, and erred 0.2 % above the bound without it.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ...arith import FLOAT64, Arith
from ...errors import AssumptionError, PrecisionLossError, located
from ...measure import Session
from ...models import MultiHeadAttention
from ...oracles import ValueOracle
from ...recovery import Recovery
from ..exact import learn_exact
from .oracle import ReducedOracle

#: Identities asked per off-block direction of rotation (each two answers): J has twice as many
#: rows as columns (square J is often ill-conditioned: the bound's median inflation 312x at 1 per
#: direction, 11x at 2, measured on 40 C.1 targets).
IDENTITIES_PER_DIRECTION = 2
#: The largest rotation the first-order certificate accepts, relative to the reduced oracle of the
#: head it moves most (``rho_h``, :func:`rotation_terms`): beyond it the target is refused.
MAX_ROTATION = 2.0**-10
#: Difference steps: central, of the model's identities (J); one-sided, of the re-run learner (E:
#: its second-order term is ~2^-30 relative, below the rounding of the re-runs).
_STEP_J, _STEP_E = 2.0**-20, 2.0**-30
#: A singular value of a pair's block of J is its range only if it exceeds this many times the block's
#: rounding floor (:func:`_range_inverse`): J^+ then carries J's own error at most 2^-10 relative.
_J_MARGIN = 2.0**10


def off_block_count(dims: list[int]) -> int:
    """Off-block directions of rotation: ``sum_{g<h} d_g d_h``."""
    return (sum(dims) ** 2 - sum(n * n for n in dims)) // 2


def identity_count(dims: list[int]) -> int:
    """Value queries of the C.1 identities: ``3 IDENTITIES_PER_DIRECTION sum_{g<h} d_g d_h`` (per identity
    its two answers and the one-token answer ``f([x_1])``, :func:`identity_residuals`)."""
    return 3 * IDENTITIES_PER_DIRECTION * off_block_count(dims)


def _direction_columns(Ef: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """The off-block directions' basis columns, in :func:`off_block_directions`' order: ``(A, B, gh)``,
    column j of A (of E_g) and of B (of E_h), and ``gh[j] = (g, h)``, g < h."""
    cols = [(g, h, a, b) for g, Eg in enumerate(Ef) for h in range(g + 1, len(Ef))
            for a in Eg.T for b in Ef[h].T]
    d = len(Ef[0])
    A = np.array([a for _, _, a, _ in cols]).T.reshape(d, len(cols))
    B = np.array([b for _, _, _, b in cols]).T.reshape(d, len(cols))
    return A, B, [(g, h) for g, h, _, _ in cols]


def off_block_directions(Ef: list[np.ndarray]) -> list[tuple[int, int, np.ndarray]]:
    """``(g, h, K)`` for g < h and each basis pair: ``K = (a b^T - b a^T) / sqrt(2)`` with a, b columns
    of E_g, E_h (float64): skew, unit Frobenius norm, mapping U_g and U_h into each other."""
    A, B, gh = _direction_columns(Ef)
    return [(g, h, (np.outer(a, b) - np.outer(b, a)) / np.sqrt(2)) for (g, h), a, b in zip(gh, A.T, B.T)]


def identity_pairs(dims: list[int]) -> list[tuple[int, int]]:
    """Per identity, in :func:`identity_queries`' order, the heads ``(a, b)`` of its tokens: ``x_1 in
    U_a``, ``x_2 in U_b`` (per pair g < h, ``IDENTITIES_PER_DIRECTION d_g d_h`` of them, alternately
    (h, g) and (g, h))."""
    return [(h, g) if m % 2 == 0 else (g, h)
            for g in range(len(dims)) for h in range(g + 1, len(dims))
            for m in range(IDENTITIES_PER_DIRECTION * dims[g] * dims[h])]


def _rotation(K: np.ndarray, t: float) -> np.ndarray:
    """``I + tK + (tK)^2 / 2``: exp(tK) to O(t^3), enough for central differences."""
    tK = t * K
    return np.eye(K.shape[0]) + tK + tK @ tK / 2


#: The checks scale head k's tokens up only while ``c^2 reach max(1, max_g ||W_hat^(g)||_F)`` (the largest
#: score any head could compute from them, before the cancellation C.1 promises, and the tokens' squared
#: size) stays below this: far from float64's overflow (``2^1024``) in the tolerance's products of three
#: token sizes, and exact in every arithmetic (a power of two).
MAX_CHECK_SCORE = 2.0**512


def _check_scale(top: float, reach: float, w_max: float) -> float:
    """The power of two c (exact) by which a check query scales head k's tokens ``x_1, x_3 in U_k``
    (:func:`~.orthogonal.check_heads`): head k's largest recovered score ``top`` becomes about 1.

    Down freely (a saturated softmax would hide an error of W).  Up too: a head k that attends
    nearly uniformly at unit scale differs from its short-input flip ``(-W, -v)`` plus a linear
    head (equal at N <= 2, ``sec7/short-input-flip``) by only O(top^2 |x| |v|) at N = 3, which
    rounding hides (thorough seed 271128).  Up to unit scores whatever the other heads' W: their
    scores of the scaled tokens are rounding only (``W^(g) E_k = 0`` under C.1), and however far
    rounding moves a softmax, it moves the head's output by at most the spread of its values, which
    the check's tolerance caps it at (:func:`~.orthogonal.check_heads`; an earlier cap at ``c^2 reach
    max_{g != k} ||W_g|| <= eps^(-1/2)`` stopped a head whose W is 1e-13 of another's at scores
    ~1e-5, where its flip passed every check).  Only ``c^2 reach max(1, w_max) <= MAX_CHECK_SCORE``
    (``reach = max_i |x_i| |x_3|``, ``w_max = max_g ||W_hat^(g)||_F``) bounds it, far from
    overflow (a lone head of W 4e-221 scaled its tokens to 1e110 and the tolerance overflowed to
    NaN: thorough seed 60317); a head still below unit scores there is refused by the flip test of
    :func:`~.orthogonal.check_heads`.

    The C.1 identities scale their tokens up by the same law (:func:`identity_queries`, with ``top``
    the largest score any head could compute), hence it lives here: orthogonal.py imports this module.
    """
    if not 0 < top < np.inf:
        return 1.0
    n = np.round(-np.log2(top) / 2)  # c^2 top ~ 1
    if n > 0:  # up: only far from overflow (top > 0, so x_3 != 0 and reach > 0)
        n = max(0.0, min(n, np.floor(np.log2(MAX_CHECK_SCORE / (reach * max(w_max, 1.0))) / 2)))
    return float(np.ldexp(1.0, int(n)))


#: The identities of a pair scale their tokens up only while the largest score a head *outside* the pair
#: could compute from them (``c^2 reach max_k ||W_hat^(k)||_F``, before the cancellation C.1 promises) is
#: at most this (1 / float64's eps): the float bases' defect (``|E_g^T x| ~ eps |x|``) then gives it scores
#: ~eps, a rotation k scores ~k^2 2^52 (:func:`_outside_heads`), and the answers' rounding stays in the
#: tolerance's linear regime (tokens of 1e77 beside a unit head overflowed it: a pair of W 1e-117 and 1e-174).
MAX_OUTSIDE_SCORE = 2.0**52


def identity_queries(
    heads: list[Recovery], Es: list[np.ndarray], arith: Arith, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The identity queries ``[x_1; x_2], [-x_1; x_2]`` (interleaved, shape (2m, 2, d)) and the x_1
    (m, d): per pair g < h, ``IDENTITIES_PER_DIRECTION d_g d_h`` identities with Gaussian coordinates,
    ``x_1`` in U_h and ``x_2`` in U_g alternately the other way round, scaled by a power of two c (exact):

    * down so that the recovered score ``x_2^T W_hat x_2`` is at most about 1;
    * up (issues 22/23, SMALL_LEAK) while the largest score the pair's heads could compute from its
      tokens, ``c^2 reach w_ab`` (``reach = max(|x_1|, |x_2|) |x_2|``, ``w_ab = max(||W_hat^(a)||_F,
      ||W_hat^(b)||_F)``), stays about 1 (:func:`_check_scale`'s law, the checks', with ``top = reach
      w_ab``, which also keeps ``c^2 reach max(1, w_max) <= 2^512``, ``w_max = max_k ||W_hat^(k)||_F``,
      far from overflow), and ``c^2 reach w_max`` about :data:`MAX_OUTSIDE_SCORE` at most.

    Why up, and why that cap.  ``f(cX)`` is c times the answer at X of the target with every ``W^(k)``
    times c^2, so (a) the C.1 identity holds exactly at every c (head a's scores are 0 as ``W^(a) x_2
    = 0``, head b's are ``(0, c^2 x_2^T W^(b) x_2)`` for both signs of x_1) and its tolerance, the
    answers' rounding (:func:`identity_residuals`), is evaluated at the scaled tokens; (b) a rotation
    k moves the identities through the pair's scores, by about ``k c^2 reach w_ab`` times the values
    ``c |x| |v|``, against rounding ``eps c |x| |v|``.  With every W at most ``2^-32`` and unit tokens
    a rotation was resolved only to ~1e-4 rad (SMALL_LEAK: 1.1e-4, so each head's certified v bound
    was 1.05e-4, which the check queries' tolerance multiplies by their tokens' size, ~5e4); at
    ``c^2 reach w_ab ~ 1`` to about what a unit target's identities resolve.  The cap keeps the pair's
    scores at most ~2, the regime of unit targets, for which J's central differences (step
    ``_STEP_J``) and the second-order margins of :func:`rotation_terms` were made.  A head g outside
    the pair may reach scores far past 1 at that scale under a rotation (0 under C.1): J is taken with
    it uniform and its part bounded apart (:func:`_outside_heads`: cubic in the rotation, which the
    identities then resolve to ~1e-12 rad; capping at the largest score of *any* head left a pair of
    small heads beside a unit head resolved to 1.4e-4 rad, SMALL_LEAK_3).  A pair whose largest score
    at the drawn tokens is already about 1 or more is asked exactly as before.
    """
    Ef = [arith.to_float(E) for E in Es]
    Wf = [arith.to_float(r.W) for r in heads]
    w_max = max(float(np.linalg.norm(W)) for W in Wf)
    Q, X1 = [], []
    for a, b in identity_pairs([E.shape[1] for E in Es]):  # x_1 in U_a, x_2 in U_b
        z1, z2 = rng.standard_normal(Es[a].shape[1]), rng.standard_normal(Es[b].shape[1])
        x1, x2 = Ef[a] @ z1, Ef[b] @ z2
        top = abs(float(x2 @ Wf[b] @ x2))
        c = np.ldexp(1.0, int(min(0.0, np.round(-np.log2(top) / 2)))) if 0 < top < np.inf else 1.0
        reach = max(float(np.linalg.norm(x1)), float(np.linalg.norm(x2))) * float(np.linalg.norm(x2))
        w_pair = max(float(np.linalg.norm(Wf[a])), float(np.linalg.norm(Wf[b])))
        pair_top = reach * max(w_pair, w_max / MAX_OUTSIDE_SCORE)
        c *= max(1.0, _check_scale(pair_top, reach, w_max))  # > 1 only if the pair's scores are < ~1
        with arith.context():
            x1, x2 = Es[a] @ arith.asarray(c * z1), Es[b] @ arith.asarray(c * z2)
            Q += [np.stack([x1, x2]), np.stack([-x1, x2])]
        X1.append(x1)
    return np.stack(Q), np.stack(X1)


def sum_v_error(vf: list[np.ndarray], dims: list[int], d: int, gamma: float, eps: float) -> float:
    """A bound on ``||sum_k v_hat^(k) - sum_k v^(k)||_2`` plus ``d eps S``, whatever C.1's truth.

    Every head's ``v~_k`` is read from the one-token answers ``f(E_k e_i) = e_i^T E_k^T sum_g v^(g)``
    (:func:`~attnproof.prelude.read_v`: one token, every head weight 1), so the bases split the sum
    and lifted back they add up to it: each answer errs by ``(d + H + 2) eps |x| S`` (S = sum_k
    ||v_hat^(k)||, |x| <= 1 + gamma; ``sqrt(H d)`` bounds ``sum_k sqrt(d_k)``), the lift ``E_k v~`` by
    ``(d_k + 1) eps ||v_hat^(k)||``, the bases' defect (``E E^T - I``) by ``gamma S``; ``d eps S`` is
    the rounding of a dot product with the sum (the identities' right side)."""
    H, S = len(vf), float(sum(np.linalg.norm(v) for v in vf))
    return ((1 + gamma) * np.sqrt(H * d) * (d + H + 2) + max(dims) + 1 + d) * eps * S + gamma * S


def _answer_rounding(X: np.ndarray, params: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """One answer's rounding in units of ``4 (d + 6) eps`` for the query X (rows x_i, float64) and the
    float64 heads ``params``: ``sum_k max_i |x_i^T v^(k)| (1 + max_i |x_i| |x_N| ||W^(k)||_F)`` (the check
    queries' model, :func:`~.orthogonal.check_heads`) plus three times ``max_i (|x_i|^T |v^(k)| - |x_i^T
    v^(k)|)``.  A length-d dot product rounds by at most ``d eps |x|^T |v|``, which ``|x^T v|``
    understates by up to 1 / eps for a head's values at tokens nearly orthogonal to its v (``x^T v^(g)
    ~ eps |x| |v^(g)|`` at float bases; exactly 0, and exact, at the axes): the values' own rounding, and
    the weights' rounding over the spread it adds (at most twice it, however far the weights move)."""
    reach = float(np.linalg.norm(X, axis=1).max() * np.linalg.norm(X[-1]))
    out = 0.0
    for W, v in params:
        y = np.abs(X @ v)
        excess = float((np.abs(X) @ np.abs(v) - y).max())
        out += float(y.max()) * (1 + reach * float(np.linalg.norm(W))) + 3 * excess
    return out


def identity_residuals(
    session: Session, heads: list[Recovery], Es: list[np.ndarray], gamma: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ask the identity queries (:func:`identity_queries`) and the one-token queries ``[x_1]`` (all counted
    by ``session``: three answers per identity; the diagnostics record ``identity_queries`` and how many
    identities took the one-token right side, ``identities_one_token``) and return ``(Q, X1, r, tol)``:
    per identity the residual ``r`` (float64) of whichever of its two right sides has the smaller
    tolerance under C.1,

    * ``f([x_1; x_2]) - f([-x_1; x_2]) - x_1^T sum_k v_hat^(k)`` (the sum the one-token answers at the
      bases measured, whose error :func:`sum_v_error` bounds), or
    * ``f([x_1; x_2]) - f([-x_1; x_2]) - f([x_1])``: one token, every head's weight is 1, so ``f([x_1]) =
      x_1^T sum_k v^(k)`` exactly whatever C.1's truth (Prop. 7.1's sum of the heads at N = 1), the
      right side measured at the identity's own token.

    Both equal ``J k`` to first order in the rotation (:func:`rotation_terms`), so either serves: J
    differentiates :func:`_identities`, whose right side ``x_1^T sum_k R v^(k)`` is the rotated model's
    one-token answer at x_1, which is what ``f([x_1])`` measures of the target (and the learner's sum,
    to :func:`sum_v_error`); each residual is then within its own tolerance of ``J k`` plus the second
    order, and the form is chosen by the tolerances alone (no answer), so either bound holds.  The
    rounding model takes the recovered v's, in their subspaces; the target's differ by the rotation, so
    it errs by ``eps ||k|| |x| ||v^(g)||``, second order in (eps, k), as for the two-token answers.  The
    second is the one that resolves a pair of heads with small v beside a large head (issue 23): under
    C.1 the large head's values ``x^T v^(g)`` are 0 at the pair's tokens (x in U_a + U_b), so all three
    answers are of the pair's size and round relative to it, while the measured sum errs by ``eps``
    times every head's v (the one-token answers at the bases carry the large head's rounding into U_a:
    :func:`sum_v_error`), which at v ~ 1e-9 beside a unit head was 1e6 times the pair's rounding and
    bounded the rotation between them only to ~0.05 rad (a refusal of a C.1 target).

    Tolerance: each answer's rounding ``4 (d + 6) eps`` times :func:`_answer_rounding`, plus for the first
    form ``|x_1|`` times the error of the measured ``sum_k v^(k)`` and the dot product's rounding
    (:func:`sum_v_error`), for the second the one-token answer's rounding: at the axes a head's values at
    another subspace's tokens are exactly 0 and round not at all, at float bases by ``~eps |x| |v^(g)|``
    (:func:`_answer_rounding`), as the measured sum does.  Exact arithmetic (eps = 0): the tolerance is 0
    and both forms must hold exactly.

    Raises
    ------
    AssumptionError
        In exact arithmetic, if an identity does not hold exactly.
    """
    arith, d = session.arith, session.oracle.d
    Q, X1 = identity_queries(heads, Es, arith, rng)
    y = arith.asarray(session.ask(Q))
    y1 = arith.asarray(session.ask(X1[:, None, :]))
    with arith.context():
        vsum = sum((r.v for r in heads), arith.zeros(d))
        lhs = y[0::2] - y[1::2]
        forms = (lhs - X1 @ vsum, lhs - y1)
    if not arith.eps and not all(arith.within(x, 0.0) for diff in forms for x in diff):
        raise AssumptionError("a C.1 identity f([x_1; x_2]) - f([-x_1; x_2]) = x_1^T sum_k v^(k) fails "
                              "exactly: the target does not satisfy Assumption C.1 for the given bases")
    eps, Qf, X1f = arith.eps, arith.to_float(Q), arith.to_float(X1)
    params = [(arith.to_float(r.W), arith.to_float(r.v)) for r in heads]
    sum_v = sum_v_error([v for _, v in params], [E.shape[1] for E in Es], d, gamma, eps)
    unit = 4 * (d + 6) * eps
    lhs_tol = np.array([unit * (_answer_rounding(Qf[2 * b], params) + _answer_rounding(Qf[2 * b + 1], params))
                        for b in range(len(X1f))])
    tols = (lhs_tol + np.linalg.norm(X1f, axis=1) * sum_v,
            lhs_tol + unit * np.array([_answer_rounding(x[None, :], params) for x in X1f]))
    one = tols[1] < tols[0]
    session.diagnostics.update(identity_queries=3 * len(X1f), identities_one_token=int(one.sum()))
    r = np.where(one, arith.to_float(forms[1]), arith.to_float(forms[0]))
    return Qf, X1f, r, np.where(one, tols[1], tols[0]) * (1 + 8 * d * FLOAT64.eps)


def _identities(params: list[tuple[np.ndarray, np.ndarray]], Q: np.ndarray, X1: np.ndarray) -> np.ndarray:
    """The identities' left minus right sides for the float64 heads ``params`` (no query)."""
    y = MultiHeadAttention(params)(Q)
    return y[0::2] - y[1::2] - X1 @ sum(v for _, v in params)


def _outside_heads(
    params: list[tuple[np.ndarray, np.ndarray]], Ef: list[np.ndarray], Q: np.ndarray,
    pairs: list[tuple[int, int]], k: float, box: np.ndarray | None, exact: bool,
) -> np.ndarray:
    """Per identity, a bound on what the heads outside its pair (a, b) add to its residual under any
    rotation ``R = exp(K)``, ``K = sum_j k_j K_j`` (:func:`off_block_directions`), ``||k||_2 <= k`` and,
    unless ``box`` is None, ``|k_j| <= box_j`` per direction, of the float64 heads ``params`` (J leaves
    them out).

    Head g outside the pair, rotated (``W = R E_g M E_g^T R^T``, ``v = R E_g v~``), reaches a token x
    only through ``|E_g^T R^T x| <= pi(x)`` (R is orthogonal: ``pi(x) <= |x|``), where with ``R^T = I - K
    + O(K^2)``

        pi(x) = |E_g^T x| + min((e^k - 1) |x|,  sum_j box_j |E_g^T K_j x| + ||E_g||_2 (e^k - 1 - k) |x|),
        |E_g^T K_j x| <= (|E_g^T a_j| |b_j^T x| + |E_g^T b_j| |a_j^T x|) / sqrt(2)

    (``|E_g^T x|`` is the float bases' defect, 0 in exact arithmetic; ``K_j = (a_j b_j^T - b_j a_j^T) /
    sqrt(2)``).  The second form sees that only the rotation between U_g and the tokens' own subspaces
    moves head g's view of them (``E_g^T K_j x ~ 0`` unless direction j joins U_g to U_a or U_b): a pair
    of small heads, whose identities scale their tokens up ~1e5x past a unit head's unit scores, is not
    charged that head's rotation against the pair, which its own unit-token identities resolve ~1e5x
    better than the pair's (issue 23: 24 of 30 such C.1 targets at W = 2^-32 beside a unit head were
    refused, every one at 2^-44).  Its scores are at most ``||W||_F pi(x_j) pi(x_2)``, so its two
    weights are ``1/2 +- delta``, ``delta <= min(1/2, (|s_1| + |s_2|) / 4)``, and what it adds beyond its
    uniform part ``x_1^T v`` (the identity's right side) is ``delta (x_1 - x_2)^T v``, at most ``delta
    (pi(x_1) + pi(x_2)) |v|`` per answer.  Cubic in the rotation for exact bases: the identities of a pair
    of small heads may scale their tokens up past a large head's unit scores (:func:`identity_queries`)
    only because this stays below their resolution.
    """
    X = Q.reshape(-1, Q.shape[-1])  # the tokens, two per answer, two answers per identity
    size = np.linalg.norm(X, axis=1)
    grow = float(np.expm1(min(k, 1.0)))  # e - 1 > 1: pi(x) = |x| beyond
    if box is not None and k < 1:
        A, B, _ = _direction_columns(Ef)
        XA, XB = np.abs(X @ A), np.abs(X @ B)
        kk = min(k, float(np.linalg.norm(box)))  # ||k||_2 within the box too
        tail = 0.5 * kk * kk * float(np.exp(kk))  # >= e^kk - 1 - kk
    out = np.zeros(len(pairs))
    inside = np.array([[g in pair for g in range(len(params))] for pair in pairs])
    for g, (W, v) in enumerate(params):
        defect = 0.0 if exact else np.linalg.norm(X @ Ef[g], axis=1)
        turn = grow * size
        if box is not None and k < 1:
            ga, gb = (np.linalg.norm(Ef[g].T @ C, axis=0) for C in (A, B))
            first = (XB @ (box * ga) + XA @ (box * gb)) / np.sqrt(2)
            turn = np.minimum(turn, first + float(np.linalg.norm(Ef[g], 2)) * tail * size)
        pi = np.minimum(size, turn + defect).reshape(-1, 2, 2)  # identity x answer x token
        reach = pi.sum(axis=2)  # pi(x_1) + pi(x_2) per answer
        delta = np.minimum(0.5, float(np.linalg.norm(W)) * reach * pi[:, :, 1] / 4)
        out += np.where(inside[:, g], 0.0, (delta * reach).sum(axis=1) * float(np.linalg.norm(v)))
    return out * (1 + 16 * Q.shape[-1] * FLOAT64.eps)


def _check_rotation_fit(J: np.ndarray, r: np.ndarray, k_hat: np.ndarray, tol: np.ndarray, k0: float) -> None:
    """The residuals must be those of a rotation: ``r = J k + e`` with ``|e_i| <= tol_i + 2 ||J||_2
    ||k||^2`` (rounding and second order, as in :func:`rotation_terms`) plus ``2^-20 ||J||_2 ||k||``
    (J's own error: central differences, taken at the recovered heads rather than the target's),
    and ``r - J k_hat = (I - J J^+) e`` is no longer than e.  J is tall
    (:data:`IDENTITIES_PER_DIRECTION`), so residuals no rotation explains are seen (a head's v
    leaking into another's subspace, issue 23 item 1).

    Raises
    ------
    AssumptionError
        If ``||r - J k_hat||_2`` exceeds that bound on ``||e||_2`` (``||k|| <= k0``).
    """
    norm_J = float(np.linalg.norm(J, 2)) if J.size else 0.0
    allowed = float(np.linalg.norm(tol + norm_J * k0 * (2 * k0 + 2.0**-20))) * (1 + 8 * len(r) * FLOAT64.eps)
    misfit = float(np.linalg.norm(r - J @ k_hat))
    if misfit > allowed:
        raise AssumptionError(
            f"the C.1 identities' residuals are not those of a rotation off the given bases (a part "
            f"{misfit:.3g} no rotation explains, above its tolerance {allowed:.3g}): the target does not "
            "satisfy Assumption C.1 for them, even up to a rotation"
        )


def _range_inverse(
    J: np.ndarray, params: list[tuple[np.ndarray, np.ndarray]], Q: np.ndarray, X1: np.ndarray,
    rows: dict[tuple[int, int], list[int]], cols: list[tuple[int, int]],
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(P, reach, rank)``: J^+ on J's range, how far each direction reaches into J's kernel, and the rank,
    pair by pair (J is block diagonal: the identities of the pair (g, h) move only along the directions
    joining U_g and U_h, :func:`rotation_terms`).

    Block (g, h)'s range is its singular values above :data:`_J_MARGIN` times its rounding floor
    ``sqrt(d_g d_h) ||n||_2`` (>= the 2-norm of the central differences' rounding, in Frobenius form),
    ``n_i = (4 (d + 6) eps sum_{k in {g, h}} sum_X max_j |x_j^T v^(k)| (1 + max_j |x_j| |x_2| ||W^(k)||_F)
    + d eps |x_1| ||v^(g) + v^(h)||) / _STEP_J`` for identity i (its two answers X and right side, the
    pair's heads only: those J differentiates; :func:`identity_residuals`' model).  A global cut (relative
    to J's largest singular value) was unsound: the block of a pair of heads with v at 1e-9 beside a unit
    head lay below it, a rotation of 1e-4 rad between them went unbounded and both came back outside their
    bounds (up to 6.5x, no error).  Measured against its own floor the block is seen, and its rotation
    bounded (or refused).
    """
    eps, d = FLOAT64.eps, Q.shape[-1]
    P, reach, rank = np.zeros(J.shape[::-1]), np.zeros(J.shape[1]), 0
    for pair, idx in rows.items():
        js = [j for j, gh in enumerate(cols) if gh == pair]
        noise = np.zeros(len(idx))
        for m, i in enumerate(idx):
            for X in Q[2 * i: 2 * i + 2]:
                size = float(np.linalg.norm(X, axis=1).max() * np.linalg.norm(X[-1]))
                noise[m] += sum(float(np.abs(X @ v).max()) * (1 + size * float(np.linalg.norm(W)))
                                for W, v in (params[k] for k in pair))
            noise[m] = 4 * (d + 6) * eps * noise[m] + d * eps * float(
                np.linalg.norm(X1[i]) * np.linalg.norm(params[pair[0]][1] + params[pair[1]][1]))
        floor = _J_MARGIN * np.sqrt(len(js)) * float(np.linalg.norm(noise)) / _STEP_J
        U, s, Vt = np.linalg.svd(J[np.ix_(idx, js)], full_matrices=False)
        r = int(np.sum(s > floor))
        P[np.ix_(js, idx)] = Vt[:r].T @ (U[:, :r].T / s[:r, None])
        reach[js] = np.linalg.norm(Vt[r:], axis=0)
        rank += r
    return P, reach, rank


def rotation_terms(
    heads: list[Recovery], Es: list[np.ndarray], arith: Arith, Q: np.ndarray, X1: np.ndarray,
    r: np.ndarray, tol: np.ndarray, probes: str, rngs: list[Any],
) -> tuple[list[tuple[float, float]], float]:
    """Per head ``(||E_h k||_F bound, ||E^v_h k|| bound)`` for the rotations k consistent with the
    identities' residuals (module docstring), and the bound on ``||k||_2`` itself.

    ``rngs``: each head's random generator as it was before its reduced run (Gaussian probes: the
    re-run draws the same probes).  All in float64 (the coefficients J, E_h are derivatives: a
    few digits suffice; the residuals and tolerances carry the arithmetic's precision).

    Raises
    ------
    AssumptionError
        If no rotation explains the residuals (:func:`_check_rotation_fit`), or
        if the rotation consistent with the residuals may move a head's reduced oracle by more than
        :data:`MAX_ROTATION` relative to it, an identity failing.
    PrecisionLossError
        The latter with every identity within its tolerance: a rotation below their resolution
        could move a small head beyond first order.  Or if, with the heads outside each identity's
        pair bounded (:func:`_outside_heads`) for every rotation up to twice the one the identities
        first allow, they allow more than that (the identities of a pair of small heads, scaled past
        a large head's unit scores, cannot bound its part).
    """
    Ef = [arith.to_float(E) for E in Es]
    params = [(arith.to_float(h.W), arith.to_float(h.v)) for h in heads]
    dirs = off_block_directions(Ef)
    n, H = len(dirs), len(Es)
    # the re-run learner's response is positively homogeneous but not linear (its discrete choices
    # make kinks at k = 0: one-sided slopes differ by up to 10x), so per direction the larger of
    # the two one-sided slopes, weighted by |k_j| (sublinear: exact for a convex response)
    slopes = np.zeros((2, H, n))  # (W, v) x head x direction

    def learned_errors(rotated: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Head k's (W, v) errors when the learner re-runs on the float64 model ``rotated``."""
        where = f"head {k + 1} (the rotation's certificate re-runs its reduced learner on the float64 model)"
        with located(where):
            red = learn_exact(ReducedOracle(ValueOracle(MultiHeadAttention(rotated)), Ef[k]), probes=probes,
                              rng=copy.deepcopy(rngs[k]), rtol=1e300)  # no query: the float64 model
        return (Ef[k] @ red.W @ Ef[k].T - rotated[k][0]).reshape(-1), Ef[k] @ red.v - rotated[k][1]

    def rotate(K: np.ndarray, t: float) -> list[tuple[np.ndarray, np.ndarray]]:
        R = _rotation(K, t)
        return [(R @ W @ R.T, R @ v) for W, v in params]

    base = [learned_errors(params, k) for k in range(H)]  # differences from the re-run at k = 0
    # J of each identity with the heads outside its pair uniform: their part is bounded apart
    # (_outside_heads), not differentiated (a pair of small heads may scale its tokens past their unit
    # scores); a uniform head adds x_1^T v to both sides, so the pair's two heads alone.  J is block
    # diagonal: along a direction joining U_a (or U_b) to a third U_c the pair (a, b)'s identities are
    # constant (K E_b = 0 fixes head b and x_2, so head a still scores W_a R^T x_2 = W_a x_2 = 0 and stays
    # uniform); their central differences there were rounding only, ~eps 1e7 / _STEP_J for tokens scaled
    # ~1e7 beside a unit head, which J^+ coupled into the unit-token directions (issue 23)
    pairs = identity_pairs([E.shape[1] for E in Ef])
    rows: dict[tuple[int, int], list[int]] = {}
    for i, (a, b) in enumerate(pairs):
        rows.setdefault((min(a, b), max(a, b)), []).append(i)
    J = np.zeros((len(X1), n))

    for j, (g, h, K) in enumerate(dirs):
        idx = np.array(rows[(g, h)])
        Qj, X1j = Q[np.stack([2 * idx, 2 * idx + 1], axis=1).reshape(-1)], X1[idx]
        ids = [_identities([rotated[g], rotated[h]], Qj, X1j)
               for rotated in (rotate(K, t) for t in (_STEP_J, -_STEP_J))]
        J[idx, j] = (ids[0] - ids[1]) / (2 * _STEP_J)
        for t in (_STEP_E, -_STEP_E):
            rotated = rotate(K, t)
            for k in (g, h):  # K moves only U_g and U_h: the other heads' reduced runs do not change
                for i, (e, e0) in enumerate(zip(learned_errors(rotated, k), base[k])):
                    slopes[i, k, j] = max(slopes[i, k, j], float(np.linalg.norm(e - e0)) / _STEP_E)
    P, reach, rank = _range_inverse(J, params, Q, X1, rows, [(g, h) for g, h, _ in dirs])
    k_hat = P @ r
    # |k - k_hat| entrywise on J's range: P times the identities' noise, their rounding (tol) and
    # their second-order term (~ ||J||_2 ||k||^2, with a factor 2 of margin)
    norm_P = float(np.linalg.norm(P, 2))
    k0 = float(np.linalg.norm(k_hat)) + norm_P * float(np.linalg.norm(tol))
    # the heads outside each identity's pair, for every rotation up to twice that, in norm and (J of full
    # rank) per direction, then again, which must stay within it: a bound consistent with itself, as the
    # second-order margins are; per direction first (the pair's tokens see the outside head only through
    # the rotation joining them to it), else the norm alone
    k_lim = 2 * k0
    boxes = [2 * (np.abs(k_hat) + np.abs(P) @ tol)] if rank == n else []
    for box in [*boxes, None]:
        tol_out = tol + _outside_heads(params, Ef, Q, pairs, k_lim, box, not arith.eps)
        kappa = np.abs(k_hat) + np.abs(P) @ tol_out  # |k_j| per direction
        k0 = float(np.linalg.norm(k_hat)) + norm_P * float(np.linalg.norm(tol_out))
        if k0 <= k_lim and (box is None or bool(np.all(kappa <= box))):
            break
    else:
        raise PrecisionLossError(
            f"the C.1 identities allow a rotation of {k0:.3g} rad off the given bases once the heads outside "
            "their pairs are bounded, more than they were bounded for: float64 cannot certify C.1 closely "
            "enough here; use mpmath (arith=MP(dps))"
        )
    tol, k0 = tol_out, min(k0, float(np.linalg.norm(kappa)))
    _check_rotation_fit(J, r, k_hat, tol, k0)
    spread = np.abs(P) @ (tol + 2 * float(np.linalg.norm(J, 2)) * k0 * k0)
    k_bound = float(np.linalg.norm(k_hat)) + float(np.linalg.norm(spread))
    # the re-run's own curvature over the rotation k_hat (no query): its answer at k_hat minus the
    # one the directional derivative along k_hat (a step of _STEP_E, as the slopes') predicts; the
    # learner amplifies the leak (~1e2x), so its nonlinearity sets in at the relative size of its
    # response, not of its input rho_h (issue 23: 4e-6 measured where rho_h s ||k|| was 1e-8)
    norm_k = float(np.linalg.norm(k_hat))
    K_hat = sum((kj * K for kj, (_, _, K) in zip(k_hat, dirs)), np.zeros((len(Ef[0]), len(Ef[0]))))
    t = min(1.0, _STEP_E / norm_k) if norm_k > 0 else 1.0  # k_hat = 0: no rotation to bend over
    curvature = np.zeros((2, H))
    if t < 1.0:
        for k in range(H):
            far, near = learned_errors(rotate(K_hat, 1.0), k), learned_errors(rotate(K_hat, t), k)
            for i, (e, e_t, e0) in enumerate(zip(far, near, base[k])):
                curvature[i, k] = float(np.linalg.norm(e - e0 - (e_t - e0) / t))
    out = []
    S = sum(float(np.linalg.norm(v)) for _, v in params)
    for h, (W, v) in enumerate(params):
        # the rotation's relative size in head h's reduced oracle: the others' values leak k S into it
        rho = k_bound * (1 + (S - float(np.linalg.norm(v))) / max(float(np.linalg.norm(v)), 1e-300))
        if rho > MAX_ROTATION:
            seen = np.any(np.abs(r) > tol)  # a rotation measured, or only one below the resolution
            raise (AssumptionError if seen else PrecisionLossError)(
                f"the C.1 identities allow a rotation of {k_bound:.3g} rad off the given bases, which moves "
                f"head {h + 1}'s reduced oracle by {rho:.3g} of its size (above {MAX_ROTATION:.3g}: beyond "
                "first order): " + ("the target does not satisfy Assumption C.1 for them closely enough"
                                    if seen else "float64 cannot certify C.1 closely enough for a head this "
                                    "small beside the others; use mpmath (arith=MP(dps))")
            )
        terms = []
        for i, size_h in enumerate((float(np.linalg.norm(W)), float(np.linalg.norm(v)))):
            slope = float(np.linalg.norm(slopes[i, h]))
            if float(slopes[i, h] @ reach) > 2.0**-20 * max(slope, 1e-300):
                terms.append(float("inf"))  # a rotation the identities cannot see moves this head
                continue
            # the response to k: the one-sided slopes times |k_j| <= |k_hat_j| + spread_j; the
            # second-order remainder: the lift's 2 k^2 ||W||, the re-run's rho times its first-order
            # response, each with a factor 2 of margin
            second = 2 * (k_bound * (rho * slope + 2 * k_bound * size_h) + curvature[i, h])
            first = float(slopes[i, h] @ (np.abs(k_hat) + spread))
            terms.append((first + second) * (1 + 8 * n * FLOAT64.eps))
        out.append((terms[0], terms[1]))
    return out, k_bound
