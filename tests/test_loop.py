"""tang.fori_loop: one function over floats, Duals and traced graphs. Traced, the body
becomes one loop node (the graph stays O(body) for any number of steps) whose values and
tangents equal the plain-float run and the unrolled trace; reverse mode refuses it clearly.
The eight printers' loops are compiled and run in tests/test_loop_lower.py."""

from __future__ import annotations

import math

import pytest

import tang
from tang.dual import Dual, Tangents
from tang.expr import graph as G
from tang.expr.grad import backward
from tang.expr.loop import MAX_STEPS, LoopGradientError, count_nodes, fori_loop, loops
from tang.expr.trace import replay
from tests.skips import import_or_skip


def pendulum(i, s):
    """A leapfrog-ish pendulum that also reads the step number."""
    x, v = s
    v = v - 0.05 * tang.sin(x) + 1e-4 * i
    return (x + 0.05 * v, v)


def clipped(i, s):
    """A body with a branch: the velocity flips at a wall."""
    x, v = s
    x = x + 0.1 * v
    v = tang.where(x > 1.0, -v, v)
    return (x, v)


def unrolled(n, body, init):
    state = init
    for i in range(n):
        state = body(i, state)
    return state


BODIES = [pendulum, clipped]
STARTS = [(0.3, 0.0), (1.2, -0.4), (-2.0, 0.7)]


def test_floats_run_as_a_python_loop():
    for body in BODIES:
        for start in STARTS:
            assert fori_loop(37, body, start) == unrolled(37, body, start)
    assert fori_loop(0, pendulum, (1.0, 2.0)) == (1.0, 2.0)
    assert fori_loop(3.0, lambda i, s: s + i, 0) == 3  # a whole float counts too
    assert fori_loop(4, lambda i, s: [s[0] * 2.0], [1.0]) == [16.0]


@pytest.mark.parametrize("body", BODIES)
def test_a_traced_loop_equals_the_plain_run_bit_for_bit(body):
    x, v = tang.var("x"), tang.var("v")
    looped = fori_loop(200, body, (x, v))
    assert all(o.op == "loop_out" for o in looped)
    assert len(loops(list(looped))) == 1
    straight = unrolled(200, body, (x, v))
    for start in STARTS:
        values = {"x": start[0], "v": start[1]}
        plain = list(fori_loop(200, body, start))
        assert G.evaluate(list(looped), values) == plain  # the evaluator's loop
        assert G.evaluate(list(straight), values) == plain  # the unrolled trace
        assert replay(tang.Graph(["x", "v"], list(looped)), values) == plain


def test_the_graph_is_the_size_of_the_body_not_of_the_steps():
    x, v = tang.var("x"), tang.var("v")
    sizes = [count_nodes(list(fori_loop(n, pendulum, (x, v)))) for n in (16, 1600)]
    assert sizes[0] == sizes[1] < 40
    assert count_nodes(list(unrolled(1600, pendulum, (x, v)))) > 1600 * 8


def test_dual_tangents_ride_inside_the_loop():
    """Forward mode: Duals whose parts are nodes carry two tangents through one loop; the
    result equals Duals on floats and central differences."""
    x, v = tang.var("x"), tang.var("v")
    looped = fori_loop(300, pendulum, (Dual(x, (1.0, 0.0)), Dual(v, (0.0, 1.0))))
    outs = [looped[0].value, *looped[0].tangent, looped[1].value, *looped[1].tangent]
    assert count_nodes(outs) < 120
    for start in STARTS:
        got = G.evaluate(outs, {"x": start[0], "v": start[1]})
        ref = fori_loop(300, pendulum, (Dual(start[0], (1.0, 0.0)), Dual(start[1], (0.0, 1.0))))
        assert got == [ref[0].value, *ref[0].tangent, ref[1].value, *ref[1].tangent]
        h = 1e-6
        for k in range(2):
            up = list(start)
            down = list(start)
            up[k] += h
            down[k] -= h
            fd = (
                fori_loop(300, pendulum, tuple(up))[0] - fori_loop(300, pendulum, tuple(down))[0]
            ) / (2 * h)
            assert got[1 + k] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_plain_numbers_of_any_kind_run_as_they_are():
    """On plain numbers the loop is Python's: complex-packed tangents (the orbit's fast
    path) and Duals over them pass through untouched."""
    assert fori_loop(3, lambda i, s: s * (1 + 1j), 1.0) == (1 + 1j) ** 3
    d = fori_loop(4, pendulum, (Dual(0.3, 1.0 + 0.0j), Dual(0.0, 1.0j)))
    ref = unrolled(4, pendulum, (Dual(0.3, 1.0 + 0.0j), Dual(0.0, 1.0j)))
    assert (d[0].value, d[0].tangent) == (ref[0].value, ref[0].tangent)


def test_a_zero_tangent_grows_to_meet_the_others():
    """A state that starts with no tangent (0) gains the loop's tangents after one step."""
    x, v = tang.var("x"), tang.var("v")
    looped = fori_loop(50, pendulum, (Dual(x, (1.0, 0.0)), Dual(v, 0.0)))
    assert isinstance(looped[1].tangent, Tangents) and len(looped[1].tangent) == 2
    got = G.evaluate([looped[1].tangent[0]], {"x": 0.3, "v": 0.0})
    ref = fori_loop(50, pendulum, (Dual(0.3, (1.0, 0.0)), Dual(0.0, 0.0)))
    assert got == [ref[1].tangent[0]]


def test_jvp_and_replay_on_duals_go_through_the_loop():
    def f(a):
        return fori_loop(80, pendulum, (a, 0.0))[0]

    value, slope = tang.jvp(f, (0.4,), (1.0,))
    h = 1e-6
    assert slope == pytest.approx((f(0.4 + h) - f(0.4 - h)) / (2 * h), rel=1e-6)
    x = tang.var("x")
    graph = tang.Graph(["x"], [f(x)])
    (d,) = replay(graph, [Dual(0.4, 1.0)])
    assert (d.value, d.tangent) == (value, slope)


def test_the_count_may_be_an_input():
    x, v, n = tang.var("x"), tang.var("v"), tang.var("n")
    looped = list(fori_loop(n, pendulum, (x, v)))
    for count, steps in [(25.0, 25), (25.9, 25), (0.0, 0), (-3.0, 0), (math.nan, 0)]:
        got = G.evaluate(looped, {"x": 0.3, "v": 0.1, "n": count})
        assert got == list(fori_loop(steps, pendulum, (0.3, 0.1)))
    assert G.evaluate([fori_loop(n, lambda i, s: s + 1.0, x)], {"x": 0.0, "n": math.inf}) == [
        float(MAX_STEPS)
    ]


def test_outer_values_are_captured_and_computed_once():
    """A body closing over inputs reads them as captures; what does not change from step to
    step (dt², a product of inputs) is computed before the loop, not inside it."""
    x, dt, k = tang.var("x"), tang.var("dt"), tang.var("k")
    (looped,) = [fori_loop(10, lambda i, s: s - (dt * dt) * (k * s), x)]
    (loop,) = loops([looped])
    body = loop.value
    assert len(body.captures) == 2  # dt·dt and k, each computed outside
    assert dt * dt in loop.args and k in loop.args
    assert all(a.op != "var" or a.name.startswith("%") for a in body.nodes() if a.op == "var")
    assert G.evaluate([looped], {"x": 1.0, "dt": 0.1, "k": 2.0}) == [
        fori_loop(10, lambda i, s: s - (0.1 * 0.1) * (2.0 * s), 1.0)
    ]
    # a body over floats that closes over a traced value is traced once, not unrolled
    once = fori_loop(500, lambda i, s: s + k, 0.0)
    assert count_nodes([once]) < 10


def test_nested_loops():
    x = tang.var("x")

    def outer(i, s):
        return fori_loop(5, lambda j, t: t * 0.5 + s * 0.25 + j, s) + i

    looped = fori_loop(7, outer, x)
    assert G.evaluate([looped], {"x": 1.5}) == [fori_loop(7, outer, 1.5)]
    assert count_nodes([looped]) < 25


def test_swapping_states_and_a_state_that_stays():
    x, y, z = tang.var("x"), tang.var("y"), tang.var("z")
    looped = list(fori_loop(3, lambda i, s: (s[1], s[0], s[2]), (x, y, z)))
    assert G.evaluate(looped, {"x": 1.0, "y": 2.0, "z": 3.0}) == [2.0, 1.0, 3.0]


def test_simplify_keeps_the_loop_and_its_values():
    x, v = tang.var("x"), tang.var("v")
    looped = list(fori_loop(40, pendulum, (x * 1.0 + 0.0, v + 0.0)))
    graph = tang.simplify(tang.Graph(["x", "v"], looped))
    (loop,) = loops(list(graph.outputs))
    assert loop.args[1] is x and loop.args[2] is v  # the operands simplified, the body kept
    assert G.evaluate(list(graph.outputs), {"x": 0.3, "v": 0.1}) == G.evaluate(
        looped, {"x": 0.3, "v": 0.1}
    )


def test_reverse_mode_through_a_loop_says_so():
    x, v = tang.var("x"), tang.var("v")
    looped = fori_loop(10, pendulum, (x, v))
    with pytest.raises(LoopGradientError, match="forward mode"):
        backward(looped[0], ["x"])
    with pytest.raises(LoopGradientError, match=r"tang\.fori_loop"):
        tang.grad(lambda a: fori_loop(10, pendulum, (a, 0.0))[0])(tang.var("a"))


def test_to_text_prints_the_loop_with_its_body():
    x, h = tang.var("x"), tang.var("h")
    looped = fori_loop(100, lambda i, s: s - h * tang.sin(s), x)
    # a product prints its operands in the order their nodes were first made (any test
    # before this one may have made them): the body's text, from the same interned nodes
    s0, c0 = tang.var("%1.s0"), tang.var("%1.c0")
    body = tang.to_text(s0 - c0 * tang.sin(s0))
    assert body in ("s0 - sin(s0) * c0", "s0 - c0 * sin(s0)")
    assert tang.to_text(looped) == f"loop(100, (x), (i, s0) -> ({body}) with c0 = h)[0]"


def test_bad_loops_are_refused_with_reasons():
    with pytest.raises(ValueError, match="whole number"):
        fori_loop(2.5, pendulum, (0.0, 0.0))
    with pytest.raises(ValueError, match="whole number"):
        fori_loop(-1, pendulum, (0.0, 0.0))
    with pytest.raises(TypeError, match="whole number"):
        fori_loop("3", pendulum, (0.0, 0.0))
    x = tang.var("x")
    with pytest.raises(TypeError, match="numbers, Duals"):
        fori_loop(3, pendulum, ("a", x))
    with pytest.raises(TypeError, match="structure"):
        fori_loop(3, lambda i, s: (s[0],), (x, x))
    with pytest.raises(TypeError, match="comparison"):
        fori_loop(3, lambda i, s: s < 1.0, x)
    with pytest.raises(TypeError, match="comparison"):
        fori_loop(x < 1.0, lambda i, s: s, x)


def test_the_sympy_bridge_refuses_a_loop():
    import_or_skip("sympy", "the sympy bridge needs sympy (a dev dependency)")
    from tang.expr.sympy import to_sympy

    with pytest.raises(ValueError, match="no closed sympy form"):
        to_sympy(fori_loop(3, lambda i, s: s * 2.0, tang.var("x")))


def test_the_page_draws_a_loop_as_one_node_with_its_body():
    from demos.playground import layout

    x, h = tang.var("x"), tang.var("h")
    looped = fori_loop(1600, lambda i, s: s - h * tang.sin(s), x)
    drawing = layout([looped], ["f"])
    (box,) = [n for n in drawing["nodes"] if n["op"] == "loop"]
    assert box["label"] == "loop ×1600"
    assert box["body"] == tang.to_text(looped).removesuffix("[0]")
    assert box["body"].startswith("loop(1600, (x), (i, s0) -> (s0 - ")
    assert drawing["total"] == 5  # x, h, the loop, its state s0 read out, the constant 1600
