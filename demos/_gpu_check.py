"""The Run panel's check of a GPU's f32 results against tang's CPU path: one tolerance model.

A point matches when |gpu − cpu| ≤ ATOL + RTOL·|cpu|. A point outside it is *explained*
(not hidden) when one of two known causes accounts for it, and the verdict says which:

* ``singular``: f is ill-conditioned there (near a pole, or where terms cancel). Rounding x
  by half an f32 ulp alone moves f by |x·f′(x)|·u (u = 2⁻²⁴); a kernel that rounds a few
  times may be off by CONDITION_ROUNDINGS times that, plus |f|·u per rounding.
* ``adapter``: the adapter's own math, e.g. SwiftShader's sin/cos (about 2e-4 absolute; the
  page's Run card explains it below its check), when the expression uses them: within
  ADAPTER_MATH·(1 + |cpu|).
* ``indeterminate``: the CPU's value is NaN (log or sqrt of a negative number, 0/0) and the
  GPU's is something else: WGSL (like Vulkan) leaves such results undefined, so a GPU may
  return any value there. Any other inf/NaN on one side only is a real difference.

The check is made per chunk here and merged by the page (``merge``, mirrored in run.js).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from tang.ieee import json_number

ATOL = 1e-5
RTOL = 1e-5  # about 80 f32 ulps
F32_U = 2.0**-24  # f32 unit roundoff
CONDITION_ROUNDINGS = 16
# adapter name (lower case, as a substring) → (ops whose results it gets wrong, absolute error)
ADAPTER_MATH: dict[str, tuple[frozenset[str], float]] = {
    "swiftshader": (frozenset({"sin", "cos"}), 5e-4),
}


def adapter_math(device_name: str, ops: set[str]) -> tuple[str, float] | None:
    """(adapter, error) when ``device_name``'s own math is known to be off for one of ``ops``."""
    name = device_name.lower()
    for adapter, (bad_ops, error) in ADAPTER_MATH.items():
        if adapter in name and ops & bad_ops:
            return adapter, error
    return None


def check(
    xs: Sequence[float],
    got: Sequence[array],
    want: Sequence[array],
    names: Sequence[str],
    adapter: tuple[str, float] | None = None,
    slope: Callable[[int, float], float] | None = None,
) -> dict[str, Any]:
    """Compare the device's columns ``got`` with the CPU's ``want`` at the points ``xs`` (the
    axis). Column 0 is f, column 1 its derivative along the axis (the slope of column 0).
    ``slope(k, x)``: the exact ∂(column k)/∂x (dual numbers), asked only of points outside
    the tolerance; without it, neighbours' difference quotients stand in."""
    out = {
        "atol": ATOL,
        "rtol": RTOL,
        "points": 0,
        "outside": 0,
        "singular": 0,
        "adapter": 0,
        "unexplained": 0,
        "nonfinite_mismatch": 0,
        "indeterminate": 0,
        "max_abs": 0.0,
        "max_rel": 0.0,
        "worst": None,
        "example": None,  # the first point where only one side is finite: {x, output, gpu, cpu}
        "adapter_name": adapter[0] if adapter else None,
        "adapter_tol": adapter[1] if adapter else None,  # its points: ≤ this·(1 + |cpu|)
    }
    worst_ratio = -1.0
    n = len(xs)
    for k, (g_col, c_col) in enumerate(zip(got, want, strict=True)):
        for i in range(n):
            g, c = g_col[i], c_col[i]
            if not (math.isfinite(g) and math.isfinite(c)):
                if c != c and g == g:  # WGSL: undefined where the CPU says NaN
                    out["indeterminate"] += 1
                elif not (g == c or (g != g and c != c)):  # nan vs nan and inf vs inf agree
                    out["nonfinite_mismatch"] += 1
                else:
                    continue
                if out["example"] is None:
                    out["example"] = {
                        "x": xs[i],
                        "output": names[k],
                        "gpu": json_number(g),
                        "cpu": json_number(c),
                    }
                continue
            out["points"] += 1
            d = abs(g - c)
            a = abs(c)
            out["max_abs"] = max(out["max_abs"], d)
            if a > 0.0:
                out["max_rel"] = max(out["max_rel"], d / a)
            ratio = d / (ATOL + RTOL * a)
            if ratio > worst_ratio:
                worst_ratio = ratio
                out["worst"] = {"x": xs[i], "output": names[k], "gpu": g, "cpu": c, "ratio": ratio}
            if ratio <= 1.0:
                continue
            out["outside"] += 1
            s = _slope(want, k, xs, i) if slope is None else _exact(slope, k, xs[i], want, xs, i)
            bound = CONDITION_ROUNDINGS * F32_U * (abs(xs[i] * s) + a)
            if d <= bound:
                out["singular"] += 1
            elif adapter and d <= adapter[1] * (1.0 + a):
                out["adapter"] += 1
            else:
                out["unexplained"] += 1
    if out["worst"]:
        out["worst"] = {
            k: json_number(v) if isinstance(v, float) else v for k, v in out["worst"].items()
        }
    out["verdict"] = verdict(out)
    out["matches"] = out["verdict"] == "matches"
    return out


def _exact(
    slope: Callable[[int, float], float], k: int, x: float, want: Sequence[array], xs, i: int
) -> float:
    try:
        s = slope(k, x)
    except (ArithmeticError, ValueError, TypeError):
        s = math.nan
    return s if math.isfinite(s) else _slope(want, k, xs, i)


def _slope(want: Sequence[array], k: int, xs: Sequence[float], i: int) -> float:
    """∂(column k)/∂x at point i: the CPU's derivative column for f, and for the derivative
    a difference quotient of its neighbours (the largest of the two sides: the cautious one)."""
    if k == 0 and len(want) > 1 and math.isfinite(want[1][i]):
        return want[1][i]
    col = want[k]
    best = 0.0
    for j in (i - 1, i + 1):
        if 0 <= j < len(xs) and xs[j] != xs[i] and math.isfinite(col[j]):
            best = max(best, abs((col[j] - col[i]) / (xs[j] - xs[i])))
    return best


def verdict(c: dict[str, Any]) -> str:
    """ "matches" (every point within the tolerance), "explained" (the rest all explained), or
    "differs"."""
    if c["unexplained"] or c["nonfinite_mismatch"]:
        return "differs"
    return "explained" if c["outside"] or c["indeterminate"] else "matches"


COUNTS = (
    "points",
    "outside",
    "singular",
    "adapter",
    "unexplained",
    "nonfinite_mismatch",
    "indeterminate",
)


def merge(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Two chunks' checks as one (what the page does in run.js)."""
    if a is None:
        return dict(b)
    out = dict(a)
    for key in COUNTS:
        out[key] = a[key] + b[key]
    out["max_abs"] = max(a["max_abs"], b["max_abs"])
    out["max_rel"] = max(a["max_rel"], b["max_rel"])
    if b["worst"] and (not a["worst"] or b["worst"]["ratio"] > a["worst"]["ratio"]):
        out["worst"] = b["worst"]
    out["example"] = a["example"] or b["example"]
    out["verdict"] = verdict(out)
    out["matches"] = out["verdict"] == "matches"
    return out
