"""tang.solve on small problems: L-BFGS and Levenberg–Marquardt against closed forms and
numpy, the three ways to get derivatives agreeing (and agreeing with finite differences),
MINPACK's pieces (qrfac, qrsolv, lmpar) against numpy, the strong-Wolfe line search, the
results' fields, and clear errors for bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tang
from tang.solve import (
    EvaluationError,
    LeastSquaresResult,
    MinimizeResult,
    least_squares,
    minimize,
    strong_wolfe,
)
from tang.solve.derivatives import Objective, Residuals
from tang.solve.lm import lmpar, qrfac, qrsolv
from tang.solve.mgh import jennrich_sampson, rosenbrock, sum_of_squares

RNG = np.random.default_rng(7)


def rosen(x: list) -> object:
    """The classic 2-d Rosenbrock function, 100(y − x²)² + (1 − x)²."""
    return 100.0 * (x[1] - x[0] * x[0]) ** 2 + (1.0 - x[0]) ** 2


def rosen_gradient(x: list[float]) -> list[float]:
    return [-400.0 * x[0] * (x[1] - x[0] ** 2) - 2.0 * (1.0 - x[0]), 200.0 * (x[1] - x[0] ** 2)]


def central_differences(f, x: list[float], h: float = 1e-6) -> list[float]:
    """The oracle for the exact gradients: (f(x + h·e_i) − f(x − h·e_i)) / 2h."""
    out = []
    for i in range(len(x)):
        up, down = list(x), list(x)
        up[i] += h
        down[i] -= h
        out.append((f(up) - f(down)) / (2.0 * h))
    return out


def messy(x: list) -> object:
    """A function with every kind of operation, and a branch the graph can hold."""
    a = tang.exp(0.3 * x[0]) * tang.sin(x[1]) + tang.sqrt(1.0 + x[2] * x[2])
    b = tang.where(tang.lt(x[0], x[1]), x[0] * x[1], x[0] - x[1])
    return a * a + tang.log(2.0 + tang.cos(x[2])) + b / (3.0 + x[1] * x[1])


# ---- minimize ------------------------------------------------------------------------


def test_minimize_finds_the_minimum_of_a_scaled_quadratic():
    centre = [1.5, -2.0, 0.25, 4.0]

    def f(x):
        return sum((i + 1.0) * (xi - c) ** 2 for i, (xi, c) in enumerate(zip(x, centre)))

    res = minimize(f, [0.0] * 4)
    assert isinstance(res, MinimizeResult)
    assert res.success and res.status == 0 and res.message.startswith("CONVERGENCE")
    assert res.x == pytest.approx(centre, abs=1e-6)
    assert res.fun == pytest.approx(0.0, abs=1e-10)
    assert max(map(abs, res.jac)) <= 1e-5  # the default gtol, in the max-norm
    assert res.nfev == res.njev >= res.nit >= 1  # a Dual pass is one of each


def test_minimize_solves_rosenbrock_to_its_closed_form_minimum():
    res = minimize(rosen, [-1.2, 1.0], gtol=1e-10, ftol=0.0)
    assert res.success
    assert res.x == pytest.approx([1.0, 1.0], abs=1e-8)
    assert res.fun < 1e-18
    # scipy's L-BFGS-B takes 44 evaluations at its defaults from here (benchmarks/solvers.py)
    assert minimize(rosen, [-1.2, 1.0]).nfev == 44


@pytest.mark.parametrize("jac", [None, "dual", "graph", "callable", True])
def test_minimize_gives_the_same_iterates_whatever_computes_the_gradient(jac):
    if jac == "callable":
        res = minimize(rosen, [-1.2, 1.0], jac=rosen_gradient)
    elif jac is True:
        res = minimize(lambda x: (rosen(x), rosen_gradient(x)), [-1.2, 1.0], jac=True)
    else:
        res = minimize(rosen, [-1.2, 1.0], jac=jac)
    reference = minimize(rosen, [-1.2, 1.0])
    assert res.x == pytest.approx(reference.x, rel=1e-9, abs=1e-12)
    assert res.nit == reference.nit and res.nfev == reference.nfev


@pytest.mark.parametrize("jac", ["dual", "graph"])
def test_the_objective_gradient_matches_finite_differences(jac):
    x = [0.3, -0.7, 1.1]
    value, gradient = Objective(messy, 3, jac)(x)
    assert value == pytest.approx(messy(x), rel=1e-14)
    assert gradient == pytest.approx(central_differences(messy, x), rel=1e-6, abs=1e-8)


def test_graph_mode_traces_once_and_evaluates_the_gradient_graph():
    calls = []

    def f(x):
        calls.append(type(x[0]).__name__)
        return sum_of_squares(rosenbrock(x))

    res = minimize(f, [-1.2, 1.0], jac="graph")
    assert calls == ["Node"]  # one trace, then only graph evaluations
    assert res.nfev == res.njev > 10 and res.x == pytest.approx([1.0, 1.0], abs=1e-4)


def test_minimize_stops_at_maxiter_and_maxfun():
    res = minimize(rosen, [-1.2, 1.0], maxiter=3)
    assert (res.status, res.nit, res.success) == (1, 3, False)
    assert "ITERATIONS" in res.message
    res = minimize(rosen, [-1.2, 1.0], maxfun=10)
    assert res.status == 1 and res.nfev <= 10 and "EVALUATIONS" in res.message


def test_minimize_calls_back_each_iteration_and_stops_on_stop_iteration():
    seen = []

    def callback(x):
        seen.append(x)
        if len(seen) == 4:
            raise StopIteration

    res = minimize(rosen, [-1.2, 1.0], callback=callback)
    assert len(seen) == 4 and res.nit == 4 and res.status == 99 and not res.success
    assert seen[-1] == res.x


def test_minimize_starting_at_the_minimum_takes_one_evaluation():
    res = minimize(rosen, [1.0, 1.0])
    assert (res.nfev, res.nit, res.status, res.x) == (1, 0, 0, [1.0, 1.0])


def test_minimize_backs_off_where_the_function_overflows():
    # from the standard start, Jennrich–Sampson's line searches try points where e^(10x)
    # overflows to inf; they step back and the minimum is still found (scipy's L-BFGS-B
    # stops at f = 214.3 there: benchmarks/solvers.py)
    seen = []

    def f(x):
        value = sum_of_squares(jennrich_sampson(x))
        seen.append(value.value if isinstance(value, tang.Dual) else value)
        return value

    res = minimize(f, [0.3, 0.4])
    assert math.inf in seen
    assert res.success and res.fun == pytest.approx(124.3621823556148, rel=1e-8)


# ---- least_squares --------------------------------------------------------------------


def test_least_squares_on_a_linear_problem_matches_numpy_lstsq():
    A = RNG.normal(size=(12, 4))
    b = RNG.normal(size=12)

    def residuals(x):
        return [sum(a * xi for a, xi in zip(row, x)) - bi for row, bi in zip(A.tolist(), b)]

    res = least_squares(residuals, [0.0] * 4)
    assert isinstance(res, LeastSquaresResult)
    expected, *_ = np.linalg.lstsq(A, b, rcond=None)
    assert res.x == pytest.approx(expected.tolist(), rel=1e-9, abs=1e-12)
    r = A @ expected - b
    assert res.cost == pytest.approx(0.5 * float(r @ r), rel=1e-12)  # scipy's cost: ½‖r‖²
    assert res.fun == pytest.approx(r.tolist(), abs=1e-12)
    assert np.allclose(res.jac, A, rtol=0, atol=1e-14)
    assert res.grad == pytest.approx((A.T @ np.array(res.fun)).tolist(), abs=1e-12)
    assert res.optimality == max(map(abs, res.grad))
    assert res.success and res.status in (1, 2, 3, 4) and res.active_mask == [0] * 4
    assert res.extra["info"] in (1, 2, 3, 4)


def test_least_squares_fits_an_exponential_to_exact_data():
    ts = [0.1 * i for i in range(20)]
    ys = [2.5 * math.exp(-1.3 * t) + 0.4 for t in ts]

    def residuals(x):
        return [x[0] * tang.exp(-x[1] * t) + x[2] - y for t, y in zip(ts, ys)]

    res = least_squares(residuals, [1.0, 1.0, 0.0])
    assert res.x == pytest.approx([2.5, 1.3, 0.4], rel=1e-9)
    assert res.cost < 1e-25 and res.nit >= 1


@pytest.mark.parametrize("jac", [None, "dual", "graph", "callable"])
def test_least_squares_gives_the_same_iterates_whatever_computes_the_jacobian(jac):
    def rosen_jacobian(x):
        return [[-20.0 * x[0], 10.0], [-1.0, 0.0]]

    res = least_squares(rosenbrock, [-1.2, 1.0], jac=rosen_jacobian if jac == "callable" else jac)
    # MINPACK (scipy's least_squares, method="lm") takes 21 evaluations and 16 Jacobians here
    assert (res.nfev, res.njev) == (21, 16)
    assert res.x == [1.0, 1.0] and res.cost == 0.0 and res.status == 1


@pytest.mark.parametrize("jac", ["dual", "graph"])
def test_the_jacobian_matches_finite_differences(jac):
    def residuals(x):
        return [messy(x), tang.sin(x[0] * x[2]) - x[1], x[0] ** 3 + tang.tanh(x[1])]

    x = [0.4, 0.9, -0.6]
    values, rows = Residuals(residuals, 3, jac).jacobian(x)
    assert values == pytest.approx([float(v) for v in residuals(x)], rel=1e-14)
    for i, row in enumerate(rows):
        expected = central_differences(lambda p, i=i: residuals(p)[i], x)
        assert row == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_x_scale_sets_minpacks_diag_and_reaches_the_same_minimum():
    by_jacobian = least_squares(rosenbrock, [-1.2, 1.0])
    by_hand = least_squares(rosenbrock, [-1.2, 1.0], x_scale=[1.0, 2.0])
    assert by_hand.x == pytest.approx(by_jacobian.x, abs=1e-10)
    assert (by_hand.nfev, by_hand.njev) != (by_jacobian.nfev, by_jacobian.njev)  # other path


def test_least_squares_stops_at_max_nfev():
    res = least_squares(rosenbrock, [-1.2, 1.0], max_nfev=5)
    assert (res.status, res.success, res.nfev) == (0, False, 5)
    assert "maximum number of function evaluations" in res.message


def test_least_squares_rejects_trial_points_where_the_residuals_are_nan():
    # sqrt is nan below 0: a long first step lands there and must be refused, not followed
    def residuals(x):
        return [tang.sqrt(x[0]) - 2.0, 0.1 * (x[1] - 1.0)]

    res = least_squares(residuals, [0.01, 5.0])
    assert res.success and res.x == pytest.approx([4.0, 1.0], rel=1e-9)


def test_least_squares_stops_when_the_jacobian_stops_being_finite():
    def jacobian(x):
        return [[1.0 if x[0] > 0.5 else math.nan, 0.0], [0.0, 1.0]]

    res = least_squares(lambda x: [x[0] - 0.2, x[1] - 3.0], [1.0, 0.0], jac=jacobian)
    assert (res.status, res.success) == (-1, False)
    assert res.message.startswith("The Jacobian has nan at row 0, column 0 at x = [0.19999")
    assert res.x == pytest.approx([0.2, 3.0]) and res.njev == 2
    with pytest.raises(ValueError, match=r"Jacobian of .* has nan at row 0, column 0 at x0"):
        least_squares(lambda x: [x[0] - 0.2, x[1] - 3.0], [0.0, 0.0], jac=jacobian)


# ---- MINPACK's pieces against numpy ------------------------------------------------------


def columns(A: np.ndarray) -> list[list[float]]:
    return [list(map(float, A[:, j])) for j in range(A.shape[1])]


def test_qrfac_pivots_and_factorises_like_a_qr_decomposition():
    A = RNG.normal(size=(9, 5)) * np.array([1.0, 10.0, 0.1, 3.0, 1.0])
    a = columns(A)
    ipvt, rdiag, acnorm = qrfac(a, 9, 5)
    R = np.zeros((5, 5))
    for j in range(5):
        R[:j, j] = a[j][:j]
        R[j, j] = rdiag[j]
    AP = A[:, ipvt]
    assert np.allclose(R.T @ R, AP.T @ AP, rtol=1e-12, atol=1e-12)  # A·P = Q·R
    assert acnorm == pytest.approx(np.linalg.norm(A, axis=0).tolist(), rel=1e-14)
    assert all(abs(rdiag[j]) >= abs(rdiag[j + 1]) - 1e-12 for j in range(4))
    assert ipvt[0] == int(np.argmax(np.linalg.norm(A, axis=0)))


def _factorised(A: np.ndarray, b: np.ndarray):
    m, n = A.shape
    a = columns(A)
    ipvt, rdiag, _ = qrfac(a, m, n)
    # Qᵀb from the Householder vectors, as lmder forms it
    from tang.solve.lm import _q_transpose_times

    qtb = _q_transpose_times(a, rdiag, list(map(float, b)), m, n)
    return a, ipvt, qtb


def test_qrsolv_solves_the_damped_least_squares_system():
    A = RNG.normal(size=(8, 4))
    b = RNG.normal(size=8)
    d = np.array([0.5, 2.0, 1.0, 0.1])
    a, ipvt, qtb = _factorised(A, b)
    x, _ = qrsolv(a, ipvt, d.tolist(), qtb)
    stacked = np.vstack([A, np.diag(d)])
    expected, *_ = np.linalg.lstsq(stacked, np.concatenate([b, np.zeros(4)]), rcond=None)
    assert x == pytest.approx(expected.tolist(), rel=1e-10, abs=1e-12)


def test_lmpar_puts_the_step_on_the_trust_region_boundary():
    A = RNG.normal(size=(10, 3))
    b = RNG.normal(size=10)
    diag = [1.0, 3.0, 0.5]
    a, ipvt, qtb = _factorised(A, b)
    gauss_newton = np.linalg.lstsq(A, b, rcond=None)[0]
    delta = 0.3 * float(np.linalg.norm(np.array(diag) * gauss_newton))
    par, x = lmpar(a, ipvt, diag, qtb, delta, 0.0)
    assert par > 0.0
    assert abs(np.linalg.norm(np.array(diag) * np.array(x)) - delta) <= 0.1 * delta
    # x solves the damped normal equations (AᵀA + λDᵀD)x = Aᵀb
    D = np.diag(diag)
    assert np.allclose((A.T @ A + par * D.T @ D) @ x, A.T @ b, rtol=1e-9, atol=1e-12)
    # a region holding the Gauss-Newton step: λ = 0 and that step
    par, x = lmpar(a, ipvt, diag, qtb, 10.0 * delta, 0.0)
    assert par == 0.0 and x == pytest.approx(gauss_newton.tolist(), rel=1e-10)


# ---- the line search -------------------------------------------------------------------


@pytest.mark.parametrize("first", [1e-3, 0.1, 1.0, 10.0, 1e3])
def test_the_line_search_meets_the_strong_wolfe_conditions(first):
    def phi(t):  # a one-dimensional slice of a smooth function, minimum near t = 2.2
        return (t - 2.0) ** 4 + 0.5 * t * t - 3.0 * t, 4.0 * (t - 2.0) ** 3 + t - 3.0, t

    value0, slope0 = phi(0.0)[:2]
    res = strong_wolfe(phi, value0, slope0, first)
    assert res.converged, res.status
    assert res.value <= value0 + 1e-4 * res.step * slope0
    assert abs(res.slope) <= 0.9 * abs(slope0)
    assert res.payload == res.step and res.evaluations <= 10


def test_the_line_search_steps_back_from_where_phi_is_not_finite():
    def phi(t):
        if t > 0.5:
            return math.inf, math.nan, t
        return (t - 0.4) ** 2, 2.0 * (t - 0.4), t

    res = strong_wolfe(phi, 0.16, -0.8, 4.0)
    assert math.isfinite(res.value) and res.value < 0.16 and res.step <= 0.5


def test_the_line_search_refuses_an_ascent_direction():
    with pytest.raises(ValueError, match="not a descent direction"):
        strong_wolfe(lambda t: (t, 1.0, None), 0.0, 1.0, 1.0)


# ---- bad input ------------------------------------------------------------------------

SOLVERS = [
    pytest.param(lambda f, x0, **kw: minimize(lambda x: sum_of_squares(f(x)), x0, **kw), id="min"),
    pytest.param(lambda f, x0, **kw: least_squares(f, x0, **kw), id="lsq"),
]


@pytest.mark.parametrize("solve", SOLVERS)
@pytest.mark.parametrize(
    ("x0", "error", "match"),
    [
        ([1.0, math.nan], ValueError, r"x0\[1\] is nan"),
        ([math.inf, 1.0], ValueError, r"x0\[0\] is inf"),
        ([], ValueError, "x0 is empty"),
        (["a", 1.0], TypeError, r"x0\[0\] is 'a' \(str\)"),
        ([1.0, None], TypeError, r"x0\[1\] is None"),
        (1.5, TypeError, r"sequence of numbers.*write \[x0\]"),
    ],
)
def test_a_bad_starting_point_is_named(solve, x0, error, match):
    with pytest.raises(error, match=match):
        solve(rosenbrock, x0)


@pytest.mark.parametrize("solver", ["minimize", "least_squares"])
def test_a_function_that_raises_is_named_with_the_point(solver):
    calls = []

    def broken(x):  # fine at the start, then fails at the first trial point
        calls.append(1)
        if len(calls) > 2:
            raise ZeroDivisionError("no good")
        return rosenbrock(x) if solver == "least_squares" else sum_of_squares(rosenbrock(x))

    solve = minimize if solver == "minimize" else least_squares
    role = "objective" if solver == "minimize" else "residuals function"
    with pytest.raises(EvaluationError, match=rf"the {role} 'broken' raised ZeroDivisionError "
                       r"at x = \[-?\d.*\] \(n = 2\): no good") as info:  # fmt: skip
        solve(broken, [-1.2, 1.0])
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "-1.2, 1.0]" not in str(info.value)  # the trial point, not the start


def test_a_function_raising_at_the_start_is_named_too():
    def broken(x):
        raise KeyError("missing")

    with pytest.raises(EvaluationError, match=r"objective 'broken' raised KeyError at x = \[1.0"):
        minimize(broken, [1.0])
    with pytest.raises(EvaluationError, match=r"residuals function 'broken' raised KeyError"):
        least_squares(broken, [1.0])


def test_math_module_functions_on_duals_get_a_hint():
    with pytest.raises(EvaluationError, match=r"TypeError.*use tang\.exp"):
        minimize(lambda x: math.exp(x[0]) + x[0] ** 2, [1.0])


def test_a_python_branch_on_traced_values_gets_a_hint():
    def branchy(x):
        return x[0] ** 2 if x[0] > 0 else -x[0]

    with pytest.raises(EvaluationError, match=r"while being traced.*tang\.where"):
        minimize(branchy, [1.0], jac="graph")
    assert minimize(branchy, [1.0]).x[0] == pytest.approx(0.0, abs=1e-5)  # Duals can branch


def test_nan_at_the_start_is_refused():
    with pytest.raises(ValueError, match=r"is nan at x0 = \[-1.0\].*must be finite"):
        minimize(lambda x: tang.log(x[0]), [-1.0])
    with pytest.raises(ValueError, match=r"residual 1 of .* is nan at x0"):
        least_squares(lambda x: [x[0], tang.sqrt(x[0])], [-1.0])
    with pytest.raises(ValueError, match=r"gradient .* has inf in entry 0 at x0"):
        minimize(lambda x: tang.sqrt(x[0]), [0.0])


@pytest.mark.parametrize(
    ("f", "error", "match"),
    [
        (lambda x: "small", TypeError, r"is 'small' \(str\), not a real number"),
        (lambda x: None, TypeError, r"is None \(NoneType\), not a real number"),
        (lambda x: [x[0], x[1]], TypeError, "must return one number, it returned a list of 2"),
        (lambda x: 1 + 2j, TypeError, r"\(complex\), not a real number"),
    ],
)
def test_an_objective_returning_something_else_is_refused(f, error, match):
    with pytest.raises(error, match=match):
        minimize(f, [1.0, 2.0])


def test_residuals_of_the_wrong_length_are_refused():
    with pytest.raises(ValueError, match=r"returned 1 residuals for 2 unknowns.*m ≥ n"):
        least_squares(lambda x: [x[0] + x[1]], [1.0, 2.0])
    calls = []

    def shrinking(x):
        calls.append(1)
        return [x[0] - 1.0, x[1] - 2.0, x[0] * x[1]][: 3 if len(calls) < 3 else 2]

    with pytest.raises(ValueError, match=r"returned 2 residuals at x = .* but 3 at x0"):
        least_squares(shrinking, [0.0, 0.0])
    with pytest.raises(TypeError, match=r"residual 1 from .* is 'x' \(str\)"):
        least_squares(lambda x: [x[0], "x"], [1.0])
    with pytest.raises(TypeError, match="must be a sequence of numbers, got float"):
        least_squares(lambda x: x[0] * 2.0, [1.0])


def test_a_jacobian_or_gradient_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"returned 1 rows, there are 2 residuals"):
        least_squares(rosenbrock, [-1.2, 1.0], jac=lambda x: [[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"row 1 from .* has 1 entries, x has 2"):
        least_squares(rosenbrock, [-1.2, 1.0], jac=lambda x: [[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match=r"gradient from .* has 3 entries, x has 2"):
        minimize(rosen, [-1.2, 1.0], jac=lambda x: [1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: minimize(rosen, [0.0, 0.0], method="bfgs"), "unknown method 'bfgs'"),
        (lambda: minimize(rosen, [0.0, 0.0], gtol=-1.0), "gtol must be a number ≥ 0"),
        (lambda: minimize(rosen, [0.0, 0.0], m=0), "m must be a positive integer"),
        (lambda: minimize(rosen, [0.0, 0.0], jac="finite"), "jac must be None, 'dual'"),
        (lambda: least_squares(rosenbrock, [0.0, 0.0], method="trf"), "unknown method 'trf'"),
        (lambda: least_squares(rosenbrock, [0.0, 0.0], xtol=math.nan), "xtol must be"),
        (lambda: least_squares(rosenbrock, [0.0, 0.0], max_nfev=0), "max_nfev must be"),
        (lambda: least_squares(rosenbrock, [0.0, 0.0], x_scale=[1.0]), "x_scale has 1 entries"),
        (lambda: least_squares(rosenbrock, [0.0, 0.0], x_scale=[1.0, -2.0]), "x_scale.*positive"),
        (lambda: least_squares(rosenbrock, [0.0, 0.0], x_scale="auto"), "x_scale must be 'jac'"),
    ],
)
def test_bad_options_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_non_callable_is_refused():
    with pytest.raises(TypeError, match="f must be callable"):
        minimize(3.0, [1.0])
    with pytest.raises(TypeError, match="residuals function must be callable"):
        least_squares([1.0], [1.0])
