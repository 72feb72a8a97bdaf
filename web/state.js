// Shared page state: the expression being edited, its variables and the chosen backend tab.
// One object for every panel; the URL hash mirrors it so that a link restores the page.
//
//   import * as state from "../state.js";
//   state.get();                         // → {expr, vars, tab}  (a frozen snapshot)
//   state.set({expr: "f(x) = x*x"});     // merge a patch; notifies subscribers if it changed
//   const off = state.subscribe((s, changed) => ...);  // changed: Set of keys; off() stops
//
// `expr`  the text in the editor (a string, at most MAX_EXPR characters)
// `vars`  the variable names of the last expression that parsed (set by the editor panel)
// `tab`   the chosen backend, one of BACKENDS
//
// The hash is `#expr=<text>&tab=<backend>` (percent-encoded). It is only ever read as data:
// split on "&" and "=", percent-decoded, length-capped, the tab checked against BACKENDS. The
// text goes to the worker's parser (which reports errors) and into the page through
// textContent / the editor, never as HTML and never executed.

export const BACKENDS = ["wgsl", "c", "cuda", "metal", "opencl", "glsl", "javascript", "python"];
export const MAX_EXPR = 4000;
export const DEFAULT_EXPR = "f(x, y, z) = sin(x) * y + exp(z / (1 + x*x))";

let current = Object.freeze({ expr: DEFAULT_EXPR, vars: [], tab: "wgsl" });
const subscribers = new Set();

/** Read `expr` and `tab` from a hash string (with or without "#"); unknown keys are ignored. */
export function parseHash(hash) {
  const params = new Map();
  for (const part of String(hash ?? "").replace(/^#/, "").split("&")) {
    const eq = part.indexOf("=");
    if (eq > 0) params.set(part.slice(0, eq), decode(part.slice(eq + 1)));
  }
  const out = {};
  if (typeof params.get("expr") === "string") out.expr = params.get("expr").slice(0, MAX_EXPR);
  const tab = String(params.get("tab") ?? "").toLowerCase();
  if (BACKENDS.includes(tab)) out.tab = tab;
  return out;
}

// Percent-decoding that never throws: a malformed escape leaves the text as it was typed
// ("+" stays "+": a hand-written `#expr=x+y` means x + y).
function decode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The hash (with "#") that restores `s`. */
export function formatHash(s = current) {
  return `#expr=${encodeURIComponent(s.expr)}&tab=${encodeURIComponent(s.tab)}`;
}

/** A snapshot of the state. */
export const get = () => current;

/** Merge `patch` into the state; subscribers hear of the keys that changed. */
export function set(patch) {
  const clean = {};
  if (typeof patch.expr === "string") clean.expr = patch.expr.slice(0, MAX_EXPR);
  if (Array.isArray(patch.vars)) clean.vars = Object.freeze(patch.vars.map(String));
  if (BACKENDS.includes(patch.tab)) clean.tab = patch.tab;
  const changed = new Set(
    Object.keys(clean).filter((k) => JSON.stringify(clean[k]) !== JSON.stringify(current[k])),
  );
  if (!changed.size) return current;
  current = Object.freeze({ ...current, ...clean });
  if (changed.has("expr") || changed.has("tab")) writeHash();
  for (const fn of subscribers) {
    try {
      fn(current, changed);
    } catch (err) {
      console.warn("state subscriber failed:", err);
    }
  }
  return current;
}

/** Call `fn(state, changedKeys)` after every change; returns a function that unsubscribes. */
export function subscribe(fn) {
  subscribers.add(fn);
  return () => subscribers.delete(fn);
}

let hashTimer = null;
// Rewrite the hash (replaceState: typing does not fill the history), at most every 250 ms.
function writeHash() {
  if (typeof location === "undefined") return;
  clearTimeout(hashTimer);
  hashTimer = setTimeout(() => {
    const hash = formatHash();
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }, 250);
}

// Restore from the URL at load, and follow a hash edited by hand (or a pasted link).
if (typeof location !== "undefined") {
  current = Object.freeze({ ...current, ...parseHash(location.hash) });
  addEventListener("hashchange", () => {
    const patch = parseHash(location.hash);
    if (Object.keys(patch).length) set(patch);
  });
}
