// A 2-D scene in its own units (y up: millimetres, orbit radii) drawn on a canvas: the
// scene's box fitted into the canvas and centred, and the mapping both ways.

/** A mapping for `canvas` showing the box [x0, x1, y0, y1]. Call `fit(width, height)` before
 * each draw (CSS pixels, as fitCanvas gives them); it records {k, ox, oy} in the canvas's
 * data-view so tests can aim at scene points. `k` is CSS pixels per scene unit. */
export function worldView(canvas, [x0, x1, y0, y1]) {
  const view = {
    k: 1,
    ox: 0,
    oy: 0,
    toPx: ([x, y]) => [view.ox + x * view.k, view.oy - y * view.k],
    fromPx: (px, py) => [(px - view.ox) / view.k, (view.oy - py) / view.k],
    /** The scene point under a pointer event. */
    fromEvent(ev) {
      const rect = canvas.getBoundingClientRect();
      return view.fromPx(ev.clientX - rect.left, ev.clientY - rect.top);
    },
    fit(width, height) {
      const k = Math.min(width / (x1 - x0), height / (y1 - y0));
      Object.assign(view, { k, ox: (width - k * (x1 + x0)) / 2, oy: (height + k * (y1 + y0)) / 2 });
      canvas.dataset.view = JSON.stringify({ k: view.k, ox: view.ox, oy: view.oy });
    },
  };
  return view;
}

/** Keep the touches for which `wanted(touchEvent)` is true for `el`'s own drag; any other
 * touch may still scroll the page vertically (the element's CSS says touch-action: pan-y).
 * A touchstart's preventDefault is what stops the browser from panning, so the listener must
 * not be passive. */
export function keepTouches(el, wanted) {
  el.addEventListener("touchstart", (ev) => {
    if (wanted(ev)) ev.preventDefault();
  }, { passive: false });
}

/** Keep a one-finger touch that starts within `radius` CSS pixels of the scene point
 * `near()` (null: none) for the canvas's own drag (see keepTouches). */
export function keepTouchesNear(canvas, view, near, radius = 44) {
  keepTouches(canvas, (ev) => {
    const point = near();
    const touch = ev.touches[0];
    if (!point || !touch || ev.touches.length > 1) return false;
    const rect = canvas.getBoundingClientRect();
    const [px, py] = view.toPx(point);
    return Math.hypot(touch.clientX - rect.left - px, touch.clientY - rect.top - py) <= radius;
  });
}
