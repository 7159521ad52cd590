"""Every identity's SHA-256 is pinned: moving the verification code must not change one.

``tests/data/identity_sha256.json`` was generated from main's code (dc06390) before the move
into ``attnproof/verify/`` (issue 19).  The hash covers the statement and the expressions, never
which checkers ran, so a citation made before the move still pins the same entry.  A new
identity has no published hash yet; a published one is never removed, and changes only through a
revision recorded in ``tests/data/identity_sha256_revisions.json`` (old hash, new hash, and why
the statement or its expressions had to change), so a reader holding an old citation can see
what changed and why.
"""

from __future__ import annotations

import json
from pathlib import Path

PINNED = Path(__file__).parent / "data" / "identity_sha256.json"
REVISIONS = Path(__file__).parent / "data" / "identity_sha256_revisions.json"


def current_pins() -> dict[str, str]:
    """The pinned hashes with every recorded revision applied, in order (each must start from the
    hash before it and say why)."""
    pins = json.loads(PINNED.read_text())
    for ident, revisions in json.loads(REVISIONS.read_text()).items():
        for rev in revisions:
            assert rev["from"] == pins[ident] and rev["to"] != rev["from"], (ident, rev)
            assert len(rev["why"]) > 40, f"{ident}: a revision says why"
            pins[ident] = rev["to"]
    return pins


def test_every_published_identity_keeps_its_sha256(full_certificate):
    pinned = current_pins()
    now = {e.id: e.sha256 for e in full_certificate.entries}
    assert set(pinned) <= set(now), f"published identities removed: {sorted(set(pinned) - set(now))}"
    changed = sorted(i for i in pinned if pinned[i] != now[i])
    assert not changed, f"SHA-256 changed for {changed}"
