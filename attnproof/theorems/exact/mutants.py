"""The curated mutants of the Thm 4.1 room: named bugs for ``tools/mutation.py``, literal data it
reads without importing the room (the format: its ``room_curated``)."""

MUTANTS = (
    {"name": "gaussian-margin", "path": "__init__.py",
     "old": "GAUSSIAN_MARGIN = 0.1",
     "new": "GAUSSIAN_MARGIN = 0.01",
     "what": "Gaussian-probe margin constant 0.1 -> 0.01"},
    {"name": "exact-bound-no-inverse-norm", "path": "__init__.py",
     "old": "bound = FLOAT64.norm(dT) * inv_norm + W_solve",
     "new": "bound = FLOAT64.norm(dT) + W_solve",
     "what": "the error bound of W drops the factor ||Z^{-1}||_2 of the measured values' error"},
    {"name": "exact-c-bound-halved", "path": "__init__.py",
     "old": "c_bound = None if c is None else FLOAT64.norm(probes.linear_err) * inv_norm + c_solve",
     "new": "c_bound = None if c is None else FLOAT64.norm(probes.linear_err) * inv_norm / 2 + c_solve",
     "what": "c's error bound drops a factor of 2 of the measured c^T p's error (thm4.1/run-tight fails)"},
)
