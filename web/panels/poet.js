// Same idea, every scale · 4. A model: the Quantum Poet, a 21,534-parameter character model of
// physics haikus, trained by tang.nn in this page's worker (pure Python). Training runs as a
// loop of short worker calls (poet.train, one step each), so the page stays responsive and
// Stop takes effect after the step in flight. Every few epochs the card writes a sample.
// The Python shown is read from demos/quantum_poet.py by the worker (poet.source).
import { commandLine, setCommand } from "../lib/command.js";
import { cssColor, fitCanvas, onResize } from "../lib/canvas.js";
import { h } from "../lib/dom.js";
import { fmt } from "../lib/format.js";

const SESSION = "page";
const EPOCHS = 200; // Train runs up to this many epochs
const CHUNK_MS = 100; // worker time per call, at most; one step takes 50–100 ms in Pyodide
const CHUNK_STEPS = 1; // one step a call: Stop lands within one step
const SAMPLE_EVERY = 2; // epochs between the samples written while training
const SAMPLE_CHARS = 160;
const MAX_UPLOAD = 4 << 20; // bytes: the poet's weights are 173 KB
const VOCAB = new Set("abcdefghijklmnopqrstuvwxyz \n,.");

const cliFor = ({ seed, temperature, sampleSeed }) =>
  `python -m demos.quantum_poet --epochs 20 --seed-text ${JSON.stringify(seed)} ` +
  `--temperature ${temperature} --sample-seed ${sampleSeed}`;

/** What the worker will make of a seed text: lowercased, filtered, the last 8, left-padded. */
export function cleanSeed(raw) {
  const kept = [];
  const dropped = [];
  [...raw].forEach((ch, i) => {
    const low = ch.toLowerCase();
    if (low.length === 1 && VOCAB.has(low)) kept.push(low);
    else dropped.push({ position: i, char: ch });
  });
  return { text: kept.join("").slice(-8).padStart(8, " "), dropped };
}

function toBase64(bytes) {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}

function fromBase64(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The loss curve on a log scale: every step's batch loss (thin) and each epoch's mean (dots). */
function drawLosses(canvas, steps, epochs, perEpoch) {
  const { ctx, width: w, height: hgt } = fitCanvas(canvas);
  ctx.clearRect(0, 0, w, hgt);
  const muted = cssColor(canvas, "--muted", "#888");
  const grid = cssColor(canvas, "--line", "#ddd");
  const left = 44;
  const bottom = 18;
  const pw = Math.max(1, w - left - 6);
  const ph = Math.max(1, hgt - bottom - 6);
  const all = [...steps, ...epochs].filter((v) => v > 0 && Number.isFinite(v));
  let lo = all.length ? Math.log10(Math.min(...all)) : -2;
  let hi = all.length ? Math.log10(Math.max(...all)) : 1;
  lo = Math.floor(Math.min(lo, -1));
  hi = Math.ceil(Math.max(hi, 0.5));
  const n = Math.max(steps.length, perEpoch * 2, 1);
  const X = (i) => left + (pw * i) / n;
  const Y = (v) => 6 + ph * (1 - (Math.log10(v) - lo) / (hi - lo));
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = muted;
  ctx.strokeStyle = grid;
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let e = lo; e <= hi; e++) {
    const y = Y(10 ** e);
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(w - 6, y);
    ctx.stroke();
    ctx.fillText(fmt(10 ** e, 3), left - 4, y);
  }
  ctx.textAlign = "left";
  ctx.textBaseline = "alphabetic";
  ctx.fillText(`step ${steps.length}`, left, hgt - 4);
  if (steps.length > 1) {
    ctx.strokeStyle = "#a5b4fc";
    ctx.beginPath();
    steps.forEach((v, i) => (i ? ctx.lineTo(X(i), Y(v)) : ctx.moveTo(X(i), Y(v))));
    ctx.stroke();
  }
  ctx.fillStyle = "#4f46e5";
  epochs.forEach((v, e) => {
    ctx.beginPath();
    ctx.arc(X((e + 1) * perEpoch), Y(v), 2.5, 0, 2 * Math.PI);
    ctx.fill();
  });
}

export default {
  id: "poet",
  title: "A model",
  section: "scale",
  async mount(el, { call, ready }) {
    const button = (text, props = {}) => h("button", { type: "button", ...props }, text);
    const trainBtn = button("Train", { className: "poet-train", disabled: true });
    const stopBtn = button("Stop", { className: "poet-stop", disabled: true });
    const resumeBtn = button("Resume", { className: "poet-resume", disabled: true });
    const canvas = h("canvas", {
      className: "plot poet-loss", role: "img",
      "aria-label": "Training loss per step (log scale), with each epoch's mean as a dot",
    });
    const out = (name) => h("dd", { dataset: { readout: name } }, "…");
    const readouts = h("dl", { className: "readouts" },
      h("dt", {}, "Epoch / step"), out("epoch"),
      h("dt", {}, "Loss"), out("loss"),
      h("dt", {}, "Parameters"), out("params"));
    const seedBox = h("input", {
      className: "poet-seed", type: "text", value: "quantum ", maxLength: 8, spellcheck: false,
      "aria-label": "Seed text: up to 8 characters",
    });
    const seedNote = h("span", { className: "poet-note", role: "status" });
    const temp = h("input", {
      className: "poet-temperature", type: "range", min: "0.3", max: "1.5", step: "0.05",
      value: "0.8", "aria-label": "Temperature",
    });
    const tempOut = h("output", {}, "0.8");
    const sampleSeed = h("input", {
      className: "poet-sample-seed", type: "number", min: "0", max: "999999", step: "1",
      value: "7", "aria-label": "Sample seed",
    });
    const generateBtn = button("Generate", { className: "poet-generate", disabled: true });
    const sample = h("pre", { className: "poet-text", "aria-live": "polite" }, "");
    const sampleNote = h("p", { className: "poet-sample-note" }, "");
    const downloadBtn = button("Download weights", { className: "poet-download", disabled: true });
    const fileInput = h("input", {
      className: "poet-upload", type: "file", accept: ".safetensors", disabled: true,
      "aria-label": "Load weights from a .safetensors file",
    });
    const message = h("p", { className: "poet-message", role: "status" }, "");
    const source = h("code", {}, "");
    const sourceCaption = h("figcaption", {}, "The Python that builds and trains it");
    const command = commandLine(cliFor({ seed: "quantum ", temperature: 0.8, sampleSeed: 7 }));
    el.append(
      h("p", { className: "demo-what" }, "tang.nn trains a 21,534-parameter character model " +
        "on 20 physics haikus right here, in pure Python in this page's worker: tensors with " +
        "reverse-mode autograd, Adam, then sampling one character at a time."),
      h("div", { className: "poet-buttons" }, trainBtn, stopBtn, resumeBtn),
      canvas,
      readouts,
      h("div", { className: "poet-controls" },
        h("label", {}, "Seed text ", seedBox), seedNote,
        h("label", {}, "Temperature ", temp, tempOut),
        h("label", {}, "Sample seed ", sampleSeed),
        generateBtn),
      sampleNote,
      sample,
      h("div", { className: "poet-files" }, downloadBtn,
        h("label", {}, "Load weights ", fileInput)),
      message,
      h("figure", { className: "poet-source" }, sourceCaption, h("pre", {}, source)),
      command,
    );
    const show = (name, text) => (el.querySelector(`[data-readout="${name}"]`).textContent = text);
    el.dataset.state = "loading";

    const stepLosses = [];
    let status = null; // the worker's last answer about the model
    let running = false; // a training loop is going
    let stopWanted = false;
    let lastSampleEpoch = 0;
    let busy = Promise.resolve(); // generate/export/import wait for each other

    // for tests and benchmarks: every step's batch loss and the worker's last status
    (window.tang ??= {}).poet = { stepLosses: () => [...stepLosses], status: () => status };

    const redraw = () => drawLosses(canvas, stepLosses, status?.losses ?? [],
      status?.steps_per_epoch ?? 43);
    onResize(canvas, redraw);

    function say(text, isError = false) {
      message.textContent = text;
      message.classList.toggle("panel-error", isError);
      el.dataset.message = isError ? "error" : "ok";
    }

    function setButtons() {
      const ok = status !== null;
      trainBtn.disabled = running || !ok;
      trainBtn.textContent = ok && status.step > 0 ? "Train again" : "Train";
      stopBtn.disabled = !running;
      resumeBtn.disabled = running || !ok || !status.stopped || status.done;
      generateBtn.disabled = !ok;
      downloadBtn.disabled = !ok || running;
      fileInput.disabled = !ok || running;
    }

    function showStatus(s) {
      status = s;
      if (s.batch_losses) stepLosses.push(...s.batch_losses);
      show("epoch", `${s.epoch} / ${s.target_epochs} · step ${s.step}`);
      const last = s.losses.length ? s.losses[s.losses.length - 1] : null;
      const batch = stepLosses.length ? stepLosses[stepLosses.length - 1] : null;
      show("loss", last === null && batch === null ? "not trained yet"
        : `${last === null ? "" : `epoch mean ${fmt(last, 4)}`}` +
          `${batch === null ? "" : `${last === null ? "" : " · "}last batch ${fmt(batch, 4)}`}`);
      show("params", s.params.toLocaleString("en-US"));
      el.dataset.epoch = String(s.epoch);
      el.dataset.step = String(s.step);
      el.dataset.loss = batch === null ? "" : String(batch);
      el.dataset.epochLoss = last === null ? "" : String(last);
      setButtons();
      redraw();
    }

    function seedParams() {
      const clean = cleanSeed(seedBox.value);
      let n = Number(sampleSeed.value);
      if (!Number.isInteger(n) || n < 0) n = 0;
      return { seed: clean, temperature: Number(temp.value), sampleSeed: n };
    }

    function updateSeedNote() {
      const { seed, temperature, sampleSeed: n } = seedParams();
      seedNote.textContent = seed.dropped.length
        ? `dropped ${seed.dropped.map((d) => JSON.stringify(d.char)).join(", ")}: not in the ` +
          "model's 30 symbols (a–z, space, newline, comma, period)"
        : "";
      el.dataset.dropped = String(seed.dropped.length);
      tempOut.textContent = String(temperature);
      setCommand(command, cliFor({ seed: seed.text, temperature, sampleSeed: n }));
    }

    function exclusive(task) {
      const run = busy.then(task, task);
      busy = run.catch(() => {});
      return run;
    }

    async function writeSample(length = SAMPLE_CHARS) {
      const { temperature, sampleSeed: n } = seedParams();
      const r = await call("poet.generate", {
        session: SESSION, seed_text: seedBox.value, temperature, sample_seed: n, length,
      });
      sample.textContent = r.seed.trimStart() + r.text;
      sampleNote.textContent = `After epoch ${r.epoch}, seed ${JSON.stringify(r.seed)}, ` +
        `temperature ${r.temperature}, sample seed ${r.sample_seed}:`;
      el.dataset.text = r.text;
      el.dataset.samples = String(Number(el.dataset.samples || 0) + 1);
      return r;
    }

    async function trainLoop() {
      running = true;
      stopWanted = false;
      el.dataset.state = "training";
      setButtons();
      try {
        while (!stopWanted) {
          const s = await call("poet.train", { session: SESSION, budget_ms: CHUNK_MS,
            max_steps: CHUNK_STEPS, epochs: EPOCHS });
          showStatus(s);
          if (s.epoch >= lastSampleEpoch + SAMPLE_EVERY || (s.done && s.epoch > lastSampleEpoch)) {
            lastSampleEpoch = s.epoch;
            await writeSample();
          }
          if (s.done || s.stopped) break;
          await new Promise((resolve) => setTimeout(resolve, 0)); // input and paint go first
        }
        if (stopWanted) {
          showStatus(await call("poet.stop", { session: SESSION }));
          el.dataset.state = "stopped";
          say(`Stopped at epoch ${status.epoch}, step ${status.step}: Resume continues from ` +
            "the same batch with the same optimizer state.");
        } else {
          el.dataset.state = "done";
          say(`Trained ${status.epoch} epochs.`);
        }
      } catch (err) {
        el.dataset.state = "error";
        say(`Training failed: ${err.message}`, true);
      } finally {
        running = false;
        setButtons();
      }
    }

    trainBtn.addEventListener("click", async () => {
      say("");
      running = true; // no second click while the fresh model is made
      setButtons();
      stepLosses.length = 0;
      lastSampleEpoch = 0;
      sample.textContent = "";
      sampleNote.textContent = "";
      try {
        showStatus(await exclusive(() => call("poet.create", { session: SESSION })));
      } catch (err) {
        running = false;
        setButtons();
        say(`The model could not be built: ${err.message}`, true);
        return;
      }
      await trainLoop();
    });
    stopBtn.addEventListener("click", () => {
      stopWanted = true;
      el.dataset.stepAtStop = el.dataset.step ?? "0";
      stopBtn.disabled = true;
    });
    resumeBtn.addEventListener("click", async () => {
      say("");
      showStatus(await call("poet.resume", { session: SESSION }));
      await trainLoop();
    });
    generateBtn.addEventListener("click", () => exclusive(async () => {
      try {
        await writeSample();
      } catch (err) {
        say(`Generate failed: ${err.message}`, true);
      }
    }));
    seedBox.addEventListener("input", updateSeedNote);
    temp.addEventListener("input", updateSeedNote);
    sampleSeed.addEventListener("input", updateSeedNote);

    downloadBtn.addEventListener("click", () => exclusive(async () => {
      try {
        const r = await call("poet.export", { session: SESSION });
        const blob = new Blob([fromBase64(r.data)], { type: "application/octet-stream" });
        const url = URL.createObjectURL(blob);
        const a = h("a", { href: url, download: r.filename });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
        say(`Saved ${r.filename} (${r.bytes.toLocaleString("en-US")} bytes, safetensors).`);
      } catch (err) {
        say(`Download failed: ${err.message}`, true);
      }
    }));
    fileInput.addEventListener("change", () => exclusive(async () => {
      const file = fileInput.files?.[0];
      fileInput.value = "";
      if (!file) return;
      try {
        if (file.size > MAX_UPLOAD) {
          throw new Error(`${file.name} is ${file.size.toLocaleString("en-US")} bytes; the ` +
            "poet's weights are about 173 KB");
        }
        const bytes = new Uint8Array(await file.arrayBuffer());
        const s = await call("poet.import", { session: SESSION, data: toBase64(bytes) });
        showStatus(s);
        say(`Loaded ${file.name}: the model now holds its weights.`);
        el.dataset.loaded = String(Number(el.dataset.loaded || 0) + 1);
        await writeSample();
      } catch (err) {
        say(`Rejected ${file.name}: ${err.message}. The model is unchanged.`, true);
      }
    }));
    updateSeedNote();

    try {
      await ready;
    } catch {
      el.dataset.state = "error";
      say("Python did not start, so the model cannot train.", true);
      return;
    }
    try {
      const [src, s] = await Promise.all([
        call("poet.source"),
        call("poet.create", { session: SESSION }),
      ]);
      source.textContent = src.source;
      const last = src.first_line + src.source.trimEnd().split("\n").length - 1;
      sourceCaption.textContent = `The Python that builds and trains it: ${src.file}, lines ` +
        `${src.first_line}–${last} (read from the module by the worker)`;
      showStatus(s);
      el.dataset.state = "idle";
    } catch (err) {
      el.dataset.state = "error";
      say(`The model could not be built: ${err.message}`, true);
    }
  },
};
