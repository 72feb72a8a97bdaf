"""Value + gradient kernels over 2^20 points: tang.lower's WGSL kernel dispatched by tang.gpu
on the native device (lavapipe here) against a numpy f64 oracle over all points, and the
pure-Python CPU device (tang's Python-printed kernel) on a subsample."""

from __future__ import annotations

import math
from array import array

import pytest

import tang.gpu as gpu
from tang.compile import with_gradient
from tang.expr.parse import parse_graph
from tang.gpu.batch import evaluate, sample_points
from tang.gpu.native import NativeDevice
from tang.lower.plan import plan

np = pytest.importorskip("numpy", reason="numpy is the f64 oracle for 2^20-point checks")
from tang.gpu.numpy_eval import evaluate_numpy  # noqa: E402

N = 1 << 20
SUBSAMPLE = 2048  # points the pure-Python CPU device checks (every N/SUBSAMPLE-th)

# 24 expressions over x, y in [-2, 2): every primitive, their compositions, singular points
# (1/x, log, sqrt of negatives: inf/nan must agree), selects (abs, min, max).
EXPRESSIONS = [
    "x*y + 3*x - y",
    "x^2 + y^2",
    "x^3*y - 2*x*y^2",
    "sin(x)*cos(y)",
    "sin(x*y) + cos(x - y)",
    "tan(x/3)",
    "exp(x) - exp(-y)",
    "exp(x*y/4)",
    "log(x^2 + 1) + log(y^2 + 0.5)",
    "log(x)",  # nan for x < 0
    "sqrt(x^2 + y^2 + 1)",
    "sqrt(x)",  # nan for x < 0, inf slope at 0
    "1/(x^2 + y^2 + 0.25)",
    "x/(1 + y^2)",
    "atan2(y, x)",
    "atan2(x*y, 1 + x^2)",
    "tanh(x*y)",
    "sigmoid(3*x - y)",
    "abs(x) + abs(x*y - 1)",
    "min(x, y) * max(x, y^2)",
    "where(x < y, x^2, y^3)",
    "2^x + x^0.5",
    "sin(exp(x/2)) * log(1 + y^2)",
    "(x + y)^4 / 24 - cos(x)^2",
]


def _tolerance(ref, scale):
    """f32 agreement: a few ulps of the result and of the terms it was made from."""
    return 2e-5 * np.abs(ref) + 2e-5 * scale + 1e-30


def assert_close(got, ref, what, scale=None):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    assert np.array_equal(nan_g, nan_r), f"{what}: nan at different points"
    inf_r = np.isinf(ref)
    assert np.array_equal(got[inf_r], ref[inf_r]), f"{what}: infinities differ"
    ok = ~(nan_r | inf_r)
    # f32 outputs overflow earlier than f64: a finite f64 value beyond f32 range is inf in f32
    big = ok & (np.abs(ref) > 3.4e38)
    assert np.all(np.isinf(got[big])), what
    ok &= ~big
    scale = np.abs(ref) if scale is None else scale
    err = np.abs(got[ok] - ref[ok])
    tol = _tolerance(ref[ok], scale[ok] if np.ndim(scale) else scale)
    worst = int(np.argmax(err / tol)) if err.size else 0
    assert np.all(err <= tol), (
        f"{what}: error {err[worst]:.3g} > tolerance {tol[worst]:.3g} "
        f"(got {got[ok][worst]!r}, want {ref[ok][worst]!r})"
    )


@pytest.fixture
def native(native_device):
    return native_device  # not tang.gpu's shared one, which other tests release


@pytest.fixture(scope="module")
def points():
    return sample_points(("x", "y"), N)


def oracle(p, cols):
    """numpy f64 values of the outputs, and per point the largest finite |intermediate| of
    the graph: f32 rounding is relative to the terms a result was made from."""
    from tang.expr.graph import topo_order

    nodes = [n for n in topo_order(p.outputs) if n.op not in ("const", "lt", "le", "eq")]
    values = evaluate_numpy([*p.outputs, *nodes], cols)
    biggest = np.zeros(len(values[0]))
    for v in values[len(p.outputs) :]:
        a = np.abs(v)
        a[~np.isfinite(a)] = 0.0
        np.maximum(biggest, a, out=biggest)
    return values[: len(p.outputs)], biggest


@pytest.mark.toolchain
@pytest.mark.parametrize("text", EXPRESSIONS)
def test_value_and_gradient_match_on_the_native_device(native, points, text):
    p = with_gradient(parse_graph(text, variables=("x", "y")))
    assert p.names == ("f", "df/dx", "df/dy")
    batch = evaluate(p, points, device=native)
    assert batch.device == "native" and batch.n == N and len(batch.columns) == 3
    cols = {k: np.frombuffer(v, dtype=np.float32) for k, v in points.items()}
    refs, scale = oracle(p, cols)
    for name, col, ref in zip(p.names, batch.columns, refs, strict=True):
        assert_close(np.frombuffer(col, dtype=np.float32), ref, f"{text}: {name}", scale)

    # the pure-Python CPU device (tang's Python-printed kernel) on a subsample
    step = N // SUBSAMPLE
    sub = {k: v[::step] for k, v in cols.items()}
    cpu = evaluate(p, sub, device="cpu")
    assert cpu.device == "cpu" and cpu.n == SUBSAMPLE
    for name, col, gcol, ref in zip(p.names, cpu.columns, batch.columns, refs, strict=True):
        got = np.frombuffer(col, dtype=np.float32)
        # the CPU path computes in f64 and rounds once: within an f32 ulp of the oracle
        want = ref[::step].astype(np.float32).astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        assert_close(got, want, f"{text}: {name} (cpu)", scale[::step])
        # and the two devices agree with each other
        assert_close(
            np.frombuffer(gcol, dtype=np.float32)[::step],
            got,
            f"{text}: {name} (gpu vs cpu)",
            scale[::step],
        )


def test_there_are_at_least_twenty_expressions():
    assert len(EXPRESSIONS) >= 20


def test_cpu_device_matches_the_graph_evaluator_exactly():
    """The CPU path rounds tang's own f64 evaluation to f32 and nothing else."""
    from tang.expr.graph import evaluate as graph_eval

    g = parse_graph("sin(x*y) + x/(y^2 + 1) + sqrt(x)", variables=("x", "y"))
    pts = sample_points(g.inputs, 500)
    batch = evaluate(g, pts, device="cpu")
    want = array(
        "f",
        [
            graph_eval(g.outputs, {"x": a, "y": b})[0]
            for a, b in zip(pts["x"], pts["y"], strict=True)
        ],
    )
    assert batch.columns[0].tobytes() == want.tobytes()


def test_sample_points_are_the_same_with_and_without_numpy(monkeypatch):
    from tang.gpu import batch as b

    fast = b.sample_points(("x", "y", "z"), 5000, -3.0, 1.0)
    monkeypatch.setattr(b, "_numpy", lambda: None)
    slow = b.sample_points(("x", "y", "z"), 5000, -3.0, 1.0)
    assert all(fast[k].tobytes() == slow[k].tobytes() for k in "xyz")
    assert min(fast["x"]) == -3.0 and max(fast["x"]) < 1.0


@pytest.mark.toolchain  # device None: the best one, wgpu-py here
@pytest.mark.parametrize(
    ("points", "message"),
    [
        ({"x": [1.0, 2.0]}, "no values for input 'y'"),
        ({"x": [1.0], "y": [1.0], "z": [0.0]}, "no input named 'z'"),
        ({"x": [1.0, 2.0], "y": [1.0]}, r"differ in length \(x: 2, y: 1\)"),
        ([[1.0]], r"1 columns of points for 2 inputs \(x, y\)"),
        ({"x": [1.0, "a"], "y": [1.0, 2.0]}, r"input 'x': element 1 is 'a'"),
    ],
)
def test_bad_points_are_data_errors(points, message):
    g = parse_graph("x + y", variables=("x", "y"))
    for dev in ("cpu", None):
        with pytest.raises(gpu.DataError, match=message):
            evaluate(g, points, device=dev)


@pytest.mark.toolchain
def test_over_the_binding_limit_falls_back_to_the_cpu(native):
    """The limit is checked before anything is packed or allocated; with fallback the CPU
    device computes the same numbers and the batch says why."""
    import dataclasses

    g = parse_graph("x*y + 1", variables=("x", "y"))
    pts = sample_points(g.inputs, 1000)
    small = NativeDevice.open()
    small.limits = dataclasses.replace(small.limits, max_storage_binding_size=4096)
    with pytest.raises(gpu.LimitError, match=r"the packed inputs \(src\) needs"):
        evaluate(g, pts, device=small)
    batch = evaluate(g, pts, device=small, fallback=True)
    assert batch.device == "cpu"
    assert batch.fallback.startswith("native: the packed inputs (src) needs maxStorageBuffer")
    on_gpu = evaluate(g, pts, device=native).columns[0]
    assert_close(batch.columns[0], on_gpu, "cpu fallback vs gpu", scale=5.0)  # |x*y| + 1 <= 5


@pytest.mark.toolchain
def test_lost_device_falls_back_to_the_cpu(native_device):
    g = parse_graph("x - y", variables=("x", "y"))
    pts = sample_points(g.inputs, 100)
    dev = NativeDevice.open()
    dev.destroy()
    with pytest.raises(gpu.DeviceLostError):
        evaluate(g, pts, device=dev)
    batch = evaluate(g, pts, device=dev, fallback=True)
    assert batch.device == "cpu" and "device lost" in batch.fallback
    want = array("f", [a - b for a, b in zip(pts["x"], pts["y"], strict=True)])
    assert batch.columns[0] == want


@pytest.mark.toolchain
def test_constant_and_input_outputs():
    x = parse_graph("x", variables=("x",))
    p = plan([x.outputs[0], 2.5], ("x",))
    for dev in ("cpu", "native"):
        try:
            batch = evaluate(p, {"x": [1.0, -3.0]}, device=dev)
        except gpu.NoDeviceError:
            continue
        assert [c.tolist() for c in batch.columns] == [[1.0, -3.0], [2.5, 2.5]]
    assert math.isclose(batch.checksum(), 1.0 - 3.0 + 5.0)
