"""The browser backend's Device API from Python inside Pyodide (through the test-only page,
which runs Python source; the shipped page never does): buffers, cached pipelines, 2-D
dispatch, and each bad input as a tang error after which the CPU device takes over."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ADAPTERS, BOOT_TIMEOUT_MS, PyRunner


def runner(launch, site, args=(), env=None) -> PyRunner:
    context = launch(args=args, env=env)
    page = context.pages[0] if context.pages else context.new_page()
    page.goto(site.url + "_test/index.html")
    page.wait_for_function(
        "window.tang?.harness && window.tang.harness.state !== 'booting'", timeout=BOOT_TIMEOUT_MS
    )
    assert page.evaluate("window.tang.harness.state") == "ready", page.evaluate(
        "window.tang.harness.error"
    )
    return PyRunner(page)


# The native tests' WGSL helper, sent as source text so both sides run the same kernels.
WGSL_KERNELS = Path(__file__).resolve().parent.parent / "tests" / "wgsl_kernels.py"
PRELUDE = (
    WGSL_KERNELS.read_text()
    + """
import tang.gpu as gpu

dev = await gpu.device_async("browser", fallback=False)
"""
)

DEVICE_API = (
    PRELUDE
    + '''
from array import array
out = {"name": dev.name, "report": dev.report, "limits": dev.limits.as_dict()}

k = await dev.kernel_async(elementwise("x0[i] * x0[i] + 1.0"))
x, y = dev.buffer(array("d", [0.5, -1.0, 2.0])), dev.empty(3)
out["array"] = list(await dev.run_async(k, [x, y, 3], 3, out=y))
x = dev.buffer(memoryview(array("f", [3.0, 4.0, 5.0])))
out["memoryview"] = list(await dev.run_async(k, [x, y, 3], 3, out=y))
again = await dev.kernel_async(elementwise("x0[i] * x0[i] + 1.0"))
out["cached"] = again is k and dev.compiles == 1

# the blocking spellings work where Pyodide can wait on a promise (JSPI), else they say
# which awaitable spelling to use
try:
    out["sync_read"] = list(dev.read(y))
except gpu.GPUError as e:
    out["sync_read"] = str(e)

# more than 65,535 workgroups: spread over y, every item visited exactly once
wg = 64
n = 65535 * wg + 1000
src = f"""
@group(0) @binding(0) var<storage, read_write> y: array<u32>;
@group(0) @binding(1) var<uniform> n: u32;
@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + gid.y * (nwg.x * {wg}u);
    if (i >= n) {{ return; }}
    y[i] = y[i] + i + 1u;
}}
"""
big = dev.empty(n + 64, "u32")
got = await dev.run_async(await dev.kernel_async(src), [big, n], n, out=big)
out["grid"] = gpu.grid(n, wg, dev.limits.max_workgroups_per_dimension)
out["visited_once"] = got[:n] == array("I", range(1, n + 1)) and not any(got[n:])

# several dispatches recorded into one command buffer: the results of separate submits
import contextlib

async def chain(batched):
    double = await dev.kernel_async(elementwise("x0[i] * 2.0 + 1.0"))
    add = await dev.kernel_async(elementwise("x0[i] + x1[i]", inputs=2))
    a, b, c = dev.buffer([0.5, -1.0, 2.0]), dev.empty(3), dev.empty(3)
    before = dev.submits
    with dev.batch() if batched else contextlib.nullcontext():
        dev.dispatch(double, [a, b, 3], 3)
        dev.dispatch(add, [b, a, c, 3], 3)
        dev.write(a, [1.0, 1.0, 1.0])  # after the two above, before the one below
        dev.dispatch(add, [c, a, b, 3], 3)
    values = list(await dev.read_async(b)) + list(await dev.read_async(c))
    return [values, dev.submits - before]

out["batch"] = [*(await chain(False)), *(await chain(True))]
out
'''
)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_device_api_in_the_worker(launch, site, adapter):
    out = runner(launch, site, *ADAPTERS[adapter]).run(DEVICE_API)
    assert out["report"][0].startswith("using browser:")
    assert out["array"] == [1.25, 2.0, 5.0]
    assert out["memoryview"] == [10.0, 17.0, 26.0]
    assert out["cached"] is True
    sync = out["sync_read"]
    assert sync == [10.0, 17.0, 26.0] or "use 'await dev.read_async(buf)'" in sync
    assert out["grid"][1] == 2 and out["visited_once"] is True
    # b = 2a + 1, c = b + a, a = 1, b = c + 1: one submit per dispatch, or one per batch
    # piece (the write submits what was recorded before it)
    want = [3.5, -1.0, 8.0, 2.5, -2.0, 7.0]
    assert out["batch"] == [want, 3, want, 2]
    # the device was opened with the adapter's limits, not compatibility mode's defaults
    assert out["limits"]["storage_buffers_per_stage"] > 4
    assert out["limits"]["max_invocations_per_workgroup"] > 128


BAD_INPUT = (
    PRELUDE
    + """
import dataclasses
from tang.compile import expression_plan
from tang.gpu.batch import evaluate_async, sample_points

out = {}
p = expression_plan("sin(x*y) + x^2", grad=True)
pts = sample_points(p.inputs, 2000)
want = (await evaluate_async(p, pts, device="cpu")).columns

def same(batch):
    return all(a == b for a, b in zip(batch.columns, want))

# 1. a kernel that fails WGSL validation: the compiler's reason, with line and column
bad = elementwise("x0[i] * ")
line = bad.splitlines().index("    y[i] = x0[i] * ;") + 1
try:
    await dev.kernel_async(bad)
except gpu.ShaderError as e:
    out["syntax"] = [type(e).__name__, e.line - line, e.column, e.reason]
try:
    await dev.kernel_async(elementwise("x0[i] + 1u"))
except gpu.ShaderError as e:
    out["types"] = [type(e).__name__, e.line - line, str(e)]

# 2. limits: more storage buffers than the device has; a workgroup too big; points whose
#    packed buffer exceeds the binding size (checked before anything is allocated)
k = dev.limits.storage_buffers_per_stage
try:
    await dev.kernel_async(elementwise(" + ".join(f"x{j}[i]" for j in range(k)), inputs=k))
except gpu.LimitError as e:
    out["buffers"] = [e.limit, e.asked, e.allowed]
try:
    await dev.kernel_async(elementwise("x0[i]", wg=2 * dev.limits.max_invocations_per_workgroup))
except gpu.LimitError as e:
    out["workgroup"] = e.limit
huge = dev.limits.max_storage_binding_size // 8 + 1   # two inputs: one too many bytes
try:
    await evaluate_async(p, {"x": range(huge), "y": range(huge)}, device=dev)
except gpu.LimitError as e:
    out["binding"] = [e.limit, e.asked, e.allowed]
# ... and the same error with fallback: the CPU computes the batch (a tang-enforced limit,
# lowered so that a small batch exceeds it)
dev.limits, saved = dataclasses.replace(dev.limits, max_storage_binding_size=4096), dev.limits
batch = await evaluate_async(p, pts, device=dev, fallback=True)
dev.limits = saved
out["binding_fallback"] = [batch.device, batch.fallback, same(batch)]

# 3. the GPU answers again after all that
batch = await evaluate_async(p, pts, device=dev)
on_cpu = await evaluate_async(p, pts, device="cpu")
out["gpu_after"] = [batch.device, batch.checksum(), on_cpu.checksum()]

# 4. a device lost behind tang's back (as a driver reset would): a tang error, then the
#    CPU with the reason, and device_async() opens a fresh device
dev._dev.destroy()
import asyncio
await asyncio.sleep(0.05)   # the lost promise settles
try:
    await evaluate_async(p, pts, device=dev)
except gpu.DeviceLostError as e:
    out["lost"] = str(e)
batch = await evaluate_async(p, pts, device=dev, fallback=True)
out["lost_fallback"] = [batch.device, batch.fallback, same(batch)]
fresh = await gpu.device_async()
out["fresh"] = [fresh is not dev, fresh.kind, (await evaluate_async(p, pts, device=fresh)).device]
out
"""
)


def test_bad_input_gives_tang_errors_and_the_cpu_takes_over(launch, site):
    out = runner(launch, site, *ADAPTERS["swiftshader"]).run(BAD_INPUT)
    name, line, column, reason = out["syntax"]
    assert name == "ShaderError" and line == 0 and column > 0 and "parse" in reason
    assert out["types"][0] == "ShaderError" and out["types"][1] == 0  # the same line
    assert "operator +" in out["types"][2]
    limit, asked, allowed = out["buffers"]
    assert limit == "maxStorageBuffersPerShaderStage" and asked == allowed + 1
    assert out["workgroup"].startswith("maxCompute")
    limit, asked, allowed = out["binding"]
    assert limit == "maxStorageBufferBindingSize" and asked > allowed
    device, reason, same = out["binding_fallback"]
    assert device == "cpu" and same is True
    assert reason.startswith("browser: the packed inputs (src) needs maxStorageBufferBindingSize")
    device, on_gpu, on_cpu = out["gpu_after"]
    assert device == "browser" and on_gpu == pytest.approx(on_cpu, rel=1e-4)
    assert "browser device lost" in out["lost"]
    device, reason, same = out["lost_fallback"]
    assert device == "cpu" and "device lost" in reason and same is True
    assert out["fresh"] == [True, "browser", "browser"]


INF_AND_NAN = (
    PRELUDE
    + """
import math
from tang.compile import expression_plan
from tang.gpu.batch import evaluate_async

# tang's WGSL reads inf and nan from private variables: Chromium's compiler rejects a
# constant bit cast to inf (tang.lower.wgsl.SPECIAL_VALUES)
p = expression_plan("where(x > 0, x, -inf) + min(x, inf)", grad=False)
pts = {"x": [-2.0, -0.5, 0.0, 0.5, 3.0]}
gpu_cols = (await evaluate_async(p, pts, device=dev)).columns
cpu_cols = (await evaluate_async(p, pts, device="cpu")).columns
out = {"gpu": [[repr(v) for v in c] for c in gpu_cols],
       "cpu": [[repr(v) for v in c] for c in cpu_cols]}
out
"""
)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_kernel_with_inf_compiles_and_runs_in_chromium(launch, site, adapter):
    out = runner(launch, site, *ADAPTERS[adapter]).run(INF_AND_NAN)
    assert out["gpu"] == out["cpu"], out
    assert out["cpu"][0][:2] == ["-inf", "-inf"]
