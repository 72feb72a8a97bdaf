// What the editor panel and the graph panel share beyond web/state.js: the last compiled
// answer of `playground.compile` and which graph nodes are hovered (the two-way link).
//
//   bus.result.set(answer) / bus.result.get() / bus.result.subscribe(fn)   fn(answer)
//   bus.hover.set({serials: [..], from: "graph" | "code"}) / .subscribe(fn)  fn({serials, from})
//   bus.sameFunction(a, b)   two answers compile one function (what was drawn and printed stands)

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

/** Whether answers `a` and `b` are of one function: the same inputs and outputs, and the same
 * graph nodes (serials, which the worker never reuses) joined the same way. The worker's
 * `same_function` compares with the last text it compiled, whose answer the page may have
 * dropped (a newer edit overtook it); this compares with what the page shows. */
export function sameFunction(a, b) {
  if (!a || !b || a === b) return a === b;
  const [ga, gb] = [a.graph, b.graph];
  const same = (x, y) => x.length === y.length && x.every((v, k) => v === y[k]);
  return same(a.inputs, b.inputs) && same(a.outputs, b.outputs) &&
    ga.nodes.length === gb.nodes.length && ga.edges.length === gb.edges.length &&
    ga.nodes.every((n, k) => n.id === gb.nodes[k].id && same(n.outputs, gb.nodes[k].outputs)) &&
    ga.edges.every(([f, t], k) => f === gb.edges[k][0] && t === gb.edges[k][1]);
}
