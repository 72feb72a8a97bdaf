"""Reverse mode over the graph: one backward sweep yields every partial derivative as new
graph nodes, so a gradient is itself a graph (it can be simplified, printed, lowered).

The sweep visits the nodes parents-first and hands each node's adjoint ``g`` to its
operands through its rule in the op registry (``tang.expr.ops``): one line per primitive,
written with the graph's constructors. Small smart constructors fold what is exact in IEEE
arithmetic (``g·1``, ``--g``, ``-(c·g)`` as ``g·(-c)``, ``g + g`` as ``2·g``) so gradients
are born lean.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace

from .graph import (
    Graph,
    Node,
    add,
    as_node,
    building,
    const,
    cos,
    mul,
    neg,
    recip,
    select,
    sin,
    topo_order,
    variables,
)
from .ops import OPS

ONE = const(1.0)
MINUS_ONE = const(-1.0)
ZERO = const(0.0)


def _mul(a: Node | float, b: Node | float) -> Node:
    """a·b without the ``·1``, with ``-1·b`` as a negation and a constant times a negation
    as a product by the negated constant."""
    a = a if a.__class__ is Node else as_node(a)
    b = b if b.__class__ is Node else as_node(b)
    if a.op == "const":
        a, b = b, a
    if b.op == "const":  # a·c
        if b is ONE:
            return a
        if b is MINUS_ONE:
            return _neg(a)
        if a.op == "neg":
            return mul(a.args[0], -b.value)  # type: ignore[operator]
    elif a.op == "neg":  # (-x)·y = -(x·y), bit for bit: signs pulled outward
        return _neg(mul(a.args[0], b))
    elif b.op == "neg":
        return _neg(mul(a, b.args[0]))
    return mul(a, b)


def _neg(a: Node) -> Node:
    """-a, with --a = a and -(c·x) = x·(-c)."""
    if a.op == "neg":
        return a.args[0]
    if a.op == "mul":
        x, c = a.args
        if x.op == "const":
            x, c = c, x
        if c.op == "const":
            return mul(x, -c.value)  # type: ignore[operator]
    return neg(a)


def _add(a: Node, b: Node) -> Node:
    """a + b, with a + a = 2·a."""
    return mul(a, 2.0) if a is b else add(a, b)


# What a derivative rule of the registry (tang.expr.ops) builds with: the graph's
# constructors, and the folding ``times`` (g·x without ·1) and ``negate`` (-x without --).
KIT = SimpleNamespace(
    add=add, mul=mul, neg=neg, recip=recip, select=select, sin=sin, cos=cos, times=_mul, negate=_neg
)

# primitive -> (kit, adjoint g, node output, *operands) -> adjoint contribution per operand.
# None means "no contribution" (comparisons and select's condition have no derivative).
VJP: dict[str, Callable[..., tuple[Node | None, ...]]] = {
    name: p.vjp for name, p in OPS.items() if p.vjp is not None
}


def backward(output: Node, wrt: Sequence[str], order: Sequence[Node] | None = None) -> list[Node]:
    """d output / d v for each variable name in ``wrt``, as graph nodes (one sweep).
    ``order``: ``topo_order([output])``, when the caller has it."""
    output = as_node(output)
    if output.is_bool:
        raise TypeError("cannot differentiate a comparison")
    adjoint: dict[Node, Node] = {output: ONE}  # nodes hash by identity
    found: dict[str, Node] = {}
    with building():
        for node in reversed(topo_order([output]) if order is None else order):
            g = adjoint.pop(node, None)
            if g is None or node.op == "const":
                continue
            if node.op == "var":
                found[node.name] = g  # type: ignore[index]
                continue
            contributions = VJP[node.op](KIT, g, node, *node.args)  # one per operand
            for operand, contribution in zip(node.args, contributions, strict=False):
                if contribution is not None:
                    previous = adjoint.get(operand)
                    adjoint[operand] = (
                        contribution if previous is None else _add(previous, contribution)
                    )
    return [found.get(name, ZERO) for name in wrt]


def gradient(graph: Graph | Node, wrt: Sequence[str] | None = None) -> Graph:
    """The Graph of ``[value, ∂value/∂w for w in wrt]`` for a one-output graph (or a node);
    ``wrt`` defaults to the graph's inputs (a node's variables, sorted by name)."""
    if isinstance(graph, Node):
        graph = Graph(sorted(variables([graph])), [graph])
    if len(graph.outputs) != 1:
        raise ValueError(
            f"grad needs a graph with one output, this one has {len(graph.outputs)}; "
            "differentiate each output (or a weighted sum of them) on its own"
        )
    names = list(graph.inputs if wrt is None else wrt)
    (output,) = graph.outputs
    return Graph(graph.inputs, [output, *backward(output, names, graph.nodes())])
