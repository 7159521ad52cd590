"""The two learners of Thm B.1 and the rotated one: bisection on membership answers (App. B).

``learn_membership`` (``paper``: Hoeffding sampling for v, Eqs. (12)-(15); ``bisect``: angle
bisection, beyond the paper) then the W bisection of Eqs. (16)-(29);
``learn_membership_rotated`` runs ``bisect`` on the rotated target to drop the margin.  The
derivation is the room's docstring (:mod:`attnproof.theorems.membership`).
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np

from ...arith import FLOAT64, Arith
from ...errors import AssumptionError, InvalidInputError, PrecisionLossError, QueryBudgetExceeded
from ...prelude import check_arith, check_count
from ...measure import Session
from ...verify.registry import LEARNERS, learner
from ...recovery import Recovery
from .oracle import MembershipOracle, RotatedQueries
from .parameters import (
    CHUNK,
    DELTA,
    DELTA_ROT,
    EPS_W,
    MAX_SAMPLES,
    MAX_VERBATIM_SAMPLES,
    METHOD,
    METHODS,
    W_BOUND,
    angle_tau,
    apriori_interval,
    check_assumptions,
    check_precision,
    default_mu,
    generator,
    hoeffding_delta,
    hoeffding_radius,
    hoeffding_samples,
    paper_eps_v,
    paper_tau,
    query_count,
    rotation_margin,
    sphere_constant,
    step_counts,
)

# --- the learners --------------------------------------------------------------------------


def _bisect(session: Session, lo: np.ndarray, hi: np.ndarray, probes: Any, lo_answer: np.ndarray,
            steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` parallel bisections (one batch per step); ``probes(t)`` builds the queries at
    the midpoints t, and an answer equal to ``lo_answer`` moves ``lo`` up.  The intervals stay
    closed, so a zero answer (f = 0) at the midpoint is consistent either way.

    Raises
    ------
    PrecisionLossError
        A midpoint rounds to an endpoint: the arithmetic cannot halve the interval further.
    """
    for _ in range(steps):
        mid = (lo + hi) / 2
        if np.any((mid == lo) | (mid == hi)):
            raise PrecisionLossError(f"{session.arith.name} cannot halve a bisection interval further")
        ans = np.asarray(session.ask(probes(mid)))
        up = ans == lo_answer
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return lo, hi


def probe(i: int, j: int, a: Any, s: Any, d: int, arith: Arith = FLOAT64) -> np.ndarray:
    """``X(a) = [((s/a) e_i + a e_j)^T; (a e_j)^T]`` (App. B, before Eq. (19))."""
    X = arith.zeros((2, d))
    X[0, i] = s / a
    X[0, j] = X[0, j] + a
    X[1, j] = a
    return X


def angle_probes(theta: Any, d: int, arith: Arith = FLOAT64) -> np.ndarray:
    """One-token queries ``x(theta_j) = sin(theta_j) e_0 - cos(theta_j) e_j``, j = 1..d-1: (d-1, 1, d)."""
    X = arith.zeros((d - 1, 1, d))
    for j, t in enumerate(theta, start=1):
        X[j - 1, 0, 0] = arith.sin(t)
        X[j - 1, 0, j] = -arith.cos(t)
    return X


def _v_by_angles(session: Session, n_v: int) -> tuple[np.ndarray, list]:
    """sign(v_0) with one query, then every psi_j = atan(v_j / v_0) by bisection.

    Returns the unit v_hat and the enclosures (mpmath.iv) of v*/||v*||."""
    arith, d = session.arith, session.oracle.d
    with arith.context():
        e0 = arith.zeros((1, d))
        e0[0, 0] = arith.scalar(1)
        sign0 = 1 if session.ask(e0) == 1 else -1
        lo = np.array([-arith.pi / 2] * (d - 1), dtype=arith.dtype)
        hi = -lo
        # sign(v_0) sign(v^T x(theta)) = sign(theta - psi): theta below psi answers 0 if v_0 > 0
        lo, hi = _bisect(session, lo, hi, lambda t: angle_probes(t, d, arith), np.int8(sign0 < 0), n_v)
        w = np.array([arith.scalar(1)] + [arith.tan((a + b) / 2) for a, b in zip(lo, hi, strict=True)],
                     dtype=object)
        v = arith.asarray(sign0 * w / arith.hypot(w))
        iv_w = [mpmath.iv.mpf(1)] + [mpmath.iv.tan(mpmath.iv.mpf([a, b])) for a, b in zip(lo, hi)]
        iv_norm = mpmath.iv.sqrt(sum(x * x for x in iv_w))
        return v, [sign0 * x / iv_norm for x in iv_w]


def _v_by_sampling(session: Session, k: int, delta: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, list]:
    """Eq. (14): v_hat = (1 / (R k)) sum (2 MQ(x_i) - 1) x_i, x_i uniform on the sphere, in chunks;
    the enclosures are v_hat +- t (Hoeffding radius at delta)."""
    arith, d = session.arith, session.oracle.d
    total = np.zeros(d)
    for start in range(0, k, CHUNK):
        x = rng.standard_normal((min(CHUNK, k - start), d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        h = 2.0 * np.asarray(session.ask(x[:, None, :]), dtype=float) - 1.0
        total += h @ x
    with arith.context():
        v = arith.asarray(total) / (sphere_constant(d, arith) * k)
        t = hoeffding_radius(k, d, delta)
        return v, [mpmath.iv.mpf([x - t, x + t]) for x in v]


def _logit(p: Any) -> Any:
    return mpmath.log(p / (1 - p))


@learner(
    name="membership",
    result="Thm B.1",
    relies_on=(
        "thm4.1/one-token", "thmB.1/sphere-constant", "thmB.1/halfspace-mean-d2", "thmB.1/probe-value",
        "thmB.1/monotone", "thmB.1/apriori-interval", "thmB.1/ratio-error", "thmB.1/accuracy-algebra",
        "thmB.1/angle-sign", "thmB.1/angle-to-vector", "lemmaA.1/lipschitz-closed-form", "thmB.1/run",
    ),
    arithmetics=("float64", "mpmath"),
    queries="bisect: 1 + (d-1) n_v + d^2 n_W; paper: k + d^2 n_W (n_v, n_W = log2(width / tau))",
    count=lambda d, method=METHOD, W_bound=W_BOUND, mu=None, eps_W=EPS_W, delta=DELTA, samples=None, **_: (
        query_count(d, method, W_bound, default_mu(d) if mu is None else mu, eps_W, delta, samples)),
)
def learn_membership(
    oracle: MembershipOracle,
    *,
    W_bound: float,
    mu: float,
    eps_W: float,
    delta: float = DELTA,
    method: str = METHOD,
    samples: int | None = None,
    rng: np.random.Generator | int | None = None,
    arith: Arith = FLOAT64,
) -> Recovery:
    """Recover (W*, v*/||v*||) from membership queries (Thm B.1).

    Parameters
    ----------
    oracle : MembershipOracle
        Answers 1[f*(X) > 0]; its budget bounds every loop.
    W_bound, mu : float
        Known ``W >= 2`` with ``||W*||_F <= W`` and margin ``min |v*_i| >= mu``.
    eps_W, delta : float
        Target ``||W_hat - W*||_F <= eps_W`` (and ``||v_hat - v*||_inf <= eps_v``, the theorem's
        eps_v); delta is the failure probability of ``paper`` (``bisect`` never fails).
    method : {"bisect", "paper"}
        ``paper``: App. B verbatim (Hoeffding sampling, then the W bisection); ``bisect``: angle
        bisection for v (beyond the paper), then the same W bisection.
    samples : int, optional
        ``paper`` only: the sample budget k.  Default: the verbatim Hoeffding count, refused if
        it exceeds :data:`MAX_VERBATIM_SAMPLES`; any k above :data:`MAX_SAMPLES` is refused.  A
        smaller k is run as given, and the
        diagnostics report the radius and the probability it actually buys.
    rng : numpy.random.Generator or int, optional
        ``paper`` only: source of the sphere samples, or its integer seed (default seed 0;
        :func:`~.parameters.generator`).
    arith : Arith
        float64 or mpmath: the bisection is limited only by the arithmetic.

    Returns
    -------
    Recovery
        Diagnostics: method, n_v, n_W, tau, k, the bought (eps_v, delta), the a-posteriori
        bounds ``error_bound`` / ``error_bound_v`` from the final intervals, ``guarantee_met``.

    Raises
    ------
    AssumptionError
        Bad (W, mu, eps_W, delta), or answers contradicting the margin, or the norm assumption
        where it matters: an entry certainly beyond ``[-W, W]`` (refused, like a broken margin,
        rather than clipped into a wrong answer).  Otherwise the reported bound holds without the
        norm assumption, and ``norm_lower_bound`` above W says that it fails.
    PrecisionLossError
        tau is below what the arithmetic can resolve.
    QueryBudgetExceeded
        The oracle's budget (or, for the verbatim count, MAX_VERBATIM_SAMPLES) is too small, or
        ``samples`` exceeds MAX_SAMPLES (every loop has a stated ceiling).
    InvalidInputError
        A non-real parameter, ``samples`` not a positive integer, or ``rng`` neither a Generator
        nor a seed.

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof.models import Attention
    >>> from attnproof.theorems.membership import MembershipOracle
    >>> W, v = np.array([[1.0, -0.5], [0.25, 1.5]]), np.array([0.6, -0.8])
    >>> oracle = MembershipOracle(Attention(W, v))
    >>> rec = learn_membership(oracle, W_bound=2.0, mu=0.5, eps_W=1e-6, method="bisect")
    >>> rec.queries == query_count(2, "bisect", 2.0, 0.5, 1e-6, 0.01) == oracle.queries
    True
    >>> bool(np.linalg.norm(rec.W - W) <= 1e-6), rec.diagnostics["guarantee_met"]
    (True, True)
    """
    d = oracle.d
    W_bound, mu, eps_W, delta = check_assumptions(W_bound, mu, eps_W, delta, d)
    rng, arith = generator(rng), check_arith("arith", arith)
    samples = None if samples is None else check_count("samples", samples, minimum=1)
    if method not in METHODS:
        raise InvalidInputError(f"unknown method {method!r}: use one of {METHODS}")
    check_precision(d, W_bound, mu, eps_W, method, arith)
    session = Session(oracle, arith, learner=_MEMBERSHIP)
    eps_v = paper_eps_v(eps_W, mu, W_bound, d)
    n_v, n_W = step_counts(d, W_bound, mu, eps_W)
    diag = session.diagnostics
    diag.update(method=method, n_W=n_W, eps_v=eps_v, tau=paper_tau(eps_W, mu, W_bound, d),
                direction_only="v_hat estimates v*/||v*||: signs are invariant under v -> c v")
    iv_dps = arith.digits + 10  # the enclosures and the a-posteriori bounds: 10 guard digits
    with mpmath.workdps(iv_dps), arith.interval(iv_dps):
        if method == "bisect":
            diag.update(n_v=n_v, tau_psi=angle_tau(eps_v, mu, d))
            v, v_iv = _v_by_angles(session, n_v)
            diag["confidence"] = 1.0
        else:
            verbatim = hoeffding_samples(eps_v, d, delta)
            if samples is None and verbatim > MAX_VERBATIM_SAMPLES:
                raise QueryBudgetExceeded(
                    f"the verbatim Hoeffding count is k = {verbatim:.3e} queries "
                    f"(eps_v = {eps_v:.3e}); pass "
                    "samples=k explicitly: the learner reports the radius and probability that k buys"
                )
            k = verbatim if samples is None else samples
            if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
                raise InvalidInputError(f"samples must be a positive integer; got {k!r}")
            if k > MAX_SAMPLES:
                raise QueryBudgetExceeded(
                    f"samples = {k:.3e} exceeds the ceiling MAX_SAMPLES = {MAX_SAMPLES:.0e} of the sampling "
                    "step (refused before any query); use method='bisect', which needs no sampling"
                )
            if oracle.remaining is not None and k + d * d * n_W > oracle.remaining:
                raise QueryBudgetExceeded(f"{k + d * d * n_W} queries needed, {oracle.remaining} left")
            v, v_iv = _v_by_sampling(session, int(k), delta, rng)
            diag.update(k=int(k), k_verbatim=verbatim, eps_v_bought=hoeffding_radius(k, d, delta),
                        delta_bought=hoeffding_delta(k, eps_v, d), confidence=1 - delta)
        small = [i for i, x in enumerate(v_iv) if abs(x).b < mu]
        if small:
            raise AssumptionError(
                f"|v*_i / ||v*||| < mu = {mu} certainly at i = {small}: the margin assumption fails "
                "(a zero entry of v*?); see check_target for what stays identifiable"
            )
        W, w_iv, diag["norm_lower_bound"] = _w_by_bisection(session, v, v_iv, W_bound, mu, n_W)
        err_W, err_v, diag["max_entry_bound"] = _posterior(W, w_iv, v, v_iv)
    diag["guarantee_met"] = err_W <= eps_W and err_v <= eps_v
    # the bounds are the theorem's promise, checked above (guarantee_met), not a relative guard; a
    # bisection never re-asks: every query halves an interval
    return session.recovery(W=W, v=v, W_error=err_W, v_error=err_v, guard=False, reasked=0, method=method,
                            W_bound=W_bound, mu=mu, eps_W=eps_W, delta=delta, samples=diag.get("k"))


_MEMBERSHIP = LEARNERS["membership"]


# --- beyond the paper: dropping the margin by rotating the tokens ---------------------------


def random_orthogonal(d: int, rng: np.random.Generator, arith: Arith = FLOAT64) -> np.ndarray:
    """A Haar-random orthogonal Q (QR of a Gaussian matrix, signs fixed), orthogonal to the
    arithmetic's precision (mpmath: the QR is done at its digits)."""
    Q, _ = arith.qr(rng.standard_normal((d, d)))  # R's diagonal >= 0: the unique QR, Haar-random Q
    return Q


@learner(
    name="membership-rotated",
    result="beyond the paper (Thm B.1 without the margin)",
    relies_on=(
        "thm4.1/one-token", "thmB.1/probe-value", "thmB.1/monotone", "thmB.1/apriori-interval",
        "thmB.1/ratio-error", "thmB.1/ratio-bound", "thmB.1/accuracy-algebra", "thmB.1/angle-sign",
        "thmB.1/angle-to-vector", "thmB.1/rotation", "thmB.1/run-rotated",
    ),
    arithmetics=("float64", "mpmath"),
    queries="1 + (d-1) n_v + d^2 n_W at mu' = delta_rot / (2 d c_d)",
    count=lambda d, W_bound=W_BOUND, eps_W=EPS_W, delta_rot=DELTA_ROT, **_: query_count(
        d, "bisect", W_bound, rotation_margin(d, delta_rot), eps_W, 0.5),
)
def learn_membership_rotated(
    oracle: MembershipOracle,
    *,
    W_bound: float,
    eps_W: float,
    delta_rot: float = DELTA_ROT,
    rng: np.random.Generator | int | None = None,
    arith: Arith = FLOAT64,
) -> Recovery:
    """Thm B.1 without the per-coordinate margin: ``bisect`` on the rotated target (Q^T W* Q, Q^T v*).

    For a Haar-random Q, ``Q^T v*`` is uniform on the sphere, so every coordinate is at least
    ``mu' = rotation_margin(d, delta_rot)`` with probability ``>= 1 - delta_rot``; the Frobenius
    error is invariant under ``W -> Q W Q^T``, and ``||Q Delta||_2 <= sqrt(d) ||Delta||_inf``.
    Only ``||W*||_F <= W`` and ``v* != 0`` are assumed.  Cost: mu' replaces mu in
    :func:`query_count`, i.e. about ``(3.5 d^2 + 5 (d - 1)) log2(mu / mu')`` more queries and
    ``5 log10(mu / mu')`` more digits (the angle accuracy scales like mu^5).

    Returns
    -------
    Recovery
        ``W = Q W'_hat Q^T``, ``v = Q v'_hat``; diagnostics of the inner ``bisect`` run plus
        ``mu_rot``, ``delta_rot``, ``margin_found`` (min |v'_hat_i|) and ``error_bound_v2``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnproof.arith import MP
    >>> from attnproof.models import Attention
    >>> from attnproof.theorems.membership import MembershipOracle
    >>> W, v = np.array([[1.0, -0.5], [0.25, 1.5]]), np.array([1.0, 0.0])   # v*_2 = 0: no margin
    >>> oracle = MembershipOracle(Attention(W, v, MP(40)))
    >>> rec = learn_membership_rotated(oracle, W_bound=2.0, eps_W=1e-3, rng=np.random.default_rng(0),
    ...                                arith=MP(40))
    >>> float(np.sqrt(np.sum((rec.W - W) ** 2))) <= 1e-3, rec.diagnostics["guarantee_met"]
    (True, True)
    """
    d = oracle.d
    rng, arith = generator(rng), check_arith("arith", arith)
    session = Session(oracle, arith, learner=_ROTATED)
    mu_rot = rotation_margin(d, delta_rot)
    Q = random_orthogonal(d, rng, arith)
    inner = learn_membership(RotatedQueries(oracle, Q), W_bound=W_bound, mu=mu_rot, eps_W=eps_W, delta=0.5,
                             method="bisect", arith=arith)
    with arith.context():
        W, v = Q @ inner.W @ Q.T, Q @ inner.v
        margin = float(min(abs(x) for x in inner.v))
    err_W, err_v = inner.diagnostics["error_bound"], inner.diagnostics["error_bound_v"]
    session.diagnostics.update(inner.diagnostics, method="rotated", mu_rot=mu_rot, delta_rot=delta_rot,
                               margin_found=margin, error_bound_v2=math.sqrt(d) * err_v,
                               confidence=1 - delta_rot)
    return session.recovery(W=W, v=v, W_error=err_W, v_error=err_v, guard=False, reasked=0, W_bound=W_bound,
                            eps_W=eps_W, delta_rot=delta_rot)


_ROTATED = LEARNERS["membership-rotated"]


def _w_by_bisection(session: Session, v: np.ndarray, v_iv: list, W_bound: float, mu: float,
                    n_W: int) -> tuple[np.ndarray, list, float]:
    """Eqs. (18)-(28) for all d^2 entries in parallel: one batch of d^2 probes per step.

    Returns W_hat, the enclosures ``(interval, i, j)`` of W*_ij and a certain lower bound on
    ``||W*||_F`` (:func:`_check_norm`).  The point estimate clips p to
    the band ``[sigma(-1/2), sigma(1/2)]`` as Eq. (28) does; the enclosures do not (only to
    ``(0, 1)``, where ``p = sigma(s W*_ij)`` lies whatever W* is), so they hold without the norm
    assumption, and the answers are checked against it (:func:`_check_norm`).

    Raises
    ------
    AssumptionError
        The answers contradict ``||W*||_F <= W`` or the margin (:func:`_check_norm`).
    """
    arith, d = session.arith, session.oracle.d
    iv = mpmath.iv
    with arith.context():
        a_lo, a_hi = apriori_interval(W_bound, mu, arith)
        i_idx, j_idx = np.divmod(np.arange(d * d), d)
        alpha = [v[j] / v[i] for i, j in zip(i_idx, j_idx)]
        sgn = [1 if x > 0 else -1 for x in alpha]
        s = [-g / (2 * arith.scalar(W_bound)) for g in sgn]
        # below a*, sign f(X(a)) = sign(v_i) sign(s): the answer that moves lo up
        lo_answer = np.array([np.int8((v[i] > 0) == (g < 0)) for i, g in zip(i_idx, sgn)])

        def probes(a: np.ndarray) -> np.ndarray:
            return np.stack([probe(i, j, x, t, d, arith) for i, j, x, t in zip(i_idx, j_idx, a, s)])

        lo, hi = _bisect(session, np.array([a_lo] * (d * d), dtype=arith.dtype),
                         np.array([a_hi] * (d * d), dtype=arith.dtype), probes, lo_answer, n_W)
        band = (1 / (1 + mpmath.exp(mpmath.mpf(1) / 2)), 1 / (1 + mpmath.exp(-mpmath.mpf(1) / 2)))
        W = arith.zeros((d, d))
        w_iv = []
        for k, (i, j) in enumerate(zip(i_idx, j_idx)):
            p = 2 * W_bound * abs(alpha[k]) * ((lo[k] + hi[k]) / 2) ** 2  # Eqs. (26)-(28), clipped
            p = min(max(p, band[0]), band[1])
            W[i, j] = arith.scalar(-2 * W_bound * sgn[k] * _logit(p))
            p_iv = 2 * W_bound * abs(v_iv[j] / v_iv[i]) * iv.mpf([lo[k], hi[k]]) ** 2
            w_iv.append((-2 * W_bound * sgn[k] * _logit_enclosure(p_iv), int(i), int(j)))
        hits = [(int(i), int(j)) for k, (i, j) in enumerate(zip(i_idx, j_idx))
                if lo[k] == a_lo or hi[k] == a_hi]
    return W, w_iv, _check_norm(w_iv, hits, W_bound)


def _logit_enclosure(p_iv: Any) -> Any:
    """An enclosure of ``sigma^{-1}(p) = log(p / (1 - p))`` for every p in ``p_iv`` inside (0, 1)
    (rounded outwards; an end at or beyond 0 or 1 gives -inf or +inf).  Empty (p_iv outside (0, 1),
    which no sigmoid can answer) gives the interval of +-inf beyond the nearer end."""
    iv = mpmath.iv

    def logit(x: Any) -> Any:
        return iv.log(iv.mpf(x) / (1 - iv.mpf(x)))

    low = -mpmath.inf if p_iv.a <= 0 else mpmath.inf if p_iv.a >= 1 else logit(p_iv.a).a
    high = -mpmath.inf if p_iv.b <= 0 else mpmath.inf if p_iv.b >= 1 else logit(p_iv.b).b
    return iv.mpf([low, high])


def _check_norm(w_iv: list, hits: list, W_bound: float) -> float:
    """Refuse (:class:`AssumptionError`) when the answers certainly break the norm assumption in a
    way that makes the clip of Eq. (28) wrong, as the margin check does for v: an enclosure of some
    W*_ij lies wholly outside ``[-W, W]`` (then p lies outside the clip band and the paper's
    estimate is off by the clip), or a bisection ended on an end of Eq. (22)'s interval (then the
    enclosure itself is in doubt).  The latter is certain: the assumptions put a* in
    ``[sqrt(sigma(-1/2) mu / (2W)), sqrt(sigma(1/2) / (2 W mu))]``, at least ``0.08 sqrt(mu / W)``
    inside both ends, while the last interval is at most ``2 tau < 0.08 sqrt(mu / W)`` wide.

    Returns the certain lower bound on ``||W*||_F`` from the enclosures: above W, the assumption
    fails, yet every entry is within the band, so the answer and its (unclipped) bound stand.
    """
    if hits:
        raise AssumptionError(
            f"the bisection for W*_ij at (i, j) = {hits[:5]} ended on an end of Eq. (22)'s a-priori "
            "interval: the answers contradict ||W*||_F <= W or the margin (a* lies outside the interval "
            "the assumptions allow), or, with method 'paper' and fewer samples than Hoeffding's count, "
            "v_hat's signs are wrong (the probes then miss the margin)"
        )
    iv = mpmath.iv
    mig = [iv.mpf(0) if e.a <= 0 <= e.b else min(abs(e.a), abs(e.b)) for e, _, _ in w_iv]  # min |W*_ij|
    outside = [(i, j) for m, (_, i, j) in zip(mig, w_iv) if m.a > W_bound]
    low = mpmath.mpf(iv.sqrt(sum((m * m for m in mig), iv.mpf(0))).a)  # rounded down: a lower bound
    if outside:
        raise AssumptionError(
            f"the answers put |W*_ij| > W = {W_bound} at (i, j) = {outside[:5]}, so ||W*||_F >= "
            f"{mpmath.nstr(low, 6)}: the norm assumption ||W*||_F <= W fails, and the clip of p to "
            f"[sigma(-1/2), sigma(1/2)] (Eq. (28)) would make the answer wrong; rerun with W_bound >= "
            f"{mpmath.nstr(low, 6)}"
        )
    return float(low)


def _posterior(W: np.ndarray, w_iv: list, v: np.ndarray, v_iv: list) -> tuple[float, float, float]:
    """A-posteriori bounds from the enclosures, the largest distance from the estimate to an end
    of its enclosure (certain for bisect; on the Hoeffding event for paper): on
    ``||W_hat - W*||_F``, on ``||v_hat - v*||_inf`` and on the largest entry error of W."""
    def dist(x: Any, enc: Any) -> mpmath.mpf:
        return max(abs(mpmath.mpf(x) - enc.a), abs(mpmath.mpf(x) - enc.b))

    entry = [dist(W[i, j], e) for e, i, j in w_iv]
    err_W = float(mpmath.sqrt(mpmath.fsum(e * e for e in entry)))
    err_v = float(max(dist(x, e) for x, e in zip(v, v_iv)))
    return err_W, err_v, float(max(entry))

