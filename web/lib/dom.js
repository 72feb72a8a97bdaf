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

// Writes that touch the DOM only when the value differs. Writing an equal value is not free:
// the browser queues a mutation record, restyles what a selector on that attribute matches,
// and a replaced text node is laid out again. Panels that render on every keystroke use these.

/** Set `el`'s text (a leaf element) unless it already reads `text`; a text node already
 * there is changed in place, not replaced (the browser then keeps its layout object). */
export function setText(el, text) {
  if (el.textContent === text) return;
  const only = el.firstChild;
  if (only && only === el.lastChild && only.nodeType === Node.TEXT_NODE && text) only.data = text;
  else el.textContent = text;
}

/** Set `el.dataset[key]` to `value` (a string), or remove it for null/undefined. */
export function setData(el, key, value) {
  if (value === null || value === undefined) {
    if (key in el.dataset) delete el.dataset[key];
  } else if (el.dataset[key] !== String(value)) el.dataset[key] = value;
}

/** Show or hide `el` (its `hidden` attribute). */
export function setHidden(el, hidden) {
  if (el.hidden !== Boolean(hidden)) el.hidden = Boolean(hidden);
}
