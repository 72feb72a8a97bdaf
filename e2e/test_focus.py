"""Keyboard focus after Enter on a control that disables itself while its card works: it
stays on the control or moves to the one that takes over (Train → Stop, Stop → Resume, Run →
Stop → Run, New round → the map), never to <body>, which would send a keyboard user back to
the top of the page (web/lib/focus.js). One page without WebGPU: every card runs on the CPU."""

from __future__ import annotations

from conftest import TangPage

POET = "#panel-poet .panel-body"
TRANSFORMER = "#panel-transformer .panel-body"
ORBIT = "#panel-orbit .panel-body"
RUN = "#panel-run .panel-body"

# counts the times focus is found on <body>, every 5 ms, from the moment it is installed
WATCH_BODY = """() => {
  window.__focusOnBody = 0;
  clearInterval(window.__focusWatch);
  window.__focusWatch = setInterval(() => {
    if (document.activeElement === document.body || !document.activeElement) window.__focusOnBody++;
  }, 5);
}"""


def wait_state(page: TangPage, card: str, condition: str, timeout: float = 60_000) -> None:
    """Wait until ``condition`` (JS over ``d``, the card's dataset) holds."""
    page.page.wait_for_function(
        f"sel => {{ const d = document.querySelector(sel).dataset; return {condition}; }}",
        arg=card,
        timeout=timeout,
    )


def enter_on(page: TangPage, control: str) -> None:
    """Focus ``control`` from the keyboard's point of view and press Enter on it."""
    page.page.focus(control)
    page.page.evaluate(WATCH_BODY)
    page.page.keyboard.press("Enter")


def wait_focus(page: TangPage, selector: str, timeout: float = 60_000) -> None:
    """Wait until the focused element matches ``selector``; say where focus is if it never does."""
    try:
        page.page.wait_for_function(
            "sel => document.activeElement?.matches(sel)", arg=selector, timeout=timeout
        )
    except Exception as err:
        where = page.page.evaluate(
            "() => { const a = document.activeElement;"
            " return a ? `${a.tagName}.${a.className} ${a.textContent.slice(0, 40)}` : null; }"
        )
        raise AssertionError(f"focus never reached {selector!r}; it is on {where}") from err
    assert page.page.evaluate("window.__focusOnBody") == 0, "focus fell to <body> on the way"


def test_enter_keeps_focus_on_the_control_or_its_successor(tang_page):
    page = tang_page

    # the transformer: Run → Stop while it runs; Stop → Run once it has stopped
    page.page.locator(TRANSFORMER).scroll_into_view_if_needed()
    wait_state(page, TRANSFORMER, "d.state === 'idle'")
    enter_on(page, f"{TRANSFORMER} .transformer-run")
    wait_focus(page, f"{TRANSFORMER} .transformer-stop")
    enter_on(page, f"{TRANSFORMER} .transformer-stop")
    wait_state(page, TRANSFORMER, "d.state === 'stopped'")
    wait_focus(page, f"{TRANSFORMER} .transformer-run")

    # the model: Train → Stop; Stop → Resume (held by the buttons' group until Resume is
    # enabled); Resume → Stop
    page.page.locator(POET).scroll_into_view_if_needed()
    wait_state(page, POET, "d.state === 'idle'")
    enter_on(page, f"{POET} .poet-train")
    wait_focus(page, f"{POET} .poet-stop")
    wait_state(page, POET, "d.state === 'training'", 30_000)
    enter_on(page, f"{POET} .poet-stop")
    wait_focus(page, f"{POET} .poet-resume", 120_000)
    enter_on(page, f"{POET} .poet-resume")
    wait_focus(page, f"{POET} .poet-stop")
    wait_state(page, POET, "d.state === 'training'", 30_000)
    enter_on(page, f"{POET} .poet-stop")
    wait_focus(page, f"{POET} .poet-resume", 120_000)

    # the orbit: one shot from the keyboard, then New round → the map, to aim again
    page.page.locator(ORBIT).scroll_into_view_if_needed()
    wait_state(page, ORBIT, "d.state === 'ready'")
    enter_on(page, f"{ORBIT} canvas")  # the first Enter shows the aim, the second launches
    page.page.keyboard.press("Enter")
    wait_state(page, ORBIT, "d.shots === '1'", 30_000)
    again = f"{ORBIT} button:has-text('New round')"
    page.page.wait_for_selector(f"{again}:enabled", timeout=30_000)
    enter_on(page, again)
    wait_state(page, ORBIT, "d.shots === '0'", 10_000)
    wait_focus(page, f"{ORBIT} canvas")

    # Run it: Stop on a long run → Run
    page.page.locator(RUN).scroll_into_view_if_needed()
    page.page.select_option("#run-samples", "4194304")
    page.page.wait_for_selector(f"{RUN} .run-controls button:has-text('Stop'):enabled")
    enter_on(page, f"{RUN} .run-controls button:has-text('Stop')")
    wait_state(page, RUN, "d.state === 'stopped'")
    wait_focus(page, "#run-go")
    assert page.console_errors == []
