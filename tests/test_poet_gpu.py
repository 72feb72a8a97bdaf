"""The Quantum Poet's CPU/GPU switch (demos/poet_device.py) through its worker methods, called
through demos.api as the page's worker calls them, with device "gpu" on wgpu-py over Mesa
lavapipe: the same handler code as in the page (the browser device and wgpu-py share the
tang.gpu Device API, async spellings included). The compiled step's epoch losses equal the
eager path's to 1e-4 (relative; f32 against f64); switching device mid-epoch, in both
directions, continues from the same batch with the same optimizer state; generate, export,
stop and import see the GPU's weights. Without an adapter GPU is refused with the reason and
the session stays on the CPU."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tang.gpu as gpu
from demos import api
from demos import quantum_poet as poet

ROOT = Path(__file__).resolve().parent.parent
LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
REL = 1e-4


def call(method, **params):
    reply = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    if not reply["ok"]:
        raise RuntimeError(f"{reply['error']['type']}: {reply['error']['message']}")
    return reply["result"]


@pytest.fixture(scope="module")
def native(native_device) -> str:
    """The wgpu-py adapter's name (lavapipe here); skips where wgpu-py has none."""
    return gpu.device("native", fallback=False).name  # the shared one the Poet opens too


@pytest.fixture(scope="module")
def eager() -> list[float]:
    """Two epochs of the page's eager path (pure Python): the reference epoch losses."""
    trainer, _ = poet.build_and_train(2, "python")
    return trainer.losses


def train(session: str, until_step: int, chunk: int = 10) -> dict:
    """poet.train calls (at most ``chunk`` steps each) until step ``until_step``."""
    out = call("poet.status", session=session)
    while out["step"] < until_step:
        steps = min(chunk, until_step - out["step"])
        out = call("poet.train", session=session, budget_ms=1000, epochs=2, max_steps=steps)
    return out


def assert_close(got: list[float], want: list[float]) -> None:
    assert len(got) == len(want)
    rel = [abs(a - b) / abs(b) for a, b in zip(got, want)]
    assert max(rel) <= REL, (got, want, rel)


@pytest.mark.toolchain  # wgpu-py on lavapipe
def test_two_epochs_on_the_gpu_give_the_eager_losses(native, eager):
    devices = call("poet.devices")
    assert devices["gpu"] == {"available": True, "name": native, "reason": ""}
    s = call("poet.create", session="g-two", device="gpu")
    assert (s["device"], s["device_name"], s["device_error"]) == ("gpu", native, "")
    out = call("poet.train", session="g-two", budget_ms=1000, epochs=2, max_steps=5)
    assert out["step"] == 5 and out["position"] == 5 and out["device"] == "gpu"
    losses = out["batch_losses"]  # only the chunk's last step is read back from the GPU
    assert losses[:4] == [None] * 4 and 2.5 < losses[4] < 4.0
    out = train("g-two", 2 * out["steps_per_epoch"], chunk=43)
    assert out["done"] and out["epoch"] == 2 and out["position"] == 0
    assert_close(out["losses"], eager)
    assert out["losses"][1] < out["losses"][0] - 0.3  # it learns


@pytest.mark.toolchain  # wgpu-py on lavapipe
def test_switching_mid_epoch_both_ways_continues_exactly(native, eager):
    """CPU for 10 steps, GPU across the epoch boundary to step 60, CPU to the end: the same
    epoch losses as one uninterrupted eager run, and no step lost or repeated."""
    call("poet.create", session="g-switch")
    before = train("g-switch", 10)
    on_gpu = call("poet.device", session="g-switch", device="gpu")
    assert on_gpu["device"] == "gpu" and on_gpu["device_name"] == native
    for key in ("epoch", "position", "step", "losses"):
        assert on_gpu[key] == before[key], key
    mid = train("g-switch", 60)
    assert (mid["epoch"], mid["position"]) == (1, 60 - mid["steps_per_epoch"])
    back = call("poet.device", session="g-switch", device="cpu")
    assert (back["device"], back["epoch"], back["position"], back["step"]) == ("cpu", 1, 17, 60)
    assert back["losses"] == mid["losses"]
    end = train("g-switch", 2 * mid["steps_per_epoch"])
    assert end["done"] and end["device"] == "cpu"
    assert all(isinstance(v, float) for v in end["batch_losses"])  # eager: every step's loss
    assert_close(end["losses"], eager)


@pytest.mark.toolchain  # wgpu-py on lavapipe
def test_generate_export_stop_and_import_see_the_gpu_weights(native):
    """Generation and the exported weights come from the GPU's parameters (synced back);
    those weights imported into a fresh CPU session write the very same text; weights
    imported while on the GPU are what the GPU trains on next."""
    call("poet.create", session="g-sync", device="gpu")
    train("g-sync", 30)
    stopped = call("poet.stop", session="g-sync")
    assert stopped["stopped"] and stopped["step"] == 30 and stopped["device"] == "gpu"
    text = call("poet.generate", session="g-sync", sample_seed=3, length=60)["text"]
    blob = call("poet.export", session="g-sync")["data"]
    call("poet.create", session="g-copy")
    call("poet.import", session="g-copy", data=blob)
    assert call("poet.generate", session="g-copy", sample_seed=3, length=60)["text"] == text

    # weights in while on the GPU: the next chunk trains from them
    fresh = call("poet.create", session="g-fresh")
    fresh_blob = call("poet.export", session="g-fresh")["data"]
    imported = call("poet.import", session="g-sync", data=fresh_blob)
    assert imported["device"] == "gpu" and imported["step"] == 30
    assert call("poet.generate", session="g-sync", sample_seed=3, length=60)["text"] != text
    call("poet.resume", session="g-sync")
    after = call("poet.train", session="g-sync", budget_ms=1000, epochs=2, max_steps=1)
    assert after["step"] == 31 and after["device"] == "gpu"
    assert after["batch_losses"][-1] > 2.5  # the fresh weights' loss, not the trained ones'
    assert fresh["params"] == after["params"] and base64.b64decode(fresh_blob)


@pytest.mark.toolchain  # wgpu-py on lavapipe
def test_bad_device_is_a_clear_error(native):
    call("poet.create", session="g-bad")
    with pytest.raises(RuntimeError, match="device must be one of cpu, gpu, not 'tpu'"):
        call("poet.device", session="g-bad", device="tpu")
    with pytest.raises(RuntimeError, match="device must be one of cpu, gpu, not 'GPU'"):
        call("poet.create", session="g-bad", device="GPU")
    assert call("poet.status", session="g-bad")["device"] == "cpu"


def test_without_an_adapter_gpu_is_refused_with_the_reason_and_training_stays_on_the_cpu():
    """A fresh interpreter in which wgpu-py cannot be imported (as on a machine without it):
    poet.devices says why, and choosing GPU keeps the CPU, which still trains."""
    code = """
import asyncio, json, sys
sys.modules["wgpu"] = None  # wgpu-py absent: no GPU adapter for tang.gpu's native device
from demos import api
def call(m, **p):
    r = json.loads(asyncio.run(api.dispatch_json(m, json.dumps(p))))
    assert r["ok"], r
    return r["result"]
print(json.dumps([call("poet.devices"), call("poet.create", session="s"),
                  call("poet.device", session="s", device="gpu"),
                  call("poet.train", session="s", max_steps=1, epochs=1)]))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    devices, _, chosen, trained = json.loads(run.stdout)
    assert devices["gpu"]["available"] is False
    assert devices["gpu"]["reason"].startswith("no wgpu-py GPU adapter (not installed")
    assert chosen["device"] == "cpu" and "no wgpu-py GPU adapter" in chosen["device_error"]
    assert "training stays on the CPU" in chosen["device_error"]
    assert trained["device"] == "cpu" and trained["step"] == 1
