"""QR factorisation by Householder reflections, for any m×n matrix.

Each reflection maps the column x below the diagonal onto -sgn(x₀)·‖x‖·e₁; the sign is
chosen so that x₀ - α never cancels. On traced input the sign is a select
(``tang.where``), so the graph has no branch and is right at every point where no column
(below the diagonal) is entirely zero; at such a point it evaluates to nan. With values,
an entirely zero column is skipped (its reflection is the identity).
"""

from __future__ import annotations

import math
from typing import Any

from .. import scalar as S
from ._matrix import FLOAT, TRACED, Matrix, as_matrix, dot, is_zero, transpose

Reflector = tuple[int, list[Any], Any]  # (first row, v, β): H = I - β·v·vᵀ on rows k:


def qr(A: Any, mode: str = "reduced") -> tuple[Matrix, Matrix]:
    """(Q, R) with A = Q·R, Q orthonormal columns and R upper triangular. For m×n A and
    k = min(m, n): ``mode="reduced"`` gives Q m×k and R k×n, ``"complete"`` Q m×m and R m×n
    (like numpy.linalg.qr). R's diagonal may have either sign."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode must be 'reduced' or 'complete', not {mode!r}")
    rows, kind = as_matrix(A)
    m, n = len(rows), len(rows[0])
    columns = transpose(rows)
    reflectors = householder(columns, kind)
    q_columns = form_q(reflectors, m, m if mode == "complete" else min(m, n))
    height = m if mode == "complete" else min(m, n)
    R = [[columns[j][i] if j >= i else 0.0 for j in range(n)] for i in range(height)]
    return transpose(q_columns), R


def householder(columns: Matrix, kind: str) -> list[Reflector]:
    """Reduce the matrix given by its ``columns`` to upper triangular form in place; return
    the reflections used, first to last (H₀ first: Q = H₀·H₁·…)."""
    n = len(columns)
    m = len(columns[0])
    reflectors: list[Reflector] = []
    for k in range(min(m - 1, n)):
        x = columns[k][k:]
        if kind == FLOAT:
            norm = math.hypot(*x)
            if norm == 0.0:
                continue
            alpha = norm if x[0] < 0.0 else -norm
        else:
            norm = S.sqrt(dot(x, x))
            if kind != TRACED and is_zero(norm):
                continue
            alpha = S.where(S.lt(x[0], 0.0), norm, -norm)
        v = x
        v[0] = x[0] - alpha
        beta = -1.0 / (alpha * v[0])  # 2/vᵀv, as vᵀv = -2α·v₀ (no second dot product)
        for j in range(k + 1, n):
            column = columns[j]
            tail = column[k:]
            f = beta * dot(v, tail)
            column[k:] = [a - f * b for a, b in zip(tail, v)]
        columns[k][k:] = [alpha] + [0.0] * (m - k - 1)
        reflectors.append((k, v, beta))
    return reflectors


def form_q(reflectors: list[Reflector], m: int, width: int) -> Matrix:
    """The first ``width`` columns of Q = H₀·H₁·…, as column lists: the reflections applied
    to unit columns, the last one first; reflection k leaves unit columns j < k alone."""
    columns = [[0.0] * m for _ in range(width)]
    for j, column in enumerate(columns):
        column[j] = 1.0
    for k, v, beta in reversed(reflectors):
        for column in columns[k:]:
            tail = column[k:]
            f = beta * dot(v, tail)
            column[k:] = [a - f * b for a, b in zip(tail, v)]
    return columns


def apply_transpose(reflectors: list[Reflector], column: list[Any]) -> list[Any]:
    """Qᵀ·column (H_last·…·H₀·column), as a new list."""
    column = list(column)
    for k, v, beta in reflectors:
        tail = column[k:]
        f = beta * dot(v, tail)
        column[k:] = [a - f * b for a, b in zip(tail, v)]
    return column
