"""Pure-Python storage: a flat row-major ``list`` of floats and a shape, with the array
primitives ``tang.nn``'s ops are written in. It runs wherever CPython does (Pyodide too).

Speed comes from keeping the per-element work inside C loops: ``map``/``zip``
comprehensions, slices (a column of a row-major matrix is one strided slice), list
repetition for broadcasting, ``math.sumprod`` for dot products (3.12+; ``sum(map(mul, …))``
on 3.11, which rounds differently, so compare the two with a tolerance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from itertools import chain, repeat
from operator import add, mul
from typing import Any

from .hot import Hot

Shape = tuple[int, ...]


def dot_map(a: Sequence[float], b: Sequence[float]) -> float:
    """Σ aᵢbᵢ with the products summed left to right (the 3.11 fallback)."""
    return sum(map(mul, a, b))


DOTS = {"map": dot_map}
if hasattr(math, "sumprod"):  # 3.12+: one C loop, extended-precision accumulation
    DOTS["sumprod"] = math.sumprod  # type: ignore[attr-defined]


def size_of(shape: Shape) -> int:
    return math.prod(shape)


def strides_of(shape: Shape) -> list[int]:
    """Row-major strides, in elements."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return out[::-1]


def broadcast_shape(a: Shape, b: Shape) -> Shape:
    """NumPy's broadcasting rule; a clear error naming both shapes when they clash."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"shapes {a} and {b} cannot be broadcast together")
        out.append(y if x == 1 else x)
    return tuple(out)


class PyArray:
    """A flat row-major list of floats with its shape. Never mutated once built."""

    __slots__ = ("data", "shape")

    def __init__(self, data: list[float], shape: Shape) -> None:
        self.data = data
        self.shape = shape

    @property
    def size(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"PyArray(shape={self.shape})"


def _rows(a: PyArray) -> list[list[float]]:
    m, n = a.shape
    d = a.data
    return [d[i * n : i * n + n] for i in range(m)]


def _cols(a: PyArray) -> list[list[float]]:
    n = a.shape[1]
    d = a.data
    return [d[j::n] for j in range(n)]


def _expand(data: list[float], shape: Shape, out: Shape) -> list[float]:
    """``data`` (shaped ``shape``) broadcast to ``out``, materialised row-major."""
    shape = (1,) * (len(out) - len(shape)) + shape
    if len(data) == 1:
        return data * size_of(out)
    # a trailing block repeated: (n,) or (1, k, n) against (m, k, n)
    lead = 0
    while lead < len(out) and shape[lead] == 1:
        lead += 1
    if shape[lead:] == out[lead:]:
        return data * size_of(out[:lead])
    inner = 1
    for axis in range(len(out) - 1, -1, -1):
        n = out[axis]
        if shape[axis] == 1 and n != 1:
            if inner == 1:
                data = list(chain.from_iterable(repeat(v, n) for v in data))
            else:
                data = list(
                    chain.from_iterable(data[k : k + inner] * n for k in range(0, len(data), inner))
                )
        inner *= n
    return data


def _sum_axis(data: list[float], shape: Shape, axis: int, fold=sum) -> list[float]:
    """Reduce one axis (kept as size 1) with ``fold`` (``sum`` or ``max``), always in
    index order along the axis, whichever loop shape is cheaper."""
    outer = size_of(shape[:axis])
    n = shape[axis]
    inner = size_of(shape[axis + 1 :])
    block = n * inner
    if n == 0:
        if fold is max:
            raise ValueError("max of an empty axis")
        return [0.0] * (outer * inner)
    if inner == 1:
        return [fold(data[o : o + n]) for o in range(0, outer * block, block)]
    if n >= inner:  # one strided slice per output
        return [
            fold(data[o + i : o + block : inner])
            for o in range(0, outer * block, block)
            for i in range(inner)
        ]
    pair = add if fold is sum else max
    out: list[float] = []
    for o in range(0, outer * block, block):
        acc = data[o : o + inner]
        for k in range(o + inner, o + block, inner):
            acc = list(map(pair, acc, data[k : k + inner]))
        out += acc  # sum() starts from 0 and 0 + x is x: the same bits either way
    return out


class PythonBackend:
    """Array primitives over :class:`PyArray`. ``dot`` picks the dot product: ``"sumprod"``
    (default where available) or ``"map"``."""

    name = "python"

    def __init__(self, dot: str | None = None) -> None:
        if dot is None:
            dot = "sumprod" if "sumprod" in DOTS else "map"
        if dot not in DOTS:
            raise ValueError(f"dot must be one of {sorted(DOTS)}, not {dot!r}")
        self.dot_name = dot
        self.dot = DOTS[dot]

    def __repr__(self) -> str:
        return f"PythonBackend(dot={self.dot_name!r})"

    # -- making and reading ------------------------------------------------------------
    def from_flat(self, flat: Sequence[float], shape: Shape) -> PyArray:
        return PyArray(list(map(float, flat)), tuple(shape))

    def adopt(self, obj: object) -> PyArray | None:
        """An array of this backend made from ``obj`` without a list walk, if it is one."""
        return obj if isinstance(obj, PyArray) else None

    def to_flat(self, a: PyArray) -> list[float]:
        return list(a.data)

    def one_hot(self, index: list[int], n: int) -> PyArray:
        """[len(index), n] rows of zeros with a 1.0 at each row's index (checked by the caller)."""
        data = [0.0] * (len(index) * n)
        for row, v in enumerate(index):
            data[row * n + v] = 1.0
        return PyArray(data, (len(index), n))

    def full(self, shape: Shape, value: float) -> PyArray:
        return PyArray([float(value)] * size_of(shape), tuple(shape))

    def copy(self, a: PyArray) -> PyArray:
        return PyArray(list(a.data), a.shape)

    # -- element-wise --------------------------------------------------------------------
    def ieee(self) -> AbstractContextManager[None]:
        """Many ``map`` calls at once (numpy's backend enters its errstate once): nothing
        to do here, Python's math is IEEE in the printed bodies already."""
        return nullcontext()

    def map(
        self,
        scalar: Any,
        arrays: Sequence[PyArray],
        shape: Shape,
        numbers: Sequence[float] = (),
        consume: Sequence[int] = (),
    ) -> PyArray:
        """``scalar``'s body (tang.nn.maps) element by element over the arrays it reads,
        each broadcast to ``shape``, and its per-call ``numbers`` (``consume``: arrays the
        caller gives up; lists are made anew here either way)."""
        flats = []
        for k in scalar.positions:
            a = arrays[k]
            flats.append(a.data if a.shape == shape else _expand(a.data, a.shape, shape))
        if scalar.is_leaf:
            return PyArray(flats[0], shape)  # arrays are never changed once built
        if not flats:  # a body that reads nothing is a constant
            return PyArray([float(scalar.node.value)] * size_of(shape), shape)
        if scalar.many:
            return tuple(PyArray(out, shape) for out in scalar.python(*flats, *numbers))
        return PyArray(scalar.python(*flats, *numbers), shape)

    def _binary(self, fn, a: PyArray, b: PyArray) -> PyArray:
        if a.shape == b.shape:
            return PyArray(list(map(fn, a.data, b.data)), a.shape)
        shape = broadcast_shape(a.shape, b.shape)
        if len(b.data) == 1 and shape == a.shape:
            return PyArray(list(map(fn, a.data, repeat(b.data[0]))), shape)
        if len(a.data) == 1 and shape == b.shape:
            return PyArray(list(map(fn, repeat(a.data[0]), b.data)), shape)
        ad = a.data if a.shape == shape else _expand(a.data, a.shape, shape)
        bd = b.data if b.shape == shape else _expand(b.data, b.shape, shape)
        return PyArray(list(map(fn, ad, bd)), shape)

    def add(self, a: PyArray, b: PyArray) -> PyArray:
        return self._binary(add, a, b)

    # -- reductions ----------------------------------------------------------------------
    def sum(self, a: PyArray, dims: tuple[int, ...], keepdim: bool) -> PyArray:
        return self._reduce(a, dims, keepdim, sum)

    def amax(self, a: PyArray, dims: tuple[int, ...], keepdim: bool) -> PyArray:
        return self._reduce(a, dims, keepdim, max)

    def _reduce(self, a: PyArray, dims: tuple[int, ...], keepdim: bool, fold) -> PyArray:
        data, shape = a.data, a.shape
        if len(dims) == len(shape):
            if not data and fold is max:
                raise ValueError("max of an empty tensor")
            data = [fold(data)] if data else [0.0]
            shape = (1,) * len(shape)
        else:
            for axis in sorted(dims, reverse=True):
                data = _sum_axis(data, shape, axis, fold)
                shape = (*shape[:axis], 1, *shape[axis + 1 :])
        if not keepdim:
            shape = tuple(n for i, n in enumerate(shape) if i not in dims)
        return PyArray(data, shape)

    def sum_to(self, a: PyArray, shape: Shape) -> PyArray:
        """Sum ``a`` down to ``shape`` (the inverse of broadcasting ``shape`` up to ``a``)."""
        if a.shape == shape:
            return a
        extra = len(a.shape) - len(shape)
        dims = tuple(range(extra)) + tuple(
            extra + i for i, n in enumerate(shape) if n == 1 and a.shape[extra + i] != 1
        )
        out = self.sum(a, dims, keepdim=True)
        return PyArray(out.data, shape)

    def argmax_flat(self, a: PyArray, dim: int) -> list[int]:
        """Flat indices into ``a`` of the first maximum along ``dim``, row-major over the rest."""
        shape, data = a.shape, a.data
        outer = size_of(shape[:dim])
        n = shape[dim]
        if n == 0:
            raise ValueError("argmax of an empty axis")
        inner = size_of(shape[dim + 1 :])
        block = n * inner
        out = []
        for o in range(0, outer * block, block):
            for i in range(inner):
                s = data[o + i : o + block : inner]
                out.append(o + i + s.index(max(s)) * inner)
        return out

    # -- moving data ---------------------------------------------------------------------
    def broadcast_to(self, a: PyArray, shape: Shape) -> PyArray:
        if a.shape == shape:
            return a
        broadcast_shape(a.shape, shape)
        return PyArray(_expand(a.data, a.shape, shape), tuple(shape))

    def reshape(self, a: PyArray, shape: Shape) -> PyArray:
        return PyArray(a.data, tuple(shape))

    def gather_flat(self, a: PyArray, index: list[int], shape: Shape) -> PyArray:
        d = a.data
        return PyArray([d[i] for i in index], tuple(shape))

    def scatter_add_flat(self, g: PyArray, index: list[int], shape: Shape) -> PyArray:
        out = [0.0] * size_of(shape)
        for i, v in zip(index, g.data):
            out[i] += v
        return PyArray(out, tuple(shape))

    def transpose(self, a: PyArray, perm: tuple[int, ...]) -> PyArray:
        shape = a.shape
        out_shape = tuple(shape[p] for p in perm)
        if len(shape) == 2 and perm == (1, 0):
            return PyArray(list(chain.from_iterable(_cols(a))), out_shape)
        strides = strides_of(shape)
        index = [0]
        for p in perm:
            step = strides[p]
            index = [base + k * step for base in index for k in range(shape[p])]
        d = a.data
        return PyArray([d[i] for i in index], out_shape)

    # -- products ------------------------------------------------------------------------
    def matmul(
        self,
        a: PyArray,
        b: PyArray,
        ta: bool = False,
        tb: bool = False,
        bias: PyArray | None = None,
    ) -> PyArray:
        """aᵀ?·bᵀ? (+ ``bias``, one number per column) for 2-D arrays: each output is one dot
        product of a row and a column, both read as contiguous lists (a column of a
        row-major matrix is a strided slice); the bias joins each dot as it is made, the
        bits of adding it after."""
        left = _cols(a) if ta else _rows(a)
        right = _rows(b) if tb else _cols(b)
        k_left = a.shape[0] if ta else a.shape[1]
        k_right = b.shape[1] if tb else b.shape[0]
        if k_left != k_right:
            raise ValueError(f"matmul: inner sizes differ ({k_left} and {k_right})")
        shape = (len(left), len(right))
        if not k_left:
            zeros = PyArray([0.0] * (shape[0] * shape[1]), shape)
            return zeros if bias is None else self.add(zeros, bias)
        return PyArray(self._products(left, right, None if bias is None else bias.data), shape)

    def _products(
        self, left: list[list[float]], right: list[list[float]], bias: list[float] | None
    ) -> list[float]:
        """Every row of ``left`` dotted with every row of ``right`` (+ ``bias``), row-major;
        the inner loop is a ``map`` (C), not a comprehension step per dot."""
        out: list[float] = []
        for r in left:
            if self.dot is dot_map:  # the same sums, without a Python frame per dot
                dots = map(sum, map(map, repeat(mul), repeat(r), right))
            else:
                dots = map(self.dot, repeat(r), right)
            out += dots if bias is None else map(add, dots, bias)
        return out

    def hot_matmul(self, hot: Hot, w: PyArray, b: PyArray | None = None) -> PyArray:
        """x·wᵀ (+ b) for a 0/1 ``x`` given by its hot columns per row: each output row is
        the sum of the hot columns of ``w`` (a gather), added in the order listed, then b."""
        n_out = w.shape[0]
        cols = _cols(w)
        zero = [0.0] * n_out
        out: list[float] = []
        for ks in hot.rows():
            out += map(sum, zip(*[cols[k] for k in ks])) if ks else zero
        y = PyArray(out, (len(hot), n_out))
        if b is None:
            return y
        if b.shape != (n_out,):
            return self.add(y, b)
        return PyArray(list(map(add, out, b.data * len(hot))), y.shape)

    def hot_matmul_grad(self, hot: Hot, g: PyArray, shape: Shape) -> PyArray:
        """∂(x·wᵀ)/∂w for the 0/1 ``x`` of :meth:`hot_matmul`: a scatter-add of the output
        gradient's rows into the hot columns."""
        n_out, n_in = shape
        grows = _rows(g)
        acc: dict[int, list[float]] = {}
        for ks, grow in zip(hot.rows(), grows):
            for k in ks:
                prev = acc.get(k)
                acc[k] = grow if prev is None else list(map(add, prev, grow))
        zero = [0.0] * n_out
        cols = [acc.get(k, zero) for k in range(n_in)]
        return PyArray(list(chain.from_iterable(zip(*cols))), (n_out, n_in))
