"""Bridge to sympy (optional): tang graphs → sympy expressions and back.

sympy is imported inside the functions, so tang imports without it. Both walks keep an
explicit stack (no recursion on expression depth), though sympy itself recurses when it
builds or hashes very deep expressions. Primitives map one to one, each by its entry in the
op registry (``tang.expr.ops``): exp2 is ``2**a``, log2
is ``log(a, 2)``, select is ``Piecewise``; a comparison with nan is ``false`` (as in IEEE).
From sympy, exp/log/cos/tan/tanh/Abs/Min/Max/atan/… become tang's functions, Piecewise
conditions (relations, Ne, Not, And, Or, ITE) become nested selects, and a number that is
not real becomes nan (as tang's sqrt(-1) is).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

from . import graph as g
from .graph import Node, topo_order
from .ops import OPS
from .parse import FUNCTIONS


def _sympy() -> Any:
    try:
        import sympy
    except ImportError:
        raise ImportError(
            "the sympy bridge needs sympy: pip install sympy (tang itself does not)"
        ) from None
    return sympy


# ---------------------------------------------------------------------------------------
# tang → sympy


def to_sympy(item: Node | Iterable[Node], *, real: bool = True) -> Any:
    """A sympy expression for a node (a list of them for several); variables become
    ``Symbol(name, real=real)``."""
    sp = _sympy()
    single = isinstance(item, Node)
    outputs = [item] if single else list(item)  # type: ignore[list-item]
    done: dict[int, Any] = {}
    for node in topo_order(outputs):
        if node.op == "const":
            done[id(node)] = _sympy_number(sp, node.value)  # type: ignore[arg-type]
        elif node.op == "var":
            done[id(node)] = sp.Symbol(node.name, real=real)
        elif node.op in OPS:
            rule = OPS[node.op].sympy
            done[id(node)] = rule(sp, *(done[id(a)] for a in node.args))  # type: ignore[misc]
        else:
            raise ValueError(
                f"a {node.op} node (tang.fori_loop) has no closed sympy form; evaluate or "
                "lower the graph instead, or trace the steps unrolled (a Python for loop)"
            )
    result = [done[id(o)] for o in outputs]
    return result[0] if single else result


def _sympy_number(sp: Any, v: float) -> Any:
    if v != v:
        return sp.nan
    if math.isinf(v):
        return sp.oo if v > 0 else -sp.oo
    if v.is_integer() and abs(v) < 2**53 and not (v == 0 and math.copysign(1, v) < 0):
        return sp.Integer(int(v))
    return sp.Float(v)  # keeps the double exactly


# ---------------------------------------------------------------------------------------
# sympy → tang

# sympy function class name -> the parser's function of the same meaning
_SAME_AS_PARSER = {
    "sin": "sin",
    "floor": "floor",
    "cos": "cos",
    "tan": "tan",
    "exp": "exp",
    "tanh": "tanh",
    "atan2": "atan2",
    "Abs": "abs",
    "Min": "min",
    "Max": "max",
}
# sympy function class name -> how to build it from converted arguments
_FUNCTIONS: dict[str, Callable[..., Node]] = {
    **{name: FUNCTIONS[ours][2] for name, ours in _SAME_AS_PARSER.items()},  # type: ignore[misc]
    "atan": lambda a: g.atan2(a, 1.0),
    "asin": lambda a: g.atan2(a, g.sqrt(1.0 - a * a)),
    "acos": lambda a: g.atan2(g.sqrt(1.0 - a * a), a),
    "sinh": lambda a: (g.as_node(a).exp() - (-a).exp()) * 0.5,
    "cosh": lambda a: (g.as_node(a).exp() + (-a).exp()) * 0.5,
}
_RELATIONS: dict[str, Callable[[Node, Node], Node | bool]] = {
    "StrictLessThan": g.lt,
    "LessThan": g.le,
    "StrictGreaterThan": lambda a, b: g.lt(b, a),
    "GreaterThan": lambda a, b: g.le(b, a),
    "Equality": g.eq,
}


# A converted sympy boolean is a small tree of tuples: ("test", comparison node or bool),
# ("not", c), ("and", (c, …)), ("or", (c, …)), ("ite", c, then, else).
Condition = tuple


def from_sympy(expr: Any) -> Node | list[Node]:
    """The tang node for a sympy expression (a list for a list/tuple of them)."""
    sp = _sympy()
    single = not isinstance(expr, (list, tuple))
    roots = [sp.sympify(e) for e in ([expr] if single else expr)]
    # keyed by id: sympy hashes and compares deep expressions recursively; ids don't
    done: dict[int, Any] = {}
    stack: list[tuple[Any, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        e, expanded = stack.pop()
        if id(e) in done:
            continue
        if not expanded and not e.is_Atom:
            stack.append((e, True))
            stack.extend((a, False) for a in reversed(e.args) if id(a) not in done)
            continue
        done[id(e)] = _convert(sp, e, [done[id(a)] for a in e.args] if expanded else [])
    result = []
    for r in roots:
        value = done[id(r)]
        if not isinstance(value, Node):
            raise ValueError(f"{r} is a condition, not a number: tang graphs hold numbers")
        result.append(value)
    return result[0] if single else result


def _convert(sp: Any, e: Any, args: list[Any]) -> Any:
    """One sympy node from its already converted arguments."""
    if e is sp.true or e is sp.false:
        return ("test", bool(e))
    if e.is_Symbol:
        return g.var(e.name)
    if e.is_Atom:  # numbers and constants (pi, E, oo, nan, …)
        return g.const(_float(sp, e))
    name = type(e).__name__
    if e.is_Add:
        return functools.reduce(g.add, args)
    if e.is_Mul:
        args = _log2_factor(sp, e, args)
        if e.args[0] == -1:  # -a is Mul(-1, a) in sympy
            return g.neg(functools.reduce(g.mul, args[1:]))
        return functools.reduce(g.mul, args)
    if e.is_Pow:
        return _power(sp, e, args)
    if name == "log":
        return g.as_node(args[0]).log() if len(args) == 1 else _log_base(args)
    if name in _FUNCTIONS:
        return _FUNCTIONS[name](*args)
    if name in _RELATIONS:
        return ("test", _RELATIONS[name](*args))
    if name == "Unequality":
        return ("not", ("test", g.eq(*args)))
    if name == "Not":
        return ("not", args[0])
    if name in ("And", "Or"):
        return (name.lower(), tuple(args))
    if name == "ITE":
        return ("ite", *args)
    if name == "ExprCondPair":
        return tuple(args)
    if name == "Piecewise":
        return _piecewise(args)
    if isinstance(e, sp.Expr) and all(isinstance(a, Node) and a.op == "const" for a in args):
        return g.const(_float(sp, e))  # a function tang lacks, of constants: its value
    raise ValueError(f"sympy's {name} ({e}) has no tang equivalent")


def _float(sp: Any, e: Any) -> float:
    """A sympy number as a float; nan for one that is not real (as tang's sqrt(-1) is)."""
    if e is sp.nan or e is sp.zoo:
        return math.nan
    try:
        return float(e)
    except TypeError:  # a complex number
        return math.nan


def _power(sp: Any, e: Any, args: list[Node]) -> Node:
    base, exponent = e.args
    if base == 2:
        return g.exp2(args[1])
    if base is sp.E:
        return args[1].exp()
    if exponent == -1:
        return g.recip(args[0])
    return g.pow(args[0], args[1])


def _log2_factor(sp: Any, e: Any, args: list[Node]) -> list[Node]:
    """sympy writes log(u, 2) as log(u) * (1/log(2)): give that factor back as log2(u)."""
    factors = list(e.args)
    inverse = 1 / sp.log(2)
    if inverse not in factors:
        return args
    k = factors.index(inverse)
    for j, f in enumerate(factors):
        # converted as log(u) (or folded to a constant when u is a number)
        if type(f).__name__ == "log" and len(f.args) == 1 and args[j].op == "log":
            others = [a for i, a in enumerate(args) if i not in (j, k)]
            return [*others, g.log2(args[j].args[0])]
    return args


def _log_base(args: list[Node]) -> Node:
    x, base = args
    if base.op == "const" and base.value == 2.0:
        return g.log2(x)
    return g.div(x.log(), base.log())


def _branch(cond: Condition, a: Node, b: Node) -> Node:
    """``a`` where ``cond`` holds, else ``b``, as nested selects (explicit task stack)."""
    tasks: list[tuple] = [("branch", cond, a, b)]
    out: list[Node] = []
    while tasks:
        task = tasks.pop()
        if task[0] == "branch":
            (kind, *parts), hit, miss = task[1], task[2], task[3]
            if kind == "test":
                out.append(g.select(parts[0], hit, miss))
            elif kind == "not":
                tasks.append(("branch", parts[0], miss, hit))
            elif kind in ("and", "or"):
                first, rest = parts[0][0], parts[0][1:]
                if not rest:
                    tasks.append(("branch", first, hit, miss))
                    continue
                # and: first ? (rest ? hit : miss) : miss    or: first ? hit : (rest ? …)
                tasks.append(("then", kind, first, hit, miss))
                tasks.append(("branch", (kind, rest), hit, miss))
            else:  # ite: c ? (t ? hit : miss) : (f ? hit : miss)
                c, then, other = parts
                tasks.append(("ite", c))
                tasks.append(("branch", other, hit, miss))
                tasks.append(("branch", then, hit, miss))
        elif task[0] == "then":
            _, kind, first, hit, miss = task
            inner = out.pop()
            if kind == "and":
                tasks.append(("branch", first, inner, miss))
            else:
                tasks.append(("branch", first, hit, inner))
        else:
            other, then = out.pop(), out.pop()
            tasks.append(("branch", task[1], then, other))
    return out.pop()


def _piecewise(pairs: list[tuple[Node, Condition]]) -> Node:
    result: Node = g.const(math.nan)  # undefined where no condition holds
    for value, cond in reversed(pairs):
        result = _branch(cond, value, result)
    return result
