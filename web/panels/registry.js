// The panels the page mounts, in order. Each is a module under web/panels/ whose default
// export is {id, title, mount(element, rpc)}; `rpc` is web/rpc.js ({call, ready, onBoot,
// RpcError, canInterrupt}). Add a panel by adding its file name here.
export default [
  "editor.js",
  "graph.js",
  "run.js",
  "scale-scalar.js",
  "arm.js",
  "orbit.js",
  "poet.js",
  "transformer.js",
  "how-dual.js",
  "how-lower.js",
  "how-views.js",
  "how-derived.js",
  "compare.js",
  "build-examples.js",
  "about.js",
];
