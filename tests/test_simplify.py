"""The simplifier: each rule does its job, the DAG never grows, and values never change
(exact rules at every input, finite rules wherever every intermediate value is finite)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tang
from tang.expr import graph as g
from tang.expr.simplify import _RULES, EXACT, FINITE, simplify
from tests.core_programs import VARIABLES, all_finite, describe, programs, run

x, y, z = g.var("x"), g.var("y"), g.var("z")


def operations(item) -> int:
    graph = item if isinstance(item, tang.Graph) else tang.Graph([], [item])
    return sum(1 for n in graph.nodes() if n.args)


def same_bits(a, b) -> bool:
    """Equal as IEEE doubles: nan equals nan, -0.0 differs from 0.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if math.isnan(a) and math.isnan(b):
        return True
    return struct.pack("<d", a) == struct.pack("<d", b)


@pytest.mark.parametrize(
    "before,after",
    [
        (x * 1.0, x),
        (x + -0.0, x),
        (x * -1.0, -x),
        (g.neg(g.neg(x)), x),
        (x + x, x * 2.0),
        (-(3.0 * x), x * -3.0),
        ((-x) * y, -(x * y)),
        ((-x) * (-y), x * y),
        (g.recip(-x), -g.recip(x)),
    ],
)
def test_exact_rules(before, after) -> None:
    assert simplify(before, assume_finite=False) is after
    assert simplify(before) is after


@pytest.mark.parametrize(
    "before,after",
    [
        (x + 0.0, x),
        (x * 0.0, g.const(0.0)),
        (x - x, g.const(0.0)),
        (x / x, g.const(1.0)),
        (g.recip(g.recip(x)), x),
        (g.log2(g.exp2(x)), x),
        (g.exp2(g.log2(x)), x),
        (g.sqrt(x) * g.sqrt(x), x),
        (g.exp2(3.0 * g.log2(x)), x * (x * x)),  # an integer power as products
        (2.0 * (3.0 * x), x * 6.0),
        (1.0 + (2.0 + x), x + 3.0),
        (3.0 * x + x, x * 4.0),
        (2.0 * x + 3.0 * x, x * 5.0),
        (x * y + x * z, x * (y + z)),
        (x + (y + x), x * 2.0 + y),
        (-x + -y, -(x + y)),
        (-(x - y), y - x),
        (g.exp2(x) * g.exp2(y), g.exp2(x + y)),
        (g.recip(x) * g.recip(y), g.recip(x * y)),
        (g.select(g.eq(x, x), y, z), y),
        (g.select(g.le(x, x), y, z), y),
    ],
)
def test_finite_rules(before, after) -> None:
    assert simplify(before) is after
    if before is not after:
        assert simplify(before, assume_finite=False) is not after


def test_lt_of_a_node_with_itself_is_false_exactly() -> None:
    assert simplify(g.select(g.lt(x, x), y, z), assume_finite=False) is z


def test_the_ieee_caveat_of_the_finite_rules() -> None:
    # x·0 → 0 and x - x → 0 are wrong for x = ±inf or nan; the exact mode keeps them
    for e in (x * 0.0, x - x):
        assert math.isnan(g.evaluate([e], {"x": math.inf})[0])
        assert simplify(e).op == "const"
        kept = simplify(e, assume_finite=False)
        assert math.isnan(g.evaluate([kept], {"x": math.inf})[0])


def test_a_rule_never_grows_a_shared_dag() -> None:
    # recip(x)·recip(y) → recip(x·y) would add nodes while recip(x) is used elsewhere
    r = g.recip(x)
    graph = tang.Graph(["x", "y"], [r * g.recip(y), r])
    assert operations(simplify(graph)) <= operations(graph)
    assert simplify(tang.Graph(["x", "y"], [r * g.recip(y)])).outputs[0] is g.recip(x * y)


def test_simplify_cleans_a_messy_expression_and_drops_dead_code() -> None:
    messy = (x * 0.0 + y * 1.0 - (x - x)) * (x / x) + tang.exp(tang.log(y))
    assert simplify(messy) is y * 2.0
    graph = tang.Graph(["x", "y"], [messy])
    small = simplify(graph)
    assert small.inputs == graph.inputs and len(small) < len(graph) and len(small) == 3


def test_fixpoint_and_returned_kind() -> None:
    graph = tang.grad(tang.trace(lambda x, y: tang.sin(x * y) + x**3 / y))
    once = simplify(graph)
    assert isinstance(once, tang.Graph) and isinstance(simplify(x + 0.0), g.Node)
    twice = simplify(once)
    assert all(a is b for a, b in zip(once.outputs, twice.outputs, strict=True))


def test_rule_tables_are_tables() -> None:
    for pattern, rewrite in EXACT + FINITE:
        assert isinstance(pattern, tuple) and pattern[0] in g.PRIMITIVES and callable(rewrite)


def test_the_generated_matchers_cover_every_rule_in_both_operand_orders() -> None:
    for rules, table in ((EXACT + FINITE, _RULES[True]), (EXACT, _RULES[False])):
        for pattern, _ in rules:
            assert f"# {pattern!r}" in table.source, pattern
        assert set(table.matchers) == {p[0] for p, _ in rules}
    # x·(-y) and (-x)·y both pull the sign out, whichever operand the graph put first
    assert simplify(y * g.neg(x), assume_finite=False) is g.neg(x * y)
    assert simplify(g.neg(y) * x, assume_finite=False) is g.neg(x * y)


coordinate = st.one_of(st.just(0.0), st.floats(1e-3, 3.0), st.floats(-3.0, -1e-3))
special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-310, 1e308, -1e308, math.inf, -math.inf])
anything = st.one_of(coordinate, special, st.just(math.nan))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(programs(), st.tuples(coordinate, coordinate, coordinate))
def test_finite_simplification_never_changes_a_value(steps, point) -> None:
    graph = tang.grad(tang.trace(lambda *v: run(steps, v), list(VARIABLES)))
    assume(all_finite(graph, point))
    small = simplify(graph)
    assert small.nodes() == g.topo_order(small.outputs)  # the order simplify hands over
    assert operations(small) <= operations(graph)
    for a, b in zip(graph.eval(point), small.eval(point), strict=True):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (describe(steps), point, a, b)


@settings(max_examples=200, deadline=None)
@given(programs(), st.tuples(anything, anything, anything))
def test_exact_simplification_never_changes_a_bit(steps, point) -> None:
    graph = tang.grad(tang.trace(lambda *v: run(steps, v), list(VARIABLES)))
    small = simplify(graph, assume_finite=False)
    assert small.nodes() == g.topo_order(small.outputs)  # the order simplify hands over
    assert operations(small) <= operations(graph)
    for a, b in zip(graph.eval(point), small.eval(point), strict=True):
        assert same_bits(a, b), (describe(steps), point, a, b)
