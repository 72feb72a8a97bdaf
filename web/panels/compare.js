// How tang compares with PyTorch, JAX, sympy and tinygrad: one table, honest marks, a note
// per cell. Static facts (no worker call); the marks say where tang loses too.
import { h } from "../lib/dom.js";

const TOOLS = ["tang", "PyTorch", "JAX", "sympy", "tinygrad"];
const MARKS = { yes: "✓", part: "◐", no: "✗" };
const WORDS = { yes: "yes", part: "partly", no: "no" };

// [feature, [mark, note, evidence?] per tool in TOOLS order]. tang's cell lists the tests
// (path::function) that back its claim, or for a loss the benchmark that measures it;
// tests/test_compare_claims.py reads this literal as JSON and fails on a name that does
// not exist, so keep it plain JSON: double quotes, no expressions.
const ROWS = [
  ["Forward mode (dual numbers, JVP)", [
    ["yes", "tang.Dual and tang.jvp, nestable for higher orders", [
      "tests/test_dual.py::test_jvp_scalar_sequence_and_several_directions",
      "tests/test_dual.py::test_nested_duals_give_second_derivatives",
    ]],
    ["yes", "torch.func.jvp, forward-mode dual tensors"],
    ["yes", "jax.jvp"],
    ["part", "symbolic diff(), not forward-mode AD"],
    ["no", "reverse mode only"],
  ]],
  ["Reverse mode (gradients)", [
    ["yes", "tang.grad: one backward sweep over the graph", [
      "tests/test_grad.py::test_gradients_match_sympy_and_duals",
      "tests/test_grad.py::test_grad_function_form_like_jax",
    ]],
    ["yes", "autograd"],
    ["yes", "jax.grad, jax.vjp"],
    ["part", "symbolic diff() per variable, no reverse accumulation"],
    ["yes", "Tensor.backward()"],
  ]],
  ["A symbolic graph you can print", [
    ["yes", "hash-consed expression DAG, printed as text", [
      "tests/test_text.py::test_graph_prints_as_a_definition",
      "tests/test_lower_program.py::test_shared_subexpression_is_printed_once_everywhere",
    ]],
    ["yes", "torch.export / torch.fx graphs print as code; eager autograd does not"],
    ["yes", "jaxprs (jax.make_jaxpr)"],
    ["yes", "expression trees"],
    ["yes", "its UOp graph (DEBUG / VIZ)"],
  ]],
  ["Kernel source: WGSL, C, CUDA, Metal, OpenCL", [
    ["yes", "all five, plus GLSL, JavaScript and Python, with a node ↔ line map", [
      "tests/test_lower_backends.py::test_wgsl_on_lavapipe",
      "tests/test_lower_backends.py::test_c_functions_gcc_sanitized",
      "tests/test_lower_backends.py::test_cuda_compiled_by_nvcc",
      "tests/test_lower_backends.py::test_metal_compiled_and_run_as_cpp",
      "tests/test_lower_backends.py::test_opencl_on_pocl",
      "tests/test_explain.py::test_lower_lines_prints_every_backend_and_maps_each_node_to_its_lines",
    ]],
    ["part", "Inductor emits Triton, C++ and (prototype) Metal; no WGSL or OpenCL"],
    ["no", "none of these: StableHLO via .lower().as_text(); Pallas lowers to Mosaic/Triton IR"],
    ["part", "C, GLSL and JavaScript printers, C routines via codegen; no CUDA, Metal, OpenCL or WGSL"],
    ["yes", "renderers for these and more; its kernels are generated source"],
  ]],
  ["Loops in the graph, lowered as real loops", [
    ["part", "tang.fori_loop: one loop node, a for loop in all eight printers, Duals carried inside; reverse mode refuses it", [
      "tests/test_loop.py::test_the_graph_is_the_size_of_the_body_not_of_the_steps",
      "tests/test_loop.py::test_dual_tangents_ride_inside_the_loop",
      "tests/test_loop.py::test_reverse_mode_through_a_loop_says_so",
      "tests/test_loop_lower.py::test_f32_backend_runs_the_loops",
      "tests/test_loop_lower.py::test_c_kernel_and_function_gcc_sanitized",
    ]],
    ["part", "torch.compile unrolls Python loops; while_loop and scan are prototype control-flow ops"],
    ["yes", "lax.fori_loop, while_loop and scan, forward and reverse (scan)"],
    ["no", "no loop in expressions; sympy.codegen.ast For nodes only print code"],
    ["no", "Python loops unroll at trace; its RANGE UOps are the kernels' own index loops"],
  ]],
  ["Runs in the browser via Pyodide", [
    ["yes", "this page", [
      "e2e/test_core_in_pyodide.py::test_core_checks_pass_in_pyodide",
    ]],
    ["no", "not in Pyodide's packages (an unofficial community wasm build exists)"],
    ["no", "jaxlib (XLA) not built for Pyodide; a wasm port runs in JupyterLite instead"],
    ["yes", "pure Python; Pyodide ships it"],
    ["no", "not packaged for Pyodide (it can export a model to WebGPU)"],
  ]],
  ["Pure Python", [
    ["yes", "no required dependency", [
      "tests/test_readme.py::test_pip_install_gives_a_library_with_no_dependency",
    ]],
    ["no", "C++ and CUDA"],
    ["no", "jaxlib / XLA are C++"],
    ["yes", "with mpmath"],
    ["yes", "pure Python, but runs kernels through a compiler or driver"],
  ]],
  ["Tensors: views, fusion, derived kernels", [
    ["yes", "strided views that never copy; every op a comprehension over views; fusion, gradients and the online-softmax (flash) attention kernel derived by passes, as on the transformer card", [
      "tests/test_tensor_view.py::test_random_view_chains_match_numpys_strided_views",
      "tests/test_tensor_view.py::test_front_end_views_never_copy",
      "tests/test_tensor_ops.py::test_every_op_is_comprehensions_and_views_only",
      "tests/test_tensor_passes.py::test_fusion_preserves_every_ops_values",
      "tests/test_tensor_grad.py::test_derived_backward_matches_numpy_reference",
      "tests/test_tensor_passes.py::test_derived_attention_equals_naive_attention",
      "e2e/test_transformer_card.py::test_run_measures_derived_attention_on_webgpu",
    ]],
    ["yes", "tensors with views and autograd; torch.compile fuses kernels"],
    ["yes", "jax.numpy arrays; XLA fuses them into kernels"],
    ["no", "symbolic matrices, not numeric tensors"],
    ["yes", "lazy tensors; its scheduler fuses ops into kernels"],
  ]],
  ["Training a model", [
    ["yes", "tang.nn (Module, Linear, Adam): the Quantum Poet trains on this page, in pure Python on the CPU or as one step compiled from the tensor IR on WebGPU", [
      "tests/test_quantum_poet.py::test_loss_below_015_by_epoch_20_and_below_005_by_epoch_200",
      "tests/test_poet_gpu.py::test_two_epochs_on_the_gpu_give_the_eager_losses",
      "e2e/test_poet.py::test_the_poet_trains_stops_resumes_generates_and_round_trips_weights",
    ]],
    ["yes", "torch.nn and torch.optim"],
    ["yes", "with Flax or Equinox and Optax"],
    ["no", "no optimisers or training loop"],
    ["yes", "nn layers, optimisers and training loops"],
  ]],
  ["Geometry: vectors, quaternions, exact predicates", [
    ["yes", "Vec2, Vec3, Quat, Mat over floats, duals and graphs; orient2d/3d, incircle, insphere exact on floats, where naive floats err", [
      "tests/test_geometry_predicates.py::test_random_point_sets_match_the_oracle",
      "tests/test_geometry_predicates.py::test_near_degenerate_sets_match_the_oracle_and_naive_floats_fail",
      "tests/test_geometry.py::test_rotation_matches_rodrigues_and_the_matrix",
      "tests/test_geometry.py::test_traced_graphs_give_the_float_values_and_the_dual_slopes",
    ]],
    ["no", "tensors of points; no quaternion type or exact predicates (PyTorch3D adds rotations)"],
    ["part", "jax.scipy.spatial.transform (Rotation, Slerp); no exact predicates"],
    ["yes", "sympy.geometry and Quaternion, exact with rationals (symbolic, not float-speed)"],
    ["no", "no geometry types"],
  ]],
  ["Solvers: LU, QR, SVD, eigen; L-BFGS, Levenberg–Marquardt", [
    ["yes", "tang.linalg (dense and sparse) and tang.solve in pure Python; duals differentiate through a factorisation; LM needs no more evaluations than MINPACK", [
      "tests/test_linalg.py::test_svd_ill_conditioned",
      "tests/test_linalg_derivatives.py::test_eigh_eigenvalues_and_eigenvectors",
      "tests/test_linalg_derivatives.py::test_traced_3x3_gradient_matches_the_dual_derivative",
      "tests/test_linalg_sparse.py::test_cholesky_reconstructs_and_solves",
      "tests/test_solve_mgh.py::test_levenberg_marquardt_reaches_the_published_minimum",
      "tests/test_solve_mgh.py::test_lbfgs_reaches_the_published_minimum",
      "benchmarks/solvers.py::bench_lm",
    ]],
    ["part", "torch.linalg, differentiable; torch.optim.LBFGS; no Levenberg–Marquardt"],
    ["part", "jax.numpy.linalg and jax.scipy.optimize (BFGS), differentiable; L-BFGS and LM in add-ons (Optax, Optimistix)"],
    ["part", "exact symbolic LU, QR and eigenvalues; no numeric optimisers"],
    ["no", "no linear-algebra routines; optimisers for training only"],
  ]],
  ["Constant-time cryptography (ML-KEM, taint-checked)", [
    ["yes", "ML-KEM-512/768/1024 (FIPS 203) as integer tensor graphs, equal to kyber-py and interoperable with pyca cryptography; a taint pass refuses secret branches, indices and variable-time ops; the printed C passes valgrind's ctgrind check", [
      "tests/test_crypto_mlkem.py::test_the_compiled_kem_matches_kyber_py_on_200_seeds",
      "tests/test_crypto_mlkem.py::test_keys_and_ciphertexts_interoperate_with_cryptography",
      "tests/test_crypto_constant_time.py::test_a_secret_table_index_is_refused",
      "tests/test_crypto_constant_time.py::test_memcheck_sees_no_secret_dependent_branch_or_address",
      "benchmarks/crypto.py::contenders",
    ]],
    ["no", "integer tensors, but no modular arithmetic kernels or constant-time analysis"],
    ["no", "integer arrays, but no constant-time analysis; XLA may branch or gather on any value"],
    ["part", "modular arithmetic and polynomials over finite fields, symbolic; no constant-time code"],
    ["no", "no integer-modular kernels or timing analysis"],
  ]],
  ["Big models, fast", [
    ["no", "tang loses here: a 21,534-parameter model, not billions; a small ecosystem; generated kernels reach numpy's BLAS time only as compiled C on the CPU (a 512³ matmul at 0.9–1.3× it), while on a software WebGPU adapter (lavapipe) the same matmul takes about 20× it", [
      "tests/test_quantum_poet.py::test_the_model_has_21534_parameters_in_pytorch_keys",
      "tests/test_tensor_run.py::test_a_transformer_block_forward_and_backward_on_the_c_device",
      "benchmarks/tensor.py::matmul",
    ]],
    ["yes", "the standard for training large models, on cuBLAS and cuDNN"],
    ["yes", "at scale, on TPUs and GPUs"],
    ["no", "symbolic, not built for numeric speed"],
    ["yes", "runs LLaMA-class models on GPUs with its own generated kernels"],
  ]],
];

/** "tested by 2 tests · measured by benchmarks/tensor.py": what backs a cell, in short. */
function evidenceSummary(ids) {
  const tests = ids.filter((id) => !id.startsWith("benchmarks/")).length;
  const benches = [...new Set(ids.filter((id) => id.startsWith("benchmarks/"))
    .map((id) => id.split("::")[0]))];
  return [tests ? `tested by ${tests} test${tests > 1 ? "s" : ""}` : "",
    ...benches.map((b) => `measured by ${b}`)].filter(Boolean).join(" · ");
}

function cell([mark, note, evidence], tool) {
  const td = h("td", { className: `mark ${mark}`, dataset: { tool, mark } },
    h("span", { className: "sym", "aria-hidden": "true" }, MARKS[mark]),
    h("span", { className: "sr-only" }, `${WORDS[mark]}: `),
    h("span", { className: "note" }, note));
  if (evidence) { // the full names behind a short line, one per line when opened
    td.dataset.tests = evidence.join(" ");
    td.append(h("details", { className: "tested" }, h("summary", {}, evidenceSummary(evidence)),
      ...evidence.map((id) => h("code", {}, ...breakable(id)))));
  }
  return td;
}

/** A test id with line-break chances after "/", "::" and "_", so a narrow cell wraps it
 *  between the words of a name rather than inside them. */
function breakable(id) {
  return id.split(/(?<=\/|::|_)/).flatMap((part, i) => (i ? [h("wbr"), part] : [part]));
}

/** Show the scroll hint only while the table is wider than its box. */
function hintWhileOverflowing(box, hint) {
  const update = () => { hint.hidden = box.scrollWidth <= box.clientWidth + 1; };
  new ResizeObserver(update).observe(box);
  update();
}

export default {
  id: "compare",
  title: "How tang compares",
  async mount(el) {
    const head = h("tr", {}, h("th", { scope: "col" }, "What"),
      ...TOOLS.map((t) => h("th", { scope: "col" }, t)));
    const body = h("tbody");
    for (const [feature, cells] of ROWS) {
      body.append(h("tr", {}, h("th", { scope: "row" }, feature),
        ...cells.map((c, i) => cell(c, TOOLS[i]))));
    }
    const hint = h("p", { className: "scroll-hint", "aria-hidden": "true" },
      "Scroll the table sideways for PyTorch, JAX, sympy and tinygrad →");
    const box = h("div", {
      className: "table-scroll", tabIndex: 0, role: "region",
      "aria-label": "Comparison table (scrolls sideways)",
    }, h("table", { className: "compare", "aria-describedby": "compare-key" },
      h("thead", {}, head), body));
    el.append(
      h("p", {}, "Where tang stands next to the libraries you know. tang is small on purpose: " +
        "plain-Python math you can trace, differentiate, read and print for any chip, from one " +
        "number to tensors and a small model trained on this page — not a framework for big " +
        "models."),
      hint,
      box,
      h("p", { className: "compare-key", id: "compare-key" },
        `${MARKS.yes} yes · ${MARKS.part} partly · ${MARKS.no} no — from each project's ` +
        "documentation at the time of writing. Each of tang's marks names the tests that " +
        "check it (open \"tested by\"); run one with python -m pytest <file>::<test>."),
    );
    hintWhileOverflowing(box, hint);
    el.dataset.state = "done";
  },
};
