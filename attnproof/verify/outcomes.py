"""Test outcomes from pytest itself, tied to the code they ran on: the plugin, and the subprocess.

This module is a pytest plugin: ``pytest -p attnproof.verify.outcomes`` records every test's
outcome to :data:`RECORD` (``.attnproof-cache/outcomes.json``; ``--record-outcomes PATH`` for
another file), and ``python3 dev.py test`` runs the suite that way, so ``attnproof ledger`` reads
the latest record by default.  ``tests/conftest.py``'s ``--ledger-results PATH`` writes the same
format through :class:`OutcomeRecorder`; :func:`run_tests` (or :func:`start_tests` and
:func:`finish_tests`, to run them beside other work) runs exactly the given node IDs in a
subprocess and reads back :class:`Outcomes`.  A test with no recorded outcome is *not run*,
never passed.

**Evidence is tied to the code it ran on** (issue 22).  A results file records the
:func:`code_hash` of the files the tests ran against (the package, the tests and
``pyproject.toml``: the files themselves, not a commit); outcomes whose hash differs from the
tree the ledger reads are *stale* (:meth:`Outcomes.stale`), never passed.  The file, one JSON
object::

    {"format": 2,
     "code": "<SHA-256 of the hashed files when the run started>",
     "commit": "<git HEAD, for information>", "dirty": <uncommitted changes to them: bool or null>,
     "created": "<ISO time the (latest) run ended>", "runs": <pytest runs merged into it>,
     "args": [<the latest run's pytest arguments>],
     "tests": {"<node ID>": "passed" | "failed" | "skipped" | "xfailed" | "xpassed", ...}}

``code`` reads ``"changed during the run"`` when the files changed between the run's start and
end (never equal to a hash: stale).  Only ``tests`` is required (older files have no ``code``:
stale); :meth:`Outcomes.load` refuses anything else with a typed error before any work.
"""

from __future__ import annotations

import ast
import datetime as _dt
import functools
import hashlib
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

from ..errors import AttnproofError, InvalidInputError

ROOT = Path(__file__).resolve().parent.parent.parent
#: Where ``pytest -p attnproof.verify.outcomes`` (and so ``dev.py test``) records outcomes, and
#: where ``attnproof ledger`` reads them by default.
RECORD = ROOT / ".attnproof-cache" / "outcomes.json"
#: The results file format written by :class:`OutcomeRecorder` (see the module docstring).
FORMAT = 2
#: Every outcome a results file may record for a test.
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed")
#: What :func:`code_hash` covers, relative to the checkout: the package, the tests, pytest's
#: configuration.
HASHED = ("attnproof", "tests", "pyproject.toml")
#: Build products and caches inside :data:`HASHED` that are not source (so never hashed): folders,
#: file suffixes, and every hidden file or folder (``.hypothesis``, Coq's ``.*.aux``, ...).
_NOT_SOURCE_DIRS = frozenset({"__pycache__"})
_NOT_SOURCE_SUFFIXES = frozenset({".pyc", ".pyo", ".vo", ".vok", ".vos", ".glob", ".aux"})
#: ``code`` when the hashed files changed while the tests ran (never a hash: always stale).
CHANGED = "changed during the run"


def source_files(root: str | os.PathLike[str] = ROOT) -> list[Path]:
    """The files :func:`code_hash` reads under ``root``, sorted (see :data:`HASHED`)."""
    root = Path(root)
    found: list[Path] = []
    for name in HASHED:
        top = root / name
        if top.is_file():
            found.append(top)
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in _NOT_SOURCE_DIRS and not d.startswith(".")]
            found += [Path(dirpath) / f for f in filenames
                      if not f.startswith(".") and Path(f).suffix not in _NOT_SOURCE_SUFFIXES]
    return sorted(found)


def code_hash(root: str | os.PathLike[str] = ROOT) -> str:
    """The SHA-256 of the source the tests run against: every file of :func:`source_files`, by
    its path relative to ``root`` and its bytes (not git's HEAD: an uncommitted edit changes it)."""
    h = hashlib.sha256()
    for path in source_files(root):
        data = path.read_bytes()
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _git(*args: str, root: Path = ROOT) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def dirty(root: Path = ROOT) -> bool | None:
    """Whether the hashed files have uncommitted changes (None outside a git checkout); for
    information only: staleness is decided by :func:`code_hash`."""
    out = _git("status", "--porcelain", "--", *HASHED, root=root)
    return None if out is None else bool(out)


def strict_xfails(tests: str | os.PathLike[str] = ROOT / "tests") -> list[tuple[str, str]]:
    """Every strict xfail in ``tests``, as ``(node ID, reason)``: a test decorated
    ``@pytest.mark.xfail(strict=True, reason=...)`` (its function's node ID), and a parameter set
    ``pytest.param(..., marks=pytest.mark.xfail(strict=True, reason=...))`` of a
    ``@pytest.mark.parametrize`` (its own node ID, with pytest's ID of that set).  Each is an
    erratum's witness (in :data:`ERRATA`) or an open counterexample of the library (the errata page
    lists both)."""
    found = []
    for path in sorted(Path(tests).glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            at = f"{Path(tests).name}/{path.name}::{node.name}"
            for deco in node.decorator_list:
                if not isinstance(deco, ast.Call):
                    continue
                if (reason := _strict_xfail_reason(deco)) is not None:
                    found.append((at, reason))
                elif ast.unparse(deco.func).endswith("mark.parametrize") and len(deco.args) >= 2:
                    found.extend((f"{at}[{ident}]", reason) for ident, reason in _strict_xfail_params(deco))
    return found


def _strict_xfail_reason(call: ast.Call) -> str | None:
    """The reason of ``pytest.mark.xfail(strict=True, reason=...)`` ("" without one), else None."""
    if not ast.unparse(call.func).endswith("mark.xfail"):
        return None
    kw = {k.arg: k.value for k in call.keywords}
    if "strict" not in kw or ast.literal_eval(kw["strict"]) is not True:
        return None
    return ast.literal_eval(kw["reason"]) if "reason" in kw else ""


def _strict_xfail_params(parametrize: ast.Call) -> list[tuple[str, str]]:
    """The parameter sets of a ``parametrize`` decorator marked a strict xfail, as (pytest's ID of
    the set, reason): its ``id=`` when given, else the values joined by "-", each a literal's
    ``str`` or, for any other expression, its argument's name and the set's index (pytest's rule)."""
    names, values = parametrize.args[0], parametrize.args[1]
    if not isinstance(values, ast.List | ast.Tuple):
        return []
    argnames = ast.literal_eval(names).replace(" ", "").split(",") if isinstance(names, ast.Constant) else []
    out = []
    for index, entry in enumerate(values.elts):
        if not (isinstance(entry, ast.Call) and ast.unparse(entry.func).endswith("param")):
            continue
        kw = {k.arg: k.value for k in entry.keywords}
        marks = kw.get("marks")
        marks = marks.elts if isinstance(marks, ast.List | ast.Tuple) else [marks] if marks else []
        reasons = [r for m in marks if isinstance(m, ast.Call) and (r := _strict_xfail_reason(m)) is not None]
        if not reasons:
            continue
        if "id" in kw:
            ident = ast.literal_eval(kw["id"])
        else:
            parts = []
            for k, arg in enumerate(entry.args):
                try:
                    parts.append(str(ast.literal_eval(arg)))
                except ValueError:
                    parts.append(f"{argnames[k] if k < len(argnames) else 'arg'}{index}")
            ident = "-".join(parts)
        out.append((ident, reasons[0]))
    return out


@dataclass
class Outcomes:
    """Test outcomes recorded by an actual pytest run (:class:`OutcomeRecorder`).

    ``tests`` maps a node ID (parameters included) to ``passed``, ``failed``, ``skipped``,
    ``xfailed`` or ``xpassed``; ``code`` is the :func:`code_hash` they ran on ("" when unknown:
    stale), ``commit``, ``dirty``, ``args`` and ``runs`` say more about that code and run.
    """

    tests: dict[str, str]
    commit: str = ""
    created: str = ""
    source: str = ""
    code: str = ""
    dirty: bool | None = None
    args: tuple[str, ...] = ()
    runs: int = 1

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Outcomes:
        """Read a results file written by :class:`OutcomeRecorder` (format: the module docstring).

        Raises
        ------
        InvalidInputError
            When the file cannot be read, is not JSON, or is not a results file (``tests`` a
            mapping of node IDs to :data:`OUTCOMES`, the other fields of their types): checked
            here, before any work is done on it.
        """
        try:
            data = json.loads(Path(path).read_text())
        except OSError as exc:
            raise InvalidInputError(f"cannot read the results file {path}: {exc.strerror}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidInputError(f"{path} is not JSON: {exc}") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> Outcomes:
        """Outcomes from a results file's parsed JSON (see :meth:`load`, which raises the same)."""
        where = source or "the results"
        if not isinstance(data, dict) or not isinstance(data.get("tests"), dict):
            raise InvalidInputError(f"{where} is not a results file: expected an object whose \"tests\" "
                                    "maps pytest node IDs to outcomes")
        bad = [f"{k!r}: {v!r}" for k, v in data["tests"].items()
               if not isinstance(v, str) or v not in OUTCOMES]
        if bad:
            raise InvalidInputError(f"{where}: unknown test outcomes ({', '.join(bad[:3])}); "
                                    f"each is one of {', '.join(OUTCOMES)}")
        types: dict[str, tuple[type, ...]] = {"code": (str,), "commit": (str,), "created": (str,),
                                               "dirty": (bool, type(None)), "args": (list,), "runs": (int,)}
        wrong = [k for k, t in types.items() if k in data and not isinstance(data[k], t)]
        if wrong or not all(isinstance(a, str) for a in data.get("args", [])):
            raise InvalidInputError(f"{where}: malformed field(s) {', '.join(wrong) or 'args'}")
        return cls(dict(data["tests"]), data.get("commit", ""), data.get("created", ""), source,
                   data.get("code", ""), data.get("dirty"), tuple(data.get("args", ())), data.get("runs", 1))

    def as_dict(self) -> dict[str, Any]:
        """The results file's JSON object (see the module docstring)."""
        return {"format": FORMAT, "code": self.code, "commit": self.commit, "dirty": self.dirty,
                "created": self.created, "runs": self.runs, "args": list(self.args), "tests": self.tests}

    def stale(self, code: str | None = None) -> bool:
        """Whether these outcomes were recorded on other code than ``code`` (default: the
        :func:`code_hash` of this checkout), or on code not recorded: then none of them counts."""
        return not self.code or self.code != (code_hash() if code is None else code)

    def provenance(self, code: str | None = None) -> str:
        """One line: where these outcomes come from, when, on what code, and whether that code is
        still the code (``code``: the current :func:`code_hash`)."""
        commit = f"commit {self.commit[:12]}" if self.commit else "no commit"
        if self.dirty:
            commit += " with uncommitted changes"
        what = (f"code sha256 {self.code[:12]}" if len(self.code) == 64
                else f"code {self.code}" if self.code else "unrecorded code")
        shown = " ".join(self.args)
        if len(shown) > 80:  # e.g. the ledger's own run of every linked node ID
            shown = shown[:80].rsplit(" ", 1)[0] + f" ... ({len(self.args)} arguments)"
        how = f" by `pytest {shown}`" if self.args else ""
        runs = f" ({self.runs} runs merged)" if self.runs > 1 else ""
        now = ("stale: the code has changed since, so none of them counts" if self.stale(code)
               else "the code is unchanged since")
        return (f"test outcomes: {len(self.tests)} from {self.source or 'a pytest run'}{how}, recorded "
                f"{self.created or 'at an unknown time'}{runs} on {what} ({commit}); {now}")

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


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class OutcomeRecorder:
    """A pytest plugin writing every test's outcome, stamped with the :func:`code_hash` it ran
    on, to ``path`` (the format of the module docstring).

    ``tests/conftest.py`` registers it when pytest is given ``--ledger-results PATH``; this
    module's own hooks when it is loaded with ``-p attnproof.verify.outcomes`` (then with
    ``merge``: a record of the same code keeps the outcomes of tests this run did not run, so a
    partial run adds to a full one; a record of other code is replaced).
    """

    def __init__(self, path: str | os.PathLike[str], *, merge: bool = False,
                 root: str | os.PathLike[str] = ROOT) -> None:
        self.path = Path(path)
        self.merge = merge
        self.root = Path(root)
        self.tests: dict[str, str] = {}
        self.code = ""
        self.args: tuple[str, ...] = ()

    def pytest_sessionstart(self, session: Any) -> None:
        self.code = code_hash(self.root)
        self.args = tuple(str(a) for a in session.config.invocation_params.args)

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
        code = self.code if code_hash(self.root) == self.code else CHANGED
        tests, runs = self.tests, 1
        if self.merge and code != CHANGED and self.path.is_file():
            try:
                old = Outcomes.load(self.path)
            except InvalidInputError:
                old = None  # not a record: replaced
            if old is not None and old.code == code:
                tests, runs = {**old.tests, **self.tests}, old.runs + 1
        record = Outcomes(tests, _git("rev-parse", "HEAD", root=self.root) or "", _now(), str(self.path),
                          code, dirty(self.root), self.args, runs)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(record.as_dict(), indent=1))
        tmp.replace(self.path)


def pytest_addoption(parser: Any) -> None:
    """The plugin's option (``pytest -p attnproof.verify.outcomes``): where to record."""
    parser.addoption("--record-outcomes", metavar="PATH", default=str(RECORD),
                     help="where -p attnproof.verify.outcomes records every test's outcome and the code "
                          f"hash they ran on, for `attnproof ledger` (default: {RECORD})")


def pytest_configure(config: Any) -> None:
    """Loaded with ``-p attnproof.verify.outcomes``: record this run (merged with a record of the
    same code, see :class:`OutcomeRecorder`)."""
    config.pluginmanager.register(OutcomeRecorder(config.getoption("--record-outcomes"), merge=True),
                                  "attnproof-outcomes")


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
    if not node_ids:  # nothing to look for (collecting no file would collect the whole suite)
        return
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
                    "-p", "attnproof.verify.outcomes", "--record-outcomes", str(path), *node_ids])
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
    "ROOT", "RECORD", "FORMAT", "OUTCOMES", "HASHED", "CHANGED", "source_files", "code_hash", "dirty",
    "strict_xfails", "Outcomes", "OutcomeRecorder", "pytest_addoption", "pytest_configure", "has_tests",
    "collect", "check_node_ids",
    "TestRun", "start_tests", "finish_tests", "run_tests",
]
