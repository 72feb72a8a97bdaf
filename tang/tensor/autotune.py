"""The autotuner: candidate schedules of one graph (register-block shapes, reduction lanes,
workgroup plans, within the device's limits) compiled and timed on the device that will run
it; the fastest whose outputs agree with the reference wins and is kept, keyed by the
graph's structure and shapes and the device, in memory and (on the desktop) on disk, so
``tang.tensor.compile`` uses it from then on.

    best = tang.tensor.tune(graph, dev)     # Tuning: the winner and every trial
    fn = tang.tensor.compile(graph, dev)    # compiled with the winner's schedule

The search is bounded (``budget`` seconds, at least the default schedule is tried) and
deterministic in what it may choose: a candidate whose outputs differ from the reference by
more than f32 rounding cannot win. The reference is the numpy evaluator where the graph is
small enough to evaluate whole, else the default schedule's own outputs (which the test
suite checks against the evaluator).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .comprehension import TensorGraph
from .printing import format_graph

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
    ],
    "wgsl": [
        {},
        {"block": (8, 8)},
        {"block": (4, 8)},
        {"block": (8, 4)},
        {"block": (2, 8)},
        {"workgroups": True},
        {"workgroups": False},
    ],
}
# the largest evaluation domain (elements × reduction steps) checked by the numpy evaluator
REFERENCE_WORK = 1 << 22

_TUNED: dict[str, dict[str, Any]] = {}  # key -> winning options, this process


@dataclass
class Trial:
    """One candidate: its options, best seconds per call (None when it failed or
    disagreed) and why it cannot win (empty when it can)."""

    options: dict[str, Any]
    seconds: float | None = None
    rejected: str = ""


@dataclass
class Tuning:
    """The outcome: the winning options and every trial, in the order tried."""

    key: str
    best: dict[str, Any]
    trials: list[Trial] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        """The winner's speed-up over the default schedule (the first trial)."""
        default, won = self.trials[0].seconds, self._best_trial().seconds
        return default / won if default and won else 1.0

    def _best_trial(self) -> Trial:
        return next(t for t in self.trials if t.options == self.best and not t.rejected)


def key(graph: TensorGraph, device: Any) -> str:
    """What a tuning result is kept under: the printed graph (its structure and shapes),
    the device's language and its name (the adapter or the compiler and its flags)."""
    text = f"{format_graph(graph)}\0{device.printer}\0{device.kind}\0{device.name}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _store() -> Path | None:
    """The desktop's file of tuning results (None in the page: memory only)."""
    from .. import gpu

    if gpu.in_browser():
        return None
    root = os.environ.get("TANG_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tang"
    )
    return Path(root) / "tuned.json"


def _load() -> dict[str, Any]:
    path = _store()
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # an unreadable cache is no cache
    return data if isinstance(data, dict) else {}


def _save(k: str, options: dict[str, Any]) -> None:
    path = _store()
    if path is None:
        return
    data = _load()
    data[k] = options
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _decode(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options as read back from JSON (tuples come back as lists)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}


def tuned(graph: TensorGraph, device: Any) -> dict[str, Any] | None:
    """The winning options for ``graph`` on ``device`` if it was tuned here, else None."""
    if device.printer not in CANDIDATES:
        return None
    k = key(graph, device)
    if k not in _TUNED:
        found = _load().get(k)
        if not isinstance(found, dict):
            return None
        _TUNED[k] = _decode(found)
    return dict(_TUNED[k])


def _inputs(graph: TensorGraph, seed: int) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    return {n: rng.normal(size=s).astype(np.float32) for n, s in graph.inputs.items()}


def _reference(graph: TensorGraph, inputs: Mapping[str, Any]) -> dict[str, Any] | None:
    from .evaluate import evaluate

    work = sum(c.size * math.prod(e for _, e in c.reduce) for c in graph.comprehensions)
    if work > REFERENCE_WORK:
        return None
    return evaluate(graph, {n: v.astype("float64") for n, v in inputs.items()}, backend="numpy")


def _disagrees(got: Mapping[str, Any], want: Mapping[str, Any]) -> str:
    """Why ``got`` is not ``want`` to f32 rounding (empty when it is)."""
    import numpy as np

    for name, w in want.items():
        w = np.asarray(w, dtype=np.float64)
        g = np.asarray(got[name], dtype=np.float64)
        scale = max(1.0, float(np.nanmax(np.abs(w))) if w.size else 1.0)
        if not np.allclose(g, w, rtol=1e-4, atol=1e-5 * scale, equal_nan=True):
            return f"output {name} differs from the reference by {np.nanmax(np.abs(g - w)):.2e}"
    return ""


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
    and remember it for ``compile``. Needs numpy (the desktop; the page tunes nothing)."""
    from .runtime import Compiled, _device, forget

    dev = _device(device)
    pool = candidates if candidates is not None else CANDIDATES.get(dev.printer, [{}])
    inputs = _inputs(graph, seed)
    want = _reference(graph, inputs)
    k = key(graph, dev)
    trials: list[Trial] = []
    start = time.perf_counter()
    for options in pool:
        if trials and time.perf_counter() - start > budget:
            break
        trial = Trial(dict(options))
        trials.append(trial)
        plan = {o: v for o, v in options.items() if o != "workgroups"}
        try:
            fn = Compiled(graph, dev, workgroups=options.get("workgroups"), schedule=plan)
            got = fn(inputs, out="numpy")
        except Exception as exc:  # a candidate the device refuses (limits, compile errors)
            trial.rejected = f"{type(exc).__name__}: {exc}"
            continue
        if want is None:
            want = got  # the default schedule is the reference for a graph too big to evaluate
        trial.rejected = _disagrees(got, want)
        if trial.rejected:
            fn.release()
            continue
        runs = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn(out="numpy")
            runs.append(time.perf_counter() - t)
        trial.seconds = min(runs)  # the least disturbed run: load only adds time
        fn.release()
    good = [t for t in trials if not t.rejected and t.seconds is not None]
    if not good:
        raise RuntimeError(f"no candidate schedule ran correctly: {trials[0].rejected}")
    best = min(good, key=lambda t: t.seconds).options  # type: ignore[arg-type,return-value]
    _TUNED[k] = dict(best)
    _save(k, dict(best))
    forget(graph)  # the next compile uses the winner
    return Tuning(k, dict(best), trials)


__all__ = ["CANDIDATES", "Trial", "Tuning", "key", "tune", "tuned"]
