"""The page as a visitor sees it at 375 and 1280 px: the comparison table states today's claims
(tensors, training, where tang loses), each tang mark with its tests, and at 375 px it says it
scrolls and its key wraps; at 1280 px the "every scale" cards fill their rows; on a phone a
swipe over the arm or the orbit scrolls the page, while a drag from the orbit's pad stays a
launch."""

from __future__ import annotations

import pytest
from conftest import TangPage
from test_orbit_panel import ORBIT, scene_to_page, touch_drag, wait_shots

COMPARE = "#panel-compare"
STALE = ("still to come", "(yet)", "scalar expressions only")
EMPTY_PX = 150  # the most blank space a card may keep under its content in a row


def open_at(launch, site, width: int, height: int = 900) -> TangPage:
    context = launch(viewport={"width": width, "height": height})
    page = context.pages[0] if context.pages else context.new_page()
    return TangPage(page, site.url).open()


def tang_cells(page) -> dict[str, dict]:
    """Row heading → tang's cell: its mark, text and the test ids it names."""
    return page.page.evaluate(
        """sel => Object.fromEntries([...document.querySelectorAll(`${sel} tbody tr`)].map(
             (tr) => {
               const td = tr.querySelector("td[data-tool='tang']");
               return [tr.querySelector("th").textContent,
                       {mark: td.dataset.mark, text: td.textContent,
                        tests: (td.dataset.tests || "").split(" ").filter(Boolean)}];
             }))""",
        COMPARE,
    )


@pytest.mark.parametrize("width", [375, 1280])
def test_the_comparison_table_states_todays_claims_each_with_its_tests(launch, site, width):
    page = open_at(launch, site, width)
    card = page.page.locator(COMPARE)
    text = card.inner_text()
    assert not any(word in text for word in STALE), text
    cells = tang_cells(page)
    tensors = next(c for row, c in cells.items() if row.startswith("Tensors"))
    training = next(c for row, c in cells.items() if row.startswith("Training"))
    loses = [c for c in cells.values() if c["mark"] == "no"]
    assert tensors["mark"] == "yes" and "transformer card" in tensors["text"]
    assert "online-softmax" in tensors["text"] and "views" in tensors["text"]
    assert training["mark"] == "yes" and "Quantum Poet" in training["text"]
    assert "WebGPU" in training["text"] and "CPU" in training["text"]
    assert len(loses) == 1 and "tang loses here" in loses[0]["text"]
    assert "matmul" in loses[0]["text"] and "measured by benchmarks/tensor.py" in loses[0]["text"]
    # every tang cell names its tests, and opening "tested by" shows their full ids
    assert all(c["tests"] for c in cells.values()), cells
    first = card.locator("td[data-tool='tang'] details.tested").first
    first.locator("summary").click()
    assert "::test_" in first.locator("code").first.inner_text()

    box = card.locator(".table-scroll")
    overflows = box.evaluate("b => b.scrollWidth > b.clientWidth + 1")
    hint = card.locator(".scroll-hint")
    assert hint.is_visible() == overflows  # the hint shows exactly when the table scrolls
    key = card.locator(".compare-key").bounding_box()
    card_box = card.bounding_box()
    assert key["x"] + key["width"] <= card_box["x"] + card_box["width"]  # the key wraps
    if width == 375:
        assert overflows and "Scroll the table sideways" in hint.inner_text()
        assert page.page.evaluate("document.documentElement.scrollWidth") <= 375
        # only the table's box scrolls, never the card (its screen-reader text included)
        assert card.evaluate("c => c.scrollWidth <= c.clientWidth + 1")
    assert page.console_errors == []


def test_at_1280_px_the_every_scale_cards_fill_their_rows(launch, site):
    page = open_at(launch, site, 1280)
    page.page.wait_for_function(
        "document.querySelector('#panel-poet .poet-source code')?.textContent.length > 0"
    )
    cards = page.page.evaluate(
        """() => [...document.querySelectorAll('#section-scale .section-cards > .card')].map(
             (card) => {
               const r = card.getBoundingClientRect();
               const body = card.querySelector('.panel-body');
               const bottom = Math.max(...[...body.children].map(
                 (c) => c.getBoundingClientRect().bottom));
               const pad = parseFloat(getComputedStyle(card).paddingBottom);
               return {id: card.id, top: r.top, bottom: r.bottom, width: r.width,
                       empty: r.bottom - pad - bottom};
             })"""
    )
    row_width = page.page.locator("#section-scale .section-cards").bounding_box()["width"]
    assert len(cards) >= 5 and all(c["width"] < 0.6 * row_width for c in cards)  # 2 columns
    assert [c["id"] for c in cards if c["empty"] > EMPTY_PX] == [], cards
    for c in cards:  # nothing sits alone: another card shares some of its height
        beside = [
            o for o in cards if o is not c and o["top"] < c["bottom"] and c["top"] < o["bottom"]
        ]
        assert beside, f"{c['id']} sits alone in its row: {cards}"


def swipe_up(cdp, x: float, y: float, distance: float = 200) -> None:
    """A finger swipe from (x, y) upward (the page scrolls down if it is allowed to)."""
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for k in range(1, 9):
        point = {"x": x, "y": y - distance * k / 8}
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def test_a_swipe_over_the_arm_or_orbit_scrolls_but_a_drag_from_the_pad_launches(launch, site):
    page = open_at(launch, site, 375, 740)
    cdp = page.page.context.new_cdp_session(page.page)
    page.page.wait_for_function(f"document.querySelector('{ORBIT}').dataset.state === 'ready'")
    for canvas in ("#panel-arm canvas", f"{ORBIT} canvas"):
        page.page.locator(canvas).scroll_into_view_if_needed()
        box = page.page.locator(canvas).bounding_box()
        before = page.page.evaluate("scrollY")
        swipe_up(cdp, box["x"] + 12, box["y"] + box["height"] * 0.8)  # away from hand and pad
        page.page.wait_for_function("y => scrollY > y + 50", arg=before, timeout=5_000)

    # a finger that starts on the pad keeps its drag, even straight up: a shot, no scroll
    page.page.locator(f"{ORBIT} canvas").scroll_into_view_if_needed()
    page.page.wait_for_timeout(500)  # let any fling from the swipes above settle
    before = page.page.evaluate("scrollY")
    _, pad_y = scene_to_page(page, -1.0, 0.0)
    assert 0 < pad_y < 740  # the pad is on screen
    touch_drag(page, cdp, 0.6, 90.0)
    wait_shots(page, 1)
    assert page.page.evaluate("scrollY") == before
    assert page.console_errors == []
