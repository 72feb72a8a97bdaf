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
  they change a result by rounding only (or make it more accurate: ``log(exp x) → x``).

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
from .loop import rebuild

Pattern = Any  # tuple (op, *patterns) | str (a binding) | float (that constant)
Rule = tuple[Pattern, Callable[..., Any]]


def _int_power(c: float, x: Node) -> Node | None:
    """x**c as products when c is a small integer (the graph's pow already does this)."""
    return G.pow(x, c) if c == int(c) and abs(c) <= 64 else None


def _exact_scale(c1: float, c2: float, x: Node) -> Node | None:
    """c1·(c2·x) as (c1·c2)·x where that is the same float for every x: c2 a power of two
    with |c2| ≥ 1 (so c2·x is exact or overflows), |c1| ≥ 1 (so c1·c2·x overflows whenever
    c2·x does) and c1·c2 finite. ``x + x → 2x`` makes such products; 0.5·(2x) stays."""
    m, _ = math.frexp(c2)
    if abs(m) != 0.5 or abs(c2) < 1.0 or not abs(c1) >= 1.0 or not math.isfinite(c1 * c2):
        return None
    return mul(x, c1 * c2)


EXACT: list[Rule] = [
    (("mul", "x", 1.0), lambda x: x),
    (("add", "x", -0.0), lambda x: x),
    (("mul", "x", -1.0), lambda x: neg(x)),
    (("neg", ("neg", "x")), lambda x: x),
    (("add", "x", "x"), lambda x: mul(x, 2.0)),  # x+x and 2x round alike
    (("mul", "c1", ("mul", "c2", "x")), _exact_scale),
    (("neg", ("mul", "c", "x")), lambda c, x: mul(x, -c)),
    (("mul", "c", ("neg", "x")), lambda c, x: mul(x, -c)),
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
    (("log", ("exp", "x")), lambda x: x),
    (("exp", ("log", "x")), lambda x: x),
    (("mul", ("sqrt", "x"), ("sqrt", "x")), lambda x: x),
    # integer powers as products: 2^(n·log2 x) = x·x·…
    (("exp2", ("mul", "c", ("log2", "x"))), _int_power),
    (("exp", ("mul", "c", ("log", "x"))), _int_power),
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
    (("mul", ("exp", "x"), ("exp", "y")), lambda x, y: G.exp(G.add(x, y))),
]

# primitive -> constructor that rebuilds it from (possibly rewritten) operands
BUILD: dict[str, Callable[..., Any]] = G.CONSTRUCTORS


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


def _new_operations(result: Any, present: set[Node]) -> tuple[int, list[Node]]:
    """How many operation nodes under ``result`` are in neither graph yet, and the existing
    nodes those new ones use."""
    count, stack, seen, used = 0, [result], set(), []
    while stack:
        n = stack.pop()
        if n.__class__ is not Node or n in seen:
            continue
        seen.add(n)
        if n in present or not n.args:
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


# ---- the table, compiled ------------------------------------------------------------
# Each op's rules (every operand order) become one Python function of straight-line checks,
# generated from the table when this module loads, the way dataclasses writes __init__:
# ``if a0.op == "neg" and a1 is a0.args[0]: …``. The source is built only from the
# patterns above (never from user text) and is kept in ``RuleSet.source`` to read.

Accept = Callable[[Node, Any, tuple[Node, ...]], bool]
Matcher = Callable[[Node, Accept], Any]


def _uncompiled(pattern: Pattern) -> Pattern:
    """The pattern as the table spells it (constant nodes back to floats)."""
    if isinstance(pattern, Node):
        return pattern.value
    if isinstance(pattern, tuple):
        return (pattern[0], *map(_uncompiled, pattern[1:]))
    return pattern


def _operand(path: tuple[int, ...]) -> str:
    """Python expression for the node at ``path`` below the root (whose operands are a0…)."""
    return f"a{path[0]}" + "".join(f".args[{i}]" for i in path[1:])


def _op_of(path: tuple[int, ...]) -> str:
    """Python expression for the op of the node at ``path`` (an operand's is a local)."""
    return f"o{path[0]}" if len(path) == 1 else f"{_operand(path)}.op"


def _rule_source(pattern: Pattern, rewrite: str, literal: Callable[[Node], str]) -> list[str]:
    """One flat pattern as an ``if`` block: checks in breadth-first order (a node's op
    before its operands), then the rewrite, whose result ``accept`` may still refuse."""
    checks: list[str] = []
    bound: dict[str, str] = {}
    inner: list[str] = []
    queue: list[tuple[tuple[int, ...], Pattern]] = [((i,), p) for i, p in enumerate(pattern[1:])]
    for path, p in queue:
        here = _operand(path)
        if isinstance(p, tuple):
            checks.append(f"{_op_of(path)} == {p[0]!r}")
            inner.append(here)
            queue.extend(((*path, i), sub) for i, sub in enumerate(p[1:]))
        elif isinstance(p, Node):
            checks.append(f"{here} is {literal(p)}")
        elif p in bound:
            checks.append(f"{here} is {bound[p]}")
        else:
            if p[0] == "c":
                checks.append(f"{_op_of(path)} == 'const'")
            bound[p] = here
    args = ", ".join(f"{k}={v}.value" if k[0] == "c" else f"{k}={v}" for k, v in bound.items())
    found = f"({', '.join(inner)},)" if inner else "()"
    return [
        f"    if {' and '.join(checks) or 'True'}:  # {_uncompiled(pattern)!r}",
        f"        r = {rewrite}({args})",
        f"        if r is not None and accept(node, r, {found}):",
        "            return r",
    ]


class RuleSet:
    """A rule table compiled to one matcher per op: ``matchers[op](node, accept)`` returns
    the first rewrite of ``node`` that ``accept`` takes, or None."""

    def __init__(self, rules: list[Rule]) -> None:
        namespace: dict[str, Any] = {}
        literals: dict[Node, str] = {}

        def literal(n: Node) -> str:
            name = literals.setdefault(n, f"K{len(literals)}")
            namespace[name] = n
            return name

        by_op: dict[str, list[str]] = {}
        for i, (pattern, rewrite) in enumerate(rules):
            namespace[f"R{i}"] = rewrite
            for flat in _orderings(_compile(pattern)):
                by_op.setdefault(flat[0], []).extend(_rule_source(flat, f"R{i}", literal))
        lines: list[str] = []
        for op, body in by_op.items():
            arity = range(G.PRIMITIVES[op][0])
            operands = ", ".join(f"a{i}" for i in arity) + ("," if len(arity) == 1 else "")
            op_names = ", ".join(f"o{i}" for i in arity)
            op_values = ", ".join(f"a{i}.op" for i in arity)
            lines += [f"def match_{op}(node, accept):", f"    {operands} = node.args"]
            lines += [f"    {op_names} = {op_values}", *body, "    return None", ""]
        self.source = "\n".join(lines)
        exec(compile(self.source, f"<tang.simplify rules: {len(rules)}>", "exec"), namespace)
        self.matchers: dict[str, Matcher] = {op: namespace[f"match_{op}"] for op in by_op}


_RULES = {True: RuleSet(EXACT + FINITE), False: RuleSet(EXACT)}


def _use_counts(order: list[Node], outputs: list[Any]) -> dict[Node, int]:
    """How many operand slots (and outputs) refer to each node."""
    uses = dict.fromkeys(order, 0)
    for node in order:
        for a in node.args:
            uses[a] += 1
    for o in outputs:
        if o.__class__ is Node:
            uses[o] += 1
    return uses


class _Sweep:
    """One sweep over the graph, children first: each node is rebuilt over its operands'
    forms and rewritten until no rule fits; the nodes a rewrite creates are settled the
    same way before their parent (an explicit stack, never recursion)."""

    def __init__(self, outputs: list[Any], rules: RuleSet, normal: set[Node]) -> None:
        self.outputs = outputs
        self.order = topo_order(o for o in outputs if o.__class__ is Node)
        self.present = set(self.order)  # nodes of the graph being built
        self._uses: dict[Node, int] | None = None
        self.extra_uses: dict[Node, int] = {}
        self.matchers = rules.matchers
        self.normal = normal  # nodes no rule fits (shared by the sweeps of one simplify)
        self.refused: list[Node] = []  # nodes whose rewrite was refused (the DAG would grow)
        self.just_refused = False

    @property
    def uses(self) -> dict[Node, int]:
        """Use counts in the graph as the sweep began (counted when first needed)."""
        if self._uses is None:
            self._uses = _use_counts(self.order, self.outputs)
        return self._uses

    def run(self) -> list[Any]:
        form: dict[Node, Any] = {}  # node (old or new) -> its rewritten form
        normal, matchers, accept = self.normal, self.matchers, self.accept
        for node in self.order:
            if node in form:
                continue
            if not node.args:
                form[node] = node
                continue
            for a in node.args:
                if form[a] is not a:
                    form[node] = self.settle(node, form)
                    break
            else:  # its operands stayed: often nothing to do
                match = matchers.get(node.op) if node not in normal else None
                self.just_refused = False
                rewritten = match(node, accept) if match is not None else None
                if rewritten is None:
                    if not self.just_refused:
                        normal.add(node)
                    form[node] = node
                else:
                    form[node] = self.settle(node, form, rewritten)
        return [form[o] if o.__class__ is Node else o for o in self.outputs]

    def accept(self, node: Node, result: Any, inner: tuple[Node, ...]) -> bool:
        """Whether rewriting ``node`` (matched down to the operations ``inner``) to
        ``result`` keeps the DAG from growing: it frees the root and each matched operation
        only it used, and may add as many. One refused is worth another sweep (use counts
        change)."""
        used = self._grows(result, inner)
        if used is None:
            self.refused.append(node)
            self.just_refused = True
            return False
        extra = self.extra_uses
        for n in used:  # new references this sweep made: their nodes are not freed
            extra[n] = extra.get(n, 0) + 1
        return True

    def _grows(self, result: Any, inner: tuple[Node, ...]) -> list[Node] | None:
        """None when the rewrite would add more operations than it frees; else the
        existing nodes its new operations use."""
        freed = 1
        if inner:
            uses, extra = self.uses, self.extra_uses
            freed += sum(1 for n in inner if uses.get(n, 0) + extra.get(n, 0) == 1)
        added, used = _new_operations(result, self.present)
        return None if added > freed else used

    def would_rewrite(self, nodes: list[Node]) -> bool:
        """Whether a sweep would now take a rewrite of any of ``nodes`` (ones refused in
        the sweep before, whose use counts may have changed since). Nothing is recorded."""
        matchers, present = self.matchers, self.present
        taken = [False]

        def probe(node: Node, result: Any, inner: tuple[Node, ...]) -> bool:
            taken[0] = taken[0] or self._grows(result, inner) is not None
            return False

        for node in nodes:
            if node in present and not taken[0]:
                matchers[node.op](node, probe)
        return taken[0]

    def settle(self, root: Node, form: dict[Node, Any], rewritten: Any = None) -> Any:
        """The rewritten form of ``root``, whose operands have their forms in ``form``;
        ``rewritten`` is a rewrite of ``root`` already found."""
        normal, present, matchers, accept = self.normal, self.present, self.matchers, self.accept
        stack: list[tuple[Node, Any]] = []
        if rewritten is None:
            stack.append((root, True))
        else:
            self._follow(root, rewritten, form, stack)
        budget = 256  # rewrites for one node: rules shrink or canonicalize, this is a net
        while stack:
            node, state = stack.pop()
            if state is None:  # a node a rewrite built: operands first
                if node in form:
                    continue
                if not node.args:
                    form[node] = node
                    continue
                stack.append((node, True))
                stack.extend((a, None) for a in node.args if a not in form)
                continue
            if state is not True:  # node was rewritten to state, which is settled now
                form[node] = form[state]
                continue
            current: Any = node
            for a in node.args:
                if form[a] is not a:
                    operands = [form[b] for b in node.args]
                    build = BUILD.get(node.op)
                    current = build(*operands) if build else rebuild(node, operands)
                    break
            if current.__class__ is not Node or not current.args:
                form[node] = current
                continue
            if current is not node and current in form:
                form[node] = form[current]
                continue
            self.just_refused = False
            match = matchers.get(current.op) if budget > 0 and current not in normal else None
            rewritten = match(current, accept) if match is not None else None
            if rewritten is None:
                if not self.just_refused:  # else the next sweep tries it again
                    normal.add(current)
                present.add(current)
                form[node] = form[current] = current
                continue
            budget -= 1
            self._follow(node, rewritten, form, stack)
        return form[root]

    def _follow(self, node: Node, rewritten: Any, form: dict[Node, Any], stack: list) -> None:
        """Queue ``rewritten`` (a rewrite of ``node``) to be settled; node then takes its
        form. A number or a bool is final at once."""
        if not isinstance(rewritten, (Node, bool)):
            rewritten = const(rewritten)
        if rewritten.__class__ is not Node or not rewritten.args:
            form[node] = rewritten
            return
        self.present.add(rewritten)
        stack.append((node, rewritten))  # then node takes the rewritten form
        stack.append((rewritten, None))  # which is settled first, operands first


def _operations(order: list[Node]) -> int:
    """How many operation nodes (not constants or variables) a topological order holds."""
    return sum(1 for n in order if n.args)


def simplify(target: Graph | Node, *, assume_finite: bool = True, max_passes: int = 16) -> Any:
    """Rewrite to a fixpoint (see the module docstring for the two rule tables); returns the
    same kind it was given, a Graph or a Node."""
    graph = target if isinstance(target, Graph) else Graph(sorted(variables([target])), [target])
    rules = _RULES[bool(assume_finite)]
    outputs: list[Any] = list(graph.outputs)
    normal: set[Node] = set()
    # Each rewrite is costed locally; sharing across rewrites can still grow the DAG now and
    # then, so the smallest outputs seen are kept: simplify never adds operations.
    best, best_ops = outputs, math.inf
    with building():
        sweep = _Sweep(outputs, rules, normal)
        for _ in range(max_passes):
            ops = _operations(sweep.order)
            if ops <= best_ops:
                best, best_ops = outputs, ops
            rewritten = sweep.run()
            if all(a is b for a, b in zip(rewritten, outputs, strict=True)):
                break  # a fixpoint: sweep.order is still the order of outputs
            outputs, refused = rewritten, sweep.refused
            sweep = _Sweep(outputs, rules, normal)
            # A sweep leaves every node it saw settled, but for refused rewrites: sweep
            # again only if use counts have changed enough for one of them to be taken.
            if not refused or not sweep.would_rewrite(refused):
                break
        if _operations(sweep.order) > best_ops:
            outputs = best
    nodes = [o if isinstance(o, Node) else const(float(o)) for o in outputs]
    if not isinstance(target, Graph):
        return nodes[0]
    walked = sweep.outputs is outputs and all(o.__class__ is Node for o in outputs)
    return Graph(graph.inputs, nodes, nodes=sweep.order if walked else None, name=graph.name)
