"""Time to "ready": the page, cold and warm, next to Pyodide's own boot in the same run.

    python benchmarks/boot.py [--runs 5]

cold: each run launches Chromium with a fresh profile (empty HTTP and code caches).
warm: one profile, loaded once to fill it, then each run relaunches Chromium on it.
Time is performance.now() when the page says ready, i.e. from navigation start. The
baseline, benchmarks/site/bare.html (built into dist/_bench/ for this script only), boots
Pyodide alone in a module worker the same way.
Targets (2-core machine): cold ≤ 4 s, warm ≤ 2 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import build  # noqa: E402

CHROMIUM = os.environ.get("TANG_CHROMIUM", "/usr/bin/chromium")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    build.build(build.DIST, quiet=True, with_benchmarks=True)
    server = build.make_server(build.DIST, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    results: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        home = f"{tmp}/home"
        for name, (path, ready_js, value_js) in PAGES.items():
            url = base + path
            cold = []
            for i in range(args.runs):
                cold.append(
                    time_to_ready(pw, url, f"{tmp}/{path}-cold-{i}", home, ready_js, value_js)
                )
            warm_profile = f"{tmp}/{path}-warm"
            time_to_ready(pw, url, warm_profile, home, ready_js, value_js)  # fill the caches
            warm = [
                time_to_ready(pw, url, warm_profile, home, ready_js, value_js)
                for _ in range(args.runs)
            ]
            results[(name, "cold")] = cold
            results[(name, "warm")] = warm
    server.shutdown()

    print(f"time to ready, median of {args.runs} (min–max), {os.cpu_count()} cores")
    print(f"{'':16}{'cold (fresh profile)':>26}{'warm (reused profile)':>26}")
    for name in PAGES:
        cells = []
        for kind in ("cold", "warm"):
            xs = results[(name, kind)]
            cells.append(f"{statistics.median(xs):.2f} s ({min(xs):.2f}–{max(xs):.2f})")
        print(f"{name:16}{cells[0]:>26}{cells[1]:>26}")
    cold = statistics.median(results[("tang page", "cold")])
    warm = statistics.median(results[("tang page", "warm")])
    print(
        f"targets: cold ≤ 4 s {'met' if cold <= 4 else 'MISSED'}, "
        f"warm ≤ 2 s {'met' if warm <= 2 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
