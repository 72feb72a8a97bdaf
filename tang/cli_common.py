"""What every ``python -m tang`` subcommand module shares: its parser's shape
(``command``, ``expression_command``), the ``count`` argument type and ``BadInput``.

A leaf: it imports no command, so a subcommand module (``tang.expr.cli``, ``tang.lower.cli``,
``tang.run_cli``) imports it while ``tang.cli`` imports the subcommands, and no module
imports its importer back.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any

from .ieee import json_number as json_number  # re-exported for subcommands


class BadInput(Exception):
    """Raised by a subcommand for input it cannot use; becomes exit status 2."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the line breaks of descriptions and examples, and ends an option's help with its
    default when it has one and the help does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        quiet = action.default in (None, False, [], argparse.SUPPRESS)
        if quiet or not action.option_strings or "default" in text:
            return text
        return f"{text} (default: %(default)s)"

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if action.nargs == argparse.PARSER:  # the commands, without the "COMMAND" line atop
            text = text.split("\n", 1)[1]
        return text


def examples_epilog(lines: Sequence[str]) -> str:
    """The "examples:" block a parser's help ends with, one command line a line."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def command(
    subparsers: Any, name: str, help: str, examples: Sequence[str], note: str = ""
) -> argparse.ArgumentParser:
    """A subcommand parser: ``help`` (one line) in the list of commands and atop its own
    help, then ``note``, then its ``examples`` after the options."""
    return subparsers.add_parser(
        name,
        help=help,
        description=f"{help[0].upper()}{help[1:]}.{note}",
        epilog=examples_epilog(examples),
        formatter_class=HelpFormatter,
    )


def expression_command(
    subparsers: Any, name: str, help: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    """A subcommand parser whose first argument is one expression (``f(x, y) = …`` too)."""
    note = "\nAn expression starting with '-' goes after '--', options first."
    p = command(subparsers, name, help, examples, note)
    p.add_argument("expr", help="e.g. 'sin(x)*y' or 'f(x, y) = x^2 + y'")
    return p


# A count is digits (``_`` between groups, as in Python), MANTISSAeEXPONENT, or BASE^EXP
# (also BASE**EXP). Read by these patterns and integer arithmetic, never by eval(); lengths
# are checked before int(), so its digit limit (CPython 3.11+) is never reached.
_DIGITS = r"[0-9]+(?:_[0-9]+)*"
_PLAIN = re.compile(rf"({_DIGITS})\Z")
_SCIENTIFIC = re.compile(r"([0-9]+)(?:\.([0-9]*))?[eE]\+?([0-9]+)\Z")
_POWER = re.compile(rf"({_DIGITS})(?:\^|\*\*)({_DIGITS})\Z")
COUNT_FORMS = "1000000, 1_000_000, 1e6, 2.5e5, 2^20 or 2**20"
MAX_COUNT = 1 << 62  # far past any run; keeps the arithmetic small


def count(text: str) -> int:
    """A whole number of things written ``1000000``, ``1_000_000``, ``1e6``, ``2^20`` or
    ``2**20`` (an argparse ``type=``); anything else says what it accepts."""
    s = text.strip()
    shown = repr(s) if len(s) <= 24 else repr(s[:12] + "…")
    too_large = argparse.ArgumentTypeError(f"count {shown} is too large (at most 2^62)")
    if m := _PLAIN.match(s):
        digits, zeros = m[1].replace("_", ""), 0
    elif (m := _SCIENTIFIC.match(s)) and len(fraction := (m[2] or "").rstrip("0")) <= _small(m[3]):
        digits, zeros = m[1] + fraction, _small(m[3]) - len(fraction)  # 2.5e5: 25 and 4 zeros
    elif m := _POWER.match(s):
        base, power = m[1].replace("_", "").lstrip("0"), _small(m[2].replace("_", ""))
        if base in ("", "1") or power == 0:
            return 0 if base == "" and power > 0 else 1
        if len(base) > 19 or power * (len(base) - 1) > 19:  # at least 10^19 > 2^62
            raise too_large
        value = int(base) ** min(power, 63)  # base ≥ 2: past 2^62 by power 63
        if value > MAX_COUNT:
            raise too_large
        return value
    else:
        sign = " (a count cannot be negative)" if s.startswith("-") else ""
        raise argparse.ArgumentTypeError(
            f"invalid count {shown}{sign}: write a whole number such as {COUNT_FORMS}"
        )
    digits = digits.lstrip("0")
    if not digits:
        return 0
    if len(digits) + zeros > 19:  # at least 10^19 > 2^62
        raise too_large
    value = int(digits) * 10**zeros
    if value > MAX_COUNT:
        raise too_large
    return value


def _small(digits: str) -> int:
    """An exponent's digits as an int, capped at 10^6 (any bigger one overflows anyway)."""
    return int(digits) if len(digits) <= 6 else 10**6
