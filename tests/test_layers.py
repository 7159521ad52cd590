"""The house's layering, read from the code's own imports (issue: one room per result).

Levels, from the ground up (a module may import only from strictly lower levels, or from its
own level where listed as a peer):

    errors -> arith, verify.{registry, ...} -> models, recovery -> oracles, heads -> measure
           -> prelude, room, strategies -> theorems/<room> -> bench, verify.{evidence, ledger, cli}
           -> cli -> the package

(``verify/`` spans two floors: its registries, checkers, graph, certificate and renderers sit
where ``proof.py`` sat, under the rooms; its evidence kinds, ledger and CLI sit beside ``bench``,
whose runners they use for measured checks.  A level keyed ``a.b`` covers the module ``a.b``.
``room`` is the seam: what a room registers -- its options and bench runner -- and the engine
reads, one floor below the rooms and two below the engine.  ``strategies`` holds the shared
Hypothesis builders, on the seam's floor, so that a room's own strategies live in its folder,
``theorems/<room>/strategies.py``, which the room's ``__init__`` never imports.)

Inside ``theorems/`` rooms never import each other, except along a reduction the paper makes,
declared in ``attnproof.theorems.REDUCTIONS``.

A second rule (issue 19): no module but ``arith.py`` branches on the arithmetic; what differs
between float64, mpmath and sympy is a method of ``Arith`` (a short per-room allow-list, each entry
justified: ``ALLOWED_ARITH_BRANCHES``).
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
    "verify": 1,  # the package face (lazy, no import) and any verify/ module not listed here
    "verify.registry": 1,  # verify/'s floor-1 modules are peers, as arith and proof were
    "verify.formulas": 1,
    "verify.checkers": 1,
    "verify.graph": 1,
    "verify.certificate": 1,
    "verify.claims": 1,
    "verify.outcomes": 1,
    "verify.render": 1,
    "verify.enclosures": 1,  # the Arb seam: rooms register their enclosures (no flint imported)
    "models": 2,
    "recovery": 2,
    "oracles": 3,
    "heads": 3,
    "measure": 4,
    "indistinguishable": 4,  # the rooms' floors' shared proof: error-free dot products, Arb margins
    "prelude": 5,
    "room": 5,  # the seam the rooms register in and bench, cli read
    "theorems": 6,  # every room; the package __init__ only gathers them
    "strategies": 5,  # shared Hypothesis builders; a room's own live in theorems/<room>/strategies.py
    "bench": 7,
    "verify.evidence": 7,  # the evidence kinds: runs bench's runners as measured checks
    "verify.ledger": 7,
    "verify.cli": 7,
    "verify.smt": 7,  # second engines: they read the rooms' registrations (and their inputs)
    "verify.arb": 7,
    "verify.smt_checker": 7,  # the second engines behind the checker seam (discovered at run time)
    "verify.arb_checker": 7,
    "verify.coq_check": 7,
    "verify.coq_checker": 7,
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


def key(module: str) -> str:
    """The entry of LEVELS that covers ``module``: its own dotted name, or its top package."""
    parts = (module or "__init__").split(".")
    return ".".join(parts[:2]) if ".".join(parts[:2]) in LEVELS else parts[0]


def level(module: str) -> int:
    return LEVELS[key(module)]


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
            assert key(module) != key(target) or module == target, (module, target)


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


# --- the second rule: no branch on the arithmetic outside arith.py ------------------------------
#
# A difference between float64, mpmath and sympy is a method or an attribute of Arith (einops's
# rule: backends differ only inside the backend).  Outside arith.py a module asks ``arith.pi``,
# ``arith.tan(t)``, ``arith.within(x, tol)`` ... and never *which* arithmetic it runs in.

#: The arithmetic singletons and classes a branch names.
ARITH_OBJECTS = {"FLOAT64", "SYMPY"}
ARITH_CLASSES = {"Float64", "MP", "Sympy"}
#: Attributes of an arithmetic that tell which one it is (compared, or used as a lookup key).
KIND_ATTRIBUTES = {"name", "family", "dtype", "dps"}

#: The allowance, per room (a room is counted over its module or its subpackage:
#: ``theorems.transformer`` covers theorems/transformer/*).  A count may fall below its allowance
#: (lower it here then); it may not rise, and a room not listed may not branch at all.  What is
#: left (issue 19 drove 58 branches to 17) is, but for two, ``arith.exact`` where it means what it
#: says: an error bound, a tolerance or a saturation guard exists only in the rounding
#: arithmetics (float64, mpmath), and exact arithmetic (sympy) has none to compute.
ALLOWED_ARITH_BRANCHES = {
    # Session.measure_adaptively: exact arithmetic never saturates, no probe scale to adapt
    "measure": 1,
    # learn_score_bias: no rounding error to bound; tame_rows: nothing saturates, no row to tame
    "prelude": 2,
    # relu(z) sees an array, not an Arith (the identities call it on sympy arrays): object dtype
    # -> sympy.Max, elementwise and symbolic; float -> np.maximum
    "models": 1,
    # AntisymmetricOracle._answer: the rounding amplification of the difference is measured in
    # the rounding arithmetics only
    "oracles": 1,
    # learn_exact: no rounding error to bound
    "theorems.exact": 1,
    # learn_skeleton_adaptive: no rounding error to bound
    "theorems.lowrank": 1,
    # _path_search.py (8): tuning(arith) looks the search's constants up by arith.family (a table
    # per arithmetic); tol and _gradient_error are 0, piece tracks no gradient scale, _intersection
    # and misfit decide a kink or a plane exactly, _planes_meet has no two-tolerance ambiguity,
    # _confirm's pair margin (|J^T y| above the tolerances) exists only where there are tolerances;
    # ffn.py (2): the random direction normalised by its largest entry (float exponent range) and
    # the sup-norm error bound, both in the rounding arithmetics only
    "theorems.transformer": 10,
}


def _names_arith(node: ast.AST) -> bool:
    """Is ``node`` an arithmetic: a name or attribute chain ending in ``arith`` (``arith``,
    ``self.arith``, ``self.base.model.arith``)?"""
    if isinstance(node, ast.Name):
        return node.id.endswith("arith")
    return isinstance(node, ast.Attribute) and node.attr.endswith("arith")


def _is_arith_object(node: ast.AST) -> bool:
    """``FLOAT64``/``SYMPY`` (or ``arith.FLOAT64``), or a constructed ``MP(...)``/``Float64()``."""
    if isinstance(node, ast.Name | ast.Attribute):
        return (node.id if isinstance(node, ast.Name) else node.attr) in ARITH_OBJECTS
    if isinstance(node, ast.Call):
        f = node.func
        return (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) in ARITH_CLASSES
    return False


def _kind_attribute(node: ast.AST) -> bool:
    """``arith.name``, ``arith.family``, ``arith.dtype``, ``arith.dps`` (any arithmetic chain)."""
    return isinstance(node, ast.Attribute) and node.attr in KIND_ATTRIBUTES and _names_arith(node.value)


def _checks_a_declaration(node: ast.Compare) -> bool:
    """``arith.family in learner.arithmetics``: validating an arithmetic against what a learner
    declares (not a literal list of kinds) is a check, not a branch on the kind."""
    return (
        len(node.ops) == 1
        and isinstance(node.ops[0], ast.In | ast.NotIn)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr == "family"
        and not isinstance(node.comparators[0], ast.Tuple | ast.List | ast.Set | ast.Constant)
    )


def arith_branches(source: str) -> list[tuple[int, str]]:
    """(line, kind) of every branch on the arithmetic in ``source``.

    Kinds: ``identity`` (a comparison with FLOAT64, SYMPY or MP(...)), ``isinstance`` (on
    Float64/MP/Sympy), ``exact`` (reading ``arith.exact``), ``kind`` (``arith.name``/``family``/
    ``dtype``/``dps`` compared, used as a lookup key, or read: ``dps`` exists for MP only),
    ``dtype`` (an array's ``.dtype`` compared with ``object``: the arithmetic, seen through its
    arrays), ``probe`` (``getattr``/``hasattr`` on an arithmetic).
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_arith_object(o) for o in operands):
                found.append((node.lineno, "identity"))
            elif any(_kind_attribute(o) for o in operands) and not _checks_a_declaration(node):
                found.append((node.lineno, "kind"))
            elif any(isinstance(o, ast.Attribute) and o.attr == "dtype" for o in operands) and any(
                isinstance(o, ast.Name) and o.id == "object" for o in operands
            ):
                found.append((node.lineno, "dtype"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "isinstance" and len(node.args) == 2:
                types = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                if any(getattr(t, "id", getattr(t, "attr", None)) in ARITH_CLASSES for t in types):
                    found.append((node.lineno, "isinstance"))
            elif node.func.id in ("getattr", "hasattr") and node.args and _names_arith(node.args[0]):
                found.append((node.lineno, "probe"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and node.args and _kind_attribute(node.args[0]):
                found.append((node.lineno, "kind"))  # TABLE.get(arith.name, ...)
        elif isinstance(node, ast.Subscript) and _kind_attribute(node.slice):
            found.append((node.lineno, "kind"))  # TABLE[arith.name]
        elif isinstance(node, ast.Attribute) and _names_arith(node.value):
            if node.attr == "exact":
                found.append((node.lineno, "exact"))
            elif node.attr == "dps" and isinstance(node.ctx, ast.Load):
                found.append((node.lineno, "kind"))
    return sorted(found)


def _room(module: str) -> str:
    """``theorems.<room>`` for a room's module or subpackage, else the top-level module."""
    parts = module.removesuffix(".__init__").split(".")
    return ".".join(parts[:2]) if parts[0] == "theorems" else parts[0]


def arith_branch_counts(root: Path = PACKAGE) -> dict[str, int]:
    """Branches on the arithmetic per room, outside arith.py (rooms with none are left out)."""
    counts: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root) or "__init__"
        if module == "arith":
            continue
        n = len(arith_branches(path.read_text()))
        if n:
            counts[_room(module)] = counts.get(_room(module), 0) + n
    return counts


def test_no_branch_on_the_arithmetic_outside_arith():
    counts = arith_branch_counts()
    over = {r: n for r, n in counts.items() if n > ALLOWED_ARITH_BRANCHES.get(r, 0)}
    assert not over, (
        f"branches on the arithmetic outside arith.py above the allow-list: {over} (allowed "
        f"{ {r: ALLOWED_ARITH_BRANCHES.get(r, 0) for r in over} }); make the difference an Arith method. "
        f"All counts: {counts}"
    )


def test_the_arith_rule_sees_a_planted_branch(tmp_path):
    """Every kind of branch is found; using an arithmetic without asking which one is not."""
    planted = '''
def f(arith, x, y):
    half_pi = arith.scalar(1) if arith is not FLOAT64 else 1.0
    if isinstance(arith, (MP, Sympy)):
        pass
    if self.arith.exact:
        pass
    kind = float if arith.name == "float64" else object
    bits = TABLE.get(arith.name, 20) + TABLE[self.arith.family]
    digits = getattr(arith, "dps", 15) + arith.dps
    if x.dtype == object or arith == MP(30) or arith.family in ("mpmath", "sympy"):
        pass
    if arith.family not in learner.arithmetics:  # validating a declaration: not a branch
        raise ValueError
    return arith.pi, arith.eps, f"{arith.name}", arith.within(x, 1e-3), y.dtype
'''
    kinds = [k for _, k in arith_branches(planted)]
    assert sorted(kinds) == sorted(
        ["identity", "isinstance", "exact", "kind", "kind", "kind", "probe", "kind", "dtype", "identity",
         "kind"]
    )
    assert arith_branches("def g(arith, x):\n    return arith.tan(x) / arith.hypot(x), arith.name\n") == []
    root = tmp_path / "attnproof"
    (root / "theorems" / "newroom").mkdir(parents=True)
    (root / "arith.py").write_text("def h(arith):\n    return arith is FLOAT64\n")  # arith.py may
    (root / "theorems" / "newroom" / "__init__.py").write_text(planted)
    (root / "theorems" / "newroom" / "learn.py").write_text("z = 1 if arith.exact else 2\n")
    assert arith_branch_counts(root) == {"theorems.newroom": 12}


#: Words the engine uses for its own contract that happen to be a room's or a learner's name: the
#: row key ``exact`` (an exact answer) and the option ``bias`` of ``bench perf``'s targets.
ENGINE_WORDS = frozenset({"exact", "bias"})

#: The engine's modules, which read the rooms' registrations and name no result (issue 19).
ENGINE = ("cli.py", "bench.py")


def result_names_in(text: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) for every whole-word occurrence of one of ``names`` in ``text`` (a name with a
    hyphen counts as one word), code, strings and docstrings alike."""
    import re

    found = []
    for name in sorted(names):
        for m in re.finditer(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text):
            found.append((text[: m.start()].count("\n") + 1, name))
    return found


def test_the_engine_names_no_room_and_no_learner():
    """cli.py and bench.py are generic: no room's name, no registered learner's, no checkpoint's
    (what they print about a result comes from the rooms' registrations, attnproof.room)."""
    from attnproof.theorems import ROOMS
    from attnproof.verify.registry import LEARNERS

    names = (set(LEARNERS) | set(ROOMS) | {"MiniLM"}) - ENGINE_WORDS
    for module in ENGINE:
        assert result_names_in((PACKAGE / module).read_text(), names) == [], module


def test_the_engine_rule_sees_a_planted_name():
    text = 'x = 1\nhelp = "the noisy learner and skeleton-adaptive"\n# lowrank-cvx, not lowrank\n'
    found = result_names_in(text, {"noisy", "skeleton", "skeleton-adaptive", "lowrank", "lowrank-cvx"})
    assert sorted(found) == [(2, "noisy"), (2, "skeleton-adaptive"), (3, "lowrank"), (3, "lowrank-cvx")]


#: verify/'s modules that import the rooms' package ``attnproof.theorems`` itself (never a room by
#: name): importing it registers every room's entries, which the ledger, the SMT leg and the Arb
#: leg read; the Arb engine also loads each room's ``arb.py`` by the folder convention.
VERIFY_IMPORTS_THE_ROOMS = frozenset({"verify.ledger", "verify.smt", "verify.arb"})


def _docstrings(tree: ast.AST) -> set[int]:
    """``id()`` of the docstring nodes of a module, its classes and functions."""
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }


def room_references(source: str, rooms: set[str], ids: set[str], names: set[str]) -> list[tuple[int, str]]:
    """(line, what) for every place ``source``'s code names a result: an identifier that is a
    room (``theorems.noisy``, ``noisy.DESIGNS``), or a string constant (docstrings aside: they may
    show an example) holding a registry ID or, as a word, a room's or a learner's name."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        word = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                else node.name if isinstance(node, ast.alias) else None)
        if word is not None and rooms & set(word.split(".")):
            found.append((node.lineno if hasattr(node, "lineno") else 0, word))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found += [(node.lineno, i) for i in sorted(ids) if i in node.value]
            found += [(node.lineno, n) for _, n in result_names_in(node.value, names)]
    return found


def test_verify_names_no_room():
    """verify/ is the engine of the verification (issue 19): the rooms register their entries,
    claims, Arb enclosures and own certificates; verify/ imports no room and holds no table of
    their IDs (the Coq leg reads its ID map from the ``.v`` files' headers)."""
    from attnproof.theorems import ROOMS
    from attnproof.verify.registry import LEARNERS, REGISTRY

    names = (set(LEARNERS) | set(ROOMS)) - ENGINE_WORDS
    modules = [m for m in MODULES if m.startswith("verify.")]
    assert "verify.arb" in modules and "verify.coq_check" in modules  # the rule sees verify/
    for module in modules:
        rooms_imported = {t for t in GRAPH[module] if t.startswith("theorems")}
        assert not {t for t in rooms_imported if t != "theorems"}, (module, rooms_imported)
        assert not rooms_imported or module in VERIFY_IMPORTS_THE_ROOMS, module
        found = room_references(MODULES[module].read_text(), set(ROOMS), set(REGISTRY), names)
        assert found == [], (module, found)


def test_the_verify_rule_sees_a_planted_room():
    planted = '''"""The doc may show "thm4.1/one-token"."""
from ..theorems import noisy
import attnproof.theorems.membership
TABLE = {"thm4.1/one-token": ("Softmax.v", "x")}
x = theorems.lowrank.rub
help = "the noisy learner"
'''
    found = room_references(planted, {"noisy", "membership", "lowrank"}, {"thm4.1/one-token"}, {"noisy"})
    assert sorted(found) == [(2, "noisy"), (3, "attnproof.theorems.membership"), (4, "thm4.1/one-token"),
                             (5, "lowrank"), (6, "noisy")]


def test_no_module_imports_a_rooms_arb_enclosures():
    """A room's ``arb.py`` imports python-flint; only the Arb engine loads it, at run time
    (:func:`attnproof.verify.arb.load`), so importing a room or the CLI never imports it."""
    for module, targets in GRAPH.items():
        arb = {t for t in targets if t.startswith("theorems.") and t.split(".")[-1] == "arb"}
        assert not arb, (module, arb)
    assert any(m.startswith("theorems.") and m.endswith(".arb") for m in MODULES)  # the rule has a subject
