"""tang.gpu in the page: value + gradient over 1M points through WebGPU from Python in
Pyodide, next to pure Python in the same worker (tang's CPU device). Target: ≥ 8×.

    python benchmarks/gpu_page.py [--adapter lavapipe|swiftshader] [--points N] [--repeat R]

Drives headless Chromium (/usr/bin/chromium) on the built site. Times are the worker's own
(``Batch.seconds``: pack the columns, compile, upload, dispatch + read back), so the
deterministic point generation and the JSON round trip are not counted for either side.
WebGPU: median of R runs after the first (which builds the pipeline); pure Python: one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402  benchmarks/harness.py (this script's folder is on sys.path)

import build  # noqa: E402

BASE = ["--no-sandbox", "--headless=new", "--disable-background-networking", "--no-first-run"]
ADAPTERS = {
    "lavapipe": (
        ["--use-angle=vulkan", "--use-webgpu-adapter=opengles"],
        {"VK_ICD_FILENAMES": "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"},
    ),
    "swiftshader": (["--enable-unsafe-webgpu"], {}),
}
EXPRESSIONS = ["sin(x*y) + exp(x)/10 + sqrt(x^2 + y^2)", "x*y + 3*x - y"]
CALL = """async ([m, p]) => {
  try { return {ok: true, value: await window.tang.call(m, p, {timeout: 600000})}; }
  catch (e) { return {ok: false, error: `${e.type ?? e.name}: ${e.message}`}; }
}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", choices=ADAPTERS, default="lavapipe")
    parser.add_argument("--points", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    build.build(build.DIST, quiet=True)
    server, url = harness.serve(build.DIST)
    flags, env = ADAPTERS[args.adapter]
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        context, page = harness.open_page(pw, tmp, url, BASE + flags, env)
        page.wait_for_function(
            "['ready', 'error'].includes(document.body.dataset.state)", timeout=120_000
        )

        def call(method: str, **params):
            out = page.evaluate(CALL, [method, params])
            if not out["ok"]:
                raise RuntimeError(out["error"])
            return out["value"]

        info = call("gpu.info")
        print(f"page device: {info['kind']}: {info['name']} ({os.cpu_count()} CPU cores)")
        for s in info["skipped"]:
            print(f"  skipped {s['backend']}: {s['reason']}")
        if info["kind"] != "browser":
            print("no WebGPU adapter in this browser setup: nothing to compare")
            return 1
        n = args.points
        print(f"\nvalue + gradient over {n:,} points in the page's worker (Pyodide)")
        print(f"{'':44}{'WebGPU':>12}{'pure Python':>14}{'ratio':>9}  target ≥ 8x")
        worst = None
        for text in EXPRESSIONS:
            params = {"expr": text, "grad": True, "points": n, "sample": 0}
            runs = [
                call("gpu.evaluate", device="gpu", fallback=False, **params)
                for _ in range(args.repeat + 1)
            ]
            gpu_t = statistics.median(sum(r["seconds"].values()) for r in runs[1:])
            first = sum(runs[0]["seconds"].values())
            cpu = call("gpu.evaluate", device="cpu", **params)
            cpu_t = sum(cpu["seconds"].values())
            ratio = cpu_t / gpu_t
            worst = ratio if worst is None else min(worst, ratio)
            same = abs(runs[-1]["checksum"] - cpu["checksum"]) <= 1e-4 * abs(cpu["checksum"])
            print(
                f"{text[:42]:44}{gpu_t * 1e3:9.1f} ms{cpu_t * 1e3:11.1f} ms{ratio:8.1f}x"
                f"  {'met' if ratio >= 8 else 'MISSED'}"
            )
            steps = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in runs[-1]["seconds"].items())
            print(
                f"    WebGPU steps (ms): {steps}; first run {first * 1e3:.0f} ms; checksums "
                f"{'agree' if same else 'DIFFER'}"
            )
        context.close()
    server.shutdown()
    print(f"\nslowest ratio {worst:.1f}x: target ≥ 8x {'met' if worst >= 8 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
