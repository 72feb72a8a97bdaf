"""Small dense m×n matrices over any number type, stored row-major as a list of row lists.

A ``Mat`` is a sequence of rows (``len``, iteration, ``m[i]``), so it goes wherever a
sequence of row sequences is taken (the ``tang.linalg`` functions, ``numpy.array``); ``m[i]``
returns the stored row itself, without a copy (read it, don't write it: ``tolist()`` copies).
``@`` multiplies by a matrix or a vector; the other operators are element-wise (``+``, ``-``)
or scale by a number. Shapes are checked and a mismatch raises a ValueError that says both.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .vec import NOT_SCALAR, Spatial, Vec2, Vec3

Number = Any  # float | tang.Dual | tang.Node
_VECTORS = (Vec2, Vec3)
_ROWS = (list, tuple, Vec2, Vec3)


def _dot(a: Iterable[Number], b: Iterable[Number]) -> Number:
    """Σ a_k·b_k, starting from the first product (no stray ``0 +`` node in a trace)."""
    products = map(operator.mul, a, b)
    return sum(products, next(products))


def _shape(rows: list[list[Number]]) -> str:
    return f"{len(rows)}×{len(rows[0])}"


class Mat(Spatial):
    """An m×n matrix (m, n ≥ 1) of any numbers: ``Mat([[1, 2], [3, 4]])``."""

    __slots__ = ("rows",)

    def __init__(self, rows: Iterable[Iterable[Number]]) -> None:
        if isinstance(rows, Mat):
            table = [list(r) for r in rows.rows]
        else:
            try:
                table = [list(r) for r in rows]
            except TypeError:
                raise TypeError(
                    f"Mat takes a sequence of rows, each a sequence of numbers; got {rows!r}"
                ) from None
        if not table or not table[0]:
            raise ValueError("a Mat needs at least one row and one column")
        n = len(table[0])
        for i, row in enumerate(table):
            if len(row) != n:
                raise ValueError(f"row {i} of the Mat has {len(row)} entries, row 0 has {n}")
        self.rows: list[list[Number]] = table

    @classmethod
    def _of(cls, table: list[list[Number]]) -> Mat:
        """A Mat around ``table`` as it is (already checked and owned: no copy)."""
        m = cls.__new__(cls)
        m.rows = table
        return m

    @classmethod
    def identity(cls, n: int) -> Mat:
        """The n×n identity (float entries)."""
        _check_size(n, "n")
        return cls._of([[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)])

    @classmethod
    def zeros(cls, m: int, n: int | None = None) -> Mat:
        """The m×n zero matrix (m×m when n is left out)."""
        n = m if n is None else n
        _check_size(m, "m")
        _check_size(n, "n")
        return cls._of([[0.0] * n for _ in range(m)])

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return len(self.rows), len(self.rows[0])

    def tolist(self) -> list[list[Number]]:
        """A copy of the rows as a list of lists."""
        return [list(r) for r in self.rows]

    def transpose(self) -> Mat:
        """The n×m transpose."""
        return Mat._of([list(col) for col in zip(*self.rows)])

    @property
    def T(self) -> Mat:
        """The transpose."""
        return self.transpose()

    # ---- sequence of rows ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[list[Number]]:
        return iter(self.rows)

    def __getitem__(self, key: Any) -> Any:
        """``m[i]``: row i (the stored list); ``m[i, j]``: one entry."""
        if isinstance(key, tuple):
            i, j = key
            return self.rows[i][j]
        return self.rows[key]

    # ---- arithmetic ------------------------------------------------------------------
    def _same_shape(self, o: Mat, verb: str) -> None:
        if len(o.rows) != len(self.rows) or len(o.rows[0]) != len(self.rows[0]):
            raise ValueError(
                f"cannot {verb} a {_shape(self.rows)} matrix and a {_shape(o.rows)} matrix"
            )

    def __add__(self, o: Any) -> Mat:
        if not isinstance(o, Mat):
            return NotImplemented
        self._same_shape(o, "add")
        return Mat._of([list(map(operator.add, r, s)) for r, s in zip(self.rows, o.rows)])

    def __sub__(self, o: Any) -> Mat:
        if not isinstance(o, Mat):
            return NotImplemented
        self._same_shape(o, "subtract")
        return Mat._of([list(map(operator.sub, r, s)) for r, s in zip(self.rows, o.rows)])

    def __neg__(self) -> Mat:
        return Mat._of([[-x for x in r] for r in self.rows])

    def __pos__(self) -> Mat:
        return self

    def __mul__(self, s: Any) -> Mat:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented  # a matrix product is spelled @
        return Mat._of([[x * s for x in r] for r in self.rows])

    def __rmul__(self, s: Any) -> Mat:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Mat._of([[s * x for x in r] for r in self.rows])

    def __truediv__(self, s: Any) -> Mat:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Mat._of([[x / s for x in r] for r in self.rows])

    def __matmul__(self, o: Any) -> Any:
        """Matrix @ matrix → Mat; matrix @ vector → the same kind of vector back (Vec2 or
        Vec3 when the result has 2 or 3 entries, else a list; a list or tuple → a list)."""
        if isinstance(o, Mat) or _is_table(o):
            other = o if isinstance(o, Mat) else Mat(o)
            n = len(self.rows[0])
            if len(other.rows) != n:
                raise ValueError(
                    f"cannot multiply a {_shape(self.rows)} matrix by a "
                    f"{_shape(other.rows)} matrix (inner sizes {n} and {len(other.rows)})"
                )
            cols = list(zip(*other.rows))
            return Mat._of([[_dot(r, c) for c in cols] for r in self.rows])
        if isinstance(o, (*_VECTORS, list, tuple)):
            n = len(self.rows[0])
            if len(o) != n:
                raise ValueError(
                    f"cannot multiply a {_shape(self.rows)} matrix by a vector of {len(o)}"
                )
            if n == 3:  # the common rotation case, unrolled
                x, y, z = o
                entries = [r[0] * x + r[1] * y + r[2] * z for r in self.rows]
            elif n == 2:
                x, y = o
                entries = [r[0] * x + r[1] * y for r in self.rows]
            else:
                entries = [_dot(r, o) for r in self.rows]
            return _vector_like(o, entries)
        return NotImplemented

    def __rmatmul__(self, o: Any) -> Any:
        """vector @ matrix (a row vector times the matrix), or a table of rows @ matrix."""
        if _is_table(o):
            return Mat(o) @ self
        if isinstance(o, (*_VECTORS, list, tuple)):
            m = len(self.rows)
            if len(o) != m:
                raise ValueError(
                    f"cannot multiply a vector of {len(o)} by a {_shape(self.rows)} matrix"
                )
            return _vector_like(o, [_dot(o, c) for c in zip(*self.rows)])
        return NotImplemented

    def __eq__(self, o: object) -> bool:
        if not isinstance(o, Mat):
            return NotImplemented
        return self.rows == o.rows

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Mat({self.rows!r})"


Sequence.register(Mat)


def _check_size(k: Any, name: str) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"a matrix size must be a whole number ≥ 1; {name} = {k!r}")


def _is_table(o: Any) -> bool:
    """A list or tuple of rows (its first entry is itself a sequence)."""
    return isinstance(o, (list, tuple)) and len(o) > 0 and isinstance(o[0], _ROWS)


def _vector_like(like: Any, entries: list[Number]) -> Any:
    """``entries`` as the kind of vector ``like`` is (a list when no Vec has that length)."""
    if isinstance(like, _VECTORS):
        if len(entries) == 2:
            return Vec2(*entries)
        if len(entries) == 3:
            return Vec3(*entries)
    return entries
