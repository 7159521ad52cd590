"""Test outcomes from pytest itself: the outcome plugin, and the subprocess that runs tests.

``tests/conftest.py`` registers :class:`OutcomeRecorder` when pytest is given
``--ledger-results PATH``; :func:`run_tests` (or :func:`start_tests` and :func:`finish_tests`,
to run them beside other work) runs exactly the given node IDs that way in a subprocess and
reads back :class:`Outcomes`.  A test with no recorded outcome is *not run*, never passed.
"""

from __future__ import annotations

import ast
import datetime as _dt
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AttnproofError

ROOT = Path(__file__).resolve().parent.parent.parent


def strict_xfails(tests: str | os.PathLike[str] = ROOT / "tests") -> list[tuple[str, str]]:
    """Every test decorated ``@pytest.mark.xfail(strict=True, reason=...)`` in ``tests``, as
    ``(node ID, reason)``: each is an erratum's witness (in :data:`ERRATA`) or an open
    counterexample of the library (the errata page lists both)."""
    found = []
    for path in sorted(Path(tests).glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and ast.unparse(deco.func).endswith("mark.xfail"):
                    kw = {k.arg: k.value for k in deco.keywords}
                    if "strict" in kw and ast.literal_eval(kw["strict"]) is True:
                        reason = ast.literal_eval(kw["reason"]) if "reason" in kw else ""
                        found.append((f"{Path(tests).name}/{path.name}::{node.name}", reason))
    return found


@dataclass
class Outcomes:
    """Test outcomes recorded by an actual pytest run (:class:`OutcomeRecorder`).

    ``tests`` maps a node ID (parameters included) to ``passed``, ``failed``, ``skipped``,
    ``xfailed`` or ``xpassed``.
    """

    tests: dict[str, str]
    commit: str = ""
    created: str = ""
    source: str = ""

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Outcomes:
        """Read a results file written by :class:`OutcomeRecorder`."""
        data = json.loads(Path(path).read_text())
        return cls(data["tests"], data.get("commit", ""), data.get("created", ""), str(path))

    def outcome(self, node_id: str) -> str:
        """The outcome of a test over all its parameters: ``not run`` when nothing was recorded.

        Failed if any parameter failed; otherwise the common outcome, with skipped parameters
        ignored when some ran (a test skipped entirely is ``skipped``, never passed).
        """
        found = [o for n, o in self.tests.items() if n == node_id or n.startswith(node_id + "[")]
        if not found:
            return "not run"
        if "failed" in found:
            return "failed"
        ran = set(found) - {"skipped"}
        if not ran:
            return "skipped"
        return ran.pop() if len(ran) == 1 else "failed"  # mixed xfailed/passed: not one verdict


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class OutcomeRecorder:
    """A pytest plugin writing ``{node ID: outcome}``, the commit and a timestamp to ``path``.

    ``tests/conftest.py`` registers it when pytest is given ``--ledger-results PATH``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.tests: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if self.tests.get(report.nodeid) == "failed":
            return
        xfail = hasattr(report, "wasxfail")
        if report.failed:
            self.tests[report.nodeid] = "failed"
        elif report.skipped and report.when in ("setup", "call"):
            self.tests[report.nodeid] = "xfailed" if xfail else "skipped"
        elif report.when == "call":
            self.tests[report.nodeid] = "xpassed" if xfail else "passed"

    def pytest_sessionfinish(self, session: Any) -> None:
        self.path.write_text(json.dumps(
            {"commit": _git_commit(), "created": _now(), "tests": self.tests}, indent=1))


def has_tests() -> bool:
    """Whether the test suite sits beside the package (a source checkout, not an installed copy)."""
    return (ROOT / "tests" / "conftest.py").exists()


def _pytest(args: list[str], **kw: Any) -> subprocess.Popen[str]:
    if not has_tests():
        raise AttnproofError(f"no test suite beside the package ({ROOT / 'tests'}): use a source checkout")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def collect(node_ids: Iterable[str]) -> set[str]:
    """The node IDs (parameters stripped) that pytest collects from the files of ``node_ids``."""
    return _collect_files(tuple(sorted({n.split("::")[0] for n in node_ids})))


@functools.lru_cache(maxsize=8)
def _collect_files(files: tuple[str, ...]) -> frozenset[str]:
    out, _ = _pytest(["--collect-only", "-q", "-o", "addopts=", *files]).communicate()
    return frozenset(line.split("[")[0] for line in out.splitlines() if "::" in line)


def check_node_ids(node_ids: Iterable[str]) -> None:
    """Raise if a linked node ID does not exist in the suite.

    Raises
    ------
    AttnproofError
        Naming every node ID that pytest does not collect.
    """
    node_ids = list(node_ids)
    missing = sorted(set(node_ids) - collect(node_ids))
    if missing:
        raise AttnproofError(f"ledger links tests that do not exist: {', '.join(missing)}")


#: A test's result line in pytest's verbose output.
_RESULT_LINE = re.compile(r"::\S+ (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b")


@dataclass
class TestRun:
    """A pytest subprocess started by :func:`start_tests`, its output read as it is written."""

    proc: subprocess.Popen[str]
    path: Path
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None


def start_tests(node_ids: Sequence[str], path: str | os.PathLike[str],
                progress: Callable[[str], None] | None = None) -> TestRun:
    """Start pytest on exactly ``node_ids``, recording outcomes to ``path`` (see :func:`run_tests`);
    ``progress`` is called with each test's result line (``tests/...::name PASSED``) as it ends."""
    proc = _pytest(["-v", "--no-header", "-rN", "-o", "addopts=", "-o", "console_output_style=classic",
                    "--ledger-results", str(path), *node_ids])
    run = TestRun(proc, Path(path))

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            run.lines.append(line)
            if progress is not None and _RESULT_LINE.search(line):
                progress(line.strip())

    run.reader = threading.Thread(target=read, daemon=True)
    run.reader.start()
    return run


def finish_tests(run: TestRun) -> Outcomes:
    """Wait for a run started by :func:`start_tests` and read its outcomes.

    Raises
    ------
    AttnproofError
        If pytest did not find a linked node ID (exit code 4) or wrote no results.
    """
    run.proc.wait()
    if run.reader is not None:
        run.reader.join()
    out = "".join(run.lines)
    if run.proc.returncode == 4 or "not found" in out:
        raise AttnproofError("ledger links tests that do not exist: " + " ".join(
            line for line in out.splitlines() if "not found" in line))
    if not run.path.exists():
        raise AttnproofError(f"pytest wrote no results (exit {run.proc.returncode}): {out[-400:]}")
    return Outcomes.load(run.path)


def run_tests(node_ids: Sequence[str], path: str | os.PathLike[str] | None = None,
              progress: Callable[[str], None] | None = None) -> Outcomes:
    """Run ``node_ids`` in a pytest subprocess and return their outcomes (kept at ``path`` if given)."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(path) if path is not None else Path(tmp) / "results.json"
        outcomes = finish_tests(start_tests(list(node_ids), target, progress))
        outcomes.source = str(path) if path is not None else "pytest run by the ledger"
        return outcomes


__all__ = [
    "ROOT", "strict_xfails", "Outcomes", "OutcomeRecorder", "has_tests", "collect", "check_node_ids",
    "TestRun", "start_tests", "finish_tests", "run_tests",
]
