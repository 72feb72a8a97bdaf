// How tang compares with PyTorch, JAX, sympy and tinygrad: one table, honest marks, a note
// per cell. Static facts (no worker call); the marks say where tang loses too.
import { h } from "../lib/dom.js";

const TOOLS = ["tang", "PyTorch", "JAX", "sympy", "tinygrad"];
const MARKS = { yes: "✓", part: "◐", no: "✗" };
const WORDS = { yes: "yes", part: "partly", no: "no" };

// [feature, [mark, note] per tool in TOOLS order]
const ROWS = [
  ["Forward mode (dual numbers, JVP)", [
    ["yes", "tang.Dual and tang.jvp, nestable for higher orders"],
    ["yes", "torch.func.jvp, forward-mode dual tensors"],
    ["yes", "jax.jvp"],
    ["part", "symbolic diff(), not forward-mode AD"],
    ["no", "reverse mode only"],
  ]],
  ["Reverse mode (gradients)", [
    ["yes", "tang.grad: one backward sweep over the graph"],
    ["yes", "autograd"],
    ["yes", "jax.grad, jax.vjp"],
    ["part", "symbolic diff() per variable, no reverse accumulation"],
    ["yes", "Tensor.backward()"],
  ]],
  ["A symbolic graph you can print", [
    ["yes", "hash-consed expression DAG, printed as text"],
    ["yes", "torch.export / torch.fx graphs print as code; eager autograd does not"],
    ["yes", "jaxprs (jax.make_jaxpr)"],
    ["yes", "expression trees"],
    ["yes", "its UOp graph (DEBUG / VIZ)"],
  ]],
  ["Kernel source: WGSL, C, CUDA, Metal, OpenCL", [
    ["yes", "all five, plus GLSL, JavaScript and Python, with a node ↔ line map"],
    ["part", "Inductor emits Triton, C++ and (prototype) Metal; no WGSL or OpenCL"],
    ["no", "none of these: StableHLO via .lower().as_text(); Pallas lowers to Mosaic/Triton IR"],
    ["part", "C, GLSL and JavaScript printers, C routines via codegen; no CUDA, Metal, OpenCL or WGSL"],
    ["yes", "renderers for these and more; its kernels are generated source"],
  ]],
  ["Runs in the browser via Pyodide", [
    ["yes", "this page"],
    ["no", "not in Pyodide's packages (an unofficial community wasm build exists)"],
    ["no", "jaxlib (XLA) not built for Pyodide; a wasm port runs in JupyterLite instead"],
    ["yes", "pure Python; Pyodide ships it"],
    ["no", "not packaged for Pyodide (it can export a model to WebGPU)"],
  ]],
  ["Pure Python", [
    ["yes", "no required dependency"],
    ["no", "C++ and CUDA"],
    ["no", "jaxlib / XLA are C++"],
    ["yes", "with mpmath"],
    ["yes", "pure Python, but runs kernels through a compiler or driver"],
  ]],
  ["Tensor ops and big models", [
    ["no", "tang loses here: scalar expressions only so far; its tensor IR is still to come"],
    ["yes", "the standard for training large models"],
    ["yes", "at scale, on TPUs and GPUs"],
    ["no", "symbolic matrices, not numeric tensors"],
    ["yes", "tensors, training and LLM inference"],
  ]],
];

export default {
  id: "compare",
  title: "How tang compares",
  async mount(el) {
    const head = h("tr", {}, h("th", { scope: "col" }, "What"),
      ...TOOLS.map((t) => h("th", { scope: "col" }, t)));
    const body = h("tbody");
    for (const [feature, cells] of ROWS) {
      const tr = h("tr", {}, h("th", { scope: "row" }, feature));
      cells.forEach(([mark, note], i) => {
        tr.append(h("td", { className: `mark ${mark}`, dataset: { tool: TOOLS[i], mark } },
          h("span", { className: "sym", "aria-hidden": "true" }, MARKS[mark]),
          h("span", { className: "sr-only" }, `${WORDS[mark]}: `),
          h("span", { className: "note" }, note)));
      });
      body.append(tr);
    }
    el.append(
      h("p", {}, "Where tang stands next to the libraries you know. tang is small on purpose: " +
        "plain-Python math you can trace, differentiate, read and print for any chip — not " +
        "a tensor framework (yet)."),
      h("div", { className: "table-scroll", tabIndex: 0, "aria-label": "Comparison table" },
        h("table", { className: "compare" },
          h("caption", {}, `${MARKS.yes} yes · ${MARKS.part} partly · ${MARKS.no} no — ` +
            "from each project's documentation at the time of writing."),
          h("thead", {}, head), body)),
    );
    el.dataset.state = "done";
  },
};
