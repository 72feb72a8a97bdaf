"""Point-mass gravity and the kick-drift-kick leapfrog, written once over any number type:
floats give numbers, Duals give slopes, graph variables give a graph to differentiate or lower."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import scalar as S

Number = Any  # float | tang.Dual | tang.Node
Acceleration = Callable[[Number, Number], tuple[Number, Number]]


def point_mass(
    x: Number, y: Number, gm: Number = 1.0, cx: float = 0.0, cy: float = 0.0
) -> tuple[Number, Number, Number]:
    """Acceleration at (x, y) toward a point mass ``gm`` (= G·M) at (cx, cy), -gm·r/|r|³,
    and the squared distance |r|² (which collision tests want too)."""
    dx = x if cx == 0.0 else x + -cx  # (Dual + float is Dual's quickest path)
    dy = y if cy == 0.0 else y + -cy
    r2 = dx * dx + dy * dy
    k = S.pow(r2, -1.5) * -gm  # one operation on a Dual (a sqrt, a product and a reciprocal
    return k * dx, k * dy, r2  # cost 1.6× as much)


def gravity(x: Number, y: Number, gm: Number = 1.0) -> tuple[Number, Number]:
    """Acceleration at (x, y) toward a point mass ``gm`` at the origin: -gm·r/|r|³."""
    ax, ay, _ = point_mass(x, y, gm)
    return ax, ay


def leapfrog_orbit(
    x: Number,
    y: Number,
    vx: Number,
    vy: Number,
    *,
    steps: int = 1600,
    dt: float = 0.01,
    gm: Number = 1.0,
    accel: Acceleration | None = None,
) -> tuple[Number, Number, Number, Number]:
    """The state (x, y, vx, vy) after ``steps`` kick-drift-kick leapfrog steps of ``dt``
    around a point mass ``gm`` at the origin, or in the field ``accel(x, y) -> (ax, ay)``
    when given (symplectic: the orbit's energy does not drift)."""
    if accel is None:

        def accel(px: Number, py: Number) -> tuple[Number, Number]:
            return gravity(px, py, gm)

    half = 0.5 * dt
    ax, ay = accel(x, y)
    for _ in range(steps):
        vx, vy = vx + half * ax, vy + half * ay
        x, y = x + dt * vx, y + dt * vy
        ax, ay = accel(x, y)
        vx, vy = vx + half * ax, vy + half * ay
    return x, y, vx, vy
