"""One small interface over three arithmetics: float64, mpmath at a chosen precision, sympy.

The learners are written once against :class:`Arith`.  Arrays are numpy arrays throughout:
``float64`` for :data:`FLOAT64`, and ``object`` arrays holding ``mpmath.mpf`` or sympy
expressions for the other two, so ``@``, slicing and broadcasting work unchanged; only the
transcendental functions, the linear solve and the notion of "negligible" are per backend.
"""

from __future__ import annotations

import contextlib
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from .errors import (
    AttnproofError,
    DegenerateProbeError,
    InvalidInputError,
    NonFiniteError,
    PrecisionLossError,
)


class Arith(ABC):
    """An arithmetic in which models are evaluated and learners compute.

    Attributes
    ----------
    name : str
        ``"float64"``, ``"mp:<digits>"`` or ``"sympy"`` (the CLI spelling).
    exact : bool
        True when every operation is exact (sympy); no rounding-based checks apply.
    eps : float
        Unit roundoff (0 for exact arithmetic).
    """

    name: str
    #: ``"float64"``, ``"mpmath"`` or ``"sympy"``: what a learner declares it runs in
    family: str
    exact: bool = False
    eps: float
    #: numpy dtype of this arithmetic's arrays
    dtype: Any = object
    #: magnitudes a learner's one-token answers may have without the two-token labels over- or
    #: underflowing (None: no limit, as in mpmath's and sympy's unbounded exponents)
    safe_range: tuple[float, float] | None = None
    #: significant decimal digits a rounding model of this arithmetic works with (float64: 15;
    #: mpmath: its dps; sympy: float64's, which only sizes numerical side computations, as
    #: :attr:`resolution` does)
    digits: int = 15
    #: what to raise when two values that must agree do not: in floating point the precision
    #: ran out (PrecisionLossError); in exact arithmetic the input itself is degenerate
    unresolved: type[AttnproofError] = PrecisionLossError
    #: where the elementary functions (sin, cos, tan) come from
    _library: Any = mpmath

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        """Context inside which this arithmetic's global settings are in force."""
        yield

    @contextlib.contextmanager
    def interval(self, dps: int | None = None) -> Iterator[Any]:
        """``mpmath.iv`` at ``dps`` digits for the block (default: :attr:`digits` + 10 guard
        digits), restoring the precision it had before, even on error; yields ``mpmath.iv``.

        mpmath's interval precision is global state: a block that sets ``mpmath.iv.dps`` by hand
        and "restores" a fixed value (15) leaks into every enclosure computed afterwards.
        """
        dps = self.digits + 10 if dps is None else dps
        if isinstance(dps, bool) or not isinstance(dps, (int, np.integer)) or dps < 1:
            raise InvalidInputError(f"interval precision must be an integer >= 1 digit; got {dps!r}")
        saved = mpmath.iv.dps
        mpmath.iv.dps = int(dps)
        try:
            yield mpmath.iv
        finally:
            mpmath.iv.dps = saved

    @property
    def pi(self) -> Any:
        """pi in this arithmetic (float64: ``math.pi``; mpmath: at its digits; sympy: ``sympy.pi``)."""
        with self.context():
            return +mpmath.pi

    def sin(self, x: Any) -> Any:
        """sin of a scalar, or elementwise of an array, in this arithmetic."""
        return self._map("sin", x)

    def cos(self, x: Any) -> Any:
        """cos of a scalar, or elementwise of an array, in this arithmetic."""
        return self._map("cos", x)

    def tan(self, x: Any) -> Any:
        """tan of a scalar, or elementwise of an array, in this arithmetic."""
        return self._map("tan", x)

    def _map(self, name: str, x: Any) -> Any:
        """The function ``name`` of :attr:`_library` at this arithmetic's precision, on a scalar
        or elementwise on an array (of this arithmetic's dtype)."""
        fn = getattr(self._library, name)
        with self.context():
            return _elementwise(fn, x).astype(self.dtype) if isinstance(x, np.ndarray) else fn(x)

    def hypot(self, w: Any) -> Any:
        """The Euclidean length ``sqrt(sum_i w_i^2)`` of a vector, as a number of this arithmetic
        (unlike :meth:`norm`, which returns a float): exact in sympy."""
        with self.context():
            return mpmath.sqrt(mpmath.fsum(x * x for x in np.asarray(w, dtype=object).reshape(-1)))

    def closed_form(self, expr: Any) -> Any:
        """The value of a closed form given as a sympy expression (e.g. ``gamma(d/2) / sqrt(pi)``)
        in this arithmetic: itself in sympy, correctly rounded to the working digits otherwise
        (sympy evaluates it with guard digits first).  Unlike :meth:`evaluate`, which computes an
        mpmath formula at the working digits, this is exact to the last digit: the two can differ
        in the last digit of an mpmath result."""
        return self.scalar(sp.sympify(expr))

    def evaluate(self, formula: Callable[[Any], Any]) -> Any:
        """A closed form in this arithmetic: ``formula(m)`` written with mpmath's names
        (``m.mpf``, ``m.pi``, ``m.sqrt``, ``m.gamma``, ``m.exp``, ``m.log``, the trig functions),
        e.g. ``lambda m: m.gamma(m.mpf(d) / 2) / m.sqrt(m.pi)``.  mpmath: evaluated at its digits;
        float64: at 30 digits, then rounded once (correctly rounded but for ties); sympy: the
        same names are sympy's, so the result is the exact expression."""
        with self.context():
            return formula(mpmath)

    def abs_max_scalar(self, a: Any) -> Any:
        """max |a_i| as a number to compute with (0 for an empty array): the exact largest entry
        in sympy, a Python float (as :meth:`abs_max`) in floating point."""
        return self.abs_max(a)

    def argmax_abs(self, a: Any) -> int:
        """Index of the first entry of largest magnitude (exact comparisons in sympy)."""
        return int(np.argmax(self.to_float(np.abs(np.asarray(a)))))

    def within(self, x: Any, tol: float) -> bool:
        """Is |x| <= tol?  In exact arithmetic: is x provably 0 (``tol`` is then ignored, as
        every tolerance of a rounding model is 0 there).  Compared in this arithmetic, so an mpmath
        value below float64's range is not rounded to 0 first."""
        with self.context():
            return bool(abs(x) <= tol)

    def simplify(self, a: np.ndarray) -> np.ndarray:
        """Entries in canonical form: sympy simplifies each (e.g. ``exp(-s) exp(s)`` to 1); a
        floating-point array is returned as it is."""
        return a

    def nsimplify(self, a: np.ndarray) -> np.ndarray:
        """Entries given as floats read as the simplest exact numbers they round (sympy's
        ``nsimplify``: 0.5 -> 1/2, 0.7071067811865476 -> sqrt(2)/2); unchanged in floating point."""
        return a

    def eigh(self, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of the symmetric part
        ``(M + M^T) / 2``, computed in this arithmetic."""
        with self.context():
            lam, Q = mpmath.eigsy(mpmath.matrix(((M + M.T) / 2).tolist()))
            lam = np.array([lam[i] for i in range(lam.rows)], dtype=object)
            Q = np.array(Q.tolist(), dtype=object)
            order = np.argsort(self.to_float(lam), kind="stable")
            return lam[order], Q[:, order]

    def right_singular(self, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Singular values of M, ascending, and its right singular vectors (the columns of V),
        from the eigen-decomposition of ``M^T M`` in this arithmetic (float64: numpy's SVD of M,
        which does not square the condition number)."""
        with self.context():
            lam, V = self.eigh(M.T @ M)
            return np.array([self.sqrt(abs(x)) for x in lam], dtype=object), V

    def qr(self, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``A = Q R``, Q orthogonal, R upper triangular with a non-negative diagonal (the unique
        QR of a full-rank A: Gaussian A gives a Haar-random Q), computed in this arithmetic."""
        with self.context():
            Q, R = mpmath.qr(mpmath.matrix(np.asarray(A).tolist()))
            sign = [mpmath.sign(R[k, k]) for k in range(min(R.rows, R.cols))]
            n = len(sign)
            Qs = np.array([[Q[i, k] * sign[k] for k in range(n)] for i in range(Q.rows)], dtype=object)
            Rs = np.array([[R[k, j] * sign[k] for j in range(R.cols)] for k in range(n)], dtype=object)
            return Qs, Rs

    @abstractmethod
    def scalar(self, x: Any) -> Any:
        """Convert one number to this arithmetic."""

    def asarray(self, a: Any, copy: bool = True) -> np.ndarray:
        """Convert an array-like to this arithmetic's array type (a copy unless ``copy=False``
        and ``a`` already has the right type)."""
        return _elementwise(self.scalar, a)

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        """An array of zeros of the given shape."""
        out = np.empty(shape, dtype=object)
        out.fill(self.scalar(0))
        return out

    def buffer(self, shape: tuple[int, ...]) -> np.ndarray | None:
        """An uninitialised array to fill in place batch after batch, or None where arrays are
        built per batch (object arrays: every entry is a new Python number, nothing to reuse)."""
        return None

    def eye(self, d: int) -> np.ndarray:
        """The d x d identity."""
        out = self.zeros((d, d))
        for i in range(d):
            out[i, i] = self.scalar(1)
        return out

    @abstractmethod
    def exp(self, a: np.ndarray) -> np.ndarray:
        """Elementwise exponential."""

    def sqrt(self, x: Any) -> Any:
        """The square root of a non-negative scalar, in this arithmetic."""
        with self.context():
            return mpmath.sqrt(x)

    @abstractmethod
    def logit(self, p: np.ndarray) -> np.ndarray:
        """Elementwise sigma^{-1}(p) = log(p / (1 - p)) (Thm 4.1, inverting Eq. (1))."""

    @abstractmethod
    def solve(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Solve A X = B for square A."""

    @abstractmethod
    def abs_max(self, a: np.ndarray) -> float:
        """max |a_i| as a Python float (0.0 for an empty array); numeric arithmetics only."""

    def softmax(self, scores: np.ndarray) -> np.ndarray:
        """Softmax over the last axis.  Exact arithmetics need no max shift."""
        e = self.exp(scores)
        return e / e.sum(axis=-1, keepdims=True)

    def sigmoid(self, t: np.ndarray) -> np.ndarray:
        """Elementwise sigma(t) = 1 / (1 + e^{-t})."""
        return 1 / (1 + self.exp(-np.asarray(t)))

    def is_zero(self, x: Any) -> bool:
        """True iff x is exactly zero (sympy: provably zero)."""
        return bool(x == 0)

    def check_finite(self, a: np.ndarray, what: str) -> None:
        """Raise :class:`NonFiniteError` if a numeric array holds NaN or infinity."""
        return None

    def to_float(self, a: Any) -> np.ndarray:
        """Round to a float64 array (NaN stays NaN)."""
        with np.errstate(invalid="ignore"):
            return np.asarray(np.vectorize(float, otypes=[float])(np.asarray(a, dtype=object)))

    @property
    def resolution(self) -> float:
        """The relative precision that rounding-based tests use: eps, or float64's for exact
        arithmetic (whose own checks are exact; this only sizes numerical side tests)."""
        return self.eps or 2.0**-53

    @property
    def unit_roundoff(self) -> float:
        """The largest relative error of one correctly rounded operation: eps for float64 (2^-53),
        0 in exact arithmetic; mpmath overrides it (2^-prec, below its nominal 10^-dps)."""
        return self.eps

    def widened(self, a: Any) -> tuple[np.ndarray, float]:
        """``a`` in the widest arithmetic at hand for reading a rounding a posteriori (a residual
        recomputed in it), with that arithmetic's unit roundoff: here this arithmetic itself, at
        :attr:`resolution`."""
        return np.asarray(a, dtype=self.dtype), self.resolution

    def magnitudes(self, a: Any) -> np.ndarray:
        """|a| elementwise as float64 (NaN where a is NaN); exact arithmetic: 0 exactly for a
        provable zero, and never 0 otherwise (a non-zero value that underflows float64 reports
        the smallest positive float), so pivoting and zero tests stay exact."""
        return np.abs(self.to_float(a))

    def negligible(self, a: Any, threshold: Any) -> np.ndarray:
        """Boolean mask of entries that count as zero: ``|a| < threshold`` for the numeric
        arithmetics, provably zero for exact arithmetic (the threshold is then ignored)."""
        return self.magnitudes(a) < threshold

    def norm(self, a: Any) -> float:
        """Frobenius / 2-norm as a float, computed in this arithmetic with the largest entry
        factored out, so entries of 1e-200 (or 1e-1000 in mpmath) neither underflow nor overflow
        in the squares; a norm below float64's range is returned as the smallest subnormal."""
        with self.context():
            mags = [magnitude(x) for x in np.asarray(a, dtype=object).reshape(-1)]
            top = max(mags, default=mpmath.mpf(0))
            if top == 0:
                return 0.0
            return _to_float_floor(top * mpmath.sqrt(mpmath.fsum((m / top) ** 2 for m in mags)))

    def log2_abs_max(self, a: Any) -> float:
        """log2 of max |a_i| as a float (-inf when every entry is 0): no underflow for mpmath
        values far below float64's range."""
        with self.context():
            top = max((magnitude(x) for x in np.asarray(a, dtype=object).reshape(-1)), default=mpmath.mpf(0))
            return float(mpmath.log(top, 2)) if top > 0 else -math.inf

    def pow2(self, k: np.ndarray) -> np.ndarray:
        """2^k elementwise, exactly (k an integer array)."""
        two = self.scalar(2)
        return _elementwise(lambda ki: two ** int(ki), np.asarray(k))

    def ldexp(self, a: Any, k: int) -> np.ndarray:
        """``a 2^k`` elementwise, exactly, for one integer k, without forming 2^k as a number
        (float64's 2^1074 overflows though ``1e-320 * 2^1074`` does not): how a norm or a rounding
        model scales user data into range first."""
        with self.context():
            return np.asarray(a, dtype=object) * self.scalar(2) ** int(k)

    def maximum(self, a: np.ndarray, floor: Any = 0) -> np.ndarray:
        """Elementwise max(a, floor) (sympy: ``Max``, which stays symbolic)."""
        return _elementwise(lambda x: x if x >= floor else self.scalar(floor), a)

    def is_singular(self, A: np.ndarray) -> bool:
        """Is the square matrix A singular to this arithmetic's precision (cond > 1 / (64 eps))?"""
        return bool(np.linalg.cond(self.to_float(A)) > 1 / (64 * self.resolution))

    def inverse_of_orthogonal(self, P: np.ndarray) -> np.ndarray:
        """P^{-1} for a matrix that is orthogonal up to float64 rounding: an exact solve (P^T
        is only float64-accurate, which mpmath and sympy must not inherit)."""
        return self.solve(P, self.eye(P.shape[0]))

    def solve_error(
        self, A: np.ndarray, X: np.ndarray, B: np.ndarray, A_inv_norm: float, A_norm: float
    ) -> float:
        """A bound on ``||X - A^{-1} B||_F`` for ``X = solve(A, B)`` (B a matrix or a vector):
        here the normwise first-order ``(d + 4) u cond(A) ||X||_F`` of a backward-stable solve
        (``A_norm`` >= ||A||_2, ``A_inv_norm`` >= ||A^{-1}||_2); an exact arithmetic's is 0."""
        if self.exact:
            return 0.0
        return _first_order(A.shape[0], self.resolution, A_norm * A_inv_norm, self.norm(X))

    def orthogonal_solve(
        self, Z: np.ndarray, M: np.ndarray, delta: float, Z_norm: float, Z_inv_norm: float,
    ) -> tuple[np.ndarray, float]:
        """``X = Z^{-1} M`` for a probe matrix Z that is orthogonal up to float64 rounding (Thm 4.1's
        solve with the orthogonal family), and a bound on ``||X_hat - Z^{-1} M||_F``.

        Here :meth:`inverse_of_orthogonal` is a solve in this arithmetic, whose forward error is
        at most ``(d + 4) u cond(Z) ||X||_F`` to first order (``Z_norm`` >= ||Z||_2, ``Z_inv_norm``
        >= ||Z^{-1}||_2; ``delta``, Z's computed orthogonality defect, is not needed).  M may be a
        matrix or a vector; an exact arithmetic's bound is 0."""
        X = self.inverse_of_orthogonal(Z) @ M
        if self.exact:
            return X, 0.0
        return X, _first_order(Z.shape[0], self.resolution, Z_norm * Z_inv_norm, self.norm(X))

    def __repr__(self) -> str:
        return f"<Arith {self.name}>"


class Float64(Arith):
    """IEEE double precision through numpy (fast, batched, rounding unit 2^-53)."""

    name = family = "float64"
    eps = float(np.finfo(np.float64).eps) / 2
    dtype = np.float64
    safe_range = (2.0**-900, 2.0**900)
    _library = math  # the libm functions, as the rooms computed them before (numpy's may differ by an ulp)

    def scalar(self, x: Any) -> float:
        return float(x)

    def asarray(self, a: Any, copy: bool = True) -> np.ndarray:
        if not (isinstance(a, np.ndarray) and a.dtype.kind in "fiub"):  # the fast path: no check
            check_real(a)
        try:
            return np.array(a, dtype=np.float64, copy=copy or None)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"cannot convert to float64: {exc}") from exc

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape)

    def buffer(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.empty(shape)

    def eye(self, d: int) -> np.ndarray:
        return np.eye(d)

    def exp(self, a: np.ndarray) -> np.ndarray:
        return np.exp(a)

    def softmax(self, scores: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # s_i - max = -inf only where the weight is 0 anyway
            shifted = scores - scores.max(axis=-1, keepdims=True)
        e = np.exp(shifted)
        return e / e.sum(axis=-1, keepdims=True)

    def sigmoid(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        z = np.exp(-np.abs(t))
        return np.where(t >= 0, 1 / (1 + z), z / (1 + z))

    def logit(self, p: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(p) - np.log1p(-p)

    def solve(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return np.linalg.solve(A, B)

    def abs_max(self, a: np.ndarray) -> float:
        a = np.asarray(a)
        return float(np.max(np.abs(a))) if a.size else 0.0

    def check_finite(self, a: np.ndarray, what: str) -> None:
        # one pass with no temporary: a finite sum proves every entry finite (NaN and +-inf
        # propagate); only a sum that overflowed (or a non-finite entry) needs the entrywise test
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.sum(a)
        if not np.isfinite(total) and not np.all(np.isfinite(a)):
            raise NonFiniteError(f"{what} holds NaN or infinite entries")

    def to_float(self, a: Any) -> np.ndarray:
        return np.asarray(a, dtype=np.float64)

    def widened(self, a: Any) -> tuple[np.ndarray, float]:
        """float64 read in numpy's longdouble: x87 extended precision (unit roundoff 2^-64) where the
        platform has it, else float64 itself (2^-53)."""
        return np.asarray(a, dtype=np.longdouble), float(np.finfo(np.longdouble).eps) / 2

    def norm(self, a: Any) -> float:
        """As :meth:`Arith.norm`; first ``sqrt(a . a)`` in one pass, no copy (a d x d W at d = 4096: a
        quarter of the scaled pass' time): kept when the sum of squares is finite and at least 2^-900,
        where no square overflowed and those that underflowed (each below 2^-1074, fewer than 2^48)
        are below 2^-126 of it; else the largest entry factored out."""
        a = np.asarray(a, dtype=np.float64)
        flat = a.reshape(-1)
        with np.errstate(over="ignore", under="ignore"):
            squares = float(flat @ flat)
        if 2.0**-900 <= squares < math.inf:
            return math.sqrt(squares)
        top = float(np.max(np.abs(a), initial=0.0))
        if not math.isfinite(top):  # an infinite entry (an unbounded error): the norm is too
            return top
        return top * float(np.linalg.norm(a / top)) if top > 0 else 0.0

    def log2_abs_max(self, a: Any) -> float:
        top = float(np.max(np.abs(np.asarray(a, dtype=np.float64)), initial=0.0))
        return math.log2(top) if top > 0 else -math.inf

    def sqrt(self, x: Any) -> Any:
        return np.sqrt(x)

    def pow2(self, k: np.ndarray) -> np.ndarray:
        return np.ldexp(1.0, k)

    def ldexp(self, a: Any, k: int) -> np.ndarray:
        return np.ldexp(np.asarray(a, dtype=np.float64), int(k))

    def maximum(self, a: np.ndarray, floor: Any = 0) -> np.ndarray:
        return np.maximum(a, floor)

    def inverse_of_orthogonal(self, P: np.ndarray) -> np.ndarray:
        return P.T

    def solve_error(
        self, A: np.ndarray, X: np.ndarray, B: np.ndarray, A_inv_norm: float, A_norm: float
    ) -> float:
        """A rigorous a-posteriori bound on ``||X - A^{-1} B||_F`` from the residual:
        ``X - A^{-1} B = A^{-1} (A X - B)``, so it is at most ``||A^{-1}||_2 ||A X - B||_F``, with
        ``A X`` formed nearly exactly (:func:`split_product`, its bound added) and the subtraction
        rounding by ``u`` of the result (the norm's own rounding: ``1 + (k + 2) u``).  A
        backward-stable solve leaves a residual of ~``u |A| |X|``, so this is about the first-order
        ``u cond(A) ||X||``, but holds whatever the solve did (``A_norm`` is not needed); inf for
        a non-finite X."""
        AX, product = split_product(A, X)
        R = np.reshape(B - AX, -1)
        if not (math.isfinite(product) and np.all(np.isfinite(R))):  # a non-finite X: no bound
            return math.inf
        return float(A_inv_norm * (norm2(R) * (1 + self.eps) * (1 + (R.size + 2) * self.eps) + product))

    def orthogonal_solve(
        self, Z: np.ndarray, M: np.ndarray, delta: float, Z_norm: float, Z_inv_norm: float,
    ) -> tuple[np.ndarray, float]:
        """``X = Z^T M`` for ``Z^{-1} M``, formed so that its rounding is nearly exact, and a
        rigorous bound on ``||X_hat - Z^{-1} M||_F`` from three sources, added:

        * Z^T for Z^{-1}: ``||(Z^T - Z^{-1}) M||_F <= delta ||Z^{-1}||_2 ||M||_F`` (with the SVD
          ``Z = U S V^T``, ``Z^T - Z^{-1} = V (S - S^{-1}) U^T``, and ``|s - 1/s| = |s^2 - 1| / s
          <= delta / s_min``; ``delta`` >= ``||Z Z^T - I||_F`` >= ``||Z Z^T - I||_2``);
        * M's own rounding (one division per entry, ``M = D^{-1} T``): ``u (1 + 2u) ||Z^{-1}||_2
          ||M||_F``;
        * the product's, a posteriori (:func:`split_product`): nearly ``u ||X||_F``, where the
          worst case of a plain product, ``gamma_d |Z|^T |M|``, grows like ``d^(3/2) u ||M||``.

        M may be a matrix or a vector."""
        X, product = split_product(Z.T, M)
        return X, float(Z_inv_norm * (delta + self.eps * (1 + 2 * self.eps)) * norm2(np.reshape(M, -1))
                        * (1 + (M.size + 2) * self.eps) + product)

    @property
    def pi(self) -> float:
        return math.pi

    def hypot(self, w: Any) -> float:
        return math.hypot(*np.asarray(w, dtype=np.float64).reshape(-1))

    def closed_form(self, expr: Any) -> float:
        return float(sp.N(sp.sympify(expr), 30))  # 30 digits, then one rounding: correctly rounded

    def evaluate(self, formula: Callable[[Any], Any]) -> float:
        with mpmath.workdps(30):  # 30 digits, then one rounding
            return float(formula(mpmath))

    def eigh(self, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.linalg.eigh((M + M.T) / 2)

    def right_singular(self, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, s, Vt = np.linalg.svd(M)
        return s[::-1], Vt[::-1].T

    def qr(self, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Q, R = np.linalg.qr(A)
        sign = np.sign(np.diag(R))
        return Q * sign, R * sign[:, None]


class MP(Arith):
    """mpmath at ``dps`` significant decimal digits (object arrays of ``mpf``).

    mpmath's precision is global state; everything here runs inside :meth:`context`, which
    sets it with ``mpmath.workdps`` and restores it afterwards.
    """

    def __init__(self, dps: int) -> None:
        if not isinstance(dps, (int, np.integer)) or isinstance(dps, bool) or dps < 5:
            raise InvalidInputError(f"mpmath precision must be an integer >= 5 digits, got {dps!r}")
        self.dps = int(dps)
        self.name, self.family = f"mp:{dps}", "mpmath"
        self.eps = 10.0 ** (-dps)
        self.digits = self.dps

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        with mpmath.workdps(self.dps):
            yield

    @property
    def unit_roundoff(self) -> float:
        """2^-prec, prec the binary precision mpmath works at for dps digits (30 bits at 8 digits:
        9.3e-10, a tenth of 10^-8)."""
        return 2.0 ** -mpmath.libmp.dps_to_prec(self.dps)

    def scalar(self, x: Any) -> mpmath.mpf:
        _refuse_non_real(x, strings=True)  # a decimal string is mpmath's exact spelling ("1e-400")
        with self.context():
            try:
                if isinstance(x, sp.Basic):
                    return mpmath.mpf(str(sp.N(x, self.dps + 5)))
                return mpmath.mpf(x)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"cannot convert {x!r} to an mpmath number: {exc}") from exc

    def exp(self, a: np.ndarray) -> np.ndarray:
        with self.context():
            return _elementwise(mpmath.exp, a)

    def logit(self, p: np.ndarray) -> np.ndarray:
        def one(x: mpmath.mpf) -> mpmath.mpf:
            if not 0 < x < 1:
                return mpmath.mpf("nan")
            return mpmath.log(x) - mpmath.log1p(-x)

        with self.context():
            return _elementwise(one, p)

    def solve(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """LU with partial pivoting, factored once for all right-hand sides (10 guard digits)."""
        mp = mpmath.mp
        with self.context():
            mp.prec += 34
            try:
                LU, perm = mp.LU_decomp(mpmath.matrix(A.tolist()))
                rhs = np.asarray(B, dtype=object)
                cols = rhs.reshape(rhs.shape[0], -1)
                out = np.empty(cols.shape, dtype=object)
                for k in range(cols.shape[1]):
                    x = mp.U_solve(LU, mp.L_solve(LU, mpmath.matrix(cols[:, k].tolist()), perm))
                    out[:, k] = [+x[i] for i in range(x.rows)]
            finally:
                mp.prec -= 34
            return out.reshape(rhs.shape)

    def abs_max(self, a: np.ndarray) -> float:
        a = np.asarray(a, dtype=object)
        with self.context():
            return float(max((abs(x) for x in a.reshape(-1)), default=0))

    def check_finite(self, a: np.ndarray, what: str) -> None:
        if not all(mpmath.isfinite(x) for x in np.asarray(a, dtype=object).reshape(-1)):
            raise NonFiniteError(f"{what} holds NaN or infinite entries")


class Sympy(Arith):
    """Exact symbolic arithmetic (object arrays of sympy expressions).

    Used to *prove* that the learner is exact: run on a symbolic target, its output
    simplifies to the target itself (identity ``thm4.1/end-to-end-d2``).
    """

    name = family = "sympy"
    exact = True
    eps = 0.0
    unresolved = DegenerateProbeError
    _library = sp

    def scalar(self, x: Any) -> sp.Expr:
        if isinstance(x, (float, np.floating)):
            if not math.isfinite(float(x)):
                raise NonFiniteError("sympy arithmetic needs finite numbers")
            return sp.Rational(float(x))  # the exact value of the binary float
        _refuse_non_real(x, strings=True)  # sympy reads a string as an expression ("sqrt(2)")
        try:
            expr = sp.sympify(x)
        except (sp.SympifyError, TypeError) as exc:
            raise InvalidInputError(f"cannot convert {x!r} to a sympy number: {exc}") from exc
        if expr.is_real is False:  # a symbol of unknown sign passes; a provably non-real value does not
            raise InvalidInputError(f"the models are real: got the non-real value {x!r}")
        return expr

    def exp(self, a: np.ndarray) -> np.ndarray:
        return _elementwise(sp.exp, a)

    def logit(self, p: np.ndarray) -> np.ndarray:
        def one(x: sp.Expr) -> sp.Expr:
            ratio = sp.powsimp(sp.cancel(sp.together(x / (1 - x))))
            return sp.simplify(sp.log(ratio))

        return _elementwise(one, p)

    def solve(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        rhs = np.asarray(B, dtype=object)
        cols = rhs.reshape(rhs.shape[0], -1)
        X = sp.Matrix(A.tolist()).LUsolve(sp.Matrix(cols.tolist()))
        out = np.array(X.applyfunc(sp.simplify).tolist(), dtype=object)
        return out.reshape(rhs.shape)

    def abs_max(self, a: np.ndarray) -> float:
        vals = [abs(complex(sp.N(x))) for x in np.asarray(a, dtype=object).reshape(-1)]
        return max(vals, default=0.0)

    def is_zero(self, x: Any) -> bool:
        return sp.sympify(x).is_zero is True

    def to_float(self, a: Any) -> np.ndarray:
        return np.vectorize(lambda x: float(sp.N(x)), otypes=[float])(np.asarray(a, dtype=object))

    def magnitudes(self, a: Any) -> np.ndarray:
        def size(x: Any) -> float:
            if self.is_zero(x):
                return 0.0
            try:
                return max(abs(complex(sp.N(x))), _TINY)
            except TypeError:  # a symbolic non-zero value has no numeric size: report 1
                return 1.0

        return _elementwise(size, a).astype(float)

    def negligible(self, a: Any, threshold: Any) -> np.ndarray:
        flat = np.asarray(a, dtype=object).reshape(-1)
        return np.array([self.is_zero(x) for x in flat], dtype=bool).reshape(np.shape(a))

    def norm(self, a: Any) -> float:
        try:
            return super().norm(a)
        except (TypeError, ValueError):  # symbolic entries have no numeric size
            return math.nan

    def maximum(self, a: np.ndarray, floor: Any = 0) -> np.ndarray:
        return _elementwise(lambda x: sp.Max(x, floor), a)

    def sqrt(self, x: Any) -> Any:
        return sp.sqrt(x)

    def is_singular(self, A: np.ndarray) -> bool:
        return sp.Matrix(np.asarray(A, dtype=object).tolist()).det() == 0


    @property
    def pi(self) -> sp.Expr:
        return sp.pi

    def hypot(self, w: Any) -> sp.Expr:
        return sp.sqrt(sum((x**2 for x in np.asarray(w, dtype=object).reshape(-1)), sp.Integer(0)))

    def closed_form(self, expr: Any) -> sp.Expr:
        return sp.sympify(expr)

    def evaluate(self, formula: Callable[[Any], Any]) -> sp.Expr:
        return formula(_SYMPY_AS_MPMATH)

    def abs_max_scalar(self, a: Any) -> sp.Expr:
        return max((abs(t) for t in np.asarray(a, dtype=object).reshape(-1)), default=sp.Integer(0))

    def argmax_abs(self, a: Any) -> int:
        w = list(np.asarray(a, dtype=object).reshape(-1))
        top = max(abs(x) for x in w)
        return next(k for k, x in enumerate(w) if abs(x) == top)

    def within(self, x: Any, tol: float) -> bool:
        return self.is_zero(x)

    def simplify(self, a: np.ndarray) -> np.ndarray:
        return _elementwise(sp.simplify, a)

    def nsimplify(self, a: np.ndarray) -> np.ndarray:
        return _elementwise(sp.nsimplify, a)

    def eigh(self, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        S = sp.Matrix(np.asarray((M + M.T) / 2, dtype=object).tolist())
        pairs = []
        for lam, _, vectors in S.eigenvects():
            for q in sp.GramSchmidt(vectors, orthonormal=True):
                pairs.append((lam, q))
        pairs.sort(key=lambda p: float(sp.N(p[0])))
        lam = np.array([sp.simplify(p[0]) for p in pairs], dtype=object)
        Q = np.array([[sp.simplify(x) for x in p[1]] for p in pairs], dtype=object).T
        return lam, Q

    def qr(self, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Q, R = sp.Matrix(np.asarray(A, dtype=object).tolist()).QRdecomposition()  # diag R > 0
        return np.array(Q.tolist(), dtype=object), np.array(R.tolist(), dtype=object)


def check_real(a: Any) -> None:
    """Refuse what would be cut or misread on the way into a float64 array: complex numbers
    (numpy's conversion drops the imaginary part with only a warning), strings and None.

    Raises
    ------
    InvalidInputError
    """
    try:  # a list of floats becomes a float array here: only object arrays are read entry by entry
        arr = np.asarray(a)
    except ValueError:  # ragged: the conversion after this check names the problem
        return
    if arr.dtype.kind == "c":
        raise InvalidInputError("the models are real: complex entries are refused, not cut to real")
    if arr.dtype.kind in "USV":
        raise InvalidInputError(f"expected real numbers; got strings or bytes ({arr.dtype})")
    if arr.dtype == object:
        for x in arr.reshape(-1):
            _refuse_non_real(x)


def _refuse_non_real(x: Any, strings: bool = False) -> None:
    """Refuse one entry that is no real number: None, bytes, a complex number, and a string
    unless ``strings`` (mpmath and sympy parse decimal strings exactly)."""
    if x is None or isinstance(x, (bytes, complex, np.complexfloating, mpmath.mpc)) or (
        isinstance(x, str) and not strings
    ):
        raise InvalidInputError(f"expected real numbers; got {x!r}")


def _elementwise(fn: Any, a: Any) -> np.ndarray:
    """Apply a scalar function to every entry of an object array (keeps the shape)."""
    arr = np.asarray(a, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    flat = out.reshape(-1)
    for k, x in enumerate(arr.reshape(-1)):
        flat[k] = fn(x)
    return out


def magnitude(x: Any) -> mpmath.mpf:
    """|x| as an mpf at mpmath's current precision, for a float, an mpf or a numeric sympy value."""
    if isinstance(x, sp.Basic):
        return mpmath.mpf(str(abs(x).evalf(mpmath.mp.dps + 5)))
    return abs(mpmath.mpf(x))


#: sympy under mpmath's names, for :meth:`Arith.evaluate` (``mpf(3) / 2`` is the rational 3/2)
_SYMPY_AS_MPMATH = SimpleNamespace(
    mpf=sp.sympify, pi=sp.pi, e=sp.E, sqrt=sp.sqrt, exp=sp.exp, log=sp.log, gamma=sp.gamma,
    sin=sp.sin, cos=sp.cos, tan=sp.tan, atan=sp.atan,
)

#: The smallest positive float64 (subnormal): what a non-zero value below float64's range rounds to.
_TINY = 5e-324


def _first_order(d: int, resolution: float, cond: float, X_norm: float) -> float:
    """``(d + 4) u cond ||X||``, a backward-stable solve's first-order forward error, evaluated in
    mpmath and rounded up to a float64: far below float64's range (an mpmath X of 1e-293 at 50
    digits: 1e-343) it is the smallest subnormal, never 0 (issue 23)."""
    exact = mpmath.mpf(d + 4) * resolution * cond * X_norm
    f = float(exact)
    return f if f >= exact else float(np.nextafter(f, math.inf))


def _to_float_floor(x: Any) -> float:
    """float(x) for a non-negative x, but never 0 for x > 0 (underflow reports the smallest subnormal)."""
    f = float(x)
    return f if f > 0 or x == 0 else _TINY


#: The smallest subnormal float64 (twice the absolute error of a product that underflows: 2^-1075
#: itself is not a float64).
_ETA = 2.0**-1074


def split_rows(A: np.ndarray, t: int, E: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``A = A1 + A2`` exactly (float64), each row i of A1 holding the leading bits of that row's
    scale: multiples of ``2^(E_i - t)`` with ``|A1[i]| <= 2^E_i`` (t + 1 bits), and ``|A2[i]| <=
    2^(E_i - t)``.

    ``(a + sigma_i) - sigma_i`` with ``sigma_i = 2^(E_i + 53 - t)`` rounds a to a multiple of
    ``u sigma_i = 2^(E_i - t)`` (Rump, Ogita and Oishi's ExtractScalar, exact for ``|a| <= 2^E_i``;
    the quantum is ``2^(E_i + 1 - t)`` where ``a + sigma_i >= sigma_i``, half that below: a
    negative a).  ``E``: the row exponents (``2^E_i`` >= the row's max; default the least
    such, 2^-900 for a zero row: any quantum splits zeros).

    Raises
    ------
    InvalidInputError
        If a row's sigma_i overflows or its quantum is below 2^-1074 (``E_i > 970 + t`` or
        ``E_i < t - 1074``): the extraction would not be exact.
    """
    if E is None:
        E = np.ceil(np.log2(np.maximum(np.max(np.abs(A), axis=1, initial=0.0), 2.0**-900)))
    if np.any(np.asarray(E) + 53 - t > 1023) or np.any(np.asarray(E) - t < -1074):
        raise InvalidInputError(f"split_rows: row exponents {np.min(E)}..{np.max(E)} are beyond the range "
                                f"where an exact {t}-bit split exists (quantum >= 2^-1074, sigma finite)")
    sigma = np.ldexp(1.0, (np.asarray(E) + 53 - t).astype(int))[:, None]
    A1 = (A + sigma) - sigma
    return A1, A - A1


def split_product(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, float]:
    """``A @ B`` in float64 (A of shape (m, d), B of shape (d, n) or (d,)), computed as
    ``A1 B1 + (A1 B2 + A2 B)``, and a rigorous bound on the Frobenius norm of its rounding error.

    A's rows and B's columns are split (:func:`split_rows`, ``t + s = 53 - ceil(log2 d)``): with
    ``2^E_i`` >= row i of A and ``2^F_j`` >= column j of B, every product ``A1[i, l] B1[l, j]``
    is a multiple of ``q = 2^(E_i + F_j - t - s)`` and every partial sum of d of them is at most
    ``d 2^(E_i + F_j) <= 2^53 q`` in magnitude, so it is a float64: BLAS forms ``A1 B1`` exactly
    in any summation order, with or without FMA (any order of the d products, no Strassen-like
    algorithm), provided ``q >= 2^-1074`` (F_j is raised to make it so) and ``2^53 q`` is finite.
    The two smaller products round by at most ``gamma_d |A1| |B2| + gamma_d |A2| |B|`` entrywise
    (Higham, *Accuracy and Stability of Numerical Algorithms*, Eq. (3.13)), plus ``d eta`` for
    underflowing products (``eta = 2^-1074`` >= the error of one), bounded in Frobenius norm by
    ``gamma_d (||A1||_F ||B2||_F + ||A2||_F ||B||_F) + 3 sqrt(mn) d eta`` (each sum's underflow at
    most ``d eta (1 + gamma_d)``); the two additions by ``u`` of their results.  The computed
    norms' own rounding: a factor ``1 + (k + 2) u`` for k entries.  Where the exactness argument
    does not apply (A's rows beyond [2^-1000, 2^t], or B so large that a sum or a split's sigma
    could overflow) the plain product and its worst case ``gamma_d (1 + 2 gamma_d) || |A| |B|
    ||_F`` (plus the underflow term) are returned; for a non-finite A or B, the bound is inf.
    """
    u = FLOAT64.eps
    m, d = A.shape
    Bm = np.reshape(B, (d, -1))
    n, shape = Bm.shape[1], (m,) + np.shape(B)[1:]
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(Bm))):  # no bound for a product of infinities
        with np.errstate(invalid="ignore", over="ignore"):
            return (A @ Bm).reshape(shape), math.inf
    g = d * u / (1 - d * u)
    b = math.ceil(math.log2(max(d, 2)))
    t = (53 - b) // 2
    s = 53 - b - t
    underflow = 3 * math.sqrt(m * n) * d * _ETA
    E = np.ceil(np.log2(np.maximum(np.max(np.abs(A), axis=1, initial=0.0), 2.0**-1000)))
    top = np.max(np.abs(Bm), axis=0, initial=0.0)
    with np.errstate(divide="ignore"):
        F = np.maximum(np.ceil(np.log2(top)), -1021 - b - E.min())  # q >= 2^-1074
    if E.max() > t or max(F.max() + E.max() + b, F.max() + 53 - s) > 1022:
        worst = g * (1 + 2 * g) * norm2((np.abs(A) @ np.abs(Bm)).reshape(-1)) + underflow
        return (A @ Bm).reshape(shape), float(worst)
    A1, A2 = split_rows(A, t, E)
    B1t, B2t = split_rows(Bm.T, s, F)
    B1, B2 = B1t.T, B2t.T
    S = A1 @ B2 + A2 @ Bm
    X = A1 @ B1 + S
    rest = g * (norm2(A1.reshape(-1)) * norm2(B2.reshape(-1)) + norm2(A2.reshape(-1)) * norm2(Bm.reshape(-1)))
    k = max(A.size, Bm.size, X.size)
    bound = (rest * (1 + 2 * g) + u * (norm2(S.reshape(-1)) + norm2(X.reshape(-1)))) * (1 + (k + 2) * u)
    return X.reshape(shape), float(bound + underflow)


def norm2(a: Any, axis: int | None = None) -> Any:
    """The Euclidean norm of a float64 array (along ``axis``; None: of all entries) with each
    vector scaled by an exact power of two into [1/2, 1) first, so entries of 1e-300 do not
    underflow in their squares (``np.linalg.norm`` returns 0 for ``[1e-200]``) nor entries of
    1e300 overflow (it returns inf); only a norm beyond float64's range itself is inf."""
    a = np.asarray(a, dtype=np.float64)
    top = np.max(np.abs(a), axis=axis, keepdims=True, initial=0.0)
    _, e = np.frexp(np.where(np.isfinite(top), top, 1.0))
    out = np.ldexp(np.linalg.norm(np.ldexp(a, -e), axis=axis, keepdims=True), e)
    out = np.where(np.isfinite(top), out, top)
    return out.reshape(()) if axis is None else np.squeeze(out, axis=axis)


FLOAT64 = Float64()
SYMPY = Sympy()

_MP_SPEC = re.compile(r"^mp:(\d+)$")


def parse(spec: str | Arith) -> Arith:
    """Parse ``"float64"``, ``"mp:DIGITS"`` or ``"sympy"`` into an :class:`Arith`."""
    if isinstance(spec, Arith):
        return spec
    if not isinstance(spec, str):
        raise InvalidInputError(f"an arithmetic is an Arith or float64, mp:DIGITS, sympy; got {spec!r}")
    if spec == "float64":
        return FLOAT64
    if spec == "sympy":
        return SYMPY
    m = _MP_SPEC.match(spec)
    if m:
        return MP(int(m.group(1)))
    raise InvalidInputError(f"unknown arithmetic {spec!r}: use float64, mp:DIGITS or sympy")


__all__ = ["Arith", "Float64", "MP", "Sympy", "FLOAT64", "SYMPY", "parse", "magnitude", "norm2", "check_real"]
