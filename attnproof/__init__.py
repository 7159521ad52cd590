"""attnproof: learning attention with queries, every step proven and tested.

Reference: Bhattamishra, Shah, Hahn, Kanade, "Provably Learning Attention with Queries"
(arXiv 2601.16873).
"""

from .arith import FLOAT64, MP, SYMPY, Arith
from .models import Attention, MultiHeadAttention, OneLayerTransformer
from .oracles import ValueOracle
from .recovery import Recovery, score
from .theorems.exact import learn_exact

__version__ = "0.1.0"

__all__ = [
    "Arith",
    "FLOAT64",
    "MP",
    "SYMPY",
    "Attention",
    "OneLayerTransformer",
    "MultiHeadAttention",
    "ValueOracle",
    "Recovery",
    "score",
    "learn_exact",
    "__version__",
]
