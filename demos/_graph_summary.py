"""Which part of a large graph the page draws: the outputs and the nodes nearest them.

A graph past the drawing limit is cut by distance from its outputs (breadth first, nearest
first), and every operand left out becomes one collapsed box that stands for the hidden
nodes first reached through it, so the boxes' counts add up to exactly what is not drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tang.expr.graph import Node


@dataclass(frozen=True)
class Summary:
    """``shown``: the nodes drawn, children first; ``stubs``: each collapsed operand with
    the number of hidden nodes it stands for (itself included)."""

    shown: list[Node]
    stubs: dict[Node, int]

    @property
    def hidden(self) -> int:
        return sum(self.stubs.values())


def summarize(outputs: Sequence[Node], order: Sequence[Node], limit: int) -> Summary:
    """The nodes nearest ``outputs`` (``order``: every node, children first) such that they
    and the boxes for their hidden operands number at most ``limit`` (the outputs are always
    drawn)."""
    shown: set[Node] = set()
    stubs: dict[Node, None] = {}  # insertion-ordered: the order boxes were met in
    queue = list(dict.fromkeys(outputs))
    head = 0
    while head < len(queue):
        node = queue[head]
        head += 1
        if node in shown:
            continue
        new = [a for a in dict.fromkeys(node.args) if a not in shown and a not in stubs]
        grows = (0 if node in stubs else 1) + len(new)
        if len(shown) + len(stubs) + grows > limit and node not in outputs:
            break
        stubs.pop(node, None)
        shown.add(node)
        for a in new:
            stubs[a] = None
        queue.extend(new)
    counts = _hidden_counts(list(stubs), shown)
    return Summary([n for n in order if n in shown], counts)


def _hidden_counts(stubs: list[Node], shown: set[Node]) -> dict[Node, int]:
    """For each stub, the hidden nodes first reached through it (one walk over them all)."""
    seen: set[Node] = set(shown) | set(stubs)
    counts: dict[Node, int] = {}
    for stub in stubs:
        count = 0
        stack = [stub]
        while stack:
            node = stack.pop()
            count += 1
            for a in node.args:
                if a not in seen:
                    seen.add(a)
                    stack.append(a)
        counts[stub] = count
    return counts
