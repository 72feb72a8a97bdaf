"""Element-wise ops of ``tang.nn``, each defined once, in the tensor IR.

An op is a ``tang.tensor`` function (``tensor.tanh``, ``tensor.mul``…): its value is the
body of the map comprehension that function builds, and each operand's slope is the body
``tang.tensor.grad`` derives for that operand. ``tang.nn`` writes neither. Where a slope
recomputes the value (tanh' = 1 − tanh²), the value node is read from the forward's output
instead. A backend runs a :class:`Scalar` over whole arrays (``B.map``): pure Python as
tang's printed Python, numpy as straight-line calls of the registry's numpy rules.
Broadcasting is the adjoint of a view: a slope is summed down to its operand's shape.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..expr.graph import Node, replace_nodes, topo_order, var
from ..expr.vectorized import numpy_function
from .ops import Op
from .pybackend import broadcast_shape

VALUE, SEED = "y", "g"  # the leaves a slope reads beside the operands a0, a1, …


class Scalar:
    """One body (a scalar graph over named leaves) and its Python function, printed once.
    ``names`` are the leaves the body reads and ``positions`` where each sits among the
    arrays a backend's ``map`` is handed (the operands, then ``y`` and ``g``); ``numbers``
    are leaves that hold one number per call (an optimizer's step size), passed as they are
    after the arrays."""

    __slots__ = ("_numpy", "_python", "names", "node", "numbers", "positions")

    def __init__(self, node: Node, leaves: Sequence[str], numbers: Sequence[str] = ()) -> None:
        read = {n.name for n in topo_order([node]) if n.op == "var"}
        self.node = node
        self.positions = tuple(k for k, name in enumerate(leaves) if name in read)
        self.names = tuple(leaves[k] for k in self.positions)
        self.numbers = tuple(numbers)
        self._python: Callable[..., list[float]] | None = None
        self._numpy: dict[tuple[bool, tuple[int, ...]], Callable[..., Any]] = {}

    @property
    def python(self) -> Callable[..., list[float]]:
        """``f(*lists, *numbers) -> list``: the body over whole lists of its leaves (IEEE)."""
        if self._python is None:
            self._python = _python_function(self.node, self.names, self.numbers)
        return self._python

    def numpy(self, same_shape: bool, consume: tuple[int, ...] = ()) -> Callable[..., Any]:
        """``f(*arrays, *numbers) -> array``: the body over numpy arrays, by tang's numpy
        rules (the caller silences numpy's floating-point warnings: IEEE values, as in
        Python). ``same_shape``: the arrays share the output's shape, so temporaries are
        written over once dead, and so are the arrays at ``consume`` (positions among the
        arrays handed to ``map``), which the caller gives up."""
        key = (same_shape, consume)
        fn = self._numpy.get(key)
        if fn is None:
            import numpy

            given = [name for k, name in zip(self.positions, self.names) if k in consume]
            fn = self._numpy[key] = numpy_function(
                numpy,
                self.outputs,
                (*self.names, *self.numbers),
                same_shape=self.names if same_shape else (),
                consume=given if same_shape else (),
            )
        return fn

    @property
    def is_leaf(self) -> bool:
        """Whether the body is one of its leaves (a slope that passes ``g`` on unchanged)."""
        return self.node.op == "var"

    many = False  # one output (Several: a tuple of them)

    @property
    def outputs(self) -> Node | tuple[Node, ...]:
        return self.node


class Several(Scalar):
    """Several bodies over the same leaves (an optimizer's new parameter and moments): a
    backend's ``map`` returns a tuple. numpy runs them as one straight-line function (one
    call, not one per output); Python as one comprehension per output, each reading the
    lists of the outputs before it where its body contains theirs."""

    __slots__ = ("nodes", "order", "parts")
    many = True

    def __init__(
        self, nodes: tuple[Node, ...], leaves: Sequence[str], numbers: Sequence[str] = ()
    ) -> None:
        super().__init__(nodes[0], [], numbers)
        self.nodes = nodes
        read = {n.name for n in topo_order(list(nodes)) if n.op == "var"}
        self.positions = tuple(k for k, name in enumerate(leaves) if name in read)
        self.names = tuple(leaves[k] for k in self.positions)
        at = {id(n): k for k, n in enumerate(topo_order(list(nodes)))}
        self.order = sorted(range(len(nodes)), key=lambda k: at[id(nodes[k])])
        done: dict[int, Node] = {}  # an output's node → the leaf its list is read by
        self.parts = []  # in dependency order: an output inside another is computed first
        for k in self.order:
            body = replace_nodes([nodes[k]], done)[0] if done else nodes[k]
            self.parts.append(
                Scalar(body, [*self.names, *(f"o{j}" for j in range(len(done)))], numbers)
            )
            done[id(nodes[k])] = var(f"o{len(done)}")

    @property
    def python(self) -> Callable[..., tuple[list[float], ...]]:
        if self._python is None:
            parts, arrays = self.parts, len(self.names)
            back = [self.order.index(k) for k in range(len(self.nodes))]  # output → its part

            def run(*args: Any) -> tuple[list[float], ...]:
                lists, numbers = list(args[:arrays]), args[arrays:]
                for part in parts:
                    flats = [lists[k] for k in part.positions]
                    lists.append(part.python(*flats, *numbers) if not part.is_leaf else flats[0])
                return tuple(lists[arrays + j] for j in back)

            self._python = run  # type: ignore[assignment]
        return self._python  # type: ignore[return-value]

    @property
    def is_leaf(self) -> bool:
        return False

    @property
    def outputs(self) -> tuple[Node, ...]:
        return self.nodes


class Rule:
    """An element-wise op's value over ``a0 … a{n-1}`` and each operand's slope over
    ``a0 … a{n-1}, y, g`` (None where the value does not depend on that operand)."""

    __slots__ = ("name", "slopes", "value")

    def __init__(self, name: str, value: Scalar, slopes: tuple[Scalar | None, ...]) -> None:
        self.name, self.value, self.slopes = name, value, slopes


@functools.cache
def rule(op: str, constants: tuple[float, ...], arity: int) -> Rule:
    """The rule of ``tang.tensor.<op>(a0, …, a{arity-1}, *constants)``, an element-wise op
    of the tensor IR: its comprehension and the gradient ``tang.tensor.grad`` derives, read
    off a graph of one-element inputs (the bodies do not depend on the shape). The IR is
    imported here, on the first op, not with ``tang.nn`` (the page starts sooner)."""
    from .. import tensor
    from ..tensor import Load, TensorIRError
    from ..tensor.ops import OPS

    fn = OPS.get(op)
    if fn is None:
        raise ValueError(f"{op!r} is not an op of tang.tensor (choose from {', '.join(OPS)})")
    not_elementwise = ValueError(
        f"tang.tensor.{op} with {arity} operand(s) and constants {constants} is not an "
        "element-wise op"
    )
    operands = tuple(f"a{k}" for k in range(arity))
    inputs = [tensor.input(n, (1,)) for n in operands]
    try:
        derived = tensor.grad(tensor.graph(**{VALUE: fn(*inputs, *constants)}), VALUE)
    except (TypeError, TensorIRError) as exc:
        raise not_elementwise from exc
    leaf_of = {f"d_{VALUE}": SEED, VALUE: VALUE, **{n: n for n in operands}}
    bodies: dict[str, Node] = {}
    for comp in derived.comprehensions:
        reads = comp.reads.values()
        if comp.reduce or not all(isinstance(r, Load) and r.source in leaf_of for r in reads):
            raise not_elementwise
        leaves = {k: var(leaf_of[r.source]) for k, r in comp.reads.items()}  # type: ignore[union-attr]
        swap = {id(n): leaves[n.name] for n in topo_order(comp.body) if n.name in leaves}
        bodies[comp.name] = replace_nodes(comp.body, swap)[0]
    value = bodies[VALUE]
    reads_value = {id(value): var(VALUE)}  # a slope that recomputes the value reads it
    slope_leaves = (*operands, VALUE, SEED)
    slopes = tuple(
        Scalar(replace_nodes([bodies[f"d_{a}"]], reads_value)[0], slope_leaves)
        if f"d_{a}" in bodies
        else None
        for a in operands
    )
    return Rule(op, Scalar(value, operands), slopes)


def scalar_of(fn: Callable[..., Any], arrays: int, numbers: int = 0) -> Scalar:
    """``fn`` (plain arithmetic, written once for any number type) as a body over ``arrays``
    arrays ``a0…`` and ``numbers`` per-call numbers ``n0…``: traced once by calling it on
    graph leaves. Cached by ``fn``; a method of a frozen rule by the rule's value (Python
    compares bound methods by the identity of their object)."""
    owner = getattr(fn, "__self__", None)
    key = (fn if owner is None else (owner, fn.__func__), arrays, numbers)  # type: ignore[attr-defined]
    body = _SCALARS.get(key)
    if body is None:
        leaves = [f"a{k}" for k in range(arrays)]
        extra = [f"n{k}" for k in range(numbers)]
        out = fn(*map(var, leaves + extra))
        made = Several if isinstance(out, tuple) else Scalar
        body = _SCALARS[key] = made(out, leaves, extra)
    return body


_SCALARS: dict[Any, Scalar] = {}


def _python_function(
    node: Node, leaves: Sequence[str], numbers: Sequence[str] = ()
) -> Callable[..., list[float]]:
    """``f(*lists, *numbers) -> list``: ``node`` over whole lists of its leaves, as one list
    comprehension. It runs first with ``math``'s own functions and a plain ``1/x`` (the
    same bits as tang.ieee's wherever they do not raise, and no Python call per element);
    where one raises (an overflow, a log of 0), the IEEE spelling runs instead. Work that
    reads only the per-call ``numbers`` is done once, before the comprehension."""
    from ..lower.python import Python

    body, hoisted = _hoist(node, numbers)
    fast = _comprehension(_printer(Python, fast=True), body, leaves, numbers, hoisted)
    safe = _comprehension(_printer(Python, fast=False), body, leaves, numbers, hoisted)

    def run(*args: Any) -> list[float]:
        try:
            return fast(*args)
        except (ArithmeticError, ValueError):  # math raised where IEEE has inf or nan
            return safe(*args)

    return run


_MATH = ("sqrt", "exp", "log", "log2", "sin", "cos")  # raise where tang.ieee's give inf/nan


@functools.cache
def _printer(python: type, fast: bool) -> Any:
    """tang's Python printer, returning one value; ``fast`` spells ``_MATH`` as ``math``'s
    functions, ``exp2`` as ``math.pow(2.0, x)`` and ``recip`` as ``1.0 / x``."""
    from ..lower.base import ATOM, C_OPS, LOWEST, Op, call

    class OneValue(python):  # type: ignore[misc,valid-type]
        fn_return = "return {exprs}"
        if fast:  # tang.ieee's exp2 is math.pow(2, a) where that does not raise
            ops = {
                **python.ops,
                "recip": C_OPS["recip"],
                "exp2": Op("_mpow(2.0, {0})", ATOM, (LOWEST,)),
                **{f: call(f"_m{f}") for f in _MATH},
            }

    return OneValue()


def _hoist(node: Node, numbers: Sequence[str]) -> tuple[Node, list[tuple[str, Node]]]:
    """``node`` with each largest subexpression that reads only ``numbers`` (and at least
    one of them) replaced by a leaf ``h0``, ``h1``…: (the new body, [(leaf, subexpression)])."""
    fixed: dict[int, bool] = {}  # id(node) → reads only numbers (and constants)
    reads: dict[int, bool] = {}  # id(node) → reads a number
    for n in topo_order([node]):
        if n.op == "var":
            fixed[id(n)] = reads[id(n)] = n.name in numbers
        elif n.op == "const":
            fixed[id(n)], reads[id(n)] = True, False
        else:
            fixed[id(n)] = all(fixed[id(a)] for a in n.args)
            reads[id(n)] = any(reads[id(a)] for a in n.args)
    hoist = {id(node)} if fixed[id(node)] else set()
    for n in topo_order([node]):
        if not fixed[id(n)]:
            hoist.update(id(a) for a in n.args if fixed[id(a)])
    chosen = [
        n
        for n in topo_order([node])
        if id(n) in hoist and reads[id(n)] and n.op not in ("var", "const")
    ]
    if not chosen:
        return node, []
    swap = {id(n): var(f"h{k}") for k, n in enumerate(chosen)}
    return replace_nodes([node], swap)[0], [(f"h{k}", n) for k, n in enumerate(chosen)]


def _comprehension(
    printer: Any,
    body: Node,
    leaves: Sequence[str],
    numbers: Sequence[str],
    hoisted: Sequence[tuple[str, Node]],
) -> Callable[..., list[float]]:
    """The printed ``f(*lists, *numbers)``: the hoisted values first (printed over the
    numbers), then the body's lines as the clauses of one list comprehension over the
    lists. Loaded from tang's own text, never a user's."""
    from ..lower import schedule

    def printed(nodes: list[Node], names: list[str]) -> tuple[list[str], list[str], list[str]]:
        lines = printer.render(schedule(nodes, names), shape="function", name="f")
        lines = lines.source.splitlines()
        at = next(k for k, line in enumerate(lines) if line.startswith("def f("))
        params = lines[at][len("def f(") : -len("):")].split(", ")
        body = [t.strip() for t in lines[at + 1 :] if t.strip() and not t.strip().startswith("#")]
        return lines[:at], params, body

    header, params, lines = printed([body], [*leaves, *numbers, *(h for h, _ in hoisted)])
    prologue: list[str] = []
    if hoisted:
        _, _, first = printed([n for _, n in hoisted], list(numbers))
        names = ", ".join(h for h, _ in hoisted)
        prologue = [*first[:-1], f"({names},) = ({first[-1][len('return ') :]},)"]
    clauses = []
    for text in lines[:-1]:
        name, expr = text.split(" = ", 1)
        clauses.append(f" for {name} in ({expr},)")
    value = lines[-1][len("return ") :]
    arrays = params[: len(leaves)]
    lists = [f"_l{k}" for k in range(len(arrays))]
    over = lists[0] if len(lists) == 1 else f"zip({', '.join(lists)})"
    comprehension = f"[{value} for {', '.join(arrays)} in {over}{''.join(clauses)}]"
    source = "\n".join(
        [
            *header,
            f"def f({', '.join(lists + list(numbers))}):",
            *(f"    {line}" for line in prologue),
            f"    return {comprehension}",
            "",
        ]
    )
    namespace: dict[str, Any] = {f"_m{f}": getattr(math, f) for f in _MATH}
    namespace["_mpow"] = math.pow
    exec(compile(source, "<tang.nn element-wise op>", "exec"), namespace)
    return namespace["f"]


class Map(Op):
    """``tang.tensor.<op>(*tensors, *constants)``, an element-wise op of the IR, with numpy
    broadcasting; its backward is the derived slopes, summed to each operand's shape."""

    def __init__(self, op: str, *constants: float) -> None:
        self.op, self.constants = op, constants

    def forward(self, B, *xs):
        self.rule = rule(self.op, self.constants, len(xs))
        self.xs = xs
        shape = xs[0].shape if len(xs) == 1 else _broadcast(xs)
        self.y = B.map(self.rule.value, xs, shape)
        return self.y

    def backward(self, B, g):
        leaves = (*self.xs, self.y, g)
        grads = []
        for x, slope, need in zip(self.xs, self.rule.slopes, self.needs):
            if not need or slope is None:
                grads.append(None)
                continue
            gx = B.map(slope, leaves, g.shape)
            grads.append(gx if gx.shape == x.shape else B.sum_to(gx, x.shape))
        return tuple(grads)


def _broadcast(xs: Sequence[Any]) -> tuple[int, ...]:
    shape = tuple(xs[0].shape)
    for x in xs[1:]:
        shape = broadcast_shape(shape, tuple(x.shape))
    return shape


__all__ = ["Map", "Rule", "Scalar", "Several", "rule", "scalar_of"]
