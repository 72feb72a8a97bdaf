"""The Quantum Poet's CPU/GPU switch: where a worker session of ``poet.*`` trains.

"cpu" is eager tang.nn (pure Python in the page). "gpu" is the whole training step compiled
from the tensor IR by ``nn.compile_training`` onto the page's WebGPU adapter (wgpu-py on the
desktop: the same tang.gpu Device API), run with the awaitable spellings; the first switch
of a session gives the autotuner ``TUNE_SECONDS`` to pick the step's schedules there. The
session's eager ``nn.Trainer`` stays the record of the run: after every GPU chunk its epoch,
position and losses mirror the compiled trainer's, and ``to_eager`` copies the parameters,
the Adam moments and the epoch's running loss back, so generating, exporting, stopping and
switching back see the same model and carry on from the same batch.
"""

from __future__ import annotations

import time
from typing import Any

import tang.nn as nn
from demos.common import device_choice

DEVICES = ("cpu", "gpu")
TUNE_SECONDS = 1.5  # the autotuner's budget at a session's first switch to the GPU


class NoAdapter(RuntimeError):
    """No GPU adapter here: the session keeps training on the CPU."""


def check_device(device: Any) -> str:
    """``device`` if it is "cpu" or "gpu", else a ValueError naming the choices."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    return device


async def gpu_device() -> Any:
    """The page's WebGPU device (wgpu-py's natively), or NoAdapter saying why not."""
    import tang.gpu as gpu

    try:
        return await gpu.device_async(device_choice("gpu"), fallback=False)
    except gpu.NoDeviceError as exc:
        what = "WebGPU" if gpu.in_browser() else "wgpu-py GPU"
        why = "" if exc.why == "no adapter" else f" ({exc.why})"
        raise NoAdapter(f"no {what} adapter{why}: training stays on the CPU") from None


async def probe() -> dict[str, Any]:
    """Whether the GPU option can be chosen: {available, name, reason}."""
    try:
        dev = await gpu_device()
    except NoAdapter as exc:
        return {"available": False, "name": "", "reason": str(exc)}
    return {"available": True, "name": str(dev.name), "reason": ""}


async def to_gpu(session: Any) -> None:
    """Compile the session's training step on the GPU, starting from the eager model,
    optimizer and position (mid-epoch included); NoAdapter leaves the session as it was."""
    t = session.trainer
    dev = await gpu_device()
    compiled = nn.compile_training(t.model, t.optimizer, nn.cross_entropy, dev)
    compiled.load_progress(t.state_dict())
    await compiled.build_async(session.loader.batch(t.epoch, t.position), tune=TUNE_SECONDS)
    session.compiled, session.device, session.device_name = compiled, "gpu", str(dev.name)


async def to_eager(session: Any) -> None:
    """Parameters, Adam moments, step count and the epoch's position and running loss back
    from the GPU into the eager model, optimizer and trainer (the GPU copy stays valid)."""
    compiled = session.compiled
    if compiled is None:
        return
    progress = await compiled.progress_async()
    await compiled.sync_async()
    state = session.trainer.state_dict()
    state.update(progress)
    session.trainer.load_state_dict(state)


async def train_chunk(session: Any, budget_s: float, max_steps: int | None) -> list[float | None]:
    """Steps on the GPU for about ``budget_s`` (at least one, at most ``max_steps``, never
    past the target epoch): one per-step loss slot each, only the last one read back."""
    t, loader = session.trainer, session.loader
    if session.compiled is None:  # dropped by an import of weights: rebuild from the model
        await to_gpu(session)
    compiled = session.compiled
    left = (t.target_epochs - t.epoch) * len(loader) - t.position
    limit = left if max_steps is None else min(left, int(max_steps))
    start, steps = time.perf_counter(), 0
    while steps < limit:
        await compiled.run_async(loader, 1)
        steps += 1
        t.epoch, t.position = len(compiled.losses), compiled.position
        t.losses = list(compiled.losses)
        if time.perf_counter() - start >= budget_s:
            break
    if not steps:
        return []
    last = (await compiled.read_async("loss"))[0]
    return [None] * (steps - 1) + [last]
