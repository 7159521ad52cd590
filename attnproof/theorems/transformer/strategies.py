"""Hypothesis strategies of the Transformer room (Sec. 4.1): bias-free ReLU FFN targets, their
edge cases (dead, parallel, antiparallel, zero-sum, wide, narrow, even) and their failure cases
(near-parallel hyperplanes, identically zero FFNs, FFNs with biases).

Built on Hypothesis alone (no shared builder is needed); the room's ``__init__`` never imports
this module, so the library itself runs without Hypothesis being imported.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ...errors import InvalidInputError

#: Kinds of FFN targets :func:`ffn_targets` draws (each an edge case of the FFN learner).
FFN_KINDS = ("generic", "dead", "parallel", "antiparallel", "zero_sum", "wide", "narrow", "even")


def _check_sizes(min_d: int, max_d: int, min_m: int, max_m: int) -> None:
    for name, lo, hi in (("d", min_d, max_d), ("m", min_m, max_m)):
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise InvalidInputError(f"need integers 1 <= min_{name} <= max_{name}; got {lo}, {hi}")


def _integer_entries(draw: st.DrawFn, shape: tuple[int, ...], halves: bool) -> np.ndarray:
    """Small integers (or halves): exact in every arithmetic, many ties and sign patterns."""
    vals = draw(arrays(np.int64, shape, elements=st.integers(-4, 4)))
    return vals / (2.0 if halves else 1.0)


def ffn_targets(
    kinds: tuple[str, ...] = FFN_KINDS,
    min_d: int = 1,
    max_d: int = 5,
    min_m: int = 1,
    max_m: int = 6,
    exact: bool = False,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Bias-free FFN targets ``(A, w_o, kind)`` for ``f(x) = w_o^T ReLU(A^T x)`` (Sec. 4.1).

    ``kind`` is one of :data:`FFN_KINDS`: ``generic``; ``dead`` (a_k = 0 or w_k = 0 units);
    ``parallel`` / ``antiparallel`` (units on one hyperplane, same or opposite orientation);
    ``zero_sum`` (a subset with sum a_k w_k = 0, whose orientation the function does not fix);
    ``wide`` (m > d) and ``narrow`` (m < d); ``even`` (u = A w_o = 0, so VQ~ == 0).  The
    target is never identically zero.  ``exact=True`` draws small integers and halves
    (exact in sympy), else floats in [-1, 1].

    Raises
    ------
    InvalidInputError
        Eagerly, for an unknown kind or bad size bounds.
    """
    unknown = set(kinds) - set(FFN_KINDS)
    if unknown or not kinds:
        raise InvalidInputError(f"unknown FFN kinds {sorted(unknown)}: use a subset of {FFN_KINDS}")
    _check_sizes(min_d, max_d, min_m, max_m)
    return _ffn_targets(tuple(kinds), min_d, max_d, min_m, max_m, exact)


@st.composite
def _ffn_targets(
    draw: st.DrawFn, kinds: tuple[str, ...], min_d: int, max_d: int, min_m: int, max_m: int, exact: bool
) -> tuple[np.ndarray, np.ndarray, str]:
    kind = draw(st.sampled_from(kinds))
    d = draw(st.integers(max(min_d, 2 if kind in ("zero_sum", "narrow") else 1), max(max_d, 2)))
    m = draw(st.integers(min_m, max_m))
    if kind == "wide":
        m = max(m, d + 1)
    if kind == "narrow":
        m = min(m, d - 1)

    def entries(shape: tuple[int, ...]) -> np.ndarray:
        if exact:
            return _integer_entries(draw, shape, halves=draw(st.booleans()))
        return draw(arrays(np.float64, shape, elements=st.floats(-1, 1)))

    A, w = entries((d, m)), entries((m,))
    base = draw(st.integers(0, m - 1))
    if not np.any(A[:, base]):
        A[draw(st.integers(0, d - 1)), base] = 1.0
    if w[base] == 0:
        w[base] = draw(st.sampled_from([-1.0, 1.0]))
    if kind == "dead":
        extra = np.zeros((d, 2))
        extra[:, 1] = entries((d,))
        dead = [draw(st.sampled_from([1.0, -2.0])), 0.0]  # a zero column with a != 0; a = 0 on a live column
        A, w = np.concatenate([A, extra], axis=1), np.concatenate([w, dead])
    elif kind in ("parallel", "antiparallel"):
        scale = draw(st.sampled_from([0.5, 2.0, 3.0])) * (1 if kind == "parallel" else -1)
        A = np.concatenate([A, scale * A[:, base : base + 1]], axis=1)
        w = np.concatenate([w, [draw(st.sampled_from([-1.0, 0.5, 1.0]))]])
    elif kind == "zero_sum":
        W2, a2 = entries((d, 2)), entries((2,))
        a2 = np.where(a2 == 0, 1.0, a2)
        A, w = np.concatenate([A, W2, -(W2 @ a2)[:, None]], axis=1), np.concatenate([w, a2, [1.0]])
    elif kind == "even":
        A, w = np.concatenate([A, -A], axis=1), np.concatenate([w, w])
    return A, w, kind


def near_parallel_ffns(
    min_log10: int = -17, max_log10: int = -4, min_d: int = 2, max_d: int = 5
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, float]]:
    """``(A, w_o, eps)``: two units on hyperplanes at angle ~ eps (w and w + eps r), plus others.

    Kinks this close may be beyond float64: the learner must then raise a typed error, never
    return a wrong network.
    """
    if not (isinstance(min_log10, int) and isinstance(max_log10, int) and min_log10 <= max_log10 <= 0):
        raise InvalidInputError(f"need integers min_log10 <= max_log10 <= 0; got {min_log10}, {max_log10}")
    _check_sizes(min_d, max_d, 1, 1)
    return _near_parallel_ffns(min_log10, max_log10, min_d, max_d)


@st.composite
def _near_parallel_ffns(
    draw: st.DrawFn, min_log10: int, max_log10: int, min_d: int, max_d: int
) -> tuple[np.ndarray, np.ndarray, float]:
    d = draw(st.integers(min_d, max_d))
    eps = 10.0 ** draw(st.integers(min_log10, max_log10))
    w = draw(arrays(np.float64, d, elements=st.floats(-1, 1)))
    w[draw(st.integers(0, d - 1))] = 1.0
    r = draw(arrays(np.float64, d, elements=st.floats(-1, 1)))
    r[0] = 1.0 if w[0] != 1.0 else -1.0
    others = draw(arrays(np.float64, (d, draw(st.integers(0, 3))), elements=st.floats(-1, 1)))
    A = np.concatenate([w[:, None], (w + eps * r)[:, None], others], axis=1)
    a = draw(arrays(np.float64, A.shape[1], elements=st.floats(0.25, 1)))
    return A, a * draw(arrays(np.float64, A.shape[1], elements=st.sampled_from([-1.0, 1.0]))), eps


def zero_ffns(min_d: int = 1, max_d: int = 5) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """FFNs that are identically zero: a = 0, w = 0, or a unit cancelled by its twin."""
    _check_sizes(min_d, max_d, 1, 1)
    return _zero_ffns(min_d, max_d)


@st.composite
def _zero_ffns(draw: st.DrawFn, min_d: int, max_d: int) -> tuple[np.ndarray, np.ndarray]:
    d = draw(st.integers(min_d, max_d))
    A = draw(arrays(np.float64, (d, 2), elements=st.floats(-1, 1)))
    how = draw(st.sampled_from(["a", "w", "twin"]))
    if how == "a":
        return A, np.zeros(2)
    if how == "w":
        return np.zeros((d, 2)), draw(arrays(np.float64, 2, elements=st.floats(-1, 1)))
    return np.column_stack([A[:, 0], A[:, 0]]), np.array([1.0, -1.0]) * draw(st.floats(0.5, 2))


def biased_ffns(
    min_d: int = 1, max_d: int = 4
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(A, w_o, b)``: an FFN ``w_o^T ReLU(A^T x + b)`` whose biases matter near the unit ball
    (|b_k| <= |w_k|_1 / 2, b != 0): not positively homogeneous, refused by the bias-free learner."""
    _check_sizes(min_d, max_d, 1, 1)
    return _biased_ffns(min_d, max_d)


@st.composite
def _biased_ffns(draw: st.DrawFn, min_d: int, max_d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = draw(st.integers(min_d, max_d))
    m = draw(st.integers(1, 4))
    A = draw(arrays(np.float64, (d, m), elements=st.floats(-1, 1)))
    A[0] = np.where(np.abs(A[0]) < 0.25, 1.0, A[0])
    w = draw(arrays(np.float64, m, elements=st.floats(0.25, 1))) * draw(
        arrays(np.float64, m, elements=st.sampled_from([-1.0, 1.0]))
    )
    frac = draw(arrays(np.float64, m, elements=st.floats(-0.5, 0.5)))
    b = frac * np.abs(A).sum(axis=0)
    k = draw(st.integers(0, m - 1))
    b[k] = 0.25 * np.abs(A[:, k]).sum() * draw(st.sampled_from([-1.0, 1.0]))
    return A, w, b


__all__ = ["FFN_KINDS", "ffn_targets", "near_parallel_ffns", "zero_ffns", "biased_ffns"]
