"""The orbit swarm, in one run: shot-gradients per second (one shot's miss and both partial
derivatives through 1,600 leapfrog steps) on tang's swarm kernel, and the kernel's compile
time next to the unrolled kernel's.

    python benchmarks/swarm.py [--n N] [--repeat R] [--dual-shots K] [--unrolled-steps A,B]
                               [--only a|b] [--page lavapipe,swiftshader]

(a) Throughput: the swarm kernel (``tang.physics.orbit.swarm_outputs``: one loop node whose
    body is one step, forward mode with two tangents inside it) over an N-shot grid in one
    ``tang.gpu.batch.evaluate`` call on wgpu-py (Mesa lavapipe) and on the compiled C
    device (f32), against the pure-Python dual pass per shot (``miss_and_gradient``, f64:
    what the page runs without a GPU) and against JAX, where it is importable:
    ``jit(vmap(jvp))`` over ``jax.lax.fori_loop`` of the same physics (f32, its default;
    two tangents pushed with ``vmap`` over the basis, as ``jax.jacfwd`` does). Each figure
    is the fastest of R runs taken in turns (``harness.fastest_interleaved``), after a first
    call that compiles; the first call is shown apart. Ratios are against the pure-Python
    dual loop and against JAX, measured in the same run.
(b) Compile time: the loop kernel printed as WGSL and compiled on lavapipe, against the
    same shot without the loop (``shoot`` traced on Duals of variables: every step its own
    nodes) at A, B… steps (the unrolled 1,600-step kernel is out of reach: its compile time
    grows faster than its length, and already takes about a minute at 400 steps here). The
    growth between the two largest is fitted as a power of the steps and the 1,600-step
    figure is printed as an extrapolation, labelled so. Mesa's shader cache is off, so each
    compile is cold.
(c) ``--page``: the same swarm through the page's worker on WebGPU against Pyodide's dual
    pass (``benchmarks/swarm_page.py``; target ≥ 50× on lavapipe).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

os.environ.setdefault("VK_ICD_FILENAMES", "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
os.environ["MESA_SHADER_CACHE_DISABLE"] = "true"  # every compile below is a cold one
sys.path.append(str(Path(__file__).resolve().parent))  # harness (already there as a script)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # before it: demos/ is the
# package, not benchmarks/demos.py

from harness import Stopwatch, fastest, fastest_interleaved, once

import tang.gpu as gpu
from demos import orbit
from tang.dual import Dual, Tangents
from tang.expr.graph import as_node, var
from tang.expr.loop import count_nodes
from tang.gpu.batch import evaluate
from tang.lower import lower
from tang.physics.orbit import shoot


def grid(n: int) -> tuple[list[float], list[float]]:
    """The swarm's own grid of n shots (speed, heading in radians), row-major."""
    speeds, headings = orbit.swarm_axes(n)
    return [s for s in speeds for _ in headings], headings * len(speeds)


def open_device(kind: str) -> gpu.Device | None:
    try:
        return gpu.device(kind, fallback=False)
    except gpu.GPUError as exc:
        print(f"  {gpu.BACKENDS[kind]}: not here ({exc.reason})")
        return None


# ---------------------------------------------------------------------------------------
# JAX: the same physics, written for jax.numpy (tang.physics.orbit.shot_loop, line by line)


def jax_swarm(n_bodies_check: int = 2):
    """``jit(vmap(value and two jvps))`` of the shot, or None where JAX is not importable."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    bodies = orbit.BODIES
    assert len(bodies) == n_bodies_check
    dt, kick, (tx, ty) = orbit.DT, orbit.DT * orbit.DT, orbit.TARGET

    def pull(x, y, scale):
        ax = ay = 0.0
        r2s = []
        for b in bodies:
            dx, dy = x - b.x, y - b.y
            r2 = dx * dx + dy * dy
            k = r2**-1.5 * -(b.gm * scale)
            ax, ay = ax + k * dx, ay + k * dy
            r2s.append(r2)
        return ax, ay, r2s

    def entry(x0, y0, x1, y1, b):
        dx, dy = x1 - x0, y1 - y0
        ox, oy = x0 - b.x, y0 - b.y
        a = dx * dx + dy * dy
        bb = ox * dx + oy * dy
        c = ox * ox + oy * oy - b.radius * b.radius
        disc = jnp.maximum(bb * bb - a * c, 1e-30)
        return c / jnp.maximum(jnp.sqrt(disc) - bb, 1e-30)

    def shot(speed, heading):
        speed = speed * orbit.SPEED_UNIT
        ax, ay, _ = pull(orbit.PAD[0], orbit.PAD[1], 0.5 * dt * dt)
        ux = speed * jnp.cos(heading) * dt + ax
        uy = speed * jnp.sin(heading) * dt + ay
        zero = 0.0 * ux

        def step(i, state):
            x, y, ux, uy, moving, best = state
            nx, ny = x + ux, y + uy
            ax, ay, r2s = pull(nx, ny, kick)
            for k, b in enumerate(bodies):
                f = entry(x, y, nx, ny, b)
                enters = (r2s[k] < b.radius * b.radius) & (moving > 0.5)
                nx = jnp.where(enters, x + f * (nx - x), nx)
                ny = jnp.where(enters, y + f * (ny - y), ny)
                moving = jnp.where(enters, 0.0, moving)
            flying = moving > 0.5
            ax, ay = jnp.where(flying, ax, 0.0), jnp.where(flying, ay, 0.0)
            ux, uy = jnp.where(flying, ux, 0.0), jnp.where(flying, uy, 0.0)
            first = i == 0
            sx0, sy0 = jnp.where(first, nx, x), jnp.where(first, ny, y)
            sx, sy = nx - sx0, ny - sy0
            t = ((tx - sx0) * sx + (ty - sy0) * sy) / jnp.maximum(sx * sx + sy * sy, 1e-30)
            t = jnp.clip(t, 0.0, 1.0)
            dx, dy = tx - (sx0 + t * sx), ty - (sy0 + t * sy)
            d2 = dx * dx + dy * dy
            best = jnp.where(d2 < best, d2, best)
            return nx, ny, ux + ax, uy + ay, moving, best

        start = (zero + orbit.PAD[0], zero + orbit.PAD[1], ux, uy, zero + 1.0, zero + 1e30)
        return jnp.sqrt(jax.lax.fori_loop(0, orbit.STEPS, step, start)[5])

    basis = (jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]))

    def value_and_gradient(speed, heading):
        def push(ts, th):
            return jax.jvp(shot, (speed, heading), (ts, th))

        value, slopes = jax.vmap(push, out_axes=(None, 0))(*basis)
        return value, slopes[0], slopes[1]

    fn = jax.jit(jax.vmap(value_and_gradient))

    def run(speeds, headings):
        out = fn(jnp.asarray(speeds, jnp.float32), jnp.asarray(headings, jnp.float32))
        return [o.block_until_ready() for o in out]

    return run, f"jax {jax.__version__} on {jax.devices()[0].platform} (f32)"


# ---------------------------------------------------------------------------------------


def throughput(n: int, repeat: int, dual_shots: int) -> None:
    print(f"(a) shot-gradients per second: {n:,} shots, {orbit.STEPS:,} steps each")
    speeds, headings = grid(n)
    points = {"speed": speeds, "heading": headings}
    plan = orbit.swarm_plan()
    print(f"    swarm kernel graph: {count_nodes(plan.outputs)} nodes (one loop node)")
    contenders = []
    for kind, label in (("native", "tang, wgpu-py"), ("c", "tang, compiled C")):
        dev = open_device(kind)
        if dev is None:
            continue

        def run(dev=dev):
            return evaluate(plan, points, device=dev)

        first, _ = once(run)
        contenders.append((f"{label} ({dev.name})", run, first))
    jax_run = jax_swarm()
    if jax_run is None:
        print("    JAX: not importable here (pip install jax): no JAX figure")
    else:
        fn, name = jax_run
        first, values = once(lambda: fn(speeds, headings))
        contenders.append((name, lambda: fn(speeds, headings), first))
        check = [0, n // 3, n // 2]  # JAX's physics is tang's: the same numbers, to f32
        worst = 0.0
        for i in check:
            v, (gs, gh) = orbit.miss_and_gradient(speeds[i], headings[i])
            for got, want in zip((values[0][i], values[1][i], values[2][i]), (v, gs, gh)):
                worst = max(worst, abs(float(got) - want) / max(abs(want), 1e-3))
        print(f"    JAX agrees with tang's dual pass to {worst:.1e} (relative) on 3 shots")
    best = fastest_interleaved([c[1] for c in contenders], repeat)

    few = list(zip(speeds[:: max(1, n // dual_shots)], headings[:: max(1, n // dual_shots)]))
    few = few[:dual_shots]
    _, dual_t = fastest(lambda: [orbit.miss_and_gradient(s, h) for s, h in few], 3)
    dual_rate = len(few) / dual_t
    jax_rate = None
    rows = []
    for (name, _, first), t in zip(contenders, best, strict=True):
        rate = n / t
        rows.append((name, rate, first))
        if name.startswith("jax"):
            jax_rate = rate
    width = max([len(r[0]) for r in rows] + [40])
    print(f"    {'':{width}}  {'shots/s':>12}  {'first call':>10}  {'vs dual':>8}  {'vs JAX':>7}")
    for name, rate, first in rows:
        vs_jax = f"{rate / jax_rate:6.2f}×" if jax_rate else "      -"
        print(
            f"    {name:{width}}  {rate:12,.0f}  {first:9.3f}s  {rate / dual_rate:7.0f}×  {vs_jax}"
        )
    name = f"pure-Python dual pass per shot ({len(few)} shots, f64)"
    print(f"    {name:{width}}  {dual_rate:12,.1f}  {'':>10}  {1:7.0f}×")


def unrolled_outputs(steps: int) -> list:
    """The same shot without the loop: ``shoot`` traced on Duals of the two variables."""
    speed = Dual(var("speed"), Tangents([1.0, 0.0]))
    heading = Dual(var("heading"), Tangents([0.0, 1.0]))
    miss = shoot(
        speed * orbit.SPEED_UNIT,
        heading,
        pad=orbit.PAD,
        target=orbit.TARGET,
        bodies=orbit.BODIES,
        steps=steps,
        dt=orbit.DT,
    ).miss
    return [as_node(miss.value), *(as_node(t) for t in miss.tangent)]


def compile_cost(outputs: list, dev: gpu.Device, tag: str) -> tuple[float, float, int]:
    """(lower seconds, compile seconds on ``dev``, WGSL lines) of a cold compile. Lavapipe
    builds the machine code at the first dispatch, not when the pipeline is made: compile =
    making the kernel + a first one-shot dispatch − a second one (the run itself)."""
    clock = Stopwatch()
    printed = lower(outputs, ["speed", "heading"], "wgsl", name="f")
    lowering = clock.lap()
    kernel = dev.kernel(printed.source + f"\n// {tag}\n")  # fresh text: the cache misses
    src, dst = dev.buffer([1.0, 1.0]), dev.empty(len(outputs))

    def shoot_one() -> None:
        dev.run(kernel, [1, src, dst], 1, out=dst)

    shoot_one()
    compiling = clock.lap()
    _, again = fastest(shoot_one, 1)
    src.release()
    dst.release()
    return lowering, compiling - again, len(printed.source.splitlines())


def compile_times(unrolled_steps: list[int]) -> None:
    print("\n(b) compile time on lavapipe: the loop kernel against the unrolled kernel")
    dev = open_device("native")
    if dev is None:
        return
    compile_cost([var("speed") + var("heading")], dev, "warm-up")  # the device's first
    rows = []  # kernel pays for starting the compiler: not counted against either
    traced, loop = once(
        lambda: orbit.swarm_outputs(
            pad=orbit.PAD,
            target=orbit.TARGET,
            bodies=orbit.BODIES,
            steps=orbit.STEPS,
            dt=orbit.DT,
            speed_unit=orbit.SPEED_UNIT,
        )
    )
    low, comp, lines = compile_cost(loop, dev, "loop")
    rows.append((f"loop, {orbit.STEPS:,} steps", count_nodes(loop), traced, low, comp, lines))
    for steps in unrolled_steps:
        traced, outs = once(lambda steps=steps: unrolled_outputs(steps))
        low, comp, lines = compile_cost(outs, dev, f"unrolled {steps}")
        rows.append((f"unrolled, {steps:,} steps", count_nodes(outs), traced, low, comp, lines))
    head = f"    {'kernel':22}  {'nodes':>8}  {'lines':>7}  {'trace':>8}  {'lower':>8}"
    print(f"{head}  {'compile':>9}  {'total / loop':>12}")
    loop_total = sum(rows[0][2:5])
    for name, nodes, traced, low, comp, lines in rows:
        total = traced + low + comp
        print(
            f"    {name:22}  {nodes:8,}  {lines:7,}  {traced:7.3f}s  {low:7.3f}s  {comp:8.3f}s  "
            f"{total / loop_total:11,.0f}×"
        )
    if len(rows) >= 3 and rows[-1][4] > rows[-2][4] > 0:
        (a, ta), (b, tb) = [(int(r[0].split()[1].replace(",", "")), r[4]) for r in rows[-2:]]
        power = math.log(tb / ta) / math.log(b / a)
        guess = tb * (orbit.STEPS / b) ** power
        print(
            f"    rough extrapolation (not measured): the unrolled {orbit.STEPS:,}-step kernel's "
            f"compile ≈ {guess:,.0f} s (compile time grew as steps^{power:.2f} from {a} to "
            f"{b} steps), {guess / rows[0][4]:,.0f}× the loop kernel's"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=orbit.SWARM_N, help="shots in the grid")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dual-shots", type=int, default=16, help="shots for the dual pass")
    parser.add_argument(
        "--unrolled-steps", default="100,200", help="steps of the unrolled kernels compiled"
    )
    parser.add_argument("--only", choices=("a", "b"), help="run one part only")
    parser.add_argument(
        "--page",
        metavar="ADAPTERS",
        help="also in the page: lavapipe,swiftshader (builds the site; headless Chromium)",
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPU cores; Python {sys.version.split()[0]}")
    if args.only != "b":
        throughput(args.n, args.repeat, args.dual_shots)
    if args.only != "a":
        compile_times([int(s) for s in args.unrolled_steps.split(",") if s.strip()])
    if args.page:
        import swarm_page

        swarm_page.run([a.strip() for a in args.page.split(",") if a.strip()], args.n, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
