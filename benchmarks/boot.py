"""Time to "ready": the page, cold and warm, next to Pyodide's own boot in the same run.

    python benchmarks/boot.py [--runs 5] [--against REV]

cold: each run launches Chromium with a fresh profile (empty HTTP and code caches).
warm: one profile, loaded once to fill it, then each run relaunches Chromium on it.
Time is performance.now() when the page says ready, i.e. from navigation start. The
baseline, benchmarks/site/bare.html (built into dist/_bench/ for this script only), boots
Pyodide alone in a module worker the same way.
--against REV also builds revision REV (a git worktree, sharing this clone's .cache/) and
times its page in the same run, each run of one page next to one of the other, so a change
shows as a ratio on a noisy machine; the memory snapshots' sizes are compared too.
Targets (2-core machine): cold ≤ 4 s, warm ≤ 2 s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402  benchmarks/harness.py (this script's folder is on sys.path)

import build  # noqa: E402

CHROMIUM = harness.CHROMIUM
ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-breakpad",
]
PAGES = {
    "tang page": ("index.html", "window.tang && window.tang.readyAt", "window.tang.readyAt"),
    "Pyodide alone": (
        "_bench/bare.html",
        "window.tang && window.tang.readyAt",
        "window.tang.readyAt",
    ),
}


def time_to_ready(pw, url: str, profile: str, home: str, ready_js: str, value_js: str) -> float:
    context = pw.chromium.launch_persistent_context(
        profile,
        executable_path=CHROMIUM,
        headless=True,
        args=ARGS,
        timeout=60_000,
        env={**os.environ, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config"},
    )
    try:
        page = context.pages[0] if context.pages else context.new_page()
        page.goto(url)
        page.wait_for_function(ready_js, timeout=120_000)
        if page.evaluate("document.body.dataset.state") == "error":
            raise RuntimeError(page.inner_text("body"))
        return page.evaluate(value_js) / 1000
    finally:
        context.close()


def build_revision(tree: Path, tmp: str) -> Path:
    """dist/ (with _bench/) of the revision checked out in ``tree`` (a git worktree sharing
    this clone's download cache: harness.worktree), built by its own build.py."""
    out = Path(tmp) / "dist-against"
    command = [sys.executable, "build.py", "build", "--out", str(out), "--with-benchmarks"]
    subprocess.run(command, cwd=tree, check=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", metavar="REV", help="also time revision REV's page")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    build.build(build.DIST, quiet=True, with_benchmarks=True)
    servers = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        contextlib.ExitStack() as trees,
        sync_playwright() as pw,
    ):
        server, base = harness.serve(build.DIST)
        servers.append(server)
        pages = dict(PAGES)
        folders = {"tang page": build.DIST}
        if args.against:
            other = build_revision(trees.enter_context(harness.worktree(args.against)), tmp)
            server, other_base = harness.serve(other)
            servers.append(server)
            pages[f"page at {args.against}"] = PAGES["tang page"]
            folders[f"page at {args.against}"] = other
        urls = {
            name: (other_base if name.startswith("page at") else base) + path
            for name, (path, _, _) in pages.items()
        }
        home = f"{tmp}/home"
        results: dict[tuple[str, str], list[float]] = {
            (n, k): [] for n in pages for k in ("cold", "warm")
        }
        for i in range(args.runs):  # one run of each page in turn: load moves them alike
            for name, (_, ready_js, value_js) in pages.items():
                profile = f"{tmp}/{name}-cold-{i}"
                results[(name, "cold")].append(
                    time_to_ready(pw, urls[name], profile, home, ready_js, value_js)
                )
        for name, (_, ready_js, value_js) in pages.items():  # fill each warm profile
            time_to_ready(pw, urls[name], f"{tmp}/{name}-warm", home, ready_js, value_js)
        for _ in range(args.runs):
            for name, (_, ready_js, value_js) in pages.items():
                profile = f"{tmp}/{name}-warm"
                results[(name, "warm")].append(
                    time_to_ready(pw, urls[name], profile, home, ready_js, value_js)
                )
        snapshots = {
            label: (folder / "pyodide" / "snapshot.bin").stat().st_size
            for label, folder in folders.items()
        }
    for server in servers:
        server.shutdown()

    print(f"time to ready, median of {args.runs} (min–max), {os.cpu_count()} cores")
    print(f"{'':22}{'cold (fresh profile)':>26}{'warm (reused profile)':>26}")
    for name in pages:
        cells = []
        for kind in ("cold", "warm"):
            xs = results[(name, kind)]
            cells.append(f"{statistics.median(xs):.2f} s ({min(xs):.2f}–{max(xs):.2f})")
        print(f"{name:22}{cells[0]:>26}{cells[1]:>26}")
    cold = statistics.median(results[("tang page", "cold")])
    warm = statistics.median(results[("tang page", "warm")])
    if args.against:
        name = f"page at {args.against}"
        for kind, now in (("cold", cold), ("warm", warm)):
            then = statistics.median(results[(name, kind)])
            print(f"{kind}: this tree ÷ {args.against} = {now / then:.2f}")
        for label, size in snapshots.items():
            print(f"memory snapshot, {label}: {size:,} bytes")
    print(
        f"targets: cold ≤ 4 s {'met' if cold <= 4 else 'MISSED'}, "
        f"warm ≤ 2 s {'met' if warm <= 2 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
