"""numpy storage (desktop only; numpy is an optional import): the same primitives as
:mod:`tang.nn.pybackend`, in the same order of arithmetic where the order is ours to pick,
so both backends agree to rounding (1e-12 relative)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np

from .hot import Hot
from .pybackend import broadcast_shape

Shape = tuple[int, ...]
_QUIET: ContextVar[bool] = ContextVar("tang.nn numpy errstate entered", default=False)


class NumpyBackend:
    """Array primitives over float64 ``numpy.ndarray``s."""

    name = "numpy"

    def __init__(self) -> None:
        self._hot: tuple[Any, Any, dict] = (None, None, {})  # the last Hot, its index array
        self._cuts: dict[tuple, list] = {}  # split's slices by shapes

    def __repr__(self) -> str:
        return "NumpyBackend()"

    # -- making and reading ------------------------------------------------------------
    def from_flat(self, flat: Sequence[float], shape: Shape) -> np.ndarray:
        return np.asarray(flat, dtype=np.float64).reshape(tuple(shape))

    def adopt(self, obj: object) -> np.ndarray | None:
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind not in "fiub":
                raise TypeError(f"cannot make a float64 tensor from a {obj.dtype} array")
            return np.array(obj, dtype=np.float64)
        return None

    def to_flat(self, a: np.ndarray) -> list[float]:
        return a.ravel().tolist()

    def one_hot(self, index: list[int], n: int) -> np.ndarray:
        out = np.zeros((len(index), n))
        out[np.arange(len(index)), np.asarray(index, dtype=np.intp)] = 1.0
        return out

    def full(self, shape: Shape, value: float) -> np.ndarray:
        return np.full(tuple(shape), float(value))

    def copy(self, a: np.ndarray) -> np.ndarray:
        return a.copy()

    def join(self, arrays) -> np.ndarray:
        """The arrays' elements end to end, one flat array (an optimizer's one map)."""
        return np.concatenate([a.reshape(-1) for a in arrays])

    def split(self, flat, shapes: Sequence[Shape]) -> list[np.ndarray]:
        """Views of ``flat`` shaped ``shapes``, end to end (the inverse of ``join``)."""
        cuts = self._cuts.get(tuple(shapes))
        if cuts is None:
            ends = list(itertools.accumulate(math.prod(s) for s in shapes))
            cuts = self._cuts[tuple(shapes)] = [
                (slice(end - math.prod(s), end), s) for s, end in zip(shapes, ends)
            ]
        return [flat[at].reshape(shape) for at, shape in cuts]

    # -- element-wise --------------------------------------------------------------------
    def ieee(self) -> _Quiet:
        """Many ``map`` calls under one ``np.errstate`` (entering one costs about a
        microsecond, as much as a small array's arithmetic): an optimizer step's, a
        backward pass's."""
        return _Quiet()

    def map(self, scalar, arrays, shape: Shape, numbers=(), consume=()):
        """``scalar``'s body (tang.nn.maps) over whole arrays, broadcast to ``shape``, and
        its per-call ``numbers``, as straight-line numpy calls (IEEE: inf and nan, never a
        warning). ``consume``: positions of arrays the caller gives up (an optimizer's own
        moments), written over once read for the last time: fewer fresh arrays."""
        operands = [arrays[k] for k in scalar.positions]
        same = True
        for a in operands:
            same = same and a.shape == shape
        out = _ieee(scalar.numpy(same, consume), *operands, *numbers)
        if scalar.many:
            for o in out:
                if o.shape != shape:
                    return tuple(_shaped(o, shape) for o in out)
            return out
        return _shaped(out, shape)

    def _check(self, a: np.ndarray, b: np.ndarray) -> None:
        if a.shape != b.shape:
            broadcast_shape(a.shape, b.shape)  # the same error text as the Python backend

    def add(self, a, b):
        self._check(a, b)
        return _ieee(np.add, a, b)

    # -- reductions ----------------------------------------------------------------------
    def sum(self, a, dims: tuple[int, ...], keepdim: bool):
        return self._reduce(a, dims, keepdim, np.add)

    def amax(self, a, dims: tuple[int, ...], keepdim: bool):
        if a.size == 0:
            raise ValueError("max of an empty tensor")
        return self._reduce(a, dims, keepdim, np.maximum)

    def _reduce(self, a, dims, keepdim, ufunc):
        # one axis at a time, last first, each folded in index order: the order the
        # Python backend adds in (numpy's own sum would pair elements up instead)
        out = a
        if len(dims) == a.ndim and a.ndim > 1:
            out = a.reshape(-1)
            out = _fold(out, 0, ufunc).reshape((1,) * a.ndim)
        else:
            for axis in sorted(dims, reverse=True):
                out = _fold(out, axis, ufunc)
        if not keepdim:
            out = out.reshape(tuple(n for i, n in enumerate(a.shape) if i not in dims))
        return out

    def sum_to(self, a, shape: Shape):
        if a.shape == tuple(shape):
            return a
        extra = a.ndim - len(shape)
        dims = tuple(range(extra)) + tuple(
            extra + i for i, n in enumerate(shape) if n == 1 and a.shape[extra + i] != 1
        )
        return self.sum(a, dims, keepdim=True).reshape(tuple(shape))

    def argmax_flat(self, a, dim: int) -> list[int]:
        shape = a.shape
        if shape[dim] == 0:
            raise ValueError("argmax of an empty axis")
        outer = math.prod(shape[:dim])
        n = shape[dim]
        inner = math.prod(shape[dim + 1 :])
        k = np.argmax(a.reshape(outer, n, inner), axis=1)  # [outer, inner]
        base = (np.arange(outer) * (n * inner))[:, None] + np.arange(inner)[None, :]
        return (base + k * inner).ravel().tolist()

    # -- moving data ---------------------------------------------------------------------
    def broadcast_to(self, a, shape: Shape):
        if a.shape != tuple(shape):
            broadcast_shape(a.shape, tuple(shape))
        return np.ascontiguousarray(np.broadcast_to(a, tuple(shape)))

    def reshape(self, a, shape: Shape):
        return a.reshape(tuple(shape))

    def gather_flat(self, a, index: list[int], shape: Shape):
        return a.reshape(-1)[np.asarray(index, dtype=np.intp)].reshape(tuple(shape))

    def scatter_add_flat(self, g, index: list[int], shape: Shape):
        # bincount adds in index order, like np.add.at, at a fraction of its cost
        size = math.prod(shape)
        if not index:
            return np.zeros(tuple(shape))
        idx = np.asarray(index, dtype=np.intp)
        return np.bincount(idx, g.reshape(-1), size).reshape(tuple(shape))

    def transpose(self, a, perm: tuple[int, ...]):
        return np.ascontiguousarray(a.transpose(perm))

    # -- products ------------------------------------------------------------------------
    def matmul(self, a, b, ta: bool = False, tb: bool = False, bias=None):
        left = a.T if ta else a
        right = b.T if tb else b
        if left.shape[1] != right.shape[0]:
            raise ValueError(f"matmul: inner sizes differ ({left.shape[1]} and {right.shape[0]})")
        y = left @ right
        if bias is not None:
            y += bias  # in place on the fresh product: the bits of y + bias, one array fewer
        return y

    def hot_matmul(self, hot: Hot, w, b=None):
        # a gather of w's columns for every hot index, [n, width, out], summed over the
        # window in index order (a reduction over a non-contiguous axis is a sequential
        # sum: the Python backend's order)
        y = np.add.reduce(w.T[self._hot_index(hot)], axis=1)
        if b is None:
            return y
        if b.shape != (w.shape[0],):
            return self.add(y, b)
        y += b
        return y

    def _hot_index(self, hot: Hot) -> np.ndarray:
        """``hot`` as an [n, width] index array; the last one is kept, as a step's forward
        and backward read the same."""
        if hot is not self._hot[0]:
            index = np.asarray(hot.values, dtype=np.intp).reshape(len(hot), hot.width)
            self._hot = (hot, index + np.asarray(hot.offsets, dtype=np.intp), {})
        return self._hot[1]

    def hot_matmul_grad(self, hot: Hot, g, shape: Shape):
        """A scatter-add as one ``bincount``: entry (o, k) of the result sums g[r, o] over
        the rows r in which column k is hot, in row order (as ``np.add.at`` would, and the
        Python backend does), with no [in, out] buffer to transpose."""
        n_out, n_in = shape
        index = self._hot_index(hot)
        targets = self._hot[2]
        if shape not in targets:  # where each (row, hot column, output) lands, kept
            flat = (np.arange(n_out, dtype=np.intp) * n_in)[None, :] + index.reshape(-1, 1)
            targets[shape] = flat.ravel()
        weights = np.repeat(g, hot.width, axis=0)  # row r once per hot column
        return np.bincount(targets[shape], weights.ravel(), n_out * n_in).reshape(shape)


def _ieee(fn, *args):
    """``fn(*args)`` with IEEE results (inf and nan) and no floating-point warning, like the
    Python backend: under ``np.errstate``, unless a ``B.ieee()`` block already entered it."""
    if _QUIET.get():
        return fn(*args)
    with np.errstate(all="ignore"):
        return fn(*args)


class _Quiet:
    """``np.errstate(all="ignore")`` entered once for the ``map`` calls inside it."""

    __slots__ = ("state", "token")

    def __enter__(self) -> None:
        self.token = _QUIET.set(True) if not _QUIET.get() else None
        if self.token is not None:
            self.state = np.errstate(all="ignore")
            self.state.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            self.state.__exit__(*exc)
            _QUIET.reset(self.token)


def _shaped(out: np.ndarray, shape: Shape) -> np.ndarray:
    """A map's result as ``shape``. A body that is one of its leaves hands that array back:
    shared, as arrays are never changed in place once made."""
    return out if out.shape == shape else np.array(np.broadcast_to(out, shape))


def _fold(a: np.ndarray, axis: int, ufunc) -> np.ndarray:
    """Reduce ``axis`` (kept as size 1) left to right: ((x0 ∘ x1) ∘ x2) ∘ …"""
    n = a.shape[axis]
    if n == 0:
        shape = list(a.shape)
        shape[axis] = 1
        return np.zeros(shape)
    if n == 1:
        return a + 0.0
    if axis < a.ndim - 1 and a.flags.c_contiguous:
        # an outer axis of a C-ordered array: numpy's reduce adds whole rows in index order
        # (its pairwise sum is along the contiguous axis only), the same bits, 5x sooner
        return ufunc.reduce(a, axis=axis, keepdims=True)
    last = (slice(None),) * axis + (slice(n - 1, n),)
    return ufunc.accumulate(a, axis=axis)[last]
