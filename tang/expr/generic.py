"""Each primitive of the registry as one function over any number type.

Plain ``int``/``float`` get the op's IEEE float kernel (``log2(0)`` is ``-inf``, never an
exception); graph nodes, and plain numbers mixed with them, get graph nodes; any other type
gets its own method, so a new value type (``tang.Dual`` today; a tensor or an interval
later) plugs in by implementing them, and the types nest (a Dual whose parts are nodes):

- a unary op ``f``: ``a.f()`` (``a.sin()``, ``a.sqrt()``, …);
- ``atan2(y, x)``: ``y.atan2(x)``, or ``x.ratan2(y)`` when only x is of that type;
- ``eq(a, b)``: ``a.eq(b)`` (or ``b.eq(a)``), a comparison of values;
- ``where(cond, a, b)`` over a traced comparison: ``type(a).where(cond, a, b)`` (or b's).

The registry's composites (tan, sigmoid, abs, pow, min, max) are here too (``COMPOSITES``):
their kernel for plain numbers, their formula's graph for nodes, a type's own method where
it has one, else the formula over that type's math. ``tang.scalar`` builds the public math
on these; ``tang.expr.trace.replay`` runs a graph on any number type with them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from . import graph
from .graph import Node
from .ops import COMPOSITES as COMPOSITE_OPS
from .ops import INTEGER_OPS, OPERATIONS, OPS

Number = Any  # int | float | Node | anything implementing the methods above
_FLOATS = (int, float)  # bool is an int: True behaves as 1
_PLAIN = (int, float, Node)  # the types this module handles without a method


def unary(
    name: str, on_float: Callable[[float], float], on_node: Callable[[Node], Node], doc: str
) -> Callable[[Number], Number]:
    """A math function: IEEE kernel for numbers, graph constructor for nodes, else a method."""

    def function(a: Number) -> Number:
        if isinstance(a, _FLOATS):
            return on_float(a)
        if isinstance(a, Node):
            return on_node(a)
        method = getattr(a, name, None)
        if method is None:
            raise TypeError(f"tang.{name} does not accept {type(a).__name__}")
        return method()

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def atan2(y: Number, x: Number) -> Number:
    """The angle of the point (x, y), in (-pi, pi]."""
    if isinstance(y, _FLOATS) and isinstance(x, _FLOATS):
        return OPS["atan2"].kernel(y, x)  # type: ignore[misc]
    if not isinstance(y, _PLAIN) and hasattr(y, "atan2"):
        return y.atan2(x)
    if not isinstance(x, _PLAIN) and hasattr(x, "ratan2"):
        return x.ratan2(y)
    if isinstance(y, _PLAIN) and isinstance(x, _PLAIN):
        return graph.atan2(y, x)
    raise TypeError(f"tang.atan2 does not accept {type(y).__name__} and {type(x).__name__}")


def lt(a: Number, b: Number) -> Any:
    """a < b."""
    return a < b


def le(a: Number, b: Number) -> Any:
    """a <= b."""
    return a <= b


def eq(a: Number, b: Number) -> Any:
    """a == b as a value comparison (``==`` on nodes and Duals is identity, like Python's)."""
    if not isinstance(a, _PLAIN) and hasattr(a, "eq"):
        return a.eq(b)
    if not isinstance(b, _PLAIN) and hasattr(b, "eq"):
        return b.eq(a)
    if isinstance(a, Node) or isinstance(b, Node):
        return graph.eq(a, b)
    return a == b


def where(cond: Any, a: Number, b: Number) -> Number:
    """``a`` where ``cond`` holds, else ``b``: a Python bool picks now; a traced comparison
    becomes a select node (for other number types: their ``where``)."""
    if isinstance(cond, Node):
        if not isinstance(a, _PLAIN) and hasattr(type(a), "where"):
            return type(a).where(cond, a, b)
        if not isinstance(b, _PLAIN) and hasattr(type(b), "where"):
            return type(b).where(cond, a, b)
        return graph.select(cond, a, b)
    if not isinstance(cond, _FLOATS) and hasattr(type(cond), "where"):
        raise TypeError(
            f"where() needs a comparison as its condition, not a {type(cond).__name__} number"
        )
    return a if cond else b


def _integer(name: str) -> Callable[[Number, Number], Number]:
    """An integer op over whole numbers or graph nodes (no other number type has bits)."""
    kernel, build = OPS[name].kernel, graph.CONSTRUCTORS[name]

    def function(a: Number, b: Number) -> Number:
        if isinstance(a, _FLOATS) and isinstance(b, _FLOATS):
            return kernel(a, b)  # type: ignore[misc]
        if isinstance(a, _PLAIN) and isinstance(b, _PLAIN):
            return build(a, b)
        raise TypeError(f"{name} takes whole numbers or traced values, not {type(a).__name__}")

    function.__name__ = function.__qualname__ = name
    return function


_SPECIAL: dict[str, Callable[..., Any]] = {
    **{name: _integer(name) for name in INTEGER_OPS},
    "add": operator.add,
    "mul": operator.mul,
    "neg": operator.neg,
    "atan2": atan2,
    "lt": lt,
    "le": le,
    "eq": eq,
    "select": where,
}
# primitive -> the function that computes it on any number type: the unary ones dispatch
# as ``unary`` does, with the op's kernel and graph constructor from the registry
PRIMITIVES: dict[str, Callable[..., Any]] = {
    name: _SPECIAL.get(name) or unary(name, OPS[name].kernel, graph.CONSTRUCTORS[name], name)  # type: ignore[arg-type]
    for name in OPERATIONS
}


# the kit a composite's formula is written with, over any number type
_KIT = SimpleNamespace(**PRIMITIVES, where=where)


def composite(name: str) -> Callable[..., Number]:
    """Composite ``name`` of the registry (``tang.expr.ops.COMPOSITES``) over any number
    type: its kernel for plain numbers, its graph for nodes, a number type's own method
    where it has one (Dual's tan, sigmoid, abs), else the formula over that type's math."""
    c, build = COMPOSITE_OPS[name], graph.COMPOSITE_BUILDERS[name]
    kernel, formula, method = c.kernel, c.formula, c.method

    def function(*args: Number) -> Number:
        for a in args:
            if not isinstance(a, _FLOATS):
                break
        else:
            return kernel(*args)
        for a in args:
            if not isinstance(a, _PLAIN):
                break
        else:
            return build(*args)
        own = getattr(args[0], method, None) if method else None
        return own(*args[1:]) if own is not None else formula(_KIT, *args)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = c.doc
    return function


COMPOSITES: dict[str, Callable[..., Any]] = {name: composite(name) for name in COMPOSITE_OPS}
