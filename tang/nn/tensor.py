"""``Tensor``: an n-dimensional float64 array on one backend, with reverse-mode autograd.

Every differentiable operation goes through :func:`apply`, which runs one op (an
element-wise op of the tensor IR, :mod:`tang.nn.maps`, or any other, :mod:`tang.nn.derived`)
and, when gradients are wanted, records the op and its inputs on the result.
``loss.backward()`` walks that record once, outputs before inputs (iteratively: no
recursion, so deep graphs are fine in Pyodide's small stack), and leaves ``.grad`` on every
leaf tensor that ``requires_grad``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from numbers import Real
from typing import Any

from . import ops
from .backend import Backend, get_backend
from .derived import Derived
from .hot import Hot
from .maps import Map
from .pybackend import broadcast_shape, size_of, strides_of

Shape = tuple[int, ...]

_grad_enabled = [True]


def is_grad_enabled() -> bool:
    return _grad_enabled[0]


@contextmanager
def no_grad() -> Iterator[None]:
    """``with no_grad(): ...`` — no graph is recorded inside (evaluation, updates)."""
    previous = _grad_enabled[0]
    _grad_enabled[0] = False
    try:
        yield
    finally:
        _grad_enabled[0] = previous


_PLAIN = (float, int, bool)


def _is_number(x: Any) -> bool:
    """A real number (float, int, numpy scalar…), checked fast for the common types."""
    return type(x) in _PLAIN or (isinstance(x, Real) and not isinstance(x, Tensor))


def _is_list(x: Any) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, (str, bytes))


def _flatten(obj: Any) -> tuple[list[float], Shape]:
    """Nested lists/tuples of numbers → (flat row-major list, shape), with a clear error
    for ragged or non-numeric input naming where it is."""
    if _is_number(obj):
        return [float(obj)], ()
    if not _is_list(obj):
        raise TypeError(f"cannot make a tensor from {type(obj).__name__}")
    level: list[Any] = [obj]
    shape: list[int] = []
    while level and not _is_number(level[0]):
        first = level[0]
        n = len(first) if _is_list(first) else -1
        nxt: list[Any] = []
        for item in level:
            if not _is_list(item) or len(item) != n:
                raise _where_wrong(obj, len(shape), n)
            nxt.extend(item)
        shape.append(n)
        level = nxt
    if not set(map(type, level)) <= set(_PLAIN):
        for k, item in enumerate(level):
            if not _is_number(item):
                path = "".join(f"[{i}]" for i in _unravel(k, tuple(shape)))
                raise TypeError(f"x{path} is a {type(item).__name__}, not a number")
    return list(map(float, level)), tuple(shape)


def _unravel(k: int, shape: Shape) -> list[int]:
    out = []
    for n in reversed(shape):
        k, r = divmod(k, n)
        out.append(r)
    return out[::-1]


def _where_wrong(obj: Any, depth: int, n: int) -> Exception:
    """The error for the first item at ``depth`` that is not a list of length ``n``."""
    level: list[tuple[str, Any]] = [("x", obj)]
    for _ in range(depth):
        level = [(f"{p}[{i}]", v) for p, item in level for i, v in enumerate(item)]
    for path, item in level:
        if not _is_list(item):
            return TypeError(f"{path} is a {type(item).__name__}, not a list of numbers")
        if len(item) != n:
            return ValueError(f"ragged nested list: {path} has length {len(item)}, not {n}")
    return ValueError("ragged nested list")


def _array_from(obj: Any, B: Backend) -> Any:
    adopted = B.adopt(obj)
    if adopted is not None:
        return adopted
    if hasattr(obj, "shape") and hasattr(obj, "tolist") and hasattr(obj, "dtype"):
        shape = tuple(int(n) for n in obj.shape)  # a numpy array on the Python backend
        return B.from_flat([float(v) for v in obj.reshape(-1).tolist()], shape)
    if hasattr(obj, "shape") and hasattr(obj, "data") and hasattr(obj, "size"):
        return B.from_flat(list(obj.data), tuple(obj.shape))  # a PyArray on numpy
    flat, shape = _flatten(obj)
    return B.from_flat(flat, shape)


class Tensor:
    """An n-dimensional float64 array on one backend, with reverse-mode autograd."""

    __slots__ = ("_hot", "_op", "_parents", "backend", "data", "grad", "requires_grad")

    def __init__(
        self, data: Any, requires_grad: bool = False, backend: str | Backend | None = None
    ) -> None:
        if isinstance(data, Tensor):
            B = get_backend(backend) if backend is not None else data.backend
            arr = data.data if B is data.backend else _array_from(data.data, B)
            arr = B.copy(arr)
        else:
            B = get_backend(backend)
            arr = _array_from(data, B)
        self.backend = B
        self.data = arr
        self.requires_grad = bool(requires_grad)
        self.grad: Tensor | None = None
        self._op: ops.Op | None = None
        self._parents: tuple[Tensor, ...] = ()
        self._hot: Hot | None = None

    # -- basic facts -----------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return tuple(self.data.shape)

    @property
    def ndim(self) -> int:
        return len(self.data.shape)

    def numel(self) -> int:
        return size_of(self.shape)

    def size(self, dim: int | None = None) -> Shape | int:
        return self.shape if dim is None else self.shape[dim]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def is_leaf(self) -> bool:
        return self._op is None

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        if self.numel() > 24:
            head = ", ".join(f"{v:.4g}" for v in self.flat()[:6])
            return f"tensor(shape={self.shape}, [{head}, …]{grad}, backend={self.backend.name!r})"
        return f"tensor({self.tolist()}{grad}, backend={self.backend.name!r})"

    # -- reading out -------------------------------------------------------------------------
    def tolist(self) -> Any:
        """Nested lists of floats (a float for a 0-d tensor)."""
        flat = self.backend.to_flat(self.data)
        shape = self.shape
        if not shape:
            return flat[0]
        for k in range(len(shape) - 1, 0, -1):  # group the innermost axis first
            rows = math.prod(shape[:k])  # lists at this level (an axis of 0 elements too)
            n = shape[k]
            flat = [flat[i * n : (i + 1) * n] for i in range(rows)]
        return flat

    def flat(self) -> list[float]:
        """The values as one row-major list."""
        return self.backend.to_flat(self.data)

    def item(self) -> float:
        if self.numel() != 1:
            raise ValueError(f"item() needs a tensor of one element, not shape {self.shape}")
        return float(self.backend.to_flat(self.data)[0])

    def numpy(self) -> Any:
        import numpy as np

        return np.asarray(self.backend.to_flat(self.data), dtype=np.float64).reshape(self.shape)

    def detach(self) -> Tensor:
        """The same numbers, cut from the graph (no copy)."""
        return _wrap(self.backend, self.data)

    def clone(self) -> Tensor:
        return _wrap(self.backend, self.backend.copy(self.data))

    def to(self, backend: str | Backend) -> Tensor:
        """This tensor on ``backend`` (a copy, cut from the graph; itself if already there)."""
        B = get_backend(backend)
        if B is self.backend:
            return self
        out = _wrap(B, _array_from(self.data, B), self.requires_grad)
        out._hot = self._hot
        return out

    def requires_grad_(self, flag: bool = True) -> Tensor:
        self.requires_grad = flag
        return self

    # -- autograd ----------------------------------------------------------------------------
    def backward(self, grad: Tensor | None = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into ``leaf.grad`` for every leaf that requires grad;
        ``grad`` weights a non-scalar output (default 1 for a one-element tensor)."""
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        B = self.backend
        if grad is None:
            if self.numel() != 1:
                raise RuntimeError(
                    f"backward() without a gradient needs a one-element output, not {self.shape}"
                )
            seed = B.full(self.shape, 1.0)
        else:
            seed = _as_tensor(grad, B).data
            if tuple(seed.shape) != self.shape:
                raise ValueError(f"gradient shape {tuple(seed.shape)} ≠ output {self.shape}")
        order = _topo_order(self)
        with B.ieee():  # one IEEE context for the whole pass, not one per op
            self._backward(order, seed)
        if not retain_graph:
            for node in order:
                if node._op is not None:
                    node._op = None
                    node._parents = ()

    def _backward(self, order: list[Tensor], seed: Any) -> None:
        B = self.backend
        grads: dict[int, Any] = {id(self): seed}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            op = node._op
            if op is None:
                node.grad = _wrap(B, g) if node.grad is None else _wrap(B, B.add(node.grad.data, g))
                continue
            for parent, pg in zip(node._parents, op.backward(B, g)):
                if pg is None or not parent.requires_grad:
                    continue
                key = id(parent)
                prev = grads.get(key)
                grads[key] = pg if prev is None else B.add(prev, pg)

    # -- arithmetic --------------------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return apply(Map("add"), self, _as_tensor(other, self.backend))

    def __radd__(self, other: Any) -> Tensor:
        return apply(Map("add"), _as_tensor(other, self.backend), self)

    def __sub__(self, other: Any) -> Tensor:
        return apply(Map("sub"), self, _as_tensor(other, self.backend))

    def __rsub__(self, other: Any) -> Tensor:
        return apply(Map("sub"), _as_tensor(other, self.backend), self)

    def __mul__(self, other: Any) -> Tensor:
        if _is_number(other):
            return apply(Map("mul", float(other)), self)
        return apply(Map("mul"), self, _as_tensor(other, self.backend))

    def __rmul__(self, other: Any) -> Tensor:
        if _is_number(other):
            return apply(Map("mul", float(other)), self)
        return apply(Map("mul"), _as_tensor(other, self.backend), self)

    def __truediv__(self, other: Any) -> Tensor:
        if _is_number(other) and other != 0:
            return apply(Map("mul", 1.0 / float(other)), self)
        return apply(Map("div"), self, _as_tensor(other, self.backend))

    def __rtruediv__(self, other: Any) -> Tensor:
        return apply(Map("div"), _as_tensor(other, self.backend), self)

    def __neg__(self) -> Tensor:
        return apply(Map("neg"), self)

    def __pow__(self, p: Any) -> Tensor:
        if not _is_number(p):
            raise TypeError("tensor ** p needs a constant number p (use exp/log for a tensor)")
        return apply(Map("power", float(p)), self)

    def __matmul__(self, other: Any) -> Tensor:
        other = _as_tensor(other, self.backend)
        a, b = self, other
        if a.ndim == 1:
            a = a.reshape(1, -1)
        if b.ndim == 1:
            b = b.reshape(-1, 1)
        if a.ndim != 2 or b.ndim != 2:
            raise ValueError(f"matmul takes 1-D or 2-D tensors, not {self.shape} @ {other.shape}")
        if a.shape[1] != b.shape[0]:
            raise ValueError(f"matmul: inner sizes differ ({a.shape[1]} and {b.shape[0]})")
        out = apply(Derived("matmul"), a, b)
        if self.ndim == 1 and other.ndim == 1:
            return out.reshape(())
        if self.ndim == 1:
            return out.reshape(-1)
        if other.ndim == 1:
            return out.reshape(-1)
        return out

    def __rmatmul__(self, other: Any) -> Tensor:
        return _as_tensor(other, self.backend) @ self

    # -- element-wise functions --------------------------------------------------------------
    def exp(self) -> Tensor:
        return apply(Map("exp"), self)

    def log(self) -> Tensor:
        return apply(Map("log"), self)

    def sqrt(self) -> Tensor:
        return apply(Map("sqrt"), self)

    def tanh(self) -> Tensor:
        return apply(Map("tanh"), self)

    def sigmoid(self) -> Tensor:
        return apply(Map("sigmoid"), self)

    def relu(self) -> Tensor:
        return apply(Map("relu"), self)

    def abs(self) -> Tensor:
        return apply(Map("abs"), self)

    def maximum(self, other: Any) -> Tensor:
        """The larger of each pair, broadcast (a tie's gradient goes to ``self``)."""
        return apply(Map("maximum"), self, _as_tensor(other, self.backend))

    def minimum(self, other: Any) -> Tensor:
        """The smaller of each pair, broadcast (a tie's gradient goes to ``self``)."""
        return apply(Map("minimum"), self, _as_tensor(other, self.backend))

    # -- reductions --------------------------------------------------------------------------
    def sum(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        return apply(Derived("sum", self._dims(dim), keepdim), self)

    def mean(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        dims = self._dims(dim)
        count = size_of(tuple(self.shape[d] for d in dims))
        if count == 0:
            raise ValueError("mean of an empty tensor")
        return apply(Derived("sum", dims, keepdim), self) * (1.0 / count)

    def max(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The largest values along ``dim`` (of everything when ``None``). Unlike PyTorch
        this returns the values only; :meth:`argmax` gives the positions. Tied elements
        share the gradient evenly (PyTorch's ``amax``)."""
        if dim is None:
            return apply(Derived("max", None, False), self)
        return apply(Derived("max", self._dim(dim), keepdim), self)

    def argmax(self, dim: int | None = None) -> list[int]:
        """Positions of the first largest values along ``dim`` (row-major, as ints)."""
        if dim is None:
            flat = self.backend.reshape(self.data, (self.numel(),))
            return self.backend.argmax_flat(flat, 0)
        d = self._dim(dim)
        n, inner = self.shape[d], size_of(self.shape[d + 1 :])
        return [(i // inner) % n for i in self.backend.argmax_flat(self.data, d)]

    def log_softmax(self, dim: int = -1) -> Tensor:
        return apply(Derived("log_softmax", self._dim(dim)), self)

    def softmax(self, dim: int = -1) -> Tensor:
        return self.log_softmax(dim).exp()

    # -- shapes and indexing -----------------------------------------------------------------
    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        target = _resolve_shape(shape, self.numel(), self.shape)
        out = apply(Derived(_reshape, target), self)
        if self._hot is not None:
            out._hot = _reshape_hot(self._hot, self.shape, target)
        return out

    view = reshape

    def flatten(self, start_dim: int = 0) -> Tensor:
        s = self._dim(start_dim) if self.ndim else 0
        return self.reshape(*self.shape[:s], -1)

    def permute(self, *dims: int) -> Tensor:
        perm = tuple(self._dim(d) for d in (dims[0] if len(dims) == 1 else dims))
        if sorted(perm) != list(range(self.ndim)):
            raise ValueError(f"permute needs each of the {self.ndim} dims once, not {perm}")
        return apply(Derived(_permute, perm), self)

    def transpose(self, dim0: int = 0, dim1: int = 1) -> Tensor:
        perm = list(range(self.ndim))
        a, b = self._dim(dim0), self._dim(dim1)
        perm[a], perm[b] = perm[b], perm[a]
        return apply(Derived(_permute, tuple(perm)), self)

    @property
    def T(self) -> Tensor:
        return self.permute(*reversed(range(self.ndim)))

    def expand(self, *shape: int) -> Tensor:
        return apply(Derived(_broadcast, tuple(shape[0] if len(shape) == 1 else shape)), self)

    def __getitem__(self, key: Any) -> Tensor:
        index, shape = _index_of(key, self.shape)
        return _picked(self, index, shape)

    def gather(self, dim: int, index: Any) -> Tensor:
        """PyTorch's ``gather``: ``out[i][j] = self[i][index[i][j]]`` for ``dim=1``."""
        d = self._dim(dim)
        flat, shape = _int_grid(index)
        if len(shape) != self.ndim:
            raise ValueError(f"gather: index has {len(shape)} dims, the tensor {self.ndim}")
        for i, (n, m) in enumerate(zip(shape, self.shape)):
            if i != d and n > m:
                raise ValueError(f"gather: index shape {shape} exceeds {self.shape} in dim {i}")
        strides = strides_of(self.shape)
        base = [0]
        for axis, n in enumerate(shape):
            step = strides[axis] if axis != d else 0
            base = [b + k * step for b in base for k in range(n)]
        limit, step = self.shape[d], strides[d]
        out = []
        for pos, (b, k) in enumerate(zip(base, flat)):
            if not -limit <= k < limit:
                raise IndexError(f"gather: index {k} at flat position {pos} out of range {limit}")
            out.append(b + (k % limit) * step)
        return _picked(self, out, shape)

    # -- helpers -----------------------------------------------------------------------------
    def _dim(self, d: int) -> int:
        n = self.ndim
        if not -n <= d < n:
            raise IndexError(f"dim {d} out of range for a {n}-d tensor")
        return d % n

    def _dims(self, dim: int | Sequence[int] | None) -> tuple[int, ...]:
        if dim is None:
            return tuple(range(self.ndim))
        if isinstance(dim, int):
            return (self._dim(dim),)
        return tuple(sorted({self._dim(d) for d in dim}))


class Parameter(Tensor):
    """A tensor a Module owns and an optimizer updates: ``requires_grad`` by default."""

    __slots__ = ()

    def __init__(
        self, data: Any, requires_grad: bool = True, backend: str | Backend | None = None
    ) -> None:
        super().__init__(data, requires_grad=requires_grad, backend=backend)


def _reshape(a: Any, shape: Shape) -> Any:  # views of tang.tensor, as ops of Derived
    return a.reshape(shape)


def _permute(a: Any, perm: Shape) -> Any:
    return a.permute(perm)


def _broadcast(a: Any, shape: Shape) -> Any:
    return a.broadcast_to(shape)


def _picked(t: Tensor, index: list[int], shape: Shape) -> Tensor:
    """``out[i] = t.flat[index[i]]`` shaped ``shape``: slicing, row picks, ``gather``;
    the tensor IR's ``take`` with the positions as a constant tensor."""
    B = t.backend
    at = _wrap(B, B.from_flat([float(i) for i in index], (len(index),)))
    return apply(Derived(_take_flat, shape), t, at)


def _take_flat(a: Any, index: Any, shape: Shape) -> Any:
    from ..tensor import take

    return take(a.reshape(-1), index).reshape(shape)


def _concat(*parts: Any) -> Any:
    from ..tensor import concat

    return concat(parts, 0)


def _wrap(B: Backend, data: Any, requires_grad: bool = False, cls: type = Tensor) -> Any:
    """A tensor (or ``cls``) around an existing backend array (no copy, no checks)."""
    t = cls.__new__(cls)
    t.backend = B
    t.data = data
    t.requires_grad = requires_grad
    t.grad = None
    t._op = None
    t._parents = ()
    t._hot = None
    return t


def _as_tensor(x: Any, B: Backend) -> Tensor:
    if isinstance(x, Tensor):
        if x.backend is not B:
            raise ValueError(
                f"tensors on different backends ({x.backend.name} and {B.name}): use .to()"
            )
        return x
    if _is_number(x):
        return _wrap(B, B.full((), float(x)))
    return Tensor(x, backend=B)


def apply(op: ops.Op, *inputs: Tensor) -> Tensor:
    """Run ``op`` on ``inputs`` and, when gradients are on, record it on the result."""
    B = inputs[0].backend
    for t in inputs:
        if t.backend is not B:
            raise ValueError(
                f"tensors on different backends ({B.name} and {t.backend.name}): use .to()"
            )
    op.needs = needs = tuple([t.requires_grad for t in inputs])
    out = _wrap(B, op.forward(B, *[t.data for t in inputs]))
    if _grad_enabled[0] and any(needs):
        out.requires_grad = True
        out._op = op
        out._parents = inputs
    return out


def _topo_order(root: Tensor) -> list[Tensor]:
    """Nodes that need a gradient, each after all of its inputs (iterative DFS)."""
    order: list[Tensor] = []
    seen: set[int] = set()
    stack: list[tuple[Tensor, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for parent in node._parents:
            if parent.requires_grad and id(parent) not in seen:
                stack.append((parent, False))
    return order


def _resolve_shape(shape: tuple, count: int, old: Shape) -> Shape:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(n) for n in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: only one -1 allowed in {shape}")
    if -1 in shape:
        known = size_of(tuple(n for n in shape if n != -1))
        if known == 0 or count % known:
            raise ValueError(f"reshape: cannot view {old} ({count} elements) as {shape}")
        shape = tuple(count // known if n == -1 else n for n in shape)
    if any(n < 0 for n in shape) or size_of(shape) != count:
        raise ValueError(f"reshape: cannot view {old} ({count} elements) as {shape}")
    return shape


def _reshape_hot(hot: Hot, old: Shape, new: Shape) -> Hot | None:
    """The hot columns after a reshape that keeps or merges whole trailing rows, else None."""
    if not old or not new:
        return None
    width, new_width = old[-1], new[-1]
    if new_width == width:
        return hot
    if width == 0 or new_width % width:
        return None
    return hot.merged(new_width // width, width)


def _int_grid(obj: Any) -> tuple[list[int], Shape]:
    """Integer indices (nested lists or a tensor of whole numbers) → (flat ints, shape)."""
    if isinstance(obj, Tensor):
        values, shape = obj.flat(), obj.shape
    elif type(obj) is list and (rows := _int_rows(obj)) is not None:
        return rows
    else:
        values, shape = _flatten(obj)
    out = []
    for v in values:
        if v != int(v):
            raise TypeError(f"index {v} is not a whole number")
        out.append(int(v))
    return out, shape


def _int_rows(obj: list) -> tuple[list[int], Shape] | None:
    """A flat list of ints, or an equal-length list of such lists (a batch of windows), read
    at C speed without a float round trip; ``None`` for anything else (left to the general
    path, which also names what is wrong)."""
    if not obj:
        return None
    kinds = set(map(type, obj))
    if kinds == {int}:
        return list(obj), (len(obj),)
    if kinds != {list} or len(set(map(len, obj))) != 1:
        return None
    flat = list(chain.from_iterable(obj))
    if flat and set(map(type, flat)) != {int}:
        return None
    return flat, (len(obj), len(obj[0]))


def _index_of(key: Any, shape: Shape) -> tuple[list[int], Shape]:
    """Flat positions and result shape for basic indexing (ints, slices, ``...``) plus at
    most one list/tensor of ints (picks along its axis)."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("only one ... allowed in an index")
    if Ellipsis in [k for k in key if k is Ellipsis]:
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = len(shape) - (len(key) - 1)
        key = key[:at] + (slice(None),) * fill + key[at + 1 :]
    if len(key) > len(shape):
        raise IndexError(f"too many indices ({len(key)}) for a {len(shape)}-d tensor")
    key = key + (slice(None),) * (len(shape) - len(key))
    strides = strides_of(shape)
    index = [0]
    out_shape: list[int] = []
    picks = 0
    for axis, (k, n, step) in enumerate(zip(key, shape, strides)):
        if isinstance(k, bool):
            raise IndexError("boolean indices are not supported")
        if isinstance(k, int):
            if not -n <= k < n:
                raise IndexError(f"index {k} out of range for dim {axis} of size {n}")
            off = (k % n) * step
            index = [b + off for b in index]
        elif isinstance(k, slice):
            chosen = range(*k.indices(n))
            out_shape.append(len(chosen))
            index = [b + i * step for b in index for i in chosen]
        else:
            picks += 1
            if picks > 1:
                raise IndexError("only one list/tensor index is supported")
            values, pshape = _int_grid(k)
            if len(pshape) != 1:
                raise IndexError("a list index must be 1-D")
            for v in values:
                if not -n <= v < n:
                    raise IndexError(f"index {v} out of range for dim {axis} of size {n}")
            out_shape.append(len(values))
            index = [b + (v % n) * step for b in index for v in values]
    return index, tuple(out_shape)


# -- making tensors -----------------------------------------------------------------------------
def tensor(data: Any, requires_grad: bool = False, backend: str | Backend | None = None) -> Tensor:
    """A tensor from nested lists, a number, a numpy array or another tensor (copied)."""
    return Tensor(data, requires_grad=requires_grad, backend=backend)


def full(
    shape: Sequence[int], value: float, requires_grad: bool = False, backend: Any = None
) -> Tensor:
    B = get_backend(backend)
    return _wrap(B, B.full(tuple(shape), float(value)), requires_grad)


def zeros(*shape: int, requires_grad: bool = False, backend: Any = None) -> Tensor:
    dims = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return full(dims, 0.0, requires_grad, backend)


def ones(*shape: int, requires_grad: bool = False, backend: Any = None) -> Tensor:
    dims = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return full(dims, 1.0, requires_grad, backend)


def randn(
    *shape: int, seed: int | None = None, requires_grad: bool = False, backend: Any = None
) -> Tensor:
    """Standard normal numbers from ``random.Random(seed)``: the same on every backend."""
    dims = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    rng = random.Random(seed)
    B = get_backend(backend)
    flat = [rng.gauss(0.0, 1.0) for _ in range(size_of(dims))]
    return _wrap(B, B.from_flat(flat, dims), requires_grad)


def rand(
    *shape: int, seed: int | None = None, requires_grad: bool = False, backend: Any = None
) -> Tensor:
    """Uniform numbers in [0, 1) from ``random.Random(seed)``."""
    dims = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    rng = random.Random(seed)
    B = get_backend(backend)
    flat = [rng.random() for _ in range(size_of(dims))]
    return _wrap(B, B.from_flat(flat, dims), requires_grad)


def one_hot(indices: Any, num_classes: int, backend: Any = None) -> Tensor:
    """``out[..., c] = 1.0 if indices[...] == c``: shape ``indices.shape + (num_classes,)``.

    The result remembers its hot columns, and keeps them through a reshape that merges
    whole trailing rows (``[B, 8, 30] → [B, 240]``), so :func:`tang.nn.functional.linear`
    multiplies it by a weight as a row gather, with a scatter-add for the gradient."""
    flat, shape = _int_grid(indices)
    if flat and not (min(flat) >= 0 and max(flat) < num_classes):
        pos, v = next((p, v) for p, v in enumerate(flat) if not 0 <= v < num_classes)
        raise ValueError(f"one_hot: index {v} at flat position {pos} not in [0, {num_classes})")
    B = get_backend(backend)
    out = _wrap(B, B.reshape(B.one_hot(flat, num_classes), (*shape, num_classes)))
    out._hot = Hot(flat)
    return out


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along dim 0 (their other dims must agree)."""
    if dim != 0:
        raise ValueError("cat joins along dim 0 only")
    if not tensors:
        raise ValueError("cat of no tensors")
    rest = tensors[0].shape[1:]
    for t in tensors:
        if t.shape[1:] != rest:
            raise ValueError(f"cat: shapes {tensors[0].shape} and {t.shape} differ past dim 0")
    return apply(Derived(_concat), *tensors)


def broadcast_shapes(*shapes: Shape) -> Shape:
    out: Shape = ()
    for s in shapes:
        out = broadcast_shape(out, tuple(s))
    return out


__all__ = [
    "Parameter",
    "Tensor",
    "apply",
    "broadcast_shapes",
    "cat",
    "full",
    "is_grad_enabled",
    "no_grad",
    "one_hot",
    "ones",
    "rand",
    "randn",
    "tensor",
    "zeros",
]
