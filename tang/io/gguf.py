"""Read GGUF files (llama.cpp's model format) with the standard library only.

A GGUF file is a header (magic ``GGUF``, version, tensor count, key/value count), typed
key/value metadata, one info record per tensor (name, ggml dims, type, offset) and, from the
next multiple of ``general.alignment`` (default 32), the tensor data. ``read`` parses and
checks all of it before returning; the tensor bytes stay in the file (memory-mapped where
the platform allows, Pyodide included; read whole where mmap is missing or fails).

Every malformed file is refused with a ``GGUFError`` naming the byte offset and the reason,
and every count read from the file is bounded by the bytes left before anything is
allocated for it: a header claiming 2**60 tensors fails at once.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import struct
from dataclasses import dataclass
from typing import Any

from .quant import BY_ID, dequantize, dequantize_numpy

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
MAX_ARRAY_DEPTH = 8  # arrays of arrays of ... deeper than this are refused
HEADER_BYTES = 24  # magic, version (u32), tensor count (u64), key/value count (u64)
MIN_KV_BYTES = 8 + 4 + 1  # key length, value type, the smallest value
MIN_TENSOR_INFO_BYTES = 8 + 4 + 8 + 4 + 8  # name length, n_dims, one dim, type, offset
INT64_MAX = 2**63 - 1

# GGUF metadata value types: id -> (name, struct code, bytes; for STRING and ARRAY the
# bytes of the smallest encoding, its length fields).
VALUE_TYPES: dict[int, tuple[str, str, int]] = {
    0: ("UINT8", "B", 1),
    1: ("INT8", "b", 1),
    2: ("UINT16", "H", 2),
    3: ("INT16", "h", 2),
    4: ("UINT32", "I", 4),
    5: ("INT32", "i", 4),
    6: ("FLOAT32", "f", 4),
    7: ("BOOL", "?", 1),
    8: ("STRING", "", 8),
    9: ("ARRAY", "", 12),
    10: ("UINT64", "Q", 8),
    11: ("INT64", "q", 8),
    12: ("FLOAT64", "d", 8),
}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    """A malformed or unsupported GGUF file; ``offset`` is the byte where the problem is."""

    def __init__(self, where: str, offset: int, reason: str):
        super().__init__(f"{where}: byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason


@dataclass(frozen=True)
class TensorInfo:
    """One tensor: ``shape`` in row-major (numpy) order, ``dims`` as ggml stores them (ne)."""

    name: str
    shape: tuple[int, ...]
    dims: tuple[int, ...]
    type: str
    type_id: int
    offset: int  # absolute, in the file
    nbytes: int
    count: int


class GGUFFile:
    """A parsed GGUF file: metadata, tensor infos, and the tensors' bytes on demand."""

    def __init__(
        self,
        where: str,
        view: memoryview,
        mapping: Any,
        version: int,
        alignment: int,
        data_offset: int,
        metadata: dict[str, Any],
        metadata_types: dict[str, tuple[str, ...]],
        tensors: dict[str, TensorInfo],
    ):
        self.where = where
        self.version = version
        self.alignment = alignment
        self.data_offset = data_offset
        self.size = len(view)
        self.metadata = metadata
        self.metadata_types = metadata_types
        self.tensors = tensors
        self._view: memoryview | None = view
        self._mapping = mapping

    def data(self, name: str) -> memoryview:
        """The raw bytes of tensor ``name``: a zero-copy view of the file."""
        if self._view is None:
            raise ValueError(f"{self.where}: the GGUF file is closed")
        info = self.tensors[name]
        return self._view[info.offset : info.offset + info.nbytes]

    def tensor(self, name: str) -> Any:
        """Tensor ``name`` dequantized to float32: a numpy array of its shape when numpy is
        installed, else a flat ``array('f')``."""
        info = self.tensors[name]
        try:
            import numpy  # noqa: F401
        except ImportError:
            return dequantize(self.data(name), info.type, info.count)
        return dequantize_numpy(self.data(name), info.type, info.count).reshape(info.shape)

    def close(self) -> None:
        """Release the file; views from ``data`` that are still alive keep the mapping open."""
        view, self._view = self._view, None
        if view is not None:
            view.release()
        if self._mapping is not None:
            with contextlib.suppress(BufferError):  # a view is still held: it keeps the map
                self._mapping.close()
            self._mapping = None

    def __enter__(self) -> GGUFFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<GGUFFile {self.where} v{self.version}: {len(self.metadata)} keys, "
            f"{len(self.tensors)} tensors>"
        )


def read(source: str | os.PathLike | bytes | bytearray | memoryview) -> GGUFFile:
    """Parse and check a GGUF file (a path, or its bytes); raises GGUFError if malformed."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        return _Parser("GGUF bytes", view, None).parse()
    path = os.fspath(source)
    view, mapping = _open(path)
    try:
        return _Parser(str(path), view, mapping).parse()
    except BaseException:
        view.release()
        if mapping is not None:
            mapping.close()
        raise


def _open(path: str) -> tuple[memoryview, Any]:
    """The file's bytes: memory-mapped where possible, else read whole (Pyodide)."""
    with open(path, "rb") as f:
        try:
            import mmap

            mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ImportError, AttributeError, OSError, ValueError):  # no mmap, or empty
            return memoryview(f.read()), None
    return memoryview(mapping), mapping


class _Parser:
    """One pass over the bytes; every read is bounds-checked first."""

    def __init__(self, where: str, buf: memoryview, mapping: Any):
        self.where = where
        self.buf = buf
        self.size = len(buf)
        self.mapping = mapping

    def fail(self, offset: int, reason: str) -> GGUFError:
        return GGUFError(self.where, offset, reason)

    def need(self, pos: int, n: int, what: str) -> None:
        if n > self.size - pos:
            raise self.fail(
                pos, f"truncated: {what} needs {n} bytes, the file has {self.size - pos} left"
            )

    def u32(self, pos: int, what: str) -> int:
        self.need(pos, 4, what)
        return struct.unpack_from("<I", self.buf, pos)[0]

    def u64(self, pos: int, what: str) -> int:
        self.need(pos, 8, what)
        return struct.unpack_from("<Q", self.buf, pos)[0]

    def string(self, pos: int, what: str) -> tuple[str, int]:
        n = self.u64(pos, f"the length of {what}")
        if n > self.size - pos - 8:
            raise self.fail(
                pos,
                f"{what}: string length {n} runs past the end of the file "
                f"({self.size - pos - 8} bytes left)",
            )
        return self.decode(pos, n, what), pos + 8 + n

    def decode(self, pos: int, n: int, what: str) -> str:
        try:
            return str(self.buf[pos + 8 : pos + 8 + n], "utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(
                pos, f"{what} is not valid UTF-8 ({exc.reason} at string byte {exc.start})"
            ) from None

    # ---- header and metadata -----------------------------------------------------------

    def parse(self) -> GGUFFile:
        size = self.size
        if size < 4:
            raise self.fail(0, f"{size} bytes is too short for a GGUF file (magic 'GGUF' first)")
        magic = bytes(self.buf[:4])
        if magic != MAGIC:
            raise self.fail(0, f"bad magic {magic!r}: not a GGUF file (expected b'GGUF')")
        version = self.u32(4, "the version")
        if version not in VERSIONS:
            if int.from_bytes(version.to_bytes(4, "little"), "big") in VERSIONS:
                raise self.fail(4, "big-endian GGUF files are not supported")
            raise self.fail(4, f"unsupported GGUF version {version} (reads versions 2 and 3)")
        self.need(0, HEADER_BYTES, "the header")
        tensor_count, kv_count = struct.unpack_from("<QQ", self.buf, 8)
        left = size - HEADER_BYTES
        if kv_count > left // MIN_KV_BYTES:
            raise self.fail(
                16,
                f"metadata count {kv_count} cannot fit: each key/value takes at least "
                f"{MIN_KV_BYTES} bytes and {left} bytes follow the header",
            )
        left -= kv_count * MIN_KV_BYTES
        if tensor_count > left // MIN_TENSOR_INFO_BYTES:
            raise self.fail(
                8,
                f"tensor count {tensor_count} cannot fit: each tensor info takes at least "
                f"{MIN_TENSOR_INFO_BYTES} bytes and at most {left} bytes are left for them",
            )

        metadata: dict[str, Any] = {}
        types: dict[str, tuple[str, ...]] = {}
        at: dict[str, int] = {}  # where each key's value starts
        pos = HEADER_BYTES
        for _ in range(kv_count):
            start = pos
            key, pos = self.string(pos, "a metadata key")
            if key in metadata:
                raise self.fail(start, f"duplicate metadata key {key!r}")
            type_id = self.u32(pos, f"the value type of {key!r}")
            at[key] = pos
            metadata[key], types[key], pos = self.value(pos + 4, type_id, key, 0)

        alignment = DEFAULT_ALIGNMENT
        if "general.alignment" in metadata:
            kind = "/".join(types["general.alignment"])
            if kind != "UINT32":
                raise self.fail(
                    at["general.alignment"], f"general.alignment must be a UINT32, not {kind}"
                )
            alignment = metadata["general.alignment"]
            if alignment <= 0 or alignment & (alignment - 1):
                raise self.fail(
                    at["general.alignment"] + 4,
                    f"general.alignment = {alignment} is not a power of two",
                )

        if tensor_count > (size - pos) // MIN_TENSOR_INFO_BYTES:
            raise self.fail(
                8,
                f"tensor count {tensor_count} cannot fit: each tensor info takes at least "
                f"{MIN_TENSOR_INFO_BYTES} bytes and {size - pos} bytes follow the metadata",
            )
        infos, pos = self.tensor_infos(pos, tensor_count, alignment)
        data_offset = pos + (-pos) % alignment
        tensors = self.place(infos, data_offset)
        return GGUFFile(
            self.where,
            self.buf,
            self.mapping,
            version,
            alignment,
            data_offset,
            metadata,
            types,
            tensors,
        )

    def value(self, pos: int, type_id: int, key: str, depth: int) -> tuple[Any, tuple, int]:
        """(value, its type names, the position after it) for a value of ``type_id``."""
        kind = VALUE_TYPES.get(type_id)
        if kind is None:
            raise self.fail(pos - 4, f"{key!r} has unknown metadata value type {type_id}")
        name, code, nbytes = kind
        if code:
            self.need(pos, nbytes, f"the {name} value of {key!r}")
            return struct.unpack_from("<" + code, self.buf, pos)[0], (name,), pos + nbytes
        if type_id == _STRING:
            text, pos = self.string(pos, f"the value of {key!r}")
            return text, (name,), pos
        return self.array(pos, key, depth)

    def array(self, pos: int, key: str, depth: int) -> tuple[list, tuple, int]:
        if depth >= MAX_ARRAY_DEPTH:
            raise self.fail(
                pos, f"{key!r}: arrays nested deeper than {MAX_ARRAY_DEPTH} are refused"
            )
        item_type = self.u32(pos, f"the item type of array {key!r}")
        n = self.u64(pos + 4, f"the length of array {key!r}")
        kind = VALUE_TYPES.get(item_type)
        if kind is None:
            raise self.fail(pos, f"array {key!r} has unknown item type {item_type}")
        name, code, nbytes = kind
        start, pos = pos, pos + 12
        if n > (self.size - pos) // nbytes:
            raise self.fail(
                start + 4,
                f"array {key!r} of {n} {name} items runs past the end of the file "
                f"(each takes at least {nbytes} bytes, {self.size - pos} bytes left)",
            )
        if code:
            items = list(struct.unpack_from(f"<{n}{code}", self.buf, pos))
            return items, ("ARRAY", name), pos + n * nbytes
        if item_type == _STRING:
            return self.strings(pos, n, key)
        items, inner = [], ("ARRAY",)
        for i in range(n):
            item, item_types, pos = self.array(pos, key, depth + 1)
            items.append(item)
            if i == 0:
                inner = item_types
        return items, ("ARRAY", *inner), pos

    def strings(self, pos: int, n: int, key: str) -> tuple[list[str], tuple, int]:
        """An array of ``n`` strings (token lists: ~50k of them, so the loop is tight)."""
        buf, size, unpack = self.buf, self.size, struct.Struct("<Q").unpack_from
        items = []
        append = items.append
        for i in range(n):
            if size - pos < 8:
                self.need(pos, 8, f"the length of string {i} of {key!r}")
            (length,) = unpack(buf, pos)
            end = pos + 8 + length
            if end > size:
                raise self.fail(
                    pos,
                    f"string {i} of {key!r}: length {length} runs past the end of the "
                    f"file ({size - pos - 8} bytes left)",
                )
            try:
                append(str(buf[pos + 8 : end], "utf-8"))
            except UnicodeDecodeError:
                append(self.decode(pos, length, f"string {i} of {key!r}"))
            pos = end
        return items, ("ARRAY", "STRING"), pos

    # ---- tensor infos --------------------------------------------------------------------

    def tensor_infos(self, pos: int, count: int, alignment: int) -> tuple[list, int]:
        """(name, dims, format, element count, relative offset, where its record starts)."""
        infos: list[tuple] = []
        seen: set[str] = set()
        for _ in range(count):
            start = pos
            name, pos = self.string(pos, "a tensor name")
            if name in seen:
                raise self.fail(start, f"duplicate tensor name {name!r}")
            seen.add(name)
            n_dims = self.u32(pos, f"the dimension count of tensor {name!r}")
            if not 1 <= n_dims <= MAX_DIMS:
                raise self.fail(
                    pos, f"tensor {name!r} has {n_dims} dimensions (ggml allows 1 to {MAX_DIMS})"
                )
            pos += 4
            self.need(pos, 8 * n_dims, f"the dimensions of tensor {name!r}")
            dims = struct.unpack_from(f"<{n_dims}Q", self.buf, pos)
            count_ = 1
            for k, ne in enumerate(dims):
                if ne == 0:
                    raise self.fail(pos + 8 * k, f"tensor {name!r} dimension {k} is zero")
                if ne > INT64_MAX:
                    raise self.fail(
                        pos + 8 * k,
                        f"tensor {name!r} dimension {k} is {ne}: negative as ggml's int64",
                    )
                count_ *= ne
            if count_ > INT64_MAX:
                raise self.fail(
                    pos, f"tensor {name!r} element count {count_} overflows int64 (dims {dims})"
                )
            pos += 8 * n_dims
            type_id = self.u32(pos, f"the type of tensor {name!r}")
            fmt = BY_ID.get(type_id)
            if fmt is None:
                raise self.fail(pos, f"tensor {name!r} has unknown ggml type id {type_id}")
            if dims[0] % fmt.block_size:
                raise self.fail(
                    pos,
                    f"tensor {name!r}: a row of {dims[0]} elements is not a whole number "
                    f"of {fmt.name} blocks of {fmt.block_size}",
                )
            offset = self.u64(pos + 4, f"the data offset of tensor {name!r}")
            if offset % alignment:
                raise self.fail(
                    pos + 4,
                    f"tensor {name!r} data offset {offset} is not a multiple of the "
                    f"alignment {alignment}",
                )
            infos.append((name, dims, fmt, count_, offset, start))
            pos += 12
        return infos, pos

    def place(self, infos: list[tuple], data_offset: int) -> dict[str, TensorInfo]:
        """TensorInfos in file order, checked to lie inside the file without overlapping."""
        tensors: dict[str, TensorInfo] = {}
        starts: dict[str, int] = {}
        for name, dims, fmt, count, offset, start in infos:
            info = TensorInfo(
                name=name,
                shape=tuple(reversed(dims)),
                dims=tuple(dims),
                type=fmt.name,
                type_id=fmt.id,
                offset=data_offset + offset,
                nbytes=fmt.nbytes(count),
                count=count,
            )
            end = info.offset + info.nbytes
            if end > self.size:
                raise self.fail(
                    start,
                    f"tensor {name!r} data (bytes {info.offset} to {end}) runs past "
                    f"the end of the file ({self.size} bytes)",
                )
            tensors[name] = info
            starts[name] = start
        ordered = sorted(tensors.values(), key=lambda t: t.offset)
        for a, b in itertools.pairwise(ordered):
            if b.offset < a.offset + a.nbytes:
                raise self.fail(
                    starts[b.name],
                    f"tensor {b.name!r} data (from byte {b.offset}) overlaps "
                    f"tensor {a.name!r} (bytes {a.offset} to {a.offset + a.nbytes})",
                )
        return tensors
