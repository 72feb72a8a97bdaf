// Long work as a loop of short worker calls: each call is one chunk, so the page shows
// progress between chunks and Stop takes effect within one chunk. Animations pause while
// their panel is off screen or the tab is hidden.

/**
 * Run `step(state, signal)` (async, one worker call) until it returns {done: true} or the
 * signal aborts; `onProgress(result)` after each chunk. Resolves to {stopped, last}; a
 * cancelled worker call counts as a stop, any other error rejects. A chunk that answers
 * after the abort is dropped (neither shown nor `last`): a newer run may own the view.
 */
export async function runChunks(step, { signal, onProgress = () => {} } = {}) {
  let last = null;
  while (!signal?.aborted) {
    let next;
    try {
      next = await step(last, signal);
    } catch (err) {
      if (signal?.aborted || err?.name === "AbortError" || err?.type === "Cancelled") {
        return { stopped: true, last };
      }
      throw err;
    }
    if (signal?.aborted) return { stopped: true, last };
    last = next;
    onProgress(last);
    if (last?.done) return { stopped: false, last };
    // one turn of the page's event loop between chunks: input and paint go first
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return { stopped: true, last };
}

/** Call `onChange(visible)` whenever `el` enters or leaves the viewport or the tab is hidden
 * or shown; returns a function that stops watching. `visible` is both on screen and shown. */
export function whenVisible(el, onChange) {
  let onScreen = false;
  let last = null;
  const report = () => {
    const now = onScreen && document.visibilityState === "visible";
    if (now !== last) {
      last = now;
      onChange(now);
    }
  };
  const io = new IntersectionObserver((entries) => {
    onScreen = entries.some((e) => e.isIntersecting);
    report();
  });
  io.observe(el);
  document.addEventListener("visibilitychange", report);
  return () => {
    io.disconnect();
    document.removeEventListener("visibilitychange", report);
  };
}

/** requestAnimationFrame loop `frame(t, dt, wall)` that runs only while `el` is visible (see
 * whenVisible); returns {stop}. dt is in seconds and capped at 0.1 (physics stays stable when
 * frames are slow); wall is the same uncapped, for clocks that must keep real time. Both are
 * 0 on the first frame after a start or a pause. */
export function animate(el, frame) {
  let id = 0;
  let prev = null;
  let running = false;
  const tick = (t) => {
    const wall = prev === null ? 0 : (t - prev) / 1000;
    prev = t;
    frame(t, Math.min(0.1, wall), wall);
    if (running) id = requestAnimationFrame(tick);
  };
  const unwatch = whenVisible(el, (visible) => {
    if (visible && !running) {
      running = true;
      prev = null;
      id = requestAnimationFrame(tick);
    } else if (!visible && running) {
      running = false;
      cancelAnimationFrame(id);
    }
  });
  return {
    stop() {
      running = false;
      cancelAnimationFrame(id);
      unwatch();
    },
  };
}
