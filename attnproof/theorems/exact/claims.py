"""The ledger's claims of Thm 4.1: exact learning from value queries.

Bhattamishra et al., *Provably Learning Attention with Queries* (arXiv 2601.16873).  Each claim
links its checks one per line (``id:``, ``test:``, ``xfail:``, ``bench:``, ``learner:``; see
:mod:`attnproof.verify.claims`); :func:`~attnproof.verify.claims.register` files them in the
ledger at :data:`PLACE`, in this list's order.
"""

from __future__ import annotations

from ...verify.claims import T, claim, register

#: This room's place in the ledger's order (the paper's section).
PLACE = (4,)

register(PLACE, claims=[
    claim("thm4.1/phase-i", "Thm 4.1, proof (i)", "equation", "exact",
       r"$f([x^\top]) = x^\top v$, independent of $W$: $d$ one-row queries give $v^\star$",
       "id:thm4.1/one-token",
       f"test:{T}models.py::test_one_token_is_linear_and_ignores_W",
       depends=("sec3/model",)),
    claim("thm4.1/eq1", "Thm 4.1, Eq. (1)", "equation", "exact",
       r"$\alpha(u; j) = \sigma(s_1 - s_2) = \sigma(u^\top w_j)$ for $X = [(u + e_j)^\top; e_j^\top]$",
       "id:thm4.1/softmax-to-sigmoid",
       "id:thm4.1/score-difference",
       "id:thm4.1/probes-all-d",
       f"test:{T}measure.py::test_session_measures_p_W_q_within_its_error_model",
       depends=("sec3/model",)),
    claim("thm4.1/label", "Thm 4.1, proof (ii)", "equation", "exact",
       r"$y = v_j + \alpha(u; j)\, u^\top v$, so $u^\top w_j = \sigma^{-1}((y - v_j)/u^\top v)$",
       "id:thm4.1/label-affine",
       f"test:{T}measure.py::test_session_measurements_are_exact_in_mpmath_to_the_working_precision",
       depends=("thm4.1/eq1",)),
    claim("thm4.1/basis-probes", "Thm 4.1, proof (ii)", "equation", "exact",
       r"$u_\ell = e_\ell$ if $v_\ell \ne 0$, else $e_\ell + e_p$: $t_\ell = W_{\ell j}$ or "
       r"$W_{\ell j} + W_{pj}$",
       f"test:{T}exact.py::test_sparse_v_uses_the_papers_paired_probes",
       "id:thm4.1/end-to-end-paired",
       "bench:exact d=4 probes=basis",
       depends=("thm4.1/label",)),
    claim("thm4.1/gaussian-probes", "Thm 4.1, proof (ii)", "probability", "exact",
       r"Gaussian $u_1, \dots, u_d$ are independent with $u_\ell^\top v \ne 0$ almost surely",
       f"test:{T}exact.py::test_degenerate_gaussian_row_is_redrawn_and_reported",
       "bench:exact d=16 probes=gaussian",
       depends=("thm4.1/label",)),
    claim("thm4.1/queries", "Thm 4.1", "query count", "exact",
       r"$d + d^2$ value queries",
       "id:thm4.1/query-count",
       f"test:{T}exact.py::test_exactly_d_plus_d2_queries_when_no_probe_saturates",
       "bench:exact d=8",
       depends=("thm4.1/phase-i",)),
    claim("thm4.1/v-zero", "Thm 4.1, proof", "result", "exact",
       r"If $v^\star = 0$ then $f \equiv 0$ and $W^\star$ is not identifiable",
       f"test:{T}exact.py::test_v_zero_is_not_identifiable",
       f"test:{T}strategies.py::test_zero_v_targets",
       reason="a negative statement: shown by the learner's typed refusal on v* = 0 targets"),
    claim("thm4.1", "Thm 4.1", "result", "exact",
       r"For $v^\star \ne 0$, $(W^\star, v^\star)$ is exactly learnable in polynomial time with "
       r"$O(d^2)$ value queries",
       "learner:exact",
       "id:thm4.1/end-to-end-d2",
       "id:thm4.1/end-to-end-d3",
       "id:thm4.1/end-to-end-bias",
       "id:bias/expansion-all-d",
       "id:thm4.1/run-high-precision",
       "id:thm4.1/run-tight",
       f"test:{T}exact.py::test_sympy_recovery_is_exact",
       f"test:{T}exact.py::test_float64_recovery_within_derived_bound",
       "bench:exact d=8",
       "bench:exact d=6 arith=mp:60",
       depends=("thm4.1/phase-i", "thm4.1/eq1", "thm4.1/label", "thm4.1/basis-probes",
                "thm4.1/gaussian-probes", "thm4.1/queries")),
])
