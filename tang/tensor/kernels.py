"""One kernel per comprehension, for a device: WGSL compute kernels (wgpu-py, WebGPU) and
Python kernels ``fn(n, *buffers)`` (tang.gpu's CPU device), each following the schedule's
plan for its comprehension (``tang.tensor.passes.schedule``).

WGSL kernels index their invocations like every tang.gpu kernel (two dimensions of
workgroups), bind the buffers they read (read-only) and the one they write, and spell their
statements from the WGSL printer's table (``tang.lower.wgsl.WGSL``), as the C and Python loop
nests do from theirs: a per-element or vector plan prints the loop nest body once per
invocation; a tiled plan stages row and column tiles through workgroup memory between
barriers; a combine tree folds strided shares of one reduction per invocation and combines
them pairwise in workgroup memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..lower import BACKENDS
from ..lower.base import identifiers
from ..lower.bindings import Binding, KernelInfo
from ..lower.wgsl import SPECIAL_VALUES, declaration
from .comprehension import Comprehension, Load, TensorGraph
from .lower import (
    COLUMN_BLOCK,
    ROW_BLOCK,
    _affine,
    _elements,
    _fold,
    _one_line,
    _Scope,
    _Writer,
    emit_comprehension,
    lower_graph,
)
from .passes.schedule import Plan, eliminate_pinned, plan
from .view import row_major

# a register block in a kernel: rows × columns of outputs per invocation; the rows of a
# vector plan per invocation (where register blocks are used: 1, since WGSL unrolls the rows
# and a 64-wide vector row is 64 statements, so more rows are the autotuner's to try)
WGSL_BLOCK = (4, 4)
WGSL_VECTOR_ROWS = 1
# a kernel of few invocations runs in narrower workgroups (down to MIN_WIDTH invocations,
# a CPU adapter's SIMD width) so that it makes at least MIN_GROUPS of them: llvmpipe gives
# each core whole workgroups, and two of 64 (a vector plan over blocks of rows) kept one
# core idle while the other worked
MIN_GROUPS, MIN_WIDTH = 16, 8


@dataclass(frozen=True)
class GpuKernel:
    """One WGSL compute kernel: comprehension ``name`` written to buffer ``write``, reading
    the buffers ``reads``; ``info`` holds the entry point and bindings (storage buffers 0,
    1, …: ``reads`` then ``write``). Dispatch it over ``items`` invocations; ``size`` is the
    output's element count and ``plan`` the schedule it follows. A kernel of several
    comprehensions (``merged_kernel``) writes ``also`` after ``write``, and ``plan`` is its
    first one's."""

    name: str
    source: str
    info: KernelInfo
    reads: tuple[str, ...]
    write: str
    size: int
    items: int
    plan: Plan
    also: tuple[str, ...] = ()

    @property
    def buffers(self) -> tuple[str, ...]:
        """Every buffer it binds, in binding order."""
        return (*self.reads, self.write, *self.also)


def _unravel(w: _Writer, flat: str, axes: list[tuple[str, int]]) -> dict[str, str]:
    """Integer expressions for each axis of a row-major index ``flat`` over ``axes``."""
    strides = row_major([e for _, e in axes])
    return {
        n: w.printer.unravel.format(flat=flat, stride=s, extent=e)
        for (n, e), s in zip(axes, strides)
    }


def _bindings(
    comps: Sequence[Comprehension], packed: Mapping[str, str]
) -> tuple[tuple[str, ...], dict[str, str], tuple[Binding, ...]]:
    """The buffers ``comps`` read (sorted), every buffer's identifier, and the bindings:
    the reads, then each comprehension's output."""
    reads = tuple(sorted(set().union(*(c.sources() for c in comps))))
    writes = [c.name for c in comps]
    idents = identifiers([*reads, *writes])
    access = ["read"] * len(reads) + ["read_write"] * len(writes)
    bindings = tuple(
        Binding(0, k, idents[n], "storage", a, "array<u32>" if n in packed else "array<f32>")
        for k, (n, a) in enumerate(zip([*reads, *writes], access))
    )
    return reads, idents, bindings


def _per_invocation(w: _Writer, comp: Comprehension, p: Plan, idents: dict, shapes: dict) -> int:
    """A per-element, vector or register-block plan: one invocation per output element
    outside the plan's vector axes, or per block of R×V outputs. Returns the invocation
    count."""
    outer = [(n, e) for n, e in zip(comp.index, comp.shape) if n not in p.vector]
    if p.kind == "vector" and p.a is not None:  # rows of the vector plan, in blocks
        outer = [(ROW_BLOCK, -(-e // p.block[0])) if n == p.a else (n, e) for n, e in outer]
    if p.kind == "blocked":
        extent = dict(zip(comp.index, comp.shape))
        (rows, cols), blocked = p.block, (p.a, p.b)
        outer = [(n, e) for n, e in outer if n not in blocked] + [
            (ROW_BLOCK, -(-extent[p.a] // rows)),
            (COLUMN_BLOCK, -(-extent[p.b] // cols)),
        ]
    items = max(1, math.prod(e for _, e in outer))
    w.emit(w.printer.when.format(cond=f"_flat >= {items}"))
    w.depth += 1
    w.emit("return;")
    w.close(w.printer.when_end)
    emit_comprehension(w, comp, p, _unravel(w, "_flat", outer), idents, shapes)
    return items


def _tiled(w: _Writer, comp: Comprehension, p: Plan, idents: dict, shapes: dict) -> int:
    """Square tiles of the output axes ``a`` × ``b``, one workgroup each; row and column
    tiles of the staged reads pass through workgroup memory, ``tile`` steps at a time."""
    st, t = w.printer, p.tile
    assert st.shared is not None and st.barrier is not None and p.a and p.b
    sc = _Scope(w, comp, idents, shapes)
    x = sc.p
    extent = dict(zip(comp.index, comp.shape))
    ((r, k_len),) = comp.reduce
    ta, tb = -(-extent[p.a] // t), -(-extent[p.b] // t)
    batch = [(n, e) for n, e in zip(comp.index, comp.shape) if n not in (p.a, p.b)]
    groups = math.prod(e for _, e in batch) * ta * tb
    w.emit(st.when.format(cond=f"_group >= {groups}"))
    w.depth += 1
    w.emit("return;")
    w.close(st.when_end)
    w.emit(st.declare_index.format(name="_ly", expr=f"_local / {t}"))
    w.emit(st.declare_index.format(name="_lx", expr=f"_local % {t}"))
    tiles = _unravel(w, "_group", [*batch, ("_ta", ta), ("_tb", tb)])
    for n, _ in batch:
        w.emit(st.declare_index.format(name=sc.local[n], expr=tiles[n]))
    for axis, tile_axis, lane in ((p.a, "_ta", "_ly"), (p.b, "_tb", "_lx")):
        w.emit(
            st.declare_index.format(
                name=f"{x}raw_{axis}", expr=f"({tiles[tile_axis]}) * {t} + {lane}"
            )
        )
        last = extent[axis] - 1
        w.emit(
            st.declare_index.format(
                name=sc.local[axis], expr=st.minimum.format(a=f"{x}raw_{axis}", b=last)
            )
        )
    staged = {name: f"{x}w{k}" for k, name in enumerate([*p.rows, *p.cols])}
    monoid = comp.monoid
    assert monoid is not None
    state = [f"{x}s{k}" for k in range(monoid.arity)]
    for s, v in zip(state, monoid.identity):
        w.emit(st.state.format(type=w.type, name=s, value=w.literal(v)))
    w.open(st.loop_step.format(var="_k0", extent=k_len, step=t))
    for name, lane in [*((n, "_lx") for n in p.rows), *((n, "_ly") for n in p.cols)]:
        read = comp.reads[name]
        assert isinstance(read, Load)
        w.emit(
            st.declare_index.format(
                name=f"{x}k_{staged[name]}", expr=st.minimum.format(a=f"_k0 + {lane}", b=k_len - 1)
            )
        )
        at = sc.address(read.view, {**sc.local, r: f"{x}k_{staged[name]}"})
        size = math.prod(shapes[read.source])
        lo, hi = read.view.span()
        if lo < 0 or hi >= size:
            at = st.clamp.format(p=at, last=size - 1)
        cell = st.element.format(name=staged[name], i="_local")
        value = w.buffer_element(idents[read.source], read.source, at)
        w.emit(st.assign.format(name=cell, expr=value))
    w.emit(st.barrier)
    w.loop("_kk", st.minimum.format(a=t, b=f"{k_len} - _k0"))
    w.emit(st.declare_index.format(name=sc.local[r], expr="_k0 + _kk"))
    names = dict(sc.names)
    for name in p.rows:
        names[name] = st.element.format(name=staged[name], i=f"_ly * {t} + _kk")
    for name in p.cols:
        names[name] = st.element.format(name=staged[name], i=f"_kk * {t} + _lx")
    sc.load(comp.body, lambda name: name not in staged)
    element = _elements(w, comp, comp.body, names, x)
    _fold(w, monoid, range(monoid.arity), dict(zip(monoid.state, state)), element, state, x)
    w.end_loop()
    w.emit(st.barrier)
    w.close(st.loop_end)
    w.open(st.when.format(cond=f"{x}raw_{p.a} < {extent[p.a]} && {x}raw_{p.b} < {extent[p.b]}"))
    value = state[0]
    if comp.epilogue is not None:
        sc.load([comp.epilogue])
        value = w.expressions([comp.epilogue], sc.names | dict(zip(monoid.state, state)), f"{x}z")[
            0
        ]
    at = _affine(list(zip(row_major(comp.shape), (sc.local[n] for n in comp.index))), 0)
    w.emit(st.store.format(buffer=idents[comp.name], index=at, expr=value))
    w.close(st.when_end)
    return groups * t * t


def _tree(w: _Writer, comp: Comprehension, p: Plan, idents: dict, shapes: dict) -> int:
    """One workgroup per output element: each invocation folds every ``width``-th step of
    the reduction, then the partial states combine pairwise in workgroup memory."""
    st, width = w.printer, p.width
    assert st.shared is not None and st.barrier is not None
    monoid = comp.monoid
    assert monoid is not None
    sc = _Scope(w, comp, idents, shapes)
    x = sc.p
    w.emit(st.when.format(cond=f"_group >= {max(1, comp.size)}"))
    w.depth += 1
    w.emit("return;")
    w.close(st.when_end)
    sc.indices(_unravel(w, "_group", list(zip(comp.index, comp.shape))), every=True)
    state = [f"{x}s{k}" for k in range(monoid.arity)]
    for s, v in zip(state, monoid.identity):
        w.emit(st.state.format(type=w.type, name=s, value=w.literal(v)))
    steps = math.prod(e for _, e in comp.reduce)
    w.loop("_q", -(-steps // width))
    w.emit(st.declare_index.format(name="_step", expr=f"_q * {width} + _local"))
    w.open(st.when.format(cond=f"_step < {steps}"))
    sc.indices(_unravel(w, "_step", list(comp.reduce)), every=True)
    sc.load(comp.body)
    element = _elements(w, comp, comp.body, sc.names, x)
    _fold(w, monoid, range(monoid.arity), dict(zip(monoid.state, state)), element, state, x)
    w.close(st.when_end)
    w.end_loop()
    shared = [f"{x}p{k}" for k in range(monoid.arity)]
    for name, s in zip(shared, state):
        w.emit(st.assign.format(name=st.element.format(name=name, i="_local"), expr=s))
    w.emit(st.barrier)
    half = width // 2
    while half:
        w.open(st.when.format(cond=f"_local < {half}"))
        left = [st.element.format(name=n, i="_local") for n in shared]
        right = [st.element.format(name=n, i=f"_local + {half}") for n in shared]
        _fold(
            w,
            monoid,
            range(monoid.arity),
            dict(zip(monoid.state, left)),
            right,
            left,
            f"{x}{half}_",
        )
        w.close(st.when_end)
        w.emit(st.barrier)
        half //= 2
    w.open(st.when.format(cond="_local == 0"))
    final = {s: st.element.format(name=n, i="0") for s, n in zip(monoid.state, shared)}
    value = final[monoid.state[0]]
    if comp.epilogue is not None:
        sc.load([comp.epilogue])
        value = w.expressions([comp.epilogue], sc.names | final, f"{x}z")[0]
    at = _affine(list(zip(row_major(comp.shape), (sc.local[n] for n in comp.index))), 0)
    w.emit(st.store.format(buffer=idents[comp.name], index=at, expr=value))
    w.close(st.when_end)
    return max(1, comp.size) * width


def _body(
    comp: Comprehension,
    p: Plan,
    idents: dict,
    shapes: Mapping[str, tuple[int, ...]],
    packed: Mapping[str, str],
    split: set[str],
) -> tuple[_Writer, int, int, list[str], list[str], list[str]]:
    """The statements of ``comp``'s kernel following ``p`` (``split``: the buffers declared
    as vectors): the writer holding them, the workgroup width, the invocations, workgroup
    declarations, the entry point's builtins and its first lines."""
    w = _Writer("wgsl", "f32")
    w.packed, w.split = dict(packed), split
    shared_decls: list[str] = []
    if p.kind in ("tiled", "tree"):
        width = p.tile * p.tile if p.kind == "tiled" else p.width
        if p.kind == "tiled":
            names = [f"_0w{k}" for k in range(len(p.rows) + len(p.cols))]
        else:
            names = [f"_0p{k}" for k in range(comp.monoid.arity)]  # type: ignore[union-attr]
        shared_decls = [w.printer.shared.format(type=w.type, name=n, size=width) for n in names]  # type: ignore[union-attr]
        items = (_tiled if p.kind == "tiled" else _tree)(w, comp, p, idents, dict(shapes))
        builtins = [
            "@builtin(workgroup_id) _wg: vec3<u32>",
            "@builtin(num_workgroups) _groups: vec3<u32>",
            "@builtin(local_invocation_index) _lid: u32",
        ]
        prologue = [
            "    let _group = i32(_wg.x + _wg.y * _groups.x);",
            "    let _local = i32(_lid);",
        ]
    else:
        items = _per_invocation(w, comp, p, idents, dict(shapes))
        width = _width(items)
        builtins = [
            "@builtin(global_invocation_id) gid: vec3<u32>",
            "@builtin(num_workgroups) groups: vec3<u32>",
        ]
        prologue = [f"    let _flat = i32(gid.x + gid.y * groups.x * {width}u);"]
    return w, width, items, shared_decls, builtins, prologue


def planned(
    comp: Comprehension, the_plan: Plan | None, workgroups: bool, plan_options: Mapping[str, Any]
) -> tuple[Comprehension, Plan]:
    """``comp`` as its kernel computes it and the plan it follows: ``the_plan``, or the
    schedule's for ``plan_options`` (with the WGSL defaults)."""
    if the_plan is not None:
        return comp, the_plan
    comp = eliminate_pinned(comp)
    options = {"block": WGSL_BLOCK, "lanes": 1, **plan_options}
    if options.get("registers"):
        options.setdefault("vector_rows", WGSL_VECTOR_ROWS)
    return comp, plan(comp, workgroups=workgroups, **options)


def _width(items: int) -> int:
    """The workgroup width for ``items`` invocations (MIN_GROUPS, MIN_WIDTH)."""
    width = BACKENDS["wgsl"].workgroup_size[0]
    while width > MIN_WIDTH and items < width * MIN_GROUPS:
        width //= 2
    return width


def _declare_wide(
    bindings: tuple[Binding, ...], wide: set[str], idents: dict
) -> tuple[Binding, ...]:
    """``bindings`` with the buffers read as vectors (``wide``) declared as vectors."""
    vectors = {idents[name] for name in wide}
    spelling = BACKENDS["wgsl"].wide_buffer or ""
    return tuple(
        replace(b, type=spelling.format(type="f32")) if b.name in vectors else b for b in bindings
    )


def wgsl_kernel(
    comp: Comprehension,
    shapes: Mapping[str, tuple[int, ...]],
    the_plan: Plan | None = None,
    *,
    entry: str = "run",
    workgroups: bool = True,
    packed: Mapping[str, str] | None = None,
    **plan_options: Any,
) -> GpuKernel:
    """The WGSL kernel of one comprehension (``shapes``: every buffer's shape), following
    ``the_plan`` (default: the schedule's; ``workgroups`` allows its tiled and tree plans,
    ``plan_options`` go to ``plan``: ``registers=True`` allows register blocks of
    ``WGSL_BLOCK`` outputs per invocation; ``packed``: the graph's packed inputs)."""
    comp, p = planned(comp, the_plan, workgroups, plan_options)
    packed = dict(packed or {})
    reads, idents, bindings = _bindings([comp], packed)
    split: set[str] = set()
    while True:  # once, or twice where some loads are vectors (``lower._load_wide``)
        w, width, items, shared_decls, builtins, prologue = _body(
            comp, p, idents, shapes, packed, split
        )
        if w.wide <= split:
            break
        split |= w.wide  # again, with every other read of those buffers a vector's cell
    bindings = _declare_wide(bindings, w.wide, idents)
    head = [
        f"// {comp.name}: {_one_line(comp)}",
        f"// schedule: {p}",
        *(declaration(b) for b in bindings),
        *SPECIAL_VALUES,
        *shared_decls,
        "",
        f"@compute @workgroup_size({width})",
        f"fn {entry}({', '.join(builtins)}) {{",
        *prologue,
    ]
    source = "\n".join([*head, *w.lines, "}"]) + "\n"
    info = KernelInfo(entry, (width, 1, 1), bindings)
    return GpuKernel(comp.name, source, info, reads, comp.name, max(1, comp.size), items, p)


def merged_kernel(
    parts: Sequence[tuple[Comprehension, Plan]],
    shapes: Mapping[str, tuple[int, ...]],
    *,
    entry: str = "run",
    packed: Mapping[str, str] | None = None,
) -> GpuKernel:
    """One WGSL kernel computing several comprehensions that do not read each other's
    output, so one dispatch replaces one each (on lavapipe a dispatch costs tens of
    microseconds whatever it computes). Each comprehension is a function of its own
    invocation index; the entry point hands a range of invocations to each in turn. Their
    plans (``parts``: each with its plan, from ``planned``) are per-invocation ones
    (register blocks, vectors, per element): workgroup plans need every invocation of a
    workgroup at their barriers."""
    if any(p.kind in ("tiled", "tree") for _, p in parts):
        raise ValueError("workgroup plans (tiled, tree) cannot share a kernel")
    packed = dict(packed or {})
    reads, idents, bindings = _bindings([c for c, _ in parts], packed)
    writes = tuple(c.name for c, _ in parts)
    split: set[str] = set()
    while True:  # as in wgsl_kernel: again where some buffers are read as vectors
        writers, counts = [], []
        for comp, p in parts:
            w = _Writer("wgsl", "f32")
            w.packed, w.split = packed, split
            counts.append(_per_invocation(w, comp, p, idents, dict(shapes)))
            writers.append(w)
        wide = set().union(*(w.wide for w in writers))
        if wide <= split:
            break
        split |= wide
    bindings = _declare_wide(bindings, wide, idents)
    items, width = sum(counts), _width(sum(counts))
    lines = [
        f"// {' + '.join(writes)}: {len(parts)} comprehensions, one dispatch",
        *(f"// {c.name}: {_one_line(c)}; schedule: {p}" for c, p in parts),
        *(declaration(b) for b in bindings),
        *SPECIAL_VALUES,
    ]
    for k, w in enumerate(writers):
        lines += ["", f"fn _part{k}(_flat: i32) {{", *w.lines, "}"]
    lines += [
        "",
        f"@compute @workgroup_size({width})",
        f"fn {entry}(@builtin(global_invocation_id) gid: vec3<u32>,"
        " @builtin(num_workgroups) groups: vec3<u32>) {",
        f"    let _flat = i32(gid.x + gid.y * groups.x * {width}u);",
    ]
    start = 0
    for k, count in enumerate(counts):
        lines += [
            f"    if _flat < {start + count} {{",
            f"        _part{k}(_flat - {start});",
            "        return;",
            "    }",
        ]
        start += count
    source = "\n".join([*lines, "}"]) + "\n"
    info = KernelInfo(entry, (width, 1, 1), bindings)
    size = sum(max(1, c.size) for c, _ in parts)
    name, plan_of_first = "+".join(writes), parts[0][1]
    return GpuKernel(name, source, info, reads, writes[0], size, items, plan_of_first, writes[1:])


def lower_wgsl(
    graph: TensorGraph, *, entry: str = "run", scheduled: bool = True
) -> list[GpuKernel]:
    """One WGSL kernel per comprehension of ``graph``, to dispatch in order over buffers
    that stay on the device (inputs and every comprehension's output, row-major f32).
    ``scheduled``: follow the schedule's plans; otherwise one invocation per element."""
    shapes = {**graph.inputs, **graph.buffers()}
    return [
        wgsl_kernel(c, shapes, None if scheduled else Plan(), entry=entry, packed=graph.packed)
        for c in graph.comprehensions
    ]


def python_kernel(
    comp: Comprehension,
    shapes: Mapping[str, tuple[int, ...]],
    *,
    scheduled: bool = True,
    packed: Mapping[str, str] | None = None,
) -> tuple[str, tuple[str, ...]]:
    """The Python source of ``run(*buffers)`` computing ``comp`` (the loop nest of
    ``lower_graph``), and the buffers it takes in order: its reads, then its output
    (``packed``: the graph's packed inputs)."""
    reads = tuple(sorted(comp.sources()))
    sub = TensorGraph({s: tuple(shapes[s]) for s in reads}, [comp], [comp.name], packed=packed)
    return lower_graph(sub, "python", scheduled=scheduled), (*reads, comp.name)


def load_python(source: str, name: str = "run") -> Callable[..., Any]:
    """The function ``name`` of Python source printed by tang's own lowering (never user
    text), as a CPU-device kernel ``fn(n, *buffers)``."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<tang.tensor kernel>", "exec"), namespace)
    fn = namespace[name]

    def kernel(n: int, *buffers: Any) -> None:
        fn(*buffers)

    kernel.__qualname__ = f"tensor_kernel_{abs(hash(source)):x}"
    return kernel


__all__ = ["GpuKernel", "load_python", "lower_wgsl", "python_kernel", "wgsl_kernel"]
