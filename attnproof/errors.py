"""Typed errors raised by attnproof.

Every failure the paper names (and every kind of bad input) has its own class, so a caller
can tell a non-identifiable target from a degenerate probe from an exhausted budget.  All of
them derive from :class:`AttnproofError`; the input errors also derive from ``ValueError``.

The shared checks of a learner's scalar arguments live here too, on the ground floor, so that
every level spells a refusal the same way: :func:`check_rng`, :func:`check_tolerance`,
:func:`check_count` (re-exported by :mod:`attnproof.prelude` with its array and arithmetic
checks), and :func:`located`, which says where a refusal from a sub-run came from.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np


class AttnproofError(Exception):
    """Base class of every error raised on purpose by attnproof."""


class InvalidInputError(AttnproofError, ValueError):
    """An argument is malformed (wrong shape, non-finite, wrong type)."""


class ShapeError(InvalidInputError):
    """An array has the wrong number of dimensions or the wrong size."""


class NonFiniteError(InvalidInputError):
    """An array holds NaN or infinity where finite numbers are required."""


class NonIdentifiableError(AttnproofError):
    """The target cannot be recovered from the queries at all.

    Thm 4.1: if v* = 0 then f is identically 0, so every W induces the same function.
    """


class DegenerateProbeError(AttnproofError):
    """A probe cannot yield the measurement it is meant to (u^T v = 0, singular Z, ...)."""


class QueryBudgetExceeded(AttnproofError):
    """An oracle was asked more queries than its budget allows."""


class ToleranceViolation(AttnproofError):
    """An approximate oracle answered outside its promised tolerance."""


class AssumptionError(AttnproofError):
    """A theorem's assumption does not hold, so its guarantee does not apply."""


class PrecisionLossError(AttnproofError):
    """The arithmetic in use cannot resolve the answer (e.g. saturated sigmoids in float64)."""


# --- the shared checks of scalar arguments: one spelling of each refusal (issue 23, item 10) ---


def check_rng(name: str, value: Any, *, required: bool = False) -> np.random.Generator | None:
    """A learner's source of randomness: ``None``, a seed (an integer >= 0, Python or numpy) or a
    ``numpy.random.Generator``; a seed becomes ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    name : str
        The argument's name, for the message (``"rng"``).
    value : Any
    required : bool
        Refuse None too (a learner that draws random probes, e.g. Thm 5.1's skeleton).

    Returns
    -------
    numpy.random.Generator or None

    Raises
    ------
    InvalidInputError
        For anything else: a bool, a negative or non-integer seed, a legacy ``RandomState``.
    """
    if isinstance(value, np.random.Generator):
        return value
    if value is None and not required:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value >= 0:
        return np.random.default_rng(int(value))
    need = "a numpy.random.Generator or a seed (an integer >= 0)" + ("" if required else ", or None")
    raise InvalidInputError(f"{name} must be {need}; got {value!r}")


def check_tolerance(
    name: str, value: Any, *, optional: bool = False, zero: bool = False
) -> float | None:
    """A tolerance (rtol, tol, eps_W, ...): a finite real number > 0 (>= 0 with ``zero``),
    Python or numpy (``np.float32(1e-3)`` is accepted); None only if ``optional``.

    Returns
    -------
    float or None

    Raises
    ------
    InvalidInputError
        For a string, a bool, a complex number, an array, None (unless ``optional``), or a value
        out of range; :class:`NonFiniteError` (an InvalidInputError) for NaN or infinity.
    """
    if value is None and optional:
        return None
    if not _is_real_scalar(value):
        raise InvalidInputError(f"{name} must be a real number; got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise NonFiniteError(f"{name} must be finite; got {value!r}")
    if x < 0 or (x == 0 and not zero):
        raise InvalidInputError(f"{name} must be {'>= 0' if zero else '> 0'}; got {value!r}")
    return x


def check_count(name: str, value: Any, *, minimum: int = 0, maximum: int | None = None) -> int:
    """An integer argument (checks, samples, hessians, ...) in [minimum, maximum], Python or
    numpy; bools and floats (even 3.0) are refused.

    Raises
    ------
    InvalidInputError
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidInputError(f"{name} must be an integer; got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        within = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise InvalidInputError(f"{name} must be an integer {within}; got {value!r}")
    return int(value)


@contextmanager
def located(where: str) -> Iterator[None]:
    """Re-raise an :class:`AttnproofError` from the block as the same type, its message prefixed
    by ``where`` (e.g. which head's reduced oracle of Prop. 7.1 refused), chained to the original.

    >>> with located("head 2"):
    ...     raise DegenerateProbeError("a probe is degenerate")
    Traceback (most recent call last):
    ...
    attnproof.errors.DegenerateProbeError: head 2: a probe is degenerate
    """
    try:
        yield
    except AttnproofError as err:
        raise type(err)(f"{where}: {err}") from err


def _is_real_scalar(x: Any) -> bool:
    """A real number, Python or numpy (not a bool, a complex, a string or an array)."""
    return isinstance(x, (numbers.Real, np.floating, np.integer)) and not isinstance(x, (bool, np.bool_))


__all__ = [
    "check_rng",
    "check_tolerance",
    "check_count",
    "located",
    "AttnproofError",
    "InvalidInputError",
    "ShapeError",
    "NonFiniteError",
    "NonIdentifiableError",
    "DegenerateProbeError",
    "QueryBudgetExceeded",
    "ToleranceViolation",
    "AssumptionError",
    "PrecisionLossError",
]
