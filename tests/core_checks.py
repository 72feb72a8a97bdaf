"""Core checks that need nothing but tang and the standard library.

The same module runs in two interpreters: here under pytest (``tests/test_core_checks.py``)
and inside Pyodide, CPython 3.14 in WebAssembly, in the e2e suite
(``e2e/test_core_in_pyodide.py``), where pytest and hypothesis are not installed. Each check
is a plain function that raises AssertionError on a failure; ``run`` reports them all.
"""

from __future__ import annotations

import math
import random
import struct
import traceback
from collections.abc import Callable
from typing import Any

import tang
from tang import Dual
from tang.expr import graph as g
from tang.expr.sparsity import dependency_masks

try:
    from tests import core_programs as programs
except ImportError:  # in Pyodide both files sit side by side, outside a package
    import core_programs as programs  # type: ignore[no-redef]

VARIABLES = programs.VARIABLES

CHECKS: list[Callable[[], None]] = []


def check(fn: Callable[[], None]) -> Callable[[], None]:
    CHECKS.append(fn)
    return fn


def close(a: float, b: float, rtol: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def raises(kind: type[BaseException], fn: Callable[[], Any]) -> BaseException:
    """The exception ``fn`` raises, which must be a ``kind``."""
    try:
        fn()
    except kind as exc:
        return exc
    raise AssertionError(f"{kind.__name__} was not raised")


def same_bits(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if a != a and b != b:
        return True
    return struct.pack("<d", a) == struct.pack("<d", b)


SLOPES = [  # f written over any number, its derivative, points
    (lambda x: x * x * x - 2 / x, lambda x: 3 * x * x + 2 / (x * x), [0.7, -1.5]),
    (lambda x: tang.sin(x) * tang.cos(x), lambda x: math.cos(2 * x), [0.3, 2.0]),
    (lambda x: tang.exp(x) * tang.log(x), lambda x: math.exp(x) * (math.log(x) + 1 / x), [0.5]),
    (
        lambda x: tang.sqrt(x) + tang.tan(x),
        lambda x: 0.5 / math.sqrt(x) + 1 / math.cos(x) ** 2,
        [0.4],
    ),
    (tang.tanh, lambda x: 1 - math.tanh(x) ** 2, [0.3, -1.0]),
    (tang.sigmoid, lambda x: math.exp(-x) / (1 + math.exp(-x)) ** 2, [0.3, -1.0]),
    (lambda x: tang.atan2(x, 2.0), lambda x: 2 / (4 + x * x), [0.3, -1.0]),
    (lambda x: x**2.5 + 2**x, lambda x: 2.5 * x**1.5 + math.log(2) * 2**x, [0.3, 1.7]),
    (
        lambda x: tang.abs(x) + tang.max(x, 0.5),
        lambda x: (1 if x > 0 else -1) + (x > 0.5),
        [0.3, -1.0, 2.0],
    ),
]


@check
def dual_slopes_match_the_calculus() -> None:
    for f, df, points in SLOPES:
        for x in points:
            d = f(Dual(x, 1.0))
            assert close(d.value, f(x)) and close(d.tangent, df(x), 1e-12), (x, d, df(x))


@check
def floats_follow_ieee_and_never_raise() -> None:
    assert tang.log(0.0) == -math.inf and math.isnan(tang.sqrt(-1.0))
    assert tang.exp(1e4) == math.inf and math.isnan(tang.pow(-8.0, 1 / 3))
    assert tang.recip(-0.0) == -math.inf and tang.pow(0.0, -1.0) == math.inf
    for name in ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sigmoid", "recip"):
        for v in (0.0, -0.0, -1.0, 1e308, -1e308, math.inf, -math.inf, math.nan):
            assert isinstance(getattr(tang, name)(v), float), (name, v)


@check
def one_function_three_number_types() -> None:
    def f(x: Any, y: Any) -> Any:
        return tang.sqrt(x * x + y * y) * tang.exp(-x) + tang.atan2(y, x) - x**2 / y

    plain = f(0.5, 2.0)
    assert close(tang.trace(f).eval([0.5, 2.0])[0], plain, 1e-14)
    assert f(Dual(0.5, 1.0), 2.0).value == plain


@check
def higher_derivatives_and_no_perturbation_confusion() -> None:
    d = tang.derivative
    assert [d(lambda x: x**5, n)(2.0) for n in range(7)] == [32, 80, 160, 240, 240, 120, 0]
    assert close(d(tang.sin, 4)(0.3), math.sin(0.3), 1e-12)
    assert d(lambda x: x * d(lambda y: x + y)(1.0))(2.0) == 1.0
    assert d(lambda x: x * d(lambda y: x * y)(2.0))(3.0) == 6.0


@check
def jvp_jacobian_and_several_tangents() -> None:
    def f(x: Any, y: Any, z: Any) -> list[Any]:
        return [x * y * z, tang.sin(x) + z, y]

    assert tang.jacobian(f)(1.0, 2.0, 3.0) == [
        [6.0, 3.0, 2.0],
        [math.cos(1.0), 0.0, 1.0],
        [0.0, 1.0, 0.0],
    ]
    value, slope = tang.jvp(lambda x, y: x * y, (2.0, 3.0), ((1.0, 0.0), (0.0, 1.0)))
    assert value == 6.0 and list(slope) == [3.0, 2.0]


@check
def grad_forms_and_composition() -> None:
    f = lambda x, y: x * x * y  # noqa: E731
    assert tang.grad(f)(3.0, 2.0) == (12.0, 9.0)
    assert tang.grad(tang.trace(f)).eval([3.0, 2.0]) == [18.0, 12.0, 9.0]
    assert tang.grad(tang.grad(lambda x: x**4))(2.0) == 48.0
    assert tang.derivative(tang.grad(lambda x: x**4))(2.0) == 48.0
    assert tang.hessian(lambda x, y: x * x * y)(1.0, 2.0) == [[4.0, 2.0], [2.0, 0.0]]
    assert isinstance(
        raises(ValueError, lambda: tang.grad(tang.trace(lambda x: [x, x]))), ValueError
    )
    assert "where" in str(raises(TypeError, lambda: tang.grad(lambda x: x if x > 0 else -x)(1.0)))


@check
def simplifier_rules() -> None:
    x, y = g.var("x"), g.var("y")
    messy = (x * 0.0 + y * 1.0 - (x - x)) * (x / x) + tang.exp(tang.log(y))
    assert tang.simplify(messy) is y * 2.0
    assert tang.simplify(g.neg(g.neg(x)), assume_finite=False) is x
    kept = tang.simplify(x * 0.0, assume_finite=False)  # x·0 is nan at x = inf
    assert math.isnan(g.evaluate([kept], {"x": math.inf})[0])


@check
def sparsity_beyond_64_inputs() -> None:
    names = [f"v{i}" for i in range(100)]
    graph = tang.trace(lambda *v: [v[0] * v[99], sum(v)], names)
    assert dependency_masks(graph) == [1 | 1 << 99, (1 << 100) - 1]


@check
def random_programs_agree_every_way() -> None:
    """Reverse mode vs forward Duals, forward-over-reverse vs nested Duals, and the
    simplifier's value preservation, on 150 seeded random programs."""
    rng = random.Random(20_251_129)
    checked = 0
    while checked < 150:
        steps = programs.random_program(rng.randint)
        point = tuple(rng.choice((0.0, 1.0, -1.0)) * rng.uniform(0.1, 2.0) for _ in VARIABLES)
        f = lambda *v, steps=steps: programs.run(steps, v)  # noqa: E731
        graph = tang.trace(f, list(VARIABLES))
        gradient = tang.grad(graph)
        reverse = gradient.eval(point)
        if not all(math.isfinite(v) and abs(v) < 1e8 for v in reverse):
            continue  # outside the domain, or near a pole
        checked += 1
        (forward,) = tang.jacobian(f)(*point)
        for a, b in zip(reverse[1:], forward, strict=True):
            assert close(a, b), (steps, point, a, b)
        hess = tang.hessian(graph)(*point)
        nested = tang.jacobian(lambda *v, f=f: tang.jacobian(f)(*v)[0])(*point)
        for row, other in zip(hess, nested, strict=True):
            for a, b in zip(row, other, strict=True):
                assert (not math.isfinite(a)) or close(a, b, 1e-8), (steps, point, a, b)
        exact = tang.simplify(gradient, assume_finite=False)
        for a, b in zip(reverse, exact.eval(point), strict=True):
            assert same_bits(a, b), (steps, point, a, b)
        if programs.all_finite(gradient, point):
            for a, b in zip(reverse, tang.simplify(gradient).eval(point), strict=True):
                assert close(a, b), (steps, point, a, b)


@check
def collect_frees_dead_nodes_and_keeps_live_ones() -> None:
    """The intern table's collector, which reads reference counts: in CPython 3.14 some
    references are borrowed, so Pyodide must agree on what is live."""
    g.collect()
    before = len(g._interned)
    x = g.var("x")
    kept = g.sin(g.add(x, 0.25))  # held by a local
    held = [g.tanh(kept)]  # held by a container only
    y = x
    for _ in range(5_000):
        y = g.sin(g.add(y, 0.5))
    assert len(g._interned) >= before + 10_000
    assert g.collect() == 0  # everything is reachable
    del y
    assert g.collect() >= 10_000  # the whole dead chain, in one newest-first pass
    assert g.sin(g.add(x, 0.25)) is kept and g.tanh(kept) is held[0]  # still interned
    assert len(g._interned) <= before + 5  # x, 0.25, the sum, kept and its tanh
    del kept, held
    g.collect()
    assert len(g._interned) <= before + 1  # at most the variable x, still held here
    # young: only what was made since the last collection
    old = g.sin(g.add(x, 0.75))
    g.collect(young=True)
    young = g.sin(g.add(x, 0.125))
    kept = g.tanh(young)
    del young
    g.sin(g.add(x, 0.375))  # made and dropped at once
    assert g.collect(young=True) == 3  # the sum, its sine and 0.375; kept's operand stays
    del old
    assert g.collect(young=True) == 0  # old garbage waits for a full collection
    assert g.collect() == 3
    assert g.sin(g.add(x, 0.125)) is kept.args[0]


@check
def an_interrupted_collection_leaves_the_table_usable() -> None:
    """The page cancels busy Python with a KeyboardInterrupt, which may land inside a
    collection: what it freed stays freed, and the next collections, young or full, run."""
    g.collect()
    x = g.var("x")

    class Interrupting(dict):  # the intern table, whose 100th lookup is interrupted
        lookups = 0

        def __getitem__(self, key: tuple) -> g.Node:
            Interrupting.lookups += 1
            if Interrupting.lookups == 100:
                raise KeyboardInterrupt
            return dict.__getitem__(self, key)

    for young in (True, False):
        before = len(g._interned)
        y = x
        for _ in range(500):
            y = g.sin(g.add(y, 0.5))
        if not young:
            g.collect(young=True)  # the chain grows old, alive: the full pass frees old nodes
        del y
        real, Interrupting.lookups = g._interned, 0
        g._interned = Interrupting(real)  # the same entries, in the same order, held once
        real.clear()
        try:
            g.collect(young=young)
            raise AssertionError("the collection was not interrupted")
        except KeyboardInterrupt:
            pass
        finally:
            real.update(g._interned)
            g._interned = real
        assert before + 900 <= len(g._interned) < before + 1000, young  # 99 freed
        g.collect(young=True)  # must not fail on the young count the interruption left
        g.collect()
        assert len(g._interned) == before, young
    assert g.sin(g.add(x, 0.5)).args[0] is g.add(x, 0.5)


@check
def nn_autograd_matches_finite_differences() -> None:
    """tang.nn's reverse mode (pure-Python backend) against central differences, through
    broadcasting, a one-hot layer, tanh, matmul, log-softmax and both losses; then a 2-8-1
    tanh net learns XOR."""
    from tang import nn

    rng = random.Random(5)
    shapes = {"x": (2, 3), "w": (4, 3), "b": (4,), "v": (4, 5), "u": (5, 6)}
    values = {k: [rng.uniform(-1, 1) for _ in range(math.prod(s))] for k, s in shapes.items()}
    hot = nn.one_hot([[1, 0], [2, 2]], 3).reshape(2, 6)

    def loss(vals: dict[str, list[float]], grad: bool) -> Any:
        t = {k: nn.tensor(v).reshape(shapes[k]).detach() for k, v in vals.items()}
        for leaf in t.values():
            leaf.requires_grad = grad
        h = nn.functional.linear(t["x"].tanh(), t["w"], t["b"]) * 0.5 + t["b"]
        z = h @ t["v"] + nn.functional.linear(hot, t["u"])  # a row gather
        return nn.cross_entropy(z, [4, 0]) + nn.mse(h.max(-1), 0.25), t

    out, t = loss(values, True)
    out.backward()
    for k, flat in values.items():
        analytic = t[k].grad.flat()
        for i in range(len(flat)):
            up = {n: list(v) for n, v in values.items()}
            down = {n: list(v) for n, v in values.items()}
            up[k][i] += 1e-6
            down[k][i] -= 1e-6
            with nn.no_grad():
                numeric = (loss(up, False)[0].item() - loss(down, False)[0].item()) / 2e-6
            assert abs(numeric - analytic[i]) <= 1e-6 * max(1.0, abs(numeric)), (k, i)

    model = nn.Sequential(nn.Linear(2, 8, seed=3), nn.Tanh(), nn.Linear(8, 1, seed=4))
    xor = [([0.0, 0.0], [0.0]), ([0.0, 1.0], [1.0]), ([1.0, 0.0], [1.0]), ([1.0, 1.0], [0.0])]
    loader = nn.DataLoader(xor, batch_size=4, seed=0)
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.05), nn.mse)
    assert trainer.epochs(300).fit(loader)[-1] < 0.05


@check
def nn_safetensors_round_trip_and_refusal() -> None:
    """tang.nn.save/load in pure Python: exact round trip; a truncated or wrongly shaped
    file is refused and leaves the model as it was."""
    from tang import nn

    model = nn.Sequential(nn.Linear(3, 4, seed=1), nn.Tanh(), nn.Linear(4, 2, seed=2))
    blob = nn.save(None, model, metadata={"model": "check"})
    state, meta = nn.load(blob, with_metadata=True)
    assert meta == {"model": "check"}
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for name, p in model.named_parameters():
        assert state[name].flat() == p.flat(), name
    before = model.state_dict()["2.weight"].flat()
    error = raises(nn.SafetensorsError, lambda: nn.load(blob[:-3]))
    assert "past the end of the data" in str(error)
    wrong = nn.save(None, {**model.state_dict(), "2.weight": nn.zeros(4, 2)})
    error = raises(ValueError, lambda: model.load_state_dict(nn.load(wrong)))
    assert "'2.weight' has shape (4, 2)" in str(error)
    assert model.state_dict()["2.weight"].flat() == before


@check
def geometry_predicates_are_exact_and_quaternions_rotate() -> None:
    """Exact signs where naive floats fail (Kettner's collinear points nudged by an ulp), a
    quarter turn about z, and a Dual slope through a rotation."""
    from tang.geometry import Quat, Vec3, incircle, orient2d

    assert orient2d((0.5, 0.5), (12.0, 12.0), (24.0, 24.0)) == 0
    nudged = (math.nextafter(0.5, 1.0), 0.5)
    assert orient2d(nudged, (12.0, 12.0), (24.0, 24.0)) == -1
    assert incircle((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)) == 0
    q = Quat.from_axis_angle(Vec3(0.0, 0.0, 1.0), math.pi / 2)
    x, y, z = q.rotate(Vec3(1.0, 0.0, 0.0))
    assert abs(x) < 1e-15 and close(y, 1.0) and z == 0.0
    turn = Quat.from_axis_angle(Vec3(0.0, 0.0, 1.0), Dual(0.3, 1.0)).rotate(Vec3(1.0, 0.0, 0.0))
    assert close(turn[0].tangent, -math.sin(0.3)) and close(turn[1].tangent, math.cos(0.3))


@check
def linalg_derivatives_through_factorisations() -> None:
    """solve, det and eigh on Duals give the closed-form derivatives: dx = -A⁻¹·dA·x,
    d det = det·tr(A⁻¹dA), dλ = vᵀ·dA·v; a sparse Cholesky solves the same system."""
    from tang import linalg
    from tang.linalg import sparse

    a = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]
    b = [1.0, 2.0, 3.0]
    t = Dual(0.0, 1.0)
    moved = [[a[i][j] + (t if i == j == 0 else 0.0) for j in range(3)] for i in range(3)]
    x = linalg.solve(a, b)
    inv = linalg.inv(a)
    dx = [xi.tangent for xi in linalg.solve(moved, b)]
    assert all(close(dx[i], -inv[i][0] * x[0], 1e-12) for i in range(3))
    assert close(linalg.det(moved).tangent, linalg.det(a) * inv[0][0], 1e-12)
    w, v = linalg.eigh(moved)
    assert all(close(w[k].tangent, v[0][k].value ** 2, 1e-9) for k in range(3))
    assert max(abs(p - q) for p, q in zip(sparse.spsolve(sparse.CSR.from_dense(a), b), x)) < 1e-12
    assert "singular" in str(
        raises(linalg.LinAlgError, lambda: linalg.solve([[1, 2], [2, 4]], b[:2]))
    )


@check
def solvers_reach_the_published_minima() -> None:
    """Levenberg–Marquardt and L-BFGS on Rosenbrock and Freudenstein–Roth from the
    standard starts (Moré, Garbow and Hillstrom), derivatives from dual numbers."""
    from tang.solve import least_squares, mgh, minimize

    for name in ("rosenbrock", "freudenstein_roth"):
        p = mgh.PROBLEMS[name]
        fit = least_squares(p.residuals, p.x0)
        f = 2.0 * fit.cost
        assert fit.success and any(abs(f - m) <= max(1e-10, 1e-6 * m) for m in p.minima), name
    best = minimize(lambda v: (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2, [-1.2, 1.0])
    assert best.success and abs(best.x[0] - 1.0) < 1e-4 and abs(best.x[1] - 1.0) < 1e-4


def deep_chain(steps: int = 100_000) -> None:
    """A chain of 2·steps nodes traces, differentiates, simplifies, evaluates and is freed
    (every walk is iterative; the e2e suite runs this inside Pyodide)."""

    def chain(x: Any) -> Any:
        y = x
        for _ in range(steps):
            y = y * 0.999 + x
        return y

    graph = tang.trace(chain)
    assert len(graph) == 2 * steps + 2
    gradient = tang.grad(graph)
    value, slope = gradient.eval([0.3])
    assert close(value, chain(0.3), 1e-12)
    assert close(slope, (1 - 0.999 ** (steps + 1)) / (1 - 0.999))
    assert close(slope, tang.derivative(chain)(0.3), 1e-12)
    bigger = tang.Graph(graph.inputs, [graph.outputs[0] * 1.0 + -0.0])
    assert tang.simplify(bigger, assume_finite=False).outputs[0] is graph.outputs[0]
    assert dependency_masks(graph) == [1]
    del graph, gradient, bigger
    assert g.collect() >= 4 * steps  # the chain and its gradient, freed in a loop


@check
def loops_run_traced_and_with_tangents() -> None:
    """tang.fori_loop: a traced loop is one node over its body; evaluated, it equals the
    plain run bit for bit, and Duals carried inside it equal Duals on floats."""

    def body(i: Any, s: Any) -> Any:
        x, v = s
        v = v - 0.05 * tang.sin(x) + 1e-4 * i
        return (x + 0.05 * v, tang.where(x > 2.0, -v, v))

    x, v = tang.var("x"), tang.var("v")
    looped = tang.fori_loop(400, body, (Dual(x, (1.0, 0.0)), Dual(v, (0.0, 1.0))))
    outs = [looped[0].value, *looped[0].tangent]
    assert len(g.topo_order(outs)) < 12  # the loop, its operands and three states read
    plain = tang.fori_loop(400, body, (Dual(0.7, (1.0, 0.0)), Dual(0.2, (0.0, 1.0))))
    assert g.evaluate(outs, {"x": 0.7, "v": 0.2}) == [plain[0].value, *plain[0].tangent]
    kernel = tang.lower(outs, ["x", "v"], "python", shape="function").source
    assert "for t" in kernel and kernel.count("sin(") == 1  # a real loop, the body once


@check
def mlkem_matches_its_known_answers() -> None:
    """ML-KEM-512 on the integer tensor graphs printed as Python, hashing by hashlib: the
    keys, ciphertext and secrets of fixed seeds (digests of kyber-py 1.2.0's answers for
    the same seeds), decapsulation, and the implicit-rejection secret of a tampered
    ciphertext."""
    import hashlib

    from tang.crypto import mlkem

    p = mlkem.ML_KEM_512
    digest = lambda b: hashlib.sha3_256(b).hexdigest()[:16]  # noqa: E731
    ek, dk = p.keygen_internal(bytes(range(32)), bytes(range(32, 64)))
    assert (digest(ek), digest(dk)) == ("82f101ff648063b3", "0bd3f5df01098ac9")
    key, c = p.encaps_internal(ek, bytes(range(64, 96)))
    assert key.hex()[:16] == "14cace3e48771b31" and digest(c) == "e3fdddb902558691"
    assert p.decaps(dk, c) == key
    assert p.decaps(dk, bytes([c[0] ^ 1]) + c[1:]).hex()[:16] == "32ee1fb3f7bd2915"


def run(names: list[str] | None = None, deep_steps: int = 0) -> dict[str, str]:
    """Run the checks (all, or those named) and, with ``deep_steps``, the deep chain:
    name → "ok" or the traceback."""
    chosen = [c for c in CHECKS if names is None or c.__name__ in names]
    if deep_steps:
        chosen.append(lambda: deep_chain(deep_steps))
        chosen[-1].__name__ = "deep_chain"
    report = {}
    for fn in chosen:
        try:
            fn()
            report[fn.__name__] = "ok"
        except Exception:
            report[fn.__name__] = traceback.format_exc()
    return report
