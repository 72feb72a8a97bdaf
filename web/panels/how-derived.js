// How it works, 4: optimisations are derived. softmax(q kᵀ/√d) v as written (a comprehension
// per step, each writing its buffer) next to what fuse + stabilize_softmax derive from it:
// one reduction whose state (running max m, running sum l, accumulator acc) is updated key by
// key. Everything comes from the worker (tensor_ir.attention): the printed IR of both, the
// buffers each writes per query row, the as-written intermediates, and the derived monoid
// folded one key at a time by tang's evaluator. Play/Step walk the keys; the loop pauses off
// screen (web/lib/loop.js animate). Hover or focus a key to light it in both columns.
import { h, svg } from "../lib/dom.js";
import { fmt, num } from "../lib/format.js";
import { animate } from "../lib/loop.js";
import { tex } from "../lib/tex.js";

const N = 8;
const D = 4;
const QUERIES = 4;
const SECONDS_PER_KEY = 0.8;
const W = 320; // the plot's viewBox
const H = 96;
const PAD = 10;

export default {
  id: "how-derived",
  title: "How it works · 4. Optimisations are derived",
  async mount(el, { call, ready }) {
    const status = h("p", { className: "derived-status", role: "status" }, "Waiting for Python…");
    const row = h("select", { id: "derived-row", disabled: true },
      ...Array.from({ length: QUERIES }, (_, i) => h("option", { value: String(i) }, `query row ${i}`)));
    const play = h("button", { type: "button", className: "primary", disabled: true, "aria-pressed": "false" }, "Play");
    const step = h("button", { type: "button", disabled: true }, "Step");
    const reset = h("button", { type: "button", disabled: true }, "Reset");
    const fresh = h("button", { type: "button", disabled: true }, "New example");
    const counter = h("output", { className: "derived-counter", "aria-live": "polite" }, "");
    const writtenMemory = h("p", { className: "derived-memory" });
    const derivedMemory = h("p", { className: "derived-memory" });
    const writtenHead = h("tr");
    const writtenRows = h("tbody");
    const writtenRest = h("p", { className: "derived-rest" });
    const traceHead = h("tr");
    const trace = h("tbody");
    const writtenIr = h("pre", { className: "derived-ir", tabIndex: 0 });
    const derivedIr = h("pre", { className: "derived-ir", tabIndex: 0 });
    const outputs = h("dl", { className: "readouts derived-outputs" });
    const plot = svg("svg", { class: "derived-plot", viewBox: `0 0 ${W} ${H}`, role: "img" });
    el.append(
      h("p", {}, "Attention is written once, as comprehensions: scores, their max, the exponentials, " +
        "their sum, the probabilities, the weighted sum. Two generic passes rewrite it. fuse reads " +
        "producers in place; stabilize_softmax turns max + exp-sum + weighted sum over the keys " +
        "into one reduction with an associative combine. No pass names an op. Step through the keys " +
        "of one query row: on the left the buffers the written form stores, on the right the state " +
        "the derived form carries instead."),
      tex(String.raw`m' = \max(m, s),\quad \ell' = \ell\, e^{m-m'} + e^{s-m'},\quad ` +
        String.raw`\mathit{acc}' = \mathit{acc}\, e^{m-m'} + e^{s-m'}\, v,\qquad o = \mathit{acc} / \ell`,
      { display: true, label: "m′ = max(m, s), ℓ′ = ℓ·e^(m−m′) + e^(s−m′), acc′ = acc·e^(m−m′) + e^(s−m′)·v, o = acc / ℓ" }),
      h("div", { className: "derived-controls" }, row, play, step, reset, fresh, counter),
      status,
      h("div", { className: "derived-layout" },
        h("section", { "aria-label": "As written" },
          h("h3", {}, "As written"), writtenMemory,
          h("div", { className: "table-scroll" }, h("table", { className: "derived-table derived-written" },
            h("caption", {}, "This query row's n-long buffers, one comprehension each, all in memory"),
            h("thead", {}, writtenHead), writtenRows)), writtenRest),
        h("section", { "aria-label": "Derived" },
          h("h3", {}, "Derived: one online reduction"), derivedMemory, plot,
          h("p", { className: "derived-legend" }, h("span", { className: "dot" }, "●"), " score s of each key, ",
            h("span", { className: "max" }, "━"), " running max m: when it rises, l and acc are rescaled"),
          h("div", { className: "table-scroll" }, h("table", { className: "derived-table derived-trace" },
            h("caption", {}, "The state after each key, folded by the derived comprehension's combine"),
            h("thead", {}, traceHead), trace)))),
      outputs,
      h("div", { className: "derived-irs" },
        h("figure", {}, h("figcaption", {}, "Printed IR, as written"), writtenIr),
        h("figure", {}, h("figcaption", {}, "Printed IR, after fuse and stabilize_softmax"), derivedIr)),
    );
    el.dataset.state = "loading";

    let data = null;
    let keys = 0; // keys folded so far, 0…N
    let seed = 4;
    let loop = null;
    let clock = 0;

    function setPlaying(on) {
      if (on && !loop) {
        if (keys >= data.n) setKeys(0);
        clock = 0;
        loop = animate(el, (_t, dt) => {
          clock += dt;
          if (clock < SECONDS_PER_KEY) return;
          clock = 0;
          setKeys(keys + 1);
          if (keys >= data.n) setPlaying(false);
        });
      } else if (!on && loop) {
        loop.stop();
        loop = null;
      }
      play.textContent = loop ? "Pause" : "Play";
      play.setAttribute("aria-pressed", loop ? "true" : "false");
    }

    function setKeys(k) {
      keys = Math.max(0, Math.min(data.n, k));
      el.dataset.keys = String(keys);
      drawState();
      counter.textContent = keys === 0 ? `no key yet (state = identity)` : `key ${keys - 1} folded (${keys} of ${data.n})`;
      for (const tr of trace.children) {
        const j = Number(tr.dataset.key);
        tr.hidden = j >= keys;
        tr.classList.toggle("current", j === keys - 1);
      }
      for (const tr of writtenRows.children) {
        tr.classList.toggle("current", Number(tr.dataset.key) === keys - 1);
      }
      const last = data.derived.steps[keys - 1];
      outputs.replaceChildren(
        h("dt", {}, "As written, o ="), h("dd", {}, vector(data.written.output)),
        h("dt", {}, keys < data.n ? `Derived so far, acc / l =` : "Derived, acc / l ="),
        h("dd", { dataset: { final: String(keys === data.n) } },
          last ? vector(last.acc.map((a) => num(a) / num(last.l))) : "(no key yet)"),
        h("dt", {}, "Largest difference"),
        h("dd", {}, keys === data.n ? fmt(data.max_difference) : "after the last key"));
    }

    // the scores s (dots, filled once folded) and the running max m (the line), from the trace
    function drawPlot() {
      const steps = data.derived.steps;
      const scores = steps.map((s) => num(s.score)).filter(Number.isFinite);
      const lo = Math.min(...scores);
      const hi = Math.max(...scores);
      const x = (j) => PAD + (j * (W - 2 * PAD)) / Math.max(1, steps.length - 1);
      const y = (v) => H - PAD - ((v - lo) / (hi - lo || 1)) * (H - 2 * PAD);
      plot.replaceChildren(
        svg("line", { class: "axis", x1: PAD, x2: W - PAD, y1: H - 4, y2: H - 4 }),
        svg("path", { class: "running-max", d: "" }),
        ...steps.map((s) => {
          const dot = svg("circle", { cx: x(s.key), cy: y(num(s.score)), r: 5, "data-key": s.key },
            svg("title", {}, `key ${s.key}: s = ${fmt(s.score, 4)}`));
          dot.addEventListener("mouseenter", () => highlightKey(s.key));
          return dot;
        }));
      plot.setAttribute("aria-label", `The ${steps.length} scores of query row ${data.row} and ` +
        "the running max m after each key");
      plot.dataset.x = JSON.stringify(steps.map((s) => x(s.key)));
      plot.dataset.y = JSON.stringify(steps.map((s) => y(num(s.m))));
    }

    function drawState() {
      const xs = JSON.parse(plot.dataset.x);
      const ys = JSON.parse(plot.dataset.y);
      let d = "";
      for (let j = 0; j < keys; j++) d += `${j ? "H" : "M"}${xs[j]} ${j ? `V${ys[j]}` : ys[j]}`;
      plot.querySelector(".running-max").setAttribute("d", d);
      for (const dot of plot.querySelectorAll("circle")) {
        const j = Number(dot.dataset.key);
        dot.setAttribute("class", j < keys - 1 ? "done" : j === keys - 1 ? "current" : "pending");
      }
    }

    function highlightKey(j) {
      for (const e of el.querySelectorAll(".derived-table .lit, .derived-plot .lit")) e.classList.remove("lit");
      if (j === null) return;
      for (const e of el.querySelectorAll(`.derived-table [data-key="${j}"], .derived-plot [data-key="${j}"]`)) {
        e.classList.add("lit");
      }
    }

    function keyCell(tag, j, text, extra = {}) {
      const cell = h(tag, { dataset: { key: String(j) }, ...extra }, text);
      cell.addEventListener("mouseenter", () => highlightKey(j));
      return cell;
    }

    function render() {
      const { n, d } = data;
      const mem = (m) => `${m.elements} values (${m.bytes} bytes at f32) per query row: ` +
        m.buffers.map((b) => `${b.name} ${b.per_row}`).join(" + ");
      writtenMemory.textContent = `Writes ${mem(data.written.memory)}.`;
      derivedMemory.textContent = `Writes ${mem(data.derived.memory)}. (fuse alone: ` +
        `${data.fused.memory.elements} values.)`;
      writtenMemory.dataset.elements = String(data.written.memory.elements);
      derivedMemory.dataset.elements = String(data.derived.memory.elements);
      // the buffers with one value per key become columns; the rest are listed below
      const perKey = data.written.buffers.filter((b) => b.values.length === n);
      const rest = data.written.buffers.filter((b) => b.values.length !== n);
      writtenHead.replaceChildren(h("th", { scope: "col" }, "key"),
        ...perKey.map((b) => h("th", { scope: "col" }, h("code", {}, b.name))));
      writtenRows.replaceChildren(...Array.from({ length: n }, (_, j) => {
        const tr = keyCell("tr", j, null, { tabIndex: 0 });
        tr.addEventListener("focus", () => highlightKey(j));
        tr.append(h("th", { scope: "row" }, String(j)),
          ...perKey.map((b) => h("td", { className: "num" }, fmt(b.values[j], 4))));
        return tr;
      }));
      writtenRest.textContent = "Also written: " + rest.map((b) =>
        `${b.name} = ${b.values.length === 1 ? fmt(b.values[0], 4) : vector(b.values, 4)}`).join(", ") + ".";
      traceHead.replaceChildren(...["key", "s", "m", "l", ...Array.from({ length: d }, (_, e) => `acc${e}`)]
        .map((t) => h("th", { scope: "col" }, t)));
      let previous = -Infinity;
      trace.replaceChildren(...data.derived.steps.map((s) => {
        const moved = num(s.m) > previous;
        previous = num(s.m);
        const tr = keyCell("tr", s.key, null, {
          tabIndex: 0, hidden: true, dataset: { key: String(s.key), m: JSON.stringify(s.m), l: JSON.stringify(s.l), acc: JSON.stringify(s.acc) },
        });
        tr.addEventListener("focus", () => highlightKey(s.key));
        tr.append(h("th", { scope: "row" }, String(s.key)),
          h("td", { className: "num" }, fmt(s.score, 4)),
          h("td", { className: moved ? "num moved" : "num", title: moved ? "the running max moved: l and acc are rescaled" : "" }, fmt(s.m, 4)),
          h("td", { className: "num" }, fmt(s.l, 4)),
          ...s.acc.map((a) => h("td", { className: "num" }, fmt(a, 3))));
        return tr;
      }));
      drawPlot();
      writtenIr.textContent = data.written.ir;
      derivedIr.textContent = data.derived.ir;
      setKeys(keys);
    }

    async function load() {
      setPlaying(false);
      for (const b of [row, play, step, reset, fresh]) b.disabled = true;
      status.textContent = "Deriving…";
      status.classList.remove("bad");
      try {
        data = await call("tensor_ir.attention", { n: N, d: D, queries: QUERIES, row: Number(row.value), seed });
      } catch (err) {
        status.textContent = `The worker failed: ${err.message}`;
        status.classList.add("bad");
        el.dataset.state = "error";
        return;
      }
      el.dataset.row = row.value;
      el.dataset.seed = String(seed);
      keys = 0;
      render();
      status.textContent = `n = ${data.n} keys, d = ${data.d}, query row ${data.row} of ${data.queries}.`;
      for (const b of [row, play, step, reset, fresh]) b.disabled = false;
      el.dataset.state = "done";
    }

    play.addEventListener("click", () => setPlaying(!loop));
    step.addEventListener("click", () => {
      setPlaying(false);
      setKeys(keys >= data.n ? 0 : keys + 1);
    });
    reset.addEventListener("click", () => {
      setPlaying(false);
      setKeys(0);
    });
    fresh.addEventListener("click", () => {
      seed += 1;
      load();
    });
    row.addEventListener("change", load);
    el.addEventListener("mouseleave", () => highlightKey(null));

    try {
      await ready;
    } catch {
      el.dataset.state = "error";
      status.textContent = "Python did not start, so there is nothing to derive.";
      return;
    }
    await load();
  },
};

const vector = (values, digits = 6) => `[${values.map((v) => fmt(v, digits)).join(", ")}]`;
