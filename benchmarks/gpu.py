"""tang.gpu on the desktop, in one run: the latency of a trivial dispatch + read-back, and
value + gradient over 2^20 points through wgpu-py next to numpy and pure Python.

    python benchmarks/gpu.py [--points N] [--repeat R]

Every contender starts from the same f32 columns in Python and ends with the outputs back
in Python; times are medians of R runs after one warm-up (the first run, which builds the
pipeline, is shown apart). Pure Python is tang's CPU device running the Python-printed
kernel, timed once (it is slow). Ratios are against the native device in this same run.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import ms, once, runs, timed

import tang.gpu as gpu
from tang.compile import expression_plan
from tang.gpu.batch import evaluate, sample_points

EXPRESSIONS = [
    "sin(x*y) + exp(x)/10 + sqrt(x^2 + y^2)",
    "tanh(x*y) * atan2(y, x) + log(1 + x^2*y^2) - cos(x - y)^3",
]
TRIVIAL = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> n: u32;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= n) { return; }
    y[gid.x] = x[gid.x] + 1.0;
}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    dev = gpu.device("native")
    print(f"device: {dev.kind}: {dev.name} ({os.cpu_count()} CPU cores)")
    for backend, why in dev.skipped:
        print(f"  skipped {backend}: {why}")
    if dev.kind != "native":
        print("no native GPU device: nothing to compare (install wgpu and a Vulkan/Metal driver)")
        return 1

    # 1. latency: 64 items, dispatch + read-back, median of 50
    k = dev.kernel(TRIVIAL)
    x, y = dev.buffer([float(i) for i in range(64)]), dev.empty(64)
    _, lat = runs(lambda: dev.run(k, [x, y, 64], 64, out=y), 50)  # the first call warms up
    lat.sort()
    print(
        f"\ntrivial kernel, 64 items: dispatch + read-back median of 50 = {ms(lat[25]).strip()}"
        f" (fastest {ms(lat[0]).strip()}, slowest {ms(lat[-1]).strip()})"
    )

    # 2. value + gradient over N points
    try:
        import numpy as np

        from tang.gpu.numpy_eval import evaluate_numpy
    except ImportError:
        np = None
    n = args.points
    print(f"\nvalue + gradient over {n:,} points (x, y in [-2, 2)), median of {args.repeat}")
    head = f"{'':58}{'native':>12}{'numpy':>12}{'pure Python':>13}"
    print(head + f"{'numpy/native':>14}{'Python/native':>15}")
    for text in EXPRESSIONS:
        p = expression_plan(text, grad=True)
        pts = sample_points(p.inputs, n)
        first, native = timed(lambda p=p, pts=pts: evaluate(p, pts, device=dev), args.repeat)
        if np is not None:
            cols = {k: np.frombuffer(v, np.float32) for k, v in pts.items()}
            _, numpy_t = timed(
                lambda p=p, cols=cols: evaluate_numpy(p.outputs, cols), max(1, args.repeat // 2)
            )
        python_t, cpu = once(lambda p=p, pts=pts: evaluate(p, pts, device="cpu"))
        on_gpu = evaluate(p, pts, device=dev)
        agree = abs(on_gpu.checksum() - cpu.checksum()) <= 1e-4 * max(1.0, abs(cpu.checksum()))
        numpy_cell = ms(numpy_t) if np is not None else f"{'(no numpy)':>12}"
        ratio = f"{numpy_t / native:13.1f}x" if np is not None else f"{'-':>14}"
        label = f"{text[:44]:44} ({len(p.outputs)} outputs)"
        print(
            f"{label:58}{ms(native):>12}{numpy_cell:>12}{ms(python_t):>13}"
            f"{ratio:>14}{python_t / native:14.1f}x"
        )
        steps = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in on_gpu.seconds.items())
        print(f"{'':4}native steps: {steps}; first run {first * 1e3:.0f} ms (builds the pipeline)")
        print(
            f"{'':4}checksums: native {on_gpu.checksum():.9g}, Python {cpu.checksum():.9g}"
            f" ({'agree' if agree else 'DIFFER'})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
