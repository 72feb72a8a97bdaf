"""OpenCL C kernel (f32, or f64 on devices with ``cl_khr_fp64``).

``__kernel void f(__global const T *restrict src, __global T *restrict dst, const uint n)``
— input ``k`` of item ``i`` at ``src[k*n + i]``, output ``j`` at ``dst[j*n + i]``; enqueue a
1-D range of at least ``n`` work items. Build without ``-cl-fast-relaxed-math`` so inf and
nan follow IEEE 754.
"""

from __future__ import annotations

from .base import C_OPS, Printer
from .program import Program


class OpenCL(Printer):
    name = "opencl"
    label, extension, language = "OpenCL", "cl", "cpp"
    dtypes = ("f32", "f64")
    ops = C_OPS

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        head = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable", ""] if ty == "double" else []
        head += [
            self.layout_comment(prog),
            f"__kernel void {name}(__global const {ty} *restrict src, "
            f"__global {ty} *restrict dst, const uint n) {{",
            "    const size_t i = get_global_id(0);",
            "    if (i >= n) {",
            "        return;",
            "    }",
        ]
        return head, 1, ["}"]
