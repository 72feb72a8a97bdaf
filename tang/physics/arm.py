"""A planar two-link arm, written once over any number: floats give the hand's position,
Duals its exact slopes, traced variables a graph to differentiate or lower.

Angles are in radians, counter-clockwise; the elbow angle is relative to the upper arm
(0 = stretched out). The shoulder sits at the origin. The inverse kinematics, within joint
limits, are ``tang.physics.ik.TwoLinkArm``.
"""

from __future__ import annotations

from typing import Any

from .. import dual
from .. import scalar as S
from ..dual import Tangents

Number = Any  # float | tang.Dual | tang.Node


def elbow_position(shoulder: Number, upper: Number) -> tuple[Number, Number]:
    """Where the elbow is: the end of the upper arm of length ``upper``."""
    return upper * S.cos(shoulder), upper * S.sin(shoulder)


def forward_kinematics(
    shoulder: Number, elbow: Number, upper: Number, forearm: Number
) -> tuple[Number, Number]:
    """Where the hand is for joint angles (radians): elbow point plus the forearm, which
    points along shoulder + elbow."""
    ex, ey = elbow_position(shoulder, upper)
    reach = shoulder + elbow
    return ex + forearm * S.cos(reach), ey + forearm * S.sin(reach)


def hand_and_jacobian(
    shoulder: float, elbow: float, upper: float, forearm: float
) -> tuple[tuple[float, float], tuple[tuple[float, float], tuple[float, float]]]:
    """The hand (x, y) and its 2×2 Jacobian ((∂x/∂s, ∂x/∂e), (∂y/∂s, ∂y/∂e)), from one
    forward pass of ``forward_kinematics`` on Duals carrying both joints' tangents."""
    if shoulder.__class__ is float and elbow.__class__ is float:
        # the hot path of IK: plain angles need a level only above the running transforms
        level = dual.plain_level()
        x, y = forward_kinematics(
            dual.seed(level, shoulder, _SHOULDER), dual.seed(level, elbow, _ELBOW), upper, forearm
        )
    else:
        with dual.perturbation(shoulder, elbow) as level:
            x, y = forward_kinematics(
                dual.seed(level, shoulder, _SHOULDER),
                dual.seed(level, elbow, _ELBOW),
                upper,
                forearm,
            )
    (xv, (xs, xe)), (yv, (ys, ye)) = dual.split(x, level), dual.split(y, level)
    return (xv, yv), ((xs, xe), (ys, ye))


_SHOULDER, _ELBOW = Tangents((1.0, 0.0)), Tangents((0.0, 1.0))  # the two seed directions
