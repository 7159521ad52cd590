"""The checkers: the engines that give an entry its evidence, behind one small protocol.

A :class:`Checker` names its ``engine``, the entry ``kinds`` it checks (``identity``, ``bound``,
``run``), its ``version()``, and ``check(ident, built)`` returning a :class:`Verdict`
(``passed`` True, False, or None when the engine has nothing to say about this entry, e.g. no
Coq theorem of that ID).  The verifier (:mod:`attnproof.verify.certificate`) runs, for each
entry, every registered checker of its kind in registration order and records each one under
``checkers[engine] = {"passed", "seconds", "version", "detail"}``; an entry's own checks pass
when at least one checker passed and none failed.

The engines that run today, all at :data:`NUMERIC_DPS` digits where numeric:

* ``sympy`` (identity): ``simplify(lhs - rhs)`` is exactly 0 for every pair (or the identity's
  own simplifier, e.g. :func:`expand_matrix` for matrices of symbolic size);
* ``mpmath`` (identity): lhs and rhs evaluated *separately* at random rational points that
  respect the assumptions, agreeing to :data:`NUMERIC_TOL` relative (:func:`numeric_check`);
* ``sympy`` (bound): ``quantity.is_nonnegative`` proven by sympy's assumptions, or an
  ``mpmath.iv`` enclosure whose lower endpoint is >= 0;
* ``mpmath`` (bound): the largest violation ``max(0, -quantity)`` at random points;
* ``learner-run`` (run): the learner run end to end, every ``measured <= allowed``.

The second engines (issue 20), each one module ``attnproof/verify/<engine>_checker.py`` that
registers its checker when imported (:func:`discover` imports every such module, so the
verifier is never edited): ``z3`` and ``cvc5`` (:mod:`~attnproof.verify.smt_checker`), ``arb``
(:mod:`~attnproof.verify.arb_checker`) and ``coq`` (:mod:`~attnproof.verify.coq_checker`).  An
engine that cannot check an entry, is not installed or reaches no verdict says ``passed`` None
with a ``"not run: ..."`` or ``"no verdict: ..."`` detail: never passed, never failed.

**The verdict cache.** A slow checker defines ``cache_key(ident, digest)`` (the entry's SHA-256
``digest``, or what its verdict rests on, e.g. the Coq sources' hash): the verifier then reuses
a verdict stored under (engine, engine version, key) in :func:`cache_dir` instead of running the
engine again, so ``dev.py all`` computes the verdicts and the test suite and the book reuse them.
A cached verdict is evidence only for the same key and engine version.  A checker's verdict is
never hashed: the
identity's SHA-256 (:func:`attnproof.verify.registry.content_hash`) stays what was published.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import pkgutil
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import mpmath
import numpy as np
import sympy as sp

from .registry import BoundClaim, Identity, Pair, RunCheck

#: Digits used for the numeric cross-check, and the agreement required.
NUMERIC_DPS = 60
NUMERIC_TOL = 1e-50
NUMERIC_POINTS = 3
#: Largest value of an integer dimension symbol in the numeric cross-check of a matrix identity.
MAX_RANDOM_SIZE = 4


@dataclass
class Verdict:
    """What one checker found for one entry.

    ``passed`` is None when the engine has no evidence for this entry; ``measure`` is the
    engine's number (the mpmath disagreement or violation, a run's worst measured / allowed) and
    ``rows`` a run's checks, as the certificate reports them; ``extra`` are further keys of the
    certificate's ``checkers[engine]`` record (a Coq verdict's file, theorem and SHA-256).
    """

    passed: bool | None
    detail: str = ""
    measure: float | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class Checker(Protocol):
    """An engine that checks registered entries (see the module docstring)."""

    engine: str
    kinds: tuple[str, ...]

    def version(self) -> str:
        """The engine's version, recorded in the certificate."""
        ...

    def check(self, ident: Identity, built: list[Any]) -> Verdict:
        """Check ``ident`` given what its builder returned (pairs, claims or run checks)."""
        ...


CHECKERS: dict[tuple[str, str], Checker] = {}


def register_checker(checker: Checker) -> Checker:
    """Add ``checker`` for each of its kinds (a later registration of the same engine and kind
    replaces the earlier one)."""
    for kind in checker.kinds:
        CHECKERS[(kind, checker.engine)] = checker
    return checker


def checkers_for(kind: str) -> list[Checker]:
    """The checkers of entries of ``kind``, in registration order."""
    discover()
    return [c for (k, _), c in CHECKERS.items() if k == kind]


_DISCOVERED: set[str] = set()


def discover() -> None:
    """Import every ``attnproof/verify/*_checker.py`` module (each registers its engine)."""
    from . import __path__ as here, __name__ as package

    for info in pkgutil.iter_modules(here):
        if info.name.endswith("_checker") and info.name not in _DISCOVERED:
            _DISCOVERED.add(info.name)
            importlib.import_module(f"{package}.{info.name}")


# --- the verdict cache ---------------------------------------------------------------------

#: Environment variable naming the cache directory; ``off`` disables the cache.
CACHE_ENV = "ATTNPROOF_CACHE"
#: The cache directory's name at the root of a source checkout (ignored by git).
CACHE_NAME = ".attnproof-cache"


def cache_dir() -> Path | None:
    """Where cached verdicts live: ``$ATTNPROOF_CACHE`` (``off``: no cache), else
    ``.attnproof-cache/`` at the root of the source checkout (the directory holding
    ``pyproject.toml`` above the package), else ``~/.cache/attnproof``."""
    env = os.environ.get(CACHE_ENV, "")
    if env.lower() == "off":
        return None
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file():
        return root / CACHE_NAME
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "attnproof"


def _cache_file(engine: str, version: str, key: str) -> Path | None:
    base = cache_dir()
    if base is None:
        return None
    name = hashlib.sha256(json.dumps([engine, version, key]).encode()).hexdigest()
    return base / "verdicts" / engine / f"{name}.json"


def cached_verdict(engine: str, version: str, key: str) -> dict[str, Any] | None:
    """The stored ``checkers[engine]`` record for (engine, version, key), or None."""
    path = _cache_file(engine, version, key)
    try:
        stored = json.loads(path.read_text()) if path is not None else None
    except (OSError, ValueError):
        return None
    if not stored or stored.get("key") != [engine, version, key]:
        return None
    return dict(stored["verdict"])


def store_verdict(engine: str, version: str, key: str, record: dict[str, Any]) -> None:
    """Store one ``checkers[engine]`` record under (engine, version, key) (best effort: a
    read-only cache directory only means the engine runs again next time)."""
    path = _cache_file(engine, version, key)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": [engine, version, key], "verdict": record}))
        tmp.replace(path)
    except OSError:
        pass


def source_sha256(*modules: Any) -> str:
    """SHA-256 of the source files of ``modules`` (a checker's code is part of its cache key)."""
    h = hashlib.sha256()
    for m in modules:
        h.update(Path(m.__file__).read_bytes())
    return h.hexdigest()


# --- the numeric and symbolic machinery ---------------------------------------------------


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


def bound_proven(claims: list[BoundClaim]) -> bool:
    """Every ``quantity >= 0`` proven: by sympy's assumptions, or by the interval's lower end."""
    proven = True
    for _, q in claims:
        proven &= bool(q.is_nonnegative) if isinstance(q, sp.Basic) else bool(q.a >= 0)
    return proven


def bound_violation(claims: list[BoundClaim], seed: str) -> float:
    """``max(0, -quantity)`` over random points (sympy claims) or the interval's midpoint."""
    violation = mpmath.mpf(0)
    rnd = random.Random(seed)
    for _, q in claims:
        if isinstance(q, sp.Basic):
            syms = sorted(q.free_symbols, key=str)
            with mpmath.workdps(NUMERIC_DPS):
                fn = sp.lambdify(syms, q, modules="mpmath")
                for _ in range(NUMERIC_POINTS):
                    args = [mpmath.mpf(x.p) / x.q for x in (_random_value(s, rnd) for s in syms)]
                    violation = max(violation, -mpmath.mpf(fn(*args)))
        else:
            violation = max(violation, -mpmath.mpf(q.mid))
    return float(violation)


def run_rows(checks: list[RunCheck]) -> tuple[bool, float, list[dict[str, Any]]]:
    """Evaluate run checks; returns (all passed, worst measured / allowed, the checks as dicts)."""
    rows, worst = [], 0.0
    for desc, measured, allowed in checks:
        m, a = float(measured), float(allowed)
        ok = bool(np.isfinite(m) and np.isfinite(a) and m <= a)
        ratio = m / a if a > 0 and np.isfinite(m) else (0.0 if m <= 0 else float("inf"))
        worst = max(worst, ratio)
        rows.append({"check": desc, "measured": m, "allowed": a, "passed": ok})
    return all(r["passed"] for r in rows), worst, rows


# --- the engines that run today ------------------------------------------------------------


@dataclass(frozen=True)
class _Engine:
    """A checker made of an engine name, its kinds, a version and one check function."""

    engine: str
    kinds: tuple[str, ...]
    _version: Callable[[], str]
    _check: Callable[[Identity, list[Any]], Verdict]

    def version(self) -> str:
        return self._version()

    def check(self, ident: Identity, built: list[Any]) -> Verdict:
        return self._check(ident, built)


def _sympy(ident: Identity, built: list[Any]) -> Verdict:
    if ident.kind == "bound":
        ok = bound_proven(built)
        return Verdict(ok, "every quantity >= 0 proven (assumptions or interval enclosure)" if ok
                       else "a quantity >= 0 is not proven")
    ok = all(is_zero(ident.simplifier(sp.sympify(lhs) - sp.sympify(rhs))) for lhs, rhs in built)
    return Verdict(ok, f"lhs - rhs simplifies to 0 for {len(built)} pairs" if ok
                   else "lhs - rhs does not simplify to 0")


def _mpmath(ident: Identity, built: list[Any]) -> Verdict:
    if ident.kind == "bound":
        worst = bound_violation(built, seed=ident.id)
        what = "largest violation at random points"
    else:
        worst = numeric_check(built, seed=ident.id)
        what = "max relative disagreement at random points"
    return Verdict(worst <= NUMERIC_TOL, f"{what}, {NUMERIC_DPS} digits: {worst:.1e}", worst)


def _learner_run(ident: Identity, built: list[Any]) -> Verdict:
    ok, worst, rows = run_rows(built)
    return Verdict(ok, f"{len(rows)} checks; worst measured / allowed {worst:.2e}", worst, rows)


SYMPY = register_checker(_Engine("sympy", ("identity", "bound"), lambda: sp.__version__, _sympy))
MPMATH = register_checker(_Engine("mpmath", ("identity", "bound"), lambda: mpmath.__version__, _mpmath))
LEARNER_RUN = register_checker(_Engine("learner-run", ("run",), lambda: np.__version__, _learner_run))

__all__ = [
    "NUMERIC_DPS", "NUMERIC_TOL", "NUMERIC_POINTS", "MAX_RANDOM_SIZE", "Verdict", "Checker", "CHECKERS",
    "register_checker", "checkers_for", "discover", "CACHE_ENV", "CACHE_NAME", "cache_dir", "cached_verdict",
    "store_verdict", "source_sha256", "numeric_check", "concrete", "is_zero", "expand_matrix",
    "bound_proven", "bound_violation", "run_rows", "SYMPY", "MPMATH", "LEARNER_RUN",
]
