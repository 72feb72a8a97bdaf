// Small canvas plots: bands of values over an x range, tangent lines and dots. Data comes
// from the worker (tang computed it); this file only draws.
import { cssColor, fitCanvas, onResize } from "./canvas.js";
import { fmt } from "./format.js";

export { onResize };

/**
 * Draw bands on a canvas sized to its CSS box. `series`: [{lo: [...], hi: [...], color,
 * label}] over bins spread evenly across [x0, x1] (null entries are gaps; lo == hi is a
 * line). `marks`: [{x, y, color}] dots; `lines`: [{x0, y0, x1, y1, color}] in data units.
 * Returns the mapping used, so callers can turn pointer positions into x.
 */
export function drawPlot(canvas, { x0, x1, series, marks = [], lines = [], yRange = null }) {
  const { ctx, width: w, height: h } = fitCanvas(canvas);
  ctx.clearRect(0, 0, w, h);
  const fg = cssColor(canvas, "--muted", "#888");
  const line = cssColor(canvas, "--line", "#ddd");

  let [ymin, ymax] = yRange ?? [Infinity, -Infinity];
  if (!yRange) {
    for (const s of series) {
      for (let i = 0; i < s.lo.length; i++) {
        if (s.lo[i] !== null && Number.isFinite(s.lo[i])) ymin = Math.min(ymin, s.lo[i]);
        if (s.hi[i] !== null && Number.isFinite(s.hi[i])) ymax = Math.max(ymax, s.hi[i]);
      }
    }
  }
  if (!(ymin <= ymax)) [ymin, ymax] = [-1, 1];
  if (ymax - ymin < 1e-12 * Math.max(1, Math.abs(ymax))) [ymin, ymax] = [ymin - 1, ymax + 1];
  const pad = 0.06 * (ymax - ymin);
  ymin -= pad;
  ymax += pad;

  const left = 6;
  const right = w - 6;
  const top = 6;
  const bottom = h - 16;
  const X = (x) => left + ((x - x0) / (x1 - x0)) * (right - left);
  const Y = (y) => bottom - ((y - ymin) / (ymax - ymin)) * (bottom - top);

  ctx.lineWidth = 1;
  ctx.strokeStyle = line;
  ctx.beginPath();
  if (ymin < 0 && ymax > 0) {
    ctx.moveTo(left, Y(0));
    ctx.lineTo(right, Y(0));
  }
  if (x0 < 0 && x1 > 0) {
    ctx.moveTo(X(0), top);
    ctx.lineTo(X(0), bottom);
  }
  ctx.stroke();
  ctx.fillStyle = fg;
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "alphabetic";
  ctx.textAlign = "left";
  ctx.fillText(fmt(x0, 3), left, h - 3);
  ctx.textAlign = "right";
  ctx.fillText(fmt(x1, 3), right, h - 3);
  ctx.textBaseline = "top";
  ctx.fillText(fmt(ymax, 3), right, top);
  ctx.textBaseline = "bottom";
  ctx.fillText(fmt(ymin, 3), right, bottom);

  for (const s of series) {
    const n = s.lo.length;
    const xAt = (i) => X(x0 + ((n === 1 ? 0.5 : i / (n - 1)) * (x1 - x0)));
    ctx.strokeStyle = s.color;
    ctx.fillStyle = s.color;
    ctx.lineWidth = 1.5;
    let i = 0;
    while (i < n) {
      while (i < n && s.lo[i] === null) i++;
      const start = i;
      while (i < n && s.lo[i] !== null) i++;
      if (i === start) continue;
      // one run of bins: the band from hi (left to right) back along lo (right to left)
      ctx.beginPath();
      for (let k = start; k < i; k++) ctx.lineTo(xAt(k), Y(s.hi[k]));
      for (let k = i - 1; k >= start; k--) ctx.lineTo(xAt(k), Y(s.lo[k]));
      ctx.closePath();
      ctx.globalAlpha = 0.35;
      ctx.fill();
      ctx.globalAlpha = 1;
      ctx.stroke();
    }
  }
  for (const l of lines) {
    ctx.strokeStyle = l.color;
    ctx.lineWidth = 1.25;
    ctx.setLineDash([5, 4]);
    ctx.beginPath();
    ctx.moveTo(X(l.x0), Y(l.y0));
    ctx.lineTo(X(l.x1), Y(l.y1));
    ctx.stroke();
    ctx.setLineDash([]);
  }
  for (const m of marks) {
    ctx.fillStyle = m.color;
    ctx.beginPath();
    ctx.arc(X(m.x), Y(m.y), 4.5, 0, 2 * Math.PI);
    ctx.fill();
  }
  return { toX: (px) => x0 + ((px - left) / (right - left)) * (x1 - x0), yRange: [ymin, ymax] };
}
