"""The bench engine: runs of the learners, jobs, Dask, results files and tables (CLI and book).

A room registers its learners' runners and options (:mod:`attnproof.room`); :func:`run` is the
entry point the CLI uses for any registered learner (:data:`attnproof.verify.registry.LEARNERS`, the one
table of names, arithmetics and query counts), :func:`execute` runs independent jobs in this
process or on Dask.  Every result is a dict with the shared keys of
:func:`attnproof.room.result_row`.  A room's bench helpers (its targets, runners, sweeps) are
found here too by name (``from attnproof.bench import run_exact``), read from the rooms.
``bench bounds`` (:func:`bounds_jobs`, :func:`bounds_table`) reports each learner's rigorous bound
over its true error, and for a workload whose bound rests on the naive rounding model (a worst
case per answer the real oracle never nears) also over its error against that model's adversary
(:func:`adversary_point`): whether the bound is tight for the model it declares.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from . import room, theorems  # noqa: F401  -- importing the rooms fills room's registrations
from .arith import Arith, parse
from .errors import AttnproofError, InvalidInputError
from .measure import Session
from .oracles import ValueOracle
from .verify.registry import LEARNERS
from .room import Job, bits_of, job_key, ratio_or_none, result_row


def markdown_table(
    rows: list[dict[str, Any]], columns: dict[str, str] | list[str], fmt: dict[str, str] | None = None
) -> str:
    """A Markdown table of ``rows`` (the book shows tables this way, not as printed text).

    ``columns`` maps a row key to its header (a list: the keys are the headers); ``fmt`` maps a
    key to a format string (default: floats with 2 significant digits); a missing value (None,
    NaN) is "–" whatever its format.  A ``|`` in a header or a cell is escaped, so it cannot
    split the row.
    """
    columns = columns if isinstance(columns, dict) else {c: c for c in columns}
    fmt = fmt or {}

    def escape(text: str) -> str:
        return text.replace("|", "\\|")

    def cell(key: str, x: Any) -> str:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "–"
        if key in fmt:
            return escape(fmt[key].format(x))
        return escape(f"{x:.2g}" if isinstance(x, float) else str(x))

    lines = ["| " + " | ".join(escape(h) for h in columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(k, r.get(k)) for k in columns) + " |" for r in rows]
    return "\n".join(lines)


def options_of(learner: str) -> set[str]:
    """The options :func:`run` accepts for ``learner`` (beyond d, arith and seed)."""
    return set(room.RUNNERS[learner].options.names())


def run(
    learner: str, d: int, arith: str | Arith = "float64", seed: int = 0, **options: Any
) -> dict[str, Any]:
    """Run the registered learner ``learner`` on a random target of width d (its room's runner).

    Raises
    ------
    InvalidInputError
        For an unknown learner, an option it does not take or a bad value of one (the room's
        options class validates them, and what depends on d), or an arithmetic it does not run in.
    """
    if learner not in LEARNERS or learner not in room.RUNNERS:
        raise InvalidInputError(f"unknown learner {learner!r}: use one of {sorted(LEARNERS)}")
    unknown = set(options) - options_of(learner)
    if unknown:
        raise InvalidInputError(
            f"the {learner} learner takes no option {sorted(unknown)}; "
            f"it takes {sorted(options_of(learner))}"
        )
    spec = room.RUNNERS[learner]
    opts = spec.options.of(learner, options)
    opts.check(d)
    arith = parse(arith)
    if arith.family not in LEARNERS[learner].arithmetics:
        raise InvalidInputError(
            f"the {learner} learner runs in {', '.join(LEARNERS[learner].arithmetics)}, not {arith.name}"
        )
    return spec(d, arith, seed, opts)


def __getattr__(name: str) -> Any:
    """A room's bench helper by name, for its chapter and tests (``from attnproof.bench import
    run_exact``): the public names of every room's ``runner`` module, looked up when asked (no
    room is named here; the engine itself reads only :mod:`attnproof.room`'s registrations)."""
    for module in _room_runners():
        if name in getattr(module, "__all__", ()):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _room_runners() -> list[Any]:
    """The rooms' ``runner`` modules (registered on import of :mod:`attnproof.theorems`)."""
    return [m for n, m in sorted(sys.modules.items())
            if n.startswith("attnproof.theorems.") and n.endswith(".runner")]


# --- independent jobs: in process or on Dask, streamed as they finish, resumable -------------


def jsonable(obj: Any) -> Any:
    """A JSON-ready copy: non-finite floats become null, numpy values and arrays plain Python,
    mpmath and sympy numbers floats (their exact values are in the Python API), and any other
    object its repr."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)) or obj is None or isinstance(obj, str):
        return bool(obj) if isinstance(obj, np.bool_) else obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    try:
        value = float(obj)
    except (TypeError, ValueError):
        return repr(obj)
    return value if math.isfinite(value) else None


def read_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """The finished rows of a JSON-lines results file (see :func:`execute`), by resume key.

    A missing file has none; a line cut short by an interrupted run is skipped (its job runs
    again).

    Raises
    ------
    InvalidInputError
        When ``path`` exists but cannot be read.
    """
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InvalidInputError(f"cannot read the results file {str(path)!r}: {exc.strerror}") from None
    done = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and "key" in entry and "result" in entry:
            done[entry["key"]] = entry["result"]
    return done


def _results_writer(path: str | Path | None, stack: ExitStack) -> Callable[[str, dict[str, Any]], None]:
    """A function appending ``{"key", "result"}`` lines to ``path`` (flushed each time), or a no-op."""
    if path is None:
        return lambda key, row: None
    try:
        file = stack.enter_context(open(path, "a+"))
    except OSError as exc:
        raise InvalidInputError(f"cannot write the results file {str(path)!r}: {exc.strerror}") from None
    if file.tell():  # end a line an interrupted run left unfinished
        file.seek(file.tell() - 1)
        if file.read(1) != "\n":
            file.write("\n")

    def write(key: str, row: dict[str, Any]) -> None:
        file.write(json.dumps({"key": key, "result": jsonable(row)}) + "\n")
        file.flush()

    return write


def _call(fn: Callable[..., dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, Any]:
    return fn(**kwargs)


def _completed(
    jobs: list[Job], workers: int | None, scheduler: str | None, stack: ExitStack,
    on_queries: Callable[[int], None] | None,
) -> Iterator[tuple[Job, dict[str, Any]]]:
    """(job, row) as each job finishes: in this process, in order (neither ``workers`` nor
    ``scheduler``; ``on_queries`` hears of every session's asks), or on Dask:
    a local cluster of ``workers`` single-threaded processes, or the existing scheduler at
    ``scheduler``."""
    if not jobs:
        return
    if workers is None and scheduler is None:
        for job in jobs:
            if on_queries is None:
                row = job.fn(**job.kwargs)
            else:
                with Session.observe(on_queries):
                    row = job.fn(**job.kwargs)
            yield job, row
        return
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InvalidInputError("Dask is not installed: pip install 'attnproof[scale]'") from None
    if scheduler is None:
        cluster = stack.enter_context(LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
            silence_logs=logging.ERROR,
        ))
        client = stack.enter_context(Client(cluster))
    else:
        try:
            client = stack.enter_context(Client(scheduler, timeout="20s"))
        except (OSError, ValueError, TypeError) as exc:
            raise InvalidInputError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None
    futures = {client.submit(_call, job.fn, job.kwargs, pure=False): job for job in jobs}
    for future in as_completed(futures):
        yield futures[future], future.result()


def execute(
    jobs: list[Job],
    workers: int | None = None,
    scheduler: str | None = None,
    out: str | Path | None = None,
    on_queries: Callable[[int], None] | None = None,
) -> Iterator[tuple[Job, dict[str, Any], bool]]:
    """Run independent jobs, yielding ``(job, row, resumed)`` as each one finishes.

    Jobs run in this process, one after the other, unless ``workers`` (a local Dask cluster of
    that many processes) or ``scheduler`` (the address of a running Dask scheduler, whose
    workers must have attnproof installed) is given; Dask runs them in any order, and each
    row is what the sequential run returns (the jobs draw their targets from their own seeds).
    With ``out``, each finished row is appended to that JSON-lines file as it arrives, under
    its job's :attr:`~attnproof.room.Job.resume_key` (derived from the job's inputs), and jobs
    already in it are not run again: they are yielded first, with ``resumed=True``, as read
    back from the file (JSON values: floats, lists, null for non-finite numbers).
    ``on_queries`` is called with the queries of each of a learner's asks while the jobs run in
    this process (:meth:`attnproof.measure.Session.observe`): a progress bar can count queries
    live, not only when a job ends.

    Raises
    ------
    InvalidInputError
        When ``out`` cannot be read or written, Dask is missing, or the scheduler is unreachable.
    """
    done = read_results(out) if out is not None else {}
    for job in jobs:
        if job.resume_key in done:
            yield job, done[job.resume_key], True
    with ExitStack() as stack:
        write = _results_writer(out, stack)
        todo = [j for j in jobs if j.resume_key not in done]
        for job, row in _completed(todo, workers, scheduler, stack, on_queries):
            write(job.resume_key, row)
            yield job, row, False


# --- the performance targets: queries / floor, learner / oracle time, bits, tightness -------
#
# ``bench perf`` spans several rooms' learners: the engine owns
# the sweep (its scales, its grid, its summary) and each room registers its share of a part
# (:class:`attnproof.room.Part`): a learner of the query-count sweep (``("perf", "floor")``, a
# :class:`~attnproof.room.FloorTarget`), a timing run (``("perf", "time")``, a
# :class:`~attnproof.room.TimingRun`) or jobs of its own (``("perf", "share")``, a
# :class:`~attnproof.room.PerfShare`: real heads).

#: Target norms ||W*||_F of the query-count sweep.
PERF_SCALES = tuple(10.0**e for e in range(-3, 4))

#: The sizes of :func:`perf_jobs` and the grid of its query-count sweep at each: ``sweep`` (d, r),
#: every :class:`~attnproof.room.FloorTarget` at width d (rank r for a learner that takes one)
#: over :data:`PERF_SCALES`; each room's :class:`~attnproof.room.TimingRun` and
#: :class:`~attnproof.room.PerfShare` size the rest; ``duration`` says how long it runs.  ``full``
#: is issue 13's (about 5 min on 2 cores).
PERF_SIZES: dict[str, dict[str, Any]] = {
    "small": {"sweep": (16, 2), "duration": "seconds"},
    "medium": {"sweep": (32, 4), "duration": "about a minute"},
    "full": {"sweep": (64, 4), "duration": "minutes"},
}

#: issue 13's targets
PERF_TARGETS = {"queries_over_floor": 1.01, "learner_over_oracle": 0.25, "bits": 45.0, "tightness": 10.0}


#: ``bench perf``'s targets in words (``--help``); the rooms' shares add theirs
PERF_WORDS = "the performance targets: queries / floor over scales, learner time / oracle time, bits of W, " \
    "error estimate / true error"


def perf_help() -> str:
    """``bench perf``'s help line: :data:`PERF_WORDS` and each :class:`~attnproof.room.PerfShare`'s words."""
    return ", ".join([PERF_WORDS, *(share.words for share in room.parts("perf", "share"))])


def perf_sizes_help() -> str:
    """``--size`` of ``bench perf`` in words: each of :data:`PERF_SIZES` with its duration, the
    largest also with the rooms' shares at it (each timing run's ``d = .. r = ..``, then the
    words of part ``("perf", "note")``: ``fn(size) -> str | None``)."""
    *rest, last = PERF_SIZES
    timed = [t.sizes[last] for t in room.parts("perf", "time") if last in t.sizes]
    shares = [f"d = {s['d']}" + (f" r = {s['rank']}" if "rank" in s else "") for s in timed]
    shares += [w for note in room.parts("perf", "note") if (w := note(last))]
    words = [f"{n} ({PERF_SIZES[n]['duration']})" for n in rest]
    return ", ".join(words) + f" or {last} ({', '.join(shares)}; {PERF_SIZES[last]['duration']})"


def _floor_target(learner: str) -> room.FloorTarget:
    """The :class:`~attnproof.room.FloorTarget` a room registered for ``learner``."""
    for target in room.parts("perf", "floor"):
        if target.learner == learner:
            return target
    known = [t.learner for t in room.parts("perf", "floor")]
    raise InvalidInputError(f"no learner {learner!r} in the query-count sweep: use one of {known}")


def perf_point(
    learner: str, d: int, rank: int, scale: float, bias: bool, probes: str = "gaussian", seed: int = 0
) -> dict[str, Any]:
    """Queries against the floor for a target of norm ``scale`` (float64).

    ``learner``: a learner of the query-count sweep (its room's
    :class:`~attnproof.room.FloorTarget` draws the target, of rank ``rank`` when the learner
    takes one, probed by ``probes`` when it offers a choice), its target scaled to
    ||W*||_F = ``scale``; with ``bias`` the target has a score bias c ~ N(0, I) and an output
    offset beta ~ N(0, 1).  Keys of :func:`result_row`, plus ``part`` ("floor"), ``scale, bias,
    rank, floor_queries`` (the learner's count at the target's rank), ``queries_over_floor``,
    ``error_estimate`` (the learner's a-posteriori estimate, when it reports one) and
    ``estimate_over_error``, ``bound_over_error``, and ``outcome``: ``recovered``, or
    ``refused: <typed error>`` when the learner refuses the target (then only the keys above
    that need no recovery, ``queries`` counting what it spent).

    Raises
    ------
    InvalidInputError
        For a learner no room put in the sweep.
    """
    target = _floor_target(learner)
    rng = np.random.default_rng(seed)
    model, learn, shown = target.draw(d, rank, scale, bias, probes, rng)
    oracle = ValueOracle(model)
    floor = LEARNERS[learner].count(d=d, r=rank, rank=rank, bias=bias)
    where = {"part": "floor", "scale": scale, "bias": bias, **shown}
    t0 = time.perf_counter()
    try:
        rec = learn(oracle)
    except AttnproofError as exc:  # a refusal is an outcome of the sweep, not a crash of the bench
        return {"learner": learner, "d": d, "seed": seed, **where,
                "outcome": f"refused: {type(exc).__name__}", "queries": oracle.queries,
                "floor_queries": floor, "queries_over_floor": None,
                "within_bound": None, "seconds": time.perf_counter() - t0, "oracle_seconds": oracle.seconds}
    seconds = time.perf_counter() - t0
    row = result_row(learner, d, seed, rec, oracle, seconds, model.W, model.v, outcome="recovered", **where)
    estimate = rec.diagnostics.get("error_estimate")
    row.update(
        floor_queries=floor, queries_over_floor=rec.queries / floor, error_estimate=estimate,
        estimate_over_error=ratio_or_none(estimate, row["err_W"]),
        bound_over_error=ratio_or_none(rec.error_bound, row["err_W"]),
    )
    return row


def _tagged(part: str, fn: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """``fn(**kwargs)`` with ``part`` added (which of :func:`perf_summary`'s ratios it feeds)."""
    return {"part": part, **fn(**kwargs)}


def perf_jobs(size: str = "small", seed: int = 0) -> list[Job]:
    """The jobs behind :func:`perf_summary` at one of :data:`PERF_SIZES`, assembled from the
    rooms' parts: the query-count sweep (:func:`perf_point` for each registered
    :class:`~attnproof.room.FloorTarget` and its probe families, with and without biases, over
    :data:`PERF_SCALES`), each registered timing run (part "time"), and the jobs of each
    :class:`~attnproof.room.PerfShare` (part "share"; its rows' ``part`` is its name)."""
    if size not in PERF_SIZES:
        raise InvalidInputError(f"unknown size {size!r}: use one of {sorted(PERF_SIZES)}")
    d, r = PERF_SIZES[size]["sweep"]
    jobs = []
    for target in room.parts("perf", "floor"):
        for probes in target.probes:
            for bias in (False, True):
                for scale in PERF_SCALES:
                    params = {"learner": target.learner, "d": d, "rank": r, "scale": scale, "bias": bias,
                              "probes": probes, "seed": seed}
                    count = LEARNERS[target.learner].count(d=d, r=r, rank=r, bias=bias)
                    jobs.append(Job(job_key("perf-floor", **params), perf_point, params, count))
    for timing in room.parts("perf", "time"):
        params = {"learner": timing.learner, **timing.sizes[size], "arith": "float64", "seed": seed}
        rank = params.get("rank")
        count = LEARNERS[timing.learner].count(d=params["d"], r=rank, rank=rank)
        tagged = {"part": "time", "fn": run, **params}
        jobs.append(Job(job_key("perf-time", **params), _tagged, tagged, count))
    for share in room.parts("perf", "share"):
        for job in share.jobs(size, seed):
            tagged = {"part": share.name, "fn": job.fn, **job.kwargs}
            jobs.append(Job("perf-" + job.key, _tagged, tagged, job.queries))
    return jobs


def row_notes(row: dict[str, Any]) -> list[str]:
    """The rooms' words about a result row (part ``("rows", "note")``, as the CLI's line shows them):
    for a low-rank timing run the oracle's own cost per query against its flop count (issue 21)."""
    return [words for note in room.parts("rows", "note") if (words := note(row)) is not None]


def perf_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 13's four ratios (and the rooms' shares) from the rows of :func:`perf_jobs`, each with its
    target from :data:`PERF_TARGETS` and whether it is ``met`` (None when not measured).

    Keys: ``queries_over_floor`` (worst over the sweep's recovered runs, and that run),
    ``refused`` (the sweep's runs the learner refused with a typed error), ``learner_over_oracle``
    (per timing run, with the learner's time breakdown when it reports one and the rooms' ``notes``
    on the run, :func:`row_notes`: the oracle's cost per query and its flops), ``bits`` (the
    timing run whose :class:`~attnproof.room.TimingRun` gives the bits),
    ``tightness`` (error_estimate / true error over the sweep: min and max;
    ``bound_over_error_max`` the rigorous bound's looseness), then one key per
    :class:`~attnproof.room.PerfShare` (its name: its summary of its rows, None when none ran),
    ``cores``.
    """
    swept = [r for r in rows if r.get("part") == "floor"]
    floor = [r for r in swept if r["outcome"] == "recovered"]
    timed = [r for r in rows if r.get("part") == "time"]
    target = PERF_TARGETS
    worst = max(floor, key=lambda r: r["queries_over_floor"], default=None)
    queries = {"max": None, "worst": None, "target": target["queries_over_floor"], "met": None}
    if worst is not None:
        keys = ("learner", "probes", "bias", "scale", "d", "rank", "queries", "floor_queries")
        queries.update(max=worst["queries_over_floor"], worst={k: worst[k] for k in keys},
                       met=worst["queries_over_floor"] <= target["queries_over_floor"])
    times = [
        {"learner": r["learner"], "d": r["d"], "rank": r.get("rank", r["d"]), "seconds": r["seconds"],
         "oracle_seconds": r["oracle_seconds"],
         "ratio": ratio_or_none(r["learner_seconds"], r["oracle_seconds"]),
         "breakdown": r["diagnostics"].get("time"), "notes": row_notes(r),
         "target": target["learner_over_oracle"],
         "met": r["learner_seconds"] <= target["learner_over_oracle"] * r["oracle_seconds"]}
        for r in timed
    ]
    bits_learners = {t.learner for t in room.parts("perf", "time") if t.bits}
    of_bits = next((r for r in timed if r["learner"] in bits_learners), None)
    bits = {"d": None, "bits_W": None, "target": target["bits"], "met": None}
    if of_bits is not None:
        bits.update(d=of_bits["d"], bits_W=of_bits["bits_W"],
                    met=of_bits["bits_W"] is None or of_bits["bits_W"] >= target["bits"])  # None: exact
    estimates = [r["estimate_over_error"] for r in floor if r.get("estimate_over_error") is not None]
    bounds = [r["bound_over_error"] for r in floor if r.get("bound_over_error") is not None]
    tightness = {"min": min(estimates, default=None), "max": max(estimates, default=None),
                 "runs": len(estimates), "target": target["tightness"],
                 "met": None if not estimates else
                 1 / target["tightness"] <= min(estimates) <= max(estimates) <= target["tightness"],
                 "bound_over_error_max": max(bounds, default=None)}
    refused = [{k: r[k] for k in ("learner", "probes", "bias", "scale", "outcome", "queries")}
               for r in swept if r["outcome"] != "recovered"]
    shares = {}
    for share in room.parts("perf", "share"):
        own = [r for r in rows if r.get("part") == share.name]
        shares[share.name] = share.summary(own) if own else None
    return {"queries_over_floor": queries, "refused": refused, "learner_over_oracle": times, "bits": bits,
            "tightness": tightness, **shares, "cores": os.cpu_count()}


def perf_table(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`perf_summary` as rows ``ratio, measured, target, met`` (for :func:`markdown_table`;
    ``met`` is yes, NO, or – when not measured or no target), the rooms' rows (part
    ``("perf", "table")``) last."""
    q, b, t = summary["queries_over_floor"], summary["bits"], summary["tightness"]

    def fmt(x: Any, spec: str) -> str:
        return "–" if x is None else format(x, spec)

    rows = [{"ratio": "queries / floor (worst over scales 1e-3..1e3, biases, probes)",
             "measured": fmt(q["max"], ".4f"), "target": f"<= {q['target']}", "met": q["met"]},
            {"ratio": "targets of the sweep refused with a typed error",
             "measured": "; ".join(f"{r['learner']} {r['probes']}{' bias' if r['bias'] else ''} "
                                   f"at norm {r['scale']:.0e}: {r['outcome']}" for r in summary["refused"])
             or "none", "target": "none", "met": not summary["refused"]}]
    for r in summary["learner_over_oracle"]:
        what = f"{r['learner']} d = {r['d']}" + (f" r = {r['rank']}" if r["rank"] != r["d"] else "")
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in (r["breakdown"] or {}).items())
        notes = "".join(f"; {note}" for note in r.get("notes", ()))
        rows.append({"ratio": f"learner time / oracle time, {what} ({r['seconds']:.1f} s"
                              + (f": {parts}" if parts else "") + f"{notes})",
                     "measured": fmt(r["ratio"], ".2f"), "target": f"<= {r['target']}", "met": r["met"]})
    rows.append({"ratio": f"bits of W at d = {b['d']}", "measured": fmt(b["bits_W"], ".1f"),
                 "target": f">= {b['target']}", "met": b["met"]})
    rows.append({"ratio": "error estimate / true error (range over the sweep)",
                 "measured": "not reported" if t["min"] is None else f"{t['min']:.2g} .. {t['max']:.2g}",
                 "target": f"within {t['target']}x", "met": t["met"]})
    rows.append({"ratio": "rigorous bound / true error (worst over the sweep)",
                 "measured": fmt(t["bound_over_error_max"], ".2g"), "target": ">= 1", "met": None})
    for table in room.parts("perf", "table"):
        rows += table(summary)
    for r in rows:
        r["met"] = {True: "yes", False: "NO", None: "–"}[r["met"]]
    return rows


# --- bound / true error: how tight each learner's rigorous bound is (issue 22 item 4) --------
#
# ``bench bounds`` spans every room with a bound: each room registers its workloads
# (:class:`~attnproof.room.Workload`, parts ``("bounds", "small")`` and ``("bounds", "full")``)
# and a room with real heads their jobs (``("bounds", "jobs")``, scored by the room); the engine
# runs them and tables the rows.  A room whose learner's bound is rigorous under a declared
# rounding model that the real oracle's answers never come near (the naive model) registers an
# adversary for it, part ``("bounds", "adversary")``: a function ``adversary(learner, options)``
# returning ``run(d, arith, seed, **options) -> row`` (the workload's target, the same seed,
# learned against an oracle whose answers are off by nearly the most the declared model allows;
# the row as :func:`~attnproof.room.result_row`'s, with ``adversary`` naming the oracle) for a
# workload it covers, else None.  Each such workload gets one more job per seed
# (:func:`adversary_point`), and the table a second looseness beside the true one: bound /
# error under the adversary, how tight the bound is *for its declared model*.


def bounds_workloads(full: bool = False) -> list[room.Workload]:
    """The workloads of ``attnproof bench bounds``, as the rooms registered them (``small`` runs
    every learner with a bound at a small size in seconds; ``full`` is issue 22's headline set,
    which :func:`bounds_full_help` words; the rooms' real heads are added by :func:`bounds_jobs`)."""
    return room.parts("bounds", "full" if full else "small")


#: issue 22's target: a rigorous bound at most this many times the true error
BOUND_TIGHTNESS_TARGET = 1e3


def bound_point(learner: str, d: int, arith: str, seed: int, **options: Any) -> dict[str, Any]:
    """One run of ``learner`` (:func:`run`) scored for its bound: ``learner, d, arith, seed,
    options``, ``outcome`` (``recovered`` or ``refused: <typed error>: <message>``), and when
    recovered ``error_bound``, ``err_W``, ``rel_err_W``, ``within_bound``, ``bound_over_error``
    (the bound's looseness) and ``bits`` = -log2 of the relative error of W (inf when exact, None
    when the learner reports no relative error)."""
    where = {"learner": learner, "d": d, "arith": arith, "seed": seed, "options": dict(options)}
    return _scored(where, lambda: run(learner, d, arith, seed, **options))


def _scored(where: dict[str, Any], learn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``where`` and the score of the run ``learn()`` (:func:`bound_point`'s keys), or its refusal."""
    try:
        row = learn()
    except InvalidInputError:
        raise
    except AttnproofError as exc:  # a refusal is an outcome of this sweep, not a crash of the bench
        return {**where, "outcome": f"refused: {type(exc).__name__}: {exc}"}
    rel = row.get("rel_err_W")
    extra = {k: row[k] for k in ("adversary", "pushes") if k in row}
    return {**where, "outcome": "recovered", "error_bound": row["error_bound"], "err_W": row["err_W"],
            "rel_err_W": rel, "within_bound": row["within_bound"],
            "bound_over_error": ratio_or_none(row["error_bound"], row["err_W"]),
            "bits": bits_of(rel), "seconds": row["seconds"], **extra}


#: the ``oracle`` option an :func:`adversary_point` row carries (no learner takes it: it names
#: the row's oracle, and :func:`bounds_table` reads it, not as a workload of its own)
ADVERSARY_ORACLE = "naive-adversary"


def adversary_of(learner: str, options: dict[str, Any]) -> Callable[..., dict[str, Any]] | None:
    """The run of ``learner`` with ``options`` against its declared model's adversary, as a room
    registered it (part ``("bounds", "adversary")``, see the section's comment), or None."""
    return next((fn for adversary in room.parts("bounds", "adversary")
                 if (fn := adversary(learner, options)) is not None), None)


def adversary_point(learner: str, d: int, arith: str, seed: int, **options: Any) -> dict[str, Any]:
    """One run of a workload's target learned against its declared rounding model's adversary
    (:func:`adversary_of`), scored as :func:`bound_point` (``options`` gain ``oracle`` =
    :data:`ADVERSARY_ORACLE``; ``adversary`` names the oracle): ``bound_over_error`` is the
    bound's looseness under answers as bad as its model allows, where the true-error ratio is
    its looseness against the real oracle.

    Raises
    ------
    InvalidInputError
        When no room registered an adversary for ``learner`` with ``options``.
    """
    fn = adversary_of(learner, options)
    if fn is None:
        raise InvalidInputError(f"no adversary is registered for {learner} with options {options}")
    where = {"learner": learner, "d": d, "arith": arith, "seed": seed,
             "options": {**options, "oracle": ADVERSARY_ORACLE}}
    return _scored(where, lambda: fn(d, arith, seed, **options))


def bounds_full_help() -> str:
    """``bench bounds --full`` in words: the rooms' shares of it (part ``("bounds", "note")``)."""
    return "the headline workloads instead: " + ", ".join(room.parts("bounds", "note")) + " (long)"


def bounds_jobs(full: bool = False) -> list[Job]:
    """The jobs of ``attnproof bench bounds``: one :func:`bound_point` per (workload, seed) of
    :func:`bounds_workloads` (``full``: the headline set, and the jobs the rooms register in
    part ``("bounds", "jobs")``, real heads, each scored by its room as :func:`bound_point`)."""
    jobs = []
    for w in bounds_workloads(full):
        adversary = adversary_of(w.learner, w.options) is not None
        for seed in w.seeds:
            kwargs = {"learner": w.learner, "d": w.d, "arith": w.arith, "seed": seed, **w.options}
            try:
                count = int(LEARNERS[w.learner].count(d=w.d, r=w.options.get("rank"), **w.options))
            except (TypeError, KeyError, AttnproofError):
                count = 0
            jobs.append(Job(job_key("bounds", **kwargs), bound_point, kwargs, count))
            if adversary:
                jobs.append(Job(job_key("bounds-adversary", **kwargs), adversary_point, kwargs, count))
    if full:
        jobs += [Job("bounds-" + j.key, j.fn, j.kwargs, j.queries)
                 for more in room.parts("bounds", "jobs") for j in more()]
    return jobs


def bounds_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload (learner, d, options but the seed), over its runs in ``rows`` (of
    :func:`bound_point`): ``runs``, ``refused``, bound / true error (min, max), fewest ``bits``,
    whether every answer was within its bound, and ``met``: NO when a run was refused or the
    worst looseness exceeds :data:`BOUND_TIGHTNESS_TARGET`, yes when not, – when no run has a bound.
    A row's options that name one instance of a workload (part ``("bounds", "place")``, e.g. a
    real head's place) do not split the workload.

    The workload's :func:`adversary_point` rows (``oracle`` = :data:`ADVERSARY_ORACLE`) are kept
    apart, in ``adv_runs``, ``adv_refused``, ``adv_min_ratio``, ``adv_max_ratio`` (bound / error
    under the declared model's adversary), ``adv_within`` (the bound held there too) and
    ``adv_met`` (judged as ``met``, on those ratios: is the bound tight *for its declared
    model*); all None (shown –) for a workload without an adversary.  ``met`` itself is judged on
    the true errors only, whatever the adversary shows."""
    instance = set(room.parts("bounds", "place")) | {"oracle"}
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        opts = " ".join(f"{k}={v}" for k, v in r["options"].items() if k not in instance)
        what = f"{r['learner']} d={r['d']}" + (f" {opts}" if opts else "") + (
            f" {r['arith']}" if r["arith"] != "float64" else "")
        groups.setdefault(what, []).append(r)
    out = []
    for what, group in groups.items():
        adv = [r for r in group if r["options"].get("oracle") == ADVERSARY_ORACLE]
        rs = [r for r in group if r["options"].get("oracle") != ADVERSARY_ORACLE]
        own, versus = _looseness(rs), _looseness(adv)
        out.append({
            "workload": what, "runs": len(rs), "refused": own["refused"], "min_ratio": own["min"],
            "max_ratio": own["max"], "min_bits": own["bits"], "within": own["within"], "met": own["met"],
            "adv_runs": len(adv) or None, "adv_refused": versus["refused"] if adv else None,
            **{f"adv_{k}": versus[v] if adv else None for k, v in
               (("min_ratio", "min"), ("max_ratio", "max"), ("within", "within"), ("met", "met"))},
        })
    return out


def _looseness(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the runs ``rs`` of one workload: ``refused``, bound / error ``min`` and ``max``, fewest
    ``bits``, ``within`` and ``met`` as :func:`bounds_table` words them."""
    done = [r for r in rs if r["outcome"] == "recovered"]
    ratios = [r["bound_over_error"] for r in done if r["bound_over_error"] is not None]
    bits = [r["bits"] for r in done if r["bits"] is not None]
    bounded = [r for r in done if r["error_bound"] is not None]
    worst = max(ratios, default=None)
    return {
        "refused": len(rs) - len(done), "min": min(ratios, default=None), "max": worst,
        "bits": min(bits, default=None),
        "within": "–" if not bounded else "yes" if all(r["within_bound"] for r in bounded) else "NO",
        "met": ("NO" if len(done) < len(rs) else "–" if not bounded else
                "yes" if worst is not None and worst <= BOUND_TIGHTNESS_TARGET else "NO"),
    }


#: the columns of :func:`bounds_table` as ``attnproof bench bounds`` prints them: the bound over
#: the true error (the real oracle's answers), then, for a workload whose bound is rigorous under
#: a declared rounding model its oracle never nears (the naive one), the bound over the error
#: against that model's adversary (:func:`adversary_point`: answers off by nearly the most the
#: model allows) -- a small ratio there puts the looseness of the first in the model, not in the
#: analysis; "–" for a workload without an adversary
BOUNDS_COLUMNS = {"workload": "workload", "runs": "runs", "refused": "refused",
                  "min_ratio": "bound/error min", "max_ratio": "bound/error max", "min_bits": "bits (min)",
                  "within": "within bound", "met": f"max <= {BOUND_TIGHTNESS_TARGET:.0e}",
                  "adv_max_ratio": "bound/adversary's error max", "adv_within": "within bound (adversary)",
                  "adv_met": f"adversary's max <= {BOUND_TIGHTNESS_TARGET:.0e}"}


__all__ = [
    "bounds_workloads",
    "bounds_full_help",
    "BOUND_TIGHTNESS_TARGET",
    "BOUNDS_COLUMNS",
    "bound_point",
    "adversary_point",
    "adversary_of",
    "ADVERSARY_ORACLE",
    "bounds_jobs",
    "bounds_table",
    "jsonable",
    "row_notes",
    "Job",
    "job_key",
    "read_results",
    "execute",
    "PERF_SCALES",
    "PERF_SIZES",
    "PERF_TARGETS",
    "perf_point",
    "perf_jobs",
    "perf_summary",
    "perf_table",
    "perf_sizes_help",
    "perf_help",
    "PERF_WORDS",
    "run",
    "markdown_table",
    "options_of",
    "result_row",
]
