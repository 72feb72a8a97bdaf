// window.tangTest = {state, error, run(code, timeoutMs) → {ok, value} | {ok: false, error}}
const worker = new Worker(new URL("./test-worker.js", import.meta.url), { type: "module" });
const pending = new Map();
let nextId = 1;
window.tangTest = {
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
worker.onmessage = ({ data }) => {
  if (data.type === "ready") window.tangTest.state = "ready";
  else if (data.type === "error") Object.assign(window.tangTest, { state: "error", error: data.message });
  else if (pending.has(data.id)) {
    pending.get(data.id)(data);
    pending.delete(data.id);
  }
};
worker.onerror = (e) => {
  // the worker died (or never loaded): fail what is waiting now instead of at its timeout
  const error = `test worker error: ${e.message ?? "worker failed"}`;
  if (window.tangTest.state === "booting") Object.assign(window.tangTest, { state: "error", error });
  for (const [id, done] of pending) {
    pending.delete(id);
    done({ ok: false, error });
  }
};
worker.postMessage({ init: { base: new URL("../", location.href).href } });
