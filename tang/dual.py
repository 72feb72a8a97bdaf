"""Dual numbers: a value and its slope, pushed through every operation (forward mode).

``Dual(v, t)`` stands for v + t·ε with ε² = 0, so f(v + t·ε) = f(v) + f'(v)·t·ε. Each
operation below computes its value and, next to it, the tangent: the incoming tangent times
the operation's local derivative (the tangent always stands on the left of that product).

- Several tangents at once: a ``Tangents`` tuple (one entry per direction) rides along in
  the same pass, so one evaluation yields several Jacobian columns.
- The parts may be any number: floats, graph nodes (a traced Dual: forward-over-reverse),
  or Duals (second derivatives).
- Perturbation levels keep nested derivatives apart: each ``Dual`` class has a ``level``
  and never holds a Dual of its own level or higher. When two levels meet, the higher one
  leads and the other is a constant to it. The transforms (``jvp``, ``derivative``, …) pick
  a level above every Dual they are given and above any transform still running.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import scalar as S
from .expr.graph import LN2, LOG2E, Node
from .expr.loop import register_carrier
from .expr.ops import COMPOSITES

_CONSTANTS = (int, float, Node)  # numbers without any perturbation


class Tangents(tuple):
    """Several tangents carried at once, one per direction: they add elementwise and scale
    by a number (which may itself be a node or a Dual)."""

    __slots__ = ()

    def __new__(cls, items: Iterable[Any] = ()) -> Tangents:
        return tuple.__new__(cls, items)

    def __add__(self, other: Any) -> Tangents:  # type: ignore[override]
        if isinstance(other, Tangents):
            if len(other) != len(self):
                raise ValueError(f"cannot add {len(self)} tangents to {len(other)}")
            return Tangents(map(operator.add, self, other))
        if isinstance(other, _CONSTANTS) and other == 0:
            return self  # a constant's zero tangent
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other: Any) -> Tangents:
        return self + -other

    def __rsub__(self, other: Any) -> Tangents:
        return -self + other

    def __neg__(self) -> Tangents:
        return Tangents(-t for t in self)

    def __mul__(self, factor: Any) -> Tangents:  # type: ignore[override]
        if isinstance(factor, Tangents):
            raise TypeError("tangents scale by numbers, not by other tangents")
        return Tangents(t * factor for t in self)

    __rmul__ = __mul__

    def __truediv__(self, divisor: Any) -> Tangents:
        return self * S.recip(divisor)

    def __repr__(self) -> str:
        return f"Tangents({list(self)!r})"


def level_of(*xs: Any) -> int:
    """The highest perturbation level among ``xs`` and their parts (-1 when none is a Dual)."""
    top = -1
    stack = list(xs)
    while stack:  # iterative: a Dual's parts may be Duals, or tuples of them
        x = stack.pop()
        if isinstance(x, Dual):
            top = x.level if x.level > top else top
        elif isinstance(x, (tuple, list)):
            stack.extend(x)
    return top


class Dual:
    """value + tangent·ε with ε² = 0. ``tangent`` may be a number, or a tuple/list of them for
    several directions at once; ``Dual(Dual(x, 1), 1)`` nests (the outer one gets a higher
    level)."""

    __slots__ = ("tangent", "value")
    level = 0

    def __init__(self, value: Any, tangent: Any = 0.0) -> None:
        if isinstance(tangent, (tuple, list)) and not isinstance(tangent, Tangents):
            tangent = Tangents(tangent)
        self.value = value
        self.tangent = tangent
        # Every Dual is an instance of its level's class, one level above any Dual inside it,
        # so the outer Dual always has the higher level.
        self.__class__ = level_class(level_of(value, tangent) + 1)

    # ---- arithmetic. Fast path: both operands carry the same ε (same class). ----------
    def __add__(a, b: Any) -> Any:  # d(a + b) = da + db
        cls = a.__class__
        if b.__class__ is cls:
            r = cls()
            r.value = a.value + b.value
            r.tangent = a.tangent + b.tangent
            return r
        if b.__class__ is float or _is_constant(b, cls):
            r = cls()
            r.value = a.value + b
            r.tangent = a.tangent
            return r
        return NotImplemented

    def __radd__(a, b: Any) -> Any:
        if b.__class__ is float or _is_constant(b, a.__class__):
            return _make(a, b + a.value, a.tangent)
        return NotImplemented

    def __sub__(a, b: Any) -> Any:  # d(a - b) = da - db
        cls = a.__class__
        if b.__class__ is cls:
            return _make(a, a.value - b.value, a.tangent - b.tangent)
        if _is_constant(b, cls):
            return _make(a, a.value - b, a.tangent)
        return NotImplemented

    def __rsub__(a, b: Any) -> Any:
        if _is_constant(b, a.__class__):
            return _make(a, b - a.value, -a.tangent)
        return NotImplemented

    def __mul__(a, b: Any) -> Any:  # d(a·b) = da·b + db·a
        cls = a.__class__
        if b.__class__ is cls:
            av, bv = a.value, b.value
            r = cls()
            r.value = av * bv
            r.tangent = a.tangent * bv + b.tangent * av
            return r
        if b.__class__ is float or _is_constant(b, cls):
            r = cls()
            r.value = a.value * b
            r.tangent = a.tangent * b
            return r
        return NotImplemented

    def __rmul__(a, b: Any) -> Any:
        if b.__class__ is float or _is_constant(b, a.__class__):
            return _make(a, b * a.value, a.tangent * b)
        return NotImplemented

    def __truediv__(a, b: Any) -> Any:  # d(a/b) = (da - db·(a/b)) / b
        cls = a.__class__
        if b.__class__ is cls:
            v = S.div(a.value, b.value)
            return _make(a, v, (a.tangent - b.tangent * v) * S.recip(b.value))
        if _is_constant(b, cls):
            return _make(a, S.div(a.value, b), a.tangent * S.recip(b))
        return NotImplemented

    def __rtruediv__(a, b: Any) -> Any:  # d(b/a) = -da·(b/a)/a
        if _is_constant(b, a.__class__):
            v = S.div(b, a.value)
            return _make(a, v, a.tangent * -S.div(v, a.value))
        return NotImplemented

    def __pow__(a, b: Any) -> Any:  # d(a^b) = da·b·a^(b-1) + db·a^b·ln a
        cls = a.__class__
        if b.__class__ is cls:
            v = S.pow(a.value, b.value)
            slope_a = b.value * S.pow(a.value, b.value - 1.0)
            return _make(a, v, a.tangent * slope_a + b.tangent * (v * S.log(a.value)))
        if _is_constant(b, cls):
            if isinstance(b, (int, float)) and b == 0:
                return _make(a, S.pow(a.value, 0.0), a.tangent * 0.0)  # x^0 = 1, flat
            return _make(a, S.pow(a.value, b), a.tangent * (b * S.pow(a.value, b - 1.0)))
        return NotImplemented

    def __rpow__(a, b: Any) -> Any:  # d(b^a) = da·b^a·ln b
        if _is_constant(b, a.__class__):
            v = S.pow(b, a.value)
            return _make(a, v, a.tangent * (v * S.log(b)))
        return NotImplemented

    def __neg__(a) -> Dual:  # d(-a) = -da
        return _make(a, -a.value, -a.tangent)

    def __pos__(a) -> Dual:
        return a

    def __abs__(a) -> Any:  # |a|' = -1 below 0, +1 from 0 up (like the graph's select)
        return S.where(S.lt(a.value, 0.0), -a, a)

    # ---- comparisons look at values only: the slope never changes the branch ---------
    def __lt__(a, b: Any) -> Any:
        return a.value < (b.value if isinstance(b, Dual) and b.level >= a.level else b)

    def __le__(a, b: Any) -> Any:
        return a.value <= (b.value if isinstance(b, Dual) and b.level >= a.level else b)

    def __gt__(a, b: Any) -> Any:
        return a.value > (b.value if isinstance(b, Dual) and b.level >= a.level else b)

    def __ge__(a, b: Any) -> Any:
        return a.value >= (b.value if isinstance(b, Dual) and b.level >= a.level else b)

    def __bool__(self) -> bool:
        raise TypeError("a Dual number has no truth value; compare it (x < 0) or use tang.where")

    # ---- the rich math of tang.scalar: value, and tangent × local derivative ----------
    def sin(a) -> Dual:  # sin' = cos
        return _make(a, S.sin(a.value), a.tangent * S.cos(a.value))

    def cos(a) -> Dual:  # cos' = -sin
        return _make(a, S.cos(a.value), a.tangent * -S.sin(a.value))

    def exp(a) -> Dual:  # exp' = exp
        v = S.exp(a.value)
        return _make(a, v, a.tangent * v)

    def exp2(a) -> Dual:  # (2^a)' = 2^a · ln 2
        v = S.exp2(a.value)
        return _make(a, v, a.tangent * (v * LN2))

    def log(a) -> Dual:  # log' = 1/a
        return _make(a, S.log(a.value), a.tangent * S.recip(a.value))

    def log2(a) -> Dual:  # log2' = 1/(a ln 2)
        return _make(a, S.log2(a.value), a.tangent * (S.recip(a.value) * LOG2E))

    def sqrt(a) -> Dual:  # sqrt' = 1/(2 sqrt a)
        v = S.sqrt(a.value)
        return _make(a, v, a.tangent * (0.5 * S.recip(v)))

    def recip(a) -> Dual:  # (1/a)' = -1/a²
        v = S.recip(a.value)
        return _make(a, v, a.tangent * -(v * v))

    def tanh(a) -> Dual:  # tanh' = 1 - tanh²
        v = S.tanh(a.value)
        return _make(a, v, a.tangent * (1.0 - v * v))

    # tan and sigmoid: the registry's composites with a slope rule, set below the class
    # from tang.expr.ops.COMPOSITES (tan' = 1 + tan², σ' = σ(1 − σ))
    tan: Callable[[Dual], Dual]
    sigmoid: Callable[[Dual], Dual]

    def floor(a) -> Dual:  # flat between the whole numbers
        return _make(a, S.floor(a.value), a.tangent * 0.0)

    # ---- the methods tang.expr.generic dispatches to (a new number type plugs in so) ----
    def atan2(a, x: Any) -> Any:
        """atan2(self, x): self is the y coordinate."""
        return atan2(a, x)

    def ratan2(a, y: Any) -> Any:
        """atan2(y, self): self is the x coordinate (y is not a Dual)."""
        return atan2(y, a)

    def eq(a, b: Any) -> Any:
        """a == b on values: Duals compare their values (nested ones in turn)."""
        return S.eq(a.value, b.value if isinstance(b, Dual) else b)

    @staticmethod
    def where(cond: Node, a: Any, b: Any) -> Any:
        """select over a traced condition, where a or b is a Dual."""
        return where(cond, a, b)

    def __repr__(self) -> str:
        level = f", level={self.level}" if self.level else ""
        return f"Dual({self.value!r}, {self.tangent!r}{level})"


def _composite_method(name: str) -> Any:
    """Dual's method for composite ``name`` of the registry: the value by tang's math, the
    tangent times the composite's ``slope`` at that value (tan' = 1 + tan²), one multiply
    where the formula's chain of primitives would take several."""
    function, slope = getattr(S, name), COMPOSITES[name].slope

    def method(a: Dual) -> Dual:
        v = function(a.value)
        return _make(a, v, a.tangent * slope(v))  # type: ignore[misc]

    method.__name__ = method.__qualname__ = name
    return method


for _name, _composite in COMPOSITES.items():
    if _composite.slope is not None:  # tan, sigmoid: Dual.tan, Dual.sigmoid
        setattr(Dual, _composite.method or _name, _composite_method(_name))
del _name, _composite


def _make(like: Dual, value: Any, tangent: Any) -> Any:
    """A Dual of ``like``'s level."""
    r = like.__class__()
    r.value = value
    r.tangent = tangent
    return r


def _is_constant(b: Any, cls: type[Dual]) -> bool:
    """True when ``b`` has no part along ``cls``'s ε (a number, a node, or a lower Dual)."""
    if isinstance(b, Dual):
        return b.level < cls.level
    return isinstance(b, _CONSTANTS)


_LEVELS: list[type[Dual]] = []


def level_class(level: int) -> type[Dual]:
    """The Dual class of perturbation ``level`` (one cached subclass per level). Its
    ``__init__`` is object's own, so ``cls()`` makes a blank Dual at C speed: arithmetic
    fills in the two slots (about 30% faster than ``object.__new__(cls)``)."""
    while len(_LEVELS) <= level:
        attrs = {
            "__slots__": (),
            "__init__": object.__init__,
            "level": len(_LEVELS),
            "__module__": __name__,
        }
        _LEVELS.append(type("Dual", (Dual,), attrs))
    return _LEVELS[level]


# ---------------------------------------------------------------------------------------
# operations with several operands, any of which may lead


def _lead(*xs: Any) -> type[Dual]:
    """The class of the highest-level Dual among ``xs``."""
    return level_class(level_of(*(x for x in xs if isinstance(x, Dual))))


def parts(x: Any, cls: type[Dual]) -> tuple[Any, Any]:
    """(value, tangent) of ``x`` along ``cls``'s ε; the tangent is None for a constant."""
    if x.__class__ is cls:
        return x.value, x.tangent
    return x, None


def atan2(y: Any, x: Any) -> Any:
    """atan2 where y or x is a Dual: ∂/∂y = x/(x²+y²), ∂/∂x = -y/(x²+y²)."""
    cls = _lead(y, x)
    yv, yt = parts(y, cls)
    xv, xt = parts(x, cls)
    inv = S.recip(xv * xv + yv * yv)
    tangent = None
    if yt is not None:
        tangent = yt * (xv * inv)
    if xt is not None:
        term = xt * -(yv * inv)
        tangent = term if tangent is None else tangent + term
    r = cls()
    r.value = S.atan2(yv, xv)
    r.tangent = tangent
    return r


def where(cond: Node, a: Any, b: Any) -> Any:
    """select over a traced condition: the value and each tangent are selected alike."""
    cls = _lead(a, b)
    av, at = parts(a, cls)
    bv, bt = parts(b, cls)
    if isinstance(at, Tangents) or isinstance(bt, Tangents):
        n = len(at if isinstance(at, Tangents) else bt)
        at = Tangents([0.0] * n) if at is None else at
        bt = Tangents([0.0] * n) if bt is None else bt
        tangent: Any = Tangents(map(S.where, [cond] * n, at, bt))
    else:
        tangent = S.where(cond, 0.0 if at is None else at, 0.0 if bt is None else bt)
    r = cls()
    r.value = S.where(cond, av, bv)
    r.tangent = tangent
    return r


# ---------------------------------------------------------------------------------------
# seeding and reading perturbations, for the transforms

_running = [0]  # the highest level a transform is using right now


@contextlib.contextmanager
def perturbation(*inputs: Any) -> Iterator[type[Dual]]:
    """A fresh Dual class for one transform: above every Dual in ``inputs`` and above every
    transform still running (so derivatives of derivatives never confuse their ε)."""
    saved = _running[0]
    level = max(saved, level_of(*inputs)) + 1
    _running[0] = level
    try:
        yield level_class(level)
    finally:
        _running[0] = saved


def plain_level() -> type[Dual]:
    """The Dual class ``perturbation()`` picks for plain-number inputs, without entering it:
    for a hot loop whose function runs no transform of its own (each call would otherwise pay
    for the context manager)."""
    return level_class(_running[0] + 1)


def seed(cls: type[Dual], value: Any, tangent: Any) -> Dual:
    """value + tangent·ε at ``cls``'s level (a tuple tangent carries several directions)."""
    if isinstance(tangent, (tuple, list)) and not isinstance(tangent, Tangents):
        tangent = Tangents(tangent)
    r = cls()
    r.value = value
    r.tangent = tangent
    return r


def split(out: Any, cls: type[Dual], zero: Any = 0.0) -> tuple[Any, Any]:
    """(value, tangent) of a result along ``cls``'s ε; ``zero`` for a constant result."""
    if isinstance(out, Dual) and out.level > cls.level:
        raise ValueError("a Dual number escaped from the function it was made in")
    value, tangent = parts(out, cls)
    return value, zero if tangent is None else tangent


# ---------------------------------------------------------------------------------------
# Duals and tangents as loop state (tang.fori_loop carries them through a traced loop)


def _static_zero(t: Any) -> bool:
    return t is None or (isinstance(t, (int, float)) and t == 0)


def _dual_parts(d: Dual) -> tuple[tuple[type[Dual], bool], tuple[Any, ...]]:
    """A Dual's (kind, parts): a zero tangent is no part (it stays a constant 0 while the
    loop body is traced, so it meets tangents of any shape), else (value, tangent)."""
    if _static_zero(d.tangent):
        return (d.__class__, False), (d.value,)
    return (d.__class__, True), (d.value, d.tangent)


def _build_dual(kind: tuple[type[Dual], bool], parts: list[Any]) -> Dual:
    r = kind[0]()
    r.value, r.tangent = (parts[0], parts[1] if kind[1] else 0.0)
    return r


def _constant_of(kind: tuple[type[Dual], bool], x: Any) -> tuple[Any, ...] | None:
    """The parts of ``x`` as a Dual of ``kind`` holding it as a constant; None when x has a
    part along that ε or a higher one."""
    cls, tangent = kind
    if isinstance(x, Dual) and x.level >= cls.level:
        if x.__class__ is not cls or not _static_zero(x.tangent):
            return None
        x = x.value
    return (x, 0.0) if tangent else (x,)


def _zero_tangents(n: int, x: Any) -> tuple[Any, ...] | None:
    return (0.0,) * n if isinstance(x, (int, float)) and x == 0 else None


register_carrier(Dual, _dual_parts, _build_dual, _constant_of)
register_carrier(Tangents, lambda t: (len(t), tuple(t)), lambda n, c: Tangents(c), _zero_tangents)
