"""Reference evaluation of comprehension graphs: pure Python over flat lists (the page, where
there is no numpy), and a numpy path (the desktop) that computes each comprehension over its
whole index domain at once. Both follow the IR literally — reads through views, the body per
index, the monoid's combine, the epilogue — so they are the oracle for every pass."""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..expr.graph import Node, Tape
from ..expr.vectorized import numpy_values
from .comprehension import Comprehension, Inline, Load, TensorGraph, TensorIRError
from .packed import decode


def evaluate(
    graph: TensorGraph, inputs: Mapping[str, Any], *, backend: str = "auto"
) -> dict[str, Any]:
    """The graph's outputs for ``inputs`` (name → nested lists or arrays). ``backend``:
    "numpy" (arrays out), "python" (nested lists out), or "auto" (numpy when present)."""
    if backend == "auto":
        try:
            import numpy  # noqa: F401

            backend = "numpy"
        except ImportError:
            backend = "python"
    missing = [k for k in graph.inputs if k not in inputs]
    if missing:
        raise TensorIRError(f"no value given for the inputs {missing}")
    if backend == "numpy":
        return _run_numpy(graph, inputs)
    if backend == "python":
        return _run_python(graph, inputs)
    raise ValueError(f"backend is 'auto', 'numpy' or 'python', not {backend!r}")


# ---------------------------------------------------------------------------------------
# pure Python


def _flat_inputs(graph: TensorGraph, inputs: Mapping[str, Any]) -> dict[str, list[float]]:
    """Every input as a flat list of numbers (a packed one decoded from its words)."""
    out = {}
    for k, shape in graph.inputs.items():
        kind = graph.packed.get(k)
        if kind is None:
            out[k] = _flatten(inputs[k], shape, k)
            continue
        values = decode(kind, inputs[k], math.prod(shape), f"input {k}")
        out[k] = values if isinstance(values, list) else values.tolist()
    return out


def _flatten(value: Any, shape: tuple[int, ...], name: str) -> list[float]:
    """Nested lists (or anything with ``tolist``) of ``shape`` → a flat list of floats."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    out: list[float] = []

    def walk(v: Any, depth: int) -> None:
        if depth == len(shape):
            if isinstance(v, (list, tuple)):
                raise TensorIRError(f"input {name}: nested deeper than its shape {shape}")
            out.append(float(v))
            return
        if not isinstance(v, (list, tuple)) or len(v) != shape[depth]:
            raise TensorIRError(f"input {name}: expected extent {shape[depth]} at depth {depth}")
        for item in v:
            walk(item, depth + 1)

    walk(value, 0)
    return out


def _nest(flat: Sequence[float], shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    step = math.prod(shape[1:])
    return [_nest(flat[k * step : (k + 1) * step], shape[1:]) for k in range(shape[0])]


class _PointEvaluator:
    """One comprehension, evaluated at one output index at a time."""

    def __init__(self, comp: Comprehension, buffers: Mapping[str, list[float]]) -> None:
        self.comp, self.buffers = comp, buffers
        self.names = comp.names
        self.body = Tape(comp.body)
        self.epilogue = Tape([comp.epilogue]) if comp.epilogue is not None else None
        self.combine = Tape(comp.monoid.combine) if comp.monoid is not None else None
        self.inner = {
            n: _PointEvaluator(r.comp, buffers)
            for n, r in comp.reads.items()
            if isinstance(r, Inline)
        }

    def at(self, out: Sequence[int]) -> float:
        comp = self.comp
        env: dict[str, int] = dict(zip(comp.index, out))
        leaf = self._reader(env)
        if not comp.reduce:
            return self.body.run(leaf)[0]
        state = list(comp.monoid.identity)  # type: ignore[union-attr]
        for _, _, last in self._fold(env, leaf):
            state = last
        return self._finish(env, leaf, state)

    def _reader(self, env: dict[str, int]) -> Callable[[str], float]:
        """The leaf values at the index ``env`` (updated in place as the reduction runs)."""
        comp, names = self.comp, self.names

        def leaf(name: str) -> float:
            if name in env:
                return float(env[name])
            read = comp.reads[name]
            if isinstance(read, Load):
                v = read.view
                position = v.offset + sum(s * env[n] for s, n in zip(v.strides, names) if s)
                buffer = self.buffers[read.source]
                if not 0 <= position < len(buffer):  # only under a guard that discards it
                    position = min(max(position, 0), len(buffer) - 1)
                return buffer[position]
            index = [
                c + sum(k * env[n] for k, n in zip(row, names) if k)
                for row, c in zip(read.index.rows, read.index.consts)
            ]
            return self.inner[name].at(index)

        return leaf

    def _fold(
        self, env: dict[str, int], leaf: Callable[[str], float]
    ) -> Iterator[tuple[tuple[int, ...], list[float], list[float]]]:
        """The reduction one point at a time: (point, body element, state after combining)."""
        monoid = self.comp.monoid
        assert monoid is not None and self.combine is not None
        state = list(monoid.identity)
        primes = [s + "'" for s in monoid.state]
        reduced = [n for n, _ in self.comp.reduce]
        for point in itertools.product(*(range(e) for _, e in self.comp.reduce)):
            env.update(zip(reduced, point))
            element = self.body.run(leaf)
            scope = dict(zip(monoid.state, state)) | dict(zip(primes, element))
            state = self.combine.run(scope.__getitem__)
            yield point, element, state

    def _finish(
        self, env: dict[str, int], leaf: Callable[[str], float], state: list[float]
    ) -> float:
        """The output from the reduced state: the epilogue, or the state's one component."""
        if self.epilogue is None:
            return state[0]
        for n, _ in self.comp.reduce:
            env[n] = 0
        scope = dict(zip(self.comp.monoid.state, state))  # type: ignore[union-attr]
        return self.epilogue.run(lambda name: scope[name] if name in scope else leaf(name))[0]

    def trace(self, out: Sequence[int]) -> dict[str, Any]:
        """``at(out)`` one reduction point at a time (see ``reduction_trace``)."""
        if not self.comp.reduce:
            raise TensorIRError(f"comprehension {self.comp.name} has no reduction to trace")
        env: dict[str, int] = dict(zip(self.comp.index, out))
        leaf = self._reader(env)
        steps, state = [], list(self.comp.monoid.identity)  # type: ignore[union-attr]
        for point, element, state in self._fold(env, leaf):
            steps.append({"point": point, "element": element, "state": state})
        return {"steps": steps, "value": self._finish(env, leaf, state)}


def reduction_trace(
    graph: TensorGraph, inputs: Mapping[str, Any], name: str, index: Sequence[int]
) -> dict[str, Any]:
    """Comprehension ``name`` of ``graph`` at output ``index``, folded one reduction point at
    a time in pure Python: ``{"steps": [{"point", "element", "state"}…], "value"}``, the
    state after each point's body element is combined, and the output (epilogue applied).
    The evaluator's own fold, exposed so a reduction can be shown step by step."""
    missing = [k for k in graph.inputs if k not in inputs]
    if missing:
        raise TensorIRError(f"no value given for the inputs {missing}")
    comp = graph[name]
    index = tuple(index)
    if len(index) != len(comp.shape) or not all(0 <= i < n for i, n in zip(index, comp.shape)):
        raise TensorIRError(f"index {list(index)} is outside {name}'s shape {list(comp.shape)}")
    buffers = _flat_inputs(graph, inputs)
    for c in graph.comprehensions[: graph.comprehensions.index(comp)]:
        point = _PointEvaluator(c, buffers)
        buffers[c.name] = [point.at(o) for o in itertools.product(*(range(e) for e in c.shape))]
    return _PointEvaluator(comp, buffers).trace(index)


def _run_python(graph: TensorGraph, inputs: Mapping[str, Any]) -> dict[str, Any]:
    buffers = _flat_inputs(graph, inputs)
    for comp in graph.comprehensions:
        point = _PointEvaluator(comp, buffers)
        buffers[comp.name] = [
            point.at(out) for out in itertools.product(*(range(e) for e in comp.shape))
        ]
    return {o: _nest(buffers[o], graph.output_shape(o)) for o in graph.outputs}


# ---------------------------------------------------------------------------------------
# numpy


def _numpy_nodes(np: Any, nodes: Sequence[Node], env: Mapping[str, Any]) -> list[Any]:
    return numpy_values(np, nodes, env, missing=_unbound)


def _unbound(name: str) -> TensorIRError:
    return TensorIRError(f"nothing gives the variable {name!r} a value")


def _numpy_comprehension(
    np: Any, comp: Comprehension, buffers: Mapping[str, Any], index: Mapping[str, Any], rank: int
) -> Any:
    """``comp`` at the output indices ``index`` (arrays broadcast over ``rank`` axes)."""
    m = len(comp.reduce)
    idx = {n: np.reshape(a, np.shape(a) + (1,) * m) for n, a in index.items()}
    for j, (n, e) in enumerate(comp.reduce):
        idx[n] = np.arange(e).reshape((1,) * (rank + j) + (e,) + (1,) * (m - j - 1))

    def reads(at: Mapping[str, Any], depth: int) -> dict[str, Any]:
        env: dict[str, Any] = {n: np.asarray(a, dtype=np.float64) for n, a in at.items()}
        for name, read in comp.reads.items():
            if isinstance(read, Load):
                v = read.view
                position = v.offset + sum(
                    (s * at[n] for s, n in zip(v.strides, comp.names) if s), 0
                )
                buffer = buffers[read.source]
                # a read may leave its buffer only under a guard that discards the value
                env[name] = buffer[np.clip(position, 0, buffer.size - 1)]
            else:
                inner = {
                    out: c + sum((k * at[n] for k, n in zip(row, comp.names) if k), 0)
                    for out, row, c in zip(read.comp.index, read.index.rows, read.index.consts)
                }
                inner = {
                    k: np.broadcast_to(v, (1,) * depth) if np.ndim(v) == 0 else v
                    for k, v in inner.items()
                }
                env[name] = _numpy_comprehension(np, read.comp, buffers, inner, depth)
        return env

    with np.errstate(all="ignore"):
        body = _numpy_nodes(np, comp.body, reads(idx, rank + m))
        if not m:
            return body[0]
        shape = np.broadcast_shapes(*(np.shape(a) for a in idx.values()))
        values = [np.broadcast_to(b, shape) for b in body]
        monoid = comp.monoid
        assert monoid is not None
        axes = tuple(range(rank, rank + m))
        if monoid.numpy is not None:
            state = [getattr(np, monoid.numpy)(values[0], axis=axes)]
        else:
            flat = [np.reshape(v, (*shape[:rank], -1)) for v in values]
            state = [np.full(shape[:rank], e) for e in monoid.identity]
            primes = [s + "'" for s in monoid.state]
            for k in range(flat[0].shape[-1]):
                scope = dict(zip(monoid.state, state)) | {
                    p: f[..., k] for p, f in zip(primes, flat)
                }
                state = [
                    np.broadcast_to(v, shape[:rank])
                    for v in _numpy_nodes(np, monoid.combine, scope)
                ]
        if comp.epilogue is None:
            return state[0]
        at = dict(index) | {n: 0 for n, _ in comp.reduce}
        env = reads(at, rank) | dict(zip(monoid.state, state))
        return _numpy_nodes(np, [comp.epilogue], env)[0]


def _numpy_strided(np: Any, comp: Comprehension, buffers: Mapping[str, Any]) -> Any:
    """``comp`` with each read a strided view of its buffer (no index arithmetic, no
    gather) and its body as one straight-line numpy function: the same values as
    ``_numpy_comprehension`` (the same body, the same numpy reducer over the same axes),
    in a fraction of its time. None where it does not apply (see ``_StridedPlan.of``)."""
    plan = _PLANS.get(comp)
    if plan is None:
        plan = _PLANS[comp] = _StridedPlan.of(np, comp)
    return plan.run(np, buffers) if plan else None


class _StridedPlan:
    """What ``_numpy_strided`` needs of a comprehension, worked out once: each read as
    (name, source, byte offset, shape, byte strides, last position), the body and the
    epilogue as numpy functions, the reducer and its axes."""

    def __init__(self, comp: Comprehension, reads: list, body: Any, epilogue: Any, np: Any):
        self.comp, self.reads, self.body, self.epilogue = comp, reads, body, epilogue
        rank, domain = len(comp.shape), comp.domain
        grid = tuple(e for _, e in domain)
        self.grid, self.axes = grid, tuple(range(rank, len(grid)))
        self.index = [  # index variables the bodies read as values
            np.arange(e, dtype=np.float64).reshape((1,) * k + (e,) + (1,) * (len(grid) - k - 1))
            for k, (_, e) in enumerate(domain)
        ]
        self.first = (slice(None),) * rank + (0,) * len(comp.reduce)
        self.reducer = getattr(np, comp.monoid.numpy) if comp.reduce else None  # type: ignore[union-attr]

    @staticmethod
    def of(np: Any, comp: Comprehension) -> _StridedPlan | bool:
        """The plan, or False for a comprehension it cannot run: a read of an inlined
        comprehension, an empty domain, a monoid numpy has no reducer for, several state
        components."""
        from ..expr.vectorized import numpy_function

        grid = tuple(e for _, e in comp.domain)
        if not all(isinstance(r, Load) for r in comp.reads.values()) or not all(grid):
            return False
        if comp.reduce and (comp.monoid is None or comp.monoid.numpy is None):
            return False
        if len(comp.body) != 1:
            return False
        reads = []
        for name, read in comp.reads.items():
            view = read.view  # type: ignore[union-attr]
            lo, hi = view.span()
            if lo < 0:
                return False
            shape = tuple(e if s else 1 for e, s in zip(grid, view.strides))
            strides = tuple(s * 8 for s in view.strides)
            reads.append((name, read.source, view.offset * 8, shape, strides, hi))  # type: ignore[union-attr]
        names = [r[0] for r in reads] + list(comp.names)
        try:
            body = numpy_function(np, comp.body[0], names)
            state = [comp.monoid.state[0]] if comp.reduce else []  # type: ignore[union-attr]
            after = None
            if comp.epilogue is not None:
                after = numpy_function(np, comp.epilogue, names + state)
        except KeyError:  # a variable neither a read nor an index: left to the general path
            return False
        return _StridedPlan(comp, reads, body, after, np)

    def run(self, np: Any, buffers: Mapping[str, Any]) -> Any:
        views = []
        for _, source, offset, shape, strides, hi in self.reads:
            buffer = buffers[source]
            if hi >= buffer.size or buffer.dtype != np.float64 or not buffer.flags.c_contiguous:
                return None  # a position a guard keeps out of the buffer: the general path
            views.append(np.ndarray(shape, np.float64, buffer, offset, strides))
        with np.errstate(all="ignore"):
            value = self.body(*views, *self.index)
            if self.reducer is None:
                return value
            total = self.reducer(np.broadcast_to(value, self.grid), axis=self.axes)
            if self.epilogue is None:
                return total
            first = self.first
            return self.epilogue(*(v[first] for v in views), *(i[first] for i in self.index), total)


_PLANS: weakref.WeakKeyDictionary[Comprehension, Any] = weakref.WeakKeyDictionary()


def _run_numpy(
    graph: TensorGraph, inputs: Mapping[str, Any], strided: bool = True
) -> dict[str, Any]:
    import numpy as np

    buffers: dict[str, Any] = {}
    for k, shape in graph.inputs.items():
        if k in graph.packed:
            buffers[k] = decode(graph.packed[k], inputs[k], math.prod(shape), f"input {k}")
            continue
        a = np.asarray(inputs[k], dtype=np.float64)
        if a.shape != shape:
            raise TensorIRError(f"input {k}: shape {a.shape}, expected {shape}")
        buffers[k] = a.ravel()
    for comp in graph.comprehensions:
        value = _numpy_strided(np, comp, buffers) if strided else None
        if value is None:
            rank = len(comp.shape)
            index = {
                n: np.arange(e).reshape((1,) * k + (e,) + (1,) * (rank - k - 1))
                for k, (n, e) in enumerate(zip(comp.index, comp.shape))
            }
            value = _numpy_comprehension(np, comp, buffers, index, rank)
        buffers[comp.name] = np.array(np.broadcast_to(value, comp.shape), dtype=np.float64).ravel()
    return {o: buffers[o].reshape(graph.output_shape(o)).copy() for o in graph.outputs}
