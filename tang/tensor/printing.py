"""The printed form of the tensor IR, read like a jaxpr: one line per comprehension.

    t2[i0:4, i1:3] = sum(r0:5) x[i0, r0] * w[r0, i1]

Output and its index variables with extents, the monoid with the reduction variables, the
body (reads name their buffer and index), and ``then …`` for an epilogue; inline producers
follow on indented ``where`` lines. ``exp2(x · log2 e)`` prints as ``exp(x)`` and
``log2(x) · ln 2`` as ``log(x)``; a tuple state prints as a tuple.
"""

from __future__ import annotations

import math

from ..expr.graph import COMPOSITE_BUILDERS, Node, var
from ..expr.ops import COMPOSITES, INFIX, LN2, LOG2E
from ..expr.text import literal
from .comprehension import FORMATTERS, Comprehension, Inline, TensorGraph

_CMP = INFIX  # comparison -> its operator in tang's text, from the registry


def format_node(node: Node) -> str:
    """A body as infix text (shared subexpressions repeat; bodies are small)."""
    return _text(node, 0)


def _text(node: Node, least: int) -> str:
    prec, text = _form(node)
    return f"({text})" if prec < least else text


def _form(node: Node) -> tuple[int, str]:
    op, args = node.op, node.args
    if op == "const":
        v = float(node.value)  # type: ignore[arg-type]
        if v < 0 or (v == 0 and math.copysign(1.0, v) < 0):
            return 4, "-" + literal(-v)
        return 6, literal(v)
    if op == "var":
        return 6, str(node.name)
    if op == "exp2" and args[0].op == "mul":
        a, b = args[0].args
        for x, c in ((a, b), (b, a)):
            if c.op == "const" and c.value == LOG2E:
                return 6, f"exp({_text(x, 0)})"
    if op == "mul":
        a, b = args
        for x, c in ((a, b), (b, a)):
            if c.op == "const" and c.value == LN2 and x.op == "log2":
                return 6, f"log({_text(x.args[0], 0)})"
        if (a.op == "recip" and b.op != "recip") or (a.op == "const" and b.op != "const"):
            a, b = b, a  # constants and divisors print last: x * 2, x / y
        if b.op == "recip":
            return 3, f"{_text(a, 3)} / {_text(b.args[0], 4)}"
        return 3, f"{_text(a, 3)} * {_text(b, 4)}"
    if op == "add":
        a, b = args
        if b.op == "neg":
            return 2, f"{_text(a, 2)} - {_text(b.args[0], 3)}"
        if a.op == "neg":
            return 2, f"{_text(b, 2)} - {_text(a.args[0], 3)}"
        return 2, f"{_text(a, 2)} + {_text(b, 3)}"
    if op == "recip":
        return 3, f"1 / {_text(args[0], 4)}"
    if op == "neg":
        return 4, "-" + _text(args[0], 4)
    if op in _CMP:
        return 1, _text(args[0], 2) + _CMP[op] + _text(args[1], 2)
    if op == "select":
        for name, pattern in _SELECTS.items():
            bound = _bind(pattern, node)
            if bound is not None:  # min or max: the registry's formula of two operands
                return 6, f"{name}({_text(bound[0], 0)}, {_text(bound[1], 0)})"
        c, a, b = args
        return 6, f"where({_text(c, 0)}, {_text(a, 0)}, {_text(b, 0)})"
    return 6, f"{op}({', '.join(_text(a, 0) for a in args)})"


# the composites of two operands whose formula is a select (min, max): each one's graph over
# two placeholder variables, which a select node is matched against
_OPERANDS = (var("%0"), var("%1"))
_SELECTS: dict[str, Node] = {
    name: pattern
    for name, c in COMPOSITES.items()
    if c.arity == 2 and (pattern := COMPOSITE_BUILDERS[name](*_OPERANDS)).op == "select"
}


def _bind(pattern: Node, node: Node) -> tuple[Node, Node] | None:
    """The two operands for which ``pattern`` (over ``_OPERANDS``) builds ``node``, or None."""
    bound: dict[Node, Node] = {}
    stack = [(pattern, node)]
    while stack:
        p, n = stack.pop()
        if p in _OPERANDS:
            if bound.setdefault(p, n) is not n:
                return None
        elif p.op != n.op or (p.op == "const" and p is not n) or len(p.args) != len(n.args):
            return None
        else:
            stack.extend(zip(p.args, n.args))
    return bound[_OPERANDS[0]], bound[_OPERANDS[1]]


def format_comprehension(comp: Comprehension, indent: str = "") -> str:
    """One comprehension: its line, then a ``where`` line per inline producer."""
    head = ", ".join(f"{n}:{e}" for n, e in zip(comp.index, comp.shape))
    lhs = f"{comp.name}[{head}]"
    body = [format_node(n) for n in comp.body]
    value = body[0] if len(body) == 1 else "(" + ", ".join(body) + ")"
    if comp.reduce:
        loop = ", ".join(f"{n}:{e}" for n, e in comp.reduce)
        value = f"{comp.monoid.name}({loop}) {value}"  # type: ignore[union-attr]
        if comp.epilogue is not None:
            state = ", ".join(comp.monoid.state)  # type: ignore[union-attr]
            value += f"  then ({state}) ↦ {format_node(comp.epilogue)}"
    if comp.stop_gradient:
        value = f"stop_gradient({value})"
    lines = [f"{indent}{lhs} = {value}"]
    for read in comp.reads.values():
        if isinstance(read, Inline):
            lines.append(format_comprehension(read.comp, indent + "    where "))
    return "\n".join(lines)


def format_monoid_combines(graph: TensorGraph) -> list[str]:
    """The combine of each monoid other than sum/max/min/prod the graph uses."""
    seen, lines = set(), []
    for c in graph.comprehensions:
        m = c.monoid
        if m is None or m.numpy is not None or m.name in seen:
            continue
        seen.add(m.name)
        left = ", ".join(m.state)
        right = ", ".join(s + "'" for s in m.state)
        out = ", ".join(format_node(n) for n in m.combine)
        ident = ", ".join(literal(v) if v >= 0 else "-" + literal(-v) for v in m.identity)
        lines.append(f"monoid {m.name}: ({left}) ⊕ ({right}) = ({out}); identity ({ident})")
    return lines


def format_graph(graph: TensorGraph) -> str:
    """The whole graph: inputs, monoids, one line per comprehension, outputs."""
    ins = ", ".join(f"{k}:{list(v)}" for k, v in graph.inputs.items())
    lines = [f"inputs {ins}"]
    lines += format_monoid_combines(graph)
    lines += [format_comprehension(c) for c in graph.comprehensions]
    shown = [
        o + (f" as {list(graph.output_shapes[o])}" if o in graph.output_shapes else "")
        for o in graph.outputs
    ]
    lines.append(f"outputs {', '.join(shown)}")
    return "\n".join(lines)


FORMATTERS["graph"] = format_graph  # str(graph) prints the IR
