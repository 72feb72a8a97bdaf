// The traced graph card: draws the worker's layout (./graph-draw.js) fitted to its box with
// zoom and pan (./graph-viewport.js). Hovering or focusing a node marks the kernel lines that
// compute it, and hovering a kernel line marks its nodes (both through ./editor-bus.js). The
// graph is one tab stop: arrow keys move between nodes (roving tabindex), + − 0 zoom.
import { h } from "../lib/dom.js";
import { onResize } from "../lib/canvas.js";
import * as bus from "./editor-bus.js";
import { drawGraph } from "./graph-draw.js";
import { viewport } from "./graph-viewport.js";
import { keepTouches } from "../lib/world.js";

const HELP = "Arrow keys move between nodes (up: operands, down: users), + and − zoom, 0 fits; " +
  "drag to pan, Ctrl + wheel to zoom; by touch, drag sideways or with two fingers to pan, " +
  "pinch to zoom.";

export default {
  id: "graph",
  title: "The traced graph",
  async mount(root) {
    const note = h("p", { className: "graph-note" }, "Waiting for the first expression to compile…");
    const box = h("div", { className: "graph-box", "aria-label": "Expression graph" });
    const tool = (label, text, act) => {
      const b = h("button", { type: "button", className: "tool", tabIndex: -1, "aria-label": label }, text);
      b.addEventListener("click", act);
      return b;
    };
    const tools = h("div", { className: "graph-tools", "aria-hidden": "true" },
      tool("Zoom out", "−", () => view?.zoom(1 / 1.25)),
      tool("Zoom in", "+", () => view?.zoom(1.25)),
      tool("Fit", "Fit", () => view?.fit()));
    root.dataset.state = "loading";
    root.append(note, tools, box, h("p", { className: "graph-help" }, HELP));
    let drawn = null;
    let view = null;

    const show = (answer, redraw = true) => {
      const graph = answer.graph;
      root.dataset.expr = answer.expr ?? "";
      if (drawn && !redraw) return; // the function drawn already: nothing to draw again
      drawn = drawGraph(graph, (serials) => bus.hover.set({ serials, from: "graph" }));
      box.replaceChildren(drawn.svg);
      const outputs = graph.nodes.filter((n) => n.outputs.length).map((n) => drawn.at(n));
      view = viewport(drawn.svg, box, { width: drawn.width, height: drawn.height, outputs });
      view.fit();
      roving(drawn, graph, view);
      root.dataset.state = graph.hidden ? "summary" : "ok";
      note.textContent = graph.hidden
        ? `${graph.shown} of ${graph.total} nodes drawn: the outputs and the nodes nearest ` +
          `them. Each dashed ⋯ box stands for the nodes hidden under it (${graph.hidden} in ` +
          "all); the kernel above is complete."
        : `${graph.nodes.length} nodes (value and gradient share them): inputs and constants ` +
          "on top, outputs at the bottom. Hover or focus a node to see the kernel line that " +
          "computes it.";
    };
    onResize(box, () => view?.fit());
    panAndZoom(box, () => view);
    // Drawn just after the frame that shows the new kernel, so typing sees its kernel first;
    // answers that arrive before then are drawn once, the newest.
    // Text that reads as the function drawn (a space typed) redraws nothing.
    let waiting = null;
    let changed = false; // an answer since the last drawing is of another function
    const later = (answer) => {
      const scheduled = waiting !== null;
      waiting = answer;
      changed ||= !answer.timing?.same_function;
      if (scheduled) return;
      requestAnimationFrame(() => setTimeout(() => {
        const newest = waiting;
        const redraw = changed;
        waiting = null;
        changed = false;
        show(newest, redraw);
      }, 0));
    };
    if (bus.result.get()) show(bus.result.get());
    bus.result.subscribe(later);
    bus.status.subscribe(({ state, error }) => {
      root.classList.toggle("stale", state === "stale" && drawn !== null);
      if (state === "error" && !drawn) {
        root.dataset.state = "error";
        note.textContent = `No graph: ${typeof error === "string" ? error : "the worker failed"}.`;
      }
    });
    bus.hover.subscribe(({ serials }) => mark(drawn, serials));
  },
};

function mark(drawn, serials) {
  if (!drawn) return;
  for (const g of drawn.groups.values()) g.classList.remove("linked");
  for (const paths of drawn.edges.values()) for (const p of paths) p.classList.remove("linked");
  for (const id of serials) {
    drawn.groups.get(id)?.classList.add("linked");
    for (const p of drawn.edges.get(id) ?? []) p.classList.add("linked");
  }
}

/** One tab stop for the whole graph (the first output), arrow keys between nodes. */
function roving(drawn, graph, view) {
  const layers = new Map(); // y → nodes left to right
  for (const n of graph.nodes) {
    if (!layers.has(n.y)) layers.set(n.y, []);
    layers.get(n.y).push(n);
  }
  for (const row of layers.values()) row.sort((a, b) => a.x - b.x);
  const operands = new Map(graph.nodes.map((n) => [n.id, []]));
  const users = new Map(graph.nodes.map((n) => [n.id, []]));
  for (const [a, b] of graph.edges) {
    operands.get(b).push(drawn.nodes.get(a));
    users.get(a).push(drawn.nodes.get(b));
  }
  const nearest = (list, n) => list.reduce((best, m) => (Math.abs(m.x - n.x) < Math.abs(best.x - n.x) ? m : best));
  const step = {
    ArrowLeft: (n) => layers.get(n.y)[layers.get(n.y).indexOf(n) - 1],
    ArrowRight: (n) => layers.get(n.y)[layers.get(n.y).indexOf(n) + 1],
    ArrowUp: (n) => (operands.get(n.id).length ? nearest(operands.get(n.id), n) : layers.get(n.y - 1) && nearest(layers.get(n.y - 1), n)),
    ArrowDown: (n) => (users.get(n.id).length ? nearest(users.get(n.id), n) : layers.get(n.y + 1) && nearest(layers.get(n.y + 1), n)),
    Home: () => graph.nodes[0],
    End: () => graph.nodes[graph.nodes.length - 1],
  };
  let current = graph.nodes.find((n) => n.outputs.length) ?? graph.nodes[0];
  const move = (n, focus) => {
    drawn.groups.get(current.id).tabIndex = -1;
    current = n;
    const g = drawn.groups.get(n.id);
    g.tabIndex = 0;
    if (focus) {
      view.show(drawn.at(n));
      g.focus({ preventScroll: true });
    }
  };
  if (current) move(current, false);
  drawn.svg.addEventListener("focusin", (e) => {
    const id = Number(e.target.closest?.(".graph-node")?.dataset.serial);
    if (drawn.nodes.has(id) && id !== current.id) move(drawn.nodes.get(id), false);
  });
  drawn.svg.addEventListener("keydown", (e) => {
    const zoom = { "+": 1.25, "=": 1.25, "-": 1 / 1.25 }[e.key];
    if (zoom || e.key === "0") {
      e.preventDefault();
      if (zoom) view.zoom(zoom);
      else view.fit();
      view.show(drawn.at(current));
      return;
    }
    const next = step[e.key]?.(current);
    if (step[e.key]) e.preventDefault();
    if (next) move(next, true);
  });
}

/** Drag to pan, Ctrl + wheel (or a pinch) to zoom around the pointer. By touch, a vertical
 * one-finger swipe scrolls the page (the box's CSS says touch-action: pan-y); a sideways
 * drag pans the graph, and two fingers pan and pinch it (kept from the page by keepTouches). */
function panAndZoom(box, getView) {
  const down = new Map(); // pointerId → its last {x, y}, for the pointers pressed on the box
  let moved = false;
  const spread = () => {
    const [a, b] = [...down.values()];
    return { mid: { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 }, dist: Math.hypot(a.x - b.x, a.y - b.y) };
  };
  keepTouches(box, (ev) => ev.touches.length > 1);
  box.addEventListener("pointerdown", (e) => {
    if (e.button !== 0 || !getView()) return;
    if (!down.size) moved = false;
    down.set(e.pointerId, { x: e.clientX, y: e.clientY });
  });
  box.addEventListener("pointermove", (e) => {
    const last = down.get(e.pointerId);
    if (!last) return;
    const dx = e.clientX - last.x;
    const dy = e.clientY - last.y;
    if (!moved && Math.hypot(dx, dy) < 4) return; // a click on a node stays a click
    if (!moved) for (const id of down.keys()) box.setPointerCapture(id);
    moved = true;
    if (down.size === 2) {
      const before = spread();
      down.set(e.pointerId, { x: e.clientX, y: e.clientY });
      const after = spread();
      const r = box.getBoundingClientRect();
      getView().pan(after.mid.x - before.mid.x, after.mid.y - before.mid.y);
      if (before.dist > 0) {
        getView().zoom(after.dist / before.dist, { x: after.mid.x - r.left, y: after.mid.y - r.top });
      }
      return;
    }
    getView().pan(dx, dy);
    down.set(e.pointerId, { x: e.clientX, y: e.clientY });
  });
  const end = (e) => down.delete(e.pointerId);
  box.addEventListener("pointerup", end);
  box.addEventListener("pointercancel", end);
  box.addEventListener("wheel", (e) => {
    if (!e.ctrlKey || !getView()) return;
    e.preventDefault();
    const r = box.getBoundingClientRect();
    getView().zoom(Math.exp(-e.deltaY / 300), { x: e.clientX - r.left, y: e.clientY - r.top });
  }, { passive: false });
}
