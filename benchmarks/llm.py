"""SmolLM2-135M-Instruct decoded by tang's kernels, each figure beside its peer measured in
the same run: decode and prefill tokens per second on tang's devices next to llama.cpp
(llama-cpp-python, on the same GGUF file) and the transformers f32 reference; the fraction
of the speed of light (weight bytes read per decode token against the device's copy
bandwidth, measured by a copy kernel in this run); kernels per decode step; speculative
(prompt-lookup) acceptance and speed-up.

    python benchmarks/llm.py [--model PATH] [--device c,native] [--tokens 64] [--no-peers]
                             [--page [lavapipe,swiftshader]] [--lookup] [--turns 3]

--turns R (default 3) decodes with tang on the first device and llama.cpp taking turns, R
rounds, and prints the ratio round by round: the figure to trust on a shared machine, where
a single run of each moves by tens of percent.

--lookup adds, per device, decode speed with the tokens looked up on the device (the tied
table, a gather in the tensor IR) next to the host writing each step's rows, in turns.

--page adds the page's LLM card in headless Chromium (benchmarks/llm_page.py) on each named
WebGPU adapter: its decode speed, the fraction of the speed of light it reads on its own
adapter, and the ratio page ÷ wgpu-py on the same lavapipe (the native device runs too).

The peers are optional (a benchmark environment: pip install llama-cpp-python transformers
torch accelerate gguf); an absent one is named, not guessed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import roofline
from harness import once

import tang.gpu as gpu
from tang.io import gguf
from tang.io.models import find_model
from tang.llm.engine import Llama
from tang.llm.generate import Stats, generate
from tang.llm.tokenizer import Tokenizer

PROMPT = [
    {
        "role": "user",
        "content": "Explain in a few sentences why the sky is blue, for a curious child.",
    }
]
# a prompt whose answer repeats its own text: what prompt lookup can draft from
ECHO = [
    {
        "role": "user",
        "content": "Copy this list exactly, one item per line: apples, pears, plums, cherries, "
        "grapes, lemons, limes, oranges, peaches, apricots, figs, dates, melons, kiwis.",
    }
]


def run(model: Llama, ids: list[int], n: int, speculate: int = 0) -> tuple[list[int], Stats]:
    stats = Stats()
    tokens = list(generate(model, ids, max_tokens=n, stats=stats, speculate=speculate))
    return tokens, stats


def tang_figures(path: Path, kind: str, ids: list[int], echo: list[int], n: int) -> dict:
    """Decode/prefill speed, speed of light and speculation on one tang device."""
    dev = gpu.device(kind, fallback=False)
    peak = roofline.measure(dev)
    model = Llama.from_gguf(path, dev)
    # compile every graph the timed runs use (a span per power of two the positions
    # reach), page the weights in
    run(model, ids, n)
    run(model, echo, n)
    _, stats = run(model, ids, n)
    weight_bytes = model.weight_bytes
    light = peak.copy_gbs * 1e9 / weight_bytes  # tokens/s if every weight byte streamed once
    plain, plain_stats = run(model, echo, n)
    fast, fast_stats = run(model, echo, n, speculate=4)
    block, head, *lookup = model.compiled(1)
    out = {
        "device": f"{kind} ({dev.name})",
        "copy_gbs": peak.copy_gbs,
        "prefill_tok_s": stats.prefill_tok_s,
        "decode_tok_s": stats.decode_tok_s,
        "weight_mb": weight_bytes / 1e6,
        "weights": "packed " + "/".join(sorted(set(model.formats.values())))
        if model.formats
        else "f32",
        "light_tok_s": light,
        "dispatches": model.kernels_per_step(1),
        "comprehensions": model.cfg.layers * len(block.graph.comprehensions)
        + sum(len(c.graph.comprehensions) for c in (head, *lookup)),
        "acceptance": fast_stats.acceptance,
        "speculative_speedup": fast_stats.decode_tok_s / plain_stats.decode_tok_s,
        "speculative_same": fast == plain,
    }
    model.release()
    return out


def lookup_figures(path: Path, kind: str, ids: list[int], n: int, repeat: int = 3) -> dict:
    """Decode tok/s (the best of ``repeat`` runs of ``n`` tokens, the two taking turns
    after a first compiling run each) with the tokens looked up on the device and with the
    host writing their rows; and whether both decode the same tokens."""
    dev = gpu.device(kind, fallback=False)
    models = {
        "device": Llama.from_gguf(path, dev),
        "host": Llama.from_gguf(path, dev, device_lookup=False),
    }
    best: dict[str, float] = {}
    tokens: dict[str, list[int]] = {}
    for round_ in range(repeat + 1):
        for name, model in models.items():
            tokens[name], stats = run(model, ids, n)
            if round_:
                best[name] = max(best.get(name, 0.0), stats.decode_tok_s)
    for model in models.values():
        model.release()
    return {**best, "same": tokens["device"] == tokens["host"]}


def peer_figures(path: Path, ids: list[int], n: int) -> dict[str, dict | str]:
    """llama.cpp's (2 threads, as many as this machine has cores) and transformers' speeds
    on the same file and prompt ids, or why each is absent."""
    import llm_peers

    out: dict[str, dict | str] = {}
    try:
        out["llama.cpp"] = llm_peers.llamacpp_speed(path, ids, n, threads=os.cpu_count() or 2)
    except ImportError as exc:
        out["llama.cpp"] = f"absent ({exc})"
    try:
        out["transformers"] = llm_peers.transformers_reference(
            path, [PROMPT], n, keep_logits=False
        )[0]
    except ImportError as exc:
        out["transformers"] = f"absent ({exc})"
    return out


def decode_turns(path: Path, kind: str, ids: list[int], n: int, rounds: int) -> dict | str:
    """Decode tok/s of tang on ``kind`` and of llama.cpp, ``n`` tokens per run, the two
    taking turns for ``rounds`` rounds after a warm-up each, so a busy machine slows both
    alike: each one's runs, or why llama.cpp is absent."""
    import llm_peers

    threads = os.cpu_count() or 2
    try:
        llm_peers.llamacpp_speed(path, ids, 2, threads=threads)
    except ImportError as exc:
        return f"absent ({exc})"
    model = Llama.from_gguf(path, gpu.device(kind, fallback=False))
    run(model, ids, n)  # compiles every span the rounds use
    out: dict[str, list[float]] = {"tang": [], "llama.cpp": []}
    for _ in range(rounds):
        out["tang"].append(run(model, ids, n)[1].decode_tok_s)
        out["llama.cpp"].append(llm_peers.llamacpp_speed(path, ids, n, threads)["decode_tok_s"])
    model.release()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="the GGUF file (default: find_model())")
    parser.add_argument("--device", default="c,native", help="tang devices, comma-separated")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--no-peers", action="store_true", help="tang only")
    parser.add_argument(
        "--turns",
        type=int,
        default=3,
        help="rounds of decoding with tang (the first device) and llama.cpp taking turns",
    )
    parser.add_argument(
        "--lookup", action="store_true", help="also device token lookup against host rows"
    )
    parser.add_argument(
        "--page",
        nargs="?",
        const="lavapipe",
        default=None,
        help="also the page's card on these adapters (default lavapipe)",
    )
    args = parser.parse_args()
    if args.page and "native" not in args.device.split(","):
        args.device += ",native"  # page ÷ wgpu-py needs the desktop on the same adapter
    os.environ.setdefault("VK_ICD_FILENAMES", roofline.LAVAPIPE)
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    path = find_model(args.model)
    tok = Tokenizer.from_gguf(gguf.read(path).metadata)
    ids, echo = tok.encode_chat(PROMPT), tok.encode_chat(ECHO)
    print(f"model {path.name}; prompt {len(ids)} tokens; {args.tokens} new tokens, greedy")
    rows = []
    desktop: dict[str, dict] = {}
    for kind in args.device.split(","):
        seconds, f = once(lambda kind=kind: tang_figures(path, kind, ids, echo, args.tokens))
        rows.append((f"tang {kind}", f["prefill_tok_s"], f["decode_tok_s"]))
        desktop[kind] = f
        print(f"\ntang on {f['device']} ({seconds:.0f} s):")
        print(
            f"  copy bandwidth {f['copy_gbs']:.1f} GB/s; weights read per decode token "
            f"{f['weight_mb']:.0f} MB ({f['weights']}) -> speed of light "
            f"{f['light_tok_s']:.1f} tok/s; "
            f"decode at {100 * f['decode_tok_s'] / f['light_tok_s']:.0f}% of it"
        )
        print(
            f"  kernels per decode step: {f['dispatches']} dispatches, lowered from "
            f"{f['comprehensions']} comprehensions (all by the tensor IR)"
        )
        print(
            f"  speculative (prompt lookup, 4 drafts): acceptance {100 * f['acceptance']:.0f}%, "
            f"decode speed-up {f['speculative_speedup']:.2f}x, "
            f"output identical: {f['speculative_same']}"
        )
        if args.lookup:
            look = lookup_figures(path, kind, ids, args.tokens)
            print(
                f"  token lookup: on the device {look['device']:.1f} tok/s, rows written by "
                f"the host {look['host']:.1f} tok/s "
                f"(device/host {look['device'] / look['host']:.2f}); same tokens: {look['same']}"
            )
    if args.page:
        from llm_page import page_figures

        for name, f in page_figures(
            args.page.split(","), PROMPT[0]["content"], args.tokens
        ).items():
            if isinstance(f, str):
                print(f"\nthe page on {name}: {f}")
                continue
            print(f"\nthe page's card on {name} ({f['adapter']}), {f['tokens']} tokens:")
            print(
                f"  copy bandwidth {f['copy_gbs']:.1f} GB/s (its own probe, at load) -> speed "
                f"of light {f['light_tok_s']:.1f} tok/s; decode at "
                f"{100 * f['decode_tok_s'] / f['light_tok_s']:.1f}% of it; {f['kernels']}"
            )
            if name == "lavapipe" and "native" in desktop:
                native = desktop["native"]["decode_tok_s"]
                print(f"  page ÷ wgpu-py on the same lavapipe: {f['decode_tok_s'] / native:.2f}")
            rows.append((f"page {name}", f["prompt_tok_s"], f["decode_tok_s"]))
    if not args.no_peers:
        for name, figures in peer_figures(path, ids, args.tokens).items():
            if isinstance(figures, str):
                print(f"\n{name}: {figures}")
                continue
            rows.append((name, figures["prefill_tok_s"], figures["decode_tok_s"]))
    if not args.no_peers and args.turns > 0:
        kind = args.device.split(",")[0]
        turns = decode_turns(path, kind, ids, args.tokens, args.turns)
        print(f"\ndecode in turns, tang {kind} and llama.cpp ({args.turns} rounds):")
        if isinstance(turns, str):
            print(f"  llama.cpp: {turns}")
        else:
            for name, speeds in turns.items():
                each = ", ".join(f"{v:.1f}" for v in speeds)
                print(f"  {name:<10} tok/s: {each}; median {statistics.median(speeds):.1f}")
            ratios = [t / p for t, p in zip(turns["tang"], turns["llama.cpp"], strict=True)]
            print(
                f"  tang / llama.cpp, round by round: {', '.join(f'{r:.2f}' for r in ratios)}; "
                f"median {statistics.median(ratios):.2f} (target ≥ 0.5)"
            )
    print(f"\n{'':<16}{'prefill tok/s':>14}{'decode tok/s':>14}")
    best = max((r for r in rows if r[0].startswith("tang")), key=lambda r: r[2])
    for name, prefill, decode in rows:
        ratio = "" if name == best[0] else f"   tang best = {best[2] / decode:.2f}x this"
        print(f"{name:<16}{prefill:>14.1f}{decode:>14.1f}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
