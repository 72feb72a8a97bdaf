"""C99: a loop kernel over packed buffers, or a plain function writing its outputs.

Kernel: ``void f(const double *restrict src, double *restrict dst, size_t n)`` — input ``k``
of item ``i`` at ``src[k*n + i]``, output ``j`` at ``dst[j*n + i]``. Function:
``void f(double x, double y, double out[m])``. Needs ``<math.h>`` (link with ``-lm``);
compile without ``-ffast-math`` so inf and nan behave as in IEEE 754 and Python.
"""

from __future__ import annotations

from .base import C_INT_OPS, C_OPS, Printer, functions
from .program import Program

# glibc's vector maths (libmvec), where the compiled C device found it (it defines
# TANG_LIBMVEC and links -lmvec): a loop over these functions then vectorises, each call
# a vector of values at once, as numpy's own ufuncs do
VECTOR_MATH_FUNCTIONS = ("expf", "exp2f", "logf", "log2f", "sinf", "cosf", "tanhf", "powf")
VECTOR_MATH = (
    "#ifdef TANG_LIBMVEC",
    *(
        f'__attribute__((simd("notinbranch"))) float {f}(float{", float" * (f == "powf")});'
        for f in VECTOR_MATH_FUNCTIONS
    ),
    "#endif",
    "",
)


class C(Printer):
    name = "c"
    label, extension, language = "C", "c", "cpp"
    dtypes = ("f64", "f32")
    kinds = ("kernel", "function")
    ops = C_OPS
    ops_f32 = {**C_OPS, **functions("{}f")}
    bool_type = "int"
    int_dtypes = ("i64",)
    types = {"f32": "float", "f64": "double", "i64": "int64_t"}
    ops_int = C_INT_OPS
    int_literal = "INT64_C({v})"
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
    to_index = "({x} > 0 ? ({x} < {last} ? (long){x} : {last}) : 0)"
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
    unroll_hint = "#ifdef __GNUC__\n#pragma GCC unroll {extent}\n#endif"
    nest_header = (
        "#include <math.h>",
        "#include <stdint.h>",
        "#include <stdlib.h>",
        "",
        "/* 16-bit elements of a byte buffer, loaded whole (the compiler may not assume they",
        "   are aligned, nor that they alias nothing) */",
        "#ifdef __GNUC__",
        "typedef uint16_t tang_u16 __attribute__((may_alias, aligned(1)));",
        "#else",
        "typedef uint16_t tang_u16;",
        "#endif",
        "",
        "/* an IEEE half's value (subnormals, infinities and NaN too) by bit arithmetic,",
        "   which the compiler vectorizes (F16C's scalar form stops it vectorizing loops) */",
        "static inline float tang_f16(uint32_t h) {",
        "    union { uint32_t u; float f; } o;",
        "    o.u = (h & 0x7fffu) << 13;",
        "    o.f *= 0x1p112f;",
        "    if ((h & 0x7c00u) == 0x7c00u) o.u |= 0x7f800000u;",
        "    o.u |= (h & 0x8000u) << 16;",
        "    return o.f;",
        "}",
        "",
        *VECTOR_MATH,
    )
    # packed words are read as the little-endian bytes they are (a contiguous run of
    # elements is then a contiguous run of bytes, which the compiler vectorizes)
    word_type = "uint8_t"
    packed = {
        "u4": "(({type})(({name}[({i}) >> 1] >> ((({i}) & 1) << 2)) & 15u))",
        "u8": "(({type}){name}[{i}])",
        "i8": "(({type})(int8_t){name}[{i}])",
        "u16": "(({type})((const tang_u16 *){name})[{i}])",
        "f16": "(({type})tang_f16(((const tang_u16 *){name})[{i}]))",
    }
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
