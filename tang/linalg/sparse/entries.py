"""What the sparse code needs to know about an entry of any number type: whether it is a
structural zero, its float value (for stopping tests and pivot checks), and dot products."""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable
from typing import Any

from ...dual import Dual

Number = Any  # float | tang.Dual | tang.Node | anything with + - * /


def is_zero(x: Any) -> bool:
    """True only for a plain real number equal to 0: a Dual or a traced node is always kept
    (a Dual(0, 1) carries a slope, a node has no value while tracing)."""
    return isinstance(x, numbers.Real) and x == 0


def real_value(x: Any) -> float | None:
    """The float under ``x`` (a Dual's value, nested ones in turn), or None for a traced node,
    whose value is not known while tracing."""
    while isinstance(x, Dual):
        x = x.value
    if isinstance(x, numbers.Real):
        return float(x)
    return None


def components(x: Any) -> list[float] | None:
    """Every float part of ``x``: the value and each tangent (of each direction, nested
    Duals in turn); None when some part is a traced node. Two entries are equal as numbers
    with slopes only when all their components are."""
    out: list[float] = []
    stack = [x]
    while stack:
        y = stack.pop()
        if isinstance(y, Dual):
            stack.append(y.tangent)
            stack.append(y.value)
        elif isinstance(y, (tuple, list)):
            stack.extend(reversed(y))
        elif isinstance(y, numbers.Real):
            out.append(float(y))
        else:
            return None
    return out


if hasattr(math, "sumprod"):  # 3.12+: one C loop (generic types fall back to + and *)
    _sumprod = math.sumprod  # type: ignore[attr-defined]

    def dot(a: Iterable[Number], b: Iterable[Number]) -> Number:
        """Σ aᵢbᵢ over equally long sequences (0 for empty ones)."""
        return _sumprod(a, b)

else:  # 3.11

    def dot(a: Iterable[Number], b: Iterable[Number]) -> Number:
        """Σ aᵢbᵢ over equally long sequences (0 for empty ones)."""
        return sum(map(operator.mul, a, b))


def vector(x: Any, n: int, name: str) -> list[Number]:
    """``x`` as a list of length ``n``, or a clear error (a matrix, a scalar, a wrong length)."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__"):
        raise TypeError(f"{name} must be a vector (a list of numbers), not {type(x).__name__}")
    if len(x) != n:
        raise ValueError(f"{name} has length {len(x)}, but {n} entries are needed")
    out = list(x)
    if out and isinstance(out[0], (list, tuple)):
        raise TypeError(f"{name} must be a vector (a list of numbers), not a list of lists")
    return out


def value_norm(xs: Iterable[Number]) -> float:
    """The 2-norm of the float values of ``xs`` (slopes ignored); nan if one is a node."""
    total = 0.0
    for x in xs:
        v = real_value(x)
        if v is None:
            return math.nan
        total += v * v
    return math.sqrt(total)
