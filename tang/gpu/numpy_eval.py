"""Graph outputs over numpy columns, vectorised in f64: the oracle the GPU tests compare
against and the numpy contender in ``benchmarks/gpu.py``. Optional (imports numpy), and
IEEE like ``tang.ieee``: ``recip(0) = inf``, ``log2(0) = -inf``, ``sqrt(-1) = nan``. The
interpreter is ``tang.expr.vectorized``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..expr.graph import Node, as_node
from ..expr.vectorized import numpy_values


def evaluate_numpy(
    outputs: Sequence[Node | float], columns: Mapping[str, Any], dtype: str = "float64"
) -> list[Any]:
    """Each output over all points: ``columns`` maps input names to equal-length arrays."""
    import numpy as np

    cols = {k: np.asarray(v, dtype=dtype) for k, v in columns.items()}
    n = len(next(iter(cols.values()))) if cols else 1
    outs = [as_node(o) for o in outputs]
    with np.errstate(all="ignore"):
        values = numpy_values(np, outs, cols, points=n, dtype=dtype)
    return [np.broadcast_to(v, (n,)).astype(dtype) for v in values]
