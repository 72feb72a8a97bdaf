"""CSR: a compressed-sparse-row matrix whose entries may be any number (floats, ``tang.Dual``,
traced nodes). Row i holds ``data[indptr[i]:indptr[i+1]]`` at the (strictly increasing)
columns ``indices[indptr[i]:indptr[i+1]]``; scipy's layout and names, so code moves across.

Treat a CSR as immutable: operations return new matrices (the transpose is cached).
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Sequence
from typing import Any

from .entries import Number, components, dot, is_zero, real_value, vector


def _shape(shape: Any) -> tuple[int, int]:
    """``shape`` as (rows, columns) of non-negative ints, or a clear error."""
    try:
        m, n = shape
        m, n = operator.index(m), operator.index(n)
    except (TypeError, ValueError):
        msg = f"shape must be two non-negative integers (rows, cols), got {shape!r}"
        raise ValueError(msg) from None
    if m < 0 or n < 0:
        raise ValueError(f"shape must be non-negative, got {(m, n)}")
    return m, n


def _index(i: Any, bound: int, what: str) -> int:
    """``i`` as an int in range(bound), or an error naming the offending index."""
    try:
        k = operator.index(i)
    except TypeError:
        raise TypeError(f"{what} index {i!r} is not an integer") from None
    if not 0 <= k < bound:
        raise IndexError(f"{what} index {k} is out of range for {bound} {what}s")
    return k


class CSR:
    """A sparse matrix in compressed-sparse-row form over any number type."""

    __slots__ = ("_transpose", "data", "indices", "indptr", "shape")

    def __init__(
        self,
        data: Sequence[Number],
        indices: Sequence[int],
        indptr: Sequence[int],
        shape: tuple[int, int],
        *,
        check: bool = True,
    ) -> None:
        self.shape = _shape(shape)
        self.data = list(data)
        self.indices = list(indices)
        self.indptr = list(indptr)
        self._transpose: CSR | None = None
        if check:
            self._validate()

    def _validate(self) -> None:
        m, n = self.shape
        indptr, indices = self.indptr, self.indices
        if len(indptr) != m + 1:
            raise ValueError(f"indptr has length {len(indptr)}, but {m} rows need {m + 1}")
        if len(indices) != len(self.data):
            raise ValueError(f"indices has length {len(indices)} but data {len(self.data)}")
        if indptr[0] != 0 or indptr[-1] != len(indices):
            raise ValueError(f"indptr must run from 0 to nnz = {len(indices)}, got {indptr}")
        for i in range(m):
            s, e = indptr[i], indptr[i + 1]
            if e < s:
                raise ValueError(f"indptr decreases at row {i}")
            row = [_index(j, n, "column") for j in indices[s:e]]
            if any(a >= b for a, b in itertools.pairwise(row)):
                raise ValueError(
                    f"the column indices of row {i} are not strictly increasing "
                    "(CSR.from_coo sorts them and sums duplicates)"
                )
            indices[s:e] = row

    # ---- constructors -------------------------------------------------------------------
    @classmethod
    def from_dense(cls, rows: Sequence[Sequence[Number]]) -> CSR:
        """The nonzeros of a list of equally long rows (a plain 0 is left out; Duals and
        traced nodes are always kept)."""
        if isinstance(rows, CSR):
            return rows
        rows = list(rows)
        width = None
        data: list[Number] = []
        indices: list[int] = []
        indptr = [0]
        for i, row in enumerate(rows):
            if not isinstance(row, Sequence) and not hasattr(row, "__len__"):
                raise TypeError(f"row {i} is a {type(row).__name__}, not a sequence of numbers")
            row = list(row)
            if width is None:
                width = len(row)
            elif len(row) != width:
                raise ValueError(f"ragged input: row {i} has {len(row)} entries, row 0 {width}")
            for j, v in enumerate(row):
                if not is_zero(v):
                    indices.append(j)
                    data.append(v)
            indptr.append(len(data))
        return cls(data, indices, indptr, (len(rows), width or 0), check=False)

    @classmethod
    def from_coo(
        cls,
        rows_idx: Sequence[int],
        cols_idx: Sequence[int],
        values: Sequence[Number],
        shape: tuple[int, int],
    ) -> CSR:
        """The matrix with ``values[k]`` at (``rows_idx[k]``, ``cols_idx[k]``); duplicates are
        summed, each row's columns sorted."""
        m, n = _shape(shape)
        rows_idx, cols_idx, values = list(rows_idx), list(cols_idx), list(values)
        if not len(rows_idx) == len(cols_idx) == len(values):
            raise ValueError(
                f"rows_idx, cols_idx and values must be equally long, got "
                f"{len(rows_idx)}, {len(cols_idx)} and {len(values)}"
            )
        per_row: list[dict[int, Number]] = [{} for _ in range(m)]
        for i, j, v in zip(rows_idx, cols_idx, values):
            entries = per_row[_index(i, m, "row")]
            j = _index(j, n, "column")
            entries[j] = entries[j] + v if j in entries else v
        data: list[Number] = []
        indices: list[int] = []
        indptr = [0]
        for entries in per_row:
            for j in sorted(entries):
                indices.append(j)
                data.append(entries[j])
            indptr.append(len(data))
        return cls(data, indices, indptr, (m, n), check=False)

    @classmethod
    def identity(cls, n: int) -> CSR:
        """The n×n identity."""
        n = _shape((n, n))[0]
        return cls([1.0] * n, range(n), range(n + 1), (n, n), check=False)

    # ---- reading ------------------------------------------------------------------------
    @property
    def nnz(self) -> int:
        """The number of stored entries."""
        return len(self.data)

    def row(self, i: int) -> tuple[list[int], list[Number]]:
        """(columns, values) of row ``i``."""
        s, e = self.indptr[i], self.indptr[i + 1]
        return self.indices[s:e], self.data[s:e]

    def __getitem__(self, ij: tuple[int, int]) -> Number:
        """``A[i, j]``: the stored entry, or 0.0."""
        i, j = ij
        i, j = _index(i, self.shape[0], "row"), _index(j, self.shape[1], "column")
        s, e = self.indptr[i], self.indptr[i + 1]
        k = bisect.bisect_left(self.indices, j, s, e)
        return self.data[k] if k < e and self.indices[k] == j else 0.0

    def to_dense(self) -> list[list[Number]]:
        """A list of rows, zeros filled in as 0.0."""
        m, n = self.shape
        out = [[0.0] * n for _ in range(m)]
        for i in range(m):
            row = out[i]
            for k in range(self.indptr[i], self.indptr[i + 1]):
                row[self.indices[k]] = self.data[k]
        return out

    def diagonal(self) -> list[Number]:
        """A[i, i] for i < min(rows, cols); 0.0 where nothing is stored."""
        return [self[i, i] for i in range(min(self.shape))]

    def transpose(self) -> CSR:
        """Aᵀ, by a counting sort of the entries on their column (cached)."""
        if self._transpose is None:
            m, n = self.shape
            counts = [0] * (n + 1)
            for j in self.indices:
                counts[j + 1] += 1
            for j in range(n):
                counts[j + 1] += counts[j]
            indptr = counts[:]
            slot = counts[:-1]
            indices = [0] * self.nnz
            data: list[Number] = [0.0] * self.nnz
            for i in range(m):
                for k in range(self.indptr[i], self.indptr[i + 1]):
                    j = self.indices[k]
                    p = slot[j]
                    indices[p] = i
                    data[p] = self.data[k]
                    slot[j] = p + 1
            t = CSR(data, indices, indptr, (n, m), check=False)
            t._transpose = self
            self._transpose = t
        return self._transpose

    @property
    def T(self) -> CSR:
        """Aᵀ."""
        return self.transpose()

    # ---- products -----------------------------------------------------------------------
    def matvec(self, x: Sequence[Number]) -> list[Number]:
        """A·x for a vector ``x`` (a list of any numbers)."""
        x = vector(x, self.shape[1], "x")
        get = x.__getitem__
        data, indices, indptr = self.data, self.indices, self.indptr
        out: list[Number] = []
        for i in range(self.shape[0]):
            s, e = indptr[i], indptr[i + 1]
            out.append(dot(data[s:e], map(get, indices[s:e])) if e > s else 0.0)
        return out

    def rmatvec(self, x: Sequence[Number]) -> list[Number]:
        """Aᵀ·x (x·A for a row vector)."""
        return self.transpose().matvec(vector(x, self.shape[0], "x"))

    def matmat(self, other: CSR) -> CSR:
        """A·B for two CSRs (Gustavson: each row of A mixes the rows of B it names)."""
        if self.shape[1] != other.shape[0]:
            raise ValueError(f"shapes {self.shape} and {other.shape} do not chain for A @ B")
        data: list[Number] = []
        indices: list[int] = []
        indptr = [0]
        for i in range(self.shape[0]):
            acc: dict[int, Number] = {}
            for k in range(self.indptr[i], self.indptr[i + 1]):
                a, r = self.data[k], self.indices[k]
                for q in range(other.indptr[r], other.indptr[r + 1]):
                    j, t = other.indices[q], a * other.data[q]
                    acc[j] = acc[j] + t if j in acc else t
            for j in sorted(acc):
                indices.append(j)
                data.append(acc[j])
            indptr.append(len(data))
        return CSR(data, indices, indptr, (self.shape[0], other.shape[1]), check=False)

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, CSR):
            return self.matmat(other)
        return self.matvec(other)

    def __rmatmul__(self, x: Any) -> list[Number]:
        return self.rmatvec(x)

    # ---- entrywise arithmetic -----------------------------------------------------------
    def _scaled(self, f: Any) -> CSR:
        return CSR(list(map(f, self.data)), self.indices, self.indptr, self.shape, check=False)

    def __mul__(self, c: Any) -> CSR:
        if isinstance(c, (CSR, list, tuple)):
            raise TypeError("A * B scales by a number; use A @ B for matrix products")
        return self._scaled(lambda v: v * c)

    def __rmul__(self, c: Any) -> CSR:
        if isinstance(c, (CSR, list, tuple)):
            raise TypeError("A * B scales by a number; use A @ B for matrix products")
        return self._scaled(lambda v: c * v)

    def __truediv__(self, c: Any) -> CSR:
        return self._scaled(lambda v: v / c)

    def __neg__(self) -> CSR:
        return self._scaled(operator.neg)

    def __add__(self, other: Any) -> CSR:
        return self._merge(other, "+", operator.add)

    def __radd__(self, other: Any) -> CSR:
        if isinstance(other, int) and other == 0:  # sum([A, B, ...]) starts from 0
            return self
        return self._merge(other, "+", operator.add)

    def __sub__(self, other: Any) -> CSR:
        return self._merge(other, "-", operator.sub)

    def _merge(self, other: Any, sign: str, op: Any) -> CSR:
        """A ± B, row by row over the union of the two patterns."""
        if not isinstance(other, CSR):
            raise TypeError(
                f"A {sign} {type(other).__name__}: only two CSR matrices add (a scalar added to "
                "every entry would make the matrix dense)"
            )
        if other.shape != self.shape:
            raise ValueError(f"shapes {self.shape} and {other.shape} differ for A {sign} B")
        data: list[Number] = []
        indices: list[int] = []
        indptr = [0]
        for i in range(self.shape[0]):
            acc = dict(zip(*self.row(i)))
            for j, v in zip(*other.row(i)):
                acc[j] = op(acc[j], v) if j in acc else op(0.0, v)
            for j in sorted(acc):
                indices.append(j)
                data.append(acc[j])
            indptr.append(len(data))
        return CSR(data, indices, indptr, self.shape, check=False)

    def __repr__(self) -> str:
        return f"CSR(shape={self.shape}, nnz={self.nnz})"


def asymmetry(a: CSR, *, slopes: bool, rtol: float = 1e-10) -> tuple[int, int] | None:
    """The first (i, j) with A[i, j] ≠ A[j, i] beyond ``rtol`` × the largest |entry| (None when
    A is symmetric). ``slopes``: compare Duals' tangents too, not only values. Traced nodes
    without a value must be the very same node (nodes are hash-consed)."""
    t = a.transpose()
    parts = components if slopes else (lambda v: None if (r := real_value(v)) is None else [r])
    scale = max((abs(r) for v in a.data if (r := real_value(v)) is not None), default=0.0)
    tol = rtol * scale
    for i in range(a.shape[0]):
        mine, theirs = dict(zip(*a.row(i))), dict(zip(*t.row(i)))
        for j in mine.keys() | theirs.keys():
            u, w = mine.get(j, 0.0), theirs.get(j, 0.0)
            pu, pw = parts(u), parts(w)
            if pu is None or pw is None:
                if u is not w:
                    return (i, j)
                continue
            width = max(len(pu), len(pw))
            pu, pw = pu + [0.0] * (width - len(pu)), pw + [0.0] * (width - len(pw))
            if any(not abs(x - y) <= tol for x, y in zip(pu, pw)):
                return (i, j)
    return None
