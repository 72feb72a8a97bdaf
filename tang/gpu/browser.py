"""The page backend: WebGPU called from Python inside Pyodide through its ``js`` module
(wgpu-py's own browser backend is a stub, so tang carries this bridge). The encode/submit
path is ``webgpu.py``'s, shared with wgpu-py on the desktop; here are the JS API's spellings
of it (``JS``) and what the page does its own way: opening the device, compiling (errors
come back as compilation messages and error scopes), reading back through a mapped buffer,
and errors and loss that arrive on their own.

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

from collections.abc import Coroutine
from typing import Any

from .errors import GPUError, NoDeviceError, ShaderError
from .webgpu import Spelling, WebGPUDevice, message_line, raised_limits
from .wgsl_info import KernelInfo

# the shared path's names (wgpu-py's) as the JS API spells them
NAMES = {
    "create_buffer": "createBuffer",
    "write_buffer": "writeBuffer",
    "create_command_encoder": "createCommandEncoder",
    "begin_compute_pass": "beginComputePass",
    "set_pipeline": "setPipeline",
    "get_bind_group_layout": "getBindGroupLayout",
    "create_bind_group": "createBindGroup",
    "set_bind_group": "setBindGroup",
    "dispatch_workgroups": "dispatchWorkgroups",
    "copy_buffer_to_buffer": "copyBufferToBuffer",
    "submit": "submit",
}


def _js() -> tuple[Any, Any]:
    import js  # type: ignore[import-not-found]  # only in Pyodide
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    return js, to_js


class JS(Spelling):
    """The JS API's spellings: camelCase names, a descriptor as one JS object, lists as JS
    arrays, uploads copied out of the WASM heap in one piece, limits as attributes."""

    def __init__(self) -> None:
        self.js, self._to_js = _js()
        self._entries = self.js.Object.fromEntries
        super().__init__(self.js.GPUBufferUsage)

    def obj(self, value: Any) -> Any:
        """A Python dict/list as a plain JS object/array (nested), JS objects passed through."""
        return self._to_js(value, dict_converter=self._entries)

    def call(self, obj: Any, method: str, *args: Any, **descriptor: Any) -> Any:
        fn = getattr(obj, NAMES[method])
        return fn(*args, self.obj(descriptor)) if descriptor else fn(*args)

    def seq(self, items: list[Any]) -> Any:
        return self.obj(items)

    def upload(self, raw: memoryview) -> Any:
        staging = self.js.Uint8Array.new(raw.nbytes)
        staging.assign(raw)  # one bulk copy out of the WASM heap
        return staging

    def limit(self, limits: Any, name: str) -> int:
        return getattr(limits, name)

    def limit_key(self, name: str) -> str:
        return name

    def wait(self, step: Coroutine[Any, Any, Any], spelling: str) -> Any:
        return _run_sync(step, spelling)


def _absent(x: Any) -> bool:
    """JS null/undefined (Pyodide gives None or ``jsnull``)."""
    return x is None or type(x).__name__ == "JsNull"


def _is_fallback(adapter: Any) -> bool:
    return bool(getattr(adapter.info, "isFallbackAdapter", False))


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


class BrowserDevice(WebGPUDevice):
    """A WebGPU device of the page's worker."""

    kind = "browser"
    spelling: JS

    def __init__(self, adapter: Any, device: Any, feature_level: str) -> None:
        self._adapter = adapter
        info = adapter.info
        parts = [str(getattr(info, k, "") or "") for k in ("vendor", "architecture", "device")]
        desc = str(getattr(info, "description", "") or "")
        name = " ".join(p for p in parts if p) or "unnamed adapter"
        if desc and desc not in name:
            name += f" ({desc})"
        if _is_fallback(adapter):
            name += " (software fallback)"
        super().__init__(f"{name}, WebGPU {feature_level}", device, JS())
        self.feature_level = feature_level
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
        gpu = getattr(_js()[0].navigator, "gpu", None)
        if _absent(gpu):
            raise NoDeviceError("WebGPU", "no navigator.gpu in this browser (WebGPU disabled)")
        spelling = JS()  # the GPU* globals exist only where navigator.gpu does
        try:
            level, adapter = "core", await gpu.requestAdapter()
            if _absent(adapter) or _is_fallback(adapter):
                # Chromium's lavapipe-through-ANGLE adapter exists only at this level; prefer
                # it to a software fallback (SwiftShader) when both are there.
                compat = await gpu.requestAdapter(spelling.obj({"featureLevel": "compatibility"}))
                if not _absent(compat) and (_absent(adapter) or not _is_fallback(compat)):
                    level, adapter = "compatibility", compat
        except Exception as exc:
            raise NoDeviceError("WebGPU", f"no adapter ({message_line(exc)})") from None
        if _absent(adapter):
            raise NoDeviceError("WebGPU", "no adapter")
        wanted = raised_limits(spelling, adapter.limits)
        try:
            device = await adapter.requestDevice(spelling.obj({"requiredLimits": wanted}))
        except Exception as exc:
            why = f"the adapter gave no device ({message_line(exc)})"
            raise NoDeviceError("WebGPU", why) from None
        return cls(adapter, device, level)

    @classmethod
    def open_sync(cls) -> BrowserDevice:
        return _run_sync(cls.open(), "tang.gpu.device_async()")

    async def _pipeline(self, source: str, info: KernelInfo) -> Any:
        """Compile and validate: the compiler's messages carry line and column; a bad module
        is caught in an error scope, not left to the uncaptured-error handler."""
        dev, obj = self._dev, self.spelling.obj
        dev.pushErrorScope("validation")
        module = dev.createShaderModule(obj({"code": source}))
        messages = (await module.getCompilationInfo()).messages
        scoped = await dev.popErrorScope()
        for i in range(messages.length):
            msg = messages[i]
            if str(msg.type) == "error":
                raise ShaderError(str(msg.message), "", int(msg.lineNum), int(msg.linePos))
        if not _absent(scoped):
            raise ShaderError(str(scoped.message))
        try:
            return await dev.createComputePipelineAsync(
                obj({"layout": "auto", "compute": {"module": module, "entryPoint": info.entry}})
            )
        except Exception as exc:
            self._check_alive()
            raise ShaderError(message_line(exc)) from None

    async def _map_read(self, staging: Any) -> bytes:
        """Wait for the GPU to map ``staging``; its bytes."""
        try:
            await staging.mapAsync(self.spelling.js.GPUMapMode.READ)
        except Exception as exc:
            self._check_alive()
            raise GPUError(f"WebGPU read-back failed: {message_line(exc)}") from None
        data = self.spelling.js.Uint8Array.new(staging.getMappedRange()).to_bytes()
        staging.unmap()
        return data
