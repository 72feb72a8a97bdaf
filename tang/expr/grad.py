"""Reverse mode over the graph: one backward sweep yields every partial derivative as new
graph nodes, so a gradient is itself a graph (it can be simplified, printed, lowered).

The sweep visits the nodes parents-first and hands each node's adjoint ``g`` to its
operands through its rule in the op registry (``tang.expr.ops``): one line per primitive,
written with the graph's constructors. Small smart constructors fold what is exact in IEEE
arithmetic (``g·1``, ``--g``, ``-(c·g)`` as ``g·(-c)``, ``g + g`` as ``2·g``) so gradients
are born lean. A chain-rule product keeps its constant factor outermost and multiplies two
constant factors when it builds them (``(3·g)·5`` is built as ``15·g``): the order of a
derivative's factors is the sweep's own choice, not a value to keep bit for bit, so no
kernel multiplies two constants at run time.
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
from .loop import LoopGradientError
from .ops import OPS

ONE = const(1.0)
MINUS_ONE = const(-1.0)
ZERO = const(0.0)


def _coefficient(a: Node) -> tuple[float, Node] | None:
    """(c, x) when ``a`` is the product c·x of a constant and a non-constant, else None."""
    if a.op != "mul":
        return None
    x, c = a.args
    if x.op == "const":
        x, c = c, x
    return (c.value, x) if c.op == "const" and x.op != "const" else None  # type: ignore[return-value]


def _mul(a: Node | float, b: Node | float) -> Node:
    """a·b without the ``·1``, with ``-1·b`` as a negation, a constant times a negation as a
    product by the negated constant, and a constant factor of either side pulled out and
    multiplied into the other's: (c·x)·y = c·(x·y), c·(d·x) = (c·d)·x."""
    a = a if a.__class__ is Node else as_node(a)
    b = b if b.__class__ is Node else as_node(b)
    ao, bo = a.op, b.op
    if ao == "const":
        a, b, ao, bo = b, a, bo, ao
    if bo == "const":  # a·c
        if b is ONE:
            return a
        if b is MINUS_ONE:
            return _neg(a)
        if ao == "neg":
            return _mul(a.args[0], -b.value)  # type: ignore[operator]
        if ao == "mul":
            inner = _coefficient(a)
            if inner is not None:  # c·(d·x): one constant, folded now
                return _mul(inner[1], inner[0] * b.value)  # type: ignore[operator]
        return mul(a, b)
    if ao == "neg":  # (-x)·y = -(x·y), bit for bit: signs pulled outward
        return _neg(_mul(a.args[0], b))
    if bo == "neg":
        return _neg(_mul(a, b.args[0]))
    if ao != "mul" and bo != "mul":  # the common case: no constant factor to gather
        return mul(a, b)
    left, right = _coefficient(a), _coefficient(b)
    if left is None and right is None:
        return mul(a, b)
    c = (1.0 if left is None else left[0]) * (1.0 if right is None else right[0])
    x = a if left is None else left[1]
    y = b if right is None else right[1]
    return _mul(_mul(x, y), c)  # the constant outermost, where the next one meets it


def _neg(a: Node) -> Node:
    """-a, with --a = a and -(c·x) = x·(-c)."""
    if a.op == "neg":
        return a.args[0]
    inner = _coefficient(a)
    if inner is not None:
        return _mul(inner[1], -inner[0])
    return neg(a)


def _add(a: Node, b: Node) -> Node:
    """a + b, with a + a = 2·a (and c·x + c·x = 2c·x)."""
    return _mul(a, 2.0) if a is b else add(a, b)


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
            vjp = VJP.get(node.op)
            if vjp is None:
                raise LoopGradientError(
                    f"reverse mode does not pass the loop node #{node.serial} "
                    "(tang.fori_loop): carry Duals through the loop for its derivatives "
                    "(tang.jvp, forward mode) instead"
                )
            contributions = vjp(KIT, g, node, *node.args)  # one per operand
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
    derivatives = backward(output, names, graph.nodes())
    return Graph(graph.inputs, [output, *derivatives], name=graph.name)
