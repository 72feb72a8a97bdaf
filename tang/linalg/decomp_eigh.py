"""Eigenvalues and eigenvectors of a symmetric matrix by the cyclic Jacobi method.

Why Jacobi: it is accurate (small eigenvalues to high relative accuracy for graded and
definite matrices), short, and each step is a smooth function of the matrix, so on Duals
its iterates carry the derivative: the eigenvalues' tangents are right once the values
have converged (dλᵢ = vᵢᵀ·dA·vᵢ), and one more full sweep, whose rotations have angle zero
in value but not in tangent, moves the eigenvectors' tangents to theirs (for distinct
eigenvalues). Traced input runs a fixed number of sweeps with every rotation applied
branch-free, and a network of selects sorts the eigenvalues.
"""

from __future__ import annotations

import math
from typing import Any

from ._jacobi import (
    MAX_SWEEPS,
    check_sweeps,
    rotation,
    rotation_float,
    sort_with_vectors,
    sweeps_for,
)
from ._matrix import (
    EPS,
    FLOAT,
    TRACED,
    Matrix,
    as_matrix,
    identity,
    magnitude,
    scale_exponent,
    scaled,
    transpose,
    value_of,
)
from .errors import LinAlgError

SYMMETRY_TOLERANCE = 1e-10  # relative to the largest entry


def eigh(A: Any, sweeps: int | None = None) -> tuple[list[Any], Matrix]:
    """(w, V): the eigenvalues of symmetric A in ascending order and the orthonormal
    eigenvectors as the columns of V, so A·V[:, i] = w[i]·V[:, i] (like numpy.linalg.eigh).
    Only the lower triangle is read (A must be symmetric to 1e-10 of its largest entry,
    else ``LinAlgError``; traced input is not checked). ``sweeps``: run exactly this many
    Jacobi sweeps instead of iterating to convergence (default for traced input: 8 + n//10).
    """
    check_sweeps(sweeps)
    rows, kind = as_matrix(A, square=True)
    n = len(rows)
    if kind != TRACED:
        check_symmetric(rows, "A")
    exponent = scale_exponent(rows, kind)
    rows = scaled(rows, -exponent)
    a = [[rows[i][j] if j <= i else rows[j][i] for j in range(n)] for i in range(n)]
    vectors = identity(n)  # the columns of V, one list each
    fixed = sweeps_for(kind, sweeps, n)
    if fixed is not None:
        for _ in range(fixed):
            for p in range(n - 1):
                for q in range(p + 1, n):
                    _rotate(a, vectors, p, q, *rotation(a[p][p], a[q][q], a[p][q]))
    else:
        _converge(a, vectors, n, kind)
    values, vectors = sort_with_vectors([a[i][i] for i in range(n)], vectors, kind, False)
    return scaled([values], exponent)[0], transpose(vectors)


def _converge(a: Matrix, vectors: Matrix, n: int, kind: str) -> None:
    """Sweep until no rotation is needed (decided on values); then, for Duals, one more
    sweep with every rotation, to settle the eigenvectors' tangents."""
    frob = math.hypot(*(magnitude(x) for row in a for x in row))
    floor = EPS * EPS * frob  # off-diagonals below this change no eigenvalue
    size_of, turn = (abs, rotation_float) if kind == FLOAT else (magnitude, rotation)
    sqrt = math.sqrt
    for _ in range(MAX_SWEEPS):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = a[p][q]
                size = size_of(apq)
                if size <= floor:
                    continue
                app, aqq = a[p][p], a[q][q]
                if size <= EPS * sqrt(size_of(app)) * sqrt(size_of(aqq)):
                    continue
                _rotate(a, vectors, p, q, *turn(app, aqq, apq))
                rotated = True
        if not rotated:
            break
    else:
        raise LinAlgError(f"eigh did not converge in {MAX_SWEEPS} Jacobi sweeps")
    if kind != FLOAT:
        for p in range(n - 1):
            for q in range(p + 1, n):
                _rotate(a, vectors, p, q, *rotation(a[p][p], a[q][q], a[p][q]))


def _rotate(a: Matrix, vectors: Matrix, p: int, q: int, t: Any, c: Any, s: Any) -> None:
    """A ← JᵀAJ and V ← VJ for the rotation J in the (p, q) plane that zeroes a_pq."""
    row_p, row_q = a[p], a[q]
    apq = row_p[q]
    new_p = [c * x - s * y for x, y in zip(row_p, row_q)]
    new_q = [s * x + c * y for x, y in zip(row_p, row_q)]
    new_p[p] = row_p[p] - t * apq
    new_q[q] = row_q[q] + t * apq
    new_p[q] = new_q[p] = 0.0  # what the rotation makes it, exactly
    a[p], a[q] = new_p, new_q
    for row, x, y in zip(a, new_p, new_q):
        row[p] = x
        row[q] = y
    vp, vq = vectors[p], vectors[q]
    vectors[p] = [c * x - s * y for x, y in zip(vp, vq)]
    vectors[q] = [s * x + c * y for x, y in zip(vp, vq)]


def check_symmetric(rows: Matrix, name: str) -> None:
    """Raise ``LinAlgError`` naming the first pair of mirrored entries that differ by more
    than SYMMETRY_TOLERANCE times the largest entry (compared on values)."""
    n = len(rows)
    largest = max(magnitude(x) for row in rows for x in row)
    tolerance = SYMMETRY_TOLERANCE * largest
    for i in range(n):
        for j in range(i):
            if abs(value_of(rows[i][j]) - value_of(rows[j][i])) > tolerance:
                raise LinAlgError(
                    f"{name} is not symmetric: {name}[{i}][{j}] = {value_of(rows[i][j])!r} "
                    f"but {name}[{j}][{i}] = {value_of(rows[j][i])!r}"
                )
