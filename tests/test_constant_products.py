"""No printed kernel multiplies two constants in a row: random mixes of exp, log, products
and sums, with their gradients, printed for all eight backends.

exp and log are primitives (every backend has them), so ``exp(log x)`` is not
``2**(log2 e · (ln 2 · log2 x))``; the gradient keeps a product's constant factor outermost
and multiplies two of them when it builds the product. The text the generator writes never
multiplies two constants itself (``3*(5*x)`` prints as written: folding it would change its
rounding), nor adds a term to itself (``u + u`` is ``2·u``, an exact rule; ``0.5*(u + u)``
then stays ``0.5·(2·u)``, since ``u`` itself is not the same float where ``2·u`` overflows:
``test_doubled_terms_fold_only_where_exact``). The values still match the same function
written with Python's math (generated beside the text: no text is evaluated as Python), and
the gradient matches central differences.
"""

from __future__ import annotations

import math
import re

import toolchains as tc
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tang.compile import compile_function, function_graph
from tang.expr import graph as g
from tang.expr.graph import topo_order
from tang.expr.simplify import simplify
from tang.lower import BACKENDS

POINTS = [(0.7, 1.3), (1.9, 0.45), (2.6, 3.1)]
CONSTANTS = st.sampled_from(["0.5", "2", "3", "1.5", "0.25", "7", "0.1"])

# a float literal as any backend spells it (1.0, 2.5e-3, 0.6931472f), not a digit of t0
LITERAL = r"(?<![\w.])\d+(?:\.\d*)?(?:e[-+]?\d+)?f?(?![\w.(])"
# c·(d·…), c·d and c·(… · d) and (d · …)·c: two constant factors of one product (a
# parenthesised group counts only when it is itself one product: c·(d·x + y) is a sum)
TWO_CONSTANTS = [
    re.compile(rf"{LITERAL} \* (\(){LITERAL} \*"),
    re.compile(rf"{LITERAL} \* {LITERAL}"),
    re.compile(rf"{LITERAL} \* (\()[^()]* \* {LITERAL}\)"),
    re.compile(rf"(\(){LITERAL} \* [^()]*\) \* {LITERAL}"),
]


# Each expression comes as (text, value): the text tang parses, and the same function written
# with Python's math, the oracle (so no text is ever evaluated as Python).
VARIABLES = st.sampled_from([("x", lambda x, y: x), ("y", lambda x, y: y)])


def _call(name: str, fn):
    return lambda e: (f"{name}({e[0]})", lambda x, y: fn(e[1](x, y)))


def _atoms(children):
    """What a constant may scale: a variable, a call or a parenthesized sum (never a
    product or a constant, so the text itself never multiplies two constants)."""
    return st.one_of(
        VARIABLES,
        children.map(_call("exp", math.exp)),
        children.map(_call("log", math.log)),
        st.tuples(children, children).map(
            lambda p: (f"({p[0][0]} + {p[1][0]})", lambda x, y: p[0][1](x, y) + p[1][1](x, y))
        ),
    )


def _expression(children):
    atom = _atoms(children)
    return st.one_of(
        atom,
        st.tuples(CONSTANTS, atom).map(
            lambda p: (f"{p[0]}*{p[1][0]}", lambda x, y: float(p[0]) * p[1][1](x, y))
        ),
        st.tuples(children, children).map(
            lambda p: (f"({p[0][0]})*({p[1][0]})", lambda x, y: p[0][1](x, y) * p[1][1](x, y))
        ),
        st.tuples(children, CONSTANTS).map(
            lambda p: (f"({p[0][0]} + {p[1]})", lambda x, y: p[0][1](x, y) + float(p[1]))
        ),
    )


EXPRESSIONS = st.recursive(VARIABLES, _expression, max_leaves=12)


def constant_products(source: str) -> list[str]:
    """The spots in ``source`` where one product has two constant factors."""
    return [
        m.group(0)
        for pattern in TWO_CONSTANTS
        for m in pattern.finditer(source)
        if pattern.groups == 0 or _one_product(source, m.start(1))
    ]


def _one_product(source: str, open_at: int) -> bool:
    """Whether the group opened at ``source[open_at]`` is one product: no + or − outside
    the parentheses nested in it."""
    depth = 0
    for k in range(open_at, len(source)):
        depth += (source[k] == "(") - (source[k] == ")")
        if depth == 0:
            return True
        if depth == 1 and source[k : k + 3] in (" + ", " - "):
            return False
    return True


def test_a_sum_in_parentheses_is_not_a_product_of_constants() -> None:
    assert constant_products("0.5f * (0.5f * x + t0)") == []
    assert constant_products("(2.0 * x - y) * 0.5") == []
    assert constant_products("0.5f * (0.5f * exp(x + y))") == ["0.5f * (0.5f *"]
    assert constant_products("(2.0 * x) * 0.5") == ["(2.0 * x) * 0.5"]


def _python_value(fn, x: float, y: float) -> float | None:
    """The oracle's value (None where math refuses: log of x ≤ 0, overflow)."""
    try:
        return fn(x, y)
    except (ValueError, OverflowError, ZeroDivisionError):
        return None


def _central(fn, x: float, y: float, k: int) -> float | None:
    """∂/∂(input k) by central differences, None where two step sizes disagree (a point
    too ill-conditioned to judge)."""
    estimates = []
    for h in (1e-5, 5e-6):
        dx, dy = (h, 0.0) if k == 0 else (0.0, h)
        hi, lo = _python_value(fn, x + dx, y + dy), _python_value(fn, x - dx, y - dy)
        if hi is None or lo is None:
            return None
        estimates.append((hi - lo) / (2 * h))
    a, b = estimates
    return a if math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6) else None


def test_the_issue_s_mix_prints_no_product_of_constants():
    """The editor's ``exp``/``log`` mix printed ``1.442695f * (0.6931472f * t2)``."""
    compiled = compile_function("exp(log(x)) + log(x)*y + 3*exp(5*x) + 2*log(y)")
    for name in BACKENDS:
        source = compiled.kernel(name).source
        assert constant_products(source) == [], (name, source)
        assert "1.44269" not in source and "0.693147" not in source, (name, source)


def test_the_check_finds_constant_products_in_each_spelling():
    """The patterns are live: each spelling of c·d in one product is found."""
    for source in (
        "t = 1.442695f * (0.6931472f * t2);",
        "t = 2.0 * 3.0;",
        "t = 2.5 * (x * 3.0);",
        "t = (3.0 * x) * 2.0;",
        "t = 1.5e-3 * (2.0 * y * t0);",
    ):
        assert constant_products(source), source
    assert constant_products("t = 2.0 * t1 + 3.0 * (x * t2); u = t10 * 2.0f") == []


def test_doubled_terms_fold_only_where_exact():
    """c·(u + u) = c·(2·u) is (2c)·u, the same float for every u, when |c| ≥ 1; for
    |c| < 1 it is not (u = 1e308: 0.5·(2·u) is inf), so that one stays."""
    x = g.var("x")
    assert simplify(3.0 * (x + x), assume_finite=False) is x * 6.0
    assert simplify((x + x) * -4.0, assume_finite=False) is x * -8.0
    assert simplify(0.5 * (x + x), assume_finite=False) is 0.5 * (x * 2.0)
    assert simplify(2.0 * (3.0 * x), assume_finite=False) is 2.0 * (3.0 * x)  # 3x may round
    assert g.evaluate([0.5 * (x * 2.0)], {"x": 1e308}) == [math.inf]


def _doubles_a_term(text: str) -> bool:
    return any(n.op == "add" and n.args[0] is n.args[1] for n in function_graph(text).nodes())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRESSIONS)
def test_random_exp_log_mixes_print_no_product_of_constants(expression):
    text, fn = expression
    assume(not _doubles_a_term(f"f(x, y) = {text}"))
    compiled = compile_function(f"f(x, y) = {text}")
    for node in topo_order(list(compiled.graph.outputs)):  # the graph every backend prints
        if node.op == "mul":
            a, b = node.args
            consts = [n for n in (a, b) if n.op == "const"]
            inner = [n for n in (a, b) if n.op == "mul" and "const" in (m.op for m in n.args)]
            assert not (consts and inner), (text, node)
    for name in BACKENDS:
        source = compiled.kernel(name).source
        assert constant_products(source) == [], (text, name, source)
    # the printed Python kernel, run: the value as Python computes the text, the gradient
    # as central differences estimate it
    kernel = compiled.kernel("python").source
    for x, y in POINTS:
        expected = _python_value(fn, x, y)
        if expected is None or not math.isfinite(expected) or abs(expected) > 1e12:
            continue
        out = tc.run_python_kernel(kernel, compiled.entry, [x, y], 1, 3)
        assert math.isclose(out[0], expected, rel_tol=1e-12, abs_tol=1e-300), (text, x, y)
        # a central difference of f carries f's own rounding, |f|·2⁻⁵³ / h: allow it
        rounding = 1e-9 * abs(expected)
        for k in (0, 1):
            slope = _central(fn, x, y, k)
            if slope is not None:
                assert math.isclose(out[1 + k], slope, rel_tol=1e-4, abs_tol=1e-6 + rounding), (
                    text,
                    k,
                    out,
                    slope,
                )
