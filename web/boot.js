// Boots Pyodide and installs tang, reporting stages. Shared by worker.js and the e2e test
// worker (dist/_test/), and only ever run inside a Web Worker.
//
// Stages, in order: "runtime" (download the runtime) → "python" (start Python) →
// "tang" (install and import tang) → "ready". A failure throws BootError(stage, message, hint).

import { installWheel } from "./wheel.js";

export const STAGES = ["runtime", "python", "tang", "ready"];

const HINTS = {
  runtime:
    "The server did not deliver the Pyodide runtime. Rebuild and restart it with " +
    "`python build.py serve`, then reload the page.",
  python:
    "The browser could not start Python in WebAssembly. Use a current Chromium, Firefox " +
    "or Safari with WebAssembly enabled, then reload.",
  tang: wheelHint("tang"),
};

/** What to try when the wheel `name` (tang, micropip, …) did not download or install. */
function wheelHint(name) {
  return `The ${name} wheel did not install. Rebuild dist/ with \`python build.py serve\` ` +
    "(or `python build.py build`) and reload the page.";
}

export class BootError extends Error {
  constructor(stage, message, hint = HINTS[stage] ?? "Reload the page.") {
    super(message);
    this.name = "BootError";
    this.stage = stage;
    this.hint = hint;
  }
}

// Share of the progress bar that each stage ends at.
const STAGE_END = { runtime: 0.45, python: 0.8, tang: 1.0 };

async function fetchOk(url, stage, what, hint = undefined) {
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new BootError(stage, `Could not download ${what} (${url}): ${err.message}`, hint);
  }
  if (!response.ok) {
    throw new BootError(stage, `Could not download ${what}: ${url} answered ${response.status}`, hint);
  }
  return response;
}

// Read a response to the end, reporting bytes as they arrive.
async function drain(response, onBytes) {
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    onBytes(value.byteLength, value);
  }
}

function concat(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

const lastLine = (err) => String(err?.message ?? err).trim().split("\n").at(-1);

/**
 * Boot Python. `base` is the site root URL (ending in "/"); `onStage({stage, progress,
 * detail})` is called as work advances. Resolves to {pyodide, manifest, timings}.
 */
export async function boot({ base, onStage = () => {} }) {
  const t0 = performance.now();
  const timings = {};
  const mark = (name) => (timings[name] = Math.round(performance.now() - t0));

  // 1. runtime: the manifest, then the interpreter snapshot with byte progress. Pyodide
  // starts at the same time (it fetches and compiles the wasm while the snapshot arrives).
  onStage({ stage: "runtime", progress: 0, detail: "manifest" });
  const manifest = await (await fetchOk(new URL("manifest.json", base), "runtime", "the manifest")).json();
  const indexURL = new URL("pyodide/", base).href;
  let loadPyodide;
  try {
    ({ loadPyodide } = await import(indexURL + "pyodide.mjs"));
  } catch (err) {
    throw new BootError("runtime", `Could not load pyodide.mjs: ${err.message}`);
  }
  const snapshotInfo = manifest.files["pyodide/snapshot.bin"];
  const snapshot = snapshotInfo
    ? fetchOk(indexURL + "snapshot.bin", "runtime", "the Python snapshot").then(async (response) => {
        const chunks = [];
        let got = 0;
        let shown = 0;
        await drain(response, (n, chunk) => {
          chunks.push(chunk);
          got += n;
          if (got - shown > 2e6 || got === snapshotInfo.size) {
            shown = got;
            onStage({
              stage: "runtime",
              progress: STAGE_END.runtime * Math.min(1, got / snapshotInfo.size),
              detail: `${(got / 1e6).toFixed(1)} / ${(snapshotInfo.size / 1e6).toFixed(1)} MB`,
            });
          }
        });
        return concat(chunks);
      })
    : null;
  const options = {
    indexURL,
    stdout: (line) => console.log(line),
    stderr: (line) => console.warn(line),
  };
  const fromSnapshot = snapshot && loadPyodide({ ...options, _loadSnapshot: snapshot });
  fromSnapshot?.catch(() => {}); // handled below
  if (snapshot) await snapshot;
  mark("runtime");

  // 2. python: the interpreter restored from the snapshot (or, failing that, started from
  // scratch: slower, same result).
  onStage({ stage: "python", progress: STAGE_END.runtime, detail: `Pyodide ${manifest.pyodide}` });
  let pyodide = null;
  if (fromSnapshot) {
    try {
      pyodide = await fromSnapshot;
      timings.snapshot = true;
    } catch (err) {
      console.warn(`tang: the Python snapshot did not restore (${err.message}); starting afresh`);
    }
  }
  if (!pyodide) {
    try {
      pyodide = await loadPyodide(options);
      timings.snapshot = false;
    } catch (err) {
      throw new BootError("python", `Python did not start: ${err.message}`);
    }
  }
  mark("python");

  // 3. tang: fetch the micropip and tang wheels by URL and unpack them into site-packages
  // (micropip is installed, not imported: panels that need more packages import it later).
  // Then import tang to prove it worked, and check the version.
  onStage({ stage: "tang", progress: STAGE_END.python, detail: manifest.wheels.tang });
  const sitePackages = pyodide.runPython(
    "import sys; next(p for p in sys.path if p.endswith('site-packages'))");
  await Promise.all(["micropip", "tang"].map(async (name) => {
    const url = new URL(manifest.wheels[name], base);
    const hint = wheelHint(name); // name the wheel that failed, not always tang's
    const bytes = await (await fetchOk(url, "tang", `the ${name} wheel`, hint)).arrayBuffer();
    try {
      await installWheel(pyodide, bytes, sitePackages);
    } catch (err) {
      throw new BootError("tang", `The ${name} wheel (${url.pathname}) did not install: ${lastLine(err)}`, hint);
    }
  }));
  pyodide.runPython("import importlib; importlib.invalidate_caches()");
  mark("unpack");
  let version;
  try {
    const tang = pyodide.pyimport("tang");
    version = tang.__version__;
    tang.destroy();
    pyodide.pyimport("demos.api").destroy();
    if (!pyodide.runPython("import importlib.util; importlib.util.find_spec('micropip') is not None")) {
      throw new Error("micropip is not importable");
    }
  } catch (err) {
    throw new BootError("tang", `tang is installed but does not import: ${lastLine(err)}`);
  }
  if (version !== manifest.tang) {
    throw new BootError("tang", `tang ${version} was imported, but the site was built for ${manifest.tang}`);
  }
  mark("tang");
  onStage({ stage: "ready", progress: 1, detail: `tang ${version}` });
  return { pyodide, manifest, timings };
}
