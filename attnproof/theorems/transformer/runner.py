"""Sec. 4.1 on the bench: random one-layer Transformers and bias-free FFNs, recovered and scored.

The room's registration with the engine (:mod:`attnproof.room`): the ``transformer`` and ``ffn``
learners' options and runners (:func:`run_transformer`, :func:`run_ffn`) and their random
target (:func:`transformer_target`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...arith import Arith, parse
from ...errors import AttnproofError, InvalidInputError
from ...models import ANSWERS, NAIVE, OneLayerTransformer, ReluFFN
from ...oracles import FFN_PUSHES, FFNNoiseAdversary, TransformerNoiseAdversary, ValueOracle
from ...recovery import Recovery, score
from ...room import Options, Workload, default_of, option, part, runner
from . import UNITS_QUERIES, learn_transformer
from ._path_search import answer_noise
from .ffn import learn_ffn

#: The routes a run may ask for (``auto``: VQ~ when A w_o != 0, else the cone).
ROUTES = ("auto", "antisymmetric", "cone")


@dataclass(frozen=True)
class WidthOptions(Options):
    """The hidden width shared by the ``ffn`` and ``transformer`` learners' options."""

    m: int | None = option(None, low=1, help="hidden units (default 2d)")


@dataclass(frozen=True)
class FFNOptions(WidthOptions):
    """Options of the ``ffn`` learner on the bench (A_FFN of Sec. 4.1)."""

    answers: str = option(
        default_of(ReluFFN, "answers"), choices=tuple(ANSWERS),
        help="how the oracle evaluates and rounds its answers: in float64 in any order (naive), or in "
        "extended precision rounded once (faithful: declared, so the bound is ~100x tighter)",
    )


@dataclass(frozen=True)
class TransformerOptions(WidthOptions):
    """Options of the ``transformer`` learner on the bench (Sec. 4.1)."""

    route: str = option(default_of(learn_transformer, "route"), choices=ROUTES,
                        help="how W is learned: VQ~ (antisymmetric), the cone, or auto (VQ~ when A w_o != 0)")
    probes: str = option(default_of(learn_transformer, "probes"), choices=("gaussian", "basis"),
                         help="Thm 4.1's probes on the antisymmetric route")
    even: bool = option(False, help="an even FFN (A = [B, -B], w_o = [a, a]: u = 0, the cone route)")


def transformer_target(
    d: int, m: int, rng: np.random.Generator, even: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A one-layer Transformer (Sec. 4.1): W ~ N(0, 1/d), A ~ N(0, 1), w_o ~ N(0, 1).

    ``even=True`` pairs every unit with its mirror (A = [B, -B], w_o = [a, a]): an even FFN,
    u = A w_o = 0, so VQ~ == 0 and only the cone route can see W.
    """
    W = rng.standard_normal((d, d)) / np.sqrt(d)
    if even:
        B, a = rng.standard_normal((d, m // 2)), rng.standard_normal(m // 2)
        return W, np.concatenate([B, -B], axis=1), np.concatenate([a, a])
    return W, rng.standard_normal((d, m)), rng.standard_normal(m)


def designed_queries(ledger: dict[str, int], d: int) -> int:
    """The queries :func:`learn_ffn` plans beyond Q_FFN = (L + 1)(d + 1) + 3L + 4 (its
    ``diagnostics["ledger"]``): the check points after each reconstruction, two points on each
    recovered hyperplane off the path, the polish's d + 1 a re-measured region, its three a
    confirmed kink (``confirmed``: queries), its d a re-measured end piece (``remeasured``:
    pieces), and in sympy and float64 the probes of every interval before it is dropped as
    kink-free (``wedges``).  What the counted extras hold beyond these are re-asks."""
    return (ledger["checks"] + ledger["planes"] + (d + 1) * ledger["polished"] + ledger["confirmed"]
            + d * ledger["remeasured"] + ledger["wedges"])


@runner("ffn", FFNOptions)
def run_ffn(
    d: int, m: int | None = FFNOptions.m, arith: Arith | str = "float64", seed: int = 0,
    answers: str = FFNOptions.answers,
) -> dict[str, Any]:
    """Learn a random bias-free ReLU FFN ``x -> w_o^T ReLU(A^T x)`` (A_FFN of Sec. 4.1) from
    one-token value queries; score it by the functional error on random points (the parameters
    are identifiable only up to the symmetries of the canonical form).  ``m`` defaults to 2d;
    ``answers`` is the model's evaluation (:class:`~attnproof.models.Rounding`), which the
    oracle declares and the learner's bound reads.

    ``err_W`` is ``max |f_hat(x) - f(x)| / |x|_inf`` over 256 Gaussian points (what
    ``error_bound`` bounds), ``rel_err_W`` the same divided by ``max |f(x)| / |x|_inf`` there
    (the function's own size), and ``bits = -log2 rel_err_W``."""
    arith = parse(arith)
    m = 2 * d if m is None else m
    rng = np.random.default_rng(seed)
    _, A, w_o = transformer_target(d, m, rng)
    model = ReluFFN(A, w_o, arith, answers=answers)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    rec = learn_ffn(oracle, rng=rng, arith=arith)
    seconds = time.perf_counter() - t0
    X = rng.standard_normal((256, d))
    with arith.context():
        truth, got = model(arith.asarray(X)[:, None, :]), rec(arith.asarray(X))
        err = max(float(abs(a - b)) / float(np.abs(x).max()) for a, b, x in zip(got, truth, X))
        size = max(float(abs(a)) / float(np.abs(x).max()) for a, x in zip(truth, X))
    rel = err / size if size else err
    bound = rec.diagnostics.get("error_bound")
    return {
        "d": d, "m": m, "learner": "ffn", "arith": arith.name, "seed": seed, "answers": answers, "L": rec.L,
        "queries": rec.queries, "queries_formula": rec.diagnostics["queries_formula"],
        "reasked_queries": rec.diagnostics["reasked_queries"],
        "designed_queries": designed_queries(rec.diagnostics["ledger"], d),
        "err_W": err, "rel_err_W": rel, "err_v": 0.0, "bits": -math.log2(rel) if rel else None,
        "exact": err == 0,
        "error_bound": bound, "within_bound": None if bound is None else err <= bound,
        "seconds": seconds, "oracle_seconds": oracle.seconds, "learner_seconds": seconds - oracle.seconds,
        "diagnostics": rec.diagnostics,
    }


@runner("transformer", TransformerOptions)
def run_transformer(
    d: int,
    m: int | None = TransformerOptions.m,
    arith: Arith | str = "float64",
    seed: int = 0,
    route: str = TransformerOptions.route,
    probes: str = TransformerOptions.probes,
    even: bool = TransformerOptions.even,
) -> dict[str, Any]:
    """Recover a random one-layer Transformer (Sec. 4.1) through a counting oracle, and score it.

    Options (:class:`TransformerOptions`): ``m`` hidden units (default 2d), ``even`` (an even
    FFN, cone route), ``route``, ``probes`` (see
    :func:`~attnproof.theorems.transformer.learn_transformer`).

    Returns
    -------
    dict
        ``d, m, learner, arith, seed, route, L, queries, queries_formula`` (its value),
        ``query_formula`` (the formula), ``ffn_queries``, ``attention_queries``, ``err_W,
        rel_err_W, bits, exact`` (of W), ``ffn_err`` (max |f_hat(x) - f(x)| / |x|_inf over 256
        random and 8 d points on the hyperplanes), ``error_bound`` (of W), ``within_bound``,
        ``error_bound_ffn``, ``restarts``, ``seconds, oracle_seconds, diagnostics``.
    """

    arith = parse(arith)
    m = 2 * d if m is None else m
    rng = np.random.default_rng(seed)
    W, A, w_o = transformer_target(d, m, rng, even=even)
    model = OneLayerTransformer(W, A, w_o, arith)
    oracle = ValueOracle(model)
    t0 = time.perf_counter()
    rec = learn_transformer(oracle, rng=rng, arith=arith, route=route, probes=probes)
    seconds = time.perf_counter() - t0
    X = rng.standard_normal((256, d))
    for w in A.T[:8]:
        P = rng.standard_normal((d, d))
        X = np.concatenate([X, P - np.outer(P @ w, w) / (w @ w)])
    with arith.context():
        truth = ReluFFN(A, w_o, arith)(arith.asarray(X)[:, None, :])
        got = rec.ffn(arith.asarray(X))
        ffn_err = max(float(abs(a - b)) / float(np.abs(x).max()) for a, b, x in zip(got, truth, X))
    as_recovery = Recovery(W=rec.W, v=np.zeros(d), queries=rec.queries, arith=rec.arith)
    s = score(as_recovery, model.W, np.zeros(d), arith)
    route = rec.diagnostics["route"]
    bound = rec.diagnostics.get("error_bound")
    return {
        "d": d, "m": m, "learner": "transformer", "arith": arith.name, "seed": seed, "route": route,
        "L": rec.ffn.L, "queries": rec.queries, "queries_formula": rec.diagnostics["queries_formula"],
        "reasked_queries": rec.diagnostics["reasked_queries"],
        "designed_queries": designed_queries(rec.ffn.diagnostics["ledger"], d),
        "query_formula": "(L+1)(d+1) + 3L + 4 + " + ("2(d + d^2)" if route == "antisymmetric" else "d + d^2")
        + f" + {UNITS_QUERIES}",
        "ffn_queries": rec.diagnostics["ffn_queries"],
        "attention_queries": rec.diagnostics["attention_queries"],
        "err_W": s.err_W, "rel_err_W": s.rel_err_W, "bits": s.bits, "exact": s.bits is None,
        "ffn_err": ffn_err,
        "error_bound": bound, "within_bound": None if bound is None else s.err_W <= bound,
        "error_bound_ffn": rec.ffn.diagnostics.get("error_bound"),
        "restarts": len(rec.ffn.diagnostics["restarts"]),
        "seconds": seconds, "oracle_seconds": oracle.seconds, "learner_seconds": seconds - oracle.seconds,
        "diagnostics": rec.diagnostics,
    }


__all__ = [
    "WidthOptions", "FFNOptions", "TransformerOptions", "ROUTES", "transformer_target", "run_ffn",
    "run_transformer",
]


# --- the room's share of the engine's sweeps that span rooms (attnproof.room.part) ------------

part("bounds", "small", 4, Workload("ffn", 8, "float64", {"m": 8}, (0, 1)))
part("bounds", "small", 4.25, Workload("ffn", 8, "float64", {"m": 8, "answers": "faithful"}, (0, 1)))
part("bounds", "small", 5, Workload("transformer", 4, "float64", {"m": 6}, (0,)))
for _i, (_d, _m) in enumerate((d, m) for d in (4, 8, 16) for m in (4, 8, 16)):  # the FFN at d, m <= 16
    part("bounds", "full", 2 + _i, Workload("ffn", _d, "float64", {"m": _m}, (0, 1)))
    part("bounds", "full", 2.5 + _i,
         Workload("ffn", _d, "float64", {"m": _m, "answers": "faithful"}, (0, 1)))
del _i, _d, _m
part("bounds", "note", 2, "the FFN on d, m <= 16")


def ffn_versus_adversary(
    d: int, arith: str | Arith, seed: int, m: int | None = FFNOptions.m, answers: str = FFNOptions.answers,
) -> dict[str, Any]:
    """A naive ``ffn`` workload's target (:func:`run_ffn`'s at this seed) learned against
    :class:`~attnproof.oracles.FFNNoiseAdversary` with each push of
    :data:`~attnproof.oracles.FFN_PUSHES` (answers off by ``1 - 2^-6`` of the noise the learner's
    naive model declares, :func:`._path_search.answer_noise`), scored as :func:`run_ffn` scores
    (``err_W`` = max ``|f_hat(x) - f(x)| / |x|_inf`` over 256 Gaussian points): the row of the
    push closest to its bound (largest error / bound), with ``adversary`` and ``pushes`` (each
    push's bound / error, or its refusal).

    Raises
    ------
    InvalidInputError
        For a faithful workload (the adversary realizes the naive model only), or a non-float64 one.
    AttnproofError
        The last refusal, when the learner refused under every push.
    """
    arith = parse(arith)
    if answers != "naive" or arith.family not in FFNNoiseAdversary.arithmetics:
        raise InvalidInputError("the FFN's adversary realizes the naive float64 model; "
                                f"got answers={answers!r}, arith={arith.name}")
    m = 2 * d if m is None else m
    noise = answer_noise(arith, NAIVE)

    def against(push: str) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        _, A, w_o = transformer_target(d, m, rng)
        model = ReluFFN(A, w_o, arith)
        oracle = FFNNoiseAdversary(model, noise=noise, push=push, seed=seed)
        t0 = time.perf_counter()
        rec = learn_ffn(oracle, rng=rng, arith=arith)
        seconds = time.perf_counter() - t0
        X = rng.standard_normal((256, d))
        err = float(np.max(np.abs(rec(X) - model(X[:, None, :])) / np.abs(X).max(axis=1)))
        size = float(np.max(np.abs(model(X[:, None, :])) / np.abs(X).max(axis=1)))
        bound = rec.diagnostics["error_bound"]
        return {"err_W": err, "rel_err_W": err / size if size else err, "error_bound": bound,
                "within_bound": err <= bound, "seconds": seconds, "adversary": f"FFNNoiseAdversary {push}"}

    return _closest_push(against)


def _closest_push(against: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """The row ``against(push)`` closest to its bound (largest error / bound) over the pushes of
    :data:`~attnproof.oracles.FFN_PUSHES`, with ``pushes``: each push's bound / error (None at
    error 0), or ``refused: <typed error>`` where the learner refused under it (safe there).

    Raises
    ------
    AttnproofError
        The last refusal, when the learner refused under every push.
    """
    rows, pushes, refusal = [], {}, None
    for push in FFN_PUSHES:
        try:
            row = against(push)
        except AttnproofError as exc:  # a refusal under one push: the learner is safe there
            pushes[push], refusal = f"refused: {type(exc).__name__}", exc
            continue
        pushes[push] = row["error_bound"] / row["err_W"] if row["err_W"] else None
        rows.append(row)
    if not rows:
        raise refusal
    worst = max(rows, key=lambda r: r["err_W"] / r["error_bound"])
    return {**worst, "pushes": pushes}


def transformer_versus_adversary(
    d: int, arith: str | Arith, seed: int, m: int | None = TransformerOptions.m,
    route: str = TransformerOptions.route, probes: str = TransformerOptions.probes,
    even: bool = TransformerOptions.even,
) -> dict[str, Any]:
    """A ``transformer`` workload's target (:func:`run_transformer`'s at this seed) learned against
    :class:`~attnproof.oracles.TransformerNoiseAdversary` with each push of
    :data:`~attnproof.oracles.FFN_PUSHES` for its one-token answers (the FFN phase's naive
    declaration, as :func:`ffn_versus_adversary`) and every longer answer off by ``1 - 2^-6`` of
    the ``nu |z|_inf`` the attention phase declares, scored as :func:`run_transformer` scores W:
    the row of the push closest to its bound, with ``adversary`` and ``pushes`` (each push's
    bound / error, or its refusal).

    Raises
    ------
    InvalidInputError
        For a non-float64 workload (the adversary realizes the naive float64 model only).
    AttnproofError
        The last refusal, when the learner refused under every push.
    """
    arith = parse(arith)
    if arith.family not in TransformerNoiseAdversary.arithmetics:
        raise InvalidInputError(
            f"the Transformer's adversary realizes the naive float64 model; got {arith.name}")
    m = 2 * d if m is None else m
    noise = answer_noise(arith, NAIVE)

    def against(push: str) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        W, A, w_o = transformer_target(d, m, rng, even=even)
        model = OneLayerTransformer(W, A, w_o, arith)
        oracle = TransformerNoiseAdversary(model, noise=noise, push=push, seed=seed)
        t0 = time.perf_counter()
        rec = learn_transformer(oracle, rng=rng, arith=arith, route=route, probes=probes)
        seconds = time.perf_counter() - t0
        s = score(Recovery(W=rec.W, v=np.zeros(d), queries=rec.queries, arith=rec.arith), model.W,
                  np.zeros(d), arith)
        bound = rec.diagnostics["error_bound"]
        return {"err_W": s.err_W, "rel_err_W": s.rel_err_W, "error_bound": bound,
                "within_bound": s.err_W <= bound, "seconds": seconds,
                "adversary": f"TransformerNoiseAdversary {push}"}

    return _closest_push(against)


@part("bounds", "adversary", 2)
def _ffn_adversary(learner: str, options: dict[str, Any]) -> Any:
    """``bench bounds``'s adversary of a naive ``ffn`` workload (:func:`ffn_versus_adversary`) or
    of a ``transformer`` one (:func:`transformer_versus_adversary`: its oracle declares the naive
    model); None for any other."""
    naive = options.get("answers", FFNOptions.answers) == "naive"
    if learner == "transformer":
        return transformer_versus_adversary
    return ffn_versus_adversary if learner == "ffn" and naive else None
# the row keys the engine's line for a result row shows (part ("rows", "shown"), by a global order)
for _order, _key in ((1, "m"), (2, "L"), (4, "route"), (9, "probes")):
    part("rows", "shown", _order, _key)
part("rows", "error", 0, "ffn_err")
