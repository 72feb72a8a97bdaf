"""The Quantum Poet: a 21,534-parameter character model of physics haikus, trained by tang.nn.

The command line (train, sample, print)::

    python -m demos.quantum_poet --epochs 30 --backend numpy --seed-text "quantum " --json

The model, corpus and recipe are in demos/poet_model.py (re-exported here: ``EPOCHS``,
``build_and_train``, ``generate``, ...); the page's worker methods ``poet.*`` in
demos/poet_session.py, and where a session trains in demos/poet_device.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import tang.nn as nn
from demos.common import OneLineParser
from demos.poet_model import (
    CORPUS,
    EPOCHS,
    GENERATE_CHARS,
    MAX_GENERATE,
    VOCAB,
    build_and_train,
    check_temperature,
    clean_seed,
    decode,
    encode,
    generate,
    load_weights,
    one_hot_batch,
    parameter_count,
    windows,
)

__all__ = [
    "CORPUS",
    "EPOCHS",
    "GENERATE_CHARS",
    "MAX_GENERATE",
    "VOCAB",
    "build_and_train",
    "check_temperature",
    "clean_seed",
    "decode",
    "encode",
    "generate",
    "load_weights",
    "main",
    "native_device",
    "one_hot_batch",
    "parameter_count",
    "windows",
]


def _parser() -> argparse.ArgumentParser:
    """The command line's options: epochs, backend, device, sampling and the weights files."""
    p = OneLineParser(prog="python -m demos.quantum_poet", description=__doc__.split("\n")[0])
    p.add_argument(
        "--epochs",
        type=int,
        default=EPOCHS,
        help=f"epochs to train (0: only sample; default {EPOCHS}, as the page)",
    )
    p.add_argument("--backend", choices=["python", "numpy"], default="python")
    p.add_argument(
        "--device",
        choices=["cpu", "gpu"],
        default="cpu",
        help="gpu: the whole training step compiled from the tensor IR, run through wgpu-py",
    )
    p.add_argument("--seed-text", default="quantum ", help="up to 8 characters to start from")
    p.add_argument("--temperature", type=float, default=0.8, help="0.3 to 1.5")
    p.add_argument("--sample-seed", type=int, default=7, help="same seed, same text")
    p.add_argument("--length", type=int, default=GENERATE_CHARS, help="characters to write")
    p.add_argument("--save", metavar="FILE", help="write the weights (safetensors)")
    p.add_argument("--load", metavar="FILE", help="start from these weights (safetensors)")
    p.add_argument("--json", action="store_true", help='{"losses", "text", "params"}')
    return p


def native_device() -> Any:
    """The wgpu-py GPU device for ``--device gpu``, or a RuntimeError saying why not."""
    import tang.gpu as gpu

    try:
        return gpu.device("native", fallback=False)
    except gpu.NoDeviceError as exc:
        raise RuntimeError(f"no wgpu-py GPU adapter here ({exc})") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Train, sample, print; exit 2 with one line on bad input."""
    p = _parser()
    args = p.parse_args(argv)
    try:
        if args.epochs < 0:
            raise ValueError(f"--epochs must be ≥ 0, not {args.epochs}")
        check_temperature(args.temperature)
        if not 0 <= args.length <= MAX_GENERATE:
            raise ValueError(f"--length must be between 0 and {MAX_GENERATE}")
        if args.backend not in nn.available_backends():
            raise ValueError(f"backend {args.backend!r} needs numpy, which is not installed")
        seed = clean_seed(args.seed_text)
        trainer, loader = build_and_train(0, args.backend)
        if args.load:
            load_weights(trainer, args.load)
    except ValueError as exc:  # SafetensorsError is one
        p.exit(2, f"{p.prog}: error: {exc}\n")
    for dropped_at, ch in seed.dropped:
        print(f"note: seed text character {ch!r} at {dropped_at} is not in the vocabulary: "
              "dropped", file=sys.stderr)  # fmt: skip
    where = ""
    if args.device == "gpu":  # the whole step compiled from the tensor IR, f32 on the GPU
        try:
            device = native_device()
        except RuntimeError as exc:
            p.exit(2, f"{p.prog}: error: --device gpu: {exc}\n")
        trainer.compile(device)
        where = f"  ({device.name})"
    losses = []
    for step in trainer.epochs(args.epochs).steps(loader):
        if step.epoch_loss is not None:
            losses.append(step.epoch_loss)
            if not args.json:
                print(f"epoch {step.epoch + 1:4d}  loss {step.epoch_loss:.4f}{where}", flush=True)
    trainer.eager()  # the trained weights back in the model (a no-op when eager)
    text = generate(trainer.model, seed.text, args.temperature, args.sample_seed, args.length)
    if args.save:
        try:
            nn.save(args.save, trainer.model, metadata={"model": "quantum-poet"})
        except OSError as exc:
            p.exit(2, f"{p.prog}: error: cannot write {args.save}: {exc.strerror or exc}\n")
    if args.json:
        params = parameter_count(trainer.model)
        print(json.dumps({"losses": losses, "text": seed.text + text, "params": params}))
    else:
        print(seed.text + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
