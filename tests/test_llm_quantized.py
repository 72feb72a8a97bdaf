"""Quantized weights on the device (tang.llm.quantized): GGUF's Q4_1 and Q8_0 blocks of the
real SmolLM2 file repacked into f32 code words, unpacked by ``floor`` inside the matrix-vector
comprehension; checked against the `gguf` package's own dequantization on every device."""

from __future__ import annotations

import numpy as np
import pytest

import tang.gpu as gpu
from tang import tensor as T
from tang.gpu.native_c import find_compiler
from tang.io import gguf
from tang.llm import quantized
from tests.helpers import open_native_device

NO_ORACLE = (
    "the gguf package (llama.cpp's reader, the oracle) is absent; the packing itself is "
    "checked by test_the_pure_python_packer_equals_the_numpy_one"
)
# (tensor, rows used): a Q4_1 block matrix and the Q8_0 embedding's first rows
CASES = [("blk.0.attn_k.weight", 192), ("blk.3.ffn_down.weight", 64), ("token_embd.weight", 96)]


@pytest.fixture(scope="module")
def model_file(smollm2_gguf):
    return gguf.read(smollm2_gguf)


def rows_of(model_file, name: str, rows: int):
    info = model_file.tensors[name]
    cols = info.shape[1]
    size = quantized.FORMATS[info.type][3] * cols // 32
    return info.type, model_file.data(name)[: rows * size], cols


def oracle(raw, type_name: str, rows: int, cols: int) -> np.ndarray:
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    kind = GGMLQuantizationType[type_name]
    return dequantize(np.frombuffer(raw, np.uint8).reshape(rows, -1), kind).astype(np.float64)


def product_graph(type_name: str, rows: int, cols: int, tokens: int = 2) -> T.TensorGraph:
    x = T.input("x", (tokens, cols))
    parts = {p: T.input(p, s) for p, s in quantized.shapes(type_name, rows, cols).items()}
    return T.graph(y=quantized.linear(x, type_name, parts))


@pytest.mark.parametrize(("name", "rows"), CASES)
def test_packed_products_equal_the_gguf_dequantization_in_the_reference(model_file, name, rows):
    pytest.importorskip("gguf", reason=NO_ORACLE)
    type_name, raw, cols = rows_of(model_file, name, rows)
    packed = quantized.pack(raw, type_name, rows, cols)
    x = np.random.default_rng(0).normal(size=(2, cols))
    got = T.evaluate(product_graph(type_name, rows, cols), {"x": x, **packed})["y"]
    want = x @ oracle(raw, type_name, rows, cols).T
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("name", "rows"), CASES)
def test_the_pure_python_packer_equals_the_numpy_one(model_file, name, rows) -> None:
    type_name, raw, cols = rows_of(model_file, name, rows)
    fast = quantized.pack(raw, type_name, rows, cols)
    slow = quantized._pack_python(bytes(raw), type_name, rows, cols)
    assert fast.keys() == slow.keys()
    for part in fast:
        assert np.array_equal(np.asarray(fast[part]).reshape(-1), np.asarray(slow[part]))
    assert max(np.asarray(slow["codes"])) < 2**24  # whole numbers f32 holds exactly


@pytest.mark.toolchain
@pytest.mark.parametrize("kind", ["c", "native"])
@pytest.mark.parametrize(("name", "rows"), CASES)
def test_packed_products_on_the_devices(model_file, kind: str, name: str, rows: int) -> None:
    pytest.importorskip("gguf", reason=NO_ORACLE)
    if kind == "c" and find_compiler() is None:
        pytest.skip("no C compiler here: the reference evaluator covers the same graph")
    dev = gpu.device("c", fallback=False) if kind == "c" else open_native_device()
    type_name, raw, cols = rows_of(model_file, name, rows)
    packed = quantized.pack(raw, type_name, rows, cols)
    x = np.random.default_rng(1).normal(size=(2, cols)).astype(np.float32)
    got = T.Compiled(product_graph(type_name, rows, cols), dev)({"x": x, **packed})["y"]
    want = x.astype(np.float64) @ oracle(raw, type_name, rows, cols).T
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_what_stays_packed() -> None:
    assert quantized.packable("Q4_1", (1536, 576)) and quantized.packable("Q8_0", (49152, 576))
    assert not quantized.packable("Q4_1", (576, 100))  # rows not in super-blocks of 96
    assert not quantized.packable("F32", (576, 576)) and not quantized.packable("Q4_1", (576,))
    assert quantized.nbytes("Q4_1", 576, 576) / (576 * 576) == pytest.approx(0.9167, abs=1e-3)
