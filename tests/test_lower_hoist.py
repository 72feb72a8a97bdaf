"""The Python printer's loop-invariant code motion (tang.lower.hoist): what moves out of a
loop and what must stay, and that every printed nest computes the same bits with it."""

from __future__ import annotations

import numpy as np
import pytest

import tang.gpu as gpu
from tang import tensor as T
from tang.lower.hoist import hoist_invariants
from tang.lower.python import Python
from tang.tensor.lower import lower_graph
from tests.test_llm_quantized import inputs, product_graph, random_blocks
from tests.test_tensor_lower import graphs, run_python, sample


def run(source: str, *args):
    namespace: dict = {}
    exec(compile(source, "<hoisted>", "exec"), namespace)  # sources written in this file
    return namespace["f"](*args)


def test_an_invariant_statement_and_its_readers_move_out_of_the_loop() -> None:
    source = """def f(a, out):
    # a comment outside the loops stays as it was
    for i in range(3):
        s = 0.0
        for j in range(4):
            d = a[2 * i] * 0.5
            e = d + 1.0
            s = s + e * a[j]
        out[i] = s
    return out
"""
    got = hoist_invariants(source)
    assert "    # a comment outside the loops stays as it was" in got
    inner = got.split("for j in range(4):")[1]
    assert "d = " not in inner and "e = " not in inner and "s = s + e * a[j]" in inner
    a = [1.5, -2.0, 0.25, 3.0, 7.0, -1.0]
    assert run(got, a, [0.0] * 3) == run(source, a, [0.0] * 3)


@pytest.mark.parametrize("extent", ["n", "1", "0", "min(n, 4)"])
def test_a_loop_that_may_run_once_or_never_keeps_its_work(extent: str) -> None:
    """Hoisting out of a loop that never runs would do work (or raise) where none was done;
    out of one that runs once it saves nothing."""
    source = f"""def f(a, n):
    t = 0.0
    for j in range({extent}):
        d = a[5] * 2.0
        t = t + d
    return t
"""
    assert hoist_invariants(source) == source
    if extent != "1":
        assert run(hoist_invariants(source), [1.0], 0) == 0.0  # a[5] is never read


def test_only_the_parts_always_evaluated_move() -> None:
    """A conditional's branches and the right of ``and`` stay in the loop; its test moves."""
    source = """def f(a, k):
    t = 0.0
    for j in range(4):
        t = t + (a[j] if k * 2 > 3 else a[k * 9])
    return t
"""
    got = hoist_invariants(source)
    inner = got.split("for j in range(4):")[1]
    assert "k * 2 > 3" not in inner and "a[k * 9]" in inner
    assert run(got, [1.0, 2.0, 3.0, 4.0], 2) == run(source, [1.0, 2.0, 3.0, 4.0], 2) == 10.0


def test_loads_stay_in_a_loop_that_stores_and_carried_values_stay() -> None:
    source = """def f(a):
    for j in range(3):
        x = a[0]
        a[j + 1] = x + 1.0
    c = 0.0
    for j in range(3):
        y = c * 2.0
        c = 5.0
        a[0] = a[0] + y
    return a
"""
    got = hoist_invariants(source)
    assert got.count("x = a[0]") == 1 and got.index("x = a[0]") > got.index("for j")
    second = got.split("c = 0.0")[1]
    assert second.index("y = c * 2.0") > second.index("for j")  # read before c is set
    assert run(got, [1.0, 0.0, 0.0, 0.0]) == run(source, [1.0, 0.0, 0.0, 0.0])


def test_whole_number_sums_are_regrouped_and_float_sums_are_not() -> None:
    """``a[i + j + 2]``: ``i + 2`` moves out as one value; float arithmetic keeps its order
    (reassociating it would change the rounding)."""
    source = """def f(a, x, out):
    for i in range(2):
        for j in range(3):
            out[3 * i + j] = a[4 * i + j + 2] + (x * i + j + 0.5)
    return out
"""
    got = hoist_invariants(source)
    inner = got.split("for j in range(3):")[1]
    assert "+ 2]" not in inner and "+ j + 0.5" in inner
    a = [float(k) for k in range(10)]
    assert run(got, a, 0.1, [0.0] * 6) == run(source, a, 0.1, [0.0] * 6)


def unhoisted(monkeypatch: pytest.MonkeyPatch, graph: T.TensorGraph) -> dict:
    with monkeypatch.context() as m:
        m.setattr(Python, "finish_nest", lambda self, source: source)
        return run_python(graph, sample(graph))


@pytest.mark.parametrize("name", sorted(graphs()))
def test_every_printed_nest_gives_the_same_bits_hoisted(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = graphs()[name]
    want = unhoisted(monkeypatch, graph)
    got = run_python(graph, sample(graph))
    for o in graph.outputs:
        np.testing.assert_array_equal(got[o], want[o], err_msg=o)


def test_a_q4_1_product_decodes_each_block_s_scale_once(monkeypatch) -> None:
    """The 4-bit product's f16 scale and minimum depend on the row and block alone: hoisted,
    they are decoded once per block instead of once per code word; on the CPU device the
    product is the same bits either way."""
    rows, cols = 8, 64
    graph = product_graph("Q4_1", rows, cols)
    given = inputs(
        random_blocks("Q4_1", rows, cols), np.random.default_rng(0).normal(size=(2, cols))
    )
    dev = gpu.device("cpu", fallback=False)
    hoisted = lower_graph(graph, "python")
    got = T.Compiled(graph, dev)(given)["y"]
    with monkeypatch.context() as m:
        m.setattr(Python, "finish_nest", lambda self, source: source)
        plain = lower_graph(graph, "python")
        want = T.Compiled(graph, dev)(given)["y"]
    assert plain.split("for ")[-1].count("_half(") == 2  # both halves in the innermost loop
    assert "_half(" not in hoisted.split("for ")[-1]
    np.testing.assert_array_equal(got, want)


def test_an_expression_too_deep_to_print_back_leaves_its_loop_as_printed() -> None:
    terms = " + ".join(f"a[j] * {k}.5" for k in range(600))
    body = f"    t = 0.0\n    for j in range(4):\n        d = k * 2.0\n        t = t + {terms}\n"
    source = f"def f(a, k):\n{body}    return t\n"
    assert hoist_invariants(source) == source
