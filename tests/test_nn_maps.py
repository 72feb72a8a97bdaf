"""tang.nn's element-wise ops are the tensor IR's: each value is the IR op's comprehension
and each gradient the one ``tang.tensor.grad`` derives, on both backends, broadcasting
included; tang.nn writes no derivative of its own for them (tang/nn/maps.py)."""

from __future__ import annotations

import math
import random
import warnings

import pytest

import tang.nn as nn
from tang import tensor as ir
from tang.nn import maps

HAVE_NUMPY = "numpy" in nn.available_backends()
BACKENDS = [
    "python",
    pytest.param(
        "numpy",
        marks=pytest.mark.skipif(not HAVE_NUMPY, reason="numpy (the second backend) is absent"),
    ),
]

# tang.nn spelling → the tang.tensor op it is, with its constants, and the operands' shapes
# (broadcast against each other) and a range of values inside the op's domain
CASES = {
    "a + b": (lambda a, b: a + b, ir.add, (), [(3, 1), (1, 4)], (-2.0, 2.0)),
    "a - b": (lambda a, b: a - b, ir.sub, (), [(3, 4), (4,)], (-2.0, 2.0)),
    "a * b": (lambda a, b: a * b, ir.mul, (), [(2, 3), (2, 3)], (-2.0, 2.0)),
    "a / b": (lambda a, b: a / b, ir.div, (), [(2, 3), (3,)], (0.5, 2.0)),
    "a * 2.5": (lambda a: a * 2.5, ir.mul, (2.5,), [(5,)], (-2.0, 2.0)),
    "-a": (lambda a: -a, ir.neg, (), [(5,)], (-2.0, 2.0)),
    "a ** 3": (lambda a: a**3, ir.power, (3.0,), [(5,)], (-2.0, 2.0)),
    "a ** 1.5": (lambda a: a**1.5, ir.power, (1.5,), [(5,)], (0.1, 2.0)),
    "exp": (lambda a: a.exp(), ir.exp, (), [(2, 3)], (-3.0, 3.0)),
    "log": (lambda a: a.log(), ir.log, (), [(2, 3)], (0.1, 3.0)),
    "sqrt": (lambda a: a.sqrt(), ir.sqrt, (), [(2, 3)], (0.1, 3.0)),
    "tanh": (lambda a: a.tanh(), ir.tanh, (), [(2, 3)], (-3.0, 3.0)),
    "sigmoid": (lambda a: a.sigmoid(), ir.sigmoid, (), [(2, 3)], (-3.0, 3.0)),
    "relu": (lambda a: a.relu(), ir.relu, (), [(2, 3)], (-3.0, 3.0)),
    "abs": (lambda a: a.abs(), ir.abs, (), [(2, 3)], (-3.0, 3.0)),
    "silu": (nn.functional.silu, ir.silu, (), [(2, 3)], (-3.0, 3.0)),
    "maximum": (lambda a, b: a.maximum(b), ir.maximum, (), [(2, 3), (3,)], (-2.0, 2.0)),
    "minimum": (lambda a, b: a.minimum(b), ir.minimum, (), [(3, 1), (2, 1, 4)], (-2.0, 2.0)),
}


def _values(shape: tuple[int, ...], low: float, high: float, rng: random.Random) -> list:
    """Nested lists of ``shape``, away from 0 (where relu and abs have a corner)."""
    if not shape:
        return rng.choice((-1, 1)) * rng.uniform(0.1, 1.0) if low < 0 else rng.uniform(low, high)
    if len(shape) == 1:
        out = [rng.uniform(low, high) for _ in range(shape[0])]
        return [v if abs(v) > 0.05 else 0.3 for v in out]
    return [_values(shape[1:], low, high, rng) for _ in range(shape[0])]


def _flat(x) -> list[float]:
    if isinstance(x, list):
        return [v for item in x for v in _flat(item)]
    return [float(x)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_element_wise_op_is_the_ir_op_and_its_derived_gradient(case, backend):
    spell, ir_op, constants, shapes, (low, high) = CASES[case]
    rng = random.Random(case)
    data = [_values(s, low, high, rng) for s in shapes]
    xs = [nn.Tensor(d, requires_grad=True, backend=backend) for d in data]
    y = spell(*xs)
    seed = _values(y.shape, -1.0, 1.0, rng)
    (y * nn.Tensor(seed, backend=backend)).sum().backward()

    names = [f"x{k}" for k in range(len(shapes))]
    inputs = [ir.input(n, s) for n, s in zip(names, shapes)]
    derived = ir.grad(ir.graph(y=ir_op(*inputs, *constants)), "y")
    want = ir.evaluate(derived, {**dict(zip(names, data)), "d_y": seed}, backend="python")

    assert _flat(y.tolist()) == pytest.approx(_flat(want["y"]), rel=1e-12, abs=1e-12)
    for n, x in zip(names, xs):
        assert _flat(x.grad.tolist()) == pytest.approx(_flat(want[f"d_{n}"]), rel=1e-12, abs=1e-12)


def test_no_element_wise_op_of_tang_nn_writes_a_derivative():
    """The one element-wise class, Map, derives every slope from the IR (the other ops:
    tests/test_nn_derived.py)."""
    x = nn.Tensor([0.5, -1.0], requires_grad=True)
    for spell, _, _, shapes, _ in CASES.values():
        assert isinstance(spell(*[x] * len(shapes))._op, maps.Map)
    for layer in (nn.Tanh(), nn.ReLU(), nn.Sigmoid(), nn.SiLU()):
        assert isinstance(layer(x)._op, maps.Map)


def test_a_slope_reads_the_forward_value_instead_of_recomputing_it():
    assert maps.rule("tanh", (), 1).slopes[0].names == ("y", "g")  # (1 − y²)·g
    assert maps.rule("exp", (), 1).slopes[0].names == ("y", "g")  # y·g
    add = maps.rule("add", (), 2)
    assert [s.is_leaf for s in add.slopes] == [True, True]  # g passes on unchanged


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigmoid_and_its_derived_slope_stay_finite_at_saturation(backend):
    """σ(a) = where(a < 0, e, 1)/(1 + e) with e = exp(−|a|): no step overflows, so the slope
    the IR derives is σ(1 − σ) to the last bit of range, where 1/(1 + exp(−a)) gave nan."""
    points = [-1000.0, -710.0, -50.0, 0.0, 50.0, 1000.0]
    x = nn.Tensor(points, requires_grad=True, backend=backend)
    y = x.sigmoid()
    y.sum().backward()

    def slope(a: float) -> float:
        e = math.exp(-abs(a))
        return e / (1.0 + e) ** 2

    assert y.tolist() == pytest.approx(
        [1 / (1 + math.exp(-a)) if a > -700 else 0.0 for a in points]
    )
    assert x.grad.tolist() == pytest.approx([slope(a) for a in points], rel=1e-12, abs=0.0)
    derived = ir.grad(ir.graph(y=ir.sigmoid(ir.input("a", (6,)))), "y")
    want = ir.evaluate(derived, {"a": points, "d_y": [1.0] * 6}, backend="python")["d_a"]
    assert want == pytest.approx([slope(a) for a in points], rel=1e-12, abs=0.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_element_wise_ops_give_ieee_values_without_raising_or_warning(backend):
    x = nn.Tensor([0.0, 1.0, -1.0, 800.0], requires_grad=True, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's divide and overflow warnings included
        y = (1.0 / x) + x.log() + x.exp()
        y.sum().backward()
    values = y.tolist()
    assert values[0] == math.inf or math.isnan(values[0])  # 1/0 + log 0 = inf − inf
    assert math.isnan(values[2])  # log −1
    assert values[3] == math.inf  # exp 800 overflows
    assert x.grad.tolist()[1] == pytest.approx(-1.0 + 1.0 + math.e)


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_and_zero_dimensional_tensors_map_and_read_out(backend):
    """An axis of extent 0 anywhere (tolist keeps its empty rows) and 0-d operands that
    broadcast; their gradients have their own shapes."""
    for shape, nested in [((1, 0), [[]]), ((2, 0, 3), [[], []]), ((0, 2), [])]:
        e = nn.zeros(*shape, requires_grad=True, backend=backend)
        (e.tanh() * 2.0 + e).sum().backward()
        assert e.tolist() == nested and e.grad.shape == shape
    a = nn.Tensor(2.5, requires_grad=True, backend=backend)
    b = nn.Tensor([1.0, -2.0], requires_grad=True, backend=backend)
    (a * b + b / a - a).sum().backward()
    assert a.grad.shape == () and a.grad.item() == pytest.approx(-1.0 + 1.0 / 6.25 - 2.0)
    assert b.grad.tolist() == pytest.approx([2.5 + 0.4, 2.5 + 0.4])


@pytest.mark.parametrize("backend", BACKENDS)
def test_relu_follows_pytorch_at_zero_and_keeps_nan(backend):
    """The IR's relu is where(a <= 0, 0, a): slope 0 at 0 (PyTorch's), nan in, nan out."""
    x = nn.Tensor([math.nan, 0.0, -1.0, 2.0], requires_grad=True, backend=backend)
    y = x.relu()
    y.sum().backward()
    assert math.isnan(y.tolist()[0]) and y.tolist()[1:] == [0.0, 0.0, 2.0]
    assert x.grad.tolist()[1:] == [0.0, 0.0, 1.0]


def test_an_op_that_is_not_an_element_wise_op_of_the_ir_is_a_clear_error():
    """The op name is looked up in tang.tensor's op table (never anything else of the
    module), and one that is not element-wise is refused by name."""
    x = nn.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"'nope' is not an op of tang\.tensor"):
        nn.functional.elementwise("nope", x)
    with pytest.raises(ValueError, match=r"'input' is not an op of tang\.tensor"):
        nn.functional.elementwise("input", x)
    for op in ("sum", "matmul", "softmax"):
        with pytest.raises(ValueError, match=rf"tang\.tensor\.{op} .* is not an element-wise op"):
            nn.functional.elementwise(op, x)


def test_a_body_runs_on_math_and_falls_back_to_ieee_where_math_raises():
    """The printed comprehension calls ``math`` (no wrapper per element); where it raises,
    the IEEE spelling gives inf and nan instead, the same bits elsewhere."""
    log = maps.rule("log", (), 1).value.python
    assert log([1.0, math.e]) == [0.0, 1.0]
    got = log([1.0, 0.0, -1.0])
    assert got[:2] == [0.0, -math.inf] and math.isnan(got[2])
    recip = maps.rule("div", (), 2).value.python
    assert recip([1.0, 1.0], [4.0, 0.0]) == [0.25, math.inf]
    # the IR's exp is exp2(a·log2 e): math.pow(2, ·), tang.ieee.exp2's own bits, inf past it
    from tang import ieee
    from tang.expr.ops import LOG2E

    exp = maps.rule("exp", (), 1).value.python
    points = [-700.0, -1.5, 0.0, 0.3, 1.0, 700.0]
    assert exp(points) == [ieee.exp2(p * LOG2E) for p in points]
    assert exp([1.0, 2000.0]) == [ieee.exp2(LOG2E), math.inf]


def test_work_on_the_per_call_numbers_is_done_once_before_the_comprehension():
    from tang import scalar
    from tang.expr import graph

    body = maps.scalar_of(lambda a, n: a * scalar.sqrt(n + 1.0), 1, 1)
    hoisted, lifted = maps._hoist(body.node, body.numbers)
    assert [str(n.op) for _, n in lifted] == ["sqrt"]  # √(n + 1) is not redone per element
    assert {n.name for n in graph.topo_order([hoisted]) if n.op == "var"} == {"a0", "h0"}
    assert body.python([1.0, 2.0], 3.0) == [2.0, 4.0]
    assert body.python([1.0], -2.0) != body.python([1.0], -2.0)  # nan: √−1, by the fallback


@pytest.mark.skipif(not HAVE_NUMPY, reason="numpy (the second backend) is absent")
def test_numpy_bodies_reuse_dead_temporaries_and_subtract_without_a_negation():
    """``numpy_function`` writes a temporary over once nothing reads it (same-shaped
    arrays only) and spells a + (−b) as a − b: the bits stay those of the node-by-node
    interpreter (``numpy_values``), the values those of graph.evaluate."""
    import numpy as np

    from tang.expr import graph as g
    from tang.expr.vectorized import numpy_function, numpy_values

    x, y, z = g.var("x"), g.var("y"), g.var("z")
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(9) for _ in range(3)]
    exprs = [
        x - y, -x + y, (-x) + (-y), x - y - z, (x - y) * (x - z), -(x - y) + z * x,
        x * y - g.sqrt(z * z) + (-y), -x, g.tanh(x * y + z) * (x - 1.0) / (z * z + 1.0),
    ]  # fmt: skip
    for e in exprs:
        want = numpy_values(np, [e], dict(zip("xyz", arrays)), points=9)[0]
        scalar = [g.evaluate([e], dict(zip("xyz", point)))[0] for point in zip(*arrays)]
        np.testing.assert_allclose(want, scalar, rtol=1e-14, atol=1e-15)
        for same in ((), ("x", "y", "z")):
            got = numpy_function(np, e, ["x", "y", "z"], same_shape=same)(*arrays)
            assert np.array_equal(got, want, equal_nan=True), (e, same)
    before = [a.copy() for a in arrays]
    numpy_function(np, g.exp(x) * y + z, ["x", "y", "z"], same_shape=("x", "y", "z"))(*arrays)
    assert all(np.array_equal(a, b) for a, b in zip(arrays, before))  # inputs never written
