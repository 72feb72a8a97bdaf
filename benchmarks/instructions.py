"""Instructions per run of tang's hot paths, counted by valgrind (callgrind): on a shared,
noisy machine, where timings of the same code vary by 2×, these counts repeat exactly, so a
change of a few percent shows. Each count is CPython's, not Pyodide's; compare versions.

    python benchmarks/instructions.py [--against REV] [--workload NAME ...]

Workloads (each over the 20 core expressions of benchmarks/expressions.py):

    editor   playground.compile on every keystroke that yields kernels (parse, grad, exact
             simplify, schedule, eight printers, layout)
    keystroke  the same keystrokes as the worker serves them: JSON text in, through
             demos.api's dispatcher and the handler, to the JSON text of the answer; the
             parameters each revision's page sends (the tab on screen, where it can)
    core     parse + grad + simplify, as in benchmarks/core.py (a)
    lower    schedule + eight printers of each finished expression's value and gradient

A count is the difference between runs of 3 and 1 repetitions, halved: start-up and imports
cancel. Each repetition ends by freeing its dead graph nodes (``collect(young=True)`` from
``tang.expr.graph``, as the page's worker does after each request; revisions before it
freed each node as it died), so freeing is counted either way.
``--against REV`` counts the same workloads in a temporary worktree of that git revision
and prints the ratio. Needs valgrind (Debian package ``valgrind``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import ROOT, worktree

# Each workload: setup, then the body of ``go()``; the driver calls go() once to warm up, then
# N more times.
WORKLOADS: dict[str, tuple[str, str]] = {
    "editor": (
        """
from demos import playground as P
texts = [t[:k] for t in EXPRESSIONS.values() for k in range(1, len(t) + 1)]
texts = [t for t in texts if "kernels" in P.compile_expression(t)]
""",
        """
for t in texts:
    P._last.update(key=None, answer=None)
    P.compile_expression(t)
""",
    ),
    "keystroke": (
        """
import asyncio, inspect, json
from demos import api, playground as P
texts = [t[:k] for t in EXPRESSIONS.values() for k in range(1, len(t) + 1)]
# as each revision's page asks: the tab on screen only, where the handler takes backends
takes = inspect.signature(P.compile_expression).parameters
tab = {"backends": ["wgsl"]} if "backends" in takes else {}
texts = [json.dumps({"expr": t, **tab}) for t in texts if "kernels" in P.compile_expression(t)]
loop = asyncio.new_event_loop()  # one loop, as the worker has
""",
        """
for k, params in enumerate(texts):
    P._last.update(key=None, answer=None)
    loop.run_until_complete(api.dispatch_json("playground.compile", params, k))
""",
    ),
    "core": (
        """
import tang
from tang.expr.parse import parse_graph
""",
        """
for t in EXPRESSIONS.values():
    tang.simplify(tang.grad(parse_graph(t, variables=("x", "y", "z"))))
""",
    ),
    "lower": (
        """
from demos import playground as P
from tang.lower import BACKENDS, schedule
graphs = [P.build(P.parse_function(t)) for t in EXPRESSIONS.values()]
""",
        """
for g, labels in graphs:
    prog = schedule(g.outputs, g.inputs, output_names=labels)
    for printer in BACKENDS.values():
        printer.render(prog).line_serials()
""",
    ),
}

CALLGRIND = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]

DRIVER = """
import sys
sys.path[:0] = [{root!r}, {benchmarks!r}]
from expressions import EXPRESSIONS
from tang.expr import graph as _graph
{setup}
# what the page's worker does after each request; older revisions freed nodes as they died
_collect = (lambda: _graph.collect(young=True)) if hasattr(_graph, "collect") else (lambda: 0)
def go():
{body}
    _collect()
go()
for _ in range(int(sys.argv[1])):
    go()
"""


def count(root: Path, workload: str) -> int:
    """Instructions of one ``go()`` of ``workload`` with tang imported from ``root``."""
    setup, body = WORKLOADS[workload]
    source = DRIVER.format(
        root=str(root),
        benchmarks=str(ROOT / "benchmarks"),  # the same expressions for every revision
        setup=setup,
        body="\n".join("    " + line for line in body.strip().splitlines()),
    )
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    totals = []
    try:
        for runs in (1, 3):
            python = os.path.realpath(sys.executable)  # not a launcher script: valgrind
            out = subprocess.run(  # would count the script's shell instead
                [*CALLGRIND, python, f.name, str(runs)],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONHASHSEED": "0"},
                check=True,
            )
            found = re.search(r"Collected : (\d+)", out.stderr)
            if found is None:
                raise RuntimeError(f"callgrind printed no count:\n{out.stderr[-2000:]}")
            totals.append(int(found.group(1)))
    finally:
        os.unlink(f.name)
    return (totals[1] - totals[0]) // 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", help="also count this git revision")
    parser.add_argument("--workload", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("needs valgrind: apt-get install valgrind", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        other = stack.enter_context(worktree(args.against)) if args.against else None
        against = f"{args.against:>14}" if other else ""
        print(f"  {'workload':<10}{'M instructions':>16}{against}")
        for name in args.workload:
            here = count(ROOT, name)
            line = f"  {name:<10}{here / 1e6:16.1f}"
            if other is not None:
                there = count(other, name)
                line += f"{there / 1e6:14.1f}   this / that: {here / there:.3f}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
