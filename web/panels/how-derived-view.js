// How it works, 4: the derived-attention figure's DOM (./how-derived.js is its controller):
// the controls, both columns (the as-written buffers, the derived state key by key and its
// plot), the outputs and both printed IRs. Hovering or focusing a key lights it everywhere.
import { h, svg } from "../lib/dom.js";
import { fmt, num } from "../lib/format.js";
import { tex } from "../lib/tex.js";

const W = 320; // the plot's viewBox
const H = 96;
const PAD = 10;

const ONLINE_RULE = String.raw`m' = \max(m, s),\quad \ell' = \ell\, e^{m-m'} + e^{s-m'},\quad ` +
  String.raw`\mathit{acc}' = \mathit{acc}\, e^{m-m'} + e^{s-m'}\, v,\qquad o = \mathit{acc} / \ell`;

/** Build the figure in `el` with `queries` query rows to pick from; returns the controls
 * and `render(data)` / `showKeys(data, keys)` for a tensor_ir.attention answer. */
export function derivedView(el, queries) {
  const p = {
    status: h("p", { className: "derived-status", role: "status" }, "Waiting for Python…"),
    row: h("select", { id: "derived-row", disabled: true },
      ...Array.from({ length: queries }, (_, i) => h("option", { value: String(i) }, `query row ${i}`))),
    play: h("button", { type: "button", className: "primary", disabled: true, "aria-pressed": "false" }, "Play"),
    step: h("button", { type: "button", disabled: true }, "Step"),
    reset: h("button", { type: "button", disabled: true }, "Reset"),
    fresh: h("button", { type: "button", disabled: true }, "New example"),
    counter: h("output", { className: "derived-counter", "aria-live": "polite" }, ""),
    writtenMemory: h("p", { className: "derived-memory" }),
    derivedMemory: h("p", { className: "derived-memory" }),
    writtenHead: h("tr"),
    writtenRows: h("tbody"),
    writtenRest: h("p", { className: "derived-rest" }),
    traceHead: h("tr"),
    trace: h("tbody"),
    writtenIr: h("pre", { className: "derived-ir", tabIndex: 0 }),
    derivedIr: h("pre", { className: "derived-ir", tabIndex: 0 }),
    outputs: h("dl", { className: "readouts derived-outputs" }),
    plot: svg("svg", { class: "derived-plot", viewBox: `0 0 ${W} ${H}`, role: "img" }),
  };
  el.append(
    h("p", {}, "Attention is written once, as comprehensions: scores, their max, the exponentials, " +
      "their sum, the probabilities, the weighted sum. Two generic passes rewrite it. fuse reads " +
      "producers in place; stabilize_softmax turns max + exp-sum + weighted sum over the keys " +
      "into one reduction with an associative combine. No pass names an op. Step through the keys " +
      "of one query row: on the left the buffers the written form stores, on the right the state " +
      "the derived form carries instead."),
    tex(ONLINE_RULE, { display: true, label: "m′ = max(m, s), ℓ′ = ℓ·e^(m−m′) + e^(s−m′), acc′ = acc·e^(m−m′) + e^(s−m′)·v, o = acc / ℓ" }),
    h("div", { className: "derived-controls" }, p.row, p.play, p.step, p.reset, p.fresh, p.counter),
    p.status,
    h("div", { className: "derived-layout" },
      h("section", { "aria-label": "As written" },
        h("h3", {}, "As written"), p.writtenMemory,
        h("div", { className: "table-scroll" }, h("table", { className: "derived-table derived-written" },
          h("caption", {}, "This query row's n-long buffers, one comprehension each, all in memory"),
          h("thead", {}, p.writtenHead), p.writtenRows)), p.writtenRest),
      h("section", { "aria-label": "Derived" },
        h("h3", {}, "Derived: one online reduction"), p.derivedMemory, p.plot,
        h("p", { className: "derived-legend" }, h("span", { className: "dot" }, "●"), " score s of each key, ",
          h("span", { className: "max" }, "━"), " running max m: when it rises, l and acc are rescaled"),
        h("div", { className: "table-scroll" }, h("table", { className: "derived-table derived-trace" },
          h("caption", {}, "The state after each key, folded by the derived comprehension's combine"),
          h("thead", {}, p.traceHead), p.trace)))),
    p.outputs,
    h("div", { className: "derived-irs" },
      h("figure", {}, h("figcaption", {}, "Printed IR, as written"), p.writtenIr),
      h("figure", {}, h("figcaption", {}, "Printed IR, after fuse and stabilize_softmax"), p.derivedIr)),
  );
  el.addEventListener("mouseleave", () => highlightKey(el, null));
  const keyCell = (tag, j, extra = {}) => {
    const cell = h(tag, { dataset: { key: String(j) }, ...extra });
    cell.addEventListener("mouseenter", () => highlightKey(el, j));
    cell.addEventListener("focus", () => highlightKey(el, j));
    return cell;
  };
  return {
    ...p,
    controls: [p.row, p.play, p.step, p.reset, p.fresh],
    render: (data) => renderData(el, p, data, keyCell),
    showKeys: (data, keys) => showKeys(p, data, keys),
  };
}

/** Light key `j` (null: none) in both tables and the plot. */
function highlightKey(el, j) {
  for (const e of el.querySelectorAll(".derived-table .lit, .derived-plot .lit")) e.classList.remove("lit");
  if (j === null) return;
  for (const e of el.querySelectorAll(`.derived-table [data-key="${j}"], .derived-plot [data-key="${j}"]`)) {
    e.classList.add("lit");
  }
}

/** Everything that does not change while stepping: memory, the written buffers, the trace's
 * rows (hidden until folded), the plot's dots and both IRs. */
function renderData(el, p, data, keyCell) {
  const { n, d } = data;
  const mem = (m) => `${m.elements} values (${m.bytes} bytes at f32) per query row: ` +
    m.buffers.map((b) => `${b.name} ${b.per_row}`).join(" + ");
  p.writtenMemory.textContent = `Writes ${mem(data.written.memory)}.`;
  p.derivedMemory.textContent = `Writes ${mem(data.derived.memory)}. (fuse alone: ` +
    `${data.fused.memory.elements} values.)`;
  p.writtenMemory.dataset.elements = String(data.written.memory.elements);
  p.derivedMemory.dataset.elements = String(data.derived.memory.elements);
  // the buffers with one value per key become columns; the rest are listed below
  const perKey = data.written.buffers.filter((b) => b.values.length === n);
  const rest = data.written.buffers.filter((b) => b.values.length !== n);
  p.writtenHead.replaceChildren(h("th", { scope: "col" }, "key"),
    ...perKey.map((b) => h("th", { scope: "col" }, h("code", {}, b.name))));
  p.writtenRows.replaceChildren(...Array.from({ length: n }, (_, j) => {
    const tr = keyCell("tr", j, { tabIndex: 0 });
    tr.append(h("th", { scope: "row" }, String(j)),
      ...perKey.map((b) => h("td", { className: "num" }, fmt(b.values[j], 4))));
    return tr;
  }));
  p.writtenRest.textContent = "Also written: " + rest.map((b) =>
    `${b.name} = ${b.values.length === 1 ? fmt(b.values[0], 4) : vector(b.values, 4)}`).join(", ") + ".";
  p.traceHead.replaceChildren(...["key", "s", "m", "l", ...Array.from({ length: d }, (_, e) => `acc${e}`)]
    .map((t) => h("th", { scope: "col" }, t)));
  let previous = -Infinity;
  p.trace.replaceChildren(...data.derived.steps.map((s) => {
    const moved = num(s.m) > previous;
    previous = num(s.m);
    const tr = keyCell("tr", s.key, {
      tabIndex: 0, hidden: true, dataset: { key: String(s.key), m: JSON.stringify(s.m), l: JSON.stringify(s.l), acc: JSON.stringify(s.acc) },
    });
    tr.append(h("th", { scope: "row" }, String(s.key)),
      h("td", { className: "num" }, fmt(s.score, 4)),
      h("td", { className: moved ? "num moved" : "num", title: moved ? "the running max moved: l and acc are rescaled" : "" }, fmt(s.m, 4)),
      h("td", { className: "num" }, fmt(s.l, 4)),
      ...s.acc.map((a) => h("td", { className: "num" }, fmt(a, 3))));
    return tr;
  }));
  drawScores(el, p.plot, data);
  p.writtenIr.textContent = data.written.ir;
  p.derivedIr.textContent = data.derived.ir;
}

/** The scores s (dots, filled once folded) and, in showKeys, the running max m (the line). */
function drawScores(el, plot, data) {
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
      dot.addEventListener("mouseenter", () => highlightKey(el, s.key));
      return dot;
    }));
  plot.setAttribute("aria-label", `The ${steps.length} scores of query row ${data.row} and ` +
    "the running max m after each key");
  plot.dataset.x = JSON.stringify(steps.map((s) => x(s.key)));
  plot.dataset.y = JSON.stringify(steps.map((s) => y(num(s.m))));
}

/** The figure after `keys` keys are folded: the plot's line and dots, the counter, the
 * trace rows shown so far, the current row in both tables, and the outputs. */
function showKeys(p, data, keys) {
  const xs = JSON.parse(p.plot.dataset.x);
  const ys = JSON.parse(p.plot.dataset.y);
  let d = "";
  for (let j = 0; j < keys; j++) d += `${j ? "H" : "M"}${xs[j]} ${j ? `V${ys[j]}` : ys[j]}`;
  p.plot.querySelector(".running-max").setAttribute("d", d);
  for (const dot of p.plot.querySelectorAll("circle")) {
    const j = Number(dot.dataset.key);
    dot.setAttribute("class", j < keys - 1 ? "done" : j === keys - 1 ? "current" : "pending");
  }
  p.counter.textContent = keys === 0 ? `no key yet (state = identity)` : `key ${keys - 1} folded (${keys} of ${data.n})`;
  for (const tr of p.trace.children) {
    const j = Number(tr.dataset.key);
    tr.hidden = j >= keys;
    tr.classList.toggle("current", j === keys - 1);
  }
  for (const tr of p.writtenRows.children) {
    tr.classList.toggle("current", Number(tr.dataset.key) === keys - 1);
  }
  const last = data.derived.steps[keys - 1];
  p.outputs.replaceChildren(
    h("dt", {}, "As written, o ="), h("dd", {}, vector(data.written.output)),
    h("dt", {}, keys < data.n ? `Derived so far, acc / l =` : "Derived, acc / l ="),
    h("dd", { dataset: { final: String(keys === data.n) } },
      last ? vector(last.acc.map((a) => num(a) / num(last.l))) : "(no key yet)"),
    h("dt", {}, "Largest difference"),
    h("dd", {}, keys === data.n ? fmt(data.max_difference) : "after the last key"));
}

const vector = (values, digits = 6) => `[${values.map((v) => fmt(v, digits)).join(", ")}]`;
