// What you can build: every runnable example as one command that works from a fresh clone.
// The list comes from the worker (examples.list in demos/examples.py), the same table the
// unit tests run command by command.
import { commandLine } from "../lib/command.js";
import { h } from "../lib/dom.js";

export default {
  id: "build-examples",
  title: "Run it yourself",
  section: "build",
  async mount(el, { call, ready }) {
    const status = h("p", { className: "demo-what" }, "Waiting for Python…");
    const list = h("ol", { className: "examples" });
    el.append(
      h("p", {}, "Clone the repository, then paste any of these at its root (Python ≥ 3.11; " +
        "no other dependency for the core):"),
      list, status,
    );
    try {
      await ready;
    } catch {
      status.textContent = "Python did not start, so the list could not be read.";
      return;
    }
    const examples = await call("examples.list");
    list.replaceChildren(...examples.map((e) => h("li", { className: "example" },
      h("h3", {}, e.title),
      h("p", {}, e.what),
      commandLine(e.command, { label: "Paste at the root of a clone" }))));
    status.textContent = `${examples.length} commands, each run by the test suite.`;
    el.dataset.state = "done";
  },
};
