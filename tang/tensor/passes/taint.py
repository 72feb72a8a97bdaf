"""The taint pass: which buffers of a graph derive from its secret inputs, and every place
where secret data could steer time: a branch on it, a memory position taken from it, or an
operation whose time depends on its operands. Generic over graphs, like the other passes:
it reads the dependence structure and the op registry's facts, never what a graph computes.

A comprehension's loops and views are fixed by its shape (an affine map of the loop
indices), so the only data-dependent memory position is a sum pinned by data
(``schedule.data_pin``: a gather); the only branch is a select (a comparison can be
nothing but a select's condition); and the registry marks the variable-time ops (a divide,
a remainder, a math-library call). A monoid whose combine compares (max, min) is a select
on every element it reduces.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...expr.graph import BOOL_OPS, Node, topo_order, var
from ...expr.ops import VARIABLE_TIME
from ..comprehension import Comprehension, Inline, Load, TensorGraph, TensorIRError
from .schedule import data_pin

Sources = frozenset[str]
NONE: Sources = frozenset()

KINDS = {
    "branch": "a branch on secret data",
    "index": "a memory position taken from secret data",
    "variable-time": "an operation whose time depends on secret data",
}


@dataclass(frozen=True)
class Leak:
    """One place where secret inputs ``sources`` steer time: its ``kind`` (a key of
    ``KINDS``), the comprehension writing ``buffer``, the code that defined it
    (``origin``, file:line) and the offending expression (``expression``)."""

    kind: str
    buffer: str
    origin: str
    expression: str
    sources: tuple[str, ...]

    def __str__(self) -> str:
        where = f" (defined at {self.origin})" if self.origin else ""
        return (
            f"{self.buffer}{where}: {KINDS[self.kind]} ({', '.join(self.sources)}): "
            f"{self.expression}"
        )


class TaintError(TensorIRError):
    """A graph that is not constant-time in its secret inputs; ``leaks`` lists each place."""

    def __init__(self, leaks: list[Leak]) -> None:
        self.leaks = leaks
        lines = "\n  ".join(str(leak) for leak in leaks)
        super().__init__(f"{len(leaks)} secret-dependent timing leak(s):\n  {lines}")


def _text(node: Node, limit: int = 160) -> str:
    from ..printing import format_node

    text = format_node(node)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_branch(node: Node) -> bool:
    return any(a.op in BOOL_OPS for a in node.args)


def _has_branch(nodes: Iterable[Node]) -> bool:
    return any(_is_branch(n) for n in topo_order(nodes))


def _scan(
    comp: Comprehension, taint: Mapping[str, Sources], leaks: list[Leak], name: str
) -> Sources:
    """The secret sources ``comp``'s value depends on; its leaks appended to ``leaks``."""
    of: dict[Node, Sources] = {}
    for read_name, read in comp.reads.items():
        if isinstance(read, Load):
            of[var(read_name)] = taint.get(read.source, NONE)
        elif isinstance(read, Inline):
            of[var(read_name)] = _scan(read.comp, taint, leaks, name)

    def report(kind: str, node: Node, sources: Sources) -> None:
        leaks.append(Leak(kind, name, comp.origin, _text(node), tuple(sorted(sources))))

    pinned = data_pin(comp)  # (variable, the position read from data) of a gather
    for node in topo_order(comp.body):
        if node not in of:
            sources: Sources = NONE
            for a in node.args:
                sources |= of.get(a, NONE)
            of[node] = sources
        if not node.args:
            continue
        if pinned is not None and node is comp.body[0] and of.get(pinned[1]):
            report("index", node, of[pinned[1]])
            continue
        if _is_branch(node) and of.get(node.args[0], NONE):
            report("branch", node, of[node.args[0]])
        if node.op in VARIABLE_TIME and of[node]:
            report("variable-time", node, of[node])
    value: Sources = NONE
    for node in comp.body:
        value |= of[node]
    if comp.monoid is not None and value:
        combine = comp.monoid.combine
        if _has_branch(combine) or any(n.op in VARIABLE_TIME for n in topo_order(combine)):
            leaks.append(
                Leak(
                    "branch",
                    name,
                    comp.origin,
                    f"a {comp.monoid.name} reduction of {_text(comp.body[0])}",
                    tuple(sorted(value)),
                )
            )
    if comp.epilogue is not None and value:
        for node in topo_order([comp.epilogue]):
            if node.args and (_is_branch(node) or node.op in VARIABLE_TIME):
                report("branch" if _is_branch(node) else "variable-time", node, value)
    return value


def secrets(graph: TensorGraph, secret: Iterable[str]) -> dict[str, Sources]:
    """Each buffer of ``graph`` (inputs and comprehensions) → the secret inputs it derives
    from (empty: public)."""
    return _propagate(graph, secret, [])


def leaks(graph: TensorGraph, secret: Iterable[str]) -> list[Leak]:
    """Every place in ``graph`` where the inputs named in ``secret`` steer time."""
    found: list[Leak] = []
    _propagate(graph, secret, found)
    return found


def check(graph: TensorGraph, secret: Iterable[str]) -> dict[str, Sources]:
    """``secrets(graph, secret)``, or a ``TaintError`` naming every leak."""
    found: list[Leak] = []
    taint = _propagate(graph, secret, found)
    if found:
        raise TaintError(found)
    return taint


def _propagate(graph: TensorGraph, secret: Iterable[str], found: list[Leak]) -> dict[str, Sources]:
    secret = list(secret)
    unknown = [s for s in secret if s not in graph.inputs]
    if unknown:
        raise TensorIRError(
            f"{unknown[0]!r} is not an input of the graph (its inputs: {', '.join(graph.inputs)})"
        )
    taint: dict[str, Sources] = {n: frozenset([n]) if n in secret else NONE for n in graph.inputs}
    for comp in graph.comprehensions:
        taint[comp.name] = _scan(comp, taint, found, comp.name)
    return taint


__all__ = ["KINDS", "Leak", "TaintError", "check", "leaks", "secrets"]
