"""Comprehension graphs printed as C and Python source: loop nests and accumulators.

A graph becomes one function over every buffer (inputs first, then each comprehension's
output, in order). A comprehension is a loop nest over its output index; a reduction adds a
state set to the monoid's identity, a loop over the reduction variables whose body loads its
reads, computes the body and folds it in with the monoid's combine, then the epilogue and a
store. An inline read computes its producer in place, in a nested block. Expressions print
through ``tang.lower``'s printers (each backend's op table, literals and declarations, via
``schedule``); so do the statement forms of a loop nest — function, loop, state,
assignment, buffer load and store, private and workgroup arrays, barriers — one spelling each
in the same printer class (``tang.lower.base.LOOP_NEST``), not code per op.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..expr.graph import BOOL_OPS, Node, add, mul, replace_nodes, topo_order, var
from ..expr.ops import INTEGER_OPS
from ..lower import BACKENDS
from ..lower.base import ATOM, LOOP_NEST, LOOP_NEST_FUNCTION, identifiers
from ..lower.program import ABS, Let, Store, schedule
from .comprehension import Comprehension, Inline, Load, Monoid, TensorGraph
from .passes.schedule import (
    KeyPanel,
    Plan,
    data_pin,
    eliminate_pinned,
    invariant_parts,
    lanes_plan,
    loop_stop,
)
from .passes.schedule import plan as schedule_plan
from .printing import format_comprehension
from .view import row_major

# the longest reduction of an inline producer whose invariant loads are staged
MAX_STAGED = 128


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
        self.printer.require(LOOP_NEST, "tensor graphs")
        self.dtype = dtype
        self.type = self.printer.types[dtype]
        self.lines: list[str] = []
        self.depth = 1
        self._scopes = itertools.count()
        self._loops: list[list] = []  # open loops: [var, extent, first line, has a loop]
        self.inline_lanes = 1  # split an inline producer's reduction over this many lanes
        self.packed: dict[str, str] = {}  # packed inputs' element types, by buffer name
        self.wide: set[str] = set()  # buffers read ``printer.wide`` elements per load
        # buffers declared as vectors (``wide`` of an earlier printing of the same kernel):
        # an element of one is read as a vector's cell
        self.split: set[str] = set()
        self.unroll = self.printer.unroll  # innermost constant loops this short are unrolled

    def buffer_element(self, buffer: str, source: str, at: str) -> str:
        """Element ``at`` of buffer ``source`` (spelt ``buffer``), as a number: a plain
        load, or a packed element cut from its word (the printer's ``packed`` table)."""
        kind = self.packed.get(source)
        if source in self.split:
            return self.printer.wide_element.format(name=buffer, i=at)  # type: ignore[union-attr]
        if kind is None:
            return self.printer.element.format(name=buffer, i=at)
        return self.printer.packed[kind].format(name=buffer, i=at, type=self.type)

    def emit(self, line: str) -> None:
        self.lines.append(self.printer.indent * self.depth + line)

    def open(self, line: str) -> None:
        self.emit(line)
        self.depth += 1

    def close(self, line: str | None) -> None:
        self.depth -= 1
        if line is not None:
            self.emit(line)

    def loop(self, var: str, extent: int | str, unroll: bool | str = False, step: int = 1) -> None:
        """Open a loop of ``var`` over ``range(extent)`` (closed by ``end_loop``). An
        innermost loop of a short constant extent is unrolled where the table says so: its
        body is printed once per value, each copy in a block that binds ``var``
        (``unroll``: this loop too, though it holds others: a register block's rows;
        ``GUARD``: an axis a select reads, unrolled wherever the language has blocks;
        ``HINT``: as ``True``, and where it stays a loop the compiler is asked to unroll it;
        ``step`` > 1: ``var`` counts in steps of that many, never unrolled)."""
        if self._loops:
            self._loops[-1][3] = True  # the enclosing loop is not innermost
        self._loops.append([var, extent, len(self.lines), False, unroll, step])
        self.depth += 1

    def end_loop(self) -> None:
        var, extent, start, nested, forced, step = self._loops.pop()
        self.depth -= 1
        limit = GUARD_EXTENT if forced == GUARD else self.unroll
        unroll = (
            step == 1
            and isinstance(extent, int)
            and (forced or not nested)
            and 0 < extent <= limit
            and self.printer.block is not None
        )
        if not unroll:  # a loop: the body is already indented one level in
            loop = self.printer.loop if step == 1 else self.printer.loop_step
            header = self.printer.indent * self.depth + loop.format(
                var=var, extent=extent, step=step
            )
            self.lines.insert(start, header)
            if forced == HINT and self.printer.unroll_hint and isinstance(extent, int):
                hint = self.printer.unroll_hint.format(extent=extent)
                self.lines.insert(start, self.printer.indent * self.depth + hint)
            if self.printer.loop_end is not None:
                self.emit(self.printer.loop_end)
            return
        body = self.lines[start:]
        del self.lines[start:]
        for value in range(extent):
            self.open(self.printer.block)  # type: ignore[arg-type]
            self.emit(self.printer.declare_index.format(name=var, expr=value))
            self.lines.extend(body)
            self.close(self.printer.block_end)

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


class _Scope:
    """The local names of one comprehension being emitted: its index variables (``local``),
    its reads (``reads``) and how each prints as a value in an expression (``names``)."""

    def __init__(
        self,
        w: _Writer,
        comp: Comprehension,
        buffers: dict,
        shapes: dict,
        staged: Mapping[str, str] | None = None,
    ) -> None:
        """``staged``: reads already held in a private array indexed by the reduction
        variable (``stage_inline_loads``)."""
        self.w, self.comp, self.buffers, self.shapes = w, comp, buffers, shapes
        self.staged = dict(staged or {})
        self.inline_staged: dict[str, dict[str, str]] = {}
        self.wide: dict[str, str] = {}  # reads held in a private array of vectors: its cell
        self.p = p = w.scope()
        self.local = {n: f"{p}{n}" for n in comp.names}
        self.reads = {name: f"{p}v{k}" for k, name in enumerate(comp.reads)}
        self.names = {
            n: w.printer.as_value.format(name=self.local[n], type=w.type) for n in comp.names
        } | self.reads

    def indices(self, given: Mapping[str, str], every: bool = False) -> None:
        """Declare the index variables ``given`` (name → integer expression) that are used
        (``every``: all of them)."""
        used = _used_indices(self.comp, set(self.staged))
        for name, expr in given.items():
            if every or name in used:
                self.w.emit(self.w.printer.declare_index.format(name=self.local[name], expr=expr))

    def address(self, view: Any, local: Mapping[str, str] | None = None) -> str:
        """The flat position ``view`` gives for the index variables' local names."""
        local = local or self.local
        return _affine(
            [(s, local[n]) for s, n in zip(view.strides, self.comp.names) if s], view.offset
        )

    def load(self, nodes: Sequence[Node], only: Callable[[str], bool] | None = None) -> None:
        """Declare the reads ``nodes`` use (those ``only`` accepts): a buffer element at the
        view's position, or an inline producer computed in place."""
        w, comp = self.w, self.comp
        used = {n.name for n in topo_order(nodes) if n.op == "var"}
        for name, read in comp.reads.items():
            if name not in used or (only is not None and not only(name)):
                continue
            if name in self.wide:
                w.emit(
                    w.printer.declare.format(
                        type=w.type, name=self.reads[name], expr=self.wide[name]
                    )
                )
                continue
            if name in self.staged:
                ((r, _),) = comp.reduce
                array_name, at = self.staged[name], self.local[r]
                if isinstance(array_name, tuple):  # a segment of a multi-row array
                    array_name, segment = array_name
                    at = f"{segment} + {at}"
                cell = w.printer.element.format(name=array_name, i=at)
                w.emit(w.printer.declare.format(type=w.type, name=self.reads[name], expr=cell))
                continue
            if isinstance(read, Load):
                v = read.view
                size = math.prod(self.shapes[read.source])
                at = self.address(v)
                lo, hi = v.span() if v.size else (0, 0)
                if lo < 0 or hi >= size:  # only under a guard that discards the value
                    at = w.printer.clamp.format(p=at, last=size - 1)
                w.emit(
                    w.printer.declare.format(
                        type=w.type,
                        name=self.reads[name],
                        expr=w.buffer_element(self.buffers[read.source], read.source, at),
                    )
                )
                continue
            inner = [
                _affine([(k, self.local[n]) for k, n in zip(row, comp.names) if k], c)
                for row, c in zip(read.index.rows, read.index.consts)
            ]
            if w.printer.block:
                w.emit(
                    w.printer.state.format(type=w.type, name=self.reads[name], value=w.literal(0))
                )
                w.open(w.printer.block)
            staged = self.inline_staged.get(name)
            split = lanes_plan(read.comp, w.inline_lanes, w.inline_lanes + 1)
            lanes = w.inline_lanes if split else 1
            value = _value(w, read.comp, inner, self.buffers, self.shapes, staged, lanes)
            w.emit(w.printer.assign.format(name=self.reads[name], expr=value))
            if w.printer.block:
                w.close(w.printer.block_end)


def _value(
    w: _Writer,
    comp: Comprehension,
    index: Sequence[str],
    buffers: dict,
    shapes: dict,
    staged: Mapping[str, str] | None = None,
    lanes: int = 1,
) -> str:
    """Emit the lines computing ``comp`` at output index ``index`` (integer expressions)
    and return the text of its value (``staged``: reads held in private arrays; ``lanes``:
    a one-variable reduction split over that many partial states, ``_split_reduction``)."""
    sc = _Scope(w, comp, buffers, shapes, staged)
    p = sc.p
    sc.indices(dict(zip(comp.index, index)))
    names = sc.names
    if not comp.reduce:
        sc.load(comp.body)
        return w.expressions(comp.body, names, f"{p}t")[0]
    monoid = comp.monoid
    assert monoid is not None
    state = [f"{p}s{k}" for k in range(monoid.arity)]
    for s, v in zip(state, monoid.identity):
        w.emit(w.printer.state.format(type=w.type, name=s, value=w.literal(v)))
    pin = data_pin(comp)
    if lanes > 1 and pin is None:
        _split_reduction(w, sc, lanes, state)
    else:
        loops = [(n, e) for n, e in comp.reduce if pin is None or n != pin[0]]
        if len(loops) == 1 and _stop(sc, loops[0][1]) == loops[0][1]:
            ((r, e),) = loops  # a whole loop, unrolled: its contiguous reads as vectors
            if _unrolled(w, comp, comp.body, e):
                used = sorted({n.name for n in topo_order(comp.body) if n.op == "var"})
                wide = [name for name in used if _widens(sc, name, r, e, e)]
                _load_wide(sc, wide, r, "0", e, e, sc.local[r])
        for n, e in loops:
            w.loop(sc.local[n], _stop(sc, e))
        loaded: set[str] = set()
        if pin is not None:  # the one step that can count: r bound to the data's value
            r, key = pin
            loaded = _bind_pinned(sc, r, key, dict(comp.reduce)[r])
        sc.load(comp.body, only=lambda name: name not in loaded)
        element = _elements(w, comp, comp.body, names, p)
        _fold(w, monoid, range(monoid.arity), dict(zip(monoid.state, state)), element, state, p)
        for _ in loops:
            w.end_loop()
        sc.wide.clear()
    if comp.epilogue is None:
        return state[0]
    sc.load([comp.epilogue])
    return w.expressions([comp.epilogue], names | dict(zip(monoid.state, state)), f"{p}e")[0]


def _bind_pinned(sc: _Scope, r: str, key: Node, extent: int) -> set[str]:
    """Declare reduction variable ``r`` as the whole number ``key`` holds, kept in
    ``[0, extent)`` (nan and out-of-range values land inside the buffer; the body's own
    ``r == key`` guard discards them). Returns the reads declared for ``key``."""
    w = sc.w
    used = {n.name for n in topo_order([key]) if n.op == "var"} & set(sc.comp.reads)
    sc.load([key])
    (text,) = w.expressions([key], dict(sc.names), f"{sc.p}k")
    number = f"{sc.p}key"
    w.emit(w.printer.declare.format(type=w.type, name=number, expr=text))
    position = w.printer.to_index.format(x=number, last=extent - 1, type=w.type)
    w.emit(w.printer.declare_index.format(name=sc.local[r], expr=position))
    return used


def _initial_array(
    w: _Writer, name: str, size: int, value: float, lane: str, rows: int = 1
) -> None:
    """A private array of ``size`` elements, each set to ``value``; set ``rows`` at a time
    with those loops unrolled, so that a register block too large to unroll as one loop
    still sees only constant positions (a position computed at run time keeps a kernel's
    whole array in memory, not in registers)."""
    text = w.literal(value)
    w.emit(w.printer.array.format(type=w.type, name=name, size=size, value=text))
    cols = size // rows
    if rows > 1:
        w.loop(f"{lane}r", rows, unroll=True)
    w.loop(lane, cols)
    at = lane if rows == 1 else f"{lane}r * {cols} + {lane}"
    w.emit(w.printer.assign.format(name=w.printer.element.format(name=name, i=at), expr=text))
    w.end_loop()
    if rows > 1:
        w.end_loop()


def _split_reduction(w: _Writer, sc: _Scope, lanes: int, state: Sequence[str]) -> None:
    """Fold a reduction into ``lanes`` interleaved partial states (step ``k`` of its last
    variable into lane ``k mod lanes``: independent, so the compiler vectorises them; the
    other reduction variables loop around), then combine the lanes into ``state``. Reads
    that do not move with the last variable (a block's scale) load once per outer step."""
    comp, st, p = sc.comp, w.printer, sc.p
    monoid = comp.monoid
    assert monoid is not None
    *outer, (r, extent) = comp.reduce
    cells = [f"{p}l{k}" for k in range(monoid.arity)]
    for name, v in zip(cells, monoid.identity):
        _initial_array(w, name, lanes, v, f"{p}i")
    lane = f"{p}q"
    lane_state = {s: st.element.format(name=c, i=lane) for s, c in zip(monoid.state, cells)}
    whole = extent - extent % lanes

    def moves(name: str) -> bool:
        return comp.depends_on(var(name), {r})

    def fold(first: int | str) -> None:
        w.emit(st.declare_index.format(name=sc.local[r], expr=f"{first} + {lane}"))
        sc.load(comp.body, moves)
        element = _elements(w, comp, comp.body, sc.names, p)
        targets = list(lane_state.values())
        _fold(w, monoid, range(monoid.arity), lane_state, element, targets, p)

    for n, e in outer:
        w.loop(sc.local[n], e)
    sc.load(comp.body, lambda name: not moves(name))
    if whole:
        w.loop(f"{p}k", whole // lanes)
        w.loop(lane, lanes)
        fold(f"{p}k * {lanes}")
        w.end_loop()
        w.end_loop()
    if extent % lanes:
        w.loop(lane, extent % lanes)
        fold(whole)
        w.end_loop()
    for _ in outer:
        w.end_loop()
    w.loop(lane, lanes)
    _fold(
        w,
        monoid,
        range(monoid.arity),
        dict(zip(monoid.state, state)),
        list(lane_state.values()),
        state,
        f"{p}m",
    )
    w.end_loop()


# the keys of a register block's own position in ``given`` (kernels: one invocation per block)
ROW_BLOCK, COLUMN_BLOCK = "_rb", "_cb"


def _blocked(
    w: _Writer,
    comp: Comprehension,
    plan: Plan,
    given: Mapping[str, str],
    buffers: dict,
    shapes: dict,
    out: str,
) -> None:
    """Emit a register-blocked plan. The body splits into its row operand (the largest
    parts that do not vary along ``b``) and its column operand (the largest parts of the
    rest that do not vary along ``a``); R×V states are kept in a private array (in vector
    registers). In a loop nest (``given`` empty) one iteration per (batch index, block of
    V columns) computes the column operand once into a contiguous panel (reduction × V)
    and loops over the blocks of R rows; in a kernel ``given`` places one invocation at
    its batch index and block (``ROW_BLOCK``, ``COLUMN_BLOCK``) and each step computes V
    column values. Edge blocks clamp their positions and store only inside the output."""
    st = w.printer
    assert plan.a and plan.b and st.block
    sc = _Scope(w, comp, buffers, shapes)
    p, local = sc.p, sc.local
    monoid = comp.monoid
    assert monoid is not None
    extent = dict(zip(comp.index, comp.shape))
    ((r, steps),) = comp.reduce
    rows_per, cols_per = plan.block
    a, b = plan.a, plan.b
    kernel = bool(given)
    panel = not kernel and st.scratch is not None

    def along(axis: str, extra: frozenset = frozenset()) -> Callable[[Node], bool]:
        def varies(n: Node) -> bool:
            return n.op == "var" and (
                n.name == axis
                or n.name in extra
                or (n.name in plan.rows + plan.cols and comp.depends_on(n, [axis]))
            )

        return varies

    body, row_parts = _hoist(list(comp.body), along(b), f"{p}h")
    row_names = frozenset(name for name, _ in row_parts)
    body, col_parts = _hoist(body, along(a, row_names), f"{p}g")
    leaves = {n.name for n in topo_order(body) if n.op == "var"}
    row_parts += [(name, var(name)) for name in plan.rows if name in leaves]
    col_parts += [(name, var(name)) for name in plan.cols if name in leaves]

    first_row, first_col = f"{p}fr", f"{p}fc"
    row, col, column = f"{p}rr", f"{p}vv", f"{p}sv"
    col_arrays = {name: f"{p}c{k}" for k, (name, _) in enumerate(col_parts)}
    if kernel:  # this invocation's block
        for n in comp.index:
            if n not in (a, b):
                w.emit(st.declare_index.format(name=local[n], expr=given[n]))
        for first, key, size in (
            (first_row, ROW_BLOCK, rows_per),
            (first_col, COLUMN_BLOCK, cols_per),
        ):
            w.emit(st.declare_index.format(name=first, expr=f"({given[key]}) * {size}"))
    else:
        batch = [(n, e) for n, e in zip(comp.index, comp.shape) if n not in (a, b)]
        outer = [*batch, (f"{p}cb", -(-extent[b] // cols_per))]
        flat = f"{p}o"
        if st.parallel and math.prod(e for _, e in outer) > 1 and _worth_threads(comp):
            w.emit(st.parallel.format(depth=1, balance="static"))
        w.loop(flat, math.prod(e for _, e in outer))
        w.open(st.block)
        for (n, e), stride in zip(outer, row_major([e for _, e in outer])):
            unravel = st.unravel.format(flat=flat, stride=stride, extent=e)
            w.emit(st.declare_index.format(name=local.get(n, n), expr=unravel))
        w.emit(st.declare_index.format(name=first_col, expr=f"{p}cb * {cols_per}"))

    def position(axis: str, first: str, lane: str) -> str:
        """Position ``lane`` of the block at ``first`` along ``axis``, clamped into the
        output where the blocks overrun it (edge blocks compute on, and store nothing)."""
        if extent[axis] % (rows_per if axis == a else cols_per) == 0:
            return f"{first} + {lane}"
        return st.minimum.format(a=f"{first} + {lane}", b=extent[axis] - 1)

    def operand(parts: list, arrays: dict, axis: str, first: str, lane: str, size: int, at: str):
        """One operand at the block's ``size`` positions along ``axis`` (for step
        ``local[r]``), each part into its array's cell ``at``."""
        w.loop(lane, size)
        w.open(st.block)
        w.emit(st.declare_index.format(name=local[axis], expr=position(axis, first, lane)))
        nodes = [node for _, node in parts]
        sc.load(nodes)
        for (name, _), text in zip(parts, w.expressions(nodes, sc.names, f"{p}{axis}")):
            cell = st.element.format(name=arrays[name], i=at)
            w.emit(st.assign.format(name=cell, expr=text))
        w.close(st.block_end)
        w.end_loop()

    col_nodes = [node for _, node in col_parts]
    wide = []
    if kernel and _unrolled(w, comp, col_nodes, cols_per):
        col_reads = sorted({n.name for n in topo_order(col_nodes) if n.op == "var"})
        wide = [name for name in col_reads if _widens(sc, name, b, extent[b], cols_per)]

    def column_values(at: str) -> None:
        _load_wide(sc, wide, b, first_col, extent[b], cols_per, column)
        operand(col_parts, col_arrays, b, first_col, column, cols_per, at)
        sc.wide.clear()

    if panel:  # the column operand, once per column block: panel[step * V + column]
        for name in col_arrays.values():
            w.emit(st.scratch.format(type=w.type, name=name, size=steps * cols_per))
        w.loop(local[r], steps)
        if col_parts:
            column_values(f"{local[r]} * {cols_per} + {column}")
        w.end_loop()
    if not kernel:
        w.loop(f"{p}rb", -(-extent[a] // rows_per))
        w.emit(st.declare_index.format(name=first_row, expr=f"{p}rb * {rows_per}"))
    state = [f"{p}s{k}" for k in range(monoid.arity)]
    for name, v in zip(state, monoid.identity):
        _initial_array(w, name, rows_per * cols_per, v, f"{p}z", rows_per)
    w.loop(local[r], steps)
    if not panel and col_parts:
        for name in col_arrays.values():
            w.emit(st.array.format(type=w.type, name=name, size=cols_per, value=w.literal(0)))
        column_values(column)
    row_arrays = {name: f"{p}w{k}" for k, (name, _) in enumerate(row_parts)}
    for array_name in row_arrays.values():
        w.emit(st.array.format(type=w.type, name=array_name, size=rows_per, value=w.literal(0)))
    if row_parts:
        operand(row_parts, row_arrays, a, first_row, row, rows_per, row)
    staged = set(row_arrays) | set(col_arrays)
    sc.load(body, lambda name: name not in staged)  # reads along neither axis
    w.loop(row, rows_per, unroll=True)
    w.loop(col, cols_per)
    for axis, first, lane in ((a, first_row, row), (b, first_col, col)):
        if axis in leaves:
            w.emit(st.declare_index.format(name=local[axis], expr=position(axis, first, lane)))
    names = dict(sc.names)
    for name, array_name in row_arrays.items():
        names[name] = st.element.format(name=array_name, i=row)
    for name, array_name in col_arrays.items():
        at = f"{local[r]} * {cols_per} + {col}" if panel else col
        names[name] = st.element.format(name=array_name, i=at)
    element = _elements(w, comp, body, names, p)
    cell = f"{row} * {cols_per} + {col}"
    cells = [st.element.format(name=s, i=cell) for s in state]
    _fold(w, monoid, range(monoid.arity), dict(zip(monoid.state, cells)), element, cells, p)
    w.end_loop()
    w.end_loop()
    w.end_loop()
    # the epilogue and the store, inside the output only
    w.loop(row, rows_per, unroll=True)
    w.loop(col, cols_per)
    w.emit(st.declare_index.format(name=local[a], expr=f"{first_row} + {row}"))
    w.emit(st.declare_index.format(name=local[b], expr=f"{first_col} + {col}"))
    w.open(st.when.format(cond=f"{local[a]} < {extent[a]} && {local[b]} < {extent[b]}"))
    final = {s: st.element.format(name=n, i=cell) for s, n in zip(monoid.state, state)}
    value = final[monoid.state[0]]
    if comp.epilogue is not None:
        sc.load([comp.epilogue])
        value = w.expressions([comp.epilogue], sc.names | final, f"{p}x")[0]
    at = _affine(list(zip(row_major(comp.shape), (local[n] for n in comp.index))), 0)
    w.emit(st.store.format(buffer=out, index=at, expr=value))
    w.close(st.when_end)
    w.end_loop()
    w.end_loop()
    if not kernel:
        w.end_loop()  # the row blocks
        if panel:
            for name in col_arrays.values():
                w.emit(st.scratch_end.format(name=name))
        w.close(st.block_end)
        w.end_loop()


def _widens(sc: _Scope, name: str, axis: str, extent: int, block: int) -> bool:
    """Whether read ``name`` can be loaded ``printer.wide`` elements at a time in blocks of
    ``block`` positions along ``axis`` (of ``extent``, blocks starting at multiples of
    ``block``): a plain load inside its buffer, contiguous along ``axis``, every other
    stride, its offset, the block, the extent and its buffer's size whole multiples of the
    width."""
    n, read = sc.w.printer.wide, sc.comp.reads.get(name)
    if n == 1 or block % n or extent % n or name in sc.staged or not isinstance(read, Load):
        return False
    v, at = read.view, sc.comp.names.index(axis)
    size = math.prod(sc.shapes[read.source])
    return (
        read.source not in sc.w.packed
        and v.strides[at] == 1
        and v.offset % n == 0
        and all(s % n == 0 for k, s in enumerate(v.strides) if k != at)
        and size % n == 0
        and v.size > 0
        and v.span()[0] >= 0
        and v.span()[1] < size
    )


def _load_wide(
    sc: _Scope, names: Sequence[str], axis: str, first: str, extent: int, size: int, lane: str
) -> None:
    """Read each of ``names`` (``_widens``) at the ``size`` positions from ``first`` along
    ``axis`` as ``size / wide`` vectors into a private array: its value at position
    ``first + lane`` is then a vector's cell (``sc.wide``, until the caller clears it)."""
    w = sc.w
    st, n = w.printer, w.printer.wide
    for name in names:
        read = sc.comp.reads[name]
        vectors, k = f"{sc.reads[name]}q", f"{sc.p}qk"
        w.emit(st.wide_array.format(type=w.type, name=vectors, size=size // n))  # type: ignore[union-attr]
        w.loop(k, size // n)
        w.open(st.block)
        start = st.minimum.format(a=f"{first} + {k} * {n}", b=extent - n)
        w.emit(st.declare_index.format(name=sc.local[axis], expr=start))
        at = f"({sc.address(read.view)}) / {n}"
        load = st.element.format(name=sc.buffers[read.source], i=at)
        w.emit(st.assign.format(name=st.element.format(name=vectors, i=k), expr=load))
        w.close(st.block_end)
        w.end_loop()
        vector = st.element.format(name=vectors, i=f"{lane} / {n}")
        sc.wide[name] = st.element.format(name=vector, i=f"{lane} % {n}")
        w.wide.add(read.source)


def _unrolled(w: _Writer, comp: Comprehension, nodes: Sequence[Node], extent: int) -> bool:
    """Whether a loop of ``extent`` whose body computes ``nodes`` prints unrolled: short
    enough, and innermost (no inline producer's loop inside). A private array indexed by
    its variable stays in registers only then."""
    names = {n.name for n in topo_order(list(nodes)) if n.op == "var"}
    inner = any(isinstance(comp.reads.get(name), Inline) for name in names)
    return not inner and 0 < extent <= w.unroll and w.printer.block is not None


def _load_at(sc: _Scope, read: Any, local: Mapping[str, str]) -> str:
    """The element a plain load reads at the index variables' texts ``local`` (clamped
    into its buffer where the view can leave it)."""
    w = sc.w
    at = sc.address(read.view, local)
    size = math.prod(sc.shapes[read.source])
    lo, hi = read.view.span() if read.view.size else (0, 0)
    if lo < 0 or hi >= size:
        at = w.printer.clamp.format(p=at, last=size - 1)
    return w.buffer_element(sc.buffers[read.source], read.source, at)


# the lanes of an inline producer's reduction (a dot product inside a loop) in compiled nests
INLINE_LANES = 8
# the rows of a vector plan's iteration in compiled nests (independent chains to interleave)
VECTOR_ROWS = 4
# compiled C: a rescaling vector plan's reduction steps per block (``Plan.keys``), and
# how many of them add their value rows to the state in one pass
VECTOR_KEYS = 16
KEY_GROUP = 4
# the plan options compiled nests default to (register plans)
REGISTER_DEFAULTS = {"vector_rows": VECTOR_ROWS, "vector_keys": VECTOR_KEYS, "key_panel": True}
# a key panel's rows are padded off whole multiples of this many bytes (cache aliasing)
PANEL_ALIAS = 4096
# the least work (outputs × reduction steps) worth handing to threads
PARALLEL_WORK = 1 << 15
# an output axis this short whose index steers a select is printed once per value
GUARD_EXTENT = 4
GUARD = "guard"  # the ``unroll`` of such an axis's loop
HINT = "hint"  # the ``unroll`` of a short loop the compiler should unroll (``unroll_hint``)


def _guard_axes(comp: Comprehension) -> set[str]:
    """Output axes of at most ``GUARD_EXTENT`` values that some select's condition depends
    on alone (a butterfly's upper or lower half, a concat's parts): with the axis fixed in
    each printed copy, the condition is a constant the compiler folds."""
    extents = dict(zip(comp.index, comp.shape))
    short = {n for n, e in extents.items() if 1 < e <= GUARD_EXTENT}
    found: set[str] = set()
    for node in topo_order(comp.nodes()):
        if node.op != "select":
            continue
        leaves = {n.name for n in topo_order([node.args[0]]) if n.op == "var"}
        if leaves and leaves <= short:
            found |= leaves
    return found


def _worth_threads(comp: Comprehension) -> bool:
    return comp.size * math.prod(e for _, e in comp.reduce) >= PARALLEL_WORK


def _stop(sc: _Scope, extent: int, local: Mapping[str, str] | None = None) -> int | str:
    """Where the reduction loop may stop: its extent, or sooner where every later element
    is the monoid's identity (``loop_stop``), at the index variables' texts ``local``."""
    found = loop_stop(sc.comp)
    if found is None:
        return extent
    coeffs, const = found
    local = local or sc.local
    bound = _affine([(k, local[n]) for n, k in coeffs.items()], const)
    return sc.w.printer.minimum.format(a=extent, b=bound)


def _elements(
    w: _Writer, comp: Comprehension, nodes: Sequence[Node], names: Mapping[str, str], p: str
) -> list[str]:
    """Declare each body component as a named local (the combine reads it as an atom)."""
    out = []
    monoid = comp.monoid
    combined = {n.name for n in topo_order(monoid.combine) if n.op == "var"} if monoid else set()
    for k, text in enumerate(w.expressions(nodes, dict(names), f"{p}b")):
        out.append(f"{p}e{k}")
        if monoid is None or monoid.state[k] + "'" in combined:
            w.emit(w.printer.declare.format(type=w.type, name=out[-1], expr=text))
    return out


def _fold(
    w: _Writer,
    monoid: Monoid,
    components: Iterable[int],
    scope: Mapping[str, str],
    element: Sequence[str],
    targets: Sequence[str],
    p: str,
    combine: Sequence[Node] | None = None,
) -> None:
    """Fold ``element`` into the state: every new component from the old state first, then
    the assignments (``combine``: the monoid's, or a rewritten one)."""
    components = list(components)
    nodes = [(combine or monoid.combine)[k] for k in components]
    primes = {monoid.state[k] + "'": e for k, e in zip(components, element)}
    folded = w.expressions(nodes, dict(scope) | primes, f"{p}c")
    if len(components) == 1:
        w.emit(w.printer.assign.format(name=targets[0], expr=folded[0]))
        return
    fresh = [f"{p}n{k}" for k in components]
    for name, text in zip(fresh, folded):
        w.emit(w.printer.declare.format(type=w.type, name=name, expr=text))
    for target, name in zip(targets, fresh):
        w.emit(w.printer.assign.format(name=target, expr=name))


def _hoist(
    nodes: Sequence[Node], moving: Callable[[Node], bool], prefix: str
) -> tuple[list[Node], list[tuple[str, Node]]]:
    """Split ``nodes`` into the largest subexpressions that do not vary (``moving`` says
    which leaves do), named ``prefix0, prefix1…``, and the rest rewritten over those names."""
    named = [(f"{prefix}{k}", a) for k, a in enumerate(invariant_parts(nodes, moving))]
    rebuilt = replace_nodes(nodes, {id(a): var(name) for name, a in named})
    return rebuilt, named


def _along_vector(
    comp: Comprehension, plan: Plan
) -> tuple[Callable[[str], bool], Callable[[Node], bool]]:
    """Whether a read of ``comp`` varies along ``plan``'s vector axes, and whether a leaf
    of its body does (an index of the vector, or such a read)."""

    def read_varies(name: str) -> bool:
        return comp.depends_on(var(name), plan.vector)

    def leaf_varies(n: Node) -> bool:
        return n.op == "var" and (
            n.name in plan.vector or (n.name in comp.reads and read_varies(n.name))
        )

    return read_varies, leaf_varies


def _vector(
    w: _Writer,
    comp: Comprehension,
    plan: Plan,
    given: Mapping[str, str],
    buffers: dict,
    shapes: dict,
    out: str,
    panel: _Panel | None = None,
) -> None:
    """Emit a vector plan: the output axes ``given`` are fixed; the plan's vector axes run
    inside, the varying state is a private array over them, and everything that does not
    vary along them runs once per reduction step. Stores every output element it covers.
    With a row axis (``plan.a``, ``plan.block[0]`` rows, placed by ``given[ROW_BLOCK]``)
    one iteration covers that many rows too: each reduction step runs every row's work
    in turn (independent chains the compiler interleaves, and the rows share what they
    read), their states held in private arrays over the rows."""
    monoid = comp.monoid
    assert monoid is not None and comp.reduce
    sc = _Scope(w, comp, buffers, shapes)
    p, st = sc.p, w.printer
    rows = plan.block[0] if plan.a else 1
    row_axis = plan.a
    extent = dict(zip(comp.index, comp.shape))
    sc.indices({n: e for n, e in given.items() if n != ROW_BLOCK}, every=True)
    axes = [(n, e) for n, e in zip(comp.index, comp.shape) if n in plan.vector]
    width = math.prod(e for _, e in axes)
    j, rr, first = f"{p}j", f"{p}rr", f"{p}fr"
    moving_state = set(plan.varying)
    fixed_state = [k for k in range(monoid.arity) if k not in moving_state]
    state = {k: f"{p}s{k}" for k in fixed_state} | {k: f"{p}a{k}" for k in moving_state}

    def fixed(k: int) -> str:  # a fixed state component (of this row)
        return state[k] if rows == 1 else st.element.format(name=state[k], i=rr)

    def moving(k: int) -> str:  # a varying state component at this row and vector position
        at = j if rows == 1 else f"{rr} * {width} + {j}"
        return st.element.format(name=state[k], i=at)

    def each_row(unroll: bool | str = True, declare: bool = True) -> None:
        """Open the loop over this iteration's rows (if any), declaring each row's index
        (``declare``; ``unroll``: as ``_Writer.loop``'s)."""
        if rows > 1:
            assert row_axis is not None
            w.loop(rr, rows, unroll=unroll)
            if not declare:
                return
            last = extent[row_axis] - 1
            clamped = st.minimum.format(a=f"{first} + {rr}", b=last)
            w.emit(st.declare_index.format(name=sc.local[row_axis], expr=clamped))

    def end_rows() -> None:
        if rows > 1:
            w.end_loop()

    if rows > 1:
        w.emit(st.declare_index.format(name=first, expr=f"({given[ROW_BLOCK]}) * {rows}"))
    for k in fixed_state:
        if rows == 1:
            value = w.literal(monoid.identity[k])
            w.emit(st.state.format(type=w.type, name=state[k], value=value))
        else:
            _initial_array(w, state[k], rows, monoid.identity[k], f"{p}z")
    for k in sorted(moving_state):
        _initial_array(w, state[k], rows * width, monoid.identity[k], j, rows)

    def vector_index() -> None:
        stride = width
        for n, e in axes:
            stride //= e
            w.emit(
                st.declare_index.format(
                    name=sc.local[n], expr=st.unravel.format(flat=j, stride=stride, extent=e)
                )
            )

    read_varies, leaf_varies = _along_vector(comp, plan)
    row = None if rows == 1 else (rr, rows, row_axis, first)
    stage_inline_loads(sc, [comp.body[k] for k in fixed_state], row)
    stop_at = dict(sc.local)
    found = loop_stop(comp)
    if rows > 1 and found is not None and row_axis in found[0]:
        # the loop runs as far as the block's last row needs
        last_row = st.minimum.format(a=f"{first} + {rows - 1}", b=extent[row_axis] - 1)
        w.emit(st.declare_index.format(name=f"{p}lr", expr=last_row))
        stop_at[row_axis] = f"{p}lr"
    cells = {k: moving(k) for k in moving_state}

    def store_outputs() -> None:  # the epilogue and the store, per element of the vector
        # (and row inside the output)
        if rows > 1:
            assert row_axis is not None
            w.loop(rr, rows, unroll=True)
            w.emit(st.declare_index.format(name=sc.local[row_axis], expr=f"{first} + {rr}"))
            w.open(st.when.format(cond=f"{sc.local[row_axis]} < {extent[row_axis]}"))
        w.loop(j, width)
        vector_index()
        final = {monoid.state[k]: fixed(k) for k in fixed_state} | {
            monoid.state[k]: cells[k] for k in moving_state
        }
        if comp.epilogue is None:
            value = final[monoid.state[0]]
        else:
            sc.load([comp.epilogue])
            value = w.expressions([comp.epilogue], sc.names | final, f"{p}z")[0]
        at = _affine(list(zip(row_major(comp.shape), (sc.local[n] for n in comp.index))), 0)
        w.emit(st.store.format(buffer=out, index=at, expr=value))
        w.end_loop()
        if rows > 1:
            w.close(st.when_end)
            w.end_loop()

    if plan.keys > 1:  # compiled C: the steps in blocks (a rescaling monoid)
        stop = _stop(sc, comp.reduce[0][1], stop_at)
        rows_loop = (each_row, end_rows)
        blocks = (stop, rows_loop, vector_index, fixed, cells, width, j)
        _rescaled_blocks(sc, plan, *blocks, panel)
        store_outputs()
        return
    for n, e in comp.reduce:
        w.loop(sc.local[n], _stop(sc, e, stop_at))
    # once per reduction step: the invariant body, the invariant parts of the varying one
    moving_body, lifted = _hoist([comp.body[k] for k in sorted(moving_state)], leaf_varies, f"{p}h")
    outside = [comp.body[k] for k in fixed_state] + [node for _, node in lifted]
    # the reads along the vector loaded as vectors (where its loop unrolls), those the rows
    # share (and what their inline producers read alike) once per step, before the rows
    wide: list[str] = []
    if len(axes) == 1 and _unrolled(w, comp, moving_body, width):
        used = sorted({n.name for n in topo_order(moving_body) if n.op == "var"})
        wide = [n for n in used if read_varies(n) and _widens(sc, n, axes[0][0], width, width)]
    shared = [n for n in wide if rows == 1 or not comp.depends_on(var(n), [row_axis])]
    if rows > 1:
        stage_shared_inline_loads(sc, outside, {row_axis, *plan.vector})
        _load_wide(sc, shared, axes[0][0], "0", width, width, j)
    each_row()
    sc.load(outside, lambda name: not read_varies(name))
    texts = w.expressions(outside, sc.names, f"{p}b") if outside else []
    names = dict(sc.names)
    element: dict[int, str] = {}
    for k, text in zip(fixed_state, texts):
        element[k] = f"{p}e{k}"
        w.emit(w.printer.declare.format(type=w.type, name=element[k], expr=text))
    for (name, _), text in zip(lifted, texts[len(fixed_state) :]):
        w.emit(w.printer.declare.format(type=w.type, name=name, expr=text))
        names[name] = name
    # the varying combine, with what it computes from invariant values hoisted
    moving_names = {monoid.state[k] for k in moving_state} | {
        monoid.state[k] + "'" for k in moving_state
    }
    combine, lifted_c = _hoist(
        [monoid.combine[k] for k in sorted(moving_state)],
        lambda n: n.op == "var" and n.name in moving_names,
        f"{p}g",
    )
    fixed_scope = {monoid.state[k]: fixed(k) for k in fixed_state} | {
        monoid.state[k] + "'": element[k] for k in fixed_state
    }
    # the hoisted parts and the new invariant state share their temporaries
    fresh = [f"{p}f{k}" for k in fixed_state]
    once = [n for _, n in lifted_c] + [monoid.combine[k] for k in fixed_state]
    if once:
        texts = w.expressions(once, fixed_scope, f"{p}c")
        for name, text in zip([n for n, _ in lifted_c] + fresh, texts):
            w.emit(w.printer.declare.format(type=w.type, name=name, expr=text))
    if wide:
        per_row = wide if rows == 1 else [n for n in wide if n not in shared]
        _load_wide(sc, per_row, axes[0][0], "0", width, width, j)
    w.loop(j, width)
    vector_index()
    sc.load(moving_body, read_varies)
    moving_elements = _elements_named(w, moving_body, names, f"{p}m", sorted(moving_state))
    scope = (
        fixed_scope
        | {n: n for n, _ in lifted_c}
        | {monoid.state[k]: cells[k] for k in moving_state}
    )
    scope |= {monoid.state[k] + "'": e for k, e in moving_elements.items()}
    folded = w.expressions(combine, scope, f"{p}x")
    order = sorted(moving_state)
    if len(order) == 1:
        w.emit(st.assign.format(name=cells[order[0]], expr=folded[0]))
    else:
        tmp = [f"{p}n{k}" for k in order]
        for name, text in zip(tmp, folded):
            w.emit(w.printer.declare.format(type=w.type, name=name, expr=text))
        for k, name in zip(order, tmp):
            w.emit(st.assign.format(name=cells[k], expr=name))
    w.end_loop()
    if fixed_state:
        for k, name in zip(fixed_state, fresh):
            w.emit(st.assign.format(name=fixed(k), expr=name))
    end_rows()
    sc.wide.clear()
    for _ in comp.reduce:
        w.end_loop()
    store_outputs()


def _rescaled_blocks(
    sc: _Scope,
    plan: Plan,
    stop: int | str,
    rows_loop: tuple[Callable[..., None], Callable[[], None]],
    vector_index: Callable[[], None],
    fixed: Callable[[int], str],
    cells: Mapping[int, str],
    width: int,
    j: str,
    panel: _Panel | None = None,
) -> None:
    """A vector plan's reduction in blocks of ``plan.keys`` steps, for a monoid that
    rescales to a running max (``Monoid.rescale``): per block and row, the invariant
    elements into arrays and their max, the state carried to that max once, and each
    step's element weighted by its own factor (not the state rescaled at every step).
    ``panel``: the block's scores first, for every row, from the key panel (``_Panel``)."""
    w, comp, p, st = sc.w, sc.comp, sc.p, sc.w.printer
    monoid = comp.monoid
    assert monoid is not None and monoid.rescale is not None
    ((r, _),) = comp.reduce
    fixed_state = [k for k in range(monoid.arity) if k not in plan.varying]
    moving_state = sorted(plan.varying)
    start, count, t, top, carry = f"{p}kb", f"{p}nb", f"{p}t", f"{p}top", f"{p}fo"
    arrays = {k: f"{p}k{k}" for k in fixed_state}
    factors = f"{p}kf"

    def at(name: str, i: str = t) -> str:
        return st.element.format(name=name, i=i)

    def carry_to(total: str, scale: str) -> None:  # total ← total · scale
        (text,) = w.expressions([mul(var("s"), var("f"))], {"s": total, "f": scale}, f"{p}u")
        w.emit(st.assign.format(name=total, expr=text))

    def accumulate(total: str, element: str, weight: str | None = None) -> None:
        """total ← total + element (· weight)"""
        term = var("e") if weight is None else mul(var("e"), var("f"))
        scope = {"s": total, "e": element, "f": weight or ""}
        (text,) = w.expressions([add(var("s"), term)], scope, f"{p}u")
        w.emit(st.assign.format(name=total, expr=text))

    read_varies, _ = _along_vector(comp, plan)
    w.loop(start, stop, step=plan.keys)
    left = st.minimum.format(a=plan.keys, b=f"({stop}) - {start}")
    w.emit(st.declare_index.format(name=count, expr=left))
    if panel is not None:
        scores = _panel_scores(sc, plan, panel, rows_loop, start)
        at_row = t if plan.block[0] == 1 else f"{p}rr * {plan.keys} + {t}"
        sc.wide[panel.kp.read] = st.element.format(name=scores, i=at_row)
    rows_loop[0]()
    # the block's invariant elements (component 0 the one rescaled to, its array padded to
    # a power of two with the identity), then their max by a tree of combines: independent
    # lanes at each level, not one chain through every step
    span = 1 << (plan.keys - 1).bit_length()
    for name in [*arrays.values(), factors]:
        size = span if name == arrays[0] else plan.keys
        w.emit(st.array.format(type=w.type, name=name, size=size, value=w.literal(0)))
    w.loop(t, span)
    w.emit(st.assign.format(name=at(arrays[0]), expr=w.literal(monoid.identity[0])))
    w.end_loop()
    w.loop(t, count)
    w.emit(st.declare_index.format(name=sc.local[r], expr=f"{start} + {t}"))
    bodies = [comp.body[k] for k in fixed_state]
    sc.load(bodies, lambda name: not read_varies(name))
    for k, text in zip(fixed_state, w.expressions(bodies, sc.names, f"{p}b")):
        w.emit(st.assign.format(name=at(arrays[k]), expr=text))
    w.end_loop()
    sc.wide.clear()
    m, tree = monoid.state[0], f"{p}km"

    def combine_max(target: str, first: str, second: str) -> None:
        (text,) = w.expressions([monoid.combine[0]], {m: first, m + "'": second}, f"{p}c")
        w.emit(st.assign.format(name=target, expr=text))

    w.emit(st.array.format(type=w.type, name=tree, size=span // 2, value=w.literal(0)))
    source, half = arrays[0], span // 2
    while half:
        w.loop(t, half)
        combine_max(at(tree), at(source), at(source, f"{t} + {half}"))
        w.end_loop()
        source, half = tree, half // 2
    w.emit(st.state.format(type=w.type, name=top, value=fixed(0)))
    combine_max(top, top, at(tree, "0"))
    # one factor for the state, one per step; the invariant sums
    (text,) = w.expressions([monoid.rescale], {"x": fixed(0), "top": top}, f"{p}o")
    w.emit(st.declare.format(type=w.type, name=carry, expr=text))
    w.loop(t, count)
    (text,) = w.expressions([monoid.rescale], {"x": at(arrays[0]), "top": top}, f"{p}w")
    w.emit(st.assign.format(name=at(factors), expr=text))
    w.end_loop()
    for k in fixed_state[1:]:
        total = f"{p}ks{k}"
        w.emit(st.state.format(type=w.type, name=total, value=w.literal(0)))
        w.loop(t, count)
        accumulate(total, at(arrays[k]), at(factors))
        w.end_loop()
        carry_to(fixed(k), carry)
        accumulate(fixed(k), total)
    w.emit(st.assign.format(name=fixed(0), expr=top))
    # the varying state: carried once, then each step's element weighted by its factor
    if moving_state:
        w.loop(j, width)
        for k in moving_state:
            carry_to(cells[k], carry)
        w.end_loop()

        def add_steps(index: str, extent: str, group: int, first: str) -> None:
            """For each ``index`` < ``extent`` (counting by ``group``), the steps ``first``
            + u (u < ``group``) weighted by their factors, added to the state in one pass
            over the vector (one value row read per step)."""
            w.loop(index, extent, step=group)
            w.loop(j, width)
            vector_index()
            slots = {(u, k): f"{p}g{u}_{k}" for u in range(group) for k in moving_state}
            for name in slots.values():
                w.emit(st.state.format(type=w.type, name=name, value=w.literal(0)))
            for u in range(group):  # each step in a block of its own: its reads' names recur
                if st.block is not None:
                    w.open(st.block)
                w.emit(st.declare_index.format(name=sc.local[r], expr=f"{start} + {first} + {u}"))
                sc.load(bodies)
                for k, text in zip(moving_state, w.expressions(bodies, sc.names, f"{p}m")):
                    w.emit(st.assign.format(name=slots[u, k], expr=text))
                if st.block is not None:
                    w.close(st.block_end)
            for k in moving_state:
                total: Node = var("s")
                scope = {"s": cells[k]}
                for u in range(group):
                    total = add(total, mul(var(f"e{u}"), var(f"f{u}")))
                    scope |= {f"e{u}": slots[u, k], f"f{u}": at(factors, f"{first} + {u}")}
                (text,) = w.expressions([total], scope, f"{p}u")
                w.emit(st.assign.format(name=cells[k], expr=text))
            w.end_loop()
            w.end_loop()

        bodies = [comp.body[k] for k in moving_state]
        groups, tail = f"{p}tq", f"{p}tt"
        add_steps(groups, f"{count} - {KEY_GROUP - 1}", KEY_GROUP, groups)
        add_steps(tail, f"{count} % {KEY_GROUP}", 1, f"{count} - {count} % {KEY_GROUP} + {tail}")
    rows_loop[1]()
    w.end_loop()


@dataclass(frozen=True)
class _Panel:
    """A key panel staged before a comprehension's loops (``_stage_key_panel``): for each
    column part of ``kp`` (by name) an array [batch axes…, inner step, key] of ``steps`` ×
    ``width`` values per batch position (keys padded to ``width``)."""

    kp: KeyPanel
    arrays: dict[str, str]
    steps: int
    width: int

    def position(self, local: Mapping[str, str], extent: Mapping[str, int], step: str) -> str:
        """The first key's cell at inner step ``step``, for the batch axes' ``local`` names."""
        strides = row_major([extent[n] for n in self.kp.batch])
        batch = _affine([(s, local[n]) for s, n in zip(strides, self.kp.batch)], 0)
        return f"(({batch}) * {self.steps} + {step}) * {self.width}"


def _declare_inner(sc: _Scope, inner: _Scope, read: Inline, names: Iterable[str]) -> None:
    """Declare the index variables ``names`` of ``read``'s producer (scope ``inner``) at
    the position the read gives in terms of ``sc``'s variables."""
    rows = dict(zip(read.comp.index, zip(read.index.rows, read.index.consts)))
    for u in [u for u in read.comp.index if u in names]:  # its reduction: a loop's own
        row, c = rows[u]
        at = _affine([(k, sc.local[n]) for k, n in zip(row, sc.comp.names) if k], c)
        sc.w.emit(sc.w.printer.declare_index.format(name=inner.local[u], expr=at))


def _stage_key_panel(
    w: _Writer, comp: Comprehension, plan: Plan, buffers: dict, shapes: dict
) -> _Panel:
    """Before ``comp``'s loops, compute each column part of its score (``score_panel``)
    once into a panel transposed to [batch axes…, inner step, key], so that a block of keys
    is contiguous at each inner step (freed after the loops: ``scratch_end``)."""
    st = w.printer
    kp = plan.panel
    assert kp is not None and st.scratch is not None
    read = comp.reads[kp.read]
    assert isinstance(read, Inline)
    ((r, keys),) = comp.reduce
    ((d, steps),) = read.comp.reduce
    extent = dict(zip(comp.index, comp.shape))
    width = -(-keys // plan.keys) * plan.keys
    if width * int(w.dtype[1:]) // 8 % PANEL_ALIAS == 0:
        width += plan.keys
    sc, inner = _Scope(w, comp, buffers, shapes), _Scope(w, read.comp, buffers, shapes)
    panel = _Panel(kp, {n: f"{sc.p}kp{k}" for k, (n, _) in enumerate(kp.cols)}, steps, width)
    batch = [(n, extent[n]) for n in kp.batch]
    size = math.prod(e for _, e in batch) * steps * width
    w.emit(f"{st.comment} the key panel of {kp.read}: {', '.join(n for n, _ in kp.cols)}")
    for name in panel.arrays.values():
        w.emit(st.scratch.format(type=w.type, name=name, size=size))
    flat, key = f"{sc.p}o", f"{sc.p}kk"
    count = math.prod(e for _, e in batch) * width
    if st.parallel and _worth_threads(comp):
        w.emit(st.parallel.format(depth=1, balance="static"))
    w.loop(flat, count)
    w.open(st.block)
    axes = [*batch, (key, width)]
    for (n, e), stride in zip(axes, row_major([e for _, e in axes])):
        unravel = st.unravel.format(flat=flat, stride=stride, extent=e)
        w.emit(st.declare_index.format(name=sc.local.get(n, n), expr=unravel))
    last = st.minimum.format(a=key, b=keys - 1)  # padding repeats the last key
    w.emit(st.declare_index.format(name=sc.local[r], expr=last))
    w.loop(inner.local[d], steps)
    nodes = [node for _, node in kp.cols]
    _declare_inner(sc, inner, read, _used_indices(read.comp, nodes=nodes))
    inner.load(nodes)
    at = f"{panel.position(sc.local, extent, inner.local[d])} + {key}"
    for (name, _), text in zip(kp.cols, w.expressions(nodes, inner.names, f"{sc.p}t")):
        cell = st.element.format(name=panel.arrays[name], i=at)
        w.emit(st.assign.format(name=cell, expr=text))
    w.end_loop()
    w.close(st.block_end)
    w.end_loop()
    return panel


def _panel_scores(
    sc: _Scope,
    plan: Plan,
    panel: _Panel,
    rows_loop: tuple[Callable[..., None], Callable[[], None]],
    start: str,
) -> str:
    """A block's scores for every row (``plan.keys`` each, from key ``start``) into a
    private array, returned: per inner step and row the row parts once, then the block's
    keys as one loop over contiguous panel cells (vector products, the rows' chains
    independent)."""
    w, comp, st = sc.w, sc.comp, sc.w.printer
    kp, keys, rows = panel.kp, plan.keys, plan.block[0]
    read = comp.reads[kp.read]
    assert isinstance(read, Inline) and read.comp.monoid is not None
    monoid = read.comp.monoid
    ((d, _),) = read.comp.reduce
    staged = sc.inline_staged.get(kp.read, {})
    inner = _Scope(w, read.comp, sc.buffers, sc.shapes, staged)
    scores, t = f"{sc.p}ks", f"{sc.p}kt"
    _initial_array(w, scores, rows * keys, monoid.identity[0], f"{sc.p}z", rows)
    w.loop(inner.local[d], panel.steps)
    nodes = [node for _, node in kp.rows]
    used = _used_indices(read.comp, set(staged), nodes)
    at_rows = dict(zip(read.comp.index, read.index.rows))
    row_axis = comp.names.index(plan.a)
    # unrolled: each row's scores a chain of its own, in registers
    rows_loop[0](HINT, declare=any(at_rows[u][row_axis] for u in used if u in at_rows))
    _declare_inner(sc, inner, read, used)
    inner.load(nodes)
    names = {}
    for (name, _), text in zip(kp.rows, w.expressions(nodes, inner.names, f"{sc.p}y")):
        names[name] = f"{sc.p}y{name}"
        w.emit(st.declare.format(type=w.type, name=names[name], expr=text))
    w.loop(t, keys)
    extent = dict(zip(comp.index, comp.shape))
    at = f"{panel.position(sc.local, extent, inner.local[d])} + {start} + {t}"
    names |= {n: st.element.format(name=a, i=at) for n, a in panel.arrays.items()}
    (element,) = w.expressions([kp.body], names, f"{sc.p}x")
    cell = st.element.format(name=scores, i=t if rows == 1 else f"{sc.p}rr * {keys} + {t}")
    _fold(w, monoid, [0], {monoid.state[0]: cell}, [element], [cell], f"{sc.p}x")
    w.end_loop()
    rows_loop[1]()
    w.end_loop()
    return scores


def _outer_address(comp: Comprehension, read: Inline, rd: Load) -> tuple[dict, int, int]:
    """The address of ``rd``, a load of inline producer ``read`` (one reduction variable),
    over ``comp``'s domain: a coefficient per index variable, a constant, and the stride
    along the producer's reduction."""
    inner = read.comp
    ((r, _),) = inner.reduce
    coeff = dict.fromkeys(comp.names, 0)
    const, r_stride = rd.view.offset, 0
    for s, n in zip(rd.view.strides, inner.names):
        if n == r:
            r_stride += s
            continue
        row = inner.index.index(n)
        const += s * read.index.consts[row]
        for u, c in zip(comp.names, read.index.rows[row]):
            coeff[u] += s * c
    return coeff, const, r_stride


def stage_shared_inline_loads(sc: _Scope, nodes: Sequence[Node], shared: Iterable[str]) -> None:
    """Read once per reduction step, before a vector plan's rows, what its inline producers
    (one short reduction each, unrolled) load the same for every row and vector position:
    the loads that do not vary along ``shared`` and are contiguous along the producer's
    reduction, as ``printer.wide`` elements per load, into a private array over the
    reduction (the rows then share one read of a key, not one each)."""
    w, comp = sc.w, sc.comp
    n = w.printer.wide
    shared = set(shared)
    used = {x.name for x in topo_order(list(nodes)) if x.op == "var"}
    for name, read in comp.reads.items():
        if name not in used or not isinstance(read, Inline) or len(read.comp.reduce) != 1:
            continue
        ((_, extent),) = read.comp.reduce
        if n == 1 or extent % n or not _unrolled(w, read.comp, read.comp.body, extent):
            continue
        staged = sc.inline_staged.setdefault(name, {})
        for k, (rname, rd) in enumerate(read.comp.reads.items()):
            if rname in staged or not isinstance(rd, Load) or rd.source in w.packed:
                continue
            coeff, const, r_stride = _outer_address(comp, read, rd)
            size, (lo, hi) = math.prod(sc.shapes[rd.source]), rd.view.span()
            if (
                r_stride != 1
                or any(coeff[u] for u in shared)
                or any(c % n for c in coeff.values())
                or const % n
                or size % n
                or lo < 0
                or hi >= size
            ):
                continue
            array_name, lane = f"{sc.p}k{len(sc.inline_staged)}_{k}", f"{sc.p}kq"
            zero = w.literal(0)
            w.emit(w.printer.array.format(type=w.type, name=array_name, size=extent, value=zero))
            w.loop(lane, extent // n)
            terms = [(c, sc.local[u]) for u, c in coeff.items() if c] + [(n, lane)]
            at = f"({_affine(terms, const)}) / {n}"
            vector = w.printer.element.format(name=sc.buffers[rd.source], i=at)
            w.emit(w.printer.declare.format(type="", name=f"{lane}v", expr=vector))
            for c in range(n):
                cell = w.printer.element.format(name=array_name, i=f"{lane} * {n} + {c}")
                part = w.printer.element.format(name=f"{lane}v", i=c)
                w.emit(w.printer.assign.format(name=cell, expr=part))
            w.end_loop()
            w.wide.add(rd.source)
            staged[rname] = array_name


def stage_inline_loads(sc: _Scope, nodes: Sequence[Node], block_rows: tuple | None = None) -> None:
    """Hoist out of ``sc``'s reduction the loads of its inline producers (one reduction
    variable each) that do not vary along it: each is read once into a private array over
    the producer's reduction, before the loop, instead of once per step. ``block_rows``: (row
    variable, rows, row axis, first row) of a vector plan over several rows: one array
    segment per row, read at ``row variable × extent``."""
    w, comp = sc.w, sc.comp
    rows = 1 if block_rows is None else block_rows[1]
    outer = {n for n, _ in comp.reduce}
    used = {n.name for n in topo_order(list(nodes)) if n.op == "var"}
    for name, read in comp.reads.items():
        if name not in used or not isinstance(read, Inline) or len(read.comp.reduce) != 1:
            continue
        inner = read.comp
        ((_, extent),) = inner.reduce
        if extent > MAX_STAGED or not w.printer.block:
            continue
        staged: dict[str, str] = {}
        for k, (rname, rd) in enumerate(inner.reads.items()):
            if not isinstance(rd, Load):
                continue
            coeff, const, r_stride = _outer_address(comp, read, rd)
            if any(coeff[u] for u in outer):
                continue
            size = math.prod(sc.shapes[rd.source])
            lo, hi = rd.view.span()
            array_name = f"{sc.p}q{len(sc.inline_staged)}_{k}"
            w.emit(
                w.printer.array.format(
                    type=w.type, name=array_name, size=extent * rows, value=w.literal(0)
                )
            )
            lane = f"{array_name}r"
            segment = ""
            if block_rows is not None:
                rr, _, axis, first = block_rows
                w.loop(rr, rows, unroll=True)  # constant positions: the array in registers
                last = dict(zip(comp.index, comp.shape))[axis] - 1
                clamped = w.printer.minimum.format(a=f"{first} + {rr}", b=last)
                w.emit(w.printer.declare_index.format(name=sc.local[axis], expr=clamped))
                segment = f"{rr} * {extent}"
            w.loop(lane, extent)
            terms = [(c, sc.local[u]) for u, c in coeff.items() if c] + [(r_stride, lane)]
            at = _affine(terms, const)
            if lo < 0 or hi >= size:
                at = w.printer.clamp.format(p=at, last=size - 1)
            index = f"{segment} + {lane}" if segment else lane
            cell = w.printer.element.format(name=array_name, i=index)
            value = w.buffer_element(sc.buffers[rd.source], rd.source, at)
            w.emit(w.printer.assign.format(name=cell, expr=value))
            w.end_loop()
            if block_rows is not None:
                w.end_loop()
            staged[rname] = (array_name, segment) if segment else array_name
        if staged:
            sc.inline_staged[name] = staged


def _elements_named(
    w: _Writer, nodes: Sequence[Node], names: Mapping[str, str], prefix: str, keys: Sequence[int]
) -> dict[int, str]:
    out = {}
    for k, text in zip(keys, w.expressions(nodes, dict(names), f"{prefix}b")):
        out[k] = f"{prefix}e{k}"
        w.emit(w.printer.declare.format(type=w.type, name=out[k], expr=text))
    return out


def _used_indices(
    comp: Comprehension, staged: set[str] | None = None, nodes: Sequence[Node] | None = None
) -> set[str]:
    """The index variables a comprehension's reads and expressions actually use (a
    ``staged`` read uses only the reduction variable; ``nodes``: only these of them)."""
    used = {
        n.name for n in topo_order(comp.nodes() if nodes is None else list(nodes)) if n.op == "var"
    }
    out = {n for n in comp.names if n in used}
    for name, read in comp.reads.items():
        if name not in used:
            continue
        if staged and name in staged:
            out |= {n for n, _ in comp.reduce}
            continue
        if isinstance(read, Load):
            out |= {n for s, n in zip(read.view.strides, comp.names) if s}
        else:
            out |= {n for row in read.index.rows for k, n in zip(row, comp.names) if k}
    return out


def emit_comprehension(
    w: _Writer,
    comp: Comprehension,
    plan: Plan,
    given: Mapping[str, str],
    buffers: dict,
    shapes: dict,
    panel: _Panel | None = None,
) -> None:
    """Emit ``comp`` for the output index ``given`` (every output axis but a vector plan's
    own), storing into its buffer: the body of a loop nest or of a kernel (``panel``: its
    staged key panel)."""
    out = buffers[comp.name]
    if plan.kind == "vector":
        _vector(w, comp, plan, given, buffers, shapes, out, panel)
        return
    if plan.kind == "blocked":
        _blocked(w, comp, plan, given, buffers, shapes, out)
        return
    index = [given[n] for n in comp.index]
    lanes = plan.lanes if plan.kind == "lanes" else 1
    value = _value(w, comp, index, buffers, shapes, lanes=lanes)
    at = _affine(
        [(s, e if e.isidentifier() else f"({e})") for s, e in zip(row_major(comp.shape), index)], 0
    )
    w.emit(w.printer.store.format(buffer=out, index=at, expr=value))


def lower_graph(
    graph: TensorGraph,
    language: str = "c",
    *,
    name: str = "run",
    dtype: str = "f64",
    scheduled: bool = True,
    header: bool = True,
    unroll: int | None = None,
    **plan_options: Any,
) -> str:
    """Source of one function ``name(inputs…, buffers…)`` computing every comprehension of
    ``graph`` into its buffer (row-major), in ``language`` ("c" or "python"; WGSL prints
    one kernel per comprehension: ``tang.tensor.kernels.lower_wgsl``). ``scheduled``:
    follow the schedule's plans (``tang.tensor.passes.schedule``; ``plan_options`` go to
    its ``plan``, but ``inline_lanes``: the lanes of an inline producer's reduction);
    otherwise one loop nest per output element. Where the language compiles (C),
    register-blocked and split-lane plans are allowed and large loop nests run on every
    core. ``dtype``: a float type, or an integer one (``Printer.int_dtypes``: "i64") for
    graphs of whole numbers (tang.crypto's); ``header``: the lines the function needs
    before it (includes, helpers), which a file holding several prints once; ``unroll``:
    print innermost loops of a constant extent up to this once per value (default: the
    printer's own ``unroll``)."""
    printer = BACKENDS.get(language)
    if printer is None or not all(hasattr(printer, s) for s in LOOP_NEST_FUNCTION):
        raise ValueError(
            f"lower_graph lowers to {' and '.join(nest_languages())}, not {language!r}"
        )
    if dtype not in printer.int_dtypes:
        for comp in graph.comprehensions:
            found = {n.op for n in topo_order(comp.nodes())} & INTEGER_OPS
            if found:
                raise ValueError(
                    f"{comp.name} uses the integer op {sorted(found)[0]!r}: lower it with an "
                    f"integer dtype ({', '.join(printer.int_dtypes) or 'none in ' + language})"
                )
    w = _Writer(language, dtype)
    w.packed = dict(graph.packed)
    if unroll is not None:
        w.unroll = unroll
    if not name.isidentifier():
        raise ValueError(f"{name!r} cannot name a function")
    order = [*graph.inputs, *(c.name for c in graph.comprehensions)]
    idents = identifiers(order)
    shapes = {**graph.inputs, **graph.buffers()}
    params = [
        w.printer.param_in.format(
            type=w.printer.word_type if n in graph.packed else w.type, name=idents[n]
        )
        for n in graph.inputs
    ]
    params += [
        w.printer.param_out.format(type=w.type, name=idents[c.name]) for c in graph.comprehensions
    ]
    head = [
        *(w.printer.nest_header if header else ()),
        w.printer.nest_function.format(name=name, params=", ".join(params)),
    ]
    plan_options.setdefault("registers", w.printer.scratch is not None)
    inline_lanes = plan_options.pop("inline_lanes", INLINE_LANES)
    if plan_options["registers"]:
        w.inline_lanes = inline_lanes
        plan_options = REGISTER_DEFAULTS | plan_options
    if w.printer.scratch is None:  # a key panel is allocated before the loops
        plan_options["key_panel"] = False
    for comp in graph.comprehensions:
        if scheduled:
            comp = eliminate_pinned(comp)
        plan = schedule_plan(comp, **plan_options) if scheduled else Plan()
        w.emit(f"{w.printer.comment} {comp.name}: {_one_line(comp)}")
        if plan.kind != "per_element":
            w.emit(f"{w.printer.comment} schedule: {plan}")
        panel = _stage_key_panel(w, comp, plan, idents, shapes) if plan.panel else None
        loops = _outer_loops(comp, plan)
        # short axes that only steer selects go innermost, printed once per value: each
        # copy keeps only its own branch (the compiler folds the constant condition)
        guards = _guard_axes(comp) if plan.kind == "per_element" and w.printer.block else set()
        guards &= set(loops)
        loops = {n: v for n, v in loops.items() if n not in guards} | {
            n: v for n, v in loops.items() if n in guards
        }
        threaded = len(loops) - len(guards)
        if threaded and w.printer.parallel and _worth_threads(comp):
            # a loop that stops early (causal) gives later rows more work: hand rows out
            # as threads come free instead of in equal halves
            balance = "dynamic" if loop_stop(comp) is not None else "static"
            w.emit(w.printer.parallel.format(depth=threaded, balance=balance))
        for n, (loop_var, e) in loops.items():
            w.loop(loop_var, e, unroll=GUARD if n in guards else False)
        given = {n: loop_var for n, (loop_var, _) in loops.items()}
        if w.printer.block:
            w.open(w.printer.block)
        emit_comprehension(w, comp, plan, given, idents, shapes, panel)
        if w.printer.block:
            w.close(w.printer.block_end)
        for _ in loops:
            w.end_loop()
        for name in panel.arrays.values() if panel else ():
            w.emit(w.printer.scratch_end.format(name=name))
    tail = [w.printer.nest_end] if w.printer.nest_end else []
    return w.printer.finish_nest("\n".join([*head, *w.lines, *tail]) + "\n")


def _outer_loops(comp: Comprehension, plan: Plan) -> dict[str, tuple[str, int]]:
    """The loops around a comprehension's plan, outermost first: output axis (or
    ``ROW_BLOCK``) → (loop variable, extent). A register block runs its own; a vector
    plan's axes run inside it, and its row axis, if any, steps by blocks of rows."""
    if plan.kind == "blocked":
        return {}
    loops = {}
    for k, (n, e) in enumerate(zip(comp.index, comp.shape)):
        if n in plan.vector:
            continue
        if plan.kind == "vector" and n == plan.a:
            loops[ROW_BLOCK] = (f"_o{k}", -(-e // plan.block[0]))
        else:
            loops[n] = (f"_o{k}", e)
    return loops


def _one_line(comp: Comprehension) -> str:
    text = format_comprehension(comp).splitlines()[0]
    return text if len(text) <= 200 else text[:197] + "..."


def buffer_order(graph: TensorGraph) -> list[str]:
    """The function's parameters in order: inputs, then every comprehension's buffer."""
    return [*graph.inputs, *(c.name for c in graph.comprehensions)]


def nest_languages() -> list[str]:
    """The backends that print a whole graph as one loop-nest function (their printers
    spell every statement of ``LOOP_NEST`` and ``LOOP_NEST_FUNCTION``), by label."""
    needs = (*LOOP_NEST, *LOOP_NEST_FUNCTION)
    return [p.label for p in BACKENDS.values() if all(hasattr(p, s) for s in needs)]


__all__ = ["buffer_order", "lower_graph", "nest_languages"]
