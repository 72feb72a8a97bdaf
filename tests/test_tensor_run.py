"""Comprehension graphs run on tang.gpu devices through ``tang.tensor.compile``/``run``:
scheduled WGSL kernels through wgpu-py on Mesa lavapipe (f32, real), the whole graph as one
C function on the compiled C device (gcc -O3 -march=native, OpenMP), and the pure-Python
kernels of the CPU device. Every op's forward and derived backward is checked against the
numpy float64 references; derived attention against naive attention at n = 1,024 with no
n×n buffer among the ones the runtime created.

f32 tolerance: |got − want| ≤ 1e-4·|want| + 1e-5·max(1, max |want|) (the output's scale).
"""

from __future__ import annotations

import math
import random
from array import array

import numpy as np
import pytest
import tensor_reference as ref
import test_tensor_grad as grad_cases
import test_tensor_ops as op_cases

import tang.gpu as gpu
from tang import tensor as T
from tang.tensor import TensorIRError
from tang.tensor.kernels import lower_wgsl
from tang.tensor.lower import lower_graph
from tang.tensor.passes.schedule import eliminate_pinned, loop_stop, plan
from tang.tensor.printing import format_comprehension


@pytest.fixture
def native(native_device):
    return native_device


@pytest.fixture(scope="module")
def cpu():
    return gpu.CPUDevice()


@pytest.fixture
def compiled_c(c_device):
    return c_device


def device_of(request, kind: str):
    return request.getfixturevalue({"native": "native", "c": "compiled_c"}.get(kind, "cpu"))


DEVICES = [
    pytest.param("native", marks=pytest.mark.toolchain),
    pytest.param("c", marks=pytest.mark.toolchain),
    "cpu",
]


def close_in_f32(got, want, what: str = "") -> None:
    want = np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale, err_msg=what)


# ---- every op, forward and backward --------------------------------------------------------


@pytest.mark.parametrize("kind", DEVICES)
@pytest.mark.parametrize("name", sorted(op_cases.CASES))
def test_forward_of_every_op_matches_numpy_on_the_device(request, kind: str, name: str) -> None:
    dev = device_of(request, kind)
    shapes = op_cases.case_shapes(name, random.Random(f"run{name}"), small=kind == "cpu")
    vals = op_cases.values_for(shapes, np.random.default_rng(5))
    graph = op_cases.build(name, shapes)
    want = op_cases.CASES[name][1](vals)
    for g in (graph, T.fuse(graph)):
        close_in_f32(T.run(g, vals, dev)["y"], want, name)
        if kind == "native":  # the tiled and combine-tree kernels too
            close_in_f32(T.run(g, vals, dev, workgroups=True)["y"], want, name)


@pytest.mark.parametrize("kind", DEVICES)
@pytest.mark.parametrize("name", sorted(grad_cases.CASES))
def test_backward_of_every_op_matches_numpy_on_the_device(request, kind: str, name: str) -> None:
    dev = device_of(request, kind)
    graph, vals, wrt = grad_cases.setup(name, 1, top=5 if kind == "native" else 3)
    back = T.fuse(T.grad(graph, "y", wrt))
    y = T.evaluate(graph, vals)["y"]
    cotangent = np.random.default_rng(7).normal(size=np.shape(y))
    expected = grad_cases.CASES[name][2](vals, cotangent)
    for workgroups in (False, True) if kind == "native" else (False,):
        out = T.run(back, {**vals, "d_y": cotangent}, dev, workgroups=workgroups)
        for w in wrt:
            close_in_f32(out[f"d_{w}"], expected[w], f"{name}: d_{w}")


# ---- the schedule's plans, run ---------------------------------------------------------------


def test_the_schedule_picks_plans_from_the_form_alone() -> None:
    x, w = T.input("x", (37, 50)), T.input("w", (50, 21))
    q, k, v = (T.input(n, (1, 2, 40, 16)) for n in "qkv")
    z = T.input("z", (2, 5000))
    tiled = plan(T.graph(y=x @ w).comprehensions[0], workgroups=True)
    assert (tiled.kind, tiled.a, tiled.b) == ("tiled", "i0", "i1")
    assert plan(T.graph(y=x @ w).comprehensions[0]).kind == "per_element"  # no workgroups
    online = T.stabilize_softmax(T.fuse(T.graph(o=T.attention(q, k, v, causal=True))))
    vector = plan(online.comprehensions[0])
    assert vector.kind == "vector" and vector.vector == ("i4",)
    assert vector.varying == (2,)  # the accumulator; the running max and sum are scalars
    tree = plan(T.graph(y=T.sum(z, 1)).comprehensions[0], workgroups=True)
    assert (tree.kind, tree.width) == ("tree", 256)
    assert plan(T.graph(y=T.exp(x)).comprehensions[0], workgroups=True).kind == "per_element"
    # compiled loop nests: register blocks for a product's shape, lanes for a long reduction
    blocked = plan(T.graph(y=x @ w).comprehensions[0], registers=True)
    assert (blocked.kind, blocked.a, blocked.b, blocked.block) == ("blocked", "i0", "i1", (6, 32))
    prologue = T.fuse(T.graph(y=T.tanh(x * 2.0 + 1.0) @ w)).comprehensions[0]
    assert plan(prologue, registers=True).kind == "blocked"  # operands computed, not loaded
    lanes = plan(T.graph(y=T.sum(z, 1)).comprehensions[0], registers=True)
    assert (lanes.kind, lanes.lanes) == ("lanes", 32)
    # a causal key loop stops early: no register block and no lanes, the vector plan stays
    assert plan(online.comprehensions[0], registers=True).kind == "vector"


def test_workgroup_kernels_spell_shared_memory_and_barriers_from_the_table() -> None:
    x, w, z = T.input("x", (37, 50)), T.input("w", (50, 21)), T.input("z", (2, 5000))
    (mm,) = lower_wgsl(T.graph(y=x @ w))
    assert "var<workgroup> _0w0: array<f32, 256>;" in mm.source
    assert mm.source.count("workgroupBarrier();") == 2
    assert mm.items == 3 * 2 * 256  # ceil(37/16) x ceil(21/16) tiles of 16 x 16
    (tree,) = lower_wgsl(T.graph(y=T.sum(z, 1)))
    assert tree.source.count("workgroupBarrier();") == 1 + 8  # after the fold, log2(256) steps
    assert tree.items == 2 * 256


@pytest.mark.toolchain
def test_tiled_and_tree_kernels_match_numpy_on_wgpu(native) -> None:
    rng = np.random.default_rng(0)
    x, w = T.input("x", (37, 50)), T.input("w", (50, 21))
    b, c = T.input("b", (3, 20, 33)), T.input("c", (33, 18))
    z = T.input("z", (2, 5000))
    graphs = {
        "matmul": (T.graph(y=x @ w), lambda v: v["x"] @ v["w"]),
        "epilogue": (
            T.fuse(T.graph(y=T.relu(x @ w) * 2.0)),
            lambda v: np.maximum(v["x"] @ v["w"], 0) * 2,
        ),
        "batched": (T.graph(y=b @ c), lambda v: v["b"] @ v["c"]),
        "tree_sum": (T.graph(y=T.sum(z, 1)), lambda v: v["z"].sum(1)),
        "tree_max_all": (T.graph(y=T.max(z)), lambda v: v["z"].max()),
        "tree_softmax": (T.fuse(T.graph(y=T.softmax(z))), lambda v: ref.softmax(v["z"])),
    }
    for name, (g, want) in graphs.items():
        vals = {k: rng.normal(size=s) for k, s in g.inputs.items()}
        compiled = T.compile(g, native, workgroups=True)  # lavapipe would not choose them
        assert {s.plan.kind for s in compiled.steps} & {"tiled", "tree"}, name
        close_in_f32(compiled(vals)["y"], want(vals), name)


def test_register_blocks_load_contiguous_columns_as_vectors_on_wgpu(native) -> None:
    """A register block's column operand, contiguous along the columns with every other
    stride a multiple of 4, is read as vec4s (its binding declared as vectors, so its other
    reads take a vector's cell); a strided read or a width that is no multiple of 4 keeps
    scalar loads. Each kernel equals numpy either way, edge blocks included."""
    rng = np.random.default_rng(3)
    x, w = T.input("x", (24, 40)), T.input("w", (40, 32))
    b, c = T.input("b", (3, 20, 36)), T.input("c", (36, 24))
    s, o = T.input("s", (32, 32)), T.input("o", (16, 20))
    t, u = T.input("t", (30, 40)), T.input("u", (40, 30))
    cases = {  # name: (graph, numpy, block, the buffer read as vectors or None)
        "matmul": (T.graph(y=x @ w), lambda v: v["x"] @ v["w"], (8, 16), "w"),
        "batched": (T.graph(y=b @ c), lambda v: v["b"] @ v["c"], (4, 8), "c"),
        "prologue": (
            T.fuse(T.graph(y=x @ T.exp(w * 0.1))),
            lambda v: v["x"] @ np.exp(v["w"] * 0.1),
            (4, 8),
            "w",
        ),
        "edge rows": (T.graph(y=b @ c), lambda v: v["b"] @ v["c"], (8, 8), "c"),
        "edge columns": (T.graph(y=b @ c), lambda v: v["b"] @ v["c"], (4, 16), "c"),
        "odd width": (T.graph(y=x @ u), lambda v: v["x"] @ v["u"], (4, 8), None),
        "one buffer both ways": (T.graph(y=s @ s), lambda v: v["s"] @ v["s"], (4, 8), "s"),
        "transposed rows": (T.graph(y=o.T @ o), lambda v: v["o"].T @ v["o"], (4, 8), "o"),
        "strided columns": (T.graph(y=x @ t.T), lambda v: v["x"] @ v["t"].T, (4, 8), None),
    }
    for name, (g, want, block, wide) in cases.items():
        vals = {k: rng.normal(size=shape) for k, shape in g.inputs.items()}
        compiled = T.Compiled(g, native, schedule={"block": block}, workgroups=False)
        assert [step.plan.kind for step in compiled.steps] == ["blocked"], name
        (source,) = compiled.sources
        vectors = {k for k in g.inputs if f"var<storage, read> {k}: array<vec4<f32>>" in source}
        assert vectors == ({wide} if wide else set()), name
        close_in_f32(compiled(vals)["y"], want(vals), name)


def test_a_guard_that_pins_a_reduction_variable_removes_its_loop() -> None:
    """The adjoint of a read that grad cannot solve digit by digit (a slice whose offset
    carries across the reshaped digits) is a sum guarded by an equation between index
    variables; a reduction variable with coefficient ±1 in it has one value, not a loop."""
    x, w = T.input("x", (3, 8)), T.input("w", (2, 3))
    back = T.grad(T.graph(y=T.sum(T.exp(x[:, 1:7].reshape(3, 2, 3)) * w)), "y", ["x", "w"])
    pinned = T.TensorGraph(
        back.inputs, [eliminate_pinned(c) for c in back.comprehensions], back.outputs
    )
    loops = {c.name: math.prod(e for _, e in c.reduce) for c in back.comprehensions}
    fewer = {
        c.name for c in pinned.comprehensions if math.prod(e for _, e in c.reduce) < loops[c.name]
    }
    assert fewer == {"d_x"}
    assert "==" in format_comprehension(back["d_x"])
    # the equation became the loop variable's value
    assert "==" not in format_comprehension(pinned["d_x"])
    rng = np.random.default_rng(4)
    vals = {k: rng.normal(size=s) for k, s in back.inputs.items()}
    want, got = T.evaluate(back, vals), T.evaluate(pinned, vals)
    for o in back.outputs:
        np.testing.assert_allclose(got[o], want[o], rtol=1e-12, atol=1e-12)


def test_a_gather_binds_its_index_instead_of_looping_over_the_table() -> None:
    """``take`` is a sum over the table's rows guarded by ``row == index``; every kernel
    language binds the row to the index it reads (one step, not a loop over the rows),
    whatever plan options are allowed, and a fused consumer keeps the binding."""
    table, ids = T.input("W", (50, 3)), T.input("ids", (4,))
    graph = T.graph(y=T.take(table, ids) * 2.0)
    (comp,) = T.fuse(graph).comprehensions
    for options in ({}, {"registers": True}, {"workgroups": True, "registers": True}):
        assert plan(comp, **options).kind == "per_element"
    sources = {
        "c": lower_graph(graph, "c", dtype="f32"),
        "python": lower_graph(graph, "python"),
        "wgsl": "\n".join(k.source for k in lower_wgsl(T.fuse(graph))),
    }
    for language, source in sources.items():
        assert "< 50;" not in source and "range(50)" not in source, language  # no row loop
        assert "49" in source, language  # the index kept within the table's last row


@pytest.mark.parametrize("kind", DEVICES)
def test_a_gather_gives_zeros_for_indices_that_name_no_row(request, kind: str) -> None:
    dev = device_of(request, kind)
    graph = T.graph(y=T.take(T.input("W", (6, 3)), T.input("ids", (9,))))
    w = np.arange(18.0).reshape(6, 3) + 1.0
    ids = np.array([0.0, 5.0, 2.0, -1.0, 6.0, 2.5, math.nan, 1e30, -math.inf])
    want = np.zeros((9, 3))
    want[:3] = w[[0, 5, 2]]
    np.testing.assert_array_equal(T.evaluate(graph, {"W": w, "ids": ids})["y"], want)
    close_in_f32(T.run(graph, {"W": w, "ids": ids}, dev)["y"], want, kind)


def test_the_key_loop_stops_at_the_last_unmasked_key() -> None:
    """A masked key's element is the online monoid's identity (−inf, 0, 0), so the loop
    over keys stops at the causal bound; without a mask it runs over every key."""
    _, causal = attention_pair(16, 4)
    assert loop_stop(causal.comprehensions[0]) == ({"i3": 1}, 1)  # keys r0 < i3 + 1
    q, k, v = (T.input(n, (1, 1, 16, 4)) for n in "qkv")
    full = T.stabilize_softmax(T.fuse(T.graph(o=T.attention(q, k, v))))
    assert loop_stop(full.comprehensions[0]) is None


def test_short_innermost_loops_are_unrolled_in_wgsl_only() -> None:
    """lavapipe stops an invocation after 65,535 loop iterations in all, so the WGSL table
    unrolls innermost loops of up to 64 steps (the dot product, the accumulator lanes)."""
    _, derived = attention_pair(32, 8)
    (kernel,) = lower_wgsl(derived)
    assert "for (var _1r0" not in kernel.source
    assert all(f"let _1r0 = {step};" in kernel.source for step in range(8))
    # contiguous along an unrolled loop: the keys and values are read as vec4s
    assert "k: array<vec4<f32>>" in kernel.source and "v: array<vec4<f32>>" in kernel.source
    assert "for (var _0r0: i32 = 0; _0r0 < min(32, _0i3 + 1); _0r0++)" in kernel.source  # keys
    c_source = T.lower.lower_graph(derived, "c")
    assert "for (long _1r0 = 0; _1r0 < 8; ++_1r0)" in c_source  # C keeps its loops


# ---- attention: derived vs naive, and the buffers created --------------------------------------


def attention_pair(n: int, d: int, heads: int = 1, kv_heads: int = 1):
    q = T.input("q", (1, heads, n, d))
    k, v = T.input("k", (1, kv_heads, n, d)), T.input("v", (1, kv_heads, n, d))
    naive = T.graph(o=T.attention(q, k, v, causal=True))
    return naive, T.stabilize_softmax(T.fuse(naive))


def check_derived_attention(dev, n: int, d: int, heads: int, kv_heads: int) -> None:
    naive, derived = attention_pair(n, d, heads, kv_heads)
    rng = np.random.default_rng(n)
    vals = {name: rng.normal(size=s).astype(np.float32) for name, s in naive.inputs.items()}
    slow, fast = T.compile(naive, dev), T.compile(derived, dev)
    want, got = slow(vals)["o"], fast(vals)["o"]
    scale = float(np.abs(want).max())
    assert np.abs(got - want).max() <= 1e-5 * scale
    close_in_f32(got, ref.attention(*(vals[k].astype(np.float64) for k in "qkv"), causal=True))
    # the runtime's own record of what it allocated: the naive graph holds score matrices
    assert max(a.size for a in slow.allocations) >= heads * n * n
    assert max(a.size for a in fast.allocations) < n * n
    assert [a.name for a in fast.allocations] == ["q", "k", "v", "o"]
    assert fast.bytes_written == 4 * heads * n * d  # O(n·d): the output only
    assert slow.bytes_written > 4 * heads * n * n


@pytest.mark.toolchain
def test_rows_of_derived_attention_share_their_key_and_value_reads_on_wgpu(native) -> None:
    """A vector plan over several query rows reads each step's key and value once for all
    of its rows, as vec4s (the key into a private array its score loops read); the few
    invocations run in narrow workgroups. Every row count equals the float64 attention,
    grouped heads and a width that is no multiple of 4 (scalar reads) included."""
    rng = np.random.default_rng(7)
    for n, d, heads, kv_heads in ((96, 16, 4, 2), (40, 6, 1, 1)):
        _, derived = attention_pair(n, d, heads, kv_heads)
        vals = {k: rng.normal(size=s).astype(np.float32) for k, s in derived.inputs.items()}
        want = ref.attention(*(vals[k].astype(np.float64) for k in "qkv"), causal=True)
        for rows in (1, 4, 16):
            fn = T.Compiled(derived, native, schedule={"vector_rows": rows}, workgroups=False)
            (source,) = fn.sources
            wide = d % 4 == 0
            assert ("k: array<vec4<f32>>" in source) == wide, (d, rows)
            assert ("v: array<vec4<f32>>" in source) == wide, (d, rows)
            if wide and rows > 1:  # one read of the key per step, before the rows
                assert source.count("= k[") == d // 4, rows
            assert fn.steps[0].kernel.workgroup_x < 64 or fn.steps[0].items >= 64 * 16
            close_in_f32(fn(vals)["o"], want, f"n {n}, d {d}, {rows} rows")


@pytest.mark.toolchain
@pytest.mark.parametrize("keys", [1, 5, 16, 64])
def test_derived_attention_folds_blocks_of_keys_on_the_c_device(compiled_c, keys) -> None:
    """On the C device the online reduction runs in blocks of keys (the block's scores into
    an array, the state carried to their max once, each key weighted by its own factor),
    over several rows with the scores from a key panel (k transposed once per call, one
    per kv head) or without. Every block length, a last block cut short, rows past the end,
    blocks the causal mask empties and no mask at all equal the float64 attention."""
    n, d = 37, 8
    rng = np.random.default_rng(keys)
    for causal in (True, False):
        q = T.input("q", (1, 4, n, d))
        k, v = T.input("k", (1, 2, n, d)), T.input("v", (1, 2, n, d))
        derived = T.stabilize_softmax(T.fuse(T.graph(o=T.attention(q, k, v, causal=causal))))
        vals = {name: rng.normal(size=s).astype(np.float32) for name, s in derived.inputs.items()}
        want = ref.attention(*(vals[x].astype(np.float64) for x in "qkv"), causal=causal)
        for rows, panel in ((1, True), (3, True), (3, False)):
            schedule = {"vector_keys": keys, "vector_rows": rows, "key_panel": panel}
            fn = T.Compiled(derived, compiled_c, schedule=schedule)
            plan = str(fn.plans["o"])
            assert (f"{keys} steps per block" in plan) == (keys > 1)
            assert ("from a key panel" in plan) == (keys > 1 and rows > 1 and panel), plan
            where = f"{keys} keys, {rows} rows, panel {panel}, causal {causal}"
            close_in_f32(fn(vals)["o"], want, where)


@pytest.mark.toolchain
def test_a_key_panel_row_of_4_kib_is_padded_and_still_exact(compiled_c) -> None:
    """1,024 keys of f32 would make each of the panel's rows 4 KiB long (every inner step's
    block of keys in the same cache set): the rows are padded by one block, and the
    attention still equals float64's. A panel that would be read fewer than 8 times (4
    query rows: one row block) is not built."""
    rng = np.random.default_rng(3)
    _, derived = attention_pair(1024, 4, 1, 1)
    vals = {name: rng.normal(size=s).astype(np.float32) for name, s in derived.inputs.items()}
    want = ref.attention(*(vals[x].astype(np.float64) for x in "qkv"), causal=True)
    fn = T.Compiled(derived, compiled_c)
    assert "from a key panel" in str(fn.plans["o"])
    assert "malloc(sizeof(float) * 4160)" in fn.sources[0]  # 4 steps × (1,024 + 16) keys
    close_in_f32(fn(vals)["o"], want, "n 1024, d 4")
    q, k = T.input("q", (1, 1, 4, 4)), T.input("k", (1, 1, 64, 4))
    few = T.stabilize_softmax(T.fuse(T.graph(o=T.attention(q, k, T.input("v", (1, 1, 64, 4))))))
    assert "key panel" not in str(T.Compiled(few, compiled_c).plans["o"])


@pytest.mark.toolchain
def test_blocks_of_keys_are_refused_in_wgsl_saying_why(native) -> None:
    _, derived = attention_pair(8, 4)
    with pytest.raises(TypeError, match="'vector_keys' is for compiled loop nests") as caught:
        T.Compiled(derived, native, schedule={"vector_keys": 16})
    assert "65,535 loop iterations" in str(caught.value)
    fn = T.Compiled(derived, native, schedule={"vector_keys": 1})  # one step at a time
    assert "steps per block" not in str(fn.plans["o"])


@pytest.mark.toolchain
def test_derived_attention_equals_naive_at_n_1024_on_wgpu_without_an_n_by_n_buffer(native):
    check_derived_attention(native, 1024, 64, 1, 1)


@pytest.mark.toolchain
def test_derived_grouped_query_attention_on_wgpu(native):
    check_derived_attention(native, 96, 16, 4, 2)


def test_derived_attention_on_the_cpu_device(cpu):
    check_derived_attention(cpu, 24, 4, 2, 1)


@pytest.mark.toolchain
def test_derived_grouped_query_attention_on_the_c_device(compiled_c):
    check_derived_attention(compiled_c, 300, 16, 4, 2)


def block_graph(t_len: int = 12, dm: int = 16, heads: int = 4, kv: int = 2, dh: int = 4):
    """RMSNorm → grouped-query attention with RoPE → residual → RMSNorm → SwiGLU → residual."""
    x, n1, n2 = T.input("x", (t_len, dm)), T.input("n1", (dm,)), T.input("n2", (dm,))
    wq, wk = T.input("wq", (dm, heads * dh)), T.input("wk", (dm, kv * dh))
    wv, wo = T.input("wv", (dm, kv * dh)), T.input("wo", (heads * dh, dm))
    wg, wu, wd = T.input("wg", (dm, 40)), T.input("wu", (dm, 40)), T.input("wd", (40, dm))

    def split(t, h):
        return t.reshape(1, t_len, h, dh).permute(0, 2, 1, 3)

    a = T.rms_norm(x, n1)
    q, k, v = T.rope(split(a @ wq, heads)), T.rope(split(a @ wk, kv)), split(a @ wv, kv)
    att = T.attention(q, k, v, causal=True).permute(0, 2, 1, 3).reshape(t_len, heads * dh)
    h = x + att @ wo
    return T.graph(y=h + T.swiglu(T.rms_norm(h, n2), wg, wu, wd))


@pytest.mark.toolchain
def test_a_transformer_block_forward_and_backward_on_the_c_device(compiled_c):
    """Forward and every derived gradient, fused and online, as one C function: equal to
    the float64 evaluator to f32 rounding; register blocks and split reductions among
    its plans."""
    g = block_graph()
    both = T.stabilize_softmax(T.fuse(T.grad(g, "y", list(g.inputs))))
    rng = np.random.default_rng(11)
    vals = {n: rng.normal(size=s) / math.sqrt(s[0]) for n, s in both.inputs.items()}
    want = T.evaluate(both, vals)
    fn = T.compile(both, compiled_c)
    got = fn({n: v.astype(np.float32) for n, v in vals.items()})
    for name in both.outputs:
        close_in_f32(got[name], want[name], name)
    assert len(fn.steps) == 1  # one call runs every comprehension
    assert {"blocked", "per_element"} <= {p.kind for p in fn.plans.values()}


def lifted_vectors(plans: dict, graph) -> list[str]:
    """The comprehensions whose plan is a vector although every body component varies
    along it: what pays is a part of a component that does not (lifted out of the loop)."""
    return [
        c.name
        for c in graph.comprehensions
        if plans[c.name].kind == "vector"
        and all(c.depends_on(b, plans[c.name].vector) for b in c.body)
    ]


@pytest.mark.parametrize("kind", DEVICES)
def test_a_transformer_block_forward_and_backward_on_each_device(request, kind: str):
    """Forward and every derived gradient, a kernel per comprehension on wgpu and on the
    CPU device: equal to the float64 evaluator to f32 rounding. The attention gradients
    that re-read the score inline (d_t9: Σ score · a load along another output axis) get
    a vector plan that computes the score once per step for the whole vector."""
    g = block_graph()
    both = T.stabilize_softmax(T.fuse(T.grad(g, "y", list(g.inputs))))
    assert lifted_vectors({c.name: plan(c) for c in both.comprehensions}, both)
    rng = np.random.default_rng(12)
    vals = {n: rng.normal(size=s) / math.sqrt(s[0]) for n, s in both.inputs.items()}
    want = T.evaluate(both, vals)
    fn = T.compile(both, device_of(request, kind))
    got = fn({n: v.astype(np.float32) for n, v in vals.items()})
    for name in both.outputs:
        close_in_f32(got[name], want[name], name)
    if kind != "c":  # the C device runs one function; the others, lifted vectors among them
        assert lifted_vectors(fn.plans, both)


@pytest.mark.toolchain
def test_comprehensions_that_do_not_read_each_other_share_a_dispatch_on_wgpu(native) -> None:
    """The block's forward and backward: each dispatch runs one level of comprehensions
    (none reads another's output, each reads only what earlier dispatches wrote), fewer
    dispatches than comprehensions, and the same bits as a dispatch each."""
    g = block_graph()
    both = T.stabilize_softmax(T.fuse(T.grad(g, "y", list(g.inputs))))
    rng = np.random.default_rng(13)
    vals = {
        n: (rng.normal(size=s) / math.sqrt(s[0])).astype(np.float32) for n, s in both.inputs.items()
    }
    alone = T.Compiled(both, native, schedule={"merge": False}, workgroups=False)
    shared = T.Compiled(both, native, schedule={}, workgroups=False)
    assert len(alone.steps) == len(both.comprehensions)
    assert 1 < len(shared.steps) < len(both.comprehensions) // 2
    assert any(len(step.parts) > 1 for step in shared.steps)
    written = set(both.inputs)
    for step in shared.steps:
        for name in step.parts:
            assert both[name].sources() <= written, name  # nothing from its own dispatch
        written |= set(step.parts)
    assert written == set(both.inputs) | {c.name for c in both.comprehensions}
    want, got = alone(vals), shared(vals)
    for name in both.outputs:
        assert np.array_equal(got[name], want[name]), name


@pytest.mark.toolchain
def test_a_shared_dispatch_splits_when_bound_buffers_alias(native) -> None:
    """Binding one comprehension's output to a buffer another of its dispatch reads would
    make that dispatch read and write one buffer: from then on each has its own, run in
    the graph's order."""
    x, y, z = (T.input(name, (64,)) for name in "xyz")
    g = T.graph(a=x * 2.0, b=y + z)
    fn = T.Compiled(g, native, workgroups=False)
    assert [step.parts for step in fn.steps] == [("a", "b")]
    fn.bind(y=fn.buffers["z"])  # two reads of one buffer: still one dispatch
    assert [step.parts for step in fn.steps] == [("a", "b")]
    fn.bind(a=fn.buffers["z"])  # a writes what b reads
    xv = np.arange(64, dtype=np.float32)
    out = fn({"x": xv, "z": np.zeros(64, np.float32)})  # z: then overwritten by a
    assert [step.parts for step in fn.steps] == [("a",), ("b",)]
    np.testing.assert_array_equal(out["b"], xv * 4)  # b read a's output, written first


# ---- the run API ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", DEVICES)
def test_buffers_stay_on_the_device_and_kernels_compile_once(request, kind: str) -> None:
    dev = device_of(request, kind)
    x, w = T.input("x", (3, 4)), T.input("w", (4, 2))
    g = T.graph(y=T.softmax(x @ w))
    xv, wv = np.arange(12.0).reshape(3, 4) / 10, np.ones((4, 2))
    fn = T.compile(g, dev)
    assert T.compile(g, dev) is fn  # one compiled object per graph and device
    before = dev.compiles
    close_in_f32(fn({"x": xv, "w": wv})["y"], ref.softmax(xv @ wv))
    w2 = np.array([[1.0, -1.0]] * 4)
    close_in_f32(fn({"w": w2})["y"], ref.softmax(xv @ w2))  # x stays on the device
    T.run(g, {"x": xv, "w": wv}, dev)
    assert dev.compiles == before  # nothing compiled again
    sizes = {a.name: a.size for a in fn.allocations}
    assert sizes == {"x": 12, "w": 8, **{c.name: c.size for c in g.comprehensions}}


def test_lists_and_arrays_in_give_lists_and_arrays_out(cpu) -> None:
    x = T.input("x", (2, 3))
    g = T.graph(y=T.sum(x * 2.0, 1), z=x.T * 1.0)
    nested = T.run(g, {"x": [[1, 2, 3], [4, 5, 6]]}, cpu)
    assert nested == {"y": [12.0, 30.0], "z": [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]}
    flat = T.run(g, {"x": array("d", [1, 2, 3, 4, 5, 6])}, cpu)
    assert flat["y"] == array("d", [12.0, 30.0]) and isinstance(flat["z"], array)
    assert T.run(g, {"x": [1, 2, 3, 4, 5, 6]}, cpu)["y"] == [12.0, 30.0]  # flat lists too
    out = T.run(g, {"x": np.ones((2, 3))}, cpu)["z"]
    assert out.dtype == np.float32 and out.shape == (3, 2)


def test_bad_inputs_get_clear_errors(cpu) -> None:
    x = T.input("x", (2, 3))
    g = T.graph(y=x * 2.0)
    fn = T.compile(g, cpu)
    with pytest.raises(TensorIRError, match=r"no value given for the inputs \['x'\]"):
        fn({})
    with pytest.raises(TensorIRError, match="has no input 'w'"):
        fn({"x": np.ones((2, 3)), "w": [1.0]})
    with pytest.raises(TensorIRError, match=r"shape \(3, 3\), expected \(2, 3\)"):
        fn({"x": np.ones((3, 3))})
    with pytest.raises(TensorIRError, match="expected extent 3 at depth 1"):
        fn({"x": [[1, 2], [3, 4]]})
    with pytest.raises(TypeError, match="TensorGraph"):
        T.compile(x, cpu)  # type: ignore[arg-type]


def test_the_best_device_is_the_default() -> None:
    x = T.input("x", (4,))
    out = T.run(T.graph(y=T.exp(x)), {"x": [0.0, 1.0, 2.0, 3.0]})
    assert out["y"] == pytest.approx([math.exp(v) for v in range(4)], rel=1e-6)


def test_bound_buffers_chain_graphs_and_a_swap_carries_state(cpu) -> None:
    """``bind`` points a graph at another's buffers (no copy; release leaves them alone);
    ``swap`` makes an output the next call's input, so a state stays on the device."""
    x = T.input("x", (2,))
    double = T.graph(y=x * 2.0)
    first, second = T.Compiled(double, cpu), T.Compiled(double, cpu)
    first({"x": [1.0, 2.0]})
    second.bind(x=first.buffers["y"])
    assert second()["y"] == [4.0, 8.0]
    second.release()
    assert first.buffers["y"].handle is not None  # still the first graph's
    assert list(cpu.read(first.buffers["y"])) == [2.0, 4.0]

    s = T.input("s", (3,))
    counter = T.Compiled(T.graph(s_next=s + 1.0), cpu)
    counter.write({"s": [0.0, 10.0, 20.0]})
    for _ in range(3):
        counter.dispatch()
        counter.swap("s", "s_next")
    assert list(cpu.read(counter.buffers["s"])) == [3.0, 13.0, 23.0]

    third = T.Compiled(double, cpu)
    with pytest.raises(TensorIRError, match="no buffer 'z'"):
        third.bind(z=first.buffers["y"])
    with pytest.raises(TensorIRError, match="a buffer of 2 elements"):
        third.bind(x=cpu.empty(1))
    with pytest.raises(TensorIRError, match="this graph's device"):
        third.bind(x=gpu.CPUDevice().empty(2))
