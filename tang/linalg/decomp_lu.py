"""LU factorisation by Gaussian elimination with partial pivoting, and the triangular solves
that use it: the one elimination that ``solve``, ``inv`` and ``det`` share.

Pivots are chosen on values (the largest magnitude in the column), so Duals follow the
float path and carry exact derivatives through the factors. Traced input has no values:
it is eliminated in the natural row order, or in the order given as ``pivots`` (a row
permutation, e.g. ``lu_factor(A_at_some_point).perm``), and that order is fixed in the
graph: where a pivot of that order vanishes the graph evaluates to inf/nan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ._matrix import (
    FLOAT,
    TRACED,
    Matrix,
    as_matrix,
    as_right_hand_side,
    check_permutation,
    dot,
    is_zero,
    magnitude,
    transpose,
)
from .errors import LinAlgError


class LUFactorization(NamedTuple):
    """P·A = L·U packed: ``lu`` holds U on and above the diagonal and L's multipliers below
    it (L's unit diagonal is implied); row i of L·U is row ``perm[i]`` of A."""

    lu: Matrix
    perm: list[int]


def eliminate(
    rows: Matrix, ncols: int, kind: str, pivots: Sequence[int] | None = None
) -> tuple[list[int], int, int]:
    """Gaussian elimination in place on the first ``ncols`` columns of ``rows`` (further
    columns ride along: right-hand sides). Rows are reordered by partial pivoting (for
    traced input: kept in order) or into the given ``pivots`` order, and each eliminated
    entry is overwritten by its multiplier. Returns (perm, swaps, first zero pivot or -1):
    row i now is original row perm[i]; swaps' parity is the permutation's sign."""
    m = len(rows)
    if pivots is not None:
        perm = check_permutation(pivots, m)
        rows[:] = [rows[i] for i in perm]
        return perm, _parity(perm), _eliminate_in_order(rows, ncols, kind, True)
    if kind == TRACED:
        return list(range(m)), 0, _eliminate_in_order(rows, ncols, kind, False)
    perm = list(range(m))
    swaps = 0
    singular = -1
    key = abs if kind == FLOAT else magnitude
    for k in range(min(ncols, m)):
        column = [key(row[k]) for row in rows[k:]]
        biggest = max(column)
        if biggest == 0:  # nothing to eliminate: the column is zero from here down
            if singular < 0:
                singular = k
            for i in range(k + 1, m):
                rows[i][k] = 0.0
            continue
        p = column.index(biggest) + k
        if p != k:
            rows[k], rows[p] = rows[p], rows[k]
            perm[k], perm[p] = perm[p], perm[k]
            swaps += 1
        top = rows[k]
        pivot = top[k]
        tail = top[k + 1 :]
        for row in rows[k + 1 :]:
            f = row[k] / pivot
            row[k] = f
            if f.__class__ is not float or f != 0.0:  # skip an exact float 0 only
                row[k + 1 :] = [a - f * b for a, b in zip(row[k + 1 :], tail)]
    return perm, swaps, singular


def _eliminate_in_order(rows: Matrix, ncols: int, kind: str, check: bool) -> int:
    """Elimination without row exchanges; returns the first zero pivot (-1: none). With
    values (``check`` and not traced), a zero pivot above a nonzero entry is an error."""
    m = len(rows)
    singular = -1
    valued = kind != TRACED
    for k in range(min(ncols, m)):
        top = rows[k]
        pivot = top[k]
        if valued and is_zero(pivot):
            if any(not is_zero(rows[i][k]) for i in range(k + 1, m)):
                raise LinAlgError(
                    f"pivot {k} is zero in the given pivot order, but the column below it is "
                    "not: choose another order (or pivots=None for partial pivoting)"
                )
            if singular < 0:
                singular = k
            for i in range(k + 1, m):
                rows[i][k] = 0.0
            continue
        tail = top[k + 1 :]
        for row in rows[k + 1 :]:
            f = row[k] / pivot
            row[k] = f
            row[k + 1 :] = [a - f * b for a, b in zip(row[k + 1 :], tail)]
    return singular


def _parity(perm: Sequence[int]) -> int:
    """The number of transpositions (mod 2) that make up the permutation."""
    seen = [False] * len(perm)
    swaps = 0
    for start in range(len(perm)):
        length = 0
        i = start
        while not seen[i]:
            seen[i] = True
            i = perm[i]
            length += 1
        if length:
            swaps += length - 1
    return swaps % 2


def lu_factor(A: Any, pivots: Sequence[int] | None = None) -> LUFactorization:
    """P·A = L·U with partial pivoting, packed as (lu, perm) for ``lu_solve`` (any m×n A).
    ``pivots``: a row order to use instead of pivoting (how traced input is pivoted)."""
    rows, kind = as_matrix(A, exact=True)
    perm, _, _ = eliminate(rows, len(rows[0]), kind, pivots)
    return LUFactorization(rows, perm)


def lu(A: Any, pivots: Sequence[int] | None = None) -> tuple[Matrix, Matrix, Matrix]:
    """(P, L, U) with A = P·L·U, like ``scipy.linalg.lu``: for m×n A, P is m×m, L is m×k
    unit lower triangular and U is k×n upper triangular, k = min(m, n)."""
    packed, perm = lu_factor(A, pivots)
    m, n = len(packed), len(packed[0])
    k = min(m, n)
    P = [[0.0] * m for _ in range(m)]
    for i, p in enumerate(perm):
        P[p][i] = 1.0
    L = [
        [*row[: min(i, k)], *([1.0] if i < k else []), *([0.0] * (k - i - 1))]
        for i, row in enumerate(packed)
    ]
    U = [[0.0] * i + row[i:] for i, row in enumerate(packed[:k])]
    return P, L, U


def back_substitute(rows: Matrix, y: list[Any], n: int) -> list[Any]:
    """x with U·x = y, where U is the upper triangle of the first n columns of ``rows``."""
    x: list[Any] = [0.0] * n
    for i in range(n - 1, -1, -1):
        row = rows[i]
        x[i] = (y[i] - dot(row[i + 1 : n], x[i + 1 :])) / row[i]
    return x


def forward_substitute(rows: Matrix, b: list[Any], n: int) -> list[Any]:
    """y with L·y = b, where L is unit lower triangular below the diagonal of ``rows``."""
    y: list[Any] = [0.0] * n
    for i in range(n):
        y[i] = b[i] - dot(rows[i][:i], y[:i])
    return y


def check_nonsingular(rows: Matrix, n: int, kind: str, singular: int, name: str = "A") -> None:
    """Raise the singular-matrix error when elimination found a zero pivot."""
    if singular < 0 and kind != TRACED:
        singular = next((i for i in range(n) if is_zero(rows[i][i])), -1)
    if singular >= 0:
        raise LinAlgError(
            f"{name} is singular: elimination found no nonzero pivot in column {singular}"
        )


def lu_solve(factors: tuple[Matrix, Sequence[int]], b: Any) -> Any:
    """x with A·x = b from ``lu_factor(A)``'s result (b a vector, or a matrix of rows)."""
    packed, perm = factors
    n = len(packed)
    if n != len(packed[0]):
        raise LinAlgError(
            f"lu_solve needs the factors of a square matrix, not {n}×{len(packed[0])}"
        )
    cols, _, is_vector = as_right_hand_side(b, n)
    check_nonsingular(packed, n, as_matrix(packed, exact=True)[1], -1)
    xs = [
        back_substitute(packed, forward_substitute(packed, [c[p] for p in perm], n), n)
        for c in cols
    ]
    return xs[0] if is_vector else transpose(xs)
