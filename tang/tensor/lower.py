"""Comprehension graphs printed as C and Python source: loop nests and accumulators.

A graph becomes one function over every buffer (inputs first, then each comprehension's
output, in order). A comprehension is a loop nest over its output index; a reduction adds a
state set to the monoid's identity, a loop over the reduction variables whose body loads its
reads, computes the body and folds it in with the monoid's combine, then the epilogue and a
store. An inline read computes its producer in place, in a nested block. Expressions print
through ``tang.lower``'s printers (each backend's op table, literals and declarations, via
``schedule``); the statement forms added here — function, loop, state, assignment, buffer
load and store — are one table entry per language (``STATEMENTS``), not code per op.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..expr.graph import BOOL_OPS, Node, topo_order
from ..lower import BACKENDS
from ..lower.base import ATOM, identifiers
from ..lower.bindings import Binding, KernelInfo
from ..lower.program import ABS, Let, Store, schedule
from ..lower.python import IMPORTS
from ..lower.wgsl import declaration
from .comprehension import Comprehension, Load, TensorGraph
from .printing import format_comprehension
from .view import row_major


@dataclass(frozen=True)
class Statements:
    """How one language spells the statements of a loop nest (``str.format`` templates)."""

    header: tuple[str, ...]
    function: str  # {name}, {params}
    end: str | None  # closes the function (None: indentation does)
    param_in: str  # {type}, {name}
    param_out: str
    loop: str  # {var}, {extent}
    loop_end: str | None
    state: str  # a mutable accumulator: {type}, {name}, {value}
    assign: str  # {name}, {expr}
    load: str  # {type}, {name}, {buffer}, {index}
    store: str  # {buffer}, {index}, {expr}
    index: str  # an integer local: {name}, {expr}
    as_value: str  # an index variable used as a number: {name}, {type}
    clamp: str  # a position kept inside its buffer: {p}, {last}
    block: str | None  # opens a nested scope (None: none needed)
    block_end: str | None


STATEMENTS: dict[str, Statements] = {
    "c": Statements(
        header=("#include <math.h>", ""),
        function="void {name}({params}) {{",
        end="}",
        param_in="const {type} *restrict {name}",
        param_out="{type} *restrict {name}",
        loop="for (long {var} = 0; {var} < {extent}; ++{var}) {{",
        loop_end="}",
        state="{type} {name} = {value};",
        assign="{name} = {expr};",
        load="const {type} {name} = {buffer}[{index}];",
        store="{buffer}[{index}] = {expr};",
        index="const long {name} = {expr};",
        as_value="(({type}){name})",
        clamp="(({p}) < 0 ? 0 : ({p}) > {last} ? {last} : ({p}))",
        block="{",
        block_end="}",
    ),
    "wgsl": Statements(  # one kernel per comprehension: see lower_wgsl
        header=(),
        function="",
        end=None,
        param_in="",
        param_out="",
        loop="for (var {var}: i32 = 0; {var} < {extent}; {var}++) {{",
        loop_end="}",
        state="var {name}: {type} = {value};",
        assign="{name} = {expr};",
        load="let {name} = {buffer}[{index}];",
        store="{buffer}[{index}] = {expr};",
        index="let {name} = {expr};",
        as_value="{type}({name})",
        clamp="clamp({p}, 0, {last})",
        block="{",
        block_end="}",
    ),
    "python": Statements(
        header=(*IMPORTS, "", ""),
        function="def {name}({params}):",
        end=None,
        param_in="{name}",
        param_out="{name}",
        loop="for {var} in range({extent}):",
        loop_end=None,
        state="{name} = {value}",
        assign="{name} = {expr}",
        load="{name} = {buffer}[{index}]",
        store="{buffer}[{index}] = {expr}",
        index="{name} = {expr}",
        as_value="{name}",
        clamp="min(max({p}, 0), {last})",
        block=None,
        block_end=None,
    ),
}


def _affine(terms: Sequence[tuple[int, str]], constant: int) -> str:
    """An integer expression ``constant + Σ k·name`` (``0`` when empty)."""
    parts = []
    for k, name in terms:
        if k == 1:
            parts.append(name)
        elif k:
            parts.append(f"{k} * {name}")
    if constant or not parts:
        parts.append(str(constant))
    return " + ".join(parts).replace("+ -", "- ")


class _Writer:
    """Source lines at an indentation depth, plus fresh local-name prefixes."""

    def __init__(self, language: str, dtype: str) -> None:
        self.printer = BACKENDS[language]
        self.st = STATEMENTS[language]
        self.dtype = dtype
        self.type = self.printer.types[dtype]
        self.lines: list[str] = []
        self.depth = 1
        self._scopes = itertools.count()

    def emit(self, line: str) -> None:
        self.lines.append(self.printer.indent * self.depth + line)

    def open(self, line: str) -> None:
        self.emit(line)
        self.depth += 1

    def close(self, line: str | None) -> None:
        self.depth -= 1
        if line is not None:
            self.emit(line)

    def scope(self) -> str:
        return f"_{next(self._scopes)}"

    def literal(self, v: float) -> str:
        return self.printer.literal(v, self.dtype)[0]

    def expressions(self, nodes: Sequence[Node], names: dict[str, str], prefix: str) -> list[str]:
        """Declare the shared temporaries of ``nodes`` and return each one's text; leaf
        variables print as ``names`` says."""
        prog = schedule(list(nodes), sorted({n.name for n in topo_order(nodes) if n.op == "var"}))
        known: dict = {}
        for leaf in prog.leaves:
            if leaf.op == "var":
                known[leaf] = (names[leaf.name], ATOM)
            else:
                known[leaf] = text = self.printer.literal(leaf.value, self.dtype)
                if text[1] != ATOM:
                    known[(ABS, leaf)] = (text[0][1:], ATOM)
        table, forms = self.printer.table(self.dtype), prog.forms
        outs = [""] * len(nodes)
        for s in prog.statements:
            if isinstance(s, Let):
                expr = self.printer.expression(s.nodes, known, forms, table)
                name = f"{prefix}{s.name}"
                known[s.node] = (name, ATOM)
                ty = self.printer.bool_type if s.node.op in BOOL_OPS else self.type
                self.emit(self.printer.declare.format(type=ty, name=name, expr=expr))
            elif isinstance(s, Store):
                text = (
                    self.printer.expression(s.nodes, known, forms, table)
                    if s.nodes
                    else known[s.node][0]
                )
                outs[s.index] = text
        return outs


def _value(
    w: _Writer, comp: Comprehension, index: Sequence[str], buffers: dict, shapes: dict
) -> str:
    """Emit the lines computing ``comp`` at output index ``index`` (integer expressions)
    and return the text of its value."""
    p = w.scope()
    local = {n: f"{p}{n}" for n in comp.names}
    for name, expr in zip(comp.index, index):
        if name in _used_indices(comp):
            w.emit(w.st.index.format(name=local[name], expr=expr))
    reads = {name: f"{p}v{k}" for k, name in enumerate(comp.reads)}
    names = {n: w.st.as_value.format(name=local[n], type=w.type) for n in comp.names} | reads

    def load(nodes: Sequence[Node]) -> None:
        used = {n.name for n in topo_order(nodes) if n.op == "var"}
        for name, read in comp.reads.items():
            if name not in used:
                continue
            if isinstance(read, Load):
                v = read.view
                size = math.prod(shapes[read.source])
                at = _affine([(s, local[n]) for s, n in zip(v.strides, comp.names) if s], v.offset)
                lo, hi = v.span() if v.size else (0, 0)
                if lo < 0 or hi >= size:  # only under a guard that discards the value
                    at = w.st.clamp.format(p=at, last=size - 1)
                w.emit(
                    w.st.load.format(
                        type=w.type, name=reads[name], buffer=buffers[read.source], index=at
                    )
                )
            else:
                inner = [
                    _affine([(k, local[n]) for k, n in zip(row, comp.names) if k], c)
                    for row, c in zip(read.index.rows, read.index.consts)
                ]
                if w.st.block:
                    w.emit(w.st.state.format(type=w.type, name=reads[name], value=w.literal(0.0)))
                    w.open(w.st.block)
                value = _value(w, read.comp, inner, buffers, shapes)
                if w.st.block:
                    w.emit(w.st.assign.format(name=reads[name], expr=value))
                    w.close(w.st.block_end)
                else:
                    w.emit(w.st.assign.format(name=reads[name], expr=value))

    if not comp.reduce:
        load(comp.body)
        return w.expressions(comp.body, names, f"{p}t")[0]
    monoid = comp.monoid
    assert monoid is not None
    state = [f"{p}s{k}" for k in range(monoid.arity)]
    for s, v in zip(state, monoid.identity):
        w.emit(w.st.state.format(type=w.type, name=s, value=w.literal(v)))
    for n, e in comp.reduce:
        w.open(w.st.loop.format(var=local[n], extent=e))
    load(comp.body)
    element = []
    combined = {n.name for n in topo_order(monoid.combine) if n.op == "var"}
    for k, text in enumerate(w.expressions(comp.body, names, f"{p}b")):
        element.append(f"{p}e{k}")  # a named local: the combine reads it as an atom
        if monoid.state[k] + "'" in combined:
            w.emit(w.printer.declare.format(type=w.type, name=element[-1], expr=text))
    primes = {s + "'": e for s, e in zip(monoid.state, element)}
    scope = dict(zip(monoid.state, state)) | primes
    folded = w.expressions(monoid.combine, scope, f"{p}c")
    if len(state) == 1:
        w.emit(w.st.assign.format(name=state[0], expr=folded[0]))
    else:  # every new component from the old state: compute all, then assign
        fresh = [f"{p}n{k}" for k in range(len(state))]
        for name, text in zip(fresh, folded):
            w.emit(w.printer.declare.format(type=w.type, name=name, expr=text))
        for s, name in zip(state, fresh):
            w.emit(w.st.assign.format(name=s, expr=name))
    for _ in comp.reduce:
        w.close(w.st.loop_end)
    if comp.epilogue is None:
        return state[0]
    load([comp.epilogue])
    return w.expressions([comp.epilogue], names | dict(zip(monoid.state, state)), f"{p}e")[0]


def _used_indices(comp: Comprehension) -> set[str]:
    """The index variables a comprehension's reads and expressions actually use."""
    used = {n.name for n in topo_order(comp.nodes()) if n.op == "var"}
    out = {n for n in comp.names if n in used}
    for name, read in comp.reads.items():
        if name not in used:
            continue
        if isinstance(read, Load):
            out |= {n for s, n in zip(read.view.strides, comp.names) if s}
        else:
            out |= {n for row in read.index.rows for k, n in zip(row, comp.names) if k}
    return out


def lower_graph(
    graph: TensorGraph, language: str = "c", *, name: str = "run", dtype: str = "f64"
) -> str:
    """Source of one function ``name(inputs…, buffers…)`` computing every comprehension of
    ``graph`` into its buffer (row-major), in ``language`` ("c" or "python"; WGSL prints
    one kernel per comprehension: ``lower_wgsl``)."""
    if language not in STATEMENTS or language == "wgsl":
        raise ValueError(f"lower_graph lowers to C and Python, not {language!r}")
    w = _Writer(language, dtype)
    if not name.isidentifier():
        raise ValueError(f"{name!r} cannot name a function")
    order = [*graph.inputs, *(c.name for c in graph.comprehensions)]
    idents = identifiers(order)
    shapes = {**graph.inputs, **graph.buffers()}
    params = [w.st.param_in.format(type=w.type, name=idents[n]) for n in graph.inputs]
    params += [
        w.st.param_out.format(type=w.type, name=idents[c.name]) for c in graph.comprehensions
    ]
    head = [*w.st.header, w.st.function.format(name=name, params=", ".join(params))]
    for comp in graph.comprehensions:
        w.emit(f"{w.printer.comment} {comp.name}: {_one_line(comp)}")
        loops = [f"_o{k}" for k in range(len(comp.shape))]
        for var, e in zip(loops, comp.shape):
            w.open(w.st.loop.format(var=var, extent=e))
        if w.st.block:
            w.open(w.st.block)
        value = _value(w, comp, loops, idents, shapes)
        at = _affine(list(zip(row_major(comp.shape), loops)), 0)
        w.emit(w.st.store.format(buffer=idents[comp.name], index=at, expr=value))
        if w.st.block:
            w.close(w.st.block_end)
        for _ in comp.shape:
            w.close(w.st.loop_end)
    tail = [w.st.end] if w.st.end else []
    return "\n".join([*head, *w.lines, *tail]) + "\n"


def _one_line(comp: Comprehension) -> str:
    text = format_comprehension(comp).splitlines()[0]
    return text if len(text) <= 200 else text[:197] + "..."


def buffer_order(graph: TensorGraph) -> list[str]:
    """The function's parameters in order: inputs, then every comprehension's buffer."""
    return [*graph.inputs, *(c.name for c in graph.comprehensions)]


@dataclass(frozen=True)
class GpuKernel:
    """One WGSL compute kernel: comprehension ``name`` written to buffer ``write`` with one
    invocation per output element (``size``), reading the buffers ``reads``; ``info`` holds
    the entry point and bindings (storage buffers 0, 1, …: ``reads`` then ``write``)."""

    name: str
    source: str
    info: KernelInfo
    reads: tuple[str, ...]
    write: str
    size: int


def lower_wgsl(graph: TensorGraph, *, entry: str = "run") -> list[GpuKernel]:
    """One WGSL kernel per comprehension of ``graph``, to dispatch in order over buffers
    that stay on the device (inputs and every comprehension's output, row-major f32)."""
    printer = BACKENDS["wgsl"]
    width = printer.workgroup_size[0]
    shapes = {**graph.inputs, **graph.buffers()}
    kernels = []
    for comp in graph.comprehensions:
        reads = tuple(sorted(comp.sources()))
        idents = identifiers([*reads, comp.name])
        access = ["read"] * len(reads) + ["read_write"]
        bindings = tuple(
            Binding(0, k, idents[n], "storage", a, "array<f32>")
            for k, (n, a) in enumerate(zip([*reads, comp.name], access))
        )
        w = _Writer("wgsl", "f32")
        size = max(1, comp.size)
        loops = [f"_o{k}" for k in range(len(comp.shape))]
        for var, stride, n in zip(loops, row_major(comp.shape), comp.shape):
            w.emit(w.st.index.format(name=var, expr=f"_flat / {stride} % {n}"))
        value = _value(w, comp, loops, idents, shapes)
        w.emit(w.st.store.format(buffer=idents[comp.name], index="_flat", expr=value))
        head = [
            f"// {comp.name}: {_one_line(comp)}",
            *(declaration(b) for b in bindings),
            "",
            f"@compute @workgroup_size({width})",
            f"fn {entry}(@builtin(global_invocation_id) gid: vec3<u32>,",
            f"{' ' * (len(entry) + 4)}@builtin(num_workgroups) groups: vec3<u32>) {{",
            f"    let _flat = i32(gid.x + gid.y * groups.x * {width}u);",
            f"    if _flat >= {size} {{",
            "        return;",
            "    }",
        ]
        source = "\n".join([*head, *w.lines, "}"]) + "\n"
        info = KernelInfo(entry, printer.workgroup_size, bindings)
        kernels.append(GpuKernel(comp.name, source, info, reads, comp.name, size))
    return kernels


__all__ = ["STATEMENTS", "GpuKernel", "Statements", "buffer_order", "lower_graph", "lower_wgsl"]
