"""Every differentiable op of tang.nn against central finite differences (step 1e-6,
agreement 1e-6), on seeded random shapes with broadcasting, on every backend: pure Python
(with each dot product it has: ``sum(map(mul))`` and, on 3.12+, ``math.sumprod``) and
numpy (skipped where numpy is absent)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

import tang.nn as nn
from tang.nn.hot import Hot
from tang.nn.pybackend import DOTS, PythonBackend

BACKENDS = [pytest.param(PythonBackend(dot), id=f"python-{dot}") for dot in sorted(DOTS)]
try:
    import numpy  # noqa: F401

    BACKENDS.append(pytest.param("numpy", id="numpy"))
except ImportError:  # pragma: no cover - the desktop suite installs numpy
    BACKENDS.append(
        pytest.param("numpy", id="numpy", marks=pytest.mark.skip(reason="numpy not installed"))
    )

STEP = 1e-6
TOL = 1e-6


def leaf(flat: list[float], shape: tuple[int, ...], backend) -> nn.Tensor:
    return nn.tensor(flat, backend=backend).reshape(shape).detach().requires_grad_()


def gradcheck(
    fn: Callable[..., nn.Tensor],
    shapes: list[tuple[int, ...]],
    backend,
    rng: random.Random,
    sample: Callable[[random.Random], float] = lambda r: r.uniform(-2.0, 2.0),
) -> None:
    """∂/∂inputs of Σ fn(inputs)·w (random w) by autograd and by central differences."""
    flats = [[sample(rng) for _ in range(math.prod(s))] for s in shapes]
    inputs = [leaf(f, s, backend) for f, s in zip(flats, shapes)]
    out = fn(*inputs)
    weights = nn.tensor([rng.uniform(-1.0, 1.0) for _ in range(out.numel())], backend=backend)
    weights = weights.reshape(out.shape)
    (out * weights).sum().backward()

    def value(values: list[list[float]]) -> float:
        with nn.no_grad():
            ts = [nn.tensor(f, backend=backend).reshape(s) for f, s in zip(values, shapes)]
            return (fn(*ts) * weights).sum().item()

    for i, (flat, shape) in enumerate(zip(flats, shapes)):
        grad = inputs[i].grad
        assert grad is not None, f"input {i} got no gradient"
        assert grad.shape == shape
        analytic = grad.flat()
        for k in range(len(flat)):
            up = [list(f) for f in flats]
            down = [list(f) for f in flats]
            up[i][k] += STEP
            down[i][k] -= STEP
            numeric = (value(up) - value(down)) / (2 * STEP)
            assert abs(numeric - analytic[k]) <= TOL * max(1.0, abs(numeric)), (
                f"input {i} {shape} element {k}: autograd {analytic[k]!r}, "
                f"finite differences {numeric!r}"
            )


def positive(r: random.Random) -> float:
    return r.uniform(0.3, 2.5)


def away_from_zero(r: random.Random) -> float:
    return r.choice((-1.0, 1.0)) * r.uniform(0.1, 2.0)


# shape pairs that broadcast: equal, trailing row, column against matrix, scalar, 3-D mixes
BROADCAST_PAIRS = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((4,), (3, 4)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (3, 1)),
    ((2, 1, 4), (2, 3, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((1,), (2, 3)),
]


def random_pair(rng: random.Random) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A random shape and a random broadcastable partner (dims set to 1, leading ones cut),
    in a random order."""
    full = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
    part = tuple(1 if rng.random() < 0.4 else n for n in full)[rng.randint(0, len(full)) :]
    return (full, part) if rng.random() < 0.5 else (part, full)


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "radd": lambda a, b: 1.5 + a + b * 1.0,
    "rsub_rdiv": lambda a, b: 2.0 - a / (3.0 + b * b),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_with_broadcasting(backend, name: str) -> None:
    rng = random.Random(f"binary {name}")
    for sa, sb in BROADCAST_PAIRS + [random_pair(rng) for _ in range(4)]:
        sample = positive if name == "div" else (lambda r: r.uniform(-2.0, 2.0))
        gradcheck(BINARY[name], [sa, sb], backend, rng, sample)


UNARY = {
    "neg": (lambda a: -a, None),
    "scale": (lambda a: a * 2.5, None),
    "rscale_div": (lambda a: 0.5 * a / 4.0, None),
    "square": (lambda a: a**2, None),
    "cube": (lambda a: a**3, None),
    "pow_half": (lambda a: a**0.5, positive),
    "pow_neg": (lambda a: a**-1.5, positive),
    "exp": (lambda a: a.exp(), None),
    "log": (lambda a: a.log(), positive),
    "sqrt": (lambda a: a.sqrt(), positive),
    "tanh": (lambda a: a.tanh(), None),
    "sigmoid": (lambda a: a.sigmoid(), None),
    "relu": (lambda a: a.relu(), away_from_zero),
    "abs": (lambda a: a.abs(), away_from_zero),
    "softmax": (lambda a: a.softmax(-1), None),
    "log_softmax_dim0": (lambda a: a.log_softmax(0), None),
    "functional": (lambda a: nn.functional.tanh(nn.functional.relu(a) + a), away_from_zero),
}


def random_shape(rng: random.Random) -> tuple[int, ...]:
    return tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops(backend, name: str) -> None:
    fn, sample = UNARY[name]
    rng = random.Random(f"unary {name}")
    for _ in range(3):
        gradcheck(fn, [random_shape(rng)], backend, rng, sample or (lambda r: r.uniform(-2, 2)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_matmul_all_ranks(backend) -> None:
    rng = random.Random("matmul")
    for sa, sb in [
        ((3, 4), (4, 5)),
        ((1, 6), (6, 1)),
        ((4,), (4, 3)),
        ((3, 4), (4,)),
        ((5,), (5,)),
    ]:
        gradcheck(lambda a, b: a @ b, [sa, sb], backend, rng)


@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_with_and_without_bias(backend) -> None:
    rng = random.Random("linear")
    F = nn.functional
    gradcheck(lambda x, w, b: F.linear(x, w, b), [(5, 3), (4, 3), (4,)], backend, rng)
    gradcheck(lambda x, w: F.linear(x, w), [(2, 3), (4, 3)], backend, rng)
    gradcheck(lambda x, w, b: F.linear(x, w, b), [(2, 3, 3), (2, 3), (2,)], backend, rng)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_hot_linear_is_a_gather_with_a_scatter_add_gradient(backend) -> None:
    rng = random.Random("hot")
    windows = [[rng.randrange(5) for _ in range(3)] for _ in range(6)]
    windows[1] = list(windows[0])  # repeated rows add up in the gradient
    x = nn.one_hot(windows, 5, backend=backend).reshape(6, 15)
    assert x._hot is not None, "the reshape merging whole rows keeps the hot columns"
    assert x._hot.rows() == [[k for k, v in enumerate(row) if v] for row in x.tolist()]
    with pytest.raises(ValueError, match="different widths"):
        Hot.from_rows([[1, 2], [3]])
    dense = nn.tensor(x.tolist(), backend=backend)
    assert dense._hot is None
    F = nn.functional
    gradcheck(lambda w, b: F.linear(x, w, b), [(4, 15), (4,)], backend, rng)
    w = leaf([rng.uniform(-1, 1) for _ in range(60)], (4, 15), backend)
    b = leaf([rng.uniform(-1, 1) for _ in range(4)], (4,), backend)
    sparse = F.linear(x, w, b)
    kinds = [step.kind for _, step in sparse._op.program.forward]
    assert "hot_matmul" in kinds and "matmul" not in kinds
    dense_kinds = [step.kind for _, step in F.linear(dense, w, b)._op.program.forward]
    assert "matmul" in dense_kinds and "hot_matmul" not in dense_kinds
    full = F.linear(dense, w, b)
    for u, v in zip(sparse.flat(), full.flat()):
        assert math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-12)
    program = sparse._op.program
    sparse.sum().backward()
    assert "hot_matmul_grad" in [step.kind for _, step in program.backward]
    g_sparse = w.grad.flat()
    w.grad = None
    full.sum().backward()
    for u, v in zip(g_sparse, w.grad.flat()):
        assert math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_kernels_give_the_bits_of_the_ops_they_fuse(backend) -> None:
    """matmul with a bias (joined to each dot), the one-hot gather (+ b) and its scatter-add
    gradient add in the same order as the unfused ops: equal to the last bit."""
    B = nn.get_backend(backend)
    rng = random.Random("fused")

    def arr(*shape):
        return B.from_flat([rng.uniform(-1, 1) for _ in range(math.prod(shape))], shape)

    x, w, b, g = arr(5, 7), arr(4, 7), arr(4), arr(6, 4)
    for ta, tb, left, right in [(False, True, x, w), (True, False, arr(7, 5), arr(7, 4))]:
        product = B.matmul(left, right, ta, tb)
        assert B.to_flat(B.matmul(left, right, ta, tb, b)) == B.to_flat(B.add(product, b))
    rows = [[rng.randrange(7) for _ in range(3)] for _ in range(6)]
    rows[2] = list(rows[0])  # repeated columns add up
    hot = Hot.from_rows(rows)
    assert hot.rows() == rows
    plain = B.hot_matmul(hot, w)
    expected = [sum(B.to_flat(w)[o * 7 + k] for k in ks) for ks in rows for o in range(4)]
    assert B.to_flat(plain) == expected  # the hot columns summed in the order listed
    assert B.to_flat(B.hot_matmul(hot, w, b)) == B.to_flat(B.add(plain, b))
    grad = B.to_flat(B.hot_matmul_grad(hot, g, (4, 7)))
    gf = B.to_flat(g)
    for o in range(4):
        for k in range(7):
            acc = 0.0
            for r, ks in enumerate(rows):  # row order, once per time k is hot in the row
                for kk in ks:
                    if kk == k:
                        acc += gf[r * 4 + o]
            assert grad[o * 7 + k] == acc, (o, k)
    with pytest.raises(ValueError, match=r"inner sizes differ \(7 and 6\)"):
        B.matmul(x, arr(4, 6), tb=True)
    hot_tensor = nn.one_hot([[1, 2], [0, 0]], 3, backend=B)
    assert hot_tensor.tolist() == [[[0, 1, 0], [0, 0, 1]], [[1, 0, 0], [1, 0, 0]]]


REDUCTIONS = {
    "sum_all": lambda a: a.sum(),
    "sum_dim0": lambda a: a.sum(0),
    "sum_last_keep": lambda a: a.sum(-1, keepdim=True),
    "sum_dims": lambda a: a.sum((0, -1)),
    "mean_all": lambda a: a.mean(),
    "mean_dim": lambda a: a.mean(-1),
    "max_all": lambda a: a.max(),
    "max_dim0": lambda a: a.max(0),
    "max_last_keep": lambda a: a.max(-1, keepdim=True),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(backend, name: str) -> None:
    rng = random.Random(f"reduce {name}")
    for shape in [(5,), (3, 4), (2, 3, 4), (4, 1, 2)]:
        if name == "sum_dims" and len(shape) < 2:
            continue
        gradcheck(REDUCTIONS[name], [shape], backend, rng)


MOVES = {
    "reshape": ((2, 6), lambda a: a.reshape(3, -1) * a.reshape(3, 4)),
    "flatten": ((2, 3, 2), lambda a: a.flatten(1)),
    "transpose": ((3, 4), lambda a: a.T),
    "permute": ((2, 3, 4), lambda a: a.permute(2, 0, 1)),
    "transpose_3d": ((2, 3, 4), lambda a: a.transpose(0, 2)),
    "expand": ((3, 1), lambda a: a.expand(2, 3, 4)),
    "index_int": ((3, 4), lambda a: a[1]),
    "index_slices": ((4, 5), lambda a: a[1:3, ::2]),
    "index_negative_step": ((4, 5), lambda a: a[::-1, -1]),
    "index_ellipsis": ((2, 3, 4), lambda a: a[..., 1:]),
    "index_rows": ((4, 3), lambda a: a[[2, 0, 2, 3]]),
    "gather": ((3, 4), lambda a: a.gather(1, [[0, 0], [3, 1], [2, 2]])),
    "gather_dim0": ((3, 4), lambda a: a.gather(0, [[2, 1, 0, 0]])),
    "cat": ((3, 2), lambda a: nn.cat([a, a * 2.0, a[1:]])),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(MOVES))
def test_moving_data(backend, name: str) -> None:
    shape, fn = MOVES[name]
    gradcheck(fn, [shape], backend, random.Random(f"move {name}"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_losses(backend) -> None:
    rng = random.Random("losses")
    targets = [2, 0, 4, 4]
    gradcheck(lambda z: nn.cross_entropy(z, targets).reshape(1), [(4, 5)], backend, rng)
    gradcheck(lambda z: nn.cross_entropy(z, targets, reduction="none"), [(4, 5)], backend, rng)
    gradcheck(lambda p, t: nn.mse(p, t).reshape(1), [(3, 2), (3, 2)], backend, rng)
    gradcheck(lambda p: nn.mse(p, 0.5, reduction="sum").reshape(1), [(3, 2)], backend, rng)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_graph_with_shared_nodes_adds_every_path(backend) -> None:
    def fn(a, b):
        h = (a @ b).tanh()
        return (h * h + h.sum(0)) / (1.0 + (a * a).sum())

    gradcheck(fn, [(3, 4), (4, 2)], backend, random.Random("shared"))


def test_cross_entropy_is_stable_for_large_logits() -> None:
    logits = nn.tensor([[1000.0, 0.0, -1000.0], [-5e5, 5e5, 0.0]], requires_grad=True)
    loss = nn.cross_entropy(logits, [0, 1])
    assert loss.item() == 0.0
    loss.backward()
    assert all(math.isfinite(v) for v in logits.grad.flat())
    near = nn.cross_entropy(nn.tensor([[800.0, 800.0]]), [1]).item()
    assert math.isclose(near, math.log(2.0), rel_tol=1e-15)


def test_backward_rules() -> None:
    x = nn.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="one-element"):
        (x * 2.0).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        nn.tensor([1.0]).sum().backward()
    y = (x * x).sum()
    y.backward()
    y2 = (x * x).sum()
    y2.backward()  # gradients accumulate, as in PyTorch
    assert x.grad.tolist() == [4.0, 8.0]
    with nn.no_grad():
        z = x * 3.0
    assert not z.requires_grad and z.is_leaf
    (x * 1.0).backward(nn.tensor([1.0, -1.0]))
    assert x.grad.tolist() == [5.0, 7.0]


def test_deep_chain_needs_no_recursion() -> None:
    x = nn.tensor([0.5], requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.0 + 0.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0]


def test_errors_name_what_is_wrong() -> None:
    a = nn.tensor([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match=r"shapes \(1, 3\) and \(2,\) cannot be broadcast"):
        a + nn.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="inner sizes differ"):
        a @ nn.tensor([[1.0, 2.0]])
    with pytest.raises(ValueError, match="ragged nested list"):
        nn.tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="not a number"):
        nn.tensor([[1.0, "x"]])
    with pytest.raises(ValueError, match="cannot view"):
        a.reshape(2, 2)
    with pytest.raises(IndexError, match="out of range"):
        a[0, 3]
    with pytest.raises(ValueError, match="target 3 in row 0"):
        nn.cross_entropy(a, [3])
    with pytest.raises(ValueError, match="index 7 at flat position 1"):
        nn.one_hot([1, 7], 5)
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        nn.tensor([1.0], backend="gpu")


def _run(fn, flats, shapes, backend, weights):
    inputs = [leaf(f, s, backend) for f, s in zip(flats, shapes)]
    out = fn(*inputs)
    (out * nn.tensor(weights, backend=backend).reshape(out.shape)).sum().backward()
    return out.flat(), [t.grad.flat() for t in inputs]


EVERY_OP = {
    **{f"binary {k}": (fn, [(2, 3, 4), (3, 1)], positive) for k, fn in BINARY.items()},
    **{f"unary {k}": (fn, [(3, 5)], sample or positive) for k, (fn, sample) in UNARY.items()},
    **{f"reduce {k}": (fn, [(3, 4, 2)], None) for k, fn in REDUCTIONS.items()},
    **{f"move {k}": (fn, [shape], None) for k, (shape, fn) in MOVES.items()},
    "matmul": (lambda a, b: a @ b, [(7, 9), (9, 5)], None),
    "linear": (lambda x, w, b: nn.functional.linear(x, w, b), [(6, 9), (4, 9), (4,)], None),
    "one-hot linear": (
        lambda w, b: nn.functional.linear(
            nn.one_hot([[1, 2, 0], [2, 2, 1]], 3, backend=w.backend).reshape(2, 9), w, b
        ),
        [(4, 9), (4,)],
        None,
    ),
    "cross_entropy": (lambda z: nn.cross_entropy(z, [0, 3, 1]).reshape(1), [(3, 4)], None),
}


@pytest.mark.parametrize("name", sorted(EVERY_OP))
def test_python_and_numpy_agree_on_every_op_to_1e_12(name: str) -> None:
    pytest.importorskip("numpy", reason="numpy is the backend compared with")
    fn, shapes, sample = EVERY_OP[name]
    rng = random.Random(f"agree {name}")
    draw = sample or (lambda r: r.uniform(-2.0, 2.0))
    flats = [[draw(rng) for _ in range(math.prod(s))] for s in shapes]
    out_size = fn(*[nn.tensor(f).reshape(s) for f, s in zip(flats, shapes)]).numel()
    weights = [rng.uniform(-1.0, 1.0) for _ in range(out_size)]
    reference = _run(fn, flats, shapes, "numpy", weights)
    for dot in sorted(DOTS):
        got = _run(fn, flats, shapes, PythonBackend(dot), weights)
        for kind, a, b in [("value", got[0], reference[0])] + [
            (f"grad {i}", g, r) for i, (g, r) in enumerate(zip(got[1], reference[1]))
        ]:
            assert len(a) == len(b)
            for u, v in zip(a, b):
                assert math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-14), (dot, kind, u, v)
