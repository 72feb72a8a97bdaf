// How it works, 2: lowering to each chip. One small graph (x·sin x and its derivative),
// printed by all eight of tang's backends in the worker (explain.lower_lines); hovering a
// line or focusing a node highlights the same node in every backend.
import { h } from "../lib/dom.js";

const EXPR = "x*sin(x)";

export default {
  id: "how-lower",
  title: "How it works · 2. Lowering to each chip",
  async mount(el, { call, ready }) {
    const status = h("p", { className: "lower-status", role: "status" }, "Waiting for Python…");
    const nodes = h("ol", { className: "lower-nodes", "aria-label": "Graph nodes" });
    const grid = h("div", { className: "lower-grid" });
    el.append(
      h("p", {}, "tang traces f(x) = x·sin x, differentiates it in reverse mode and schedules " +
        "the graph once: one line per node, named t0, t1, … Each backend is a table of " +
        "spellings over that same schedule, so the lines line up across chips. Hover a " +
        "line, or focus a node in the list, to see it in every language."),
      status,
      h("div", { className: "lower-layout" },
        h("div", {}, h("h3", {}, "The graph"), nodes),
        grid),
    );
    el.dataset.state = "loading";

    let lit = [];
    function highlight(serial) {
      for (const e of lit) e.classList.remove("lit");
      lit = serial === null ? [] : [...el.querySelectorAll(`[data-serials~="${serial}"]`)];
      for (const e of lit) e.classList.add("lit");
    }

    try {
      await ready;
    } catch {
      el.dataset.state = "error";
      status.textContent = "Python did not start, so there is nothing to print.";
      return;
    }
    status.textContent = "Printing…";
    let out;
    try {
      out = await call("explain.lower_lines", { expr: EXPR, grad: true });
    } catch (err) {
      el.dataset.state = "error";
      status.textContent = `The worker failed: ${err.message}`;
      status.classList.add("bad");
      return;
    }
    const outputOf = new Map(out.outputs.map((o) => [o.serial, o.name]));
    for (const n of out.nodes) {
      const li = h("li", { tabIndex: 0, dataset: { serials: String(n.serial) } },
        h("code", {}, n.name === n.formula ? n.name : `${n.name} = ${n.formula}`));
      if (outputOf.has(n.serial)) {
        li.append(h("span", { className: "out" }, ` → ${outputOf.get(n.serial)}`));
      }
      li.addEventListener("focus", () => highlight(n.serial));
      li.addEventListener("mouseenter", () => highlight(n.serial));
      li.addEventListener("blur", () => highlight(null));
      nodes.append(li);
    }
    for (const b of out.backends) {
      // the lines that compute nodes, side by side; the whole kernel one click away
      const mapped = Object.keys(b.lines).map(Number);
      const first = Math.min(...mapped);
      const last = Math.max(...mapped);
      const code = h("code", {});
      b.source.split("\n").slice(first - 1, last).forEach((text, i) => {
        const serials = b.lines[String(first + i)];
        const line = h("span", { className: "line" }, text.trim() || " ");
        if (serials) {
          line.dataset.serials = serials.join(" ");
          line.addEventListener("mouseenter", () => highlight(serials[serials.length - 1]));
        }
        code.append(line, "\n");
      });
      grid.append(h("figure", { className: "lower-backend", dataset: { backend: b.name } },
        h("figcaption", {}, b.name), h("pre", { tabIndex: 0 }, code),
        h("details", {}, h("summary", {}, "whole kernel"), h("pre", { tabIndex: 0 }, b.source))));
    }
    grid.addEventListener("mouseleave", () => highlight(null));
    status.textContent = `${out.nodes.length} nodes, ${out.backends.length} backends.`;
    el.dataset.state = "done";
  },
};
