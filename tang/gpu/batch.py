"""Evaluate graph outputs (say value and gradient) over many points in one call.

The outputs are printed once as tang's element-wise kernel in the device's language
(``Device.printer``: WGSL for a GPU, f32 C for the compiled C device, Python for the CPU
device; a GPU kernel carries its bindings). Its layout is one packed input buffer
``src[k*n + i]`` (input ``k``, item ``i``), one output buffer ``dst[j*n + i]`` and a
uniform item count. Columns go up as one upload and come back as one read. What runs is a
``tang.lower.plan.Plan`` (the compile pipeline, ``tang.compile``, makes the plans of text
and gradients; a graph passed here is planned by ``tang.lower.plan.plan``). Inputs are f32
on every device (the CPU device stores f32 too and computes in f64 in between), so the
devices agree to f32 rounding.
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..expr.graph import Graph, Node
from ..lower.base import Lowered
from ..lower.plan import Plan, plan
from .base import Device
from .data import ITEMSIZE, pack
from .errors import DataError, GPUError

KERNEL_NAME = "f"


@dataclass
class Batch:
    """The outputs over all points: ``columns[j][i]`` is output ``j`` at point ``i``."""

    columns: list[array]
    names: tuple[str, ...]
    n: int
    device: str  # the kind of device that computed it: "native", "browser" or "cpu"
    seconds: dict[str, float] = field(default_factory=dict)  # prepare, compile, upload, run
    fallback: str | None = None  # why the GPU was not used, when it fell back to the CPU

    def checksum(self) -> float:
        """The sum of every finite output value (a quick equality check between runs)."""
        return math.fsum(v for col in self.columns for v in col if math.isfinite(v))

    def nonfinite(self) -> int:
        """How many output values are inf or nan."""
        return sum(1 for col in self.columns for v in col if not math.isfinite(v))

    def summary(self) -> dict[str, Any]:
        """A JSON-able description (no columns): what the page and the CLI print."""
        return {
            "n": self.n,
            "outputs": list(self.names),
            "device": self.device,
            "checksum": self.checksum(),
            "nonfinite": self.nonfinite(),
            "seconds": self.seconds,
            "fallback": self.fallback,
        }


@lru_cache(maxsize=64)
def _kernel(outputs: tuple[Node, ...], inputs: tuple[str, ...], backend: str) -> Lowered:
    """The outputs printed as ``backend``'s kernel (a GPU kernel carries its bindings; a
    compiled C kernel works in f32, as the device's buffers do)."""
    from ..lower import lower

    dtype = "f32" if backend == "c" else None
    return lower(list(outputs), list(inputs), backend, name=KERNEL_NAME, dtype=dtype)


@lru_cache(maxsize=64)
def python_kernel(source: str) -> Callable[..., None]:
    """The function ``f(src, dst, n)`` defined by a kernel of tang's Python printer.

    Only text that ``tang.lower`` printed from a graph gets here (input names are turned
    into safe identifiers by the printer); user text never does.
    """
    namespace: dict[str, Any] = {}
    exec(compile(source, "<tang python kernel>", "exec"), namespace)
    fn = namespace[KERNEL_NAME]

    def run(n: int, src: array, dst: array) -> None:
        fn(src, dst, n)

    run.__qualname__ = f"python_kernel[{hash(source) & 0xFFFFFFFF:08x}]"
    return run


def _columns(points: Any, inputs: tuple[str, ...]) -> tuple[list[memoryview], int]:
    """The points as one packed f32 column per input, in input order, and their count."""
    if isinstance(points, Mapping):
        unknown = [k for k in points if k not in inputs]
        if unknown:
            raise DataError(f"no input named {unknown[0]!r} (inputs: {', '.join(inputs)})")
        missing = [k for k in inputs if k not in points]
        if missing:
            raise DataError(f"no values for input {missing[0]!r}")
        cols = [points[k] for k in inputs]
    else:
        cols = list(points)
        if len(cols) != len(inputs):
            raise DataError(
                f"{len(cols)} columns of points for {len(inputs)} inputs ({', '.join(inputs)})"
            )
    packed = []
    for name, col in zip(inputs, cols, strict=True):
        try:
            packed.append(pack(col, "f32"))
        except DataError as exc:
            raise DataError(f"input {name!r}: {exc.reason}") from None
    sizes = {p.nbytes // ITEMSIZE for p in packed}
    if len(sizes) > 1:
        lengths = ", ".join(
            f"{k}: {p.nbytes // ITEMSIZE}" for k, p in zip(inputs, packed, strict=True)
        )
        raise DataError(f"the input columns differ in length ({lengths})")
    return packed, sizes.pop() if sizes else 0


def _count(points: Any, inputs: tuple[str, ...]) -> int:
    """The number of points, without packing them (for limit checks before allocating)."""
    cols = list(points.values()) if isinstance(points, Mapping) else list(points)
    try:
        return len(cols[0]) if cols else 0
    except TypeError:
        return 0  # _columns will explain what is wrong with it


class _Job:
    """One evaluation on one device: the shared steps of the sync and async paths."""

    def __init__(self, dev: Device, p: Plan, points: Any, n: int | None) -> None:
        self.dev, self.plan, self.t = dev, p, time.perf_counter()
        self.seconds: dict[str, float] = {}
        self.buffers: list[Any] = []
        if p.inputs:
            n = _count(points, p.inputs)
        elif not isinstance(n, int) or n < 0:
            raise DataError("outputs without inputs need the number of points: pass n=")
        if dev.kind != "cpu":  # fail on a limit before packing or allocating anything
            dev.check_binding(len(p.inputs) * n * ITEMSIZE, "the packed inputs (src)")
            dev.check_binding(len(p.outputs) * n * ITEMSIZE, "the packed outputs (dst)")
        self.cols, self.n = _columns(points, p.inputs)
        if not p.inputs:
            self.n = n
        self.printed = _kernel(p.outputs, p.inputs, dev.printer)  # the device's language
        self.lap("prepare")

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = now - self.t
        self.t = now

    def kernel_source(self) -> Any:
        """What the device compiles: a Python kernel as a function, any other the printed
        kernel itself (its text and binding layout)."""
        printed = self.printed
        return python_kernel(printed.source) if printed.backend == "python" else printed

    def upload(self) -> tuple[list[Any], Any]:
        self.lap("compile")
        dev, m = self.dev, len(self.plan.outputs)
        src = dev.buffer(b"".join(self.cols)) if self.cols else dev.empty(1)
        dst = dev.empty(m * self.n)
        self.buffers = [src, dst]
        if dev.kind == "cpu":
            bindings = [src, dst]
        elif dev.printer == "c":  # f(src, dst, n)
            bindings = [src, dst, self.n]
        else:
            bindings = [self.n, src, dst]
        self.lap("upload")
        return bindings, dst

    def finish(self, flat: array) -> Batch:
        self.lap("run")
        for buf in self.buffers:
            buf.release()
        n = self.n
        cols = [flat[j * n : (j + 1) * n] for j in range(len(self.plan.outputs))]
        return Batch(cols, self.plan.names, n, self.dev.kind, self.seconds)


def _device(device: Device | str | None) -> Device:
    from . import device as pick

    return device if isinstance(device, Device) else pick(device)


def evaluate(
    outputs: Graph | Sequence[Node | float] | Plan,
    points: Mapping[str, Any] | Sequence[Any],
    *,
    inputs: Sequence[str] | None = None,
    device: Device | str | None = None,
    fallback: bool = False,
    n: int | None = None,
) -> Batch:
    """Every output at every point. ``points`` maps input names to columns (or lists the
    columns in input order; outputs without inputs take the count ``n``). With ``fallback``
    a GPUError reruns on the CPU device and the reason is kept in ``Batch.fallback``."""
    p = outputs if isinstance(outputs, Plan) else plan(outputs, inputs)
    dev = _device(device)
    try:
        job = _Job(dev, p, points, n)
        kernel = dev.kernel(job.kernel_source())
        bindings, dst = job.upload()
        return job.finish(dev.run(kernel, bindings, job.n, out=dst))
    except GPUError as exc:
        return _on_cpu(exc, dev, fallback, p, points, n)


async def evaluate_async(
    outputs: Graph | Sequence[Node | float] | Plan,
    points: Mapping[str, Any] | Sequence[Any],
    *,
    inputs: Sequence[str] | None = None,
    device: Device | str | None = None,
    fallback: bool = False,
    n: int | None = None,
) -> Batch:
    """``evaluate``, awaitable: the spelling the page uses."""
    from . import device_async

    p = outputs if isinstance(outputs, Plan) else plan(outputs, inputs)
    dev = device if isinstance(device, Device) else await device_async(device)
    try:
        job = _Job(dev, p, points, n)
        kernel = await dev.kernel_async(job.kernel_source())
        bindings, dst = job.upload()
        return job.finish(await dev.run_async(kernel, bindings, job.n, out=dst))
    except GPUError as exc:
        return _on_cpu(exc, dev, fallback, p, points, n)


def _on_cpu(
    exc: GPUError, dev: Device, fallback: bool, p: Plan, points: Any, n: int | None
) -> Batch:
    """Rerun on the CPU after ``exc``, keeping the reason, when ``fallback`` allows it."""
    if not fallback or dev.kind == "cpu" or isinstance(exc, DataError):
        raise exc
    batch = evaluate(p, points, device="cpu", n=n)
    batch.fallback = f"{dev.kind}: {exc.reason}"
    return batch


def sample_points(inputs: Sequence[str], n: int, lo: float = -2.0, hi: float = 2.0) -> dict:
    """``n`` deterministic points spread over ``[lo, hi)`` per input (a Kronecker sequence:
    item i of input k is ``lo + (hi-lo)·frac(i·α_k)``), identical in every Python."""
    if not 0 <= n <= MAX_POINTS:
        raise DataError(f"the number of points must be between 0 and {MAX_POINTS:,}, got {n:,}")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise DataError(f"the range must be finite with lo < hi, got [{lo}, {hi}]")
    width, out = hi - lo, {}
    np = _numpy()
    for k, name in enumerate(inputs):
        alpha = math.sqrt(_PRIMES[k % len(_PRIMES)]) % 1.0 + k // len(_PRIMES) * 1e-3
        if np is not None:  # the same IEEE operations, vectorised: the same numbers
            col = lo + width * ((np.arange(n, dtype=np.float64) * alpha) % 1.0)
            out[name] = array("f", col.astype(np.float32).tobytes())
        else:
            out[name] = array("f", [lo + width * ((i * alpha) % 1.0) for i in range(n)])
    return out


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


MAX_POINTS = 1 << 26
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53)
