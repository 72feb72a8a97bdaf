"""The op registry: every primitive of the graph declared once, with all it means, and
every composite (tan, sigmoid, abs, pow, min, max: functions of tang's text that are
formulas over the primitives) as its formula and float kernel (``COMPOSITES``, at the end).

An entry says how many operands the op takes, its float kernel (IEEE: inf and nan where
``math`` would raise), its reverse-mode derivative, its name in tang's text and in the
backends' math libraries, and how people read it: the label drawn in a graph node, the
formula of a figure row and the forward-mode (ε) rule in words. The graph, the gradient,
the text printer, the parser's round trip, the sympy and numpy bridges, every printer and
the page's figures read their per-op facts from here, and ``tests/test_op_registry.py``
checks the tables that cannot be derived (printer templates, Dual's methods) against it.

This module imports only ``tang.ieee``: it sits below every other part of tang.

A derivative rule is ``vjp(d, g, out, *operands) -> (contribution per operand)``: ``g`` is
the adjoint of the node ``out``, ``d`` the derivative kit of ``tang.expr.grad`` (the graph
constructors ``d.add``, ``d.mul``, … and the folding ``d.times`` (g·x without ·1) and
``d.negate`` (-x without --)), and None stands for no contribution (a comparison, a
select's condition).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import ieee

LOG2E = 1.4426950408889634  # 1/ln 2
LN2 = 0.6931471805599453
HALF_PI = 1.5707963267948966


@dataclass(frozen=True)
class Primitive:
    """One graph operation and everything each layer needs to know about it."""

    name: str
    arity: int
    kernel: Callable[..., Any] | None  # the float implementation (None for leaves)
    vjp: Callable[..., tuple[Any, ...]] | None  # reverse mode: see the module docstring
    label: str  # drawn in the editor's graph node (leaves draw their value or name)
    spelling: str  # a figure row's formula over its operands' names {0}, {1}, …
    epsilon: str  # the forward-mode rule for the ε part, in words (the page's dual table)
    call: str | None = None  # its function name in tang's text (None: printed as an operator)
    library: bool = False  # a math-library function of the same name in every backend
    sympy: Callable[..., Any] | None = None  # (sympy module, *operands) -> sympy expression
    # numpy's function of that name called on the operands (a ufunc, mostly), or a
    # (numpy module, *operands) -> array rule
    numpy: str | Callable[..., Any] | None = None
    commutative: bool = False
    boolean: bool = False  # a comparison: its value is a bool, usable only as a condition
    # an integer op (bits, shifts, a remainder): defined on whole numbers, printed only in
    # a backend's integer types (``Printer.int_dtypes``), outside the editor's language
    integer: bool = False
    # its time may depend on its operands' values (a divide, a math-library call): the
    # taint pass (tang.tensor.passes.taint) refuses it on secret data
    variable_time: bool = False
    infix: str | None = None  # a comparison's operator in tang's text (" < "), else None

    @property
    def leaf(self) -> bool:
        return self.arity == 0

    def numpy_rule(self, np: Any) -> Callable[..., Any]:
        """This op over arrays of the module ``np``: its function itself (a ufunc takes
        ``out=``), or the registry's rule with ``np`` bound."""
        if isinstance(self.numpy, str):
            return getattr(np, self.numpy)
        if self.numpy is None:
            raise ValueError(f"{self.name} has no numpy spelling")
        return functools.partial(self.numpy, np)


def _atan2_vjp(d: Any, g: Any, out: Any, y: Any, x: Any) -> tuple[Any, Any]:
    scale = d.times(g, d.recip(d.add(d.mul(x, x), d.mul(y, y))))  # g / (x² + y²)
    return d.times(scale, x), d.negate(d.times(scale, y))


def _no_derivative(d: Any, g: Any, out: Any, a: Any, b: Any) -> tuple[None, None]:
    return None, None


def _whole(fn: Callable[[int, int], int]) -> Callable[[float, float], float]:
    """An integer op's kernel over the whole numbers a graph holds as floats (exact below
    2**53, which integer graphs stay under)."""
    return lambda a, b: float(fn(int(a), int(b)))


def _whole_numpy(fn: str) -> Callable[..., Any]:
    """The same over numpy arrays: as int64, back to the operands' float type."""

    def numpy(np: Any, a: Any, b: Any) -> Any:
        out = getattr(np, fn)(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64))
        return out.astype(np.result_type(a, b, np.float64))

    return numpy


def _integer(
    name: str, fn: Callable[[int, int], int], numpy: str, label: str, *, slow: bool = False
) -> Primitive:
    """An integer primitive: flat (no derivative), printed ``a <label> b``."""
    return Primitive(
        name,
        2,
        _whole(fn),
        _no_derivative,
        label,
        f"{{0}} {label} {{1}}",
        "an integer op: no ε",
        call=name,
        sympy=lambda sp, a, b: sp.Function(name)(a, b),
        numpy=_whole_numpy(numpy),
        commutative=numpy.startswith("bitwise"),
        integer=True,
        variable_time=slow,
    )


def _relation(sp: Any, relation: str) -> Callable[..., Any]:
    """A comparison with nan is false in tang (IEEE); sympy refuses to build one."""
    return lambda a, b: sp.false if a is sp.nan or b is sp.nan else getattr(sp, relation)(a, b)


_REGISTRY: tuple[Primitive, ...] = (
    Primitive("const", 0, None, None, "", "", "a constant: ε = 0"),
    Primitive("var", 0, None, None, "", "", "seed: dx = 1"),
    Primitive(
        "add",
        2,
        lambda a, b: a + b,
        lambda d, g, out, a, b: (g, g),
        "+",
        "{0} + {1}",
        "da + db",
        sympy=lambda sp, a, b: a + b,
        numpy="add",
        commutative=True,
    ),
    Primitive(
        "mul",
        2,
        ieee.mul,
        lambda d, g, out, a, b: (d.times(g, b), d.times(g, a)),
        "×",
        "{0} · {1}",
        "da·b + a·db",
        sympy=lambda sp, a, b: a * b,
        numpy="multiply",
        commutative=True,
    ),
    Primitive(
        "neg",
        1,
        lambda a: -a,
        lambda d, g, out, a: (d.negate(g),),
        "−",
        "−{0}",
        "−da",
        sympy=lambda sp, a: -a,
        numpy="negative",
    ),
    Primitive(
        "recip",
        1,
        ieee.recip,
        lambda d, g, out, a: (d.negate(d.times(g, d.mul(out, out))),),  # (1/a)' = -1/a²
        "1/x",
        "1 / {0}",
        "−da / a²",
        call="recip",
        sympy=lambda sp, a: 1 / a,
        numpy=lambda np, a: np.divide(1.0, a),  # (np.reciprocal is slower here)
        variable_time=True,
    ),
    Primitive(
        "sqrt",
        1,
        ieee.sqrt,
        lambda d, g, out, a: (d.times(g, d.mul(d.recip(out), 0.5)),),  # √a' = 1/(2√a)
        "√",
        "√{0}",
        "da / (2√a)",
        call="sqrt",
        library=True,
        sympy=lambda sp, a: sp.sqrt(a),
        numpy="sqrt",
        variable_time=True,
    ),
    Primitive(
        "sin",
        1,
        ieee.sin,
        lambda d, g, out, a: (d.times(g, d.cos(a)),),  # sin' = cos
        "sin",
        "sin {0}",
        "da · cos a",
        call="sin",
        library=True,
        sympy=lambda sp, a: sp.sin(a),
        numpy="sin",
        variable_time=True,
    ),
    Primitive(
        "cos",
        1,
        ieee.cos,
        lambda d, g, out, a: (d.negate(d.times(g, d.sin(a))),),  # cos' = -sin
        "cos",
        "cos {0}",
        "−da · sin a",
        call="cos",
        library=True,
        sympy=lambda sp, a: sp.cos(a),
        numpy="cos",
        variable_time=True,
    ),
    # exp and log are primitives, not exp2/log2 arithmetic: every backend has them, and
    # as e**a = 2**(a·log2 e) they would leave run-time products of constants in every
    # kernel (exp(log x) as 2**(log2 e · (ln 2 · log2 x))) and in every derivative.
    Primitive(
        "exp",
        1,
        ieee.exp,
        lambda d, g, out, a: (d.times(g, out),),  # exp' = exp
        "exp",
        "e^{0}",
        "da · e^a",
        call="exp",
        library=True,
        sympy=lambda sp, a: sp.exp(a),
        numpy="exp",
        variable_time=True,
    ),
    Primitive(
        "log",
        1,
        ieee.log,
        lambda d, g, out, a: (d.times(g, d.recip(a)),),  # log' = 1/a
        "log",
        "ln {0}",
        "da / a",
        call="log",
        library=True,
        sympy=lambda sp, a: sp.log(a),
        numpy="log",
        variable_time=True,
    ),
    Primitive(
        "exp2",
        1,
        ieee.exp2,
        lambda d, g, out, a: (d.times(g, d.mul(out, LN2)),),  # (2^a)' = 2^a ln 2
        "exp2",
        "2^{0}",
        "da · 2^a · ln 2",
        call="exp2",
        library=True,
        sympy=lambda sp, a: sp.Integer(2) ** a,
        numpy="exp2",
        variable_time=True,
    ),
    Primitive(
        "log2",
        1,
        ieee.log2,
        lambda d, g, out, a: (d.times(g, d.mul(d.recip(a), LOG2E)),),  # log2' = 1/(a ln 2)
        "log2",
        "log₂ {0}",
        "da / (a · ln 2)",
        call="log2",
        library=True,
        sympy=lambda sp, a: sp.log(a, 2),
        numpy="log2",
        variable_time=True,
    ),
    # tanh is a primitive, not exp2 arithmetic: every backend has it, its derivative is
    # 1 - t² of its own output, and no short formula is accurate near 0 without an expm1.
    Primitive(
        "tanh",
        1,
        math.tanh,
        lambda d, g, out, a: (d.times(g, d.add(1.0, d.neg(d.mul(out, out)))),),  # 1 - tanh²
        "tanh",
        "tanh {0}",
        "da · (1 − tanh² a)",
        call="tanh",
        library=True,
        sympy=lambda sp, a: sp.tanh(a),
        numpy="tanh",
        variable_time=True,
    ),
    # floor: the largest whole number ≤ a; its derivative is 0 wherever it has one. Whole
    # numbers below 2**24 are exact in f32, so floor unpacks small integers packed into one
    # f32 value (quantized weights: several 4-bit codes per word) on every backend.
    Primitive(
        "floor",
        1,
        ieee.floor,
        lambda d, g, out, a: (None,),
        "⌊x⌋",
        "⌊{0}⌋",
        "0 (flat between the whole numbers)",
        call="floor",
        library=True,
        sympy=lambda sp, a: sp.floor(a),
        numpy="floor",
    ),
    Primitive(
        "atan2",
        2,
        ieee.atan2,
        _atan2_vjp,  # ∂/∂y = x/(x²+y²), ∂/∂x = -y/(x²+y²)
        "atan2",
        "atan2({0}, {1})",
        "(da·b − a·db) / (a² + b²)",
        call="atan2",
        library=True,
        sympy=lambda sp, y, x: sp.atan2(y, x),
        numpy="arctan2",
        variable_time=True,
    ),
    Primitive(
        "lt",
        2,
        lambda a, b: a < b,
        _no_derivative,
        "<",
        "{0} < {1}",
        "a comparison: no ε",
        sympy=lambda sp, a, b: _relation(sp, "Lt")(a, b),
        infix=" < ",
        numpy="less",
        boolean=True,
    ),
    Primitive(
        "le",
        2,
        lambda a, b: a <= b,
        _no_derivative,
        "≤",
        "{0} ≤ {1}",
        "a comparison: no ε",
        sympy=lambda sp, a, b: _relation(sp, "Le")(a, b),
        infix=" <= ",
        numpy="less_equal",
        boolean=True,
    ),
    Primitive(
        "eq",
        2,
        lambda a, b: a == b,
        _no_derivative,
        "=",
        "{0} = {1}",
        "a comparison: no ε",
        sympy=lambda sp, a, b: _relation(sp, "Eq")(a, b),
        infix=" == ",
        numpy="equal",
        commutative=True,
        boolean=True,
    ),
    Primitive(
        "select",
        3,
        lambda c, a, b: a if c else b,
        lambda d, g, out, c, a, b: (None, d.select(c, g, 0.0), d.select(c, 0.0, g)),
        "?:",
        "{0} ? {1} : {2}",
        "the ε of the branch taken",
        call="where",
        sympy=lambda sp, c, a, b: sp.Piecewise((a, c), (b, True)),
        numpy="where",
    ),
    # integers (tang.crypto's arithmetic mod q): bits, shifts by a count 0 to 62 (a right
    # shift rounds down, as an arithmetic shift does), and the remainder of a division,
    # which takes the divisor's sign (Python's %) and whose time depends on its operands
    _integer("bitand", lambda a, b: a & b, "bitwise_and", "&"),
    _integer("bitor", lambda a, b: a | b, "bitwise_or", "|"),
    _integer("bitxor", lambda a, b: a ^ b, "bitwise_xor", "^"),
    _integer("shl", lambda a, b: a << b, "left_shift", "<<"),
    _integer("shr", lambda a, b: a >> b, "right_shift", ">>"),
    _integer("mod", lambda a, b: a % b, "remainder", "mod", slow=True),
)

OPS: dict[str, Primitive] = {p.name: p for p in _REGISTRY}
OPERATIONS: tuple[str, ...] = tuple(p.name for p in _REGISTRY if not p.leaf)
BOOL_OPS = frozenset(p.name for p in _REGISTRY if p.boolean)
COMMUTATIVE = frozenset(p.name for p in _REGISTRY if p.commutative)
# op -> its function name in tang's text, for the ops printed as calls
CALLS: dict[str, str] = {p.name: p.call for p in _REGISTRY if p.call}
# math-library functions every backend spells as a call: name -> arity
LIBRARY: dict[str, int] = {p.name: p.arity for p in _REGISTRY if p.library}
LABELS: dict[str, str] = {p.name: p.label for p in _REGISTRY if not p.leaf}
SPELLING: dict[str, str] = {p.name: p.spelling for p in _REGISTRY if not p.leaf}
EPSILON_RULE: dict[str, str] = {p.name: p.epsilon for p in _REGISTRY}
INTEGER_OPS = frozenset(p.name for p in _REGISTRY if p.integer)
VARIABLE_TIME = frozenset(p.name for p in _REGISTRY if p.variable_time)
INFIX: dict[str, str] = {p.name: p.infix for p in _REGISTRY if p.infix}


# ---------------------------------------------------------------------------------------
# composites: functions of tang's text that are formulas over the primitives


def _tan(a: float) -> float:
    return math.tan(a) if math.isfinite(a) else math.nan


def _sigmoid(a: float) -> float:
    if a >= 0.0:
        return 1.0 / (1.0 + ieee.exp(-a))
    e = ieee.exp(a)  # stable for large negative a, and nan passes through
    return e / (1.0 + e)


def _sigmoid_formula(k: Any, a: Any) -> Any:
    """σ(a) = where(a < 0, e, 1) / (1 + e) with e = exp(−|a|) ≤ 1: the graph form of
    ``_sigmoid``. No step overflows, so the derived slope e/(1 + e)² is finite for every
    a, where 1/(1 + exp(−a)) gives inf·0 = nan below −709."""
    negative = k.lt(a, 0.0)
    e = k.exp(k.where(negative, a, -a))
    return k.where(negative, e, 1.0) * k.recip(1.0 + e)


def _pow(a: float, b: float) -> float:
    """C99 pow: overflow is ±inf, 0 to a negative power is ±inf, a negative base to a
    non-integer power is nan."""
    a, b = float(a), float(b)
    try:
        return math.pow(a, b)
    except OverflowError:
        odd = b == int(b) and int(b) % 2 == 1
        return -math.inf if (a < 0.0 and odd) else math.inf
    except ValueError:
        if a == 0.0:  # 0 ** negative
            odd = b == int(b) and int(b) % 2 == 1
            return math.copysign(math.inf, a) if odd else math.inf
        return math.nan


@dataclass(frozen=True)
class Composite:
    """A function of tang's text that is no op of its own: a graph holds its ``formula``
    over the primitives, so the gradient, the simplifier and every printer need nothing
    more. Plain numbers get ``kernel``; a number type with a method called ``method`` (Dual:
    its own, faster rule) gets that; any other type the formula.

    ``formula(k, *operands)`` is written with Python's operators and the kit ``k`` (``k.sin``,
    ``k.exp``, ``k.recip``, ``k.lt``, ``k.where``, …), which is the graph's constructors
    when building nodes and tang's generic math otherwise. ``slope(v)``, when given, is the
    derivative in terms of the value ``v`` (tan' = 1 + tan²): Dual's method uses it."""

    name: str
    arity: int
    kernel: Callable[..., Any]
    formula: Callable[..., Any]
    doc: str
    method: str | None = None
    slope: Callable[[Any], Any] | None = None
    variadic: bool = False  # min/max: tang's text folds two or more arguments


def _extremum(name: str, *, larger: bool) -> Composite:
    """min or max: b where it is smaller (larger) than a, else a, so a when either is nan,
    like Python's."""

    def kernel(a: float, b: float) -> float:
        return b if (a < b if larger else b < a) else a

    def formula(k: Any, a: Any, b: Any) -> Any:
        return k.where(k.lt(a, b) if larger else k.lt(b, a), b, a)

    word = "larger" if larger else "smaller"
    doc = f"The {word} of a and b (a when either is nan, like Python's {name})."
    return Composite(name, 2, kernel, formula, doc, variadic=True)


_COMPOSITES: tuple[Composite, ...] = (
    Composite(
        "tan",
        1,
        _tan,
        lambda k, a: k.sin(a) / k.cos(a),
        "Tangent (nan for ±inf).",
        method="tan",
        slope=lambda v: 1.0 + v * v,  # tan' = 1 + tan²
    ),
    Composite(
        "sigmoid",
        1,
        _sigmoid,
        _sigmoid_formula,
        "Logistic function 1/(1+e**-a).",
        method="sigmoid",
        slope=lambda v: v * (1.0 - v),  # σ' = σ(1 - σ)
    ),
    Composite(
        "abs",
        1,
        abs,
        lambda k, a: k.where(k.lt(a, 0.0), -a, a),
        "|a|; the slope at 0 is +1 on every number type (the select picks a there).",
        method="__abs__",
    ),
    Composite(
        "pow",
        2,
        _pow,
        lambda k, a, b: a**b,  # each number type's own **: the graph's makes x**3 products
        "a**b; plain numbers follow C99 pow (nan for a negative base to a non-integer "
        "power, never a complex number or an exception).",
    ),
    _extremum("min", larger=False),
    _extremum("max", larger=True),
)

COMPOSITES: dict[str, Composite] = {c.name: c for c in _COMPOSITES}
