"""The page's ``tensor_ir.*`` worker methods (How it works 3 and 4), called through demos.api:
view chains read what numpy's index arithmetic says, and the derived attention's key-by-key
state (folded from the IR's monoid) ends at the softmax-weighted output."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import random

import numpy as np
import pytest

from demos import api
from demos.tensor_ir import attention_graphs, example_inputs
from tang.expr.graph import collect


@pytest.fixture(autouse=True, scope="module")
def _forget_interned_nodes():
    """Free this module's graph nodes afterwards: tang.expr orders a commutative node's
    operands by their age in the intern table, so nodes left behind (``k[0, 0, i4, r0]``)
    would change how a later module's graphs print."""
    yield
    gc.collect()
    collect()


def call(method, **params):
    reply = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    if not reply["ok"]:
        raise RuntimeError(f"{reply['error']['type']}: {reply['error']['message']}")
    return reply["result"]


# ---- views ------------------------------------------------------------------------------


def random_step(rng: random.Random, a: np.ndarray) -> tuple[dict, np.ndarray] | None:
    """One random view step as the page sends it, and numpy's spelling of the same step."""
    kind = rng.choice(["transpose", "slice", "stride", "broadcast", "expand", "index", "reshape"])
    axis = rng.randrange(a.ndim)
    key: list = [slice(None)] * axis
    if kind == "transpose":
        return {"op": "transpose"}, a.T
    if kind == "slice":
        n = a.shape[axis]
        start, stop = (
            rng.choice([None, rng.randrange(-n, n)]),
            rng.choice([None, rng.randrange(-n, n + 1)]),
        )
        step = rng.choice([None, 1, 2, -1, -2, 3])
        out = a[(*key, slice(start, stop, step))]
        op = {"op": "slice", "axis": axis, "start": start, "stop": stop, "step": step}
        return (op, out) if out.size else None
    if kind == "stride":
        step = rng.choice([2, 3, -1])
        return {"op": "stride", "axis": axis, "step": step}, a[(*key, slice(None, None, step))]
    if kind == "broadcast":
        shape = [rng.choice([2, 3]) if n == 1 else n for n in a.shape]
        if a.ndim < 3 and rng.random() < 0.5:
            shape = [2, *shape]
        return {"op": "broadcast", "shape": shape}, np.broadcast_to(a, shape)
    if kind == "expand":
        if a.ndim == 3:
            return None
        at = rng.randrange(a.ndim + 1)
        return {"op": "expand", "axis": at}, np.expand_dims(a, at)
    if kind == "index":
        if a.ndim == 1:
            return None
        i = rng.randrange(-a.shape[axis], a.shape[axis])
        return {"op": "index", "axis": axis, "i": i}, a[(*key, i)]
    # reshape: flatten, or split the size into two factors
    size = a.size
    factors = [f for f in range(1, size + 1) if size % f == 0]
    f = rng.choice(factors)
    shape = rng.choice([[size], [f, size // f]])
    return {"op": "reshape", "shape": shape}, a.reshape(shape)


def numpy_view(base: np.ndarray, a: np.ndarray) -> tuple[list, list, int]:
    """numpy's (shape, strides, offset) of ``a`` over ``base``'s memory, in elements."""
    item = base.itemsize
    offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return (
        list(a.shape),
        strides_that_matter(a.shape, [s // item for s in a.strides]),
        offset // item,
    )


def strides_that_matter(shape, strides) -> list:
    """Strides with those of extent-1 axes (which never move) set to 0."""
    return [s if n > 1 else 0 for n, s in zip(shape, strides)]


@pytest.mark.parametrize("seed", range(40))
def test_reads_of_random_view_chains_are_numpys_index_arithmetic(seed):
    rng = random.Random(seed)
    source = [rng.randint(1, 6) for _ in range(rng.choice([1, 2, 2, 3]))]
    base = np.arange(math.prod(source), dtype=np.int64).reshape(source)
    a, ops = base, []
    for _ in range(rng.randint(1, 5)):
        step = random_step(rng, a)
        if step is None or step[1].size > 512:
            continue
        ops.append(step[0])
        a = step[1]
    out = call("tensor_ir.views", shape=source, ops=ops)
    assert out["output"]["shape"] == list(a.shape)
    # each element of ``base`` holds its own flat position, so numpy's result lists the
    # positions each output cell reads; the worker's reads come from the graph's views
    want = np.stack(np.unravel_index(a.ravel(), source), axis=-1).tolist()
    assert out["reads"] == want, (ops, out["ir"])
    assert out["output"]["values"] == [float(v) for v in a.ravel()]  # the evaluator agrees
    assert len(out["steps"]) == len(ops) + 1
    copied = out["elements_copied"]
    assert out["bytes_copied"] == 4 * copied
    if np.shares_memory(a, base):  # numpy made no copy, and neither did tang
        assert copied == 0
        last = out["steps"][-1]
        strides = strides_that_matter(last["shape"], last["strides"])
        assert (last["shape"], strides, last["offset"]) == numpy_view(base, a)
    else:
        assert copied > 0 and any(s["buffer"] == "copy" for s in out["steps"])


def test_the_page_chain_composes_without_copies_and_prints_its_read():
    ops = [
        {"op": "transpose"},
        {"op": "slice", "axis": 0, "start": 1, "stop": 5},
        {"op": "stride", "axis": 1, "step": 2},
    ]
    out = call("tensor_ir.views", shape=[4, 6], ops=ops)
    assert [(s["label"], s["shape"], s["strides"], s["offset"]) for s in out["steps"]] == [
        ("x", [4, 6], [6, 1], 0),
        (".T", [6, 4], [1, 6], 0),
        ("[1:5]", [4, 4], [1, 6], 1),
        ("[:, ::2]", [4, 2], [1, 12], 1),
    ]
    assert out["bytes_copied"] == 0
    assert out["ir_lines"][1] == "y[i0:4, i1:2] = x[2*i1, i0 + 1]"
    labels = [
        {"op": "slice", "axis": 0, "start": 1},
        {"op": "slice", "axis": 1, "start": -1, "step": -2},
        {"op": "slice", "axis": 0},
    ]
    out = call("tensor_ir.views", shape=[4, 6], ops=labels)
    assert "".join(s["label"] for s in out["steps"]) == "x[1:][:, -1::-2][:]"
    # broadcasting one row: stride 0, every output row reads the same source row
    out = call(
        "tensor_ir.views",
        shape=[4, 6],
        ops=[
            {"op": "slice", "axis": 0, "start": 2, "stop": 3},
            {"op": "broadcast", "shape": [3, 6]},
        ],
    )
    assert out["steps"][-1]["strides"] == [0, 1] and out["steps"][-1]["offset"] == 12
    assert out["reads"] == [[2, c] for _ in range(3) for c in range(6)]
    # flattening a transpose is not affine: it says so by materialising a copy
    out = call(
        "tensor_ir.views", shape=[4, 6], ops=[{"op": "transpose"}, {"op": "reshape", "shape": [24]}]
    )
    assert out["steps"][-1]["buffer"] == "copy" and out["bytes_copied"] == 4 * 24


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([{"op": "zip"}], "ops[0]: unknown step 'zip'"),
        (
            [{"op": "transpose"}, {"op": "slice", "axis": 2}],
            "ops[1] (slice): axis 2 is out of range",
        ),
        ([{"op": "slice", "axis": 0, "start": 9}], "ops[0] (slice): the slice leaves axis 0 empty"),
        ([{"op": "broadcast", "shape": [3, 6]}], "ops[0] (broadcast): cannot broadcast"),
        ([{"op": "stride", "step": 0}], "ops[0] (stride): a slice step cannot be zero"),
        ([{"op": "broadcast", "shape": [60, 4, 6]}], "ops[0]: the view has 1440 cells"),
        (["transpose"], "ops[0]: a step is an object"),
        ([{"op": "index", "i": True}], "ops[0].i must be an integer"),
    ],
)
def test_bad_view_chains_say_which_step_and_why(ops, message):
    with pytest.raises(RuntimeError, match="ValueError") as err:
        call("tensor_ir.views", shape=[4, 6], ops=ops)
    assert message in str(err.value)
    with pytest.raises(RuntimeError, match="shape: each extent"):
        call("tensor_ir.views", shape=[4, 60])


# ---- attention ----------------------------------------------------------------------------


def numpy_attention_row(n, d, queries, row, seed):
    x = example_inputs(n, d, queries, seed)
    q = np.array(x["q"])[0, 0, row]
    k, v = np.array(x["k"])[0, 0], np.array(x["v"])[0, 0]
    s = k @ q / math.sqrt(d)
    return s, v


@pytest.mark.parametrize(
    ("n", "d", "queries", "row", "seed"),
    [(8, 4, 4, 0, 4), (8, 4, 4, 3, 4), (5, 2, 1, 0, 7), (16, 3, 3, 1, 11), (32, 8, 2, 1, 2)],
)
def test_the_online_trace_is_the_running_softmax_and_ends_at_the_output(n, d, queries, row, seed):
    out = call("tensor_ir.attention", n=n, d=d, queries=queries, row=row, seed=seed)
    s, v = numpy_attention_row(n, d, queries, row, seed)
    p = np.exp(s - s.max())
    want = (p / p.sum()) @ v
    steps = out["derived"]["steps"]
    assert out["derived"]["state"] == ["m", "l", "acc"] and len(steps) == n
    for j, step in enumerate(steps):  # the state after keys 0…j is the prefix's softmax sums
        m = s[: j + 1].max()
        w = np.exp(s[: j + 1] - m)
        assert step["key"] == j and step["score"] == pytest.approx(s[j], abs=1e-12)
        assert step["value"] == pytest.approx(v[j].tolist(), abs=0)
        assert step["m"] == pytest.approx(m, abs=1e-12)
        assert step["l"] == pytest.approx(w.sum(), rel=1e-12)
        assert step["acc"] == pytest.approx((w @ v[: j + 1]).tolist(), rel=1e-12, abs=1e-12)
    final = steps[-1]
    assert np.allclose(np.array(final["acc"]) / final["l"], want, rtol=0, atol=1e-12)
    assert np.allclose(out["derived"]["output"], want, rtol=0, atol=1e-12)
    assert np.allclose(out["written"]["output"], want, rtol=0, atol=1e-12)
    assert out["max_difference"] <= 1e-12
    # the as-written graph's intermediates for this row: the scores, then the probabilities
    by_name = {b["name"]: b["values"] for b in out["written"]["buffers"]}
    rows = [vals for vals in by_name.values() if len(vals) == n]
    assert np.allclose(rows[0], s, atol=1e-12) and np.allclose(rows[-1], p / p.sum(), atol=1e-12)


@pytest.mark.parametrize(("n", "d", "queries"), [(8, 4, 4), (16, 2, 3)])
def test_memory_per_query_row_comes_from_the_graphs_buffers(n, d, queries):
    out = call("tensor_ir.attention", n=n, d=d, queries=queries)
    written, derived = attention_graphs(n, d, queries)
    for form, graph in (("written", written), ("derived", derived)):
        memory = out[form]["memory"]
        want = {name: math.prod(shape) // queries for name, shape in graph.buffers().items()}
        assert {b["name"]: b["per_row"] for b in memory["buffers"]} == want
        assert memory["elements"] == sum(want.values()) and memory["bytes"] == 4 * sum(
            want.values()
        )
    # as written: n-long rows (scores, shifted, exponentials, probabilities), two per-row
    # scalars (max, sum) and d outputs; derived: the d outputs alone, no n-long buffer
    per_row = sorted(b["per_row"] for b in out["written"]["memory"]["buffers"])
    assert per_row.count(n) == 4 and per_row.count(1) == 2 and d in per_row
    assert out["derived"]["memory"]["elements"] == d
    assert all(b["per_row"] < n for b in out["fused"]["memory"]["buffers"])
    assert "online(r0:" in out["derived"]["ir"] and "max(r0:" in out["written"]["ir"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n": 1}, "n is 2…32"),
        ({"d": 9}, "n is 2…32, d 1…8"),
        ({"row": 4}, "row 4 is not one of the 4 query rows"),
        ({"seed": 1.5}, "seed must be an integer"),
    ],
)
def test_bad_attention_parameters_say_why(params, message):
    with pytest.raises(RuntimeError, match=message):
        call("tensor_ir.attention", **params)


# ---- tensor.reduction_trace, the evaluator's fold step by step ---------------------------


def test_reduction_trace_folds_like_the_evaluator():
    from tang import tensor

    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(3, 5)), rng.normal(size=(5, 2))
    g = tensor.graph(y=tensor.softmax(tensor.input("x", (3, 5)) @ tensor.input("w", (5, 2))))
    matmul_sum = g.comprehensions[0]  # x @ w: the first sum
    assert matmul_sum.monoid is tensor.SUM and matmul_sum.reduce == (("r0", 5),)
    out = tensor.reduction_trace(g, {"x": x.tolist(), "w": w.tolist()}, matmul_sum.name, (2, 1))
    assert [s["point"] for s in out["steps"]] == [(r,) for r in range(5)]
    partial = np.cumsum(x[2] * w[:, 1])
    assert [s["state"][0] for s in out["steps"]] == pytest.approx(partial.tolist(), abs=1e-15)
    assert out["value"] == pytest.approx(float(x[2] @ w[:, 1]), abs=1e-15)
    with pytest.raises(tensor.TensorIRError, match=r"index \[3, 0\] is outside"):
        tensor.reduction_trace(g, {"x": x, "w": w}, matmul_sum.name, (3, 0))
    with pytest.raises(tensor.TensorIRError, match="no value given"):
        tensor.reduction_trace(g, {"x": x}, matmul_sum.name, (0, 0))
    elementwise = next(c for c in g.comprehensions if not c.reduce)
    with pytest.raises(tensor.TensorIRError, match="has no reduction to trace"):
        tensor.reduction_trace(g, {"x": x, "w": w}, elementwise.name, (0, 0))
