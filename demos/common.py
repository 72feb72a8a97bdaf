"""What every demo shares: the device a page asked for, numbers that strict JSON can hold, and
state kept in the worker between a page's calls.

    device_choice(device)          "auto" | "gpu" | "cpu" -> the tang.gpu backend to ask for
    finite_param(value, name)      a page's number, checked finite (ValueError naming it)
    json_number(v)                 nan/inf as the strings "nan", "inf", "-inf"
    finite_or_none(v, digits)      nan/inf as None; optionally rounded
    session_state(prefix)          a dict kept per demo between calls, with .reset()
    OneLineParser                  argparse whose usage errors are one line and exit status 2
    glue_values(argv, options)     ``--opt -1`` as ``--opt=-1`` for a demo's command line

The dispatcher encodes answers with ``allow_nan=False``, so every float a handler returns
goes through ``json_number`` or ``finite_or_none`` unless it is known finite.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable
from typing import Any, NoReturn

from tang.ieee import json_number

__all__ = [
    "DEVICE_CHOICES",
    "OneLineParser",
    "SessionState",
    "device_choice",
    "finite_or_none",
    "finite_param",
    "glue_values",
    "json_number",
    "session_state",
]

# What a page may ask for; "gpu" is WebGPU in the page, wgpu-py on the desktop.
DEVICE_CHOICES = ("auto", "gpu", "cpu")


def device_choice(device: str) -> str | None:
    """The ``tang.gpu.device_async`` backend for a page's ``device`` (None: tang picks)."""
    if device not in DEVICE_CHOICES:
        raise ValueError(f"device must be one of {', '.join(DEVICE_CHOICES)}, got {device!r}")
    if device == "gpu":
        import tang.gpu as gpu  # here: demos that never touch a GPU do not import tang.gpu

        return "browser" if gpu.in_browser() else "native"
    return None if device == "auto" else device


def finite_param(value: Any, name: str) -> float:
    """``value`` as a float, or a ValueError naming the parameter when it is not a finite
    number (booleans, strings, nan and inf included)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def finite_or_none(v: float, digits: int | None = None) -> float | None:
    """``v`` for JSON: None when nan or infinite, else rounded to ``digits`` decimals (if
    given). For numbers the page draws, where a missing point is clearer than a string."""
    v = float(v)
    if not math.isfinite(v):
        return None
    return v if digits is None else round(v, digits)


class SessionState(dict):
    """A demo's state in the worker between calls (a dict); ``reset()`` empties it."""

    def reset(self) -> None:
        """Forget everything (the page's Reset, or a test starting clean)."""
        self.clear()


_SESSIONS: dict[str, SessionState] = {}


def session_state(prefix: str) -> SessionState:
    """The state kept for the demo ``prefix`` (one per worker: one page talks to it); the
    same object on every call, so a handler can keep what the next call needs::

        state = session_state("arm")
        state.setdefault("pose", REST_POSE)
    """
    if not prefix or not isinstance(prefix, str):
        raise ValueError(f"a session state needs a non-empty prefix, got {prefix!r}")
    return _SESSIONS.setdefault(prefix, SessionState())


class OneLineParser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def glue_values(argv: list[str], options: Iterable[str]) -> list[str]:
    """Each of ``options`` followed by its value as one word, ``--heading -90`` as
    ``--heading=-90``: argparse would read some values starting with '-' (``-1e3``,
    ``-300,-40``) as options."""
    glued = set(options)
    out: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg in glued:
            value = next(it, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out
