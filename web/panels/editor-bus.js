// What the editor panel and the graph panel share beyond web/state.js: the last compiled
// answer of `playground.compile` and which graph nodes are hovered (the two-way link).
//
//   bus.result.set(answer) / bus.result.get() / bus.result.subscribe(fn)   fn(answer)
//   bus.hover.set({serials: [..], from: "graph" | "code"}) / .subscribe(fn)  fn({serials, from})

function channel(initial) {
  let value = initial;
  const fns = new Set();
  return {
    get: () => value,
    set(v) {
      value = v;
      for (const fn of fns) {
        try {
          fn(v);
        } catch (err) {
          console.warn("editor bus listener failed:", err);
        }
      }
    },
    subscribe(fn) {
      fns.add(fn);
      return () => fns.delete(fn);
    },
  };
}

export const result = channel(null); // the last good compile: {inputs, outputs, kernels, graph}
export const hover = channel({ serials: [], from: null });
// The editor's state: "loading" (Python not ready), "working", "ok", "stale" (the text does
// not parse: the last good kernel stays, marked), "error" (the worker failed).
export const status = channel({ state: "loading", error: null });
