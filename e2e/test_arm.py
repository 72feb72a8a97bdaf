"""The "Same idea, every scale" cards in headless Chromium: the robot arm's hand follows the
pointer (IK solved in the worker every frame), left idle it runs pick-and-place, the page
stays responsive; the scalar card follows a drag; "What you can build" lists the commands."""

from __future__ import annotations

import json
import math
import re

import pytest

from demos.examples import EXAMPLES

ARM = "#panel-arm .panel-body"
SCALAR = "#panel-scale-scalar .panel-body"


def arm_state(page) -> dict:
    return page.page.evaluate(
        """sel => {
             const el = document.querySelector(sel);
             return {...el.dataset,
                     error: el.querySelector('[data-readout="error"]').textContent,
                     mode_text: el.querySelector('[data-readout="mode"]').textContent};
           }""",
        ARM,
    )


def move_to_mm(page, x: float, y: float) -> tuple[float, float]:
    """Move the mouse over the arm's canvas to (x, y) mm; returns the target the page got."""
    canvas = page.page.locator(f"{ARM} canvas")
    view = json.loads(canvas.get_attribute("data-view"))
    box = canvas.bounding_box()
    px, py = view["ox"] + x * view["k"], view["oy"] - y * view["k"]
    page.page.mouse.move(box["x"] + px, box["y"] + py, steps=6)
    return x, y


def hand(state: dict) -> tuple[float, float]:
    x, y = state["hand"].split(",")
    return float(x), float(y)


def readout_mm(text: str) -> float:
    return float(text.split(" mm")[0].replace("−", "-"))


def test_the_arm_follows_the_pointer_then_picks_and_places(tang_page):
    page = tang_page
    page.page.locator(ARM).scroll_into_view_if_needed()
    page.page.wait_for_function(
        "sel => document.querySelector(sel + ' canvas').dataset.view", arg=ARM, timeout=30_000
    )
    start = arm_state(page)
    assert start.get("mode", "follow") == "follow"

    # a reachable point: the hand gets there, and the card says so
    target = move_to_mm(page, 250.0, 150.0)
    page.page.wait_for_function(
        """([sel, x, y]) => {
             const d = document.querySelector(sel).dataset;
             if (d.mode !== "follow" || !d.hand) return false;
             const [hx, hy] = d.hand.split(",").map(Number);
             return Number(d.handError) < 1 && Math.hypot(hx - x, hy - y) < 4;
           }""",
        arg=[ARM, *target],
        timeout=30_000,
    )
    state = arm_state(page)
    assert readout_mm(state["error"]) < 1.0, state["error"]
    assert state["mode_text"].startswith("Follow the pointer")
    first = hand(state)

    # a second point: the hand moves again (the worker solves every frame)
    move_to_mm(page, -150.0, 250.0)
    page.page.wait_for_function(
        """sel => {
             const d = document.querySelector(sel).dataset;
             const [hx, hy] = d.hand.split(",").map(Number);
             return Number(d.handError) < 1 && Math.hypot(hx + 150, hy - 250) < 4;
           }""",
        arg=ARM,
        timeout=30_000,
    )
    assert math.dist(hand(arm_state(page)), first) > 300
    assert float(arm_state(page)["solveMs"]) > 0  # its speed: benchmarks/demos.py --page

    # the keyboard moves the target as well: three steps of 10 mm down
    page.page.locator(f"{ARM} canvas").focus()
    for _ in range(3):
        page.page.keyboard.press("ArrowDown")
    page.page.wait_for_function(
        """sel => {
             const d = document.querySelector(sel).dataset;
             const [hx, hy] = d.hand.split(",").map(Number);
             return Number(d.handError) < 1 && Math.hypot(hx + 150, hy - 220) < 4;
           }""",
        arg=ARM,
        timeout=30_000,
    )

    # out of reach (below, behind the shoulder): a finite nearest pose, flagged as such
    move_to_mm(page, -300.0, -400.0)
    page.page.wait_for_function(
        "sel => document.querySelector(sel).textContent.includes('out of reach')",
        arg=ARM,
        timeout=30_000,
    )
    assert math.isfinite(float(arm_state(page)["handError"]))

    # leave it alone: pick and place starts, and the hand travels along the path
    page.page.mouse.move(5, 5)  # off the canvas: no more pointer events there
    page.page.wait_for_function(
        "sel => document.querySelector(sel).dataset.mode === 'pick-place'",
        arg=ARM,
        timeout=15_000,
    )
    page.page.wait_for_function(
        "sel => document.querySelector(sel).dataset.phase === 'carry'", arg=ARM, timeout=15_000
    )
    a = hand(arm_state(page))
    page.page.wait_for_timeout(400)
    b = hand(arm_state(page))
    assert math.dist(a, b) > 5, (a, b)
    assert arm_state(page)["mode_text"].startswith("Pick and place")

    # the page stays responsive while the arm animates: timers keep their pace, and a key
    # press on another card is handled at once
    worst_gap = page.page.evaluate(
        """() => new Promise((done) => {
             let last = performance.now(), worst = 0, n = 0;
             const id = setInterval(() => {
               const now = performance.now();
               worst = Math.max(worst, now - last);
               last = now;
               if (++n === 60) { clearInterval(id); done(worst); }
             }, 16);
           })"""
    )
    assert worst_gap < 500, f"the main thread stalled for {worst_gap:.0f} ms"
    x_before = page.page.locator(f"{SCALAR} [data-readout='x']").inner_text()
    page.page.locator("#scalar-x").focus()
    page.page.keyboard.press("ArrowRight")
    page.page.wait_for_function(
        "([sel, x]) => document.querySelector(sel + \" [data-readout='x']\").textContent !== x",
        arg=[SCALAR, x_before],
        timeout=2_000,
    )
    solves = int(arm_state(page)["solves"])
    page.page.wait_for_timeout(300)
    assert int(arm_state(page)["solves"]) > solves  # the arm kept going meanwhile
    assert page.console_errors == []


CLI = re.escape("python -m demos.robot_arm")


def command_text(page) -> str:
    return page.page.locator(f"{ARM} .command-text").inner_text()


def wait_mode(page, mode: str, timeout: float = 15_000) -> None:
    page.page.wait_for_function(
        "([sel, m]) => document.querySelector(sel).dataset.mode === m",
        arg=[ARM, mode],
        timeout=timeout,
    )


def test_the_keyboard_steers_until_left_and_the_command_names_what_runs(tang_page):
    page = tang_page
    canvas = page.page.locator(f"{ARM} canvas")
    page.page.locator(ARM).scroll_into_view_if_needed()
    page.page.wait_for_function(
        "sel => document.querySelector(sel + ' canvas').dataset.view", arg=ARM, timeout=30_000
    )
    # left alone: pick and place; the command is the loop's, the text names what is drawn
    wait_mode(page, "pick-place")
    page.page.wait_for_function(
        "sel => document.querySelector(sel).dataset.phase", arg=ARM, timeout=15_000
    )
    assert re.fullmatch(rf"{CLI} --pick-place \d+\.\d\d --json", command_text(page))
    label = canvas.get_attribute("aria-label")
    assert "carries the orange block" in label and "falling" not in label, label
    assert arm_state(page)["objects"] == "0"

    # an arrow key: the keyboard steers, and keeps steering long past the pointer's idle time
    canvas.focus()
    page.page.keyboard.press("ArrowUp")
    wait_mode(page, "keyboard", timeout=2_000)
    page.page.keyboard.press("ArrowLeft")
    page.page.wait_for_timeout(4_500)
    state = arm_state(page)
    assert state["mode"] == "keyboard", state
    assert state["mode_text"].startswith("Arrow keys")
    match = re.fullmatch(rf"{CLI} --target (-?\d+),(-?\d+) --json", command_text(page))
    assert match, command_text(page)
    target = (float(match[1]), float(match[2]))
    assert math.dist(hand(state), target) < 1e-3 and float(state["handError"]) < 1e-3
    # the text alternative: the pose and target drawn, and the falling objects when there are
    label = canvas.get_attribute("aria-label")
    assert f"Target ({match[1]}, {match[2]}) mm" in label and "arrow keys" in label, label
    n = int(arm_state(page)["objects"])
    label = canvas.get_attribute("aria-label")
    if n:
        assert f"{n} falling object" in label, label
    else:
        assert "falling" not in label, label

    # Escape lets go: pick and place again, with its command
    page.page.keyboard.press("Escape")
    wait_mode(page, "pick-place", timeout=2_000)
    page.page.wait_for_function(
        "s => document.querySelector(s + ' .command-text').textContent.includes('--pick-place')",
        arg=ARM,
        timeout=5_000,
    )
    assert "falling" not in canvas.get_attribute("aria-label")
    # so does moving focus away
    page.page.keyboard.press("ArrowDown")
    wait_mode(page, "keyboard", timeout=2_000)
    page.page.keyboard.press("Tab")
    wait_mode(page, "pick-place", timeout=2_000)

    # the pointer at the upper left of the reach: the hand gets there
    target = move_to_mm(page, -380.0, 200.0)
    page.page.wait_for_function(
        """([sel, x, y]) => {
             const d = document.querySelector(sel).dataset;
             const [hx, hy] = d.hand.split(",").map(Number);
             return d.mode === "follow" && Math.hypot(hx - x, hy - y) < 1e-2;
           }""",
        arg=[ARM, *target],
        timeout=10_000,
    )
    assert command_text(page) == "python -m demos.robot_arm --target -380,200 --json"
    assert page.console_errors == []


def test_the_scalar_card_follows_a_drag(tang_page):
    page = tang_page
    page.page.locator(SCALAR).scroll_into_view_if_needed()
    page.page.wait_for_function(
        "sel => document.querySelector(sel).dataset.state === 'done'", arg=SCALAR, timeout=30_000
    )
    assert float(page.page.locator(SCALAR).get_attribute("data-x")) == 2.0
    box = page.page.locator(f"{SCALAR} canvas").bounding_box()
    y = box["y"] + box["height"] / 2
    page.page.mouse.move(box["x"] + box["width"] * 0.6, y)
    page.page.mouse.down()
    page.page.mouse.move(box["x"] + box["width"] * 0.2, y, steps=5)
    page.page.mouse.up()
    page.page.wait_for_function(
        "sel => Number(document.querySelector(sel).dataset.x) < -2", arg=SCALAR, timeout=30_000
    )
    page.page.wait_for_timeout(300)  # the last x of the drag lands
    el = page.page.locator(SCALAR)
    x = float(el.get_attribute("data-x"))
    assert float(el.get_attribute("data-value")) == pytest.approx(x * math.sin(x), rel=1e-12)
    assert float(el.get_attribute("data-eps")) == pytest.approx(
        math.sin(x) + x * math.cos(x), rel=1e-12
    )
    command = page.page.locator(f"{SCALAR} .command-text").inner_text()
    assert command == f"python -m tang eval 'x*sin(x)' --at x={x:g} --grad"

    # "What you can build": the commands of demos/examples.py, as copyable lines
    page.page.wait_for_function(
        "() => document.querySelector('#panel-build-examples .panel-body').dataset.state"
    )
    shown = page.page.locator("#panel-build-examples .command-text").all_inner_texts()
    assert shown == [e.command for e in EXAMPLES]
    # the scale row stands above "How it works"
    order = page.page.evaluate(
        """() => [...document.querySelectorAll('#panels section[id^="panel-"]')].map(s => s.id)"""
    )
    assert (
        order.index("panel-scale-scalar") < order.index("panel-arm") < order.index("panel-how-dual")
    )
    assert page.console_errors == []
