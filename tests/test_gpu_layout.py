"""tang.gpu's pure-Python pieces: packing data into buffers, reading WGSL declarations,
sizing dispatch grids, and choosing a device (no GPU needed)."""

from __future__ import annotations

import sys
from array import array

import pytest

import tang.gpu as gpu
from tang.gpu import data, wgsl_info
from tang.gpu.base import grid, source_key
from tang.gpu.native_c import find_compiler

# what device() adds to its skipped list on a machine without a C compiler
NO_CC = (
    []
    if find_compiler()
    else [("compiled C", "no C compiler on PATH (cc, gcc or clang; or set CC)")]
)

# ---- data ----


def test_pack_list_and_arrays():
    raw = data.pack([1, 2.5, -3])
    assert data.to_array(raw, "f32").tolist() == [1.0, 2.5, -3.0]
    a = array("f", [1.0, 2.0])
    view = data.pack(a)
    assert view.obj is a  # the same memory: no copy for a matching array
    assert data.to_array(data.pack(array("d", [0.5, 1.5])), "f32").tolist() == [0.5, 1.5]
    assert data.to_array(data.pack(memoryview(a)), "f32").tolist() == [1.0, 2.0]
    assert data.to_array(data.pack(bytes(8)), "f32").tolist() == [0.0, 0.0]
    assert data.to_array(data.pack((i for i in range(3)), "u32"), "u32").tolist() == [0, 1, 2]
    assert data.to_array(data.pack([-5, 7], "i32"), "i32").tolist() == [-5, 7]


def test_pack_numpy_converts_and_flattens():
    np = pytest.importorskip("numpy")
    m = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert data.to_array(data.pack(m), "f32").tolist() == [0, 1, 2, 3, 4, 5]
    f = np.ones(4, dtype=np.float32)
    assert data.pack(f).nbytes == 16
    with pytest.raises(gpu.DataError, match="complex"):
        data.pack(np.ones(2, dtype=complex))


@pytest.mark.parametrize(
    ("bad", "dtype", "message"),
    [
        ([1.0, 2.0, "x"], "f32", r"element 2 is 'x' \(str\), not a number"),
        ([1.0, None], "f32", "element 1 is None"),
        ([True], "f32", "element 0 is True"),
        ([0, -1], "u32", "element 1 = -1 does not fit u32"),
        ([2**31], "i32", "does not fit i32"),
        ([1.5], "u32", "element 0 is 1.5, not an integer"),
        ("abc", "f32", "got a string"),
        (3.0, "f32", "got one number"),
        (object(), "f32", "got object"),
        (bytes(6), "f32", "6 raw bytes"),
        ([1.0], "f64", "unknown dtype 'f64'"),
    ],
)
def test_pack_rejects_bad_data_with_the_position(bad, dtype, message):
    with pytest.raises(gpu.DataError, match=message):
        data.pack(bad, dtype)


def test_data_error_is_a_value_error_and_a_gpu_error():
    assert issubclass(gpu.DataError, ValueError) and issubclass(gpu.DataError, gpu.GPUError)


# ---- WGSL declarations ----

KERNEL = """
// a comment with @group(9) @binding(9) var<storage> fake: array<f32>;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@binding(1) @group(0)
var<storage, read_write> y : array<f32>;
/* block
   comment */
@group(0) @binding(2) var<uniform> n: u32;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { }
@compute @workgroup_size(64u) fn other() { }
"""


def test_inspect_reads_bindings_and_workgroup_sizes():
    info = wgsl_info.inspect(KERNEL, "main")
    assert info.workgroup_size == (8, 8, 1) and info.invocations == 64
    assert [(b.binding, b.name, b.space, b.access, b.type) for b in info.bindings] == [
        (0, "x", "storage", "read", "array<f32>"),
        (1, "y", "storage", "read_write", "array<f32>"),
        (2, "n", "uniform", "read", "u32"),
    ]
    assert len(info.storage) == 2
    assert wgsl_info.inspect(KERNEL, "other").workgroup_size == (64, 1, 1)


@pytest.mark.parametrize(
    ("source", "entry", "message"),
    [
        (KERNEL, None, "several compute entry points"),
        (KERNEL, "nope", "no @compute entry point named 'nope'"),
        ("fn f() {}", None, "no @compute entry point"),
        ("   ", None, "empty"),
        ("@compute fn f() {}", None, "has no @workgroup_size"),
    ],
)
def test_inspect_errors(source, entry, message):
    with pytest.raises(gpu.ShaderError, match=message):
        wgsl_info.inspect(source, entry)


def test_inspect_needs_literal_workgroup_sizes():
    with pytest.raises(gpu.GPUError, match="integer literals"):
        wgsl_info.inspect("@compute @workgroup_size(WG) fn f() {}")


def test_source_key_depends_on_text_and_entry():
    assert source_key("a", "main") == source_key("a", "main")
    assert source_key("a", "main") != source_key("a", "other")
    assert source_key("a", "main") != source_key("b", "main")


# ---- dispatch grids ----


@pytest.mark.parametrize("n", [1, 63, 64, 65, 65535 * 64, 65535 * 64 + 1, 10**9])
def test_grid_covers_every_item_within_the_limit(n):
    x, y = grid(n, 64, 65535)
    assert x <= 65535 and y <= 65535
    groups = -(-n // 64)
    assert x * y >= groups  # every item has a thread
    assert x * y - groups < y  # idle workgroups: fewer than one per row
    if n <= 65535 * 64:
        assert y == 1


def test_grid_beyond_two_dimensions_is_a_limit_error():
    with pytest.raises(gpu.LimitError, match="workgroups per dimension"):
        grid(10**12, 1, 1000)


# ---- choosing a device ----


def test_without_wgpu_or_a_compiler_the_cpu_device_is_used(monkeypatch):
    monkeypatch.setitem(sys.modules, "wgpu", None)
    monkeypatch.setenv("CC", "no-such-compiler-here")
    dev = gpu.device(fresh=True)
    assert dev.kind == "cpu"
    assert ("compiled C", "no C compiler on PATH (cc, gcc or clang; or set CC)") in dev.skipped


def test_cpu_device_is_always_there():
    dev = gpu.device("cpu")
    assert dev.kind == "cpu" and dev.report[0].startswith("using cpu: Python")
    assert dev.describe()["kind"] == "cpu"


def test_browser_backend_is_reported_as_skipped_on_the_desktop():
    dev = gpu.device("browser")
    assert dev.kind != "browser"
    assert ("WebGPU", "only available in the page (Pyodide)") in dev.skipped
    with pytest.raises(gpu.NoDeviceError, match="WebGPU: only available in the page"):
        gpu.device("webgpu", fallback=False)


def test_missing_wgpu_is_reported_and_the_next_device_is_used(monkeypatch):
    monkeypatch.setitem(sys.modules, "wgpu", None)  # makes `import wgpu` raise ImportError
    dev = gpu.device("native", fresh=True)
    assert dev.kind == ("c" if find_compiler() else "cpu")  # compiled C, else pure Python
    assert dev.skipped == [("wgpu-py", "not installed (pip install wgpu)"), *NO_CC]
    assert "wgpu-py: not installed (pip install wgpu)" in dev.report
    with pytest.raises(gpu.NoDeviceError, match="wgpu-py: not installed"):
        gpu.device("native", fallback=False, fresh=True)


def test_unknown_device_name():
    with pytest.raises(gpu.GPUError, match="unknown device 'tpu'"):
        gpu.device("tpu")
