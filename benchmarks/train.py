"""Training speed of the Quantum Poet (demos/poet_model.py): seconds per epoch on tang.nn's
pure-Python and numpy paths, next to PyTorch CPU on the same model, the same starting weights
and the same batches, measured in the same run. Targets: numpy faster than PyTorch CPU; pure
Python ≤ 1.5 s per epoch in CPython.

    python benchmarks/train.py [--epochs E] [--repeat R] [--torch-threads T] [--tab]
                               [--against REV]

Each contender trains E epochs (default 2) from the Poet's seeded start, R times (default 3),
the contenders taking turns so a busy machine slows each alike; the figure is the fastest
run's seconds per epoch. Every contender draws each epoch's batch order (tang's DataLoader
shuffle) inside its clock. Every epoch's mean loss is printed, so one can see that all three
trained the same thing. PyTorch is optional (``pip install torch``): without it the
line says so. float64 everywhere (tang.nn's only dtype); PyTorch gets one thread unless
``--torch-threads`` says otherwise (tang is single-threaded, and for a model this small
more threads mostly add synchronisation, or contend on a shared machine).

With a wgpu-py device (Mesa lavapipe here), a fourth contender trains the same model with
the whole step compiled from the tensor IR and resident on the device (tang/nn/compiled.py,
f32): its seconds per epoch against eager pure Python and numpy, graph and kernel building
timed apart.

``--tab`` also opens the site in headless Chromium (/usr/bin/chromium), presses Train on the
"A model" card and reports the seconds until an epoch's mean loss is below 0.1 (target:
within 90 s), or the loss reached when ``--tab-limit`` seconds (default 300) ran out.

``--against REV`` runs this script of revision REV (a temporary git worktree) and of this
tree in turn, R times each (one run apiece, in fresh processes), and prints each contender's
fastest seconds per epoch in both and their ratio, and with ``--tab`` both pages' time to
loss < 0.1: a change's cost measured in one run, on one noisy machine, as a ratio.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402  benchmarks/harness.py (this script's folder is on sys.path)

import tang.nn as nn  # noqa: E402
from demos import poet_model as poet  # noqa: E402


def train_tang(backend: str, epochs: int) -> tuple[float, list[float]]:
    """Seconds for ``epochs`` epochs on a tang.nn path (building the model not counted)."""
    trainer, loader = poet.build_and_train(0, backend)
    trainer.epochs(epochs)
    return harness.once(lambda: trainer.fit(loader))


def compiled_device():
    """The wgpu-py device for the compiled step (Mesa lavapipe here), or why there is none."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    import tang.gpu as gpu

    try:
        return gpu.device("native", fallback=False), ""
    except (gpu.NoDeviceError, ImportError) as exc:
        return None, f"no wgpu-py device ({exc}): no compiled path measured"


COMPILE_SECONDS: list[float] = []  # the first step of each compiled run (graph + kernels)


def train_compiled(device, epochs: int) -> tuple[float, list[float]]:
    """The same model, start and batches with the whole step compiled from the tensor IR
    (tang/nn/compiled.py) and resident on ``device``. Building the graph and its kernels
    is timed apart (a kernel already built for the device is reused)."""
    trainer, loader = poet.build_and_train(0, "numpy")
    trainer.compile(device)
    watch = harness.Stopwatch()
    trainer.compiled.build(loader.batch(0, 0))
    COMPILE_SECONDS.append(watch.lap())
    losses = trainer.epochs(epochs).fit(loader)
    return watch.lap(), losses


def train_torch(epochs: int) -> tuple[float, list[float]]:
    """The same model, start and batches in PyTorch (CPU, float64)."""
    import torch

    trainer, loader = poet.build_and_train(0, "python")  # the start and the batch order
    state = {k: torch.tensor(v.tolist(), dtype=torch.float64)
             for k, v in trainer.model.state_dict().items()}  # fmt: skip
    model = torch.nn.Sequential(
        torch.nn.Linear(240, 64), torch.nn.Tanh(),
        torch.nn.Linear(64, 64), torch.nn.Tanh(),
        torch.nn.Linear(64, 30),
    ).double()  # fmt: skip
    model.load_state_dict(state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
    windows = torch.tensor([w for w, _ in loader.dataset])
    targets = torch.tensor([t for _, t in loader.dataset])
    size = loader.batch_size

    def fit() -> list[float]:
        losses = []
        for epoch in range(epochs):
            total = 0.0
            # tang's DataLoader order, drawn inside the clock as tang's own contenders draw it
            order = torch.tensor(loader.order(epoch))
            for start in range(0, len(order), size):
                index = order[start : start + size]
                x = torch.nn.functional.one_hot(windows[index], 30).reshape(len(index), 240)
                loss = torch.nn.functional.cross_entropy(model(x.double()), targets[index])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item() * len(index)
            losses.append(total / len(loader.dataset))
        return losses

    return harness.once(fit)


def time_in_tab(limit_s: float) -> None:
    """Press Train on the built site's "A model" card; report the time to loss < 0.1."""
    from playwright.sync_api import sync_playwright

    import build

    out = Path(tempfile.mkdtemp(prefix="tang-train-bench-"))
    build.build(out, quiet=True)
    server, url = harness.serve(out)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        context, page = harness.open_page(
            pw,
            tmp,
            url,
            ["--no-sandbox", "--headless=new", "--disable-background-networking"],
        )
        sel = "#panel-poet .panel-body"
        page.wait_for_function(
            "s => document.querySelector(s)?.dataset.state === 'idle'", arg=sel, timeout=120_000
        )
        page.locator(f"{sel} .poet-train").click()
        watch = harness.Stopwatch()
        marks: dict[int, float] = {}
        while watch.elapsed() < limit_s:
            d = page.evaluate("s => ({...document.querySelector(s).dataset})", sel)
            epoch = int(d.get("epoch") or 0)
            if epoch and epoch not in marks:
                marks[epoch] = watch.elapsed()
            if d.get("epochLoss") and float(d["epochLoss"]) < 0.1:
                break
            time.sleep(0.25)
        elapsed = watch.elapsed()
        d = page.evaluate("s => ({...document.querySelector(s).dataset})", sel)
        loss = float(d["epochLoss"]) if d.get("epochLoss") else float("nan")
        per_epoch = marks[max(marks)] / max(marks) if marks else float("nan")
        print(f"\nin the tab (Pyodide, pure Python): {per_epoch:.2f} s per epoch")
        if loss < 0.1:
            verdict = "met" if elapsed <= 90 else "MISSED"
            print(f"loss < 0.1 after {elapsed:.0f} s (epoch {d['epoch']}: {loss:.4f})"
                  f"  target ≤ 90 s: {verdict}")  # fmt: skip
        else:
            print(f"loss still {loss:.4f} at epoch {d.get('epoch')} after {elapsed:.0f} s "
                  f"(limit {limit_s:.0f} s)  target ≤ 90 s: MISSED")  # fmt: skip
        context.close()
    server.shutdown()


ROW = re.compile(r"^(\S.*?)\s+(\d+\.\d+)(?:\s+\d+\.\d+)+\s*$")  # name  s/epoch  losses
TAB = re.compile(r"loss < 0\.1 after (\d+) s \(epoch (\d+): ([\d.]+)\)")


def run_script(tree: Path, args: list[str]) -> tuple[dict[str, float], str]:
    """``benchmarks/train.py args`` as revision ``tree`` has it, in a process of its own:
    its table ({contender: seconds per epoch}) and its tab line, if any."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(tree / "benchmarks" / "train.py"), *args],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"benchmarks/train.py failed in {tree}:\n{done.stderr[-3000:]}")
    lines = done.stdout.splitlines()
    start = next(k for k, line in enumerate(lines) if "s / epoch" in line)
    table = {}
    for line in lines[start + 1 :]:
        if not (found := ROW.match(line)):
            break
        table[found[1]] = float(found[2])
    tab = next((m[0] for line in lines if (m := TAB.search(line))), "")
    return table, tab


def against(rev: str, args: argparse.Namespace) -> None:
    """This tree against revision ``rev``, their runs taking turns (see the docstring)."""
    common = ["--epochs", str(args.epochs), "--repeat", "1"]
    common += ["--torch-threads", str(args.torch_threads)]
    best: dict[str, dict[str, float]] = {"this tree": {}, rev: {}}
    tabs: dict[str, str] = {}
    with harness.worktree(rev) as old:
        trees = {"this tree": ROOT, rev: old}
        for k in range(args.repeat):
            for label, tree in trees.items():
                tab = ["--tab", "--tab-limit", str(args.tab_limit)] if args.tab and k == 0 else []
                table, tab_line = run_script(tree, common + tab)
                if tab:
                    tabs[label] = tab_line
                for name, seconds in table.items():
                    best[label][name] = min(best[label].get(name, float("inf")), seconds)
    print(f"Quantum Poet, {args.epochs} epochs x {args.repeat} runs in turn: this tree "
          f"against {rev} (fastest seconds per epoch; ratio > 1: this tree slower)")  # fmt: skip
    print(f"\n{'':22}{'this tree':>11}{rev[:12]:>14}{'ratio':>9}")
    for name in best["this tree"]:
        new, old_s = best["this tree"][name], best[rev].get(name)
        ratio = f"{new / old_s:8.2f}x" if old_s else "   (none)"
        print(f"{name:22}{new:11.4f}{old_s or float('nan'):14.4f}{ratio}")
    for label in best:
        b = best[label]
        if "PyTorch CPU" in b and "tang numpy" in b:
            print(f"{label}: numpy vs PyTorch CPU {b['PyTorch CPU'] / b['tang numpy']:.2f}x")
    for label, line in tabs.items():
        print(f"{label}, in the tab: {line or 'no loss < 0.1 within the limit'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--tab", action="store_true", help="also time training in the page")
    parser.add_argument("--tab-limit", type=float, default=300.0)
    parser.add_argument("--against", metavar="REV", help="also run revision REV's script")
    args = parser.parse_args()
    if args.against:
        against(args.against, args)
        return 0
    contenders = {"tang pure Python": lambda: train_tang("python", args.epochs)}
    if "numpy" in nn.available_backends():
        contenders["tang numpy"] = lambda: train_tang("numpy", args.epochs)
    else:
        print("numpy is not installed: no numpy path")
    try:
        import torch

        torch.set_num_threads(args.torch_threads)
        contenders["PyTorch CPU"] = lambda: train_torch(args.epochs)
        torch_note = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    except ImportError:
        torch_note = "PyTorch is not installed (pip install torch): no peer measured"
    # open wgpu after torch has loaded what it loads lazily (its optimizers pull in more
    # modules): loading them once lavapipe's LLVM is in the process crashes it
    if "PyTorch CPU" in contenders:
        train_torch(0)
    device, no_device = compiled_device()
    if device is not None:
        contenders["tang compiled (wgpu)"] = lambda: train_compiled(device, args.epochs)
    print(f"Quantum Poet: 21,534 parameters, {len(poet.windows())} windows, batch 32, Adam; "
          f"{args.epochs} epochs x {args.repeat} runs, {os.cpu_count()} CPU cores; "
          f"{torch_note}")  # fmt: skip
    best, losses = harness.fastest_reported(contenders, args.repeat)
    best = {name: seconds / args.epochs for name, seconds in best.items()}
    print(f"\n{'':20}{'s / epoch':>12}  epoch losses")
    for name, s in best.items():
        print(f"{name:20}{s:12.4f}  {' '.join(f'{v:.6f}' for v in losses[name])}")
    py = best["tang pure Python"]
    verdict = "met" if py <= 1.5 else "MISSED"
    print(f"\npure Python: {py:.2f} s per epoch  target ≤ 1.5 s: {verdict}")
    if "PyTorch CPU" in best and "tang numpy" in best:
        ratio = best["PyTorch CPU"] / best["tang numpy"]
        print(f"numpy vs PyTorch CPU: {ratio:.2f}x  (> 1: numpy faster)  target > 1: "
              f"{'met' if ratio > 1 else 'MISSED'}")  # fmt: skip
        print(f"pure Python vs PyTorch CPU: {best['PyTorch CPU'] / py:.3f}x")
    if "tang compiled (wgpu)" in best:
        gpu_s = best["tang compiled (wgpu)"]
        print(f"compiled on {device.name}: {gpu_s:.3f} s per epoch (f32; graph and kernels "
              f"built in {min(COMPILE_SECONDS):.2f} s, first build {COMPILE_SECONDS[0]:.2f} s); "
              f"vs eager pure Python {py / gpu_s:.2f}x"
              + (f", vs eager numpy {best['tang numpy'] / gpu_s:.2f}x" if "tang numpy" in best
                 else ""))  # fmt: skip
    else:
        print(no_device)
    if args.tab:
        time_in_tab(args.tab_limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
