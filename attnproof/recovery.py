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


__all__ = ["Recovery", "Score", "score"]
