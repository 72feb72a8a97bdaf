"""The hero editor in Chromium: typing updates all eight tabs, errors underline the right
column and keep the last good kernel (marked stale), a share URL restores the page, hover
links the graph and the kernel both ways, hostile hashes run nothing, and screenshots at
375 px and 1280 px are written to e2e/artifacts/ for review."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TangPage

from demos.examples import EXAMPLES

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CODE = ".code-box .cm-content"
INPUT = ".expr-input .cm-content"
TABS = ["WGSL", "C", "CUDA", "Metal", "OpenCL", "GLSL", "JavaScript", "Python"]
# a line each backend's kernel must contain (its own spelling of the frame)
SIGNATURES = {
    "WGSL": "@compute",
    "C": "void f(const double",
    "CUDA": "__global__",
    "Metal": "kernel void",
    "OpenCL": "__kernel",
    "GLSL": "#version",
    "JavaScript": "function f(",
    "Python": "def f(",
}


def open_editor(launch, url: str, viewport=None) -> TangPage:
    context = launch(viewport=viewport)
    page = context.pages[0] if context.pages else context.new_page()
    tp = TangPage(page, url)
    tp.warnings = []
    page.on("console", lambda m: m.type == "warning" and tp.warnings.append(m.text))
    tp.open()
    wait_compiled(tp)
    return tp


def wait_compiled(tp: TangPage, expr: str | None = None, state: str = "ok") -> None:
    """Wait until the kernel panel shows `state` (for `expr` when given)."""
    try:
        tp.page.wait_for_function(
            """([expr, state]) => {
                 const out = document.querySelector('.kernel-output');
                 if (!out || out.dataset.state !== state) return false;
                 const status = document.querySelector('.expr-status').dataset;
                 const bad = status.kind === 'bad' && status.expr === expr;
                 return expr === null || (state === 'ok' ? out.dataset.expr === expr : bad);
               }""",
            arg=[expr, state],
            timeout=30_000,
        )
    except Exception as err:  # say what the page showed instead, for a failure that is rare
        seen = tp.page.evaluate(
            """() => ({
                 output: {...document.querySelector('.kernel-output')?.dataset},
                 status: document.querySelector('.expr-status')?.textContent,
                 input: document.querySelector('.expr-input .cm-content')?.textContent,
                 last: window.tang?.editor?.last?.expr, compiles: window.tang?.editor?.count,
                 waiting: window.tang.waiting(),
               })"""
        )
        raise AssertionError(
            f"waited 30 s for {state!r} of {expr!r}; the page shows {seen}; "
            f"console errors {tp.console_errors}"
        ) from err


def type_expression(tp: TangPage, text: str) -> None:
    tp.page.click(INPUT)
    tp.page.keyboard.press("Control+A")
    tp.page.keyboard.press("Backspace")
    tp.page.keyboard.type(text)


def code_text(tp: TangPage) -> str:
    """The kernel box's text, once it holds the selected tab's kernel (a keystroke's answer
    carries the tab shown; another tab's kernel is printed when it opens)."""
    tp.page.wait_for_function(
        """() => { const tab = document.querySelector('[role="tab"][aria-selected="true"]');
                   const out = document.querySelector('.kernel-output');
                   return !!tab && !!out && out.dataset.backend === tab.dataset.backend; }""",
        timeout=30_000,
    )
    return tp.page.evaluate(
        "[...document.querySelectorAll('.code-box .cm-line')].map(l => l.textContent).join('\\n')"
    )


def test_typing_updates_all_eight_tabs(launch, site):
    tp = open_editor(launch, site.url)
    assert tp.console_errors == [] and tp.warnings == [], (tp.console_errors, tp.warnings)
    text = "f(x, y) = x * cos(y) + tanh(x)"
    type_expression(tp, text)
    wait_compiled(tp, text)
    status = tp.page.inner_text(".expr-status")
    assert "df/dx" in status and "df/dy" in status
    seen = set()
    for tab in TABS:
        tp.page.get_by_role("tab", name=tab, exact=True).click()
        assert tp.page.get_by_role("tab", name=tab, exact=True).get_attribute("aria-selected") == (
            "true"
        )
        code = code_text(tp)
        assert SIGNATURES[tab] in code, tab
        assert "df/dy" in code and "z" not in code.split("output j")[0].split("input k")[-1], tab
        seen.add(code)
    assert len(seen) == 8
    # keyboard: arrows move between the tab buttons, and the kernel follows
    tp.page.get_by_role("tab", name="Python", exact=True).focus()
    tp.page.keyboard.press("ArrowRight")  # wraps to the first
    assert tp.page.evaluate("document.activeElement.textContent") == "WGSL"
    assert "@compute" in code_text(tp)
    tp.page.keyboard.press("End")
    assert tp.page.evaluate("document.activeElement.textContent") == "Python"
    assert "def f(" in code_text(tp)
    assert tp.console_errors == [], tp.console_errors


def test_a_keystroke_prints_the_tab_shown_and_a_pause_prints_the_rest(launch, site):
    """Per keystroke the worker prints one backend, the tab on screen; after a pause in
    typing the other seven follow, so a tab opened then shows its kernel in the click."""
    tp = open_editor(launch, site.url)
    text = "f(x, y) = exp(x) / (1 + y*y)"
    type_expression(tp, text)
    wait_compiled(tp, text)
    assert tp.page.evaluate("window.tang.editor.last.kernels") == ["wgsl"]
    # the pause (PREFETCH_MS in web/panels/editor.js): the other seven, one at a time
    tp.page.wait_for_function("window.tang.editor.printed().length === 8", timeout=30_000)
    shown = tp.page.evaluate(
        """() => [...document.querySelectorAll('[role="tab"]')].map((tab) => {
                   tab.click();  // the kernel must be there within the click's own task
                   return document.querySelector('.kernel-output').dataset.backend; })"""
    )
    assert shown == ["wgsl", "c", "cuda", "metal", "opencl", "glsl", "javascript", "python"]
    assert "def f(" in code_text(tp) and tp.console_errors == []


def test_text_that_reads_as_the_same_function_redraws_nothing(launch, site):
    """A space or a redundant parenthesis leaves the function as it was: the graph is not
    drawn again and the other tabs' kernels printed for it stay (only what changed renders)."""
    tp = open_editor(launch, site.url)
    page = tp.page
    type_expression(tp, "sin(x) * y")
    wait_compiled(tp, "sin(x) * y")
    page.wait_for_selector("#panel-graph .panel-body[data-expr='sin(x) * y'][data-state=ok]")
    page.wait_for_function("window.tang.editor.printed().length === 8", timeout=30_000)  # the pause
    page.evaluate("document.querySelector('#panel-graph svg').dataset.mark = 'first'")
    page.keyboard.press("End")
    page.keyboard.type(" ")
    wait_compiled(tp, "sin(x) * y ")
    page.wait_for_selector("#panel-graph .panel-body[data-expr='sin(x) * y ']")
    assert page.evaluate("window.tang.editor.last.python_phases.same_function") is True
    assert page.get_attribute("#panel-graph svg", "data-mark") == "first"
    backend = page.evaluate(
        """() => { document.querySelector('[role="tab"][data-backend="cuda"]').click();
                   return document.querySelector('.kernel-output').dataset.backend; }"""
    )
    assert backend == "cuda"  # printed before the space, kept through it
    page.keyboard.type("+ 1")
    wait_compiled(tp, "sin(x) * y + 1")
    page.wait_for_selector("#panel-graph .panel-body[data-expr='sin(x) * y + 1'][data-state=ok]")
    assert page.get_attribute("#panel-graph svg", "data-mark") is None  # a new function: drawn
    assert tp.console_errors == [], tp.console_errors


def test_bad_expression_underlines_the_column_and_keeps_the_last_kernel(launch, site):
    tp = open_editor(launch, site.url)
    type_expression(tp, "x * sin(y)")
    wait_compiled(tp, "x * sin(y)")
    good = code_text(tp)
    # append, so that no prefix typed on the way parses to another kernel (an isolated
    # keystroke compiles at once, so "x" alone would be a good kernel when retyping)
    tp.page.keyboard.press("End")
    tp.page.keyboard.type(" + * 2")
    wait_compiled(tp, "x * sin(y) + * 2", state="stale")
    status = tp.page.locator(".expr-status")
    assert status.get_attribute("data-column") == "14"
    assert "'*'" in status.inner_text()
    underlined = tp.page.eval_on_selector_all(
        ".expr-input .cm-lintRange-error", "els => els.map(e => e.textContent)"
    )
    assert underlined == ["*"]
    caret = tp.page.inner_text(".expr-caret").split("\n")
    assert caret[1].index("^") == 13 and caret[0][13] == "*"
    assert tp.page.is_visible(".stale-note")
    assert code_text(tp) == good  # the last good kernel stays
    # fixing the text clears the error and the stale mark
    for _ in " + * 2":
        tp.page.keyboard.press("Backspace")
    wait_compiled(tp, "x * sin(y)")
    assert not tp.page.is_visible(".stale-note")
    # the same function as the last answer: the worker reuses its kernels, and says so
    assert "kernels reused" in tp.page.inner_text(".expr-status")
    assert code_text(tp) == good
    assert tp.page.locator(".expr-input .cm-lintRange-error").count() == 0
    assert tp.console_errors == [], tp.console_errors


def test_share_url_restores_the_state_in_a_fresh_page(launch, site):
    tp = open_editor(launch, site.url)
    text = "f(a, b) = a^2 / (1 + b^2)"
    type_expression(tp, text)
    wait_compiled(tp, text)
    tp.page.get_by_role("tab", name="OpenCL", exact=True).click()
    tp.page.wait_for_function("location.hash.includes('tab=opencl')")
    url = tp.page.evaluate("location.href")
    assert "#expr=" in url
    fresh = open_editor(launch, url)  # a new browser profile
    assert fresh.page.inner_text(INPUT) == text
    selected = fresh.page.locator('[role="tab"][aria-selected="true"]')
    assert selected.inner_text() == "OpenCL"
    code = code_text(fresh)
    assert "__kernel" in code and "df/db" in code
    assert fresh.page.locator(".kernel-output").get_attribute("data-expr") == text


def test_hover_links_graph_and_kernel_both_ways(launch, site):
    tp = open_editor(launch, site.url)
    type_expression(tp, "sin(x) * y")
    wait_compiled(tp, "sin(x) * y")
    tp.page.get_by_role("tab", name="C", exact=True).click()
    page = tp.page
    page.wait_for_selector("#panel-graph .panel-body[data-expr='sin(x) * y'][data-state=ok]")
    # graph → code: hovering the sin node marks the line that computes sin(x)
    page.hover(".graph-node.op-sin")
    page.wait_for_selector(".code-box .cm-linked")
    marked = page.eval_on_selector_all(".code-box .cm-linked", "ls => ls.map(l => l.textContent)")
    assert marked and "sin(x)" in marked[0], marked
    # code → graph: hovering that line marks the sin node (and nothing unrelated)
    page.mouse.move(0, 0)
    page.wait_for_function("!document.querySelector('.graph-node.linked')")
    line = page.locator(".code-box .cm-line", has_text="sin(x)").first
    line.hover(position={"x": 40, "y": 5})
    page.wait_for_selector(".graph-node.linked")
    linked = page.eval_on_selector_all(".graph-node.linked", "gs => gs.map(g => g.classList[1])")
    assert "op-sin" in linked, linked
    # keyboard: focusing a node links it too
    page.mouse.move(0, 0)
    page.focus(".graph-node.op-var")
    page.wait_for_selector(".code-box .cm-linked")
    assert "src[" in page.inner_text(".code-box .cm-linked")


def test_a_declared_function_is_named_by_its_own_name_everywhere(launch, site):
    """``g(a, b) = a**b`` computes g, dg/da, dg/db: in the status line, the kernel, the
    graph's output boxes and Run's legends; Run reads the definition once, not "f = g(…) = …"."""
    tp = open_editor(launch, site.url)
    text = "g(a, b) = a**b"
    type_expression(tp, text)
    wait_compiled(tp, text)
    page = tp.page
    status = page.inner_text(".expr-status")
    assert "(g, dg/da, dg/db)" in status and "df/" not in status, status
    page.get_by_role("tab", name="C", exact=True).click()
    code = code_text(tp)
    assert "void g(const double" in code and "(0: g, 1: dg/da, 2: dg/db)" in code, code
    page.wait_for_selector(f"#panel-graph .panel-body[data-expr='{text}'][data-state=ok]")
    drawn = page.eval_on_selector_all(
        "#panel-graph .graph-output-label", "ls => ls.map(l => l.textContent)"
    )
    assert sorted(", ".join(drawn).split(", ")) == ["dg/da", "dg/db", "g"], drawn
    page.wait_for_function(
        "t => document.querySelector('#panel-run .run-what').textContent === t",
        arg=text,
        timeout=60_000,
    )
    # the legends follow the plot: they name the function once its first points arrive
    page.wait_for_function(
        "() => document.querySelector('#panel-run .legend.f').textContent !== 'f'",
        timeout=60_000,
    )
    assert page.inner_text("#panel-run .legend.f") == "g"
    assert page.inner_text("#panel-run .legend.d") == "∂g/∂a"
    type_expression(tp, "x*sin(y)")  # undeclared: Run names it f, once
    page.wait_for_function(
        "() => document.querySelector('#panel-run .run-what').textContent === 'f(x, y) = x*sin(y)'",
        timeout=60_000,
    )
    assert page.inner_text("#panel-run .legend.d") == "∂f/∂x"
    assert tp.console_errors == [], tp.console_errors


def test_a_hovered_node_scrolls_its_kernel_lines_into_the_box_and_both_fit_at_900px(launch, site):
    """At 1280 × 900 the kernel box and the graph fit on one screen together; hovering a
    graph node scrolls the kernel lines that compute it into view inside the kernel box (for
    ∂f/∂y they sat about 100 px below its edge), and the page itself does not scroll."""
    tp = open_editor(launch, site.url, viewport={"width": 1280, "height": 900})
    page = tp.page
    page.wait_for_selector("#panel-graph .panel-body[data-state=ok]")
    page.locator(".code-box").evaluate("el => el.scrollIntoView({block: 'start'})")
    code = page.locator(".code-box").bounding_box()
    graph = page.locator(".graph-box").bounding_box()
    assert graph["y"] + graph["height"] - code["y"] <= 900, (code, graph)
    assert code["height"] >= 200 and graph["height"] >= 400, (code, graph)
    outputs = page.locator(".graph-node.graph-output")
    assert outputs.count() == 4  # f and its three partials
    scrolled = page.evaluate("scrollY")
    for i in range(outputs.count()):
        page.mouse.move(0, 0)
        page.wait_for_function("!document.querySelector('.code-box .cm-linked')")
        outputs.nth(i).hover()
        page.wait_for_selector(".code-box .cm-linked")
        lines = page.evaluate(
            """() => {
                 const box = document.querySelector('.code-box .cm-scroller')
                   .getBoundingClientRect();
                 return [...document.querySelectorAll('.code-box .cm-linked')].map((l) => {
                   const r = l.getBoundingClientRect();
                   return {text: l.textContent, inside: r.top >= box.top && r.bottom <= box.bottom};
                 });
               }"""
        )
        label = outputs.nth(i).get_attribute("aria-label")
        assert lines and all(line["inside"] for line in lines), (label, lines)
        assert page.evaluate("scrollY") == scrolled, label
    assert tp.console_errors == [], tp.console_errors


# Records the DOM mutations of the page from now on, each as the closest classed element's
# class and whether it lies in the kernel box or the graph's drawing (window.__writes).
WATCH_WRITES = """() => {
  window.__writes = [];
  const where = (node) => {
    const el = node.nodeType === 1 ? node : node.parentElement;
    return { code: !!el?.closest('.code-box'), drawing: !!el?.closest('.graph-svg'),
             what: String(el?.closest('[class]')?.getAttribute('class') ?? '') };
  };
  new MutationObserver((records) => {
    for (const r of records) window.__writes.push({ ...where(r.target), type: r.type });
  }).observe(document.body, { subtree: true, childList: true, attributes: true,
                               characterData: true });
}"""
GRAPH_BODY = "#panel-graph .panel-body"


def wait_graph(tp: TangPage, expr: str) -> None:
    tp.page.wait_for_function(
        "([sel, expr]) => document.querySelector(sel)?.dataset.expr === expr",
        arg=[GRAPH_BODY, expr],
        timeout=30_000,
    )


def forced_layouts(tp: TangPage, keystroke: str, expr: str) -> int:
    """Type ``keystroke`` under a Chromium trace and count the layouts that the editor's and
    the graph's code forced outside a frame (a script that reads layout after writing to the
    page: the browser lays it out at once, and again in the frame that paints it)."""
    cdp = tp.page.context.new_cdp_session(tp.page)
    events, done = [], []
    cdp.on("Tracing.dataCollected", lambda e: events.extend(e["value"]))
    cdp.on("Tracing.tracingComplete", lambda e: done.append(True))
    categories = [
        "devtools.timeline",
        "disabled-by-default-devtools.timeline",
        "disabled-by-default-devtools.timeline.stack",
        "benchmark",
    ]
    cdp.send("Tracing.start", {"traceConfig": {"includedCategories": categories}})
    tp.page.keyboard.type(keystroke)
    wait_compiled(tp, expr)
    wait_graph(tp, expr)
    tp.page.wait_for_timeout(200)  # a later task (a timer) that drew the graph would be in
    cdp.send("Tracing.end")
    while not done:
        tp.page.wait_for_timeout(50)
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"
    }
    spans = sorted(
        (
            e
            for e in events
            if e.get("ph") == "X" and threads.get((e["pid"], e["tid"])) == "CrRendererMain"
        ),
        key=lambda e: (e["ts"], -e.get("dur", 0)),
    )
    ours = ("/panels/editor", "/panels/graph")  # the editor's and the graph's modules

    def by_us(layout: dict) -> bool:
        stack = layout.get("args", {}).get("beginData", {}).get("stackTrace") or []
        return any(any(m in frame.get("url", "") for m in ours) for frame in stack)

    forced, enclosing = 0, []
    for e in spans:
        while enclosing and enclosing[-1]["ts"] + enclosing[-1].get("dur", 0) <= e["ts"]:
            enclosing.pop()
        in_frame = any(o["name"] == "ProxyMain::BeginMainFrame" for o in enclosing)
        forced += e["name"] == "Layout" and not in_frame and by_us(e)
        enclosing.append(e)
    return forced


def test_a_keystroke_renders_once_and_only_what_changed(launch, site):
    """A keystroke's answer is rendered in one go and only where it differs from what is shown
    (issue 28): rendering it lays the page out at most once outside the frames that paint it
    (no layout read between writes: a new graph is fitted to the box's size as last observed);
    retyping a constant patches the graph's boxes in place (the same <svg> and boxes, labels
    rewritten as text); a space (the same function) writes nothing in the kernel box or the
    drawing; and nothing animates while the page is idle (no blinking or transition keeps
    frames coming)."""
    tp = open_editor(launch, site.url)
    page = tp.page
    type_expression(tp, "x * y + ")
    wait_compiled(tp, "x * y + ", state="stale")
    # a new function, whose graph is drawn anew (another extent): the input's cleared error
    # mark (CodeMirror puts the caret back: one layout), then the status line, the kernel and
    # the graph, without reading layout between their writes
    assert forced_layouts(tp, "2", "x * y + 2") <= 1
    page.wait_for_selector(f"{GRAPH_BODY}[data-expr='x * y + 2'][data-state=ok]")

    page.evaluate(WATCH_WRITES)
    page.evaluate(
        """() => { window.__svg = document.querySelector('.graph-svg');
                   window.__boxes = [...document.querySelectorAll('.graph-node')]; }"""
    )
    page.keyboard.type("5")
    wait_compiled(tp, "x * y + 25")
    wait_graph(tp, "x * y + 25")
    seen = page.evaluate(
        """() => { const boxes = [...document.querySelectorAll('.graph-node')];
                   return { svg: document.querySelector('.graph-svg') === window.__svg,
                            kept: boxes.length === window.__boxes.length &&
                                  boxes.every((g) => window.__boxes.includes(g)),
                            labels: boxes.map((g) => g.querySelector('text').textContent) }; }"""
    )
    assert seen["svg"] and seen["kept"], seen
    assert "25" in seen["labels"] and "2" not in seen["labels"], seen
    replaced = page.evaluate(
        "window.__writes.filter((w) => w.drawing && w.type === 'childList').length"
    )
    assert replaced == 0  # labels rewritten in place: no element or text node replaced

    page.evaluate("window.__writes.length = 0")
    page.keyboard.type(" ")  # the same function
    wait_compiled(tp, "x * y + 25 ")
    wait_graph(tp, "x * y + 25 ")
    writes = page.evaluate("window.__writes")
    assert not [w for w in writes if w["code"] or w["drawing"]], writes

    page.wait_for_timeout(500)  # idle: the prefetch of the other tabs may run meanwhile
    running = page.evaluate(
        "document.getAnimations().filter((a) => a.playState === 'running').length"
    )
    assert running == 0
    assert tp.console_errors == [], tp.console_errors


def test_while_typing_only_the_cards_on_screen_render(launch, site):
    """A burst of typing marks the page (``html.typing``, web/panels/editor.js): the cards
    below the editor then skip style, layout and paint while off screen, so a keystroke
    redraws one screen, not the whole 12,000 px page (issue 28); the editor, its graph and
    Run always render. A pause ends the burst and every card renders as before: its text
    reads back in full."""
    tp = open_editor(launch, site.url)
    page = tp.page
    visibility = """() => Object.fromEntries([...document.querySelectorAll('.panels .card')]
        .map((c) => [c.id, getComputedStyle(c).contentVisibility]))"""
    assert set(page.evaluate(visibility).values()) == {"visible"}  # idle: all of it renders
    heights = """() => Object.fromEntries([...document.querySelectorAll('.panels .card')]
        .filter((c) => !['panel-editor', 'panel-graph', 'panel-run'].includes(c.id))
        .map((c) => [c.id, c.getBoundingClientRect().height]))"""
    rendered = page.evaluate(heights)
    type_expression(tp, "x * y + 2")
    assert page.evaluate("document.documentElement.classList.contains('typing')")
    seen = page.evaluate(visibility)
    kept = [seen.pop(name) for name in ("panel-editor", "panel-graph", "panel-run")]
    assert kept == ["visible"] * 3
    assert set(seen.values()) == {"auto"}, seen  # skipped while off screen
    assert (
        page.evaluate(heights) == rendered
    )  # at the size last rendered: the page keeps its height
    wait_compiled(tp, "x * y + 2")
    page.wait_for_function(
        "() => !document.documentElement.classList.contains('typing')", timeout=10_000
    )
    assert set(page.evaluate(visibility).values()) == {"visible"}
    # the cards read in full again, far below the editor included
    shown = page.locator("#panel-build-examples .command-text").all_inner_texts()
    assert shown == [e.command for e in EXAMPLES]
    assert tp.console_errors == [], tp.console_errors


HOSTILE = [
    "#expr=<img src=x onerror=alert(1)>",
    "#expr=%3Cimg%20src%3Dx%20onerror%3D%22window.__pwned%3D1%22%3E&tab=c",
    "#expr=<script>window.__pwned=1</script>",
    "#expr=__import__('os').system('echo pwned')",
    "#expr=javascript:alert(1)&tab=<svg/onload=alert(1)>",
    "#expr=%E0%A4%A&tab=python",  # a malformed escape
]


def test_hostile_hash_shows_a_parse_error_and_runs_nothing(launch, site):
    context = launch()
    page = context.pages[0] if context.pages else context.new_page()
    dialogs, requests = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    tp = TangPage(page, site.url + HOSTILE[0]).open()  # on load …
    for k, hash_ in enumerate(HOSTILE):
        if k:  # … and as a hash edited by hand (hashchange)
            before = page.inner_text(INPUT)
            page.evaluate("h => { location.hash = h; }", hash_)
            page.wait_for_function(
                "t => document.querySelector('.expr-input .cm-content').innerText !== t",
                arg=before,
            )
        wait_compiled(tp, state="error")  # nothing ever compiled: no last good kernel
        status = page.locator(".expr-status")
        page.wait_for_function("document.querySelector('.expr-status').dataset.kind === 'bad'")
        assert int(status.get_attribute("data-column")) >= 1, hash_
        typed = page.inner_text(INPUT)
        assert typed and any(c in typed for c in "<:%'"), (hash_, typed)
    page.wait_for_timeout(300)  # an injected onerror would have fired by now
    assert dialogs == []
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#panels img, #panels script, #panels svg[onload]").count() == 0
    assert not [u for u in requests if u.split("?")[0].endswith("/x")]
    assert page.locator('[role="tab"][aria-selected="true"]').inner_text() == "Python"
    assert tp.console_errors == [], tp.console_errors


@pytest.mark.parametrize("width", [375, 1280])
def test_screenshots_and_no_sideways_scroll(launch, site, width):
    tp = open_editor(launch, site.url, viewport={"width": width, "height": 900})
    overflow = tp.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px at {width} px"
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / ".gitignore").write_text("*\n")  # review material, never committed
    path = ARTIFACTS / f"editor-{width}.png"
    tp.page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    assert tp.console_errors == [] and tp.warnings == [], (tp.console_errors, tp.warnings)
