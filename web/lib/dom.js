// Building DOM and SVG elements. Text always goes in as text nodes (never as HTML), so user
// text shown by a panel can never become markup.

const SVG_NS = "http://www.w3.org/2000/svg";

/** An HTML element: h("p", {className: "x", "aria-label": "y"}, "text", child). Props named
 * aria-*, role or for become attributes, `dataset` is merged, the rest are properties. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("aria-") || k === "role" || k === "for") el.setAttribute(k, v);
    else el[k] = v;
  }
  appendAll(el, children);
  return el;
}

/** An SVG element: every attribute is set with setAttribute. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  appendAll(el, children);
  return el;
}

function appendAll(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}
