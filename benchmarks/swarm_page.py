"""The orbit swarm in the page (``python benchmarks/swarm.py --page lavapipe,swiftshader``):
shot-gradients per second of the swarm kernel on the page's WebGPU, through the worker's
``orbit.swarm`` as the card calls it, next to Pyodide's dual pass in the same worker
(``orbit.bench``: one shot's miss and gradient, 1,600 steps, two tangents). Target: ≥ 50×
on lavapipe.

Drives headless Chromium (/usr/bin/chromium) on the built site with each adapter's flags (as
the e2e suite launches them). The swarm's rate is its grid over the seconds of its one
kernel call, the fastest of R calls after a first one that compiles (shown apart); the
dual pass is the best of R.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import harness
from gpu_page import (  # the page's adapters, as benchmarks/gpu_page.py opens them
    ADAPTERS,
    BASE,
    CALL,
)

import build

TARGET = 50.0  # lavapipe: the swarm ≥ 50× Pyodide's dual loop


def run(adapters: Sequence[str], n: int, repeat: int) -> None:
    """Build the site, open it once per adapter, and print the swarm against the dual pass."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        site = Path(tmp) / "site"
        build.build(site, quiet=True)
        server, url = harness.serve(site)
        print(f"\n(c) in the page's worker (Pyodide + WebGPU), {n:,} shots, best of {repeat}")
        for name in adapters:
            flags, env = ADAPTERS[name]
            context, page = harness.open_page(pw, f"{tmp}/{name}", url, BASE + flags, env)
            page.wait_for_function(
                "['ready', 'error'].includes(document.body.dataset.state)", timeout=120_000
            )

            def call(method: str, page=page, **params):
                out = page.evaluate(CALL, [method, params])
                if not out["ok"]:
                    raise RuntimeError(out["error"])
                return out["value"]

            runs = [call("orbit.swarm", n=n, device="gpu") for _ in range(repeat + 1)]
            if runs[0]["device"] != "browser":
                print(f"  {name}: no WebGPU adapter ({runs[0]['fallback']}): nothing to compare")
                context.close()
                continue
            best = min(r["seconds"]["swarm"] for r in runs[1:])
            dual_ms = call("orbit.bench", repeat=repeat)["gradient_ms"]
            rate, dual_rate = n / best, 1e3 / dual_ms
            ratio = rate / dual_rate
            verdict = "" if name != "lavapipe" else f"  target ≥ {TARGET:g}×: "
            verdict += ("met" if ratio >= TARGET else "MISSED") if name == "lavapipe" else ""
            print(
                f"  {name:12} swarm {rate:10,.0f} shot-gradients/s ({best * 1e3:.0f} ms a call; "
                f"first call {runs[0]['seconds']['swarm'] * 1e3:.0f} ms, compile included) on "
                f"{runs[-1]['device_name']}"
            )
            print(
                f"  {'':12} Pyodide's dual pass {dual_rate:8,.1f} shot-gradients/s "
                f"({dual_ms:.1f} ms a shot): the swarm {ratio:,.0f}×{verdict}"
            )
            context.close()
        server.shutdown()
