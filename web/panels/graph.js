// The traced graph as SVG: the layered layout comes from the worker (demos/playground.py);
// this module only draws it. Hovering (or focusing) a node marks the kernel lines that
// compute it; hovering a kernel line marks its nodes (both through ./editor-bus.js).
import { svg as svgEl } from "../lib/dom.js";
import * as bus from "./editor-bus.js";

const DX = 64; // px between columns
const DY = 62; // px between layers
const H = 26; // node height
const PAD = 24;

const nodeWidth = (label) => Math.max(30, 12 + 7.5 * [...label].length);

function draw(graph) {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const cols = Math.max(1, ...graph.nodes.map((n) => n.x + 1));
  const rows = Math.max(1, ...graph.nodes.map((n) => n.y + 1));
  const width = PAD * 2 + (cols - 1) * DX + 60;
  const height = PAD * 2 + (rows - 1) * DY + H + 18;
  const cx = (n) => PAD + 30 + n.x * DX;
  const cy = (n) => PAD + H / 2 + n.y * DY;
  const svg = svgEl("svg", {
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "img",
    class: "graph-svg",
  });
  svg.setAttribute("aria-label", `Expression graph: ${graph.nodes.length} nodes, ${graph.edges.length} edges`);
  const defs = svgEl("defs");
  const marker = svgEl("marker", { id: "graph-arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, markerUnits: "userSpaceOnUse", orient: "auto" });
  marker.append(svgEl("path", { d: "M0,0 L8,4 L0,8 z", class: "graph-arrowhead" }));
  defs.append(marker);
  svg.append(defs);
  const edgeLayer = svgEl("g", { class: "graph-edges" });
  const nodeLayer = svgEl("g", { class: "graph-nodes" });
  svg.append(edgeLayer, nodeLayer);
  const edges = new Map(); // node id → its edge paths (in and out)
  for (const [from, to] of graph.edges) {
    const a = byId.get(from);
    const b = byId.get(to);
    const y1 = cy(a) + H / 2;
    const y2 = cy(b) - H / 2 - 2;
    const mid = (y1 + y2) / 2;
    const path = svgEl("path", {
      d: `M${cx(a)},${y1} C${cx(a)},${mid} ${cx(b)},${mid} ${cx(b)},${y2}`,
      class: "graph-edge",
      "marker-end": "url(#graph-arrow)",
    });
    edgeLayer.append(path);
    for (const id of [from, to]) {
      if (!edges.has(id)) edges.set(id, []);
      edges.get(id).push(path);
    }
  }
  const groups = new Map();
  for (const n of graph.nodes) {
    const w = nodeWidth(n.label);
    const g = svgEl("g", { class: `graph-node op-${n.op}`, tabindex: 0, transform: `translate(${cx(n)},${cy(n)})` });
    g.dataset.serial = String(n.id);
    g.setAttribute("role", "button");
    const what = n.op === "var" ? `input ${n.label}` : n.op === "const" ? `constant ${n.label}` : `${n.op}`;
    g.setAttribute("aria-label", `${what}${n.outputs.length ? `, output ${n.outputs.join(", ")}` : ""}`);
    const shape = n.op === "var" || n.op === "const"
      ? svgEl("rect", { x: -w / 2, y: -H / 2, width: w, height: H, rx: H / 2 })
      : svgEl("rect", { x: -w / 2, y: -H / 2, width: w, height: H, rx: 6 });
    const text = svgEl("text", { "text-anchor": "middle", dy: "0.35em" });
    text.textContent = n.label;
    const title = svgEl("title");
    title.textContent = `#${n.id} ${what}`;
    g.append(title, shape, text);
    if (n.outputs.length) {
      g.classList.add("graph-output");
      const out = svgEl("text", { class: "graph-output-label", "text-anchor": "middle", y: H / 2 + 14 });
      out.textContent = n.outputs.join(", ");
      g.append(out);
    }
    const enter = () => bus.hover.set({ serials: [n.id], from: "graph" });
    const leave = () => bus.hover.set({ serials: [], from: "graph" });
    g.addEventListener("mouseenter", enter);
    g.addEventListener("mouseleave", leave);
    g.addEventListener("focus", enter);
    g.addEventListener("blur", leave);
    nodeLayer.append(g);
    groups.set(n.id, g);
  }
  return { svg, groups, edges };
}

export default {
  id: "graph",
  title: "The traced graph",
  async mount(root) {
    const note = document.createElement("p");
    note.className = "graph-note";
    note.textContent = "Waiting for the first expression to compile…";
    const box = document.createElement("div");
    box.className = "graph-box";
    root.dataset.state = "loading";
    root.append(note, box);
    let drawn = null;

    const mark = (serials) => {
      if (!drawn) return;
      for (const g of drawn.groups.values()) g.classList.remove("linked");
      for (const paths of drawn.edges.values()) for (const p of paths) p.classList.remove("linked");
      for (const id of serials) {
        drawn.groups.get(id)?.classList.add("linked");
        for (const p of drawn.edges.get(id) ?? []) p.classList.add("linked");
      }
    };

    const show = (answer) => {
      const graph = answer.graph;
      box.replaceChildren();
      drawn = null;
      root.dataset.expr = answer.expr ?? "";
      if (!graph.nodes.length) {
        root.dataset.state = "too-big";
        note.textContent =
          `This graph has ${graph.total} nodes, more than the ${graph.limit} drawn here; ` +
          "the kernel above is still complete.";
        return;
      }
      drawn = draw(graph);
      box.append(drawn.svg);
      root.dataset.state = "ok";
      note.textContent =
        `${graph.nodes.length} nodes (value and gradient share them): inputs and constants ` +
        "on top, outputs at the bottom. Hover a node to see the kernel line that computes it.";
    };
    if (bus.result.get()) show(bus.result.get());
    // Drawn just after the frame that shows the new kernel, so typing sees its kernel first;
    // answers that arrive before then are drawn once, the newest.
    let waiting = null;
    bus.result.subscribe((answer) => {
      const scheduled = waiting !== null;
      waiting = answer;
      if (scheduled) return;
      requestAnimationFrame(() =>
        setTimeout(() => {
          const newest = waiting;
          waiting = null;
          show(newest);
        }, 0),
      );
    });
    bus.status.subscribe(({ state, error }) => {
      root.classList.toggle("stale", state === "stale" && drawn !== null);
      if (state === "error" && !drawn) {
        root.dataset.state = "error";
        note.textContent = `No graph: ${typeof error === "string" ? error : "the worker failed"}.`;
      }
    });
    bus.hover.subscribe(({ serials }) => mark(serials));
  },
};
