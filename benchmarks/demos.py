"""Speed of the page's demos, each figure next to a peer measured in the same run.

    python benchmarks/demos.py [--repeat R] [--page]

IK (demos/robot_arm.py): solve time of tang's damped least squares (Jacobians from one dual
    pass) for 300 seeded reachable targets from the rest pose, next to ikpy (scipy least
    squares) on the same two-link chain, limits, start and targets; both are held to the
    same accuracy (each one's worst hand error is printed). Target: ≥ 20× faster. ikpy is
    optional (``pip install ikpy``): without it the figure says so.
Orbit (demos/orbit.py): the miss's gradient from one dual pass (two tangents) through the
    1,600-step flight, next to the same flight on plain floats (ratio), to the same Dual
    carrying a ``Tangents`` tuple, and to PyTorch autograd on the same simulation (float64
    scalars, miss and gradient checked equal). Target: faster than PyTorch. torch is
    optional (``pip install torch``): without it the figure says so.
--page: the same solves in the page's worker (Pyodide in headless Chromium, through the
    e2e harness's build and server), next to this CPython. Target: a solve well inside one
    16 ms frame. And the orbit gradient there (the worker method orbit.bench), next to
    this CPython. Target: ≤ 35 ms.

Times are the minimum of R runs in this one process, contenders taking turns.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402  benchmarks/harness.py (this script's folder is on sys.path)

from demos import robot_arm as arm  # noqa: E402
from tang.physics import forward_kinematics  # noqa: E402

IK_TARGETS = 300
IK_TOLERANCE_MM = 1e-6  # both solvers must land this close (reported, not assumed)
FRAME_MS = 16.0

Call = Callable[..., object]


def ik_targets(n: int = IK_TARGETS, seed: int = 15) -> list[tuple[float, float]]:
    """Hands of random poses within the joint limits: reachable by construction."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = math.radians(rng.uniform(*arm.SHOULDER_LIMITS_DEG))
        e = math.radians(rng.uniform(*arm.ELBOW_LIMITS_DEG))
        out.append(forward_kinematics(s, e, arm.UPPER_MM, arm.FOREARM_MM))
    return out


def ikpy_chain():
    """The same arm in ikpy: shoulder and elbow about z, 227 mm and 236 mm links, the limits."""
    from ikpy.chain import Chain
    from ikpy.link import OriginLink, URDFLink

    s_lo, s_hi = (math.radians(a) for a in arm.SHOULDER_LIMITS_DEG)
    e_lo, e_hi = (math.radians(a) for a in arm.ELBOW_LIMITS_DEG)
    zero = [0.0, 0.0, 0.0]
    links = [
        OriginLink(),
        URDFLink("shoulder", zero, zero, rotation=[0, 0, 1], bounds=(s_lo, s_hi)),
        URDFLink("elbow", [arm.UPPER_MM, 0, 0], zero, rotation=[0, 0, 1], bounds=(e_lo, e_hi)),
        URDFLink("hand", [arm.FOREARM_MM, 0, 0], zero, joint_type="fixed"),
    ]
    return Chain(links, active_links_mask=[False, True, True, False])


def bench_ik(args: argparse.Namespace) -> None:
    """tang's IK next to ikpy's on the same chain and targets."""
    targets = ik_targets()
    print(f"IK: {len(targets)} reachable targets from the rest pose {arm.REST_POSE_DEG}°")

    def ours() -> float:
        return max(
            arm.solve(t, arm.REST_POSE_DEG, tolerance_mm=IK_TOLERANCE_MM / 10).hand_error_mm
            for t in targets
        )

    worst_ours = ours()
    try:
        chain = ikpy_chain()
    except ImportError:
        t_ours = harness.fastest_interleaved([ours], args.repeat)[0]
        print(
            f"  tang   {t_ours / len(targets) * 1e6:9.1f} µs per solve   worst hand error "
            f"{worst_ours:.1e} mm"
        )
        print("  ikpy   not installed (pip install ikpy): no peer figure in this run")
        return
    warnings.simplefilter("ignore")  # ikpy warns about its own link setup on every chain
    start = [0.0, *(math.radians(a) for a in arm.REST_POSE_DEG), 0.0]

    def theirs() -> float:
        worst = 0.0
        for x, y in targets:
            q = chain.inverse_kinematics([x, y, 0.0], initial_position=start)
            hx, hy = chain.forward_kinematics(q)[:2, 3]
            worst = max(worst, math.hypot(hx - x, hy - y))
        return worst

    worst_theirs = theirs()
    t_ours, t_theirs = harness.fastest_interleaved(
        [ours, theirs], args.repeat
    )  # taking turns: equal load
    per_ours, per_theirs = t_ours / len(targets), t_theirs / len(targets)
    print(f"  tang   {per_ours * 1e6:9.1f} µs per solve   worst hand error {worst_ours:.1e} mm")
    print(f"  ikpy   {per_theirs * 1e6:9.1f} µs per solve   worst hand error {worst_theirs:.1e} mm")
    equal = worst_ours <= IK_TOLERANCE_MM and worst_theirs <= IK_TOLERANCE_MM
    ratio = per_theirs / per_ours
    verdict = "met" if ratio >= 20 else "MISSED"
    print(
        f"  ratio  {ratio:.1f}× faster than ikpy (target ≥ 20×: {verdict}); "
        f"both within {IK_TOLERANCE_MM:g} mm: {'yes' if equal else 'NO'}"
    )


def page_ik(call: Call, args: argparse.Namespace) -> None:
    """The same solves in the page's worker (Pyodide), as the arm panel makes them."""
    targets = ik_targets(100)
    rest = list(arm.REST_POSE_DEG)

    def frame_ms(t: tuple[float, float]) -> float:
        r = call("robot_arm.solve", target=list(t), pose=rest, max_step_deg=360.0)
        return r["solve_ms"]

    for t in targets[:5]:  # warm-up: the module import and first calls
        frame_ms(t)
    page = [min(frame_ms(t) for _ in range(args.repeat)) for t in targets]
    here = []
    for t in targets:
        best = math.inf
        for _ in range(args.repeat):
            r = arm.solve_frame(list(t), rest, max_step_deg=360.0)
            best = min(best, r["solve_ms"])
        here.append(best)
    med_page, med_here = statistics.median(page), statistics.median(here)
    print(f"IK in the page ({len(targets)} targets, one robot_arm.solve each, from rest)")
    print(f"  Pyodide  median {med_page:.3f} ms, worst {max(page):.3f} ms per solve")
    print(f"  CPython  median {med_here:.3f} ms (this machine, same handler)")
    verdict = "met" if max(page) < FRAME_MS / 4 else "MISSED"
    print(
        f"  Pyodide/CPython {med_page / med_here:.1f}×; worst solve "
        f"{max(page) / FRAME_MS:.0%} of a {FRAME_MS:g} ms frame (target < 25%: {verdict})"
    )


ORBIT_SHOT = (1.0, math.radians(90.0))  # speed, heading: a full flight (no impact)
ORBIT_PAGE_MS = 35.0


def torch_orbit_gradient(torch, speed: float, heading: float) -> tuple[float, list[float]]:
    """The orbit's miss and its gradient by PyTorch autograd, on the same simulation as
    tang.physics.orbit (displacement-form leapfrog, impacts, closest approach to the path),
    in float64 scalars: the flight is sequential, one small op at a time for both."""
    from demos import orbit as scene

    dt = scene.DT
    s = torch.tensor(speed, dtype=torch.float64, requires_grad=True)
    h = torch.tensor(heading, dtype=torch.float64, requires_grad=True)

    def pull(x, y, scale):
        ax = ay = 0.0
        r2s = []
        for b in scene.BODIES:
            dx, dy = x - b.x, y - b.y
            r2 = dx * dx + dy * dy
            k = r2**-1.5 * (-b.gm * scale)
            ax, ay = ax + k * dx, ay + k * dy
            r2s.append(r2)
        return ax, ay, r2s

    v = s * scene.SPEED_UNIT
    x, y = torch.tensor(scene.PAD[0], dtype=torch.float64), torch.tensor(scene.PAD[1])
    ax, ay, _ = pull(x, y, 0.5 * dt * dt)
    ux, uy = v * torch.cos(h) * dt + ax, v * torch.sin(h) * dt + ay
    xs, ys = [], []
    for _ in range(scene.STEPS):
        nx, ny = x + ux, y + uy
        ax, ay, r2s = pull(nx, ny, dt * dt)
        hit = next((b for b, r2 in zip(scene.BODIES, r2s) if r2.item() < b.radius**2), None)
        if hit is not None:  # the entry point on the surface, as tang.physics.orbit does
            ddx, ddy, ox, oy = nx - x, ny - y, x - hit.x, y - hit.y
            a, bb = ddx * ddx + ddy * ddy, ox * ddx + oy * ddy
            c = ox * ox + oy * oy - hit.radius**2
            f = c / (torch.sqrt(bb * bb - a * c) - bb)
            xs.append(x + f * ddx)
            ys.append(y + f * ddy)
            break
        x, y = nx, ny
        ux, uy = ux + ax, uy + ay
        xs.append(x)
        ys.append(y)
    tx, ty = scene.TARGET
    px, py = torch.stack(xs).detach(), torch.stack(ys).detach()
    best = int(torch.argmin((px - tx) ** 2 + (py - ty) ** 2))
    lo, hi = max(0, best - 2), min(len(xs) - 1, best + 2)
    d2s = []
    for i in range(lo, hi):
        sx, sy = xs[i + 1] - xs[i], ys[i + 1] - ys[i]
        ex, ey = tx - xs[i], ty - ys[i]
        t = torch.clamp((ex * sx + ey * sy) / (sx * sx + sy * sy), 0.0, 1.0)
        d2s.append((ex - t * sx) ** 2 + (ey - t * sy) ** 2)
    miss = torch.sqrt(torch.min(torch.stack(d2s)))
    miss.backward()
    return miss.item(), [s.grad.item(), h.grad.item()]


def bench_orbit(args: argparse.Namespace) -> None:
    """The orbit's gradient (one dual pass, 1,600 steps) next to the plain-float flight and
    to PyTorch autograd on the same simulation."""
    from demos import orbit as scene
    from tang import dual
    from tang.dual import Tangents

    speed, heading = ORBIT_SHOT

    def gradient() -> tuple[float, tuple[float, float]]:
        return scene.miss_and_gradient(speed, heading)

    def plain() -> float:
        return float(scene.fire(speed, heading).miss)

    def tuple_tangents() -> tuple[float, object]:
        with dual.perturbation(speed, heading) as level:
            out = scene.fire(
                dual.seed(level, speed, Tangents((1.0, 0.0))),
                dual.seed(level, heading, Tangents((0.0, 1.0))),
            ).miss
        return dual.split(out, level)

    value, grad = gradient()
    print(
        f"Orbit gradient: {scene.STEPS:,} leapfrog steps, {len(scene.BODIES)} bodies, shot "
        f"speed {speed:g}, heading {math.degrees(heading):g}° (miss {value:.4f}, "
        f"∂/∂speed {grad[0]:.6g}, ∂/∂heading {grad[1]:.6g})"
    )
    fns = [gradient, plain, tuple_tangents]
    names = [
        "tang Dual, two tangents (complex)",
        "plain floats (value only)",
        "tang Dual, Tangents tuple",
    ]
    try:
        import torch

        torch.set_num_threads(1)
        t_value, t_grad = torch_orbit_gradient(torch, speed, heading)
        # the same flight in another order of float operations: equal to rounding, which
        # 1,600 steps amplify to about 1e-11
        agree = math.isclose(t_value, value, rel_tol=1e-9) and all(
            math.isclose(a, b, rel_tol=1e-9) for a, b in zip(t_grad, grad)
        )
        fns.append(lambda: torch_orbit_gradient(torch, speed, heading))
        names.append(f"PyTorch {torch.__version__} autograd")
    except ImportError:
        torch = None
    times = harness.fastest_interleaved(fns, args.repeat)
    for name, t in zip(names, times):
        print(f"  {name:<36} {t * 1e3:8.2f} ms")
    print(f"  dual / float           {times[0] / times[1]:.1f}× the plain flight's time")
    print(f"  complex / Tangents     {times[2] / times[0]:.1f}× faster with complex tangents")
    if torch is None:
        print("  PyTorch not installed (pip install torch): no autograd figure in this run")
    else:
        verdict = "met" if times[3] > times[0] else "MISSED"
        print(
            f"  vs PyTorch             {times[3] / times[0]:.1f}× faster than autograd "
            f"(target: faster: {verdict}); same miss and gradient: {'yes' if agree else 'NO'}"
        )


def page_orbit(call: Call, args: argparse.Namespace) -> None:
    """The orbit gradient in the page's worker (Pyodide), next to this CPython."""
    from demos import orbit as scene

    call("orbit.bench", repeat=1)  # warm-up: the module import and first passes
    page = call("orbit.bench", repeat=max(args.repeat, 3))
    here = scene.bench(repeat=max(args.repeat, 3))
    print(f"Orbit gradient in the page ({scene.STEPS:,} steps, one dual pass; best of runs)")
    print(
        f"  Pyodide  gradient {page['gradient_ms']:.1f} ms, plain flight "
        f"{page['float_ms']:.1f} ms ({page['gradient_ms'] / page['float_ms']:.1f}×)"
    )
    print(
        f"  CPython  gradient {here['gradient_ms']:.1f} ms, plain flight "
        f"{here['float_ms']:.1f} ms (this machine, same handler)"
    )
    verdict = "met" if page["gradient_ms"] <= ORBIT_PAGE_MS else "MISSED"
    print(
        f"  Pyodide/CPython {page['gradient_ms'] / here['gradient_ms']:.1f}×; gradient "
        f"{page['gradient_ms']:.1f} ms (target ≤ {ORBIT_PAGE_MS:g} ms: {verdict})"
    )


SECTIONS: list[Callable[[argparse.Namespace], None]] = [bench_ik, bench_orbit]
PAGE_SECTIONS: list[Callable[[Call, argparse.Namespace], None]] = [page_ik, page_orbit]


def with_page(sections: list[Callable[[Call, argparse.Namespace], None]], args) -> None:
    """Build the site, open it in headless Chromium and run each page section with ``call``."""
    from playwright.sync_api import sync_playwright

    import build

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        build.build(Path(tmp) / "site", quiet=True)
        server, url = harness.serve(Path(tmp) / "site")
        context, page = harness.open_page(
            pw,
            tmp,
            url,
            ["--no-sandbox", "--headless=new", "--no-first-run"],
        )
        page.wait_for_function(
            "['ready', 'error'].includes(document.body.dataset.state)", timeout=120_000
        )

        def call(method: str, **params):
            out = page.evaluate(
                """async ([m, p]) => {
                     try { return {ok: true, value: await window.tang.call(m, p)}; }
                     catch (e) { return {ok: false, error: `${e.type ?? e.name}: ${e.message}`}; }
                   }""",
                [method, params],
            )
            if not out["ok"]:
                raise RuntimeError(out["error"])
            return out["value"]

        for section in sections:
            print()
            section(call, args)
        context.close()
        server.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--page", action="store_true", help="also measure in the page (Pyodide)")
    args = parser.parse_args()
    print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPU cores")
    for section in SECTIONS:
        print()
        section(args)
    if args.page:
        with_page(PAGE_SECTIONS, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
