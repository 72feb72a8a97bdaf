"""Loops in the graph: ``fori_loop(n, body, init)`` runs ``state = body(i, state)`` for
i = 0 … n-1, written once over any number type.

On floats and Duals it simply runs. Traced (the state or the count holds graph nodes), the
body is called **once** on parameter nodes and the graph gains one ``loop`` node whose body
is that sub-graph, so a 1,600-step flight is O(body) nodes, not O(steps):

- ``loop``: operands ``(count, *init, *captures)``; its ``value`` is the ``Body``. The body
  is closed: it reads only its own parameters (the step number ``i``, the carried state
  ``s0 …`` and the captured outer values ``c0 …``), so passes may rebuild the loop over new
  operands and every sub-graph that does not change from step to step is computed once,
  before the loop (it is a capture).
- ``loop_out``: state ``k`` after the last step (operand: the loop; ``value``: k).

A state of Duals whose parts are nodes carries its tangents inside the loop (forward mode,
any number of directions). Reverse mode does not pass a loop: ``tang.expr.grad`` raises
``LoopGradientError`` rather than unrolling it. The count is a whole number, or a traced
number: rounded down, NaN and negatives run no step, and it is capped at ``MAX_STEPS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .. import ieee
from . import graph as G
from .graph import Node

MAX_STEPS = 1 << 24  # a traced count's cap: every step number is exact in f32
_depth = [0]  # loops being traced around the current body (their parameters stay apart)


class LoopGradientError(ValueError):
    """Reverse mode met a loop node."""


class Body:
    """A loop's body: its parameters ``(i, s0 …, c0 …)`` (variable nodes named
    ``%{depth}.i``, ``%{depth}.s{k}``, ``%{depth}.c{k}``) and the next state, one node per
    state. Compared by identity; a loop node is interned by its outputs."""

    __slots__ = ("_plan", "depth", "nstate", "outputs", "params")

    def __init__(
        self, depth: int, params: tuple[Node, ...], nstate: int, outputs: tuple[Node, ...]
    ) -> None:
        self.depth, self.params, self.nstate, self.outputs = depth, params, nstate, outputs
        self._plan: tuple | None = None

    @property
    def index(self) -> Node:
        return self.params[0]

    @property
    def states(self) -> tuple[Node, ...]:
        return self.params[1 : 1 + self.nstate]

    @property
    def captures(self) -> tuple[Node, ...]:
        return self.params[1 + self.nstate :]

    def run(self, node: Node, args: Sequence[float]) -> list[float]:
        """The loop ``node``'s states on floats (the evaluator's path: ``run_floats``)."""
        return run_floats(node, args)

    def replay(self, node: Node, args: Sequence[Any]) -> list[Any]:
        """The loop ``node``'s states on any number type (``replay_loop``)."""
        return replay_loop(node, args)

    def nodes(self) -> list[Node]:
        """The body's nodes, children first (its parameters included)."""
        return G.topo_order(self.outputs)

    def __repr__(self) -> str:
        return f"Body(depth={self.depth}, states={self.nstate}, captures={len(self.captures)})"


def param(depth: int, kind: str, k: int | None = None) -> Node:
    """The parameter node of a body at ``depth``: ``i``, ``s`` (state k) or ``c`` (capture k)."""
    return G.var(f"%{depth}.{kind}" if k is None else f"%{depth}.{kind}{k}")


# ---------------------------------------------------------------------------------------
# the state's structure: numbers, tuples and lists of them, and number types with parts
# (carriers: ``tang.Dual`` and ``tang.Tangents`` register themselves, so this module needs
# nothing above the expression layer)


class Carrier:
    """How a number type with parts opens and closes: ``parts(x) -> (aux, children)``,
    ``build(aux, children) -> x``, and ``constant(aux, y)``: the children a plain value
    ``y`` has as a constant of that type (a Dual's: ``(y, 0.0)``), or None when it cannot be
    one (a Dual of a higher level)."""

    __slots__ = ("build", "constant", "parts")

    def __init__(self, parts: Callable, build: Callable, constant: Callable) -> None:
        self.parts, self.build, self.constant = parts, build, constant


CARRIERS: dict[type, Carrier] = {}


def register_carrier(cls: type, parts: Callable, build: Callable, constant: Callable) -> None:
    """Let ``fori_loop`` carry instances of ``cls`` (and its subclasses) as state."""
    CARRIERS[cls] = Carrier(parts, build, constant)


def _carrier(x: Any) -> Carrier | None:
    for cls, carrier in CARRIERS.items():
        if isinstance(x, cls):
            return carrier
    return None


def _flatten(x: Any, leaves: list[Any]) -> Any:
    """The structure of ``x``, its numbers appended to ``leaves``: None for a number,
    ``(carrier, aux, (child structures))`` or ``(tuple|list, (item structures))``."""
    carrier = _carrier(x)
    if carrier is not None:
        aux, children = carrier.parts(x)
        return (carrier, aux, tuple(_flatten(c, leaves) for c in children))
    if isinstance(x, (tuple, list)):
        return (type(x), tuple(_flatten(t, leaves) for t in x))
    if isinstance(x, bool) or not isinstance(x, (int, float, Node)):
        raise TypeError(
            "a fori_loop state holds numbers, Duals, or tuples and lists of them; "
            f"got {type(x).__name__}"
        )
    if isinstance(x, Node) and x.is_bool:
        raise TypeError("a comparison cannot be loop state; carry tang.where(cond, 1.0, 0.0)")
    leaves.append(x)
    return None


def _flatten_like(x: Any, spec: Any, leaves: list[Any], where: str) -> None:
    """Append the numbers of ``x`` (the body's result) laid out as ``spec`` (the initial
    state's structure): a plain number where a Dual was is its value with zero tangents."""
    if spec is None:
        if _carrier(x) is not None or isinstance(x, (tuple, list)):
            raise TypeError(
                f"the loop body returned {type(x).__name__} for {where}, where the initial "
                "state has a plain number: start the loop with the same kind of value"
            )
        _flatten(x, leaves)
        return
    if isinstance(spec[0], Carrier):
        carrier, aux, specs = spec
        if _carrier(x) is carrier and carrier.parts(x)[0] == aux:
            children = carrier.parts(x)[1]
        else:
            children = carrier.constant(aux, x)
            if children is None:
                raise TypeError(
                    f"the loop body returned {type(x).__name__} for {where}, which does not "
                    "fit the initial state's kind"
                )
        for c, cs in zip(children, specs, strict=True):
            _flatten_like(c, cs, leaves, where)
        return
    if not isinstance(x, (tuple, list)) or len(x) != len(spec[1]):
        raise TypeError(
            f"the loop body must return the state's structure for {where}: "
            f"{len(spec[1])} items, got {type(x).__name__}"
        )
    for k, (t, s) in enumerate(zip(x, spec[1])):
        _flatten_like(t, s, leaves, f"{where}[{k}]")


def _unflatten(spec: Any, leaves: Any) -> Any:
    """The structure ``spec`` rebuilt over the numbers of the iterator ``leaves``."""
    if spec is None:
        return next(leaves)
    if isinstance(spec[0], Carrier):
        carrier, aux, specs = spec
        return carrier.build(aux, [_unflatten(s, leaves) for s in specs])
    return spec[0](_unflatten(s, leaves) for s in spec[1])


# ---------------------------------------------------------------------------------------
# the loop


def fori_loop(n: Any, body: Callable[[Any, Any], Any], init: Any) -> Any:
    """``state = body(i, state)`` for i = 0 … n-1; returns the final state (``init``'s
    structure: a number, a Dual, or tuples/lists of them).

    On numbers and Duals it runs as a Python loop (``i`` an int). When the state or ``n``
    holds graph nodes, the body is traced once and the result is read from one loop node
    (``i`` a node); the graph then stays O(body) however many steps it runs, and lowers to a
    real loop in every backend. Reverse mode (``tang.grad`` on the graph) does not pass
    the loop and says so; forward mode does: carry Duals in the state.
    """
    if n.__class__ is not Node and not _reaches_node(init):  # plain numbers, any kind
        steps = _whole(n)
        state = init
        for i in range(steps):
            state = body(i, state)
            if i == 0 and steps > 1 and _reaches_node(state):  # the body closes over
                return _traced(G.const(steps), body, init)  # traced values: trace it once
        return state
    count = _count(n) if n.__class__ is Node else G.const(_whole(n))
    return _traced(count, body, init)


def _reaches_node(x: Any) -> bool:
    """Whether a graph node sits anywhere in ``x`` (numbers, carriers, tuples)."""
    stack = [x]
    while stack:
        x = stack.pop()
        if x.__class__ is Node:
            return True
        carrier = _carrier(x)
        if carrier is not None:
            stack.extend(carrier.parts(x)[1])
        elif isinstance(x, (tuple, list)):
            stack.extend(x)
    return False


def _widened(init: Any, result: Any) -> Any:
    """``init`` with each value the body's result cannot be laid out as (a number that
    became a Dual, because the body closes over a Dual) made a constant of the result's
    kind; None when nothing needed widening."""
    carrier = _carrier(result)
    if carrier is not None:
        aux, parts = carrier.parts(result)
        mine = _carrier(init)
        if mine is carrier and mine.parts(init)[0] == aux:
            own_aux, own = mine.parts(init)
            new = [_widened(a, b) for a, b in zip(own, parts)]
            if all(n is None for n in new):
                return None
            return carrier.build(own_aux, [a if n is None else n for a, n in zip(own, new)])
        if mine is not None and mine.constant(mine.parts(init)[0], result) is not None:
            return None  # the result is a constant of init's kind
        children = carrier.constant(aux, init)
        if children is None:
            return None
        deeper = [_widened(c, r) for c, r in zip(children, parts)]  # zeros of the right kind
        return carrier.build(aux, [c if d is None else d for c, d in zip(children, deeper)])
    if isinstance(init, (tuple, list)) and isinstance(result, (tuple, list)):
        if len(init) != len(result):
            return None
        new = [_widened(a, b) for a, b in zip(init, result)]
        if all(n is None for n in new):
            return None
        return type(init)(a if n is None else n for a, n in zip(init, new))
    return None


def _whole(n: Any) -> int:
    """A plain step count as an int (a whole, finite number from 0 up)."""
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        raise TypeError(f"fori_loop's step count must be a whole number, got {type(n).__name__}")
    if n != n or n < 0 or n != math.floor(n) or math.isinf(n):
        raise ValueError(f"fori_loop's step count must be a whole number from 0 up, got {n!r}")
    return int(n)


def _count(n: Node) -> Node:
    """A traced count as the loop runs it: rounded down, NaN and negatives to 0, capped."""
    if n.is_bool:
        raise TypeError("fori_loop's step count is a number, not a comparison")
    if n.op == "const":
        v: float = n.value  # type: ignore[assignment]
        return G.const(min(max(ieee.floor(v), 0.0), MAX_STEPS) if v == v else 0.0)
    capped = G.select(G.lt(n, float(MAX_STEPS)), G.floor(n), float(MAX_STEPS))
    return G.select(G.le(0.0, n), capped, 0.0)


def _traced(count: Node, body: Callable[[Any, Any], Any], start: Any) -> Any:
    """Trace ``body`` once over parameter nodes; the final state read from one loop node.
    A state the body turns from a number into a Dual starts as that Dual (then retraced)."""
    for _ in range(8):  # each retrace widens at least one number: few ever happen
        leaves: list[Any] = []
        spec = _flatten(start, leaves)
        init = [G.as_node(x) for x in leaves]
        depth = _depth[0] + 1
        index = param(depth, "i")
        states = [param(depth, "s", k) for k in range(len(init))]
        _depth[0] = depth
        try:
            with G.building():
                result = body(index, _unflatten(spec, iter(states)))
        finally:
            _depth[0] = depth - 1
        wider = _widened(start, result)
        if wider is None:
            break
        start = wider
    out: list[Any] = []
    _flatten_like(result, spec, out, "the state")
    outputs = [G.as_node(x) for x in out]
    for k, o in enumerate(outputs):
        if o.is_bool:
            raise TypeError(f"state {k} of the loop body is a comparison; carry a number")
    outputs, captured = _close(depth, index, states, outputs)
    node = make_loop(depth, len(init), tuple(outputs), count, init, captured)
    return _unflatten(spec, iter([loop_out(node, k) for k in range(len(init))]))


def _close(
    depth: int, index: Node, states: list[Node], outputs: list[Node]
) -> tuple[list[Node], list[Node]]:
    """The body over its own parameters only: each operand that does not change from step
    to step (and is not a constant) becomes a capture parameter, its value an operand of
    the loop. Returns the rebuilt outputs and the captured outer nodes."""
    order = G.topo_order(outputs)
    moving: set[Node] = {index, *states}
    for node in order:
        if node.args and any(a in moving for a in node.args):
            moving.add(node)
    captured: list[Node] = []
    slot: dict[Node, Node] = {}  # outer node -> its capture parameter

    def operand(a: Node) -> Node:
        if a in moving:
            return new[a]
        if a.op == "const":
            return a
        got = slot.get(a)
        if got is None:
            got = slot[a] = param(depth, "c", len(captured))
            captured.append(a)
        return got

    new: dict[Node, Node] = {index: index, **{s: s for s in states}}
    for node in order:
        if node in moving and node not in new:
            new[node] = rebuild(node, [operand(a) for a in node.args])
    return [operand(o) for o in outputs], captured


def make_loop(
    depth: int,
    nstate: int,
    outputs: tuple[Node, ...],
    count: Node,
    init: Sequence[Node],
    captures: Sequence[Node],
) -> Node:
    """The loop node (interned by its body's outputs and its operands)."""
    args = (count, *init, *captures)
    key = ("loop", nstate, outputs, *args)
    node = G._interned.get(key)
    if node is not None:
        return node
    params = (
        param(depth, "i"),
        *(param(depth, "s", k) for k in range(nstate)),
        *(param(depth, "c", k) for k in range(len(captures))),
    )
    return G._create("loop", args, Body(depth, params, nstate, outputs), None, key)


def loop_out(loop: Node, k: int) -> Node:
    """State ``k`` of ``loop`` after its last step."""
    return G._intern("loop_out", (loop,), k, None, ("loop_out", loop, k))


def rebuild(node: Node, args: Sequence[Node]) -> Node:
    """``node``'s operation over new operands (the same node when they are the same)."""
    if all(a is b for a, b in zip(args, node.args)):
        return node
    if node.op == "loop":
        body: Body = node.value  # type: ignore[assignment]
        n = body.nstate
        return make_loop(body.depth, n, body.outputs, args[0], args[1 : 1 + n], args[1 + n :])
    if node.op == "loop_out":
        return loop_out(args[0], node.value)  # type: ignore[arg-type]
    return G.CONSTRUCTORS[node.op](*args)  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------
# running a loop node: on floats (the evaluator) and on any number type (replay)


def _plan(body: Body) -> tuple[G.Tape, list[int]]:
    """The body as the float interpreter runs it: its tape (tang.expr.graph.Tape) and each
    parameter's slot there (-1: a parameter the body never reads)."""
    if body._plan is None:
        tape = G.Tape(body.outputs)
        slot = {name: k for k, name in tape.leaves}
        body._plan = (tape, [slot.get(p.name, -1) for p in body.params])  # type: ignore[arg-type]
    return body._plan


def run_floats(node: Node, args: Sequence[float]) -> list[float]:
    """Every state of the loop ``node`` after its last step, on floats (the operands'
    values in ``args``), with the evaluator's IEEE kernels."""
    body: Body = node.value  # type: ignore[assignment]
    tape, param_slots = _plan(body)
    n = body.nstate
    count = args[0]
    steps_to_run = int(count) if count == count and count > 0 else 0
    state = [float(v) for v in args[1 : 1 + n]]
    slots = tape.template[:]
    for p, v in zip(param_slots[1 + n :], args[1 + n :]):
        if p >= 0:
            slots[p] = v
    index_slot, state_slots = param_slots[0], param_slots[1 : 1 + n]
    for i in range(steps_to_run):
        if index_slot >= 0:
            slots[index_slot] = float(i)
        for p, v in zip(state_slots, state):
            if p >= 0:
                slots[p] = v
        state = tape.compute(slots)
    return state


def replay_loop(node: Node, args: Sequence[Any]) -> list[Any]:
    """The loop ``node`` on any number type (floats, Duals, nodes): ``fori_loop`` over its
    body replayed at each step. Returns every state after the last step."""
    from .trace import replay

    body: Body = node.value  # type: ignore[assignment]
    n = body.nstate
    names = [p.name for p in body.params]
    graph = G.Graph(names, body.outputs)
    captures = list(args[1 + n :])
    count = args[0]
    if count.__class__ is not Node:
        count = int(count) if count == count and count > 0 else 0

    def step(i: Any, state: Any) -> list[Any]:
        return replay(graph, [i, *state, *captures])

    return list(fori_loop(count, step, list(args[1 : 1 + n])))


def count_nodes(outputs: Sequence[Node] | G.Graph) -> int:
    """Every node a graph holds, its loops' bodies included (each body counted once)."""
    roots = list(outputs.outputs if isinstance(outputs, G.Graph) else outputs)
    seen: set[Node] = set()
    bodies: set[int] = set()
    pending = [roots]
    total = 0
    while pending:
        for node in G.topo_order(pending.pop()):
            if node in seen:
                continue
            seen.add(node)
            total += 1
            if node.op == "loop" and id(node.value) not in bodies:
                bodies.add(id(node.value))
                pending.append(list(node.value.outputs))  # type: ignore[union-attr]
    return total


def loops(outputs: Sequence[Node]) -> list[Node]:
    """The loop nodes ``outputs`` reach (not those inside bodies), in order."""
    return [n for n in G.topo_order(outputs) if n.op == "loop"]


def prune_loops(outputs: Sequence[Node]) -> list[Node]:
    """``outputs`` with each loop cut down to the states they read (and the states those
    depend on) and the captures that remain in use: a printed loop then declares, updates
    and loads nothing that is never read. The same nodes when nothing is dead."""
    order = G.topo_order(outputs)
    if not any(n.op == "loop" for n in order):
        return list(outputs)
    read: dict[Node, set[int]] = {}
    for n in order:
        if n.op == "loop_out":
            read.setdefault(n.args[0], set()).add(n.value)  # type: ignore[arg-type]
    new: dict[Node, Node] = {}
    renumber: dict[Node, dict[int, int]] = {}
    for n in order:
        if not n.args:
            new[n] = n
        elif n.op == "loop":
            loop, renumber[n] = _pruned(n, read.get(n, set()))
            new[n] = rebuild(loop, [new[a] for a in loop.args])
        elif n.op == "loop_out":
            new[n] = loop_out(new[n.args[0]], renumber[n.args[0]][n.value])  # type: ignore[index]
        else:
            new[n] = rebuild(n, [new[a] for a in n.args])
    return [new[o] for o in outputs]


def _pruned(loop: Node, wanted: set[int]) -> tuple[Node, dict[int, int]]:
    """``loop`` with only the states in ``wanted`` and those they read (renumbered: the
    map old → new), its body's own loops pruned too."""
    body: Body = loop.value  # type: ignore[assignment]
    n = body.nstate
    state_of = {p: k for k, p in enumerate(body.states)}
    live, todo = set(wanted), list(wanted)
    while todo:
        for node in G.topo_order([body.outputs[todo.pop()]]):
            k = state_of.get(node)
            if k is not None and k not in live:
                live.add(k)
                todo.append(k)
    keep = sorted(live)
    outputs = prune_loops([body.outputs[k] for k in keep])
    reached = set(G.topo_order(outputs))
    caps = [c for c, p in enumerate(body.captures) if p in reached]
    if len(keep) == n and len(caps) == len(body.captures) and outputs == list(body.outputs):
        return loop, {k: k for k in range(n)}
    rename = {body.states[k]: param(body.depth, "s", j) for j, k in enumerate(keep)}
    rename.update((body.captures[c], param(body.depth, "c", j)) for j, c in enumerate(caps))
    renamed: dict[Node, Node] = {}
    for node in G.topo_order(outputs):
        if not node.args:
            renamed[node] = rename.get(node, node)
        else:
            renamed[node] = rebuild(node, [renamed[a] for a in node.args])
    args = loop.args
    new = make_loop(
        body.depth,
        len(keep),
        tuple(renamed[o] for o in outputs),
        args[0],
        [args[1 + k] for k in keep],
        [args[1 + n + c] for c in caps],
    )
    return new, {k: j for j, k in enumerate(keep)}
