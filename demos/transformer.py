"""The "A transformer" card: attention as written against attention as derived by tang's
passes (fuse + stabilize_softmax: one online reduction), measured live on a tang.gpu device.

    transformer.start  {device, n, d, repeat, rows, seed, tune}  open the device (WebGPU in
                       the page, wgpu-py or compiled C on the desktop, else the CPU), compile
                       both graphs, write inputs
    transformer.step   {}     one chunk: tuning one graph's schedule (``tune``, on a GPU or
                              compiled C: the autotuner's candidates within TUNE_BUDGET s,
                              the winner recompiled), a timed call of one graph, or a few
                              rows of the check; the last chunk answers {done: true, ...}
    transformer.stop   {}     free the device buffers (the page's Stop)
    transformer.scan   {}     lines of op-specific code in the pass modules (the op-name scan)

Both graphs are compiled by ``tang.tensor`` (the kernels, buffers and ``allocations`` are the
runtime's); a call is dispatch + read-back of the output, timed. The check recomputes sampled
rows in pure-Python float64 and compares both device outputs with them, and the two outputs
with each other everywhere, within ``TOLERANCE`` (f32).

    python -m demos.transformer [--n 1024] [--d 64] [--device auto|gpu|cpu]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import sys
import time
from array import array
from typing import Any

import tang.gpu as gpu
from demos.api import handler
from demos.common import device_choice, session_state
from tang import tensor as T
from tang.tensor.autotune import describe
from tang.tensor.op_names import op_specific_lines, pass_modules

# (n, d) tried in order on a GPU; the first whose buffers fit the adapter's limits is used
GPU_SIZES = ((1024, 64), (512, 64), (256, 32))
CPU_SIZE = (128, 16)  # the CPU runs tang's pure-Python kernels: n² · d has to stay small
TOLERANCE_TEXT = "1e-5"  # f32: max |got − reference| ≤ TOLERANCE · max(1, max |reference|)
TOLERANCE = float(TOLERANCE_TEXT)
MAX_N, MAX_D, MAX_REPEAT, MAX_ROWS = 2048, 128, 20, 64
ROWS_PER_CHUNK = 4
ITEMSIZE = 4
TUNE_BUDGET = 3.0  # seconds of autotuning per graph (candidates beyond it are not tried)


# ---- the graphs, the inputs and the reference -------------------------------------------------


def attention_graphs(n: int, d: int) -> tuple[T.TensorGraph, T.TensorGraph]:
    """Causal attention over one head as written (naive), and as derived by the passes."""
    q, k, v = (T.input(name, (1, 1, n, d)) for name in "qkv")
    naive = T.graph(o=T.attention(q, k, v, causal=True))
    return naive, T.stabilize_softmax(T.fuse(naive))


def random_inputs(n: int, d: int, seed: int) -> dict[str, list[float]]:
    """q, k, v as flat lists of standard normals, rounded to f32 (what the device holds)."""
    rng = random.Random(seed)
    return {
        name: array("f", [rng.gauss(0.0, 1.0) for _ in range(n * d)]).tolist() for name in "qkv"
    }


def reference_row(values: dict[str, list[float]], n: int, d: int, i: int) -> list[float]:
    """Row ``i`` of causal softmax(q kᵀ/√d) v in float64, pure Python."""
    q, k, v = values["q"], values["k"], values["v"]
    scale = 1.0 / math.sqrt(d)
    qi = q[i * d : (i + 1) * d]
    scores = [scale * sum(a * b for a, b in zip(qi, k[j * d : (j + 1) * d])) for j in range(i + 1)]
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    out = [0.0] * d
    for j, w in enumerate(weights):
        vj = v[j * d : (j + 1) * d]
        for c in range(d):
            out[c] += w * vj[c]
    return [x / total for x in out]


def check_rows(n: int, count: int) -> list[int]:
    """``count`` query rows spread over 0 … n − 1 (first and last included)."""
    count = max(1, min(count, n))
    if count == 1:
        return [n - 1]
    return sorted({round(i * (n - 1) / (count - 1)) for i in range(count)})


def op_scan() -> dict[str, Any]:
    """Lines of op-specific code in the pass modules, by the same scan as the passes' test."""
    lines = op_specific_lines()
    return {
        "op_specific_lines": len(lines),
        "lines": [{"file": x.file, "line": x.line, "names": list(x.names)} for x in lines],
        "pass_files": [p.name for p in pass_modules()],
    }


# ---- choosing the device and the size ---------------------------------------------------------


def _fits(dev: gpu.Device, n: int, d: int) -> str | None:
    """Why (n, d) does not fit the device's limits, or None when it does."""
    lim = dev.limits
    largest = ITEMSIZE * max(n * n, n * d)  # the naive graph's score matrix
    if largest > min(lim.max_storage_binding_size, lim.max_buffer_size):
        return f"a {largest:,}-byte buffer is over its binding limit"
    if lim.storage_buffers_per_stage < 4:
        return f"{lim.storage_buffers_per_stage} storage buffers per stage (4 needed)"
    return None


def _cpu_note(dev: gpu.Device, asked: str | None) -> str:
    if asked == "cpu":
        return "ran on the CPU, as asked"
    for backend, why in dev.skipped:
        if backend in ("WebGPU", "wgpu-py"):
            if why == "no adapter":
                return f"no {backend} adapter: ran on the CPU"
            return f"no {backend} device ({why}): ran on the CPU"
    return "ran on the CPU"


def _device_facts(dev: gpu.Device) -> dict[str, Any]:
    return {"kind": dev.kind, "name": dev.name, "report": dev.report}


def _size(value: Any, what: str, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
        raise ValueError(f"{what} must be an integer from 1 to {hi}, got {value!r}")
    return value


class Race:
    """Both graphs compiled on one device with the same inputs, and what was measured so far."""

    def __init__(self, dev: gpu.Device, n: int, d: int, note: str, seed: int) -> None:
        self.device, self.n, self.d, self.notes = dev, n, d, [note] if note else []
        self.values = random_inputs(n, d, seed)
        self.compiled: dict[str, T.Compiled] = {}
        self.times: dict[str, list[float]] = {"naive": [], "derived": []}
        self.outputs: dict[str, list[float]] = {}
        self.worst = {"naive": 0.0, "derived": 0.0}
        self.scale = 1.0
        self.rows_done: list[int] = []
        self.graphs = dict(zip(("naive", "derived"), attention_graphs(n, d)))
        self.tuning: dict[str, dict[str, Any]] = {}

    @classmethod
    async def on(cls, dev: gpu.Device, n: int, d: int, note: str, seed: int) -> Race:
        """Both graphs compiled on ``dev``, inputs written (buffers freed if that fails)."""
        race = cls(dev, n, d, note, seed)
        try:
            for label in race.graphs:
                await race.compile(label)
        except BaseException:
            race.release()
            raise
        return race

    async def compile(self, label: str) -> None:
        """``label``'s graph compiled (with its tuned schedule, if any) and its inputs
        written, in place of any earlier compiled form."""
        old = self.compiled.pop(label, None)
        if old is not None:
            old.release()
        fn = T.Compiled(self.graphs[label], self.device, build=False)
        self.compiled[label] = fn
        await fn.build_async()
        fn.write(self.values)

    async def tune(self, label: str) -> None:
        """Tune ``label``'s schedule on this device; recompile when the winner differs."""
        result = await T.tune_async(self.graphs[label], self.device, budget=TUNE_BUDGET)
        self.tuning[label] = {
            "best": describe(result.best),
            "speedup": result.speedup,
            "candidates": len(result.trials),
            "timed": sum(t.seconds is not None for t in result.trials),
            "seconds": result.seconds,
        }
        if result.best != self.compiled[label].schedule:
            await self.compile(label)

    async def call(self, label: str) -> float:
        """One call of ``label``'s kernels: dispatch and read the output back (seconds)."""
        fn = self.compiled[label]
        t0 = time.perf_counter()
        fn.dispatch()
        raw = await self.device.read_async(fn.buffers["o"])
        seconds = time.perf_counter() - t0
        self.outputs[label] = list(raw[: self.n * self.d])
        return seconds

    def release(self) -> None:
        for fn in self.compiled.values():
            fn.release()
        self.compiled.clear()


async def _open(choice: str | None, n: int | None, d: int | None, seed: int) -> Race:
    """The race on the device tang picks for ``choice`` (see ``race_on``)."""
    return await race_on(await gpu.device_async(choice, fallback=True), choice, n, d, seed)


async def race_on(dev: gpu.Device, choice: str | None, n: int | None, d: int | None, seed: int):
    """The race on ``dev`` at the first size that fits its limits; on the CPU (at a smaller
    size) when none does or the GPU fails. The notes say which and why."""
    note = ""
    if dev.kind != "cpu":
        sizes = [(n or 1024, d or 64)] if n or d else list(GPU_SIZES)
        for nn, dd in sizes:
            why = _fits(dev, nn, dd)
            if why is None:
                try:
                    return await Race.on(dev, nn, dd, note, seed)
                except gpu.LimitError as exc:
                    why = exc.reason
                except gpu.GPUError as exc:
                    note = f"{gpu.BACKENDS[dev.kind]} failed ({exc.reason}): ran on the CPU"
                    break
            note = f"smaller than n = {nn}, d = {dd}: this adapter's limits need it ({why})"
        else:
            note = f"this adapter's limits do not fit n = {nn}, d = {dd} ({why}): ran on the CPU"
        dev = gpu.CPUDevice()
    nn, dd = (n or CPU_SIZE[0], d or CPU_SIZE[1])
    note = note or _cpu_note(dev, choice)
    if not n and not d:
        note += f" (n = {nn}, d = {dd}: tang's pure-Python kernels, smaller than the GPU's 1,024)"
    return await Race.on(dev, nn, dd, note, seed)


# ---- the chunks -------------------------------------------------------------------------------


def _plan(repeat: int, rows: list[int], tune: bool) -> list[tuple[str, Any]]:
    """The chunks of one run, in order: tuning (``tune``), warm-up calls, alternating timed
    calls, check rows."""
    tasks: list[tuple[str, Any]] = [("tune", "naive"), ("tune", "derived")] if tune else []
    tasks += [("warm", "naive"), ("warm", "derived")]
    for _ in range(repeat):
        tasks += [("time", "naive"), ("time", "derived")]
    for k in range(0, len(rows), ROWS_PER_CHUNK):
        tasks.append(("check", rows[k : k + ROWS_PER_CHUNK]))
    return tasks


def _compiled_facts(fn: T.Compiled, times: list[float], tuning: Any) -> dict[str, Any]:
    big = fn.largest_buffer
    return {
        "tuning": tuning,
        "plans": sorted({p.kind for p in fn.plans.values()}),
        "ms": 1e3 * statistics.median(times),
        "ms_each": [1e3 * t for t in times],
        "kernels": len(fn.steps),
        "bytes_written": fn.bytes_written,
        "largest_buffer": {"name": big.name, "size": big.size, "bytes": big.nbytes},
        "allocations": [{"name": a.name, "role": a.role, "size": a.size} for a in fn.allocations],
    }


def _summary(race: Race, rows: list[int]) -> dict[str, Any]:
    n, d = race.n, race.d
    naive, derived = race.outputs["naive"], race.outputs["derived"]
    diff = max(abs(a - b) for a, b in zip(naive, derived))
    limit = TOLERANCE * race.scale
    fa, fb = race.compiled["naive"], race.compiled["derived"]
    return {
        "done": True,
        "fraction": 1.0,
        "stage": "done",
        "device": _device_facts(race.device),
        "on_gpu": race.device.kind != "cpu",
        "n": n,
        "d": d,
        "notes": race.notes,
        "naive": _compiled_facts(fa, race.times["naive"], race.tuning.get("naive")),
        "derived": _compiled_facts(fb, race.times["derived"], race.tuning.get("derived")),
        "ratio": statistics.median(race.times["naive"]) / statistics.median(race.times["derived"]),
        "bytes_ratio": fa.bytes_written / fb.bytes_written,
        "derived_bytes_per_nd": fb.bytes_written / (ITEMSIZE * n * d),
        "naive_bytes_per_n2": fa.bytes_written / (ITEMSIZE * n * n),
        **op_scan(),
        "check": {
            "rows": rows,
            "tolerance": TOLERANCE,
            "scale": race.scale,
            "derived_error": race.worst["derived"],
            "naive_error": race.worst["naive"],
            "derived_vs_naive": diff,
            "passed": max(race.worst["derived"], race.worst["naive"], diff) <= limit,
            "rule": f"max |got − reference| ≤ {TOLERANCE_TEXT} · max(1, max |reference|), f32",
        },
    }


async def _chunk(race: Race, task: tuple[str, Any]) -> str:
    kind, what = task
    if kind == "tune":
        await race.tune(what)
        return f"tuning the {what} kernels' schedule on this device"
    if kind == "warm":
        await race.call(what)
        return f"first call of the {what} kernels"
    if kind == "time":
        race.times[what].append(await race.call(what))
        return f"timing the {what} kernels ({len(race.times[what])})"
    for i in what:  # check rows
        ref = reference_row(race.values, race.n, race.d, i)
        race.scale = max(race.scale, max(abs(x) for x in ref))
        at = i * race.d
        for label in ("naive", "derived"):
            got = race.outputs[label][at : at + race.d]
            err = max(abs(a - b) for a, b in zip(got, ref))
            race.worst[label] = max(race.worst[label], err)
        race.rows_done.append(i)
    return f"checking rows on the CPU ({len(race.rows_done)} done)"


# ---- worker methods ---------------------------------------------------------------------------


@handler("transformer.start")
async def start(
    device: str = "auto",
    n: int | None = None,
    d: int | None = None,
    repeat: int = 3,
    rows: int = 16,
    seed: int = 0,
    tune: bool = True,
) -> dict[str, Any]:
    """Open the device, compile both graphs and write the inputs; the chunks follow
    (``tune``: first tune each graph's schedule, where the device compiles kernels)."""
    choice = device_choice(device)
    n = None if n is None else _size(n, "n", MAX_N)
    d = None if d is None else _size(d, "d", MAX_D)
    repeat = _size(repeat, "repeat", MAX_REPEAT)
    rows = _size(rows, "rows", MAX_ROWS)
    state = session_state("transformer")
    stop()
    race = await _open(choice, n, d, seed)
    state["race"] = race
    state["rows"] = check_rows(race.n, rows)
    tunes = bool(tune) and race.device.kind != "cpu"
    state["tasks"] = _plan(repeat, state["rows"], tunes)
    state["total"] = len(state["tasks"])
    return {
        "done": False,
        "fraction": 0.0,
        "stage": "compiled",
        "n": race.n,
        "d": race.d,
        "notes": race.notes,
        "on_gpu": race.device.kind != "cpu",
        "device": _device_facts(race.device),
        "chunks": state["total"],
    }


@handler("transformer.step")
async def step() -> dict[str, Any]:
    """Run the next chunk; the last one answers every figure with ``done: true``."""
    state = session_state("transformer")
    race = state.get("race")
    if race is None:
        raise RuntimeError("no run in progress: call transformer.start first")
    tasks, total, rows = state["tasks"], state["total"], state["rows"]  # a Stop may reset state
    if tasks:
        stage = await _chunk(race, tasks.pop(0))
        return {"done": False, "stage": stage, "fraction": 1 - len(tasks) / total}
    return _summary(race, rows)


@handler("transformer.stop")
def stop() -> dict[str, Any]:
    """Forget the run in progress and free its device buffers."""
    state = session_state("transformer")
    race = state.pop("race", None)
    if race is not None:
        race.release()
    state.reset()
    return {"stopped": race is not None}


@handler("transformer.scan")
def scan() -> dict[str, Any]:
    """Lines of op-specific code in the pass modules (0: the passes are generic)."""
    return op_scan()


# ---- command line -----------------------------------------------------------------------------


async def run_all(**params: Any) -> dict[str, Any]:
    """start, then step until done (what the page does, without the pauses)."""
    await start(**params)
    while True:
        out = await step()
        if out["done"]:
            stop()
            return out


def report(out: dict[str, Any]) -> list[str]:
    """The figures as lines for a person."""
    n, d, na, de, ck = out["n"], out["d"], out["naive"], out["derived"], out["check"]
    lines = [out["device"]["report"][0], *out["notes"]]
    lines.append(f"causal attention, n = {n:,}, d = {d} (f32), median of {len(na['ms_each'])}")
    for label, f in (("naive (as written)", na), ("derived (online softmax)", de)):
        lines.append(
            f"  {label:26s} {f['ms']:9.2f} ms  {f['kernels']} kernels  writes"
            f" {f['bytes_written']:,} bytes  (largest buffer {f['largest_buffer']['name']},"
            f" {f['largest_buffer']['size']:,} elements)"
        )
        if f["tuning"]:
            t = f["tuning"]
            lines.append(
                f"  {'':26s} schedule tuned: {t['best']} ({t['speedup']:.2f}x the default;"
                f" {t['timed']} of {t['candidates']} candidates timed in {t['seconds']:.1f} s)"
            )
    lines.append(f"  derived is {out['ratio']:.2f}x as fast as naive")
    lines.append(
        f"  bytes written: derived {out['derived_bytes_per_nd']:.1f}·4·n·d (O(n·d)),"
        f" naive {out['naive_bytes_per_n2']:.1f}·4·n² (O(n²))"
    )
    lines.append(
        f"  lines of op-specific code in the passes ({', '.join(out['pass_files'])}):"
        f" {out['op_specific_lines']}"
    )
    verdict = "passed" if ck["passed"] else "FAILED"
    lines.append(
        f"  CPU check on {len(ck['rows'])} rows (float64, pure Python): {verdict};"
        f" derived error {ck['derived_error']:.1e}, naive {ck['naive_error']:.1e},"
        f" derived vs naive {ck['derived_vs_naive']:.1e} (scale {ck['scale']:.2f};"
        f" {ck['rule']})"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="sequence length (default 1024)")
    parser.add_argument("--d", type=int, default=None, help="head size (default 64)")
    parser.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls of each graph")
    parser.add_argument("--rows", type=int, default=16, help="rows checked on the CPU")
    parser.add_argument("--no-tune", action="store_true", help="keep the default schedules")
    args = parser.parse_args(argv)
    try:
        out = asyncio.run(
            run_all(
                device=args.device,
                n=args.n,
                d=args.d,
                repeat=args.repeat,
                rows=args.rows,
                tune=not args.no_tune,
            )
        )
    except ValueError as exc:
        parser.error(str(exc))
    print("\n".join(report(out)))
    return 0 if out["check"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
