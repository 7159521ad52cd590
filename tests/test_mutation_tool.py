"""The mutation tool (``tools/mutation.py``): what it mutates, what it skips, how it samples, and
that it never leaves a mutant behind.  Fast: nothing here runs a mutant's tests."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("attnproof_mutation_tool", ROOT / "tools" / "mutation.py")
tool = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = tool  # dataclasses resolve their module through sys.modules
_spec.loader.exec_module(tool)

SAMPLE = '''"""Docstring with 2 and 0.1 in it."""
import math


def f(x, y: int = 3) -> float:
    """Also a docstring: 1e-6."""
    if x < 0.1 * y:
        raise ValueError(f"x = {x + 1} too small")
    return math.log2(abs(abs(x)) + 2) - max(x, -y)
'''


def _module(tmp_path: Path, text: str = SAMPLE, name: str = "m.py") -> str:
    (tmp_path / name).write_text(text)
    return name


def test_every_mutant_parses_differs_and_changes_one_span(tmp_path):
    mutants = tool.generate(_module(tmp_path), root=tmp_path)
    original = ast.dump(ast.parse(SAMPLE))
    dumps = [ast.dump(ast.parse(m.source)) for m in mutants]
    assert mutants and original not in dumps
    assert len(set(dumps)) == len(dumps)  # no two mutants are the same program
    for m in mutants:  # the text outside the mutated expression is byte-identical
        lo = SAMPLE.index(m.before) if SAMPLE.count(m.before) == 1 else None
        if lo is not None:
            assert m.source == SAMPLE[:lo] + f"({m.after})" + SAMPLE[lo + len(m.before):]


def test_the_operators_the_issue_names_are_generated(tmp_path):
    ops = {m.operator for m in tool.generate(_module(tmp_path), root=tmp_path)}
    for op in ("Lt->LtE", "Mult->Div", "const 0.1->0.01", "log2->log10", "max->min", "drop-abs",
               "drop-negation", "drop-right-term", "Sub->Add"):
        assert op in ops, op


def test_docstrings_fstrings_raise_and_annotations_are_not_mutated(tmp_path):
    mutants = tool.generate(_module(tmp_path), root=tmp_path)
    assert all(m.line not in (1, 6, 8) for m in mutants)  # docstrings and the raise statement
    assert {m.before for m in mutants if m.line == 5} == {"3"}  # the default, not the annotations


def test_no_op_mutants_are_skipped(tmp_path):
    """abs(abs(x)) -> abs(x) is one program whichever abs is dropped: one mutant, not two; and
    ``1.0 -> 1`` style rewrites never appear because their AST equals the original's."""
    mutants = tool.generate(_module(tmp_path, "y = abs(abs(x))\n"), root=tmp_path)
    assert [m.operator for m in mutants] == ["drop-abs"]


def test_nested_expressions_at_one_position_get_distinct_ids(tmp_path):
    """``a * b / c`` and ``a * b`` start at one column and both drop a factor: two mutants, two ids
    (a rerun finds each mutant by its id), the inner one keeping the plain form."""
    mutants = tool.generate(_module(tmp_path, "y = a * b / c\n"), root=tmp_path)
    ids = [m.id for m in mutants]
    assert len(set(ids)) == len(ids)
    drops = {m.after: m.id for m in mutants if m.operator == "drop-factor"}
    assert drops == {"a": "m.py:1:4:drop-factor", "a * b": "m.py:1:4:drop-factor~2"}


def test_sampling_is_deterministic_and_seeded():
    pool = list(range(500))
    mutants = [tool.Mutant(id=str(i), path="p", line=i, operator="o", before="a", after="b") for i in pool]
    a, b = tool.sample(mutants, 40, seed=0), tool.sample(mutants, 40, seed=0)
    assert [m.id for m in a] == [m.id for m in b] and len(a) == 40
    assert [m.id for m in a] != [m.id for m in tool.sample(mutants, 40, seed=1)]
    assert [int(m.id) for m in a] == sorted(int(m.id) for m in a)  # source order kept
    assert tool.sample(mutants, 10_000, seed=0) == mutants


@pytest.mark.parametrize("copies, stale", [(1, False), (0, True), (2, True)])
def test_curated_patch_applies_once_or_is_reported_stale(tmp_path, monkeypatch, copies, stale):
    c = tool.CURATED[0]
    (tmp_path / c.path).parent.mkdir(parents=True)
    (tmp_path / c.path).write_text("x = 1\n" + (c.old + "\n") * copies)
    monkeypatch.setattr(tool, "CURATED", (c,))
    (m,) = tool.curated(root=tmp_path)
    assert (m.status == "stale") == stale
    if not stale:
        assert m.source == "x = 1\n" + c.new + "\n" and m.line == 2


def test_curated_snippets_name_real_modules():
    targets = set(tool.target_files())
    every = tool.all_curated()
    assert len({c.name for c in every}) == len(every)
    assert all(c.path in targets and c.old != c.new for c in every)
    assert all(m.status != "stale" for m in tool.curated())  # every snippet occurs exactly once


def test_a_rooms_curated_mutants_live_in_the_room():
    """The shared modules' curated mutants are the tool's; a room's are in its mutants.py (no room
    module in :data:`CURATED`), and that file is data, not a mutation target."""
    assert not any(tool.room_of(c.path) for c in tool.CURATED)
    rooms = {tool.room_of(c.path) for c in tool.room_curated()}
    assert rooms and None not in rooms
    assert not any(t.endswith("/" + tool.ROOM_MUTANTS) for t in tool.target_files())


def test_targets_and_test_map_cover_each_other():
    targets = tool.target_files()
    assert "attnproof/measure.py" in targets and "attnproof/theorems/exact/__init__.py" in targets
    assert "attnproof/theorems/__init__.py" not in targets
    assert all(tool.tests_for(t) for t in targets)
    assert all((ROOT / f).exists() for t in targets for f in tool.tests_for(t))
    assert all((ROOT / f).exists() for files in tool.TEST_MAP.values() for f in files)
    assert all((ROOT / f).exists() for files in tool.ROOM_TESTS.values() for f in files)
    assert tool.tests_for("attnproof/theorems/noisy/arb.py") == ("tests/test_noisy.py", "tests/test_arb.py")


def test_a_planted_room_is_mutated_and_tested_by_convention(tmp_path):
    """A new room needs no entry here: its modules are targets, its test file is
    tests/test_<room>.py, its curated mutants come from its mutants.py."""
    room = tmp_path / "attnproof" / "theorems" / "planted"
    room.mkdir(parents=True)
    (room.parent / "__init__.py").write_text("")
    (room / "__init__.py").write_text("x = 1\n")
    (room / "runner.py").write_text("y = 2\n")
    (room / "mutants.py").write_text('"""Planted."""\n\nMUTANTS = ({"name": "planted-y", "path": '
                                     '"runner.py", "old": "y = 2", "new": "y = 0", "what": "y dropped"},)\n')
    (tmp_path / "attnproof" / "theorems" / "single.py").write_text("z = 3\n")
    for f in ("measure", "oracles", "models", "recovery"):
        (tmp_path / "attnproof" / f"{f}.py").write_text("")
    targets = tool.target_files(tmp_path)
    assert {"attnproof/theorems/planted/__init__.py", "attnproof/theorems/planted/runner.py",
            "attnproof/theorems/single.py"} <= set(targets)
    assert "attnproof/theorems/__init__.py" not in targets
    assert tool.tests_for("attnproof/theorems/planted/runner.py") == ("tests/test_planted.py",)
    assert tool.tests_for("attnproof/theorems/single.py") == ("tests/test_single.py",)
    assert tool.tests_for("attnproof/measure.py") == tool.TEST_MAP["attnproof/measure.py"]
    assert "attnproof/theorems/planted/mutants.py" not in targets  # data, not a target
    planted = [m for m in tool.curated(root=tmp_path) if m.id == "curated:planted-y"]
    assert [(m.path, m.status, m.source) for m in planted] == [
        ("attnproof/theorems/planted/runner.py", "pending", "y = 0\n")]
    assert tool.pytest_command(planted[0].path)[-1] == "attnproof/theorems/planted/runner.py"


def test_a_mutant_is_restored_even_when_its_run_is_interrupted(tmp_path, monkeypatch):
    path = _module(tmp_path)
    (m, *_) = tool.generate(path, root=tmp_path)

    def interrupted(*args, **kwargs):
        assert (tmp_path / path).read_text() == m.source  # the mutant is in place while it runs
        raise KeyboardInterrupt

    monkeypatch.setattr(tool, "_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tool.run_mutant(m, tmp_path, timeout=1, verify="none")
    assert (tmp_path / path).read_text() == SAMPLE


@pytest.mark.parametrize("tests_code, verify_code, status", [
    (1, None, "killed"), (0, 1, "killed"), (0, 0, "survived"), (None, None, "timeout"),
])
def test_a_mutant_is_killed_by_tests_or_by_verify(tmp_path, monkeypatch, tests_code, verify_code, status):
    path = _module(tmp_path)
    (m, *_) = tool.generate(path, root=tmp_path)
    codes = iter([tests_code, verify_code])

    def run(cmd, cwd, timeout):
        code = next(codes)
        return code, "timeout" if code is None else "tail"

    monkeypatch.setattr(tool, "_run", run)
    tool.run_mutant(m, tmp_path, timeout=1, verify="survivors")
    assert m.status == status
    assert m.killed_by_tests == (tests_code != 0)
    assert m.killed_by_verify == (None if tests_code != 0 else verify_code != 0)


def test_score_counts_killed_over_run():
    def mk(i, status, verify=None):
        return tool.Mutant(id=str(i), path="p", line=i, operator="o", before="a", after="b", status=status,
                           killed_by_tests=status == "killed" and not verify, killed_by_verify=verify)

    s = tool.summarize([mk(0, "killed"), mk(1, "killed", True), mk(2, "survived", False), mk(3, "stale"),
                        mk(4, "timeout")])
    assert (s["ran"], s["killed"], s["stale"], s["timeout"], s["killed_by_verify"]) == (4, 3, 1, 1, 1)
    assert s["score"] == 0.75 and s["survived"] == ["2"]


def test_rerun_keeps_kills_and_verify_outcomes(tmp_path):
    path = _module(tmp_path)
    a, b, *_ = tool.generate(path, root=tmp_path)
    previous = {"mutants": [
        dict(id=a.id, path=a.path, line=a.line, operator=a.operator, before=a.before, after=a.after,
             curated=False, status="killed", killed_by_tests=True, killed_by_verify=None, failing="x",
             seconds=1.0),
        dict(id=b.id, path=b.path, line=b.line, operator=b.operator, before=b.before, after=b.after,
             curated=False, status="survived", killed_by_tests=False, killed_by_verify=False, failing="",
             seconds=1.0),
        dict(id="gone", path=path, line=1, operator="o", before="a", after="b", curated=False,
             status="survived", killed_by_tests=False, killed_by_verify=False, failing="", seconds=1.0),
    ]}
    ra, rb, gone = tool.rerun_set(json.loads(json.dumps(previous)), [a, b])
    assert (ra.status, rb.status, gone.status) == ("killed", "pending", "stale")
    assert rb.killed_by_verify is False and rb.source


def _fake_clock_run(durations: dict[str, float]):
    """A stand-in for ``_timed_run``/``_run``: a step named by its command's last word takes
    ``durations[word]`` seconds, and times out (code None) past its limit."""
    def timed(cmd, cwd, timeout):
        took = durations[cmd[-1]]
        return (None, "timeout", timeout) if took > timeout else (0, "", took)

    def run(cmd, cwd, timeout):
        code, tail, _ = timed(cmd, cwd, timeout)
        return code, tail

    return timed, run


def test_a_slow_clean_tree_is_timed_not_refused_and_scales_the_mutants_limits(monkeypatch):
    """Under load the clean tree's tests took 700 s against --timeout 480: the baseline allows
    BASELINE_GRACE x 480 = 1920 s, so it passes and measures 700 s; a mutant's test step then
    gets SLOWDOWN x 700 = 2100 s (a fast module keeps 480 s).  Past the grace it is refused."""
    timed, _ = _fake_clock_run({"a.py": 700.0, "b.py": 10.0, "": 50.0})
    monkeypatch.setattr(tool, "_timed_run", timed)
    base = tool.baseline(Path("."), 480.0, True, ["a.py", "b.py", "a.py"])
    assert base.problem == "" and base.seconds == {"a.py": 700.0, "b.py": 10.0, "": 50.0}
    assert base.limit("a.py", 480.0) == tool.SLOWDOWN * 700.0 == 2100.0
    assert base.limit("b.py", 480.0) == base.limit("", 480.0) == 480.0
    timed, _ = _fake_clock_run({"a.py": 2000.0, "": 50.0})
    monkeypatch.setattr(tool, "_timed_run", timed)
    refused = tool.baseline(Path("."), 480.0, True, ["a.py"])
    assert refused.problem.startswith("clean tree fails the tests for a.py") and "timeout" in refused.problem


@pytest.mark.parametrize("clean, status", [(100.0, "timeout"), (5000.0, "unmeasured")])
def test_a_timeout_counts_as_a_kill_only_if_the_clean_tree_finishes_in_the_same_limit(
        tmp_path, monkeypatch, clean, status):
    """A mutant's test step timed out at its limit (3 x 100 s): the clean step run again finishes in
    100 s (a real timeout: killed), or times out too (the machine: unmeasured, out of the score)."""
    path = _module(tmp_path)
    (m, *_) = tool.generate(path, root=tmp_path)
    m.status, m.failing = "timeout", "timeout"
    _, run = _fake_clock_run({path: clean, "": 1.0})
    monkeypatch.setattr(tool, "_run", run)
    tool.confirm_timeout(m, tmp_path, tool.Baseline("", {path: 100.0}), 60.0)
    assert m.status == status
    s = tool.summarize([m])
    assert (s["ran"], s["unmeasured"]) == ((1, 0) if status == "timeout" else (0, 1))


def test_verify_step_selects_identities_built_by_a_partial():
    """The verify step runs the identities whose build function's module reaches the mutated one;
    the Hessian-count family is registered as functools.partial(_sufficiency_claims, H, d_h), whose
    own __module__ is 'functools': it must still be selected for a mutant of its module (a mutant
    of its exponent survived verify because it was not)."""
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", tool.VERIFY_SCRIPT, "attnproof.theorems.multihead.identities",
                          "--list"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-500:]
    ids = out.stdout.split()
    assert any(i.startswith("sec7/hessian-count-") for i in ids)
    assert not any(i.startswith("thm4.1/") for i in ids)  # a room that does not import it


@pytest.mark.parametrize("timeout, expected", [(2.0, None), (60.0, 0)])
def test_a_steps_children_end_with_it_on_a_timeout_and_on_exit(tmp_path, timeout, expected):
    """A step's own children (a test's ``coqc``, an identity's subprocess) are killed with it: on a
    timeout (killing the step alone left them running on the loaded machine) and when it exits
    leaving one behind.  The step starts a child that sleeps, writes its pid, then sleeps past its
    timeout or exits."""
    pidfile = tmp_path / "child.pid"
    step = ("import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep({60 if expected is None else 0})")
    code, tail = tool._run([sys.executable, "-c", step], tmp_path, timeout)
    assert code == expected and (tail == "timeout") == (expected is None)
    pid = int(pidfile.read_text())
    for _ in range(100):  # killed at once; reaped by whoever adopted it (a zombie meanwhile)
        stat = Path(f"/proc/{pid}/stat")
        if not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the step's child {pid} is still running")


def test_rerun_finds_a_mutant_whose_line_moved(tmp_path, monkeypatch):
    """Lines added above a recorded mutant change its id; the rerun finds it by its text and, when
    that text recurs (the constant 2 twice on one line), by its line's text at the revision the
    results were measured on and its column; a record matching nothing is stale."""
    text = "def f(x):\n    return 2 * x + 2\n"
    path = _module(tmp_path, text)
    old = {m.operator + m.id.split(":")[2]: m for m in tool.generate(path, root=tmp_path)}
    first_two, swap = old["const 2->111"], old["Add->Sub11"]
    assert first_two.context == "return 2 * x + 2"
    _module(tmp_path, "import math\n\n" + text)
    new = tool.generate(path, root=tmp_path)

    def record(m, status):
        return dict(id=m.id, path=m.path, line=m.line, operator=m.operator, before=m.before,
                    after=m.after, curated=False, status=status, killed_by_tests=status == "killed",
                    killed_by_verify=False, failing="", seconds=1.0)

    def old_context(rev, p, line, root=tool.ROOT):
        return text.splitlines()[line - 1].strip()

    monkeypatch.setattr(tool, "old_context", old_context)
    previous = {"mutants": [record(first_two, "survived"), record(swap, "killed"),
                            dict(record(swap, "survived"), before="x", id="gone")]}
    two, moved_swap, gone = tool.rerun_set(previous, new, rev="abc")
    assert (two.id, two.moved_from, two.status) == (f"{path}:4:11:const 2->1", first_two.id, "pending")
    assert (moved_swap.line, moved_swap.status, gone.status) == (4, "killed", "stale")
    two_again, _, _ = tool.rerun_set(previous, new)  # no revision: the constant 2 is ambiguous
    assert two_again.status == "stale"


def test_files_draws_the_sample_from_the_named_modules_only(capsys):
    """``--files`` limits the pool to the named modules (a folder names its modules); a name that is no
    target is an error, not an empty run."""
    assert tool.main(["--list", "--no-curated", "--sample", "5", "--files",
                      "attnproof/heads.py,attnproof/verify/"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 5
    assert all(line.startswith(("attnproof/heads.py:", "attnproof/verify/")) for line in listed)
    with pytest.raises(SystemExit):
        tool.main(["--list", "--files", "attnproof/nothing.py"])
