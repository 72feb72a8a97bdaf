// How it works, 3: views and comprehensions. A 4×6 source x holds 0…23 (each element its own
// memory position). Buttons compose transpose, slice, stride and broadcast; the worker
// (tensor_ir.views) applies them with tang.tensor's View, prints the IR and says, for every
// output cell, which source element the graph's read view reaches. Hover or focus a cell of
// the output (arrow keys move) to light the elements it reads, in the matrix and in memory.
import { h } from "../lib/dom.js";
import { tex } from "../lib/tex.js";

const SOURCE = [4, 6];

// Each button: its label and the steps it appends, given the current output shape.
const BUTTONS = [
  { label: "Transpose  .T", title: "swap the axes", steps: () => [{ op: "transpose" }] },
  { label: "Slice  [1:]", title: "drop the first row", steps: () => [{ op: "slice", axis: 0, start: 1 }] },
  { label: "Stride  [..., ::2]", title: "every second element of the last axis",
    steps: () => [{ op: "stride", axis: -1, step: 2 }] },
  { label: "Reverse  [::-1]", title: "the first axis backwards (a negative stride)",
    steps: () => [{ op: "slice", axis: 0, step: -1 }] },
  { label: "Broadcast row 0 ×3", title: "take the first row and repeat it (stride 0)",
    steps: (shape) => shape.length === 1
      ? [{ op: "broadcast", shape: [3, shape[0]] }]
      : [{ op: "slice", axis: 0, start: 0, stop: 1 }, { op: "broadcast", shape: [3, ...shape.slice(1)] }] },
  { label: "Flatten", title: "reshape to one axis: a view when the memory allows, else a copy",
    steps: (shape) => [{ op: "reshape", shape: [shape.reduce((a, b) => a * b, 1)] }] },
];

export default {
  id: "how-views",
  title: "How it works · 3. Views and comprehensions",
  async mount(el, { call, ready }) {
    const status = h("p", { className: "views-status", role: "status" }, "Waiting for Python…");
    const buttons = h("div", { className: "views-buttons", role: "group", "aria-label": "Compose a view" });
    const chain = h("code", { className: "views-chain" });
    const source = h("div", { className: "views-grid views-source", role: "img" });
    const memory = h("div", { className: "views-grid views-memory", role: "img" });
    const output = h("div", { className: "views-grid views-output", role: "grid", "aria-label": "Output cells" });
    const table = h("tbody");
    const ir = h("pre", { className: "views-ir", tabIndex: 0, "aria-label": "Printed IR" });
    const copied = h("strong", { className: "views-copied" });
    const readout = h("p", { className: "views-readout", "aria-live": "polite" });
    el.append(
      h("p", {}, "A view is an affine map from an index to a memory position: offset + Σ stride·index. " +
        "Transposing, slicing, striding and broadcasting only change that map, so they compose " +
        "without copying. A comprehension reads its inputs through such views, one output element " +
        "at a time."),
      tex(String.raw`y_{i_0 i_1} = x\big[\text{offset} + s_0 i_0 + s_1 i_1\big]`,
        { display: true, label: "y[i0, i1] = x[offset + s0·i0 + s1·i1]" }),
      buttons,
      h("p", { className: "views-chain-line" }, "y = ", chain, " · bytes copied: ", copied),
      status,
      h("div", { className: "views-layout" },
        h("figure", {}, h("figcaption", {}, "Source x (4 × 6)"), h("div", { className: "views-scroll" }, source),
          h("figcaption", {}, "x in memory"), h("div", { className: "views-scroll" }, memory)),
        h("figure", {}, h("figcaption", {}, "Output y: hover or focus a cell"),
          h("div", { className: "views-scroll" }, output), readout)),
      h("div", { className: "table-scroll" },
        h("table", { className: "views-table" },
          h("caption", {}, "The view after each step: the same memory, a new map"),
          h("thead", {}, h("tr", {}, ...["step", "shape", "strides", "offset", "copied"].map((t) => h("th", { scope: "col" }, t)))),
          table)),
      h("h3", {}, "The printed IR"),
      ir,
    );
    el.dataset.state = "loading";

    let ops = [];
    let result = null;
    let active = 0;
    const controls = [];
    const undo = h("button", { type: "button", disabled: true }, "Undo");
    const reset = h("button", { type: "button", disabled: true }, "Reset");
    for (const b of BUTTONS) {
      const button = h("button", { type: "button", disabled: true, title: b.title, dataset: { view: b.label.split(" ")[0].toLowerCase() } }, b.label);
      button.addEventListener("click", () => show([...ops, ...b.steps(result.output.shape)]));
      controls.push(button);
      buttons.append(button);
    }
    undo.addEventListener("click", () => show(ops.slice(0, lastStepStart())));
    reset.addEventListener("click", () => show([]));
    buttons.append(undo, reset);
    controls.push(undo, reset);
    const history = [];
    function lastStepStart() {
      return history.length ? history[history.length - 1] : 0;
    }

    function highlight(cell) {
      for (const e of el.querySelectorAll(".views-grid .lit, .views-output .on")) e.classList.remove("lit", "on");
      if (cell === null || !result) {
        readout.textContent = "";
        return;
      }
      const [r, c] = result.reads[cell];
      const position = r * SOURCE[1] + c;
      output.querySelector(`[data-cell="${cell}"]`)?.classList.add("on");
      source.querySelector(`[data-index="${r},${c}"]`)?.classList.add("lit");
      memory.querySelector(`[data-position="${position}"]`)?.classList.add("lit");
      readout.textContent = `y${bracket(unravel(cell, result.output.shape))} reads x[${r}, ${c}], ` +
        `memory position ${position}`;
    }

    async function show(next) {
      for (const b of controls) b.disabled = true;
      status.classList.remove("bad");
      try {
        const out = await call("tensor_ir.views", { shape: SOURCE, ops: next });
        if (next.length > ops.length) history.push(ops.length);
        else while (history.length && history[history.length - 1] >= next.length) history.pop();
        ops = next;
        result = out;
        el.dataset.ops = JSON.stringify(ops); // what the page asked for (tests compare)
        render();
        status.textContent = "";
      } catch (err) {
        status.textContent = `That step does not apply here: ${err.message}`;
        status.classList.add("bad");
      } finally {
        for (const b of controls) b.disabled = false;
        undo.disabled = ops.length === 0;
        reset.disabled = ops.length === 0;
      }
    }

    function render() {
      const steps = result.steps;
      chain.textContent = steps.map((s) => s.label).join("");
      copied.textContent = String(result.bytes_copied);
      source.replaceChildren(...grid(SOURCE, (i) => {
        const [r, c] = unravel(i, SOURCE);
        return h("span", { className: "cell", dataset: { index: `${r},${c}` } }, String(i));
      }));
      source.setAttribute("aria-label", "the 4 by 6 source, holding 0 to 23");
      memory.replaceChildren(h("div", { className: "views-row" },
        ...Array.from({ length: SOURCE[0] * SOURCE[1] }, (_, p) =>
          h("span", { className: "cell", dataset: { position: String(p) } }, String(p)))));
      memory.setAttribute("aria-label", "x's memory, positions 0 to 23");
      const shape = result.output.shape;
      active = Math.min(active, result.reads.length - 1);
      output.replaceChildren(...grid(shape, (i) => {
        const [r, c] = result.reads[i];
        const cell = h("span", {
          className: "cell", role: "gridcell", tabIndex: i === active ? 0 : -1,
          dataset: { cell: String(i) },
          "aria-label": `y${bracket(unravel(i, shape))} reads x[${r}, ${c}]`,
        }, String(result.output.values[i]));
        cell.addEventListener("mouseenter", () => highlight(i));
        cell.addEventListener("focus", () => {
          active = i;
          highlight(i);
        });
        cell.addEventListener("keydown", (e) => move(e, i, shape));
        return cell;
      }, true));
      output.setAttribute("aria-label", `Output y, shape ${shape.join(" × ")}: each cell reads one source element`);
      table.replaceChildren(...steps.map((s) => h("tr", {},
        h("td", {}, h("code", {}, s.label)),
        h("td", {}, `(${s.shape.join(", ")})`),
        h("td", {}, `(${s.strides.join(", ")})`),
        h("td", {}, String(s.offset)),
        h("td", {}, s.copied ? `${s.copied} elements (a copy: not affine)` : "0"))));
      ir.textContent = result.ir;
      highlight(null);
    }

    function move(e, i, shape) {
      const cols = shape[shape.length - 1];
      const total = result.reads.length;
      const delta = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols, Home: -i, End: total - 1 - i }[e.key];
      if (delta === undefined) return;
      e.preventDefault();
      const next = i + delta;
      if (next < 0 || next >= total) return;
      const cell = output.querySelector(`[data-cell="${next}"]`);
      output.querySelector(`[data-cell="${i}"]`).tabIndex = -1;
      cell.tabIndex = 0;
      cell.focus();
    }
    output.addEventListener("mouseleave", () => {
      if (!output.contains(document.activeElement)) highlight(null);
    });
    output.addEventListener("focusout", (e) => {
      if (!output.contains(e.relatedTarget)) highlight(null);
    });

    try {
      await ready;
    } catch {
      el.dataset.state = "error";
      status.textContent = "Python did not start, so there is nothing to show.";
      return;
    }
    status.textContent = "Composing…";
    await show([{ op: "transpose" }]);
    if (result) await show([...ops, { op: "slice", axis: 0, start: 1 }]); // one undo step each
    el.dataset.state = result ? "done" : "error";
  },
};

/** Rows of cells for a shape (the last axis across; earlier axes flattened into rows). */
function grid(shape, makeCell, isGrid = false) {
  const cols = shape[shape.length - 1];
  const rows = shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return Array.from({ length: rows }, (_, r) => h("div", { className: "views-row", ...(isGrid ? { role: "row" } : {}) },
    ...Array.from({ length: cols }, (_, c) => makeCell(r * cols + c))));
}

function unravel(flat, shape) {
  const out = [];
  for (let a = shape.length - 1; a >= 0; a--) {
    out.unshift(flat % shape[a]);
    flat = Math.floor(flat / shape[a]);
  }
  return out;
}

const bracket = (index) => `[${index.join(", ")}]`;
