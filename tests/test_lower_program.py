"""The schedule, the names, the node ↔ line map and the printers' spellings.

What the printed code computes is checked by running it (test_lower_backends.py); here the
structure is checked: each node computed once, temporaries dense, every line mapped."""

from __future__ import annotations

import json
import math
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tang.expr import graph as g
from tang.expr.graph import Graph, const, evaluate, topo_order, var
from tang.lower import BACKENDS, lower, schedule
from tang.lower.base import identifiers, shortest_f32, to_f32

x, y, z = var("x"), var("y"), var("z")


def ops_of(outputs):
    return [n for n in topo_order(outputs) if n.op not in ("const", "var")]


def sample():
    s = (x * y).sin()
    return [s * s + s / z, g.maximum(x, y) * s, (x + 1.0).log()]


@pytest.mark.parametrize("inline", [True, False])
def test_each_node_is_computed_exactly_once(inline):
    outs = sample()
    prog = schedule(outs, ["x", "y", "z"], inline=inline)
    computed = [n for step in prog.steps for n in step.nodes]
    computed += [n for store in prog.stores for n in store.nodes]
    assert sorted(n.serial for n in computed) == sorted(n.serial for n in ops_of(outs))
    assert [s.name for s in prog.steps] == [f"t{k}" for k in range(len(prog.steps))]
    if not inline:
        assert all(step.nodes == (step.node,) for step in prog.steps)
        assert len(prog.steps) == len(ops_of(outs))


def test_shared_subexpression_is_printed_once_everywhere():
    s = (x * y).sin()
    outs = [s * s + s, s.sqrt()]
    for name, printer in BACKENDS.items():
        text = printer.render(schedule(outs, ["x", "y"])).source
        calls = re.findall(r"\bsin\(|Math\.sin\(|_sin\(|precise::sin\(|sinf\(", text)
        assert len(calls) == 1, (name, text)


def test_inlining_keeps_multi_use_nodes_as_temporaries():
    s = x * y
    prog = schedule([s + s.sin(), (x + 1.0).sqrt()], ["x", "y"])
    assert prog.temps[s] == "t0"  # used twice: a temporary
    assert (x + 1.0) not in prog.temps  # used once, small: inlined
    assert all(len(step.nodes) <= 1 + 2 * 4 for step in prog.steps)


def test_line_map_points_at_the_lines_that_compute_each_node():
    outs = sample()
    for name, printer in BACKENDS.items():
        for inline in (True, False):
            low = printer.render(schedule(outs, ["x", "y", "z"], inline=inline))
            lines = low.source.splitlines()
            for number, nodes in low.line_nodes.items():
                assert 1 <= number <= len(lines)
                for node in nodes:
                    assert number in low.node_lines[node]
            for node in ops_of(outs):
                assert node in low.node_lines, (name, node)
                if node in low.program.temps:  # its defining line names its temporary
                    temp = low.program.temps[node]
                    defining = [lines[k - 1] for k in low.node_lines[node]]
                    assert any(re.search(rf"\b{temp}\b\s*(:\s*\w+\s*)?=", t) for t in defining)
            assert set(low.node_lines) >= set(outs) | {x, y, z}  # loads and stores too


def test_graph_input_and_json_line_map():
    graph = Graph(["x", "y"], [x * y + 1.0, (x * y).sin()])
    low = lower(graph, backend="javascript", inline=False)
    assert low.program.inputs == ("x", "y")
    serials = low.line_serials()
    assert json.loads(json.dumps(serials)) == {str(k): v for k, v in serials.items()}
    first = low.source.splitlines().index("        const t0 = x * y;") + 1
    assert serials[first] == [(x * y).serial]


def test_outputs_that_are_constants_or_inputs():
    for name in ("c", "python", "javascript"):
        low = lower([x, 2.5, -math.inf, x * 2.0], ["x", "y"], name, shape="function")
        assert len(low.program.steps) == 0  # nothing to compute but x*2, inlined
    ns: dict = {}
    exec(lower([x, 2.5, -math.inf, y], ["x", "y"], "python", shape="function").source, ns)
    assert ns["f"](3.0, 4.0) == [3.0, 2.5, -math.inf, 4.0]
    wgsl = lower([2.5, x], ["x", "y"], "wgsl").source
    assert "dst[i] = 2.5f;" in wgsl and "dst[n + i] = x;" in wgsl
    assert "let y" not in wgsl  # unused inputs are not loaded
    only_constants = lower([1.0], [], "wgsl").source
    assert "_ = &src;" in only_constants  # binding 1 stays in the auto layout


def test_bad_programs_are_clear_errors():
    with pytest.raises(TypeError, match="comparison"):
        schedule([g.lt(x, y)], ["x", "y"])
    with pytest.raises(ValueError, match=r"uses \['z'\]"):
        schedule([x + z], ["x", "y"])
    with pytest.raises(ValueError, match="repeat"):
        schedule([x], ["x", "x"])
    with pytest.raises(ValueError, match="at least one output"):
        schedule([], ["x"])
    with pytest.raises(ValueError, match="unknown backend 'fortran'"):
        lower([x], ["x"], "fortran")
    with pytest.raises(ValueError, match="no f64"):
        lower([x], ["x"], "wgsl", dtype="f64")
    with pytest.raises(ValueError, match="kernels"):
        lower([x], ["x"], "metal", shape="function")
    with pytest.raises(ValueError, match="cannot name a kernel"):
        lower([x], ["x"], "c", name="int")


def test_shared_comparison_becomes_a_bool_temporary():
    c = g.lt(x, y)
    outs = [g.select(c, x, y), g.select(c, y * 2.0, 1.0)]
    want = {
        "c": "const int t0 = x < y;",
        "wgsl": "let t0 = x < y;",
        "glsl": "bool t0 = x < y;",
        "python": "t0 = x < y",
        "javascript": "const t0 = x < y;",
        "metal": "const bool t0 = x < y;",
        "opencl": "const bool t0 = x < y;",
    }
    for name, line in want.items():
        assert line in lower(outs, ["x", "y"], name).source, name


def test_select_argument_order_per_language():
    e = g.select(g.lt(x, y), x, y + 1.0)
    prints = {
        "wgsl": "select(y + 1.0f, x, x < y)",
        "c": "x < y ? x : y + 1.0",
        "glsl": "x < y ? x : y + 1.0",
        "python": "x if x < y else y + 1.0",
        "javascript": "x < y ? x : y + 1.0",
    }
    for name, text in prints.items():
        assert text in lower([e], ["x", "y"], name).source, name


def test_parentheses_follow_float_evaluation_order():
    """Float + and * do not associate: at x=1e16, y=-1e16, z=1 the groupings differ, and
    the printed code (inlined, so precedence decides) must keep each one."""
    outs = [
        (x + y) + z,
        x + (y + z),
        (x * y) * z,
        x * (y * z),
        x - (y - z),
        -(x * y),
        g.recip(x * y + z),
        (x + y) * z,
        x * y + z,
    ]
    at = {"x": 1e16, "y": -1e16, "z": 1.0}
    assert evaluate(outs[:2], at) == [1.0, 0.0]
    for out in outs:
        low = lower([out], ["x", "y", "z"], "python", shape="function")
        assert not low.program.steps  # one inlined expression, parentheses and all
        ns: dict = {}
        exec(low.source, ns)
        assert ns["f"](*at.values()) == evaluate([out], at), low.source
    for out, text in [
        (x - (y - z), "x - (y - z)"),
        (-(x * y), "-(x * y)"),
        (g.recip(x * y), "1.0 / (x * y)"),
        (g.neg(g.neg(x)), "-(-x)"),
    ]:
        assert f"dst[i] = {text};" in lower([out], ["x", "y", "z"], "c").source


def test_nan_and_inf_spellings():
    outs = [x + math.inf, x * math.nan, x - math.inf]
    want = {
        "c": ["INFINITY", "NAN"],
        "javascript": ["Infinity", "NaN"],
        "python": ["_inf", "_nan"],
        "wgsl": ["bitcast<f32>(tang_inf_bits)", "bitcast<f32>(tang_nan_bits)"],
        "glsl": ["uintBitsToFloat(0x7f800000u)", "uintBitsToFloat(0x7fc00000u)"],
        "cuda": ["__int_as_float(0x7f800000)", "__int_as_float(0x7fc00000)"],
        "metal": ["INFINITY", "NAN"],
        "opencl": ["INFINITY", "NAN"],
    }
    for name, spellings in want.items():
        text = lower(outs, ["x"], name).source
        for s in spellings:
            assert s in text, (name, s)
        stores = "".join(ln for ln in text.splitlines() if "dst[" in ln)
        assert "inf" not in re.sub(r"_inf|INFINITY|Infinity", "", stores).lower(), name
    assert (
        "__longlong_as_double(0x7ff0000000000000LL)"
        in lower(outs, ["x"], "cuda", dtype="f64").source
    )


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_f64_literals_are_exact(v):
    for name in ("c", "javascript", "python", "opencl", "cuda"):
        text, _ = BACKENDS[name].literal(v, "f64")
        assert struct.pack("<d", float(text)) == struct.pack("<d", v), (name, text)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=0x7F7FFFFF))
def test_f32_literals_are_exact_and_shortest(bits):
    np = pytest.importorskip("numpy")
    x32 = struct.unpack("<f", struct.pack("<I", bits))[0]
    text = shortest_f32(x32)
    assert np.float32(text) == np.float32(x32)  # reads back to the same f32
    digits = re.sub(r"e.*|[.\-]", "", text).strip("0")
    numpy_digits = re.sub(
        r"e.*|[.\-]", "", np.format_float_scientific(np.float32(x32), unique=True)
    ).strip("0")
    assert len(digits) <= len(numpy_digits)  # as short as numpy's shortest round trip
    assert BACKENDS["wgsl"].literal(x32, "f32")[0] == text + "f"
    assert BACKENDS["glsl"].literal(x32, "f32")[0] == text


def test_f32_literal_rounding_and_overflow():
    assert to_f32(1e300) == math.inf and to_f32(-1e300) == -math.inf
    assert BACKENDS["wgsl"].literal(0.1, "f32") == ("0.1f", 100)
    assert BACKENDS["wgsl"].literal(-1e300, "f32")[0] == "-bitcast<f32>(tang_inf_bits)"
    assert BACKENDS["c"].literal(-0.0, "f64")[0] == "-0.0"
    assert BACKENDS["c"].literal(3.0, "f32")[0] == "3.0f"
    assert BACKENDS["c"].literal(16777217.0, "f32")[0] == "16777216.0f"  # rounds to f32 first


def test_identifiers_are_safe_and_the_same_in_every_backend():
    names = ["x", "int", "n", "src", "t0", "gl_Pos", "2x", "a b", "n_", "α"]
    ids = identifiers(names)
    assert ids["x"] == "x" and ids["int"] == "int_" and ids["n"] == "n_" and ids["t0"] == "t0_"
    assert ids["gl_Pos"] == "vgl_Pos" and ids["2x"] == "v2x" and ids["a b"] == "a_b"
    assert len(set(ids.values())) == len(names)
    assert all(re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", v) for v in ids.values())
    nodes = [var(n) for n in names]
    total = nodes[0]
    for v in nodes[1:]:
        total = total + v
    ns: dict = {}
    exec(lower([total], names, "python", shape="function").source, ns)
    assert ns["f"](*range(len(names))) == [float(sum(range(len(names))))]


def test_output_names_cannot_break_out_of_a_comment():
    low = lower([x], ["x"], "c", output_names=["*/ evil\nint main"])
    comment = [ln for ln in low.source.splitlines() if ln.startswith("//")]
    assert len(comment) == 1 and "\n" not in comment[0] and "main" in comment[0]
    assert "int main" not in low.source.replace(comment[0], "")


@pytest.mark.slow  # seconds of CPU: out of the fast lane, in the full suite
def test_a_200000_node_chain_schedules_prints_and_runs():
    """No recursion anywhere: not in the schedule, the printer, nor the printed code."""
    e = x
    for k in range(133_334):  # 1.5 nodes a step
        e = e.sin() if k % 2 else e * 0.5 + y
    assert len(topo_order([e])) > 200_000
    low = lower([e], ["x", "y"], "python", shape="function")
    ns: dict = {}
    exec(low.source, ns)
    assert ns["f"](0.3, 0.2) == evaluate([e], {"x": 0.3, "y": 0.2})
    assert max(len(step.nodes) for step in low.program.steps) <= 9


def test_constant_nodes_fold_before_printing():
    e = const(2.0) * 3.0 + x
    assert "6.0" in lower([e], ["x"], "c").source


def test_a_program_is_loads_then_lets_then_stores():
    from tang.lower import Let, Load, Store

    prog = schedule(sample(), ["x", "y", "z"])
    kinds = [type(s) for s in prog.statements]
    assert kinds == sorted(kinds, key=[Load, Let, Store].index)
    assert [s.column for s in prog.statements if isinstance(s, Load)] == [0, 1, 2]
    assert [s.index for s in prog.statements if isinstance(s, Store)] == [0, 1, 2]
    assert prog.steps == tuple(s for s in prog.statements if isinstance(s, Let))


def test_the_buffer_layout_is_the_programs_not_the_printers():
    """Every printer addresses columns as the program's layout says (here with other names
    for the item count and index), so a later layout changes the program, not 8 printers."""
    import dataclasses

    from tang.lower import Layout

    prog = schedule([x * y, x + 1.0], ["x", "y"])
    other = dataclasses.replace(prog, layout=Layout(count="m", item="j"))
    for name, printer in BACKENDS.items():
        text = printer.render(other).source
        assert "src[m + j]" in text and "dst[m + j]" in text, name
        assert "src[k*m + j] = input k" in text, name
        assert printer.render(prog).source.count("[n + i]") == 2, name
