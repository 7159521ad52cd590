"""The SMT leg (issue 20): registry statements proved by z3 and cvc5, perturbations refuted.

The default run proves a sample covering every encoding (exp atoms and their instances, the
congruence guards, ite, roots, inverses, sin/cos and pi, MatrixSymbols at fixed sizes, bounds)
with both solvers and refutes each one's perturbation; the ``slow`` sweep does so for every
entry of the registry (about five minutes on 2 cores).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import sympy as sp

from attnproof.verify import smt

SAMPLE = [
    "thm4.1/softmax-to-sigmoid",      # exp atoms, the additive instance, inverses
    "lemmaA.1/lipschitz-closed-form",  # exp(-b) exp(b) = 1
    "sec3/qkv-merge",                  # atoms equal after expansion: congruence guards
    "sec4.1/relu-as-abs",              # Abs / Max as ite
    "bias/score-expansion",            # sqrt(2) as r >= 0, r^2 = 2
    "thmB.1/halfspace-mean-d2",        # sin, cos and pi
    "thm4.1/probes-all-d",             # MatrixSymbols entrywise at d = 2, 3
    "thm4.1/query-count",              # a positive integer symbol
    "thm6.1/tolerance-algebra",        # a bound: q >= 0
    "thmB.1/ratio-bound",              # a bound with rational functions
]


@pytest.fixture(scope="module")
def sample() -> dict[str, smt.EntryResult]:
    reg = smt.registry()
    return {i: smt.check_entry(reg[i]) for i in SAMPLE}


@pytest.mark.parametrize("id", SAMPLE)
def test_sample_proved_by_both_solvers(sample, id):
    res = sample[id]
    assert not res.unsupported
    assert set(res.reports) == set(smt.ENGINES)
    for engine, rep in res.reports.items():
        assert rep.passed, f"{engine}: {rep.detail}"
        assert rep.version and rep.seconds >= 0 and "unsat" in rep.detail


@pytest.mark.parametrize("id", SAMPLE)
def test_sample_perturbation_refuted_by_both(sample, id):
    what, answers = smt.perturb(sample[id])
    assert {e: a.answer for e, a in answers.items()} == {e: "sat" for e in smt.ENGINES}, what


def test_summary_and_checkers(sample):
    results = list(sample.values())
    summ = smt.summary(results)
    for e in smt.ENGINES:
        assert summ[e]["entries"] == summ[e]["passed"] == len(SAMPLE) and not summ[e]["not proved"]
    checkers = sample["thm4.1/softmax-to-sigmoid"].checkers()
    assert set(checkers) == set(smt.ENGINES)
    assert set(checkers["z3"]) == {"passed", "seconds", "version", "detail"}


def test_matrix_statement_says_it_is_checked_at_fixed_sizes(sample):
    detail = sample["thm4.1/probes-all-d"].reports["z3"].detail
    assert "MatrixSymbol of symbolic size" in detail and "2 and 3" in detail


def _fake(kind: str, items: list) -> SimpleNamespace:
    return SimpleNamespace(id="planted", kind=kind, build=lambda: items)


def test_planted_false_identity_fails_with_a_counterexample():
    a, b = sp.symbols("a b", real=True)
    wrong = (sp.exp(a) / (sp.exp(a) + sp.exp(b)), 1 / (1 + sp.exp(a - b)))  # the sign of a - b is wrong
    res = smt.check_entry(_fake("identity", [wrong]))
    for engine, rep in res.reports.items():
        assert not rep.passed, engine
        assert "pair 1: sat" in rep.detail
    assert "exp_0 =" in res.reports["z3"].counterexample  # a model of the exp atoms


def test_planted_false_bound_fails():
    x = sp.Symbol("x", real=True)
    res = smt.check_entry(_fake("bound", [("x^2 - x >= 0", x**2 - x)]))
    assert not any(rep.passed for rep in res.reports.values())


def test_true_bound_with_a_hypothesis_is_proved():
    x = sp.Symbol("x", nonnegative=True)
    res = smt.check_entry(_fake("bound", [("x^2 + x >= 0", x**2 + x)]))
    assert res.passed


def test_relu_ite_is_exact():
    z = sp.Symbol("z", real=True)
    ok = smt.check_entry(_fake("identity", [(sp.Max(z, 0) - sp.Max(-z, 0), z)]))
    bad = smt.check_entry(_fake("identity", [(sp.Max(z, 0) + sp.Max(-z, 0), z)]))
    assert ok.passed and not any(r.passed for r in bad.reports.values())


def test_without_the_additive_instance_the_sigmoid_form_is_not_proved():
    """Non-vacuity of the exp encoding: exp(a - b) not related to exp(a), exp(b) gives a model."""
    a, b = sp.symbols("a b", real=True)
    enc = smt.Encoder()
    neg = smt.Goal("g", sp.exp(a) / (sp.exp(a) + sp.exp(b)), 1 / (1 + sp.exp(b - a))).negation(enc)
    text = "\n".join(["(set-logic QF_NRA)", *enc.decls.values(), *(f"(assert {f})" for f in enc.facts),
                      f"(assert {neg})", "(check-sat)"])
    for engine in smt.ENGINES:
        assert smt.solve(engine, text).answer == "sat"


@pytest.mark.parametrize("expr, why", [
    (sp.Float(0.5) * sp.Symbol("x", real=True), "float constant"),
    (sp.Symbol("x", positive=True) ** sp.Symbol("y", real=True), "non-rational exponent"),
    (sp.log(sp.Symbol("x", positive=True)), "no SMT encoding of log"),
])
def test_unencodable_statements_state_why(expr, why):
    with pytest.raises(smt.UnsupportedError, match=why):
        smt.Encoder().term(expr)


def test_interval_bounds_and_runs_state_why_they_are_not_smt_checked():
    reg = smt.registry()
    for id in ("lemmaA.1/lipschitz-bound", "thmB.1/accuracy-algebra"):
        res = smt.check_entry(reg[id])
        assert "all " in res.unsupported and "mpmath.iv interval enclosures" in res.unsupported
        assert "Arb leg" in res.unsupported
        assert all(c["detail"].startswith("not run: ") and not c["passed"] for c in res.checkers().values())
    mixed = smt.check_entry(reg["thmB.1/apriori-interval"])  # its sympy claims are SMT-checked
    assert mixed.passed and all("claim 1: sigma(t)" in r.detail and "not SMT-checked" in r.detail
                                for r in mixed.reports.values())
    run = next(i for i in reg.values() if i.kind == "run")
    assert "a run" in smt.check_entry(run).unsupported


@pytest.mark.slow
def test_every_entry_proved_or_a_specific_reason():
    """The whole registry: no solver ever finds a counterexample to a registered statement (a
    ``sat`` would be a disagreement with sympy: a finding); a statement a solver does not prove
    is an ``unknown`` within its limit, said so in the detail; at least 90 % of the identities are
    proved by z3; every entry's perturbation comes back ``sat`` from both."""
    reg = smt.registry()
    results = [smt.check_entry(i) for i in reg.values()]
    for res in results:
        if res.unsupported:
            assert res.kind != "identity" and len(res.unsupported) > 40, res.unsupported
            continue
        for engine, rep in res.reports.items():
            assert rep.passed or ": unknown" in rep.detail, (res.id, engine, rep.detail, rep.counterexample)
        what, answers = smt.perturb(res)
        assert all(a.answer == "sat" for a in answers.values()), (res.id, what, answers)
    identities = [r for r in results if r.kind == "identity"]
    assert sum(r.reports["z3"].passed for r in identities) >= 0.9 * len(identities)
