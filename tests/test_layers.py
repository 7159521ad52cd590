"""The house's layering, read from the code's own imports (issue: one room per result).

Levels, from the ground up (a module may import only from strictly lower levels, or from its
own level where listed as a peer):

    errors -> arith, proof -> models, recovery -> oracles, heads -> measure -> prelude, room
           -> theorems/<room> -> strategies, bench, ledger -> cli -> the package

(``room`` is the seam: what a room registers -- its options and bench runner -- and the engine
reads, one floor below the rooms and two below the engine.)

(``ledger`` sits beside ``bench``, whose runners it uses for its measured checks.)

Inside ``theorems/`` rooms never import each other, except along a reduction the paper makes,
declared in ``attnproof.theorems.REDUCTIONS``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnproof.theorems import REDUCTIONS

PACKAGE = Path(__file__).resolve().parent.parent / "attnproof"

LEVELS = {
    "errors": 0,
    "arith": 1,
    "proof": 1,
    "models": 2,
    "recovery": 2,
    "oracles": 3,
    "heads": 3,
    "measure": 4,
    "prelude": 5,
    "room": 5,  # the seam the rooms register in and bench, cli read
    "theorems": 6,  # every room; the package __init__ only gathers them
    "strategies": 7,
    "bench": 7,
    "ledger": 7,  # the verification ledger: runs bench's runners as measured checks
    "cli": 8,
    "__init__": 9,
}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    rel = path.relative_to(root).with_suffix("")
    return ".".join(rel.parts)


def imports(path: Path, root: Path = PACKAGE) -> set[str]:
    """Modules of attnproof imported by ``path`` (relative or absolute imports, any depth)."""
    package = module_name(path, root).split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join([*base, node.module] if node.module else base)
                if node.module is None:  # from . import a, b
                    out.update(".".join([*base, a.name]) for a in node.names)
                    continue
            elif node.module and node.module.startswith("attnproof"):
                target = node.module.removeprefix("attnproof").lstrip(".")
            else:
                continue
            out.add(target)
        elif isinstance(node, ast.Import):
            out.update(
                a.name.removeprefix("attnproof").lstrip(".")
                for a in node.names
                if a.name.startswith("attnproof.")
            )
    return {m for m in out if m}


def level(module: str) -> int:
    head = module.split(".")[0] if module else "__init__"
    return LEVELS[head]


MODULES = {module_name(p) or "__init__": p for p in PACKAGE.rglob("*.py")}
GRAPH = {m: {t.removesuffix(".__init__") for t in imports(p)} for m, p in MODULES.items()}


def test_every_module_has_a_level():
    for m in MODULES:
        level(m.removesuffix(".__init__") if m != "__init__" else "__init__")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_upward(module):
    if module in ("__init__", "theorems.__init__"):
        return  # the package and theorems/__init__ gather what is below them
    own = level(module)
    for target in GRAPH[module]:
        assert level(target) <= own, f"{module} (level {own}) imports {target} (level {level(target)})"
        if level(target) == own and own != LEVELS["theorems"]:
            assert module.split(".")[0] != target.split(".")[0] or module == target, (module, target)


def test_rooms_import_no_sibling_except_declared_reductions():
    """A room is ``theorems/<room>.py`` or the package ``theorems/<room>/`` (its modules import
    each other freely)."""
    rooms = {m.split(".")[1] for m in MODULES if m.startswith("theorems.") and m != "theorems.__init__"}
    for m in (m for m in MODULES if m.startswith("theorems.") and m != "theorems.__init__"):
        room = m.split(".")[1]
        allowed = {room, *REDUCTIONS.get(room, ())}
        siblings = {t.split(".")[1] for t in GRAPH[m] if t.startswith("theorems.")}
        assert siblings <= allowed, f"{m} imports {sorted(siblings - allowed)}"
    for room, targets in REDUCTIONS.items():  # a declared reduction names real rooms
        assert room in rooms and all(t in rooms for t in targets)


def test_no_import_cycle():
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        if state.get(m) == 1:
            raise AssertionError("import cycle: " + " -> ".join([*path, m]))
        if state.get(m) == 2 or m not in GRAPH:
            return
        state[m] = 1
        for t in GRAPH[m]:
            if t != "theorems":  # the package marker, not a module edge
                visit(t, [*path, m])
        state[m] = 2

    for m in sorted(GRAPH):
        visit(m, [])


def test_the_checker_sees_a_planted_violation(tmp_path):
    """The import reader is not blind: upward and sibling imports written in a file are found."""
    root = tmp_path / "attnproof"
    (root / "theorems").mkdir(parents=True)
    bad = root / "models.py"
    bad.write_text("from .bench import run\nfrom attnproof.cli import main\nimport attnproof.measure\n")
    room = root / "theorems" / "noisy.py"
    room.write_text("from .exact import learn_exact\nfrom ..measure import Session\n")
    assert imports(bad, root) == {"bench", "cli", "measure"}
    assert imports(room, root) == {"theorems.exact", "measure"}
