"""tang.solve on the Moré–Garbow–Hillstrom problems, each figure beside scipy's in the same run.

    python benchmarks/solvers.py [--only NAME,NAME] [--repeat R]

(a) Levenberg–Marquardt: ``tang.solve.least_squares`` (a port of MINPACK's lmder) next to
    ``scipy.optimize.least_squares(method="lm", jac=…)``, which calls MINPACK. Both get the
    same exact Jacobian, one tang Dual pass with n tangents (``tang.jacobian``), so the
    comparison is of the algorithms. Counted alike on both sides: ``f`` = plain residual
    evaluations, ``J`` = Jacobian evaluations; scipy's are the calls its callables actually
    received (its reported njev leaves out the Jacobian at the final x that its wrapper asks
    for; tang counts that one in njev).
(b) L-BFGS: ``tang.solve.minimize`` next to ``scipy.optimize.minimize(method="L-BFGS-B",
    jac=True)`` on f = Σ r², both at their defaults (gtol 1e-5, ftol 2.2e-9, memory 10),
    each evaluation giving f and ∇f from one Dual pass; ``evals`` = calls of that pass.
(c) the same with gtol 1e-10 and ftol 1e-15 on both sides, the settings under which
    tests/test_solve_mgh.py asks tang's L-BFGS for the published minima.

Per problem: the evaluations, the final f = Σ r² of each (✓ where it meets one of the
problem's published minima to a relative 1e-6, or 1e-10 absolute where the minimum is 0),
and the totals; the issue's target is that tang needs no more evaluations than scipy in
total. Times are the fastest of R runs of the whole set (both sides call the same tang
functions, so they are dominated by those; scipy's solver loop is compiled). scipy is the
only peer and optional: without it, tang's figures are printed alone.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy on one core, as tang runs
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import fastest_interleaved

import tang
from tang import linalg
from tang.solve import least_squares, minimize
from tang.solve.derivatives import Objective
from tang.solve.mgh import PROBLEMS, Problem


@dataclass
class Run:
    """One solver on one problem: evaluations of f and J (or of f with ∇f) and the final f."""

    f_evals: int
    j_evals: int
    f: float

    @property
    def total(self) -> int:
        return self.f_evals + self.j_evals


def meets(problem: Problem, f: float) -> bool:
    """Whether f is one of the problem's published minima (relative 1e-6; 1e-10 at 0)."""
    return any(abs(f - v) <= (1e-10 if v == 0.0 else 1e-6 * abs(v)) for v in problem.minima)


def scipy_or_none() -> object | None:
    try:
        import scipy.optimize as so
    except ImportError:
        return None
    return so


# ---------------------------------------------------------------------------------------
# (a) Levenberg–Marquardt


def tang_lm(p: Problem) -> Run:
    res = least_squares(p.residuals, p.x0)
    return Run(res.nfev, res.njev, 2.0 * res.cost)


def scipy_lm(p: Problem, so: object) -> Run:
    import numpy as np

    counts = [0, 0]
    jacobian = tang.jacobian(lambda *xs: p.residuals(list(xs)))

    def fun(x: object) -> object:
        counts[0] += 1
        return np.array([float(v) for v in p.residuals([float(v) for v in x])])  # type: ignore[attr-defined]

    def jac(x: object) -> object:
        counts[1] += 1
        return np.array(jacobian(*(float(v) for v in x)), dtype=float)  # type: ignore[attr-defined]

    res = so.least_squares(fun, np.array(p.x0), jac=jac, method="lm")  # type: ignore[attr-defined]
    return Run(counts[0], counts[1], 2.0 * float(res.cost))


# ---------------------------------------------------------------------------------------
# (b) L-BFGS


def tang_lbfgs(p: Problem, tight: bool = False) -> Run:
    res = minimize(p.objective, p.x0, **(TIGHT if tight else {}))
    return Run(res.nfev, 0, res.fun)


TIGHT = {"gtol": 1e-10, "ftol": 1e-15}  # the settings of tests/test_solve_mgh.py


def scipy_lbfgs(p: Problem, so: object, tight: bool = False) -> Run:
    import numpy as np

    objective = Objective(p.objective, p.n, None)  # one Dual pass: f and ∇f

    def fg(x: object) -> tuple[float, object]:
        value, gradient = objective([float(v) for v in x])  # type: ignore[attr-defined]
        return value, np.array(gradient)

    options = TIGHT if tight else {}
    res = so.minimize(fg, np.array(p.x0), jac=True, method="L-BFGS-B", options=options)  # type: ignore[attr-defined]
    return Run(objective.nfev, 0, float(res.fun))


# ---------------------------------------------------------------------------------------
# the tables


def timing_line(
    tang_run: Callable[[], object], scipy_run: Callable[[], object] | None, repeat: int
) -> str:
    """The whole set's time for tang, and for scipy beside it when it is installed."""
    times = fastest_interleaved([tang_run] if scipy_run is None else [tang_run, scipy_run], repeat)
    line = f"    time for the whole set (fastest of {repeat}): tang {times[0]:.3f} s"
    if scipy_run is not None:
        line += f", scipy {times[1]:.3f} s (both evaluate with tang's Duals)"
    return line


def mark(p: Problem, f: float) -> str:
    return f"{f:12.5e}{'✓' if meets(p, f) else '✗'}"


def bench_lm(problems: list[Problem], so: object | None, repeat: int) -> None:
    print("(a) Levenberg–Marquardt: tang.solve.least_squares vs scipy least_squares(method='lm')")
    print(f"    {'problem':<26}{'n':>3}{'m':>4}   {'tang f':>6}{'J':>5}   {'scipy f':>7}{'J':>5}"
          f"   {'tang final f':>13}  {'scipy final f':>13}")  # fmt: skip
    totals = [0, 0, 0, 0]
    met = [0, 0]
    for p in problems:
        t = tang_lm(p)
        s = scipy_lm(p, so) if so else None
        totals[0] += t.f_evals
        totals[1] += t.j_evals
        met[0] += meets(p, t.f)
        line = f"    {p.name:<26}{p.n:>3}{p.m:>4}   {t.f_evals:>6}{t.j_evals:>5}   "
        if s:
            totals[2] += s.f_evals
            totals[3] += s.j_evals
            met[1] += meets(p, s.f)
            line += f"{s.f_evals:>7}{s.j_evals:>5}   {mark(p, t.f)}  {mark(p, s.f)}"
        else:
            line += f"{'—':>7}{'—':>5}   {mark(p, t.f)}"
        print(line)
    count = len(problems)
    print(f"    total: tang {totals[0]} f + {totals[1]} J = {totals[0] + totals[1]} evaluations, "
          f"meets {met[0]}/{count}")  # fmt: skip
    if so:
        verdict = "met" if totals[0] + totals[1] <= totals[2] + totals[3] else "NOT met"
        print(f"           scipy {totals[2]} f + {totals[3]} J = {totals[2] + totals[3]}, "
              f"meets {met[1]}/{count}; target: tang ≤ scipy in total ({verdict})")  # fmt: skip
    print(
        timing_line(
            lambda: [tang_lm(p) for p in problems],
            (lambda: [scipy_lm(p, so) for p in problems]) if so else None,
            repeat,
        )
    )


def bench_lbfgs(problems: list[Problem], so: object | None, repeat: int) -> None:
    print("(b) L-BFGS at the defaults: tang.solve.minimize vs scipy minimize(method='L-BFGS-B')")
    lbfgs_table(problems, so, repeat, tight=False)


def bench_lbfgs_tight(problems: list[Problem], so: object | None, repeat: int) -> None:
    print(f"(c) L-BFGS asked for the minimum ({TIGHT}, as the tests do), both solvers")
    lbfgs_table(problems, so, repeat, tight=True)


def lbfgs_table(problems: list[Problem], so: object | None, repeat: int, tight: bool) -> None:
    print(f"    {'problem':<26}{'n':>3}   {'tang evals':>10}   {'scipy evals':>11}"
          f"   {'tang final f':>13}  {'scipy final f':>13}")  # fmt: skip
    totals = [0, 0]
    both = [0, 0, 0]  # problems both solvers meet, and their evaluations
    met = [0, 0]
    for p in problems:
        t = tang_lbfgs(p, tight)
        s = scipy_lbfgs(p, so, tight) if so else None
        totals[0] += t.f_evals
        met[0] += meets(p, t.f)
        line = f"    {p.name:<26}{p.n:>3}   {t.f_evals:>10}   "
        if s:
            totals[1] += s.f_evals
            met[1] += meets(p, s.f)
            if meets(p, t.f) and meets(p, s.f):
                both[0] += 1
                both[1] += t.f_evals
                both[2] += s.f_evals
            line += f"{s.f_evals:>11}   {mark(p, t.f)}  {mark(p, s.f)}"
        else:
            line += f"{'—':>11}   {mark(p, t.f)}"
        print(line)
    count = len(problems)
    line = f"    total: tang {totals[0]} evaluations, meets {met[0]}/{count}"
    if so:
        line += (f"; scipy {totals[1]}, meets {met[1]}/{count}; target: tang ≤ scipy in total "
                 f"({'met' if totals[0] <= totals[1] else 'NOT met'})")  # fmt: skip
        print(line)
        line = (f"    on the {both[0]} problems both meet: tang {both[1]} evaluations, "
                f"scipy {both[2]}")  # fmt: skip
    print(line)
    print(
        timing_line(
            lambda: [tang_lbfgs(p, tight) for p in problems],
            (lambda: [scipy_lbfgs(p, so, tight) for p in problems]) if so else None,
            repeat,
        )
    )


# ---------------------------------------------------------------------------------------
# (d) tang.linalg's solve and svd against numpy's (LAPACK) call, and a derivative through
# solve against JAX's jvp


def _matrix(n: int, seed: int) -> list[list[float]]:
    rng = random.Random(seed)
    return [[rng.gauss(0.0, 1.0) + (n if i == j else 0.0) for j in range(n)] for i in range(n)]


def _linalg_runs(name: str, a: list[list[float]], b: list[float], np: object | None) -> list:
    """tang's call, and numpy's from the same lists and from ready arrays (when installed)."""
    ours = {"solve": lambda: linalg.solve(a, b), "svd": lambda: linalg.svd(a)}[name]
    if np is None:
        return [ours]
    theirs = {"solve": np.linalg.solve, "svd": lambda m, _: np.linalg.svd(m)}[name]
    arr, vec = np.array(a), np.array(b)
    return [ours, lambda: theirs(np.array(a), np.array(b)), lambda: theirs(arr, vec)]


def bench_linalg(problems: list[Problem], so: object | None, repeat: int) -> None:
    print("(d) tang.linalg (pure Python) vs numpy.linalg (LAPACK, one thread) on random n×n;")
    print("    numpy is timed from Python lists (what tang takes) and from ready arrays")
    try:
        import numpy as np
    except ImportError:
        print("    peer: numpy is not installed (pip install numpy): tang's figures alone")
        np = None
    print(f"    {'op':<6}{'n':>4}{'tang':>12}{'numpy(list)':>13}{'numpy(array)':>14}"
          f"{'÷ list':>9}{'÷ array':>9}")  # fmt: skip
    for name in ("solve", "svd"):
        for n in (3, 6, 12, 50):
            a, b = _matrix(n, n), [float(i) for i in range(n)]
            t = fastest_interleaved(_linalg_runs(name, a, b, np), max(3, repeat * (200 // n)))
            line = f"    {name:<6}{n:>4}{t[0] * 1e6:>10.1f}µs"
            if np is not None:
                line += f"{t[1] * 1e6:>11.1f}µs{t[2] * 1e6:>12.1f}µs"
                line += f"{t[0] / t[1]:>8.1f}×{t[0] / t[2]:>8.1f}×"
            print(line)
    _derivative_through_solve(repeat)


def _derivative_through_solve(repeat: int) -> None:
    """d/dt of x(t) = A(t)⁻¹·b, A(t) = A + t·E, at t = 0: one Dual solve in tang, one
    ``jax.jvp`` of ``jnp.linalg.solve`` in JAX (float64), the same answer both ways."""
    n = 6
    a, e = _matrix(n, 1), _matrix(n, 2)
    b = [1.0] * n

    def ours() -> list[float]:
        t = tang.Dual(0.0, 1.0)
        return [x.tangent for x in linalg.solve([[a[i][j] + t * e[i][j] for j in range(n)]
                                                  for i in range(n)], b)]  # fmt: skip

    print(f"    a derivative through solve (n = {n}, dx/dt for A + t·E):")
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
    except ImportError:
        t = fastest_interleaved([ours], repeat * 20)[0]
        print(f"      tang Dual {t * 1e6:.1f} µs; peer: JAX is not installed (pip install jax)")
        return
    ja, je, jb = jnp.array(a), jnp.array(e), jnp.array(b)

    @jax.jit
    def theirs(t: object) -> object:
        return jax.jvp(lambda s: jnp.linalg.solve(ja + s * je, jb), (t,), (1.0,))[1]

    want = [float(v) for v in theirs(0.0)]
    got = ours()
    assert max(abs(g - w) for g, w in zip(got, want, strict=True)) < 1e-10, (got, want)
    t = fastest_interleaved([ours, lambda: theirs(0.0).block_until_ready()], repeat * 20)
    print(f"      tang Dual {t[0] * 1e6:.1f} µs, JAX jvp (jit, x64) {t[1] * 1e6:.1f} µs: "
          f"{t[0] / t[1]:.1f}×; the two agree to 1e-10")  # fmt: skip


SECTIONS: list[Callable[[list[Problem], object | None, int], None]] = [
    bench_lm,
    bench_lbfgs,
    bench_lbfgs_tight,
    bench_linalg,
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated problem names")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(PROBLEMS)
    unknown = [n for n in names if n not in PROBLEMS]
    if unknown:
        parser.error(f"unknown problems {unknown}; known: {', '.join(PROBLEMS)}")
    problems = [PROBLEMS[n] for n in names]
    so = scipy_or_none()
    print(f"python {sys.version.split()[0]} on {sys.platform}; {len(problems)} MGH problems")
    if so is None:
        print("peer: scipy is not installed (pip install scipy): tang's figures alone")
    else:
        import scipy

        print(f"peer: scipy {scipy.__version__} (MINPACK lmder; L-BFGS-B)")
    for section in SECTIONS:
        section(problems, so, args.repeat)


if __name__ == "__main__":
    main()
