"""Spatial algebra written once over any number (float, ``tang.Dual``, traced ``tang.Node``),
and exact geometric predicates on float coordinates. One line per module below."""

from .mat import Mat as Mat  # m×n matrices: a sequence of row lists, @, +, -, transpose
from .predicates import incircle as incircle  # exact signs (Shewchuk's filter + integers)
from .predicates import insphere as insphere
from .predicates import orient2d as orient2d
from .predicates import orient3d as orient3d
from .quat import Quat as Quat  # rotations: Hamilton product, axis-angle, matrix, slerp
from .quat import slerp as slerp
from .vec import Vec2 as Vec2  # 2-D and 3-D vectors
from .vec import Vec3 as Vec3
