"""Bridge to sympy (optional): tang graphs → sympy expressions and back.

sympy is imported inside the functions, so tang imports without it. Both walks keep an
explicit stack (no recursion on expression depth), though sympy itself recurses when it
builds or hashes very deep expressions. Primitives map one to one; exp2 is
``2**a``, log2 is ``log(a, 2)``, select is ``Piecewise``. From sympy, exp/log/cos/tan/tanh
/Abs/Min/Max become tang's rich functions, which decompose into the primitives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from . import graph as g
from .graph import Node, topo_order


def _sympy() -> Any:
    try:
        import sympy
    except ImportError:  # pragma: no cover - depends on the environment
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
    rules: dict[str, Callable[..., Any]] = {
        "add": lambda a, b: a + b,
        "mul": lambda a, b: a * b,
        "neg": lambda a: -a,
        "recip": lambda a: 1 / a,
        "sqrt": sp.sqrt,
        "sin": sp.sin,
        "exp2": lambda a: sp.Integer(2) ** a,
        "log2": lambda a: sp.log(a, 2),
        "atan2": sp.atan2,
        "lt": sp.Lt,
        "le": sp.Le,
        "eq": lambda a, b: sp.Eq(a, b, evaluate=True),
        "select": lambda c, a, b: sp.Piecewise((a, c), (b, True)),
    }
    done: dict[int, Any] = {}
    for node in topo_order(outputs):
        if node.op == "const":
            done[id(node)] = _sympy_number(sp, node.value)  # type: ignore[arg-type]
        elif node.op == "var":
            done[id(node)] = sp.Symbol(node.name, real=real)
        else:
            done[id(node)] = rules[node.op](*(done[id(a)] for a in node.args))
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

# sympy function class name -> how to build it from converted arguments
_FUNCTIONS: dict[str, Callable[..., Node]] = {
    "sin": g.sin,
    "cos": lambda a: g.as_node(a).cos(),
    "tan": lambda a: g.as_node(a).tan(),
    "exp": lambda a: g.as_node(a).exp(),
    "tanh": lambda a: g.as_node(a).tanh(),
    "atan2": g.atan2,
    "atan": lambda a: g.atan2(a, 1.0),
    "asin": lambda a: g.atan2(a, g.sqrt(1.0 - a * a)),
    "acos": lambda a: g.atan2(g.sqrt(1.0 - a * a), a),
    "sinh": lambda a: (g.as_node(a).exp() - (-a).exp()) * 0.5,
    "cosh": lambda a: (g.as_node(a).exp() + (-a).exp()) * 0.5,
    "Abs": g.abs_,
    "Min": lambda *a: _fold(g.minimum, a),
    "Max": lambda *a: _fold(g.maximum, a),
}
_RELATIONS: dict[str, Callable[[Node, Node], Node | bool]] = {
    "StrictLessThan": g.lt,
    "LessThan": g.le,
    "StrictGreaterThan": lambda a, b: g.lt(b, a),
    "GreaterThan": lambda a, b: g.le(b, a),
    "Equality": g.eq,
}


def _fold(fn: Callable[[Node, Node], Node], args: tuple[Node, ...]) -> Node:
    result = args[0]
    for a in args[1:]:
        result = fn(result, a)
    return result


class _Condition:
    """A converted sympy boolean: ``all_of`` / ``any_of`` lists of (comparison, negated)."""

    __slots__ = ("kind", "terms")

    def __init__(self, kind: str, terms: list[tuple[Node | bool, bool]]) -> None:
        self.kind, self.terms = kind, terms


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
        return _Condition("all", [(bool(e), False)])
    if e.is_Symbol:
        return g.var(e.name)
    if e.is_Atom:  # numbers and constants (pi, E, oo, nan, …)
        return g.const(_float(sp, e))
    name = type(e).__name__
    if e.is_Add:
        return _fold(g.add, tuple(args))
    if e.is_Mul:
        args = _log2_factor(sp, e, args)
        if e.args[0] == -1:  # -a is Mul(-1, a) in sympy
            return g.neg(_fold(g.mul, tuple(args[1:])))
        return _fold(g.mul, tuple(args))
    if e.is_Pow:
        return _power(sp, e, args)
    if name == "log":
        return g.as_node(args[0]).log() if len(args) == 1 else _log_base(args)
    if name in _FUNCTIONS:
        return _FUNCTIONS[name](*args)
    if name in _RELATIONS:
        return _Condition("all", [(_RELATIONS[name](*args), False)])
    if name == "Unequality":
        return _Condition("all", [(g.eq(*args), True)])
    if name in ("And", "Or"):
        terms = []
        for c in args:
            if len(c.terms) != 1:
                raise ValueError(f"nested And/Or in {e} is not supported")
            terms.extend(c.terms)
        return _Condition("all" if name == "And" else "any", terms)
    if name == "Not":
        (c,) = args
        if len(c.terms) != 1:
            raise ValueError(f"Not of And/Or in {e} is not supported")
        cond, negated = c.terms[0]
        return _Condition("all", [(cond, not negated)])
    if name == "ExprCondPair":
        return tuple(args)
    if name == "Piecewise":
        return _piecewise(args)
    if isinstance(e, sp.Expr) and all(isinstance(a, Node) and a.op == "const" for a in args):
        return g.const(_float(sp, e))  # a function tang lacks, of constants: its value
    raise ValueError(f"sympy's {name} ({e}) has no tang equivalent")


def _float(sp: Any, e: Any) -> float:
    if e is sp.nan or e is sp.zoo:
        return math.nan
    try:
        return float(e)
    except TypeError:
        raise ValueError(f"{e} is not a real number") from None


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
        if type(f).__name__ == "log" and len(f.args) == 1:
            ln = args[j]  # converted as log2(u) * LN2
            log2_u = next(a for a in ln.args if a.op == "log2")
            return [a for i, a in enumerate(args) if i not in (j, k)] + [log2_u]
    return args


def _log_base(args: list[Node]) -> Node:
    x, base = args
    if base.op == "const" and base.value == 2.0:
        return g.log2(x)
    return g.div(x.log(), base.log())


def _branch(cond: _Condition, a: Node, b: Node) -> Node:
    """``a`` where ``cond`` holds, else ``b``, as nested selects (no recursion)."""
    result = a if cond.kind == "all" else b
    for test, negated in reversed(cond.terms):
        hit, miss = (b, result) if negated else (result, b)
        if cond.kind == "any":
            hit, miss = (result, a) if negated else (a, result)
        result = g.select(test, hit, miss)
    return result


def _piecewise(pairs: list[tuple[Node, _Condition]]) -> Node:
    result: Node = g.const(math.nan)  # undefined where no condition holds
    for value, cond in reversed(pairs):
        result = _branch(cond, value, result)
    return result
