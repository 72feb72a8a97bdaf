"""``python -m tang``: one argparse program; each subcommand lives in its own module.

A subcommand module exposes ``register(subparsers)``: it adds its parser and sets
``run=<function(args) -> int>`` as a default. Bad input is reported by raising
``BadInput(message)``: the program prints one line on stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .ieee import json_number as json_number  # re-exported for subcommands

# One line per subcommand module (each has ``register(subparsers)``).
SUBCOMMANDS: list[str] = [
    "tang.expr.cli",  # eval
    "tang.gpu.cli",  # run
    "tang.lower.cli",  # kernel
]


class BadInput(Exception):
    """Raised by a subcommand for input it cannot use; becomes exit status 2."""


def expression_command(subparsers: Any, name: str, help: str) -> argparse.ArgumentParser:
    """A subcommand parser whose first argument is one expression (``f(x, y) = …`` too)."""
    p = subparsers.add_parser(
        name,
        help=help,
        description=help + ". An expression starting with '-' goes after '--', options first.",
    )
    p.add_argument("expr", help="e.g. 'sin(x)*y' or 'f(x, y) = x^2 + y'")
    return p


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``tang`` parser with every registered subcommand."""
    parser = _Parser(prog="tang", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except BadInput as err:
        print(f"tang {args.command}: error: {err}", file=sys.stderr)
        return 2
