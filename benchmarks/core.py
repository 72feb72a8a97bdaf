"""Speed of the numeric core, each figure next to a peer measured in the same run.

    python benchmarks/core.py [--repeat R]

(a) parse + grad + simplify of the 20 core expressions (tang's parser builds the graph as
    it reads, so parsing is the trace), next to sympy's ``diff`` in x, y and z plus ``cse``
    of value and gradient on the same expressions (sympy is handed its expressions already
    built: its parsing is not timed; its cache is cleared before each run, as tang's
    results are dropped, and their nodes freed, in each run). Target: tang ≥ 100× faster.
    Then parse alone, and parse + grad, raced against the peer the same way: the ratio the
    whole would reach if the steps after them cost nothing.
(b) the gradient graph of a 1,600-step leapfrog orbit (``tang.physics.gravity.leapfrog_orbit``,
    written once over any number): trace + reverse mode. Target ≤ 0.5 s. For scale, the
    same simulation run once on plain floats.
(c) a Dual multiply-add ``a = a*b + c`` in a loop, next to the same loop on floats (loop
    overhead included in both). Target ≤ 12×.

Times are the minimum (or median, where said) of R runs in this one process, interleaved
so a busy machine slows each contender alike.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from expressions import EXPRESSIONS
from harness import Stopwatch, fastest_interleaved

import tang
from tang.expr.graph import collect
from tang.expr.parse import parse_graph
from tang.physics.gravity import leapfrog_orbit

INPUTS = ("x", "y", "z")


def sympy_expressions() -> list[object]:
    """The same 20 expressions in sympy, read by sympy itself (this is not timed)."""
    import sympy as sp

    names = {
        "where": lambda c, a, b: sp.Piecewise((a, c), (b, True)),
        "atan2": sp.atan2,
        "pow": sp.Pow,
        "max": sp.Max,
        "min": sp.Min,
        "abs": sp.Abs,
        "e": sp.E,
        "pi": sp.pi,
    }
    names.update({n: sp.Symbol(n, real=True) for n in INPUTS})
    return [sp.sympify(text.replace("^", "**"), locals=names) for text in EXPRESSIONS.values()]


def bench_expressions(repeat: int) -> None:
    import sympy as sp
    from sympy.core.cache import clear_cache

    texts = list(EXPRESSIONS.values())
    exprs = sympy_expressions()
    symbols = [sp.Symbol(n, real=True) for n in INPUTS]

    def sympy_one(expr: object) -> Callable[[], object]:
        def run() -> object:
            clear_cache()  # sympy memoizes: without this, reruns would only look results up
            return sp.cse([expr, *(sp.diff(expr, s) for s in symbols)])

        return run

    fns = [f for t, e in zip(texts, exprs, strict=True) for f in (tang_steps(t), sympy_one(e))]
    times = fastest_interleaved(fns, repeat)
    print(f"(a) parse + grad + simplify, 20 expressions (min of {repeat}):")
    print(
        f"    {'expression':<15}{'tang ms':>10}{'sympy ms':>11}{'ratio':>9}   peer: sympy diff+cse"
    )
    total_tang = total_sympy = 0.0
    ratios = []
    for i, name in enumerate(EXPRESSIONS):
        t, s = times[2 * i], times[2 * i + 1]
        total_tang, total_sympy = total_tang + t, total_sympy + s
        ratios.append(s / t)
        print(f"    {name:<15}{t * 1e3:10.3f}{s * 1e3:11.2f}{s / t:8.0f}×")
    print(
        f"    total: tang {total_tang * 1e3:.1f} ms, sympy {total_sympy * 1e3:.1f} ms: "
        f"tang {total_sympy / total_tang:.0f}× faster (per expression: min "
        f"{min(ratios):.0f}×, median {statistics.median(ratios):.0f}×; target ≥ 100×)"
    )
    # the same race for the first steps alone: the ratio the whole could reach if the
    # steps after them cost nothing (each tang run again follows a sympy run)
    firsts = [("parse", 1), ("parse + grad", 2)]
    fns = [
        f
        for t, e in zip(texts, exprs, strict=True)
        for f in (tang_steps(t, steps) for _, steps in firsts)
        for f in (f, sympy_one(e))
    ]
    times = fastest_interleaved(fns, repeat)
    width = 2 * len(firsts)  # per expression: each first step, then a sympy run
    chunks = [times[i : i + width] for i in range(0, len(times), width)]
    peer = sum(min(c[1::2]) for c in chunks)
    print(
        "    the first steps alone, raced the same way (the ratio the whole would reach if "
        "the later steps cost nothing): "
        + ", ".join(
            f"{name} {sum(c[2 * k] for c in chunks) * 1e3:.1f} ms "
            f"{peer / sum(c[2 * k] for c in chunks):.0f}×"
            for k, (name, _) in enumerate(firsts)
        )
    )
    phases = tang_phases(texts, repeat)
    print(
        "    tang alone, one expression after another, by step (min of each): "
        + ", ".join(f"{step} {ms:.1f} ms" for step, ms in phases.items())
        + f"; {sum(phases.values()):.1f} ms in all (above, each run follows a sympy run,"
        " which leaves the CPU caches cold for tang)"
    )


def tang_steps(text: str, steps: int = 3) -> Callable[[], int]:
    """A run of tang's first ``steps`` of parse, grad and simplify on ``text``; the nodes it
    dropped are freed in the run (their cost belongs to it)."""

    def run() -> int:
        graph = parse_graph(text, variables=INPUTS)
        if steps >= 2:
            graph = tang.grad(graph)
        if steps >= 3:
            tang.simplify(graph)
        del graph
        return collect()

    return run


def tang_phases(texts: list[str], repeat: int) -> dict[str, float]:
    """Milliseconds of parse, grad and simplify over all ``texts``, each the sum of its
    per-expression minimum (fresh nodes every run, as in the timing above)."""
    best: dict[str, list[float]] = {step: [math.inf] * len(texts) for step in STEPS}
    for _ in range(repeat):
        for k, text in enumerate(texts):
            watch = Stopwatch()
            graph = parse_graph(text, variables=INPUTS)
            parsed = watch.lap()
            gradient = tang.grad(graph)
            graded = watch.lap()
            tang.simplify(gradient)
            simplified = watch.lap()
            del graph, gradient
            collect()
            steps = (parsed, graded, simplified, watch.lap())
            for step, t in zip(STEPS, steps, strict=True):
                best[step][k] = min(best[step][k], t)
    return {step: sum(ts) * 1e3 for step, ts in best.items()}


STEPS = ("parse", "grad", "simplify", "free")


def miss(x: object, y: object, vx: object, vy: object) -> object:
    """Squared distance from the orbit's end point to a target: one number to differentiate."""
    fx, fy, _, _ = leapfrog_orbit(x, y, vx, vy, steps=1600, dt=0.01)
    return (fx - 0.5) ** 2 + (fy + 0.8) ** 2


def bench_orbit(repeat: int) -> None:
    build_times, float_times, sizes = [], [], (0, 0)
    for _ in range(repeat):
        watch = Stopwatch()
        graph = tang.trace(miss)
        gradient = tang.grad(graph)
        build_times.append(watch.lap())
        watch.restart()
        miss(1.0, 0.0, 0.0, 1.1)
        float_times.append(watch.lap())
        sizes = (len(graph), len(gradient))
        del graph, gradient
        collect()  # free the graphs now, outside the timed part
    b, f = statistics.median(build_times), statistics.median(float_times)
    print(f"(b) gradient graph of a 1,600-step leapfrog orbit (median of {repeat}):")
    print(
        f"    trace + grad: {b:.3f} s for {sizes[0]} + {sizes[1]} nodes (target ≤ 0.5 s); "
        f"min {min(build_times):.3f} s"
    )
    print(f"    peer: the same simulation once on floats: {f * 1e3:.1f} ms ({b / f:.0f}×)")


def bench_dual(repeat: int) -> None:
    n = 20_000  # short runs, many of them: the minimum then finds a quiet slot for each

    def loop(a: object, b: object, c: object) -> object:
        for _ in range(n):
            a = a * b + c  # type: ignore[operator]
        return a

    d = tang.Dual
    cases = [
        ("floats", lambda: loop(0.5, 0.999, 0.001)),
        ("Dual·Dual + Dual", lambda: loop(d(0.5, 1.0), d(0.999, 0.0), d(0.001, 0.0))),
        ("Dual·float + float", lambda: loop(d(0.5, 1.0), 0.999, 0.001)),
    ]
    times = fastest_interleaved([fn for _, fn in cases], repeat)
    base = times[0]
    print(f"(c) multiply-add a = a*b + c, {n} times in a loop (min of {repeat}):")
    for (name, _), t in zip(cases, times, strict=True):
        print(f"    {name:<20}{t / n * 1e9:8.0f} ns{t / base:8.1f}×   peer: floats")
    print("    target: Dual ≤ 12× floats")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    bench_expressions(args.repeat)
    bench_orbit(args.repeat)
    bench_dual(max(5 * args.repeat, 25))


if __name__ == "__main__":
    main()
