"""The orbit: fling a probe from a launch pad so that it passes through a target, among
gravitating bodies; then let gradient descent aim it.

The physics lives in ``tang.physics.orbit`` (written once over any number); this module
holds the scene, the optimiser and the worker handlers:

    orbit.scene      {}                              the scene below, for the page to draw
    orbit.shoot      {speed, heading_deg}            one flight: its path, miss and impact
    orbit.optimize   {speed, heading_deg, run}       one iterate of the optimiser per call
    orbit.bench      {repeat}                        the gradient's time here (benchmarks/)
    orbit.swarm      {n, device}                     n shots with their gradients in one kernel,
                                                     the best refined by batched steps

The gradient of the miss with respect to (speed, heading) comes from one forward pass on
dual numbers through all 1,600 leapfrog steps. The optimiser steps against it (against the
shortest vector between it and the previous gradient when the two point apart: the iterates
straddle a crease of the miss) by Polyak's length (miss / slope: where a straight line
through the slope would reach zero), capped by a trust radius and backtracked until the
miss drops. On the desktop the same code runs as::

    python -m demos.orbit --speed 1 --heading 90 --optimize 30 [--json]

The swarm instead starts from no shot at all: ``n`` launches on a grid of speed × heading,
each flight with its dual gradient through all 1,600 steps, run as ONE kernel (the flight is
one loop node in the graph, so the kernel is one step's code inside a real loop) on wgpu-py
(lavapipe), the compiled C device or a GPU in the page; the best few are refined by batched
gradient steps (one kernel call per step for all of them), and the winner is polished by
the optimiser above::

    python -m demos.orbit --swarm 4096 [--device native|c|cpu|auto] [--json]
"""

from __future__ import annotations

import json
import math
import platform
import sys
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from demos.api import handler
from demos.common import (
    OneLineParser,
    device_choice,
    finite_or_none,
    finite_param,
    glue_values,
    session_state,
)
from tang.physics.orbit import Body, Shot, shoot, swarm_outputs, value_and_gradient

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
# the swarm: a grid of shots, each with its gradient, as one kernel; the best refined in
# batches; on the desktop CLI the winner polished by the optimiser above

SWARM_N = 4096  # the default grid: 64 speeds × 64 headings
SWARM_MIN, SWARM_MAX = 4, 1 << 16  # 2 × 2 … 256 × 256
SWARM_CPU_N = 64  # without a GPU: 8 × 8 dual passes, 8 refined (2 s here, 3–5× that in Pyodide)
SWARM_DEVICES = ("auto", "gpu", "native", "c", "cpu")
REFINE_K = 32  # the best candidates refined together (at most n/8 of them)
REFINE_ROUNDS = 10  # batched steps: each one kernel call over the candidates still going
REFINE_FLOOR = 1e-7  # a trust radius below this (about f32's resolution of a speed) stalls
SWARM_POLISH = 30  # the CLI's optimiser iterations from the swarm's best (unless --optimize)
DUAL_NOTE = (
    "pure-Python dual passes, one shot at a time (tang's Python-printed kernel of the "
    "1,600-step loop would be far slower)"
)

Columns = tuple[list[float], list[float], list[float]]  # miss, ∂miss/∂speed, ∂miss/∂heading
Points = tuple[list[float], list[float]]  # speeds, headings (radians)


@lru_cache(maxsize=1)
def swarm_plan() -> Any:
    """The swarm kernel's plan: ``[miss, d_speed, d_heading]`` over ``(speed, heading)``
    (speed in SPEED_UNIT, heading in radians), one loop node of O(one step) nodes."""
    from tang.lower.plan import plan

    outputs = swarm_outputs(
        pad=PAD, target=TARGET, bodies=BODIES, steps=STEPS, dt=DT, speed_unit=SPEED_UNIT
    )
    return plan(outputs, ("speed", "heading"), ("miss", "d_speed", "d_heading"))


def swarm_axes(n: int) -> tuple[list[float], list[float]]:
    """The grid of a swarm of ``n`` (a square number): speeds at the centres of ``side``
    equal cells of (0, MAX_SPEED], headings every 360°/side from -180° (radians)."""
    side = math.isqrt(n)
    speeds = [MAX_SPEED * (k + 0.5) / side for k in range(side)]
    headings = [-math.pi + 2.0 * math.pi * k / side for k in range(side)]
    return speeds, headings


def _check_swarm_n(n: Any, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not SWARM_MIN <= n <= SWARM_MAX:
        raise ValueError(f"{name} must be an integer from {SWARM_MIN} to {SWARM_MAX:,}, got {n!r}")
    if math.isqrt(n) ** 2 != n:
        side = math.isqrt(n)
        raise ValueError(
            f"{name} must be a square number (a side × side grid of speed × heading), "
            f"got {n:,}: try {side * side:,} or {(side + 1) ** 2:,}"
        )
    return n


def _check_device(device: Any, name: str = "device") -> str:
    if device not in SWARM_DEVICES:
        raise ValueError(f"{name} must be one of {', '.join(SWARM_DEVICES)}, got {device!r}")
    return device


def _wrap(heading: float) -> float:
    """A heading in [-π, π] (the flight depends on it through cos and sin only)."""
    return math.remainder(heading, 2.0 * math.pi)


def _trial(it: Iterate) -> tuple[float, float, float, float] | None:
    """The next trial from ``it`` as ``improve`` takes it (Polyak's length along the descent
    direction, capped by the trust radius): (speed, heading, length, slope); None when the
    slope gives no descent."""
    gs, gh = it.gradient
    ds, dh = descent_direction(it.gradient, it.previous)
    norm = math.hypot(ds, dh)
    slope = (gs * ds + gh * dh) / norm if norm > 0.0 else 0.0
    if not (math.isfinite(slope) and slope > 0.0):
        return None
    length = min(it.miss / slope, it.radius)
    speed = min(max(it.speed - length * ds / norm, MIN_SPEED), MAX_SPEED)
    return speed, it.heading - length * dh / norm, length, slope


def _judge(it: Iterate, trial: tuple[float, float, float, float], shot: tuple) -> Iterate:
    """``it`` after its trial came back as ``shot`` = (miss, ∂speed, ∂heading): taken when
    the miss dropped enough (the radius doubled after a full step at it), else the radius
    cut by BACKTRACK for the next round (stalled below REFINE_FLOOR)."""
    speed, heading, length, slope = trial
    value, g_speed, g_heading = shot
    if value <= it.miss - ARMIJO * length * slope:  # nan fails too
        radius = min(2.0 * it.radius, TRUST_MAX) if length == it.radius else it.radius
        done = "converged" if value <= DONE_MISS else ""
        grad = (g_speed, g_heading)
        return Iterate(speed, heading, value, grad, radius, it.iteration + 1, done, it.gradient)
    radius = length * BACKTRACK
    done = "stalled" if radius < REFINE_FLOOR else ""
    return replace(it, radius=radius, iteration=it.iteration + 1, done=done)


@dataclass
class SwarmRun:
    """What a swarm found: the grid's axes and misses (row-major, speed by speed), the
    refined candidates (best first) and the seconds of each phase."""

    speeds: list[float]
    headings: list[float]
    miss: list[float]
    refined: list[Iterate]
    seconds: dict[str, float]


def swarm_steps(
    n: int, k: int | None = None, rounds: int = REFINE_ROUNDS
) -> Generator[Points, Columns, SwarmRun]:
    """The swarm as a generator of batches: it yields the points to shoot (the whole grid,
    then one batch per refinement round: the trials of the candidates still going) and is
    sent back their columns; it returns the ``SwarmRun``. One plan for the sync and async
    drivers (the CLI's device, the page's awaited one, the CPU dual path). ``k``
    candidates are refined (default: REFINE_K, at most an eighth of the grid)."""
    k = min(REFINE_K, max(1, n // 8)) if k is None else k
    speeds, headings = swarm_axes(n)
    grid_s = [s for s in speeds for _ in headings]
    grid_h = headings * len(speeds)
    started = time.perf_counter()
    miss, d_speed, d_heading = yield grid_s, grid_h
    swept = time.perf_counter()
    finite = [i for i in range(n) if math.isfinite(miss[i])]
    best = sorted(finite, key=miss.__getitem__)[:k]
    cands = [
        Iterate(grid_s[i], grid_h[i], miss[i], (d_speed[i], d_heading[i]), TRUST_START)
        for i in best
    ]
    for _ in range(rounds):
        trials = []
        for j, it in enumerate(cands):
            if it.done:
                continue
            trial = _trial(it)
            if trial is None:
                cands[j] = replace(it, done="stalled")
            else:
                trials.append((j, trial))
        if not trials:
            break
        shots = yield [t[0] for _, t in trials], [t[1] for _, t in trials]
        for (j, trial), *shot in zip(trials, *shots, strict=True):
            cands[j] = _judge(cands[j], trial, tuple(shot))
    refined_at = time.perf_counter()
    cands.sort(key=lambda it: it.miss)
    seconds = {"swarm": swept - started, "refine": refined_at - swept}
    return SwarmRun(speeds, headings, miss, cands, seconds)


def drive(run: Generator[Points, Columns, SwarmRun], shots: Callable[..., Columns]) -> SwarmRun:
    """Run ``swarm_steps`` to its end, ``shots(speeds, headings)`` shooting each batch."""
    try:
        points = next(run)
        while True:
            points = run.send(shots(*points))
    except StopIteration as stop:
        return stop.value


async def drive_async(run: Generator[Points, Columns, SwarmRun], shots: Callable) -> SwarmRun:
    """``drive`` with awaited batches (the page's GPU)."""
    try:
        points = next(run)
        while True:
            points = run.send(await shots(*points))
    except StopIteration as stop:
        return stop.value


def dual_shots(speeds: Sequence[float], headings: Sequence[float]) -> Columns:
    """The batch on the CPU: one dual pass (``miss_and_gradient``) per shot, in f64."""
    out = [miss_and_gradient(s, h) for s, h in zip(speeds, headings, strict=True)]
    return [v for v, _ in out], [g[0] for _, g in out], [g[1] for _, g in out]


def device_shots(dev: Any) -> Callable[[Sequence[float], Sequence[float]], Columns]:
    """The batch as one call of the swarm kernel on ``dev`` (f32 in, f32 out)."""
    from tang.gpu.batch import evaluate

    def shots(speeds: Sequence[float], headings: Sequence[float]) -> Columns:
        batch = evaluate(swarm_plan(), {"speed": speeds, "heading": headings}, device=dev)
        return tuple(list(col) for col in batch.columns)  # type: ignore[return-value]

    return shots


def device_shots_async(dev: Any) -> Callable:
    """``device_shots``, awaitable (the page: WebGPU's read-back is a promise)."""
    from tang.gpu.batch import evaluate_async

    async def shots(speeds: Sequence[float], headings: Sequence[float]) -> Columns:
        points = {"speed": speeds, "heading": headings}
        batch = await evaluate_async(swarm_plan(), points, device=dev)
        return tuple(list(col) for col in batch.columns)  # type: ignore[return-value]

    return shots


def _significant(v: float) -> float | None:
    """``v`` to 5 significant digits for JSON; None when not finite."""
    return float(f"{v:.5g}") if math.isfinite(v) else None


def _candidate(it: Iterate) -> dict[str, Any]:
    return {
        "speed": it.speed,
        "heading_deg": math.degrees(_wrap(it.heading)),
        "miss": finite_or_none(it.miss),
    }


def swarm_json(
    run: SwarmRun, kind: str, name: str, fallback: str | None, started: float
) -> dict[str, Any]:
    """The swarm for the page and the CLI (see ``swarm_handler``)."""
    n = len(run.miss)
    seconds = {**run.seconds, "total": time.perf_counter() - started}
    best = run.refined[0] if run.refined else None
    return {
        "n": n,
        "speeds": len(run.speeds),
        "headings": len(run.headings),
        "speed_range": [run.speeds[0], run.speeds[-1]],
        "heading_range_deg": [math.degrees(run.headings[0]), math.degrees(run.headings[-1])],
        "miss": [_significant(v) for v in run.miss],
        "device": kind,
        "device_name": name,
        "fallback": fallback,
        "best": None if best is None else _candidate(best),
        "refined": [_candidate(it) for it in run.refined],
        "seconds": seconds,
        "shot_gradients_per_second": n / run.seconds["swarm"] if run.seconds["swarm"] else None,
    }


def _dual_name() -> str:
    return f"Python {platform.python_version()} dual numbers: {DUAL_NOTE}"


def _dual_n(n: int, cpu_n: int | None, why: str | None) -> tuple[int, str | None]:
    """The grid the dual path runs (``cpu_n`` at most, when given) and why, if cut."""
    if cpu_n is None or n <= cpu_n:
        return n, why
    cut = f"n cut from {n:,} to {cpu_n} for the CPU"
    return cpu_n, cut if why is None else f"{why}; {cut}"


def _no_device_reason(dev: Any) -> str:
    return "; ".join(f"{b}: {why}" for b, why in dev.skipped) or "no GPU device"


def swarm(n: int = SWARM_N, device: str = "auto", *, cpu_n: int | None = None) -> dict[str, Any]:
    """``n`` shots on a speed × heading grid with their gradients, as one kernel call on
    ``device`` ("native": wgpu-py, "c": compiled C in f32, "gpu", "auto", or "cpu": the
    pure-Python dual path, one shot at a time), then the best REFINE_K refined by batched
    steps. Where no device runs it, the dual path does (``cpu_n`` shots at most, if
    given) and ``fallback`` says why. Returns ``swarm_json``."""
    import tang.gpu as gpu

    started = time.perf_counter()
    n, device = _check_swarm_n(n), _check_device(device)
    why: str | None = None
    if device != "cpu":
        choice = device_choice(device) if device in ("auto", "gpu") else device
        try:
            dev = gpu.device(choice, fallback=device == "auto")
        except gpu.GPUError as exc:
            why = f"{device}: {exc.reason}"
        else:
            if dev.kind == "cpu":
                why = _no_device_reason(dev)
            else:
                try:
                    run = drive(swarm_steps(n), device_shots(dev))
                    return swarm_json(run, dev.kind, dev.name, None, started)
                except gpu.GPUError as exc:
                    why = f"{dev.kind}: {exc.reason}"
    n, why = _dual_n(n, cpu_n, why)
    return swarm_json(drive(swarm_steps(n), dual_shots), "cpu", _dual_name(), why, started)


@handler("orbit.swarm")
async def swarm_handler(n: int = SWARM_N, device: str = "auto") -> dict[str, Any]:
    """``n`` shots (a square number: a grid of speed × heading) with their gradients, as ONE
    kernel call on the page's GPU (``device``: auto, gpu, native, c or cpu), the best
    refined by batched gradient steps. Without a GPU: the CPU dual path over at most
    SWARM_CPU_N shots, and ``fallback`` says why. Returns ``n``, ``speeds``, ``headings``,
    ``speed_range``, ``heading_range_deg``, ``miss`` (row-major: index = s·headings + h;
    5 significant digits, null where not finite), ``device``, ``device_name``,
    ``fallback``, ``best`` and ``refined`` ({speed, heading_deg, miss}), ``seconds``
    ({swarm, refine, total}) and ``shot_gradients_per_second`` (the grid's shots over the
    wall-clock seconds of its one call, a first call's compile included); the page polishes
    ``best`` with ``orbit.optimize``. Device misses are f32: ``best.miss`` may read 0."""
    import tang.gpu as gpu

    started = time.perf_counter()
    n, device = _check_swarm_n(n), _check_device(device)
    why: str | None = "cpu asked for" if device == "cpu" else None
    if device != "cpu":
        choice = device_choice(device) if device in ("auto", "gpu") else device
        try:
            dev = await gpu.device_async(choice, fallback=device == "auto")
        except gpu.GPUError as exc:
            why = f"{device}: {exc.reason}"
        else:
            if dev.kind == "cpu":
                why = _no_device_reason(dev)
            else:
                try:
                    run = await drive_async(swarm_steps(n), device_shots_async(dev))
                    return swarm_json(run, dev.kind, dev.name, None, started)
                except gpu.GPUError as exc:
                    why = f"{dev.kind}: {exc.reason}"
    n, why = _dual_n(n, SWARM_CPU_N, why)
    return swarm_json(drive(swarm_steps(n), dual_shots), "cpu", _dual_name(), why, started)


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


def _swarm_arg(text: str) -> int:
    word = text.strip()
    if not word.isdigit():
        raise ValueError(
            f"--swarm must be a square whole number from {SWARM_MIN} to {SWARM_MAX:,}, got {word!r}"
        )
    return _check_swarm_n(int(word), "--swarm")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m demos.orbit --speed S --heading DEG [--optimize N] [--json]``, or
    ``python -m demos.orbit --swarm N [--device D] [--optimize N] [--json]``; returns the
    exit code."""
    parser = OneLineParser(
        prog="python -m demos.orbit",
        description="Fling a probe from the pad toward the target among gravitating bodies "
        f"({STEPS:,} leapfrog steps); with --optimize, gradient descent on (speed, heading) "
        "with gradients from one dual-number pass through the whole flight; with --swarm, "
        "first N shots with their gradients as one kernel on a device, the best refined in "
        "batches, the winner then polished by the same descent.",
    )
    parser.add_argument(
        "--speed",
        help="launch speed, in units of the circular speed at the "
        f"pad's distance from the {HEAVIEST.name} (1 would circle it); 0 < S ≤ {MAX_SPEED:g}",
    )
    parser.add_argument(
        "--heading",
        metavar="DEG",
        help="launch direction in degrees, counter-clockwise from +x",
    )
    parser.add_argument(
        "--optimize",
        metavar="N",
        help=f"gradient-descent iterations (default 0; {SWARM_POLISH} after --swarm)",
    )
    parser.add_argument(
        "--swarm",
        metavar="N",
        help=f"start from the best of N shots on a speed × heading grid (a square number "
        f"from {SWARM_MIN} to {SWARM_MAX:,}, e.g. {SWARM_N}), each with its gradient, run as "
        "one kernel; instead of --speed and --heading",
    )
    parser.add_argument(
        "--device",
        metavar="D",
        help="where --swarm runs: native (wgpu-py), c (compiled C, f32), cpu (pure-Python "
        "dual passes, one shot at a time: slow), gpu or auto (default)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    words = sys.argv[1:] if argv is None else list(argv)
    valued = ("--speed", "--heading", "--optimize", "--swarm", "--device")
    args = parser.parse_args(glue_values(words, valued))
    if args.swarm is None:
        missing = [f"--{k}" for k in ("speed", "heading") if getattr(args, k) is None]
        if missing:
            parser.error(f"the following arguments are required: {', '.join(missing)}")
    try:
        if args.swarm is not None:
            n = _swarm_arg(args.swarm)
            if args.speed is not None or args.heading is not None:
                raise ValueError("--swarm picks the first shot: leave out --speed and --heading")
            device = _check_device((args.device or "auto").strip(), "--device")
        else:
            speed = _number(args.speed, "--speed")
            heading_deg = _number(args.heading, "--heading")
            if not 0.0 < speed <= MAX_SPEED:
                raise ValueError(
                    f"--speed must be above 0 and at most {MAX_SPEED:g}, got {speed:g}"
                )
            if args.device is not None:
                raise ValueError("--device chooses where --swarm runs: give it with --swarm")
        default = str(SWARM_POLISH) if args.swarm is not None else "0"
        iterations = (args.optimize if args.optimize is not None else default).strip()
        if not iterations.isdigit() or int(iterations) > MAX_ITERATIONS:
            raise ValueError(
                f"--optimize must be a whole number from 0 to {MAX_ITERATIONS}, got {iterations!r}"
            )
    except ValueError as err:
        parser.error(str(err))
    found: dict[str, Any] | None = None
    if args.swarm is not None:
        found = swarm(n, device)
        if found["best"] is None:
            print(f"{parser.prog}: every one of the {n:,} shots was non-finite", file=sys.stderr)
            return 1
        speed, heading_deg = found["best"]["speed"], found["best"]["heading_deg"]
    runs = optimize(speed, math.radians(heading_deg), int(iterations))
    final, _ = runs[-1]
    if args.json:
        out: dict[str, Any] = {
            "misses": [float(shot.miss) for _, shot in runs],
            "speed": final.speed,
            "heading_deg": math.degrees(final.heading),
        }
        if found is not None:
            out["swarm"] = {
                "n": found["n"],
                "best_miss": found["best"]["miss"],
                "device": found["device"],
                "device_name": found["device_name"],
                "fallback": found["fallback"],
                "best": found["best"],
                "seconds": found["seconds"],
                "shot_gradients_per_second": found["shot_gradients_per_second"],
            }
        print(json.dumps(out, allow_nan=False))
        return 0
    if found is not None:
        _print_swarm(found)
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


def _print_swarm(found: dict[str, Any]) -> None:
    """The swarm's lines before the optimiser's table."""
    sec = found["seconds"]
    rate = found["shot_gradients_per_second"]
    print(
        f"swarm: {found['n']:,} shots ({found['speeds']} speeds × {found['headings']} "
        f"headings), each with its gradient through {STEPS:,} steps, on {found['device']} "
        f"({found['device_name']})"
    )
    if found["fallback"]:
        print(f"  fallback: {found['fallback']}")
    print(
        f"  {sec['swarm']:.3f} s for the grid ({rate:,.0f} shot-gradients/s), "
        f"{sec['refine']:.3f} s to refine the best {len(found['refined'])} in batches"
    )
    best = found["best"]
    print(
        f"  best: speed {best['speed']:.6f}, heading {best['heading_deg']:.5f}°, miss "
        f"{best['miss']:.4e} on the device; polished here in f64:"
    )


if __name__ == "__main__":
    sys.exit(main())
