// Baseline for benchmarks/boot.py: Pyodide booted in a module worker, nothing else. Built
// into dist/_bench/ only for benchmarks (build(..., with_benchmarks=True)), never shipped.
const worker = new Worker(new URL("./bare-worker.js", import.meta.url), { type: "module" });
worker.onmessage = ({ data }) => {
  window.tang = { readyAt: performance.now() }; // the hook the page has too (web/main.js)
  document.getElementById("state").textContent = data.ok ? `ready (${data.version})` : data.error;
  document.body.dataset.state = data.ok ? "ready" : "error";
};
