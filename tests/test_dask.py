"""Scale-out on Dask: jobs on a 2-worker local cluster give the rows of the sequential run."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from attnproof.bench import exact_jobs, execute, head_jobs, jsonable, lowrank_jobs, phase_jobs
from attnproof.models import FactoredAttention

distributed = pytest.importorskip("distributed")

#: What may differ between two runs of the same job: wall-clock times and their ratio (and the
#: learner's own time breakdown, when it reports one).
TIMING = {"seconds", "oracle_seconds", "learner_seconds", "learner_share", "oracle_seconds_per_query"}


def without_timing(row: dict) -> dict:
    row = {k: v for k, v in jsonable(row).items() if k not in TIMING}
    if isinstance(row.get("diagnostics"), dict):
        row["diagnostics"] = {k: v for k, v in row["diagnostics"].items() if k not in TIMING | {"time"}}
    return row


def small_heads() -> list:
    rng = np.random.default_rng(5)
    return [(0, h, FactoredAttention(*rng.standard_normal((2, 2, 8)), rng.standard_normal(8),
                                     c=rng.standard_normal(8), beta=0.5)) for h in range(2)]


@pytest.fixture(scope="module")
def scheduler():
    """A 2-worker local cluster (processes, one thread each), shared by this module's tests."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def test_jobs_on_an_existing_scheduler_give_the_sequential_rows(scheduler):
    jobs = (exact_jobs([4, 8, 12]) + exact_jobs([6], probes="basis") + lowrank_jobs([16, 24], [2, 3])
            + head_jobs(small_heads(), source="synthetic"))
    if importlib.util.find_spec("cvxpy"):
        jobs += phase_jobs([4], [1], [2.0], range(2))
    sequential = {job.key: without_timing(row) for job, row, _ in execute(jobs)}
    on_dask = {job.key: without_timing(row) for job, row, _ in execute(jobs, scheduler=scheduler)}
    assert set(on_dask) == {j.key for j in jobs}
    for key, row in sequential.items():
        assert on_dask[key] == row, key


def test_cli_workers_gives_the_sequential_json(capsys, tmp_path):
    """--workers 2 starts its own local cluster; its JSON equals the in-process run's."""
    from attnproof.cli import main

    args = ["bench", "lowrank", "--d", "8,16,20", "--rank", "1,2,2", "--json"]
    assert main(args) == 0
    sequential = json.loads(capsys.readouterr().out)["results"]
    assert main([*args, "--workers", "2", "--out", str(tmp_path / "rows.jsonl")]) == 0
    on_dask = json.loads(capsys.readouterr().out)["results"]
    assert [without_timing(x) for x in on_dask] == [without_timing(x) for x in sequential]
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 3
