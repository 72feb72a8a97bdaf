// Baseline for benchmarks/boot.py: Pyodide booted in a module worker, nothing else.
const worker = new Worker(new URL("./bare-worker.js", import.meta.url), { type: "module" });
worker.onmessage = ({ data }) => {
  window.bareReadyAt = performance.now();
  document.getElementById("state").textContent = data.ok ? `ready (${data.version})` : data.error;
  document.body.dataset.state = data.ok ? "ready" : "error";
};
