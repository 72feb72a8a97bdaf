"""Schedule output nodes into a program: a short list of statements every backend prints.

A program is statements over one item ``i`` of a kernel: ``Load`` an input column into a
variable, ``Let`` a temporary ``t0, t1, …`` (named densely, in order) be one expression,
``Store`` an output column — each live node of the graph computed once, in dependency
order. Nodes used exactly once may be *inlined* into their user's line for readability
(bounded by a size cap so expressions stay short and shallow). Where the columns live is
the program's ``Layout`` (today one packed buffer per side, ``src[k*n + i]``); statements
that later kinds of programs need (a loop over an axis, an accumulation, an index
computation) join the same list. The program knows nothing about any language; the printers
in this package turn it into text and record which line computes which node.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..expr.graph import Graph, Node, as_node, topo_order

LEAVES = frozenset({"const", "var"})


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: printers cache by it
class Layout:
    """Where a kernel's columns live: column ``k`` of item ``i`` at ``buffer[k*n + i]``,
    the inputs in ``source`` and the outputs in ``dest``, ``n`` items (one packed buffer per
    side, each input or output one contiguous column). Printers spell an address from
    ``address``; the host packs and unpacks buffers the same way."""

    source: str = "src"
    dest: str = "dst"
    count: str = "n"
    item: str = "i"

    def address(self, column: int) -> tuple[int, str, str]:
        """Column ``column`` of the current item as (column, count, item): column·count + item."""
        return column, self.count, self.item

    def describe(self) -> str:
        """The layout in one line of words, for a comment atop each kernel."""
        c, i = self.count, self.item
        return f"{self.source}[k*{c} + {i}] = input k; {self.dest}[j*{c} + {i}] = output j"


COLUMNS = Layout()  # the element-wise kernels' layout


class _Statement:
    """A statement of a program: plain slots, not a dataclass (an edit in the page makes
    dozens, and a frozen dataclass costs three times as much to build); never changed
    after ``schedule`` makes it."""

    __slots__ = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Load(_Statement):
    """Input ``column`` of the current item into the input's variable ``node`` (kernels
    only; a function takes its inputs as parameters)."""

    __slots__ = ("column", "node")

    def __init__(self, node: Node, column: int) -> None:
        self.node, self.column = node, column


class Let(_Statement):
    """One line ``name = expression``: computes ``node``; ``nodes`` is the inlined subtree
    printed on the line, children first and ``node`` last."""

    __slots__ = ("name", "node", "nodes")

    def __init__(self, name: str, node: Node, nodes: tuple[Node, ...]) -> None:
        self.name, self.node, self.nodes = name, node, nodes


Step = Let  # the name this statement had when a program was only steps


class Store(_Statement):
    """Output ``index`` gets ``node``; ``nodes`` is the subtree printed inline on the store
    line (empty when the node is a temporary, an input or a constant)."""

    __slots__ = ("index", "node", "nodes")

    def __init__(self, index: int, node: Node, nodes: tuple[Node, ...]) -> None:
        self.index, self.node, self.nodes = index, node, nodes


Statement = Load | Let | Store


@dataclass(frozen=True)
class Program:
    """Inputs, outputs and the statements of one kernel or function, in order: the loads,
    the lets, then one store per output."""

    inputs: tuple[str, ...]
    outputs: tuple[Node, ...]
    output_names: tuple[str, ...]
    statements: tuple[Statement, ...]
    temps: dict[Node, str]
    loads: tuple[Node, ...]  # the variable nodes the program reads, in input order
    leaves: tuple[Node, ...]  # every constant and variable node the program reads
    nodes: tuple[Node, ...] = ()  # every node the outputs reach, children first
    layout: Layout = COLUMNS

    @functools.cached_property
    def steps(self) -> tuple[Let, ...]:
        return tuple(s for s in self.statements if s.__class__ is Let)

    @functools.cached_property
    def stores(self) -> tuple[Store, ...]:
        return tuple(s for s in self.statements if s.__class__ is Store)

    @property
    def used_inputs(self) -> tuple[str, ...]:
        """Inputs some step or store actually reads (kernels load only these)."""
        return tuple(n.name for n in self.loads)  # type: ignore[misc]

    @functools.cached_property
    def forms(self) -> dict[Node, tuple[str, tuple]]:
        """How each operation prints in every language, as (form, operands): the op, or
        ``sub`` for an add of a negation or of a negative constant (whose magnitude is
        ``(ABS, c)``), constants first in a product (2 * x) and last in a sum (x + 1).
        Worked out once per program, for all the printers."""
        forms: dict[Node, tuple[str, tuple]] = {}
        for s in self.statements:
            if s.__class__ is not Load:
                for node in s.nodes:  # type: ignore[union-attr]
                    forms[node] = _form(node, self.temps)
        return forms


ABS = "abs"  # key (ABS, c) in a printer's table of texts: a negative constant's magnitude


def _form(node: Node, temps: dict[Node, str]) -> tuple[str, tuple]:
    """(op, operands) as printed; IEEE addition commutes and a - b is a + (-b), bit for bit."""
    op, args = node.op, node.args
    if op == "mul" and args[1].op == "const":
        return op, (args[1], args[0])
    if op != "add":
        return op, args
    a, b = args
    if a.op == "const":
        a, b = b, a
    if b.op == "neg" and b not in temps:  # an inlined negation
        return "sub", (a, b.args[0])
    if b.op == "const" and b.value == b.value and math.copysign(1.0, b.value) < 0:  # type: ignore[arg-type]
        return "sub", (a, (ABS, b))
    if a.op == "neg" and a not in temps:
        return "sub", (b, a.args[0])
    return "add", (a, b)


def schedule(
    outputs: Sequence[Node | float] | Graph,
    inputs: Sequence[str] | None = None,
    *,
    inline: bool = True,
    max_inline: int = 4,
    output_names: Sequence[str] | None = None,
) -> Program:
    """Order the live nodes of ``outputs`` into steps over ``inputs`` (default: the graph's
    inputs, else the variables sorted by name); single-use nodes of at most ``max_inline``
    operations are inlined into their user when ``inline`` is true."""
    order = None
    if isinstance(outputs, Graph):
        inputs = outputs.inputs if inputs is None else inputs
        order = outputs.nodes()
        outputs = outputs.outputs
    outs = tuple(as_node(o) for o in outputs)
    if not outs:
        raise ValueError("nothing to lower: give at least one output")
    for k, o in enumerate(outs):
        if o.is_bool:
            raise TypeError(
                f"output {k} is a comparison; a comparison may only be the condition of "
                "a select (tang.where(cond, a, b))"
            )
    if order is None:
        order = topo_order(outs)
    var_nodes = {n.name: n for n in order if n.op == "var"}
    names = sorted(var_nodes)  # type: ignore[type-var]
    inputs = tuple(names) if inputs is None else tuple(inputs)
    if len(set(inputs)) != len(inputs):
        raise ValueError(f"input names repeat: {list(inputs)}")
    missing = [n for n in names if n not in inputs]
    if missing:
        raise ValueError(f"the expression uses {missing} but the inputs are {list(inputs)}")
    if output_names is None:
        output_names = tuple(f"out{k}" for k in range(len(outs)))
    elif len(output_names) != len(outs):
        raise ValueError(f"{len(output_names)} output names for {len(outs)} outputs")

    # uses: one per parent edge, one per output slot
    uses: dict[Node, int] = {}
    for node in order:
        for a in node.args:
            uses[a] = uses.get(a, 0) + 1
    for o in outs:
        uses[o] = uses.get(o, 0) + 1

    temps: dict[Node, str] = {}
    pending: dict[Node, tuple[Node, ...]] = {}  # inlined node -> its subtree, children first
    steps: list[Let] = []
    stored = set(outs)
    for node in order:
        if node.op in LEAVES:
            continue
        subtree: list[Node] = []
        for a in node.args:
            subtree.extend(pending.pop(a, ()))
        subtree.append(node)
        # a node used once is inlined into its user when small, or into its store line
        if inline and uses[node] == 1 and (len(subtree) <= max_inline or node in stored):
            pending[node] = tuple(subtree)
        else:
            name = f"t{len(steps)}"
            temps[node] = name
            steps.append(Let(name, node, tuple(subtree)))
    stores = [Store(k, o, pending.pop(o, ())) for k, o in enumerate(outs)]
    assert not pending, "every inlined node has exactly one user"
    loads = tuple(var_nodes[name] for name in inputs if name in var_nodes)
    leaves = tuple(n for n in order if n.op in LEAVES)
    columns = {name: k for k, name in enumerate(inputs)}
    statements = (*[Load(n, columns[n.name]) for n in loads], *steps, *stores)  # type: ignore[index]
    return Program(
        inputs, outs, tuple(output_names), statements, temps, loads, leaves, tuple(order)
    )
