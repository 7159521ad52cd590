"""No silent wrong answer: every learner meets its reported error bound or raises a typed error.

The central property of the trust issue, run over :func:`attnproof.strategies.hostile_targets`
(mixed scales 1e+-150, tiny and huge W, W = 0 with tiny v, huge score bias and offset, a rank
larger than declared, a near-singular v, mpmath at 5..15 digits) for every learner that reports
an a-posteriori bound: the exact learner (orthogonal, Gaussian and basis probes), the skeleton learner
(declared rank, with rank checks) and the adaptive skeleton; heads with biases go through their
``bias=True`` paths.  Thm 6.1's learner has its own honest-bound property over adversarial
oracles (``tests/test_noisy.py``); the nuclear-norm learner reports no bound (Thm 5.1's constant
C is unspecified), which its docstring says.

The new rooms' learners meet the same property on their own hostile families (issue 23): a small
head among large ones (orthogonal heads), one tiny odd FFN unit (learn_ffn, learn_transformer),
a target whose norm exceeds the declared W_bound (membership), mpmath at 7-10 digits with a loose
user tolerance (learn_ffn), and too few Hessians (multi-head SBD).  Each family runs a few examples
in the ``ci`` profile (a tenth of the profile's count) and more in ``thorough``; a family the
room's own code fails today is a strict xfail naming the room, with the counterexample pinned.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnproof import strategies as ast
from attnproof.arith import FLOAT64, MP
from attnproof.errors import AttnproofError
from attnproof.models import Attention, MultiHeadAttention, OneLayerTransformer, ReluFFN
from attnproof.oracles import ValueOracle
from attnproof.recovery import score, score_heads
from attnproof.theorems.exact import learn_exact
from attnproof.theorems.lowrank import learn_skeleton, learn_skeleton_adaptive
from attnproof.theorems.membership import MembershipOracle, learn_membership
from attnproof.theorems.multihead import cayley_bases, learn_multihead_sbd, learn_orthogonal_heads
from attnproof.theorems.transformer import learn_ffn, learn_transformer

from helpers import seeds

LEARNERS = ("exact-orthogonal", "exact-gaussian", "exact-basis", "skeleton", "skeleton-adaptive")


def learn(name: str, h: ast.HostileTarget, seed: int):
    oracle = ValueOracle(h.model())
    rng = np.random.default_rng(seed)
    kw = dict(arith=h.arith, bias=h.c is not None)
    if name.startswith("exact"):
        return learn_exact(oracle, probes=name.split("-")[1], rng=rng, **kw), oracle
    if name == "skeleton":  # with checks: the only way an under-declared rank can be seen
        return learn_skeleton(oracle, rank=h.declared_rank, rng=rng, checks=min(h.d, 4), **kw), oracle
    return learn_skeleton_adaptive(oracle, rng=rng, **kw), oracle


@given(ast.hostile_targets(d=st.integers(1, 6)), st.sampled_from(LEARNERS), seeds)
# |c| = 1e8 on a 3 x 3 head: W off by 34 with no error and no bound before the output guard
@example(
    ast.HostileTarget(
        "huge-bias", np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6], [0.3, 0.2, 0.1]]),
        np.array([1.0, -0.5, 0.25]), 3, c=np.array([1e8, -2e8, 3e8]), beta=0.5,
    ),
    "exact-gaussian", 0,
)
# W = 1e-200 e_1 e_1^T: the skeleton returned W_hat = 0 (relative error 1) before the guard
@example(ast.HostileTarget("tiny-W", np.diag([1e-200, 0.0]), np.array([1.0, 1.0]), 1), "skeleton", 0)
def test_every_learner_meets_its_reported_bound_or_raises_a_typed_error(h, name, seed):
    try:
        rec, oracle = learn(name, h, seed)
    except AttnproofError:
        return  # typed: the caller is told, nothing wrong is returned
    assert rec.queries == oracle.queries
    s = score(rec, h.W, h.v, h.arith, c=h.c, beta=h.beta)
    assert s.err_W <= rec.error_bound, (h.family, s.err_W, rec.error_bound)
    if h.c is not None:
        assert s.err_c <= rec.diagnostics["error_bound_c"], (s.err_c, rec.diagnostics["error_bound_c"])


# --- the new rooms' learners on their hostile families (issue 23) ------------------------------

#: a few examples in the ci profile (a tenth of its count), more in thorough
FEW = settings(max_examples=max(3, settings().max_examples // 10))
EPS = FLOAT64.eps


@FEW
@given(st.integers(0, 2**16), st.integers(1, 2), st.floats(4.0, 14.0))
@example(8, 1, 8.0)  # |v_1| ~ 1e-8: err_W 1.7e-8 against a bound of 1.7e-13
def test_orthogonal_heads_small_head_among_large(seed, small, log10_shrink):
    """A head whose v is 10^-k times the others' (float QR basis): its reduced oracle carries the
    other heads' rounding, eps |v_other|, which a relative error model misses."""
    g = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(g.standard_normal((4, 4)))
    bases = [Q[:, :2], Q[:, 2:]]
    scale = [1.0, 1.0]
    scale[small - 1] = 10.0**-log10_shrink
    heads = [
        (E @ g.standard_normal((2, 2)) @ E.T, E @ g.standard_normal(2) * s)
        for E, s in zip(bases, scale, strict=True)
    ]
    oracle = ValueOracle(MultiHeadAttention(heads))
    try:
        rec = learn_orthogonal_heads(oracle, bases)
    except AttnproofError:
        return
    assert rec.queries == oracle.queries
    assert score_heads(rec, heads, FLOAT64)["err_W"] <= rec.diagnostics["error_bound"]


def _tiny_odd_ffn(seed: int, d: int, m: int, log10_tiny: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An FFN whose odd part is one tiny unit: m even pairs ``a (ReLU(b^T x) + ReLU(-b^T x))``
    plus ``+-10^-k ReLU(a^T x)``; and a W for the Transformer around it."""
    g = np.random.default_rng(seed)
    B, a = g.standard_normal((d, m)), g.standard_normal(m)
    A = np.concatenate([B, -B, g.standard_normal((d, 1))], axis=1)
    w = np.concatenate([a, a, [10.0**-log10_tiny * g.choice([-1.0, 1.0])]])
    return A, w, g.standard_normal((d, d)) / 2


def _ffn_within_bound(rec, A: np.ndarray, w: np.ndarray, g: np.random.Generator, arith=FLOAT64) -> None:
    """|f_hat(x) - f(x)| <= bound |x|_inf (+ the float evaluation of both) at random points and at
    points on and 1e-9 off every unit's hyperplane, at scales 1 and 1e-3."""
    d = A.shape[0]
    X = [g.standard_normal((64, d))]
    for col in A.T:
        P = g.standard_normal((4, d))
        on = P - np.outer(P @ col, col) / (col @ col)
        X += [on, on + 1e-9 * col, on - 1e-9 * col]
    X = np.concatenate(X)
    X = np.concatenate([X, 1e-3 * X])
    truth = ReluFFN(A, w)(X[:, None, :])
    got = arith.to_float(rec(X))
    scale = np.abs(X @ A) @ np.abs(w) + np.abs(X @ arith.to_float(rec.N).T) @ np.abs(arith.to_float(rec.c))
    rounding = 4 * (d + A.shape[1] + rec.L + 2) * max(EPS, arith.eps) * scale
    allowed = rec.diagnostics["error_bound"] * np.abs(X).max(axis=1) + rounding
    assert np.all(np.abs(got - truth) <= allowed), float(np.max(np.abs(got - truth) - allowed))


TINY_ODD = dict(
    seed=st.integers(0, 2**16), d=st.integers(2, 4), m=st.integers(1, 2), log10_tiny=st.floats(8.0, 11.0)
)


@FEW
@given(**TINY_ODD)
# L = 1: the tiny unit dropped, 4e-10 over the bound 1.4e-9 (a strict xfail of the room before);
# its kink shows now at the points on the recovered hyperplanes or against the polish's bound
@example(seed=0, d=4, m=1, log10_tiny=9.0)
# (thorough, --hypothesis-seed 4711; a strict xfail of the room before) a 10^-8.5 unit: its kink
# merged with a unit one's, no further path resolved it (bisection to the floor with the far
# pieces, DegenerateProbeError on every attempt), and the search's network stood, SILENTLY 1e-9 |x|
# above its bound; a pair that would reach too far now opens a piece nearer the kink instead
@example(seed=205, d=4, m=2, log10_tiny=8.5)
# (thorough, --hypothesis-seed 91127; a strict xfail before) a 10^-10.5 unit: two attempts refused
# at an end of the path, the third merged the tiny kink with a unit one's; its polished bound
# (2.5e-11) was below the merge's error (3.1e-11 |x| in the wedge), SILENTLY 3.5e-11 |x| above it,
# while the first two attempts' answers contradicted such a network: now every attempt's answers
# hold every network (the first attempt's search network stands, bound 4.2e-9)
@example(seed=2, d=4, m=2, log10_tiny=10.5)
# (thorough, --hypothesis-seed 20261126; a strict xfail before) a 10^-8.25 unit merged with a unit
# one's on the first path; the further paths found it (jump 7.8e-9, error 2.6e-9), but its normal,
# known to O(1), was taken for the unit kink's hyperplane and dropped: SILENTLY 1.4e-9 |x| above
# the bound; now a hyperplane found again must show the same jump size |c_j| too (L = 2)
@example(seed=442, d=3, m=1, log10_tiny=8.25)
# (thorough, --hypothesis-seed 7301127; a strict xfail before, OPEN_TINY_ODD) a 10^-10 unit whose
# kink crosses the path 0.023 before a unit one's: one attempt, confirmed as one kink (the tiny
# one's effect at the confirmation triple below the search's prediction errors), the polished
# bound 2.3e-11 below the merge's error in the wedge (5.1e-11 |x|, on the other recovered
# hyperplane), no answer seen showing it: SILENTLY 3.0e-11 |x| above the bound; now the polish
# confirms each kink at its own gradients' grade, which sees the merge, and the search's network
# stands (bound 5.9e-9)
@example(seed=35924, d=3, m=2, log10_tiny=10.0)
# (thorough, --hypothesis-seed 20261127; a strict xfail before, OPEN_TINY_ODD) an even pair (one
# |x| kink) beside a 10^-8 unit, d = 3: the tiny kink crosses the path 0.046 of the segment after
# the pair's, and the search confirmed them as one (its effect at the triple, |T^T x*| = 2.0e-9,
# below the prediction tolerance ~1.3e-8), charging the merged jump d (err_a + err_b) / 2 = 7.6e-9
# while the merge moves f by up to |T|_1 = 4.1e-8 (2.9e-8 |x| at worst); the polish's
# confirmation saw it (in_a) and no wedge point did, so the search's network stood (L = 1, 83
# queries), SILENTLY 2.6e-9 |x| above its bound 2.4e-8; now a bisection of the path finds the
# region between the two kinks (4 values), a piece measured there splits the kink and both are
# confirmed at the polish's grade (L = 2, bound 5.1e-10, 113 queries); since the wedge points are
# tilted, one of them contradicts the merged kink first and a further path splits it (L = 2, bound
# 6.8e-11, 161 queries)
@example(seed=1244, d=3, m=1, log10_tiny=8.0)
# (a survey of 150 random draws of TINY_ODD, numpy seed 1; thorough, --hypothesis-seed 271828 and
# 1244; strict xfails before, OPEN_TINY_ODD) a tiny unit's kink merged with an even pair's by the
# search and at the polish's grade too, d = 4: a 2.2e-11 unit beside two pairs (|T^T x*| = 3.2e-13),
# a 1e-10 unit beside two, a 1e-9 unit beside one (|T^T x*| = 5.4e-11 against the polished
# gradients' errors 7.8e-11); the polished network kept (L = 2 of 3, 2 of 3, 1 of 2; 94, 104, 102
# queries), SILENTLY 2.8e-11, 1.5e-10, 1.9e-9 |x| off against its bound 2.3e-11, 3.7e-11, 6.6e-10:
# the wedge points x* + t (e_i +- n) saw a merged K only where |K_i| > |K^T n| (the 1e-9 unit's
# |T^T n| = 1.6e-9 against |T_i| <= 1.8e-10), and their tolerance, ~ t |J| on the far side, hid
# the rest; now the points step along the kink's hyperplane, 2^-4 n to either side, and contradict
# each polish: three further paths, then the search's network stands (bound 5.1e-9, 1.8e-8,
# 7.9e-8; 334, 371, 304 queries)
@example(seed=44135, d=4, m=2, log10_tiny=10.65656080012984)
@example(seed=433, d=4, m=2, log10_tiny=10.0)
@example(seed=1821, d=4, m=1, log10_tiny=9.0)
# (a survey of 300 random draws of TINY_ODD, numpy seed 2) a 1.2e-9 unit beside two even pairs,
# d = 4: the polish contradicted three times by the untilted wedge points, the search's network
# stood (L = 2 of 3, 314 queries), SILENTLY 4.6e-10 |x| above its bound 2.6e-9; the tilted points'
# further paths find another network whose bound holds it (L = 2, bound 1.1e-8, 843 queries)
@example(seed=34277, d=4, m=2, log10_tiny=8.921220368455796)
# (thorough, --hypothesis-seed 112713, after the float64 probes landed) d = 2: a path from x to 0
# (direction -x): the probes' angle of an interval ending at the origin divided by its norm 0, a
# ZeroDivisionError (untyped); such an interval lies on one ray, where f is linear: no probe
@example(seed=2, d=2, m=2, log10_tiny=8.0)
# (strict xfails before, OPEN_TINY_ODD, and a survey's find: FIXED_TINY_ODD_* below, with their story)
@example(seed=41186, d=4, m=2, log10_tiny=10.17754826165326)
@example(seed=15700, d=3, m=1, log10_tiny=10.982244965330892)
@example(seed=17106, d=3, m=2, log10_tiny=10.625)
@example(seed=58796, d=3, m=2, log10_tiny=11.0)
@example(seed=11975, d=3, m=2, log10_tiny=10.060783489072952)
def test_ffn_tiny_odd_unit(seed, d, m, log10_tiny):
    _ffn_tiny_odd_unit_property(seed, d, m, log10_tiny)


def test_ffn_polish_splits_a_kink_the_search_merged(monkeypatch):
    """The former OPEN_TINY_ODD case (seed 1244 above): the polish's confirmation of the merged
    kink fails and a tilted wedge point contradicts it: a further path splits the kink (one
    hyperplane more than the search's: the polish is kept), every query counted (with the
    untilted wedge points none did, and the bisection found the region between the two kinks).
    Without the wedge points and the bisection the search's merged network stands and the silent
    answer is back (the check can fail)."""
    from attnproof.theorems.transformer import ffn

    A, w, _ = _tiny_odd_ffn(1244, 3, 1, 8.0)
    oracle = ValueOracle(ReluFFN(A, w))
    rec = learn_ffn(oracle, rng=np.random.default_rng(1244))
    assert rec.queries == oracle.queries
    assert rec.L == 2 and rec.diagnostics["error_bound"] < rec.diagnostics["unpolished_bound"]
    _ffn_within_bound(rec, A, w, np.random.default_rng(1245))
    monkeypatch.setattr(ffn, "_wedge_contradiction", lambda *args: None)
    monkeypatch.setattr(ffn, "_between_contradiction", lambda *args: None)
    rec = learn_ffn(ValueOracle(ReluFFN(A, w)), rng=np.random.default_rng(1244))
    assert rec.L == 1
    with pytest.raises(AssertionError):
        _ffn_within_bound(rec, A, w, np.random.default_rng(1245))


def test_ffn_tilted_wedge_points_hold_a_merge_leaning_to_the_kink(monkeypatch):
    """The former OPEN_TINY_ODD case (seed 1821 above): a 1e-9 unit T whose normal leans to the
    even pair's n (``|T^T n|`` above every ``|T_i|``, i off n's largest coordinate: the former
    points ``x* + t (e_i +- n)`` put T's kink on one side for both signs) merged with the pair's
    kink below the polish's grade; the tilted wedge points contradict the polished kink, further
    paths follow and the network stands within its bound, every query counted.  Without the
    wedge points the polished network is kept and the silent answer is back (the check can
    fail; the thin wedge's pairs, whose pair at x* sees this merge too since helper thin24, are
    taken away with them)."""
    from attnproof.theorems.transformer import ffn

    A, w, _ = _tiny_odd_ffn(1821, 4, 1, 9.0)
    T, J = A[:, -1] * w[-1], 2 * A[:, 0] * w[0]
    n = J / np.abs(J).max()
    assert np.abs(np.delete(T, np.argmax(np.abs(J)))).max() < abs(T @ n)
    oracle = ValueOracle(ReluFFN(A, w))
    rec = learn_ffn(oracle, rng=np.random.default_rng(1821))
    assert rec.queries == oracle.queries and rec.diagnostics["paths"] > 1
    _ffn_within_bound(rec, A, w, np.random.default_rng(1822))
    monkeypatch.setattr(ffn, "_wedge_contradiction", lambda *args: None)
    monkeypatch.setattr(ffn, "_thin_wedge_contradiction", lambda *args: None)
    rec = learn_ffn(ValueOracle(ReluFFN(A, w)), rng=np.random.default_rng(1821))
    assert rec.diagnostics["error_bound"] < rec.diagnostics["unpolished_bound"]
    with pytest.raises(AssertionError):
        _ffn_within_bound(rec, A, w, np.random.default_rng(1822))


#: Fixed (strict xfails before, OPEN_TINY_ODD, and a survey's find; pinned as @examples above): a
#: tiny unit T's kink merged with an even pair's K below the polish's grade, its tilted wedge
#: points agreeing, the polished network kept (one path, L one short), SILENTLY above its bound.
#: Traced: T's hyperplane separates the two polished centres beside K's kink, so their jump is
#: K + T, and f_hat is off by |T^T x| where T's side differs from that kink's; the points that lay
#: there were off by 4-98 % of their tolerance (2.5e-12 of 6.6e-12 at seed 15700; 2.21e-11 of
#: 2.26e-11 at 41186), the rest outside it.  The bound's premise (every polished jump one kink's,
#: up to its gradients' errors) was checked at that tolerance and charged below it: the points
#: were held to the plane through f(x*) with x*'s offset (err_a + err_b) |x*|_1 on top, alone up
#: to twice a kink's charge d (err_a + err_b) / 2 per unit |x*|_inf.  Now the points are held to
#: their own piece's plane (no offset), and the bound adds, a kink, the largest tolerance /
#: |p|_inf of its points (what a merge below them may move f by, unseen), no query more:
#:
#: * (numpy seed 7) d = 4, two even pairs beside a 6.6e-11 unit (|T|_1 1.9e-10): L = 2 of 3, 151
#:   queries, f 8.6e-11 |x| off against the polished bound 7.1e-11; now a point shows the merge,
#:   three further paths, the search's network stands (bound 1.1e-8, 551 queries);
#: * (numpy seed 8) d = 3, one even pair beside a 1e-11 unit (|T|_1 5.4e-11): L = 1 of 2, 134
#:   queries; two of four points in the wedge, near T's hyperplane, off 2.5e-12 and 1.6e-12
#:   against 6.6e-12 and 6.9e-12; f 9.8e-12 |x| off against 9.7e-12; now the bound 1.3e-11;
#: * (thorough, --hypothesis-seed 5161127) d = 3, two even pairs beside a 2.4e-11 unit (|T|_1
#:   5.1e-11): L = 2 of 3, 137 queries, f 2.7e-11 |x| off against 2.1e-11; now shown, the
#:   search's network stands (bound 6.1e-9, 481 queries);
#: * (thorough, --hypothesis-seed 6021127; not silent before the tilt) d = 3, two even pairs beside a
#:   1e-11 unit (|T|_1 3.7e-11): L = 2 of 3, 144 queries; off 4.3e-13 and 3.1e-13 against 7.4e-12
#:   and 8.0e-12; f 1.9e-11 |x| off against 1.5e-11; now the bound 3.2e-11;
#: * (a survey of 2400 random draws of TINY_ODD, numpy seeds 1-8: SILENT 2, this and the second
#:   above) d = 3, two even pairs beside an 8.7e-11 unit (|T|_1 2.0e-10): L = 2 of 3, 140 queries,
#:   f 3.8e-11 |x| off against 3.1e-11; now shown, the search's network stands (bound 6.8e-9, 483
#:   queries).  The survey after: SILENT 0, refusals 10 -> 11, queries 1,387,704 -> 1,413,630.
FIXED_TINY_ODD_SHOWN = [
    (41186, 4, 2, 10.17754826165326), (17106, 3, 2, 10.625), (11975, 3, 2, 10.060783489072952),
]
FIXED_TINY_ODD_CHARGED = [(15700, 3, 1, 10.982244965330892), (58796, 3, 2, 11.0)]


@pytest.mark.parametrize("seed, d, m, log10_tiny", FIXED_TINY_ODD_SHOWN)
def test_ffn_wedge_points_held_to_their_piece_show_a_merge(monkeypatch, seed, d, m, log10_tiny):
    """Former OPEN_TINY_ODD cases and a survey's find (above): a wedge point held to its own
    piece's plane shows the merged kink, further paths follow and the network stands within its
    bound, every query counted.  Without the wedge points the polished network is kept and the
    silent answer is back (the check can fail; the thin wedge's pairs, whose pair at x* sees these
    merges too since helper thin24, are taken away with them)."""
    from attnproof.theorems.transformer import ffn

    A, w, _ = _tiny_odd_ffn(seed, d, m, log10_tiny)
    oracle = ValueOracle(ReluFFN(A, w))
    rec = learn_ffn(oracle, rng=np.random.default_rng(seed))
    assert rec.queries == oracle.queries and rec.diagnostics["paths"] > 1
    _ffn_within_bound(rec, A, w, np.random.default_rng(seed + 1))
    monkeypatch.setattr(ffn, "_wedge_contradiction", lambda *args: None)
    monkeypatch.setattr(ffn, "_thin_wedge_contradiction", lambda *args: None)
    rec = learn_ffn(ValueOracle(ReluFFN(A, w)), rng=np.random.default_rng(seed))
    assert rec.diagnostics["error_bound"] < rec.diagnostics["unpolished_bound"]
    with pytest.raises(AssertionError):
        _ffn_within_bound(rec, A, w, np.random.default_rng(seed + 1))


@pytest.mark.parametrize("seed, d, m, log10_tiny", FIXED_TINY_ODD_CHARGED)
def test_ffn_polish_charges_its_wedge_points_resolution(monkeypatch, seed, d, m, log10_tiny):
    """Former OPEN_TINY_ODD cases (above): the polished network kept (its bound below the
    search's) holds f within its bound, which charges what its wedge points cannot see.  Without
    that charge the same network, with the same queries, is SILENTLY above it (the check can
    fail).  The thin wedge's pairs are taken away throughout: since helper thin24 their pair at
    x* sees seed 15700's merge (every attempt abandoned so; the search's network, charged for the
    merge seen, stands within its bound 3.5e-9, 430 queries, where the polished one held 1.3e-11
    with 136: test_ffn_tiny_odd_unit's @example), and the charge is held to its own here."""
    from attnproof.theorems.transformer import ffn

    monkeypatch.setattr(ffn, "_thin_wedge_contradiction", lambda *args: None)
    A, w, _ = _tiny_odd_ffn(seed, d, m, log10_tiny)
    oracle = ValueOracle(ReluFFN(A, w))
    rec = learn_ffn(oracle, rng=np.random.default_rng(seed))
    assert rec.queries == oracle.queries
    assert rec.diagnostics["error_bound"] < rec.diagnostics["unpolished_bound"]
    _ffn_within_bound(rec, A, w, np.random.default_rng(seed + 1))
    wedge = ffn._wedge_contradiction
    monkeypatch.setattr(ffn, "_wedge_contradiction", lambda *args: wedge(*args[:5]))
    uncharged = learn_ffn(ValueOracle(ReluFFN(A, w)), rng=np.random.default_rng(seed))
    assert uncharged.queries == rec.queries and uncharged.L == rec.L
    assert uncharged.diagnostics["error_bound"] < rec.diagnostics["error_bound"]
    with pytest.raises(AssertionError):
        _ffn_within_bound(uncharged, A, w, np.random.default_rng(seed + 1))


def _ffn_tiny_odd_unit_property(seed: int, d: int, m: int, log10_tiny: float) -> None:
    A, w, _ = _tiny_odd_ffn(seed, d, m, log10_tiny)
    oracle = ValueOracle(ReluFFN(A, w))
    try:
        rec = learn_ffn(oracle, rng=np.random.default_rng(seed))
    except AttnproofError:
        return
    assert rec.queries == oracle.queries
    _ffn_within_bound(rec, A, w, np.random.default_rng(seed + 1))


@FEW
@given(**TINY_ODD)
@example(seed=2, d=4, m=1, log10_tiny=8.8955)  # cone route: sum |W_hat - W| 4.6e-9, bound 5.0e-11
@example(seed=2, d=2, m=2, log10_tiny=8.0)  # a path ending at 0 (ZeroDivisionError before, see above)
def test_transformer_tiny_odd_unit(seed, d, m, log10_tiny):
    A, w, W = _tiny_odd_ffn(seed, d, m, log10_tiny)
    oracle = ValueOracle(OneLayerTransformer(W, A, w))
    try:
        rec = learn_transformer(oracle, rng=np.random.default_rng(seed))
    except AttnproofError:
        return
    assert rec.queries == oracle.queries
    assert np.abs(rec.W - W).sum() <= rec.diagnostics["error_bound"] + 64 * EPS * d * d * np.abs(W).max()


@FEW
@given(st.integers(0, 2**16), st.integers(7, 10), st.floats(1e-2, 0.5))
@example(8, 8, 0.1)  # mp:8: one hyperplane of three found, the error above the bound
def test_ffn_low_mpmath_precision(seed, dps, tolerance):
    arith, g = MP(dps), np.random.default_rng(seed)
    A, w = g.standard_normal((2, 3)), g.standard_normal(3)
    oracle = ValueOracle(ReluFFN(A, w, arith))
    try:
        rec = learn_ffn(oracle, rng=np.random.default_rng(0), arith=arith, tolerance=tolerance)
    except AttnproofError:
        return
    assert rec.queries == oracle.queries
    _ffn_within_bound(rec, A, w, g, arith)


@FEW
@given(st.integers(0, 2**16), st.integers(2, 3), st.floats(1.05, 3.0), st.sampled_from([1e-2, 1e-3]))
@example(0, 2, 1.5, 1e-3)  # ||W_hat - W*||_F 0.85 against a bound of 8.4e-7, guarantee_met
def test_membership_norm_violating_target(seed, d, excess, eps_W):
    """||W*||_F = excess * W_bound: the answers contradict the assumption; the learner must say
    so (a typed error or guarantee_met False), never claim its bound."""
    g = np.random.default_rng(seed)
    W_bound = 2.0
    W = g.standard_normal((d, d))
    W *= excess * W_bound / np.linalg.norm(W)
    v = g.choice([-1.0, 1.0], size=d) * (1 + 0.2 * g.uniform(-1, 1, size=d))
    v /= np.linalg.norm(v)
    mu = 0.5 * float(np.abs(v).min())
    oracle = MembershipOracle(Attention(W, v))
    try:
        rec = learn_membership(oracle, W_bound=W_bound, mu=mu, eps_W=eps_W)
    except AttnproofError:
        return
    assert rec.queries == oracle.queries
    if rec.diagnostics["guarantee_met"]:
        assert np.linalg.norm(rec.W - W) <= rec.diagnostics["error_bound"]


@FEW
@given(st.integers(0, 2**16), st.sampled_from([(2, 2), (2, 3), (3, 2)]), st.integers(1, 2))
@example(2, (2, 3), 1)  # err_W 2.4, bound given the blocks 5.4e-13: check_residual 1.7 ignored
def test_multihead_sbd_few_hessians(seed, shape, hessians):
    H, dh = shape
    g = np.random.default_rng(seed)
    bases = cayley_bases([dh] * H, g.standard_normal((H * dh, H * dh)), FLOAT64)
    heads = [
        (E @ (g.standard_normal((dh, dh)) / math.sqrt(dh)) @ E.T, E @ g.standard_normal(dh)) for E in bases
    ]
    oracle = ValueOracle(MultiHeadAttention(heads))
    try:
        rec = learn_multihead_sbd(oracle, hessians=hessians, rng=np.random.default_rng(seed))
    except AttnproofError:
        return
    assert rec.queries == oracle.queries
    # the bound carries the blocks' rotation (the C.1 identities); the checks refuse wrong blocks
    assert score_heads(rec, heads, FLOAT64)["err_W"] <= rec.diagnostics["error_bound"]
