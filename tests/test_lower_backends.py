"""Every backend run for real on 200 seeded random expressions and their gradients.

Each expression over x, y, z is differentiated (``tang.expr.grad``) and all 800 outputs are
printed as one kernel per backend (few compiles, one dispatch), run over 32 points that
include zeros and negatives, and compared with ``tang.expr.graph.evaluate``:

- f64 backends (Python, C, JavaScript): Python bit for bit, C and JS within rtol 1e-12,
  nan/±inf in the same places;
- f32 backends (WGSL, GLSL, OpenCL, Metal and CUDA as C++): against the f64 value within
  5e-4·max(1, |value|) where an ideal f32 machine (every step rounded to f32) agrees with
  f64 to 1e-5 — elsewhere f32 itself cannot match and the point is not compared. WGSL and
  GLSL run as ten kernels of 20 expressions: their compilers slow down on one huge kernel.
  On OpenCL, the outputs built on a nan constant (never compared there, see below) are
  left out of the kernel: PoCL folds its exp of a constant nan into undefined behaviour
  that garbles every other output of the same kernel too.

Spec latitude, stated where it applies: Vulkan (WGSL, GLSL) lets a driver treat inf and nan
as indeterminate and lavapipe's compiler uses it (x*0 → 0, x-x → 0, log2(exp2 x) → x,
atan(0, 0) undefined), so values whose exact computation passes through inf, nan or
atan2(0, 0) are only compared on the other backends; PoCL's exp2 of a *constant* nan
returns garbage (nan folded into an integer conversion) and its tanh of ±inf, or of any x
that f32 rounds to ±1, is ±(1 - 2⁻²⁴) (OpenCL allows tanh 5 ulp), which a derivative
multiplies by a large or infinite factor, so outputs built on a nan constant or on such a
tanh are not compared on OpenCL. Each exemption is counted and kept
under 15 %.
"""

from __future__ import annotations

import math
import random
import struct

import pytest
import toolchains as tc
from toolchains import evaluate_f32, kind

from tang.expr import graph as g
from tang.expr.grad import gradient
from tang.expr.graph import PRIMITIVES, Graph, Node, evaluate, topo_order, var
from tang.expr.ops import INTEGER_OPS
from tang.expr.text import to_text
from tang.lower import BACKENDS, lower, schedule
from tests.skips import skip_missing, skip_missing_tool

INPUTS = ("x", "y", "z")
COUNT = 200
X, Y, Z = var("x"), var("y"), var("z")
LEAVES: list[Node | float] = [X, Y, Z, X, Y, Z, 0.5, 2.0, -1.5, 3.0, 0.1, math.pi]
VALUES = [-2.5, -1.0, -0.3, 0.0, 0.2, 0.7, 1.0, 1.9, 3.0]
F64_RTOL = 1e-12
F64_SUBSET = 100  # outputs run in f64 on the f32-first backends (OpenCL, CUDA)
F32_TOL = 5e-4  # relative to max(1, |value|)
F32_TRUST = 1e-5  # ideal-f32 vs f64 agreement needed before a point is compared
MAX_EXEMPT = 0.15


# ---------------------------------------------------------------------------------------
# seeded expressions


def _unary(rng: random.Random, a: Node) -> Node:
    pick = rng.randrange(14)
    forms = [
        a.sin,
        a.cos,
        a.exp,
        a.log,
        a.sqrt,
        a.tanh,
        a.sigmoid,
        lambda: abs(a),
        lambda: a ** rng.choice([2, 3, -1, -2, 0.5, 1.5, -0.5]),
        lambda: -a,
        lambda: g.log2(1.0 + a * a),  # exp and log are primitives: exp2, log2 by name
        lambda: (1.0 + a * a).sqrt(),
        lambda: g.exp2(a) * a,
        lambda: g.floor(a * 4.0) * a,  # a step (slope 0) times a: the product rule sees it
    ]
    return g.as_node(forms[pick]())


def _binary(rng: random.Random, a: Node, b: Node) -> Node:
    pick = rng.randrange(11)
    forms = [
        lambda: a + b,
        lambda: a + b,
        lambda: a - b,
        lambda: a * b,
        lambda: a * b,
        lambda: a / b,
        lambda: g.atan2(a, b),
        lambda: g.select(g.lt(a, b), a * 2.0, b - 1.0),
        lambda: g.maximum(a, b) if rng.random() < 0.5 else g.minimum(a, b),
        lambda: a**b if rng.random() < 0.3 else g.select(g.le(a, 0.5), b, a),
        lambda: g.select(g.eq(a, b), a, b * 0.5),
    ]
    return g.as_node(forms[pick]())


def random_expression(rng: random.Random, depth: int) -> Node:
    """A random expression of at most ``depth`` levels (a test generator; depth ≤ 4)."""
    if depth == 0 or rng.random() < 0.15:
        return g.as_node(rng.choice(LEAVES))
    if rng.random() < 0.45:
        return _unary(rng, random_expression(rng, depth - 1))
    return _binary(rng, random_expression(rng, depth - 1), random_expression(rng, depth - 1))


def expressions(count: int = COUNT, seed: int = 4) -> list[Node]:
    rng = random.Random(seed)
    out: list[Node] = []
    while len(out) < count:
        e = random_expression(rng, rng.randint(2, 4))
        if e.op != "const":
            out.append(e)
    return out


# ---------------------------------------------------------------------------------------
# references


class Batch:
    """The 200 expressions, their 800 outputs, the points and every reference value."""

    def __init__(self) -> None:
        self.exprs = expressions()
        self.outputs = [o for e in self.exprs for o in gradient(Graph(INPUTS, [e])).outputs]
        rng = random.Random(1)
        self.points = [tuple(rng.choice(VALUES) for _ in INPUTS) for _ in range(32)]
        self.n, self.m = len(self.points), len(self.outputs)
        self.src = [p[k] for k in range(len(INPUTS)) for p in self.points]  # packed columns
        self.ref = [evaluate(self.outputs, dict(zip(INPUTS, p))) for p in self.points]
        self.ref32 = [evaluate_f32(self.outputs, dict(zip(INPUTS, p))) for p in self.points]
        self.program = schedule(self.outputs, INPUTS)

    def where(self, j: int, i: int) -> str:
        e = self.exprs[j // 4]
        what = "value" if j % 4 == 0 else f"d/d{INPUTS[j % 4 - 1]}"
        return f"{what} of {to_text(e)[:120]} at {dict(zip(INPUTS, self.points[i]))}"

    def check_f64(self, got, rtol: float, label: str) -> None:
        """``got[j*n + i]`` against the f64 reference: same nan/inf, finite within rtol."""
        bad = []
        for i in range(self.n):
            for j in range(self.m):
                v, r = got[j * self.n + i], self.ref[i][j]
                if kind(v) != kind(r) or (kind(r) == "num" and abs(v - r) > rtol * abs(r)):
                    bad.append(f"{self.where(j, i)}: {label} {v!r}, Python {r!r}")
        assert not bad, f"{len(bad)} mismatches, e.g.\n" + "\n".join(bad[:5])

    def check_f64_subset(self, got, label: str, rtol: float, *, pocl: bool = False) -> None:
        """The first F64_SUBSET outputs in f64 against Python: same nan/inf, finite within
        rtol·|value| (rtol·max(1, |value|) on PoCL, which also skips nan constants)."""
        bad = []
        for i in range(self.n):
            for j in range(F64_SUBSET):
                v, r = got[j * self.n + i], self.ref[i][j]
                if pocl and self.ref32[i][2][j]:
                    continue  # PoCL's exp2 of a constant nan (see module docstring)
                scale = max(1.0, abs(r)) if pocl else abs(r)
                if kind(v) != kind(r) or (kind(r) == "num" and abs(v - r) > rtol * scale):
                    bad.append(f"{self.where(j, i)}: {label} {v!r}, Python {r!r}")
        assert not bad, f"{len(bad)} mismatches, e.g.\n" + "\n".join(bad[:5])

    def check_f32(self, got, label: str, *, vulkan: bool = False, pocl: bool = False) -> None:
        """``got[j*n + i]`` against the f64 reference within f32 precision (see the module
        docstring for the points not compared)."""
        bad, exempt, unstable = [], 0, 0
        for i in range(self.n):
            e32, wild, pocl_quirk = self.ref32[i]
            for j in range(self.m):
                if (vulkan and wild[j]) or (pocl and pocl_quirk[j]):
                    exempt += 1
                    continue
                v, r, e = got[j * self.n + i], self.ref[i][j], e32[j]
                scale = max(1.0, abs(r)) if kind(r) == "num" else 1.0
                if kind(e) != kind(r) or (kind(r) == "num" and abs(e - r) > F32_TRUST * scale):
                    unstable += 1  # f32 itself cannot reproduce the f64 value here
                    continue
                if kind(v) != kind(r) or (kind(r) == "num" and abs(v - r) > F32_TOL * scale):
                    bad.append(f"{self.where(j, i)}: {label} {v!r}, Python {r!r}, f32 {e!r}")
        total = self.n * self.m
        assert not bad, f"{len(bad)} mismatches, e.g.\n" + "\n".join(bad[:5])
        assert exempt < MAX_EXEMPT * total, f"{exempt} of {total} values exempt"
        assert unstable < MAX_EXEMPT * total, f"{unstable} of {total} values beyond f32"
        assert total - exempt - unstable > 0.75 * total  # most values were compared


@pytest.fixture(scope="module")
def batch() -> Batch:
    return Batch()


def need(tool: str) -> None:
    if not tc.available(tool):
        skip_missing_tool(tool, f"{tool} is not available on this machine")


def source(batch: Batch, backend: str, **kw) -> str:
    return BACKENDS[backend].render(batch.program, **kw).source


# ---------------------------------------------------------------------------------------
# f64: Python, C, JavaScript


def test_batch_is_large_and_varied(batch):
    assert len(batch.exprs) >= 200 and batch.m == 4 * len(batch.exprs)
    ops = {n.op for n in topo_order(batch.outputs)}
    # every float primitive is printed and run (the integer ones, which only integer types
    # print, are run in Python and C by tests/test_crypto_mlkem.py)
    assert ops == set(PRIMITIVES) - INTEGER_OPS
    kinds = {kind(v) for row in batch.ref for v in row}
    assert kinds == {"num", "nan", "inf", "-inf"}  # singular values occur in the batch


def test_python_kernel_is_bit_identical_to_evaluate(batch):
    got = tc.run_python_kernel(source(batch, "python"), "f", batch.src, batch.n, batch.m)
    pack = struct.Struct("<d").pack
    for i in range(batch.n):
        for j in range(batch.m):
            v, r = got[j * batch.n + i], batch.ref[i][j]
            assert pack(v) == pack(r) or (v != v and r != r), batch.where(j, i)


def test_python_functions(batch):
    progs = [schedule(batch.outputs[4 * k : 4 * k + 4], INPUTS) for k in range(len(batch.exprs))]
    got = []
    for prog in progs:
        namespace: dict = {}
        exec(BACKENDS["python"].render(prog, shape="function").source, namespace)
        got.append([namespace["f"](*p) for p in batch.points])
    flat = [got[j // 4][i][j % 4] for j in range(batch.m) for i in range(batch.n)]
    batch.check_f64(flat, 0.0, "python function")


@pytest.mark.toolchain
def test_c_functions_gcc_sanitized(batch):
    """200 functions in one file, gcc -O2 -Wall -Werror -fsanitize=address,undefined."""
    need("gcc")
    names = [f"e{k}" for k in range(len(batch.exprs))]
    text = "\n".join(
        BACKENDS["c"]
        .render(schedule(batch.outputs[4 * k : 4 * k + 4], INPUTS), shape="function", name=name)
        .source
        for k, name in enumerate(names)
    )
    points = [v for p in batch.points for v in p]
    out = tc.run_c_functions(text, names, points, len(INPUTS), 4)
    n = batch.n  # out is ordered expression, point, output
    flat = [out[((j // 4) * n + i) * 4 + j % 4] for j in range(batch.m) for i in range(n)]
    batch.check_f64(flat, F64_RTOL, "C")


@pytest.mark.toolchain
def test_c_kernels_f64_and_f32(batch):
    """The loop kernel of the first 25 expressions in f64 and f32, sanitizers on."""
    need("gcc")
    sub = Batch.__new__(Batch)
    sub.__dict__.update(batch.__dict__)
    sub.outputs, sub.m = batch.outputs[:100], 100
    sub.ref = [row[:100] for row in batch.ref]
    sub.ref32 = [tuple(part[:100] for part in row) for row in batch.ref32]
    prog = schedule(sub.outputs, INPUTS)
    for dtype in ("f64", "f32"):
        text = BACKENDS["c"].render(prog, dtype=dtype).source
        got = tc.run_c_kernel(text, "f", batch.src, batch.n, sub.m, dtype)
        if dtype == "f64":
            sub.check_f64(got, F64_RTOL, "C kernel")
        else:
            sub.check_f32(got, "C f32 kernel")


@pytest.mark.toolchain
def test_javascript_node(batch):
    """The kernel over Float64Arrays and the 200 plain functions, in one node run each."""
    need("node")
    got = tc.run_js_kernel(source(batch, "javascript"), "f", batch.src, batch.n, batch.m)
    batch.check_f64(got, F64_RTOL, "JavaScript")
    names = [f"e{k}" for k in range(len(batch.exprs))]
    text = "\n".join(
        BACKENDS["javascript"]
        .render(schedule(batch.outputs[4 * k : 4 * k + 4], INPUTS), shape="function", name=name)
        .source
        for k, name in enumerate(names)
    )
    out = tc.run_js_functions(text, names, [v for p in batch.points for v in p], 3, 4)
    n = batch.n
    flat = [out[((j // 4) * n + i) * 4 + j % 4] for j in range(batch.m) for i in range(n)]
    batch.check_f64(flat, F64_RTOL, "JavaScript function")


# ---------------------------------------------------------------------------------------
# f32: WGSL and GLSL on lavapipe, OpenCL on PoCL, Metal and CUDA as C++, CUDA by nvcc


def in_chunks(batch: Batch, run, chunks: int = 10) -> list[float]:
    """Run the batch as ``chunks`` kernels of 20 expressions (a GPU compiler's time grows
    faster than the kernel's length) and join their outputs: dst stays ``j*n + i``."""
    size = batch.m // chunks
    got: list[float] = []
    for k in range(chunks):
        outs = batch.outputs[k * size : (k + 1) * size]
        got += run(schedule(outs, INPUTS), len(outs))
    return got


@pytest.mark.toolchain
def test_wgsl_on_lavapipe(batch):
    need("wgpu")

    def run(prog, m):
        return tc.run_wgpu(BACKENDS["wgsl"].render(prog).source, "f", batch.src, batch.n, m)

    batch.check_f32(in_chunks(batch, run), "WGSL", vulkan=True)


@pytest.mark.toolchain
def test_glsl_spirv_on_lavapipe(batch):
    need("glslang")
    need("wgpu")

    def run(prog, m):
        spirv = tc.glslang_compile(BACKENDS["glsl"].render(prog).source)
        assert spirv[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic number
        return tc.run_wgpu(spirv, "main", batch.src, batch.n, m)

    batch.check_f32(in_chunks(batch, run), "GLSL", vulkan=True)


@pytest.mark.toolchain
def test_opencl_on_pocl(batch):
    need("opencl")
    # the outputs PoCL's nan-constant quirk exempts everywhere (see the module docstring)
    kept = [j for j, o in enumerate(batch.outputs) if not batch.ref32[0][2][j]]
    outs = [batch.outputs[j] for j in kept]
    text = BACKENDS["opencl"].render(schedule(outs, INPUTS)).source
    run = tc.run_opencl(text, "f", batch.src, batch.n, len(outs))
    got = [math.nan] * (batch.m * batch.n)
    for k, j in enumerate(kept):
        got[j * batch.n : (j + 1) * batch.n] = run[k * batch.n : (k + 1) * batch.n]
    batch.check_f32(got, "OpenCL", pocl=True)


@pytest.mark.toolchain
def test_opencl_f64_on_pocl(batch):
    need("opencl")
    if not tc.opencl_has_fp64():
        pytest.skip("this OpenCL device has no cl_khr_fp64")
    text = lower(batch.outputs[:F64_SUBSET], INPUTS, "opencl", dtype="f64").source
    got = tc.run_opencl(text, "f", batch.src, batch.n, F64_SUBSET, "f64")
    batch.check_f64_subset(got, "OpenCL", 1e-9, pocl=True)


@pytest.mark.toolchain
def test_metal_compiled_and_run_as_cpp(batch):
    """No Metal compiler exists here: g++ compiles the kernel against a stand-in
    <metal_stdlib> (address-space words, attributes, precise:: math) and runs it."""
    need("g++")
    got = tc.run_metal_as_cpp(source(batch, "metal"), "f", batch.src, batch.n, batch.m)
    batch.check_f32(got, "Metal (as C++)")


@pytest.mark.toolchain
def test_cuda_compiled_by_nvcc(batch):
    if not tc.available("nvcc"):
        skip_missing_tool("nvcc", "not installed here; the CUDA source still runs as C++ below")
    tc.nvcc_compile(
        source(batch, "cuda")
        + lower(batch.outputs[:100], INPUTS, "cuda", dtype="f64", name="g").source
    )


@pytest.mark.toolchain
def test_cuda_on_a_gpu(batch):
    """Where a CUDA GPU exists the kernels run on it; elsewhere a one-line kernel and its
    host driver are still built by nvcc, and the test says why it stops there."""
    need("nvcc")
    x = var("x")
    try:
        tiny = tc.run_cuda_on_gpu(lower([x * 2.0], ["x"], "cuda").source, "f", [1.5], 1, 1)
    except tc.NoCudaDevice as err:
        reason = f"no CUDA device here ({err}); nvcc built the kernel and its driver"
        skip_missing("device", "a CUDA GPU", reason)
    assert list(tiny) == [3.0]
    got = tc.run_cuda_on_gpu(source(batch, "cuda"), "f", batch.src, batch.n, batch.m)
    batch.check_f32(got, "CUDA")
    # f64 to the last bits of Python's answer needs nvcc's contraction of a*b + c into one
    # fused multiply-add turned off (-fmad=false); the f32 run above keeps nvcc's default.
    text = lower(batch.outputs[:F64_SUBSET], INPUTS, "cuda", dtype="f64").source
    got = tc.run_cuda_on_gpu(text, "f", batch.src, batch.n, F64_SUBSET, "f64", ["-fmad=false"])
    batch.check_f64_subset(got, "CUDA f64", F64_RTOL)


@pytest.mark.toolchain
def test_cuda_run_as_cpp(batch):
    """No GPU here: the CUDA kernel runs thread by thread on the host (g++ with a prelude
    for blockIdx/threadIdx and the bit-cast intrinsics), in f32 and f64."""
    need("g++")
    got = tc.run_cuda_as_cpp(source(batch, "cuda"), "f", batch.src, batch.n, batch.m)
    batch.check_f32(got, "CUDA (as C++)")
    text = lower(batch.outputs[:F64_SUBSET], INPUTS, "cuda", dtype="f64").source
    got = tc.run_cuda_as_cpp(text, "f", batch.src, batch.n, F64_SUBSET, "f64")
    batch.check_f64_subset(got, "CUDA (as C++)", F64_RTOL)
