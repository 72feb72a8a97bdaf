"""Worker methods ``gpu.*``: the page's door to tang.gpu (WebGPU in the worker, else CPU).

    gpu.info      {device}                       the device chosen and why others were skipped
    gpu.evaluate  {expr, grad, points, ...}      value (+ gradient) over N points, one call
    gpu.reset     {}                             destroy the GPU device; the next call opens anew

Every GPU failure (no adapter, a kernel the driver rejects, a limit, a lost device) comes
back as a reason the page can show, and with ``fallback`` the CPU computes the same numbers.
Numbers that JSON cannot hold travel as the strings "nan", "inf" and "-inf".
"""

from __future__ import annotations

from typing import Any

import tang.gpu as gpu
from demos.api import handler
from demos.common import device_choice, json_number
from tang.compile import expression_plan
from tang.gpu.batch import evaluate_async, sample_points

MAX_POINTS = 1 << 24  # what a page may ask for (16.7M points; the GPU holds more)


@handler("gpu.info")
async def info(device: str = "auto") -> dict[str, Any]:
    """The device tang would use, its limits, and each backend skipped with the reason."""
    dev = await gpu.device_async(device_choice(device))
    return dev.describe()


@handler("gpu.evaluate")
async def evaluate(
    expr: str,
    grad: bool = True,
    points: int = 1 << 16,
    lo: float = -2.0,
    hi: float = 2.0,
    device: str = "auto",
    fallback: bool = True,
    sample: int = 16,
) -> dict[str, Any]:
    """``expr`` (and its gradient) at ``points`` deterministic points in [lo, hi) per input.
    Returns the device used, timings, a checksum and ``sample`` evenly spaced points."""
    if not isinstance(points, int) or not 1 <= points <= MAX_POINTS:
        raise ValueError(f"points must be an integer from 1 to {MAX_POINTS:,}, got {points!r}")
    p = expression_plan(expr, grad)
    pts = sample_points(p.inputs, points, float(lo), float(hi))
    choice = device_choice(device)
    dev = await gpu.device_async(choice, fallback=fallback or choice is None)
    batch = await evaluate_async(p, pts, device=dev, fallback=fallback, n=points)
    k = max(0, min(int(sample), points, 1000))
    index = [i * points // k for i in range(k)] if k else []
    return {
        **batch.summary(),
        "checksum": json_number(batch.checksum()),
        "inputs": list(p.inputs),
        "device_info": {"kind": dev.kind, "name": dev.name, "report": dev.report},
        "sample": {
            "index": index,
            "points": {name: [pts[name][i] for i in index] for name in p.inputs},
            "outputs": [[json_number(col[i]) for i in index] for col in batch.columns],
        },
    }


@handler("gpu.reset")
def reset() -> dict[str, Any]:
    """Destroy the open GPU device (freeing its memory); the next call opens a fresh one."""
    return {"released": gpu.release()}
