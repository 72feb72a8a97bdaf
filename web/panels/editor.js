// The hero editor: type f(x, y, z) = …; the worker parses, differentiates and lowers it
// (demos/playground.py) and the kernel for the value and gradient shows in eight tabs.
// This file is the controller (./editor-view.js builds the DOM). Shares the expression and
// tab through ../state.js (and so the URL hash), and the compiled answer and hover through
// ./editor-bus.js (the graph panel draws from it).
import { codeViewer, expressionEditor } from "../editor.js";
import { h } from "../lib/dom.js";
import * as state from "../state.js";
import * as bus from "./editor-bus.js";
import { editorView } from "./editor-view.js";

// An isolated keystroke compiles at once; edits that follow within DEBOUNCE_MS of a compile
// (auto-repeat, fast typing, paste) are coalesced: the newest text wins, the stale request
// is cancelled.
const DEBOUNCE_MS = 10;

export default {
  id: "editor",
  title: "Write a function, get its gradient kernel for eight chips",
  async mount(root, { call, ready }) {
    // The backends as the worker lists them (demos.api `backends`, read from tang.lower):
    // name → {name, label, extension, language, precision}. Asked for now, answered at boot.
    const backends = new Map();
    const listed = call("backends");
    listed.catch(() => {}); // a failed boot is reported below
    const view = editorView(root);
    const kernel = { good: null }; // the last answer that compiled
    const code = codeViewer({
      parent: view.codeBox,
      label: "Generated kernel",
      onHoverLine(line) {
        const shown = kernel.good?.kernels[state.get().tab]; // not printed yet: nothing to link
        const serials = line && shown ? shown.lines[line] ?? [] : [];
        code.highlight(serials.length ? [line] : []);
        bus.hover.set({ serials, from: "code" });
      },
    });
    bus.hover.subscribe(({ serials, from }) => {
      const shown = kernel.good?.kernels[state.get().tab];
      if (from !== "graph" || !shown) return;
      const want = new Set(serials);
      const lines = Object.entries(shown.lines)
        .filter(([, ids]) => ids.some((id) => want.has(id)))
        .map(([line]) => Number(line));
      code.highlight(lines);
      code.reveal(lines); // the hovered node's lines, scrolled into the kernel box
    });
    // A keystroke's answer carries the kernel of the tab shown; the other tabs' are printed
    // when one opens, or in a pause of typing (printer.prefetch), from the worker's kept schedule.
    const printer = kernelPrinter({ call, kernel, backends, onPrinted: () => render() });
    const render = () => {
      const tab = state.get().tab;
      const shown = kernel.good?.kernels[tab];
      if (!kernel.good) return;
      view.markOutput({ backend: shown ? tab : "" }); // which tab's kernel the box holds
      if (shown) code.show(shown.source, backends.get(tab)?.language);
      else printer.print([tab]);
    };
    const input = expressionEditor({
      parent: view.inputBox,
      doc: state.get().expr,
      label: "Function to differentiate and lower",
      onChange: (text) => state.set({ expr: text }),
    });
    const loop = compileLoop({ call, view, input, kernel, render, printer });
    wireTabs(view);
    wireTools(view, code, kernel, backends);
    state.subscribe((s, changed) => {
      if (changed.has("expr")) {
        input.setText(s.expr); // a hash edited by hand; no-op for typing
        loop.schedule();
      }
      if (changed.has("tab")) {
        view.showTab(s.tab);
        render();
      }
      if (changed.has("link")) view.showLink(s.link);
    });
    view.showTab(state.get().tab);
    view.showLink(state.get().link);

    // ---- first compile once Python is up ----
    view.setStatus("wait", "Starting Python…");
    try {
      await ready;
      const catalogue = await listed;
      for (const b of catalogue) backends.set(b.name, b);
      view.setTabs(catalogue);
      state.setBackends(catalogue.map((b) => b.name));
      view.showTab(state.get().tab);
    } catch {
      view.showOutput("error", { message: "Python did not start (see the message above)." });
      view.setStatus("error", "Python did not start, so nothing can be compiled (see the message above).");
      bus.status.set({ state: "error", error: "Python did not start" });
      return;
    }
    view.setStatus("wait", "Compiling…");
    await loop.first();
  },
};

/** Tabs: real buttons, roving tabindex, arrow keys. */
function wireTabs(view) {
  view.tablist.addEventListener("click", (event) => {
    const name = event.target.closest?.("[data-backend]")?.dataset.backend;
    if (name) state.set({ tab: name });
  });
  view.tablist.addEventListener("keydown", (event) => {
    const names = Object.keys(view.buttons);
    const at = names.indexOf(state.get().tab);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: names.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    const next = names[(to + names.length) % names.length];
    state.set({ tab: next });
    view.buttons[next].focus();
  });
}

/** Copy, download, share. */
function wireTools(view, code, kernel, backends) {
  const copyText = async (text, what) => {
    try {
      await navigator.clipboard.writeText(text);
      view.note(`${what} copied`);
    } catch {
      view.note(`Copying is blocked here: select the ${what.toLowerCase()} and copy it by hand`);
    }
  };
  view.copyBtn.addEventListener("click", () => kernel.good && copyText(code.text(), "Kernel"));
  view.downloadBtn.addEventListener("click", () => {
    if (!kernel.good) return;
    const ext = backends.get(state.get().tab)?.extension ?? "txt";
    const url = URL.createObjectURL(new Blob([code.text()], { type: "text/plain" }));
    const a = h("a", { href: url, download: `kernel.${ext}` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    view.note(`Saved kernel.${ext}`);
  });
  view.shareBtn.addEventListener("click", () => {
    const { expr } = state.get();
    if (expr.length > state.MAX_EXPR) {
      view.note(`The text is ${expr.length.toLocaleString("en")} characters; a link carries at ` +
        `most ${state.MAX_EXPR.toLocaleString("en")}: download the kernel instead`);
      return;
    }
    const url = new URL(location.href);
    url.hash = state.formatHash();
    history.replaceState(null, "", url.hash);
    copyText(url.href, "Link");
  });
}

/** While a burst of typing lasts (until TYPING_MS after the last edit), the cards below the
 * editor that are off screen skip style, layout and paint (style.css, `html.typing`): a
 * keystroke then redraws one screen of the page, not all of it. They render again, as
 * before, once typing pauses. */
const TYPING_MS = 1000;
let typingTimer = 0;
function typing() {
  const root = document.documentElement;
  if (!root.classList.contains("typing")) root.classList.add("typing");
  clearTimeout(typingTimer);
  typingTimer = setTimeout(() => root.classList.remove("typing"), TYPING_MS);
}

/** The compile loop: debounced, the stale request cancelled; timings in window.tang.editor. */
function compileLoop({ call, view, input, kernel, render, printer }) {
  let timer = null;
  let inflight = null; // AbortController of the running request
  let editedAt = performance.now();
  let compiledAt = -Infinity; // when the last compile started
  const timings = ((window.tang ??= {}).editor = { last: null, first: null, count: 0 });
  timings.printed = () => Object.keys(kernel.good?.kernels ?? {}); // backends of the function shown

  function failed(expr, message) {
    view.showOutput(kernel.good ? "stale" : "error", { expr, message });
    view.setStatus("error", message);
    bus.status.set({ state: "error", error: message });
  }

  // An answer is rendered in the task that brings it, all of it at once (status line, caret,
  // kernel box, the graph when it can be patched: ./graph.js), and each part writes only what
  // differs from what it shows; nothing reads layout between the writes. The input's error
  // mark goes first, and only when it changes: CodeMirror then puts the caret back, which lays
  // out what the mark changed at once; the rest is laid out once, by the frame that paints it.
  function showError(expr, e) {
    input.setError({ from: e.position, to: e.end, message: e.message });
    view.showCaret(expr, e);
    view.setStatus("bad", e.message);
    view.markStatus({ column: e.column, expr }); // the text this error is about (tests wait on it)
    view.showOutput(kernel.good ? "stale" : "error", { expr, message: e.message, err: e });
    bus.status.set({ state: "stale", error: e });
  }

  function showKernel(expr, answer, ms) {
    input.setError(null);
    view.showCaret(expr, null);
    view.markStatus({ column: null });
    // the same function as the one shown: the kernels printed for it so far still stand
    const same = answer.timing.same_function && bus.sameFunction(kernel.good, answer);
    const kept = same ? kernel.good.kernels : {};
    kernel.good = { ...answer, expr, kernels: { ...kept, ...answer.kernels } };
    render();
    const rendered = performance.now();
    view.showOutput("ok");
    view.markOutput({ expr });
    const outs = answer.outputs.length;
    view.setStatus("good",
      `${outs} output${outs > 1 ? "s" : ""} (${answer.outputs.join(", ")}) over ` +
        `${answer.inputs.join(", ") || "no inputs"}` +
        (answer.timing.same_function ? " · the same function as before: its kernels reused" : ""),
      `Python ${ms.python.toFixed(2)} ms · round trip ${ms.trip.toFixed(1)} ms`);
    state.set({ vars: answer.inputs });
    bus.result.set(kernel.good);
    bus.status.set({ state: "ok", error: null });
    return rendered;
  }

  async function compile() {
    inflight?.abort();
    const controller = (inflight = new AbortController());
    const expr = state.get().expr;
    const sent = (compiledAt = performance.now());
    const started = editedAt;
    const timing = {}; // python_ms: the whole Python side of the call
    let answer;
    try {
      const params = { expr, backends: [state.get().tab] };
      answer = await call("playground.compile", params, { signal: controller.signal, timing });
    } catch (err) {
      if (controller.signal.aborted) return; // a newer edit took over
      failed(expr, `The worker failed: ${err?.message ?? err}`);
      return;
    }
    if (controller !== inflight) return; // a newer edit overtook this answer
    inflight = null;
    const received = performance.now();
    let rendered = received;
    if (answer.error) showError(expr, answer.error);
    else {
      rendered = showKernel(expr, answer, { python: timing.python_ms, trip: received - sent });
      printer.prefetch();
    }
    record(timings, { expr, answer, timing, started, sent, received, rendered });
  }

  return {
    schedule() {
      typing();
      editedAt = performance.now();
      printer.cancel(); // typing goes first
      clearTimeout(timer);
      if (!inflight && editedAt - compiledAt >= DEBOUNCE_MS) compile();
      else timer = setTimeout(compile, DEBOUNCE_MS);
    },
    first() {
      editedAt = performance.now();
      return compile();
    },
  };
}

/** Prints the tabs a compiled answer lacks: at once for the tab opened, and the rest one at a
 * time after a pause in typing (PREFETCH_MS), each a short request of its own, so switching
 * tabs seldom waits and a keystroke waits for one printer at most. An edit stops the rest. */
const PREFETCH_MS = 400;

function kernelPrinter({ call, kernel, backends, onPrinted }) {
  let timer = null;
  let round = 0; // which pause the one-at-a-time printing belongs to
  const missing = () => [...backends.keys()].filter((name) => !kernel.good?.kernels[name]);
  async function print(names) {
    const good = kernel.good;
    if (!good || !names.length) return false;
    let answer;
    try {
      answer = await call("playground.compile", { expr: good.expr, backends: names });
    } catch {
      return false; // the next compile reports a failing worker
    }
    if (kernel.good !== good || answer.error) return false; // an edit replaced the function
    if (answer.timing.same_function) Object.assign(good.kernels, answer.kernels);
    else {
      // the worker had compiled another function meanwhile: a whole new answer for this
      // text (new graph serials), which replaces the last one, graph and all
      kernel.good = { ...answer, expr: good.expr };
      bus.result.set(kernel.good);
    }
    onPrinted();
    return true;
  }
  const next = async (mine) => {
    const [name] = missing();
    if (mine === round && name && (await print([name])) && mine === round) {
      timer = setTimeout(() => next(mine), 0); // one turn of the page's loop between them
    }
  };
  return {
    print,
    prefetch() {
      clearTimeout(timer);
      const mine = ++round;
      timer = setTimeout(() => next(mine), PREFETCH_MS);
    },
    cancel() {
      clearTimeout(timer);
      round += 1;
    },
  };
}

/** What one compile cost, for benchmarks/editor.py: window.tang.editor.last (and .first). */
function record(timings, { expr, answer, timing, started, sent, received, rendered }) {
  const domDone = performance.now();
  timings.count += 1;
  timings.last = {
    expr,
    ok: !answer.error,
    latency_ms: domDone - started, // edit → kernels (or the error) in the DOM
    wait_ms: sent - started, // edit → request sent (coalescing)
    call_ms: received - sent,
    python_ms: timing.python_ms, // the handler and the encoding of its answer
    handler_ms: answer.timing.python_ms, // the handler alone
    python_phases: answer.timing, // parse_grad_ms, lower_ms, layout_ms (same_function)
    kernels: Object.keys(answer.kernels ?? {}), // the backends printed for this keystroke
    code_ms: rendered - received, // the kernel into the code view
    rest_ms: domDone - rendered, // status line, graph panel
  };
  timings.first ??= timings.last;
  const last = timings.last;
  requestAnimationFrame(() => {
    last.paint_ms = performance.now() - started;
  });
}
