"""Run printed kernels on real toolchains: gcc, g++, node, nvcc, glslangValidator, wgpu-py
(Mesa lavapipe) and pyopencl (PoCL). Test helpers only — library code never shells out.

Every runner takes kernel source in the packed layout of ``tang.lower`` (input ``k`` of item
``i`` at ``src[k*n + i]``, output ``j`` at ``dst[j*n + i]``) plus the flat ``src`` values,
and returns the flat ``dst`` values. Data crosses process boundaries as raw little-endian
floats, so nan, ±inf and -0.0 arrive bit for bit. A runner raises ``ToolchainError``
(with the tool's own message) when the source does not compile, and ``pytest.skip`` is the
caller's business when ``available(tool)`` is false.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import subprocess
import tempfile
from array import array
from collections.abc import Sequence
from pathlib import Path

from tang.expr.graph import PRIMITIVES, Node, topo_order
from tang.lower.base import to_f32

GCC_FLAGS = [
    "-std=c99",
    "-O2",
    "-Wall",
    "-Werror",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
]
NVCC = shutil.which("nvcc") or "/usr/local/bin/nvcc"
LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


class ToolchainError(RuntimeError):
    """A compiler or runtime rejected a kernel; the message is the tool's own diagnostic."""


def available(tool: str) -> bool:
    """Whether ``tool`` (gcc, g++, node, nvcc, glslang, wgpu, opencl) can run here."""
    if tool == "python":
        return True
    if tool == "nvcc":
        return os.access(NVCC, os.X_OK)
    if tool == "glslang":
        return shutil.which("glslangValidator") is not None
    if tool == "wgpu":
        return _wgpu_device() is not None
    if tool == "opencl":
        return _opencl_context() is not None
    return shutil.which(tool) is not None


def _run(cmd: Sequence[str], stdin: bytes = b"", cwd: str | None = None, timeout=300) -> bytes:
    proc = subprocess.run(list(cmd), input=stdin, capture_output=True, cwd=cwd, timeout=timeout)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace")
        raise ToolchainError(f"{Path(cmd[0]).name} failed ({proc.returncode}):\n{err[-4000:]}")
    return proc.stdout


def _floats(data: bytes, dtype: str) -> array:
    out = array("d" if dtype == "f64" else "f")
    out.frombytes(data)
    return out


def _pack(values: Sequence[float], dtype: str) -> bytes:
    return array("d" if dtype == "f64" else "f", values).tobytes()


# ---------------------------------------------------------------------------------------
# C, C++ (Metal and CUDA emulated on the host), node


def _driver(kernel_call: str, ty: str, n_src: int, n_dst: int) -> str:
    """A main() that reads src from stdin, runs the kernel once and writes dst to stdout."""
    return f"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {{
    static {ty} src[{max(n_src, 1)}], dst[{max(n_dst, 1)}];
    if (fread(src, sizeof({ty}), {n_src}, stdin) != {n_src}) return 3;
    {kernel_call};
    if (fwrite(dst, sizeof({ty}), {n_dst}, stdout) != {n_dst}) return 4;
    return 0;
}}
"""


def compile_and_run(
    source: str,
    stdin: bytes,
    *,
    compiler: str = "gcc",
    flags: Sequence[str] = GCC_FLAGS,
    suffix: str = ".c",
    include: dict[str, str] | None = None,
) -> bytes:
    """Compile one translation unit (plus header files ``include``) and run it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"k{suffix}"
        path.write_text(source)
        for name, text in (include or {}).items():
            (Path(tmp) / name).write_text(text)
        exe = Path(tmp) / "k.out"
        _run([compiler, *flags, f"-I{tmp}", str(path), "-o", str(exe), "-lm"], cwd=tmp)
        env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
        proc = subprocess.run([str(exe)], input=stdin, capture_output=True, env=env, timeout=300)
        if proc.returncode != 0:
            raise ToolchainError(f"program failed ({proc.returncode}):\n{proc.stderr.decode()}")
        return proc.stdout


def run_c_kernel(
    source: str, name: str, src: Sequence[float], n: int, n_out: int, dtype: str = "f64"
) -> array:
    """Compile a C kernel with gcc (sanitizers on) and run it over ``n`` items."""
    ty = "double" if dtype == "f64" else "float"
    main = _driver(f"{name}(src, dst, {n})", ty, len(src), n_out * n)
    return _floats(compile_and_run(source + main, _pack(src, dtype)), dtype)


def run_c_functions(
    source: str,
    names: Sequence[str],
    points: Sequence[float],
    n_in: int,
    n_out: int,
    dtype: str = "f64",
) -> array:
    """Call each C function ``names[k](in_0, …, out)`` at every point (``points`` holds
    ``n_in`` values per point) and return outputs ordered function, point, output."""
    ty = "double" if dtype == "f64" else "float"
    n = len(points) // n_in
    args = ", ".join(f"src[p * {n_in} + {k}]" for k in range(n_in))
    # calls go through a volatile table, so gcc compiles each function on its own instead
    # of inlining all of them into one enormous main()
    table = (
        f"static void (*volatile fns[])({', '.join([ty] * n_in)}, {ty} *) = {{{', '.join(names)}}};"
    )
    call = (
        f"for (int k = 0; k < {len(names)}; ++k)\n"
        f"        for (int p = 0; p < {n}; ++p) fns[k]({args}, dst + (k * {n} + p) * {n_out})"
    )
    main = table + _driver(call, ty, len(points), len(names) * n * n_out)
    return _floats(compile_and_run(source + main, _pack(points, dtype)), dtype)


def run_js_functions(
    source: str, names: Sequence[str], points: Sequence[float], n_in: int, n_out: int
) -> array:
    """Like ``run_c_functions`` for JavaScript functions that return their outputs."""
    n = len(points) // n_in
    args = ", ".join(f"src[p * {n_in} + {k}]" for k in range(n_in))
    script = (
        source + NODE_IO + f"const dst = new Float64Array({len(names) * n * n_out});\n"
        f"let o = 0;\nfor (const fn of [{', '.join(names)}]) {{\n"
        f"    for (let p = 0; p < {n}; p++) {{ for (const v of fn({args})) dst[o++] = v; }}\n}}\n"
        "process.stdout.write(Buffer.from(dst.buffer));\n"
    )
    return _floats(run_node(script, _pack(points, "f64")), "f64")


METAL_STDLIB = """// A stand-in for Metal's header so g++ can compile (and run) a kernel body.
#include <cmath>
#define kernel
#define device
#define constant const
typedef unsigned int uint;
namespace metal { namespace precise {
inline float sqrt(float x) { return std::sqrt(x); }
inline float sin(float x) { return std::sin(x); }
inline float cos(float x) { return std::cos(x); }
inline float exp(float x) { return std::exp(x); }
inline float log(float x) { return std::log(x); }
inline float exp2(float x) { return std::exp2(x); }
inline float log2(float x) { return std::log2(x); }
inline float tanh(float x) { return std::tanh(x); }
inline float floor(float x) { return std::floor(x); }
inline float atan2(float y, float x) { return std::atan2(y, x); }
} }
"""

CUDA_PRELUDE = """// Enough of CUDA's device world for g++ to compile and run a kernel on the host.
#include <cmath>
#include <cstring>
#define __global__
#define __restrict__ __restrict
struct Dim3 { unsigned int x, y, z; };
static Dim3 blockIdx, threadIdx, blockDim, gridDim;
static inline float __int_as_float(int b) { float f; std::memcpy(&f, &b, 4); return f; }
static inline double __longlong_as_double(long long b) {
    double d; std::memcpy(&d, &b, 8); return d;
}
"""

# Emulated Metal/CUDA runs check printing and semantics, not a vendor compiler: -O0 keeps
# the compile of a big batch short (warnings are still errors).
CXX_FLAGS = ["-std=c++17", "-O0", "-Wall", "-Werror", "-Wno-attributes"]


def run_metal_as_cpp(source: str, name: str, src: Sequence[float], n: int, n_out: int) -> array:
    """Metal has no compiler here: compile the kernel as C++ against METAL_STDLIB (Metal's
    address-space words and ``precise::`` math) and run it once per item."""
    call = (
        f"const uint count = {n}u;\n    for (uint i = 0; i < count; ++i) {name}(src, dst, count, i)"
    )
    main = _driver(call, "float", len(src), n_out * n)
    out = compile_and_run(
        source + main,
        _pack(src, "f32"),
        compiler="g++",
        flags=CXX_FLAGS,
        suffix=".cpp",
        include={"metal_stdlib": METAL_STDLIB},
    )
    return _floats(out, "f32")


def run_cuda_as_cpp(
    source: str,
    name: str,
    src: Sequence[float],
    n: int,
    n_out: int,
    dtype: str = "f32",
    block: int = 64,
) -> array:
    """Run a CUDA kernel's source on the host (g++ and CUDA_PRELUDE), thread by thread."""
    ty = "double" if dtype == "f64" else "float"
    blocks = (n + block - 1) // block
    call = (
        f"blockDim.x = {block}; gridDim.x = {blocks};\n"
        f"    for (blockIdx.x = 0; blockIdx.x < {blocks}u; ++blockIdx.x)\n"
        f"        for (threadIdx.x = 0; threadIdx.x < {block}u; ++threadIdx.x)\n"
        f"            {name}(src, dst, {n}u)"
    )
    main = _driver(call, ty, len(src), n_out * n)
    out = compile_and_run(
        CUDA_PRELUDE + source + main,
        _pack(src, dtype),
        compiler="g++",
        flags=CXX_FLAGS,
        suffix=".cpp",
    )
    return _floats(out, dtype)


def nvcc_compile(source: str, *, arch: str = "sm_80") -> None:
    """Compile a CUDA source to an object file with nvcc (compile only: no GPU needed)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cu"
        path.write_text(source)
        _run(
            [
                NVCC,
                f"-arch={arch}",
                "-Werror",
                "all-warnings",
                "-c",
                str(path),
                "-o",
                str(Path(tmp) / "k.o"),
            ],
            cwd=tmp,
        )


class NoCudaDevice(ToolchainError):
    """nvcc built the program, but this machine has no CUDA device to run it on."""


CUDA_DRIVER = """
#include <cstdio>
#include <cuda_runtime.h>
#define CHECK(call) do {{ cudaError_t e = (call); if (e != cudaSuccess) {{ \\
    fprintf(stderr, "%s\\n", cudaGetErrorString(e)); \\
    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? 6 : 5; }} }} while (0)
int main(void) {{
    static {ty} src[{n_src}], dst[{n_dst}];
    if (fread(src, sizeof({ty}), {n_src}, stdin) != {n_src}) return 3;
    {ty} *d_src, *d_dst;
    CHECK(cudaMalloc(&d_src, sizeof src));
    CHECK(cudaMalloc(&d_dst, sizeof dst));
    CHECK(cudaMemcpy(d_src, src, sizeof src, cudaMemcpyHostToDevice));
    {name}<<<({n} + 63) / 64, 64>>>(d_src, d_dst, {n}u);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(dst, d_dst, sizeof dst, cudaMemcpyDeviceToHost));
    if (fwrite(dst, sizeof({ty}), {n_dst}, stdout) != {n_dst}) return 4;
    return 0;
}}
"""


def run_cuda_on_gpu(
    source: str,
    name: str,
    src: Sequence[float],
    n: int,
    n_out: int,
    dtype: str = "f32",
    flags: Sequence[str] = (),
) -> array:
    """Build the kernel and a host driver with nvcc (extra ``flags``) and run it on the GPU;
    raises NoCudaDevice (after a successful build) where there is no CUDA device."""
    ty = "double" if dtype == "f64" else "float"
    driver = CUDA_DRIVER.format(ty=ty, n_src=max(1, len(src)), n_dst=n_out * n, name=name, n=n)
    with tempfile.TemporaryDirectory() as tmp:
        path, exe = Path(tmp) / "k.cu", Path(tmp) / "k.out"
        path.write_text(source + driver)
        arch = "-arch=native" if _has_gpu() else "-arch=sm_80"
        _run([NVCC, arch, *flags, str(path), "-o", str(exe)], cwd=tmp)
        proc = subprocess.run([str(exe)], input=_pack(src, dtype), capture_output=True, timeout=300)
        if proc.returncode == 6:
            raise NoCudaDevice(proc.stderr.decode().strip())
        if proc.returncode != 0:
            raise ToolchainError(f"CUDA program failed ({proc.returncode}): {proc.stderr.decode()}")
        return _floats(proc.stdout, dtype)


def _has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def run_node(script: str, stdin: bytes) -> bytes:
    """Run a script with node; it reads stdin and writes stdout."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.js"
        path.write_text(script)
        return _run(["node", str(path)], stdin=stdin)


NODE_IO = """
const fs = require("fs");
const raw = fs.readFileSync(0);
const src = new Float64Array(raw.buffer, raw.byteOffset, raw.length / 8).slice();
"""


def run_js_kernel(source: str, name: str, src: Sequence[float], n: int, n_out: int) -> array:
    """Run a JavaScript kernel with node over Float64Arrays."""
    script = (
        source + NODE_IO + f"const dst = new Float64Array({n_out * n});\n{name}(src, dst, {n});\n"
        "process.stdout.write(Buffer.from(dst.buffer));\n"
    )
    return _floats(run_node(script, _pack(src, "f64")), "f64")


# ---------------------------------------------------------------------------------------
# Python


def run_python_kernel(source: str, name: str, src: Sequence[float], n: int, n_out: int):
    """Execute a Python kernel printed by tang.lower (our own printer's output, never user
    text) and return its dst list."""
    namespace: dict = {}
    exec(compile(source, f"<tang.lower {name}>", "exec"), namespace)
    dst = [0.0] * (n_out * n)
    namespace[name](list(src), dst, n)
    return dst


# ---------------------------------------------------------------------------------------
# Vulkan through wgpu-py (WGSL, and GLSL compiled to SPIR-V), OpenCL through PoCL


@functools.cache
def _wgpu_device():
    os.environ.setdefault("VK_ICD_FILENAMES", LAVAPIPE)
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())  # quiets the Vulkan loader
    try:
        import wgpu
    except ImportError:
        return None
    try:  # wgpu-py 0.32 raises where older ones returned None: no adapter either way
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception:
        return None
    if adapter is None:
        return None
    return adapter.request_device_sync()


def glslang_compile(source: str) -> bytes:
    """GLSL compute source → SPIR-V bytes with ``glslangValidator -V``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.comp"
        path.write_text(source)
        out = Path(tmp) / "k.spv"
        _run(["glslangValidator", "-V", str(path), "-o", str(out)], cwd=tmp)
        return out.read_bytes()


def dispatch_size(n: int, per_group: int = 64, max_dim: int = 65535) -> tuple[int, int, int]:
    """Workgroups (x, y, 1) covering ``n`` items, using y once x would exceed the limit."""
    groups = max(1, (n + per_group - 1) // per_group)
    gx = min(groups, max_dim)
    return gx, (groups + gx - 1) // gx, 1


def run_wgpu(
    code: str | bytes,
    entry: str,
    src: Sequence[float] | bytes,
    n: int,
    n_out: int,
    groups: tuple[int, int, int] | None = None,
    spare: int = 0,
) -> array:
    """Run a compute shader (WGSL text, or SPIR-V bytes) with the kernel bindings: uniform
    n at 0, read-only src at 1, dst at 2 (zeroed, ``spare`` extra elements past the outputs,
    returned too). Raises ToolchainError for an invalid shader."""
    import wgpu

    device = _wgpu_device()
    try:
        module = device.create_shader_module(code=code)
        storage = {"type": wgpu.BufferBindingType.storage}
        entries = [
            {
                "binding": 0,
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": wgpu.BufferBindingType.uniform},
            },
            {
                "binding": 1,
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": wgpu.BufferBindingType.read_only_storage},
            },
            {"binding": 2, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": storage},
        ]
        layout = device.create_bind_group_layout(entries=entries)
        pipeline = device.create_compute_pipeline(
            layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": entry},
        )
    except Exception as err:  # wgpu's validation errors carry naga's diagnostic
        raise ToolchainError(f"{type(err).__name__}: {err}") from err
    data = src if isinstance(src, bytes) else _pack(src, "f32")
    usage = wgpu.BufferUsage
    params = device.create_buffer_with_data(
        data=array("I", [n, 0, 0, 0]).tobytes(), usage=usage.UNIFORM
    )
    src_buf = device.create_buffer_with_data(data=data or bytes(4), usage=usage.STORAGE)
    size = n_out * n + spare
    dst_buf = device.create_buffer(size=max(4, 4 * size), usage=usage.STORAGE | usage.COPY_SRC)
    bind = device.create_bind_group(
        layout=layout,
        entries=[
            {"binding": 0, "resource": {"buffer": params}},
            {"binding": 1, "resource": {"buffer": src_buf}},
            {"binding": 2, "resource": {"buffer": dst_buf}},
        ],
    )
    encoder = device.create_command_encoder()
    cpass = encoder.begin_compute_pass()
    cpass.set_pipeline(pipeline)
    cpass.set_bind_group(0, bind)
    cpass.dispatch_workgroups(*(groups or dispatch_size(n)))
    cpass.end()
    device.queue.submit([encoder.finish()])
    return _floats(bytes(device.queue.read_buffer(dst_buf))[: 4 * size], "f32")


@functools.cache
def _opencl_context():
    try:
        import pyopencl as cl
    except ImportError:
        return None
    for platform in cl.get_platforms():
        if platform.get_devices():
            ctx = cl.Context(platform.get_devices()[:1])
            return ctx, cl.CommandQueue(ctx)
    return None


def opencl_has_fp64() -> bool:
    ctx = _opencl_context()
    return ctx is not None and "cl_khr_fp64" in ctx[0].devices[0].extensions


def run_opencl(
    source: str, name: str, src: Sequence[float], n: int, n_out: int, dtype: str = "f32"
) -> array:
    """Build an OpenCL kernel on the first device (PoCL here) and run it over ``n`` items."""
    import numpy as np
    import pyopencl as cl

    ctx, queue = _opencl_context()
    try:
        program = cl.Program(ctx, source).build()
    except cl.Error as err:
        raise ToolchainError(str(err)) from err
    np_type = np.float64 if dtype == "f64" else np.float32
    host_src = np.frombuffer(_pack(src, dtype) or bytes(8), dtype=np_type)
    mf = cl.mem_flags
    src_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host_src)
    dst = np.empty(max(1, n_out * n), dtype=np_type)
    dst_buf = cl.Buffer(ctx, mf.WRITE_ONLY, dst.nbytes)
    getattr(program, name)(queue, (n,), None, src_buf, dst_buf, np.uint32(n))
    cl.enqueue_copy(queue, dst, dst_buf)
    queue.finish()
    return _floats(dst[: n_out * n].tobytes(), dtype)


# ---------------------------------------------------------------------------------------
# one table: backend -> (tools it needs, how to run its kernel)


def _run_glsl(source: str, name: str, src, n: int, n_out: int, dtype: str = "f32") -> array:
    return run_wgpu(glslang_compile(source), "main", src, n, n_out)


def _run_cuda(source: str, name: str, src, n: int, n_out: int, dtype: str = "f32") -> array:
    if available("nvcc"):
        nvcc_compile(source)  # the real compiler checks the source; the host runs it
    return run_cuda_as_cpp(source, name, src, n, n_out, dtype)


KERNEL_RUNNERS = {
    "python": ((), lambda s, name, src, n, m, dtype: run_python_kernel(s, name, src, n, m)),
    "c": (("gcc",), run_c_kernel),
    "javascript": (("node",), lambda s, name, src, n, m, dtype: run_js_kernel(s, name, src, n, m)),
    "wgsl": (("wgpu",), lambda s, name, src, n, m, dtype: run_wgpu(s, name, src, n, m)),
    "glsl": (("glslang", "wgpu"), _run_glsl),
    "opencl": (("opencl",), run_opencl),
    "metal": (("g++",), lambda s, name, src, n, m, dtype: run_metal_as_cpp(s, name, src, n, m)),
    "cuda": (("g++",), _run_cuda),
}


def run_kernel(
    backend: str, source: str, src, n: int, n_out: int, dtype: str, name: str = "f"
) -> array:
    """Run a kernel printed for ``backend`` with this machine's toolchain for it."""
    return KERNEL_RUNNERS[backend][1](source, name, src, n, n_out, dtype)


def missing_tool(backend: str) -> str | None:
    """The first tool ``backend`` needs that is not here, or None."""
    return next((t for t in KERNEL_RUNNERS[backend][0] if not available(t)), None)


# ---------------------------------------------------------------------------------------
# reference values for f32 backends


def evaluate_f32(outputs: Sequence[Node], values: dict[str, float]):
    """Values on an ideal f32 machine (inputs, constants and every step rounded to f32),
    and per output whether its computation met a non-finite value or atan2(0, 0), and
    whether it met a nan constant or a tanh that f32 rounds to ±1 (|x| > 9.01, where PoCL
    returns ±(1 - 2⁻²⁴)): PoCL's quirks, see test_lower_backends."""
    val: dict[Node, float | bool] = {}
    wild: dict[Node, bool] = {}
    pocl: dict[Node, bool] = {}
    for node in topo_order(outputs):
        args = [val[a] for a in node.args]
        if node.op == "const":
            r: float | bool = to_f32(node.value)  # type: ignore[arg-type]
        elif node.op == "var":
            r = to_f32(values[node.name])  # type: ignore[index]
        else:
            r = PRIMITIVES[node.op][1](*args)  # type: ignore[misc]
            r = r if isinstance(r, bool) else to_f32(r)
        val[node] = r
        own = not isinstance(r, bool) and not math.isfinite(r)
        own = own or (node.op == "atan2" and args[0] == 0 and args[1] == 0)
        wild[node] = own or any(wild[a] for a in node.args)
        quirk = (node.op == "const" and r != r) or (node.op == "tanh" and abs(args[0]) > 9.0)
        pocl[node] = quirk or any(pocl[a] for a in node.args)
    return [val[o] for o in outputs], [wild[o] for o in outputs], [pocl[o] for o in outputs]


def kind(v: float) -> str:
    """ "nan", "inf", "-inf" or "num": what must agree exactly between backends."""
    return "nan" if v != v else "inf" if v == math.inf else "-inf" if v == -math.inf else "num"
