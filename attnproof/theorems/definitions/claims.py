"""The ledger's claims of Sec. 3: the model and its merged parametrisation.

Bhattamishra et al., *Provably Learning Attention with Queries* (arXiv 2601.16873).  Each claim
links its checks one per line (``id:``, ``test:``, ``xfail:``, ``bench:``, ``learner:``; see
:mod:`attnproof.verify.claims`); :func:`~attnproof.verify.claims.register` files them in the
ledger at :data:`PLACE`, in this list's order.
"""

from __future__ import annotations

from ...verify.claims import T, claim, register

#: This room's place in the ledger's order (the paper's section).
PLACE = (3,)

register(PLACE, claims=[
    claim("sec3/model", "Sec. 3", "definition", "intro",
       r"$f_{W,v}(X) = \alpha(X, W)^\top X v$ with $\alpha = \mathrm{softmax}(x_i^\top W x_N)_i$",
       f"test:{T}models.py::test_float_model_matches_mpmath_reference",
       f"test:{T}models.py::test_batch_equals_one_by_one",
       reason="a definition: checked by two independent implementations (float64 vs an mpmath reference)"),
    claim("sec3/qkv-merge", "Sec. 3", "equation", "intro",
       r"$x_i^\top K^\top Q x_N = x_i^\top W x_N$ and $X V^\top w_o = X v$",
       "id:sec3/qkv-merge",
       "id:sec3/qkv-merge-all-d",
       f"test:{T}models.py::test_from_qkv_merges_as_in_sec3",
       depends=("sec3/model",)),
])
