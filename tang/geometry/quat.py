"""Quaternions w + xi + yj + zk over any number type, for 3-D rotations.

A unit quaternion q = (cos θ/2, sin θ/2 · axis) rotates by θ about ``axis``
(right-handed: counter-clockwise when the axis points at the viewer); q and -q are the
same rotation.
``q1 * q2`` is the Hamilton product, so ``(q1 * q2).rotate(v) == q1.rotate(q2.rotate(v))``.
Everything runs on floats, Duals and traced nodes, except ``from_matrix``, which picks its
branch from the matrix's values (see there).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .. import scalar as S
from .mat import Mat
from .vec import NOT_SCALAR, Spatial, Vec3, is_zero, root

Number = Any  # float | tang.Dual | tang.Node

# slerp falls back to normalized lerp when tan²(θ/2) < this (θ ≲ 2e-6 rad between the two):
# there the two differ by O(θ³) ≈ 1e-18, and slerp's sin θ denominator is near 0
NEARLY_PARALLEL = 1e-12


class Quat(Spatial):
    """The quaternion w + xi + yj + zk; ``Quat()`` is the identity rotation."""

    __slots__ = ("w", "x", "y", "z")

    def __init__(self, w: Number = 1.0, x: Number = 0.0, y: Number = 0.0, z: Number = 0.0) -> None:
        self.w = w
        self.x = x
        self.y = y
        self.z = z

    # ---- construction ----------------------------------------------------------------
    @classmethod
    def identity(cls) -> Quat:
        """The rotation by 0."""
        return cls(1.0, 0.0, 0.0, 0.0)

    @classmethod
    def from_axis_angle(cls, axis: Sequence[Number], angle: Number) -> Quat:
        """The unit quaternion rotating by ``angle`` radians about ``axis`` (any non-zero
        length; counter-clockwise looking from the axis's tip toward the origin)."""
        ax, ay, az = _three(axis, "axis")
        n = root(ax * ax + ay * ay + az * az)
        if is_zero(n):
            raise ValueError("the rotation axis is the zero vector")
        half = angle * 0.5
        s = S.sin(half) / n
        return cls(S.cos(half), ax * s, ay * s, az * s)

    @classmethod
    def from_matrix(cls, m: Sequence[Sequence[Number]]) -> Quat:
        """The unit quaternion (w ≥ 0) of a 3×3 rotation matrix (a ``Mat`` or rows), by
        Shepperd's method: of 1 + trace and 1 + 2·m_ii - trace it takes the square root of
        the largest, which keeps the division well away from 0.

        The branch (and the sign making w ≥ 0) is picked from the entries' values: fine
        on floats and Duals (a Dual's slope follows the branch of its value), but not
        traceable: traced nodes have no values, so they raise a TypeError."""
        try:
            rows = m.rows if isinstance(m, Mat) else [list(r) for r in m]
        except TypeError:
            raise TypeError(f"from_matrix needs a 3×3 matrix (rows of numbers): {m!r}") from None
        if len(rows) != 3 or any(len(r) != 3 for r in rows):
            shape = f"{len(rows)} rows of lengths {[len(r) for r in rows]}"
            raise ValueError(f"from_matrix needs a 3×3 rotation matrix, got {shape}")
        (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = rows
        trace = m00 + m11 + m22
        candidates = (trace, m00, m11, m22)
        best = 0
        for i in (1, 2, 3):
            if _decided(S.lt(candidates[best], candidates[i])):
                best = i
        if best == 0:
            r = root(1.0 + trace)  # r = 2|w|
            f = 0.5 / r
            q = cls(0.5 * r, (m21 - m12) * f, (m02 - m20) * f, (m10 - m01) * f)
        elif best == 1:
            r = root(1.0 + m00 - m11 - m22)  # r = 2|x|
            f = 0.5 / r
            q = cls((m21 - m12) * f, 0.5 * r, (m01 + m10) * f, (m02 + m20) * f)
        elif best == 2:
            r = root(1.0 - m00 + m11 - m22)  # r = 2|y|
            f = 0.5 / r
            q = cls((m02 - m20) * f, (m01 + m10) * f, 0.5 * r, (m12 + m21) * f)
        else:
            r = root(1.0 - m00 - m11 + m22)  # r = 2|z|
            f = 0.5 / r
            q = cls((m10 - m01) * f, (m02 + m20) * f, (m12 + m21) * f, 0.5 * r)
        if _decided(S.lt(q.w, 0.0)):
            q = -q
        return q.normalized()

    # ---- the algebra -----------------------------------------------------------------
    def __add__(self, o: Any) -> Quat:
        if o.__class__ is not Quat:
            return NotImplemented
        return Quat(self.w + o.w, self.x + o.x, self.y + o.y, self.z + o.z)

    def __sub__(self, o: Any) -> Quat:
        if o.__class__ is not Quat:
            return NotImplemented
        return Quat(self.w - o.w, self.x - o.x, self.y - o.y, self.z - o.z)

    def __neg__(self) -> Quat:
        return Quat(-self.w, -self.x, -self.y, -self.z)

    def __pos__(self) -> Quat:
        return self

    def __mul__(self, o: Any) -> Quat:
        """The Hamilton product with a quaternion, or scaling by a number."""
        if o.__class__ is Quat:
            aw, ax, ay, az = self.w, self.x, self.y, self.z
            bw, bx, by, bz = o.w, o.x, o.y, o.z
            return Quat(
                aw * bw - ax * bx - ay * by - az * bz,
                aw * bx + ax * bw + ay * bz - az * by,
                aw * by - ax * bz + ay * bw + az * bx,
                aw * bz + ax * by - ay * bx + az * bw,
            )
        if isinstance(o, NOT_SCALAR):
            return NotImplemented
        return Quat(self.w * o, self.x * o, self.y * o, self.z * o)

    def __rmul__(self, s: Any) -> Quat:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Quat(s * self.w, s * self.x, s * self.y, s * self.z)

    def __truediv__(self, s: Any) -> Quat:
        if isinstance(s, NOT_SCALAR):
            return NotImplemented
        return Quat(self.w / s, self.x / s, self.y / s, self.z / s)

    def dot(self, o: Quat) -> Number:
        """The 4-D dot product (cos of the angle between unit quaternions)."""
        return self.w * o.w + self.x * o.x + self.y * o.y + self.z * o.z

    def conjugate(self) -> Quat:
        """w - xi - yj - zk: the inverse rotation of a unit quaternion."""
        return Quat(self.w, -self.x, -self.y, -self.z)

    def norm2(self) -> Number:
        """w² + x² + y² + z²."""
        return self.w * self.w + self.x * self.x + self.y * self.y + self.z * self.z

    def norm(self) -> Number:
        """The length √(w² + x² + y² + z²), via ``tang.sqrt``."""
        return root(self.norm2())

    def normalized(self) -> Quat:
        """This quaternion scaled to length 1 (ValueError for the zero quaternion)."""
        n = self.norm()
        if is_zero(n):
            raise ValueError("cannot normalize the zero quaternion")
        return Quat(self.w / n, self.x / n, self.y / n, self.z / n)

    def inverse(self) -> Quat:
        """q⁻¹ = conjugate / |q|² (ValueError for the zero quaternion)."""
        n2 = self.norm2()
        if is_zero(n2):
            raise ValueError("the zero quaternion has no inverse")
        return Quat(self.w / n2, -self.x / n2, -self.y / n2, -self.z / n2)

    # ---- rotations -------------------------------------------------------------------
    def rotate(self, v: Sequence[Number]) -> Vec3:
        """q v q* for a unit q: ``v`` (a Vec3 or any 3-sequence) rotated, as a Vec3.
        Computed as v + w·t + u × t with u = (x, y, z), t = 2 u × v (15 multiplications)."""
        vx, vy, vz = _three(v, "v")
        w, x, y, z = self.w, self.x, self.y, self.z
        tx = 2.0 * (y * vz - z * vy)
        ty = 2.0 * (z * vx - x * vz)
        tz = 2.0 * (x * vy - y * vx)
        return Vec3(
            vx + w * tx + (y * tz - z * ty),
            vy + w * ty + (z * tx - x * tz),
            vz + w * tz + (x * ty - y * tx),
        )

    def to_axis_angle(self) -> tuple[Vec3, Number]:
        """(unit axis, angle in [0, π]) of the rotation; any non-zero scale of q gives the
        same. The angle is 2·atan2(|(x, y, z)|, |w|), accurate near 0 and near π; the axis
        flips with w's sign so that the angle stays ≤ π. At the identity the axis is
        arbitrary: (1, 0, 0) with angle 0 (with zero slope; the angle has a kink there)."""
        w, x, y, z = self.w, self.x, self.y, self.z
        s = root(x * x + y * y + z * z)
        if is_zero(s):
            return Vec3(1.0, 0.0, 0.0), w * 0.0
        angle = 2.0 * S.atan2(s, S.abs(w))
        k = S.where(S.lt(w, 0.0), -1.0, 1.0) / s
        return Vec3(x * k, y * k, z * k), angle

    def to_matrix(self) -> Mat:
        """The 3×3 rotation matrix R of a unit q (R @ v == q.rotate(v))."""
        w, x, y, z = self.w, self.x, self.y, self.z
        xx, yy, zz = x * x, y * y, z * z
        xy, xz, yz = x * y, x * z, y * z
        wx, wy, wz = w * x, w * y, w * z
        return Mat._of(
            [
                [1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)],
                [2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)],
                [2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)],
            ]
        )

    @staticmethod
    def slerp(a: Quat, b: Quat, t: Number) -> Quat:
        """Spherical linear interpolation between unit quaternions: ``a`` at t = 0, ``b``
        (or -b, whichever is nearer: the shortest rotation) at t = 1, at constant angular
        speed between. Nearly parallel ends (θ below about 2e-6 rad) use the normalized
        linear interpolation instead, which agrees there to ~1e-18.

        Both choices are made with ``tang.where``, so this traces to a graph too; the
        branch not taken is fed safe values so its slopes stay finite."""
        flip = S.lt(a.dot(b), 0.0)
        b = Quat(
            S.where(flip, -b.w, b.w),
            S.where(flip, -b.x, b.x),
            S.where(flip, -b.y, b.y),
            S.where(flip, -b.z, b.z),
        )
        apart2 = (b - a).norm2()  # |b - a| = 2 sin(θ/2), |b + a| = 2 cos(θ/2) for unit ends
        together2 = (b + a).norm2()  # ≥ 2 once b is on a's side
        near = S.lt(apart2, NEARLY_PARALLEL * together2)
        theta = 2.0 * S.atan2(root(S.where(near, 1.0, apart2)), root(together2))
        sin_theta = S.where(near, 1.0, S.sin(theta))
        u = 1.0 - t
        wa = S.where(near, u, S.sin(u * theta) / sin_theta)
        wb = S.where(near, t, S.sin(t * theta) / sin_theta)
        mixed = Quat(
            a.w * wa + b.w * wb, a.x * wa + b.x * wb, a.y * wa + b.y * wb, a.z * wa + b.z * wb
        )
        length = S.where(near, mixed.norm(), 1.0)  # slerp of unit ends is already unit
        return Quat(mixed.w / length, mixed.x / length, mixed.y / length, mixed.z / length)

    # ---- a sequence of four numbers --------------------------------------------------
    def __iter__(self) -> Iterator[Number]:
        return iter((self.w, self.x, self.y, self.z))

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: Any) -> Any:
        try:
            return (self.w, self.x, self.y, self.z)[i]
        except IndexError:
            raise IndexError(f"Quat index {i} out of range (0..3: w, x, y, z)") from None

    def __eq__(self, o: object) -> bool:
        if o.__class__ is not Quat:
            return NotImplemented
        return (
            self.w == o.w  # type: ignore[attr-defined]
            and self.x == o.x  # type: ignore[attr-defined]
            and self.y == o.y  # type: ignore[attr-defined]
            and self.z == o.z  # type: ignore[attr-defined]
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Quat({self.w!r}, {self.x!r}, {self.y!r}, {self.z!r})"


slerp = Quat.slerp


def _three(v: Any, name: str) -> tuple[Number, Number, Number]:
    """The three coordinates of a Vec3 or 3-sequence (ValueError naming ``name`` if not)."""
    if v.__class__ is Vec3:
        return v.x, v.y, v.z
    try:
        x, y, z = v
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a Vec3 or a sequence of 3 numbers, got {v!r}") from None
    return x, y, z


def _decided(cond: Any) -> bool:
    """A comparison made on values (floats, Duals); a traced comparison cannot pick a
    branch of Python code."""
    if isinstance(cond, bool):
        return cond
    raise TypeError(
        "Quat.from_matrix picks its branch from the matrix's values, so it cannot run on "
        "traced nodes (trace the quaternion instead, or evaluate on floats or Duals)"
    )
