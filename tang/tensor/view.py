"""Views: an affine map from an index tuple to a memory position (shape, strides, offset).

Transposing, broadcasting (stride 0), slicing (any step, negative too), indexing (dropping an
axis) and reshaping where the result stays affine each return a new View over the same
memory, never a copy; they compose by substitution (``View.compose``). A reshape that no
affine map can express raises ``NonAffineReshape`` (the caller materialises explicitly).
``IndexMap`` is the same kind of map with several outputs: index tuple → index tuple.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


class NonAffineReshape(ValueError):
    """A reshape of a view that no (shape, strides, offset) can express without a copy."""


def _ints(values: Sequence[int], what: str) -> tuple[int, ...]:
    out = tuple(values)
    for v in out:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} must be integers, got {v!r}")
    return out


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides of a contiguous C-order array of ``shape`` (in elements)."""
    strides, step = [], 1
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class IndexMap:
    """An affine map from a domain (extents ``domain``) to an index tuple: output ``a`` is
    ``consts[a] + sum(rows[a][v] * index[v])``."""

    domain: tuple[int, ...]
    rows: tuple[tuple[int, ...], ...]
    consts: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.rows) != len(self.consts):
            raise ValueError("an IndexMap needs one constant per row")
        for row in self.rows:
            if len(row) != len(self.domain):
                raise ValueError(f"row {row} does not match the domain {self.domain}")

    @staticmethod
    def identity(domain: Sequence[int]) -> IndexMap:
        n = len(domain)
        rows = tuple(tuple(int(a == v) for v in range(n)) for a in range(n))
        return IndexMap(tuple(domain), rows, (0,) * n)

    def __call__(self, index: Sequence[int]) -> tuple[int, ...]:
        return tuple(
            c + sum(r * i for r, i in zip(row, index)) for row, c in zip(self.rows, self.consts)
        )

    def compose(self, inner: IndexMap) -> IndexMap:
        """``self ∘ inner``: first ``inner`` (new domain → this domain), then ``self``."""
        if len(inner.rows) != len(self.domain):
            raise ValueError(f"cannot compose: {len(inner.rows)} indices for {self.domain}")
        rows = tuple(
            tuple(
                sum(row[v] * inner.rows[v][u] for v in range(len(row)))
                for u in range(len(inner.domain))
            )
            for row in self.rows
        )
        consts = tuple(
            c + sum(row[v] * inner.consts[v] for v in range(len(row)))
            for row, c in zip(self.rows, self.consts)
        )
        return IndexMap(inner.domain, rows, consts)


@dataclass(frozen=True)
class View:
    """Index tuple in ``shape`` → memory position ``offset + sum(strides[a] * index[a])``."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _ints(self.shape, "a shape"))
        object.__setattr__(self, "strides", _ints(self.strides, "strides"))
        if len(self.shape) != len(self.strides):
            raise ValueError(f"shape {self.shape} and strides {self.strides} differ in length")
        if any(n < 0 for n in self.shape):
            raise ValueError(f"a shape cannot have a negative extent: {self.shape}")

    # ---- construction and facts ----
    @staticmethod
    def contiguous(shape: Sequence[int], offset: int = 0) -> View:
        """The C-order (row-major) view of ``shape``."""
        shape = _ints(shape, "a shape")
        return View(shape, row_major(shape), offset)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def address(self, index: Sequence[int]) -> int:
        """The memory position of ``index`` (bounds checked)."""
        if len(index) != self.ndim:
            raise IndexError(f"{len(index)} indices for a view of rank {self.ndim}")
        for axis, (i, n) in enumerate(zip(index, self.shape)):
            if not 0 <= i < n:
                raise IndexError(f"index {i} is out of range for axis {axis} of extent {n}")
        return self.offset + sum(s * i for s, i in zip(self.strides, index))

    def span(self) -> tuple[int, int]:
        """The least and greatest memory position the view reaches (non-empty views)."""
        lo = hi = self.offset
        for n, s in zip(self.shape, self.strides):
            if n == 0:
                raise ValueError("an empty view reaches no memory")
            lo += min(0, s * (n - 1))
            hi += max(0, s * (n - 1))
        return lo, hi

    @property
    def is_contiguous(self) -> bool:
        """True when the view is its own row-major layout from position ``offset``."""
        return all(
            s == r for n, s, r in zip(self.shape, self.strides, row_major(self.shape)) if n > 1
        )

    def _axis(self, axis: int) -> int:
        if not -self.ndim <= axis < self.ndim:
            raise IndexError(f"axis {axis} is out of range for a view of rank {self.ndim}")
        return axis % self.ndim

    # ---- the no-copy transformations ----
    def permute(self, axes: Sequence[int]) -> View:
        """Axis ``k`` of the result is axis ``axes[k]`` of this view."""
        axes = tuple(self._axis(a) for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"{axes} is not a permutation of the {self.ndim} axes")
        return View(
            tuple(self.shape[a] for a in axes), tuple(self.strides[a] for a in axes), self.offset
        )

    def transpose(self, a: int = -2, b: int = -1) -> View:
        """Swap two axes (the last two by default)."""
        axes = list(range(self.ndim))
        a, b = self._axis(a), self._axis(b)
        axes[a], axes[b] = axes[b], axes[a]
        return self.permute(axes)

    @property
    def T(self) -> View:
        """All axes reversed, like numpy's ``.T``."""
        return self.permute(tuple(reversed(range(self.ndim))))

    def expand_dims(self, axis: int) -> View:
        """A new axis of extent 1 at ``axis`` (its stride never matters: it is 0)."""
        if not -self.ndim - 1 <= axis <= self.ndim:
            raise IndexError(f"axis {axis} is out of range for inserting into rank {self.ndim}")
        axis %= self.ndim + 1
        return View(
            (*self.shape[:axis], 1, *self.shape[axis:]),
            (*self.strides[:axis], 0, *self.strides[axis:]),
            self.offset,
        )

    def broadcast_to(self, shape: Sequence[int]) -> View:
        """Numpy's broadcasting: new leading axes and extent-1 axes repeat with stride 0."""
        shape = _ints(shape, "a shape")
        extra = len(shape) - self.ndim
        if extra < 0:
            raise ValueError(f"cannot broadcast shape {self.shape} to the smaller rank {shape}")
        strides = [0] * extra
        for axis, (n, s) in enumerate(zip(self.shape, self.strides)):
            target = shape[extra + axis]
            if n == target:
                strides.append(s)
            elif n == 1:
                strides.append(0)
            else:
                raise ValueError(
                    f"cannot broadcast shape {self.shape} to {shape}: axis {axis} has extent "
                    f"{n}, not 1 or {target}"
                )
        return View(shape, tuple(strides), self.offset)

    def slice(
        self, axis: int, start: int | None = None, stop: int | None = None, step: int | None = None
    ) -> View:
        """Python's ``[start:stop:step]`` along ``axis`` (negative steps reverse)."""
        axis = self._axis(axis)
        if step == 0:
            raise ValueError("a slice step cannot be zero")
        first, _, step_ = slice(start, stop, step).indices(self.shape[axis])
        count = len(range(*slice(start, stop, step).indices(self.shape[axis])))
        stride = self.strides[axis]
        offset = self.offset + (first * stride if count else 0)
        return View(
            (*self.shape[:axis], count, *self.shape[axis + 1 :]),
            (*self.strides[:axis], stride * step_, *self.strides[axis + 1 :]),
            offset,
        )

    def index(self, axis: int, i: int) -> View:
        """Fix ``axis`` at ``i`` (negative counts from the end) and drop it."""
        axis = self._axis(axis)
        n = self.shape[axis]
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for axis {axis} of extent {n}")
        i %= n
        return View(
            self.shape[:axis] + self.shape[axis + 1 :],
            self.strides[:axis] + self.strides[axis + 1 :],
            self.offset + i * self.strides[axis],
        )

    def __getitem__(self, key: object) -> View:
        """Numpy's basic indexing: integers, slices, ``None`` (a new axis) and ``...``."""
        keys = list(key) if isinstance(key, tuple) else [key]
        if sum(k is Ellipsis for k in keys) > 1:
            raise IndexError("an index can hold only one '...'")
        used = sum(1 for k in keys if k is not None and k is not Ellipsis)
        if used > self.ndim:
            raise IndexError(f"too many indices ({used}) for a view of rank {self.ndim}")
        if Ellipsis in keys:
            at = keys.index(Ellipsis)
            keys[at : at + 1] = [slice(None)] * (self.ndim - used)
        else:
            keys += [slice(None)] * (self.ndim - used)
        view, axis = self, 0
        for k in keys:
            if k is None:
                view = view.expand_dims(axis)
                axis += 1
            elif isinstance(k, slice):
                view = view.slice(axis, k.start, k.stop, k.step)
                axis += 1
            elif isinstance(k, int) and not isinstance(k, bool):
                view = view.index(axis, k)
            else:
                raise TypeError(f"a view is indexed by ints, slices, None and '...', not {k!r}")
        return view

    def reshape(self, shape: Sequence[int]) -> View:
        """The same elements in C order under a new shape, when an affine map can say so
        (numpy's no-copy rule); otherwise ``NonAffineReshape``."""
        shape = list(_ints(shape, "a shape"))
        if shape.count(-1) > 1:
            raise ValueError("only one extent of a reshape can be -1")
        if -1 in shape:
            known = math.prod(n for n in shape if n != -1)
            if known == 0 or self.size % known:
                raise ValueError(f"cannot reshape {self.shape} into {tuple(shape)}")
            shape[shape.index(-1)] = self.size // known
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape {self.shape} (size {self.size}) into {tuple(shape)}")
        new = tuple(shape)
        if self.size == 0:
            return View(new, row_major(new), self.offset)
        old = [(n, s) for n, s in zip(self.shape, self.strides) if n != 1]
        strides = [0] * len(new)
        oi = ni = 0
        while oi < len(old) and ni < len(new):
            oj, nj = oi + 1, ni + 1
            old_count, new_count = old[oi][0], new[ni]
            while old_count != new_count:  # grow the smaller side until both hold as many
                if new_count < old_count:
                    new_count *= new[nj]
                    nj += 1
                else:
                    old_count *= old[oj][0]
                    oj += 1
            for k in range(oi, oj - 1):  # the old axes of this group must nest in memory
                if old[k][1] != old[k + 1][1] * old[k + 1][0]:
                    raise NonAffineReshape(
                        f"reshaping a view of shape {self.shape} with strides {self.strides} "
                        f"into {new} is not affine (the axes merged into one do not nest in "
                        "memory); materialise a contiguous copy first"
                    )
            strides[nj - 1] = old[oj - 1][1]
            for k in range(nj - 1, ni, -1):
                strides[k - 1] = strides[k] * new[k]
            oi, ni = oj, nj
        return View(new, tuple(strides), self.offset)

    # ---- substitution ----
    def compose(self, index: IndexMap) -> View:
        """This view read through ``index`` (new domain → this view's index): the view of the
        new domain, by substituting the map into the address."""
        if len(index.rows) != self.ndim:
            raise ValueError(
                f"an index map of {len(index.rows)} outputs for a view of rank {self.ndim}"
            )
        strides = tuple(
            sum(s * row[u] for s, row in zip(self.strides, index.rows))
            for u in range(len(index.domain))
        )
        offset = self.offset + sum(s * c for s, c in zip(self.strides, index.consts))
        return View(index.domain, strides, offset)

    def unravel(self, shape: Sequence[int]) -> IndexMap | None:
        """The row-major index into an array of ``shape`` that this view addresses, as an
        affine map of this view's index; None when it is not affine (or leaves the array)."""
        shape = _ints(shape, "a shape")
        radix = row_major(shape)
        total = math.prod(shape)
        if self.size == 0:
            return IndexMap(self.shape, tuple((0,) * self.ndim for _ in shape), (0,) * len(shape))
        if not 0 <= self.offset < max(total, 1):
            return None
        consts, rest = [], self.offset
        for r in radix:
            consts.append(rest // r)
            rest %= r
        rows = [[0] * self.ndim for _ in shape]
        for v, (n, s) in enumerate(zip(self.shape, self.strides)):
            if n == 1 or s == 0:
                continue
            for a, (r, t) in enumerate(zip(radix, shape)):
                if t > 1 and s % r == 0:
                    rows[a][v] = s // r
                    break
            else:
                return None
        for a, t in enumerate(shape):  # every output must stay inside its axis
            lo = hi = consts[a]
            for v, n in enumerate(self.shape):
                c = rows[a][v] * (n - 1)
                lo, hi = lo + min(0, c), hi + max(0, c)
            if lo < 0 or hi >= t:
                return None
        return IndexMap(self.shape, tuple(tuple(r) for r in rows), tuple(consts))
