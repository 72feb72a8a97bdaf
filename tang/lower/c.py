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
    # loop nests (tang.tensor: one function over every buffer; see Printer for the fields)
    loop = "for (long {var} = 0; {var} < {extent}; ++{var}) {{"
    loop_step = "for (long {var} = 0; {var} < {extent}; {var} += {step}) {{"
    loop_end = "}"
    unroll = 0
    state = "{type} {name} = {value};"
    assign = "{name} = {expr};"
    declare_index = "const long {name} = {expr};"
    as_value = "(({type}){name})"
    clamp = "(({p}) < 0 ? 0 : ({p}) > {last} ? {last} : ({p}))"
    element = "{name}[{i}]"
    array = "{type} {name}[{size}];"
    unravel = "{flat} / {stride} % {extent}"
    minimum = "(({a}) < ({b}) ? ({a}) : ({b}))"
    block, block_end = "{", "}"
    when, when_end = "if ({cond}) {{", "}"
    shared = barrier = None  # no workgroups
    # OpenMP where the compiler has it (-fopenmp); elsewhere no unknown-pragma warning
    parallel = (
        "#ifdef _OPENMP\n#pragma omp parallel for collapse({depth}) schedule({balance})\n#endif"
    )
    scratch = "{type} *{name} = ({type} *)malloc(sizeof({type}) * {size});"
    scratch_end = "free({name});"
    nest_header = ("#include <math.h>", "#include <stdlib.h>", "")
    nest_function = "void {name}({params}) {{"
    nest_end = "}"
    param_in = "const {type} *restrict {name}"
    param_out = "{type} *restrict {name}"

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        head = [
            "#include <math.h>",
            "#include <stddef.h>",
            "",
            self.layout_comment(prog),
            f"void {name}(const {ty} *restrict src, {ty} *restrict dst, size_t n) {{",
            "#ifdef _OPENMP",
            "    #pragma omp parallel for schedule(static) if (n >= 4096)",
            "#endif",
            "    for (size_t i = 0; i < n; ++i) {",
        ]
        return head, 2, ["    }", "}"]

    def function_frame(
        self, name: str, ty: str, params: list[str], prog: Program
    ) -> tuple[list[str], int, list[str]]:
        args = ", ".join([f"{ty} {p}" for p in params] + [f"{ty} out[{len(prog.outputs)}]"])
        return ["#include <math.h>", "", f"void {name}({args}) {{"], 1, ["}"]
