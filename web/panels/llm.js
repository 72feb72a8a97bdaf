// Same idea, every scale · 6. An LLM: SmolLM2-135M-Instruct decoded in this tab by kernels
// tang derives, on this browser's WebGPU. Nothing is fetched until Load; the file is kept in
// Cache Storage (Forget deletes it). Loading and decoding are loops of short worker calls
// (llm_card.load_step, llm_card.chat_step: one token each), so the other cards keep running between
// them and Stop lands within one token. ./llm-view.js builds the card; this is the controller.
import { pythonStarted } from "../lib/card.js";
import { runChunks } from "../lib/loop.js";
import { llmView, mb } from "./llm-view.js";

const COMMAND = 'python -m demos.llm --chat "What is the capital of France?"';
const STAGES = {
  check: "checking the file's sha256…",
  parse: "reading the GGUF (tokenizer, tensors)…",
  upload: "putting the weights on the GPU, still 4-bit…",
  compile: "compiling the decode step: WGSL kernels from comprehensions…",
  measure: "measuring this adapter's copy bandwidth…",
  ready: "ready",
};

/** The card's state and its three actions (load, send, forget) over the worker's llm_card.*. */
class LlmCard {
  constructor(el, view, call) {
    Object.assign(this, { el, v: view, call, status: null, facts: null, controller: null });
  }

  idle() {
    const { el, v, status } = this;
    el.dataset.state = "idle";
    const cached = status.cached ? ", cached in this browser" : "";
    v.loadBtn.textContent = `Load ${status.model} (${mb(status.size)}${cached})`;
    v.loadBtn.disabled = false;
    v.forgetBtn.disabled = !status.cached;
    v.progress.value = 0;
    v.progressText.textContent = "";
  }

  /** Move focus to `target` when the control that had it went disabled or hidden (focus is
   * then on the page itself) or is in this card; never away from another card. */
  refocus(target) {
    const at = document.activeElement;
    if (!at || at === document.body || this.el.contains(at)) target.focus();
  }

  chatting(on) {
    this.v.prompt.disabled = this.v.sendBtn.disabled = !on;
    this.v.stopBtn.disabled = true;
  }

  showProgress(p) {
    const { el, v } = this;
    if (p.stage === "download") {
      v.progress.value = p.total_bytes ? p.done_bytes / p.total_bytes : 0;
      v.progressText.textContent = `${mb(p.done_bytes)} of ${mb(p.total_bytes)} from ${from(p.source)}`;
    } else {
      v.progress.value = 1;
      v.progressText.textContent = STAGES[p.stage] ?? p.stage;
    }
    if (p.note) v.say(p.note);
    el.dataset.source = p.source;
  }

  /** Load the model in slices (llm_card.load_step) until it is on the GPU, or Stop. */
  async load() {
    const { el, v, call } = this;
    this.controller = new AbortController();
    const { signal } = this.controller;
    v.loadBtn.disabled = v.forgetBtn.disabled = true;
    v.stopLoadBtn.disabled = v.stopLoadBtn.hidden = false;
    el.dataset.state = "loading";
    v.say("");
    try {
      this.showProgress(await call("llm_card.load", {}, { signal }));
      const { stopped, last } = await runChunks(() => call("llm_card.load_step", {}, { signal }),
        { signal, onProgress: (p) => this.showProgress(p) });
      if (stopped) {
        await call("llm_card.load_stop").catch(() => {});
        this.idle();
        v.say("Stopped: nothing of the model was kept.");
        this.refocus(v.loadBtn);
        return;
      }
      this.ready(last);
      this.refocus(v.prompt);
    } catch (err) {
      await call("llm_card.load_stop").catch(() => {});
      this.idle();
      el.dataset.state = signal.aborted ? "idle" : "error";
      v.say(signal.aborted ? "Stopped." : `Loading failed: ${err.message}`, !signal.aborted);
      this.refocus(v.loadBtn);
    } finally {
      v.stopLoadBtn.disabled = v.stopLoadBtn.hidden = true;
    }
  }

  ready(last) {
    const { el, v } = this;
    const facts = (this.facts = last.facts);
    v.showModel(facts);
    Object.assign(el.dataset, { state: "ready", loadedFrom: last.source,
      lightTokS: String(facts.light_tok_s), copyGbs: String(facts.copy_gbs),
      adapter: facts.device.name });
    this.status.cached = true;
    v.loadBtn.textContent = "Loaded";
    v.forgetBtn.disabled = false;
    v.progressText.textContent = `loaded from ${from(last.source)}`;
    this.chatting(true);
    const greedy = "Greedy decoding (temperature 0) gives the same reply every time.";
    v.say(last.note ? `${last.note} ${greedy}` : `Ask something. ${greedy}`);
  }

  /** One reply, a token per worker call (llm_card.chat_step), streamed into the chat. */
  async send() {
    const { el, v, call } = this;
    const text = v.prompt.value.trim();
    if (!text) {
      v.say("Type a message first.", true);
      return;
    }
    this.controller = new AbortController();
    const { signal } = this.controller;
    this.chatting(false);
    v.stopBtn.disabled = false;
    this.refocus(v.stopBtn); // the disabled Send and prompt would drop it
    v.forgetBtn.disabled = true;
    el.dataset.state = "generating";
    delete el.dataset.finish;
    v.turn(text);
    let shown = [];
    const onProgress = (r) => {
      v.append(r.text);
      shown = r.tokens;
      Object.assign(el.dataset, { tokens: JSON.stringify(r.tokens),
        prefillTokS: String(r.prefill_tok_s), decodeTokS: String(r.decode_tok_s) });
      v.showSpeed(r, this.facts);
      v.say(r.prompt_done < r.prompt_tokens
        ? `Reading your message: ${r.prompt_done} of ${r.prompt_tokens} tokens…`
        : `${r.tokens.length} tokens`);
    };
    try {
      const number = (label) => Number(label.querySelector("input").value);
      const params = { prompt: text, temperature: number(v.temperature), seed: number(v.seed),
        max_tokens: number(v.maxTokens) };
      const first = await call("llm_card.chat", params, { signal });
      v.say(`Reading your message: ${first.prompt_tokens} tokens in the chat template…`);
      const { stopped, last } = await runChunks(() => call("llm_card.chat_step", {}, { signal }),
        { signal, onProgress });
      if (stopped) {
        const after = await call("llm_card.chat_stop").catch(() => null);
        Object.assign(el.dataset, { state: "stopped", stoppedAt: String(shown.length) });
        if (after) el.dataset.workerTokens = String(after.tokens);
        v.say(`Stopped after ${shown.length} tokens.`);
        return;
      }
      Object.assign(el.dataset, { state: "done", finish: last.finish });
      v.say(last.finish === "stop" ? `${last.tokens.length} tokens: the model ended its turn.`
        : `${last.tokens.length} tokens: the length you asked for.`);
    } catch (err) {
      el.dataset.state = "error";
      if (!shown.length) v.unturn();
      v.say(`The reply failed: ${err.message}`, true);
    } finally {
      this.chatting(true);
      v.forgetBtn.disabled = false;
      this.refocus(v.prompt);
    }
  }

  /** Delete the cached copy and free the model (llm_card.forget). */
  async forget() {
    const { v } = this;
    this.controller?.abort();
    v.forgetBtn.disabled = true;
    this.chatting(false);
    try {
      await this.call("llm_card.forget");
      this.status.cached = false;
      this.facts = null;
      for (const key of ["device", "weights", "memory", "kernels", "speed", "light"]) {
        v.show(key, "…");
      }
      v.reply.replaceChildren();
      this.idle();
      v.say("Forgotten: the cached copy is deleted and the GPU memory freed.");
      this.refocus(v.loadBtn);
    } catch (err) {
      v.say(`Could not forget the model: ${err.message}`, true);
    }
  }

  /** Without an adapter: say so, and why Load stays off. */
  noAdapter() {
    const { el, v, status } = this;
    el.dataset.state = "no-adapter";
    v.where.textContent = "This browser offers no WebGPU adapter, so Load is off.";
    v.loadBtn.textContent = `Load ${status.model} (needs WebGPU)`;
    v.loadBtn.title = status.no_adapter;
    v.say(`No WebGPU adapter here (${status.no_adapter}). Decoding needs one: tang's ` +
      "pure-Python kernels would take minutes per token for 135 M parameters (about one " +
      "even in desktop CPython). A browser with WebGPU (Chrome, Edge; Firefox and Safari in " +
      "recent versions) runs it, as does the desktop command below.");
  }
}

const from = (source) => (source === "cache" ? "this browser's cache" : "the site");

export default {
  id: "llm",
  title: "An LLM",
  section: "scale",
  async mount(el, { call, ready }) {
    const v = llmView(el, COMMAND);
    el.dataset.state = "waiting";
    const card = new LlmCard(el, v, call);
    const stop = (button) => button.addEventListener("click", () => {
      button.disabled = true;
      card.controller?.abort();
    });
    v.loadBtn.addEventListener("click", () => card.load());
    stop(v.stopLoadBtn);
    v.sendBtn.addEventListener("click", () => card.send());
    v.prompt.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !v.sendBtn.disabled) {
        e.preventDefault();
        card.send();
      }
    });
    stop(v.stopBtn);
    v.forgetBtn.addEventListener("click", () => card.forget());

    const failed = () => v.say("Python did not start, so the model cannot run here.", true);
    if (!(await pythonStarted(ready, el, failed))) return;
    try {
      card.status = await call("llm_card.status");
    } catch (err) {
      el.dataset.state = "error";
      v.say(`The model is not available: ${err.message}`, true);
      return;
    }
    if (!card.status.adapter) {
      card.noAdapter();
      return;
    }
    v.where.textContent = `Here: ${card.status.adapter.name}.`;
    card.idle();
  },
};
