"""attnproof: learning attention with queries, every step proven and tested.

Reference: Bhattamishra, Shah, Hahn, Kanade, "Provably Learning Attention with Queries"
(arXiv 2601.16873).
"""

from .arith import FLOAT64, MP, SYMPY, Arith
from .models import Attention, FactoredAttention, MultiHeadAttention, OneLayerTransformer
from .oracles import ApproxOracle, ValueOracle
from .recovery import Recovery, score
from .theorems.exact import learn_exact
from .theorems.lowrank import learn_lowrank_cvx, learn_skeleton, learn_skeleton_adaptive
from .theorems.noisy import learn_noisy

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
    "ValueOracle",
    "ApproxOracle",
    "Recovery",
    "score",
    "learn_exact",
    "learn_noisy",
    "learn_skeleton",
    "learn_skeleton_adaptive",
    "learn_lowrank_cvx",
    "__version__",
]
