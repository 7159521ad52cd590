"""Typed errors raised by attnproof.

Every failure the paper names (and every kind of bad input) has its own class, so a caller
can tell a non-identifiable target from a degenerate probe from an exhausted budget.  All of
them derive from :class:`AttnproofError`; the input errors also derive from ``ValueError``.
"""

from __future__ import annotations


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


__all__ = [
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
