"""Opt-in mutation run over the library's core: how many small bugs do the tests and ``verify`` catch?

One command (from the repository root; 10-30 s per mutant the tests kill, up to a few minutes
for one that needs ``verify``; the recorded run of 43 mutants took about 35 minutes)::

    .venv/bin/python tools/mutation.py --sample 30 --seed 0

It builds every candidate mutant of the target modules (``attnproof/theorems/``, ``measure.py``,
``oracles.py``, ``models.py``, ``recovery.py``) with a small AST mutator (operator swaps,
comparison boundary flips, constants 2 -> 1 / 0.1 -> 0.01 / 1e-6 -> 1e-2, dropped terms,
log2 -> log10, max <-> min, abs dropped, negation dropped), drops the mutants whose AST equals
the original or another mutant's (no-ops such as ``1.0`` -> ``1``), samples ``--sample`` of
them with ``random.Random(seed)`` from a deterministic order, adds the curated mutants (the
audit's named survivors, each a snippet patch; a snippet that no longer exists is reported
``stale``: each room's own in ``attnproof/theorems/<room>/mutants.py``, :func:`room_curated`,
and the shared modules' in :data:`CURATED`), and runs each one:

1. the module's fast tests (:func:`tests_for`: its room's ``tests/test_<room>.py`` and
   :data:`ROOM_TESTS`, or :data:`TEST_MAP`; plus ``tests/test_mutation_kills.py`` and the
   module's doctests) with
   ``-x -p no:cacheprovider -m 'not slow and not book'`` under the
   default derandomized ``ci`` Hypothesis profile -> ``killed by tests``;
2. separately, the verification of the registered identities (what ``attnproof verify``
   checks: those that can execute the mutated module, i.e. defined in a module that imports
   it; it stops at the first failure) -> ``killed by verify``.

Each mutant runs in a temporary copy of the tree (``attnproof/``, ``tests/``, the ``book/``
sources, ``pyproject.toml``), never in the work tree, with bytecode writing off (a stale ``.pyc``
of the same size and second would otherwise hide a mutant); the copy is removed on exit,
interruption included.  Before the mutants, the clean copy must pass both steps, or the run stops;
it is timed (:class:`Baseline`, each step allowed :data:`BASELINE_GRACE` x ``--timeout``), and a
mutant's step may take ``--timeout`` or :data:`SLOWDOWN` x its clean step's time, whichever is
longer, before it counts as killed (by timeout): a loaded machine slows the clean tree and the
mutants alike.  A mutant that times out is confirmed by running the clean step again with the same
limit; if the clean tree times out too, the machine was the cause, and the mutant is
``unmeasured`` (left out of the score, like ``stale``).  The results go to
``mutation/results.json``; ``--rerun`` runs a results file's survivors again (after new tests),
each found again where its line moved to since (:func:`relocate`; ``--rerun-commit`` names the
revision the file was measured on, for records older than their ``context``).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The modules mutated (relative to the repository root); ``attnproof/theorems/`` is expanded.
TARGETS = ("attnproof/theorems", "attnproof/measure.py", "attnproof/oracles.py",
           "attnproof/models.py", "attnproof/recovery.py", "attnproof/prelude.py", "attnproof/arith.py",
           "attnproof/heads.py", "attnproof/indistinguishable.py", "attnproof/verify/ledger.py",
           "attnproof/verify/outcomes.py")

#: The fast test files run against a mutant of each module below the rooms (besides
#: tests/test_mutation_kills.py).  A room's modules run their room's test file, by convention
#: (:func:`tests_for`): nothing to add here for a new room.
TEST_MAP: dict[str, tuple[str, ...]] = {
    "attnproof/measure.py": ("tests/test_measure.py", "tests/test_exact.py", "tests/test_lowrank.py",
                             "tests/test_bias.py", "tests/test_skeleton_bound.py"),
    "attnproof/oracles.py": ("tests/test_oracles.py", "tests/test_noisy.py"),
    "attnproof/models.py": ("tests/test_models.py", "tests/test_exact.py"),
    "attnproof/recovery.py": ("tests/test_recovery.py",),
    "attnproof/prelude.py": ("tests/test_exact.py", "tests/test_lowrank.py", "tests/test_bias.py",
                             "tests/test_bad_inputs.py"),
    "attnproof/arith.py": ("tests/test_arith.py", "tests/test_exact.py"),
    "attnproof/heads.py": ("tests/test_heads.py", "tests/test_cli.py"),
    "attnproof/indistinguishable.py": ("tests/test_bound_floor.py", "tests/test_bound_floor_skeleton.py"),
    "attnproof/verify/ledger.py": ("tests/test_ledger.py",),
    "attnproof/verify/outcomes.py": ("tests/test_ledger.py",),
}

#: A room's fast test files besides its ``tests/test_<room>.py``, where the room's tests are split
#: (a mutant of ``noisy/arb.py`` was run against test_noisy.py alone, never test_arb.py).
ROOM_TESTS: dict[str, tuple[str, ...]] = {
    "exact": ("tests/test_bound_floor.py",),
    "noisy": ("tests/test_arb.py",),
    "lowrank": ("tests/test_lowrank_exchange.py", "tests/test_skeleton_bound.py",
                "tests/test_skeleton_assembly.py", "tests/test_bound_floor_skeleton.py"),
    "transformer": ("tests/test_ffn_bound.py", "tests/test_transformer_route.py"),
}


def room_of(path: str) -> str | None:
    """The room a module belongs to (``attnproof/theorems/<room>.py`` or ``.../<room>/*.py``), or None."""
    parts = Path(path).parts
    if parts[:2] != ("attnproof", "theorems") or len(parts) < 3 or parts[2] == "__init__.py":
        return None
    return Path(parts[2]).stem


def tests_for(path: str) -> tuple[str, ...]:
    """The fast test files of the module ``path``: ``tests/test_<room>.py`` for a room's module (the
    convention every room follows) and its :data:`ROOM_TESTS`, else its :data:`TEST_MAP` entry."""
    room = room_of(path)
    if room is None:
        return TEST_MAP.get(path, ())
    return (f"tests/test_{room}.py",) + ROOM_TESTS.get(room, ())


KILL_TESTS = "tests/test_mutation_kills.py"
PYTEST_FLAGS = ("-x", "-q", "-p", "no:cacheprovider", "-m", "not slow and not book")


@dataclass(frozen=True)
class Curated:
    """A named mutant: replace the unique occurrence of ``old`` in ``path`` by ``new``."""

    name: str
    path: str
    old: str
    new: str
    what: str


#: The audit's named survivors (issue 12) in the shared modules below the rooms, as precise
#: patches; a room's own live in its ``mutants.py`` (:func:`room_curated`).
CURATED: tuple[Curated, ...] = (
    Curated("query-only-order", "attnproof/measure.py", "return 1 if self.scale_query_only else 2",
            "return 2 if self.scale_query_only else 1", "query-only scaling order swapped"),
    Curated("global-upscale-overshoot", "attnproof/measure.py",
            "np.floor(np.log2(policy.goal / np.where(trusted, m, 1.0)) / probes.order)",
            "np.floor(np.log2(policy.goal / np.where(trusted, m, 1.0)))",
            "re-scaling a saturated probe ignores the order (overshoots)"),
    Curated("approx-remembered-uncounted", "attnproof/oracles.py",
            "        return np.array([self._memory[key] for key in keys])",
            "        self.queries -= len(keys) - len(new)\n"
            "        return np.array([self._memory[key] for key in keys])",
            "ApproxOracle does not count a remembered query"),
    Curated("worst-toward-half", "attnproof/oracles.py", "away = np.where(alpha1 >= 0.5, 1.0, -1.0)",
            "away = np.where(alpha1 >= 0.5, -1.0, 1.0)", "the worst adversary pushes alpha toward 1/2"),
    Curated("bits-wrong-sign", "attnproof/recovery.py", "return arith.log2_abs_max(truth) - err",
            "return err - arith.log2_abs_max(truth)", "scoring with bits of the wrong sign"),
    Curated("max-entry-not-frobenius", "attnproof/recovery.py",
            "err_W, norm_W = arith.norm(dW), arith.norm(W)",
            "err_W, norm_W = arith.norm(dW.ravel()[[int(abs(dW.ravel()).argmax())]]), arith.norm(W)",
            "scored error of W: the max entry instead of the Frobenius norm"),
    Curated("bits-base-10", "attnproof/recovery.py", "math.log2(top) - math.log2(max_err)",
            "math.log10(top) - math.log10(max_err)", "bits in base 10 instead of base 2"),
)

#: The file of a room's curated mutants (``attnproof/theorems/<room>/mutants.py``).
ROOM_MUTANTS = "mutants.py"


def room_curated(root: Path = ROOT) -> list[Curated]:
    """Every room's curated mutants, by room: the literal ``MUTANTS`` of its :data:`ROOM_MUTANTS`
    (dicts of ``name``, ``path`` inside the room, ``old``, ``new``, ``what``), read with
    :func:`ast.literal_eval`, never imported (the tool runs without importing the library)."""
    out = []
    for f in sorted((root / "attnproof" / "theorems").glob(f"*/{ROOM_MUTANTS}")):
        values = [n.value for n in ast.parse(f.read_text()).body if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == "MUTANTS" for t in n.targets)]
        if len(values) != 1:
            raise ValueError(f"{f.relative_to(root)}: expected one MUTANTS = (...) assignment")
        for m in ast.literal_eval(values[0]):
            path = (f.parent / m["path"]).relative_to(root).as_posix()
            out.append(Curated(m["name"], path, m["old"], m["new"], m["what"]))
    return out


def all_curated(root: Path = ROOT) -> list[Curated]:
    """The shared modules' :data:`CURATED` and every room's (:func:`room_curated`)."""
    return [*CURATED, *room_curated(root)]


@dataclass
class Mutant:
    """One mutant: where, what, and (after the run) what killed it."""

    id: str
    path: str
    line: int
    operator: str
    before: str
    after: str
    source: str = field(repr=False, default="")
    curated: bool = False
    #: the stripped text of the mutated expression's first line: a rerun finds a mutant whose line
    #: moved by it (:func:`relocate`)
    context: str = ""
    #: the id a rerun found this mutant under in the results it reran, if its line moved since
    moved_from: str = ""
    status: str = "pending"  # killed | survived | stale | timeout | unmeasured
    killed_by_tests: bool | None = None
    killed_by_verify: bool | None = None
    failing: str = ""
    seconds: float = 0.0


# --- the mutator ----------------------------------------------------------------------------

_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
         ast.FloorDiv: ast.Div, ast.Pow: ast.Mult}
_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
        ast.NotEq: ast.Eq}
_NAMES = {"log2": "log10", "log10": "log2", "max": "min", "min": "max", "amax": "amin", "amin": "amax",
          "maximum": "minimum", "minimum": "maximum", "floor": "ceil", "ceil": "floor"}


def _constant_variants(value: object) -> list[object]:
    """The constants a numeric constant is mutated to (2 -> 1, 0.1 -> 0.01, 1e-6 -> 1e-2, ...)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    if isinstance(value, int):
        return [1 if value == 2 else (0 if value == 1 else value + 1)]
    out: list[object] = [value / 10]
    if 0 < abs(value) <= 1e-3:
        out.append(value * 1e4)
    if value in (0.5, 2.0):
        out.append(1.0)
    return out


def _skipped(tree: ast.Module) -> set[int]:
    """ids of nodes not worth mutating: docstrings, f-strings, raise statements, annotations, __all__."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        sub: list[ast.AST] = []
        if isinstance(node, (ast.JoinedStr, ast.Raise)):
            sub = [node]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            sub = [a.annotation for a in node.args.args + node.args.kwonlyargs if a.annotation]
            sub += [node.returns] if node.returns else []
        elif isinstance(node, ast.AnnAssign):
            sub = [node.annotation]
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                  for t in node.targets):
            sub = [node]
        for s in sub:
            skip.update(id(n) for n in ast.walk(s))
    return skip


def _variants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(operator name, replacement node) for every mutation of ``node`` itself."""
    if isinstance(node, ast.BinOp):
        new_op = _SWAP.get(type(node.op))
        if new_op is not None:
            yield f"{type(node.op).__name__}->{new_op.__name__}", ast.BinOp(node.left, new_op(), node.right)
        if isinstance(node.op, (ast.Add, ast.Sub)):
            yield "drop-right-term", node.left
            if isinstance(node.op, ast.Add):
                yield "drop-left-term", node.right
        if isinstance(node.op, (ast.Mult, ast.Div)):
            yield "drop-factor", node.left
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        new_cmp = _CMP.get(type(node.ops[0]))
        if new_cmp is not None:
            yield f"{type(node.ops[0]).__name__}->{new_cmp.__name__}", ast.Compare(
                node.left, [new_cmp()], node.comparators)
    elif isinstance(node, ast.Constant):
        for value in _constant_variants(node.value):
            yield f"const {node.value!r}->{value!r}", ast.Constant(value)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield "drop-negation", node.operand
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop-not", node.operand
    elif isinstance(node, ast.BoolOp):
        yield "and<->or", ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
    elif isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in _NAMES:
            func = copy.copy(node.func)
            if isinstance(func, ast.Attribute):
                func.attr = _NAMES[name]
            else:
                func.id = _NAMES[name]
            yield f"{name}->{_NAMES[name]}", ast.Call(func, node.args, node.keywords)
        if name == "abs" and len(node.args) == 1:
            yield "drop-abs", node.args[0]


def _offsets(source: str) -> list[int]:
    """Character offset of the start of each line (1-based lines; AST columns are UTF-8 bytes)."""
    starts, total = [0, 0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _span(source: str, starts: list[int], node: ast.AST) -> tuple[int, int]:
    """Character span of ``node`` in ``source`` (columns converted from UTF-8 bytes)."""
    def at(line: int, col: int) -> int:
        text = source[starts[line]:starts[line + 1]]
        return starts[line] + len(text.encode()[:col].decode())
    return at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)


def generate(path: str, root: Path = ROOT) -> list[Mutant]:
    """Every non-trivial mutant of one module, in source order; no-ops and duplicates dropped.

    A mutant replaces one expression's source text by the unparsed mutated expression (in
    parentheses), so the rest of the file is byte-identical; it is kept only if it parses and
    its AST differs from the original's and from every earlier mutant's.  Its id is
    ``path:line:col:operator``, with ``~2``, ``~3`` ... for the outer of nested expressions that
    start at the same position (``a * b / c``: two drop-factors at one column).
    """
    source = (root / path).read_text()
    tree = ast.parse(source)
    skip, starts = _skipped(tree), _offsets(source)
    seen = {ast.dump(tree)}
    out: list[Mutant] = []
    taken: dict[str, int] = {}  # nested expressions can start at one position: "~2", "~3" tell them apart
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.expr) and id(n) not in skip]
    nodes.sort(key=lambda n: (n.lineno, n.col_offset, n.end_lineno or 0, n.end_col_offset or 0))
    for node in nodes:
        lo, hi = _span(source, starts, node)
        for operator, new in _variants(node):
            text = ast.unparse(new)
            mutated = source[:lo] + f"({text})" + source[hi:]
            try:
                dump = ast.dump(ast.parse(mutated))
            except SyntaxError:
                continue
            if dump in seen:
                continue
            seen.add(dump)
            key = f"{path}:{node.lineno}:{node.col_offset}:{operator}"
            taken[key] = taken.get(key, 0) + 1
            out.append(Mutant(
                id=key if taken[key] == 1 else f"{key}~{taken[key]}", path=path, line=node.lineno,
                operator=operator, before=source[lo:hi], after=text, source=mutated,
                context=source.splitlines()[node.lineno - 1].strip(),
            ))
    return out


def curated(root: Path = ROOT) -> list[Mutant]:
    """The curated mutants (:func:`all_curated`); a patch whose snippet is missing or not unique
    is ``stale``."""
    out = []
    for c in all_curated(root):
        source = (root / c.path).read_text()
        found = source.count(c.old)
        line = source[: source.find(c.old)].count("\n") + 1 if found else 0
        m = Mutant(id=f"curated:{c.name}", path=c.path, line=line, operator=c.what, before=c.old,
                   after=c.new, curated=True)
        if found == 1:
            m.source = source.replace(c.old, c.new)
        else:
            m.status = "stale"
            m.failing = f"snippet found {found} times in {c.path}"
        out.append(m)
    return out


def target_files(root: Path = ROOT) -> list[str]:
    """The mutated modules, sorted (``attnproof/theorems/`` expanded to every room's modules: a room
    is ``<room>.py`` or a package ``<room>/``, whose ``__init__.py`` is code; the gathering
    ``theorems/__init__.py`` and the rooms' curated mutants, data, are left out)."""
    files: list[str] = []
    for t in TARGETS:
        p = root / t
        if p.is_dir():
            files += [f.relative_to(root).as_posix() for f in sorted(p.rglob("*.py"))
                      if f != p / "__init__.py" and f.name != ROOM_MUTANTS]
        else:
            files.append(t)
    return sorted(files)


def sample(mutants: list[Mutant], n: int, seed: int) -> list[Mutant]:
    """``n`` mutants drawn with ``random.Random(seed)`` from the list (order kept), or all of them."""
    if n >= len(mutants):
        return list(mutants)
    picked = sorted(random.Random(seed).sample(range(len(mutants)), n))
    return [mutants[i] for i in picked]


# --- running a mutant -----------------------------------------------------------------------

#: Runs the registered identities that can execute the mutated module (those defined in it or in a
#: module importing it, directly or through others: rooms in theorems/ do not import each other)
#: and exits 1 at the first failure; "" runs every identity.  The verdict of ``attnproof verify``
#: (which passes iff every identity passes) for this mutant, sooner.  A second argument ``--list``
#: only prints the ids it would run.  An identity built by ``functools.partial`` counts as defined
#: where its function is (before, such a family, e.g. ``sec7/hessian-count-*``, was never run).
VERIFY_SCRIPT = """
import functools
import sys
from types import ModuleType
from attnproof.cli import build_parser
from attnproof import verify as proof
build_parser()  # imports every room, so the registry is complete
target = sys.argv[1]

def module_of(build):
    while isinstance(build, functools.partial):  # a family of identities built by one function
        build = build.func
    return build.__module__

def deps(name):
    out = set()
    for value in vars(sys.modules[name]).values():
        dep = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        if isinstance(dep, str) and dep.startswith("attnproof") and dep in sys.modules:
            out.add(dep)
    return out

def reaches(name, seen):
    if name == target:
        return True
    seen.add(name)
    return any(reaches(d, seen) for d in deps(name) - seen)

for i, ident in proof.REGISTRY.items():
    if target and not reaches(module_of(ident.build), set()):
        continue
    if sys.argv[2:] == ["--list"]:
        print(i)
        continue
    e = proof.verify(i)
    if not e.own_passed:
        print(i, e.error[:200])
        sys.exit(1)
"""


def _copy_tree(dest: Path, root: Path = ROOT) -> None:
    """The parts of the tree a mutant run needs (the book's sources: some tests read a chapter; dev.py and
    CITATION.cff: the ledger's tests read them), without bytecode caches or the built book."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache", "_build",
                                    ".jupyter_cache")
    for part in ("attnproof", "tests", "book"):
        shutil.copytree(root / part, dest / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "dev.py", "CITATION.cff"):
        if (root / name).exists():
            shutil.copy2(root / name, dest / name)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill the process group ``proc`` leads (it was started in a session of its own): the step's
    own children too (a test's ``coqc``, an identity's subprocess), which killing ``proc`` alone
    would leave running, on the loaded machine, after a timeout or an interruption."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is already gone
        pass


def _run(cmd: list[str], cwd: Path, timeout: float) -> tuple[int | None, str]:
    """(exit code, or None on timeout; the output's last lines).  The step runs in a session of
    its own, and its whole process group is killed when it exits, times out or is interrupted; its
    output goes to a file, so a child it left holding the output cannot keep the step waiting."""
    env = dict(os.environ, PYTHONPATH=str(cwd), PYTHONDONTWRITEBYTECODE="1")
    env.pop("HYPOTHESIS_PROFILE", None)  # the derandomized default profile
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:  # the step's children too, and the step itself on a timeout or an interruption
            _kill_group(proc)
            proc.wait()
        if code is None:
            return None, "timeout"
        log.seek(0)
        lines = log.read().strip().splitlines()
    return code, "\n".join(lines[-3:])


def _timed_run(cmd: list[str], cwd: Path, timeout: float) -> tuple[int | None, str, float]:
    """:func:`_run` and its wall-clock seconds."""
    t0 = time.perf_counter()
    code, tail = _run(cmd, cwd, timeout)
    return code, tail, time.perf_counter() - t0


def _module(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def pytest_command(path: str, kill_tests: bool = True) -> list[str]:
    """The pytest command for a mutant of ``path``: its mapped tests, the kill tests (unless
    ``kill_tests`` is false: the score before they were written), its doctests."""
    files = [f for f in tests_for(path) if (ROOT / f).exists()]
    files += [KILL_TESTS] if kill_tests and (ROOT / KILL_TESTS).exists() else []
    return [sys.executable, "-m", "pytest", *PYTEST_FLAGS, *files, path]


def verify_command(path: str) -> list[str]:
    """The identity verification for a mutant of ``path`` ("" : every identity, the clean tree's)."""
    return [sys.executable, "-c", VERIFY_SCRIPT, _module(path) if path else ""]


def run_mutant(m: Mutant, work: Path, timeout: float, verify: str, kill_tests: bool = True,
               verify_timeout: float | None = None) -> None:
    """Run one mutant in the copy ``work`` (restoring the file afterwards) and record the outcome.

    ``verify``: "all" (always run the identity verification), "survivors" (only when the tests
    miss the mutant and no verify outcome is recorded) or "none" (keep what is recorded); curated
    mutants follow it like the others.  ``timeout`` limits the test step, ``verify_timeout`` (default
    ``timeout``) the verification.
    """
    target = work / m.path
    original = target.read_text()
    t0 = time.perf_counter()
    try:
        target.write_text(m.source)
        code, tail = _run(pytest_command(m.path, kill_tests), work, timeout)
        m.killed_by_tests = code != 0
        m.failing = tail if code != 0 else ""
        if verify == "all" or (verify == "survivors" and code == 0 and m.killed_by_verify is None):
            limit = timeout if verify_timeout is None else verify_timeout
            vcode, vtail = _run(verify_command(m.path), work, limit)
            m.killed_by_verify = vcode != 0
            if vcode != 0 and not m.failing:
                m.failing = "verify: " + vtail
    finally:
        target.write_text(original)
    timed_out = "timeout" in (m.failing, m.failing.removeprefix("verify: "))
    killed = m.killed_by_tests or m.killed_by_verify
    m.status = "timeout" if timed_out else ("killed" if killed else "survived")
    m.seconds = round(time.perf_counter() - t0, 1)


#: A mutant's step may run this many times as long as the clean tree's same step did (measured in
#: :func:`baseline`, on the same machine and copy) before its timeout counts as a kill: slack for
#: the load changing during a run, while an endless loop is still caught.
SLOWDOWN = 3.0
#: The clean tree's steps may take this many times ``--timeout``: the baseline measures how slow the
#: machine is, so a loaded machine must not make the clean tree "time out" and stop the run.
BASELINE_GRACE = 4.0


@dataclass
class Baseline:
    """The clean copy's outcome: ``problem`` ('' if it passed every step) and each step's seconds,
    by mutated path (its test command) and "" (the verification of every identity)."""

    problem: str
    seconds: dict[str, float] = field(default_factory=dict)

    def limit(self, key: str, timeout: float) -> float:
        """A mutant's time limit for the step ``key``: ``timeout``, or :data:`SLOWDOWN` x the clean
        step's seconds if longer."""
        return max(timeout, SLOWDOWN * self.seconds.get(key, 0.0))


def baseline(work: Path, timeout: float, verify: bool, paths: list[str], kill_tests: bool = True) -> Baseline:
    """Run (and time) every test command used and, if ``verify``, the verification on the clean copy,
    each allowed :data:`BASELINE_GRACE` x ``timeout``; the first failure is the ``problem``."""
    out = Baseline("")
    steps = [(path, pytest_command(path, kill_tests)) for path in sorted(set(paths))]
    steps += [("", verify_command(""))] if verify else []
    for key, cmd in steps:
        code, tail, out.seconds[key] = _timed_run(cmd, work, BASELINE_GRACE * timeout)
        if code != 0:
            what = f"the tests for {key}" if key else "verify"
            out.problem = f"clean tree fails {what} ({out.seconds[key]:.0f} s): {tail}"
            return out
    return out


def confirm_timeout(m: Mutant, work: Path, base: Baseline, timeout: float, kill_tests: bool = True) -> None:
    """A mutant's timeout counts as a kill only if the clean copy, run again with the same limit,
    finishes the step that timed out; else the machine was too slow to measure it: ``unmeasured``."""
    if m.status != "timeout":
        return
    key = m.path if m.failing == "timeout" else ""
    cmd = pytest_command(m.path, kill_tests) if key else verify_command(m.path)
    code, _ = _run(cmd, work, base.limit(key, timeout))
    if code is None:
        m.status = "unmeasured"
        m.failing += " (the clean tree timed out too)"


def relocate(rec: dict[str, object], mutants: list[Mutant], context: str = "") -> Mutant | None:
    """The mutant of ``mutants`` a previous results file's record ``rec`` names, or None.

    Its id (``path:line:col:operator``) names it while its line stays put, if it still changes the
    same text the same way.  Once the tree moved on (lines added above it), the one mutant of the
    same path, operator and text (``before`` -> ``after``) is it; if several are (a constant
    ``2 -> 1`` occurs many times), the one whose line reads ``context`` (the record's own, or the
    line it was measured on, :func:`old_context`) at the same column; None if none or still several
    (ambiguous)."""
    same = [m for m in mutants if m.path == rec["path"] and m.operator == rec["operator"]
            and m.before == rec["before"] and m.after == rec["after"]]
    by_id = [m for m in same if m.id == rec["id"]]
    if by_id:
        return by_id[0]
    context = str(rec.get("context") or context)
    if len(same) > 1 and context:
        column = str(rec["id"]).removeprefix(f"{rec['path']}:{rec['line']}:")  # col:operator[~k]
        same = [m for m in same
                if m.context == context and m.id.removeprefix(f"{m.path}:{m.line}:") == column]
    return same[0] if len(same) == 1 else None


def old_context(rev: str, path: str, line: int, root: Path = ROOT) -> str:
    """The stripped text of line ``line`` of ``path`` at the git revision ``rev`` (the tree a
    results file was measured on, for records written before they carried their ``context``)."""
    text = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.splitlines()
    return text[line - 1].strip() if 0 < line <= len(text) else ""


def rerun_set(previous: dict[str, object], mutants: list[Mutant], rev: str = "") -> list[Mutant]:
    """The mutants of a previous results file, regenerated and found again (:func:`relocate`;
    ``rev``: the git revision it was measured on, read for the context of its records without
    one): its survivors (and those its run never reached or could not measure) pending again with
    their verify outcome kept, the rest as they were recorded; a record no mutant matches is
    ``stale``."""
    out = []
    for rec in previous["mutants"]:  # type: ignore[index]
        if rec["curated"]:
            found = next((m for m in mutants if m.id == rec["id"]), None)
        else:
            context = old_context(rev, rec["path"], rec["line"]) if rev and not rec.get("context") else ""
            found = relocate(rec, mutants, context)
        if found is None or not found.source:  # the source moved on: the recorded mutant no longer exists
            m = Mutant(**{k: rec[k] for k in ("id", "path", "line", "operator", "before", "after")},
                       curated=rec["curated"], status="stale", failing="no longer generated")
            out.append(m)
            continue
        m = found
        if m.id != rec["id"]:
            m.moved_from = rec["id"]
        if rec["status"] in ("survived", "pending", "unmeasured"):
            m.killed_by_verify = rec["killed_by_verify"]
        else:
            for k in ("status", "killed_by_tests", "killed_by_verify", "failing", "seconds"):
                setattr(m, k, rec[k])
        out.append(m)
    return out


def summarize(mutants: list[Mutant]) -> dict[str, object]:
    """Counts and the score (killed / mutants that ran: not stale, not unmeasured), overall and for
    verify alone."""
    ran = [m for m in mutants if m.status in ("killed", "survived", "timeout")]
    killed = [m for m in ran if m.status != "survived"]
    by_verify = [m for m in ran if m.killed_by_verify]
    verified = [m for m in ran if m.killed_by_verify is not None]
    return {
        "ran": len(ran),
        "killed": len(killed),
        "timeout": sum(m.status == "timeout" for m in ran),
        "killed_by_tests": sum(bool(m.killed_by_tests) for m in ran),
        "killed_by_verify": len(by_verify),
        "verify_ran": len(verified),
        "stale": sum(m.status == "stale" for m in mutants),
        "unmeasured": sum(m.status == "unmeasured" for m in mutants),
        "survived": [m.id for m in ran if m.status == "survived"],
        "score": round(len(killed) / len(ran), 4) if ran else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=60, help="random mutants to run (besides the curated)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deterministic sample")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per step before a mutant "
                        f"counts as killed by timeout (or {SLOWDOWN:g} x the clean tree's step, if longer)")
    parser.add_argument("--verify", choices=("all", "survivors", "none"), default="survivors",
                        help="run the identity verification for every mutant (slow: about two minutes "
                        "each), only for those the tests miss (default), or never")
    parser.add_argument("--no-curated", action="store_true", help="skip the curated mutants")
    parser.add_argument("--no-kill-tests", action="store_true",
                        help=f"leave out {KILL_TESTS} (the score before its tests were written)")
    parser.add_argument("--rerun", default="", help="a results file: run the mutants that survived in it "
                        "again (its verify outcomes are kept); write all of them to --out")
    parser.add_argument("--rerun-commit", default="", help="the git revision the --rerun file was "
                        "measured on: its records' lines there tell apart mutants that moved since")
    parser.add_argument("--only", default="", help="run only mutants whose id contains this text")
    parser.add_argument("--files", default="", help="comma-separated modules (or folders) the sample is "
                        "drawn from, instead of every target (e.g. the shared levels alone)")
    parser.add_argument("--list", action="store_true", help="list the chosen mutants and exit")
    parser.add_argument("--out", default=str(ROOT / "mutation" / "results.json"))
    args = parser.parse_args(argv)
    # a background job may start with SIGINT ignored, and SIGTERM would skip the clean-up: both
    # must unwind through the temporary directory's removal
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    previous = json.loads(Path(args.rerun).read_text()) if args.rerun else None
    # a rerun regenerates only the modules its results name (the whole pool takes minutes)
    files = sorted({m["path"] for m in previous["mutants"]}) if previous else target_files()
    if args.files:
        wanted = [w.strip().rstrip("/") for w in args.files.split(",") if w.strip()]
        files = [f for f in files if any(f == w or f.startswith(w + "/") for w in wanted)]
        if not files:
            parser.error(f"--files {args.files!r} names no target module")
    pool = [m for f in files if (ROOT / f).exists() for m in generate(f)]
    if previous:
        chosen = rerun_set(previous, pool + curated(), args.rerun_commit)
    else:
        chosen = sample(pool, args.sample, args.seed) + ([] if args.no_curated else curated())
    chosen = [m for m in chosen if args.only in m.id]
    if args.list:
        for m in chosen:
            print(f"{m.id}  {m.before!r} -> {m.after!r}  [{m.status}]")
        return 0
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    command = " ".join(["tools/mutation.py", *(argv if argv is not None else sys.argv[1:])])

    def write(complete: bool) -> dict[str, object]:
        """The results so far (after every mutant, so an interrupted run keeps what it measured)."""
        summary = summarize(chosen)
        doc = {"command": command, "rerun_of": args.rerun or None, "started": started, "complete": complete,
               "pool": previous["pool"] if previous else len(pool), "summary": summary,
               "mutants": [{k: v for k, v in asdict(m).items() if k != "source"} for m in chosen]}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
        return summary

    with tempfile.TemporaryDirectory(prefix="attnproof-mutation-") as tmp:
        work = Path(tmp)
        _copy_tree(work)
        todo = [m for m in chosen if m.status == "pending"]
        base = baseline(work, args.timeout, args.verify != "none", [m.path for m in todo],
                        not args.no_kill_tests)
        if base.problem:
            print(base.problem, file=sys.stderr)
            return 2
        for n, m in enumerate(chosen, 1):
            moved = f" (was {m.moved_from})" if m.moved_from else ""
            if m.status != "pending":
                print(f"[{n}/{len(chosen)}] {m.id}{moved}: {m.status} (kept) {m.failing}", flush=True)
                continue
            run_mutant(m, work, base.limit(m.path, args.timeout), args.verify, not args.no_kill_tests,
                       verify_timeout=base.limit("", args.timeout))
            confirm_timeout(m, work, base, args.timeout, not args.no_kill_tests)
            print(f"[{n}/{len(chosen)}] {m.id}{moved}: {m.status} (tests {m.killed_by_tests}, verify "
                  f"{m.killed_by_verify}) {m.seconds} s", flush=True)
            write(complete=False)
    print(json.dumps(write(complete=True), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
