"""The one WebGPU path behind the page's device (``browser.py``, WebGPU through Pyodide's
``js`` module) and the desktop's (``native.py``, wgpu-py): buffers, uploads, the pipeline
cache, bind groups, compute passes (one per dispatch, or a batch's dispatches recorded into
one pass of one command buffer), submission, read-back (any number of buffers through one
mapped staging buffer) and the mapping of errors, written once against a ``Spelling``.

The two bindings are the same API in two spellings. This module names every call as wgpu-py
does (WebGPU's names in snake_case, a descriptor as keyword arguments); a ``Spelling`` says
how its binding writes them (the JS API: camelCase, one JS object per descriptor), how a list
and uploaded bytes cross to it, how its limits are named, and how a step that answers with a
promise is waited for where the caller cannot ``await``. Methods with a one-word name
(``end``, ``finish``, ``destroy``) are called directly: both spell them alike.

Every step that may wait on the GPU (compiling, reading back) is a coroutine here: the page
awaits it; wgpu-py's calls block, so on the desktop the coroutine finishes without suspending
and the plain spellings (``dev.kernel``, ``dev.read``) run it to the end.
"""

from __future__ import annotations

from array import array
from collections.abc import Awaitable, Coroutine, Sequence
from itertools import accumulate
from typing import Any

from .base import WEBGPU_NAMES, Buffer, Device, Kernel, Limits, kebab
from .data import to_array
from .errors import DeviceLostError, GPUError
from .wgsl_info import Binding, KernelInfo

# Limits tang raises from the WebGPU defaults to what the adapter offers (the defaults in
# compatibility mode, 4 storage buffers and 128 invocations, are small).
RAISED_LIMITS = (
    "storage_buffers_per_stage",
    "max_storage_binding_size",
    "max_buffer_size",
    "max_invocations_per_workgroup",
    "max_workgroup_size_x",
)

BIND_GROUPS_KEPT = 4096  # the bind-group cache starts over beyond this many


class Spelling:
    """How one WebGPU binding spells the calls the shared path makes: as written, wgpu-py's
    (a binding with other spellings overrides what differs)."""

    def __init__(self, flags: Any) -> None:
        self.flags = flags  # the buffer usage flags: STORAGE, UNIFORM, COPY_SRC, COPY_DST

    def call(self, obj: Any, method: str, *args: Any, **descriptor: Any) -> Any:
        """``obj.method(*args, **descriptor)``, ``method`` named as wgpu-py names it."""
        return getattr(obj, method)(*args, **descriptor)

    def seq(self, items: list[Any]) -> Any:
        """A Python list as the binding takes a sequence argument."""
        return items

    def upload(self, raw: memoryview) -> Any:
        """Bytes as the binding's ``write_buffer`` takes them."""
        return raw

    def limit(self, limits: Any, name: str) -> int:
        """The limit WebGPU names ``name`` (camelCase) from a device's or adapter's limits."""
        return limits[self.limit_key(name)]

    def limit_key(self, name: str) -> str:
        """WebGPU's limit ``name`` as the binding's ``required_limits`` spells it."""
        return kebab(name)

    def wait(self, step: Coroutine[Any, Any, Any], spelling: str) -> Any:
        """The result of ``step`` for a caller that cannot await: wgpu-py's calls block, so it
        finishes without suspending (``spelling`` names the awaitable form, for errors)."""
        try:
            step.send(None)
        except StopIteration as done:
            return done.value
        step.close()
        raise GPUError(f"{spelling} waited on something that does not block; await it")


class WebGPUDevice(Device):
    """A WebGPU device (``_dev``) driven through a ``Spelling``. A subclass opens it, names
    it and supplies the steps its binding does differently: ``_pipeline`` (compile and
    validate a kernel) and ``_map_read`` (wait for a mappable buffer and copy its bytes)."""

    api = "WebGPU"  # how errors name the API

    def __init__(self, name: str, device: Any, spelling: Spelling) -> None:
        super().__init__(name, Limits.from_webgpu(lambda n: spelling.limit(device.limits, n)))
        self.spelling, self._dev, self._queue = spelling, device, device.queue
        flags = spelling.flags
        self._usage = {
            "storage": flags.STORAGE | flags.COPY_SRC | flags.COPY_DST,
            "uniform": flags.UNIFORM | flags.COPY_DST,
        }
        self._encoder: Any = None  # the command encoder a ``batch`` records into
        self._pass: Any = None  # the compute pass open on it: a batch's dispatches share one
        # bind groups by (pipeline, group, buffers): a compiled graph binds the same buffers
        # every call; each entry keeps its pipeline and buffers alive, so ids stay unique
        self._bind_groups: dict[tuple, tuple] = {}
        self._errors: list[str] = []  # errors the device reported on its own, not yet raised

    # ---- buffers ----
    def _create_buffer(self, nbytes: int, usage: str) -> Any:
        return self.spelling.call(self._dev, "create_buffer", size=nbytes, usage=self._usage[usage])

    def _write(self, buf: Buffer, raw: memoryview) -> None:
        self.spelling.call(self._queue, "write_buffer", buf.handle, 0, self.spelling.upload(raw))

    def _free(self, buf: Buffer) -> None:
        self._bind_groups = {
            k: v for k, v in self._bind_groups.items() if all(b is not buf for _, b in v[2])
        }
        buf.handle.destroy()

    def _destroy(self) -> None:
        self._bind_groups.clear()
        self._dev.destroy()

    # ---- kernels: the pipeline cache ----
    def kernel(self, source: Any, entry: str | None = None) -> Kernel:
        """Compile ``source`` once per device (cached by hash); returns the Kernel."""
        return self.spelling.wait(self.kernel_async(source, entry), "dev.kernel_async(source)")

    async def kernel_async(self, source: Any, entry: str | None = None) -> Kernel:
        """``kernel``, awaitable (in the page compile errors arrive asynchronously, with line
        and column)."""
        key, info, text = self._prepare_kernel(source, entry)
        kernel = self._kernels.get(key)
        if kernel is None:
            pipeline = await self._guard_async(self._pipeline(text, info))
            kernel = self._kernels[key] = Kernel(self, info, pipeline, key)
            self.compiles += 1
        return kernel

    async def _pipeline(self, source: str, info: KernelInfo) -> Any:
        """The compute pipeline of ``info.entry`` in ``source``; ShaderError if rejected."""
        raise NotImplementedError

    # ---- dispatch: compute passes, one submit or many recorded ----
    def _dispatch(
        self, kernel: Kernel, bound: list[tuple[Binding, Buffer]], n: int, groups: tuple[int, int]
    ) -> None:
        encoder = self.spelling.call(self._dev, "create_command_encoder")
        cpass = self.spelling.call(encoder, "begin_compute_pass")
        self._encode(cpass, kernel, bound, groups)
        cpass.end()
        self._finish(encoder)

    def _record(
        self, kernel: Kernel, bound: list[tuple[Binding, Buffer]], n: int, groups: tuple[int, int]
    ) -> None:
        """Record into the batch's open compute pass. Each dispatch of a pass is its own
        usage scope, so one that reads what an earlier one wrote sees it (WebGPU orders
        them); one pass instead of one per dispatch is less driver work per kernel (half,
        on lavapipe)."""
        if self._pass is None:
            self._pass = self.spelling.call(self._recording(), "begin_compute_pass")
        self._encode(self._pass, kernel, bound, groups)

    def _recording(self) -> Any:
        """The command encoder a batch records into (made at its first command)."""
        if self._encoder is None:
            self._encoder = self.spelling.call(self._dev, "create_command_encoder")
        return self._encoder

    def _end_pass(self) -> None:
        """Close the batch's compute pass (before a copy, or to submit)."""
        cpass, self._pass = self._pass, None
        if cpass is not None:
            cpass.end()

    def _copy(self, src: Buffer, dst: Buffer, src_at: int, dst_at: int, nbytes: int) -> None:
        self._record_copy(src, dst, src_at, dst_at, nbytes)  # outside a batch: no encoder yet
        self._submit()

    def _record_copy(self, src: Buffer, dst: Buffer, src_at: int, dst_at: int, nbytes: int) -> None:
        self._end_pass()
        self.spelling.call(
            self._recording(),
            "copy_buffer_to_buffer",
            src.handle,
            src_at,
            dst.handle,
            dst_at,
            nbytes,
        )

    def _submit(self) -> None:
        self._end_pass()
        encoder, self._encoder = self._encoder, None
        if encoder is not None:
            self._finish(encoder)

    def _finish(self, encoder: Any) -> None:
        """Close ``encoder`` and submit its command buffer."""
        self.spelling.call(self._queue, "submit", self.spelling.seq([encoder.finish()]))

    def _encode(
        self, cpass: Any, kernel: Kernel, bound: list[tuple[Binding, Buffer]], groups: tuple
    ) -> None:
        """One dispatch of ``kernel`` in the compute pass ``cpass``."""
        call, pipeline = self.spelling.call, kernel.handle
        call(cpass, "set_pipeline", pipeline)
        for group in sorted({slot.group for slot, _ in bound}):
            mine = [(s, b) for s, b in bound if s.group == group]
            call(cpass, "set_bind_group", group, self._bind_group(pipeline, group, mine))
        call(cpass, "dispatch_workgroups", groups[0], groups[1], 1)

    def _bind_group(self, pipeline: Any, group: int, mine: list[tuple[Binding, Buffer]]) -> Any:
        """The bind group of ``mine`` for ``pipeline``'s ``group`` (cached unless it holds a
        one-off uniform)."""
        key = (id(pipeline), group, tuple((s.binding, id(b.handle)) for s, b in mine))
        cached = self._bind_groups.get(key)
        if cached is None:
            call = self.spelling.call
            entries = [
                {
                    "binding": s.binding,
                    "resource": {"buffer": b.handle, "offset": 0, "size": b.nbytes},
                }
                for s, b in mine
            ]
            layout = call(pipeline, "get_bind_group_layout", group)
            bind_group = call(self._dev, "create_bind_group", layout=layout, entries=entries)
            cached = (bind_group, pipeline, mine)
            if all(b.usage == "storage" for _, b in mine):  # not a one-off uniform
                if len(self._bind_groups) >= BIND_GROUPS_KEPT:
                    self._bind_groups.clear()
                self._bind_groups[key] = cached
        return cached[0]

    # ---- read-back ----
    def read(self, buf: Buffer) -> array:
        """The contents of ``buf`` as an ``array.array`` (waits for queued work)."""
        return self.spelling.wait(self.read_async(buf), "dev.read_async(buf)")

    async def read_async(self, buf: Buffer) -> array:
        """``read``, awaitable (the page must use this one)."""
        return (await self.read_many_async([buf]))[0]

    def read_many(self, bufs: Sequence[Buffer]) -> list[array]:
        """The contents of every buffer in ``bufs``: one copy submission and one wait for
        them all (each read alone is a round trip to the GPU)."""
        return self.spelling.wait(self.read_many_async(bufs), "dev.read_many_async(bufs)")

    async def read_many_async(self, bufs: Sequence[Buffer]) -> list[array]:
        """``read_many``, awaitable (the page must use this one)."""
        for buf in bufs:
            self._own(buf)
        if not bufs:
            return []
        self.submit()  # recorded dispatches come before the copies
        ends = list(accumulate(buf.nbytes for buf in bufs))
        data = await self._guard_async(self._read_back(bufs, ends))
        self._raise_recorded()
        return [to_array(data[e - b.nbytes : e], b.dtype) for b, e in zip(bufs, ends, strict=True)]

    async def _read_back(self, bufs: Sequence[Buffer], ends: list[int]) -> Any:
        """The bytes of ``bufs`` end to end (buffer k ends at byte ``ends[k]``), copied into
        one mappable buffer."""
        call, flags = self.spelling.call, self.spelling.flags
        staging = call(
            self._dev, "create_buffer", size=ends[-1], usage=flags.MAP_READ | flags.COPY_DST
        )
        try:
            encoder = call(self._dev, "create_command_encoder")
            for buf, end in zip(bufs, ends, strict=True):
                at = end - buf.nbytes
                call(encoder, "copy_buffer_to_buffer", buf.handle, 0, staging, at, buf.nbytes)
            self._finish(encoder)
            return await self._map_read(staging)
        finally:
            staging.destroy()

    async def _map_read(self, staging: Any) -> Any:
        """The bytes of the mappable buffer ``staging`` once the GPU has written them."""
        raise NotImplementedError

    # ---- errors ----
    async def _guard_async(self, step: Awaitable[Any]) -> Any:
        """``_guard`` for a step that is awaited."""
        try:
            return await step
        except GPUError:
            raise
        except Exception as exc:  # the binding's own error types
            raise self._translate(exc) from exc

    def _raise_recorded(self) -> None:
        """Raise what the device reported on its own since the last read (and loss)."""
        self._check_alive()
        if self._errors:
            errors, self._errors = self._errors, []
            raise GPUError(f"{self.api}: {errors[0]}", "\n".join(errors))

    def _translate(self, exc: Exception) -> GPUError:
        if self.lost_reason is None and says_lost(exc):
            self.lost_reason = message_line(exc)
        if self.lost_reason is not None:
            return DeviceLostError(f"{self.kind} device lost: {self.lost_reason}")
        text = str(exc).strip()
        return GPUError(f"{self.api}: {message_line(exc)}", text if "\n" in text else "")


def raised_limits(spelling: Spelling, adapter_limits: Any) -> dict[str, int]:
    """The ``required_limits`` that ask for all the adapter offers of ``RAISED_LIMITS``."""
    names = (WEBGPU_NAMES[f] for f in RAISED_LIMITS)
    return {spelling.limit_key(n): spelling.limit(adapter_limits, n) for n in names}


def says_lost(exc: BaseException) -> bool:
    """Whether an error's text says the device is lost."""
    text = str(exc).lower()
    return "device is lost" in text or "device lost" in text


def message_line(exc: BaseException, last: bool = True) -> str:
    """The last (or first) non-blank line of an error's text, else its type's name."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    return lines[-1] if last else lines[0]
