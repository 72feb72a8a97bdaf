// Small canvas plots and number formatting shared by the "Run it" and "How it works" panels.
// Data comes from the worker (tang computed it); this file only draws.

/** A number from the worker (floats, or "nan"/"inf"/"-inf" strings) as a JS number. */
export function num(v) {
  if (typeof v === "number") return v;
  if (v === "inf") return Infinity;
  if (v === "-inf") return -Infinity;
  return NaN;
}

/** Short text for a number: 6 significant digits, exponent form when tiny or huge. */
export function fmt(v, digits = 6) {
  const x = num(v);
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  if (x === 0) return "0";
  const a = Math.abs(x);
  const text = a >= 1e-4 && a < 1e6 ? String(Number(x.toPrecision(digits))) : x.toExponential(2);
  return text.replace("-", "−");
}

/** Error sizes: "3.6e-7". */
export const fmtErr = (x) => (x === 0 ? "0" : x.toExponential(1).replace("-", "−"));

function color(el, name, fallback) {
  return getComputedStyle(el).getPropertyValue(name).trim() || fallback;
}

/**
 * Draw bands on a canvas sized to its CSS box. `series`: [{lo: [...], hi: [...], color,
 * label}] over bins spread evenly across [x0, x1] (null entries are gaps; lo == hi is a
 * line). `marks`: [{x, y, color}] dots; `lines`: [{x0, y0, x1, y1, color}] in data units.
 * Returns the mapping used, so callers can turn pointer positions into x.
 */
export function drawPlot(canvas, { x0, x1, series, marks = [], lines = [], yRange = null }) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, canvas.clientWidth);
  const h = Math.max(1, canvas.clientHeight);
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const fg = color(canvas, "--muted", "#888");
  const line = color(canvas, "--line", "#ddd");

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

/** Redraw `draw` when `el` changes size (the page is responsive: 375 px to wide). */
export function onResize(el, draw) {
  let frame = 0;
  const ro = new ResizeObserver(() => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(draw);
  });
  ro.observe(el);
  return () => ro.disconnect();
}

/** Build an element: h("p", {className: "x"}, "text", child). Text is always textContent. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("aria-") || k === "role" || k === "for") el.setAttribute(k, v);
    else el[k] = v;
  }
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}
