"""The seam between a room (``theorems/<room>/``) and the generic engine that reads it.

A room declares once, in its own subpackage, what the engine (:mod:`attnproof.bench`,
:mod:`attnproof.cli`, the ledger, ``tools/mutation.py``) needs to know about its learners:

* the learner itself, registered with :func:`attnproof.verify.registry.learner` (its name, result,
  identities, arithmetics and query count);
* its **options**: a subclass of :class:`Options`, a frozen dataclass whose fields are declared
  with :func:`option` (default, one help line, choices, bounds).  Building one validates every
  field at once (:class:`~attnproof.errors.InvalidInputError` naming the option), and
  :meth:`Options.check` validates what depends on the width d.  The command line's flags
  (``attnproof recover <learner> --...``), their defaults and help, the bench's accepted
  keywords and the registered count's arguments are all read from this one declaration;
* its **runner**, registered with :func:`runner`: ``fn(d, arith, seed, options) -> row``, which
  draws a target for the learner, recovers it through a counting oracle and returns
  :func:`result_row`'s dict (plus the room's own keys);
* its **sweeps** (:func:`sweep`), and its share of the engine's sweeps that span rooms
  (:func:`part`: ``bench perf``'s query-count targets and timing runs, ``bench bounds``'s
  workloads, real heads), each at an explicit order.

* its top-level **commands** (:func:`command`, e.g. ``attnproof recover-model``), sweeps of
  their own.

The engine never names a result: it reads :data:`RUNNERS` (learner name -> :class:`Runner`),
:data:`SWEEPS`, :data:`COMMANDS` and :data:`PARTS`.
Rooms sit below the engine (``tests/test_layers.py``): this module is on the floor between
them (it imports only errors, arith, recovery), so a room can register here and the engine can
read here, and neither imports the other's floor.  The learner registry itself stays with the
verification graph (:data:`attnproof.verify.registry.LEARNERS`); a runner is keyed by the same name, and
``tests/test_bench.py`` checks the two tables agree.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import math
import numbers
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field
from typing import Any

import numpy as np

from .arith import Arith
from .errors import AttnproofError, InvalidInputError
from .recovery import Recovery, score


@dataclass(frozen=True)
class Option:
    """How one option of a learner reads and what it accepts.

    Attributes
    ----------
    help : str
        One line for ``--help`` (the default is appended from the field's default).
    choices : tuple, optional
        The accepted values (strings).
    low, high : float, optional
        Bounds on a number: ``low <= x`` (``low < x`` with ``open_low``), ``x <= high``
        (``x < high`` with ``open_high``).
    check : callable, optional
        Called with the value; raises an :class:`~attnproof.errors.AttnproofError` when it is
        not accepted (e.g. :func:`attnproof.arith.parse` for an arithmetic's name).
    parse : callable, optional
        How the command line reads the flag's text (default: the field's type); raises an
        :class:`~attnproof.errors.AttnproofError` whose message argparse shows after the flag
        (e.g. :func:`int_at_least`).
    show_default : bool
        Whether ``--help`` appends the default.
    metavar : str, optional
        The value's name in ``--help`` (default: the option's name in capitals).
    positional : bool
        The command line takes it as an argument without a flag (a required option).
    """

    help: str
    choices: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    check: Callable[[Any], object] | None = None
    parse: Callable[[str], Any] | None = None
    show_default: bool = True
    metavar: str | None = None
    positional: bool = False


def option(
    default: Any = MISSING,
    *,
    help: str,
    choices: tuple[Any, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    check: Callable[[Any], object] | None = None,
    parse: Callable[[str], Any] | None = None,
    show_default: bool = True,
    metavar: str | None = None,
    positional: bool = False,
) -> Any:
    """A field of an :class:`Options` class: its default (none: required) and an :class:`Option`."""
    choices = None if choices is None else tuple(choices)
    meta = {"option": Option(help, choices, low, high, open_low, open_high, check, parse, show_default,
                             metavar, positional)}
    return field(default=default, metadata=meta)


def int_at_least(lo: int) -> Callable[[str], int]:
    """A reader of a flag's text: an integer >= lo, else an InvalidInputError naming the bound
    (the command line's integer flags read this way)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise InvalidInputError(f"not an integer: {text!r}") from None
        if value < lo:
            raise InvalidInputError(f"must be >= {lo}: {value}")
        return value

    return parse


def _kind(annotation: Any) -> tuple[Any, bool]:
    """(the value type, whether None is allowed) of a field annotation like ``float | None`` or
    ``tuple[int, ...]`` (a list option, given as ``1,2,3`` on the command line)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) != 1:
            raise AttnproofError(f"an option must have one type (or None): {annotation}")
        return kinds[0], type(None) in args
    return annotation, False


@dataclass(frozen=True)
class Options:
    """A learner's options, declared once (subclass it as a frozen dataclass of :func:`option` s).

    Every field is validated when the object is built: its type (an ``int`` option takes
    Python or numpy integers, not bools; a ``float`` one any finite real), its choices and its
    bounds.  :meth:`check` adds what depends on the width d (override it, calling super).
    """

    def __post_init__(self) -> None:
        for f, (kind, nullable), opt in self.fields():
            object.__setattr__(self, f.name, _validated(f.name, getattr(self, f.name), kind, nullable, opt))

    @classmethod
    def fields(cls) -> list[tuple[dataclasses.Field[Any], tuple[Any, bool], Option]]:
        """Every option: (dataclass field, (type, nullable), :class:`Option`), in declaration order."""
        hints = typing.get_type_hints(cls)
        return [(f, _kind(hints[f.name]), f.metadata["option"]) for f in dataclasses.fields(cls)]

    @classmethod
    def names(cls) -> list[str]:
        """The option names, in declaration order."""
        return [f.name for f, _, _ in cls.fields()]

    @classmethod
    def of(cls, learner: str, values: dict[str, Any]) -> Options:
        """Options from keyword values; an unknown name is an InvalidInputError naming the known."""
        unknown = set(values) - set(cls.names())
        if unknown:
            raise InvalidInputError(
                f"the {learner} learner takes no option {sorted(unknown)}; it takes {sorted(cls.names())}"
            )
        return cls(**values)

    def check(self, d: int) -> None:
        """Validate what depends on the width d (nothing here)."""

    def values(self) -> dict[str, Any]:
        """The options as keywords (for the runner and the registered count)."""
        return {f.name: getattr(self, f.name) for f, _, _ in self.fields()}


def _validated(name: str, x: Any, kind: Any, nullable: bool, opt: Option) -> Any:
    """``x`` as an option ``name`` of type ``kind`` after the checks of ``opt``, or a typed error
    (a list option: every item checked, at least one)."""
    if x is None:
        if nullable:
            return x
        raise InvalidInputError(f"option {name} is required")
    if typing.get_origin(kind) is tuple:
        if isinstance(x, (str, bytes)) or not hasattr(x, "__iter__") or not len(x := tuple(x)):
            raise InvalidInputError(f"option {name} must be a non-empty list; got {x!r}")
        return tuple(_validated(name, item, typing.get_args(kind)[0], False, opt) for item in x)
    if kind is bool:
        if not isinstance(x, bool):
            raise InvalidInputError(f"option {name} must be True or False; got {x!r}")
        return x
    if kind is int:
        if isinstance(x, bool) or not isinstance(x, numbers.Integral):
            raise InvalidInputError(f"option {name} must be an integer; got {x!r}")
        x = int(x)
    elif kind is float:
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
            raise InvalidInputError(f"option {name} must be a finite number; got {x!r}")
        x = float(x)
    elif not isinstance(x, kind):
        raise InvalidInputError(f"option {name} must be a {kind.__name__}; got {x!r}")
    if opt.choices is not None and x not in opt.choices:
        raise InvalidInputError(f"option {name} must be one of {list(opt.choices)}; got {x!r}")
    if opt.low is not None and (x <= opt.low if opt.open_low else x < opt.low):
        raise InvalidInputError(f"option {name} must be {'>' if opt.open_low else '>='} {opt.low:g}; got {x}")
    if opt.high is not None and (x >= opt.high if opt.open_high else x > opt.high):
        raise InvalidInputError(f"option {name} must be {'<' if opt.open_high else '<='} {opt.high:g}; "
                                f"got {x}")
    if opt.check is not None:
        try:
            opt.check(x)
        except AttnproofError as exc:
            raise InvalidInputError(f"option {name}: {exc}") from None
    return x


@dataclass(frozen=True)
class NoOptions(Options):
    """A learner without options."""


@dataclass(frozen=True)
class Runner:
    """A learner's bench runner: ``fn(d=, arith=, seed=, **fixed, **options.values())`` returns a
    result row (:func:`result_row`'s keys and the room's own).  A runner without an ``arith``
    keyword runs a float64-only learner (the engine checks the registered arithmetics first).

    Attributes
    ----------
    learner : str
        The registered learner's name (:data:`attnproof.verify.registry.LEARNERS`).
    fn : callable
        The runner (a module-level function, so that Dask can ship it).
    options : type of Options
        The learner's options class; its fields are keywords of ``fn``, with the same defaults.
    fixed : dict
        Keywords ``fn`` always gets for this learner (one runner may serve several learners).
    room : str
        The room that declared it (``attnproof.theorems.<room>``).
    """

    learner: str
    fn: Callable[..., dict[str, Any]]
    options: type[Options]
    fixed: dict[str, Any]
    room: str

    def __call__(self, d: int, arith: Arith, seed: int, options: Options) -> dict[str, Any]:
        """Run the learner on a random target of width d (see the class docstring)."""
        given = {"arith": arith} if "arith" in inspect.signature(self.fn).parameters else {}
        return self.fn(d=d, seed=seed, **given, **self.fixed, **options.values())


#: learner name -> its :class:`Runner`, filled by the rooms as they are imported.
RUNNERS: dict[str, Runner] = {}


def runner(
    learner: str, options: type[Options] = NoOptions, /, **fixed: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn(d, arith, seed, **options)`` as the bench runner of ``learner`` (``fixed``:
    keywords it always gets for this learner); returns ``fn`` unchanged, so a decorator may be
    stacked once per learner the function serves.

    Raises
    ------
    AttnproofError
        If ``learner`` already has a runner, ``options`` is not an :class:`Options` class, or an
        option is not a keyword of ``fn`` with the same default (a default written twice drifts).
    """
    if not (isinstance(options, type) and issubclass(options, Options)):
        raise AttnproofError(f"runner {learner!r}: options must be an Options class, not {options!r}")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if learner in RUNNERS:
            raise AttnproofError(f"learner {learner!r} has two runners")
        params = inspect.signature(fn).parameters
        for f, _, _ in options.fields():
            if f.name not in params:
                raise AttnproofError(f"runner {learner!r}: option {f.name} is not a keyword of {fn.__name__}")
            default = params[f.name].default
            if default is not inspect.Parameter.empty and f.default is not MISSING and default != f.default:
                raise AttnproofError(f"runner {learner!r}: option {f.name} defaults to {f.default!r}, "
                                     f"{fn.__name__} to {default!r}")
        room = fn.__module__.removeprefix("attnproof.theorems.").split(".")[0]
        RUNNERS[learner] = Runner(learner, fn, options, dict(fixed), room)
        return fn

    return deco


def default_of(fn: Callable[..., Any], name: str) -> Any:
    """The default of ``fn``'s keyword ``name``: an option that is also a learner's keyword takes
    its default from the learner's signature, written once there."""
    return inspect.signature(fn).parameters[name].default


@dataclass(frozen=True)
class Job:
    """One independent run: ``fn(**kwargs)`` returns a result row (a dict).

    ``key`` names the run for a reader (``job_key``'s ``name k=v ...``); ``queries`` is the
    run's expected query count (the unit of the progress bar).  ``fn`` is a module-level
    function, so that Dask can ship the job to another process.  A results file keeps a row
    under :attr:`resume_key`, which is derived from everything the row is computed from (``fn``
    and every keyword, a model's arrays included), not from a hand-written list of parameters:
    a run with any other option (another head split of a checkpoint, another seed) resumes none
    of its rows (issue 23 item 6).
    """

    key: str
    fn: Callable[..., dict[str, Any]]
    kwargs: dict[str, Any]
    queries: int

    @property
    def resume_key(self) -> str:
        """``key`` and a SHA-256 of the job's inputs, ``fn`` and ``kwargs`` (see :func:`inputs_digest`)."""
        return f"{self.key} inputs={inputs_digest(self.fn, self.kwargs)[:16]}"


def inputs_digest(*values: Any) -> str:
    """A SHA-256 (hex) of ``values`` by content, the same in every process: numbers by their
    exact repr, arrays by dtype, shape and bytes (object arrays entry by entry), functions and
    classes by their qualified name, an arithmetic by its name, any other object by its type
    and attributes.

    Raises
    ------
    AttnproofError
        For an object whose content cannot be read (no attributes and a repr naming its
        address): such a job cannot be resumed safely.
    """
    h = hashlib.sha256()
    _digest(values, h)
    return h.hexdigest()


def _digest(x: Any, h: Any) -> None:
    """Feed ``x``'s canonical encoding to the hash ``h`` (each item tagged with its type)."""
    def put(tag: str, text: str = "") -> None:
        h.update(f"{tag}:{len(text)}:{text};".encode())

    if x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
        put(type(x).__name__, repr(x))
    elif isinstance(x, np.generic):
        put("np." + x.dtype.str, repr(x.item()))
    elif isinstance(x, np.ndarray):
        put("ndarray", f"{x.dtype.str}{x.shape}")
        if x.dtype.hasobject:
            for item in x.flat:
                _digest(item, h)
        else:
            h.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, (list, tuple)):
        put(type(x).__name__, str(len(x)))
        for item in x:
            _digest(item, h)
    elif isinstance(x, dict):
        put("dict", str(len(x)))
        for k in sorted(x, key=repr):
            _digest(k, h)
            _digest(x[k], h)
    elif isinstance(x, range):
        put("range", repr(x))
    elif isinstance(x, Arith):
        put("arith", x.name)
    elif isinstance(x, (type, types.FunctionType, types.BuiltinFunctionType)):
        put("callable", f"{x.__module__}.{x.__qualname__}")
    elif hasattr(x, "__dict__") and vars(x):
        put("object", f"{type(x).__module__}.{type(x).__qualname__}")
        _digest(vars(x), h)
    elif " at 0x" not in repr(x):  # mpmath and sympy numbers: their repr is their value
        put(f"{type(x).__module__}.{type(x).__qualname__}", repr(x))
    else:
        raise AttnproofError(f"cannot key a job by a {type(x).__name__} (no readable content): {x!r}")


def job_key(name: str, **params: Any) -> str:
    """``name k1=v1 k2=v2 ...``: a job's key, readable in a results file."""
    return " ".join([name, *(f"{k}={v}" for k, v in params.items())])


@dataclass(frozen=True)
class Sweep:
    """A room's sweep (``attnproof bench <name>``): ``jobs(**options.values())`` lists its
    independent jobs; the engine runs them (in this process or on Dask, resumable), prints
    ``describe(row)`` for each finished row, then the sweep's ``report`` of all its rows.

    Attributes
    ----------
    name : str
        The command's name.
    jobs : callable
        Options -> list of :class:`Job`.
    options : type of Options
        Its options (list options such as the widths ``d`` are tuples).
    help : str
        One line for ``attnproof bench --help``.
    describe : callable, optional
        Row -> one line, or None for no line (default: the engine's line for a learner's
        result row).
    report : callable, optional
        ``report(options, rows) -> (document, lines)``, once every row is in: the JSON
        document's keys after ``"bench"`` (default ``{"results": rows}``) and the lines printed
        after the rows' (default none).
    order : float
        Where the sweep is listed in ``attnproof bench --help`` (by order, then name; the
        engine's own sweeps ``perf`` and ``bounds`` are at 2 and 3).
    in_process : bool
        The jobs always run one after the other in this process: the command takes no
        ``--workers``, ``--scheduler``, ``--out`` or ``--quiet`` (only ``--json``), and shows
        no progress bar.
    room : str
        The room that declared it.
    """

    name: str
    jobs: Callable[..., list[Job]]
    options: type[Options]
    help: str
    describe: Callable[[dict[str, Any]], str | None] | None
    report: Callable[[Options, list[dict[str, Any]]], tuple[dict[str, Any], list[str]]] | None
    order: float
    in_process: bool
    room: str


#: sweep name -> its :class:`Sweep`, filled by the rooms as they are imported.
SWEEPS: dict[str, Sweep] = {}


def sweep(
    name: str,
    options: type[Options],
    help: str,
    describe: Callable[[dict[str, Any]], str | None] | None = None,
    *,
    report: Callable[[Options, list[dict[str, Any]]], tuple[dict[str, Any], list[str]]] | None = None,
    order: float = 0.0,
    in_process: bool = False,
) -> Callable[[Callable[..., list[Job]]], Callable[..., list[Job]]]:
    """Register ``jobs(**options)`` as the sweep ``attnproof bench <name>`` (see :class:`Sweep`).

    Raises
    ------
    AttnproofError
        If the name is taken, or an option is not a keyword of ``jobs``.
    """
    return _registrar(SWEEPS, "sweep", name, options, help, describe, report, order, in_process)


#: command name -> its :class:`Sweep`: the rooms' top-level commands (``attnproof <name>``).
COMMANDS: dict[str, Sweep] = {}


def command(
    name: str,
    options: type[Options],
    help: str,
    describe: Callable[[dict[str, Any]], str | None] | None = None,
    *,
    report: Callable[[Options, list[dict[str, Any]]], tuple[dict[str, Any], list[str]]] | None = None,
) -> Callable[[Callable[..., list[Job]]], Callable[..., list[Job]]]:
    """Register ``jobs(**options)`` as the top-level command ``attnproof <name>``: a sweep (see
    :class:`Sweep`) of its own, whose JSON document is its report's alone (no ``"bench"`` key).
    An option declared ``positional`` is an argument without a flag (e.g. a checkpoint).

    The command line lists its commands before any room is imported (``attnproof --help``
    answers at once): ``attnproof.cli.ROOM_COMMANDS`` names the command and its help line,
    and ``tests/test_cli.py`` checks it against this table.

    Raises
    ------
    AttnproofError
        If the name is taken, or an option is not a keyword of ``jobs``.
    """
    return _registrar(COMMANDS, "command", name, options, help, describe, report, 0.0, False)


def _registrar(
    table: dict[str, Sweep], kind: str, name: str, options: type[Options], help: str,
    describe: Callable[[dict[str, Any]], str | None] | None,
    report: Callable[[Options, list[dict[str, Any]]], tuple[dict[str, Any], list[str]]] | None,
    order: float, in_process: bool,
) -> Callable[[Callable[..., list[Job]]], Callable[..., list[Job]]]:
    """The decorator of :func:`sweep` and :func:`command`, registering into ``table``."""

    def deco(fn: Callable[..., list[Job]]) -> Callable[..., list[Job]]:
        if name in table:
            raise AttnproofError(f"{kind} {name!r} is registered twice")
        missing = set(options.names()) - set(inspect.signature(fn).parameters)
        if missing:
            raise AttnproofError(f"{kind} {name!r}: options {sorted(missing)} are not keywords of "
                                 f"{fn.__name__}")
        room = fn.__module__.removeprefix("attnproof.theorems.").split(".")[0]
        table[name] = Sweep(name, fn, options, help, describe, report, order, in_process, room)
        return fn

    return deco


# --- parts of the engine's sweeps that span rooms (``bench perf``, ``bench bounds``) ------------


@dataclass(frozen=True)
class Part:
    """A room's share of a sweep the engine assembles from several rooms.

    One ``@sweep`` cannot span two rooms, which may not import each other: ``bench perf`` sweeps
    the exact and the skeleton learner, ``bench bounds`` every learner with a bound.  The engine
    (:mod:`attnproof.bench`) owns such a sweep -- its parts, their meaning, its grid and its
    summary -- and each room registers its share of a part with :func:`part`; the engine reads
    :func:`parts`.  What a part's ``value`` is, is the engine's contract for that part:

    ========================  ====================================================================
    ``("perf", "floor")``     a :class:`FloorTarget`: a learner in the query-count sweep
    ``("perf", "time")``      a :class:`TimingRun`: a learner's timing run, per size
    ``("perf", "share")``     a :class:`PerfShare`: the room's own jobs in ``bench perf`` (real
                              heads), their line, their summary and their words in the help
    ``("bounds", "small")``,  a :class:`Workload` of ``bench bounds`` (``full``: ``--full``)
    ``("bounds", "full")``
    ``("bounds", "jobs")``    ``fn() -> list[Job]``: more jobs of ``bench bounds --full`` (real
                              heads), each returning a row shaped as
                              :func:`attnproof.bench.bound_point`'s
    ``("bounds", "note")``    the room's share of ``bench bounds --full`` in words (its help)
    ``("bounds", "place")``   a key of a bounds row's ``options`` that names one instance of a
                              workload (a real head's layer), not an option: rows differing in it
                              are one workload of the table
    ``("bounds", "adversary")``  ``fn(learner, options) -> run | None``: for a naive workload the
                              room covers, ``run(d, arith, seed, **options) -> row``, its target
                              learned against the declared model's adversary (see
                              :mod:`attnproof.bench`, the bounds section)
    ``("perf", "note")``      ``fn(size) -> str | None``: the room's share of a size in words
                              (``bench perf --help``)
    ``("perf", "table")``     ``fn(summary) -> list[row]``: rows the room adds to ``bench perf``'s
                              table from its summary (``ratio, measured, target, met``)
    ``("rows", "shown")``     a key of a learner's result row that the engine's one line for the
                              row shows as ``key=value`` (when the row has it), at its order
    ``("rows", "error")``     a key of a result row shown with the errors, ``key=value`` (when
                              the row has it; after ``err_W``, ``rel_err_W``, ``err_v``)
    ``("rows", "note")``      ``fn(row) -> str | None``: the room's words about a result row in
                              its line, after the bound (e.g. a theorem's guarantee)
    ``("rows", "failed")``    ``fn(row) -> str | None``: why a row must exit non-zero, beyond an
                              error above its own bound (e.g. :func:`guarantee_missed`)
    ========================  ====================================================================

    Attributes
    ----------
    sweep, name : str
        The engine's sweep and the part of it.
    order : float
        Where the value goes in the assembled sweep (its rows' order): the engine sorts by it,
        so the output does not depend on the order the rooms are imported in.
    value : object
        The room's share (see the table).
    room : str
        The room that registered it.
    """

    sweep: str
    name: str
    order: float
    value: Any
    room: str


#: every registered :class:`Part`, in registration order (read them with :func:`parts`)
PARTS: list[Part] = []


def part(sweep: str, name: str, order: float, value: Any = MISSING) -> Any:
    """Register ``value`` as a room's share of the part ``name`` of the engine's sweep ``sweep``
    at position ``order`` (see :class:`Part`); returns ``value``.  Without ``value``, a decorator
    registering the decorated function.

    Raises
    ------
    AttnproofError
        If ``order`` is not a finite number or is taken in that part by another value (two
        rooms' rows would come in import order; two rooms may register the same value there).
    """

    room = sys._getframe(1).f_globals["__name__"].removeprefix("attnproof.theorems.").split(".")[0]

    def register(value: Any) -> Any:
        if isinstance(order, bool) or not isinstance(order, numbers.Real) or not math.isfinite(order):
            raise AttnproofError(f"part {sweep}/{name}: order must be a finite number; got {order!r}")
        if any(p.order == order and p.value != value for p in PARTS if (p.sweep, p.name) == (sweep, name)):
            raise AttnproofError(f"part {sweep}/{name}: order {order} is taken")
        PARTS.append(Part(sweep, name, order, value, room))
        return value

    return register if value is MISSING else register(value)


def parts(sweep: str, name: str) -> list[Any]:
    """The values the rooms registered for the part ``name`` of ``sweep``, by their order (a
    value two rooms registered at the same order once)."""
    ordered = sorted((p for p in PARTS if (p.sweep, p.name) == (sweep, name)), key=lambda p: p.order)
    return [p.value for i, p in enumerate(ordered)
            if not (i and (ordered[i - 1].order, ordered[i - 1].value) == (p.order, p.value))]


@dataclass(frozen=True)
class FloorTarget:
    """A learner of ``bench perf``'s query-count sweep (part ``("perf", "floor")``).

    Attributes
    ----------
    learner : str
        The registered learner (its count is the floor).
    probes : tuple of str
        The probe families swept (one run each; a learner without a choice names its own).
    draw : callable
        ``draw(d, rank, scale, bias, probes, rng) -> (model, learn, shown)``: a target of width d
        (rank ``rank`` when the learner takes one) scaled to ``||W*||_F = scale``, with a score
        bias and an output offset when ``bias`` (:func:`random_biases`); ``learn(oracle)``
        recovers it; ``shown`` the row's ``rank`` and ``probes`` as the sweep reports them.
    """

    learner: str
    probes: tuple[str, ...]
    draw: Callable[..., tuple[Any, Callable[[Any], Recovery], dict[str, Any]]]


@dataclass(frozen=True)
class TimingRun:
    """A learner's timing run in ``bench perf`` (part ``("perf", "time")``): ``sizes[size]`` are
    the keywords of its run beyond ``learner, arith, seed`` (``d``, and ``rank`` when it takes
    one); ``bits``: its run gives the sweep's bits of W."""

    learner: str
    sizes: dict[str, dict[str, int]]
    bits: bool = False


@dataclass(frozen=True)
class PerfShare:
    """A room's own jobs in ``bench perf`` (part ``("perf", "share")``), e.g. real heads.

    Attributes
    ----------
    name : str
        The rows' ``part`` and the key of their summary in :func:`attnproof.bench.perf_summary`
        (None there when none of its jobs ran).
    words : str
        What they measure, in ``bench perf --help``'s list of targets.
    jobs : callable
        ``jobs(size, seed) -> list[Job]`` at one of the engine's sizes.
    describe : callable
        Row -> its line.
    summary : callable
        The share's rows -> its summary (a dict).
    """

    name: str
    words: str
    jobs: Callable[[str, int], list[Job]]
    describe: Callable[[dict[str, Any]], str]
    summary: Callable[[list[dict[str, Any]]], dict[str, Any]]


@dataclass(frozen=True)
class Workload:
    """A workload of ``bench bounds``: ``learner`` at width ``d`` in ``arith`` with ``options``,
    once per seed of ``seeds``."""

    learner: str
    d: int
    arith: str
    options: dict[str, Any]
    seeds: tuple[int, ...]


def random_biases(d: int, rng: np.random.Generator, bias: bool) -> tuple[np.ndarray | None, float | None]:
    """A score bias ``c ~ N(0, I)`` and an output offset ``beta ~ N(0, 1)`` drawn from ``rng``
    when ``bias`` (else None twice): the biases of a :class:`FloorTarget`'s target."""
    return (rng.standard_normal(d), float(rng.standard_normal())) if bias else (None, None)


def guarantee_missed(row: dict[str, Any]) -> str | None:
    """Why a row whose theorem's guarantee failed (``guarantee_met`` False) must exit non-zero:
    a part ``("rows", "failed")`` the rooms whose rows carry ``guarantee_met`` register."""
    return "the theorem's guarantee was missed" if row.get("guarantee_met") is False else None


def ratio_or_none(a: Any, b: Any) -> float | None:
    """``a / b`` as a float, None when either is None or b is 0 (a bound over an exact answer)."""
    return None if a is None or b is None or not b else float(a) / float(b)


def bits_of(rel: float | None) -> float | None:
    """-log2 of a relative error (inf for 0; None when there is none)."""
    return None if rel is None else -math.log2(rel) if rel > 0 else math.inf


def result_row(
    learner: str, d: int, seed: int, rec: Recovery, oracle: Any, seconds: float, W: Any, v: Any, **extra: Any
) -> dict[str, Any]:
    """The shared result shape: learner, d, arith, seed, queries (and the learner's formula),
    the score (errors, bits for W and v), the error bound, times and diagnostics."""
    row: dict[str, Any] = {"learner": learner, "d": d, "arith": rec.arith.name, "seed": seed}
    row.update(extra)
    row.update(queries=rec.queries, queries_formula=rec.diagnostics.get("queries_formula"),
               reasked_queries=rec.diagnostics.get("reasked_queries", 0))
    row.update(score(rec, W, v).as_dict())
    row.update(
        error_bound=rec.error_bound,
        within_bound=None if rec.error_bound is None else row["err_W"] <= rec.error_bound,
        seconds=seconds,
        oracle_seconds=oracle.seconds,
        learner_seconds=seconds - oracle.seconds,
        diagnostics=rec.diagnostics,
    )
    return row


__all__ = [
    "Option", "option", "int_at_least", "Options", "NoOptions", "Runner", "RUNNERS", "runner", "default_of",
    "Job",
    "inputs_digest", "job_key", "Sweep", "SWEEPS", "sweep", "COMMANDS", "command", "Part", "PARTS", "part",
    "parts", "FloorTarget", "TimingRun", "PerfShare", "Workload", "random_biases", "guarantee_missed",
    "ratio_or_none", "bits_of", "result_row",
]
