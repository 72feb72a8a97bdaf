"""Least squares with numpy.linalg.lstsq's semantics, through the SVD: the minimum-norm x
minimising ‖b - A·x‖, for over- and under-determined and rank-deficient A alike."""

from __future__ import annotations

from typing import Any

from ._matrix import EPS, TRACED, as_matrix, as_right_hand_side, dot, transpose, value_of
from .decomp_svd import svd_of_rows


def lstsq(A: Any, b: Any, rcond: float | None = None) -> tuple[Any, list[Any], int, list[Any]]:
    """(x, residuals, rank, s) like ``numpy.linalg.lstsq``: x = V·diag(1/sᵢ)·Uᵀ·b over the
    singular values above ``rcond``·max(s) (default ε·max(m, n); a negative rcond means ε);
    residuals lists ‖b - A·x‖² per column of b when rank = n < m, else it is empty. b is a
    vector or an m×k matrix of rows; x has the same form. Not traceable: the rank is decided
    on values (TypeError for traced input)."""
    rows, kind = as_matrix(A)
    m, n = len(rows), len(rows[0])
    cols, bkind, is_vector = as_right_hand_side(b, m)
    if TRACED in (kind, bkind):
        raise TypeError(
            "lstsq decides the rank on values, which traced input does not have; for a "
            "full-rank traced problem solve the normal equations or use qr"
        )
    if rcond is None:
        rcond = EPS * max(m, n)
    elif rcond < 0:
        rcond = EPS
    original = [row[:] for row in rows]
    U, s, Vt = svd_of_rows(rows, kind, False, None)
    cutoff = rcond * value_of(s[0])
    rank = sum(1 for sigma in s if value_of(sigma) > cutoff)
    u_columns = transpose(U)[:rank]
    v_columns = transpose(Vt[:rank])  # n lists: row j of V restricted to the rank
    xs = []
    for column in cols:
        y = [dot(u, column) / sigma for u, sigma in zip(u_columns, s)]
        xs.append([dot(v, y) for v in v_columns] if rank else [0.0] * n)
    residuals: list[Any] = []
    if rank == n < m:
        for column, x in zip(cols, xs):
            r = [bi - dot(row, x) for bi, row in zip(column, original)]
            residuals.append(dot(r, r))
    return (xs[0] if is_vector else transpose(xs)), residuals, rank, s
