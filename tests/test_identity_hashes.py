"""Every identity's SHA-256 is pinned: moving the verification code must not change one.

``tests/data/identity_sha256.json`` was generated from main's code (dc06390) before the move
into ``attnproof/verify/`` (issue 19).  The hash covers the statement and the expressions, never
which checkers ran, so a citation made before the move still pins the same entry.  A new
identity has no published hash yet; a published one is never removed or changed.
"""

from __future__ import annotations

import json
from pathlib import Path

PINNED = Path(__file__).parent / "data" / "identity_sha256.json"


def test_every_published_identity_keeps_its_sha256(full_certificate):
    pinned = json.loads(PINNED.read_text())
    now = {e.id: e.sha256 for e in full_certificate.entries}
    assert set(pinned) <= set(now), f"published identities removed: {sorted(set(pinned) - set(now))}"
    changed = sorted(i for i in pinned if pinned[i] != now[i])
    assert not changed, f"SHA-256 changed for {changed}"
