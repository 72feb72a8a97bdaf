"""A Llama-family decoder (SmolLM2, Llama, Mistral without sliding windows) written with
``tang.tensor`` ops: one graph per decoder block and one for the output head, compiled by
``tang.tensor.compile`` like any other graph.

A block graph takes ``T`` new tokens at positions ``pos … pos+T-1`` and a key/value cache of
``capacity`` rows per head. The cache is an input and an output of the graph: the next cache
is the old one with the new rows written at ``pos`` (a comprehension that picks, per row, the
old value or the new one), and the runtime swaps the two buffers after each call, so the
cache never leaves the device. Rows at or past ``pos + T`` are garbage that the causal mask
(``key ≤ pos + t``, read from the ``pos`` input) never lets a query see; a later step
overwrites them before they come into view. One graph thus serves prefill (``T`` = the
prompt, padded to a bucket), decode (``T`` = 1) and speculative verification (``T`` = k + 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..expr import graph as g
from ..tensor import frontend as tf
from ..tensor import ops
from ..tensor.comprehension import TensorGraph
from ..tensor.frontend import Tensor, comprehend
from ..tensor.passes import fuse
from . import quantized

# the weights of one block, by their names in the graph (GGUF names after "blk.N.")
BLOCK_WEIGHTS = {
    "attn_norm": "attn_norm.weight",
    "wq": "attn_q.weight",
    "wk": "attn_k.weight",
    "wv": "attn_v.weight",
    "wo": "attn_output.weight",
    "ffn_norm": "ffn_norm.weight",
    "w_gate": "ffn_gate.weight",
    "w_up": "ffn_up.weight",
    "w_down": "ffn_down.weight",
}


@dataclass(frozen=True)
class LlamaConfig:
    """The shape of a Llama-family model (what a GGUF's ``llama.*`` keys say)."""

    layers: int
    width: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int
    context: int = 2048
    rope_base: float = 10000.0
    eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.width % self.heads or self.heads % self.kv_heads or self.head_dim % 2:
            raise ValueError(
                f"width {self.width}, {self.heads} heads and {self.kv_heads} key/value heads "
                "do not fit (heads must divide the width, key/value heads the heads, and the "
                "head size must be even)"
            )

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    @classmethod
    def from_gguf(cls, metadata: Mapping[str, Any]) -> LlamaConfig:
        """The configuration a GGUF file's metadata describes (architecture ``llama``)."""
        arch = metadata.get("general.architecture")
        if arch != "llama":
            raise ValueError(f"a Llama-family model is architecture 'llama', not {arch!r}")

        def key(name: str, default: Any = None) -> Any:
            value = metadata.get(f"llama.{name}", default)
            if value is None:
                raise ValueError(f"the model file has no llama.{name}")
            return value

        vocab = metadata.get("llama.vocab_size") or len(metadata["tokenizer.ggml.tokens"])
        return cls(
            layers=int(key("block_count")),
            width=int(key("embedding_length")),
            ffn=int(key("feed_forward_length")),
            heads=int(key("attention.head_count")),
            kv_heads=int(key("attention.head_count_kv", key("attention.head_count"))),
            vocab=int(vocab),
            context=int(key("context_length")),
            rope_base=float(key("rope.freq_base", 10000.0)),
            eps=float(key("attention.layer_norm_rms_epsilon", 1e-5)),
        )

    def block_shapes(self) -> dict[str, tuple[int, ...]]:
        """Each block weight's shape (rows = outputs, as GGUF stores them)."""
        w, kv, f = self.width, self.kv_width, self.ffn
        return {
            "attn_norm": (w,),
            "wq": (w, w),
            "wk": (kv, w),
            "wv": (kv, w),
            "wo": (w, w),
            "ffn_norm": (w,),
            "w_gate": (f, w),
            "w_up": (f, w),
            "w_down": (w, f),
        }

    @property
    def parameters(self) -> int:
        per_block = sum(math.prod(s) for s in self.block_shapes().values())
        return self.layers * per_block + self.vocab * self.width + self.width


def linear(x: Tensor, w: Tensor) -> Tensor:
    """x @ wᵀ for a weight stored as (outputs, inputs): each output is a dot product along a
    contiguous weight row."""
    return comprehend("tj", [(x, "tk"), (w, "jk")], lambda a, b: a * b)


MATRICES = ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")
DENSE = "F32"  # a weight held as f32 (any GGUF type, dequantized when loaded)


def weight_inputs(
    name: str, shape: tuple[int, ...], fmt: str
) -> dict[str, tuple[tuple[int, ...], str | None]]:
    """The graph inputs one weight becomes, with their packed element types: itself when
    dense (None), else ``name_codes`` and ``name_scales``, two packed views of its bytes
    (``tang.llm.quantized``)."""
    if fmt == DENSE:
        return {name: (shape, None)}
    return {f"{name}_{part}": p for part, p in quantized.parts(fmt, *shape).items()}


def _weight(name: str, shape: tuple[int, ...], fmt: str) -> Any:
    if fmt == DENSE:
        return tf.input(name, shape)
    return fmt, {
        part: tf.input(f"{name}_{part}", s, packed=kind)
        for part, (s, kind) in quantized.parts(fmt, *shape).items()
    }


def project(x: Tensor, w: Any) -> Tensor:
    """x @ wᵀ for a dense weight or a packed one (dequantized inside the reduction, so a
    step reads only the packed bytes)."""
    if isinstance(w, Tensor):
        return linear(x, w)
    fmt, parts = w
    return quantized.linear(x, fmt, parts)


def rope_at(x: Tensor, pos: Tensor, base: float) -> Tensor:
    """Rotary embedding of (T, H, D) at positions pos + t, turning each adjacent pair
    (2k, 2k+1) by (pos + t)·base^(-2k/D): the pairing llama.cpp's files are stored for."""
    t_len, heads, d = x.shape
    pairs = x.reshape(t_len, heads, d // 2, 2)
    swapped = pairs[..., ::-1]
    rate = -2.0 * math.log2(base) / d

    def body(ix: list[Any], a: Any, b: Any, p: Any) -> Any:
        t, k, r = ix[0], ix[2], ix[3]
        theta = (p + t) * g.exp2(k * rate)
        return a * g.cos(theta) + (2.0 * r - 1.0) * b * g.sin(theta)

    return ops.map_(body, pairs, swapped, pos, index=True).reshape(x.shape)


def cache_update(cache: Tensor, new: Tensor, pos: Tensor) -> Tensor:
    """The cache (H, S, D) with rows pos … pos+T-1 replaced by ``new`` (T, H, D), in one
    pass over the cache (each row read and written once); rows past them keep whatever
    they held (the mask hides them)."""
    t_len = new.shape[0]

    def body(ix: Any, old: Any, value: Any, p: Any) -> Any:
        s, t = ix["s"], ix["t"]
        placed = g.select(g.eq(s, p + t), value, 0.0)  # the one t that lands on row s
        kept = g.select(g.lt(s, p), old, g.select(g.lt(s, p + t_len), 0.0, old))
        return placed + g.select(g.eq(t, 0.0), kept, 0.0)  # the old row counted once

    return comprehend("hsd", [(cache, "hsd"), (new, "thd"), (pos, "z")], body, index=True)


def attend(q: Tensor, keys: Tensor, values: Tensor, pos: Tensor) -> Tensor:
    """Grouped-query causal attention of (T, H, D) queries at positions pos + t over a
    (Hkv, S, D) cache, as (T, H·D): query t sees keys 0 … pos + t."""
    t_len, heads, d = q.shape
    kv_heads = keys.shape[0]
    group = heads // kv_heads
    scale = 1.0 / math.sqrt(d)
    q4 = q.reshape(t_len, kv_heads, group, d)
    scores = comprehend("ngts", [(q4, "tngd"), (keys, "nsd")], lambda a, b: a * b * scale)
    masked = ops.map_(
        lambda ix, x, p: g.select(g.le(ix[3], p + ix[2]), x, -math.inf),
        scores,
        pos,
        index=True,
    )
    probs = ops.softmax(masked, -1)
    out = comprehend("tnge", [(probs, "ngts"), (values, "nse")], lambda p, v: p * v)
    return out.reshape(t_len, heads * d)


def block_graph(
    cfg: LlamaConfig, tokens: int, capacity: int, formats: Mapping[str, str] | None = None
) -> TensorGraph:
    """One decoder block over ``tokens`` new tokens with a cache of ``capacity`` rows:
    inputs x (T, width), pos (1,), the cache and the weights (``formats``: a weight's
    packed format, "Q4_1" or "Q8_0", else dense f32); outputs y, k_next, v_next."""
    if not 1 <= tokens <= capacity:
        raise ValueError(f"a block takes 1 … {capacity} tokens at once, not {tokens}")
    formats = formats or {}
    w = {
        name: _weight(name, shape, formats.get(name, DENSE))
        for name, shape in cfg.block_shapes().items()
    }
    x = tf.input("x", (tokens, cfg.width))
    pos = tf.input("pos", (1,))
    k_cache = tf.input("k_cache", (cfg.kv_heads, capacity, cfg.head_dim))
    v_cache = tf.input("v_cache", (cfg.kv_heads, capacity, cfg.head_dim))

    h = ops.rms_norm(x, w["attn_norm"], eps=cfg.eps)
    q = rope_at(project(h, w["wq"]).reshape(tokens, cfg.heads, cfg.head_dim), pos, cfg.rope_base)
    k = rope_at(project(h, w["wk"]).reshape(tokens, cfg.kv_heads, cfg.head_dim), pos, cfg.rope_base)
    v = project(h, w["wv"]).reshape(tokens, cfg.kv_heads, cfg.head_dim)
    k_next = cache_update(k_cache, k, pos)
    v_next = cache_update(v_cache, v, pos)
    x1 = x + project(attend(q, k_next, v_next, pos), w["wo"])
    h2 = ops.rms_norm(x1, w["ffn_norm"], eps=cfg.eps)
    hidden = ops.silu(project(h2, w["w_gate"])) * project(h2, w["w_up"])
    y = x1 + project(hidden, w["w_down"])
    return tf.graph(y=y, k_next=k_next, v_next=v_next)


def embed_graph(cfg: LlamaConfig, tokens: int, fmt: str = DENSE) -> TensorGraph:
    """The token embedding as a gather from the output projection's weights (a tied
    model's table, as stored): x (T, width) from ids (T,), token numbers held as floats;
    an id of -1 (a padded row) gives a row of zeros. One step per weight read: the kernel
    binds the row to the id (``schedule.data_pin``)."""
    ids = tf.input("ids", (tokens,))
    table = _weight("output", (cfg.vocab, cfg.width), fmt)
    rows = table if isinstance(table, Tensor) else quantized.dequantize(*table)
    # fused: each picked weight is dequantized where it is read, never the whole table
    return fuse(tf.graph(x=ops.take(rows, ids).reshape(tokens, cfg.width)))


def head_graph(cfg: LlamaConfig, tokens: int, fmt: str = DENSE) -> TensorGraph:
    """The final norm and the output projection: logits (T, vocab) from x (T, width)."""
    x = tf.input("x", (tokens, cfg.width))
    norm = tf.input("norm", (cfg.width,))
    out = _weight("output", (cfg.vocab, cfg.width), fmt)
    return tf.graph(logits=project(ops.rms_norm(x, norm, eps=cfg.eps), out))


__all__ = [
    "BLOCK_WEIGHTS",
    "DENSE",
    "MATRICES",
    "LlamaConfig",
    "attend",
    "block_graph",
    "cache_update",
    "embed_graph",
    "head_graph",
    "linear",
    "project",
    "rope_at",
    "weight_inputs",
]
