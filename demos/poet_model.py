"""The Quantum Poet's model: the corpus, its 30-symbol vocabulary, the network and its
training recipe (``build_and_train``, the lines the page shows), and seeded sampling.

Twenty short haikus written for this project are the corpus (lowercase, 30 symbols). The model
reads a window of 8 characters, one-hot (8 × 30 = 240 inputs), and predicts the next one:
Linear(240, 64) → Tanh → Linear(64, 64) → Tanh → Linear(64, 30), Adam (lr 0.005), batches of
32. The same lines train in the page's worker (demos/poet_session.py: pure Python in Pyodide)
and on the desktop (demos/quantum_poet.py: pure Python or numpy).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import tang.nn as nn

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
    """Vocabulary indices → characters."""
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
    """``temperature`` as a float within TEMPERATURE_RANGE, else a ValueError saying why."""
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
    """How many numbers the model holds (21,534 for the Poet)."""
    return model.num_parameters()
