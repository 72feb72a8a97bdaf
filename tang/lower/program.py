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
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..expr.graph import Graph, Node, as_node, topo_order
from ..expr.loop import prune_loops

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


class Copy(_Statement):
    """``name = node`` before a loop's updates: a state that becomes another state's old
    value reads it here, before that state is updated."""

    __slots__ = ("name", "node")

    def __init__(self, name: str, node: Node) -> None:
        self.name, self.node = name, node


class Loop(_Statement):
    """A loop node (``tang.expr.loop``) as a real loop: its states declared once before it
    (``states``: parameter, name, initial value), ``counter`` counting the steps up to
    ``count`` (a constant or a temporary), the ``body`` statements run each step (the step
    number is ``index`` as a number; ``captures`` are outer values read by name), then
    ``updates`` (state name, next value, the name of a ``Copy`` of it or None) set every
    state at once. ``outs`` names the
    states the rest of the program reads (``loop_out`` nodes)."""

    __slots__ = (
        "body",
        "captures",
        "count",
        "counter",
        "index",
        "node",
        "outs",
        "states",
        "updates",
    )

    def __init__(
        self,
        node: Node,
        counter: str,
        count: Node,
        index: Node,
        states: tuple[tuple[Node, str, Node], ...],
        captures: tuple[tuple[Node, Node], ...],
        body: tuple[_Statement, ...],
        updates: tuple[tuple[str, Node, str | None], ...],
        outs: tuple[tuple[Node, str], ...],
    ) -> None:
        self.node, self.counter, self.count, self.index = node, counter, count, index
        self.states, self.captures, self.body = states, captures, body
        self.updates, self.outs = updates, outs


Statement = Load | Let | Store | Copy | Loop


def walk(statements: Sequence[_Statement]) -> list[_Statement]:
    """Every statement, those inside loops included, in print order."""
    out: list[_Statement] = []
    stack = [iter(statements)]
    while stack:
        for st in stack[-1]:
            out.append(st)
            if st.__class__ is Loop:
                stack.append(iter(st.body))  # type: ignore[attr-defined]
                break
        else:
            stack.pop()
    return out


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
        for s in walk(self.statements) if self.loops else self.statements:
            if s.__class__ is Let or s.__class__ is Store:
                for node in s.nodes:  # type: ignore[union-attr]
                    forms[node] = _form(node, self.temps)
        return forms

    @functools.cached_property
    def loops(self) -> tuple[Loop, ...]:
        """The loop statements, outermost first (nested ones follow their loop)."""
        return tuple(s for s in walk(self.statements) if s.__class__ is Loop)  # type: ignore[misc]


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
    if any(n.op == "loop" for n in order):
        pruned = tuple(prune_loops(outs))  # a loop prints only the states something reads
        if any(a is not b for a, b in zip(pruned, outs)):
            outs, order = pruned, topo_order(pruned)
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
    stored = set(outs)
    constants: dict[Node, None] = {}  # the constants only loop bodies read
    steps = _level(
        order, stored, uses, temps, pending, inline, max_inline, itertools.count(), constants
    )
    stores = [Store(k, o, pending.pop(o, ())) for k, o in enumerate(outs)]
    assert not pending, "every inlined node has exactly one user"
    loads = tuple(var_nodes[name] for name in inputs if name in var_nodes)
    leaves = (*(n for n in order if n.op in LEAVES), *constants)
    columns = {name: k for k, name in enumerate(inputs)}
    statements = (*[Load(n, columns[n.name]) for n in loads], *steps, *stores)  # type: ignore[index]
    return Program(
        inputs, outs, tuple(output_names), statements, temps, loads, leaves, tuple(order)
    )


# ---------------------------------------------------------------------------------------
# programs with loops (tang.expr.loop): each loop node a Loop statement, its body scheduled
# as a program of its own inside it


def _level(
    order: Sequence[Node],
    stored: set[Node],
    uses: dict[Node, int],
    temps: dict[Node, str],
    pending: dict[Node, tuple[Node, ...]],
    inline: bool,
    max_inline: int,
    names: Iterator[int],
    constants: dict[Node, None],
) -> list:
    """Lets and Loops for one level of a program: the outer graph or a loop's body (each
    node used once and small inlined into its user, or into its store line when stored)."""
    statements: list = []
    outs_of: dict[Node, list[Node]] = {}
    for node in order:
        if node.op == "loop_out":
            outs_of.setdefault(node.args[0], []).append(node)

    def settle(a: Node) -> None:  # an inlined operand a loop reads gets a name first
        sub = pending.pop(a, None)
        if sub is not None:
            name = temps[a] = f"t{next(names)}"
            statements.append(Let(name, a, sub))

    for node in order:
        op = node.op
        if op in LEAVES or op == "loop_out":
            continue
        if op == "loop":
            for a in node.args:
                settle(a)
            statements.append(
                _loop(node, outs_of.get(node, []), temps, inline, max_inline, names, constants)
            )
            continue
        subtree: list[Node] = []
        for a in node.args:
            subtree.extend(pending.pop(a, ()))
        subtree.append(node)
        if inline and uses[node] == 1 and (len(subtree) <= max_inline or node in stored):
            pending[node] = tuple(subtree)
        else:
            name = temps[node] = f"t{next(names)}"
            statements.append(Let(name, node, tuple(subtree)))
    return statements


def _loop(
    node: Node,
    outs: list[Node],
    temps: dict[Node, str],
    inline: bool,
    max_inline: int,
    names: Iterator[int],
    constants: dict[Node, None],
) -> Loop:
    """The Loop statement of one loop node; its loop_out nodes take its states' names."""
    body = node.value
    n = body.nstate  # type: ignore[union-attr]
    count, init, outer = node.args[0], node.args[1 : 1 + n], node.args[1 + n :]
    params = body.params  # type: ignore[union-attr]
    states = tuple((params[1 + k], f"t{next(names)}", init[k]) for k in range(n))
    counter = f"t{next(names)}"
    for out in outs:
        temps[out] = states[out.value][1]  # type: ignore[index]
    order = topo_order(body.outputs)  # type: ignore[union-attr]
    for c in order:
        if c.op == "const":
            constants[c] = None
    uses: dict[Node, int] = {}
    for c in order:
        for a in c.args:
            uses[a] = uses.get(a, 0) + 1
    nexts = body.outputs  # type: ignore[union-attr]
    for o in nexts:  # every next value is named before any state changes
        uses[o] = uses.get(o, 0) + 2
    pending: dict[Node, tuple[Node, ...]] = {}
    statements = _level(order, set(), uses, temps, pending, inline, max_inline, names, constants)
    assert not pending, "a loop body's inlined nodes each have one user inside it"
    state_param = {p: k for k, (p, _, _) in enumerate(states)}
    updates: list[tuple[str, Node, str | None]] = []
    changed: set[int] = set()
    for k, o in enumerate(nexts):
        if o is states[k][0]:
            continue  # the state does not change
        j = state_param.get(o)
        via = None
        if j is not None and j in changed:  # state j is updated first: keep its old value
            via = f"t{next(names)}"
            statements.append(Copy(via, o))
        updates.append((states[k][1], o, via))
        changed.add(k)
    captures = tuple(zip(params[1 + n :], outer))
    return Loop(
        node,
        counter,
        count,
        params[0],
        states,
        captures,
        tuple(statements),
        tuple(updates),
        tuple((out, states[out.value][1]) for out in outs),  # type: ignore[index]
    )
