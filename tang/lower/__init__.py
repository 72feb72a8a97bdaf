"""Lowering: schedule a graph's outputs into a program and print it for eight backends.

``lower(outputs, inputs, backend)`` returns the source and a node ↔ line map; ``BACKENDS``
maps each backend's name to its printer. The package itself is callable, so
``tang.lower(graph, backend="wgsl")`` is ``tang.lower.lower(graph, backend="wgsl")``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence

from ..expr.graph import Graph, Node
from .base import Lowered, Printer
from .c import C
from .cuda import CUDA
from .glsl import GLSL
from .javascript import JavaScript
from .metal import Metal
from .opencl import OpenCL
from .plan import Plan
from .program import COLUMNS, Layout, Let, Load, Program, Statement, Step, Store, schedule
from .python import Python
from .wgsl import WGSL

BACKENDS: dict[str, Printer] = {
    p.name: p for p in (WGSL(), C(), CUDA(), Metal(), OpenCL(), GLSL(), JavaScript(), Python())
}


def lower(
    outputs: Sequence[Node | float] | Graph | Program,
    inputs: Sequence[str] | None = None,
    backend: str = "wgsl",
    *,
    shape: str = "kernel",
    dtype: str | None = None,
    name: str = "f",
    inline: bool = True,
    output_names: Sequence[str] | None = None,
) -> Lowered:
    """Print ``outputs`` (over ``inputs``) for ``backend`` as a ``shape`` ("kernel" or
    "function") in ``dtype`` (the backend's default when None)."""
    printer = BACKENDS.get(backend)
    if printer is None:
        raise ValueError(f"unknown backend '{backend}'; choose from {', '.join(BACKENDS)}")
    if isinstance(outputs, Program):
        prog = outputs
    else:
        prog = schedule(outputs, inputs, inline=inline, output_names=output_names)
    return printer.render(prog, shape=shape, dtype=dtype, name=name)


class _CallableModule(types.ModuleType):
    """Lets ``tang.lower(...)`` call ``lower`` while ``tang.lower.BACKENDS`` etc. still work."""

    def __call__(self, *args, **kwargs) -> Lowered:
        return lower(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "BACKENDS",
    "COLUMNS",
    "Layout",
    "Let",
    "Load",
    "Lowered",
    "Plan",
    "Printer",
    "Program",
    "Statement",
    "Step",
    "Store",
    "lower",
    "schedule",
]
