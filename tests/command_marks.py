"""Which pytest marks a command-line example carries, by what it does: one rule for the
README's commands (tests/test_readme.py) and the page's example list (tests/test_examples.py).

- ``toolchain``: it opens the best GPU device, which is wgpu-py where it has an adapter, or
  runs the C compiler or valgrind (tang.crypto's C file and its check);
- ``slow``: it trains a model for seconds of CPU (out of the fast lane, in the full suite).
"""

from __future__ import annotations

import shlex

import pytest

OPENS_A_DEVICE = ("tang run", "demos.transformer", "demos.llm")
COMPILES = ("tang.crypto c", "tang.crypto valgrind")
TRAINS = ("demos.quantum_poet",)


def marks_for(command: str) -> list[pytest.MarkDecorator]:
    """The marks of one ``python -m …`` command line."""
    argv = shlex.split(command)
    text = " ".join(argv[2:4])
    marks = []
    if any(text.startswith(m) for m in OPENS_A_DEVICE) or text in COMPILES:
        marks.append(pytest.mark.toolchain)
    if any(text.startswith(m) for m in TRAINS) and "--epochs" in argv:
        epochs = argv[argv.index("--epochs") + 1]
        if epochs != "0":
            marks.append(pytest.mark.slow)
    return marks
