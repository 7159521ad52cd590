"""The curated mutants of this room (Thm 5.1): named bugs the mutation run (``tools/mutation.py``)
applies as snippet patches, besides the mutants it generates.

Literal data, read by the tool without importing the room: each mutant is a dict with its
``name``, the ``path`` of the patched module inside this room, the unique snippet ``old`` it
replaces by ``new``, and ``what`` the bug is.  A snippet that no longer occurs exactly once is
reported ``stale``; each runs against the room's tests (``tests/test_<room>.py``) and ``verify``.
"""

MUTANTS = (
    {"name": "skeleton-rank-tol", "path": "__init__.py",
     "old": "rank_tol = 0.1 * math.sqrt(arith.eps) if rank_tol is None",
     "new": "rank_tol = 1e-2 if rank_tol is None",
     "what": "skeleton rank-cut tolerance 0.1 sqrt(eps) -> 1e-2"},
    {"name": "floor-count-bias", "path": "__init__.py",
     "old": "(d + 1 if bias else 0)",
     "new": "(d if bias else 0)",
     "what": "the floor query count forgets f([0]) with biases"},
)
