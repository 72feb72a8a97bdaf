// The traced graph as SVG, from the layered layout the worker sends (demos/playground.py).
// Nodes are not tab stops of their own: the graph is one, and arrow keys move inside it
// (./graph.js). A large graph arrives summarised: "⋯ N" boxes (op "more") stand for hidden
// nodes, and are drawn dashed.
import { svg as svgEl } from "../lib/dom.js";

export const DX = 64; // units between columns
export const DY = 50; // units between layers
const H = 26; // node height
const PAD = 24;

const nodeWidth = (label) => Math.max(30, 12 + 7.5 * [...label].length);

/** What a node is, in words (its aria-label and tooltip). */
function describe(n) {
  if (n.op === "more") return `${n.hidden} more nodes, not drawn (the first is ${n.below})`;
  const what = n.op === "var" ? `input ${n.label}` : n.op === "const" ? `constant ${n.label}`
    : n.body ? `${n.label}: ${n.body}` : n.op;
  return `${what}${n.outputs.length ? `, output ${n.outputs.join(", ")}` : ""}`;
}

/** The SVG for `graph` ({nodes, edges}): {svg, width, height, groups: id → <g>, edges: id →
 * its paths, nodes: id → node}. `onHover(serials)` hears the node under the pointer or focus. */
export function drawGraph(graph, onHover) {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const cols = Math.max(1, ...graph.nodes.map((n) => n.x + 1));
  const rows = Math.max(1, ...graph.nodes.map((n) => n.y + 1));
  const width = PAD * 2 + (cols - 1) * DX + 60;
  const height = PAD * 2 + (rows - 1) * DY + H + 18;
  const cx = (n) => PAD + 30 + n.x * DX;
  const cy = (n) => PAD + H / 2 + n.y * DY;
  const svg = svgEl("svg", { class: "graph-svg", role: "group" });
  svg.setAttribute("aria-roledescription", "graph");
  const marker = svgEl("marker", {
    id: "graph-arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7, markerHeight: 7,
    markerUnits: "userSpaceOnUse", orient: "auto",
  }, svgEl("path", { d: "M0,0 L8,4 L0,8 z", class: "graph-arrowhead" }));
  const edgeLayer = svgEl("g", { class: "graph-edges" });
  const nodeLayer = svgEl("g", { class: "graph-nodes" });
  svg.append(svgEl("defs", {}, marker), edgeLayer, nodeLayer);
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
    const round = n.op === "var" || n.op === "const" ? H / 2 : 6;
    const g = svgEl("g", {
      class: `graph-node op-${n.op}`, tabindex: -1, role: "button",
      transform: `translate(${cx(n)},${cy(n)})`, "aria-label": describe(n),
    },
    svgEl("title", {}, `#${n.id} ${describe(n)}`),
    svgEl("rect", { x: -w / 2, y: -H / 2, width: w, height: H, rx: round }),
    svgEl("text", { "text-anchor": "middle", dy: "0.35em" }, n.label));
    g.dataset.serial = String(n.id);
    if (n.outputs.length) {
      g.classList.add("graph-output");
      g.append(svgEl("text", { class: "graph-output-label", "text-anchor": "middle", y: H / 2 + 14 },
        n.outputs.join(", ")));
    }
    const enter = () => onHover([n.id]);
    const leave = () => onHover([]);
    g.addEventListener("mouseenter", enter);
    g.addEventListener("mouseleave", leave);
    g.addEventListener("focus", enter);
    g.addEventListener("blur", leave);
    nodeLayer.append(g);
    groups.set(n.id, g);
  }
  const at = (n) => ({ x: cx(n), y: cy(n) });
  return { svg, width, height, groups, edges, nodes: byId, at };
}
