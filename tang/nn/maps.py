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
    arrays a backend's ``map`` is handed (the operands, then ``y`` and ``g``)."""

    __slots__ = ("_numpy", "_python", "names", "node", "positions")

    def __init__(self, node: Node, leaves: Sequence[str]) -> None:
        read = {n.name for n in topo_order([node]) if n.op == "var"}
        self.node = node
        self.positions = tuple(k for k, name in enumerate(leaves) if name in read)
        self.names = tuple(leaves[k] for k in self.positions)
        self._python: Callable[..., list[float]] | None = None
        self._numpy: Callable[..., Any] | None = None

    @property
    def python(self) -> Callable[..., list[float]]:
        """``f(*lists) -> list``: the body over whole lists of its leaves (IEEE)."""
        if self._python is None:
            self._python = _python_function(self.node, self.names)
        return self._python

    @property
    def numpy(self) -> Callable[..., Any]:
        """``f(*arrays) -> array``: the body over numpy arrays, by tang's numpy rules (the
        caller silences numpy's floating-point warnings: IEEE values, as in Python)."""
        if self._numpy is None:
            import numpy

            self._numpy = numpy_function(numpy, self.node, self.names)
        return self._numpy

    @property
    def is_leaf(self) -> bool:
        """Whether the body is one of its leaves (a slope that passes ``g`` on unchanged)."""
        return self.node.op == "var"


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


def _python_function(node: Node, leaves: Sequence[str]) -> Callable[..., list[float]]:
    """``f(*lists) -> list``: ``node`` over whole lists of its leaves. tang's Python printer
    spells the body for one element (``def f(a0, g): t0 = …; return …``); its lines become
    the clauses of one list comprehension, so no Python call is made per element beyond
    the math itself. Loaded from tang's own text, never a user's."""
    from ..lower import schedule
    from ..lower.python import Python

    class OneValue(Python):  # the function returns its one value, not a list of them
        fn_return = "return {exprs}"

    program = schedule([node], list(leaves))
    lines = OneValue().render(program, shape="function", name="f").source.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("def f("))
    params = lines[at][len("def f(") : -len("):")].split(", ")
    clauses, value = [], ""
    for line in lines[at + 1 :]:
        text = line.strip()
        if text.startswith("return "):
            value = text[len("return ") :]
        elif text and not text.startswith("#"):
            name, expr = text.split(" = ", 1)
            clauses.append(f" for {name} in ({expr},)")
    lists = [f"_l{k}" for k in range(len(params))]
    over = lists[0] if len(lists) == 1 else f"zip({', '.join(lists)})"
    comprehension = f"[{value} for {', '.join(params)} in {over}{''.join(clauses)}]"
    source = "\n".join(
        [*lines[:at], f"def f({', '.join(lists)}):", f"    return {comprehension}", ""]
    )
    namespace: dict[str, Any] = {}
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


__all__ = ["Map", "Rule", "Scalar", "rule"]
