"""The "A model" card's CPU/GPU switch in headless Chromium. On the lavapipe WebGPU adapter:
the switch is reached by keyboard, the Poet trains on the GPU (the whole step compiled from
the tensor IR in the worker), its first epochs' losses are the eager path's (to 1e-4,
relative: f32 against f64) and its epoch loss falls below 0.1 within a bounded wait, while
the page stays responsive; switching back to the CPU mid-training carries on from the same
step. A choice on the switch shows at once ("Switching to the CPU…", the radio checked) even
while a GPU chunk holds the worker, and the test waits for the page to confirm it. With no
adapter the GPU option is disabled and says why, the worker refuses GPU with the same reason,
and a refused switch reverts the radio and shows the reason. No console errors either way."""

from __future__ import annotations

import time

from conftest import ADAPTERS, TangPage
from test_poet import POET, card, click, main_thread_gaps, wait_card

from demos import quantum_poet as poet

GPU_WAIT_S = 240  # loss < 0.1 takes about 21 epochs
REL = 1e-4


def open_page(launch, site, args=(), env=None) -> TangPage:
    context = launch(args=args, env=env)
    page = context.pages[0] if context.pages else context.new_page()
    page = TangPage(page, site.url).open()
    page.page.locator(POET).scroll_into_view_if_needed()
    wait_card(page, "d.state === 'idle' && d.gpu !== undefined", 90_000)
    return page


def watch_switch(page) -> None:
    """Record every state the switch shows (data-device-switch and its line) from now on."""
    page.page.evaluate(
        """sel => {
             const el = document.querySelector(sel);
             const line = el.querySelector('.poet-device-state');
             window.poetSwitchWatch?.disconnect();
             window.poetSwitchSeen = [];
             window.poetSwitchWatch = new MutationObserver(() => window.poetSwitchSeen.push(
               [el.dataset.deviceSwitch, line.textContent]));
             window.poetSwitchWatch.observe(el,
               {attributes: true, attributeFilter: ['data-device-switch']});
           }""",
        POET,
    )


def switch_seen(page) -> list[list[str]]:
    return page.page.evaluate("window.poetSwitchSeen")


def wait_switched(page, device: str, timeout: float = 60_000) -> None:
    """Wait until the page confirms the switch to ``device`` (the worker trains there)."""
    wait_card(page, f"d.deviceSwitch === 'done' && d.device === '{device}'", timeout)


def test_the_poet_trains_on_the_lavapipe_gpu_below_0_1_and_switches_back(launch, site):
    # the eager path's first three epochs, computed before the page trains: the switch back
    # below must land before the run's EPOCHS are done
    eager, _ = poet.build_and_train(3, "python")
    page = open_page(launch, site, *ADAPTERS["lavapipe"])
    body = page.page.locator(POET)
    assert card(page)["gpu"] == "available", body.locator(".poet-device-note").inner_text()
    gpu_radio = body.locator(".poet-device-gpu")
    assert gpu_radio.is_enabled() and not gpu_radio.is_checked()
    assert "adapter:" in body.locator(".poet-device-note").inner_text()

    # keyboard: focus the checked CPU option, the arrow key selects GPU at once
    watch_switch(page)
    body.locator(".poet-device-cpu").focus()
    page.page.keyboard.press("ArrowRight")
    assert gpu_radio.is_checked() and card(page)["deviceWanted"] == "gpu"
    wait_switched(page, "gpu")
    assert gpu_radio.is_checked()
    assert [state for state, _ in switch_seen(page)] == ["pending", "done"]
    assert switch_seen(page)[0][1] == "Switching to the GPU…"
    assert body.locator('[data-readout="device"]').inner_text().startswith("GPU: ")

    click(page, "train")
    started = time.monotonic()
    wait_card(page, "d.state === 'training'", 60_000)
    assert main_thread_gaps(page) < 500  # 10 ms timers; the GPU work is in the worker
    wait_card(page, "Number(d.epoch) >= 1", 120_000)
    first_epoch = time.monotonic()
    wait_card(page, "d.epochLoss !== '' && Number(d.epochLoss) < 0.1", GPU_WAIT_S * 1000)
    below = time.monotonic()
    state = card(page)
    losses = state["status"]["losses"]
    assert state["device"] == "gpu" and losses[-1] < 0.1
    epochs = len(losses)
    assert main_thread_gaps(page, 800) < 500
    for i, (got, want) in enumerate(zip(losses[:3], eager.losses)):
        assert abs(got - want) <= REL * want, (i, got, want)

    # back to the CPU mid-training: the click shows at once (check() fails if the radio does
    # not take it), the page confirms the switch, and no step is lost or repeated
    at = int(card(page)["step"])
    watch_switch(page)
    cpu_radio = body.locator(".poet-device-cpu")
    cpu_radio.check()
    assert cpu_radio.is_checked() and card(page)["deviceWanted"] == "cpu"
    wait_switched(page, "cpu")
    assert cpu_radio.is_checked() and not gpu_radio.is_checked()
    seen = switch_seen(page)
    assert [state for state, _ in seen] == ["pending", "done"], seen
    assert seen[0][1] == "Switching to the CPU…" and seen[1][1].startswith("Training on the CPU")
    switched = int(card(page)["step"])
    wait_card(page, f"Number(d.step) >= {switched + 2}", 60_000)
    click(page, "stop")
    wait_card(page, "d.state === 'stopped'", 60_000)
    state = card(page)
    assert state["device"] == "cpu" and int(state["step"]) >= at
    assert state["status"]["step"] == len(state["stepLosses"])
    tail = state["stepLosses"][switched:]
    assert tail and all(isinstance(v, float) and v < 1.0 for v in tail), tail
    assert state["text"].strip()  # samples written from the GPU's weights while training
    assert page.console_errors == []
    per_epoch = (below - first_epoch) / max(1, epochs - 1)
    print(
        f"lavapipe GPU in the tab: loss {losses[-1]:.4f} < 0.1 after {epochs} epochs, "
        f"{below - started:.1f} s from Train; {per_epoch:.2f} s per epoch after the first"
    )


def test_without_an_adapter_the_gpu_option_is_disabled_with_the_reason(launch, site):
    page = open_page(launch, site)
    body = page.page.locator(POET)
    assert card(page)["gpu"] == "unavailable"
    gpu_radio = body.locator(".poet-device-gpu")
    assert gpu_radio.is_disabled() and not gpu_radio.is_checked()
    assert body.locator(".poet-device-cpu").is_checked()
    note = body.locator(".poet-device-note").inner_text()
    assert note.startswith("GPU unavailable: no WebGPU adapter"), note
    assert gpu_radio.get_attribute("aria-describedby") == "poet-device-note"
    assert body.locator('[data-readout="device"]').inner_text() == "CPU (pure Python)"
    refused = page.call("poet.device", {"session": "page", "device": "gpu"})
    assert refused["device"] == "cpu"
    assert refused["device_error"].startswith("no WebGPU adapter")
    assert "training stays on the CPU" in refused["device_error"]
    trained = page.call("poet.train", {"session": "page", "max_steps": 1, "epochs": 1})
    assert trained["device"] == "cpu" and trained["step"] == 1

    # a switch the worker refuses (here: forced past the disabled option) reverts, saying why
    watch_switch(page)
    gpu_radio.evaluate("radio => { radio.disabled = false; }")
    gpu_radio.click()
    wait_card(page, "d.deviceSwitch === 'failed'", 60_000)
    seen = switch_seen(page)
    assert [state for state, _ in seen] == ["pending", "failed"], seen
    line = body.locator(".poet-device-state")
    assert line.inner_text().startswith("Could not switch to the GPU: no WebGPU adapter")
    assert "panel-error" in line.get_attribute("class")
    assert body.locator(".poet-device-cpu").is_checked() and not gpu_radio.is_checked()
    assert gpu_radio.is_disabled()  # the worker's answer re-applies the card's own state
    assert card(page)["device"] == "cpu"
    assert page.console_errors == []
