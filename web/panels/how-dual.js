// How it works, 1: dual numbers. Drag x on f(x) = x·sin x; the worker runs f on tang.Dual one
// operation at a time (explain.dual_trace) and the table shows each value and ε part.
import { h } from "../lib/dom.js";
import { fmt, num } from "../lib/format.js";
import { drawPlot, onResize } from "../lib/plot.js";

const EXPR = "x*sin(x)";
const X0 = -6;
const X1 = 6;
const DEBOUNCE_MS = 40;

export default {
  id: "how-dual",
  title: "How it works · 1. Dual numbers",
  async mount(el, { call, ready }) {
    const slider = h("input", {
      id: "dual-x", type: "range", min: String(X0), max: String(X1), step: "0.01", value: "2",
      "aria-label": "x",
    });
    const xOut = h("output", { htmlFor: "dual-x" }, "2");
    const canvas = h("canvas", {
      className: "plot dual-plot", role: "img",
      "aria-label": "f(x) = x·sin x with its tangent at x; drag to move x",
    });
    const summary = h("p", { className: "dual-summary", role: "status" }, "Waiting for Python…");
    const tbody = h("tbody");
    const table = h("table", { className: "dual-table" },
      h("caption", {}, "f(x + ε) one operation at a time, with ε² = 0"),
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, "step"),
        h("th", { scope: "col" }, "operation"),
        h("th", { scope: "col" }, "value"),
        h("th", { scope: "col" }, "ε part"),
        h("th", { scope: "col" }, "rule for ε"))),
      tbody);
    el.append(
      h("p", {}, "A dual number x + ε carries a value and a slope, with ε² = 0, so " +
        "f(x + ε) = f(x) + f′(x)·ε: run f once on x + 1·ε and the ε part is the exact " +
        "derivative — no finite differences, no symbolic algebra. tang.Dual does this for " +
        "every operation; the table below is computed by it in the worker as you move x."),
      h("div", { className: "dual-controls" }, h("label", {}, "x = ", slider), xOut),
      canvas,
      summary,
      h("div", { className: "table-scroll" }, table),
    );
    el.dataset.state = "loading";

    let curve = null; // f over [X0, X1], computed by tang (one CPU evaluation)
    let shown = null; // the last trace
    let mapping = null;
    let controller = null;
    let timer = 0;

    function draw() {
      if (!curve) return;
      const x = Number(slider.value);
      const lines = [];
      const marks = [];
      if (shown && shown.x === x) {
        const fx = num(shown.value);
        const d = num(shown.derivative);
        if (Number.isFinite(fx) && Number.isFinite(d)) {
          const [x0, x1] = [x - 1.5, x + 1.5];
          lines.push({ x0, y0: fx - 1.5 * d, x1, y1: fx + 1.5 * d, color: "#d97706" });
          marks.push({ x, y: fx, color: "#d97706" });
        }
      }
      mapping = drawPlot(canvas, {
        x0: X0, x1: X1, series: [{ lo: curve, hi: curve, color: "#4f46e5" }], lines, marks,
        yRange: curveRange,
      });
    }
    let curveRange = null;
    onResize(canvas, draw);

    async function update() {
      controller?.abort();
      const mine = new AbortController();
      controller = mine;
      const x = Number(slider.value);
      xOut.textContent = fmt(x, 4);
      try {
        const t = await call("explain.dual_trace", { x, expr: EXPR }, { signal: mine.signal });
        shown = t;
        render(t);
        el.dataset.state = "done";
        el.dataset.x = String(t.x);
        draw();
      } catch (err) {
        if (err.type === "Cancelled" || controller !== mine) return; // a newer x took over
        el.dataset.state = "error";
        summary.textContent = `The worker failed: ${err.message}`;
      }
    }

    function render(t) {
      const rows = t.steps.map((s) => {
        const cell = (v) => h("td", { className: "num", dataset: { value: JSON.stringify(v) } },
          v === null ? "—" : typeof v === "boolean" ? String(v) : fmt(v));
        return h("tr", { dataset: { serial: String(s.serial) } },
          h("th", { scope: "row" }, h("code", {}, s.name)),
          h("td", {}, h("code", {}, s.name === s.formula ? `${s.name} + 1·ε` : s.formula)),
          cell(s.value),
          cell(s.eps),
          h("td", { className: "rule" }, s.rule));
      });
      tbody.replaceChildren(...rows);
      summary.textContent = `f(${fmt(t.x, 4)}) = ${fmt(t.value)}, f′(${fmt(t.x, 4)}) = ` +
        `${fmt(t.derivative)} — the ε part of the last row.`;
    }

    function schedule() {
      xOut.textContent = fmt(Number(slider.value), 4);
      clearTimeout(timer);
      timer = setTimeout(update, DEBOUNCE_MS);
    }
    slider.addEventListener("input", schedule);

    // Drag (or tap) on the plot to move x.
    const fromPointer = (ev) => {
      if (!mapping) return;
      const rect = canvas.getBoundingClientRect();
      const x = Math.min(X1, Math.max(X0, mapping.toX(ev.clientX - rect.left)));
      slider.value = String(Math.round(x * 100) / 100);
      schedule();
    };
    canvas.addEventListener("pointerdown", (ev) => {
      canvas.setPointerCapture(ev.pointerId);
      fromPointer(ev);
    });
    canvas.addEventListener("pointermove", (ev) => {
      if (canvas.hasPointerCapture(ev.pointerId)) fromPointer(ev);
    });

    try {
      await ready;
    } catch {
      el.dataset.state = "error";
      summary.textContent = "Python did not start, so there is nothing to compute.";
      return;
    }
    summary.textContent = "Computing…";
    const n = 241;
    const c = await call("explain.run_slice", {
      expr: EXPR, lo: X0, hi: X1, n, bins: n, device: "cpu", check: false,
    });
    curve = c.plot.f[0];
    const finite = curve.filter((v) => v !== null);
    curveRange = [Math.min(...finite), Math.max(...finite)];
    await update();
  },
};
