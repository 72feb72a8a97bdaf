"""The op registry (``tang.expr.ops``) is the one list of primitives: every op in it has a
derivative, a kernel, a spelling in every backend, a label and the page's texts, and every
other per-op table (printer templates, Dual's methods, simplifier patterns, parser calls)
names only ops it holds and agrees with it.

``registry_problems`` does the checking, so the same function is run on the real registry
(no problem) and on registries with one piece taken away (each problem named).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import operator
from collections.abc import Mapping
from pathlib import Path

import pytest

import tang.scalar
from tang import Dual
from tang.expr import graph as g
from tang.expr import ops
from tang.expr.generic import COMPOSITES as GENERIC
from tang.expr.grad import VJP, gradient
from tang.expr.parse import FUNCTIONS, parse
from tang.expr.simplify import BUILD, EXACT, FINITE
from tang.expr.trace import REPLAY
from tang.lower import BACKENDS, Printer
from tang.lower.base import LOOP_NEST, LOOP_NEST_FUNCTION

PRINTED_ONLY = {"sub"}  # printer forms that are not graph ops (an add of a negation)
INT_ARITHMETIC = ("add", "mul", "neg", "lt", "le", "eq", "select")


def registry_problems(
    registry: Mapping[str, ops.Primitive], printers: Mapping[str, Printer]
) -> list[str]:
    """Everything missing or unknown, one sentence each: ops without a derivative, kernel,
    label, figure texts or a spelling in some backend, and tables naming unknown ops."""
    problems: list[str] = []
    operations = [name for name, p in registry.items() if not p.leaf]
    for name in operations:
        p = registry[name]
        for field in ("vjp", "kernel", "sympy", "numpy"):
            if getattr(p, field) is None:
                problems.append(f"{name}: no {field}")
        for field in ("label", "spelling", "epsilon"):
            if not getattr(p, field):
                problems.append(f"{name}: no {field}")
        if p.spelling.count("{") != p.arity:
            problems.append(f"{name}: its spelling names {p.spelling.count('{')} operands")
        if p.call is not None and not p.integer and p.call not in FUNCTIONS:
            problems.append(f"{name}: tang's parser has no function {p.call!r}")
    floats = [name for name in operations if not registry[name].integer]
    # an integer type spells the integer ops and the arithmetic, comparisons and select
    integers = [name for name in operations if registry[name].integer] + list(INT_ARITHMETIC)
    for backend, printer in printers.items():
        for dtype in printer.dtypes + printer.int_dtypes:
            table = printer.table(dtype)
            needed = integers if dtype in printer.int_dtypes else floats
            problems += [
                f"{name}: no {backend} {dtype} spelling" for name in needed if name not in table
            ]
            problems += [
                f"{backend} {dtype} spells {op!r}, which the registry lacks"
                for op in table
                if op not in registry and op not in PRINTED_ONLY
            ]
    tables = {"grad.VJP": VJP, "trace.REPLAY": REPLAY, "simplify.BUILD": BUILD}
    for where, table in tables.items():
        problems += [
            f"{where} names {op!r}, which the registry lacks" for op in table if op not in registry
        ]
    for pattern, _ in EXACT + FINITE:
        for op in _pattern_ops(pattern):
            if op not in registry:
                problems.append(f"a simplifier rule matches {op!r}, which the registry lacks")
    return problems


def _pattern_ops(pattern: object) -> list[str]:
    stack, found = [pattern], []
    while stack:
        p = stack.pop()
        if isinstance(p, tuple):
            found.append(p[0])
            stack.extend(p[1:])
    return found


def test_the_registry_is_complete_and_every_table_agrees_with_it():
    assert registry_problems(ops.OPS, BACKENDS) == []


def test_an_op_without_a_derivative_spelling_or_label_is_named():
    bare = ops.Primitive("erf", 1, math.erf, None, "", "erf {0}", "da · 2/√π · e^(−a²)")
    problems = registry_problems({**ops.OPS, "erf": bare}, BACKENDS)
    assert "erf: no vjp" in problems and "erf: no label" in problems
    assert "erf: no sympy" in problems and "erf: no numpy" in problems
    for backend in BACKENDS:
        assert f"erf: no {backend} {BACKENDS[backend].dtypes[0]} spelling" in problems


def test_a_table_naming_an_op_the_registry_lacks_is_named():
    smaller = {k: v for k, v in ops.OPS.items() if k != "tanh"}
    problems = registry_problems(smaller, BACKENDS)
    for where in ("grad.VJP", "trace.REPLAY", "simplify.BUILD"):
        assert f"{where} names 'tanh', which the registry lacks" in problems
    assert "wgsl f32 spells 'tanh', which the registry lacks" in problems
    no_call = {**ops.OPS, "sin": dataclasses.replace(ops.OPS["sin"], call="sine")}
    assert "sin: tang's parser has no function 'sine'" in registry_problems(no_call, BACKENDS)


def test_derived_tables_are_the_registry():
    assert set(g.PRIMITIVES) == set(ops.OPS)
    assert set(VJP) == set(REPLAY) == set(BUILD) == set(ops.OPERATIONS)
    assert {"lt", "le", "eq"} == g.BOOL_OPS and {
        "add",
        "mul",
        "eq",
        "bitand",
        "bitor",
        "bitxor",
    } == g.COMMUTATIVE
    for name, p in ops.OPS.items():
        assert g.PRIMITIVES[name] == (p.arity, p.kernel)


POINTS = [-2.5, -0.7, 0.3, 1.0, 1.9]


def _vjp_partials(name: str, values: list[float]) -> list[float]:
    """∂op/∂operand at ``values`` by the registry's reverse-mode rule (via tang's gradient)."""
    names = [f"a{k}" for k in range(len(values))]
    node = g.CONSTRUCTORS[name](*(g.var(n) for n in names))
    grads = gradient(g.Graph(names, [node]))
    return grads.eval(values)[1:]


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in ops.OPERATIONS
        if not ops.OPS[n].boolean and not ops.OPS[n].integer and n != "select"
    ],
)
def test_dual_forward_rules_agree_with_the_registry(name):
    """Dual's hand-written methods (kept for speed) and the registry's reverse-mode rule give
    the same derivative, operand by operand, at several points."""
    arity = ops.OPS[name].arity
    for x in POINTS:
        values = [x, 0.5 * x + 1.3][:arity]
        want = _vjp_partials(name, values)
        for k in range(arity):
            args = [Dual(v, 1.0) if j == k else v for j, v in enumerate(values)]
            got = REPLAY[name](*args)
            assert _same(got.value, ops.OPS[name].kernel(*values))
            assert _same(got.tangent, want[k]), (name, x, k)


@pytest.mark.parametrize("name", list(ops.COMPOSITES))
def test_every_composite_is_its_formula_everywhere(name):
    """A composite (tan, sigmoid, abs, pow, min, max) is one entry of the registry: its graph
    is its formula over primitives; plain numbers get its kernel, which the formula agrees
    with; tang's text, tang.scalar and the Node method build exactly that graph; Dual's
    derivative (its own slope rule where it has one) is reverse mode's on the formula."""
    c = ops.COMPOSITES[name]
    names = [f"a{k}" for k in range(c.arity)]
    operands = [g.var(n) for n in names]
    node = g.COMPOSITE_BUILDERS[name](*operands)
    assert {n.op for n in g.topo_order([node])} <= set(ops.OPS)  # primitives only
    assert parse(f"{name}({', '.join(names)})", names) is node
    assert FUNCTIONS[name][:2] == (c.arity, None if c.variadic else c.arity)
    assert getattr(tang.scalar, name) is GENERIC[name] and GENERIC[name](*operands) is node
    if c.method is not None:  # the Node method (abs(x): Node.__abs__) is the same graph
        assert getattr(operands[0], c.method)() is node
    grads = gradient(g.Graph(names, [node]))
    for x in POINTS:
        values = [x, 0.5 * x + 1.3][: c.arity]
        if name == "pow":
            values[0] = abs(values[0]) + 0.25  # a positive base: a real power
        want, *partials = grads.eval(values)
        assert _same(c.kernel(*values), want) and GENERIC[name](*values) == c.kernel(*values)
        for k in range(c.arity):
            args = [Dual(v, 1.0) if j == k else v for j, v in enumerate(values)]
            got = GENERIC[name](*args)  # min and max may pick the plain number: slope 0
            value, tangent = (got.value, got.tangent) if isinstance(got, Dual) else (got, 0.0)
            assert _same(value, want) and _same(tangent, partials[k]), (name, x, k)


def test_text_printers_spell_comparisons_from_the_registry():
    from tang.expr import text
    from tang.tensor import printing

    assert text._COMPARISONS is ops.INFIX and printing._CMP is ops.INFIX
    assert set(ops.INFIX) == g.BOOL_OPS


def _same(a: float, b: float) -> bool:
    """Equal to rounding, or both nan (sqrt and log2 below 0)."""
    return (a != a and b != b) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def test_integer_ops_agree_with_python_on_ints_nodes_and_numpy():
    """The integer ops are Python's own operators on whole numbers, through the kernel, a
    traced node, tang's generic function and the numpy bridge; none has a derivative."""
    from tang.expr.generic import PRIMITIVES as GENERIC

    np = pytest.importorskip("numpy", reason="the numpy oracle is optional")
    python = {
        "bitand": operator.and_,
        "bitor": operator.or_,
        "bitxor": operator.xor,
        "shl": operator.lshift,
        "shr": operator.rshift,
        "mod": operator.mod,
    }
    assert set(python) == ops.INTEGER_OPS
    x, y = g.var("x"), g.var("y")
    for name, fn in python.items():
        p = ops.OPS[name]
        traced = fn(x, y)
        assert traced.op == name and fn(3, x).op == name  # Node's operators, both sides
        assert p.vjp(None, None, None, x, y) == (None, None)
        for a, b in ((-13, 3), (3329, 5), (255, 7), (0, 4)):
            want = fn(a, b)
            assert p.kernel(float(a), float(b)) == want
            assert g.evaluate([traced], {"x": a, "y": b}) == [want]
            assert GENERIC[name](a, b) == want and GENERIC[name](x, b) is g.make(name, x, b)
            got = p.numpy_rule(np)(np.array([float(a)]), np.array([float(b)]))
            assert got.tolist() == [want]
    assert "mod" in ops.VARIABLE_TIME and "recip" in ops.VARIABLE_TIME
    assert not {"add", "mul", "select", "bitand", "shr", "floor"} & ops.VARIABLE_TIME


def test_select_moves_the_tangent_of_the_branch_taken():
    x = g.var("x")
    for cond, want in ((g.lt(x, 1.0), 2.0), (g.lt(1.0, x), 3.0)):
        d = REPLAY["select"](cond, Dual(5.0, 2.0), Dual(6.0, 3.0))
        at = {"x": 0.0}
        assert g.evaluate([d.tangent], at) == [want]


def test_sympy_and_numpy_spell_every_op():
    sympy = pytest.importorskip("sympy", reason="the sympy bridge is optional")
    np = pytest.importorskip("numpy", reason="the numpy oracle is optional")
    from tang.expr.sympy import from_sympy, to_sympy
    from tang.gpu.numpy_eval import evaluate_numpy

    x, y = g.var("x"), g.var("y")
    for name in ops.OPERATIONS:
        p = ops.OPS[name]
        if p.boolean:
            node = g.select(g.CONSTRUCTORS[name](x, y), x, y)
        elif name == "select":
            node = g.select(g.lt(x, y), x * 2.0, y)
        else:
            node = g.CONSTRUCTORS[name](*[x, y][: p.arity])
        at = {"x": 0.7, "y": 1.1}
        if p.integer:  # whole numbers; sympy has no bits (to_sympy keeps it a function)
            at = {"x": -13.0, "y": 3.0}
            assert str(to_sympy(node)).startswith(name + "(")
        else:
            back = from_sympy(to_sympy(node))
            assert math.isclose(g.evaluate([back], at)[0], g.evaluate([node], at)[0], rel_tol=1e-12)
        arrays = {k: np.array([v]) for k, v in at.items()}
        got = evaluate_numpy([node], arrays)[0][0]
        assert math.isclose(float(got), g.evaluate([node], at)[0], rel_tol=1e-12), name
    assert sympy.cos(sympy.Symbol("x", real=True)) == to_sympy(g.cos(x))


class Traced:
    """A stand-in for a new number type (a tensor, an interval): it records which of the
    methods of tang.expr.generic's protocol tang's math dispatched to."""

    calls: list[str] = []

    def __init__(self, v: float) -> None:
        self.v = v

    def _log(self, what: str, v: float) -> Traced:
        Traced.calls.append(what)
        return Traced(v)

    def cos(self) -> Traced:
        return self._log("cos", math.cos(self.v))

    def atan2(self, x: float) -> Traced:
        return self._log("atan2", math.atan2(self.v, x))

    def ratan2(self, y: float) -> Traced:
        return self._log("ratan2", math.atan2(y, self.v))

    def eq(self, other: float) -> bool:
        Traced.calls.append("eq")
        return self.v == other

    @staticmethod
    def where(cond: g.Node, a: object, b: object) -> str:
        Traced.calls.append("where")
        return "selected"


def test_a_new_number_type_plugs_in_by_its_methods():
    import tang

    Traced.calls = []
    t = Traced(0.5)
    assert tang.cos(t).v == math.cos(0.5)
    assert tang.atan2(t, 2.0).v == math.atan2(0.5, 2.0)
    assert tang.atan2(2.0, t).v == math.atan2(2.0, 0.5)
    assert tang.eq(0.5, t) is True
    assert tang.where(g.lt(g.var("x"), 1.0), 1.0, t) == "selected"
    assert REPLAY["cos"](t).v == math.cos(0.5)  # a graph replays on it the same way
    assert Traced.calls == ["cos", "atan2", "ratan2", "eq", "where", "cos"]
    with pytest.raises(TypeError, match="needs a comparison as its condition, not a Traced"):
        tang.where(t, 1.0, 2.0)
    with pytest.raises(TypeError, match=r"tang\.sqrt does not accept Traced"):
        tang.sqrt(t)


# ---- loop-nest statement spellings (tang.tensor's lowering reads them from the printers) ----

TENSOR_MODULES = ("tang/tensor/lower.py", "tang/tensor/kernels.py")


def spellings_used_by_the_tensor_lowering() -> set[str]:
    """Every attribute the tensor lowering reads from a printer (``….printer.X``, or
    ``st.X`` where ``st`` is a printer) that the base ``Printer`` does not define."""
    root = Path(__file__).resolve().parents[1]
    used: set[str] = set()
    for module in TENSOR_MODULES:
        for node in ast.walk(ast.parse((root / module).read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            if (isinstance(owner, ast.Attribute) and owner.attr == "printer") or (
                isinstance(owner, ast.Name) and owner.id == "st"
            ):
                used.add(node.attr)
    return {name for name in used if not hasattr(Printer, name)}


def loop_nest_problems(printers: Mapping[str, object]) -> list[str]:
    """Printers that spell only part of ``LOOP_NEST`` (or of ``LOOP_NEST_FUNCTION``, or
    that without the whole ``LOOP_NEST``), one sentence each."""
    problems = []
    for backend, printer in printers.items():
        for names in (LOOP_NEST, LOOP_NEST_FUNCTION):
            missing = [n for n in names if not hasattr(printer, n)]
            if 0 < len(missing) < len(names):
                problems.append(f"{backend} lacks the spellings {', '.join(missing)}")
        if any(hasattr(printer, n) for n in LOOP_NEST_FUNCTION) and not all(
            hasattr(printer, n) for n in LOOP_NEST
        ):
            problems.append(f"{backend} frames loop-nest functions without their statements")
    return problems


def test_the_printers_spell_every_statement_the_tensor_lowering_uses():
    used = spellings_used_by_the_tensor_lowering()
    assert {"loop", "shared", "barrier", "nest_function"} <= used  # the scan finds them
    assert used <= set(LOOP_NEST) | set(LOOP_NEST_FUNCTION), "a spelling the lists do not name"
    assert loop_nest_problems(BACKENDS) == []
    tensors = {n for n, p in BACKENDS.items() if all(hasattr(p, s) for s in LOOP_NEST)}
    assert tensors == {"c", "python", "wgsl"}
    functions = {n for n, p in BACKENDS.items() if all(hasattr(p, s) for s in LOOP_NEST_FUNCTION)}
    assert functions == {"c", "python"}  # WGSL: one kernel per comprehension, framed by kernels
    for name in tensors:  # a template spells each field the lowering fills in
        printer = BACKENDS[name]
        assert "{var}" in printer.loop and "{step}" in printer.loop_step  # type: ignore[attr-defined]
        assert "{cond}" in printer.when  # type: ignore[attr-defined]


def test_a_partial_or_missing_loop_nest_table_is_named():
    c = BACKENDS["c"]
    partial = type("Partial", (), {n: getattr(c, n) for n in LOOP_NEST if n != "barrier"})()
    assert loop_nest_problems({"partial": partial}) == ["partial lacks the spellings barrier"]
    framed = type("Framed", (), {n: getattr(c, n) for n in LOOP_NEST_FUNCTION})()
    assert loop_nest_problems({"framed": framed}) == [
        "framed frames loop-nest functions without their statements"
    ]
    lacks = "CUDA printer cannot print tensor graphs: it has no spelling for loop, loop_step"
    with pytest.raises(ValueError, match=lacks):
        BACKENDS["cuda"].require(LOOP_NEST, "tensor graphs")
    BACKENDS["wgsl"].require(LOOP_NEST, "tensor graphs")  # spelt in full: no error
