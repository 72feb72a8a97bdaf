"""The desktop backend: WGSL through wgpu-py (Vulkan, Metal or DX12; Mesa lavapipe on a
machine without a GPU). The encode/submit path is ``webgpu.py``'s, shared with the page;
it names calls as wgpu-py does, so what is here is opening the device and the two steps
wgpu-py takes its own way: naga's compile errors arrive as exceptions, and mapping a buffer
blocks.

wgpu-py 0.32's ``on_submitted_work_done_*`` raises TypeError, so completion is awaited the
way every caller needs anyway: by reading buffers back (``map_sync`` of the staging buffer
waits).
"""

from __future__ import annotations

from typing import Any

from .errors import NoDeviceError, shader_error
from .webgpu import Spelling, WebGPUDevice, message_line, raised_limits, says_lost
from .wgsl_info import KernelInfo


def _wgpu() -> Any:
    try:
        import wgpu
    except ImportError:
        raise NoDeviceError("wgpu-py", "not installed (pip install wgpu)") from None
    except Exception as exc:  # a broken native library, missing loader, ...
        raise NoDeviceError("wgpu-py", f"failed to load ({exc})") from None
    return wgpu


class NativeDevice(WebGPUDevice):
    """A wgpu-py device, opened with the adapter's own limits for compute."""

    kind = "native"
    api = "wgpu-py"

    def __init__(self, adapter: Any, device: Any, wgpu: Any) -> None:
        self._wgpu, self._adapter = wgpu, adapter
        info = adapter.info
        name = f"{info.get('device') or info.get('vendor')} ({info.get('backend_type')})"
        super().__init__(f"{name}, wgpu-py {wgpu.__version__}", device, Spelling(wgpu.BufferUsage))

    @classmethod
    def open(cls, power_preference: str = "high-performance") -> NativeDevice:
        """The best adapter wgpu-py finds; NoDeviceError says why there is none."""
        wgpu = _wgpu()
        try:
            adapter = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
        except Exception as exc:
            why = f"no adapter ({message_line(exc, last=False)})"
            raise NoDeviceError("wgpu-py", why) from None
        if adapter is None:
            raise NoDeviceError("wgpu-py", "no adapter (no Vulkan/Metal/DX12 driver found)")
        wanted = raised_limits(Spelling(wgpu.BufferUsage), adapter.limits)
        try:
            device = adapter.request_device_sync(required_limits=wanted)
        except Exception as exc:
            why = f"the adapter gave no device ({message_line(exc, last=False)})"
            raise NoDeviceError("wgpu-py", why) from None
        return cls(adapter, device, wgpu)

    async def _pipeline(self, source: str, info: KernelInfo) -> Any:
        """Compile with naga: a rejected kernel raises at once, with line and column."""
        try:
            module = self._dev.create_shader_module(code=source)
            return self._dev.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": info.entry}
            )
        except self._wgpu.GPUError as exc:
            if says_lost(exc):
                raise
            raise shader_error(str(exc), source) from None

    async def _map_read(self, staging: Any) -> memoryview:
        staging.map_sync(self._wgpu.MapMode.READ)  # waits for the queue's work
        try:
            return staging.read_mapped()
        finally:
            staging.unmap()
