"""The tensor front end: lazy tensors that record comprehensions, and ``graph`` to collect them.

A ``Tensor`` is a buffer (an input, or a comprehension's output) seen through a ``View``:
``.T``, slicing, broadcasting and affine reshapes only change the view. ``comprehend`` is the
one way to compute: an einsum-like spec names each operand's axes by letters; letters of the
output are its index variables, the others are reduced under a monoid; the body is Python
over the operands' elements (graph nodes). Every op in ``tang.tensor.ops`` is written with it.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..expr.graph import Node, as_node, var
from .comprehension import (
    SUM,
    Comprehension,
    Monoid,
    Reads,
    TensorGraph,
    TensorIRError,
    index_names,
    reduce_names,
    rename,
)
from .view import NonAffineReshape, View

_serial = itertools.count()


@dataclass(frozen=True, eq=False)
class InputBuffer:
    """A named input of a graph."""

    name: str
    shape: tuple[int, ...]
    packed: str | None = None  # element type of a packed input (tang.tensor.packed)


Buffer = InputBuffer | Comprehension


class Tensor:
    """A buffer seen through a view; operations record comprehensions (nothing runs)."""

    __slots__ = ("buffer", "parents", "view")

    def __init__(self, buffer: Buffer, view: View, parents: tuple[Tensor, ...] = ()) -> None:
        self.buffer, self.view, self.parents = buffer, view, parents

    @property
    def shape(self) -> tuple[int, ...]:
        return self.view.shape

    @property
    def ndim(self) -> int:
        return self.view.ndim

    def __repr__(self) -> str:
        return f"Tensor({self.buffer.name}, shape={self.shape})"

    def _with(self, view: View) -> Tensor:
        return Tensor(self.buffer, view, self.parents)

    # ---- views: no copies ----
    @property
    def T(self) -> Tensor:
        return self._with(self.view.T)

    def transpose(self, a: int = -2, b: int = -1) -> Tensor:
        return self._with(self.view.transpose(a, b))

    def permute(self, *axes: int) -> Tensor:
        return self._with(
            self.view.permute(
                axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
            )
        )

    def __getitem__(self, key: object) -> Tensor:
        return self._with(self.view[key])

    def broadcast_to(self, shape: Sequence[int]) -> Tensor:
        return self._with(self.view.broadcast_to(shape))

    def expand_dims(self, axis: int) -> Tensor:
        return self._with(self.view.expand_dims(axis))

    def reshape(self, *shape: Any) -> Tensor:
        """An affine reshape is a view; any other first materialises a contiguous copy (a
        comprehension of its own, visible in the graph)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        try:
            return self._with(self.view.reshape(shape))
        except NonAffineReshape:
            copy = self.materialize()
            return copy._with(copy.view.reshape(shape))

    def materialize(self) -> Tensor:
        """A contiguous copy: an element-wise comprehension that reads this view."""
        letters = _letters(self.ndim)
        return comprehend(letters, [(self, letters)], lambda x: x)

    # ---- arithmetic: element-wise comprehensions (tang.tensor.ops) ----
    def __add__(self, other: Any) -> Tensor:
        return OPERATORS.add(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return OPERATORS.add(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return OPERATORS.sub(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return OPERATORS.sub(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return OPERATORS.mul(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return OPERATORS.mul(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return OPERATORS.div(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return OPERATORS.div(other, self)

    def __neg__(self) -> Tensor:
        return OPERATORS.neg(self)

    def __pow__(self, other: Any) -> Tensor:
        return OPERATORS.power(self, other)

    def __matmul__(self, other: Tensor) -> Tensor:
        return OPERATORS.matmul(self, other)

    def sum(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return OPERATORS.sum(self, axis, keepdims)

    def max(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return OPERATORS.max(self, axis, keepdims)

    def mean(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return OPERATORS.mean(self, axis, keepdims)


class _Operators(dict):
    """Op name → function, filled by ``tang.tensor.ops`` (which imports this module): what
    Tensor's operators call, so the op definitions stay in one module."""

    def __getattr__(self, name: str) -> Callable[..., Tensor]:
        return self[name]


OPERATORS: _Operators = _Operators()


def _letters(n: int, skip: str = "") -> str:
    pool = [c for c in "abcdefghjklmnopqstuvwxyzABCDEFGHJKLMNOPQSTUVWXYZ" if c not in skip]
    if n > len(pool):
        raise TensorIRError(f"a rank of {n} is more than the front end's {len(pool)} axes")
    return "".join(pool[:n])


def input(name: str, shape: Sequence[int], *, packed: str | None = None) -> Tensor:
    """A named input of the given shape (a contiguous buffer). ``packed``: its elements
    are narrower than a word ("u4", "u8", "i8", "f16", see ``tang.tensor.packed``) and
    reach the device as the words that hold them, e.g. a quantized weight file's bytes."""
    if not isinstance(name, str) or not name.isidentifier():
        raise TensorIRError(f"an input name is an identifier, not {name!r}")
    shape = tuple(shape)
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise TensorIRError(f"input {name}: extents are positive integers, got {shape}")
    if packed is not None:
        from .packed import ELEMENTS

        if packed not in ELEMENTS:
            raise TensorIRError(
                f"input {name}: packed elements are {', '.join(ELEMENTS)}, not {packed!r}"
            )
    return Tensor(InputBuffer(name, shape, packed), View.contiguous(shape))


def as_tensor(x: Any) -> Tensor:
    """A tensor, or a Python number as a 0-d constant tensor."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return comprehend("", [], lambda: as_node(float(x)))
    raise TypeError(f"expected a tensor or a number, got {type(x).__name__}")


def comprehend(
    spec: str,
    operands: Sequence[tuple[Tensor, str]],
    body: Callable[..., Node | float | Sequence[Node | float]],
    *,
    monoid: Monoid | None = None,
    extents: Mapping[str, int] | None = None,
    index: bool = False,
) -> Tensor:
    """The output with axes ``spec`` (letters); each operand is (tensor, its axes' letters).
    Letters not in ``spec`` are reduced under ``monoid`` (sum by default); an extent-1 axis
    broadcasts against its letter's extent. ``body(*elements)`` builds the summand from the
    operands' elements; with ``index``, ``body(ix, *elements)`` where ``ix`` maps each letter
    to its index variable (a graph node)."""
    sizes: dict[str, int] = dict(extents or {})
    for tensor, letters in operands:
        if len(letters) != tensor.ndim:
            raise TensorIRError(f"axes {letters!r} for a tensor of shape {tensor.shape}")
        for letter, n in zip(letters, tensor.shape):
            if sizes.get(letter, 1) == 1:
                sizes[letter] = n
            elif n not in (1, sizes[letter]):
                raise TensorIRError(
                    f"axis {letter!r} has extent {sizes[letter]} in one operand and {n} in another"
                )
    reduced: list[str] = []
    for _, letters in operands:
        reduced += [c for c in letters if c not in spec and c not in reduced]
    missing = [c for c in spec if c not in sizes]
    if missing or len(set(spec)) != len(spec):
        raise TensorIRError(f"output axes {spec!r}: each must appear once and have an extent")
    order = list(spec) + reduced
    names = index_names(len(spec)) + reduce_names(len(reduced))
    extents_ = tuple(sizes[c] for c in order)
    shapes = {t.buffer.name: t.buffer.shape for t, _ in operands}
    reads = Reads(names, shapes)
    elements = []
    for tensor, letters in operands:
        strides = [0] * len(order)
        for letter, n, s in zip(letters, tensor.shape, tensor.view.strides):
            if n != 1:
                strides[order.index(letter)] += s
        elements.append(
            reads.load(tensor.buffer.name, View(extents_, tuple(strides), tensor.view.offset))
        )
    if index:
        ix = {c: var(n) for c, n in zip(order, names)}
        value = body(ix, *elements)
    else:
        value = body(*elements)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if reduced and monoid is None:
        monoid = SUM
    if not reduced:
        monoid = None
    nodes = tuple(as_node(v) for v in values)
    comp = Comprehension(
        f"%{next(_serial)}",
        tuple(sizes[c] for c in spec),
        names[: len(spec)],
        tuple(zip(names[len(spec) :], extents_[len(spec) :])),
        monoid,
        nodes,
        reads.reads,
        None,
        shapes,
        _origin(),
    ).validate()
    return Tensor(comp, View.contiguous(comp.shape), tuple(t for t, _ in operands))


def stop_gradient(x: Tensor) -> Tensor:
    """``x``'s values, a constant to ``tang.tensor.grad`` (JAX's ``stop_gradient``, PyTorch's
    ``detach``). What a shift for stability needs (a softmax's max: the gradient does not
    depend on it). The comprehension that makes ``x`` is emitted again under a fresh name,
    marked, so no copy is made; where ``x`` is also read unmarked, both are computed. An
    input is copied first (an element-wise map, which fusion folds away)."""
    if not isinstance(x.buffer, Comprehension):
        x = x.materialize()
    marked = dataclasses.replace(x.buffer, name=f"%{next(_serial)}", stop_gradient=True)
    return Tensor(marked, x.view, x.parents)


_FRONT = (os.path.join("tang", "tensor", ""), os.path.join("tang", "expr", ""))


def _origin() -> str:
    """``file:line`` of the innermost caller outside tang's tensor front end and graph
    (the op's user, or the library function defining it)."""
    frame = sys._getframe(2)
    while frame is not None and any(part in frame.f_code.co_filename for part in _FRONT):
        frame = frame.f_back
    if frame is None:
        return ""
    return f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}"


def graph(*tensors: Tensor, **named: Tensor) -> TensorGraph:
    """The comprehension graph computing the given tensors (positional ones are called
    ``y0, y1, …``). Outputs that are views of other buffers become copies."""
    outputs: dict[str, Tensor] = {f"y{k}": t for k, t in enumerate(tensors)}
    for key, t in named.items():
        if key in outputs:
            raise TensorIRError(f"two outputs are called {key!r}")
        outputs[key] = t
    if not outputs:
        raise TensorIRError("a graph needs at least one output")
    for key, t in outputs.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"output {key} is a {type(t).__name__}, not a Tensor")
        same_memory = (
            t.view.is_contiguous and not t.view.offset and t.view.size == numel(t.buffer.shape)
        )
        if isinstance(t.buffer, InputBuffer) or not same_memory:
            outputs[key] = t.materialize()
    order: list[Buffer] = []
    seen: set[int] = set()
    inputs: dict[str, tuple[int, ...]] = {}
    packed: dict[str, str] = {}
    by_name: dict[str, InputBuffer] = {}
    for root in outputs.values():  # children first, on an explicit stack
        stack = [(root, iter(root.parents))]
        if id(root.buffer) in seen:
            continue
        while stack:
            t, it = stack[-1]
            for p in it:
                if id(p.buffer) not in seen:
                    stack.append((p, iter(p.parents)))
                    break
            else:
                stack.pop()
                if id(t.buffer) in seen:
                    continue
                seen.add(id(t.buffer))
                order.append(t.buffer)
                if isinstance(t.buffer, InputBuffer):
                    other = by_name.setdefault(t.buffer.name, t.buffer)
                    if other is not t.buffer:
                        raise TensorIRError(f"two different inputs are called {t.buffer.name!r}")
                    inputs[t.buffer.name] = t.buffer.shape
                    if t.buffer.packed:
                        packed[t.buffer.name] = t.buffer.packed
    out_names = {id(t.buffer): key for key, t in outputs.items()}
    if len(out_names) != len(outputs):
        raise TensorIRError("two outputs share one buffer; name it once")
    clash = set(outputs) & set(inputs)
    if clash:
        raise TensorIRError(f"outputs and inputs share the names {sorted(clash)}")
    renames: dict[str, str] = {}
    serial = 0
    comps: list[Comprehension] = []
    for b in order:
        if isinstance(b, InputBuffer):
            continue
        name = out_names.get(id(b))
        while name is None:
            candidate = f"t{serial}"
            serial += 1
            if candidate not in inputs and candidate not in outputs:
                name = candidate
        renames[b.name] = name
        comps.append(rename(b, name, renames))
    seen_as = {k: t.shape for k, t in outputs.items() if t.shape != t.buffer.shape}
    out = [renames[outputs[k].buffer.name] for k in outputs]
    return TensorGraph(inputs, comps, out, seen_as, packed)


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)
