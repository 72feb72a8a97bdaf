"""ggml's tensor formats: a table of block sizes, and dequantization to float32.

Each format stores ``block_size`` elements in ``type_size`` bytes. The ones that
dequantize here (pure Python with ``dequantize``, numpy with ``dequantize_numpy``):

    F32    4-byte little-endian floats
    F16    IEEE half floats            BF16   the top 16 bits of a float32
    Q4_0   32 per 18 bytes: f16 d, 16 bytes of nibbles; w = d·(q − 8)
    Q4_1   32 per 20 bytes: f16 d, f16 m, 16 bytes of nibbles; w = d·q + m
    Q8_0   32 per 34 bytes: f16 d, 32 int8; w = d·q

In the nibble formats byte i of a block holds element i (low nibble) and element i + 16
(high nibble). Both paths give the same float32 bits as ggml (and the `gguf` package): every
product and sum is exact in a double, so the one rounding to float32 is ggml's rounding.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from dataclasses import dataclass
from operator import add, mul
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

QK_K = 256  # elements per block of the k-quants


@dataclass(frozen=True)
class BlockFormat:
    """One ggml tensor type: ``block_size`` elements stored in ``type_size`` bytes."""

    name: str
    id: int
    block_size: int
    type_size: int

    def nbytes(self, count: int) -> int:
        """Bytes that ``count`` elements take (``count`` a whole number of blocks)."""
        return count // self.block_size * self.type_size


# ggml's type ids (ggml.h `enum ggml_type`); ids 4, 5, 31–33 and 36–38 were removed from ggml.
FORMATS: tuple[BlockFormat, ...] = tuple(
    BlockFormat(*row)
    for row in (
        ("F32", 0, 1, 4),
        ("F16", 1, 1, 2),
        ("Q4_0", 2, 32, 2 + 16),
        ("Q4_1", 3, 32, 2 + 2 + 16),
        ("Q5_0", 6, 32, 2 + 4 + 16),
        ("Q5_1", 7, 32, 2 + 2 + 4 + 16),
        ("Q8_0", 8, 32, 2 + 32),
        ("Q8_1", 9, 32, 4 + 4 + 32),
        ("Q2_K", 10, QK_K, 2 + 2 + QK_K // 16 + QK_K // 4),
        ("Q3_K", 11, QK_K, 2 + QK_K // 4 + QK_K // 8 + 12),
        ("Q4_K", 12, QK_K, 2 + 2 + QK_K // 2 + 12),
        ("Q5_K", 13, QK_K, 2 + 2 + QK_K // 2 + QK_K // 8 + 12),
        ("Q6_K", 14, QK_K, 2 + QK_K // 2 + QK_K // 4 + QK_K // 16),
        ("Q8_K", 15, QK_K, 4 + QK_K + QK_K // 8),
        ("IQ2_XXS", 16, QK_K, 2 + QK_K // 4),
        ("IQ2_XS", 17, QK_K, 2 + QK_K // 4 + QK_K // 32),
        ("IQ3_XXS", 18, QK_K, 2 + QK_K // 4 + QK_K // 8),
        ("IQ1_S", 19, QK_K, 2 + QK_K // 8 + QK_K // 16),
        ("IQ4_NL", 20, 32, 2 + 16),
        ("IQ3_S", 21, QK_K, 2 + QK_K // 4 + QK_K // 8 + QK_K // 32 + 4),
        ("IQ2_S", 22, QK_K, 2 + QK_K // 4 + QK_K // 16),
        ("IQ4_XS", 23, QK_K, 2 + 2 + QK_K // 2 + QK_K // 64),
        ("I8", 24, 1, 1),
        ("I16", 25, 1, 2),
        ("I32", 26, 1, 4),
        ("I64", 27, 1, 8),
        ("F64", 28, 1, 8),
        ("IQ1_M", 29, QK_K, QK_K // 8 + QK_K // 16 + QK_K // 32),
        ("BF16", 30, 1, 2),
        ("TQ1_0", 34, QK_K, 2 + 4 * 13),
        ("TQ2_0", 35, QK_K, 2 + 64),
        ("MXFP4", 39, 32, 1 + 16),
        ("NVFP4", 40, 64, 4 + 32),
        ("Q1_0", 41, 128, 2 + 16),
    )
)
BY_NAME: dict[str, BlockFormat] = {f.name: f for f in FORMATS}
BY_ID: dict[int, BlockFormat] = {f.id: f for f in FORMATS}
SUPPORTED: tuple[str, ...] = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q8_0")


def block_format(type: str | int) -> BlockFormat:
    """The format named ``type`` ("Q4_1") or with ggml type id ``type`` (3)."""
    fmt = BY_ID.get(type) if isinstance(type, int) else BY_NAME.get(type)
    if fmt is None:
        raise ValueError(f"unknown ggml tensor type {type!r}")
    return fmt


def _checked(raw: bytes | bytearray | memoryview, type: str | int, count: int):
    """The format and the bytes (as a byte memoryview) of ``count`` elements, checked."""
    fmt = block_format(type)
    if fmt.name not in SUPPORTED:
        raise NotImplementedError(
            f"dequantizing {fmt.name} (ggml type {fmt.id}) is not supported; "
            f"supported: {', '.join(SUPPORTED)}"
        )
    if count < 0 or count % fmt.block_size:
        raise ValueError(
            f"{count} elements are not a whole number of {fmt.name} blocks of {fmt.block_size}"
        )
    view = memoryview(raw)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    if len(view) != fmt.nbytes(count):
        raise ValueError(
            f"{count} {fmt.name} elements take {fmt.nbytes(count)} bytes, got {len(view)}"
        )
    return fmt, view


# ---- pure Python ----------------------------------------------------------------------------
# A chunk of blocks at a time. Within a chunk the work is per column (element j of every
# block): byte-strided slices gather a column at C speed, bytes.translate splits nibbles, and
# map() over the column and the per-block scales does the arithmetic; no Python-level loop
# runs per element.

_CHUNK = 1 << 13  # blocks per chunk
_LO = bytes(b & 15 for b in range(256))
_HI = bytes(b >> 4 for b in range(256))
_LO_MINUS_8 = bytes((b & 15) - 8 & 255 for b in range(256))  # as int8: low nibble − 8
_HI_MINUS_8 = bytes((b >> 4) - 8 & 255 for b in range(256))
_BIG_ENDIAN = sys.byteorder == "big"
# d·q + m is exact in a double, so fma's single rounding gives the same double as mul, add.
_FMA = getattr(math, "fma", None)


def _halves(chunk: bytes, start: int, stride: int, n: int) -> tuple[float, ...]:
    """The n f16 values at ``start`` of each ``stride``-byte block, as Python floats."""
    pairs = bytearray(2 * n)
    pairs[0::2] = chunk[start::stride]
    pairs[1::2] = chunk[start + 1 :: stride]
    return struct.unpack(f"<{n}e", pairs)


def _q4_0(chunk: bytes, n: int, out: array, base: int) -> None:
    d = _halves(chunk, 0, 18, n)
    end = base + 32 * n
    for j in range(16):
        col = chunk[2 + j :: 18]
        lo = array("b", col.translate(_LO_MINUS_8))  # as int8: the nibble − 8
        hi = array("b", col.translate(_HI_MINUS_8))
        out[base + j : end : 32] = array("f", list(map(mul, lo, d)))
        out[base + 16 + j : end : 32] = array("f", list(map(mul, hi, d)))


def _q4_1(chunk: bytes, n: int, out: array, base: int) -> None:
    d = _halves(chunk, 0, 20, n)
    m = _halves(chunk, 2, 20, n)
    end = base + 32 * n
    for j in range(16):
        col = chunk[4 + j :: 20]
        lo, hi = col.translate(_LO), col.translate(_HI)
        if _FMA is not None:  # one C call per element instead of two (Python 3.13+)
            out[base + j : end : 32] = array("f", list(map(_FMA, lo, d, m)))
            out[base + 16 + j : end : 32] = array("f", list(map(_FMA, hi, d, m)))
        else:
            out[base + j : end : 32] = array("f", list(map(add, map(mul, lo, d), m)))
            out[base + 16 + j : end : 32] = array("f", list(map(add, map(mul, hi, d), m)))


def _q8_0(chunk: bytes, n: int, out: array, base: int) -> None:
    d = _halves(chunk, 0, 34, n)
    end = base + 32 * n
    for j in range(32):
        out[base + j : end : 32] = array("f", list(map(mul, array("b", chunk[2 + j :: 34]), d)))


_BLOCK_KERNELS = {"Q4_0": _q4_0, "Q4_1": _q4_1, "Q8_0": _q8_0}


def dequantize(raw: bytes | bytearray | memoryview, type: str | int, count: int) -> array:
    """``count`` elements of ggml type ``type`` stored in ``raw``, as float32 (pure Python)."""
    fmt, view = _checked(raw, type, count)
    if fmt.name == "F32":
        out = array("f")
        out.frombytes(view)
        if _BIG_ENDIAN:
            out.byteswap()
        return out
    if fmt.name == "BF16":
        data = bytes(view)
        widened = bytearray(2 * len(data))  # each bf16 is the high half of a float32
        widened[2::4], widened[3::4] = data[0::2], data[1::2]
        out = array("f", widened)
        if _BIG_ENDIAN:
            out.byteswap()
        return out
    out = array("f", bytes(4 * count))
    if fmt.name == "F16":
        step = _CHUNK * 32
        for start in range(0, count, step):
            n = min(step, count - start)
            out[start : start + n] = array("f", struct.unpack_from(f"<{n}e", view, 2 * start))
        return out
    kernel = _BLOCK_KERNELS[fmt.name]
    size, per = fmt.type_size, fmt.block_size
    blocks = count // per
    for first in range(0, blocks, _CHUNK):
        n = min(_CHUNK, blocks - first)
        kernel(bytes(view[first * size : (first + n) * size]), n, out, first * per)
    return out


# ---- numpy ----------------------------------------------------------------------------------


def dequantize_numpy(
    raw: bytes | bytearray | memoryview, type: str | int, count: int
) -> np.ndarray:
    """``count`` elements of ggml type ``type`` stored in ``raw``, as a float32 numpy array."""
    import numpy as np

    fmt, view = _checked(raw, type, count)
    name = fmt.name
    if name == "F32":
        return np.frombuffer(view, dtype="<f4").astype(np.float32)
    if name == "F16":
        return np.frombuffer(view, dtype="<f2").astype(np.float32)
    if name == "BF16":
        return (np.frombuffer(view, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    blocks = np.frombuffer(view, dtype=_numpy_block_dtypes()[name])
    d = blocks["d"].astype(np.float32)[:, None]
    if name == "Q8_0":
        out = blocks["qs"].astype(np.float32) * d
    else:
        qs = blocks["qs"]
        q = np.concatenate([qs & 15, qs >> 4], axis=1)
        if name == "Q4_0":
            out = (q.astype(np.int8) - np.int8(8)).astype(np.float32) * d
        else:  # Q4_1
            out = q.astype(np.float32) * d + blocks["m"].astype(np.float32)[:, None]
    return out.reshape(-1)


_NUMPY_DTYPES: dict[str, Any] = {}


def _numpy_block_dtypes() -> dict[str, Any]:
    """numpy structured dtypes for one block of each block format (made on first use)."""
    if not _NUMPY_DTYPES:
        import numpy as np

        _NUMPY_DTYPES.update(
            Q4_0=np.dtype([("d", "<f2"), ("qs", "u1", 16)]),
            Q4_1=np.dtype([("d", "<f2"), ("m", "<f2"), ("qs", "u1", 16)]),
            Q8_0=np.dtype([("d", "<f2"), ("qs", "i1", 32)]),
        )
    return _NUMPY_DTYPES
