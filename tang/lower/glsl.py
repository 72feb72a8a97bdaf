"""GLSL 4.50 compute shader (f32) for Vulkan: compile with ``glslangValidator -V``.

The same bindings as the WGSL kernel, in descriptor set 0: binding 0 a uniform block
``Params { uint n; }``, binding 1 a readonly buffer ``float src[]`` (input ``k`` of item ``i``
at ``src[k*n + i]``), binding 2 a buffer ``float dst[]`` (output ``j`` at ``dst[j*n + i]``).
Entry point ``main`` (GLSL requires it; the kernel name goes in a comment), local size 64,
item ``i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64``.
Inf and nan are bit casts (``uintBitsToFloat``); GLSL, like WGSL, leaves their behaviour to
the implementation, and lavapipe keeps IEEE semantics. ``tanh`` is spelled from ``exp``, as
in WGSL.
"""

from __future__ import annotations

from .base import C_OPS, TANH_FROM_EXP, Printer, call
from .program import Program


class GLSL(Printer):
    name = "glsl"
    label, extension, language = "GLSL", "comp", "cpp"
    dtypes = ("f32",)
    ops = {**C_OPS, "atan2": call("atan", 2), "tanh": TANH_FROM_EXP}
    float_suffix = {"f32": ""}
    inf = {"f32": "uintBitsToFloat(0x7f800000u)"}
    nan = {"f32": "uintBitsToFloat(0x7fc00000u)"}
    uint_suffix = "u"
    declare = "{type} {name} = {expr};"
    step_value = "{type}({name})"
    step_count = "int({x})"

    def kernel_frame(self, name: str, ty: str, prog: Program) -> tuple[list[str], int, list[str]]:
        head = [
            "#version 450",
            f"// kernel {name}",
            "layout(local_size_x = 64) in;",
            "layout(set = 0, binding = 0) uniform Params { uint n; };",
            "layout(std430, set = 0, binding = 1) readonly buffer Src { float src[]; };",
            "layout(std430, set = 0, binding = 2) buffer Dst { float dst[]; };",
            "",
            self.layout_comment(prog),
            "void main() {",
            "    uvec3 gid = gl_GlobalInvocationID;",
            "    uint i = gid.x + gid.y * gl_NumWorkGroups.x * 64u;",
            "    if (i >= n) {",
            "        return;",
            "    }",
        ]
        return head, 1, ["}"]
