"""Def 2.1 (RUB, Cai and Zhang 2015) computed with certified bounds for a drawn ROP ensemble.

The rank-one projection (ROP) operator of Thm 5.1 / App. A.1 is ``A(Z)_k = a_k^T Z b_k``
(k = 1..m) with Gaussian ``a_k, b_k``.  It satisfies the *restricted uniform boundedness*
condition of order t with constants C1, C2 (Def 2.1 as App. A.1 cites it) when

    C1 <= ||A(Z)||_1 / (m ||Z||_F) <= C2   for every nonzero Z with rank Z <= t.

The best constants of a drawn ensemble are ``c1(t) = inf`` and ``c2(t) = sup`` of that ratio over
the rank-<=t matrices: an inf of a convex function over a non-convex set, and a sup.
:func:`rub_bracket` computes them by **branch and bound with interval enclosures**:

* the unit sphere of each factor is covered (up to sign, which |.| ignores) by the faces
  ``x_i = 1`` of the cube [-1, 1]^n (every unit u is +-x / ||x|| with x = u / u_i, i = argmax |u_i|);
* on a box X of a face, ``g^T x`` lies in ``[g^T c - sum |g_j| h_j, g^T c + sum |g_j| h_j]``
  (c the centre, h the half-widths; exact interval arithmetic of a linear form) and ``||x||``
  in ``[||nearest point||, ||farthest corner||]``, so ``|g^T x| / ||x||`` lies in
  ``[mig / nmax, mag / nmin]``; the ratio over a product of boxes is enclosed by summing the
  products of these enclosures; with the other factors at their enclosures, each factor's
  weighted sum sum_k c_k |g_k^T x| is convex in x and gets the two sharper enclosures below.  With
  one factor, N(x) = sum_k |g_k^T x| is convex, and two
  sharper enclosures are used as well: N(x) >= s^T x >= s^T c - |s|^T h for any
  s = sum_k eps_k g_k with |eps_k| <= 1 (s = the subgradient at c), and the maximum of N over a
  box is attained at one of its corners;
* the float64 rounding of the enclosure is covered: the centre's dot product is off by at most
  ``gamma_n sum |g_j c_j|`` (Higham, Thm 3.5; gamma_n = n u / (1 - n u)), added to the radius,
  and every later step adds, multiplies or divides non-negative numbers, whose relative error
  is below ``ROUNDING_SLACK`` (applied outward to both ends);
* boxes whose lower enclosure (for the inf) lies above a value attained at some centre are
  discarded; the others are halved along their widest side until the enclosure's gap is below
  ``rtol`` or ``max_boxes`` boxes were enclosed.  The certified bound is the extreme enclosure
  over the boxes kept (and the value attained), so it is a proof for that ensemble whatever the
  budget: a smaller budget only widens the bracket.

Two parametrisations are used (each is exactly the set the constant ranges over):

* ``rank 1``: ``Z = u v^T``, u, v unit (||Z||_F = 1): two factors with rows a_k and b_k;
* ``all``: every Z (rank <= d): one factor, the rows ``vec(a_k b_k^T)`` in R^{d^2}.

The attained values (the best centre found) bracket each constant from the other side.

**The recovery condition** (:func:`recovery_condition`).  The paper quotes Thm A.2 without its
condition (paper lines 410-416: "RUB with the required condition"), and Cai and Zhang's text
was not at hand to copy their constant; the condition checked here is therefore proven in
full below, so that a certified pass is a proof of exact recovery for that ensemble
independently of the citation.  It has their form (RUB of order about kr with C2 / C1 < sqrt(k)):

    **Lemma.**  Let r, s >= 1, c1 = inf of the ratio over rank <= r + s - 1, c2 = sup over
    rank <= s (both capped at rank d).  If c2 < sqrt(s / r) c1, then for every W of rank <= r
    the nuclear-norm program (7) with y = A(W) has W as its unique solution.

    *Proof.*  Let W + H be a solution, so A(H) = 0 and ||W + H||_* <= ||W||_*; suppose H != 0
    (singular values s_1 >= s_2 >= ...).  Mirsky's inequality ||W + H||_* >= sum_i
    |s_i(W) - s_i(H)| gives ||W||_* >= sum_{i<=r} (s_i(W) - s_i(H)) + sum_{i>r} s_i(H), so the
    tail H_- (components > r) has ||H_-||_* <= ||H_r||_* for the head H_r (components <= r).
    Put alpha = ||H_r||_* / s > 0 (H_r = 0 would force H = 0).  Let H_mid be the j tail
    components above alpha: j alpha < ||H_-||_* <= s alpha, so j <= s - 1, and the head
    H_h = H_r + H_mid has rank <= r + s - 1.  The rest H_lo has singular values <= alpha and
    sum <= (s - j) alpha, so (Cai and Zhang's sparse representation of a polytope, 2014, Lemma
    1.1, applied to its singular values in its singular vectors) H_lo = sum_i lambda_i B_i, a
    convex combination with rank B_i <= s - j <= s and ||B_i||_F <= sqrt(s - j) alpha.  From
    A(H_h) = -A(H_lo):  m c1 ||H_h||_F <= ||A(H_h)||_1 <= sum_i lambda_i ||A(B_i)||_1 <=
    m c2 sqrt(s - j) alpha, while ||H_h||_F^2 >= ||H_r||_*^2 / r + j alpha^2 = (s^2 / r + j)
    alpha^2.  So c1^2 (s^2 / r + j) <= c2^2 (s - j), i.e. (c2 / c1)^2 >= (s^2/r + j) / (s - j)
    >= s / r, contradicting the hypothesis.  (If H_lo = 0, A(H_h) = 0 contradicts c1 > 0.)  []

With s >= d - r + 1 both constants range over all d x d matrices and a pass is no more than
injectivity of A (m >= d^2): the lemma has content only where r + s - 1 < d.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import mpmath
import numpy as np

from ...errors import InvalidInputError
from ...verify.enclosures import own_certificate
from ...verify.registry import BoundClaim, bound

#: Unit roundoff of float64.
UNIT_ROUNDOFF = 2.0**-53


def _gamma(n: int) -> float:
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of an n-term float sum."""
    return n * UNIT_ROUNDOFF / (1 - n * UNIT_ROUNDOFF)


def ensemble(d: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian ROP ensemble of Thm 5.1: rows a_k, b_k ~ N(0, I_d), each of shape (m, d)."""
    if not (isinstance(d, int) and d >= 1 and isinstance(m, int) and m >= 1):
        raise InvalidInputError(f"d and m must be integers >= 1; got d={d!r}, m={m!r}")
    return rng.standard_normal((m, d)), rng.standard_normal((m, d))


def rub_ratio(a: np.ndarray, b: np.ndarray, Z: np.ndarray) -> float:
    """||A(Z)||_1 / (m ||Z||_F) with A(Z)_k = a_k^T Z b_k (Def 2.1's ratio), in float64."""
    m = a.shape[0]
    return float(np.abs(np.einsum("ki,ij,kj->k", a, Z, b)).sum() / (m * np.linalg.norm(Z)))


@dataclass(frozen=True)
class Bracket:
    """Certified bracket of one RUB constant of one ensemble.

    ``certified`` is a proof (a lower bound on c1 = inf, an upper bound on c2 = sup);
    ``attained`` is the ratio at a concrete matrix ``Z`` (the other side of the bracket);
    ``boxes`` how many boxes were enclosed, ``seconds`` the time taken.
    """

    sense: str
    rank: str
    certified: float
    attained: float
    Z: np.ndarray
    boxes: int
    seconds: float

    @property
    def gap(self) -> float:
        """Relative width |attained - certified| / attained of the bracket."""
        return abs(self.attained - self.certified) / self.attained


#: Relative slack covering the rounding of the non-negative part of an enclosure (products,
#: quotients and an m-term sum of non-negative numbers: far below 1e-12 for m < 10^3).
ROUNDING_SLACK = 1e-12


def _factors(a: np.ndarray, b: np.ndarray, rank: str) -> list[np.ndarray]:
    """The coefficient rows of each factor of the parametrisation (see module doc)."""
    if rank == "1":
        return [a, b]
    if rank == "all":
        return [np.einsum("ki,kj->kij", a, b).reshape(a.shape[0], -1)]
    raise InvalidInputError(f"rank must be '1' or 'all'; got {rank!r}")


def _norm_range(l: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least and the largest ||x|| over each box [l, h] (the nearest point, the farthest corner)."""
    nearest = np.where((l <= 0) & (h >= 0), 0.0, np.minimum(np.abs(l), np.abs(h)))
    far = np.maximum(np.abs(l), np.abs(h))
    return np.sqrt((nearest**2).sum(axis=1)), np.sqrt((far**2).sum(axis=1))


def _enclose(
    G: list[np.ndarray], lo: list[np.ndarray], hi: list[np.ndarray], sign: float
) -> tuple[np.ndarray, np.ndarray]:
    """A lower enclosure of ``sign * ratio`` on each box, and the ratio at each centre."""
    m = G[0].shape[0]
    if len(G) == 1:  # N(x) = sum_k |g_k^T x| is convex: sharper enclosures on a box
        g, l, h = G[0], lo[0], hi[0]
        n = g.shape[1]
        c, w = (l + h) / 2, (h - l) / 2
        P = c @ g.T
        nmin, nmax = _norm_range(l, h)
        mid = np.abs(P).sum(axis=1) / (m * np.sqrt((c**2).sum(axis=1)))
        err = (_gamma(m + n + 4) + UNIT_ROUNDOFF) * ((np.abs(c) + w) @ np.abs(g).T).sum(axis=1)
        if sign > 0:  # any s = sum_k eps_k g_k, |eps_k| <= 1: N(x) >= s^T x >= s^T c - |s|^T w
            sv = np.sign(P) @ g
            support = (sv * c).sum(axis=1) - (np.abs(sv) * w).sum(axis=1) - err
            return np.maximum(support, 0.0) / (m * nmax) * (1 - ROUNDING_SLACK), mid
        top = np.zeros(len(c))  # a convex function's maximum over a box is at a corner
        for corner in itertools.product((False, True), repeat=n):  # the exact corners
            top = np.maximum(top, np.abs(np.where(corner, h, l) @ g.T).sum(axis=1))
        return -(top + err) / (m * nmin) * (1 + ROUNDING_SLACK), mid
    lows, highs, mids = [], [], []
    for g, l, h in zip(G, lo, hi, strict=True):  # interval products (the rows a_k, b_k are exact)
        n = g.shape[1]
        c, w = (l + h) / 2, (h - l) / 2
        centre = c @ g.T
        rad = (w @ np.abs(g).T) * (1 + _gamma(n + 2)) + _gamma(n + 2) * (np.abs(c) @ np.abs(g).T)
        nmin, nmax = _norm_range(l, h)
        lows.append(np.maximum(np.abs(centre) - rad, 0.0) / nmax[:, None])
        highs.append((np.abs(centre) + rad) / nmin[:, None])
        mids.append(np.abs(centre) / np.sqrt((c**2).sum(axis=1))[:, None])
    mid = np.prod(mids, axis=0).mean(axis=1)
    slack = _gamma(m + 8)
    if sign > 0:
        best = np.prod(lows, axis=0).mean(axis=1)
        # sharper: with the other factor at its lower enclosure c_k >= 0, sum_k c_k |g_k^T x| is
        # convex in x and >= s^T x >= s^T c - |s|^T w for s = sum_k eps_k c_k g_k, |eps_k| <= 1
        for f, (g, l, h) in enumerate(zip(G, lo, hi, strict=True)):
            weight = np.prod([lows[o] for o in range(len(G)) if o != f], axis=0)
            c, w = (l + h) / 2, (h - l) / 2
            sv = (np.sign(c @ g.T) * weight) @ g
            err = slack * ((weight * ((np.abs(c) + w) @ np.abs(g).T)).sum(axis=1))
            support = (sv * c).sum(axis=1) - (np.abs(sv) * w).sum(axis=1) - err
            best = np.maximum(best, np.maximum(support, 0.0) / (m * _norm_range(l, h)[1]))
        return best * (1 - ROUNDING_SLACK), mid
    best = np.prod(highs, axis=0).mean(axis=1)
    # sharper: with the other factor at its upper enclosure, sum_k C_k |g_k^T x| is convex in x:
    # its maximum over the box is at a corner
    for f, (g, l, h) in enumerate(zip(G, lo, hi, strict=True)):
        weight = np.prod([highs[o] for o in range(len(G)) if o != f], axis=0)
        c, w = (l + h) / 2, (h - l) / 2
        top = np.zeros(len(c))
        for corner in itertools.product((False, True), repeat=g.shape[1]):  # the exact corners
            top = np.maximum(top, (weight * np.abs(np.where(corner, h, l) @ g.T)).sum(axis=1))
        err = slack * ((weight * ((np.abs(c) + w) @ np.abs(g).T)).sum(axis=1))
        best = np.minimum(best, (top + err) * (1 + slack) / (m * _norm_range(l, h)[0]))
    return -best * (1 + ROUNDING_SLACK), mid


def _initial_boxes(G: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One box per combination of cube faces x_i = 1 (one face per factor)."""
    faces = [range(g.shape[1]) for g in G]
    combos = list(itertools.product(*faces))
    lo, hi = [], []
    for f, g in enumerate(G):
        n = g.shape[1]
        l, h = -np.ones((len(combos), n)), np.ones((len(combos), n))
        for row, combo in enumerate(combos):
            l[row, combo[f]] = h[row, combo[f]] = 1.0
        lo.append(l)
        hi.append(h)
    return lo, hi


def _centre_matrix(
    G: list[np.ndarray], lo: list[np.ndarray], hi: list[np.ndarray], i: int, d: int
) -> np.ndarray:
    """The unit-Frobenius matrix Z at the centre of box i."""
    x = [(l[i] + h[i]) / 2 for l, h in zip(lo, hi, strict=True)]
    Z = np.outer(x[0], x[1]) if len(x) == 2 else x[0].reshape(d, d)
    return Z / np.linalg.norm(Z)


def rub_bracket(
    a: np.ndarray, b: np.ndarray, rank: str, sense: str, rtol: float = 0.02, max_boxes: int = 200_000,
    batch: int = 4096, target: float | None = None,
) -> Bracket:
    """Certified bracket of c1 (``sense="inf"``) or c2 (``sense="sup"``) over ``rank`` "1" or "all".

    Branch and bound with interval enclosures (module doc): terminates after at most
    ``max_boxes`` enclosed boxes (+ at most ``2 batch``: each round splits at most ``batch``), or earlier when
    the bracket's relative gap is below ``rtol``.  The certified end is a proof for the
    ensemble whatever the budget.  With a ``target``, the search only decides
    ``c1 >= target`` (inf) or ``c2 <= target`` (sup): boxes whose enclosure settles it are let go,
    and it stops as soon as a centre attains the other side; ``certified`` then proves the
    target when it lies on the target's side.

    Raises
    ------
    InvalidInputError
        Unknown rank or sense, or a, b not of the same shape (m, d).
    """
    if sense not in ("inf", "sup"):
        raise InvalidInputError(f"sense must be 'inf' or 'sup'; got {sense!r}")
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 2 or a.shape != b.shape:
        raise InvalidInputError(f"a and b must both have shape (m, d); got {a.shape}, {b.shape}")
    d = a.shape[1]
    t0 = time.perf_counter()
    G = _factors(a, b, rank)
    lo, hi = _initial_boxes(G)
    sign = 1.0 if sense == "inf" else -1.0  # work on a minimisation of sign * ratio
    best, best_Z, boxes = math.inf, None, 0
    done_bound = math.inf  # the least lower enclosure of sign * ratio over the boxes let go
    enc = np.empty(0)
    fresh_lo, fresh_hi = lo, hi
    lo, hi = [l[:0] for l in lo], [h[:0] for h in hi]
    while True:
        enclosure, mid = _enclose(G, fresh_lo, fresh_hi, sign)
        boxes += len(mid)
        value = sign * mid
        i = int(np.argmin(value))
        if value[i] < best:
            best, best_Z = float(value[i]), _centre_matrix(G, fresh_lo, fresh_hi, i, d)
        lo = [np.concatenate([l, f]) for l, f in zip(lo, fresh_lo, strict=True)]
        hi = [np.concatenate([h, f]) for h, f in zip(hi, fresh_hi, strict=True)]
        enc = np.concatenate([enc, enclosure])
        if target is None:
            keep = enc < best - rtol * abs(best)  # boxes that could still widen the bracket
        else:  # boxes not yet settled on the target's side (none matter once a centre crosses it)
            keep = enc < sign * target if best >= sign * target else np.zeros(len(enc), dtype=bool)
        if (~keep).any():
            done_bound = min(done_bound, float(enc[~keep].min()))
            lo, hi, enc = [l[keep] for l in lo], [h[keep] for h in hi], enc[keep]
        if not len(enc) or boxes >= max_boxes:
            bound = min(done_bound, float(enc.min()) if len(enc) else math.inf, best)
            break
        order = np.argsort(enc)
        idx, rest = order[:batch], order[batch:]  # split the most promising boxes
        widths = np.concatenate([h[idx] - l[idx] for l, h in zip(lo, hi, strict=True)], axis=1)
        cut = np.argmax(widths, axis=1)
        fresh_lo, fresh_hi = [], []
        offset = 0
        for l, h in zip(lo, hi, strict=True):
            n = l.shape[1]
            L1, H1, L2, H2 = l[idx].copy(), h[idx].copy(), l[idx].copy(), h[idx].copy()
            rows = np.flatnonzero((cut >= offset) & (cut < offset + n))
            half = (L1[rows, cut[rows] - offset] + H1[rows, cut[rows] - offset]) / 2
            H1[rows, cut[rows] - offset] = half
            L2[rows, cut[rows] - offset] = half
            fresh_lo.append(np.concatenate([L1, L2]))
            fresh_hi.append(np.concatenate([H1, H2]))
            offset += n
        lo, hi, enc = [l[rest] for l in lo], [h[rest] for h in hi], enc[rest]
    certified = sign * bound
    return Bracket(sense, rank, certified, sign * best, best_Z, boxes, time.perf_counter() - t0)


@dataclass(frozen=True)
class Condition:
    """The lemma's condition ``c2 < sqrt(s / r) c1`` (module doc) decided for one ensemble.

    ``holds`` is a proof (certified c2 upper bound < sqrt(s / r) x certified c1 lower bound);
    ``c1``, ``c2`` the brackets used; ``relaxed`` says whether they range over every d x d
    matrix rather than exactly rank <= r + s - 1 and rank <= s (a superset: still valid bounds).
    """

    r: int
    s: int
    holds: bool
    c1: Bracket
    c2: Bracket
    relaxed: bool
    seconds: float

    @property
    def certified_ratio(self) -> float:
        """The certified upper bound on c2 / c1."""
        return self.c2.certified / self.c1.certified if self.c1.certified > 0 else math.inf

    @property
    def attained_ratio(self) -> float:
        """c2 / c1 at the attained values: a lower bound on the true ratio (the condition fails
        for sure when this is >= sqrt(s / r))."""
        return self.c2.attained / self.c1.attained


def recovery_condition(
    a: np.ndarray, b: np.ndarray, r: int, s: int | None = None, max_boxes: int = 400_000
) -> Condition:
    """Decide the lemma's condition (module doc) for the ensemble (a, b), rank r, s = 2r by default.

    A short search first attains values of c1 and c2; the target tau between c2 and
    sqrt(s / r) c1 (their geometric mean) is then proven or refuted on both sides with
    :func:`rub_bracket` (target mode), which lets go of every box already on the right side.
    The constants are taken over every d x d matrix (rank "all"), a valid relaxation of the
    rank-restricted ones that is exact when r + s - 1 >= d and s >= d.
    """
    d = a.shape[1]
    if not (isinstance(r, int) and r >= 1):
        raise InvalidInputError(f"r must be an integer >= 1; got {r!r}")
    s = 2 * r if s is None else s
    if not (isinstance(s, int) and s >= 1):
        raise InvalidInputError(f"s must be an integer >= 1; got {s!r}")
    t0 = time.perf_counter()
    k = math.sqrt(s / r)
    probe1 = rub_bracket(a, b, "all", "inf", max_boxes=4000)
    probe2 = rub_bracket(a, b, "all", "sup", max_boxes=4000)
    if probe2.attained >= k * probe1.attained:  # attained values already violate it: refuted
        c1, c2 = probe1, probe2
    else:
        tau = math.sqrt(probe2.attained * k * probe1.attained)
        c2 = rub_bracket(a, b, "all", "sup", target=tau, max_boxes=max_boxes)
        # a relative margin of 1e-4 above c2 / sqrt(s / r): the pass survives rounding of the claim
        c1 = rub_bracket(a, b, "all", "inf", target=c2.certified / k * (1 + 1e-4), max_boxes=max_boxes)
    holds = bool(c2.certified < k * c1.certified)
    relaxed = not (r + s - 1 >= d and s >= d)
    return Condition(r, s, holds, c1, c2, relaxed, time.perf_counter() - t0)


def certified_fraction(
    d: int, r: int, ms: list[int], seeds: range, max_boxes: int = 400_000
) -> list[dict[str, float]]:
    """Thm A.2's probability statement measured: for each m, the fraction of drawn ensembles
    (seeds) whose condition :func:`recovery_condition` proves within ``max_boxes`` boxes per
    bracket (an undecided one counts as not proven), with C = m / (r (2d)) beside it."""
    rows = []
    for m in ms:
        conds = [recovery_condition(*ensemble(d, m, np.random.default_rng(seed)), r, max_boxes=max_boxes)
                 for seed in seeds]
        rows.append({
            "d": d, "r": r, "m": m, "C": m / (r * 2 * d),
            "fraction": float(np.mean([c.holds for c in conds])),
            "worst_certified_ratio": max(c.certified_ratio for c in conds),
            "seconds": sum(c.seconds for c in conds),
        })
    return rows


def _sample_ratios(a: np.ndarray, b: np.ndarray, rank: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """The ratio at ``n`` random matrices of the set (Gaussian factors): an independent check of
    a bracket, by plain evaluation rather than the enclosures."""
    d = a.shape[1]
    if rank == "1":
        Z = np.einsum("ni,nj->nij", rng.standard_normal((n, d)), rng.standard_normal((n, d)))
    else:
        Z = rng.standard_normal((n, d, d))
    vals = np.abs(np.einsum("ki,nij,kj->nk", a, Z, b)).sum(axis=1)
    return vals / (a.shape[0] * np.linalg.norm(Z, axis=(1, 2)))


#: The ensembles of ``def2.1/rub-certified``: (d, m, seed, rank, rtol).  The rank-1 search at
#: d = 3 (a four-dimensional box) closes more slowly: its gap is allowed 15 %.
RUB_CERTIFIED_CASES = ((2, 40, 0, "all", 0.05), (2, 40, 0, "1", 0.05), (3, 24, 0, "1", 0.15))
#: Box budget of each registered bracket (seconds on one core).
RUB_CERTIFIED_BOXES = 60_000


def _iv(x: float) -> mpmath.iv.mpf:
    """A float64 as an exact interval (53 bits fit any mpmath precision)."""
    return mpmath.iv.mpf(float(x))


#: Grid the claims of the RUB bounds are rounded outward to, so that their hash does not depend
#: on the last bits of a BLAS build (rounding outward keeps them rigorous).
CLAIM_GRID = 10**6


def _outward(q: mpmath.iv.mpf) -> mpmath.iv.mpf:
    """The interval q widened to the grid 1 / CLAIM_GRID (still an enclosure)."""
    lo, hi = math.floor(float(q.a) * CLAIM_GRID - 1), math.ceil(float(q.b) * CLAIM_GRID + 1)
    return mpmath.iv.mpf([mpmath.mpf(lo) / CLAIM_GRID, mpmath.mpf(hi) / CLAIM_GRID])


@bound(
    id="def2.1/rub-certified",
    paper="Def 2.1 (App. A.1; Cai and Zhang 2015)",
    statement=r"\underline{C}_1 \le \inf_{\operatorname{rank} Z \le t} "
    r"\frac{\|\mathcal A(Z)\|_1}{m\|Z\|_F} \le \hat C_1,\quad \hat C_2 \le "
    r"\sup_{\operatorname{rank} Z \le t} \frac{\|\mathcal A(Z)\|_1}{m\|Z\|_F} \le \overline{C}_2 "
    r"\ \text{for drawn Gaussian ROP ensembles, gaps} \le \mathrm{rtol}",
    assumptions="RUB_CERTIFIED_CASES: (d, m, seed, t, rtol) = (2, 40, 0, all = rank <= 2, 0.05), "
    "(2, 40, 0, 1, 0.05), (3, 24, 0, 1, 0.15), a_k, b_k ~ N(0, I_d) from numpy's default_rng(seed); "
    "the certified ends by branch and bound with interval enclosures (rub_bracket, float64 with its "
    "rounding covered), the attained "
    "ends at concrete Z; each certified end is checked against the ratio at 2000 independent random Z "
    "of the set; the gap claim fails when the search stalls",
    scope="listed sizes: d = 2, 3 (drawn ensembles)",
)
def rub_certified() -> list[BoundClaim]:
    claims: list[BoundClaim] = []
    for d, m, seed, rank, rtol in RUB_CERTIFIED_CASES:
        a, b = ensemble(d, m, np.random.default_rng(seed))
        sampled = _sample_ratios(a, b, rank, 2000, np.random.default_rng(seed + 1))
        at = f"d={d}, m={m}, seed={seed}, rank {rank}"
        for sense in ("inf", "sup"):
            # searched to 0.8 rtol, so that the claim gap <= rtol has a margin above the grid
            br = rub_bracket(a, b, rank, sense, rtol=0.8 * rtol, max_boxes=RUB_CERTIFIED_BOXES)
            sgn = 1 if sense == "inf" else -1
            name = "c1" if sense == "inf" else "c2"
            edge = sampled.min() if sgn > 0 else sampled.max()
            claims += [
                (f"{at}: {name} certified on the right side of the attained value",
                 _outward(sgn * (_iv(br.attained) - _iv(br.certified)))),
                (f"{at}: {name} certified on the right side of 2000 sampled ratios",
                 _outward(sgn * (_iv(edge) - _iv(br.certified)))),
                (f"{at}: {name} bracket gap <= rtol = {rtol}",
                 _outward(_iv(rtol) * _iv(br.attained) - abs(_iv(br.attained) - _iv(br.certified)))),
            ]
            if sense == "inf":
                claims.append((f"{at}: c1 > 0 certified", _outward(_iv(br.certified))))
    return claims


own_certificate("branch and bound with interval enclosures (its own certificate)",
                "def2.1/rub-certified", "thmA.2/rub-condition")  # no Arb re-run (verify.enclosures)


#: The ensembles of ``thmA.2/rub-condition``: (d, r, m, seed); s = 2r.
RUB_CONDITION_CASES = ((2, 1, 300, 0),)


@bound(
    id="thmA.2/rub-condition",
    paper="Thm A.2 (App. A.1; Cai and Zhang 2015): RUB with the required condition",
    statement=r"\overline{C}_2 < \sqrt{s / r}\,\underline{C}_1 \ (s = 2r) \Rightarrow "
    r"\text{(7) recovers every rank-}{\le}\,r\ W \text{ exactly from } \mathcal A(W)",
    uses=("def2.1/rub-certified",),
    assumptions="RUB_CONDITION_CASES: (d, r, m, seed) = (2, 1, 300, 0), a Gaussian ROP ensemble drawn "
    "with numpy's default_rng(seed); C1 lower and C2 upper bounds certified by rub_bracket over every "
    "d x d matrix "
    "(exactly the ranks the lemma of attnproof.theorems.lowrank.rub needs at d = 2, r = 1, s = 2); "
    "the implication is that lemma, proven in the module's docstring (Mirsky's inequality and the "
    "sparse representation of a polytope), not a computation",
    scope="listed sizes: d = 2, r = 1 (a drawn ensemble)",
)
def rub_condition() -> list[BoundClaim]:
    claims: list[BoundClaim] = []
    for d, r, m, seed in RUB_CONDITION_CASES:
        cond = recovery_condition(*ensemble(d, m, np.random.default_rng(seed)), r)
        claims.append((
            f"d={d}, r={r}, s={cond.s}, m={m}, seed={seed}: sqrt(s / r) C1_lower - C2_upper",
            _outward(mpmath.iv.sqrt(mpmath.iv.mpf(cond.s) / r) * _iv(cond.c1.certified)
                     - _iv(cond.c2.certified)),
        ))
    return claims


__all__ = ["ensemble", "rub_ratio", "Bracket", "rub_bracket", "Condition", "recovery_condition",
           "certified_fraction"]
