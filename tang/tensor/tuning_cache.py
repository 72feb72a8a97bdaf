"""Where the autotuner's winners are kept (``tang.tensor.autotune``): by the printed graph
(its structure and shapes), the device's language, kind and name; in memory for this process
and, on the desktop, in ``tuned.json`` in tang's cache folder (``$TANG_CACHE``, else
``~/.cache/tang``). ``tang.tensor.compile`` reads them from here."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..gpu.cache import cache_dir
from .comprehension import TensorGraph
from .printing import format_graph

_TUNED: dict[str, dict[str, Any]] = {}  # key -> winning options, this process


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
    return cache_dir() / "tuned.json"


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
    k = key(graph, device)
    if k not in _TUNED:
        found = _load().get(k)
        if not isinstance(found, dict):
            return None
        _TUNED[k] = _decode(found)
    return dict(_TUNED[k])


def remember(k: str, options: dict[str, Any]) -> None:
    """Keep ``options`` as the winner under ``k`` (in memory, and on disk where there is one)."""
    _TUNED[k] = dict(options)
    _save(k, dict(options))


__all__ = ["key", "remember", "tuned"]
