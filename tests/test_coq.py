"""The Coq leg (issue 20): kernel-checked theorems named after registry IDs.

The source scans, the ID map and the "not run" contract run everywhere; compiling needs ``coqc``
(Debian: ``apt-get install coq libcoq-interval``) and is skipped with that reason without it.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import attnproof  # noqa: F401  (importing the package registers every identity)
from attnproof.verify.registry import REGISTRY
from attnproof.verify import coq_check
from attnproof.verify.coq_check import COQ_DIR, FILES, IDS_BY_FILE, THEOREMS

#: Vernacular that would admit a statement without proof or add an assumption to the context.
#: The files use no Sections, so Hypothesis/Variable would be global assumptions too.
ESCAPE = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Conjecture|Hypothesis|Hypotheses"
                    r"|Variable|Variables|Context)\b")


def _source(name: str) -> str:
    return (COQ_DIR / name).read_text()


def test_every_source_is_listed_once_in_order():
    assert sorted(p.name for p in COQ_DIR.glob("*.v")) == sorted(FILES)
    assert len(set(FILES)) == len(FILES) and set(IDS_BY_FILE) <= set(FILES)


@pytest.mark.parametrize("name", FILES)
def test_no_admitted_admit_axiom_or_parameter(name):
    hits = [(n + 1, line) for n, line in enumerate(_source(name).splitlines()) if ESCAPE.search(line)]
    assert not hits, f"{name}: {hits}"


def test_every_id_is_registered_and_named_after_its_id():
    assert len(THEOREMS) >= 12
    for registry_id, (name, theorem) in THEOREMS.items():
        assert registry_id in REGISTRY, f"{registry_id} is not a registry ID"
        assert theorem == registry_id.replace("/", "__").replace(".", "_").replace("-", "_")
        text = _source(name)
        assert re.search(rf"^Theorem {re.escape(theorem)}\b", text, re.M), f"{theorem} not in {name}"
        # the comment just above the theorem names the registry statement it formalizes
        above = text[: text.index(f"Theorem {theorem}")]
        comment = above[above.rindex("(*"):]
        assert registry_id in comment, f"{theorem}: the comment above it does not name {registry_id}"
        # and the file's header table maps the ID to the theorem
        assert re.search(rf"{re.escape(registry_id)}\s*\|\s*{re.escape(theorem)}\b", text), registry_id


def test_not_run_without_coqc(tmp_path):
    results = coq_check.check(coqc=str(tmp_path / "no-such-coqc"))
    assert set(results) == set(THEOREMS)
    for r in results.values():
        assert r.status == coq_check.NOT_RUN and not r.passed and not r.checker()["passed"]
        assert "apt-get install coq" in r.detail
        assert r.sha256 == coq_check.sha256(COQ_DIR / r.file)


def test_sources_hash_covers_the_imported_files():
    assert coq_check.dependencies("Tolerance.v") == ("Defs.v", "Lipschitz.v", "Tolerance.v")
    assert coq_check.dependencies("Defs.v") == ("Defs.v",)
    assert coq_check.dependencies("Multihead.v") == ("Defs.v", "Softmax.v", "Multihead.v")
    assert all("Defs.v" in coq_check.dependencies(f) for f in FILES)
    assert len({coq_check.sources_sha256(f) for f in FILES}) == len(FILES)


def test_parse_assumptions():
    assert coq_check.parse_assumptions("Closed under the global context\n") == ()
    text = (
        "Axioms:\nUint63.tail0_spec\n  : forall x : PrimInt63.int,\n    BinInt.Z.lt x\n"
        "PrimInt63.int : Set\nClassicalDedekindReals.sig_not_dec : forall P : Prop, {~ ~ P} + {~ P}\n"
    )
    assert coq_check.parse_assumptions(text) == (
        "ClassicalDedekindReals.sig_not_dec", "PrimInt63.int", "Uint63.tail0_spec",
    )
    with pytest.raises(ValueError):
        coq_check.parse_assumptions("Error: The reference foo was not found")


def test_an_unlisted_axiom_fails_the_theorem():
    """A theorem resting on an axiom outside the allowed set is failed, not passed."""
    reals = ("ClassicalDedekindReals.sig_not_dec",)
    runs = {
        name: coq_check.FileRun(
            name, True, 1.0, assumptions={coq_check.theorem_name(i): reals for i in IDS_BY_FILE.get(name, ())}
        )
        for name in FILES
    }
    victim = "thm4.1/softmax-to-sigmoid"
    runs["Softmax.v"].assumptions[THEOREMS[victim][1]] = ("Softmax.sneaky", "Uint63.add_spec")
    results = coq_check.verdicts(runs, "test")
    assert results[victim].status == coq_check.FAILED and "Softmax.sneaky" in results[victim].detail
    assert all(r.passed for i, r in results.items() if i != victim)


# --- with coqc -----------------------------------------------------------------------------

requires_coqc = pytest.mark.skipif(
    coq_check.find_coqc() is None,
    reason="coqc not installed (Debian: apt-get install coq libcoq-interval): the Coq leg did not run",
)


@pytest.fixture(scope="module")
def coq_runs(tmp_path_factory):
    """Every file compiled once, with every theorem's Print Assumptions (about 45 s of CPU)."""
    coqc = coq_check.find_coqc()
    runs = coq_check.compile_files(coqc, tmp_path_factory.mktemp("coq"))
    return runs, coq_check.verdicts(runs, coq_check.coq_version(coqc))


@requires_coqc
def test_every_theorem_is_kernel_checked(coq_runs):
    runs, results = coq_runs
    for run in runs.values():
        assert run.compiled, f"{run.name}: {run.message}"
        print(f"{run.name}: coqc {run.compile_seconds:.1f} s, "
              f"Print Assumptions {run.assumptions_seconds:.1f} s")
    failed = {i: r.detail for i, r in results.items() if not r.passed}
    assert not failed
    for r in results.values():
        entry = r.checker()
        assert entry["passed"] and entry["version"] and entry["seconds"] > 0
        assert entry["file"] == r.file and entry["theorem"] == r.theorem and len(entry["sha256"]) == 64


@requires_coqc
def test_assumptions_are_the_classical_reals_and_interval_primitives(coq_runs):
    _, results = coq_runs
    standard = coq_check.ALLOWED_AXIOMS - {"Classical_Prop.classic"}  # Coq's Reals alone
    for i, r in results.items():
        assert not coq_check.disallowed(r.assumptions), (i, r.assumptions)
        if r.file in ("Softmax.v", "Relu.v", "Multihead.v"):  # Coq's Reals only: no Coquelicot, no Interval
            assert set(r.assumptions) <= standard, (i, r.assumptions)
    # the query count is a statement about naturals: no axiom at all; the others use the reals'
    assert results["thm4.1/query-count"].assumptions == ()
    assert all(r.assumptions for i, r in results.items() if i != "thm4.1/query-count")
    # only the interval proofs use the primitive-integer specifications
    assert any(a.startswith("Uint63.") for a in results["lemmaA.1/lipschitz-bound"].assumptions)
    assert not any(a.startswith("Uint63.") for a in results["lemmaA.1/lipschitz-closed-form"].assumptions)


#: Non-vacuity controls: (file, exact text in a theorem's statement, a changed constant that makes
#: the statement false).  Each mutated copy must fail to compile.
CONTROLS = (
    ("Softmax.v", "= d + d ^ 2\n", "= d + d ^ 2 + 1\n"),
    ("Lipschitz.v", "4.2552519304127615704 <= lipschitz band_corrected",
     "4.2552519304127615706 <= lipschitz band_corrected"),
)


@requires_coqc
@pytest.mark.parametrize(("name", "old", "new"), CONTROLS, ids=[c[0] for c in CONTROLS])
def test_a_changed_constant_fails_to_compile(tmp_path, name, old, new):
    text = _source(name)
    assert text.count(old) == 1
    (tmp_path / name).write_text(text.replace(old, new))
    proc = subprocess.run(
        [shutil.which("coqc"), "-q", "-Q", ".", coq_check.LOGICAL_PATH, name],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    # the unmutated file compiles (test_every_theorem_is_kernel_checked): the failure is the constant's
    assert proc.returncode != 0 and "Error" in proc.stdout + proc.stderr


def test_the_id_map_is_read_from_the_headers(tmp_path, monkeypatch):
    """verify/ names no result (issue 19): the IDs come from each file's header table, a row whose
    theorem is not named after its ID is refused, and a file without a table formalizes nothing."""
    from attnproof.errors import AttnproofError

    assert {i for ids in IDS_BY_FILE.values() for i in ids} == set(THEOREMS)
    assert all(coq_check.header_ids(f) == IDS_BY_FILE.get(f, ()) for f in FILES)
    monkeypatch.setattr(coq_check, "COQ_DIR", tmp_path)
    (tmp_path / "A.v").write_text("(* Registry ID | Coq theorem\n   thm9.9/x-y | thm9_9__x_y\n*)\n")
    (tmp_path / "B.v").write_text("(* Registry ID | Coq theorem\n   thm9.9/x-y | thm9_9__other\n*)\n")
    (tmp_path / "C.v").write_text("(* shared definitions | none *)\nDefinition f := 1.\n")
    assert coq_check.header_ids("A.v") == ("thm9.9/x-y",)
    with pytest.raises(AttnproofError, match="not named after the ID"):
        coq_check.header_ids("B.v")
    assert coq_check.header_ids("C.v") == ()
