// The traced graph as SVG, from the layered layout the worker sends (demos/playground.py).
// Nodes are not tab stops of their own: the graph is one, and arrow keys move inside it
// (./graph.js). A large graph arrives summarised: "⋯ N" boxes (op "more") stand for hidden
// nodes, and are drawn dashed.
//
// A new answer whose drawing has the extent of the one shown (a constant or a name retyped,
// most often) is patched into it (`patch`): the boxes are keyed by their place and the edges
// by their path, the elements that stay are kept, and only the attributes and text that
// differ are written, so the browser restyles, lays out and repaints only those, and the view
// (zoom, pan) stays. A drawing of another extent is drawn anew, and fitted.
import { setText, svg as svgEl } from "../lib/dom.js";

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
 * its paths, nodes: id → node, at(node), patch(graph)}. `onHover(serials)` hears the node
 * under the pointer or focus (listeners on the <svg>, so a patched node needs none). */
export function drawGraph(graph, onHover) {
  const { width, height } = extent(graph);
  const svg = svgEl("svg", { class: "graph-svg", role: "group" });
  svg.setAttribute("aria-roledescription", "graph");
  const marker = svgEl("marker", {
    id: "graph-arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7, markerHeight: 7,
    markerUnits: "userSpaceOnUse", orient: "auto",
  }, svgEl("path", { d: "M0,0 L8,4 L0,8 z", class: "graph-arrowhead" }));
  const edgeLayer = svgEl("g", { class: "graph-edges" });
  const nodeLayer = svgEl("g", { class: "graph-nodes" });
  svg.append(svgEl("defs", {}, marker), edgeLayer, nodeLayer);
  const boxes = new Map(); // "x,y" (a place in the layout) → the node box drawn there
  const paths = new Map(); // the path's d → the edge's <path>
  const drawn = { svg, width, height, groups: null, edges: null, nodes: null, at, patch };
  put(graph);
  // hover and focus: one listener of each kind on the <svg>, for every node, patched or not
  const nodeOf = (target) => target?.closest?.(".graph-node") ?? null;
  const hover = (e) => {
    const g = nodeOf(e.target);
    if (g === nodeOf(e.relatedTarget)) return; // within one node
    onHover(e.type === "mouseover" || e.type === "focusin" ? [Number(g.dataset.serial)] : []);
  };
  for (const type of ["mouseover", "mouseout", "focusin", "focusout"]) {
    svg.addEventListener(type, (e) => nodeOf(e.target) && hover(e));
  }
  return drawn;

  /** Show `next` in these elements, keyed by place: a box at a place drawn before is kept
   * and given the new node (only what differs is written), an edge with the same path is
   * kept; a box or an edge no longer wanted is moved where a new one is wanted, and only the
   * rest is added or removed. */
  function put(next) {
    const byId = new Map(next.nodes.map((n) => [n.id, n]));
    const places = new Map(next.nodes.map((n) => [`${n.x},${n.y}`, n]));
    const spare = [...boxes].filter(([place]) => !places.has(place)).map(([, box]) => box);
    for (const box of spare) boxes.delete(box.place);
    const fresh = [];
    drawn.groups = new Map();
    for (const [place, n] of places) {
      let box = boxes.get(place);
      if (!box) {
        box = spare.pop() ?? nodeBox();
        if (!box.g.parentNode) fresh.push(box.g);
        boxes.set(place, box);
      }
      box.set(n, place);
      drawn.groups.set(n.id, box.g);
    }
    for (const box of spare) box.g.remove();
    nodeLayer.append(...fresh);
    const wanted = new Map(); // d → the edges drawn by that path (x*x has two)
    for (const [from, to] of next.edges) {
      const d = edgePath(byId.get(from), byId.get(to));
      if (!wanted.has(d)) wanted.set(d, []);
      wanted.get(d).push([from, to]);
    }
    const spareEdges = [...paths].filter(([d]) => !wanted.has(d)).map(([, path]) => path);
    for (const path of spareEdges) paths.delete(path.getAttribute("d"));
    const added = [];
    drawn.edges = new Map();
    for (const [d, pairs] of wanted) {
      let path = paths.get(d);
      if (!path) {
        path = spareEdges.pop();
        if (path) path.setAttribute("d", d);
        else {
          path = svgEl("path", { d, class: "graph-edge", "marker-end": "url(#graph-arrow)" });
          added.push(path);
        }
        paths.set(d, path);
      }
      for (const id of pairs.flat()) {
        if (!drawn.edges.has(id)) drawn.edges.set(id, []);
        drawn.edges.get(id).push(path);
      }
    }
    for (const path of spareEdges) path.remove();
    edgeLayer.append(...added);
    drawn.nodes = byId;
  }

  /** Show `next` in these elements when it has the extent of the graph shown (true), so the
   * view on it (zoom, pan) still fits; false, with nothing written, when it does not: draw
   * it anew and fit that. */
  function patch(next) {
    const size = extent(next);
    if (size.width !== width || size.height !== height) return false;
    put(next);
    return true;
  }
}

const cx = (n) => PAD + 30 + n.x * DX;
const cy = (n) => PAD + H / 2 + n.y * DY;
const at = (n) => ({ x: cx(n), y: cy(n) });

/** The drawing's size in units: its layers and columns, and the margins. */
function extent(graph) {
  const cols = Math.max(1, ...graph.nodes.map((n) => n.x + 1));
  const rows = Math.max(1, ...graph.nodes.map((n) => n.y + 1));
  return { width: PAD * 2 + (cols - 1) * DX + 60, height: PAD * 2 + (rows - 1) * DY + H + 18 };
}

/** The curve from operand `a` down to its user `b`. */
function edgePath(a, b) {
  const y1 = cy(a) + H / 2;
  const y2 = cy(b) - H / 2 - 2;
  const mid = (y1 + y2) / 2;
  return `M${cx(a)},${y1} C${cx(a)},${mid} ${cx(b)},${mid} ${cx(b)},${y2}`;
}

/** One node's box: its <g> and `set(node, place)`, which writes only the attributes and
 * text that differ from what the box shows (its place included: a spare box is moved). */
function nodeBox() {
  const title = svgEl("title");
  const rect = svgEl("rect", { height: H, y: -H / 2 });
  const label = svgEl("text", { "text-anchor": "middle", dy: "0.35em" });
  const g = svgEl("g", { tabindex: -1, role: "button" }, title, rect, label);
  let outputs = null; // the output label's <text>, when the node is an output
  let was = {}; // what the elements show
  const box = { g, place: null, set };
  return box;

  function set(node, place) {
    const what = describe(node);
    const outs = node.outputs.join(", ");
    const round = node.op === "var" || node.op === "const" ? H / 2 : 6;
    if (box.place !== place) {
      box.place = place;
      g.setAttribute("transform", `translate(${cx(node)},${cy(node)})`);
    }
    if (was.id !== node.id) g.dataset.serial = String(node.id);
    if (was.op !== node.op || Boolean(was.outs) !== Boolean(outs)) {
      g.setAttribute("class", `graph-node op-${node.op}${outs ? " graph-output" : ""}`);
    }
    if (was.what !== what) g.setAttribute("aria-label", what);
    if (was.what !== what || was.id !== node.id) setText(title, `#${node.id} ${what}`);
    if (was.label !== node.label) {
      const w = nodeWidth(node.label);
      if (was.label === undefined || nodeWidth(was.label) !== w) {
        rect.setAttribute("x", -w / 2);
        rect.setAttribute("width", w);
      }
      setText(label, node.label);
    }
    if (was.round !== round) rect.setAttribute("rx", round);
    if (outs && !outputs) {
      outputs = svgEl("text", { class: "graph-output-label", "text-anchor": "middle", y: H / 2 + 14 });
      g.append(outputs);
    } else if (!outs && outputs) {
      outputs.remove();
      outputs = null;
    }
    if (outputs && was.outs !== outs) setText(outputs, outs);
    was = { id: node.id, op: node.op, outs, what, label: node.label, round };
  }
}
