"""The device's own limits, measured in the run that is compared with them: copy bandwidth
(a kernel that reads and writes every element once) and FMA throughput (a kernel whose
work stays in registers: independent chains of fused multiply-adds). Every figure of
benchmarks/tensor.py is also given as a fraction of these.

The probes are written by hand for each device language (C for the compiled C device,
WGSL for wgpu-py and WebGPU): they measure the machine, not tang's code generation.

    python benchmarks/roofline.py [--device c|native]
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import fastest

import tang.gpu as gpu
from tang.gpu.bandwidth import WGSL_COPY

LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
COPY_ELEMENTS = 1 << 24  # 64 MiB each way: far past every cache
FMA_CHAINS = 8  # independent accumulators per lane (hides the FMA latency)

C_COPY = """
#include <stddef.h>
void run(const float *restrict x, float *restrict y, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) y[i] = x[i];
}
"""

# each thread: FMA_CHAINS x 16 lanes of a*x + b, `rounds` times (16 lanes: one AVX-512 vector)
C_FMA = f"""
#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
#endif
void run(float *restrict out, size_t rounds) {{
    #pragma omp parallel
    {{
        float acc[{FMA_CHAINS}][16];
        for (int c = 0; c < {FMA_CHAINS}; ++c)
            for (int l = 0; l < 16; ++l) acc[c][l] = (float)(c + l);
        for (size_t r = 0; r < rounds; ++r)
            for (int c = 0; c < {FMA_CHAINS}; ++c)
                for (int l = 0; l < 16; ++l) acc[c][l] = acc[c][l] * 0.999999f + 0.000001f;
        float total = 0.0f;
        for (int c = 0; c < {FMA_CHAINS}; ++c)
            for (int l = 0; l < 16; ++l) total += acc[c][l];
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        out[t] = total;
    }}
}}
"""

C_THREADS = """
#ifdef _OPENMP
#include <omp.h>
#endif
void run(float *out) {
    int n = 1;
#ifdef _OPENMP
    n = omp_get_max_threads();
#endif
    out[0] = (float)n;
}
"""

WGSL_FMA = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn run(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) g: vec3<u32>) {
    let i = gid.x + gid.y * g.x * 64u;
    if (i >= arrayLength(&out)) { return; }
    var a0 = vec4<f32>(f32(i)); var a1 = a0 + 1.0; var a2 = a0 + 2.0; var a3 = a0 + 3.0;
    var a4 = a0 + 4.0; var a5 = a0 + 5.0; var a6 = a0 + 6.0; var a7 = a0 + 7.0;
    let m = vec4<f32>(0.999999); let b = vec4<f32>(0.000001);
    for (var r = 0u; r < %(rounds)du; r = r + 1u) {
        a0 = fma(a0, m, b); a1 = fma(a1, m, b); a2 = fma(a2, m, b); a3 = fma(a3, m, b);
        a4 = fma(a4, m, b); a5 = fma(a5, m, b); a6 = fma(a6, m, b); a7 = fma(a7, m, b);
    }
    let s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    out[i] = s.x + s.y + s.z + s.w;
}
"""
WGSL_FMA_ROUNDS = 2048
WGSL_FMA_ITEMS = 1 << 16


@dataclass(frozen=True)
class Peak:
    """What the device sustains: copy bandwidth (GB/s, bytes read + written) and FMA
    throughput (GFLOP/s, two per FMA), each the best of a few runs."""

    device: str
    copy_gbs: float
    fma_gflops: float

    def __str__(self) -> str:
        return (
            f"measured peak on {self.device}: copy {self.copy_gbs:6.1f} GB/s,"
            f" FMA {self.fma_gflops:7.1f} GFLOP/s"
        )


def _best(fn, repeat: int) -> float:
    """Fastest of ``repeat`` runs of ``fn``, after a first one that compiles and pages in."""
    return fastest(fn, repeat)[1]


def _c_peak(dev, repeat: int) -> Peak:
    from tang.gpu.native_c import CKernel

    x, y = dev.empty(COPY_ELEMENTS), dev.empty(COPY_ELEMENTS)
    copy = dev.kernel(CKernel(C_COPY))
    seconds = _best(lambda: dev.dispatch(copy, [x, y, COPY_ELEMENTS], 1), repeat)
    gbs = 8 * COPY_ELEMENTS / seconds / 1e9
    out = dev.empty(256)
    dev.dispatch(dev.kernel(CKernel(C_THREADS)), [out], 1)
    threads = int(dev.read(out)[0])
    fma, rounds = dev.kernel(CKernel(C_FMA)), 1 << 18
    seconds = _best(lambda: dev.dispatch(fma, [out, rounds], 1), repeat)
    flops = 2 * FMA_CHAINS * 16 * rounds * threads
    return Peak(dev.name, gbs, flops / seconds / 1e9)


def _wgsl_peak(dev, repeat: int) -> Peak:
    x, y = dev.empty(COPY_ELEMENTS), dev.empty(COPY_ELEMENTS)
    fence = dev.empty(WGSL_FMA_ITEMS)
    copy = dev.kernel(WGSL_COPY)
    fma = dev.kernel(WGSL_FMA % {"rounds": WGSL_FMA_ROUNDS})
    small = dev.empty(64)
    tiny = dev.kernel(WGSL_FMA % {"rounds": 0})

    def copy_once() -> None:
        dev.dispatch(copy, [x, y], COPY_ELEMENTS // 4)
        dev.dispatch(tiny, [small], 64)  # queued after the copy: reading it waits for both
        dev.read(small)

    def fma_once() -> None:
        dev.dispatch(fma, [fence], WGSL_FMA_ITEMS)
        dev.read(fence)

    gbs = 8 * COPY_ELEMENTS / _best(copy_once, repeat) / 1e9
    flops = 2 * 4 * 8 * WGSL_FMA_ROUNDS * WGSL_FMA_ITEMS
    return Peak(dev.name, gbs, flops / _best(fma_once, repeat) / 1e9)


def measure(dev, repeat: int = 5) -> Peak:
    """The copy bandwidth and FMA throughput of ``dev`` (a tang.gpu device: C or WGSL)."""
    if dev.printer == "c":
        return _c_peak(dev, repeat)
    if dev.printer == "wgsl":
        return _wgsl_peak(dev, repeat)
    raise ValueError(f"no roofline probes for a {dev.kind} device")


def fraction(value: float, peak: float) -> str:
    return f"{100 * value / peak:5.1f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="c", choices=("c", "native"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("VK_ICD_FILENAMES", LAVAPIPE)
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    dev = gpu.device(args.device, fallback=False)
    print(measure(dev, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
