"""The "A transformer" card in headless Chromium, on both WebGPU adapters and with none: Run
measures derived (online-softmax) against naive attention live in the page's worker, shows the
ratio, the bytes each writes, 0 op-specific lines in the passes and a CPU check that passes;
without an adapter it says so and runs on the CPU; Stop stops; no console errors."""

from __future__ import annotations

import math

import pytest
from conftest import ADAPTERS, TangPage

CARD = "#panel-transformer .panel-body"
RUN_TIMEOUT_MS = 240_000  # SwiftShader runs the n = 1,024 naive graph in software


def open_page(launch, site, args=(), env=None) -> TangPage:
    context = launch(args=args, env=env)
    page = context.pages[0] if context.pages else context.new_page()
    tp = TangPage(page, site.url).open()
    tp.page.wait_for_function(
        "s => document.querySelector(s)?.dataset.state === 'idle'", arg=CARD, timeout=60_000
    )
    tp.page.locator(CARD).scroll_into_view_if_needed()
    return tp


def run_to_done(tp: TangPage) -> dict:
    tp.page.click(f"{CARD} .transformer-run")
    tp.page.wait_for_function(
        "s => ['done', 'error'].includes(document.querySelector(s).dataset.state)",
        arg=CARD,
        timeout=RUN_TIMEOUT_MS,
    )
    data = tp.page.eval_on_selector(CARD, "e => ({...e.dataset})")
    message = tp.page.inner_text(f"{CARD} .transformer-message")
    assert data["state"] == "done", message
    readout = {
        name: tp.page.inner_text(f"{CARD} [data-readout='{name}']")
        for name in ("device", "size", "naive", "derived", "ratio", "bytes", "oplines", "check")
    }
    note = tp.page.inner_text(f"{CARD} .transformer-note")
    widths = tp.page.eval_on_selector_all(
        f"{CARD} .transformer-bars .bar", "bs => bs.map((b) => b.getBoundingClientRect().width)"
    )
    return {"data": data, "readout": readout, "note": note, "bars": widths}


def check_card(got: dict, n: int, d: int) -> None:
    data, readout = got["data"], got["readout"]
    ratio = float(data["ratio"])
    assert math.isfinite(ratio) and ratio > 0
    assert data["check"] == "passed" and readout["check"].startswith(
        "passed: 16 rows against pure-Python float64, worst error"
    )
    assert (
        data["oplines"] == "0"
        and readout["oplines"].startswith("0 lines (")
        and "pass modules" in readout["oplines"]
    )
    assert (int(data["n"]), int(data["d"])) == (n, d)
    assert readout["size"] == f"n = {n:,}, d = {d} (causal, f32)"
    assert "O(n²)) vs" in readout["bytes"]
    assert f"vs {4 * n * d // 1024} KiB (4·n·d, O(n·d))" in readout["bytes"]
    assert readout["ratio"].endswith("(median of 3 calls each)")
    # bars: time (naive, derived), then bytes (naive, derived); the derived bytes bar is
    # n·d / (5·n²) of the naive one, down to its minimum width
    t_naive, t_derived, b_naive, b_derived = got["bars"]
    assert b_derived < b_naive / 20
    assert (t_derived < t_naive) == (ratio > 1)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_run_measures_derived_attention_on_webgpu(launch, site, adapter):
    tp = open_page(launch, site, *ADAPTERS[adapter])
    got = run_to_done(tp)
    assert got["data"]["device"] == "browser", got["note"]
    assert got["readout"]["device"].startswith("GPU: ")
    assert "Run times both on this browser's WebGPU (" in intro(tp)
    # the autotuner ran in the tab: both graphs' schedules were tried on this adapter
    for key in ("naive", "derived"):
        assert " · schedule tuned here: " in got["readout"][key], got["readout"][key]
    check_card(got, 1024, 64)
    print(adapter, got["readout"], got["note"])  # the figures, for the log (pytest -s)
    assert tp.console_errors == []


def intro(tp: TangPage) -> str:
    return tp.page.inner_text(f"{CARD} .demo-what")


def test_without_an_adapter_it_says_so_runs_on_the_cpu_and_stops(launch, site):
    tp = open_page(launch, site)
    # before a run the intro promises WebGPU only where there is an adapter
    assert "when it offers an adapter; without one, on the CPU" in intro(tp)
    # Stop while it runs: the card stops, and Run works again afterwards
    tp.page.click(f"{CARD} .transformer-run")
    tp.page.wait_for_function(
        "s => document.querySelector(s + ' .transformer-progress').value > 0",
        arg=CARD,
        timeout=120_000,
    )
    tp.page.click(f"{CARD} .transformer-stop")
    tp.page.wait_for_function(
        "s => document.querySelector(s).dataset.state === 'stopped'", arg=CARD, timeout=60_000
    )
    assert tp.page.inner_text(f"{CARD} .transformer-message") == "Stopped."
    got = run_to_done(tp)
    assert got["data"]["device"] == "cpu"
    assert got["readout"]["device"].startswith("CPU: ")
    assert got["note"].startswith("no WebGPU adapter: ran on the CPU (n = 128, d = 16")
    # the intro says what happened here, from the device the run opened
    assert "on this browser's WebGPU" not in intro(tp)
    assert "no usable WebGPU adapter, so Run times both on the CPU" in intro(tp)
    assert "at n = 128, d = 16" in intro(tp)
    assert got["readout"]["naive"].endswith(" · default schedule")  # nothing to tune
    check_card(got, 128, 16)
    assert tp.console_errors == []
