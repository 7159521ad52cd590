"""The models of the paper, evaluated in any arithmetic of :mod:`attnproof.arith`.

Sec. 3: single-head attention ``f_{W,v}(X) = softmax(x_1^T W x_N, ..., x_N^T W x_N)^T (X v)``.
Sec. 4.1: the one-layer Transformer ``TF(X) = w_o^T ReLU(alpha(X, W)^T X A)``.
Sec. 7: multi-head attention ``f^H(X) = sum_h alpha(X, W^(h))^T (X v^(h))``.

Every model takes one sequence ``X`` of shape (N, d) or a batch of shape (B, N, d) and returns
a scalar or an array of shape (B,).  Evaluation is vectorised over the batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import sympy as sp

from .arith import FLOAT64, Arith
from .errors import InvalidInputError, ShapeError


@dataclass(frozen=True)
class Rounding:
    """How a model's answers are rounded: the declaration an oracle exposes (like its tolerance),
    which :func:`attnproof.measure.value_errors` reads instead of assuming the worst.

    Each dot product ``x^T y`` of n terms that the evaluation forms (the query vector ``W x_N``, the
    scores, the readout, the softmax's sum; a few more roundings for exp and the division) is
    within ``(n + 4) term |x|^T |y|`` of its exact value, componentwise, as an evaluation in any
    summation order errs (Higham 2002, Sec. 3.1), and the answer y itself is then within
    ``final |y|`` of what that evaluation computed.  By Cauchy-Schwarz each is then within
    ``(n + 4) term ||x|| ||y||``, the normwise relaxation :func:`attnproof.measure.value_errors`
    reads wherever it is the simpler bound.  The declaration is the componentwise form: under the
    normwise one alone, Thm 4.1's bound (which reads the query vector ``s W e_j``'s rounding by
    its column) fails in a world the answers allow (1.002 times it at d = 64, 1.077 at d = 256;
    :mod:`attnproof.theorems.exact.indistinguishable`).

    Attributes
    ----------
    name : {"naive", "faithful"}
        ``naive``: evaluated in the model's arithmetic in any summation order; ``term`` is None,
        meaning that arithmetic's unit roundoff, and ``final`` is 0 (the last rounding is one of
        the n + 4).  ``faithful``: evaluated in extended precision (x87 80-bit ``longdouble``,
        unit roundoff 2^-64) and rounded once to float64 (``final`` = 2^-53).
    term : float or None
    final : float
    sizes : FactorSizes or None
        A faithful factored head's sizes (:class:`FactorSizes`, attached by
        :func:`declared_rounding`): its error is then bounded componentwise from them, as its
        evaluation actually errs, not by ``(n + 4) term`` per dot product.
    """

    name: str
    term: float | None = None
    final: float = 0.0
    sizes: FactorSizes | None = None


@dataclass(frozen=True)
class RowSizes:
    """Sizes of a matrix's rows M_k that bound an extended-precision product ``M x`` (a vector: one
    row): ``frobenius = ||M||_F``, ``largest = sqrt(sum_k max_j |M_kj|^2)``, ``one = sqrt(sum_k
    ||M_k||_1^2)`` -- each rounded up (computed in float64, times ``1 + 2^-20``)."""

    frobenius: float
    largest: float
    one: float

    @classmethod
    def of(cls, M: Any) -> RowSizes:
        A = np.abs(np.atleast_2d(np.asarray(M, dtype=np.float64)))
        up = 1 + 2.0**-20  # the sums' float64 rounding, (d r + 2) 2^-53 relative at most, below this
        return cls(*(float(np.sqrt(np.sum(x * x)) * up)
                     for x in (A, A.max(axis=1), A.sum(axis=1))))


@dataclass(frozen=True)
class FactorSizes:
    """What the faithful evaluation of a factored head (:class:`FactoredAttention`) declares about
    its parameters, so that a learner can bound its answers' error componentwise
    (:func:`attnproof.measure.value_errors`) instead of by ``(d + 4) 2^-64`` per term.

    The evaluation (:func:`_faithful`) computes ``K x_i``, ``Q x_N``, ``c^T x_i`` and ``v^T x_i`` by
    :func:`_ext_product` (when every last token of the batch is dense; :func:`_last_token_image`
    reads a sparse one term by term), the r-term scores in longdouble.  ``key``, ``query``,
    ``c``, ``v``: :class:`RowSizes` of K, Q, c, v (``c`` None without a score bias);
    ``key_2``, ``query_2``: upper bounds on ``||K||_2``, ``||Q||_2`` (float64 SVD times
    ``1 + 2^-20``: its error is ``O(d eps) ||K||_2``); ``r``: the length of the score sum."""

    r: int
    key: RowSizes
    query: RowSizes
    key_2: float
    query_2: float
    v: RowSizes
    c: RowSizes | None = None

    @classmethod
    def of(cls, K: Any, Q: Any, v: Any, c: Any = None) -> FactorSizes:
        K, Q = np.asarray(K, dtype=np.float64), np.asarray(Q, dtype=np.float64)
        up = 1 + 2.0**-20
        spectral = [float(np.linalg.norm(M, 2)) * up if M.size else 0.0 for M in (K, Q)]
        return cls(K.shape[0], RowSizes.of(K), RowSizes.of(Q), *spectral, RowSizes.of(v),
                   None if c is None else RowSizes.of(c))


#: The default declaration: no promise beyond "evaluated in its arithmetic, in any order".
NAIVE = Rounding("naive")
#: float64 answers of an extended-precision evaluation rounded once (:func:`faithful_available`).
FAITHFUL = Rounding("faithful", term=2.0**-64, final=2.0**-53)
#: The arithmetics a faithful evaluation answers in (a declaration, as a learner's): float64 only.
FAITHFUL_ARITHMETICS = ("float64",)
#: What a model's ``answers`` argument accepts.
ANSWERS = {"naive": NAIVE, "faithful": FAITHFUL}


def declared_rounding(source: Any) -> Rounding:
    """The :class:`Rounding` a model or an oracle declares (its ``rounding``), or :data:`NAIVE`
    when it declares none (a derived oracle, whose answers combine others, declares none); with
    the model's ``factor_sizes`` (:class:`FactorSizes`, a faithful factored head) as its ``sizes``."""
    declared = getattr(source, "rounding", NAIVE)
    if not isinstance(declared, Rounding):
        return NAIVE
    sizes = getattr(source, "factor_sizes", None)
    return declared if sizes is None or declared.sizes is not None else replace(declared, sizes=sizes)


def faithful_available() -> bool:
    """Does numpy's longdouble carry a 64-bit significand here (x87 extended precision)?"""
    return np.finfo(np.longdouble).nmant >= 63


def _answers(answers: Any, arith: Arith) -> Rounding:
    """The declaration for a model's ``answers`` argument ("naive" or "faithful").

    Raises
    ------
    InvalidInputError
        An unknown spelling, a faithful evaluation of a non-float64 model, or a platform whose
        longdouble is no wider than float64 (no faithful evaluation is possible there).
    """
    if not isinstance(answers, str) or answers not in ANSWERS:
        raise InvalidInputError(f"answers must be one of {tuple(ANSWERS)}; got {answers!r}")
    if answers == "faithful" and (arith.family not in FAITHFUL_ARITHMETICS or not faithful_available()):
        raise InvalidInputError(
            "faithful answers need a float64 model and an extended-precision longdouble (x87); "
            f"got {arith.name}, longdouble with {np.finfo(np.longdouble).nmant} significand bits"
        )
    return ANSWERS[answers]


def _ext(a: Any) -> np.ndarray | None:
    return None if a is None else np.asarray(a, dtype=np.longdouble)


def _rho(n: int) -> int:
    """The split point of :func:`_ext_product` for an inner dimension n: ``ceil((53 + log2 n) / 2)``."""
    return math.ceil((53 + math.log2(max(n, 1))) / 2)


def _split_high(M: np.ndarray, axis: int, rho: int, out: np.ndarray | None = None) -> np.ndarray:
    """M_1 of :func:`_split`, written into ``out`` when given (M_2 = M - M_1 is then the caller's):
    ``(M + sigma) - sigma`` computed in place, and the largest |entry| of each slice as the larger
    of ``max M`` and ``-min M`` (no |M| temporary): the same floats as ``max |M|``, so the same
    ``sigma`` and bitwise the same M_1."""
    mu = np.maximum(M.max(axis=axis, keepdims=True), -M.min(axis=axis, keepdims=True))
    _, e = np.frexp(mu)  # mu < 2^e (0 for a zero slice)
    sigma = np.ldexp(0.75, e + rho)
    M1 = np.add(M, sigma, out=out)
    return np.subtract(M1, sigma, out=M1)


def _split(M: np.ndarray, axis: int, rho: int) -> tuple[np.ndarray, np.ndarray]:
    """``M = M_1 + M_2`` exactly (Ozaki's error-free split, float64): along ``axis`` every slice's
    M_1 holds multiples of ``2^(e + rho - 53)`` (``2^e`` >= its largest |entry|) of at most
    ``53 - rho`` bits, and ``|M_2| <= 2^(e + rho - 54)``."""
    M1 = _split_high(M, axis, rho)
    return M1, M - M1


def _halves(B: np.ndarray, rho: int) -> np.ndarray:
    """``[B_1 | B_2]``: B (n, p) split along its columns (:func:`_split`, axis 0), side by side."""
    return np.hstack(_split(B, 0, rho))


def _ext_sum(products: tuple[np.ndarray, np.ndarray], p: int) -> np.ndarray:
    """``A_1 B_1 + A_1 B_2 + A_2 B_1 + A_2 B_2`` in longdouble from ``A_i @ [B_1 | B_2]``, added in
    that order onto 0 (each float64 part converted exactly as it is added)."""
    first, second = products
    out = np.add(first[:, :p], np.longdouble(0.0), dtype=np.longdouble)  # 0 + A_1 B_1: -0 becomes +0
    out += first[:, p:]
    out += second[:, :p]
    out += second[:, p:]
    return out


def _ext_product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` (float64, inner dimension n) to extended precision with four float64 BLAS
    products: A and B split by :func:`_split` with ``rho = ceil((53 + log2 n) / 2)``, so
    ``A_1 @ B_1`` is exact (its products have at most 2 (53 - rho) bits, n of them add up within 53
    bits, in any order); the three others are at most ``2^(rho - 53)`` of ``|A| |B|`` each, so
    their float64 rounding is ``n 2^-53 2^(rho - 53)`` of it -- ``2^-72 n`` at n = 4096, below the
    ``(n + 4) 2^-64`` of :data:`FAITHFUL` -- and they are added in longdouble.  The cost is four
    GEMMs' flops in two calls (``A_i @ [B_1 | B_2]``), not a longdouble product (no BLAS: ~10-50
    times slower per product)."""
    rho = _rho(A.shape[-1])
    A1, A2 = _split(A, -1, rho)
    both = _halves(B, rho)
    return _ext_sum((A1 @ both, A2 @ both), B.shape[1])


def _dense(XN: np.ndarray) -> bool:
    """Does :func:`_last_token_image` take the split BLAS product for the last tokens XN (B, d):
    more than ``B d / 8`` non-zeros (counted, not listed)?"""
    return np.count_nonzero(XN) > XN.shape[0] * XN.shape[1] // 8


def _sparse_image(XN: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``XN @ M.T`` in longdouble reading only the non-zero entries of XN: each entry a sum over the
    non-zeros of its row, added in longdouble (:func:`_last_token_image`'s sparse side)."""
    rows, cols = np.nonzero(XN)
    out = np.zeros((XN.shape[0], M.shape[0]), dtype=np.longdouble)
    np.add.at(out, rows, _ext(XN[rows, cols, None]) * _ext(M.T[cols]))
    return out


def _last_token_image(XN: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``XN @ M.T`` in longdouble for XN (B, d) and M (m, d), reading only the non-zero entries
    of XN: a one-hot last token (a column probe of Thm 4.1) costs m operations, not m d.  Each
    entry is a sum over the non-zeros of its row, added in longdouble (a dot product of at most
    d terms)."""
    return _ext_product(XN, M.T) if _dense(XN) else _sparse_image(XN, M)


def _faithful(Xb: np.ndarray, key: Any, query: Any, v: Any, c: Any, beta: Any) -> np.ndarray:
    """``softmax(s)^T (X v) [+ beta]`` with ``s_i = (key x_i)^T (query x_N) [+ c^T x_i]``, evaluated
    to extended precision (``key`` None: W's own scores ``x_i^T W x_N``, query = W; products of
    float64 arrays by :func:`_ext_product`, the rest in longdouble) and rounded once to float64
    (:data:`FAITHFUL`).

    The tokens are split once (:func:`_split`: each token on its own, so a last token's halves are
    those :func:`_last_token_image` would make of it) into one buffer that holds X_1, then X_2 =
    X - X_1 in place once X_1's products are taken: the same float64 products of the same shapes,
    added in the same order, as ``_last_token_image(X_N, query)`` and ``_ext_product(X, [key^T | c |
    v])`` -- bitwise their answers (``tests/test_models.py`` pins it against that evaluation)."""
    Xf = np.asarray(Xb, dtype=np.float64)
    B, N, d = Xf.shape
    query = np.asarray(query, dtype=np.float64)
    # every token's image under [key^T | c | v] in one split product: keys, score bias, value
    columns = [np.asarray(v, dtype=np.float64)[:, None]]
    if c is not None:
        columns.insert(0, np.asarray(c, dtype=np.float64)[:, None])
    if key is not None:
        columns.insert(0, np.asarray(key, dtype=np.float64).T)
    C = np.hstack(columns)
    rho, tokens, dense = _rho(d), Xf.reshape(B * N, d), _dense(Xf[:, -1, :])
    both, query_both = _halves(C, rho), (_halves(query.T, rho) if dense else None)
    half = _split_high(tokens, -1, rho, out=np.empty_like(tokens))  # X_1, then X_2
    last = half.reshape(B, N, d)[:, -1, :]
    products, query_products = [half @ both], ([last @ query_both] if dense else [])
    np.subtract(tokens, half, out=half)
    products.append(half @ both)
    if dense:
        query_products.append(last @ query_both)
    q = (_ext_sum(tuple(query_products), query.shape[0]) if dense  # (B, r): W x_N or Q x_N
         else _sparse_image(Xf[:, -1, :], query))
    images = _ext_sum(tuple(products), C.shape[1]).reshape(B, N, -1)
    values = images[..., -1]
    keys = _ext(Xf) if key is None else images[..., : -1 - (c is not None)]
    # a rank-0 head's scores are the empty sum, 0: numpy's einsum over an empty axis of this strided
    # view leaves its output unwritten (whatever the memory held: NaN answers at times)
    s = np.einsum("bnr,br->bn", keys, q) if keys.shape[-1] else np.zeros((B, N), dtype=np.longdouble)
    if c is not None:
        s = s + images[..., -2]
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    out = np.einsum("bn,bn->b", e, values) / e.sum(axis=-1)
    if beta is not None:
        out = out + np.longdouble(beta)
    return out.astype(np.float64)


def as_batch(X: Any, d: int, arith: Arith) -> tuple[np.ndarray, bool]:
    """Validate a query and return it as a (B, N, d) array plus whether it was batched.

    Raises
    ------
    ShapeError
        If X is not (N, d) or (B, N, d) with N >= 1 and the model's width d.
    NonFiniteError
        If a numeric X holds NaN or infinity.
    """
    arr = arith.asarray(X, copy=False)
    if arr.ndim not in (2, 3):
        raise ShapeError(f"a query must have shape (N, d) or (B, N, d); got shape {arr.shape}")
    batched = arr.ndim == 3
    if not batched:
        arr = arr[None]
    if arr.shape[1] < 1:
        raise ShapeError("a query needs at least one token (N >= 1)")
    if arr.shape[2] != d:
        raise ShapeError(f"tokens must have width d = {d}; got {arr.shape[2]}")
    arith.check_finite(arr, "query X")
    return arr, batched


def scores(X: np.ndarray, W: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    """s_i(X, W) = x_i^T W x_N (Sec. 3) [+ c^T x_i with a score bias] for X (B, N, d); returns (B, N)."""
    q = X[:, -1, :] @ W.T  # (B, d): W x_N for every sequence
    s = (X @ q[:, :, None])[..., 0]
    return s if c is None else s + X @ c


def attention_weights(X: np.ndarray, W: np.ndarray, arith: Arith, c: np.ndarray | None = None) -> np.ndarray:
    """alpha(X, W) = softmax(s_1, ..., s_N) (Sec. 3) for X of shape (B, N, d); returns (B, N)."""
    return arith.softmax(scores(X, W, c))


def _readout(alpha: np.ndarray, X: np.ndarray, v: np.ndarray, beta: Any) -> np.ndarray:
    """alpha^T (X v) [+ beta] for each sequence of the batch."""
    out = (alpha * (X @ v)).sum(axis=-1)
    return out if beta is None else out + beta


def _bias_terms(c: Any, beta: Any, d: int, arith: Arith) -> tuple[np.ndarray | None, Any]:
    """Validate the optional score bias c (d,) and output offset beta (scalar)."""
    if c is not None:
        c = arith.asarray(c)
        _check_matrix(c, (d,), "c")
        arith.check_finite(c, "c")
    if beta is not None:
        beta = arith.asarray([beta])
        arith.check_finite(beta, "beta")
        beta = beta[0]
    return c, beta


def _check_matrix(M: np.ndarray, shape: tuple[int, ...], what: str) -> None:
    if M.shape != shape:
        raise ShapeError(f"{what} must have shape {shape}; got {M.shape}")


def _check_width(d: int) -> None:
    """Tokens live in R^d with d >= 1: a width-0 model has no query to answer."""
    if d < 1:
        raise ShapeError(f"the token width d must be >= 1; got d = {d}")


class Attention:
    """Single-head attention regressor f_{W,v} (Sec. 3).

    Parameters
    ----------
    W : array-like, shape (d, d)
        Merged query-key matrix (``W = K^T Q``).
    v : array-like, shape (d,)
        Merged value-readout vector (``v = V^T w_o``).
    arith : Arith
        Arithmetic in which the model is evaluated.
    c, beta : optional
        A real head's biases: scores ``x_i^T W x_N + c^T x_i`` and output ``... + beta``
        (:mod:`attnproof.theorems.bias`); None for the paper's bias-free model.
    answers : {"naive", "faithful"}
        Keyword only.  How the answers are evaluated and rounded (:class:`Rounding`, exposed as
        ``rounding`` and declared by an oracle): in the arithmetic (default), or in extended
        precision rounded once to float64 (float64 models only).
    """

    def __init__(
        self, W: Any, v: Any, arith: Arith = FLOAT64, c: Any = None, beta: Any = None,
        *, answers: str = "naive",
    ) -> None:
        self.arith = arith
        self.rounding = _answers(answers, arith)
        self.W = arith.asarray(W)
        self.v = arith.asarray(v)
        if self.W.ndim != 2 or self.W.shape[0] != self.W.shape[1]:
            raise ShapeError(f"W must be a square (d, d) matrix; got shape {self.W.shape}")
        _check_width(self.W.shape[0])
        _check_matrix(self.v, (self.W.shape[0],), "v")
        arith.check_finite(self.W, "W")
        arith.check_finite(self.v, "v")
        self.c, self.beta = _bias_terms(c, beta, self.d, arith)

    @property
    def d(self) -> int:
        """Token width d."""
        return self.W.shape[0]

    @classmethod
    def from_qkv(cls, Q: Any, K: Any, V: Any, w_o: Any, arith: Arith = FLOAT64) -> Attention:
        """Merge projections as in Sec. 3: ``W = K^T Q`` and ``v = V^T w_o``.

        Parameters
        ----------
        Q, K, V : array-like, shape (r, d)
            Query, key and value projections.
        w_o : array-like, shape (r,)
            Output projection.
        """
        Q, K, V, w_o = (arith.asarray(a) for a in (Q, K, V, w_o))
        if Q.ndim != 2:
            raise ShapeError(f"Q must have shape (r, d); got {Q.shape}")
        r, d = Q.shape
        _check_matrix(K, (r, d), "K")
        _check_matrix(V, (r, d), "V")
        _check_matrix(w_o, (r,), "w_o")
        with arith.context():  # mpmath products at the model's precision, not the global one
            return cls(K.T @ Q, V.T @ w_o, arith)

    def __call__(self, X: Any) -> Any:
        """f_{W,v}(X) for one sequence (N, d) -> scalar, or a batch (B, N, d) -> (B,)."""
        with self.arith.context():
            Xb, batched = as_batch(X, self.d, self.arith)
            if self.rounding is FAITHFUL:
                out = _faithful(Xb, None, self.W, self.v, self.c, self.beta)
            else:
                out = _readout(attention_weights(Xb, self.W, self.arith, self.c), Xb, self.v, self.beta)
        return out if batched else out[0]

    def __repr__(self) -> str:
        return f"Attention(d={self.d}, arith={self.arith.name})"


class FactoredAttention:
    """Single-head attention with W = K^T Q kept factored (Sec. 5: rank(W) <= r).

    One query costs O(N r d) instead of O(N d^2): the scores are ``(K x_i)^T (Q x_N)``.

    Parameters
    ----------
    K, Q : array-like, shape (r, d)
        Key and query projections (any scaling, e.g. 1/sqrt(r), folded in).
    v : array-like, shape (d,)
    c, beta : optional
        Score bias and output offset, as for :class:`Attention`.
    answers : {"naive", "faithful"}
        Keyword only; as for :class:`Attention`.
    """

    def __init__(
        self, K: Any, Q: Any, v: Any, arith: Arith = FLOAT64, c: Any = None, beta: Any = None,
        *, answers: str = "naive",
    ) -> None:
        self.arith = arith
        self.rounding = _answers(answers, arith)
        self.K, self.Q, self.v = arith.asarray(K), arith.asarray(Q), arith.asarray(v)
        if self.Q.ndim != 2:
            raise ShapeError(f"Q must have shape (r, d); got {self.Q.shape}")
        _check_width(self.Q.shape[1])
        _check_matrix(self.K, self.Q.shape, "K")
        _check_matrix(self.v, (self.Q.shape[1],), "v")
        for M, what in ((self.K, "K"), (self.Q, "Q"), (self.v, "v")):
            arith.check_finite(M, what)
        self.c, self.beta = _bias_terms(c, beta, self.d, arith)
        #: what a faithful evaluation's error depends on, declared with FAITHFUL (declared_rounding)
        self.factor_sizes = (FactorSizes.of(self.K, self.Q, self.v, self.c)
                             if self.rounding is FAITHFUL else None)

    @property
    def d(self) -> int:
        return self.Q.shape[1]

    @property
    def rank_bound(self) -> int:
        """r, the head dimension: rank(W) <= r."""
        return self.Q.shape[0]

    @property
    def W(self) -> np.ndarray:
        """The merged matrix K^T Q (dense, d x d), at the model's precision."""
        with self.arith.context():
            return self.K.T @ self.Q

    def __call__(self, X: Any) -> Any:
        with self.arith.context():
            Xb, batched = as_batch(X, self.d, self.arith)
            if self.rounding is FAITHFUL:
                out = _faithful(Xb, self.K, self.Q, self.v, self.c, self.beta)
                return out if batched else out[0]
            B, N, d = Xb.shape
            q = Xb[:, -1, :] @ self.Q.T  # (B, r)
            keys = (Xb.reshape(B * N, d) @ self.K.T).reshape(B, N, -1)  # one GEMM, not B small ones
            s = (keys @ q[:, :, None])[..., 0]
            alpha = self.arith.softmax(s if self.c is None else s + Xb @ self.c)
            out = _readout(alpha, Xb, self.v, self.beta)
        return out if batched else out[0]

    def __repr__(self) -> str:
        return f"FactoredAttention(d={self.d}, r={self.rank_bound}, arith={self.arith.name})"


def relu(z: np.ndarray) -> np.ndarray:
    """Elementwise ReLU(z) = max(z, 0), symbolic (``sympy.Max``) for object arrays."""
    z = np.asarray(z)
    if z.dtype == object:
        out = np.empty(z.shape, dtype=object)
        flat = out.reshape(-1)
        for k, x in enumerate(z.reshape(-1)):
            flat[k] = sp.Max(x, 0) if isinstance(x, sp.Basic) else max(x, 0 * x)
        return out
    return np.maximum(z, 0.0)


class OneLayerTransformer:
    """TF(X) = w_o^T ReLU(alpha(X, W)^T X A) (Sec. 4.1, with A = V^T W_1^T).

    Parameters
    ----------
    W : array-like, shape (d, d)
    A : array-like, shape (d, m)
    w_o : array-like, shape (m,)
    """

    def __init__(self, W: Any, A: Any, w_o: Any, arith: Arith = FLOAT64) -> None:
        self.arith = arith
        self.W = arith.asarray(W)
        self.A = arith.asarray(A)
        self.w_o = arith.asarray(w_o)
        d = self.W.shape[0] if self.W.ndim else 0
        _check_width(d)
        _check_matrix(self.W, (d, d), "W")
        if self.A.ndim != 2 or self.A.shape[0] != d:
            raise ShapeError(f"A must have shape (d, m) with d = {d}; got {self.A.shape}")
        _check_matrix(self.w_o, (self.A.shape[1],), "w_o")
        for M, what in ((self.W, "W"), (self.A, "A"), (self.w_o, "w_o")):
            arith.check_finite(M, what)

    @property
    def d(self) -> int:
        return self.W.shape[0]

    def __call__(self, X: Any) -> Any:
        with self.arith.context():
            Xb, batched = as_batch(X, self.d, self.arith)
            alpha = attention_weights(Xb, self.W, self.arith)
            B, N, d = Xb.shape
            z = (alpha[:, :, None] * (Xb.reshape(B * N, d) @ self.A).reshape(B, N, -1)).sum(axis=1)  # (B, m)
            out = relu(z) @ self.w_o
        return out if batched else out[0]


class MultiHeadAttention:
    """f^H(X) = sum_h alpha(X, W^(h))^T (X v^(h)) (Sec. 7, Prop. 7.1).

    Parameters
    ----------
    heads : sequence of (W_h, v_h)
        One (d, d) matrix and one (d,) vector per head.
    """

    def __init__(self, heads: Sequence[tuple[Any, Any]], arith: Arith = FLOAT64) -> None:
        if not heads:
            raise ShapeError("a multi-head model needs at least one head")
        self.arith = arith
        self.heads = [Attention(W, v, arith) for W, v in heads]
        d = self.heads[0].d
        if any(h.d != d for h in self.heads):
            raise ShapeError("all heads must have the same width d")

    @property
    def d(self) -> int:
        return self.heads[0].d

    def __call__(self, X: Any) -> Any:
        with self.arith.context():  # the sum of the heads at the model's precision, not the global one
            outs = [h(X) for h in self.heads]
            total = outs[0]
            for o in outs[1:]:
                total = total + o
        return total


class ReluFFN:
    """The bias-free FFN of Sec. 4.1 on one token: ``f(x) = w_o^T ReLU(A^T x)`` (A is d x m).

    It is the one-layer Transformer restricted to length-1 queries (``TF([x^T]) = f(x)``).
    ``b`` (shape (m,)) adds first-layer biases, ``ReLU(A^T x + b)``: a model the bias-free
    learner must refuse (its parity split fails), kept here to show the counterexample.

    Parameters
    ----------
    A : array-like, shape (d, m)
    w_o : array-like, shape (m,)
    arith : Arith
    b : array-like, shape (m,), optional
    answers : {"naive", "faithful"}
        Keyword only, as for :class:`Attention`: evaluated in the arithmetic (default), or in
        extended precision (``A^T x`` by :func:`_ext_product`, the readout's m terms in
        longdouble: within ``(d + m + 4) 2^-64 |w_o|^T |A^T x|`` of f(x)) and rounded once to
        float64 (:data:`FAITHFUL`, exposed as ``rounding``; float64 models only).
    """

    def __init__(
        self, A: Any, w_o: Any, arith: Arith = FLOAT64, b: Any = None, *, answers: str = "naive"
    ) -> None:
        self.arith = arith
        self.rounding = _answers(answers, arith)
        self.A, self.w_o = arith.asarray(A), arith.asarray(w_o)
        if self.A.ndim != 2:
            raise ShapeError(f"A must have shape (d, m); got {self.A.shape}")
        _check_matrix(self.w_o, (self.A.shape[1],), "w_o")
        self.b = None if b is None else arith.asarray(b)
        if self.b is not None:
            _check_matrix(self.b, (self.A.shape[1],), "b")
        for M, what in ((self.A, "A"), (self.w_o, "w_o"), (self.b, "b")):
            if M is not None:
                arith.check_finite(M, what)

    @property
    def d(self) -> int:
        return self.A.shape[0]

    def __call__(self, X: Any) -> Any:
        """f on one token: X of shape (1, d) -> scalar, or (B, 1, d) -> (B,)."""
        with self.arith.context():
            Xb, batched = as_batch(X, self.d, self.arith)
            if Xb.shape[1] != 1:
                raise ShapeError(f"an FFN reads one token (N = 1); got N = {Xb.shape[1]}")
            if self.rounding is FAITHFUL:
                Xf = np.asarray(Xb[:, 0, :], dtype=np.float64)
                z = _ext_product(Xf, np.asarray(self.A, dtype=np.float64))
                if self.b is not None:
                    z = z + _ext(self.b)
                out = (relu(z) @ _ext(self.w_o)).astype(np.float64)
            else:
                z = Xb[:, 0, :] @ self.A
                out = relu(z if self.b is None else z + self.b) @ self.w_o
        return out if batched else out[0]


def canonical_ffn(
    A: Any, w_o: Any, arith: Arith = FLOAT64, rtol: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The canonical form of ``f(x) = w_o^T ReLU(A^T x)`` (Sec. 4.1, parity split).

    ``f(x) = 1/2 u^T x + 1/2 sum_j c_j |n_j^T x|`` with ``u = A w_o``, one n_j per distinct
    hyperplane (line through the origin) scaled so that its entry of largest magnitude
    (the first such) is +1, ``c_j = sum_{k: w_k = lam_k n_j} a_k |lam_k|``, hyperplanes with
    c_j = 0 dropped and the rest sorted lexicographically by n_j.  It is invariant under
    permutation, positive rescaling, merging/splitting and orientation flips of zero-sum
    subsets.  ``rtol`` (numeric arithmetics) merges normals equal to within rtol and drops
    kinks below rtol times the largest.

    Returns
    -------
    u : array (d,), N : array (L, d), c : array (L,)
    """
    with arith.context():
        A, w_o = arith.asarray(A), arith.asarray(w_o)
        u = A @ w_o
        normals: list[np.ndarray] = []
        weights: list[Any] = []
        for k in range(A.shape[1]):
            w = A[:, k]
            if arith.is_zero(w_o[k]) or all(arith.is_zero(x) for x in w):
                continue
            n, lam = normalize_normal(w, arith)
            for j, m in enumerate(normals):
                if _same(m, n, arith, rtol):
                    weights[j] = weights[j] + w_o[k] * abs(lam)
                    break
            else:
                normals.append(n)
                weights.append(w_o[k] * abs(lam))
        scale = max((abs(float(x)) for x in weights), default=0.0)
        keep = [j for j, c in enumerate(weights) if not _negligible_weight(c, arith, rtol * scale)]
        order = sorted(keep, key=lambda j: tuple(float(x) for x in normals[j]))
        N = arith.zeros((len(order), A.shape[0]))
        for i, j in enumerate(order):
            N[i] = normals[j]
        return u, N, arith.asarray([weights[j] for j in order]) if order else arith.zeros((0,))


def normalize_normal(w: np.ndarray, arith: Arith) -> tuple[np.ndarray, Any]:
    """(n, lam) with w = lam n and the first entry of largest magnitude of n equal to +1."""
    lam = w[arith.argmax_abs(w)]  # exact comparisons in exact arithmetic
    return w / lam, lam


def _same(m: np.ndarray, n: np.ndarray, arith: Arith, rtol: float) -> bool:
    """Are the normals equal to within rtol entrywise (exactly equal in exact arithmetic)?"""
    return all(arith.within(x - y, rtol) for x, y in zip(m, n, strict=True))


def _negligible_weight(c: Any, arith: Arith, rtol: float) -> bool:
    """Is the kink weight within rtol of 0 (exactly 0 in exact arithmetic)?"""
    return arith.within(c, rtol)


def evaluate_canonical(u: np.ndarray, N: np.ndarray, c: np.ndarray, x: np.ndarray) -> Any:
    """``1/2 u^T x + 1/2 sum_j c_j |n_j^T x|`` for x of shape (d,) or (B, d) (any arithmetic)."""
    x = np.asarray(x)
    z = x @ N.T
    return (x @ u + np.abs(z) @ c) / 2  # np.abs calls abs() on the entries of an object array


__all__ = [
    "Rounding",
    "RowSizes",
    "FactorSizes",
    "NAIVE",
    "FAITHFUL",
    "faithful_available",
    "declared_rounding",
    "ReluFFN",
    "canonical_ffn",
    "normalize_normal",
    "evaluate_canonical",
    "Attention",
    "FactoredAttention",
    "OneLayerTransformer",
    "MultiHeadAttention",
    "attention_weights",
    "scores",
    "as_batch",
    "relu",
]
