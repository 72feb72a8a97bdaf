"""Reading matrix and vector arguments: any sequence of row sequences in, a fresh list of row
lists out, with the kind of number decided once for the whole matrix.

The kind picks the code path of every algorithm in tang.linalg:

- ``FLOAT``: every entry a plain float (ints and numpy scalars are converted): fast loops
  with ``math`` functions;
- ``VALUED``: some entry is a ``tang.Dual`` (or, where exact arithmetic makes sense, a
  ``Fraction``): the same loops over tang's number-generic math, with pivots and convergence
  decided on the entries' values;
- ``TRACED``: some entry is a traced graph node (or a Dual over one): there are no values,
  so nothing may branch on the data (each algorithm documents what it does instead).
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence
from itertools import chain
from typing import Any

from ..dual import Dual
from ..expr.graph import Node
from .errors import LinAlgError

EPS = 2.220446049250313e-16  # the float64 machine epsilon, 2⁻⁵²

FLOAT, VALUED, TRACED = "float", "valued", "traced"
Matrix = list[list[Any]]

# math.sumprod (3.12+) is about three times faster than the fallback and rounds better
dot = getattr(math, "sumprod", None) or (lambda a, b: sum(map(operator.mul, a, b)))

_RANK = {FLOAT: 0, VALUED: 1, TRACED: 2}


def value_of(x: Any) -> Any:
    """The plain number under any Duals (a Dual's value, nested ones in turn)."""
    while isinstance(x, Dual):
        x = x.value
    return x


def magnitude(x: Any) -> Any:
    """|x| of the value under any Duals: what pivot choices and convergence tests look at."""
    while isinstance(x, Dual):
        x = x.value
    return abs(x)


def is_zero(x: Any) -> bool:
    """Whether the value under any Duals is exactly zero (a Dual's tangent may still not be)."""
    while isinstance(x, Dual):
        x = x.value
    return x == 0


def as_matrix(
    A: Any, name: str = "A", *, square: bool = False, exact: bool = False
) -> tuple[Matrix, str]:
    """(rows, kind): ``A`` copied into a list of row lists of numbers, checked for shape
    (not empty, not ragged, square when asked) and for finite values. ``exact`` keeps
    ``Fraction`` entries exact (for the eliminations, which need no square roots)."""
    if isinstance(A, (str, bytes)) or not hasattr(A, "__iter__"):
        raise TypeError(f"{name} must be a sequence of rows, not {type(A).__name__}")
    source = list(A)
    try:
        rows = [list(row) for row in source]
    except TypeError:
        rows = []
    if len(rows) != len(source):
        _reject_rows(source, name)
    if not rows:
        raise LinAlgError(f"{name} is empty: it has no rows")
    n = len(rows[0])
    if n == 0:
        raise LinAlgError(f"{name} is empty: its rows have no entries")
    if len(set(map(len, rows))) != 1:
        i, row = next((i, row) for i, row in enumerate(rows) if len(row) != n)
        raise LinAlgError(
            f"{name} has ragged rows: row 0 has {n} entries but row {i} has {len(row)}"
        )
    if square and len(rows) != n:
        raise LinAlgError(f"{name} must be square, but it is {len(rows)}×{n}")
    if set(map(type, chain.from_iterable(rows))) == {float}:  # the fast path
        if not math.isfinite(sum(map(sum, rows))):  # finite sum: every entry is finite
            _check_finite(rows, name)
        return rows, FLOAT
    if any(isinstance(row, (str, bytes)) for row in source):
        _reject_rows(source, name)
    return _numbers(rows, name, exact)


def _reject_rows(source: list[Any], name: str) -> None:
    """Raise the error for the first item of ``source`` that is not a row of numbers."""
    for i, row in enumerate(source):
        if isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
            raise TypeError(
                f"row {i} of {name} is {type(row).__name__}, not a sequence of numbers "
                "(a matrix is a sequence of rows)"
            )
    raise TypeError(f"the rows of {name} could not be read as sequences")  # pragma: no cover


def _numbers(rows: Matrix, name: str, exact: bool) -> tuple[Matrix, str]:
    """Check and convert the entries in place; return the rows and their kind."""
    if set(map(type, chain.from_iterable(rows))) == {float}:
        if not math.isfinite(sum(map(sum, rows))):
            _check_finite(rows, name)
        return rows, FLOAT
    kind = FLOAT
    for i, row in enumerate(rows):
        for j, x in enumerate(row):
            if x.__class__ is float:
                continue
            x, k = _entry(x, name, i, j, exact)
            row[j] = x
            if _RANK[k] > _RANK[kind]:
                kind = k
    if kind != TRACED:
        _check_finite(rows, name)
    return rows, kind


def _entry(x: Any, name: str, i: int, j: int, exact: bool) -> tuple[Any, str]:
    """One entry converted, and its kind."""
    if isinstance(x, Dual):
        v = value_of(x)
        if isinstance(v, Node) and v.op != "const":
            return x, TRACED
        return x, VALUED
    if isinstance(x, Node):
        if x.op == "const":
            return float(x), FLOAT
        return x, TRACED
    if isinstance(x, numbers.Real):
        if exact and isinstance(x, numbers.Rational) and not isinstance(x, numbers.Integral):
            return x, VALUED  # a Fraction: eliminations stay exact
        try:
            return float(x), FLOAT
        except OverflowError:
            raise LinAlgError(f"entry ({i}, {j}) of {name} is too large for a float") from None
    if isinstance(x, numbers.Complex):
        raise TypeError(f"entry ({i}, {j}) of {name} is complex: tang.linalg is real only")
    raise TypeError(
        f"entry ({i}, {j}) of {name} is {type(x).__name__}, not a number "
        "(float, int, Fraction, tang.Dual or a traced value)"
    )


def _check_finite(rows: Matrix, name: str) -> None:
    for i, row in enumerate(rows):
        for j, x in enumerate(row):
            v = value_of(x)
            if isinstance(v, float) and not math.isfinite(v):
                raise LinAlgError(f"{name} has a non-finite entry {v} at ({i}, {j})")


def as_right_hand_side(b: Any, m: int, name: str = "b") -> tuple[Matrix, str, bool]:
    """(columns, kind, is_vector): ``b`` as a vector of m numbers or an m×k matrix given as
    rows (like numpy), returned as a list of k columns of length m."""
    if isinstance(b, (str, bytes)) or not hasattr(b, "__iter__"):
        raise TypeError(f"{name} must be a vector or a matrix of rows, not {type(b).__name__}")
    items = list(b)
    if not items:
        raise LinAlgError(f"{name} is empty")
    is_vector = not any(hasattr(x, "__iter__") and not isinstance(x, Dual) for x in items)
    if is_vector:
        if len(items) != m:
            raise LinAlgError(f"{name} has {len(items)} entries but A has {m} rows")
        cols, kind = _numbers([items], name, exact=True)
        return cols, kind, True
    rows, kind = as_matrix(items, name, exact=True)
    if len(rows) != m:
        raise LinAlgError(f"{name} has {len(rows)} rows but A has {m} rows")
    return transpose(rows), kind, False


def transpose(rows: Sequence[Sequence[Any]]) -> Matrix:
    """The transpose as a new list of lists."""
    return [list(col) for col in zip(*rows)]


def identity(n: int) -> Matrix:
    """The n×n identity matrix of floats."""
    rows = [[0.0] * n for _ in range(n)]
    for i in range(n):
        rows[i][i] = 1.0
    return rows


SAFE_EXPONENT = 200  # entries within 2**±200 square and sum without overflow or underflow


def scale_exponent(rows: Matrix, kind: str) -> int:
    """e such that rows·2⁻ᵉ has its largest entry in [0.5, 1), when that entry lies outside
    2**±SAFE_EXPONENT (else 0, as for traced input): the Jacobi methods square entries, and
    scaling by a power of two is exact."""
    if kind == TRACED:
        return 0
    if kind == FLOAT:
        largest = max(map(abs, chain.from_iterable(rows)))
    else:
        largest = max(map(magnitude, chain.from_iterable(rows)))
    if largest == 0 or 2.0**-SAFE_EXPONENT <= largest <= 2.0**SAFE_EXPONENT:
        return 0
    return math.frexp(largest)[1]


def scaled(rows: Matrix, exponent: int) -> Matrix:
    """rows·2^exponent (exact), or rows itself for exponent 0."""
    if exponent == 0:
        return rows
    factor = math.ldexp(1.0, exponent)
    return [[x * factor for x in row] for row in rows]


def check_permutation(pivots: Sequence[int], m: int) -> list[int]:
    """``pivots`` as a list, checked to be a permutation of range(m) (a row order)."""
    perm = list(pivots)
    if not all(isinstance(p, int) for p in perm) or sorted(perm) != list(range(m)):
        raise ValueError(f"pivots must be a permutation of 0..{m - 1} (a row order), not {perm}")
    return perm
