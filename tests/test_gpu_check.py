"""The Run panel's one tolerance model (demos/_gpu_check.py): |gpu − cpu| ≤ atol + rtol·|cpu|,
the worst point named, and points outside it explained by conditioning or the adapter's own
math only when those really account for them."""

from __future__ import annotations

import math
from array import array

import pytest

from demos._gpu_check import ATOL, F32_U, RTOL, adapter_math, check, merge

NAN = float("nan")
INF = float("inf")


def cols(*values: list[float]) -> list[array]:
    return [array("d", v) for v in values]


def test_within_the_tolerance_matches_and_names_the_worst_point():
    xs = [0.0, 1.0, 2.0]
    cpu = cols([1.0, 100.0, 3.0], [0.5, 0.5, 0.5])
    gpu = cols([1.0 + ATOL / 2, 100.0 + 100 * RTOL / 2, 3.0], [0.5, 0.5, 0.5])
    c = check(xs, gpu, cpu, ["value", "d/dx"])
    assert c["verdict"] == "matches" and c["matches"] and c["outside"] == 0
    assert c["points"] == 6
    w = c["worst"]
    assert (w["x"], w["output"], w["cpu"]) == (1.0, "value", 100.0)
    assert w["ratio"] == pytest.approx((100 * RTOL / 2) / (ATOL + RTOL * 100), rel=1e-6)


def test_a_large_difference_at_a_well_conditioned_point_differs():
    xs = [0.0, 1.0]
    c = check(xs, cols([1.0, 2.001]), cols([1.0, 2.0]), ["value"], slope=lambda k, x: 1.0)
    assert c["verdict"] == "differs" and c["unexplained"] == 1 and not c["matches"]
    assert c["worst"]["x"] == 1.0 and c["worst"]["gpu"] == 2.001


def test_near_a_pole_the_condition_bound_explains_and_says_so():
    x = 1e-3  # f = sin(1/x): |x·f′(x)| = |cos(1/x)|/x, a thousand times the f32 rounding of x
    f = math.sin(1 / x)
    slope = lambda k, x: -math.cos(1 / x) / x**2  # noqa: E731
    bound = 16 * F32_U * (abs(x * slope(0, x)) + abs(f))
    assert bound > 10 * (ATOL + RTOL * abs(f))
    c = check([x], cols([f + 0.5 * bound]), cols([f]), ["value"], slope=slope)
    assert c["outside"] == 1 and c["singular"] == 1 and c["verdict"] == "explained"
    c = check([x], cols([f + 2 * bound]), cols([f]), ["value"], slope=slope)
    assert c["verdict"] == "differs"


def test_the_adapters_own_math_is_named_only_for_the_ops_it_gets_wrong():
    assert adapter_math("swiftshader device", {"sin", "mul"}) == ("swiftshader", 5e-4)
    assert adapter_math("swiftshader device", {"exp2", "mul"}) is None
    assert adapter_math("llvmpipe (LLVM 15)", {"sin"}) is None
    adapter = adapter_math("SwiftShader", {"sin"})
    c = check(
        [0.5],
        cols([math.sin(0.5) + 2e-4]),
        cols([math.sin(0.5)]),
        ["value"],
        adapter,
        slope=lambda k, x: math.cos(x),
    )
    assert c["adapter"] == 1 and c["verdict"] == "explained" and c["adapter_name"] == "swiftshader"


def test_nonfinite_values_agree_only_with_themselves_where_wgsl_defines_them():
    c = check([0, 1, 2, 3], cols([1.0, NAN, INF, 2.0]), cols([1.0, NAN, INF, NAN]), ["value"])
    assert c["nonfinite_mismatch"] == 0 and c["points"] == 1
    assert c["indeterminate"] == 1 and c["verdict"] == "explained"  # WGSL: undefined there
    assert c["example"] == {"x": 3, "output": "value", "gpu": 2.0, "cpu": "nan"}
    c = check([0, 1], cols([1.0, INF]), cols([1.0, 5.0]), ["value"])
    assert c["nonfinite_mismatch"] == 1 and c["verdict"] == "differs"


def test_chunks_merge_to_the_check_of_the_whole():
    xs = [0.0, 1.0, 2.0, 3.0]
    cpu = cols([1.0, 2.0, 3.0, 4.0])
    gpu = cols([1.0, 2.5, 3.0, 4.0 + 1e-6])
    whole = check(xs, gpu, cpu, ["value"], slope=lambda k, x: 1.0)
    halves = [
        check(
            xs[a:b], [c[a:b] for c in gpu], [c[a:b] for c in cpu], ["value"], slope=lambda k, x: 1.0
        )
        for a, b in ((0, 2), (2, 4))
    ]
    merged = merge(merge(None, halves[0]), halves[1])
    assert merged == whole
