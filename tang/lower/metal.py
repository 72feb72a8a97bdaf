"""Metal Shading Language (f32) compute kernel.

``kernel void f(device const float *src [[buffer(0)]], device float *dst [[buffer(1)]],
constant uint &n [[buffer(2)]], uint i [[thread_position_in_grid]])`` — input ``k`` of item
``i`` at ``src[k*n + i]``, output ``j`` at ``dst[j*n + i]``; dispatch at least ``n`` threads.
Math uses the ``precise::`` functions. Compile with fast math off
(``MTLCompileOptions.mathMode = MTLMathModeSafe``): under fast math Metal may assume there
is no inf or nan, and then 1/0, log2(0) and sqrt(-1) are undefined.
"""

from __future__ import annotations

from .base import C_OPS, Printer, functions
from .program import Program


class Metal(Printer):
    name = "metal"
    label, extension, language = "Metal", "metal", "cpp"
    dtypes = ("f32",)
    ops = {**C_OPS, **functions("precise::{}")}

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        pad = " " * (len(name) + 13)
        head = [
            "#include <metal_stdlib>",
            "using namespace metal;",
            "",
            self.layout_comment(prog),
            f"kernel void {name}(device const float *src [[buffer(0)]],",
            f"{pad}device float *dst [[buffer(1)]],",
            f"{pad}constant uint &n [[buffer(2)]],",
            f"{pad}uint i [[thread_position_in_grid]]) {{",
            "    if (i >= n) {",
            "        return;",
            "    }",
        ]
        return head, 1, ["}"]
