// A shell command shown as one copyable line: the page's cards say which desktop command
// runs the same code. Text goes in as text (never HTML).
import { h } from "./dom.js";

/** A `.command` row: the command in <code> and a Copy button. Change it with setCommand. */
export function commandLine(text, { label = "Run it on your desktop" } = {}) {
  const code = h("code", { className: "command-text" });
  fill(code, text);
  const copy = h("button", { type: "button", className: "command-copy", "aria-label": `Copy: ${text}` },
    "Copy");
  copy.addEventListener("click", async () => {
    const current = code.textContent;
    try {
      await navigator.clipboard.writeText(current);
      copy.textContent = "Copied";
    } catch {
      // no clipboard permission (plain http, old browser): select the text for Ctrl+C
      const range = document.createRange();
      range.selectNodeContents(code);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      copy.textContent = "Selected";
    }
    setTimeout(() => (copy.textContent = "Copy"), 1500);
  });
  return h("div", { className: "command", title: label }, h("span", { className: "command-prompt", "aria-hidden": "true" }, "$"), code, copy);
}

/** Replace the command a commandLine row shows (and copies). */
export function setCommand(row, text) {
  fill(row.querySelector(".command-text"), text);
  row.querySelector(".command-copy").setAttribute("aria-label", `Copy: ${text}`);
}

/** Put `text` in `code` with each word unbreakable: a narrow card wraps the line between
 * words, never inside one (a browser would otherwise break `--temperature` after a hyphen).
 * The spaces stay text, so textContent (what Copy copies) is `text` exactly. */
function fill(code, text) {
  code.replaceChildren(
    ...text.split(/( +)/).map((part, i) => (i % 2 ? part : h("span", { className: "command-word" }, part))),
  );
}
