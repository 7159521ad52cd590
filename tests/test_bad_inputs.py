"""The bad-input matrix: every public entry point x every class of bad input.

Each cell names its expected outcome: a typed :mod:`attnproof.errors` exception (the API), or
for the command line exit status 2 with one line on stderr and no traceback.  ``ACCEPTED``
marks inputs that must work (numpy scalar types, valid arguments next to a refused one).

No cell is expected to fail: every learner's arguments are checked by the shared validators
(``attnproof.prelude.check_rng``, ``check_tolerance``, ``check_count``, ``check_arith``) or its
own, and every oracle answer at ``Session.ask``.  The strategies' refusals are tabulated in
``tests/test_strategies.py`` (``BAD_ARGUMENTS``); here only the numpy scalar types they accept.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnproof import (
    learn_ffn,
    learn_membership,
    learn_membership_rotated,
    learn_multihead_sbd,
    learn_orthogonal_heads,
    learn_transformer,
    prelude,
)
from attnproof import strategies as ast
from attnproof.arith import FLOAT64, MP, SYMPY
from attnproof.errors import AssumptionError, AttnproofError, InvalidInputError, NonFiniteError, ShapeError
from attnproof.measure import Session
from attnproof.models import (
    Attention,
    FactoredAttention,
    MultiHeadAttention,
    OneLayerTransformer,
    ReluFFN,
)
from attnproof.oracles import ApproxOracle, ValueOracle
from attnproof.theorems.membership import MembershipOracle
from attnproof.theorems.multihead import cayley_bases
from attnproof.verify.registry import LEARNERS
from attnproof.theorems.exact import learn_exact
from attnproof.theorems.lowrank import learn_lowrank_cvx, learn_skeleton, learn_skeleton_adaptive
from attnproof.theorems.noisy import (
    CORRECTED,
    check_assumptions,
    design_tolerances,
    learn_noisy,
    paper_tolerances,
)

from helpers import cli

ACCEPTED = "accepted"
NAN, INF = float("nan"), float("inf")


def cell(name: str, expected: type[Exception] | str | int, *rest: Any) -> Any:
    """``cell(name, expected, [marks...,] call or CLI arguments)``: one parametrized case."""
    *marks, call = rest
    return pytest.param(call, expected, id=name, marks=marks)


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def model(d: int = 3) -> Attention:
    g = rng()
    return Attention(g.standard_normal((d, d)) / 2, g.standard_normal(d))


def oracle(d: int = 3) -> ValueOracle:
    return ValueOracle(model(d))


def low_rank_oracle(d: int = 4, r: int = 1) -> ValueOracle:
    g = rng()
    K, Q, v = g.standard_normal((r, d)), g.standard_normal((r, d)), g.standard_normal(d)
    return ValueOracle(FactoredAttention(K, Q, v))


def margin_oracle() -> ValueOracle:
    """A target inside Thm 6.1's assumptions: ||W*||_F <= 2, ||v*|| <= 1, mu = 0.5."""
    return ValueOracle(Attention(np.eye(2) / 2, np.array([0.6, -0.6])))


def cvx(**kw: Any) -> Any:
    pytest.importorskip("cvxpy")
    return learn_lowrank_cvx(low_rank_oracle(), **kw)


def draw_once(*strategies: st.SearchStrategy[Any]) -> None:
    """Build and draw from each strategy: numpy arguments must work at draw time too."""
    given(st.tuples(*strategies))(settings(max_examples=1, database=None)(lambda _: None))()


TOL = dict(eps_W=0.1, eps_v=0.1, W_bound=2.0, mu=0.5, d=4)

API = [
    # --- learn_exact -------------------------------------------------------------------------
    cell("exact-wrong-type-oracle", InvalidInputError,
         lambda: learn_exact(model(), probes="basis")),
    cell("exact-wrong-type-probes", InvalidInputError, lambda: learn_exact(oracle(), probes=3)),
    cell("exact-wrong-type-rng", InvalidInputError,
         lambda: learn_exact(oracle(), probes="gaussian", rng=0)),
    cell("exact-wrong-shape-probes", ShapeError, lambda: learn_exact(oracle(), probes=np.eye(2))),
    cell("exact-nan-probes", NonFiniteError, lambda: learn_exact(oracle(), probes=np.diag([1.0, NAN, 1.0]))),
    cell("exact-zero-max-batch-bytes", InvalidInputError,
         lambda: learn_exact(oracle(), probes="basis", max_batch_bytes=0)),
    cell("exact-out-of-range-probes", InvalidInputError,
         lambda: learn_exact(oracle(), probes="hadamard", rng=rng())),
    cell("exact-numpy-float32-probes", ACCEPTED,
         lambda: learn_exact(oracle(), probes=np.eye(3, dtype=np.float32))),
    cell("exact-numpy-int-max-batch-bytes", ACCEPTED,
         lambda: learn_exact(oracle(), probes="basis", max_batch_bytes=np.int64(2**20))),
    # --- learn_noisy -------------------------------------------------------------------------
    cell("noisy-wrong-type-W-bound", InvalidInputError,
         lambda: learn_noisy(margin_oracle(), W_bound="2", mu=0.5)),
    cell("noisy-wrong-type-design", InvalidInputError,
         lambda: learn_noisy(margin_oracle(), W_bound=2.0, mu=0.5, design=None)),
    cell("noisy-nan-mu", NonFiniteError, lambda: learn_noisy(margin_oracle(), W_bound=2.0, mu=NAN)),
    cell("noisy-inf-W-bound", AssumptionError, lambda: learn_noisy(margin_oracle(), W_bound=INF, mu=0.5)),
    cell("noisy-zero-mu", AssumptionError, lambda: learn_noisy(margin_oracle(), W_bound=2.0, mu=0.0)),
    cell("noisy-out-of-range-W-bound", AssumptionError,
         lambda: learn_noisy(margin_oracle(), W_bound=1.0, mu=0.5)),
    cell("noisy-numpy-scalars", ACCEPTED,
         lambda: learn_noisy(margin_oracle(), W_bound=np.float32(2.0), mu=np.float64(0.5))),
    # --- learn_skeleton ----------------------------------------------------------------------
    cell("skeleton-wrong-type-rank", InvalidInputError,
         lambda: learn_skeleton(low_rank_oracle(), rank=1.5, rng=rng())),
    cell("skeleton-wrong-type-rng", InvalidInputError,
         lambda: learn_skeleton(low_rank_oracle(), rank=1, rng=None)),
    cell("skeleton-negative-rank", InvalidInputError,
         lambda: learn_skeleton(low_rank_oracle(), rank=-1, rng=rng())),
    cell("skeleton-negative-checks", InvalidInputError,
         lambda: learn_skeleton(low_rank_oracle(), rank=1, rng=rng(), checks=-1)),
    cell("skeleton-out-of-range-rank", InvalidInputError,
         lambda: learn_skeleton(low_rank_oracle(), rank=5, rng=rng())),
    cell("skeleton-out-of-range-checks", InvalidInputError,
         lambda: learn_skeleton(low_rank_oracle(), rank=1, rng=rng(), checks=5)),
    cell("skeleton-nan-rank-tol", InvalidInputError,
         lambda: learn_skeleton(low_rank_oracle(), rank=1, rng=rng(), rank_tol=NAN)),
    cell("skeleton-numpy-int-rank-checks", ACCEPTED,
         lambda: learn_skeleton(low_rank_oracle(), rank=np.int64(1), rng=rng(), checks=np.int32(1))),
    # --- learn_skeleton_adaptive -------------------------------------------------------------
    cell("adaptive-wrong-type-rng", InvalidInputError,
         lambda: learn_skeleton_adaptive(low_rank_oracle(), rng=None)),
    cell("adaptive-negative-rank-tol", InvalidInputError,
         lambda: learn_skeleton_adaptive(low_rank_oracle(), rng=rng(), rank_tol=-1.0)),
    cell("adaptive-numpy-float-rank-tol", ACCEPTED,
         lambda: learn_skeleton_adaptive(low_rank_oracle(), rng=rng(), rank_tol=np.float32(1e-6))),
    # --- learn_lowrank_cvx -------------------------------------------------------------------
    cell("cvx-wrong-type-m", InvalidInputError, lambda: cvx(m=20.5, rng=rng())),
    cell("cvx-wrong-type-rng", InvalidInputError, lambda: cvx(m=20, rng=None)),
    cell("cvx-zero-m", InvalidInputError, lambda: cvx(m=0, rng=rng())),
    cell("cvx-negative-m", InvalidInputError, lambda: cvx(m=-3, rng=rng())),
    cell("cvx-numpy-int-m", ACCEPTED, lambda: cvx(m=np.int64(40), rng=rng())),
    # --- ValueOracle ---------------------------------------------------------------------------
    cell("value-oracle-wrong-type-model", InvalidInputError, lambda: ValueOracle(np.eye(3))),
    cell("value-oracle-wrong-type-budget", InvalidInputError, lambda: ValueOracle(model(), budget="3")),
    cell("value-oracle-bool-budget", InvalidInputError, lambda: ValueOracle(model(), budget=True)),
    cell("value-oracle-wrong-shape-query", ShapeError, lambda: oracle()(np.ones((2, 4)))),
    cell("value-oracle-d-0-model", InvalidInputError,
         lambda: ValueOracle(Attention(np.zeros((0, 0)), np.zeros(0)))),
    cell("value-oracle-nan-query", NonFiniteError, lambda: oracle()(np.full((2, 3), NAN))),
    cell("value-oracle-negative-budget", InvalidInputError, lambda: ValueOracle(model(), budget=-1)),
    cell("value-oracle-non-integer-budget", InvalidInputError, lambda: ValueOracle(model(), budget=2.5)),
    cell("value-oracle-numpy-int-budget", ACCEPTED, lambda: ValueOracle(model(), budget=np.int64(5))),
    # --- ApproxOracle --------------------------------------------------------------------------
    cell("approx-oracle-wrong-type-tau", InvalidInputError, lambda: ApproxOracle(model(), tau="0.1")),
    cell("approx-oracle-nan-tau", InvalidInputError, lambda: ApproxOracle(model(), tau=NAN)),
    cell("approx-oracle-zero-tau", InvalidInputError, lambda: ApproxOracle(model(), tau=0.0)),
    cell("approx-oracle-negative-tau", InvalidInputError, lambda: ApproxOracle(model(), tau=-1e-3)),
    cell("approx-oracle-out-of-range-adversary", InvalidInputError,
         lambda: ApproxOracle(model(), tau=0.1, adversary="kind")),
    cell("approx-oracle-d-0-model", InvalidInputError,
         lambda: ApproxOracle(Attention(np.zeros((0, 0)), np.zeros(0)), tau=0.1)),
    cell("approx-oracle-numpy-float32-tau", ACCEPTED,
         lambda: ApproxOracle(model(), tau=np.float32(0.1))),
    # --- Attention ----------------------------------------------------------------------------
    cell("attention-wrong-type-W", InvalidInputError, lambda: Attention("W", np.ones(3))),
    cell("attention-wrong-shape-W", ShapeError, lambda: Attention(np.ones((2, 3)), np.ones(2))),
    cell("attention-wrong-shape-c", ShapeError, lambda: Attention(np.eye(3), np.ones(3), c=np.ones(2))),
    cell("attention-d-0", ShapeError, lambda: Attention(np.zeros((0, 0)), np.zeros(0))),
    cell("attention-nan-W", NonFiniteError, lambda: Attention(np.diag([1.0, NAN]), np.ones(2))),
    cell("attention-inf-beta", NonFiniteError, lambda: Attention(np.eye(2), np.ones(2), beta=INF)),
    cell("attention-numpy-types", ACCEPTED,
         lambda: Attention(np.eye(2, dtype=np.float32), np.ones(2, dtype=np.int64), beta=np.float32(1))),
    # --- FactoredAttention -------------------------------------------------------------------
    cell("factored-wrong-shape-K", ShapeError,
         lambda: FactoredAttention(np.ones((1, 3)), np.ones((2, 3)), np.ones(3))),
    cell("factored-d-0", ShapeError,
         lambda: FactoredAttention(np.ones((1, 0)), np.ones((1, 0)), np.zeros(0))),
    cell("factored-nan-Q", NonFiniteError,
         lambda: FactoredAttention(np.ones((1, 2)), np.array([[1.0, NAN]]), np.ones(2))),
    cell("factored-numpy-int-factors", ACCEPTED,
         lambda: FactoredAttention(np.ones((1, 2), dtype=np.int32), np.ones((1, 2)), np.ones(2))),
    # --- OneLayerTransformer -----------------------------------------------------------------
    cell("transformer-wrong-shape-A", ShapeError,
         lambda: OneLayerTransformer(np.eye(2), np.ones((3, 2)), np.ones(2))),
    cell("transformer-d-0", ShapeError,
         lambda: OneLayerTransformer(np.zeros((0, 0)), np.zeros((0, 1)), np.ones(1))),
    cell("transformer-inf-w-o", NonFiniteError,
         lambda: OneLayerTransformer(np.eye(2), np.ones((2, 2)), np.array([1.0, INF]))),
    cell("transformer-numpy-float32", ACCEPTED,
         lambda: OneLayerTransformer(np.eye(2), np.ones((2, 2), dtype=np.float32), np.ones(2))),
    # --- MultiHeadAttention ------------------------------------------------------------------
    cell("multihead-no-heads", ShapeError, lambda: MultiHeadAttention([])),
    cell("multihead-mixed-widths", ShapeError,
         lambda: MultiHeadAttention([(np.eye(2), np.ones(2)), (np.eye(3), np.ones(3))])),
    cell("multihead-d-0", ShapeError, lambda: MultiHeadAttention([(np.zeros((0, 0)), np.zeros(0))])),
    cell("multihead-nan-v", NonFiniteError, lambda: MultiHeadAttention([(np.eye(2), np.array([NAN, 1.0]))])),
    cell("multihead-numpy-float32", ACCEPTED,
         lambda: MultiHeadAttention([(np.eye(2, dtype=np.float32), np.ones(2))])),
    # --- tolerance helpers -------------------------------------------------------------------
    cell("paper-tolerances-d-0", InvalidInputError, lambda: paper_tolerances(**{**TOL, "d": 0})),
    cell("paper-tolerances-negative-d", InvalidInputError,
         lambda: paper_tolerances(**{**TOL, "d": -1})),
    cell("paper-tolerances-non-integer-d", InvalidInputError,
         lambda: paper_tolerances(**{**TOL, "d": 2.5})),
    cell("paper-tolerances-nan-eps", NonFiniteError, lambda: paper_tolerances(**{**TOL, "eps_W": NAN})),
    cell("paper-tolerances-out-of-range-eps", AssumptionError,
         lambda: paper_tolerances(**{**TOL, "eps_v": 1.5})),
    cell("paper-tolerances-numpy-scalars", ACCEPTED,
         lambda: paper_tolerances(**{**TOL, "d": np.int64(4), "mu": np.float32(0.5)})),
    cell("design-tolerances-wrong-type-design", InvalidInputError,
         lambda: design_tolerances(None, **TOL)),
    cell("design-tolerances-d-0", InvalidInputError,
         lambda: design_tolerances(CORRECTED, **{**TOL, "d": 0})),
    cell("design-tolerances-non-integer-d", InvalidInputError,
         lambda: design_tolerances(CORRECTED, **{**TOL, "d": 2.5})),
    cell("design-tolerances-zero-mu", AssumptionError,
         lambda: design_tolerances(CORRECTED, **{**TOL, "mu": 0.0})),
    cell("design-tolerances-numpy-scalars", ACCEPTED,
         lambda: design_tolerances(CORRECTED, **{**TOL, "d": np.int32(4), "W_bound": np.float64(2)})),
    cell("check-assumptions-wrong-type", InvalidInputError, lambda: check_assumptions("2", 0.5)),
    cell("check-assumptions-nan-mu", NonFiniteError, lambda: check_assumptions(2.0, NAN)),
    cell("check-assumptions-negative-mu", AssumptionError, lambda: check_assumptions(2.0, -0.5)),
    cell("check-assumptions-numpy-scalars", ACCEPTED,
         lambda: check_assumptions(np.float32(2.0), np.float16(0.5))),
    # --- strategies: numpy scalar types are accepted (refusals: test_strategies.BAD_ARGUMENTS) --
    cell("strategies-numpy-ints", ACCEPTED, lambda: draw_once(
        ast.dims(np.int64(1), np.int32(3)), ast.scales(np.int16(-3), np.int64(3)),
        ast.low_rank_targets(rank=np.int64(2)), ast.bad_queries(np.int64(3)))),
    cell("strategies-numpy-floats", ACCEPTED, lambda: draw_once(
        ast.vectors(np.int64(3), np.float32(2.0), sparse=np.bool_(True)),
        ast.matrices(np.int8(2), np.float64(0.5)),
        ast.adversarial_oracles(np.float32(-6), np.int64(-2)),
        ast.saturated_logit_targets(below=np.float32(8), above=np.int64(1)))),
    cell("strategies-numpy-vector", ACCEPTED,
         lambda: draw_once(ast.degenerate_probes(np.array([1, 2, 3], dtype=np.int32)))),
]


@pytest.mark.parametrize("call,expected", API)
def test_api(call: Callable[[], Any], expected: type[Exception] | str) -> None:
    if expected == ACCEPTED:
        call()
    else:
        with pytest.raises(expected):
            call()


# --- the command line: one cell per bad-input class per subcommand -------------------------

REFUSE_SECONDS, WORK_SECONDS = 10, 60

CLI_CELLS = [
    cell("verify-wrong-type-json", 2, ("verify", "--json=yes")),
    cell("verify-unwritable-out", 2, ("verify", "--out", "/etc/hostname/x")),
    cell("recover-wrong-type-d", 2, ("recover", "--d", "x")),
    cell("recover-d-0", 2, ("recover", "--d", "0")),
    cell("recover-nan-scale", 2, ("recover", "--d", "3", "--scale", "nan")),
    cell("recover-negative-seed", 2, ("recover", "--d", "3", "--seed", "-1")),
    cell("recover-out-of-range-checks", 2,
         ("recover", "--d", "4", "--rank", "1", "--learner", "skeleton", "--checks", "5")),
    cell("recover-zero-rank-cvx", 2,
         ("recover", "--d", "4", "--rank", "0", "--learner", "lowrank-cvx")),
    cell("recover-skeleton-human-readable", 0,
         ("recover", "--d", "8", "--rank", "2", "--learner", "skeleton")),
    cell("recover-skeleton-adaptive-human-readable", 0,
         ("recover", "--d", "8", "--rank", "2", "--learner", "skeleton-adaptive")),
    cell("recover-lowrank-cvx-human-readable", 0,
         ("recover", "--d", "8", "--rank", "2", "--learner", "lowrank-cvx")),
    cell("bench-wrong-type-d", 2, ("bench", "exact", "--d", "4,x")),
    cell("bench-d-0", 2, ("bench", "exact", "--d", "0")),
    cell("bench-nan-ratios", 2,
         ("bench", "phase", "--d", "4", "--rank", "1", "--ratios", "nan")),
    cell("bench-negative-seed", 2, ("bench", "exact", "--d", "4", "--seed", "-1")),
    cell("bench-out-of-range-rank", 2, ("bench", "lowrank", "--d", "4", "--rank", "5")),
    cell("recover-membership-mu-out-of-range", 2,
         ("recover", "--d", "4", "--learner", "membership", "--mu", "0.9")),
    cell("recover-heads-not-dividing-d", 2,
         ("recover", "--d", "4", "--learner", "orthogonal-heads", "--H", "3")),
    cell("bench-accepted", 0, ("bench", "exact", "--d", "4")),
]


@pytest.mark.parametrize("args,status", CLI_CELLS)
def test_cli(args: tuple[str, ...], status: int) -> None:
    """Exit 2 with one ``attnproof: error:`` line (bad input) or 0, and never a traceback.

    A bad argument is refused before any work (``verify`` alone takes minutes), within
    REFUSE_SECONDS (interpreter start and imports take ~1-2 s); an accepted cell is a few
    seconds of work, given WORK_SECONDS."""
    if status == 0 and "lowrank-cvx" in args:
        pytest.importorskip("cvxpy")
    timeout = REFUSE_SECONDS if status == 2 else WORK_SECONDS
    try:
        r = cli(*args, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"attnproof {' '.join(args)}: still running after {timeout} s")
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    assert r.returncode == status, r.stderr
    if status == 2:
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("attnproof: error:"), r.stderr


# --- every registered learner: its arguments' bad values and its oracle's bad answers ------------
#
# One setup per learner (a cheap target inside its assumptions); the matrix crosses it with bad
# values of each argument and with oracles whose answers are strings, None, the wrong shape, NaN
# or complex.  Every cell must raise an AttnproofError: never AttributeError, TypeError,
# ValueError, LinAlgError, nor an answer.


def _heads() -> tuple[MultiHeadAttention, list[np.ndarray]]:
    g = np.random.default_rng(1)
    bases = cayley_bases([2, 2], g.standard_normal((4, 4)), FLOAT64)
    heads = [(E @ (g.standard_normal((2, 2)) / 2) @ E.T, E @ g.standard_normal(2)) for E in bases]
    return MultiHeadAttention(heads), bases


_A = np.array([[1.0, -0.5], [0.3, 1.0]])
_W_OUT = np.array([1.0, -2.0])
_MARGIN = (np.eye(2) / 2, np.array([0.6, -0.6]))  # ||W*||_F <= 2, ||v*|| <= 1, margin mu = 0.5

#: registered name -> (a fresh oracle, the learner called with valid arguments and overrides)
SETUPS: dict[str, tuple[Callable[[], Any], Callable[..., Any]]] = {
    "exact": (oracle, lambda o, **kw: learn_exact(o, **{"rng": rng(), **kw})),
    "noisy": (margin_oracle, lambda o, **kw: learn_noisy(o, **{"W_bound": 2.0, "mu": 0.5, **kw})),
    "skeleton": (low_rank_oracle, lambda o, **kw: learn_skeleton(o, **{"rank": 1, "rng": rng(), **kw})),
    "skeleton-adaptive": (
        low_rank_oracle, lambda o, **kw: learn_skeleton_adaptive(o, **{"rng": rng(), **kw})
    ),
    "lowrank-cvx": (low_rank_oracle, lambda o, **kw: cvx_on(o, **{"m": 40, "rng": rng(), **kw})),
    "membership": (
        lambda: MembershipOracle(Attention(*_MARGIN)),
        lambda o, **kw: learn_membership(o, **{"W_bound": 2.0, "mu": 0.5, "eps_W": 0.1, **kw}),
    ),
    "membership-rotated": (
        lambda: MembershipOracle(Attention(*_MARGIN)),
        lambda o, **kw: learn_membership_rotated(
            o, **{"W_bound": 2.0, "eps_W": 0.5, "delta_rot": 0.5, "rng": rng(), **kw}
        ),
    ),
    "orthogonal-heads": (
        lambda: ValueOracle(_heads()[0]), lambda o, **kw: learn_orthogonal_heads(o, _heads()[1], **kw)
    ),
    "multihead-sbd": (
        lambda: ValueOracle(_heads()[0]),
        lambda o, **kw: learn_multihead_sbd(o, **{"hessians": 2, "rng": rng(), **kw}),
    ),
    "ffn": (lambda: ValueOracle(ReluFFN(_A, _W_OUT)), lambda o, **kw: learn_ffn(o, **{"rng": rng(), **kw})),
    "transformer": (
        lambda: ValueOracle(OneLayerTransformer(np.array([[0.5, 0.1], [-0.2, 0.3]]), _A, _W_OUT)),
        lambda o, **kw: learn_transformer(o, **{"rng": rng(), **kw}),
    ),
}


def cvx_on(o: Any, **kw: Any) -> Any:
    pytest.importorskip("cvxpy")
    return learn_lowrank_cvx(o, **kw)


def test_the_matrix_covers_every_registered_learner():
    assert set(SETUPS) == set(LEARNERS)
    public = {n for n in __import__("attnproof").__all__ if n.startswith("learn_")}
    assert len(public) == len(LEARNERS)


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_each_setup_is_accepted(name):
    """The matrix's premise: with valid arguments and answers every setup learns (so a refusal
    in a cell below is the bad value's doing)."""
    make, learn = SETUPS[name]
    learn(make())


class BadAnswers:
    """An oracle answering its base oracle's queries wrongly: ``how`` in ANSWERS."""

    def __init__(self, base: Any, how: str) -> None:
        self.base, self.how = base, how

    d = property(lambda self: self.base.d)
    queries = property(lambda self: self.base.queries)

    def __getattr__(self, name: str) -> Any:  # budget, tolerance, model ... as the base's
        return getattr(self.base, name)

    def __call__(self, X: Any) -> Any:
        y = np.asarray(self.base(X), dtype=np.float64)
        return {
            "string": lambda: y.astype(str),
            "None": lambda: np.full(y.shape, None, dtype=object),
            "wrong-shape": lambda: np.append(y.reshape(-1), 0.0),
            "nan": lambda: np.full(y.shape, NAN),
            "complex": lambda: y + 1e-3j,
        }[self.how]()


ANSWERS = ("string", "None", "wrong-shape", "nan", "complex")


@pytest.mark.parametrize("how", ANSWERS)
@pytest.mark.parametrize("name", sorted(SETUPS))
def test_bad_oracle_answers_are_typed(name, how):
    make, learn = SETUPS[name]
    with pytest.raises(AttnproofError):
        learn(BadAnswers(make(), how))


TOLERANCES = {"string": "1e-3", "nan": NAN, "inf": INF, "negative": -1.0, "complex": 1e-3j,
              "array": np.array([1e-3, 1e-3])}
COUNTS = {"string": "3", "float": 2.5, "negative": -1, "nan": NAN, "complex": 1j}
RNGS = {"string": "seed", "negative": -1, "float": 1.5, "complex": 1j}
ARITHS = {"unknown": "float65", "number": 5}
CHOICES = {"unknown": "nope", "number": 3}

#: registered name -> {argument: the bad values tried}
ARGUMENTS: dict[str, dict[str, dict[str, Any]]] = {
    "exact": {"rng": RNGS, "rtol": TOLERANCES, "arith": ARITHS,
              "probes": {**CHOICES, "complex": np.eye(3) * (1 + 1j)}},
    "noisy": {"W_bound": TOLERANCES, "mu": TOLERANCES, "tau": TOLERANCES, "eps_W": TOLERANCES,
              "eps_v": TOLERANCES},
    "skeleton": {"rank": COUNTS, "rng": {**RNGS, "none": None}, "checks": COUNTS, "rank_tol": TOLERANCES,
                 "rtol": TOLERANCES, "arith": ARITHS},
    "skeleton-adaptive": {"rng": {**RNGS, "none": None}, "rank_tol": TOLERANCES, "rtol": TOLERANCES,
                          "arith": ARITHS},
    "lowrank-cvx": {"m": {"negative": -1, "float": 2.5}, "rng": {"string": "seed", "none": None},
                    "solver": {"unknown": "nope"}},
    "membership": {"W_bound": TOLERANCES, "mu": TOLERANCES, "eps_W": TOLERANCES, "delta": TOLERANCES,
                   "method": CHOICES, "samples": COUNTS, "rng": RNGS, "arith": ARITHS},
    "membership-rotated": {"W_bound": TOLERANCES, "eps_W": TOLERANCES, "delta_rot": TOLERANCES, "rng": RNGS,
                           "arith": ARITHS},
    "orthogonal-heads": {"probes": CHOICES, "rng": RNGS, "arith": ARITHS, "checks": COUNTS,
                         "tol": TOLERANCES},
    "multihead-sbd": {"hessians": COUNTS, "rng": {**RNGS, "none": None}, "arith": ARITHS, "step": TOLERANCES,
                      "noise": {k: v for k, v in TOLERANCES.items() if k != "negative"} | {"negative": -1.0},
                      "checks": COUNTS},
    "ffn": {"rng": RNGS, "arith": ARITHS, "min_gap": TOLERANCES, "max_steps": COUNTS, "tolerance": TOLERANCES,
            "restarts": COUNTS},
    "transformer": {"rng": RNGS, "arith": ARITHS, "route": CHOICES, "probes": CHOICES,
                    "tolerance": TOLERANCES},
}


def _argument_cells() -> list[Any]:
    cells = []
    for name, arguments in ARGUMENTS.items():
        for arg, values in arguments.items():
            for kind, value in values.items():
                cells.append(pytest.param(name, arg, value, id=f"{name}-{arg}-{kind}"))
    return cells


#: kinds of bad value that are malformed whatever the theorem assumes: InvalidInputError (a value
#: of the right type out of range -- negative, infinite -- may instead break an assumption)
MALFORMED = {"string", "complex", "array", "nan", "float", "unknown", "number", "none"}


@pytest.mark.parametrize("name,arg,value", _argument_cells())
def test_bad_learner_arguments_are_typed(name, arg, value, request):
    make, learn = SETUPS[name]
    kind = request.node.callspec.id.rsplit("-", 1)[1]
    with pytest.raises(InvalidInputError if kind in MALFORMED else AttnproofError):
        learn(make(), **{arg: value})


# --- the shared validators (attnproof.prelude) and the models' real arrays ------------------------

VALIDATORS = [
    *(cell(f"check-rng-{k}", InvalidInputError, lambda v=v: prelude.check_rng("rng", v))
      for k, v in {**RNGS, "bool": True, "random-state": np.random.RandomState(0)}.items()),
    cell("check-rng-required-none", InvalidInputError, lambda: prelude.check_rng("rng", None, required=True)),
    *(cell(f"check-tolerance-{k}", InvalidInputError, lambda v=v: prelude.check_tolerance("rtol", v))
      for k, v in {**TOLERANCES, "zero": 0.0, "bool": True, "none": None}.items()),
    cell("check-tolerance-zero-allowed-negative", InvalidInputError,
         lambda: prelude.check_tolerance("noise", -0.5, zero=True)),
    *(cell(f"check-count-{k}", InvalidInputError, lambda v=v: prelude.check_count("checks", v))
      for k, v in {**COUNTS, "bool": True, "whole-float": 3.0}.items()),
    cell("check-count-above-maximum", InvalidInputError, lambda: prelude.check_count("checks", 5, maximum=4)),
    *(cell(f"check-arith-{k}", InvalidInputError, lambda v=v: prelude.check_arith("arith", v))
      for k, v in {**ARITHS, "none": None, "low-precision": "mp:3"}.items()),
    cell("check-real-array-complex", InvalidInputError,
         lambda: prelude.check_real_array("W", np.eye(2) * 1j, FLOAT64)),
    cell("check-real-array-shape", ShapeError,
         lambda: prelude.check_real_array("W", np.eye(2), FLOAT64, shape=(3, None))),
    cell("check-real-array-nan", NonFiniteError, lambda: prelude.check_real_array("v", [1.0, NAN], MP(20))),
    cell("session-arith-string-unknown", InvalidInputError, lambda: Session(oracle(), "float65")),
    cell("session-arith-number", InvalidInputError, lambda: Session(oracle(), 64)),
    cell("session-rtol-string", InvalidInputError, lambda: Session(oracle(), FLOAT64).promise("1e-3")),
    cell("session-rtol-inf", InvalidInputError, lambda: Session(oracle(), FLOAT64).promise(INF)),
    # complex arrays: refused, not cut to their real part (numpy does that with only a warning)
    *(cell(f"attention-complex-W-{a.name}", InvalidInputError,
           lambda a=a: Attention(np.eye(2) * (1 + 1e-3j), np.ones(2), a)) for a in (FLOAT64, MP(20), SYMPY)),
    cell("attention-complex-v-list", InvalidInputError, lambda: Attention(np.eye(2), [1.0, 1j])),
    cell("attention-string-W", InvalidInputError, lambda: Attention([["0.5", 0], [0, 1]], np.ones(2))),
    cell("attention-none-beta", ACCEPTED, lambda: Attention(np.eye(2), np.ones(2), beta=None)),
    cell("attention-complex-c", InvalidInputError, lambda: Attention(np.eye(2), np.ones(2), c=[1j, 0])),
    cell("factored-complex-K", InvalidInputError,
         lambda: FactoredAttention(np.ones((1, 2)) * 1j, np.ones((1, 2)), np.ones(2))),
    cell("transformer-complex-A", InvalidInputError,
         lambda: OneLayerTransformer(np.eye(2), np.ones((2, 2)) + 1j, np.ones(2))),
    cell("ffn-complex-w-o", InvalidInputError, lambda: ReluFFN(np.eye(2), np.array([1.0, 1j]))),
    cell("multihead-complex-v", InvalidInputError,
         lambda: MultiHeadAttention([(np.eye(2), np.array([1j, 1.0]))])),
    cell("orthogonal-heads-complex-bases", InvalidInputError,
         lambda: learn_orthogonal_heads(ValueOracle(_heads()[0]), [E * (1 + 1e-9j) for E in _heads()[1]])),
    cell("mpmath-decimal-strings", ACCEPTED, lambda: Attention([["0.1", 0], [0, 1]], ["1e-400", 1], MP(20))),
    cell("validators-accept-numpy-scalars", ACCEPTED, lambda: (
        prelude.check_rng("rng", np.int64(3)), prelude.check_tolerance("eps_W", np.float32(1e-3)),
        prelude.check_count("checks", np.int32(2)), prelude.check_arith("arith", "mp:30"))),
]


@pytest.mark.parametrize("call,expected", VALIDATORS)
def test_validators_and_real_arrays(call: Callable[[], Any], expected: type[Exception] | str) -> None:
    test_api(call, expected)


def test_validators_return_what_they_checked():
    g = np.random.default_rng(1)
    assert prelude.check_rng("rng", g) is g and prelude.check_rng("rng", None) is None
    assert prelude.check_rng("rng", 5).standard_normal() == np.random.default_rng(5).standard_normal()
    assert prelude.check_tolerance("eps_W", np.float32(0.25)) == 0.25
    assert prelude.check_tolerance("rtol", None, optional=True) is None
    assert prelude.check_tolerance("noise", 0, zero=True) == 0.0
    assert prelude.check_count("checks", np.int64(0)) == 0
    assert prelude.check_arith("arith", "mp:30").name == "mp:30"
    assert prelude.check_arith("arith", SYMPY) is SYMPY
    assert Session(oracle(), "sympy").arith is SYMPY
