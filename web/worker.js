// The page's only Python: a module worker that boots Pyodide and answers requests.
//
// page → worker
//   {init: {base, interruptBuffer?, warmUp?, prewarm?}}
//                                      start booting (interruptBuffer: the Int32Array on a
//                                      SharedArrayBuffer whose slots ./interrupt.js names;
//                                      warmUp: false skips the warm-up below; prewarm:
//                                      [{method, params}] run once before "ready")
//   {id, method, params}               call demos.api method `method` with JSON params
//   {cancel: id}                       drop a queued request, or cancel a running one
// worker → page
//   {type: "stage", stage, progress, detail}
//   {type: "ready", tang, python, pyodide, timings}
//   {type: "error", stage, message, hint}          boot failed
//   {type: "started", id}                          request `id` is now running
//   {type: "warm", steps, busy_ms, wall_ms, off?}  the warm-up after boot is done (below)
//   {id, ok: true, result, python_ms} | {id, ok: false, error: {type, message, traceback?}}
//                                                  python_ms: the call's Python time, the
//                                                  handler and its result's encoding
//
// Requests run one at a time, in order. The worker never runs text from the page: it only
// calls demos.api.dispatch(method, params_json).

import { boot, BootError } from "./boot.js";
import { NONE, SLOT } from "./interrupt.js";

let api = null; // demos.api, once booted
let bootFailure = null;
let interrupt = null; // Int32Array shared with the page, or null
const queue = [];
let running = null; // {id, future}

const post = (msg) => self.postMessage(msg);

function reply(id, ok, payload, python_ms) {
  post(ok ? { id, ok, result: payload, python_ms } : { id, ok, error: payload });
}

const cancelled = (message) => ({ type: "Cancelled", message });

self.onmessage = ({ data }) => {
  if (data.init) {
    start(data.init);
  } else if ("cancel" in data) {
    cancel(data.cancel);
  } else if (data.id !== undefined) {
    queue.push(data);
    pump();
  }
};

async function prewarmCalls(calls) {
  for (const { method, params } of calls) {
    const future = api.dispatch(method, JSON.stringify(params ?? {}));
    try {
      const envelope = JSON.parse(await future.copy());
      if (!envelope.ok) console.error(`prewarm ${method} failed:`, envelope.error?.message);
    } finally {
      future.destroy?.();
    }
  }
}

async function start({ base, interruptBuffer, warmUp = true, prewarm = [] }) {
  try {
    const { pyodide, manifest, timings } = await boot({
      base,
      onStage: (s) => post({ type: "stage", ...s }),
    });
    if (interruptBuffer) {
      interrupt = interruptBuffer;
      pyodide.setInterruptBuffer(interrupt);
    }
    api = pyodide.pyimport("demos.api");
    // SIGINT becomes a KeyboardInterrupt only inside the request the page meant it for
    if (interrupt) api.route_interrupts(() => Atomics.load(interrupt, SLOT.TARGET));
    api.configure_site(base, JSON.stringify(manifest.wheels));
    const python = pyodide.runPython("import sys; sys.version.split()[0]");
    // The calls the page names in `prewarm` run once before "ready" (answers dropped): the
    // modules they need are imported and their code has run, so the first real call (the
    // editor's first compile) is as quick as the ones after it.
    const t = performance.now();
    if (warmUp) await prewarmCalls(prewarm);
    timings.warm_up_ms = Math.round(performance.now() - t);
    post({ type: "ready", tang: manifest.tang, python, pyodide: manifest.pyodide, timings });
    warmStep = warmUp ? 0 : -1;
    if (!warmUp) post({ type: "warm", steps: 0, busy_ms: 0, wall_ms: 0, off: true });
  } catch (err) {
    bootFailure = err instanceof BootError ? err : new BootError("python", String(err?.message ?? err));
    post({ type: "error", stage: bootFailure.stage, message: bootFailure.message, hint: bootFailure.hint });
  }
  pump();
}

function cancel(id) {
  const i = queue.findIndex((r) => r.id === id);
  if (i >= 0) {
    queue.splice(i, 1);
    reply(id, false, cancelled("cancelled before it started"));
    warmUpLater();
  } else if (running?.id === id && running.future) {
    // Async work waiting on a promise: cancel the Python task, and tell the page not to send
    // an interrupt (busy Python never lets this message in; the page then interrupts it).
    if (interrupt) {
      Atomics.store(interrupt, SLOT.ACKED, id);
      Atomics.store(interrupt, SLOT.SIGNAL, 0);
    }
    running.future.cancel();
  }
}

// Warm-up. V8 runs WebAssembly from a quick baseline compile first and optimizes a function
// only after it has run a while, so Python in a fresh worker runs at about half speed for
// its first second or so of work. While idle after boot, the worker spends that time on
// demos.api.warm_up (the editor compiling sample functions), one slice per task: a request
// waits for one slice at most, and the first edits find Python fast. Posts {type: "warm"}.
let warmStep = -1; // the next slice, or -1: not booted yet, or done
let warmQueued = false;
const warmStats = { steps: 0, busy_ms: 0, started: 0 };

const WARM_UP_DELAY_MS = 250; // the page's first requests (its panels' first answers) go first

function warmUpLater() {
  if (warmStep < 0 || warmQueued) return;
  warmQueued = true;
  setTimeout(warmUpSlice, warmStats.started ? 0 : WARM_UP_DELAY_MS);
}

function warmUpSlice() {
  warmQueued = false;
  if (warmStep < 0 || running || queue.length) return; // pump() calls back once idle
  const t = performance.now();
  warmStats.started ||= t;
  const failure = idleCall(() => {
    warmStep = api.warm_up(warmStep) ? warmStep + 1 : -1;
    warmStats.steps += 1;
  });
  if (failure) {
    warmStep = -1;
    console.error("warm-up failed:", failure?.message ?? failure);
  }
  const now = performance.now();
  warmStats.busy_ms += now - t;
  if (warmStep < 0) {
    post({ type: "warm", steps: warmStats.steps, busy_ms: warmStats.busy_ms, wall_ms: now - warmStats.started });
    collectLater();
  }
  warmUpLater();
}

// Idle collection. Graph nodes live in tang's intern table until a collection frees the dead
// ones (tang.expr.graph.collect); by itself a full one runs when the table has doubled,
// inside whichever request crosses the line. So after each request, when no other waits,
// the worker collects what that request left behind (demos.api.idle: the young nodes, or
// all of them when the table has grown), and no request pays for a large collection.
const IDLE_COLLECT_MS = 0; // the next task: a request already sent goes first

let collectQueued = false;

function collectLater() {
  if (collectQueued) return;
  collectQueued = true;
  setTimeout(collectIdle, IDLE_COLLECT_MS);
}

function collectIdle() {
  collectQueued = false;
  if (!api || running || queue.length || warmStep >= 0) return; // pump() asks again once idle
  const failure = idleCall(() => api.idle());
  if (failure) console.error("idle collection failed:", failure?.message ?? failure);
}

// Python the worker runs on its own between requests (warm-up, collection); a late signal
// that lands in it is dropped (demos.api.route_interrupts). Returns the error, else null.
function idleCall(call) {
  try {
    call();
    return null;
  } catch (err) {
    return err;
  }
}

// Let messages already sent (cancels) arrive before the next request starts.
const yieldToMessages = () => new Promise((resolve) => setTimeout(resolve, 0));

async function pump() {
  if (running) return;
  if (!queue.length) {
    warmUpLater();
    if (api) collectLater();
    return;
  }
  if (api && !bootFailure) {
    running = { id: null, future: null }; // hold the slot while we yield
    await yieldToMessages();
    running = null;
    if (!queue.length) {
      warmUpLater(); // the requests were cancelled while we yielded
      return;
    }
  }
  if (bootFailure) {
    for (const r of queue.splice(0)) {
      reply(r.id, false, { type: "BootFailed", message: `Python did not start: ${bootFailure.message}` });
    }
    return;
  }
  if (!api) return; // still booting: requests wait in the queue
  const request = queue.shift();
  running = { id: request.id, future: null };
  if (interrupt) {
    // Handshake with rpc.js: it writes CANCELLED then reads RUNNING; we write RUNNING then
    // read CANCELLED, so a cancel is seen by one side or the other, never lost between them.
    Atomics.store(interrupt, SLOT.SIGNAL, 0);
    Atomics.store(interrupt, SLOT.RUNNING, request.id);
    if (Atomics.load(interrupt, SLOT.CANCELLED) === request.id) {
      reply(request.id, false, cancelled("cancelled before it started"));
      Atomics.store(interrupt, SLOT.RUNNING, NONE);
      running = null;
      pump();
      return;
    }
  }
  post({ type: "started", id: request.id });
  try {
    running.future = api.dispatch(request.method, JSON.stringify(request.params ?? {}), request.id);
    // Awaiting a proxy uses it up; await a copy and keep the original for cancel().
    const envelope = JSON.parse(await running.future.copy());
    reply(request.id, envelope.ok, envelope.ok ? envelope.result : envelope.error, envelope.python_ms);
  } catch (err) {
    // dispatch never raises: this is the task cancelled by cancel() above
    const isCancel = err?.type === "CancelledError" || /CancelledError/.test(String(err));
    reply(request.id, false, isCancel ? cancelled("cancelled while running") : { type: err?.type ?? "Error", message: String(err?.message ?? err) });
  } finally {
    if (interrupt) {
      Atomics.store(interrupt, SLOT.RUNNING, NONE);
      Atomics.store(interrupt, SLOT.SIGNAL, 0); // a signal that came too late has nothing to stop
    }
    running.future?.destroy?.();
    running = null;
    pump();
  }
}
