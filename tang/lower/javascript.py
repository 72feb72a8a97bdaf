"""JavaScript (f64): a loop kernel over typed arrays, or a function returning its outputs.

Kernel: ``function f(src, dst, n)`` — input ``k`` of item ``i`` at ``src[k*n + i]``, output
``j`` at ``dst[j*n + i]`` (Float64Array or plain arrays). Function: ``function f(x, y)``
returns ``[value, ...]``. ``Math`` follows IEEE 754: 1/0 is Infinity, Math.sqrt(-1) NaN.
"""

from __future__ import annotations

from .base import ATOM, C_OPS, CMP, LOWEST, Op, Printer, functions
from .program import Program


class JavaScript(Printer):
    name = "javascript"
    label, extension, language = "JavaScript", "js", "javascript"
    dtypes = ("f64",)
    kinds = ("kernel", "function")
    ops = {
        **C_OPS,
        **functions("Math.{}"),
        "eq": Op("{0} === {1}", CMP, (CMP + 1, CMP + 1)),
        "exp2": Op("Math.pow(2, {0})", ATOM, (LOWEST,)),
    }
    float_suffix = {"f64": ""}
    inf = {"f64": "Infinity"}
    nan = {"f64": "NaN"}
    declare = "const {name} = {expr};"
    fn_return = "return [{exprs}];"
    repeat = "for (let {var} = 0; {var} < {extent}; {var}++) {{"
    carry = "let {name} = {value};"
    step_value = "{name}"
    step_count = "{x}"

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        head = [
            self.layout_comment(prog),
            f"function {name}(src, dst, n) {{",
            "    for (let i = 0; i < n; i++) {",
        ]
        return head, 2, ["    }", "}"]

    def function_frame(
        self, name: str, ty: str, params: list[str], prog: Program
    ) -> tuple[list[str], int, list[str]]:
        return [f"function {name}({', '.join(params)}) {{"], 1, ["}"]
