// What every demo card shares: a list of named readouts, and the wait for Python, which
// fails the same way on every card (each says why in its own words).
import { h } from "./dom.js";

/** A `.readouts` list from [[label, name], …]: each value is a <dd data-readout="name">
 * that starts as "…". Returns {list, show(name, text)}; text goes in as text. */
export function readouts(rows) {
  const list = h("dl", { className: "readouts" });
  const cells = {};
  for (const [label, name] of rows) {
    cells[name] = h("dd", { dataset: { readout: name } }, "…");
    list.append(h("dt", {}, label), cells[name]);
  }
  return { list, show: (name, text) => (cells[name].textContent = text) };
}

/** Wait for Python (`ready` from web/rpc.js): true once it runs; false after marking `el`
 * failed (data-state="error") and calling `explain()` to tell the reader. */
export async function pythonStarted(ready, el, explain) {
  try {
    await ready;
    return true;
  } catch {
    el.dataset.state = "error";
    explain();
    return false;
  }
}
