"""Loading real heads: a checkpoint written here, read back, equals the model it describes."""

from __future__ import annotations

import numpy as np
import pytest

from attnproof.errors import InvalidInputError
from attnproof.heads import bert_head, checkpoint_heads, load_checkpoint

safetensors = pytest.importorskip("safetensors.numpy")


def write_layer(path, d=8, n_heads=2, seed=0):
    rng = np.random.default_rng(seed)
    base = "encoder.layer.0.attention."
    t = {base + f"self.{n}.{p}": rng.standard_normal((d, d) if p == "weight" else d).astype(np.float32)
         for n in ("query", "key", "value") for p in ("weight", "bias")}
    t[base + "output.dense.weight"] = rng.standard_normal((d, d)).astype(np.float32)
    safetensors.save_file(t, str(path / "model.safetensors"))
    return {k: v.astype(np.float64) for k, v in t.items()}


def test_bert_head_computes_the_biased_head_of_the_checkpoint(tmp_path):
    t = write_layer(tmp_path)
    tensors, _ = load_checkpoint(tmp_path)
    model = bert_head(tensors, 0, 1, 2)
    base, r, rows = "encoder.layer.0.attention.", 4, slice(4, 8)
    X = np.random.default_rng(1).standard_normal((3, 8))
    q = t[base + "self.query.weight"][rows] @ X[-1] + t[base + "self.query.bias"][rows]
    k = X @ t[base + "self.key.weight"][rows].T + t[base + "self.key.bias"][rows]
    val = X @ t[base + "self.value.weight"][rows].T + t[base + "self.value.bias"][rows]
    a = np.exp(k @ q / np.sqrt(r) - np.max(k @ q / np.sqrt(r)))
    a /= a.sum()
    w_o = t[base + "output.dense.weight"][0, rows]
    assert model(X) == pytest.approx(w_o @ (a @ val), rel=1e-10, abs=0)


def test_bad_head_index_and_missing_tensors_are_typed(tmp_path):
    write_layer(tmp_path)
    tensors, _ = load_checkpoint(tmp_path)
    with pytest.raises(InvalidInputError, match="head 2 of 2"):
        bert_head(tensors, 0, 2, 2)
    with pytest.raises(InvalidInputError, match="no tensor"):
        bert_head(tensors, 1, 0, 2)


def test_checkpoint_heads_reads_every_layer_and_head_under_any_prefix(tmp_path):
    t = write_layer(tmp_path, n_heads=2)
    prefixed = {"bert." + k: v.astype(np.float32) for k, v in t.items()}
    prefixed.update({"bert." + k.replace("layer.0", "layer.1"): v.astype(np.float32) for k, v in t.items()})
    safetensors.save_file(prefixed, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text('{"num_attention_heads": 2}')
    heads = checkpoint_heads(tmp_path)
    assert [(layer, h) for layer, h, _ in heads] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    tensors, _ = load_checkpoint(tmp_path)
    X = np.random.default_rng(2).standard_normal((3, 8))
    assert heads[3][2](X) == bert_head(tensors, 1, 1, 2, prefix="bert.")(X)
    assert len(checkpoint_heads(tmp_path, n_heads=4)) == 8


def test_checkpoint_heads_refusals_are_typed(tmp_path):
    write_layer(tmp_path)
    with pytest.raises(InvalidInputError, match="num_attention_heads"):
        checkpoint_heads(tmp_path)  # no config.json, no n_heads
    with pytest.raises(InvalidInputError, match="cannot read"):
        checkpoint_heads(tmp_path / "missing.safetensors", n_heads=2)
    (tmp_path / "junk.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(InvalidInputError, match="cannot read"):
        checkpoint_heads(tmp_path / "junk.safetensors", n_heads=2)
    safetensors.save_file({"x": np.zeros(2, np.float32)}, str(tmp_path / "empty.safetensors"))
    with pytest.raises(InvalidInputError, match="no tensor named like"):
        checkpoint_heads(tmp_path / "empty.safetensors", n_heads=2)
