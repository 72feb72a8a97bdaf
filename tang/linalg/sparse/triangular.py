"""Triangular solves with a sparse factor, shared by the Cholesky solve and the IC(0)
preconditioner. Both run row by row as dot products over the stored entries."""

from __future__ import annotations

from .csr import CSR
from .entries import Number, dot


def solve_lower(lower: CSR, b: list[Number]) -> list[Number]:
    """y with L·y = b, for a lower-triangular L whose rows end with the diagonal."""
    data, indices, indptr = lower.data, lower.indices, lower.indptr
    y: list[Number] = []
    get = y.__getitem__
    for k in range(len(b)):
        s, e = indptr[k], indptr[k + 1] - 1  # entries left of the diagonal, then the diagonal
        if e > s:
            y.append((b[k] - dot(data[s:e], map(get, indices[s:e]))) / data[e])
        else:
            y.append(b[k] / data[e])
    return y


def solve_upper(upper: CSR, y: list[Number]) -> list[Number]:
    """z with U·z = y, for an upper-triangular U whose rows start with the diagonal."""
    data, indices, indptr = upper.data, upper.indices, upper.indptr
    n = len(y)
    z: list[Number] = [0.0] * n
    get = z.__getitem__
    for k in range(n - 1, -1, -1):
        s, e = indptr[k], indptr[k + 1]
        if e - s > 1:
            z[k] = (y[k] - dot(data[s + 1 : e], map(get, indices[s + 1 : e]))) / data[s]
        else:
            z[k] = y[k] / data[s]
    return z
