"""The autotuner: candidate schedules of one graph (register-block shapes, reduction lanes,
workgroup plans, within the device's limits) compiled and timed on the device that will run
it; the fastest whose outputs agree with the reference wins and is kept, keyed by the
graph's structure and shapes and the device, in memory and (on the desktop) on disk, so
``tang.tensor.compile`` uses it from then on.

    best = tang.tensor.tune(graph, dev)     # Tuning: the winner and every trial
    fn = tang.tensor.compile(graph, dev)    # compiled with the winner's schedule

The search is bounded (``budget`` seconds, at least the default schedule is tried) and
deterministic in what it may choose: a candidate whose outputs differ from the reference by
more than f32 rounding cannot win, a candidate that prints the same kernels as an earlier
one is not run again, and the default stays unless a candidate beats it by more than 3%.
The reference is the numpy evaluator where the graph is small enough to evaluate whole,
else the default schedule's own outputs (which the test suite checks against the
evaluator). ``tune_async`` is the page's spelling (WebGPU; no numpy, the winner is kept for
the session).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .comprehension import TensorGraph
from .tuning_cache import key, remember, tuned

# candidate plan options per device language; the first is the schedule's default
CANDIDATES: dict[str, list[dict[str, Any]]] = {
    "c": [
        {},
        {"block": (4, 32)},
        {"block": (8, 32)},
        {"block": (6, 16)},
        {"block": (4, 64)},
        {"lanes": 16},
        {"lanes": 64},
        {"inline_lanes": 4},
        {"inline_lanes": 16},
        {"vector_rows": 8},
        {"vector_rows": 2},
        {"vector_keys": 1},
        {"vector_keys": 32},
        {"key_panel": False},
    ],
    "wgsl": [
        {},
        # workgroup plans on and off first: the default guesses from the adapter's name,
        # which a browser may not tell (Chromium's compatibility adapters are "unnamed")
        {"workgroups": False},
        {"workgroups": True},
        # register plans (without workgroup tiles, whatever the guess), the shapes that won
        # on lavapipe first, so that a short budget (the page's) reaches them: 16 columns
        # are four vec4 loads of a contiguous column operand
        *(
            {"workgroups": False, **options}
            for options in (
                {"block": (16, 16)},
                {"vector_rows": 16},
                {"block": (8, 16)},
                {"vector_rows": 8},
                {"block": (8, 8)},
                {"vector_rows": 4},
                {"block": (4, 8)},
                {"block": (8, 4)},
                {"block": (2, 8)},
                {"vector_rows": 2},
            )
        ),
    ],
}
# the largest evaluation domain (elements × reduction steps) checked by the numpy evaluator
REFERENCE_WORK = 1 << 22
# a candidate must beat the default by more than this factor's noise to replace it
MARGIN = 0.97


@dataclass
class Trial:
    """One candidate: its options, best seconds per call (None when it failed or
    disagreed) and why it cannot win (empty when it can)."""

    options: dict[str, Any]
    seconds: float | None = None
    rejected: str = ""


@dataclass
class Tuning:
    """The outcome: the winning options, every trial in the order tried, and the wall
    seconds the search took (compiles included)."""

    key: str
    best: dict[str, Any]
    trials: list[Trial] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def speedup(self) -> float:
        """The winner's speed-up over the default schedule (the first trial)."""
        default, won = self.trials[0].seconds, self._best_trial().seconds
        return default / won if default and won else 1.0

    def _best_trial(self) -> Trial:
        return next(t for t in self.trials if t.options == self.best and not t.rejected)


def _inputs(graph: TensorGraph, seed: int) -> dict[str, Any]:
    """Seeded standard normals for every input: numpy f32 arrays on the desktop, flat
    ``array('f')`` where there is no numpy (the page)."""
    try:
        import numpy as np
    except ImportError:
        rng = random.Random(seed)
        return {
            n: array("f", [rng.gauss(0.0, 1.0) for _ in range(math.prod(s))])
            for n, s in graph.inputs.items()
        }
    gen = np.random.default_rng(seed)
    return {n: gen.normal(size=s).astype(np.float32) for n, s in graph.inputs.items()}


def _reference(graph: TensorGraph, inputs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The numpy evaluator's outputs where the graph is small enough (None otherwise, and
    in the page: the default schedule's outputs are the reference there)."""
    work = sum(c.size * math.prod(e for _, e in c.reduce) for c in graph.comprehensions)
    if work > REFERENCE_WORK:
        return None
    try:
        import numpy as np
    except ImportError:
        return None
    from .evaluate import evaluate

    values = {n: np.asarray(v, dtype=np.float64) for n, v in inputs.items()}
    return evaluate(graph, values, backend="numpy")


def _disagrees(got: Mapping[str, Any], want: Mapping[str, Any]) -> str:
    """Why ``got`` is not ``want`` to f32 rounding: |got − want| ≤ 1e-4·|want| +
    1e-5·max(1, max |want|), nan where nan (empty when it agrees)."""
    for name, w in want.items():
        if hasattr(w, "ravel") and hasattr(got[name], "ravel"):  # numpy: the same test, fast
            import numpy as np

            w64, g64 = np.asarray(w, np.float64), np.asarray(got[name], np.float64)
            finite = np.abs(w64[np.isfinite(w64)])
            atol = 1e-5 * max(1.0, float(finite.max()) if finite.size else 1.0)
            if not np.allclose(g64, w64, rtol=1e-4, atol=atol, equal_nan=True):
                worst = float(np.nanmax(np.abs(g64 - w64)))
                return f"output {name} differs from the reference by {worst:.2e}"
            continue
        w_flat, g_flat = _flat(w), _flat(got[name])
        finite = [abs(x) for x in w_flat if x == x and abs(x) != math.inf]
        atol = 1e-5 * max(1.0, max(finite, default=1.0))
        worst = 0.0
        for g, x in zip(g_flat, w_flat):
            if x != x or g != g or abs(x) == math.inf or abs(g) == math.inf:
                if not (x != x and g != g) and g != x:
                    return f"output {name} is {g} where the reference has {x}"
                continue
            err = abs(g - x)
            if err > 1e-4 * abs(x) + atol:
                worst = max(worst, err)
        if worst:
            return f"output {name} differs from the reference by {worst:.2e}"
    return ""


def _flat(value: Any) -> list[float]:
    if hasattr(value, "ravel"):
        return value.ravel().tolist()
    if isinstance(value, array):
        return value.tolist()
    out: list[float] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        else:
            out.append(float(v))
    return out


_WORDS = {
    "block": lambda v: f"{v[0]}×{v[1]} register blocks",
    "lanes": lambda v: f"{v}-lane sums",
    "inline_lanes": lambda v: f"{v}-lane inner sums",
    "vector_rows": lambda v: f"{v} rows at a time",
    "vector_keys": lambda v: f"{v} reduction steps per block" if v > 1 else "no step blocks",
    "key_panel": lambda v: "scores from a key panel" if v else "no key panel",
    "workgroups": lambda v: "workgroup tiles" if v else "no workgroup tiles",
}


def describe(options: Mapping[str, Any]) -> str:
    """Schedule options in words, for a person ("8×8 register blocks"; "the default")."""
    words = [_WORDS[k](v) if k in _WORDS else f"{k} {v}" for k, v in options.items()]
    return ", ".join(words) or "the default"


class _Search:
    """The steps ``tune`` and ``tune_async`` share: candidates, their checks, the pick."""

    def __init__(self, graph, dev, budget, candidates, seed) -> None:
        self.graph, self.dev, self.budget = graph, dev, budget
        self.pool = candidates if candidates is not None else CANDIDATES.get(dev.printer, [{}])
        self.inputs = _inputs(graph, seed)
        self.want = _reference(graph, self.inputs)
        first = next(iter(self.inputs.values()), None)
        self.out = "numpy" if hasattr(first, "ravel") else "array"
        self.trials: list[Trial] = []
        self.seen: dict[tuple[str, ...], int] = {}
        self.start = time.perf_counter()

    def candidates(self) -> Any:
        """(trial, compiled but not built) per candidate within the budget; a candidate
        printing the same kernels as an earlier one is recorded, not run again."""
        from .runtime import Compiled

        for options in self.pool:
            if self.trials and time.perf_counter() - self.start > self.budget:
                return
            trial = Trial(dict(options))
            self.trials.append(trial)
            plan = {o: v for o, v in options.items() if o != "workgroups"}
            try:
                fn = Compiled(
                    self.graph,
                    self.dev,
                    workgroups=options.get("workgroups"),
                    schedule=plan,
                    build=False,
                )
            except Exception as exc:  # options the schedule refuses
                trial.rejected = f"{type(exc).__name__}: {exc}"
                continue
            same = self.seen.get(fn.sources)
            if same is not None:
                fn.release()
                trial.rejected = f"the same kernels as candidate {same}"
                continue
            self.seen[fn.sources] = len(self.trials) - 1
            yield trial, fn

    def check(self, trial: Trial, got: Mapping[str, Any]) -> bool:
        if self.want is None:
            self.want = got  # the default schedule is the reference for a big graph
        trial.rejected = _disagrees(got, self.want)
        return not trial.rejected

    def finish(self) -> Tuning:
        from .runtime import forget

        good = [t for t in self.trials if not t.rejected and t.seconds is not None]
        if not good:
            raise RuntimeError(f"no candidate schedule ran correctly: {self.trials[0].rejected}")
        best = min(good, key=lambda t: t.seconds)  # type: ignore[arg-type,return-value]
        default = self.trials[0]
        if default in good and best.seconds > MARGIN * default.seconds:  # type: ignore[operator]
            best = default  # within the noise of the default: keep the default
        k = key(self.graph, self.dev)
        remember(k, dict(best.options))
        forget(self.graph)  # the next compile uses the winner
        return Tuning(k, dict(best.options), self.trials, time.perf_counter() - self.start)


def tune(
    graph: TensorGraph,
    device: Any = None,
    *,
    budget: float = 20.0,
    repeat: int = 3,
    candidates: list[dict[str, Any]] | None = None,
    seed: int = 0,
) -> Tuning:
    """Time ``candidates`` (default: ``CANDIDATES`` for the device's language) on
    ``device`` within ``budget`` seconds, keep the fastest that agrees with the reference,
    and remember it for ``compile``. (Inside a running event loop, await ``tune_async``.)"""
    options = {"budget": budget, "repeat": repeat, "candidates": candidates, "seed": seed}
    return asyncio.run(tune_async(graph, device, **options))


async def tune_async(
    graph: TensorGraph,
    device: Any = None,
    *,
    budget: float = 5.0,
    repeat: int = 3,
    candidates: list[dict[str, Any]] | None = None,
    seed: int = 0,
) -> Tuning:
    """``tune``, awaitable: the page's WebGPU compiles and reads back asynchronously (no
    numpy there: the default schedule's outputs are the reference, the winner is kept for
    this session); desktop devices answer the same awaitable calls at once."""
    from .runtime import _device

    if device is None:
        from .. import gpu

        device = await gpu.device_async()
    search = _Search(graph, _device(device), budget, candidates, seed)
    for trial, fn in search.candidates():
        try:
            await fn.build_async()
            got = await fn.call_async(search.inputs, out=search.out)
        except Exception as exc:
            trial.rejected = f"{type(exc).__name__}: {exc}"
            fn.release()
            continue
        if search.check(trial, got):
            runs = []
            for _ in range(repeat):
                t = time.perf_counter()
                await fn.call_async(out=search.out)
                runs.append(time.perf_counter() - t)
            trial.seconds = min(runs)  # the least disturbed run: load only adds time
        fn.release()
    return search.finish()


__all__ = ["CANDIDATES", "Trial", "Tuning", "describe", "key", "tune", "tune_async", "tuned"]
