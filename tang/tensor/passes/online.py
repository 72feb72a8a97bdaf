"""The online max-rescaled reduction: a sum whose body holds a factor ``exp2(c·(b − M))``,
where ``M`` is the max of ``b`` over the same reduction variable, becomes one reduction over
the state (running max m, running sum l, running accumulator acc) with an associative
combine that rescales both sides to the larger max. ``M`` is no longer read; a factor that
reads the sum of the same exponential over the same variable becomes ``l`` in the epilogue.

A pattern over monoids and body structure (graph identity of interned nodes): no op names.
After fusion, a sum-of-exponentials weighted average computed this way never writes the
matrix of ``b`` values (it is read in place), and the reduction tiles (the combine is
associative).
"""

from __future__ import annotations

import dataclasses
import math

from ...expr.graph import Graph, Node, add, const, exp2, lt, maximum, mul, neg, select, var
from ...expr.trace import replay
from ..comprehension import (
    MAX,
    SUM,
    Comprehension,
    Load,
    Monoid,
    TensorGraph,
    monoid,
    prune,
    prune_reads,
    substitute,
)
from ..view import IndexMap

_MONOIDS: dict[float, Monoid] = {}


def rescaling_monoid(scale: float) -> Monoid:
    """The (m, l, acc) monoid for exponentials ``exp2(scale · x)``."""
    if scale not in _MONOIDS:

        def factor(x: Node, top: Node) -> Node:  # carries a sum at max x to max top ≥ x
            return select(lt(x, top), exp2(mul(add(x, neg(top)), scale)), 1.0)

        def combine(a: tuple[Node, ...], b: tuple[Node, ...]) -> list[Node]:
            (m, l_, acc), (m2, l2, acc2) = a, b
            top = maximum(m, m2)
            s1, s2 = factor(m, top), factor(m2, top)
            return [top, l_ * s1 + l2 * s2, acc * s1 + acc2 * s2]

        name = "online" if len(_MONOIDS) == 0 else f"online{len(_MONOIDS)}"
        _MONOIDS[scale] = monoid(
            name, ["m", "l", "acc"], [-math.inf, 0.0, 0.0], combine, rescale=factor
        )
    return _MONOIDS[scale]


def _factors(node: Node) -> list[Node]:
    """The operands of a product tree (a non-product is one factor)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.op == "mul":
            stack.extend(reversed(n.args))
        else:
            out.append(n)
    return out


def _product(nodes: list[Node]) -> Node:
    out: Node = const(1.0)
    for n in nodes:
        out = n if out.op == "const" and out.value == 1.0 else mul(out, n)
    return out


def _exponential(f: Node) -> tuple[float, Node, str] | None:
    """(c, b, name of the read M) when ``f`` is ``exp2(c · (b − M))`` with c > 0."""
    if f.op != "exp2":
        return None
    t, scale = f.args[0], 1.0
    if t.op == "mul":
        a, b = t.args
        if b.op == "const":
            a, b = b, a
        if a.op != "const" or not a.value > 0:  # type: ignore[operator]
            return None
        t, scale = b, float(a.value)  # type: ignore[arg-type]
    if t.op != "add":
        return None
    for x, y in (t.args, reversed(t.args)):
        if y.op == "neg" and y.args[0].op == "var":
            return scale, x, y.args[0].name  # type: ignore[return-value]
    return None


def _reduction_of(
    c: Comprehension, read_name: str, by_name: dict, monoid_: Monoid, k: int
) -> Node | None:
    """The body of the one-variable ``monoid_`` reduction that ``read_name`` of ``c`` reads,
    restated on c's domain with its reduction variable as c's variable ``k`` (None when the
    read is not such a reduction, or varies with variable ``k``)."""
    read = c.reads.get(read_name)
    if not isinstance(read, Load) or read.view.strides[k]:
        return None
    p = by_name.get(read.source)
    if p is None or p.monoid is not monoid_ or len(p.reduce) != 1 or p.epilogue is not None:
        return None
    if p.reduce[0][1] != c.extents[k]:
        return None
    index = read.view.unravel(p.shape)
    if index is None:
        return None
    unit = tuple(int(u == k) for u in range(len(c.extents)))
    imap = IndexMap(c.extents, (*index.rows, unit), (*index.consts, 0))
    (body,), _ = substitute(p, p.body, c.domain, imap)
    return body


def _rewrite(c: Comprehension, by_name: dict) -> Comprehension | None:
    if c.monoid is not SUM or len(c.reduce) != 1 or c.epilogue is not None:
        return None
    k = len(c.index)
    factors = _factors(c.body[0])
    for at, f in enumerate(factors):
        found = _exponential(f)
        if found is None:
            continue
        scale, b, m_read = found
        if _reduction_of(c, m_read, by_name, MAX, k) is not b:
            continue
        rest = factors[:at] + factors[at + 1 :]
        varying = [x for x in rest if c.depends_on(x, [c.reduce[0][0]])]
        fixed = [x for x in rest if not c.depends_on(x, [c.reduce[0][0]])]
        total = {name: var("l") for name in c.reads if _reduction_of(c, name, by_name, SUM, k) is f}
        epilogue = mul(var("acc"), _product(fixed)) if fixed else var("acc")
        if total:
            (epilogue,) = replay(Graph((), [epilogue]), total)
        body = (b, const(1.0), _product(varying))
        if b.op == "select" and b.args[2].op == "const" and b.args[2].value == -math.inf:
            # where the running max's element is the identity (−inf), the whole element is
            # (−inf, 0, 0): the identity, which the schedule may then skip
            guard = b.args[0]
            body = (b, select(guard, 1.0, 0.0), select(guard, body[2], 0.0))
        return dataclasses.replace(
            c,
            monoid=rescaling_monoid(scale),
            body=body,
            epilogue=epilogue,
            reads=prune_reads(c.reads, [*body, epilogue]),
        ).validate()
    return None


def online_rescale(graph: TensorGraph) -> TensorGraph:
    """Every matching sum rewritten to the online (m, l, acc) reduction (consumers first,
    so a weighted sum still sees the plain sums it divides by), then dead code dropped."""
    comps = list(graph.comprehensions)
    for k in range(len(comps) - 1, -1, -1):
        by_name = {c.name: c for c in comps}
        new = _rewrite(comps[k], by_name)
        if new is not None:
            comps[k] = new
    return prune(graph.rebuilt(comps))
