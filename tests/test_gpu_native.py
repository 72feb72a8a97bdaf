"""The native backend for real: hand-written WGSL through wgpu-py on this machine's adapter
(Mesa lavapipe here), with tang's errors for bad kernels, limits and lost devices."""

from __future__ import annotations

import contextlib
import math
from array import array

import pytest
from wgsl_kernels import elementwise

import tang.gpu as gpu
from tang.gpu.native import NativeDevice

# Every test here opens a wgpu-py device.
pytestmark = pytest.mark.toolchain


@pytest.fixture
def dev(native_device):
    return native_device  # not tang.gpu's shared one, which other tests release


def test_device_reports_its_adapter(dev):
    assert dev.kind == "native"
    assert "wgpu-py" in dev.name
    assert dev.report[0] == f"using native: {dev.name}"
    assert dev.limits.max_workgroups_per_dimension >= 65535
    assert dev.limits.storage_buffers_per_stage >= 8


@pytest.mark.parametrize(
    "make",
    [
        lambda: [0.5, -1.0, 2.0],
        lambda: array("f", [0.5, -1.0, 2.0]),
        lambda: array("d", [0.5, -1.0, 2.0]),
        lambda: memoryview(array("f", [0.5, -1.0, 2.0])),
        lambda: pytest.importorskip("numpy").array([0.5, -1.0, 2.0]),
    ],
    ids=["list", "array-f", "array-d", "memoryview", "numpy"],
)
def test_buffers_from_python_data_round_trip_through_a_kernel(dev, make):
    k = dev.kernel(elementwise("x0[i] * x0[i] + 1.0"))
    x, y = dev.buffer(make()), dev.empty(3)
    assert dev.run(k, [x, y, 3], 3, out=y).tolist() == [1.25, 2.0, 5.0]


def test_integer_buffers(dev):
    k = dev.kernel(elementwise("x0[i] * 3u + 1u", ty="u32"))
    x, y = dev.buffer(range(5), "u32"), dev.empty(5, "u32")
    assert dev.run(k, [x, y, 5], 5, out=y).tolist() == [1, 4, 7, 10, 13]
    assert dev.read(dev.buffer([-2, 9], "i32")).tolist() == [-2, 9]


def test_pipeline_is_compiled_once_per_source(dev):
    src = elementwise("x0[i] - 7.0")
    before = dev.compiles
    k1, k2 = dev.kernel(src), dev.kernel(src)
    assert k1 is k2 and dev.compiles == before + 1
    dev.kernel(src + "\n// another text, another pipeline\n")
    assert dev.compiles == before + 2


def test_two_dimensional_dispatch_beyond_65535_workgroups(dev):
    np = pytest.importorskip("numpy")
    wg = 64
    n = 65535 * wg + 12345  # one more row of workgroups than one dimension holds
    src = f"""
@group(0) @binding(0) var<storage, read_write> y: array<u32>;
@group(0) @binding(1) var<uniform> n: u32;
@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + gid.y * (nwg.x * {wg}u);
    if (i >= n) {{ return; }}
    y[i] = y[i] + i + 1u;   // += so a double visit would show
}}
"""
    _, yg = gpu.grid(n, wg, dev.limits.max_workgroups_per_dimension)
    assert yg == 2
    y = dev.empty(n + 64, "u32")  # room past the end: must stay untouched
    got = np.frombuffer(dev.run(dev.kernel(src), [y, n], n, out=y), dtype=np.uint32)
    assert np.array_equal(got[:n], np.arange(1, n + 1, dtype=np.uint32))
    assert not got[n:].any()


def test_bindings_by_name_and_number(dev):
    k = dev.kernel(elementwise("x0[i] + x1[i]", inputs=2))
    a, b, y = dev.buffer([1.0, 2.0]), dev.buffer([10.0, 20.0]), dev.empty(2)
    dev.dispatch(k, {"x1": b, 0: a, "y": y, "n": 2}, 2)
    assert dev.read(y).tolist() == [11.0, 22.0]


def _chain(dev, batched: bool) -> tuple[list[list[float]], int]:
    """Three dependent kernels, a write between them and a read inside: each reads what
    the one before it wrote. Returns the buffers' contents and the submits it took."""
    double = dev.kernel(elementwise("x0[i] * 2.0 + 1.0"))
    square = dev.kernel(elementwise("x0[i] * x0[i] - x1[i]", inputs=2))
    add = dev.kernel(elementwise("x0[i] + x1[i]", inputs=2))
    x = dev.buffer([0.5, -1.0, 2.0, 3.0])
    y1, y2, y3 = dev.empty(4), dev.empty(4), dev.empty(4)
    before = dev.submits
    with dev.batch() if batched else contextlib.nullcontext():
        dev.dispatch(double, [x, y1, 4], 4)
        dev.dispatch(square, [y1, x, y2, 4], 4)
        dev.write(x, [1.0, 1.0, 1.0, 1.0])  # after the two above, before the one below
        dev.dispatch(add, [y2, x, y3, 4], 4)
        dev.dispatch(double, [y3, y1, 4], 4)
        inside = dev.read(y1).tolist()  # the read submits what is recorded so far
        dev.dispatch(add, [y1, y1, y2, 4], 4)
        dev.dispatch(add, [y2, y3, x, 4], 4)
    return [inside, *(dev.read(b).tolist() for b in (y1, y2, y3, x))], dev.submits - before


def test_a_batched_submit_gives_the_results_of_separate_ones(dev):
    separate, submits = _chain(dev, batched=False)
    batched, batched_submits = _chain(dev, batched=True)
    assert batched == separate
    # by hand: y1 = 2x+1, y2 = y1² − x, x = 1, y3 = y2 + 1, y1 = 2·y3 + 1, y2 = 2·y1, x = y2 + y3
    y1 = [10.0, 7.0, 49.0, 95.0]
    assert separate == [y1, y1, [20.0, 14.0, 98.0, 190.0], [4.5, 3.0, 24.0, 47.0],
                        [24.5, 17.0, 122.0, 237.0]]  # fmt: skip
    # one submit per dispatch; batched: one before the write, one at the read, one at the end
    assert (submits, batched_submits) == (6, 3)


def test_batches_nest_and_cpu_device_runs_them_in_order(dev):
    cpu = gpu.CPUDevice()

    def plus_one(n, src, dst):  # the CPU device's kernels are Python functions
        for i in range(n):
            dst[i] = src[i] + 1.0

    k_cpu = cpu.kernel(plus_one)
    x = cpu.buffer([1.0, 2.0])
    with cpu.batch(), cpu.batch():
        cpu.dispatch(k_cpu, [x, x], 2)
        cpu.dispatch(k_cpu, [x, x], 2)
    assert cpu.read(x).tolist() == [3.0, 4.0]
    k = dev.kernel(elementwise("x0[i] + 1.0"))
    y, z = dev.buffer([1.0, 2.0]), dev.empty(2)
    before = dev.submits
    with dev.batch():
        with dev.batch():
            dev.dispatch(k, [y, z, 2], 2)
        assert dev.submits == before  # the inner block does not submit
        dev.dispatch(k, [z, y, 2], 2)
    assert dev.submits == before + 1
    assert dev.read(y).tolist() == [3.0, 4.0]
    z.release()  # a bind group kept for (k, y, z) must not outlive z
    w = dev.buffer([0.0, 0.0])
    dev.dispatch(k, [y, w, 2], 2)
    assert dev.read(w).tolist() == [4.0, 5.0]


@pytest.mark.parametrize(
    ("bindings", "error", "message"),
    [
        (lambda d, x, y: [x, y], gpu.DataError, r"binds 3 resources \(x0, y, n\), got 2"),
        (lambda d, x, y: {"x0": x, "y": y}, gpu.DataError, "nothing bound to n"),
        (lambda d, x, y: {"zz": x}, gpu.DataError, "no binding 'zz'"),
        (lambda d, x, y: [x, [1.0], 2], gpu.DataError, "'y' needs a Buffer, got list"),
        (lambda d, x, y: [x, d.uniform(2), 2], gpu.DataError, "'y' is storage; got a uniform"),
        (lambda d, x, y: [x, gpu.CPUDevice().empty(2), 2], gpu.GPUError, "another device"),
    ],
)
def test_bad_bindings_name_the_binding(dev, bindings, error, message):
    k = dev.kernel(elementwise("x0[i]"))
    x, y = dev.buffer([1.0, 2.0]), dev.empty(2)
    with pytest.raises(error, match=message):
        dev.dispatch(k, bindings(dev, x, y), 2)


# ---- bad input: each a tang error with the reason ----


def test_wgsl_syntax_error_has_line_and_column(dev):
    src = elementwise("x0[i] * ")
    with pytest.raises(gpu.ShaderError) as info:
        dev.kernel(src)
    err = info.value
    assert err.line == 10 and err.column > 0
    assert "kernel rejected at line 10" in str(err)
    assert "expected expression" in err.reason or "expression" in err.reason


def test_wgsl_type_error_is_a_shader_error(dev):
    with pytest.raises(gpu.ShaderError, match=r"line 10.*sin"):
        dev.kernel(elementwise("sin(x0[i], 2.0)"))
    with pytest.raises(gpu.ShaderError, match="rejected"):
        dev.kernel(elementwise("x0[i] + 1u"))  # f32 + u32


def test_too_many_storage_buffers_is_a_limit_error(dev):
    k = dev.limits.storage_buffers_per_stage  # k inputs + 1 output = one too many
    body = " + ".join(f"x{j}[i]" for j in range(k))
    with pytest.raises(gpu.LimitError) as info:
        dev.kernel(elementwise(body, inputs=k))
    assert info.value.limit == "maxStorageBuffersPerShaderStage"
    assert info.value.asked == k + 1 and info.value.allowed == k
    assert "this device allows" in str(info.value)


def test_workgroup_over_the_limit_is_a_limit_error(dev):
    too_big = dev.limits.max_invocations_per_workgroup * 2
    with pytest.raises(gpu.LimitError, match=r"maxComputeWorkgroupSizeX|Invocations"):
        dev.kernel(elementwise("x0[i]", wg=too_big))


def test_buffer_over_the_binding_limit_is_a_limit_error(dev):
    limit = dev.limits.max_storage_binding_size
    if limit >= dev.limits.max_buffer_size or limit > 2**31:
        pytest.skip(f"binding limit {limit} is not below the buffer limit on this device")
    k = dev.kernel(elementwise("x0[i]"))
    big = dev.empty(limit // 4 + 1)  # a legal buffer, one element too big to bind
    with pytest.raises(gpu.LimitError) as info:
        dev.dispatch(k, [big, dev.empty(4), 4], 4)
    assert info.value.limit == "maxStorageBufferBindingSize"
    assert info.value.allowed == limit and "binding 'x0'" in str(info.value)
    del big


def test_buffer_over_the_size_limit_fails_before_allocating(dev):
    with pytest.raises(gpu.LimitError, match="maxBufferSize"):
        dev.empty(dev.limits.max_buffer_size // 4 + 1)


def test_lost_device_is_an_error_and_a_new_device_works(native_device):
    d = gpu.device("native", fallback=False, fresh=True)
    k = d.kernel(elementwise("x0[i] + 1.0"))
    x, y = d.buffer([1.0]), d.empty(1)
    d.destroy()
    for action in (lambda: d.read(y), lambda: d.dispatch(k, [x, y, 1], 1), lambda: d.empty(1)):
        with pytest.raises(gpu.DeviceLostError, match="device lost: the device was destroyed"):
            action()
    again = gpu.device("native", fallback=False)
    assert again is not d and not again.lost
    k2 = again.kernel(elementwise("x0[i] + 1.0"))
    x2, y2 = again.buffer([1.0]), again.empty(1)
    assert again.run(k2, [x2, y2, 1], 1, out=y2).tolist() == [2.0]


def test_device_lost_underneath_tang_is_reported(dev):
    d = NativeDevice.open()
    y = d.empty(4)
    d._dev.destroy()  # lost behind tang's back, as a driver reset would
    with pytest.raises(gpu.DeviceLostError, match="lost"):
        d.empty(4)
    assert d.lost
    with pytest.raises(gpu.DeviceLostError):
        d.read(y)


def test_recover_to_cpu_after_a_gpu_error(dev):
    """The pattern callers use: any GPUError → the CPU device computes the same thing."""
    xs = [0.25 * i for i in range(100)]

    def on(device):
        if device.kind == "cpu":

            def k(n, x, y, count):
                for i in range(n):
                    y[i] = x[i] * math.sin(x[i])

            kernel = device.kernel(k)
        else:
            kernel = device.kernel(elementwise("x0[i] * sin(x0[i]) +* 1.0"))  # broken
        x, y = device.buffer(xs), device.empty(len(xs))
        return device.run(kernel, [x, y, len(xs)], len(xs), out=y)

    try:
        got = on(dev)
    except gpu.GPUError as exc:
        assert isinstance(exc, gpu.ShaderError)
        got = on(gpu.device("cpu"))
    assert got.tolist() == array("f", [x * math.sin(x) for x in xs]).tolist()


def test_released_buffers_cannot_be_used(dev):
    buf = dev.buffer([1.0, 2.0])
    assert dev.read(buf).tolist() == [1.0, 2.0]
    buf.release()
    buf.release()  # twice is fine
    with pytest.raises(gpu.GPUError, match="this buffer was released"):
        dev.read(buf)


@pytest.fixture(params=["native", "c", "cpu"])
def any_device(request, native_device, c_device):
    return {"native": native_device, "c": c_device, "cpu": gpu.CPUDevice()}[request.param]


def _doubler(dev):
    """A kernel y[i] = 2·x[i] on ``dev``: WGSL, C or a Python function."""
    if dev.kind == "native":
        return dev.kernel(elementwise("x0[i] * 2.0"))
    if dev.kind == "c":
        return dev.kernel(
            "#include <stddef.h>\nvoid run(const float *x, float *y, size_t n) {"
            " for (size_t i = 0; i < n; ++i) y[i] = 2.0f * x[i]; }"
        )

    def double(n, x, y, count):
        for i in range(count):
            y[i] = 2.0 * x[i]

    return dev.kernel(double)


@pytest.mark.parametrize("batched", [False, True], ids=["separate", "batched"])
def test_a_copy_lands_in_order_between_the_dispatches_around_it(any_device, batched):
    dev = any_device
    double = _doubler(dev)
    x = dev.buffer([1.0, 2.0, 3.0, 4.0])
    y, cache = dev.empty(4), dev.buffer([9.0] * 8)
    with dev.batch() if batched else contextlib.nullcontext():
        dev.dispatch(double, [x, y, 4], 4)  # y = 2, 4, 6, 8
        dev.copy(y, cache, 3, 1, 4)  # cache[4:7] = y[1:4]
        dev.dispatch(double, [cache, y, 4], 4)  # reads the cache after the copy: 9 → 18
        dev.copy(x, cache, 1, 0, 0)  # cache[0] = x[0]
    assert dev.read(cache).tolist() == [1.0, 9.0, 9.0, 9.0, 4.0, 6.0, 8.0, 9.0]
    assert dev.read(y).tolist() == [18.0] * 4  # the second kernel ran after the first copy


def test_read_many_gives_each_buffer_after_the_work_recorded_before_it(any_device):
    dev = any_device
    double = _doubler(dev)
    x, y = dev.buffer([1.0, 2.0, 3.0]), dev.empty(3)
    ints, half = dev.buffer([-2, 9], "i32"), dev.buffer([0.5])
    with dev.batch():
        dev.dispatch(double, [x, y, 3], 3)
        dev.dispatch(double, [y, x, 3], 3)  # reads what the first wrote: x = 4x
        got = dev.read_many([y, ints, x, half, y])
    assert [a.tolist() for a in got] == [[2.0, 4.0, 6.0], [-2, 9], [4.0, 8.0, 12.0], [0.5],
                                         [2.0, 4.0, 6.0]]  # fmt: skip
    assert [a.typecode for a in got[:2]] == [dev.read(y).typecode, dev.read(ints).typecode]
    assert dev.read_many([]) == []
    y.release()
    with pytest.raises(gpu.GPUError, match="released"):
        dev.read_many([x, y])


def test_a_copy_outside_either_buffer_is_refused_before_anything_runs(any_device):
    dev = any_device
    a, b = dev.buffer([1.0, 2.0, 3.0]), dev.buffer([0.0, 0.0])
    with pytest.raises(gpu.DataError, match=r"elements 1 … 2 are outside the destination's 2"):
        dev.copy(a, b, 2, 0, 1)
    with pytest.raises(gpu.DataError, match=r"elements 2 … 3 are outside the source's 3"):
        dev.copy(a, b, 2, 2, 0)
    with pytest.raises(gpu.DataError, match="two different buffers"):
        dev.copy(a, a, 1, 0, 1)
    with pytest.raises(gpu.DataError, match="count must be a non-negative int"):
        dev.copy(a, b, -1)
    assert dev.read(b).tolist() == [0.0, 0.0]
