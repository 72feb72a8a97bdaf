"""tang's SmolLM2 against the f32 PyTorch model transformers builds from the same GGUF file:
the greedy tokens of the four prompts (plain and chat) token for token, and the largest
logit difference over those steps, on any tang device, streamed step by step.

    python benchmarks/llm_parity.py [--device cpu] [--prompts 0,1,2,3] [--steps 64]
                                    [--model PATH] [--json OUT]

tests/test_llm_torch.py runs the same comparison on the compiled C device and on wgpu-py in
the test suite. This script is for the device too slow for it: tang.gpu's pure-Python CPU
device (tens of seconds a token in CPython, so hours for 4 × 64 tokens; run the prompts in
separate processes to use every core). Needs torch, transformers, accelerate and gguf (a
benchmark environment); an absent one is named.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness  # benchmarks/harness.py (this script's folder is on sys.path)
import numpy as np
from llm_peers import DEFAULT_PROMPTS, transformers_reference

import tang.gpu as gpu
from tang.io import gguf
from tang.io.models import find_model
from tang.llm.engine import Llama
from tang.llm.tokenizer import Tokenizer


def compare(model: Llama, tokenizer: Tokenizer, want: dict, steps: int, label: str) -> dict:
    """Greedy-decode ``want``'s prompt with ``model``, checking each step's token against
    PyTorch's and printing it as it lands; stops at the first mismatch."""
    prompt = want["prompt"]
    ids = tokenizer.encode(prompt) if isinstance(prompt, str) else tokenizer.encode_chat(prompt)
    if ids != want["prompt_ids"]:
        raise SystemExit(
            f"{label}: tang's tokenizer gives {ids}, transformers' {want['prompt_ids']}"
        )
    worst, got, watch = 0.0, [], harness.Stopwatch()
    position, step = 0, ids
    for k in range(steps):
        row = np.asarray(model.forward(step, position), dtype=np.float64)[-1]
        position += len(step)
        token = int(np.argmax(row))
        got.append(token)
        worst = max(worst, float(np.abs(row - want["logits"][k]).max()))
        same = token == want["tokens"][k]
        print(
            f"{label} step {k + 1}/{steps}: token {token} "
            f"{'matches' if same else 'DIFFERS from ' + str(want['tokens'][k])}; "
            f"max |logit difference| so far {worst:.2e}; "
            f"{watch.elapsed():.0f} s",
            flush=True,
        )
        if not same:
            break
        step = [token]
    matched = sum(a == b for a, b in zip(got, want["tokens"]))
    return {
        "prompt_tokens": len(ids),
        "matched": matched,
        "steps": steps,
        "max_logit_difference": worst,
        "seconds": watch.elapsed(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, c, native or reference")
    parser.add_argument("--prompts", default="0,1,2,3", help="which of the four, by position")
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--model", default=None, help="the GGUF file (default: find_model())")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()
    path = Path(args.model) if args.model else find_model()
    chosen = [int(p) for p in args.prompts.split(",")]
    if not chosen or any(not 0 <= p < len(DEFAULT_PROMPTS) for p in chosen):
        parser.error(f"--prompts: positions in 0..{len(DEFAULT_PROMPTS) - 1}")
    if args.steps < 1:
        parser.error("--steps: at least 1")
    reference = transformers_reference(path, [DEFAULT_PROMPTS[p] for p in chosen], args.steps)
    model_file = gguf.read(path)
    tokenizer = Tokenizer.from_gguf(model_file.metadata)
    device = args.device if args.device == "reference" else gpu.device(args.device, fallback=False)
    capacity = max(len(r["prompt_ids"]) for r in reference) + args.steps
    model = Llama.from_gguf(model_file, device, capacity=capacity)
    results = []
    for p, want in zip(chosen, reference):
        result = compare(model, tokenizer, want, args.steps, f"prompt {p}")
        results.append({"prompt": p, **result})
        print(
            f"prompt {p} ({result['prompt_tokens']} tokens) on {args.device}: "
            f"{result['matched']}/{args.steps} greedy tokens match PyTorch; "
            f"max |logit difference| {result['max_logit_difference']:.2e}; "
            f"{result['seconds'] / args.steps:.1f} s a token",
            flush=True,
        )
    model.release()
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device, "results": results}))
    return 0 if all(r["matched"] == args.steps for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
