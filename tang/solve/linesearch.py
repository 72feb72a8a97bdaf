"""A line search for the strong Wolfe conditions: Moré and Thuente's, as MINPACK-2's
``dcsrch``/``dcstep`` (which scipy's L-BFGS-B runs) do it.

J. J. Moré, D. J. Thuente, "Line search algorithms with guaranteed sufficient decrease",
ACM Trans. Math. Software 20(3), 286–307 (1994). Along a direction, φ(t) = f(x + t·d) with
φ'(0) < 0, it looks for a step t with

    φ(t) ≤ φ(0) + c1·t·φ'(0)     (sufficient decrease)
    |φ'(t)| ≤ c2·|φ'(0)|          (curvature)

by safeguarded cubic and quadratic interpolation inside an interval that brackets such a
step once one is known. A trial step where φ is not finite halves the step towards the best
one so far and caps later steps there (dcsrch itself has no such case).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Phi = Callable[[float], tuple[float, float, Any]]  # t ↦ (φ(t), φ'(t), anything to keep)

CONVERGED = "converged"


@dataclass
class LineSearchResult:
    """Where the search stopped: the last step it evaluated, φ and φ' there, what ``phi``
    returned with them, how many evaluations it took, and why it stopped (``CONVERGED``, a
    warning from dcsrch, or a failure)."""

    step: float
    value: float
    slope: float
    payload: Any
    evaluations: int
    status: str

    @property
    def converged(self) -> bool:
        return self.status == CONVERGED

    @property
    def failed(self) -> bool:
        return self.status.startswith("failed")


def strong_wolfe(
    phi: Phi,
    value0: float,
    slope0: float,
    step: float,
    *,
    c1: float = 1e-4,
    c2: float = 0.9,
    xtol: float = 0.1,
    step_min: float = 0.0,
    step_max: float = 1e10,
    max_evaluations: int = 20,
) -> LineSearchResult:
    """Search along φ from t = 0 (where φ = ``value0`` and φ' = ``slope0`` < 0), starting
    at ``step``, for at most ``max_evaluations`` calls of ``phi``. Returns the step that
    satisfies both conditions, or, when a warning ends the search as in dcsrch (rounding
    errors, the interval below ``xtol``, a step at ``step_min``/``step_max``), the best
    step so far; after too many evaluations the better of the best and the last one.
    Where dcsrch would evaluate its best step a second time, the values already known are
    returned instead."""
    if not slope0 < 0.0:
        raise ValueError(f"the direction is not a descent direction: φ'(0) = {slope0}")
    if not 0.0 < c1 < c2 < 1.0:
        raise ValueError(f"need 0 < c1 < c2 < 1, got c1 = {c1}, c2 = {c2}")
    if not step_min <= step <= step_max:
        raise ValueError(f"the first step {step} lies outside [{step_min}, {step_max}]")
    xtrapl, xtrapu = 1.1, 4.0
    bracketed = False
    stage = 1
    gtest = c1 * slope0
    width = step_max - step_min
    width1 = width / 0.5
    # (stx, fx, gx): the best step so far; (sty, fy, gy): the other end of the interval
    stx, fx, gx = 0.0, value0, slope0
    sty, fy, gy = 0.0, value0, slope0
    stmin, stmax = 0.0, step + xtrapu * step
    evaluations = 0
    value, slope, payload = value0, slope0, None
    best_payload: Any = None  # what phi returned at stx

    def verdict(step: float, value: float, slope: float) -> str:
        """dcsrch's tests at an evaluated step: a warning, convergence, or "" (go on)."""
        ftest = value0 + step * gtest
        status = ""
        if bracketed and (step <= stmin or step >= stmax):
            status = "warning: rounding errors prevent progress"
        if bracketed and stmax - stmin <= xtol * stmax:
            status = "warning: xtol test satisfied"
        if step == step_max and value <= ftest and slope <= gtest:
            status = "warning: step = step_max"
        if step == step_min and (value > ftest or slope >= gtest):
            status = "warning: step = step_min"
        if value <= ftest and abs(slope) <= c2 * -slope0:
            status = CONVERGED
        return status

    while True:
        if evaluations >= max_evaluations:
            failed = "failed: too many evaluations"
            if best_payload is not None and fx < value:  # the best point, not the last
                return LineSearchResult(stx, fx, gx, best_payload, evaluations, failed)
            return LineSearchResult(step, value, slope, payload, evaluations, failed)
        value, slope, payload = phi(step)
        evaluations += 1
        if not (math.isfinite(value) and math.isfinite(slope)):
            # not in dcsrch: back off towards the best step, and never go beyond it again
            step_max = max(step_min, stx + 0.5 * (step - stx))
            if step_max <= stx or step == step_max:
                return LineSearchResult(
                    step, value, slope, payload, evaluations, "failed: φ is not finite"
                )
            step = step_max
            stmax = min(stmax, step_max)
            continue
        ftest = value0 + step * gtest
        if stage == 1 and value <= ftest and slope >= 0.0:
            stage = 2
        status = verdict(step, value, slope)
        if status:
            return LineSearchResult(step, value, slope, payload, evaluations, status)
        evaluated = step
        if stage == 1 and fx >= value > ftest:
            # the modified function ψ(t) = φ(t) − φ(0) − c1·t·φ'(0) predicts the step
            stx, fxm, gxm, sty, fym, gym, step, bracketed = cubic_step(
                stx, fx - stx * gtest, gx - gtest,
                sty, fy - sty * gtest, gy - gtest,
                step, value - step * gtest, slope - gtest,
                bracketed, stmin, stmax,
            )  # fmt: skip
            fx, fy = fxm + stx * gtest, fym + sty * gtest
            gx, gy = gxm + gtest, gym + gtest
        else:
            stx, fx, gx, sty, fy, gy, step, bracketed = cubic_step(
                stx, fx, gx, sty, fy, gy, step, value, slope, bracketed, stmin, stmax
            )
        if stx == evaluated:
            best_payload = payload
        if bracketed:  # make sure the interval shrinks enough
            if abs(sty - stx) >= 0.66 * width1:
                step = stx + 0.5 * (sty - stx)
            width1 = width
            width = abs(sty - stx)
            stmin, stmax = min(stx, sty), max(stx, sty)
        else:
            stmin = step + xtrapl * (step - stx)
            stmax = step + xtrapu * (step - stx)
        step = min(max(step, step_min), step_max)
        stuck = bracketed and (step <= stmin or step >= stmax or stmax - stmin <= xtol * stmax)
        if stuck or step == stx:
            # no progress possible: dcsrch would evaluate the best step stx once more and
            # stop with a warning; its values are known, so stop there without the call
            status = verdict(stx, fx, gx) or "warning: rounding errors prevent progress"
            return LineSearchResult(stx, fx, gx, best_payload, evaluations, status)


def cubic_step(
    stx: float, fx: float, dx: float,
    sty: float, fy: float, dy: float,
    stp: float, fp: float, dp: float,
    bracketed: bool, stpmin: float, stpmax: float,
) -> tuple[float, float, float, float, float, float, float, bool]:  # fmt: skip
    """MINPACK-2's dcstep: a safeguarded trial step from the cubic (or quadratic) that
    interpolates φ at the best step stx and the current step stp, and the updated interval
    [stx, sty] that holds a step satisfying both conditions. Returns
    (stx, fx, dx, sty, fy, dy, new step, bracketed)."""
    opposite = (dp > 0.0 and dx < 0.0) or (dp < 0.0 and dx > 0.0)
    if fp > fx:
        # case 1: a higher value: the minimum is bracketed
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        gamma = _gamma(theta, dx, dp)
        if stp < stx:
            gamma = -gamma
        p = (gamma - dx) + theta
        q = ((gamma - dx) + gamma) + dp
        stpc = stx + _ratio(p, q) * (stp - stx)
        stpq = stx + (_ratio(dx, (fx - fp) / (stp - stx) + dx) / 2.0) * (stp - stx)
        stpf = stpc if abs(stpc - stx) < abs(stpq - stx) else stpc + (stpq - stpc) / 2.0
        bracketed = True
    elif opposite:
        # case 2: a lower value and derivatives of opposite sign: bracketed
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        gamma = _gamma(theta, dx, dp)
        if stp > stx:
            gamma = -gamma
        p = (gamma - dp) + theta
        q = ((gamma - dp) + gamma) + dx
        stpc = stp + _ratio(p, q) * (stx - stp)
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
        bracketed = True
    elif abs(dp) < abs(dx):
        # case 3: a lower value, same-sign derivatives, and the slope decreases in size
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        gamma = _gamma(theta, dx, dp)
        if stp > stx:
            gamma = -gamma
        p = (gamma - dp) + theta
        q = (gamma + (dx - dp)) + gamma
        r = p / q if q != 0.0 else 0.0  # no cubic minimiser: extrapolate to the bound
        if r < 0.0 and gamma != 0.0:
            stpc = stp + r * (stx - stp)
        elif stp > stx:
            stpc = stpmax
        else:
            stpc = stpmin
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        if bracketed:
            # a step close to stp, but not too close to the end of the interval
            stpf = stpc if abs(stpc - stp) < abs(stpq - stp) else stpq
            if stp > stx:
                stpf = min(stp + 0.66 * (sty - stp), stpf)
            else:
                stpf = max(stp + 0.66 * (sty - stp), stpf)
        else:
            # a step far from stp
            stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
            stpf = min(stpmax, max(stpmin, stpf))
    else:
        # case 4: a lower value, same-sign derivatives, and the slope does not decrease
        if bracketed:
            theta = 3.0 * (fp - fy) / (sty - stp) + dy + dp
            gamma = _gamma(theta, dy, dp)
            if stp > sty:
                gamma = -gamma
            p = (gamma - dp) + theta
            q = ((gamma - dp) + gamma) + dy
            stpf = stp + _ratio(p, q) * (sty - stp)
        elif stp > stx:
            stpf = stpmax
        else:
            stpf = stpmin
    # the new interval
    if fp > fx:
        sty, fy, dy = stp, fp, dp
    else:
        if opposite:
            sty, fy, dy = stx, fx, dx
        stx, fx, dx = stp, fp, dp
    return stx, fx, dx, sty, fy, dy, stpf, bracketed


def _gamma(theta: float, da: float, db: float) -> float:
    """√(θ² − da·db), scaled against overflow as dcstep does (0 where it would be imaginary)."""
    s = max(abs(theta), abs(da), abs(db))
    if s == 0.0 or not math.isfinite(s):
        return 0.0
    return s * math.sqrt(max(0.0, (theta / s) ** 2 - (da / s) * (db / s)))


def _ratio(p: float, q: float) -> float:
    """p/q, or ½ (bisection) where q vanishes."""
    return p / q if q != 0.0 else 0.5
