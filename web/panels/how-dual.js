// How it works, 1: dual numbers. Drag x on f(x) = x·sin x; the worker runs f on tang.Dual one
// operation at a time (explain.dual_trace) and the table shows each value and ε part.
// ./how-dual-view.js builds the DOM; this file is the controller.
import { fmt, num } from "../lib/format.js";
import { dragAlongX, drawPlot, onResize } from "../lib/plot.js";
import { dualView } from "./how-dual-view.js";

const EXPR = "x*sin(x)";
const X0 = -6;
const X1 = 6;
const DEBOUNCE_MS = 40;

export default {
  id: "how-dual",
  title: "How it works · 1. Dual numbers",
  async mount(el, { call, ready }) {
    const { slider, xOut, canvas, summary, render } = dualView(el, X0, X1);
    let curve = null; // f over [X0, X1], computed by tang (one CPU evaluation)
    let shown = null; // the last trace
    let mapping = null;
    let controller = null;
    let timer = 0;

    let curveRange = null;
    const draw = () => {
      if (curve) mapping = drawFigure(canvas, curve, curveRange, Number(slider.value), shown);
    };
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

    function schedule() {
      xOut.textContent = fmt(Number(slider.value), 4);
      clearTimeout(timer);
      timer = setTimeout(update, DEBOUNCE_MS);
    }
    slider.addEventListener("input", schedule);

    dragAlongX(canvas, () => mapping, (x) => { // drag or tap on the plot: the slider follows
      slider.value = String(Math.round(Math.min(X1, Math.max(X0, x)) * 100) / 100);
      schedule();
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

/** The curve, and at x (when `shown` is the trace at x) its tangent and the point. */
function drawFigure(canvas, curve, yRange, x, shown) {
  const lines = [];
  const marks = [];
  if (shown && shown.x === x) {
    const fx = num(shown.value);
    const d = num(shown.derivative);
    if (Number.isFinite(fx) && Number.isFinite(d)) {
      lines.push({ x0: x - 1.5, y0: fx - 1.5 * d, x1: x + 1.5, y1: fx + 1.5 * d, color: "#d97706" });
      marks.push({ x, y: fx, color: "#d97706" });
    }
  }
  const series = [{ lo: curve, hi: curve, color: "#4f46e5" }];
  return drawPlot(canvas, { x0: X0, x1: X1, series, lines, marks, yRange });
}
