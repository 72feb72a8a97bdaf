// Shared page state: the expression being edited, its variables and the chosen backend tab.
// One object for every panel; the URL hash mirrors it so that a link restores the page.
//
//   import * as state from "../state.js";
//   state.get();                         // → {expr, vars, tab}  (a frozen snapshot)
//   state.set({expr: "f(x) = x*x"});     // merge a patch; notifies subscribers if it changed
//   const off = state.subscribe((s, changed) => ...);  // changed: Set of keys; off() stops
//
// `expr`  the text in the editor (a string; a link carries at most MAX_EXPR characters)
// `vars`  the variable names of the last expression that parsed (set by the editor panel)
// `tab`   the chosen backend: a name from the worker's catalogue (its `backends` method, read
//         from tang.lower), which the editor hands to setBackends(); until then any name
//         shaped like one, and a tab the catalogue lacks then becomes the default
// `link`  null, or what was wrong with the link the page was opened with (or a hash edited
//         by hand): {problem: "too-long", length, limit} — its text was NOT loaded (a text
//         cut at the limit would only fail to parse at the cut)
//
// The hash is `#expr=<text>&tab=<backend>` (percent-encoded). It is only ever read as data:
// split on "&" and "=", percent-decoded, length-checked, the tab checked as a backend name. The
// text goes to the worker's parser (which reports errors) and into the page through
// textContent / the editor, never as HTML and never executed.

export const DEFAULT_TAB = "wgsl";
let backends = null; // the catalogue's names once known (setBackends), else null
const BACKEND_NAME = /^[a-z][a-z0-9_]{0,31}$/;
const isBackend = (tab) => (backends ? backends.includes(tab) : BACKEND_NAME.test(String(tab)));
export const MAX_EXPR = 4000;
export const DEFAULT_EXPR = "f(x, y, z) = sin(x) * y + exp(z / (1 + x*x))";

let current = Object.freeze({ expr: DEFAULT_EXPR, vars: [], tab: DEFAULT_TAB, link: null });
const subscribers = new Set();

/** Read `expr` and `tab` from a hash string (with or without "#"); unknown keys are ignored.
 * An expression longer than MAX_EXPR is not returned: `link` says so instead. */
export function parseHash(hash) {
  const params = new Map();
  for (const part of String(hash ?? "").replace(/^#/, "").split("&")) {
    const eq = part.indexOf("=");
    if (eq > 0) params.set(part.slice(0, eq), decode(part.slice(eq + 1)));
  }
  const out = {};
  const expr = params.get("expr");
  if (typeof expr === "string" && expr.length > MAX_EXPR) {
    out.link = { problem: "too-long", length: expr.length, limit: MAX_EXPR };
  } else if (typeof expr === "string") {
    out.expr = expr;
    out.link = null;
  }
  const tab = String(params.get("tab") ?? "").toLowerCase();
  if (isBackend(tab)) out.tab = tab;
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

/** The hash (with "#") that restores `s`; an expression too long for a link is left out. */
export function formatHash(s = current) {
  const tab = `tab=${encodeURIComponent(s.tab)}`;
  return s.expr.length > MAX_EXPR ? `#${tab}` : `#expr=${encodeURIComponent(s.expr)}&${tab}`;
}

/** A snapshot of the state. */
export const get = () => current;

/** Merge `patch` into the state; subscribers hear of the keys that changed. */
export function set(patch) {
  const clean = {};
  if (typeof patch.expr === "string") clean.expr = patch.expr; // the parser says if too long
  if (Array.isArray(patch.vars)) clean.vars = Object.freeze(patch.vars.map(String));
  if (isBackend(patch.tab)) clean.tab = patch.tab;
  if (patch.link !== undefined) clean.link = patch.link && Object.freeze({ ...patch.link });
  else if (clean.expr !== undefined && clean.expr !== current.expr) clean.link = null; // edited
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

/** The backend names the worker listed, in order (from its `backends` method); a tab not
 * among them becomes the default. */
export function setBackends(names) {
  backends = Object.freeze(names.map(String));
  if (!backends.includes(current.tab)) set({ tab: backends.includes(DEFAULT_TAB) ? DEFAULT_TAB : backends[0] });
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
