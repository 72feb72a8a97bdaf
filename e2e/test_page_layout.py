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


def swipe(cdp, starts: list[tuple[float, float]], dx: list[float], dy: list[float]) -> None:
    """Fingers pressed at `starts`, each moved by its (dx, dy) in 8 steps, then lifted."""
    points = lambda f: [{"x": x + f * u, "y": y + f * v} for (x, y), u, v in zip(starts, dx, dy)]  # noqa: E731
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": points(0)})
    for k in range(1, 9):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": points(k / 8)})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def swipe_up(cdp, x: float, y: float, distance: float = 200) -> None:
    """A finger swipe from (x, y) upward (the page scrolls down if it is allowed to)."""
    swipe(cdp, [(x, y)], [0.0], [-distance])


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


GRAPH = "#panel-graph .panel-body"


def graph_view(page) -> dict:
    """The graph's viewBox and scale, and the page's scroll."""
    return page.page.evaluate(
        """s => { const svg = document.querySelector(s + ' .graph-svg');
                  return {box: svg.getAttribute('viewBox'), scale: Number(svg.dataset.scale),
                          scrollY}; }""",
        GRAPH,
    )


def test_a_swipe_over_the_graph_scrolls_while_a_sideways_drag_or_pinch_moves_it(launch, site):
    page = open_at(launch, site, 375, 740)
    cdp = page.page.context.new_cdp_session(page.page)
    page.page.wait_for_function(
        "s => ['ok', 'summary'].includes(document.querySelector(s).dataset.state)", arg=GRAPH
    )
    graph = page.page.locator(f"{GRAPH} .graph-box")
    graph.scroll_into_view_if_needed()
    box = graph.bounding_box()
    assert box["height"] > 0.4 * 740  # big enough to trap a finger if it kept every touch
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.8
    before = graph_view(page)
    swipe_up(cdp, x, y)
    page.page.wait_for_function("y => scrollY > y + 50", arg=before["scrollY"], timeout=5_000)

    # a sideways drag pans the graph, and two fingers pinch it, without scrolling the page
    graph.scroll_into_view_if_needed()
    page.page.wait_for_timeout(500)  # let the fling settle
    box = graph.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    before = graph_view(page)
    swipe(cdp, [(x + 60, y)], [-120.0], [0.0])
    panned = graph_view(page)
    assert panned["box"] != before["box"] and panned["scrollY"] == before["scrollY"]
    swipe(cdp, [(x - 30, y - 30), (x + 30, y + 30)], [-40.0, 40.0], [-40.0, 40.0])
    pinched = graph_view(page)
    assert pinched["scale"] > 1.5 * panned["scale"], (panned, pinched)
    assert pinched["scrollY"] == before["scrollY"]
    assert page.console_errors == []


# the text at each line break of an element: the last character of a line, any it collapsed
# away (a space has no box there), and the first of the next line
LINE_BREAKS = """el => {
  const text = el.textContent;
  const tops = [];
  const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let at = 0;
  for (let n = walk.nextNode(); n; at += n.length, n = walk.nextNode()) {
    for (let i = 0; i < n.length; i++) {
      const r = document.createRange();
      r.setStart(n, i);
      r.setEnd(n, i + 1);
      const rect = r.getClientRects()[0];
      if (rect) tops.push([at + i, rect.top]);
    }
  }
  const breaks = [];
  for (let k = 1; k < tops.length; k++) {
    if (tops[k][1] > tops[k - 1][1] + 2) breaks.push(text.slice(tops[k - 1][0], tops[k][0] + 1));
  }
  return breaks;
}"""
BREAK_AFTER = " +-*/,="
SPACELESS = "sin(x)*y+exp(z/(1+x*x))+cos(y*z)*x**2+log(1+y*y)"


def test_at_375_px_text_wraps_where_a_reader_expects(launch, site):
    page = open_at(launch, site, 375)
    run_expr = page.page.locator("#panel-run .run-expr")
    page.page.wait_for_function(
        "e => e.textContent.length > 0", arg=run_expr.element_handle(), timeout=60_000
    )
    # Run it's expression breaks at its spaces, and a spaceless one after an operator
    for expr, allowed in ((None, " "), (SPACELESS, BREAK_AFTER)):
        if expr:
            page.page.evaluate("e => { location.hash = '#expr=' + encodeURIComponent(e); }", expr)
            page.page.wait_for_function(
                "([el, e]) => el.textContent.endsWith(e)", arg=[run_expr.element_handle(), expr]
            )
        breaks = run_expr.evaluate(LINE_BREAKS)
        assert breaks and all(any(c in allowed for c in at[:-1]) for at in breaks), breaks

    # each command's $ sits on its first line, however many lines the command wraps to (the
    # commands on screen: one in a card not shown at the moment, a state the page may be in
    # while a busy machine loads it, has no lines to measure)
    prompts = page.page.evaluate(
        """() => [...document.querySelectorAll('.command')].flatMap((c) => {
             const text = c.querySelector('.command-text');
             if (!text.firstChild || !text.firstChild.firstChild) return [];
             const r = document.createRange();
             r.setStart(text.firstChild.firstChild, 0);
             r.setEnd(text.firstChild.firstChild, 1);
             const first = r.getClientRects()[0];
             if (!first) return [];
             const lines = text.getBoundingClientRect().height /
               parseFloat(getComputedStyle(text).lineHeight);
             return [{text: text.textContent, lines, prompt: c.querySelector('.command-prompt')
               .getBoundingClientRect().bottom, first: first.bottom}];
           })"""
    )
    assert len(prompts) >= 2, prompts
    assert any(p["lines"] > 1.5 for p in prompts), prompts  # some command wraps at 375 px
    assert [p for p in prompts if abs(p["prompt"] - p["first"]) > 3] == []

    # How it works 4: a formula wider than the card shows it scrolls (the shadow at its edge)
    derived = "#panel-how-derived"
    page.page.wait_for_selector(f"{derived} .tex-display .katex")
    formula = page.page.locator(f"{derived} .tex-display").first.evaluate(
        """e => ({overflows: e.scrollWidth > e.clientWidth + 1,
                  image: getComputedStyle(e).backgroundImage,
                  attach: getComputedStyle(e).backgroundAttachment})"""
    )
    assert formula["overflows"] and "radial-gradient" in formula["image"], formula
    assert "local" in formula["attach"]
    # its "As written" headings sit over their numbers: right edges aligned
    page.page.wait_for_selector(f"{derived} .derived-written tbody tr td.num")
    edges = page.page.evaluate(
        """s => { const t = document.querySelector(s + ' .derived-written');
                  const heads = [...t.querySelectorAll('thead th')].slice(1);
                  const row = [...t.querySelectorAll('tbody tr')][0].querySelectorAll('td');
                  const right = (el) => { const r = document.createRange();
                    r.selectNodeContents(el); return r.getBoundingClientRect().right; };
                  return heads.map((h, j) => [right(h), right(row[j])]); }""",
        derived,
    )
    assert edges and all(abs(h - n) <= 2 for h, n in edges), edges
    assert page.console_errors == []


def test_at_1280_px_no_column_stands_blank_and_labels_wrap_beside_their_radio(launch, site):
    page = open_at(launch, site, 1280)
    # How it works 2: the graph's list leaves no tall blank under it
    lower = "#panel-how-lower"
    page.page.wait_for_selector(f"{lower} .lower-nodes li")
    blank = page.page.evaluate(
        """s => { const layout = document.querySelector(s + ' .lower-layout');
                  const list = layout.querySelector('.lower-nodes').getBoundingClientRect();
                  const below = [...layout.querySelectorAll('.lower-backend')]
                    .map((f) => f.getBoundingClientRect())
                    .filter((r) => r.top >= list.bottom && r.left < list.right
                                   && r.right > list.left)
                    .map((r) => r.top);
                  const end = layout.getBoundingClientRect().bottom;
                  return Math.min(end, ...below) - list.bottom; }""",
        lower,
    )
    assert blank <= EMPTY_PX, blank
    # the Poet's radio labels wrap beside their radio, never under it
    wraps = page.page.evaluate(
        """() => [...document.querySelectorAll('.poet-device label')].map((label) => {
             const radio = label.querySelector('input').getBoundingClientRect();
             const r = document.createRange();
             r.setStartAfter(label.querySelector('input'));
             r.setEndAfter(label.lastChild);
             return {radio: radio.right, lines: [...r.getClientRects()].map((q) => q.left)};
           })"""
    )
    assert all(left >= w["radio"] for w in wraps for left in w["lines"]), wraps
    assert page.console_errors == []
