"""The Quantum Poet's CPU/GPU switch: where a worker session of ``poet.*`` trains.

"cpu" is eager tang.nn (pure Python in the page). "gpu" is the whole training step compiled
from the tensor IR onto the page's WebGPU adapter (wgpu-py on the desktop: the same tang.gpu
Device API) by the session's own ``nn.Trainer`` (``compile_async``), run with the awaitable
spellings; the first switch of a session gives the autotuner ``TUNE_SECONDS`` to pick the
step's schedules there. One trainer keeps the run's epoch, position and losses either way;
``to_eager`` brings the parameters, the Adam moments and the epoch's running loss back, so
generating, exporting, stopping and switching back see the same model and carry on from the
same batch.
"""

from __future__ import annotations

from typing import Any

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
    dev = await gpu_device()
    await session.trainer.compile_async(dev, session.loader, tune=TUNE_SECONDS)
    session.device, session.device_name = "gpu", str(dev.name)


async def to_eager(session: Any) -> None:
    """Back to eager steps: parameters, Adam moments, step count and the epoch's running
    loss read back from the GPU into the model, optimizer and trainer."""
    await session.trainer.eager_async()
    session.device, session.device_name = "cpu", "cpu"
