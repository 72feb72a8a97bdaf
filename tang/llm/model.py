"""A Llama-family decoder (SmolLM2, Llama, Mistral without sliding windows) written with
``tang.tensor`` ops: one graph per decoder block and one for the output head, compiled by
``tang.tensor.compile`` like any other graph.

A block graph takes ``T`` new tokens at positions ``pos … pos+T-1`` and the first
``capacity`` rows of each key/value cache (the engine's attention span: the cache may hold
more). The caches are inputs only: the graph's outputs are the step's own keys and values,
which the engine appends to the caches in place after the call (``Device.copy``), so a step
never rewrites the cache and the cache never leaves the device. Attention reads the cache
rows below ``pos`` (``pos`` is an input) and the step's own rows up to the query's; rows at
or past ``pos`` are garbage that a later step overwrites before they come into view. One
graph thus serves prefill (``T`` = the prompt, padded to a bucket), decode (``T`` = 1) and
speculative verification (``T`` = k + 1).
"""

from __future__ import annotations

import functools
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


def project(x: Tensor, w: Any, spread_of: Any = quantized.spread) -> Tensor:
    """x @ wᵀ for a dense weight or a packed one (dequantized inside the reduction, so a
    step reads only the packed bytes; ``spread_of``: see ``quantized.linear``)."""
    if isinstance(w, Tensor):
        return linear(x, w)
    fmt, parts = w
    return quantized.linear(x, fmt, parts, spread_of)


def rotations(pos: Tensor, tokens: int, d: int, base: float) -> Tensor:
    """cos (at c = 0) and sin (c = 1) of the rotary angles, (T, D/2, 2), at positions
    pos + t: angle (pos + t)·base^(-2k/D) for pair k. Computed once per step and read by
    every head's rotation."""
    rate = -2.0 * math.log2(base) / d

    def body(ix: Any, p: Any) -> Any:
        theta = (p + ix["t"]) * g.exp2(ix["k"] * rate)
        return g.select(g.eq(ix["c"], 0.0), g.cos(theta), g.sin(theta))

    extents = {"t": tokens, "k": d // 2, "c": 2}
    return comprehend("tkc", [(pos, "z")], body, extents=extents, index=True)


def rope_at(x: Tensor, turns: Tensor) -> Tensor:
    """Rotary embedding of (T, H, D), turning each adjacent pair (2k, 2k+1) by the angle
    whose cos and sin ``turns`` holds at (t, k) (``rotations``): the pairing llama.cpp's
    files are stored for."""
    t_len, heads, d = x.shape
    pairs = x.reshape(t_len, heads, d // 2, 2)
    swapped = pairs[..., ::-1]

    def body(ix: Any, a: Any, b: Any, c: Any, s: Any) -> Any:
        return a * c + (2.0 * ix["r"] - 1.0) * b * s

    operands = [(pairs, "thkr"), (swapped, "thkr"), (turns[..., 0], "tk"), (turns[..., 1], "tk")]
    return comprehend("thkr", operands, body, index=True).reshape(x.shape)


def attend(
    q: Tensor, keys: tuple[Tensor, Tensor], values: tuple[Tensor, Tensor], pos: Tensor
) -> Tensor:
    """Grouped-query causal attention of (T, H, D) queries at positions pos + t, as (T, H·D).
    ``keys`` and ``values`` are each the cache (S, Hkv, D), whose rows 0 … pos-1 hold the
    earlier positions, and the step's own rows (T, Hkv, D): query t sees cache rows below
    pos and its own rows 0 … t. Each is read where it lies (scores and weighted sums per
    part); only the scores, S + T per query, are joined for the softmax."""
    t_len, heads, d = q.shape
    kv_heads = keys[0].shape[1]
    group = heads // kv_heads
    scale = 1.0 / math.sqrt(d)
    cached = keys[0].shape[0]
    q4 = q.reshape(t_len, kv_heads, group, d)
    scores = ops.concat(
        [comprehend("ngts", [(q4, "tngd"), (k, "snd")], lambda a, b: a * b * scale) for k in keys],
        -1,
    )

    def visible(ix: list[Any], x: Any, p: Any) -> Any:
        t, s = ix[2], ix[3]
        old = g.select(g.lt(s, p), x, -math.inf)
        return g.select(g.lt(s, cached), old, g.select(g.le(s - cached, t), x, -math.inf))

    probs = ops.softmax(ops.map_(visible, scores, pos, index=True), -1)
    old, new = (
        comprehend("tnge", [(p, "ngts"), (v, "sne")], lambda a, b: a * b)
        for p, v in zip((probs[..., :cached], probs[..., cached:]), values, strict=True)
    )
    out = old + new
    return out.reshape(t_len, heads * d)


def block_graph(
    cfg: LlamaConfig, tokens: int, capacity: int, formats: Mapping[str, str] | None = None
) -> TensorGraph:
    """One decoder block over ``tokens`` new tokens attending over ``capacity`` cache rows:
    inputs x (T, width), pos (1,), the caches (capacity, kv heads, head size) and the
    weights (``formats``: a weight's packed format, "Q4_1" or "Q8_0", else dense f32);
    outputs y and the step's own keys and values, k_new and v_new (T, kv heads, head
    size), which the caller appends to the caches at rows pos … (one contiguous copy)."""
    if tokens < 1 or capacity < 1:
        raise ValueError(f"a block takes a token and a cache row or more, not {tokens}, {capacity}")
    formats = formats or {}
    w = {
        name: _weight(name, shape, formats.get(name, DENSE))
        for name, shape in cfg.block_shapes().items()
    }
    x = tf.input("x", (tokens, cfg.width))
    pos = tf.input("pos", (1,))
    k_cache = tf.input("k_cache", (capacity, cfg.kv_heads, cfg.head_dim))
    v_cache = tf.input("v_cache", (capacity, cfg.kv_heads, cfg.head_dim))

    spread = functools.cache(quantized.spread)  # products of one input share its layout

    def proj(v: Tensor, name: str) -> Tensor:
        return project(v, w[name], spread)

    h = ops.rms_norm(x, w["attn_norm"], eps=cfg.eps)
    turns = rotations(pos, tokens, cfg.head_dim, cfg.rope_base)
    q = rope_at(proj(h, "wq").reshape(tokens, cfg.heads, cfg.head_dim), turns)
    k = rope_at(proj(h, "wk").reshape(tokens, cfg.kv_heads, cfg.head_dim), turns)
    v = proj(h, "wv").reshape(tokens, cfg.kv_heads, cfg.head_dim)
    x1 = x + proj(attend(q, (k_cache, k), (v_cache, v), pos), "wo")
    h2 = ops.rms_norm(x1, w["ffn_norm"], eps=cfg.eps)
    hidden = ops.silu(proj(h2, "w_gate")) * proj(h2, "w_up")
    y = x1 + proj(hidden, "w_down")
    return tf.graph(y=y, k_new=k, v_new=v)


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
    "embed_graph",
    "head_graph",
    "linear",
    "project",
    "rope_at",
    "rotations",
    "weight_inputs",
]
