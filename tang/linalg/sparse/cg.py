"""Preconditioned conjugate gradients for symmetric positive definite A, over any number type.

Every decision (stop, breakdown) is taken on float values. Duals in A or b are solved by
implicit differentiation (``split``): CG on the values, then one CG per tangent
direction for dx = A⁻¹(db − dA·x), each to the same relative tolerance. (Running CG on the
Duals themselves would also give slopes, but they lag the values, can stall when the values
converge exactly, and cost several times more.) Traced nodes have no values: the iteration
count is then fixed in advance (``maxiter``) and nothing is checked.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import LinAlgError
from .csr import CSR, asymmetry
from .entries import Number, dot, real_value, value_norm, vector
from .precond import Preconditioner, ic0, jacobi
from .split import implicit_solve, outer_class, split, value_part


@dataclass
class CGResult:
    """``cg``'s answer: the solution ``x``, how many iterations it took, the true residual
    ‖b − A·x‖ (of the values), whether it met the tolerance, and a sentence saying why it
    stopped."""

    x: list[Number]
    iterations: int
    residual_norm: float
    converged: bool
    message: str


def cg(
    a: Any,
    b: Sequence[Number],
    x0: Sequence[Number] | None = None,
    *,
    rtol: float = 1e-10,
    atol: float = 0.0,
    maxiter: int | None = None,
    preconditioner: str | Preconditioner | None = "jacobi",
) -> CGResult:
    """Solve A·x = b for SPD A (a CSR, or any object with ``matvec`` or ``@`` and a square
    ``shape``) until ‖b − A·x‖ ≤ max(rtol·‖b‖, atol). ``preconditioner``: None, "jacobi",
    "ic0" (needs a CSR) or a callable r ↦ M⁻¹r. Raises LinAlgError for a non-square,
    non-symmetric (CSR) or detected indefinite A; an unmet tolerance is reported in the
    result (``converged`` False), not raised."""
    if isinstance(a, (list, tuple)):
        a = CSR.from_dense(a)
    matvec, n = _operator(a)
    b = vector(b, n, "b")
    x0 = None if x0 is None else vector(x0, n, "x0")
    _check_options(rtol, atol, maxiter)
    if isinstance(a, CSR) and (where := asymmetry(a, slopes=False)) is not None:
        i, j = where
        raise LinAlgError(
            f"CG needs a symmetric matrix: A[{i}, {j}] = {a[i, j]!r} but A[{j}, {i}] = {a[j, i]!r}"
        )
    precondition, note = _preconditioner(preconditioner, a, n)
    entries = a.data if isinstance(a, CSR) else matvec([1.0] * n)  # a probe finds Duals in A
    cls = outer_class(b, x0, entries)
    if cls is None:
        return _iterate(matvec, b, x0, rtol, atol, maxiter, precondition, note)

    runs: list[CGResult] = []

    def solve_values(rhs: list[Number]) -> list[Number]:
        guess = split(x0, cls)[0] if x0 is not None and not runs else None
        options = {"rtol": rtol, "atol": atol, "maxiter": maxiter}
        runs.append(cg(value_part(a, cls), rhs, guess, preconditioner=precondition, **options))
        return runs[-1].x

    x = implicit_solve(a, b, cls, solve_values)
    first, slopes = runs[0], runs[1:]
    lagging = [d for d, run in enumerate(slopes) if not run.converged]
    message = first.message + (
        f"; slopes: {len(slopes)} more solve(s) for A·dx = db − dA·x, "
        f"{'/'.join(str(run.iterations) for run in slopes)} iterations"
    )
    if lagging:
        message += f"; not converged in slope direction(s) {lagging}"
    converged = first.converged and not lagging
    return CGResult(x, first.iterations, first.residual_norm, converged, message + note)


def _iterate(
    matvec: Callable[[list[Number]], list[Number]],
    b: list[Number],
    x0: list[Number] | None,
    rtol: float,
    atol: float,
    maxiter: int | None,
    precondition: Preconditioner | None,
    note: str,
) -> CGResult:
    """The CG iteration itself, on floats (or traced nodes: then exactly ``maxiter`` steps)."""
    n = len(b)
    x = [0.0] * n if x0 is None else x0
    r = b if x0 is None else list(map(operator.sub, b, matvec(x)))
    values = [real_value(v) for v in r]
    traced = any(v is None for v in values)
    if not traced and not all(map(math.isfinite, values)):
        raise ValueError("b (or b − A·x0) has a non-finite entry")
    if traced and maxiter is None:
        raise ValueError(_NEEDS_MAXITER)
    limit = 10 * n if maxiter is None else maxiter
    tol = max(rtol * value_norm(b), atol)
    if not traced and tol == 0.0 and value_norm(b) == 0.0:
        return _result([0.0] * n, 0, 0.0, 0.0, note)  # b = 0: x = 0, exactly

    z = r if precondition is None else precondition(r)
    p = list(z)
    rz = dot(r, z)
    best = math.inf  # the true residual at the last claimed convergence
    k = 0
    while True:
        if not traced:
            rnorm = math.sqrt(max(real_value(rz if precondition is None else dot(r, r)), 0.0))
            if rnorm <= tol:  # the recursive residual says so: check the true one
                r = list(map(operator.sub, b, matvec(x)))
                true_norm = value_norm(r)
                if true_norm <= tol or not true_norm < best / 2:
                    return _result(x, k, true_norm, tol, note)
                best = true_norm  # rounding drift: restart from the true residual
                z = r if precondition is None else precondition(r)
                p, rz = list(z), dot(r, z)
        if k >= limit:
            break
        ap = matvec(p)
        pap = dot(p, ap)
        curvature = real_value(pap)
        if curvature is None and not traced:
            if maxiter is None:
                raise ValueError(_NEEDS_MAXITER)
            traced = True
        if not traced and math.isnan(curvature):
            raise ValueError(f"pᵀAp is nan at iteration {k}: A has a non-finite entry?")
        if not traced and not curvature > 0.0:
            raise LinAlgError(
                f"A is not positive definite: pᵀAp = {curvature:.6g} ≤ 0 at iteration {k}"
            )
        alpha = rz / pap
        x = [xi + alpha * pi for xi, pi in zip(x, p)]
        r = [ri - alpha * api for ri, api in zip(r, ap)]
        z = r if precondition is None else precondition(r)
        rz_next = dot(r, z)
        if not traced and real_value(rz_next) < 0.0:
            v = real_value(rz_next)
            raise LinAlgError(f"the preconditioner is not positive definite: rᵀM⁻¹r = {v:.6g}")
        beta = rz_next / rz
        p = [zi + beta * pi for zi, pi in zip(z, p)]
        rz = rz_next
        k += 1
    if traced:
        message = f"traced: ran maxiter = {k} iterations without a convergence test"
        return CGResult(x, k, math.nan, False, message + note)
    return _result(x, k, value_norm(map(operator.sub, b, matvec(x))), tol, note)


_NEEDS_MAXITER = (
    "traced entries have no values to test convergence on: pass maxiter (the number of "
    "iterations is then fixed when tracing)"
)


def _result(x: list[Number], k: int, norm: float, tol: float, note: str) -> CGResult:
    if norm <= tol:
        message = f"converged in {k} iterations: ‖b − Ax‖ = {norm:.3g} ≤ {tol:.3g}"
    else:
        message = f"not converged after {k} iterations: ‖b − Ax‖ = {norm:.3g} > {tol:.3g}"
    return CGResult(x, k, norm, norm <= tol, message + note)


def _operator(a: Any) -> tuple[Callable[[list[Number]], list[Number]], int]:
    """(A·v, n) for a CSR or a matrix-like object; LinAlgError when it is not square."""
    if isinstance(a, CSR):
        return a.matvec, a.shape[0] if a.shape[0] == a.shape[1] else _not_square(a.shape)
    if hasattr(a, "matvec"):
        matvec = a.matvec
    elif hasattr(a, "__matmul__"):
        matvec = a.__matmul__
    else:
        raise TypeError(f"A must be a CSR or have matvec / @, not {type(a).__name__}")
    shape = getattr(a, "shape", None)
    if shape is None:
        raise TypeError("A needs a shape (rows, cols) to check b against")
    m, n = shape
    if m != n:
        _not_square(shape)
    return (lambda v: list(matvec(v))), n


def _not_square(shape: Any) -> int:
    raise LinAlgError(f"CG needs a square matrix, got shape {tuple(shape)}")


def _check_options(rtol: float, atol: float, maxiter: int | None) -> None:
    if not rtol >= 0.0 or not atol >= 0.0:
        raise ValueError(f"rtol and atol must be non-negative numbers, got {rtol!r}, {atol!r}")
    if maxiter is not None and (not isinstance(maxiter, int) or maxiter < 0):
        raise ValueError(f"maxiter must be a non-negative integer, got {maxiter!r}")


def _preconditioner(kind: Any, a: Any, n: int) -> tuple[Preconditioner | None, str]:
    """The preconditioner function for ``kind`` and a note for the result's message."""
    if kind is None:
        return None, ""
    if callable(kind):
        return _checked(kind, n), ""
    if kind == "jacobi":
        if isinstance(a, CSR):
            return jacobi(a.diagonal()), ""
        if hasattr(a, "diagonal"):
            return jacobi(list(a.diagonal())), ""
        return None, " (A has no diagonal(): ran without the Jacobi preconditioner)"
    if kind == "ic0":
        if not isinstance(a, CSR):
            raise TypeError("the ic0 preconditioner needs A as a CSR matrix")
        apply, shift = ic0(a)
        return apply, (f" (IC(0) with the diagonal scaled by {1 + shift:g})" if shift else "")
    raise ValueError(f"unknown preconditioner {kind!r}: use None, 'jacobi', 'ic0' or a callable")


def _checked(apply: Callable[[list[Number]], Any], n: int) -> Preconditioner:
    """A user's preconditioner, with its output length checked."""

    def run(r: list[Number]) -> list[Number]:
        return vector(apply(r), n, "the preconditioner's output")

    return run
