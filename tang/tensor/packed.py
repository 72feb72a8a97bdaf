"""Packed inputs: a buffer of 32-bit words read as narrower elements, so quantized weights
reach the kernels as the file stores them (no repacking, no widening).

An input declared ``packed="u4"`` (or "u8", "i8", "u16", "f16") has a shape in *elements*;
its device buffer holds ``words(element, count)`` little-endian u32 words, element ``p`` in
bits ``bits·p mod 32`` … of word ``bits·p // 32``. Every read of it yields the element as a
number: the IR's arithmetic and views are unchanged, only the load is spelt differently
(each backend's ``packed`` table). The evaluators decode the whole buffer first.
"""

from __future__ import annotations

import functools
import math
import struct
from array import array
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Element:
    """A packed element type: ``bits`` wide, read as an unsigned or signed integer or an
    IEEE half."""

    name: str
    bits: int
    kind: str  # "unsigned", "signed" or "float"


ELEMENTS: dict[str, Element] = {
    e.name: e
    for e in (
        Element("u4", 4, "unsigned"),
        Element("u8", 8, "unsigned"),
        Element("i8", 8, "signed"),
        Element("u16", 16, "unsigned"),
        Element("f16", 16, "float"),
    )
}


def element(name: str) -> Element:
    """The element type called ``name`` (a clear error for any other)."""
    found = ELEMENTS.get(name)
    if found is None:
        raise ValueError(f"packed elements are {', '.join(ELEMENTS)}, not {name!r}")
    return found


def words(name: str, count: int) -> int:
    """The u32 words that hold ``count`` elements."""
    return max(1, -(-count * element(name).bits // 32))


@functools.cache
def f16_table() -> tuple[float, ...]:
    """Every f16 bit pattern's value (what the Python kernels index), built on first use."""
    return struct.unpack(f"<{1 << 16}e", array("H", range(1 << 16)).tobytes())


def half(bits: int) -> float:
    """The value of the IEEE half in the low 16 bits of ``bits`` (the Python kernels')."""
    return f16_table()[bits & 0xFFFF]


def as_words(value: Any, count: int, name: str, what: str = "input") -> Any:
    """The words holding ``count`` elements of type ``name``, from bytes-like data or an
    unsigned-integer array (numpy uint8/uint32, ``array('I')``): numpy uint32 when numpy
    is present, else ``array('I')``. The data may run on past them (a tensor cut from a
    file often does); short of them it is an error, but for the last word's padding."""
    need = 4 * words(name, count)
    raw = _bytes_of(value, what)
    held = -(-count * element(name).bits // 8)  # the bytes the elements themselves take
    if len(raw) < held:
        raise ValueError(f"{what}: {len(raw)} bytes, but {count} {name} elements need {held}")
    raw = raw[:need] if len(raw) >= need else memoryview(bytes(raw) + bytes(need - len(raw)))
    try:
        import numpy as np
    except ImportError:
        out = array("I")
        out.frombytes(bytes(raw))
        return out
    return np.frombuffer(raw, np.uint32)


def _bytes_of(value: Any, what: str) -> memoryview:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return memoryview(value).cast("B")
    if isinstance(value, array):
        if value.typecode not in "BHILQ":
            raise TypeError(f"{what}: packed words are unsigned, not array({value.typecode!r})")
        return memoryview(value).cast("B")
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.kind == "u":
        import numpy as np

        return memoryview(np.ascontiguousarray(value).reshape(-1).view(np.uint8))
    raise TypeError(
        f"{what}: a packed input is bytes or unsigned-integer words, not {type(value).__name__}"
    )


def decode(name: str, value: Any, count: int, what: str = "input") -> Any:
    """The first ``count`` elements of packed data as numbers: a float64 numpy array when
    numpy is present, else a list. Data that is already floats of ``count`` elements is
    taken as decoded (the evaluators' oracle passes its own decoding around)."""
    el = element(name)
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.kind == "f":
        if value.size != count:
            raise ValueError(f"{what}: {value.size} decoded elements, expected {count}")
        return value.reshape(-1)
    w = as_words(value, count, name, what)
    if isinstance(w, array):
        return _decode_python(el, w, count)
    import numpy as np

    raw = w.view(np.uint8)
    if el.kind == "float":
        out = raw.view("<f2")[:count]
    elif el.bits == 8:
        out = raw.view(np.int8 if el.kind == "signed" else np.uint8)[:count]
    elif el.bits == 16:
        out = raw.view("<u2")[:count]
    else:  # nibbles: the low one of each byte first
        out = np.stack([raw & 15, raw >> 4], axis=-1).reshape(-1)[:count]
    return out.astype(np.float64)


def _decode_python(el: Element, w: array, count: int) -> list[float]:
    raw = w.tobytes()
    if el.kind == "float":
        table = f16_table()
        return [table[h] for h in array("H", raw[: 2 * count])] if count else []
    if el.bits == 16:
        return [float(v) for v in array("H", raw[: 2 * count])]
    if el.bits == 8:
        data = raw[:count]
        return [float(b - 256 if el.kind == "signed" and b > 127 else b) for b in data]
    out = []
    for b in raw[: math.ceil(count / 2)]:
        out += (float(b & 15), float(b >> 4))
    return out[:count]


__all__ = ["ELEMENTS", "Element", "as_words", "decode", "element", "f16_table", "half", "words"]
