"""tang.nn's ops that are not element-wise are the tensor IR's (tang/nn/derived.py): no
derivative is written in tang.nn, and each op's steps on a backend give what the IR's own
evaluator gives for the op's graph and the gradient tang.tensor.grad derives from it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import tang.nn as nn
from tang import tensor as ir
from tang.nn import derived, maps, ops

np = pytest.importorskip("numpy", reason="numpy is the oracle's array type here")
BACKENDS = ["python", "numpy"]


def test_tang_nn_writes_no_derivative() -> None:
    """Across every module of tang.nn, the classes with a ``backward`` are the user's entry
    point (``Tensor.backward``) and the two executors of derived gradients; nothing holds
    a table of vector-Jacobian products."""
    found = set()
    for info in pkgutil.iter_modules(nn.__path__):
        module = importlib.import_module(f"tang.nn.{info.name}")
        for name, cls in vars(module).items():
            mine = inspect.isclass(cls) and cls.__module__ == module.__name__
            if mine and ("backward" in vars(cls) or "vjp" in vars(cls)):
                found.add(f"{info.name}.{name}")
    assert found == {"tensor.Tensor", "maps.Map", "derived.Derived", "ops.Op"}
    assert [
        c for c in vars(ops).values() if inspect.isclass(c) and c.__module__ == ops.__name__
    ] == [ops.Op]


# each spelling of tang.nn that is not element-wise, on inputs of these shapes
SPELLINGS = {
    "matmul": (lambda a, b: a @ b, [(3, 4), (4, 2)]),
    "matvec": (lambda a, b: a @ b, [(3, 4), (4,)]),
    "linear": (lambda x, w, b: nn.functional.linear(x, w, b), [(5, 3), (4, 3), (4,)]),
    "linear_3d": (lambda x, w: nn.functional.linear(x, w), [(2, 5, 3), (4, 3)]),
    "sum": (lambda a: a.sum((0, 2)), [(2, 3, 4)]),
    "mean_keep": (lambda a: a.mean(-1, keepdim=True), [(3, 4)]),
    "max": (lambda a: a.max(1), [(3, 4)]),
    "max_all": (lambda a: a.max(), [(3, 4)]),
    "log_softmax": (lambda a: a.log_softmax(0), [(3, 4)]),
    "softmax": (lambda a: a.softmax(-1), [(3, 4)]),
    "cross_entropy": (lambda a: nn.cross_entropy(a, [2, 0, 3]), [(3, 4)]),
    "cross_entropy_none": (lambda a: nn.cross_entropy(a, [1, 1, 0], reduction="none"), [(3, 4)]),
    "reshape": (lambda a: a.reshape(4, 3), [(3, 4)]),
    "permute": (lambda a: a.permute(2, 0, 1), [(2, 3, 4)]),
    "expand": (lambda a: a.expand(2, 3, 4), [(3, 1)]),
    "slice": (lambda a: a[1:, ::-2], [(3, 4)]),
    "rows": (lambda a: a[[2, 0, 2]], [(3, 4)]),
    "gather": (lambda a: a.gather(1, [[0, 3], [1, 1], [2, 0]]), [(3, 4)]),
    "cat": (lambda a, b: nn.cat([a, b, a]), [(2, 3), (1, 3)]),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_op_runs_the_ir_graph_and_its_derived_gradient(backend: str, name: str) -> None:
    """Every op the spelling records is Map or Derived, and no step of a Derived op falls
    back to the reference evaluator. The last op's value and gradients equal the IR's
    evaluation of its own definition (tang.tensor ops) and of the gradient tang.tensor.grad
    derives from it, to 1e-12 (finite differences: tests/test_nn_grad.py)."""
    fn, shapes = SPELLINGS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    xs = [
        nn.tensor(rng.standard_normal(s).tolist(), requires_grad=True, backend=backend)
        for s in shapes
    ]
    y = fn(*xs)
    seen, stack = [], [y]
    while stack:
        t = stack.pop()
        if t._op is not None:
            seen.append(t)
            stack.extend(t._parents)
    assert all(isinstance(t._op, (maps.Map, derived.Derived)) for t in seen), seen
    for t in seen:
        if isinstance(t._op, derived.Derived):
            steps = [*t._op.program.forward, *t._op.program.backward]
            assert all(step.kind != "reference" for _, step in steps), (name, steps)
    y = next(t for t in seen if isinstance(t._op, derived.Derived))  # the last one made
    op, parents = y._op, y._parents
    data = [np.array(p.tolist(), dtype=float) for p in parents]
    seed = rng.standard_normal(y.shape)
    B = y.backend
    grads = op.backward(B, B.from_flat(seed.reshape(-1).tolist(), seed.shape))
    define = ir.ops.OPS[op.define] if isinstance(op.define, str) else op.define
    inputs = [ir.input(f"x{k}", d.shape) for k, d in enumerate(data)]
    wrt = [f"x{k}" for k, need in enumerate(op.needs) if need]
    want = ir.evaluate(
        ir.grad(ir.graph(y=define(*inputs, *op.params)), "y", wrt),
        {**{f"x{k}": d for k, d in enumerate(data)}, "d_y": seed},
        backend="numpy",
    )
    assert np.allclose(np.array(y.tolist()), want["y"], rtol=1e-12, atol=1e-12)
    for k, g in enumerate(grads):
        if op.needs[k]:
            got = np.array(B.to_flat(g)).reshape(g.shape)
            assert np.allclose(got, want[f"d_x{k}"], rtol=1e-12, atol=1e-12)
        else:
            assert g is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_translation_covers_fused_chains_epilogues_and_indices(backend: str) -> None:
    """Graphs the fusion pass makes (an element-wise chain in a reduction, an epilogue, a
    reduction read in place) and index-dependent bodies, each against the IR evaluator."""
    B = nn.get_backend(backend)

    def rms(x, w):
        return ir.rms_norm(x, w)

    def attention_scores(q, k):
        return ir.softmax((q @ k.T) * 0.5, -1)

    def take_rows(a, i):
        return ir.take(a, i)

    def row_products(a):
        return ir.prod(a, 1)

    rng = np.random.default_rng(7)
    cases = [
        (rms, [(3, 4), (4,)], None),
        (attention_scores, [(3, 2), (5, 2)], None),
        (take_rows, [(6, 2), (4,)], [5.0, 0.0, 5.0, 2.0]),
        (take_rows, [(6,), (3,)], [1.0, 7.0, 2.5]),  # out of range and fractional: zeros
        (take_rows, [(6,), (2,)], [float("nan"), float("inf")]),
        (row_products, [(2, 3)], None),  # a product monoid: the reference evaluator's
    ]
    for define, shapes, index in cases:
        data = [rng.standard_normal(s) for s in shapes]
        needs = (True,) * len(shapes)
        if index is not None:
            data[1] = np.array(index)
            needs = (True, False)
        op = derived.Derived(define)
        op.needs = needs
        arrays = [B.from_flat(d.reshape(-1).tolist(), d.shape) for d in data]
        y = op.forward(B, *arrays)
        seed = rng.standard_normal(tuple(y.shape))
        grads = op.backward(B, B.from_flat(seed.reshape(-1).tolist(), seed.shape))
        inputs = [ir.input(f"x{k}", s) for k, s in enumerate(shapes)]
        wrt = [f"x{k}" for k, need in enumerate(needs) if need]
        want = ir.evaluate(
            ir.grad(ir.graph(y=define(*inputs)), "y", wrt),
            {**{f"x{k}": d for k, d in enumerate(data)}, "d_y": seed},
            backend="numpy",
        )
        got = np.array(B.to_flat(y)).reshape(y.shape)
        assert np.allclose(got, want["y"], rtol=1e-12, atol=1e-12), define.__name__
        forward_kinds = [step.kind for _, step in op.program.forward]
        assert ("reference" in forward_kinds) == (define is row_products), forward_kinds
        for k, g in enumerate(grads):
            if needs[k]:
                got = np.array(B.to_flat(g)).reshape(g.shape)
                assert np.allclose(got, want[f"d_x{k}"], rtol=1e-12, atol=1e-12)
            else:
                assert g is None


def test_a_program_is_built_once_per_op_shapes_and_wanted_gradients() -> None:
    a = nn.randn(3, 4, requires_grad=True)
    first = (a @ nn.randn(4, 2))._op.program
    assert (a @ nn.randn(4, 2))._op.program is first
    assert (a @ nn.randn(4, 5))._op.program is not first
    b = nn.randn(3, 4)
    assert (b @ nn.randn(4, 2, requires_grad=True))._op.program is not first
    assert first.backward[0][1].kind != "reference"
    assert isinstance((a.tanh())._op, maps.Map)
    # the picked class of each row is read at its target (a gather), not compared with all
    loss = nn.cross_entropy(a, [3, 0, 2])
    kinds = {step.kind for _, step in [*loss._op.program.forward, *loss._op.program.backward]}
    assert "gather" in kinds


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_retained_graph_runs_backward_twice(backend: str) -> None:
    """``backward(retain_graph=True)`` keeps each op's forward buffers: a second pass adds
    the same gradients again (PyTorch's accumulation)."""
    x = nn.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, backend=backend)
    y = nn.cross_entropy(x @ x.T, [1, 0]) + (x @ x).sum()
    y.backward(retain_graph=True)
    once = x.grad.tolist()
    y.backward()
    assert x.grad.tolist() == [[2 * v for v in row] for row in once]
    assert y._op is None  # released after the pass that does not retain it


@pytest.mark.parametrize("backend", BACKENDS)
def test_tied_maxima_share_the_gradient(backend: str) -> None:
    """The IR's rule for an extremum: the tied elements share its gradient evenly (as
    PyTorch's amax does), so a row's weights sum to 1."""
    x = nn.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], requires_grad=True, backend=backend)
    x.max(1).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]
    x.grad = None
    x.max().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5], [0.0, 0.0, 0.0]]
