"""Derived backward: ``tang.tensor.grad`` differentiates the comprehension graph of each op
(nothing op-specific is written anywhere); the result is checked against hand-written numpy
reference gradients on random shapes and against central finite differences on small ones."""

from __future__ import annotations

import random

import numpy as np
import pytest
import tensor_reference as ref

from tang import tensor as T
from tang.tensor import TensorIRError

# name -> (input shapes from a random source, the op on tensors, the numpy reference vjp)
CASES = {
    "matmul": (
        lambda n: {"a": (n(), n()), "b": (None, n())},
        lambda t: t["a"] @ t["b"],
        lambda v, g: ref.matmul_vjp(v["a"], v["b"], g),
    ),
    "softmax": (
        lambda n: {"x": (n(), n())},
        lambda t: T.softmax(t["x"]),
        lambda v, g: ref.softmax_vjp(v["x"], g),
    ),
    "log_softmax": (
        lambda n: {"x": (n(), n())},
        lambda t: T.log_softmax(t["x"]),
        lambda v, g: ref.log_softmax_vjp(v["x"], g),
    ),
    "cross_entropy": (
        lambda n: {"logits": (n(), n() + 1), "targets": (None,)},
        lambda t: T.cross_entropy(t["logits"], t["targets"]),
        lambda v, g: ref.cross_entropy_vjp(v["logits"], v["targets"], g),
    ),
    "rms_norm": (
        lambda n: {"x": (n(), n()), "w": (None,)},
        lambda t: T.rms_norm(t["x"], t["w"]),
        lambda v, g: ref.rms_norm_vjp(v["x"], v["w"], g),
    ),
    "rope": (
        lambda n: {"x": (n(), n(), 2 * n())},
        lambda t: T.rope(t["x"]),
        lambda v, g: ref.rope_vjp(v["x"], g),
    ),
    "swiglu": (
        lambda n: {"x": (n(), n()), "a": (None, n()), "b": (None, None), "c": (None, n())},
        lambda t: T.swiglu(t["x"], t["a"], t["b"], t["c"]),
        lambda v, g: ref.swiglu_vjp(v["x"], v["a"], v["b"], v["c"], g),
    ),
    "attention_gqa_causal": (
        lambda n: {"q": (1, 4, n(), 2), "k": (1, 2, n() + 2, 2), "v": (1, 2, None, n())},
        lambda t: T.attention(t["q"], t["k"], t["v"], causal=True),
        lambda v, g: ref.attention_vjp(v["q"], v["k"], v["v"], g, causal=True),
    ),
    "attention": (
        lambda n: {"q": (1, 2, n(), 3), "k": (1, 2, n(), 3), "v": (1, 2, None, n())},
        lambda t: T.attention(t["q"], t["k"], t["v"]),
        lambda v, g: ref.attention_vjp(v["q"], v["k"], v["v"], g),
    ),
    "take_concat_abs": (
        lambda n: {"a": (n(), n()), "b": (n(), None), "ids": (n(), n())},
        lambda t: T.concat([T.take(t["a"], t["ids"]).reshape(-1, t["a"].shape[1]), T.abs(t["b"])]),
        lambda v, g: _take_concat_abs_vjp(v, g),
    ),
    "sum_max_views": (
        lambda n: {"x": (n(), n() + 1)},
        lambda t: T.sum(T.max(t["x"].T[::-1], 0)) + T.sum(t["x"][:, 1:] * t["x"][:, :-1]),
        lambda v, g: {"x": _sum_max_views_vjp(v["x"], g)},
    ),
}


def _sum_max_views_vjp(x: np.ndarray, g: float) -> np.ndarray:
    dx = np.zeros_like(x)
    dx[np.arange(x.shape[0]), x.argmax(1)] += g  # max over the transposed axis 0 = x's rows
    dx[:, 1:] += g * x[:, :-1]
    dx[:, :-1] += g * x[:, 1:]
    return dx


def _take_concat_abs_vjp(v: dict, g: np.ndarray) -> dict[str, np.ndarray]:
    ids = v["ids"].astype(int).ravel()
    da = np.zeros_like(v["a"])
    np.add.at(da, ids, g[: len(ids)])  # each picked row gets its rows' adjoints
    return {"a": da, "b": np.sign(v["b"]) * g[len(ids) :]}


def resolve(name: str, rng: random.Random, top: int) -> dict[str, tuple[int, ...]]:
    """Concrete shapes: None copies the extent the op needs from the other operands."""
    raw = CASES[name][0](lambda: rng.randint(2, top))
    if name == "matmul":
        raw["b"] = (raw["a"][1], raw["b"][1])
    if name == "cross_entropy":
        raw["targets"] = raw["logits"][:1]
    if name == "rms_norm":
        raw["w"] = raw["x"][1:]
    if name == "swiglu":
        raw["a"] = (raw["x"][1], raw["a"][1])
        raw["b"] = raw["a"]
        raw["c"] = (raw["a"][1], raw["c"][1])
    if name.startswith("attention"):
        raw["v"] = (*raw["k"][:3], raw["v"][3])
    if name == "take_concat_abs":
        raw["b"] = (raw["b"][0], raw["a"][1])
    return raw


def setup(name: str, seed: int, top: int):
    shapes = resolve(name, random.Random(f"{name}{seed}"), top)
    inputs = {k: T.input(k, s) for k, s in shapes.items()}
    graph = T.graph(y=CASES[name][1](inputs))
    rng = np.random.default_rng(seed)
    vals = {k: rng.normal(size=s) for k, s in shapes.items()}
    if "targets" in vals:
        vals["targets"] = rng.integers(0, shapes["logits"][1], size=shapes["targets"]).astype(float)
    if "ids" in vals:  # whole numbers: the rows to pick (repeats included)
        vals["ids"] = rng.integers(0, shapes["a"][0], size=shapes["ids"]).astype(float)
    wrt = [k for k in shapes if k not in ("targets", "ids")]
    return graph, vals, wrt


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("name", sorted(CASES))
def test_derived_backward_matches_numpy_reference(name: str, seed: int) -> None:
    graph, vals, wrt = setup(name, seed, top=6)
    back = T.grad(graph, "y", wrt)
    y = T.evaluate(graph, vals)["y"]
    seed_ = np.random.default_rng(99).normal(size=np.shape(y))
    out = T.evaluate(back, {**vals, "d_y": seed_})
    expected = CASES[name][2](vals, seed_)
    for w in wrt:
        np.testing.assert_allclose(out[f"d_{w}"], expected[w], rtol=1e-10, atol=1e-12, err_msg=w)


@pytest.mark.parametrize("name", sorted(CASES))
def test_derived_backward_matches_central_differences(name: str) -> None:
    graph, vals, wrt = setup(name, 5, top=3)
    back = T.grad(graph, "y", wrt)
    y = T.evaluate(graph, vals)["y"]
    seed_ = np.random.default_rng(3).normal(size=np.shape(y))
    out = T.evaluate(back, {**vals, "d_y": seed_})
    h = 1e-6
    for w in wrt:
        fd = np.zeros_like(vals[w])
        for idx in np.ndindex(vals[w].shape):
            plus, minus = vals[w].copy(), vals[w].copy()
            plus[idx] += h
            minus[idx] -= h
            up = T.evaluate(graph, {**vals, w: plus})["y"]
            down = T.evaluate(graph, {**vals, w: minus})["y"]
            fd[idx] = np.sum(seed_ * (up - down)) / (2 * h)
        np.testing.assert_allclose(out[f"d_{w}"], fd, rtol=1e-6, atol=1e-7, err_msg=w)


def test_backward_runs_on_the_pure_python_evaluator_too() -> None:
    graph, vals, wrt = setup("attention_gqa_causal", 1, top=3)
    back = T.grad(graph, "y", wrt)
    seed_ = np.random.default_rng(4).normal(size=T.evaluate(graph, vals)["y"].shape)
    fast = T.evaluate(back, {**vals, "d_y": seed_})
    slow = T.evaluate(
        back, {k: v.tolist() for k, v in {**vals, "d_y": seed_}.items()}, backend="python"
    )
    for w in wrt:
        np.testing.assert_allclose(np.array(slow[f"d_{w}"]), fast[f"d_{w}"], rtol=1e-12, atol=1e-14)


def test_the_adjoint_of_a_transposed_read_is_a_transposed_read() -> None:
    """No guards, no extra reduction: the solved index map is the transpose."""
    x = T.input("x", (3, 4))
    back = T.grad(T.graph(y=x.T * 2.0))
    assert str(back).splitlines()[-2] == "d_x[i0:3, i1:4] = d_y[i1, i0] * 2"


def test_no_gradient_flows_through_stop_gradient() -> None:
    """d/dx [stop_gradient(x)·x] = x, not 2x; an input's mark is a copy fusion folds away,
    and a computed tensor read both ways is computed twice, marked and not."""
    x = T.input("x", (3,))
    vals = {"x": np.array([1.0, -2.0, 3.0]), "d_y": np.ones(3)}
    back = T.grad(T.graph(y=T.stop_gradient(x) * x))
    np.testing.assert_array_equal(T.evaluate(back, vals)["d_x"], vals["x"])
    assert len(T.fuse(T.graph(y=T.stop_gradient(x) * x))) == 1
    e = T.exp(x)
    back = T.grad(T.graph(y=e * T.stop_gradient(e)))  # d/dx = e·e (one side only)
    np.testing.assert_allclose(T.evaluate(back, vals)["d_x"], np.exp(vals["x"]) ** 2)
    assert "stop_gradient(exp(x[i0]))" in str(back)


def test_softmax_backward_has_no_max_path() -> None:
    """The max of softmax and log-softmax is marked: the derived backward reads it only as
    a value (no sum for its adjoint, no tie indicator), and still matches the reference."""
    x = T.input("x", (4, 5))
    for op in (T.softmax, T.log_softmax):
        back = T.grad(T.graph(y=op(x)))
        text = str(back)
        assert "==" not in text and "stop_gradient(max(r0:5) x[i0, r0])" in text, text
        rng = np.random.default_rng(3)
        vals = {"x": rng.normal(size=(4, 5)) * 3.0, "d_y": rng.normal(size=(4, 5))}
        want = _central_differences(T.graph(y=op(x)), vals, vals["d_y"], "x")
        np.testing.assert_allclose(T.evaluate(back, vals)["d_x"], want, rtol=1e-6, atol=1e-8)


def test_grad_refuses_fused_graphs_and_bad_names() -> None:
    x = T.input("x", (3, 4))
    fused = T.fuse(T.graph(y=T.sum(T.exp(x), 1) * 2.0))
    with pytest.raises(TensorIRError, match="before fuse"):
        T.grad(fused)
    with pytest.raises(TensorIRError, match="not an input"):
        T.grad(T.graph(y=x * 2.0), wrt=["z"])
    with pytest.raises(TensorIRError, match="not an output"):
        T.grad(T.graph(y=x * 2.0), output="z")


def _central_differences(graph, vals: dict, seed_: np.ndarray, w: str, h: float = 1e-6):
    fd = np.zeros_like(vals[w])
    for idx in np.ndindex(vals[w].shape):
        plus, minus = vals[w].copy(), vals[w].copy()
        plus[idx] += h
        minus[idx] -= h
        up = T.evaluate(graph, {**vals, w: plus})["y"]
        down = T.evaluate(graph, {**vals, w: minus})["y"]
        fd[idx] = np.sum(seed_ * (up - down)) / (2 * h)
    return fd


@pytest.mark.parametrize("heads, length, width", [(2, 3, 4), (3, 2, 6)])
def test_adjoints_of_reshaped_reads_are_gathers_not_sums(heads, length, width) -> None:
    """Head splits (``t·(h·d) + h·d + j``), RoPE's pairs (``2·p + k``) and a reshape of the
    pairs back to rows are affine and one-to-one: their adjoints solve for every index (no
    reduction at all), and still match central differences."""
    x, w = T.input("x", (length, heads * width)), T.input("w", (1, heads, length, width))
    split = x.reshape(1, length, heads, width).permute(0, 2, 1, 3)  # a view: no copy
    graph = T.graph(y=T.rope(split) * w)
    back = T.grad(graph, "y", ["x", "w"])
    forward = {c.name for c in graph.comprehensions}
    for c in back.comprehensions:
        if c.name not in forward:
            assert not c.reduce, f"{c.name} sums over {c.reduce}"
    rng = np.random.default_rng(heads)
    vals = {"x": rng.normal(size=(length, heads * width)), "w": rng.normal(size=w.shape)}
    seed_ = rng.normal(size=(1, heads, length, width))
    out = T.evaluate(back, {**vals, "d_y": seed_})
    for name in ("x", "w"):
        assert out[f"d_{name}"].shape == vals[name].shape
        np.testing.assert_allclose(
            out[f"d_{name}"], _central_differences(graph, vals, seed_, name), rtol=1e-6, atol=1e-7
        )


def test_a_read_that_repeats_keeps_its_sum_only_over_the_repeats() -> None:
    """Grouped heads (stride 0) are genuinely not one-to-one: the adjoint sums over the
    group, and over nothing the view solves."""
    k = T.input("k", (1, 2, 3, 4))
    graph = T.graph(y=T.attention(T.input("q", (1, 4, 3, 4)), k, T.input("v", (1, 2, 3, 4))))
    back = T.grad(graph, "y", ["k"])
    # k's adjoint sums over the 2 query heads sharing it and the 3 queries (the matmul's own
    # sum), and solves its 4 features: not a sum over the 4·3·4 positions the read covers
    assert back["d_k"].reduce == (("r0", 2), ("r1", 3))
    assert "==" not in str(back["d_k"])


def test_tied_extrema_share_their_gradient_evenly() -> None:
    """max and min give each element equal to the total an equal share (PyTorch's amax and
    amin): the weights of one total sum to 1, whatever the ties."""
    x = np.array([[1, 3, 3, 0, 2], [5, 5, 5, 5, 5], [0, 1, 2, 3, 4], [-1, -1, 0, 0, -2.0]])
    a = T.input("a", x.shape)
    seed = np.array([1.0, 2.0, 3.0, 4.0])
    for reduce, pick in ((T.max, np.max), (T.min, np.min)):
        graph = T.grad(T.graph(y=reduce(a, 1)), "y")
        for backend in ("numpy", "python"):
            got = np.array(T.evaluate(graph, {"a": x, "d_y": seed}, backend=backend)["d_a"])
            tied = x == pick(x, axis=1, keepdims=True)
            assert np.array_equal(got, seed[:, None] * tied / tied.sum(1, keepdims=True))
    assert got[1].tolist() == [0.4] * 5 and got[3].tolist() == [0.0, 0.0, 0.0, 0.0, 4.0]
