"""One room per result of the paper; importing this package registers every identity and learner.

The room convention (every result follows it):

* ``theorems/<room>/__init__.py`` (or, for a room not yet split, ``theorems/<room>.py``) holds
  everything about one result's mathematics: the docstring (the derivation, the paper's
  equations, what goes beyond the paper), the assumption checks, the learner(s) registered with
  :func:`attnproof.verify.registry.learner` (declaring the identity IDs they rely on, their arithmetics and
  query count), and the identities and bounds registered with :func:`attnproof.verify.registry.identity` /
  :func:`attnproof.verify.registry.bound`, which run the library's own code in sympy.
* ``theorems/<room>/runner.py`` declares, once, what the engine needs (:mod:`attnproof.room`):
  each learner's options (an :class:`attnproof.room.Options` dataclass; the runner's keyword
  defaults are read from it), its bench runner (:func:`attnproof.room.runner`), the room's
  sweeps (:func:`attnproof.room.sweep`), its top-level commands (:func:`attnproof.room.command`,
  whose name and help line ``attnproof.cli.ROOM_COMMANDS`` lists) and its share of the engine's
  sweeps and lines that span rooms (:func:`attnproof.room.part`, at an explicit order: a
  learner of ``bench perf``'s query-count sweep, a timing run, a ``bench bounds`` workload,
  real heads, a result row's words and failure).  ``attnproof recover <learner>``, ``attnproof
  bench <sweep>``, ``bench perf``, ``bench bounds`` and :func:`attnproof.bench.run` are built
  from these; ``bench.py`` and ``cli.py`` name no result (``tests/test_layers.py`` checks).
* A room imports only from the levels below it (``errors``, ``arith``, ``proof``, ``models``,
  ``recovery``, ``oracles``, ``prelude``, ``measure``, ``room``), never from another room, except
  along a reduction the paper itself makes, declared in :data:`REDUCTIONS` (Sec. 4.1 learns the
  attention layer of a Transformer *by* Thm 4.1 on antisymmetric queries: calling the Thm 4.1
  learner is the proof, and copying it would be a twin).  ``tests/test_layers.py`` checks this.
* ``theorems/<room>/claims.py`` holds the room's claims of the paper for the verification ledger
  (and its errata), registered with :func:`attnproof.verify.claims.register` at the room's place
  in the paper's order; a claim links the room's identities by ID (that module's docstring).
* ``theorems/<room>/mutants.py`` (optional) lists the room's curated mutants, literal data
  ``tools/mutation.py`` reads without importing the room (that module's :func:`room_curated`).
* ``theorems/<room>/arb.py`` (optional) holds the Arb (python-flint) enclosures of the room's
  interval claims, registered with :func:`attnproof.verify.enclosures.enclosure`; only the Arb
  leg of ``attnproof verify`` loads it (:func:`attnproof.verify.arb.load`), so importing a room
  never imports flint.
* Tests live in ``tests/test_<room>.py`` (``tools/mutation.py`` finds them by that name); the
  chapter in ``book/<room>.md``.

Adding a result is one new folder here (rooms are found by their folder: no list to edit), its
chapter and its test file.
"""

import importlib
import pkgutil
from pathlib import Path

#: Every room, found by its folder (or module) here: adding a result needs no line in this file.
ROOMS: tuple[str, ...] = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)))

#: room -> rooms it may import: the reductions the paper makes from one result to another.
REDUCTIONS: dict[str, tuple[str, ...]] = {"transformer": ("exact",), "multihead": ("exact",)}

for _room in ROOMS:
    importlib.import_module(f"{__name__}.{_room}")  # registers its identities and learners
    for _part in ("runner", "claims"):  # its bench runners; its claims for the ledger
        if (Path(__path__[0]) / _room / f"{_part}.py").is_file():
            importlib.import_module(f"{__name__}.{_room}.{_part}")

__all__ = ["ROOMS", "REDUCTIONS", *ROOMS]
