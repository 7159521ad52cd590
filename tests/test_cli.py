"""The command line, run as a user runs it."""

from __future__ import annotations

import json

import pytest

from helpers import cli


def test_verify_json_passes_with_required_ids():
    r = cli("verify", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["passed"] is True
    ids = {e["id"] for e in doc["identities"]}
    assert {"sec3/qkv-merge", "thm4.1/end-to-end-d2", "prop7.1/multihead-collapse"} <= ids
    for e in doc["identities"]:
        assert {"id", "paper", "symbolic", "numeric_max_err", "passed", "seconds"} <= set(e)


def test_recover_mp60_is_exact_to_working_precision():
    r = cli("recover", "--d", "16", "--arith", "mp:60", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["queries"] == 272 == 16 + 16**2
    assert doc["err_W"] < 1e-45
    for key in ("d", "arith", "queries", "err_W", "rel_err_W", "err_v", "bits", "seconds", "oracle_seconds"):
        assert key in doc


def test_recover_sympy_is_exact():
    r = cli("recover", "--d", "2", "--arith", "sympy", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["exact"] is True and doc["err_W"] == 0 and doc["queries"] == 6


def test_recover_float_human_readable():
    r = cli("recover", "--d", "8", "--probes", "basis")
    assert r.returncode == 0, r.stderr
    assert "72 queries" in r.stdout


def test_bench_json():
    r = cli("bench", "exact", "--d", "4,8", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [x["d"] for x in doc["results"]] == [4, 8]
    assert all(x["queries"] == x["d"] + x["d"] ** 2 for x in doc["results"])


@pytest.mark.parametrize(
    "args",
    [
        ("recover",),
        ("recover", "--d", "0"),
        ("recover", "--d", "x"),
        ("recover", "--d", "3", "--arith", "float32"),
        ("recover", "--d", "3", "--probes", "hadamard"),
        ("bench", "lowrank"),
        ("recover", "--d", "3", "--learner", "noisy", "--arith", "mp:30"),
        ("recover", "--d", "8", "--learner", "skeleton"),
        ("recover", "--d", "8", "--rank", "9", "--learner", "skeleton"),
        ("recover", "--d", "8", "--rank", "2"),
        ("recover", "--d", "8", "--rank", "2", "--learner", "lowrank-cvx", "--arith", "mp:20"),
        ("recover", "--d", "3", "--learner", "noisy", "--eps-W", "1.5"),
        ("recover", "--d", "3", "--learner", "noisy", "--tau", "-1"),
        ("recover", "--d", "3", "--learner", "noisy", "--adversary", "kind"),
        ("frobnicate",),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args):
    r = cli(*args)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("attnproof: error:")


@pytest.mark.parametrize("adversary", ["worst", "random", "bias", "round"])
def test_recover_noisy_json(adversary):
    r = cli("recover", "--d", "4", "--learner", "noisy", "--adversary", adversary, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["queries"] == 20 and doc["tau"] == doc["tau_theorem"]
    assert doc["err_W"] <= doc["eps_W"] and doc["err_v"] <= doc["eps_v"]
    for key in ("eps_W", "eps_v", "tau", "err_W", "rel_err_W", "bits", "seconds", "oracle_seconds"):
        assert key in doc


def test_recover_skeleton_mp60_at_the_floor():
    r = cli("recover", "--d", "64", "--rank", "4", "--learner", "skeleton", "--arith", "mp:60", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["queries"] == 560 == 64 + 4 * 124 and doc["err_W"] < 1e-45


def test_recover_cvx_small():
    pytest.importorskip("cvxpy")
    r = cli("recover", "--d", "8", "--rank", "1", "--learner", "lowrank-cvx", "--m", "75", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["rel_err_W"] < 1e-6 and doc["queries"] >= 8 + 75


def test_bench_lowrank_json():
    r = cli("bench", "lowrank", "--d", "16,32", "--rank", "2,3", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [x["queries"] for x in doc["results"]] == [16 + 2 * 30, 32 + 3 * 61]


def test_noisy_assumption_failure_exits_1():
    r = cli("recover", "--d", "3", "--learner", "noisy", "--W-bound", "1")
    assert r.returncode == 1, r.stderr
    assert "AssumptionError" in r.stderr


def test_failed_recovery_gives_typed_error_and_nonzero_exit():
    r = cli("recover", "--d", "3", "--scale", "1e200")
    assert r.returncode == 1, r.stderr
    assert "PrecisionLossError" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--learner", "transformer", "--d", "4", "--m", "6"),
        ("--learner", "ffn", "--d", "4", "--m", "6"),
        ("--learner", "membership", "--d", "3"),
        ("--learner", "membership", "--d", "3", "--method", "paper", "--samples", "200"),
        ("--learner", "membership-rotated", "--d", "3", "--arith", "mp:40", "--eps-W", "0.01"),
        ("--learner", "orthogonal-heads", "--d", "6", "--H", "2"),
        ("--learner", "multihead-sbd", "--d", "4", "--H", "2"),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_every_new_learner_both_output_paths(args, as_json):
    """Human-readable and --json output of each learner added with the new rooms; the paper's
    membership learner on a small sample budget misses its guarantee and must exit 1."""
    r = cli("recover", *args, *(["--json"] if as_json else []))
    missed = "paper" in args
    assert r.returncode == (1 if missed else 0), r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    if as_json:
        doc = json.loads(r.stdout)
        assert doc["queries"] == doc["queries_formula"] + doc["diagnostics"].get("reasked_queries", 0)
    else:
        assert f"{args[1]} d=" in r.stdout and "queries (formula" in r.stdout


def test_bench_multihead_reports_the_minimal_hessian_counts():
    r = cli("bench", "multihead", "--seeds", "1")
    assert r.returncode == 0, r.stderr
    assert "minimal K = 5 (lower bound 5)" in r.stdout  # H = 2, d_h = 6
