"""The Coq leg of the verification: kernel-checked theorems named after registry IDs (issue 20).

The Coq sources live next to this module in ``coq/`` (a data directory).  :func:`check` copies
them to a temporary directory, compiles every file with ``coqc`` in :data:`FILES` order (later
files import earlier ones under the logical path :data:`LOGICAL_PATH`), then asks Coq for
``Print Assumptions`` of every theorem of :data:`THEOREMS` and accepts a theorem only when its
file compiled and every axiom it rests on is one of :data:`ALLOWED_AXIOMS` (the classical reals
of Coq's standard library, and Coquelicot's excluded middle) or a specification of Coq's
primitive 63-bit integers (:data:`ALLOWED_PREFIXES`, used by Coq Interval's reflexive proofs).

Coq checks the paper's mathematical statements (Thm 4.1, Sec. 4.1, Prop. 7.1, Sec. 7,
Lemma A.1, Thm 6.1 with Erratum E1, App. B of arXiv 2601.16873), not the Python learners: each
``.v`` file states, above each theorem, which registry statement it formalizes and where its
scope differs.  Without ``coqc`` every entry is ``"not run"``, never passed.

The map from registry IDs to Coq theorems is read from the ``.v`` files themselves (the table in
each file's header, :func:`header_ids`), so this module names no result.

Examples
--------
>>> theorem_name("thm9.9/an-example")
'thm9_9__an_example'
>>> all(THEOREMS[i] == (f, theorem_name(i)) for f, ids in IDS_BY_FILE.items() for i in ids)
True
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AttnproofError

#: Directory of the Coq sources.
COQ_DIR = Path(__file__).with_name("coq")
#: Logical path under which the files import each other (``From AttnProof Require Import ...``).
LOGICAL_PATH = "AttnProof"
#: Every Coq source, in compilation (dependency) order.
FILES = ("Defs.v", "Softmax.v", "Relu.v", "Multihead.v", "Lipschitz.v", "Tolerance.v")


def theorem_name(registry_id: str) -> str:
    """The Coq name of a registry ID: ``thm4.1/softmax-to-sigmoid`` -> ``thm4_1__softmax_to_sigmoid``."""
    return registry_id.replace("/", "__").replace(".", "_").replace("-", "_")


#: A row of a file's header table: ``<registry ID> | <Coq theorem>``.
_HEADER_ROW = re.compile(r"^\s*(\S+/\S+)\s*\|\s*(\w+)", re.M)


def header_ids(name: str) -> tuple[str, ...]:
    """The registry IDs the Coq file ``name`` formalizes, read from the table in its header
    comment (``Registry ID | Coq theorem``, one row per theorem, named by :func:`theorem_name`).

    Raises
    ------
    AttnproofError
        If a row's theorem is not the :func:`theorem_name` of its ID.
    """
    text = (COQ_DIR / name).read_text()
    header = text[: text.index("*)")] if text.lstrip().startswith("(*") else ""
    rows = _HEADER_ROW.findall(header)
    for registry_id, theorem in rows:
        if theorem != theorem_name(registry_id):
            raise AttnproofError(f"{name}: {registry_id} | {theorem}: the theorem is not named after the ID")
    return tuple(registry_id for registry_id, _ in rows)


#: The registry IDs each Coq file formalizes, read from the files (:func:`header_ids`), so that
#: the verifier names no result; ``Defs.v`` holds the shared definitions of Sec. 3 (sigma, ReLU,
#: dot, the head) and no claim.
IDS_BY_FILE: dict[str, tuple[str, ...]] = {f: ids for f in FILES if (ids := header_ids(f))}
#: Registry ID -> (file, Coq theorem).
THEOREMS: dict[str, tuple[str, str]] = {
    i: (f, theorem_name(i)) for f, ids in IDS_BY_FILE.items() for i in ids
}

#: Axioms a theorem may rest on: Coq's classical reals (the standard library's ``Reals``),
#: functional extensionality (``Reals``), and excluded middle (``Coquelicot``).
ALLOWED_AXIOMS = frozenset({
    "ClassicalDedekindReals.sig_not_dec",
    "ClassicalDedekindReals.sig_forall_dec",
    "FunctionalExtensionality.functional_extensionality_dep",
    "Classical_Prop.classic",
})
#: Coq's primitive 63-bit integers (their operations and specifications), which Coq Interval's
#: reflexive proofs compute with.
ALLOWED_PREFIXES = ("Uint63.", "PrimInt63.")

#: Statuses of one theorem.
PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"


@dataclass(frozen=True)
class CoqResult:
    """The Coq checker's verdict on one registry ID.

    ``seconds`` is the compile time of the theorem's file (where the kernel checks it) plus the
    time of its ``Print Assumptions``; ``assumptions`` are the axioms Coq printed.
    """

    id: str
    status: str
    seconds: float
    version: str
    file: str
    theorem: str
    sha256: str
    sources_sha256: str
    assumptions: tuple[str, ...] = ()
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def checker(self) -> dict[str, object]:
        """The certificate's ``checkers["coq"]`` entry (issue 20: passed, seconds, version, detail,
        and for Coq the file, theorem and the file's SHA-256)."""
        return {
            "passed": self.passed, "status": self.status, "seconds": round(self.seconds, 3),
            "version": self.version, "detail": self.detail, "file": self.file, "theorem": self.theorem,
            "sha256": self.sha256, "sources_sha256": self.sources_sha256,
            "assumptions": list(self.assumptions),
        }


@dataclass
class FileRun:
    """One file's compilation: whether it compiled, its times and coqc's message."""

    name: str
    compiled: bool
    compile_seconds: float
    assumptions_seconds: float = 0.0
    message: str = ""
    assumptions: dict[str, tuple[str, ...]] = field(default_factory=dict)


def find_coqc(coqc: str | None = None) -> str | None:
    """Path of ``coqc`` (the given one, else on PATH), or None when Coq is not installed."""
    return shutil.which(coqc or "coqc")


def coq_version(coqc: str) -> str:
    """``coqc --version``'s version number, e.g. ``8.16.1``."""
    out = subprocess.run([coqc, "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"version\s+(\S+)", out)
    return m.group(1) if m else out.strip()


def sha256(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dependencies(name: str) -> tuple[str, ...]:
    """``name`` and every file of :data:`FILES` it imports, directly or not (in :data:`FILES` order),
    read from its ``From AttnProof Require Import ...`` lines."""
    pattern = re.compile(rf"From\s+{LOGICAL_PATH}\s+Require\s+(?:Import\s+|Export\s+)?([\w\s]+)\.")
    seen: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            for group in pattern.findall((COQ_DIR / current).read_text()):
                stack.extend(f"{module}.v" for module in group.split())
    return tuple(f for f in FILES if f in seen)


def sources_sha256(name: str) -> str:
    """SHA-256 over the names and hashes of :func:`dependencies` of ``name``."""
    listing = "".join(f"{f}\0{sha256(COQ_DIR / f)}\n" for f in dependencies(name))
    return hashlib.sha256(listing.encode()).hexdigest()


def parse_assumptions(text: str) -> tuple[str, ...]:
    """The axiom names of one ``Print Assumptions`` output (empty when closed).

    Coq prints ``Closed under the global context`` or ``Axioms:`` followed by one entry per
    axiom: its name at the start of a line, its type on the same line after `` : `` or on
    indented lines below.
    """
    if "Closed under the global context" in text:
        return ()
    lines = text.splitlines()
    if not any(line.strip() == "Axioms:" for line in lines):
        raise ValueError(f"not a Print Assumptions output: {text[:200]!r}")
    heads = [line for line in lines if line and not line[0].isspace() and line.strip() != "Axioms:"]
    return tuple(sorted({line.split()[0] for line in heads}))


def disallowed(assumptions: tuple[str, ...]) -> tuple[str, ...]:
    """The assumptions outside :data:`ALLOWED_AXIOMS` and :data:`ALLOWED_PREFIXES`."""
    return tuple(a for a in assumptions if a not in ALLOWED_AXIOMS and not a.startswith(ALLOWED_PREFIXES))


def _coqc(coqc: str, workdir: Path, name: str, timeout: float) -> tuple[bool, float, str]:
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [coqc, "-q", "-Q", ".", LOGICAL_PATH, name], cwd=workdir, capture_output=True, text=True,
            timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired:
        return False, time.perf_counter() - start, f"coqc {name} timed out after {timeout:g} s"
    seconds = time.perf_counter() - start
    return proc.returncode == 0, seconds, (proc.stdout + proc.stderr).strip()


def compile_files(coqc: str, workdir: Path, timeout: float = 600.0) -> dict[str, FileRun]:
    """Compile :data:`FILES` (copied into ``workdir``) in order, then print every theorem's
    assumptions (one ``Redirect``-ed ``Print Assumptions`` per theorem, one coqc run per file).
    A file after a failed one is still tried (it fails if it imports the failed one)."""
    runs: dict[str, FileRun] = {}
    for name in FILES:
        shutil.copyfile(COQ_DIR / name, workdir / name)
        ok, seconds, message = _coqc(coqc, workdir, name, timeout)
        run = FileRun(name, ok, seconds, message=message)
        runs[name] = run
        theorems = [theorem_name(i) for i in IDS_BY_FILE.get(name, ())]
        if not ok or not theorems:
            continue
        module = name.removesuffix(".v")
        probe = f"Assumptions_{module}.v"
        (workdir / probe).write_text(
            f"From {LOGICAL_PATH} Require Import {module}.\n"
            + "".join(f'Redirect "pa_{t}" Print Assumptions {t}.\n' for t in theorems)
        )
        ok, run.assumptions_seconds, message = _coqc(coqc, workdir, probe, timeout)
        if not ok:
            run.message = message
            continue
        for t in theorems:
            out = workdir / f"pa_{t}.out"
            if out.exists():
                run.assumptions[t] = parse_assumptions(out.read_text())
    return runs


def check(coqc: str | None = None, timeout: float = 600.0) -> dict[str, CoqResult]:
    """Kernel-check every theorem of :data:`THEOREMS`; one :class:`CoqResult` per registry ID.

    Without ``coqc`` (not installed, or not the given path) every result is ``"not run"`` and
    none is passed.  Otherwise the files are compiled in a temporary directory
    (:func:`compile_files`) and judged by :func:`verdicts`.
    """
    path = find_coqc(coqc)
    if path is None:
        return not_run("coqc not found: install Coq (Debian: apt-get install coq libcoq-interval)")
    with tempfile.TemporaryDirectory(prefix="attnproof-coq-") as tmp:
        runs = compile_files(path, Path(tmp), timeout)
    return verdicts(runs, coq_version(path))


def not_run(reason: str) -> dict[str, CoqResult]:
    """Every registry ID as ``"not run"`` (never passed), with the reason."""
    return {
        i: CoqResult(i, NOT_RUN, 0.0, "", f, t, sha256(COQ_DIR / f), sources_sha256(f), detail=reason)
        for i, (f, t) in THEOREMS.items()
    }


def verdicts(runs: dict[str, FileRun], version: str) -> dict[str, CoqResult]:
    """Judge each theorem from its file's run: it passes when the file compiled, contains no
    ``Admitted``/``admit``, and ``Print Assumptions`` lists only allowed axioms."""
    hashes = {name: sha256(COQ_DIR / name) for name in FILES}
    admitted = {name for name in FILES if re.search(r"\b(Admitted|admit)\b", (COQ_DIR / name).read_text())}
    results: dict[str, CoqResult] = {}
    for i, (f, t) in THEOREMS.items():
        run = runs[f]
        seconds = run.compile_seconds + run.assumptions_seconds
        assumptions = run.assumptions.get(t, ())
        if not run.compiled:
            status, detail = FAILED, f"{f} does not compile: {run.message[-2000:]}"
        elif f in admitted:
            status, detail = FAILED, f"{f} contains Admitted or admit"
        elif t not in run.assumptions:
            status, detail = FAILED, f"no Print Assumptions output for {t}: {run.message[-2000:]}"
        elif bad := disallowed(assumptions):
            status, detail = FAILED, f"{t} rests on axioms outside the allowed set: {', '.join(bad)}"
        else:
            status = PASSED
            detail = f"{f}: {t} kernel-checked by coqc {version}; axioms: " + (
                ", ".join(a for a in assumptions if not a.startswith(ALLOWED_PREFIXES)) or "none")
            if any(a.startswith(ALLOWED_PREFIXES) for a in assumptions):
                detail += " (and Coq's primitive-integer specifications, for Coq Interval)"
        results[i] = CoqResult(
            i, status, seconds, version, f, t, hashes[f], sources_sha256(f), assumptions, detail
        )
    return results


__all__ = [
    "COQ_DIR", "FILES", "IDS_BY_FILE", "THEOREMS", "ALLOWED_AXIOMS", "ALLOWED_PREFIXES",
    "PASSED", "FAILED", "NOT_RUN",
    "CoqResult", "FileRun", "theorem_name", "find_coqc", "coq_version", "parse_assumptions", "disallowed",
    "dependencies", "sources_sha256",
    "compile_files", "check", "not_run", "verdicts",
]
