"""The orbit card's swarm on both WebGPU adapters of headless Chromium (SwiftShader, lavapipe):
one shot from the keyboard, then "Let tang try" flies 4,096 shots with their gradients in one
WebGPU kernel in the worker, draws their heat map (many colours, the best marked in the
target's red), says which GPU flew them and how fast, polishes the winner and ends with a
miss below the player's best, while the page's own timer keeps firing; focus stays on the
card's buttons. Without an adapter (the CPU's 64 shots, and the card saying so):
test_orbit_panel.py::test_three_shots_then_tang_gets_closer, with the same checks."""

from __future__ import annotations

import pytest
from conftest import ADAPTERS, TangPage
from test_orbit_panel import ORBIT, TICKS, check_swarm, state, tick_gaps, wait_shots, wait_state


def open_page(launch, site, args=(), env=None) -> TangPage:
    context = launch(args=args, env=env)
    page = context.pages[0] if context.pages else context.new_page()
    tp = TangPage(page, site.url).open()
    tp.page.locator(ORBIT).scroll_into_view_if_needed()
    wait_state(tp, "ready", timeout=30_000)
    return tp


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_let_tang_try_flies_a_gpu_swarm_draws_it_and_polishes_the_winner(launch, site, adapter):
    tp = open_page(launch, site, *ADAPTERS[adapter])
    # one shot from the keyboard: speed 0.8, heading 90° (it misses by about 1)
    tp.page.locator(f"{ORBIT} canvas.orbit-canvas").focus()
    tp.page.keyboard.press("Enter")
    tp.page.keyboard.press("Enter")
    wait_shots(tp, 1)
    best = float(state(tp)["bestMiss"])
    assert best > 0.5, best

    # Let tang try from the keyboard: focus goes on to Stop while it works
    tp.page.evaluate(TICKS, ORBIT)
    tp.page.locator("#panel-orbit").get_by_role("button", name="Let tang try").focus()
    tp.page.keyboard.press("Enter")
    wait_state(tp, "done", "stopped", "error", timeout=180_000)
    done = state(tp)
    assert done["state"] == "done", done
    assert done["swarmDevice"] == "browser", done  # WebGPU in the page's worker flew it
    drawn = check_swarm(tp, 4096)
    note = drawn["note"]
    assert note.startswith("4,096 shots with their gradients in ") and " s on the GPU (" in note
    assert "shot gradients a second" in note and "No WebGPU" not in note, note
    assert done["swarm_text"].endswith("in f32, the best of 4,096 shots"), done
    # the page's clock ran on while the worker flew the swarm (it takes about a second)
    gaps = tick_gaps(tp)
    assert gaps and max(gaps) < 500, gaps

    # the polish: from the swarm's best, in f64, below the player's best
    tang_miss = float(done["tangMiss"])
    assert done["polishFrom"] == "swarm" and tang_miss < best / 10, done
    assert "from the swarm's best" in done["status"] and done["reason"] in (
        "converged",
        "stalled",
        "limit",
    ), done
    words = tp.page.locator(f"{ORBIT} .command-text").inner_text().split()
    assert words[:5] == ["python", "-m", "demos.orbit", "--swarm", "4096"], words
    # keyboard focus stayed in the card's buttons (Let tang try → Stop → a usable button)
    focused = tp.page.evaluate("document.activeElement.closest('.orbit-buttons') !== null")
    assert focused, tp.page.evaluate("document.activeElement.outerHTML.slice(0, 80)")
    print(adapter, note, f"longest tick gap {max(gaps):.0f} ms")  # for the log (pytest -s)
    assert tp.console_errors == []
