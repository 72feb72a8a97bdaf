// Test-only worker: the page's boot, plus running Python source sent by e2e tests.
import { boot } from "../boot.js";

let pyodide = null;
const waiting = [];

async function run({ id, code }) {
  try {
    let value = await pyodide.runPythonAsync(code);
    if (value?.toJs) {
      const proxy = value;
      value = proxy.toJs({ dict_converter: Object.fromEntries });
      proxy.destroy();
    }
    self.postMessage({ id, ok: true, value: value === undefined ? null : value });
  } catch (err) {
    self.postMessage({ id, ok: false, error: String(err?.message ?? err) });
  }
}

self.onmessage = async ({ data }) => {
  if (data.init) {
    try {
      ({ pyodide } = await boot({ base: data.init.base }));
      self.postMessage({ type: "ready" });
      for (const r of waiting.splice(0)) await run(r);
    } catch (err) {
      self.postMessage({ type: "error", message: `${err.stage ?? ""}: ${err.message}` });
    }
  } else if (pyodide) {
    await run(data);
  } else {
    waiting.push(data);
  }
};
