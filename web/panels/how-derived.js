// How it works, 4: optimisations are derived. softmax(q kᵀ/√d) v as written (a comprehension
// per step, each writing its buffer) next to what fuse + stabilize_softmax derive from it:
// one reduction whose state (running max m, running sum l, accumulator acc) is updated key by
// key. Everything comes from the worker (tensor_ir.attention): the printed IR of both, the
// buffers each writes per query row, the as-written intermediates, and the derived monoid
// folded one key at a time by tang's evaluator, all in one call: Play/Step only show what the
// page holds. Play folds a key at once, then one every SECONDS_PER_KEY of real time (the
// frame-capped dt would stretch that up to 8x when frames come slowly); the loop pauses off
// screen (web/lib/loop.js animate). Hover or focus a key to light it in both columns.
// ./how-derived-view.js builds the figure and renders answers; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { animate } from "../lib/loop.js";
import { derivedView } from "./how-derived-view.js";

const N = 8;
const D = 4;
const QUERIES = 4;
const SECONDS_PER_KEY = 0.8;

export default {
  id: "how-derived",
  title: "How it works · 4. Optimisations are derived",
  async mount(el, { call, ready }) {
    const view = derivedView(el, QUERIES);
    const { status, row, play } = view;
    el.dataset.state = "loading";

    let data = null;
    let keys = 0; // keys folded so far, 0…N
    let seed = 4;
    let loop = null;
    let clock = 0;

    function setKeys(k) {
      keys = Math.max(0, Math.min(data.n, k));
      el.dataset.keys = String(keys);
      view.showKeys(data, keys);
    }

    function setPlaying(on) {
      if (on && !loop) {
        setKeys(keys >= data.n ? 1 : keys + 1); // the first key at once
        clock = 0;
        if (keys < data.n) {
          loop = animate(el, (_t, _dt, wall) => {
            clock += wall; // real seconds; 0 across a pause off screen
            if (clock < SECONDS_PER_KEY) return;
            // a late frame's lateness comes off the next wait, but keys stay ≥ half a period apart
            clock = Math.min(clock - SECONDS_PER_KEY, SECONDS_PER_KEY / 2);
            setKeys(keys + 1);
            if (keys >= data.n) setPlaying(false);
          });
        }
      } else if (!on && loop) {
        loop.stop();
        loop = null;
      }
      play.textContent = loop ? "Pause" : "Play";
      play.setAttribute("aria-pressed", loop ? "true" : "false");
    }

    async function load() {
      setPlaying(false);
      for (const b of view.controls) b.disabled = true;
      status.textContent = "Deriving…";
      status.classList.remove("bad");
      try {
        data = await call("tensor_ir.attention", { n: N, d: D, queries: QUERIES, row: Number(row.value), seed });
      } catch (err) {
        status.textContent = `The worker failed: ${err.message}`;
        status.classList.add("bad");
        el.dataset.state = "error";
        return;
      }
      el.dataset.row = row.value;
      el.dataset.seed = String(seed);
      view.render(data);
      setKeys(0);
      status.textContent = `n = ${data.n} keys, d = ${data.d}, query row ${data.row} of ${data.queries}.`;
      for (const b of view.controls) b.disabled = false;
      el.dataset.state = "done";
    }

    play.addEventListener("click", () => setPlaying(!loop));
    view.step.addEventListener("click", () => {
      setPlaying(false);
      setKeys(keys >= data.n ? 0 : keys + 1);
    });
    view.reset.addEventListener("click", () => {
      setPlaying(false);
      setKeys(0);
    });
    view.fresh.addEventListener("click", () => {
      seed += 1;
      load();
    });
    row.addEventListener("change", load);

    const failed = () => (status.textContent = "Python did not start, so there is nothing to derive.");
    if (!(await pythonStarted(ready, el, failed))) return;
    await load();
  },
};
