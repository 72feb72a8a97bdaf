// Zoom and pan for the graph's SVG through its viewBox: the drawing fits its box at first
// (no inner scroll bar), and a graph too big to read at that scale opens on its outputs.

const MIN_READABLE = 0.6; // below this scale the 13 px labels are unreadable
const MAX_SCALE = 2.5;
const MIN_SCALE = 0.05;

/**
 * Control `svg`'s viewBox inside its box for a drawing of `width` × `height` units whose
 * outputs sit at `outputs` ([{x, y}]). `boxSize()` gives the box's inner size in CSS pixels
 * ({width, height}); the caller keeps it from a ResizeObserver, so that drawing never reads
 * layout (a read after the drawing's writes would lay the page out twice in one frame).
 * Returns {fit, zoom(factor, at?), pan(dx, dy), show({x, y}), scale()}: `at` and pan deltas
 * are in CSS pixels of the box.
 */
export function viewport(svg, boxSize, { width, height, outputs }) {
  let s = 1; // CSS px per unit
  let x = 0; // the unit at the box's left edge
  let y = 0;
  let shown = ""; // the viewBox written last
  const size = () => {
    const b = boxSize();
    return { bw: Math.max(1, b.width), bh: Math.max(1, b.height) };
  };
  const apply = () => {
    const { bw, bh } = size();
    const box = `${x} ${y} ${bw / s} ${bh / s}`;
    if (box === shown) return;
    shown = box;
    svg.setAttribute("viewBox", box);
    svg.dataset.scale = s.toFixed(3);
  };
  const api = {
    scale: () => s,
    /** The whole drawing, centred; if that is too small to read, the outputs at a readable
     * scale (bottom of the box), centred on them. */
    fit() {
      const { bw, bh } = size();
      s = Math.min(bw / width, bh / height, 1.25);
      if (s >= MIN_READABLE) {
        x = (width - bw / s) / 2;
        y = (height - bh / s) / 2;
      } else {
        s = Math.max(Math.min(bw / width, 1.25), MIN_READABLE);
        const mid = outputs.length ? outputs.reduce((t, p) => t + p.x, 0) / outputs.length : width / 2;
        const w = bw / s;
        x = width <= w ? (width - w) / 2 : Math.min(Math.max(mid - w / 2, 0), width - w);
        y = height - bh / s;
      }
      apply();
    },
    zoom(factor, at = null) {
      const { bw, bh } = size();
      const px = at?.x ?? bw / 2;
      const py = at?.y ?? bh / 2;
      const next = Math.min(MAX_SCALE, Math.max(MIN_SCALE, s * factor));
      x += px / s - px / next; // the unit under the pointer stays under it
      y += py / s - py / next;
      s = next;
      apply();
    },
    pan(dx, dy) {
      x -= dx / s;
      y -= dy / s;
      apply();
    },
    /** Pan just enough that the point {x, y} (units) is inside the box, with a margin. */
    show(p) {
      const { bw, bh } = size();
      const m = 40 / s;
      const w = bw / s;
      const h = bh / s;
      if (p.x - m < x) x = p.x - m;
      else if (p.x + m > x + w) x = p.x + m - w;
      if (p.y - m < y) y = p.y - m;
      else if (p.y + m > y + h) y = p.y + m - h;
      apply();
    },
  };
  return api;
}
