"""The tang GPU error family: one base class callers catch to fall back to the CPU device."""

from __future__ import annotations

import re


class GPUError(RuntimeError):
    """Any failure of a tang device; ``reason`` is the one-line cause the page can show."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(reason + (f"\n{detail}" if detail else ""))


class NoDeviceError(GPUError):
    """A backend is not available here: ``backend`` names it, ``why`` says why not."""

    def __init__(self, backend: str, why: str) -> None:
        self.backend, self.why = backend, why
        super().__init__(f"{backend}: {why}")


class ShaderError(GPUError):
    """A kernel failed to compile or validate; ``line``/``column`` point into its source."""

    def __init__(self, reason: str, detail: str = "", line: int = 0, column: int = 0) -> None:
        self.line, self.column = line, column
        where = f" at line {line}, column {column}" if line else ""
        super().__init__(f"kernel rejected{where}: {reason}", detail)


class LimitError(GPUError):
    """A kernel or buffer needs more than the device allows (which limit, asked, allowed)."""

    def __init__(self, limit: str, asked: int, allowed: int, what: str) -> None:
        self.limit, self.asked, self.allowed = limit, asked, allowed
        super().__init__(f"{what} needs {limit} = {asked:,}, but this device allows {allowed:,}")


class DeviceLostError(GPUError):
    """The device was destroyed or lost; get a new one with ``tang.gpu.device()``."""


class DataError(GPUError, ValueError):
    """Input data that cannot become a buffer (wrong type, bad element, wrong length)."""


_LOCATION = re.compile(r"wgsl:(\d+):(\d+)")
_NAGA_REASON = re.compile(r"(?:parsing error|error): (.+)")


def shader_error(message: str, source: str = "") -> ShaderError:
    """Turn a compiler message (naga's or a browser's) into a ShaderError with a position."""
    loc = _LOCATION.search(message)
    line, column = (int(loc.group(1)), int(loc.group(2))) if loc else (0, 0)
    reasons = [m.group(1).strip() for m in _NAGA_REASON.finditer(message)]
    reason = reasons[-1] if reasons else _last_meaningful_line(message)
    return ShaderError(reason, message.strip(), line, column)


def _last_meaningful_line(message: str) -> str:
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown compiler error"
