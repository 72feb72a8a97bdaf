// The hero editor's DOM (web/panels/editor.js is its controller): the input box, a skip link,
// the status line with its timings behind a "details" toggle, the backend tabs, the tools,
// the kernel box, and the messages for a link that was too long or text that never compiled.
// Every setter writes only what differs from what is shown (../lib/dom.js setText, setData,
// setHidden): a keystroke's answer restyles and relays out only the parts that changed.
import { h, setData, setHidden, setText } from "../lib/dom.js";

/** Build the editor's elements in `root`; the backend tabs come later (setTabs). */
export function editorView(root) {
  const lede = h("p", {},
    "Type a function of x, y and z (or declare your own: f(a, b) = …). tang, running in this " +
      "page's Python, parses it, differentiates it in one reverse sweep, simplifies and " +
      "prints one kernel that computes the value and every partial derivative.");
  const linkNote = h("p", { className: "link-note", role: "alert", hidden: true });
  const inputBox = h("div", { className: "expr-input" });
  const skip = h("a", { className: "skip-link", href: "#panel-run" }, "Skip to Run it");
  const statusText = h("span", { className: "status-text" });
  const timing = h("span", { className: "status-timing" });
  const details = h("details", { className: "status-details" }, h("summary", {}, "details"), timing);
  const status = h("p", { className: "expr-status", role: "status", "aria-live": "polite" }, statusText, details);
  const caret = h("pre", { className: "expr-caret", hidden: true });
  const tablist = h("div", { className: "tabs", role: "tablist", "aria-label": "Backend" });
  const tool = (text) => h("button", { type: "button", className: "tool", textContent: text });
  const copyBtn = tool("Copy");
  const downloadBtn = tool("Download");
  const shareBtn = tool("Copy link");
  const toolNote = h("span", { className: "tool-note", role: "status" });
  const codeBox = h("div", { className: "code-box", role: "tabpanel", id: "editor-code" });
  const staleNote = h("p", {
    className: "stale-note", hidden: true,
    textContent: "Stale: the text above does not parse; this is the last kernel that did.",
  });
  const failMessage = h("p", { className: "failure-message" });
  const failText = h("pre", { className: "failure-text" });
  const failure = h("div", { className: "kernel-failure", role: "alert", hidden: true },
    failMessage, failText);
  const output = h("div", { className: "kernel-output" },
    h("div", { className: "tabbar" }, tablist, h("div", { className: "tools" }, copyBtn, downloadBtn, shareBtn, toolNote)),
    staleNote, failure, codeBox);
  output.dataset.state = "loading";
  root.append(lede, linkNote, inputBox, skip, caret, status, output);
  details.hidden = true;

  const buttons = {}; // backend name → its tab button (setTabs fills it)
  // the skip link lands on the Run button (one Tab and Enter from the editor)
  skip.addEventListener("click", (e) => {
    const run = document.querySelector("#panel-run button.primary");
    if (!run) return;
    e.preventDefault();
    run.focus();
    run.scrollIntoView({ block: "center" });
  });

  let noteTimer = 0;
  return {
    inputBox, status, tablist, buttons, copyBtn, downloadBtn, shareBtn, codeBox, output,
    /** The status line: `kind` good|bad|wait|error, `text` for people, `more` (developer
     * timings) behind the details toggle. */
    setStatus(kind, text, more = "") {
      setData(status, "kind", kind);
      setText(statusText, text);
      setText(timing, more);
      setHidden(details, !more);
    },
    /** Data on the status line for tests: the column and the text of the error shown. */
    markStatus({ column = null, expr = null } = {}) {
      setData(status, "column", column === null ? null : String(column));
      if (expr !== null) setData(status, "expr", expr);
    },
    /** The text with a caret under the error's column, or nothing. */
    showCaret(text, err) {
      setHidden(caret, !err);
      setText(caret, err ? `${text}\n${" ".repeat(Math.min(err.position, text.length))}^` : "");
    },
    /** One tab per backend of the worker's catalogue ([{name, label, ...}], in order). */
    setTabs(backends) {
      for (const name of Object.keys(buttons)) delete buttons[name];
      tablist.replaceChildren();
      for (const { name, label } of backends) {
        buttons[name] = h("button", {
          type: "button", role: "tab", className: "tab", textContent: label, id: `tab-${name}`,
          dataset: { backend: name }, "aria-controls": "editor-code",
        });
        tablist.append(buttons[name]);
      }
    },
    showTab(tab) {
      for (const [name, b] of Object.entries(buttons)) {
        b.setAttribute("aria-selected", String(name === tab));
        b.tabIndex = name === tab ? 0 : -1;
      }
      codeBox.setAttribute("aria-labelledby", `tab-${tab}`);
    },
    /** Where a kernel would be: `state` ok|stale|error; with no kernel yet, the error and
     * the text it is about (a shared link that does not parse shows both, not a grey box). */
    showOutput(state, { expr = "", message = "", err = null } = {}) {
      setData(output, "state", state);
      setHidden(staleNote, state !== "stale");
      setHidden(failure, state !== "error");
      if (state !== "error") return;
      setText(failMessage, `Nothing to show yet: ${message}`);
      setText(failText, err ? `${expr}\n${" ".repeat(Math.min(err.position, expr.length))}^` : expr);
      setHidden(failText, !expr);
    },
    /** Which text (`expr`) and tab (`backend`, "" for none) the kernel box shows. */
    markOutput({ expr = null, backend = null } = {}) {
      if (expr !== null) setData(output, "expr", expr);
      if (backend !== null) setData(output, "backend", backend);
    },
    /** The link the page was opened with was too long (state.link), or nothing. */
    showLink(link) {
      linkNote.hidden = !link;
      linkNote.textContent = link
        ? `This link's expression is ${link.length.toLocaleString("en")} characters long; a ` +
          `link carries at most ${link.limit.toLocaleString("en")}, so it was not loaded ` +
          "(the editor shows the function it had instead)."
        : "";
    },
    /** A short note next to the tools, cleared after a while. */
    note(text) {
      toolNote.textContent = text;
      clearTimeout(noteTimer);
      noteTimer = setTimeout(() => (toolNote.textContent = ""), 4000);
    },
  };
}
