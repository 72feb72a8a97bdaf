// The "An LLM" card's DOM (./llm.js is its controller): Load with its progress and Stop,
// Forget, the chat box with temperature, seed and length, the streamed reply, the readouts
// the worker measured (demos/llm_card.py), and the desktop command. Text goes in as text.
import { readouts } from "../lib/card.js";
import { commandLine } from "../lib/command.js";
import { h } from "../lib/dom.js";
import { fmt } from "../lib/format.js";

export const mb = (bytes) => `${fmt(bytes / 1e6, 3)} MB`;

/** Build the card in `el`; returns its controls and the functions that fill it. */
export function llmView(el, command) {
  const button = (text, className) =>
    h("button", { type: "button", className, disabled: true }, text);
  const number = (className, label, props) =>
    h("label", { className: "llm-field" }, label, h("input", { type: "number", className, ...props }));
  const { list, show } = readouts([
    ["Runs on", "device"], ["Weights on the GPU", "weights"], ["Memory on the GPU", "memory"],
    ["Kernels per token", "kernels"], ["Tokens per second", "speed"],
    ["Speed of light", "light"],
  ]);
  const v = {
    show,
    loadBtn: button("Load SmolLM2-135M-Instruct", "llm-load"),
    stopLoadBtn: h("button", { type: "button", className: "llm-load-stop", disabled: true,
      hidden: true }, "Stop"),
    forgetBtn: button("Forget the model", "llm-forget"),
    progress: h("progress", { className: "llm-progress", max: 1, value: 0,
      "aria-label": "Loading the model" }),
    progressText: h("span", { className: "llm-progress-text", role: "status" }, ""),
    prompt: h("textarea", { className: "llm-prompt", rows: 2, maxLength: 2000, disabled: true,
      "aria-label": "Your message to the model", placeholder: "Ask SmolLM2 something…" }),
    sendBtn: button("Send", "llm-send"),
    stopBtn: button("Stop", "llm-stop"),
    temperature: number("llm-temperature", "temperature",
      { min: "0", max: "2", step: "0.1", value: "0" }),
    seed: number("llm-seed", "seed", { min: "0", max: "999999", step: "1", value: "0" }),
    maxTokens: number("llm-max-tokens", "tokens", { min: "1", max: "256", step: "1", value: "48" }),
    reply: h("div", { className: "llm-chat", "aria-live": "polite" }),
    message: h("p", { className: "llm-message", role: "status" }, ""),
    where: h("span", { className: "llm-where" }, ""),
  };
  el.append(
    h("p", { className: "demo-what" }, "A real pretrained model, 135 M parameters, run by " +
      "Python in this tab's worker: tang reads the GGUF file, lowers each decode step to " +
      "WGSL kernels from comprehensions, and this browser's WebGPU runs them; the 4-bit " +
      "weights stay 4-bit on the GPU. ", v.where),
    h("div", { className: "run-progress llm-loading" }, v.loadBtn, v.stopLoadBtn, v.progress,
      v.progressText, v.forgetBtn),
    v.message,
    v.reply,
    h("div", { className: "llm-ask" }, v.prompt,
      h("div", { className: "llm-controls" }, v.temperature, v.seed, v.maxTokens, v.sendBtn,
        v.stopBtn)),
    list, commandLine(command),
  );
  v.say = (text, isError = false) => {
    v.message.textContent = text;
    v.message.classList.toggle("error", isError);
  };
  /** A new turn: the visitor's message, then an empty reply that `append` fills. */
  v.turn = (text) => {
    const answer = h("p", { className: "llm-answer" });
    v.reply.append(h("p", { className: "llm-user" }, text), answer);
    v.answer = answer;
    v.reply.scrollTop = v.reply.scrollHeight;
  };
  /** Take back the last turn (a request the worker refused before any token). */
  v.unturn = () => {
    v.answer?.previousElementSibling?.remove();
    v.answer?.remove();
    v.answer = null;
  };
  v.append = (text) => {
    v.answer.textContent += text;
    v.reply.scrollTop = v.reply.scrollHeight;
  };
  /** The readouts of the loaded model (llm_card.load_step's facts). */
  v.showModel = (f) => {
    show("device", `${f.device.name} (WebGPU), copy ${fmt(f.copy_gbs, 3)} GB/s measured at load`);
    show("weights", `${f.weights} blocks as in the file: ${mb(f.weight_bytes)} read per token`);
    show("memory", `${mb(f.device_bytes)} (weights, key/value cache of ${f.capacity} positions)`);
    show("kernels", `${f.kernels_per_token.toLocaleString("en")} dispatches of ` +
      `${f.kernels_lowered} kernels, all lowered by the tensor IR`);
    show("light", `${fmt(f.light_tok_s, 3)} tok/s (weight bytes per token ÷ copy bandwidth)`);
  };
  /** Tokens per second and the fraction of the speed of light (llm_card.chat_step's answer). */
  v.showSpeed = (r, facts) => {
    const decode = r.decode_tok_s ? `decode ${fmt(r.decode_tok_s, 3)}` : "decode …";
    show("speed", `prompt ${fmt(r.prefill_tok_s, 3)} · ${decode} tok/s`);
    if (r.decode_tok_s && facts?.light_tok_s) {
      const pct = (100 * r.decode_tok_s) / facts.light_tok_s;
      show("light", `${fmt(facts.light_tok_s, 3)} tok/s; decoding at ${fmt(pct, 2)}% of it`);
    }
  };
  return v;
}
