// Run it: the current expression and ∂f/∂(axis) along a grid, computed by tang's WGSL kernel
// on WebGPU in the worker (explain.run_slice), checked point by point against tang's CPU path
// in one stated tolerance model, plotted as min/max bands per pixel bin. Long runs go chunk by
// chunk (lib/loop.js runChunks): progress, and Stop. ./run-view.js builds the DOM.
import * as state from "../state.js";
import { fmt } from "../lib/format.js";
import { runChunks } from "../lib/loop.js";
import { count, deviceText, runView } from "./run-view.js";

const CHUNK = 65536; // points per worker call: the granularity of progress and Stop
const BINS = 512;
const DEBOUNCE_MS = 350;

export default {
  id: "run",
  title: "Run it",
  async mount(el, { call, ready }) {
    const view = runView(el);
    const ctl = { controller: null, inputs: [], last: null, fixed: {}, timer: 0 };
    const schedule = (ms = DEBOUNCE_MS) => {
      clearTimeout(ctl.timer);
      ctl.timer = setTimeout(() => run(call, view, ctl, schedule), ms);
    };
    view.runBtn.addEventListener("click", () => run(call, view, ctl, schedule));
    view.stopBtn.addEventListener("click", () => ctl.controller?.abort());
    for (const input of [view.lo, view.hi, view.axisSel, view.samples]) {
      input.addEventListener("change", () => schedule(0));
    }
    // tests and the console read the last run here (no globals)
    Object.defineProperty(el, "tangRun", { get: () => ctl.last });
    view.exprText.textContent = state.get().expr;
    try {
      await ready;
    } catch {
      view.setState("error", "Python did not start, so nothing can run.");
      return;
    }
    view.runBtn.disabled = false;
    state.subscribe((s, changed) => {
      if (!changed.has("expr")) return;
      view.exprText.textContent = s.expr;
      if (ctl.controller) {
        // the run in progress is of the old text: stop it now, so the worker is free for
        // the editor while typing goes on, and run the new text once it pauses
        const stale = ctl.controller;
        ctl.controller = null;
        stale.abort();
        view.stopBtn.disabled = true;
        el.classList.add("stale");
        view.setState("waiting", "The expression changed: it runs again when typing pauses.");
      }
      schedule();
    });
    await run(call, view, ctl, schedule);
  },
};

/** One run over the grid the controls describe, chunk by chunk into `ctl.last`. */
async function run(call, view, ctl, schedule) {
  ctl.controller?.abort();
  const mine = (ctl.controller = new AbortController());
  const expr = state.get().expr;
  const n = Number(view.samples.value);
  const x0 = Number(view.lo.value);
  const x1 = Number(view.hi.value);
  const el = view.canvasF.closest(".panel-body");
  view.exprText.textContent = expr;
  if (!(Number.isFinite(x0) && Number.isFinite(x1) && x0 < x1)) {
    view.setState("error", "The range needs two numbers with from < to.");
    return;
  }
  const bins = Math.min(BINS, n);
  const cur = {
    expr, n, x0, x1, done: 0, axis: null, device: null, check: null, fixed: { ...ctl.fixed },
    f: [Array(bins).fill(null), Array(bins).fill(null)],
    d: [Array(bins).fill(null), Array(bins).fill(null)],
    seconds: { device: 0, cpu: 0 },
  };
  const axis = ctl.inputs.includes(view.axisSel.value) ? view.axisSel.value : null;
  view.stopBtn.disabled = false;
  el.classList.remove("stale");
  view.progress.max = n;
  view.progress.value = 0;
  view.setState("running", `Running ${count(n)} points…`);
  const started = performance.now();
  const step = async (_last, signal) => {
    const start = cur.done;
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
      ctl.inputs = r.inputs;
      cur.axis = r.axis;
      view.syncAxis(r.inputs, r.axis);
      view.syncSliders(r.inputs, r.axis, ctl.fixed, () => schedule(150));
      cur.device = r;
      view.fact.device.textContent = deviceText(r);
    }
    absorb(cur, r);
    return { done: cur.done >= n };
  };
  const onProgress = () => {
    ctl.last = { ...cur };
    view.progress.value = cur.done;
    if (cur.done < n) view.setState("running", `${count(cur.done)} of ${count(n)} points…`);
    view.plot(ctl.last);
  };
  try {
    const { stopped } = await runChunks(step, { signal: mine.signal, onProgress });
    if (ctl.controller !== mine) return; // a newer run (or an edit) took over
    if (stopped) {
      el.classList.add("stale");
      view.setState("stopped", `Stopped after ${count(cur.done)} of ${count(n)} points.`);
      if (cur.done) view.showCheck(cur.check, cur.done);
      return;
    }
    view.showCheck(cur.check, cur.done);
    view.fact.time.textContent = `${fmt(performance.now() - started, 3)} ms in the page · device ` +
      `${fmt(1000 * cur.seconds.device, 3)} ms · CPU check ${fmt(1000 * cur.seconds.cpu, 3)} ms`;
    view.setState("done", `${count(n)} points along ${cur.axis}.`);
    view.canvasF.setAttribute("aria-label", `Plot of f over ${cur.axis} from ${x0} to ${x1}`);
  } catch (err) {
    if (ctl.controller !== mine) return;
    el.classList.add("stale");
    const where = err.type === "ParseError" ? "The expression does not parse" : err.type;
    view.setState("error", `${where}: ${err.message}`);
  } finally {
    if (ctl.controller === mine) {
      view.stopBtn.disabled = true;
      ctl.controller = null;
    }
  }
}

/** Fold one chunk's answer into the run: bins, times, the check. */
function absorb(cur, r) {
  merge(cur.f, r.plot.first, r.plot.f);
  merge(cur.d, r.plot.first, r.plot.d);
  cur.seconds.device += r.seconds.device;
  cur.seconds.cpu += r.seconds.cpu ?? 0;
  cur.check = combine(cur.check, r.check);
  cur.done = r.start + r.count;
}

function merge(target, first, [lo, hi]) {
  for (let i = 0; i < lo.length; i++) {
    const b = first + i;
    if (lo[i] !== null) target[0][b] = Math.min(target[0][b] ?? Infinity, lo[i]);
    if (hi[i] !== null) target[1][b] = Math.max(target[1][b] ?? -Infinity, hi[i]);
  }
}

// The same merge as demos/_gpu_check.py's `merge`: counts add, the worst point is the worst.
const COUNTS = ["points", "outside", "singular", "adapter", "unexplained", "nonfinite_mismatch", "indeterminate"];
function combine(a, b) {
  if (!b) return a;
  if (!a) return { ...b };
  const out = { ...a, max_abs: Math.max(a.max_abs, b.max_abs), max_rel: Math.max(a.max_rel, b.max_rel) };
  for (const k of COUNTS) out[k] = a[k] + b[k];
  if (b.worst && (!a.worst || b.worst.ratio > a.worst.ratio)) out.worst = b.worst;
  out.example = a.example ?? b.example;
  out.verdict = out.unexplained || out.nonfinite_mismatch ? "differs"
    : out.outside || out.indeterminate ? "explained" : "matches";
  out.matches = out.verdict === "matches";
  return out;
}
