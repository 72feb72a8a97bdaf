"""The desktop backend: WGSL through wgpu-py (Vulkan, Metal or DX12; Mesa lavapipe on a
machine without a GPU).

wgpu-py 0.32's ``on_submitted_work_done_*`` raises TypeError, so completion is awaited the
way every caller needs anyway: by reading a buffer back (``queue.read_buffer`` maps and
waits).
"""

from __future__ import annotations

from typing import Any

from .base import WEBGPU_NAMES, Buffer, Device, Kernel, Limits, kebab
from .errors import DeviceLostError, GPUError, NoDeviceError, shader_error
from .wgsl_info import Binding, KernelInfo


def _wgpu() -> Any:
    try:
        import wgpu
    except ImportError:
        raise NoDeviceError("wgpu-py", "not installed (pip install wgpu)") from None
    except Exception as exc:  # a broken native library, missing loader, ...
        raise NoDeviceError("wgpu-py", f"failed to load ({exc})") from None
    return wgpu


class NativeDevice(Device):
    """A wgpu-py device, opened with the adapter's own limits for compute."""

    kind = "native"

    def __init__(self, adapter: Any, device: Any, wgpu: Any) -> None:
        self._wgpu, self._adapter, self._dev = wgpu, adapter, device
        info = adapter.info
        name = f"{info.get('device') or info.get('vendor')} ({info.get('backend_type')})"
        limits = Limits.from_webgpu(lambda n: device.limits[kebab(n)])
        super().__init__(f"{name}, wgpu-py {wgpu.__version__}", limits)
        self._encoder: Any = None  # the command encoder a ``batch`` records into
        # bind groups by (pipeline, group, buffers): a compiled graph binds the same buffers
        # every call; each entry keeps its pipeline and buffers alive, so ids stay unique
        self._bind_groups: dict[tuple, tuple] = {}
        u = wgpu.BufferUsage
        self._usage = {
            "storage": u.STORAGE | u.COPY_SRC | u.COPY_DST,
            "uniform": u.UNIFORM | u.COPY_DST,
        }

    @classmethod
    def open(cls, power_preference: str = "high-performance") -> NativeDevice:
        """The best adapter wgpu-py finds; NoDeviceError says why there is none."""
        wgpu = _wgpu()
        try:
            adapter = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
        except Exception as exc:
            raise NoDeviceError("wgpu-py", f"no adapter ({_first_line(exc)})") from None
        if adapter is None:
            raise NoDeviceError("wgpu-py", "no adapter (no Vulkan/Metal/DX12 driver found)")
        wanted = {kebab(WEBGPU_NAMES[f]): adapter.limits[kebab(WEBGPU_NAMES[f])] for f in _RAISE}
        try:
            device = adapter.request_device_sync(required_limits=wanted)
        except Exception as exc:
            raise NoDeviceError(
                "wgpu-py", f"the adapter gave no device ({_first_line(exc)})"
            ) from None
        return cls(adapter, device, wgpu)

    # ---- primitives ----
    def _create_buffer(self, nbytes: int, usage: str) -> Any:
        return self._dev.create_buffer(size=nbytes, usage=self._usage[usage])

    def _write(self, buf: Buffer, raw: memoryview) -> None:
        self._dev.queue.write_buffer(buf.handle, 0, raw)

    def _read(self, buf: Buffer) -> memoryview:
        return self._dev.queue.read_buffer(buf.handle, 0, buf.nbytes)

    def _compile(self, source: str, info: KernelInfo) -> Any:
        try:
            module = self._dev.create_shader_module(code=source)
            return self._dev.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": info.entry}
            )
        except self._wgpu.GPUError as exc:
            if _is_lost(exc):
                raise
            raise shader_error(str(exc), source) from None

    def _dispatch(
        self, kernel: Kernel, bound: list[tuple[Binding, Buffer]], n: int, groups: tuple[int, int]
    ) -> None:
        encoder = self._dev.create_command_encoder()
        self._encode(encoder, kernel, bound, groups)
        self._dev.queue.submit([encoder.finish()])

    def _record(
        self, kernel: Kernel, bound: list[tuple[Binding, Buffer]], n: int, groups: tuple[int, int]
    ) -> None:
        if self._encoder is None:
            self._encoder = self._dev.create_command_encoder()
        self._encode(self._encoder, kernel, bound, groups)

    def _submit(self) -> None:
        encoder, self._encoder = self._encoder, None
        if encoder is not None:
            self._dev.queue.submit([encoder.finish()])

    def _encode(
        self, encoder: Any, kernel: Kernel, bound: list[tuple[Binding, Buffer]], groups: tuple
    ) -> None:
        """One compute pass of ``kernel`` on ``encoder``."""
        pipeline, dev = kernel.handle, self._dev
        cpass = encoder.begin_compute_pass()
        cpass.set_pipeline(pipeline)
        for group in sorted({slot.group for slot, _ in bound}):
            mine = [(s, b) for s, b in bound if s.group == group]
            key = (id(pipeline), group, tuple((s.binding, id(b.handle)) for s, b in mine))
            cached = self._bind_groups.get(key)
            if cached is None:
                entries = [
                    {
                        "binding": s.binding,
                        "resource": {"buffer": b.handle, "offset": 0, "size": b.nbytes},
                    }
                    for s, b in mine
                ]
                layout = pipeline.get_bind_group_layout(group)
                cached = (dev.create_bind_group(layout=layout, entries=entries), pipeline, mine)
                if all(b.usage == "storage" for _, b in mine):  # not a one-off uniform
                    if len(self._bind_groups) >= _BIND_GROUPS_KEPT:
                        self._bind_groups.clear()
                    self._bind_groups[key] = cached
            cpass.set_bind_group(group, cached[0])
        cpass.dispatch_workgroups(groups[0], groups[1], 1)
        cpass.end()

    def _free(self, buf: Buffer) -> None:
        self._bind_groups = {
            k: v for k, v in self._bind_groups.items() if all(b is not buf for _, b in v[2])
        }
        buf.handle.destroy()

    def _destroy(self) -> None:
        self._dev.destroy()

    def _translate(self, exc: Exception) -> GPUError:
        if _is_lost(exc):
            self.lost_reason = self.lost_reason or _first_line(exc, last=True)
            return DeviceLostError(f"native device lost: {self.lost_reason}")
        return GPUError(f"wgpu-py: {_first_line(exc, last=True)}", str(exc))


_BIND_GROUPS_KEPT = 4096  # the cache starts over beyond this many

# Limits tang raises from the WebGPU defaults to what the adapter offers.
_RAISE = (
    "storage_buffers_per_stage",
    "max_storage_binding_size",
    "max_buffer_size",
    "max_invocations_per_workgroup",
    "max_workgroup_size_x",
)


def _is_lost(exc: Exception) -> bool:
    return "device is lost" in str(exc).lower() or "device lost" in str(exc).lower()


def _first_line(exc: Exception, last: bool = False) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    return lines[-1] if last else lines[0]
