"""Values and gradients at singular points agree on nan/±inf in every backend.

Each case is an expression, its derivative and the points where something is singular
(log 0, sqrt of a negative, 1/0, overflow, atan2 on an axis, nan inputs, -0.0). All cases
run as one kernel per backend (and dtype) and are compared with the reference in that
precision: ``evaluate`` for f64, an ideal f32 machine for f32 (f32 overflows earlier).

Vulkan (WGSL, GLSL) lets a driver treat inf and nan as indeterminate: lavapipe's compiler
folds x*0 → 0, x-x → 0 and log2(exp2 x) → x, and NVIDIA's driver (H200, 580.159) gives nan
for the derivative of x/(x*x+1) at 1e30, where x*x overflows f32 and only 1/inf = 0 brings
the value back. The cases marked ``folds`` are therefore checked on the IEEE backends only.
Every other case must match everywhere.
"""

from __future__ import annotations

import math

import pytest
import toolchains as tc
from toolchains import evaluate_f32, kind

from tang.expr import graph as g
from tang.expr.grad import gradient
from tang.expr.graph import Graph, evaluate, var
from tang.lower import lower
from tests.skips import skip_missing_tool

x = var("x")
INF, NAN = math.inf, math.nan

# (label, expression, points, folds: a Vulkan driver may fold it under IEEE-breaking rules)
CASES = [
    ("log(x)", x.log(), [0.0, -0.0, -1.0, INF], False),
    ("sqrt(x)", x.sqrt(), [0.0, -1.0, INF], False),
    ("1/x", 1.0 / x, [0.0, -0.0, INF, -INF], False),
    ("exp(x)", x.exp(), [1000.0, -1000.0, 100.0, INF, -INF], False),
    ("atan2(1, x)", g.atan2(1.0, x), [0.0, -0.0, INF], False),
    ("sin(x)", x.sin(), [INF, NAN], False),
    ("x*log(x)", x * x.log(), [0.0], False),
    ("x^1.5", x**1.5, [0.0, -1.0], False),
    ("tanh(x)", x.tanh(), [100.0, -100.0, 1000.0, INF, -INF, NAN], False),
    ("sqrt(x*x)", (x * x).sqrt(), [0.0], False),
    ("x/(x*x+1)", x / (x * x + 1.0), [1e30, 1e200], True),
    ("abs(x)", abs(x), [NAN, -0.0], False),
    ("x*0", x * 0.0, [INF, NAN], True),
    ("x-x", x - x, [INF], True),
    ("log(exp(x))", x.exp().log(), [100.0, 1000.0], True),
    ("log(x)*0+1", x.log() * 0.0 + 1.0, [NAN, -1.0], True),
]
FOLDING = {"wgsl", "glsl"}
BACKENDS = [
    ("python", "f64"),
    ("c", "f64"),
    ("c", "f32"),
    ("javascript", "f64"),
    ("wgsl", "f32"),
    ("glsl", "f32"),
    ("opencl", "f32"),
    ("opencl", "f64"),
    ("metal", "f32"),
    ("cuda", "f32"),
    ("cuda", "f64"),
]


def _layout():
    """All outputs (value and derivative per case) and all points, with the case of each."""
    outputs, owner = [], []
    for c, (_, expr, _, _) in enumerate(CASES):
        outputs += gradient(Graph(["x"], [expr])).outputs
        owner += [c, c]
    points = [(c, p) for c, (_, _, pts, _) in enumerate(CASES) for p in pts]
    return outputs, owner, points


def test_reference_has_the_singular_values():
    outputs, _, points = _layout()
    seen = {kind(v) for _, p in points for v in evaluate(outputs, {"x": p})}
    assert seen == {"num", "nan", "inf", "-inf"}
    assert evaluate([outputs[0], outputs[1]], {"x": 0.0}) == [-INF, INF]  # log, 1/x at 0


@pytest.mark.toolchain
@pytest.mark.parametrize(("backend", "dtype"), BACKENDS, ids=[f"{b}-{d}" for b, d in BACKENDS])
def test_singular_points_agree(backend, dtype):
    missing = tc.missing_tool(backend)
    if missing:
        skip_missing_tool(missing, f"{missing} is not available on this machine")
    if backend == "opencl" and dtype == "f64" and not tc.opencl_has_fp64():
        pytest.skip("this OpenCL device has no cl_khr_fp64")
    outputs, owner, points = _layout()
    n, m = len(points), len(outputs)
    src = [p for _, p in points]
    got = tc.run_kernel(
        backend, lower(outputs, ["x"], backend, dtype=dtype).source, src, n, m, dtype
    )
    bad, checked = [], 0
    for i, (case, p) in enumerate(points):
        ref = evaluate(outputs, {"x": p}) if dtype == "f64" else evaluate_f32(outputs, {"x": p})[0]
        for j in (2 * case, 2 * case + 1):  # this case's value and derivative
            label, _, _, folds = CASES[owner[j]]
            if folds and backend in FOLDING:
                continue  # Vulkan latitude: see the module docstring
            v, r = got[j * n + i], ref[j]
            tol = 1e-12 if dtype == "f64" else 2e-6
            checked += 1
            same_kind = kind(v) == kind(r)
            if not same_kind or (kind(r) == "num" and abs(v - r) > tol * max(1.0, abs(r))):
                what = "value" if j % 2 == 0 else "derivative"
                bad.append(f"{what} of {label} at x={p!r}: {backend} {v!r}, expected {r!r}")
    assert not bad, "\n".join(bad)
    assert checked >= 2 * sum(len(c[2]) for c in CASES if not c[3])
