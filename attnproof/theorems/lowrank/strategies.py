"""Hypothesis strategies of the low-rank room (Thm 5.1, Def 2.1): drawn ROP ensembles.

The room's ``__init__`` never imports this module, so the library runs without Hypothesis.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .rub import ensemble


@st.composite
def rop_ensembles(draw: st.DrawFn, max_d: int = 3, max_m: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """A Gaussian rank-one projection ensemble (rows a_k, b_k ~ N(0, I_d)) of Thm 5.1 with
    2 <= d <= ``max_d`` and 1 <= m <= ``max_m``, from a drawn seed."""
    d = draw(st.integers(2, max_d))
    m = draw(st.integers(1, max_m))
    return ensemble(d, m, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))


__all__ = ["rop_ensembles"]
