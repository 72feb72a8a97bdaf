"""Comprehensions: every tensor operation as one form.

A ``Comprehension`` fills each element of its output (index variables ``i0, i1, …``) with a
reduction, under a ``Monoid``, over reduction variables ``r0, r1, …`` of a body: an ordinary
``tang.expr`` graph whose leaves are constants, index variables and *reads*. A read is a
variable node named like ``x[i0, r0]`` standing for ``Load(source, view)``: the element of
buffer ``source`` at the position the view gives for the comprehension's index tuple (out
variables, then reduction variables). A read may also be ``Inline``: a producer comprehension
evaluated in place at an affine index (what fusion makes of a large intermediate). An
optional epilogue maps the reduced state (variables named by the monoid's state) to the
output. ``TensorGraph`` is a DAG of comprehensions over named inputs.

``substitute`` is the one rewrite every pass is built from: replace index variables by
affine expressions of a new domain (views compose, index leaves become arithmetic) and
reads by expressions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..expr.graph import Graph, Node, add, const, eq, maximum, minimum, mul, select, topo_order, var
from ..expr.trace import replay
from .view import IndexMap, View, row_major

# the printed form's functions, registered by tang.tensor.printing (which imports this module)
FORMATTERS: dict[str, Callable[..., str]] = {}


class TensorIRError(ValueError):
    """A comprehension or graph that breaks the IR's rules (the message says which)."""


# ---------------------------------------------------------------------------------------
# monoids


@dataclass(frozen=True, eq=False)
class Monoid:
    """An associative combine over a state tuple with its identity. ``combine`` is a graph
    over the left state (variables named ``state``) and the right state (the same names
    with a prime); ``partial(total, element)`` gives d total / d element for one-component
    monoids that have a derivative; ``numpy`` names numpy's reducer when there is one;
    ``shared``: the partial picks the elements equal to the total, which share it evenly;
    ``rescale``: where component 0 is a running max and every other component a sum carried
    from max ``x`` to a larger ``top`` by the factor this graph (over variables ``x`` and
    ``top``) gives, as the online softmax's: a schedule may then fold a block of elements
    against the block's max, one factor per element, not one rescale of the state each."""

    name: str
    state: tuple[str, ...]
    identity: tuple[float, ...]
    combine: tuple[Node, ...]
    partial: Callable[[Node, Node], Node] | None = None
    numpy: str | None = None
    shared: bool = False  # tang.tensor.grad divides by their count (PyTorch's amax)
    rescale: Node | None = None

    @property
    def arity(self) -> int:
        return len(self.state)

    def __repr__(self) -> str:
        return f"Monoid({self.name})"


def monoid(
    name: str,
    state: Sequence[str],
    identity: Sequence[float],
    combine: Callable[[tuple[Node, ...], tuple[Node, ...]], Sequence[Node | float]],
    *,
    partial: Callable[[Node, Node], Node] | None = None,
    numpy: str | None = None,
    shared: bool = False,
    rescale: Callable[[Node, Node], Node] | None = None,
) -> Monoid:
    """A monoid from Python: ``combine(left, right)`` (and ``rescale(x, top)``) traced once
    on variable nodes."""
    state = tuple(state)
    if len(identity) != len(state) or not state:
        raise TensorIRError(f"monoid {name!r} needs one identity per state component")
    for s in state:
        if not s.isidentifier() or re.fullmatch(r"[ir][0-9]+", s):
            raise TensorIRError(
                f"monoid state names are identifiers other than index names (i0, r0…), not {s!r}"
            )
    left = tuple(var(s) for s in state)
    right = tuple(var(s + "'") for s in state)
    out = tuple(n if isinstance(n, Node) else const(n) for n in combine(left, right))
    if len(out) != len(state):
        raise TensorIRError(f"monoid {name!r}: combine returns {len(out)} values for {len(state)}")
    factor = rescale(var("x"), var("top")) if rescale is not None else None
    return Monoid(
        name, state, tuple(float(v) for v in identity), out, partial, numpy, shared, factor
    )


SUM = monoid(
    "sum",
    ["acc"],
    [0.0],
    lambda a, b: [add(a[0], b[0])],
    partial=lambda t, e: const(1.0),
    numpy="sum",
)
PROD = monoid(
    "prod", ["acc"], [1.0], lambda a, b: [mul(a[0], b[0])], partial=lambda t, e: t / e, numpy="prod"
)
MAX = monoid(
    "max",
    ["acc"],
    [-math.inf],
    lambda a, b: [maximum(a[0], b[0])],
    partial=lambda t, e: _indicator(e, t),
    numpy="max",
    shared=True,
)
MIN = monoid(
    "min",
    ["acc"],
    [math.inf],
    lambda a, b: [minimum(a[0], b[0])],
    partial=lambda t, e: _indicator(e, t),
    numpy="min",
    shared=True,
)
MONOIDS: dict[str, Monoid] = {m.name: m for m in (SUM, PROD, MAX, MIN)}


def _indicator(a: Node, b: Node) -> Node:
    """1 where the element is the extremum, else 0 (tied elements share the gradient:
    ``Monoid.shared``)."""
    return select(eq(a, b), 1.0, 0.0)


# ---------------------------------------------------------------------------------------
# reads


@dataclass(frozen=True)
class Load:
    """The element of buffer ``source`` at ``view``'s position for the domain's index. A
    position may leave the buffer only where a guard (a select) discards the value read:
    evaluators and kernels clamp such positions into the buffer."""

    source: str
    view: View


@dataclass(frozen=True, eq=False)
class Inline:
    """Comprehension ``comp`` evaluated in place, at output index ``index`` (an affine map
    of the reading comprehension's domain)."""

    comp: Comprehension
    index: IndexMap


Read = Load | Inline


def _affine_text(row: Sequence[int], c: int, names: Sequence[str]) -> str:
    terms = []
    for k, n in zip(row, names):
        if k == 1:
            terms.append(n)
        elif k == -1:
            terms.append("-" + n)
        elif k:
            terms.append(f"{k}*{n}")
    if c or not terms:
        terms.append(str(c))
    text = " + ".join(terms)
    return text.replace("+ -", "- ")


def read_name(read: Read, source_shape: Sequence[int], names: Sequence[str]) -> str:
    """The variable name a read gets in a body: its source and index, e.g. ``x[i0, r0]``
    (a flat position ``x[@…]`` when the view is not a row-major index of the source). Equal
    reads get equal names, so equal bodies are the same interned node."""
    if isinstance(read, Inline):
        rows = read.index
        inner = ", ".join(_affine_text(r, c, names) for r, c in zip(rows.rows, rows.consts))
        return f"{read.comp.name}⟨{inner}⟩"
    index = read.view.unravel(source_shape)
    if index is None:
        return f"{read.source}[@{_affine_text(read.view.strides, read.view.offset, names)}]"
    inner = ", ".join(_affine_text(r, c, names) for r, c in zip(index.rows, index.consts))
    return f"{read.source}[{inner}]"


# ---------------------------------------------------------------------------------------
# the comprehension


@dataclass(frozen=True, eq=False)
class Comprehension:
    """``name[index] = epilogue(monoid-reduce over reduce of body)``; see the module doc.
    ``body`` has one node per monoid state component (one node and no monoid when there is
    no reduction); ``reads`` maps each read variable's name to its Load or Inline."""

    name: str
    shape: tuple[int, ...]
    index: tuple[str, ...]
    reduce: tuple[tuple[str, int], ...]
    monoid: Monoid | None
    body: tuple[Node, ...]
    reads: Mapping[str, Read]
    epilogue: Node | None = None
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # source shapes
    origin: str = ""  # "file:line" of the code that defined it (what a pass's error names)
    # a constant to tang.tensor.grad: no gradient flows through it (stop_gradient)
    stop_gradient: bool = False

    @property
    def domain(self) -> tuple[tuple[str, int], ...]:
        """(name, extent) of every index variable: the output's, then the reduction's."""
        return tuple(zip(self.index, self.shape)) + self.reduce

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.domain)

    @property
    def extents(self) -> tuple[int, ...]:
        return tuple(e for _, e in self.domain)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def sources(self) -> set[str]:
        """Buffers this comprehension reads from memory (inline producers' reads too)."""
        out: set[str] = set()
        for r in self.reads.values():
            if isinstance(r, Load):
                out.add(r.source)
            else:
                out |= r.comp.sources()
        return out

    def nodes(self) -> tuple[Node, ...]:
        """Every node the comprehension evaluates: body, then epilogue."""
        return self.body + ((self.epilogue,) if self.epilogue is not None else ())

    def depends_on(self, node: Node, names: Iterable[str]) -> bool:
        """Whether ``node`` varies with any of the index variables ``names``."""
        names = set(names)
        positions = [k for k, n in enumerate(self.names) if n in names]
        for leaf in topo_order([node]):
            if leaf.op != "var":
                continue
            if leaf.name in names:
                return True
            read = self.reads.get(leaf.name)  # type: ignore[arg-type]
            if isinstance(read, Load) and any(read.view.strides[k] for k in positions):
                return True
            if isinstance(read, Inline) and any(
                row[k] for row in read.index.rows for k in positions
            ):
                return True
        return False

    def validate(self) -> Comprehension:
        """Check the rules (raise ``TensorIRError`` naming the comprehension) and return self."""
        where = f"comprehension {self.name}"
        if len(self.index) != len(self.shape):
            raise TensorIRError(
                f"{where}: {len(self.index)} index variables for shape {self.shape}"
            )
        if len(set(self.names)) != len(self.names):
            raise TensorIRError(f"{where}: index variable names repeat: {self.names}")
        if self.reduce and self.monoid is None:
            raise TensorIRError(f"{where}: a reduction needs a monoid")
        arity = self.monoid.arity if self.reduce and self.monoid else 1
        if len(self.body) != arity:
            raise TensorIRError(f"{where}: {len(self.body)} body nodes for a state of {arity}")
        if self.epilogue is not None and not self.reduce:
            raise TensorIRError(f"{where}: an epilogue needs a reduction")
        known = set(self.names) | set(self.reads)
        for node in self.body:
            for leaf in topo_order([node]):
                if leaf.op == "var" and leaf.name not in known:
                    raise TensorIRError(
                        f"{where}: the body reads an unknown variable {leaf.name!r}"
                    )
        for name, read in self.reads.items():
            if isinstance(read, Load) and read.view.shape != self.extents:
                raise TensorIRError(
                    f"{where}: read {name} has a view over {read.view.shape}, not {self.extents}"
                )
        if self.epilogue is not None:
            state = set(self.monoid.state)  # type: ignore[union-attr]
            reduced = [n for n, _ in self.reduce]
            for leaf in topo_order([self.epilogue]):
                if leaf.op != "var" or leaf.name in state:
                    continue
                if leaf.name not in known or leaf.name in reduced:
                    raise TensorIRError(f"{where}: the epilogue reads {leaf.name!r}")
                if self.depends_on(leaf, reduced):
                    raise TensorIRError(
                        f"{where}: the epilogue's read {leaf.name} varies with the reduction"
                    )
        return self


# ---------------------------------------------------------------------------------------
# building and rewriting


def index_names(rank: int) -> tuple[str, ...]:
    return tuple(f"i{k}" for k in range(rank))


def reduce_names(count: int) -> tuple[str, ...]:
    return tuple(f"r{k}" for k in range(count))


def affine_node(row: Sequence[int], c: int, names: Sequence[str]) -> Node:
    """``c + Σ row[k]·names[k]`` as a graph over index variables."""
    out: Node | None = None
    for k, n in zip(row, names):
        if k:
            term = var(n) if k == 1 else mul(var(n), float(k))
            out = term if out is None else add(out, term)
    if out is None:
        return const(float(c))
    return add(out, float(c)) if c else out


@dataclass
class Reads:
    """Reads collected while building a body: ``load`` returns the read's variable node."""

    names: tuple[str, ...]
    shapes: Mapping[str, tuple[int, ...]]
    reads: dict[str, Read] = field(default_factory=dict)

    def load(self, source: str, view: View) -> Node:
        return self.add(Load(source, view))

    def add(self, read: Read) -> Node:
        shape = read.comp.shape if isinstance(read, Inline) else self.shapes[read.source]
        name = read_name(read, shape, self.names)
        self.reads.setdefault(name, read)
        return var(name)


def substitute(
    comp: Comprehension,
    nodes: Sequence[Node],
    domain: Sequence[tuple[str, int]],
    index: IndexMap,
    replace: Mapping[str, Node] | None = None,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
) -> tuple[list[Node], dict[str, Read]]:
    """Rewrite ``nodes`` of ``comp`` onto a new ``domain``: ``index`` gives each of comp's
    index variables as an affine function of the new domain's; reads compose their views
    (or index maps) with it, index leaves become arithmetic; ``replace`` maps read names to
    expressions (already over the new domain) instead. Returns the nodes and their reads."""
    names = tuple(n for n, _ in domain)
    new_domain = tuple(e for _, e in domain)
    if index.domain != new_domain or len(index.rows) != len(comp.names):
        raise TensorIRError(f"substitute: a map {index.domain}→{len(index.rows)} for {comp.name}")
    reads = Reads(names, {**comp.shapes, **(shapes or {})})
    values: dict[str, Any] = {}
    for k, n in enumerate(comp.names):
        values[n] = affine_node(index.rows[k], index.consts[k], names)
    replace = replace or {}
    used = {leaf.name for leaf in topo_order(nodes) if leaf.op == "var"}
    for name, read in comp.reads.items():
        if name not in used:
            continue
        if name in replace:
            values[name] = replace[name]
        elif isinstance(read, Load):
            values[name] = reads.load(read.source, read.view.compose(index))
        else:
            values[name] = reads.add(Inline(read.comp, read.index.compose(index)))
    out = replay(Graph((), list(nodes)), values)
    return [o if isinstance(o, Node) else const(o) for o in out], reads.reads


def rename(comp: Comprehension, name: str, sources: Mapping[str, str]) -> Comprehension:
    """``comp`` called ``name``, reading each buffer ``s`` as ``sources.get(s, s)``."""
    reads = Reads(comp.names, {sources.get(k, k): v for k, v in comp.shapes.items()})
    values: dict[str, Any] = {}
    for rname, read in comp.reads.items():
        if isinstance(read, Load):
            values[rname] = reads.load(sources.get(read.source, read.source), read.view)
        else:
            inner = rename(read.comp, read.comp.name, sources)
            values[rname] = reads.add(Inline(inner, read.index))
    nodes = replay(Graph((), list(comp.nodes())), values)
    nodes = [n if isinstance(n, Node) else const(n) for n in nodes]
    body = tuple(nodes[: len(comp.body)])
    epilogue = nodes[len(comp.body)] if comp.epilogue is not None else None
    return Comprehension(
        name,
        comp.shape,
        comp.index,
        comp.reduce,
        comp.monoid,
        body,
        reads.reads,
        epilogue,
        dict(reads.shapes),
        comp.origin,
        comp.stop_gradient,
    )


def prune_reads(reads: Mapping[str, Read], nodes: Sequence[Node]) -> dict[str, Read]:
    """The reads ``nodes`` still use."""
    used = {leaf.name for leaf in topo_order(nodes) if leaf.op == "var"}
    return {n: r for n, r in reads.items() if n in used}


# ---------------------------------------------------------------------------------------
# the graph


class TensorGraph:
    """Named inputs (shapes), comprehensions in dependency order, and the output names."""

    def __init__(
        self,
        inputs: Mapping[str, Sequence[int]],
        comprehensions: Sequence[Comprehension],
        outputs: Sequence[str],
        output_shapes: Mapping[str, Sequence[int]] | None = None,
        packed: Mapping[str, str] | None = None,
    ) -> None:
        """``output_shapes``: the shape a user sees for an output whose buffer is the same
        row-major memory under another shape (a reshape of the result), when they differ.
        ``packed``: the inputs held as u32 words of narrower elements, by element type
        (``tang.tensor.packed``); their shapes count elements."""
        self.inputs: dict[str, tuple[int, ...]] = {k: tuple(v) for k, v in inputs.items()}
        self.comprehensions: tuple[Comprehension, ...] = tuple(comprehensions)
        self.outputs: tuple[str, ...] = tuple(outputs)
        self.output_shapes: dict[str, tuple[int, ...]] = {
            k: tuple(v) for k, v in (output_shapes or {}).items() if k in self.outputs
        }
        self.packed: dict[str, str] = {k: v for k, v in (packed or {}).items() if k in self.inputs}
        self._check()

    def _check(self) -> None:
        from .packed import ELEMENTS

        for name, kind in self.packed.items():
            if kind not in ELEMENTS:
                raise TensorIRError(
                    f"input {name}: packed elements are {', '.join(ELEMENTS)}, not {kind!r}"
                )
        known = dict(self.inputs)
        for c in self.comprehensions:
            if c.name in known:
                raise TensorIRError(f"the name {c.name!r} is defined twice")
            c.validate()
            for s in c.sources():
                if s not in known:
                    raise TensorIRError(f"comprehension {c.name} reads {s!r} before it is defined")
                if c.shapes.get(s, known[s]) != known[s]:
                    raise TensorIRError(f"comprehension {c.name} reads {s} with the wrong shape")
            known[c.name] = c.shape
        for o in self.outputs:
            if o not in known:
                raise TensorIRError(f"output {o!r} is not defined")
        for o, shape in self.output_shapes.items():
            if math.prod(shape) != math.prod(known[o]):
                raise TensorIRError(f"output {o} cannot be seen as {shape}: its size differs")

    def rebuilt(self, comprehensions: Sequence[Comprehension]) -> TensorGraph:
        """The same inputs and outputs computed by other comprehensions (what a pass makes)."""
        return TensorGraph(
            self.inputs, comprehensions, self.outputs, self.output_shapes, self.packed
        )

    def output_shape(self, name: str) -> tuple[int, ...]:
        """The shape the user sees for output ``name``."""
        return self.output_shapes.get(name, self.shape(name))

    def shape(self, name: str) -> tuple[int, ...]:
        if name in self.inputs:
            return self.inputs[name]
        return self[name].shape

    def __getitem__(self, name: str) -> Comprehension:
        for c in self.comprehensions:
            if c.name == name:
                return c
        raise KeyError(f"no comprehension named {name!r}")

    def consumers(self, name: str) -> list[Comprehension]:
        return [c for c in self.comprehensions if name in c.sources()]

    def __len__(self) -> int:
        return len(self.comprehensions)

    def buffers(self) -> dict[str, tuple[int, ...]]:
        """Every buffer the graph writes (one per comprehension), with its shape."""
        return {c.name: c.shape for c in self.comprehensions}

    def __str__(self) -> str:
        return FORMATTERS["graph"](self) if "graph" in FORMATTERS else repr(self)

    def __repr__(self) -> str:
        return (
            f"TensorGraph(inputs={list(self.inputs)}, comprehensions={len(self)}, "
            f"outputs={list(self.outputs)})"
        )


def prune(graph: TensorGraph) -> TensorGraph:
    """Drop comprehensions no output depends on."""
    live = set(graph.outputs)
    keep: list[Comprehension] = []
    for c in reversed(graph.comprehensions):
        if c.name in live:
            keep.append(c)
            live |= c.sources()
    return graph.rebuilt(list(reversed(keep)))


def contiguous_load(
    reads: Reads,
    source: str,
    shape: Sequence[int],
    positions: Sequence[int],
    extents: Sequence[int],
) -> Node:
    """Read row-major buffer ``source`` of ``shape`` at the domain variables ``positions``
    (one per axis) of a domain of ``extents``."""
    strides = [0] * len(extents)
    for s, k in zip(row_major(shape), positions):
        strides[k] += s
    return reads.load(source, View(tuple(extents), tuple(strides), 0))
