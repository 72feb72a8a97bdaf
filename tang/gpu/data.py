"""Turn Python sequences, ``array.array``, numpy arrays and memoryviews into packed 4-byte
element data for a buffer, with an error naming the first bad element."""

from __future__ import annotations

import math
from array import array
from typing import Any

from .errors import DataError

# dtype -> array typecode; every tang GPU element is 4 bytes wide.
TYPECODES: dict[str, str] = {"f32": "f", "u32": "I", "i32": "i"}
NUMPY_DTYPES: dict[str, str] = {"f32": "float32", "u32": "uint32", "i32": "int32"}
ITEMSIZE = 4
_INT_RANGE = {"u32": (0, 2**32 - 1), "i32": (-(2**31), 2**31 - 1)}


def typecode(dtype: str) -> str:
    """The ``array`` typecode of a tang dtype (f32, u32, i32)."""
    try:
        return TYPECODES[dtype]
    except KeyError:
        raise DataError(f"unknown dtype {dtype!r}; use one of {', '.join(TYPECODES)}") from None


def pack(data: Any, dtype: str = "f32") -> memoryview:
    """``data`` as a contiguous byte view of 4-byte ``dtype`` elements (copying only when the
    element type or layout differs)."""
    code = typecode(dtype)
    if isinstance(data, str):
        raise DataError(f"expected numbers for a {dtype} buffer, got a string")
    if isinstance(data, (bytes, bytearray)):
        return _raw_bytes(memoryview(data), dtype)
    if hasattr(data, "__array_interface__") and type(data).__module__.startswith("numpy"):
        return _from_numpy(data, dtype)
    if isinstance(data, array):
        if data.typecode == code:
            return memoryview(data).cast("B")
        return memoryview(_from_sequence(data.tolist(), dtype)).cast("B")
    if isinstance(data, memoryview):
        if data.format == code and data.c_contiguous and data.ndim == 1:
            return data.cast("B")
        if data.format in ("B", "b", "c") and data.ndim == 1:
            return _raw_bytes(data, dtype)
        return memoryview(_from_sequence(data.tolist(), dtype)).cast("B")
    if isinstance(data, (int, float)):
        raise DataError(f"expected a sequence of numbers for a {dtype} buffer, got one number")
    try:
        items = list(data)
    except TypeError:
        raise DataError(
            f"expected a sequence of numbers for a {dtype} buffer, got {type(data).__name__}"
        ) from None
    return memoryview(_from_sequence(items, dtype)).cast("B")


def _raw_bytes(view: memoryview, dtype: str) -> memoryview:
    if view.nbytes % ITEMSIZE:
        raise DataError(f"{view.nbytes} raw bytes is not a whole number of {dtype} elements")
    return view.cast("B")


def _from_numpy(data: Any, dtype: str) -> memoryview:
    import numpy as np  # only reached when the caller already uses numpy

    if data.dtype.kind not in "biuf":
        raise DataError(f"a numpy array of {data.dtype} cannot fill a {dtype} buffer")
    flat = np.ascontiguousarray(data, dtype=NUMPY_DTYPES[dtype]).reshape(-1)
    return memoryview(flat).cast("B")


def _from_sequence(items: list, dtype: str) -> array:
    code = TYPECODES[dtype]
    for i, x in enumerate(items):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            if _is_numpy_scalar(x):
                continue
            raise DataError(f"element {i} is {x!r} ({type(x).__name__}), not a number")
        if dtype != "f32":
            if isinstance(x, float) and not (math.isfinite(x) and x == int(x)):
                raise DataError(f"element {i} is {x!r}, not an integer for a {dtype} buffer")
            lo, hi = _INT_RANGE[dtype]
            if not lo <= x <= hi:
                raise DataError(f"element {i} = {x!r} does not fit {dtype}")
    if dtype != "f32":
        items = [int(x) for x in items]
    return array(code, items)


def _is_numpy_scalar(x: Any) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "dtype") and x.dtype.kind in "biuf"


def to_array(view: memoryview | bytes, dtype: str) -> array:
    """Bytes read back from a device as an ``array`` of ``dtype``."""
    out = array(typecode(dtype))
    out.frombytes(view)
    return out
