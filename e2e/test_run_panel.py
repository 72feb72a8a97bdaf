"""The "Run it" panel: the editor's expression and its derivative along a grid, computed by
tang's WGSL kernel on WebGPU in the worker, checked against the CPU, plotted. One page per
adapter setup (see test_gpu_page.py for the two adapters); every number the page plots is
compared with tang's CPU path run here, in the test process."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest
from conftest import TangPage
from test_gpu_page import ADAPTERS, open_page

from demos import api

DEFAULT_EXPR = "f(x, y, z) = sin(x) * y + exp(z / (1 + x*x))"  # web/state.js DEFAULT_EXPR
RUN = "#panel-run .panel-body"
# |page - desktop CPU| <= TOL * (1 + |value|): f32 rounding, and SwiftShader's sin (~2e-4)
TOL = {"swiftshader": 1e-3, "lavapipe": 2e-5, "cpu": 1e-6}


def desktop(
    expr: str, n: int, fixed: dict, axis: str | None = None, lo: float = -4, hi: float = 4
) -> dict:
    """The same grid on tang's CPU device, in this process."""
    params = {"expr": expr, "n": n, "bins": min(512, n), "fixed": fixed, "device": "cpu"}
    params |= {"lo": lo, "hi": hi}
    if axis:
        params["axis"] = axis
    job = api.dispatch_json("explain.run_slice", json.dumps(params))
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's loop
        reply = json.loads(pool.submit(asyncio.run, job).result())
    assert reply["ok"], reply
    return reply["result"]


def wait_run(page: TangPage, expr: str | None = None, states=("done",), timeout=90_000) -> dict:
    """Wait until the panel has finished a run (of ``expr``, when given); its last result."""
    page.page.wait_for_function(
        """([sel, expr, states]) => {
             const el = document.querySelector(sel);
             return el && states.includes(el.dataset.state) && el.tangRun &&
                    (expr === null || el.tangRun.expr === expr);
           }""",
        arg=[RUN, expr, list(states)],
        timeout=timeout,
    )
    return page.page.evaluate("sel => document.querySelector(sel).tangRun", RUN)


def fact(page: TangPage, name: str) -> str:
    return page.page.inner_text(f'#panel-run [data-fact="{name}"]')


def shown(page: TangPage) -> dict:
    """What the card shows besides the plots: status, stale note, sliders, Stop, facts."""
    return page.page.evaluate(
        """sel => {
             const el = document.querySelector(sel);
             const note = el.querySelector('.run-stale-note');
             return {
               state: el.dataset.state, stale: el.classList.contains('stale'),
               note: note.checkVisibility() ? note.textContent : null,
               status: el.querySelector('.run-status').textContent,
               held: [...el.querySelectorAll('.run-sliders input')].map((i) => i.dataset.name),
               stop: !el.querySelector('.run-controls button:not(.primary)').disabled,
               intro: el.querySelector('.run-intro').textContent,
             };
           }""",
        RUN,
    )


def assert_plots_match(run: dict, want: dict, tol: float) -> None:
    bins = want["plot"]["bins"]
    for key in ("f", "d"):
        for side in (0, 1):
            got, ref = run[key][side], want["plot"][key][side]
            assert len(got) == len(ref) == bins
            for b, (g, r) in enumerate(zip(got, ref, strict=True)):
                if r is None:
                    assert g is None, f"{key}[{b}]: {g} where the CPU has no finite value"
                else:
                    assert abs(g - r) <= tol * (1 + abs(r)), f"{key}[{b}]: {g} vs {r}"


def set_expr(page: TangPage, expr: str) -> None:
    page.page.evaluate("h => { location.hash = h; }", f"#expr={quote(expr)}&tab=wgsl")


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_run_it_on_webgpu_matches_the_cpu(launch, site, adapter):
    args, env = ADAPTERS[adapter]
    page = open_page(launch, site, args, env)
    run = wait_run(page, DEFAULT_EXPR)
    assert run["device"]["device"] == "browser" and run["done"] == run["n"] == 16384
    assert fact(page, "device").startswith("WebGPU: ")
    assert "kernel runs on WebGPU in this page" in shown(page)["intro"]
    if adapter == "swiftshader":
        assert "swiftshader" in fact(page, "device")
    check = run["check"]  # one stated model; SwiftShader's own sin/cos is named, not hidden
    assert check["unexplained"] == check["nonfinite_mismatch"] == 0
    if adapter == "swiftshader" and check["verdict"] == "explained":
        assert check["adapter"] == check["outside"] and check["adapter_name"] == "swiftshader"
        assert "SwiftShader's own sin/cos" in fact(page, "check")
        # the verdict links to the card's own note on SwiftShader's math, which exists
        why = page.page.locator('#panel-run [data-fact="check"] a')
        assert why.get_attribute("href") == "#run-adapter-note"
        why.click()
        note = page.page.locator("#run-adapter-note")
        assert note.is_visible() and "SwiftShader" in note.inner_text()
    else:
        assert check["verdict"] == "matches"
        assert fact(page, "check").startswith("matches the CPU at all 32,768 values")
    assert_plots_match(run, desktop(DEFAULT_EXPR, 16384, {"y": 1, "z": 1}), TOL[adapter])

    # a new expression (through the shared state: here the URL hash) runs again
    expr = "x^2*y - exp(x/4)"
    set_expr(page, expr)
    run = wait_run(page, expr)
    assert run["check"]["verdict"] == "matches"  # no sin or cos: within the tolerance
    assert_plots_match(run, desktop(expr, 16384, {"y": 1}), TOL[adapter])

    # keyboard: hold y with its slider (one step = 0.05), plot along y instead of x
    slider = page.page.locator('#panel-run input[type="range"][data-name="y"]')
    slider.focus()
    page.page.keyboard.press("ArrowRight")
    page.page.wait_for_function(
        "sel => document.querySelector(sel).tangRun.fixed.y === 1.05", arg=RUN, timeout=60_000
    )
    run = wait_run(page, expr)
    assert run["fixed"]["y"] == 1.05
    assert_plots_match(run, desktop(expr, 16384, {"y": 1.05}), TOL[adapter])
    page.page.select_option("#run-axis", "y")
    page.page.wait_for_function(
        "sel => document.querySelector(sel).tangRun.axis === 'y'", arg=RUN, timeout=60_000
    )
    run = wait_run(page, expr)
    assert run["check"]["verdict"] == "matches"
    assert_plots_match(run, desktop(expr, 16384, {"x": 1}, axis="y"), TOL[adapter])
    assert page.page.inner_text("#panel-run .legend.d") == "∂f/∂y"

    # during a long run the check and the time are those of the points plotted so far, not
    # of the previous run; after Stop, of the points done
    page.page.select_option("#run-samples", "1048576")
    page.page.wait_for_function(
        "sel => { const r = document.querySelector(sel).tangRun;"
        " return r.n === 1048576 && r.done >= 131072; }",
        arg=RUN,
        timeout=120_000,
    )
    done, check, time = page.page.evaluate(
        """sel => [document.querySelector(sel).tangRun.done,
                   document.querySelector('#panel-run [data-fact="check"]').textContent,
                   document.querySelector('#panel-run [data-fact="time"]').textContent]""",
        RUN,
    )
    assert check.startswith(f"matches the CPU at all {2 * done:,} values"), (done, check)
    assert f"for {done:,} of 1,048,576 points" in time, (done, time)
    page.page.click("#panel-run button:has-text('Stop')")
    run = wait_run(page, states=("stopped",), timeout=30_000)
    assert f"for {run['done']:,} of 1,048,576 points (stopped)" in fact(page, "time")
    assert fact(page, "check").startswith(f"matches the CPU at all {2 * run['done']:,} values")
    assert shown(page)["note"] is None
    assert page.console_errors == []


def test_without_webgpu_run_it_says_so_uses_the_cpu_and_can_be_stopped(launch, site):
    page = open_page(launch, site)
    run = wait_run(page, DEFAULT_EXPR)
    assert run["device"]["device"] == "cpu" and run["check"] is None
    assert fact(page, "device") == "no WebGPU adapter — ran on the CPU"
    assert fact(page, "check") == "nothing to check: the CPU computed it"
    intro = shown(page)["intro"]  # says what happens here, not what would with WebGPU
    assert "no usable WebGPU adapter" in intro and "CPU path computes every point" in intro
    assert not page.page.is_visible("#run-adapter-note")  # about a check that is not made
    assert "runs on WebGPU" not in intro and "every point is checked" not in intro
    assert_plots_match(run, desktop(DEFAULT_EXPR, 16384, {"y": 1, "z": 1}), TOL["cpu"])

    # a long run shows progress and stops on request, and the worker carries on
    page.page.select_option("#run-samples", "4194304")
    page.page.wait_for_function(
        "sel => (document.querySelector(sel).tangRun?.done ?? 0) > 0 &&"
        " document.querySelector(sel).tangRun.n === 4194304",
        arg=RUN,
        timeout=60_000,
    )
    assert page.page.locator("#panel-run progress").evaluate("p => p.value") > 0
    page.page.click("#panel-run button:has-text('Stop')")
    run = wait_run(page, states=("stopped",), timeout=10_000)
    assert 0 < run["done"] < run["n"] == 4194304
    assert "Stopped after" in page.page.inner_text("#panel-run .run-status")
    # Time is of the points done in this run, not of the 16,384-point run before it
    assert f"for {run['done']:,} of 4,194,304 points (stopped)" in fact(page, "time")
    page.page.select_option("#run-samples", "1024")
    run = wait_run(page, DEFAULT_EXPR)
    assert run["n"] == run["done"] == 1024

    # an edit stops a long run of the old text at once (the editor gets the worker), and the
    # new text runs when typing pauses
    page.page.select_option("#run-samples", "4194304")
    page.page.wait_for_function(
        "sel => (document.querySelector(sel).tangRun?.done ?? 0) > 0", arg=RUN, timeout=60_000
    )
    set_expr(page, "x * y")
    page.page.wait_for_function(
        "sel => document.querySelector(sel).dataset.state !== 'running'", arg=RUN, timeout=5_000
    )
    page.page.wait_for_selector(".kernel-output[data-expr='x * y'][data-state=ok]", timeout=10_000)
    page.page.select_option("#run-samples", "1024")
    run = wait_run(page, "x * y")
    assert run["n"] == run["done"] == 1024

    # a bad expression is the parser's error, and the last plot stays, marked stale
    set_expr(page, "sin(x*")
    page.page.wait_for_function(
        "sel => document.querySelector(sel).dataset.state === 'error'", arg=RUN, timeout=30_000
    )
    status = page.page.inner_text("#panel-run .run-status")
    assert status.startswith("The expression does not parse") and "column" in status
    now = shown(page)
    assert now["stale"] and "of the last run (x * y along x" in now["note"], now
    assert "the expression changed" in now["note"] and not now["stop"], now
    assert page.console_errors == []


def test_a_result_shown_is_of_the_inputs_shown_or_marked_stale(launch, site):
    """A bad range after plotting along y, then switching to x: the error, the old plot and
    facts marked stale (saying which inputs changed), x no longer held, Stop off. A good
    range runs again and the mark goes."""
    page = open_page(launch, site)
    wait_run(page, DEFAULT_EXPR)
    page.page.select_option("#run-axis", "y")
    run = wait_run(page, DEFAULT_EXPR)
    page.page.wait_for_function(
        "sel => document.querySelector(sel).tangRun.axis === 'y'", arg=RUN, timeout=60_000
    )
    assert shown(page)["held"] == ["x", "z"] and shown(page)["note"] is None
    page.page.select_option("#run-samples", "4194304")  # a long run, going while we edit
    page.page.wait_for_function(
        "sel => document.querySelector(sel).tangRun.n === 4194304", arg=RUN, timeout=60_000
    )
    assert shown(page)["stop"]
    page.page.fill("#run-lo", "5")
    page.page.dispatch_event("#run-lo", "change")
    page.page.fill("#run-hi", "-5")
    page.page.dispatch_event("#run-hi", "change")
    page.page.select_option("#run-axis", "x")
    page.page.wait_for_function(
        "sel => document.querySelector(sel).dataset.state === 'error'", arg=RUN, timeout=10_000
    )
    page.page.wait_for_timeout(500)  # a late chunk of the stopped run must change nothing
    now = shown(page)
    assert now["status"] == "The range needs two numbers with from < to.", now
    assert now["stale"] and now["note"].startswith("Stale: "), now
    assert "along y from -4 to 4" in now["note"] and "the range" in now["note"], now
    assert "“along” and the range changed" in now["note"], now
    assert now["held"] == ["y", "z"] and not now["stop"], now
    assert page.page.inner_text("#panel-run .legend.d") == "∂f/∂y"  # the plot's own legend

    page.page.fill("#run-lo", "-2")
    page.page.dispatch_event("#run-lo", "change")
    page.page.fill("#run-hi", "2")
    page.page.dispatch_event("#run-hi", "change")
    page.page.select_option("#run-samples", "1024")
    run = wait_run(page, DEFAULT_EXPR)
    page.page.wait_for_function(
        "sel => { const r = document.querySelector(sel).tangRun;"
        " return r.n === 1024 && r.x0 === -2 && r.axis === 'x' && r.done === 1024; }",
        arg=RUN,
        timeout=60_000,
    )
    run = wait_run(page, DEFAULT_EXPR)
    now = shown(page)
    assert not now["stale"] and now["note"] is None and now["held"] == ["y", "z"], now
    assert page.page.inner_text("#panel-run .legend.d") == "∂f/∂x"
    assert_plots_match(run, desktop(DEFAULT_EXPR, 1024, {"y": 1, "z": 1}, lo=-2, hi=2), TOL["cpu"])

    # a held value moves: the plot (of y = 1) is dimmed in the same turn, its note waits for
    # the run that is about to replace it; then the new run is shown, not stale
    now = page.page.evaluate(
        """sel => {
             const slider = document.querySelector(sel + ' input[data-name="y"]');
             slider.value = '1.5';
             slider.dispatchEvent(new Event('input'));
             const el = document.querySelector(sel);
             return {stale: el.classList.contains('stale'),
                     note: !el.querySelector('.run-stale-note').hidden};
           }""",
        RUN,
    )
    assert now == {"stale": True, "note": False}, now
    page.page.wait_for_function(
        "sel => { const el = document.querySelector(sel);"
        " return el.tangRun.fixed.y === 1.5 && el.dataset.state === 'done'; }",
        arg=RUN,
        timeout=60_000,
    )
    run = wait_run(page, DEFAULT_EXPR)
    assert not shown(page)["stale"]
    assert_plots_match(
        run, desktop(DEFAULT_EXPR, 1024, {"y": 1.5, "z": 1}, lo=-2, hi=2), TOL["cpu"]
    )
    assert page.console_errors == []
