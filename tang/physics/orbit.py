"""A probe among fixed gravitating bodies, written once over any number: floats give the
flight, Duals its exact slopes, traced variables a graph.

- ``fly``: kick-drift-kick leapfrog in the bodies' summed gravity (``tang.physics.gravity``); a
  probe that enters a body stops on its surface, at the exact point where its last step
  crossed it, so the stop point (and the time of impact) move smoothly with the launch.
- ``closest_approach``: the distance from a target to the flown path (the polyline through
  the leapfrog positions): the true closest approach. It is differentiable wherever one
  part of the path is nearest, so its exact slope is the gradient an optimiser wants, with
  no smoothing (where two parts tie it has a crease, which demos/orbit.py steps along).
- ``value_and_gradient``: a function of two numbers and both partial derivatives, from one
  forward pass on Duals carrying two tangents.
- ``shot_loop``: ``shoot(...).miss`` as one ``tang.expr.loop.fori_loop`` (a step flies and
  measures its own segment), so traced it is one loop node of O(one step) nodes;
  ``swarm_outputs``: that loop on Duals of two variables, the graph of a kernel that gives
  every shot of a batch its miss and gradient (demos/orbit.py's swarm).

Decided comparisons (numbers, Duals) end the flight at an impact and pick the nearest part
of the path by value; on traced graph nodes the same steps become selects (a graph cannot
leave a loop early), so the graph computes the same function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import dual
from .. import scalar as S
from ..dual import Dual, Tangents
from ..expr.graph import Node, as_node, var
from ..expr.loop import fori_loop
from .gravity import point_mass

Number = Any  # float | tang.Dual | tang.Node

# Two tangents in one complex number: the real part is the first direction, the imaginary
# part the second. Dual arithmetic only adds tangents and scales them by real numbers, which
# a complex number does exactly as a pair of floats would, in C: about 5× faster than a
# ``Tangents`` tuple here (benchmarks/demos.py measures both; tests check they agree).
TWO_DIRECTIONS = (1.0 + 0.0j, 1.0j)
# A floor for denominators and square roots that only a traced graph's unused branches
# reach (a stopped probe's zero-length steps): keeps their slopes finite, so selects
# never meet 0·inf.
TINY = 1e-30


@dataclass(frozen=True)
class Body:
    """A fixed point mass at (x, y) with ``gm`` = G·M, and the radius of its surface."""

    x: float
    y: float
    gm: float
    radius: float
    name: str = ""


@dataclass(frozen=True)
class Flight:
    """Where the probe was: the launch point, then one position per step (the last one on
    a body's surface if it hit one). ``hit`` is that body's index (None: no impact, or not
    known because the flight was traced), ``duration`` the time flown."""

    xs: list[Number]
    ys: list[Number]
    hit: int | None
    duration: Number


def pull(
    x: Number, y: Number, bodies: Sequence[Body], scale: float = 1.0
) -> tuple[Number, Number, list[Number]]:
    """The summed acceleration of ``bodies`` at (x, y) times ``scale``, and the squared
    distance to each body. (A pull scaled by dt is the velocity change over dt: the
    acceleration of masses gm·dt, at no extra operation.)"""
    ax, ay, r2 = point_mass(x, y, bodies[0].gm * scale, bodies[0].x, bodies[0].y)
    r2s = [r2]
    for b in bodies[1:]:
        bx, by, r2 = point_mass(x, y, b.gm * scale, b.x, b.y)
        ax, ay = ax + bx, ay + by
        r2s.append(r2)
    return ax, ay, r2s


def entry_fraction(x0: Number, y0: Number, x1: Number, y1: Number, body: Body) -> Number:
    """How far along the step (x0, y0) → (x1, y1) it enters ``body``'s surface, in [0, 1]:
    the smaller root f of |p0 + f·d − c|² = R², written so that it never cancels."""
    dx, dy = x1 - x0, y1 - y0
    ox, oy = x0 - body.x, y0 - body.y
    a = dx * dx + dy * dy
    b = ox * dx + oy * dy  # < 0: moving inward
    c = ox * ox + oy * oy - body.radius * body.radius  # ≥ 0: p0 is outside
    disc = S.max(b * b - a * c, TINY)
    return c / S.max(S.sqrt(disc) - b, TINY)


def fly(
    x: Number,
    y: Number,
    vx: Number,
    vy: Number,
    bodies: Sequence[Body],
    *,
    steps: int,
    dt: float,
) -> Flight:
    """The probe launched from (x, y) at (vx, vy): ``steps`` leapfrog steps of ``dt``,
    stopping where it first enters a body.

    Written in displacement form: ``ux, uy`` = velocity·dt, the next step's displacement,
    so a drift is one addition per axis and a kick adds the pull scaled by dt² (the two
    half-kicks between drifts merged into one). Same positions as kick-drift-kick."""
    if not bodies:
        raise ValueError("fly needs at least one body")
    ax, ay, _ = pull(x, y, bodies, 0.5 * dt * dt)
    ux, uy = vx * dt + ax, vy * dt + ay
    xs, ys = [x], [y]
    limits = [b.radius * b.radius for b in bodies]
    kick = dt * dt
    moving: Number = 1.0  # traced: a node, 1 until the first impact, then 0
    duration: Number = steps * dt
    for n in range(steps):
        nx, ny = x + ux, y + uy
        ax, ay, r2s = pull(nx, ny, bodies, kick)
        for i, limit in enumerate(limits):
            inside = r2s[i] < limit
            traced = isinstance(inside, Node)
            if not traced and not inside:
                continue
            f = entry_fraction(x, y, nx, ny, bodies[i])
            sx, sy = x + f * (nx - x), y + f * (ny - y)
            if not traced:  # decided: the flight ends on the surface
                xs.append(sx)
                ys.append(sy)
                return Flight(xs, ys, i, (n + f) * dt)
            # traced: the first impact sets the stop point and time; later steps keep them
            enters = S.lt(0.5, S.where(inside, moving, 0.0))
            nx, ny = S.where(enters, sx, nx), S.where(enters, sy, ny)
            duration = S.where(enters, (n + f) * dt, duration)
            moving = S.where(enters, 0.0, moving)
        if isinstance(moving, Node):  # traced, and perhaps stopped: then hold still
            flying = S.lt(0.5, moving)
            ax, ay = S.where(flying, ax, 0.0), S.where(flying, ay, 0.0)
            ux, uy = S.where(flying, ux, 0.0), S.where(flying, uy, 0.0)
        x, y = nx, ny
        ux, uy = ux + ax, uy + ay
        xs.append(x)
        ys.append(y)
    return Flight(xs, ys, None, duration)


def primal(x: Number) -> float | None:
    """The plain value under any Duals, or None for a traced node (no value yet)."""
    while isinstance(x, dual.Dual):
        x = x.value
    return float(x) if isinstance(x, (int, float)) else None


def _values(xs: Sequence[Number]) -> list[float] | None:
    """The plain values of ``xs`` (None if any is traced); quick for one level of Duals."""
    out = [getattr(v, "value", v) for v in xs]
    if all(v.__class__ is float for v in out):
        return out
    out = [primal(v) for v in xs]
    return None if None in out else out


def segment_distance2(
    ax: Number, ay: Number, bx: Number, by: Number, tx: float, ty: float
) -> tuple[Number, Number, Number]:
    """The squared distance from (tx, ty) to the segment a → b, and the nearest point."""
    sx, sy = bx - ax, by - ay
    ex, ey = tx - ax, ty - ay
    length2 = sx * sx + sy * sy
    t = (ex * sx + ey * sy) / S.max(length2, TINY)
    t = S.min(S.max(t, 0.0), 1.0)
    px, py = ax + t * sx, ay + t * sy
    dx, dy = tx - px, ty - py
    return dx * dx + dy * dy, px, py


SEARCH = 2  # segments checked on each side of the nearest position


def closest_approach(
    xs: Sequence[Number], ys: Sequence[Number], tx: float, ty: float
) -> tuple[Number, tuple[Number, Number]]:
    """The distance from (tx, ty) to the path through (xs, ys), and the nearest point.

    With values at hand the nearest position is found on plain floats and only the
    segments beside it are measured in the number type; traced, every segment is."""
    n = len(xs)
    if n == 1:
        dx, dy = tx - xs[0], ty - ys[0]
        return S.sqrt(dx * dx + dy * dy), (xs[0], ys[0])
    px, py = _values(xs), _values(ys)
    if px is None or py is None:
        lo, hi = 0, n - 1
    else:
        best = min(range(n), key=lambda i: (px[i] - tx) ** 2 + (py[i] - ty) ** 2)
        lo, hi = max(0, best - SEARCH), min(n - 1, best + SEARCH)
    best_d2, bx, by = segment_distance2(xs[lo], ys[lo], xs[lo + 1], ys[lo + 1], tx, ty)
    for i in range(lo + 1, hi):
        d2, qx, qy = segment_distance2(xs[i], ys[i], xs[i + 1], ys[i + 1], tx, ty)
        nearer = S.lt(d2, best_d2)
        best_d2 = S.where(nearer, d2, best_d2)
        bx, by = S.where(nearer, qx, bx), S.where(nearer, qy, by)
    return S.sqrt(best_d2), (bx, by)


@dataclass(frozen=True)
class Shot:
    """One launch: its flight, its miss (closest approach to the target) and where on the
    path that was."""

    flight: Flight
    miss: Number
    nearest: tuple[Number, Number]


def shoot(
    speed: Number,
    heading: Number,
    *,
    pad: tuple[float, float],
    target: tuple[float, float],
    bodies: Sequence[Body],
    steps: int,
    dt: float,
) -> Shot:
    """Launch from ``pad`` at ``speed`` along ``heading`` (radians, counter-clockwise from
    +x) and measure how close the flight comes to ``target``."""
    vx, vy = speed * S.cos(heading), speed * S.sin(heading)
    flight = fly(pad[0], pad[1], vx, vy, bodies, steps=steps, dt=dt)
    # The pad itself is left out: a shot moving away from the target then has its nearest
    # point one step out, whose slope turns it toward the target (at the pad it has none).
    xs, ys = (flight.xs[1:], flight.ys[1:]) if len(flight.xs) > 1 else (flight.xs, flight.ys)
    miss, nearest = closest_approach(xs, ys, target[0], target[1])
    return Shot(flight, miss, nearest)


def value_and_gradient(
    f: Callable[[Number, Number], Number], a: float, b: float
) -> tuple[float, tuple[float, float]]:
    """f(a, b) and (∂f/∂a, ∂f/∂b), from one forward pass on Duals carrying both tangents."""
    with dual.perturbation(a, b) as level:
        out = f(dual.seed(level, a, TWO_DIRECTIONS[0]), dual.seed(level, b, TWO_DIRECTIONS[1]))
    value, tangent = dual.split(out, level, 0j)
    tangent = complex(tangent)
    return float(value), (tangent.real, tangent.imag)


# ---------------------------------------------------------------------------------------
# the same shot as one loop: O(body) graph nodes however many steps it flies

# The running best squared distance starts here: far above any miss, and finite in f32
# (a GPU kernel's state), so the first measured point always replaces it.
FAR = 1e30


def shot_loop(
    speed: Number,
    heading: Number,
    *,
    pad: tuple[float, float],
    target: tuple[float, float],
    bodies: Sequence[Body],
    steps: int,
    dt: float,
) -> Number:
    """``shoot(...).miss`` as one ``fori_loop``: each step flies as the traced branch of
    ``fly`` does (an impact stops the probe on the surface; later steps hold it still) and
    measures its own segment of the path, keeping the least squared distance.

    Written once over any number: floats and Duals run it as a Python loop; traced nodes (or
    Duals of them) give one ``loop`` node whose body is one step, so a swarm kernel stays
    O(body). The path measured is ``shoot``'s (the pad left out: step 0 measures only the
    point it reaches); ``shoot`` on floats checks only the segments beside the nearest
    position, this measures every one: the same minimum, up to a far-off tie."""
    if not bodies:
        raise ValueError("shot_loop needs at least one body")
    tx, ty = target
    vx, vy = speed * S.cos(heading), speed * S.sin(heading)
    ax, ay, _ = pull(pad[0], pad[1], bodies, 0.5 * dt * dt)
    kick = dt * dt
    limits = [b.radius * b.radius for b in bodies]

    def step(i: Number, state: tuple[Number, ...]) -> tuple[Number, ...]:
        x, y, ux, uy, moving, best = state
        nx, ny = x + ux, y + uy
        ax, ay, r2s = pull(nx, ny, bodies, kick)
        for k, limit in enumerate(limits):
            f = entry_fraction(x, y, nx, ny, bodies[k])
            enters = S.lt(0.5, S.where(S.lt(r2s[k], limit), moving, 0.0))  # the first impact
            nx = S.where(enters, x + f * (nx - x), nx)
            ny = S.where(enters, y + f * (ny - y), ny)
            moving = S.where(enters, 0.0, moving)
        flying = S.lt(0.5, moving)  # stopped: hold still (zero-length steps from here on)
        ax, ay = S.where(flying, ax, 0.0), S.where(flying, ay, 0.0)
        ux, uy = S.where(flying, ux, 0.0), S.where(flying, uy, 0.0)
        first = S.lt(i, 0.5)  # the pad is not on the measured path: step 0 measures a point
        d2, _, _ = segment_distance2(S.where(first, nx, x), S.where(first, ny, y), nx, ny, tx, ty)
        best = S.where(S.lt(d2, best), d2, best)
        return nx, ny, ux + ax, uy + ay, moving, best

    ux, uy = vx * dt + ax, vy * dt + ay
    zero = 0.0 * ux  # the position and the best distance start as the kind the steps make
    start = (zero + pad[0], zero + pad[1], ux, uy, 1.0, zero + FAR)  # (one trace, no widening)
    *_, best = fori_loop(steps, step, start)
    return S.sqrt(best)


def swarm_outputs(
    *,
    pad: tuple[float, float],
    target: tuple[float, float],
    bodies: Sequence[Body],
    steps: int,
    dt: float,
    speed_unit: float = 1.0,
) -> list[Node]:
    """The swarm kernel's graph: ``[miss, ∂miss/∂speed, ∂miss/∂heading]`` over the inputs
    ``speed`` (in ``speed_unit``) and ``heading`` (radians), from ``shot_loop`` on Duals of
    the two variables carrying two tangents (forward mode inside the loop: one pass per
    point gives the value and both slopes)."""
    speed = Dual(var("speed"), Tangents([1.0, 0.0]))
    heading = Dual(var("heading"), Tangents([0.0, 1.0]))
    miss = shot_loop(
        speed * speed_unit, heading, pad=pad, target=target, bodies=bodies, steps=steps, dt=dt
    )
    d_speed, d_heading = miss.tangent
    return [as_node(miss.value), as_node(d_speed), as_node(d_heading)]
