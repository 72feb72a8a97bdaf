"""tang.solve.dls: bounded damped least squares against closed forms, numpy's lstsq and a
brute-force active-set oracle; its two Jacobian paths and its two loops (n = 2 and any n)
against each other; its errors; and the two-link arm's IK (tang.physics.ik) built on it."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from tang import Dual
from tang.physics.ik import TwoLinkArm
from tang.solve import dls
from tang.solve.derivatives import EvaluationError
from tang.solve.dls import damped_least_squares

# ---- oracles ------------------------------------------------------------------------------


def box_lstsq(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """argmin ‖a·x − b‖ over lo ≤ x ≤ hi, by trying every active set (each unknown free, at
    its lower or at its upper bound): the best feasible candidate is the optimum."""
    n = a.shape[1]
    best, best_x = math.inf, None
    for pattern in itertools.product((0, -1, 1), repeat=n):
        x = np.where(np.array(pattern) < 0, lo, hi).astype(float)
        free = [j for j in range(n) if pattern[j] == 0]
        if free:
            fixed = [j for j in range(n) if pattern[j] != 0]
            rhs = b - a[:, fixed] @ x[fixed]
            x[free] = np.linalg.lstsq(a[:, free], rhs, rcond=None)[0]
        if np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12):
            cost = float(np.sum((a @ x - b) ** 2))
            if cost < best:
                best, best_x = cost, x
    return best_x


def linear(a: np.ndarray, b: np.ndarray):
    """Residuals a·x − b written over any number (floats or Duals)."""
    rows, rhs = a.tolist(), b.tolist()

    def residuals(x):
        return [sum(aij * xj for aij, xj in zip(row, x)) - bi for row, bi in zip(rows, rhs)]

    return residuals


def rosenbrock(x):
    return [10.0 * (x[1] - x[0] * x[0]), 1.0 - x[0]]


def rosenbrock_and_jacobian(x):
    return rosenbrock(x), [[-20.0 * x[0], 10.0], [-1.0, 0.0]]


# ---- unconstrained: known solutions -----------------------------------------------------


def test_rosenbrock_reaches_its_minimum_from_the_textbook_start():
    res = damped_least_squares(rosenbrock, [-1.2, 1.0], tolerance=1e-12)
    assert res.success and res.status == dls.CONVERGED
    assert res.x == pytest.approx([1.0, 1.0], abs=1e-12)
    assert res.cost <= 0.5e-24
    assert res.active_mask == [0, 0]
    assert res.nfev >= res.njev >= 1 and res.nit >= 1


def test_one_unknown_three_residuals_closed_form():
    # r_i = x² − y_i: the best x² is the mean of y
    y = (2.0, 3.0, 4.5)
    res = damped_least_squares(lambda x: [x[0] * x[0] - v for v in y], [1.0])
    assert res.x[0] == pytest.approx(math.sqrt(sum(y) / 3), rel=1e-12)
    assert res.grad[0] == pytest.approx(0.0, abs=1e-9)
    assert res.cost == pytest.approx(0.5 * sum((v - sum(y) / 3) ** 2 for v in y), rel=1e-12)


def test_two_unknowns_exponential_fit_recovers_exact_data():
    t = [0.1 * k for k in range(12)]
    a, b = 2.5, -1.3
    y = [a * math.exp(b * tk) for tk in t]
    import tang

    res = damped_least_squares(
        lambda x: [x[0] * tang.exp(x[1] * tk) - yk for tk, yk in zip(t, y)], [1.0, 0.0]
    )
    assert res.status == dls.CONVERGED
    assert res.x == pytest.approx([a, b], abs=1e-10)


def test_five_unknowns_linear_matches_numpy_lstsq():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(9, 5)), rng.normal(size=9)
    res = damped_least_squares(linear(a, b), [0.0] * 5, damping=1e-3, damping_min=1e-9)
    expected = np.linalg.lstsq(a, b, rcond=None)[0]
    assert res.x == pytest.approx(expected.tolist(), abs=1e-9)
    assert np.array_equal(res.jac, a)  # the dual pass: exact for linear residuals
    assert res.grad == pytest.approx((a.T @ (a @ np.array(res.x) - b)).tolist(), abs=1e-9)
    assert res.optimality == pytest.approx(0.0, abs=1e-9)


def test_five_unknowns_nonlinear_recovers_exact_data():
    # two decaying exponentials and an offset, sampled without noise; start nearby
    truth = [1.5, -0.7, 0.8, -2.9, 0.25]
    t = [0.15 * k for k in range(20)]
    import tang

    def model(p, tk):
        return p[0] * tang.exp(p[1] * tk) + p[2] * tang.exp(p[3] * tk) + p[4]

    y = [model(truth, tk) for tk in t]
    res = damped_least_squares(
        lambda p: [model(p, tk) - yk for tk, yk in zip(t, y)],
        [1.2, -0.5, 1.0, -2.5, 0.0],
        tolerance=1e-13,
        max_iterations=500,
    )
    assert res.success
    assert res.x == pytest.approx(truth, abs=1e-7)


# ---- bounds -------------------------------------------------------------------------------


def test_rosenbrock_with_its_minimum_outside_the_box_stops_on_the_bound():
    # x0 ≤ 0.5: the valley x1 = x0² is still reachable, so the best is (0.5, 0.25)
    res = damped_least_squares(rosenbrock, [-1.2, 1.0], upper=[0.5, math.inf])
    assert res.success
    assert res.x == pytest.approx([0.5, 0.25], abs=1e-9)
    assert res.active_mask == [1, 0]
    assert res.cost == pytest.approx(0.125, rel=1e-9)
    assert res.grad[0] < 0.0  # the cost still falls beyond the bound…
    assert res.optimality == pytest.approx(0.0, abs=1e-8)  # …so it does not count


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_bounded_linear_problems_match_the_active_set_oracle(n: int, seed: int):
    rng = np.random.default_rng(100 * n + seed)
    m = n + 3
    a, b = rng.normal(size=(m, n)), 3.0 * rng.normal(size=m)
    lo, hi = -rng.uniform(0.1, 0.6, size=n), rng.uniform(0.1, 0.6, size=n)
    expected = box_lstsq(a, b, lo, hi)
    res = damped_least_squares(
        linear(a, b), [0.0] * n, lower=lo.tolist(), upper=hi.tolist(), tolerance=0.0
    )
    assert res.success, res.message
    assert res.x == pytest.approx(expected.tolist(), abs=1e-9)
    at_lower, at_upper = expected <= lo + 1e-9, expected >= hi - 1e-9
    assert res.active_mask == [-1 if d else 1 if u else 0 for d, u in zip(at_lower, at_upper)]
    assert all(lj <= xj <= hj for xj, lj, hj in zip(res.x, lo, hi))


def test_unconstrained_optimum_outside_the_box_on_both_sides():
    # r = x − (3, −4, 0.2) in the unit box: x is clamped to (1, −1, 0.2). x[2] is exact because
    # the change of ‖r‖² is summed as Σ(r′ − r)(r′ + r): next to the residuals the bounds hold
    # (‖r‖² = 13), ‖r‖² itself could not tell x[2] = 0.2 from 0.2 ± 2e-8
    target = (3.0, -4.0, 0.2)
    res = damped_least_squares(
        lambda x: [xi - ti for xi, ti in zip(x, target)], [0.0, 0.0, 0.0], lower=-1.0, upper=1.0
    )
    assert res.x == pytest.approx([1.0, -1.0, 0.2], abs=1e-12)
    assert res.active_mask == [1, -1, 0]
    assert res.x[0] == 1.0 and res.x[1] == -1.0  # exactly on the bounds, not near them


def test_a_start_pinned_at_a_corner_with_nothing_downhill_inside_stops_at_once():
    res = damped_least_squares(
        lambda x: [x[0] - 2.0, x[1] + 2.0], [1.0, -1.0], lower=[-1.0, -1.0], upper=[1.0, 1.0]
    )
    assert res.status == dls.NOTHING_DOWNHILL and res.success
    assert res.x == [1.0, -1.0] and res.nit == 1
    assert res.active_mask == [1, -1]


def test_equal_bounds_hold_a_variable_fixed():
    res = damped_least_squares(
        lambda x: [x[0] - 5.0, x[1] - 7.0, x[0] + x[1] - 10.0],
        [1.0, 2.0],
        lower=[1.0, -math.inf],
        upper=[1.0, math.inf],
    )
    assert res.x[0] == 1.0
    assert res.x[1] == pytest.approx(8.0, abs=1e-9)  # argmin (x1 − 7)² + (x1 − 9)²


# ---- the two Jacobian paths, the two loops ------------------------------------------------


def test_dual_and_callable_jacobians_agree():
    a = damped_least_squares(rosenbrock, [-1.2, 1.0], upper=[0.8, 2.0])
    b = damped_least_squares(
        rosenbrock, [-1.2, 1.0], upper=[0.8, 2.0], jacobian=rosenbrock_and_jacobian
    )
    assert a.x == pytest.approx(b.x, abs=1e-12)
    np.testing.assert_allclose(a.jac, b.jac, rtol=0, atol=1e-12)
    assert (a.nit, a.status, a.active_mask) == (b.nit, b.status, b.active_mask)
    assert b.njev >= 1 and a.njev == b.njev


def test_dual_jacobian_matches_finite_differences_for_five_unknowns():
    import tang

    def residuals(x):
        return [
            tang.sin(x[0]) * x[1] - x[4],
            x[2] * x[3] + tang.exp(x[0] * 0.3),
            x[1] ** 2 - x[2] / (1.0 + x[3] * x[3]),
            tang.sqrt(1.0 + x[4] * x[4]) - x[0],
            x[0] + x[1] + x[2] + x[3] + x[4],
            tang.tanh(x[3] - x[1]),
        ]

    x0 = [0.3, -0.2, 0.5, 0.1, -0.4]
    res = damped_least_squares(residuals, x0, max_iterations=0)
    assert res.x == x0 and res.nit == 0 and res.status == dls.MAX_ITERATIONS
    h = 1e-6
    for j in range(5):
        up = [v + h * (k == j) for k, v in enumerate(x0)]
        down = [v - h * (k == j) for k, v in enumerate(x0)]
        column = [(p - q) / (2 * h) for p, q in zip(residuals(up), residuals(down))]
        assert [row[j] for row in res.jac] == pytest.approx(column, abs=1e-8)


@pytest.mark.parametrize("seed", range(8))
def test_the_pair_loop_takes_the_general_loops_steps(seed: int, monkeypatch):
    rng = random.Random(seed)
    lo, hi = [rng.uniform(-2, 0) for _ in range(2)], [rng.uniform(0, 2) for _ in range(2)]
    x0 = [rng.uniform(a, b) for a, b in zip(lo, hi)]
    target = (rng.uniform(-3, 3), rng.uniform(-3, 3))

    def residuals(x):  # m = 2: both loops add the same two products, bit for bit
        return [x[0] * x[0] - x[1] - target[0], x[0] + x[1] * x[1] * x[1] - target[1]]

    fast = damped_least_squares(residuals, x0, lower=lo, upper=hi)
    monkeypatch.setattr(dls, "_LOOPS", {})
    general = damped_least_squares(residuals, x0, lower=lo, upper=hi)
    assert fast == general


# ---- statuses ------------------------------------------------------------------------------


def test_a_nonzero_minimum_stops_without_spending_every_iteration():
    res = damped_least_squares(lambda x: [x[0] - 1.0, x[0] + 1.0, x[1]], [3.0, 1.0])
    assert res.success and res.status in (dls.STEP_TOO_SMALL, dls.NO_BETTER_STEP)
    assert res.x == pytest.approx([0.0, 0.0], abs=1e-9)
    assert res.nit < 100 and res.cost == pytest.approx(1.0)
    assert res.message == dls.MESSAGES[res.status]


def test_residuals_that_do_not_depend_on_x_have_nothing_downhill():
    res = damped_least_squares(lambda x: [1.0, 2.0], [0.5, 0.5])
    assert res.status == dls.NOTHING_DOWNHILL and res.success and res.x == [0.5, 0.5]
    assert res.jac == [[0.0, 0.0], [0.0, 0.0]] and res.cost == 2.5


def test_evaluations_are_counted_per_path():
    dual_path = damped_least_squares(rosenbrock, [0.5, 0.5], max_iterations=0)
    assert (dual_path.nfev, dual_path.njev) == (1, 1)  # one pass on Duals gives r and J
    given = damped_least_squares(
        rosenbrock, [0.5, 0.5], jacobian=rosenbrock_and_jacobian, max_iterations=0
    )
    assert (given.nfev, given.njev) == (0, 1)
    full = damped_least_squares(rosenbrock, [-1.2, 1.0], jacobian=rosenbrock_and_jacobian)
    assert full.nfev == full.nit and 1 <= full.njev <= full.nit + 1  # a trial per iteration


def test_numpy_and_int_inputs_are_accepted_as_numbers():
    res = damped_least_squares(
        rosenbrock, np.array([0, 0]), lower=np.array([-1, -1]), upper=np.float64(0.5)
    )
    assert res.x == pytest.approx([0.5, 0.25], abs=1e-9) and all(type(v) is float for v in res.x)


def test_the_iteration_limit_is_not_a_success():
    res = damped_least_squares(rosenbrock, [-1.2, 1.0], max_iterations=3)
    assert res.nit == 3 and res.status == dls.MAX_ITERATIONS and not res.success


def test_trial_points_with_non_finite_residuals_are_refused():
    # r is nan from x = 2.5 on: the solve creeps up to that edge, every point it keeps finite
    res = damped_least_squares(lambda x: [x[0] - 3.0 if x[0] < 2.5 else math.nan], [0.0])
    assert math.isfinite(res.cost) and res.fun == [res.x[0] - 3.0]
    assert 2.5 - 1e-6 < res.x[0] < 2.5


# ---- bad input ----------------------------------------------------------------------------


def test_x0_outside_its_bounds_is_rejected_not_clamped():
    with pytest.raises(ValueError, match=r"x0\[1\] = 3\.0 is outside its bounds \[0\.0, 2\.0\]"):
        damped_least_squares(rosenbrock, [1.0, 3.0], lower=0.0, upper=2.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"x0": [math.nan, 1.0]}, ValueError, r"x0\[0\] is nan"),
        ({"x0": [math.inf, 1.0]}, ValueError, r"x0\[0\] is inf: the starting point must be finite"),
        ({"x0": []}, ValueError, "x0 is empty"),
        ({"x0": 1.0}, TypeError, "x0 must be a sequence of numbers"),
        ({"x0": ["1", 2.0]}, TypeError, r"x0\[0\] is '1' \(str\), not a real number"),
        ({"lower": [1.0, 0.0], "upper": [0.0, 1.0]}, ValueError, r"lower\[0\] = 1.0 is above"),
        ({"lower": [0.0]}, ValueError, "lower must be None, one number or 2 numbers"),
        ({"upper": [math.nan, 1.0]}, ValueError, r"upper\[0\] is nan"),
        ({"damping": -1.0}, ValueError, "damping must be a finite positive number"),
        ({"damping_down": 2.0}, ValueError, "need damping_down < 1 < damping_up"),
        ({"damping": 1e9}, ValueError, "need damping_min ≤ damping ≤ damping_max"),
        ({"max_iterations": -1}, ValueError, "max_iterations must be ≥ 0"),
        ({"max_iterations": True}, TypeError, "max_iterations must be an int"),
        ({"tolerance": math.nan}, ValueError, "tolerance must be a finite number ≥ 0, got nan"),
        ({"tolerance": -1.0}, ValueError, "tolerance must be a finite number ≥ 0"),
        ({"jacobian": 3}, TypeError, "jacobian must be callable or None"),
    ],
)
def test_bad_arguments_get_clear_errors(kwargs: dict, error: type, fragment: str):
    args = {"x0": [0.5, 0.5], **kwargs}
    with pytest.raises(error, match=fragment):
        damped_least_squares(rosenbrock, args.pop("x0"), **args)


def test_residuals_that_change_length_are_refused():
    calls = []

    def residuals(x):
        calls.append(1)
        return [x[0] - 1.0, x[1]] if len(calls) == 1 else [x[0] - 1.0]

    with pytest.raises(ValueError, match=r"returned 1 residuals at x = .*, but 2 at x0"):
        damped_least_squares(residuals, [0.0, 0.0])


def test_a_raising_residual_function_becomes_an_evaluation_error_naming_the_point():
    def residuals(x):
        if x[0] > 0.1:
            raise ZeroDivisionError("boom")
        return [x[0] - 1.0]

    with pytest.raises(
        EvaluationError, match=r"'residuals' raised ZeroDivisionError at x = \["
    ) as e:
        damped_least_squares(residuals, [0.0], jacobian=lambda x: ([x[0] - 1.0], [[1.0]]))
    assert isinstance(e.value.__cause__, ZeroDivisionError) and "boom" in str(e.value)

    def refuses_duals(x):
        raise ArithmeticError("no Duals here")

    with pytest.raises(EvaluationError, match=r"'refuses_duals' raised ArithmeticError"):
        damped_least_squares(refuses_duals, [0.0])
    with pytest.raises(EvaluationError, match=r"Jacobian function \(a lambda\) raised KeyError"):
        damped_least_squares(rosenbrock, [0.0, 0.0], jacobian=lambda x: {}["no"])


@pytest.mark.parametrize(
    ("residuals", "jacobian", "error", "fragment"),
    [
        (lambda x: x[0], None, TypeError, "result must be a sequence of numbers, got Dual"),
        (lambda x: 1.5, None, TypeError, "must be a sequence of numbers, got float"),
        (lambda x: [], None, ValueError, "returned 0 residuals .*: at least one residual"),
        (lambda x: [math.nan], None, ValueError, "residuals at x0 are not finite"),
        (lambda x: [1e200, 1e200], None, ValueError, "‖r‖² overflows"),
        (lambda x: [Dual(1.0, 2.0)], None, TypeError, r"residual 0 from .* not a real number"),
        (rosenbrock, lambda x: ([1.0, 2.0], [[1.0], [2.0]]), ValueError, "row 0 .* has 1 entries"),
        (rosenbrock, lambda x: ([1.0, 2.0], [[1.0, 0.0]]), ValueError, "1 rows, there are 2"),
        (rosenbrock, lambda x: [1.0, 2.0, 3.0], TypeError, r"must return \(r, J\)"),
        (rosenbrock, lambda x: [1.0, 2.0], TypeError, "residuals from .* must be a sequence"),
        (rosenbrock, lambda x: ("ab", [[1, 0], [0, 1]]), TypeError, "must be a sequence"),
        (rosenbrock, lambda x: ([1, 2], [[math.inf, 0], [0, 1]]), ValueError, "are not finite"),
        ("not callable", None, TypeError, "residuals function must be callable"),
    ],
)
def test_bad_functions_get_clear_errors(residuals, jacobian, error: type, fragment: str):
    with pytest.raises(error, match=fragment):
        damped_least_squares(residuals, [0.5, 0.5], jacobian=jacobian)


def test_a_jacobian_that_goes_bad_later_is_caught_where_it_does():
    def jacobian(x):
        r, jac = rosenbrock_and_jacobian(x)
        return (r, jac) if x == (-1.2, 1.0) else (r, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])

    with pytest.raises(ValueError, match=r"row 0 from .* has 3 entries, x has 2"):
        damped_least_squares(rosenbrock, [-1.2, 1.0], jacobian=jacobian)
    general = lambda x: (rosenbrock(x), rosenbrock_and_jacobian(x)[1] if x == (0.0,) * 3 else [])  # noqa: E731
    with pytest.raises(ValueError, match=r"row 0 from .* has 2 entries, x has 3"):
        damped_least_squares(lambda x: rosenbrock(x), [0.0, 0.0, 0.0], jacobian=general)


def test_a_bad_jacobian_entry_is_named_at_x0_and_later():
    def jacobian(x):
        r, jac = rosenbrock_and_jacobian(x)
        return r, jac if x == (-1.2, 1.0) else [[jac[0][0], "slope"], jac[1]]

    start = lambda x: (rosenbrock(x), [[1.0, "slope"], [0.0, 1.0]])  # noqa: E731
    with pytest.raises(TypeError, match=r"entry \(0, 1\) from .* is 'slope' \(str\), not a real"):
        damped_least_squares(rosenbrock, [-1.2, 1.0], jacobian=start)
    with pytest.raises(TypeError, match=r"entry \(0, 1\) from .* is 'slope' \(str\), not a real"):
        damped_least_squares(rosenbrock, [-1.2, 1.0], jacobian=jacobian)


# ---- what the shared derivatives.Residuals gives this solver ------------------------------


def test_user_functions_get_tuples_here_and_lists_in_least_squares():
    from tang.solve import least_squares

    seen = set()

    def residuals(x):
        seen.add((type(x).__name__, type(x[0]).__name__))
        return rosenbrock(x)

    def jacobian(x):
        seen.add(("jacobian", type(x).__name__))
        return rosenbrock_and_jacobian(x)

    damped_least_squares(residuals, [-1.2, 1.0], max_iterations=2)  # Duals, then floats
    assert seen == {("tuple", "Dual"), ("tuple", "float")}
    seen.clear()
    damped_least_squares(residuals, [-1.2, 1.0], jacobian=jacobian, max_iterations=2)
    assert seen == {("jacobian", "tuple"), ("tuple", "float")}
    seen.clear()
    least_squares(residuals, [-1.2, 1.0], max_nfev=2)
    assert seen == {("list", "Dual"), ("list", "float")}


def test_fewer_residuals_than_unknowns_are_allowed_here_not_in_least_squares():
    from tang.solve import least_squares

    def plane(x):
        return [x[0] + 2.0 * x[1] - 3.0 * x[2] - 4.0]

    res = damped_least_squares(plane, [0.0, 0.0, 0.0], tolerance=1e-12)
    assert res.status == dls.CONVERGED and abs(plane(res.x)[0]) <= 1e-12
    # from 0 every step is along the row (1, 2, −3): the minimum-norm solution, a·4/‖a‖²
    assert res.x == pytest.approx([4 / 14, 8 / 14, -12 / 14], abs=1e-9)
    with pytest.raises(ValueError, match=r"returned 1 residuals for 3 unknowns.*m ≥ n"):
        least_squares(plane, [0.0, 0.0, 0.0])


def test_math_functions_on_duals_get_the_shared_hint():
    with pytest.raises(EvaluationError, match=r"raised TypeError at x = \[0.5\].*use tang\.exp"):
        damped_least_squares(lambda x: [math.exp(x[0]) - 2.0], [0.5])


def rosenbrock_plus(x):
    """Rosenbrock's residuals in x[0], x[1], and x[j] itself for every further unknown."""
    return rosenbrock(x) + list(x[2:])


def rosenbrock_plus_and_jacobian(x):
    n = len(x)
    top = [row + [0.0] * (n - 2) for row in rosenbrock_and_jacobian(x)[1]]
    return rosenbrock_plus(x), top + np.eye(n)[2:].tolist()


@pytest.mark.parametrize("n", [2, 3])
def test_numpy_results_give_the_same_solve_as_lists(n: int):
    def as_arrays(x):
        r, jac = rosenbrock_plus_and_jacobian(x)
        return np.array(r), np.array(jac)

    x0 = [-1.2, 1.0, 0.5][:n]
    lists = damped_least_squares(rosenbrock_plus, x0, jacobian=rosenbrock_plus_and_jacobian)
    arrays = damped_least_squares(lambda x: np.array(rosenbrock_plus(x)), x0, jacobian=as_arrays)
    assert lists.success and lists.x == pytest.approx([1.0, 1.0, 0.0][:n], abs=1e-9)
    assert arrays.x == pytest.approx(lists.x, abs=1e-12) and arrays.nit == lists.nit
    assert all(type(v) is float for v in arrays.fun + arrays.jac[0])


# ---- the two-link arm's IK on top of it ---------------------------------------------------

DEMO = TwoLinkArm(227.0, 236.0, (math.radians(-90), math.radians(150)), (0.0, math.radians(150)))


def random_pose(arm: TwoLinkArm, rng: random.Random) -> tuple[float, float]:
    return rng.uniform(*arm.shoulder_limits), rng.uniform(*arm.elbow_limits)


@pytest.mark.parametrize(
    "elbow_limits",
    [(-math.radians(150), 0.0), (-math.radians(120), math.radians(120)), (0.3, 2.0)],
)
def test_arms_with_other_elbow_limits_reach_reachable_targets(elbow_limits):
    arm = TwoLinkArm(1.0, 0.7, (-2.5, 2.0), elbow_limits)
    rng = random.Random(4)
    for _ in range(60):
        goal = random_pose(arm, rng)
        target = arm.hand(*goal)
        assert arm.is_reachable(*target)
        s, e = arm.closed_form(*target)  # exact for a reachable target: both bends tried
        assert math.dist(arm.hand(s, e), target) < 1e-12
        sol = arm.solve(target, random_pose(arm, rng))
        assert sol.error < 1e-8 and math.dist(sol.hand, target) == pytest.approx(sol.error)
        assert arm.clamp(sol.shoulder, sol.elbow) == (sol.shoulder, sol.elbow)


def test_a_mirrored_arm_solves_mirrored_targets():
    mirror = TwoLinkArm(227.0, 236.0, (math.radians(-150), math.radians(90)), (-2.61799, 0.0))
    assert mirror.max_reach == DEMO.max_reach
    assert mirror.min_reach == pytest.approx(DEMO.min_reach, rel=1e-5)
    rng = random.Random(9)
    for _ in range(40):
        s, e = random_pose(DEMO, rng)
        x, y = DEMO.hand(s, e)
        sol = mirror.solve((x, -y), (-s * 0.5, -e * 0.5))
        assert sol.error < 1e-6
        assert mirror.is_reachable(x, -y) and DEMO.is_reachable(x, y)


def test_refine_reports_the_joint_limits_it_stops_on():
    # far beyond reach: the stretched arm points at the target, its elbow on the 0 limit
    fit = DEMO.refine((2000.0, 100.0), (0.5, 1.0), tolerance=1e-9)
    assert fit.active_mask == [0, -1]
    assert fit.x[0] == pytest.approx(math.atan2(100.0, 2000.0), abs=1e-7)
    sol = DEMO.solve((2000.0, 100.0), (0.5, 1.0))
    assert sol.error == pytest.approx(math.hypot(2000.0, 100.0) - DEMO.max_reach, rel=1e-9)


def test_the_arm_checks_its_numbers():
    with pytest.raises(ValueError, match="upper must be a finite length > 0"):
        TwoLinkArm(0.0, 1.0, (0.0, 1.0), (0.0, 1.0))
    with pytest.raises(ValueError, match=r"shoulder_limits must be two finite angles \(lo ≤ hi\)"):
        TwoLinkArm(1.0, 1.0, (1.0, 0.0), (0.0, 1.0))
    with pytest.raises(ValueError, match=r"elbow_limits must lie within \[-π, π\]"):
        TwoLinkArm(1.0, 1.0, (0.0, 1.0), (0.0, 4.0))
    with pytest.raises(ValueError, match="target must be two finite numbers"):
        DEMO.solve((math.nan, 1.0), (0.0, 0.0))
    with pytest.raises(ValueError, match="start must be two finite numbers"):
        DEMO.solve((1.0, 1.0), (0.0,))
