"""The CPU reference device: buffers are ``array.array`` (4-byte elements, like the GPU's),
kernels are Python functions ``fn(n, *bindings)`` run over the whole range (a buffer passes
as its array, a number as itself). Always available, pure Python; graph kernels come from
tang's Python printer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .base import Buffer, Device, Kernel, Limits
from .data import typecode
from .errors import DataError, ShaderError
from .wgsl_info import Binding


class CPUDevice(Device):
    """Runs Python kernels in this interpreter; no limits beyond memory."""

    kind = "cpu"
    printer = "python"  # graph kernels run here as tang's Python kernels

    def __init__(self) -> None:
        import platform

        super().__init__(f"Python {platform.python_version()} ({platform.machine()})", Limits())

    def _create_buffer(self, nbytes: int, usage: str) -> Any:
        return None  # allocated by _new_buffer below, where the dtype is known

    def _new_buffer(self, size: int, dtype: str, usage: str) -> Buffer:
        buf = super()._new_buffer(size, dtype, usage)
        from array import array

        buf.handle = array(typecode(dtype), bytes(size * 4))
        return buf

    def _write(self, buf: Buffer, raw: memoryview) -> None:
        memoryview(buf.handle).cast("B")[: raw.nbytes] = raw

    def _read(self, buf: Buffer) -> bytes:
        return buf.handle.tobytes()

    def _copy(self, src: Buffer, dst: Buffer, src_at: int, dst_at: int, nbytes: int) -> None:
        source, target = memoryview(src.handle).cast("B"), memoryview(dst.handle).cast("B")
        target[dst_at : dst_at + nbytes] = source[src_at : src_at + nbytes]

    def _prepare_kernel(self, source: Any, entry: str | None) -> tuple[str, None, Any]:
        self._check_alive()
        if isinstance(source, str):
            raise ShaderError("the CPU device runs Python kernels fn(n, *buffers), not WGSL text")
        if not callable(source):
            raise ShaderError(f"a CPU kernel is a Python function, got {type(source).__name__}")
        return f"py:{id(source)}:{getattr(source, '__qualname__', '')}", None, source

    def kernel(self, source: Callable[..., Any], entry: str | None = None) -> Kernel:
        """Wrap a Python function ``fn(n, *arrays)`` as a kernel (nothing to compile)."""
        key, _, _ = self._prepare_kernel(source, entry)
        cached = self._kernels.get(key)
        if cached is None or cached.handle is not source:
            cached = self._kernels[key] = Kernel(self, None, source, key)
            self.compiles += 1
        return cached

    def _bind(self, kernel: Kernel, bindings: Any) -> list[tuple[Binding, Any]]:
        """Buffers pass as their arrays, plain numbers (uniform values) as themselves."""
        if isinstance(bindings, Mapping):
            raise DataError("a CPU kernel takes its bindings as a list, in parameter order")
        out: list[tuple[Binding, Any]] = []
        for i, value in enumerate(bindings):
            if isinstance(value, Buffer):
                self._own(value)
                out.append((Binding(0, i, f"b{i}", value.usage, "read_write", value.dtype), value))
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append((Binding(0, i, f"b{i}", "uniform", "read", "number"), value))
            else:
                raise DataError(
                    f"binding {i} needs a Buffer or a number, got {type(value).__name__}"
                )
        return out

    def _dispatch(
        self, kernel: Kernel, bound: list[tuple[Binding, Any]], n: int, groups: tuple[int, int]
    ) -> None:
        kernel.handle(n, *(v.handle if isinstance(v, Buffer) else v for _, v in bound))
