"""What a learner returns, and how a recovery is scored against the hidden target."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np

from .arith import Arith


@dataclass(frozen=True)
class Recovery:
    """The result of a learner.

    Attributes
    ----------
    W, v : numpy arrays
        Recovered parameters, in the learner's arithmetic.
    queries : int
        Oracle queries the learner used (the paper's currency), counted by the oracle.
    arith : str
        Name of the arithmetic the learner computed in.
    diagnostics : dict
        Learner-specific facts: probe family, redraws, rescaled probes, condition numbers,
        a first-order error bound, ...
    c, beta : optional
        For heads with biases: the score bias c (scores ``x_i^T W x_N + c^T x_i``) and the
        output offset beta; None for the bias-free model of the paper.
    """

    W: np.ndarray
    v: np.ndarray
    queries: int
    arith: str
    diagnostics: dict[str, Any] = field(default_factory=dict)
    c: np.ndarray | None = None
    beta: Any = None


@dataclass(frozen=True)
class Score:
    """Errors of a recovery against the truth (computed in the learner's arithmetic)."""

    err_W: float
    rel_err_W: float
    err_v: float
    max_entry_err: float
    bits: float | None  # None when the recovery is exact (infinite bits)

    def as_dict(self) -> dict[str, Any]:
        return {
            "err_W": self.err_W,
            "rel_err_W": self.rel_err_W,
            "err_v": self.err_v,
            "bits": self.bits,
            "exact": self.bits is None,
        }


def score(rec: Recovery, W: Any, v: Any, arith: Arith) -> Score:
    """Frobenius / 2-norm errors and bits of precision of ``rec`` against (W, v).

    ``bits = -log2(max_entry_error / max_entry)`` over the entries of W and v together, the
    unit of the extraction literature.  Norms are taken in ``arith`` and rounded to float
    only at the end, so mpmath errors of 1e-100 are reported faithfully.
    """
    if arith.name == "float64":
        return _score_float(np.asarray(rec.W, float), np.asarray(rec.v, float), np.asarray(W, float), np.asarray(v, float))
    with arith.context():
        dW = np.asarray(rec.W, dtype=object) - np.asarray(W, dtype=object)
        dv = np.asarray(rec.v, dtype=object) - np.asarray(v, dtype=object)
        errs = [_mag(x) for x in np.concatenate([dW.reshape(-1), dv.reshape(-1)])]
        sizes = [_mag(x) for x in np.concatenate([np.ravel(W), np.ravel(v)])]
        err_W = _norm2([_mag(x) for x in dW.reshape(-1)])
        norm_W = _norm2([_mag(x) for x in np.ravel(W)])
        err_v = _norm2([_mag(x) for x in dv.reshape(-1)])
        max_err = max(errs, default=mpmath.mpf(0))
        max_size = max(sizes, default=mpmath.mpf(0))
        if max_err == 0:
            bits = None
        elif max_size == 0:
            bits = -math.inf
        else:
            bits = float(-mpmath.log(max_err / max_size, 2))
        rel = err_W / norm_W if norm_W != 0 else (mpmath.mpf(0) if err_W == 0 else mpmath.inf)
        return Score(float(err_W), float(rel), float(err_v), float(max_err), bits)


def _score_float(What: np.ndarray, vhat: np.ndarray, W: np.ndarray, v: np.ndarray) -> Score:
    dW, dv = What - W, vhat - v
    err_W, norm_W = float(np.linalg.norm(dW)), float(np.linalg.norm(W))
    max_err = max(float(np.max(np.abs(dW), initial=0.0)), float(np.max(np.abs(dv), initial=0.0)))
    max_size = max(float(np.max(np.abs(W), initial=0.0)), float(np.max(np.abs(v), initial=0.0)))
    if max_err == 0:
        bits = None
    else:
        bits = math.log2(max_size) - math.log2(max_err) if max_size > 0 else -math.inf  # no underflow
    rel = err_W / norm_W if norm_W else (0.0 if err_W == 0 else math.inf)
    return Score(err_W, rel, float(np.linalg.norm(dv)), max_err, bits)


def _mag(x: Any) -> mpmath.mpf:
    """|x| as an mpf, for float, mpf or a numeric sympy expression."""
    if hasattr(x, "evalf") and not isinstance(x, mpmath.mpf):
        return mpmath.mpf(str(abs(x).evalf(mpmath.mp.dps + 5)))
    return abs(mpmath.mpf(x))


def _norm2(mags: list[mpmath.mpf]) -> mpmath.mpf:
    return mpmath.sqrt(mpmath.fsum(m * m for m in mags))



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
    scores = [score(rec.heads[i], heads[j][0], heads[j][1], arith) for i, j in zip(rows, cols)]
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
