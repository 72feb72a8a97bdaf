// How it works, 1: the dual-number figure's DOM (./how-dual.js is its controller): the rule
// typeset by KaTeX, the x slider, the plot, the summary and the table of operations.
import { h } from "../lib/dom.js";
import { fmt } from "../lib/format.js";
import { tex } from "../lib/tex.js";

// The idea in one line: what running f once on x + ε gives.
const DUAL_RULE = String.raw`f(x+\varepsilon) = f(x) + f'(x)\,\varepsilon, \qquad \varepsilon^2 = 0`;

/** Build the figure in `el` for x in [x0, x1]; returns its parts and `render(trace)`. */
export function dualView(el, x0, x1) {
  const slider = h("input", {
    id: "dual-x", type: "range", min: String(x0), max: String(x1), step: "0.01", value: "2",
    "aria-label": "x",
  });
  const xOut = h("output", { htmlFor: "dual-x" }, "2");
  const canvas = h("canvas", {
    className: "plot dual-plot", role: "img",
    "aria-label": "f(x) = x·sin x with its tangent at x; drag to move x",
  });
  const summary = h("p", { className: "dual-summary", role: "status" }, "Waiting for Python…");
  const tbody = h("tbody");
  const col = (text) => h("th", { scope: "col" }, text);
  const table = h("table", { className: "dual-table" },
    h("caption", {}, "f(x + ε) one operation at a time, with ε² = 0"),
    h("thead", {}, h("tr", {}, col("step"), col("operation"), col("value"), col("ε part"), col("rule for ε"))),
    tbody);
  el.append(
    h("p", {}, "A dual number x + ε carries a value and a slope, with ε² = 0, so"),
    tex(DUAL_RULE, { display: true, label: "f(x + ε) = f(x) + f′(x)·ε, with ε² = 0" }),
    h("p", {}, "Run f once on x + 1·ε and the ε part is the exact " +
      "derivative — no finite differences, no symbolic algebra. tang.Dual does this for " +
      "every operation; the table below is computed by it in the worker as you move x."),
    h("div", { className: "dual-controls" }, h("label", {}, "x = ", slider), xOut),
    canvas,
    summary,
    h("div", { className: "table-scroll" }, table),
  );
  el.dataset.state = "loading";

  /** The rows of one trace (explain.dual_trace) and the summary under the plot. */
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
  return { slider, xOut, canvas, summary, render };
}
