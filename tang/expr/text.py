"""Graph → infix text that ``tang.parse`` reads back to the very same node.

Each primitive has one spelling (below); parentheses appear only where precedence needs
them and constants print exactly (``repr``; inf and nan by name). The walk is an explicit
stack, so a chain of any depth prints without recursion.

Round trip: for every number-valued node (not a bare comparison) whose variable names the
parser accepts (identifiers other than built-in names),
``parse(to_text(n), variables(n), limits=UNLIMITED) is n`` — the very node, because nodes
are hash-consed and every primitive has a spelling that builds exactly it (recip, exp2 and
log2 print as calls, named by the registry ``tang.expr.ops``). Shared subexpressions are
repeated in the text.
"""

from __future__ import annotations

import math

from .graph import Graph, Node, topo_order
from .loop import loop_out
from .ops import CALLS, INFIX

# precedence levels, the same as the parser's: comparison < sum < product < unary < atom
_CMP, _SUM, _PRODUCT, _UNARY, _ATOM = 1, 2, 3, 4, 6

# primitive -> function name the parser knows (printed as a call), from the registry
_CALLS: dict[str, str] = CALLS
_COMPARISONS: dict[str, str] = INFIX  # comparison -> its operator, from the registry

MAX_TEXT_NODES = 1_000_000  # nodes after expanding shared subexpressions into a tree

Piece = str | tuple[Node, int]  # literal text, or (child, least precedence without parens)


def to_text(item: Node | Graph, *, name: str = "f", max_nodes: int = MAX_TEXT_NODES) -> str:
    """Infix text for a node, or ``f(x, y) = …`` for a one-output Graph."""
    if isinstance(item, Graph):
        if len(item.outputs) != 1:
            raise ValueError(f"to_text prints one output, this graph has {len(item.outputs)}")
        return f"{name}({', '.join(item.inputs)}) = {to_text(item.outputs[0])}"
    if not isinstance(item, Node):
        raise TypeError(f"to_text needs a Node or a Graph, got {type(item).__name__}")
    _check_size(item, max_nodes)
    out: list[str] = []
    stack: list[Piece] = [(item, 0)]
    while stack:
        piece = stack.pop()
        if isinstance(piece, str):
            out.append(piece)
            continue
        node, least = piece
        prec, pieces = _form(node)
        if prec < least:
            stack.append(")")
            stack.extend(reversed(pieces))
            stack.append("(")
        else:
            stack.extend(reversed(pieces))
    return "".join(out)


def _check_size(root: Node, limit: int) -> None:
    """Refuse graphs whose text (a tree: shared nodes repeat) would exceed ``limit`` nodes."""
    size: dict[int, int] = {}
    for node in topo_order([root]):
        size[id(node)] = min(limit + 1, 1 + sum(size[id(a)] for a in node.args))
    if size[id(root)] > limit:
        raise ValueError(
            f"the graph's text would repeat shared subexpressions beyond {limit} nodes; "
            "print a smaller graph or raise max_nodes"
        )


def literal(v: float) -> str:
    """A non-negative float as text that reads back exactly (inf and nan by name)."""
    if v != v:
        return "nan"
    if math.isinf(v):
        return "inf"
    if v.is_integer() and v < 1e16:
        return str(int(v))
    return repr(v)


def _negative(v: float) -> bool:
    return v < 0.0 or (v == 0.0 and math.copysign(1.0, v) < 0.0)


def _form(node: Node) -> tuple[int, list[Piece]]:
    """(precedence, pieces) of one node's spelling."""
    op, args = node.op, node.args
    if op == "const":
        v: float = node.value  # type: ignore[assignment]
        if _negative(v):
            return _UNARY, ["-" + literal(-v)]
        return _ATOM, [literal(v)]
    if op == "var":
        return _ATOM, [_param_name(node.name) if node.name.startswith("%") else node.name]  # type: ignore[union-attr,list-item]
    if op == "loop_out":  # a loop prints once per state read, with its body
        return _ATOM, [*_loop_pieces(args[0]), f"[{node.value}]"]
    if op == "add":
        a, b = args
        if b.op == "neg":
            return _SUM, [(a, _SUM), " - ", (b.args[0], _SUM + 1)]
        if b.op == "const" and _negative(b.value):  # type: ignore[arg-type]
            return _SUM, [(a, _SUM), " - " + literal(-b.value)]  # type: ignore[operator]
        return _SUM, [(a, _SUM), " + ", (b, _SUM + 1)]
    if op == "mul":
        a, b = args
        if b.op != "recip" and a.op == "recip":
            a, b = b, a
        if b.op == "recip":
            return _PRODUCT, [(a, _PRODUCT), " / ", (b.args[0], _PRODUCT + 1)]
        return _PRODUCT, [(a, _PRODUCT), " * ", (b, _PRODUCT + 1)]
    if op == "neg":
        return _UNARY, ["-", (args[0], _UNARY)]
    if op in _COMPARISONS:
        return _CMP, [(args[0], _CMP + 1), _COMPARISONS[op], (args[1], _CMP + 1)]
    pieces: list[Piece] = [_CALLS[op] + "("]
    for i, a in enumerate(args):
        if i:
            pieces.append(", ")
        pieces.append((a, 0))
    pieces.append(")")
    return _ATOM, pieces


def loop_text(loop: Node, *, max_nodes: int = MAX_TEXT_NODES) -> str:
    """A loop node's text: ``loop(count, (init…), (i, s0…) -> (next…)) with c0 = …``."""
    if loop.op != "loop":
        raise ValueError(f"loop_text prints a loop node, not '{loop.op}'")
    return to_text(loop_out(loop, 0), max_nodes=max_nodes).removesuffix("[0]")


def _param_name(name: str) -> str:
    """A loop body's parameter as text: ``i``, ``s0``, ``c0`` (``i_2``, … in a loop inside
    another loop's body)."""
    depth, _, kind = name[1:].partition(".")
    return kind if depth == "1" else f"{kind}_{depth}"


def _loop_pieces(loop: Node) -> list[Piece]:
    """``loop(count, (init…), (i, s0…) -> (next…))``, captures after ``with``."""
    body = loop.value
    n = body.nstate  # type: ignore[union-attr]
    count, init, captured = loop.args[0], loop.args[1 : 1 + n], loop.args[1 + n :]
    pieces: list[Piece] = ["loop(", (count, 0), ", ("]
    for k, a in enumerate(init):
        pieces += [", "] if k else []
        pieces.append((a, 0))
    names = ", ".join(_param_name(p.name) for p in body.params[: 1 + n])  # type: ignore[union-attr]
    pieces.append(f"), ({names}) -> (")
    for k, o in enumerate(body.outputs):  # type: ignore[union-attr]
        pieces += [", "] if k else []
        pieces.append((o, 0))
    pieces.append(")")
    for k, (p, a) in enumerate(zip(body.params[1 + n :], captured)):  # type: ignore[union-attr]
        pieces += [" with " if k == 0 else ", ", _param_name(p.name) + " = ", (a, 0)]
    pieces.append(")")
    return pieces
