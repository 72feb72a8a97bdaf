"""Arithmetic mod q = 3329 on whole numbers, written once over any of tang's number types:
Python ints (the reference), traced graph nodes (the kernels) and so the tensor IR's
comprehension bodies. Every function is branch-free and division-free: reductions are
Barrett multiply-and-shift, selects are masks, so the same text is constant-time in C.

Every product stays below 2**53, so the float evaluators and the i64 kernels agree
exactly; the bounds are stated on each function and checked exhaustively in the tests.
"""

from __future__ import annotations

from typing import Any

Q = 3329
N = 256

# Barrett: x // q as (x * M) >> S for 0 <= x < 2**26 (the product stays below 2**53)
_S = 38
_M = (1 << _S) // Q
# x // (2q) as (x * M2) >> S2, exact for 0 <= x < 2**24 (Compress)
_S2 = 41
_M2 = -(-(1 << _S2) // (2 * Q))

Int = Any  # int or a traced node


def mask(x: Int) -> Int:
    """-1 (all bits set) where -2**63 <= x < 0, else 0: the sign as a select mask."""
    return x >> 63


def csub(x: Int) -> Int:
    """x mod q for 0 <= x < 2q: q subtracted when the result stays non-negative."""
    r = x - Q
    return r + (mask(r) & Q)


def reduce(x: Int) -> Int:
    """x mod q for 0 <= x < 2**26."""
    return csub(x - ((x * _M) >> _S) * Q)


def add(a: Int, b: Int) -> Int:
    """a + b mod q for a, b in [0, q)."""
    return csub(a + b)


def sub(a: Int, b: Int) -> Int:
    """a - b mod q for a, b in [0, q)."""
    return csub(a - b + Q)


def mul(a: Int, b: Int) -> Int:
    """a · b mod q for a, b in [0, q) (or any product below 2**26)."""
    return reduce(a * b)


def compress(x: Int, d: int) -> Int:
    """FIPS 203's Compress_d: round(2**d / q · x) mod 2**d for x in [0, q), as a
    multiply-and-shift (a division by q here is what KyberSlash timed)."""
    return (((x << (d + 1)) + Q) * _M2 >> _S2) & ((1 << d) - 1)


def decompress(y: Int, d: int) -> Int:
    """FIPS 203's Decompress_d: round(q / 2**d · y) for y in [0, 2**d)."""
    return (y * Q + (1 << (d - 1))) >> d


def select(flag: Int, a: Int, b: Int) -> Int:
    """a where the mask ``flag`` is -1, b where it is 0: b ^ (flag & (a ^ b))."""
    return b ^ (flag & (a ^ b))


def nonzero(x: Int) -> Int:
    """-1 where 0 < x < 2**62, else 0 (x >= 0): a mask from a count of differences."""
    return mask(-x)


__all__ = [
    "N",
    "Q",
    "add",
    "compress",
    "csub",
    "decompress",
    "mask",
    "mul",
    "nonzero",
    "reduce",
    "select",
    "sub",
]
