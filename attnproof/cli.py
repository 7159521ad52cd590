"""Command line: ``attnproof verify``, ``attnproof recover``, ``attnproof bench``.

Human-readable output by default, ``--json`` for machines.  Bad arguments exit with status 2
and one line on stderr; a failed recovery prints its typed error and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from .errors import AttnproofError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"attnproof: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {value}")
    return value


def _nonnegative_int(text: str) -> int:
    return _positive_int(text) if text.strip() != "0" else 0


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0: {text}")
    return value


def _unit_float(text: str) -> float:
    value = _positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1): {text}")
    return value


def _int_list(text: str) -> list[int]:
    return [_positive_int(t) for t in text.split(",") if t]


def _arith(text: str) -> str:
    from .arith import parse

    try:
        parse(text)
    except AttnproofError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    return obj


def _verify(args: argparse.Namespace) -> int:
    from .proof import verify_all

    cert = verify_all()
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "certificate.json").write_text(cert.to_json())
        (out / "certificate.md").write_text(cert.to_markdown())
        (out / "certificate.tex").write_text(cert.to_latex())
    if args.json:
        doc = cert.as_dict()
        doc["identities"] = [
            {k: e[k] for k in ("id", "paper", "symbolic", "numeric_max_err", "passed", "seconds", "sha256", "uses", "error")}
            for e in doc["identities"]
        ]
        print(json.dumps(_jsonable(doc), indent=2))
    else:
        for e in cert.entries:
            mark = "ok  " if e.passed else "FAIL"
            print(f"{mark} {e.id:32s} {e.paper:24s} numeric {e.numeric_max_err:.1e}  {e.seconds:6.2f} s  {e.error}")
        print(f"{'all' if cert.passed else 'NOT all'} {len(cert.entries)} identities verified in {cert.seconds:.1f} s")
    return 0 if cert.passed else 1


def _print_result(r: dict[str, Any]) -> None:
    bits = "exact" if r["exact"] else f"{r['bits']:.1f} bits"
    if r.get("learner") == "noisy":
        print(
            f"d={r['d']} noisy design={r['design']} adversary={r['adversary']} tau={r['tau']:.3e} "
            f"(proven {r['tau_theorem']:.3e}): {r['queries']} queries, err_W={r['err_W']:.3e} "
            f"(eps_W={r['eps_W']}: {'met' if r['guarantee_W'] else 'MISSED'}), err_v={r['err_v']:.3e} "
            f"(eps_v={r['eps_v']}: {'met' if r['guarantee_v'] else 'MISSED'})"
        )
        return
    print(
        f"d={r['d']} arith={r['arith']} probes={r['probes']}: {r['queries']} queries "
        f"(d + d^2 = {r['expected_queries']}), err_W={r['err_W']:.3e} rel_err_W={r['rel_err_W']:.3e} "
        f"err_v={r['err_v']:.3e} {bits}, {r['seconds']:.2f} s ({r['oracle_seconds']:.2f} s in the oracle)"
    )


def _recover(args: argparse.Namespace) -> int:
    from .bench import run_exact, run_noisy

    if args.learner in ("skeleton", "skeleton-adaptive", "lowrank-cvx"):
        from .bench import run_lowrank

        result = run_lowrank(args.d, args.rank, args.learner, args.arith, args.seed, args.m, args.checks)
    elif args.learner == "noisy":
        result = run_noisy(args.d, args.design, args.tau, args.adversary, args.eps_W, args.eps_v, args.W_bound, args.seed)
    else:
        result = run_exact(args.d, args.arith, args.probes, args.seed, args.scale)
    if args.json:
        print(json.dumps(_jsonable(result), indent=2))
    else:
        _print_result(result)
    return 0


def _bench(args: argparse.Namespace) -> int:
    from .bench import phase_transition, run_exact, run_lowrank

    if args.what == "phase":
        rows = phase_transition(args.d, args.rank or [1, 2, 4], args.ratios, range(args.seeds))
        if args.json:
            print(json.dumps(_jsonable({"bench": "phase", "results": rows}), indent=2))
        else:
            for row in rows:
                print(f"d={row['d']:3d} r={row['rank']} m/(r(2d-r))={row['ratio']:.2f} m={row['m']:5d} "
                      f"success={row['success']:.2f} max rel err={row['max_rel_err']:.1e}")
        return 0
    results = []
    for n, d in enumerate(args.d):
        if args.what == "lowrank":
            r = run_lowrank(d, args.rank[n], args.learner, args.arith, args.seed)
        else:
            r = run_exact(d, args.arith, args.probes, args.seed)
        r["learner_share"] = r["learner_seconds"] / r["oracle_seconds"] if r["oracle_seconds"] else None
        results.append(r)
        if not args.json:
            if args.what == "lowrank":
                print(f"d={d} r={r['rank']} {r['learner']}: {r['queries']} queries (floor d + r(2d - r) = "
                      f"{r['floor_queries']}, d + d^2 = {r['expected_queries']}), rel_err_W={r['rel_err_W']:.2e}, "
                      f"{r['seconds']:.1f} s ({r['oracle_seconds']:.1f} s oracle, {r['learner_seconds']:.1f} s learner)")
            else:
                _print_result(r)
    if args.json:
        print(json.dumps(_jsonable({"bench": args.what, "results": results}), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="attnproof", description="Learning attention with queries (arXiv 2601.16873).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    v = sub.add_parser("verify", help="verify every registered identity; exit 0 iff all pass")
    v.add_argument("--json", action="store_true")
    v.add_argument("--out", metavar="DIR", help="also write certificate.{json,md,tex} to DIR")
    v.set_defaults(run=_verify)

    r = sub.add_parser("recover", help="recover a random target through a counting oracle")
    r.add_argument("--d", type=_positive_int, required=True)
    r.add_argument("--arith", type=_arith, default="float64", help="float64, mp:DIGITS or sympy")
    r.add_argument("--probes", choices=("gaussian", "basis"), default="gaussian")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--scale", type=float, default=None, help="std of W's entries (default 1/sqrt(d))")
    r.add_argument("--learner", choices=("exact", "noisy", "skeleton", "skeleton-adaptive", "lowrank-cvx"), default="exact")
    r.add_argument("--rank", type=_nonnegative_int, default=None, help="low-rank learners: r = rank of W = K^T Q")
    r.add_argument("--m", type=_positive_int, default=None, help="lowrank-cvx: measurements (default 3 r (2d - r))")
    r.add_argument("--checks", type=_nonnegative_int, default=0, help="skeleton: extra check queries")
    r.add_argument("--tau", type=_positive_float, default=None, help="noisy: oracle tolerance (default: the proven one)")
    r.add_argument("--adversary", choices=("worst", "random", "bias", "round"), default="worst")
    r.add_argument("--design", choices=("paper", "corrected", "tuned"), default="corrected")
    r.add_argument("--eps-W", dest="eps_W", type=_unit_float, default=0.1)
    r.add_argument("--eps-v", dest="eps_v", type=_unit_float, default=0.1)
    r.add_argument("--W-bound", dest="W_bound", type=float, default=2.0, help="noisy: known bound W >= 2 on ||W*||_F")
    r.add_argument("--json", action="store_true")
    r.set_defaults(run=_recover)

    b = sub.add_parser("bench", help="query counts, errors and time over several d")
    b.add_argument("what", choices=("exact", "lowrank", "phase"))
    b.add_argument("--d", type=_int_list, default=[64, 256, 1024])
    b.add_argument("--rank", type=_int_list, default=None, help="lowrank: one rank per d; phase: ranks")
    b.add_argument("--learner", choices=("skeleton", "skeleton-adaptive", "lowrank-cvx"), default="skeleton")
    b.add_argument("--ratios", type=lambda t: [float(x) for x in t.split(",")], default=[1.0, 1.5, 2.0, 2.5, 3.0, 4.0])
    b.add_argument("--seeds", type=_positive_int, default=3)
    b.add_argument("--arith", type=_arith, default="float64")
    b.add_argument("--probes", choices=("gaussian", "basis"), default="gaussian")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--json", action="store_true")
    b.set_defaults(run=_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "recover":
        low_rank = args.learner in ("skeleton", "skeleton-adaptive", "lowrank-cvx")
        if args.learner in ("noisy", "lowrank-cvx") and args.arith != "float64":
            parser.error(f"argument --arith: the {args.learner} learner runs in float64")
        if low_rank and args.rank is None:
            parser.error(f"argument --rank: required by the {args.learner} learner")
        if args.rank is not None and not low_rank:
            parser.error("argument --rank: only the low-rank learners take a rank")
        if args.rank is not None and args.rank > args.d:
            parser.error(f"argument --rank: must be <= d = {args.d}")
    if args.command == "bench" and args.what == "lowrank" and (not args.rank or len(args.rank) != len(args.d)):
        parser.error("argument --rank: bench lowrank needs one rank per --d (e.g. --d 1024,4096 --rank 32,128)")
    try:
        return args.run(args)
    except AttnproofError as exc:
        print(f"attnproof: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
