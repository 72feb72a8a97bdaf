"""Function transformations in the style of JAX: ``jvp``, ``derivative`` and ``jacobian``
run forward mode on Duals; ``grad`` runs reverse mode on the traced graph; ``hvp`` and
``hessian`` run forward mode over the reverse-mode graph (forward-over-reverse).

Each accepts plain Python functions written over "any number" (``tang.sin`` & co. and the
operators). They compose: ``derivative(derivative(f))``, ``grad`` of a function that calls
``derivative``, ``jacobian(grad(f))``, …
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from . import dual
from .dual import Tangents
from .expr.grad import gradient
from .expr.graph import Graph, Node, variables
from .expr.trace import replay, trace

Function = Callable[..., Any]


def _as_list(x: Any) -> tuple[list[Any], bool]:
    """(items, was_a_sequence)."""
    if isinstance(x, (list, tuple)) and not isinstance(x, Tangents):
        return list(x), True
    return [x], False


def jvp(f: Function, primals: Any, tangents: Any) -> tuple[Any, Any]:
    """(f(x), J·v): f's value and its directional derivative along ``tangents``, in one
    forward pass. ``primals``/``tangents`` are a number or matching sequences; a tangent
    given as a tuple of numbers carries several directions at once."""
    xs, many = _as_list(primals)
    vs = list(tangents) if many else [tangents]
    if len(vs) != len(xs):
        raise ValueError(f"{len(xs)} primals but {len(vs)} tangents")
    with dual.perturbation(*xs, *vs) as level:
        out = f(*(dual.seed(level, x, v) for x, v in zip(xs, vs, strict=True)))
    outs, many_out = _as_list(out)
    pairs = [dual.split(o, level) for o in outs]
    if not many_out:
        return pairs[0]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def derivative(f: Function, order: int = 1) -> Function:
    """The function x ↦ f^(order)(x) for f of one variable, by nested Dual numbers."""
    if not isinstance(order, int) or order < 0:
        raise ValueError(f"order must be a non-negative integer, not {order!r}")
    for _ in range(order):
        f = _derivative(f)
    return f


def _derivative(f: Function) -> Function:
    def df(x: Any) -> Any:
        return jvp(f, x, 1.0)[1]

    df.__name__ = f"d_{getattr(f, '__name__', 'f')}"
    return df


def jacobian(f: Function) -> Function:
    """The function (x1, …, xn) ↦ the m×n Jacobian of f as rows (one per output; a scalar f
    gives one row), from one forward pass carrying n tangents."""

    def jac(*xs: Any) -> list[list[Any]]:
        n = len(xs)
        with dual.perturbation(*xs) as level:
            seeds = [dual.seed(level, x, _unit(i, n)) for i, x in enumerate(xs)]
            out = f(*seeds)
        outs, _ = _as_list(out)
        return [list(dual.split(o, level, _unit(-1, n))[1]) for o in outs]

    return jac


def _unit(i: int, n: int) -> Tangents:
    return Tangents(1.0 if j == i else 0.0 for j in range(n))


# ---------------------------------------------------------------------------------------
# reverse mode

_trace_ids = itertools.count()


def _trace_fresh(f: Function, n: int) -> Graph:
    """Trace f on n variables with names no user graph uses, so that nodes f closes over
    can never be mistaken for its arguments."""
    k = next(_trace_ids)
    return trace(f, [f"arg{i}#{k}" for i in range(n)])


def _run(graph: Graph, args: Sequence[Any]) -> list[Any]:
    """Evaluate on floats directly; on other numbers (Duals, nodes) by replaying."""
    if all(isinstance(a, (int, float)) for a in args):
        return graph.eval(args)
    return replay(graph, args)


def grad(f: Function | Graph | Node, wrt: Sequence[str] | None = None) -> Any:
    """Reverse mode. On a Graph (or Node) with one output: the Graph of
    ``[value, ∂/∂w for w in wrt]`` (``wrt`` defaults to its inputs). On a function:
    the function returning f's gradient at its arguments — one float for a function of one
    variable, else a tuple with one entry per argument. The function form traces f on each
    call (like JAX's grad without jit); to evaluate one gradient at many points, build
    the graph once: ``g = tang.grad(tang.trace(f))`` then ``g.eval(...)``."""
    if isinstance(f, (Graph, Node)):
        return gradient(f, wrt)
    if wrt is not None:
        raise TypeError("wrt applies to graphs; a function's gradient covers its arguments")

    def df(*args: Any) -> Any:
        partials = _run(gradient(_trace_fresh(f, len(args))), args)[1:]
        return partials[0] if len(args) == 1 else tuple(partials)

    df.__name__ = f"grad_{getattr(f, '__name__', 'f')}"
    return df


def value_and_grad(f: Function) -> Function:
    """Like ``grad(f)`` but returning ``(f(args), gradient)`` from the same sweep."""

    def vdf(*args: Any) -> tuple[Any, Any]:
        value, *partials = _run(gradient(_trace_fresh(f, len(args))), args)
        return value, partials[0] if len(args) == 1 else tuple(partials)

    return vdf


def _gradient_graph(f: Function | Graph | Node, n: int) -> Graph:
    if isinstance(f, Node):
        graph = Graph(sorted(variables([f])), [f])
    else:
        graph = f if isinstance(f, Graph) else _trace_fresh(f, n)
    if len(graph.inputs) != n:
        raise ValueError(f"the graph has {len(graph.inputs)} inputs, {n} values were given")
    return gradient(graph)


def hvp(f: Function | Graph | Node, x: Sequence[Any], v: Sequence[Any]) -> list[Any]:
    """Hessian-vector product H(x)·v by forward-over-reverse: the reverse-mode gradient
    graph of f, replayed on Dual numbers seeded with ``v``."""
    xs, vs = list(x), list(v)
    if len(xs) != len(vs):
        raise ValueError(f"{len(xs)} values but {len(vs)} direction entries")
    g = _gradient_graph(f, len(xs))
    with dual.perturbation(*xs, *vs) as level:
        outs = replay(g, [dual.seed(level, a, b) for a, b in zip(xs, vs, strict=True)])
    return [dual.split(o, level)[1] for o in outs[1:]]


def hessian(f: Function | Graph | Node) -> Function:
    """The function (x1, …, xn) ↦ the n×n Hessian of a scalar f, by forward-over-reverse
    with n tangents in one pass."""

    def hess(*xs: Any) -> list[list[Any]]:
        n = len(xs)
        g = _gradient_graph(f, n)
        with dual.perturbation(*xs) as level:
            outs = replay(g, [dual.seed(level, a, _unit(i, n)) for i, a in enumerate(xs)])
        return [list(dual.split(o, level, _unit(-1, n))[1]) for o in outs[1:]]

    return hess
