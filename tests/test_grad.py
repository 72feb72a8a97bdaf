"""Reverse mode: generated programs differentiated by tang agree with sympy's symbolic
derivatives and with forward-mode Duals; second derivatives agree three ways."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tang
from tang import Dual
from tang.expr import graph as g
from tests.core_programs import (
    VARIABLES,
    all_finite,
    describe,
    largest_magnitude,
    on_atan2_branch_cut,
    programs,
    run,
    to_sympy,
)

sp = pytest.importorskip("sympy", reason="sympy is the oracle for symbolic derivatives")
SYMBOLS = [sp.Symbol(n, real=True) for n in VARIABLES]

# Coordinates avoid magnitudes below 1e-3 (0 itself is kept).
coordinate = st.one_of(st.just(0.0), st.floats(1e-3, 2.0), st.floats(-2.0, -1e-3))
points = st.tuples(coordinate, coordinate, coordinate)


def oracle(expr, point: tuple[float, ...]) -> float | None:
    """sympy's value of ``expr`` at ``point`` to 30 digits; None where it is not a finite
    real number (outside the domain, or a pole) or sympy cannot tell."""
    if expr is None:
        return None
    subs = {s: sp.Float(v, 30) for s, v in zip(SYMBOLS, point, strict=True)}
    try:
        value = complex(expr.evalf(30, subs=subs))
    except (TypeError, ValueError, ZeroDivisionError, RecursionError):
        return None
    if value.imag != 0 or not math.isfinite(value.real):
        return None
    return value.real


def sympy_diff(expr, *symbols):
    """sympy's derivative, or None where its simplification recurses past the limit."""
    try:
        return sp.diff(expr, *symbols)
    except RecursionError:
        return None


def sympy_program(steps):
    """The program in sympy, or a rejected example where sympy cannot build it (a complex
    constant in a comparison, or a comparison whose truth sympy's assumptions chase past
    Python's recursion limit)."""
    try:
        return to_sympy(steps, SYMBOLS)
    except (TypeError, ZeroDivisionError, RecursionError):
        assume(False)


def agree(a: float, b: float, rtol: float = 1e-9, scale: float = 1.0) -> bool:
    """Equal to ``rtol``, or within 1e-12 of the largest term that could have cancelled
    (``scale``): -sin(0) spelled sin(0 + π) is 1.2e-16, not 0, and 1/(2y) - y·2/(2y)² at
    y = 0.001 is 500 - 500 to within a few ulps of 500."""
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12 * scale)


def finite(values) -> bool:
    return all(math.isfinite(v) and abs(v) < 1e8 for v in values)


@settings(max_examples=330, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(programs(), points)
def test_gradients_match_sympy_and_duals(steps, point) -> None:
    graph = tang.trace(lambda *v: run(steps, v), list(VARIABLES))
    reverse = tang.grad(graph).eval(point)
    # inside the domain: no nan or inf anywhere (sympy would cancel a 0/0 that tang computes)
    assume(finite(reverse) and all_finite(graph, point))
    assume(not on_atan2_branch_cut(graph, point))  # sympy has no signed zero
    (forward,) = tang.jacobian(lambda *v: run(steps, v))(*point)  # one pass, three tangents
    expr = sympy_program(steps)
    value = oracle(expr, point)
    assume(value is not None)
    wanted = [oracle(sympy_diff(expr, s), point) for s in SYMBOLS]
    assume(all(w is not None for w in wanted))
    text = describe(steps)
    scale = largest_magnitude(tang.grad(graph), point)
    assert agree(reverse[0], value, scale=scale), (text, point, reverse[0], value)
    for got, dual, want, name in zip(reverse[1:], forward, wanted, VARIABLES, strict=True):
        assert agree(got, want, scale=scale), (text, point, name, got, want)
        assert agree(dual, got, scale=scale), (text, point, name, dual, got)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(programs(max_steps=5), points)
def test_second_derivatives_nested_duals_and_forward_over_reverse(steps, point) -> None:
    f = lambda *v: run(steps, v)  # noqa: E731
    graph = tang.trace(f, list(VARIABLES))
    over_reverse = tang.hessian(graph)(*point)  # forward over the reverse-mode graph
    assume(all(finite(row) for row in over_reverse) and all_finite(graph, point))
    over_forward = tang.jacobian(lambda *v: tang.jacobian(f)(*v)[0])(*point)  # nested Duals
    expr = sympy_program(steps)
    text = describe(steps)
    partials = tang.grad(graph).outputs[1:]  # the terms of every second derivative:
    scale = max(largest_magnitude(tang.grad(tang.Graph(VARIABLES, [p])), point) for p in partials)

    def near(a: float, b: float) -> bool:
        return agree(a, b, 1e-8, scale)

    for i, si in enumerate(SYMBOLS):
        for j, sj in enumerate(SYMBOLS):
            a, b = over_reverse[i][j], over_forward[i][j]
            assert near(a, b), (text, point, i, j, a, b)
            if j >= i and i == 0:  # sympy for the first row only: it is the slow part
                want = oracle(sympy_diff(expr, si, sj), point)
                if want is not None:
                    assert near(a, want), (text, point, i, j, a, want)
    v = (0.5, -1.0, 2.0)
    hv = tang.hvp(graph, point, v)
    for row, got in zip(over_reverse, hv, strict=True):
        want = sum(h * w for h, w in zip(row, v, strict=True))
        assert near(got, want), (text, point, got, want)


# ---- the API ------------------------------------------------------------------------


def test_grad_of_a_graph_is_a_graph_of_value_and_partials() -> None:
    graph = tang.trace(lambda x, y: x * y + tang.sin(x))
    gg = tang.grad(graph)
    assert isinstance(gg, tang.Graph) and gg.inputs == ("x", "y") and len(gg.outputs) == 3
    assert gg.eval([2.0, 3.0]) == pytest.approx([6.0 + math.sin(2.0), 3.0 + math.cos(2.0), 2.0])
    only_y = tang.grad(graph, wrt=["y"])
    assert only_y.eval({"x": 2.0, "y": 3.0})[1:] == [2.0]
    assert tang.grad(graph, wrt=["w"]).eval([2.0, 3.0])[1:] == [0.0]  # absent: zero


def test_grad_of_a_node_uses_its_variables() -> None:
    x, y = g.var("x"), g.var("y")
    gg = tang.grad(x * x * y)
    assert gg.inputs == ("x", "y") and gg.eval([3.0, 2.0]) == [18.0, 12.0, 9.0]


def test_grad_function_form_like_jax() -> None:
    f = lambda x, y: x * x * y  # noqa: E731
    assert tang.grad(f)(3.0, 2.0) == (12.0, 9.0)
    assert tang.grad(lambda x: x**3)(2.0) == 12.0
    assert tang.value_and_grad(f)(3.0, 2.0) == (18.0, (12.0, 9.0))
    assert tang.value_and_grad(tang.sin)(0.0) == (0.0, 1.0)


def test_grad_composes_with_duals_and_with_itself() -> None:
    f = lambda x: x**4  # noqa: E731
    d = tang.grad(f)(Dual(2.0, 1.0))  # forward over reverse
    assert d.value == 32.0 and d.tangent == 48.0
    assert tang.grad(tang.grad(f))(2.0) == 48.0  # reverse over reverse, by tracing
    assert tang.derivative(tang.grad(f))(2.0) == 48.0
    assert tang.grad(lambda x: tang.derivative(f)(x))(2.0) == 48.0  # reverse over forward


def test_closed_over_nodes_are_not_arguments() -> None:
    t = g.var("x")  # a node named like the argument, closed over
    graph = tang.trace(lambda x: tang.grad(lambda u: u * t)(x), ["x"])
    assert graph.eval([5.0]) == [5.0]  # d/du (u·t) = t, not 2u


def test_grad_errors_are_clear() -> None:
    two = tang.trace(lambda x: [x, x * x])
    with pytest.raises(ValueError, match="one output"):
        tang.grad(two)
    with pytest.raises(TypeError, match="comparison"):
        tang.grad(g.lt(g.var("x"), 1.0))
    with pytest.raises(TypeError, match="truth value"):
        tang.grad(lambda x: x if x > 0 else -x)(1.0)  # Python branching on a traced value
    with pytest.raises(TypeError, match="wrt"):
        tang.grad(lambda x: x, wrt=["x"])


def test_gradient_stays_lean() -> None:
    x, y = g.var("x"), g.var("y")
    gg = tang.grad(x * y)
    assert gg.outputs[1] is y and gg.outputs[2] is x  # no ·1 junk
    gg = tang.grad(g.neg(g.neg(x)))
    assert gg.outputs[1].op == "const" or gg.outputs[1] is g.const(1.0)


def test_select_routes_the_adjoint() -> None:
    f = tang.trace(lambda x: tang.where(x < 0, -2 * x, x * x))
    gg = tang.grad(f)
    assert gg.eval([-1.0])[1] == -2.0 and gg.eval([3.0])[1] == 6.0


def test_atan2_and_select_partials() -> None:
    gg = tang.grad(tang.trace(lambda y, x: tang.atan2(y, x)))
    _, dy, dx = gg.eval([1.0, 2.0])
    assert agree(dy, 2.0 / 5.0) and agree(dx, -1.0 / 5.0)


def test_hvp_and_hessian_on_functions() -> None:
    f = lambda x, y: x * x * y + tang.exp(y)  # noqa: E731
    assert tang.hessian(f)(1.0, 0.0) == [[0.0, 2.0], [2.0, 1.0]]
    assert tang.hvp(f, [1.0, 0.0], [1.0, 1.0]) == [2.0, 3.0]
    with pytest.raises(ValueError):
        tang.hvp(f, [1.0], [1.0, 2.0])
