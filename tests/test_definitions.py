"""Sec. 3 (``theorems/definitions``): the merged parametrisation W = K^T Q, v = V^T w_o.

The room's own test file (``tools/mutation.py`` runs ``tests/test_<room>.py`` against a mutant of
the room); the library's ``Attention.from_qkv`` is tested numerically in ``tests/test_models.py``.
"""

from __future__ import annotations

import sympy as sp

from attnproof.proof import REGISTRY
from attnproof.theorems import definitions


def test_the_merge_holds_entrywise_at_every_listed_size():
    pairs = definitions.qkv_merge()
    # per (r, d): the score, N = 2 values and the whole head
    assert len(pairs) == 4 * len(definitions.QKV_SIZES)
    assert all(sp.expand(sp.simplify(lhs - rhs)) == 0 for lhs, rhs in pairs)


def test_the_rooms_identities_are_registered_with_their_sizes():
    assert {"sec3/qkv-merge", "sec3/qkv-merge-all-d"} <= set(REGISTRY)
    assert REGISTRY["sec3/qkv-merge"].build is definitions.qkv_merge
    assert definitions.QKV_SIZES == ((1, 2), (2, 2), (2, 3), (3, 2))
