"""``tang kernel EXPR --backend NAME [--grad] [--vars x,y,z]``: print an expression (and its
gradient) as a kernel or a plain function for one of the eight backends.

The inputs are ``--vars`` in that order, else the variables a leading ``f(x, y) = …``
declares, else the ones the expression uses, sorted. The gradient is simplified with the
exact (IEEE-preserving) rules only, so the printed code computes the same bits.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..cli_common import BadInput, expression_command

HELP = "print an expression (and its gradient) as code for one backend"
EXAMPLES = (
    "python -m tang kernel 'x*sin(y)' --backend c --grad",
    "python -m tang kernel 'f(x, y) = x^2 + y' --backend python --shape function",
)
DECLARATION = re.compile(r"\s*[A-Za-z_]\w*\s*\([\w\s,]*\)\s*=(?!=)")


def register(subparsers: Any) -> None:
    """Add the ``kernel`` subcommand."""
    from . import BACKENDS

    p = expression_command(subparsers, "kernel", HELP, EXAMPLES)
    p.add_argument(
        "--backend",
        default="wgsl",
        metavar="NAME",
        help=f"one of {', '.join(BACKENDS)}",
    )
    p.add_argument("--grad", action="store_true", help="also compute the gradient")
    p.add_argument(
        "--vars",
        metavar="x,y,z",
        help="the inputs, in order (default: those f(…) = names, else those used, sorted)",
    )
    p.add_argument("--dtype", choices=["f32", "f64"], help="float type (default: the backend's)")
    p.add_argument(
        "--shape",
        choices=["kernel", "function"],
        default="kernel",
        help="an element-wise kernel or a plain function (c, javascript, python)",
    )
    p.add_argument("--name", default="f", help="kernel or function name")
    p.add_argument("--no-inline", action="store_true", help="one line per graph node")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Parse, differentiate, lower and print; bad input raises BadInput (exit status 2)."""
    from ..expr.grad import gradient
    from ..expr.graph import Graph, variables
    from ..expr.parse import ParseError, parse_graph
    from ..expr.simplify import simplify
    from . import BACKENDS, lower

    if args.backend not in BACKENDS:
        raise BadInput(f"unknown backend '{args.backend}'; choose from {', '.join(BACKENDS)}")
    names = None
    if args.vars is not None:
        names = [v.strip() for v in args.vars.split(",") if v.strip()]
    try:
        graph = parse_graph(args.expr, variables=names)
    except ParseError as err:
        raise BadInput(f"{err} in {args.expr!r}") from None
    except ValueError as err:  # a --vars name that cannot be a variable
        raise BadInput(f"--vars: {err}") from None
    inputs = list(graph.inputs)
    if names is None and not DECLARATION.match(args.expr):
        inputs = sorted(variables(graph.outputs))
    graph = Graph(inputs, graph.outputs)
    labels = ["f"]
    if args.grad:
        graph = simplify(gradient(graph), assume_finite=False)
        labels += [f"df/d{v}" for v in inputs]
    try:
        low = lower(
            graph.outputs,
            inputs,
            args.backend,
            shape=args.shape,
            dtype=args.dtype,
            name=args.name,
            inline=not args.no_inline,
            output_names=labels,
        )
    except (ValueError, TypeError) as err:
        raise BadInput(str(err)) from None
    print(low.source, end="")
    return 0
