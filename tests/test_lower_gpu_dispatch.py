"""The GPU kernels' contract on lavapipe: 2-D dispatch past 65,535 workgroups, the bounds
check, and a clear error (not a crash) for a shader that does not validate."""

from __future__ import annotations

import pytest
import toolchains as tc

from tang.expr.graph import var
from tang.lower import lower
from tests.skips import skip_missing_tool

# Every test here runs a kernel on wgpu-py (GLSL through glslang).
pytestmark = pytest.mark.toolchain

x, y = var("x"), var("y")


@pytest.fixture(scope="module")
def gpu():
    if not tc.available("wgpu"):
        skip_missing_tool("wgpu", "wgpu-py has no adapter on this machine")


@pytest.mark.parametrize("backend", ["wgsl", "glsl"])
def test_two_dimensional_dispatch_covers_every_item(gpu, backend):
    """65,601 workgroups of 64 do not fit one dimension (limit 65,535): the kernel's index
    gid.x + gid.y * groups.x * 64 spreads them over (65535, 2, 1)."""
    np = pytest.importorskip("numpy")
    if backend == "glsl" and not tc.available("glslang"):
        skip_missing_tool("glslang", "glslangValidator is not installed")
    n = 65_535 * 64 + 4_100
    groups = tc.dispatch_size(n)
    assert groups == (65_535, 2, 1)
    xs = np.arange(n, dtype=np.float32) * np.float32(0.5)
    ys = np.float32(3.0) - np.arange(n, dtype=np.float32)
    text = lower([x * 2.0 + y, x], ["x", "y"], backend).source
    code = tc.glslang_compile(text) if backend == "glsl" else text
    entry = "main" if backend == "glsl" else "f"
    got = np.frombuffer(
        tc.run_wgpu(code, entry, xs.tobytes() + ys.tobytes(), n, 2, groups), np.float32
    )
    assert np.array_equal(got[:n], xs * np.float32(2.0) + ys)  # exact: one f32 rounding
    assert np.array_equal(got[n:], xs)


def test_items_past_n_are_not_written(gpu):
    """64 invocations for 3 items: the bounds check keeps the other 61 from writing."""
    text = lower([x + 1.0], ["x"], "wgsl").source
    got = tc.run_wgpu(text, "f", [1.0] * 64, 3, 1, groups=(1, 1, 1), spare=61)
    assert list(got) == [2.0] * 3 + [0.0] * 61


def test_invalid_shader_is_a_clear_error_and_the_device_survives(gpu):
    text = lower([x * y + 1.0], ["x", "y"], "wgsl").source
    broken = text.replace("let x = src[i];", "let x: u32 = src[i];")
    assert broken != text
    with pytest.raises(tc.ToolchainError) as info:
        tc.run_wgpu(broken, "f", [1.0, 2.0], 1, 1)
    message = str(info.value)
    line = broken.splitlines().index("    let x: u32 = src[i];") + 1
    assert f"wgsl:{line}:" in message and "u32" in message, message  # says where and what
    # the same device still runs a good kernel afterwards
    assert list(tc.run_wgpu(text, "f", [2.0, 3.0], 1, 1)) == [7.0]


@pytest.mark.parametrize("backend", ["wgsl", "glsl"])
def test_a_kernel_with_only_constant_outputs_runs(gpu, backend):
    """No input is read, yet binding 1 must stay in the layout (WGSL: ``_ = &src;``)."""
    if backend == "glsl" and not tc.available("glslang"):
        skip_missing_tool("glslang", "glslangValidator is not installed")
    text = lower([2.5, -0.0], [], backend).source
    code = tc.glslang_compile(text) if backend == "glsl" else text
    got = tc.run_wgpu(code, "main" if backend == "glsl" else "f", [0.0], 3, 2)
    assert list(got) == [2.5] * 3 + [-0.0] * 3
