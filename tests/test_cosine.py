"""Cosine is a primitive: every backend prints ``cos`` where the graph means cosine, and the
kernels agree with cos to f32 accuracy for |x| up to 1e4 on every backend this machine runs.

Spelled as ``sin(x + π/2)`` (as before cosine was a primitive) the argument's rounding in
f32 costs up to half an ulp of x (about 5e-4 at x = 1e4) before sin even starts; the test
shows that loss on an ideal f32 machine, then that no backend has it.
"""

from __future__ import annotations

import math

import pytest
import toolchains as tc

import tang
from tang.expr import graph as g
from tang.expr.grad import gradient
from tang.expr.ops import HALF_PI
from tang.lower import BACKENDS, lower
from tang.lower.base import to_f32
from tests.skips import skip_missing_tool

X = g.var("x")
# every 37th point of a grid over [-1e4, 1e4], and the ends, zero and multiples of π/2
POINTS = [to_f32(-1e4 + 20000.0 * k / 2000) for k in range(0, 2001, 7)]
POINTS += [to_f32(v) for v in (0.0, -1e4, 1e4, math.pi, -math.pi / 2, 3 * math.pi / 2, 9999.5)]
F32_TOL = 4e-7  # a few ulps of values in [-1, 1], with the input exact in f32
SPELLED = {  # how each backend calls cosine in its default dtype
    "wgsl": "cos(x)",
    "c": "cos(x)",
    "cuda": "cosf(x)",
    "metal": "precise::cos(x)",
    "opencl": "cos(x)",
    "glsl": "cos(x)",
    "javascript": "Math.cos(x)",
    "python": "_cos(x)",
}


def test_cos_is_one_node_and_its_derivative_is_minus_sin():
    node = tang.cos(X)
    assert node.op == "cos" and node.args == (X,)
    assert tang.grad(lambda x: tang.cos(x))(0.5) == -math.sin(0.5)
    grad = gradient(tang.Graph(["x"], [node]))
    assert tang.to_text(grad.outputs[1]) == "-sin(x)"
    assert tang.parse("cos(x)", ["x"]) is node


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_every_backend_prints_cos(backend):
    source = lower([tang.cos(X)], ["x"], backend).source
    assert SPELLED[backend] in source
    assert "1.5707964" not in source and "1.5707963267948966" not in source


def test_sin_of_a_shifted_argument_loses_accuracy_in_f32():
    """Why cosine needs its own op: the f32 sum x + π/2 rounds away the low bits."""
    worst = max(abs(to_f32(math.sin(to_f32(x + to_f32(HALF_PI)))) - math.cos(x)) for x in POINTS)
    assert worst > 1e-4


@pytest.mark.toolchain  # gcc, node, wgpu-py, glslang, PoCL: each where it is installed
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_cos_and_its_derivative_run_to_f32_accuracy_up_to_1e4(backend):
    missing = tc.missing_tool(backend)
    if missing:
        skip_missing_tool(missing, f"{missing} is not available on this machine")
    grad = gradient(tang.Graph(["x"], [tang.cos(X)]))
    printer = BACKENDS[backend]
    for dtype in printer.dtypes:
        source = lower(list(grad.outputs), ["x"], backend, dtype=dtype).source
        got = tc.run_kernel(backend, source, POINTS, len(POINTS), 2, dtype)
        n = len(POINTS)
        tol = F32_TOL if dtype == "f32" else 1e-15
        for i, x in enumerate(POINTS):
            assert abs(got[i] - math.cos(x)) <= tol, (backend, dtype, x, got[i])
            assert abs(got[n + i] + math.sin(x)) <= tol, (backend, dtype, x, got[n + i])
