"""Dual numbers and the forward-mode transforms: rules, mixing, nesting, several tangents."""

from __future__ import annotations

import math

import pytest

import tang
from tang import Dual, Tangents
from tang.dual import level_class


def close(a: float, b: float, tol: float = 1e-12) -> bool:
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def finite_difference(f, x: float, h: float = 1e-6) -> float:
    return (f(x + h) - f(x - h)) / (2 * h)


# one case per operation: (name, f written over any number, points)
UNARY = [
    ("neg", lambda x: -x, [0.7, -1.3]),
    ("add", lambda x: x + 2.5 + x, [0.7]),
    ("sub", lambda x: 3 - x - (x - 1), [0.7]),
    ("mul", lambda x: x * x * 3, [0.7, -2.0]),
    ("div", lambda x: (x + 1) / (x * x + 2) + 1 / x - x / 4, [0.7, -1.5]),
    ("pow int", lambda x: x**3 + x**-2, [0.7, -1.5]),
    ("pow float", lambda x: x**2.5, [0.7, 3.0]),
    ("rpow", lambda x: 2**x + 3.5**x, [0.7, -1.0]),
    ("pow dual", lambda x: x**x, [0.7, 2.0]),
    ("sin", tang.sin, [0.7, -4.0]),
    ("cos", tang.cos, [0.7, 2.0]),
    ("tan", tang.tan, [0.7, -1.2]),
    ("exp", tang.exp, [0.7, -3.0]),
    ("exp2", tang.exp2, [0.7]),
    ("log", tang.log, [0.7, 5.0]),
    ("log2", tang.log2, [0.7, 5.0]),
    ("sqrt", tang.sqrt, [0.7, 9.0]),
    ("recip", tang.recip, [0.7, -2.0]),
    ("tanh", tang.tanh, [0.7, -2.0]),
    ("sigmoid", tang.sigmoid, [0.7, -2.0]),
    ("abs", tang.abs, [0.7, -2.0]),
    ("abs builtin", abs, [0.7, -2.0]),
    ("atan2 y", lambda x: tang.atan2(x, 0.5), [0.7, -2.0]),
    ("atan2 x", lambda x: tang.atan2(0.5, x), [0.7, -2.0]),
    ("atan2 both", lambda x: tang.atan2(x * x, x), [0.7, -2.0]),
    ("min", lambda x: tang.min(x, 1.0) + tang.min(0.0, x), [0.7, -2.0, 3.0]),
    ("max", lambda x: tang.max(x, 1.0) * tang.max(x * x, x), [0.7, -2.0, 3.0]),
    ("where", lambda x: tang.where(x < 1, x * x, tang.sin(x)), [0.7, 3.0]),
    ("gt ge le", lambda x: tang.where(tang.gt(x, 0) and x >= -1 and x <= 9, x, -x), [0.7]),
]


@pytest.mark.parametrize("name,f,points", UNARY, ids=[u[0] for u in UNARY])
def test_each_rule_matches_finite_differences(name, f, points) -> None:
    for x in points:
        d = f(Dual(x, 1.0))
        value, slope = (d.value, d.tangent) if isinstance(d, Dual) else (d, 0.0)  # a constant
        assert close(value, f(x)), name
        assert math.isclose(slope, finite_difference(f, x), rel_tol=1e-6, abs_tol=1e-8), name


def test_value_is_the_float_result() -> None:
    f = lambda x: tang.sin(x) * tang.exp(x) / (1 + x * x)  # noqa: E731
    assert f(Dual(0.3, 1.0)).value == f(0.3)


def test_floats_and_ints_mix_on_both_sides() -> None:
    x = Dual(2.0, 1.0)
    for r in (x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, x**2, 2**x):
        assert isinstance(r, Dual)
    assert (3 - x).tangent == -1.0 and (4 / x).tangent == -1.0
    assert sum([x, x, 1.0]).value == 5.0  # sum starts from the int 0


def test_mixing_with_an_unknown_type_raises_type_error() -> None:
    with pytest.raises(TypeError):
        Dual(1.0, 1.0) + "a"
    with pytest.raises(TypeError):
        tang.sin("a")


def test_comparisons_look_at_values_and_truth_is_refused() -> None:
    x, y = Dual(1.0, 5.0), Dual(2.0, -5.0)
    assert x < y and y > x and x <= 1.0 and y <= 2.0 and x > 0.5 and tang.ge(2.0, y)
    assert tang.eq(x, 1.0) and tang.eq(x, Dual(1.0, 3.0)) and not tang.eq(x, y)
    with pytest.raises(TypeError, match="truth value"):
        bool(x)


def test_ieee_results_never_raise() -> None:
    z = Dual(0.0, 1.0)
    assert (1.0 / z).value == math.inf
    assert tang.log(z).value == -math.inf
    assert math.isnan(tang.sqrt(Dual(-1.0, 1.0)).value)
    assert (Dual(1e308, 1.0) * 10).value == math.inf


def test_several_tangents_in_one_pass() -> None:
    x = Dual(2.0, (1.0, 0.0, 3.0))
    y = tang.sin(x) * x
    assert isinstance(y.tangent, Tangents) and len(y.tangent) == 3
    slope = math.cos(2.0) * 2.0 + math.sin(2.0)
    assert all(close(a, b) for a, b in zip(y.tangent, (slope, 0.0, 3 * slope), strict=True))
    with pytest.raises(ValueError, match="cannot add"):
        Dual(1.0, (1.0, 0.0)) + Dual(1.0, (1.0, 0.0, 0.0))


def test_where_on_traced_condition_selects_value_and_tangents() -> None:
    x = tang.var("x")
    d = tang.where(x < 1, Dual(2.0, (1.0, 0.0)), 5.0)
    assert isinstance(d, Dual) and d.value.op == "select"
    assert [t.op for t in d.tangent] == ["select", "const"]  # select(c, 0, 0) is 0
    assert tang.Graph(["x"], [d.value, *d.tangent]).eval([0.0]) == [2.0, 1.0, 0.0]
    assert tang.Graph(["x"], [d.value, *d.tangent]).eval([3.0]) == [5.0, 0.0, 0.0]


def test_nested_duals_give_second_derivatives() -> None:
    x = Dual(Dual(0.5, 1.0), 1.0)
    y = tang.sin(x) * x
    assert x.level == 1 and y.level == 1 and y.value.level == 0
    assert close(y.tangent.tangent, 2 * math.cos(0.5) - 0.5 * math.sin(0.5))


def test_levels_are_classes_and_keep_their_order() -> None:
    assert type(Dual(1.0, 0.0)) is level_class(0) and level_class(3).level == 3
    assert issubclass(level_class(3), Dual) and level_class(3) is level_class(3)
    assert Dual(Dual(Dual(1.0, 1.0), 1.0), 1.0).level == 2


def test_derivative_of_any_order() -> None:
    f = lambda x: x**5  # noqa: E731
    assert tang.derivative(f)(2.0) == 80.0
    assert tang.derivative(f, order=2)(2.0) == 160.0
    assert tang.derivative(f, order=3)(2.0) == 240.0
    assert tang.derivative(f, order=5)(2.0) == 120.0
    assert tang.derivative(f, order=6)(2.0) == 0.0
    assert tang.derivative(f, order=0)(2.0) == 32.0
    assert close(tang.derivative(tang.sin, order=4)(0.3), math.sin(0.3))
    with pytest.raises(ValueError):
        tang.derivative(f, order=-1)


def test_constant_functions_have_zero_slope() -> None:
    assert tang.derivative(lambda x: 3.0)(1.0) == 0.0
    assert tang.jacobian(lambda x, y: [1.0, x])(1.0, 2.0) == [[0.0, 0.0], [1.0, 0.0]]


def test_no_perturbation_confusion() -> None:
    # d/dx [x · d/dy (x + y)] = d/dx [x] = 1  (a classic trap for untagged duals)
    d = tang.derivative
    assert d(lambda x: x * d(lambda y: x + y)(1.0))(2.0) == 1.0
    # d/dx [x · d/dy (x·y)] = d/dx [x²] = 2x
    assert d(lambda x: x * d(lambda y: x * y)(2.0))(3.0) == 6.0
    # a user-made Dual passed through a transform stays outside it
    out = d(lambda x: x * x)(Dual(3.0, 1.0))
    assert out.value == 6.0 and out.tangent == 2.0


def test_jvp_scalar_sequence_and_several_directions() -> None:
    f = lambda x, y: [x * y, tang.sin(x) + y]  # noqa: E731
    value, slope = tang.jvp(f, (2.0, 3.0), (1.0, 0.0))
    assert value == [6.0, math.sin(2.0) + 3.0]
    assert slope == [3.0, math.cos(2.0)]
    v, t = tang.jvp(tang.exp, 0.0, 1.0)
    assert v == 1.0 and t == 1.0
    _, slope = tang.jvp(f, (2.0, 3.0), ((1.0, 0.0), (0.0, 1.0)))
    assert list(slope[0]) == [3.0, 2.0]
    with pytest.raises(ValueError):
        tang.jvp(f, (2.0, 3.0), (1.0,))


def test_jacobian_in_one_pass() -> None:
    def f(x, y, z):
        return [x * y * z, tang.sin(x) + z, y]

    jac = tang.jacobian(f)(1.0, 2.0, 3.0)
    assert jac == [[6.0, 3.0, 2.0], [math.cos(1.0), 0.0, 1.0], [0.0, 1.0, 0.0]]
    assert tang.jacobian(lambda x: x * x)(3.0) == [[6.0]]


def test_forward_mode_over_traced_values() -> None:
    x = tang.var("x")
    d = tang.derivative(lambda t: tang.sin(t) * t)(x)  # a graph for the derivative
    assert isinstance(d, tang.Node)
    assert close(tang.Graph(["x"], [d]).eval([0.4])[0], math.cos(0.4) * 0.4 + math.sin(0.4))
    # a traced function that calls derivative on a closed-over node
    g = tang.trace(lambda a, b: tang.derivative(lambda t: a * t * t)(b), ["a", "b"])
    assert g.eval([3.0, 2.0]) == [12.0]


def test_repr() -> None:
    assert repr(Dual(1.0, 2.0)) == "Dual(1.0, 2.0)"
    assert "level=1" in repr(Dual(Dual(1.0, 1.0), 0.0))


def test_plain_level_is_the_level_perturbation_picks_for_plain_numbers():
    from tang import dual

    with dual.perturbation(1.0) as outer:
        assert dual.plain_level() is dual.level_class(outer.level + 1)  # above the running one
    with dual.perturbation(1.0) as same:
        assert same is outer
    assert dual.plain_level() is outer
