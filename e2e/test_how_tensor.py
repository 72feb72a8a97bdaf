"""How it works 3 and 4 in headless Chromium, computed by tang.tensor in Pyodide (which also
shows the package imports there: the worker methods import it). Hovering or focusing an
output cell lights exactly the source elements the worker says it reads; the derived
attention steps key by key through the state the worker folded from the IR."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import ADAPTERS, TangPage

VIEWS = "#panel-how-views .panel-body"
DERIVED = "#panel-how-derived .panel-body"


def wait_state(tp: TangPage, sel: str, attr: str, value: str, timeout: float = 60_000) -> None:
    tp.page.wait_for_function(
        "([s, a, v]) => document.querySelector(s)?.dataset[a] === v",
        arg=[sel, attr, value],
        timeout=timeout,
    )


def lit_sources(tp: TangPage) -> tuple[list[list[int]], list[int]]:
    """The lit cells of the source matrix (row, col) and of the memory strip (positions)."""
    cells = tp.page.eval_on_selector_all(
        f"{VIEWS} .views-source .lit", "es => es.map((e) => e.dataset.index)"
    )
    memory = tp.page.eval_on_selector_all(
        f"{VIEWS} .views-memory .lit", "es => es.map((e) => Number(e.dataset.position))"
    )
    return [[int(v) for v in c.split(",")] for c in cells], memory


def worker_views(tp: TangPage) -> dict:
    """The worker's answer for the chain the panel shows, asked again independently."""
    ops = json.loads(tp.page.get_attribute(VIEWS, "data-ops"))
    return tp.call("tensor_ir.views", {"shape": [4, 6], "ops": ops})


def check_hover(tp: TangPage, cells: list[int]) -> dict:
    want = worker_views(tp)
    assert len(want["reads"]) == tp.page.locator(f"{VIEWS} .views-output .cell").count()
    for i in cells:
        tp.page.hover(f"{VIEWS} .views-output [data-cell='{i}']")
        got, memory = lit_sources(tp)
        r, c = want["reads"][i]
        assert got == [[r, c]], (i, got, want["reads"][i])
        assert memory == [r * 6 + c]
    return want


@pytest.mark.parametrize("adapter", [None, *ADAPTERS])
def test_views_respond_to_hover_keys_and_buttons(launch, site, adapter):
    # the sections compute on the CPU (tang.tensor's evaluator), so they must work the same
    # with no WebGPU adapter and with either of the two headless Chromium gives here
    args, env = ADAPTERS[adapter] if adapter else ((), None)
    context = launch(args=args, env=env)
    page = context.pages[0] if context.pages else context.new_page()
    tp = TangPage(page, site.url).open()
    wait_state(tp, VIEWS, "state", "done")
    want = check_hover(tp, [0, 1, 5, 13, 19])  # x.T[1:], 5 × 4
    assert want["output"]["shape"] == [5, 4]
    chain = tp.page.inner_text(f"{VIEWS} .views-chain")
    assert chain == "x.T[1:]"
    assert tp.page.inner_text(f"{VIEWS} .views-copied") == "0"

    # keyboard: focus a cell, arrows move the lit source element
    tp.page.mouse.move(2, 2)
    tp.page.focus(f"{VIEWS} .views-output [data-cell='0']")
    tp.page.keyboard.press("ArrowRight")
    tp.page.keyboard.press("ArrowDown")
    focused = tp.page.evaluate("document.activeElement.dataset.cell")
    assert focused == "5"
    got, _ = lit_sources(tp)
    assert got == [want["reads"][5]]

    # compose: stride, then broadcast a row (stride 0), without copies
    tp.page.click(f"{VIEWS} button[data-view='stride']")
    tp.page.wait_for_function(
        "s => document.querySelector(s).dataset.ops.includes('stride')", arg=VIEWS
    )
    want = check_hover(tp, [0, 3, 9])
    strides = tp.page.eval_on_selector_all(
        f"{VIEWS} .views-table tbody tr", "rs => rs.map((r) => r.cells[2].textContent)"
    )
    assert strides == [f"({', '.join(map(str, s['strides']))})" for s in want["steps"]]
    assert strides[-1] == "(1, 12)"
    tp.page.click(f"{VIEWS} button[data-view='broadcast']")
    tp.page.wait_for_function(
        "s => document.querySelector(s).dataset.ops.includes('broadcast')", arg=VIEWS
    )
    want = check_hover(tp, [0, 2, 4])
    assert want["steps"][-1]["strides"][0] == 0
    assert tp.page.inner_text(f"{VIEWS} .views-copied") == "0"
    assert "0 + " not in want["ir"] and want["ir"] in tp.page.inner_text(f"{VIEWS} .views-ir")

    # a flatten of a transpose is not affine: a copy, and the bytes say so
    tp.page.click(f"{VIEWS} button:text('Reset')")
    tp.page.wait_for_function("s => document.querySelector(s).dataset.ops === '[]'", arg=VIEWS)
    tp.page.click(f"{VIEWS} button[data-view='transpose']")
    tp.page.wait_for_function(
        "s => document.querySelector(s).dataset.ops.includes('transpose')", arg=VIEWS
    )
    tp.page.click(f"{VIEWS} button[data-view='flatten']")
    tp.page.wait_for_function(
        "s => document.querySelector(s).dataset.ops.includes('reshape')", arg=VIEWS
    )
    assert tp.page.inner_text(f"{VIEWS} .views-copied") == "96"
    check_hover(tp, [0, 1, 4, 23])

    # derived attention: step key by key through the worker's folded state
    wait_state(tp, DERIVED, "state", "done")
    assert tp.page.get_attribute(DERIVED, "data-keys") == "0"
    params = {
        "n": 8,
        "d": 4,
        "queries": 4,
        "row": int(tp.page.get_attribute(DERIVED, "data-row")),
        "seed": int(tp.page.get_attribute(DERIVED, "data-seed")),
    }
    want = tp.call("tensor_ir.attention", params)
    step = tp.page.locator(f"{DERIVED} button:text('Step')")
    for k in range(1, 4):
        step.click()
        wait_state(tp, DERIVED, "keys", str(k))
        rows = tp.page.eval_on_selector_all(
            f"{DERIVED} .derived-trace tbody tr:not([hidden])",
            "rs => rs.map((r) => [r.dataset.m, r.dataset.l, r.dataset.acc].map(JSON.parse))",
        )
        assert rows == [[s["m"], s["l"], s["acc"]] for s in want["derived"]["steps"][:k]]
    dots = tp.page.eval_on_selector_all(
        f"{DERIVED} .derived-plot circle", "cs => cs.map((c) => c.getAttribute('class'))"
    )
    assert dots == ["done", "done", "current"] + ["pending"] * 5
    mem = tp.page.get_attribute(f"{DERIVED} .derived-memory >> nth=0", "data-elements")
    assert int(mem) == want["written"]["memory"]["elements"]
    mem = tp.page.get_attribute(f"{DERIVED} .derived-memory >> nth=1", "data-elements")
    assert int(mem) == want["derived"]["memory"]["elements"] == 4

    # hover a key: the same key lights in the written buffers and in the trace
    tp.page.hover(f"{DERIVED} .derived-written tbody tr[data-key='2']")
    keys = tp.page.eval_on_selector_all(
        f"{DERIVED} .derived-table .lit",
        "es => es.map((e) => [e.closest('table').classList[1], e.dataset.key])",
    )
    assert sorted(keys) == [["derived-trace", "2"], ["derived-written", "2"]]
    tp.page.hover(f"{DERIVED} .derived-plot circle[data-key='1']")  # a dot lights its rows
    keys = tp.page.eval_on_selector_all(
        f"{DERIVED} .lit", "es => es.map((e) => e.dataset?.key ?? e.getAttribute('data-key'))"
    )
    assert keys == ["1", "1", "1"]
    # as written, each n-long buffer is a column of that table: scores … probabilities
    heads = tp.page.eval_on_selector_all(
        f"{DERIVED} .derived-written thead th", "ts => ts.map((t) => t.textContent)"
    )
    assert heads[1:] == [b["name"] for b in want["written"]["buffers"] if len(b["values"]) == 8]

    # play runs on by itself, off screen it waits, pause stops it

    def keys_now() -> int:
        return int(tp.page.get_attribute(DERIVED, "data-keys"))

    tp.page.click(f"{DERIVED} button:text('Reset')")
    assert keys_now() == 0
    tp.page.click(f"{DERIVED} button:text('Play')")
    tp.page.wait_for_function(
        "s => Number(document.querySelector(s).dataset.keys) >= 2", arg=DERIVED, timeout=20_000
    )
    tp.page.evaluate("window.scrollTo(0, 0)")
    top = tp.page.evaluate(f"document.querySelector('{DERIVED}').getBoundingClientRect().top")
    assert top > tp.page.viewport_size["height"]  # the panel is off screen now
    tp.page.wait_for_timeout(300)
    away = keys_now()
    tp.page.wait_for_timeout(2000)  # 2.5 keys' time
    assert keys_now() == away < 8
    tp.page.locator(DERIVED).scroll_into_view_if_needed()
    tp.page.wait_for_function(
        "([s, k]) => Number(document.querySelector(s).dataset.keys) > k",
        arg=[DERIVED, away],
        timeout=20_000,
    )
    tp.page.click(f"{DERIVED} button:text('Pause')")
    stopped = keys_now()
    tp.page.wait_for_timeout(1200)
    assert keys_now() == stopped
    while tp.page.get_attribute(DERIVED, "data-keys") != "8":
        step.click()
    final = tp.page.inner_text(f"{DERIVED} .derived-outputs dd[data-final='true']")
    assert final.startswith("[") and want["max_difference"] <= 1e-12
    assert tp.console_errors == []


def test_both_sections_fit_a_375_px_screen(launch, site):
    context = launch(viewport={"width": 375, "height": 800})
    tp = TangPage(context.pages[0] if context.pages else context.new_page(), site.url).open()
    wait_state(tp, VIEWS, "state", "done")
    wait_state(tp, DERIVED, "state", "done")
    for card in ("#panel-how-views", "#panel-how-derived"):
        width = tp.page.evaluate(
            "s => { const e = document.querySelector(s);"
            " return [e.scrollWidth, e.clientWidth, e.getBoundingClientRect().right]; }",
            card,
        )
        assert width[0] <= width[1] and width[2] <= 375, (card, width)
    tp.page.hover(f"{VIEWS} .views-output [data-cell='3']")
    assert len(lit_sources(tp)[0]) == 1
    assert tp.console_errors == []


# Key times as the page sees them: a MutationObserver stamps each change of data-keys.
WATCH_KEYS = """s => { window.keyTimes = []; if (window.keyWatch) return;
  const el = document.querySelector(s);
  window.keyWatch = new MutationObserver(
    () => window.keyTimes.push([Number(el.dataset.keys), performance.now()]));
  window.keyWatch.observe(el, {attributes: true, attributeFilter: ['data-keys']}); }"""
# A main thread busy 600 ms in every 650 (a loaded machine): two frames a second at most.
STARVE = """() => { window.starve = setInterval(() => {
  const end = performance.now() + 600; while (performance.now() < end); }, 650); }"""
# Click a button and report data-keys in the same task, then the time to the next frame.
CLICK = """([s, name]) => new Promise((done) => {
  const b = [...document.querySelectorAll(s + ' button')].find((x) => x.textContent === name);
  const t0 = performance.now();
  b.click();
  const keys = document.querySelector(s).dataset.keys;
  requestAnimationFrame(() => done({keys, ms: performance.now() - t0}));
})"""


def test_play_keeps_real_time_when_frames_are_slow_and_step_is_immediate(tang_page):
    # Play used to count capped frame steps (0.1 s each): with frames a second apart a key
    # took 8 s. Keys must follow the clock: the first at once, then one per 0.8 s (or per
    # frame, when frames are slower than that).
    tp = tang_page
    tp.page.locator(DERIVED).scroll_into_view_if_needed()
    wait_state(tp, DERIVED, "state", "done")
    load_ms = tp.page.evaluate(
        """async () => { const t0 = performance.now();
             const p = {n: 8, d: 4, queries: 4, row: 0, seed: 5};
             await window.tang.call('tensor_ir.attention', p);
             return performance.now() - t0; }"""
    )
    tp.page.evaluate(WATCH_KEYS, DERIVED)
    tp.page.evaluate(STARVE)
    try:
        start = tp.page.evaluate("performance.now()")
        first = tp.page.evaluate(CLICK, [DERIVED, "Play"])
        assert first["keys"] == "1"  # in the click's own task
        tp.page.wait_for_function(
            "s => document.querySelector(s).dataset.keys === '8'", arg=DERIVED, timeout=60_000
        )
        times = tp.page.evaluate("window.keyTimes")
    finally:
        tp.page.evaluate("clearInterval(window.starve)")
    assert [k for k, _ in times] == list(range(1, 9))  # one key at a time, none skipped
    arrivals = [(t - start) / 1000 for _, t in times]
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    print(
        f"\nattention call {load_ms:.0f} ms; starved Play: keys at", [round(a, 2) for a in arrivals]
    )
    # the old frame-counting clock needed 8 frames (≥ 5 s here) per key: 40 s for 8 keys
    assert arrivals[-1] < 20, arrivals
    assert max(gaps) < 3, gaps

    # unloaded: Step shows its key in the click's task; Play's cadence is even
    tp.page.click(f"{DERIVED} button:text('Reset')")
    steps = [tp.page.evaluate(CLICK, [DERIVED, "Step"]) for _ in range(3)]
    assert [s["keys"] for s in steps] == ["1", "2", "3"]
    tp.page.click(f"{DERIVED} button:text('Reset')")
    tp.page.evaluate(WATCH_KEYS, DERIVED)
    start = tp.page.evaluate("performance.now()")
    tp.page.evaluate(CLICK, [DERIVED, "Play"])
    tp.page.wait_for_function(
        "s => document.querySelector(s).dataset.keys === '8'", arg=DERIVED, timeout=30_000
    )
    idle = [(t - start) / 1000 for _, t in tp.page.evaluate("window.keyTimes")]
    print("Step to next frame (ms):", [round(s["ms"]) for s in steps])
    print("idle Play: keys at", [round(a, 2) for a in idle[1:]])
    assert tp.console_errors == []
