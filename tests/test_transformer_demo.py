"""The transformer card's worker methods (demos/transformer.py), through the real dispatcher,
on the CPU device and on wgpu-py (Mesa lavapipe): the timing ratio, the bytes each graph
writes (consistent with the runtime's allocations: O(n·d) derived, O(n²) naive), the CPU
check against a pure-Python float64 reference, and 0 lines of op-specific code in the passes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import statistics

import numpy as np
import pytest

import tang.gpu as gpu
from demos import api
from demos import transformer as tx
from tang.tensor.kernels import wgsl_kernel
from tang.tensor.op_names import op_specific_lines


def call(method: str, **params):
    envelope = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    if not envelope["ok"]:
        raise RuntimeError(f"{envelope['error']['type']}: {envelope['error']['message']}")
    return envelope["result"]


def run_card(**params) -> tuple[dict, list[dict]]:
    """transformer.start, then transformer.step until done (as the page does)."""
    first = call("transformer.start", **params)
    chunks = []
    while True:
        out = call("transformer.step")
        chunks.append(out)
        if out["done"]:
            return first, chunks


def check_figures(out: dict) -> None:
    n, d = out["n"], out["d"]
    for label in ("naive", "derived"):
        f = out[label]
        buffers = [a for a in f["allocations"] if a["role"] == "buffer"]
        assert f["bytes_written"] == 4 * sum(a["size"] for a in buffers)
        assert f["ms"] == pytest.approx(statistics.median(f["ms_each"]))
        assert all(t > 0 for t in f["ms_each"])
    derived, naive = out["derived"], out["naive"]
    # the derived graph writes only its output, and creates no n×n buffer
    assert [a["name"] for a in derived["allocations"]] == ["q", "k", "v", "o"]
    assert derived["bytes_written"] == 4 * n * d
    assert max(a["size"] for a in derived["allocations"]) < n * n
    assert derived["kernels"] == 1
    # the naive one writes the score matrix (and its exp, its weights…): O(n²)
    assert naive["largest_buffer"]["size"] == n * n
    assert naive["bytes_written"] > 4 * 4 * n * n
    assert out["derived_bytes_per_nd"] == pytest.approx(1.0)
    assert out["naive_bytes_per_n2"] == pytest.approx(naive["bytes_written"] / (4 * n * n))
    assert out["bytes_ratio"] == pytest.approx(naive["bytes_written"] / derived["bytes_written"])
    assert out["ratio"] == pytest.approx(naive["ms"] / derived["ms"])
    assert out["op_specific_lines"] == 0 and out["lines"] == []
    assert {"fuse.py", "grad.py", "online.py"} <= set(out["pass_files"])
    ck = out["check"]
    assert ck["passed"], ck
    assert ck["tolerance"] == tx.TOLERANCE
    assert ck["rows"][0] == 0 and ck["rows"][-1] == n - 1
    bound = tx.TOLERANCE * ck["scale"]
    assert max(ck["derived_error"], ck["naive_error"], ck["derived_vs_naive"]) <= bound


@pytest.fixture(autouse=True)
def clean():
    yield
    call("transformer.stop")


def test_the_card_on_the_cpu_device_states_its_size_and_checks_out() -> None:
    first, chunks = run_card(device="cpu", repeat=2, rows=8)
    assert first["on_gpu"] is False and first["device"]["kind"] == "cpu"
    assert (first["n"], first["d"]) == tx.CPU_SIZE
    assert "ran on the CPU" in first["notes"][0] and "n = 128, d = 16" in first["notes"][0]
    # progress rises chunk by chunk to 1 (warm-ups, 2 × 2 timed calls, 2 check chunks)
    fractions = [c["fraction"] for c in chunks]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert len(chunks) == first["chunks"] + 1
    out = chunks[-1]
    assert len(out["naive"]["ms_each"]) == 2
    check_figures(out)


def test_a_cpu_fallback_says_which_adapter_was_missing() -> None:
    dev = gpu.CPUDevice()
    dev.skipped = [("WebGPU", "no adapter")]
    assert tx._cpu_note(dev, None) == "no WebGPU adapter: ran on the CPU"
    dev.skipped = [("wgpu-py", "no Vulkan driver")]
    assert tx._cpu_note(dev, None) == "no wgpu-py device (no Vulkan driver): ran on the CPU"
    assert tx._cpu_note(dev, "cpu") == "ran on the CPU, as asked"


@pytest.fixture(scope="module")
def native(native_device):
    return gpu.device("native", fallback=False)  # the shared one the card opens too


@pytest.mark.toolchain
def test_the_card_on_wgpu_runs_n_1024_d_64(native) -> None:
    first, chunks = run_card(device="gpu", repeat=2, rows=8)
    assert first["on_gpu"] is True and first["device"]["kind"] == "native"
    assert (first["n"], first["d"]) == (1024, 64) and first["notes"] == []
    out = chunks[-1]
    check_figures(out)  # one kernel writing n·d against eight writing n²: which is faster
    # depends on the machine (8 query rows give the one kernel little to run in parallel on
    # a many-threaded lavapipe), so the time ratio is benchmarks/tensor.py's figure, not a test


def test_the_wgsl_reads_inf_at_run_time_with_the_same_bits() -> None:
    # Chromium rejects a constant bit cast to inf; tang's WGSL reads the bits from a private
    # variable (tang.lower.wgsl.SPECIAL_VALUES), in the scalar printer and the tensor kernels
    naive, _ = tx.attention_graphs(32, 8)
    shapes = {**naive.inputs, **naive.buffers()}
    sources = [wgsl_kernel(c, shapes, None).source for c in naive.comprehensions]
    masked = [src for src in sources if "bitcast<f32>(tang_inf_bits)" in src]
    assert masked, "the causal mask's -inf is read at run time"
    for src in sources:
        assert "bitcast<f32>(0x7f800000u)" not in src
        assert "var<private> tang_inf_bits: u32 = 0x7f800000u;" in src


@pytest.mark.toolchain
def test_an_adapter_with_small_limits_gets_a_smaller_n_and_says_why(native) -> None:
    from tang.gpu.native import NativeDevice

    dev = NativeDevice.open()  # its own device: its limits are lowered, not the shared one's
    try:
        # a binding limit under the 4 MiB score matrix of n = 1,024 (what a small adapter has)
        dev.limits = dataclasses.replace(dev.limits, max_storage_binding_size=2 << 20)
        race = asyncio.run(tx.race_on(dev, "native", None, None, seed=1))
        assert (race.n, race.d) == (512, 64) and race.device is dev
        assert race.notes == [
            "smaller than n = 1024, d = 64: this adapter's limits need it"
            " (a 4,194,304-byte buffer is over its binding limit)"
        ]
        race.release()
        dev.limits = dataclasses.replace(dev.limits, storage_buffers_per_stage=3)
        race = asyncio.run(tx.race_on(dev, "native", None, None, seed=1))
        assert race.device.kind == "cpu" and (race.n, race.d) == tx.CPU_SIZE
        assert race.notes[0].startswith(
            "this adapter's limits do not fit n = 256, d = 32 (3 storage buffers per stage"
        )
        race.release()
    finally:
        dev.destroy()


def test_the_reference_row_is_causal_attention() -> None:
    n, d = 12, 5
    values = tx.random_inputs(n, d, seed=3)
    q, k, v = (np.array(values[x], np.float64).reshape(n, d) for x in "qkv")
    s = q @ k.T / math.sqrt(d)
    s[np.triu(np.ones((n, n), bool), 1)] = -np.inf
    p = np.exp(s - s.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ v
    for i in range(n):
        assert tx.reference_row(values, n, d, i) == pytest.approx(want[i], rel=1e-12)
    assert tx.check_rows(1024, 16)[:2] == [0, 68] and len(tx.check_rows(1024, 16)) == 16
    assert tx.check_rows(3, 16) == [0, 1, 2]


def test_the_scan_counts_lines_that_name_an_op(tmp_path) -> None:
    rewrite = tmp_path / "rewrite.py"
    rewrite.write_text("x = 1\nif node is softmax:  # op-specific\n    fuse_attention()\n")
    found = op_specific_lines([rewrite])
    assert [(x.line, x.names) for x in found] == [(2, ("softmax",)), (3, ("attention",))]
    assert call("transformer.scan")["op_specific_lines"] == 0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n": 0}, "n must be an integer from 1 to 2048, got 0"),
        ({"d": "64"}, "d must be an integer from 1 to 128, got '64'"),
        ({"repeat": True}, "repeat must be an integer"),
        ({"device": "tpu"}, "device must be one of auto, gpu, cpu"),
    ],
)
def test_bad_parameters_get_clear_errors(params: dict, message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        call("transformer.start", **params)


def test_a_step_without_a_run_and_a_stop_are_clear() -> None:
    with pytest.raises(RuntimeError, match=r"no run in progress: call transformer\.start first"):
        call("transformer.step")
    call("transformer.start", device="cpu", n=16, d=4)
    assert call("transformer.stop") == {"stopped": True}
    with pytest.raises(RuntimeError, match="no run in progress"):
        call("transformer.step")


def test_the_command_line_prints_every_figure(capsys) -> None:
    assert tx.main(["--device", "cpu", "--n", "48", "--d", "8", "--repeat", "1"]) == 0
    text = capsys.readouterr().out
    assert "n = 48, d = 8" in text and "as fast as naive" in text
    assert "lines of op-specific code in the passes" in text and ": 0" in text
    assert "CPU check on 16 rows (float64, pure Python): passed" in text
