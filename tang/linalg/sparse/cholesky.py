"""Sparse Cholesky P·A·Pᵀ = L·Lᵀ for symmetric positive definite A, over any number type.

Three phases, as in CSparse's ``cs_chol`` (Davis, *Direct Methods for Sparse Linear Systems*):
1. order: a fill-reducing permutation P (``ordering``: AMD, RCM or natural);
2. symbolic: the elimination tree of C = P·A·Pᵀ, then each row's pattern in L (the tree
   paths from the row's nonzeros up to the diagonal) and so every column's count;
3. numeric, up-looking: row k of L solves L[:k, :k]·l = C[:k, k] over that pattern only,
   then L[k, k] = √(C[k, k] − l·l).

Work is proportional to the flops of the factor, so a few thousand unknowns factor in
seconds of pure Python. Duals flow through (a Dual matrix gives the factor's slopes), and so
do traced nodes (the pivot check is then skipped: a node has no value while tracing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import scalar as S
from ..errors import LinAlgError
from .csr import CSR, asymmetry
from .entries import Number, real_value, vector
from .ordering import ordering as fill_ordering
from .split import implicit_solve, outer_class, value_part
from .triangular import solve_lower, solve_upper


class CholeskyFactor:
    """P·A·Pᵀ = L·Lᵀ with C[i, j] = A[perm[i], perm[j]]: ``L`` (CSR, lower), ``perm``, the
    fill ``nnz`` = nnz(L), ``parent`` (the elimination tree) and ``solve``."""

    __slots__ = ("L", "ordering", "parent", "perm", "upper")

    def __init__(self, lower: CSR, upper: CSR, perm: list[int], parent: list[int], how: str):
        self.L = lower
        self.upper = upper  # Lᵀ: rows start with the diagonal
        self.perm = perm
        self.parent = parent
        self.ordering = how

    @property
    def nnz(self) -> int:
        """Entries of L, the diagonal included: the fill the ordering left."""
        return self.L.nnz

    def solve(self, b: Sequence[Number]) -> list[Number]:
        """x with A·x = b: permute, L·y = P·b, Lᵀ·z = y, un-permute."""
        n, perm = len(self.perm), self.perm
        b = vector(b, n, "b")
        z = solve_upper(self.upper, solve_lower(self.L, [b[p] for p in perm]))
        x: list[Number] = [0.0] * n
        for k, p in enumerate(perm):
            x[p] = z[k]
        return x

    def logdet(self) -> Number:
        """log det A = 2 Σ log L[k, k] (a Gaussian's normaliser, without overflow)."""
        total: Number = 0.0
        for k in range(len(self.perm)):
            total = total + S.log(self.upper.data[self.upper.indptr[k]])
        return 2.0 * total

    def __repr__(self) -> str:
        return f"CholeskyFactor(n={len(self.perm)}, nnz={self.nnz}, ordering={self.ordering!r})"


def cholesky(
    a: CSR | Sequence[Sequence[Number]], ordering: str | Sequence[int] = "amd"
) -> CholeskyFactor:
    """Factor the symmetric positive definite ``a``: ``ordering`` is "amd" (approximate
    minimum degree), "rcm" (reverse Cuthill–McKee), "natural" or an explicit permutation.
    Raises LinAlgError for a non-square, non-symmetric or not positive definite matrix."""
    a = _square_symmetric(a)
    perm = fill_ordering(a, ordering)
    how = ordering if isinstance(ordering, str) else "given"
    rows = permuted_lower(a, perm)
    parent = elimination_tree(rows)
    patterns, counts = row_patterns(rows, parent)
    starts, idx, vals = _numeric(rows, patterns, counts, perm, how)
    n = len(perm)
    upper = CSR(vals, idx, starts, (n, n), check=False)
    return CholeskyFactor(upper.transpose(), upper, perm, parent, how)


def spsolve(
    a: CSR | Sequence[Sequence[Number]], b: Sequence[Number], ordering: str = "amd"
) -> list[Number]:
    """x with A·x = b for symmetric positive definite A, by a sparse Cholesky factor. With
    Duals in A or b, the values' factor is reused for the slopes (``split``)."""
    a = _square_symmetric(a)
    b = vector(b, a.shape[0], "b")
    cls = outer_class(a.data, b)
    if cls is None:
        return cholesky(a, ordering).solve(b)
    return implicit_solve(a, b, cls, cholesky(value_part(a, cls), ordering).solve)


def _square_symmetric(a: Any) -> CSR:
    if not isinstance(a, CSR):
        if isinstance(a, (list, tuple)):
            a = CSR.from_dense(a)
        else:
            raise TypeError(f"cholesky takes a CSR or a list of rows, not {type(a).__name__}")
    if a.shape[0] != a.shape[1]:
        raise LinAlgError(f"Cholesky needs a square matrix, got shape {a.shape}")
    where = asymmetry(a, slopes=True)
    if where is not None:
        i, j = where
        raise LinAlgError(
            f"matrix is not symmetric: A[{i}, {j}] = {a[i, j]!r} but A[{j}, {i}] = {a[j, i]!r}"
        )
    return a


def permuted_lower(a: CSR, perm: list[int]) -> list[tuple[list[int], list[Number]]]:
    """Row k of the lower triangle of C = P·A·Pᵀ (diagonal included) as sorted (cols, vals)."""
    where = [0] * len(perm)
    for k, p in enumerate(perm):
        where[p] = k
    rows = []
    for k, p in enumerate(perm):
        entries = sorted(
            ((where[j], v) for j, v in zip(*a.row(p)) if where[j] <= k), key=lambda t: t[0]
        )
        rows.append(([j for j, _ in entries], [v for _, v in entries]))
    return rows


def elimination_tree(rows: list[tuple[list[int], list[Number]]]) -> list[int]:
    """parent[j] of each column in the elimination tree (-1 at a root), from the lower
    rows, with path compression through ``ancestor`` (Liu's algorithm)."""
    n = len(rows)
    parent, ancestor = [-1] * n, [-1] * n
    for k, (cols, _) in enumerate(rows):
        for i in cols:
            while i != -1 and i < k:
                nxt = ancestor[i]
                ancestor[i] = k
                if nxt == -1:
                    parent[i] = k
                i = nxt
    return parent


def row_patterns(
    rows: list[tuple[list[int], list[Number]]], parent: list[int]
) -> tuple[list[list[int]], list[int]]:
    """Each row's off-diagonal pattern in L, ordered so a column comes before its tree
    ancestors (the numeric phase needs that), and each column's entry count."""
    n = len(rows)
    mark = [-1] * n
    counts = [1] * n  # the diagonal
    patterns = []
    for k, (cols, _) in enumerate(rows):
        mark[k] = k
        chunks = []
        for j in cols:
            path = []
            while mark[j] != k:  # climb the tree until a node already on this row's list
                path.append(j)
                mark[j] = k
                j = parent[j]
            if path:
                chunks.append(path)
        pattern = [j for path in reversed(chunks) for j in path]
        for j in pattern:
            counts[j] += 1
        patterns.append(pattern)
    return patterns, counts


def _numeric(
    rows: list[tuple[list[int], list[Number]]],
    patterns: list[list[int]],
    counts: list[int],
    perm: list[int],
    how: str,
) -> tuple[list[int], list[int], list[Number]]:
    """Up-looking numeric factorisation into column storage of L (= row storage of Lᵀ):
    column j's entries at starts[j]:starts[j+1], the diagonal first."""
    n = len(rows)
    starts = [0] * (n + 1)
    for j in range(n):
        starts[j + 1] = starts[j] + counts[j]
    fill = starts[:-1]  # the next free slot of each column
    idx = [0] * starts[n]
    vals: list[Number] = [0.0] * starts[n]
    x: list[Number] = [0.0] * n  # row k of C scattered, then updated in place
    for k in range(n):
        cols, entries = rows[k]
        for j, v in zip(cols, entries):
            x[j] = v
        d = x[k]
        x[k] = 0.0
        for i in patterns[k]:
            s, e = starts[i], fill[i]
            lki = x[i] / vals[s]  # L[k, i] = x[i] / L[i, i]
            x[i] = 0.0
            if e > s + 1:
                for r, lri in zip(idx[s + 1 : e], vals[s + 1 : e]):
                    x[r] -= lri * lki
            d = d - lki * lki
            idx[e] = k
            vals[e] = lki
            fill[i] = e + 1
        dv = real_value(d)
        if dv is not None and not dv > 0.0:
            raise LinAlgError(
                f"matrix is not positive definite: the pivot of column {perm[k]} is {dv:.6g} "
                f"(step {k} of the {how} ordering)"
            )
        e = fill[k]
        idx[e] = k
        vals[e] = S.sqrt(d)
        fill[k] = e + 1
    return starts, idx, vals
