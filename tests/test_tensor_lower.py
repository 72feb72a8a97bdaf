"""Comprehension graphs lowered to C (compiled by gcc with the address and undefined-behaviour
sanitizers, as tests/toolchains.py runs every kernel) and to Python, run, and checked against
the reference evaluator: plain, fused, online-softmax (with an inline producer), a derived
backward and a user-defined monoid."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from toolchains import _wgpu_device, available, compile_and_run, dispatch_size

from tang import tensor as T
from tang.expr import graph as g
from tang.tensor.kernels import load_python, lower_wgsl
from tang.tensor.lower import buffer_order, lower_graph, nest_languages
from tests.skips import skip_missing_tool


def attention_graph(causal: bool) -> T.TensorGraph:
    q, k, v = T.input("q", (1, 4, 5, 3)), T.input("k", (1, 2, 6, 3)), T.input("v", (1, 2, 6, 2))
    return T.graph(o=T.attention(q, k, v, causal=causal))


def graphs() -> dict[str, T.TensorGraph]:
    x, w, t = T.input("x", (3, 4)), T.input("w", (4, 5)), T.input("t", (3,))
    mean = T.monoid(
        "mean",
        ["mu", "n"],
        [0.0, 0.0],
        lambda a, b: [(a[0] * a[1] + b[0] * b[1]) / (a[1] + b[1]), a[1] + b[1]],
    )
    rms = T.graph(y=T.rms_norm(x, w[:, 0]))
    return {
        "softmax_matmul": T.graph(y=T.softmax(x @ w)),
        "softmax_matmul_fused": T.fuse(T.graph(y=T.softmax(x @ w))),
        "cross_entropy_fused": T.fuse(T.graph(y=T.cross_entropy(x, t))),
        "rope_views": T.graph(y=T.rope(w.T[::-1]) * 2.0),
        "attention_online": T.stabilize_softmax(T.fuse(attention_graph(True))),
        "attention_naive": attention_graph(False),
        "rms_norm_backward_fused": T.fuse(T.grad(rms)),
        # guarded reads that would leave their buffer: the kernel clamps their positions
        "shifted_backward": T.fuse(T.grad(T.graph(y=T.sum(x[:, 1:] * x[:, :-1] * t[:, None])))),
        "custom_monoid": T.graph(y=T.comprehend("a", [(x, "ab")], lambda e: (e, 1.0), monoid=mean)),
        # a short output axis that only steers selects: printed once per value
        "guarded_halves": T.graph(y=T.concat([x[:, :2] * 2.0, T.exp(x[:, 2:])], axis=1) @ w),
        "butterfly": T.graph(y=butterfly(x)),
    }


def butterfly(x: T.Tensor) -> T.Tensor:
    """(3, 4) as (3, 2 halves, 2): the low half a + b, the high half a − b (an NTT layer's
    shape: the half is an output axis that steers a select)."""
    v = x.reshape(3, 2, 2)
    return T.comprehend(
        "ahj",
        [(v[:, 0, :], "aj"), (v[:, 1, :], "aj")],
        lambda ix, lo, hi: g.select(g.eq(ix["h"], 0.0), lo + hi, lo - hi),
        extents={"h": 2},
        index=True,
    )


def sample(graph: T.TensorGraph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    vals = {k: rng.normal(size=s) for k, s in graph.inputs.items()}
    if "t" in vals:
        vals["t"] = rng.integers(0, 4, size=graph.inputs["t"]).astype(float)
    return vals


def run_c(graph: T.TensorGraph, vals: dict[str, np.ndarray], **plan_options) -> dict:
    """Compile the lowered graph with a main() that reads the inputs from stdin, allocates
    every buffer and writes the outputs (``plan_options`` go to the schedule)."""
    source = lower_graph(graph, "c", name="run", **plan_options)
    sizes = {n: max(1, math.prod(graph.shape(n))) for n in buffer_order(graph)}
    names = {n: f"b{k}" for k, n in enumerate(buffer_order(graph))}
    main = ["#include <stdio.h>", "int main(void) {"]
    main += [f"    static double {names[n]}[{sizes[n]}];" for n in sizes]
    main += [
        f"    if (fread({names[n]}, sizeof(double), {sizes[n]}, stdin) != {sizes[n]}) return 3;"
        for n in graph.inputs
    ]
    main.append(f"    run({', '.join(names.values())});")
    main += [f"    fwrite({names[o]}, sizeof(double), {sizes[o]}, stdout);" for o in graph.outputs]
    main += ["    return 0;", "}"]
    stdin = b"".join(np.asarray(vals[n], dtype="<f8").tobytes() for n in graph.inputs)
    out = compile_and_run(source + "\n" + "\n".join(main) + "\n", stdin)
    result, at = {}, 0
    for o in graph.outputs:
        n = sizes[o]
        flat = struct.unpack(f"<{n}d", out[at : at + 8 * n])
        result[o] = np.array(flat).reshape(graph.output_shape(o))
        at += 8 * n
    return result


def run_python(
    graph: T.TensorGraph, vals: dict[str, np.ndarray], **options
) -> dict[str, np.ndarray]:
    """Run the lowered Python (our printer's own output, never user text) through the CPU
    device's loader."""
    run = load_python(lower_graph(graph, "python", **options))
    buffers = {n: vals[n].ravel().tolist() for n in graph.inputs}
    buffers |= {c.name: [0.0] * max(1, c.size) for c in graph.comprehensions}
    run(0, *(buffers[n] for n in buffer_order(graph)))
    return {o: np.array(buffers[o]).reshape(graph.output_shape(o)) for o in graph.outputs}


NAMES = sorted(graphs())


@pytest.mark.parametrize("name", NAMES)
def test_lowered_python_matches_the_evaluator(name: str) -> None:
    graph = graphs()[name]
    vals = sample(graph)
    want = T.evaluate(graph, vals)
    got = run_python(graph, vals)
    for o in graph.outputs:
        np.testing.assert_allclose(got[o], want[o], rtol=1e-12, atol=1e-13, err_msg=o)


def test_blocks_of_keys_in_lowered_python_match_the_evaluator() -> None:
    """Key blocks print in any nest language (Python has no blocks to scope a step's
    names: they are rebound), a group of four steps and a short tail included; a key panel
    is a heap array allocated before the loops, which only compiled nests have."""
    graph = graphs()["attention_online"]
    vals = sample(graph, 3)
    want = T.evaluate(graph, vals)
    source = lower_graph(graph, "python", vector_keys=6, vector_rows=2, key_panel=True)
    assert "6 steps per block" in source and "key panel" not in source
    got = run_python(graph, vals, vector_keys=6, vector_rows=2)
    np.testing.assert_allclose(got["o"], want["o"], rtol=1e-12, atol=1e-13)


@pytest.mark.toolchain
@pytest.mark.parametrize("name", NAMES)
def test_lowered_c_matches_the_evaluator_under_the_sanitizers(name: str) -> None:
    if not available("gcc"):
        skip_missing_tool("gcc", "gcc is not installed on this machine")
    graph = graphs()[name]
    vals = sample(graph, 1)
    want = T.evaluate(graph, vals)
    got = run_c(graph, vals)
    for o in graph.outputs:
        np.testing.assert_allclose(got[o], want[o], rtol=1e-12, atol=1e-13, err_msg=o)


# register blocks and split reductions small enough for these graphs' shapes, so their edge
# blocks (clamped loads, guarded stores) and lane tails run under the sanitizers
SMALL_REGISTER_PLANS = {
    "block": (2, 4),
    "lanes": 4,
    "lanes_min": 4,
    "inline_lanes": 2,
    "vector_rows": 2,
    "vector_keys": 6,
}


@pytest.mark.toolchain
@pytest.mark.parametrize("name", NAMES)
def test_register_plans_match_the_evaluator_under_the_sanitizers(name: str) -> None:
    if not available("gcc"):
        skip_missing_tool("gcc", "gcc is not installed on this machine")
    graph = graphs()[name]
    vals = sample(graph, 2)
    want = T.evaluate(graph, vals)
    got = run_c(graph, vals, **SMALL_REGISTER_PLANS)
    for o in graph.outputs:
        np.testing.assert_allclose(got[o], want[o], rtol=1e-12, atol=1e-13, err_msg=o)


def test_small_register_plans_cover_blocks_lanes_and_inline_lanes() -> None:
    """The graphs above, with the small plans, exercise every register-plan path."""
    sources = "\n".join(lower_graph(g, "c", **SMALL_REGISTER_PLANS) for g in graphs().values())
    assert "schedule: blocked 2x4 over" in sources
    assert "schedule: split reduction over 4 lanes" in sources
    assert "malloc(" in sources and "free(" in sources  # the column panels
    assert sources.count("_1l0[") >= 3  # an inline dot product folded over two lanes
    blocks = "vector over i4 (state 2 per element), 2 rows of i3 each, 6 steps per block"
    assert f"{blocks}, t0⟨0, i1, i2, i3, r0⟩ from a key panel" in sources  # padded to 12 keys
    assert "#pragma omp parallel for" not in sources  # too little work to hand to threads


def run_wgsl(graph: T.TensorGraph, vals: dict[str, np.ndarray]):
    """Run the graph's WGSL kernels in order through wgpu-py over f32 buffers that stay on
    the device; returns the outputs and the size (in elements) of every buffer created."""
    import wgpu

    device = _wgpu_device()
    usage, stage = wgpu.BufferUsage, wgpu.ShaderStage.COMPUTE
    buffers, created = {}, {}
    for n in graph.inputs:
        data = np.ascontiguousarray(vals[n], dtype=np.float32)
        buffers[n] = device.create_buffer_with_data(data=data.tobytes(), usage=usage.STORAGE)
        created[n] = data.size
    for c in graph.comprehensions:
        size = max(1, c.size)
        buffers[c.name] = device.create_buffer(size=4 * size, usage=usage.STORAGE | usage.COPY_SRC)
        created[c.name] = size
    encoder = device.create_command_encoder()
    for kernel in lower_wgsl(graph):
        kinds = {"read": wgpu.BufferBindingType.read_only_storage, "read_write": "storage"}
        entries = [
            {"binding": b.binding, "visibility": stage, "buffer": {"type": kinds[b.access]}}
            for b in kernel.info.bindings
        ]
        layout = device.create_bind_group_layout(entries=entries)
        pipeline = device.create_compute_pipeline(
            layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={
                "module": device.create_shader_module(code=kernel.source),
                "entry_point": kernel.info.entry,
            },
        )
        names = [*kernel.reads, kernel.write]
        bind = device.create_bind_group(
            layout=layout,
            entries=[
                {"binding": b.binding, "resource": {"buffer": buffers[name]}}
                for b, name in zip(kernel.info.bindings, names)
            ],
        )
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind)
        compute.dispatch_workgroups(*dispatch_size(kernel.items, kernel.info.workgroup_size[0]))
        compute.end()
    device.queue.submit([encoder.finish()])
    out = {}
    for o in graph.outputs:
        flat = np.frombuffer(device.queue.read_buffer(buffers[o]), dtype=np.float32)
        shape = graph.output_shape(o)
        out[o] = flat[: math.prod(shape)].astype(np.float64).reshape(shape)
    return out, created


def close_in_f32(got: np.ndarray, want: np.ndarray) -> None:
    """f32 against the float64 evaluator: within 1e-5 of the output's scale, 1e-4 relative."""
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.toolchain
@pytest.mark.parametrize("name", NAMES)
def test_lowered_wgsl_matches_the_evaluator_on_wgpu(name: str) -> None:
    if not available("wgpu"):
        skip_missing_tool("wgpu", "wgpu-py has no adapter here (the tests use Mesa lavapipe)")
    graph = graphs()[name]
    vals = sample(graph, 2)
    want = T.evaluate(graph, vals)
    got, _ = run_wgsl(graph, vals)
    for o in graph.outputs:
        close_in_f32(got[o], want[o])


@pytest.mark.toolchain
def test_derived_attention_on_wgpu_allocates_no_score_matrix() -> None:
    """n = 64 keys, grouped-query causal attention: the derived kernel equals the naive one
    in f32 and the runtime creates no buffer of n·n elements (the naive graph does)."""
    if not available("wgpu"):
        skip_missing_tool("wgpu", "wgpu-py has no adapter here (the tests use Mesa lavapipe)")
    n = 64
    q, k, v = T.input("q", (1, 2, n, 8)), T.input("k", (1, 1, n, 8)), T.input("v", (1, 1, n, 8))
    naive = T.graph(o=T.attention(q, k, v, causal=True))
    derived = T.stabilize_softmax(T.fuse(naive))
    rng = np.random.default_rng(3)
    vals = {name: rng.normal(size=s) for name, s in naive.inputs.items()}
    want = T.evaluate(naive, vals)["o"]
    got_naive, naive_buffers = run_wgsl(naive, vals)
    got, buffers = run_wgsl(derived, vals)
    close_in_f32(got["o"], want)
    close_in_f32(got_naive["o"], want)
    assert max(naive_buffers.values()) >= 2 * n * n  # the score matrices, per query head
    assert max(buffers.values()) < n * n and set(buffers) == {"q", "k", "v", "o"}


def test_the_derived_attention_kernel_keeps_no_score_matrix() -> None:
    """The online kernel has one buffer, the output: the scores are computed in place. The
    schedule computes each query row's running max and sum once per key (scalars) and the
    accumulator as a vector over the output's last axis; unscheduled, the state is three
    scalars per output element."""
    graph = graphs()["attention_online"]
    assert buffer_order(graph) == ["q", "k", "v", "o"]
    plain = lower_graph(graph, "c", scheduled=False)
    assert plain.count("for (long") == 5 + 1 + 1  # output axes, keys, the inline dot product
    assert "double _0s2 = 0.0;" in plain and "double _0s0 = -INFINITY;" in plain
    # one query row per iteration, the state rescaled at every key
    source = lower_graph(graph, "c", vector_rows=1, vector_keys=1)
    assert "schedule: vector over i4" in source
    assert "double _0s0 = -INFINITY;" in source and "double _0s1 = 0.0;" in source
    assert "double _0a2[2];" in source  # the accumulator: one per output column
    # 4 outer axes, keys, the dot product, the vector loops (init, update, store), and the
    # query row read once into a private array before the keys (it does not vary with them)
    assert source.count("for (long") == 4 + 1 + 1 + 3 + 1
    assert "double _0q0_0[3];" in source
    assert source.count("exp2(") == 2  # the rescaling factors: once per key, not per column
    # 4 query rows per iteration (compiled C's default), their states in arrays over the rows
    rows = lower_graph(graph, "c", key_panel=False)
    assert "vector over i4 (state 2 per element), 4 rows of i3 each" in rows
    assert "double _0s0[4];" in rows and "double _0a2[8];" in rows  # m per row; acc 4 × 2
    # and 16 keys per block: their scores into an array, the state carried to the block's
    # max once, each key weighted by its own factor (the two exp2 calls: one each)
    assert "4 rows of i3 each, 16 steps per block" in rows
    assert "_0kb += 16" in rows and "double _0k0[16];" in rows and "double _0kf[16];" in rows
    assert rows.count("exp2(") == 2
    assert "_0tq += 4" in rows  # four keys' value rows added to the accumulator per pass
    # the block's max by a tree of combines: 16 → 8 → 4 → 2 → 1
    assert "double _0km[8];" in rows and all(f"_0t + {h}]" in rows for h in (8, 4, 2, 1))
    # compiled C's default: the scores from a key panel (k transposed, once per call, per
    # kv head: 2 × 3 steps × 16 keys), each inner step a loop over the block's 16 keys per
    # row, the rows unrolled by the compiler
    panel = lower_graph(graph, "c")
    assert "16 steps per block, t0⟨0, i1, i2, i3, r0⟩ from a key panel" in panel
    assert panel.count("malloc(sizeof(double) * 96)") == 1 and panel.count("free(") == 1
    assert "#pragma GCC unroll 4" in panel and "_2ks[_2rr * 16 + _2kt] = _2ks[" in panel
    assert panel.count("exp2(") == 2


def test_a_short_axis_steering_a_select_is_printed_once_per_value() -> None:
    """The butterfly's half axis goes innermost and is printed twice, its index a constant
    in each copy (so a compiler keeps one branch per copy); other axes stay loops."""
    source = lower_graph(graphs()["butterfly"], "c")
    assert "const long _o1 = 0;" in source and "const long _o1 = 1;" in source
    assert "_o1 < 2" not in source and "_o2 < 2" in source and "_o0 < 3" in source
    python = lower_graph(graphs()["butterfly"], "python")  # no blocks in Python: a loop
    assert "for _o1 in range(2):" in python


def test_unroll_prints_short_innermost_loops_once_per_value() -> None:
    graph = T.graph(y=T.input("x", (5, 3)).sum(axis=1))
    rolled, unrolled = lower_graph(graph, "c"), lower_graph(graph, "c", unroll=3)
    assert "< 3; ++" in rolled and "< 3; ++" not in unrolled
    assert all(f"= {k};" in unrolled for k in range(3))


def test_integer_ops_need_an_integer_dtype() -> None:
    x = T.input("x", (4,))
    graph = T.graph(y=T.map_(lambda v: (v >> 1) & 3, x))
    with pytest.raises(ValueError, match=r"uses the integer op 'bitand'.*integer dtype \(i64\)"):
        lower_graph(graph, "c")
    source = lower_graph(graph, "c", dtype="i64")
    assert "const int64_t *restrict x" in source and "3 & (_0v0 >> 1)" in source
    assert lower_graph(graph, "python", dtype="i64").count(">> 1") == 1


def test_guarded_reads_are_clamped_into_their_buffer() -> None:
    source = lower_graph(graphs()["shifted_backward"], "c")
    assert " < 0 ? 0 : " in source  # the sanitizers above run this kernel without a fault


def test_statement_spellings_are_the_printers_tables() -> None:
    assert nest_languages() == ["C", "Python"]  # the printers that frame loop-nest functions
    with pytest.raises(ValueError, match="lowers to C and Python, not 'cuda'"):
        lower_graph(graphs()["softmax_matmul"], "cuda")  # CUDA's printer has no loop spellings
    with pytest.raises(ValueError, match="lowers to C and Python"):
        lower_graph(graphs()["softmax_matmul"], "wgsl")  # WGSL is one kernel per comprehension
    with pytest.raises(ValueError, match="cannot name"):
        lower_graph(graphs()["softmax_matmul"], "c", name="not a name")
