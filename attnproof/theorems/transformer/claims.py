"""The ledger's claims of Sec. 4.1: one-layer Transformers, and the FFN learner beyond the paper.

Bhattamishra et al., *Provably Learning Attention with Queries* (arXiv 2601.16873).  Each claim
links its checks one per line (``id:``, ``test:``, ``xfail:``, ``bench:``, ``learner:``; see
:mod:`attnproof.verify.claims`); :func:`~attnproof.verify.claims.register` files them in the
ledger at :data:`PLACE`, in this list's order.
"""

from __future__ import annotations

from ...verify.claims import T, claim, register

#: This room's place in the ledger's order (the paper's section).
PLACE = (4, 1)

register(PLACE, claims=[
    claim("sec4.1/ffn-restriction", "Sec. 4.1", "equation", "transformer",
       r"$\mathrm{VQ}([x^\top]) = w_o^\top \mathrm{ReLU}(x^\top A)$: length-1 queries see the FFN",
       f"test:{T}transformer.py::test_ffn_float64_recovers_every_kind",
       "bench:ffn d=3",
       depends=("sec3/model",)),
    claim("sec4.1/antisymmetry", "Sec. 4.1", "equation", "transformer",
       r"$\widetilde{\mathrm{VQ}}(X) = \mathrm{VQ}(X) - \mathrm{VQ}(-X) = \alpha(X, W)^\top X v$, "
       r"$v = A w_o$",
       "id:sec4.1/relu-as-abs",
       "id:sec4.1/relu-antisymmetry",
       f"test:{T}transformer.py::test_even_ffn_hides_W_from_vq_tilde_but_not_from_vq",
       depends=("sec3/model",)),
    claim("sec4.1/a-ffn", "Sec. 4.1 (assumed algorithm; built beyond the paper)", "beyond the paper",
       "transformer",
       r"An $\mathcal{A}_{\mathrm{FFN}}$ learning a bias-free ReLU FFN exactly from value queries",
       "learner:ffn",
       "id:sec4.1/ffn-end-to-end",
       f"test:{T}transformer.py::test_ffn_sympy_is_exact",
       "bench:ffn d=3",
       "bench:ffn d=3 arith=mp:60",
       depends=("sec4.1/ffn-restriction",)),
    claim("sec4.1/v-zero", "Sec. 4.1", "result", "transformer",
       r"If $A^\star w_o^\star = 0$ then $\widetilde{\mathrm{VQ}} \equiv 0$ and $W^\star$ is not "
       r"identifiable from such queries",
       f"test:{T}transformer.py::test_transformer_with_zero_ffn_is_not_identifiable",
       "id:sec4.1/cone-probe",
       depends=("sec4.1/antisymmetry",)),
    claim("sec4.1/queries", "Sec. 4.1", "query count", "transformer",
       r"$Q_{\mathrm{FFN}}(d, m) + O(d^2)$: each $\widetilde{\mathrm{VQ}}$ costs two value queries",
       f"test:{T}transformer.py::test_ffn_query_ledger_explains_every_extra_query",
       "bench:transformer d=3",
       depends=("thm4.1/queries",)),
    claim("sec4.1", "Sec. 4.1", "result", "transformer",
       r"A one-layer single-head Transformer is learnable from value queries given "
       r"$\mathcal{A}_{\mathrm{FFN}}$ (Thm 4.1 on $\widetilde{\mathrm{VQ}}$)",
       "learner:transformer",
       "id:sec4.1/end-to-end",
       "id:sec4.1/run-high-precision",
       "id:sec4.1/run-bound-tight",
       f"test:{T}transformer.py::test_transformer_sympy_exact_both_routes",
       f"test:{T}transformer.py::test_transformer_float64",
       "bench:transformer d=3",
       "bench:transformer d=3 arith=mp:60",
       depends=("sec4.1/antisymmetry", "sec4.1/a-ffn", "sec4.1/queries", "thm4.1")),
])
