"""The Quantum Poet: a 21,534-parameter character model of physics haikus, trained by tang.nn.

Twenty short haikus written for this project are the corpus (lowercase, 30 symbols). The model
reads a window of 8 characters, one-hot (8 × 30 = 240 inputs), and predicts the next one:
Linear(240, 64) → Tanh → Linear(64, 64) → Tanh → Linear(64, 30), Adam (lr 0.005), batches of
32. The same lines train in the page's worker (pure Python in Pyodide) and on the desktop
(pure Python or numpy)::

    python -m demos.quantum_poet --epochs 30 --backend numpy --seed-text "quantum " --json

Worker methods ``poet.*`` (one model per ``session`` id, kept in the worker between calls):

    poet.create   {session, backend?, device?}        a fresh model: parameter count, step 0
    poet.train    {session, budget_ms?, epochs?}      steps for about budget_ms: epoch, losses
    poet.device   {session, device}   poet.devices {}   train on "cpu" or "gpu"; can the GPU?
    poet.stop     {session}   poet.resume {session}   pause and continue exactly where it was
    poet.status   {session}                           epoch, step, losses, stopped
    poet.generate {session, seed_text, temperature, sample_seed, length?}   seeded sampling
    poet.params   {session}                           how many numbers the model holds
    poet.export   {session}                           weights: safetensors bytes, base64
    poet.import   {session, data}                     weights in; a bad file changes nothing
    poet.source   {}                                  the lines below that build and train it
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import inspect
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import tang.nn as nn
from demos import poet_device
from demos.api import handler
from demos.common import OneLineParser, finite_or_none

# Twenty physics haikus, written for this project.
CORPUS = """\
quantum foam at dawn,
a photon hums through two slits,
both paths, then one.

entropy rises,
the cold cup warms to the room,
time points one way.

the apple falls,
the moon falls the same way too,
newton smiles.

light bends near the sun,
space curves like a heavy quilt,
the stars drift.

spin up or spin down,
the box stays shut, unobserved,
the cat waits.

waves meet on the pond,
crest on crest, they rise as one,
then silence.

zero kelvin calls,
atoms huddle, slow and still,
one cold cloud.

the pendulum swings,
its period never asks
how far it goes.

electrons tunnel
through walls they cannot climb,
ghosts passing by.

the muon arrives,
its clock slowed by the journey,
it lives.

a prism splits light,
red, orange, violet fan out,
white was all.

neutrinos slip past,
through the earth without a bump,
quick, unjudged.

mass is frozen light,
stars burn on this one rule,
light is the sun.

charges pull and push,
field lines weave plus to minus,
lightning writes.

a gyroscope spins,
tilted, it slowly turns,
torque whispers.

black hole horizon,
nothing returns from the edge,
yet it glows.

the vacuum seethes,
pairs blink in and out of sight,
empty is full.

the universe grows,
galaxies drift far apart,
redshift tells.

heat flows from the fire,
the ice melts, the water sings,
entropy wins.

quantum foam at dusk,
one photon, one slit, one spot,
the wave chose.
"""

VOCAB = "abcdefghijklmnopqrstuvwxyz \n,."  # 30 symbols
WINDOW = 8  # characters the model reads
INPUTS = WINDOW * len(VOCAB)  # 240, one-hot
HIDDEN = 64
PAD = " "  # a seed text shorter than the window is padded on the left with spaces
GENERATE_CHARS = 200
MAX_GENERATE = 2000
TEMPERATURE_RANGE = (0.3, 1.5)
# Epochs of one run: what the page's Train runs, the command line's default and the count the
# page's command and the examples list show (loss about 0.045: it recites the corpus)
EPOCHS = 30
INDEX = {c: i for i, c in enumerate(VOCAB)}


def encode(text: str) -> list[int]:
    """Characters → vocabulary indices; a character outside it is an error naming its place."""
    out = []
    for pos, ch in enumerate(text):
        if ch not in INDEX:
            raise ValueError(f"character {ch!r} at position {pos} is not in the vocabulary")
        out.append(INDEX[ch])
    return out


def decode(ids: Sequence[int]) -> str:
    return "".join(VOCAB[i] for i in ids)


def windows(text: str = CORPUS) -> list[tuple[list[int], int]]:
    """Every (8 characters, the next one) pair of ``text``, as indices: the training set."""
    ids = encode(text)
    return [(ids[i : i + WINDOW], ids[i + WINDOW]) for i in range(len(ids) - WINDOW)]


def one_hot_batch(samples: list[tuple[list[int], int]], backend: str = "python") -> tuple:
    """Collate windows into ([n, 240] one-hot inputs, n targets). The one-hot tensor keeps
    its hot columns, so the first layer is a row gather, not a 240-wide product."""
    x = nn.one_hot([w for w, _ in samples], len(VOCAB), backend=backend)
    return x.reshape(len(samples), INPUTS), [t for _, t in samples]


# ── the model: build_and_train is what the page shows (poet.source) ──────────────────────────
def build_and_train(epochs: int, backend: str = "python") -> tuple[nn.Trainer, nn.DataLoader]:
    """The whole recipe: the network, its optimizer, its batches, and ``epochs`` of training
    (0: none yet; the worker trains in chunks with ``trainer.step(loader)`` instead)."""
    # Glorot-uniform weights, zero biases: the range meant for tanh layers (PyTorch's default
    # ±1/√in learns this corpus about 1.5x slower), drawn in turn from one seeded stream
    init = random.Random(1)
    model = nn.Sequential(
        nn.Linear(240, 64, init="glorot", seed=init, backend=backend),
        nn.Tanh(),
        nn.Linear(64, 64, init="glorot", seed=init, backend=backend),
        nn.Tanh(),
        nn.Linear(64, 30, init="glorot", seed=init, backend=backend),
    )
    batches = partial(one_hot_batch, backend=backend)
    loader = nn.DataLoader(windows(CORPUS), batch_size=32, seed=0, collate=batches)
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.005), nn.cross_entropy)
    trainer.epochs(epochs).fit(loader)
    return trainer, loader


# ── end of what the page shows ───────────────────────────────────────────────────────────────


@dataclass
class SeedText:
    """A seed text made fit for the model: ``text`` (exactly 8 vocabulary characters) and the
    characters of the input that were dropped, with their positions."""

    text: str
    dropped: list[tuple[int, str]] = field(default_factory=list)


def clean_seed(raw: str) -> SeedText:
    """Lowercase ``raw``, drop what is not in the vocabulary, keep the last 8 characters and
    pad on the left with spaces."""
    if not isinstance(raw, str):
        raise TypeError(f"seed text must be a string, not {type(raw).__name__}")
    kept, dropped = [], []
    for pos, ch in enumerate(raw):
        low = ch.lower()
        if len(low) == 1 and low in INDEX:
            kept.append(low)
        else:
            dropped.append((pos, ch))
    text = "".join(kept)[-WINDOW:]
    return SeedText(text.rjust(WINDOW, PAD), dropped)


def check_temperature(temperature: Any) -> float:
    lo, hi = TEMPERATURE_RANGE
    try:
        t = float(temperature)
    except (TypeError, ValueError):
        raise ValueError(f"temperature {temperature!r} is not a number") from None
    if not lo <= t <= hi:  # also rejects nan
        raise ValueError(f"temperature must be between {lo} and {hi}, not {temperature}")
    return t


def generate(
    model: nn.Module,
    seed_text: str,
    temperature: float = 0.8,
    sample_seed: int = 7,
    length: int = GENERATE_CHARS,
) -> str:
    """``length`` characters after ``seed_text`` (already clean, 8 characters), each drawn
    from softmax(logits / temperature) with ``random.Random(sample_seed)``: same seed, same
    text."""
    t = check_temperature(temperature)
    if not 0 <= int(length) <= MAX_GENERATE:
        raise ValueError(f"length must be between 0 and {MAX_GENERATE}, not {length}")
    backend = next(model.parameters()).backend
    rng = random.Random(int(sample_seed))
    ids = encode(seed_text)[-WINDOW:]
    out = []
    with nn.no_grad():
        for _ in range(int(length)):
            x = nn.one_hot([ids[-WINDOW:]], len(VOCAB), backend=backend).reshape(1, INPUTS)
            logits = model(x).flat()
            top = max(logits)
            weights = [math.exp((v - top) / t) for v in logits]
            pick = _draw(weights, rng.random() * sum(weights))
            ids.append(pick)
            out.append(VOCAB[pick])
    return "".join(out)


def _draw(weights: list[float], u: float) -> int:
    """The index where the running sum of ``weights`` passes ``u``."""
    acc = 0.0
    for i, w in enumerate(weights):
        acc += w
        if u < acc:
            return i
    return max(i for i, w in enumerate(weights) if w > 0)


def load_weights(trainer: nn.Trainer, blob: bytes | str) -> None:
    """Safetensors weights (bytes or a path) into the trainer's model, checked in full
    first: on any problem the model is untouched and a ValueError says what is wrong."""
    try:
        state = nn.load(blob)  # a SafetensorsError (a ValueError) names what is wrong
    except OSError as exc:
        raise ValueError(f"cannot read the weights file: {exc.strerror or exc}") from None
    trainer.model.load_state_dict(state)


def parameter_count(model: nn.Module) -> int:
    return model.num_parameters()


# ---------------------------------------------------------------------------------------------
# worker methods: one session per page, kept between calls


@dataclass
class Session:
    trainer: nn.Trainer
    loader: nn.DataLoader
    backend: str
    steps: int = 0  # optimizer steps taken
    stopped: bool = False
    device: str = "cpu"  # "gpu": the step compiled on the GPU (demos/poet_device.py)
    compiled: Any = None  # nn.CompiledTrainer while on the GPU
    device_name: str = "cpu"  # the adapter training runs on
    device_error: str = ""  # why the last switch to the GPU did not happen
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one call at a time uses it


_SESSIONS: dict[str, Session] = {}
MAX_SESSIONS = 8
BUDGET_MS = (5.0, 1000.0)


def _new_session(backend: str) -> Session:
    trainer, loader = build_and_train(0, backend)
    trainer.epochs(EPOCHS)  # the status says "0 / 30" before the first step
    return Session(trainer, loader, backend)


def _session(session: str) -> Session:
    if not isinstance(session, str) or not session:
        raise ValueError("session must be a non-empty string")
    found = _SESSIONS.get(session)
    if found is None:
        raise ValueError(f"no model for session {session!r}: call poet.create first")
    return found


def _status(s: Session) -> dict[str, Any]:
    t = s.trainer
    per_epoch = len(s.loader)
    return {
        "epoch": t.epoch,
        "position": t.position,
        "steps_per_epoch": per_epoch,
        "step": s.steps,
        "progress": (t.epoch + t.position / per_epoch) / max(1, t.target_epochs),
        "losses": [finite_or_none(v) for v in t.losses],  # strict JSON: a diverged run
        "target_epochs": t.target_epochs,
        "done": t.done,
        "stopped": s.stopped,
        "backend": s.backend,
        "device": s.device,
        "device_name": s.device_name,
        "device_error": s.device_error,
        "params": parameter_count(t.model),
    }


@handler("poet.create")
async def poet_create(
    session: str = "page", backend: str = "python", device: str = "cpu"
) -> dict[str, Any]:
    """A fresh model (always the same start: seeded) for ``session``, replacing any other,
    training on ``device`` ("cpu", or "gpu" when there is an adapter: see poet.device)."""
    if backend not in nn.available_backends():
        raise ValueError(f"backend {backend!r} is not available here: {nn.available_backends()}")
    poet_device.check_device(device)
    if session not in _SESSIONS and len(_SESSIONS) >= MAX_SESSIONS:
        _SESSIONS.pop(next(iter(_SESSIONS)))
    _SESSIONS[session] = _new_session(backend)
    return await poet_device_switch(session, device)


@handler("poet.devices")
async def poet_devices() -> dict[str, Any]:
    """What the switch offers: {"cpu": true, "gpu": {available, name, reason}}."""
    return {"cpu": True, "gpu": await poet_device.probe()}


@handler("poet.device")
async def poet_device_switch(session: str = "page", device: str = "cpu") -> dict[str, Any]:
    """Train on ``device`` from here on: the state moves over (parameters, Adam moments,
    epoch and batch), so training continues exactly. With no GPU adapter the session stays
    on the CPU and ``device_error`` says why."""
    s = _session(session)
    poet_device.check_device(device)
    async with s.lock:
        s.device_error = ""
        if device == s.device:
            pass
        elif device == "gpu":
            try:
                await poet_device.to_gpu(s)
            except poet_device.NoAdapter as exc:
                s.device_error = str(exc)
        else:
            await poet_device.to_eager(s)
            s.compiled, s.device, s.device_name = None, "cpu", "cpu"
        return _status(s)


@handler("poet.train")
async def poet_train(
    session: str = "page",
    budget_ms: float = 60.0,
    epochs: int = EPOCHS,
    max_steps: int | None = None,
) -> dict[str, Any]:
    """Train for about ``budget_ms`` (at least one step, never past the step that crosses
    it, nor past ``max_steps``) toward ``epochs`` epochs in all; nothing while stopped.
    ``batch_losses``: this chunk's steps (on the GPU only the last is read back, the others
    are null). On the CPU the page asks for one step a call (a step takes 50–100 ms in
    Pyodide), so its Stop always lands within one step; on the GPU for an epoch a call."""
    s = _session(session)
    lo, hi = BUDGET_MS
    budget = min(max(float(budget_ms), lo), hi) / 1e3
    if not 1 <= int(epochs) <= 10_000:
        raise ValueError(f"epochs must be between 1 and 10000, not {epochs}")
    if max_steps is not None and not 1 <= int(max_steps) <= 100_000:
        raise ValueError(f"max_steps must be between 1 and 100000, not {max_steps}")
    s.trainer.epochs(max(int(epochs), s.trainer.epoch))
    start = time.perf_counter()
    async with s.lock:
        if s.stopped or s.trainer.done:
            batch_losses: list[float | None] = []
        elif s.device == "gpu":  # only the chunk's last loss is read back from the GPU
            batch_losses = await poet_device.train_chunk(s, budget, max_steps)
        else:
            batch_losses = _train_eager(s, budget, max_steps)
        s.steps += len(batch_losses)
        out = _status(s)
    out["batch_losses"] = [None if v is None else finite_or_none(v) for v in batch_losses]
    out["chunk_ms"] = (time.perf_counter() - start) * 1e3
    return out


def _train_eager(s: Session, budget: float, max_steps: int | None) -> list[float | None]:
    """Eager steps for about ``budget`` seconds (at least one, at most ``max_steps``)."""
    batch_losses: list[float | None] = []
    start = time.perf_counter()
    while not s.trainer.done:
        batch_losses.append(s.trainer.step(s.loader).loss)
        if time.perf_counter() - start >= budget or len(batch_losses) == max_steps:
            break
    return batch_losses


async def _on_cpu_copy(s: Session) -> None:
    """The eager model and optimizer brought up to date with the GPU's (when training there)."""
    if s.device == "gpu":
        await poet_device.to_eager(s)


@handler("poet.stop")
async def poet_stop(session: str = "page") -> dict[str, Any]:
    """Pause: later ``poet.train`` calls do nothing until ``poet.resume``."""
    s = _session(session)
    async with s.lock:
        s.stopped = True
        await _on_cpu_copy(s)
        return _status(s)


@handler("poet.resume")
def poet_resume(session: str = "page") -> dict[str, Any]:
    """Continue from exactly where training stopped (same batch, same optimizer state)."""
    s = _session(session)
    s.stopped = False
    return _status(s)


@handler("poet.status")
def poet_status(session: str = "page") -> dict[str, Any]:
    return _status(_session(session))


@handler("poet.generate")
async def poet_generate(
    session: str = "page",
    seed_text: str = "quantum ",
    temperature: float = 0.8,
    sample_seed: int = 7,
    length: int = GENERATE_CHARS,
) -> dict[str, Any]:
    """Sampled text after the cleaned seed (see ``clean_seed``); ``dropped`` lists the
    characters of ``seed_text`` that are not in the vocabulary."""
    s = _session(session)
    if not isinstance(sample_seed, int) or isinstance(sample_seed, bool):
        raise ValueError(f"sample seed must be a whole number, not {sample_seed!r}")
    seed = clean_seed(seed_text)
    async with s.lock:
        await _on_cpu_copy(s)
        text = generate(s.trainer.model, seed.text, temperature, sample_seed, length)
    return {
        "seed": seed.text,
        "text": text,
        "dropped": [{"position": p, "char": c} for p, c in seed.dropped],
        "temperature": check_temperature(temperature),
        "sample_seed": sample_seed,
        "epoch": s.trainer.epoch,
    }


@handler("poet.params")
def poet_params(session: str = "page") -> int:
    return parameter_count(_session(session).trainer.model)


@handler("poet.export")
async def poet_export(session: str = "page") -> dict[str, Any]:
    """The weights as a safetensors file (F64, PyTorch keys such as ``0.weight``), base64."""
    s = _session(session)
    async with s.lock:
        await _on_cpu_copy(s)
        blob = nn.save(None, s.trainer.model, metadata={"model": "quantum-poet"})
    return {
        "data": base64.b64encode(blob).decode("ascii"),
        "bytes": len(blob),
        "filename": f"quantum-poet-epoch{s.trainer.epoch}.safetensors",
    }


@handler("poet.import")
async def poet_import(session: str = "page", data: str = "") -> dict[str, Any]:
    """Weights from a safetensors file (base64); checked in full before any is set, so a
    bad file leaves the model as it was. The optimizer's moments carry on as they were."""
    s = _session(session)
    try:
        blob = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise ValueError("the upload is not valid base64") from None
    async with s.lock:
        await _on_cpu_copy(s)  # the Adam moments as they stand
        load_weights(s.trainer, blob)
        s.compiled = None  # on the GPU, the next chunk compiles again from the new weights
        out = _status(s)
    out["bytes"] = len(blob)
    return out


@handler("poet.source")
def poet_source() -> dict[str, Any]:
    """The lines of this module that build and train the model, read from the module."""
    lines, first = inspect.getsourcelines(build_and_train)
    return {"source": "".join(lines), "first_line": first, "file": "demos/quantum_poet.py"}


# ---------------------------------------------------------------------------------------------
# command line


def _parser() -> argparse.ArgumentParser:
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


def train_on_gpu(
    trainer: nn.Trainer, loader: nn.DataLoader, epochs: int, quiet: bool = False
) -> list[float]:
    """``epochs`` of training with the step compiled from the tensor IR and resident on the
    wgpu-py device (f32); the trained weights end up back in ``trainer.model``."""
    import tang.gpu as gpu

    try:
        device = gpu.device("native", fallback=False)
    except gpu.NoDeviceError as exc:
        raise RuntimeError(f"no wgpu-py GPU adapter here ({exc})") from None
    compiled = nn.compile_training(trainer.model, trainer.optimizer, nn.cross_entropy, device)
    for epoch in range(epochs):
        loss = compiled.fit(loader, 1)[-1]
        if not quiet:
            print(f"epoch {epoch + 1:4d}  loss {loss:.4f}  ({device.name})", flush=True)
    compiled.sync()
    return list(compiled.losses)


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
    if args.device == "gpu":
        try:
            losses = train_on_gpu(trainer, loader, args.epochs, quiet=args.json)
        except RuntimeError as exc:  # no wgpu-py adapter
            p.exit(2, f"{p.prog}: error: --device gpu: {exc}\n")
    else:
        trainer.epochs(args.epochs)
        losses = []
        for step in trainer.steps(loader):
            if step.epoch_loss is not None:
                losses.append(step.epoch_loss)
                if not args.json:
                    print(f"epoch {step.epoch + 1:4d}  loss {step.epoch_loss:.4f}", flush=True)
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
