"""The hero editor's worker method ``playground.compile`` (demos/playground.py), called
through demos.api as the page calls it: eight kernels that run and agree with tang's own
evaluation and with finite differences, a node ↔ line map that points at real nodes, parse
errors with the right column, and a graph layout that draws every edge downwards."""

from __future__ import annotations

import asyncio
import json
import math
import re

import pytest
import toolchains as tc

from demos import api
from demos.playground import (
    MAX_GRAPH_NODES,
    WARM_UP_STEPS,
    _last,
    build,
    compile_expression,
    main,
)
from tang.expr.graph import evaluate, topo_order
from tang.lower import BACKENDS
from tests.skips import skip_missing_tool

EXPR = "f(x, y, z) = sin(x) * y + exp(z / (1 + x*x))"
POINTS = [(-1.3, 0.4, 0.9), (0.0, -2.0, 0.1), (0.7, 1.5, -0.6), (2.1, -0.3, 1.2)]


def call(method: str, **params):
    """One round trip through the worker's JSON entry point (strict JSON: no NaN)."""
    reply = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    if not reply["ok"]:
        raise RuntimeError(f"{reply['error']['type']}: {reply['error']['message']}")
    return reply["result"]


@pytest.fixture(scope="module")
def kept():
    """The graph, held alive: nodes are interned weakly, so serials are only stable while
    someone holds the nodes (the page gets serials and lines from one answer)."""
    return build(EXPR)[0]


@pytest.fixture(scope="module")
def answer(kept):
    return call("playground.compile", expr=EXPR)


def test_one_call_gives_all_eight_backends(answer):
    assert answer["inputs"] == ["x", "y", "z"]
    assert answer["outputs"] == ["f", "df/dx", "df/dy", "df/dz"]
    assert list(answer["kernels"]) == list(BACKENDS) and len(BACKENDS) == 8
    for name, kernel in answer["kernels"].items():
        assert "df/dz" in kernel["source"], name  # the layout comment names every output
        assert kernel["lines"], name
    t = answer["timing"]
    assert t["python_ms"] >= t["lower_ms"] > 0 and t["parse_grad_ms"] > 0


def _reference(outputs, point):
    return evaluate(outputs, dict(zip("xyz", point, strict=True)))


def _finite_difference(point, k, h=1e-6):
    graph, _ = build(EXPR, grad=False)
    lo, hi = list(point), list(point)
    lo[k] -= h
    hi[k] += h
    return (_reference(graph.outputs, hi)[0] - _reference(graph.outputs, lo)[0]) / (2 * h)


@pytest.mark.toolchain
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_each_kernel_runs_and_matches_python_and_finite_differences(answer, backend):
    missing = tc.missing_tool(backend)
    if missing:
        skip_missing_tool(missing, f"{missing} is not installed here, so {backend} cannot run")
    graph, _ = build(EXPR)
    n = len(POINTS)
    src = [p[k] for k in range(3) for p in POINTS]  # input k of item i at src[k*n + i]
    dtype = BACKENDS[backend].dtypes[0]
    dst = tc.run_kernel(backend, answer["kernels"][backend]["source"], src, n, 4, dtype)
    tol = 1e-12 if dtype == "f64" else 5e-4
    for i, point in enumerate(POINTS):
        want = _reference(graph.outputs, point)
        got = [dst[j * n + i] for j in range(4)]
        for j in range(4):
            assert math.isclose(got[j], want[j], rel_tol=tol, abs_tol=tol), (backend, point, j)
        for k in range(3):  # the gradient is the derivative: check against the value alone
            fd = _finite_difference(point, k)
            assert math.isclose(want[1 + k], fd, rel_tol=1e-5, abs_tol=1e-6), (point, k)


def test_line_map_points_at_nodes_of_the_drawn_graph(answer, kept):
    graph = kept
    serials = {n.serial for n in topo_order(graph.outputs)}
    drawn = {n["id"] for n in answer["graph"]["nodes"]}
    assert drawn == serials
    outputs = {o.serial for o in graph.outputs}
    for name, kernel in answer["kernels"].items():
        lines = kernel["source"].split("\n")
        mapped = set()
        for line, ids in kernel["lines"].items():
            assert 1 <= int(line) <= len(lines) and lines[int(line) - 1].strip(), name
            assert set(ids) <= serials, name
            mapped.update(ids)
        # every operation is computed on some line, and every output is stored on one
        ops = {n.serial for n in topo_order(graph.outputs) if n.op not in ("const", "var")}
        assert ops <= mapped, name
        assert outputs <= mapped, name


def test_line_map_matches_the_text_of_the_line(answer, kept):
    # the sin node's line in C says sin(x); the input loads say x = src[...]
    graph = kept
    sin_x = next(n for n in topo_order(graph.outputs) if n.op == "sin" and n.args[0].op == "var")
    c = answer["kernels"]["c"]
    source = c["source"].split("\n")
    sin_lines = [int(k) for k, ids in c["lines"].items() if sin_x.serial in ids]
    first = source[sin_lines[0] - 1]  # computed once, into a temporary …
    assert "sin(x)" in first and first.strip().startswith("const double t")
    name = first.split("=")[0].split()[-1]
    assert all(name in source[k - 1] for k in sin_lines[1:])  # … that later lines store
    x = next(n for n in topo_order(graph.outputs) if n.op == "var" and n.name == "x")
    assert any(
        "x = src[i]" in source[int(k) - 1] for k, ids in c["lines"].items() if x.serial in ids
    )


@pytest.mark.parametrize(
    ("text", "column", "snippet"),
    [
        ("sin(x) + * y", 10, "*"),
        ("<img src=x onerror=alert(1)>", 1, "<"),
        ("f(x) = x + q", 12, "q"),
        ("exp(x", 1, "e"),  # the unclosed call is reported where it opens
        ("", 1, ""),
        ('"); import os; os.system("echo hi', 1, '"'),
        ("f(x) = x * 1e400 + 1", 12, "1e400"),  # past float64: an error, not a silent inf
    ],
)
def test_parse_errors_come_back_with_the_column(text, column, snippet):
    out = call("playground.compile", expr=text)
    err = out["error"]
    assert err["column"] == column and err["position"] == column - 1, err
    assert err["end"] > err["position"]
    assert text[err["position"] : err["end"]].startswith(snippet)
    assert err["message"] and "kernels" not in out


def test_text_for_the_same_function_reuses_the_last_answer():
    first = compile_expression("x*sin(y)")
    for same in ("x * sin(y) ", "(x*sin(y))", "x*(sin(y))"):
        again = compile_expression(same)
        assert again["timing"].get("same_function") is True
        assert again["kernels"] == first["kernels"] and again["graph"] == first["graph"]
    other = compile_expression("f(x, y, z) = x*sin(y)")  # a third input: another function
    assert "same_function" not in other["timing"] and other["inputs"] == ["x", "y", "z"]
    value_only = compile_expression("f(x, y, z) = x*sin(y)", grad=False)
    assert "same_function" not in value_only["timing"] and value_only["outputs"] == ["f"]


def test_the_page_asks_for_the_tab_it_shows_and_gets_each_kernel_printed_once():
    """A keystroke prints only the backend asked for; another tab of the same function is
    printed then, from the kept schedule (not recompiled), and equals the all-eight answer."""
    text = "f(x, y) = exp(x) * tanh(y - x)"
    every = call("playground.compile", expr=text)["kernels"]
    _last.update(key=None, answer=None, compiled=None)
    one = call("playground.compile", expr=text, backends=["wgsl"])
    assert list(one["kernels"]) == ["wgsl"] and one["timing"]["lower_ms"] > 0
    two = call("playground.compile", expr=text, backends=["c", "wgsl"])
    assert two["timing"].get("same_function") is True
    assert list(two["kernels"]) == ["c", "wgsl"]
    for b in ("c", "wgsl"):  # serials may differ: the first answer's nodes were let go
        assert two["kernels"][b]["source"] == every[b]["source"], b
        assert two["kernels"][b]["lines"].keys() == every[b]["lines"].keys(), b
    assert two["graph"] == one["graph"] and two["outputs"] == one["outputs"]
    with pytest.raises(RuntimeError, match="unknown backend 'fortran'"):
        call("playground.compile", expr=text, backends=["fortran"])
    with pytest.raises(RuntimeError, match="list of backend names"):
        call("playground.compile", expr=text, backends="c")


def test_the_envelope_times_the_whole_python_call():
    """``python_ms`` in the worker's envelope covers the handler and the encoding of its
    answer, so it is at least the handler's own figure."""
    params = json.dumps({"expr": "f(x, y) = atan2(y, x) * x"})
    reply = json.loads(asyncio.run(api.dispatch_json("playground.compile", params)))
    assert reply["ok"] and reply["python_ms"] >= reply["result"]["timing"]["python_ms"] > 0


def test_warm_up_runs_its_steps_and_leaves_the_last_answer_alone():
    """The worker's idle warm-up (api.warm_up, as web/worker.js calls it) compiles samples
    until it says stop, and the editor's cached last answer is not one of them."""
    first = compile_expression("x*sin(y)")
    key = _last["key"]
    steps = 0
    while api.warm_up(steps):
        steps += 1
        assert steps < 10 * WARM_UP_STEPS
    assert steps + 1 >= WARM_UP_STEPS  # its steps, plus the other demos' imports and hooks
    assert _last["key"] is key
    assert compile_expression("x*sin(y)")["kernels"] == first["kernels"]


def test_declared_variables_and_value_only():
    out = call("playground.compile", expr="f(a, b) = a * sin(b)", grad=False)
    assert out["inputs"] == ["a", "b"] and out["outputs"] == ["f"]
    out = call("playground.compile", expr="x * y")  # undeclared: the x, y, z it uses
    assert out["inputs"] == ["x", "y"] and out["outputs"] == ["f", "df/dx", "df/dy"]
    out = call("playground.compile", expr="2 * 3")  # a constant: no inputs, still a kernel
    assert out["inputs"] == [] and "6.0" in out["kernels"]["python"]["source"]


def test_a_declared_function_names_its_outputs_kernel_and_graph_after_itself():
    """``g(a, b) = a**b`` computes g, dg/da and dg/db (not f, df/da, df/db): in the outputs,
    every kernel's layout comment and function name, and the graph's output boxes."""
    out = call("playground.compile", expr="g(a, b) = a**b")
    assert out["outputs"] == ["g", "dg/da", "dg/db"]
    for backend, kernel in out["kernels"].items():
        source = kernel["source"]
        assert "(0: g, 1: dg/da, 2: dg/db)" in source, backend
        assert "df/" not in source and re.search(r"\bg\(|// kernel g\n", source), backend
    drawn = sorted(label for n in out["graph"]["nodes"] for label in n["outputs"])
    assert drawn == ["dg/da", "dg/db", "g"]
    renamed = call("playground.compile", expr="h(a, b) = a**b")  # the same graph, renamed
    assert renamed["outputs"] == ["h", "dh/da", "dh/db"]
    assert "(0: h, 1: dh/da, 2: dh/db)" in renamed["kernels"]["c"]["source"]


@pytest.mark.parametrize(
    ("text", "definition"),
    [
        ("g(a, b) = a**b", "g(a, b) = a**b"),
        ("  f(x, y) = x*sin(y) ", "f(x, y) = x*sin(y)"),
        ("x*sin(y)", "f(x, y) = x*sin(y)"),
        ("z + 1", "f(z) = z + 1"),
        ("k() = 2", "k() = 2"),
    ],
)
def test_the_definition_names_the_function_once(text, definition):
    """What Run shows above its plots: the label never repeats (no "f = f(x, y) = …")."""
    out = call("playground.compile", expr=text)
    assert out["definition"] == definition
    assert out["definition"].count("=") == 1 and out["definition"].startswith(out["outputs"][0])
    assert call("playground.compile", expr=text)["definition"] == definition  # reused answer


def test_nan_and_infinity_survive_strict_json():
    out = call("playground.compile", expr="x * nan + inf")
    labels = {n["label"] for n in out["graph"]["nodes"]}
    assert "nan" in labels or "inf" in labels


def test_layout_draws_edges_downwards_without_overlaps(answer):
    nodes = {n["id"]: n for n in answer["graph"]["nodes"]}
    spots = {(n["x"], n["y"]) for n in nodes.values()}
    assert len(spots) == len(nodes)
    for a, b in answer["graph"]["edges"]:
        assert nodes[a]["y"] < nodes[b]["y"]
    named = [n for n in nodes.values() if n["outputs"]]
    assert sorted(o for n in named for o in n["outputs"]) == sorted(answer["outputs"])
    assert {n["label"] for n in nodes.values() if n["op"] == "var"} == {"x", "y", "z"}


def assert_honest_summary(graph: dict, outputs: list[str]) -> None:
    """A summary draws at most the limit, every output, edges downwards, and boxes whose
    counts add up to exactly the nodes not drawn."""
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert 0 < len(nodes) <= MAX_GRAPH_NODES == graph["limit"]
    boxes = [n for n in nodes.values() if n["op"] == "more"]
    assert boxes and all(n["label"] == f"⋯ {n['hidden']}" for n in boxes)
    assert graph["shown"] == len(nodes) - len(boxes)
    assert sum(n["hidden"] for n in boxes) == graph["hidden"] == graph["total"] - graph["shown"]
    assert sorted(o for n in nodes.values() for o in n["outputs"]) == sorted(outputs)
    for a, b in graph["edges"]:
        assert nodes[a]["y"] < nodes[b]["y"] and nodes[b]["op"] != "more"
    assert len({(n["x"], n["y"]) for n in nodes.values()}) == len(nodes)


def test_huge_graphs_draw_their_outputs_and_an_honest_summary():
    text = " + ".join(f"sin({k}*x + y)" for k in range(1, 80))
    out = call("playground.compile", expr=text)
    assert out["graph"]["total"] > 4 * MAX_GRAPH_NODES
    assert_honest_summary(out["graph"], out["outputs"])
    assert all(k["source"] for k in out["kernels"].values())


def test_long_chains_compile_without_recursion():
    text = "x" + " * 1.0001 + x" * 700  # 9,101 characters: near the length limit
    out = compile_expression(text)
    assert "error" not in out
    assert_honest_summary(out["graph"], out["outputs"])


def test_bad_parameter_types_are_errors_not_crashes():
    with pytest.raises(RuntimeError, match="expr must be a string"):
        call("playground.compile", expr=["x"])
    with pytest.raises(RuntimeError, match="BadParams"):
        call("playground.compile", text="x")


def test_command_line(capsys):
    assert main(["f(x) = x*x", "--backend", "python"]) == 0
    assert "def f(" in capsys.readouterr().out
    assert main(["x +"]) == 2
    assert "column 4" in capsys.readouterr().err
    assert main(["x * 1e400"]) == 2  # the caret sits under the literal that overflows
    text, caret, *_ = capsys.readouterr().err.splitlines()
    assert (text, caret.split(":")[0]) == ("x * 1e400", "    ^ column 5")
    assert "too large for a 64-bit float" in caret
