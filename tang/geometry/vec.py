"""2-D and 3-D vectors over any number type (float, ``tang.Dual``, traced ``tang.Node``).

Small value objects with ``__slots__`` for hot loops: every operation returns a new vector
and none mutates one. A vector unpacks (``x, y, z = v``), indexes and has a length, so it
passes wherever a sequence of coordinates is taken. ``==`` compares components (floats).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from .. import scalar as S
from ..dual import Dual

Number = Any  # float | tang.Dual | tang.Node


class Spatial:
    """The base of the geometry types (vectors, quaternions, matrices): none of them is a
    scalar, so ``*`` between two of them is refused instead of multiplied component-wise."""

    __slots__ = ()


# operands that ``*`` and ``/`` never take as a scale factor
NOT_SCALAR = (Spatial, tuple, list, str)


def is_zero(x: Number) -> bool:
    """True when ``x`` is a plain number (or a Dual of one) whose value is 0; False for
    traced nodes, which have no value yet."""
    while isinstance(x, Dual):
        x = x.value
    return isinstance(x, (int, float)) and x == 0


def root(x: Number) -> Number:
    """√x on any number (``math.sqrt`` for the common float)."""
    return math.sqrt(x) if x.__class__ is float and x >= 0.0 else S.sqrt(x)


class Vec2(Spatial):
    """A 2-D vector (x, y)."""

    __slots__ = ("x", "y")

    def __init__(self, x: Number, y: Number) -> None:
        self.x = x
        self.y = y

    @classmethod
    def of(cls, xy: Sequence[Number]) -> Vec2:
        """A Vec2 from any 2-sequence (a tuple, a list, another Vec2)."""
        if isinstance(xy, Vec2):
            return xy
        try:
            x, y = xy
        except (TypeError, ValueError):
            raise ValueError(f"a Vec2 needs 2 coordinates, got {xy!r}") from None
        return cls(x, y)

    def __add__(self, o: Any) -> Vec2:
        if o.__class__ is not Vec2:
            return NotImplemented
        return Vec2(self.x + o.x, self.y + o.y)

    def __sub__(self, o: Any) -> Vec2:
        if o.__class__ is not Vec2:
            return NotImplemented
        return Vec2(self.x - o.x, self.y - o.y)

    def __neg__(self) -> Vec2:
        return Vec2(-self.x, -self.y)

    def __pos__(self) -> Vec2:
        return self

    def __mul__(self, s: Any) -> Vec2:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Vec2(self.x * s, self.y * s)

    def __rmul__(self, s: Any) -> Vec2:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Vec2(s * self.x, s * self.y)

    def __truediv__(self, s: Any) -> Vec2:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Vec2(self.x / s, self.y / s)

    def dot(self, o: Vec2) -> Number:
        """x·ox + y·oy."""
        return self.x * o.x + self.y * o.y

    def cross(self, o: Vec2) -> Number:
        """The z component of the 3-D cross product: x·oy - y·ox (positive when ``o`` is
        counter-clockwise from this vector)."""
        return self.x * o.y - self.y * o.x

    def norm2(self) -> Number:
        """The squared length."""
        return self.x * self.x + self.y * self.y

    def norm(self) -> Number:
        """The length, via ``tang.sqrt`` (so it has slopes on Duals and traces to a node)."""
        return root(self.x * self.x + self.y * self.y)

    def normalized(self) -> Vec2:
        """This vector scaled to length 1 (ValueError for a zero vector)."""
        n = self.norm()
        if is_zero(n):
            raise ValueError("cannot normalize the zero vector")
        return Vec2(self.x / n, self.y / n)

    def __iter__(self) -> Iterator[Number]:
        return iter((self.x, self.y))

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: Any) -> Any:
        try:
            return (self.x, self.y)[i]
        except IndexError:
            raise IndexError(f"Vec2 index {i} out of range (0, 1)") from None

    def __eq__(self, o: object) -> bool:
        if o.__class__ is not Vec2:
            return NotImplemented
        return self.x == o.x and self.y == o.y  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # a mutable-slot value: not a dict key

    def __repr__(self) -> str:
        return f"Vec2({self.x!r}, {self.y!r})"


class Vec3(Spatial):
    """A 3-D vector (x, y, z)."""

    __slots__ = ("x", "y", "z")

    def __init__(self, x: Number, y: Number, z: Number) -> None:
        self.x = x
        self.y = y
        self.z = z

    @classmethod
    def of(cls, xyz: Sequence[Number]) -> Vec3:
        """A Vec3 from any 3-sequence (a tuple, a list, another Vec3)."""
        if isinstance(xyz, Vec3):
            return xyz
        try:
            x, y, z = xyz
        except (TypeError, ValueError):
            raise ValueError(f"a Vec3 needs 3 coordinates, got {xyz!r}") from None
        return cls(x, y, z)

    def __add__(self, o: Any) -> Vec3:
        if o.__class__ is not Vec3:
            return NotImplemented
        return Vec3(self.x + o.x, self.y + o.y, self.z + o.z)

    def __sub__(self, o: Any) -> Vec3:
        if o.__class__ is not Vec3:
            return NotImplemented
        return Vec3(self.x - o.x, self.y - o.y, self.z - o.z)

    def __neg__(self) -> Vec3:
        return Vec3(-self.x, -self.y, -self.z)

    def __pos__(self) -> Vec3:
        return self

    def __mul__(self, s: Any) -> Vec3:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Vec3(self.x * s, self.y * s, self.z * s)

    def __rmul__(self, s: Any) -> Vec3:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Vec3(s * self.x, s * self.y, s * self.z)

    def __truediv__(self, s: Any) -> Vec3:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Vec3(self.x / s, self.y / s, self.z / s)

    def dot(self, o: Vec3) -> Number:
        """x·ox + y·oy + z·oz."""
        return self.x * o.x + self.y * o.y + self.z * o.z

    def cross(self, o: Vec3) -> Vec3:
        """The cross product (right-handed: x̂ × ŷ = ẑ)."""
        x, y, z = self.x, self.y, self.z
        return Vec3(y * o.z - z * o.y, z * o.x - x * o.z, x * o.y - y * o.x)

    def norm2(self) -> Number:
        """The squared length."""
        return self.x * self.x + self.y * self.y + self.z * self.z

    def norm(self) -> Number:
        """The length, via ``tang.sqrt`` (so it has slopes on Duals and traces to a node)."""
        return root(self.x * self.x + self.y * self.y + self.z * self.z)

    def normalized(self) -> Vec3:
        """This vector scaled to length 1 (ValueError for a zero vector)."""
        n = self.norm()
        if is_zero(n):
            raise ValueError("cannot normalize the zero vector")
        return Vec3(self.x / n, self.y / n, self.z / n)

    def __iter__(self) -> Iterator[Number]:
        return iter((self.x, self.y, self.z))

    def __len__(self) -> int:
        return 3

    def __getitem__(self, i: Any) -> Any:
        try:
            return (self.x, self.y, self.z)[i]
        except IndexError:
            raise IndexError(f"Vec3 index {i} out of range (0, 1, 2)") from None

    def __eq__(self, o: object) -> bool:
        if o.__class__ is not Vec3:
            return NotImplemented
        return self.x == o.x and self.y == o.y and self.z == o.z  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # a mutable-slot value: not a dict key

    def __repr__(self) -> str:
        return f"Vec3({self.x!r}, {self.y!r}, {self.z!r})"


Sequence.register(Vec2)
Sequence.register(Vec3)
