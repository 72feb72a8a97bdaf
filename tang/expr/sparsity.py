"""Which outputs depend on which inputs: one forward sweep of bitsets over the graph.

Python ints are bitsets of any width, so there is no 64-input limit: bit i of an output's
mask is set when the output depends on ``graph.inputs[i]``.
"""

from __future__ import annotations

from .graph import Graph, topo_order


def dependency_masks(graph: Graph, *, through_conditions: bool = False) -> list[int]:
    """One bitmask per output. By default a select's condition does not count (its
    derivative is zero, so this is the Jacobian's structural sparsity); with
    ``through_conditions=True`` every input that can change an output's value counts."""
    bit = {name: 1 << i for i, name in enumerate(graph.inputs)}
    mask: dict[int, int] = {}
    for node in topo_order(graph.outputs):
        if node.op == "var":
            m = bit.get(node.name, 0)  # type: ignore[arg-type]
        else:
            args = node.args[1:] if node.op == "select" and not through_conditions else node.args
            m = 0
            for a in args:
                m |= mask[id(a)]
        mask[id(node)] = m
    return [mask[id(o)] for o in graph.outputs]


def jacobian_sparsity(graph: Graph) -> list[list[bool]]:
    """The Jacobian's structural nonzeros: row i, column j is True when output i can have a
    nonzero derivative with respect to input j."""
    n = len(graph.inputs)
    return [[bool(m >> j & 1) for j in range(n)] for m in dependency_masks(graph)]
