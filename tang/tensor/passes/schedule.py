"""The schedule: how each comprehension maps onto invocations, decided from its form alone.

Three plans, each chosen by a generic test of the body's dependence structure (no op names):

- ``per_element``: one invocation per output element (the default).
- ``vector``: one invocation computes a whole run of outputs along the axes ``vector``.
  Chosen when the body components that do not vary along an output axis cost more than the
  ones that do (an inline producer counts its whole reduction). The invariant work, and the
  state components whose combine reads only invariant ones, run once per reduction step; the
  varying state is a small private array over the vector axes, and the invariant parts of
  its body and combine are hoisted out of the vector loop. Where no other plan applies, the
  invariant parts of varying components count too (``lift``): a sum of an inline score
  times a load along another axis computes the score once per step, not once per element.
- ``tiled`` (kernels with workgroups): output axes ``a`` and ``b`` are cut into square tiles,
  one workgroup per tile. Reads that do not vary along ``b`` (a tile of rows) or along ``a``
  (a tile of columns) are staged through workgroup memory, ``tile`` reduction steps at a
  time between barriers, so each element is loaded once per workgroup instead of once per
  output. Chosen for a one-variable reduction over plain loads with at least one read of
  each kind and both axes at least one tile wide.
- ``tree`` (kernels with workgroups): a reduction much larger than its output. One workgroup
  per output element: each invocation folds a strided share of the reduction, then the
  partial states are combined pairwise in workgroup memory (a combine tree, log2 steps).
  The monoid's combine is associative, so any state tuple can be split this way.
- ``blocked`` (``registers``: compiled C, and WGSL where workgroup tiles do not pay):
  register blocking. The same structure as ``tiled``
  (a one-variable reduction, reads along ``a`` and reads along ``b``, none along both), cut
  into blocks of ``block = (R, V)`` outputs per iteration: the state is an R×V private
  array the compiler keeps in vector registers. The body splits into what does not vary
  along ``b`` (the row operand, computed R times per step) and what does not vary along
  ``a`` (the column operand: in C computed once into a contiguous panel, reduction × V,
  reused by every row block; in a kernel V values per step), so an element-wise prologue
  fused into a product is computed once per operand element, not once per output.
- ``vector`` with ``vector_rows`` > 1: the vector plan over that many rows of another output
  axis at once (``a``), each row's state in private arrays over the rows, so what the rows
  read is read once and their chains of steps interleave.
- ``vector`` with ``vector_keys`` > 1, for a monoid that rescales to a running max
  (``Monoid.rescale``, as ``online_rescale`` makes) whose max does not vary along the vector: the
  reduction runs in blocks of that many steps. A block's invariant elements (the scores)
  are computed first, then their max; the state is rescaled once per block and each
  element weighted by one factor, instead of the state rescaled at every step.
  With ``key_panel`` (compiled C), a score that is an inline sum whose body splits into a
  part that does not vary along the reduction (the query row) and one that varies along
  it but not along the rows (the key) is computed for a whole block at once, as vectors
  over its keys: the key part is staged once per call into a transposed panel (inner
  step × key), so each step of the inner sum is one vector product per row, not one
  horizontal sum per key (``score_panel``, ``KeyPanel``).
- a sum pinned by data (``data_pin``): ``Σ_r where(r == e, value, 0)`` with ``e`` read from
  memory (a gather's index, a picked class) runs its one step at ``r = e`` instead of
  looping over ``r``, whatever the plan options; the evaluators still sum every step.
- ``lanes`` (``registers``, compiled C): a split reduction. A long one-variable reduction
  folds into ``lanes`` interleaved partial states (step ``k`` into lane ``k mod lanes``),
  which the compiler vectorises; the lanes combine at the end. Any monoid's combine is
  associative, so this changes only the rounding order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from ...expr.graph import BOOL_OPS, Node, le, lt, replace_nodes, select, topo_order, var
from ..comprehension import (
    SUM,
    Comprehension,
    Inline,
    Load,
    TensorGraph,
    affine_node,
    reduce_names,
    substitute,
)
from ..view import IndexMap

# the most outputs one invocation keeps in a private array (a vector plan's width)
MAX_VECTOR = 128
# the side of a square tile (tile × tile invocations per workgroup)
TILE = 16
# invocations of a combine-tree workgroup, and the least reduction length per output for it
TREE_WIDTH = 256
TREE_MIN_REDUCTION = 4096
# a register block: rows × columns of outputs per iteration (compiled C); the shortest
# column axis and reduction it is chosen for
BLOCK = (6, 32)
# the partial states of a split reduction, and the least reduction length for one
LANES = 32
LANES_MIN_REDUCTION = 64
LANES_MIN_LAST = 8  # with several reduction variables, the least extent of the split one
# the least number of times a key panel's values are read (row blocks × other axes) for one
PANEL_REUSE = 8


@dataclass(frozen=True)
class Plan:
    """How one comprehension runs. ``kind`` is "per_element", "vector", "tiled" or "tree".
    ``vector``: the output axes one invocation covers (vector plans); ``varying``: the state
    components that vary along them; ``a``/``b``/``tile``: the tiled output axes and the tile
    side; ``rows``/``cols``: the reads staged as row tiles (vary along ``a``, not ``b``) and
    column tiles (along ``b``, not ``a``); ``width``: a combine tree's invocations; ``block``:
    a register block's rows and columns; ``lanes``: a split reduction's partial states;
    ``keys``: a rescaling vector plan's reduction steps per block; ``panel``: the inline
    read it computes for a block at once from a transposed key panel (``score_panel``)."""

    kind: str = "per_element"
    vector: tuple[str, ...] = ()
    varying: tuple[int, ...] = ()
    a: str | None = None
    b: str | None = None
    tile: int = TILE
    rows: tuple[str, ...] = ()
    cols: tuple[str, ...] = ()
    width: int = 1
    block: tuple[int, int] = (1, 1)
    lanes: int = 1
    keys: int = 1
    panel: KeyPanel | None = None

    def __str__(self) -> str:
        if self.kind == "vector":
            state = ", ".join(str(k) for k in self.varying)
            text = f"vector over {', '.join(self.vector)} (state {state} per element)"
            if self.a is not None:
                text = f"{text}, {self.block[0]} rows of {self.a} each"
            if self.keys > 1:
                text = f"{text}, {self.keys} steps per block"
            if self.panel is not None:
                text = f"{text}, {self.panel.read} from a key panel"
            return text
        if self.kind == "tiled":
            return (
                f"tiled {self.tile}x{self.tile} over {self.a}, {self.b} "
                f"(rows {', '.join(self.rows)}; columns {', '.join(self.cols)})"
            )
        if self.kind == "tree":
            return f"combine tree of {self.width}"
        if self.kind == "blocked":
            r, v = self.block
            return (
                f"blocked {r}x{v} over {self.a}, {self.b} "
                f"(rows {', '.join(self.rows)}; columns {', '.join(self.cols)} staged)"
            )
        if self.kind == "lanes":
            return f"split reduction over {self.lanes} lanes"
        return "per element"


def cost(comp: Comprehension, nodes: Iterable[Node]) -> int:
    """Operations to evaluate ``nodes`` once: interior nodes plus one per load, and an
    inline producer's whole body times its reduction length."""
    total = 0
    for n in topo_order(list(nodes)):
        if n.args:
            total += 1
        elif n.op == "var":
            read = comp.reads.get(n.name)  # type: ignore[arg-type]
            if isinstance(read, Load):
                total += 1
            elif isinstance(read, Inline):
                inner = read.comp
                steps = math.prod(e for _, e in inner.reduce)
                total += 1 + steps * max(1, cost(inner, inner.body))
    return total


def varying_state(comp: Comprehension, axes: Sequence[str]) -> tuple[int, ...]:
    """The state components that vary along ``axes``: their body does, or their combine
    reads a component that does (a fixed point over the combine's reads)."""
    monoid = comp.monoid
    if monoid is None:
        return (0,) if comp.depends_on(comp.body[0], axes) else ()
    out = {k for k, b in enumerate(comp.body) if comp.depends_on(b, axes)}
    while True:
        grown = set(out)
        for j, node in enumerate(monoid.combine):
            names = {n.name for n in topo_order([node]) if n.op == "var"}
            if any(monoid.state[k] in names or monoid.state[k] + "'" in names for k in out):
                grown.add(j)
        if grown == out:
            return tuple(sorted(out))
        out = grown


def invariant_parts(
    nodes: Sequence[Node], leaf_varies: Callable[[Node], bool], leaves: bool = False
) -> list[Node]:
    """The largest subexpressions under ``nodes`` that do not vary (``leaf_varies`` says
    which leaves do), each an argument of one that does: what a vector or register-block
    loop computes once outside it (comparisons stay with their select; ``leaves``: a
    variable that does not vary is a part too)."""
    varies: dict[int, bool] = {}
    order = topo_order(list(nodes))
    for n in order:
        varies[id(n)] = leaf_varies(n) if not n.args else any(varies[id(a)] for a in n.args)
    parts: dict[int, Node] = {}
    for n in order:
        if varies[id(n)]:
            for a in n.args:
                whole = a.args and a.op not in BOOL_OPS
                if not varies[id(a)] and (whole or (leaves and a.op == "var")):
                    parts.setdefault(id(a), a)
    return list(parts.values())


def _vector_plan(
    comp: Comprehension, rows: int = 1, lift: bool = False, keys: int = 1, panel: bool = False
) -> Plan | None:
    """A vector plan (see the module's docstring); with ``rows`` > 1, over that many rows
    of the last other output axis too (a register block of rows × the vector); with
    ``keys`` > 1, in blocks of that many reduction steps where the monoid allows it
    (``panel``: a score from a key panel, where one fits)."""
    found = _vector_axes(comp, lift)
    if found is None:
        return None
    monoid = comp.monoid
    rescales = monoid is not None and monoid.rescale is not None
    if keys > 1 and rescales and len(comp.reduce) == 1 and 0 not in found.varying:
        found = replace(found, keys=keys)
    if rows < 2:
        return found
    others = [(n, e) for n, e in zip(comp.index, comp.shape) if n not in found.vector and e > 1]
    if not others:
        return found
    axis, extent = others[-1]
    found = replace(found, a=axis, block=(min(rows, extent), 1))
    staged = score_panel(comp, found) if panel else None
    return found if staged is None else replace(found, panel=staged)


@dataclass(frozen=True)
class KeyPanel:
    """An inline sum ``read`` of a block plan computed for a block of keys at once:
    ``body`` is its producer's body over the names of ``rows`` (parts that do not vary
    along the reading reduction: computed per row and inner step) and of ``cols`` (parts
    that vary along it but not along the plan's rows: each staged once per call into a
    panel [batch axes…, inner step, key]); ``batch``: the reading comprehension's output
    axes the columns vary along."""

    read: str
    body: Node
    rows: tuple[tuple[str, Node], ...]
    cols: tuple[tuple[str, Node], ...]
    batch: tuple[str, ...]


def score_panel(comp: Comprehension, found: Plan) -> KeyPanel | None:
    """The inline read a rescaling block plan over rows (``found``) can compute from a key
    panel (``KeyPanel``), or None: a one-variable sum with no epilogue, read by the
    components that do not vary along the vector, whose body splits as above, and whose
    panel is read at least ``PANEL_REUSE`` times (once per value of the other output axes)."""
    monoid = comp.monoid
    if found.keys < 2 or found.a is None or monoid is None:
        return None
    ((r, _),) = comp.reduce
    fixed = [comp.body[k] for k in range(monoid.arity) if k not in found.varying]
    for name in sorted({n.name for n in topo_order(fixed) if n.op == "var"}):
        read = comp.reads.get(name)
        if not isinstance(read, Inline) or comp.depends_on(var(name), found.vector):
            continue
        inner = read.comp
        if (
            len(inner.reduce) != 1
            or inner.epilogue is not None
            or inner.monoid is None
            or inner.monoid.arity != 1
            or data_pin(inner) is not None
            or loop_stop(inner) is not None
        ):
            continue
        staged = _split_score(comp, found, name, read, r)
        if staged is None:
            continue
        extent = dict(zip(comp.index, comp.shape))
        reuse = math.prod(
            e for n, e in extent.items() if n not in found.vector and n not in staged.batch
        )
        if reuse >= PANEL_REUSE:
            return staged
    return None


def _split_score(
    comp: Comprehension, found: Plan, name: str, read: Inline, r: str
) -> KeyPanel | None:
    """``read``'s body split into row and column parts (``KeyPanel``), or None."""
    inner = read.comp
    # the reading comprehension's variables each inner index variable moves with
    outer = {
        u: {n for n, k in zip(comp.names, row) if k} for u, row in zip(inner.index, read.index.rows)
    }

    def moves(n: Node) -> set[str]:  # the outer variables a leaf of the body moves with
        if n.op != "var":
            return set()
        if n.name in outer:
            return outer[n.name]
        return set().union(*(outer[u] for u in inner.index if inner.depends_on(n, [u])))

    body, rows = _named_parts(inner.body[0], lambda n: r in moves(n), "h")
    row_names = {n for n, _ in rows}
    assert found.a is not None
    body, cols = _named_parts(
        body, lambda n: n.op == "var" and (n.name in row_names or found.a in moves(n)), "g"
    )
    leaves = {n.name for n in topo_order([body]) if n.op == "var"}
    col_moves = set().union(*(moves(n) for _, c in cols for n in topo_order([c])))
    if not cols or r not in col_moves or not leaves <= row_names | {n for n, _ in cols}:
        return None
    batch = tuple(n for n in comp.index if n in col_moves)
    return KeyPanel(name, body, tuple(rows), tuple(cols), batch)


def _named_parts(
    body: Node, moving: Callable[[Node], bool], prefix: str
) -> tuple[Node, list[tuple[str, Node]]]:
    """``body`` over names for its largest parts that do not vary (``moving`` says which
    leaves do; a variable that does not vary is a part too), and those parts by name."""
    constant = not any(moving(n) for n in topo_order([body]) if not n.args)
    parts = [body] if constant else invariant_parts([body], moving, leaves=True)
    named = [(f"{prefix}{k}", p) for k, p in enumerate(parts)]
    return replace_nodes([body], {id(p): var(n) for n, p in named})[0], named


def _vector_axes(comp: Comprehension, lift: bool) -> Plan | None:
    if not comp.reduce or len(comp.index) < 2:
        return None
    chosen: list[str] = []
    width = 1
    for name, extent in reversed(list(zip(comp.index, comp.shape))):
        if extent < 2 or width * extent > MAX_VECTOR:
            continue
        axes = [*chosen, name]
        fixed = [b for b in comp.body if not comp.depends_on(b, axes)]
        moving = [b for b in comp.body if comp.depends_on(b, axes)]
        each = cost(comp, moving)  # per element of the vector, per step
        if lift:
            lifted = invariant_parts(moving, lambda n, ax=axes: comp.depends_on(n, ax))
            fixed, each = fixed + lifted, each - cost(comp, lifted)
        if not fixed or cost(comp, fixed) <= 2 * each:
            continue
        chosen, width = axes, width * extent
    if not chosen or width == comp.size:
        return None
    ordered = tuple(n for n in comp.index if n in chosen)
    return Plan("vector", vector=ordered, varying=varying_state(comp, ordered))


def _read_axes(comp: Comprehension, read: Load) -> set[str]:
    return {n for n, s in zip(comp.names, read.view.strides) if s}


def _rows_and_columns(comp: Comprehension, least: int) -> tuple[str, str, tuple, tuple] | None:
    """Output axes ``a``, ``b`` (each at least ``least`` long) of a one-variable reduction
    over plain loads, with the reads that vary along ``a`` and the reduction but not ``b``
    (rows) and those along ``b`` and the reduction but not ``a`` (columns): a product's
    shape, found from strides alone."""
    if len(comp.reduce) != 1 or len(comp.index) < 2:
        return None
    if not all(isinstance(r, Load) for r in comp.reads.values()):
        return None
    used = {n.name for n in topo_order(list(comp.body)) if n.op == "var"}
    reads = {k: r for k, r in comp.reads.items() if k in used}
    r = comp.reduce[0][0]
    wide = [n for n, e in zip(comp.index, comp.shape) if e >= least]
    for b in reversed(wide):
        for a in reversed(wide):
            if a == b:
                continue
            axes = {k: _read_axes(comp, rd) for k, rd in reads.items()}  # type: ignore[arg-type]
            rows = tuple(k for k, ax in axes.items() if {a, r} <= ax and b not in ax)
            cols = tuple(k for k, ax in axes.items() if {b, r} <= ax and a not in ax)
            if rows and cols:
                return a, b, rows, cols
    return None


def _tiled_plan(comp: Comprehension, tile: int) -> Plan | None:
    if not comp.reduce or comp.reduce[0][1] < tile:
        return None
    found = _rows_and_columns(comp, tile)
    if found is None:
        return None
    a, b, rows, cols = found
    return Plan("tiled", a=a, b=b, tile=tile, rows=rows, cols=cols)


def _blocked_plan(comp: Comprehension, block: tuple[int, int]) -> Plan | None:
    """A register block: a one-variable reduction over plain loads, each varying along at
    most one of two output axes ``a`` and ``b``, some along ``a`` (rows) and some along
    ``b`` (columns): a product's shape, its operands possibly computed from several reads.
    Not where a guard stops the loop early (its rows would do unequal work)."""
    rows_per, cols_per = block
    if len(comp.reduce) != 1 or comp.reduce[0][1] < 2 or len(comp.index) < 2:
        return None
    if loop_stop(comp) is not None or not all(isinstance(r, Load) for r in comp.reads.values()):
        return None
    used = {n.name for n in topo_order(list(comp.body)) if n.op == "var"}
    axes = {k: _read_axes(comp, rd) for k, rd in comp.reads.items() if k in used}  # type: ignore[arg-type]
    extent = dict(zip(comp.index, comp.shape))
    for b in reversed(comp.index):
        if extent[b] < cols_per // 2:
            continue
        for a in reversed(comp.index):
            if a == b or extent[a] < 2 or any({a, b} <= ax for ax in axes.values()):
                continue
            rows = tuple(k for k, ax in axes.items() if a in ax)
            cols = tuple(k for k, ax in axes.items() if b in ax)
            if rows and cols:
                size = (min(rows_per, extent[a]), cols_per)
                return Plan("blocked", a=a, b=b, rows=rows, cols=cols, block=size)
    return None


def lanes_plan(comp: Comprehension, lanes: int, least: int) -> Plan | None:
    """A split reduction over ``lanes`` partial states, for a reduction of at least
    ``least`` steps that no guard stops early (else None). With several reduction
    variables the last one is split (at most its extent in lanes, and at least
    LANES_MIN_LAST of them), the others loop around it."""
    if lanes < 2 or not comp.reduce or math.prod(e for _, e in comp.reduce) < least:
        return None
    if data_pin(comp) is not None:
        return None
    last = comp.reduce[-1][1]
    if len(comp.reduce) > 1:
        if last < LANES_MIN_LAST:
            return None
        lanes = min(lanes, last)
    if loop_stop(comp) is not None:
        return None
    return Plan("lanes", lanes=lanes)


def _tree_plan(comp: Comprehension, width: int, least: int) -> Plan | None:
    steps = math.prod(e for _, e in comp.reduce)
    if not comp.reduce or steps < least or comp.size * width > steps:
        return None
    return Plan("tree", width=width)


def _linear(node: Node, names: Sequence[str]) -> tuple[dict[str, float], float] | None:
    """``node`` as ``Σ coeff·var + const`` over the index variables ``names``, or None."""
    if node.op == "const":
        return {}, float(node.value)  # type: ignore[arg-type]
    if node.op == "var":
        return ({node.name: 1.0}, 0.0) if node.name in names else None  # type: ignore[dict-item]
    if node.op == "neg":
        inner = _linear(node.args[0], names)
        return None if inner is None else ({k: -v for k, v in inner[0].items()}, -inner[1])
    if node.op in ("add", "mul"):
        a, b = (_linear(x, names) for x in node.args)
        if a is None or b is None:
            return None
        if node.op == "add":
            keys = set(a[0]) | set(b[0])
            return {k: a[0].get(k, 0.0) + b[0].get(k, 0.0) for k in keys}, a[1] + b[1]
        if a[0] and b[0]:
            return None
        (terms, c), k = (a, b[1]) if not b[0] else (b, a[1])
        return {n: v * k for n, v in terms.items()}, c * k
    return None


def _difference(a: Node, b: Node, names: Sequence[str]) -> tuple[dict[str, float], float] | None:
    """``a − b`` as ``Σ coeff·var + const`` over ``names`` (see :func:`_linear`), or None
    when either side is not affine in them: the two sides of a guard moved to one side."""
    sides = [_linear(x, names) for x in (a, b)]
    if sides[0] is None or sides[1] is None:
        return None
    diff = dict(sides[0][0])
    for k, v in sides[1][0].items():
        diff[k] = diff.get(k, 0.0) - v
    return diff, sides[0][1] - sides[1][1]


def eliminate_pinned(comp: Comprehension) -> Comprehension:
    """A sum whose body is ``where(A == B, value, 0)``, with ``A − B`` affine in the index
    variables and ±1 on some reduction variable, pins that variable: the loop over it is
    replaced by its one value (guarded to its range). Repeats while a guard pins one."""
    while comp.monoid is SUM and comp.reduce and comp.epilogue is None:
        body = comp.body[0]
        if body.op != "select" or body.args[0].op != "eq":
            return comp
        cond, value, other = body.args
        if other.op != "const" or other.value != 0.0:
            return comp
        affine = _difference(cond.args[0], cond.args[1], comp.names)
        if affine is None:
            return comp
        diff, const = affine
        if any(v != int(v) for v in diff.values()) or const != int(const):
            return comp
        pinned = [(e, n) for n, e in comp.reduce if diff.get(n) in (1.0, -1.0)]
        if not pinned:
            return comp
        _, r = max(pinned)
        sign = diff[r]
        kept = [(n, e) for n, e in comp.reduce if n != r]
        new_names = tuple(comp.index) + reduce_names(len(kept))
        rename = dict(zip([n for n, _ in kept], new_names[len(comp.index) :]))
        rename |= {n: n for n in comp.index}
        domain = tuple(zip(new_names, comp.shape + tuple(e for _, e in kept)))
        # r = −(const + Σ_{u≠r} diff[u]·u) / sign, over the new domain
        solved = [0] * len(domain)
        for n, v in diff.items():
            if n != r and v:
                solved[new_names.index(rename[n])] = int(-v / sign)
        solved_const = int(-const / sign)
        rows, consts = [], []
        for n in comp.names:
            if n == r:
                rows.append(tuple(solved))
                consts.append(solved_const)
            else:
                rows.append(tuple(int(m == rename[n]) for m in new_names))
                consts.append(0)
        imap = IndexMap(tuple(e for _, e in domain), tuple(rows), tuple(consts))
        (new_value,), reads = substitute(comp, [value], domain, imap)
        at = affine_node(solved, solved_const, new_names)
        extent = dict(comp.reduce)[r]
        guarded = select(le(0.0, at), select(lt(at, float(extent)), new_value, 0.0), 0.0)
        comp = Comprehension(
            comp.name,
            comp.shape,
            comp.index,
            tuple(domain[len(comp.index) :]),
            SUM if kept else None,
            (guarded,),
            reads,
            None,
            dict(comp.shapes),
        ).validate()
    return comp


def data_pin(comp: Comprehension) -> tuple[str, Node] | None:
    """``(r, e)`` for a sum whose body is ``where(r == e, value, 0)`` (either side of the
    ``==``), ``r`` a reduction variable and ``e`` a value that does not vary along it (read
    from memory: an index tensor): only the step ``r = e`` can add anything, so a kernel
    binds ``r`` to ``e`` (kept in range; the guard still discards a value that is not a
    whole number in range) instead of looping. None for any other comprehension."""
    if comp.monoid is not SUM or not comp.reduce:
        return None
    body = comp.body[0]
    if body.op != "select" or body.args[0].op != "eq":
        return None
    other = body.args[2]
    if other.op != "const" or other.value != 0.0:
        return None
    reduced = {n for n, _ in comp.reduce}
    a, b = body.args[0].args
    for x, e in ((a, b), (b, a)):
        if x.op == "var" and x.name in reduced and not comp.depends_on(e, [x.name]):
            return x.name, e  # type: ignore[return-value]
    return None


def loop_stop(comp: Comprehension) -> tuple[dict[str, int], int] | None:
    """An upper bound on a one-variable reduction below which every element may differ
    from the monoid's identity: when each body component is ``where(r ≤ f, x, identity)``
    (or ``r < f``) under one guard, with ``f`` affine in the output index, the loop can
    stop at ``f + 1`` (or ``f``). Returns ``f``'s coefficients and constant (the stop)."""
    monoid = comp.monoid
    if monoid is None or len(comp.reduce) != 1:
        return None
    r = comp.reduce[0][0]
    guard = None
    for node, identity in zip(comp.body, monoid.identity):
        if node.op == "const" and node.value == identity:
            continue
        if node.op != "select" or node.args[2].op != "const" or node.args[2].value != identity:
            return None
        if guard is not None and node.args[0] is not guard:
            return None
        guard = node.args[0]
    if guard is None or guard.op not in ("le", "lt"):
        return None
    affine = _difference(guard.args[0], guard.args[1], comp.names)
    if affine is None:
        return None
    diff, const = affine
    if diff.get(r) != 1.0 or any(v != int(v) for v in diff.values()) or const != int(const):
        return None
    if any(v and n != r and n not in comp.index for n, v in diff.items()):
        return None
    # r + rest ≤ 0  →  r < 1 − rest;   r + rest < 0  →  r < −rest
    stop = {n: -int(v) for n, v in diff.items() if n != r and v}
    return stop, -int(const) + (1 if guard.op == "le" else 0)


def plan(
    comp: Comprehension,
    *,
    workgroups: bool = False,
    registers: bool = False,
    tile: int = TILE,
    tree_width: int = TREE_WIDTH,
    tree_min: int = TREE_MIN_REDUCTION,
    block: tuple[int, int] = BLOCK,
    lanes: int = LANES,
    lanes_min: int = LANES_MIN_REDUCTION,
    vector_rows: int = 1,
    vector_keys: int = 1,
    key_panel: bool = False,
) -> Plan:
    """The plan for ``comp``; ``workgroups`` allows the plans that need workgroup memory
    and barriers (WGSL kernels), ``registers`` the register-blocked and split-lane plans
    (compiled C; WGSL without workgroups), ``vector_rows`` vector plans over several rows
    (``vector_keys``: and reduction steps, where the monoid rescales; ``key_panel``: a score
    of such a plan from a transposed key panel, where one fits).
    A vector plan is preferred: it removes work, tiles only
    move it; one that pays only by lifting parts of varying components comes last. A sum
    pinned by data (``data_pin``) runs per element: it has one step."""
    if data_pin(comp) is not None:
        return Plan()
    found = _vector_plan(comp, vector_rows, keys=vector_keys, panel=key_panel)
    if found is None and registers:
        found = _blocked_plan(comp, block) or lanes_plan(comp, lanes, lanes_min)
    if found is None and workgroups:
        found = _tiled_plan(comp, tile) or _tree_plan(comp, tree_width, tree_min)
    lifted = _vector_plan(comp, vector_rows, lift=True, keys=vector_keys, panel=key_panel)
    return found or lifted or Plan()


def plans(graph: TensorGraph, *, workgroups: bool = False, **options: int) -> dict[str, Plan]:
    """Each comprehension's plan, by name."""
    return {c.name: plan(c, workgroups=workgroups, **options) for c in graph.comprehensions}


__all__ = [
    "BLOCK",
    "LANES",
    "MAX_VECTOR",
    "TILE",
    "TREE_WIDTH",
    "KeyPanel",
    "Plan",
    "cost",
    "data_pin",
    "eliminate_pinned",
    "invariant_parts",
    "lanes_plan",
    "loop_stop",
    "plan",
    "plans",
    "score_panel",
    "varying_state",
]
