// Run it: the current expression and ∂f/∂(axis) along a grid, computed by tang's WGSL kernel
// on WebGPU in the worker (explain.run_slice), checked point by point against tang's CPU path
// in one stated tolerance model, plotted as min/max bands per pixel bin. Long runs go chunk by
// chunk (lib/loop.js runChunks): progress, and Stop. ./run-view.js builds the DOM.
// The rule: the plots and facts shown are of the inputs shown (expression, axis, range,
// samples, held values), or marked stale with what changed (`refresh`, on every input).
import * as state from "../state.js";
import { fmt } from "../lib/format.js";
import { runChunks } from "../lib/loop.js";
import { count, runView } from "./run-view.js";

const CHUNK = 65536; // points per worker call: the granularity of progress and Stop
const BINS = 512;
const DEBOUNCE_MS = 350;

export default {
  id: "run",
  title: "Run it",
  async mount(el, { call, ready }) {
    const view = runView(el);
    const ctl = { controller: null, inputs: [], last: null, fixed: {}, timer: 0, scheduled: false };
    const schedule = (ms = DEBOUNCE_MS) => {
      clearTimeout(ctl.timer);
      ctl.scheduled = true;
      ctl.timer = setTimeout(() => run(call, view, ctl), ms);
      ctl.refresh();
    };
    // a stale result is dimmed at once; the note saying why waits while a run that replaces
    // it is scheduled or going (no line jumping in and out while a slider moves)
    ctl.refresh = () => view.markStale(staleness(ctl.last, shownInputs(view, ctl)),
      !ctl.scheduled && !ctl.controller);
    ctl.onSlide = () => schedule(150);
    view.runBtn.addEventListener("click", () => run(call, view, ctl));
    view.stopBtn.addEventListener("click", () => ctl.controller?.abort());
    for (const input of [view.lo, view.hi, view.axisSel, view.samples]) {
      input.addEventListener("input", ctl.refresh); // marked at once, run when committed
      input.addEventListener("change", () => schedule(0));
    }
    // tests and the console read the last run here (no globals)
    Object.defineProperty(el, "tangRun", { get: () => ctl.last });
    view.showExpr(state.get().expr);
    try {
      await ready;
    } catch {
      view.setState("error", "Python did not start, so nothing can run.");
      return;
    }
    view.runBtn.disabled = false;
    state.subscribe((s, changed) => {
      if (!changed.has("expr")) return;
      view.showExpr(s.expr);
      if (ctl.controller) {
        // the run in progress is of the old text: stop it now, so the worker is free for
        // the editor while typing goes on, and run the new text once it pauses
        const stale = ctl.controller;
        ctl.controller = null;
        stale.abort();
        view.stopBtn.disabled = true;
        view.setState("waiting", "The expression changed: it runs again when typing pauses.");
      }
      schedule();
    });
    await run(call, view, ctl);
  },
};

/** The inputs the controls show now: {expr, axis (null before the first answer), x0, x1, n,
 * fixed} (the held values of the inputs other than the axis). */
function shownInputs(view, ctl) {
  const axis = ctl.inputs.includes(view.axisSel.value) ? view.axisSel.value : null;
  return {
    expr: state.get().expr, axis, x0: Number(view.lo.value), x1: Number(view.hi.value),
    n: Number(view.samples.value), fixed: ctl.fixed,
  };
}

/** Null when `run` (the run shown) is of the inputs `now`; else the note that says it is not. */
function staleness(run, now) {
  if (!run) return null;
  const held = (name) => (run.fixed[name] ?? 1) !== (now.fixed[name] ?? 1);
  const changed = [
    run.expr !== now.expr && "the expression",
    now.axis !== null && run.axis !== now.axis && "“along”",
    (run.x0 !== now.x0 || run.x1 !== now.x1) && "the range",
    run.n !== now.n && "the samples",
    run.inputs.some((name) => name !== run.axis && held(name)) && "a held value",
  ].filter(Boolean);
  if (!changed.length) return null;
  return `Stale: the plots and facts below are of the last run (${run.expr} along ` +
    `${run.axis} from ${run.x0} to ${run.x1}, ${count(run.n)} points); since then ` +
    `${changed.slice(0, -1).join(", ")}${changed.length > 1 ? " and " : ""}${changed.at(-1)} changed.`;
}

/** One run over the grid the controls describe, chunk by chunk into `ctl.last`. */
async function run(call, view, ctl) {
  clearTimeout(ctl.timer); // this run is the one that was scheduled
  ctl.scheduled = false;
  ctl.controller?.abort();
  ctl.controller = null;
  view.stopBtn.disabled = true;
  const { expr, axis, x0, x1, n } = shownInputs(view, ctl);
  view.showExpr(expr);
  // the held sliders follow the controls at once; the legends follow the plot
  if (axis) view.syncSliders(ctl.inputs, axis, ctl.fixed, ctl.onSlide);
  if (!(Number.isFinite(x0) && Number.isFinite(x1) && x0 < x1)) {
    view.progress.value = 0;
    view.setState("error", "The range needs two numbers with from < to.");
    ctl.refresh();
    return;
  }
  const mine = (ctl.controller = new AbortController());
  ctl.refresh();
  const bins = Math.min(BINS, n);
  const cur = {
    expr, n, x0, x1, done: 0, axis: null, inputs: [], device: null, check: null,
    fixed: { ...ctl.fixed },
    f: [Array(bins).fill(null), Array(bins).fill(null)],
    d: [Array(bins).fill(null), Array(bins).fill(null)],
    seconds: { device: 0, cpu: 0 },
  };
  view.stopBtn.disabled = false;
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
    return { r, done: r.start + r.count >= n };
  };
  // one chunk into the run, and the plot, check and time of the points done so far (the
  // facts are always of the plot); runChunks drops a chunk that answers after a stop
  const onProgress = ({ r }) => {
    if (r.start === 0) {
      ctl.inputs = cur.inputs = r.inputs;
      cur.axis = r.axis;
      view.syncAxis(r.inputs, r.axis, r.outputs[0]);
      view.showExpr(r.definition); // the function with its name, once
      view.syncSliders(r.inputs, r.axis, ctl.fixed, ctl.onSlide);
      cur.device = r;
      view.showDevice(r);
    }
    absorb(cur, r);
    ctl.last = { ...cur };
    view.progress.value = cur.done;
    if (cur.done < n) view.setState("running", `${count(cur.done)} of ${count(n)} points…`);
    view.plot(ctl.last);
    view.showCheck(cur.check, cur.done);
    view.fact.time.textContent = timeText(cur, performance.now() - started, "so far");
    ctl.refresh();
  };
  try {
    const { stopped } = await runChunks(step, { signal: mine.signal, onProgress });
    if (ctl.controller !== mine) return; // a newer run (or an edit) took over
    if (stopped) {
      view.setState("stopped", `Stopped after ${count(cur.done)} of ${count(n)} points.`);
      if (cur.done) view.fact.time.textContent = timeText(cur, performance.now() - started, "stopped");
      return;
    }
    view.fact.time.textContent = timeText(cur, performance.now() - started, "done");
    view.setState("done", `${count(n)} points along ${cur.axis}.`);
    view.canvasF.setAttribute("aria-label", `Plot of ${cur.device.outputs[0]} over ${cur.axis} from ${x0} to ${x1}`);
  } catch (err) {
    if (ctl.controller !== mine) return;
    const where = err.type === "ParseError" ? "The expression does not parse" : err.type;
    view.setState("error", `${where}: ${err.message}`);
  } finally {
    if (ctl.controller === mine) {
      view.stopBtn.disabled = true;
      ctl.controller = null;
      ctl.refresh();
    }
  }
}

/** The Time fact of a run: all of it ("done"), or of the points done ("so far", "stopped"). */
function timeText(cur, ms, how) {
  const which = how === "done" ? "" : ` for ${count(cur.done)} of ${count(cur.n)} points (${how})`;
  return `${fmt(ms, 3)} ms in the page${which} · device ${fmt(1000 * cur.seconds.device, 3)} ms ` +
    `· CPU check ${fmt(1000 * cur.seconds.cpu, 3)} ms`;
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
