"""The curated mutants of the Thm 5.1 room: named bugs for ``tools/mutation.py``, literal data it
reads without importing the room (the format: its ``room_curated``)."""

MUTANTS = (
    {"name": "skeleton-rank-tol", "path": "__init__.py",
     "old": "rank_tol = 0.1 * math.sqrt(arith.eps) if rank_tol is None",
     "new": "rank_tol = 1e-2 if rank_tol is None",
     "what": "skeleton rank-cut tolerance 0.1 sqrt(eps) -> 1e-2"},
    {"name": "floor-count-bias", "path": "__init__.py",
     "old": "(d + 1 if bias else 0)",
     "new": "(d if bias else 0)",
     "what": "the floor query count forgets f([0]) with biases"},
    {"name": "basis-rounding-per-entry", "path": "__init__.py",
     "old": "dct = DCT_ENTRY_ROUNDING * eps * math.sqrt(2 * d)",
     "new": "dct = DCT_ENTRY_ROUNDING * eps * math.sqrt(2 / d)",
     "what": "the DCT's rounding bound counts one entry's error, not the d^2 entries' Frobenius norm"},
)
