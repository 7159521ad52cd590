"""The identity registry and the verifier (attnproof.verify): every required identity verifies,
false ones do not, and a new checker plugs in without touching the verifier."""

from __future__ import annotations

import json

import pytest
import sympy as sp

from attnproof.errors import AttnproofError
from attnproof.verify import certificate as verifier
from attnproof.verify import checkers, formulas, registry
from attnproof.verify.render import latex_escape

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

    registry.bound(id="test/false-bound", paper="-", statement="L <= 4")(
        lambda: [(
            "4 - L",
            4 - 1 / (mpmath.iv.mpf(1) / (1 + mpmath.iv.exp(0.5)) * (1 - 1 / (1 + mpmath.iv.exp(0.5)))),
        )]
    )
    assert not verifier.verify("test/false-bound").passed
    y = sp.Symbol("y", real=True)
    registry.bound(id="test/false-sym", paper="-", statement="y >= 0")(lambda: [("y", y)])
    e = verifier.verify("test/false-sym")
    assert not e.symbolic and not e.passed


@pytest.fixture(scope="module")
def certificate(full_certificate):
    return full_certificate


def test_every_required_identity_is_registered_and_verified(certificate):
    ids = [e.id for e in certificate.entries]
    for i in REQUIRED:
        assert i in ids
        e = certificate.entry(i)
        assert e.symbolic and e.numeric_max_err <= checkers.NUMERIC_TOL and e.passed, (i, e.error)
    assert certificate.passed


def test_certificate_formats(certificate):
    doc = json.loads(certificate.to_json())
    assert doc["passed"] is True
    assert {"sympy", "mpmath", "numpy", "python", "attnproof"} <= set(doc["versions"])
    for e in doc["identities"]:
        assert len(e["sha256"]) == 64 and e["seconds"] >= 0
    md, tex = certificate.to_markdown(), certificate.to_latex()
    for i in REQUIRED:  # in LaTeX: typewriter, medium weight, breakable only after "/"
        shown = latex_escape(i).replace("/", r"/\allowbreak{}")
        assert f"`{i}`" in md and rf"\texttt{{\mdseries {shown}}}" in tex


@pytest.fixture
def scratch_registry():
    """The real identities plus whatever the test registers (removed again afterwards)."""
    import attnproof  # noqa: F401  (importing the package registers every identity)
    saved = dict(registry.REGISTRY)
    yield registry.REGISTRY
    registry.REGISTRY.clear()
    registry.REGISTRY.update(saved)


x = sp.Symbol("x", real=True)


def test_a_false_identity_fails_both_checks(scratch_registry):
    registry.identity(id="test/false", paper="-", statement="x = x + 1/1000")(
        lambda: [(x, x + sp.Rational(1, 1000))]
    )
    e = verifier.verify("test/false")
    assert not e.symbolic and e.numeric_max_err > 1e-4 and not e.passed


def test_numeric_check_is_independent_of_simplification(scratch_registry):
    """A simplifier that 'proves' anything is caught by the mpmath cross-check."""
    registry.identity(id="test/liar", paper="-", statement="x = 2x", simplifier=lambda e: sp.Integer(0))(
        lambda: [(x, 2 * x)]
    )
    e = verifier.verify("test/liar")
    assert e.symbolic and not e.passed and e.numeric_max_err > 0.1


def test_failure_propagates_through_uses(scratch_registry):
    registry.identity(id="test/bad-lemma", paper="-", statement="x = -x")(lambda: [(x, -x)])
    registry.identity(id="test/result", paper="-", statement="x = x", uses=["test/bad-lemma"])(
        lambda: [(x, x)]
    )
    cert = verifier.verify_all(["test/result"])
    result = cert.entry("test/result")
    assert result.own_passed and not result.passed and not cert.passed


def test_a_builder_that_raises_is_reported_not_raised(scratch_registry):
    def boom():
        raise RuntimeError("kaput")

    registry.identity(id="test/boom", paper="-", statement="-")(boom)
    e = verifier.verify("test/boom")
    assert not e.passed and "kaput" in e.error


def test_ids_are_unique(scratch_registry):
    with pytest.raises(AttnproofError):
        registry.identity(id="thm4.1/one-token", paper="-", statement="-")(lambda: [])


def test_unknown_use_is_an_error(scratch_registry):
    registry.identity(id="test/orphan", paper="-", statement="x = x", uses=["no/such"])(lambda: [(x, x)])
    with pytest.raises(KeyError):
        verifier.verify_all(["test/orphan"])


def test_content_hash_pins_statement_and_expressions():
    ident = registry.Identity("a/b", "p", "s", lambda: [])
    h = registry.content_hash(ident, [(x, x)])
    assert h == registry.content_hash(ident, [(x, x)])
    assert h != registry.content_hash(ident, [(x, 2 * x)])
    assert h != registry.content_hash(registry.Identity("a/b", "p", "s'", lambda: []), [(x, x)])


def test_every_entry_states_its_scope():
    """All d (and how), listed sizes, or scalar: what the proof covers is said, never implied."""
    import attnproof  # noqa: F401  (importing the package registers every entry)

    for i, ident in registry.REGISTRY.items():
        assert ident.scope.startswith(("all d", "listed sizes: ", "scalar")), (i, ident.scope)
        if ident.kind == "run" or "end-to-end" in i:
            assert ident.scope.startswith("listed sizes"), i  # learners run at fixed sizes, and say so


def test_a_run_passes_only_when_every_check_is_within_what_it_allows(scratch_registry):
    run = registry.run_check
    run(id="test/run-ok", paper="-", statement="-", scope="scalar")(lambda: [("err", 1e-3, 1e-2)])
    run(id="test/run-over", paper="-", statement="-")(lambda: [("ok", 0.0, 0.0), ("err", 0.2, 0.1)])
    registry.run_check(id="test/run-nan", paper="-", statement="-")(lambda: [("err", float("nan"), 1.0)])
    registry.run_check(id="test/run-empty", paper="-", statement="-")(lambda: [])
    ok = verifier.verify("test/run-ok")
    assert ok.passed and ok.kind == "run" and ok.numeric_max_err == pytest.approx(0.1)
    assert ok.checks == [{"check": "err", "measured": 1e-3, "allowed": 1e-2, "passed": True}]
    over = verifier.verify("test/run-over")
    assert not over.passed and [c["passed"] for c in over.checks] == [True, False]
    assert over.numeric_max_err == pytest.approx(2.0)
    assert not verifier.verify("test/run-nan").passed
    assert not verifier.verify("test/run-empty").passed


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
    """formulas.paper_head is Sec. 3's formula; a different score convention changes it."""
    W = formulas.symbols("W", (2, 2), real=True)
    v, X = formulas.symbols("v", (2,), real=True), formulas.symbols("X", (2, 2), real=True)
    s = formulas.paper_scores(W, X)
    assert sp.expand(s[0] - (X[0] @ W @ X[1])) == 0 and sp.expand(s[0] - (X[1] @ W @ X[0])) != 0
    e = [sp.exp(x) for x in s]
    head = (e[0] * (X[0] @ v) + e[1] * (X[1] @ v)) / (e[0] + e[1])
    assert sp.simplify(formulas.paper_head(W, v, X) - head) == 0


def test_matrix_identities_of_symbolic_size(scratch_registry):
    """MatrixSymbol identities: proven by expansion, cross-checked entrywise at random sizes."""
    d = sp.Symbol("d", integer=True, positive=True)
    W, u, e = sp.MatrixSymbol("W", d, d), sp.MatrixSymbol("u", d, 1), sp.MatrixSymbol("e", d, 1)
    registry.identity(id="test/matrix", paper="-", statement="-", simplifier=checkers.expand_matrix)(
        lambda: [((u + e).T * W * e - e.T * W * e, u.T * W * e)]
    )
    registry.identity(id="test/matrix-false", paper="-", statement="-", simplifier=checkers.expand_matrix)(
        lambda: [((u + e).T * W * e, u.T * W * e)]
    )
    good, bad = verifier.verify("test/matrix"), verifier.verify("test/matrix-false")
    assert good.passed and good.numeric_max_err == 0
    assert not bad.symbolic and bad.numeric_max_err > 1e-3 and not bad.passed


def test_all_d_entries_use_symbolic_sizes():
    import attnproof  # noqa: F401

    for i, ident in registry.REGISTRY.items():
        if ident.scope.startswith("all d") and ident.kind == "identity":
            exprs = [sp.sympify(x) for pair in ident.build() for x in pair]
            symbolic_sizes = {
                n for x in exprs for m in x.atoms(sp.MatrixSymbol) for n in m.shape if not n.is_number
            }
            integer_symbols = {s for x in exprs for s in x.free_symbols if s.is_integer}
            assert symbolic_sizes or integer_symbols, i  # a matrix of symbolic size, or a count on a symbol


# --- the checker seam ---------------------------------------------------------------------


def test_every_entry_names_its_checkers_and_their_verdicts(certificate):
    """Each entry records every engine that checked it (issue 20's seam): sympy and mpmath for
    identities and bounds, the learner run for runs (and the second engines, tests/test_engines.py);
    for a verified entry sympy, mpmath and the learner run passed, and no engine failed (a second
    engine may say *not run* or *no verdict*, passed None, with the reason)."""
    engines = {"identity": {"sympy", "mpmath"}, "bound": {"sympy", "mpmath"}, "run": {"learner-run"}}
    for e in certificate.entries:
        assert engines[e.kind] <= set(e.checkers), e.id
        for engine, v in e.checkers.items():
            assert {"passed", "seconds", "version", "detail"} <= set(v), (e.id, engine)
            assert v["seconds"] >= 0 and v["version"], (e.id, engine)
            if e.passed:
                assert v["passed"] is (True if engine in engines[e.kind] else v["passed"]), (e.id, engine)
                assert v["passed"] is not False, (e.id, engine)
            if v["passed"] is None:
                assert v["detail"].startswith(("not run: ", "no verdict: ")), (e.id, engine)
    doc = json.loads(certificate.to_json())
    assert all(d["checkers"] for d in doc["identities"])


@pytest.fixture
def scratch_checkers():
    """The registered checkers plus whatever the test registers (removed again afterwards)."""
    saved = dict(checkers.CHECKERS)
    yield checkers.CHECKERS
    checkers.CHECKERS.clear()
    checkers.CHECKERS.update(saved)


class _Engine:
    """A stand-in for a new engine (z3, cvc5, Arb, Coq): one object, registered, nothing else."""

    engine, kinds = "toy-smt", ("identity",)

    def __init__(self, verdicts):
        self.verdicts = verdicts

    def version(self):
        return "0.1"

    def check(self, ident, built):
        return checkers.Verdict(self.verdicts.get(ident.id), f"{len(built)} pairs seen")


def test_a_new_checker_plugs_in_without_touching_the_verifier(scratch_registry, scratch_checkers):
    registry.identity(id="test/ok", paper="-", statement="x = x")(lambda: [(x, x)])
    registry.identity(id="test/refuted", paper="-", statement="x = x")(lambda: [(x, x)])
    registry.identity(id="test/silent", paper="-", statement="x = x")(lambda: [(x, x)])
    before = {i: verifier.verify(i).sha256 for i in ("test/ok", "test/refuted", "test/silent")}
    checkers.register_checker(_Engine({"test/ok": True, "test/refuted": False}))
    ok, refuted, silent = (verifier.verify(i) for i in ("test/ok", "test/refuted", "test/silent"))
    assert ok.checkers["toy-smt"] == {"passed": True, "seconds": ok.checkers["toy-smt"]["seconds"],
                                      "version": "0.1", "detail": "1 pairs seen"}
    assert ok.passed and not refuted.passed and refuted.symbolic, "a failing engine fails the entry"
    assert silent.passed and silent.checkers["toy-smt"]["passed"] is None, "no evidence is not a failure"
    after = {i: e.sha256 for i, e in zip(before, (ok, refuted, silent), strict=True)}
    assert after == before, "the hash never sees checkers"


def test_a_checker_module_is_discovered_by_its_name(tmp_path, monkeypatch, scratch_checkers):
    """``attnproof/verify/<engine>_checker.py`` registers itself when the verifier first needs it."""
    import attnproof.verify as package

    (tmp_path / "toy_checker.py").write_text(
        "from attnproof.verify.checkers import Verdict, register_checker\n"
        "class Toy:\n    engine, kinds = 'toy', ('bound',)\n    def version(self): return '1'\n"
        "    def check(self, ident, built): return Verdict(None)\n"
        "register_checker(Toy())\n"
    )
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    monkeypatch.setattr(checkers, "_DISCOVERED", set(checkers._DISCOVERED))
    assert "toy" in {c.engine for c in checkers.checkers_for("bound")}


def test_verify_all_reports_each_entry_as_it_goes(scratch_registry):
    registry.identity(id="test/lemma", paper="-", statement="x = x")(lambda: [(x, x)])
    registry.identity(id="test/theorem", paper="-", statement="x = x", uses=["test/lemma"])(lambda: [(x, x)])
    seen = []
    cert = verifier.verify_all(["test/theorem"], progress=lambda e: seen.append(e.id))
    assert seen == ["test/lemma", "test/theorem"] == [e.id for e in cert.entries]


def test_a_cycle_in_uses_is_never_verified(scratch_registry):
    registry.identity(id="test/a", paper="-", statement="x = x", uses=["test/b"])(lambda: [(x, x)])
    registry.identity(id="test/b", paper="-", statement="x = x", uses=["test/a"])(lambda: [(x, x)])
    cert = verifier.verify_all(["test/a"])
    assert all(e.own_passed and not e.passed for e in cert.entries) and not cert.passed
