"""The identity registry: every identity the algorithms rely on, proven and cross-checked.

An identity is registered with a stable ID (``<result>/<short-name>``, never renumbered), the
paper reference, a LaTeX statement, the identities it ``uses`` and a builder returning sympy
``(lhs, rhs)`` pairs under stated assumptions (carried by the symbols themselves, e.g.
``real=True``).  Verification is two independent checks:

1. **symbolic**: ``simplify(lhs - rhs)`` is exactly 0 for every pair;
2. **numeric**: lhs and rhs are evaluated *separately* with mpmath (via ``evalf``) at random
   rational points that respect the assumptions, at 60 significant digits, and must agree to
   ``10^-50`` relative.

Matrix identities of symbolic size (``sympy.MatrixSymbol``, for statements that hold for every
d) are proven by expansion (:func:`expand_matrix`) and cross-checked entrywise at random sizes
(:func:`concrete`).  A *bound* (:func:`bound`) is a list of claims ``quantity >= 0`` proven by
sympy's assumptions or by an interval enclosure.  A *run* (:func:`run`) executes a learner end to
end in float64 or in mpmath at high precision on a fixed target and checks what it returned
(``measured <= allowed``): numeric evidence, labelled as such, that the code path users run is
right, not only the sympy one.  Every entry states its ``scope``: "all d (how)", "listed sizes:
..." or "scalar".  Right-hand sides are independent statements: the paper's formulas written here
(:func:`paper_head`), closed forms, or rigorous enclosures, never the library function under test.

An identity is *fully verified* only when it and everything it uses (transitively) verify.
:func:`verify_all` returns a :class:`Certificate` (JSON, Markdown, LaTeX) whose entries carry a
SHA-256 content hash of the canonical statement and expressions, so a citation pins exactly
what was verified.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import json
import platform
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from .errors import AttnproofError

Pair = tuple[sp.Expr, sp.Expr]

#: Digits used for the numeric cross-check, and the agreement required.
NUMERIC_DPS = 60
NUMERIC_TOL = 1e-50
NUMERIC_POINTS = 3


@dataclass(frozen=True)
class Identity:
    """A registered identity (see the module docstring)."""

    id: str
    paper: str
    statement: str
    build: Callable[[], list[Any]]  # (lhs, rhs) pairs for an identity, claims for a bound
    uses: tuple[str, ...] = ()
    assumptions: str = ""
    simplifier: Callable[[sp.Expr], sp.Expr] = sp.simplify
    kind: str = "identity"  # or "bound", or "run"
    #: What the proof covers: "all d" (symbolic size, or a reduction to a proven scalar
    #: identity), "listed sizes: ..." (checked at fixed dimensions), or "scalar".
    scope: str = ""


REGISTRY: dict[str, Identity] = {}


def identity(
    *,
    id: str,
    paper: str,
    statement: str,
    uses: Iterable[str] = (),
    assumptions: str = "",
    simplifier: Callable[[sp.Expr], sp.Expr] = sp.simplify,
    scope: str = "",
) -> Callable[[Callable[[], list[Pair]]], Callable[[], list[Pair]]]:
    """Register ``fn`` (returning (lhs, rhs) pairs) as the identity ``id``.

    Raises
    ------
    AttnproofError
        If the ID is already registered (IDs are stable and unique).
    """
    return _registrar(id, paper, statement, uses, assumptions, simplifier, "identity", scope)


#: A bound claim: a description and a quantity that must be >= 0, given either as a sympy
#: expression (proven non-negative by sympy's assumptions system) or as an mpmath interval
#: (``mpmath.iv``), a rigorous enclosure whose lower endpoint must be >= 0.
Claim = tuple[str, Any]


def bound(
    *,
    id: str,
    paper: str,
    statement: str,
    uses: Iterable[str] = (),
    assumptions: str = "",
    scope: str = "",
) -> Callable[[Callable[[], list[Claim]]], Callable[[], list[Claim]]]:
    """Register ``fn`` (returning ``(description, quantity)`` claims ``quantity >= 0``) as a bound.

    Verification is rigorous: sympy must prove ``quantity.is_nonnegative`` from the symbols'
    assumptions, or the interval enclosure's lower endpoint must be >= 0.  The numeric
    cross-check evaluates sympy quantities at random points with mpmath (they must be >= 0)
    and reports the smallest margin found.
    """
    return _registrar(id, paper, statement, uses, assumptions, sp.simplify, "bound", scope)


def _registrar(
    id: str,
    paper: str,
    statement: str,
    uses: Iterable[str],
    assumptions: str,
    simplifier: Callable[[sp.Expr], sp.Expr],
    kind: str,
    scope: str,
) -> Callable[[Callable[[], list[Any]]], Callable[[], list[Any]]]:
    def deco(fn: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
        if id in REGISTRY:
            raise AttnproofError(f"identity {id!r} is registered twice")
        REGISTRY[id] = Identity(
            id, paper, statement, fn, tuple(uses), assumptions, simplifier, kind, scope
        )
        return fn

    return deco


#: A run check: a description, the error measured and the error allowed; it passes when
#: ``measured <= allowed`` with both finite (a NaN or an infinity never passes).
Check = tuple[str, Any, Any]


def run(
    *,
    id: str,
    paper: str,
    statement: str,
    uses: Iterable[str] = (),
    assumptions: str = "",
    scope: str = "",
) -> Callable[[Callable[[], list[Check]]], Callable[[], list[Check]]]:
    """Register ``fn`` (returning ``(description, measured, allowed)`` checks) as a *run*.

    A run executes a learner end to end in an arithmetic that is not sympy's (a float64
    learner on a fixed adversary, or the learner in mpmath at high precision on a fixed rational
    target) and compares what it returned with the target: the evidence is numeric, not a
    proof, and says so in the certificate (``Entry.checks`` holds every check).  It is what makes
    ``verify`` fail when the code path a user actually runs is wrong, not only the sympy path.
    """
    return _registrar(id, paper, statement, uses, assumptions, sp.simplify, "run", scope)


@dataclass(frozen=True)
class Learner:
    """A registered learner: the one table the CLI, the bench and the certificate read.

    Attributes
    ----------
    name : str
        Stable name used by the CLI (``attnproof recover --learner NAME``) and the bench.
    fn : callable
        The learner itself; its first argument is the oracle.
    result : str
        The paper's result it implements (``"Thm 4.1"``, or ``"beyond the paper"``).
    relies_on : tuple of str
        IDs of the identities and bounds its correctness rests on.  The learner is reported
        as *verified through its identities* only when every one of them is fully verified
        (status by dependency, as a Lean blueprint colours a theorem).
    arithmetics : tuple of str
        Arithmetics it runs in: a subset of ``("float64", "mpmath", "sympy")``.
    queries : str
        Its query count as a formula of d (and r), for unit-scale targets.
    count : callable, optional
        The same formula as a function of keyword arguments (``d``, ``r``, ``bias``).
    """

    name: str
    fn: Callable[..., Any]
    result: str
    relies_on: tuple[str, ...]
    arithmetics: tuple[str, ...]
    queries: str
    count: Callable[..., int] | None = None


LEARNERS: dict[str, Learner] = {}


def learner(
    *,
    name: str,
    result: str,
    relies_on: Iterable[str],
    arithmetics: Iterable[str],
    queries: str,
    count: Callable[..., int] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the learner ``name`` (see :class:`Learner`); sets ``fn.relies_on``.

    Raises
    ------
    AttnproofError
        If the name is already registered, or an arithmetic is not one of the three.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in LEARNERS:
            raise AttnproofError(f"learner {name!r} is registered twice")
        ariths = tuple(arithmetics)
        unknown = set(ariths) - {"float64", "mpmath", "sympy"}
        if unknown:
            raise AttnproofError(f"learner {name!r}: unknown arithmetics {sorted(unknown)}")
        LEARNERS[name] = Learner(name, fn, result, tuple(relies_on), ariths, queries, count)
        fn.relies_on = tuple(relies_on)  # type: ignore[attr-defined]
        return fn

    return deco


@dataclass
class LearnerEntry:
    """The verification status of one learner, through the identities it relies on."""

    name: str
    result: str
    relies_on: list[str]
    arithmetics: list[str]
    queries: str
    passed: bool
    failing: list[str]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Entry:
    """The verification record of one identity."""

    id: str
    kind: str
    paper: str
    statement: str
    assumptions: str
    uses: list[str]
    pairs: int
    symbolic: bool
    numeric_max_err: float
    own_passed: bool
    passed: bool
    seconds: float
    sha256: str
    scope: str = ""
    error: str = ""
    #: For a run: every check as ``{"check", "measured", "allowed", "passed"}`` (floats).
    checks: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def citation(self, version: str | None = None) -> str:
        """One line that pins this entry: ID, paper reference, attnproof version, full SHA-256."""
        return (
            f"attnproof identity {self.id} ({self.paper}), verified with attnproof "
            f"{version or _version()}, SHA-256 {self.sha256}"
        )

    def bibtex(self, version: str | None = None, year: int | None = None) -> str:
        """A BibTeX ``@misc`` entry citing this identity (ID, paper reference, version, SHA-256)."""
        key = "attnproof:" + re.sub(r"[^A-Za-z0-9.:-]", "-", self.id)
        return (
            f"@misc{{{key},\n"
            f"  title = {{attnproof identity \\texttt{{{latex_escape(self.id)}}} "
            f"({latex_escape(self.paper)})}},\n"
            "  author = {{The attnproof developers}},\n"
            f"  year = {{{year or _dt.date.today().year}}},\n"
            f"  note = {{Verified with attnproof {version or _version()}; SHA-256 {self.sha256}; "
            f"after Bhattamishra, Shah, Hahn and Kanade, arXiv:2601.16873}},\n"
            f"  url = {{{PAPER_URL}}}\n"
            "}"
        )

    def to_markdown(self, version: str | None = None, year: int | None = None) -> str:
        """A MyST/Markdown block: an anchor named by the ID, the verification badge, the paper
        reference, the statement (broken into lines that fit a book's column), the typeset
        assumptions, the evidence, and a collapsed one-click citation (BibTeX)."""
        badge = "✓ verified" if self.passed else (
            "! own checks pass, a used identity fails" if self.own_passed else "✗ NOT verified"
        )
        uses = ", ".join(f"`{u}`" for u in self.uses) or "nothing"
        done = "yes" if self.symbolic else "no"
        if self.kind == "bound":
            kind, method = ", bound", (
                f"rigorous proof of {self.pairs} claims (sympy's assumptions system or an mpmath interval "
                f"enclosure) ({done}); numeric violation at random points"
            )
        elif self.kind == "run":
            kind, method = ", run", (
                f"the learner run end to end, {self.pairs} checks each within what it allows "
                f"({'yes' if self.own_passed else 'no'}); worst measured / allowed"
            )
        else:
            kind, method = "", (
                f"sympy simplification to 0 ({done}) over {self.pairs} expression pairs; mpmath cross-check "
                f"at {NUMERIC_DPS} digits, max relative disagreement"
            )
        checks = "".join(
            f"| {c['check'].replace('|', chr(92) + '|')} | {c['measured']:.2e} | {c['allowed']:.2e} "
            f"| {'yes' if c['passed'] else 'NO'} |\n"
            for c in self.checks
        )
        if checks:
            checks = ("<details><summary>The run's checks</summary>\n\n"
                      "| check | measured | allowed | within |\n|---|---|---|---|\n"
                      + checks + "\n</details>\n\n")
        return (
            f'<span id="{self.id}"></span>\n\n'
            f"**{badge}** — `{self.id}` ({self.paper}{kind})\n\n"
            f"$$\n{display_math(self.statement)}\n$$\n\n"
            f"*Assumptions:* {typeset(self.assumptions or 'none')}. "
            f"*Scope:* {typeset(self.scope or 'not stated')}. *Uses:* {uses}. "
            f"*Evidence:* {method} {self.numeric_max_err:.1e}; {self.seconds:.2f} s; "
            f"SHA-256 `{self.sha256[:16]}…`\n\n"
            f"{checks}"
            f"<details><summary>Cite <code>{self.id}</code></summary>\n\n"
            f"```bibtex\n{self.bibtex(version, year)}\n```\n\n</details>\n"
        )


@dataclass
class Certificate:
    """The outcome of :func:`verify_all`, ready to be cited."""

    entries: list[Entry]
    versions: dict[str, str]
    created: str
    seconds: float
    learners: list[LearnerEntry] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(e.passed for e in self.entries) and all(lr.passed for lr in self.learners)

    def entry(self, id: str) -> Entry:
        for e in self.entries:
            if e.id == id:
                return e
        raise KeyError(id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "created": self.created,
            "seconds": self.seconds,
            "versions": self.versions,
            "identities": [e.as_dict() for e in self.entries],
            "learners": [lr.as_dict() for lr in self.learners],
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)

    def identities_markdown(self) -> str:
        """The identities as one narrow Markdown table: ID, paper, verified, seconds, SHA-256 prefix
        (what each one uses and its evidence are in its badge, :meth:`_repr_markdown_`)."""
        lines = ["| ID | paper | verified | s | SHA-256 (prefix) |", "|---" * 5 + "|"]
        lines += [
            f"| `{e.id}` | {e.paper} | {'yes' if e.passed else 'NO'} | {e.seconds:.2f} | `{e.sha256[:16]}` |"
            for e in self.entries
        ]
        return "\n".join(lines) + "\n"

    def learners_markdown(self) -> str:
        """The learners as a Markdown list: each one's result, arithmetics and query count, and
        whether it is verified through the identities it relies on (listed)."""
        return "".join(
            f"* `{lr.name}` ({lr.result}; {', '.join(lr.arithmetics)}; queries {lr.queries}): "
            f"**{'verified' if lr.passed else 'NOT verified: ' + ', '.join(lr.failing)}** through "
            f"{', '.join(f'`{u}`' for u in lr.relies_on)}\n"
            for lr in self.learners
        )

    def summary(self) -> str:
        """One paragraph: when, how many, whether all verified, how long, with which versions."""
        return (
            f"Created {self.created}; {len(self.entries)} identities; "
            f"{'all verified' if self.passed else 'NOT all verified'} in {self.seconds:.1f} s. "
            "Versions: " + ", ".join(f"{k} {v}" for k, v in self.versions.items()) + "."
        )

    def to_markdown(self) -> str:
        """The whole certificate as one Markdown document (``attnproof verify --out``)."""
        parts = ["# attnproof verification certificate", self.summary(), self.identities_markdown()]
        if self.learners:
            parts += ["## Learners, verified through the identities they rely on", self.learners_markdown()]
        parts += ["## Every identity", self._repr_markdown_()]
        return "\n\n".join(p.strip("\n") for p in parts) + "\n"

    def select(self, ids: Iterable[str]) -> Certificate:
        """The same verification restricted to ``ids`` (in that order), e.g. to show in a chapter
        only the identities it discusses while their status still counts what they use."""
        ids = list(ids)
        return Certificate([self.entry(i) for i in ids], self.versions, self.created, self.seconds)

    def _repr_markdown_(self) -> str:
        """In a notebook: each entry's badge block (the book shows certificates this way)."""
        version, year = self.versions.get("attnproof"), int(self.created[:4])
        return "\n".join(e.to_markdown(version, year) for e in self.entries)

    def to_latex(self) -> str:
        """A standalone LaTeX document (compiles with pdflatex and texlive-latex-base alone): the
        summary, one table row per identity and its statement; every text field is escaped."""
        rows = [
            rf"\texttt{{{latex_escape(e.id)}}} & {latex_escape(e.paper)} & {'yes' if e.passed else 'no'} & "
            rf"{e.seconds:.2f} & \texttt{{{e.sha256[:16]}}} \\"
            for e in self.entries
        ]
        statements = [
            rf"\paragraph{{\texttt{{{latex_escape(e.id)}}}}} ({latex_escape(e.paper)}) "
            "\n" rf"\[ {display_math(e.statement)} \]" "\n"
            rf"\noindent\emph{{Assumptions:}} {latex_escape(e.assumptions or 'none')}. "
            rf"SHA-256 \texttt{{{e.sha256}}}."
            for e in self.entries
        ]
        return "\n".join([
            r"\documentclass[10pt]{article}",
            r"\usepackage[T1]{fontenc}",
            r"\usepackage[margin=2cm]{geometry}",
            r"\usepackage{amsmath,amssymb,longtable}",
            r"\begin{document}",
            r"\section*{attnproof verification certificate}",
            latex_escape(self.summary()),
            r"\begin{longtable}{lllrl}",
            r"\hline ID & paper & verified & s & SHA-256 (prefix) \\ \hline \endhead",
            *rows,
            r"\hline \end{longtable}",
            r"\section*{Statements}",
            *statements,
            r"\end{document}",
        ]) + "\n"


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
    version = version or _version()
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


def content_hash(ident: Identity, pairs: list[Pair]) -> str:
    """SHA-256 of the identity's canonical statement and its (lhs, rhs) expressions.

    For a run, ``pairs`` are ``(description, allowed)``: what is checked, not the measured
    numbers (which may differ in the last bits between BLAS builds)."""
    h = hashlib.sha256()
    for part in (ident.id, ident.paper, ident.statement, ident.assumptions, ",".join(ident.uses)):
        h.update(part.encode())
        h.update(b"\0")
    for lhs, rhs in pairs:
        h.update((lhs if isinstance(lhs, str) else sp.srepr(lhs)).encode())
        h.update(b"=")
        h.update((sp.srepr(rhs) if isinstance(rhs, sp.Basic) else repr(rhs)).encode())
        h.update(b"\0")
    return h.hexdigest()


def _random_value(sym: sp.Symbol, rnd: random.Random) -> sp.Rational:
    """A random rational point respecting the symbol's assumptions."""
    mag = sp.Rational(rnd.randint(100, 2000), 1000)
    if sym.is_positive or sym.is_nonnegative:
        return mag
    return mag if rnd.random() < 0.5 else -mag


def numeric_check(pairs: list[Pair], seed: str, points: int = NUMERIC_POINTS) -> float:
    """Max relative disagreement of lhs and rhs, evaluated separately in mpmath.

    Both sides are compiled with ``sympy.lambdify(..., modules="mpmath")`` and evaluated at
    ``points`` random rational points (respecting the symbols' assumptions) at
    :data:`NUMERIC_DPS` digits; no simplification is involved.  Matrix expressions of symbolic
    size (``MatrixSymbol``) are evaluated entrywise at a random size per point (:func:`concrete`).
    """
    rnd = random.Random(seed)
    if any(sp.sympify(e).atoms(sp.MatrixSymbol) for pair in pairs for e in pair):
        return max(_numeric_check(concrete(pairs, rnd), rnd, 1) for _ in range(points))
    return _numeric_check(pairs, rnd, points)


def _numeric_check(pairs: list[Pair], rnd: random.Random, points: int) -> float:
    exprs = [sp.sympify(e) for pair in pairs for e in pair]
    syms = sorted(set().union(*(e.free_symbols for e in exprs)), key=str)
    worst = mpmath.mpf(0)
    with mpmath.workdps(NUMERIC_DPS):
        fns = [sp.lambdify(syms, e, modules="mpmath") for e in exprs]
        for _ in range(points):
            point = [_random_value(s, rnd) for s in syms]
            args = [mpmath.mpf(x.p) / x.q for x in point]
            vals = [mpmath.mpmathify(fn(*args)) for fn in fns]
            for a, b in zip(vals[0::2], vals[1::2]):
                worst = max(worst, abs(a - b) / (1 + abs(a)))
    return float(worst)


#: Largest value of an integer dimension symbol in the numeric cross-check of a matrix identity.
MAX_RANDOM_SIZE = 4


def concrete(pairs: list[Pair], rnd: random.Random) -> list[Pair]:
    """Matrix identities of symbolic size at one random size, as scalar (lhs, rhs) entry pairs.

    Every dimension symbol gets a random value in 1..MAX_RANDOM_SIZE and every MatrixSymbol a
    matrix of random rationals; scalar symbols stay symbols (the caller draws them).
    """
    exprs = [sp.sympify(e) for pair in pairs for e in pair]
    mats = sorted(set().union(*(e.atoms(sp.MatrixSymbol) for e in exprs)), key=str)
    dims = sorted({x for m in mats for n in m.shape for x in sp.sympify(n).free_symbols}, key=str)
    size = {x: rnd.randint(1, MAX_RANDOM_SIZE) for x in dims}
    values = {}
    for m in mats:
        shape = [int(sp.sympify(n).subs(size)) for n in m.shape]
        values[sp.MatrixSymbol(m.name, *shape)] = sp.Matrix(
            *shape, lambda i, j: sp.Rational(rnd.randint(-2000, 2000), 1000)
        )
    out: list[Pair] = []
    for lhs, rhs in zip(exprs[0::2], exprs[1::2]):
        sides = [sp.Matrix(sp.sympify(e).subs(size).xreplace(values).doit()) if isinstance(e, sp.MatrixExpr)
                 else sp.sympify(e).subs(size).xreplace(values).doit() for e in (lhs, rhs)]
        if isinstance(sides[0], sp.MatrixBase):
            out.extend(zip(sides[0], sides[1]))
        else:
            out.append((sides[0], sides[1]))
    return out


def is_zero(x: Any) -> bool:
    """Whether a simplified difference is 0: the scalar 0 or a zero matrix (of any size)."""
    return x == 0 or bool(getattr(x, "is_ZeroMatrix", False))


def expand_matrix(e: sp.Expr) -> sp.Expr:
    """A simplifier for identities mixing matrix expressions of symbolic size and scalars: a
    matrix expression is expanded (products distributed over sums and collected,
    ``(A + B)^T C - A^T C - B^T C -> 0``, which sympy's ``simplify`` leaves), a scalar simplified."""
    return sp.expand(e) if isinstance(e, sp.MatrixExpr) else sp.simplify(e)


def _check_bound(claims: list[Claim], seed: str) -> tuple[bool, float]:
    """Rigorous check of ``quantity >= 0`` claims; returns (proven, numeric violation).

    The numeric violation is ``max(0, -quantity)`` over random points (sympy claims) or over
    the interval's midpoint: 0 when every evaluation is non-negative.
    """
    proven = True
    violation = mpmath.mpf(0)
    rnd = random.Random(seed)
    for _, q in claims:
        if isinstance(q, sp.Basic):
            proven &= bool(q.is_nonnegative)
            syms = sorted(q.free_symbols, key=str)
            with mpmath.workdps(NUMERIC_DPS):
                fn = sp.lambdify(syms, q, modules="mpmath")
                for _ in range(NUMERIC_POINTS):
                    args = [mpmath.mpf(x.p) / x.q for x in (_random_value(s, rnd) for s in syms)]
                    violation = max(violation, -mpmath.mpf(fn(*args)))
        else:
            proven &= bool(q.a >= 0)
            violation = max(violation, -mpmath.mpf(q.mid))
    return proven, float(violation)


def _check_run(checks: list[Check]) -> tuple[bool, float, list[dict[str, Any]]]:
    """Evaluate run checks; returns (all passed, worst measured / allowed, the checks as dicts)."""
    rows, worst = [], 0.0
    for desc, measured, allowed in checks:
        m, a = float(measured), float(allowed)
        ok = bool(np.isfinite(m) and np.isfinite(a) and m <= a)
        ratio = m / a if a > 0 and np.isfinite(m) else (0.0 if m <= 0 else float("inf"))
        worst = max(worst, ratio)
        rows.append({"check": desc, "measured": m, "allowed": a, "passed": ok})
    return all(r["passed"] for r in rows), worst, rows


def verify(id: str) -> Entry:
    """Verify one identity on its own (its ``uses`` are not checked here)."""
    ident = REGISTRY[id]
    t0 = time.perf_counter()
    error = ""
    symbolic, numeric_err, digest, npairs, rows = False, float("inf"), "", 0, []
    ran = False
    try:
        pairs = ident.build()
        npairs = len(pairs)
        if ident.kind == "run":
            digest = content_hash(ident, [(desc, allowed) for desc, _, allowed in pairs])
            ran, numeric_err, rows = _check_run(pairs)
        elif ident.kind == "bound":
            digest = content_hash(ident, pairs)
            symbolic, numeric_err = _check_bound(pairs, seed=id)
        else:
            digest = content_hash(ident, pairs)
            symbolic = all(is_zero(ident.simplifier(sp.sympify(lhs) - sp.sympify(rhs))) for lhs, rhs in pairs)
            numeric_err = numeric_check(pairs, seed=id)
    except Exception as exc:  # a failing proof is reported, not raised
        error = f"{type(exc).__name__}: {exc}"
    if ident.kind == "run":  # numeric evidence: every check within what it allows
        own = bool(ran and npairs > 0 and not error)
    else:
        own = bool(symbolic and numeric_err <= NUMERIC_TOL and npairs > 0 and not error)
    return Entry(
        id=ident.id,
        kind=ident.kind,
        paper=ident.paper,
        statement=ident.statement,
        assumptions=ident.assumptions,
        uses=list(ident.uses),
        pairs=npairs,
        symbolic=symbolic,
        numeric_max_err=numeric_err,
        own_passed=own,
        passed=own,
        seconds=time.perf_counter() - t0,
        sha256=digest,
        scope=ident.scope,
        error=error,
        checks=rows,
    )


def verify_all(ids: Iterable[str] | None = None) -> Certificate:
    """Verify the registered identities (all, or ``ids`` and what they use).

    An identity passes only if its own checks pass and every identity it uses passes.
    """
    t0 = time.perf_counter()
    wanted = list(REGISTRY) if ids is None else _closure(list(ids))
    entries = {i: verify(i) for i in wanted}
    for i in wanted:
        entries[i].passed = _fully_verified(i, entries, set())
    return Certificate(
        entries=[entries[i] for i in wanted],
        learners=[
            learner_status(lr, entries)
            for lr in LEARNERS.values()
            if ids is None or set(lr.relies_on) <= set(wanted)
        ],
        versions={
            "attnproof": _version(),
            "python": platform.python_version(),
            "sympy": sp.__version__,
            "mpmath": mpmath.__version__,
            "numpy": np.__version__,
        },
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        seconds=time.perf_counter() - t0,
    )


def learner_status(lr: Learner, entries: dict[str, Entry]) -> LearnerEntry:
    """A learner is verified when every identity it relies on is fully verified (and exists)."""
    failing = [i for i in lr.relies_on if i not in entries or not entries[i].passed]
    return LearnerEntry(
        name=lr.name,
        result=lr.result,
        relies_on=list(lr.relies_on),
        arithmetics=list(lr.arithmetics),
        queries=lr.queries,
        passed=not failing and bool(lr.relies_on),
        failing=failing,
    )


def _closure(ids: list[str]) -> list[str]:
    out: list[str] = []
    stack = list(ids)
    while stack:
        i = stack.pop()
        if i not in REGISTRY:
            raise KeyError(f"unknown identity {i!r}")
        if i not in out:
            out.append(i)
            stack.extend(REGISTRY[i].uses)
    return [i for i in REGISTRY if i in out]


def _fully_verified(i: str, entries: dict[str, Entry], seen: set[str]) -> bool:
    if i in seen:  # a cycle in `uses` can never count as verified
        return False
    e = entries[i]
    return e.own_passed and all(
        u in entries and _fully_verified(u, entries, seen | {i}) for u in REGISTRY[i].uses
    )


def _version() -> str:
    """The installed distribution's version (package metadata: no import of the package)."""
    try:
        return importlib.metadata.version("attnproof")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree not installed
        return "unknown"


def symbols(prefix: str, shape: tuple[int, ...], **assumptions: Any) -> np.ndarray:
    """An object array of fresh sympy symbols ``prefix_i_j`` with the given assumptions."""
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        name = prefix + "_" + "_".join(str(i + 1) for i in idx) if idx else prefix
        out[idx] = sp.Symbol(name, **assumptions)
    return out


def recovery_checks(at: str, rec: Any, truth: dict[str, Any], arith: Any, digits: int | None) -> list[Check]:
    """Checks for a run entry: a learner's result ``rec`` against the target it never saw.

    ``truth`` maps attributes of ``rec`` (``W``, ``v``, ``c``, ``beta``) to the target's values in
    ``arith``.  With ``digits`` (a high-precision run): each error, relative to the target's norm
    (or absolute below norm 1), at most ``10^-digits``.  Without (float64): ``||W_hat - W*||_F``
    within the learner's own a-posteriori ``diagnostics["error_bound"]``.
    """
    checks: list[Check] = []
    with arith.context():
        for name, x in truth.items():
            diff = np.atleast_1d(np.asarray(getattr(rec, name) - x, dtype=object))
            err = arith.norm(diff) / max(1.0, arith.norm(np.atleast_1d(np.asarray(x, dtype=object))))
            if digits is not None:
                checks.append((f"{at}: {name} error / max(1, |{name}*|) <= 1e-{digits}", err, 10.0**-digits))
            elif name == "W":
                bound = rec.diagnostics.get("error_bound", float("nan"))  # none reported: the check fails
                checks.append((f"{at}: ||W_hat - W*||_F <= error_bound", arith.norm(diff), bound))
    return checks


def paper_scores(W: Any, X: Any) -> list[sp.Expr]:
    """``s_i = x_i^T W x_N`` (Sec. 3), written entry by entry from the paper.

    For right-hand sides: an identity compares the library's model (:mod:`attnproof.models`)
    with this independent transcription, never the model with itself.  ``X`` is (N, d).
    """
    N, d = len(X), len(X[0])
    return [sp.Add(*(X[i][a] * W[a][b] * X[N - 1][b] for a in range(d) for b in range(d))) for i in range(N)]


def paper_weights(W: Any, X: Any) -> list[sp.Expr]:
    """``alpha(X, W)_i = e^{s_i} / sum_k e^{s_k}`` (Sec. 3), independent of :mod:`attnproof.models`."""
    e = [sp.exp(s) for s in paper_scores(W, X)]
    return [x / sp.Add(*e) for x in e]


def paper_head(W: Any, v: Any, X: Any) -> sp.Expr:
    """``f_{W,v}(X) = alpha(X, W)^T X v`` (Sec. 3), independent of :mod:`attnproof.models`."""
    d = len(v)
    return sp.Add(*(a * sp.Add(*(x[k] * v[k] for k in range(d))) for a, x in zip(paper_weights(W, X), X)))


__all__ = [
    "recovery_checks",
    "paper_scores",
    "paper_weights",
    "paper_head",
    "Identity",
    "Entry",
    "Learner",
    "LearnerEntry",
    "LEARNERS",
    "learner",
    "learner_status",
    "Certificate",
    "REGISTRY",
    "identity",
    "bound",
    "run",
    "Check",
    "verify",
    "verify_all",
    "numeric_check",
    "content_hash",
    "symbols",
]
