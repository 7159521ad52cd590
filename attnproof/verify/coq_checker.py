"""Coq as a checker of the verifier (issue 20, item 1): the kernel-checked theorems behind the seam.

:func:`attnproof.verify.coq_check.check` compiles every file of ``coq/`` once per process (on the
first entry that needs it) and judges each theorem by ``Print Assumptions``; the certificate's
``checkers["coq"]`` of an entry with a theorem names its ``file``, ``theorem`` and the file's
``sha256`` (and ``sources_sha256``, the file with every file it imports).  An entry without a
theorem is ``"not run: no Coq theorem ..."``; without ``coqc`` every entry is ``"not run"`` with
how to install it.  Never passed unless the kernel checked it.

:func:`fidelity_markdown` puts each theorem's Coq statement next to the paper's and the
registry's sympy statement (the book's statement-fidelity chapter).

Verdicts are cached (:mod:`attnproof.verify.checkers`) per Coq version under the theorem's
``sources_sha256`` and the SHA-256 of :mod:`~attnproof.verify.coq_check`: an edited ``.v`` file
(or one it imports) is compiled again.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import sympy as sp

from . import coq_check
from .checkers import Verdict, register_checker, source_sha256
from .registry import REGISTRY


@functools.cache
def _coqc() -> str | None:
    return coq_check.find_coqc()


@functools.cache
def _version() -> str:
    path = _coqc()
    return coq_check.coq_version(path) if path is not None else "not installed"


@functools.cache
def _results() -> dict[str, coq_check.CoqResult]:
    return coq_check.check(_coqc())


class CoqChecker:
    """Coq's kernel (``coqc`` and ``Print Assumptions``) as a :class:`~attnproof.verify.checkers.Checker`."""

    engine = "coq"
    kinds = ("identity", "bound")

    def version(self) -> str:
        return _version()

    def cache_key(self, ident: Any, digest: str) -> str | None:
        """The theorem's sources (its file and every file it imports) and the driver's source;
        None (no cache) without a theorem or without ``coqc``."""
        if ident.id not in coq_check.THEOREMS or _coqc() is None:
            return None
        file, theorem = coq_check.THEOREMS[ident.id]
        return f"{ident.id}:{theorem}:{coq_check.sources_sha256(file)}:{source_sha256(coq_check)}"

    def check(self, ident: Any, built: list[Any]) -> Verdict:
        if ident.id not in coq_check.THEOREMS:
            return Verdict(None, "not run: no Coq theorem formalizes this entry")
        r = _results()[ident.id]
        passed = {coq_check.PASSED: True, coq_check.FAILED: False}.get(r.status)
        detail = r.detail if r.status != coq_check.NOT_RUN else f"not run: {r.detail}"
        extra = {k: v for k, v in r.checker().items() if k not in ("passed", "seconds", "version", "detail")}
        return Verdict(passed, detail, extra=extra)


def coq_statement(registry_id: str) -> tuple[str, str]:
    """The Coq theorem of ``registry_id`` as its ``.v`` file states it: the comment just above it
    (which registry statement it formalizes, and where its scope differs) and the statement from
    ``Theorem`` up to ``Proof.``, whitespace collapsed (for the book's statement-fidelity page)."""
    file, theorem = coq_check.THEOREMS[registry_id]
    text = (coq_check.COQ_DIR / file).read_text()
    comment = r"(?:\(\*((?:(?!\*\)).)*)\*\)\s*)?"
    m = re.search(rf"{comment}\b(?:Theorem|Lemma)\s+{re.escape(theorem)}\b(.*?)\bProof\.", text, re.S)
    if m is None:
        raise KeyError(f"{file} has no theorem {theorem}")
    note = " ".join((m.group(1) or "").split())
    return note, " ".join(f"Theorem {theorem}{m.group(2)}".split())


#: Longest sympy statement shown inside the side-by-side table (longer ones follow it in full).
SYMPY_INLINE = 240


def sympy_statement(ident: Any) -> list[str]:
    """The registry's sympy statement of an entry, one line per pair (``lhs == rhs``) or claim
    (``description: q >= 0``, an interval claim shown as its mpmath.iv enclosure)."""
    lines = []
    for a, b in ident.build():
        if ident.kind == "bound":
            lines.append(f"{a}: {sp.sstr(b)} >= 0" if isinstance(b, sp.Basic) else f"{a}: enclosure {b}")
        else:
            lines.append(f"{sp.sstr(a)} == {sp.sstr(b)}")
    return lines


def fidelity_markdown(cert: Any) -> str:
    """Statement fidelity (issue 20): for every Coq theorem, the paper's statement (the registry's
    LaTeX, with its paper reference), the registry's sympy statement and the Coq statement (from
    the ``.v`` file, up to ``Proof.``) side by side, with the Coq verdict and the ``.v`` file's own
    note on scope, so a reader can judge that what was proved is what the paper says.

    ``cert`` must cover every ID of :data:`attnproof.verify.coq_check.THEOREMS`."""
    out = []
    for i, (file, theorem) in coq_check.THEOREMS.items():
        e, ident = cert.entry(i), REGISTRY[i]
        note, coq = coq_statement(i)
        sym = sympy_statement(ident)
        inline = sum(map(len, sym)) <= SYMPY_INLINE
        sym_cell = "<br>".join(f"`{x}`" for x in sym) if inline else f"{len(sym)} statements, in full below"
        paper = " ".join(ident.statement.split()).replace("|", r"ert ")
        c = e.checkers.get("coq", {})
        verdict = "kernel-checked" if c.get("passed") else "FAILED" if c.get("passed") is False else "not run"
        cells = [f"${paper}$", sym_cell, f"`{coq}`"]
        out.append(
            f"### `{i}` ({ident.paper})\n\n"
            f"| paper ({ident.paper}) | registry (sympy) | Coq (`{file}`, `{theorem}`) |\n|---|---|---|\n"
            "| " + " | ".join(x.replace("|", r"\|") if not x.startswith("$") else x for x in cells) + " |\n\n"
            f"*Coq:* {verdict}; file SHA-256 `{str(c.get('sha256', ''))[:16]}…`; entry "
            f"{'verified (' + e.strength + ')' if e.passed else 'NOT verified'}."
            + (f" *The `.v` file's note:* {note}" if note else "") + "\n"
            + ("" if inline else "\n<details><summary>The sympy statement in full</summary>\n\n```text\n"
               + "\n".join(sym) + "\n```\n\n</details>\n")
        )
    return "\n".join(out)


COQ = register_checker(CoqChecker())

__all__ = ["CoqChecker", "COQ", "coq_statement", "SYMPY_INLINE", "sympy_statement", "fidelity_markdown"]
