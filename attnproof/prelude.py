"""What every value-query learner measures before its own probes: v* (and beta), c^T p.

These steps are shared by the Thm 4.1, Thm 5.1 (skeleton) and real-head learners, so they
live on the measuring level, below every room of :mod:`attnproof.theorems`:

* **v\\* (Thm 4.1, phase 1)**: ``f([x^T]) = x^T v*`` whatever W is (identity
  ``thm4.1/one-token``), so the d one-token queries ``[e_i^T]`` read v*.
* **(beta, v\\*) for a head with biases**: a zero token has value 0, so ``beta = f([0])``
  (``bias/zero-token``) and ``v_i = f([e_i]) - beta``: d + 1 queries.
* **the score-bias prelude**: with a zero last token the logit of ``[u^T; 0^T]`` is ``c^T u``
  (``bias/zero-last-token``), one query per probe row.
* **row taming**: with query-only scaling the term c^T p of a logit does not shrink with the
  scale, so a probe row whose |c^T p| saturates the sigmoid is shortened by an exact power of
  two.

:func:`prepare_probes` joins the last two into the one probe-preparation step the learners
call.

It also holds the shared checks of a learner's arguments (issue 23, item 10), so each refusal is
spelled once: :func:`check_rng`, :func:`check_tolerance`, :func:`check_count` (defined on the
ground floor, :mod:`attnproof.errors`, where the session uses them too), :func:`check_arith` and
:func:`check_real_array`.  An oracle's answers are checked where every learner receives them,
in :meth:`attnproof.measure.Session.ask`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .arith import Arith, parse
from .errors import (
    InvalidInputError,
    NonIdentifiableError,
    PrecisionLossError,
    ShapeError,
    check_count,
    check_rng,
    check_tolerance,
)
from .measure import BilinearSession, Probes, Scale, Session, value_errors


# --- the shared argument validators (issue 23, item 10): one spelling of each refusal ----------
# check_rng, check_tolerance and check_count live in errors.py (the ground floor, so that the
# Session below this module validates rtol with them) and are re-exported here with these two.


def check_arith(name: str, value: Any) -> Arith:
    """An arithmetic: an :class:`~attnproof.arith.Arith`, or its spelling ``"float64"``,
    ``"mp:DIGITS"`` or ``"sympy"`` (parsed).

    Raises
    ------
    InvalidInputError
        For anything else (an unknown spelling, a number, None).
    """
    if isinstance(value, Arith):
        return value
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be an Arith or one of float64, mp:DIGITS, sympy; got {value!r}")
    return parse(value)


def check_real_array(
    name: str, value: Any, arith: Arith, *, shape: tuple[int | None, ...] | None = None
) -> np.ndarray:
    """A real, finite array in ``arith`` (weights, W, a basis), of ``shape`` if given (None
    entries: any size).  Complex entries are refused, not silently cut to their real part.

    Raises
    ------
    InvalidInputError
        For complex, string or non-numeric entries (:meth:`Arith.asarray`).
    ShapeError
        For the wrong number of axes or sizes.
    NonFiniteError
        For NaN or infinite entries.
    """
    a = arith.asarray(value)
    if shape is not None and (
        a.ndim != len(shape) or any(n is not None and n != m for n, m in zip(shape, a.shape, strict=True))
    ):
        want = "(" + ", ".join("any" if n is None else str(n) for n in shape) + ")"
        raise ShapeError(f"{name} must have shape {want}; got {a.shape}")
    arith.check_finite(a, name)
    return a


def read_v(session: Session, bias: bool = False) -> tuple[Any, np.ndarray]:
    """(beta, v*) from one-token queries: d queries (beta = 0), or d + 1 with ``bias``.

    Raises
    ------
    NonIdentifiableError
        If v* = 0: f* is constant (identically beta), so every W (and c) gives the same function.
    NonFiniteError
        If an answer is NaN or infinite.
    PrecisionLossError
        If max |v*| is outside float64's safe range (float64 only; use mpmath).
    """
    oracle, arith = session.oracle, session.arith
    d = oracle.d
    tokens = np.concatenate([arith.zeros((1, d)), arith.eye(d)]) if bias else arith.eye(d)
    answers = arith.asarray(session.ask(tokens[:, None, :]))
    arith.check_finite(answers, "the oracle's one-token answers")
    beta, v = (answers[0], answers[1:] - answers[0]) if bias else (arith.scalar(0), answers)
    if all(arith.is_zero(x) for x in v):
        constant = "beta" if bias else "0"
        raise NonIdentifiableError(
            f"v* = 0: every one-token answer equals f([0]) = {constant}, so f* is constant "
            "(f(X) = alpha^T X v* + beta) and every W (and c) induces the same function; "
            "W* is not identifiable from value queries (Thm 4.1)"
        )
    if arith.safe_range and not arith.safe_range[0] <= (big := arith.abs_max(v)) <= arith.safe_range[1]:
        raise PrecisionLossError(
            f"max |v*| = {big:.3g} is outside {arith.name}'s safe range "
            f"[{arith.safe_range[0]:.3g}, {arith.safe_range[1]:.3g}]; "
            "recover in mpmath instead (arith=MP(dps))"
        )
    return beta, v


def learn_score_bias(
    session: BilinearSession, P: np.ndarray, v: np.ndarray, beta: Any, P_inv_norm: float = 1.0
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """t_k = c^T p_k from the probes ``s [p_k^T; 0^T]`` (zero last token), one query each.

    The logit is ``s c^T p_k`` (linear in the scale s = 2^k), so ``t = L / 2^k``.  Also returns
    the rounding-error bound of each t_k (:func:`attnproof.measure.value_errors`, with
    ``||c|| <= ||P^{-1}||_2 ||t||``) and its typical size (the same model's estimate, with
    ``||c|| ~ sqrt(d) ||t|| / ||P||_F``), or None twice in exact arithmetic.

    c^T p_k is read to the logits' absolute accuracy (about eps at s = 1), not relative to
    its own size: that is what the later logits, where it enters unscaled, need.  A c* that is
    0 or lost to rounding at s = 1 costs no re-ask and reads as ~0 within its bound.
    """
    arith = session.arith
    probes = Probes(P, arith.zeros((1, P.shape[1])), v, arith, offset=beta)
    rows = np.arange(P.shape[0])
    entries = (rows, np.zeros_like(rows))
    # the scale starts known, as if a value of 1 had been read at s = 1: c^T p enters every later
    # logit unscaled (query-only scaling), so it is needed to the logits' absolute accuracy only, and a
    # value lost to rounding at s = 1 is measured well enough (its error bound says so).  A scale
    # search would move such probes up to 2^max_k: a c* = 0 cost 41 re-asks at d = 4, ~92 at d = 16
    L, k = session.measure_adaptively(probes, entries, Scale(log2_top=0.0))
    t_c = L / arith.pow2(k)
    if arith.exact:  # exact arithmetic: no rounding error to bound
        return t_c, None, None
    t_norm = arith.norm(t_c)
    c_norm = P_inv_norm * t_norm
    bound = value_errors(probes, L, k, entries, W_norm=0.0, c_norm=c_norm, rounding=session.rounding)
    c_typical = math.sqrt(P.shape[0]) * t_norm / arith.norm(P)
    typical = value_errors(probes, L, k, entries, W_norm=0.0, c_norm=c_typical, Wq=np.zeros(len(rows)))
    return t_c, bound, typical


def tame_rows(t_c: np.ndarray, session: BilinearSession, bound: float = 2.0) -> np.ndarray:
    """Power-of-two factors 2^-m (exact) with ``|2^-m c^T p_k| <= bound`` for every row.

    Scaling p_k by an exact power of two changes nothing else: the learners scale the row of
    their measurements back.  Exact arithmetic never saturates and needs no taming.
    """
    arith = session.arith
    mags = np.zeros(len(t_c)) if arith.exact else arith.magnitudes(t_c)  # exact: nothing saturates
    over = mags > bound
    m = np.where(over, np.ceil(np.log2(np.where(over, mags, 1.0) / bound)), 0).astype(np.int64)
    return arith.pow2(-m)


def prepare_probes(
    session: BilinearSession,
    P: np.ndarray,
    Q: np.ndarray | None,
    v: np.ndarray,
    beta: Any,
    bias: bool,
    P_inv_norm: float = 1.0,
) -> tuple[Probes, np.ndarray]:
    """The probe set of a learner measuring ``p_k^T W* q_l`` (rows of P and Q; Q None = basis).

    Without biases this is ``Probes(P, Q, v)``.  With ``bias`` it also runs the score-bias
    prelude (d queries: ``linear`` = c^T p_k, ``linear_err`` its error bound and
    ``linear_typical`` its typical size; ``P_inv_norm`` is
    ||P^{-1}||_2, 1 for an orthonormal basis), shortens the rows whose |c^T p_k| would saturate
    the sigmoid by exact powers of two, and scales only the query token.

    Returns
    -------
    probes : Probes
        Its rows are ``shorten[k] p_k`` and ``probes.linear`` their c^T p (None without bias).
    shorten : array
        The exact power-of-two factor of each row (ones without bias): a learner divides the
        rows of its measured matrix by it.
    """
    arith = session.arith
    if not bias:
        return Probes(P, Q, v, arith), arith.pow2(np.zeros(P.shape[0], dtype=np.int64))
    t_c, t_err, t_typical = learn_score_bias(session, P, v, beta, P_inv_norm)
    shorten = tame_rows(t_c, session)
    D = arith.to_float(shorten)
    probes = Probes(
        P * shorten[:, None], Q, v, arith, offset=beta, linear=t_c * shorten, scale_query_only=True,
        linear_err=None if t_err is None else t_err * D,
        linear_typical=None if t_typical is None else t_typical * D,
    )
    return probes, shorten


__all__ = [
    "check_rng",
    "check_tolerance",
    "check_count",
    "check_arith",
    "check_real_array",
    "read_v",
    "learn_score_bias",
    "tame_rows",
    "prepare_probes",
]
