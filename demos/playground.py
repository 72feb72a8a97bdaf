"""Worker methods ``playground.*``: the hero editor's one round trip, text → eight kernels.

    playground.compile  {expr, grad=True, backends=None}
                        parse → gradient → simplify → schedule once → print for each backend
                        asked for (default all eight), plus the graph to draw

A parse error is an answer, not a failure: ``{"error": {message, column, position, end}}``
(1-based column, 0-based span), so the page can underline it. Everything else comes back as
``{"inputs", "outputs", "definition", "kernels": {backend: {source, lines}}, "graph",
"timing"}`` where ``outputs`` are named after the function (``g``, ``dg/da`` for
``g(a, b) = …``; ``f`` when the text declares none), ``definition`` reads it with its name
once (``f(x, y) = x*y`` for ``x*y``) and
``lines`` maps a kernel line (1-based) to the serials of the graph nodes it computes: the
page's hover link between the SVG and the code. The text is only ever read by tang's parser.

    python -m demos.playground 'f(x, y) = x*sin(y)' [--backend c]   the same, on a terminal
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from typing import Any

from demos._graph_summary import summarize
from demos.api import handler, warm_up_hook
from tang.compile import compile_function, definition_text, function_graph
from tang.expr import ops
from tang.expr.graph import Graph, Node, topo_order
from tang.expr.parse import ParseError
from tang.expr.text import loop_text
from tang.lower import BACKENDS

MAX_GRAPH_NODES = 160  # boxes drawn at most: past it, the outputs and the nodes nearest them

# op → the label drawn in its graph node (constants and variables draw their value/name)
LABELS: dict[str, str] = ops.LABELS


def parse_function(text: str) -> Graph:
    """The function ``text`` defines. Inputs: the ``f(a, b) = …`` declaration, else the
    x, y, z it uses (the compile pipeline's reading, ``tang.compile.function_graph``)."""
    return function_graph(text)


def build(text: str | Graph, grad: bool = True) -> tuple[Graph, list[str]]:
    """The graph to print for ``text`` (value, then each partial when ``grad``) and the
    output labels, as the compile pipeline makes them."""
    compiled = compile_function(text, grad=grad)
    return compiled.graph, list(compiled.names)


def layout(
    outputs: Sequence[Node], labels: Sequence[str], order: Sequence[Node] | None = None
) -> dict[str, Any]:
    """A layered drawing of the DAG: leaves in layer 0, each node one layer below its
    deepest operand; order within a layer by the barycentre of the operands (two sweeps).
    ``order``: the nodes, children first, when the caller has them (topo_order's). Past
    MAX_GRAPH_NODES it draws the outputs and the nodes nearest them, and one "⋯ N" box
    (op "more") for each operand left out, standing for the N hidden nodes under it."""
    order = topo_order(outputs) if order is None else order
    total = len(order)
    stubs: dict[Node, int] = {}  # a large graph: hidden operands drawn as "⋯ N" boxes
    if total > MAX_GRAPH_NODES:
        part = summarize(outputs, order, MAX_GRAPH_NODES)
        stubs = part.stubs
        order = [*stubs, *part.shown]  # the boxes are leaves: children first still holds
    args = {n: () if n in stubs else n.args for n in order}
    users: dict[Node, list[Node]] = {n: [] for n in order}
    for n in order:
        for a in args[n]:
            users[a].append(n)
    layer: dict[Node, int] = {}
    for n in order:  # children first: one pass gives the longest path from a leaf
        depth = 0
        for a in args[n]:
            if layer[a] >= depth:
                depth = layer[a] + 1
        layer[n] = depth
    for n in reversed(order):  # a constant sits just above its first user, not on top
        if n.op == "const" and users[n]:
            layer[n] = max(0, min(layer[u] for u in users[n]) - 1)
    rows: list[list[Node]] = [[] for _ in range(1 + max(layer.values(), default=0))]
    for n in order:
        rows[layer[n]].append(n)
    pos: dict[Node, float] = {}
    for row in rows:
        for k, n in enumerate(row):
            pos[n] = float(k)
    for neighbours, sweep in ((args, rows[1:]), (users, rows[-2::-1])):
        for row in sweep:
            key = {}
            for n in row:
                near = neighbours[n]
                if len(near) == 1:  # the usual cases, spelled out: same sums, less work
                    key[n] = pos[near[0]]
                elif len(near) == 2:
                    key[n] = (pos[near[0]] + pos[near[1]]) / 2
                else:
                    key[n] = sum([pos[m] for m in near]) / len(near) if near else pos[n]
            row.sort(key=key.__getitem__)
            for k, n in enumerate(row):
                pos[n] = float(k)
    width = max(len(r) for r in rows)
    names: dict[Node, list[str]] = {}
    for o, label in zip(outputs, labels, strict=True):
        names.setdefault(o, []).append(label)
    nodes = []
    for depth, row in enumerate(rows):
        shift = (width - len(row)) / 2
        for k, n in enumerate(row):
            node = {
                "id": n.serial,
                "op": "more" if n in stubs else n.op,
                "label": f"⋯ {stubs[n]}" if n in stubs else _label(n),
                "x": k + shift,
                "y": depth,
                "outputs": names.get(n, []),
            }
            if n in stubs:
                node["hidden"] = stubs[n]  # the hidden nodes this box stands for
                node["below"] = _label(n)  # the operation at its top
            elif n.op == "loop":  # one box, its body in words (tang.fori_loop)
                node["body"] = loop_text(n, max_nodes=400)
            nodes.append(node)
    edges = [[a.serial, n.serial] for n in order for a in args[n]]
    shown = len(order) - len(stubs)
    return {
        "nodes": nodes,
        "edges": edges,
        "total": total,
        "shown": shown,
        "hidden": total - shown,
        "limit": MAX_GRAPH_NODES,
    }


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1e3


def _label(n: Node) -> str:
    if n.op == "var":
        return str(n.name)
    if n.op == "const":
        v = float(n.value)  # type: ignore[arg-type]
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return f"{v:.4g}"
    if n.op == "loop":
        count = n.args[0]
        return f"loop ×{count.value:.0f}" if count.op == "const" else "loop"  # type: ignore[union-attr]
    if n.op == "loop_out":
        return f"s{n.value}"  # the state it reads after the last step
    return LABELS.get(n.op, n.op)


# The last answer, under its function: nodes are interned, so text that parses to the same
# graph (a space typed, a redundant parenthesis) is the same node, and the answer stands.
# ``compiled`` keeps the schedule, so a backend asked for later is printed, not recompiled.
_last: dict[str, Any] = {"key": None, "answer": None, "compiled": None}


@handler("playground.compile")
def compile_expression(
    expr: str, grad: bool = True, backends: Sequence[str] | None = None
) -> dict[str, Any]:
    """Parse, differentiate, simplify and lower ``expr``; print it for ``backends`` (default:
    all eight). The page asks for the tab it shows, and for another when that tab opens:
    the function is compiled once and each printer runs once per function."""
    if not isinstance(expr, str):
        raise TypeError(f"expr must be a string, got {type(expr).__name__}")
    wanted = _backends(backends)
    t0 = time.perf_counter()
    try:
        function = parse_function(expr)
        # holds the nodes: ids stay; the name too, since g(x) = x names its outputs g
        key = (function.outputs, function.inputs, function.name, bool(grad))
        definition = definition_text(expr, function.name, function.inputs)
        same = key == _last["key"]
        if not same:
            _last.update(key=None, answer=None, compiled=None)  # no stale answer on a failure
            compiled, first, timing = _compile(function, bool(grad), t0)
            _last.update(key=key, answer=first, compiled=compiled)
    except ParseError as err:
        return {
            "error": {
                "message": err.message,
                "column": err.column,
                "position": err.position,
                "end": err.end,
            },
            "timing": {"python_ms": _ms(t0)},
        }
    t1 = time.perf_counter()
    kernels = _print(_last["compiled"], _last["answer"]["kernels"], wanted)
    printed = _ms(t1)
    answer = {**_last["answer"], "kernels": kernels, "definition": definition}
    if same:
        return {**answer, "timing": {"python_ms": _ms(t0), "same_function": True}}
    return {**answer, "timing": {**timing, "lower_ms": printed, "python_ms": _ms(t0)}}


def _backends(backends: Sequence[str] | None) -> list[str]:
    """The backend names asked for, checked (None: all of them, in the registry's order)."""
    if backends is None:
        return list(BACKENDS)
    if isinstance(backends, str) or not all(isinstance(b, str) for b in backends):
        raise TypeError("backends must be a list of backend names")
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise ValueError(f"unknown backend {unknown[0]!r}; choose from {', '.join(BACKENDS)}")
    return list(backends)


def _print(compiled: Any, cache: dict[str, Any], wanted: list[str]) -> dict[str, Any]:
    """The kernels of ``wanted``, each printed once per function (``cache`` keeps them)."""
    for name in wanted:
        if name not in cache:
            low = compiled.kernel(name)
            cache[name] = {"source": low.source, "lines": low.line_serials()}
    return {name: cache[name] for name in wanted}


def _compile(function: Graph, grad: bool, t0: float) -> tuple[Any, dict, dict[str, float]]:
    """The compiled ``function``, its answer (kernels not printed yet: an empty cache) and
    the timing in ms since ``t0`` (the start of the request), by phase."""
    compiled = compile_function(function, grad=grad)  # grad, simplify, one schedule
    graph, labels, prog = compiled.graph, list(compiled.names), compiled.program
    t1 = time.perf_counter()
    drawing = layout(graph.outputs, labels, prog.nodes or None)
    t2 = time.perf_counter()
    answer = {"inputs": list(graph.inputs), "outputs": labels, "kernels": {}, "graph": drawing}
    timing = {
        "python_ms": (t2 - t0) * 1e3,
        "parse_grad_ms": (t1 - t0) * 1e3,
        "lower_ms": 0.0,
        "layout_ms": (t2 - t1) * 1e3,
    }
    return compiled, answer, timing


# What the worker compiles in idle moments after boot (web/worker.js): V8 runs WebAssembly
# from a quick baseline compile first and optimizes a function only after it has run a
# while, so until then Python runs at about half speed. Between them these functions use
# every primitive, and each compile prints all eight backends and lays out the graph.
WARM_UP: tuple[str, ...] = (
    "f(x, y) = x*sin(y)",
    "exp(-x^2/2) * cos(3*y) + sqrt(x^2 + y^2 + 1)",
    "where(x < y, tanh(x), log(1 + y^2)) / (1 + atan2(y, x)^2)",
    "max(x, y) - min(x, z) * pow(abs(z) + 1, 1.5) + sigmoid(x*y*z)",
)
WARM_UP_STEPS = 64


@warm_up_hook
def warm_up(step: int) -> bool:
    """Compile warm-up function number ``step`` (the answer is dropped; the editor's last
    answer stays); False once the warm-up is done."""
    compiled, _, _ = _compile(parse_function(WARM_UP[step % len(WARM_UP)]), True, 0.0)
    _print(compiled, {}, list(BACKENDS))
    return step + 1 < WARM_UP_STEPS


def main(argv: Sequence[str] | None = None) -> int:
    """Print one backend's kernel (or, with --json, the whole answer the page receives)."""
    p = argparse.ArgumentParser(
        prog="python -m demos.playground", description=__doc__.split("\n")[0]
    )
    p.add_argument("expr", help="e.g. 'f(x, y) = x*sin(y)'")
    p.add_argument("--backend", default="wgsl", choices=list(BACKENDS))
    p.add_argument("--no-grad", action="store_true", help="the value only")
    p.add_argument("--json", action="store_true", help="print the worker's JSON answer")
    args = p.parse_args(argv)
    out = compile_expression(
        args.expr, grad=not args.no_grad, backends=None if args.json else [args.backend]
    )
    if args.json:
        print(json.dumps(out, indent=1))
        return 0 if "error" not in out else 2
    if "error" in out:
        e = out["error"]
        print(
            f"{args.expr}\n{' ' * e['position']}^ column {e['column']}: {e['message']}",
            file=sys.stderr,
        )
        return 2
    print(out["kernels"][args.backend]["source"], end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
