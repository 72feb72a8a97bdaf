"""The page's ``explain.*`` worker methods (How it works, Run it), called through demos.api on
the desktop: the same code the worker runs in Pyodide."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

import tang
from demos import api
from demos.explain import grid_points
from tang.lower import BACKENDS
from tests.skips import skip_missing


def call(method, **params):
    reply = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    if not reply["ok"]:
        raise RuntimeError(f"{reply['error']['type']}: {reply['error']['message']}")
    return reply["result"]


@pytest.mark.parametrize("x", [2.0, -3.7, 0.0, 5.5])
def test_dual_trace_is_tang_dual_one_operation_at_a_time(x):
    out = call("explain.dual_trace", x=x)
    d = tang.Dual(x, 1.0)
    s = tang.sin(d)
    f = d * s
    want = [("x", d), ("sin x", s), ("x · v0", f)]
    assert [step["formula"] for step in out["steps"]] == [w[0] for w in want]
    for step, (_, dual) in zip(out["steps"], want, strict=True):
        assert step["value"] == dual.value and step["eps"] == dual.tangent
    assert out["value"] == f.value and out["derivative"] == f.tangent
    assert out["derivative"] == pytest.approx(math.sin(x) + x * math.cos(x), abs=1e-15)


def test_dual_trace_of_another_function_matches_finite_differences():
    out = call("explain.dual_trace", x=0.7, expr="exp(x)/(1 + x^2)")
    f = lambda t: math.exp(t) / (1 + t * t)  # noqa: E731
    h = 1e-6
    assert out["value"] == pytest.approx(f(0.7), rel=1e-14)
    assert out["derivative"] == pytest.approx((f(0.7 + h) - f(0.7 - h)) / (2 * h), rel=1e-8)
    assert {s["op"] for s in out["steps"]} >= {"exp", "recip", "mul", "add"}
    assert all(s["rule"] for s in out["steps"])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"expr": "x*y"}, "takes one variable, got 2"),
        ({"x": "2; import os"}, "x must be a finite number"),
        ({"expr": "sin(x*"}, "ParseError: .*column 7"),
        (
            {"expr": "+".join(["sin(x)"] * 10) + "*" + "*".join(f"x^{k}" for k in range(90))},
            "a figure shows at most",
        ),
    ],
)
def test_dual_trace_bad_requests_say_why(params, message):
    with pytest.raises(RuntimeError, match=message):
        call("explain.dual_trace", **params)


def test_lower_lines_prints_every_backend_and_maps_each_node_to_its_lines():
    out = call("explain.lower_lines")
    assert [b["name"] for b in out["backends"]] == list(BACKENDS) and len(BACKENDS) == 8
    assert [o["name"] for o in out["outputs"]] == ["f", "df/dx"]
    serials = {n["serial"] for n in out["nodes"]}
    by_name = {n["name"]: n for n in out["nodes"]}
    assert by_name["v0"]["formula"] == "sin x" and by_name["v1"]["formula"] == "x · v0"
    for b in out["backends"]:
        lines = b["source"].split("\n")
        mapped = {s for ss in b["lines"].values() for s in ss}
        assert mapped == serials, b["name"]  # every node has a line, every line a node
        for number in b["lines"]:
            assert 1 <= int(number) <= len(lines)
        sin_x = by_name["v0"]["serial"]
        sin_lines = [lines[int(k) - 1] for k, ss in b["lines"].items() if ss == [sin_x]]
        assert len(sin_lines) == 1 and "sin" in sin_lines[0], b["name"]


def _grid(lo, hi, n):
    from array import array

    return list(array("f", [lo + (hi - lo) / (n - 1) * i for i in range(n)]))


def test_run_slice_on_the_cpu_plots_f_and_its_derivative_on_the_grid():
    n = 101
    out = call(
        "explain.run_slice",
        expr="x*sin(x*y)",
        n=n,
        bins=n,
        device="cpu",
        lo=-3.0,
        hi=3.0,
        fixed={"y": 0.5},
    )
    assert out["device"] == "cpu" and out["check"] is None and out["inputs"] == ["x", "y"]
    assert out["axis"] == "x" and out["outputs"] == ["f", "df/dx"]
    f_lo, f_hi = out["plot"]["f"]
    d_lo, d_hi = out["plot"]["d"]
    assert f_lo == f_hi and d_lo == d_hi  # one point per bin
    for x, f, d in zip(_grid(-3.0, 3.0, n), f_lo, d_lo, strict=True):
        assert f == pytest.approx(x * math.sin(0.5 * x), rel=1e-6, abs=1e-6)
        assert d == pytest.approx(math.sin(0.5 * x) + 0.5 * x * math.cos(0.5 * x), abs=1e-6)


def test_run_slice_chunks_merge_into_the_whole_and_bins_hold_min_and_max():
    params = {"expr": "sin(x)", "n": 1000, "bins": 10, "device": "cpu", "lo": 0.0, "hi": 6.0}
    whole = call("explain.run_slice", **params)
    f_lo, f_hi = whole["plot"]["f"]
    xs = _grid(0.0, 6.0, 1000)
    for b in range(10):
        vals = [math.sin(x) for i, x in enumerate(xs) if i * 10 // 1000 == b]
        assert f_lo[b] == pytest.approx(min(vals), abs=1e-6)
        assert f_hi[b] == pytest.approx(max(vals), abs=1e-6)
    merged_lo, merged_hi = [None] * 10, [None] * 10
    for start in range(0, 1000, 333):
        part = call("explain.run_slice", **params, start=start, count=min(333, 1000 - start))
        lo, hi = part["plot"]["f"]
        for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
            k = part["plot"]["first"] + i
            merged_lo[k] = a if merged_lo[k] is None else min(merged_lo[k], a)
            merged_hi[k] = b if merged_hi[k] is None else max(merged_hi[k], b)
    assert merged_lo == f_lo and merged_hi == f_hi


@pytest.mark.toolchain
def test_run_slice_on_the_best_device_is_checked_against_the_cpu():
    out = call(
        "explain.run_slice",
        expr="f(x, y, z) = sin(x) * y + exp(z / (1 + x*x))",
        n=4096,
        fixed={"y": 1.5, "z": -0.5, "w": 3.0},
    )  # w: not an input, ignored
    if out["device"] == "cpu":
        assert out["check"] is None
        skip_missing("adapter", "a GPU or C device", f"no GPU device here: {out['report']}")
    check = out["check"]
    assert check["verdict"] == "matches" and check["nonfinite_mismatch"] == 0
    assert check["outside"] == 0 and check["points"] == 2 * 4096
    worst = check["worst"]  # wgpu-py on lavapipe: f32 rounding, within the stated model
    assert abs(worst["gpu"] - worst["cpu"]) <= check["atol"] + check["rtol"] * abs(worst["cpu"])
    assert "cpu" in out["seconds"]


def test_run_slice_along_another_axis_and_with_nonfinite_values():
    out = call(
        "explain.run_slice",
        expr="sqrt(x) + y^2",
        axis="y",
        n=64,
        bins=64,
        device="cpu",
        fixed={"x": -1.0},
    )
    assert out["axis"] == "y" and out["nonfinite"] == 64  # sqrt(-1) is nan at every point
    assert out["plot"]["f"][0] == [None] * 64
    assert out["plot"]["d"][0][0] == pytest.approx(-8.0)  # ∂/∂y y² at y = -4


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"lo": 1.0, "hi": 1.0}, "lo < hi"),
        ({"n": 0}, "n must be an integer"),
        ({"n": 1 << 30}, "n must be an integer"),
        ({"n": 10, "start": 10}, "start and count"),
        ({"n": 10, "start": 5, "count": 6}, "start and count"),
        ({"bins": 0}, "bins must be"),
        ({"device": "tpu"}, "device must be one of"),
        ({"axis": "q"}, "no input named 'q'"),
        ({"fixed": {"y": "1; import os"}}, "finite numbers"),
        ({"expr": "x +* 2"}, "ParseError: .*column"),
    ],
)
def test_run_slice_bad_requests_say_why(params, message):
    with pytest.raises(RuntimeError, match=message):
        call("explain.run_slice", **{"expr": "x*y", **params})


def test_grid_points_hold_the_other_inputs():
    cols = grid_points(("x", "y"), "x", -1.0, 1.0, 5, 1, 3, {"y": 2.5})
    assert list(cols["x"]) == [-0.5, 0.0, 0.5] and list(cols["y"]) == [2.5] * 3
