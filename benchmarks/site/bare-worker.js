// The site's runtime, one folder up: this page is served from dist/_bench/.
const indexURL = new URL("../pyodide/", import.meta.url).href;
try {
  const { loadPyodide } = await import(indexURL + "pyodide.mjs");
  const pyodide = await loadPyodide({ indexURL });
  self.postMessage({ ok: true, version: pyodide.runPython("import sys; sys.version.split()[0]") });
} catch (err) {
  self.postMessage({ ok: false, error: String(err) });
}
