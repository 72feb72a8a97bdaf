"""The sympy bridge: primitives map both ways, round trips keep values, walks are iterative."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tang.expr import graph as g
from tang.expr.sympy import from_sympy, to_sympy
from tang.expr.text import to_text

sp = pytest.importorskip("sympy", reason="the sympy bridge is optional; sympy is not installed")

x, y = g.var("x"), g.var("y")
X, Y = sp.Symbol("x", real=True), sp.Symbol("y", real=True)


def test_primitives_to_sympy() -> None:
    assert to_sympy(x + y) == X + Y
    assert to_sympy(x * y) == X * Y
    assert to_sympy(-x) == -X
    assert to_sympy(g.recip(x)) == 1 / X
    assert to_sympy(g.sqrt(x)) == sp.sqrt(X)
    assert to_sympy(g.sin(x)) == sp.sin(X)
    assert to_sympy(g.exp2(x)) == 2**X
    assert to_sympy(g.log2(x)) == sp.log(X, 2)
    assert to_sympy(g.atan2(y, x)) == sp.atan2(Y, X)
    assert to_sympy(g.select(g.lt(x, y), x, y)) == sp.Piecewise((X, X < Y), (Y, True))
    assert to_sympy(g.select(g.le(x, y), 1.5, y)) == sp.Piecewise((1.5, X <= Y), (Y, True))
    assert to_sympy(g.select(g.eq(x, y), 2.0, y)) == sp.Piecewise((2, sp.Eq(X, Y)), (Y, True))
    assert to_sympy(g.const(3.0)) == 3 and isinstance(to_sympy(g.const(3.0)), sp.Integer)
    assert to_sympy(g.const(math.inf)) == sp.oo
    assert to_sympy(g.const(-math.inf)) == -sp.oo
    assert to_sympy(g.const(math.nan)) is sp.nan
    assert float(to_sympy(g.const(0.1))) == 0.1  # the double, exactly
    assert to_sympy([x, y]) == [X, Y]
    assert not to_sympy(x, real=False).is_real


@pytest.mark.parametrize(
    "node",
    [
        x + y,
        x * y,
        x - y,
        -x,
        g.recip(x),
        g.sqrt(x),
        g.sin(x),
        g.exp2(x),
        g.log2(x),
        g.atan2(y, x),
        g.select(g.lt(x, y), x, y),
        g.select(g.le(x, y), x, 0.5),
        g.select(g.eq(x, y), y, x),
        g.log2(x + 1) * g.exp2(y),
        x * 0.25 + 3,
    ],
    ids=to_text,
)
def test_round_trip_is_the_same_node(node: g.Node) -> None:
    assert from_sympy(to_sympy(node)) is node


def test_rich_sympy_functions_become_tang_functions() -> None:
    cases = {
        sp.exp(X): x.exp(),
        sp.log(X): x.log(),
        sp.cos(X): x.cos(),
        sp.tan(X): x.tan(),
        sp.tanh(X): x.tanh(),
        sp.Abs(X): g.abs_(x),
        sp.Min(X, Y): None,  # sympy orders Min's arguments its own way: checked by value
        sp.E**X: x.exp(),
        sp.log(X, 2): g.log2(x),
        2**X: g.exp2(x),
        1 / X: g.recip(x),
        sp.sqrt(X): g.sqrt(x),
        X**3: x * x * x,
    }
    for expr, node in cases.items():
        if node is not None:
            assert from_sympy(expr) is node, expr


SYMPY_EXPRESSIONS = [
    sp.exp(X) * sp.cos(Y),
    sp.log(X, 2) + sp.log(Y**2 + 1),
    sp.Piecewise((X, X < 1), (Y, sp.And(X > 2, Y < 3)), (0, True)),
    sp.Piecewise((X, sp.Ne(X, Y)), (Y, True)),
    sp.Piecewise((1, sp.Or(X < 0, Y < 0)), (2, True)),
    sp.Piecewise((X, sp.Not(sp.Eq(X, 2))), (5, True)),
    sp.Piecewise((1, sp.And(X < 2, sp.Or(Y < 0, X < Y))), (2, True)),
    sp.Piecewise((1, sp.Not(sp.And(X < 2, Y > 1.5))), (X, True)),
    sp.Piecewise((X, sp.ITE(X > 1, Y > 2, Y < 0)), (-Y, True)),
    sp.Piecewise((X, X > 0)),  # undefined elsewhere: nan
    sp.Min(X, Y, 1) + sp.Max(X, -Y),
    sp.sqrt(X) + X**-3 + 2**X + sp.Rational(1, 3),
    sp.pi * X + sp.E + sp.sqrt(2),
    sp.tan(X) - sp.tanh(Y) + sp.atan2(Y, X),
    sp.atan(X) + sp.asin(Y / 4) * sp.acos(X / 4) - sp.sinh(X) / sp.cosh(Y),
    sp.erf(2) * X,  # a function tang lacks, of constants only: its value
    sp.log(3) * X / sp.log(2) + sp.log(X + 1) / sp.log(2) * Y,
]
POINTS = [(0.5, 1.5), (2.5, 2.0), (1.0, 3.0), (3.0, 4.0), (2.0, 2.0), (1.5, -1.0), (-0.7, 0.2)]


@pytest.mark.parametrize("expr", SYMPY_EXPRESSIONS, ids=str)
def test_from_sympy_matches_sympy_values(expr) -> None:
    node = from_sympy(expr)
    for a, b in POINTS:
        want = complex(expr.subs({X: a, Y: b}).evalf(30))
        got = g.evaluate([node], {"x": a, "y": b})[0]
        if want.imag or math.isnan(want.real):
            assert math.isnan(got), (expr, a, b, got)
        else:
            assert math.isclose(got, want.real, rel_tol=1e-12, abs_tol=1e-12), (expr, a, b, got)


def test_errors_are_clear() -> None:
    with pytest.raises(ValueError, match=r"erf.*no tang equivalent"):
        from_sympy(sp.erf(X))
    with pytest.raises(ValueError, match="is a condition, not a number"):
        from_sympy(X < 1)
    with pytest.raises(ValueError, match=r"Xor.*no tang equivalent"):
        from_sympy(sp.Piecewise((1, sp.Xor(X < 0, Y < 0)), (2, True)))
    # a number that is not real becomes nan, like tang's own sqrt(-1)
    assert math.isnan(g.evaluate([from_sympy(sp.I * X)], {"x": 1.0})[0])


def test_without_sympy_the_error_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sympy", None)  # import sympy now raises ImportError
    with pytest.raises(ImportError, match="pip install sympy"):
        to_sympy(x)
    with pytest.raises(ImportError, match="pip install sympy"):
        from_sympy("x")


def test_from_sympy_walk_is_iterative() -> None:
    """5,000 levels (built unevaluated, so that sympy itself does not recurse)."""
    expr, node = X, x
    for k in range(5000):
        if k % 2:
            expr, node = sp.sin(expr, evaluate=False), g.sin(node)
        else:
            expr = sp.Add(sp.Mul(expr, sp.Float(1.5), evaluate=False), sp.Rational(1, 4))
            node = node * 1.5 + 0.25
    assert from_sympy(expr) is node


# ------------------------------------------------------------------------------------------
# property: tang → sympy → tang keeps the value wherever every intermediate is a real number

_leaves = st.sampled_from([x, y, g.const(0.5), g.const(2.0), g.const(3.0), g.const(-1.25)])
_UNARY = [g.neg, g.recip, g.sqrt, g.sin, g.exp2, g.log2, g.tanh]
_BINARY = [g.add, g.mul, g.div, g.atan2, g.minimum, g.maximum, lambda a, b: a - b]


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    unary = st.tuples(st.sampled_from(_UNARY), children).map(lambda t: t[0](t[1]))
    binary = st.tuples(st.sampled_from(_BINARY), children, children).map(
        lambda t: g.as_node(t[0](t[1], t[2]))
    )
    select = st.tuples(st.sampled_from([g.lt, g.le]), children, children, children, children)
    return st.one_of(unary, binary, select.map(lambda t: g.select(t[0](t[1], t[2]), t[3], t[4])))


def _all_values(node: g.Node, point: dict[str, float]) -> tuple[float, float]:
    """(the output, the largest |intermediate|), or nan if some intermediate is not finite."""
    order = g.topo_order([node])
    values = g.evaluate(order, point)
    numbers = [v for n, v in zip(order, values, strict=True) if not n.is_bool]
    if not all(math.isfinite(v) for v in numbers):
        return math.nan, math.nan
    return values[-1], max(abs(v) for v in numbers)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.recursive(_leaves, _extend, max_leaves=10))
def test_round_trip_keeps_values(node: g.Node) -> None:
    back = from_sympy(to_sympy(node))
    for a, b in POINTS:
        point = {"x": a, "y": b}
        want, scale = _all_values(node, point)
        if math.isnan(want):
            continue  # outside the reals, sympy's algebra (sqrt(t)**2 = t) may differ
        got = g.evaluate([back], point)[0]
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12 * scale), (to_text(node), point)
