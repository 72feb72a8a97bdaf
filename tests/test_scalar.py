"""tang's math functions: IEEE floats, graph nodes and Duals from one call."""

from __future__ import annotations

import math

import pytest

import tang
from tang import Dual
from tang.expr import graph as g

UNARY = {
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "tanh": math.tanh,
    "sigmoid": lambda a: 1 / (1 + math.exp(-a)),
    "exp2": lambda a: 2.0**a,
    "log2": math.log2,
    "recip": lambda a: 1 / a,
    "abs": abs,
}
SPECIAL = [0.0, -0.0, 1e-320, -1.0, 1e300, -1e300, 800.0, -800.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("name", UNARY)
def test_floats_match_math_where_math_is_defined(name: str) -> None:
    fn = getattr(tang, name)
    for a in (0.3, 1.7, 2.5, 10.0):
        assert math.isclose(fn(a), UNARY[name](a), rel_tol=1e-15)
    assert fn(2) == fn(2.0)  # ints are numbers too


@pytest.mark.parametrize("name", UNARY)
def test_floats_never_raise(name: str) -> None:
    fn = getattr(tang, name)
    for a in SPECIAL:
        assert isinstance(fn(a), float)


def test_ieee_edge_values() -> None:
    assert tang.log(0.0) == -math.inf and math.isnan(tang.log(-1.0))
    assert math.isnan(tang.sqrt(-1.0)) and math.isnan(tang.sin(math.inf))
    assert tang.exp(1000.0) == math.inf and tang.exp(-1000.0) == 0.0
    assert tang.sigmoid(-1000.0) == 0.0 and tang.sigmoid(1000.0) == 1.0
    assert tang.recip(-0.0) == -math.inf
    assert tang.scalar.div(1.0, 0.0) == math.inf and math.isnan(tang.scalar.div(0.0, 0.0))


def test_pow_follows_c99_on_floats() -> None:
    assert tang.pow(2.0, 10.0) == 1024.0 and tang.pow(2, 3) == 8.0
    assert math.isnan(tang.pow(-8.0, 1 / 3))  # never a complex number
    assert tang.pow(-2.0, 3.0) == -8.0
    assert tang.pow(0.0, -1.0) == math.inf and tang.pow(-0.0, -3.0) == -math.inf
    assert tang.pow(-0.0, -2.0) == math.inf
    assert tang.pow(10.0, 400.0) == math.inf and tang.pow(-10.0, 401.0) == -math.inf
    assert tang.pow(0.0, 0.0) == 1.0


def test_atan2_on_every_pairing() -> None:
    y, x = g.var("y"), g.var("x")
    assert tang.atan2(1.0, -1.0) == math.atan2(1.0, -1.0)
    assert tang.atan2(y, x).op == "atan2" and tang.atan2(1.0, x).op == "atan2"
    assert tang.atan2(y, 2.0).op == "atan2"
    d = tang.atan2(Dual(1.0, 1.0), 2.0)
    assert isinstance(d, Dual) and d.tangent == pytest.approx(2.0 / 5.0)
    d = tang.atan2(1.0, Dual(2.0, 1.0))
    assert d.tangent == pytest.approx(-1.0 / 5.0)


def test_nodes_give_nodes_with_the_same_values() -> None:
    x = g.var("x")
    for name, fn in UNARY.items():
        node = getattr(tang, name)(x)
        assert isinstance(node, g.Node), name
        assert math.isclose(g.evaluate([node], {"x": 0.7})[0], fn(0.7), rel_tol=1e-13), name


def test_comparisons_and_where() -> None:
    x = g.var("x")
    assert tang.lt(1, 2) is True and tang.gt(1, 2) is False
    assert tang.le(2, 2) and tang.ge(2, 2) and tang.eq(2.0, 2)
    assert tang.lt(x, 1).op == "lt" and tang.gt(x, 1).op == "lt" and tang.eq(x, 1).op == "eq"
    assert tang.where(True, 1.0, 2.0) == 1.0 and tang.where(False, 1.0, 2.0) == 2.0
    sel = tang.where(tang.lt(x, 0), -x, x)
    assert sel.op == "select" and g.evaluate([sel], {"x": -3.0}) == [3.0]
    with pytest.raises(TypeError, match="condition"):
        tang.where(Dual(1.0, 1.0), 1.0, 2.0)


def test_min_max_like_builtins_including_nan() -> None:
    for a, b in [(1.0, 2.0), (2.0, 1.0), (1.0, 1.0), (-0.0, 0.0)]:
        assert tang.min(a, b) is min(a, b) and tang.max(a, b) is max(a, b)
    assert math.isnan(tang.min(math.nan, 1.0)) and tang.min(1.0, math.nan) == 1.0
    assert tang.min(3, 4) == 3 and isinstance(tang.min(3, 4), int)
    x = g.var("x")
    m = tang.max(x, 0.0)
    assert [g.evaluate([m], {"x": v})[0] for v in (-1.0, 2.0)] == [0.0, 2.0]


def test_abs_on_every_type() -> None:
    assert tang.abs(-3) == 3 and tang.abs(-2.5) == 2.5
    assert g.evaluate([tang.abs(g.var("x"))], {"x": -2.0}) == [2.0]
    assert tang.abs(Dual(-2.0, 1.0)).tangent == -1.0
    assert tang.abs(Dual(0.0, 1.0)).tangent == 1.0  # +1 at zero, like the graph


def test_unknown_types_are_refused_clearly() -> None:
    with pytest.raises(TypeError, match=r"tang\.sin does not accept str"):
        tang.sin("x")
    with pytest.raises(TypeError):
        tang.atan2("y", 1.0)


def test_one_function_three_number_types() -> None:
    def f(x, y):
        return tang.sqrt(x * x + y * y) * tang.exp(-x) + tang.atan2(y, x) - x**2 / y

    plain = f(0.5, 2.0)
    traced = tang.trace(f).eval([0.5, 2.0])[0]
    dual = f(Dual(0.5, 1.0), 2.0)
    assert math.isclose(plain, traced, rel_tol=1e-14) and dual.value == plain
