"""The binding layout a printed GPU kernel carries: which resource sits at which binding,
and the workgroup size of its entry point.

The WGSL printer writes its declarations from these tables, and the kernel it prints
(``Lowered.info``) hands the same description to ``tang.gpu``, so a device checks its limits
and binds buffers without reading the source back. (Hand-written WGSL is still read by
``tang.gpu.wgsl_info``.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Binding:
    """One ``var<space, access>`` resource declaration of a module."""

    group: int
    binding: int
    name: str
    space: str  # "storage" or "uniform"
    access: str  # "read", "read_write" (uniform: "read")
    type: str


@dataclass(frozen=True)
class KernelInfo:
    """What a device needs to know about one compute entry point."""

    entry: str
    workgroup_size: tuple[int, int, int]
    bindings: tuple[Binding, ...]

    @property
    def storage(self) -> list[Binding]:
        return [b for b in self.bindings if b.space == "storage"]

    @property
    def invocations(self) -> int:
        x, y, z = self.workgroup_size
        return x * y * z
