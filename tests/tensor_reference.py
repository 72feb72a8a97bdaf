"""Numpy float64 references for the tensor ops: forward, and hand-written backward (the
vector-Jacobian product for a cotangent ``g``), written from the textbook formulas
independently of tang. Shared by tests/test_tensor_ops.py and tests/test_tensor_grad.py."""

from __future__ import annotations

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def cross_entropy(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    rows = np.arange(len(targets))
    return -log_softmax(logits)[rows, targets.astype(int)].mean()


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope_angles(t_len: int, d: int, base: float = 10000.0) -> np.ndarray:
    k = np.arange(d // 2)
    return np.arange(t_len)[:, None] * base ** (-2.0 * k / d)[None, :]  # (T, D/2)


def rope(x: np.ndarray, base: float = 10000.0) -> np.ndarray:
    theta = rope_angles(x.shape[-2], x.shape[-1], base)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * np.cos(theta) - odd * np.sin(theta)
    out[..., 1::2] = even * np.sin(theta) + odd * np.cos(theta)
    return out


def silu(x: np.ndarray) -> np.ndarray:
    return x * sigmoid(x)


def swiglu(x, a, b, c):
    return (silu(x @ a) * (x @ b)) @ c


def _mask(t_len: int, s_len: int) -> np.ndarray:
    return np.arange(s_len)[None, :] <= np.arange(t_len)[:, None] + (s_len - t_len)


def attention(q, k, v, causal=False):
    group = q.shape[1] // k.shape[1]
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ kk.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(_mask(q.shape[2], k.shape[2]), s, -np.inf)
    return softmax(s) @ vv


# ---- backward ------------------------------------------------------------------------------


def matmul_vjp(a, b, g):
    return {"a": g @ b.T, "b": a.T @ g}


def softmax_vjp(x, g):
    y = softmax(x)
    return {"x": y * (g - (g * y).sum(-1, keepdims=True))}


def log_softmax_vjp(x, g):
    return {"x": g - softmax(x) * g.sum(-1, keepdims=True)}


def cross_entropy_vjp(logits, targets, g):
    onehot = np.zeros_like(logits)
    onehot[np.arange(len(targets)), targets.astype(int)] = 1.0
    return {"logits": g * (softmax(logits) - onehot) / len(targets)}


def rms_norm_vjp(x, w, g, eps: float = 1e-6):
    r = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    gw = g * w
    dx = r * gw - x * r**3 * (gw * x).mean(-1, keepdims=True)
    return {"x": dx, "w": (g * x * r).reshape(-1, x.shape[-1]).sum(0)}


def rope_vjp(x, g, base: float = 10000.0):
    theta = rope_angles(x.shape[-2], x.shape[-1], base)
    ge, go = g[..., 0::2], g[..., 1::2]
    dx = np.empty_like(g)
    dx[..., 0::2] = ge * np.cos(theta) + go * np.sin(theta)  # the transposed rotation
    dx[..., 1::2] = -ge * np.sin(theta) + go * np.cos(theta)
    return {"x": dx}


def swiglu_vjp(x, a, b, c, g):
    h1, h2 = x @ a, x @ b
    s = silu(h1)
    h = s * h2
    dh = g @ c.T
    sig = sigmoid(h1)
    dh1 = dh * h2 * sig * (1 + h1 * (1 - sig))
    dh2 = dh * s
    return {"x": dh1 @ a.T + dh2 @ b.T, "a": x.T @ dh1, "b": x.T @ dh2, "c": h.T @ g}


def attention_vjp(q, k, v, g, causal=False):
    group = q.shape[1] // k.shape[1]
    scale = 1.0 / np.sqrt(q.shape[-1])
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ kk.transpose(0, 1, 3, 2) * scale
    if causal:
        s = np.where(_mask(q.shape[2], k.shape[2]), s, -np.inf)
    p = softmax(s)
    dv = p.transpose(0, 1, 3, 2) @ g
    dp = g @ vv.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = ds @ kk * scale
    dk = ds.transpose(0, 1, 3, 2) @ q * scale

    def fold(t):  # the query heads of a group share one key/value head: add theirs
        b, h, n, d = t.shape
        return t.reshape(b, h // group, group, n, d).sum(2)

    return {"q": dq, "k": fold(dk), "v": fold(dv)}
