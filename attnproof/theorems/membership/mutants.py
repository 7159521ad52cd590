"""The curated mutants of the Thm B.1 room: named bugs for ``tools/mutation.py``, literal data it
reads without importing the room (the format: its ``room_curated``)."""

MUTANTS = (
    {"name": "monotone-no-a-squared", "path": "identities.py",
     "old": "dF = sign * beta - _sigma(w * s_) * s_ / a**2",
     "new": "dF = sign * beta - _sigma(w * s_) * s_",
     "what": "thmB.1/monotone checks F'(a) without the 1 / a^2 of thmB.1/monotone-derivative"},
)
