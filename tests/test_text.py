"""The text printer: exact constants, minimal parentheses, and parse(to_text(n)) is n."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tang
from tang.expr import graph as g
from tang.expr.parse import UNLIMITED, parse, parse_graph
from tang.expr.text import literal, to_text

# Variables made here, in this order, so that canonical (serial) order is known below.
A, B, C = g.var("ta"), g.var("tb"), g.var("tc")
NAMES = ("ta", "tb", "tc")


def back(node: g.Node) -> g.Node:
    return parse(to_text(node), NAMES, limits=UNLIMITED)


# ------------------------------------------------------------------------------------------
# exact spellings


@pytest.mark.parametrize(
    ("node", "text"),
    [
        (A + B, "ta + tb"),
        (A - B, "ta - tb"),
        (A - (B - C), "ta - (tb - tc)"),
        ((A + B) * C, "tc * (ta + tb)"),  # canonical order: children by age
        (A * B + C, "tc + ta * tb"),
        (A * B - C * C, "ta * tb - tc * tc"),
        (A / B, "ta / tb"),
        (A / (B * C), "ta / (tb * tc)"),
        (-(A * B), "-(ta * tb)"),
        (-A * (B + C), "-ta * (tb + tc)"),
        (A * -B, "ta * -tb"),
        (g.neg(g.neg(A)), "--ta"),
        (A - -B, "ta - -tb"),
        (A - 2.5, "ta - 2.5"),
        (A * -2.0, "ta * -2"),
        (g.recip(A), "recip(ta)"),
        (g.exp2(A) + g.log2(B), "exp2(ta) + log2(tb)"),
        (g.sqrt(A - B), "sqrt(ta - tb)"),
        (g.atan2(A, B), "atan2(ta, tb)"),
        (g.select(g.lt(A, B), A, B), "where(ta < tb, ta, tb)"),
        (g.select(g.le(A + B, C), A, B), "where(ta + tb <= tc, ta, tb)"),
        (g.select(g.eq(A, B), 0.1, B), "where(ta == tb, 0.1, tb)"),
    ],
)
def test_spelling(node: g.Node, text: str) -> None:
    assert to_text(node) == text
    assert back(node) is node


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (3.0, "3"),
        (0.1, "0.1"),
        (1e-05, "1e-05"),
        (1e16, "1e+16"),
        (123456789.0, "123456789"),
        (2.0**-1074, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (math.inf, "inf"),
        (math.nan, "nan"),
    ],
)
def test_literals_are_exact(value: float, text: str) -> None:
    assert literal(value) == text
    assert float(parse(text)) == value or (math.isnan(value) and math.isnan(float(parse(text))))


@pytest.mark.parametrize("value", [0.0, -0.0, 1.5, -1.5, math.pi, -math.e, 1e-300, -math.inf])
def test_constants_round_trip(value: float) -> None:
    node = g.const(value)
    assert back(node) is node


def test_graph_prints_as_a_definition() -> None:
    graph = tang.trace(lambda u, v: u * v + 1, ["u", "v"])
    text = to_text(graph)
    assert text.startswith("f(u, v) = ")
    assert parse_graph(text).outputs[0] is graph.outputs[0]
    assert parse_graph(text).inputs == ("u", "v")
    assert to_text(graph, name="energy").startswith("energy(u, v) = ")


def test_refuses_a_text_that_sharing_would_blow_up() -> None:
    node = A
    for _ in range(40):  # a DAG of 40 nodes whose tree has 2**40 leaves
        node = node * node
    with pytest.raises(ValueError, match="repeat shared subexpressions"):
        to_text(node)
    small = A * A * A
    assert back(small) is small


@pytest.mark.slow  # seconds of CPU: out of the fast lane, in the full suite
def test_two_hundred_thousand_node_chain() -> None:
    """Printing is iterative: a 200,000-node chain prints without recursion."""
    node = A
    for k in range(200_000):
        node = g.sin(node) if k % 2 else -node
    text = to_text(node)
    assert text.startswith("sin(-sin(-sin(")
    assert text.count("sin(") == 100_000


# ------------------------------------------------------------------------------------------
# property: every number-valued graph over the primitives reads back as the same node

_constants = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0]),
)
_leaves = st.one_of(st.sampled_from([A, B, C]), _constants.map(g.const))

_UNARY = [g.neg, g.recip, g.sqrt, g.sin, g.exp2, g.log2, g.tanh, g.abs_]
_METHODS = ["cos", "tan", "exp", "log", "tanh", "sigmoid"]
_BINARY = [g.add, g.mul, g.div, g.pow, g.atan2, g.minimum, g.maximum, lambda a, b: a - b]
_COMPARE = [g.lt, g.le, g.eq]


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    unary = st.tuples(st.sampled_from(_UNARY), children).map(lambda t: t[0](t[1]))
    method = st.tuples(st.sampled_from(_METHODS), children).map(
        lambda t: getattr(g.as_node(t[1]), t[0])()
    )
    binary = st.tuples(st.sampled_from(_BINARY), children, children).map(
        lambda t: g.as_node(t[0](t[1], t[2]))
    )
    select = st.tuples(st.sampled_from(_COMPARE), children, children, children, children).map(
        lambda t: g.select(t[0](t[1], t[2]), t[3], t[4])
    )
    return st.one_of(unary, method, binary, select)


graphs = st.recursive(_leaves, _extend, max_leaves=24)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs)
def test_parse_reads_back_printed_graphs(node: g.Node) -> None:
    text = to_text(node)
    assert parse(text, NAMES, limits=UNLIMITED) is node, text


@settings(max_examples=100, deadline=None)
@given(graphs, st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3))
def test_printed_text_evaluates_the_same(node: g.Node, a: float, b: float, c: float) -> None:
    point = dict(zip(NAMES, (a, b, c), strict=True))
    want = g.evaluate([node], point)[0]
    got = g.evaluate([back(node)], point)[0]
    assert got == want or (math.isnan(got) and math.isnan(want))
