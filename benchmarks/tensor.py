"""The tensor IR's kernels on the desktop devices, each figure beside numpy's on the same CPU
and beside the device's own measured limits (benchmarks/roofline.py: copy bandwidth and FMA
throughput, measured in the same run), in one run per device:

1. causal attention at n = 1,024, d = 64: the derived kernel (fuse + online softmax) against
   the naive generated graph (scores, max, exp, sum, divide, weighted sum);
2. generated matmuls, 512³ and 1,024³, against numpy's (f32 BLAS);
3. a 4,096 × 4,096 matrix-vector product (the decode-shaped case: bandwidth-bound);
4. one transformer block (RMSNorm → grouped-query attention with RoPE → SwiGLU, residuals),
   forward + derived backward as one compiled graph, next to numpy's hand-written forward
   and backward of the same block (checked to agree);
5. seconds per Quantum Poet epoch with the whole training step compiled from the IR and
   resident on the device, next to tang.nn's eager numpy and pure Python paths;
6. with ``--page``: the transformer card in the built page on Chromium's WebGPU over
   lavapipe, against the same card's code on wgpu-py over the same driver.

    python benchmarks/tensor.py [--device c,native] [--repeat R] [--n N] [--quick] [--page]

``c`` is the compiled C device (cc -O3 -march=native, OpenMP), ``native`` wgpu-py (Mesa's
lavapipe on a machine without a GPU). A timed call is what a user's call costs with the
inputs already on the device: run every kernel and read the outputs back as numpy arrays.
Times are the fastest of R calls after a warm-up call (which compiles and is shown apart),
numpy's too: on this shared 2-core machine load only adds time, and medians of a few calls
moved by 2x between runs.

What changed in the measurement: a compiled graph called with no inputs used to return
nested Python lists, so the matmul figure of 456× numpy was mostly the conversion of
262,144 floats into lists (about 170 ms), not the kernel; the 21× of an earlier note timed
a call returning numpy. A call with no inputs now returns what the last inputs asked for.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness
import numpy as np
import roofline
from harness import fastest as timed
from harness import ms, once

import tang.gpu as gpu
from tang import tensor as T
from tang.tensor.autotune import describe

LAVAPIPE = roofline.LAVAPIPE
# targets from the issue, per device kind: (matmul × numpy, matvec share of copy bandwidth,
# block × numpy)
TARGETS = {"c": (2.0, 0.60, 3.0), "native": (10.0, 0.30, 10.0)}
TUNE_BUDGET = 30.0  # seconds of candidates per workload


def mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:8.2f} MiB"


def verdict(ok: bool) -> str:
    return "meets the target" if ok else "misses the target"


# ---- 1. attention ------------------------------------------------------------------------------


def attention(dev, n: int, d: int, repeat: int, tune: bool) -> None:
    """Derived against naive attention, each at its default schedule and (with ``tune``)
    at the autotuner's winner for it, found in this run: the ratio of like to like."""
    q, k, v = (T.input(name, (1, 1, n, d)) for name in "qkv")
    naive = T.graph(o=T.attention(q, k, v, causal=True))
    derived = T.stabilize_softmax(T.fuse(naive))
    rng = np.random.default_rng(0)
    vals = {name: rng.normal(size=(1, 1, n, d)).astype(np.float32) for name in "qkv"}
    print(f"\ncausal attention, n = {n:,}, d = {d} (f32)")
    results: dict[tuple[str, str], tuple] = {}
    for label, g in (("naive (as written)", naive), ("derived (online softmax)", derived)):
        for which, fn in contenders(g, dev, tune, ("default", "tuned")):
            first, best = timed(lambda fn=fn: fn(vals), repeat)
            results[label, which] = (fn, fn(vals)["o"], best)
            biggest = fn.largest_buffer
            print(
                f"  {label + ', ' + which:34s} {ms(best)}   first call {ms(first)}"
                f"   comprehensions {len(g.comprehensions)}   writes {mib(fn.bytes_written)}"
                f" per call   largest buffer {biggest.name} ({biggest.size:,} elements)"
            )
            print(f"    schedule: {fn.plans[g.comprehensions[-1].name]}")
    for which in dict.fromkeys(w for _, w in results):
        (slow, want, t_naive) = results["naive (as written)", which]
        (fast, got, t_derived) = results["derived (online softmax)", which]
        err = float(np.abs(got - want).max() / np.abs(want).max())
        print(
            f"  derived / naive speed-up, {which}: {t_naive / t_derived:5.1f}x   (target >= 3x)"
            f"   max |derived − naive| / max |naive| = {err:.1e} (f32)"
        )
    print(
        f"  bytes written: derived {fast.bytes_written:,} = 4·n·d (O(n·d)),"
        f" naive {slow.bytes_written:,} ≈ {slow.bytes_written / (4 * n * n):.1f}·4·n² (O(n²))"
    )


# ---- 2. matmul and 3. matrix-vector --------------------------------------------------------------


def contenders(g, dev, tune: bool, names: tuple[str, str] = ("tang.tensor", "tang.tensor, tuned")):
    """(``names[0]``, the default schedule) and, with ``tune``, (``names[1]``, the
    autotuner's winner, found within a bounded budget on this device)."""
    yield names[0], T.Compiled(g, dev, schedule={})
    if tune:
        result = T.tune(g, dev, budget=TUNE_BUDGET)
        ran = sum(t.seconds is not None for t in result.trials)
        print(
            f"    autotuner: {len(result.trials)} candidates ({ran} distinct and correct),"
            f" winner {describe(result.best)} ({result.speedup:.2f}x the default;"
            f" search {result.seconds:.1f} s)"
        )
        yield names[1], T.compile(g, dev)


def matmul(dev, peak: roofline.Peak, size: int, repeat: int, tune: bool) -> None:
    a, b = T.input("a", (size, size)), T.input("b", (size, size))
    g = T.graph(c=a @ b)
    rng = np.random.default_rng(1)
    av, bv = (rng.normal(size=(size, size)).astype(np.float32) for _ in range(2))
    flops = 2 * size**3
    print(f"\nmatmul {size}³ (f32), {flops / 1e9:.2f} GFLOP per call")
    _, t_np = timed(lambda: av @ bv, repeat)
    print(
        f"  numpy (BLAS)               {ms(t_np)}   {flops / t_np / 1e9:7.1f} GFLOP/s"
        f"   {roofline.fraction(flops / t_np / 1e9, peak.fma_gflops)} of the FMA peak"
    )
    want = av.astype(np.float64) @ bv.astype(np.float64)
    for label, fn in contenders(g, dev, tune):
        fn({"a": av, "b": bv})  # inputs resident; the calls below run and read back
        first, best = timed(lambda fn=fn: fn(), repeat)
        err = float(np.abs(fn()["c"] - want).max() / np.abs(want).max())
        rate = flops / best / 1e9
        target = TARGETS[dev.kind][0]
        print(
            f"  {label:26s} {ms(best)}   {rate:7.1f} GFLOP/s"
            f"   {roofline.fraction(rate, peak.fma_gflops)} of the FMA peak"
            f"   {best / t_np:6.1f}x numpy's time (target <= {target:g}x:"
            f" {verdict(best / t_np <= target)})"
        )
        print(f"    schedule: {fn.plans['c']}; first call {ms(first)}; error {err:.1e}")


def matvec(dev, peak: roofline.Peak, size: int, repeat: int, tune: bool) -> None:
    w, x = T.input("w", (size, size)), T.input("x", (size,))
    g = T.graph(y=w @ x)
    rng = np.random.default_rng(4)
    wv, xv = rng.normal(size=(size, size)).astype(np.float32), rng.normal(size=size)
    xv = xv.astype(np.float32)
    moved = 4 * (size * size + 2 * size)
    print(f"\nmatrix-vector {size:,} × {size:,} (f32), {moved / 1e6:.0f} MB read per call")
    _, t_np = timed(lambda: wv @ xv, repeat)
    print(
        f"  numpy (BLAS)               {ms(t_np)}   {moved / t_np / 1e9:7.1f} GB/s"
        f"   {roofline.fraction(moved / t_np / 1e9, peak.copy_gbs)} of the copy bandwidth"
    )
    for label, fn in contenders(g, dev, tune):
        fn({"w": wv, "x": xv})
        first, best = timed(lambda fn=fn: fn(), repeat)
        err = float(np.abs(fn()["y"] - wv.astype(np.float64) @ xv).max())
        rate = moved / best / 1e9
        target = TARGETS[dev.kind][1]
        print(
            f"  {label:26s} {ms(best)}   {rate:7.1f} GB/s"
            f"   {roofline.fraction(rate, peak.copy_gbs)} of the copy bandwidth"
            f" (target >= {100 * target:g}%: {verdict(rate >= target * peak.copy_gbs)})"
            f"   {best / t_np:5.1f}x numpy's time"
        )
        print(f"    schedule: {fn.plans['y']}; first call {ms(first)}; max error {err:.1e}")


# ---- 4. a transformer block --------------------------------------------------------------------


def block_graph(t_len: int, dm: int, heads: int, kv_heads: int, dh: int, hidden: int):
    """RMSNorm → GQA attention with RoPE → residual → RMSNorm → SwiGLU → residual."""
    x = T.input("x", (t_len, dm))
    n1, n2 = T.input("n1", (dm,)), T.input("n2", (dm,))
    wq, wk = T.input("wq", (dm, heads * dh)), T.input("wk", (dm, kv_heads * dh))
    wv, wo = T.input("wv", (dm, kv_heads * dh)), T.input("wo", (heads * dh, dm))
    wg, wu, wd = (
        T.input("wg", (dm, hidden)),
        T.input("wu", (dm, hidden)),
        T.input("wd", (hidden, dm)),
    )

    def split(t, h):  # (T, h·dh) → (1, h, T, dh): a view
        return t.reshape(1, t_len, h, dh).permute(0, 2, 1, 3)

    a = T.rms_norm(x, n1)
    q, k, v = T.rope(split(a @ wq, heads)), T.rope(split(a @ wk, kv_heads)), split(a @ wv, kv_heads)
    att = T.attention(q, k, v, causal=True).permute(0, 2, 1, 3).reshape(t_len, heads * dh)
    h = x + att @ wo
    y = h + T.swiglu(T.rms_norm(h, n2), wg, wu, wd)
    return T.graph(y=y)


def numpy_block(p: dict, dy: np.ndarray, heads: int, kv_heads: int, dh: int, eps: float = 1e-6):
    """The same block, forward and backward, written by hand in numpy (f32)."""
    x = p["x"]
    t_len = x.shape[0]
    group = heads // kv_heads

    def rms(z, w):
        r = 1.0 / np.sqrt((z * z).mean(-1, keepdims=True) + eps)
        return z * r * w, r

    def rms_back(z, w, r, g):
        gw = g * w
        return r * gw - z * r**3 * (gw * z).mean(-1, keepdims=True), (g * z * r).sum(0)

    theta = np.arange(t_len)[:, None] * 10000.0 ** (-2.0 * np.arange(dh // 2) / dh)[None, :]
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)

    def rope(z, sign=1.0):  # (h, T, dh)
        e, o = z[..., 0::2], z[..., 1::2]
        out = np.empty_like(z)
        out[..., 0::2] = e * cos - sign * o * sin
        out[..., 1::2] = sign * e * sin + o * cos
        return out

    def heads_of(z, h):
        return z.reshape(t_len, h, dh).transpose(1, 0, 2)

    a, r1 = rms(x, p["n1"])
    q0, k0, v = (
        heads_of(a @ p["wq"], heads),
        heads_of(a @ p["wk"], kv_heads),
        heads_of(a @ p["wv"], kv_heads),
    )
    q, k = rope(q0), rope(k0)
    kk, vv = np.repeat(k, group, 0), np.repeat(v, group, 0)
    s = q @ kk.transpose(0, 2, 1) / np.sqrt(dh)
    s = np.where(np.tril(np.ones((t_len, t_len), bool)), s, -np.inf)
    pr = np.exp(s - s.max(-1, keepdims=True))
    pr /= pr.sum(-1, keepdims=True)
    o = pr @ vv
    att = o.transpose(1, 0, 2).reshape(t_len, heads * dh)
    h = x + att @ p["wo"]
    b, r2 = rms(h, p["n2"])
    g1, u = b @ p["wg"], b @ p["wu"]
    sig = 1.0 / (1.0 + np.exp(-g1))
    act = g1 * sig
    m = act * u
    y = h + m @ p["wd"]
    # backward
    grads = {"wd": m.T @ dy}
    dm_ = dy @ p["wd"].T
    du, dact = dm_ * act, dm_ * u
    dg1 = dact * sig * (1 + g1 * (1 - sig))
    grads["wg"], grads["wu"] = b.T @ dg1, b.T @ du
    db = dg1 @ p["wg"].T + du @ p["wu"].T
    dh_, grads["n2"] = rms_back(h, p["n2"], r2, db)
    dh_ = dh_ + dy
    grads["wo"] = att.T @ dh_
    datt = (dh_ @ p["wo"].T).reshape(t_len, heads, dh).transpose(1, 0, 2)
    dvv = pr.transpose(0, 2, 1) @ datt
    dp = datt @ vv.transpose(0, 2, 1)
    ds = pr * (dp - (dp * pr).sum(-1, keepdims=True)) / np.sqrt(dh)
    dq, dkk = ds @ kk, ds.transpose(0, 2, 1) @ q
    dk = dkk.reshape(kv_heads, group, t_len, dh).sum(1)
    dv = dvv.reshape(kv_heads, group, t_len, dh).sum(1)
    dq0, dk0 = rope(dq, -1.0), rope(dk, -1.0)

    def flat(z):
        return z.transpose(1, 0, 2).reshape(t_len, -1)

    grads["wq"], grads["wk"], grads["wv"] = a.T @ flat(dq0), a.T @ flat(dk0), a.T @ flat(dv)
    da = flat(dq0) @ p["wq"].T + flat(dk0) @ p["wk"].T + flat(dv) @ p["wv"].T
    dx, grads["n1"] = rms_back(x, p["n1"], r1, da)
    grads["x"] = dx + dh_
    return y, grads


def block(
    dev, repeat: int, tune: bool, t_len=32, dm=32, heads=4, kv_heads=2, dh=8, hidden=64
) -> None:
    g = block_graph(t_len, dm, heads, kv_heads, dh, hidden)
    wrt = list(g.inputs)
    both = T.stabilize_softmax(T.fuse(T.grad(g, "y", wrt)))
    rng = np.random.default_rng(2)
    p = {
        name: (rng.normal(size=s) / np.sqrt(s[0])).astype(np.float32)
        for name, s in g.inputs.items()
    }
    p["x"] = rng.normal(size=(t_len, dm)).astype(np.float32)
    p["n1"] = p["n2"] = np.ones(dm, np.float32)
    dy = rng.normal(size=(t_len, dm)).astype(np.float32)
    print(
        f"\ntransformer block, T = {t_len}, d_model = {dm}, heads {heads} (kv {kv_heads}) × {dh},"
        f" SwiGLU {hidden}: forward + backward (f32)"
    )
    _, t_np = timed(lambda: numpy_block(p, dy, heads, kv_heads, dh), repeat)
    print(f"  numpy, written by hand     {ms(t_np)}")
    y, grads = numpy_block(p, dy, heads, kv_heads, dh)
    for label, fn in contenders(both, dev, tune):
        first, best = timed(lambda fn=fn: fn({**p, "d_y": dy}), repeat)
        out = fn({**p, "d_y": dy})
        worst = max(
            float(
                np.abs(out[f"d_{w}"] - grads[w]).max() / max(1e-30, float(np.abs(grads[w]).max()))
            )
            for w in wrt
        )
        worst = max(worst, float(np.abs(out["y"] - y).max() / np.abs(y).max()))
        target = TARGETS[dev.kind][2]
        print(
            f"  {label + ', derived':26s} {ms(best)}   {best / t_np:6.1f}x numpy's time"
            f" (target <= {target:g}x: {verdict(best / t_np <= target)})"
            f"   first call {ms(first)}   agreement {worst:.1e}"
        )
    plans: dict[str, int] = {}
    for the_plan in fn.plans.values():
        plans[the_plan.kind] = plans.get(the_plan.kind, 0) + 1
    print(
        f"  {len(both.comprehensions)} comprehensions in {len(fn.steps)} dispatch(es) per call;"
        f" by plan: {plans}"
    )
    if len(fn.steps) == 1:
        return
    spent = []
    for s in fn.steps:  # each dispatch alone, waited for by reading a buffer it writes

        def alone(s=s) -> None:
            dev.dispatch(s.kernel, [fn.buffers[b] for b in s.buffers], s.items)
            dev.read(fn.buffers[s.parts[0]])

        reduces = "; ".join(
            f"{p}: sum over " + (", ".join(f"{n}:{e}" for n, e in both[p].reduce) or "nothing")
            for p in s.parts
        )
        spent.append((once(alone)[0], len(s.parts), reduces))
    spent.sort(reverse=True)
    total = sum(t for t, _, _ in spent)
    for t, parts, reduces in spent[:3]:
        print(
            f"  slowest dispatch: {ms(t)} ({100 * t / total:4.1f}% of the dispatches;"
            f" {parts} comprehension(s): {reduces})"
        )


# ---- 5. the Quantum Poet's training epoch ---------------------------------------------------


def poet_epoch(dev, repeat: int, epochs: int = 1) -> None:
    """Seconds per Poet epoch (best of ``repeat``), compiled on ``dev`` vs eager tang.nn."""
    import train  # benchmarks/train.py: the same contenders, not a copy

    contenders = {
        "compiled on the device": lambda: train.train_compiled(dev, epochs),
        "eager pure Python": lambda: train.train_tang("python", epochs),
    }
    if "numpy" in train.nn.available_backends():
        contenders["eager numpy"] = lambda: train.train_tang("numpy", epochs)
    print(f"\nQuantum Poet, {epochs} epoch(s) x {repeat} runs: seconds per epoch")
    best, losses = harness.fastest_reported(contenders, repeat)
    best = {name: seconds / epochs for name, seconds in best.items()}
    device_s = best["compiled on the device"]
    for name, seconds in best.items():
        ratio = f"{seconds / device_s:6.2f}x the device's time" if seconds != device_s else ""
        last = " ".join(f"{v:.6f}" for v in losses[name])
        print(f"  {name:26s} {seconds:9.3f} s   {ratio:26s} epoch losses {last}")
    print(f"  graph and kernels built in {min(train.COMPILE_SECONDS):.2f} s (not counted)")


# ---- 6. the page's WebGPU against wgpu-py on the same adapter ----------------------------------


def page_ratio(repeat: int) -> None:
    """The transformer card (attention as written and derived, both tuned on the device)
    in the built page on lavapipe through Chromium's WebGPU, and the same card's code on
    wgpu-py over the same lavapipe driver: each graph's time, and wgpu-py's ÷ the page's."""
    import asyncio
    import tempfile

    import gpu_page
    from playwright.sync_api import sync_playwright

    import build
    from demos import transformer

    params = {"device": "gpu", "n": 1024, "d": 64, "repeat": repeat, "rows": 4}
    build.build(build.DIST, quiet=True)
    server, url = harness.serve(build.DIST)
    flags, env = gpu_page.ADAPTERS["lavapipe"]
    try:
        with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
            context, tab = harness.open_page(pw, tmp, url, gpu_page.BASE + flags, env)
            tab.wait_for_function(
                "['ready', 'error'].includes(document.body.dataset.state)", timeout=120_000
            )

            def call(method: str, **kwargs):
                reply = tab.evaluate(gpu_page.CALL, [method, kwargs])
                if not reply["ok"]:
                    raise RuntimeError(reply["error"])
                return reply["value"]

            call("transformer.start", **params)
            while not (in_page := call("transformer.step"))["done"]:
                pass
            context.close()
    finally:
        server.shutdown()
    native = asyncio.run(transformer.run_all(**params))
    print("\nthe page's WebGPU against wgpu-py, same lavapipe driver: transformer card, n = 1,024")
    print(f"  page:    {in_page['device']['name']}")
    print(f"  wgpu-py: {native['device']['name']}")
    for label in ("naive", "derived"):
        page_ms, native_ms = in_page[label]["ms"], native[label]["ms"]
        ratio = native_ms / page_ms
        print(
            f"  {label:8s} page {page_ms:8.1f} ms   wgpu-py {native_ms:8.1f} ms   page speed"
            f" {ratio:5.2f}x wgpu-py's (target >= 0.7: {verdict(ratio >= 0.7)})"
        )
        for where, out in (("page", in_page), ("wgpu-py", native)):
            tuning = out[label]["tuning"] or {}
            print(f"    {where:8s} schedule: {tuning.get('best', 'the default')}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="c,native", help="comma-separated: c, native")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--n", type=int, default=1024, help="attention length")
    parser.add_argument("--quick", action="store_true", help="skip the 1,024³ matmul and the Poet")
    parser.add_argument("--no-tune", action="store_true", help="time the default schedules only")
    parser.add_argument(
        "--page", action="store_true", help="also the page's WebGPU against wgpu-py (lavapipe)"
    )
    args = parser.parse_args()
    os.environ.setdefault("VK_ICD_FILENAMES", LAVAPIPE)
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    for kind in args.device.split(","):
        try:
            dev = gpu.device(kind, fallback=False)
        except gpu.GPUError as exc:
            print(f"\n== {kind}: not available ({exc})")
            continue
        print(f"\n== {dev.kind}: {dev.name}")
        peak = roofline.measure(dev)
        print(f"  {peak}")
        attention(dev, args.n, 64, args.repeat, not args.no_tune)
        for size in (512,) if args.quick else (512, 1024):
            matmul(dev, peak, size, args.repeat, not args.no_tune)
        matvec(dev, peak, 4096, args.repeat, not args.no_tune)
        block(dev, args.repeat, not args.no_tune)
        if not args.quick:
            poet_epoch(dev, args.repeat)
    if args.page:
        page_ratio(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
