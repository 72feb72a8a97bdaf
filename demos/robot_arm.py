"""The robot arm "rose": a planar two-link arm whose hand follows a target.

The forward kinematics live in ``tang.physics.arm`` (written once over any number), the
inverse kinematics in ``tang.physics.ik`` (``TwoLinkArm``, over ``tang.solve``'s bounded
damped least squares); this module holds the scene, the pick-and-place path and the worker
handlers:

    robot_arm.scene       {}               the scene below, for the page to draw
    robot_arm.solve       {target, pose?}  one solve from the current pose toward target
    robot_arm.pick_place  {t, pose?}       the same, toward the pick-and-place path at t s

The Jacobian of each IK step comes from one dual pass through the forward kinematics (both
joints' tangents at once); the step is damped least squares with adaptive damping, and the
joint limits hold after every iteration. On the desktop the same code runs as::

    python -m demos.robot_arm --target 300,120 [--from 45,90] [--json]
    python -m demos.robot_arm --pick-place 1.25 [--from 45,90] [--json]

``--pick-place T`` solves toward the pick-and-place path's target T seconds into its loop
(what the page's arm does when left alone); its JSON adds ``target``, ``phase`` and
``carrying`` to the solution's fields.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from demos.api import handler
from demos.common import OneLineParser, glue_values
from tang.physics.arm import elbow_position, forward_kinematics
from tang.physics.ik import TwoLinkArm

# ---------------------------------------------------------------------------------------
# the scene, stated once: millimetres, shoulder at the origin, y up, degrees counter-clockwise

UPPER_MM = 227.0  # shoulder → elbow
FOREARM_MM = 236.0  # elbow → hand
SHOULDER_LIMITS_DEG = (-90.0, 150.0)
ELBOW_LIMITS_DEG = (0.0, 150.0)  # relative to the upper arm; 0 = stretched out
REST_POSE_DEG = (45.0, 90.0)  # where a solve starts when no pose is given
SPOTS_MM = ((300.0, 40.0), (-120.0, 280.0))  # the two pick-and-place spots
LIFT_MM = 140.0  # how high the block is carried above the straight line between them
GRAB_S, CARRY_S = 0.4, 2.0  # pick-and-place timing: hold at a spot, travel to the other

TOLERANCE_MM = 1e-4  # a solve stops once the hand is this close
REACH_TOLERANCE_MM = 1e-6  # a target this close to the workspace counts as reachable

_S_LO, _S_HI = (math.radians(a) for a in SHOULDER_LIMITS_DEG)
_E_LO, _E_HI = (math.radians(a) for a in ELBOW_LIMITS_DEG)
ARM = TwoLinkArm(UPPER_MM, FOREARM_MM, (_S_LO, _S_HI), (_E_LO, _E_HI))  # the IK lives here
MAX_REACH_MM = ARM.max_reach
MIN_REACH_MM = ARM.min_reach


@dataclass(frozen=True)
class Solution:
    """A pose (degrees), where its hand is, and how far that is from the target."""

    shoulder_deg: float
    elbow_deg: float
    hand: tuple[float, float]
    hand_error_mm: float
    iterations: int
    reachable: bool

    def as_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` object (and the core of the worker's answers)."""
        return {
            "shoulder_deg": self.shoulder_deg,
            "elbow_deg": self.elbow_deg,
            "hand": list(self.hand),
            "hand_error_mm": self.hand_error_mm,
            "iterations": self.iterations,
            "reachable": self.reachable,
        }


def _clamp(a: float, lo: float, hi: float) -> float:
    return lo if a < lo else hi if a > hi else a


def is_reachable(x: float, y: float) -> bool:
    """True when some pose within the joint limits puts the hand on (x, y)."""
    return ARM.is_reachable(x, y, REACH_TOLERANCE_MM)


def solve(
    target: tuple[float, float],
    start_deg: tuple[float, float] = REST_POSE_DEG,
    *,
    max_iterations: int = 100,
    tolerance_mm: float = TOLERANCE_MM,
    restart: bool = True,
    switch_mm: float = 0.0,
) -> Solution:
    """The pose that puts the hand on ``target`` (mm), from ``start_deg`` (clamped into the
    limits): ``TwoLinkArm.solve`` (damped least squares, restarted from the geometric
    nearest pose if it stalls; a restart wins when closer by more than ``switch_mm``), in
    degrees, with the target's reachability."""
    x, y = (float(v) for v in target)
    start = (math.radians(start_deg[0]), math.radians(start_deg[1]))
    sol = ARM.solve(
        (x, y),
        start,
        max_iterations=max_iterations,
        tolerance=tolerance_mm,
        restart=restart,
        switch=switch_mm,
    )
    return Solution(
        math.degrees(sol.shoulder),
        math.degrees(sol.elbow),
        sol.hand,
        sol.error,
        sol.iterations,
        is_reachable(x, y),
    )


# ---------------------------------------------------------------------------------------
# pick and place: a block carried between the two spots along a smooth path


def _smoothstep(u: float) -> float:
    """0 → 1 with zero slope and zero curvature at both ends (quintic)."""
    return u * u * u * (u * (6.0 * u - 15.0) + 10.0)


def pick_place_target(t: float) -> dict[str, Any]:
    """Where the hand should be at ``t`` seconds into the loop: it holds at a spot (grab),
    carries the block along a lifted cubic Bézier to the other spot, holds (release), and
    carries it back. Returns {target, carrying, phase, from_spot}."""
    half = GRAB_S + CARRY_S + GRAB_S
    leg = math.floor(t / half) % 2  # 0: spot 0 → spot 1, 1: back
    (px, py), (qx, qy) = SPOTS_MM[leg], SPOTS_MM[1 - leg]
    local = t - math.floor(t / half) * half
    if local < GRAB_S:
        return {"target": [px, py], "carrying": True, "phase": "grab", "from_spot": leg}
    if local >= GRAB_S + CARRY_S:
        return {"target": [qx, qy], "carrying": False, "phase": "release", "from_spot": leg}
    u = _smoothstep((local - GRAB_S) / CARRY_S)
    v = 1.0 - u  # Bézier P, P + lift, Q + lift, Q
    bx = v**3 * px + 3 * v * v * u * px + 3 * v * u * u * qx + u**3 * qx
    by = v**3 * py + 3 * v * v * u * (py + LIFT_MM) + 3 * v * u * u * (qy + LIFT_MM) + u**3 * qy
    return {"target": [bx, by], "carrying": True, "phase": "carry", "from_spot": leg}


# ---------------------------------------------------------------------------------------
# worker handlers (one solve per animation frame: a few dual passes, well under 16 ms)

MAX_STEP_DEG = 8.0  # the most a joint turns in one frame, so that a new solution never jumps
FRAME_ITERATIONS = 40
SWITCH_MM = 1.0  # out of reach, a nearer pose elsewhere wins only by this much (hysteresis)


def _finite_pair(value: Any, name: str) -> tuple[float, float]:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        or not all(math.isfinite(v) for v in value)
    ):
        raise ValueError(f"{name} must be two finite numbers, got {value!r}")
    return float(value[0]), float(value[1])


def _frame(target: tuple[float, float], pose: tuple[float, float], max_step_deg: float) -> dict:
    """One frame: solve from ``pose``; a pose more than ``max_step_deg`` away is approached
    (linearly in joint space) rather than jumped to."""
    started = time.perf_counter()
    reach = is_reachable(*target)
    # When the local solve stalls (at a joint limit, or in a local minimum of the distance
    # for a target out of reach), the geometric nearest pose takes over. For a target out
    # of reach it must be nearer by SWITCH_MM, so that a target sweeping past a point with
    # two equally near poses does not flip the arm to and fro.
    switch = 0.0 if reach else SWITCH_MM
    sol = solve(target, pose, max_iterations=FRAME_ITERATIONS, switch_mm=switch)
    ds, de = sol.shoulder_deg - pose[0], sol.elbow_deg - pose[1]
    turn = max(abs(ds), abs(de))
    if turn > max_step_deg:
        k = max_step_deg / turn
        s_deg = _clamp(pose[0] + k * ds, *SHOULDER_LIMITS_DEG)
        e_deg = _clamp(pose[1] + k * de, *ELBOW_LIMITS_DEG)
        hand = forward_kinematics(math.radians(s_deg), math.radians(e_deg), UPPER_MM, FOREARM_MM)
        miss = math.dist(hand, target)
        sol = Solution(s_deg, e_deg, hand, miss, sol.iterations, reach)
    out = sol.as_json()
    out["elbow"] = list(elbow_position(math.radians(sol.shoulder_deg), UPPER_MM))
    out["target"] = list(target)
    out["solve_ms"] = (time.perf_counter() - started) * 1e3
    return out


def workspace_outline(per_edge: int = 48) -> list[list[float]]:
    """The edge of the reachable region: the hand along the four edges of the joint box."""
    corners = ((_S_LO, _E_LO), (_S_HI, _E_LO), (_S_HI, _E_HI), (_S_LO, _E_HI))
    points = []
    for (s0, e0), (s1, e1) in zip(corners, corners[1:] + corners[:1]):
        for k in range(per_edge):
            u = k / per_edge
            s, e = s0 + u * (s1 - s0), e0 + u * (e1 - e0)
            points.append([round(v, 2) for v in forward_kinematics(s, e, UPPER_MM, FOREARM_MM)])
    return points


@handler("robot_arm.scene")
def scene() -> dict[str, Any]:
    """The scene as stated above, for the page to draw with the same numbers; ``rest`` is
    the rest pose as a frame (as ``robot_arm.solve`` answers)."""
    s, e = (math.radians(a) for a in REST_POSE_DEG)
    rest_hand = forward_kinematics(s, e, UPPER_MM, FOREARM_MM)
    return {
        "upper_mm": UPPER_MM,
        "forearm_mm": FOREARM_MM,
        "shoulder_limits_deg": list(SHOULDER_LIMITS_DEG),
        "elbow_limits_deg": list(ELBOW_LIMITS_DEG),
        "rest_pose_deg": list(REST_POSE_DEG),
        "rest": _frame(rest_hand, REST_POSE_DEG, MAX_STEP_DEG),
        "min_reach_mm": MIN_REACH_MM,
        "max_reach_mm": MAX_REACH_MM,
        "spots_mm": [list(p) for p in SPOTS_MM],
        "outline": workspace_outline(),
        "cycle_s": 2 * (GRAB_S + CARRY_S + GRAB_S),
        "max_step_deg": MAX_STEP_DEG,
    }


@handler("robot_arm.solve")
def solve_frame(
    target: list[float], pose: list[float] | None = None, max_step_deg: float = MAX_STEP_DEG
) -> dict[str, Any]:
    """One animation frame: the pose from ``pose`` (degrees, default the rest pose) toward
    ``target`` (mm), its hand, elbow, hand error (mm), reachability and iteration count."""
    t = _finite_pair(target, "target")
    p = _finite_pair(pose, "pose") if pose is not None else REST_POSE_DEG
    return _frame(t, p, float(max_step_deg))


@handler("robot_arm.pick_place")
def pick_place_frame(
    t: float, pose: list[float] | None = None, max_step_deg: float = MAX_STEP_DEG
) -> dict[str, Any]:
    """One frame of the pick-and-place loop at ``t`` seconds: the path's target, whether
    the block is carried, and the solve toward it (as ``robot_arm.solve``)."""
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
        raise ValueError(f"t must be a finite number of seconds ≥ 0, got {t!r}")
    p = _finite_pair(pose, "pose") if pose is not None else REST_POSE_DEG
    path = pick_place_target(float(t))
    out = _frame(tuple(path["target"]), p, float(max_step_deg))
    out.update(carrying=path["carrying"], phase=path["phase"], from_spot=path["from_spot"])
    return out


# ---------------------------------------------------------------------------------------
# command line


def _pair(text: str, what: str) -> tuple[float, float]:
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError(f"{what} needs two numbers separated by a comma, got {text!r}")
    out = []
    for i, part in enumerate(parts):
        try:
            v = float(part)
        except ValueError:
            raise ValueError(f"{what}: {part.strip()!r} (item {i + 1}) is not a number") from None
        if not math.isfinite(v):
            raise ValueError(f"{what}: item {i + 1} must be finite, got {part.strip()!r}")
        out.append(v)
    return out[0], out[1]


def _seconds(text: str) -> float:
    try:
        t = float(text)
    except ValueError:
        raise ValueError(f"--pick-place: {text.strip()!r} is not a number of seconds") from None
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"--pick-place must be a finite number of seconds ≥ 0, got {text!r}")
    return t


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m demos.robot_arm (--target X,Y | --pick-place T) [--from S,E] [--json]``;
    returns the exit code."""
    parser = OneLineParser(
        prog="python -m demos.robot_arm",
        description="Inverse kinematics of a two-link arm (227 mm + 236 mm), shoulder at the "
        "origin, y up, degrees counter-clockwise; Jacobians from tang's dual numbers.",
    )
    goal = parser.add_mutually_exclusive_group(required=True)
    goal.add_argument("--target", metavar="X,Y", help="hand target in mm")
    goal.add_argument(
        "--pick-place",
        dest="pick_place",
        metavar="SECONDS",
        help="the pick-and-place path's target this many seconds into its loop",
    )
    parser.add_argument(
        "--from",
        dest="start",
        metavar="SHOULDER,ELBOW",
        default=",".join(f"{a:g}" for a in REST_POSE_DEG),
        help="starting pose in degrees (default %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    words = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(glue_values(words, ("--target", "--from", "--pick-place")))
    try:
        path = None if args.pick_place is None else pick_place_target(_seconds(args.pick_place))
        target = _pair(args.target, "--target") if path is None else tuple(path["target"])
        start = _pair(args.start, "--from")
        for name, value, (lo, hi) in (
            ("shoulder", start[0], SHOULDER_LIMITS_DEG),
            ("elbow", start[1], ELBOW_LIMITS_DEG),
        ):
            if not lo <= value <= hi:
                raise ValueError(f"--from: the {name} angle {value:g}° is outside {lo:g}…{hi:g}°")
    except ValueError as err:
        parser.error(str(err))
    sol = solve(target, start)
    if args.json:
        out = sol.as_json()
        if path is not None:
            out.update(target=path["target"], phase=path["phase"], carrying=path["carrying"])
        print(json.dumps(out, allow_nan=False))
    else:
        where = "reachable" if sol.reachable else "out of reach: the nearest reachable pose"
        if path is not None:
            print(f"pick and place at {args.pick_place} s: {path['phase']}")
        print(f"target ({target[0]:g}, {target[1]:g}) mm, {where}")
        print(f"shoulder {sol.shoulder_deg:.4f}°, elbow {sol.elbow_deg:.4f}°")
        print(f"hand ({sol.hand[0]:.4f}, {sol.hand[1]:.4f}) mm, error {sol.hand_error_mm:.3g} mm")
        print(f"{sol.iterations} iterations of damped least squares (Jacobians from dual numbers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
