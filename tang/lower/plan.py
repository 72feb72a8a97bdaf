"""A plan: what a graph becomes before it meets a device (its inputs in order, its outputs
and their names). ``tang.compile`` makes plans of text and gradients and ``tang.gpu.batch``
runs them; it lives here, below both, so that the device layer never imports the compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..expr.graph import Graph, Node
from .program import schedule


@dataclass(frozen=True)
class Plan:
    """What a graph becomes before it meets a device: its inputs in order, outputs, names."""

    inputs: tuple[str, ...]
    outputs: tuple[Node, ...]
    names: tuple[str, ...]


def plan(
    outputs: Graph | Sequence[Node | float],
    inputs: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
) -> Plan:
    """Fix the inputs (default: the graph's, else the variables sorted by name) and names."""
    prog = schedule(outputs, inputs, output_names=names)  # validates inputs and outputs
    return Plan(prog.inputs, prog.outputs, prog.output_names)
