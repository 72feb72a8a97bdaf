"""Layers and losses as functions of tensors (PyTorch's ``torch.nn.functional``): each is an
op of the tensor IR or a composition of them (:mod:`tang.nn.maps`, :mod:`tang.nn.derived`),
so none writes a backward of its own."""

from __future__ import annotations

from typing import Any

from .derived import Derived
from .maps import Map
from .tensor import Tensor, _as_tensor, _int_grid, _wrap, apply


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x·weightᵀ + bias with ``weight`` shaped [out, in]; ``x`` is [..., in].

    A one-hot ``x`` (from :func:`tang.nn.one_hot`, constant) is multiplied as a row gather
    of the weight's columns; its gradient is a scatter-add."""
    if x.shape[-1:] != weight.shape[1:]:
        raise ValueError(f"linear: input {x.shape} does not end in {weight.shape[1]} features")
    lead = x.shape[:-1]
    x2 = x if x.ndim == 2 else x.reshape(-1, weight.shape[1])
    params = (weight,) if bias is None else (weight, bias)
    if x2._hot is not None and not x2.requires_grad and x2.backend is weight.backend:
        out = apply(Derived(ir_linear, hot={0: x2._hot}), x2, *params)
    else:
        out = apply(Derived(ir_linear), x2, *params)
    return out if x.ndim == 2 else out.reshape(*lead, weight.shape[0])


def ir_linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """x·weightᵀ + bias on tensors of the IR: the definition the eager op and the compiled
    step (:mod:`tang.nn.compiled`) both run."""
    out = x @ weight.T
    return out if bias is None else out + bias


def elementwise(op: str, *xs: Tensor) -> Tensor:
    """``tang.tensor.<op>`` (an element-wise op of the tensor IR) over ``xs``, broadcast;
    its gradient derived by ``tang.tensor.grad`` (:mod:`tang.nn.maps`)."""
    return apply(Map(op), *xs)


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


def silu(x: Tensor) -> Tensor:
    """x·σ(x) (swish)."""
    return apply(Map("silu"), x)


def relu(x: Tensor) -> Tensor:
    return x.relu()


def sigmoid(x: Tensor) -> Tensor:
    return x.sigmoid()


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    return x.log_softmax(dim)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    return x.softmax(dim)


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    if reduction == "none":
        return losses
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")


def cross_entropy(logits: Tensor, targets: Any, reduction: str = "mean") -> Tensor:
    """−log softmax(logits)[target], averaged over the batch: ``logits`` is [N, C] (or [C])
    and ``targets`` N class indices (a list or a tensor of whole numbers). Stable for large
    logits (the log-sum-exp is taken around the row's maximum)."""
    if logits.ndim == 1:
        logits = logits.reshape(1, -1)
        targets = [targets] if isinstance(targets, int) else targets
    if logits.ndim != 2:
        raise ValueError(f"cross_entropy: logits must be [N, C], not {logits.shape}")
    n, c = logits.shape
    B = logits.backend
    flat, shape = _int_grid(targets)
    if len(flat) != n or len(shape) > 1:
        raise ValueError(f"cross_entropy: {n} rows of logits but targets shaped {shape}")
    for row, t in enumerate(flat):
        if not 0 <= t < c:
            raise ValueError(f"cross_entropy: target {t} in row {row} is not a class in [0, {c})")
    classes = _wrap(B, B.from_flat([float(t) for t in flat], (n,)))
    return apply(Derived("cross_entropy", None, reduction), logits, classes)


def mse(prediction: Tensor, target: Any, reduction: str = "mean") -> Tensor:
    """Mean squared error (``target`` broadcasts against ``prediction``)."""
    diff = prediction - _as_tensor(target, prediction.backend)
    return _reduce(diff * diff, reduction)


mse_loss = mse
