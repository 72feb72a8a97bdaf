"""``tang eval EXPR --at x=1,y=2 [--grad] [--json]``: value (and gradient) of an expression.

The variables are the names given with ``--at`` (or those a leading ``f(x, y) = …``
declares; each then needs a value). With ``--json`` the output is exactly one object,
``{"value": v}`` plus ``"gradient": {name: d, …}`` when ``--grad`` is given, in the order
of the variables; NaN and infinities are the strings "nan", "inf" and "-inf".
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ..cli_common import BadInput, expression_command, json_number

if TYPE_CHECKING:
    from .graph import Graph

HELP = "evaluate an expression (and its gradient) at a point"
EXAMPLES = (
    "python -m tang eval 'x*sin(x)' --at x=2 --grad",
    "python -m tang eval 'f(r, t) = r*cos(t)' --at r=2,t=pi/3 --grad --json",
)


def register(subparsers: Any) -> None:
    """Add the ``eval`` subcommand."""
    p = expression_command(subparsers, "eval", HELP, EXAMPLES)
    p.add_argument(
        "--at",
        action="append",
        default=[],
        metavar="x=1,y=2",
        help="the variables' values (repeatable); a value may be a constant like pi/2",
    )
    p.add_argument("--grad", action="store_true", help="also print the gradient")
    p.add_argument("--json", action="store_true", help='print one JSON object (NaN as "nan")')
    p.set_defaults(run=run)


def parse_point(items: list[str]) -> dict[str, float]:
    """``["x=1,y=2", "z=pi"]`` → {"x": 1.0, "y": 2.0, "z": 3.14…}; BadInput if malformed."""
    from .parse import ParseError, UnknownVariableError, parse

    point: dict[str, float] = {}
    for item in items:
        for part in item.split(","):
            name, eq, text = (s.strip() for s in part.partition("="))
            if not eq or not name:
                raise BadInput(f"--at expects name=value pairs like x=1,y=2, got {part!r}")
            if name in point:
                raise BadInput(f"--at gives '{name}' twice")
            try:
                point[name] = float(parse(text, variables=()))
            except UnknownVariableError as err:
                raise BadInput(
                    f"--at value of '{name}' must be a number or a constant like pi/2: "
                    f"'{err.name}' at column {err.column} is neither{err.hint}"
                ) from None
            except ParseError as err:
                raise BadInput(f"--at value of '{name}': {err}") from None
    return point


MAX_NAMED = 8  # names without a value gathered into one message before it stops looking


def parse_with_values(text: str, point: dict[str, float]) -> Graph:
    """The graph of ``text`` over the names ``point`` gives values; names without a value are
    BadInput saying how to give them (``--at x=…``)."""
    from .parse import ParseError, UnknownVariableError, parse_graph

    names, unvalued = tuple(point), []
    while len(unvalued) < MAX_NAMED:
        try:
            graph = parse_graph(text, variables=names + tuple(e.name for e in unvalued))
        except UnknownVariableError as err:
            if err.allowed != names + tuple(e.name for e in unvalued):  # declared by f(x) = …
                raise BadInput(str(err)) from None
            unvalued.append(err)
            continue
        except ParseError as err:
            raise BadInput(str(err)) from None
        except ValueError as err:  # an --at name that cannot be a variable
            raise BadInput(f"--at: {err}") from None
        declared = [n for n in graph.inputs if n not in point]  # f(x, y) = … without y
        if not unvalued and declared:
            raise BadInput(_needs_values(declared))
        break
    if len(unvalued) == 1:
        err = unvalued[0]
        where = f"'{err.name}' at column {err.column}"
        raise BadInput(_needs_values([err.name], where) + err.hint.replace(" — ", " — or "))
    if unvalued:
        raise BadInput(_needs_values([e.name for e in unvalued]))
    return graph


def _needs_values(names: list[str], shown: str = "") -> str:
    """ "'x' and 'y' need values: add --at x=…,y=… (for example --at x=1,y=2)"."""
    listed = ", ".join(f"'{n}'" for n in names[:-1]) + " and " if len(names) > 1 else ""
    need = "needs a value" if len(names) == 1 else "need values"
    template = ",".join(f"{n}=…" for n in names)
    example = ",".join(f"{n}={k}" for k, n in enumerate(names, 1))
    shown = shown or f"{listed}'{names[-1]}'"
    return f"{shown} {need}: add --at {template} (for example --at {example})"


def run(args: argparse.Namespace) -> int:
    """Evaluate, print, return the exit status."""
    from .grad import gradient

    point = parse_point(args.at)
    graph = parse_with_values(args.expr, point)
    if args.grad:
        graph = gradient(graph)  # outputs: the value, then one partial per input
    results = graph.eval(point)
    value, partials = results[0], dict(zip(graph.inputs, results[1:], strict=False))
    if args.json:
        obj: dict[str, Any] = {"value": json_number(value)}
        if args.grad:
            obj["gradient"] = {k: json_number(v) for k, v in partials.items()}
        print(json.dumps(obj, allow_nan=False))
    else:
        print(f"value = {value!r}")
        for name, d in partials.items():
            print(f"d/d{name} = {d!r}")
    return 0
