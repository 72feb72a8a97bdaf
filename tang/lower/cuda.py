"""CUDA C++ kernel (f32 or f64).

``extern "C" __global__ void f(const T *__restrict__ src, T *__restrict__ dst,
unsigned int n)`` — input ``k`` of item ``i`` at ``src[k*n + i]``, output ``j`` at
``dst[j*n + i]``; launch a 1-D grid of at least ``n`` threads (any block size). Inf and nan
are built from their bits with ``__int_as_float`` / ``__longlong_as_double``. Compile
without ``--use_fast_math`` so inf and nan follow IEEE 754. nvcc fuses ``a*b + c`` into one
multiply-add by default, which rounds once instead of twice: add ``-fmad=false`` for results
bit for bit those of tang's evaluator and the other IEEE backends (tested so on an H200).
"""

from __future__ import annotations

from .base import C_OPS, Printer, functions
from .program import Program


class CUDA(Printer):
    name = "cuda"
    label, extension, language = "CUDA", "cu", "cpp"
    dtypes = ("f32", "f64")
    ops = C_OPS
    ops_f32 = {**C_OPS, **functions("{}f")}
    inf = {"f32": "__int_as_float(0x7f800000)", "f64": "__longlong_as_double(0x7ff0000000000000LL)"}
    nan = {"f32": "__int_as_float(0x7fc00000)", "f64": "__longlong_as_double(0x7ff8000000000000LL)"}

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        head = [
            self.layout_comment(prog),
            f'extern "C" __global__ void {name}(const {ty} *__restrict__ src, '
            f"{ty} *__restrict__ dst, unsigned int n) {{",
            "    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "    if (i >= n) {",
            "        return;",
            "    }",
        ]
        return head, 1, ["}"]
