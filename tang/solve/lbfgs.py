"""``minimize``: L-BFGS over any function of a list of numbers, with exact gradients.

The limited-memory BFGS method (Nocedal 1980; Liu and Nocedal 1989): the last m steps s and
gradient changes y stand in for the inverse Hessian through the two-loop recursion, scaled by
γ = sᵀy/yᵀy; each step comes from a strong-Wolfe line search (``linesearch.strong_wolfe``,
Moré–Thuente, c1 = 1e-4, c2 = 0.9). It follows scipy's L-BFGS-B on an unconstrained problem
where choices are free: a first step of length 1, then unit steps; its stopping tests
(max|∇f| ≤ ``gtol``, relative reduction of f ≤ ``ftol``) and messages; at most 20
evaluations per line search; a failed line search drops the memory and tries once more
along the steepest descent before giving up. Where it differs: L-BFGS-B asks for
c1 = 1e-3; a trial point where f or ∇f is not finite is backed off from (L-BFGS-B's line
search stops there, and the solve with it); a failed line search that still lowered f is
taken as a step; one that changed f by no more than ``ftol`` ends the solve as converged.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from .derivatives import Objective, describe, first_bad, start_point
from .linesearch import strong_wolfe
from .result import MinimizeResult

EPS = 2.220446049250313e-16


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    """Σ aᵢbᵢ, summed left to right (not math.sumprod, whose extra
    precision would make the iterates, and so the counts, depend on the Python version)."""
    return sum(map(operator.mul, a, b))


MESSAGES = {
    "gtol": "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL",
    "ftol": "CONVERGENCE: REL_REDUCTION_OF_F <= FACTR*EPSMCH",
    "maxiter": "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT",
    "maxfun": "STOP: TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT",
    "linesearch": "ABNORMAL: the line search found no lower point along the search direction",
    "callback": "`callback` raised `StopIteration`.",
}


def minimize(
    f: Callable[[list[Any]], Any],
    x0: Sequence[float],
    method: str = "lbfgs",
    *,
    jac: Any = None,
    gtol: float = 1e-5,
    ftol: float = 2.220446049250313e-09,
    maxiter: int = 15000,
    maxfun: int = 15000,
    m: int = 10,
    callback: Callable[[list[float]], Any] | None = None,
) -> MinimizeResult:
    """A local minimum of f (a function of a list of numbers returning one number) from x0,
    by L-BFGS with a strong-Wolfe line search; scipy's L-BFGS-B defaults and field names.

    ``jac``: None or ``"dual"`` (one Dual pass with n tangents gives f and ∇f), ``"graph"``
    (f traced once, reverse mode, the gradient graph evaluated at each point: for large n;
    f may not branch on its inputs' values), ``True`` (f returns (value, gradient)), or a
    callable returning the gradient. ``nfev`` counts evaluations of f and ``njev`` of the
    gradient; a Dual pass or a graph evaluation counts as one of each.

    Stops when max|∇f| ≤ ``gtol`` or (f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) ≤ ``ftol``
    (``status`` 0, ``success``), after ``maxiter`` iterations or ``maxfun`` evaluations
    (status 1), when no line search makes progress (status 2), or when ``callback(x)``,
    called after each iteration, raises StopIteration (status 99)."""
    if method.lower().replace("-", "") != "lbfgs":
        raise ValueError(f"unknown method {method!r}: minimize offers 'lbfgs'")
    for name, value in (("gtol", gtol), ("ftol", ftol)):
        if not (isinstance(value, (int, float)) and value >= 0.0):
            raise ValueError(f"{name} must be a number ≥ 0, not {value!r}")
    for name, count in (("maxiter", maxiter), ("maxfun", maxfun), ("m", m)):
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"{name} must be a positive integer, not {count!r}")
    x = start_point(x0)
    objective = Objective(f, len(x), jac)
    fx, g = objective(x)
    if not math.isfinite(fx):
        raise ValueError(
            f"{objective.label} is {fx} at x0 = {describe(x)}: it must be finite there"
        )
    bad = first_bad(g)
    if bad is not None:
        raise ValueError(
            f"the gradient of {objective.label} has {g[bad]} in entry {bad} at x0 = {describe(x)}: "
            "it must be finite there"
        )
    memory: deque[tuple[list[float], list[float], float]] = deque(maxlen=m)  # (s, y, 1/sᵀy)
    nit = 0
    reason = "gtol" if _max_abs(g) <= gtol else ""
    fresh = True  # no curvature known yet: a steepest-descent step of length 1
    while not reason:
        if nit >= maxiter:
            reason = "maxiter"
            break
        if objective.nfev >= maxfun:
            reason = "maxfun"
            break
        d = _direction(g, memory)
        slope = _dot(g, d)
        if not slope < 0.0:  # rounding spoilt the direction: start the memory afresh
            memory.clear()
            d, slope, fresh = [-v for v in g], -_dot(g, g), True
            if not slope < 0.0:
                reason = "linesearch"
                break
        first = 1.0 / math.sqrt(_dot(d, d)) if fresh else 1.0
        search = strong_wolfe(
            _along(objective, x, d),
            fx,
            slope,
            min(first, 1e10),
            max_evaluations=min(20, maxfun - objective.nfev),
        )
        if not search.failed and search.value == fx:
            # the search ended (a dcsrch warning) where f did not change: rounding leaves no
            # progress along d; L-BFGS-B stops here through its ftol test, and so do we
            reason = "ftol"
            break
        if not search.value < fx:  # (a failed search that still went down is a step too)
            if abs(search.value - fx) <= ftol * max(abs(fx), abs(search.value), 1.0):
                reason = "ftol"  # what it tried changed f by no more than ftol: done
                break
            if memory or not fresh:
                memory.clear()  # what L-BFGS-B does: forget, and try the steepest descent
                fresh = True
                continue
            reason = "maxfun" if objective.nfev >= maxfun else "linesearch"
            break
        x_new, g_new = search.payload
        s = [a - b for a, b in zip(x_new, x)]
        y = [a - b for a, b in zip(g_new, g)]
        sy = _dot(s, y)
        if sy > EPS * _dot(y, y):  # keep only pairs with positive curvature
            memory.append((s, y, 1.0 / sy))
        fresh = False
        nit += 1
        f_old, x, fx, g = fx, x_new, search.value, g_new
        if callback is not None:
            try:
                callback(list(x))
            except StopIteration:
                reason = "callback"
                break
        if _max_abs(g) <= gtol:
            reason = "gtol"
        elif f_old - fx <= ftol * max(abs(f_old), abs(fx), 1.0):
            reason = "ftol"
        elif objective.nfev >= maxfun:
            reason = "maxfun"
    status = {"gtol": 0, "ftol": 0, "maxiter": 1, "maxfun": 1, "linesearch": 2, "callback": 99}
    return MinimizeResult(
        x=x,
        fun=fx,
        jac=g,
        nfev=objective.nfev,
        njev=objective.njev,
        nit=nit,
        success=status[reason] == 0,
        status=status[reason],
        message=MESSAGES[reason],
    )


def _max_abs(v: Sequence[float]) -> float:
    return max(map(abs, v))


def _direction(
    g: list[float], memory: deque[tuple[list[float], list[float], float]]
) -> list[float]:
    """−H·g by the two-loop recursion, H the L-BFGS inverse-Hessian approximation with
    initial scaling γ = sᵀy/yᵀy of the newest pair."""
    q = list(g)
    alphas = []
    for s, y, rho in reversed(memory):
        alpha = rho * _dot(s, q)
        alphas.append(alpha)
        q = [qi - alpha * yi for qi, yi in zip(q, y)]
    if memory:
        s, y, rho = memory[-1]
        gamma = 1.0 / (rho * _dot(y, y))
        q = [gamma * qi for qi in q]
    for (s, y, rho), alpha in zip(memory, reversed(alphas)):
        beta = rho * _dot(y, q)
        q = [qi + (alpha - beta) * si for qi, si in zip(q, s)]
    return [-qi for qi in q]


def _along(objective: Objective, x: list[float], d: list[float]) -> Callable[[float], Any]:
    """φ(t) = f(x + t·d) with φ'(t) = ∇f·d, keeping (point, gradient) for the caller."""

    def phi(t: float) -> tuple[float, float, tuple[list[float], list[float]]]:
        point = [xi + t * di for xi, di in zip(x, d)]
        value, gradient = objective(point)
        return value, _dot(gradient, d), (point, gradient)

    return phi
