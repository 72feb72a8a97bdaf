"""Preconditioners for conjugate gradients: r ↦ M⁻¹r for an SPD M close to A.

They are built from A's float values (a Dual's slope is dropped): CG converges to A⁻¹b
whatever SPD M it uses, so M needs no derivative, and float arithmetic is cheaper.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from ... import scalar as S
from ..errors import LinAlgError
from .csr import CSR
from .entries import Number, real_value
from .triangular import solve_lower, solve_upper

Preconditioner = Callable[[list[Number]], list[Number]]

IC0_SHIFTS = (0.0, 1e-3, 1e-2, 1e-1, 1.0)  # diagonal shifts tried when IC(0) breaks down


def jacobi(diagonal: list[Number]) -> Preconditioner:
    """r ↦ r / diag(A); the diagonal must be positive (as in every SPD matrix)."""
    inverse: list[Number] = []
    for i, d in enumerate(diagonal):
        v = real_value(d)
        if v is None:  # a traced node: no value to check; divide symbolically
            inverse.append(S.recip(d))
        elif not v > 0.0:
            raise LinAlgError(
                f"Jacobi preconditioning needs a positive diagonal, but A[{i}, {i}] = {v:.6g} "
                "(so A is not positive definite)"
            )
        else:
            inverse.append(1.0 / v)

    def apply(r: list[Number]) -> list[Number]:
        return list(map(operator.mul, r, inverse))

    return apply


def ic0(a: CSR) -> tuple[Preconditioner, float]:
    """Zero-fill incomplete Cholesky: L with the pattern of tril(A) and (L·Lᵀ)[i, j] = A[i, j]
    there; r ↦ L⁻ᵀL⁻¹r. When a pivot goes non-positive (IC(0) can break down even for SPD
    A) the diagonal is scaled by 1 + shift for growing shifts (Manteuffel); returns the
    preconditioner and the shift used."""
    rows = _lower_values(a)
    for shift in IC0_SHIFTS:
        lower = _ic0_factor(rows, shift)
        if isinstance(lower, CSR):
            return _triangular_pair(lower), shift
    raise LinAlgError(
        f"IC(0) broke down at row {lower} even with the diagonal scaled by "
        f"{1 + IC0_SHIFTS[-1]}: A is probably not positive definite"
    )


def _triangular_pair(lower: CSR) -> Preconditioner:
    """r ↦ L⁻ᵀL⁻¹r."""
    upper = lower.transpose()
    return lambda r: solve_upper(upper, solve_lower(lower, r))


def _lower_values(a: CSR) -> list[tuple[list[int], list[float]]]:
    """tril(A) row by row as (cols, float values), checking each row ends on its diagonal."""
    rows = []
    for i in range(a.shape[0]):
        cols, vals = a.row(i)
        keep = [t for t, j in enumerate(cols) if j <= i]
        values = [real_value(vals[t]) for t in keep]
        if any(v is None for v in values):
            raise ValueError("the ic0 preconditioner needs numeric entries, not traced nodes")
        if not keep or cols[keep[-1]] != i or not values[-1] > 0.0:
            d = values[-1] if keep and cols[keep[-1]] == i else 0.0
            raise LinAlgError(f"A[{i}, {i}] = {d:.6g} is not positive: A is not positive definite")
        rows.append(([cols[t] for t in keep], values))
    return rows  # type: ignore[return-value]


def _ic0_factor(rows: list[tuple[list[int], list[float]]], shift: float) -> CSR | int:
    """L of IC(0) with diag(A) scaled by 1 + shift, or the row where a pivot failed."""
    n = len(rows)
    factor: list[tuple[list[int], list[float]]] = []
    for i, (cols, values) in enumerate(rows):
        vals = list(values)
        vals[-1] *= 1.0 + shift
        position = {c: t for t, c in enumerate(cols)}
        for t in range(len(cols) - 1):
            kcols, kvals = factor[cols[t]]
            s = vals[t]
            for q in range(len(kcols) - 1):  # row k of L left of its diagonal
                u = position.get(kcols[q])
                if u is not None:
                    s -= vals[u] * kvals[q]
            vals[t] = s / kvals[-1]
        d = vals[-1] - math.fsum(v * v for v in vals[:-1])
        if not d > 0.0:
            return i
        vals[-1] = math.sqrt(d)
        factor.append((cols, vals))
    data = [v for _, vals in factor for v in vals]
    indices = [j for cols, _ in factor for j in cols]
    indptr = [0]
    for cols, _ in factor:
        indptr.append(indptr[-1] + len(cols))
    return CSR(data, indices, indptr, (n, n), check=False)
