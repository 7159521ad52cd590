"""attnproof: learning attention with queries, every step proven and tested.

Reference: Bhattamishra, Shah, Hahn, Kanade, "Provably Learning Attention with Queries"
(arXiv 2601.16873).

The package exports every registered learner (:data:`attnproof.verify.registry.LEARNERS`), the targets
they learn (:mod:`attnproof.models`) and the oracles they ask (:mod:`attnproof.oracles`).
Importing it imports every room (:mod:`attnproof.theorems`), which registers the identities and
learners, except in the command line's own process (``attnproof ...``, ``python -m
attnproof.cli``): there the rooms (and sympy) are imported when a command runs, so that
``attnproof --help`` and a mistyped argument answer at once (issue 18 item 8); the names
below are then read on first use.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

__version__ = "0.1.0"

#: every export -> the module (below this package) that defines it
_EXPORTS: dict[str, str] = {
    "Arith": "arith",
    "FLOAT64": "arith",
    "MP": "arith",
    "SYMPY": "arith",
    "Attention": "models",
    "FactoredAttention": "models",
    "OneLayerTransformer": "models",
    "MultiHeadAttention": "models",
    "ReluFFN": "models",
    "ValueOracle": "oracles",
    "ApproxOracle": "oracles",
    "MembershipOracle": "theorems.membership",
    "Recovery": "recovery",
    "score": "recovery",
    "learn_exact": "theorems.exact",
    "learn_noisy": "theorems.noisy",
    "learn_skeleton": "theorems.lowrank",
    "learn_skeleton_adaptive": "theorems.lowrank",
    "learn_lowrank_cvx": "theorems.lowrank",
    "learn_membership": "theorems.membership",
    "learn_membership_rotated": "theorems.membership",
    "learn_orthogonal_heads": "theorems.multihead",
    "learn_multihead_sbd": "theorems.multihead",
    "learn_ffn": "theorems.transformer",
    "learn_transformer": "theorems.transformer",
}


def __getattr__(name: str) -> Any:
    """An export, imported on first use (only the command line's process gets here)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def _command_line_process() -> bool:
    """Whether this process was started as the command line: the ``attnproof`` script, or
    ``python [options] -m attnproof.cli`` (read from the interpreter's own arguments)."""
    if os.path.basename(sys.argv[0] if sys.argv else "") == "attnproof":
        return True
    args = iter(getattr(sys, "orig_argv", [])[1:])
    for a in args:
        if a == "-m":
            return next(args, None) == "attnproof.cli"
        if a in ("-X", "-W"):  # an interpreter option with its value apart
            next(args, None)
        elif not a.startswith("-") or a in ("-", "-c"):
            return False  # a script, stdin or a command string: not the command line
    return False


if not _command_line_process():
    for _name in _EXPORTS:
        __getattr__(_name)

__all__ = [*_EXPORTS, "__version__"]
