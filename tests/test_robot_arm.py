"""The robot arm: forward kinematics over every number type, the IK solver, its worker
handlers and its command line (run as a real subprocess)."""

from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess

import pytest

import tang
from demos import api
from demos import robot_arm as arm
from tang.physics import forward_kinematics
from tang.physics.arm import elbow_position, hand_and_jacobian
from tests.helpers import assert_usage_error, run_module

L1, L2 = arm.UPPER_MM, arm.FOREARM_MM
S_LIM, E_LIM = arm.SHOULDER_LIMITS_DEG, arm.ELBOW_LIMITS_DEG


def random_pose(rng: random.Random) -> tuple[float, float]:
    return rng.uniform(*S_LIM), rng.uniform(*E_LIM)


def hand_of(pose_deg: tuple[float, float]) -> tuple[float, float]:
    s, e = (math.radians(a) for a in pose_deg)
    return forward_kinematics(s, e, L1, L2)


def within_limits(sol: arm.Solution) -> bool:
    return S_LIM[0] <= sol.shoulder_deg <= S_LIM[1] and E_LIM[0] <= sol.elbow_deg <= E_LIM[1]


# ---- forward kinematics and its Jacobian -------------------------------------------------


def test_forward_kinematics_on_floats_is_the_geometry() -> None:
    assert forward_kinematics(0.0, 0.0, L1, L2) == pytest.approx((L1 + L2, 0.0))
    assert forward_kinematics(math.pi / 2, 0.0, L1, L2) == pytest.approx((0.0, L1 + L2), abs=1e-12)
    hx, hy = forward_kinematics(0.0, math.pi / 2, L1, L2)  # elbow bent 90° counter-clockwise
    assert (hx, hy) == pytest.approx((L1, L2), abs=1e-12)
    assert elbow_position(math.pi, L1) == pytest.approx((-L1, 0.0), abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_dual_jacobian_matches_finite_differences_and_reverse_mode(seed: int) -> None:
    rng = random.Random(seed)
    s, e = (math.radians(a) for a in random_pose(rng))
    hand, jac = hand_and_jacobian(s, e, L1, L2)
    assert hand == pytest.approx(forward_kinematics(s, e, L1, L2), rel=1e-15, abs=1e-12)

    h = 1e-6  # central differences: error ~h²·|f'''| ≈ 1e-10 mm here
    for j in range(2):
        plus = forward_kinematics(s + h * (j == 0), e + h * (j == 1), L1, L2)
        minus = forward_kinematics(s - h * (j == 0), e - h * (j == 1), L1, L2)
        for i in range(2):
            assert jac[i][j] == pytest.approx((plus[i] - minus[i]) / (2 * h), rel=1e-7, abs=1e-6)

    for i in range(2):  # reverse mode on the traced forward kinematics: the same numbers
        row = tang.grad(lambda a, b, i=i: forward_kinematics(a, b, L1, L2)[i])(s, e)
        assert row == pytest.approx(jac[i], rel=1e-12, abs=1e-9)
    rows = tang.jacobian(lambda a, b: forward_kinematics(a, b, L1, L2))(s, e)
    for row, ours in zip(rows, jac):  # tang's own jacobian transform: the same single pass
        assert row == pytest.approx(list(ours), rel=1e-15, abs=1e-12)


def test_traced_forward_kinematics_is_a_graph_with_a_gradient_graph() -> None:
    g = tang.trace(lambda s, e: forward_kinematics(s, e, L1, L2), ["s", "e"])
    assert g.eval([0.3, 0.5]) == pytest.approx(list(forward_kinematics(0.3, 0.5, L1, L2)))
    gx = tang.grad(tang.Graph(g.inputs, [g.outputs[0]]))  # [x, ∂x/∂s, ∂x/∂e] as a graph
    _, jac = hand_and_jacobian(0.3, 0.5, L1, L2)
    assert gx.eval([0.3, 0.5])[1:] == pytest.approx(list(jac[0]), rel=1e-12)


# ---- inverse kinematics -----------------------------------------------------------------


def test_ik_reaches_a_thousand_random_reachable_targets() -> None:
    rng = random.Random(2026)
    worst = 0.0
    for k in range(1200):
        goal = random_pose(rng)
        target = hand_of(goal)
        start = arm.REST_POSE_DEG if k % 2 == 0 else random_pose(rng)
        sol = arm.solve(target, start)
        assert within_limits(sol), (target, start, sol)
        assert sol.reachable, (target, sol)
        assert math.isfinite(sol.hand_error_mm)
        assert math.dist(sol.hand, target) == pytest.approx(sol.hand_error_mm, abs=1e-9)
        worst = max(worst, sol.hand_error_mm)
    assert worst < 0.5, worst


def test_the_first_solve_is_damped_least_squares_from_the_start_pose() -> None:
    # a target near the start: the local solve alone gets there, in a few iterations
    sol = arm.solve(hand_of((50.0, 85.0)), arm.REST_POSE_DEG, restart=False)
    assert sol.hand_error_mm < arm.TOLERANCE_MM
    assert sol.iterations <= 10
    assert (sol.shoulder_deg, sol.elbow_deg) == pytest.approx((50.0, 85.0), abs=1e-5)


def brute_force_nearest(x: float, y: float, n: int = 2000) -> float:
    """The distance from (x, y) to the workspace, by sampling the edges of the joint box
    (an unreachable target's nearest point lies on one of them)."""
    best = math.inf
    for i in range(n + 1):
        u = i / n
        se = S_LIM[0] + u * (S_LIM[1] - S_LIM[0])
        ee = E_LIM[0] + u * (E_LIM[1] - E_LIM[0])
        for pose in ((S_LIM[0], ee), (S_LIM[1], ee), (se, E_LIM[0]), (se, E_LIM[1])):
            best = min(best, math.dist(hand_of(pose), (x, y)))
    return best


def test_unreachable_targets_give_the_nearest_reachable_pose() -> None:
    rng = random.Random(7)
    checked = 0
    while checked < 60:
        target = (rng.uniform(-900, 900), rng.uniform(-900, 900))
        if arm.is_reachable(*target):
            continue
        checked += 1
        sol = arm.solve(target, random_pose(rng))
        assert not sol.reachable
        assert within_limits(sol)
        assert all(math.isfinite(v) for v in (*sol.hand, sol.shoulder_deg, sol.elbow_deg))
        # the grid is within ~0.5 mm of the true nearest point; the solver must not be worse
        grid = brute_force_nearest(*target)
        assert grid - 0.5 <= sol.hand_error_mm <= grid + 1e-9


@pytest.mark.parametrize("target", [(1e300, 1e300), (-1e200, -3.0), (5e5, 0.0), (0.0, -1e308)])
def test_very_far_targets_point_the_stretched_arm_at_them(target: tuple[float, float]) -> None:
    sol = arm.solve(target, arm.REST_POSE_DEG)
    assert within_limits(sol)
    assert math.isfinite(sol.hand_error_mm) and not sol.reachable
    direction = math.atan2(target[1], target[0])
    nearest = brute_force_nearest(math.cos(direction) * 1e6, math.sin(direction) * 1e6)
    assert sol.hand_error_mm - math.hypot(*target) == pytest.approx(
        nearest - 1e6, abs=1e-3 + 1e-15 * math.hypot(*target)
    )
    json.dumps(sol.as_json(), allow_nan=False)


@pytest.mark.parametrize("start", [arm.REST_POSE_DEG, (0.0, 0.0), (-90.0, 150.0), (150.0, 0.0)])
def test_the_shoulder_point_folds_the_arm_without_nan(start: tuple[float, float]) -> None:
    sol = arm.solve((0.0, 0.0), start)
    assert not sol.reachable  # the elbow stops at 150°: the hand stays 120 mm out
    assert within_limits(sol)
    assert sol.elbow_deg == pytest.approx(E_LIM[1])
    assert sol.hand_error_mm == pytest.approx(arm.MIN_REACH_MM, rel=1e-9)


def test_following_a_target_that_leaves_the_workspace_never_jumps() -> None:
    # the target sweeps straight out past full reach and through the shoulder point
    pose = arm.REST_POSE_DEG
    previous = None
    for k in range(401):
        u = k / 400
        target = (-700.0 + 1400.0 * u, 0.3 * (-700.0 + 1400.0 * u) + 5.0)
        out = arm.solve_frame(list(target), list(pose))
        pose = (out["shoulder_deg"], out["elbow_deg"])
        assert S_LIM[0] <= pose[0] <= S_LIM[1] and E_LIM[0] <= pose[1] <= E_LIM[1]
        assert math.isfinite(out["hand_error_mm"])
        if previous is not None:  # the target moves 3.7 mm a frame: no joint turns far
            assert max(abs(a - b) for a, b in zip(pose, previous)) <= arm.MAX_STEP_DEG + 1e-9
        previous = pose


def follow_frames(target: tuple[float, float], pose: tuple[float, float], limit: int = 200):
    """The page's loop: one robot_arm.solve per frame from the last pose, until the pose
    stops changing; returns (the last frame, frames used)."""
    frames = 0
    while frames < limit:
        frames += 1
        out = arm.solve_frame(list(target), list(pose))
        new = (out["shoulder_deg"], out["elbow_deg"])
        if max(abs(a - b) for a, b in zip(new, pose)) < 1e-12:
            break
        pose = new
    return out, frames


STARTS = [arm.REST_POSE_DEG, (-90.0, 0.0), (150.0, 150.0), (150.0, 0.0), (-90.0, 150.0)]


def test_frames_reach_every_reachable_target_within_forty_frames() -> None:
    # a 60 mm grid over the whole workspace, the upper left included, from the four corners
    # of the joint box and the rest pose: each frame turns a joint by at most 8°, so 240° of
    # shoulder takes 30 frames; the hand then sits on the target
    grid = [(x, y) for x in range(-460, 461, 60) for y in range(-460, 461, 60)]
    upper_left = [(-250.0, 300.0), (-350.0, 250.0), (-380.0, 200.0), (-420.0, 120.0)]
    targets = [t for t in grid + upper_left if arm.is_reachable(*t)]
    assert len(targets) > 100
    for target in targets:
        for start in STARTS:
            out, frames = follow_frames(target, start)
            assert out["reachable"] is True
            assert out["hand_error_mm"] < 1e-3, (target, start, out)
            assert frames <= 40, (target, start, frames)


def test_frames_toward_a_target_out_of_reach_end_at_the_nearest_pose() -> None:
    # left of the shoulder and near it the distance has local minima at the joint limits
    # (the arm stalled pointing down, 600 mm off, when a pose 60 mm off existed)
    targets = [(-490.0, 35.0), (-445.0, 50.0), (-430.0, 65.0), (-300.0, 380.0), (-70.0, 95.0)]
    targets += [(-115.0, 5.0), (-40.0, -40.0), (-10.0, 110.0), (-475.0, -25.0)]
    for target in targets:
        assert not arm.is_reachable(*target)
        nearest = brute_force_nearest(*target)
        for start in [*STARTS, (0.0, 0.0), (100.0, 60.0)]:
            out, frames = follow_frames(target, start)
            assert out["reachable"] is False
            assert out["hand_error_mm"] <= nearest + 1.0, (target, start, out)  # SWITCH_MM
            assert frames <= 60, (target, start, frames)


# ---- worker handlers ----------------------------------------------------------------------


def call(method: str, params: dict) -> dict:
    envelope = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    return envelope


def test_worker_solve_converges_over_frames_and_reports_json() -> None:
    target = [250.0, 180.0]
    pose = None
    for _ in range(30):
        env = call("robot_arm.solve", {"target": target, **({"pose": pose} if pose else {})})
        assert env["ok"], env
        r = env["result"]
        pose = [r["shoulder_deg"], r["elbow_deg"]]
    assert r["hand_error_mm"] < 1e-3
    assert r["reachable"] is True
    assert math.dist(r["elbow"], (0.0, 0.0)) == pytest.approx(L1)
    assert math.dist(r["elbow"], r["hand"]) == pytest.approx(L2)


@pytest.mark.parametrize(
    "params",
    [
        {"target": [1, 2, 3]},
        {"target": "abc"},
        {"target": [1, True]},
        {"target": [1, 2], "pose": [0]},
    ],
)
def test_worker_solve_rejects_bad_input(params: dict) -> None:
    env = call("robot_arm.solve", params)
    assert not env["ok"]
    assert env["error"]["type"] == "ValueError"
    assert "two finite numbers" in env["error"]["message"]


def test_pick_and_place_path_is_smooth_reachable_and_carries_the_block() -> None:
    scene = call("robot_arm.scene", {})["result"]
    cycle = scene["cycle_s"]
    dt = 1 / 240
    previous = None
    carried = set()
    for k in range(int(cycle / dt) + 1):
        p = arm.pick_place_target(k * dt)
        assert arm.is_reachable(*p["target"]), p
        if previous is not None:  # continuous: at most a few mm per 1/240 s
            assert math.dist(previous, p["target"]) < 3.0
        previous = p["target"]
        carried.add((p["phase"], p["from_spot"]))
    assert {("carry", 0), ("carry", 1), ("grab", 0), ("release", 1)} <= carried
    env = call("robot_arm.pick_place", {"t": 1.0, "pose": scene["rest_pose_deg"]})
    assert env["ok"] and env["result"]["phase"] == "carry" and env["result"]["carrying"]
    assert not call("robot_arm.pick_place", {"t": -1})["ok"]


# ---- command line -----------------------------------------------------------------------


def robot_arm(*args: str) -> subprocess.CompletedProcess[str]:
    return run_module("demos.robot_arm", *args, timeout=60)


def test_cli_json_has_exactly_the_documented_shape() -> None:
    run = robot_arm("--target", "300,120", "--json")
    assert run.returncode == 0, run.stderr
    (line,) = run.stdout.splitlines()
    obj = json.loads(line)
    assert list(obj) == [
        "shoulder_deg",
        "elbow_deg",
        "hand",
        "hand_error_mm",
        "iterations",
        "reachable",
    ]
    assert obj["reachable"] is True and isinstance(obj["iterations"], int)
    assert obj["hand"] == pytest.approx([300.0, 120.0], abs=1e-3)
    assert obj["hand_error_mm"] < 0.5
    assert hand_of((obj["shoulder_deg"], obj["elbow_deg"])) == pytest.approx(obj["hand"])


def test_cli_negative_coordinates_start_pose_and_unreachable_target() -> None:
    run = robot_arm("--target", "-900,-40", "--from", "10,20", "--json")
    assert run.returncode == 0, run.stderr
    obj = json.loads(run.stdout)
    assert obj["reachable"] is False
    assert obj["hand_error_mm"] > 400 and math.isfinite(obj["hand_error_mm"])
    plain = robot_arm("--target", "0,0")
    assert plain.returncode == 0 and "out of reach" in plain.stdout


@pytest.mark.parametrize("seconds", ["0", "1.25", "2.8", "7.77"])
def test_cli_pick_place_solves_what_the_idle_page_solves(seconds: str) -> None:
    # the page's command in pick-and-place mode: the same path target as robot_arm.pick_place
    run = robot_arm("--pick-place", seconds, "--json")
    assert run.returncode == 0, run.stderr
    obj = json.loads(run.stdout)
    frame = arm.pick_place_frame(float(seconds), list(arm.REST_POSE_DEG), 360.0)
    assert obj["target"] == frame["target"]
    assert (obj["phase"], obj["carrying"]) == (frame["phase"], frame["carrying"])
    assert obj["reachable"] is True and obj["hand_error_mm"] < 1e-3
    assert hand_of((obj["shoulder_deg"], obj["elbow_deg"])) == pytest.approx(obj["hand"])


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--target", "1,2,3"], "--target needs two numbers separated by a comma, got '1,2,3'"),
        (["--target", "abc"], "--target needs two numbers separated by a comma, got 'abc'"),
        (["--target", "1,x"], "--target: 'x' (item 2) is not a number"),
        (["--target", "nan,1"], "--target: item 1 must be finite"),
        (["--target", "1,inf"], "--target: item 2 must be finite"),
        (["--target", "1,2", "--from", "200,0"], "the shoulder angle 200° is outside -90…150°"),
        (["--target", "1,2", "--from", "0,-5"], "the elbow angle -5° is outside 0…150°"),
        ([], "one of the arguments --target --pick-place is required"),
        (["--target", "1,2", "--pick-place", "1"], "not allowed with argument --target"),
        (["--pick-place", "-1"], "--pick-place must be a finite number of seconds ≥ 0"),
        (["--pick-place", "soon"], "--pick-place: 'soon' is not a number of seconds"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(args: list[str], fragment: str) -> None:
    assert_usage_error(robot_arm(*args), fragment)
