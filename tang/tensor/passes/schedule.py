"""The schedule: how each comprehension maps onto invocations, decided from its form alone.

Three plans, each chosen by a generic test of the body's dependence structure (no op names):

- ``per_element``: one invocation per output element (the default).
- ``vector``: one invocation computes a whole run of outputs along the axes ``vector``.
  Chosen when the body components that do not vary along an output axis cost more than the
  ones that do (an inline producer counts its whole reduction). The invariant work, and the
  state components whose combine reads only invariant ones, run once per reduction step; the
  varying state is a small private array over the vector axes, and the invariant parts of
  its combine are hoisted out of the vector loop.
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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...expr.graph import Node, topo_order
from ..comprehension import Comprehension, Inline, Load, TensorGraph

# the most outputs one invocation keeps in a private array (a vector plan's width)
MAX_VECTOR = 128
# the side of a square tile (tile × tile invocations per workgroup)
TILE = 16
# invocations of a combine-tree workgroup, and the least reduction length per output for it
TREE_WIDTH = 256
TREE_MIN_REDUCTION = 4096


@dataclass(frozen=True)
class Plan:
    """How one comprehension runs. ``kind`` is "per_element", "vector", "tiled" or "tree".
    ``vector``: the output axes one invocation covers (vector plans); ``varying``: the state
    components that vary along them; ``a``/``b``/``tile``: the tiled output axes and the tile
    side; ``rows``/``cols``: the reads staged as row tiles (vary along ``a``, not ``b``) and
    column tiles (along ``b``, not ``a``); ``width``: a combine tree's invocations."""

    kind: str = "per_element"
    vector: tuple[str, ...] = ()
    varying: tuple[int, ...] = ()
    a: str | None = None
    b: str | None = None
    tile: int = TILE
    rows: tuple[str, ...] = ()
    cols: tuple[str, ...] = ()
    width: int = 1

    def __str__(self) -> str:
        if self.kind == "vector":
            state = ", ".join(str(k) for k in self.varying)
            return f"vector over {', '.join(self.vector)} (state {state} per element)"
        if self.kind == "tiled":
            return (
                f"tiled {self.tile}x{self.tile} over {self.a}, {self.b} "
                f"(rows {', '.join(self.rows)}; columns {', '.join(self.cols)})"
            )
        if self.kind == "tree":
            return f"combine tree of {self.width}"
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


def _vector_plan(comp: Comprehension) -> Plan | None:
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
        if not fixed or cost(comp, fixed) <= 2 * cost(comp, moving):
            continue
        chosen, width = axes, width * extent
    if not chosen or width == comp.size:
        return None
    ordered = tuple(n for n in comp.index if n in chosen)
    return Plan("vector", vector=ordered, varying=varying_state(comp, ordered))


def _read_axes(comp: Comprehension, read: Load) -> set[str]:
    return {n for n, s in zip(comp.names, read.view.strides) if s}


def _tiled_plan(comp: Comprehension, tile: int) -> Plan | None:
    if len(comp.reduce) != 1 or len(comp.index) < 2 or comp.reduce[0][1] < tile:
        return None
    if not all(isinstance(r, Load) for r in comp.reads.values()):
        return None
    used = {n.name for n in topo_order(list(comp.body)) if n.op == "var"}
    reads = {k: r for k, r in comp.reads.items() if k in used}
    r = comp.reduce[0][0]
    wide = [n for n, e in zip(comp.index, comp.shape) if e >= tile]
    for b in reversed(wide):
        for a in reversed(wide):
            if a == b:
                continue
            axes = {k: _read_axes(comp, rd) for k, rd in reads.items()}  # type: ignore[arg-type]
            rows = tuple(k for k, ax in axes.items() if {a, r} <= ax and b not in ax)
            cols = tuple(k for k, ax in axes.items() if {b, r} <= ax and a not in ax)
            if rows and cols:
                return Plan("tiled", a=a, b=b, tile=tile, rows=rows, cols=cols)
    return None


def _tree_plan(comp: Comprehension, width: int, least: int) -> Plan | None:
    steps = math.prod(e for _, e in comp.reduce)
    if not comp.reduce or steps < least or comp.size * width > steps:
        return None
    return Plan("tree", width=width)


def plan(
    comp: Comprehension,
    *,
    workgroups: bool = False,
    tile: int = TILE,
    tree_width: int = TREE_WIDTH,
    tree_min: int = TREE_MIN_REDUCTION,
) -> Plan:
    """The plan for ``comp``; ``workgroups`` allows the plans that need workgroup memory
    and barriers (WGSL kernels). A vector plan is preferred: it removes work, tiles only
    move it."""
    found = _vector_plan(comp)
    if found is None and workgroups:
        found = _tiled_plan(comp, tile) or _tree_plan(comp, tree_width, tree_min)
    return found or Plan()


def plans(graph: TensorGraph, *, workgroups: bool = False, **options: int) -> dict[str, Plan]:
    """Each comprehension's plan, by name."""
    return {c.name: plan(c, workgroups=workgroups, **options) for c in graph.comprehensions}


__all__ = ["MAX_VECTOR", "TILE", "TREE_WIDTH", "Plan", "cost", "plan", "plans", "varying_state"]
