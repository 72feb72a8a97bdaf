"""tang.gpu in the page: the worker dispatches tang's generated WGSL kernel through WebGPU
(called from Python in Pyodide) with both adapters headless Chromium offers here, and the
numbers match the CPU path; with no adapter the page says so and the CPU computes them.

Adapters (see DESIGN.md):
  swiftshader  --enable-unsafe-webgpu: Chromium's software fallback adapter (core level)
  lavapipe     VK_ICD_FILENAMES=lvp + --use-angle=vulkan --use-webgpu-adapter=opengles:
               Mesa's lavapipe through ANGLE, offered only at featureLevel 'compatibility'

Accuracy, measured here (x in [-100, 100]): SwiftShader's ``sin``/``cos`` have an absolute
error near 2e-4 everywhere (so a relative error of percents next to their zeros), against
7e-8 on lavapipe; lavapipe-through-ANGLE's ``atan2`` is off by up to 3e-6; exp2, log2, sqrt
and division are within a few f32 ulps on both. The tolerances below say exactly that.
"""

from __future__ import annotations

import math

import pytest
from conftest import ADAPTERS, TangPage

from tang.compile import expression_plan
from tang.gpu.batch import sample_points

np = pytest.importorskip("numpy", reason="numpy is the desktop oracle for page results")
from tang.gpu.numpy_eval import evaluate_numpy  # noqa: E402

# absolute error per unit of the largest intermediate, beyond f32 rounding
ADAPTER_ERROR = {"swiftshader": 4e-4, "lavapipe": 1e-5, "cpu": 0.0}

EXPRESSIONS = [
    "sin(x*y) + cos(x - y)",
    "x^3*y - 2*x*y^2",
    "exp(x*y/4) + log(x^2 + 1)",
    "sqrt(x) + 1/(x^2 + y^2 + 0.25)",  # nan for x < 0: nan must travel back as nan
    "atan2(y, x) * tanh(x*y)",
    "where(x < y, x^2, y^3) + abs(x)",
]
POINTS = 1 << 16


def open_page(launch, site, args=(), env=None) -> TangPage:
    context = launch(args=args, env=env)
    page = context.pages[0] if context.pages else context.new_page()
    return TangPage(page, site.url).open()


def oracle(text: str, n: int):
    """The plan, and for all n points: f64 outputs and the largest |intermediate|."""
    from tang.expr.graph import topo_order

    p = expression_plan(text, grad=True)
    cols = {k: np.frombuffer(v, np.float32) for k, v in sample_points(p.inputs, n).items()}
    nodes = [m for m in topo_order(p.outputs) if m.op not in ("const", "lt", "le", "eq")]
    values = evaluate_numpy([*p.outputs, *nodes], cols)
    scale = np.zeros(n)
    for v in values[len(p.outputs) :]:
        a = np.abs(v)
        a[~np.isfinite(a)] = 0.0
        np.maximum(scale, a, out=scale)
    return p, values[: len(p.outputs)], scale


def as_floats(values):
    return np.array([float(v) for v in values])  # "nan"/"inf"/"-inf" parse as floats


def check_against_oracle(result, text, adapter):
    p, refs, scale = oracle(text, result["n"])
    assert result["outputs"] == list(p.names) and result["inputs"] == list(p.inputs)
    index = np.array(result["sample"]["index"])
    # the page generated the same points as the desktop
    for name in p.inputs:
        want = np.frombuffer(sample_points(p.inputs, result["n"])[name], np.float32)[index]
        assert np.array_equal(np.array(result["sample"]["points"][name], np.float32), want)
    tol_all = []
    for name, got, ref in zip(p.names, result["sample"]["outputs"], refs, strict=True):
        got, ref_s = as_floats(got), ref[index]
        assert np.array_equal(np.isnan(got), np.isnan(ref_s)), f"{text}: {name} nan"
        fin = np.isfinite(ref_s)
        tol = 2e-5 * np.abs(ref_s[fin]) + (2e-5 + ADAPTER_ERROR[adapter]) * scale[index][fin]
        err = np.abs(got[fin] - ref_s[fin])
        assert np.all(err <= tol), f"{text}: {name} on {adapter}: {err.max()} > {tol.max()}"
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(ref)
        tol_all.append((2e-5 * np.abs(ref[ok]) + (2e-5 + ADAPTER_ERROR[adapter]) * scale[ok]).sum())
    # every point, through the checksum: the sum of finite outputs within the summed bound
    want = math.fsum(float(r[np.isfinite(r)].sum()) for r in refs)
    assert abs(result["checksum"] - want) <= sum(tol_all), f"{text}: checksum on {adapter}"
    assert result["nonfinite"] == sum(int((~np.isfinite(r)).sum()) for r in refs)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_worker_dispatches_generated_wgsl_and_matches_the_cpu(launch, site, adapter):
    args, env = ADAPTERS[adapter]
    page = open_page(launch, site, args, env)
    info = page.call("gpu.info")
    assert info["kind"] == "browser", info["report"]
    if adapter == "swiftshader":
        assert "swiftshader" in info["name"] and "WebGPU core" in info["name"]
    else:
        assert "WebGPU compatibility" in info["name"] and "swiftshader" not in info["name"]
    for text in EXPRESSIONS:
        params = {"expr": text, "grad": True, "points": POINTS, "sample": 1000}
        on_gpu = page.call("gpu.evaluate", {**params, "device": "gpu", "fallback": False})
        on_cpu = page.call("gpu.evaluate", {**params, "device": "cpu"})
        assert on_gpu["device"] == "browser" and on_gpu["fallback"] is None
        assert on_cpu["device"] == "cpu"
        assert on_gpu["sample"]["index"] == on_cpu["sample"]["index"]
        check_against_oracle(on_gpu, text, adapter)
        check_against_oracle(on_cpu, text, "cpu")
    assert page.console_errors == []


def test_without_flags_the_page_reports_no_adapter_and_the_cpu_gives_the_numbers(launch, site):
    page = open_page(launch, site)
    info = page.call("gpu.info")
    assert info["kind"] == "cpu"
    assert {"backend": "WebGPU", "reason": "no adapter"} in info["skipped"]
    assert "WebGPU: no adapter" in info["report"]
    for text in EXPRESSIONS[:3]:
        out = page.call("gpu.evaluate", {"expr": text, "points": 4096, "sample": 1000})
        assert out["device"] == "cpu" and "WebGPU: no adapter" in out["device_info"]["report"]
        check_against_oracle(out, text, "cpu")
    with pytest.raises(RuntimeError, match="NoDeviceError: WebGPU: no adapter"):
        page.call("gpu.evaluate", {"expr": "x", "device": "gpu", "fallback": False})
    out = page.call("gpu.evaluate", {"expr": "x*y", "device": "gpu", "points": 10})
    assert out["device"] == "cpu"  # asked for the GPU, told why not, computed anyway
    assert page.console_errors == []


def test_bad_requests_are_tang_errors_and_the_page_carries_on(launch, site):
    page = open_page(launch, site, *ADAPTERS["swiftshader"])
    with pytest.raises(RuntimeError, match=r"ParseError: .*column"):
        page.call("gpu.evaluate", {"expr": "sin(x*"})
    with pytest.raises(RuntimeError, match="points must be an integer"):
        page.call("gpu.evaluate", {"expr": "x", "points": 1 << 30})
    before = page.call("gpu.evaluate", {"expr": "x*y", "points": 1000, "grad": False})
    assert before["device"] == "browser"
    released = page.call("gpu.reset")["released"]
    assert len(released) == 1 and "swiftshader" in released[0]
    after = page.call("gpu.evaluate", {"expr": "x*y", "points": 1000, "grad": False})
    assert after["device"] == "browser" and after["checksum"] == before["checksum"]
