"""Solving A·x = b with Dual entries by implicit differentiation: split off the outermost ε,
A = A₀ + ε·A₁ and b = b₀ + ε·b₁, then

    x₀ = A₀⁻¹·b₀,    x₁ = A₀⁻¹·(b₁ − A₁·x₀)   (one solve per tangent direction),

the derivative of the exact solution, whatever solver is used. Faster than running the
solver on Duals (float arithmetic, and a direct solver factors A₀ once) and, for an iterative
solver, free of the lag of slopes behind values. A₀ and b₀ may hold lower-level Duals: the
solver recurses on them. A₁·x₀ is read off the slope of A·x₀, so matrix-free operators
split too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...dual import Dual, Tangents, level_class, level_of, parts, seed
from .csr import CSR
from .entries import Number


def outer_class(*things: Any) -> type[Dual] | None:
    """The Dual class of the outermost ε among ``things`` (lists are searched), or None."""
    level = level_of(*things)
    return None if level < 0 else level_class(level)


def value_part(a: Any, cls: type[Dual]) -> Any:
    """A₀: the operator without its ε part (a CSR stays a CSR)."""
    if isinstance(a, CSR):
        return CSR([parts(v, cls)[0] for v in a.data], a.indices, a.indptr, a.shape, check=False)
    return _ValuePart(a, cls)


class _ValuePart:
    """v ↦ the value part of A·v, for a matrix-free A."""

    def __init__(self, a: Any, cls: type[Dual]) -> None:
        self.a, self.cls, self.shape = a, cls, a.shape

    def matvec(self, v: list[Number]) -> list[Number]:
        product = self.a.matvec(v) if hasattr(self.a, "matvec") else self.a @ v
        return [parts(y, self.cls)[0] for y in product]

    def __getattr__(self, name: str) -> Any:
        if name == "diagonal" and hasattr(self.a, "diagonal"):
            return lambda: [parts(d, self.cls)[0] for d in self.a.diagonal()]
        raise AttributeError(name)


def split(xs: list[Number], cls: type[Dual]) -> tuple[list[Number], list[Any]]:
    """(values, tangents) of a vector along ``cls``'s ε; a constant's tangent is None."""
    pairs = [parts(x, cls) for x in xs]
    return [v for v, _ in pairs], [t for _, t in pairs]


def direction_count(*tangent_lists: list[Any]) -> int | None:
    """How many directions the tangents carry (a Tangents tuple each), or None for single
    tangents. Constants (None) and plain zeros fit either; mixing the two kinds is an error."""
    kinds: set[int | None] = set()
    for ts in tangent_lists:
        for t in ts:
            if isinstance(t, Tangents):
                kinds.add(len(t))
            elif t is not None and not _plain_zero(t):
                kinds.add(None)
    if len(kinds) > 1:
        raise ValueError("the Duals mix single tangents and Tangents of different lengths")
    return next(iter(kinds), None)


def _plain_zero(t: Any) -> bool:
    return isinstance(t, (int, float)) and t == 0


def along(tangents: list[Any], d: int | None) -> list[Number]:
    """Direction ``d`` of each tangent (the whole single tangent for None); 0.0 for a
    constant or a plain zero tangent."""
    if d is None:
        return [0.0 if t is None else t for t in tangents]
    return [t[d] if isinstance(t, Tangents) else 0.0 for t in tangents]


def implicit_solve(
    a: Any,
    b: list[Number],
    cls: type[Dual],
    solve_values: Callable[[list[Number]], list[Number]],
) -> list[Number]:
    """x = A⁻¹·b for Dual A or b, given ``solve_values`` (v ↦ A₀⁻¹·v)."""
    b0, b1 = split(b, cls)
    x0 = solve_values(b0)
    product = a.matvec(x0) if hasattr(a, "matvec") else a @ x0
    _, a1x0 = split(list(product), cls)  # A₁·x₀ is the slope of A·x₀
    count = direction_count(b1, a1x0)
    directions: list[int | None] = [None] if count is None else list(range(count))
    slopes = []
    for d in directions:
        rhs = [bi - ai for bi, ai in zip(along(b1, d), along(a1x0, d))]
        slopes.append(solve_values(rhs))
    if count is None:
        return [seed(cls, v, t) for v, t in zip(x0, slopes[0])]
    return [seed(cls, v, Tangents(ts)) for v, *ts in zip(x0, *slopes)]
