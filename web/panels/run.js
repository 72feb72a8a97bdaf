// Run it: the current expression and ∂f/∂(axis) along a grid, computed by tang's WGSL kernel
// on WebGPU in the worker (explain.run_slice), checked point by point against tang's CPU path,
// plotted as min/max bands per pixel bin. Long runs go chunk by chunk: progress, and Stop.
import * as state from "../state.js";
import { h } from "../lib/dom.js";
import { fmt, fmtErr } from "../lib/format.js";
import { drawPlot, onResize } from "../lib/plot.js";

const SAMPLES = [1024, 16384, 262144, 1048576, 4194304];
const CHUNK = 65536; // points per worker call: the granularity of progress and Stop
const BINS = 512;
const DEBOUNCE_MS = 350;

export default {
  id: "run",
  title: "Run it",
  async mount(el, { call, ready }) {
    const exprText = h("code", { className: "run-expr" });
    const axisSel = h("select", { id: "run-axis", "aria-label": "Plot along" });
    const number = (id, value, label) =>
      h("input", { id, type: "number", value, step: "any", "aria-label": label });
    const lo = number("run-lo", "-4", "From");
    const hi = number("run-hi", "4", "To");
    const samples = h("select", { id: "run-samples", "aria-label": "Samples" });
    for (const n of SAMPLES) {
      samples.append(h("option", { value: String(n), selected: n === 16384 }, count(n)));
    }
    const runBtn = h("button", { type: "button", className: "primary", disabled: true }, "Run");
    const stopBtn = h("button", { type: "button", disabled: true }, "Stop");
    const sliders = h("div", { className: "run-sliders" });
    const progress = h("progress", { max: 1, value: 0, "aria-label": "Progress" });
    const status = h("p", { className: "run-status", role: "status" }, "Waiting for Python…");
    const canvasF = h("canvas", { className: "plot", role: "img", "aria-label": "f" });
    const canvasD = h("canvas", { className: "plot", role: "img", "aria-label": "derivative" });
    const labelF = h("span", { className: "legend f" }, "f");
    const labelD = h("span", { className: "legend d" }, "∂f/∂x");
    const facts = h("dl", { className: "facts run-facts" });
    const fact = {};
    for (const [key, label] of [["device", "Device"], ["check", "Check"], ["time", "Time"]]) {
      fact[key] = h("dd", { dataset: { fact: key } }, "—");
      facts.append(h("dt", {}, label), fact[key]);
    }
    el.append(
      h("p", {}, "The expression from the editor and its derivative along one variable, the " +
        "others held by the sliders: tang's generated WGSL kernel runs on WebGPU in this " +
        "page, and every point is checked against tang's CPU path."),
      h("p", { className: "run-what" }, "f = ", exprText),
      h("div", { className: "run-controls" },
        h("label", {}, "along ", axisSel),
        h("label", {}, "from ", lo),
        h("label", {}, "to ", hi),
        h("label", {}, "samples ", samples),
        runBtn, stopBtn),
      sliders,
      h("div", { className: "run-progress" }, progress, status),
      h("figure", { className: "run-plots" },
        h("figcaption", {}, labelF), canvasF, h("figcaption", {}, labelD), canvasD),
      facts,
    );
    el.dataset.state = "loading";

    let controller = null;
    let timer = 0;
    let inputs = [];
    let last = null; // the last complete (or partial) run, for redraws and tests
    const fixed = {}; // name -> value of the sliders

    const setState = (s, text) => {
      el.dataset.state = s;
      if (text !== undefined) status.textContent = text;
      status.classList.toggle("bad", s === "error");
    };

    function draw() {
      if (!last) return;
      const { x0, x1, f, d } = last;
      drawPlot(canvasF, { x0, x1, series: [{ lo: f[0], hi: f[1], color: "#4f46e5" }] });
      drawPlot(canvasD, { x0, x1, series: [{ lo: d[0], hi: d[1], color: "#d97706" }] });
    }
    onResize(canvasF, draw);

    function syncSliders(names, axis) {
      const others = names.filter((n) => n !== axis);
      if (sliders.dataset.names === others.join(",")) return;
      sliders.dataset.names = others.join(",");
      sliders.replaceChildren();
      for (const name of others) {
        fixed[name] ??= 1;
        const out = h("output", {}, fmt(fixed[name], 3));
        const input = h("input", {
          type: "range", min: "-4", max: "4", step: "0.05", value: String(fixed[name]),
          "aria-label": `${name} (held fixed)`, dataset: { name },
        });
        input.addEventListener("input", () => {
          fixed[name] = Number(input.value);
          out.textContent = fmt(fixed[name], 3);
          schedule(150);
        });
        sliders.append(h("label", {}, `${name} = `, input, out));
      }
    }

    function syncAxis(names, axis) {
      if (axisSel.dataset.names !== names.join(",")) {
        axisSel.dataset.names = names.join(",");
        axisSel.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
      }
      axisSel.value = axis;
      labelD.textContent = `∂f/∂${axis}`;
      canvasD.setAttribute("aria-label", `Plot of ∂f/∂${axis}`);
    }

    function deviceText(r) {
      if (r.device === "browser") return `WebGPU: ${r.device_name}`;
      if (r.device === "native") return `wgpu-py: ${r.device_name}`;
      const why = r.fallback ?? r.report.filter((l) => !l.startsWith("using")).join("; ");
      if (/no adapter|not available|navigator\.gpu/i.test(why)) {
        return "no WebGPU adapter — ran on the CPU";
      }
      return `ran on the CPU${why ? ` (WebGPU: ${why})` : ""}`;
    }

    async function run() {
      controller?.abort();
      const mine = new AbortController();
      controller = mine;
      const { signal } = mine;
      const expr = state.get().expr;
      const n = Number(samples.value);
      const x0 = Number(lo.value);
      const x1 = Number(hi.value);
      exprText.textContent = expr;
      if (!(Number.isFinite(x0) && Number.isFinite(x1) && x0 < x1)) {
        setState("error", "The range needs two numbers with from < to.");
        return;
      }
      const bins = Math.min(BINS, n);
      const cur = {
        expr, n, x0, x1, done: 0, axis: null, device: null, check: null, fixed: { ...fixed },
        f: [Array(bins).fill(null), Array(bins).fill(null)],
        d: [Array(bins).fill(null), Array(bins).fill(null)],
        seconds: { device: 0, cpu: 0 },
      };
      const axis = inputs.includes(axisSel.value) ? axisSel.value : null;
      stopBtn.disabled = false;
      el.classList.remove("stale");
      progress.max = n;
      progress.value = 0;
      setState("running", `Running ${count(n)} points…`);
      const started = performance.now();
      try {
        for (let start = 0; start < n; start += CHUNK) {
          const params = {
            expr, axis: cur.axis ?? axis, lo: x0, hi: x1, n, start,
            count: Math.min(CHUNK, n - start), fixed: cur.fixed, bins,
          };
          const r = await call("explain.run_slice", params, { signal }).catch((err) => {
            // the edited expression lost the chosen variable: plot along its first one
            if (start > 0 || !params.axis || !/no input named/.test(err.message)) throw err;
            return call("explain.run_slice", { ...params, axis: null }, { signal });
          });
          if (start === 0) {
            inputs = r.inputs;
            cur.axis = r.axis;
            syncAxis(r.inputs, r.axis);
            syncSliders(r.inputs, r.axis);
            cur.device = r;
            fact.device.textContent = deviceText(r);
          }
          merge(cur.f, r.plot.first, r.plot.f);
          merge(cur.d, r.plot.first, r.plot.d);
          cur.seconds.device += r.seconds.device;
          cur.seconds.cpu += r.seconds.cpu ?? 0;
          cur.check = combine(cur.check, r.check);
          cur.done = start + r.count;
          last = { ...cur };
          progress.value = cur.done;
          if (cur.done < n) {
            status.textContent = `${count(cur.done)} of ${count(n)} points…`;
          }
          draw();
        }
        const ms = performance.now() - started;
        showCheck(cur);
        fact.time.textContent = `${fmt(ms, 3)} ms in the page · device ${fmt(
          1000 * cur.seconds.device, 3)} ms · CPU check ${fmt(1000 * cur.seconds.cpu, 3)} ms`;
        setState("done", `${count(n)} points along ${cur.axis}.`);
        canvasF.setAttribute("aria-label", `Plot of f over ${cur.axis} from ${x0} to ${x1}`);
      } catch (err) {
        if (controller !== mine) return; // a newer run took over
        if (err.type === "Cancelled") {
          el.classList.toggle("stale", true);
          setState("stopped", `Stopped after ${count(cur.done)} of ${count(n)} points.`);
          if (cur.done) showCheck(cur);
        } else {
          el.classList.add("stale");
          const where = err.type === "ParseError" ? "The expression does not parse" : err.type;
          setState("error", `${where}: ${err.message}`);
        }
      } finally {
        if (controller === mine) {
          stopBtn.disabled = true;
          controller = null;
        }
      }
    }

    function showCheck(cur) {
      const c = cur.check;
      fact.check.classList.remove("good", "bad");
      if (!c) {
        fact.check.textContent = "nothing to check: the CPU computed it";
        return;
      }
      const pts = `over ${count(cur.done)} points`;
      const detail = `max |Δ| ${fmtErr(c.max_abs)}, max rel ${fmtErr(c.max_rel)}` +
        (c.nonfinite_mismatch ? `, ${c.nonfinite_mismatch} inf/NaN disagree` : "");
      fact.check.textContent = c.matches
        ? `matches CPU to ${fmtErr(c.max_err)} ${pts} (${detail})`
        : `differs from CPU by ${fmtErr(c.max_err)} ${pts} (${detail})`;
      fact.check.classList.add(c.matches ? "good" : "bad");
    }

    function schedule(ms = DEBOUNCE_MS) {
      clearTimeout(timer);
      timer = setTimeout(run, ms);
    }

    runBtn.addEventListener("click", () => run());
    stopBtn.addEventListener("click", () => controller?.abort());
    for (const input of [lo, hi, axisSel, samples]) {
      input.addEventListener("change", () => schedule(0));
    }
    // tests and the console read the last run here (no globals)
    Object.defineProperty(el, "tangRun", { get: () => last });

    exprText.textContent = state.get().expr;
    try {
      await ready;
    } catch {
      setState("error", "Python did not start, so nothing can run.");
      return;
    }
    runBtn.disabled = false;
    state.subscribe((s, changed) => {
      if (changed.has("expr")) {
        exprText.textContent = s.expr;
        if (controller) {
          // the run in progress is of the old text: stop it now, so the worker is free for
          // the editor while typing goes on, and run the new text once it pauses
          const stale = controller;
          controller = null;
          stale.abort();
          stopBtn.disabled = true;
          el.classList.add("stale");
          setState("waiting", "The expression changed: it runs again when typing pauses.");
        }
        schedule();
      }
    });
    await run();
  },
};

const count = (n) => n.toLocaleString("en");

function merge(target, first, [lo, hi]) {
  for (let i = 0; i < lo.length; i++) {
    const b = first + i;
    if (lo[i] !== null) target[0][b] = Math.min(target[0][b] ?? Infinity, lo[i]);
    if (hi[i] !== null) target[1][b] = Math.max(target[1][b] ?? -Infinity, hi[i]);
  }
}

function combine(a, b) {
  if (!b) return a;
  if (!a) return { ...b };
  return {
    max_abs: Math.max(a.max_abs, b.max_abs),
    max_rel: Math.max(a.max_rel, b.max_rel),
    max_err: Math.max(a.max_err, b.max_err),
    nonfinite_mismatch: a.nonfinite_mismatch + b.nonfinite_mismatch,
    matches: a.matches && b.matches,
    tolerance: b.tolerance,
  };
}
