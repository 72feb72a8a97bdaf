"""The safetensors file format in pure Python (it runs in Pyodide): an 8-byte little-endian
header length, a JSON header ``{name: {"dtype", "shape", "data_offsets"}, "__metadata__":
{str: str}}``, then the tensors' bytes, back to back. Files read and write interchangeably
with Hugging Face's ``safetensors`` package.

Reading checks the whole header before decoding a byte, and every problem raises a
:class:`SafetensorsError` that says what is wrong and where.
"""

from __future__ import annotations

import json
import math
import os
import struct
import sys
from array import array
from collections.abc import Mapping
from typing import Any

from .backend import Backend, get_backend
from .tensor import Tensor, _flatten, _wrap

MAX_HEADER = 100_000_000  # the official reader's limit

# dtype → (array typecode, bytes per element); BF16 and F16 are decoded specially
DTYPES: dict[str, tuple[str, int]] = {
    "F64": ("d", 8),
    "F32": ("f", 4),
    "F16": ("e", 2),
    "BF16": ("H", 2),
    "I64": ("q", 8),
    "I32": ("i", 4),
    "I16": ("h", 2),
    "I8": ("b", 1),
    "U64": ("Q", 8),
    "U32": ("I", 4),
    "U16": ("H", 2),
    "U8": ("B", 1),
    "BOOL": ("B", 1),
}
KNOWN_UNSUPPORTED = {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"}
WRITABLE = ("F64", "F32")


class SafetensorsError(ValueError):
    """A safetensors file that cannot be read, with the reason."""


def _fail(message: str) -> SafetensorsError:
    return SafetensorsError(f"safetensors: {message}")


# -- writing --------------------------------------------------------------------------------------
def save(
    target: str | os.PathLike | Any | None,
    state: Mapping[str, Any] | Any,
    metadata: Mapping[str, str] | None = None,
    dtype: str = "F64",
) -> bytes:
    """Serialise ``state`` (name → tensor, nested list or numpy array; or a Module) and
    return the bytes; also write them to ``target`` (a path or a binary file) unless None."""
    if hasattr(state, "state_dict") and not isinstance(state, Mapping):
        state = state.state_dict()
    if dtype not in WRITABLE:
        raise ValueError(f"save: dtype must be one of {WRITABLE}, not {dtype!r}")
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"save: metadata must map str to str, got {k!r}: {v!r}")
    code = DTYPES[dtype][0]
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    chunks = []
    offset = 0
    for name, value in state.items():
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise ValueError(f"save: tensor name {name!r} is not allowed")
        flat, shape = _values(value)
        buf = array(code, flat)
        if sys.byteorder != "little":
            buf.byteswap()
        raw = buf.tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    text += b" " * (-len(text) % 8)  # pad so the data starts 8-byte aligned
    blob = struct.pack("<Q", len(text)) + text + b"".join(chunks)
    if target is not None:
        if hasattr(target, "write"):
            target.write(blob)
        else:
            with open(target, "wb") as f:
                f.write(blob)
    return blob


def _values(value: Any) -> tuple[list[float], tuple[int, ...]]:
    if isinstance(value, Tensor):
        return value.flat(), value.shape
    if hasattr(value, "shape") and hasattr(value, "tolist"):  # numpy
        return [float(v) for v in value.reshape(-1).tolist()], tuple(value.shape)
    return _flatten(value)


# -- reading --------------------------------------------------------------------------------------
def load(
    source: bytes | bytearray | memoryview | str | os.PathLike | Any,
    backend: str | Backend | None = None,
    with_metadata: bool = False,
) -> dict[str, Tensor] | tuple[dict[str, Tensor], dict[str, str]]:
    """Read a safetensors file (bytes, a path or a binary file) into name → float64 Tensor
    (with the ``__metadata__`` dict too when ``with_metadata``)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        blob = bytes(source)
    elif hasattr(source, "read"):
        blob = source.read()
    else:
        with open(source, "rb") as f:
            blob = f.read()
    entries, metadata, start = parse_header(blob)
    B = get_backend(backend)
    out = {}
    for name, dtype, shape, (lo, hi) in entries:
        flat = _decode(blob[start + lo : start + hi], dtype, name)
        out[name] = _wrap(B, B.from_flat(flat, shape))
    return (out, metadata) if with_metadata else out


def parse_header(
    blob: bytes,
) -> tuple[list[tuple[str, str, tuple[int, ...], tuple[int, int]]], dict[str, str], int]:
    """Check a file's framing and header: (entries sorted by offset, metadata, data start)."""
    if len(blob) < 8:
        raise _fail(f"file is {len(blob)} bytes, too short for the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER:
        raise _fail(f"header length {n} is over the {MAX_HEADER}-byte limit (corrupt length?)")
    if 8 + n > len(blob):
        raise _fail(
            f"header length {n} runs past the end of the file ({len(blob) - 8} bytes follow it)"
        )
    raw = blob[8 : 8 + n]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(f"header is not UTF-8 (byte {exc.start} of the header)") from None
    if not text.lstrip().startswith("{"):
        raise _fail("header does not start with '{' (not a JSON object)")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise _fail(f"header names {k!r} twice")
            out[k] = v
        return out

    try:
        header = json.loads(text, object_pairs_hook=no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise _fail(
            f"header is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    if not isinstance(header, dict):
        raise _fail(f"header is a JSON {type(header).__name__}, not an object")
    metadata = header.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _fail("__metadata__ must be an object of strings")
    data_len = len(blob) - 8 - n
    entries = []
    for name, info in header.items():
        entries.append(_entry(name, info, data_len))
    entries.sort(key=lambda e: (e[3][0], e[3][1]))
    end = 0
    for name, _, _, (lo, hi) in entries:
        if lo < end:
            raise _fail(
                f"tensor {name!r} at bytes {lo}..{hi} overlaps the tensor before it (ends at {end})"
            )
        if lo > end:
            raise _fail(
                f"gap of {lo - end} bytes before tensor {name!r}: data ranges must be contiguous"
            )
        end = hi
    if end != data_len:
        raise _fail(
            f"{data_len - end} bytes after the last tensor belong to none "
            f"(data is {data_len} bytes)"
        )
    return entries, metadata, 8 + n


def _no_constant(name: str) -> Any:
    raise _fail(f"header holds {name}, which is not JSON")


def _entry(
    name: str, info: Any, data_len: int
) -> tuple[str, str, tuple[int, ...], tuple[int, int]]:
    if not name:
        raise _fail("a tensor has an empty name")
    if not isinstance(info, dict):
        raise _fail(f"entry for tensor {name!r} is a {type(info).__name__}, not an object")
    for key in ("dtype", "shape", "data_offsets"):
        if key not in info:
            raise _fail(f"tensor {name!r} has no {key!r}")
    dtype = info["dtype"]
    if not isinstance(dtype, str):
        raise _fail(f"tensor {name!r} has dtype {dtype!r}, not a string")
    if dtype not in DTYPES:
        if dtype in KNOWN_UNSUPPORTED:
            raise _fail(f"tensor {name!r} has dtype {dtype}, which tang.nn cannot read")
        raise _fail(f"tensor {name!r} has unknown dtype {dtype!r}")
    shape = info["shape"]
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise _fail(f"tensor {name!r} has shape {shape!r}: it must be a list of integers ≥ 0")
    offsets = info["data_offsets"]
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(v) for v in offsets):
        raise _fail(
            f"tensor {name!r} has data_offsets {offsets!r}: it must be [begin, end] integers"
        )
    lo, hi = offsets
    if lo < 0 or hi < lo:
        raise _fail(f"tensor {name!r} has data_offsets [{lo}, {hi}]: begin must be ≥ 0 and ≤ end")
    if hi > data_len:
        raise _fail(
            f"tensor {name!r} ends at byte {hi}, past the end of the data ({data_len} bytes)"
        )
    need = math.prod(shape) * DTYPES[dtype][1]
    if hi - lo != need:
        raise _fail(
            f"tensor {name!r} is {hi - lo} bytes but dtype {dtype} shape {shape} needs {need}"
        )
    return name, dtype, tuple(shape), (lo, hi)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _decode(raw: bytes, dtype: str, name: str) -> list[float]:
    code, _ = DTYPES[dtype]
    if dtype == "F16":
        return [float(v) for v in struct.unpack(f"<{len(raw) // 2}e", raw)]
    buf = array(code)
    buf.frombytes(raw)
    if sys.byteorder != "little":
        buf.byteswap()
    if dtype == "BF16":
        wide = array("I", [v << 16 for v in buf])
        return array("f", wide.tobytes()).tolist()
    if dtype == "BOOL":
        for v in buf:
            if v > 1:
                raise _fail(f"tensor {name!r} is BOOL but holds the byte {v}")
    return [float(v) for v in buf]
