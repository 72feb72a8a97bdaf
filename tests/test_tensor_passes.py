"""The passes are generic rewrites: fusion cuts the number of comprehensions and keeps every
value; the online-rescale pass turns attention as written (max, exp-sum, weighted sum) into
one online reduction that equals it to 1e-12 in float64 and writes no n×n buffer; and the
pass modules name no op at all."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensor_reference as ref
from test_tensor_ops import CASES, build, case_shapes, values_for

from tang import tensor as T
from tang.expr.graph import evaluate as eval_nodes
from tang.tensor import passes
from tang.tensor.op_names import op_names_in, op_specific_lines, pass_modules

PASSES = Path(passes.__file__).parent


def test_the_pass_modules_name_no_op() -> None:
    files = sorted(PASSES.glob("*.py"))
    assert pass_modules() == files
    assert {f.name for f in files} >= {"fuse.py", "grad.py", "online.py", "__init__.py"}
    for f in files:
        assert op_names_in(f.read_text()) == [], f.name
    assert op_specific_lines() == []
    # the scan does see op names where they are: the op definitions
    ops = Path(T.ops.__file__).read_text()
    assert {"matmul", "softmax", "attention", "rope", "swiglu", "cross_entropy"} <= set(
        op_names_in(ops)
    )
    assert len(op_specific_lines([Path(T.ops.__file__)])) > 10


# ---- fusion ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_fusion_preserves_every_ops_values(name: str) -> None:
    shapes = case_shapes(name, random.Random(name), small=False)
    vals = values_for(shapes, np.random.default_rng(11))
    graph = build(name, shapes)
    fused = T.fuse(graph)
    assert len(fused) <= len(graph)
    np.testing.assert_allclose(
        T.evaluate(fused, vals)["y"], T.evaluate(graph, vals)["y"], rtol=1e-13, atol=1e-13
    )


@pytest.mark.parametrize(
    "make, before, after",
    [
        (lambda x, w: T.exp(x) * 2.0 + 1.0, 3, 1),  # an element-wise chain: one comprehension
        (lambda x, w: -T.mean(x), 3, 1),  # a reduction and its epilogue
        (lambda x, w: T.relu(x @ w + 1.0), 3, 1),  # matmul, bias and activation
        (lambda x, w: T.softmax(x @ w), 6, 4),  # element-wise steps fold into the reductions
        (lambda x, w: T.rms_norm(x, w[:, 0]), 6, 2),  # a row reduction, then one map
    ],
)
def test_fusion_reduces_the_number_of_comprehensions(make, before: int, after: int) -> None:
    x, w = T.input("x", (3, 4)), T.input("w", (4, 4))
    graph = T.graph(y=make(x, w))
    fused = T.fuse(graph)
    assert (len(graph), len(fused)) == (before, after), str(fused)
    rng = np.random.default_rng(0)
    vals = {"x": rng.normal(size=(3, 4)), "w": rng.normal(size=(4, 4))}
    np.testing.assert_allclose(
        T.evaluate(fused, vals)["y"], T.evaluate(graph, vals)["y"], rtol=1e-13
    )
    python = T.evaluate(fused, {k: v.tolist() for k, v in vals.items()}, backend="python")["y"]
    np.testing.assert_allclose(np.array(python), T.evaluate(graph, vals)["y"], rtol=1e-13)


def test_fusion_of_a_derived_backward_keeps_its_values() -> None:
    x, w = T.input("x", (3, 5)), T.input("w", (5,))
    graph = T.graph(y=T.rms_norm(x, w))
    back = T.grad(graph)
    fused = T.fuse(back)
    assert len(fused) < len(back)
    rng = np.random.default_rng(2)
    vals = {"x": rng.normal(size=(3, 5)), "w": rng.normal(size=5), "d_y": rng.normal(size=(3, 5))}
    a, b = T.evaluate(back, vals), T.evaluate(fused, vals)
    for k in ("y", "d_x", "d_w"):
        np.testing.assert_allclose(b[k], a[k], rtol=1e-12, atol=1e-14)


# ---- online softmax -------------------------------------------------------------------------


def attention_graphs(n: int, causal: bool, heads=(4, 2), dim=8):
    q = T.input("q", (1, heads[0], n, dim))
    k = T.input("k", (1, heads[1], n, dim))
    v = T.input("v", (1, heads[1], n, dim))
    naive = T.graph(o=T.attention(q, k, v, causal=causal))
    derived = T.stabilize_softmax(T.fuse(naive))
    return naive, derived


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [(4, 2), (2, 2), (3, 1)])
def test_derived_attention_equals_naive_attention(causal: bool, heads) -> None:
    n = 32
    naive, derived = attention_graphs(n, causal, heads)
    rng = np.random.default_rng(5)
    vals = {
        "q": rng.normal(size=(1, heads[0], n, 8)) * 3,
        "k": rng.normal(size=(1, heads[1], n, 8)),
        "v": rng.normal(size=(1, heads[1], n, 8)),
    }
    want = T.evaluate(naive, vals)["o"]
    got = T.evaluate(derived, vals)["o"]
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-12 * scale
    np.testing.assert_allclose(
        want, ref.attention(vals["q"], vals["k"], vals["v"], causal), rtol=1e-12, atol=1e-12
    )
    # one comprehension is left: no n×n buffer, no separate max or sum pass
    assert len(derived) == 1, str(derived)
    for c in derived.comprehensions:
        assert list(c.shape).count(n) <= 1
    assert any(list(c.shape).count(n) == 2 for c in naive.comprehensions)
    (out,) = derived.comprehensions
    assert out.monoid is not None and out.monoid.state == ("m", "l", "acc")
    assert "then (m, l, acc) ↦ acc / l" in str(derived)


def test_derived_attention_on_the_pure_python_evaluator() -> None:
    naive, derived = attention_graphs(6, True, (2, 1), dim=2)
    rng = np.random.default_rng(8)
    vals = {
        "q": rng.normal(size=(1, 2, 6, 2)),
        "k": rng.normal(size=(1, 1, 6, 2)),
        "v": rng.normal(size=(1, 1, 6, 2)),
    }
    got = T.evaluate(derived, {k: v.tolist() for k, v in vals.items()}, backend="python")["o"]
    np.testing.assert_allclose(np.array(got), T.evaluate(naive, vals)["o"], rtol=1e-12, atol=1e-14)


def test_the_online_combine_is_associative() -> None:
    """What lets the reduction tile: (a ⊕ b) ⊕ c = a ⊕ (b ⊕ c), the identity is neutral."""
    _, derived = attention_graphs(8, False, (2, 2), dim=2)
    monoid = derived.comprehensions[0].monoid
    names = list(monoid.state) + [s + "'" for s in monoid.state]

    def combine(a, b):
        return eval_nodes(list(monoid.combine), dict(zip(names, [*a, *b])))

    rng = random.Random(1)
    for _ in range(50):
        a, b, c = ([rng.uniform(-5, 5), rng.uniform(0.1, 3), rng.uniform(-3, 3)] for _ in range(3))
        left, right = combine(combine(a, b), c), combine(a, combine(b, c))
        assert left == pytest.approx(right, rel=1e-12, abs=1e-12)
        assert combine(list(monoid.identity), a) == pytest.approx(a, rel=1e-15)
        assert combine(a, list(monoid.identity)) == pytest.approx(a, rel=1e-15)
    assert monoid.identity == (-math.inf, 0.0, 0.0)


def test_online_rescale_keeps_other_softmax_shapes_right() -> None:
    """Where the pattern half-matches (a softmax that is itself the output, a log-sum-exp),
    the rewrite keeps values; where nothing matches it leaves the graph alone."""
    x, t = T.input("x", (5, 7)), T.input("t", (5,))
    rng = np.random.default_rng(3)
    vals = {"x": rng.normal(size=(5, 7)), "t": rng.integers(0, 7, size=5).astype(float)}
    for y in (T.softmax(x), T.log_softmax(x), T.cross_entropy(x, t), x @ x.T):
        graph = T.fuse(T.graph(y=y))
        online = T.online_rescale(graph)
        np.testing.assert_allclose(
            T.evaluate(online, vals)["y"], T.evaluate(graph, vals)["y"], rtol=1e-12
        )
    plain = T.fuse(T.graph(y=x @ x.T))
    assert str(T.online_rescale(plain)) == str(plain)


DOCS_EXAMPLE = """
from tang import tensor as T

q, k, v = T.input("q", (1, 2, 8, 4)), T.input("k", (1, 1, 8, 4)), T.input("v", (1, 1, 8, 4))
naive = T.graph(o=T.attention(q, k, v, causal=True))
for graph in (naive, T.stabilize_softmax(T.fuse(naive))):
    print("\\n".join("  " + line for line in str(graph).splitlines()))
    print("\\0")
"""


def test_the_docs_example_is_what_the_code_prints() -> None:
    """docs/tensor-ir.md pastes the printed derived attention: it must stay the real output,
    as a fresh interpreter prints it (a product's factors print in the order their nodes were
    made, so a process that made them earlier in another order prints them swapped)."""
    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "tensor-ir.md").read_text()
    done = subprocess.run(
        [sys.executable, "-c", DOCS_EXAMPLE], cwd=root, capture_output=True, text=True, check=True
    )
    blocks = [b.strip("\n") for b in done.stdout.split("\0") if b.strip()]
    assert len(blocks) == 2
    for block in blocks:
        assert block in doc


def random_program(rng: random.Random, x: T.Tensor, w: T.Tensor) -> T.Tensor:
    """A random chain of views, maps, reductions and products over x (4, 4) and w (4, 4)."""
    y = x
    for _ in range(5):
        step = rng.choice(["T", "flip", "map", "add", "matmul", "sum", "max", "softmax", "split"])
        if step == "T" and y.ndim == 2:
            y = y.T
        elif step == "flip" and y.ndim == 2:
            y = y[::-1, 1:] if y.shape[1] > 1 else y[::-1]
        elif step == "map":
            y = rng.choice([T.tanh, T.sigmoid, lambda t: t * t + 1.0])(y)
        elif step == "add" and y.ndim == 2 and y.shape[1] <= 4:
            y = y + w[: y.shape[0], : y.shape[1]] if y.shape[0] <= 4 else y
        elif step == "matmul" and y.ndim == 2 and y.shape[1] == 4:
            y = y @ w
        elif step in ("sum", "max") and y.ndim == 2:
            y = (T.sum if step == "sum" else T.max)(y, rng.choice([0, 1]), keepdims=True) * y
        elif step == "softmax" and y.ndim == 2:
            y = T.softmax(y, rng.choice([0, 1]))
        elif step == "split" and y.ndim == 2 and y.shape[1] % 2 == 0:
            y = T.sum(y.reshape(y.shape[0], 2, y.shape[1] // 2), 1)
    return T.sum(y * y)


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_keep_values_through_every_pass(seed: int) -> None:
    """Generic means generic: on random programs, fusion and the online rewrite keep the
    values, and the derived gradient agrees with central differences."""
    rng = random.Random(seed)
    x, w = T.input("x", (4, 4)), T.input("w", (4, 4))
    graph = T.graph(y=random_program(rng, x, w))
    data = np.random.default_rng(seed)
    vals = {n: data.normal(size=(4, 4)) * 0.5 for n in graph.inputs}
    want = T.evaluate(graph, vals)["y"]
    fused = T.fuse(graph)
    online = T.online_rescale(fused)
    assert len(fused) <= len(graph)
    np.testing.assert_allclose(T.evaluate(fused, vals)["y"], want, rtol=1e-12)
    np.testing.assert_allclose(T.evaluate(online, vals)["y"], want, rtol=1e-12)
    back = T.fuse(T.grad(graph))
    got = T.evaluate(back, {**vals, "d_y": np.array(1.0)})
    h = 1e-6
    for name in graph.inputs:  # w only when the program reached it
        fd = np.zeros((4, 4))
        for idx in np.ndindex(4, 4):
            plus, minus = vals[name].copy(), vals[name].copy()
            plus[idx] += h
            minus[idx] -= h
            up = T.evaluate(graph, {**vals, name: plus})["y"]
            down = T.evaluate(graph, {**vals, name: minus})["y"]
            fd[idx] = (up - down) / (2 * h)
        np.testing.assert_allclose(got[f"d_{name}"], fd, rtol=1e-5, atol=1e-6, err_msg=name)


# ---- the numpy evaluator's strided path -----------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_strided_numpy_evaluator_gives_the_general_paths_bits(name: str) -> None:
    """``evaluate``'s numpy path reads through strided views with the body as one function
    where it can (tang/tensor/evaluate.py ``_numpy_strided``); the index-arithmetic path it
    stands in for gives the same bits, for every op, its derived gradient and its fusion."""
    import sys

    evaluator = sys.modules["tang.tensor.evaluate"]
    run = evaluator._run_numpy
    shapes = case_shapes(name, random.Random(name), small=True)
    vals = values_for(shapes, np.random.default_rng(5))
    graph = build(name, shapes)
    derived = T.grad(graph, "y")
    seed = {"d_y": np.random.default_rng(6).standard_normal(derived.inputs["d_y"])}
    graphs = (graph, derived, T.fuse(graph))
    for g, inputs in zip(graphs, (vals, {**vals, **seed}, vals)):
        fast, general = run(g, inputs), run(g, inputs, strided=False)
        for out in g.outputs:
            assert np.array_equal(fast[out], general[out], equal_nan=True), (name, out)
        if name != "concat" and g is not graphs[-1]:  # (guarded reads; fusion's inlined ones)
            assert all(evaluator._PLANS.get(c) for c in g.comprehensions), name
