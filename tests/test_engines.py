"""The second engines behind the checker seam (issue 20): z3, cvc5, Arb and Coq in every entry's
``checkers``, their verdict cache, and the strength (who checked what) of entries and claims."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from attnproof.verify import checkers as C
from attnproof.verify import coq_check, graph
from attnproof.verify.certificate import Entry, _kernel_checked, _run_checker, verify
from attnproof.verify.checkers import Verdict
from attnproof.verify.claims import Claim
from attnproof.verify.evidence import CheckResult
from attnproof.verify.ledger import ClaimResult
from attnproof.verify.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
SECOND = ("z3", "cvc5", "coq")


# --- the whole certificate (the suite's shared verification) ------------------------------------


def test_every_entry_carries_the_engines_that_apply(full_certificate):
    for e in full_certificate.entries:
        want = {"learner-run"} if e.kind == "run" else {"sympy", "mpmath", *SECOND} | (
            {"arb"} if e.kind == "bound" else set())
        assert set(e.checkers) == want, e.id
        for name, v in e.checkers.items():
            assert {"passed", "seconds", "version", "detail"} <= set(v), (e.id, name)
            if v["passed"] is None:  # an engine without a verdict always says why
                assert v["detail"].startswith(("not run: ", "no verdict: ")), (e.id, name, v["detail"])


def test_coq_entries_name_file_theorem_and_hash(full_certificate):
    for i, (file, theorem) in coq_check.THEOREMS.items():
        v = full_certificate.entry(i).checkers["coq"]
        assert (v["file"], v["theorem"]) == (file, theorem)
        assert v["sha256"] == coq_check.sha256(coq_check.COQ_DIR / file)
        assert v["sources_sha256"] == coq_check.sources_sha256(file)
        if coq_check.find_coqc() is None:
            assert v["passed"] is None and "apt-get install coq" in v["detail"]


def test_no_engine_disagrees(full_certificate):
    """Arb's finding on thm6.1/design-tolerances (a float64 band product) is fixed: no engine
    refutes any entry."""
    assert not _refuted(full_certificate)


def _refuted(cert) -> list[tuple[str, str]]:
    return [(e.id, k) for e in cert.entries for k, v in e.checkers.items() if v["passed"] is False]


def test_two_engines_check_most_identities(full_certificate):
    identities = [e for e in full_certificate.entries if e.kind == "identity"]
    two = [e for e in identities
           if len([k for k in e.passed_engines if k in graph.PROOF_ENGINES]) >= 2]
    assert len(two) >= 0.9 * len(identities), sorted({e.id for e in identities} - {e.id for e in two})


def test_kernel_checked_entries(full_certificate):
    kernel = [e.id for e in full_certificate.entries if e.strength == graph.KERNEL_CHECKED]
    if coq_check.find_coqc() is None:
        assert not kernel
    else:
        assert len(kernel) >= 12
    for i in kernel:
        e = full_certificate.entry(i)
        assert e.checkers["coq"]["passed"] is True
        assert all(full_certificate.entry(u).strength == graph.KERNEL_CHECKED for u in e.uses)


def test_certificate_counts_engines_and_strengths(full_certificate):
    d = full_certificate.as_dict()
    assert set(d["engines"]) == {"sympy", "mpmath", "learner-run", "z3", "cvc5", "arb", "coq"}
    for name, row in d["engines"].items():
        assert row["checked"] == row["passed"] + row["failed"]
        assert row["checked"] + row["not run"] == sum(name in e.checkers for e in full_certificate.entries)
    assert sum(d["strengths"].values()) == sum(e.passed for e in full_certificate.entries)
    assert "Engines: " in full_certificate.summary() and "z3 " in full_certificate.summary()


# --- planted verdicts ---------------------------------------------------------------------------


class _Stub:
    """A checker with a fixed verdict, counting its runs."""

    def __init__(self, engine: str, kinds: tuple[str, ...], verdict: Verdict, version: str = "1") -> None:
        self.engine, self.kinds, self.verdict, self._version, self.runs = engine, kinds, verdict, version, 0

    def version(self) -> str:
        return self._version

    def cache_key(self, ident, digest: str) -> str:
        return digest

    def check(self, ident, built) -> Verdict:
        self.runs += 1
        return self.verdict


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    """The second engines replaced by stubs (passed by default), with an empty cache."""
    monkeypatch.setenv(C.CACHE_ENV, str(tmp_path / "cache"))
    C.discover()
    stubs = {}
    for kind in ("identity", "bound"):
        for engine in (*SECOND, "arb"):
            if (kind, engine) in C.CHECKERS:
                stubs.setdefault(engine, _Stub(engine, ("identity", "bound"), Verdict(True, "stub")))
                monkeypatch.setitem(C.CHECKERS, (kind, engine), stubs[engine])
    return stubs


ID = "sec4.1/relu-as-abs"


def test_a_failing_smt_verdict_fails_the_entry(stubbed):
    assert verify(ID).own_passed
    stubbed["z3"].verdict = Verdict(False, "pair 1: sat (not proved)")
    stubbed["z3"].cache_key = lambda ident, digest: digest + ":planted"
    e = verify(ID)
    assert not e.own_passed and e.checkers["z3"]["passed"] is False


def test_not_run_never_counts_as_passed(stubbed, monkeypatch):
    for s in stubbed.values():
        s.verdict = Verdict(None, "not run: stub")
    e = verify(ID)
    assert e.own_passed  # sympy and mpmath still pass it
    assert set(e.passed_engines) == {"sympy", "mpmath"}
    assert graph.strength(e.passed_engines, kernel=True) == graph.ONE_ENGINE
    for engine in ("sympy", "mpmath"):  # with no engine passing, nothing passes
        stub = _Stub(engine, ("identity",), Verdict(None, "not run: stub"))
        monkeypatch.setitem(C.CHECKERS, ("identity", engine), stub)
    assert not verify(ID).own_passed


def test_the_cache_is_keyed_by_hash_and_version(monkeypatch, tmp_path):
    monkeypatch.setenv(C.CACHE_ENV, str(tmp_path))
    stub, ident = _Stub("z3", ("identity",), Verdict(True, "proved")), REGISTRY[ID]
    first, v = _run_checker(stub, ident, [], "a" * 64)
    again, cached = _run_checker(stub, ident, [], "a" * 64)
    assert stub.runs == 1 and cached is None and again["cached"] and again["passed"] is True
    assert "cached" not in first and first["detail"] == again["detail"]
    _run_checker(stub, ident, [], "b" * 64)  # a changed statement hash: computed again
    assert stub.runs == 2
    stub._version = "2"  # a new engine version: computed again
    _run_checker(stub, ident, [], "a" * 64)
    assert stub.runs == 3
    monkeypatch.setenv(C.CACHE_ENV, "off")
    _run_checker(stub, ident, [], "a" * 64)
    assert stub.runs == 4


def test_smt_verdicts_map_to_passed_failed_or_not_run(monkeypatch):
    from attnproof.verify import smt, smt_checker

    def result(**kw):
        return lambda ident, engines, timeout: smt.EntryResult("x", "identity", **kw)

    rep = lambda passed, cex="": {"z3": smt.EngineReport(passed, 0.1, "v", "pair 1: ...", cex)}  # noqa: E731
    cases = [(result(reports=rep(True)), True), (result(reports=rep(False, "[x = 1]")), False),
             (result(reports=rep(False)), None), (result(unsupported="float constant"), None)]
    for fake, want in cases:
        monkeypatch.setattr(smt, "check_entry", fake)
        v = smt_checker.Z3.check(REGISTRY[ID], [])
        assert v.passed is want
        assert want is not None or v.detail.startswith(("not run: ", "no verdict: "))


# --- strength -----------------------------------------------------------------------------------


def _entry(id: str, engines: dict[str, bool | None], uses: list[str] = ()) -> Entry:
    records = {k: {"passed": p, "seconds": 0.0, "version": "", "detail": ""} for k, p in engines.items()}
    return Entry(id, "identity", "", "", "", list(uses), 1, True, 0.0, True, True, 0.0, "0" * 64,
                 checkers=records)


def test_kernel_checked_needs_every_use_kernel_checked():
    es = {"a": _entry("a", {"coq": True, "sympy": True}),
          "b": _entry("b", {"coq": True, "sympy": True}, ["a"]),
          "c": _entry("c", {"coq": None, "sympy": True, "z3": True}),
          "d": _entry("d", {"coq": True}, ["c"])}
    k = _kernel_checked(es)
    assert k == {"a": True, "b": True, "c": False, "d": False}
    assert [graph.strength(es[i].passed_engines, k[i]) for i in "abcd"] == [
        graph.KERNEL_CHECKED, graph.KERNEL_CHECKED, graph.TWO_ENGINES, graph.ONE_ENGINE]
    assert graph.strength(["mpmath", "learner-run"], False) == graph.MEASURED


def test_claim_strength_is_its_weakest_entry():
    claim = Claim("x", "Thm 1", "result", "s", "exact", ("id:a", "id:b", "test:tests/t.py::t"))
    checks = [CheckResult("id:a", "identity", "passed", True, "", graph.KERNEL_CHECKED),
              CheckResult("id:b", "identity", "passed", True, "", graph.TWO_ENGINES),
              CheckResult("test:tests/t.py::t", "property", "passed", True)]
    r = ClaimResult(claim, checks, status=graph.VERIFIED)
    assert r.strength == graph.TWO_ENGINES and r.as_dict()["strength"] == graph.TWO_ENGINES
    assert ClaimResult(claim, checks[2:], status=graph.VERIFIED).strength == graph.MEASURED
    assert ClaimResult(claim, checks, status=graph.FAILED).strength == ""


def test_entry_bibtex_lists_the_checkers():
    e = _entry("a", {"sympy": True, "z3": True, "cvc5": None})
    e.strength = graph.TWO_ENGINES
    bib = e.bibtex("0.1")
    assert "two engines; checked by sympy" in bib and "z3" in bib and "cvc5" not in bib


# --- dev.py --------------------------------------------------------------------------------------


def test_dev_says_when_the_coq_leg_does_not_run(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    assert "Coq not installed" in dev.coq_leg()
    out = capsys.readouterr().out
    assert "Coq leg will NOT run" in out and "apt-get install coq libcoq-interval" in out


# --- the statement-fidelity chapter (book/fidelity.md) -----------------------------------------


def test_fidelity_page_cells_run_and_show_every_coq_theorem(full_certificate, monkeypatch):
    """The chapter's cells, run here instead of building the book (with the suite's certificate
    in place of the chapter's own ``verify_all`` of the Coq IDs)."""
    import re

    import IPython.display

    import attnproof.verify
    from attnproof.verify import coq_checker

    page = (ROOT / "book/fidelity.md").read_text()
    cells = re.findall(r"```\{code-cell\} ipython3\n(?::tags:[^\n]*\n)?(.*?)```", page, re.S)
    assert cells and "file: fidelity" in (ROOT / "book/_toc.yml").read_text()
    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    monkeypatch.setattr(attnproof.verify, "verify_all", lambda ids: full_certificate)
    for cell in cells:
        exec(cell, {})
    text = "".join(m.data for m in shown)
    assert text == coq_checker.fidelity_markdown(full_certificate)
    for i, (file, theorem) in coq_check.THEOREMS.items():
        assert f"### `{i}`" in text and f"`{file}`, `{theorem}`" in text
        assert f"Theorem {theorem}" in text and REGISTRY[i].paper in text
