"""The certificate as a reader gets it: badges that fit a column, typeset assumptions, an anchor
and a BibTeX citation per identity, and a LaTeX certificate that compiles."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

import attnproof  # noqa: F401  (importing the package registers every identity)
import attnproof.verify as package
from attnproof.cli import main as cli_main
from attnproof.verify import REGISTRY, Certificate, Entry, Identity, content_hash
from attnproof.verify.render import display_math, latex_escape, typeset

PDFLATEX = shutil.which("pdflatex")
needs_pdflatex = pytest.mark.skipif(
    PDFLATEX is None, reason="pdflatex is not installed (Debian: apt-get install texlive-latex-base)"
)
PDFTOTEXT = shutil.which("pdftotext")
needs_pdftotext = pytest.mark.skipif(
    PDFTOTEXT is None, reason="pdftotext is not installed (Debian: apt-get install poppler-utils)"
)


def unverified(ident: Identity) -> Entry:
    """An entry of ``ident`` as rendered, without running its (slow) proof: what the renderers
    see of every registered statement, paper reference and assumption."""
    return Entry(id=ident.id, kind=ident.kind, paper=ident.paper, statement=ident.statement,
                 assumptions=ident.assumptions, uses=list(ident.uses), pairs=1, symbolic=True,
                 numeric_max_err=0.0, own_passed=True, passed=True, seconds=0.0,
                 sha256=content_hash(ident, []), scope=ident.scope)


@pytest.fixture(scope="module")
def every_entry() -> Certificate:
    return Certificate([unverified(i) for i in REGISTRY.values()], {"attnproof": "test"},
                       "2026-01-01T00:00:00+00:00", 0.0)


def pdflatex(tex: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    (workdir / "doc.tex").write_text(tex)
    return subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=workdir, capture_output=True, text=True, timeout=300)


def balanced(tex: str) -> bool:
    """Braces, \\left/\\right and \\begin/\\end pair up in ``tex``."""
    tex = re.sub(r"\\[{}]", "", tex)
    return (tex.count("{") == tex.count("}")
            and len(re.findall(r"\\left(?![A-Za-z])", tex)) == len(re.findall(r"\\right(?![A-Za-z])", tex))
            and tex.count("\\begin{") == tex.count("\\end{"))


@pytest.mark.parametrize("ident", sorted(REGISTRY))
def test_a_statement_is_broken_only_between_whole_groups(ident):
    statement = REGISTRY[ident].statement
    shown = display_math(statement)
    if shown == statement:
        return
    body = shown.removeprefix("\\begin{gathered}\n").removesuffix("\n\\end{gathered}")
    lines = body.split(" \\\\\n")
    assert len(lines) >= 2
    for line in lines:
        assert balanced(line), f"{ident}: a line break splits a group: {line}"


def test_a_short_statement_is_left_alone_and_a_long_one_is_broken():
    assert display_math(r"a = b,\quad c = d") == r"a = b,\quad c = d"
    long = r",\ ".join(rf"x_{{{k}}} = \frac{{{k}}}{{y + {k}}}" for k in range(12))
    shown = display_math(long)
    assert shown.startswith("\\begin{gathered}") and shown.count("\\\\") >= 2


def test_assumptions_are_typeset_and_code_is_left_alone():
    for ident in REGISTRY.values():
        shown = re.sub(r"`[^`]*`", "", typeset(ident.assumptions))
        for ascii_op in (">=", "<=", "!=", "->"):
            assert ascii_op not in shown, f"{ident.id}: {ascii_op!r} left in {shown!r}"
    assert typeset("mu >= 2 and `eps_W >= mu`") == "μ ≥ 2 and `eps_W >= mu`"


def test_each_badge_has_an_anchor_and_a_bibtex_citation(every_entry):
    for e in every_entry.entries:
        md = e.to_markdown("9.9", 2030)
        assert f'<span id="{e.id}"></span>' in md
        bib = re.search(r"```bibtex\n(@misc\{[^,\s]+,.*?\n\})\n```", md, re.S)
        assert bib, f"{e.id}: no BibTeX block"
        assert e.sha256 in bib[1] and "attnproof 9.9" in bib[1] and "year = {2030}" in bib[1]
        assert bib[1].count("{") == bib[1].count("}"), f"{e.id}: unbalanced BibTeX"


def test_the_markdown_certificate_keeps_every_identity(every_entry):
    md = every_entry.to_markdown()
    assert md.count("\n# ") + md.startswith("# ") == 1, "one title"
    for e in every_entry.entries:
        assert f"| `{e.id}` |" in md and f'id="{e.id}"' in md
    assert every_entry.identities_markdown().splitlines()[0].count("|") - 1 <= 5, "a narrow table"


@needs_pdflatex
def test_latex_escape_prints_every_special_character(tmp_path):
    specials = "\\{}$&#_%~^<>|…—"
    boxes = "\n".join(
        rf"\sbox0{{{latex_escape(ch)}}}\typeout{{WIDTH {ord(ch)} \the\wd0}}" for ch in specials
    )
    tex = ("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\begin{document}\n"
           + boxes + "\n\\end{document}\n")
    r = pdflatex(tex, tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    widths = dict(re.findall(r"WIDTH (\d+) ([\d.]+)pt", r.stdout))
    assert set(widths) == {str(ord(ch)) for ch in specials}
    assert all(float(w) > 0 for w in widths.values()), widths


@needs_pdflatex
def test_every_statement_compiles_in_the_latex_certificate(every_entry, tmp_path):
    tricky = replace(every_entry.entries[0], paper="Thm 6.1, case v*_i = 0 & 100% {sic} #1 ~ $x$",
                     assumptions="a_i >= 0 \\ b^2")
    cert = replace(every_entry, entries=[tricky, *every_entry.entries])
    r = pdflatex(cert.to_latex(), tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 10_000


@needs_pdflatex
@needs_pdftotext
def test_every_id_and_full_hash_survives_pdftotext(every_entry, tmp_path):
    """Issue 18: the table fits the page (no overfull box), and every ID and every full SHA-256
    reads back intact from the PDF (no ligature eats the "ffi" of ``thm4.1/label-affine``, no hash
    is cut at the margin); every identity's BibTeX entry is printed, with the paper's and this
    software's."""
    r = pdflatex(every_entry.to_latex(), tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    overfull = re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", (tmp_path / "doc.log").read_text())
    assert all(float(w) < 2.0 for w in overfull), overfull
    subprocess.run([PDFTOTEXT, "doc.pdf", "doc.txt"], cwd=tmp_path, check=True, timeout=120)
    text = (tmp_path / "doc.txt").read_text()
    assert "thm4.1/label-affine" in text
    for e in every_entry.entries:
        assert e.id in text, e.id
        assert e.sha256 in text, f"{e.id}: SHA-256 {e.sha256} not intact in the PDF's text"
        assert e.bibtex("test", 2026).splitlines()[0] in text, f"{e.id}: no BibTeX entry"
    assert "@article{bhattamishra2026provably," in text and "@software{attnproof," in text


@needs_pdflatex
def test_the_cli_certificate_compiles(tmp_path, monkeypatch):
    ids = ["thm6.1/erratum-E1", "thm4.1/softmax-to-sigmoid"]  # "v*_i" in its paper reference broke it
    verify_all = package.verify_all
    monkeypatch.setattr(package, "verify_all", lambda progress=None: verify_all(ids, progress=progress))
    written = []  # the ledger beside it (tests/test_ledger.py covers the ledger's write itself)
    monkeypatch.setattr(package, "write", lambda out, cert, progress=None: written.append((out, cert)))
    assert cli_main(["verify", "--out", str(tmp_path)]) == 0
    assert [str(out) for out, _ in written] == [str(tmp_path)]
    assert sorted(e.id for e in written[0][1].entries) == sorted(ids)
    tex = (tmp_path / "certificate.tex").read_text()
    assert "v*\\_i" in tex
    r = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "certificate.tex"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]


def test_verify_says_what_it_does_on_stderr_and_keeps_json_on_stdout(monkeypatch, capsys):
    """Issue 18: a line per identity and per learner as each ends, and the total, on stderr."""
    ids = ["thm4.1/one-token", "thm4.1/softmax-to-sigmoid"]
    verify_all = package.verify_all
    monkeypatch.setattr(package, "verify_all", lambda progress=None: verify_all(ids, progress=progress))
    assert cli_main(["verify", "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    lines = err.splitlines()
    assert len(lines) == len(doc["identities"]) + len(doc["learners"]) + 1
    for k, e in enumerate(doc["identities"]):
        assert lines[k].startswith(f"verify [{k + 1}/{len(REGISTRY)}] {e['id']}: ok ("), lines[k]
        assert set(e["checkers"]) == {"sympy", "mpmath", "z3", "cvc5", "coq"}
    assert lines[-1].startswith(f"verify: all {len(ids)} identities and ")
    assert cli_main(["verify", "--json", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
