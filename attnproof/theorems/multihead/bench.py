"""The bench's side of Sec. 7 and App. C: random Assumption C.1 targets and the Hessian / SBD
experiment (how many Hessians the commutant SBD needs, against the necessity bound)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...arith import FLOAT64, Arith, parse
from ...errors import InvalidInputError
from ...models import MultiHeadAttention
from ...oracles import ValueOracle
from .maps import cayley_bases
from .sbd import (
    fd_hessian,
    fd_queries,
    min_hessians,
    probe_hessian,
    sbd_commutant,
    sbd_random_combination,
    subspace_error,
)


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
