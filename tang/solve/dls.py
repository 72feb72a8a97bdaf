"""Damped least squares inside a box: Levenberg's method with adaptive damping, for small
problems solved often (inverse kinematics every animation frame).

Each iteration solves (JᵀJ + λ²I)·Δ = −Jᵀr. A variable held at a bound that the descent
−Jᵀr pushes further out is frozen for the step; the step is clamped into [lower, upper] and
kept only if it lowers ‖r‖ (then λ shrinks, else λ grows and the step is tried again). The
change of ‖r‖² is summed as Σ(r′ − r)(r′ + r), so progress far below the rounding of ‖r‖²
(a free unknown beside large residuals held by the bounds) still counts.
The Jacobian comes from one forward pass on ``tang.Dual`` numbers carrying all n tangents
at once, or from a ``jacobian(x) -> (r, J)`` callable for hot paths (``derivatives.Residuals``
does both, and the checking of what the user's functions return).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import add, mul, sub
from typing import Any, NamedTuple

from .derivatives import Residuals, describe, plain_floats, real, start_point
from .result import LeastSquaresResult

Point = tuple[float, ...]
Rows = Sequence[Sequence[float]]  # a Jacobian: one row per residual
ResidualFunction = Callable[[tuple[Any, ...]], Sequence[Any]]  # x (floats or Duals) -> r
Linearisation = Callable[[Point], tuple[Sequence[float], Rows]]  # x -> (r, J)

MIN_STEP = 1e-13  # an accepted step moving x by less than this (Σ|Δᵢ|) ends the solve

# LeastSquaresResult.status: why the solve stopped (every status but MAX_ITERATIONS succeeds)
MAX_ITERATIONS = 0  # max_iterations spent with ‖r‖ still above tolerance
NOTHING_DOWNHILL = 1  # −Jᵀr is zero once the variables pinned at their bounds are frozen
NO_BETTER_STEP = 2  # λ grew past damping_max: no step lowers ‖r‖ (a minimum, to rounding)
STEP_TOO_SMALL = 3  # an accepted step moved x by less than MIN_STEP
CONVERGED = 4  # ‖r‖ ≤ tolerance

DEFAULT_DAMPING = (10.0, 0.3, 4.0, 1e-6, 1e7)  # damping, down, up, min, max: as in the signature

MESSAGES = {
    MAX_ITERATIONS: "the iteration limit was reached before ‖r‖ fell to the tolerance",
    NOTHING_DOWNHILL: "no descent direction inside the bounds: −Jᵀr is zero on the free variables",
    NO_BETTER_STEP: "no step lowers ‖r‖ (the damping grew past damping_max): a local minimum",
    STEP_TOO_SMALL: f"the last step moved x by less than {MIN_STEP:g}",
    CONVERGED: "‖r‖ is within the tolerance",
}


def damped_least_squares(
    residuals: ResidualFunction,
    x0: Sequence[float],
    *,
    lower: float | Sequence[float] | None = None,
    upper: float | Sequence[float] | None = None,
    jacobian: Linearisation | None = None,
    damping: float = 10.0,
    damping_down: float = 0.3,
    damping_up: float = 4.0,
    damping_min: float = 1e-6,
    damping_max: float = 1e7,
    max_iterations: int = 100,
    tolerance: float = 1e-10,
) -> LeastSquaresResult:
    """Minimise ½‖r(x)‖² over the box [lower, upper] from ``x0``; a ``LeastSquaresResult``
    with scipy's fields (``active_mask``: −1/+1 where x sits at its lower/upper bound;
    ``extra["damping"]``: the last λ).

    ``residuals(x)`` takes a tuple of n numbers (floats, or Duals when the Jacobian is taken
    here: one pass per Jacobian, n tangents at once) and returns m ≥ 1 of them, the same m
    every time. ``jacobian(x)``, if given, returns (r, J) at x with J as m rows of n and
    replaces the dual pass (``residuals`` still prices the trial points). ``lower`` and
    ``upper`` are None, one number for every unknown, or n numbers (±inf allowed). ``x0``
    must lie in the box: it is rejected, not clamped, so a caller's mistake is not moved
    silently.

    λ (``damping``, in the units of J) starts each solve; a kept step scales it by
    ``damping_down`` (not below ``damping_min``), a refused one by ``damping_up``, and a trial
    whose residuals are not finite is refused. The solve stops once ‖r‖ ≤ ``tolerance``, or
    as ``status`` says (``MESSAGES``). ``nfev`` counts calls of ``residuals`` (dual passes
    included), ``njev`` Jacobians. A user function that raises comes back as an
    ``EvaluationError`` naming it and the point."""
    x = tuple(start_point(x0))
    n = len(x)
    lo = _bounds(lower, n, -math.inf, "lower")
    hi = _bounds(upper, n, math.inf, "upper")
    _check_box(x, lo, hi)
    damp = (damping, damping_down, damping_up, damping_min, damping_max)
    if damp != DEFAULT_DAMPING:
        _check_damping(*damp)
    _check_limits(max_iterations, tolerance)
    if jacobian is not None and not callable(jacobian):
        raise TypeError(f"jacobian must be callable or None, got {type(jacobian).__name__}")
    how = "dual" if jacobian is None else jacobian  # a callable returns (r, J) together
    res = Residuals(residuals, n, how, paired=True, underdetermined=True)
    r, jac = res.jacobian(x)  # checked in full: it fixes m
    if not math.isfinite(_sum_of_squares(r)):
        raise ValueError(
            f"the residuals at x0 are not finite or ‖r‖² overflows (r = {r!r:.200}): "
            "damped_least_squares needs a finite starting point"
        )
    problem = _Problem(res, lo, hi, damp, max_iterations, tolerance * tolerance)
    x, r, jac, nit, status, lam = _LOOPS.get(n, _iterate)(problem, x, r, jac)
    if status < 0:  # no early stop
        status = CONVERGED if _sum_of_squares(r) <= problem.tol2 else MAX_ITERATIONS
    nfev = res.nfev + (res.njev if res.mode == "dual" else 0)  # a dual pass calls residuals
    return _result(x, r, jac, lo, hi, (nfev, res.njev), nit, status, lam)


class _Problem(NamedTuple):
    """What the loops work on: the residuals, the box, λ's schedule, when to stop."""

    res: Residuals
    lower: Point
    upper: Point
    damping: tuple[float, float, float, float, float]  # λ, down, up, min, max
    max_iterations: int
    tol2: float  # tolerance²

    def change(self, point: Point, r: Sequence[float]) -> float:
        """‖r(point)‖² − ‖r‖² as Σ(r′ − r)(r′ + r): accurate even where the change is far
        below the rounding of ‖r‖² itself (nan or inf when r′ is not finite)."""
        res = self.res
        out = res.evaluate(point)
        try:
            if len(out) == res.m:
                delta = sum(map(mul, map(sub, out, r), map(add, out, r)))
                if delta.__class__ is float:
                    return delta
        except TypeError:
            pass
        new = res.checked_values(out, point)  # or a clear error
        return sum(map(mul, map(sub, new, r), map(add, new, r)))


# (x, r, J, iterations, status, λ) where a loop stops; status -1 when it ran to the end (the
# iterations spent or ‖r‖ within the tolerance: the caller tells which)
Outcome = tuple[Point, Sequence[float], Rows, int, int, float]


def _iterate(problem: _Problem, x: Point, r: Sequence[float], jac: Rows) -> Outcome:
    """The iterations for any n, from (x, r, J)."""
    res, lo, hi, (lam, down, up, lam_min, lam_max), max_iterations, tol2 = problem
    err2 = _sum_of_squares(r)
    normal, downhill = _normal_equations(jac, r, x, lo, hi)
    nit = 0
    status = -1
    while nit < max_iterations and err2 > tol2:
        nit += 1
        if not any(downhill):
            status = NOTHING_DOWNHILL
            break
        step = _damped_step(normal, lam * lam, downhill)
        if step is not None:  # into the box, then judged by ‖r‖ (nan never wins)
            pairs = zip(map(add, x, step), lo, hi)
            trial = tuple([a if v < a else b if v > b else v for v, a, b in pairs])
            better = problem.change(trial, r) < 0.0
        else:
            better = False
        if better:
            moved = sum([abs(v - w) for v, w in zip(trial, x)])
            x = trial
            lam = lam * down
            if lam < lam_min:
                lam = lam_min
            r, jac = res.jacobian(x)  # checked in full
            err2 = _sum_of_squares(r)
            normal, downhill = _normal_equations(jac, r, x, lo, hi)
            if moved < MIN_STEP:
                status = STEP_TOO_SMALL
                break
        else:
            lam *= up
            if lam > lam_max:
                status = NO_BETTER_STEP
                break
    return x, r, jac, nit, status, lam


def _iterate_pair(problem: _Problem, x: Point, r: Sequence[float], jac: Rows) -> Outcome:
    """``_iterate`` for two unknowns on scalars, the 2×2 system in closed form: the same
    steps (to the last bit when m ≤ 2) without the lists: the hot path of a two-joint arm."""
    res, (s_lo, e_lo), (s_hi, e_hi), (lam, down, up, lam_min, lam_max), max_iters, tol2 = problem
    change = problem.change
    s, e = x
    nit = 0
    status = -1
    moved = math.inf
    fresh = True  # (r, J) belong to a new point: form its normal equations first
    while True:
        if fresh:  # ‖r‖², JᵀJ = [[a11, a12], [a12, a22]] and −Jᵀr = (g1, g2)
            err2 = a11 = a12 = a22 = g1 = g2 = 0.0
            try:
                for (j1, j2), ri in zip(jac, r):
                    err2 += ri * ri
                    a11 += j1 * j1
                    a12 += j1 * j2
                    a22 += j2 * j2
                    g1 -= j1 * ri
                    g2 -= j2 * ri
                finite = math.isfinite(err2 + a11 + a22 + g1 + g2)
            except (TypeError, ValueError):  # say what is wrong with (r, J), else pass it on
                res.checked(r, jac, (s, e))
                raise
            if not finite:
                raise _not_finite((s, e))
            if (g1 < 0.0 and s <= s_lo) or (g1 > 0.0 and s >= s_hi):
                a11 = a12 = g1 = 0.0  # frozen at its bound
            if (g2 < 0.0 and e <= e_lo) or (g2 > 0.0 and e >= e_hi):
                a22 = a12 = g2 = 0.0
            fresh = False
            if moved < MIN_STEP:
                status = STEP_TOO_SMALL
                break
        if nit >= max_iters or err2 <= tol2:
            break
        nit += 1
        if g1 == 0.0 and g2 == 0.0:
            status = NOTHING_DOWNHILL
            break
        lam2 = lam * lam
        m11, m22 = a11 + lam2, a22 + lam2
        det = m11 * m22 - a12 * a12
        if det > 0.0:
            ns = s + (m22 * g1 - a12 * g2) / det
            ne = e + (m11 * g2 - a12 * g1) / det
            ns = s_lo if ns < s_lo else s_hi if ns > s_hi else ns
            ne = e_lo if ne < e_lo else e_hi if ne > e_hi else ne
            better = change((ns, ne), r) < 0.0
        else:
            better = False
        if better:
            moved = abs(ns - s) + abs(ne - e)
            s, e = ns, ne
            lam = lam * down
            if lam < lam_min:
                lam = lam_min
            r, jac = res.jacobian((s, e), lazy=True)  # its entries are checked above
            fresh = True
        else:
            lam *= up
            if lam > lam_max:
                status = NO_BETTER_STEP
                break
    return (s, e), r, jac, nit, status, lam


_LOOPS = {2: _iterate_pair}  # n → its fast path; every other n takes ``_iterate``


# ---------------------------------------------------------------------------------------
# the linear algebra of one step


def _normal_equations(
    jac: Rows,
    r: Sequence[float],
    x: Point,
    lo: Point,
    hi: Point,
) -> tuple[list[list[float]], list[float]]:
    """JᵀJ and the descent −Jᵀr, with the rows and columns of frozen variables zeroed: a
    variable at a bound that −Jᵀr pushes further out does not move in this step (as in
    ``_iterate_pair``)."""
    columns = list(zip(*jac))
    downhill = [-sum(map(mul, column, r)) for column in columns]
    for j, g in enumerate(downhill):
        if (g < 0.0 and x[j] <= lo[j]) or (g > 0.0 and x[j] >= hi[j]):
            downhill[j] = 0.0
            columns[j] = (0.0,) * len(r)
    normal = [[sum(map(mul, a, b)) for b in columns] for a in columns]
    trace = sum([normal[j][j] for j in range(len(normal))])
    if not math.isfinite(trace + sum(downhill) + _sum_of_squares(r)):
        raise _not_finite(x)
    return normal, downhill


def _not_finite(x: Sequence[float]) -> ValueError:
    return ValueError(
        f"the residuals, the Jacobian or Jᵀr at x = {describe(x)} are not finite "
        "(damped_least_squares)"
    )


def _damped_step(
    normal: list[list[float]], lam2: float, downhill: list[float]
) -> list[float] | None:
    """Δ solving (JᵀJ + λ²I)·Δ = −Jᵀr; None when rounding makes the matrix look singular
    (the caller then damps harder). n ≤ 2 in closed form, larger n by Cholesky."""
    n = len(downhill)
    if n == 2:
        (m11, m12), (_, m22) = normal
        m11 += lam2
        m22 += lam2
        det = m11 * m22 - m12 * m12
        if not det > 0.0:
            return None
        gs, ge = downhill
        return [(m22 * gs - m12 * ge) / det, (m11 * ge - m12 * gs) / det]
    if n == 1:
        d = normal[0][0] + lam2
        return [downhill[0] / d] if d > 0.0 else None
    return _cholesky_solve(normal, lam2, downhill)


def _cholesky_solve(a: list[list[float]], shift: float, b: list[float]) -> list[float] | None:
    """The solution of (a + shift·I)·x = b for symmetric positive definite a + shift·I, by
    Cholesky (L·Lᵀ) and two triangular solves; None if a pivot is not positive."""
    n = len(b)
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        row = low[i]
        for j in range(i + 1):
            s = a[i][j] + (shift if i == j else 0.0) - sum(map(mul, row[:j], low[j][:j]))
            if i == j:
                if not s > 0.0:
                    return None
                row[i] = math.sqrt(s)
            else:
                row[j] = s / low[j][j]
    y = [0.0] * n
    for i in range(n):  # L·y = b
        y[i] = (b[i] - sum(map(mul, low[i][:i], y[:i]))) / low[i][i]
    x = [0.0] * n
    for i in reversed(range(n)):  # Lᵀ·x = y
        x[i] = (y[i] - sum(low[k][i] * x[k] for k in range(i + 1, n))) / low[i][i]
    return x


def _sum_of_squares(r: Sequence[float]) -> float:
    return sum(map(mul, r, r))


# ---------------------------------------------------------------------------------------
# checking the bounds and the settings


def _floats(values: Any, name: str) -> Point:
    """The bounds ``values`` as a tuple of floats (ints and numpy scalars too; nan is refused)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    fast = plain_floats(values)
    if fast is not None and not any(map(math.isnan, fast)):
        return tuple(fast)
    return tuple([_bound(v, f"{name}[{j}]") for j, v in enumerate(values)])


def _bound(v: Any, what: str) -> float:
    """A bound as a float: any real number but nan (±inf: no bound)."""
    f = real(v, what)
    if math.isnan(f):
        raise ValueError(f"{what} is nan")
    return f


def _bounds(b: Any, n: int, default: float, name: str) -> Point:
    if b is None:
        return (default,) * n
    if b.__class__ is not tuple and b.__class__ is not list and not hasattr(b, "__iter__"):
        return (_bound(b, name),) * n  # one number for every unknown
    out = _floats(b, name)
    if len(out) != n:
        raise ValueError(
            f"{name} must be None, one number or {n} numbers (one per unknown), got {len(out)}"
        )
    return out


def _check_box(x: Point, lo: Point, hi: Point) -> None:
    for j, (v, a, b) in enumerate(zip(x, lo, hi)):
        if a > b:
            raise ValueError(f"lower[{j}] = {a!r} is above upper[{j}] = {b!r}")
        if not a <= v <= b:
            raise ValueError(
                f"x0[{j}] = {v!r} is outside its bounds [{a!r}, {b!r}]: start inside the box "
                "(clamp x0 first if that is what you mean)"
            )


def _check_damping(damping: float, down: float, up: float, smallest: float, largest: float) -> None:
    named = {
        "damping": damping,
        "damping_down": down,
        "damping_up": up,
        "damping_min": smallest,
        "damping_max": largest,
    }
    for name, v in named.items():
        if not math.isfinite(real(v, name)) or v <= 0.0:
            raise ValueError(f"{name} must be a finite positive number, got {v!r}")
    if not down < 1.0 < up:
        raise ValueError(
            f"need damping_down < 1 < damping_up (shrink after a kept step, grow after a "
            f"refused one), got {down!r} and {up!r}"
        )
    if not smallest <= damping <= largest:
        raise ValueError(
            f"need damping_min ≤ damping ≤ damping_max, got {smallest!r}, {damping!r}, {largest!r}"
        )


def _check_limits(max_iterations: int, tolerance: float) -> None:
    if max_iterations.__class__ is not int and (
        isinstance(max_iterations, bool) or not isinstance(max_iterations, int)
    ):
        raise TypeError(f"max_iterations must be an int, got {max_iterations!r}")
    if max_iterations < 0:
        raise ValueError(f"max_iterations must be ≥ 0, got {max_iterations}")
    if tolerance.__class__ is not float:
        real(tolerance, "tolerance")
    if not math.isfinite(tolerance) or tolerance < 0.0:
        raise ValueError(f"tolerance must be a finite number ≥ 0, got {tolerance!r}")


def _result(
    x: Point,
    r: Sequence[float],
    jac: Rows,
    lo: Point,
    hi: Point,
    counts: tuple[int, int],
    nit: int,
    status: int,
    lam: float,
) -> LeastSquaresResult:
    fun = list(map(float, r))
    rows = [list(map(float, row)) for row in jac]
    grad = [sum(map(mul, column, fun)) for column in zip(*rows)]
    mask = []
    optimality = 0.0  # max |∂cost/∂xⱼ| over the unknowns that no bound stops going downhill
    for v, a, b, g in zip(x, lo, hi, grad):
        k = -1 if v <= a else 1 if v >= b else 0
        mask.append(k)
        if not ((k < 0 and g > 0.0) or (k > 0 and g < 0.0)) and abs(g) > optimality:
            optimality = abs(g)
    return LeastSquaresResult(
        x=list(x),
        cost=0.5 * _sum_of_squares(fun),
        fun=fun,
        jac=rows,
        grad=grad,
        nfev=counts[0],
        njev=counts[1],
        nit=nit,
        success=status != MAX_ITERATIONS,
        status=status,
        message=MESSAGES[status],
        active_mask=mask,
        optimality=optimality,
        extra={"damping": lam},
    )
