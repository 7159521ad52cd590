"""The SMT leg of the formal checks (issue 20): every identity proved again by z3 and by cvc5.

Each ``@identity`` pair ``lhs == rhs`` and each sympy-valued ``@bound`` claim ``q >= 0`` of the
registry (:mod:`attnproof.proof`, read only through :func:`registry`) is translated from sympy to
SMT-LIB 2.6 text; the text asserts the symbols' assumptions, the defining constraints of the
auxiliary variables and the axiom instances below, and the **negation** of the statement.  The
statement is proved when the solver answers ``unsat``.  Both solvers read the same text: z3
(``z3-solver``) through ``Solver.from_string`` and cvc5 (the PyPI wheel, with its nonlinear
coverings solver) through its SMT-LIB parser in a forked process, each with a per-query time
limit (:data:`TIMEOUT_MS`); the logic is QF_NRA.

The translation (:class:`Encoder`), and what each step assumes:

* rationals are exact (``(/ p.0 q.0)``); a float constant is refused (exact statements only);
* ``exp`` is an **uninterpreted** function (cvc5's transcendental ``exp`` gets no answer), purified:
  every atom ``exp(t_k)`` is a variable ``E_k`` (atoms whose arguments are equal after expansion
  share it), about which only instances of the axioms are asserted: ``E_k > 0``;
  ``E_i E_j = E_k`` whenever ``t_i + t_j = t_k`` (``= 1`` when ``t_i + t_j = 0``), i = j included;
  and, when these do not suffice (the solver found a model), ``D > 0, E_j D = E_i`` for a new atom
  ``D = exp(t_i - t_j)`` for every pair whose arguments differ by a polynomial.  sympy only
  *chooses* the instances: the argument identities they rely on (``t_i + t_j = t_k``, and
  ``t = t'`` for atoms sharing a variable) are proved by the solver itself in a separate query
  (the **guard** query, under the hypotheses free of the atoms), so a wrong choice can only fail
  a proof;
* ``sin``, ``cos`` likewise (variables ``S_k``, ``C_k``), with ``S_k^2 + C_k^2 = 1`` and the
  addition formulas for arguments summing to another (guards as for exp); ``tan t`` is
  ``sin t / cos t``; the number ``pi`` is a constant with ``3.14159 < pi < 3.14160``;
* ``Abs``, ``Max``, ``Min``, ``sign``, ``Heaviside``, ``Piecewise`` are ``ite`` terms;
* ``b^-n`` is ``v^n`` for a fresh v with ``b v = 1``: the statement is checked where every
  denominator is non-zero (the domain on which the sympy expression is defined);
  ``b^(p/q)`` is ``r^p`` for a fresh ``r >= 0`` with ``r^q = b``: checked where the radicand is
  ``>= 0`` (where the real root the registry means is defined);
* a symbol's assumptions become constraints (``positive``: ``x > 0``; ``nonnegative``; ``nonzero``;
  a positive integer is ``>= 1``); every symbol ranges over the reals, so an integer symbol is
  checked over a larger set (a stronger statement);
* a ``MatrixSymbol`` of symbolic size is instantiated entrywise with real symbols at
  :data:`MATRIX_SIZES` (SMT needs a fixed size): the detail says so, since the registry's claim is
  for every size.

Large statements are proved as **lemma chains**: one query per pair, and one per entry of a
matrix pair, each with only the constraints it needs.  A solver's ``unsat`` is evidence from an
independent implementation, not a proof object.

**Non-vacuity** (:func:`perturb`): each checked entry is perturbed automatically (a rational
constant changed, a term of a sum dropped, or the constant term moved by 1) and the perturbed
statement must come back ``sat`` from both solvers, so the hypotheses are consistent and the
encoding does not make every statement provable.
"""

from __future__ import annotations

import itertools
import multiprocessing
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..errors import AttnproofError

#: The solvers of the SMT leg, in the order they are run.
ENGINES = ("z3", "cvc5")
#: Time limit of one query, per solver, in milliseconds.
TIMEOUT_MS = 5_000
#: Sizes at which every dimension symbol of a MatrixSymbol statement is instantiated.
MATRIX_SIZES = (2, 3)
#: Largest number of exp atoms for which the difference instances (second level) are added.
MAX_DIFF_ATOMS = 12


class UnsupportedError(AttnproofError):
    """A statement the SMT translation cannot encode soundly; the message is the reason."""


def registry() -> dict[str, Any]:
    """The identity registry (``attnproof.proof.REGISTRY``, every room imported).

    The one place this module reads the registry: the records have ``id``, ``kind``
    (``"identity"``, ``"bound"``, ``"run"``), ``scope`` and ``build()`` returning the (lhs, rhs)
    pairs of an identity or the ``(description, quantity)`` claims of a bound.
    """
    from .. import theorems  # noqa: F401  (importing the rooms registers every entry)
    from .registry import REGISTRY
    return REGISTRY


# --------------------------------------------------------------------------- translation

def _num(q: sp.Rational) -> str:
    q = sp.Rational(q)
    mag = f"{abs(q.p)}.0" if q.q == 1 else f"(/ {abs(q.p)}.0 {q.q}.0)"
    return f"(- {mag})" if q < 0 else mag


def _product(factors: list[str]) -> str:
    return factors[0] if len(factors) == 1 else f"(* {' '.join(factors)})"


class Encoder:
    """Translates sympy expressions into SMT-LIB terms, collecting what the terms need.

    ``decls`` are the declarations, ``facts`` the assertions (assumptions, defining constraints,
    axiom instances), ``notes`` human-readable remarks on what the encoding assumed.
    """

    def __init__(self) -> None:
        self.decls: dict[str, str] = {}
        self.facts: list[str] = []
        self.notes: set[str] = set()
        self._names: dict[str, sp.Symbol] = {}
        self._aux: dict[tuple[str, str], str] = {}
        #: exp atoms: expanded argument -> (variable E_k, SMT term of the argument); likewise sin/cos
        self._exp: dict[sp.Expr, tuple[str, str]] = {}
        self._trig: dict[sp.Expr, tuple[str, str, str]] = {}
        #: argument identities the instances rely on, proved by their own query (:meth:`guard_script`)
        self.guards: list[str] = []

    # --- leaves
    def _symbol(self, s: sp.Symbol) -> str:
        name = "|" + s.name.replace("|", "_").replace("\\", "_") + "|"
        if name in self._names and self._names[name] != s:
            raise UnsupportedError(f"two different symbols are both named {s.name!r}")
        if name not in self._names:
            self._names[name] = s
            self.decls[name] = f"(declare-const {name} Real)"
            if s.is_real is not True:
                self.notes.add(f"{s.name} has no real assumption: checked over the reals")
            if s.is_positive:
                self.facts.append(f"(>= {name} 1.0)" if s.is_integer else f"(> {name} 0.0)")
            elif s.is_nonnegative:
                self.facts.append(f"(>= {name} 0.0)")
            elif s.is_negative:
                self.facts.append(f"(< {name} 0.0)")
            elif s.is_nonpositive:
                self.facts.append(f"(<= {name} 0.0)")
            if s.is_nonzero and not (s.is_positive or s.is_negative):
                self.facts.append(f"(not (= {name} 0.0))")
        return name

    def _fresh(self, kind: str, key: str) -> tuple[str, bool]:
        if (kind, key) in self._aux:
            return self._aux[kind, key], False
        name = f"|{kind}_{len(self._aux)}|"
        self._aux[kind, key] = name
        self.decls[name] = f"(declare-const {name} Real)"
        return name, True

    def _atom(self, arg: sp.Expr) -> tuple[sp.Expr, str]:
        """(key, SMT term) of a function argument; a repeated key (an argument equal to an
        earlier one after expansion) adds the congruence guard ``t = t_first``."""
        t = self.term(arg)
        key = sp.expand(arg)
        first = self._exp.get(key, (None, None))[1] or self._trig.get(key, (None, None, None))[2]
        if first is not None and first != t:
            self.guards.append(f"(= {t} {first})")
        return key, t

    # --- terms
    def term(self, e: Any) -> str:
        """The SMT-LIB term of a real-valued sympy expression."""
        e = sp.sympify(e)
        if isinstance(e, sp.Symbol):
            return self._symbol(e)
        if isinstance(e, sp.Float):
            raise UnsupportedError(f"float constant {e}: the SMT leg takes exact rationals only")
        if isinstance(e, sp.Rational):
            return _num(e)
        if e is sp.pi:
            name = "|pi|"
            if name not in self.decls:
                self.decls[name] = f"(declare-const {name} Real)"
                self.facts.append("(< (/ 314159.0 100000.0) |pi| (/ 314160.0 100000.0))")
                self.notes.add("pi is a constant in (3.14159, 3.14160)")
            return name
        if e is sp.E:
            return self.term(sp.exp(1, evaluate=False))
        if isinstance(e, sp.Add):
            return f"(+ {' '.join(self.term(a) for a in e.args)})"
        if isinstance(e, sp.Mul):
            return _product([self.term(a) for a in e.args])
        if isinstance(e, sp.Pow):
            return self._pow(e.base, e.exp)
        if isinstance(e, sp.exp):
            key, t = self._atom(e.args[0])
            if key not in self._exp:
                name = f"|exp_{len(self._exp)}|"
                self._exp[key] = (name, t)
                self.decls[name] = f"(declare-const {name} Real)"
            return self._exp[key][0]
        if isinstance(e, (sp.sin, sp.cos)):
            key, t = self._atom(e.args[0])
            if key not in self._trig:
                n = len(self._trig)
                self._trig[key] = (f"|sin_{n}|", f"|cos_{n}|", t)
                for name in self._trig[key][:2]:
                    self.decls[name] = f"(declare-const {name} Real)"
            return self._trig[key][isinstance(e, sp.cos)]
        if isinstance(e, sp.tan):
            return self.term(sp.sin(e.args[0]) * sp.Pow(sp.cos(e.args[0]), -1, evaluate=False))
        if isinstance(e, sp.Abs):
            x = self.term(e.args[0])
            return f"(ite (>= {x} 0.0) {x} (- {x}))"
        if isinstance(e, (sp.Max, sp.Min)):
            op = ">=" if isinstance(e, sp.Max) else "<="
            out = self.term(e.args[0])
            for a in e.args[1:]:
                x = self.term(a)
                out = f"(ite ({op} {out} {x}) {out} {x})"
            return out
        if isinstance(e, sp.sign):
            x = self.term(e.args[0])
            return f"(ite (> {x} 0.0) 1.0 (ite (< {x} 0.0) (- 1.0) 0.0))"
        if isinstance(e, sp.Heaviside):
            x = self.term(e.args[0])
            half = self.term(e.args[1]) if len(e.args) > 1 else "(/ 1.0 2.0)"
            return f"(ite (> {x} 0.0) 1.0 (ite (< {x} 0.0) 0.0 {half}))"
        if isinstance(e, sp.Piecewise):
            return self._piecewise(list(e.args))
        raise UnsupportedError(f"no SMT encoding of {type(e).__name__} (in {str(e)[:80]})")

    def _piecewise(self, branches: list[tuple[sp.Expr, Any]]) -> str:
        (val, cond), rest = branches[0], branches[1:]
        if cond is sp.true or not rest:
            if cond is not sp.true:
                self.notes.add("a Piecewise without a default is checked where a branch applies")
                self.facts.append(self.formula(cond))
            return self.term(val)
        return f"(ite {self.formula(cond)} {self.term(val)} {self._piecewise(rest)})"

    def formula(self, c: Any) -> str:
        """The SMT-LIB formula of a sympy relational or boolean."""
        if c is sp.true:
            return "true"
        if c is sp.false:
            return "false"
        ops = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">",
               sp.GreaterThan: ">=", sp.Equality: "="}
        if type(c) in ops:
            return f"({ops[type(c)]} {self.term(c.lhs)} {self.term(c.rhs)})"
        if isinstance(c, sp.Unequality):
            return f"(not (= {self.term(c.lhs)} {self.term(c.rhs)}))"
        if isinstance(c, (sp.And, sp.Or)):
            return f"({'and' if isinstance(c, sp.And) else 'or'} {' '.join(self.formula(a) for a in c.args)})"
        if isinstance(c, sp.Not):
            return f"(not {self.formula(c.args[0])})"
        raise UnsupportedError(f"no SMT encoding of the condition {c}")

    def _pow(self, base: sp.Expr, ex: sp.Expr) -> str:
        if not isinstance(ex, sp.Rational):
            raise UnsupportedError(f"power with a non-rational exponent {ex}")
        b = self.term(base)
        p, q = ex.p, ex.q
        if q != 1:
            r, new = self._fresh("root", f"{q} {b}")
            if new:
                self.facts += [f"(>= {r} 0.0)", f"(= {_product([r] * q)} {b})"]
                self.notes.add(f"x^(1/{q}) is r >= 0 with r^{q} = x: checked where the radicand is >= 0")
            b = r
        if p < 0:
            v, new = self._fresh("inv", b)
            if new:
                self.facts.append(f"(= (* {b} {v}) 1.0)")
                self.notes.add("1/x is v with x v = 1: checked where every denominator is non-zero")
            b, p = v, -p
        return "1.0" if p == 0 else _product([b] * p)

    # --- axiom instances
    def instances(self, level: int) -> list[str]:
        """Instances of the exp and trigonometric axioms on the atoms translated so far.

        ``level`` 1: ``E_k > 0`` and ``E_i E_j = E_k`` (or ``= 1``) whenever the arguments satisfy
        ``t_i + t_j = t_k`` (or ``= 0``), an identity added to :attr:`guards`; level 2 also the
        difference atoms ``D = exp(t_i - t_j)`` with ``E_j D = E_i`` for every other pair."""
        out: list[str] = []
        atoms = list(self._exp.items())
        out += [f"(> {e} 0.0)" for _, (e, _) in atoms]
        for (ki, (ei, ti)), (kj, (ej, tj)) in itertools.combinations_with_replacement(atoms, 2):
            s = sp.expand(ki + kj)
            if s == 0 or s in self._exp:
                ek, tk = ("1.0", "0.0") if s == 0 else self._exp[s]
                self.guards.append(f"(= (+ {ti} {tj}) {tk})")
                out.append(f"(= (* {ei} {ej}) {ek})")
        if level >= 2 and len(atoms) <= MAX_DIFF_ATOMS:
            for n, ((ki, (ei, _)), (kj, (ej, _))) in enumerate(itertools.permutations(atoms, 2)):
                if sp.expand(ki - kj) not in self._exp:
                    name = f"|expdiff_{n}|"
                    self.decls[name] = f"(declare-const {name} Real)"
                    out += [f"(> {name} 0.0)", f"(= (* {ej} {name}) {ei})"]
        targs = list(self._trig.items())
        out += [f"(= (+ (* {sn} {sn}) (* {cs} {cs})) 1.0)" for _, (sn, cs, _) in targs]
        for (ki, (si, ci, ti)), (kj, (sj, cj, tj)) in itertools.combinations_with_replacement(targs, 2):
            s = sp.expand(ki + kj)
            if s in self._trig:
                sk, ck, tk = self._trig[s]
                self.guards.append(f"(= (+ {ti} {tj}) {tk})")
                out += [f"(= {sk} (+ (* {si} {cj}) (* {ci} {sj})))",
                        f"(= {ck} (- (* {ci} {cj}) (* {si} {sj})))"]
        return out

    def guard_script(self) -> str | None:
        """The query proving every argument identity the instances rely on (None if there are none):
        under the hypotheses that do not mention the atoms' variables (so that setting
        ``E_k = exp(t_k)`` afterwards is sound), the disjunction of their negations must be unsat."""
        if not self.guards:
            return None
        atoms = ("|exp_", "|expdiff_", "|sin_", "|cos_")
        facts = [f for f in self.facts if not any(a in f for a in atoms)]  # hypotheses free of the atoms
        lines = ["(set-logic QF_NRA)", *self.decls.values(), *(f"(assert {f})" for f in facts)]
        negs = " ".join(f"(not {g})" for g in dict.fromkeys(self.guards))
        return "\n".join([*lines, f"(assert (or {negs} false))", "(check-sat)", ""])

    def script(self, goal_negation: str, level: int = 1) -> str:
        """The main query: declarations, facts, axiom instances, the negated goal."""
        inst = self.instances(level)
        lines = ["(set-logic QF_NRA)", *self.decls.values()]
        lines += [f"(assert {f})" for f in [*self.facts, *inst, goal_negation]]
        return "\n".join([*lines, "(check-sat)", ""])


# --------------------------------------------------------------------------- statements

@dataclass(frozen=True)
class Goal:
    """One query of a lemma chain: ``lhs == rhs`` (an identity) or ``lhs >= 0`` (a bound)."""

    name: str
    lhs: sp.Expr
    rhs: sp.Expr | None  # None: the claim lhs >= 0

    def negation(self, enc: Encoder) -> str:
        if self.rhs is None:
            return f"(< {enc.term(self.lhs)} 0.0)"
        return f"(not (= {enc.term(self.lhs)} {enc.term(self.rhs)}))"

    def scripts(self, level: int = 1) -> tuple[str, str | None, list[str]]:
        """(main query, guard query or None, notes) at an axiom-instance level (1 or 2)."""
        enc = Encoder()
        main = enc.script(self.negation(enc), level)
        return main, enc.guard_script(), sorted(enc.notes) + (
            [f"exp difference instances (level {level})"] if level == 2 else [])

    def uses_exp(self) -> bool:
        """Whether the goal has exp atoms (then level 2 exists)."""
        enc = Encoder()
        self.negation(enc)
        return bool(enc._exp)


def _instantiate(lhs: Any, rhs: Any, size: int) -> list[tuple[sp.Expr, sp.Expr]]:
    """A pair with MatrixSymbols of symbolic size at ``size``, as scalar entry pairs (real
    symbols ``name_i_j`` for the entries)."""
    exprs = [sp.sympify(lhs), sp.sympify(rhs)]
    mats = sorted(set().union(*(e.atoms(sp.MatrixSymbol) for e in exprs)), key=str)
    dims = {x: size for m in mats for n in m.shape for x in sp.sympify(n).free_symbols}
    values = {}
    for m in mats:
        shape = [int(sp.sympify(n).subs(dims)) for n in m.shape]
        values[sp.MatrixSymbol(m.name, *shape)] = sp.Matrix(
            *shape, lambda i, j: sp.Symbol(f"{m.name}_{i + 1}_{j + 1}", real=True))
    sides = []
    for e in exprs:
        v = e.subs(dims).xreplace(values).doit()
        sides.append(list(sp.Matrix(v)) if isinstance(v, (sp.MatrixBase, sp.MatrixExpr)) else [v])
    return list(zip(sides[0], sides[1]))


def goals(ident: Any) -> tuple[list[Goal], list[str]]:
    """The lemma chain of a registry entry and remarks on its scope.

    Raises
    ------
    UnsupportedError
        For a run, or a bound some of whose claims are interval enclosures (mpmath.iv).
    """
    if ident.kind == "run":
        raise UnsupportedError("a run (a learner executed in float64/mpmath): numeric evidence, no statement")
    items = ident.build()
    out: list[Goal] = []
    remarks: list[str] = []
    if ident.kind == "bound":
        numeric = [k for k, (_, q) in enumerate(items, 1) if not isinstance(q, (sp.Basic, int))]
        out = [Goal(f"claim {k}", sp.sympify(q), None)
               for k, (_, q) in enumerate(items, 1) if k not in numeric]
        if numeric:
            why = (f"{'all ' * (not out)}{len(numeric)} claim{'s' * (len(numeric) > 1)} (claim {numeric[0]}: "
                   f"{items[numeric[0] - 1][0]}) {'are' if len(numeric) > 1 else 'is'} mpmath.iv interval "
                   "enclosures, numeric bounds with no symbolic statement: checked by the Arb leg "
                   "(attnproof.verify.arb)")
            if not out:
                raise UnsupportedError(why)
            remarks.append(why.replace("enclosures, numeric", "enclosures (not SMT-checked), numeric"))
        return out, remarks
    for k, (lhs, rhs) in enumerate(items, 1):
        if any(sp.sympify(e).atoms(sp.MatrixSymbol) for e in (lhs, rhs)):
            for size in MATRIX_SIZES:
                for n, (a, b) in enumerate(_instantiate(lhs, rhs, size), 1):
                    out.append(Goal(f"pair {k} at size {size} entry {n}", a, b))
            remarks.append(
                f"statement for every size (MatrixSymbol of symbolic size): SMT needs a fixed size, "
                f"checked entrywise with every dimension = {' and '.join(map(str, MATRIX_SIZES))}")
        else:
            out.append(Goal(f"pair {k}", sp.sympify(lhs), sp.sympify(rhs)))
    return out, remarks


# --------------------------------------------------------------------------- solvers

@dataclass
class Answer:
    """One solver's answer to one script."""

    engine: str
    answer: str  # "unsat", "sat", "unknown" (including a timeout), or "error: ..."
    seconds: float
    model: str = ""


def version(engine: str) -> str:
    """The solver's version string."""
    if engine == "z3":
        import z3
        return z3.get_version_string()
    import cvc5
    return cvc5.Solver().getVersion().decode() if hasattr(cvc5.Solver(), "getVersion") else cvc5.__version__


def _z3(text: str, timeout_ms: int, want_model: bool) -> tuple[str, str]:
    import z3
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.from_string(text)
    r = str(s.check())
    return r, (str(s.model()) if r == "sat" and want_model else "")


#: cvc5's strategies, tried in turn while the answer is unknown: its nonlinear coverings solver
#: (complete for NRA, but it answers "incomplete" on many of these queries), then incremental
#: linearization with the full set of extended lemmas.
CVC5_STRATEGIES: tuple[dict[str, str], ...] = ({"nl-cov": "true"}, {"nl-cov": "false", "nl-ext": "full"})


def _cvc5(text: str, timeout_ms: int, want_model: bool) -> tuple[str, str]:
    for options in CVC5_STRATEGIES:
        r, model = _cvc5_once(text, timeout_ms, want_model, options)
        if r != "unknown":
            break
    return r, model


def _cvc5_once(text: str, timeout_ms: int, want_model: bool, options: dict[str, str]) -> tuple[str, str]:
    import cvc5
    slv = cvc5.Solver()
    slv.setOption("tlimit-per", str(timeout_ms))
    slv.setOption("produce-models", "true")
    for k, v in options.items():
        slv.setOption(k, v)
    sm = cvc5.SymbolManager(slv.getTermManager())
    answers = []
    for src in (text, "(get-model)\n"):
        parser = cvc5.InputParser(slv, sm)
        parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, src, "attnproof")
        while True:
            cmd = parser.nextCommand()
            if cmd.isNull():
                break
            answers.append(cmd.invoke(slv, sm).strip())
        if not want_model or not answers or answers[-1] != "sat":
            break
    verdicts = [a.split()[0] for a in answers if a.split()[:1] in (["sat"], ["unsat"], ["unknown"])]
    if not verdicts:
        raise AttnproofError(f"cvc5 gave no verdict: {' | '.join(answers)[:200]}")
    r = verdicts[-1]
    return r, (answers[-1] if r == "sat" and want_model else "")


_RUNNERS: dict[str, Callable[[str, int, bool], tuple[str, str]]] = {"z3": _z3, "cvc5": _cvc5}


def _child(conn: Any, engine: str, text: str, timeout_ms: int, want_model: bool) -> None:
    try:
        conn.send(_RUNNERS[engine](text, timeout_ms, want_model))
    except Exception as exc:  # reported to the parent as an error answer
        conn.send((f"error: {type(exc).__name__}: {exc}"[:300], ""))
    conn.close()


def solve(engine: str, text: str, timeout_ms: int = TIMEOUT_MS, want_model: bool = False) -> Answer:
    """Run ``engine`` on the SMT-LIB ``text``; a solver exception is an ``error:`` answer.

    The solver's own time limit is ``timeout_ms`` (per strategy for cvc5, :data:`CVC5_STRATEGIES`).
    cvc5 runs in a forked process killed one second after its limits (its limit is not checked
    inside every procedure: a nonlinear query can overrun it), which is the answer
    ``unknown (killed)``; z3 keeps its limit and runs here."""
    t0 = time.perf_counter()
    if engine == "z3":  # z3 keeps its own limit: no process needed
        try:
            r, model = _z3(text, timeout_ms, want_model)
        except Exception as exc:  # a solver failure is reported, never taken for a proof
            r, model = f"error: {type(exc).__name__}: {exc}"[:300], ""
        return Answer(engine, r, time.perf_counter() - t0, model)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, engine, text, timeout_ms, want_model), daemon=True)
    proc.start()
    send.close()
    if recv.poll(len(CVC5_STRATEGIES) * timeout_ms / 1000 + 1):
        r, model = recv.recv()
    else:
        r, model = "unknown (killed)", ""
    proc.kill()
    proc.join()
    recv.close()
    return Answer(engine, r, time.perf_counter() - t0, model)


def prove_goal(engine: str, goal: Goal, timeout_ms: int = TIMEOUT_MS) -> tuple[Answer, list[str]]:
    """Prove one goal with one solver: the argument identities (guard query) and the main query
    both ``unsat``, at instance level 1, else (when level 1 is ``sat`` and the goal has exp atoms)
    at level 2.

    Returns the deciding answer (with a model when the solver found a counterexample) and notes.
    """
    spent = 0.0
    for level in (1, 2) if goal.uses_exp() else (1,):
        main, guard, notes = goal.scripts(level)
        a = solve(engine, guard, timeout_ms) if guard else Answer(engine, "unsat", 0.0)
        spent += a.seconds
        if a.answer == "unsat":
            a = solve(engine, main, timeout_ms, want_model=True)
            spent += a.seconds
        else:
            a.answer = f"argument identities: {a.answer}"
        if a.answer != "sat":  # level 2 adds instances: it can only help when level 1 found a model
            break
    a.seconds = spent
    return a, notes + (["argument identities of the instances proved by their own query"] if guard else [])


# --------------------------------------------------------------------------- entries

@dataclass
class EngineReport:
    """What one engine did on one registry entry (the certificate's ``checkers`` value)."""

    passed: bool
    seconds: float
    version: str
    detail: str
    counterexample: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "seconds": self.seconds, "version": self.version,
                "detail": self.detail}


@dataclass
class EntryResult:
    """Both engines on one registry entry; ``unsupported`` is the reason when not encodable."""

    id: str
    kind: str
    reports: dict[str, EngineReport] = field(default_factory=dict)
    unsupported: str = ""
    goals: list[Goal] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.unsupported and all(r.passed for r in self.reports.values()) and bool(self.reports)

    def checkers(self) -> dict[str, dict[str, Any]]:
        """The certificate's ``checkers`` entries of the two solvers; an unsupported entry is
        *not run* for both, with the reason as its detail (never passed)."""
        if self.unsupported:
            return {e: {"passed": False, "seconds": 0.0, "version": version(e),
                        "detail": f"not run: {self.unsupported}"} for e in ENGINES}
        return {e: r.as_dict() for e, r in self.reports.items()}


def check_entry(ident: Any, engines: tuple[str, ...] = ENGINES, timeout_ms: int = TIMEOUT_MS) -> EntryResult:
    """Prove every goal of one registry entry with each engine (see the module docstring)."""
    res = EntryResult(ident.id, ident.kind)
    try:
        gs, remarks = goals(ident)
        if not gs:
            raise UnsupportedError("the entry has no statement")
        for g in gs:  # translate once up front: an unencodable statement is reported as such
            g.scripts()
    except UnsupportedError as exc:
        res.unsupported = str(exc)
        return res
    res.goals = gs
    for engine in engines:
        spent, notes, failed = 0.0, set(remarks), None
        for g in gs:
            a, n = prove_goal(engine, g, timeout_ms)
            spent += a.seconds
            notes |= set(n)
            if a.answer != "unsat":
                failed = (g, a)
                break
        if failed:
            g, a = failed
            detail = f"{g.name}: {a.answer} (not proved)" if not a.answer.startswith("unknown") else (
                f"{g.name}: {a.answer} within {timeout_ms} ms ({engine} found neither a proof nor a "
                "counterexample; the statement is not contradicted)")
        else:
            detail = f"{len(gs)} goal{'s' * (len(gs) > 1)} unsat" + (
                " (a lemma chain: one query per pair/entry)" if len(gs) > 1 else "")
        detail = "; ".join([detail, *sorted(notes)])
        res.reports[engine] = EngineReport(
            failed is None, spent, version(engine), detail, failed[1].model if failed else "")
    return res


# --------------------------------------------------------------------------- non-vacuity

def _perturbations(goal: Goal) -> Iterator[tuple[str, Goal]]:
    side = goal.lhs if goal.rhs is None else goal.rhs
    consts = sorted({c for c in side.atoms(sp.Rational) if c not in (0, 1, -1)}, key=lambda c: (abs(c), c))
    for c in consts[:2]:
        yield f"constant {c} -> {c + 1}", side.xreplace({c: c + 1})
    if isinstance(side, sp.Add):
        yield f"term {side.args[0]} dropped"[:120], side - side.args[0]
    yield "constant term moved by 1" if goal.rhs is not None else "claim q >= 0 made q >= 1", side + (
        1 if goal.rhs is not None else -1)
    if goal.rhs is None:  # a constant claim such as 1 >= 0 survives the shift by 1
        yield "claim q >= 0 made -q >= 0", -side


def perturb(res: EntryResult, engines: tuple[str, ...] = ENGINES,
            timeout_ms: int = TIMEOUT_MS) -> tuple[str, dict[str, Answer]]:
    """A perturbed statement of the entry's first goal that every engine answers ``sat``.

    Returns (what was perturbed, each engine's answer); the answers are the last candidate's
    when none is refuted by every engine.
    """
    goal = res.goals[0]
    answers: dict[str, Answer] = {}
    desc = ""
    for desc, side in _perturbations(goal):
        g = Goal(goal.name + " perturbed", goal.lhs, side) if goal.rhs is not None else Goal(
            goal.name + " perturbed", side, None)
        if sp.expand(side - (goal.rhs if goal.rhs is not None else goal.lhs)) == 0:
            continue
        text = g.scripts()[0]
        answers = {e: solve(e, text, timeout_ms) for e in engines}
        if all(a.answer == "sat" for a in answers.values()):
            break
    return f"{goal.name}: {desc}", answers


def summary(results: list[EntryResult]) -> dict[str, Any]:
    """Per engine: entries checked, passed, total seconds; and the unsupported entries with why."""
    out: dict[str, Any] = {}
    for e in ENGINES:
        reps = [r.reports[e] for r in results if e in r.reports]
        out[e] = {"entries": len(reps), "passed": sum(r.passed for r in reps),
                  "seconds": sum(r.seconds for r in reps),
                  "not proved": {r.id: r.reports[e].detail for r in results
                                 if e in r.reports and not r.reports[e].passed}}
    out["unsupported"] = {r.id: r.unsupported for r in results if r.unsupported}
    return out


def check_all(ids: list[str] | None = None, engines: tuple[str, ...] = ENGINES,
              timeout_ms: int = TIMEOUT_MS) -> list[EntryResult]:
    """:func:`check_entry` on every identity and bound of the registry (or on ``ids``)."""
    reg = registry()
    return [check_entry(reg[i], engines, timeout_ms) for i in (ids or list(reg))
            if reg[i].kind != "run"]


__all__ = [
    "ENGINES", "TIMEOUT_MS", "CVC5_STRATEGIES", "MATRIX_SIZES", "UnsupportedError", "registry", "Encoder",
    "Goal",
    "goals", "Answer", "solve", "prove_goal", "version", "EngineReport", "EntryResult",
    "check_entry", "perturb", "summary", "check_all",
]
