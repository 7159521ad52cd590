"""The ledger's claims of Prop. 7.1, Sec. 7 and App. C (multi-head attention).

Bhattamishra et al., *Provably Learning Attention with Queries* (arXiv 2601.16873).  Each claim
links its checks one per line (``id:``, ``test:``, ``xfail:``, ``bench:``, ``learner:``; see
:mod:`attnproof.verify.claims`); :func:`~attnproof.verify.claims.register` files them in the
ledger at :data:`PLACE`, in this list's order.
"""

from __future__ import annotations

from ...verify.claims import T, claim, register
from .identities import SUFFICIENCY_PATTERNS

#: This room's place in the ledger's order (the paper's section).
PLACE = (7,)

register(PLACE, claims=[
    claim("prop7.1", "Prop. 7.1", "result", "multihead",
       r"Equal $W^{(h)} = A$ and $v^{(h)} = \lambda_h b$ with $\sum \lambda_h = 1$ give the same "
       r"function: multi-head attention is not identifiable",
       "id:prop7.1/multihead-collapse",
       "id:prop7.1/collapse-all-d",
       f"test:{T}multihead.py::test_equivalent_pairs_compute_the_same_function",
       f"test:{T}multihead.py::test_equivalent_pairs_agree_to_mpmath_precision",
       depends=("appC/merge",)),
    claim("sec7/short-inputs", "Sec. 7 (beyond the paper)", "beyond the paper", "multihead",
       r"On inputs of length $\le 2$ the heads $(W, v), (-W, v)$ equal the single head $(0, 2v)$",
       "id:sec7/short-input-decomposition",
       "id:sec7/short-input-flip",
       "id:sec7/short-input-collapse",
       f"test:{T}multihead.py::test_collapse_pair_equal_below_three_tokens_differs_at_three",
       depends=("appC/merge",)),
    claim("appC/merge", "App. C", "equation", "multihead",
       r"$f^H_\theta(X) = \sum_h \alpha^{(h)}(X, W^{(h)})^\top X v^{(h)}$, "
       r"$v^{(h)} = V^{(h)\top} w_o^{(h)}$",
       f"test:{T}models.py::test_transformer_and_multihead_shapes_and_values",
       "id:prop7.1/symmetries",
       depends=("sec3/model",)),
    claim("assumptionC.1", "Assumption C.1", "assumption", "multihead",
       r"Heads in pairwise orthogonal subspaces: $P_g W^{(h)} = W^{(h)} P_g = 0$, "
       r"$v^{(h)} \in U_h \setminus \{0\}$",
       f"test:{T}multihead.py::test_c1_violation_is_never_silently_recovered",
       f"test:{T}multihead.py::test_bad_bases_raise_typed_errors",
       reason="an assumption: checked by the learner's refusal of targets that violate it"),
    claim("propC.2/reduction", "Prop. C.2, proof", "equation", "multihead",
       r"On inputs in $U_h$ only head $h$ contributes, as the single head "
       r"$(E_h^\top W^{(h)} E_h, E_h^\top v^{(h)})$ in dimension $d_h$",
       "id:propC.2/one-head",
       "id:propC.2/reduced-head",
       f"test:{T}multihead.py::test_reduced_oracle_counts_every_query_in_both_places",
       depends=("assumptionC.1", "appC/merge")),
    claim("propC.2/queries", "Prop. C.2, proof", "query count", "multihead",
       r"$\sum_h (d_h + d_h^2)$ queries when the bases are known",
       f"test:{T}multihead.py::test_orthogonal_heads_exact_query_count_without_checks",
       "bench:orthogonal-heads d=4",
       depends=("thm4.1/queries",)),
    claim("propC.2", "Prop. C.2", "result", "multihead",
       r"Under Assumption C.1 multi-head attention is identifiable, uniquely up to a permutation of "
       r"the heads",
       "learner:orthogonal-heads",
       "id:propC.2/end-to-end",
       "id:propC.2/run-high-precision",
       "id:propC.2/run-small-head",
       "id:propC.2/run-lift",
       f"test:{T}multihead.py::test_orthogonal_heads_sympy_is_exact",
       f"test:{T}multihead.py::test_orthogonal_heads_float64_within_bound",
       "bench:orthogonal-heads d=4",
       "bench:orthogonal-heads d=4 arith=mp:60",
       depends=("propC.2/reduction", "propC.2/queries", "thm4.1")),
    claim("appC/hessian", "App. C, conjecture", "equation", "multihead",
       r"$\nabla^2 F = U D_2 U^\top + U D_1 V^\top + (U D_1 V^\top)^\top$ and "
       r"$4 \nabla^2 F(0) = U V^\top + V U^\top$",
       "id:sec7/probe-hessian",
       "id:sec7/hessian-at-zero",
       f"test:{T}multihead.py::test_fd_hessian_matches_closed_form_and_counts_queries",
       depends=("appC/merge",)),
    claim("appC/invariance", "App. C, conjecture", "equation", "multihead",
       r"Each $A^{(j)} = U^{(j)} V^\top + V U^{(j)\top}$ leaves every $S_i$ invariant (block-diagonal "
       r"in a basis of the subspaces)",
       "id:sec7/hessian-invariant",
       f"test:{T}multihead.py::test_commutant_recovers_subspaces_from_max_2_dh_minus_1_hessians",
       depends=("appC/hessian", "assumptionC.1")),
    claim("appC/conjecture", "App. C, conjecture", "conjecture", "multihead",
       r"Under Assumption C.1 multi-head attention is learnable from value (or Hessian) queries",
       "learner:multihead-sbd",
       "id:sec7/run-sbd",
       # sufficiency of K = max(2, d_h - 1) Hessians for almost every C.1 target, per (H, d_h)
       # pattern of the bench: a certified non-zero minor at one rational point (necessity: the
       # lower bound K >= max(2, d_h - 1) in the room's docstring)
       *(f"id:sec7/hessian-count-H{H}-dh{dh}" for H, dh in SUFFICIENCY_PATTERNS),
       f"test:{T}multihead.py::test_sbd_end_to_end_float64_and_mpmath",
       "bench:multihead-sbd d=4 tol=1e-5",
       depends=("appC/invariance", "propC.2"),
       open=True),
])
