"""The curated mutants of this room (Thm 4.1): named bugs the mutation run (``tools/mutation.py``)
applies as snippet patches, besides the mutants it generates.

Literal data, read by the tool without importing the room: each mutant is a dict with its
``name``, the ``path`` of the patched module inside this room, the unique snippet ``old`` it
replaces by ``new``, and ``what`` the bug is.  A snippet that no longer occurs exactly once is
reported ``stale``; each runs against the room's tests (``tests/test_<room>.py``) and ``verify``.
"""

MUTANTS = (
    {"name": "gaussian-margin", "path": "__init__.py",
     "old": "GAUSSIAN_MARGIN = 0.1",
     "new": "GAUSSIAN_MARGIN = 0.01",
     "what": "Gaussian-probe margin constant 0.1 -> 0.01"},
)
