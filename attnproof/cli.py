"""Command line: ``attnproof verify``, ``ledger``, ``recover``, ``bench`` and the rooms' commands.

The parser is built from light declarations: a command's arguments are added when that command
is used, and the rooms (:mod:`attnproof.theorems`, which need sympy) are imported only for a
command that reads them or runs, so ``attnproof --help`` and a mistyped command answer at once
(issue 18 item 8).  Human-readable output by default, ``--json`` for machines.  Bad arguments
exit with status 2 and one line on stderr; a failed recovery prints its typed error and exits with status 1.
The sweeps (``bench <sweep>``: the rooms' and the engine's; the rooms' commands) are independent jobs
(:func:`attnproof.bench.execute`): in this process by default, on Dask with ``--workers N`` or
``--scheduler ADDRESS``; each row is printed as its job finishes, a progress bar (queries done /
expected, ETA) runs on stderr unless ``--quiet`` or ``--json``, and ``--out FILE.jsonl`` keeps
the finished rows so that an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import AttnproofError, InvalidInputError

if TYPE_CHECKING:
    from . import room


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"attnproof: error: {message}\n")


def _int_at_least(lo: int) -> Callable[[str], int]:
    """An argparse type: an integer >= lo, else one line naming the bound
    (:func:`attnproof.room.int_at_least`, imported when a value is read, not for ``--help``)."""

    def parse(text: str) -> int:
        from .room import int_at_least

        return _read(int_at_least(lo), text)

    return parse


_positive_int, _nonnegative_int = _int_at_least(1), _int_at_least(0)


def _read(reader: Callable[[str], Any], text: str) -> Any:
    """``reader(text)``, its typed error as argparse's (one line after the flag's name)."""
    try:
        return reader(text)
    except AttnproofError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _arith(text: str) -> str:
    from .arith import parse

    try:
        parse(text)
    except AttnproofError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _verify(args: argparse.Namespace) -> int:
    from .bench import jsonable
    from .verify import REGISTRY, render, verify_all, write
    from .verify.certificate import Entry
    from .verify.cli import say

    done = []

    def progress(x: Any) -> None:  # one line per identity, then per learner, on stderr
        if isinstance(x, Entry):
            done.append(x)
            say(f"verify [{len(done)}/{len(REGISTRY)}] {x.id}: {'ok' if x.own_passed else 'FAILED'} "
                f"({x.seconds:.1f} s; {render.checkers_line(x)})")
        else:
            say(f"verify learner {x.name}: {'ok' if x.passed else 'NOT verified'}")

    if args.out:  # fail before minutes of verification, not after
        try:
            Path(args.out).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(
                f"attnproof: error: cannot write the certificate to {args.out!r}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
    cert = verify_all(progress=None if args.quiet else progress)
    if not args.quiet:
        say(f"verify: {'all' if cert.passed else 'NOT all'} {len(cert.entries)} identities and "
            f"{len(cert.learners)} learners verified in {cert.seconds:.1f} s "
            f"({render.strengths_text(cert)}); engines: {render.engines_text(cert)}")
    if args.out:
        out = Path(args.out)
        try:
            (out / "certificate.json").write_text(cert.to_json())
            (out / "certificate.md").write_text(cert.to_markdown())
            (out / "certificate.tex").write_text(cert.to_latex())
            # ledger.{json,md}: the claims, with this certificate's entries
            write(out, cert, progress=None if args.quiet else say)
        except OSError as exc:
            print(
                f"attnproof: error: cannot write the certificate to {args.out!r}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
    if args.json:
        doc = cert.as_dict()
        doc["identities"] = [
            {k: e[k] for k in (
                "id", "kind", "paper", "scope", "symbolic", "numeric_max_err", "passed", "seconds", "sha256",
                "uses", "error", "checks", "checkers",
            )}
            for e in doc["identities"]
        ]
        print(json.dumps(jsonable(doc), indent=2))
    else:
        for e in cert.entries:
            mark = "ok  " if e.passed else "FAIL"
            evidence = "worst measured/allowed" if e.kind == "run" else "numeric"
            print(f"{mark} {e.id:32s} {e.paper:24s} {evidence} {e.numeric_max_err:.1e}  "
                  f"{e.seconds:6.2f} s  {e.error}")
        for lr in cert.learners:
            mark = "ok  " if lr.passed else "FAIL"
            print(f"{mark} learner {lr.name:24s} {lr.result:24s} through {len(lr.relies_on)} identities"
                  + (f"; failing: {', '.join(lr.failing)}" if lr.failing else ""))
        print(f"{'all' if cert.passed else 'NOT all'} {len(cert.entries)} identities and "
              f"{len(cert.learners)} learners verified in {cert.seconds:.1f} s")
    return 0 if cert.passed else 1


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.3e}"
    return str(x)


def _queries(r: dict[str, Any]) -> str:
    """``N queries (formula F)``, and when a learner spent more, how many of the counted extras
    were designed (``designed_queries``, named by the row's ``designed_what``; default the FFN's:
    check points, points on each recovered hyperplane, the polish's measurements, and in sympy and
    float64 the search's probes of intervals before it drops them as kink-free) and how many were
    re-asks."""
    formula = r.get("queries_formula")
    extra = r["queries"] - formula if isinstance(formula, int) else 0
    if extra <= 0:
        return f"{r['queries']} queries (formula {formula})"
    designed = min(r.get("designed_queries") or 0, extra)
    probes = "" if str(r.get("arith", "")).startswith("mp:") else ", probes of intervals dropped as kink-free"
    what = r.get("designed_what") or (
        f"check points, points on each hyperplane, the polish's measurements{probes}")
    parts = [f"{designed} designed: {what}"] * (designed > 0)
    if extra > designed:
        parts.append(f"{extra - designed} re-asks: probes asked again at a smaller scale when a logit "
                     "saturated, or retried points of a kink search")
    return f"{r['queries']} queries (formula {formula} + {extra} counted extras; {'; '.join(parts)})"


def _describe(r: dict[str, Any]) -> str:
    """One line for a result row of :func:`attnproof.room.result_row` (any learner): the row
    keys the rooms show (parts ``("rows", "shown")`` and ``("rows", "error")`` of
    :mod:`attnproof.room`) as ``key=value``, and their words about it (part ``("rows", "note")``)."""
    from . import room
    from .bench import row_notes

    head = [f"{r['learner']}", f"d={r['d']}"]
    head += [f"{k}={_fmt(r[k])}" for k in room.parts("rows", "shown") if k in r]
    head.append(f"arith={r['arith']}")
    if r["exact"]:
        bits = "exact"
    elif "bits_W" in r:
        bits = f"{r['bits_W']:.1f} bits (W), " + (
            "exact v" if r["bits_v"] is None else f"{r['bits_v']:.1f} bits (v)"
        )
    else:  # a row scored by one figure (no separate bits of W and v)
        bits = f"{r['bits']:.1f} bits"
    errors = " ".join(f"{k}={r[k]:.3e}" for k in ("err_W", "rel_err_W", "err_v", *room.parts("rows", "error"))
                      if k in r)
    parts = [_queries(r), errors, bits]
    if r.get("error_bound") is not None:
        parts.append(f"bound {r['error_bound']:.2e} ({'held' if r['within_bound'] else 'VIOLATED'})")
    parts += row_notes(r)
    oracle = r["oracle_seconds"]
    learner = max(r["seconds"] - oracle, 0.0)
    ratio = f", learner/oracle {learner / oracle:.2f}" if oracle > 0 else ""
    parts.append(f"{r['seconds']:.2f} s ({oracle:.2f} s in the oracle{ratio})")
    return " ".join(head) + ": " + ", ".join(parts)


def _failed(r: dict[str, Any]) -> str | None:
    """Why a result must exit non-zero: an error above the learner's own bound, or what a room
    says (part ``("rows", "failed")``, e.g. a missed guarantee)."""
    from . import room

    if r.get("within_bound") is False:
        return f"the error {r['err_W']:.3e} exceeds the learner's own bound {r['error_bound']:.3e}"
    return next((why for failed in room.parts("rows", "failed") if (why := failed(r)) is not None), None)


def _expected_queries(learner: str, d: int, options: dict[str, Any]) -> int:
    """The registry's query count for ``learner`` at d and ``options``, or 0 when the count
    needs what only the run finds, or refuses the options (the progress bar then counts without
    a total, and the run itself reports what is wrong with the options)."""
    from .verify.registry import LEARNERS

    try:
        return int(LEARNERS[learner].count(d=d, r=options.get("rank"), **options))
    except (TypeError, KeyError, AttnproofError):
        return 0


def _recover(args: argparse.Namespace) -> int:
    from .bench import Job, jsonable, options_of, run

    options = {k: getattr(args, k) for k in sorted(options_of(args.learner)) if getattr(args, k) is not None}
    kwargs = {"learner": args.learner, "d": args.d, "arith": args.arith, "seed": args.seed, **options}
    job = Job("recover", run, kwargs, _expected_queries(args.learner, args.d, options))
    (result,) = _execute(args, [job], _describe)
    if args.json:
        print(json.dumps(jsonable(result), indent=2))
    failure = _failed(result)
    if failure:
        print(f"attnproof: {failure}", file=sys.stderr)
        return 1
    return 0


#: Seconds a run lasts before its progress bar appears (short runs print no bar).
PROGRESS_DELAY = 2.0


def _execute(
    args: argparse.Namespace, jobs: list[Any], describe: Callable[[dict[str, Any]], str | None]
) -> list[dict[str, Any]]:
    """Run ``jobs`` as the options say (``--workers``, ``--scheduler``, ``--out``), with a
    progress bar on stderr (unless ``--quiet`` or ``--json``, or the command has no ``--quiet``),
    printing ``describe(row)`` for each row as it finishes (unless ``--json``, or it is None);
    returns the rows in the jobs' order.

    The bar counts queries (live in this process); on a terminal it redraws itself, elsewhere
    (a log file, a pipe) it is written once, when the run ends, if the run lasted
    :data:`PROGRESS_DELAY` or more."""
    import time

    from tqdm import tqdm

    from .bench import execute

    rows: dict[str, dict[str, Any]] = {}
    total = sum(j.queries for j in jobs) or None
    done, live = [0], [0]  # queries of the whole run, and of the running job (in this process)
    show = not (getattr(args, "quiet", True) or args.json)
    redraw = show and sys.stderr.isatty()
    meter = {"unit": "queries", "unit_scale": bool(total and total >= 1000)}

    def on_queries(n: int) -> None:
        live[0] += n
        done[0] += n
        bar.update(n)

    scale_out = [getattr(args, k, None) for k in ("workers", "scheduler", "out")]  # recover has none
    t0 = time.perf_counter()
    with tqdm(total=total, file=sys.stderr, delay=PROGRESS_DELAY, disable=not redraw, dynamic_ncols=True,
              **meter) as bar:
        for job, row, resumed in execute(jobs, *scale_out, on_queries=on_queries):
            rows[job.key] = row
            rest = job.queries - live[0] if job.queries else 0  # a job ends at its expected count
            bar.update(rest)
            done[0] += rest
            live[0] = 0
            described = None if args.json else describe(row)
            if described is not None:
                line = described + (" (resumed)" if resumed else "")
                if not bar.disable and bar.last_print_t >= bar.start_t + bar.delay:  # the bar is shown
                    bar.write(line, file=sys.stdout)  # clears it, writes, redraws it
                else:
                    print(line)
                sys.stdout.flush()
    elapsed = time.perf_counter() - t0
    if show and not redraw and elapsed >= PROGRESS_DELAY:
        print(tqdm.format_meter(done[0], total, elapsed, **meter), file=sys.stderr)
    return [rows[j.key] for j in jobs]


def _describe_perf(row: dict[str, Any]) -> str:
    """One line for a row of :func:`attnproof.bench.perf_jobs`: a timing run's as any result
    row's, a room's share's by its own ``describe`` (:class:`attnproof.room.PerfShare`), a
    query-count point's as queries over the floor."""
    from . import room

    shares = {share.name: share.describe for share in room.parts("perf", "share")}
    if row["part"] in shares:
        return shares[row["part"]](row)
    if row["part"] == "time":
        return _describe(row)
    where = (f"{row['learner']} d={row['d']} r={row['rank']} probes={row['probes']} bias={row['bias']} "
             f"||W||_F={row['scale']:.0e}: ")
    if row["outcome"] != "recovered":
        return where + f"{row['outcome']} after {row['queries']} queries"
    return where + (f"{row['queries']} queries / floor {row['floor_queries']} = "
                    f"{row['queries_over_floor']:.3f}, rel_err_W={row['rel_err_W']:.1e}")


def _print_failures(rows: list[dict[str, Any]]) -> int:
    """Print why rows must exit non-zero (:func:`_failed`); 1 if any, else 0."""
    failures = [f for f in map(_failed, rows) if f]
    for f in failures:
        print(f"attnproof: {f}", file=sys.stderr)
    return 1 if failures else 0


def _sweep_jobs(args: argparse.Namespace) -> list[Any]:
    """The jobs of a sweep or command a room registered (``args.sweep``: of
    :data:`attnproof.room.SWEEPS` or :data:`attnproof.room.COMMANDS`)."""
    return args.sweep.jobs(**_options_from(args, args.sweep.options).values())


def _run_sweep(args: argparse.Namespace) -> int:
    """``bench <sweep>`` or ``<command>`` for a sweep or command a room registered (``args.sweep``):
    its rows' lines, then its report (:class:`attnproof.room.Sweep`); exit 1 when a row failed.
    The JSON document of a bench sweep starts with ``"bench": <sweep>``, a command's is its
    report's alone."""
    from .bench import jsonable

    sweep = args.sweep
    rows = _execute(args, args.jobs(args), sweep.describe or _describe)
    for r in rows:
        if "learner_seconds" in r:
            r["learner_share"] = r["learner_seconds"] / r["oracle_seconds"] if r["oracle_seconds"] else None
    doc, lines = (sweep.report(_options_from(args, sweep.options), rows) if sweep.report
                  else ({"results": rows}, []))
    if args.json:
        head = {"bench": args.what} if args.command == "bench" else {}
        print(json.dumps(jsonable({**head, **doc}), indent=2))
    else:
        for line in lines:
            print(line)
    return _print_failures(rows)


def _perf_jobs(args: argparse.Namespace) -> list[Any]:
    """The jobs of ``bench perf``."""
    from .bench import perf_jobs

    return perf_jobs(args.size, args.seed)


def _bench_perf(args: argparse.Namespace) -> int:
    from .bench import jsonable, markdown_table, perf_summary, perf_table

    rows = _execute(args, args.jobs(args), _describe_perf)
    summary = perf_summary(rows)
    if args.json:
        doc = {"bench": "perf", "size": args.size, "results": rows, "summary": summary}
        print(json.dumps(jsonable(doc), indent=2))
    else:
        print(markdown_table(perf_table(summary), ["ratio", "measured", "target", "met"]))
        print(f"({summary['cores']} cores)")
    return _print_failures(rows)


def _bounds_jobs(args: argparse.Namespace) -> list[Any]:
    """The jobs of ``bench bounds``."""
    from .bench import bounds_jobs

    return bounds_jobs(args.full)


def _describe_bound(row: dict[str, Any]) -> str:
    """One line for a :func:`attnproof.bench.bound_point` row."""
    opts = "".join(f" {k}={v}" for k, v in row["options"].items())
    where = f"{row['learner']} d={row['d']}{opts} arith={row['arith']} seed={row['seed']}: "
    if row["outcome"] != "recovered":
        return where + row["outcome"]
    if row["error_bound"] is None:
        return where + f"err_W={row['err_W']:.2e}, no bound"
    rel = row["rel_err_W"]  # (bits, inf for an exact answer, reads back from a results file as null)
    bits = "no relative error" if rel is None else "exact" if rel == 0 else f"{row['bits']:.1f} bits"
    ratio = "error 0" if row["bound_over_error"] is None else f"bound / error = {row['bound_over_error']:.2g}"
    return where + (f"bound {row['error_bound']:.2e}, error {row['err_W']:.2e}, {ratio} "
                    f"({'held' if row['within_bound'] else 'VIOLATED'}), {bits}")


def _bench_bounds(args: argparse.Namespace) -> int:
    from .bench import BOUNDS_COLUMNS, bounds_table, jsonable, markdown_table

    rows = _execute(args, args.jobs(args), _describe_bound)
    table = bounds_table(rows)
    if args.json:
        print(json.dumps(jsonable({"bench": "bounds", "full": args.full, "results": rows, "table": table}),
                         indent=2))
    else:
        print(markdown_table(table, BOUNDS_COLUMNS, {"min_ratio": "{:.2g}", "max_ratio": "{:.2g}",
                                                     "min_bits": "{:.1f}"}))
    return _print_failures(rows)


def _scalar(kind: type) -> Callable[[str], Any]:
    """An argparse type reading one value of an option of type ``kind`` (checked by its Options)."""
    def parse(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a valid {kind.__name__}: {text!r}") from None
    return parse


def _list_of(kind: type) -> Callable[[str], tuple[Any, ...]]:
    """An argparse type reading a comma-separated list of ``kind`` values."""
    item = _scalar(kind)

    def parse(text: str) -> tuple[Any, ...]:
        values = tuple(item(t) for t in text.split(",") if t.strip())
        if not values:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list: {text!r}")
        return values
    return parse


def _add_options(
    parser: argparse.ArgumentParser, options: type[room.Options], defaults: bool = False
) -> None:
    """One flag per option a room declared: ``--name`` (``_`` as ``-``), typed, its choices, its
    default in the help (unless it says not to), required when it has none, read by the
    option's own ``parse`` when it declares one; a ``positional`` option is an argument without a
    flag.  The values are checked when the options
    object is built (:func:`_options_from`), by the same code the Python API runs.  With
    ``defaults`` the parsed namespace holds the declared defaults (a sweep's jobs get every
    option anyway); without, an absent flag is None (``recover`` passes only the given ones)."""
    for f, (kind, _), opt in options.fields():
        is_list = typing.get_origin(kind) is tuple
        item = typing.get_args(kind)[0] if is_list else kind
        default = None if f.default is dataclasses.MISSING else f.default
        shown = ",".join(map(str, default)) if is_list and default is not None else default
        if opt.parse is not None:
            read: Callable[[str], Any] = lambda text, parse=opt.parse: _read(parse, text)  # noqa: E731
        else:
            read = _list_of(item) if is_list else _scalar(item)
        how = {"help": opt.help + ("" if shown is None or not opt.show_default else f" (default: {shown})"),
               "type": read, "metavar": opt.metavar, "choices": None if is_list else opt.choices}
        if opt.positional:  # an argument without a flag: required
            parser.add_argument(f.name, **how)
        else:
            parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name,
                                default=default if defaults else None,
                                required=f.default is dataclasses.MISSING, **how)


def _options_from(args: argparse.Namespace, options: type[room.Options]) -> room.Options:
    """The options object of the parsed flags (absent flags take the declared defaults)."""
    return options(**{k: getattr(args, k) for k in options.names() if getattr(args, k) is not None})


def _learner_first(argv: list[str]) -> list[str]:
    """``recover --learner NAME ...`` (the older spelling) as ``recover NAME ...``, and ``recover``
    without a learner as ``recover exact`` (the default learner); ``recover --help`` lists them."""
    if not argv or argv[0] != "recover":
        return argv
    rest = list(argv[1:])
    for i, a in enumerate(rest):
        if a == "--learner" and i + 1 < len(rest):
            return ["recover", rest[i + 1], *rest[:i], *rest[i + 2:]]
        if a.startswith("--learner="):
            return ["recover", a.partition("=")[2], *rest[:i], *rest[i + 1:]]
    if (rest and not rest[0].startswith("-")) or {"-h", "--help"} & set(rest):
        return argv
    return ["recover", "exact", *rest]


_JSON_HELP = "print one JSON document on stdout instead of text"


def _jobs_options() -> argparse.ArgumentParser:
    """The options of every command that runs independent jobs (a parent parser)."""
    j = argparse.ArgumentParser(add_help=False)
    _add_jobs_arguments(j)
    return j


def _add_jobs_arguments(j: argparse.ArgumentParser) -> None:
    """Add the options of a command that runs independent jobs to ``j`` (see :func:`_jobs_options`)."""
    j.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                   help="run the jobs on a local Dask cluster of N worker processes "
                   "(default: one after the other in this process)")
    j.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the jobs on a running Dask scheduler, e.g. tcp://host:8786 "
                   "(its workers need attnproof installed)")
    j.add_argument("--out", default=None, metavar="FILE.jsonl",
                   help="append each finished row to FILE.jsonl; a rerun with the same FILE "
                   "skips the jobs already in it")
    j.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    j.add_argument("--json", action="store_true", help=_JSON_HELP)


class _LazyParsers(dict):  # type: ignore[type-arg]
    """A subcommand's name -> its parser, built on first use: the map of an argparse subparsers
    action whose entries may be functions that return the parser (see :func:`_lazy_parser`)."""

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        value = super().__getitem__(name)
        if not isinstance(value, argparse.ArgumentParser):
            value = value()
            super().__setitem__(name, value)
        return value

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def values(self) -> list[argparse.ArgumentParser]:  # type: ignore[override]
        return [self[n] for n in self]

    def items(self) -> list[tuple[str, argparse.ArgumentParser]]:  # type: ignore[override]
        return [(n, self[n]) for n in self]


def _subcommands(parser: argparse.ArgumentParser, **kwargs: Any) -> Any:
    """``parser.add_subparsers(**kwargs)`` whose subcommands may be built lazily."""
    sub = parser.add_subparsers(parser_class=_Parser, **kwargs)
    sub._name_parser_map = sub.choices = _LazyParsers()
    return sub


def _lazy_parser(sub: Any, name: str, fill: Callable[[argparse.ArgumentParser], None], **kwargs: Any) -> None:
    """Add the subcommand ``name`` to ``sub`` (its help line at once); ``fill(parser)`` adds its
    arguments when the command is first used (parsed, or its help shown)."""
    parser = sub.add_parser(name, **kwargs)

    def build() -> argparse.ArgumentParser:
        fill(parser)
        return parser

    dict.__setitem__(sub.choices, name, build)


def _load_rooms() -> None:
    """Import every room (:mod:`attnproof.theorems`), which registers its identities, learners,
    runners and sweeps (the command line's process imports them only here)."""
    from . import theorems  # noqa: F401


def _add_ledger(led: argparse.ArgumentParser) -> None:
    """The arguments of ``attnproof ledger`` (:mod:`attnproof.verify.cli`)."""
    from .verify import cli as verify_cli

    led.description = verify_cli.SUMMARY[0].upper() + verify_cli.SUMMARY[1:] + "."
    verify_cli.add_arguments(led)
    led.set_defaults(run=verify_cli.run_ledger)


def _add_recover(r: argparse.ArgumentParser) -> None:
    """The learners of ``attnproof recover``, each with the options its room declares."""
    from . import room
    from .verify.registry import LEARNERS

    _load_rooms()
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--d", type=_positive_int, required=True,
                        help="the width d of the target (W is d x d)")
    common.add_argument("--arith", type=_arith, default="float64", help="float64, mp:DIGITS or sympy")
    common.add_argument("--seed", type=_nonnegative_int, default=0,
                        help="seed of the target and the learner's draws")
    common.add_argument("--json", action="store_true", help=_JSON_HELP)
    common.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    learners = r.add_subparsers(dest="learner", required=True, parser_class=_Parser, metavar="LEARNER",
                                help="a registered learner (default exact); "
                                "'attnproof recover LEARNER --help' shows its options")

    for name, lr in sorted(LEARNERS.items()):
        lp = learners.add_parser(name, parents=[common], help=f"{lr.result}; queries {lr.queries}")
        _add_options(lp, room.RUNNERS[name].options)
        lp.set_defaults(run=_recover)


def _add_bench(b: argparse.ArgumentParser) -> None:
    """The sweeps of ``attnproof bench``: the ones the rooms register, and the engine's own
    (``perf``, ``bounds``), listed by their order (:class:`attnproof.room.Sweep`)."""
    from . import room

    _load_rooms()
    jobs = _jobs_options()
    sweeps = b.add_subparsers(dest="what", required=True, parser_class=_Parser, metavar="SWEEP",
                              help="what to sweep; 'attnproof bench SWEEP --help' shows its options")

    def add_room_sweep(sw: room.Sweep) -> Callable[[], None]:
        return lambda: _fill_room_sweep(sweeps.add_parser(sw.name, help=sw.help), sw)

    entries = [(sw.order, name, add_room_sweep(sw)) for name, sw in room.SWEEPS.items()]
    entries += [(2.0, "perf", lambda: _add_perf(sweeps, jobs)),
                (3.0, "bounds", lambda: _add_bounds(sweeps, jobs))]
    for _, _, add in sorted(entries, key=lambda e: e[:2]):
        add()


def _fill_room_sweep(sp: argparse.ArgumentParser, sw: room.Sweep) -> None:
    """The arguments of a room's sweep or command ``sw``: the options of a command that runs jobs
    (none but ``--json`` when it runs in this process), then its own (:func:`_add_options`)."""
    if not sw.in_process:
        _add_jobs_arguments(sp)
    _add_options(sp, sw.options, defaults=True)
    if sw.in_process:
        sp.add_argument("--json", action="store_true", help=_JSON_HELP)
    sp.set_defaults(run=_run_sweep, jobs=_sweep_jobs, sweep=sw)


def _add_room_command(cp: argparse.ArgumentParser) -> None:
    """The arguments of a room's top-level command (:data:`attnproof.room.COMMANDS`), by its name."""
    from . import room

    _load_rooms()
    _fill_room_sweep(cp, room.COMMANDS[cp.prog.split()[-1]])


def _add_perf(sweeps: Any, jobs: argparse.ArgumentParser) -> None:
    """``attnproof bench perf``."""
    from .bench import PERF_SIZES, perf_help, perf_sizes_help

    pf = sweeps.add_parser("perf", parents=[jobs], help=perf_help())
    pf.add_argument("--size", choices=tuple(PERF_SIZES), default="small",
                    help=perf_sizes_help())
    pf.add_argument("--seed", type=_nonnegative_int, default=0,
                    help="seed of the targets and the learners' draws")
    pf.set_defaults(run=_bench_perf, jobs=_perf_jobs)


def _add_bounds(sweeps: Any, jobs: argparse.ArgumentParser) -> None:
    """``attnproof bench bounds``."""
    from .bench import bounds_full_help

    bd = sweeps.add_parser("bounds", parents=[jobs],
                           help="each learner's rigorous error bound against its true error: bound / error, "
                           "bits, refusals, on small workloads (seconds)")
    bd.add_argument("--full", action="store_true", help=bounds_full_help())
    bd.set_defaults(run=_bench_bounds, jobs=_bounds_jobs)


#: The rooms' top-level commands (:func:`attnproof.room.command`) and their help lines, listed
#: here so that ``attnproof --help`` names them without importing a room (issue 18 item 8); a
#: command's arguments and jobs are its room's.  ``tests/test_cli.py`` checks this table against
#: :data:`attnproof.room.COMMANDS`.
ROOM_COMMANDS: dict[str, str] = {
    "recover-model": "recover every attention head of a BERT-style safetensors checkpoint",
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``attnproof``; ``recover``, ``bench``, ``ledger`` and the rooms' commands
    (:data:`ROOM_COMMANDS`) are filled on first use (:func:`_lazy_parser`), ``verify`` needs no
    room to parse."""
    p = _Parser(prog="attnproof", description="Learning attention with queries (arXiv 2601.16873).")
    *names, last = ["verify", "ledger", "recover", "bench", *ROOM_COMMANDS]
    sub = _subcommands(p, dest="command", required=True, metavar="COMMAND",
                       help=f"{', '.join(names)} or {last}")

    v = sub.add_parser("verify", help="verify every registered identity; exit 0 iff all pass")
    v.add_argument("--json", action="store_true", help=_JSON_HELP)
    v.add_argument("--out", metavar="DIR",
                   help="also write certificate.{json,md,tex} and ledger.{json,md} to DIR")
    v.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    v.set_defaults(run=_verify)
    _lazy_parser(sub, "ledger", _add_ledger, help="the paper's claims, their checks and computed status")
    _lazy_parser(sub, "recover", _add_recover, help="recover a random target through a counting oracle")
    _lazy_parser(sub, "bench", _add_bench, help="sweeps: query counts, errors and time over several runs")
    for name, help in ROOM_COMMANDS.items():
        _lazy_parser(sub, name, _add_room_command, help=help)
    return p


def _check_recover(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject what the chosen learner cannot take (one line, exit 2): an arithmetic it does not
    run in, or option values its room's options class refuses (at this d)."""
    from . import room
    from .arith import parse
    from .verify.registry import LEARNERS

    spec = LEARNERS[args.learner]
    if parse(args.arith).family not in spec.arithmetics:
        parser.error(f"argument --arith: the {args.learner} learner runs in {', '.join(spec.arithmetics)}")
    if args.learner in room.RUNNERS:
        try:
            _options_from(args, room.RUNNERS[args.learner].options).check(args.d)
        except InvalidInputError as exc:
            parser.error(str(exc))


def main(argv: list[str] | None = None) -> int:
    argv = _learner_first(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser()
    args = parser.parse_args(argv)
    _load_rooms()  # every command reads what the rooms register
    if args.command == "recover":
        _check_recover(parser, args)
    if getattr(args, "sweep", None) is not None:  # a room's sweep or command
        try:
            _options_from(args, args.sweep.options)
        except InvalidInputError as exc:
            parser.error(str(exc))
    if getattr(args, "workers", None) is not None and args.scheduler is not None:
        parser.error("argument --scheduler: not allowed with --workers (one or the other)")
    try:
        return args.run(args)
    except InvalidInputError as exc:  # a bad argument found past argparse: still exit 2, one line
        print(f"attnproof: error: {exc}", file=sys.stderr)
        return 2
    except AttnproofError as exc:
        print(f"attnproof: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
