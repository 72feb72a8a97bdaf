"""Python (f64): the CPU reference — a loop kernel over sequences, or a plain function.

Kernel: ``def f(src, dst, n)`` — input ``k`` of item ``i`` at ``src[k*n + i]``, output ``j``
at ``dst[j*n + i]`` (lists or ``array('d')``). Function: ``def f(x, y)`` returns
``[value, ...]``. The math comes from ``tang.ieee`` (inf and nan where ``math`` would raise),
the same kernels the graph evaluator uses, so results match it bit for bit.
"""

from __future__ import annotations

from .base import C_INT_OPS, C_OPS, MUL, SELECT, UNARY, Op, Printer, call, functions
from .hoist import hoist_invariants
from .program import Program

IMPORTS = [
    "from tang.ieee import INF as _inf, NAN as _nan",
    "from tang.ieee import atan2 as _atan2, cos as _cos, exp as _exp, exp2 as _exp2",
    "from tang.ieee import floor as _floor, log as _log, log2 as _log2",
    "from tang.ieee import recip as _recip, sin as _sin, sqrt as _sqrt, tanh as _tanh",
]


class Python(Printer):
    name = "python"
    label, extension, language = "Python", "py", "python"
    dtypes = ("f64",)
    kinds = ("kernel", "function")
    ops = {
        **C_OPS,
        **functions("_{}"),
        "recip": call("_recip"),
        "select": Op("{1} if {0} else {2}", SELECT, (SELECT + 1,) * 3),
    }
    # integers are Python's own: exact at any size, so an i64 program's overflow (which C
    # leaves undefined) is never hidden here; % already takes the divisor's sign
    int_dtypes = ("i64",)
    types = {"f64": "float", "i64": "int"}
    ops_int = {
        **C_INT_OPS,
        "mod": Op("{0} % {1}", MUL, (UNARY, UNARY)),
        "select": Op("{1} if {0} else {2}", SELECT, (SELECT + 1,) * 3),
    }
    comment = "#"
    float_suffix = {"f64": ""}
    inf = {"f64": "_inf"}
    nan = {"f64": "_nan"}
    declare = "{name} = {expr}"
    store = "{buffer}[{index}] = {expr}"
    fn_return = "return [{exprs}]"
    repeat, repeat_end = "for {var} in range({extent}):", None
    carry, carry_set = "{name} = {value}", "{name} = {expr}"
    step_value = "float({name})"
    step_count = "int({x})"
    # loop nests (tang.tensor: one function over every buffer; see Printer for the fields)
    loop = "for {var} in range({extent}):"
    loop_step = "for {var} in range(0, {extent}, {step}):"
    loop_end = None
    unroll = 0
    state = "{name} = {value}"
    assign = "{name} = {expr}"
    declare_index = "{name} = {expr}"
    as_value = "{name}"
    clamp = "min(max({p}, 0), {last})"
    to_index = "(int({x}) if 0 < {x} < {last} else ({last} if {x} >= {last} else 0))"
    element = "{name}[{i}]"
    array = "{name} = [{value}] * {size}"
    unravel = "{flat} // {stride} % {extent}"
    minimum = "min({a}, {b})"
    block = block_end = None
    when, when_end = "if {cond}:", None
    shared = barrier = None  # no workgroups
    nest_header = (*IMPORTS, "from tang.tensor.packed import half as _half", "", "")
    packed = {
        "u4": "float(({name}[({i}) >> 3] >> ((({i}) & 7) << 2)) & 15)",
        "u8": "float(({name}[({i}) >> 2] >> ((({i}) & 3) << 3)) & 255)",
        "i8": "float(((({name}[({i}) >> 2] >> ((({i}) & 3) << 3)) & 255) ^ 128) - 128)",
        "u16": "float(({name}[({i}) >> 1] >> ((({i}) & 1) << 4)) & 65535)",
        "f16": "_half({name}[({i}) >> 1] >> ((({i}) & 1) << 4))",
    }
    nest_function = "def {name}({params}):"
    nest_end = None
    param_in = param_out = "{name}"

    def finish_nest(self, source: str) -> str:
        """CPython hoists nothing out of a loop: the printed nest's invariant work is
        moved out of its loops here (``tang.lower.hoist``)."""
        return hoist_invariants(source)

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        head = [*IMPORTS, "", "", self.layout_comment(prog)]
        return [*head, f"def {name}(src, dst, n):", "    for i in range(n):"], 2, []

    def function_frame(
        self, name: str, ty: str, params: list[str], prog: Program
    ) -> tuple[list[str], int, list[str]]:
        return [*IMPORTS, "", "", f"def {name}({', '.join(params)}):"], 1, []
