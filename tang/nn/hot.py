"""``Hot``: the hot columns of a constant 0/1 matrix (a one-hot batch), kept beside its dense
array so that a product with it is a row gather and its gradient a scatter-add."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import add


class Hot:
    """Row ``r`` is hot in columns ``values[r*w + j] + offsets[j]`` for ``j < w``
    (``w = len(offsets)``): a one-hot ``[n, c]`` has offsets ``(0,)``, and merging ``g``
    rows of width ``c`` into one (``[B, 8, 30] → [B, 240]``) only multiplies the offsets
    out, so the values stay the caller's list, never copied row by row."""

    __slots__ = ("offsets", "values")

    def __init__(self, values: Sequence[int], offsets: tuple[int, ...] = (0,)) -> None:
        if not offsets or len(values) % len(offsets):
            raise ValueError(f"{len(values)} hot values do not fill rows of {len(offsets)}")
        self.values, self.offsets = values, tuple(offsets)

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[int]]) -> Hot:
        """The rows' hot columns as given (every row the same number of them)."""
        widths = {len(r) for r in rows}
        if len(widths) > 1:
            raise ValueError(f"hot rows of different widths {sorted(widths)}")
        width = widths.pop() if widths else 1
        return cls(list(chain.from_iterable(rows)), (0,) * width)

    @property
    def width(self) -> int:
        """Hot columns per row."""
        return len(self.offsets)

    def __len__(self) -> int:
        """Rows."""
        return len(self.values) // len(self.offsets)

    def rows(self) -> list[list[int]]:
        """Each row's hot columns, in order."""
        w, v, offsets = len(self.offsets), self.values, self.offsets
        return [list(map(add, v[i : i + w], offsets)) for i in range(0, len(v), w)]

    def merged(self, group: int, width: int) -> Hot:
        """The hot columns once every ``group`` rows of ``width`` columns are one row."""
        offsets = tuple(j * width + o for j in range(group) for o in self.offsets)
        return Hot(self.values, offsets)
