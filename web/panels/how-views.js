// How it works, 3: views and comprehensions. A 4×6 source x holds 0…23 (each element its own
// memory position). Buttons compose transpose, slice, stride and broadcast; the worker
// (tensor_ir.views) applies them with tang.tensor's View, prints the IR and says, for every
// output cell, which source element the graph's read view reaches. Hover or focus a cell of
// the output (arrow keys move) to light the elements it reads, in the matrix and in memory.
// ./how-views-view.js builds the figure and renders answers; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { viewsView } from "./how-views-view.js";

const SOURCE = [4, 6];

// Each button: its label and the steps it appends, given the current output shape.
const BUTTONS = [
  { label: "Transpose  .T", title: "swap the axes", steps: () => [{ op: "transpose" }] },
  { label: "Slice  [1:]", title: "drop the first row", steps: () => [{ op: "slice", axis: 0, start: 1 }] },
  { label: "Stride  [..., ::2]", title: "every second element of the last axis",
    steps: () => [{ op: "stride", axis: -1, step: 2 }] },
  { label: "Reverse  [::-1]", title: "the first axis backwards (a negative stride)",
    steps: () => [{ op: "slice", axis: 0, step: -1 }] },
  { label: "Broadcast row 0 ×3", title: "take the first row and repeat it (stride 0)",
    steps: (shape) => shape.length === 1
      ? [{ op: "broadcast", shape: [3, shape[0]] }]
      : [{ op: "slice", axis: 0, start: 0, stop: 1 }, { op: "broadcast", shape: [3, ...shape.slice(1)] }] },
  { label: "Flatten", title: "reshape to one axis: a view when the memory allows, else a copy",
    steps: (shape) => [{ op: "reshape", shape: [shape.reduce((a, b) => a * b, 1)] }] },
];

export default {
  id: "how-views",
  title: "How it works · 3. Views and comprehensions",
  async mount(el, { call, ready }) {
    const view = viewsView(el, SOURCE, BUTTONS);
    const { status } = view;
    el.dataset.state = "loading";

    let ops = [];
    let result = null;
    const history = []; // where each step began in `ops`: Undo drops the last step whole

    async function show(next) {
      view.setBusy(true);
      status.classList.remove("bad");
      try {
        const out = await call("tensor_ir.views", { shape: SOURCE, ops: next });
        if (next.length > ops.length) history.push(ops.length);
        else while (history.length && history[history.length - 1] >= next.length) history.pop();
        ops = next;
        result = out;
        el.dataset.ops = JSON.stringify(ops); // what the page asked for (tests compare)
        view.render(result);
        status.textContent = "";
      } catch (err) {
        status.textContent = `That step does not apply here: ${err.message}`;
        status.classList.add("bad");
      } finally {
        view.setBusy(false, ops.length > 0);
      }
    }

    BUTTONS.forEach((b, i) => {
      view.stepButtons[i].addEventListener("click", () => show([...ops, ...b.steps(result.output.shape)]));
    });
    view.undo.addEventListener("click", () => show(ops.slice(0, history.at(-1) ?? 0)));
    view.reset.addEventListener("click", () => show([]));

    const failed = () => (status.textContent = "Python did not start, so there is nothing to show.");
    if (!(await pythonStarted(ready, el, failed))) return;
    status.textContent = "Composing…";
    await show([{ op: "transpose" }]);
    if (result) await show([...ops, { op: "slice", axis: 0, start: 1 }]); // one undo step each
    el.dataset.state = result ? "done" : "error";
  },
};
