"""``tang run EXPR [--grad] [--points N] [--device auto|native|c|cpu]``: evaluate an expression
(and its gradient) over N points on a device; print the device, timings and a checksum.

The points are ``tang.gpu.batch.sample_points`` (deterministic, the same in the page), so
the checksum of a run can be compared across devices and machines. This module sits above
both ``tang.compile`` (text → plan) and ``tang.gpu`` (plan → numbers), so the device layer
never imports the parser.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from .cli_common import COUNT_FORMS, BadInput, count, expression_command

HELP = "evaluate an expression (and its gradient) over many points on the GPU or CPU"
EXAMPLES = (
    "python -m tang run 'sin(x*y) + x^2' --points 1e6",
    "python -m tang run 'x*sin(x)' --grad --points 2^16 --device cpu --json",
)


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand."""
    p = expression_command(subparsers, "run", HELP, EXAMPLES)
    p.add_argument("--grad", action="store_true", help="also evaluate every partial derivative")
    p.add_argument(
        "--points",
        type=count,
        default="2^20",
        metavar="N",
        help=f"how many points, written like {COUNT_FORMS}",
    )
    p.add_argument(
        "--device",
        default="auto",
        choices=("auto", "native", "c", "cpu"),
        help="native: wgpu-py (Vulkan, Metal, DX12); c: compiled C (cc -O3 -march=native);"
        " cpu: pure Python; auto: a GPU adapter, else compiled C, else pure Python",
    )
    p.add_argument(
        "--range",
        default="-2,2",
        metavar="LO,HI",
        help="where each variable lies; a negative LO needs '=', as in --range=-3,3",
    )
    p.add_argument("--repeat", type=int, default=1, metavar="R", help="runs; the best is shown")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def _range(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(t) for t in text.split(","))
    except ValueError:
        raise BadInput(f"--range expects LO,HI like -2,2, got {text!r}") from None
    return lo, hi


def run(args: argparse.Namespace) -> int:
    """Evaluate, print, return the exit status."""
    from .compile import expression_plan
    from .gpu import GPUError, device
    from .gpu.batch import evaluate, sample_points

    if args.repeat < 1:
        raise BadInput("--repeat must be at least 1")
    try:
        p = expression_plan(args.expr, args.grad)
    except (ValueError, TypeError) as err:  # text (a ParseError), or a graph that cannot run
        raise BadInput(str(err)) from None
    lo, hi = _range(args.range)
    try:
        points = sample_points(p.inputs, args.points, lo, hi)
        dev = device(None if args.device == "auto" else args.device, fallback=args.device == "auto")
        runs = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            batch = evaluate(p, points, device=dev, n=args.points)
            runs.append((time.perf_counter() - t, batch))
    except GPUError as err:  # DataError included: a bad --points or --range
        print(f"tang run: error: {err.reason}", file=sys.stderr)
        return 2 if isinstance(err, ValueError) else 1
    best, batch = min(runs, key=lambda r: r[0])
    first = runs[0][0]
    if args.json:
        out = {**batch.summary(), "device_name": dev.name, "skipped": dev.skipped}
        out.update(first_seconds=first, best_seconds=best, inputs=list(p.inputs))
        print(json.dumps(out))
        return 0
    print(f"device    {dev.kind}: {dev.name}")
    for backend, why in dev.skipped:
        print(f"skipped   {backend}: {why}")
    print(f"outputs   {', '.join(p.names)} over {batch.n:,} points of ({', '.join(p.inputs)})")
    steps = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in batch.seconds.items())
    print(f"time      {best * 1e3:.1f} ms ({steps}); first run {first * 1e3:.1f} ms")
    print(f"rate      {batch.n / best / 1e6:.3g} M points/s")
    print(f"checksum  {batch.checksum():.9g} ({batch.nonfinite()} non-finite values)")
    return 0
