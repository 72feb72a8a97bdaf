"""``python -m tang``: one argparse program; each subcommand lives in its own module.

A subcommand module exposes ``HELP`` (one line), ``EXAMPLES`` (command lines, the first one
shown in ``python -m tang --help``) and ``register(subparsers)``: it adds its parser with
``command`` or ``expression_command`` and sets ``run=<function(args) -> int>`` as a default.
Bad input is reported by raising ``BadInput(message)``: the program prints one line on
stderr and exits with status 2. Those helpers live in the leaf ``tang.cli_common``, which a
subcommand module imports (never this module, which imports the subcommands).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from .cli_common import COUNT_FORMS as COUNT_FORMS
from .cli_common import MAX_COUNT as MAX_COUNT
from .cli_common import BadInput as BadInput
from .cli_common import HelpFormatter as HelpFormatter
from .cli_common import command as command
from .cli_common import count as count
from .cli_common import examples_epilog
from .cli_common import expression_command as expression_command
from .cli_common import json_number as json_number

# One line per subcommand module (each has ``register(subparsers)``).
SUBCOMMANDS: list[str] = [
    "tang.expr.cli",  # eval
    "tang.run_cli",  # run (above tang.gpu: it compiles text, then runs it on a device)
    "tang.lower.cli",  # kernel
]


PROG = "python -m tang"
ABOUT = """\
tang differentiates plain math and prints it as code for eight backends.
An expression is text such as 'x*sin(y)' or 'f(x, y) = x^2 + y', read by tang's own parser
(never by eval); its variables are x, y and z, or the ones f(…) = names."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``tang`` parser with every registered subcommand."""
    modules = [importlib.import_module(name) for name in SUBCOMMANDS]
    parser = _Parser(
        prog=PROG,
        description=ABOUT,
        epilog=examples_epilog([m.EXAMPLES[0] for m in modules])
        + f"\n\n'{PROG} COMMAND --help' lists a command's options and more examples.",
        formatter_class=HelpFormatter,
    )
    subparsers = parser.add_subparsers(
        title="commands", dest="command", required=True, metavar="COMMAND"
    )
    for module in modules:
        module.register(subparsers)
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
