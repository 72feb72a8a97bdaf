// The traced graph card: draws the worker's layout (./graph-draw.js) fitted to its box with
// zoom and pan (./graph-viewport.js). Hovering or focusing a node marks the kernel lines that
// compute it, and hovering a kernel line marks its nodes (both through ./editor-bus.js). The
// graph is one tab stop: arrow keys move between nodes (roving tabindex), + − 0 zoom.
import { h, setData, setText } from "../lib/dom.js";
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
      tool("Zoom out", "−", () => graph.view()?.zoom(1 / 1.25)),
      tool("Zoom in", "+", () => graph.view()?.zoom(1.25)),
      tool("Fit", "Fit", () => graph.view()?.fit()));
    root.dataset.state = "loading";
    root.append(note, tools, box, h("p", { className: "graph-help" }, HELP));
    const graph = drawing(root, box, note);
    panAndZoom(box, graph.view);
    if (bus.result.get()) graph.show(bus.result.get());
    bus.result.subscribe(graph.show);
    bus.status.subscribe(({ state, error }) => {
      root.classList.toggle("stale", state === "stale" && graph.drawn() !== null);
      if (state === "error" && !graph.drawn()) {
        root.dataset.state = "error";
        setText(note, `No graph: ${typeof error === "string" ? error : "the worker failed"}.`);
      }
    });
    bus.hover.subscribe(({ serials }) => mark(graph.drawn(), serials));
  },
};

/**
 * The graph card's drawing in `box`, with its `note`; `show(answer)` for each compiled answer.
 *
 * An answer is drawn with the kernel and the status line, in the task that brings it, when that
 * is cheap: the same function draws nothing, and a drawing of the same extent (a constant or a
 * name retyped, most often) is patched into the elements drawn (only what differs is written;
 * ./graph-draw.js), keeping the view. A drawing of another extent is built anew and fitted
 * just after the frame that shows the new kernel, so typing sees its kernel first; answers
 * that arrive before then are drawn once, the newest. The box's size is kept from a
 * ResizeObserver (read there, after layout, for free), so drawing writes and never reads
 * layout.
 */
function drawing(root, box, note) {
  let drawn = null;
  let view = null;
  let size = null;
  let shown = null; // the answer drawn
  let waiting = null; // the answer to draw after the next frame
  const boxSize = () => (size ??= { width: box.clientWidth, height: box.clientHeight });
  const nav = roving(box, () => view);
  const hovered = (serials) => bus.hover.set({ serials, from: "graph" });
  new ResizeObserver(() => {
    const next = { width: box.clientWidth, height: box.clientHeight };
    const changed = size && (size.width !== next.width || size.height !== next.height);
    size = next;
    if (changed) view?.fit();
  }).observe(box);

  const drew = (answer) => {
    const graph = answer.graph;
    shown = answer;
    nav.show(drawn, graph);
    setData(root, "expr", answer.expr ?? "");
    setData(root, "state", graph.hidden ? "summary" : "ok");
    setText(note, graph.hidden
      ? `${graph.shown} of ${graph.total} nodes drawn: the outputs and the nodes nearest ` +
        `them. Each dashed ⋯ box stands for the nodes hidden under it (${graph.hidden} in ` +
        "all); the kernel above is complete."
      : `${graph.nodes.length} nodes (value and gradient share them): inputs and constants ` +
        "on top, outputs at the bottom. Hover or focus a node to see the kernel line that " +
        "computes it.");
  };
  const drawWaiting = () => {
    const answer = waiting;
    waiting = null;
    if (!answer) return; // a later answer was drawn meanwhile
    const graph = answer.graph;
    drawn = drawGraph(graph, hovered);
    box.replaceChildren(drawn.svg);
    const outputs = graph.nodes.filter((n) => n.outputs.length).map((n) => drawn.at(n));
    view = viewport(drawn.svg, boxSize, { width: drawn.width, height: drawn.height, outputs });
    view.fit();
    drew(answer);
  };
  return {
    drawn: () => drawn,
    view: () => view,
    show(answer) {
      if (bus.sameFunction(shown, answer)) {
        waiting = null;
        setData(root, "expr", answer.expr ?? ""); // drawn already: nothing to draw again
      } else if (drawn?.patch(answer.graph)) {
        waiting = null;
        drew(answer);
        mark(drawn, bus.hover.get().serials); // the marks of the nodes replaced go
      } else {
        const scheduled = waiting !== null;
        waiting = answer;
        if (!scheduled) requestAnimationFrame(() => setTimeout(drawWaiting, 0));
      }
    },
  };
}

/** Mark the nodes `serials` and their edges (class "linked"), and unmark the rest. */
function mark(drawn, serials) {
  if (!drawn) return;
  const want = new Set(serials);
  for (const [id, g] of drawn.groups) g.classList.toggle("linked", want.has(id));
  const paths = new Set(serials.flatMap((id) => drawn.edges.get(id) ?? []));
  for (const list of drawn.edges.values()) for (const p of list) p.classList.toggle("linked", paths.has(p));
}

/** One tab stop for the whole graph (the first output), arrow keys between nodes; the
 * listeners sit on the box once, and `show(drawn, graph)` points them at each drawing. */
function roving(box, getView) {
  let drawn = null;
  let graph = null;
  let layers = new Map(); // y → nodes left to right
  let operands = new Map();
  let users = new Map();
  let current = null; // the node that holds the tab stop
  const nearest = (list, n) => list.reduce((best, m) => (Math.abs(m.x - n.x) < Math.abs(best.x - n.x) ? m : best));
  const step = {
    ArrowLeft: (n) => layers.get(n.y)[layers.get(n.y).indexOf(n) - 1],
    ArrowRight: (n) => layers.get(n.y)[layers.get(n.y).indexOf(n) + 1],
    ArrowUp: (n) => (operands.get(n.id).length ? nearest(operands.get(n.id), n) : layers.get(n.y - 1) && nearest(layers.get(n.y - 1), n)),
    ArrowDown: (n) => (users.get(n.id).length ? nearest(users.get(n.id), n) : layers.get(n.y + 1) && nearest(layers.get(n.y + 1), n)),
    Home: () => graph.nodes[0],
    End: () => graph.nodes[graph.nodes.length - 1],
  };
  const tabStop = (g) => {
    for (const other of box.querySelectorAll(".graph-node[tabindex='0']")) if (other !== g) other.tabIndex = -1;
    if (g.tabIndex !== 0) g.tabIndex = 0;
  };
  const move = (n, focus) => {
    current = n;
    const g = drawn.groups.get(n.id);
    tabStop(g);
    if (focus) {
      getView().show(drawn.at(n));
      g.focus({ preventScroll: true });
    }
  };
  box.addEventListener("focusin", (e) => {
    const id = Number(e.target.closest?.(".graph-node")?.dataset.serial);
    if (drawn?.nodes.has(id) && id !== current?.id) move(drawn.nodes.get(id), false);
  });
  box.addEventListener("keydown", (e) => {
    if (!current || !e.target.closest?.(".graph-svg")) return;
    const view = getView();
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
  return {
    show(nextDrawn, nextGraph) {
      // a patched drawing keeps its tab stop on the same place; a new one starts on an output
      const kept = current && drawn === nextDrawn
        ? nextGraph.nodes.find((n) => n.x === current.x && n.y === current.y) : null;
      drawn = nextDrawn;
      graph = nextGraph;
      layers = new Map();
      for (const n of graph.nodes) {
        if (!layers.has(n.y)) layers.set(n.y, []);
        layers.get(n.y).push(n);
      }
      for (const row of layers.values()) row.sort((a, b) => a.x - b.x);
      operands = new Map(graph.nodes.map((n) => [n.id, []]));
      users = new Map(graph.nodes.map((n) => [n.id, []]));
      for (const [a, b] of graph.edges) {
        operands.get(b).push(drawn.nodes.get(a));
        users.get(a).push(drawn.nodes.get(b));
      }
      const first = kept ?? graph.nodes.find((n) => n.outputs.length) ?? graph.nodes[0];
      if (first) move(first, false);
      else current = null;
    },
  };
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
