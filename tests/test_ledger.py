"""The verification ledger (attnproof.verify): coverage of the paper, links that resolve, status
computed from what ran, the pytest outcome recorder, and ``attnproof ledger``'s outputs."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import tomllib

import pytest

from attnproof import verify as L
from attnproof.errors import AttnproofError
from attnproof.verify import cli, evidence
from attnproof.verify import ledger as ledger_module
from attnproof.verify import outcomes as recorded
from attnproof.verify import verify_all

#: Cheap identities used by the synthetic ledgers below.
IDS = ("thm4.1/softmax-to-sigmoid", "thm4.1/one-token")
#: Real, quick tests of the suite (so node-ID validation sees them).
PASSING = "tests/test_layers.py::test_no_import_cycle"
OTHER = "tests/test_layers.py::test_the_checker_sees_a_planted_violation"
XFAIL = "tests/test_lowrank.py::test_open_rank_cut_below_rank_tol_escapes_the_bound"


@pytest.fixture(scope="module")
def cert():
    return verify_all(IDS)


def claim(id, *checks, depends=(), **kw):
    return L.Claim(id, "test", "result", f"claim {id}", "intro", tuple(checks), tuple(depends), **kw)


def outcomes(**by_node):
    return L.Outcomes(dict(by_node), commit="c0ffee", created="now", source="synthetic")


def statuses(ledger):
    return {c.claim.id: c.status for c in ledger.claims}


# --- coverage ----------------------------------------------------------------------------


def test_every_numbered_result_of_the_paper_is_a_claim():
    """Issue 12: Def. 2.1, Thm 4.1, Sec. 4.1, Thm 5.1, Thm A.2, Thm 6.1, Lemma A.1, Prop 7.1,
    Thm B.1, Assumption C.1, Prop C.2 and the App. C conjecture, with each result's query count."""
    ids = {c.id for c in L.CLAIMS}
    numbered = {"def2.1", "thm4.1", "sec4.1", "thm5.1", "thmA.2", "thm6.1", "lemmaA.1", "prop7.1",
                "thmB.1", "assumptionC.1", "propC.2", "appC/conjecture"}
    assert numbered <= ids, sorted(numbered - ids)
    counted = {c.id.split("/")[0] for c in L.CLAIMS if c.kind == "query count"}
    assert {"thm4.1", "sec4.1", "thm5.1", "thm6.1", "thmB.1", "propC.2"} <= counted
    assert {c.id for c in L.CLAIMS if c.kind == "probability"} >= {"thm4.1/gaussian-probes", "thmB.1/eq15"}
    assert len(ids) == len(L.CLAIMS), "claim IDs are unique"


def test_every_claim_has_two_independent_kinds_of_check_or_a_reason():
    for c in L.CLAIMS:
        kinds = {L.parse_check(s).kind for s in c.checks} & set(L.INDEPENDENT_KINDS)
        assert len(kinds) >= 2 or c.reason, f"{c.id}: only {sorted(kinds)} and no reason"


def test_every_link_resolves_and_every_dependency_is_a_claim():
    ids = {c.id for c in L.CLAIMS}
    for c in L.CLAIMS:
        assert set(c.depends) <= ids, c.id
        assert c.chapter in {"intro", "exact", "transformer", "lowrank", "noisy", "multihead", "membership"}
    for e in L.ERRATA:
        assert e.claim in ids and e.corrected in ids and e.checks, e.id
    L.check_node_ids(L.linked_node_ids())  # every linked node ID is collected by pytest


def test_erratum_e1_is_ledger_data_with_its_strict_xfail_witness():
    e1 = next(e for e in L.ERRATA if e.id == "E1")
    assert e1.claim == "thm6.1" and "xfail:tests/test_noisy.py::test_theorem_6_1_as_stated" in e1.checks


def test_a_claim_registered_later_is_evaluated_and_an_id_is_never_registered_twice(cert, monkeypatch):
    """The registration API a room will use to declare its own claims next to its learner."""
    from attnproof.verify import claims as registered

    monkeypatch.setattr(registered, "CLAIMS", list(registered.CLAIMS))
    monkeypatch.setattr(ledger_module, "CLAIMS", registered.CLAIMS)
    new = registered.register_claim(claim("test/new", "id:" + IDS[0]))
    assert registered.CLAIMS[-1] is new
    with pytest.raises(AttnproofError, match="twice"):
        registered.register_claim(claim("test/new"))
    with pytest.raises(AttnproofError, match="twice"):
        registered.register_erratum(L.ERRATA[0])
    ledger = L.evaluate(cert, outcomes(), claims=L.closure(["test/new"]), errata=())
    assert statuses(ledger) == {"test/new": "verified"}


# --- links that do not resolve -----------------------------------------------------------


@pytest.mark.parametrize("spec", ["id:thm4.1/no-such-identity", "learner:nope", "bench:nope d=2",
                                  "test:not/a/node", "bench:exact d", "proof:thm4.1"])
def test_a_bad_link_is_an_error(spec):
    with pytest.raises(AttnproofError):
        L.parse_check(spec)


def test_an_unknown_identity_in_a_claim_fails_the_evaluation(cert):
    with pytest.raises(AttnproofError, match="unknown identity"):
        L.evaluate(cert, outcomes(), claims=[claim("a", "id:thm4.1/no-such-identity")], errata=())


def test_a_registered_identity_outside_the_certificate_is_not_run(cert):
    """``verify --out`` may write the ledger of a certificate of selected IDs: the others are not
    run in it, so the claims linking them are not verified."""
    absent = "thm4.1/label-affine"
    ledger = L.evaluate(cert, outcomes(), claims=[claim("a", "id:" + IDS[0], "id:" + absent)], errata=())
    result = ledger.claim("a")
    assert [c.outcome for c in result.checks] == ["passed", "not run"]
    assert result.status != "verified"


def test_a_missing_node_id_is_detected(cert):
    missing = "tests/test_layers.py::test_that_does_not_exist"
    with pytest.raises(AttnproofError, match="test_that_does_not_exist"):
        L.check_node_ids([PASSING, missing])
    with pytest.raises(AttnproofError, match="do not exist"):
        L.evaluate(cert, outcomes(), claims=[claim("a", "id:" + IDS[0], "test:" + missing)], errata=())


# --- status is computed ------------------------------------------------------------------


def two_claims():
    return [claim("a", "id:" + IDS[0], "test:" + PASSING),
            claim("b", "id:" + IDS[1], "test:" + OTHER, depends=("a",))]


def test_all_checks_passed_means_verified_through_dependencies(cert):
    got = outcomes(**{PASSING: "passed", OTHER: "passed"})
    ledger = L.evaluate(cert, got, claims=two_claims(), errata=())
    assert statuses(ledger) == {"a": "verified", "b": "verified"} and ledger.passed


def test_a_failing_test_fails_its_claim_and_blocks_its_dependents(cert):
    got = outcomes(**{PASSING: "failed", OTHER: "passed"})
    ledger = L.evaluate(cert, got, claims=two_claims(), errata=())
    assert statuses(ledger) == {"a": "failed", "b": "unverified dependency"}
    assert ledger.claim("b").blocking == ["a"] and not ledger.passed


def test_a_failing_identity_fails_its_claim(cert):
    broken = dataclasses.replace(cert.entry(IDS[0]), passed=False, own_passed=False)
    bad = dataclasses.replace(cert, entries=[broken, cert.entry(IDS[1])])
    ledger = L.evaluate(bad, outcomes(**{PASSING: "passed", OTHER: "passed"}), claims=two_claims(), errata=())
    assert statuses(ledger) == {"a": "failed", "b": "unverified dependency"}
    assert ledger.claim("a").blocking == ["id:" + IDS[0]]


def test_a_test_with_no_recorded_outcome_is_not_run_never_passed(cert):
    for got in (outcomes(**{OTHER: "passed"}), outcomes(**{PASSING: "skipped", OTHER: "passed"}), None):
        ledger = L.evaluate(cert, got, claims=two_claims(), errata=())
        assert statuses(ledger)["a"] == "not run" and not ledger.passed


def test_parameters_count_as_one_test_failed_if_any_failed():
    got = outcomes(**{PASSING + "[1]": "passed", PASSING + "[2]": "failed", OTHER + "[x]": "passed"})
    assert got.outcome(PASSING) == "failed" and got.outcome(OTHER) == "passed"
    assert got.outcome("tests/test_layers.py::test_no") == "not run"  # a prefix is not a match


def test_open_not_implemented_and_erratum_statuses(cert):
    claims = [claim("stated", "id:" + IDS[0], "test:" + PASSING),
              claim("fixed", "id:" + IDS[1], "test:" + OTHER),
              claim("conj", "id:" + IDS[1], depends=("fixed",), open=True),
              claim("cited", reason="not computed"),
              claim("uses-cited", "id:" + IDS[0], "test:" + PASSING, depends=("cited",))]
    errata = [L.Erratum("E9", "stated", "erratum", "s", "c", "f", "r", ("xfail:" + XFAIL,), "fixed")]
    good = outcomes(**{PASSING: "passed", OTHER: "passed", XFAIL: "xfailed"})
    ledger = L.evaluate(cert, good, claims=claims, errata=errata)
    assert statuses(ledger) == {"stated": "erratum", "fixed": "verified", "conj": "open",
                                "cited": "not yet implemented", "uses-cited": "unverified dependency"}
    assert ledger.passed and ledger.errata[0].witnessed and ledger.errata[0].correction_status == "verified"
    assert "correction `fixed`: verified" in ledger.to_markdown()
    # the correction fails: the erratum's claim is no longer as it should be
    ledger = L.evaluate(cert, outcomes(**{PASSING: "passed", OTHER: "failed", XFAIL: "xfailed"}),
                        claims=claims, errata=errata)
    assert statuses(ledger)["stated"] == "erratum" and ledger.claim("fixed").status == "failed"
    assert not ledger.passed
    # the counterexample stops reproducing (a strict xfail that passes is recorded as failed)
    ledger = L.evaluate(cert, outcomes(**{PASSING: "passed", OTHER: "passed", XFAIL: "failed"}),
                        claims=claims, errata=errata)
    assert not ledger.errata[0].witnessed and not ledger.passed


def test_a_dependency_cycle_is_an_error(cert):
    claims = [claim("a", "id:" + IDS[0], depends=("b",)), claim("b", "id:" + IDS[1], depends=("a",))]
    with pytest.raises(AttnproofError, match="cycle"):
        L.evaluate(cert, outcomes(), claims=claims, errata=())


def test_a_benchmark_check_is_measured_and_can_fail():
    ok = evidence.bench_evidence(L.parse_check("bench:exact d=3"), None)
    assert ok.passed and ok.kind == "benchmark" and "12 queries" in ok.detail
    high = L.parse_check("bench:exact d=3 arith=mp:50")
    assert high.kind == "run" and evidence.bench_evidence(high, None).passed
    # no error is 0.0 in float64
    strict = evidence.bench_evidence(L.parse_check("bench:lowrank-cvx d=4 rank=1 tol=0"), None)
    assert not strict.passed and strict.outcome == "failed"


# --- the outcome recorder, in a real pytest run ------------------------------------------


def test_outcomes_come_from_an_actual_pytest_run(tmp_path):
    path = tmp_path / "results.json"
    got = L.run_tests([PASSING, XFAIL], path)
    assert got.outcome(PASSING) == "passed" and got.outcome(XFAIL) == "xfailed"
    assert got.outcome(OTHER) == "not run"
    head = subprocess.run(["git", "-C", str(recorded.ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    assert got.commit == head.stdout.strip() and got.created
    assert json.loads(path.read_text())["tests"] == got.tests


# --- attnproof ledger -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full_cert(full_certificate):
    """One verification of every identity (the suite's shared one), read by the CLI tests below."""
    assert set(L.linked_identities()) <= {e.id for e in full_certificate.entries}
    return full_certificate


@pytest.fixture
def real_results(tmp_path, full_cert, monkeypatch):
    """A results file in the recorder's format marking every linked test as it is expected to
    end (passed, or xfailed for an erratum's witness): exercises the output paths, not the suite."""
    monkeypatch.setattr(ledger_module, "verify_all", lambda ids, progress=None: full_cert)
    expected = {}
    for spec in [s for c in L.CLAIMS for s in c.checks] + [s for e in L.ERRATA for s in e.checks]:
        check = L.parse_check(spec)
        if check.kind == "property":
            expected[check.target] = dict(check.options)["expect"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"commit": "c0ffee", "created": "now", "tests": expected}))
    return path, expected


def test_main_json(real_results, capsys):
    path, _ = real_results
    assert cli.main(["--json", "--results", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["id"] for c in data["claims"]} == {c.id for c in L.CLAIMS}
    by_id = {c["id"]: c for c in data["claims"]}
    assert by_id["thm6.1"]["status"] == "erratum" and by_id["thm6.1"]["correction"] == "thm6.1/corrected"
    assert by_id["appC/conjecture"]["status"] == "open" and by_id["def2.1"]["status"] == "not yet implemented"
    assert sum(data["summary"]["statuses"].values()) == len(L.CLAIMS)
    assert data["summary"]["passed"] and data["tests"]["commit"] == "c0ffee"


def test_main_says_what_it_does_on_stderr_as_it_goes(real_results, capsys):
    """Issue 18: a line per measured check and per claim as each ends, and the total at the end,
    all on stderr (stdout is the JSON, unchanged); --quiet silences them."""
    path, _ = real_results
    assert cli.main(["--json", "--results", str(path)]) == 0
    out, err = capsys.readouterr()
    json.loads(out)
    lines = err.splitlines()
    for c in L.CLAIMS:
        assert any(line.startswith(f"claim {c.id}: ") for line in lines), c.id
    benches = {s for c in L.CLAIMS for s in c.checks if s.startswith("bench:")}
    assert sum(line.startswith(("benchmark ", "run ")) for line in lines) == len(benches)
    assert lines[-1].startswith(f"ledger: {len(L.CLAIMS)} claims, ") and "as it should be: yes" in lines[-1]
    assert cli.main(["--json", "--quiet", "--results", str(path)]) == 0
    assert capsys.readouterr().err == ""


def test_linked_tests_are_reported_as_they_end(tmp_path):
    seen = []
    got = L.run_tests([PASSING, XFAIL], tmp_path / "r.json", progress=seen.append)
    assert got.outcome(PASSING) == "passed"
    assert [line.split()[0] for line in seen] == [PASSING, XFAIL]
    assert "PASSED" in seen[0] and "XFAIL" in seen[1]


def test_main_text_and_a_failed_check_exits_1(real_results, capsys, tmp_path):
    path, expected = real_results
    assert cli.main(["--results", str(path), "--errata"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n| `") == len(L.CLAIMS) and "### E1 (erratum)" in out
    failed = dict(expected, **{"tests/test_exact.py::test_sympy_recovery_is_exact": "failed"})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tests": failed}))
    assert cli.main(["--results", str(bad)]) == 1
    assert "| `thm4.1` |" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--bogus"], ["--results"], ["--results", "/nonexistent/results.json"],
                                  ["--run-tests", "--results", "x.json"]])
def test_main_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        code = cli.main(argv)
        raise SystemExit(code)
    assert exc.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_write_puts_ledger_files_beside_the_certificate(real_results, full_cert, tmp_path):
    path, _ = real_results
    ledger = L.write(tmp_path / "cert", full_cert, outcomes=L.Outcomes.load(path))
    assert json.loads((tmp_path / "cert" / "ledger.json").read_text())["summary"] == ledger.summary()
    assert "## Errata" in (tmp_path / "cert" / "ledger.md").read_text()


def test_citation_cff_cites_this_version_and_the_paper():
    yaml = pytest.importorskip("yaml")
    root = recorded.ROOT
    cff = yaml.safe_load((root / "CITATION.cff").read_text())
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    assert cff["cff-version"] == "1.2.0" and cff["version"] == version
    paper = cff["preferred-citation"]
    assert "2601.16873" in paper["url"] and paper == cff["references"][0]
    readme = (root / "README.md").read_text()  # the README names the same authors, in order
    names = [a["family-names"] for a in paper["authors"]]
    assert ", ".join(names) in readme


def test_every_strict_xfail_naming_an_erratum_is_its_linked_witness():
    """The errata page splits the strict xfails into errata witnesses and open library issues."""
    witnesses = {L.parse_check(s).target for e in L.ERRATA for s in e.checks if s.startswith("xfail:")}
    found = L.strict_xfails()
    assert witnesses <= {node for node, _ in found}
    for node, reason in found:
        assert ("Erratum" in reason) == (node in witnesses), node


def test_the_map_places_every_claim_right_of_what_it_depends_on():
    results = [L.ClaimResult(c, [], status="verified") for c in L.CLAIMS]
    ledger = L.Ledger(results, [], {}, "", 0.0)
    pos, lanes = L.layout(ledger)
    assert all(pos[d][0] < pos[c.id][0] for c in L.CLAIMS for d in c.depends)
    assert len(set(pos.values())) == len(pos), "no two boxes on one spot"
    assert set(lanes) == {c.chapter for c in L.CLAIMS}
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ax = L.draw(ledger)
    assert {t.get_text() for t in ax.texts} >= {c.id for c in L.CLAIMS}
