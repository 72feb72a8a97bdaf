// The "One number" card's DOM and plot (./scale-scalar.js is its controller): the x slider,
// the curve with its tangent at x, the readouts and the desktop command.
import { readouts } from "../lib/card.js";
import { commandLine } from "../lib/command.js";
import { h } from "../lib/dom.js";
import { num } from "../lib/format.js";
import { drawPlot } from "../lib/plot.js";

/** Build the card in `el` for x in [x0, x1]; returns {slider, canvas, command, show}. */
export function scalarView(el, x0, x1, firstCommand) {
  const slider = h("input", {
    id: "scalar-x", type: "range", min: String(x0), max: String(x1), step: "0.01", value: "2",
    "aria-label": "x",
  });
  const canvas = h("canvas", {
    className: "plot scale-plot", role: "img",
    "aria-label": "f(x) = x·sin x and its tangent at x; drag to move x",
  });
  const { list, show } = readouts([
    ["x", "x"], ["f(x) = x·sin x", "value"], ["ε part = f′(x)", "eps"],
  ]);
  const command = commandLine(firstCommand);
  el.append(
    h("p", { className: "demo-what" }, "tang runs x·sin x once on the dual number x + 1·ε: " +
      "the value and the exact slope come out of the same pass."),
    canvas,
    h("div", { className: "dual-controls" }, h("label", {}, "x = ", slider)),
    list,
    command,
  );
  return { slider, canvas, command, show };
}

/** The curve over [x0, x1] and, once a dual_trace answer is `shown`, its tangent and point.
 * Returns drawPlot's mapping (pointer → x). */
export function drawScalar(canvas, { x0, x1, curve, yRange, shown }) {
  const lines = [];
  const marks = [];
  if (shown) {
    const fx = num(shown.value);
    const d = num(shown.derivative);
    if (Number.isFinite(fx) && Number.isFinite(d)) {
      lines.push({ x0: shown.x - 1.5, y0: fx - 1.5 * d, x1: shown.x + 1.5, y1: fx + 1.5 * d,
        color: "#d97706" });
      marks.push({ x: shown.x, y: fx, color: "#d97706" });
    }
  }
  const series = [{ lo: curve, hi: curve, color: "#4f46e5" }];
  return drawPlot(canvas, { x0, x1, series, lines, marks, yRange });
}
