"""Run an integer tensor graph (``dtype`` "i64") as tang's printed loop nest: pure Python
(``lower_graph(…, "python")``, exact integers), or C compiled by the system compiler at
``-O2`` and called through ctypes. Both are printed from the same graph by the printers'
tables; nothing here knows what the graph computes."""

from __future__ import annotations

import ctypes
import math
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..tensor.comprehension import TensorGraph
from ..tensor.kernels import load_python
from ..tensor.lower import buffer_order, lower_graph

LANGUAGES = ("python", "c")
C_FLAGS = ("-O2", "-shared", "-fPIC")


class Runner:
    """``graph`` printed once in ``language``; a call takes each input as a sequence of
    whole numbers (its elements row-major) and returns each output as a list of ints."""

    def __init__(self, graph: TensorGraph, language: str = "python", *, name: str = "run") -> None:
        if language not in LANGUAGES:
            raise ValueError(f"an integer graph runs as {' or '.join(LANGUAGES)}, not {language!r}")
        self.graph, self.language, self.name = graph, language, name
        self.source = lower_graph(graph, language, dtype="i64", name=name)
        self.order = buffer_order(graph)
        shapes = {**graph.inputs, **graph.buffers()}
        self.sizes = {n: math.prod(shapes[n]) for n in self.order}
        if language == "python":
            self._fn = load_python(self.source, name)
        else:
            fn = getattr(ctypes.CDLL(str(build_c(self.source))), name)
            fn.restype, fn.argtypes = None, [ctypes.c_void_p] * len(self.order)
            self._fn = fn

    def __call__(self, inputs: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
        missing = [n for n in self.graph.inputs if n not in inputs]
        if missing:
            raise KeyError(f"no value given for input {missing[0]!r}")
        for n in self.graph.inputs:
            if len(inputs[n]) != self.sizes[n]:
                raise ValueError(f"input {n} has {len(inputs[n])} elements, not {self.sizes[n]}")
        if self.language == "python":
            buffers = {
                n: list(inputs[n]) if n in self.graph.inputs else [0] * self.sizes[n]
                for n in self.order
            }
            self._fn(0, *buffers.values())
            return {n: buffers[n] for n in self.graph.outputs}
        arrays = {
            n: array("q", inputs[n])
            if n in self.graph.inputs
            else array("q", bytes(8 * self.sizes[n]))
            for n in self.order
        }
        self._fn(*[a.buffer_info()[0] for a in arrays.values()])
        return {n: arrays[n].tolist() for n in self.graph.outputs}


def build_c(source: str, flags: Sequence[str] = C_FLAGS) -> Path:
    """The shared library of C ``source`` built with ``flags`` by the system compiler, once
    per machine (``tang.gpu.native_c.build_library``'s cache)."""
    from ..gpu.errors import NoDeviceError
    from ..gpu.native_c import build_library, find_compiler

    compiler = find_compiler()
    if compiler is None:
        raise NoDeviceError("compiled C", "no C compiler on PATH (cc, gcc or clang; or set CC)")
    return build_library(compiler, flags, source)[0]


def run(graph: TensorGraph, inputs: Mapping[str, Sequence[int]], language: str = "python") -> Any:
    """``Runner(graph, language)(inputs)``, once."""
    return Runner(graph, language)(inputs)


__all__ = ["LANGUAGES", "Runner", "build_c", "run"]
