"""What a learner returns, and how a recovery is scored against the hidden target."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .arith import Arith, parse


@dataclass(frozen=True)
class Recovery:
    """The result of a learner.

    Attributes
    ----------
    W, v : numpy arrays
        Recovered parameters, in the learner's arithmetic.
    queries : int
        Oracle queries the learner used (the paper's currency), counted by the oracle.
    arith : Arith
        The arithmetic the learner computed in (a name such as ``"mp:60"`` is parsed).
    diagnostics : dict
        Learner-specific facts.  Shared schema: ``queries_formula`` (the learner's count for
        what it found), ``reasked_queries`` (queries beyond it: probes asked again at another
        scale), ``error_bound`` (an a-posteriori bound on ||W_hat - W*||_F in floating point;
        absent for exact arithmetic, where the error is 0), ``error_bound_v``.
    c, beta : optional
        For heads with biases: the score bias c (scores ``x_i^T W x_N + c^T x_i``) and the
        output offset beta; None for the bias-free model of the paper.
    """

    W: np.ndarray
    v: np.ndarray
    queries: int
    arith: Arith
    diagnostics: dict[str, Any] = field(default_factory=dict)
    c: np.ndarray | None = None
    beta: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "arith", parse(self.arith))

    @property
    def error_bound(self) -> float | None:
        """The learner's a-posteriori bound on ||W_hat - W*||_F (None: exact arithmetic)."""
        return self.diagnostics.get("error_bound")


@dataclass(frozen=True)
class Score:
    """Errors of a recovery against the truth (computed in the learner's arithmetic).

    Norms are scaled (the largest entry factored out), so targets of 1e-200 neither underflow
    nor report a wrong answer as exact.  Bits are given for W and v separately (a W recovered
    as noise must not borrow the bits of a well-recovered v); ``bits`` is the smaller.
    """

    err_W: float
    rel_err_W: float
    err_v: float
    rel_err_v: float
    max_entry_err: float
    bits_W: float | None  # None when that part is recovered exactly (infinite bits)
    bits_v: float | None
    err_c: float | None = None
    err_beta: float | None = None

    @property
    def bits(self) -> float | None:
        """min(bits_W, bits_v); None when both are exact."""
        finite = [b for b in (self.bits_W, self.bits_v) if b is not None]
        return min(finite) if finite else None

    def as_dict(self) -> dict[str, Any]:
        out = {
            "err_W": self.err_W,
            "rel_err_W": self.rel_err_W,
            "err_v": self.err_v,
            "rel_err_v": self.rel_err_v,
            "max_entry_err": self.max_entry_err,
            "bits_W": self.bits_W,
            "bits_v": self.bits_v,
            "bits": self.bits,
            "exact": self.bits is None,
        }
        if self.err_c is not None:
            out.update(err_c=self.err_c, err_beta=self.err_beta)
        return out


def score(
    rec: Recovery, W: Any, v: Any, arith: Arith | None = None, c: Any = None, beta: Any = None
) -> Score:
    """Errors and bits of precision of ``rec`` against (W, v) (and c, beta for a head with biases).

    ``bits_W = -log2(max |W_hat - W*|_ij / max |W*|_ij)`` (likewise for v), the unit of the
    extraction literature.  Everything is computed in ``arith`` (default: the recovery's own)
    and rounded to float only at the end, so mpmath errors of 1e-100 are reported faithfully.
    """
    arith = rec.arith if arith is None else arith
    with arith.context():
        dW = _diff(rec.W, W, arith)
        dv = _diff(rec.v, v, arith)
        err_W, norm_W = arith.norm(dW), arith.norm(W)
        err_v, norm_v = arith.norm(dv), arith.norm(v)
        err_c = err_beta = None
        if c is not None or beta is not None:
            err_c = arith.norm(_diff(rec.c, c, arith)) if c is not None else 0.0
            err_beta = arith.norm(_diff([rec.beta], [beta], arith)) if beta is not None else 0.0
        return Score(
            err_W=err_W,
            rel_err_W=_ratio(err_W, norm_W),
            err_v=err_v,
            rel_err_v=_ratio(err_v, norm_v),
            max_entry_err=2.0 ** max(arith.log2_abs_max(dW), arith.log2_abs_max(dv)),
            bits_W=_bits(dW, W, arith),
            bits_v=_bits(dv, v, arith),
            err_c=err_c,
            err_beta=err_beta,
        )


def _diff(a: Any, b: Any, arith: Arith) -> np.ndarray:
    return arith.asarray(a) - arith.asarray(b)


def _ratio(err: float, size: float) -> float:
    if size:
        return err / size
    return 0.0 if err == 0 else math.inf


def _bits(diff: np.ndarray, truth: Any, arith: Arith) -> float | None:
    """log2(max |truth|) - log2(max |diff|), without underflow; None if diff is exactly 0."""
    err = arith.log2_abs_max(diff)
    if err == -math.inf:
        return None
    return arith.log2_abs_max(truth) - err



@dataclass(frozen=True)
class MultiHeadRecovery:
    """The result of a multi-head learner (Sec. 7, App. C): one :class:`Recovery` per head.

    Attributes
    ----------
    heads : tuple of Recovery
        Per head h: W^(h) (d x d), v^(h) (d,), the queries its single-head run used, and
        that run's diagnostics.  Heads are recovered up to a permutation (Prop. C.2).
    bases : tuple of arrays
        The orthonormal bases E_h (d x d_h) the heads were learned in.
    queries : int
        Every oracle query the learner used (all heads, checks and any Hessian probes).
    arith : str
    diagnostics : dict
        Learner-wide facts, including ``error_bound`` (an a-posteriori bound on
        ``sqrt(sum_h ||W_hat^(h) - W^(h)||_F^2)`` in floating point).
    """

    heads: tuple[Recovery, ...]
    bases: tuple[np.ndarray, ...]
    queries: int
    arith: str
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def params(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """[(W^(h), v^(h))] in the order recovered (ready for ``MultiHeadAttention``)."""
        return [(r.W, r.v) for r in self.heads]


def score_heads(rec: MultiHeadRecovery, heads: list[tuple[Any, Any]], arith: Arith) -> dict[str, Any]:
    """Score a multi-head recovery against the true heads, matching heads optimally.

    Heads are identifiable only up to a permutation (Prop. C.2), so the recovered heads are
    matched to the true ones by minimum total squared error (Hungarian algorithm on float
    errors), then every matched pair is scored with :func:`score` in ``arith``.

    Returns
    -------
    dict
        ``err_W`` (sqrt of the sum of squared Frobenius errors), ``err_v``, ``max_entry_err``,
        ``bits`` (None if exact), ``permutation`` (true head index of each recovered head).
    """
    from scipy.optimize import linear_sum_assignment

    if len(heads) != len(rec.heads):
        return {
            "err_W": math.inf,
            "err_v": math.inf,
            "max_entry_err": math.inf,
            "bits": -math.inf,
            "permutation": None,
            "exact": False,
        }
    flo = [
        (arith.to_float(np.asarray(W, dtype=object)), arith.to_float(np.asarray(v, dtype=object)))
        for W, v in heads
    ]
    cost = np.array(
        [
            [
                float(np.sum((arith.to_float(r.W) - W) ** 2) + np.sum((arith.to_float(r.v) - v) ** 2))
                for W, v in flo
            ]
            for r in rec.heads
        ]
    )
    rows, cols = linear_sum_assignment(cost)
    pairs = zip(rows, cols, strict=True)
    scores = [score(rec.heads[i], heads[j][0], heads[j][1], arith) for i, j in pairs]
    top = max(
        max(abs(float(x)) for x in np.ravel(arith.to_float(np.asarray(a, dtype=object))))
        for W, v in heads
        for a in (W, v)
    )
    max_err = max(s.max_entry_err for s in scores)
    bits = None if max_err == 0 else (math.log2(top) - math.log2(max_err) if top > 0 else -math.inf)
    return {
        "err_W": math.sqrt(sum(s.err_W**2 for s in scores)),
        "err_v": math.sqrt(sum(s.err_v**2 for s in scores)),
        "max_entry_err": max_err,
        "bits": bits,
        "exact": bits is None,
        "permutation": [int(cols[k]) for k in np.argsort(rows)],
    }


__all__ = ["Recovery", "Score", "score", "MultiHeadRecovery", "score_heads"]
