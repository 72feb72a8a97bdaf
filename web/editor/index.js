// The playground's CodeMirror 6 pieces, bundled by build.py (esbuild) into dist/editor.js.
//
//   import { expressionEditor, codeViewer } from "../editor.js";
//   const input = expressionEditor({parent, doc, label, onChange: (text) => ...});
//   input.setError({from, to, message}) / input.setError(null)
//   const code = codeViewer({parent, label, onHoverLine: (line | null) => ...});
//   code.show(source, "cpp"); code.highlight([3, 4]); code.reveal([3, 4]);
//
// Languages (the `language` of each backend in the worker's `backends` catalogue): cpp (C,
// CUDA, Metal, OpenCL, GLSL), javascript, python, and a small WGSL mode.

import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { cpp } from "@codemirror/lang-cpp";
import { javascript } from "@codemirror/lang-javascript";
import { python } from "@codemirror/lang-python";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { forEachDiagnostic, setDiagnostics } from "@codemirror/lint";
import { Compartment, EditorState, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, keymap } from "@codemirror/view";
import { tags as t } from "@lezer/highlight";
import { wgsl } from "./wgsl.js";

// Colours come from CSS variables (style.css), so light and dark themes both read well.
const highlight = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.modifier, t.definitionKeyword], color: "var(--hl-keyword)" },
  { tag: [t.typeName, t.standard(t.typeName)], color: "var(--hl-type)" },
  { tag: [t.number, t.bool, t.atom], color: "var(--hl-number)" },
  { tag: [t.comment, t.lineComment, t.blockComment], color: "var(--hl-comment)", fontStyle: "italic" },
  { tag: [t.string, t.processingInstruction, t.meta], color: "var(--hl-string)" },
  { tag: [t.function(t.variableName), t.function(t.propertyName)], color: "var(--hl-function)" },
  { tag: [t.operator], color: "var(--hl-operator)" },
]);

const language = {
  wgsl: () => wgsl,
  cpp: () => cpp(),
  javascript: () => javascript(),
  python: () => python(),
};

const baseTheme = EditorView.theme({
  "&": { fontSize: "14px" },
  ".cm-content": { fontFamily: "var(--mono)" },
  ".cm-scroller": { fontFamily: "var(--mono)" },
  "&.cm-focused": { outline: "2px solid var(--accent)", outlineOffset: "2px" },
});

/** A one-line expression input with error underlines; `onChange(text)` on every edit. */
export function expressionEditor({ parent, doc = "", label = "Expression", onChange = () => {} }) {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        history(),
        keymap.of([{ key: "Enter", run: () => true }, ...historyKeymap, ...defaultKeymap]),
        // one line: pasted newlines become spaces
        EditorState.transactionFilter.of((tr) => {
          if (!tr.docChanged || !tr.newDoc.lines || tr.newDoc.lines === 1) return tr;
          return [tr, { changes: { from: 0, to: tr.newDoc.length, insert: tr.newDoc.toString().replace(/\r?\n/g, " ") }, sequential: true }];
        }),
        EditorView.contentAttributes.of({ "aria-label": label, spellcheck: "false", autocapitalize: "off", autocorrect: "off" }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) onChange(u.state.doc.toString());
        }),
        syntaxHighlighting(highlight),
        baseTheme,
      ],
    }),
  });
  // the lint state and its styles now, at boot: added by the first error instead, they would
  // restyle the whole page in the middle of that keystroke
  view.dispatch(setDiagnostics(view.state, []));
  return {
    view,
    text: () => view.state.doc.toString(),
    /** Replace the text (does not call onChange for the caller's own edit... it does: one path). */
    setText(text) {
      if (text !== view.state.doc.toString()) {
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
      }
    },
    /** Underline [from, to) with `message`, or clear with null. Nothing is dispatched when
     * the editor shows that already (most keystrokes): a dispatch redraws the marked text and
     * puts the caret back, which makes the browser lay the page out at once. */
    setError(err) {
      const len = view.state.doc.length;
      const diagnostics = [];
      if (err) {
        let from = Math.max(0, Math.min(err.from, len));
        let to = Math.max(from, Math.min(err.to, len));
        if (from === to && from === len && len > 0) from -= 1; // "end of input": mark the last character
        if (from === to) to = Math.min(len, from + 1);
        diagnostics.push({ from, to, severity: "error", message: err.message });
      }
      const shown = [];
      forEachDiagnostic(view.state, (d, from, to) => shown.push({ from, to, message: d.message }));
      const same = shown.length === diagnostics.length && shown.every((d, k) =>
        d.from === diagnostics[k].from && d.to === diagnostics[k].to && d.message === diagnostics[k].message);
      if (!same) view.dispatch(setDiagnostics(view.state, diagnostics));
    },
    focus: () => view.focus(),
  };
}

// Line highlights in the code viewer (the graph hover link).
const setMarked = StateEffect.define();
const markLine = Decoration.line({ class: "cm-linked" });
const marked = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects) {
      if (e.is(setMarked)) {
        const doc = tr.state.doc;
        const lines = [...new Set(e.value)].filter((n) => n >= 1 && n <= doc.lines).sort((a, b) => a - b);
        return Decoration.set(lines.map((n) => markLine.range(doc.line(n).from)));
      }
    }
    return tr.docChanged ? Decoration.none : deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

/** A read-only code view; `onHoverLine(lineNumber | null)` as the pointer moves. */
export function codeViewer({ parent, label = "Kernel", onHoverLine = () => {} }) {
  const lang = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: "",
      extensions: [
        EditorState.readOnly.of(true),
        EditorView.editable.of(false),
        EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
        lang.of([]),
        syntaxHighlighting(highlight),
        marked,
        baseTheme,
      ],
    }),
  });
  let hovered = null;
  const hover = (line) => {
    if (line === hovered) return;
    hovered = line;
    onHoverLine(line);
  };
  view.contentDOM.addEventListener("mousemove", (event) => {
    const pos = view.posAtCoords({ x: event.clientX, y: event.clientY }, false);
    hover(pos == null ? null : view.state.doc.lineAt(pos).number);
  });
  view.contentDOM.addEventListener("mouseleave", () => hover(null));
  let current = null;
  return {
    view,
    /** Show `source` highlighted as `mode` (cpp, javascript, python, wgsl; anything else is
     * plain text). Only the span that differs from
     * the text shown is replaced, so CodeMirror keeps the parse and the DOM of the rest
     * (consecutive kernels of a typed expression share most of their lines). */
    show(source, mode) {
      const effects = mode !== current ? lang.reconfigure(language[mode]?.() ?? []) : [];
      current = mode;
      const old = view.state.doc.toString();
      if (old === source && !effects.length) return; // shown already: no update at all
      const most = Math.min(old.length, source.length);
      let head = 0;
      while (head < most && old.charCodeAt(head) === source.charCodeAt(head)) head++;
      let tail = 0;
      while (
        tail < most - head &&
        old.charCodeAt(old.length - 1 - tail) === source.charCodeAt(source.length - 1 - tail)
      ) tail++;
      const insert = source.slice(head, source.length - tail);
      view.dispatch({ changes: { from: head, to: old.length - tail, insert }, effects });
    },
    /** Mark these (1-based) lines; [] clears. */
    highlight(lines) {
      view.dispatch({ effects: setMarked.of(lines) });
    },
    /** Scroll the code box, never the page, so these lines are in view: all of them when
     * they fit, else the first. (CodeMirror's scrollIntoView would scroll the page too.) */
    reveal(lines) {
      const { doc } = view.state;
      const wanted = lines.filter((n) => n >= 1 && n <= doc.lines);
      if (!wanted.length) return;
      const box = view.scrollDOM;
      // the document's top in the box's scroll coordinates
      const origin = view.documentTop - box.getBoundingClientRect().top + box.scrollTop;
      const top = origin + view.lineBlockAt(doc.line(Math.min(...wanted)).from).top;
      const bottom = origin + view.lineBlockAt(doc.line(Math.max(...wanted)).from).bottom;
      const margin = 8;
      const view0 = box.scrollTop;
      const view1 = view0 + box.clientHeight;
      if (top - margin < view0) box.scrollTop = top - margin;
      else if (bottom + margin > view1) box.scrollTop = Math.min(top - margin, bottom + margin - box.clientHeight);
    },
    text: () => view.state.doc.toString(),
  };
}
