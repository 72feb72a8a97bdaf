"""Run comprehension graphs on a ``tang.gpu`` device: WGSL kernels through wgpu-py on the
desktop or WebGPU in the page, the whole graph as one compiled C function on the C device,
Python kernels on the CPU device.

    fn = tensor.compile(graph)                 # kernels built once (cached per device)
    out = fn({"x": x, "w": w})                 # buffers stay on the device between calls
    out = tensor.run(graph, {"x": x, "w": w})  # the one-call spelling (compiles once too)

Inputs are numpy arrays (outputs come back as float32 arrays), ``array.array`` (outputs as
flat ``array('d')``) or lists, nested or flat (outputs as nested lists). An input left out of
a later call keeps its value on the device. ``Compiled.allocations`` records every buffer
the runtime created, so a test can check that no n×n buffer exists.
"""

from __future__ import annotations

import inspect
import math
import weakref
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .comprehension import TensorGraph, TensorIRError
from .evaluate import _flatten, _nest
from .kernels import (
    WGSL_BLOCK,
    WGSL_VECTOR_ROWS,
    GpuKernel,
    load_python,
    merged_kernel,
    planned,
    python_kernel,
    wgsl_kernel,
)
from .lower import REGISTER_DEFAULTS, buffer_order, lower_graph
from .packed import as_words, words
from .passes.schedule import TREE_WIDTH, Plan, eliminate_pinned, plan

_PYTHON_KERNELS: dict[str, Any] = {}  # source -> function: one kernel object per source


@dataclass(frozen=True)
class Allocation:
    """A device buffer the runtime created: ``role`` is "input" or "buffer" (written by the
    comprehension of that name); ``size`` in elements (4 bytes each)."""

    name: str
    role: str
    size: int

    @property
    def nbytes(self) -> int:
        return 4 * self.size


@dataclass(frozen=True)
class Step:
    """One dispatch: a compiled kernel over ``items`` invocations, bound to ``buffers``,
    computing the comprehensions ``parts`` (one, or several that share a dispatch; then
    ``name`` joins theirs and ``plan`` is the first one's)."""

    name: str
    kernel: Any  # tang.gpu Kernel
    buffers: tuple[str, ...]
    items: int
    plan: Plan
    source: str
    parts: tuple[str, ...] = ()


# what a schedule may set: the plan's options, the lanes of inline reductions, and whether
# comprehensions that do not read each other share a dispatch (``merge``, default True)
SCHEDULE_OPTIONS = frozenset(inspect.signature(plan).parameters) - {"comp"} | {
    "inline_lanes",
    "merge",
}


def dispatch_groups(graph: TensorGraph, plans: Mapping[str, Plan]) -> list[list[Any]]:
    """``graph``'s comprehensions in an order to dispatch them, grouped: those of one level
    (each reads only inputs and outputs of earlier levels) share a dispatch, but for those
    whose plan needs workgroups of their own (tiled, tree), which go alone."""
    level: dict[str, int] = {}
    for c in graph.comprehensions:
        level[c.name] = 1 + max((level[s] for s in c.sources() if s in level), default=0)
    groups: list[list[Any]] = []
    for lv in sorted(set(level.values())):
        here = [c for c in graph.comprehensions if level[c.name] == lv]
        shared = [c for c in here if plans[c.name].kind not in ("tiled", "tree")]
        groups += ([shared] if shared else []) + [[c] for c in here if c not in shared]
    return groups


def prefers_workgroups(device: Any) -> bool:
    """Whether the schedule's workgroup plans (tiles, combine trees) pay on ``device``: not
    on a software adapter, where a barrier is a switch between coroutines and workgroup
    memory is ordinary memory (measured with benchmarks/tensor.py on lavapipe: a 512³
    matmul per element beats the tiled one)."""
    from .. import gpu

    if device.printer != "wgsl":
        return False
    limits = device.limits
    if min(limits.max_invocations_per_workgroup, limits.max_workgroup_size_x) < TREE_WIDTH:
        return False  # a tile of 16 x 16 and a tree of 256 need 256 invocations
    return not gpu.software(device)


def _device(device: Any) -> Any:
    from .. import gpu

    if device is None:
        return gpu.device()
    if isinstance(device, str):
        return gpu.device(device, fallback=False)
    if not isinstance(device, gpu.Device):
        raise TypeError(f"device is a tang.gpu Device, a backend name or None, not {device!r}")
    return device


class Compiled:
    """``graph`` compiled for ``device``: one kernel per comprehension (built once per
    device), and one device buffer per input and per comprehension, kept between calls."""

    def __init__(
        self,
        graph: TensorGraph,
        device: Any = None,
        *,
        scheduled: bool = True,
        workgroups: bool | None = None,
        build: bool = True,
        schedule: Mapping[str, Any] | None = None,
    ) -> None:
        """``workgroups``: allow the schedule's tiled and combine-tree plans (default: where
        they pay, ``prefers_workgroups``). ``schedule``: options for the schedule's plans
        (``block``, ``lanes``, …; default: what ``tang.tensor.tune`` found best for this
        graph on this device, if it was tuned, else the schedule's defaults)."""
        if not isinstance(graph, TensorGraph):
            raise TypeError(f"compile takes a TensorGraph, not {type(graph).__name__}")
        self.graph = graph
        self.device = _device(device)
        self.scheduled = scheduled
        if schedule is None:
            from .tuning_cache import tuned

            schedule = tuned(graph, self.device) or {}
            if set(schedule) - SCHEDULE_OPTIONS:  # kept by another version of tang
                schedule = {}
            if workgroups is None:
                workgroups = schedule.get("workgroups")
        unknown = sorted(set(schedule) - SCHEDULE_OPTIONS)
        if unknown:
            known = ", ".join(sorted(SCHEDULE_OPTIONS))
            raise TypeError(f"unknown schedule option {unknown[0]!r} (known: {known})")
        if schedule.get("vector_keys", 1) != 1 and self.device.printer == "wgsl":
            raise TypeError(
                "schedule option 'vector_keys' is for compiled loop nests (the C device): in"
                " a WGSL kernel the blocks' loops have run-time lengths (5x slower on"
                " lavapipe, and past llvmpipe's 65,535 loop iterations per invocation)"
            )
        self.schedule = {k: v for k, v in schedule.items() if k not in ("workgroups", "merge")}
        self.merge = bool(schedule.get("merge", True))
        self.workgroups = prefers_workgroups(self.device) if workgroups is None else workgroups
        self.allocations: list[Allocation] = []
        self.buffers: dict[str, Any] = {}
        self._borrowed: set[str] = set()  # names bound to buffers this object does not own
        self._written: set[str] = set()
        self._kind = "list"  # the output kind the last inputs asked for
        shapes = {**graph.inputs, **graph.buffers()}
        for name, shape in graph.inputs.items():
            element = graph.packed.get(name)
            if element is None:
                self._allocate(name, "input", shape)
            else:  # the words that hold the elements
                self._allocate(name, "input", (words(element, math.prod(shape)),), "u32")
        self.steps: list[Step] = []
        for comp in graph.comprehensions:
            self._allocate(comp.name, "buffer", comp.shape)
        self._sources = self._kernels(shapes, self.merge)
        if build:
            self.build()

    def _kernels(self, shapes: dict, merge: bool) -> list[tuple]:
        """What ``build`` compiles, one entry per dispatch (``_source``'s tuples)."""
        graph = self.graph
        if self.device.printer == "c":  # one function over every buffer: one call per step
            from ..gpu.native_c import CKernel

            text = lower_graph(graph, "c", dtype="f32", scheduled=self.scheduled, **self.schedule)
            order = tuple(buffer_order(graph))
            return [("graph", CKernel(text), order, 1, Plan(), text)]
        if self.device.printer != "wgsl" or not (merge and self.scheduled):
            return [self._source(comp, None, shapes) for comp in graph.comprehensions]
        options = {"registers": not self.workgroups, **self.schedule}  # as ``_source``'s
        parts = {c.name: planned(c, None, self.workgroups, options) for c in graph.comprehensions}
        out = []
        for group in dispatch_groups(graph, {n: p for n, (_, p) in parts.items()}):
            if len(group) == 1:
                out.append(self._source(*parts[group[0].name], shapes))
                continue
            k = merged_kernel([parts[c.name] for c in group], shapes, packed=graph.packed)
            out.append((k.name, k, k.buffers, k.items, k.plan, k.source))
        return out

    @property
    def sources(self) -> tuple[str, ...]:
        """The text of every kernel, in dispatch order (what the device compiles)."""
        return tuple(src[5] for src in self._sources)

    def build(self) -> Compiled:
        """Compile the kernels (done by the constructor unless ``build=False``)."""
        if not self.steps:
            for src in self._sources:
                self.steps.append(self._step(src, self.device.kernel(src[1])))
        return self

    async def build_async(self) -> Compiled:
        """Compile the kernels with the awaitable spelling (the page's WebGPU)."""
        if not self.steps:
            for src in self._sources:
                self.steps.append(self._step(src, await self.device.kernel_async(src[1])))
        return self

    # ---- building ----
    def _allocate(self, name: str, role: str, shape: tuple[int, ...], dtype: str = "f32") -> None:
        size = max(1, math.prod(shape))
        self.buffers[name] = self.device.empty(size, dtype)
        self.allocations.append(Allocation(name, role, size))

    def _source(self, comp: Any, the_plan: Plan | None, shapes: dict) -> tuple:
        """(name, what the device compiles, buffers in binding order, items, plan, text);
        ``the_plan``: the WGSL kernel's, already chosen (``kernels.planned``)."""
        if self.device.printer == "wgsl":
            k: GpuKernel = wgsl_kernel(
                comp,
                shapes,
                the_plan or (None if self.scheduled else Plan()),
                workgroups=self.workgroups,
                registers=not self.workgroups,  # register blocks where tiles do not pay
                packed=self.graph.packed,
                **self.schedule,
            )
            return comp.name, k, k.buffers, k.items, k.plan, k.source
        source, order = python_kernel(
            comp, shapes, scheduled=self.scheduled, packed=self.graph.packed
        )
        fn = _PYTHON_KERNELS.get(source)
        if fn is None:
            fn = _PYTHON_KERNELS[source] = load_python(source)
        the_plan = plan(comp) if self.scheduled else Plan()
        return comp.name, fn, order, 1, the_plan, source

    @staticmethod
    def _step(src: tuple, kernel: Any) -> Step:
        name, made, order, items, the_plan, text = src
        parts = (made.write, *made.also) if isinstance(made, GpuKernel) else (name,)
        return Step(name, kernel, order, items, the_plan, text, parts)

    # ---- facts ----
    @property
    def plans(self) -> dict[str, Plan]:
        """Each comprehension's plan on this device, by name."""
        if self.device.printer == "c":
            options = {"registers": True, **REGISTER_DEFAULTS}
        elif self.device.printer == "wgsl":
            options = {"registers": not self.workgroups, "block": WGSL_BLOCK, "lanes": 1}
            if not self.workgroups:
                options["vector_rows"] = WGSL_VECTOR_ROWS
        else:
            options = {}
        options |= {k: v for k, v in self.schedule.items() if k != "inline_lanes"}
        options["workgroups"] = self.workgroups
        return {
            c.name: plan(eliminate_pinned(c), **options) if self.scheduled else Plan()
            for c in self.graph.comprehensions
        }

    @property
    def bytes_written(self) -> int:
        """Bytes the kernels write per call (every comprehension's buffer)."""
        return sum(a.nbytes for a in self.allocations if a.role == "buffer")

    @property
    def largest_buffer(self) -> Allocation:
        return max(self.allocations, key=lambda a: a.size)

    def __repr__(self) -> str:
        return (
            f"<tang.tensor compiled graph: {len(self.steps)} kernels on "
            f"{self.device.kind} ({self.device.name})>"
        )

    # ---- running ----
    def write(self, inputs: Mapping[str, Any]) -> str:
        """Copy ``inputs`` into their device buffers; returns the output kind they ask for
        ("numpy", "array" or "list"; with no inputs, the kind the last ones asked for)."""
        kind = "list" if inputs else self._kind
        for name, value in inputs.items():
            if name not in self.graph.inputs:
                known = ", ".join(self.graph.inputs)
                raise TensorIRError(f"the graph has no input {name!r} (its inputs: {known})")
            shape = self.graph.inputs[name]
            element = self.graph.packed.get(name)
            if element is not None:  # bytes or unsigned words, as stored
                data: Any = as_words(value, math.prod(shape), element, f"input {name}")
            elif type(value).__module__.startswith("numpy"):
                kind = "numpy"
                if tuple(value.shape) != shape and value.size != math.prod(shape):
                    raise TensorIRError(
                        f"input {name}: shape {tuple(value.shape)}, expected {shape}"
                    )
                data = value.reshape(-1)
            elif isinstance(value, array):
                kind = "array" if kind == "list" else kind
                if len(value) != math.prod(shape):
                    raise TensorIRError(f"input {name}: {len(value)} elements for shape {shape}")
                data = value
            elif (
                isinstance(value, (list, tuple))
                and len(value) == math.prod(shape)
                and not (value and isinstance(value[0], (list, tuple)))
            ):
                data = value  # already flat (the device's packing checks every element)
            else:
                data = _flatten(value, shape, name)
            self.device.write(self.buffers[name], data)
            self._written.add(name)
        missing = [n for n in self.graph.inputs if n not in self._written]
        if missing:
            raise TensorIRError(f"no value given for the inputs {missing}")
        self._kind = kind
        return kind

    def bind(self, **buffers: Any) -> None:
        """Point inputs or outputs at device buffers made elsewhere (no copy): one compiled
        graph then serves many weight sets, and one step's output is the next one's input.
        A bound buffer stays its owner's: ``release`` leaves it alone."""
        for name, buf in buffers.items():
            own = self.buffers.get(name)
            if own is None:
                known = ", ".join(self.buffers)
                raise TensorIRError(f"the graph has no buffer {name!r} (its buffers: {known})")
            if buf is own:
                continue
            if getattr(buf, "device", None) is not self.device:
                raise TensorIRError(f"{name}: a buffer of this graph's device, not {buf!r}")
            if buf.size < own.size:
                raise TensorIRError(f"{name}: a buffer of {own.size} elements, not {buf.size}")
            if name not in self._borrowed:
                own.release()
            self.buffers[name] = buf
            self._borrowed.add(name)
            if name in self.graph.inputs:
                self._written.add(name)
        bound = set(buffers)
        if any(
            len(s.parts) > 1 and bound & set(s.buffers) and self._writes_aliased(s)
            for s in self.steps
        ):
            # a shared dispatch may not write a buffer it also binds otherwise: from now on
            # each comprehension has a dispatch of its own (built at the next call)
            shapes = {**self.graph.inputs, **self.graph.buffers()}
            self._sources, self.steps = self._kernels(shapes, merge=False), []

    def _writes_aliased(self, step: Step) -> bool:
        """Whether a buffer ``step`` writes is now also another of its bindings."""
        ids = [id(self.buffers[n]) for n in step.buffers]
        return any(ids.count(id(self.buffers[p])) > 1 for p in step.parts)

    def swap(self, a: str, b: str) -> None:
        """Exchange the buffers behind ``a`` and ``b`` (a state carried from one call to the
        next, like a cache that is an input and an output, stays on the device)."""
        ba, bb = self.buffers[a], self.buffers[b]
        if ba.size != bb.size:
            raise TensorIRError(f"{a} and {b} hold {ba.size} and {bb.size} elements")
        self.buffers[a], self.buffers[b] = bb, ba
        borrowed = {a, b} & self._borrowed
        if len(borrowed) == 1:
            self._borrowed ^= {a, b}

    def dispatch(self) -> None:
        """Run every kernel, in order, on what the buffers hold now: recorded into one
        command buffer and submitted once (the CPU device runs them as they come)."""
        if not self.steps:
            self.build()
        with self.device.batch():
            for s in self.steps:
                self.device.dispatch(s.kernel, [self.buffers[b] for b in s.buffers], s.items)

    def _convert(self, name: str, raw: array, kind: str) -> Any:
        shape = self.graph.output_shape(name)
        count = math.prod(shape)
        if kind == "numpy":
            import numpy as np

            return np.frombuffer(raw, dtype=np.float32)[:count].reshape(shape).copy()
        if kind == "array":
            return array("d", raw[:count])
        return _nest(raw.tolist()[:count], shape)

    def __call__(self, inputs: Mapping[str, Any] | None = None, *, out: str | None = None):
        """Write ``inputs``, run, and read every output back (a dict by output name).
        ``out`` overrides the output kind: "numpy", "array" or "list"."""
        kind = out or self.write(inputs or {})
        if out:
            self.write(inputs or {})
        self.dispatch()
        raws = self.device.read_many([self.buffers[o] for o in self.graph.outputs])
        return {o: self._convert(o, r, kind) for o, r in zip(self.graph.outputs, raws, strict=True)}

    async def call_async(self, inputs: Mapping[str, Any] | None = None, *, out: str | None = None):
        """``__call__``, awaitable (the page reads WebGPU buffers asynchronously)."""
        kind = out or self.write(inputs or {})
        if out:
            self.write(inputs or {})
        await self.build_async()  # kernels a bind made anew (none most calls)
        self.dispatch()
        raws = await self.device.read_many_async([self.buffers[o] for o in self.graph.outputs])
        return {o: self._convert(o, r, kind) for o, r in zip(self.graph.outputs, raws, strict=True)}

    def release(self) -> None:
        """Free the device buffers now (not those bound from elsewhere)."""
        for name, buf in self.buffers.items():
            if name not in self._borrowed:
                buf.release()
        self.buffers.clear()


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def compile(
    graph: TensorGraph,
    device: Any = None,
    *,
    scheduled: bool = True,
    workgroups: bool | None = None,
    schedule: Mapping[str, Any] | None = None,
) -> Compiled:
    """``graph`` compiled for ``device`` (a tang.gpu Device, "native"/"browser"/"cpu", or
    None for the best one), reused for the same graph, device and schedule (``schedule``:
    plan options; default: the tuned ones, ``tang.tensor.tune``)."""
    if not isinstance(graph, TensorGraph):
        raise TypeError(f"compile takes a TensorGraph, not {type(graph).__name__}")
    dev = _device(device)
    per_graph = _COMPILED.setdefault(graph, {})
    key = (
        id(dev),
        scheduled,
        workgroups,
        None if schedule is None else repr(sorted(schedule.items())),
    )
    found = per_graph.get(key)
    if found is None or found.device is not dev or not found.buffers or dev.lost:
        found = per_graph[key] = Compiled(
            graph, dev, scheduled=scheduled, workgroups=workgroups, schedule=schedule
        )
    return found


def forget(graph: TensorGraph) -> None:
    """Drop the compiled forms of ``graph`` kept by ``compile`` (a new schedule was tuned)."""
    _COMPILED.pop(graph, None)


def run(
    graph: TensorGraph,
    inputs: Mapping[str, Any],
    device: Any = None,
    *,
    scheduled: bool = True,
    workgroups: bool | None = None,
    out: str | None = None,
) -> dict[str, Any]:
    """Run ``graph`` on ``device`` once (kernels and buffers are kept for the next call)."""
    return compile(graph, device, scheduled=scheduled, workgroups=workgroups)(inputs, out=out)


async def compile_async(graph: TensorGraph, device: Any = None, **options: Any) -> Compiled:
    """``compile`` for the page: the default device is opened with ``device_async``."""
    if device is None:
        from .. import gpu

        device = await gpu.device_async()
    dev = _device(device)
    found = Compiled(graph, dev, build=False, **options)
    return await found.build_async()


__all__ = [
    "Allocation",
    "Compiled",
    "Step",
    "compile",
    "compile_async",
    "forget",
    "prefers_workgroups",
    "run",
]
