"""The safe parser: values, precedence, identities with traced graphs, errors, limits."""

from __future__ import annotations

import math

import pytest

import tang
from tang.expr import graph as g
from tang.expr.parse import (
    LIMITS,
    UNLIMITED,
    Limits,
    ParseError,
    TooDeepError,
    TooLargeError,
    TooLongError,
    parse,
    parse_definition,
    parse_graph,
)

X, Y, Z = 0.7, -1.3, 2.2
POINT = {"x": X, "y": Y, "z": Z}


def value(text: str, **kw) -> float:
    return g.evaluate([parse(text, **kw)], POINT)[0]


# (text, the same thing written in Python over x, y, z)
GOOD = [
    ("x + y * z", X + Y * Z),
    ("(x + y) * z", (X + Y) * Z),
    ("x - y - z", X - Y - Z),
    ("x / y / z", X / Y / Z),
    ("x - (y - z)", X - (Y - Z)),
    ("-x^2", -(X**2)),
    ("-x**2", -(X**2)),
    ("2^3^2", 2.0 ** (3.0**2)),
    ("2**3**2", 2.0 ** (3.0**2)),
    ("2^-1", 0.5),
    ("2^-x*y", 2.0 ** (-X) * Y),
    ("-x*y", -X * Y),
    ("x*-y", X * -Y),
    ("--x", X),
    ("+x", X),
    ("x - -y", X + Y),
    ("1e-3", 1e-3),
    ("1E3 * x", 1e3 * X),
    ("2.5e+2", 250.0),
    (".5", 0.5),
    ("5.", 5.0),
    ("007", 7.0),
    ("pi", math.pi),
    ("e", math.e),
    ("e^x", math.exp(X)),
    ("sin(x) + cos(y) * tan(z)", math.sin(X) + math.cos(Y) * math.tan(Z)),
    ("exp(x) - log(z)", math.exp(X) - math.log(Z)),
    ("sqrt(z)", math.sqrt(Z)),
    ("pow(z, 1.5)", Z**1.5),
    ("pow(y, 3)", Y**3),
    ("atan2(y, x)", math.atan2(Y, X)),
    ("tanh(y)", math.tanh(Y)),
    ("sigmoid(x)", 1 / (1 + math.exp(-X))),
    ("abs(y)", abs(Y)),
    ("min(x, y)", min(X, Y)),
    ("max(x, y, z)", max(X, Y, Z)),
    ("min(3, 1, 2)", 1.0),
    ("where(x < y, 1, 2)", 2.0),
    ("where(x > y, 1, 2)", 1.0),
    ("where(x <= x, 1, 2)", 1.0),
    ("where(y >= x, 1, 2)", 2.0),
    ("where(x == x, 1, 2)", 1.0),
    ("where(1 < 2, x, y)", X),
    ("where(x + 1 < y * 2, x, -x)", -X),
    ("exp2(x) * log2(z) * recip(y)", 2**X * math.log2(Z) / Y),
    ("  x\t+\n y ", X + Y),
    ("sin(cos(tan(x)))", math.sin(math.cos(math.tan(X)))),
    ("((((x))))", X),
    ("f(x, y) = x * y", X * Y),
    ("g(a) = a + 1", None),  # declares its own variable; checked below
]


@pytest.mark.parametrize(("text", "expected"), [t for t in GOOD if t[1] is not None])
def test_values_match_python(text: str, expected: float) -> None:
    assert math.isclose(value(text), expected, rel_tol=1e-12, abs_tol=1e-15), text


def test_declared_variables() -> None:
    graph = parse_graph("g(a, b) = a * b + 1")
    assert graph.inputs == ("a", "b")
    assert graph.eval([2.0, 3.0]) == [7.0]
    assert parse_graph("x + 1").inputs == ("x", "y", "z")
    assert parse_graph("x + 1", variables=["x"]).inputs == ("x",)
    assert parse_graph("k() = 3").inputs == ()
    assert parse_graph("k() = 3").eval([]) == [3.0]
    assert parse("f(u) = u", variables=("u", "v")) is g.var("u")


def test_parse_is_the_traced_graph() -> None:
    """Parsed text is the very node (hash-consed) that the same math builds in Python."""
    x, y = g.var("x"), g.var("y")
    assert parse("x * y + sin(x)") is g.add(g.mul(x, y), g.sin(x))
    assert parse("y * x") is parse("x * y")
    assert parse("x - y") is x - y
    assert parse("x / y") is x / y
    assert parse("x ^ 3") is x**3
    assert parse("cos(x) + exp(y) + log(x) + tanh(y) + sigmoid(x)") is (
        x.cos() + y.exp() + x.log() + y.tanh() + x.sigmoid()
    )
    assert parse("e^x") is x.exp()
    assert parse("abs(x)") is g.abs_(x)
    assert parse("where(x < y, x, y)") is g.select(g.lt(x, y), x, y)
    assert parse("where(x > y, x, y)") is g.select(g.lt(y, x), x, y)
    assert parse("2 * 3 + 1") is g.const(7.0)


def test_parse_is_what_tang_trace_builds() -> None:
    def f(x, y):
        return tang.where(x < y, tang.sin(x) * y, tang.max(x, y) ** 2) + tang.sigmoid(x - y)

    traced = tang.trace(f, ["x", "y"])
    text = "where(x < y, sin(x) * y, max(x, y)^2) + sigmoid(x - y)"
    assert parse(text) is traced.outputs[0]
    assert parse_graph("f(x, y) = " + text).eval([0.3, 0.9]) == traced.eval([0.3, 0.9])


def test_nan_inf_and_signed_zero() -> None:
    assert parse("-0") is g.const(-0.0)
    assert math.copysign(1.0, parse("-0.0").value) == -1.0
    assert parse("inf") is g.const(math.inf)
    assert parse("-inf") is g.const(-math.inf)
    assert math.isnan(parse("nan").value)
    assert parse("1e308") is g.const(1e308) and parse("1e-400") is g.const(0.0)
    assert parse("1.7976931348623157e308") is g.const(1.7976931348623157e308)  # the largest
    assert parse("1/0") is g.const(math.inf)
    assert math.isnan(parse("log(-1)").value)


def test_variables_argument() -> None:
    assert parse("alpha * beta", variables=("alpha", "beta")) is g.mul(
        g.var("alpha"), g.var("beta")
    )
    with pytest.raises(ValueError, match="built-in"):
        parse("x", variables=("x", "pi"))
    with pytest.raises(ValueError, match="not a valid variable name"):
        parse("x", variables=("x", "2a"))
    with pytest.raises(ValueError, match="distinct"):
        parse("x", variables=("x", "x"))
    with pytest.raises(TypeError):
        parse("x", variables="xy")
    with pytest.raises(TypeError):
        parse(b"x")  # type: ignore[arg-type]


def test_public_names() -> None:
    assert tang.parse is parse
    assert tang.ParseError is ParseError
    assert issubclass(ParseError, ValueError)


# ------------------------------------------------------------------------------------------
# bad input: (text, column, fragments of the message); variables default to x, y, z

BAD = [
    ("sine(x)", 1, ["unknown function 'sine'", "did you mean 'sin'?"]),
    ("x + sine(y)", 5, ["unknown function 'sine'", "did you mean 'sin'?"]),
    ("cosh(x)", 1, ["unknown function 'cosh'", "did you mean 'cos'?"]),
    ("Sin(x)", 1, ["unknown function 'Sin'", "did you mean 'sin'?"]),
    ("sqr(x)", 1, ["did you mean 'sqrt'?"]),
    ("frobnicate(x)", 1, ["unknown function 'frobnicate'"]),
    ("(x))", 4, ["unbalanced ')'"]),
    ("x)", 2, ["unbalanced ')'"]),
    ("tan(x))", 7, ["unbalanced ')'"]),
    ("x, y", 2, ["unbalanced ','"]),
    ("(x, y)", 3, ["unexpected ','", "function's arguments"]),
    ("x+", 3, ["unexpected end of input", "expected an expression after '+'"]),
    ("x^", 3, ["unexpected end of input", "after '^'"]),
    ("-", 2, ["unexpected end of input", "after '-'"]),
    ("1 + +", 6, ["unexpected end of input", "after '+'"]),
    ("x >= ", 6, ["unexpected end of input", "after '>='"]),
    ("x ** * y", 6, ["unexpected '*'", "after '**'"]),
    ("x +* y", 4, ["unexpected '*'", "after '+'"]),
    ("*x", 1, ["unexpected '*'", "expected an expression first"]),
    (")", 1, ["unexpected ')'"]),
    ("()", 2, ["unexpected ')'", "after '('"]),
    ("min(,x)", 5, ["unexpected ','", "after '('"]),
    ("atan2(x,)", 9, ["unexpected ')'", "after ','"]),
    ("", 1, ["empty expression"]),
    ("   ", 4, ["empty expression"]),
    ("((x)", 1, ["unclosed '('"]),
    ("(x", 1, ["unclosed '('"]),
    ("sin(x", 1, ["unclosed '(' of 'sin('"]),
    ("x * (y + max(x, y", 10, ["unclosed '(' of 'max('"]),
    ("sin(x, y)", 1, ["'sin' takes 1 argument, got 2"]),
    ("sin()", 1, ["'sin' takes 1 argument, got 0"]),
    ("x + atan2(x)", 5, ["'atan2' takes 2 arguments, got 1"]),
    ("where(x < 0, 1)", 1, ["'where' takes 3 arguments, got 2"]),
    ("max(x)", 1, ["'max' takes at least 2 arguments, got 1"]),
    ("w + 1", 1, ["unknown variable 'w'", "(allowed: x, y, z)"]),
    ("x * foo", 5, ["unknown variable 'foo'", "(allowed: x, y, z)"]),
    ("xx + 1", 1, ["unknown variable 'xx'", "did you mean 'x'?"]),
    ("pie", 1, ["unknown variable 'pie'", "did you mean 'pi'?"]),
    ("f(x) = w", 8, ["unknown variable 'w'", "(allowed: x)"]),
    ("sin", 1, ["'sin' at column 1 is a function", "sin(…)"]),
    ("sin x", 1, ["is a function"]),
    ("pi(2)", 1, ["'pi' at column 1 is not a function"]),
    ("x(y)", 1, ["'x' at column 1 is not a function", "x*(…)"]),
    ("x $ y", 3, ["unexpected character '$'"]),
    ("x # y", 3, ["unexpected character '#'"]),
    ("x . y", 3, ["unexpected character '.'"]),
    ("x\t+ @", 5, ["unexpected character '@'"]),
    ("2 π", 3, ["unexpected character 'π'", "did you mean 'pi'?"]),
    ("x × y", 3, ["did you mean '*'?"]),
    ("x\x00", 2, ["unexpected character U+0000"]),
    ("1e", 1, ["malformed number '1e'", "exponent needs digits"]),
    ("1e+", 1, ["malformed number '1e+'"]),
    ("x + 2E-", 5, ["malformed number '2E-'"]),
    ("1.2.3", 1, ["malformed number '1.2.3'"]),
    ("3..5", 1, ["malformed number '3..5'"]),
    ("2x", 2, ["missing operator between '2' and 'x'", "2*x"]),
    ("2pi", 2, ["missing operator between '2' and 'pi'"]),
    ("x y", 3, ["missing operator between 'x' and 'y'"]),
    ("x y z", 3, ["missing operator"]),
    ("(x)(y)", 4, ["missing operator between ')' and '('"]),
    ("log(x) log(y)", 8, ["missing operator between ')' and 'log'"]),
    ("x < y < z", 7, ["comparisons cannot be chained"]),
    ("x < y", 3, ["comparison at column 3", "condition of where"]),
    ("1 < 2", 3, ["comparison at column 3"]),
    ("-(x < y)", 5, ["comparison at column 5"]),
    ("x + sin(y < 1)", 11, ["comparison at column 11"]),
    ("where(x < 0, y < 1, 2)", 16, ["comparison at column 16"]),
    ("where(x, 1, 2)", 7, ["first argument of 'where' at column 7 must be a comparison"]),
    ("where(1, x, y)", 7, ["first argument of 'where'"]),
    ("x = 1", 3, ["unexpected '='", "'=='"]),
    ("x != y", 3, ["'!=' at column 3 is not supported"]),
    ("f(x, x) = x", 6, ["variable 'x' declared twice"]),
    ("f(pi) = 1", 3, ["'pi' at column 3 is a built-in name"]),
    ("1e999", 1, ["number '1e999' at column 1 is too large for a 64-bit float", "write inf"]),
    ("x + 1e400", 5, ["number '1e400' at column 5 is too large"]),
    ("1.7976931348623159e308", 1, ["too large for a 64-bit float"]),  # rounds up to inf
    ("-1e400 * x", 2, ["number '1e400' at column 2"]),  # -inf: the literal itself overflows
    ("x + " + "9" * 5000, 5, ["number '999999999999… (5,000 characters)' at column 5"]),
    ("f(x) = ", 8, ["unexpected end of input", "after '='"]),
]


def test_at_least_fifty_bad_inputs() -> None:
    assert len(BAD) >= 50


@pytest.mark.parametrize(("text", "column", "fragments"), BAD)
def test_bad_input(text: str, column: int, fragments: list[str]) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    err = info.value
    assert err.column == column, str(err)
    assert err.position == column - 1
    assert err.position < err.end <= max(len(text), column)
    message = str(err)
    assert f"column {column}" in message
    for fragment in fragments:
        assert fragment in message, message


def test_definition_overrides_variables() -> None:
    assert parse_graph("f(w) = w", variables=("x", "y")).inputs == ("w",)
    with pytest.raises(ParseError, match=r"unknown function 'f' at column 1"):
        parse("f(w) = w", variables=("x", "y"), definitions=False)
    with pytest.raises(ParseError, match=r"unexpected '=' at column 3 — use '==' to compare$"):
        parse("x = 1", definitions=False)
    with pytest.raises(ParseError, match=r"unknown function 'f' at column 1"):
        parse("f(x) + 1")


def test_error_span_covers_the_word() -> None:
    with pytest.raises(ParseError) as info:
        parse("x + sine(y)")
    assert (info.value.position, info.value.end) == (4, 8)


# ------------------------------------------------------------------------------------------
# limits: each has its own error type (all ParseErrors); none of them needs recursion


def test_length_limit() -> None:
    text = "x+" * (LIMITS.max_length // 2) + "x"
    with pytest.raises(TooLongError, match="too long") as info:
        parse(text)
    assert info.value.column == LIMITS.max_length + 1
    assert parse("x + 1", limits=Limits(max_length=5)) is parse("x+1")
    with pytest.raises(TooLongError):
        parse("x + 1", limits=Limits(max_length=4))


def test_depth_limit() -> None:
    ok = "(" * LIMITS.max_depth + "x" + ")" * LIMITS.max_depth
    assert parse(ok) is g.var("x")
    with pytest.raises(TooDeepError, match="nested too deeply") as info:
        parse("(" * (LIMITS.max_depth + 1) + "x" + ")" * (LIMITS.max_depth + 1))
    assert info.value.column == LIMITS.max_depth + 1
    with pytest.raises(TooDeepError):
        parse("sin(" * (LIMITS.max_depth + 1) + "x" + ")" * (LIMITS.max_depth + 1))


def test_node_limit() -> None:
    terms = (LIMITS.max_nodes + 1) // 2 + 1
    text = "+".join(["x"] * terms)
    assert len(text) < LIMITS.max_length
    with pytest.raises(TooLargeError, match="too large"):
        parse(text)
    x = g.var("x")
    assert parse("x+x+x", limits=Limits(max_nodes=5)) is (x + x) + x
    with pytest.raises(TooLargeError):
        parse("x+x+x", limits=Limits(max_nodes=4))


def test_limits_are_distinct_types() -> None:
    kinds = {TooLongError, TooDeepError, TooLargeError}
    assert all(issubclass(k, ParseError) for k in kinds)
    assert len({k.__name__ for k in kinds}) == 3
    for a in kinds:
        for b in kinds - {a}:
            assert not issubclass(a, b)


def test_huge_nesting_without_recursion() -> None:
    """With the limits raised, 30,000 levels (30× the recursion limit) parse: the parser
    keeps its own stacks."""
    n = 30_000
    assert parse("(" * n + "x" + ")" * n, limits=UNLIMITED) is g.var("x")
    node = parse("-" * n + "x", limits=UNLIMITED)
    assert g.evaluate([node], POINT) == [X]
    chain = parse("sin(" * n + "x" + ")" * n, limits=UNLIMITED)
    assert chain.op == "sin"
    assert math.isclose(g.evaluate([chain], POINT)[0], math.sqrt(3 / n), rel_tol=2e-2)


def test_parse_definition_says_whether_the_text_declares_its_variables() -> None:
    node, declared = parse_definition("f(x, y, z) = x*y")
    assert declared == ("x", "y", "z")  # z is declared, though unused
    same, none = parse_definition("x*y")
    assert none is None and same is node
    assert parse_definition("g() = 2")[1] == ()
