"""The one compile pipeline (``tang.compile``): text or a function → graph → gradient →
simplified graph → program → kernel with its binding layout, used by the editor and by Run
alike, and what ``tang.gpu`` runs (a printed kernel, whose bindings are not read back)."""

from __future__ import annotations

import math

import pytest

import tang
import tang.gpu as gpu
from demos import explain, playground
from tang.compile import (
    compile_function,
    derivative_name,
    expression_plan,
    function_graph,
    with_gradient,
)
from tang.gpu.batch import evaluate
from tang.gpu.wgsl_info import inspect
from tang.lower import BACKENDS

TEXT = "f(x, y) = x*sin(y) + cos(x*y)"


def test_text_and_function_compile_to_the_same_graph_and_names():
    from_text = compile_function(TEXT)
    from_function = compile_function(lambda x, y: x * tang.sin(y) + tang.cos(x * y))
    assert from_text.graph.outputs == from_function.graph.outputs  # the very same nodes
    assert from_text.names == ("f", "df/dx", "df/dy") == from_function.names
    assert derivative_name("t") == "df/dt"
    assert compile_function("x + z", grad=False).names == ("f",)
    assert function_graph("x + z").inputs == ("x", "z")
    assert function_graph("2", must_have="y").inputs == ("y",)


def test_a_declared_function_keeps_its_name_through_gradient_and_simplify():
    compiled = compile_function("g(a, b) = a**b")
    assert compiled.function.name == compiled.graph.name == "g"
    assert compiled.names == ("g", "dg/da", "dg/db") == compiled.plan.names
    assert compiled.entry == "g" and derivative_name("a", "g") == "dg/da"
    run = explain._plan("g(a, b) = a**b", "b", True)
    assert run.names == ("g", "dg/db")
    # a name a kernel cannot take (a keyword, or one of its inputs) leaves the kernel f
    assert compile_function("main(a) = a").entry == compile_function("a(a) = a").entry == "f"
    assert compile_function("a(a) = a").names == ("a", "da/da")


def test_the_editor_and_run_compile_one_graph_with_one_spelling():
    editor = playground.compile_expression(TEXT)
    run = explain._plan(TEXT, None, True)
    assert editor["outputs"] == list(run.names) == ["f", "df/dx", "df/dy"]
    plan = expression_plan(TEXT, grad=True)
    assert plan.outputs == run.outputs == compile_function(TEXT).program.outputs
    assert with_gradient(function_graph(TEXT)).names == plan.names
    kernel = compile_function(TEXT).kernel("wgsl")
    assert editor["kernels"]["wgsl"]["source"] == kernel.source


def test_a_printed_kernel_carries_the_bindings_its_text_declares():
    for text in (TEXT, "x", "3", "f() = 1"):
        kernel = compile_function(text, grad=False).kernel("wgsl", name="main_k")
        assert kernel.info == inspect(kernel.source)  # what a reader would find, unread
        assert kernel.info.entry == "main_k"
    assert BACKENDS["c"].render(compile_function("x").program).info is None  # not a GPU's


@pytest.mark.toolchain  # opens a wgpu-py device
def test_gpu_runs_a_compiled_kernel_by_its_carried_layout(native_device):
    dev = native_device
    assert dev.printer == "wgsl" and gpu.CPUDevice().printer == "python"
    kernel = compile_function(TEXT).kernel(dev.printer)
    compiled = dev.kernel(kernel)
    assert compiled.info is kernel.info  # taken from the kernel, not read from its text
    with pytest.raises(gpu.ShaderError, match="no compute entry point named 'g'"):
        dev.kernel(kernel, "g")
    points = {"x": [0.5, -1.25, 2.0], "y": [1.0, 0.25, -3.0]}
    batch = evaluate(compile_function(TEXT).plan, points, device=dev)
    for i, (x, y) in enumerate(zip(points["x"], points["y"], strict=True)):
        want = x * math.sin(y) + math.cos(x * y)
        assert math.isclose(batch.columns[0][i], want, rel_tol=1e-5, abs_tol=1e-6)
        want_dx = math.sin(y) - y * math.sin(x * y)
        assert math.isclose(batch.columns[1][i], want_dx, rel_tol=1e-5, abs_tol=1e-5)
