// The "A model" card's DOM and loss plot (./poet.js is its controller): Train/Stop/Resume,
// the CPU/GPU switch, the loss curve, the readouts, the sampling controls and text, the weight files, the
// Python source the worker reads from demos/poet_model.py, and the desktop command.
import { readouts } from "../lib/card.js";
import { cssColor, disc, fitCanvas } from "../lib/canvas.js";
import { commandLine } from "../lib/command.js";
import { h } from "../lib/dom.js";
import { fmt } from "../lib/format.js";

/** Build the card in `el`; returns its controls and `show(readout, text)`, `say(text,
 * isError)` (the message line, also data-message) and `showSource(answer of poet.source)`. */
export function poetView(el, firstCommand) {
  const button = (text, props = {}) => h("button", { type: "button", ...props }, text);
  const { list, show } = readouts([
    ["Epoch / step", "epoch"], ["Loss", "loss"], ["Parameters", "params"], ["Trains on", "device"],
  ]);
  const radio = (value, props) => h("input", {
    type: "radio", name: "poet-device", value, className: `poet-device-${value}`, ...props,
  });
  const v = {
    show,
    trainBtn: button("Train", { className: "poet-train", disabled: true }),
    stopBtn: button("Stop", { className: "poet-stop", disabled: true }),
    resumeBtn: button("Resume", { className: "poet-resume", disabled: true }),
    deviceCpu: radio("cpu", { checked: true }),
    deviceGpu: radio("gpu", { disabled: true, "aria-describedby": "poet-device-note" }),
    deviceNote: h("span", { className: "poet-device-note", id: "poet-device-note" },
      "looking for a WebGPU adapter…"),
    // the switch's progress: "Switching to the CPU…", then confirmed or why it failed
    deviceState: h("span", { className: "poet-device-state", role: "status" }, ""),
    canvas: h("canvas", {
      className: "plot poet-loss", role: "img",
      "aria-label": "Training loss per step (log scale), with each epoch's mean as a dot",
    }),
    seedBox: h("input", {
      className: "poet-seed", type: "text", value: "quantum ", maxLength: 8, spellcheck: false,
      "aria-label": "Seed text: up to 8 characters",
    }),
    seedNote: h("span", { className: "poet-note", role: "status" }),
    temp: h("input", {
      className: "poet-temperature", type: "range", min: "0.3", max: "1.5", step: "0.05",
      value: "0.8", "aria-label": "Temperature",
    }),
    tempOut: h("output", {}, "0.8"),
    sampleSeed: h("input", {
      className: "poet-sample-seed", type: "number", min: "0", max: "999999", step: "1",
      value: "7", "aria-label": "Sample seed",
    }),
    generateBtn: button("Generate", { className: "poet-generate", disabled: true }),
    sample: h("pre", { className: "poet-text", "aria-live": "polite" }, ""),
    sampleNote: h("p", { className: "poet-sample-note" }, ""),
    downloadBtn: button("Download weights", { className: "poet-download", disabled: true }),
    fileInput: h("input", {
      className: "poet-upload", type: "file", accept: ".safetensors", disabled: true,
      "aria-label": "Load weights from a .safetensors file",
    }),
    command: commandLine(firstCommand),
  };
  const message = h("p", { className: "poet-message", role: "status" }, "");
  const source = h("code", {}, "");
  const sourceCaption = h("figcaption", {}, "The Python that builds and trains it");
  el.append(
    h("p", { className: "demo-what" }, "tang.nn trains the Quantum Poet, a 21,534-parameter " +
      "character model, on 20 physics haikus right here, in pure Python in this page's " +
      "worker: tensors with reverse-mode autograd, Adam, then sampling one character at a " +
      "time. On the GPU, the " +
      "whole training step is compiled from the tensor IR and runs on this page's WebGPU."),
    h("div", { className: "poet-buttons" }, v.trainBtn, v.stopBtn, v.resumeBtn),
    h("fieldset", { className: "poet-device" }, h("legend", {}, "Train on"),
      h("label", {}, v.deviceCpu, " CPU (pure Python)"),
      h("label", {}, v.deviceGpu, " GPU (WebGPU, the step compiled from the tensor IR)"),
      v.deviceNote, v.deviceState),
    v.canvas,
    list,
    h("div", { className: "poet-controls" },
      h("label", {}, "Seed text ", v.seedBox), v.seedNote,
      h("label", {}, "Temperature ", v.temp, v.tempOut),
      h("label", {}, "Sample seed ", v.sampleSeed),
      v.generateBtn),
    v.sampleNote,
    v.sample,
    h("div", { className: "poet-files" }, v.downloadBtn,
      h("label", {}, "Load weights ", v.fileInput)),
    message,
    h("figure", { className: "poet-source" }, sourceCaption, h("pre", {}, source)),
    v.command,
  );
  v.say = (text, isError = false) => {
    message.textContent = text;
    message.classList.toggle("panel-error", isError);
    el.dataset.message = isError ? "error" : "ok";
  };
  v.showSource = (src) => {
    source.textContent = src.source;
    const last = src.first_line + src.source.trimEnd().split("\n").length - 1;
    sourceCaption.textContent = `The Python that builds and trains it: ${src.file}, lines ` +
      `${src.first_line}–${last} (read from the module by the worker)`;
  };
  return v;
}

/** The loss curve on a log scale: every step's batch loss (thin; null where the GPU did not
 * read it back) and each epoch's mean (dots). */
export function drawLosses(canvas, steps, epochs, perEpoch) {
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
  const n = Math.max(steps.length, perEpoch * Math.max(2, epochs.length), 1);
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
  const read = steps.flatMap((v, i) => (v === null ? [] : [[X(i), Y(v)]])); // GPU: sparse
  if (read.length > 1) {
    ctx.strokeStyle = "#a5b4fc";
    ctx.beginPath();
    read.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
    ctx.stroke();
  }
  ctx.fillStyle = "#4f46e5";
  epochs.forEach((v, e) => disc(ctx, [X((e + 1) * perEpoch), Y(v)], 2.5));
}
