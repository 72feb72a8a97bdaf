"""Worker methods ``explain.*``: the numbers behind the page's "How it works" and "Run it".

    explain.dual_trace   {x, expr}          each operation of f at x, as a tang.Dual: value, ε
    explain.lower_lines  {expr, grad}       one graph printed by all eight backends, with the
                                            node ↔ line map (to highlight a node everywhere)
    explain.run_slice    {expr, axis, ...}  f and ∂f/∂axis along a grid over one input (the
                                            others fixed), on WebGPU/wgpu and on the CPU,
                                            compared point by point, min/max per plot bin

Everything is computed by tang here, from the expression text given (parsed safely, never
executed). Numbers that JSON cannot hold travel as the strings "nan", "inf" and "-inf".
"""

from __future__ import annotations

import math
from array import array
from functools import lru_cache
from typing import Any

import tang.gpu as gpu
from demos import _gpu_check as gpu_check
from demos.api import handler
from demos.common import device_choice, finite_param, json_number
from tang.compile import compile_function, definition_text, function_graph
from tang.dual import Dual
from tang.expr import ops
from tang.expr.graph import Graph, Node, topo_order
from tang.expr.text import literal
from tang.expr.trace import REPLAY
from tang.gpu.batch import evaluate, evaluate_async
from tang.lower.plan import Plan

MAX_STEPS = 80  # rows a figure may show: beyond that a table stops explaining anything
MAX_GRID = 1 << 22  # points along one axis for "Run it"
MAX_CHUNK = 1 << 18  # points computed in one call (the page calls again for the next chunk)
MAX_BINS = 4096

# How each primitive reads in a figure, over the names of its operands, and the rule it
# applies to the ε part (a, b: operands; da, db: their ε parts): the op registry's.
SPELLING: dict[str, str] = ops.SPELLING
EPSILON_RULE: dict[str, str] = ops.EPSILON_RULE


def _graph(expr: str, must_have: str | None = None) -> Graph:
    """Parse ``expr``; undeclared inputs are the variables among x, y, z it uses (plus
    ``must_have``, so that a constant still has an axis)."""
    if not isinstance(expr, str):
        raise TypeError(f"expr must be a string, got {type(expr).__name__}")
    return function_graph(expr, must_have=must_have)


def _names(order: list[Node]) -> dict[Node, str]:
    """Row names: variables by name, constants by value, every operation v0, v1, …"""
    names: dict[Node, str] = {}
    k = 0
    for node in order:
        if node.op == "var":
            names[node] = node.name  # type: ignore[assignment]
        elif node.op == "const":
            names[node] = literal(node.value)  # type: ignore[arg-type]
        else:
            names[node] = f"v{k}"
            k += 1
    return names


def _rows(outputs: tuple[Node, ...] | list[Node]) -> tuple[list[Node], dict[Node, str]]:
    order = [n for n in topo_order(list(outputs)) if n.op != "const"]
    if len(order) > MAX_STEPS:
        raise ValueError(f"the graph has {len(order)} nodes; a figure shows at most {MAX_STEPS}")
    return order, _names(topo_order(list(outputs)))


def _formula(node: Node, names: dict[Node, str]) -> str:
    if node.op == "var":
        return node.name  # type: ignore[return-value]
    return SPELLING[node.op].format(*(names[a] for a in node.args))


@handler("explain.dual_trace")
def dual_trace(x: float = 1.0, expr: str = "x*sin(x)") -> dict[str, Any]:
    """f(x + ε) one operation at a time: each node of ``expr`` (one variable) on tang.Dual."""
    x = finite_param(x, "x")
    graph = _graph(expr)
    if len(graph.inputs) != 1:
        raise ValueError(f"the dual-number figure takes one variable, got {len(graph.inputs)}")
    (name,) = graph.inputs
    order, names = _rows(graph.outputs)
    duals: dict[Node, Any] = {}
    for node in topo_order(list(graph.outputs)):
        if node.op == "const":
            duals[node] = node.value
        elif node.op == "var":
            duals[node] = Dual(x, 1.0)  # x + 1·ε: the slope along x
        else:
            duals[node] = REPLAY[node.op](*(duals[a] for a in node.args))
    steps = []
    for node in order:
        d = duals[node]
        value, eps = (d.value, d.tangent) if isinstance(d, Dual) else (d, 0.0)
        boolean = isinstance(value, bool)
        steps.append(
            {
                "serial": node.serial,
                "name": names[node],
                "op": node.op,
                "formula": _formula(node, names),
                "rule": EPSILON_RULE[node.op],
                "value": value if boolean else json_number(float(value)),
                "eps": None if boolean else json_number(float(eps)),
            }
        )
    out = steps[-1] if steps else {"value": json_number(float(graph.outputs[0].value)), "eps": 0.0}
    return {
        "expr": expr,
        "variable": name,
        "x": x,
        "steps": steps,
        "value": out["value"],
        "derivative": out["eps"],
    }


@handler("explain.lower_lines")
def lower_lines(expr: str = "x*sin(x)", grad: bool = True) -> dict[str, Any]:
    """``expr`` (and its gradient) as one small graph, and its kernel in every backend with
    each line's node serials, one node per line (nothing inlined) so lines align by node."""
    from tang.lower import BACKENDS

    compiled = compile_function(_graph(expr), grad=bool(grad), inline=False)
    p = compiled.plan
    order, names = _rows(p.outputs)
    nodes = [
        {"serial": n.serial, "name": names[n], "formula": _formula(n, names), "op": n.op}
        for n in order
    ]
    backends = []
    for backend in BACKENDS:
        low = compiled.kernel(backend)
        backends.append(
            {
                "name": backend,
                "source": low.source,
                "lines": {str(k): v for k, v in low.line_serials().items()},
            }
        )
    outputs = [{"name": nm, "serial": o.serial} for nm, o in zip(p.names, p.outputs, strict=True)]
    return {"inputs": list(p.inputs), "outputs": outputs, "nodes": nodes, "backends": backends}


@lru_cache(maxsize=32)
def _plan(expr: str, axis: str | None, grad: bool) -> Plan:
    """The value and (with ``grad``) its derivatives; with ``axis``: only ∂/∂axis."""
    full = compile_function(_graph(expr, axis), grad=grad).plan
    if not grad or axis is None:
        return full
    if axis not in full.inputs:
        raise ValueError(f"no input named {axis!r} (inputs: {', '.join(full.inputs)})")
    k = full.inputs.index(axis)
    return Plan(
        full.inputs, (full.outputs[0], full.outputs[1 + k]), (full.names[0], full.names[1 + k])
    )


def _bins(col: array, start: int, n: int, bins: int) -> tuple[int, list, list]:
    """Min and max of the finite values per plot bin (bin of point i: i·bins // n), for the
    bins that points start … start+len(col)-1 fall in; None for a bin with none finite."""
    first = start * bins // n
    last = (start + len(col) - 1) * bins // n
    lo: list[float | None] = [None] * (last - first + 1)
    hi: list[float | None] = [None] * (last - first + 1)
    isfinite = math.isfinite
    for j, v in enumerate(col):
        if isfinite(v):
            b = (start + j) * bins // n - first
            cur = lo[b]
            if cur is None:
                lo[b] = hi[b] = v
            elif v < cur:
                lo[b] = v
            elif v > hi[b]:  # type: ignore[operator]
                hi[b] = v
    return first, lo, hi


def _slope(p: Plan, axis: str, pts: dict[str, array]):
    """slope(k, x): ∂(output k)/∂axis at x, the other inputs as in ``pts``, by tang.Dual."""
    held = {name: col[0] for name, col in pts.items() if name != axis}

    def slope(k: int, x: float) -> float:
        duals: dict[Node, Any] = {}
        for node in topo_order([p.outputs[k]]):
            if node.op == "const":
                duals[node] = node.value
            elif node.op == "var":
                duals[node] = Dual(x, 1.0) if node.name == axis else held.get(node.name, 1.0)
            else:
                duals[node] = REPLAY[node.op](*(duals[a] for a in node.args))
        d = duals[p.outputs[k]]
        return float(d.tangent) if isinstance(d, Dual) else 0.0

    return slope


def grid_points(
    inputs: tuple[str, ...],
    axis: str,
    lo: float,
    hi: float,
    n: int,
    start: int,
    count: int,
    fixed: dict[str, float],
) -> dict[str, array]:
    """Points start … start+count-1 of the grid x_i = lo + (hi-lo)·i/(n-1) along ``axis``
    (f32), every other input held at ``fixed[name]`` (default 1)."""
    step = (hi - lo) / (n - 1) if n > 1 else 0.0
    cols = {axis: array("f", [lo + step * i for i in range(start, start + count)])}
    for name in inputs:
        if name != axis:
            cols[name] = array("f", [float(fixed.get(name, 1.0))]) * count
    return cols


@handler("explain.run_slice")
async def run_slice(
    expr: str,
    axis: str | None = None,
    lo: float = -4.0,
    hi: float = 4.0,
    n: int = 16384,
    start: int = 0,
    count: int | None = None,
    fixed: dict[str, float] | None = None,
    bins: int = 512,
    device: str = "auto",
    check: bool = True,
) -> dict[str, Any]:
    """f and ∂f/∂axis at points start … start+count-1 of an ``n``-point grid over [lo, hi]
    along ``axis`` (default: the first input), the other inputs held at ``fixed`` (names that
    are not inputs are ignored: the sliders outlive an edit), on the best device and (with
    ``check``) on the CPU, compared; the page calls chunk after chunk and merges the bins."""
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"the range must be finite with lo < hi, got [{lo}, {hi}]")
    if not isinstance(n, int) or not 1 <= n <= MAX_GRID:
        raise ValueError(f"n must be an integer from 1 to {MAX_GRID:,}, got {n!r}")
    count = min(n - start, MAX_CHUNK) if count is None else count
    if not (isinstance(start, int) and isinstance(count, int)):
        raise ValueError("start and count must be integers")
    if not (0 <= start < n and 1 <= count <= MAX_CHUNK and start + count <= n):
        raise ValueError(f"start and count must pick 1 to {MAX_CHUNK:,} of the {n:,} points")
    if not isinstance(bins, int) or not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be an integer from 1 to {MAX_BINS}, got {bins!r}")
    fixed = fixed or {}
    if not isinstance(fixed, dict) or not all(
        isinstance(v, int | float) and math.isfinite(v) for v in fixed.values()
    ):
        raise ValueError("fixed must map input names to finite numbers")
    choice = device_choice(device)

    if axis is None:
        axis = next(iter(_graph(expr).inputs), "x")
    p = _plan(expr, axis, True)
    bins = min(bins, n)
    pts = grid_points(p.inputs, axis, lo, hi, n, start, count, fixed)
    dev = await gpu.device_async(choice, fallback=device != "gpu")
    batch = await evaluate_async(p, pts, device=dev, fallback=device != "gpu")
    result: dict[str, Any] = {
        "inputs": list(p.inputs),
        "axis": axis,
        "outputs": list(p.names),
        "definition": definition_text(expr, p.names[0], p.inputs),
        "n": n,
        "start": start,
        "count": count,
        "device": batch.device,
        "device_name": dev.name,
        "fallback": batch.fallback,
        "report": dev.report,
        "seconds": {"device": sum(batch.seconds.values())},
        "check": None,
    }
    if check and batch.device != "cpu":
        cpu_batch = evaluate(p, pts, device="cpu")
        result["seconds"]["cpu"] = sum(cpu_batch.seconds.values())
        used = {n.op for n in topo_order(list(p.outputs))}
        adapter = gpu_check.adapter_math(dev.name, used)
        result["check"] = gpu_check.check(
            pts[axis], batch.columns, cpu_batch.columns, p.names, adapter, _slope(p, axis, pts)
        )
    first, f_lo, f_hi = _bins(batch.columns[0], start, n, bins)
    _, d_lo, d_hi = _bins(batch.columns[1], start, n, bins)
    result["plot"] = {"bins": bins, "first": first, "f": [f_lo, f_hi], "d": [d_lo, d_hi]}
    result["nonfinite"] = batch.nonfinite()
    return result
