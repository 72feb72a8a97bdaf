// The Run panel's DOM (web/panels/run.js is its controller): controls, sliders, progress,
// two plots with a robust y range, and the facts: device, the check against the CPU in one
// stated tolerance model (demos/_gpu_check.py), time.
import { h } from "../lib/dom.js";
import { fmt, fmtErr } from "../lib/format.js";
import { drawPlot, onResize, robustRange } from "../lib/plot.js";

export const SAMPLES = [1024, 16384, 262144, 1048576, 4194304];
export const count = (n) => n.toLocaleString("en");

/** `text` as text nodes that a narrow card wraps at its spaces and, inside a run of more than
 * 12 characters without one, after an operator or comma (a <wbr>): never inside a name. */
export function breakAfterOperators(text) {
  const ops = /(\*\*|[*/+,=]|(?<![\d.][eE])-)/;
  return text.split(/( +)/).flatMap((word, w) => (w % 2 || word.length <= 12 ? [word]
    : word.split(ops).flatMap((part, i) => (i % 2 ? [part, h("wbr")] : [part]))))
    .filter((part) => part !== "");
}

/** Build the panel in `el`; returns its parts and the functions that show things. */
export function runView(el) {
  const exprText = h("code", { className: "run-expr" });
  const axisSel = h("select", { id: "run-axis", "aria-label": "Plot along" });
  const number = (id, value, label) => h("input", { id, type: "number", value, step: "any", "aria-label": label });
  const lo = number("run-lo", "-4", "From");
  const hi = number("run-hi", "4", "To");
  const samples = h("select", { id: "run-samples", "aria-label": "Samples" });
  for (const n of SAMPLES) samples.append(h("option", { value: String(n), selected: n === 16384 }, count(n)));
  const runBtn = h("button", { type: "button", className: "primary", id: "run-go", disabled: true }, "Run");
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
  const intro = h("p", { className: "run-intro" }, introText(null));
  // shown while the plots and facts are of inputs other than those above (see run.js)
  const staleNote = h("p", { className: "run-stale-note", role: "status", hidden: true });
  // what the check's verdict links to; shown once a GPU run is checked
  const adapterNote = h("p", { className: "run-note", id: "run-adapter-note", hidden: true },
    "About the check: the GPU computes in f32 and tang's CPU path in f64, so each value may " +
    "differ by f32 rounding; the tolerance above allows for it. SwiftShader, the software " +
    "WebGPU that Chromium uses when it has no GPU driver, computes sin and cos with its own " +
    "approximations, about 2e-4 off (absolute) for |x| up to 100: far more than rounding. " +
    "Where the expression uses them, the check counts such points as SwiftShader's and " +
    "says how many, instead of hiding them or calling them errors.");
  el.append(
    intro,
    h("p", { className: "run-what" }, exprText),
    h("div", { className: "run-controls" },
      h("label", {}, "along ", axisSel), h("label", {}, "from ", lo), h("label", {}, "to ", hi),
      h("label", {}, "samples ", samples), runBtn, stopBtn),
    sliders,
    h("div", { className: "run-progress" }, progress, status),
    staleNote,
    h("figure", { className: "run-plots" },
      h("figcaption", {}, labelF), canvasF, h("figcaption", {}, labelD), canvasD),
    facts,
    adapterNote,
  );
  el.dataset.state = "loading";
  let shown = null;
  const draw = () => {
    if (!shown) return;
    const { x0, x1, f, d } = shown;
    for (const [canvas, [blo, bhi], color] of [[canvasF, f, "#4f46e5"], [canvasD, d, "#d97706"]]) {
      const series = [{ lo: blo, hi: bhi, color }];
      const { range, clipped } = robustRange(series);
      const drawn = drawPlot(canvas, { x0, x1, series, yRange: range });
      canvas.dataset.clipped = String(clipped && drawn.spikes > 0);
      canvas.dataset.area = JSON.stringify(drawn.area);
    }
  };
  onResize(canvasF, draw);

  return {
    exprText, axisSel, lo, hi, samples, runBtn, stopBtn, sliders, progress, canvasF, fact,
    showExpr: (text) => exprText.replaceChildren(...breakAfterOperators(text)),
    setState(s, text) {
      el.dataset.state = s;
      if (text !== undefined) status.textContent = text;
      status.classList.toggle("bad", s === "error");
    },
    /** Which device ran the run shown, in the Device fact and in the intro. */
    showDevice(r) {
      fact.device.textContent = deviceText(r);
      intro.textContent = introText(r);
      adapterNote.hidden = r.device === "cpu";
    },
    /** `text`: why the plots and facts shown are not of the inputs shown (null: they are);
     * they are dimmed, and the note says why when `explain`. */
    markStale(text, explain = true) {
      el.classList.toggle("stale", text !== null);
      staleNote.hidden = text === null || !explain;
      staleNote.textContent = text ?? "";
    },
    /** Plot a run ({x0, x1, f: [lo, hi], d: [lo, hi]} per bin). */
    plot(run) {
      shown = run;
      draw();
    },
    /** The inputs in the axis menu, `axis` chosen; the legends name `fn`, the function. */
    syncAxis(names, axis, fn = "f") {
      if (axisSel.dataset.names !== names.join(",")) {
        axisSel.dataset.names = names.join(",");
        axisSel.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
      }
      axisSel.value = axis;
      labelF.textContent = fn;
      canvasF.setAttribute("aria-label", fn);
      labelD.textContent = `∂${fn}/∂${axis}`;
      canvasD.setAttribute("aria-label", `Plot of ∂${fn}/∂${axis}`);
    },
    /** One slider per input other than `axis`, holding `fixed[name]`; `onInput` on a move. */
    syncSliders(names, axis, fixed, onInput) {
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
          onInput();
        });
        sliders.append(h("label", {}, `${name} = `, input, out));
      }
    },
    showCheck(c, done) {
      const { text, kind } = checkText(c, done);
      fact.check.replaceChildren(text);
      if (c?.adapter) {
        const why = c.adapter_name === "swiftshader" ? "why SwiftShader is off" : "about the check";
        fact.check.append(" (", h("a", { href: `#${adapterNote.id}` }, why), ")");
      }
      fact.check.classList.remove("good", "warn", "bad");
      if (kind) fact.check.classList.add(kind);
      fact.check.dataset.verdict = c ? c.verdict : "none";
    },
  };
}

/** What the card does, as the device of the run `r` allows (null: no run answered yet). */
export function introText(r) {
  const what = "The expression from the editor and its derivative along one variable, the " +
    "others held by the sliders: ";
  if (!r) {
    return what + "tang's generated WGSL kernel runs on WebGPU in this page when the browser " +
      "offers an adapter, each point checked against tang's CPU path; without one, the CPU " +
      "path computes it.";
  }
  if (r.device !== "cpu") {
    return what + "tang's generated WGSL kernel runs on WebGPU in this page, and every point " +
      "is checked against tang's CPU path.";
  }
  return what + "this browser gave no usable WebGPU adapter (see Device), so tang's CPU path " +
    "computes every point in Python in the page's worker; with one path there is nothing to " +
    "check it against.";
}

/** The device line: which adapter ran it, or why the CPU did. */
export function deviceText(r) {
  if (r.device === "browser") return `WebGPU: ${r.device_name}`;
  if (r.device === "native") return `wgpu-py: ${r.device_name}`;
  const why = r.fallback ?? r.report.filter((l) => !l.startsWith("using")).join("; ");
  if (/no adapter|not available|navigator\.gpu/i.test(why)) return "no WebGPU adapter — ran on the CPU";
  return `ran on the CPU${why ? ` (WebGPU: ${why})` : ""}`;
}

const ADAPTERS = { swiftshader: "SwiftShader's own sin/cos" };

/** The check in words: the verdict, the tolerance model with its numbers, the worst point,
 * and the cause of what lies outside the tolerance when one is known. */
export function checkText(c, done) {
  if (!c) return { text: "nothing to check: the CPU computed it", kind: null };
  const model = `|GPU − CPU| ≤ ${fmtErr(c.atol)} + ${fmtErr(c.rtol)}·|CPU| (f32)`;
  const w = c.worst;
  const worst = w
    ? `worst at ${w.output === "value" ? "f" : w.output}(${fmt(w.x, 4)}): GPU ${fmt(w.gpu, 7)}, ` +
      `CPU ${fmt(w.cpu, 7)}, ${fmt(100 * w.ratio, 2)}% of the tolerance`
    : "no finite values to compare";
  if (c.verdict === "matches") {
    return { text: `matches the CPU at all ${count(2 * done)} values: ${model}; ${worst}`, kind: "good" };
  }
  const causes = [];
  if (c.singular) {
    causes.push(`${count(c.singular)} near a singularity, where rounding x to f32 alone moves ` +
      "f by |x·f′(x)|·6e-8 and the difference stays within 16 times that");
  }
  if (c.adapter) {
    const math = ADAPTERS[c.adapter_name] ?? `${c.adapter_name}'s own math`;
    const within = c.adapter_tol ? `, each within ${fmtErr(c.adapter_tol)}·(1 + |CPU|)` : "";
    causes.push(`${count(c.adapter)} from ${math}${within}`);
  }
  if (c.unexplained) causes.push(`${count(c.unexplained)} unexplained`);
  if (c.indeterminate) {
    causes.push(`${count(c.indeterminate)} where the CPU's value is NaN (e.g. log of a negative ` +
      "number): WGSL leaves those undefined, and this GPU returns a number");
  }
  if (c.nonfinite_mismatch) causes.push(`${count(c.nonfinite_mismatch)} where only one side is inf/NaN`);
  const e = c.example;
  if (e) causes.push(`e.g. ${e.output === "value" ? "f" : e.output}(${fmt(e.x, 4)}): GPU ${fmt(e.gpu, 7)}, CPU ${fmt(e.cpu, 7)}`);
  const outside = c.outside + c.nonfinite_mismatch + c.indeterminate;
  const head = `differs from the CPU at ${count(outside)} of ${count(2 * done)} values ` +
    `(f and its derivative) beyond ${model}`;
  const within = c.outside ? worst : `elsewhere the ${worst}`;
  return { text: `${head}: ${causes.join("; ")}; ${within}`, kind: c.verdict === "explained" ? "warn" : "bad" };
}
