// How it works, 3: the views figure's DOM (./how-views.js is its controller): the buttons,
// the source matrix and its memory, the output grid (hover, focus and arrow keys light what
// a cell reads), the table of views after each step and the printed IR.
import { h } from "../lib/dom.js";
import { tex } from "../lib/tex.js";

/** Build the figure in `el` for a source of `shape` (2-D) and one button per entry of
 * `buttons` ({label, title}); returns its parts, `render(result)` for a tensor_ir.views
 * answer, and `setBusy(busy, canUndo)`. */
export function viewsView(el, shape, buttons) {
  const parts = {
    status: h("p", { className: "views-status", role: "status" }, "Waiting for Python…"),
    chain: h("code", { className: "views-chain" }),
    source: h("div", { className: "views-grid views-source", role: "img" }),
    memory: h("div", { className: "views-grid views-memory", role: "img" }),
    output: h("div", { className: "views-grid views-output", role: "grid", "aria-label": "Output cells" }),
    table: h("tbody"),
    ir: h("pre", { className: "views-ir", tabIndex: 0, "aria-label": "Printed IR" }),
    copied: h("strong", { className: "views-copied" }),
    readout: h("p", { className: "views-readout", "aria-live": "polite" }),
    stepButtons: buttons.map((b) => h("button", {
      type: "button", disabled: true, title: b.title, dataset: { view: b.label.split(" ")[0].toLowerCase() },
    }, b.label)),
    undo: h("button", { type: "button", disabled: true }, "Undo"),
    reset: h("button", { type: "button", disabled: true }, "Reset"),
  };
  const { status, chain, source, memory, output, table, ir, copied, readout } = parts;
  const group = h("div", { className: "views-buttons", role: "group", "aria-label": "Compose a view" },
    ...parts.stepButtons, parts.undo, parts.reset);
  el.append(
    h("p", {}, "A view is an affine map from an index to a memory position: offset + Σ stride·index. " +
      "Transposing, slicing, striding and broadcasting only change that map, so they compose " +
      "without copying. A comprehension reads its inputs through such views, one output element " +
      "at a time."),
    tex(String.raw`y_{i_0 i_1} = x\big[\text{offset} + s_0 i_0 + s_1 i_1\big]`,
      { display: true, label: "y[i0, i1] = x[offset + s0·i0 + s1·i1]" }),
    group,
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

  let result = null;
  let active = 0; // the output cell that is the grid's tab stop

  /** Light output `cell`, the source element it reads and that element's memory position. */
  function highlight(cell) {
    for (const e of el.querySelectorAll(".views-grid .lit, .views-output .on")) e.classList.remove("lit", "on");
    if (cell === null || !result) {
      readout.textContent = "";
      return;
    }
    const [r, c] = result.reads[cell];
    const position = r * shape[1] + c;
    output.querySelector(`[data-cell="${cell}"]`)?.classList.add("on");
    source.querySelector(`[data-index="${r},${c}"]`)?.classList.add("lit");
    memory.querySelector(`[data-position="${position}"]`)?.classList.add("lit");
    readout.textContent = `y${bracket(unravel(cell, result.output.shape))} reads x[${r}, ${c}], ` +
      `memory position ${position}`;
  }

  /** Arrow keys, Home and End move the focus across the output grid. */
  function move(e, i, outShape) {
    const cols = outShape[outShape.length - 1];
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

  function outputCell(i, outShape) {
    const [r, c] = result.reads[i];
    const cell = h("span", {
      className: "cell", role: "gridcell", tabIndex: i === active ? 0 : -1,
      dataset: { cell: String(i) },
      "aria-label": `y${bracket(unravel(i, outShape))} reads x[${r}, ${c}]`,
    }, String(result.output.values[i]));
    cell.addEventListener("mouseenter", () => highlight(i));
    cell.addEventListener("focus", () => {
      active = i;
      highlight(i);
    });
    cell.addEventListener("keydown", (e) => move(e, i, outShape));
    return cell;
  }

  function render(next) {
    result = next;
    const steps = result.steps;
    chain.textContent = steps.map((s) => s.label).join("");
    copied.textContent = String(result.bytes_copied);
    source.replaceChildren(...grid(shape, (i) => {
      const [r, c] = unravel(i, shape);
      return h("span", { className: "cell", dataset: { index: `${r},${c}` } }, String(i));
    }));
    source.setAttribute("aria-label", "the 4 by 6 source, holding 0 to 23");
    memory.replaceChildren(h("div", { className: "views-row" },
      ...Array.from({ length: shape[0] * shape[1] }, (_, p) =>
        h("span", { className: "cell", dataset: { position: String(p) } }, String(p)))));
    memory.setAttribute("aria-label", "x's memory, positions 0 to 23");
    const outShape = result.output.shape;
    active = Math.min(active, result.reads.length - 1);
    output.replaceChildren(...grid(outShape, (i) => outputCell(i, outShape), true));
    output.setAttribute("aria-label", `Output y, shape ${outShape.join(" × ")}: each cell reads one source element`);
    table.replaceChildren(...steps.map((s) => h("tr", {},
      h("td", {}, h("code", {}, s.label)),
      h("td", {}, `(${s.shape.join(", ")})`),
      h("td", {}, `(${s.strides.join(", ")})`),
      h("td", {}, String(s.offset)),
      h("td", {}, s.copied ? `${s.copied} elements (a copy: not affine)` : "0"))));
    ir.textContent = result.ir;
    highlight(null);
  }

  output.addEventListener("mouseleave", () => {
    if (!output.contains(document.activeElement)) highlight(null);
  });
  output.addEventListener("focusout", (e) => {
    if (!output.contains(e.relatedTarget)) highlight(null);
  });

  /** While a call runs every button is off; after it, Undo and Reset only with steps to undo. */
  function setBusy(busy, canUndo) {
    for (const b of [...parts.stepButtons, parts.undo, parts.reset]) b.disabled = busy;
    if (!busy) parts.undo.disabled = parts.reset.disabled = !canUndo;
  }
  return { ...parts, render, setBusy };
}

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
