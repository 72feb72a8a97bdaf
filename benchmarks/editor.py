"""The hero editor's latency: keystroke → its kernel shown, typing the 20 core benchmark
expressions character by character into the page. Targets: p95 edit → painted ≤ 30 ms, of
which the Python work (measured inside the worker) ≤ 3 ms.

    python benchmarks/editor.py [--expressions N] [--no-warm-up] [--against REV] [--at REV]
                                [--traced N]

Drives headless Chromium (/usr/bin/chromium) on the built site. Each character is typed and
the next one waits until the page has answered it (kernels, or the parse error of a prefix),
polling with a timer (POLL_MS): a wait that polled in animation frames would keep the page
rendering a frame every 16 ms while it waits, work that a person typing never causes and that
the main-thread figures below would count.
Per keystroke the page records (web/panels/editor.js, ``window.tang.editor.last``):

    dom    edit → the answer in the DOM (coalescing + worker round trip + rendering)
    paint  edit → the next animation frame after that (what the eye can see)
    wait   edit → the request sent (an isolated keystroke goes at once)
    call   the worker round trip of the request alone
    python the call's Python time in the worker (Pyodide's CPython 3.14): the handler
           ``playground.compile`` and the JSON encoding of its answer (demos.api)
    code   the kernel into the code view; rest: the status line and the graph panel

and the benchmark itself measures, the same way on every revision (FRAME_HOOK, installed in
the page):

    frame  edit (the keydown) → the end of the frame that renders the answer: the first
           animation frame after the answer's first write to the status line, its layout,
           paint and commit done (a message posted from its requestAnimationFrame callback
           runs after them). ``paint`` stops at the start of that frame, so layout moved from
           the frame into the answer's task shows there as latency; this figure does not.

The worker frees the graph nodes each request leaves behind after answering it (between
requests, web/worker.js): the time those collections took is printed after the table, with
the page's main-thread busy time per keystroke (Chrome's Performance metrics), which the
worker competes with for the machine's cores.

Next to them: the same handler and encoding of every same text in this process's CPython
(best of 3);
and the same texts sent again through the page's RPC once typing is over, with the page
otherwise idle (``idle``): on a machine with few cores, the page drawing each keystroke while
the worker computes slows the worker down, and this row shows by how much. The worker's
warm-up after boot (web/worker.js) is reported as it ran, typing having started at ready, and
the first compiles after boot (the editor's own at ready, the first keystroke's) are set
against the median of the later ones (target: within 2x).

After the timed typing, the first ``--traced N`` expressions (default 3) are typed again with
a Chromium trace running, which counts per keystroke what the page's main thread did: frames
rendered, commits to the compositor, style recalculations and layouts (and how many of them
were forced by a script reading layout, outside a frame), requestAnimationFrame callbacks,
DOM mutations, and its CPU time. Counts, unlike milliseconds, do not vary with the load on a
shared machine; the trace slows the page, so its pass is kept apart from the timed one.

``--against REV`` builds that git revision's site too (a temporary worktree) and types the
same texts into both pages in one run, interleaved expression by expression (the order
alternating), so load on a shared machine falls on both alike; it prints each figure for
both and their ratio. ``--at REV`` measures a revision instead of the working tree (for
``git bisect``). Revisions from before ``window.tang.editor`` (``window.tangEditor``) work.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "benchmarks"))  # after ROOT: benchmarks/demos.py is not demos/

from expressions import EXPRESSIONS  # noqa: E402
from harness import once, open_page, serve, worktree  # noqa: E402

import build  # noqa: E402

BASE = ["--no-sandbox", "--headless=new", "--disable-background-networking", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 900}
# the page's per-keystroke records (window.tangEditor before they moved under window.tang)
RECORDS = "((window.tang && window.tang.editor) || window.tangEditor)"
INPUT = ".expr-input .cm-content"
IDLE_CALLS = """async texts => { const ms = [];
    for (const expr of texts) {
      const timing = {};
      await window.tang.call("playground.compile", { expr }, { timing });
      ms.push(timing.python_ms);
    }
    return ms; }"""
MEMORY = 'window.tang.call("memory")'
MAIN_THREAD = {  # kind -> Chrome's metric: all tasks, then the parts it names
    "busy": "TaskDuration",
    "script": "ScriptDuration",
    "layout": "LayoutDuration",
    "style": "RecalcStyleDuration",
}
ANSWERED = f"""t => {{ const r = {RECORDS}; const l = r && r.last;
                     return !!l && l.expr === t && l.paint_ms !== undefined; }}"""
POLL_MS = 4  # how often a wait checks the page (a timer: no animation frames of its own)
# edit → the end of the frame that renders its answer (window.__tangFrameMs); true once set up
FRAME_HOOK = """() => {
  const status = document.querySelector('.expr-status');
  if (!status) return false;
  let key = 0, armed = false;
  const after = new MessageChannel();
  after.port1.onmessage = () => { window.__tangFrameMs = performance.now() - key; };
  document.addEventListener('keydown', () => {
    key = performance.now(); armed = true; window.__tangFrameMs = undefined; }, true);
  new MutationObserver(() => {
    if (!armed) return;
    armed = false;
    requestAnimationFrame(() => after.port2.postMessage(0));
  }).observe(status, { subtree: true, childList: true, characterData: true, attributes: true });
  return true; }"""
FRAMED = f"""t => ({ANSWERED})(t) && window.__tangFrameMs !== undefined"""
# the trace of the --traced pass: what the page's main thread rendered and ran
TRACE_CATEGORIES = [
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "benchmark",
    "toplevel",
]
RENDERER_MAIN = "CrRendererMain"
FRAME = "ProxyMain::BeginMainFrame"  # one frame rendered by the main thread
TASK = "ThreadControllerImpl::RunTask"
COUNTED = {  # trace event -> the row it counts in
    FRAME: "frames rendered",
    "Commit": "commits to the compositor",
    "UpdateLayoutTree": "style recalculations",
    "Layout": "layouts",
    "FireAnimationFrame": "animation-frame callbacks",
}
COUNT_MUTATIONS = """() => { window.__tangMutations = 0;
    new MutationObserver((records) => { window.__tangMutations += records.length; })
      .observe(document.body, {subtree: true, childList: true, attributes: true,
                               characterData: true}); }"""


def main_thread_seconds(cdp) -> dict[str, float]:
    """The page's main-thread busy time so far, by kind (Chrome's Performance metrics)."""
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {kind: metrics[name] for kind, name in MAIN_THREAD.items()}


def percentile(values: list[float], q: float) -> float:
    """The q-quantile by linear interpolation (statistics.quantiles, inclusive)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def cpython_ms(texts: list[str]) -> dict[str, float]:
    """Best of 3 of playground.compile and the JSON encoding of its answer on each text, in
    this process (ms)."""
    from demos.playground import compile_expression

    best: dict[str, float] = {}
    for _ in range(3):
        for text in texts:
            seconds, _ = once(lambda t=text: json.dumps(compile_expression(t), allow_nan=False))
            ms = seconds * 1e3
            best[text] = min(ms, best.get(text, ms))
    return best


def row(name: str, values: list[float]) -> str:
    return (
        f"  {name:<34}{statistics.median(values):8.2f}{percentile(values, 0.95):8.2f}"
        f"{max(values):9.2f}"
    )


class Typist:
    """One page of the editor, typed into character by character; what it recorded."""

    def __init__(self, pw, tmp: str, url: str) -> None:
        self.context, self.page = open_page(pw, tmp, url, BASE, viewport=VIEWPORT)
        self.page.wait_for_selector(".kernel-output[data-state=ok]", timeout=120_000)
        self.first = self.optional(f"{RECORDS}.first")  # the compile at boot
        self.boot = self.optional("window.tang.ready.then((r) => r.timings)")
        self.memory = [self.optional(MEMORY)]
        self.framed = bool(self.optional(FRAME_HOOK))
        self.cdp = self.context.new_cdp_session(self.page)
        self.cdp.send("Performance.enable")
        self.main_thread = [main_thread_seconds(self.cdp)]
        self.samples: list[dict] = []

    def optional(self, script: str, arg: object = None) -> object:
        """``script``'s value, or None on a revision that lacks what it reads."""
        from playwright.sync_api import Error

        try:
            return self.page.evaluate(script, arg)
        except Error:
            return None

    def type(self, text: str, record: bool = True) -> int:
        """Type ``text`` one character at a time, each after the last one's answer is painted;
        the keystrokes typed."""
        page = self.page
        page.click(INPUT)
        page.keyboard.press("Control+A")
        page.keyboard.press("Backspace")
        page.wait_for_function(ANSWERED, arg="", timeout=30_000, polling=POLL_MS)
        answered = FRAMED if self.framed else ANSWERED
        for k in range(1, len(text) + 1):
            page.keyboard.type(text[k - 1])
            page.wait_for_function(answered, arg=text[:k], timeout=30_000, polling=POLL_MS)
            if record:
                last, frame = page.evaluate(f"[{RECORDS}.last, window.__tangFrameMs]")
                self.samples.append({**last, "frame_ms": frame})
        return len(text)

    def traced(self, texts: list[str]) -> None:
        """Type ``texts`` again under a Chromium trace: ``self.counts``, per keystroke."""
        events: list[dict] = []
        done: list[bool] = []
        keep = {FRAME, TASK, *COUNTED}

        def collect(e: dict) -> None:  # only what is counted: a trace is large
            events.extend(
                x for x in e["value"] if x.get("name") in keep or x.get("name") == "thread_name"
            )

        self.cdp.on("Tracing.dataCollected", collect)
        self.cdp.on("Tracing.tracingComplete", lambda e: done.append(True))
        self.optional(COUNT_MUTATIONS)
        config = {"includedCategories": TRACE_CATEGORIES}
        self.cdp.send("Tracing.start", {"traceConfig": config, "transferMode": "ReportEvents"})
        keys = sum(self.type(text, record=False) for text in texts)
        mutations = self.optional("window.__tangMutations")
        self.cdp.send("Tracing.end")
        while not done:
            self.page.wait_for_timeout(50)
        self.counts = trace_counts(events, keys)
        if mutations is not None:
            self.counts["DOM mutations"] = mutations / keys

    def finish(self) -> None:
        """Read the idle calls and the warm-up (what typing cost on the main thread was read
        when it ended)."""
        texts = [s["expr"] for s in self.samples if s["ok"]]
        self.idle = self.optional(IDLE_CALLS, texts)
        self.warm = self.optional("window.tang.warmUp()")
        self.context.close()

    counts: dict[str, float] | None = None  # per keystroke, from the traced pass
    traced_keys = 0

    def busy_ms(self) -> dict[str, float]:
        """The page's main-thread time per keystroke while typing, by kind."""
        before, after = self.main_thread
        return {k: (after[k] - before[k]) * 1e3 / len(self.samples) for k in MAIN_THREAD}


def trace_counts(events: list[dict], keys: int) -> dict[str, float]:
    """Per keystroke, from a trace: frames, commits, style recalculations and layouts (and
    those forced outside a frame), rAF callbacks, and the main thread's task CPU time (ms)."""
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"
    }
    main = [e for e in events if threads.get((e["pid"], e["tid"])) == RENDERER_MAIN]
    spans = sorted(
        (e for e in main if e.get("ph") == "X"), key=lambda e: (e["ts"], -e.get("dur", 0))
    )
    forced = {"Layout": "forced layouts", "UpdateLayoutTree": "forced style recalculations"}
    counts = dict.fromkeys([*COUNTED.values(), *forced.values()], 0.0)
    cpu = 0.0
    open_spans: list[dict] = []  # the spans enclosing the current one
    for e in spans:
        while open_spans and open_spans[-1]["ts"] + open_spans[-1].get("dur", 0) <= e["ts"]:
            open_spans.pop()
        name = e["name"]
        if name == TASK and not any(o["name"] == TASK for o in open_spans):
            cpu += e.get("tdur", e.get("dur", 0)) / 1e3
        if name in COUNTED:
            counts[COUNTED[name]] += 1
            if name in forced and not any(o["name"] == FRAME for o in open_spans):
                counts[forced[name]] += 1  # needed at once (a script read layout), not in a frame
        open_spans.append(e)
    out = {k: v / keys for k, v in counts.items()}
    out["main-thread CPU (ms)"] = cpu / keys
    return out


def site_of(rev: str | None, stack: contextlib.ExitStack, tmp: str) -> Path:
    """The built site of the working tree (dist/), or of git revision ``rev``."""
    if rev is None:
        build.build(build.DIST, quiet=True)
        return build.DIST
    tree = stack.enter_context(worktree(rev))
    out = Path(tmp) / f"site-{rev.replace('/', '_')}"
    subprocess.run(
        [sys.executable, "build.py", "build", "--out", str(out)],
        cwd=tree,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return out


def compare(this: Typist, that: Typist, names: tuple[str, str]) -> None:
    """Each figure for both revisions, typed in the same run, and the ratio of their p95."""
    print(f"\nthe same keystrokes, interleaved: {names[0]} against {names[1]} (ms)")
    print(f"  {'':<34}{'p50':>8}{'p95':>8}{'p50':>10}{'p95':>8}   p95 ratio")
    print(f"  {'':<34}{names[0][:16]:>16}{names[1][:18]:>18}")
    kernel_fields = (
        ("edit → its frame rendered", "frame_ms"),
        ("edit → next frame painted", "paint_ms"),
        ("edit → kernels in the DOM", "latency_ms"),
        ("worker round trip", "call_ms"),
        ("Python in the worker (Pyodide)", "python_ms"),
        ("  of which the handler", "handler_ms"),
    )
    every_fields = (
        ("edit → its frame rendered", "frame_ms"),
        ("edit → next frame painted", "paint_ms"),
    )
    for title, kernels, fields in (
        ("keystrokes answered with a kernel:", True, kernel_fields),
        ("every keystroke (most answers are a prefix's parse error):", False, every_fields),
    ):
        print(title)
        for label, key in fields:
            a = [s[key] for s in this.samples if s["ok"] or not kernels]
            b = [s[key] for s in that.samples if s["ok"] or not kernels]
            if None in a or None in b:
                continue  # a revision without the status line the frame is timed by
            pa, pb = percentile(a, 0.95), percentile(b, 0.95)
            print(
                f"  {label:<34}{statistics.median(a):8.2f}{pa:8.2f}"
                f"{statistics.median(b):10.2f}{pb:8.2f}   {pa / pb:6.2f}x"
            )
    ba, bb = this.busy_ms(), that.busy_ms()
    for kind in MAIN_THREAD:
        print(
            f"  {'main thread ' + kind + ' per keystroke':<34}{ba[kind]:16.2f}"
            f"{bb[kind]:18.2f}   {ba[kind] / max(bb[kind], 1e-9):6.2f}x"
        )
    if this.counts and that.counts:
        print(f"per keystroke, counted in a trace of {this.traced_keys} keystrokes typed again:")
        for name in this.counts:
            a, b = this.counts[name], that.counts.get(name, 0.0)
            ratio = f"{a / b:6.2f}x" if b else "     -"
            print(f"  {name:<34}{a:16.2f}{b:18.2f}   {ratio}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--expressions", type=int, default=len(EXPRESSIONS))
    parser.add_argument(
        "--no-warm-up", action="store_true", help="open the page with ?warm-up=off (for scale)"
    )
    parser.add_argument("--against", metavar="REV", help="type into this revision's page too")
    parser.add_argument("--at", metavar="REV", help="measure this revision, not the work tree")
    parser.add_argument(
        "--traced",
        type=int,
        default=3,
        metavar="N",
        help="type the first N expressions again under a trace, for counts (0: none)",
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    texts = list(EXPRESSIONS.values())[: args.expressions]
    query = "?warm-up=off" if args.no_warm_up else ""
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        revs = [args.at] + ([args.against] if args.against else [])
        pages = []
        pw = stack.enter_context(sync_playwright())
        for k, rev in enumerate(revs):
            server, url = serve(site_of(rev, stack, tmp))
            stack.callback(server.shutdown)
            pages.append(Typist(pw, f"{tmp}/browser{k}", url + query))
        for i, text in enumerate(texts):
            for typist in pages if i % 2 == 0 else pages[::-1]:  # alternate who goes first
                typist.type(text)
        for typist in pages:
            typist.main_thread.append(main_thread_seconds(typist.cdp))  # before the trace
            typist.memory.append(typist.optional(MEMORY))
        for typist in pages:
            if args.traced:
                typist.traced(texts[: args.traced])
                typist.traced_keys = sum(len(t) for t in texts[: args.traced])
            typist.finish()
    if args.at is None:
        report(pages[0], len(texts))
    if args.against:
        compare(*pages, (args.at or "this tree", args.against))
    return 0


def report(typist: Typist, expressions: int) -> None:
    """The detailed figures of one page (the working tree's: older revisions recorded less)."""
    samples, first, boot, memory = typist.samples, typist.first, typist.boot, typist.memory
    idle, warm = typist.idle, typist.warm
    native = cpython_ms([s["expr"] for s in samples])
    kernels = [s for s in samples if s["ok"]]
    print(
        f"{expressions} expressions typed character by character: {len(samples)} keystrokes, "
        f"{len(kernels)} of them answered with a kernel, the rest with a parse error"
    )
    print(f"  {'ms':<34}{'p50':>8}{'p95':>8}{'max':>9}")
    for label, group in (("keystrokes → a kernel", kernels), ("every keystroke", samples)):
        print(label)
        print(row("edit → kernels in the DOM", [s["latency_ms"] for s in group]))
        print(row("edit → next frame painted", [s["paint_ms"] for s in group]))
        if typist.framed:
            print(row("edit → its frame rendered", [s["frame_ms"] for s in group]))
        print(row("edit → request sent", [s["wait_ms"] for s in group]))
        print(row("worker round trip", [s["call_ms"] for s in group]))
        print(row("Python in the worker (Pyodide)", [s["python_ms"] for s in group]))
        print(row("  of which the handler", [s["handler_ms"] for s in group]))
        if group is kernels:
            print(row("the same texts, page idle", idle))
        print(row("the same in this CPython", [native[s["expr"]] for s in group]))
        print(row("kernel into the code view", [s["code_ms"] for s in group]))
        print(row("status line and graph panel", [s["rest_ms"] for s in group]))
    fresh = [s["python_phases"] for s in kernels if "lower_ms" in s["python_phases"]]
    print(f"inside the worker, the {len(fresh)} keystrokes that compiled a new function:")
    for phase in ("parse_grad_ms", "lower_ms", "layout_ms"):
        print(row(f"  {phase[:-3].replace('_', ' + ')}", [p[phase] for p in fresh]))
    later = statistics.median(s["python_ms"] for s in kernels[1:])
    print(
        "first edits after boot against the median of the later ones (Python in the worker; "
        "target: within 2x):"
    )
    print(
        f"  the compile at boot ({first['expr'][:32]}…): {first['python_ms']:.2f} ms, "
        f"{first['python_ms'] / later:.2f}x; edit → DOM {first['latency_ms']:.1f} ms"
    )
    print(
        f"  the first keystroke's kernel ({kernels[0]['expr']!r}): "
        f"{kernels[0]['python_ms']:.2f} ms, {kernels[0]['python_ms'] / later:.2f}x; "
        f"median of the later {len(kernels) - 1}: {later:.2f} ms; the same text again with "
        f"the page idle: {idle[0]:.2f} ms ({kernels[0]['python_ms'] / idle[0]:.2f}x)"
    )
    print(
        "  prewarm before ready (web/rpc.js PREWARM: one editor compile and its imports): "
        f"{boot['warm_up_ms']} ms"
    )
    p95_paint = percentile([s["paint_ms"] for s in kernels], 0.95)
    p95_py = percentile([s["python_ms"] for s in kernels], 0.95)
    ratio = statistics.median(s["python_ms"] / native[s["expr"]] for s in kernels)
    print(f"target p95 edit → painted ≤ 30 ms: {p95_paint:.1f} ms")
    print(f"target p95 Python in the worker ≤ 3 ms: {p95_py:.2f} ms")
    if warm and warm.get("off"):
        print("worker warm-up after boot: off (?warm-up=off)")
    elif warm:
        print(
            f"worker warm-up after boot: {warm['steps']} compiles, {warm['busy_ms']:.0f} ms of "
            f"work over {warm['wall_ms']:.0f} ms (typing began at ready, alongside it)"
        )
    else:
        print("worker warm-up after boot: not finished (or failed: see the console)")
    print(f"ratio Pyodide / CPython for the same work (median): {ratio:.2f}x")
    busy = typist.busy_ms()
    print(
        f"the page's main thread per keystroke, while typing: {busy['busy']:.1f} ms busy "
        f"(script {busy['script']:.1f}, layout {busy['layout']:.1f}, style {busy['style']:.1f}, "
        f"the rest input, paint and compositing), on {os.cpu_count()} CPU cores shared with "
        "the worker"
    )
    if typist.counts:
        counted = ", ".join(f"{v:.2f} {k}" for k, v in typist.counts.items())
        print(f"  counted in a trace of {typist.traced_keys} keystrokes typed again: {counted}")
    runs = memory[1]["collections"] - memory[0]["collections"]
    spent = memory[1]["collect_ms"] - memory[0]["collect_ms"]
    print(
        f"graph nodes freed while typing: {memory[1]['freed'] - memory[0]['freed']} in {runs} "
        f"collections, {spent:.1f} ms in all ({spent / len(samples):.2f} ms per keystroke), "
        f"between requests; {memory[1]['nodes']} nodes left in the intern table"
    )


if __name__ == "__main__":
    sys.exit(main())
