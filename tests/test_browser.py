"""Every page of the built book, as a reader's browser shows it: headless Chromium at 1280 px,
offline (any request that is not a local file fails the test), math typeset by the local
MathJax, collapsed boxes opened. Nothing in a page's main content may be wider than its column:
no element scrolls sideways (but a table's own scroll container, so that a wide table scrolls as
a whole) and none sticks out of the article. No number in a table is broken across lines, and
no Markdown table rendered as a paragraph of ``|``-separated text.

Needs the ``playwright`` Python package and a system Chromium (``/usr/bin/chromium``); no browser
is ever downloaded. Skips, saying which is missing, where either is absent.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from test_book import pages  # the pages the book's table of contents lists

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (pip install playwright)"
)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
WIDTH = 1280

#: Elements of the article that must fit its column: the article itself, code and outputs,
#: tables and their scroll containers, display maths, figures, admonitions.
CONTAINERS = ("article.bd-article, article.bd-article :is(pre, div.highlight, div.cell_output, div.output, "
              "table, .pst-scrollable-table-container, div.math, mjx-container[display='true'], img, figure, "
              ".admonition, details)")

OVERFLOWS = r"""(selector) => {
  const article = document.querySelector("article.bd-article");
  const column = article.getBoundingClientRect();
  const found = [];
  for (const el of document.querySelectorAll(selector)) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;  // not displayed
    const container = el.classList.contains("pst-scrollable-table-container");  // a wide table scrolls here
    if (!container && el.closest(".pst-scrollable-table-container")) continue;  // scrolled with it, not cut
    const scrolls = !container && el.scrollWidth > el.clientWidth + 1
                    && getComputedStyle(el).display !== "inline";
    const sticksOut = box.right > column.right + 1 || box.left < column.left - 1;
    if (scrolls || sticksOut) {
      found.push(`<${el.tagName.toLowerCase()} class="${el.getAttribute("class") || ""}"> ` +
                 `scrollWidth ${el.scrollWidth} > clientWidth ${el.clientWidth} ` +
                 `or right ${Math.round(box.right)} > column ${Math.round(column.right)}: ` +
                 (el.innerText || el.alt || "").replace(/[\uD800-\uDFFF]/g, "")
                   .replace(/\s+/g, " ").slice(0, 80));
    }
  }
  return found;
}"""


#: A table cell that is one number (1024, -3, 0.25, 1.5e-13, 6.4e+04, 1,049,600, 12.5 %): the pattern
#: the book's own script uses to keep such a cell on one line (book/_static/numbers.js).
NUMBER = re.search(r"const NUMBER = /(.*)/;", (Path(__file__).resolve().parent.parent
                                               / "book/_static/numbers.js").read_text())[1]

BROKEN_NUMBERS = r"""(pattern) => {
  const number = new RegExp(pattern);
  const found = [];
  for (const cell of document.querySelectorAll("article.bd-article :is(td, th)")) {
    const text = cell.innerText.trim();
    if (!number.test(text)) continue;
    const tops = [];  // the top of each line box of the cell's text (element boxes, e.g. a <p>, left out)
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) {
        if (r.width > 0 && !tops.some(t => Math.abs(t - r.top) < r.height / 2)) tops.push(r.top);
      }
    }
    if (tops.length > 1) found.push(`the number ${text} is broken across ${tops.length} lines`);
  }
  return found;
}"""

#: A Markdown table that did not parse (an unescaped ``|`` in a cell or a header) is a paragraph
#: of ``| a | b |`` lines (a paragraph inside a table cell is a cell, not a broken table: a cell
#: may well start with a norm, ``||W*||_F``).
PIPE_PARAGRAPHS = r"""() => [...document.querySelectorAll("article.bd-article p")]
  .filter(p => !p.closest("table"))
  .map(p => p.innerText.trim())
  .filter(t => /^\|.*\|.*\|/.test(t))
  .map(t => `a Markdown table rendered as a paragraph: ${t.replace(/\s+/g, " ").slice(0, 80)}`)"""


def layout_problems(page) -> list[str]:
    """Everything wrong with the layout of an open page (empty when nothing is)."""
    return (page.evaluate(OVERFLOWS, CONTAINERS) + page.evaluate(BROKEN_NUMBERS, NUMBER)
            + page.evaluate(PIPE_PARAGRAPHS))


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def open_page(browser, path: Path, width: int = WIDTH):
    """``path`` loaded offline at ``width`` px, maths typeset, every collapsed box opened."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    remote: list[str] = []
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
               else (remote.append(route.request.url), route.abort()))
    page.goto(path.as_uri(), wait_until="load")
    if page.evaluate("() => !!document.querySelector('script[src*=mathjax]')"):  # pages with maths
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("MathJax.startup.promise")
    page.evaluate("""() => {
      document.querySelectorAll("details").forEach(d => d.open = true);
      document.querySelectorAll(".toggle-hidden").forEach(e => e.classList.remove("toggle-hidden"));
      document.querySelectorAll(".dropdown").forEach(e => e.classList.add("toggle-shown"));
    }""")
    page.wait_for_timeout(200)
    return page, remote


@pytest.mark.book
def test_nothing_is_wider_than_the_column_at_1280_px(html, browser):
    problems = {}
    listed = pages(html)
    for path in listed:
        page, remote = open_page(browser, path)
        found = layout_problems(page)
        if remote:
            found.append(f"requested from the network: {remote[:3]}")
        if found:
            problems[path.name] = found
        page.close()
    assert len(listed) >= 10
    assert not problems, "\n".join(f"{name}:\n  " + "\n  ".join(f[:12]) for name, f in problems.items())


@pytest.mark.book
def test_the_layout_check_catches_a_wide_element(html, browser):
    page, _ = open_page(browser, html / "intro.html")
    page.evaluate("""() => {
      const pre = document.createElement("pre");
      pre.style.whiteSpace = "pre";
      pre.textContent = "x".repeat(400);
      document.querySelector("article.bd-article").appendChild(pre);
    }""")
    assert page.evaluate(OVERFLOWS, CONTAINERS), "a 400-character unwrapped line was not reported"
    page.close()


@pytest.mark.book
def test_the_layout_check_catches_a_broken_number_and_a_table_that_did_not_parse(html, browser):
    page, _ = open_page(browser, html / "intro.html")
    assert not page.evaluate(BROKEN_NUMBERS, NUMBER) and not page.evaluate(PIPE_PARAGRAPHS)
    page.evaluate("""() => {
      const article = document.querySelector("article.bd-article");
      const table = document.createElement("table");
      const narrow = "width: 2ch; max-width: 2ch; overflow-wrap: anywhere";
      table.innerHTML = `<tr><td style="${narrow}">1049600</td></tr>`;
      article.appendChild(table);
      const p = document.createElement("p");
      p.textContent = "| bound / ||W*|| | queries | |---|---| | 1.5e-13 | 20 |";
      article.appendChild(p);
      const cells = document.createElement("table");  // a cell that starts with a norm is fine
      cells.innerHTML = "<tr><td><p>||W*||_F <= W: 0 >= 0</p></td></tr>";
      article.appendChild(cells);
    }""")
    broken = page.evaluate(BROKEN_NUMBERS, NUMBER)
    assert len(broken) == 1 and broken[0].startswith("the number 1049600 is broken across"), broken
    assert len(page.evaluate(PIPE_PARAGRAPHS)) == 1
    page.close()


def test_the_number_pattern_matches_numbers_only():
    for text in ("1024", "-3", "0.25", "1.5e-13", "6.4e+04", "1,049,600", "12.5 %", "\u22121e-06", ".5"):
        assert re.match(NUMBER, text), text
    for text in ("d = 1024", "thm4.1/one-token", "1.5e-13 .. 2e-2", "yes", "0cb49204297c", "102 4"):
        assert not re.match(NUMBER, text), text


@pytest.mark.book
def test_a_wide_table_may_scroll_in_its_container_but_not_outside_it(html, browser):
    page, _ = open_page(browser, html / "intro.html")
    page.evaluate("""() => {
      const box = document.createElement("div");
      box.className = "pst-scrollable-table-container";
      box.innerHTML = "<table><tr><td>" + "x".repeat(400) + "</td></tr></table>";
      document.querySelector("article.bd-article").appendChild(box);
    }""")
    assert not page.evaluate(OVERFLOWS, CONTAINERS), "a table scrolling in its own container was reported"
    page.evaluate("""() => {
      const table = document.createElement("table");
      table.innerHTML = "<tr><td>" + "x".repeat(400) + "</td></tr>";
      document.querySelector("article.bd-article").appendChild(table);
    }""")
    assert page.evaluate(OVERFLOWS, CONTAINERS), "a table wider than the column, outside a container, passed"
    page.close()
