"""Quantized weights that stay quantized on the device: GGUF's Q4_1 and Q8_0 blocks repacked
into f32 buffers of small whole numbers, and the matrix-vector product as a comprehension
that unpacks and dequantizes each weight inside its reduction.

Every buffer of the tensor IR holds f32, and f32 holds every whole number below 2**24
exactly, so a "code word" is a whole number packing six 4-bit codes (Q4_1) or three 8-bit
ones (Q8_0), and ``floor`` (an op of the registry, spelled by every backend) unpacks one:
``t = ⌊word · 2^-bits·digit⌋``, ``code = t - 2^bits·⌊t · 2^-bits⌋`` (each step exact).

The digits are arranged so that every index stays affine: a row of K weights is split into
super-blocks of 96 (three GGUF blocks of 32). For Q4_1, weight ``e = 96·B + 32·a + 16·h + w``
is digit ``2a + h`` of word ``(B, w)``, and its scale and minimum are those of GGUF block
``3B + a``; for Q8_0 weight ``e = 96·B + 32·a + w`` is digit ``a`` of word ``(B, w)``.
Bytes per weight read by a step: Q4_1 0.92 (the file: 0.625), Q8_0 1.46 (the file: 1.06),
against 4 for f32.
"""

from __future__ import annotations

import math
import struct
from array import array
from typing import Any

from ..expr import graph as g
from ..tensor.frontend import Tensor, comprehend

SUPER = 96  # weights per super-block: three GGUF blocks of 32
# format -> (bits per code, codes per word, words per super-block, GGUF bytes per block)
FORMATS = {"Q4_1": (4, 6, 16, 20), "Q8_0": (8, 3, 32, 34)}


def packable(type_name: str, shape: tuple[int, ...]) -> bool:
    """Whether a (rows, K) GGUF tensor of this type can stay quantized here."""
    return type_name in FORMATS and len(shape) == 2 and shape[1] % SUPER == 0


def shapes(type_name: str, rows: int, cols: int) -> dict[str, tuple[int, ...]]:
    """The buffers of one packed matrix: codes (rows, K/96, words) and per-32 scales (and
    minimums for Q4_1) as (rows, K/96, 3)."""
    _, _, words, _ = FORMATS[type_name]
    nb = cols // SUPER
    out = {"codes": (rows, nb, words), "scale": (rows, nb, 3)}
    if type_name == "Q4_1":
        out["min"] = (rows, nb, 3)
    return out


def _digit_scales(type_name: str) -> Tensor:
    """2^-bits·digit for each digit, indexed like the codes' digit axes: (3, 2) for Q4_1
    (digit 2a + h), (3,) for Q8_0."""
    if type_name == "Q4_1":
        return comprehend(
            "ah",
            [],
            lambda ix: g.exp2(-4.0 * (2.0 * ix["a"] + ix["h"])),
            extents={"a": 3, "h": 2},
            index=True,
        )
    return comprehend("a", [], lambda ix: g.exp2(-8.0 * ix["a"]), extents={"a": 3}, index=True)


def linear(x: Tensor, type_name: str, parts: dict[str, Tensor]) -> Tensor:
    """x (T, K) @ Wᵀ for a packed (rows, K) weight: (T, rows), dequantized in the sum."""
    t_len, cols = x.shape
    nb = cols // SUPER
    digits = _digit_scales(type_name)
    if type_name == "Q4_1":
        xs = x.reshape(t_len, nb, 3, 2, 16)

        def body(xv: Any, word: Any, d: Any, m: Any, shift: Any) -> Any:
            t = g.floor(word * shift)
            code = t - 16.0 * g.floor(t * 0.0625)
            return xv * (d * code + m)

        operands = [
            (xs, "tBahw"),
            (parts["codes"], "jBw"),
            (parts["scale"], "jBa"),
            (parts["min"], "jBa"),
            (digits, "ah"),
        ]
        return comprehend("tj", operands, body)
    xs = x.reshape(t_len, nb, 3, 32)

    def body8(xv: Any, word: Any, d: Any, shift: Any) -> Any:
        t = g.floor(word * shift)
        code = t - 256.0 * g.floor(t * 0.00390625)
        return xv * (d * (code - 128.0))

    operands = [(xs, "tBaw"), (parts["codes"], "jBw"), (parts["scale"], "jBa"), (digits, "a")]
    return comprehend("tj", operands, body8)


# ---- packing GGUF blocks ------------------------------------------------------------------


def pack(raw: Any, type_name: str, rows: int, cols: int) -> dict[str, Any]:
    """The buffers of ``shapes`` (flat f32: numpy arrays when numpy is present, else
    ``array('f')``) from a GGUF tensor's raw bytes."""
    try:
        import numpy as np
    except ImportError:
        return _pack_python(bytes(raw), type_name, rows, cols)
    return _pack_numpy(np, raw, type_name, rows, cols)


def _pack_numpy(np: Any, raw: Any, type_name: str, rows: int, cols: int) -> dict[str, Any]:
    nb = cols // SUPER
    buf = np.frombuffer(raw, np.uint8)
    if type_name == "Q4_1":
        blocks = buf.reshape(rows, nb, 3, 20)
        d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
        m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
        qs = blocks[..., 4:].astype(np.uint32)  # (rows, nb, 3, 16)
        low, high = qs & 15, qs >> 4  # digit 2a and 2a + 1
        codes = np.zeros((rows, nb, 16), np.uint32)
        for a in range(3):
            codes |= low[:, :, a] << (8 * a)
            codes |= high[:, :, a] << (8 * a + 4)
        return {"codes": codes.astype(np.float32), "scale": d, "min": m}
    blocks = buf.reshape(rows, nb, 3, 34)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    qs = (blocks[..., 2:].view(np.int8).astype(np.int32) + 128).astype(np.uint32)
    codes = qs[:, :, 0] | (qs[:, :, 1] << 8) | (qs[:, :, 2] << 16)
    return {"codes": codes.astype(np.float32), "scale": d}


def _pack_python(raw: bytes, type_name: str, rows: int, cols: int) -> dict[str, Any]:
    bits, _, words, size = FORMATS[type_name]
    blocks = rows * cols // 32
    scales, mins, codes = array("f"), array("f"), array("f")
    unpack = struct.Struct("<e").unpack_from
    for b in range(blocks):
        scales.append(unpack(raw, b * size)[0])
        if type_name == "Q4_1":
            mins.append(unpack(raw, b * size + 2)[0])
    for s in range(blocks // 3):
        base = [(3 * s + a) * size for a in range(3)]
        for w in range(words):
            value = 0
            if type_name == "Q4_1":
                for a in range(3):
                    byte = raw[base[a] + 4 + w]
                    value |= (byte & 15) << (8 * a) | (byte >> 4) << (8 * a + 4)
            else:
                for a in range(3):
                    value |= ((raw[base[a] + 2 + w] + 128) & 255) << (bits * a)
            codes.append(float(value))
    out = {"codes": codes, "scale": scales}
    if type_name == "Q4_1":
        out["min"] = mins
    return out


def nbytes(type_name: str, rows: int, cols: int) -> int:
    """Bytes of the packed buffers of one matrix (what a step reads)."""
    return 4 * sum(math.prod(s) for s in shapes(type_name, rows, cols).values())


__all__ = ["FORMATS", "SUPER", "linear", "nbytes", "pack", "packable", "shapes"]
