"""Random straight-line programs over tang's math, for the core's property tests.

A program is a list of steps ``(op, operand indices)`` over a pool that starts with the
variables x, y, z; each step appends its result. Needs only tang (hypothesis and sympy are
imported where used), so it also runs inside Pyodide. Running it on tang variables gives a
graph, on Duals a forward-mode result, and (``to_sympy``) on sympy symbols an independent
oracle built from the same program — not from tang's graph.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import tang

VARIABLES = ("x", "y", "z")
CONSTANTS = (0.5, 2.0, -1.5, 3.0)

Step = tuple[str, tuple[int, ...]]


def _where(a: Any, b: Any, c: Any, d: Any) -> Any:
    return tang.where(tang.lt(a, b), c, d)


# op: (arity, tang function over any number)
OPS: dict[str, tuple[int, Callable[..., Any]]] = {
    "add": (2, operator.add),
    "sub": (2, operator.sub),
    "mul": (2, operator.mul),
    # tang.scalar.div and tang.pow apply / and ** to nodes and Duals, and IEEE rules to
    # constant subexpressions (where Python's float / and ** would raise)
    "div": (2, tang.scalar.div),
    "neg": (1, operator.neg),
    "square": (1, lambda a: tang.pow(a, 2)),
    "cube": (1, lambda a: tang.pow(a, 3)),
    "inverse_square": (1, lambda a: tang.pow(a, -2)),
    "pow_1.5": (1, lambda a: tang.pow(a, 1.5)),
    "pow": (2, tang.pow),
    "sin": (1, tang.sin),
    "cos": (1, tang.cos),
    "tan": (1, tang.tan),
    "exp": (1, tang.exp),
    "log": (1, tang.log),
    "sqrt": (1, tang.sqrt),
    "tanh": (1, tang.tanh),
    "sigmoid": (1, tang.sigmoid),
    "abs": (1, tang.abs),
    "atan2": (2, tang.atan2),
    "min": (2, tang.min),
    "max": (2, tang.max),
    "where": (4, _where),
    **{f"const {c}": (0, (lambda c=c: c)) for c in CONSTANTS},
    **{f"scale {c}": (1, (lambda a, c=c: a * c)) for c in CONSTANTS},
}


def programs(max_steps: int = 7) -> Any:
    """A hypothesis strategy: programs of 1..max_steps steps (hypothesis is imported here,
    so this module also loads where only tang is, such as Pyodide)."""
    from hypothesis import strategies as st

    @st.composite
    def draw_program(draw: Any) -> list[Step]:
        return random_program(lambda lo, hi: draw(st.integers(lo, hi)), max_steps)

    return draw_program()


def random_program(integer: Callable[[int, int], int], max_steps: int = 7) -> list[Step]:
    """A program drawn with ``integer(lo, hi)`` (inclusive): hypothesis or random.randint."""
    steps: list[Step] = []
    size = len(VARIABLES)
    names = sorted(OPS)
    for _ in range(integer(1, max_steps)):
        op = names[integer(0, len(names) - 1)]
        arity = OPS[op][0]
        # lean towards recent values, so programs nest instead of staying flat
        args = tuple(integer(max(0, size - 4), size - 1) for _ in range(arity))
        steps.append((op, args))
        size += 1
    return steps


def run(steps: Sequence[Step], inputs: Sequence[Any]) -> Any:
    """The program's last value, computed on ``inputs`` (any number type)."""
    pool = list(inputs)
    for op, args in steps:
        pool.append(OPS[op][1](*(pool[i] for i in args)))
    return pool[-1]


def to_sympy(steps: Sequence[Step], symbols: Sequence[Any]) -> Any:
    """The same program built from sympy's functions (an oracle independent of tang)."""
    import sympy as sp

    def piecewise_min(a: Any, b: Any) -> Any:  # tang.min: b where b < a, else a
        return sp.Piecewise((b, b < a), (a, True))

    def piecewise_max(a: Any, b: Any) -> Any:  # tang.max: b where a < b, else a
        return sp.Piecewise((b, a < b), (a, True))

    table: dict[str, Callable[..., Any]] = {
        "add": operator.add,
        "sub": operator.sub,
        "mul": operator.mul,
        "div": operator.truediv,
        "neg": operator.neg,
        "square": lambda a: a**2,
        "cube": lambda a: a**3,
        "inverse_square": lambda a: a**-2,
        "pow_1.5": lambda a: a ** sp.Rational(3, 2),
        "pow": lambda a, b: a**b,
        "sin": sp.sin,
        "cos": sp.cos,
        "tan": sp.tan,
        "exp": sp.exp,
        "log": sp.log,
        "sqrt": sp.sqrt,
        "tanh": sp.tanh,
        "sigmoid": lambda a: 1 / (1 + sp.exp(-a)),
        "abs": lambda a: sp.Piecewise((-a, a < 0), (a, True)),
        "atan2": sp.atan2,
        "min": piecewise_min,
        "max": piecewise_max,
        "where": lambda a, b, c, d: sp.Piecewise((c, a < b), (d, True)),
        **{f"const {c}": (lambda c=c: sp.Float(c)) for c in CONSTANTS},
        **{f"scale {c}": (lambda a, c=c: a * sp.Float(c)) for c in CONSTANTS},
    }
    pool = list(symbols)
    for op, args in steps:
        pool.append(table[op](*(pool[i] for i in args)))
    return pool[-1]


def all_finite(graph: tang.Graph, point: Sequence[float]) -> bool:
    """Whether every number the graph computes at ``point`` is finite (no nan, no inf)."""
    values = dict(zip(graph.inputs, point, strict=True))
    nodes = [n for n in graph.nodes() if not n.is_bool]
    return all(math.isfinite(v) for v in tang.Graph(graph.inputs, nodes).eval(values))


def largest_magnitude(graph: tang.Graph, point: Sequence[float]) -> float:
    """The largest |number| the graph computes at ``point`` (at least 1): rounding errors
    scale with it where large terms cancel to a small result."""
    values = dict(zip(graph.inputs, point, strict=True))
    nodes = [n for n in graph.nodes() if not n.is_bool]
    return max([1.0, *map(abs, tang.Graph(graph.inputs, nodes).eval(values))])


def on_atan2_branch_cut(graph: tang.Graph, point: Sequence[float]) -> bool:
    """Whether an atan2 in the graph gets y = ±0 with x < 0, where IEEE's signed zero picks
    ±π and sympy, which has no signed zero, always π: the two disagree by design there."""
    atans = [n for n in graph.nodes() if n.op == "atan2"]
    if not atans:
        return False
    values = dict(zip(graph.inputs, point, strict=True))
    args = tang.Graph(graph.inputs, [a for n in atans for a in n.args]).eval(values)
    return any(y == 0.0 and x < 0.0 for y, x in zip(args[::2], args[1::2], strict=True))


def describe(steps: Sequence[Step]) -> str:
    """The program as text, for failure messages."""
    out = tang.trace(lambda *v: run(steps, v), list(VARIABLES)).outputs[0]
    return tang.to_text(out)
