"""Packed inputs of the tensor IR (tang.tensor.packed): buffers of u32 words read as u4, u8,
i8, u16 or f16 elements. Each element type is decoded by both evaluators and read by every
device's kernels (pure-Python CPU, compiled C, WGSL on lavapipe), all against numpy's own
reading of the same bytes; every one of the 65,536 half bit patterns goes through C and
WGSL."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

import tang.gpu as gpu
from tang import tensor as T
from tang.tensor import packed
from tang.tensor.comprehension import TensorGraph, TensorIRError
from tang.tensor.kernels import lower_wgsl
from tang.tensor.lower import lower_graph
from tests.skips import open_or_skip

KINDS = ["u4", "u8", "i8", "u16", "f16"]


def numpy_elements(kind: str, raw: bytes, count: int) -> np.ndarray:
    """numpy's reading of ``raw`` as ``count`` elements (the oracle)."""
    b = np.frombuffer(raw, np.uint8)
    if kind == "u4":
        return np.stack([b & 15, b >> 4], -1).reshape(-1)[:count].astype(np.float64)
    dtype = {"u8": np.uint8, "i8": np.int8, "u16": "<u2", "f16": "<f2"}[kind]
    return np.frombuffer(raw, dtype)[:count].astype(np.float64)


def random_bytes(kind: str, count: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=4 * packed.words(kind, count), dtype=np.uint8)
    if kind == "f16":  # finite halves: the kernels' arithmetic then compares exactly
        halves = raw.view("<u2")
        halves[(halves & 0x7C00) == 0x7C00] &= 0xBFFF
    return raw.tobytes()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("count", [1, 7, 64, 133])
def test_both_decoders_read_what_numpy_reads(kind: str, count: int) -> None:
    raw = random_bytes(kind, count, seed=count)
    want = numpy_elements(kind, raw, count)
    got = packed.decode(kind, raw, count)
    np.testing.assert_array_equal(got, want)
    words = array("I", raw)
    slow = packed._decode_python(packed.element(kind), words, count)
    assert isinstance(slow, list)
    np.testing.assert_array_equal(np.array(slow), want)


def test_words_from_every_kind_of_data() -> None:
    raw = bytes(range(12))
    want = np.frombuffer(raw, np.uint32)
    for value in (
        raw,
        bytearray(raw),
        memoryview(raw),
        np.frombuffer(raw, np.uint8),
        want,
        array("I", raw),
    ):
        np.testing.assert_array_equal(packed.as_words(value, 24, "u4"), want)
    # more data than the elements need is cut; the last word's padding may be missing
    assert len(packed.as_words(raw, 3, "u8")) == 1
    np.testing.assert_array_equal(packed.as_words(raw[:9], 9, "u8")[2], 8)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (bytes(5), ValueError, "input: 5 bytes, but 12 u8 elements need 12"),
        (np.zeros(3, np.float32), TypeError, "bytes or unsigned-integer words, not ndarray"),
        (array("f", [1.0]), TypeError, "packed words are unsigned, not array('f')"),
        ([1, 2, 3], TypeError, "bytes or unsigned-integer words, not list"),
    ],
)
def test_bad_packed_data_is_refused_with_its_reason(value, error, message) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        packed.as_words(value, 12, "u8")


def test_unknown_element_types_are_refused() -> None:
    with pytest.raises(TensorIRError, match="packed elements are u4, u8, i8, u16, f16, not 'u3'"):
        T.input("w", (4,), packed="u3")
    with pytest.raises(TensorIRError, match="input w: packed elements"):
        TensorGraph({"w": (4,)}, [], [], packed={"w": "f8"})
    with pytest.raises(ValueError, match="not 'q4'"):
        packed.words("q4", 8)


def mixed_graph(n: int) -> TensorGraph:
    """Every element type read through a view that moves (reversed, strided, offset)."""
    reads = {k: T.input(k, (2 * n + 3,), packed=k) for k in KINDS}
    x = T.input("x", (n,))
    operands = [(reads["u4"][::2][:n], "i"), (reads["u8"][3 : n + 3], "i")]
    operands += [(reads["i8"][::-1][:n], "i"), (reads["u16"][1 : 2 * n + 1 : 2], "i")]
    operands += [(reads["f16"][2 : n + 2], "i"), (x, "i")]

    def body(a, b, c, d, e, xv):
        return (a - 2.0 * b + 3.0 * c) * xv + d * 0.001 + e

    return T.graph(y=T.comprehend("i", operands, body))


def mixed_inputs(n: int) -> tuple[dict, np.ndarray]:
    count = 2 * n + 3
    raws = {k: random_bytes(k, count, seed=k.__hash__() % 97) for k in KINDS}
    v = {k: numpy_elements(k, raws[k], count) for k in KINDS}
    x = np.random.default_rng(5).normal(size=n).astype(np.float32).astype(np.float64)
    a, b, c = v["u4"][::2][:n], v["u8"][3 : n + 3], v["i8"][::-1][:n]
    want = (a - 2.0 * b + 3.0 * c) * x + v["u16"][1 : 2 * n + 1 : 2] * 0.001 + v["f16"][2 : n + 2]
    ins = {k: raws[k] for k in KINDS} | {"x": x}
    ins["u16"] = np.frombuffer(raws["u16"], np.uint32)  # words as words, too
    return ins, want


@pytest.mark.parametrize("backend", ["numpy", "python"])
def test_the_evaluators_read_packed_inputs(backend: str) -> None:
    ins, want = mixed_inputs(21)
    got = T.evaluate(mixed_graph(21), ins, backend=backend)["y"]
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-12, atol=1e-12)


def devices():
    yield "cpu", lambda: gpu.device("cpu", fallback=False)
    yield "c", lambda: open_or_skip("c")
    yield "native", lambda: open_or_skip("native")


@pytest.mark.toolchain
@pytest.mark.parametrize("name", ["cpu", "c", "native"])
def test_every_device_reads_packed_inputs(name: str) -> None:
    dev = dict(devices())[name]()
    ins, want = mixed_inputs(37)
    compiled = T.Compiled(mixed_graph(37), dev)
    got = compiled(ins)["y"]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6 * np.abs(want).max())
    sizes = {a.name: a.size for a in compiled.allocations}
    assert sizes["u4"] == packed.words("u4", 77) == 10  # words, not elements
    # a packed input left out of the next call keeps its words on the device
    again = compiled({"x": np.asarray(ins["x"], np.float32)})["y"]
    np.testing.assert_array_equal(again, got)


def every_half() -> tuple[TensorGraph, bytes, np.ndarray]:
    bits = np.arange(1 << 16, dtype=np.uint16)
    h = T.input("h", (1 << 16,), packed="f16")
    graph = T.graph(y=T.comprehend("i", [(h, "i")], lambda v: v))
    return graph, bits.tobytes(), bits.view(np.float16).astype(np.float32)


@pytest.mark.toolchain
@pytest.mark.parametrize("name", ["c", "native"])
def test_every_half_bit_pattern_converts_exactly(name: str) -> None:
    """Subnormals, infinities and NaN too (C: bit arithmetic; WGSL: unpack2x16float)."""
    dev = dict(devices())[name]()
    graph, raw, want = every_half()
    got = T.Compiled(graph, dev)({"h": raw}, out="numpy")["y"]
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite], want[finite])


def test_kernels_declare_words_and_read_elements() -> None:
    graph = mixed_graph(5)
    c = lower_graph(graph, "c", dtype="f32")
    assert "const uint8_t *restrict u4" in c and "const float *restrict x" in c
    assert "tang_f16(" in c
    wgsl = lower_wgsl(graph)[0].source
    assert "var<storage, read> f16_: array<u32>;" in wgsl and "unpack2x16float(" in wgsl
    assert "var<storage, read> x: array<f32>;" in wgsl


def test_passes_keep_packed_inputs_and_grad_leaves_them_alone() -> None:
    w = T.input("w", (8,), packed="u8")
    x = T.input("x", (8,))
    y = T.comprehend("", [(w, "i"), (x, "i")], lambda a, b: a * b * b)
    graph = T.graph(y=y)
    assert graph.packed == {"w": "u8"}
    g = T.grad(graph)
    assert g.packed == {"w": "u8"} and "d_x" in g.outputs and "d_w" not in g.outputs
    raw = bytes(range(1, 9))
    xv = np.linspace(-1, 1, 8)
    got = T.evaluate(g, {"w": raw, "x": xv, "d_y": 1.0})["d_x"]
    np.testing.assert_allclose(got, 2.0 * np.arange(1, 9) * xv)
    with pytest.raises(TensorIRError, match="'w' is a packed input"):
        T.grad(graph, wrt=["w"])
