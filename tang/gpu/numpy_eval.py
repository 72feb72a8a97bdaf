"""Graph outputs over numpy columns, vectorised in f64: the oracle the GPU tests compare
against and the numpy contender in ``benchmarks/gpu.py``. Optional (imports numpy), and
IEEE like ``tang.ieee``: ``recip(0) = inf``, ``log2(0) = -inf``, ``sqrt(-1) = nan``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..expr.graph import Node, as_node, topo_order
from ..expr.ops import OPS


def evaluate_numpy(
    outputs: Sequence[Node | float], columns: Mapping[str, Any], dtype: str = "float64"
) -> list[Any]:
    """Each output over all points: ``columns`` maps input names to equal-length arrays."""
    import numpy as np

    cols = {k: np.asarray(v, dtype=dtype) for k, v in columns.items()}
    n = len(next(iter(cols.values()))) if cols else 1
    outs = [as_node(o) for o in outputs]
    with np.errstate(all="ignore"):
        vals = _run(np, topo_order(outs), cols, n, dtype)
    return [np.broadcast_to(vals[id(o)], (n,)).astype(dtype) for o in outs]


def _run(np: Any, order: Sequence[Node], cols: Mapping[str, Any], n: int, dtype: str) -> dict:
    """Every node of ``order`` over the columns (variables by name)."""
    vals: dict[int, Any] = {}
    for node in order:
        if node.op == "const":
            vals[id(node)] = np.asarray(node.value, dtype=dtype)
        elif node.op == "var":
            if node.name not in cols:
                raise KeyError(f"no column for input {node.name!r}")
            vals[id(node)] = cols[node.name]
        elif node.op == "loop_out":
            vals[id(node)] = vals[id(node.args[0])][node.value]
        elif node.op == "loop":
            vals[id(node)] = _loop(np, node, [vals[id(a)] for a in node.args], n, dtype)
        else:
            rule = OPS[node.op].numpy  # each primitive's numpy spelling: the registry's
            vals[id(node)] = rule(np, *(vals[id(a)] for a in node.args))  # type: ignore[misc]
    return vals


def _loop(np: Any, node: Node, args: list[Any], n: int, dtype: str) -> list[Any]:
    """A loop node's states over all points: each point runs its own count of steps (the
    body runs to the largest count; a point past its own keeps its state)."""
    body = node.value
    k = body.nstate  # type: ignore[union-attr]
    counts = np.broadcast_to(args[0], (n,))
    state = [np.array(np.broadcast_to(a, (n,)), dtype=dtype) for a in args[1 : 1 + k]]
    names = [p.name for p in body.params]  # type: ignore[union-attr]
    env = dict(zip(names[1 + k :], args[1 + k :]))
    order = topo_order(body.outputs)  # type: ignore[union-attr]
    steps = int(counts.max()) if n else 0
    for i in range(steps):
        env[names[0]] = np.asarray(float(i), dtype=dtype)
        env.update(zip(names[1 : 1 + k], state))
        vals = _run(np, order, env, n, dtype)
        active = i < counts
        state = [np.where(active, vals[id(o)], s) for o, s in zip(body.outputs, state)]  # type: ignore[union-attr]
    return state
