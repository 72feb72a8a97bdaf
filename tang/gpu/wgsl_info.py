"""Read a hand-written WGSL module's resource bindings and compute entry points (workgroup
size), so a device can check them against its limits and size a dispatch before the driver
sees them. Kernels printed by ``tang.lower`` need no reading: they carry this description
(``Lowered.info``).

This is a reader of declarations only, not a WGSL parser: the driver still validates.
"""

from __future__ import annotations

import re

from ..lower.bindings import Binding, KernelInfo
from .errors import GPUError, ShaderError

__all__ = ["Binding", "KernelInfo", "inspect", "strip_comments"]

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_ATTRS = r"((?:@\w+\s*(?:\([^)]*\))?\s*)+)"
_VAR = re.compile(_ATTRS + r"var\s*<\s*(\w+)\s*(?:,\s*(\w+)\s*)?>\s*(\w+)\s*:\s*([^;]+);")
_FN = re.compile(_ATTRS + r"fn\s+(\w+)")
_ATTR = re.compile(r"@(\w+)\s*(?:\(([^)]*)\))?")


def strip_comments(source: str) -> str:
    """The source without comments, keeping line breaks so positions stay meaningful."""
    source = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), source)
    return _LINE_COMMENT.sub("", source)


def inspect(source: str, entry: str | None = None) -> KernelInfo:
    """Bindings and workgroup size of ``entry`` (default: the module's only compute entry)."""
    if not isinstance(source, str) or not source.strip():
        raise ShaderError("the kernel source is empty")
    text = strip_comments(source)
    entries: dict[str, tuple[int, int, int] | None] = {}
    for m in _FN.finditer(text):
        attrs = dict(_ATTR.findall(m.group(1)))
        if "compute" in attrs:
            entries[m.group(2)] = _workgroup_size(attrs.get("workgroup_size"), m.group(2))
    if not entries:
        raise ShaderError("no @compute entry point in the kernel")
    if entry is None:
        if len(entries) > 1:
            raise ShaderError(f"several compute entry points ({', '.join(entries)}); name one")
        entry = next(iter(entries))
    elif entry not in entries:
        raise ShaderError(f"no @compute entry point named {entry!r} (found {', '.join(entries)})")
    size = entries[entry]
    if size is None:
        raise ShaderError(f"entry point {entry!r} has no @workgroup_size")
    return KernelInfo(entry, size, tuple(_bindings(text)))


def _workgroup_size(arg: str | None, name: str) -> tuple[int, int, int] | None:
    if arg is None:
        return None
    parts = [p.strip().rstrip("ui") for p in arg.split(",") if p.strip()]
    try:
        dims = [int(p, 0) for p in parts]
    except ValueError:
        raise GPUError(
            f"@workgroup_size({arg}) of {name!r}: tang needs integer literals to size dispatches"
        ) from None
    if not 1 <= len(dims) <= 3:
        raise ShaderError(f"@workgroup_size({arg}) of {name!r} needs one to three sizes")
    x, y, z = [*dims, 1, 1][:3]
    return x, y, z


def _bindings(text: str) -> list[Binding]:
    out: list[Binding] = []
    for m in _VAR.finditer(text):
        attrs = dict(_ATTR.findall(m.group(1)))
        if "group" not in attrs or "binding" not in attrs:
            continue
        space, access = m.group(2), m.group(3) or "read"
        out.append(
            Binding(
                int(attrs["group"], 0),
                int(attrs["binding"], 0),
                m.group(4),
                space,
                access,
                " ".join(m.group(5).split()),
            )
        )
    out.sort(key=lambda b: (b.group, b.binding))
    return out
