"""Function → graph (``trace``) and graph → any number type (``replay``).

Tracing calls the user's function once with variable nodes; because nodes are interned,
the result is already a DAG with every common subexpression shared. Replaying walks a
graph in order and applies each primitive's number-generic function, so the same graph can run on
floats, Duals (forward mode over a gradient graph: Hessian-vector products) or nodes
(substitution).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .generic import PRIMITIVES
from .graph import Graph, Node, building, topo_order, var


def trace(f: Callable[..., Any], names: Sequence[str] | str | None = None) -> Graph:
    """Call ``f`` on variable nodes named ``names`` (default: its parameter names) and
    return the Graph of its result; ``f`` may return one number or a sequence of them."""
    if names is None:
        names = _parameter_names(f)
    elif isinstance(names, str):
        names = [n for n in names.replace(",", " ").split() if n]
    names = list(names)
    if len(set(names)) != len(names):
        raise ValueError(f"variable names must be distinct: {names}")
    with building():
        out = f(*(var(n) for n in names))
    outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    for i, o in enumerate(outputs):
        if isinstance(o, bool) or not isinstance(o, (Node, int, float)):
            what = "a comparison" if isinstance(o, bool) else type(o).__name__
            raise TypeError(f"output {i} of the traced function is {what}, not a number")
    return Graph(names, outputs)


def _parameter_names(f: Callable[..., Any]) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = inspect.signature(f).parameters.values()
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        raise TypeError("a function taking *args needs explicit names: trace(f, ['x', 'y'])")
    return [p.name for p in params if p.kind in kinds and p.default is p.empty]


# primitive -> the number-generic function that computes it (tang.expr.generic)
REPLAY: dict[str, Callable[..., Any]] = PRIMITIVES


def replay(graph: Graph, values: Mapping[str, Any] | Sequence[Any]) -> list[Any]:
    """Evaluate ``graph`` on any number type; ``values`` maps input names, or lists them
    in input order. Variables not among the inputs stay as they are (nodes)."""
    if not isinstance(values, Mapping):
        values = list(values)
        if len(values) != len(graph.inputs):
            raise ValueError(f"expected {len(graph.inputs)} values, got {len(values)}")
        values = dict(zip(graph.inputs, values, strict=True))
    result: dict[int, Any] = {}
    with building():
        for node in topo_order(graph.outputs):
            if node.op == "const":
                result[id(node)] = node.value
            elif node.op == "var":
                result[id(node)] = values.get(node.name, node)  # type: ignore[arg-type]
            elif node.op in REPLAY:
                result[id(node)] = REPLAY[node.op](*(result[id(a)] for a in node.args))
            elif node.op == "loop_out":
                result[id(node)] = result[id(node.args[0])][node.value]  # type: ignore[index]
            else:  # a loop: fori_loop over its body, on these number types
                args = [result[id(a)] for a in node.args]
                result[id(node)] = node.value.replay(node, args)  # type: ignore[union-attr]
    return [result[id(o)] for o in graph.outputs]
