"""The real SmolLM2-135M-Instruct (Q4_1 GGUF) on tang's compiled devices, token for token
against the independent float64 Llama of tests/llama_reference.py fed by the `gguf`
package's own dequantization (so neither tang's reader nor its graphs check themselves).
The f32 PyTorch comparison (transformers) runs in tests/test_llm_torch.py where installed."""

from __future__ import annotations

import numpy as np
import pytest
from llama_reference import logits as reference_logits

import tang.gpu as gpu
from tang.io import gguf
from tang.llm.engine import REFERENCE, Llama
from tang.llm.generate import Stats, generate
from tang.llm.model import LlamaConfig

pytestmark = pytest.mark.toolchain

# "The capital of France is", spelled with the file's own byte-level vocabulary
PROMPT = ["The", "Ġcapital", "Ġof", "ĠFrance", "Ġis"]


@pytest.fixture(scope="module")
def model_file(smollm2_gguf):
    return gguf.read(smollm2_gguf)


@pytest.fixture(scope="module")
def oracle_weights(smollm2_gguf):
    """Every tensor dequantized by the gguf package (the llama.cpp project's reader)."""
    reader = pytest.importorskip(
        "gguf",
        reason="the gguf package (the oracle's reader) is absent; the graphs are checked "
        "against the same float64 Llama on a random model in tests/test_llm_model.py",
    )
    from gguf.quants import dequantize

    r = reader.GGUFReader(str(smollm2_gguf))
    return {t.name: dequantize(t.data, t.tensor_type).astype(np.float32) for t in r.tensors}


@pytest.fixture(scope="module")
def prompt_ids(model_file):
    vocab = model_file.metadata["tokenizer.ggml.tokens"]
    return [vocab.index(word) for word in PROMPT]


def greedy_with_logits(model: Llama, ids: list[int], n: int) -> tuple[list[int], np.ndarray]:
    """n greedy tokens by hand (prefill, then one step each) and the logits of every step."""
    rows = [np.asarray(model.forward(ids, 0))[-1]]
    tokens = [int(np.argmax(rows[-1]))]
    for k in range(n - 1):
        rows.append(np.asarray(model.forward(tokens[-1:], len(ids) + k))[-1])
        tokens.append(int(np.argmax(rows[-1])))
    return tokens, np.stack(rows)


def check_against_oracle(
    model_file, oracle_weights, prompt_ids, device, n: int, quantized: bool = True
) -> None:
    cfg = LlamaConfig.from_gguf(model_file.metadata)
    model = Llama.from_gguf(model_file, device, capacity=64, quantized=quantized)
    assert bool(model.formats) == quantized
    tokens, got = greedy_with_logits(model, prompt_ids, n)
    want = reference_logits(cfg, oracle_weights, prompt_ids + tokens[:-1])[len(prompt_ids) - 1 :]
    assert tokens == [int(t) for t in np.argmax(want, -1)]
    worst = float(np.abs(got - want).max())
    print(f"{n} greedy tokens match; max |logit difference| {worst:.2e}")
    assert worst < 2e-4 * float(np.abs(want).max())  # f32 over 30 blocks: ~5e-5 here
    model.release()


@pytest.mark.parametrize(("quantized", "n"), [(True, 16), (False, 4)])
def test_greedy_tokens_and_logits_match_the_float64_llama_on_compiled_c(
    model_file, oracle_weights, prompt_ids, quantized: bool, n: int, c_device
) -> None:
    """Weights packed as Q4_1/Q8_0 code words (the default), and all as f32."""
    dev = c_device
    check_against_oracle(model_file, oracle_weights, prompt_ids, dev, n, quantized)


def test_greedy_tokens_match_on_wgpu(model_file, oracle_weights, prompt_ids, open_device) -> None:
    check_against_oracle(model_file, oracle_weights, prompt_ids, open_device("native"), 3)


def test_the_reference_evaluator_runs_the_same_graphs(model_file, oracle_weights, prompt_ids):
    check_against_oracle(model_file, oracle_weights, prompt_ids, REFERENCE, 2)


@pytest.mark.slow
def test_the_pure_python_cpu_device_runs_the_real_model(model_file, oracle_weights, prompt_ids):
    """tang.gpu's CPU device (tang's Python-printed kernels: what runs where there is no
    compiler and no adapter) decodes the real file like the float64 Llama. Over half a minute
    a token in CPython, so two greedy tokens after a one-token prompt here; the 64-token
    comparison with PyTorch on it is benchmarks/llm_parity.py --device cpu."""
    check_against_oracle(model_file, oracle_weights, prompt_ids[:1], gpu.CPUDevice(), 2)


def test_the_model_answers_paris_and_speculation_changes_nothing(model_file, prompt_ids, c_device):
    model = Llama.from_gguf(model_file, "c", capacity=64)
    vocab = model_file.metadata["tokenizer.ggml.tokens"]
    echo = prompt_ids + prompt_ids + prompt_ids[:2]  # repeats: prompt lookup has drafts
    plain = list(generate(model, echo, max_tokens=8))
    stats = Stats()
    fast = list(generate(model, echo, max_tokens=8, speculate=4, stats=stats))
    assert fast == plain
    assert stats.drafted > 0
    first = list(generate(model, prompt_ids, max_tokens=2))
    assert vocab[first[0]] == "ĠParis"
    model.release()


def test_the_device_lookup_gives_the_host_rows_logits_bit_for_bit(model_file, prompt_ids, c_device):
    """SmolLM2's output projection is its embedding table (tied): the device gathers the
    prompt's rows from the Q8_0 bytes it already holds instead of the host writing them."""
    on_device = Llama.from_gguf(model_file, c_device, capacity=64)
    on_host = Llama.from_gguf(model_file, c_device, capacity=64, device_lookup=False)
    assert on_device.embeds_on_device and not on_host.embeds_on_device
    ids = prompt_ids[:7]
    np.testing.assert_array_equal(on_device.forward(ids, 0), on_host.forward(ids, 0))
    np.testing.assert_array_equal(on_device.forward(ids[:1], 7), on_host.forward(ids[:1], 7))
    for model in (on_device, on_host):
        model.release()
