"""Peers for the GGUF language-model work: Hugging Face transformers (f32 PyTorch) and llama.cpp.

    python benchmarks/llm_peers.py --model PATH.gguf [--tokens 64] [--threads 2]
        [--json OUT] [--logits | --npy-dir DIR] [--bandwidth] [--no-llamacpp]

transformers_reference: loads the GGUF through transformers (weights dequantized to f32), then
greedy-decodes exactly n tokens by hand with the KV cache, keeping each step's chosen token and
full f32 logits row; eos is recorded (eos_steps) but does not stop decoding.
llamacpp_speed: the same prompt through llama-cpp-python (greedy = argmax of llama.cpp's logits),
prefill and decode tokens per second, and its tokens, to compare against the reference.

Neither peer is a dependency of tang: torch, transformers and llama_cpp are imported inside the
functions, and a missing one is named in the error. Both need the model file locally only
(HF_HUB_OFFLINE=1 is set before transformers is imported).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
from harness import Stopwatch, fastest

Prompt = str | list[dict]

DEFAULT_PROMPTS: list[Prompt] = [
    "The capital of France is",
    "def fibonacci(n):",
    [{"role": "user", "content": "What is 2+2?"}],
    [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Write a haiku about the sea."},
    ],
]

# About 30 tokens with the SmolLM2 tokenizer: the prompt of the speed table (--bench).
BENCH_PROMPT = (
    "In a quiet village by the sea, an old fisherman told the children a story about "
    "the lighthouse keeper who, every night for forty years, climbed the stairs and"
)

_INSTALL = {
    "torch": "torch",
    "transformers": "transformers (with gguf and accelerate)",
    "gguf": "gguf",
    "llama_cpp": "llama-cpp-python",
}


def _need(module: str) -> Any:
    """Import `module`, or fail with a message naming the package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"benchmarks/llm_peers.py needs the Python package {_INSTALL.get(module, module)!r} "
            f"(import {module!r} failed: {exc}); install it with pip, e.g. "
            f"`pip install {_INSTALL.get(module, module).split()[0]}`"
        ) from exc


def _split(model_path: Path) -> tuple[Path, str]:
    """(folder, gguf file name) from a .gguf path or a folder holding exactly one .gguf file."""
    model_path = Path(model_path)
    if model_path.is_dir():
        found = sorted(model_path.glob("*.gguf"))
        if len(found) != 1:
            raise ValueError(f"{model_path}: expected exactly one .gguf file, found {len(found)}")
        model_path = found[0]
    return model_path.parent, model_path.name


def _gguf_file(model_path: Path) -> Path:
    folder, name = _split(model_path)
    return folder / name


@functools.cache
def load_transformers(model_path: Path) -> tuple[Any, Any]:
    """(model, tokenizer) from the GGUF file, f32, eval mode; cached per path."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch = _need("torch")
    _need("gguf")
    transformers = _need("transformers")
    folder, name = _split(model_path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32
    )
    model.eval()
    return model, tokenizer


def prompt_ids(tokenizer: Any, prompt: Prompt) -> list[int]:
    """Token ids of a plain string (no special tokens added) or of chat messages rendered with
    the tokenizer's chat template and the assistant generation prompt."""
    if isinstance(prompt, str):
        return list(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    text = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def prompt_text(tokenizer: Any, prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)


def transformers_reference(
    model_path: Path,
    prompts: list[Prompt],
    n: int = 64,
    *,
    threads: int | None = None,
    keep_logits: bool = True,
) -> list[dict]:
    """Greedy decoding of exactly n tokens per prompt with transformers' f32 model.

    Each result: prompt, prompt_ids, tokens (n ids), logits (float32 array (n, vocab): row i is
    the distribution token i was chosen from; None unless keep_logits), text (decoded tokens),
    eos_steps (steps whose token is eos; decoding goes on past them), and timing: prefill_s and
    prefill_tok_s (one forward over the prompt), decode_s and decode_tok_s (n-1 single-token
    forwards with the KV cache; the argmax and logits copy included, model load excluded).
    Logits are computed for the last position only (logits_to_keep=1), as generate() does.
    """
    torch = _need("torch")
    if threads:
        torch.set_num_threads(threads)
    model, tokenizer = load_transformers(Path(model_path))
    eos = tokenizer.eos_token_id
    # transformers 5.x renamed past_key_values to cache (argument and output field)
    params = inspect.signature(model.forward).parameters
    cache_kw = "cache" if "cache" in params else "past_key_values"
    keep = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
    results = []
    with torch.inference_mode():
        model(torch.tensor([[1, 2, 3]]), use_cache=True)  # warm-up: first call pays setup costs
        for prompt in prompts:
            ids = prompt_ids(tokenizer, prompt)
            tokens: list[int] = []
            rows: list[np.ndarray] = []
            watch = Stopwatch()
            out = model(torch.tensor([ids]), use_cache=True, **keep)
            row = out.logits[0, -1].float()
            tok = int(torch.argmax(row))
            prefill_s = watch.lap()
            past = getattr(out, cache_kw)
            tokens.append(tok)
            if keep_logits:
                rows.append(row.numpy().copy())
            for _ in range(n - 1):
                out = model(torch.tensor([[tok]]), use_cache=True, **keep, **{cache_kw: past})
                past = getattr(out, cache_kw)
                row = out.logits[0, -1].float()
                tok = int(torch.argmax(row))
                tokens.append(tok)
                if keep_logits:
                    rows.append(row.numpy().copy())
            decode_s = watch.lap()
            results.append(
                {
                    "prompt": prompt,
                    "prompt_text": prompt_text(tokenizer, prompt),
                    "prompt_ids": ids,
                    "tokens": tokens,
                    "logits": np.stack(rows).astype(np.float32) if keep_logits else None,
                    "text": tokenizer.decode(tokens),
                    "eos_id": eos,
                    "eos_steps": [i for i, t in enumerate(tokens) if t == eos],
                    "prefill_s": prefill_s,
                    "prefill_tok_s": len(ids) / prefill_s,
                    "decode_s": decode_s,
                    "decode_tok_s": (n - 1) / decode_s if n > 1 else float("nan"),
                    "threads": torch.get_num_threads(),
                }
            )
    return results


@functools.cache
def _llama(model_file: str, n_ctx: int, threads: int) -> Any:
    llama_cpp = _need("llama_cpp")
    return llama_cpp.Llama(
        model_path=model_file,
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )


def llamacpp_tokenize(model_path: Path, text: str, threads: int = 2, n_ctx: int = 2048) -> list:
    """llama.cpp's own token ids for text (special tokens parsed; BOS only if the GGUF asks)."""
    llm = _llama(str(_gguf_file(model_path)), n_ctx, threads)
    return list(llm.tokenize(text.encode(), add_bos=True, special=True))


def llamacpp_speed(
    model_path: Path,
    prompt: str | list[int],
    n: int = 64,
    threads: int = 2,
    *,
    n_ctx: int = 2048,
    keep_logits: bool = False,
    force: list[int] | None = None,
) -> dict:
    """Greedy decoding of exactly n tokens with llama.cpp (argmax of its logits; eos does not
    stop it). prompt: text (tokenized by llama.cpp, special tokens parsed, BOS only where the
    GGUF asks for it) or token ids. Returns prompt_ids, tokens, prefill/decode seconds and tok/s
    timed here (prefill = one eval of the prompt; decode = n-1 single-token evals, each with its
    argmax), llama.cpp's own perf counters, and logits (n, vocab) float32 when keep_logits.
    force: teacher forcing, feed these n tokens (e.g. the reference's) instead of llama.cpp's own
    choices; tokens is still llama.cpp's argmax at each step, so it compares step by step."""
    llama_cpp = _need("llama_cpp")
    llm = _llama(str(_gguf_file(model_path)), n_ctx, threads)
    if isinstance(prompt, str):
        ids = llamacpp_tokenize(model_path, prompt, threads, n_ctx)
    else:
        ids = [int(t) for t in prompt]
    if len(ids) + n > n_ctx:
        raise ValueError(f"prompt ({len(ids)}) + n ({n}) exceeds n_ctx {n_ctx}")
    vocab = llm.n_vocab()

    def last_row() -> np.ndarray:
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(vocab,))

    # warm-up (thread pool, buffers), then a clean context and perf counters
    llm.reset()
    llm.eval(ids[:4] or [0])
    llm.reset()
    llama_cpp.llama_perf_context_reset(llm.ctx)

    tokens: list[int] = []
    rows: list[np.ndarray] = []
    watch = Stopwatch()
    llm.eval(ids)
    row = last_row()
    tok = int(np.argmax(row))
    prefill_s = watch.lap()
    tokens.append(tok)
    if keep_logits:
        rows.append(row.copy())
    for step in range(n - 1):
        llm.eval([tok if force is None else int(force[step])])
        row = last_row()
        tok = int(np.argmax(row))
        tokens.append(tok)
        if keep_logits:
            rows.append(row.copy())
    decode_s = watch.lap()
    perf = llama_cpp.llama_perf_context(llm.ctx)
    eos = llm.token_eos()
    return {
        "prompt_ids": ids,
        "tokens": tokens,
        "text": llm.detokenize(tokens, special=True).decode("utf-8", "replace"),
        "logits": np.stack(rows).astype(np.float32) if keep_logits else None,
        "eos_steps": [i for i, t in enumerate(tokens) if t == eos],
        "prefill_s": prefill_s,
        "prefill_tok_s": len(ids) / prefill_s,
        "decode_s": decode_s,
        "decode_tok_s": (n - 1) / decode_s if n > 1 else float("nan"),
        "perf": {
            "t_p_eval_ms": perf.t_p_eval_ms,
            "n_p_eval": perf.n_p_eval,
            "t_eval_ms": perf.t_eval_ms,
            "n_eval": perf.n_eval,
            "prefill_tok_s": 1e3 * perf.n_p_eval / perf.t_p_eval_ms if perf.t_p_eval_ms else None,
            "decode_tok_s": 1e3 * perf.n_eval / perf.t_eval_ms if perf.t_eval_ms else None,
        },
        "threads": threads,
        "version": getattr(llama_cpp, "__version__", "?"),
    }


def agreement(a: list[int], b: list[int]) -> dict:
    """How many positions agree, and the first step where two greedy runs part."""
    same = sum(x == y for x, y in zip(a, b))
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    return {"agree": same, "of": min(len(a), len(b)), "first_divergence": first}


def copy_bandwidth(mbytes: int = 256, repeats: int = 5) -> float:
    """Best-of-`repeats` np.copyto of a float32 array of `mbytes` MB, in GB/s counting the
    bytes read plus the bytes written."""
    n = mbytes * 1_000_000 // 4
    src = np.ones(n, dtype=np.float32)
    dst = np.empty_like(src)
    _, best = fastest(lambda: np.copyto(dst, src), repeats)  # the first call pages dst in
    return 2 * src.nbytes / best / 1e9


def _label(prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return "chat: " + prompt[-1]["content"]


def _table(rows: list[dict], n: int, no_llamacpp: bool) -> None:
    print(f"{'prompt':32} {'ids':>4} {'hf pre/s':>9} {'hf dec/s':>9}", end="")
    print(
        "" if no_llamacpp else f" {'lc pre/s':>9} {'lc dec/s':>9} {'agree':>6} {'forced':>6}",
        end="",
    )
    print("  text")
    for r in rows:
        line = f"{_label(r['prompt'])[:32]:32} {len(r['prompt_ids']):4d} "
        line += f"{r['prefill_tok_s']:9.1f} {r['decode_tok_s']:9.1f}"
        if "llamacpp" in r:
            lc, ag = r["llamacpp"], r["agreement"]
            line += f" {lc['prefill_tok_s']:9.1f} {lc['decode_tok_s']:9.1f}"
            line += f" {ag['agree']:3d}/{ag['of']:<2d} {r['teacher_forced']['agree']:3d}/{n:<2d}"
        print(line + "  " + repr(r["text"][:60]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help=".gguf file or a folder with one")
    ap.add_argument("--tokens", type=int, default=64, help="new tokens per prompt (default 64)")
    ap.add_argument("--threads", type=int, default=2, help="threads for both peers (default 2)")
    ap.add_argument("--json", type=Path, help="write all results to this JSON file")
    ap.add_argument("--logits", action="store_true", help="put per-step logits in the JSON")
    ap.add_argument(
        "--npy-dir",
        type=Path,
        help="save transformers' logits as DIR/ref_logits_{i}.npy (float32, (tokens, vocab)) "
        "and name the file in the JSON",
    )
    ap.add_argument("--no-llamacpp", action="store_true", help="transformers only")
    ap.add_argument(
        "--bench",
        action="store_true",
        help=f"also time both peers on a ~30-token prompt ({BENCH_PROMPT[:30]!r}...)",
    )
    ap.add_argument("--bench-only", action="store_true", help="--bench without the prompts")
    ap.add_argument("--repeat", type=int, default=3, help="--bench runs, best kept (3)")
    ap.add_argument("--bandwidth", action="store_true", help="also measure np.copyto bandwidth")
    args = ap.parse_args(argv)
    n = args.tokens

    if args.bench_only:
        args.bench = True
    prompts = [] if args.bench_only else list(DEFAULT_PROMPTS)
    ref = transformers_reference(args.model, prompts, n, threads=args.threads)
    rows = []
    for i, r in enumerate(ref):
        if not args.no_llamacpp:
            lc = llamacpp_speed(args.model, r["prompt_ids"], n, args.threads)
            lc_own = llamacpp_tokenize(args.model, r["prompt_text"], args.threads)
            r["llamacpp"] = {k: v for k, v in lc.items() if k != "logits"}
            r["llamacpp"]["same_prompt_ids_from_text"] = lc_own == r["prompt_ids"]
            r["agreement"] = agreement(r["tokens"], lc["tokens"])
            tf = llamacpp_speed(
                args.model, r["prompt_ids"], n, args.threads, keep_logits=True, force=r["tokens"]
            )
            diff = np.abs(tf["logits"] - r["logits"])
            r["teacher_forced"] = agreement(r["tokens"], tf["tokens"]) | {
                "tokens": tf["tokens"],
                "max_abs_logit_diff": float(diff.max()),
                "mean_abs_logit_diff": float(diff.mean()),
            }
        if args.npy_dir:
            args.npy_dir.mkdir(parents=True, exist_ok=True)
            f = args.npy_dir / f"ref_logits_{i}.npy"
            np.save(f, r["logits"])
            r["logits_file"] = str(f)
        rows.append(r)

    if rows:
        _table(rows, n, args.no_llamacpp)

    extra: dict[str, Any] = {}
    if args.bench:
        load0 = os.getloadavg()[0]
        runs_hf, runs_lc = [], []
        for _ in range(args.repeat):
            hf = transformers_reference(
                args.model, [BENCH_PROMPT], n, threads=args.threads, keep_logits=False
            )[0]
            hf.pop("logits")
            runs_hf.append(hf)
            if not args.no_llamacpp:
                lc = llamacpp_speed(args.model, hf["prompt_ids"], n, args.threads)
                lc.pop("logits")
                runs_lc.append(lc)
        bench: dict[str, Any] = {
            "prompt": BENCH_PROMPT,
            "prompt_tokens": len(runs_hf[0]["prompt_ids"]),
            "new_tokens": n,
            "threads": args.threads,
            "repeat": args.repeat,
            "loadavg_1min_before": load0,
            "loadavg_1min_after": os.getloadavg()[0],
        }
        msg = f"bench ({bench['prompt_tokens']}-token prompt, {n} new tokens, "
        msg += f"{args.threads} threads, best of {args.repeat}, load {load0:.2f})"
        for name, runs in (("transformers", runs_hf), ("llama.cpp", runs_lc)):
            if runs:
                pre = max(r["prefill_tok_s"] for r in runs)
                dec = max(r["decode_tok_s"] for r in runs)
                bench[name] = {"prefill_tok_s": pre, "decode_tok_s": dec, "runs": runs}
                msg += f"\n  {name:12} prefill {pre:8.1f} tok/s   decode {dec:8.1f} tok/s"
        extra["bench"] = bench
        print(msg)
    if args.bandwidth:
        extra["copy_bandwidth_gb_s"] = copy_bandwidth()
        print(f"np.copyto 256 MB float32, best of 5: {extra['copy_bandwidth_gb_s']:.2f} GB/s (r+w)")

    if args.json:
        out = []
        for r in rows:
            r = dict(r)
            logits = r.pop("logits")
            if args.logits and logits is not None:
                r["logits"] = logits.tolist()
            out.append(r)
        versions = {}
        for mod in ("torch", "transformers", "llama_cpp", "numpy"):
            m = sys.modules.get(mod)
            if m is not None:
                versions[mod] = getattr(m, "__version__", "?")
        doc = {"model": str(args.model), "tokens": n, "versions": versions, "results": out}
        args.json.write_text(json.dumps(doc | extra, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
