"""Fusion: substitute a producer's map into its consumer, so chains become one comprehension.

Three generic rewrites, repeated until none applies:

1. an element-wise producer (no reduction) is substituted into every consumer that reads it
   through an affine index: its body replaces the read, its reads compose with the index;
2. an element-wise consumer that reads a reduction at its own index (identity map), when
   that reduction has no other consumer, becomes the reduction's epilogue;
3. a reduction larger than each of its consumers' outputs is evaluated in place (``Inline``)
   where it is read, so the large intermediate is never written.

Producers left without consumers that are not outputs are dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from ..comprehension import (
    Comprehension,
    Inline,
    Load,
    TensorGraph,
    prune,
    prune_reads,
    substitute,
)
from ..view import IndexMap


def _replace_reads(comp: Comprehension, values: dict, reads: dict, shapes: dict) -> Comprehension:
    """``comp`` with read variables ``values`` (name → node) replaced, plus new reads."""
    from ...expr.graph import Graph, Node, const
    from ...expr.trace import replay

    out = replay(Graph((), list(comp.nodes())), values)
    out = [o if isinstance(o, Node) else const(o) for o in out]
    body = tuple(out[: len(comp.body)])
    epilogue = out[len(comp.body)] if comp.epilogue is not None else None
    merged = {k: v for k, v in comp.reads.items() if k not in values} | reads
    nodes = [*body, *([epilogue] if epilogue is not None else [])]
    return dataclasses.replace(
        comp,
        body=body,
        epilogue=epilogue,
        reads=prune_reads(merged, nodes),
        shapes={**comp.shapes, **shapes},
    )


def _is_elementwise(c: Comprehension) -> bool:
    return not c.reduce and all(isinstance(r, Load) for r in c.reads.values())


def _read_indices(producer: Comprehension, consumer: Comprehension) -> dict[str, IndexMap] | None:
    """Each of ``consumer``'s reads of ``producer`` (by read name) as an affine index into the
    producer's array, or None when one of them is not affine."""
    indices = {}
    for name, read in consumer.reads.items():
        if isinstance(read, Load) and read.source == producer.name:
            index = read.view.unravel(producer.shape)
            if index is None:
                return None
            indices[name] = index
    return indices


def _substitute_elementwise(
    producer: Comprehension, consumer: Comprehension
) -> Comprehension | None:
    """``consumer`` with every read of ``producer`` replaced by its body, or None when a read
    is not an affine index of the producer."""
    indices = _read_indices(producer, consumer)
    if indices is None:
        return None
    values, reads, shapes = {}, {}, {}
    for name, index in indices.items():
        (node,), new_reads = substitute(producer, producer.body, consumer.domain, index)
        values[name] = node
        reads |= new_reads
        shapes |= producer.shapes
    if not values:
        return None
    return _replace_reads(consumer, values, reads, shapes)


def _fold_epilogue(producer: Comprehension, consumer: Comprehension) -> Comprehension | None:
    """``producer`` with the element-wise ``consumer`` as its epilogue, when the consumer
    reads it once, at its own index."""
    if consumer.reduce or producer.shape != consumer.shape:
        return None
    mine = [
        n for n, r in consumer.reads.items() if isinstance(r, Load) and r.source == producer.name
    ]
    if len(mine) != 1 or any(isinstance(r, Inline) for r in consumer.reads.values()):
        return None
    index = consumer.reads[mine[0]].view.unravel(producer.shape)
    rank = len(producer.shape)
    if index != IndexMap.identity(producer.shape):
        return None
    domain = producer.domain
    lift = IndexMap(
        tuple(e for _, e in domain),
        tuple(tuple(int(u == k) for u in range(len(domain))) for k in range(rank)),
        (0,) * rank,
    )
    state = producer.epilogue if producer.epilogue is not None else _state(producer)
    if state is None:
        return None
    (epilogue,), reads = substitute(consumer, [consumer.body[0]], domain, lift, {mine[0]: state})
    return dataclasses.replace(
        producer,
        name=consumer.name,
        epilogue=epilogue,
        reads={**producer.reads, **reads},
        shapes={
            **producer.shapes,
            **{k: v for k, v in consumer.shapes.items() if k != producer.name},
        },
    ).validate()


def _state(comp: Comprehension):
    from ...expr.graph import var

    if comp.monoid is None or comp.monoid.arity != 1:
        return None
    return var(comp.monoid.state[0])


def _inline(producer: Comprehension, consumer: Comprehension) -> Comprehension | None:
    """``consumer`` reading ``producer`` in place (Inline) instead of from memory."""
    values, reads = {}, {}
    from ..comprehension import Reads

    indices = _read_indices(producer, consumer)
    if indices is None:
        return None
    builder = Reads(consumer.names, consumer.shapes)
    for name, index in indices.items():
        values[name] = builder.add(Inline(producer, index))
    if not values:
        return None
    reads = builder.reads
    return _replace_reads(consumer, values, reads, producer.shapes)


def fuse(graph: TensorGraph) -> TensorGraph:
    """The graph with producers substituted into consumers (see the module docstring)."""
    comps = list(graph.comprehensions)
    outputs = set(graph.outputs)
    changed = True
    while changed:
        changed = False
        for rule in (_rule_elementwise, _rule_epilogue, _rule_inline):
            new = rule(comps, outputs)
            if new is not None:
                comps = new
                changed = True
                break
    return prune(graph.rebuilt(comps))


def _consumers(comps: list[Comprehension], name: str) -> list[int]:
    return [k for k, c in enumerate(comps) if name in c.sources()]


def _internal_reductions(
    comps: list[Comprehension], outputs: set[str]
) -> Iterator[tuple[Comprehension, list[int]]]:
    """Each reduction that is not a graph output, with the indices of its consumers: the
    candidates of the epilogue and inline rules."""
    for p in comps:
        if p.reduce and p.name not in outputs:
            yield p, _consumers(comps, p.name)


def _rule_elementwise(comps: list[Comprehension], outputs: set[str]) -> list[Comprehension] | None:
    for p in comps:
        if not _is_elementwise(p):
            continue
        users = _consumers(comps, p.name)
        done = False
        new = list(comps)
        for k in users:
            fused = _substitute_elementwise(p, comps[k])
            if fused is not None:
                new[k] = fused
                done = True
        if done:
            return _drop_dead(new, outputs)
    return None


def _rule_epilogue(comps: list[Comprehension], outputs: set[str]) -> list[Comprehension] | None:
    for p, users in _internal_reductions(comps, outputs):
        if len(users) != 1:
            continue
        fused = _fold_epilogue(p, comps[users[0]])
        if fused is None:
            continue
        new = [c for c in comps if c is not p]
        new[new.index(comps[users[0]])] = fused
        return new
    return None


def _rule_inline(comps: list[Comprehension], outputs: set[str]) -> list[Comprehension] | None:
    for p, users in _internal_reductions(comps, outputs):
        if not users or any(comps[k].size >= p.size for k in users):
            continue
        new = list(comps)
        for k in users:
            fused = _inline(p, comps[k])
            if fused is None:
                break
            new[k] = fused
        else:
            return _drop_dead(new, outputs)
    return None


def _drop_dead(comps: list[Comprehension], outputs: set[str]) -> list[Comprehension]:
    """Remove comprehensions nothing reads that are not outputs (until none is left)."""
    while True:
        read = set().union(*(c.sources() for c in comps)) if comps else set()
        keep = [c for c in comps if c.name in outputs or c.name in read]
        if len(keep) == len(comps):
            return keep
        comps = keep
