"""Worker methods ``tensor_ir.*``: the numbers behind How it works 3 and 4, from ``tang.tensor``.

    tensor_ir.views      {shape, ops}          a chain of views over a source matrix: each
                                               step's View, the printed IR, and for every
                                               output cell the source element it reads
    tensor_ir.attention  {n, d, queries, row,  attention as written and as derived by fuse +
                          seed}                stabilize_softmax: both printed forms, the
                                               buffers each writes per query row, and the
                                               online state (m, l, acc) key by key for one row

Everything is computed by the library: views by ``tang.tensor.View``, reads through the
graph's own ``Load`` views, values by ``tensor.evaluate`` and the key-by-key state by folding
the derived comprehension's monoid (``tensor.reduction_trace``). Pure Python (Pyodide).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from demos.api import handler
from demos.common import json_number
from tang import tensor
from tang.tensor.comprehension import Load, TensorGraph
from tang.tensor.view import row_major

# a float is 4 bytes on the device (f32); the evaluator computes in float64
ITEMSIZE = 4
MAX_EXTENT, MAX_RANK, MAX_OPS, MAX_CELLS = 8, 3, 12, 512


# ---------------------------------------------------------------------------------------
# views


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    return value


def _optional_int(value: Any, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _shape(value: Any, what: str, limit: int) -> tuple[int, ...]:
    if not isinstance(value, list | tuple) or not 1 <= len(value) <= MAX_RANK:
        raise ValueError(f"{what} must be a list of 1 to {MAX_RANK} extents, got {value!r}")
    shape = tuple(_int(n, f"{what}[{k}]") for k, n in enumerate(value))
    if any(not 1 <= n <= limit for n in shape):
        raise ValueError(f"{what}: each extent is between 1 and {limit}, got {list(shape)}")
    return shape


def _slice_text(axis: int, text: str) -> str:
    """numpy's spelling of indexing one axis: ``[:, ::2]``."""
    return "[" + ", ".join([":"] * axis + [text]) + "]"


def _apply(t: tensor.Tensor, op: Any, where: str) -> tuple[tensor.Tensor, str]:
    """One step of a view chain (a JSON object) applied to ``t``: (result, Python spelling)."""
    if not isinstance(op, dict) or not isinstance(op.get("op"), str):
        raise ValueError(f"{where}: a step is an object like {{'op': 'transpose'}}, got {op!r}")
    kind = op["op"]
    axis = _int(op.get("axis", 0), f"{where}.axis")
    try:
        if kind == "transpose":
            return t.T, ".T"
        if kind in ("slice", "stride"):
            if kind == "stride":
                start, stop, step = None, None, _int(op.get("step", 2), f"{where}.step")
            else:
                start = _optional_int(op.get("start"), f"{where}.start")
                stop = _optional_int(op.get("stop"), f"{where}.stop")
                step = _optional_int(op.get("step"), f"{where}.step")
            if not -t.ndim <= axis < t.ndim:
                raise ValueError(f"axis {axis} is out of range for rank {t.ndim}")
            key = [slice(None)] * (axis % t.ndim) + [slice(start, stop, step)]
            out = t[tuple(key)]
            if 0 in out.shape:
                raise ValueError(f"the slice leaves axis {axis} empty")
            text = ":".join("" if v is None else str(v) for v in (start, stop))
            text += "" if step is None else f":{step}"
            return out, _slice_text(axis % t.ndim, text)
        if kind == "broadcast":
            shape = _shape(op.get("shape"), f"{where}.shape", 64)
            return t.broadcast_to(shape), f".broadcast_to({tuple(shape)})"
        if kind == "expand":
            return t.expand_dims(axis), _slice_text(axis % (t.ndim + 1), "None")
        if kind == "index":
            i = _int(op.get("i", 0), f"{where}.i")
            if not -t.ndim <= axis < t.ndim or t.ndim == 1:
                raise ValueError(f"cannot index axis {axis} of a tensor of rank {t.ndim}")
            return t[tuple([slice(None)] * (axis % t.ndim) + [i])], _slice_text(
                axis % t.ndim, str(i)
            )
        if kind == "reshape":
            shape = _shape(op.get("shape"), f"{where}.shape", MAX_CELLS)
            return t.reshape(shape), f".reshape({', '.join(map(str, shape))})"
    except (ValueError, IndexError, TypeError) as exc:
        raise ValueError(f"{where} ({kind}): {exc}") from None
    raise ValueError(
        f"{where}: unknown step {kind!r} (transpose, slice, stride, broadcast, expand, index, "
        "reshape)"
    )


def _unravel(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    return tuple((flat // s) % n for s, n in zip(row_major(shape), shape))


def source_position(graph: TensorGraph, name: str, flat: int) -> tuple[str, int]:
    """The input and flat position that element ``flat`` of buffer ``name`` reads, following
    each element-wise copy's one read through its view (the IR's index map applied)."""
    while name not in graph.inputs:
        comp = graph[name]
        loads = list(comp.reads.values())
        if comp.reduce or len(loads) != 1 or not isinstance(loads[0], Load):
            raise ValueError(f"{name} is not a copy through one view: {comp.name}")
        flat = loads[0].view.address(_unravel(flat, comp.shape))
        name = loads[0].source
    return name, flat


def _view_json(t: tensor.Tensor) -> dict[str, Any]:
    v = t.view
    return {
        "buffer": t.buffer.name if t.buffer.name.isidentifier() else "copy",
        "shape": list(v.shape),
        "strides": list(v.strides),
        "offset": v.offset,
        "contiguous": v.is_contiguous,
    }


@handler("tensor_ir.views")
def views(shape: Sequence[int] = (4, 6), ops: Sequence[Any] = ()) -> dict[str, Any]:
    """Apply the chain ``ops`` to a source ``x`` of ``shape`` holding 0, 1, 2, … (each element
    its own flat position): every step's View, the copies it needed (none unless a reshape is
    not affine), the printed IR of the result, and for each output cell (row-major) the source
    index it reads, taken from the graph's read views."""
    source = _shape(list(shape), "shape", MAX_EXTENT)
    if not isinstance(ops, list | tuple) or len(ops) > MAX_OPS:
        raise ValueError(f"ops is a list of at most {MAX_OPS} steps")
    x = tensor.input("x", source)
    t, steps = x, [{"label": "x", "copied": 0, **_view_json(x)}]
    for k, op in enumerate(ops):
        before = t.buffer
        t, label = _apply(t, op, f"ops[{k}]")
        # a view keeps its buffer; only a non-affine reshape materialises a new one
        copied = 0 if t.buffer is before else math.prod(t.buffer.shape)
        if math.prod(t.shape) > MAX_CELLS:
            raise ValueError(
                f"ops[{k}]: the view has {math.prod(t.shape)} cells (at most {MAX_CELLS})"
            )
        steps.append({"label": label, "copied": copied, **_view_json(t)})
    graph = tensor.graph(y=t)
    out = graph.outputs[0]
    cells = []
    for flat in range(math.prod(graph.output_shape(out))):
        name, position = source_position(graph, out, flat)
        cells.append(list(_unravel(position, graph.inputs[name])))
    values = tensor.evaluate(
        graph, {"x": _nested(list(range(math.prod(source))), source)}, backend="python"
    )[out]
    return {
        "source": {"shape": list(source)},
        "steps": steps,
        "ir": str(graph),
        "ir_lines": [str(line) for line in str(graph).splitlines()],
        "output": {"shape": list(graph.output_shape(out)), "values": _flat(values)},
        "reads": cells,
        "elements_copied": sum(step["copied"] for step in steps),
        "bytes_copied": ITEMSIZE * sum(step["copied"] for step in steps),
    }


def _nested(flat: list[float], shape: Sequence[int]) -> Any:
    if len(shape) == 1:
        return [float(v) for v in flat]
    step = math.prod(shape[1:])
    return [_nested(flat[k * step : (k + 1) * step], shape[1:]) for k in range(shape[0])]


def _flat(value: Any) -> list[float]:
    if isinstance(value, list):
        return [v for item in value for v in _flat(item)]
    return [value]


# ---------------------------------------------------------------------------------------
# attention, as written and derived


def attention_graphs(n: int, d: int, queries: int) -> tuple[TensorGraph, TensorGraph]:
    """softmax(q kᵀ/√d) v for one head as written, and after ``fuse`` then
    ``stabilize_softmax`` (the derived online reduction)."""
    q = tensor.input("q", (1, 1, queries, d))
    k = tensor.input("k", (1, 1, n, d))
    v = tensor.input("v", (1, 1, n, d))
    written = tensor.graph(o=tensor.attention(q, k, v))
    return written, tensor.stabilize_softmax(tensor.fuse(written))


def memory_per_row(graph: TensorGraph, rows: int) -> dict[str, Any]:
    """The buffers ``graph`` writes (one per comprehension), each with its elements per query
    row (its size over the ``rows`` query rows), and the totals."""
    buffers = [
        {"name": c.name, "shape": list(c.shape), "per_row": c.size // rows}
        for c in graph.comprehensions
    ]
    total = sum(b["per_row"] for b in buffers)
    return {"buffers": buffers, "elements": total, "bytes": ITEMSIZE * total}


def _all_buffers(graph: TensorGraph) -> TensorGraph:
    """The same graph with every buffer an output (to show the intermediates)."""
    return TensorGraph(graph.inputs, graph.comprehensions, [c.name for c in graph.comprehensions])


def example_inputs(n: int, d: int, queries: int, seed: int) -> dict[str, Any]:
    """Gaussian q, k, v (pure Python), q scaled so the running max moves."""
    rng = random.Random(seed)

    def block(rows: int, scale: float) -> list:
        return [[[[rng.gauss(0.0, scale) for _ in range(d)] for _ in range(rows)]]]

    return {"q": block(queries, 1.5), "k": block(n, 1.0), "v": block(n, 1.0)}


@handler("tensor_ir.attention")
def attention(n: int = 8, d: int = 4, queries: int = 4, row: int = 0, seed: int = 4) -> dict:
    """Attention over ``n`` keys of width ``d`` for ``queries`` query rows: both printed forms,
    the memory each writes per query row (from the graphs' buffers), the as-written graph's
    per-row buffers for query ``row``, and the derived reduction folded key by key there."""
    n, d, queries = _int(n, "n"), _int(d, "d"), _int(queries, "queries")
    row, seed = _int(row, "row"), _int(seed, "seed")
    if not (2 <= n <= 32 and 1 <= d <= 8 and 1 <= queries <= 8):
        raise ValueError(f"n is 2…32, d 1…8 and queries 1…8; got n={n}, d={d}, queries={queries}")
    if not 0 <= row < queries:
        raise ValueError(f"row {row} is not one of the {queries} query rows")
    written, derived = attention_graphs(n, d, queries)
    inputs = example_inputs(n, d, queries, seed)
    # the as-written graph's every buffer, by the evaluator; its output row
    buffers = tensor.evaluate(_all_buffers(written), inputs, backend="python")
    rows_of = {c.name: c.size // queries for c in written.comprehensions}
    shown = []
    for c in written.comprehensions:
        flat = _flat(buffers[c.name])
        per = rows_of[c.name]
        shown.append({"name": c.name, "values": flat[row * per : (row + 1) * per]})
    naive_out = shown[-1]["values"]
    # the derived graph: one comprehension; fold its monoid key by key, one trace per column
    (final,) = derived.comprehensions
    lead = (0,) * (len(final.shape) - 2)
    traces = [
        tensor.reduction_trace(derived, inputs, final.name, (*lead, row, e)) for e in range(d)
    ]
    steps = []
    for j in range(n):
        per_column = [t["steps"][j] for t in traces]
        m, l_ = per_column[0]["state"][:2]
        steps.append(
            {
                "key": j,
                "score": per_column[0]["element"][0],
                "value": [s["element"][2] for s in per_column],
                "m": m,
                "l": l_,
                "acc": [s["state"][2] for s in per_column],
            }
        )
    derived_out = [t["value"] for t in traces]
    return {
        "n": n,
        "d": d,
        "queries": queries,
        "row": row,
        "written": {
            "ir": str(written),
            "memory": memory_per_row(written, queries),
            "buffers": _jsonable(shown),
            "output": [json_number(v) for v in naive_out],
        },
        "fused": {"memory": memory_per_row(tensor.fuse(written), queries)},
        "derived": {
            "ir": str(derived),
            "memory": memory_per_row(derived, queries),
            "state": list(final.monoid.state),  # type: ignore[union-attr]
            "steps": _jsonable(steps),
            "output": [json_number(v) for v in derived_out],
        },
        "max_difference": json_number(max(abs(a - b) for a, b in zip(naive_out, derived_out))),
    }


def _jsonable(value: Any) -> Any:
    """Nested lists/dicts with every float JSON-safe (nan/inf as strings)."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return json_number(value)
    return value
