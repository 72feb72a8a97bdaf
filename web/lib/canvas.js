// Canvases that stay sharp on high-DPI screens and follow their CSS box (375 px and up).

/** Size `canvas`'s backing store to its CSS box times devicePixelRatio and return a 2-D
 * context that draws in CSS pixels: {ctx, width, height} (width/height in CSS pixels). */
export function fitCanvas(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const width = Math.max(1, canvas.clientWidth);
  const height = Math.max(1, canvas.clientHeight);
  const w = Math.round(width * dpr);
  const hgt = Math.round(height * dpr);
  if (canvas.width !== w || canvas.height !== hgt) {
    canvas.width = w;
    canvas.height = hgt;
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, width, height };
}

/** A CSS custom property of `el` (a theme colour), or `fallback`. */
export function cssColor(el, name, fallback) {
  return getComputedStyle(el).getPropertyValue(name).trim() || fallback;
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

/** Add a "+" of half-width `r` centred on [x, y] to the current path (stroke it after). */
export function cross(ctx, [x, y], r) {
  ctx.moveTo(x - r, y);
  ctx.lineTo(x + r, y);
  ctx.moveTo(x, y - r);
  ctx.lineTo(x, y + r);
}

/** A filled disc at [x, y] (CSS pixels) in the context's current fill style. */
export function disc(ctx, [x, y], radius) {
  ctx.beginPath();
  ctx.arc(x, y, radius, 0, 2 * Math.PI);
  ctx.fill();
}
