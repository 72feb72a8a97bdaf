"""Quantized weights on the device as the file stores them (tang.llm.quantized): GGUF's
Q4_0, Q4_1 and Q8_0 blocks read by the matrix-vector comprehension through packed inputs
(u16 or i8 codes, f16 scales) and dequantized in the sum. Checked on the real SmolLM2 file's
tensors and on random blocks of every format, against tang.io's dequantization (bit-equal to
the `gguf` package's, tests/test_gguf.py) and the `gguf` package itself where installed, on
both evaluators and every device."""

from __future__ import annotations

import numpy as np
import pytest

import tang.gpu as gpu
from tang import tensor as T
from tang.io import gguf
from tang.io.quant import dequantize_numpy
from tang.llm import quantized
from tests.skips import open_or_skip

# (tensor, rows used): Q4_1 block matrices and the Q8_0 embedding's first rows
CASES = [("blk.0.attn_k.weight", 192), ("blk.3.ffn_down.weight", 64), ("token_embd.weight", 96)]


@pytest.fixture(scope="module")
def model_file(smollm2_gguf):
    return gguf.read(smollm2_gguf)


def rows_of(model_file, name: str, rows: int) -> tuple[str, memoryview, int]:
    info = model_file.tensors[name]
    cols = info.shape[1]
    return info.type, model_file.data(name)[: quantized.nbytes(info.type, rows, cols)], cols


def random_blocks(type_name: str, rows: int, cols: int, seed: int = 0) -> bytes:
    """Random blocks of a format: random codes, finite scales of either sign."""
    f = quantized.FORMATS[type_name]
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(rows * cols // 32, f.size), dtype=np.uint8)
    halves = (f.offset // 2) if f.has_min else 1
    scales = rng.normal(scale=0.05, size=(len(blocks), halves)).astype("<f2")
    blocks[:, : 2 * halves] = scales.view(np.uint8).reshape(len(blocks), -1)
    return blocks.tobytes()


def oracle(raw, type_name: str, rows: int, cols: int) -> np.ndarray:
    return dequantize_numpy(raw, type_name, rows * cols).reshape(rows, cols).astype(np.float64)


def product_graph(type_name: str, rows: int, cols: int, tokens: int = 2) -> T.TensorGraph:
    x = T.input("x", (tokens, cols))
    parts = quantized.parts(type_name, rows, cols)
    inputs = {p: T.input(p, s, packed=kind) for p, (s, kind) in parts.items()}
    return T.graph(y=quantized.linear(x, type_name, inputs))


def inputs(raw, x) -> dict:
    return {"x": x, "codes": raw, "scales": raw}  # two views of the same bytes


def check(got, x, raw, type_name, rows, cols, rtol) -> None:
    want = np.asarray(x, np.float64) @ oracle(raw, type_name, rows, cols).T
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize(("name", "rows"), CASES)
def test_products_of_the_real_tensors_in_the_reference(model_file, name, rows) -> None:
    type_name, raw, cols = rows_of(model_file, name, rows)
    x = np.random.default_rng(0).normal(size=(2, cols))
    got = T.evaluate(product_graph(type_name, rows, cols), inputs(raw, x))["y"]
    check(got, x, raw, type_name, rows, cols, 1e-12)


def test_the_oracle_is_the_gguf_package_s_dequantization(model_file) -> None:
    quants = pytest.importorskip(
        "gguf.quants",
        reason="the gguf package is absent; tests/test_gguf.py checks tang.io's "
        "dequantization against block arithmetic written out in the test",
    )
    from gguf import GGMLQuantizationType

    for name, rows in CASES:
        type_name, raw, cols = rows_of(model_file, name, rows)
        blocks = np.frombuffer(raw, np.uint8).reshape(rows, -1)
        theirs = quants.dequantize(blocks, GGMLQuantizationType[type_name])
        np.testing.assert_array_equal(oracle(raw, type_name, rows, cols), theirs)


@pytest.mark.parametrize("type_name", sorted(quantized.FORMATS))
@pytest.mark.parametrize("backend", ["numpy", "python"])
def test_every_format_in_both_evaluators(type_name: str, backend: str) -> None:
    rows, cols = 3, 64
    raw = random_blocks(type_name, rows, cols, seed=len(type_name))
    x = np.random.default_rng(2).normal(size=(2, cols))
    got = T.evaluate(product_graph(type_name, rows, cols), inputs(raw, x), backend=backend)["y"]
    check(np.asarray(got, np.float64), x, raw, type_name, rows, cols, 1e-12)


def open_device(kind: str):
    if kind == "cpu":
        return gpu.device("cpu", fallback=False)
    return open_or_skip(kind)


@pytest.mark.toolchain
@pytest.mark.parametrize("kind", ["c", "native", "cpu"])
@pytest.mark.parametrize("type_name", sorted(quantized.FORMATS))
def test_every_format_on_the_devices(kind: str, type_name: str) -> None:
    rows, cols = 5, 96
    raw = random_blocks(type_name, rows, cols, seed=7)
    x = np.random.default_rng(3).normal(size=(2, cols)).astype(np.float32)
    got = T.Compiled(product_graph(type_name, rows, cols), open_device(kind))(inputs(raw, x))["y"]
    check(got, x, raw, type_name, rows, cols, 1e-5)


@pytest.mark.toolchain
@pytest.mark.parametrize("kind", ["c", "native"])
@pytest.mark.parametrize(("name", "rows"), CASES)
def test_products_of_the_real_tensors_on_the_devices(model_file, kind, name, rows) -> None:
    dev = open_device(kind)
    type_name, raw, cols = rows_of(model_file, name, rows)
    x = np.random.default_rng(1).normal(size=(2, cols)).astype(np.float32)
    compiled = T.Compiled(product_graph(type_name, rows, cols), dev)
    got = compiled(inputs(raw, x))["y"]
    check(got, x, raw, type_name, rows, cols, 1e-4)
    held = {a.name: a.nbytes for a in compiled.allocations if a.role == "input"}
    assert held["codes"] == held["scales"] == quantized.nbytes(type_name, rows, cols)


def lookup_graph(type_name: str, rows: int, cols: int, tokens: int) -> T.TensorGraph:
    ids = T.input("ids", (tokens,))
    parts = quantized.parts(type_name, rows, cols)
    table = quantized.dequantize(
        type_name, {p: T.input(p, s, packed=kind) for p, (s, kind) in parts.items()}
    )
    return T.fuse(T.graph(y=T.take(table, ids).reshape(tokens, cols)))


@pytest.mark.parametrize("type_name", sorted(quantized.FORMATS))
@pytest.mark.parametrize(
    "kind",
    [
        "numpy",
        "python",
        "cpu",
        pytest.param("c", marks=pytest.mark.toolchain),
        pytest.param("native", marks=pytest.mark.toolchain),
    ],
)
def test_rows_looked_up_in_every_format_equal_the_file_s_rows(type_name: str, kind: str) -> None:
    """An embedding lookup reads the stored blocks of the rows it picks (``dequantize`` +
    ``take``, one comprehension once fused) and gives the rows bit for bit; an id that
    names no row gives zeros."""
    rows, cols = 7, 64
    raw = random_blocks(type_name, rows, cols, seed=11)
    ids = np.array([6.0, 0.0, 3.0, 3.0, -1.0])
    graph = lookup_graph(type_name, rows, cols, len(ids))
    assert len(graph.comprehensions) == 1
    values = {"ids": ids, "codes": raw, "scales": raw}
    if kind in ("numpy", "python"):
        got = T.evaluate(graph, values, backend=kind)["y"]
    else:
        got = T.Compiled(graph, open_device(kind))(values)["y"]
    want = np.zeros((len(ids), cols))
    want[:4] = oracle(raw, type_name, rows, cols)[[6, 0, 3, 3]]
    np.testing.assert_array_equal(np.asarray(got, np.float64), want.astype(np.float32))


def test_what_stays_quantized_and_what_it_costs() -> None:
    assert quantized.packable("Q4_1", (1536, 576)) and quantized.packable("Q8_0", (49152, 576))
    assert quantized.packable("Q4_0", (64, 32))
    assert not quantized.packable("Q4_1", (576, 100))  # rows not in blocks of 32
    assert not quantized.packable("F32", (576, 576)) and not quantized.packable("Q4_1", (576,))
    per_weight = {k: quantized.nbytes(k, 576, 576) / 576**2 for k in quantized.FORMATS}
    assert per_weight == {"Q4_0": 0.5625, "Q4_1": 0.625, "Q8_0": 1.0625}  # the file's own
