// The panels the page mounts, in order. Each is a module under web/panels/ whose default
// export is {id, title, section?, mount(element, rpc)}; `rpc` is web/rpc.js ({call, ready,
// onBoot, RpcError, canInterrupt}). A `section` ("scale", "build") puts the card in that
// group of web/main.js's SECTIONS, where its first card is listed. Add a panel by adding its
// file name here (tests/test_panel_structure.py checks each one).
export default [
  "editor.js",
  "graph.js",
  "run.js",
  "scale-scalar.js",
  "arm.js",
  "orbit.js",
  "poet.js",
  "transformer.js",
  "llm.js",
  "how-dual.js",
  "how-lower.js",
  "how-views.js",
  "how-derived.js",
  "compare.js",
  "build-examples.js",
  "about.js",
];
