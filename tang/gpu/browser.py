"""The page backend: WebGPU called from Python inside Pyodide through its ``js`` module
(wgpu-py's own browser backend is a stub, so tang carries this bridge).

Every WebGPU step that returns a promise is awaited, so the page uses the ``*_async``
spellings (``await dev.kernel_async(src)``, ``await dev.read_async(buf)``); the plain ones
work too where Pyodide can block on a promise (``pyodide.ffi.can_run_sync()``). Buffers
cross between Python and JS as one bulk copy (``Uint8Array.assign``/``to_bytes``), never
element by element.

Adapters: the core feature level is asked first, then ``featureLevel: 'compatibility'``
(Chromium's lavapipe-through-ANGLE adapter offers only that). The device is opened with the
adapter's own limits for storage buffers, binding size and workgroup size, because the
WebGPU defaults in compatibility mode (4 storage buffers, 128 invocations) are small.
A software fallback adapter (SwiftShader) is used only when nothing else is offered.

Accuracy differs by adapter (measured here, x in [-100, 100]): SwiftShader's ``sin`` and
``cos`` are off by up to ~2e-4 absolute at any |x| (percents, relatively, next to their
zeros), lavapipe's by 7e-8; lavapipe through ANGLE's ``atan2`` by up to 3e-6. Compare
results with a tolerance that knows the adapter (see e2e/test_gpu_page.py).
"""

from __future__ import annotations

from typing import Any

from .base import WEBGPU_NAMES, Buffer, Device, Kernel, Limits
from .errors import DeviceLostError, GPUError, NoDeviceError, ShaderError
from .wgsl_info import Binding

# Limits tang raises from the WebGPU defaults to what the adapter offers.
_RAISE = (
    "storage_buffers_per_stage",
    "max_storage_binding_size",
    "max_buffer_size",
    "max_invocations_per_workgroup",
    "max_workgroup_size_x",
)


def _js() -> tuple[Any, Any]:
    import js  # type: ignore[import-not-found]  # only in Pyodide
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    return js, to_js


def _absent(x: Any) -> bool:
    """JS null/undefined (Pyodide gives None or ``jsnull``)."""
    return x is None or type(x).__name__ == "JsNull"


def _obj(value: Any) -> Any:
    """A Python dict/list as a plain JS object/array (nested), JS objects passed through."""
    js, to_js = _js()
    return to_js(value, dict_converter=js.Object.fromEntries)


def _is_fallback(adapter: Any) -> bool:
    return bool(getattr(adapter.info, "isFallbackAdapter", False))


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def _run_sync(awaitable: Any, spelling: str) -> Any:
    """Block on ``awaitable`` where Pyodide can (JS promise integration); else a GPUError
    naming the awaitable spelling to use."""
    from pyodide.ffi import can_run_sync, run_sync  # type: ignore[import-not-found]

    why = "WebGPU answers with promises"
    if can_run_sync():
        try:
            return run_sync(awaitable)
        except RuntimeError as exc:  # can_run_sync() said yes, the runtime disagreed
            if "stack switching" not in str(exc):
                raise
            why = str(exc)
    awaitable.close()
    raise GPUError(f"in the page, use 'await {spelling}' ({why})")


class BrowserDevice(Device):
    """A WebGPU device of the page's worker."""

    kind = "browser"

    def __init__(self, adapter: Any, device: Any, feature_level: str) -> None:
        js, _ = _js()
        self._js, self._adapter, self._dev = js, adapter, device
        info = adapter.info
        parts = [str(getattr(info, k, "") or "") for k in ("vendor", "architecture", "device")]
        desc = str(getattr(info, "description", "") or "")
        name = " ".join(p for p in parts if p) or "unnamed adapter"
        if desc and desc not in name:
            name += f" ({desc})"
        if _is_fallback(adapter):
            name += " (software fallback)"
        limits = Limits.from_webgpu(lambda n: getattr(device.limits, n))
        super().__init__(f"{name}, WebGPU {feature_level}", limits)
        self._encoder: Any = None  # the command encoder a ``batch`` records into
        self.feature_level = feature_level
        self._errors: list[str] = []
        u = js.GPUBufferUsage
        self._usage = {
            "storage": u.STORAGE | u.COPY_SRC | u.COPY_DST,
            "uniform": u.UNIFORM | u.COPY_DST,
        }
        self._watch()

    def _watch(self) -> None:
        """Record uncaptured errors and device loss as they happen (both arrive later)."""
        from pyodide.ffi import create_proxy  # type: ignore[import-not-found]

        def on_error(event: Any) -> None:
            self._errors.append(str(event.error.message))

        def on_lost(info: Any) -> None:
            if self.lost_reason is None:
                reason = str(getattr(info, "reason", "") or "unknown")
                message = str(getattr(info, "message", "") or "")
                self.lost_reason = f"{reason}: {message}" if message else reason

        self._proxies = [create_proxy(on_error), create_proxy(on_lost)]
        self._dev.addEventListener("uncapturederror", self._proxies[0])
        self._dev.lost.then(self._proxies[1])

    @classmethod
    async def open(cls) -> BrowserDevice:
        """Request an adapter (core, then compatibility) and a device with raised limits."""
        js, _ = _js()
        gpu = getattr(js.navigator, "gpu", None)
        if _absent(gpu):
            raise NoDeviceError("WebGPU", "no navigator.gpu in this browser (WebGPU disabled)")
        try:
            level, adapter = "core", await gpu.requestAdapter()
            if _absent(adapter) or _is_fallback(adapter):
                # Chromium's lavapipe-through-ANGLE adapter exists only at this level; prefer
                # it to a software fallback (SwiftShader) when both are there.
                compat = await gpu.requestAdapter(_obj({"featureLevel": "compatibility"}))
                if not _absent(compat) and (_absent(adapter) or not _is_fallback(compat)):
                    level, adapter = "compatibility", compat
        except Exception as exc:
            raise NoDeviceError("WebGPU", f"no adapter ({_message(exc)})") from None
        if _absent(adapter):
            raise NoDeviceError("WebGPU", "no adapter")
        wanted = {WEBGPU_NAMES[f]: getattr(adapter.limits, WEBGPU_NAMES[f]) for f in _RAISE}
        try:
            device = await adapter.requestDevice(_obj({"requiredLimits": wanted}))
        except Exception as exc:
            raise NoDeviceError("WebGPU", f"the adapter gave no device ({_message(exc)})") from None
        return cls(adapter, device, level)

    @classmethod
    def open_sync(cls) -> BrowserDevice:
        return _run_sync(cls.open(), "tang.gpu.device_async()")

    # ---- primitives ----
    def _create_buffer(self, nbytes: int, usage: str) -> Any:
        return self._dev.createBuffer(_obj({"size": nbytes, "usage": self._usage[usage]}))

    def _write(self, buf: Buffer, raw: memoryview) -> None:
        staging = self._js.Uint8Array.new(raw.nbytes)
        staging.assign(raw)  # one bulk copy out of the WASM heap
        self._dev.queue.writeBuffer(buf.handle, 0, staging)

    def _dispatch(
        self, kernel: Kernel, bound: list[tuple[Binding, Buffer]], n: int, groups: tuple[int, int]
    ) -> None:
        encoder = self._dev.createCommandEncoder()
        self._encode(encoder, kernel, bound, groups)
        self._dev.queue.submit(_obj([encoder.finish()]))

    def _record(
        self, kernel: Kernel, bound: list[tuple[Binding, Buffer]], n: int, groups: tuple[int, int]
    ) -> None:
        if self._encoder is None:
            self._encoder = self._dev.createCommandEncoder()
        self._encode(self._encoder, kernel, bound, groups)

    def _submit(self) -> None:
        encoder, self._encoder = self._encoder, None
        if encoder is not None:
            self._dev.queue.submit(_obj([encoder.finish()]))

    def _encode(
        self, encoder: Any, kernel: Kernel, bound: list[tuple[Binding, Buffer]], groups: tuple
    ) -> None:
        """One compute pass of ``kernel`` on ``encoder``."""
        pipeline, dev = kernel.handle, self._dev
        cpass = encoder.beginComputePass()
        cpass.setPipeline(pipeline)
        for group in sorted({slot.group for slot, _ in bound}):
            entries = [
                {"binding": s.binding, "resource": {"buffer": b.handle, "size": b.nbytes}}
                for s, b in bound
                if s.group == group
            ]
            layout = pipeline.getBindGroupLayout(group)
            bind = dev.createBindGroup(_obj({"layout": layout, "entries": entries}))
            cpass.setBindGroup(group, bind)
        cpass.dispatchWorkgroups(groups[0], groups[1], 1)
        cpass.end()

    def _free(self, buf: Buffer) -> None:
        buf.handle.destroy()

    def _destroy(self) -> None:
        self._dev.destroy()

    # ---- the awaited steps ----
    async def kernel_async(self, source: Any, entry: str | None = None) -> Kernel:
        """Compile and validate ``source`` (compile errors come back with line and column)."""
        key, info, text = self._prepare_kernel(source, entry)
        if key in self._kernels:
            return self._kernels[key]
        self._dev.pushErrorScope("validation")  # a bad module is our error, not uncaptured
        module = self._dev.createShaderModule(_obj({"code": text}))
        messages = (await module.getCompilationInfo()).messages
        scoped = await self._dev.popErrorScope()
        for i in range(messages.length):
            msg = messages[i]
            if str(msg.type) == "error":
                raise ShaderError(str(msg.message), "", int(msg.lineNum), int(msg.linePos))
        if not _absent(scoped):
            raise ShaderError(str(scoped.message))
        try:
            pipeline = await self._dev.createComputePipelineAsync(
                _obj({"layout": "auto", "compute": {"module": module, "entryPoint": info.entry}})
            )
        except Exception as exc:
            self._check_alive()
            raise ShaderError(_message(exc)) from None
        kernel = self._kernels[key] = Kernel(self, info, pipeline, key)
        self.compiles += 1
        return kernel

    def kernel(self, source: Any, entry: str | None = None) -> Kernel:
        return _run_sync(self.kernel_async(source, entry), "dev.kernel_async(source)")

    async def read_async(self, buf: Buffer) -> Any:
        """Copy ``buf`` to a mappable buffer, wait for the GPU, return an ``array.array``."""
        from .data import to_array

        self._own(buf)
        self.submit()  # recorded dispatches come before the copy
        js, dev = self._js, self._dev
        staging = dev.createBuffer(
            _obj(
                {
                    "size": buf.nbytes,
                    "usage": js.GPUBufferUsage.MAP_READ | js.GPUBufferUsage.COPY_DST,
                }
            )
        )
        try:
            encoder = dev.createCommandEncoder()
            encoder.copyBufferToBuffer(buf.handle, 0, staging, 0, buf.nbytes)
            dev.queue.submit(_obj([encoder.finish()]))
            try:
                await staging.mapAsync(js.GPUMapMode.READ)
            except Exception as exc:
                self._check_alive()
                raise GPUError(f"WebGPU read-back failed: {_message(exc)}") from None
            data = js.Uint8Array.new(staging.getMappedRange()).to_bytes()
            staging.unmap()
        finally:
            staging.destroy()
        self._raise_recorded()
        return to_array(data, buf.dtype)

    def read(self, buf: Buffer) -> Any:
        return _run_sync(self.read_async(buf), "dev.read_async(buf)")

    def _raise_recorded(self) -> None:
        self._check_alive()
        if self._errors:
            errors, self._errors = self._errors, []
            raise GPUError(f"WebGPU: {errors[0]}", "\n".join(errors))

    def _translate(self, exc: Exception) -> GPUError:
        if self.lost_reason is not None:
            return DeviceLostError(f"browser device lost: {self.lost_reason}")
        return GPUError(f"WebGPU: {_message(exc)}")
