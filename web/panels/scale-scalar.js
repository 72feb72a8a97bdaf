// Same idea, every scale · 1. One number: drag x on f(x) = x·sin x; the worker runs f once on
// the dual number x + 1·ε (explain.dual_trace) and the card shows the value, the ε part (the
// exact slope) and the tangent line it gives. ./scale-scalar-view.js builds the card and
// draws the plot; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { setCommand } from "../lib/command.js";
import { fmt, num } from "../lib/format.js";
import { dragAlongX, onResize } from "../lib/plot.js";
import { drawScalar, scalarView } from "./scale-scalar-view.js";

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
    const { slider, canvas, command, show } = scalarView(el, X0, X1, cliFor(2));
    el.dataset.state = "loading";

    const plot = { x0: X0, x1: X1, curve: null, yRange: null, shown: null }; // from the worker
    let mapping = null;
    let busy = false; // one call at a time; a newer x waits for it (never a queue)
    const draw = () => {
      if (plot.curve) mapping = drawScalar(canvas, plot);
    };
    onResize(canvas, draw);

    async function update() {
      if (busy || !plot.curve) return;
      busy = true;
      const x = Number(slider.value);
      try {
        const t = await call("explain.dual_trace", { x, expr: EXPR });
        plot.shown = t;
        show("value", fmt(t.value));
        show("eps", fmt(t.derivative));
        setCommand(command, cliFor(t.x));
        Object.assign(el.dataset, {
          state: "done", x: String(t.x), value: String(num(t.value)), eps: String(num(t.derivative)),
        });
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
    dragAlongX(canvas, () => mapping, setX);

    const failed = () => show("value", "Python did not start, so there is nothing to compute.");
    if (!(await pythonStarted(ready, el, failed))) return;
    const c = await call("explain.run_slice", {
      expr: EXPR, lo: X0, hi: X1, n: CURVE_POINTS, bins: CURVE_POINTS, device: "cpu", check: false,
    });
    plot.curve = c.plot.f[0];
    const finite = plot.curve.filter((v) => v !== null);
    plot.yRange = [Math.min(...finite), Math.max(...finite)];
    setX(Number(slider.value));
  },
};
