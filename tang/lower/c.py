"""C99: a loop kernel over packed buffers, or a plain function writing its outputs.

Kernel: ``void f(const double *restrict src, double *restrict dst, size_t n)`` — input ``k``
of item ``i`` at ``src[k*n + i]``, output ``j`` at ``dst[j*n + i]``. Function:
``void f(double x, double y, double out[m])``. Needs ``<math.h>`` (link with ``-lm``);
compile without ``-ffast-math`` so inf and nan behave as in IEEE 754 and Python.
"""

from __future__ import annotations

from .base import C_OPS, Printer, functions
from .program import Program


class C(Printer):
    name = "c"
    label, extension, language = "C", "c", "cpp"
    dtypes = ("f64", "f32")
    kinds = ("kernel", "function")
    ops = C_OPS
    ops_f32 = {**C_OPS, **functions("{}f")}
    bool_type = "int"

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        head = [
            "#include <math.h>",
            "#include <stddef.h>",
            "",
            self.layout_comment(prog),
            f"void {name}(const {ty} *restrict src, {ty} *restrict dst, size_t n) {{",
            "    for (size_t i = 0; i < n; ++i) {",
        ]
        return head, 2, ["    }", "}"]

    def function_frame(
        self, name: str, ty: str, params: list[str], prog: Program
    ) -> tuple[list[str], int, list[str]]:
        args = ", ".join([f"{ty} {p}" for p in params] + [f"{ty} out[{len(prog.outputs)}]"])
        return ["#include <math.h>", "", f"void {name}({args}) {{"], 1, ["}"]
