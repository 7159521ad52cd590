"""Hypothesis strategies of the membership room (Thm B.1, App. B): targets meeting the
theorem's assumptions, pushed to their edges.

Built on the shared builders of :mod:`attnproof.strategies`; the room's ``__init__`` never
imports this module, so the library itself runs without Hypothesis being imported.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ...errors import InvalidInputError
from ...strategies import bounded_matrices


def membership_targets(
    d: st.SearchStrategy[int] | None = None, max_W_bound: float = 50.0
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, float, float]]:
    """(W*, v*, W, mu) satisfying Thm B.1's assumptions, pushed to their edges.

    ``||W*||_F <= W`` (often exactly at the bound, often concentrated), ``W >= 2``;
    ``||v*||_2 = 1`` (to rounding) with *every* ``|v*_i| >= mu``, often = mu, and mu up to its
    largest value ``1 / sqrt(d)`` (then every |v*_i| = mu); "= mu" means to 1e-15 relative,
    so that the exact direction v*/||v*|| meets the margin despite rounding.

    Raises
    ------
    InvalidInputError
        At once if ``max_W_bound < 2`` (Thm B.1 needs W >= 2) or d is not a strategy; when
        drawing if d draws a non-positive width.
    """
    if not (isinstance(max_W_bound, (int, float)) and max_W_bound >= 2):
        raise InvalidInputError(f"membership_targets: max_W_bound must be a number >= 2; got {max_W_bound!r}")
    if d is not None and not isinstance(d, st.SearchStrategy):
        raise InvalidInputError(
            f"membership_targets: d must be a strategy of widths, e.g. st.integers(1, 4); got {d!r}"
        )
    return _membership_targets(d if d is not None else st.integers(1, 10), float(max_W_bound))


@st.composite
def _membership_targets(
    draw: st.DrawFn, d: st.SearchStrategy[int], max_W_bound: float
) -> tuple[np.ndarray, np.ndarray, float, float]:
    n = draw(d)
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise InvalidInputError(f"membership_targets: d must draw positive integers; got {n!r}")
    W_bound = draw(st.one_of(st.just(2.0), st.floats(2.0, max_W_bound)))
    mu_max = 1 / np.sqrt(n)
    mu = draw(st.one_of(st.just(mu_max), st.floats(1e-2, 1.0).map(lambda t: t * mu_max)))
    shares = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    if shares.sum() == 0:
        shares[draw(st.integers(0, n - 1))] = 1.0
    mags = np.sqrt(mu**2 + shares / shares.sum() * max(0.0, 1 - n * mu**2))
    signs = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)))
    v = signs * mags / np.linalg.norm(mags)
    # the exact direction v / ||v|| (what membership identifies) differs from v by rounding:
    # mu sits 1e-15 relative below its smallest entry, so the margin holds exactly
    mu = min(mu, float(np.abs(v).min() / np.linalg.norm(v))) * (1 - 1e-15)
    return draw(bounded_matrices(n, W_bound)), v, float(W_bound), float(mu)


__all__ = ["membership_targets"]
