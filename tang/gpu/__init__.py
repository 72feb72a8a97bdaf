"""tang.gpu: one Device API over WebGPU in the page, wgpu-py on the desktop, compiled C on
the desktop's CPU and a pure-Python CPU reference. ``device()`` picks the best backend and
reports why others were skipped (on the desktop a GPU adapter first; where the only adapter
is a software one such as lavapipe, the compiled C device runs the same work faster on the
same CPU, so it comes first; ``device("native")`` still opens lavapipe)::

    dev = tang.gpu.device()            # in the page: dev = await tang.gpu.device_async()
    print(dev.report)                  # ['using native: llvmpipe (Vulkan), ...']
    k = dev.kernel(WGSL)               # compiled once, cached by source hash
    x, out = dev.buffer([1.0, 2.0, 3.0]), dev.empty(3)
    dev.dispatch(k, [x, out, 3], 3)
    dev.read(out)                      # array('f', [...])

Every failure is a ``GPUError`` (``ShaderError``, ``LimitError``, ``DeviceLostError``,
``NoDeviceError``, ``DataError``) with a one-line ``reason``: catch it and use the CPU device.
"""

from __future__ import annotations

import sys

from .base import Buffer, Device, Kernel, Limits, grid
from .cpu import CPUDevice
from .errors import (
    DataError,
    DeviceLostError,
    GPUError,
    LimitError,
    NoDeviceError,
    ShaderError,
)

__all__ = [
    "BACKENDS",
    "Buffer",
    "CPUDevice",
    "DataError",
    "Device",
    "DeviceLostError",
    "GPUError",
    "Kernel",
    "LimitError",
    "Limits",
    "NoDeviceError",
    "ShaderError",
    "device",
    "device_async",
    "grid",
    "in_browser",
    "release",
]

# backend -> the name a person knows it by (used in "skipped" reasons)
BACKENDS: dict[str, str] = {
    "browser": "WebGPU",
    "native": "wgpu-py",
    "c": "compiled C",
    "cpu": "CPU",
}
_ALIASES = {"webgpu": "browser", "wgpu": "native", "python": "cpu", "compiled": "c"}
# adapters that run compute on the CPU (they count as no GPU when choosing a device)
SOFTWARE_ADAPTERS = ("llvmpipe", "lavapipe", "swiftshader", "software fallback")
_open: dict[str, Device] = {}


def in_browser() -> bool:
    """True inside Pyodide (the page's worker)."""
    return sys.platform == "emscripten"


def software(dev: Device) -> bool:
    """Whether ``dev`` is a GPU API over a software rasteriser running on the CPU."""
    name = dev.name.lower()
    return dev.kind in ("native", "browser") and any(n in name for n in SOFTWARE_ADAPTERS)


def _order(prefer: str | None) -> list[str]:
    local = ["browser", "cpu"] if in_browser() else ["native", "c", "cpu"]
    if prefer is None:
        return local
    kind = _ALIASES.get(prefer.lower(), prefer.lower())
    if kind not in BACKENDS:
        raise GPUError(f"unknown device {prefer!r}; choose one of {', '.join(BACKENDS)}")
    return [kind] + [k for k in local if k != kind]


def _unavailable(kind: str) -> NoDeviceError:
    where = "in the page (Pyodide)" if kind == "browser" else "on the desktop"
    return NoDeviceError(BACKENDS[kind], f"only available {where}")


def _open_sync(kind: str) -> Device:
    if kind == "cpu":
        return CPUDevice()
    if kind == "c" and not in_browser():
        from .native_c import CDevice

        return CDevice.open()
    if kind == "native" and not in_browser():
        from .native import NativeDevice

        return NativeDevice.open()
    if kind == "browser" and in_browser():
        from .browser import BrowserDevice

        return BrowserDevice.open_sync()
    raise _unavailable(kind)


async def _open_async(kind: str) -> Device:
    if kind == "browser" and in_browser():
        from .browser import BrowserDevice

        return await BrowserDevice.open()
    return _open_sync(kind)


def _pick(prefer: str | None, fallback: bool, fresh: bool) -> list[str]:
    """The backends to try, in order (forgetting their open devices when ``fresh``)."""
    order = _order(prefer)
    if not fallback:
        order = order[:1]
    if fresh:
        for kind in order:
            _open.pop(kind, None)
    return order


def _chosen(kind: str, dev: Device, skipped: list[tuple[str, str]], prefer: str | None) -> Device:
    """``dev``, remembered and told what was skipped; with no preference, a software
    adapter gives way to the compiled C device where there is a compiler."""
    _open[kind] = dev  # kept for device(kind) even when given way
    if prefer is None and software(dev) and _compiled_c(skipped):
        skipped.append((BACKENDS[kind], f"{dev.name} is a software adapter"))
        kind, dev = "c", _open["c"]
    dev.skipped = skipped
    _open[kind] = dev
    return dev


def _cached(kind: str) -> Device | None:
    dev = _open.get(kind)
    return dev if dev is not None and not dev.lost else None


def device(prefer: str | None = None, *, fallback: bool = True, fresh: bool = False) -> Device:
    """The best available device (``prefer`` first: "native", "browser" or "cpu"). Backends
    that fail are listed in ``.skipped``; with ``fallback=False`` their failure is raised."""
    skipped: list[tuple[str, str]] = []
    for kind in _pick(prefer, fallback, fresh):
        dev = _cached(kind)
        if dev is None:
            try:
                dev = _open_sync(kind)
            except NoDeviceError as exc:
                if not fallback:
                    raise
                skipped.append((exc.backend, exc.why))
                continue
        return _chosen(kind, dev, skipped, prefer)
    raise NoDeviceError("tang.gpu", "no backend available")  # unreachable: cpu always is


def _compiled_c(skipped: list[tuple[str, str]]) -> bool:
    """Open the compiled C device for ``device()`` (False, noting why, when there is none)."""
    if _cached("c") is not None:
        return True
    try:
        _open["c"] = _open_sync("c")
    except NoDeviceError as exc:
        skipped.append((exc.backend, exc.why))
        return False
    return True


async def device_async(
    prefer: str | None = None, *, fallback: bool = True, fresh: bool = False
) -> Device:
    """``device()``, awaitable: the spelling the page uses (WebGPU's adapter is a promise)."""
    skipped: list[tuple[str, str]] = []
    for kind in _pick(prefer, fallback, fresh):
        dev = _cached(kind)
        if dev is None:
            try:
                dev = await _open_async(kind)
            except NoDeviceError as exc:
                if not fallback:
                    raise
                skipped.append((exc.backend, exc.why))
                continue
        return _chosen(kind, dev, skipped, prefer)
    raise NoDeviceError("tang.gpu", "no backend available")


def release() -> list[str]:
    """Destroy the GPU devices ``device()`` opened (freeing their memory); the next call
    opens a fresh one. Returns their names."""
    names = []
    for kind in ("browser", "native"):
        dev = _open.pop(kind, None)
        if dev is not None and not dev.lost:
            dev.destroy()
            names.append(dev.name)
    return names
