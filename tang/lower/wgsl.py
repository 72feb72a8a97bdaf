"""WGSL (f32) compute kernel for WebGPU: one invocation per item.

Bindings, all in ``@group(0)``:

- ``@binding(0) var<uniform> params: Params`` with ``struct Params { n: u32 }`` — the item
  count (a 16-byte uniform buffer is enough; only the first 4 bytes are read);
- ``@binding(1) var<storage, read> src: array<f32>`` — input ``k`` of item ``i`` at
  ``src[k*n + i]``, inputs in the program's input order;
- ``@binding(2) var<storage, read_write> dst: array<f32>`` — output ``j`` at ``dst[j*n + i]``.

Entry point: the kernel name (default ``f``), ``@workgroup_size(64)``. Item
``i = gid.x + gid.y * num_workgroups.x * 64``, so a dispatch of ``(gx, gy, 1)`` workgroups
covers ``gx * gy * 64`` items: use ``gy > 1`` when ``ceil(n / 64)`` exceeds the 65,535
workgroups a dimension allows. Invocations with ``i >= n`` return at once.

WGSL has no inf/nan literals, and a constant expression whose value is inf or nan is a
shader-creation error: Chromium's compiler (Tint) evaluates ``bitcast<f32>(0x7f800000u)`` when
it compiles and rejects it ("value inf cannot be represented as 'f32'"), though naga accepts
it. So inf and nan are bit casts of module-scope private variables (``SPECIAL_VALUES``), which
are run-time values with the same IEEE bits. The spec lets an implementation treat inf and
nan as indeterminate (§ floating-point accuracy); lavapipe keeps IEEE behaviour, which the
tests check.

``tanh`` is spelled ``1 - 2/(exp(2x) + 1)``, not the built-in: WGSL lets tanh inherit the
accuracy of sinh/cosh, and some drivers' tanh returns nan once exp overflows (naga's
lowering, Metal's fast tanh); a clamp would turn nan into ±1. Near 0 both are accurate to
about 1e-7 absolute, not relative.
"""

from __future__ import annotations

from .base import ATOM, C_OPS, LOWEST, TANH_FROM_EXP, Op, Printer
from .bindings import Binding
from .program import Program

# The kernel's resources, declared from this table (and carried by each printed kernel).
BINDINGS = (
    Binding(0, 0, "params", "uniform", "read", "Params"),
    Binding(0, 1, "src", "storage", "read", "array<f32>"),
    Binding(0, 2, "dst", "storage", "read_write", "array<f32>"),
)


# inf and nan as run-time values (see above): every WGSL kernel of tang declares these.
SPECIAL_VALUES = (
    "var<private> tang_inf_bits: u32 = 0x7f800000u;",
    "var<private> tang_nan_bits: u32 = 0x7fc00000u;",
)


def declaration(b: Binding) -> str:
    """The WGSL line that declares ``b``."""
    space = "uniform" if b.space == "uniform" else f"storage, {b.access}"
    return f"@group({b.group}) @binding({b.binding}) var<{space}> {b.name}: {b.type};"


class WGSL(Printer):
    name = "wgsl"
    label, extension, language = "WGSL", "wgsl", "wgsl"
    dtypes = ("f32",)
    ops = {
        **C_OPS,
        "select": Op("select({2}, {1}, {0})", ATOM, (LOWEST,) * 3),
        "tanh": TANH_FROM_EXP,
    }
    types = {"f32": "f32"}
    inf = {"f32": "bitcast<f32>(tang_inf_bits)"}
    nan = {"f32": "bitcast<f32>(tang_nan_bits)"}
    uint_suffix = "u"
    declare = "let {name} = {expr};"
    repeat = "for (var {var}: i32 = 0; {var} < {extent}; {var}++) {{"
    carry = "var {name}: {type} = {value};"
    step_value = "{type}({name})"
    step_count = "i32({x})"
    bindings = BINDINGS
    workgroup_size = (64, 1, 1)
    # loop nests (tang.tensor: one kernel per comprehension, framed by tang.tensor.kernels,
    # so no loop-nest function spellings; see Printer for the fields)
    loop = "for (var {var}: i32 = 0; {var} < {extent}; {var}++) {{"
    loop_step = "for (var {var}: i32 = 0; {var} < {extent}; {var} += {step}) {{"
    loop_end = "}"
    # Mesa's llvmpipe (lavapipe) stops an invocation after 65,535 loop iterations in all,
    # so short inner loops (dot products, vector lanes) are unrolled
    unroll = 64
    state = "var {name}: {type} = {value};"
    assign = "{name} = {expr};"
    declare_index = "let {name} = {expr};"
    as_value = "{type}({name})"
    clamp = "clamp({p}, 0, {last})"
    to_index = "select(0, select({last}, i32({x}), {x} < {type}({last})), {x} > 0.0)"
    element = "{name}[{i}]"
    array = "var {name}: array<{type}, {size}>;"
    unravel = "{flat} / {stride} % {extent}"
    minimum = "min({a}, {b})"
    block, block_end = "{", "}"
    when, when_end = "if {cond} {{", "}"
    shared = "var<workgroup> {name}: array<{type}, {size}>;"
    barrier = "workgroupBarrier();"
    # llvmpipe loads a storage buffer one invocation at a time: a vec4 is one load, not four
    wide = 4
    wide_buffer = "array<vec4<{type}>>"
    wide_element = "{name}[({i}) >> 2u][({i}) & 3]"
    wide_array = "var {name}: array<vec4<{type}>, {size}>;"
    packed = {
        "u4": "f32(extractBits({name}[({i}) >> 3u], u32(({i}) & 7) * 4u, 4u))",
        "u8": "f32(extractBits({name}[({i}) >> 2u], u32(({i}) & 3) * 8u, 8u))",
        "i8": "f32(extractBits(bitcast<i32>({name}[({i}) >> 2u]), u32(({i}) & 3) * 8u, 8u))",
        "u16": "f32(extractBits({name}[({i}) >> 1u], u32(({i}) & 1) * 16u, 16u))",
        "f16": "unpack2x16float({name}[({i}) >> 1u])[({i}) & 1]",
    }

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        width = self.workgroup_size[0]
        head = [
            "struct Params {",
            "    n: u32,",
            "}",
            "",
            *(declaration(b) for b in self.bindings),
            *SPECIAL_VALUES,
            "",
            self.layout_comment(prog),
            f"@compute @workgroup_size({width})",
            f"fn {name}(@builtin(global_invocation_id) gid: vec3<u32>,",
            f"{' ' * (len(name) + 4)}@builtin(num_workgroups) groups: vec3<u32>) {{",
            "    let n = params.n;",
            f"    let i = gid.x + gid.y * groups.x * {width}u;",
            "    if i >= n {",
            "        return;",
            "    }",
        ]
        if not prog.used_inputs:
            head.append("    _ = &src;  // keep binding 1 in the layout")
        return head, 1, ["}"]
