"""The products, reductions and moves of ``tang.nn``: one small class per op, its forward
rule and its local derivative (vector-Jacobian product) side by side. The element-wise ops
write neither: they are the tensor IR's, their slopes derived (:mod:`tang.nn.maps`).

``forward(B, *arrays)`` computes the value with the backend ``B``'s array primitives and
keeps on ``self`` what the slope needs; ``backward(B, g)`` turns the output's gradient ``g``
into one gradient per input, ``None`` where ``self.needs`` says that input wants none. A
new layer is a composition of these: it never writes a backward.
"""

from __future__ import annotations

from typing import Any

Array = Any
Grads = tuple[Array | None, ...]


class Op:
    """One differentiable primitive (see the module docstring)."""

    needs: tuple[bool, ...] = ()

    def forward(self, B, *xs: Array) -> Array:
        raise NotImplementedError

    def backward(self, B, g: Array) -> Grads:
        raise NotImplementedError


# -- products --------------------------------------------------------------------------------
class MatMul(Op):  # 2-D a·b
    def forward(self, B, a, b):
        self.a, self.b = a, b
        return B.matmul(a, b)

    def backward(self, B, g):
        na, nb = self.needs
        return (
            B.matmul(g, self.b, tb=True) if na else None,  # g·bᵀ
            B.matmul(self.a, g, ta=True) if nb else None,  # aᵀ·g
        )


class Linear(Op):  # x·wᵀ (+ b), w shaped [out, in] as in PyTorch
    def forward(self, B, x, w, b=None):
        self.x, self.w = x, w
        return B.linear(x, w, b)  # the bias joins each dot: no product tensor, no copy of b

    def backward(self, B, g):
        nx, nw, *nb = self.needs
        return (
            B.matmul(g, self.w) if nx else None,  # g·w
            B.matmul(g, self.x, ta=True) if nw else None,  # gᵀ·x
            *([B.sum(g, (0,), False)] if nb and nb[0] else [None] * len(nb)),
        )


class HotLinear(Op):  # x·wᵀ (+ b) for a constant 0/1 x given by its hot columns per row
    def __init__(self, hot: list[list[int]]) -> None:
        self.hot = hot

    def forward(self, B, w, b=None):
        self.w_shape = w.shape
        return B.hot_matmul(self.hot, w, b)  # a row gather, not a product

    def backward(self, B, g):
        nw, *nb = self.needs
        return (
            B.hot_matmul_grad(self.hot, g, self.w_shape) if nw else None,  # a scatter-add
            *([B.sum(g, (0,), False)] if nb and nb[0] else [None] * len(nb)),
        )


# -- reductions ------------------------------------------------------------------------------
class Sum(Op):
    def __init__(self, dims: tuple[int, ...], keepdim: bool) -> None:
        self.dims, self.keepdim = dims, keepdim

    def forward(self, B, a):
        self.shape = a.shape
        return B.sum(a, self.dims, self.keepdim)

    def backward(self, B, g):  # every input element gets its sum's gradient
        kept = tuple(1 if i in self.dims else n for i, n in enumerate(self.shape))
        return (B.broadcast_to(B.reshape(g, kept), self.shape),)


class Max(Op):  # the gradient goes to the first maximum, as with an index pick
    def __init__(self, dim: int, keepdim: bool) -> None:
        self.dim, self.keepdim = dim, keepdim

    def forward(self, B, a):
        self.shape = a.shape
        self.index = B.argmax_flat(a, self.dim)
        out = tuple(
            1 if i == self.dim else n
            for i, n in enumerate(a.shape)
            if self.keepdim or i != self.dim
        )
        return B.gather_flat(a, self.index, out)

    def backward(self, B, g):
        return (B.scatter_add_flat(g, self.index, self.shape),)


class LogSoftmax(Op):  # a − max − log Σ exp(a − max): stable for large logits
    def __init__(self, dim: int) -> None:
        self.dim = dim

    def forward(self, B, a):
        dims = (self.dim,)
        z = B.sub(a, B.amax(a, dims, True))
        self.y = B.sub(z, B.log(B.sum(B.exp(z), dims, True)))
        return self.y

    def backward(self, B, g):  # g − softmax·Σg
        return (B.sub(g, B.mul(B.exp(self.y), B.sum(g, (self.dim,), True))),)


# -- moving data -----------------------------------------------------------------------------
class Reshape(Op):
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def forward(self, B, a):
        self.in_shape = a.shape
        return B.reshape(a, self.shape)

    def backward(self, B, g):
        return (B.reshape(g, self.in_shape),)


class Transpose(Op):
    def __init__(self, perm: tuple[int, ...]) -> None:
        self.perm = perm

    def forward(self, B, a):
        return B.transpose(a, self.perm)

    def backward(self, B, g):
        inverse = tuple(sorted(range(len(self.perm)), key=self.perm.__getitem__))
        return (B.transpose(g, inverse),)


class BroadcastTo(Op):
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def forward(self, B, a):
        self.in_shape = a.shape
        return B.broadcast_to(a, self.shape)

    def backward(self, B, g):
        return (B.sum_to(g, self.in_shape),)


class Gather(Op):  # out[i] = a.flat[index[i]]: slicing, row picks, torch.gather
    def __init__(self, index: list[int], shape: tuple[int, ...]) -> None:
        self.index, self.shape = index, shape

    def forward(self, B, a):
        self.in_shape = a.shape
        return B.gather_flat(a, self.index, self.shape)

    def backward(self, B, g):  # a scatter-add: repeated picks add up
        return (B.scatter_add_flat(g, self.index, self.in_shape),)


class Concat(Op):  # along dim 0 of equally shaped trailing dims
    def forward(self, B, *xs):
        self.sizes = [x.shape[0] for x in xs]
        self.rest = xs[0].shape[1:]
        flat = [v for x in xs for v in B.to_flat(x)]
        return B.from_flat(flat, (sum(self.sizes), *self.rest))

    def backward(self, B, g):
        out, start = [], 0
        width = 1
        for n in self.rest:
            width *= n
        for size, need in zip(self.sizes, self.needs):
            if need:
                index = list(range(start * width, (start + size) * width))
                out.append(B.gather_flat(g, index, (size, *self.rest)))
            else:
                out.append(None)
            start += size
        return tuple(out)
