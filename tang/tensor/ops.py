"""The tensor ops, each *defined* as comprehensions (``frontend.comprehend``): no op has
kernel code of its own; fusion, gradients and the online-softmax rewrite are derived by the
generic passes in ``tang.tensor.passes``."""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..expr import graph as g
from ..expr.graph import Node
from ..expr.ops import LN2, LOG2E
from .comprehension import MAX, MIN, PROD, SUM, Monoid, TensorIRError
from .frontend import OPERATORS, Tensor, _letters, as_tensor, comprehend, stop_gradient
from .view import View

Operand = Tensor | float | int


# ---- element-wise ------------------------------------------------------------------------


def _broadcast_shape(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    rank = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for k, n in enumerate(s, start=rank - len(s)):
            if out[k] == 1:
                out[k] = n
            elif n not in (1, out[k]):
                raise TensorIRError(f"shapes {[tuple(x) for x in shapes]} do not broadcast")
    return tuple(out)


def map_(fn: Callable[..., Node | float], *operands: Operand, index: bool = False) -> Tensor:
    """``fn`` applied element by element, with numpy broadcasting; numbers pass to ``fn``
    as they are (constants in the body, no tensor of their own)."""
    tensors = [x for x in operands if isinstance(x, Tensor)]
    if not tensors:
        raise TensorIRError("an element-wise op needs at least one tensor operand")
    shape = _broadcast_shape([t.shape for t in tensors])
    letters = _letters(len(shape))
    pairs = [(t, letters[len(shape) - t.ndim :]) for t in tensors]

    def body(*args: Any) -> Node | float:
        ix, elements = (args[0], list(args[1:])) if index else (None, list(args))
        values = [elements.pop(0) if isinstance(x, Tensor) else float(x) for x in operands]
        if index:
            return fn([ix[c] for c in letters], *values)
        return fn(*values)

    return comprehend(letters, pairs, body, extents=dict(zip(letters, shape)), index=index)


def add(a: Operand, b: Operand) -> Tensor:
    return map_(lambda x, y: x + y, a, b)


def sub(a: Operand, b: Operand) -> Tensor:
    return map_(lambda x, y: x - y, a, b)


def mul(a: Operand, b: Operand) -> Tensor:
    return map_(lambda x, y: x * y, a, b)


def div(a: Operand, b: Operand) -> Tensor:
    return map_(lambda x, y: x / y, a, b)


def neg(a: Tensor) -> Tensor:
    return map_(lambda x: -x, a)


def power(a: Tensor, p: float) -> Tensor:
    if not isinstance(p, (int, float)):
        raise TypeError("a tensor's power is a number")
    return map_(lambda x: g.pow(x, float(p)), a)


def exp(a: Tensor) -> Tensor:
    """e**a as 2**(a·log2 e): the online softmax pass (passes/online.py) rescales its sums
    by exp2 factors, and a GPU's exp2 is its native instruction."""
    return map_(lambda x: g.exp2(g.mul(x, LOG2E)), a)


def log(a: Tensor) -> Tensor:
    """ln a as log2(a)·ln 2, the form the tensor printer reads back as log(a)."""
    return map_(lambda x: g.mul(g.log2(x), LN2), a)


def sqrt(a: Tensor) -> Tensor:
    return map_(g.sqrt, a)


def tanh(a: Tensor) -> Tensor:
    return map_(g.tanh, a)


def sigmoid(a: Tensor) -> Tensor:
    return map_(lambda x: g.as_node(x).sigmoid(), a)


def relu(a: Tensor) -> Tensor:
    """max(a, 0) as where(a <= 0, 0, a): a slope of 0 at 0 (PyTorch's), and nan stays nan."""
    return map_(lambda x: g.select(g.le(x, 0.0), 0.0, x), a)


def silu(a: Tensor) -> Tensor:
    return map_(lambda x: x * g.as_node(x).sigmoid(), a)


def maximum(a: Operand, b: Operand) -> Tensor:
    return map_(g.maximum, a, b)


def minimum(a: Operand, b: Operand) -> Tensor:
    return map_(g.minimum, a, b)


def abs(a: Tensor) -> Tensor:
    """|a| element by element (the slope at 0 is +1, as everywhere in tang)."""
    return map_(g.abs_, a)


# ---- indexing by data and joining ----------------------------------------------------------


def take(a: Tensor, indices: Tensor, axis: int = 0) -> Tensor:
    """numpy's ``take``: the slices of ``a`` along ``axis`` that ``indices`` names, shaped
    ``a.shape[:axis] + indices.shape + a.shape[axis+1:]`` (an embedding lookup is
    ``take(table, ids)``). Indices are whole numbers held as floats; one that is not a
    whole number in ``[0, n)`` gives zeros. Defined as ``Σ_k where(k == index, a[k], 0)``:
    a kernel runs the one step ``k = index`` (``schedule.data_pin``), and the gradient
    with respect to ``a`` (a sum of the rows each index picked) is derived from it."""
    a, indices = as_tensor(a), as_tensor(indices)
    if a.ndim == 0:
        raise TensorIRError("take needs a tensor of rank 1 or more to pick from")
    axis = _axes(a, axis)[0]
    rank = a.ndim - 1 + indices.ndim
    letters = _letters(rank + 1)
    out, picked = letters[:rank], letters[rank]
    a_letters = out[:axis] + picked + out[axis + indices.ndim :]
    at = out[axis : axis + indices.ndim]
    return comprehend(
        out,
        [(a, a_letters), (indices, at)],
        lambda ix, value, index: g.select(g.eq(ix[picked], index), value, 0.0),
        index=True,
    )


def one_hot(indices: Tensor, n: int) -> Tensor:
    """``indices.shape + (n,)``: 1 where the last index equals the element, else 0 (an index
    that is not a whole number in ``[0, n)`` gives a row of zeros)."""
    indices = as_tensor(indices)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise TensorIRError(f"one_hot needs a positive number of classes, got {n!r}")
    letters = _letters(indices.ndim + 1)
    return comprehend(
        letters,
        [(indices, letters[:-1])],
        lambda ix, v: g.select(g.eq(ix[letters[-1]], v), 1.0, 0.0),
        extents={letters[-1]: n},
        index=True,
    )


def concat(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """numpy's ``concatenate``: the tensors joined along ``axis`` (their other extents
    equal). Each is read through a view shifted to its place, under a guard that keeps
    only its own stretch, so the gradient of each part is derived, not written."""
    parts = [as_tensor(t) for t in tensors]
    if not parts:
        raise TensorIRError("concat needs at least one tensor")
    first = parts[0]
    if first.ndim == 0:
        raise TensorIRError("concat joins tensors of rank 1 or more")
    axis = _axes(first, axis)[0]
    for t in parts[1:]:
        others = [n for k, n in enumerate(t.shape) if k != axis]
        if t.ndim != first.ndim or others != [n for k, n in enumerate(first.shape) if k != axis]:
            raise TensorIRError(
                f"concat along axis {axis}: shapes {[p.shape for p in parts]} differ elsewhere"
            )
    ends = list(itertools.accumulate(t.shape[axis] for t in parts))
    shape = (*first.shape[:axis], ends[-1], *first.shape[axis + 1 :])
    letters = _letters(len(shape))
    shifted = []
    for t, end in zip(parts, ends):
        start = end - t.shape[axis]
        stride = t.view.strides[axis]
        view = View(shape, t.view.strides, t.view.offset - start * stride)
        shifted.append((t._with(view), letters))

    def body(ix: dict[str, Node], *values: Node) -> Node:
        out = values[-1]
        for value, end in zip(values[-2::-1], ends[-2::-1]):
            out = g.select(g.lt(ix[letters[axis]], float(end)), value, out)
        return out

    return comprehend(letters, shifted, body, index=True)


# ---- reductions --------------------------------------------------------------------------


def _axes(x: Tensor, axis: int | Sequence[int] | None) -> list[int]:
    if axis is None:
        return list(range(x.ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise TensorIRError(f"axis {a} is out of range for shape {x.shape}")
        out.append(a % x.ndim)
    return sorted(set(out))


def reduce(
    x: Tensor, axis: int | Sequence[int] | None, monoid: Monoid, keepdims: bool = False
) -> Tensor:
    """``x`` reduced over ``axis`` (all axes when None) under ``monoid``."""
    axes = _axes(x, axis)
    letters = _letters(x.ndim)
    spec = "".join(c for k, c in enumerate(letters) if k not in axes)
    out = comprehend(spec, [(x, letters)], lambda e: e, monoid=monoid)
    if keepdims:
        for a in axes:
            out = out.expand_dims(a)
    return out


def sum(x: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
    return reduce(x, axis, SUM, keepdims)


def max(x: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
    return reduce(x, axis, MAX, keepdims)


def min(x: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
    return reduce(x, axis, MIN, keepdims)


def prod(x: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
    return reduce(x, axis, PROD, keepdims)


def mean(x: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
    count = math.prod(x.shape[a] for a in _axes(x, axis))
    return mul(sum(x, axis, keepdims), 1.0 / count)


# ---- linear algebra ----------------------------------------------------------------------


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Numpy's ``a @ b``: the last axis of ``a`` against the second-last of ``b`` (a 1-d
    operand is a row / column), leading axes broadcast."""
    if a.ndim == 0 or b.ndim == 0:
        raise TensorIRError("matmul needs operands of rank 1 or more")
    va = a.expand_dims(0) if a.ndim == 1 else a
    vb = b.expand_dims(1) if b.ndim == 1 else b
    if va.shape[-1] != vb.shape[-2]:
        raise TensorIRError(f"matmul: {a.shape} @ {b.shape}: inner extents differ")
    batch = _broadcast_shape([va.shape[:-2], vb.shape[:-2]])
    bl = _letters(len(batch), skip="ijk")
    spec = bl + "ij"
    out = comprehend(
        spec,
        [(va, bl[len(bl) - (va.ndim - 2) :] + "ik"), (vb, bl[len(bl) - (vb.ndim - 2) :] + "kj")],
        lambda x, y: x * y,
    )
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


# ---- normalisations and activations ------------------------------------------------------


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x − max) / Σ exp(x − max): the max is a shift for stability, a constant to the
    gradient (which does not depend on it), so the derived backward has no max path."""
    e = exp(x - stop_gradient(max(x, axis, keepdims=True)))
    return e / sum(e, axis, keepdims=True)


def logsumexp(x: Tensor, axis: int = -1, keepdims: bool = False) -> Tensor:
    """log Σ exp(x − m) + m with m = max x, a constant to the gradient (as in softmax)."""
    m = stop_gradient(max(x, axis, keepdims=True))
    out = log(sum(exp(x - m), axis, keepdims=True)) + m
    return (
        out
        if keepdims
        else out[tuple(0 if k == axis % x.ndim else slice(None) for k in range(x.ndim))]
    )


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """(x − m) − log Σ exp(x − m) with m = max x (a constant to the gradient): the shift
    is taken first, so a row of large equal logits gives −log n to the last bit."""
    z = x - stop_gradient(max(x, axis, keepdims=True))
    return z - log(sum(exp(z), axis, keepdims=True))


def cross_entropy(
    logits: Tensor, targets: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """Mean over rows of -log softmax(logits)[row, target]; ``targets`` holds class
    numbers as floats (rows × 1 classes picked by comparing with the class index). With
    ``weight`` (N,), the sum of each row's loss times its weight instead: a compiled
    trainer's per-sample weights (1/N in a full batch, 0 for padding rows). Without it,
    ``reduction`` "sum" adds the rows' losses and "none" keeps them (N,)."""
    if reduction not in ("mean", "sum", "none"):
        raise TensorIRError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")
    if logits.ndim != 2 or targets.shape != logits.shape[:1]:
        raise TensorIRError(
            "cross_entropy takes logits (N, C) and targets (N,), "
            f"got {logits.shape} and {targets.shape}"
        )
    ls = log_softmax(logits, -1)
    picked = comprehend(
        "a",
        [(ls, "ab"), (targets, "a")],
        lambda ix, v, t: g.select(g.eq(ix["b"], t), v, 0.0),
        index=True,
    )
    if weight is None:
        return -{"mean": mean, "sum": sum, "none": lambda p: p}[reduction](picked)
    return comprehend("", [(picked, "a"), (weight, "a")], lambda p, w: -(p * w))


def rms_norm(x: Tensor, weight: Tensor | None = None, eps: float = 1e-6) -> Tensor:
    """x / sqrt(mean(x², last axis) + eps) · weight."""
    ms = mean(x * x, -1, keepdims=True)
    out = x * map_(lambda m: g.recip(g.sqrt(m + eps)), ms)
    return out if weight is None else out * weight


def rope(x: Tensor, base: float = 10000.0) -> Tensor:
    """Rotary position embedding over (…, T, D): each pair (2k, 2k+1) of position t turns by
    t · base^(-2k/D)."""
    if x.ndim < 2 or x.shape[-1] % 2:
        raise TensorIRError(f"rope needs (…, T, D) with D even, got {x.shape}")
    d = x.shape[-1]
    pairs = x.reshape(*x.shape[:-1], d // 2, 2)
    swapped = pairs[..., ::-1]
    rate = -2.0 * math.log2(base) / d

    def body(ix: list[Node], a: Node, b: Node) -> Node:
        t, k, r = ix[-3], ix[-2], ix[-1]
        theta = t * g.exp2(k * rate)
        return a * g.cos(theta) + (2.0 * r - 1.0) * b * g.sin(theta)

    return map_(body, pairs, swapped, index=True).reshape(x.shape)


def swiglu(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor | None = None) -> Tensor:
    """silu(x @ w_gate) · (x @ w_up), then @ w_down when given."""
    h = silu(matmul(x, w_gate)) * matmul(x, w_up)
    return h if w_down is None else matmul(h, w_down)


def attention(
    q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, scale: float | None = None
) -> Tensor:
    """softmax(q kᵀ · scale) v over (B, H, T, D) queries and (B, Hkv, S, ·) keys/values;
    with Hkv < H each group of H/Hkv query heads shares one key/value head (grouped-query)."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise TensorIRError(
            "attention takes (B, H, T, D) queries and (B, Hkv, S, D) keys and values"
        )
    bsz, heads, t_len, dim = q.shape
    _, kv_heads, s_len, _ = k.shape
    if k.shape[0] != bsz or k.shape[3] != dim or v.shape[:3] != k.shape[:3] or heads % kv_heads:
        raise TensorIRError(f"attention: shapes q {q.shape}, k {k.shape}, v {v.shape} do not fit")
    group = heads // kv_heads
    scale = 1.0 / math.sqrt(dim) if scale is None else float(scale)
    q5 = q.reshape(bsz, kv_heads, group, t_len, dim)
    scores = comprehend("bngts", [(q5, "bngtd"), (k, "bnsd")], lambda a, b: a * b * scale)
    if causal:
        shift = s_len - t_len  # the last query sees every key

        def mask(ix: list[Node], x: Node) -> Node:
            last = ix[3] + float(shift) if shift else ix[3]
            return g.select(g.le(ix[4], last), x, -math.inf)

        scores = map_(mask, scores, index=True)
    probs = softmax(scores, -1)
    out = comprehend("bngte", [(probs, "bngts"), (v, "bnse")], lambda p, w: p * w)
    return out.reshape(bsz, heads, t_len, v.shape[3])


# every op of this module by name (the front end's table; tests walk it)
OPS: dict[str, Callable[..., Tensor]] = {
    name: globals()[name]
    for name in (  # noqa: SIM905 - a block of names reads better than a list of strings
        "add sub mul div neg power exp log sqrt tanh sigmoid relu silu maximum minimum abs take "
        "one_hot concat sum max "
        "min prod mean matmul softmax logsumexp log_softmax cross_entropy rms_norm rope swiglu "
        "attention"
    ).split()
}
OPERATORS.update(OPS)  # Tensor's operators (x + y, x @ w, x.sum()) call these

__all__ = ["OPS", "as_tensor", *OPS]
