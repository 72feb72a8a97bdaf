"""The Quantum Poet's worker methods ``poet.*``: one model per ``session`` id, kept in the
worker between calls (demos/poet.py imports this module when the page first calls one).

    poet.create   {session, backend?, device?}        a fresh model: parameter count, step 0
    poet.train    {session, budget_ms?, epochs?}      steps for about budget_ms: epoch, losses
    poet.device   {session, device}   poet.devices {}   train on "cpu" or "gpu"; can the GPU?
    poet.stop     {session}   poet.resume {session}   pause and continue exactly where it was
    poet.status   {session}                           epoch, step, losses, stopped
    poet.generate {session, seed_text, temperature, sample_seed, length?}   seeded sampling
    poet.params   {session}                           how many numbers the model holds
    poet.export   {session}                           weights: safetensors bytes, base64
    poet.import   {session, data}                     weights in; a bad file changes nothing
    poet.source   {}                                  the lines that build and train it

The model and its recipe are demos/poet_model.py's; where a session trains (CPU or GPU) is
demos/poet_device.py's.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import inspect
import time
from dataclasses import dataclass, field
from typing import Any

import tang.nn as nn
from demos import poet_device
from demos.api import handler
from demos.common import finite_or_none
from demos.poet_model import (
    EPOCHS,
    GENERATE_CHARS,
    build_and_train,
    check_temperature,
    clean_seed,
    generate,
    load_weights,
    parameter_count,
)


@dataclass
class Session:
    """One page's model: its trainer and batches, how far it trained and where it trains."""

    trainer: nn.Trainer
    loader: nn.DataLoader
    backend: str
    steps: int = 0  # optimizer steps taken
    stopped: bool = False
    device: str = "cpu"  # "gpu": the trainer's step compiled on the GPU (demos/poet_device.py)
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
        batch_losses: list[float | None] = []
        if not (s.stopped or s.trainer.done):
            steps = await s.trainer.run_async(s.loader, max_steps or 100_000, seconds=budget)
            batch_losses = [step.loss for step in steps]
        s.steps += len(batch_losses)
        out = _status(s)
    out["batch_losses"] = [None if v is None else finite_or_none(v) for v in batch_losses]
    out["chunk_ms"] = (time.perf_counter() - start) * 1e3
    return out


async def _on_cpu_copy(s: Session) -> None:
    """The eager model and optimizer brought up to date with the GPU's (when training there)."""
    await s.trainer.sync_async()


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
        s.trainer.reload()  # on the GPU, the next chunk compiles again from the new weights
        out = _status(s)
    out["bytes"] = len(blob)
    return out


@handler("poet.source")
def poet_source() -> dict[str, Any]:
    """The lines that build and train the model, read from their module (the page shows
    them with the file and line numbers)."""
    lines, first = inspect.getsourcelines(build_and_train)
    path = build_and_train.__module__.replace(".", "/") + ".py"
    return {"source": "".join(lines), "first_line": first, "file": path}
