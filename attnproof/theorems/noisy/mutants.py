"""The curated mutants of the Thm 6.1 room: named bugs for ``tools/mutation.py``, literal data it
reads without importing the room (the format: its ``room_curated``)."""

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
