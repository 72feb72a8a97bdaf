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

import math
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


def _new_operations(result: Any, present: dict[int, Any]) -> tuple[int, list[Node]]:
    """How many operation nodes under ``result`` are in neither graph yet, and the existing
    nodes those new ones use."""
    count, stack, seen, used = 0, [result], set(), []
    while stack:
        n = stack.pop()
        if not isinstance(n, Node) or id(n) in seen:
            continue
        seen.add(id(n))
        if id(n) in present or not n.args:
            used.append(n)
            continue
        count += 1
        stack.extend(n.args)
    return count, used


def _compile(pattern: Pattern) -> Pattern:
    """The pattern with its float literals turned into (interned) constant nodes."""
    if isinstance(pattern, float):
        return const(pattern)
    if isinstance(pattern, tuple):
        return (pattern[0], *map(_compile, pattern[1:]))
    return pattern


Compiled = tuple[list[Step], Callable[..., Any]]


class RuleSet:
    """Rules compiled to flat checks (one per operand order), looked up by the shape of a
    node: its op, its operands' and their operands' ops (a constant that some pattern names
    stands for itself) and whether its two operands are one node. A node then meets only
    the rules that can fit it."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules: list[tuple[Pattern, Callable[..., Any]]] = [
            (flat, rewrite) for p, rewrite in rules for flat in _orderings(_compile(p))
        ]
        self.literals = {id(n): n for p, _ in self.rules for n in _constants(p)}
        self.by_shape: dict[tuple[Any, ...], list[Compiled]] = {}

    def candidates(self, node: Node) -> list[Compiled]:
        args = node.args
        lit = self.literals
        shape = (
            node.op,
            *[
                (a if id(a) in lit else a.op, *[c if id(c) in lit else c.op for c in a.args])
                for a in args
            ],
        )
        if len(args) == 2 and args[0] is args[1]:
            shape += (True,)
        found = self.by_shape.get(shape)
        if found is None:
            found = [(_steps(p), rw) for p, rw in self.rules if _fits(p, shape)]
            self.by_shape[shape] = found
        return found


def _constants(pattern: Pattern) -> list[Node]:
    """The constant nodes a (compiled) pattern names."""
    if isinstance(pattern, Node):
        return [pattern]
    if isinstance(pattern, tuple):
        return [n for sub in pattern[1:] for n in _constants(sub)]
    return []


def _admits(pattern: Pattern, key: Any) -> bool:
    """Whether a node whose shape key is ``key`` (its op, or the literal constant itself)
    can match ``pattern``."""
    op = key.op if isinstance(key, Node) else key
    if isinstance(pattern, tuple):
        return pattern[0] == op
    if isinstance(pattern, Node):
        return pattern is key
    return pattern[0] != "c" or op == "const"


def _fits(pattern: Pattern, shape: tuple[Any, ...]) -> bool:
    """Whether a node of this shape (two levels deep) can match the (flat) pattern."""
    subs = pattern[1:]
    if pattern[0] != shape[0] or len(subs) + 1 > len(shape):
        return False
    for sub, (key, *child_keys) in zip(subs, shape[1:], strict=False):
        if not _admits(sub, key):
            return False
        if isinstance(sub, tuple):
            if len(sub) - 1 != len(child_keys):
                return False
            if not all(_admits(p, k) for p, k in zip(sub[1:], child_keys, strict=True)):
                return False
    same = len(subs) == 2 and isinstance(subs[0], str) and subs[0] == subs[1]
    return not same or shape[-1] is True


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


class _Pass:
    """One sweep over the graph, children first: each node is rebuilt over its rewritten
    operands and rewritten until no rule fits; the nodes a rewrite creates are rewritten
    the same way before their parent (an explicit stack, never recursion)."""

    def __init__(self, outputs: list[Any], rules: RuleSet, normal: dict[int, Node]) -> None:
        self.outputs = outputs
        self.order = topo_order(o for o in outputs if isinstance(o, Node))
        self.present: dict[int, Any] = dict(zip(map(id, self.order), self.order, strict=True))
        self._uses: dict[int, int] | None = None
        self.extra_uses: dict[int, int] = {}
        self.rules = rules
        self.normal = normal  # nodes no rule fits (kept alive, so their ids stay theirs)
        self.refused = self.just_refused = False

    @property
    def uses(self) -> dict[int, int]:
        """Use counts in the graph as the sweep began (counted when first needed)."""
        if self._uses is None:
            self._uses = _use_counts(self.order, self.outputs)
        return self._uses

    def run(self) -> list[Any]:
        new: dict[int, Any] = {}
        normal, candidates = self.normal, self.rules.candidates
        for node in self.order:
            if id(node) in new:
                continue
            if not node.args:
                new[id(node)] = node
                continue
            for a in node.args:
                if new[id(a)] is not a:
                    break
            else:  # its operands stayed: often nothing to do
                if id(node) in normal:
                    new[id(node)] = node
                    continue
                if not candidates(node):
                    normal[id(node)] = node
                    new[id(node)] = node
                    continue
            new[id(node)] = self.normalize(node, new)
        return [new[id(o)] if isinstance(o, Node) else o for o in self.outputs]

    def apply(self, node: Node) -> Any:
        """The first rule's rewrite of ``node`` that does not grow the DAG, or None. A
        rewrite frees the root and every matched operation only it used, and may add as
        many; one refused for that is worth another pass (use counts change)."""
        self.just_refused = False
        for steps, rewrite in self.rules.candidates(node):
            found = _match(steps, node)
            if found is None:
                continue
            env, inner = found
            result = rewrite(**{k: (v.value if k[0] == "c" else v) for k, v in env.items()})
            if result is None:
                continue
            freed = 1
            if len(inner) > 1:
                uses, extra = self.uses, self.extra_uses
                freed += sum(1 for n in inner[1:] if uses.get(id(n), 0) + extra.get(id(n), 0) == 1)
            added, used = _new_operations(result, self.present)
            if added <= freed:
                for n in used:  # new references this sweep made: their nodes are not freed
                    self.extra_uses[id(n)] = self.extra_uses.get(id(n), 0) + 1
                return result
            self.refused = self.just_refused = True
        return None

    def normalize(self, root: Node, done: dict[int, Any]) -> Any:
        """The rewritten form of ``root`` (whose operands are done), given ``done``: old or
        new node id → rewritten form."""
        normal, present = self.normal, self.present
        stack: list[tuple[Node, Any]] = [(root, True)]
        budget = 256  # rewrites for one node: rules shrink or canonicalize, this is a net
        while stack:
            node, state = stack.pop()
            if id(node) in done and state is None:
                continue
            if not node.args:
                done[id(node)] = node
                continue
            if isinstance(state, Node):  # node was rewritten to state: take its form
                done[id(node)] = done[id(state)]
                continue
            if state is None:  # operands first
                stack.append((node, True))
                stack.extend((a, None) for a in node.args if id(a) not in done)
                continue
            args = [done.get(id(a), a) for a in node.args]
            current: Any = node
            for a, b in zip(args, node.args, strict=True):
                if a is not b:
                    current = BUILD[node.op](*args)
                    break
            rewritten = None
            if budget > 0 and current.__class__ is Node and current.args:
                rewritten = None if id(current) in normal else self.apply(current)
            if rewritten is None:
                if current.__class__ is Node:
                    if not self.just_refused:  # else the next sweep tries it again
                        normal[id(current)] = current
                    present[id(current)] = current
                done[id(node)] = current
                continue
            budget -= 1
            if not isinstance(rewritten, (Node, bool)):
                rewritten = const(rewritten)
            if isinstance(rewritten, bool) or not rewritten.args:
                done[id(node)] = rewritten
                continue
            present[id(rewritten)] = rewritten
            stack.append((node, rewritten))  # then node takes the rewritten form
            stack.append((rewritten, None))  # which is rewritten first, operands first
        return done[id(root)]


def _operations(order: list[Node]) -> int:
    """How many operation nodes (not constants or variables) a topological order holds."""
    return sum(1 for n in order if n.args)


def simplify(target: Graph | Node, *, assume_finite: bool = True, max_passes: int = 16) -> Any:
    """Rewrite to a fixpoint (see the module docstring for the two rule tables); returns the
    same kind it was given, a Graph or a Node."""
    graph = target if isinstance(target, Graph) else Graph(sorted(variables([target])), [target])
    rules = _RULES[bool(assume_finite)]
    outputs: list[Any] = list(graph.outputs)
    normal: dict[int, Node] = {}
    # Each rewrite is costed locally; sharing across rewrites can still grow the DAG now and
    # then, so the smallest outputs seen are kept: simplify never adds operations.
    best, best_ops = outputs, math.inf
    with building():
        for _ in range(max_passes):
            sweep = _Pass(outputs, rules, normal)
            ops = _operations(sweep.order)
            if ops <= best_ops:
                best, best_ops = outputs, ops
            rewritten = sweep.run()
            unchanged = all(a is b for a, b in zip(rewritten, outputs, strict=True))
            outputs = rewritten
            if unchanged or not sweep.refused:  # a sweep leaves every node it saw settled
                break
        if _operations(topo_order(o for o in outputs if isinstance(o, Node))) > best_ops:
            outputs = best
    nodes = [o if isinstance(o, Node) else const(float(o)) for o in outputs]
    return Graph(graph.inputs, nodes) if isinstance(target, Graph) else nodes[0]
