"""Renderers, apart from the logic: Markdown, LaTeX and BibTeX for certificates and ledgers,
and the matplotlib map of the claims.

Nothing here decides a status: every function reads a :class:`~attnproof.verify.certificate.
Certificate` (or entry) or a :class:`~attnproof.verify.ledger.Ledger` already computed, and
writes it for a reader (the book, ``attnproof verify --out``, ``attnproof ledger``).  The paper
is Bhattamishra, Shah, Hahn and Kanade, *Provably Learning Attention with Queries*, arXiv
2601.16873 (:data:`PAPER_BIBTEX`).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from .checkers import NUMERIC_DPS
from .registry import LEARNERS, version_of_attnproof

#: What the renderers read: a certificate (:class:`attnproof.verify.certificate.Certificate`) and
#: its entries, a ledger (:class:`attnproof.verify.ledger.Ledger`); both modules import this one,
#: so here they are named, not imported.
Certificate = Entry = Ledger = Any


#: The paper this library implements, and how to cite it.
PAPER_URL = "https://arxiv.org/abs/2601.16873"
PAPER_BIBTEX = """@article{bhattamishra2026provably,
  title = {Provably Learning Attention with Queries},
  author = {Bhattamishra, Satwik and Shah, Kulin and Hahn, Michael and Kanade, Varun},
  journal = {arXiv preprint arXiv:2601.16873},
  year = {2026},
  url = {https://arxiv.org/abs/2601.16873}
}"""


def software_bibtex(version: str | None = None, year: int | None = None) -> str:
    """A BibTeX ``@software`` entry citing this library at ``version`` (default: the installed one)."""
    version = version or version_of_attnproof()
    return (
        f"@software{{attnproof,\n"
        "  title = {attnproof: learning attention with queries, every step proven},\n"
        "  author = {{The attnproof developers}},\n"
        f"  version = {{{version}}},\n"
        f"  year = {{{year or _dt.date.today().year}}},\n"
        "  note = {A reference implementation of Bhattamishra et al., arXiv:2601.16873}\n"
        "}"
    )

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}


def latex_escape(text: str) -> str:
    """``text`` as LaTeX text: every character special to LaTeX escaped, non-ASCII spelled out."""
    out = "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)
    return out.replace("…", r"\dots{}").replace("—", "---").replace("✓", "").replace("✗", "")


#: Where a long statement is broken first (only at the top level): after a comma or semicolon
#: followed by a space, at \quad / \qquad, at a colon followed by a space, at an explicit \\
#: (these separators are dropped, a comma or semicolon kept), and before an implication arrow.
_BREAK = re.compile(
    r"\\\\|[,;]?\s*\\q?quad(?![A-Za-z])|[,;]\\ |(?<=:)\s*\\(?:q?quad(?![A-Za-z])| )"
    r"|(?:\\ )?(?=\\(?:Long)?[Rr]ightarrow(?![A-Za-z]))"
)
#: Where a part still too long is broken: before a relation or a \text{...} of words.
_RELATION = re.compile(r"(?=(?:\\ )?(?:\\(?:le|ge|leq|geq)(?![A-Za-z])|[=<>]|\\text\{\s*[A-Za-z]))")
_OPEN = re.compile(r"\\(?:begin\{[^}]*\}|left(?![A-Za-z]))|\{")
_CLOSE = re.compile(r"\\(?:end\{[^}]*\}|right(?![A-Za-z]))|\}")


def _visual_length(tex: str) -> int:
    """A rough count of the glyphs ``tex`` shows (a command is one glyph, braces none)."""
    return len(re.sub(r"[{}^_\s]", "", re.sub(r"\\[A-Za-z]+|\\.", "x", tex)))


def _split(tex: str, at: re.Pattern[str]) -> list[str]:
    r"""``tex`` cut at the top-level matches of ``at`` (outside braces, parentheses,
    ``\left..\right`` and environments); a matched separator is dropped except its comma or
    semicolon."""
    pieces, start, depth, parens, i = [], 0, 0, 0, 0
    while i < len(tex):
        if (m := _OPEN.match(tex, i)) or (m := _CLOSE.match(tex, i)):
            depth += 1 if m.re is _OPEN else -1
            i = m.end()
        elif tex[i] in "()" and depth == 0:
            parens = parens + 1 if tex[i] == "(" else max(parens - 1, 0)
            i += 1
        elif depth == parens == 0 and i > start and (m := at.match(tex, i)):
            sep = m.group().lstrip()
            pieces.append(tex[start:i] + (sep[:1] if sep[:1] in ",;" else ""))
            start = m.end()  # a lookahead match leaves its text to start the next piece
            i = max(start, i + 1)
        else:
            i += 2 if tex[i] == "\\" else 1
    pieces.append(tex[start:])
    return [p.strip() for p in pieces if p.strip()]


def _pack(pieces: list[str], width: int) -> list[str]:
    """Consecutive pieces joined into lines of at most ``width`` glyphs where they fit."""
    lines: list[str] = []
    for piece in pieces:
        if lines and _visual_length(lines[-1] + piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def display_math(tex: str, width: int = 48) -> str:
    """``tex`` broken into centred lines (``gathered``) of at most about ``width`` glyphs.

    Lines break at the separators of :data:`_BREAK`, and a part still longer than ``width`` at
    the relations of :data:`_RELATION`, never inside a group; a statement that fits, or has
    nowhere to break, is returned unchanged.
    """
    lines: list[str] = []
    for part in _split(tex, _BREAK):
        if _visual_length(part) > width:
            lines += _pack(_split(part, _RELATION), width)
        else:
            lines += _pack([part], width) if not lines else _pack([lines.pop(), part], width)
    if len(lines) == 1:
        return tex
    return "\\begin{gathered}\n" + " \\\\\n".join(lines) + "\n\\end{gathered}"


_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "eps": "ε", "epsilon": "ε",
    "eta": "η", "theta": "θ", "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ",
    "phi": "φ", "psi": "ψ",
}
_TYPESET = [
    (re.compile(r"(?<![A-Za-z0-9])(?<![A-Za-z0-9]{2}_)(" + "|".join(_GREEK) + r")(?![A-Za-z0-9])"),
     lambda m: _GREEK[m.group(1)]),
    (re.compile(r"(?<=[A-Za-zα-ω])_hat\b"), lambda m: "\u0302"),
    (re.compile(r">="), lambda m: "≥"), (re.compile(r"<="), lambda m: "≤"),
    (re.compile(r"!="), lambda m: "≠"), (re.compile(r"->"), lambda m: "→"),
    (re.compile(r"\+-"), lambda m: "±"), (re.compile(r"\boo\b"), lambda m: "∞"),
    (re.compile(r"\bsqrt\b ?"), lambda m: "√"),
    (re.compile(r"(?<=\b[A-Za-z0-9]) x (?=[A-Za-z0-9]\b)"), lambda m: " × "),
    (re.compile(r"\^T\b"), lambda m: "ᵀ"), (re.compile(r"\^2\b"), lambda m: "²"),
    (re.compile(r"\^\{?-1\}?"), lambda m: "⁻¹"),
    (re.compile(r"(?<![A-Za-z0-9_])([A-Za-zα-ωΔ\^*]{1,2})_\{?([A-Za-z0-9α-ω]{1,3}|\{[^}]*\})\}?(?![A-Za-z0-9_])"),
     lambda m: f"{m.group(1)}<sub>{m.group(2).strip('{}')}</sub>"),
]


def typeset(text: str) -> str:
    """Plain-ASCII maths in prose (``mu >= 2``, ``W_ij``, ``x^T``) as typeset text (``μ ≥ 2``,
    W<sub>ij</sub>, xᵀ); code spans in backticks are left alone."""
    parts = text.split("`")
    for k in range(0, len(parts), 2):  # outside backticks
        for pattern, repl in _TYPESET:
            parts[k] = pattern.sub(repl, parts[k])
    return "`".join(parts)



def learner_markdown(name: str) -> str:
    """One line naming the learner ``name``, its result and the identities it relies on (the
    book links every ID to its entry in the certificate)."""
    lr = LEARNERS[name]
    return (f"`{lr.name}` ({lr.result}, {', '.join(lr.arithmetics)}; queries {lr.queries}) relies on "
            + ", ".join(f"`{i}`" for i in lr.relies_on) + ".")



# --- a certificate ---------------------------------------------------------------------

def checked_by(e: Entry) -> str:
    """The engines that passed the entry, with their versions (``sympy 1.13, z3 4.13``), or ``none``."""
    return ", ".join(f"{k} {e.checkers[k].get('version', '')}".strip() for k in e.passed_engines) or "none"


def checkers_line(e: Entry) -> str:
    """Every engine's verdict on the entry in one line: ``sympy ✓, z3 ✓, cvc5 no verdict, coq not run``."""
    def word(v: dict[str, Any]) -> str:
        if v["passed"] is None:
            return "no verdict" if str(v.get("detail", "")).startswith("no verdict") else "not run"
        return "✓" if v["passed"] else "✗"
    return ", ".join(f"{k} {word(v)}" for k, v in e.checkers.items())


def entry_bibtex(e: Entry, version: str, year: int | None = None) -> str:
    """A BibTeX ``@misc`` entry citing this identity (ID, paper reference, version, SHA-256)."""
    key = "attnproof:" + re.sub(r"[^A-Za-z0-9.:-]", "-", e.id)
    return (
        f"@misc{{{key},\n"
        f"  title = {{attnproof identity \\texttt{{{latex_escape(e.id)}}} "
        f"({latex_escape(e.paper)})}},\n"
        "  author = {{The attnproof developers}},\n"
        f"  year = {{{year or _dt.date.today().year}}},\n"
        f"  note = {{Verified with attnproof {version} ({latex_escape(e.strength or 'not verified')}; "
        f"checked by {latex_escape(checked_by(e))}); SHA-256 {e.sha256}; "
        f"after Bhattamishra, Shah, Hahn and Kanade, arXiv:2601.16873}},\n"
        f"  url = {{{PAPER_URL}}}\n"
        "}"
    )


def coq_line(e: Entry) -> str:
    """The Coq theorem behind an entry (file, theorem, the file's SHA-256), or nothing."""
    c = e.checkers.get("coq", {})
    return (f" *Coq:* `{c['theorem']}` in `{c['file']}` (SHA-256 `{str(c.get('sha256', ''))[:16]}…`)."
            if c.get("theorem") else "")


def entry_markdown(e: Entry, version: str, year: int | None = None) -> str:
    """A MyST/Markdown block: an anchor named by the ID, the verification badge, the paper
    reference, the statement (broken into lines that fit a book's column), the typeset
    assumptions, the evidence, and a collapsed one-click citation (BibTeX)."""
    badge = f"✓ verified ({e.strength})" if e.passed else (
        "! own checks pass, a used identity fails" if e.own_passed else "✗ NOT verified"
    )
    uses = ", ".join(f"`{u}`" for u in e.uses) or "nothing"
    done = "yes" if e.symbolic else "no"
    if e.kind == "bound":
        kind, method = ", bound", (
            f"rigorous proof of {e.pairs} claims (sympy's assumptions system or an mpmath interval "
            f"enclosure) ({done}); numeric violation at random points"
        )
    elif e.kind == "run":
        kind, method = ", run", (
            f"the learner run end to end, {e.pairs} checks each within what it allows "
            f"({'yes' if e.own_passed else 'no'}); worst measured / allowed"
        )
    else:
        kind, method = "", (
            f"sympy simplification to 0 ({done}) over {e.pairs} expression pairs; mpmath cross-check "
            f"at {NUMERIC_DPS} digits, max relative disagreement"
        )
    checks = "".join(
        f"| {c['check'].replace('|', chr(92) + '|')} | {c['measured']:.2e} | {c['allowed']:.2e} "
        f"| {'yes' if c['passed'] else 'NO'} |\n"
        for c in e.checks
    )
    if checks:
        checks = ("<details><summary>The run's checks</summary>\n\n"
                  "| check | measured | allowed | within |\n|---|---|---|---|\n"
                  + checks + "\n</details>\n\n")
    return (
        f'<span id="{e.id}"></span>\n\n'
        f"**{badge}** — `{e.id}` ({e.paper}{kind})\n\n"
        f"$$\n{display_math(e.statement)}\n$$\n\n"
        f"*Assumptions:* {typeset(e.assumptions or 'none')}. "
        f"*Scope:* {typeset(e.scope or 'not stated')}. *Uses:* {uses}. "
        f"*Evidence:* {method} {e.numeric_max_err:.1e}; {e.seconds:.2f} s; "
        f"SHA-256 `{e.sha256[:16]}…`\n\n"
        f"*Checkers:* {checkers_line(e)}.{coq_line(e)}\n\n"
        f"{checks}"
        f"<details><summary>Cite <code>{e.id}</code></summary>\n\n"
        f"```bibtex\n{entry_bibtex(e, version, year)}\n```\n\n</details>\n"
    )


def identities_markdown(cert: Certificate) -> str:
    """The identities as one narrow Markdown table: ID, paper, verified, seconds, SHA-256 prefix
    (what each one uses and its evidence are in its badge, :func:`entry_markdown`)."""
    lines = ["| ID | paper | verified | s | SHA-256 (prefix) |", "|---" * 5 + "|"]
    lines += [
        f"| `{e.id}` | {e.paper} | {f'yes ({e.strength})' if e.passed else 'NO'} | {e.seconds:.2f} "
        f"| `{e.sha256[:16]}` |"
        for e in cert.entries
    ]
    return "\n".join(lines) + "\n"


def learners_markdown(cert: Certificate) -> str:
    """The learners as a Markdown list: each one's result, arithmetics and query count, and
    whether it is verified through the identities it relies on (listed)."""
    return "".join(
        f"* `{lr.name}` ({lr.result}; {', '.join(lr.arithmetics)}; queries {lr.queries}): "
        f"**{'verified' if lr.passed else 'NOT verified: ' + ', '.join(lr.failing)}** through "
        f"{', '.join(f'`{u}`' for u in lr.relies_on)}\n"
        for lr in cert.learners
    )


def certificate_summary(cert: Certificate) -> str:
    """One paragraph: when, how many, whether all verified, how long, with which versions."""
    return (
        f"Created {cert.created}; {len(cert.entries)} identities; "
        f"{'all verified' if cert.passed else 'NOT all verified'} in {cert.seconds:.1f} s "
        f"({strengths_text(cert)}). Engines: {engines_text(cert)}. "
        "Versions: " + ", ".join(f"{k} {v}" for k, v in cert.versions.items()) + "."
    )


def strengths_text(cert: Certificate) -> str:
    """``12 kernel-checked, 50 two engines, ...`` (verified entries by strength)."""
    return ", ".join(f"{n} {k}" for k, n in cert.strengths().items()) or "none verified"


def engines_text(cert: Certificate) -> str:
    """Per engine ``z3 60/62 passed`` (passed of the entries it checked; not run and no verdict
    apart), as ``verify``'s closing line and the certificate's summary say it."""
    return "; ".join(
        f"{k} {r['passed']}/{r['checked']} passed" + (f", {r['failed']} FAILED" if r["failed"] else "")
        + (f", {r['not run']} not run or no verdict" if r["not run"] else "")
        for k, r in cert.engines().items()
    )


def certificate_markdown(cert: Certificate) -> str:
    """The whole certificate as one Markdown document (``attnproof verify --out``)."""
    parts = ["# attnproof verification certificate", certificate_summary(cert), identities_markdown(cert)]
    if cert.learners:
        parts += ["## Learners, verified through the identities they rely on", learners_markdown(cert)]
    parts += ["## Every identity", entries_markdown(cert)]
    return "\n\n".join(p.strip("\n") for p in parts) + "\n"


def entries_markdown(cert: Certificate) -> str:
    """In a notebook: each entry's badge block (the book shows certificates this way)."""
    version, year = cert.versions.get("attnproof"), int(cert.created[:4])
    return "\n".join(entry_markdown(e, version or version_of_attnproof(), year) for e in cert.entries)


def _tt(text: str) -> str:
    r"""``text`` (an ID, a hash, a BibTeX line) in the typewriter font: no ligatures (``ffi`` stays
    three letters through ``pdftotext``), escaped, medium weight (a bold tt is substituted by a
    roman font that has ligatures), and breakable only at spaces and after ``/``."""
    return r"\texttt{\mdseries " + latex_escape(text).replace("/", r"/\allowbreak{}") + "}"


def _bibtex_latex(bib: str) -> str:
    """A BibTeX entry as typewriter lines (a long field wraps at its spaces, a hash never)."""
    return (r"\par\noindent{\ttfamily\mdseries\footnotesize\raggedright\hangindent=2em" "\n"
            + " \\\\\n".join(latex_escape(line).replace("  ", r"\ \ ") for line in bib.splitlines())
            + r"\par}\medskip")


def certificate_latex(cert: Certificate) -> str:
    """A standalone LaTeX document (compiles with pdflatex and texlive-latex-base alone): the
    summary, one table row per identity, each statement with its full SHA-256, and the BibTeX
    entries (the paper, this software, every identity); every text field is escaped.

    The table fits the text width (wrapping paper references, never an ID or a hash); IDs,
    hashes and BibTeX are set in the typewriter font, which has no ligatures, so every ID and
    every full hash survives ``pdftotext`` intact (``tests/test_certificate.py`` checks it).
    """
    version, year = cert.versions.get("attnproof") or version_of_attnproof(), int(cert.created[:4])
    rows = [
        rf"{_tt(e.id)} & {latex_escape(e.paper)} & {'yes' if e.passed else 'no'} & "
        rf"{e.seconds:.2f} & {_tt(e.sha256[:16])} \\"
        for e in cert.entries
    ]
    statements = [
        rf"\subsection*{{{_tt(e.id)}}} ({latex_escape(e.paper)}) "
        "\n" rf"\[ {display_math(e.statement)} \]" "\n"
        rf"\noindent\emph{{Assumptions:}} {latex_escape(e.assumptions or 'none')}." "\n"
        rf"\par\noindent SHA-256: {{\small {_tt(e.sha256)}}}"
        for e in cert.entries
    ]
    bibtex = [_bibtex_latex(PAPER_BIBTEX), _bibtex_latex(software_bibtex(version, year))]
    bibtex += [_bibtex_latex(entry_bibtex(e, version, year)) for e in cert.entries]
    return "\n".join([
        r"\documentclass[10pt]{article}",
        r"\usepackage[T1]{fontenc}",
        r"\input{glyphtounicode}\pdfgentounicode=1",
        # prose too, where microtype is installed (texlive-latex-recommended): no ligatures
        r"\IfFileExists{microtype.sty}{\usepackage[expansion=false]{microtype}"
        r"\DisableLigatures{encoding = *, family = *}}{}",
        r"\usepackage[margin=2cm]{geometry}",
        r"\usepackage{amsmath,amssymb,array,longtable}",
        r"\begin{document}",
        r"\section*{attnproof verification certificate}",
        latex_escape(certificate_summary(cert)),
        r"\begingroup\small\setlength{\tabcolsep}{4pt}",
        r"\begin{longtable}{@{}>{\raggedright\arraybackslash}p{0.33\textwidth}"
        r">{\raggedright\arraybackslash}p{0.25\textwidth}crl@{}}",
        r"\hline ID & paper & verified & s & SHA-256 (prefix) \\ \hline \endhead",
        *rows,
        r"\hline \end{longtable}",
        r"\endgroup",
        r"\section*{Statements}",
        *statements,
        r"\section*{Citing}",
        "The paper, this software, and every identity (its ID, paper reference, version and full SHA-256).",
        r"\medskip",
        *bibtex,
        r"\end{document}",
    ]) + "\n"


# --- a ledger ----------------------------------------------------------------------------

def status_text(ledger: Ledger, c: Any) -> str:
    """A claim's status in words: a verified claim says its strength, an erratum names its
    correction's status, a blocked claim what blocks it."""
    if c.status == "verified" and c.strength:
        return f"verified ({c.strength})"
    if c.status == "erratum":
        fixed = ledger.claim(c.correction).status
        return f"erratum ({', '.join(c.errata)}; correction `{c.correction}`: {fixed})"
    if c.blocking:
        return f"{c.status}: {', '.join(f'`{b}`' for b in c.blocking)}"
    return c.status


def ledger_markdown(ledger: Ledger, links: bool = False) -> str:
    """The claims: a table (CLI, ``ledger.md``) or, with ``links``, a list for the book (a
    statement's maths cannot wrap inside a table cell) whose chapters are MyST ``{doc}`` links."""
    s = ledger.summary()
    t = ledger.tests
    lines = [
        f"{s['claims']} claims: " + ", ".join(f"{n} {k}" for k, n in s["statuses"].items())
        + " (verified: " + (", ".join(f"{n} {k}" for k, n in s["strengths"].items()) or "none") + ")"
        + "; checks by kind: " + ", ".join(f"{n} {k}" for k, n in s["checks"].items())
        + f"; tests from {t.get('source') or 'no pytest run'}"
        + (f" (commit {t['commit'][:12]}, {t['created']})" if t.get("commit") else "")
        + ("; recorded on other code, so stale" if t.get("stale") else "") + ".",
        "",
    ]
    if not links:
        lines += ["| claim | paper | statement | status | evidence (kinds) | chapter |",
                  "|---|---|---|---|---|---|"]
    for c in ledger.claims:
        cl = c.claim
        n = sum(r.passed for r in c.checks)
        evidence = f"{n}/{len(c.checks)} passed ({', '.join(c.kinds) or 'none'})"
        if links:
            lines.append(f"* **`{cl.id}`** ({cl.paper}, {{doc}}`{cl.chapter}`): *{status_text(ledger, c)}*, "
                         f"{evidence}. {cl.statement}")
        else:
            cells = [f"`{cl.id}`", cl.paper, cl.statement, status_text(ledger, c), evidence, cl.chapter]
            lines.append("| " + " | ".join(x.replace("|", r"\|") for x in cells) + " |")
    return "\n".join(lines) + "\n"


def errata_markdown(ledger: Ledger) -> str:
    """Every erratum and slip: statement, counterexample, failing step, correction, status."""
    out = []
    for e in ledger.errata:
        er = e.erratum
        witness = ", ".join(f"`{r.spec}` ({r.outcome})" for r in e.checks)
        out.append(
            f"### {er.id} ({er.kind}) — `{er.claim}`\n\n"
            f"**Statement.** {er.statement}\n\n**Counterexample.** {er.counterexample}\n\n"
            f"**Failing step.** {er.failing_step}\n\n**Correction.** {er.correction}\n\n"
            f"**Status.** witnessed: {'yes' if e.witnessed else 'NO'} ({witness}); the corrected claim "
            f"`{er.corrected}` is *{e.correction_status}*. *Source:* {er.source}.\n"
        )
    return "\n".join(out)



#: The colour of each status in :func:`draw`.
COLOURS = {"verified": "#2ca02c", "erratum": "#ff7f0e", "open": "#1f77b4", "not yet implemented": "#9e9e9e",
           "unverified dependency": "#e6c229", "stale": "#c5b0d5", "not run": "#d9d9d9", "failed": "#d62728"}


#: The marker a verified claim's box carries in :func:`draw`, by strength (who checked it).
MARKERS = {"kernel-checked": " ◆", "two engines": " ●●", "one engine": " ●", "measured": " ~"}


def layout(ledger: Ledger) -> tuple[dict[str, tuple[int, float]], dict[str, float]]:
    """Positions for :func:`draw`: one horizontal lane per book chapter (in ledger order), a
    claim's column its dependency depth (right of everything it depends on); claims sharing a
    lane and a column are stacked.  Returns the positions and each lane's centre."""
    depth: dict[str, int] = {}

    def level(i: str) -> int:
        if i not in depth:
            depth[i] = 1 + max((level(d) for d in ledger.claim(i).claim.depends), default=-1)
        return depth[i]

    lanes: dict[str, dict[int, list[str]]] = {}
    for c in ledger.claims:
        lanes.setdefault(c.claim.chapter, {}).setdefault(level(c.claim.id), []).append(c.claim.id)
    pos: dict[str, tuple[int, float]] = {}
    centres: dict[str, float] = {}
    top = 0.0
    for lane, columns in lanes.items():
        height = max(map(len, columns.values()))
        for x, ids in columns.items():
            for k, i in enumerate(ids):
                pos[i] = (x, top - k - (height - len(ids)) / 2)
        centres[lane] = top - (height - 1) / 2
        top -= height + 0.6
    return pos, centres


def draw(ledger: Ledger, ax: Any = None) -> Any:
    """Draw the claims' dependency graph coloured by status with matplotlib (offline).

    One lane per chapter (see :func:`layout`); an arrow runs from a claim to each claim that
    depends on it, a dashed orange arrow from an erratum to its correction.
    """
    import matplotlib.pyplot as plt

    pos, centres = layout(ledger)
    width = 1 + max(x for x, _ in pos.values())
    if ax is None:
        _, ax = plt.subplots(figsize=(2.3 * width + 1.2, 0.34 * (1 - min(y for _, y in pos.values())) + 1))
    boxes = {
        c.claim.id: ax.text(*pos[c.claim.id], c.claim.id, ha="center", va="center", fontsize=7, zorder=3,
                            bbox=dict(boxstyle="round,pad=0.25", fc=COLOURS[c.status], ec="black", lw=0.4))
        for c in ledger.claims
    }
    for c in ledger.claims:
        if c.strength:  # who checked a verified claim, as a marker at the box's top right
            ax.annotate(MARKERS[c.strength].strip(), xy=(1, 1), xycoords=boxes[c.claim.id], fontsize=6,
                        ha="left", va="center", zorder=4)
        edges = [(d, c.claim.id, dict(color="#777777", lw=0.6, alpha=0.8)) for d in c.claim.depends]
        if c.correction:
            edges.append((c.claim.id, c.correction, dict(color="#ff7f0e", lw=1.0, ls="--")))
        for a, b, style in edges:
            right = pos[b][0] > pos[a][0]
            ax.annotate("", xy=(0 if right else 0.5, 0.5 if right else 1), xycoords=boxes[b],
                        xytext=(1 if right else 0.5, 0.5 if right else 0), textcoords=boxes[a],
                        arrowprops=dict(arrowstyle="-|>", mutation_scale=7, shrinkA=1, shrinkB=1,
                                        connectionstyle="arc3,rad=0.08", **style))
    for lane, y in centres.items():
        ax.text(-0.75, y, lane, ha="right", va="center", fontsize=8, style="italic")
    for status, colour in COLOURS.items():
        ax.scatter([], [], color=colour, label=status, s=50, marker="s", edgecolors="black", linewidths=0.4)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(COLOURS), fontsize=7, frameon=False,
              title="verified:  " + ",  ".join(f"{m.strip()} {k}" for k, m in MARKERS.items()),
              title_fontsize=7)
    ax.set_xlim(-1.6, width - 0.4)
    ax.set_ylim(min(y for _, y in pos.values()) - 0.6, 0.6)
    ax.axis("off")
    return ax



__all__ = [
    "PAPER_URL", "PAPER_BIBTEX", "software_bibtex", "latex_escape", "display_math", "typeset",
    "learner_markdown", "checked_by", "checkers_line", "coq_line", "entry_bibtex", "strengths_text",
    "engines_text", "MARKERS", "entry_markdown",
    "identities_markdown", "learners_markdown",
    "certificate_summary", "certificate_markdown", "entries_markdown", "certificate_latex", "status_text",
    "ledger_markdown", "errata_markdown", "COLOURS", "layout", "draw",
]
