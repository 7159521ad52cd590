"""The numerics leg (issue 20): every mpmath.iv enclosure of the registry recomputed with Arb."""

from __future__ import annotations

import mpmath
import pytest
from flint import arb, ctx

from attnproof.verify import arb as A
from attnproof.verify.registry import REGISTRY
from attnproof.theorems.noisy import arb as noisy_arb

AGREE = [i for i in A.load() if i != "thm6.1/design-tolerances"]


@pytest.mark.parametrize("id", AGREE)
def test_arb_and_mpmath_iv_agree(id):
    rep = A.check_entry(id)
    assert rep.passed, rep.failures[:3]
    assert rep.version.startswith("python-flint") and "overlap and both >= 0" in rep.detail


def test_every_interval_claim_of_the_registry_has_an_arb_enclosure():
    """Every bound with interval claims is re-evaluated in Arb (an enclosure its room registers),
    or declared (with its reason) the output of a certified computation of its own; never both,
    never neither."""
    A.load()
    with_iv = {i for i, ident in REGISTRY.items() if ident.kind == "bound"
               and any(hasattr(q, "a") and hasattr(q, "b") for _, q in ident.build())}
    assert not set(A.ENCLOSURES) & set(A.OWN_CERTIFICATE)
    assert with_iv == set(A.ENCLOSURES) | set(A.OWN_CERTIFICATE)


def test_design_tolerances_agree():
    """Arb's finding, fixed: the band claims were a float64 product (the tuned band rounded down by
    1.8e-16, so mpmath.iv's enclosure excluded the exact value); both engines now agree on all 720."""
    rep = A.check_entry("thm6.1/design-tolerances")
    assert rep.passed, rep.failures[:3]


def test_lipschitz_constant_to_20_digits():
    with ctx.workprec(A.PREC):
        L = noisy_arb.lipschitz(arb(1) / 2)
        assert L.overlaps(arb("[4.2552519304127615705 +/- 1e-19]")) and L.rad() < arb("1e-50")
        tau_clip = noisy_arb.clip(0.5)
        assert (1 / (tau_clip * (1 - tau_clip))).overlaps(L)  # the definition and the closed form


def test_planted_wrong_constant_fails():
    """L typed as a 9-digit decimal (the pitfall of the issue) is refused: no overlap."""
    def typed():
        out = noisy_arb.lipschitz_bound()
        return [5 - arb("4.25525193"), *out[1:]]
    rep = A.check_entry("lemmaA.1/lipschitz-bound", {"lemmaA.1/lipschitz-bound": typed})
    assert not rep.passed and "do not overlap" in rep.failures[0][3]


def test_planted_false_claim_fails_even_when_enclosures_overlap():
    """Both enclosures must show >= 0: a negative claim fails although the two agree."""
    iv = mpmath.iv.mpf([-2, -1])
    assert "does not show >= 0" in A.compare("planted", iv, arb(-1.5))


def test_wrong_claim_count_fails():
    rep = A.check_entry("thmB.1/apriori-interval", {"thmB.1/apriori-interval": lambda: []})
    assert not rep.passed and "1 interval claims, 0 Arb enclosures" in rep.failures[0][3]


def test_a_twice_registered_enclosure_is_refused():
    """The seam keeps one enclosure per entry: a second one, or an enclosure of an entry declared
    its own certificate, is a typed error (the registries are left as they were)."""
    from attnproof.errors import AttnproofError
    from attnproof.verify.enclosures import enclosure, own_certificate

    before = (dict(A.ENCLOSURES), dict(A.OWN_CERTIFICATE))
    with pytest.raises(AttnproofError, match="registered twice"):
        enclosure("thmB.1/apriori-interval")(lambda: [])
    with pytest.raises(AttnproofError, match="registered twice"):
        enclosure("def2.1/rub-certified")(lambda: [])
    with pytest.raises(AttnproofError, match="registered twice"):
        own_certificate("planted", "thm6.1/paper-tolerances")
    assert (A.ENCLOSURES, A.OWN_CERTIFICATE) == before
