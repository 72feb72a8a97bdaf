"""Polynomials of R_q = Z_q[X]/(X**256 + 1) as tensors of the IR, shaped (..., 256): the
NTT and its inverse as seven comprehensions each over *views* (a butterfly layer is the
polynomial seen as (blocks, 2, half), its twiddles a slice of one table), the NTT-domain
product as one reduction, and the bit-level codecs and centred binomial sampling of FIPS
203 as comprehensions over bits. The arithmetic inside is ``tang.crypto.modq``'s, so every
kernel these print is free of branches and divisions on the data.

The twiddle tables are inputs of the graph (``tables()`` gives their values): the IR has
no constant tensors, and a table read at a position fixed by the loop indices is public.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from ..expr import graph as g
from ..tensor import frontend as tf
from ..tensor.frontend import Tensor, comprehend
from ..tensor.ops import map_
from . import modq
from .modq import N, Q

ZETA = 17  # the primitive 256th root of unity mod q that FIPS 203 fixes
INV_128 = 3303  # 128**-1 mod q: the inverse NTT's last scale
ZETAS, GAMMAS = "zetas", "gammas"  # the graph inputs that hold the twiddle tables


def _bitrev7(i: int) -> int:
    return int(f"{i:07b}"[::-1], 2)


@functools.cache
def tables() -> dict[str, list[int]]:
    """The twiddles: ``zetas[i] = ζ**BitRev7(i)`` (the butterflies) and ``gammas[i] =
    ζ**(2·BitRev7(i) + 1)`` (the base-case products), both mod q."""
    return {
        ZETAS: [pow(ZETA, _bitrev7(i), Q) for i in range(128)],
        GAMMAS: [pow(ZETA, 2 * _bitrev7(i) + 1, Q) for i in range(128)],
    }


@functools.cache
def twiddles() -> tuple[Tensor, Tensor]:
    """The graph inputs ``zetas`` and ``gammas``: the same two tensors for every graph, so
    that parts built apart join into one graph."""
    return tf.input(ZETAS, (128,)), tf.input(GAMMAS, (128,))


def _axes(t: Tensor, extra: int) -> tuple[str, str]:
    """Letters for ``t``'s leading axes (all but the last) and ``extra`` more."""
    letters = tf._letters(t.ndim - 1 + extra)
    return letters[: t.ndim - 1], letters[t.ndim - 1 :]


def _butterflies(
    f: Tensor, zetas: Tensor, half: int, inverse: bool, body: Callable[..., g.Node]
) -> Tensor:
    """One layer: ``f`` seen as (..., blocks, 2, half); element (b, h, j) from the pair
    (f[b, 0, j], f[b, 1, j]) and block b's twiddle (``body(h, low, high, zeta)``)."""
    blocks = N // (2 * half)
    lead, (b, h, j) = _axes(f, 3)
    v = f.reshape(*f.shape[:-1], blocks, 2, half)
    # block b takes zetas[blocks + b] going forward and zetas[2·blocks - 1 - b] going back
    z = zetas[2 * blocks - 1 : blocks - 1 : -1] if inverse else zetas[blocks : 2 * blocks]
    out = comprehend(
        lead + b + h + j,
        [(v[..., 0, :], lead + b + j), (v[..., 1, :], lead + b + j), (z, b)],
        lambda ix, lo, hi, zeta: body(g.eq(ix[h], 0.0), lo, hi, zeta),
        extents={h: 2},
        index=True,
    )
    return out.reshape(*f.shape)


def ntt(f: Tensor, zetas: Tensor) -> Tensor:
    """FIPS 203's NTT (Algorithm 9) of each polynomial of ``f`` (..., 256), coefficients in
    [0, q): seven butterfly layers, half-widths 128 down to 2."""

    def layer(first: g.Node, lo: g.Node, hi: g.Node, zeta: g.Node) -> g.Node:
        t = modq.mul(zeta, hi)
        return g.select(first, modq.add(lo, t), modq.sub(lo, t))

    for s in range(7):
        f = _butterflies(f, zetas, 128 >> s, False, layer)
    return f


def intt(f: Tensor, zetas: Tensor) -> Tensor:
    """FIPS 203's NTT⁻¹ (Algorithm 10): the layers in reverse, then the scale 128⁻¹."""

    def layer(first: g.Node, lo: g.Node, hi: g.Node, zeta: g.Node) -> g.Node:
        return g.select(first, modq.add(lo, hi), modq.mul(zeta, modq.sub(hi, lo)))

    for s in range(7):
        f = _butterflies(f, zetas, 2 << s, True, layer)
    return map_(lambda x: modq.mul(x, INV_128), f)


def multiply_sum(a: Tensor, b: Tensor, gammas: Tensor) -> Tensor:
    """Σ_j a[..., j, :] × b[j, :] in the NTT domain (Algorithms 11 and 12: 128 products of
    degree-1 polynomials mod X² − γ_m), for a (..., k, 256) and b (k, 256): a matrix-vector
    product, or with a (1, k, 256) an inner product. Each term is reduced, the sum after."""
    lead, (j, m, h) = _axes(a[..., 0, :], 3)
    av = a.reshape(*a.shape[:-1], 128, 2)
    bv = b.reshape(*b.shape[:-1], 128, 2)

    def body(ix: dict, a0: g.Node, a1: g.Node, b0: g.Node, b1: g.Node, gamma: g.Node) -> g.Node:
        even = modq.reduce(a0 * b0 + modq.mul(a1, b1) * gamma)
        odd = modq.reduce(a0 * b1 + a1 * b0)
        return g.select(g.eq(ix[h], 0.0), even, odd)

    summed = comprehend(
        lead + m + h,
        [
            (av[..., 0], lead + j + m),
            (av[..., 1], lead + j + m),
            (bv[..., 0], j + m),
            (bv[..., 1], j + m),
            (gammas, m),
        ],
        body,
        extents={h: 2},
        index=True,
    )
    return map_(modq.reduce, summed).reshape(*a.shape[:-2], N)


def add(a: Tensor, b: Tensor) -> Tensor:
    """Coefficient-wise a + b mod q."""
    return map_(modq.add, a, b)


def sub(a: Tensor, b: Tensor) -> Tensor:
    """Coefficient-wise a − b mod q."""
    return map_(modq.sub, a, b)


def compress(f: Tensor, d: int) -> Tensor:
    return map_(lambda x: modq.compress(x, d), f)


def decompress(f: Tensor, d: int) -> Tensor:
    return map_(lambda x: modq.decompress(x, d), f)


def _chunks(x: Tensor, width: int, count: int) -> Tensor:
    """The low ``count`` chunks of ``width`` bits of each element, least significant
    first: (..., n, count)."""
    letters = tf._letters(x.ndim + 1)
    lead, t = letters[:-1], letters[-1]
    mask = (1 << width) - 1
    return comprehend(
        letters,
        [(x, lead)],
        lambda ix, v: (v >> (ix[t] * width)) & mask,
        extents={t: count},
        index=True,
    )


def _join(chunks: Tensor, width: int) -> Tensor:
    """Σ_t chunks[..., t] · 2**(width·t): the whole numbers the last axis spells."""
    letters = tf._letters(chunks.ndim)
    lead, t = letters[:-1], letters[-1]
    return comprehend(lead, [(chunks, letters)], lambda ix, c: c << (ix[t] * width), index=True)


def byte_encode(f: Tensor, d: int) -> Tensor:
    """ByteEncode_d (Algorithm 5): (..., 256) values below 2**d as (..., 32·d) bytes. The
    bit stream is cut into chunks of gcd(d, 8) bits, which tile both the values and the
    bytes: each value's chunks, seen 8 bits at a time, are the bytes' chunks."""
    w = math.gcd(d, 8)
    chunks = _chunks(f, w, d // w).reshape(*f.shape[:-1], 32 * d, 8 // w)
    return _join(chunks, w)


def byte_decode(data: Tensor, d: int) -> Tensor:
    """ByteDecode_d (Algorithm 6): (..., 32·d) bytes as (..., 256) values (mod q for d = 12)."""
    w = math.gcd(d, 8)
    chunks = _chunks(data, w, 8 // w).reshape(*data.shape[:-1], N, d // w)
    values = _join(chunks, w)
    return map_(modq.reduce, values) if d == 12 else values


def cbd(data: Tensor, eta: int) -> Tensor:
    """SamplePolyCBD_η (Algorithm 8): (..., 64·η) bytes of PRF output as (..., 256)
    coefficients x − y mod q, x the sum of a coefficient's first η bits and y of the next
    η. The bytes are cut into chunks of gcd(2η, 8) bits; each chunk adds its bits with the
    sign their position gives (+ for x, − for y)."""
    w = math.gcd(2 * eta, 8)
    per = 2 * eta // w  # chunks per coefficient
    chunks = _chunks(data, w, 8 // w).reshape(*data.shape[:-1], N, per)
    letters = tf._letters(chunks.ndim)
    lead, t = letters[:-1], letters[-1]

    def signed_bits(ix: dict, c: g.Node) -> g.Node:
        total: g.Node | float = 0.0
        for b in range(w):  # bit b of chunk t is bit w·t + b of the coefficient's 2η
            bit = (c >> b) & 1
            total = total + bit * (1 - 2 * g.select(g.lt(ix[t] * w + b, float(eta)), 0.0, 1.0))
        return total  # type: ignore[return-value]

    diff = comprehend(lead, [(chunks, letters)], signed_bits, index=True)
    return map_(lambda v: modq.csub(v + Q), diff)


def differ(a: Tensor, b: Tensor) -> Tensor:
    """A 0-d mask: −1 where the byte strings ``a`` and ``b`` differ anywhere, else 0 (every
    byte is read: no early exit)."""
    letters = tf._letters(a.ndim)
    count = comprehend("", [(a, letters), (b, letters)], lambda x, y: x ^ y)
    return map_(modq.nonzero, count)


def choose(flag: Tensor, yes: Tensor, no: Tensor) -> Tensor:
    """``yes`` where the 0-d mask ``flag`` is −1, ``no`` where it is 0, byte by byte."""
    return map_(lambda y, n, f: modq.select(f, y, n), yes, no, flag)


def stack_bytes(parts: Sequence[Tensor]) -> Tensor:
    """Byte strings joined end to end (flattened first)."""
    from ..tensor.ops import concat

    return concat([p.reshape(-1) for p in parts])


__all__ = [
    "GAMMAS",
    "ZETAS",
    "add",
    "byte_decode",
    "byte_encode",
    "cbd",
    "choose",
    "compress",
    "decompress",
    "differ",
    "intt",
    "multiply_sum",
    "ntt",
    "stack_bytes",
    "sub",
    "tables",
    "twiddles",
]
