"""Reverse mode over the graph: one backward sweep yields every partial derivative as new
graph nodes, so a gradient is itself a graph (it can be simplified, printed, lowered).

The sweep visits the nodes parents-first and hands each node's adjoint ``g`` to its
operands through the rule in ``VJP``: one line per primitive, written with the graph's
constructors. Small smart constructors fold what is exact in IEEE arithmetic (``g·1``,
``--g``, ``-(c·g)`` as ``g·(-c)``, ``g + g`` as ``2·g``) so gradients are born lean.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .graph import (
    HALF_PI,
    LN2,
    LOG2E,
    Graph,
    Node,
    add,
    as_node,
    building,
    const,
    mul,
    neg,
    recip,
    select,
    sin,
    topo_order,
    variables,
)

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


def _atan2(g: Node, out: Node, y: Node, x: Node) -> tuple[Node, Node]:
    scale = _mul(g, recip(add(mul(x, x), mul(y, y))))  # g / (x² + y²)
    return _mul(scale, x), _neg(_mul(scale, y))


# primitive -> (adjoint g, node output, *operands) -> adjoint contribution per operand.
# None means "no contribution" (comparisons and select's condition have no derivative).
VJP: dict[str, Callable[..., tuple[Node | None, ...]]] = {
    "add": lambda g, out, a, b: (g, g),
    "mul": lambda g, out, a, b: (_mul(g, b), _mul(g, a)),
    "neg": lambda g, out, a: (_neg(g),),
    "recip": lambda g, out, a: (_neg(_mul(g, mul(out, out))),),  # (1/a)' = -1/a²
    "sqrt": lambda g, out, a: (_mul(g, mul(recip(out), 0.5)),),  # √a' = 1/(2√a)
    "sin": lambda g, out, a: (_mul(g, sin(add(a, HALF_PI))),),  # sin' = cos
    "exp2": lambda g, out, a: (_mul(g, mul(out, LN2)),),  # (2^a)' = 2^a ln 2
    "log2": lambda g, out, a: (_mul(g, mul(recip(a), LOG2E)),),  # log2' = 1/(a ln 2)
    "tanh": lambda g, out, a: (_mul(g, add(1.0, neg(mul(out, out)))),),  # tanh' = 1 - tanh²
    "atan2": _atan2,  # ∂/∂y = x/(x²+y²), ∂/∂x = -y/(x²+y²)
    "select": lambda g, out, c, a, b: (None, select(c, g, 0.0), select(c, 0.0, g)),
    "lt": lambda g, out, a, b: (None, None),
    "le": lambda g, out, a, b: (None, None),
    "eq": lambda g, out, a, b: (None, None),
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
            contributions = VJP[node.op](g, node, *node.args)  # one per operand
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
