"""Inverse kinematics of the planar two-link arm of ``tang.physics.arm`` within its joint
limits: geometry gives the exact pose (or a restart point), bounded damped least squares
(``tang.solve.dls``) with the Jacobian from one dual pass does the rest.

Angles are in radians (elbow relative to the upper arm, 0 = stretched out); lengths in any
unit, the same for the links and the targets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from ..solve.dls import damped_least_squares
from ..solve.result import LeastSquaresResult
from .arm import elbow_position, forward_kinematics, hand_and_jacobian

Pair = tuple[float, float]

TAU = 2.0 * math.pi
FAR_LENGTHS = 1e4  # a target farther than this many arm lengths is aimed at from there
RELATIVE_TOLERANCE = 1e-9  # default solve/reach tolerance, in arm lengths


class ArmSolution(NamedTuple):
    """A pose (radians), where its hand is, how far that is from the target as given, and
    how many damped-least-squares iterations it took (both runs, with a restart)."""

    shoulder: float
    elbow: float
    hand: tuple[float, float]
    error: float
    iterations: int


@dataclass(frozen=True)
class TwoLinkArm:
    """A planar two-link arm with its shoulder at the origin: link lengths and the joint
    limits (radians; the elbow's within [-π, π], the shoulder's any interval)."""

    upper: float
    forearm: float
    shoulder_limits: tuple[float, float]
    elbow_limits: tuple[float, float]

    def __post_init__(self) -> None:
        for name in ("upper", "forearm"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 < v < math.inf:
                raise ValueError(f"{name} must be a finite length > 0, got {v!r}")
        for name in ("shoulder_limits", "elbow_limits"):
            pair = getattr(self, name)
            if (
                not isinstance(pair, tuple | list)
                or len(pair) != 2
                or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in pair)
                or not all(math.isfinite(v) for v in pair)
                or pair[0] > pair[1]
            ):
                raise ValueError(f"{name} must be two finite angles (lo ≤ hi), got {pair!r}")
        lo, hi = self.elbow_limits
        if lo < -math.pi or hi > math.pi:
            raise ValueError(f"elbow_limits must lie within [-π, π], got {self.elbow_limits!r}")

    # ---- geometry --------------------------------------------------------------------

    @property
    def length(self) -> float:
        """Upper arm plus forearm: the scale of the default tolerances."""
        return self.upper + self.forearm

    def reach(self, elbow: float) -> float:
        """The hand's distance from the shoulder with the elbow at ``elbow``."""
        return math.hypot(
            self.upper + self.forearm * math.cos(elbow), self.forearm * math.sin(elbow)
        )

    @cached_property
    def max_reach(self) -> float:
        """The farthest the hand gets from the shoulder (elbow as straight as allowed)."""
        return self.reach(_clamp(0.0, *self.elbow_limits))

    @cached_property
    def min_reach(self) -> float:
        """The nearest the hand gets to the shoulder (elbow as bent as allowed)."""
        lo, hi = self.elbow_limits
        return self.reach(lo if abs(lo) > abs(hi) else hi)

    def hand(self, shoulder: float, elbow: float) -> tuple[float, float]:
        """Where the hand is for the pose."""
        return forward_kinematics(shoulder, elbow, self.upper, self.forearm)

    def clamp(self, shoulder: float, elbow: float) -> tuple[float, float]:
        """The pose pushed into the joint limits, joint by joint."""
        return _clamp(shoulder, *self.shoulder_limits), _clamp(elbow, *self.elbow_limits)

    @cached_property
    def _elbow_signs(self) -> tuple[float, ...]:
        lo, hi = self.elbow_limits  # which bends (elbow up +, down −) the limits allow
        return (1.0,) if lo >= 0.0 else (-1.0,) if hi <= 0.0 else (1.0, -1.0)

    def closed_form(self, x: float, y: float) -> tuple[float, float]:
        """The analytic pose for the target, pushed into the joint limits: exact when the
        target is reachable, a starting guess when it is not. With elbow limits on both
        sides of 0, the nearer of the two bends."""
        l1, l2 = self.upper, self.forearm
        c = (x * x + y * y - l1**2 - l2**2) / (2.0 * l1 * l2)
        bend = math.acos(_clamp(c, -1.0, 1.0))
        poses = [self._shoulder_for(x, y, sign * bend) for sign in self._elbow_signs]
        return poses[0] if len(poses) == 1 else min(poses, key=lambda p: self._miss(p, x, y))

    def _shoulder_for(self, x: float, y: float, elbow: float) -> tuple[float, float]:
        """The pose with the elbow (clamped) at ``elbow`` whose hand points at (x, y), its
        shoulder in the limits (the nearer limit when the direction is in the gap)."""
        l1, l2 = self.upper, self.forearm
        e = _clamp(elbow, *self.elbow_limits)
        s = math.atan2(y, x) - math.atan2(l2 * math.sin(e), l1 + l2 * math.cos(e))
        s = (s + math.pi) % TAU - math.pi  # into [-180°, 180°)
        lo, hi = self.shoulder_limits
        return (s if lo <= s <= hi else _nearest_on_arc(s, lo, hi)), e

    def _miss(self, pose: tuple[float, float], x: float, y: float) -> float:
        hx, hy = forward_kinematics(pose[0], pose[1], self.upper, self.forearm)
        return (hx - x) ** 2 + (hy - y) ** 2

    def nearest_pose(self, x: float, y: float) -> tuple[float, float]:
        """The pose whose hand is nearest to (x, y), by geometry: the analytic pose when it
        is within the limits, else the nearest point of the four edges of the joint box
        (each edge moves the hand along a circle). The restart point of ``solve``."""
        (s_lo, s_hi), (e_lo, e_hi) = self.shoulder_limits, self.elbow_limits
        l1, l2 = self.upper, self.forearm
        candidates = [self.closed_form(x, y)]
        for s in (s_lo, s_hi):  # shoulder held: the forearm swings about the elbow
            ex, ey = elbow_position(s, l1)
            candidates.append((s, _nearest_on_arc(math.atan2(y - ey, x - ex) - s, e_lo, e_hi)))
        for e in (e_lo, e_hi):  # elbow held: the whole arm swings about the shoulder
            offset = math.atan2(l2 * math.sin(e), l1 + l2 * math.cos(e))
            candidates.append((_nearest_on_arc(math.atan2(y, x) - offset, s_lo, s_hi), e))
        return min(candidates, key=lambda p: self._miss(p, x, y))

    def is_reachable(self, x: float, y: float, tolerance: float | None = None) -> bool:
        """True when some pose within the joint limits puts the hand within ``tolerance``
        of (x, y) (default ``RELATIVE_TOLERANCE`` arm lengths)."""
        tol = RELATIVE_TOLERANCE * self.length if tolerance is None else tolerance
        s, e = self.closed_form(x, y)
        hx, hy = forward_kinematics(s, e, self.upper, self.forearm)
        return math.hypot(hx - x, hy - y) <= tol

    # ---- the numerical solve ----------------------------------------------------------

    def refine(
        self,
        target: tuple[float, float],
        start: tuple[float, float],
        *,
        max_iterations: int = 100,
        tolerance: float | None = None,
    ) -> LeastSquaresResult:
        """One run of bounded damped least squares from ``start`` (which must lie within
        the limits) on the residuals hand − target, the Jacobian from one dual pass per kept
        step (``hand_and_jacobian``); ``active_mask`` tells which joints end on a limit."""
        tx, ty = target
        l1, l2 = self.upper, self.forearm

        def miss(pose: Pair) -> Pair:
            hx, hy = forward_kinematics(pose[0], pose[1], l1, l2)
            return hx - tx, hy - ty

        def miss_and_jacobian(pose: Pair) -> tuple[Pair, tuple[Pair, Pair]]:
            (hx, hy), jac = hand_and_jacobian(pose[0], pose[1], l1, l2)
            return (hx - tx, hy - ty), jac

        (s_lo, s_hi), (e_lo, e_hi) = self.shoulder_limits, self.elbow_limits
        return damped_least_squares(
            miss,
            start,
            lower=(s_lo, e_lo),
            upper=(s_hi, e_hi),
            jacobian=miss_and_jacobian,
            max_iterations=max_iterations,
            tolerance=RELATIVE_TOLERANCE * self.length if tolerance is None else tolerance,
        )

    def solve(
        self,
        target: tuple[float, float],
        start: tuple[float, float],
        *,
        max_iterations: int = 100,
        tolerance: float | None = None,
        restart: bool = True,
        switch: float = 0.0,
    ) -> ArmSolution:
        """The pose that puts the hand on ``target``, from ``start`` (clamped into the
        limits): damped least squares from the start, then, if that stalls short of the
        target, once more from the geometric nearest pose (``restart``), kept when it is
        closer by more than ``switch``. An unreachable target gives the nearest reachable
        pose (within the limits, from here); the shoulder point itself folds the arm in.
        ``tolerance`` defaults to ``RELATIVE_TOLERANCE`` arm lengths."""
        x, y = _finite_pair(target, "target")
        s0, e0 = self.clamp(*_finite_pair(start, "start"))
        tol = RELATIVE_TOLERANCE * self.length if tolerance is None else tolerance
        far = math.hypot(x, y)
        limit = FAR_LENGTHS * self.length
        # a target farther than ``limit`` is solved for at ``limit`` along its direction
        # (the same nearest pose, to rounding) so that squared distances never overflow
        aim = (x * (limit / far), y * (limit / far)) if far > limit else (x, y)
        fit = self.refine(aim, (s0, e0), max_iterations=max_iterations, tolerance=tol)
        (s, e), err, n = fit.x, math.sqrt(2.0 * fit.cost), fit.nit
        if restart and err > tol:
            again = self.refine(
                aim, self.nearest_pose(*aim), max_iterations=max_iterations, tolerance=tol
            )
            n += again.nit
            err_again = math.sqrt(2.0 * again.cost)
            if err_again < err - switch - 1e-9 * (1.0 + err):  # a tie keeps the start's pose
                (s, e), err = again.x, err_again
        hx, hy = forward_kinematics(s, e, self.upper, self.forearm)
        return ArmSolution(s, e, (hx, hy), math.hypot(hx - x, hy - y), n)


def _clamp(a: float, lo: float, hi: float) -> float:
    return lo if a < lo else hi if a > hi else a


def _nearest_on_arc(angle: float, lo: float, hi: float) -> float:
    """The angle in [lo, hi] nearest to ``angle`` around the circle."""
    a = lo + (angle - lo) % TAU
    if a <= hi:
        return a
    return hi if a - hi < lo + TAU - a else lo


def _finite_pair(value: tuple[float, float], name: str) -> tuple[float, float]:
    try:
        a, b = value
        if a.__class__ is not float or b.__class__ is not float:
            a, b = float(a), float(b)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be two finite numbers, got {value!r}") from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"{name} must be two finite numbers, got {value!r}")
    return a, b
