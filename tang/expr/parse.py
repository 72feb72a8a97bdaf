"""Text → graph without ``eval``: a hand-written tokenizer and an operator-precedence parser.

The parser keeps its own operator and operand stacks (shunting-yard), so nesting depth costs
no Python recursion; limits on text length, nesting depth and node count keep a page alive.

Grammar, loosest binding first::

    definition  [NAME "(" [NAME {"," NAME}] ")" "="] expr      f(x, y) = … declares variables
    comparison  sum ("<" | "<=" | ">" | ">=" | "==") sum       only as where()'s condition
    sum         product {("+" | "-") product}
    product     unary {("*" | "/") unary}
    unary       ("-" | "+") unary | power                      -x^2 is -(x^2)
    power       atom [("^" | "**") unary]                      right-associative: 2^3^2 = 2^9
    atom        NUMBER | NAME | NAME "(" args ")" | "(" expr ")"

Errors are ``ParseError`` with a 1-based ``column`` and a sentence that says it.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import graph as g
from .graph import Node
from .ops import COMPOSITES, OPS, Composite

DEFAULT_VARIABLES: tuple[str, ...] = ("x", "y", "z")


@dataclass(frozen=True)
class Limits:
    """What one parse may take: characters, open groups at once, parse-tree nodes."""

    max_length: int = 10_000  # characters of text
    max_depth: int = 64  # parentheses and calls open at once
    max_nodes: int = 4_000  # numbers, names and operations


LIMITS = Limits()
UNLIMITED = Limits(sys.maxsize, sys.maxsize, sys.maxsize)  # for trusted text, e.g. to_text's

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}


class ParseError(ValueError):
    """Malformed text: ``column`` is 1-based; ``position``/``end`` are the 0-based span."""

    def __init__(self, message: str, column: int, end: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.position = column - 1
        self.end = self.position + 1 if end is None else max(end, self.position + 1)


class UnknownVariableError(ParseError):
    """A name that is no variable, constant or function: ``name``, and the ``allowed`` names
    (from ``variables`` or the text's ``f(a, b) = …``), so a caller can say how to add it."""

    def __init__(
        self, message: str, column: int, end: int, name: str, allowed: tuple[str, ...], hint: str
    ) -> None:
        super().__init__(message, column, end)
        self.name = name
        self.allowed = allowed
        self.hint = hint  # " — did you mean 'pi'?" or ""


class TooLongError(ParseError):
    """The text is longer than the length limit."""


class TooDeepError(ParseError):
    """Parentheses and calls are nested deeper than the depth limit."""


class TooLargeError(ParseError):
    """The expression has more nodes than the node limit."""


# ---------------------------------------------------------------------------------------
# functions: name -> (fewest arguments, most arguments or None, builder over graph values)

Value = Node | bool  # a bool is a comparison of two constants


def _fold(fn: Callable[[Node, Node], Node]) -> Callable[..., Node]:
    return lambda *args: functools.reduce(fn, args)


def _composite(c: Composite) -> tuple[int, int | None, Callable[..., Value]]:
    build = g.COMPOSITE_BUILDERS[c.name]
    return (c.arity, None, _fold(build)) if c.variadic else (c.arity, c.arity, build)


# the registry's functions (tang.expr.ops): every primitive with a name in tang's text, so
# that every graph prints as text this parser reads back, and every composite
FUNCTIONS: dict[str, tuple[int, int | None, Callable[..., Value]]] = {
    **{
        p.call: (p.arity, p.arity, g.CONSTRUCTORS[p.name])
        for p in OPS.values()
        if p.call is not None and not p.integer
    },
    **{c.name: _composite(c) for c in COMPOSITES.values()},
}
CONDITION_FUNCTIONS = frozenset({"where"})  # whose first argument is a comparison

# ---------------------------------------------------------------------------------------
# tokens

_NUM, _NAME, _OP, _END = 0, 1, 2, 3
# One findall gives (space, number, what sticks to a number, name, operator, other) per
# token; a non-empty "sticks" or "other" is an error. Trailing space matches \Z.
_TOKEN = re.compile(
    r"(\s*)(?:"
    r"((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([A-Za-z0-9_.]*)"
    r"|([A-Za-z_][A-Za-z0-9_]*)"
    r"|(\*\*|<=|>=|==|!=|[-+*/^(),<>=])"
    r"|(\S)|\Z)"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNICODE_HINTS = {"π": "pi", "×": "*", "·": "*", "÷": "/", "−": "-", "²": "^2", "√": "sqrt"}

Token = tuple[int, str, int, int, float]  # kind, text, start, end, number value


def _tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    for space, number, sticks, name, op, other in _TOKEN.findall(text):
        start = pos + len(space)
        if name:
            pos = start + len(name)
            append((_NAME, name, start, pos, 0.0))
        elif op:
            pos = start + len(op)
            if op == "!=":
                raise ParseError(
                    f"'!=' at column {start + 1} is not supported — "
                    "swap the branches of where(a == b, …)",
                    start + 1,
                    pos,
                )
            append((_OP, op, start, pos, 0.0))
        elif number:
            pos = start + len(number)
            if sticks:
                _bad_number(text, start, pos, sticks)
            value = float(number)  # no digit limit, unlike int(); 1e5 digits take 30 µs
            if value == math.inf:
                _overflow(number, start, pos)
            append((_NUM, number, start, pos, value))
        elif other:
            _bad_character(text, start)
        else:
            pos = start
    n = len(text)
    append((_END, "", n, n, 0.0))
    return tokens


def _bad_character(text: str, start: int) -> None:
    ch = text[start]
    hint = _UNICODE_HINTS.get(ch)
    tail = f" — did you mean '{hint}'?" if hint else ""
    shown = repr(ch) if ch.isprintable() else f"U+{ord(ch):04X}"
    raise ParseError(f"unexpected character {shown} at column {start + 1}{tail}", start + 1)


def _bad_number(text: str, start: int, end: int, tail: str) -> None:
    head = text[start:end]
    first = tail[0]
    if first in "eE" and (len(tail) == 1 or not tail[1].isalnum()):
        word = head + first + (text[end + 1] if end + 1 < len(text) else "")
        word = word.rstrip()
        raise ParseError(
            f"malformed number '{word}' at column {start + 1} — "
            f"an exponent needs digits, as in {head}e3",
            start + 1,
            start + len(word),
        )
    if first.isalpha() or first == "_":
        name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", tail).group()  # type: ignore[union-attr]
        raise ParseError(
            f"missing operator between '{head}' and '{name}' at column {end + 1} — "
            f"write {head}*{name}",
            end + 1,
            end + len(name),
        )
    raise ParseError(
        f"malformed number '{head + tail}' at column {start + 1}",
        start + 1,
        end + len(tail),
    )


def _overflow(number: str, start: int, end: int) -> None:
    """A literal past the largest float64 is an error, not a silent inf (``inf`` is a name)."""
    shown = number if len(number) <= 24 else f"{number[:12]}… ({len(number):,} characters)"
    raise ParseError(
        f"number '{shown}' at column {start + 1} is too large for a 64-bit float "
        f"(the largest is about {sys.float_info.max:.4g}) — write inf for infinity",
        start + 1,
        end,
    )


# ---------------------------------------------------------------------------------------
# operators: token -> (precedence, right-associative); unary minus sits between * and ^

_CMP, _SUM, _PRODUCT, _UNARY, _POWER = 1, 2, 3, 4, 5
_BINARY: dict[str, tuple[int, bool]] = {
    "<": (_CMP, False),
    "<=": (_CMP, False),
    ">": (_CMP, False),
    ">=": (_CMP, False),
    "==": (_CMP, False),
    "+": (_SUM, False),
    "-": (_SUM, False),
    "*": (_PRODUCT, False),
    "/": (_PRODUCT, False),
    "^": (_POWER, True),
    "**": (_POWER, True),
}
_APPLY: dict[str, Callable[[Node, Node], Value]] = {
    "+": g.add,
    "-": lambda a, b: g.add(a, g.neg(b)),
    "*": g.mul,
    "/": g.div,
    "^": g.pow,
    "**": g.pow,
    "<": g.lt,
    "<=": g.le,
    ">": lambda a, b: g.lt(b, a),
    ">=": lambda a, b: g.le(b, a),
    "==": g.eq,
}

# operator-stack frames: (kind, text, start, end, where a call's arguments start in values)
_F_BINARY, _F_UNARY, _F_PAREN, _F_CALL = 0, 1, 2, 3
Frame = tuple[int, str, int, int, int]

# an operand: (value, start, end, column of its comparison or 0 when it is a number)
Operand = tuple[Value, int, int, int]


# ---------------------------------------------------------------------------------------
# the parser


def parse(
    text: str,
    variables: Sequence[str] | None = None,
    *,
    definitions: bool = True,
    limits: Limits = LIMITS,
) -> Node:
    """The graph node for ``text``; raises ParseError (with a column) for malformed text.

    ``variables`` are the names the text may use (default x, y, z). A leading
    ``f(a, b) = …`` declares them instead, unless ``definitions`` is False.
    """
    return _Parser(text, variables, definitions, limits).run()[0]


def parse_graph(
    text: str,
    variables: Sequence[str] | None = None,
    *,
    definitions: bool = True,
    limits: Limits = LIMITS,
) -> g.Graph:
    """Like ``parse``, but a one-output ``Graph`` whose inputs are the declared variables
    (from ``f(x, y) = …``) or else ``variables`` (default x, y, z) in order."""
    node, inputs = _Parser(text, variables, definitions, limits).run()
    return g.Graph(inputs, [node])


def parse_definition(
    text: str, variables: Sequence[str] | None = None, *, limits: Limits = LIMITS
) -> tuple[Node, tuple[str, ...] | None]:
    """The node for ``text`` and the variables its ``f(a, b) = …`` declares, or None when
    it declares none (then it may use ``variables``, default x, y, z)."""
    node, inputs, _ = parse_declaration(text, variables, limits=limits)
    return node, inputs


def parse_declaration(
    text: str, variables: Sequence[str] | None = None, *, limits: Limits = LIMITS
) -> tuple[Node, tuple[str, ...] | None, str | None]:
    """``parse_definition``'s answer and the function's name: ``g`` for ``g(a, b) = …``,
    None when the text declares no function."""
    parser = _Parser(text, variables, True, limits)
    node, inputs = parser.run()
    if not parser.declared:
        return node, None, None
    return node, inputs, parser.tokens[0][1]


def _check_names(variables: Sequence[str]) -> tuple[str, ...]:
    if isinstance(variables, str):
        raise TypeError("variables must be a sequence of names, not one string")
    names = tuple(variables)
    for name in names:
        if not isinstance(name, str) or not _IDENT.match(name):
            raise ValueError(f"{name!r} is not a valid variable name")
        if name in CONSTANTS or name in FUNCTIONS:
            raise ValueError(f"'{name}' is a built-in name and cannot be a variable")
    if len(set(names)) != len(names):
        raise ValueError("variable names must be distinct")
    return names


@functools.lru_cache(maxsize=4096)
def _suggest(word: str, names: tuple[str, ...]) -> str:
    """ " — did you mean 'sin'?" for the closest name, or "" (cached: the page retypes)."""
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return f" — did you mean '{close[0]}'?" if close else ""


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


class _Parser:
    """One parse: the token list, both stacks and the counters for the limits."""

    def __init__(
        self,
        text: str,
        variables: Sequence[str] | None,
        definitions: bool,
        limits: Limits,
    ) -> None:
        if not isinstance(text, str):
            raise TypeError(f"parse() needs a str, got {type(text).__name__}")
        self.text = text
        self.allowed = DEFAULT_VARIABLES if variables is None else _check_names(variables)
        self.definitions = definitions
        self.max_depth, self.max_nodes = limits.max_depth, limits.max_nodes
        max_length = limits.max_length
        if len(text) > max_length:
            raise TooLongError(
                f"the expression is too long: {len(text)} characters "
                f"(limit {max_length}) at column {max_length + 1}",
                max_length + 1,
                len(text),
            )
        self.tokens = _tokenize(text)
        self.nodes = self.depth = 0
        self.declared = False  # whether the text starts with f(a, b) = …

    # -- helpers -------------------------------------------------------------------------

    def error(self, message: str, start: int, end: int | None = None) -> ParseError:
        return ParseError(message, start + 1, end)

    def count(self, start: int) -> None:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise TooLargeError(
                f"the expression is too large: more than {self.max_nodes} nodes "
                f"at column {start + 1}",
                start + 1,
            )

    # -- the definition header -----------------------------------------------------------

    def header(self) -> tuple[int, tuple[str, ...]]:
        """(index of the body's first token, allowed variable names)."""
        toks = self.tokens
        default = self.allowed
        if not self.definitions or len(toks) < 4 or toks[0][0] != _NAME or toks[1][1] != "(":
            return 0, default
        i, names = 2, []
        if toks[i][1] != ")":
            while True:
                if toks[i][0] != _NAME:
                    return 0, default
                names.append(toks[i])
                if toks[i + 1][1] == ",":
                    i += 2
                    continue
                i += 1
                break
        if toks[i][1] != ")" or toks[i + 1][1] != "=":
            return 0, default
        seen: set[str] = set()
        for _, name, start, end, _ in names:
            if name in CONSTANTS or name in FUNCTIONS:
                raise self.error(
                    f"'{name}' at column {start + 1} is a built-in name and cannot be a variable",
                    start,
                    end,
                )
            if name in seen:
                raise self.error(f"variable '{name}' declared twice at column {start + 1}", start)
            seen.add(name)
        return i + 2, tuple(n[1] for n in names)

    # -- the main loop -------------------------------------------------------------------

    def run(self) -> tuple[Node, tuple[str, ...]]:
        first, allowed = self.header()
        self.declared = first > 0
        allowed_set = frozenset(allowed)
        toks = self.tokens
        values: list[Operand] = []
        frames: list[Frame] = []
        expect_operand = True
        i = first
        while True:
            tok = toks[i]
            kind, word, start, end, number = tok
            if expect_operand:
                if kind == _NUM:
                    self.count(start)
                    values.append((g.const(number), start, end, 0))
                    expect_operand = False
                elif kind == _NAME:
                    if toks[i + 1][1] == "(":
                        self.check_function(word, start, end, allowed_set)
                        if toks[i + 2][1] == ")":
                            self.arity_error(word, start, end, 0)
                        self.open(frames, (_F_CALL, word, start, end, len(values)))
                        i += 1  # the "(" is consumed with the name
                    else:
                        self.count(start)
                        values.append((self.name_value(word, start, end, allowed), start, end, 0))
                        expect_operand = False
                elif word == "(":
                    self.open(frames, (_F_PAREN, word, start, end, 0))
                elif word == "-" or word == "+":
                    frames.append((_F_UNARY, word, start, end, 0))
                else:
                    self.missing_operand(i)
            else:
                if kind == _OP and word in _BINARY:
                    prec, right = _BINARY[word]
                    while frames:
                        top = frames[-1]
                        if top[0] == _F_BINARY:
                            top_prec = _BINARY[top[1]][0]
                        elif top[0] == _F_UNARY:
                            top_prec = _UNARY
                        else:
                            break
                        if top_prec > prec or (top_prec == prec and not right):
                            self.reduce(frames.pop(), values)
                        else:
                            break
                    frames.append((_F_BINARY, word, start, end, 0))
                    expect_operand = True
                elif word == ")" or word == "," or kind == _END:
                    if self.close(tok, frames, values):
                        break
                    expect_operand = word == ","
                elif word == "=":
                    hint = ", or start with a definition: f(x, y) = …" if self.definitions else ""
                    raise self.error(
                        f"unexpected '=' at column {start + 1} — use '==' to compare{hint}", start
                    )
                else:
                    prev = toks[i - 1]
                    simple = kind != _OP and prev[0] != _OP
                    hint = f" — did you mean '{prev[1]} * {word}'?" if simple else ""
                    raise self.error(
                        f"missing operator between '{prev[1]}' and '{word}' at column "
                        f"{start + 1}{hint}",
                        start,
                        end,
                    )
            i += 1
        value, _, _, cmp_at = values[-1]
        if cmp_at:
            raise self.misplaced_comparison(cmp_at)
        return g.as_node(value), allowed  # type: ignore[arg-type]

    # -- groups: parentheses and calls --------------------------------------------------

    def open(self, frames: list[Frame], frame: Frame) -> None:
        if self.depth >= self.max_depth:
            raise TooDeepError(
                f"the expression is nested too deeply: more than {self.max_depth} open "
                f"parentheses at column {frame[2] + 1}",
                frame[2] + 1,
            )
        self.depth += 1
        frames.append(frame)

    def close(self, tok: Token, frames: list[Frame], values: list[Operand]) -> bool:
        """Handle ')', ',' or the end of input; True at a complete end."""
        kind, word, start, end, _ = tok
        while frames and frames[-1][0] <= _F_UNARY:
            self.reduce(frames.pop(), values)
        if kind == _END:
            if frames:
                _, name, fstart, _, _ = frames[-1]
                of = f" of '{name}('" if frames[-1][0] == _F_CALL else ""
                raise self.error(
                    f"unclosed '('{of} at column {fstart + 1} — add ')' at the end", fstart
                )
            return True
        if not frames:
            commas = " — commas separate a function's arguments" if word == "," else ""
            raise self.error(f"unbalanced '{word}' at column {start + 1}{commas}", start)
        if word == ",":
            if frames[-1][0] != _F_CALL:
                raise self.error(
                    f"unexpected ',' at column {start + 1} — commas separate "
                    "a function's arguments, as in atan2(y, x)",
                    start,
                )
            return False
        frame = frames.pop()
        self.depth -= 1
        if frame[0] == _F_CALL:
            self.call(frame, values, end)
        else:
            v = values[-1]
            values[-1] = (v[0], frame[2], end, v[3])
        return False

    # -- operands ------------------------------------------------------------------------

    def name_value(self, word: str, start: int, end: int, allowed: tuple[str, ...]) -> Node:
        if word in allowed:
            return g.var(word)
        if word in CONSTANTS:
            return g.const(CONSTANTS[word])
        if word in FUNCTIONS:
            raise self.error(
                f"'{word}' at column {start + 1} is a function — call it as {word}(…)",
                start,
                end,
            )
        hint = _suggest(word, (*allowed, *CONSTANTS))
        raise UnknownVariableError(
            f"unknown variable '{word}' at column {start + 1} (allowed: {_listed(allowed)})" + hint,
            start + 1,
            end,
            word,
            allowed,
            hint,
        )

    def check_function(self, word: str, start: int, end: int, allowed: frozenset[str]) -> None:
        if word in FUNCTIONS:
            return
        if word in allowed or word in CONSTANTS:
            raise self.error(
                f"'{word}' at column {start + 1} is not a function — write {word}*(…) to multiply",
                start,
                end,
            )
        raise self.error(
            f"unknown function '{word}' at column {start + 1}" + _suggest(word, tuple(FUNCTIONS)),
            start,
            end,
        )

    def missing_operand(self, i: int) -> None:
        kind, word, start, end, _ = self.tokens[i]
        if i == 0:
            if kind == _END:
                raise self.error(f"empty expression at column {start + 1}", start)
            raise self.error(
                f"unexpected '{word}' at column {start + 1} — expected an expression first",
                start,
                end,
            )
        prev = self.tokens[i - 1][1]
        found = "end of input" if kind == _END else f"'{word}'"
        raise self.error(
            f"unexpected {found} at column {start + 1} — expected an expression after '{prev}'",
            start,
            end,
        )

    def arity_error(self, name: str, start: int, end: int, got: int) -> None:
        low, high, _ = FUNCTIONS[name]
        if high is None:
            wanted = f"at least {low} arguments"
        else:
            wanted = f"{low} argument" + ("s" if low != 1 else "")
        raise self.error(f"'{name}' takes {wanted}, got {got} at column {start + 1}", start, end)

    def misplaced_comparison(self, column: int) -> ParseError:
        return ParseError(
            f"a comparison at column {column} can only be the condition of where(condition, a, b)",
            column,
        )

    # -- applying operators --------------------------------------------------------------

    def reduce(self, frame: Frame, values: list[Operand]) -> None:
        kind, word, start, end, _ = frame
        self.count(start)
        if kind == _F_UNARY:
            a, _, aend, acmp = values.pop()
            if acmp:
                raise self.misplaced_comparison(acmp)
            values.append((g.neg(a) if word == "-" else a, start, aend, 0))  # type: ignore[arg-type]
            return
        b, _, bend, bcmp = values.pop()
        a, astart, _, acmp = values.pop()
        is_comparison = _BINARY[word][0] == _CMP
        if is_comparison and (acmp or bcmp):
            raise self.error(
                f"comparisons cannot be chained: '{word}' at column {start + 1} — "
                "nest where() calls instead",
                start,
                end,
            )
        if acmp or bcmp:
            raise self.misplaced_comparison(acmp or bcmp)
        result = _APPLY[word](a, b)  # type: ignore[arg-type]
        cmp_at = start + 1 if is_comparison else 0
        values.append((result, astart, bend, cmp_at))

    def call(self, frame: Frame, values: list[Operand], end: int) -> None:
        _, name, start, name_end, base = frame
        args = values[base:]
        del values[base:]
        low, high, build = FUNCTIONS[name]
        if len(args) < low or (high is not None and len(args) > high):
            self.arity_error(name, start, name_end, len(args))
        self.count(start)
        for k, (_, astart, aend, cmp_at) in enumerate(args):
            wants_condition = k == 0 and name in CONDITION_FUNCTIONS
            if wants_condition and not cmp_at:
                raise self.error(
                    f"the first argument of '{name}' at column {astart + 1} must be a "
                    "comparison such as x < 0",
                    astart,
                    aend,
                )
            if cmp_at and not wants_condition:
                raise self.misplaced_comparison(cmp_at)
        result = build(*(a[0] for a in args))
        values.append((result, start, end, 0))
