"""The ledger's claims of Thm 5.1, with the cited Def. 2.1 and Thm A.2 (Cai and Zhang).

Bhattamishra et al., *Provably Learning Attention with Queries* (arXiv 2601.16873).  Each claim
links its checks one per line (``id:``, ``test:``, ``xfail:``, ``bench:``, ``learner:``; see
:mod:`attnproof.verify.claims`); :func:`~attnproof.verify.claims.register` files them in the
ledger at :data:`PLACE`, in this list's order.

The skeleton's tight run entry, ``thm5.1/run-tight``, is registered by :mod:`.tight`, imported
here.
"""

from __future__ import annotations

from ...verify.claims import T, claim, register
from . import tight  # noqa: F401  (registers thm5.1/run-tight, once: a reload of this module does not)

#: This room's place in the ledger's order (the paper's section).
PLACE = (5,)

register(PLACE, claims=[
    claim("def2.1", "App. A.1 (Cai and Zhang 2015, Def. 2.1)", "cited", "lowrank",
       r"Restricted uniform boundedness (RUB) of the ROP operator $\mathcal{A}$",
       "id:def2.1/rub-certified",
       f"test:{T}lowrank.py::test_rub_bracket_encloses_the_ratio_at_random_matrices",
       reason="computed for drawn Gaussian ROP ensembles: certified brackets (branch and bound with "
              "interval enclosures, rounding covered) at the listed sizes (d = 2: rank <= 2 and rank "
              "1; d = 3: rank 1), attained values from local search on the other side"),
    claim("thmA.2", "Thm A.2 (Cai and Zhang 2015, Thm 2.2, Cor. 2.1)", "cited", "lowrank",
       r"With $m = \Omega(r(d_1 + d_2))$ Gaussian rank-one projections, w.p. $1 - e^{-\Omega(m)}$ "
       r"the nuclear-norm program (7) recovers every rank-$\le r$ matrix",
       "id:thmA.2/rub-condition",
       f"test:{T}lowrank.py::test_nuclear_norm_learner_recovers_a_small_target",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       depends=("def2.1",),
       reason="proven for the listed ensemble (d = 2, r = 1, m = 300, seed 0): the certified RUB "
              "constants meet the recovery condition of the lemma in theorems/lowrank/rub.py; at "
              "d = 2 that is no stronger than injectivity, and rank-restricted sizes beyond it are "
              "out of the branch and bound's reach (measured by the learner instead)"),
    claim("thm5.1/measurement", "Thm 5.1, proof", "equation", "lowrank",
       r"$X = [(a + b)^\top; b^\top]$: $\alpha = \sigma(a^\top W b)$, "
       r"$t = \sigma^{-1}((y - b^\top v)/a^\top v) = \langle a b^\top, W \rangle$",
       "id:thm5.1/rank-one-measurement",
       "id:thm5.1/rank-one-all-d",
       f"test:{T}measure.py::test_probe_batch_builds_the_documented_tokens",
       depends=("thm4.1/eq1", "thm4.1/label")),
    claim("thm5.1/a-not-perp-v", "Thm 5.1, proof", "probability", "lowrank",
       r"$a^\top v^\star \ne 0$ almost surely for Gaussian $a$ when $v^\star \ne 0$",
       f"test:{T}lowrank.py::test_cvx_redraws_probes_with_a_orthogonal_to_v",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       depends=("thm5.1/measurement",)),
    claim("thm5.1/eq2", "Thm 5.1, Eq. (2)", "equation", "lowrank",
       r"$\hat W \in \arg\min \Vert W\Vert_*$ s.t. $\langle a_k b_k^\top, W \rangle = t_k$: convex, "
       r"polynomial time",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       f"test:{T}lowrank.py::test_nuclear_norm_learner_recovers_a_small_target",
       depends=("thm5.1/measurement",)),
    claim("thm5.1/queries", "Thm 5.1", "query count", "lowrank",
       r"$d + m$ queries with $m = O(rd)$",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       f"test:{T}bench.py::test_queries_are_the_learners_formula_plus_counted_reasks",
       depends=("thm4.1/phase-i",)),
    claim("thm5.1", "Thm 5.1", "result", "lowrank",
       r"For $v^\star \ne 0$ and rank $W^\star \le r$, w.p. $\ge 1 - e^{-\Omega(m)}$ exact recovery "
       r"with $d + m$ queries, $m = O(rd)$",
       "learner:lowrank-cvx",
       "id:thm5.1/run-cvx",
       f"test:{T}lowrank.py::test_nuclear_norm_learner_recovers_a_small_target",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       depends=("thmA.2", "thm5.1/measurement", "thm5.1/a-not-perp-v", "thm5.1/eq2", "thm5.1/queries"),
       reason="the probability 1 - exp(-Omega(m)) is the cited Thm A.2's, with an unstated constant: "
              "measured (the low-rank chapter: the fraction of drawn ensembles whose certified RUB "
              "constants meet the condition, d = 2, r = 1: 0/5 at m = 80, 2/5 at 160, 5/5 at 240, so "
              "C ~ 60 in m >= C r (2d) there), not proven in general"),
    claim("thm5.1/skeleton", "beyond Thm 5.1", "beyond the paper", "lowrank",
       r"Deterministic exact recovery at the floor $d + r(2d - r)$ queries (cross approximation)",
       "learner:skeleton",
       "id:thm5.1/skeleton-reconstruction",
       "id:thm5.1/skeleton-end-to-end",
       "id:thm5.1/run-high-precision",
       "id:thm5.1/run-tight",
       "id:thm5.1/query-count",
       f"test:{T}lowrank.py::test_skeleton_uses_exactly_the_floor_and_is_accurate",
       f"test:{T}lowrank.py::test_skeleton_is_exact_in_mpmath",
       "bench:skeleton d=6 rank=2",
       "bench:skeleton d=6 rank=2 arith=mp:60",
       depends=("thm5.1/measurement",)),
])
