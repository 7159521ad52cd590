"""The book builds with every cell executed (through the execution cache), reads as a book
(tables are tables, every identity ID links to its certificate entry, numbers in the prose come
from cells), and its math renders without a network.

The ``html`` fixture (``conftest.py``, one build per session, shared with ``test_browser.py``)
builds into ``book/_build``, the location both ``dev.py`` commands build into before pytest runs,
so all share jupyter-book's execution cache: an unchanged book is not executed twice.
"""

from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path

import pytest

from helpers import BOOK, build

import attnproof  # noqa: F401  (importing the package registers every identity)
from attnproof.verify.registry import REGISTRY

def pages(html: Path) -> list[Path]:
    """Every page the table of contents lists: the root and the links of the navigation."""
    index = (html / "intro.html").read_text()
    nav = index[index.index("bd-links"):]
    hrefs = re.findall(r'<a class="reference internal" href="([^"#]+\.html)"', nav[: nav.index("</nav>")])
    return [html / "intro.html", *dict.fromkeys(html / h for h in hrefs)]


def text_of(fragment: str) -> str:
    """The text of an HTML fragment, tags as spaces, whitespace collapsed."""
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)))


def code_of(fragment: str) -> str:
    """The text of highlighted code in an HTML fragment (tags dropped: tokens stay joined)."""
    return unescape(re.sub(r"<[^>]+>", "", fragment))


def stream_outputs(page: str) -> list[str]:
    """The printed (stdout) outputs of a page's cells, as text."""
    pattern = r'<div class="output stream[^"]*">\s*<div class="highlight"><pre>(.*?)</pre>'
    blocks = re.findall(pattern, page, re.S)
    return [unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks]


def looks_like_a_table(text: str) -> bool:
    """Printed text that is a table: two lines of columns aligned with runs of spaces, or three
    lines of the same shape (the same words, other numbers)."""
    lines = [line for line in text.splitlines() if line.strip()]
    padded = [line for line in lines if len(re.findall(r"\S {2,}(?=\S)", line.strip())) >= 2]
    shapes = [re.sub(r"[-+]?\d[\d.e+-]*", "#", line).split() for line in lines]
    same = max((shapes.count(s) for s in shapes), default=0)
    return len(padded) >= 2 or same >= 3


def test_the_table_detector_tells_tables_from_messages():
    table = "design     tau   err\npaper   1.0e-3  0.83\ntuned   2.0e-3  0.01\n"
    rows = "entries ~ 1e-60: 72 queries\nentries ~ 1e-06: 72 queries\nentries ~ 1e+03: 80 queries\n"
    message = "refused: query budget of 5 exhausted\nqueries answered: 4\n"
    assert looks_like_a_table(table) and looks_like_a_table(rows) and not looks_like_a_table(message)


@pytest.mark.book
def test_every_page_is_built_without_a_traceback(html):
    listed = pages(html)
    assert len(listed) >= 10 and html / "status.html" in listed and html / "howto.html" in listed
    for page in listed:
        assert "Traceback" not in page.read_text(), f"{page.name} shows a traceback"


@pytest.mark.book
def test_no_chapter_prints_a_table(html):
    for page in pages(html):
        for out in stream_outputs(page.read_text()):
            assert not looks_like_a_table(out), f"{page.name} prints a table as text:\n{out[:500]}"


@pytest.mark.book
def test_cells_were_executed_and_the_prose_takes_their_numbers(html):
    exact = text_of((html / "exact.html").read_text())
    m = re.search(r"The learner asked (\d+) queries \(.*?=\\\) (\d+) ?; the oracle counted (\d+) ?\), "
                  r"and its error (\S+) lies below the bound it reports, ([\d.e+-]+?) ?\.", exact)
    assert m, "the glued sentence about the d = 8 recovery is missing"
    assert m[1] == m[2] == m[3] and float(m[4]) <= float(m[5])
    assert re.search(r"1024 1049600", exact), "the d = 1024 benchmark row is missing"
    assert "refused: PrecisionLossError" in exact and "recovered" in exact  # the supported range
    assert "NonIdentifiableError" in exact and "PrecisionLossError" in exact
    noisy = text_of((html / "noisy.html").read_text())
    assert "VIOLATED" in noisy and "Erratum E1" in noisy  # the erratum is shown, computed
    assert "Why 160 here and 80 in the badge below" in noisy
    beta = re.search(r"\\beta\^\\star \\approx\\\) (\d\.\d+)", noisy)
    from attnproof.theorems.noisy import BETA_STAR
    assert beta and abs(float(beta[1]) - BETA_STAR) < 1e-4, "beta* in the prose is not the computed one"
    lowrank = text_of((html / "lowrank.html").read_text())
    heads = re.search(r"The (\d+) heads took (\d+) s", lowrank)
    from attnproof.heads import minilm_heads  # one head of each layer: head l of layer l
    layers = {layer for layer, _head, _model in minilm_heads()}
    assert heads and int(heads[1]) == len(layers) == 6, "the all-MiniLM-L6-v2 sentence is missing"
    assert "smallest ratio with every seed recovered" in lowrank
    assert len(list((html / "_images").glob("*.png"))) >= 4


@pytest.mark.book
def test_no_glue_key_is_left_unresolved(html):
    for page in pages(html):
        assert "{glue" not in page.read_text(), f"{page.name} shows an unresolved glue role"


@pytest.mark.book
def test_every_identity_id_in_the_book_links_to_its_certificate_anchor(html):
    cert = (html / "certificate.html").read_text()
    for ident in REGISTRY:
        assert f'id="{ident}"' in cert, f"the certificate has no anchor for {ident}"
    linked = 0
    for page in pages(html):
        text = re.sub(r"<summary>.*?</summary>", "", page.read_text())  # a Cite box's label: raw HTML
        for a, code in re.findall(r"(<a\b[^>]*>)?<code\b[^>]*>(.*?)</code>", text, re.S):
            ident = text_of(code).strip()
            if ident in REGISTRY:
                target = "" if page.name == "certificate.html" else "certificate.html"
                assert f'href="{target}#{ident}"' in a, f"{page.name}: `{ident}` is not a link to its anchor"
                linked += 1
    assert linked >= len(REGISTRY)


@pytest.mark.book
def test_the_certificate_page_reads_as_one_page_with_a_citation_per_identity(html):
    cert = (html / "certificate.html").read_text()
    article = cert[cert.index('<article class="bd-article">'):]
    assert len(re.findall(r"<h1\b", article[: article.index("</article>")])) == 1, "more than one H1"
    toc = re.search(r'<nav [^>]*class="page-toc"[^>]*>(.*?)</nav>', cert, re.S)
    assert toc and "<li" in toc[1], "the certificate page's Contents panel is empty"
    text, code = text_of(cert), code_of(cert)
    for ident in REGISTRY:
        assert f"@misc{{attnproof:{re.sub(r'[^A-Za-z0-9.:-]', '-', ident)}," in code, f"no BibTeX for {ident}"
    assert "✗ NOT verified" not in text
    assert cert.count('class="highlight-bibtex') >= len(REGISTRY)  # a copy button each


@pytest.mark.book
def test_front_matter_and_status_pages(html):
    intro = (html / "intro.html").read_text()
    assert 'href="https://arxiv.org/abs/2601.16873"' in intro
    assert "@article{bhattamishra2026provably" in code_of(intro) and "@software{attnproof" in code_of(intro)
    status = text_of((html / "status.html").read_text())
    for page in pages(html):
        name = page.stem
        if "kernelspec:" in (BOOK / f"{name}.md").read_text():  # a notebook (plain pages do not run)
            assert re.search(rf"\b{re.escape(name)}\b.*?(✅|❌)", status), f"{name} is not on the status page"
    for chapter in ("exact", "transformer", "lowrank", "noisy", "multihead", "membership"):
        assert "literalinclude" not in (page := (html / f"{chapter}.html").read_text())
        assert re.search(r"Source: <code[^>]*>.*?learn_", page, re.S), f"{chapter} shows no learner's code"


@pytest.mark.book
def test_an_unchanged_book_is_not_executed_again(html):
    r, seconds = build(BOOK)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "Executing notebook" not in r.stdout + r.stderr, "an unchanged chapter was executed again"
    print(f"cached rebuild: {seconds:.1f} s")


@pytest.mark.book
def test_a_failing_cell_fails_the_build(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    for name in ("_config.yml", "_ext"):
        (shutil.copytree if (BOOK / name).is_dir() else shutil.copy)(BOOK / name, book / name)
    (book / "_toc.yml").write_text("format: jb-book\nroot: broken\n")
    header = (BOOK / "certificate.md").read_text().split("---\n")[1]
    cell = "```{code-cell} ipython3\n1 / 0\n```\n"
    (book / "broken.md").write_text(f"---\n{header}---\n\n# Broken\n\n{cell}")
    r, _ = build(book)
    assert r.returncode != 0 and "ZeroDivisionError" in r.stdout + r.stderr


@pytest.mark.book
def test_math_is_served_locally(html):
    for page in html.glob("*.html"):
        text = page.read_text()
        for src in re.findall(r'<script[^>]*\bsrc="([^"]+)"', text):
            assert not src.startswith(("http:", "https:", "//")), f"{page.name} loads {src} from the network"
        for href in re.findall(r'<link[^>]*\bhref="([^"]+\.(?:css|js|woff2?))"', text):
            assert not href.startswith(("http:", "https:", "//")), (
                f"{page.name} loads {href} from the network"
            )
    assert re.search(r'src="_static/mathjax/tex-chtml\.js(\?v=\w+)?"', (html / "exact.html").read_text())
    assert (html / "_static/mathjax/tex-chtml.js").stat().st_size > 100_000
    assert list((html / "_static/mathjax/output/chtml/fonts").rglob("*.woff")), "MathJax fonts are missing"


#: The theorem chapters: each has a section in which Hypothesis draws adversarial targets.
THEOREM_CHAPTERS = ("exact", "transformer", "lowrank", "noisy", "membership", "multihead")
HYPOTHESIS_SECTION = "## Hypothesis draws adversarial targets"


def test_every_theorem_chapter_draws_targets_with_hypothesis_reproducibly():
    """The card: Hypothesis draws targets live in each theorem chapter, from the public
    strategies, derandomized (the page is the same on every build), and links the property
    tests that run the same strategies at full strength."""
    for chapter in THEOREM_CHAPTERS:
        source = (BOOK / f"{chapter}.md").read_text()
        assert HYPOTHESIS_SECTION in source, f"{chapter}.md has no Hypothesis section"
        section = source[source.index(HYPOTHESIS_SECTION):]
        section = section[: section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
        # the shared strategies, or the room's own (theorems/<room>/strategies.py)
        assert "@given(" in section and re.search(
            r"from attnproof(\.theorems\.\w+)? import strategies as \w+", section), chapter
        assert re.search(r"@settings\(derandomize=True, database=None, max_examples=\d+", section), chapter
        assert re.search(r"`tests/test_\w+\.py::test_\w+`", section), f"{chapter}: no property test linked"


def test_every_test_the_book_links_exists():
    """A pytest node ID quoted in a chapter names a test function of that file."""
    tests = Path(__file__).resolve().parent
    quoted = 0
    for page in BOOK.glob("*.md"):
        for path, name in re.findall(r"`tests/(test_\w+\.py)::(test_\w+)`", page.read_text()):
            source = (tests / path).read_text()
            assert re.search(rf"^def {name}\(", source, re.M), f"{page.name}: {path}::{name}"
            quoted += 1
    assert quoted >= 2 * len(THEOREM_CHAPTERS)


def test_markdown_table_escapes_a_pipe_in_a_cell():
    from attnproof.bench import markdown_table

    table = markdown_table([{"a": "‖x‖ | 2", "b": 1}], ["a", "b"])
    assert table.splitlines()[2] == "| ‖x‖ \\| 2 | 1 |"


def test_markdown_table_escapes_a_pipe_in_a_header():
    from attnproof.bench import markdown_table

    table = markdown_table([{"ratio": 0.5}], {"ratio": "bound / ||W*||"})
    assert table.splitlines()[0] == "| bound / \\|\\|W*\\|\\| |"


def test_markdown_table_shows_a_missing_value_as_a_dash_whatever_its_format():
    from attnproof.bench import markdown_table

    table = markdown_table([{"x": None}, {"x": float("nan")}, {"x": 0.5}], ["x"], fmt={"x": "{:.3f}"})
    assert table.splitlines()[2:] == ["| – |", "| – |", "| 0.500 |"]


@pytest.mark.book
def test_each_theorem_chapter_shows_its_drawn_targets(html):
    for chapter in THEOREM_CHAPTERS:
        text = text_of((html / f"{chapter}.html").read_text())
        drawn = re.search(r"(\d+) (?:targets|FFNs) drawn ?, (\d+) per case", text)
        assert drawn and int(drawn[1]) >= 3 * int(drawn[2]) >= 12, f"{chapter}: no table of drawn targets"
        assert "refused:" in text and "within bound" in text, chapter
