// The hero editor: type f(x, y, z) = …; the worker parses, differentiates and lowers it
// (demos/playground.py) and the kernel for the value and gradient shows in eight tabs.
// Shares the expression and tab through ../state.js (and so the URL hash), and the compiled
// answer and hover through ./editor-bus.js (the graph panel draws from it).
import { codeViewer, expressionEditor } from "../editor.js";
import { h } from "../lib/dom.js";
import * as state from "../state.js";
import * as bus from "./editor-bus.js";

const TABS = {
  wgsl: ["WGSL", "wgsl"],
  c: ["C", "c"],
  cuda: ["CUDA", "cu"],
  metal: ["Metal", "metal"],
  opencl: ["OpenCL", "cl"],
  glsl: ["GLSL", "comp"],
  javascript: ["JavaScript", "js"],
  python: ["Python", "py"],
};
// An isolated keystroke compiles at once; edits that follow within DEBOUNCE_MS of a compile
// (auto-repeat, fast typing, paste) are coalesced: the newest text wins, the stale request
// is cancelled.
const DEBOUNCE_MS = 10;

export default {
  id: "editor",
  title: "Write a function, get its gradient kernel for eight chips",
  async mount(root, { call, ready }) {
    const lede = h(
      "p",
      {},
      "Type a function of x, y and z (or declare your own: f(a, b) = …). tang, running in this " +
        "page's Python, parses it, differentiates it in one reverse sweep, simplifies and " +
        "prints one kernel that computes the value and every partial derivative.",
    );
    const inputBox = h("div", { className: "expr-input" });
    const status = h("p", { className: "expr-status", role: "status" });
    status.setAttribute("aria-live", "polite");
    const caret = h("pre", { className: "expr-caret", hidden: true });
    const tablist = h("div", { className: "tabs", role: "tablist" });
    tablist.setAttribute("aria-label", "Backend");
    const copyBtn = h("button", { type: "button", className: "tool", textContent: "Copy" });
    const downloadBtn = h("button", { type: "button", className: "tool", textContent: "Download" });
    const shareBtn = h("button", { type: "button", className: "tool", textContent: "Copy link" });
    const toolNote = h("span", { className: "tool-note", role: "status" });
    const codeBox = h("div", { className: "code-box", role: "tabpanel", id: "editor-code" });
    const staleNote = h("p", {
      className: "stale-note",
      hidden: true,
      textContent: "Stale: the text above does not parse; this is the last kernel that did.",
    });
    const output = h(
      "div",
      { className: "kernel-output" },
      h("div", { className: "tabbar" }, tablist, h("div", { className: "tools" }, copyBtn, downloadBtn, shareBtn, toolNote)),
      staleNote,
      codeBox,
    );
    output.dataset.state = "loading";
    root.append(lede, inputBox, caret, status, output);

    // ---- tabs: real buttons, roving tabindex, arrow keys ----
    const buttons = {};
    for (const [name, [label]] of Object.entries(TABS)) {
      const b = h("button", { type: "button", role: "tab", className: "tab", textContent: label, id: `tab-${name}` });
      b.dataset.backend = name;
      b.setAttribute("aria-controls", "editor-code");
      b.addEventListener("click", () => state.set({ tab: name }));
      buttons[name] = b;
      tablist.append(b);
    }
    tablist.addEventListener("keydown", (event) => {
      const names = Object.keys(TABS);
      const at = names.indexOf(state.get().tab);
      const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: names.length - 1 }[event.key];
      if (to === undefined) return;
      event.preventDefault();
      const next = names[(to + names.length) % names.length];
      state.set({ tab: next });
      buttons[next].focus();
    });
    const showTab = (tab) => {
      for (const [name, b] of Object.entries(buttons)) {
        const on = name === tab;
        b.setAttribute("aria-selected", String(on));
        b.tabIndex = on ? 0 : -1;
      }
      codeBox.setAttribute("aria-labelledby", `tab-${tab}`);
    };

    // ---- code view and the hover link ----
    let good = null; // the last answer that compiled
    const code = codeViewer({
      parent: codeBox,
      label: "Generated kernel",
      onHoverLine(line) {
        const serials = line && good ? good.kernels[state.get().tab].lines[line] ?? [] : [];
        code.highlight(serials.length ? [line] : []);
        bus.hover.set({ serials, from: "code" });
      },
    });
    bus.hover.subscribe(({ serials, from }) => {
      if (from !== "graph" || !good) return;
      const want = new Set(serials);
      const lines = Object.entries(good.kernels[state.get().tab].lines)
        .filter(([, ids]) => ids.some((id) => want.has(id)))
        .map(([line]) => Number(line));
      code.highlight(lines);
    });
    const render = () => {
      if (!good) return;
      const tab = state.get().tab;
      code.show(good.kernels[tab].source, tab);
    };

    // ---- the compile loop: debounced, the stale request cancelled ----
    let timer = null;
    let inflight = null; // AbortController of the running request
    let editedAt = performance.now();
    let compiledAt = -Infinity; // when the last compile started
    const timings = (window.tangEditor = { last: null, count: 0 });

    const setStatus = (kind, text) => {
      status.dataset.kind = kind;
      status.textContent = text;
    };
    const showCaret = (text, err) => {
      if (!err) {
        caret.hidden = true;
        caret.textContent = "";
        return;
      }
      caret.hidden = false;
      caret.textContent = `${text}\n${" ".repeat(Math.min(err.position, text.length))}^`;
    };

    async function compile() {
      inflight?.abort();
      const controller = (inflight = new AbortController());
      const expr = state.get().expr;
      const sent = (compiledAt = performance.now());
      const started = editedAt;
      let answer;
      const timing = {}; // python_ms: the whole Python side of the call
      try {
        answer = await call("playground.compile", { expr }, { signal: controller.signal, timing });
      } catch (err) {
        if (controller.signal.aborted) return; // a newer edit took over
        output.dataset.state = good ? "stale" : "error";
        staleNote.hidden = !good;
        setStatus("error", `The worker failed: ${err?.message ?? err}`);
        bus.status.set({ state: "error", error: String(err?.message ?? err) });
        return;
      }
      if (controller !== inflight) return; // a newer edit overtook this answer
      inflight = null;
      const received = performance.now();
      let rendered = received;
      if (answer.error) {
        const e = answer.error;
        input.setError({ from: e.position, to: e.end, message: e.message });
        showCaret(expr, e);
        setStatus("bad", e.message);
        status.dataset.column = String(e.column);
        status.dataset.expr = expr; // which text this error is about (tests wait on it)
        output.dataset.state = good ? "stale" : "error";
        staleNote.hidden = !good;
        bus.status.set({ state: "stale", error: e });
      } else {
        input.setError(null);
        showCaret(expr, null);
        delete status.dataset.column;
        good = answer;
        good.expr = expr;
        render();
        rendered = performance.now();
        output.dataset.state = "ok";
        output.dataset.expr = expr;
        staleNote.hidden = true;
        const outs = answer.outputs.length;
        setStatus(
          "good",
          `${outs} output${outs > 1 ? "s" : ""} (${answer.outputs.join(", ")}) over ` +
            `${answer.inputs.join(", ") || "no inputs"} · Python ${timing.python_ms.toFixed(2)} ms · ` +
            `round trip ${(received - sent).toFixed(1)} ms` +
            (answer.timing.same_function ? " · the same function as before: its kernels reused" : ""),
        );
        state.set({ vars: answer.inputs });
        bus.result.set(answer);
        bus.status.set({ state: "ok", error: null });
      }
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
        code_ms: rendered - received, // the kernel into the code view
        rest_ms: domDone - rendered, // status line, graph panel
      };
      requestAnimationFrame(() => {
        if (timings.last?.expr === expr) timings.last.paint_ms = performance.now() - started;
      });
    }

    const schedule = () => {
      editedAt = performance.now();
      clearTimeout(timer);
      if (!inflight && editedAt - compiledAt >= DEBOUNCE_MS) compile();
      else timer = setTimeout(compile, DEBOUNCE_MS);
    };

    const input = expressionEditor({
      parent: inputBox,
      doc: state.get().expr,
      label: "Function to differentiate and lower",
      onChange: (text) => state.set({ expr: text }),
    });

    state.subscribe((s, changed) => {
      if (changed.has("expr")) {
        input.setText(s.expr); // a hash edited by hand; no-op for typing
        schedule();
      }
      if (changed.has("tab")) {
        showTab(s.tab);
        render();
      }
    });
    showTab(state.get().tab);

    // ---- copy, download, share ----
    const note = (text) => {
      toolNote.textContent = text;
      clearTimeout(note.timer);
      note.timer = setTimeout(() => (toolNote.textContent = ""), 2500);
    };
    const copyText = async (text, what) => {
      try {
        await navigator.clipboard.writeText(text);
        note(`${what} copied`);
      } catch {
        note(`Copying is blocked here: select the ${what.toLowerCase()} and copy it by hand`);
      }
    };
    copyBtn.addEventListener("click", () => good && copyText(code.text(), "Kernel"));
    downloadBtn.addEventListener("click", () => {
      if (!good) return;
      const tab = state.get().tab;
      const url = URL.createObjectURL(new Blob([code.text()], { type: "text/plain" }));
      const a = h("a", { href: url, download: `kernel.${TABS[tab][1]}` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
      note(`Saved kernel.${TABS[tab][1]}`);
    });
    shareBtn.addEventListener("click", () => {
      const url = new URL(location.href);
      url.hash = state.formatHash();
      history.replaceState(null, "", url.hash);
      copyText(url.href, "Link");
    });

    // ---- first compile once Python is up ----
    setStatus("wait", "Starting Python…");
    try {
      await ready;
    } catch {
      output.dataset.state = "error";
      setStatus("error", "Python did not start, so nothing can be compiled (see the message above).");
      bus.status.set({ state: "error", error: "Python did not start" });
      return;
    }
    setStatus("wait", "Compiling…");
    editedAt = performance.now();
    await compile();
  },
};
