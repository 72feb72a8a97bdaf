"""The Moré–Garbow–Hillstrom test set (tang.solve.mgh) and both solvers on it.

Each problem's residuals run on floats, Duals and traced graphs alike (checked against one
another and against finite differences). From each standard start, ``least_squares`` (LM)
and ``minimize`` (L-BFGS, asked for gtol 1e-10 and ftol 1e-15 on every problem: one setting,
no per-problem tuning) must reach a published minimum of f = Σ r² to a relative 1e-6, or
1e-10 absolute where it is 0. Where the standard start leads to another published minimum,
the tables below name exactly which one each solver must reach:

- Freudenstein and Roth: both reach the local minimum 48.9842… the paper lists (MINPACK,
  i.e. scipy's lm, goes there too);
- Trigonometric (n = 10): both reach the local minimum 2.79506e-5, which MINPACK's lmder
  (scipy) reaches from the same start; the paper lists only 0, the value is the literature's;
- Biggs EXP6: LM reaches 0, L-BFGS the other minimum the paper lists, 5.65565e-3 (scipy's
  L-BFGS-B stops there too: benchmarks/solvers.py).

Every problem meets its target with both solvers: none is left out. Where scipy is
installed, tang's LM evaluation counts are compared with MINPACK's (scipy's
``least_squares(method="lm")`` given the same exact Jacobian).
"""

from __future__ import annotations

import math

import pytest

import tang
from tang.solve import least_squares, minimize
from tang.solve.derivatives import Residuals
from tang.solve.mgh import PROBLEMS, Problem

NAMES = list(PROBLEMS)
REQUIRED = {
    "rosenbrock", "freudenstein_roth", "powell_badly_scaled", "brown_badly_scaled", "beale",
    "jennrich_sampson", "helical_valley", "gaussian", "gulf", "box_3d", "powell_singular",
    "wood", "extended_rosenbrock",
}  # fmt: skip

# which entry of Problem.minima each solver reaches from the standard start (default: 0)
LM_REACHES = {"freudenstein_roth": 1, "trigonometric": 1}
LBFGS_REACHES = {"freudenstein_roth": 1, "trigonometric": 1, "biggs_exp6": 1}
LBFGS_OPTIONS = {"gtol": 1e-10, "ftol": 1e-15}


def reaches(f: float, target: float) -> bool:
    return abs(f - target) <= (1e-10 if target == 0.0 else 1e-6 * abs(target))


def test_the_set_holds_the_required_problems_with_consistent_sizes():
    assert len(PROBLEMS) >= 18 and set(PROBLEMS) >= REQUIRED
    assert len({p.number for p in PROBLEMS.values()}) == len(PROBLEMS)
    for p in PROBLEMS.values():
        assert len(p.x0) == p.n <= p.m, p.name
        assert len(p.residuals(list(p.x0))) == p.m, p.name
        assert len(p.minima) == len(p.published) >= 1, p.name


@pytest.mark.parametrize("name", NAMES)
def test_the_stored_minima_agree_with_the_papers_printed_figures(name):
    # the paper prints 6 figures, truncated or rounded: the stored value lies within one
    # unit of the last printed figure
    p = PROBLEMS[name]
    for value, printed in zip(p.minima, p.published):
        figure = float(printed)
        if figure == 0.0:
            assert value == 0.0
            continue
        mantissa = printed.lower().split("e")[0].replace("-", "").lstrip("0")
        digits = len(mantissa.replace(".", "").lstrip("0"))
        unit = 10.0 ** (math.floor(math.log10(abs(figure))) - digits + 1)
        assert abs(value - figure) < unit, (name, value, printed)


def _point(p: Problem) -> list[float]:
    """A point near the start, off the special values some starts sit on (0, branch cuts)."""
    return [v + 0.01 * (i + 1) * (1.0 + abs(v)) for i, v in enumerate(p.x0)]


@pytest.mark.parametrize("name", NAMES)
def test_the_residuals_run_on_floats_duals_and_graphs_alike(name):
    p = PROBLEMS[name]
    x = _point(p)
    floats = [float(v) for v in p.residuals(x)]
    graph = tang.trace(lambda *xs: p.residuals(list(xs)), [f"x{i}" for i in range(p.n)])
    assert graph.eval(x) == pytest.approx(floats, rel=1e-13, abs=1e-300)
    values, by_duals = Residuals(p.residuals, p.n, "dual").jacobian(x)
    _, by_graph = Residuals(p.residuals, p.n, "graph").jacobian(x)
    assert values == pytest.approx(floats, rel=1e-13, abs=1e-300)
    for row_d, row_g in zip(by_duals, by_graph):
        assert row_d == pytest.approx(row_g, rel=1e-10, abs=1e-12)
    # and both against central differences, column by column
    for j in range(p.n):
        h = 1e-6 * max(1.0, abs(x[j]))
        up, down = list(x), list(x)
        up[j] += h
        down[j] -= h
        ru, rd = p.residuals(up), p.residuals(down)
        for i in range(p.m):
            estimate = (float(ru[i]) - float(rd[i])) / (2.0 * h)
            # truncation (relative h²) plus rounding (a few ulps of rᵢ, divided by h)
            tolerance = 1e-6 * abs(estimate) + 100 * 2.2e-16 * max(1.0, abs(floats[i])) / h
            assert abs(by_duals[i][j] - estimate) <= tolerance, (name, i, j)


@pytest.mark.parametrize("jac", ["dual", "graph"])
@pytest.mark.parametrize("name", NAMES)
def test_levenberg_marquardt_reaches_the_published_minimum(name, jac):
    p = PROBLEMS[name]
    res = least_squares(p.residuals, p.x0, jac=jac)
    f = 2.0 * res.cost  # MGH's f is ‖r‖², least_squares' cost ½‖r‖²
    target = p.minima[LM_REACHES.get(name, 0)]
    assert reaches(f, target), (name, f, target)
    assert res.success, res.message
    assert res.fun == pytest.approx([float(v) for v in p.residuals(res.x)], rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("name", NAMES)
def test_lbfgs_reaches_the_published_minimum(name):
    p = PROBLEMS[name]
    res = minimize(p.objective, p.x0, **LBFGS_OPTIONS)
    target = p.minima[LBFGS_REACHES.get(name, 0)]
    assert reaches(res.fun, target), (name, res.fun, target, res.message)
    # success, or a line search that rounding stopped at the minimum (status 2)
    assert res.status in (0, 2), res.message
    assert res.fun == pytest.approx(float(p.objective(res.x)), rel=1e-14, abs=1e-300)


def test_lm_evaluation_counts_match_minpack():
    np = pytest.importorskip("numpy", reason="numpy (the dev extra's oracle) is not installed")
    so = pytest.importorskip("scipy.optimize", reason="scipy (MINPACK, in the dev extra) is absent")
    total_tang = total_scipy = same = 0
    peer_failed: list[str] = []
    for name, p in PROBLEMS.items():
        jacobian = tang.jacobian(lambda *xs, p=p: p.residuals(list(xs)))
        calls = [0, 0]

        def fun(x, p=p, calls=calls):
            calls[0] += 1
            return np.array([float(v) for v in p.residuals([float(v) for v in x])])

        def jac(x, jacobian=jacobian, calls=calls):
            calls[1] += 1
            return np.array(jacobian(*(float(v) for v in x)))

        theirs = so.least_squares(fun, np.array(p.x0), jac=jac, method="lm")
        ours = least_squares(p.residuals, p.x0)
        # scipy 1.17's lm is not deterministic within a process: the same call took 38 and
        # then 66 evaluations on extended Powell singular, and sometimes stops Biggs EXP6
        # after 3 at f = 0.65 ("both ftol and xtol satisfied"); tang's counts never vary. So
        # a peer run that reaches no published minimum is no yardstick, tang must never need
        # more than the peer, and the two must agree exactly on nearly every problem.
        if not any(reaches(2.0 * theirs.cost, m) for m in p.minima):
            peer_failed.append(name)
            continue
        # on the singular Powell problems (linear convergence) rounding decides when a test
        # first holds; MINPACK's njev leaves out the Jacobian at the final x, which scipy's
        # wrapper then asks for (uncounted), while tang counts it where it needs it
        slack = 6 if "powell_singular" in name else 0
        assert ours.nfev <= theirs.nfev + slack, (name, ours.nfev, theirs.nfev)
        assert ours.njev <= calls[1] + slack, (name, ours.njev, calls)
        same += ours.nfev == theirs.nfev and theirs.njev <= ours.njev <= calls[1]
        assert 2.0 * ours.cost == pytest.approx(2.0 * theirs.cost, rel=1e-6, abs=1e-10)
        total_tang += ours.nfev + ours.njev
        total_scipy += calls[0] + calls[1]
    assert len(peer_failed) <= 1, peer_failed  # the comparison covers the rest of the set
    assert same >= len(PROBLEMS) - 4, same  # MINPACK's own counts, one for one
    assert total_tang <= total_scipy  # the target: no more evaluations than MINPACK
