"""The orbit: fling a probe from a launch pad so that it passes through a target, among
gravitating bodies; then let gradient descent aim it.

The physics lives in ``tang.physics.orbit`` (written once over any number); this module
holds the scene, the optimiser and the worker handlers:

    orbit.scene      {}                              the scene below, for the page to draw
    orbit.shoot      {speed, heading_deg}            one flight: its path, miss and impact
    orbit.optimize   {speed, heading_deg, run}       one iterate of the optimiser per call
    orbit.bench      {repeat}                        the gradient's time here (benchmarks/)

The gradient of the miss with respect to (speed, heading) comes from one forward pass on
dual numbers through all 1,600 leapfrog steps. The optimiser steps against it (against the
shortest vector between it and the previous gradient when the two point apart: the iterates
straddle a crease of the miss) by Polyak's length (miss / slope: where a straight line
through the slope would reach zero), capped by a trust radius and backtracked until the
miss drops. On the desktop the same code runs as::

    python -m demos.orbit --speed 1 --heading 90 --optimize 30 [--json]
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from demos.api import handler
from demos.common import (
    OneLineParser,
    finite_or_none,
    finite_param,
    glue_values,
    session_state,
)
from tang.physics.orbit import Body, Shot, shoot, value_and_gradient

# ---------------------------------------------------------------------------------------
# the scene, stated once: lengths in units of the pad's distance from the planet, y up,
# angles counter-clockwise from +x, the planet's G·M = 1 (so its circular speed there is 1)

BODIES = (
    Body(0.0, 0.0, 1.0, 0.3, "planet"),
    Body(1.15, 0.95, 0.04, 0.1, "moon"),
)
PAD = (-1.0, 0.0)
TARGET = (1.45, -0.55)
STEPS = 1600
DT = 0.005  # 8 time units in all: about 1.3 turns of a circular orbit at the pad
SHOTS = 3  # the player's shots before tang tries
VIEW = (-2.0, 2.0, -1.6, 1.6)  # x0, x1, y0, y1: what the page shows

HEAVIEST = max(BODIES, key=lambda b: b.gm)
SPEED_UNIT = math.sqrt(HEAVIEST.gm / math.dist(PAD, (HEAVIEST.x, HEAVIEST.y)))  # circular
MAX_SPEED = 3.0  # in SPEED_UNIT: twice the escape speed
MIN_SPEED = 1e-3  # the optimiser's floor (the CLI and page take any speed above 0)

# the optimiser, on (speed in SPEED_UNIT, heading in radians)
TRUST_START, TRUST_MAX = 0.1, 0.5  # the longest step, in (speed, radian) units
BACKTRACK = 0.25  # a step that does not lower the miss is cut to this fraction
TRIALS = 8  # tries per iterate before calling it stalled
ARMIJO = 1e-4  # a step must lower the miss by this fraction of what the slope promises
DONE_MISS = 1e-9  # a miss this small cannot usefully shrink (the path is a polyline)
PATH_POINTS = 320  # points of each path sent to the page (the last, the impact, always)


def fire(speed: Any, heading: Any) -> Shot:
    """The scene's shot at ``speed`` (in SPEED_UNIT) along ``heading`` (radians); any
    number type."""
    return shoot(
        speed * SPEED_UNIT, heading, pad=PAD, target=TARGET, bodies=BODIES, steps=STEPS, dt=DT
    )


def miss_and_gradient(speed: float, heading: float) -> tuple[float, tuple[float, float]]:
    """The miss and its partial derivatives in speed and heading (radians), from one dual
    pass through the whole flight. A shot that hits a body has a miss too (its closest
    approach before the impact, whose point moves smoothly with the launch), so descent
    recovers from it like from any other shot."""
    return value_and_gradient(lambda s, h: fire(s, h).miss, speed, heading)


# ---------------------------------------------------------------------------------------
# the optimiser: gradient descent with Polyak's step length, a trust radius and backtracking


@dataclass
class Iterate:
    """Where the optimiser stands: the shot's parameters, its miss and the miss's gradient."""

    speed: float
    heading: float  # radians
    miss: float
    gradient: tuple[float, float]
    radius: float = TRUST_START
    iteration: int = 0
    done: str = ""  # why it stopped ("converged", "stalled"), or "" while it can go on
    previous: tuple[float, float] | None = None  # the gradient before the last step


def start(speed: float, heading: float) -> Iterate:
    """The optimiser's state at a first shot (one dual pass)."""
    value, grad = miss_and_gradient(speed, heading)
    return Iterate(speed, heading, value, grad, done="converged" if value <= DONE_MISS else "")


def descent_direction(
    g: tuple[float, float], previous: tuple[float, float] | None
) -> tuple[float, float]:
    """The gradient, or, when it turned against the previous one (the iterates zigzag
    across a crease of the miss), the shortest vector between the two: it points along the
    crease, where both sides go down."""
    if previous is None or g[0] * previous[0] + g[1] * previous[1] >= 0.0:
        return g
    ds, dh = previous[0] - g[0], previous[1] - g[1]
    t = -(g[0] * ds + g[1] * dh) / (ds * ds + dh * dh)
    t = min(max(t, 0.0), 1.0)
    return g[0] + t * ds, g[1] + t * dh


def improve(it: Iterate) -> Iterate:
    """One iterate: step against the descent direction by Polyak's length (capped by the
    trust radius), backtracking until the miss drops enough; each try is one dual pass."""
    if it.done:
        return it
    gs, gh = it.gradient
    ds, dh = descent_direction(it.gradient, it.previous)
    norm = math.hypot(ds, dh)
    slope = (gs * ds + gh * dh) / norm if norm > 0.0 else 0.0  # the miss's rate along it
    if not (math.isfinite(slope) and slope > 0.0):
        return replace(it, done="stalled")
    length = min(it.miss / slope, it.radius)
    for trial in range(TRIALS):
        speed = min(max(it.speed - length * ds / norm, MIN_SPEED), MAX_SPEED)
        heading = it.heading - length * dh / norm
        value, grad = miss_and_gradient(speed, heading)
        if value <= it.miss - ARMIJO * length * slope:
            radius = it.radius
            if trial == 0 and length == it.radius:  # a full step at the limit worked
                radius = min(2.0 * it.radius, TRUST_MAX)
            done = "converged" if value <= DONE_MISS else ""
            return Iterate(speed, heading, value, grad, radius, it.iteration + 1, done, it.gradient)
        length *= BACKTRACK
    return replace(it, radius=length, iteration=it.iteration + 1, done="stalled")


def optimize(speed: float, heading: float, iterations: int) -> list[tuple[Iterate, Shot]]:
    """The first shot and up to ``iterations`` iterates (fewer once it converges or
    stalls), each with its shot."""
    it = start(speed, heading)
    out = [(it, fire(speed, heading))]
    for _ in range(iterations):
        if it.done:
            break
        it = improve(it)
        out.append((it, fire(it.speed, it.heading)))
    return out


# ---------------------------------------------------------------------------------------
# worker handlers


def _round(v: float, digits: int = 5) -> float:
    return round(float(v), digits)


def shot_json(shot: Shot, speed: float, heading: float) -> dict[str, Any]:
    """A shot for the page: its path (at most PATH_POINTS points, the last one kept), its
    miss (true closest approach), the nearest point and the body it hit (or None)."""
    xs, ys = shot.flight.xs, shot.flight.ys
    every = max(1, math.ceil(len(xs) / PATH_POINTS))
    keep = list(range(0, len(xs), every))
    if keep[-1] != len(xs) - 1:
        keep.append(len(xs) - 1)
    hit = shot.flight.hit
    return {
        "speed": float(speed),
        "heading_deg": math.degrees(heading),
        "miss": float(shot.miss),
        "nearest": [_round(shot.nearest[0]), _round(shot.nearest[1])],
        "hit": None if hit is None else BODIES[hit].name,
        "duration": float(shot.flight.duration),
        "path": [[_round(xs[i]), _round(ys[i])] for i in keep],
    }


def _launch(speed: Any, heading_deg: Any) -> tuple[float, float]:
    s = finite_param(speed, "speed")
    h = finite_param(heading_deg, "heading_deg")
    if not 0.0 < s <= MAX_SPEED:
        raise ValueError(f"speed must be above 0 and at most {MAX_SPEED:g}, got {s:g}")
    return s, math.radians(h)


@handler("orbit.scene")
def scene() -> dict[str, Any]:
    """The scene as stated above, for the page to draw with the same numbers."""
    return {
        "bodies": [
            {"name": b.name, "x": b.x, "y": b.y, "gm": b.gm, "radius": b.radius} for b in BODIES
        ],
        "pad": list(PAD),
        "target": list(TARGET),
        "steps": STEPS,
        "dt": DT,
        "shots": SHOTS,
        "view": list(VIEW),
        "speed_unit": SPEED_UNIT,
        "max_speed": MAX_SPEED,
        "heaviest": HEAVIEST.name,
    }


@handler("orbit.shoot")
def shoot_handler(speed: float, heading_deg: float) -> dict[str, Any]:
    """One flight at ``speed`` (units of the circular speed at the pad) and ``heading_deg``
    (counter-clockwise from +x): its path, miss and impact."""
    s, h = _launch(speed, heading_deg)
    return shot_json(fire(s, h), s, h)


RUNS_KEPT = 4  # optimiser runs remembered between calls (a page has one at a time)


@handler("orbit.optimize")
def optimize_handler(speed: float, heading_deg: float, run: str = "") -> dict[str, Any]:
    """One iterate of the optimiser for ``run``, starting from (speed, heading_deg) when the
    run is new or stands elsewhere. Returns the iterate's shot (as ``orbit.shoot``) with
    ``iteration``, ``gradient``, ``done`` ("", "converged", "stalled") and
    ``python_ms``; the page calls again with the speed and heading it got."""
    started = time.perf_counter()
    s, h = _launch(speed, heading_deg)
    if not isinstance(run, str) or len(run) > 64:
        raise ValueError("run must be a short string naming the optimiser run")
    runs = session_state("orbit").setdefault("runs", {})
    it = runs.get(run)
    if it is None or abs(it.speed - s) > 1e-12 or abs(it.heading - h) > 1e-12:
        it = start(s, h)
    it = improve(it)
    runs.pop(run, None)
    runs[run] = it  # newest last: forget the oldest beyond RUNS_KEPT
    while len(runs) > RUNS_KEPT:
        runs.pop(next(iter(runs)))
    out = shot_json(fire(it.speed, it.heading), it.speed, it.heading)
    out.update(
        run=run,
        iteration=it.iteration,
        gradient=[finite_or_none(g) for g in it.gradient],
        done=it.done,
        python_ms=(time.perf_counter() - started) * 1e3,
    )
    return out


@handler("orbit.bench")
def bench(repeat: int = 5) -> dict[str, Any]:
    """Milliseconds (best of ``repeat``) of the orbit gradient (one dual pass, 1,600 steps)
    and of the same flight on floats, measured here (the page: Pyodide)."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= 50:
        raise ValueError(f"repeat must be an integer from 1 to 50, got {repeat!r}")
    s, h = 1.0, math.radians(90.0)
    times: dict[str, list[float]] = {"gradient": [], "float": []}
    for _ in range(repeat):
        t0 = time.perf_counter()
        miss_and_gradient(s, h)
        t1 = time.perf_counter()
        _ = fire(s, h).miss
        t2 = time.perf_counter()
        times["gradient"].append((t1 - t0) * 1e3)
        times["float"].append((t2 - t1) * 1e3)
    best = {k: min(v) for k, v in times.items()}
    return {"gradient_ms": best["gradient"], "float_ms": best["float"], "steps": STEPS}


# ---------------------------------------------------------------------------------------
# command line


def _number(text: str, name: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{name}: {text.strip()!r} is not a number") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {text.strip()!r}")
    return v


MAX_ITERATIONS = 1000


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m demos.orbit --speed S --heading DEG [--optimize N] [--json]``; returns
    the exit code."""
    parser = OneLineParser(
        prog="python -m demos.orbit",
        description="Fling a probe from the pad toward the target among gravitating bodies "
        f"({STEPS:,} leapfrog steps); with --optimize, gradient descent on (speed, heading) "
        "with gradients from one dual-number pass through the whole flight.",
    )
    parser.add_argument(
        "--speed",
        required=True,
        help="launch speed, in units of the circular speed at the "
        f"pad's distance from the {HEAVIEST.name} (1 would circle it); 0 < S ≤ {MAX_SPEED:g}",
    )
    parser.add_argument(
        "--heading",
        required=True,
        metavar="DEG",
        help="launch direction in degrees, counter-clockwise from +x",
    )
    parser.add_argument(
        "--optimize", default="0", metavar="N", help="gradient-descent iterations (default 0)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    words = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(glue_values(words, ("--speed", "--heading", "--optimize")))
    try:
        speed = _number(args.speed, "--speed")
        heading_deg = _number(args.heading, "--heading")
        if not 0.0 < speed <= MAX_SPEED:
            raise ValueError(f"--speed must be above 0 and at most {MAX_SPEED:g}, got {speed:g}")
        if not args.optimize.strip().isdigit() or int(args.optimize) > MAX_ITERATIONS:
            raise ValueError(
                f"--optimize must be a whole number from 0 to {MAX_ITERATIONS}, "
                f"got {args.optimize.strip()!r}"
            )
    except ValueError as err:
        parser.error(str(err))
    runs = optimize(speed, math.radians(heading_deg), int(args.optimize))
    final, _ = runs[-1]
    if args.json:
        out = {
            "misses": [float(shot.miss) for _, shot in runs],
            "speed": final.speed,
            "heading_deg": math.degrees(final.heading),
        }
        print(json.dumps(out, allow_nan=False))
        return 0
    print(f"{'iter':>4}  {'speed':>10}  {'heading°':>11}  {'miss':>11}  impact")
    for it, shot in runs:
        hit = shot.flight.hit
        where = "-" if hit is None else BODIES[hit].name
        print(
            f"{it.iteration:>4}  {it.speed:>10.6f}  {math.degrees(it.heading):>11.5f}  "
            f"{float(shot.miss):>11.4e}  {where}"
        )
    if final.done:
        print(f"stopped: {final.done}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
