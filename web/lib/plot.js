// Small canvas plots: bands of values over an x range, tangent lines and dots. Data comes
// from the worker (tang computed it); this file only draws.
import { cssColor, fitCanvas, onResize } from "./canvas.js";
import { fmt } from "./format.js";

export { onResize };

/**
 * A y range that a few extreme values (a pole, a spike) do not flatten: the [q, 1 − q]
 * quantiles of the finite band values, widened by `grow` times their span on each side, or
 * the full range when that is not much wider (then nothing is clipped). Returns {range: [lo, hi], clipped: bool}.
 */
export function robustRange(series, { q = 0.1, grow = 1 } = {}) {
  const values = [];
  for (const s of series) {
    for (const v of [...s.lo, ...s.hi]) if (v !== null && Number.isFinite(v)) values.push(v);
  }
  if (!values.length) return { range: [-1, 1], clipped: false };
  values.sort((a, b) => a - b);
  const at = (p) => values[Math.min(values.length - 1, Math.max(0, Math.round(p * (values.length - 1))))];
  const [min, max] = [values[0], values[values.length - 1]];
  const [a, b] = [at(q), at(1 - q)];
  const span = Math.max(b - a, 1e-12 * Math.max(1, Math.abs(b)));
  const lo = Math.max(min, a - grow * span);
  const hi = Math.min(max, b + grow * span);
  const clipped = max - min > 3 * (hi - lo); // only worth it when it changes the picture
  return clipped ? { range: [lo, hi], clipped } : { range: [min, max], clipped };
}

/**
 * Draw bands on a canvas sized to its CSS box. `series`: [{lo: [...], hi: [...], color,
 * label}] over bins spread evenly across [x0, x1] (null entries are gaps; lo == hi is a
 * line). `marks`: [{x, y, color}] dots; `lines`: [{x0, y0, x1, y1, color}] in data units.
 * With `yRange`, what leaves it is clipped at the edge and marked there with a small ▲/▼.
 * Axis labels sit in gutters left of and under the plot, never over the curve.
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

  ctx.font = "11px system-ui, sans-serif";
  const yLabels = [fmt(ymax, 3), fmt(ymin, 3)];
  const left = 8 + Math.max(...yLabels.map((t) => ctx.measureText(t).width));
  const right = w - 6;
  const top = 8;
  const bottom = h - 18;
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
  ctx.textBaseline = "alphabetic";
  ctx.textAlign = "left";
  ctx.fillText(fmt(x0, 3), left, h - 4);
  ctx.textAlign = "right";
  ctx.fillText(fmt(x1, 3), right, h - 4);
  ctx.textBaseline = "top";
  ctx.fillText(yLabels[0], left - 4, top - 2);
  ctx.textBaseline = "bottom";
  ctx.fillText(yLabels[1], left - 4, bottom + 2);
  ctx.strokeStyle = line;
  ctx.strokeRect(left + 0.5, top + 0.5, right - left - 1, bottom - top - 1);
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, right - left, bottom - top);
  ctx.clip();
  const spikes = []; // [x px, up?] where a band leaves yRange

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
      if (yRange) {
        for (let k = start; k < i; k++) {
          if (s.hi[k] > ymax) spikes.push([xAt(k), true, s.color]);
          if (s.lo[k] < ymin) spikes.push([xAt(k), false, s.color]);
        }
      }
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
  ctx.restore();
  let lastX = -Infinity;
  for (const [x, up, color] of spikes) {
    if (x - lastX < 6) continue; // one mark per few pixels
    lastX = x;
    const y = up ? top + 1 : bottom - 1;
    const d = up ? 6 : -6;
    ctx.fillStyle = color;
    ctx.beginPath();
    ctx.moveTo(x, y);
    ctx.lineTo(x - 3.5, y + d);
    ctx.lineTo(x + 3.5, y + d);
    ctx.fill();
  }
  return {
    toX: (px) => x0 + ((px - left) / (right - left)) * (x1 - x0),
    yRange: [ymin, ymax],
    spikes: spikes.length,
    area: { left, top, right, bottom }, // the plot's box in CSS pixels; labels lie outside it
  };
}

/** Drag (or tap) along a plot to pick x: `onX(x)` gets the data x under the pointer, by the
 * mapping drawPlot last returned (`getMapping()`; nothing happens before the first draw). */
export function dragAlongX(canvas, getMapping, onX) {
  const fromPointer = (ev) => {
    const mapping = getMapping();
    if (!mapping) return;
    const rect = canvas.getBoundingClientRect();
    onX(mapping.toX(ev.clientX - rect.left));
  };
  canvas.addEventListener("pointerdown", (ev) => {
    canvas.setPointerCapture(ev.pointerId);
    fromPointer(ev);
  });
  canvas.addEventListener("pointermove", (ev) => {
    if (canvas.hasPointerCapture(ev.pointerId)) fromPointer(ev);
  });
}
