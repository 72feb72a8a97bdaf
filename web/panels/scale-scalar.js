// Same idea, every scale · 1. One number: drag x on f(x) = x·sin x; the worker runs f once on
// the dual number x + 1·ε (explain.dual_trace) and the card shows the value, the ε part (the
// exact slope) and the tangent line it gives.
import { commandLine, setCommand } from "../lib/command.js";
import { h } from "../lib/dom.js";
import { fmt, num } from "../lib/format.js";
import { drawPlot, onResize } from "../lib/plot.js";

const EXPR = "x*sin(x)";
const X0 = -6;
const X1 = 6;
const CURVE_POINTS = 241;

const cliFor = (x) => `python -m tang eval '${EXPR}' --at x=${x} --grad`;

export default {
  id: "scale-scalar",
  title: "One number",
  section: "scale",
  async mount(el, { call, ready }) {
    const slider = h("input", {
      id: "scalar-x", type: "range", min: String(X0), max: String(X1), step: "0.01", value: "2",
      "aria-label": "x",
    });
    const canvas = h("canvas", {
      className: "plot scale-plot", role: "img",
      "aria-label": "f(x) = x·sin x and its tangent at x; drag to move x",
    });
    const out = (name) => h("dd", { dataset: { readout: name } }, "…");
    const readouts = h("dl", { className: "readouts" },
      h("dt", {}, "x"), out("x"),
      h("dt", {}, "f(x) = x·sin x"), out("value"),
      h("dt", {}, "ε part = f′(x)"), out("eps"));
    const command = commandLine(cliFor(2));
    el.append(
      h("p", { className: "demo-what" }, "tang runs x·sin x once on the dual number x + 1·ε: " +
        "the value and the exact slope come out of the same pass."),
      canvas,
      h("div", { className: "dual-controls" }, h("label", {}, "x = ", slider)),
      readouts,
      command,
    );
    const show = (name, text) => (el.querySelector(`[data-readout="${name}"]`).textContent = text);
    el.dataset.state = "loading";

    let curve = null; // f over [X0, X1], computed by tang in the worker
    let curveRange = null;
    let shown = null; // the last dual_trace answer
    let mapping = null;
    let busy = false; // one call at a time; a newer x waits for it (never a queue)

    function draw() {
      if (!curve) return;
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
      mapping = drawPlot(canvas, {
        x0: X0, x1: X1, series: [{ lo: curve, hi: curve, color: "#4f46e5" }], lines, marks,
        yRange: curveRange,
      });
    }
    onResize(canvas, draw);

    async function update() {
      if (busy || !curve) return;
      busy = true;
      const x = Number(slider.value);
      try {
        const t = await call("explain.dual_trace", { x, expr: EXPR });
        shown = t;
        show("value", fmt(t.value));
        show("eps", fmt(t.derivative));
        setCommand(command, cliFor(t.x));
        el.dataset.state = "done";
        el.dataset.x = String(t.x);
        el.dataset.value = String(num(t.value));
        el.dataset.eps = String(num(t.derivative));
        draw();
      } catch (err) {
        if (err.type !== "Cancelled") {
          el.dataset.state = "error";
          show("value", `the worker failed: ${err.message}`);
        }
      } finally {
        busy = false;
      }
      if (Number(slider.value) !== x) update(); // x moved while we waited: catch up once
    }

    function setX(x) {
      slider.value = String(Math.round(Math.min(X1, Math.max(X0, x)) * 100) / 100);
      show("x", fmt(Number(slider.value), 4));
      update();
    }
    slider.addEventListener("input", () => setX(Number(slider.value)));
    const fromPointer = (ev) => {
      if (!mapping) return;
      const rect = canvas.getBoundingClientRect();
      setX(mapping.toX(ev.clientX - rect.left));
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
      show("value", "Python did not start, so there is nothing to compute.");
      return;
    }
    const c = await call("explain.run_slice", {
      expr: EXPR, lo: X0, hi: X1, n: CURVE_POINTS, bins: CURVE_POINTS, device: "cpu", check: false,
    });
    curve = c.plot.f[0];
    const finite = curve.filter((v) => v !== null);
    curveRange = [Math.min(...finite), Math.max(...finite)];
    setX(Number(slider.value));
  },
};
