"""Square linear systems: ``solve`` (A·x = b) and ``inv``, by Gaussian elimination with
partial pivoting on the matrix augmented with the right-hand sides (one pass, no separate
forward substitution), then back substitution. Traced input: see ``tang.linalg.decomp_lu``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._matrix import Matrix, as_matrix, as_right_hand_side, transpose
from .decomp_lu import back_substitute, check_nonsingular, eliminate


def solve(A: Any, b: Any, pivots: Sequence[int] | None = None) -> Any:
    """x with A·x = b for square nonsingular A; b is a vector (x is one) or an n×k matrix
    given as rows (x is one too), like ``numpy.linalg.solve``. An exactly zero pivot raises
    ``LinAlgError`` ("A is singular"); ``pivots``: a fixed row order (for traced input)."""
    rows, kind = as_matrix(A, square=True, exact=True)
    n = len(rows)
    cols, _, is_vector = as_right_hand_side(b, n)  # pivots depend on A's kind alone
    if is_vector:
        column = cols[0]
        for row, bi in zip(rows, column):
            row.append(bi)
    else:
        for row, extra in zip(rows, transpose(cols)):
            row.extend(extra)
    return _solve_augmented(rows, n, kind, pivots, len(cols), is_vector)


def inv(A: Any, pivots: Sequence[int] | None = None) -> Matrix:
    """A⁻¹ for square nonsingular A (``LinAlgError`` "A is singular" on a zero pivot)."""
    rows, kind = as_matrix(A, square=True, exact=True)
    n = len(rows)
    for i, row in enumerate(rows):
        row.extend([0] * n)
        row[n + i] = 1  # ints: the float path turns them into floats, Fractions stay exact
    return _solve_augmented(rows, n, kind, pivots, n, False)


def _solve_augmented(
    rows: Matrix, n: int, kind: str, pivots: Sequence[int] | None, k: int, is_vector: bool
) -> Any:
    """Eliminate [A | B] and back-substitute each of B's k columns."""
    _, _, singular = eliminate(rows, n, kind, pivots)
    check_nonsingular(rows, n, kind, singular)
    if is_vector:
        return back_substitute(rows, [row[n] for row in rows], n)
    columns = [back_substitute(rows, [row[n + j] for row in rows], n) for j in range(k)]
    return transpose(columns)
