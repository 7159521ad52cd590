"""attnproof: learning attention with queries, every step proven and tested.

Reference: Bhattamishra, Shah, Hahn, Kanade, "Provably Learning Attention with Queries"
(arXiv 2601.16873).

The package exports every registered learner (:data:`attnproof.proof.LEARNERS`), the targets
they learn (:mod:`attnproof.models`) and the oracles they ask (:mod:`attnproof.oracles`).
"""

from .arith import FLOAT64, MP, SYMPY, Arith
from .models import Attention, FactoredAttention, MultiHeadAttention, OneLayerTransformer, ReluFFN
from .oracles import ApproxOracle, MembershipOracle, ValueOracle
from .recovery import Recovery, score
from .theorems.exact import learn_exact
from .theorems.lowrank import learn_lowrank_cvx, learn_skeleton, learn_skeleton_adaptive
from .theorems.membership import learn_membership, learn_membership_rotated
from .theorems.multihead import learn_multihead_sbd, learn_orthogonal_heads
from .theorems.noisy import learn_noisy
from .theorems.transformer import learn_ffn, learn_transformer

__version__ = "0.1.0"

__all__ = [
    "Arith",
    "FLOAT64",
    "MP",
    "SYMPY",
    "Attention",
    "FactoredAttention",
    "OneLayerTransformer",
    "MultiHeadAttention",
    "ReluFFN",
    "ValueOracle",
    "ApproxOracle",
    "MembershipOracle",
    "Recovery",
    "score",
    "learn_exact",
    "learn_noisy",
    "learn_skeleton",
    "learn_skeleton_adaptive",
    "learn_lowrank_cvx",
    "learn_membership",
    "learn_membership_rotated",
    "learn_orthogonal_heads",
    "learn_multihead_sbd",
    "learn_ffn",
    "learn_transformer",
    "__version__",
]
