"""transformers' f32 SmolLM2 (built from the GGUF file) decoding prompts greedily: the
reference of tests/test_llm_torch.py, run in a process of its own, since torch loading
its lazy modules into a process that holds lavapipe's LLVM crashes it.

    python -m tests.llm_torch_reference MODEL.gguf STEPS PROMPTS.json OUT.npz

OUT.npz holds, for prompt k, ``tokens_k`` (STEPS greedy ids) and ``logits_k`` (STEPS × vocab,
the last position's logits at each step), prompts tokenized by tang's tokenizer
(``ids_k``), so both sides decode the same ids."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np


def decode(model_path: Path, steps: int, prompts: list, out: Path) -> None:
    """Greedy ``steps`` tokens of each prompt, written to ``out``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers

    from tang.io import gguf
    from tang.llm.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_gguf(gguf.read(model_path).metadata)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(model_path.parent), gguf_file=model_path.name, dtype=torch.float32
    ).eval()
    arrays = {}
    for k, prompt in enumerate(prompts):
        ids = tokenizer.encode(prompt) if isinstance(prompt, str) else tokenizer.encode_chat(prompt)
        tokens, rows, past = [], [], None
        step = torch.tensor([ids])
        with torch.no_grad():
            for _ in range(steps):
                result = model(step, past_key_values=past, use_cache=True)
                past = result.past_key_values
                rows.append(result.logits[0, -1].numpy().astype(np.float64))
                tokens.append(int(rows[-1].argmax()))
                step = torch.tensor([[tokens[-1]]])
        arrays[f"ids_{k}"] = np.asarray(ids)
        arrays[f"tokens_{k}"] = np.asarray(tokens)
        arrays[f"logits_{k}"] = np.stack(rows)
    np.savez(out, **arrays)


if __name__ == "__main__":
    model_path, steps, prompts, out = sys.argv[1:]
    decode(Path(model_path), int(steps), json.loads(Path(prompts).read_text()), Path(out))
