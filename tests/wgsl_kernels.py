"""Hand-written WGSL for the GPU tests: shared by the native tests and, as source text, the
page tests that run the same kernels inside Pyodide."""


def elementwise(body: str, inputs: int = 1, wg: int = 64, ty: str = "f32") -> str:
    """A kernel y[i] = body over inputs x0..x{k-1}, indexed for 2-D dispatch."""
    decls = "".join(
        f"@group(0) @binding({k}) var<storage, read> x{k}: array<{ty}>;\n" for k in range(inputs)
    )
    return f"""{decls}
@group(0) @binding({inputs}) var<storage, read_write> y: array<{ty}>;
@group(0) @binding({inputs + 1}) var<uniform> n: u32;
@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + gid.y * (nwg.x * {wg}u);
    if (i >= n) {{ return; }}
    y[i] = {body};
}}
"""
