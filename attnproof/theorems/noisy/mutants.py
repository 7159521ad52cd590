"""The curated mutants of this room (Thm 6.1): named bugs the mutation run (``tools/mutation.py``)
applies as snippet patches, besides the mutants it generates.

Literal data, read by the tool without importing the room: each mutant is a dict with its
``name``, the ``path`` of the patched module inside this room, the unique snippet ``old`` it
replaces by ``new``, and ``what`` the bug is.  A snippet that no longer occurs exactly once is
reported ``stale``; each runs against the room's tests (``tests/test_<room>.py``) and ``verify``.
"""

MUTANTS = (
    {"name": "noisy-zero-split", "path": "__init__.py",
     "old": "    return mu / 2",
     "new": "    return mu",
     "what": "the mu/2 zero / non-zero split of v_hat moved to mu"},
    {"name": "lipschitz-cosh", "path": "__init__.py",
     "old": "return 2 + 2 * math.cosh(self.band)",
     "new": "return 2 + math.cosh(self.band)",
     "what": "ProbeDesign.lipschitz = 2 + cosh(beta)"},
    {"name": "tau-v-no-eps-v", "path": "__init__.py",
     "old": "t_v = (eps_v / math.sqrt(d) - floor.tau) * shrink",
     "new": "t_v = t",
     "what": "design_tolerances' tau_v without eps_v / sqrt(d)"},
)
