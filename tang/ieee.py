"""Float kernels with IEEE-754 semantics: they return inf/nan where ``math`` would raise.

The graph's constant folding, its evaluator and the plain-float path of ``tang.sin`` & co.
all use these, so a value is the same whichever number type computed it.
"""

from __future__ import annotations

import math
from math import floor as _floor

INF = math.inf
NAN = math.nan


def recip(a: float) -> float:
    """1/a, with 1/±0 = ±inf."""
    if a == 0.0:
        return math.copysign(INF, a)
    return 1.0 / a


def sqrt(a: float) -> float:
    """Square root; nan below zero (keeps -0.0)."""
    if a < 0.0:
        return NAN
    return math.sqrt(a) if a == a else NAN


def floor(a: float) -> float:
    """The largest whole number ≤ a, as a float (inf and nan pass through)."""
    try:  # no finiteness test first: the CPU device's kernels call this per element
        return float(_floor(a))
    except (OverflowError, ValueError):  # ±inf, nan
        return a


def sin(a: float) -> float:
    """Sine; nan for ±inf."""
    return math.sin(a) if math.isfinite(a) else NAN


def cos(a: float) -> float:
    """Cosine; nan for ±inf."""
    return math.cos(a) if math.isfinite(a) else NAN


def exp2(a: float) -> float:
    """2**a; overflows to inf."""
    try:
        return math.pow(2.0, a)
    except OverflowError:
        return INF


def exp(a: float) -> float:
    """e**a; overflows to inf."""
    try:
        return math.exp(a)
    except OverflowError:
        return INF


def log(a: float) -> float:
    """Natural logarithm; -inf at 0, nan below 0."""
    if a != a or a < 0.0:
        return NAN
    if a == 0.0:
        return -INF
    return math.log(a)


def log2(a: float) -> float:
    """Base-2 logarithm; -inf at 0, nan below 0."""
    if a != a or a < 0.0:
        return NAN
    if a == 0.0:
        return -INF
    return math.log2(a)


# math's own where it never raises (±1 at ±inf; nan in, nan out): no wrapper to call per
# element in the Python kernels
tanh = math.tanh
atan2 = math.atan2  # angle of (x, y)


def div(a: float, b: float) -> float:
    """a/b with IEEE results for b = 0."""
    if b == 0.0:
        if a != a or a == 0.0:
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)
    return a / b


def mul(a: float, b: float) -> float:
    """a*b (Python floats already follow IEEE here; named for the dispatch table)."""
    return a * b


def json_number(v: float) -> float | str:
    """A float for JSON: NaN and infinities, which JSON lacks, as "nan", "inf", "-inf"."""
    if v != v:
        return "nan"
    if v in (INF, -INF):
        return "inf" if v > 0 else "-inf"
    return v
