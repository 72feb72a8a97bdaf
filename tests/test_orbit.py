"""The orbit: gravity and leapfrog over every number type (tang.physics.gravity and .orbit),
its gradient against finite differences for shots that miss and shots that hit a body, the
optimiser on a fixed set of poor first shots, the worker handlers, and the command line (run
as a real subprocess)."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import subprocess

import pytest

import tang
from demos import api, orbit
from tang import dual
from tang.dual import Tangents
from tang.physics.gravity import gravity, leapfrog_orbit, point_mass
from tang.physics.orbit import (
    Body,
    closest_approach,
    fly,
    shoot,
    value_and_gradient,
)
from tests.helpers import assert_usage_error, run_module

# (speed, heading°) → whether the first flight hits a body (checked below, so that the
# gradient tests really cover both kinds)
MISSING = [(1.0, 90.0), (1.3, 45.0), (0.8, 120.0), (1.2, -60.0), (1.0, -90.0)]
HITTING = [(0.6, 90.0), (0.5, -90.0), (1.5, 0.0), (0.9, 180.0)]


def miss(speed: float, heading_deg: float) -> float:
    return float(orbit.fire(speed, math.radians(heading_deg)).miss)


# ---- the library: gravity, leapfrog, impacts, closest approach ---------------------------


def test_gravity_and_leapfrog_keep_their_old_meaning() -> None:
    ax, ay = gravity(3.0, 4.0, 2.0)  # -gm r/|r|³ at distance 5
    assert (ax, ay) == pytest.approx((-2.0 * 3 / 125, -2.0 * 4 / 125), rel=1e-15)
    assert point_mass(4.0, 6.0, 2.0, 1.0, 2.0) == pytest.approx((ax, ay, 25.0), rel=1e-15)
    # a circular orbit (r = 1, v = 1) comes back to its start after one period, 2π
    steps = 2000
    x, y, vx, vy = leapfrog_orbit(1.0, 0.0, 0.0, 1.0, steps=steps, dt=2 * math.pi / steps)
    assert (x, y, vx, vy) == pytest.approx((1.0, 0.0, 0.0, 1.0), abs=1e-4)  # phase error O(dt²)
    # the same steps in a field given as a function: the planet moved to (1, 0)
    moved = leapfrog_orbit(
        2.0, 0.0, 0.0, 1.0, steps=100, dt=0.01, accel=lambda px, py: gravity(px - 1.0, py)
    )
    here = leapfrog_orbit(1.0, 0.0, 0.0, 1.0, steps=100, dt=0.01)
    assert moved == pytest.approx((here[0] + 1.0, *here[1:]), rel=1e-12)


def test_a_flight_that_hits_a_body_stops_on_its_surface() -> None:
    for speed, heading in HITTING:
        shot = orbit.fire(speed, math.radians(heading))
        flight = shot.flight
        assert flight.hit is not None, (speed, heading)
        body = orbit.BODIES[flight.hit]
        end = math.hypot(flight.xs[-1] - body.x, flight.ys[-1] - body.y)
        assert end == pytest.approx(body.radius, rel=1e-12)
        assert 0.0 < flight.duration < orbit.STEPS * orbit.DT
        assert len(flight.xs) < orbit.STEPS + 1
        for x, y in zip(flight.xs[:-1], flight.ys[:-1]):  # never inside any body before
            assert all(math.hypot(x - b.x, y - b.y) >= b.radius for b in orbit.BODIES)
    for speed, heading in MISSING:
        flight = orbit.fire(speed, math.radians(heading)).flight
        assert flight.hit is None and len(flight.xs) == orbit.STEPS + 1, (speed, heading)


def test_closest_approach_is_the_distance_to_the_flown_polyline() -> None:
    xs, ys = [0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 1.0, 1.0]
    d, (px, py) = closest_approach(xs, ys, 0.5, -0.25)  # below the first segment
    assert d == pytest.approx(0.25) and (px, py) == pytest.approx((0.5, 0.0))
    d, _ = closest_approach(xs, ys, 2.0, 0.0)  # nearest to the slanted middle segment
    assert d == pytest.approx(math.sqrt(0.5))
    d, (px, py) = closest_approach(xs, ys, 5.0, 1.0)  # beyond the end: the last point
    assert d == pytest.approx(2.0) and (px, py) == (3.0, 1.0)
    # a long path: the search by value finds the same as measuring every segment
    n = 400
    xs = [math.cos(0.02 * i) * (1 + 0.001 * i) for i in range(n)]
    ys = [math.sin(0.02 * i) * (1 + 0.001 * i) for i in range(n)]
    brute = min(closest_approach(xs[i : i + 2], ys[i : i + 2], 0.3, 1.5)[0] for i in range(n - 1))
    assert closest_approach(xs, ys, 0.3, 1.5)[0] == pytest.approx(brute, rel=1e-15)


def test_each_kind_of_shot_is_covered() -> None:
    for speed, heading in MISSING:
        assert orbit.fire(speed, math.radians(heading)).flight.hit is None
    for speed, heading in HITTING:
        assert orbit.fire(speed, math.radians(heading)).flight.hit is not None


# ---- the gradient: one dual pass through all 1,600 steps ---------------------------------


@pytest.mark.parametrize(("speed", "heading"), MISSING + HITTING)
def test_orbit_gradient_matches_central_differences(speed: float, heading: float) -> None:
    h0 = math.radians(heading)
    value, (d_speed, d_heading) = orbit.miss_and_gradient(speed, h0)
    assert value == miss(speed, heading)  # the dual pass computes the same flight
    eps = 1e-6  # central differences: error ~eps²·|f'''| plus rounding ~1e-16/eps
    fd_speed = (miss(speed + eps, heading) - miss(speed - eps, heading)) / (2 * eps)
    fd_heading = (
        float(orbit.fire(speed, h0 + eps).miss) - float(orbit.fire(speed, h0 - eps).miss)
    ) / (2 * eps)
    assert math.isfinite(d_speed) and math.isfinite(d_heading)
    assert d_speed == pytest.approx(fd_speed, rel=1e-5)
    assert d_heading == pytest.approx(fd_heading, rel=1e-5)


def test_tangents_packed_in_a_complex_number_equal_a_tangents_tuple() -> None:
    """The fast pass carries both tangents in one complex number; a ``Tangents`` tuple
    (tang's general several-directions Dual) gives the same numbers."""
    speed, heading = 0.5, math.radians(-90.0)  # a shot that hits the planet
    value, fast = orbit.miss_and_gradient(speed, heading)
    with dual.perturbation(speed, heading) as level:
        out = orbit.fire(
            dual.seed(level, speed, Tangents((1.0, 0.0))),
            dual.seed(level, heading, Tangents((0.0, 1.0))),
        ).miss
    v, (t_speed, t_heading) = dual.split(out, level)
    assert v == value
    assert fast == pytest.approx((t_speed, t_heading), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize(("speed", "heading"), [(1.0, 90.0), (0.5, -90.0)])
def test_the_same_flight_traced_is_a_graph_with_the_same_gradient(
    speed: float, heading: float
) -> None:
    """Traced variables run the same code (impacts become selects); a shorter flight keeps
    the graph small."""

    def short_miss(s, h):
        return shoot(
            s, h, pad=orbit.PAD, target=orbit.TARGET, bodies=orbit.BODIES, steps=150, dt=0.02
        ).miss

    h0 = math.radians(heading)
    graph = tang.trace(short_miss, ["s", "h"])
    assert graph.eval([speed, h0])[0] == pytest.approx(short_miss(speed, h0), rel=1e-13)
    traced = tang.grad(short_miss)(speed, h0)
    value, forward = value_and_gradient(short_miss, speed, h0)
    assert value == short_miss(speed, h0)
    assert traced == pytest.approx(forward, rel=1e-10)


def test_fly_accepts_any_number_of_bodies() -> None:
    lone = [Body(0.0, 0.0, 1.0, 0.1)]
    one = fly(1.0, 0.0, 0.0, 1.0, lone, steps=50, dt=0.01)
    # a massless far body changes nothing
    two = fly(1.0, 0.0, 0.0, 1.0, [*lone, Body(9.0, 9.0, 0.0, 0.1)], steps=50, dt=0.01)
    assert one.xs == pytest.approx(two.xs, rel=1e-15) and one.hit is two.hit is None
    with pytest.raises(ValueError, match="at least one body"):
        fly(1.0, 0.0, 0.0, 1.0, [], steps=5, dt=0.01)


# ---- the optimiser ----------------------------------------------------------------------

# Poor first shots, three of which hit a body: each must end ≥ 10× closer (or < 1e-3)
# within 50 iterations.
POOR_SHOTS = [(1.0, 90.0), (0.8, 120.0), (1.2, -60.0), (0.6, 90.0), (0.5, -90.0), (1.5, 0.0)]


@pytest.mark.parametrize(("speed", "heading"), POOR_SHOTS)
def test_optimiser_cuts_the_miss_of_a_poor_shot_tenfold(speed: float, heading: float) -> None:
    runs = orbit.optimize(speed, math.radians(heading), 50)
    misses = [float(shot.miss) for _, shot in runs]
    assert misses[0] == miss(speed, heading)
    assert len(misses) <= 51
    assert misses[-1] < 1e-3 or misses[-1] <= misses[0] / 10, misses
    assert all(b <= a for a, b in itertools.pairwise(misses))  # each accepted step helps
    final, shot = runs[-1]
    assert float(shot.miss) == final.miss


def test_optimiser_recovers_from_a_shot_that_hits_a_body() -> None:
    first = orbit.fire(0.6, math.radians(90.0))
    assert first.flight.hit is not None
    final, shot = orbit.optimize(0.6, math.radians(90.0), 50)[-1]
    assert shot.flight.hit is None and float(shot.miss) < 1e-3 and final.done == "converged"


def test_descent_direction_follows_a_crease() -> None:
    assert orbit.descent_direction((1.0, 2.0), None) == (1.0, 2.0)
    assert orbit.descent_direction((1.0, 2.0), (3.0, 1.0)) == (1.0, 2.0)  # no zigzag
    d = orbit.descent_direction((-3.0, 2.0), (3.0, 2.0))  # across a crease along +y
    assert d == pytest.approx((0.0, 2.0))


# ---- worker handlers --------------------------------------------------------------------


def call(method: str, **params):
    """One round trip through the worker's JSON entry point (strict JSON: no NaN)."""
    reply = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    if not reply["ok"]:
        raise RuntimeError(f"{reply['error']['type']}: {reply['error']['message']}")
    return reply["result"]


def test_worker_scene_and_shot() -> None:
    scene = call("orbit.scene")
    assert scene["pad"] == list(orbit.PAD) and scene["target"] == list(orbit.TARGET)
    assert scene["steps"] == 1600 and scene["shots"] == 3
    assert [b["name"] for b in scene["bodies"]] == ["planet", "moon"]
    shot = call("orbit.shoot", speed=0.6, heading_deg=90)
    assert shot["hit"] == "planet" and shot["miss"] == pytest.approx(miss(0.6, 90.0))
    assert len(shot["path"]) <= orbit.PATH_POINTS + 2
    assert shot["path"][0] == list(orbit.PAD)
    end = orbit.fire(0.6, math.radians(90.0)).flight
    assert shot["path"][-1] == pytest.approx([end.xs[-1], end.ys[-1]], abs=1e-5)
    timing = call("orbit.bench", repeat=1)  # what benchmarks/demos.py --page reads
    assert timing["steps"] == 1600 and timing["gradient_ms"] > 0 and timing["float_ms"] > 0


def test_worker_optimiser_runs_one_iterate_per_call() -> None:
    speed, heading = 1.2, -60.0
    first = miss(speed, heading)
    seen = []
    for _ in range(20):
        it = call("orbit.optimize", speed=speed, heading_deg=heading, run="t1")
        seen.append(it)
        speed, heading = it["speed"], it["heading_deg"]
        if it["done"]:
            break
    assert [it["iteration"] for it in seen] == list(range(1, len(seen) + 1))
    assert seen[-1]["done"] == "converged" and seen[-1]["miss"] < 1e-6 < first
    assert all(b["miss"] <= a["miss"] for a, b in itertools.pairwise(seen))
    assert len(seen[-1]["path"]) > 100


@pytest.mark.parametrize(
    ("method", "params", "fragment"),
    [
        ("orbit.shoot", {"speed": "fast", "heading_deg": 0}, "speed must be a finite number"),
        ("orbit.shoot", {"speed": 1, "heading_deg": None}, "heading_deg must be a finite"),
        ("orbit.shoot", {"speed": 0, "heading_deg": 0}, "speed must be above 0"),
        ("orbit.shoot", {"speed": 5, "heading_deg": 0}, "at most 3"),
        ("orbit.optimize", {"speed": 1, "heading_deg": 0, "run": 7}, "run must be"),
        ("orbit.bench", {"repeat": 0}, "repeat must be"),
    ],
)
def test_worker_rejects_bad_input(method: str, params: dict, fragment: str) -> None:
    with pytest.raises(RuntimeError, match="ValueError") as err:
        call(method, **params)
    assert fragment in str(err.value)


# ---- command line -----------------------------------------------------------------------


def run_orbit(*args: str) -> subprocess.CompletedProcess[str]:
    return run_module("demos.orbit", *args, timeout=120)


def test_cli_json_lists_the_miss_of_each_iteration() -> None:
    run = run_orbit("--speed", "1", "--heading", "-60", "--optimize", "30", "--json")
    assert run.returncode == 0, run.stderr
    (line,) = run.stdout.splitlines()
    obj = json.loads(line)
    assert list(obj) == ["misses", "speed", "heading_deg"]
    misses = obj["misses"]
    assert misses[0] == pytest.approx(miss(1.0, -60.0), rel=1e-15)
    assert 2 <= len(misses) <= 31 and misses[-1] < 1e-3
    assert miss(obj["speed"], obj["heading_deg"]) == pytest.approx(misses[-1], abs=1e-12)
    plain = run_orbit("--speed", "0.6", "--heading", "90")  # no --optimize: one shot
    assert plain.returncode == 0, plain.stderr
    assert "planet" in plain.stdout and len(plain.stdout.splitlines()) == 2


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--speed", "abc", "--heading", "0"], "--speed: 'abc' is not a number"),
        (["--speed", "nan", "--heading", "0"], "--speed must be finite"),
        (["--speed", "1", "--heading", "inf"], "--heading must be finite"),
        (["--speed", "-1", "--heading", "0"], "--speed must be above 0"),
        (["--speed", "1", "--heading", "0", "--optimize", "-3"], "--optimize must be a whole"),
        (["--speed", "1", "--heading", "0", "--optimize", "2.5"], "--optimize must be a whole"),
        (["--speed", "1"], "the following arguments are required: --heading"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(args: list[str], fragment: str) -> None:
    assert_usage_error(run_orbit(*args), fragment)
