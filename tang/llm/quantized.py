"""Quantized weights that stay as the file stores them: a GGUF Q4_0, Q4_1 or Q8_0 matrix
reaches the device as its own bytes, and the matrix-vector product dequantizes each weight
inside its reduction.

A GGUF block holds 32 weights: an f16 scale ``d`` (Q4_1: then an f16 minimum ``m``) and
the codes, 4-bit (two per byte: weight ``w`` in the low nibble of byte ``w``, weight
``16 + w`` in its high one) or 8-bit signed. Weight = ``d·code`` (Q8_0), ``d·(code - 8)``
(Q4_0) or ``d·code + m`` (Q4_1). The same bytes are two packed inputs of the tensor IR
(``tang.tensor.packed``): the codes as u16 elements (four 4-bit codes each) or i8 ones,
and the scales as f16 ones, so every read is an affine view and a step reads 0.5625–1.0625
bytes per weight, the file's own size, against 4 for f32.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..expr import graph as g
from ..tensor.frontend import Tensor, comprehend

BLOCK = 32  # weights per GGUF block


@dataclass(frozen=True)
class Format:
    """A GGUF block format as the kernels read it: ``size`` bytes per block, the codes read
    as ``codes`` elements ("u16": four 4-bit codes each; "i8": one 8-bit code) from
    ``offset`` bytes in, a minimum after the scale or not, and the ``bias`` subtracted from
    a code."""

    name: str
    size: int
    codes: str
    offset: int
    has_min: bool = False
    bias: float = 0.0


FORMATS = {
    f.name: f
    for f in (
        Format("Q4_0", 18, "u16", 2, bias=8.0),
        Format("Q4_1", 20, "u16", 4, has_min=True),
        Format("Q8_0", 34, "i8", 2),
    )
}


def packable(type_name: str, shape: tuple[int, ...]) -> bool:
    """Whether a (rows, K) GGUF tensor of this type can stay quantized here."""
    return type_name in FORMATS and len(shape) == 2 and shape[1] % BLOCK == 0


def parts(type_name: str, rows: int, cols: int) -> dict[str, tuple[tuple[int, ...], str]]:
    """The two packed inputs one matrix's bytes are read as, by part: ``codes`` (rows,
    blocks, elements per block: u16 for the 4-bit formats, i8 for Q8_0) and ``scales``
    (rows, blocks, halves per block; f16). Both are views of the same bytes."""
    f = FORMATS[type_name]
    nb = cols // BLOCK
    per = f.size // 2 if f.codes == "u16" else f.size
    return {"codes": ((rows, nb, per), f.codes), "scales": ((rows, nb, f.size // 2), "f16")}


def spread(x: Tensor) -> tuple[Tensor, Tensor]:
    """x (T, K) as the 4-bit products read it, in one comprehension (one kernel): weight
    16h + 2k + e of each block at (2e + h, k), so each of the four reads of a code element
    is contiguous along k, and at (4, k) the sum of those four (what a Q4_1 minimum
    multiplies). Products of one input can share it (``linear``'s ``spread_of``)."""
    t_len, cols = x.shape
    parts = x.reshape(t_len, cols // BLOCK, 2, BLOCK // 4, 2)  # (t, b, h, k, e)

    def body(ix: Any, v: Any) -> Any:
        j, own = ix["j"], 2.0 * ix["e"] + ix["h"]
        return g.select(g.eq(j, 4.0), v, g.select(g.eq(j, own), v, 0.0))

    out = comprehend("tbjk", [(parts, "tbhke")], body, extents={"j": 5}, index=True)
    return out, out[:, :, 4]


def linear(
    x: Tensor,
    type_name: str,
    inputs: dict[str, Tensor],
    spread_of: Callable[[Tensor], tuple[Tensor, Tensor]] = spread,
) -> Tensor:
    """x (T, K) @ Wᵀ for a quantized (rows, K) weight given as its ``parts`` inputs:
    (T, rows), each weight dequantized where the sum reads it. ``spread_of`` rearranges x
    for the 4-bit formats (pass a cached ``spread`` so products of one x share it)."""
    f = FORMATS[type_name]
    t_len, cols = x.shape
    nb = cols // BLOCK
    scales = inputs["scales"]
    operands: list[tuple[Tensor, str]] = [(scales[:, :, 0], "jb")]
    if f.has_min:
        operands.append((scales[:, :, 1], "jb"))
    if f.codes == "i8":
        operands += [
            (inputs["codes"][:, :, f.offset :], "jbw"),
            (x.reshape(t_len, nb, BLOCK), "tbw"),
        ]
        return comprehend("tj", operands, lambda d, q, xv: xv * d * q)
    # 16-bit element k of a block's codes holds weights 2k and 2k + 1 (low nibbles of
    # its two bytes) and 16 + 2k, 17 + 2k (high nibbles): one read serves four weights,
    # split by floor (exact on whole numbers below 2**16)
    operands.append((inputs["codes"][:, :, f.offset // 2 :], "jbk"))
    xs, sums = spread_of(x)
    operands += [(xs[:, :, 2 * e + h], "tbk") for e in (0, 1) for h in (0, 1)]
    if f.has_min:  # Σ x·(d·c + m) = d·Σ x·c + m·Σ x: per weight one product fewer
        operands.append((sums, "tbk"))
    bias = f.bias

    def body(d: Any, *rest: Any) -> Any:
        low, v, *xv = rest if f.has_min else (None, *rest)
        shifted = [v, g.floor(v * 0.0625), g.floor(v * 0.00390625), g.floor(v * 0.000244140625)]
        codes = [a - 16.0 * b for a, b in itertools.pairwise(shifted)] + [shifted[3]]
        if bias:
            codes = [c - bias for c in codes]
        dot = sum((xk * c for xk, c in zip(xv[1:4], codes[1:])), xv[0] * codes[0])
        return d * dot if low is None else d * dot + low * xv[4]

    return comprehend("tj", operands, body)


def dequantize(type_name: str, inputs: dict[str, Tensor]) -> Tensor:
    """The (rows, K) weight its ``parts`` inputs hold, as an element-wise comprehension
    shaped (rows, blocks, …) whose row-major order is the weights' (reshape it to (rows, K)
    after picking rows: the block axes keep every read affine, so the pick fuses with it).
    Each weight reads its own code and scale: what a lookup of a few rows needs (a product
    uses ``linear``, which reads each code once for every weight it holds)."""
    f = FORMATS[type_name]
    scales = inputs["scales"]
    operands: list[tuple[Tensor, str]] = [(scales[:, :, 0], "jb")]
    if f.has_min:
        operands.append((scales[:, :, 1], "jb"))
    if f.codes == "i8":
        codes = inputs["codes"][:, :, f.offset :]
        return comprehend("jbw", [*operands, (codes, "jbw")], lambda d, q: d * q)
    # weight 16h + 2k + e of a block is nibble (e, h) of 16-bit element k (see ``linear``)
    operands.append((inputs["codes"][:, :, f.offset // 2 :], "jbk"))

    def body(ix: Any, d: Any, *rest: Any) -> Any:
        low, v = rest if f.has_min else (None, *rest)
        shifted = [v, g.floor(v * 0.0625), g.floor(v * 0.00390625), g.floor(v * 0.000244140625)]
        codes = [a - 16.0 * b for a, b in itertools.pairwise(shifted)] + [shifted[3]]
        high, odd = g.eq(ix["h"], 1.0), g.eq(ix["e"], 1.0)
        code = g.select(odd, g.select(high, codes[3], codes[2]), g.select(high, codes[1], codes[0]))
        code = code - f.bias if f.bias else code
        return d * code if low is None else d * code + low

    return comprehend("jbhke", operands, body, extents={"h": 2, "e": 2}, index=True)


def nbytes(type_name: str, rows: int, cols: int) -> int:
    """Bytes of one matrix as stored (what a step reads of it)."""
    return rows * cols // BLOCK * FORMATS[type_name].size


__all__ = [
    "BLOCK",
    "FORMATS",
    "Format",
    "dequantize",
    "linear",
    "nbytes",
    "packable",
    "parts",
    "spread",
]
