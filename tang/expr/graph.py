"""The expression graph: hash-consed nodes over a small set of primitives.

A node is interned by its structure ``(op, payload, children)``, so building the same
subexpression twice returns the same object: common subexpressions are shared from birth
and ``a is b`` is structural equality. Nodes whose children are all constants fold at
construction. The intern table holds its nodes until ``collect`` frees the dead ones. Every
walk in this module is iterative (no recursion), so graphs of any depth are safe, in
CPython and in Pyodide alike.
"""

from __future__ import annotations

import gc
import itertools
import math
import struct
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import SimpleNamespace
from typing import Union

from .. import ieee
from .ops import BOOL_OPS as BOOL_OPS
from .ops import COMMUTATIVE as COMMUTATIVE
from .ops import COMPOSITES, OPERATIONS, OPS
from .ops import HALF_PI as HALF_PI
from .ops import LN2 as LN2
from .ops import LOG2E as LOG2E

# op name -> (arity, float implementation), from the registry (tang.expr.ops). Comparisons
# return bool; select picks a or b.
PRIMITIVES: dict[str, tuple[int, Callable[..., object] | None]] = {
    name: (p.arity, p.kernel) for name, p in OPS.items()
}
Number = int | float
Operand = Union["Node", int, float]

# structure key -> node. The table holds every node strongly, so a node lives at least until
# ``collect`` (below) finds nothing else refers to it: all of the table once it has doubled
# since the last full collection, or only the nodes made since the last collection, which
# the page's worker does after every request.
_interned: dict[tuple, Node] = {}
_COLLECT_MIN = 1 << 16
_collect_at = [_COLLECT_MIN]  # the table's size that starts a full collection
_survivors = [0]  # the table's size after the last collection: later entries are young
_serials = itertools.count()
# totals over the process, for the benchmarks and the page's diagnostics
collect_stats: dict[str, float] = {"runs": 0, "freed": 0, "seconds": 0.0}


def collect(*, young: bool = False) -> int:
    """Free the nodes nothing outside the intern table refers to; returns how many. With
    ``young``, only among the nodes made since the last collection (cheap after one request;
    older nodes that died wait for a full collection).

    Newest first: a node is created after its operands, so when a dead node goes, the
    operands it held are met later in the same pass, already released by it, and go too.
    Freeing one node drops only references to nodes the table still holds, so a dead graph
    of any depth is freed in a loop, never by a deep chain of deallocations (CPython frees a
    node's operands inside the node's own deallocation, and Pyodide's WebAssembly stack
    dies after about a thousand such levels)."""
    start = time.perf_counter()
    table, refcount = _interned, sys.getrefcount
    before = len(table)
    if young:  # no entry leaves between collections: the young ones are the last
        keys = list(itertools.islice(reversed(table), max(0, before - _survivors[0])))
        keys.reverse()
    else:
        keys = list(table)
    pop = keys.pop  # a key holds its node's operands: each goes once it has been seen
    try:
        while keys:
            key = pop()
            if refcount(table[key]) <= 2:  # the table's reference and getrefcount's argument
                del table[key]
    finally:  # even when interrupted (the page's cancel): what was freed stays freed
        _survivors[0] = len(table)
        if not young:
            _collect_at[0] = max(_COLLECT_MIN, 2 * len(table))
    freed = before - len(table)
    collect_stats["runs"] += 1
    collect_stats["freed"] += freed
    collect_stats["seconds"] += time.perf_counter() - start
    return freed


def collect_when_idle() -> int:
    """What a caller with a moment to spare should collect: the young nodes, or all of
    them once the table is halfway to a full collection, so that none falls in busy work."""
    return collect(young=2 * len(_interned) <= _collect_at[0])


class Node:
    """One interned graph node. ``op`` is a key of PRIMITIVES; ``args`` are child nodes;
    ``value`` is set for constants and ``name`` for variables."""

    __slots__ = ("__weakref__", "args", "name", "op", "serial", "value")

    op: str
    args: tuple[Node, ...]
    value: float | None
    name: str | None
    serial: int

    # ---- Python operators: the same user code runs on floats, Duals and Nodes ----
    def __add__(self, other: Operand) -> Node:
        return add(self, other) if _operand(other) else NotImplemented

    def __radd__(self, other: Operand) -> Node:
        return add(other, self) if _operand(other) else NotImplemented

    def __sub__(self, other: Operand) -> Node:
        return add(self, neg(other)) if _operand(other) else NotImplemented

    def __rsub__(self, other: Operand) -> Node:
        return add(other, neg(self)) if _operand(other) else NotImplemented

    def __mul__(self, other: Operand) -> Node:
        return mul(self, other) if _operand(other) else NotImplemented

    def __rmul__(self, other: Operand) -> Node:
        return mul(other, self) if _operand(other) else NotImplemented

    def __truediv__(self, other: Operand) -> Node:
        return div(self, other) if _operand(other) else NotImplemented

    def __rtruediv__(self, other: Operand) -> Node:
        return div(other, self) if _operand(other) else NotImplemented

    def __pow__(self, other: Operand) -> Node:
        return pow(self, other) if _operand(other) else NotImplemented

    def __rpow__(self, other: Operand) -> Node:
        return pow(other, self) if _operand(other) else NotImplemented

    def __neg__(self) -> Node:
        return neg(self)

    # integer graphs (tang.crypto): bits, shifts and remainders of whole numbers
    def __and__(self, other: Operand) -> Node:
        return bitand(self, other) if _operand(other) else NotImplemented

    def __rand__(self, other: Operand) -> Node:
        return bitand(other, self) if _operand(other) else NotImplemented

    def __or__(self, other: Operand) -> Node:
        return bitor(self, other) if _operand(other) else NotImplemented

    def __ror__(self, other: Operand) -> Node:
        return bitor(other, self) if _operand(other) else NotImplemented

    def __xor__(self, other: Operand) -> Node:
        return bitxor(self, other) if _operand(other) else NotImplemented

    def __rxor__(self, other: Operand) -> Node:
        return bitxor(other, self) if _operand(other) else NotImplemented

    def __lshift__(self, other: Operand) -> Node:
        return shl(self, other) if _operand(other) else NotImplemented

    def __rlshift__(self, other: Operand) -> Node:
        return shl(other, self) if _operand(other) else NotImplemented

    def __rshift__(self, other: Operand) -> Node:
        return shr(self, other) if _operand(other) else NotImplemented

    def __rrshift__(self, other: Operand) -> Node:
        return shr(other, self) if _operand(other) else NotImplemented

    def __mod__(self, other: Operand) -> Node:
        return mod(self, other) if _operand(other) else NotImplemented

    def __rmod__(self, other: Operand) -> Node:
        return mod(other, self) if _operand(other) else NotImplemented

    def __pos__(self) -> Node:
        return self

    def __abs__(self) -> Node:
        return abs_(self)

    def __lt__(self, other: Operand) -> Node:
        return lt(self, other) if _operand(other) else NotImplemented

    def __le__(self, other: Operand) -> Node:
        return le(self, other) if _operand(other) else NotImplemented

    def __gt__(self, other: Operand) -> Node:
        return lt(other, self) if _operand(other) else NotImplemented

    def __ge__(self, other: Operand) -> Node:
        return le(other, self) if _operand(other) else NotImplemented

    def __bool__(self) -> bool:
        raise TypeError(
            "a traced value has no truth value while tracing; use tang.where(cond, a, b) "
            "instead of if/else on it"
        )

    def __float__(self) -> float:
        if self.op == "const":
            return float(self.value)  # type: ignore[arg-type]
        raise TypeError(f"cannot convert a traced '{self.op}' node to float")

    # ---- the rich math of tang.scalar, written over the primitives ----
    def sqrt(self) -> Node:
        return sqrt(self)

    def sin(self) -> Node:
        return sin(self)

    def cos(self) -> Node:
        return cos(self)

    def tan(self) -> Node:
        return tan(self)

    def exp(self) -> Node:
        return exp(self)

    def log(self) -> Node:
        return log(self)

    def tanh(self) -> Node:
        return tanh(self)

    def sigmoid(self) -> Node:
        return sigmoid(self)

    def atan2(self, x: Operand) -> Node:
        return atan2(self, x)

    @property
    def is_bool(self) -> bool:
        """True for comparison nodes (usable only as a select condition)."""
        return self.op in BOOL_OPS

    def __repr__(self) -> str:
        if self.op == "const":
            return f"Node(const {self.value!r})"
        if self.op == "var":
            return f"Node(var {self.name})"
        return f"Node({self.op} #{self.serial})"


# ---------------------------------------------------------------------------------------
# construction


def _const_key(v: float) -> bytes:
    return struct.pack("<d", v)


def const(v: Number) -> Node:
    """The constant node for ``v`` (interned; -0.0 and 0.0 are distinct, all NaNs one)."""
    v = float(v)
    if v != v:
        v = math.nan
    return _intern("const", (), v, None, ("const", _const_key(v)))


def var(name: str) -> Node:
    """The variable node called ``name``."""
    if not isinstance(name, str) or not name:
        raise ValueError("a variable needs a non-empty string name")
    return _intern("var", (), None, name, ("var", name))


def _operand(x: object) -> bool:
    """Whether a Node operator takes ``x``; other types (tang.Dual) get their reflected turn."""
    return isinstance(x, (Node, int, float))


def as_node(x: Operand) -> Node:
    """Wrap a Python number as a constant; nodes pass through."""
    if isinstance(x, Node):
        return x
    if isinstance(x, bool):
        raise TypeError("booleans are not numbers here; use tang.where for conditions")
    if isinstance(x, (int, float)):
        return const(x)
    raise TypeError(f"cannot use {type(x).__name__} in a traced expression")


def _intern(op: str, args: tuple[Node, ...], value, name, key) -> Node:
    node = _interned.get(key)
    return node if node is not None else _create(op, args, value, name, key)


def _create(op: str, args: tuple[Node, ...], value, name, key) -> Node:
    """A new node for ``key``, which has no node yet (the caller has looked)."""
    node = Node()  # Node has no __init__: this is object's, at C speed
    node.op, node.args, node.value, node.name = op, args, value, name
    node.serial = next(_serials)
    _interned[key] = node
    if len(_interned) > _collect_at[0]:
        collect()
    return node


class building:
    """Pause Python's cycle collector while building many nodes: nodes form no cycles, and
    its repeated scans of a growing graph would cost more than the building itself."""

    __slots__ = ("enabled",)

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()


def make(op: str, *operands: Operand) -> Node:
    """Build (or find) the node ``op(*operands)``; folds when every child is constant.

    Commutative ops order their children canonically, so ``x+y`` and ``y+x`` are one node.
    """
    arity, fn = PRIMITIVES[op]
    if len(operands) != arity or arity == 0:
        raise ValueError(f"'{op}' takes {arity} operands, got {len(operands)}")
    args = tuple([a if a.__class__ is Node else as_node(a) for a in operands])
    if op == "select" and args[0].op not in BOOL_OPS:
        raise TypeError("select's first operand must be a comparison")
    for a in args[1:] if op == "select" else args:
        if a.op in BOOL_OPS:
            raise TypeError(
                f"a comparison cannot be an operand of '{op}'; use tang.where(cond, a, b)"
            )
    for a in args:
        if a.op != "const":
            break
    else:
        return const(float(fn(*(a.value for a in args))))  # type: ignore[misc]
    if arity == 2:
        a, b = args
        if op in COMMUTATIVE and a.serial > b.serial:
            args = (b, a)
            a, b = b, a
        return _intern(op, args, None, None, (op, a, b))
    return _intern(op, args, None, None, (op, *args))


def _commutative(op: str, a: Operand, b: Operand) -> Node:
    """make(op, a, b) for add and mul, with its common case (two nodes or a node and a
    Python float, neither a comparison, not both constants) on a short path: they dominate
    graph building."""
    if a.__class__ is not Node:
        if a.__class__ is not float:
            return make(op, a, b)
        a = const(a)
    if b.__class__ is not Node:
        if b.__class__ is not float:
            return make(op, a, b)
        b = const(b)
    ao, bo = a.op, b.op  # type: ignore[union-attr]
    if ao in BOOL_OPS or bo in BOOL_OPS or (ao == "const" and bo == "const"):
        return make(op, a, b)
    if a.serial > b.serial:  # type: ignore[union-attr]
        a, b = b, a
    key = (op, a, b)
    node = _interned.get(key)
    return node if node is not None else _create(op, (a, b), None, None, key)


def _unary(op: str, a: Operand) -> Node:
    """make(op, a) with the same short path for a node operand."""
    if a.__class__ is Node and a.op not in BOOL_OPS and a.op != "const":  # type: ignore[union-attr]
        key = (op, a)
        node = _interned.get(key)
        return node if node is not None else _create(op, (a,), None, None, key)
    return make(op, a)


def add(a: Operand, b: Operand) -> Node:
    return _commutative("add", a, b)


def mul(a: Operand, b: Operand) -> Node:
    return _commutative("mul", a, b)


def neg(a: Operand) -> Node:
    return _unary("neg", a)


def recip(a: Operand) -> Node:
    return _unary("recip", a)


def sqrt(a: Operand) -> Node:
    return _unary("sqrt", a)


def sin(a: Operand) -> Node:
    return _unary("sin", a)


def cos(a: Operand) -> Node:
    return _unary("cos", a)


def exp(a: Operand) -> Node:
    return _unary("exp", a)


def log(a: Operand) -> Node:
    return _unary("log", a)


def exp2(a: Operand) -> Node:
    return _unary("exp2", a)


def log2(a: Operand) -> Node:
    return _unary("log2", a)


def floor(a: Operand) -> Node:
    return _unary("floor", a)


def tanh(a: Operand) -> Node:
    return _unary("tanh", a)


def atan2(y: Operand, x: Operand) -> Node:
    return make("atan2", y, x)


def lt(a: Operand, b: Operand) -> Node | bool:
    return _compare("lt", a, b)


def le(a: Operand, b: Operand) -> Node | bool:
    return _compare("le", a, b)


def eq(a: Operand, b: Operand) -> Node | bool:
    return _compare("eq", a, b)


def bitand(a: Operand, b: Operand) -> Node:
    return make("bitand", a, b)


def bitor(a: Operand, b: Operand) -> Node:
    return make("bitor", a, b)


def bitxor(a: Operand, b: Operand) -> Node:
    return make("bitxor", a, b)


def shl(a: Operand, b: Operand) -> Node:
    return make("shl", a, b)


def shr(a: Operand, b: Operand) -> Node:
    return make("shr", a, b)


def mod(a: Operand, b: Operand) -> Node:
    return make("mod", a, b)


def _compare(op: str, a: Operand, b: Operand) -> Node | bool:
    """A comparison node, or a plain bool when both sides are constants."""
    a, b = as_node(a), as_node(b)
    if a.op == "const" and b.op == "const":
        return bool(PRIMITIVES[op][1](a.value, b.value))  # type: ignore[misc]
    return make(op, a, b)


def select(cond: Node | bool, a: Operand, b: Operand) -> Node:
    """``a`` where ``cond`` holds, else ``b`` (a Python bool picks at trace time)."""
    if isinstance(cond, bool):
        return as_node(a if cond else b)
    a, b = as_node(a), as_node(b)
    if a is b:
        return a
    return make("select", cond, a, b)


# op -> the constructor that builds it from operands: each is the function named as the op
# (a comparison of two constants gives a bool, a select on a bool picks at once)
CONSTRUCTORS: dict[str, Callable[..., Node | bool]] = {name: globals()[name] for name in OPERATIONS}


def div(a: Operand, b: Operand) -> Node:
    b = as_node(b)
    if b.op == "const":
        return mul(a, ieee.recip(b.value))  # type: ignore[arg-type]
    return mul(a, recip(b))


def pow(a: Operand, b: Operand) -> Node:
    """a**b: integer constant exponents become products (and a reciprocal), 0.5 a sqrt,
    anything else exp(b*log(a))."""
    a, b = as_node(a), as_node(b)
    if b.op == "const":
        e: float = b.value  # type: ignore[assignment]
        if math.isfinite(e) and e == int(e) and abs(e) <= 64:
            return _int_pow(a, int(e))
        if e == 0.5:
            return sqrt(a)
        if e == -0.5:
            return recip(sqrt(a))
    if a.op == "const" and a.value == 2.0:
        return exp2(b)
    ln_a = log(a)
    return exp(b if ln_a.op == "const" and ln_a.value == 1.0 else mul(b, ln_a))  # e**b: exp(b)


def _int_pow(a: Node, n: int) -> Node:
    if n == 0:
        return const(1.0)
    result: Node | None = None
    base, k = a, abs(n)
    while k:  # square-and-multiply: x**8 is three multiplies, shared
        if k & 1:
            result = base if result is None else mul(result, base)
        k >>= 1
        if k:
            base = mul(base, base)
    assert result is not None
    return recip(result) if n < 0 else result


# ---------------------------------------------------------------------------------------
# composites (tang.expr.ops.COMPOSITES): each one's formula over the constructors above

_KIT = SimpleNamespace(sin=sin, cos=cos, exp=exp, recip=recip, lt=lt, where=select)


def _composite(name: str) -> Callable[..., Node]:
    """The graph of composite ``name``: its formula over nodes (constants fold as the
    primitives it is made of fold)."""
    formula = COMPOSITES[name].formula

    def build(*operands: Operand) -> Node:
        return formula(_KIT, *[as_node(a) for a in operands])

    build.__name__ = build.__qualname__ = name
    build.__doc__ = COMPOSITES[name].doc
    return build


# composite name -> the function that builds its graph
COMPOSITE_BUILDERS: dict[str, Callable[..., Node]] = {name: _composite(name) for name in COMPOSITES}
tan = COMPOSITE_BUILDERS["tan"]
sigmoid = COMPOSITE_BUILDERS["sigmoid"]
abs_ = COMPOSITE_BUILDERS["abs"]
minimum = COMPOSITE_BUILDERS["min"]
maximum = COMPOSITE_BUILDERS["max"]


# ---------------------------------------------------------------------------------------
# walking and evaluating


def replace_nodes(nodes: Sequence[Node], replace: Mapping[int, Node]) -> list[Node]:
    """``nodes`` with every node whose id is in ``replace`` swapped for its replacement,
    the nodes above rebuilt (interned again, so they fold and share as usual)."""
    memo: dict[int, Node] = {}
    for n in topo_order(nodes):
        if id(n) in replace:
            memo[id(n)] = replace[id(n)]
        elif not n.args:
            memo[id(n)] = n
        else:
            memo[id(n)] = make(n.op, *(memo[id(a)] for a in n.args))
    return [memo[id(n)] for n in nodes]


def topo_order(outputs: Iterable[Node]) -> list[Node]:
    """Every node reachable from ``outputs``, children before parents: a depth-first walk
    on an explicit stack of (node, iterator over its operands), never recursion."""
    order: list[Node] = []
    seen: set[Node] = set()  # nodes hash by identity
    mark, emit = seen.add, order.append
    for root in outputs:
        if root in seen:
            continue
        mark(root)
        stack = [(root, iter(root.args))]
        push, pop = stack.append, stack.pop
        while stack:
            node, operands = stack[-1]
            for child in operands:
                if child not in seen:
                    mark(child)
                    if child.args:
                        push((child, iter(child.args)))
                        break
                    emit(child)  # a leaf: done at once (the same order, less stack work)
            else:
                pop()
                emit(node)
    return order


# primitive -> its float kernel, what computes a node of it from its operands' values
_KERNELS: dict[str, Callable[..., object]] = {
    name: fn for name, (_, fn) in PRIMITIVES.items() if fn is not None
}


def _step(node: Node) -> Callable[..., object]:
    """What computes ``node`` from its operands' values: its primitive's kernel, or for a
    loop (tang.expr.loop) its body's run, and for a loop's output the state it reads."""
    kernel = _KERNELS.get(node.op)
    if kernel is not None:
        return kernel
    if node.op == "loop_out":
        index = node.value
        return lambda states: states[index]
    body = node.value
    return lambda *operands: body.run(node, list(operands))  # type: ignore[union-attr]


def evaluate(outputs: Sequence[Node], values: Mapping[str, float]) -> list[float]:
    """Evaluate ``outputs`` at ``values`` (a name → float mapping) with IEEE semantics."""
    result: dict[Node, object] = {}
    for node in topo_order(outputs):
        if node.args:
            result[node] = _step(node)(*[result[a] for a in node.args])
        elif node.op == "const":
            result[node] = node.value
        else:
            try:
                result[node] = float(values[node.name])  # type: ignore[index]
            except KeyError:
                raise KeyError(f"no value given for variable '{node.name}'") from None
    return [result[o] for o in outputs]  # type: ignore[misc]


class Tape:
    """Nodes compiled once to steps over numbered slots, for a graph run at many points (the
    tensor IR's evaluator keeps one per body, the solvers one per traced function); each
    step is ``evaluate``'s own. ``template`` holds the constants; a run copies it, fills the
    variables' slots (``leaves``: slot, name) and calls ``compute``."""

    __slots__ = ("leaves", "outs", "steps", "template")

    def __init__(self, outputs: Sequence[Node]) -> None:
        order = topo_order(outputs)
        slot = {n: k for k, n in enumerate(order)}
        self.template: list = [n.value if n.op == "const" else None for n in order]
        self.leaves: list[tuple[int, str]] = [(slot[n], n.name) for n in order if n.op == "var"]  # type: ignore[misc]
        self.steps = [(slot[n], _step(n), tuple(slot[a] for a in n.args)) for n in order if n.args]
        self.outs = [slot[n] for n in outputs]

    def run(self, leaf: Callable[[str], object]) -> list:
        """The outputs' values, each variable's value being ``leaf(its name)``."""
        values = self.template[:]
        for k, name in self.leaves:
            values[k] = leaf(name)
        return self.compute(values)

    def compute(self, values: list) -> list:
        """The outputs, from ``values``: the template with every variable's slot filled."""
        for k, fn, args in self.steps:
            if len(args) == 1:
                values[k] = fn(values[args[0]])
            elif len(args) == 2:
                values[k] = fn(values[args[0]], values[args[1]])
            else:
                values[k] = fn(*[values[a] for a in args])
        return [values[k] for k in self.outs]


def variables(outputs: Iterable[Node]) -> list[str]:
    """Names of the variables the outputs depend on, in first-reached order."""
    return [n.name for n in topo_order(outputs) if n.op == "var"]  # type: ignore[misc]


class Graph:
    """Named inputs and a tuple of output nodes: what ``tang.trace`` returns. ``name`` is
    the function's own (``g`` for ``g(a, b) = …``): its outputs are named after it."""

    def __init__(
        self,
        inputs: Sequence[str],
        outputs: Sequence[Node],
        *,
        nodes: Sequence[Node] | None = None,
        name: str = "f",
    ) -> None:
        """``nodes``: ``topo_order(outputs)``, when the caller has walked them already."""
        self.name = name
        self.inputs: tuple[str, ...] = tuple(inputs)
        self.outputs: tuple[Node, ...] = tuple(as_node(o) for o in outputs)
        self._nodes: tuple[Node, ...] | None = None if nodes is None else tuple(nodes)

    def nodes(self) -> list[Node]:
        """Live nodes, children first (walked once: a graph does not change)."""
        if self._nodes is None:
            self._nodes = tuple(topo_order(self.outputs))
        return list(self._nodes)

    def eval(self, values: Mapping[str, float] | Sequence[float]) -> list[float]:
        """Evaluate every output; ``values`` maps names, or lists them in input order."""
        if not isinstance(values, Mapping):
            values = list(values)
            if len(values) != len(self.inputs):
                raise ValueError(f"expected {len(self.inputs)} values, got {len(values)}")
            values = dict(zip(self.inputs, values))
        return evaluate(self.outputs, values)

    def __len__(self) -> int:
        return len(self.nodes())

    def __repr__(self) -> str:
        return f"Graph(inputs={list(self.inputs)}, outputs={len(self.outputs)}, nodes={len(self)})"
