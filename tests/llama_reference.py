"""An independent numpy Llama in float64, written the way Hugging Face's modeling code is
(q/k rows un-permuted from llama.cpp's storage order, half-split rotary embedding, no cache:
every step recomputes the whole sequence): the oracle for tang.llm's graphs and devices."""

from __future__ import annotations

import numpy as np


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's row permutation of attn_q / attn_k (transformers' GGUF loader)."""
    half = w.shape[0] // heads // 2
    return w.reshape(heads, half, 2, *w.shape[1:]).swapaxes(2, 1).reshape(w.shape)


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def logits(cfg, weights: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """(len(ids), vocab) logits of a Llama whose GGUF tensors are ``weights`` (by name)."""
    t_len, d = len(ids), cfg.head_dim
    x = weights["token_embd.weight"].reshape(cfg.vocab, cfg.width)[ids].astype(np.float64)
    inv = cfg.rope_base ** (-np.arange(0, d, 2) / d)
    angles = np.arange(t_len)[:, None] * inv[None]
    cos = np.concatenate([np.cos(angles)] * 2, -1)
    sin = np.concatenate([np.sin(angles)] * 2, -1)

    def rotate(v: np.ndarray) -> np.ndarray:  # (H, T, d)
        return v * cos + np.concatenate([-v[..., d // 2 :], v[..., : d // 2]], -1) * sin

    def w(layer: int, name: str, rows: int, cols: int) -> np.ndarray:
        return weights[f"blk.{layer}.{name}.weight"].reshape(rows, cols).astype(np.float64)

    causal = np.tril(np.ones((t_len, t_len), bool))
    repeat = cfg.heads // cfg.kv_heads
    for layer in range(cfg.layers):
        h = rms_norm(x, weights[f"blk.{layer}.attn_norm.weight"], cfg.eps)
        q = h @ unpermute(w(layer, "attn_q", cfg.width, cfg.width), cfg.heads).T
        k = h @ unpermute(w(layer, "attn_k", cfg.kv_width, cfg.width), cfg.kv_heads).T
        v = h @ w(layer, "attn_v", cfg.kv_width, cfg.width).T
        q = rotate(q.reshape(t_len, cfg.heads, d).transpose(1, 0, 2))
        k = np.repeat(rotate(k.reshape(t_len, cfg.kv_heads, d).transpose(1, 0, 2)), repeat, 0)
        v = np.repeat(v.reshape(t_len, cfg.kv_heads, d).transpose(1, 0, 2), repeat, 0)
        scores = np.where(causal, q @ k.transpose(0, 2, 1) / np.sqrt(d), -np.inf)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        x = (
            x
            + (p @ v).transpose(1, 0, 2).reshape(t_len, -1)
            @ w(layer, "attn_output", cfg.width, cfg.width).T
        )
        h = rms_norm(x, weights[f"blk.{layer}.ffn_norm.weight"], cfg.eps)
        gate = h @ w(layer, "ffn_gate", cfg.ffn, cfg.width).T
        up = h @ w(layer, "ffn_up", cfg.ffn, cfg.width).T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w(layer, "ffn_down", cfg.width, cfg.ffn).T
    out = weights.get("output.weight", weights["token_embd.weight"])
    h = rms_norm(x, weights["output_norm.weight"], cfg.eps)
    return h @ out.reshape(cfg.vocab, cfg.width).astype(np.float64).T


def random_weights(cfg, seed: int = 0) -> dict[str, np.ndarray]:
    """GGUF-named f32 weights of a small random model (norms near 1, tied output)."""
    from tang.llm.model import BLOCK_WEIGHTS

    rng = np.random.default_rng(seed)
    out = {}
    for layer in range(cfg.layers):
        for short, shape in cfg.block_shapes().items():
            base = 1.0 if "norm" in short else 0.0
            out[f"blk.{layer}.{BLOCK_WEIGHTS[short]}"] = (base + rng.normal(0, 0.3, shape)).astype(
                np.float32
            )
    out["token_embd.weight"] = rng.normal(0, 1, (cfg.vocab, cfg.width)).astype(np.float32)
    out["output_norm.weight"] = (1 + 0.1 * rng.normal(size=cfg.width)).astype(np.float32)
    return out
