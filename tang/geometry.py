"""Small physics and geometry written once over any number type: floats give numbers,
Duals give slopes, graph variables give a graph to differentiate or lower."""

from __future__ import annotations

from typing import Any

from . import scalar as S


def gravity(x: Any, y: Any, gm: Any = 1.0) -> tuple[Any, Any]:
    """Acceleration at (x, y) toward a point mass ``gm`` at the origin: -gm·r/|r|³."""
    r2 = x * x + y * y
    k = -gm / (r2 * S.sqrt(r2))
    return k * x, k * y


def leapfrog_orbit(
    x: Any, y: Any, vx: Any, vy: Any, *, steps: int = 1600, dt: float = 0.01, gm: Any = 1.0
) -> tuple[Any, Any, Any, Any]:
    """The state (x, y, vx, vy) after ``steps`` kick-drift-kick leapfrog steps of ``dt``
    around a point mass (symplectic: the orbit's energy does not drift)."""
    half = 0.5 * dt
    ax, ay = gravity(x, y, gm)
    for _ in range(steps):
        vx, vy = vx + half * ax, vy + half * ay
        x, y = x + dt * vx, y + dt * vy
        ax, ay = gravity(x, y, gm)
        vx, vy = vx + half * ax, vy + half * ay
    return x, y, vx, vy
