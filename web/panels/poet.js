// Same idea, every scale · 4. A model: the Quantum Poet, a 21,534-parameter character model of
// physics haikus, trained by tang.nn in this page's worker (pure Python). Training runs as a
// loop of short worker calls (poet.train, one step each), so the page stays responsive and
// Stop takes effect after the step in flight. Every few epochs the card writes a sample.
// The CPU/GPU switch moves training onto this page's WebGPU adapter (the whole step compiled
// from the tensor IR, demos/poet_device.py) and back, mid-epoch included; with no adapter the
// GPU option is disabled and says why. A click (or arrow key) on the switch shows at once as
// "switching to …", then as confirmed once the worker has moved training, or reverted with why.
// The Python shown is read from demos/poet_model.py by the worker (poet.source).
// ./poet-view.js builds the card and draws the loss; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { onResize } from "../lib/canvas.js";
import { setCommand } from "../lib/command.js";
import { downloadBytes, fromBase64, toBase64 } from "../lib/files.js";
import { fmt } from "../lib/format.js";
import { drawLosses, poetView } from "./poet-view.js";

const SESSION = "page"; // Train runs the worker's epochs (demos/poet_model.py's EPOCHS)
const CHUNK_MS = 100; // worker time per call, at most; one step takes 50–100 ms in Pyodide
const CHUNK_STEPS = 1; // one step a call: Stop lands within one step
// On the GPU a step is ~14 ms but each read back waits ~0.1 s for the queue: one epoch a call
// (its mean and last loss read back; 0.6–0.9 s on lavapipe, so Stop lands within that)
const GPU_CHUNK_STEPS = 43;
const SAMPLE_EVERY = 2; // epochs between the samples written while training
const SAMPLE_CHARS = 160;
const MAX_UPLOAD = 4 << 20; // bytes: the poet's weights are 173 KB
const VOCAB = new Set("abcdefghijklmnopqrstuvwxyz \n,.");

const DEVICE_NAMES = { cpu: "CPU", gpu: "GPU" };

/** The desktop command for the card's controls. `epochs` is the worker's count; before Python
 * answers it is left out (the command line's default is the same number). */
const cliFor = ({ epochs, seed, temperature, sampleSeed }) =>
  `python -m demos.quantum_poet${epochs ? ` --epochs ${epochs}` : ""} ` +
  `--seed-text ${JSON.stringify(seed)} --temperature ${temperature} --sample-seed ${sampleSeed}`;

/** `dropped` characters (cleanSeed's) as a phrase: '"!", "?"'. */
const droppedList = (dropped) => dropped.map((d) => JSON.stringify(d.char)).join(", ");

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

export default {
  id: "poet",
  title: "A model",
  section: "scale",
  async mount(el, { call, ready }) {
    const view = poetView(el, cliFor({ seed: "quantum ", temperature: 0.8, sampleSeed: 7 }));
    el.dataset.state = "loading";
    const poet = new PoetCard(el, view, call);

    // for tests and benchmarks: every step's batch loss and the worker's last status
    (window.tang ??= {}).poet = { stepLosses: () => [...poet.stepLosses], status: () => poet.status };
    onResize(view.canvas, () => poet.redraw());

    view.trainBtn.addEventListener("click", () => poet.trainFresh());
    view.stopBtn.addEventListener("click", () => {
      poet.stopWanted = true;
      el.dataset.stepAtStop = el.dataset.step ?? "0";
      view.stopBtn.disabled = true;
    });
    view.resumeBtn.addEventListener("click", async () => {
      view.say("");
      poet.showStatus(await call("poet.resume", { session: SESSION }));
      await poet.trainLoop();
    });
    view.generateBtn.addEventListener("click", () => poet.exclusive(async () => {
      try {
        await poet.writeSample();
      } catch (err) {
        view.say(`Generate failed: ${err.message}`, true);
      }
    }));
    for (const input of [view.seedBox, view.temp, view.sampleSeed]) {
      input.addEventListener("input", () => poet.updateSeedNote());
    }
    view.downloadBtn.addEventListener("click", () => poet.exclusive(() => poet.download()));
    view.fileInput.addEventListener("change", () => poet.exclusive(() => poet.upload()));
    for (const radio of [view.deviceCpu, view.deviceGpu]) {
      radio.addEventListener("change", () => radio.checked && poet.chooseDevice(radio.value));
    }
    poet.updateSeedNote();

    const failed = () => view.say("Python did not start, so the model cannot train.", true);
    if (!(await pythonStarted(ready, el, failed))) return;
    try {
      const [src, s] = await Promise.all([
        call("poet.source"),
        call("poet.create", { session: SESSION }),
        poet.findDevices(),
      ]);
      view.showSource(src);
      poet.showStatus(s);
      el.dataset.state = "idle";
    } catch (err) {
      el.dataset.state = "error";
      view.say(`The model could not be built: ${err.message}`, true);
    }
  },
};

/** The card's state: the model lives in the worker (session SESSION); the page keeps every
 * step's loss, the worker's last status, and whether a training loop runs. */
class PoetCard {
  constructor(el, view, call) {
    this.el = el;
    this.view = view;
    this.call = call;
    this.stepLosses = [];
    this.status = null; // the worker's last answer about the model
    this.running = false; // a training loop is going
    this.stopWanted = false;
    this.lastSampleEpoch = 0;
    this.busy = Promise.resolve(); // generate/export/import/switch wait for each other
    this.gpuAvailable = false; // poet.devices found a WebGPU adapter
    this.wantedDevice = null; // the switch's choice while the worker has not answered it
    this.switchTicket = 0; // counts choices: only the latest one's answer settles the switch
  }

  redraw() {
    drawLosses(this.view.canvas, this.stepLosses, this.status?.losses ?? [],
      this.status?.steps_per_epoch ?? 43);
  }

  setButtons() {
    const { view, status, running } = this;
    const ok = status !== null;
    view.trainBtn.disabled = running || !ok;
    view.trainBtn.textContent = ok && status.step > 0 ? "Train again" : "Train";
    view.stopBtn.disabled = !running;
    view.resumeBtn.disabled = running || !ok || !status.stopped || status.done;
    view.generateBtn.disabled = !ok;
    view.downloadBtn.disabled = !ok || running;
    view.fileInput.disabled = !ok || running;
    view.deviceCpu.disabled = !ok;
    view.deviceGpu.disabled = !ok || !this.gpuAvailable;
  }

  showStatus(s) {
    const { el, view, stepLosses } = this;
    const epochsChanged = s.target_epochs !== this.status?.target_epochs;
    this.status = s;
    if (s.batch_losses) stepLosses.push(...s.batch_losses);
    view.show("epoch", `${s.epoch} / ${s.target_epochs} · step ${s.step}`);
    const last = s.losses.length ? s.losses[s.losses.length - 1] : null;
    const batch = stepLosses.length ? stepLosses[stepLosses.length - 1] : null;
    view.show("loss", last === null && batch === null ? "not trained yet"
      : `${last === null ? "" : `epoch mean ${fmt(last, 4)}`}` +
        `${batch === null ? "" : `${last === null ? "" : " · "}last batch ${fmt(batch, 4)}`}`);
    view.show("params", s.params.toLocaleString("en-US"));
    view.show("device", s.device === "gpu" ? `GPU: ${s.device_name}` : "CPU (pure Python)");
    const shown = this.wantedDevice ?? s.device; // a pending choice stays shown
    view.deviceGpu.checked = shown === "gpu";
    view.deviceCpu.checked = shown !== "gpu";
    el.dataset.device = s.device;
    el.dataset.epoch = String(s.epoch);
    el.dataset.step = String(s.step);
    el.dataset.loss = batch === null ? "" : String(batch);
    el.dataset.epochLoss = last === null ? "" : String(last);
    this.setButtons();
    this.redraw();
    if (epochsChanged) this.updateSeedNote(); // the command shows the epochs Train runs
  }

  seedParams() {
    const { view } = this;
    const clean = cleanSeed(view.seedBox.value);
    let n = Number(view.sampleSeed.value);
    if (!Number.isInteger(n) || n < 0) n = 0;
    return { seed: clean, temperature: Number(view.temp.value), sampleSeed: n };
  }

  /** Say which typed characters the model cannot use; the command follows the controls. */
  updateSeedNote() {
    const { view } = this;
    const { seed, temperature, sampleSeed: n } = this.seedParams();
    view.seedNote.textContent = seed.dropped.length
      ? `Dropped ${droppedList(seed.dropped)}: not among the model's 30 symbols (a–z, ` +
        `space, newline, comma, period), so the seed is ${JSON.stringify(seed.text)}.`
      : "";
    this.el.dataset.dropped = String(seed.dropped.length);
    view.tempOut.textContent = String(temperature);
    const epochs = this.status?.target_epochs;
    setCommand(view.command, cliFor({ epochs, seed: seed.text, temperature, sampleSeed: n }));
  }

  /** Run `task` after every task started before it (one worker model, one user of it). */
  exclusive(task) {
    const run = this.busy.then(task, task);
    this.busy = run.catch(() => {});
    return run;
  }

  async writeSample(length = SAMPLE_CHARS) {
    const { el, view } = this;
    const { temperature, sampleSeed: n } = this.seedParams();
    const r = await this.call("poet.generate", {
      session: SESSION, seed_text: view.seedBox.value, temperature, sample_seed: n, length,
    });
    view.sample.textContent = r.seed.trimStart() + r.text;
    const dropped = r.dropped.length ? ` (${droppedList(r.dropped)} dropped)` : "";
    view.sampleNote.textContent = `After epoch ${r.epoch}, seed ${JSON.stringify(r.seed)}` +
      `${dropped}, temperature ${r.temperature}, sample seed ${r.sample_seed}:`;
    el.dataset.text = r.text;
    el.dataset.samples = String(Number(el.dataset.samples || 0) + 1);
    return r;
  }

  /** Offer the GPU when the worker finds a WebGPU adapter; else keep it disabled, saying why. */
  async findDevices() {
    const { el, view } = this;
    let gpu;
    try {
      gpu = (await this.call("poet.devices")).gpu;
    } catch (err) {
      gpu = { available: false, reason: err.message };
    }
    this.gpuAvailable = gpu.available;
    view.deviceNote.textContent = gpu.available ? `adapter: ${gpu.name}`
      : `GPU unavailable: ${gpu.reason}`;
    el.dataset.gpu = gpu.available ? "available" : "unavailable";
    this.setButtons();
  }

  /** The switch was clicked (or moved by a key): show the choice at once as pending, then
   * ask the worker (after any generate/export/import in flight). */
  chooseDevice(device) {
    const ticket = ++this.switchTicket;
    this.wantedDevice = device;
    this.el.dataset.deviceWanted = device;
    this.showSwitch("pending", `Switching to the ${DEVICE_NAMES[device]}…`);
    return this.exclusive(() => this.switchDevice(device, ticket));
  }

  /** The switch's state line (and data-device-switch: pending, done or failed). */
  showSwitch(state, text) {
    this.el.dataset.deviceSwitch = state;
    this.view.deviceState.textContent = text;
    this.view.deviceState.classList.toggle("panel-error", state === "failed");
  }

  /** Train on `device` from the next step on; the worker moves the parameters, the Adam
   * state and the place in the epoch over, so training continues exactly. The switch is
   * settled by the answer to the latest choice: confirmed, or reverted saying why. */
  async switchDevice(device, ticket) {
    let s = null;
    let why = "";
    try {
      s = await this.call("poet.device", { session: SESSION, device });
      if (s.device !== device) why = s.device_error || `the worker stayed on the ${s.device}`;
    } catch (err) {
      why = err.message;
    }
    const latest = ticket === this.switchTicket;
    if (latest) this.wantedDevice = null;
    if (s ?? this.status) this.showStatus(s ?? this.status);
    if (!latest) return; // a later choice is pending: its answer settles the switch
    if (why) {
      this.showSwitch("failed", `Could not switch to the ${DEVICE_NAMES[device]}: ${why}`);
    } else {
      const where = s.device === "gpu" ? `GPU (${s.device_name})` : "CPU";
      this.showSwitch("done", `Training on the ${where} from epoch ${s.epoch}, step ${s.step}.`);
    }
  }

  /** Train: a fresh model, then the training loop. */
  async trainFresh() {
    const { view } = this;
    view.say("");
    this.running = true; // no second click while the fresh model is made
    this.setButtons();
    this.stepLosses.length = 0;
    this.lastSampleEpoch = 0;
    view.sample.textContent = "";
    view.sampleNote.textContent = "";
    try {
      // a fresh model on the device chosen, once any switch in flight has settled
      this.showStatus(await this.exclusive(() =>
        this.call("poet.create", { session: SESSION, device: this.status?.device ?? "cpu" })));
    } catch (err) {
      this.running = false;
      this.setButtons();
      view.say(`The model could not be built: ${err.message}`, true);
      return;
    }
    await this.trainLoop();
  }

  /** One poet.train call per step until done or Stop; a sample every SAMPLE_EVERY epochs. */
  async trainLoop() {
    const { el, view } = this;
    this.running = true;
    this.stopWanted = false;
    el.dataset.state = "training";
    this.setButtons();
    try {
      while (!this.stopWanted) {
        const steps = this.status?.device === "gpu" ? GPU_CHUNK_STEPS : CHUNK_STEPS;
        const s = await this.call("poet.train", { session: SESSION, budget_ms: CHUNK_MS,
          max_steps: steps, epochs: this.status.target_epochs });
        this.showStatus(s);
        const since = this.lastSampleEpoch;
        if (s.epoch >= since + SAMPLE_EVERY || (s.done && s.epoch > since)) {
          this.lastSampleEpoch = s.epoch;
          await this.writeSample();
        }
        if (s.done || s.stopped) break;
        await new Promise((resolve) => setTimeout(resolve, 0)); // input and paint go first
      }
      if (this.stopWanted) {
        this.showStatus(await this.call("poet.stop", { session: SESSION }));
        el.dataset.state = "stopped";
        view.say(`Stopped at epoch ${this.status.epoch}, step ${this.status.step}: Resume ` +
          "continues from the same batch with the same optimizer state.");
      } else {
        el.dataset.state = "done";
        view.say(`Trained ${this.status.epoch} epochs.`);
      }
    } catch (err) {
      el.dataset.state = "error";
      view.say(`Training failed: ${err.message}`, true);
    } finally {
      this.running = false;
      this.setButtons();
    }
  }

  async download() {
    try {
      const r = await this.call("poet.export", { session: SESSION });
      downloadBytes(fromBase64(r.data), r.filename);
      this.view.say(`Saved ${r.filename} (${r.bytes.toLocaleString("en-US")} bytes, safetensors).`);
    } catch (err) {
      this.view.say(`Download failed: ${err.message}`, true);
    }
  }

  /** Load the chosen .safetensors file into the worker's model; a bad file changes nothing. */
  async upload() {
    const { el, view } = this;
    const file = view.fileInput.files?.[0];
    view.fileInput.value = "";
    if (!file) return;
    try {
      if (file.size > MAX_UPLOAD) {
        throw new Error(`${file.name} is ${file.size.toLocaleString("en-US")} bytes; the ` +
          "poet's weights are about 173 KB");
      }
      const bytes = new Uint8Array(await file.arrayBuffer());
      this.showStatus(await this.call("poet.import", { session: SESSION, data: toBase64(bytes) }));
      view.say(`Loaded ${file.name}: the model now holds its weights.`);
      el.dataset.loaded = String(Number(el.dataset.loaded || 0) + 1);
      await this.writeSample();
    } catch (err) {
      view.say(`Rejected ${file.name}: ${err.message}. The model is unchanged.`, true);
    }
  }
}
