"""``tang eval EXPR --at x=1,y=2 [--grad] [--json]``: value (and gradient) of an expression.

The variables are the names given with ``--at`` (or those a leading ``f(x, y) = …``
declares; each then needs a value). With ``--json`` the output is exactly one object,
``{"value": v}`` plus ``"gradient": {name: d, …}`` when ``--grad`` is given, in the order
of the variables; NaN and infinities are the strings "nan", "inf" and "-inf".
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..cli import BadInput, expression_command, json_number

HELP = "evaluate an expression (and its gradient) at a point"


def register(subparsers: Any) -> None:
    """Add the ``eval`` subcommand."""
    p = expression_command(subparsers, "eval", HELP)
    p.add_argument(
        "--at",
        action="append",
        default=[],
        metavar="x=1,y=2",
        help="variable values (repeatable); a value may be a constant expression like pi/2",
    )
    p.add_argument("--grad", action="store_true", help="also print the gradient")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def parse_point(items: list[str]) -> dict[str, float]:
    """``["x=1,y=2", "z=pi"]`` → {"x": 1.0, "y": 2.0, "z": 3.14…}; BadInput if malformed."""
    from .parse import ParseError, parse

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
            except ParseError as err:
                raise BadInput(f"--at value of '{name}': {err}") from None
    return point


def run(args: argparse.Namespace) -> int:
    """Evaluate, print, return the exit status."""
    from .grad import gradient
    from .parse import ParseError, parse_graph

    point = parse_point(args.at)
    try:
        names = tuple(point)
        graph = parse_graph(args.expr, variables=names)
    except ParseError as err:
        raise BadInput(str(err)) from None
    except ValueError as err:  # an --at name that cannot be a variable
        raise BadInput(f"--at: {err}") from None
    missing = [n for n in graph.inputs if n not in point]
    if missing:
        raise BadInput(f"no value for {', '.join(missing)}: add it to --at")
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
