"""Cholesky factorisation A = L·Lᵀ of a symmetric positive definite matrix.

It needs no pivoting, so it traces as it is: traced input is neither checked for symmetry
nor for definiteness (a graph evaluated at an indefinite point gives nan).
"""

from __future__ import annotations

import math
from typing import Any

from .. import scalar as S
from ._matrix import FLOAT, TRACED, Matrix, as_matrix, dot, value_of
from .decomp_eigh import check_symmetric
from .errors import LinAlgError


def cholesky(A: Any) -> Matrix:
    """L, lower triangular with positive diagonal, with A = L·Lᵀ (like
    numpy.linalg.cholesky). Only the lower triangle is read, after A is checked to be
    symmetric (to 1e-10 of its largest entry) and found positive definite; either failing
    raises ``LinAlgError`` saying which."""
    rows, kind = as_matrix(A, square=True)
    n = len(rows)
    if kind != TRACED:
        check_symmetric(rows, "A")
    sqrt = math.sqrt if kind == FLOAT else S.sqrt
    L: Matrix = [[0.0] * n for _ in range(n)]
    for j in range(n):
        lj = L[j]
        head = lj[:j]
        d = rows[j][j] - dot(head, head)
        if kind != TRACED and not value_of(d) > 0.0:
            raise LinAlgError(
                f"A is not positive definite: the leading minor of order {j + 1} is not "
                "positive (a Cholesky pivot is ≤ 0)"
            )
        ljj = sqrt(d)
        lj[j] = ljj
        inverse = 1.0 / ljj
        for i in range(j + 1, n):
            li = L[i]
            li[j] = (rows[i][j] - dot(li[:j], head)) * inverse
    return L
