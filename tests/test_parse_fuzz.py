"""Fuzz: 100,000 random strings make the parser return a node or raise ParseError, nothing
else, and never hang. A fixed seed keeps it reproducible."""

from __future__ import annotations

import math
import random
import signal
import time

import pytest

from tang.expr.graph import Node, variables
from tang.expr.parse import UNLIMITED, ParseError, TooLongError, parse
from tang.expr.text import to_text

SEED = 20240613
COUNT = 100_000
DEADLINE_S = 300  # a hang guard only, far above the few seconds this takes

VALID = [
    "x + y * z",
    "-x^2 + 2**-y",
    "sin(x) * cos(y) / (1 + exp(-z))",
    "where(x < y, atan2(y, x), sqrt(abs(z)))",
    "f(x, y) = max(x, y, 1e-3) - min(.5, x)",
    "pow(x, 3) + log(1 + x*x) - tanh(sigmoid(y))",
    "((x + 1) * (y - 2)) / -(z + pi) ^ e",
    "exp2(log2(x)) * recip(y) + 1.5e10",
    "where(x >= 0, x, -x) + where(y == 0, 1, y)",
    "g(a) = a * a - 2 * a + 1",
]
# characters the grammar uses, plus some it does not
ALPHABET = "xyzabe0123456789.+-*/^(),<>=! \t_sinexpcolgqrtwhmaπ$#@\\\"'\x00é"
PIECES = [
    "x", "y", "z", "1", "2.5", "1e-3", ".5", "pi", "e", "+", "-", "*", "/", "^", "**",
    "(", ")", ",", "<", "<=", ">", ">=", "==", "=", "sin(", "where(", "max(", "atan2(",
    "sine(", "f(x) =", " ", "w",
]  # fmt: skip


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randint(0, len(text))
        move = rng.randrange(4)
        if move == 0:  # delete a span
            text = text[:i] + text[i + rng.randint(1, 3) :]
        elif move == 1:  # insert a piece
            text = text[:i] + rng.choice(PIECES) + text[i:]
        elif move == 2:  # replace one character
            text = text[:i] + rng.choice(ALPHABET) + text[i + 1 :]
        else:  # duplicate a span
            j = rng.randint(i, min(len(text), i + 8))
            text = text[:j] + text[i:j] + text[j:]
    return text


def _random_text(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 24)))
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))


def _cases(rng: random.Random, count: int):
    for k in range(count):
        if k % 2:
            yield _mutate(rng, rng.choice(VALID))
        else:
            yield _random_text(rng)


class _Hang(Exception):
    pass


def _on_alarm(signum, frame):  # pragma: no cover - only on a hang
    raise _Hang(f"the fuzz run passed {DEADLINE_S} s")


def test_fuzz_parser_only_raises_parse_error() -> None:
    guard = hasattr(signal, "SIGALRM")  # not in Pyodide: there the test runs unguarded
    rng = random.Random(SEED)
    ok = errors = 0
    if guard:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(DEADLINE_S)
    start = time.perf_counter()
    try:
        for text in _cases(rng, COUNT):
            try:
                node = parse(text)
            except ParseError as err:
                errors += 1
                assert 1 <= err.column <= len(text) + 1, (text, err)
                assert err.position < err.end
                assert f"column {err.column}" in str(err), (text, err)
                continue
            except Exception as err:  # anything else is a bug: report the input
                raise AssertionError(f"{type(err).__name__} for {text!r}: {err}") from err
            ok += 1
            assert isinstance(node, Node)
            if ok % 16 == 0:  # successful parses print and read back to the same node
                names = variables([node])
                back = parse(to_text(node), names, limits=UNLIMITED)
                assert back is node, text
    finally:
        if guard:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    elapsed = time.perf_counter() - start
    print(f"\nfuzz: {COUNT} strings in {elapsed:.2f} s ({ok} parsed, {errors} ParseError)")
    assert ok + errors == COUNT
    assert ok > COUNT // 20, "the mutations should leave many inputs valid"
    assert errors > COUNT // 2


# Literals far past float64 (and past CPython's int() digit limit): each is a ParseError at
# its column, or a finite node, within a short deadline: none may hang or raise another error.
HUGE_LITERALS = [
    ("9" * 100_000, ParseError),
    ("1" + "0" * 100_000 + ".5", ParseError),
    ("x + 1e" + "9" * 100_000, ParseError),
    ("0." + "0" * 100_000 + "1", Node),  # underflows to 0.0, like float()
    ("1e-" + "9" * 100_000, Node),
    ("1." + "3" * 100_000, Node),  # many digits, a small value
]


@pytest.mark.parametrize(("text", "kind"), HUGE_LITERALS, ids=lambda v: str(v)[:12])
def test_huge_literals_fail_fast_at_their_column(text: str, kind: type) -> None:
    guard = hasattr(signal, "SIGALRM")
    if guard:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(10)
    try:
        with pytest.raises(TooLongError, match="too long"):  # the default limits stop it first
            parse(text)
        try:
            node = parse(text, limits=UNLIMITED)
        except ParseError as err:
            assert kind is ParseError, err
            start = text.rfind(" ") + 1
            assert err.column == start + 1 and err.end == len(text)
            assert f"column {start + 1} is too large for a 64-bit float" in str(err)
            assert len(str(err)) < 200  # the message shows the literal's head, not all of it
        else:
            assert kind is Node and math.isfinite(node.value)
    finally:
        if guard:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
