// The page's one connection to Python: a shared worker client for every panel.
//
//   import { call, ready, onBoot } from "./rpc.js";
//   const v = await call("version");                         // → {tang, python, platform}
//   const r = await call("orbit.step", {dt: 0.01}, {signal}); // AbortSignal cancels
//
// call() resolves with the handler's JSON result, or rejects with an RpcError
// (err.type: the Python exception name, "Cancelled", "BootFailed", ...). Calls made before
// Python is ready wait in the worker's queue. Cancelling a queued call drops it; cancelling a
// running one interrupts Python when the page is cross-origin isolated (the server sends
// COOP/COEP), and otherwise lets it finish and discards the answer.

export class RpcError extends Error {
  constructor({ type = "Error", message = "", traceback = "" } = {}) {
    super(message || type);
    this.name = "RpcError";
    this.type = type;
    this.traceback = traceback;
  }
}

import { interruptBuffer, SIGINT, SLOT } from "./interrupt.js";

const base = new URL("./", import.meta.url).href;
const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
const interrupt = interruptBuffer(); // its slots: ./interrupt.js
// A running call that is waiting (async) acknowledges a cancel at once; one that does not
// within this long is busy Python, and gets a KeyboardInterrupt.
const INTERRUPT_GRACE_MS = 200;

const pending = new Map(); // id → {resolve, reject, cleanup}
const listeners = new Set();
let nextId = 1;
let bootState = { stage: "runtime", progress: 0, detail: "" };

let resolveReady, rejectReady;
/** Resolves with {tang, python, pyodide, timings} once Python is up; rejects on boot failure. */
export const ready = new Promise((res, rej) => {
  resolveReady = res;
  rejectReady = rej;
});
ready.catch(() => {}); // a failed boot is shown by the page; no unhandled rejection

/** Subscribe to boot messages ({type: "stage" | "ready" | "error", ...}); returns unsubscribe. */
export function onBoot(listener) {
  listeners.add(listener);
  listener(bootState);
  return () => listeners.delete(listener);
}

function emit(msg) {
  bootState = msg;
  for (const l of listeners) l(msg);
}

let warmed = null;
/** The worker's warm-up report ({steps, busy_ms, wall_ms, off?}) once done, else null. */
export const warmUp = () => warmed;

/** The calls waiting on the worker, oldest first: [{id, method, waiting_ms}] (diagnostics). */
export const waiting = () =>
  [...pending].map(([id, p]) => ({ id, method: p.method, waiting_ms: performance.now() - p.sent }));

/** True when a running call can be interrupted (SharedArrayBuffer available). */
export const canInterrupt = interrupt !== null;

worker.onmessage = ({ data }) => {
  if (data.type === "stage") {
    emit(data);
  } else if (data.type === "ready") {
    emit(data);
    resolveReady(data);
  } else if (data.type === "error") {
    emit(data);
    rejectReady(Object.assign(new Error(data.message), data));
  } else if (data.type === "warm") {
    warmed = data;
  } else if (data.type === "started") {
    // nothing to do: the shared buffer says which call is running
  } else if (pending.has(data.id)) {
    const p = pending.get(data.id);
    pending.delete(data.id);
    p.cleanup();
    if (data.ok && p.timing) p.timing.python_ms = data.python_ms;
    if (data.ok) p.resolve(data.result);
    else p.reject(new RpcError(data.error));
  }
};

let booted = false;
ready.then(() => (booted = true), () => {});

worker.onerror = (event) => {
  event.preventDefault?.();
  if (booted) {
    // An uncaught error inside a working worker: the request it hit has answered (or will
    // time out); keep the worker.
    console.warn(`tang worker: ${event.message}`);
    return;
  }
  const error = {
    type: "error",
    stage: "runtime",
    message: `The Python worker failed to load${event.message ? `: ${event.message}` : ""}.`,
    hint: "Reload the page; if it persists, rebuild with `python build.py serve`. A browser " +
      "without module workers (needs Chromium 80+, Firefox 114+, Safari 15+) cannot run tang.",
  };
  emit(error);
  rejectReady(Object.assign(new Error(error.message), error));
  for (const [id, p] of pending) {
    pending.delete(id);
    p.cleanup();
    p.reject(new RpcError({ type: "BootFailed", message: error.message }));
  }
};

// `?warm-up=off` in the page's URL skips the worker's warm-up (to measure what it is worth).
const warmUpOff = new URLSearchParams(globalThis.location?.search ?? "").get("warm-up") === "off";
// Run once by the worker before it says "ready" (answers dropped): the editor's compile, so
// the compiler and its eight printers are imported and warm before the first real edit.
const PREWARM = [{ method: "playground.compile", params: { expr: "f(x, y) = x*sin(y) + exp(-x^2)" } }];
worker.postMessage({ init: { base, interruptBuffer: interrupt, warmUp: !warmUpOff, prewarm: PREWARM } });

/**
 * Call a Python worker method. `params` must be JSON-able. Options: `signal` (AbortSignal)
 * cancels; `timeout` (ms) cancels after that long; `timing` (an object) gets `python_ms`, the
 * call's Python time in the worker (the handler and its result's encoding).
 */
export function call(method, params = {}, { signal, timeout, timing } = {}) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    let timer = null;
    const abort = (reason) => {
      if (!pending.has(id)) return;
      pending.delete(id);
      cleanup();
      if (interrupt) {
        Atomics.store(interrupt, SLOT.CANCELLED, id); // the worker checks this before starting `id`
        if (Atomics.load(interrupt, SLOT.RUNNING) === id) {
          setTimeout(() => {
            const busy =
              Atomics.load(interrupt, SLOT.RUNNING) === id && Atomics.load(interrupt, SLOT.ACKED) !== id;
            if (busy) {
              // the call may end between the check and the signal: say whom it is for, so
              // that Python raises it only inside that call (demos.api.route_interrupts)
              Atomics.store(interrupt, SLOT.TARGET, id);
              Atomics.store(interrupt, SLOT.SIGNAL, SIGINT);
            }
          }, INTERRUPT_GRACE_MS);
        }
      }
      worker.postMessage({ cancel: id });
      reject(new RpcError({ type: "Cancelled", message: reason }));
    };
    const onAbort = () => abort(`${method} was cancelled`);
    const cleanup = () => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    if (signal?.aborted) {
      reject(new RpcError({ type: "Cancelled", message: `${method} was cancelled` }));
      return;
    }
    pending.set(id, { resolve, reject, cleanup, timing, method, sent: performance.now() });
    signal?.addEventListener("abort", onAbort, { once: true });
    if (timeout) timer = setTimeout(() => abort(`${method} timed out after ${timeout} ms`), timeout);
    worker.postMessage({ id, method, params });
  });
}
