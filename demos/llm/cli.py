"""Run SmolLM2-135M-Instruct on tang's compiled kernels: text streams to stdout as it decodes.

    python -m demos.llm "The capital of France is" --max-tokens 16
    python -m demos.llm "Write a haiku about rain" --chat --temperature 0.7 --seed 1
    python -m demos.llm "Hello" --chat --json       # one JSON object: text, tokens, tok/s, …
    python -m demos.llm serve --port 8000           # the OpenAI-compatible server (server.py)

Bad input exits with status 2 and one line on stderr, before the weights are loaded where it
can (the prompt's length needs only the tokenizer).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from demos.common import OneLineParser, glue_values
from demos.llm import DEFAULT_MAX_TOKENS, DEVICES, MAX_TEMPERATURE, ModelFileError, TextModel
from tang.gpu import NoDeviceError
from tang.llm.generate import Stats
from tang.llm.sampling import Sampling

PROG = "python -m demos.llm"
NUMBER_OPTIONS = ("--max-tokens", "--temperature", "--top-k", "--top-p", "--seed", "--speculate")


def parser() -> argparse.ArgumentParser:
    """The command line's options (``serve`` has its own, in server.py)."""
    p = OneLineParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument(
        "prompt",
        help="the text to continue (with --chat: the user's message); serve: start the server",
    )
    p.add_argument(
        "--chat", action="store_true", help="wrap the prompt as a user message in the chat template"
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help=f"new tokens at most (default {DEFAULT_MAX_TOKENS}, fewer if the context is full)",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        metavar="T",
        help=f"0 (default: greedy, the same text every run) … {MAX_TEMPERATURE:g}",
    )
    p.add_argument(
        "--top-k",
        type=int,
        default=0,
        metavar="K",
        help="sample from the K likeliest tokens (0: all)",
    )
    p.add_argument(
        "--top-p",
        type=float,
        default=1.0,
        metavar="P",
        help="sample from the nucleus of mass P, in (0, 1]",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="S",
        help="the sampler's seed: same seed, same text",
    )
    p.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        help="auto (default): a hardware GPU, else compiled C, else pure Python",
    )
    p.add_argument(
        "--speculate",
        type=int,
        default=0,
        metavar="K",
        help="draft K tokens per step by prompt lookup (greedy only; the text is unchanged)",
    )
    p.add_argument(
        "--model",
        default=None,
        metavar="PATH",
        help="the GGUF file (default: $TANG_MODEL or .cache/models/, see python build.py model)",
    )
    p.add_argument(
        "--json", action="store_true", help="print one JSON object at the end: text, tokens, …"
    )
    return p


def check_options(args: argparse.Namespace) -> Sampling:
    """The sampling the options ask for; ValueError (one line) for any out of range."""
    if not args.prompt:
        raise ValueError("the prompt is empty")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise ValueError(f"--max-tokens must be ≥ 1, not {args.max_tokens}")
    if not (math.isfinite(args.temperature) and 0 <= args.temperature <= MAX_TEMPERATURE):
        raise ValueError(
            f"--temperature must be from 0 to {MAX_TEMPERATURE:g}, not {args.temperature:g}"
        )
    if not (math.isfinite(args.top_p) and 0 < args.top_p <= 1):
        raise ValueError(f"--top-p must be in (0, 1], not {args.top_p:g}")
    if args.top_k < 0:
        raise ValueError(f"--top-k must be ≥ 0, not {args.top_k}")
    if args.speculate < 0:
        raise ValueError(f"--speculate must be ≥ 0, not {args.speculate}")
    return Sampling(args.temperature, args.top_k, args.top_p, args.seed)


def result(text: str, stats: Stats, device: str, speculate: int) -> dict[str, Any]:
    """The ``--json`` object for one run."""
    out: dict[str, Any] = {
        "text": text,
        "tokens": stats.tokens,
        "prompt_tokens": stats.prompt_tokens,
        "decode_tok_s": round(stats.decode_tok_s, 2),
        "prefill_tok_s": round(stats.prefill_tok_s, 2),
        "device": device,
        "finish_reason": stats.finish_reason,
    }
    if speculate:
        out["acceptance"] = round(stats.acceptance, 3)
    return out


def model_path(given: str | None) -> str | None:
    """``given``, or the model tang finds; in a clone of the repository where it finds none
    (and $TANG_MODEL names none), the default model fetched once as ``build.py model`` does."""
    if given is not None or os.environ.get("TANG_MODEL"):
        return given
    from tang.io import models

    try:
        return str(models.find_model())
    except FileNotFoundError:
        try:
            from buildtools.common import BuildError
            from buildtools.fetch import fetch_model  # only in a clone (the repository root)
        except ImportError:
            return None  # TextModel.open says what is missing and how to get it
    try:
        return str(fetch_model())
    except BuildError as exc:
        raise ModelFileError(f"could not fetch the model: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Generate and print (``serve`` as the first word runs the server); 2 on bad input."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        from demos.llm.server import main as serve

        return serve(argv[1:])
    p = parser()
    args = p.parse_args(glue_values(argv, NUMBER_OPTIONS))
    try:
        sampling = check_options(args)
        tm = TextModel.open(model_path(args.model))
        if args.chat:
            ids = tm.encode_chat([{"role": "user", "content": args.prompt}])
        else:
            ids = tm.encode(args.prompt)
        max_tokens = tm.room(ids, args.max_tokens)
        tm.check(ids, max_tokens, "--max-tokens")
        tm.load(args.device)
    except (ValueError, ModelFileError) as exc:
        p.exit(2, f"{p.prog}: error: {exc}\n")
    except NoDeviceError as exc:  # the device asked for is not here
        p.exit(2, f"{p.prog}: error: --device {args.device}: {exc}\n")
    stats = Stats()
    pieces = []
    try:
        for piece in tm.stream(
            ids, max_tokens=max_tokens, sampling=sampling, speculate=args.speculate, stats=stats
        ):
            pieces.append(piece)
            if not args.json:
                sys.stdout.write(piece)
                sys.stdout.flush()
        text = "".join(pieces)
        if args.json:
            print(json.dumps(result(text, stats, tm.device, args.speculate), ensure_ascii=False))
        elif not text.endswith("\n"):
            print(flush=True)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:  # `| head`: the reader has gone; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        tm.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
