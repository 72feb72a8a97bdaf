"""``least_squares``: Levenberg–Marquardt as MINPACK's ``lmder`` does it, over any residuals.

A faithful port of MINPACK-1 (J. J. Moré, B. S. Garbow, K. E. Hillstrom, Argonne 1980):
``qrfac`` (Householder QR with column pivoting), ``qrsolv`` (Givens rotations for the damped
system), ``lmpar`` (the Levenberg–Marquardt parameter for a trust region of radius Δ in the
scaled norm ‖D·p‖) and the ``lmder`` loop (its step-bound update, ``factor`` = 100, and its
convergence tests), with Moré's scaling: D holds the largest column norms of the Jacobian
seen so far ("Moré, The Levenberg–Marquardt algorithm: implementation and theory", 1978).
The same iterates, so the same evaluation counts as ``scipy.optimize.least_squares(method=
"lm")``, which calls MINPACK, up to rounding (``math.hypot`` stands in for ``enorm``).

Matrices are lists of columns here (MINPACK is column-major): ``a[j][i]`` is row i of
column j, and after ``qrfac`` R's entry (i, j), i ≤ j, is ``a[j][i]``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from .derivatives import Residuals, describe, first_bad, start_point
from .result import LeastSquaresResult

EPSMCH = 2.220446049250313e-16  # MINPACK's dpmpar(1)
DWARF = 2.2250738585072014e-308  # dpmpar(2): the smallest positive normal double


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    """Σ aᵢbᵢ, summed left to right as MINPACK's loops do (not math.sumprod, whose extra
    precision would make the iterates, and so the counts, depend on the Python version)."""
    return sum(map(operator.mul, a, b))


def enorm(v: Sequence[float]) -> float:
    """The Euclidean norm, without overflow or underflow (MINPACK's enorm)."""
    return math.hypot(*v)


# scipy's status numbers for MINPACK's info, and MINPACK's messages
STATUS = {0: -1, 1: 2, 2: 3, 3: 4, 4: 1, 5: 0, 6: 2, 7: 3, 8: 1, -2: -1}
MESSAGES = {
    1: "`ftol` termination condition is satisfied.",
    2: "`xtol` termination condition is satisfied.",
    3: "Both `ftol` and `xtol` termination conditions are satisfied.",
    4: "`gtol` termination condition is satisfied.",
    5: "The maximum number of function evaluations is exceeded.",
    6: "`ftol` is too small: no further reduction in the sum of squares is possible.",
    7: "`xtol` is too small: no further improvement in the approximate solution is possible.",
    8: "`gtol` is too small: the residuals are orthogonal to the Jacobian's columns to "
    "machine precision.",
}


def least_squares(
    residuals: Callable[[list[Any]], Sequence[Any]],
    x0: Sequence[float],
    method: str = "lm",
    *,
    jac: Any = None,
    ftol: float = 1e-8,
    xtol: float = 1e-8,
    gtol: float = 1e-8,
    max_nfev: int | None = None,
    x_scale: str | float | Sequence[float] = "jac",
    factor: float = 100.0,
) -> LeastSquaresResult:
    """Minimise ½‖r(x)‖² over x from x0, for residuals r taking a list of n numbers and
    returning m ≥ n numbers: MINPACK's Levenberg–Marquardt (lmder), scipy's field names.

    ``jac``: None or ``"dual"`` (one Dual pass with n tangents gives r and its Jacobian),
    ``"graph"`` (r traced once, reverse mode per residual, the Jacobian graph evaluated at
    each point; r may not branch on its inputs' values), or a callable returning the m×n
    Jacobian as rows. Counting, as lmder and scipy do: ``nfev`` is the number of plain
    evaluations of r (the start and every trial point), ``njev`` the number of Jacobian
    evaluations (each Dual pass or graph evaluation, though it yields r as well, counts only
    here); one more Jacobian evaluation, counted, gives ``jac`` at the final x when the last
    step moved x after the last one (scipy's wrapper makes that call too, uncounted).

    ``ftol``, ``xtol``, ``gtol``: lmder's relative reduction, step and gradient-angle tests;
    ``max_nfev`` (default 100·n, scipy's) bounds ``nfev``. ``x_scale``: ``"jac"`` (Moré's
    scaling from the Jacobian's column norms, MINPACK's mode 1) or the variables' scales
    (lmder's ``diag`` = 1/x_scale, mode 2). ``factor`` sets the first step bound
    (factor·‖D·x0‖, or factor itself when that is 0). ``cost`` is ½‖r‖² (scipy's
    definition; the Moré–Garbow–Hillstrom f is ‖r‖²); ``status`` follows scipy (1 gtol,
    2 ftol, 3 xtol, 4 both, 0 too many evaluations, −1 the Jacobian became non-finite),
    with MINPACK's own code in ``extra["info"]``; ``nit`` counts the accepted steps."""
    if method != "lm":
        raise ValueError(f"unknown method {method!r}: least_squares offers 'lm'")
    for name, value in (("ftol", ftol), ("xtol", xtol), ("gtol", gtol), ("factor", factor)):
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0):
            raise ValueError(f"{name} must be a number ≥ 0, not {value!r}")
    if factor <= 0:
        raise ValueError(f"factor must be positive, not {factor!r}")
    x = start_point(x0)
    n = len(x)
    if max_nfev is None:
        max_nfev = 100 * n
    if not isinstance(max_nfev, int) or isinstance(max_nfev, bool) or max_nfev < 1:
        raise ValueError(f"max_nfev must be a positive integer, not {max_nfev!r}")
    given_diag = _diag_from_scale(x_scale, n)
    r = Residuals(residuals, n, jac)
    fvec = r.values(x)
    bad = first_bad(fvec)
    if bad is not None:
        raise ValueError(
            f"residual {bad} of {r.label} is {fvec[bad]} at x0 = {describe(x)}: the residuals "
            "must be finite at the starting point"
        )
    loop = _Lmder(r, x, fvec, ftol, xtol, gtol, max_nfev, given_diag, factor)
    info = loop.run()
    x, fvec = loop.x, loop.fvec
    if loop.jac_x is x:
        J = loop.J
    else:
        _, J = r.jacobian(x)
    grad = [_dot(column, fvec) for column in zip(*J)]
    cost = 0.5 * _dot(fvec, fvec)
    message = MESSAGES.get(info, loop.failure)
    return LeastSquaresResult(
        x=x,
        cost=cost,
        fun=fvec,
        jac=J,
        grad=grad,
        nfev=r.nfev,
        njev=r.njev,
        nit=loop.accepted,
        success=STATUS[info] > 0,
        status=STATUS[info],
        message=message,
        active_mask=[0] * n,
        optimality=max(map(abs, grad)),
        extra={"info": info},
    )


def _diag_from_scale(x_scale: Any, n: int) -> list[float] | None:
    """lmder's ``diag`` for mode 2 (1/x_scale), or None for Moré's scaling (mode 1)."""
    if isinstance(x_scale, str):
        if x_scale != "jac":
            raise ValueError(f"x_scale must be 'jac' or positive numbers, not {x_scale!r}")
        return None
    scales = [x_scale] * n if isinstance(x_scale, (int, float)) else list(x_scale)
    if len(scales) != n:
        raise ValueError(f"x_scale has {len(scales)} entries, x0 has {n}")
    for i, s in enumerate(scales):
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < math.inf:
            raise ValueError(f"x_scale[{i}] is {s!r}: scales must be positive and finite")
    return [1.0 / float(s) for s in scales]


class _Lmder:
    """MINPACK's lmder loop (statement labels in comments), on a ``Residuals``."""

    def __init__(
        self,
        r: Residuals,
        x: list[float],
        fvec: list[float],
        ftol: float,
        xtol: float,
        gtol: float,
        maxfev: int,
        diag: list[float] | None,
        factor: float,
    ) -> None:
        self.r, self.x, self.fvec = r, x, fvec
        self.ftol, self.xtol, self.gtol, self.maxfev = ftol, xtol, gtol, maxfev
        self.mode = 1 if diag is None else 2
        self.diag = diag
        self.factor = factor
        self.J: list[list[float]] = []
        self.jac_x: list[float] | None = None
        self.accepted = 0
        self.failure = ""

    def run(self) -> int:
        """Iterate to a stop; return MINPACK's info (−2: the Jacobian is not finite)."""
        r, n, m = self.r, len(self.x), len(self.fvec)
        x, fvec = self.x, self.fvec
        ftol, xtol, gtol = self.ftol, self.xtol, self.gtol
        fnorm = enorm(fvec)
        par = 0.0
        iteration = 1
        delta = xnorm = 0.0
        diag = self.diag or [1.0] * n
        while True:  # 30: the outer loop
            _, J = r.jacobian(x)
            self.J, self.jac_x = J, x
            bad = _first_nonfinite(J)
            if bad is not None:
                i, j = bad
                if iteration == 1:
                    raise ValueError(
                        f"the Jacobian of {r.label} has {J[i][j]} at row {i}, column {j} at "
                        f"x0 = {describe(x)}: it must be finite at the starting point"
                    )
                self.failure = (
                    f"The Jacobian has {J[i][j]} at row {i}, column {j} at x = "
                    f"{describe(x)}: stopped there."
                )
                self.x, self.fvec = x, fvec
                return -2
            a = [list(column) for column in zip(*J)]
            ipvt, rdiag, acnorm = qrfac(a, m, n)
            if iteration == 1:
                if self.mode == 1:  # scale by the norms of the first Jacobian's columns
                    diag = [c if c != 0.0 else 1.0 for c in acnorm]
                xnorm = enorm([d * v for d, v in zip(diag, x)])
                delta = self.factor * xnorm
                if delta == 0.0:
                    delta = self.factor
            qtf = _q_transpose_times(a, rdiag, fvec, m, n)  # 90-130
            gnorm = 0.0  # 170: the scaled gradient's norm (largest cosine)
            if fnorm != 0.0:
                for j in range(n):
                    original = ipvt[j]
                    if acnorm[original] != 0.0:
                        s = _dot(a[j][: j + 1], [q / fnorm for q in qtf[: j + 1]])
                        gnorm = max(gnorm, abs(s / acnorm[original]))
            if gnorm <= gtol:
                self.x, self.fvec = x, fvec
                return 4
            if self.mode == 1:
                diag = [max(d, c) for d, c in zip(diag, acnorm)]
            while True:  # 200: the inner loop
                par, step = lmpar(a, ipvt, diag, qtf, delta, par)
                step = [-v for v in step]
                trial = [xi + pi for xi, pi in zip(x, step)]
                pnorm = enorm([d * p for d, p in zip(diag, step)])
                if iteration == 1:
                    delta = min(delta, pnorm)
                fvec1 = r.values(trial)
                fnorm1 = enorm(fvec1)
                actred = -1.0  # the scaled actual reduction
                if 0.1 * fnorm1 < fnorm:
                    q = fnorm1 / fnorm
                    actred = 1.0 - q * q
                # the scaled predicted reduction and directional derivative: R·Pᵀ·p
                rp = [0.0] * n
                for j in range(n):
                    temp = step[ipvt[j]]
                    column = a[j]
                    for i in range(j + 1):
                        rp[i] += column[i] * temp
                temp1 = enorm(rp) / fnorm
                temp2 = (math.sqrt(par) * pnorm) / fnorm
                prered = temp1 * temp1 + temp2 * temp2 / 0.5
                dirder = -(temp1 * temp1 + temp2 * temp2)
                ratio = actred / prered if prered != 0.0 else 0.0
                if ratio <= 0.25:  # 240: shrink the step bound
                    temp = 0.5 if actred >= 0.0 else 0.5 * dirder / (dirder + 0.5 * actred)
                    if 0.1 * fnorm1 >= fnorm or temp < 0.1:
                        temp = 0.1
                    delta = temp * min(delta, pnorm / 0.1)
                    par = par / temp
                elif par == 0.0 or ratio >= 0.75:
                    delta = pnorm / 0.5
                    par = 0.5 * par
                if ratio >= 1e-4:  # 270: a successful iteration
                    x, fvec = trial, fvec1
                    xnorm = enorm([d * v for d, v in zip(diag, x)])
                    fnorm = fnorm1
                    iteration += 1
                    self.accepted += 1
                info = 0  # 290: tests for convergence
                small_reduction = abs(actred) <= ftol and prered <= ftol and 0.5 * ratio <= 1.0
                if small_reduction:
                    info = 1
                if delta <= xtol * xnorm:
                    info = 3 if small_reduction else 2
                if info == 0:  # tests for termination and stringent tolerances
                    if r.nfev >= self.maxfev:
                        info = 5
                    if abs(actred) <= EPSMCH and prered <= EPSMCH and 0.5 * ratio <= 1.0:
                        info = 6
                    if delta <= EPSMCH * xnorm:
                        info = 7
                    if gnorm <= EPSMCH:
                        info = 8
                if info:
                    self.x, self.fvec = x, fvec
                    return info
                if ratio >= 1e-4:
                    break  # to the outer loop: a new Jacobian


def _first_nonfinite(rows: list[list[float]]) -> tuple[int, int] | None:
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if not math.isfinite(v):
                return i, j
    return None


def _q_transpose_times(
    a: list[list[float]], rdiag: list[float], fvec: list[float], m: int, n: int
) -> list[float]:
    """The first n entries of Qᵀ·fvec from qrfac's Householder vectors; puts R's diagonal
    back into ``a`` (lmder's loop 130)."""
    w = list(fvec)
    qtf = [0.0] * n
    for j in range(n):
        column = a[j]
        if column[j] != 0.0:
            temp = -_dot(column[j:], w[j:]) / column[j]
            w[j:] = [wi + ci * temp for wi, ci in zip(w[j:], column[j:])]
        column[j] = rdiag[j]
        qtf[j] = w[j]
    return qtf


# ---------------------------------------------------------------------------------------
# MINPACK's linear algebra


def qrfac(a: list[list[float]], m: int, n: int) -> tuple[list[int], list[float], list[float]]:
    """Householder QR with column pivoting of the m×n matrix ``a`` (n columns, overwritten):
    A·P = Q·R with |R's diagonal| non-increasing. Returns (ipvt: column j of A·P is column
    ipvt[j] of A, R's diagonal, A's column norms). On return the strict upper triangle of
    R is in ``a`` (R[i][j] = a[j][i], i < j) and the Householder vectors below it."""
    acnorm = [enorm(column) for column in a]
    rdiag = list(acnorm)
    wa = list(acnorm)
    ipvt = list(range(n))
    for j in range(min(m, n)):
        kmax = j  # bring the column of largest norm into the pivot position
        for k in range(j, n):
            if rdiag[k] > rdiag[kmax]:
                kmax = k
        if kmax != j:
            a[j], a[kmax] = a[kmax], a[j]
            rdiag[kmax] = rdiag[j]
            wa[kmax] = wa[j]
            ipvt[j], ipvt[kmax] = ipvt[kmax], ipvt[j]
        column = a[j]
        ajnorm = enorm(column[j:])
        if ajnorm != 0.0:  # the transformation that takes column j to a multiple of e_j
            if column[j] < 0.0:
                ajnorm = -ajnorm
            column[j:] = [v / ajnorm for v in column[j:]]
            column[j] += 1.0
            pivot = column[j]
            tail = column[j:]
            for k in range(j + 1, n):  # apply it to the other columns, update their norms
                other = a[k]
                temp = _dot(tail, other[j:]) / pivot
                other[j:] = [o - temp * t for o, t in zip(other[j:], tail)]
                if rdiag[k] != 0.0:
                    temp = other[j] / rdiag[k]
                    rdiag[k] *= math.sqrt(max(0.0, 1.0 - temp * temp))
                    ratio = rdiag[k] / wa[k]
                    if 0.05 * ratio * ratio <= EPSMCH:
                        rdiag[k] = enorm(other[j + 1 :])
                        wa[k] = rdiag[k]
        rdiag[j] = -ajnorm
    return ipvt, rdiag, acnorm


def qrsolv(
    r: list[list[float]], ipvt: list[int], diag: list[float], qtb: list[float]
) -> tuple[list[float], list[float]]:
    """The least-squares solution x of A·x = b, D·x = 0, given A·P = Q·R (R's upper
    triangle in ``r``, columns), D = diag(``diag``) and the first n entries of Qᵀ·b. Leaves
    the strict upper triangle of S, with Pᵀ(AᵀA + DD)P = SᵀS, transposed in r's strict lower
    triangle; returns (x, S's diagonal)."""
    n = len(ipvt)
    x = [0.0] * n
    wa = list(qtb[:n])
    sdiag = [0.0] * n
    for j in range(n):  # copy R's rows into the lower triangle; keep R's diagonal in x
        column = r[j]
        for i in range(j, n):
            column[i] = r[i][j]
        x[j] = column[j]
    for j in range(n):  # eliminate D with Givens rotations
        dl = diag[ipvt[j]]
        if dl != 0.0:
            for k in range(j, n):
                sdiag[k] = 0.0
            sdiag[j] = dl
            qtbpj = 0.0
            for k in range(j, n):
                sk = sdiag[k]
                if sk == 0.0:
                    continue
                column = r[k]
                rkk = column[k]
                if abs(rkk) < abs(sk):
                    cotan = rkk / sk
                    sin = 0.5 / math.sqrt(0.25 + 0.25 * cotan * cotan)
                    cos = sin * cotan
                else:
                    tan = sk / rkk
                    cos = 0.5 / math.sqrt(0.25 + 0.25 * tan * tan)
                    sin = cos * tan
                column[k] = cos * rkk + sin * sk
                temp = cos * wa[k] + sin * qtbpj
                qtbpj = -sin * wa[k] + cos * qtbpj
                wa[k] = temp
                for i in range(k + 1, n):
                    temp = cos * column[i] + sin * sdiag[i]
                    sdiag[i] = -sin * column[i] + cos * sdiag[i]
                    column[i] = temp
        sdiag[j] = r[j][j]
        r[j][j] = x[j]
    nsing = n  # solve S·z = wa; a singular S gives a least-squares solution
    for j in range(n):
        if sdiag[j] == 0.0 and nsing == n:
            nsing = j
        if nsing < n:
            wa[j] = 0.0
    for j in reversed(range(nsing)):
        column = r[j]
        total = _dot(column[j + 1 : nsing], wa[j + 1 : nsing])
        wa[j] = (wa[j] - total) / sdiag[j]
    for j in range(n):
        x[ipvt[j]] = wa[j]
    return x, sdiag


def lmpar(
    r: list[list[float]],
    ipvt: list[int],
    diag: list[float],
    qtb: list[float],
    delta: float,
    par: float,
) -> tuple[float, list[float]]:
    """The Levenberg–Marquardt parameter λ ≥ 0 and the step x solving A·x ≈ b,
    √λ·D·x = 0, with ‖D·x‖ within 10% of Δ = ``delta`` (or λ = 0 and ‖D·x‖ ≤ 1.1Δ):
    MINPACK's lmpar, from qrfac's R, P and Qᵀb, starting from the estimate ``par``."""
    n = len(ipvt)
    # the Gauss-Newton direction (a least-squares one if the Jacobian is rank-deficient)
    nsing = n
    wa1 = list(qtb[:n])
    for j in range(n):
        if r[j][j] == 0.0 and nsing == n:
            nsing = j
        if nsing < n:
            wa1[j] = 0.0
    for j in reversed(range(nsing)):
        column = r[j]
        wa1[j] /= column[j]
        temp = wa1[j]
        for i in range(j):
            wa1[i] -= column[i] * temp
    x = [0.0] * n
    for j in range(n):
        x[ipvt[j]] = wa1[j]
    iteration = 0
    wa2 = [d * v for d, v in zip(diag, x)]
    dxnorm = enorm(wa2)
    fp = dxnorm - delta
    if fp <= 0.1 * delta:  # the Gauss-Newton step is inside the trust region
        return 0.0, x
    # a lower bound parl for the zero of φ(λ) = ‖D·x(λ)‖ − Δ (from the Newton step) ...
    parl = 0.0
    if nsing == n:
        wa1 = [diag[k] * (wa2[k] / dxnorm) for k in ipvt]
        for j in range(n):
            wa1[j] = (wa1[j] - _dot(r[j][:j], wa1[:j])) / r[j][j]
        temp = enorm(wa1)
        parl = ((fp / delta) / temp) / temp
    # ... and an upper bound paru
    wa1 = [_dot(r[j][: j + 1], qtb[: j + 1]) / diag[ipvt[j]] for j in range(n)]
    gnorm = enorm(wa1)
    paru = gnorm / delta
    if paru == 0.0:
        paru = DWARF / min(delta, 0.1)
    par = min(max(par, parl), paru)
    if par == 0.0:
        par = gnorm / dxnorm
    while True:
        iteration += 1
        if par == 0.0:
            par = max(DWARF, 0.001 * paru)
        root = math.sqrt(par)
        x, sdiag = qrsolv(r, ipvt, [root * d for d in diag], qtb)
        wa2 = [d * v for d, v in zip(diag, x)]
        dxnorm = enorm(wa2)
        temp = fp
        fp = dxnorm - delta
        if abs(fp) <= 0.1 * delta or (parl == 0.0 and fp <= temp < 0.0) or iteration == 10:
            return par, x
        # the Newton correction
        wa1 = [diag[k] * (wa2[k] / dxnorm) for k in ipvt]
        for j in range(n):
            wa1[j] /= sdiag[j]
            temp = wa1[j]
            column = r[j]
            for i in range(j + 1, n):
                wa1[i] -= column[i] * temp
        temp = enorm(wa1)
        parc = ((fp / delta) / temp) / temp
        if fp > 0.0:
            parl = max(parl, par)
        if fp < 0.0:
            paru = min(paru, par)
        par = max(parl, par + parc)
