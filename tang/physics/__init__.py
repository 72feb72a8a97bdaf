"""Physics written once over any number (float, ``tang.Dual``, traced nodes): the same
function gives values, exact slopes and a graph. One line per module below."""

from .arm import forward_kinematics as forward_kinematics  # two-link planar arm
from .gravity import leapfrog_orbit as leapfrog_orbit  # one point mass, leapfrog
from .ik import TwoLinkArm as TwoLinkArm  # its inverse kinematics (tang.solve)
from .orbit import shoot as shoot  # a probe among gravitating bodies, and its miss
