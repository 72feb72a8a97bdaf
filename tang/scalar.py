"""Math that dispatches on the number type, so one user function runs on every kind of number.

Plain ``int``/``float`` get IEEE-754 results that never raise (``log(0)`` is ``-inf``,
``sqrt(-1)`` is ``nan``); graph nodes get graph nodes; anything else (``tang.Dual``) gets
its own same-named method (the protocol of ``tang.expr.generic``), so the types nest: a Dual
of Duals, a Dual whose parts are traced nodes (forward-over-reverse), and so on. Python
operators already work on all of them. This module knows no number type above the graph.
"""

from __future__ import annotations

import builtins
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

# ---------------------------------------------------------------------------------------
# float kernels missing from tang.ieee: IEEE results instead of exceptions


def _tan(a: float) -> float:
    return math.tan(a) if math.isfinite(a) else math.nan


def _sigmoid(a: float) -> float:
    if a >= 0.0:
        return 1.0 / (1.0 + ieee.exp(-a))
    e = ieee.exp(a)  # stable for large negative a, and nan passes through
    return e / (1.0 + e)


def _pow(a: float, b: float) -> float:
    """C99 pow: overflow is ±inf, 0 to a negative power is ±inf, a negative base to a
    non-integer power is nan."""
    a, b = float(a), float(b)
    try:
        return math.pow(a, b)
    except OverflowError:
        odd = b == int(b) and int(b) % 2 == 1
        return -math.inf if (a < 0.0 and odd) else math.inf
    except ValueError:
        if a == 0.0:  # 0 ** negative
            odd = b == int(b) and int(b) % 2 == 1
            return math.copysign(math.inf, a) if odd else math.inf
        return math.nan


# name: float kernel, graph constructor, docstring
sin = _unary("sin", ieee.sin, graph.sin, "Sine (nan for ±inf).")
cos = _unary("cos", ieee.cos, graph.cos, "Cosine (nan for ±inf).")
tan = _unary("tan", _tan, Node.tan, "Tangent (nan for ±inf).")
exp = _unary("exp", ieee.exp, graph.exp, "e**a (inf on overflow).")
log = _unary("log", ieee.log, graph.log, "Natural logarithm (-inf at 0, nan below 0).")
sqrt = _unary("sqrt", ieee.sqrt, graph.sqrt, "Square root (nan below 0).")
tanh = _unary("tanh", math.tanh, Node.tanh, "Hyperbolic tangent.")
sigmoid = _unary("sigmoid", _sigmoid, Node.sigmoid, "Logistic function 1/(1+e**-a).")
exp2 = _unary("exp2", ieee.exp2, graph.exp2, "2**a (inf on overflow).")
log2 = _unary("log2", ieee.log2, graph.log2, "Base-2 logarithm (-inf at 0, nan below 0).")
recip = _unary("recip", ieee.recip, graph.recip, "1/a (±inf at ±0).")
floor = _unary("floor", ieee.floor, graph.floor, "The largest whole number ≤ a (slope 0).")


def abs(a: Number) -> Number:
    """|a|; the slope at 0 is +1 on every number type (the graph's select picks a there)."""
    if isinstance(a, _FLOATS):
        return builtins.abs(a)
    return a.__abs__()


def div(a: Number, b: Number) -> Number:
    """a/b; plain numbers give IEEE results (±inf, nan) instead of ZeroDivisionError."""
    if isinstance(a, _FLOATS) and isinstance(b, _FLOATS):
        return ieee.div(a, b)
    return a / b


def pow(a: Number, b: Number) -> Number:
    """a**b; plain numbers follow C99 pow (nan for a negative base to a non-integer power,
    never a complex number or an exception)."""
    if isinstance(a, _FLOATS) and isinstance(b, _FLOATS):
        return _pow(a, b)
    return a**b


# comparisons and selection (atan2, lt, le, eq, where above, from tang.expr.generic):
# numbers give bools, nodes give comparison nodes, Duals compare their values (a Dual's
# slope never changes which branch is taken)


def gt(a: Number, b: Number) -> Any:
    """a > b."""
    return b < a


def ge(a: Number, b: Number) -> Any:
    """a >= b."""
    return b <= a


def min(a: Number, b: Number) -> Number:
    """The smaller of a and b (a when either is nan, like Python's min)."""
    return where(lt(b, a), b, a)


def max(a: Number, b: Number) -> Number:
    """The larger of a and b (a when either is nan, like Python's max)."""
    return where(lt(a, b), b, a)
