"""The paper's formulas, written independently of the library, for the identities' right-hand sides.

An identity compares the library's model (:mod:`attnproof.models`) or a learner's result with
these transcriptions of Bhattamishra et al. (arXiv 2601.16873, Sec. 3), never with itself.
"""

from __future__ import annotations

import math

from typing import Any

import numpy as np
import sympy as sp

from .registry import RunCheck


def symbols(prefix: str, shape: tuple[int, ...], **assumptions: Any) -> np.ndarray:
    """An object array of fresh sympy symbols ``prefix_i_j`` with the given assumptions."""
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        name = prefix + "_" + "_".join(str(i + 1) for i in idx) if idx else prefix
        out[idx] = sp.Symbol(name, **assumptions)
    return out


def recovery_checks(
    at: str, rec: Any, truth: dict[str, Any], arith: Any, digits: int | None
) -> list[RunCheck]:
    """Checks for a run entry: a learner's result ``rec`` against the target it never saw.

    ``truth`` maps attributes of ``rec`` (``W``, ``v``, ``c``, ``beta``) to the target's values in
    ``arith``.  With ``digits`` (a high-precision run): each error, relative to the target's norm
    (or absolute below norm 1), at most ``10^-digits``.  Without (float64): ``||W_hat - W*||_F``
    within the learner's own a-posteriori ``diagnostics["error_bound"]``, checked as the ratio of
    the two against the constant 1 (so the entry's hash holds the statement, not the bound's last
    bits: a tighter or looser bound formula leaves it unchanged; no bound reported: NaN, fails).
    """
    checks: list[RunCheck] = []
    with arith.context():
        for name, x in truth.items():
            diff = np.atleast_1d(np.asarray(getattr(rec, name) - x, dtype=object))
            err = arith.norm(diff) / max(1.0, arith.norm(np.atleast_1d(np.asarray(x, dtype=object))))
            if digits is not None:
                checks.append((f"{at}: {name} error / max(1, |{name}*|) <= 1e-{digits}", err, 10.0**-digits))
            elif name == "W":
                bound = rec.diagnostics.get("error_bound")
                checks.append((f"{at}: ||W_hat - W*||_F / error_bound <= 1",
                               _within(float(arith.norm(diff)), bound), 1.0))
    return checks


def _within(err: float, bound: float | None) -> float:
    """``err / bound``: NaN when no bound is reported or it is NaN (the check fails), 0 for an exact
    answer under a zero bound, inf for an error under a zero bound."""
    if bound is None or math.isnan(bound):
        return math.nan
    if bound == 0:
        return 0.0 if err == 0 else math.inf
    return err / bound


def paper_scores(W: Any, X: Any) -> list[sp.Expr]:
    """``s_i = x_i^T W x_N`` (Sec. 3), written entry by entry from the paper.

    For right-hand sides: an identity compares the library's model (:mod:`attnproof.models`)
    with this independent transcription, never the model with itself.  ``X`` is (N, d).
    """
    N, d = len(X), len(X[0])
    return [sp.Add(*(X[i][a] * W[a][b] * X[N - 1][b] for a in range(d) for b in range(d))) for i in range(N)]


def paper_weights(W: Any, X: Any) -> list[sp.Expr]:
    """``alpha(X, W)_i = e^{s_i} / sum_k e^{s_k}`` (Sec. 3), independent of :mod:`attnproof.models`."""
    e = [sp.exp(s) for s in paper_scores(W, X)]
    return [x / sp.Add(*e) for x in e]


def paper_head(W: Any, v: Any, X: Any) -> sp.Expr:
    """``f_{W,v}(X) = alpha(X, W)^T X v`` (Sec. 3), independent of :mod:`attnproof.models`."""
    d = len(v)
    return sp.Add(*(a * sp.Add(*(x[k] * v[k] for k in range(d))) for a, x in zip(paper_weights(W, X), X)))


__all__ = ["symbols", "recovery_checks", "paper_scores", "paper_weights", "paper_head"]
