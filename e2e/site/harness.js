// window.tang.harness = {state, error, run(code, timeoutMs) → {ok, value} | {ok: false, error}}
// (every test hook lives under window.tang, as on the page: web/main.js)
const worker = new Worker(new URL("./test-worker.js", import.meta.url), { type: "module" });
const pending = new Map();
let nextId = 1;
const harness = {
  state: "booting",
  error: null,
  run(code, timeoutMs = 120000) {
    const id = nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        resolve({ ok: false, error: `timed out after ${timeoutMs} ms` });
      }, timeoutMs);
      pending.set(id, (msg) => {
        clearTimeout(timer);
        resolve(msg);
      });
      worker.postMessage({ id, code });
    });
  },
};
window.tang = { harness };
worker.onmessage = ({ data }) => {
  if (data.type === "ready") harness.state = "ready";
  else if (data.type === "error") Object.assign(harness, { state: "error", error: data.message });
  else if (pending.has(data.id)) {
    pending.get(data.id)(data);
    pending.delete(data.id);
  }
};
worker.onerror = (e) => {
  // the worker died (or never loaded): fail what is waiting now instead of at its timeout
  const error = `test worker error: ${e.message ?? "worker failed"}`;
  if (harness.state === "booting") Object.assign(harness, { state: "error", error });
  for (const [id, done] of pending) {
    pending.delete(id);
    done({ ok: false, error });
  }
};
worker.postMessage({ init: { base: new URL("../", location.href).href } });
