"""The bench's side of Thm B.1 (App. B): random targets meeting the theorem's assumptions."""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError


def membership_target(
    d: int, rng: np.random.Generator, W_bound: float, mu: float
) -> tuple[np.ndarray, np.ndarray]:
    """A target meeting Thm B.1's assumptions: ||W*||_F = 0.9 W and a unit v* with every |v*_i| >= mu
    (|v*_i|^2 = mu^2 + a random share of the spare mass 1 - d mu^2, random signs)."""
    if not 0 < mu <= 1 / np.sqrt(d):
        raise InvalidInputError(f"mu must be in (0, 1/sqrt(d)] for a unit v with every |v_i| >= mu; got {mu}")
    W = rng.standard_normal((d, d))
    shares = rng.dirichlet(np.ones(d))
    v = rng.choice([-1.0, 1.0], d) * np.sqrt(mu**2 + shares * (1 - d * mu**2))
    return W * 0.9 * W_bound / np.linalg.norm(W), v / np.linalg.norm(v)
