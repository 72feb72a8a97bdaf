"""The Device API every backend shares: buffers, cached kernels, dispatch over N items and
read-back, with tang's own checks of the device limits before the driver is involved.

A backend subclass supplies the ``_``-prefixed primitives; everything a caller uses lives
here, so the page (WebGPU), the desktop (wgpu-py) and the CPU reference behave alike. In the
page the steps that wait on the GPU are awaited: ``await dev.kernel_async(src)``,
``await dev.read_async(buf)``; on the desktop both spellings work. Several buffers come
back with one wait: ``dev.read_many(bufs)`` (``await dev.read_many_async(bufs)``).

Several dispatches can share one command buffer and one submit: ``with dev.batch(): ...``
records each ``dispatch`` made in the block and submits them all when it ends (a read or write
in the block submits what is recorded first, so the results are those of dispatching one by
one). The CPU device runs each dispatch as it comes.

Kernels index items in two dimensions so more than 65,535 workgroups fit one dispatch::

    let i = gid.x + gid.y * (nwg.x * WORKGROUP_X);   // nwg = @builtin(num_workgroups)
    if (i >= n) { return; }
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

from .data import ITEMSIZE, pack, to_array, typecode
from .errors import DataError, DeviceLostError, GPUError, LimitError, ShaderError
from .wgsl_info import Binding, KernelInfo, inspect

UNLIMITED = sys.maxsize


@dataclass(frozen=True)
class Limits:
    """The device limits tang checks, named as in WebGPU (``WEBGPU_NAMES``)."""

    storage_buffers_per_stage: int = UNLIMITED
    max_storage_binding_size: int = UNLIMITED
    max_uniform_binding_size: int = UNLIMITED
    max_buffer_size: int = UNLIMITED
    max_invocations_per_workgroup: int = UNLIMITED
    max_workgroup_size_x: int = UNLIMITED
    max_workgroup_size_y: int = UNLIMITED
    max_workgroup_size_z: int = UNLIMITED
    max_workgroups_per_dimension: int = UNLIMITED

    @classmethod
    def from_webgpu(cls, get: Any) -> Limits:
        """Build from a getter of WebGPU limit names (camelCase)."""
        return cls(**{f.name: int(get(WEBGPU_NAMES[f.name])) for f in fields(cls)})

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# tang field -> the WebGPU limit name (JS spelling; wgpu-py uses the kebab-case of it).
WEBGPU_NAMES: dict[str, str] = {
    "storage_buffers_per_stage": "maxStorageBuffersPerShaderStage",
    "max_storage_binding_size": "maxStorageBufferBindingSize",
    "max_uniform_binding_size": "maxUniformBufferBindingSize",
    "max_buffer_size": "maxBufferSize",
    "max_invocations_per_workgroup": "maxComputeInvocationsPerWorkgroup",
    "max_workgroup_size_x": "maxComputeWorkgroupSizeX",
    "max_workgroup_size_y": "maxComputeWorkgroupSizeY",
    "max_workgroup_size_z": "maxComputeWorkgroupSizeZ",
    "max_workgroups_per_dimension": "maxComputeWorkgroupsPerDimension",
}


def kebab(name: str) -> str:
    """WebGPU's camelCase limit name as wgpu-py spells it (``max-buffer-size``)."""
    return "".join("-" + c.lower() if c.isupper() else c for c in name)


class Buffer:
    """``size`` elements of ``dtype`` on one device; ``usage`` is "storage" or "uniform"."""

    __slots__ = ("device", "dtype", "handle", "size", "usage")

    def __init__(self, device: Device, handle: Any, size: int, dtype: str, usage: str) -> None:
        self.device, self.handle, self.size, self.dtype, self.usage = (
            device,
            handle,
            size,
            dtype,
            usage,
        )

    @property
    def nbytes(self) -> int:
        return self.size * ITEMSIZE

    def release(self) -> None:
        """Free the device memory now rather than when the garbage collector gets to it."""
        if self.handle is not None and not self.device.lost:
            self.device.submit()  # recorded dispatches may use it
            self.device._free(self)
        self.handle = None

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"Buffer({self.size} x {self.dtype}, {self.usage}, {self.device.kind})"


class Kernel:
    """A compiled compute entry point (its pipeline cached on the device by source hash)."""

    __slots__ = ("device", "handle", "info", "key")

    def __init__(self, device: Device, info: KernelInfo | None, handle: Any, key: str) -> None:
        self.device, self.info, self.handle, self.key = device, info, handle, key

    @property
    def workgroup_x(self) -> int:
        return self.info.workgroup_size[0] if self.info else 1

    def __repr__(self) -> str:
        entry = self.info.entry if self.info else getattr(self.handle, "__name__", "?")
        return f"Kernel({entry}, {self.device.kind}, {self.key[:8]})"


def source_key(source: str, entry: str | None) -> str:
    """The cache key of a kernel: a hash of its text and entry point."""
    return hashlib.sha256(f"{entry}\0{source}".encode()).hexdigest()


def grid(n: int, workgroup_x: int, max_per_dim: int) -> tuple[int, int]:
    """Workgroups (x, y) covering ``n`` items: 1-D while it fits, else spread over y."""
    groups = -(-n // workgroup_x)
    if groups <= max_per_dim:
        return groups, 1
    y = -(-groups // max_per_dim)
    if y > max_per_dim:
        raise LimitError("workgroups per dimension", y, max_per_dim, f"a dispatch over {n:,} items")
    return -(-groups // y), y


class Device:
    """One compute device. Subclasses implement the primitives named ``_create_buffer``,
    ``_write``, ``_compile``, ``_dispatch``, ``_read`` (and async twins where needed), and
    ``_record``/``_submit`` where dispatches can share one submit."""

    kind = "abstract"
    printer = "wgsl"  # the tang.lower backend whose kernels this device runs

    def __init__(self, name: str, limits: Limits) -> None:
        self.name = name
        self.limits = limits
        self.skipped: list[tuple[str, str]] = []  # (backend, why it was not chosen)
        self.lost_reason: str | None = None
        self._kernels: dict[str, Kernel] = {}
        self.compiles = 0  # pipelines built (the cache keeps this at one per source)
        self.submits = 0  # command buffers submitted by dispatches (one per batch)
        self._batching = 0  # depth of nested ``batch`` blocks
        self._recorded = 0  # dispatches recorded in a batch and not submitted yet

    # ---- description ----
    @property
    def report(self) -> list[str]:
        """Lines for a person: the device chosen, then each backend skipped and why."""
        return [f"using {self.kind}: {self.name}"] + [f"{b}: {why}" for b, why in self.skipped]

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary (what the page shows)."""
        return {
            "kind": self.kind,
            "name": self.name,
            "skipped": [{"backend": b, "reason": why} for b, why in self.skipped],
            "report": self.report,
            "limits": self.limits.as_dict(),
        }

    def __repr__(self) -> str:
        return f"<tang.gpu {self.kind} device: {self.name}>"

    # ---- buffers ----
    def buffer(self, data: Any, dtype: str = "f32") -> Buffer:
        """A storage buffer holding ``data`` (sequence, array.array, numpy array, memoryview)."""
        raw = pack(data, dtype)
        buf = self.empty(raw.nbytes // ITEMSIZE, dtype)
        if raw.nbytes:
            self._guard(self._write, buf, raw)
        return buf

    def empty(self, size: int, dtype: str = "f32") -> Buffer:
        """A zero-filled storage buffer of ``size`` elements."""
        return self._new_buffer(size, dtype, "storage")

    def uniform(self, values: Any, dtype: str = "u32") -> Buffer:
        """A small uniform buffer (padded to 16 bytes) holding ``values``."""
        raw = pack([values] if isinstance(values, (int, float)) else values, dtype)
        padded = bytes(raw) + bytes(-raw.nbytes % 16)
        buf = self._new_buffer(len(padded) // ITEMSIZE, dtype, "uniform")
        self._guard(self._write, buf, memoryview(padded))
        return buf

    def _new_buffer(self, size: int, dtype: str, usage: str) -> Buffer:
        self._check_alive()
        typecode(dtype)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise DataError(f"a buffer size must be a non-negative int, got {size!r}")
        nbytes = max(size, 1) * ITEMSIZE
        if nbytes > self.limits.max_buffer_size:
            raise LimitError(
                "maxBufferSize", nbytes, self.limits.max_buffer_size, f"a {size:,}-element buffer"
            )
        handle = self._guard(self._create_buffer, nbytes, usage)
        return Buffer(self, handle, size, dtype, usage)

    def write(self, buf: Buffer, data: Any) -> None:
        """Overwrite ``buf`` from the start with ``data`` (same dtype, at most its size)."""
        raw = pack(data, buf.dtype)
        if raw.nbytes > buf.nbytes:
            raise DataError(f"{raw.nbytes // ITEMSIZE} elements do not fit a {buf.size} buffer")
        self.submit()  # recorded dispatches come before this write
        self._guard(self._write, buf, raw)

    def copy(
        self, src: Buffer, dst: Buffer, count: int, src_offset: int = 0, dst_offset: int = 0
    ) -> None:
        """Copy ``count`` elements of ``src`` from ``src_offset`` into ``dst`` at
        ``dst_offset``, on the device and in order with the dispatches around it (inside a
        ``batch``, recorded into the same submit): how a step appends its rows to a cache
        without a pass over the whole cache or a trip through the host."""
        for buf in (src, dst):
            self._own(buf)
        if src is dst:
            raise DataError("copy needs two different buffers")
        for name, v in (("count", count), ("src_offset", src_offset), ("dst_offset", dst_offset)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise DataError(f"copy: {name} must be a non-negative int, got {v!r}")
        for what, buf, start in (("source", src, src_offset), ("destination", dst, dst_offset)):
            if start + count > buf.size:
                raise DataError(
                    f"copy: elements {start} … {start + count - 1} are outside the "
                    f"{what}'s {buf.size}"
                )
        if count == 0:
            return
        span = (src_offset * ITEMSIZE, dst_offset * ITEMSIZE, count * ITEMSIZE)
        if self._batching:
            self._guard(self._record_copy, src, dst, *span)
            self._recorded += 1
        else:
            self._guard(self._copy, src, dst, *span)
            self.submits += 1

    def read(self, buf: Buffer) -> array:
        """The contents of ``buf`` as an ``array.array`` (waits for queued work)."""
        self._own(buf)
        self.submit()
        return to_array(self._guard(self._read, buf), buf.dtype)

    async def read_async(self, buf: Buffer) -> array:
        """``read``, awaitable (the page must use this one)."""
        return self.read(buf)

    def read_many(self, bufs: Sequence[Buffer]) -> list[array]:
        """The contents of every buffer in ``bufs``, in order: ``read`` of each, as one wait
        where the device can (a WebGPU device maps one staging buffer for them all)."""
        return [self.read(buf) for buf in bufs]

    async def read_many_async(self, bufs: Sequence[Buffer]) -> list[array]:
        """``read_many``, awaitable."""
        return self.read_many(bufs)

    # ---- kernels ----
    def kernel(self, source: Any, entry: str | None = None) -> Kernel:
        """Compile ``source`` once per device (cached by hash); returns the Kernel. ``source``
        is a kernel printed by ``tang.lower`` for this device's ``printer`` (it carries its
        bindings) or WGSL text (its declarations are read)."""
        key, info, text = self._prepare_kernel(source, entry)
        if key not in self._kernels:
            self._kernels[key] = Kernel(self, info, self._guard(self._compile, text, info), key)
            self.compiles += 1
        return self._kernels[key]

    async def kernel_async(self, source: Any, entry: str | None = None) -> Kernel:
        """``kernel``, awaitable (in the page compile errors arrive asynchronously)."""
        return self.kernel(source, entry)

    def _prepare_kernel(self, source: Any, entry: str | None) -> tuple[str, KernelInfo, Any]:
        """(cache key, entry point and bindings, the text to compile) of ``source``."""
        self._check_alive()
        info = getattr(source, "info", None)
        if isinstance(info, KernelInfo):  # printed by tang: it says what it binds
            if entry is not None and entry != info.entry:
                raise ShaderError(f"no compute entry point named {entry!r} (found {info.entry})")
            source = source.source
        else:
            info = inspect(source, entry)
        self._check_kernel(info)
        return source_key(source, info.entry), info, source

    def _check_kernel(self, info: KernelInfo) -> None:
        lim, what = self.limits, f"kernel {info.entry!r}"
        storage = len(info.storage)
        if storage > lim.storage_buffers_per_stage:
            raise LimitError(
                "maxStorageBuffersPerShaderStage", storage, lim.storage_buffers_per_stage, what
            )
        axes = ("X", "Y", "Z")
        maxima = (lim.max_workgroup_size_x, lim.max_workgroup_size_y, lim.max_workgroup_size_z)
        for axis, size, most in zip(axes, info.workgroup_size, maxima, strict=True):
            if size > most:
                raise LimitError(f"maxComputeWorkgroupSize{axis}", size, most, what)
        if info.invocations > lim.max_invocations_per_workgroup:
            raise LimitError(
                "maxComputeInvocationsPerWorkgroup",
                info.invocations,
                lim.max_invocations_per_workgroup,
                what,
            )

    # ---- dispatch ----
    def dispatch(self, kernel: Kernel, bindings: Sequence[Any] | Mapping[Any, Any], n: int) -> None:
        """Run ``kernel`` over ``n`` items. ``bindings`` lists buffers in binding order (or maps
        binding number / variable name to them); a plain number fills a uniform slot."""
        self._check_alive()
        if kernel.device is not self:
            raise GPUError("this kernel was compiled for another device")
        if not isinstance(n, int) or n < 0:
            raise DataError(f"the item count must be a non-negative int, got {n!r}")
        bound = self._bind(kernel, bindings)
        if n == 0:
            return
        x, y = grid(n, kernel.workgroup_x, self.limits.max_workgroups_per_dimension)
        if self._batching:
            self._guard(self._record, kernel, bound, n, (x, y))
            self._recorded += 1
        else:
            self._guard(self._dispatch, kernel, bound, n, (x, y))
            self.submits += 1

    @contextmanager
    def batch(self) -> Iterator[Device]:
        """Record the dispatches made in the block into one command buffer and submit it
        once when the block ends (blocks nest; the outermost submits). One submit instead
        of one per kernel is what a compiled graph's many small kernels need."""
        self._check_alive()
        self._batching += 1
        try:
            yield self
        finally:
            self._batching -= 1
            if not self._batching and not self.lost:
                self.submit()

    def submit(self) -> None:
        """Submit the dispatches recorded so far in a ``batch`` (nothing when there are none)."""
        if self._recorded:
            self._recorded = 0
            self._guard(self._submit)
            self.submits += 1

    def _bind(self, kernel: Kernel, bindings: Any) -> list[tuple[Binding, Buffer]]:
        info = kernel.info
        assert info is not None
        slots = info.bindings
        if isinstance(bindings, Mapping):
            by_key = {**{b.binding: b for b in slots}, **{b.name: b for b in slots}}
            pairs = []
            for key, value in bindings.items():
                if key not in by_key:
                    raise DataError(f"kernel {info.entry!r} has no binding {key!r}")
                pairs.append((by_key[key], value))
            missing = {b.name for b in slots} - {b.name for b, _ in pairs}
        else:
            bindings = list(bindings)
            if len(bindings) != len(slots):
                names = ", ".join(b.name for b in slots)
                raise DataError(
                    f"kernel {info.entry!r} binds {len(slots)} resources ({names}), "
                    f"got {len(bindings)}"
                )
            pairs, missing = list(zip(slots, bindings, strict=True)), set()
        if missing:
            raise DataError(f"kernel {info.entry!r}: nothing bound to {', '.join(sorted(missing))}")
        return [(slot, self._as_bound(slot, value)) for slot, value in pairs]

    def _as_bound(self, slot: Binding, value: Any) -> Buffer:
        if not isinstance(value, Buffer):
            if slot.space != "uniform":
                raise DataError(f"binding {slot.name!r} needs a Buffer, got {type(value).__name__}")
            value = self.uniform(value, "f32" if slot.type == "f32" else "u32")
        self._own(value)
        if value.usage != slot.space:
            raise DataError(f"binding {slot.name!r} is {slot.space}; got a {value.usage} buffer")
        self.check_binding(value.nbytes, f"binding {slot.name!r}", slot.space)
        return value

    def check_binding(self, nbytes: int, what: str, space: str = "storage") -> None:
        """LimitError unless ``nbytes`` can be bound as one ``space`` buffer on this device."""
        limit, name = (
            (self.limits.max_storage_binding_size, "maxStorageBufferBindingSize")
            if space == "storage"
            else (self.limits.max_uniform_binding_size, "maxUniformBufferBindingSize")
        )
        if nbytes > limit:
            raise LimitError(name, nbytes, limit, what)

    def run(self, kernel: Kernel, bindings: Any, n: int, out: Buffer | None = None) -> Any:
        """Dispatch, then read ``out`` back (if given): the one-call round trip."""
        self.dispatch(kernel, bindings, n)
        return self.read(out) if out is not None else None

    async def run_async(self, kernel: Kernel, bindings: Any, n: int, out: Buffer | None = None):
        """``run``, awaitable."""
        self.dispatch(kernel, bindings, n)
        return await self.read_async(out) if out is not None else None

    # ---- lifetime ----
    def destroy(self) -> None:
        """Release the device; later use raises DeviceLostError."""
        if self.lost_reason is None:
            self.lost_reason = "the device was destroyed"
            self._destroy()
        self._kernels.clear()

    @property
    def lost(self) -> bool:
        return self.lost_reason is not None

    def _check_alive(self) -> None:
        if self.lost_reason is not None:
            raise DeviceLostError(f"{self.kind} device lost: {self.lost_reason}")

    def _own(self, buf: Buffer) -> None:
        if not isinstance(buf, Buffer):
            raise DataError(f"expected a tang Buffer, got {type(buf).__name__}")
        if buf.device is not self:
            raise GPUError("this buffer belongs to another device")
        if buf.handle is None:
            raise GPUError("this buffer was released")
        self._check_alive()

    def _guard(self, fn: Any, *args: Any) -> Any:
        """Call a backend primitive, turning its native errors into the tang family."""
        try:
            return fn(*args)
        except GPUError:
            raise
        except Exception as exc:  # the backend's own error types
            raise self._translate(exc) from exc

    def _translate(self, exc: Exception) -> GPUError:
        return GPUError(f"{self.kind} device error: {exc}")

    # ---- primitives a backend implements ----
    def _create_buffer(self, nbytes: int, usage: str) -> Any:
        raise NotImplementedError

    def _write(self, buf: Buffer, raw: memoryview) -> None:
        raise NotImplementedError

    def _read(self, buf: Buffer) -> memoryview | bytes:
        raise NotImplementedError

    def _compile(self, source: Any, info: KernelInfo) -> Any:
        raise NotImplementedError

    def _dispatch(
        self, kernel: Kernel, bound: list[tuple[Binding, Buffer]], n: int, groups: tuple[int, int]
    ) -> None:
        raise NotImplementedError

    def _record(
        self, kernel: Kernel, bound: list[tuple[Binding, Buffer]], n: int, groups: tuple[int, int]
    ) -> None:
        """Record a dispatch for the next ``_submit`` (by default: run it now, in order)."""
        self._dispatch(kernel, bound, n, groups)

    def _copy(self, src: Buffer, dst: Buffer, src_at: int, dst_at: int, nbytes: int) -> None:
        """Copy ``nbytes`` bytes between two buffers now (offsets in bytes)."""
        raise NotImplementedError

    def _record_copy(self, src: Buffer, dst: Buffer, src_at: int, dst_at: int, nbytes: int) -> None:
        """Record a copy for the next ``_submit`` (by default: copy now, in order)."""
        self._copy(src, dst, src_at, dst_at, nbytes)

    def _submit(self) -> None:
        """Submit what ``_record`` recorded."""

    def _free(self, buf: Buffer) -> None:
        pass

    def _destroy(self) -> None:
        pass
