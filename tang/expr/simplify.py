"""Rewrite rules, kept as a table of patterns, applied over the DAG to a fixpoint.

A pattern is ``(op, pattern, …)``; a name binds any node (a repeated name must bind the
same node); a name starting with ``c`` binds only constants, and its rewrite receives the
float; a float matches exactly that constant. Commutative operands match in either order.
A rewrite returns the replacement, or None when a guard says the rule does not apply.

Two tables, because IEEE floats are not the reals:

- ``EXACT`` rules give the same bits for every input, ±0, ±inf and nan included.
- ``FINITE`` rules are true in real arithmetic and assume every intermediate value is
  finite (like a compiler's -ffinite-math-only): ``x·0 → 0`` is wrong when x is ±inf or nan,
  ``x - x → 0`` too, and the sign of a zero may flip. Where every intermediate is finite
  they change a result by rounding only (or make it more accurate: ``log2(exp2 x) → x``).

``simplify(g)`` uses both; ``simplify(g, assume_finite=False)`` only the exact ones. Dead
code goes with every pass: a graph holds only what its outputs reach.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import graph as G
from .graph import (
    COMMUTATIVE,
    Graph,
    Node,
    building,
    const,
    mul,
    neg,
    recip,
    topo_order,
    variables,
)

Pattern = Any  # tuple (op, *patterns) | str (a binding) | float (that constant)
Rule = tuple[Pattern, Callable[..., Any]]


def _int_power(c: float, x: Node) -> Node | None:
    """x**c as products when c is a small integer (the graph's pow already does this)."""
    return G.pow(x, c) if c == int(c) and abs(c) <= 64 else None


EXACT: list[Rule] = [
    (("mul", "x", 1.0), lambda x: x),
    (("add", "x", -0.0), lambda x: x),
    (("mul", "x", -1.0), lambda x: neg(x)),
    (("neg", ("neg", "x")), lambda x: x),
    (("add", "x", "x"), lambda x: mul(x, 2.0)),  # x+x and 2x round alike
    (("neg", ("mul", "c", "x")), lambda c, x: mul(x, -c)),
    (("mul", ("neg", "x"), "y"), lambda x, y: neg(mul(x, y))),  # pull signs outward
    (("recip", ("neg", "x")), lambda x: neg(recip(x))),
    (("lt", "x", "x"), lambda x: False),
]

FINITE: list[Rule] = [
    # identities and annihilation (x·0 is nan for x = ±inf or nan)
    (("add", "x", 0.0), lambda x: x),
    (("mul", "x", 0.0), lambda x: 0.0),
    (("mul", "x", -0.0), lambda x: 0.0),
    (("le", "x", "x"), lambda x: True),
    (("eq", "x", "x"), lambda x: True),
    # cancellation: double reciprocal, x - x, x / x, inverse functions
    (("recip", ("recip", "x")), lambda x: x),
    (("add", "x", ("neg", "x")), lambda x: 0.0),
    (("mul", "x", ("recip", "x")), lambda x: 1.0),
    (("log2", ("exp2", "x")), lambda x: x),
    (("exp2", ("log2", "x")), lambda x: x),
    (("mul", ("sqrt", "x"), ("sqrt", "x")), lambda x: x),
    # integer powers as products: 2^(n·log2 x) = x·x·…
    (("exp2", ("mul", "c", ("log2", "x"))), _int_power),
    # gather constants and like terms
    (("mul", "c1", ("mul", "c2", "x")), lambda c1, c2, x: mul(x, c1 * c2)),
    (("add", "c1", ("add", "c2", "x")), lambda c1, c2, x: G.add(x, c1 + c2)),
    (("add", ("mul", "c", "x"), "x"), lambda c, x: mul(x, c + 1.0)),
    (("add", ("mul", "c1", "x"), ("mul", "c2", "x")), lambda c1, c2, x: mul(x, c1 + c2)),
    (("add", ("mul", "x", "y"), ("mul", "x", "z")), lambda x, y, z: mul(x, G.add(y, z))),
    (("add", "x", ("add", "y", "x")), lambda x, y: G.add(mul(x, 2.0), y)),
    (("add", ("neg", "x"), ("neg", "y")), lambda x, y: neg(G.add(x, y))),
    (("neg", ("add", "x", ("neg", "y"))), lambda x, y: G.add(y, neg(x))),
    (("mul", ("recip", "x"), ("recip", "y")), lambda x, y: recip(mul(x, y))),
    (("mul", ("exp2", "x"), ("exp2", "y")), lambda x, y: G.exp2(G.add(x, y))),
]

# primitive -> constructor that rebuilds it from (possibly rewritten) operands
BUILD: dict[str, Callable[..., Any]] = {
    "add": G.add,
    "mul": G.mul,
    "neg": G.neg,
    "recip": G.recip,
    "sqrt": G.sqrt,
    "sin": G.sin,
    "exp2": G.exp2,
    "log2": G.log2,
    "atan2": G.atan2,
    "lt": G.lt,
    "le": G.le,
    "eq": G.eq,
    "select": G.select,
}


def _orderings(pattern: Pattern) -> list[Pattern]:
    """Every way to read ``pattern`` with commutative operands in either order."""
    if not isinstance(pattern, tuple):
        return [pattern]
    op, subs = pattern[0], pattern[1:]
    combos: list[tuple[Pattern, ...]] = [()]
    for sub in subs:
        combos = [(*c, alt) for c in combos for alt in _orderings(sub)]
    if op in COMMUTATIVE:
        combos += [c[::-1] for c in combos if c[::-1] not in combos]
    return [(op, *c) for c in combos]


Step = tuple[tuple[int, ...], str, Any]  # (path of operand indices from the root, kind, data)


def _steps(pattern: Pattern) -> list[Step]:
    """A flat pattern as checks in breadth-first order (a parent's op before its operands)."""
    steps: list[Step] = []
    queue: list[tuple[tuple[int, ...], Pattern]] = [((), pattern)]
    for path, p in queue:
        if isinstance(p, tuple):
            steps.append((path, "op", p[0]))
            queue.extend(((*path, i), sub) for i, sub in enumerate(p[1:]))
        elif isinstance(p, Node):
            steps.append((path, "is", p))
        else:
            if p[0] == "c":
                steps.append((path, "op", "const"))
            steps.append((path, "bind", p))
    return steps


def _match(steps: list[Step], root: Node) -> tuple[dict[str, Node], list[Node]] | None:
    """Bindings and matched operation nodes (root first), or None. No recursion at all."""
    env: dict[str, Node] = {}
    inner: list[Node] = []
    for path, kind, data in steps:
        node = root
        for i in path:
            node = node.args[i]
        if kind == "op":
            if node.op != data:
                return None
            if data != "const":
                inner.append(node)
        elif kind == "is":
            if node is not data:
                return None
        else:
            bound = env.setdefault(data, node)
            if bound is not node:
                return None
    return env, inner


def _new_operations(result: Any, present: dict[int, Any]) -> int:
    """How many operation nodes under ``result`` are in neither graph yet."""
    count, stack, seen = 0, [result], set()
    while stack:
        n = stack.pop()
        if not isinstance(n, Node) or id(n) in present or id(n) in seen or not n.args:
            continue
        seen.add(id(n))
        count += 1
        stack.extend(n.args)
    return count


def _compile(pattern: Pattern) -> Pattern:
    """The pattern with its float literals turned into (interned) constant nodes."""
    if isinstance(pattern, float):
        return const(pattern)
    if isinstance(pattern, tuple):
        return (pattern[0], *map(_compile, pattern[1:]))
    return pattern


Compiled = tuple[list[Step], Callable[..., Any]]


class RuleSet:
    """Rules compiled to flat checks (one per operand order), and looked up by the shape of
    a node: its op, each operand's op (a constant stands for itself) and whether its two
    operands are one node. Each node then meets only the few rules that can fit."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules: list[tuple[Pattern, Callable[..., Any]]] = [
            (flat, rewrite) for p, rewrite in rules for flat in _orderings(_compile(p))
        ]

    def lookup(self) -> Callable[[Node], list[Compiled]]:
        """A candidates function with its own cache (it holds constants: one per run)."""
        by_shape: dict[tuple[Any, ...], list[Compiled]] = {}

        def candidates(node: Node) -> list[Compiled]:
            args = node.args
            shape = (node.op, *[a if a.op == "const" else a.op for a in args])
            if len(args) == 2 and args[0] is args[1]:
                shape += (True,)
            found = by_shape.get(shape)
            if found is None:
                found = [(_steps(p), rw) for p, rw in self.rules if _fits(p, shape)]
                by_shape[shape] = found
            return found

        return candidates


def _fits(pattern: Pattern, shape: tuple[Any, ...]) -> bool:
    """Whether a node of this shape can match the (flat) pattern."""
    subs = pattern[1:]
    if pattern[0] != shape[0] or len(subs) + 1 > len(shape):
        return False
    for sub, key in zip(subs, shape[1:], strict=False):
        if isinstance(sub, tuple):
            if sub[0] != key:
                return False
        elif isinstance(sub, Node):
            if sub is not key:
                return False
        elif sub[0] == "c" and not isinstance(key, Node):
            return False
    same = len(subs) == 2 and isinstance(subs[0], str) and subs[0] == subs[1]
    return not same or shape[-1] is True


def _apply(rules: list[Compiled], node: Node, uses: dict[int, int], present: dict) -> Any:
    """The first rule's rewrite of ``node`` that does not grow the DAG, or None. A rewrite
    frees the root and every matched operation only it used; it may add as many."""
    for steps, rewrite in rules:
        found = _match(steps, node)
        if found is None:
            continue
        env, inner = found
        result = rewrite(**{k: (v.value if k[0] == "c" else v) for k, v in env.items()})
        if result is None:
            continue
        freed = 1 + sum(1 for n in inner[1:] if uses.get(id(n)) == 1)
        if _new_operations(result, present) <= freed:
            return result
    return None


_RULES = {True: RuleSet(EXACT + FINITE), False: RuleSet(EXACT)}


def _use_counts(order: list[Node], outputs: list[Any]) -> dict[int, int]:
    """How many operand slots (and outputs) refer to each node."""
    uses = dict.fromkeys(map(id, order), 0)
    for node in order:
        for a in node.args:
            uses[id(a)] += 1
    for o in outputs:
        if isinstance(o, Node):
            uses[id(o)] += 1
    return uses


def _rewrite_pass(outputs: list[Any], candidates: Callable[[Node], list[Compiled]]) -> list[Any]:
    """Rebuild every node over its rewritten operands, then rewrite it until no rule fits."""
    order = topo_order(o for o in outputs if isinstance(o, Node))
    uses = _use_counts(order, outputs)
    present: dict[int, Any] = dict(zip(uses, order, strict=True))  # old graph, then new
    new: dict[int, Any] = {}
    for node in order:
        if not node.args:
            new[id(node)] = node
            continue
        args = [new[id(a)] for a in node.args]
        result: Any = node
        for a, b in zip(args, node.args, strict=True):
            if a is not b:
                result = BUILD[node.op](*args)
                break
        for _ in range(16):  # rules shrink or canonicalize; the bound is a safety net
            if result.__class__ is not Node or not result.args:
                break
            fitting = candidates(result)
            rewritten = _apply(fitting, result, uses, present) if fitting else None
            if rewritten is None:
                break
            result = rewritten if isinstance(rewritten, (Node, bool)) else const(rewritten)
        new[id(node)] = result
        present[id(result)] = result
    return [new[id(o)] if isinstance(o, Node) else o for o in outputs]


def simplify(target: Graph | Node, *, assume_finite: bool = True, max_passes: int = 64) -> Any:
    """Rewrite to a fixpoint (see the module docstring for the two rule tables); returns the
    same kind it was given, a Graph or a Node."""
    graph = target if isinstance(target, Graph) else Graph(sorted(variables([target])), [target])
    candidates = _RULES[bool(assume_finite)].lookup()
    outputs: list[Any] = list(graph.outputs)
    with building():
        for _ in range(max_passes):
            rewritten = _rewrite_pass(outputs, candidates)
            if all(a is b for a, b in zip(rewritten, outputs, strict=True)):
                break
            outputs = rewritten
    nodes = [o if isinstance(o, Node) else const(float(o)) for o in outputs]
    return Graph(graph.inputs, nodes) if isinstance(target, Graph) else nodes[0]
