// Same idea, every scale · 6. An LLM: SmolLM2-135M-Instruct decoded in this tab by kernels
// tang derives, on this browser's WebGPU. Nothing is fetched until Load; the file is kept in
// Cache Storage (Forget deletes it). Loading and decoding are loops of short worker calls
// (llm.load_step, llm.chat_step: one token each), so the other cards keep running between
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

export default {
  id: "llm",
  title: "An LLM",
  section: "scale",
  async mount(el, { call, ready }) {
    const v = llmView(el, COMMAND);
    el.dataset.state = "waiting";
    let status = null;
    let facts = null;
    let controller = null;

    const sizeText = () => `${mb(status.size)}${status.cached ? ", cached in this browser" : ""}`;
    function idle() {
      el.dataset.state = "idle";
      v.loadBtn.textContent = `Load ${status.model} (${sizeText()})`;
      v.loadBtn.disabled = false;
      v.forgetBtn.disabled = !status.cached;
      v.progress.value = 0;
      v.progressText.textContent = "";
    }
    const chatting = (on) => {
      v.prompt.disabled = v.sendBtn.disabled = !on;
      v.stopBtn.disabled = true;
    };

    function showProgress(p) {
      if (p.stage === "download") {
        v.progress.value = p.total_bytes ? p.done_bytes / p.total_bytes : 0;
        const from = p.source === "cache" ? "this browser's cache" : "the site";
        v.progressText.textContent = `${mb(p.done_bytes)} of ${mb(p.total_bytes)} from ${from}`;
      } else {
        v.progress.value = 1;
        v.progressText.textContent = STAGES[p.stage] ?? p.stage;
      }
      if (p.note) v.say(p.note);
      el.dataset.source = p.source;
    }

    async function load() {
      controller = new AbortController();
      const { signal } = controller;
      v.loadBtn.disabled = v.forgetBtn.disabled = true;
      v.stopLoadBtn.disabled = v.stopLoadBtn.hidden = false;
      el.dataset.state = "loading";
      v.say("");
      try {
        showProgress(await call("llm.load", {}, { signal }));
        const { stopped, last } = await runChunks(
          () => call("llm.load_step", {}, { signal }), { signal, onProgress: showProgress });
        if (stopped) {
          await call("llm.load_stop").catch(() => {});
          idle();
          v.say("Stopped: nothing of the model was kept.");
          return;
        }
        facts = last.facts;
        v.showModel(facts);
        status.cached = true;
        el.dataset.state = "ready";
        el.dataset.loadedFrom = last.source;
        v.loadBtn.textContent = "Loaded";
        v.forgetBtn.disabled = false;
        v.progressText.textContent = `loaded from ${last.source === "cache" ? "this browser's cache" : "the site"}`;
        chatting(true);
        const greedy = "Greedy decoding (temperature 0) gives the same reply every time.";
        v.say(last.note ? `${last.note} ${greedy}` : `Ask something. ${greedy}`);
      } catch (err) {
        await call("llm.load_stop").catch(() => {});
        idle();
        el.dataset.state = signal.aborted ? "idle" : "error";
        v.say(signal.aborted ? "Stopped." : `Loading failed: ${err.message}`, !signal.aborted);
      } finally {
        v.stopLoadBtn.disabled = v.stopLoadBtn.hidden = true;
      }
    }

    const numberIn = (label) => Number(label.querySelector("input").value);

    async function send() {
      const text = v.prompt.value.trim();
      if (!text) {
        v.say("Type a message first.", true);
        return;
      }
      controller = new AbortController();
      const { signal } = controller;
      chatting(false);
      v.stopBtn.disabled = false;
      v.forgetBtn.disabled = true;
      el.dataset.state = "generating";
      delete el.dataset.finish;
      v.turn(text);
      let shown = [];
      try {
        const params = {
          prompt: text, temperature: numberIn(v.temperature), seed: numberIn(v.seed),
          max_tokens: numberIn(v.maxTokens),
        };
        const first = await call("llm.chat", params, { signal });
        v.say(`Reading your message: ${first.prompt_tokens} tokens in the chat template…`);
        const { stopped, last } = await runChunks(
          () => call("llm.chat_step", {}, { signal }),
          { signal, onProgress: (r) => {
            v.append(r.text);
            shown = r.tokens;
            el.dataset.tokens = JSON.stringify(r.tokens);
            v.showSpeed(r, facts);
            v.say(r.prompt_done < r.prompt_tokens
              ? `Reading your message: ${r.prompt_done} of ${r.prompt_tokens} tokens…`
              : `${r.tokens.length} tokens`);
          } },
        );
        if (stopped) {
          const after = await call("llm.chat_stop").catch(() => null);
          el.dataset.state = "stopped";
          el.dataset.stoppedAt = String(shown.length);
          if (after) el.dataset.workerTokens = String(after.tokens);
          v.say(`Stopped after ${shown.length} tokens.`);
          return;
        }
        el.dataset.state = "done";
        el.dataset.finish = last.finish;
        v.say(last.finish === "stop" ? `${last.tokens.length} tokens: the model ended its turn.`
          : `${last.tokens.length} tokens: the length you asked for.`);
      } catch (err) {
        el.dataset.state = "error";
        v.say(`The reply failed: ${err.message}`, true);
      } finally {
        chatting(true);
        v.forgetBtn.disabled = false;
      }
    }

    async function forget() {
      controller?.abort();
      v.forgetBtn.disabled = true;
      chatting(false);
      try {
        await call("llm.forget");
        status.cached = false;
        facts = null;
        for (const key of ["device", "weights", "memory", "kernels", "speed", "light"]) {
          v.show(key, "…");
        }
        v.reply.replaceChildren();
        idle();
        v.say("Forgotten: the cached copy is deleted and the GPU memory freed.");
      } catch (err) {
        v.say(`Could not forget the model: ${err.message}`, true);
      }
    }

    v.loadBtn.addEventListener("click", load);
    v.stopLoadBtn.addEventListener("click", () => {
      v.stopLoadBtn.disabled = true;
      controller?.abort();
    });
    v.sendBtn.addEventListener("click", send);
    v.prompt.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !v.sendBtn.disabled) {
        e.preventDefault();
        send();
      }
    });
    v.stopBtn.addEventListener("click", () => {
      v.stopBtn.disabled = true;
      controller?.abort();
    });
    v.forgetBtn.addEventListener("click", forget);

    const failed = () => v.say("Python did not start, so the model cannot run here.", true);
    if (!(await pythonStarted(ready, el, failed))) return;
    try {
      status = await call("llm.status");
    } catch (err) {
      el.dataset.state = "error";
      v.say(`The model is not available: ${err.message}`, true);
      return;
    }
    if (!status.adapter) {
      el.dataset.state = "no-adapter";
      v.where.textContent = "This browser offers no WebGPU adapter, so Load is off.";
      v.loadBtn.textContent = `Load ${status.model} (needs WebGPU)`;
      v.loadBtn.title = status.no_adapter;
      v.say(`No WebGPU adapter here (${status.no_adapter}). Decoding needs one: tang's ` +
        "pure-Python kernels would take minutes per token for 135 M parameters (about one " +
        "even in desktop CPython). A browser " +
        "with WebGPU (Chrome, Edge; Firefox and Safari in recent versions) runs it, as does " +
        `the desktop command below.`);
      return;
    }
    v.where.textContent = `Here: ${status.adapter.name}.`;
    idle();
  },
};
