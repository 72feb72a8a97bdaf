"""Singular value decomposition by one-sided Jacobi (Hestenes' method).

Why one-sided Jacobi rather than Golub–Kahan bidiagonalisation: it computes small
singular values to high relative accuracy, it is a few dozen lines with one kind of step
(rotate two columns until they are orthogonal), and each step is a smooth function of the
matrix, so on Duals the singular values' tangents are right once the values have converged
(dσᵢ = uᵢᵀ·dA·vᵢ) and one more sweep settles the singular vectors' tangents (for distinct
singular values). Its cost in pure Python is four list comprehensions per rotation (two
columns of A·V, two of V), n(n-1)/2 rotations a sweep, 4 to 10 sweeps. Traced input runs a
fixed number of sweeps, branch-free, and its rank must be full.
"""

from __future__ import annotations

import math
from typing import Any

from .. import scalar as S
from ._jacobi import MAX_SWEEPS, check_sweeps, rotation, sort_with_vectors, sweeps_for
from ._matrix import (
    EPS,
    FLOAT,
    TRACED,
    Matrix,
    as_matrix,
    dot,
    identity,
    is_zero,
    scale_exponent,
    scaled,
    transpose,
    value_of,
)
from .decomp_qr import form_q, householder
from .errors import LinAlgError


def svd(
    A: Any, full_matrices: bool = False, sweeps: int | None = None
) -> tuple[Matrix, list[Any], Matrix]:
    """(U, S, Vt) with A = U·diag(S)·Vt and S descending (like numpy.linalg.svd, whose
    default is full_matrices=True: here it is False). For m×n A and k = min(m, n): U is m×k
    and Vt k×n, or m×m and n×n with ``full_matrices``. ``sweeps``: run exactly this many
    Jacobi sweeps instead of iterating to convergence (default for traced input: 8 + n//10;
    traced input must have full rank, else U's columns evaluate to nan)."""
    check_sweeps(sweeps)
    rows, kind = as_matrix(A)
    return svd_of_rows(rows, kind, full_matrices, sweeps)


def svd_of_rows(
    rows: Matrix, kind: str, full: bool, sweeps: int | None
) -> tuple[Matrix, list[Any], Matrix]:
    """``svd`` of a matrix already checked by ``as_matrix`` (its rows are consumed)."""
    m, n = len(rows), len(rows[0])
    exponent = scale_exponent(rows, kind)
    rows = scaled(rows, -exponent)
    if m >= n:
        u, s, v = tall_svd(transpose(rows), kind, sweeps, full)
        return transpose(u), scaled([s], exponent)[0], v
    u, s, v = tall_svd(rows, kind, sweeps, full)  # Aᵀ = U'·S·V'ᵀ: A = V'·S·U'ᵀ
    return transpose(v), scaled([s], exponent)[0], u


def tall_svd(
    columns: Matrix, kind: str, sweeps: int | None, full: bool
) -> tuple[Matrix, list[Any], Matrix]:
    """The SVD of the m×n matrix (m ≥ n) given by its n ``columns``, overwritten: the columns
    of U (n, or m when ``full``), the singular values, the columns of V."""
    n, m = len(columns), len(columns[0])
    v = identity(n)
    fixed = sweeps_for(kind, sweeps, n)
    if fixed is not None:
        for _ in range(fixed):
            _sweep_all(columns, v, n)
    else:
        _converge(columns, v, n, m, kind)
    if kind == FLOAT:
        sigma = [math.hypot(*c) for c in columns]
    else:
        sigma = [S.sqrt(dot(c, c)) for c in columns]
    sigma, both = sort_with_vectors(sigma, [c + w for c, w in zip(columns, v)], kind, True)
    columns, v = [b[:m] for b in both], [b[m:] for b in both]
    u: list[list[Any] | None] = []
    for column, size in zip(columns, sigma):
        if kind != TRACED and is_zero(size):
            u.append(None)  # no direction: completed below
        else:
            inverse = 1.0 / size
            u.append([x * inverse for x in column])
    if full or None in u:
        u = _complete(u, m, m if full else n, kind)
    return u, sigma, v  # type: ignore[return-value]


def _converge(columns: Matrix, v: Matrix, n: int, m: int, kind: str) -> None:
    """Rotate pairs of columns until every pair is orthogonal to √m·ε in cosine (decided
    on values); then, for Duals, one more sweep with every rotation."""
    if kind == FLOAT:
        _converge_float(columns, v, n, m)
        return
    tolerance = math.sqrt(m) * EPS
    for _ in range(MAX_SWEEPS):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                cp, cq = columns[p], columns[q]
                alpha, beta, gamma = dot(cp, cp), dot(cq, cq), dot(cp, cq)
                size = abs(value_of(gamma))
                if size <= tolerance * math.sqrt(value_of(alpha) * value_of(beta)):
                    continue
                _, c, s = rotation(alpha, beta, gamma)
                _rotate(columns, v, p, q, c, s)
                rotated = True
        if not rotated:
            break
    else:
        raise LinAlgError(f"svd did not converge in {MAX_SWEEPS} Jacobi sweeps")
    _sweep_all(columns, v, n)


def _converge_float(columns: Matrix, v: Matrix, n: int, m: int) -> None:
    """The float path of ``_converge``, inlined: squared column norms are updated by the
    rotation (‖a_p‖² - t·γ, ‖a_q‖² + t·γ) unless that cancels, and recomputed each sweep."""
    tolerance = math.sqrt(m) * EPS
    sqrt, hypot = math.sqrt, math.hypot
    for _ in range(MAX_SWEEPS):
        norms = [dot(c, c) for c in columns]
        rotated = False
        for p in range(n - 1):
            cp, vp, alpha = columns[p], v[p], norms[p]
            for q in range(p + 1, n):
                cq = columns[q]
                gamma = dot(cp, cq)
                beta = norms[q]
                if abs(gamma) <= tolerance * sqrt(alpha * beta):
                    continue
                h = beta - alpha
                t = 2.0 * gamma / (abs(h) + hypot(h, 2.0 * gamma))
                if h < 0.0:
                    t = -t
                c = 1.0 / sqrt(1.0 + t * t)
                s = t * c
                new_p = [c * x - s * y for x, y in zip(cp, cq)]
                columns[q] = cq = [s * x + c * y for x, y in zip(cp, cq)]
                columns[p] = cp = new_p
                vq = v[q]
                new_vp = [c * x - s * y for x, y in zip(vp, vq)]
                v[q] = [s * x + c * y for x, y in zip(vp, vq)]
                v[p] = vp = new_vp
                shift = t * gamma
                updated = beta + shift
                norms[q] = updated if updated >= 0.25 * beta else dot(cq, cq)
                updated = alpha - shift
                alpha = updated if updated >= 0.25 * alpha else dot(cp, cp)
                rotated = True
            norms[p] = alpha
        if not rotated:
            return
    raise LinAlgError(f"svd did not converge in {MAX_SWEEPS} Jacobi sweeps")


def _sweep_all(columns: Matrix, v: Matrix, n: int) -> None:
    """One sweep applying every rotation, branch-free (fixed sweeps; a Dual's last sweep)."""
    for p in range(n - 1):
        for q in range(p + 1, n):
            cp, cq = columns[p], columns[q]
            _, c, s = rotation(dot(cp, cp), dot(cq, cq), dot(cp, cq))
            _rotate(columns, v, p, q, c, s)


def _rotate(
    columns: Matrix, v: Matrix, p: int, q: int, c: Any, s: Any
) -> tuple[list[Any], list[Any]]:
    """Columns p and q of A·J and of V·J, for the rotation J in the (p, q) plane."""
    cp, cq = columns[p], columns[q]
    columns[p] = new_p = [c * x - s * y for x, y in zip(cp, cq)]
    columns[q] = new_q = [s * x + c * y for x, y in zip(cp, cq)]
    vp, vq = v[p], v[q]
    v[p] = [c * x - s * y for x, y in zip(vp, vq)]
    v[q] = [s * x + c * y for x, y in zip(vp, vq)]
    return new_p, new_q


def _complete(u: list[list[Any] | None], m: int, width: int, kind: str) -> Matrix:
    """Fill the missing columns (None) of ``u`` and add columns up to ``width``, orthonormal
    to the given ones: the trailing columns of Q in a complete QR of the given ones."""
    given = [list(c) for c in u if c is not None]
    it = iter(form_q(householder(given, kind), m, m)[len(given) :] if given else identity(m))
    filled = [c if c is not None else next(it) for c in u]
    filled.extend(next(it) for _ in range(width - len(filled)))
    return filled
