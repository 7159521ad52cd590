"""The best bound any method could report from Thm 4.1's transcript: a proven floor (issue 22).

A learner sees only answers.  If every answer the real oracle gave for the target ``W*`` is also
an answer the naive declaration (:data:`~attnproof.models.NAIVE`) allows for two other targets
``W_+ = W* + Delta`` and ``W_- = W* - Delta`` with the same v, then the worlds give the same
transcript: the same adaptive queries, the same output ``W_hat`` and the same reported bound B.
A bound rigorous for the declaration then satisfies ``B >= ||W_hat - W_+||_F`` and
``B >= ||W_hat - W_-||_F``, hence

    B >= ||W_+ - W_-||_F / 2 = ||Delta||_F =: floor

(with W* as one of the two worlds the same argument gives ``||Delta||_F / 2``), and
``floor / ||W_hat - W*||_F`` is a lower bound on bound / true error for *any* rigorous bound
computed from these queries and answers (another query strategy meets other answers: the floor
speaks of this transcript), ``B / floor`` our distance from the best.

:func:`naive_margins` is the proof: for every recorded answer y of a query X it encloses, in
rigorous arithmetic (error-free float64 transformations with the Ogita-Rump-Oishi bound for the
dot products, python-flint's Arb balls for the sigmoid), the declared set of answers at
``(W', v)`` (W' either world) and returns a lower bound on y's distance inside it.  In its
normwise relaxation (the one :func:`attnproof.measure.value_errors` reads and
:class:`~attnproof.oracles.RoundingAdversary` realises; the declaration itself is componentwise,
:data:`READINGS`) the set is, with ``g = (d + 4) 2^-53``:

* two tokens ``[x_1; x_2]``, ``q = W' x_2``, ``p = x_1 - x_2``, logit ``L = p^T q``: the answers
  ``x_2^T v + sigma(L + e) p^T v + e'`` with ``|e| <= g ((||x_1|| + ||x_2||) ||q|| + ||W'||_F ||p||
  ||x_2||)`` (the scores and the query vector's roundings) and ``|e'| <= g (||x_1|| + ||x_2||) ||v||``
  (the readout's);
* one token ``[x]``: ``x^T v + e'`` with ``|e'| <= 4 2^-53 |x|^T |v|`` (what the learner assumes of
  its reads of v: ``4 t |v_i|``).

:func:`indistinguishable` builds Delta column by column (Thm 4.1 reads column j of W* only from
the queries whose last token is ``s e_j``): each such query allows its logit ``s p^T delta_j`` to
move by its first-order slack, those constraints are solved for ``delta_j`` (d probes, d unknowns:
every one is used to the full), and the result is checked by :func:`naive_margins`; a column with
an answer the check cannot prove is shrunk by :data:`~attnproof.indistinguishable.SHRINK` until it can.

Three readings of the declaration's dot products (:data:`READINGS`): the learner's (its bound
holds in every world built here), the normwise relaxation :func:`attnproof.measure.value_errors`
reads (at d = 64 a world lies further from W_hat than the bound: the bound rests on the query
vector's componentwise rounding, so :class:`~attnproof.models.Rounding` declares the
componentwise form since this was found), and the componentwise one, the declaration, which a
float64 evaluation obeys (the smallest set of answers, so the most conservative floor).
At d = 1024 the transcript does not fit
in memory: :class:`CheckedRecorder` checks every answer as it is given and keeps a few columns'
queries, and the floor is proven on those columns (:func:`floor_row`'s ``columns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InvalidInputError, PrecisionLossError, ShapeError
from ...indistinguishable import (
    MAX_D, NORM_DOWN, SAFE_RANGE, SAFETY, SHRINK, U, centre, dot2, in_range, transcript, transcript_margins,
    two_product, two_sum,
)
from ...models import Attention
from ...oracles import QueryRecord, ValueOracle
from . import learn_exact
from .runner import random_target

#: How the declaration's dot products are read: ``learner`` as Thm 4.1's bound reads them
#: (:func:`~attnproof.theorems.exact._error_bound`: the scores' and the readout's normwise, the query
#: vector q = W x_2's componentwise, ``|p^T dq| <= g ||p|| s ||W e_j||`` for ``x_2 = s e_j``);
#: ``normwise`` as :func:`~attnproof.measure.value_errors` relaxes them (each dot product within
#: ``g ||x|| ||y||``: q's ``g ||W||_F ||p|| ||x_2||``; not the declaration);
#: ``componentwise`` as :class:`~attnproof.models.Rounding` declares them and a float64
#: evaluation in any order obeys them, every one within ``g |x|^T |y|`` (the smallest of the
#: three sets of answers: the most conservative floor).
READINGS = ("learner", "normwise", "componentwise")
#: Queries per chunk of the vectorised dot products.
CHUNK = 4096


def _last_token_column(x2: np.ndarray) -> np.ndarray:
    """The index j of each last token ``s e_j`` (Thm 4.1's probes), or InvalidInputError."""
    if np.any(np.count_nonzero(x2, axis=1) != 1):
        raise InvalidInputError("the floor reads two-token queries whose last token is s e_j "
                                "(Thm 4.1's probes)")
    return np.argmax(x2 != 0, axis=1)


def _balls(X: np.ndarray, W: np.ndarray, v: np.ndarray, reading: str) -> dict[str, np.ndarray]:
    """Per two-token query ``[x_1; x_2]`` at (W, v): balls (:func:`~attnproof.indistinguishable.dot2`)
    of the logit L, of ``p^T v`` and of ``x_2^T v``, and lower bounds of the declaration's logit
    and label errors (the dot products as ``reading`` takes them, :data:`READINGS`), in chunks of
    :data:`CHUNK` queries."""
    if reading not in READINGS:
        raise InvalidInputError(f"reading must be one of {READINGS}; got {reading!r}")
    parts = [_chunk_balls(X[at:at + CHUNK], W, v, reading) for at in range(0, X.shape[0], CHUNK)]
    return {k: (tuple(np.concatenate([b[k][i] for b in parts]) for i in range(3))
                if isinstance(parts[0][k], tuple) else np.concatenate([b[k] for b in parts]))
            for k in parts[0]}


def _chunk_balls(X: np.ndarray, W: np.ndarray, v: np.ndarray, reading: str) -> dict[str, np.ndarray]:
    """:func:`_balls` of one chunk: with ``x_2 = s e_j``, ``q = s W e_j = qh + ql`` exactly,
    ``L = x_1^T q - s q_j`` and ``p^T v = x_1^T v - s v_j``."""
    x1, x2 = X[:, 0], X[:, 1]
    j = _last_token_column(x2)
    s = x2[np.arange(len(j)), j]
    qh, ql = two_product(W[:, j].T, s[:, None])
    rows = np.arange(len(j))
    minus = -s[:, None]
    if np.any(ql):
        L = dot2(np.hstack([x1, x1, minus, minus]), np.hstack([qh, ql, qh[rows, j, None], ql[rows, j, None]]))
    else:  # s a power of two: q = s W e_j exactly, no low part to carry
        L = dot2(np.hstack([x1, minus]), np.hstack([qh, qh[rows, j, None]]))
    pv = dot2(np.hstack([x1, minus]), np.hstack([np.broadcast_to(v, x1.shape), v[j, None]]))
    a2 = dot2(s[:, None], v[j, None])
    g = (W.shape[0] + 4) * U
    n1, n2 = np.linalg.norm(x1, axis=1), np.abs(s)
    q_norm = np.maximum(np.linalg.norm(qh, axis=1) - np.linalg.norm(ql, axis=1), 0.0)
    p_norm = np.linalg.norm(x1 - x2, axis=1) * (1 - 2 * U)  # x1 - x2 rounded once
    if reading == "componentwise":  # |x_1|^T |q| + |x_2|^T |q| + |p|^T |W| |x_2|; |x_1|^T |v| + |x_2|^T |v|
        q_abs = np.maximum(np.abs(qh) - np.abs(ql), 0.0)
        scores = np.einsum("bi,bi->b", np.abs(x1), q_abs) + n2 * q_abs[rows, j]
        query = n2 * np.einsum("bi,ib->b", np.abs(x1 - x2), np.abs(W[:, j])) * (1 - 2 * U)
        most = g * (scores + query) * NORM_DOWN**3
        label = g * (np.abs(x1) @ np.abs(v) + n2 * np.abs(v[j])) * NORM_DOWN**2
    else:
        W_size = np.linalg.norm(W) if reading == "normwise" else np.linalg.norm(W, axis=0)[j]
        most = g * ((n1 + n2) * q_norm + W_size * p_norm * n2) * NORM_DOWN**3
        label = g * (n1 + n2) * np.linalg.norm(v) * NORM_DOWN**2
    return {"j": j, "s": s, "L": L, "pv": pv, "a2": a2, "most": most, "label": label, "p": x1 - x2}


def naive_margins(log: Sequence[QueryRecord], W: np.ndarray, v: np.ndarray,
                  reading: str = "learner") -> dict[int, np.ndarray]:
    """Rigorous lower bounds on how far inside the naive declaration at ``(W, v)`` each recorded
    answer lies (Thm 4.1's queries: one token, or two with a last token ``s e_j``).

    Parameters
    ----------
    log : sequence of QueryRecord
        A :class:`~attnproof.oracles.ValueOracle`'s ``log`` (``record=True``).
    W : array (d, d), v : array (d,)
        The target the answers are checked against (float64).
    reading : {"learner", "normwise", "componentwise"}
        How the declaration's dot products are read (:data:`READINGS`).

    Returns
    -------
    dict
        ``{N: margins (B,)}``: each a lower bound on ``tol - |y - f_{W,v}(X)|`` in the answer's units,
        rounded towards zero (a margin >= 0 proves the answer allowed; NaN or < 0: not proven).
    """
    W, v = np.asarray(W, dtype=np.float64), np.asarray(v, dtype=np.float64)
    d = v.shape[0]
    if W.shape != (d, d) or d > MAX_D:
        raise ShapeError(f"W must be ({d}, {d}) with d <= {MAX_D}; got {W.shape}")
    if not all(in_range(a) for a in (W, v, *(np.asarray(r.X, dtype=np.float64) for r in log))):
        raise InvalidInputError(f"entries outside {SAFE_RANGE}: the floor's balls assume no overflow or "
                                "underflow")
    return transcript_margins(log, v, lambda X: _balls(X, W, v, reading), "Thm 4.1")


@dataclass(frozen=True)
class Floor:
    """Two indistinguishable targets and the floor they prove.

    Attributes
    ----------
    worlds : tuple of two arrays (d, d)
        ``W* + Delta`` and ``W* - Delta`` (float64): every recorded answer is proven allowed for
        each of them with the real v.
    delta : array (d, d)
        The first-order Delta, before any shrinking and before its float64 rounding into ``worlds``.
    floor : float
        A lower bound on ``||W_+ - W_-||_F / 2``: no rigorous bound from this transcript is smaller.
    shrinks : int
        Column shrinkings the check asked for (:data:`~attnproof.indistinguishable.SHRINK` each).
    answers : int
        Answers proven allowed for (W*, v) and for both worlds.
    """

    worlds: tuple[np.ndarray, np.ndarray]
    delta: np.ndarray
    floor: float
    shrinks: int
    answers: int


def _slack_direction(b: dict[str, np.ndarray], y: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Delta (d, d), first order: for column j, ``s p_q^T delta_j = SAFETY r_q`` over its queries q
    (least squares, then scaled so that no constraint is exceeded), r_q the logit move the
    declaration leaves the real answer either way: ``(sigma'(L) |pv| most + label - |y - f|) /
    (sigma'(L) |pv|)``."""
    d = W.shape[0]
    L, pv, a2 = (centre(b[name]) for name in ("L", "pv", "a2"))
    sig = 1 / (1 + np.exp(-L))
    slope = sig * (1 - sig) * np.abs(pv)
    err = np.abs(y - (a2 + sig * pv))
    r = np.maximum(slope * b["most"] + b["label"] - err, 0.0) / slope
    delta = np.zeros((d, d))
    for j in range(d):
        rows = np.flatnonzero(b["j"] == j)
        if rows.size < d:
            continue
        A = b["s"][rows, None] * b["p"][rows]
        norms = np.linalg.norm(A, axis=1)
        x = np.linalg.lstsq(A / norms[:, None], r[rows] / norms, rcond=None)[0]
        used = np.max(np.abs(A @ x) / r[rows]) if np.all(r[rows] > 0) else np.inf
        delta[:, j] = SAFETY * x / used if np.isfinite(used) and used > 0 else 0.0
    return delta


def indistinguishable(
    log: Sequence[QueryRecord], W: np.ndarray, v: np.ndarray, reading: str = "learner", max_shrinks: int = 40,
) -> Floor:
    """Targets ``W* +- Delta`` that every recorded answer fits under the naive declaration, Delta as
    large as the first-order slack of each column's queries allows, proven by :func:`naive_margins`.

    Two worlds, not one beside W*: a bound B rigorous for the declaration is at least
    ``||W_hat - W_+||`` and ``||W_hat - W_-||``, hence ``||W_+ - W_-|| / 2 ~ ||Delta||`` (one world
    beside W* proves only half of it).

    Parameters
    ----------
    log : sequence of QueryRecord
        The real oracle's record of a :func:`~attnproof.theorems.exact.learn_exact` run (float64,
        ``bias=False``).
    W, v : arrays
        The real target (W*, v*).
    reading : {"learner", "normwise", "componentwise"}
        The declaration's reading (:data:`READINGS`).
    max_shrinks : int
        Column shrinkings allowed before giving up.

    Returns
    -------
    Floor

    Raises
    ------
    PrecisionLossError
        If an answer is not proven allowed for ``(W*, v)`` itself (the real oracle outside its own
        declaration), or a column cannot be proven after ``max_shrinks`` shrinkings.
    """
    W, v = np.asarray(W, dtype=np.float64), np.asarray(v, dtype=np.float64)
    truth = naive_margins(log, W, v, reading)
    if _failing(truth).size or _failing_one(truth):
        raise PrecisionLossError("an answer of the real oracle is not proven within its own naive "
                                 "declaration")
    X, y = transcript(log, v.shape[0])[2]
    b = _balls(X, W, v, reading)
    delta = _slack_direction(b, y, W)
    scale = np.ones(v.shape[0])
    shrinks = 0
    while True:
        worlds = (W + delta * scale, W - delta * scale)
        checks = [naive_margins(log, world, v, reading) for world in worlds]
        bad = np.unique(np.concatenate([b["j"][_failing(m)] for m in checks]))
        if not bad.size and not any(_failing_one(m) for m in checks):
            break
        if shrinks >= max_shrinks:
            raise PrecisionLossError(f"no indistinguishable targets proven after {shrinks} shrinkings")
        scale[bad] *= SHRINK
        shrinks += 1
    dh, dl = two_sum(worlds[0], -worlds[1])
    floor = float(max(np.linalg.norm(dh) - np.linalg.norm(dl), 0.0) * NORM_DOWN / 2)
    return Floor(worlds, delta, floor, shrinks, sum(m.size for m in truth.values()))


@dataclass(kw_only=True)
class CheckedRecorder(ValueOracle):
    """A real oracle that proves each answer within the naive declaration at its own target as it
    answers (:func:`naive_margins` with ``reading``), and records only the queries whose
    last token is ``s e_j`` for j in ``keep`` (and the one-token ones): at d = 1024 the whole
    transcript (a million queries of two 1024-vectors) does not fit in memory.  Under the learner's
    and the componentwise readings a query's margin depends on W through its column j only (not
    under the normwise one: ``||W||_F``), so worlds that differ from W*
    in the ``keep`` columns alone need only the recorded queries checked again.

    Attributes
    ----------
    keep : frozenset of int
    reading : {"learner", "componentwise"}
    checked, unproven : int
        Answers proven allowed at (W*, v), and answers not proven (0 for a conforming oracle).
    """

    keep: frozenset[int] = frozenset()
    reading: str = "learner"
    checked: int = field(default=0, init=False)
    unproven: int = field(default=0, init=False)

    def _answer(self, Xb: np.ndarray) -> np.ndarray:
        y = np.asarray(self.model(Xb), dtype=np.float64)
        W, v = np.asarray(self.model.W, dtype=np.float64), np.asarray(self.model.v, dtype=np.float64)
        margins = naive_margins([QueryRecord(Xb, y)], W, v, self.reading)
        self.checked += y.size
        self.unproven += sum(int(np.sum(~(m >= 0))) for m in margins.values())
        kept = (np.ones(y.size, bool) if Xb.shape[1] == 1
                else np.isin(_last_token_column(Xb[:, 1]), list(self.keep)))
        if np.any(kept):
            self.log.append(QueryRecord(np.copy(Xb[kept]), np.copy(y[kept])))
        return y


def floor_row(d: int, seed: int = 0, reading: str = "learner", columns: int | None = None) -> dict[str, Any]:
    """One bench run of Thm 4.1 (:func:`~attnproof.theorems.exact.runner.run_exact`'s target and
    draws: float64, orthogonal probes, naive answers) against a recording real oracle, and its
    floor: ``d, seed, reading``, the true error ``err_W``, the bound ``error_bound``, ``floor``,
    ``floor_over_error`` (the least bound / true error any rigorous bound from this transcript can
    show), ``bound_over_floor`` (ours over the least), ``alt_error_over_bound`` (the larger
    ``||W_hat - W_+-||_F / error_bound``: above 1, a world the declaration allows in which the
    bound fails),
    ``shrinks`` and ``answers`` (every one proven allowed for W* and both worlds).

    ``columns``: Delta only in that many evenly spaced columns, the transcript checked as it is
    answered and recorded for those columns only (:class:`CheckedRecorder`, not the normwise reading):
    ``floor`` is then proven for that part of W, ``floor_extrapolated`` (``floor sqrt(d /
    columns)``, the columns being alike) an estimate of the whole, not a proof."""
    rng = np.random.default_rng(seed)
    W, v = random_target(d, rng)
    if columns is None:
        oracle = ValueOracle(Attention(W, v), record=True)
    elif reading == "normwise":
        raise InvalidInputError("a floor on some columns needs margins that read W by columns: not normwise")
    else:
        oracle = CheckedRecorder(Attention(W, v), keep=frozenset(np.linspace(0, d - 1, columns).astype(int)),
                                 reading=reading)
    rec = learn_exact(oracle, rng=rng)
    found = indistinguishable(oracle.log, W, v, reading=reading)
    err, bound = float(np.linalg.norm(rec.W - W)), float(rec.diagnostics["error_bound"])
    row = {"d": d, "seed": seed, "reading": reading, "err_W": err, "error_bound": bound,
           "floor": found.floor, "floor_over_error": found.floor / err,
           "bound_over_floor": bound / found.floor,
           "alt_error_over_bound": max(float(np.linalg.norm(rec.W - w)) for w in found.worlds) / bound,
           "shrinks": found.shrinks, "answers": found.answers}
    if columns is not None:
        if oracle.unproven:
            raise PrecisionLossError(f"{oracle.unproven} answers of the real oracle not proven within its "
                                     "own naive declaration")
        row.update(answers=oracle.checked, columns=len(oracle.keep),
                   floor_extrapolated=found.floor * float(np.sqrt(d / len(oracle.keep))))
    return row


def _failing(margins: dict[int, np.ndarray]) -> np.ndarray:
    """Indices of the two-token answers not proven allowed."""
    m = margins.get(2, np.zeros(0))
    return np.flatnonzero(~(m >= 0))


def _failing_one(margins: dict[int, np.ndarray]) -> bool:
    return bool(np.any(~(margins.get(1, np.zeros(0)) >= 0)))


__all__ = ["CheckedRecorder", "Floor", "READINGS", "floor_row", "indistinguishable", "naive_margins"]
