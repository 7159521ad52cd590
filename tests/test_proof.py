"""The identity registry: every required identity verifies, and false ones do not."""

from __future__ import annotations

import json

import pytest
import sympy as sp

from attnproof import proof

REQUIRED = [
    "sec3/qkv-merge",
    "thm4.1/one-token",
    "thm4.1/softmax-to-sigmoid",
    "thm4.1/score-difference",
    "thm4.1/label-affine",
    "sec4.1/relu-antisymmetry",
    "prop7.1/multihead-collapse",
    "thm4.1/end-to-end-d2",
    "thm4.1/end-to-end-d3",
    "lemmaA.1/lipschitz-bound",
    "thm6.1/probe-logit",
    "thm6.1/tolerance-algebra",
    "thm6.1/erratum-E1",
    "thm6.1/paired-logit-corrected",
    "thm5.1/rank-one-measurement",
    "thm5.1/skeleton-reconstruction",
    "bias/score-expansion",
    "bias/value-offset",
    "bias/zero-token",
    "bias/zero-last-token",
    # issue 12: the learners' own constants, counts and paths
    "thm6.1/design-tolerances",
    "thm6.1/paper-tolerances",
    "thm6.1/support-split",
    "thm4.1/end-to-end-paired",
    "thm4.1/end-to-end-bias",
    "thm4.1/query-count",
    "thm5.1/query-count",
    "thm5.1/skeleton-end-to-end",
]


def test_bounds_are_proven_rigorously(certificate):
    for i in ("lemmaA.1/lipschitz-bound", "thm6.1/tolerance-algebra", "thm6.1/paired-logit-corrected"):
        e = certificate.entry(i)
        assert e.kind == "bound" and e.symbolic and e.numeric_max_err == 0 and e.passed


def test_a_false_bound_fails(scratch_registry):
    import mpmath

    proof.bound(id="test/false-bound", paper="-", statement="L <= 4")(
        lambda: [(
            "4 - L",
            4 - 1 / (mpmath.iv.mpf(1) / (1 + mpmath.iv.exp(0.5)) * (1 - 1 / (1 + mpmath.iv.exp(0.5)))),
        )]
    )
    assert not proof.verify("test/false-bound").passed
    y = sp.Symbol("y", real=True)
    proof.bound(id="test/false-sym", paper="-", statement="y >= 0")(lambda: [("y", y)])
    e = proof.verify("test/false-sym")
    assert not e.symbolic and not e.passed


@pytest.fixture(scope="module")
def certificate(full_certificate):
    return full_certificate


def test_every_required_identity_is_registered_and_verified(certificate):
    ids = [e.id for e in certificate.entries]
    for i in REQUIRED:
        assert i in ids
        e = certificate.entry(i)
        assert e.symbolic and e.numeric_max_err <= proof.NUMERIC_TOL and e.passed, (i, e.error)
    assert certificate.passed


def test_certificate_formats(certificate):
    doc = json.loads(certificate.to_json())
    assert doc["passed"] is True
    assert {"sympy", "mpmath", "numpy", "python", "attnproof"} <= set(doc["versions"])
    for e in doc["identities"]:
        assert len(e["sha256"]) == 64 and e["seconds"] >= 0
    md, tex = certificate.to_markdown(), certificate.to_latex()
    for i in REQUIRED:
        assert f"`{i}`" in md and rf"\texttt{{{i}}}" in tex


@pytest.fixture
def scratch_registry(monkeypatch):
    """A registry holding the real identities plus whatever the test registers."""
    import attnproof  # noqa: F401  (importing the package registers every identity)
    monkeypatch.setattr(proof, "REGISTRY", dict(proof.REGISTRY))
    return proof.REGISTRY


x = sp.Symbol("x", real=True)


def test_a_false_identity_fails_both_checks(scratch_registry):
    proof.identity(id="test/false", paper="-", statement="x = x + 1/1000")(
        lambda: [(x, x + sp.Rational(1, 1000))]
    )
    e = proof.verify("test/false")
    assert not e.symbolic and e.numeric_max_err > 1e-4 and not e.passed


def test_numeric_check_is_independent_of_simplification(scratch_registry):
    """A simplifier that 'proves' anything is caught by the mpmath cross-check."""
    proof.identity(id="test/liar", paper="-", statement="x = 2x", simplifier=lambda e: sp.Integer(0))(
        lambda: [(x, 2 * x)]
    )
    e = proof.verify("test/liar")
    assert e.symbolic and not e.passed and e.numeric_max_err > 0.1


def test_failure_propagates_through_uses(scratch_registry):
    proof.identity(id="test/bad-lemma", paper="-", statement="x = -x")(lambda: [(x, -x)])
    proof.identity(id="test/result", paper="-", statement="x = x", uses=["test/bad-lemma"])(lambda: [(x, x)])
    cert = proof.verify_all(["test/result"])
    result = cert.entry("test/result")
    assert result.own_passed and not result.passed and not cert.passed


def test_a_builder_that_raises_is_reported_not_raised(scratch_registry):
    def boom():
        raise RuntimeError("kaput")

    proof.identity(id="test/boom", paper="-", statement="-")(boom)
    e = proof.verify("test/boom")
    assert not e.passed and "kaput" in e.error


def test_ids_are_unique(scratch_registry):
    with pytest.raises(proof.AttnproofError):
        proof.identity(id="thm4.1/one-token", paper="-", statement="-")(lambda: [])


def test_unknown_use_is_an_error(scratch_registry):
    proof.identity(id="test/orphan", paper="-", statement="x = x", uses=["no/such"])(lambda: [(x, x)])
    with pytest.raises(KeyError):
        proof.verify_all(["test/orphan"])


def test_content_hash_pins_statement_and_expressions():
    ident = proof.Identity("a/b", "p", "s", lambda: [])
    h = proof.content_hash(ident, [(x, x)])
    assert h == proof.content_hash(ident, [(x, x)])
    assert h != proof.content_hash(ident, [(x, 2 * x)])
    assert h != proof.content_hash(proof.Identity("a/b", "p", "s'", lambda: []), [(x, x)])


def test_every_entry_states_its_scope():
    """All d (and how), listed sizes, or scalar: what the proof covers is said, never implied."""
    import attnproof  # noqa: F401  (importing the package registers every entry)

    for i, ident in proof.REGISTRY.items():
        assert ident.scope.startswith(("all d", "listed sizes: ", "scalar")), (i, ident.scope)
        if ident.kind == "run" or "end-to-end" in i:
            assert ident.scope.startswith("listed sizes"), i  # learners run at fixed sizes, and say so


def test_a_run_passes_only_when_every_check_is_within_what_it_allows(scratch_registry):
    proof.run(id="test/run-ok", paper="-", statement="-", scope="scalar")(lambda: [("err", 1e-3, 1e-2)])
    proof.run(id="test/run-over", paper="-", statement="-")(lambda: [("ok", 0.0, 0.0), ("err", 0.2, 0.1)])
    proof.run(id="test/run-nan", paper="-", statement="-")(lambda: [("err", float("nan"), 1.0)])
    proof.run(id="test/run-empty", paper="-", statement="-")(lambda: [])
    ok = proof.verify("test/run-ok")
    assert ok.passed and ok.kind == "run" and ok.numeric_max_err == pytest.approx(0.1)
    assert ok.checks == [{"check": "err", "measured": 1e-3, "allowed": 1e-2, "passed": True}]
    over = proof.verify("test/run-over")
    assert not over.passed and [c["passed"] for c in over.checks] == [True, False]
    assert over.numeric_max_err == pytest.approx(2.0)
    assert not proof.verify("test/run-nan").passed
    assert not proof.verify("test/run-empty").passed


def test_run_entries_in_the_certificate(certificate):
    runs = [e for e in certificate.entries if e.kind == "run"]
    assert {"thm4.1/run-high-precision", "thm5.1/run-high-precision", "thm6.1/run-float64"} <= {
        e.id for e in runs
    }
    for e in runs:
        assert e.passed and e.checks and all(c["passed"] for c in e.checks) and len(e.sha256) == 64
    doc = json.loads(certificate.to_json())
    assert any(e["checks"] for e in doc["identities"])


def test_paper_formulas_are_independent_of_the_model():
    """proof.paper_head is Sec. 3's formula; a different score convention changes it."""
    W = proof.symbols("W", (2, 2), real=True)
    v, X = proof.symbols("v", (2,), real=True), proof.symbols("X", (2, 2), real=True)
    s = proof.paper_scores(W, X)
    assert sp.expand(s[0] - (X[0] @ W @ X[1])) == 0 and sp.expand(s[0] - (X[1] @ W @ X[0])) != 0
    e = [sp.exp(x) for x in s]
    head = (e[0] * (X[0] @ v) + e[1] * (X[1] @ v)) / (e[0] + e[1])
    assert sp.simplify(proof.paper_head(W, v, X) - head) == 0


def test_matrix_identities_of_symbolic_size(scratch_registry):
    """MatrixSymbol identities: proven by expansion, cross-checked entrywise at random sizes."""
    d = sp.Symbol("d", integer=True, positive=True)
    W, u, e = sp.MatrixSymbol("W", d, d), sp.MatrixSymbol("u", d, 1), sp.MatrixSymbol("e", d, 1)
    proof.identity(id="test/matrix", paper="-", statement="-", simplifier=proof.expand_matrix)(
        lambda: [((u + e).T * W * e - e.T * W * e, u.T * W * e)]
    )
    proof.identity(id="test/matrix-false", paper="-", statement="-", simplifier=proof.expand_matrix)(
        lambda: [((u + e).T * W * e, u.T * W * e)]
    )
    good, bad = proof.verify("test/matrix"), proof.verify("test/matrix-false")
    assert good.passed and good.numeric_max_err == 0
    assert not bad.symbolic and bad.numeric_max_err > 1e-3 and not bad.passed


def test_all_d_entries_use_symbolic_sizes():
    import attnproof  # noqa: F401

    for i, ident in proof.REGISTRY.items():
        if ident.scope.startswith("all d") and ident.kind == "identity":
            exprs = [sp.sympify(x) for pair in ident.build() for x in pair]
            symbolic_sizes = {
                n for x in exprs for m in x.atoms(sp.MatrixSymbol) for n in m.shape if not n.is_number
            }
            integer_symbols = {s for x in exprs for s in x.free_symbols if s.is_integer}
            assert symbolic_sizes or integer_symbols, i  # a matrix of symbolic size, or a count on a symbol
