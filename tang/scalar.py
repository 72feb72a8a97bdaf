"""Math that dispatches on the number type, so one user function runs on every kind of number.

Plain ``int``/``float`` get IEEE-754 results that never raise (``log(0)`` is ``-inf``,
``sqrt(-1)`` is ``nan``); graph nodes get graph nodes; anything else (``tang.Dual``) gets
its own same-named method (the protocol of ``tang.expr.generic``), so the types nest: a Dual
of Duals, a Dual whose parts are traced nodes (forward-over-reverse), and so on. Python
operators already work on all of them. This module knows no number type above the graph.
"""

from __future__ import annotations

import math
from typing import Any

from . import ieee
from .expr import generic, graph
from .expr.generic import atan2 as atan2
from .expr.generic import eq as eq
from .expr.generic import le as le
from .expr.generic import lt as lt
from .expr.generic import where as where
from .expr.graph import Node

Number = Any  # int | float | Node | Dual | anything implementing the same methods
_FLOATS = (int, float)  # bool is an int: True behaves as 1
_unary = generic.unary

# name: float kernel, graph constructor, docstring
sin = _unary("sin", ieee.sin, graph.sin, "Sine (nan for ±inf).")
cos = _unary("cos", ieee.cos, graph.cos, "Cosine (nan for ±inf).")
exp = _unary("exp", ieee.exp, graph.exp, "e**a (inf on overflow).")
log = _unary("log", ieee.log, graph.log, "Natural logarithm (-inf at 0, nan below 0).")
sqrt = _unary("sqrt", ieee.sqrt, graph.sqrt, "Square root (nan below 0).")
tanh = _unary("tanh", math.tanh, Node.tanh, "Hyperbolic tangent.")
exp2 = _unary("exp2", ieee.exp2, graph.exp2, "2**a (inf on overflow).")
log2 = _unary("log2", ieee.log2, graph.log2, "Base-2 logarithm (-inf at 0, nan below 0).")
recip = _unary("recip", ieee.recip, graph.recip, "1/a (±inf at ±0).")
floor = _unary("floor", ieee.floor, graph.floor, "The largest whole number ≤ a (slope 0).")

# the composites of the registry (tang.expr.ops.COMPOSITES): kernel, graph formula, methods
tan = generic.COMPOSITES["tan"]
sigmoid = generic.COMPOSITES["sigmoid"]
abs = generic.COMPOSITES["abs"]
pow = generic.COMPOSITES["pow"]
min = generic.COMPOSITES["min"]
max = generic.COMPOSITES["max"]


def div(a: Number, b: Number) -> Number:
    """a/b; plain numbers give IEEE results (±inf, nan) instead of ZeroDivisionError."""
    if isinstance(a, _FLOATS) and isinstance(b, _FLOATS):
        return ieee.div(a, b)
    return a / b


# comparisons and selection (atan2, lt, le, eq, where above, from tang.expr.generic):
# numbers give bools, nodes give comparison nodes, Duals compare their values (a Dual's
# slope never changes which branch is taken)


def gt(a: Number, b: Number) -> Any:
    """a > b."""
    return b < a


def ge(a: Number, b: Number) -> Any:
    """a >= b."""
    return b <= a
