// The "A transformer" card's DOM (./transformer.js is its controller): Run/Stop, progress,
// the figures the worker measured (demos/transformer.py), the bars comparing the two
// attentions, and the desktop command.
import { readouts } from "../lib/card.js";
import { commandLine } from "../lib/command.js";
import { h } from "../lib/dom.js";
import { fmt, fmtErr } from "../lib/format.js";

const bytes = (b) => (b >= 1 << 20 ? `${fmt(b / 2 ** 20, 3)} MiB` : `${fmt(b / 1024, 3)} KiB`);

/** Time and bytes written as bars, each group scaled to its larger value. */
function drawBars(box, out) {
  box.replaceChildren();
  const groups = [
    ["Time per call (median)", (f) => f.ms, (v) => `${fmt(v, 4)} ms`],
    ["Bytes written per call", (f) => f.bytes_written, (v) => bytes(v)],
  ];
  for (const [title, pick, label] of groups) {
    const most = Math.max(pick(out.naive), pick(out.derived));
    box.append(h("div", { className: "bar-group" }, title));
    for (const [name, key] of [["as written", "naive"], ["derived", "derived"]]) {
      const bar = h("div", { className: `bar ${key}` });
      bar.style.width = `${(100 * pick(out[key])) / most}%`;
      box.append(h("span", {}, name), h("div", { className: "bar-track" }, bar),
        h("span", { className: "bar-value" }, label(pick(out[key]))));
    }
  }
}

/** The autotuner's pick for one graph ([short, detail]); the CPU runs the default plans. */
function tuned(f) {
  const t = f.tuning;
  if (!t) return ["default schedule", `plans: ${f.plans.join(", ")}`];
  const won = t.best === "the default" ? "the default kept its place"
    : `${t.best}, ${fmt(t.speedup, 3)}× the default`;
  return [`schedule tuned here: ${won}`,
    `${t.timed} of ${t.candidates} candidate schedules timed on this device in ` +
    `${fmt(t.seconds, 2)} s; plans: ${f.plans.join(", ")}`];
}

/** Where Run times both graphs: before a run (null) what it will do with and without an
 * adapter; after transformer.start, the device it opened and the size it chose. */
export function introWhere(start) {
  if (!start) {
    return "Run times both on this browser's WebGPU when it offers an adapter; without one, on " +
      "the CPU in the page's worker, at a smaller size.";
  }
  const size = `n = ${start.n.toLocaleString("en")}, d = ${start.d}`;
  if (start.on_gpu) return `Run times both on this browser's WebGPU (${start.device.name}), at ${size}.`;
  return "This browser offered no usable WebGPU adapter, so Run times both on the CPU, in " +
    `Python in the page's worker, at ${size} (the note below says why).`;
}

/** Build the card in `el`; returns {runBtn, stopBtn, progress, say(text, isError), show(answer)}. */
export function transformerView(el, command) {
  const { list, show } = readouts([
    ["Device", "device"], ["Size", "size"], ["Attention as written", "naive"],
    ["Derived (online softmax)", "derived"], ["Speed-up", "ratio"], ["Bytes written", "bytes"],
    ["Op-specific code in the passes", "oplines"], ["CPU check", "check"],
  ]);
  const runBtn = h("button", { type: "button", className: "transformer-run", disabled: true }, "Run");
  const stopBtn = h("button", { type: "button", className: "transformer-stop", disabled: true },
    "Stop");
  const progress = h("progress", { className: "transformer-progress", max: 1, value: 0,
    "aria-label": "Progress of the measurement" });
  const message = h("p", { className: "transformer-message", role: "status" }, "");
  const note = h("p", { className: "transformer-note" }, "");
  const bars = h("div", { className: "transformer-bars", role: "img",
    "aria-label": "Time and bytes written per call: attention as written against derived" });
  const where = h("span", { className: "transformer-where" }, introWhere(null));
  el.append(
    h("p", { className: "demo-what" }, "tang writes attention once, as comprehensions; its " +
      "generic passes (fuse, then stabilize_softmax) derive the online-softmax kernel, whose " +
      "score matrix never reaches memory. ", where),
    h("div", { className: "run-progress" }, runBtn, stopBtn, progress, message),
    bars, list, note, commandLine(command),
  );
  return {
    runBtn, stopBtn, progress,
    /** Say where Run times the two, from transformer.start's answer (the device it opened). */
    sayWhere(start) {
      where.textContent = introWhere(start);
    },
    say(text, isError = false) {
      message.textContent = text;
      message.classList.toggle("error", isError);
    },
    /** The figures of a finished run (transformer.step's last answer). */
    show(out) {
      const ck = out.check;
      show("device", `${out.on_gpu ? "GPU" : "CPU"}: ${out.device.name}`);
      show("size", `n = ${out.n.toLocaleString("en")}, d = ${out.d} (causal, f32)`);
      for (const [key, unit] of [["naive", "kernels"], ["derived", "kernel"]]) {
        const [short, detail] = tuned(out[key]);
        show(key, `${fmt(out[key].ms, 4)} ms · ${out[key].kernels} ${unit} · ${short}`);
        list.querySelector(`[data-readout='${key}']`).title = detail;
      }
      show("ratio", `${fmt(out.ratio, 3)}× (median of ${out.naive.ms_each.length} calls each)`);
      show("bytes", `${bytes(out.naive.bytes_written)} (${fmt(out.naive_bytes_per_n2, 3)}·4n², ` +
        `O(n²)) vs ${bytes(out.derived.bytes_written)} (4·n·d, O(n·d))`);
      show("oplines", `${out.op_specific_lines} lines (${out.pass_files.length} pass modules ` +
        "scanned for op names)");
      const worst = Math.max(ck.derived_error, ck.naive_error, ck.derived_vs_naive);
      const allowed = `${ck.tolerance.toExponential(0)} × ${fmt(ck.scale, 3)}`;
      show("check", `${ck.passed ? "passed" : "FAILED"}: ${ck.rows.length} rows against ` +
        `pure-Python float64, worst error ${fmtErr(worst)} (allowed ${allowed})`);
      list.querySelector("[data-readout='check']").title = ck.rule;
      note.textContent = out.notes.join(" · ");
      drawBars(bars, out);
    },
  };
}
