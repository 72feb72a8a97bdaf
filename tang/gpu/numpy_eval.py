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
    vals: dict[int, Any] = {}
    with np.errstate(all="ignore"):
        for node in topo_order(outs):
            if node.op == "const":
                vals[id(node)] = np.asarray(node.value, dtype=dtype)
            elif node.op == "var":
                if node.name not in cols:
                    raise KeyError(f"no column for input {node.name!r}")
                vals[id(node)] = cols[node.name]
            else:
                rule = OPS[node.op].numpy  # each primitive's numpy spelling: the registry's
                vals[id(node)] = rule(np, *(vals[id(a)] for a in node.args))  # type: ignore[misc]
    return [np.broadcast_to(vals[id(o)], (n,)).astype(dtype) for o in outs]
