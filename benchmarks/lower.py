"""Lowering speed and code size: value + gradient of the 20 core benchmark expressions
printed for all eight backends, next to sympy's ``ccode`` on the same expressions.

    python benchmarks/lower.py [--repeat R]

tang: ``tang.lower.schedule`` once per expression, then every backend's printer (the time
includes the scheduling, CSE included, but not the gradient, which both sides are given).
sympy: the very same value and gradient nodes, turned into sympy expressions by
``tang.expr.sympy.to_sympy`` (not timed), then ``sympy.ccode`` of each output — one
backend, C — and, for a like-for-like shape, ``sympy.cse`` followed by ``ccode``.
Times are medians of R interleaved runs in this one process (caches warm on both sides);
the target is tang ≥ 50× faster than ccode alone, per backend printed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from expressions import EXPRESSIONS
from harness import median_interleaved

from tang.expr.grad import gradient
from tang.expr.parse import parse_graph
from tang.expr.sympy import to_sympy
from tang.lower import BACKENDS, schedule

INPUTS = ("x", "y", "z")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import sympy

    graphs = [gradient(parse_graph(text, variables=INPUTS)) for text in EXPRESSIONS.values()]
    sources: dict[str, list[str]] = {}

    def tang_all() -> None:
        for name in BACKENDS:
            sources[name] = []
        for g in graphs:
            prog = schedule(g.outputs, g.inputs)
            for name, printer in BACKENDS.items():
                sources[name].append(printer.render(prog).source)

    exprs = [to_sympy(list(g.outputs)) for g in graphs]
    ccode_out: list[str] = []

    def sympy_ccode() -> None:
        ccode_out.clear()
        for outs in exprs:
            ccode_out.extend(sympy.ccode(e) for e in outs)

    def sympy_cse_ccode() -> None:
        for outs in exprs:
            temps, reduced = sympy.cse(outs)
            for sym, e in temps:
                sympy.ccode(e, assign_to=sym)
            for e in reduced:
                sympy.ccode(e)

    tang_s, ccode_s, cse_s = median_interleaved(
        [tang_all, sympy_ccode, sympy_cse_ccode], args.repeat
    )
    per_backend = tang_s / len(BACKENDS)
    nodes = sum(len(g) for g in graphs)
    print(f"{len(graphs)} expressions, value + gradient in x, y, z: {nodes} graph nodes")
    print(f"tang, all {len(BACKENDS)} backends : {tang_s * 1e3:8.2f} ms")
    print(f"tang, per backend       : {per_backend * 1e3:8.2f} ms")
    print(f"sympy ccode (C only)    : {ccode_s * 1e3:8.2f} ms")
    print(f"sympy cse + ccode       : {cse_s * 1e3:8.2f} ms")
    print(f"ratio ccode / tang (all eight) : {ccode_s / tang_s:6.1f}x")
    print(f"ratio ccode / tang per backend : {ccode_s / per_backend:6.1f}x   (target >= 50x)")
    print(f"ratio cse+ccode / tang per backend : {cse_s / per_backend:6.1f}x")
    print()
    print("emitted code (all 20 kernels)    lines      bytes")
    for name, texts in sources.items():
        lines = sum(t.count("\n") for t in texts)
        print(f"  {name:<30}{lines:7d}{sum(map(len, texts)):11d}")
    ccode_bytes = sum(map(len, ccode_out))
    print(f"  {'sympy ccode (expressions only)':<30}{len(ccode_out):7d}{ccode_bytes:11d}")


if __name__ == "__main__":
    main()
