"""A device's copy bandwidth, measured by a kernel that reads and writes every element once:
the yardstick for memory-bound work (a decode step streams every weight once, so its speed
of light is the copy bandwidth over the bytes it reads). The kernel is written by hand in
WGSL: it measures the adapter, not tang's code generation.

    gbs = await copy_bandwidth_async(dev)   # the page (WebGPU)
    gbs = copy_bandwidth(dev)               # wgpu-py
"""

from __future__ import annotations

import time
from typing import Any

WGSL_COPY = """
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(64)
fn run(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) g: vec3<u32>) {
    let i = gid.x + gid.y * g.x * 64u;
    if (i >= arrayLength(&y)) { return; }
    y[i] = x[i];
}
"""
ELEMENTS = 1 << 22  # f32 elements each way: 16 MiB, past the caches of the adapters seen here
ROUNDS = 8  # copies per timing, so the read-back's latency is a small part of it


async def copy_bandwidth_async(dev: Any, elements: int = ELEMENTS, repeat: int = 3) -> float:
    """GB/s (bytes read + written) copying ``elements`` f32 on ``dev`` (a WGSL device):
    the best of ``repeat`` timings of ROUNDS copies, each from the first dispatch to the
    read-back of a marker written after the last."""
    x, y = dev.empty(elements), dev.empty(elements)
    marker = dev.empty(4)
    copy = await dev.kernel_async(WGSL_COPY)
    try:
        best = float("inf")
        for k in range(repeat + 1):  # the first compiles and pages in: not timed
            start = time.perf_counter()
            for _ in range(ROUNDS):
                dev.dispatch(copy, [x, y], elements // 4)
            dev.dispatch(copy, [y, marker], 1)  # queued after the copy: its read waits for both
            await dev.read_async(marker)
            if k:
                best = min(best, time.perf_counter() - start)
        return 8 * elements * ROUNDS / best / 1e9
    finally:
        for buf in (x, y, marker):
            buf.release()


def copy_bandwidth(dev: Any, elements: int = ELEMENTS, repeat: int = 3) -> float:
    """``copy_bandwidth_async`` where reads block (wgpu-py)."""
    import asyncio

    return asyncio.run(copy_bandwidth_async(dev, elements, repeat))


__all__ = ["ELEMENTS", "WGSL_COPY", "copy_bandwidth", "copy_bandwidth_async"]
