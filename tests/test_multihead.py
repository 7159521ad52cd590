"""Sec. 7 / App. C: non-identifiability, the short-input collapse, Prop. C.2 learned, the Hessian SBD."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnproof import strategies as ast
from attnproof.theorems.multihead import strategies as mst
from attnproof.arith import FLOAT64, MP, SYMPY
from attnproof.errors import (
    AssumptionError,
    InvalidInputError,
    NonIdentifiableError,
    PrecisionLossError,
    QueryBudgetExceeded,
    ShapeError,
)
from attnproof.bench import run
from attnproof.models import MultiHeadAttention, scores
from attnproof.oracles import ValueOracle
from attnproof.recovery import score_heads
from attnproof.verify.registry import LEARNERS
from attnproof.theorems.multihead import (
    ReducedOracle,
    cayley_bases,
    fd_hessian,
    fd_queries,
    learn_multihead_sbd,
    learn_orthogonal_heads,
    probe_hessian,
    sbd_commutant,
    sbd_random_combination,
    subspace_error,
)

lengths = st.integers(1, 6)


def _tolerance(heads, X, arith=FLOAT64):
    """Rounding tolerance of one evaluation: 8 (d + N + H) (eps sum_h max_i |x_i^T v_h| + eta) (1 + max |s|),
    eta = 2^-1074 the absolute rounding of subnormal results (relative error bounds fail there)."""
    N, d = X.shape
    size = sum(float(np.abs(X @ v).max()) for _, v in heads)
    smax = max(float(np.abs(scores(X[None], W)).max()) for W, _ in heads)
    return 8 * (d + N + len(heads)) * (arith.eps * size + 2.0**-1074) * (1 + smax)


# --- non-identifiability: different parameters, one function ------------------------------


@given(mst.equivalent_multihead_pairs(), lengths, st.data())
def test_equivalent_pairs_compute_the_same_function(pair, N, data):
    a, b, kind = pair
    d = a[0][1].shape[0]
    assert len(a) != len(b) or any(
        not np.array_equal(Wa, Wb) or not np.array_equal(va, vb) for (Wa, va), (Wb, vb) in zip(a, b)
    ), "the parameters must differ"
    X = data.draw(
        ast.matrices(d, 3.0).map(lambda M: M[:1])
        if N == 1
        else st.lists(ast.vectors(d, 3.0, nonzero=False), min_size=N, max_size=N).map(np.array)
    )
    fa, fb = MultiHeadAttention(a)(X), MultiHeadAttention(b)(X)
    assert abs(fa - fb) <= _tolerance(a, X) + _tolerance(b, X), kind


@settings(max_examples=5)
@given(mst.equivalent_multihead_pairs(d=2, kinds=("hyperplane", "split", "merge")), st.integers(1, 4))
def test_equivalent_pairs_agree_to_mpmath_precision(pair, N):
    a, b, _ = pair
    rng = np.random.default_rng(N)
    X = rng.standard_normal((N, 2))
    for dps in (30, 60):
        ar = MP(dps)
        with ar.context():
            diff = abs(MultiHeadAttention(a, ar)(X) - MultiHeadAttention(b, ar)(X))
            assert diff <= mpmath.mpf(10) ** (-dps + 4)


def test_strategies_validate_eagerly():
    with pytest.raises(InvalidInputError, match="d must be"):
        mst.equivalent_multihead_pairs(d=0)
    with pytest.raises(InvalidInputError, match="kinds"):
        mst.equivalent_multihead_pairs(kinds=("rotate",))
    with pytest.raises(InvalidInputError, match="need H >= 2"):
        mst.equivalent_multihead_pairs(H=1, kinds=("permute",))
    with pytest.raises(InvalidInputError, match="H must be"):
        mst.short_input_pairs(H=7)
    with pytest.raises(InvalidInputError, match="dims"):
        mst.orthogonal_heads_targets(dims=[2, 0])


# --- short inputs identify even less -------------------------------------------------------


@given(mst.short_input_pairs(), st.integers(1, 2), st.data())
# thorough profile: a subnormal token (1.5e-323) gives answers 5e-324 apart -- the tolerance needed
# an absolute term for subnormal results, not a looser relative one
@example(
    (
        [(np.array([[0.25]]), np.array([-0.5]))],
        [(np.array([[-0.25]]), np.array([0.5])), (np.array([[0.0]]), np.array([-1.0]))],
        {0},
    ),
    1,
    np.array([[1.5e-323]]),
)
def test_short_input_flip_agrees_on_lengths_1_and_2(pair, N, data):
    heads, flipped, _ = pair
    d = heads[0][1].shape[0]
    X = (
        data
        if isinstance(data, np.ndarray)
        else np.array(data.draw(st.lists(ast.vectors(d, 3.0, nonzero=False), min_size=N, max_size=N)))
    )
    fa, fb = MultiHeadAttention(heads)(X), MultiHeadAttention(flipped)(X)
    assert abs(fa - fb) <= _tolerance(heads, X) + _tolerance(flipped, X)


@given(
    ast.targets(d=st.integers(1, 5), w_scale=st.just(1.0), v_scale=st.just(1.0)), st.integers(1, 2), st.data()
)
@example((np.array([[0.0]]), np.array([1.0])), 2, None)  # W = 0: the pair is exactly the linear head
# thorough profile: a subnormal token (answers 5e-324 apart): the tolerance's absolute term
@example((np.array([[0.0]]), np.array([-0.5])), 1, np.array([[1.5e-323]]))
def test_collapse_pair_equal_below_three_tokens_differs_at_three(target, N, data):
    """(W, v), (-W, v) vs (0, 2v): equal for N <= 2 (identity sec7/short-input-collapse), and at
    N = 3 the witness X = [T/k z; -T/k z; z] (z = e_k, k = argmax |v|, kappa = z^T W z != 0)
    separates them by -> 2 |nu| / 3 as T grows (weights -> (1, 0, 0) and (0, 1, 0)).
    "Generic W" is made explicit: the diagonal is pushed to |W_kk| >= 1/4 (a kappa ~ 1e-308
    would make the witness overflow; the gap is then O(kappa |X|) for bounded X)."""
    W, v = target
    d = len(v)
    if data is not None:
        W = W + np.diag(np.where(np.diag(W) >= 0, 0.25, -0.25))
    pair, single = MultiHeadAttention([(W, v), (-W, v)]), MultiHeadAttention([(np.zeros((d, d)), 2 * v)])
    if data is not None:
        X = (
            data
            if isinstance(data, np.ndarray)
            else np.array(data.draw(st.lists(ast.vectors(d, 3.0, nonzero=False), min_size=N, max_size=N)))
        )
        assert abs(pair(X) - single(X)) <= 2 * _tolerance([(W, v), (-W, v)], X)
    k = int(np.argmax(np.abs(v)))
    kappa, nu = W[k, k], v[k]
    z = np.eye(d)[k]
    if kappa == 0:  # a head with W = 0 on z is linear there: the pair IS the single head along z
        X = np.array([z, -z, z])
        assert abs(pair(X) - single(X)) <= 2 * _tolerance([(W, v), (-W, v)], X)
        return
    T = 40.0
    X = np.array([T / kappa * z, -T / kappa * z, z])
    assert abs(pair(X) - single(X)) >= 0.6 * abs(nu)


# --- Prop. C.2: orthogonal heads learned ---------------------------------------------------


def _learn(heads, bases, arith=FLOAT64, **kw):
    oracle = ValueOracle(MultiHeadAttention(heads, arith))
    rec = learn_orthogonal_heads(oracle, bases, arith=arith, **kw)
    return rec, oracle


#: Two heads on the coordinate axes of R^2 (W = diag(1/4, 0) and diag(0, 1), v = -e_1 and -e_2).
AXIS_HEADS = ([(np.diag([0.25, 0.0]), -np.eye(2)[0]), (np.diag([0.0, 1.0]), -np.eye(2)[1])],
              [np.eye(2)[:, :1], np.eye(2)[:, 1:]])


def _degenerate_target(d: int):
    """Like the thorough profile's draws (seed 20261126) that the certified learner refuses:
    coordinate bases (1 + (d - 1)), head 1 a W with one non-zero row and v = -e_1, head 2 with W = 0
    and v = -e_4: many rotation directions move no identity (J rank-deficient)."""
    W1 = np.zeros((d, d))
    W1[0, :3] = 1.0
    W2 = np.zeros((d, d))
    v2 = np.zeros(d)
    v2[3] = -1.0
    return [(W1, -np.eye(d)[0]), (W2, v2)], [np.eye(d)[:, :1], np.eye(d)[:, 1:]]


@given(mst.orthogonal_heads_targets(), st.sampled_from(["basis", "gaussian"]), st.integers(0, 2**16))
@example(_degenerate_target(6), "basis", 0)  # certified: a rotation the identities cannot see: refused
@example(AXIS_HEADS, "basis", 0)  # certified: refused before with a NaN bound (see the test below)
# thorough seed 60317: one head of W 3.8e-221, the checks (no other head's W to cap them) scaled its tokens
# to 1e110 and the tolerance overflowed to NaN (an AssumptionError): now capped by the tokens' own size
@example(([(np.array([[3.77332417e-221]]), np.array([-1.0]))], [np.array([[1.0]])]), "basis", 0)
def test_orthogonal_heads_float64_within_bound(target, probes, seed):
    """C.1 taken for the bases (certify=False): answered within the bound, with exactly the counted
    queries (only a head whose W is below float64's reach refuses).  Certified (the default):
    within its (larger) bound, or a PrecisionLossError when the C.1 identities cannot exclude a
    rotation that would move a head (degenerate heads leave directions they do not see)."""
    heads, bases = target
    dims = [E.shape[1] for E in bases]
    for certify in (False, True):
        try:
            rec, oracle = _learn(heads, bases, probes=probes, rng=np.random.default_rng(seed),
                                 certify=certify)
        except PrecisionLossError:  # the output guard: a W below resolution, or (certified) a rotation
            assert certify or min(np.abs(W).max() for W, _ in heads) < 1e-140
            continue
        extra = sum(h.diagnostics["reasked_queries"] for h in rec.heads)
        count = LEARNERS["orthogonal-heads"].count(d=sum(dims), dims=dims, certify=certify)
        identities = 6 * (sum(dims) ** 2 - sum(n * n for n in dims)) // 2 if certify else 0  # 3 answers each
        assert count == sum(n + n * n for n in dims) + 3 + identities
        assert rec.queries == oracle.queries == count + extra
        s = score_heads(rec, heads, FLOAT64)
        assert s["err_W"] <= rec.diagnostics["error_bound"]
        assert s["err_v"] <= 1e-12 * max(np.abs(v).max() for _, v in heads)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("probes, seed", [("basis", 0), ("basis", 1), ("gaussian", 0)])
def test_certified_heads_on_coordinate_axes_answer(probes, seed):
    """Thorough profile (--hypothesis-seed 271126): two heads on the coordinate axes of R^2, C.1
    exact, every identity's residual exactly 0, so the measured rotation k_hat = 0.  The curvature
    step t = min(1, step / ||k_hat||) was 0 there and the re-run's curvature divided by it: 0 / 0,
    a NaN bound, and the certified learner refused a target it resolves to 1e-15 ("the bound ...
    is nan").  With k_hat = 0 there is no rotation to bend over (t = 1: no curvature term)."""
    heads, bases = AXIS_HEADS
    rec, oracle = _learn(heads, bases, probes=probes, rng=np.random.default_rng(seed), certify=True)
    bound = rec.diagnostics["error_bound"]
    assert np.isfinite(bound) and rec.queries == oracle.queries
    assert score_heads(rec, heads, FLOAT64)["err_W"] <= bound


def test_orthogonal_heads_exact_query_count_without_checks():
    rng = np.random.default_rng(0)
    bases = cayley_bases([2, 3, 1], rng.standard_normal((6, 6)), FLOAT64)
    heads = [
        (E @ rng.standard_normal((E.shape[1],) * 2) @ E.T, E @ rng.standard_normal(E.shape[1])) for E in bases
    ]
    rec, oracle = _learn(heads, bases, checks=0, certify=False)
    assert rec.queries == oracle.queries == (2 + 4) + (3 + 9) + (1 + 1)
    count = LEARNERS["orthogonal-heads"].count(d=6, H=3, checks=0, dims=[2, 3, 1], certify=False)
    assert count == rec.queries


@pytest.mark.parametrize("dps", [30, 60, 90])
def test_orthogonal_heads_mpmath_error_falls_like_ten_to_minus_dps(dps):
    ar = MP(dps)
    rng = np.random.default_rng(dps)
    bases = cayley_bases([2, 2], rng.standard_normal((4, 4)), ar)
    with ar.context():
        heads = [
            (E @ ar.asarray(rng.standard_normal((2, 2))) @ E.T, E @ ar.asarray(rng.standard_normal(2)))
            for E in bases
        ]
    rec, _ = _learn(heads, bases, arith=ar)
    s = score_heads(rec, heads, ar)
    assert s["err_W"] <= 10.0 ** (-dps + 4)
    assert s["err_W"] <= rec.diagnostics["error_bound"]


def test_orthogonal_heads_sympy_is_exact():
    Q = np.array([[2, -1, 2], [2, 2, -1], [-1, 2, 2]]) / 3
    bases = [
        SYMPY.asarray(Q[:, :1]) * 0 + np.array([[2], [2], [-1]], dtype=object) / 3,
        np.array([[-1, 2], [2, -1], [2, 2]], dtype=object) / 3,
    ]
    import sympy as sp

    bases = [np.vectorize(sp.Rational)(np.array(B * 3, dtype=int)) / 3 for B in bases]
    heads = [
        (bases[0] @ np.array([[sp.Rational(1, 2)]]) @ bases[0].T, bases[0] @ np.array([sp.Integer(1)])),
        (
            bases[1] @ np.array([[1, sp.Rational(-1, 3)], [2, 0]]) @ bases[1].T,
            bases[1] @ np.array([sp.Integer(2), sp.Integer(-1)]),
        ),
    ]
    rec, oracle = _learn(heads, bases, arith=SYMPY, checks=1)
    # one check is raised to one per head (H = 2); 2 identities per direction, 3 answers each, d_1 d_2 = 2
    assert rec.queries == oracle.queries == 2 + 6 + 2 + 6 * 2
    for got, (W, v) in zip(rec.heads, heads):
        assert all(sp.simplify(a - b) == 0 for a, b in zip(got.W.reshape(-1), W.reshape(-1)))
        assert all(sp.simplify(a - b) == 0 for a, b in zip(got.v, v))


@given(mst.c1_violations(), st.integers(0, 2**16))
# thorough profile: the leak of head 2 (v = e1 - e2, leak +e1) cancels head 1's v = -e1, so on U_1
# the target is identically 0: a typed NonIdentifiableError (the reduced v~ = 0), not a recovery
@example(
    (
        [(np.zeros((2, 2)), np.array([-1.0, 0.0])), (np.zeros((2, 2)), np.array([1.0, -1.0]))],
        [np.array([[1.0], [0.0]]), np.array([[0.0], [1.0]])],
        "leak-v",
    ),
    0,
)
# thorough profile: the same cancellation leaves v~ = (0, 1e-94) on U_1: W~ is beyond float64's
# reach there, a typed PrecisionLossError
@example(
    (
        [
            (np.zeros((3, 3)), np.array([-1.0, 1.03474458e-94, 0.0])),
            (np.zeros((3, 3)), np.array([1.0, 0.0, -1.0])),
        ],
        [np.eye(3)[:, :2], np.eye(3)[:, 2:]],
        "leak-v",
    ),
    0,
)
# thorough profile (seed 81723): head 3's W leaks into U_1, whose own recovered W is 1e-44; the checks
# scaled their tokens *up* to make that W's scores O(1), and head 3's rounding buried the leak (gap
# 6.6e-3): the checks then only scaled down (now up to head k's unit scores, each head's rounding capped at
# its values' spread: the leak is seen by head 3's own check)
@example(
    (
        [
            (np.diag([1.00489378e-44, 0.0, 0.0]), np.array([-1.0, 0.0, 0.0])),
            (np.diag([0.0, 1.0, 0.0]), np.array([0.0, -1.0, 0.0])),
            (np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 1.17549435e-38]]),
             np.array([0.0, 0.0, -1.0])),
        ],
        [np.eye(3)[:, :1], np.eye(3)[:, 1:2], np.eye(3)[:, 2:]],
        "leak-W",
    ),
    0,
)
# thorough profile (seed 2487): head 1's W is ~0 (uniform) and its v leaks e_1 into U_2, where the
# target is head 2 plus a uniform head (at N = 2 the head (-W_2, 0.5 e_1)); the identities cannot see
# a rotation between the (near-)uniform heads, so heads 1 and 3 had an infinite v bound, which the
# check queries took as their tolerance and passed (error 1.4e-3, no error): v's bound is now guarded
@example(
    (
        [
            (1.02460438e-291 * np.diag([1.0, 0.0, 0.0, 0.0, 0.0]), np.array([-1.0, 1.0, 0.0, 0.0, 0.0])),
            (np.array([[0.0, 0, 0, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 0], [0, 1, 1, 1, 0],
                       [0, 0, 0, 0, 0]]), np.array([0.0, -0.5, 0.0, 0.0, 0.0])),
            (1.56667075e-279 * np.diag([0.0, 0.0, 0.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0, 0.0, -1.0])),
        ],
        [np.eye(5)[:, :1], np.eye(5)[:, 1:4], np.eye(5)[:, 4:]],
        "leak-v",
    ),
    0,
)
# thorough profile (seed 1749515426): head 1's v leaks 0.05 e_1 into U_2 with head 1 not uniform
# there: the identities' residuals (1.8e-3) fit no rotation (misfit 1.8e-3, rounding 1.6e-14), but
# were read as one of 9e-5 rad; head 2's W came back 0.528 for 0.5 (bound 5.9e-5) and the checks
# passed: a misfit beyond rounding is now an AssumptionError
@example(
    (
        [
            (np.diag([0.5, 0.0, 0.0]), np.array([-1.0, 0.05, 0.0])),
            (np.diag([0.0, 0.5, 0.0]), np.array([0.0, -1.0, 0.0])),
            (np.diag([0.0, 0.0, 1.0]), np.array([0.0, 0.0, -1.0])),
        ],
        [np.eye(3)[:, :1], np.eye(3)[:, 1:2], np.eye(3)[:, 2:]],
        "leak-v",
    ),
    65536,
)
# thorough profile (seed 271128): head 2 attends uniformly (W 1e-308) and its v = e_1 - e_2 leaks +e_1
# into U_1, where the target is head 1 (W = e_1 e_1^T / 16, v = -e_1 / 2) plus that linear term: at
# N <= 2 exactly the flipped head (-W, +e_1 / 2) (``sec7/short-input-flip``), which the reduced learner
# returned; the identities cannot see a uniform head (it is linear) and the one check across U_1 drew
# tokens of norm 0.16, where the flip's O(scores^2 |x|) gap (2e-9) sat under its tolerance (error
# 1.6e-2 at unit scale): the checks now scale U_k's tokens so head k's recovered scores are ~1, up too
@example(
    (
        [
            (np.diag([0.0625, 0, 0, 0, 0, 0]), np.array([-0.5, 0, 0, 0, 0, 0])),
            (1.11253693e-308 * np.pad(np.ones((3, 3)), ((1, 2), (1, 2))), np.array([1.0, -1.0, 0, 0, 0, 0])),
            (np.pad(np.ones((2, 2)), ((4, 0), (4, 0))), np.array([0, 0, 0, 0, -1.0, 0])),
        ],
        [np.eye(6)[:, :1], np.eye(6)[:, 1:4], np.eye(6)[:, 4:]],
        "leak-v",
    ),
    0,
)
# issue 23 (the checks' cap, and H > checks): head 1's W is 1e-13 beside head 4's skew W (whose leak the C.1
# identities do not see: its scores of its own tokens are 0) and head 4's v leaks -2 v^(1) into U_1, so U_1
# answers every length <= 2 query as head 1's short-input flip; head 4 got no check (H = 4 > 3 checks) and
# the one across U_1 was capped at c^2 reach max ||W_g|| <= eps^-1/2, head 1's scores ~2e-5: its flip passed
# (v^(1) off by 2.0, bound 1.5e-11; the function off 1.5e5 x this test's tolerance).  Now seen twice over:
# the checks reach head 1's unit scores, and head 4 gets its own check (max(checks, H) queries)
@example(
    (
        [
            (1e-13 * np.diag([1.0, 0, 0, 0, 0]), -np.eye(5)[0]),
            (np.diag([0, 0.5, 0, 0, 0]), np.eye(5)[1]),
            (np.diag([0, 0, -0.7, 0, 0]), -np.eye(5)[2]),
            (np.pad(np.array([[0.0, 1.0], [-1.0, 0.0]]), ((3, 0), (3, 0))), np.array([2.0, 0, 0, 1.0, 0.5])),
        ],
        [np.eye(5)[:, :1], np.eye(5)[:, 1:2], np.eye(5)[:, 2:3], np.eye(5)[:, 3:]],
        "leak-v",
    ),
    0,
)
def test_c1_violation_is_never_silently_recovered(target, seed):
    """A typed refusal (AssumptionError; NonIdentifiableError or PrecisionLossError when the
    violation leaves some U_h with v~ = 0 or ~ 0), or recovered heads that compute the target's
    function (held-out inputs of length 1..5): a violating target may still be *functionally* a C.1 target
    (e.g. a shared head that merges), and then recovering that function is correct."""
    _refused_or_functionally_right(target, seed)


#: Issue 23 (the checks' cap), the uniform-leak class among large heads: head 1's W is 2^-42 beside head 3's
#: W = e_3 e_3^T, head 2 attends uniformly (W 1e-20) and its v leaks -2 v^(1) into U_1 (head 1's flip).
SMALL_FLIP = ([(2.0**-42 * np.diag([1.0, 0, 0]), -np.eye(3)[0]),
               (1e-20 * np.diag([0, 1.0, 0]), np.array([2.0, 1, 0])),
               (np.diag([0, 0, 1.0]), -np.eye(3)[2])],
              [np.eye(3)[:, :1], np.eye(3)[:, 1:2], np.eye(3)[:, 2:]], "flip", 0)


@given(mst.uniform_leak_violations(), st.integers(0, 2**16), st.booleans())
# C.1 taken (certify=False): the one check across U_1 was capped at c^2 reach max_g ||W_g|| <= eps^-1/2
# (head 1's scores ~4e-6 there), so head 1 came back flipped: v^(1) off by 2.0, bound 4.8e-15, no error
@example(SMALL_FLIP, 0, False)
def test_uniform_head_leaking_v_is_never_silently_recovered(target, seed, certify):
    """The class of seed 271128 (above): a (nearly) uniform head whose v leaks into another head's
    subspace U_h, in particular by -2 v^(h) (U_h then sees head h's short-input flip), with head h's W
    scaled down (to 2^-44) so that its scores at unit scale are small, beside heads of W ~ 1: refused, or
    functionally right with head h (which carries no leak) within its own bounds -- the function alone
    cannot tell a flip of a head of W ~ 1e-13 at unit scale, its parameters can.  Certified or not."""
    _refused_or_right_on_its_head(target, seed, certify)


def _refused_or_right_on_its_head(target, seed, certify):
    """A leak target ``(heads, bases, how, h)`` refused, or functionally right with head h (which carries
    no leak) within its own W and v bounds."""
    rec = _refused_or_functionally_right(target[:3], seed, certify)
    if rec is not None:
        (W, v), h = target[0][target[3]], target[3]
        assert np.linalg.norm(rec.heads[h].W - W) <= rec.diagnostics["error_bounds"][h], target[2]
        assert np.linalg.norm(rec.heads[h].v - v) <= rec.diagnostics["error_bounds_v"][h], target[2]


#: Fixed (issue 22/23; thorough profile, --hypothesis-seed 281206 on
#: test_uniform_head_leaking_v_is_never_silently_recovered): d = 2, head 1's W = 2^-32 e_1 e_1^T with
#: v = -e_1, head 2 uniform (W 1e-20 e_2 e_2^T) whose v = (0.05, -1) leaks 0.05 e_1 into U_1 (a leak
#: lambda v^(1), lambda = -0.05, not the flip's -2).  Certified, it was answered with head 1 =
#: (W / 0.95, 0.95 v): W off by 1.46e-11 against its bound 3.6e-14, v off by 0.05, no error.  To first
#: order in W the target *is* that C.1 model; head 1's two checks reach its unit scores (tokens ~5e4)
#: and saw the answers off the model by 0.868 and 4.19, but against tolerances 24.7 and 37.0 (worst
#: ratio 0.113; the first pin's "2.8 against 24.7" mixed the two): the heads' certified v bounds
#: (1.05e-4 each, a rotation of 1.1e-4 rad allowed) times the tokens' size.  That rotation bound came
#: from C.1 identities asked at unit tokens, where both heads' scores are <= 2^-32 and a rotation
#: between them moves the answers by ~2^-32 of its angle.  The identities now scale their tokens up
#: until the largest score any head could compute is ~1 (rotation.identity_queries): a rotation moves
#: them at first order, and here the residuals fit no rotation (misfit 6.6e-9 above its tolerance
#: 3.2e-9): an AssumptionError.  Past that, the checks would refuse too: the rotation bound is 1e-13,
#: the v bounds 1.0e-13, and the first check's tolerance 2.5e-8 against its residual 0.868.
SMALL_LEAK = ([(2.0**-32 * np.diag([1.0, 0]), -np.eye(2)[0]),
               (1e-20 * np.diag([0, 1.0]), np.array([0.05, -1.0]))],
              [np.eye(2)[:, :1], np.eye(2)[:, 1:]], "leak-v", 0)


def test_small_leak_along_v_of_a_tiny_head_is_refused():
    """SMALL_LEAK (above), certified with its seed: the scaled identities see the leak (was a silent
    (W / 0.95, 0.95 v)); C.1 taken, the checks see it as before (the v bounds are rounding there)."""
    heads, bases, _, _ = SMALL_LEAK
    with pytest.raises(AssumptionError, match="not those of a rotation"):
        _learn(heads, bases, rng=np.random.default_rng(51168))
    with pytest.raises(AssumptionError, match="check query 0"):
        _learn(heads, bases, rng=np.random.default_rng(51168), certify=False)


#: SMALL_LEAK beside a unit head: d = 3, head 1's W = 2^-20 e_1 e_1^T, v = -e_1; head 2 uniform (1e-20
#: e_2 e_2^T) with v = -e_2 + lambda v^(1), lambda = -0.05; head 3 = (e_3 e_3^T, -e_3).  The identities
#: scaled up to the largest score of *any* head could not scale beside head 3 (its scores would pass 1), so
#: they resolved the rotation between U_1 and U_2 only to ~1.4e-4 rad, and heads 1 and 2 carried certified
#: bounds of ~1.4e-4 in v and ~1.8e-10 in W.  Each pair's identities now scale to that pair's largest score
#: (rotation.identity_queries; head 3's part bounded apart, rotation._outside_heads): 8.8e-13 rad.
SMALL_LEAK_3 = ([(2.0**-20 * np.diag([1.0, 0, 0]), -np.eye(3)[0]),
                 (1e-20 * np.diag([0, 1.0, 0]), np.array([0.05, -1.0, 0])),
                 (np.diag([0, 0, 1.0]), -np.eye(3)[2])],
                [np.eye(3)[:, :1], np.eye(3)[:, 1:2], np.eye(3)[:, 2:]], "leak-v", 0)


def test_small_leak_beside_a_unit_head_is_refused_by_the_v_term():
    """SMALL_LEAK_3 with the checks' seed 34 was answered as (W / 0.95, 0.95 v), v off 0.05 against its
    bound 1.5e-4, even with the identities scaled (they cannot be here): the check tolerance counted each
    head's certified v bound times the tokens' size (v term 0.55, tolerance 0.637, residual 0.165).  The
    heads' v errors must cancel in their measured sum (orthogonal._v_term): the tolerance was 0.154 then,
    and the check refused it by 7 %.  With the identities scaled per pair (rotation bound 8.9e-13 rad, v
    bounds ~1e-12) the check's tolerance is 5.6e-9 against the same residual 0.165."""
    heads, bases, _, _ = SMALL_LEAK_3
    with pytest.raises(AssumptionError, match="check query 0"):
        _learn(heads, bases, rng=np.random.default_rng(34))


#: Fixed (was a strict xfail).  SMALL_LEAK_3 with lambda = -0.005 and the checks' seed 34: head 1 was
#: answered as (1.005 W, 0.995 v), W off 4.8e-9 (bound 1.8e-10), v off 0.005 (bound 1.4e-4), no error; head
#: 1's one check has tokens of norm 121 and 1032 (one unit score), residual 0.0196 against tolerance 0.162
#: (W term 0.047, v term 0.034, was 0.58 before orthogonal._v_term), all from the rotation of 1.4e-4 rad
#: the identities allowed: they scaled their tokens to the largest score any head could compute, head 3's,
#: already 1.  Each identity mixes two subspaces U_a, U_b only, so head 3 (outside the pair) sees its
#: tokens only through the rotation: its scores are quadratic in it, its part of the identity cubic.  The
#: identities of the pair (1, 2) now scale to *its* largest score (tokens ~1.3e3), J leaves head 3 out
#: (uniform there), and rotation._outside_heads bounds its part for every rotation twice the one first
#: allowed (self-consistent, else a PrecisionLossError): the identities allow 8.8e-13 rad, the v bounds are
#: ~1e-12, and the check's tolerance is 5.6e-9 against its residual 0.0196: an AssumptionError.
SMALLER_LEAK_3 = ([SMALL_LEAK_3[0][0], (SMALL_LEAK_3[0][1][0], np.array([0.005, -1.0, 0])),
                   SMALL_LEAK_3[0][2]], *SMALL_LEAK_3[1:])


def test_small_leak_beside_a_unit_head_is_refused_by_per_pair_identities():
    heads, bases, _, _ = SMALLER_LEAK_3
    with pytest.raises(AssumptionError, match="check query 0"):
        _learn(heads, bases, rng=np.random.default_rng(34))


@given(mst.tiny_head_leaks(), st.integers(0, 2**16), st.booleans())
@example((*SMALL_LEAK[:2], "leak-v", 0), 51168, True)
@example(SMALLER_LEAK_3, 34, True)
def test_tiny_head_leaks_are_refused_or_within_bounds(target, seed, certify):
    """SMALL_LEAK's neighbourhood (strategies.tiny_head_leaks: lambda in {-0.5, -0.05, -0.005, 0.05},
    head 1's W in {2^-20, 2^-32, 2^-44}, d = 2 and 3, axis or Cayley bases, certified or not): refused,
    or functionally right with head 1 within its bounds.  The control lambda = 0 is a C.1 target: never
    refused as a violation (AssumptionError; a PrecisionLossError is an honest "cannot certify"), every
    head within its bounds.  Before this session's two changes, 13 of 576 grid draws (axis bases,
    seeds 0-11) came back silently wrong, all certified: d = 2, j = 32, lambda = -0.005 (9 of 12 seeds)
    and d = 3, j = 20, lambda in {-0.05, -0.005} (2 of 12 each); none now.  The last class left out here
    (d = 3 certified with j = 20 and lambda < 0: 3 of 1200 draws over seeds 0-59, all with the checks'
    seed 34) is in since the identities scale per pair (test_small_leak_beside_a_unit_head_is_refused_by_
    per_pair_identities)."""
    heads, bases, how, _ = target
    if how != "c1":
        _refused_or_right_on_its_head(target, seed, certify)
        return
    try:
        rec, _ = _learn(heads, bases, rng=np.random.default_rng(seed), certify=certify)
    except PrecisionLossError:
        return
    for (W, v), got, bW, bv in zip(heads, rec.heads, rec.diagnostics["error_bounds"],
                                   rec.diagnostics["error_bounds_v"], strict=True):
        assert np.linalg.norm(got.W - W) <= bW and np.linalg.norm(got.v - v) <= bv


#: Fixed (issue 23, refusals of good answers).  tiny_head_leaks' control beside a unit head: d = 3 on the
#: axes, head 1 = (2^-j e_1 e_1^T, -e_1), head 2 uniform (1e-20 e_2 e_2^T, -e_2), head 3 = (e_3 e_3^T, -e_3):
#: a C.1 target.  Certified, it was refused (PrecisionLossError) at j = 32 for 24 of 30 checks' seeds and
#: at j = 44 for all 30: the pair (1, 2)'s identities scale their tokens to ~1.7e5 (j = 32) or ~1e7 (j = 44),
#: and head 3's part of them was bounded for any rotation of norm 2 k0, k0 ~ 1e-8 (j = 32) or 1e-6 rad,
#: the identities' rounding at those tokens times ||J^+||_2: pi ~ k0 |x| ~ 1e-3..10 gave head 3's part
#: 1e-8..23 and the rotation bound failed its self-consistency.  Head 3 sees the pair's tokens only through
#: the rotation joining U_3 to U_1 and U_2, which the unit-token identities resolve to ~1e-13
#: (rotation._outside_heads per direction), once J's block structure drops the central differences'
#: rounding (~5e-4 at 1e7 tokens, coupled through J^+ into those directions: seeds 7 and 28).
TINY_C1_SEEDS = (0, 7, 28)


@pytest.mark.parametrize("j", [32, 44])
@pytest.mark.parametrize("seed", TINY_C1_SEEDS)
def test_a_tiny_c1_head_beside_a_unit_head_is_certified(j, seed):
    E = np.eye(3)
    heads = [(2.0**-j * np.diag([1.0, 0, 0]), -E[0]), (1e-20 * np.diag([0, 1.0, 0]), -E[1]),
             (np.diag([0, 0, 1.0]), -E[2])]
    rec, _ = _learn(heads, [E[:, :1], E[:, 1:2], E[:, 2:]], rng=np.random.default_rng(seed))
    for (W, v), got, bW, bv in zip(heads, rec.heads, rec.diagnostics["error_bounds"],
                                   rec.diagnostics["error_bounds_v"], strict=True):
        assert np.linalg.norm(got.W - W) <= bW and np.linalg.norm(got.v - v) <= bv
    assert rec.diagnostics["rotation_bound"] < 1e-10


def test_a_small_heads_flip_beside_large_heads_is_refused():
    """SMALL_FLIP (above), both ways: C.1 taken, the checks at head 1's unit scores see the flip (an
    AssumptionError, was a silent v off by 2.0); certified, the identities see the leak: their residuals
    fit no rotation (misfit 0.0416 against its tolerance 1.8e-7).  That was a PrecisionLossError while the
    unit head's part of the pair (1, 2)'s identities was bounded for a rotation of one norm in every
    direction (1.5e3 rad allowed, more than bounded for); bounded per direction, it is rounding."""
    heads, bases, _, _ = SMALL_FLIP
    with pytest.raises(AssumptionError, match="check query 0"):
        _learn(heads, bases, rng=np.random.default_rng(0), certify=False)
    with pytest.raises(AssumptionError, match="not those of a rotation"):
        _learn(heads, bases, rng=np.random.default_rng(0))


@pytest.mark.parametrize("certify", [False, True])
def test_a_tiny_head_beside_large_heads_is_flip_tested_at_its_unit_scores(certify):
    """A C.1 target with head 1's W 1e-44 beside W ~1: the checks scale U_1's tokens by ~2^73 (unit
    scores), where head 3's rounded scores of them may be anything but move its output by at most its
    values' spread (the tolerance's cap; without it the rounding term, ~eps c^2, buried the flip test and
    refused this good target): answered within the bounds, and its flip (SMALL_FLIP's leak) refused.  At
    1e-200 no scale below 2^512 (far from overflow) brings head 1's scores to 1: refused by the flip test."""
    E = np.eye(3)
    bases = [E[:, :1], E[:, 1:2], E[:, 2:]]
    heads = [(1e-44 * np.diag([1.0, 0, 0]), -E[0]), (np.diag([0, 0.5, 0]), E[1]),
             (np.diag([0, 0, 1.0]), -E[2])]
    rec, _ = _learn(heads, bases, rng=np.random.default_rng(0), certify=certify)
    for (W, v), got, bW, bv in zip(heads, rec.heads, rec.diagnostics["error_bounds"],
                                   rec.diagnostics["error_bounds_v"], strict=True):
        assert np.linalg.norm(got.W - W) <= bW and np.linalg.norm(got.v - v) <= bv
    flipped = [heads[0], (1e-20 * np.diag([0, 1.0, 0]), E[1] + 2 * E[0]), heads[2]]
    with pytest.raises(AssumptionError if not certify else PrecisionLossError):
        _learn(flipped, bases, rng=np.random.default_rng(0), certify=certify)
    with pytest.raises(PrecisionLossError, match="short-input flip"):
        _learn([(1e-200 * heads[0][0], heads[0][1]), *heads[1:]], bases, rng=np.random.default_rng(0),
               certify=certify)


@pytest.mark.parametrize("certify", [True, False])
def test_a_head_without_a_check_query_is_not_silently_flipped(certify):
    """Issue 23: the checks take k = b mod H, so with the default 3 checks and H = 4 head 4 was no
    query's k; head 1 attends uniformly (W 1e-20) and leaks -2 v^(4) into U_4, which the identities
    cannot see (a uniform head is linear) and no other query resolves (every other head attends
    uniformly over U_k's tokens): v^(4) came back off by 2.0, bound 4e-11 (certified) / 9e-15, no
    error.  The learner now asks max(checks, H) = 4 queries, one per head: the flip is seen."""
    E = np.eye(4)
    heads = [(1e-20 * np.diag([1.0, 0, 0, 0]), E[0] + 2 * E[3]), (np.diag([0, 0.5, 0, 0]), E[1]),
             (np.diag([0, 0, -0.7, 0]), -E[2]), (np.diag([0, 0, 0, 0.8]), -E[3])]
    with pytest.raises((AssumptionError, PrecisionLossError)):
        _learn(heads, [E[:, i:i + 1] for i in range(4)], rng=np.random.default_rng(0), certify=certify)
    assert LEARNERS["orthogonal-heads"].count(d=4, H=4, certify=False) == 4 * 2 + 4


def _refused_or_functionally_right(target, seed, certify=True):
    """The body of the two C.1-violation properties above: None if refused, else the recovery (checked
    to compute the target's function on held-out inputs)."""
    heads, bases, how = target
    oracle = ValueOracle(MultiHeadAttention(heads))
    try:
        rec = learn_orthogonal_heads(oracle, bases, rng=np.random.default_rng(seed), certify=certify)
    except (AssumptionError, NonIdentifiableError, PrecisionLossError):
        return None
    rng = np.random.default_rng(seed + 1)
    model, fitted = MultiHeadAttention(heads), MultiHeadAttention(rec.params)
    for N in range(1, 6):
        X = rng.standard_normal((N, len(bases[0])))
        assert abs(model(X) - fitted(X)) <= 1e-6 * (1 + sum(np.abs(X @ v).max() for _, v in heads)), how
    return rec


def test_check_scale_by_hand():
    """The checks' scale of U_k's tokens (rotation._check_scale, the identities' too), by hand: c^2 top
    ~ 1 (top = 2^-10: c = 2^5; top = 2^10: c = 2^-5; top = 2^-100: c = 2^50 whatever the other heads'
    W), capped up only at c^2 reach max(1, w_max) <= 2^512 (top = 2^-600, reach = w_max = 1: c =
    2^256; reach 4, w_max 16: c = 2^253; every W ~0: the tokens' own size, c = 2^256), never down for
    the cap, and 1 when head k's scores are 0 or not finite."""
    from attnproof.theorems.multihead.rotation import _check_scale

    assert _check_scale(2.0**-10, 1.0, 1.0) == 2.0**5
    assert _check_scale(2.0**10, 1.0, 1.0) == 2.0**-5
    assert _check_scale(2.0**-100, 1.0, 1.0) == _check_scale(2.0**-100, 1.0, 2.0**40) == 2.0**50
    assert _check_scale(2.0**-600, 1.0, 1.0) == 2.0**256
    assert _check_scale(2.0**-600, 4.0, 16.0) == 2.0**253
    assert _check_scale(2.0**-600, 1.0, 0.0) == 2.0**256
    assert _check_scale(0.0, 1.0, 1.0) == _check_scale(np.inf, 1.0, 1.0) == 1.0
    assert _check_scale(2.0**-30, 2.0**600, 1.0) == 1.0  # the cap below 1: never down for it


def test_bad_bases_raise_typed_errors():
    E = np.eye(4)
    heads = [
        (np.diag([1.0, 2.0, 0, 0]), np.array([1.0, -1.0, 0, 0])),
        (np.diag([0, 0, 0.5, -1.0]), np.array([0, 0, 2.0, 1.0])),
    ]
    oracle = ValueOracle(MultiHeadAttention(heads))
    with pytest.raises(AssumptionError, match="orthonormal"):
        learn_orthogonal_heads(oracle, [E[:, :2] * 1.001, E[:, 2:]])
    with pytest.raises(AssumptionError, match="orthonormal"):
        learn_orthogonal_heads(oracle, [E[:, :2], E[:, 1:3]])
    with pytest.raises(AssumptionError, match="span"):
        learn_orthogonal_heads(oracle, [E[:, :2], E[:, 2:3]])
    with pytest.raises(ShapeError):
        learn_orthogonal_heads(oracle, [E[:3, :2], E[:, 2:]])
    with pytest.raises(InvalidInputError):
        learn_orthogonal_heads(oracle, [])
    with pytest.raises(InvalidInputError, match="checks"):
        learn_orthogonal_heads(oracle, [E[:, :2], E[:, 2:]], checks=-1)
    with pytest.raises(QueryBudgetExceeded):
        learn_orthogonal_heads(ValueOracle(MultiHeadAttention(heads), budget=5), [E[:, :2], E[:, 2:]])
    with pytest.raises(ShapeError):
        ReducedOracle(oracle, np.eye(3))
    zero_head = [heads[0], (np.diag([0, 0, 0.5, -1.0]), np.zeros(4))]
    with pytest.raises(NonIdentifiableError):
        learn_orthogonal_heads(ValueOracle(MultiHeadAttention(zero_head)), [E[:, :2], E[:, 2:]])


def _qr_target(v2: float, seed: int = 0):
    """Issue 23, item 1: d = 4, two heads in the subspaces of a float64 QR basis (accepted by
    check_bases), head 2's v scaled by v2."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    bases = [Q[:, :2], Q[:, 2:]]
    heads = [(E @ rng.standard_normal((2, 2)) @ E.T, E @ (rng.standard_normal(2) * (v2 if h else 1.0)))
             for h, E in enumerate(bases)]
    return heads, bases


@given(mst.small_head_targets(), st.integers(0, 2**16))
@example(_qr_target(1e-8), 1)  # was: error 4.4e-8 vs bound 4.2e-13 (the leak unmodelled)
@example(_qr_target(1e-16), 1)  # was: error 3.3 vs bound 1.8e-12, no refusal
def test_small_head_beside_large_heads_within_its_own_bound_or_refused(target, seed):
    """The other heads' rounding leaks about eps |v^(g)| |x| into a head's reduced oracle: each
    head is within its *own* bound (which models that leak), or the learner refuses."""
    heads, bases = target
    try:
        rec, _ = _learn(heads, bases, rng=np.random.default_rng(seed))
    except PrecisionLossError:
        return
    for (W, v), got, bW, bv in zip(heads, rec.heads, rec.diagnostics["error_bounds"],
                                   rec.diagnostics["error_bounds_v"], strict=True):
        assert np.linalg.norm(got.W - W) <= bW
        assert np.linalg.norm(got.v - v) <= bv


def test_small_head_bound_is_tight_and_a_swamped_head_is_refused():
    """Fixed inputs: at |v_2| ~ 1e-8, C.1 taken for the bases (certify=False), the bound holds within
    3e3 of the truth (measured 1.1e3); certified, a rotation below the identities' resolution
    (~1e-14) could move head 2 by ~1e-4 of its size: refused or within the larger bound; at 1e-12
    and 1e-16 head 2 is below float64's reach beside head 1: a typed refusal."""
    heads, bases = _qr_target(1e-8)
    rec, _ = _learn(heads, bases, rng=np.random.default_rng(1), certify=False)
    err = np.linalg.norm(rec.heads[1].W - heads[1][0])
    assert err <= rec.diagnostics["error_bounds"][1] <= 3e3 * err
    try:
        rec, _ = _learn(heads, bases, rng=np.random.default_rng(1))
        assert err <= rec.diagnostics["error_bounds"][1]
    except PrecisionLossError as e:
        assert "head 2" in str(e)
    for v2 in (1e-12, 1e-16):
        for certify in (False, True):
            with pytest.raises(PrecisionLossError, match="head 2"):
                _learn(*_qr_target(v2), rng=np.random.default_rng(1), certify=certify)


def _rotated_target(seed: int, lo: float, hi: float):
    """A C.1 target whose heads live in the subspaces rotated by exp(K), ||K||_2 = delta in
    [10^lo, 10^hi]: Assumption C.1 fails for the given (unrotated) bases by a small angle."""
    from scipy.linalg import expm

    rng = np.random.default_rng(seed)
    dims = [int(x) for x in rng.integers(1, 4, size=rng.integers(2, 4))]
    d = sum(dims)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    cuts = np.cumsum([0, *dims])
    bases = [Q[:, a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    delta = 10.0 ** rng.uniform(lo, hi)
    K = rng.standard_normal((d, d))
    K = (K - K.T) / 2
    R = expm(K * delta / np.linalg.norm(K, 2))
    scales = 10.0 ** rng.uniform(-6, 0, size=len(dims)) if rng.random() < 0.5 else np.ones(len(dims))
    heads = []
    for E, s in zip(bases, scales):
        Er, n = R @ E, E.shape[1]
        heads.append((Er @ rng.standard_normal((n, n)) @ Er.T, Er @ (rng.standard_normal(n) * s)))
    return heads, bases


@settings(max_examples=max(3, settings().max_examples // 5))
@given(st.integers(0, 2**16), st.sampled_from([(-13, -8), (-9, -4)]))
@example(226, (-9, -4))  # was: error 1.8 vs bound 1.1e-8, the checks passed (a head's v at 1e-6 of others)
# issue 23, item 1 (13 of 200 such draws were outside their bound, the 3 checks passing):
@example(1, (-13, -8))  # was: error 1.3e-6 vs bound 2.0e-7 (a head's v at 1e-6 of the others)
@example(173, (-13, -8))  # was: error 9.8e-10 vs bound 3.9e-11 (25x)
@example(13, (-13, -8))  # was: error 2.0e-10 vs bound 3.5e-11
# thorough profile, seed 8127: head 1 erred 1.428960e-3 vs bound 1.425876e-3 (the re-run's own curvature
# over the rotation, 4e-6, was missing; now measured: bound 1.43387e-3, refused by the promise)
@example(43926, (-9, -4))
def test_c1_violation_by_a_small_rotation_is_refused_or_within_its_bound(seed, decades):
    """Subspaces rotated by 10^lo..10^hi off the given bases (small heads among large ones in half
    the draws): a typed refusal, or every head within its bound, which carries the rotation the C.1
    identities (rotation.py) cannot exclude: never a silent answer outside it."""
    heads, bases = _rotated_target(seed, *decades)
    try:
        rec, oracle = _learn(heads, bases, rng=np.random.default_rng(seed))
    except (AssumptionError, PrecisionLossError, NonIdentifiableError):
        return
    assert rec.queries == oracle.queries
    for (W, v), got, bW in zip(heads, rec.heads, rec.diagnostics["error_bounds"], strict=True):
        assert np.linalg.norm(got.W - W) <= bW


def _invisible_pair_target(t: float = 1e-4, v: float = 1e-9, w: float = 1.0):
    """d = 3 on the axes: a unit head (e_1 e_1^T, -e_1) beside a pair of heads with v at ``v`` (1e-9), W = w u
    u^T, living in U_2, U_3 rotated by t rad in their own plane: Assumption C.1 fails for the axes by t."""
    E = np.eye(3)
    u2, u3 = np.cos(t) * E[1] + np.sin(t) * E[2], -np.sin(t) * E[1] + np.cos(t) * E[2]
    heads = [(np.outer(E[0], E[0]), -E[0]), (w * np.outer(u2, u2), v * u2), (w * np.outer(u3, u3), -v * u3)]
    return heads, [E[:, i:i + 1] for i in range(3)]


#: Fixed (was a strict xfail).  J's kernel was cut globally (singular values below 2^-30 of the largest):
#: the pair (2, 3)'s column, 1.6e-10 beside the unit head's 1.1, lay below it, so a rotation between U_2 and
#: U_3 was unbounded, and its slopes (~1e-10 of those toward U_1) passed as "moves no head": rotation bound
#: 8.5e-14 rad against the true 1e-4, heads 2 and 3 1.5x (W) and 6.5x (v) outside their bounds, no error (6
#: of 135 grid draws: v 1e-10..1e-8, W 0.25..4, t 1e-6..1e-3).  Each pair's block is now cut at its own
#: rounding floor (rotation._range_inverse): seen, and the rotation, resolved by the pair's one-token
#: right sides (below), refused as a C.1 violation (0 of 180 grid draws wrong, all refused).
@pytest.mark.parametrize("t", [1e-6, 1e-4])
def test_a_rotation_between_two_small_heads_is_refused(t):
    heads, bases = _invisible_pair_target(t)
    with pytest.raises(AssumptionError, match="rotation"):
        _learn(heads, bases, rng=np.random.default_rng(3))


#: Fixed (a refusal of a good answer).  The C.1 control of the target above (t = 0) was refused with a
#: PrecisionLossError (a rotation of 0.055 rad allowed, 45 of 45 grid draws at v 1e-10..1e-6, W 0.25..4):
#: the pair's identities took their right side from the measured sum of the v's, which errs by eps times the
#: unit head's v (1e-16 against answers of 1e-9 * eps), so their rotation was resolved only to ~1e-5 rad.
#: Each identity now also asks f([x_1]) (one token: exactly x_1^T sum_k v^(k)), of the pair's size under
#: C.1, and the rotation is resolved to ~1e-13 rad (rotation.identity_residuals): 36 of 45 answered within
#: the bounds; at v = 1e-10 (the other 9) the unit head's rotation, resolved to 1e-13 rad, moves head 2 by
#: 1e-3 of its size: an honest PrecisionLossError.
@pytest.mark.parametrize("v, w, seed", [(1e-9, 1.0, 3), (1e-8, 4.0, 4), (1e-6, 0.25, 5)])
def test_two_small_heads_beside_a_unit_head_satisfying_c1_are_answered(v, w, seed):
    heads, bases = _invisible_pair_target(0.0, v, w)
    rec, oracle = _learn(heads, bases, rng=np.random.default_rng(seed))
    info = rec.diagnostics
    assert rec.queries == oracle.queries == info["queries_formula"] and info["identity_queries"] == 3 * 6
    # the pair's 2 identities at least take the one-token right side (the unit head's are free to)
    assert info["identities_one_token"] >= 2 and info["rotation_bound"] < 1e-12
    for (W, vv), got, bW, bv in zip(heads, rec.heads, rec.diagnostics["error_bounds"],
                                    rec.diagnostics["error_bounds_v"], strict=True):
        assert np.linalg.norm(got.W - W) <= bW and np.linalg.norm(got.v - vv) <= bv


#: The 9 of 45 grid draws of the control above still refused in float64 (v = 1e-10): the rotation the
#: identities resolve (~1e-13 rad, a thousand times eps) moves head 2's reduced oracle by 1.4e-3 .. 4.3e-3 of
#: its size, past the first-order certificate's MAX_ROTATION (or its bound past the promised accuracy), and
#: the refusal names the remedy, mpmath.  Measured there: answered at 20, 30 and 50 digits, every error within
#: its bound and shrinking like 10^-dps (head 2's W: 6.8e-21, 7.9e-31, 1.3e-50 at w = 1), 27 queries each.
@pytest.mark.parametrize("w, seed", [(1.0, 3), (4.0, 4), (0.25, 5)])
def test_two_small_heads_at_v_1e_10_refused_in_float64_answered_in_mpmath(w, seed):
    heads, bases = _invisible_pair_target(0.0, 1e-10, w)
    try:  # float64: within the bounds, or refused with the remedy named (today: refused)
        rec, _ = _learn(heads, bases, rng=np.random.default_rng(seed))
    except PrecisionLossError as refusal:
        assert "mpmath" in str(refusal)
    else:
        for (W, v), got, bW, bv in zip(heads, rec.heads, rec.diagnostics["error_bounds"],
                                        rec.diagnostics["error_bounds_v"], strict=True):
            assert np.linalg.norm(got.W - W) <= bW and np.linalg.norm(got.v - v) <= bv
    errors = []
    for dps in (20, 40):
        arith = MP(dps)
        rec, oracle = _learn(heads, bases, arith=arith, rng=np.random.default_rng(seed))
        assert rec.queries == oracle.queries == rec.diagnostics["queries_formula"]
        with arith.context():
            for (W, v), got, bW, bv in zip(heads, rec.heads, rec.diagnostics["error_bounds"],
                                            rec.diagnostics["error_bounds_v"], strict=True):
                eW = mpmath.sqrt(mpmath.fsum((got.W[i, j] - mpmath.mpf(W[i, j])) ** 2
                                             for i in range(3) for j in range(3)))
                ev = mpmath.sqrt(mpmath.fsum((got.v[i] - mpmath.mpf(v[i])) ** 2 for i in range(3)))
                assert eW <= bW and ev <= bv
            errors.append(max(eW, mpmath.mpf(10) ** (-2 * dps)))  # head 3's W error (0 allowed)
    assert errors[1] <= errors[0] * mpmath.mpf(10) ** -15  # 20 more digits: at least 15 more correct


def _large_head_rotated_target(seed: int, delta: float):
    """A head of W ~100 beside unit heads (1-2 dimensional subspaces, axis or QR bases), every subspace
    rotated by exp(K), ||K||_2 = delta, off the given bases."""
    from scipy.linalg import expm

    rng = np.random.default_rng(seed)
    dims = [int(x) for x in rng.integers(1, 3, size=rng.integers(2, 4))]
    d = sum(dims)
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0] if rng.random() < 0.5 else np.eye(d)
    cuts = np.cumsum([0, *dims])
    bases = [Q[:, a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    K = rng.standard_normal((d, d))
    R = expm((K - K.T) * delta / np.linalg.norm(K - K.T, 2))
    heads = []
    for E, w in zip(bases, [100.0] + [1.0] * (len(dims) - 1)):
        Er, n = R @ E, E.shape[1]
        heads.append((w * (Er @ rng.standard_normal((n, n)) @ Er.T), Er @ rng.standard_normal(n)))
    return heads, bases


#: Fixed (rigour gap (a): the checks' W term assumed each head's W error in its own subspace).  A target
#: rotated 1e-12 rad off the bases, within the identities' bound (1.8e-12 rad, seed 3; 7.1e-12, seed 10):
#: the head of W ~100 sees the checks' tokens of U_k through the rotation, which no term counted, and the
#: checks refused the target ("does not satisfy C.1") at 4.5x (seed 3) and 1.2x (seed 10) their tolerance.
@pytest.mark.parametrize("seed", [3, 10])
def test_a_rotation_within_its_bound_passes_the_checks(seed):
    heads, bases = _large_head_rotated_target(seed, 1e-12)
    rec, _ = _learn(heads, bases, rng=np.random.default_rng(seed))
    assert rec.diagnostics["rotation_bound"] >= 1e-12 and rec.diagnostics["check_residual"] <= 1
    for (W, v), got, bW, bv in zip(heads, rec.heads, rec.diagnostics["error_bounds"],
                                   rec.diagnostics["error_bounds_v"], strict=True):
        assert np.linalg.norm(got.W - W) <= bW and np.linalg.norm(got.v - v) <= bv


def test_check_tolerance_rotation_term_by_hand():
    """orthogonal._check_tolerance's W term by hand (eps = gamma = 0: no rounding, no v error): d = 2,
    E_1 = e_1, E_2 = e_2, head 1 = (e_1 e_2^T, e_1) with eps_W = 0, head 2 = (0, e_2); tokens (1, 0),
    (0, 1), (2, 0): every score 0, alpha = 1/3, head 1's y = (1, 0, 2), |y - 1| = (0, 1, 1), p = (1, 0, 2),
    |x| = (1, 1, 2).  With delta = e^k - 1, D = k^2 e^k / 2, ||M|| = 1: e_2 = delta (2 + 2 delta), e_3 =
    4 D (2 + D) + delta (8 + 4 delta), tolerance 2 (e_2 + e_3) / 3; 0 at k = 0 (C.1 taken)."""
    from attnproof.theorems.multihead.orthogonal import _check_tolerance

    E = np.eye(2)
    args = (np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]]), [np.outer(E[0], E[1]), np.zeros((2, 2))],
            [E[0], E[1]], [E[:, :1], E[:, 1:]], [(0.0, 0.0), (0.0, 0.0)], 0.0, 2, 0.0)
    k = 2.0**-10
    delta, D = np.expm1(k), k * k * np.exp(k) / 2
    expected = 2 * (delta * (2 + 2 * delta) + 4 * D * (2 + D) + delta * (8 + 4 * delta)) / 3
    assert _check_tolerance(*args, k) == pytest.approx(expected, rel=1e-12, abs=0)
    assert _check_tolerance(*args, 0.0) == 0.0


def test_check_tolerance_counts_the_dot_products_rounding_by_hand():
    """orthogonal._check_tolerance's rounding term where every value x_i^T v is 0 but its dot product
    still rounds (d eps |x_i|^T |v|, which |x_i^T v| understates, at a float basis by up to 1 / eps; as
    rotation._answer_rounding): d = 2, one head (W = 0, v = (1, 1)) with exact bounds, tokens (1, -1),
    (2, -2), (1, -1): y = 0, alpha = 1/3, no W or v term, |x_i|^T |v| = 2, 4, 2, so the tolerance is
    4 (d + 3 + 4) eps (3 * 4) exactly (it was 0)."""
    from attnproof.theorems.multihead.orthogonal import CHECK_LENGTH, _check_tolerance

    eps = 2.0**-53
    Gb = np.array([[1.0, -1.0], [2.0, -2.0], [1.0, -1.0]])
    tol = _check_tolerance(Gb, [np.zeros((2, 2))], [np.ones(2)], [np.eye(2)], [(0.0, 0.0)], 0.0, 2, eps)
    assert tol == 4 * (2 + CHECK_LENGTH + 4) * eps * (3 * 4)


def test_reduced_oracle_counts_every_query_in_both_places():
    heads = [(np.eye(2), np.ones(2))]
    parent = ValueOracle(MultiHeadAttention(heads))
    sub = ReducedOracle(parent, np.array([[1.0], [0.0]]))
    sub(np.ones((4, 2, 1)))
    sub(np.ones((1, 1)))
    assert sub.queries == parent.queries == 5 and sub.calls == 2


# --- the conjecture: Hessians and SBD ------------------------------------------------------


def _c1(H, dh, seed, arith=FLOAT64):
    rng = np.random.default_rng(seed)
    bases = cayley_bases([dh] * H, rng.standard_normal((H * dh, H * dh)), arith)
    with arith.context():
        heads = [
            (
                E @ arith.asarray(rng.standard_normal((dh, dh)) / np.sqrt(dh)) @ E.T,
                E @ arith.asarray(rng.standard_normal(dh)),
            )
            for E in bases
        ]
    return heads, bases, rng


def test_fd_hessian_matches_closed_form_and_counts_queries():
    heads, _, _ = _c1(2, 2, 0)
    oracle = ValueOracle(MultiHeadAttention(heads))
    q, z = np.eye(4)[1], np.full(4, 0.3)
    H_fd = fd_hessian(oracle, q, z, 2.0**-13, FLOAT64)
    assert oracle.queries == fd_queries(4) == 33
    assert np.abs(H_fd - probe_hessian(heads, q, z, FLOAT64)).max() < 1e-6
    ar = MP(40)
    heads, _, _ = _c1(2, 2, 0, ar)
    oracle = ValueOracle(MultiHeadAttention(heads, ar))
    with ar.context():
        err = np.abs(
            fd_hessian(oracle, q, z, mpmath.mpf(2) ** -33, ar) - probe_hessian(heads, q, z, ar)
        ).max()
        assert err < mpmath.mpf(10) ** -18  # h = 2^-33 ~ eps^(1/4): h^2 ~ eps / h^2 ~ 1e-20


@given(mst.orthogonal_heads_targets(dims=[4, 4]), st.integers(1, 2), st.integers(0, 2**16))
def test_fewer_than_dh_minus_1_hessians_cannot_separate_heads(target, K, seed):
    """The necessity lemma (module docstring, proven): K < d_h - 1 Hessians at z = 0 leave a
    common kernel across heads, so the finest SBD never returns the head subspaces."""
    heads, bases = target
    As = [probe_hessian(heads, np.eye(8)[j], np.zeros(8), FLOAT64) for j in range(K)]
    found, _ = sbd_commutant(As, np.random.default_rng(seed))
    assert subspace_error(found, bases) > 1e-3


@pytest.mark.parametrize("H,dh", [(2, 2), (2, 3), (3, 3), (2, 4), (2, 5)])
def test_commutant_recovers_subspaces_from_max_2_dh_minus_1_hessians(H, dh):
    """Measured (not proven): K = max(2, d_h - 1) exact Hessians suffice for generic heads;
    the random-combination heuristic returns one block as soon as d_h >= 3."""
    heads, bases, rng = _c1(H, dh, 7)
    K = max(2, dh - 1)
    As = [probe_hessian(heads, np.eye(H * dh)[j], np.zeros(H * dh), FLOAT64) for j in range(K)]
    found, info = sbd_commutant(As, rng)
    assert info["commutant_dim"] == H and subspace_error(found, bases) < 1e-10
    _, ninfo = sbd_random_combination(As, rng)
    assert (ninfo["block_sizes"] == [H * dh]) == (dh >= 3)


def test_sbd_end_to_end_float64_and_mpmath():
    heads, _, rng = _c1(2, 3, 3)
    oracle = ValueOracle(MultiHeadAttention(heads))
    rec = learn_multihead_sbd(oracle, hessians=2, rng=rng)
    assert rec.queries == oracle.queries == 2 * fd_queries(6) + 2 * (3 + 9) + 3 + 6 * 3 * 3
    assert score_heads(rec, heads, FLOAT64)["err_W"] <= rec.diagnostics["error_bound"]
    assert score_heads(rec, heads, FLOAT64)["err_W"] < 1e-4
    ar = MP(40)
    heads, _, rng = _c1(2, 3, 3, ar)
    rec = learn_multihead_sbd(ValueOracle(MultiHeadAttention(heads, ar)), hessians=2, rng=rng, arith=ar)
    assert score_heads(rec, heads, ar)["err_W"] < 1e-16
    with pytest.raises(InvalidInputError):
        learn_multihead_sbd(oracle, hessians=0, rng=rng)


@pytest.mark.parametrize("H,dh,K", [(2, 3, 1), (3, 2, 1), (2, 2, 1), (3, 3, 1)])
def test_sbd_with_too_few_hessians_is_refused_not_wrong(H, dh, K):
    """Issue 23, item 5: below the necessity bound the commutant SBD returns wrong blocks (was: error
    2.8-4, or 6 heads for 3, returned with no error); the checks across the blocks refuse them."""
    heads, _, rng = _c1(H, dh, 1)
    with pytest.raises((AssumptionError, PrecisionLossError)):
        learn_multihead_sbd(ValueOracle(MultiHeadAttention(heads)), hessians=K, rng=rng)


def test_sbd_cli_refuses_too_few_hessians(capsys):
    from attnproof.cli import main

    assert main(["recover", "--d", "6", "--learner", "multihead-sbd", "--H", "2", "--hessians", "1"]) != 0
    assert "AssumptionError" in capsys.readouterr().err


@pytest.mark.parametrize("tau", [1e-8, 1e-6])
def test_sbd_too_noisy_is_refused_before_any_query(tau):
    """At noise 1e-8..1e-6 (was: answered with heads 0.01-0.23 off, or with the wrong number of
    heads): the heads' bounds model rounding-level answers only, so refused up front."""
    from attnproof.oracles import ApproxOracle

    heads, _, rng = _c1(2, 3, 0)
    oracle = ApproxOracle(MultiHeadAttention(heads), tau=tau, adversary="random", seed=0)
    with pytest.raises(PrecisionLossError, match="noise"):
        learn_multihead_sbd(oracle, hessians=2, rng=rng, noise=tau)
    with pytest.raises(PrecisionLossError, match="noise"):
        learn_multihead_sbd(oracle, hessians=2, rng=rng, noise=2 * FLOAT64.eps)
    assert oracle.queries == 0


@pytest.mark.parametrize("checks", [-1, 0, True, 1.5])
def test_sbd_needs_a_positive_number_of_checks(checks):
    heads, _, rng = _c1(2, 2, 0)
    with pytest.raises(InvalidInputError, match="checks"):
        learn_multihead_sbd(ValueOracle(MultiHeadAttention(heads)), hessians=2, rng=rng, checks=checks)


def test_hessian_count_certificate_holds_at_the_bound_and_fails_below_it():
    """Issue 21, item 2: at the rational point, K = max(2, d_h - 1) Hessians leave exactly the block
    algebra (a non-zero (n - H)-minor, exact and enclosed by Arb away from 0); K = d_h - 2 (below
    the necessity bound) cannot: the same machinery finds no minor that large."""
    import flint

    from attnproof.theorems.multihead.identities import hessian_count_certificate

    c = hessian_count_certificate(2, 4)
    assert c["rank"] == c["n"] - 2 and c["det"] != 0 and c["null_residual"] == 0
    assert not c["arb"].contains(0) and c["arb"].overlaps(flint.arb(c["det"]))
    low = hessian_count_certificate(2, 4, K=2)
    assert low["rank"] < low["n"] - 2 and low["null_residual"] == 0


@pytest.mark.parametrize("drop_lift", [False, True])
def test_verify_fails_when_the_orthogonal_heads_bound_loses_a_factor(monkeypatch, drop_lift):
    """Issue 22, item 2: ``propC.2/run-small-head`` runs where the bound is nearly tight (1e3 x the
    error), so ``attnproof verify`` fails when the reduced oracle's factor is dropped from the
    bound, alone or with the lift's term (the lift's term alone is ~1e-15 of this bound: see
    ``propC.2/run-lift`` for a target where it dominates)."""
    from attnproof.theorems.multihead import orthogonal
    from attnproof.verify.certificate import verify

    assert verify("propC.2/run-small-head").passed
    monkeypatch.setattr(orthogonal, "_reduced_oracle_ratio", lambda *a: 1.0)
    if drop_lift:
        monkeypatch.setattr(orthogonal, "_lift_error", lambda *a: 0.0)
    assert not verify("propC.2/run-small-head").passed


def test_verify_fails_when_only_the_lift_term_is_dropped(monkeypatch):
    """Issue 22, item 2: ``propC.2/run-lift`` runs where the lift's term (rounding of ``E W~ E^T`` and
    the bases' Gram defect) is most of head 1's bound and the error is the lift's (a basis scaled by
    1 + 120 u), so dropping that term alone makes ``attnproof verify`` fail."""
    from attnproof.theorems.multihead import orthogonal
    from attnproof.verify.certificate import verify

    assert verify("propC.2/run-lift").passed
    monkeypatch.setattr(orthogonal, "_lift_error", lambda *a: 0.0)
    assert not verify("propC.2/run-lift").passed


def test_verify_fails_when_the_sbd_blocks_rotation_is_dropped(monkeypatch):
    """Issue 22, item 2, the other learner: without the term of the blocks' rotation (the finite
    differences leave the blocks ~eps^(1/2) off the subspaces) the heads' bounds are 1e5 x too small:
    the checks refuse the blocks or the errors exceed the bounds, and ``sec7/run-sbd`` fails."""
    from attnproof.theorems.multihead import orthogonal
    from attnproof.verify.certificate import verify

    real = orthogonal.rotation_terms
    monkeypatch.setattr(orthogonal, "rotation_terms",
                        lambda *a: ([(0.0, 0.0)] * len(a[0]), real(*a)[1]))
    assert not verify("sec7/run-sbd").passed


@pytest.mark.parametrize("learner", ["orthogonal-heads", "multihead-sbd"])
def test_the_defaults_are_declared_once(learner):
    """One declaration of the defaults (issue 19): a default bench run asks exactly the registered
    count at its defaults (H, checks, K), which is what the CLI's progress bar expects."""
    r = run(learner, 4, "float64", 0)
    assert r["queries"] - r["diagnostics"]["reasked_queries"] == r["queries_formula"]
    assert r["queries_formula"] == r["expected_queries"] == LEARNERS[learner].count(d=4)
