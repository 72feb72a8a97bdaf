// Same idea, every scale · 5. A transformer: attention as written against the online-softmax
// attention tang's passes derive from it, both compiled by tang.tensor and timed live on this
// browser's WebGPU (the CPU when there is no adapter, at a smaller n it states). The work
// is a loop of short worker calls (transformer.step), so Stop lands within one chunk.
// ./transformer-view.js builds the card; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { fmt } from "../lib/format.js";
import { runChunks } from "../lib/loop.js";
import { transformerView } from "./transformer-view.js";

const COMMAND = "python -m demos.transformer"; // n = 1,024, d = 64 on a GPU
const REPEAT = 3; // timed calls of each graph
const ROWS = 16; // rows the CPU recomputes in float64

export default {
  id: "transformer",
  title: "A transformer",
  section: "scale",
  async mount(el, { call, ready }) {
    const view = transformerView(el, COMMAND);
    el.dataset.state = "loading";
    let controller = null;

    async function run() {
      controller = new AbortController();
      const { signal } = controller;
      view.runBtn.disabled = true;
      view.stopBtn.disabled = false;
      view.progress.value = 0;
      el.dataset.state = "running";
      view.say("Compiling both graphs…");
      try {
        const first = await call("transformer.start", { repeat: REPEAT, rows: ROWS }, { signal });
        view.say(`n = ${first.n}, d = ${first.d} on ${first.on_gpu ? "the GPU" : "the CPU"}…`);
        el.dataset.device = first.device.kind;
        view.sayWhere(first);
        const { stopped, last } = await runChunks(
          () => call("transformer.step", {}, { signal }),
          { signal, onProgress: (p) => {
            view.progress.value = p.fraction;
            if (!p.done) view.say(`${p.stage}…`);
          } },
        );
        if (stopped) {
          el.dataset.state = "stopped";
          view.say("Stopped.");
          call("transformer.stop").catch(() => {});
          return;
        }
        view.show(last);
        view.say(`Done: derived attention is ${fmt(last.ratio, 3)}× as fast.`);
        Object.assign(el.dataset, {
          state: "done", ratio: String(last.ratio), check: last.check.passed ? "passed" : "failed",
          oplines: String(last.op_specific_lines), n: String(last.n), d: String(last.d),
        });
      } catch (err) {
        el.dataset.state = signal.aborted ? "stopped" : "error";
        view.say(signal.aborted ? "Stopped." : `The run failed: ${err.message}`, !signal.aborted);
      } finally {
        view.runBtn.disabled = false;
        view.stopBtn.disabled = true;
      }
    }

    view.runBtn.addEventListener("click", run);
    view.stopBtn.addEventListener("click", () => {
      view.stopBtn.disabled = true;
      controller?.abort();
    });
    const failed = () => view.say("Python did not start, so there is nothing to measure.", true);
    if (!(await pythonStarted(ready, el, failed))) return;
    view.runBtn.disabled = false;
    el.dataset.state = "idle";
    view.say("Press Run to measure.");
  },
};
