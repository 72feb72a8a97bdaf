"""The determinant: the product of the LU pivots, or where elimination cannot be used (traced
input, an exactly singular matrix of Duals) Berkowitz's division-free algorithm, which uses
only +, - and × and so is exact on every number type at every point."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._matrix import FLOAT, TRACED, Matrix, as_matrix, dot
from .decomp_lu import eliminate


def det(A: Any, pivots: Sequence[int] | None = None) -> Any:
    """det(A) for square A. Floats and Duals: LU with partial pivoting (0.0 for an exactly
    singular float matrix; an exactly singular matrix of Duals goes through Berkowitz so its
    derivative, the adjugate's trace against dA, is still right). Traced: Berkowitz's
    algorithm, a graph valid at every point (O(n⁴) nodes), or with ``pivots`` the LU
    product in that fixed row order."""
    rows, kind = as_matrix(A, square=True, exact=True)
    n = len(rows)
    if kind == TRACED and pivots is None:
        return berkowitz_det(rows)
    original = None if kind == FLOAT else [row[:] for row in rows]
    _, swaps, singular = eliminate(rows, n, kind, pivots)
    if singular >= 0:
        return 0.0 if original is None else berkowitz_det(original)
    product = rows[0][0]
    for i in range(1, n):
        product = product * rows[i][i]
    return -product if swaps % 2 else product


def berkowitz_det(rows: Matrix) -> Any:
    """det of a square matrix by the Samuelson–Berkowitz algorithm: the characteristic
    polynomial det(λI - M) is built by Toeplitz products from the trailing 1×1 block up,
    and det M = (-1)ⁿ times its constant term."""
    n = len(rows)
    # det(λ - m) of the trailing 1×1 block; the int 1 keeps Fractions exact
    coefficients: list[Any] = [1, -rows[n - 1][n - 1]]
    for k in range(n - 2, -1, -1):
        size = n - k - 1  # the block below and right of (k, k), whose polynomial we hold
        block = [row[k + 1 :] for row in rows[k + 1 :]]
        above = rows[k][k + 1 :]
        v = [rows[i][k] for i in range(k + 1, n)]
        toeplitz = [-rows[k][k]]  # the Toeplitz column below its leading 1: -a, -R·C, -R·B·C, …
        for j in range(size):
            toeplitz.append(-dot(above, v))
            if j < size - 1:
                v = [dot(row, v) for row in block]
        longer = []
        for i in range(size + 2):
            acc = coefficients[i] if i <= size else 0
            for j in range(max(0, i - size - 1), min(i, size + 1)):
                acc = acc + toeplitz[i - j - 1] * coefficients[j]
            longer.append(acc)
        coefficients = longer
    return -coefficients[n] if n % 2 else coefficients[n]
