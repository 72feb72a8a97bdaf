"""Reverse-mode gradient of a comprehension graph: every op's backward is derived, not written.

For a comprehension ``C[o] = ⊕_r f(reads, o, r)`` and its adjoint ``Ĉ``, a read ``x[v(o, r)]``
receives ``Ĉ[o] · ∂⊕/∂f · ∂f/∂read`` at every index where the view lands: the adjoint of a
read through a view is a reduction over the *transposed* index map. The map is solved for the
comprehension's variables where an output axis of ``x`` pins one (coefficient ±1); an axis
read at a mixed-radix combination (``i·stride + j``, ``j < stride``) is first split into one
digit per variable, so the adjoint is a gather over a finer shape of the same memory. The
rest are summed over, with equality and range guards where the map does not cover ``x``
exactly.
``∂f/∂read`` comes from ``tang.expr.grad.backward`` on the body; ``∂⊕/∂f`` from the monoid.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from ...expr.grad import backward
from ...expr.graph import Node, const, eq, le, lt, maximum, mul, select
from ..comprehension import (
    SUM,
    Comprehension,
    Inline,
    Load,
    Reads,
    TensorGraph,
    TensorIRError,
    affine_node,
    contiguous_load,
    index_names,
    reduce_names,
    rename,
    substitute,
)
from ..view import IndexMap, row_major


def grad(
    graph: TensorGraph, output: str | None = None, wrt: Sequence[str] | None = None
) -> TensorGraph:
    """The graph extended with the vector-Jacobian product of ``output``: a new input
    ``d_<output>`` (the cotangent, shaped like the output) and outputs ``d_<w>`` for each
    input ``w`` in ``wrt`` (default: all inputs), after the original outputs."""
    if output is None:
        if len(graph.outputs) != 1:
            raise TensorIRError(
                f"grad: name the output to differentiate among {list(graph.outputs)}"
            )
        output = graph.outputs[0]
    if output not in graph.outputs:
        raise TensorIRError(f"grad: {output!r} is not an output of the graph")
    if wrt is None:  # packed inputs are stored data (codes, scales), not parameters
        wrt = [n for n in graph.inputs if n not in graph.packed]
    wrt = list(wrt)
    for w in wrt:
        if w not in graph.inputs:
            raise TensorIRError(f"grad: {w!r} is not an input of the graph")
        if w in graph.packed:
            raise TensorIRError(f"grad: {w!r} is a packed input (stored codes have no gradient)")
    used = set(graph.inputs) | {c.name for c in graph.comprehensions}

    def fresh(base: str) -> str:
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        return name

    seed = fresh(f"d_{output}")
    final = {w: fresh(f"d_{w}") for w in wrt}
    shapes = {**graph.inputs, seed: graph.output_shape(output)}
    shapes |= {c.name: c.shape for c in graph.comprehensions}
    depends = set(wrt)
    for c in graph.comprehensions:
        if c.sources() & depends and not c.stop_gradient:
            depends.add(c.name)
    comps = list(graph.comprehensions)
    adjoints: dict[str, list[str]] = {output: [seed]}
    for c in reversed(graph.comprehensions):
        parts = adjoints.pop(c.name, None)
        if parts is None or c.name not in depends:
            continue
        total = _total(parts, c.shape, fresh(f"d_{c.name}"), comps, shapes)
        ties = None
        if c.reduce and c.monoid is not None and c.monoid.shared:
            tied = _tie_count(c, fresh(f"n_{c.name}"), shapes)
            comps.append(tied)
            shapes[tied.name] = tied.shape
            ties = tied.name
        for read_name, read in c.reads.items():
            if not isinstance(read, Load) or read.source not in depends:
                continue
            contribution = _contribution(
                c, total, read_name, read, shapes, fresh(f"d_{read.source}"), ties
            )
            if contribution is not None:
                comps.append(contribution)
                shapes[contribution.name] = contribution.shape
                adjoints.setdefault(read.source, []).append(contribution.name)
    output_shapes = dict(graph.output_shapes)
    for w in wrt:
        parts = adjoints.get(w, [])
        if len(parts) == 1:  # one contribution: it is the gradient (nothing else reads it)
            at = [c.name for c in comps].index(parts[0])
            comps[at] = rename(comps[at], final[w], {})
            if comps[at].shape != graph.inputs[w]:  # the same memory, split finer
                output_shapes[final[w]] = graph.inputs[w]
        else:
            comps.append(_sum(final[w], parts, graph.inputs[w], shapes))
    return TensorGraph(
        {**graph.inputs, seed: shapes[seed]},
        comps,
        [*graph.outputs, *final.values()],
        output_shapes,
        graph.packed,
    )


def _sum(name: str, parts: Sequence[str], shape: tuple[int, ...], shapes: dict) -> Comprehension:
    """The element-wise sum of the buffers ``parts`` (zero when there are none)."""
    names = index_names(len(shape))
    reads = Reads(names, shapes)
    body: Node = const(0.0)
    for k, p in enumerate(parts):
        term = contiguous_load(reads, p, shape, range(len(shape)), shape)
        body = term if k == 0 else body + term
    return Comprehension(
        name, shape, names, (), None, (body,), reads.reads, None, {p: shapes[p] for p in parts}
    ).validate()


def _total(parts: list[str], shape, name: str, comps: list, shapes: dict) -> str:
    if len(parts) == 1:
        return parts[0]
    total = _sum(name, parts, shape, shapes)
    comps.append(total)
    shapes[name] = shape
    return name


def _tie_count(c: Comprehension, name: str, shapes: dict) -> Comprehension:
    """How many elements of each of ``c``'s reductions equal its total (an extremum's ties,
    which share its gradient)."""
    reads = Reads(c.names, shapes)
    rank = len(c.shape)
    total = contiguous_load(reads, c.name, c.shape, range(rank), c.extents)
    body = select(eq(c.body[0], total), 1.0, 0.0)
    return dataclasses.replace(
        c,
        name=name,
        reads={**c.reads, **reads.reads},
        shapes={**c.shapes, c.name: c.shape},
        body=(body,),
        monoid=SUM,
        stop_gradient=True,
    ).validate()


def _contribution(
    c: Comprehension,
    adjoint: str,
    read_name: str,
    read: Load,
    shapes: dict,
    name: str,
    ties: str | None = None,
) -> Comprehension | None:
    """What ``read`` of ``c`` adds to the adjoint of its source (None when nothing);
    ``ties``: the buffer counting the elements that share each total's gradient."""
    if c.epilogue is not None or any(isinstance(r, Inline) for r in c.reads.values()):
        raise TensorIRError(
            f"grad: {c.name} has an epilogue or inline reads; differentiate before fuse"
        )
    (partial,) = backward(c.body[0], [read_name])
    if partial.op == "const" and partial.value == 0.0:
        return None
    reads = Reads(c.names, shapes)
    rank = len(c.shape)
    term = contiguous_load(reads, adjoint, c.shape, range(rank), c.extents)
    if not (partial.op == "const" and partial.value == 1.0):
        term = mul(term, partial)
    if c.reduce:
        rule = c.monoid.partial if c.monoid is not None else None
        if rule is None:
            raise TensorIRError(f"grad: the monoid of {c.name} ({c.monoid.name}) has no derivative")  # type: ignore[union-attr]
        total = contiguous_load(reads, c.name, c.shape, range(rank), c.extents)
        weight = rule(total, c.body[0])
        if ties is not None:  # shared by the tied elements (none where the total is nan)
            tied = contiguous_load(reads, ties, c.shape, range(rank), c.extents)
            weight = weight / maximum(tied, 1.0)
        if not (weight.op == "const" and weight.value == 1.0):
            term = mul(term, weight)
    extended = dataclasses.replace(
        c,
        reads={**c.reads, **reads.reads},
        shapes={**c.shapes, adjoint: shapes[adjoint], c.name: c.shape}
        | ({ties: c.shape} if ties else {}),
        body=(term,),
        monoid=None,
        reduce=c.reduce,
    )
    return _transpose(extended, term, read, shapes[read.source], name)


def _digits(
    n: int, row: Sequence[int], c0: int, extents: Sequence[int]
) -> list[tuple[int, tuple[int, ...], int]] | None:
    """An axis of extent ``n`` read at ``Σ row[v]·v + c0`` split into mixed-radix digits,
    most significant first: ``(radix, coefficients, constant)`` with the digit equal to
    ``±v + constant`` for one variable ``v`` (a constant alone for a fixed low digit).
    A negative stride counts its variable down (``v' = e − 1 − v``). None when the map is
    solvable as it stands or is not one-to-one digit by digit (equal or overlapping
    strides, a negative offset)."""
    unknown = sorted(
        (abs(k), v, 1 if k > 0 else -1) for v, k in enumerate(row) if k and extents[v] > 1
    )
    if not unknown or (len(unknown) == 1 and unknown[0][0] == 1):
        return None
    c0 -= sum(k * (extents[v] - 1) for k, v, sign in unknown if sign < 0)
    if c0 < 0:
        return None
    width = len(row)
    low = unknown[0][0]
    digits = [(low, (0,) * width, c0 % low)] if low > 1 else []
    for at, (k, v, sign) in enumerate(unknown):
        top = at == len(unknown) - 1
        above = n if top else unknown[at + 1][0]
        if above % k:
            return None
        radix = above // k
        digit = c0 // k if top else (c0 // k) % radix
        if not top and digit + extents[v] > radix:  # the digit would carry: not one-to-one
            return None
        coeffs = tuple(sign * int(u == v) for u in range(width))
        digits.append((radix, coeffs, digit + (extents[v] - 1 if sign < 0 else 0)))
    return digits[::-1]


def _refine(
    axes: Sequence[tuple[int, Sequence[int], int]], extents: Sequence[int]
) -> tuple[tuple[int, ...], list] | None:
    """The source's row-major memory as a finer shape in which every axis read at a
    mixed-radix combination of variables (``i·stride + j`` with ``j < stride``) becomes one
    axis per variable: then each variable is solved directly instead of summed over with
    an equality guard. ``axes``: (extent, coefficients, constant) per source axis. Returns
    (shape, equations), or None when no axis splits."""
    parts: list[tuple[int, tuple[int, ...], int]] = []
    split = False
    for n, row, c0 in axes:
        digits = _digits(n, row, c0, extents)
        if digits is None:
            parts.append((n, tuple(row), c0))
            continue
        split = True
        parts.extend(digits)
    if not split:
        return None
    rank = len(parts)
    equations = [
        (tuple(int(a == b) for b in range(rank)), row, c0) for a, (_, row, c0) in enumerate(parts)
    ]
    return tuple(n for n, _, _ in parts), equations


def _transpose(
    c: Comprehension, term: Node, read: Load, shape: tuple[int, ...], name: str
) -> Comprehension:
    """``term`` (over c's domain) summed into the source's index space: the read's index
    map solved for c's variables, the unsolved ones reduced, guards where needed."""
    extents = c.extents
    rank = len(shape)
    index = read.view.unravel(shape)
    if index is None:  # no row-major index: match flat positions
        axes = [(math.prod(shape), read.view.strides, read.view.offset)]
        equations = [(row_major(shape), read.view.strides, read.view.offset)]
    else:
        axes = [(shape[a], index.rows[a], index.consts[a]) for a in range(rank)]
        equations = [
            (tuple(int(a == b) for b in range(rank)), index.rows[a], index.consts[a])
            for a in range(rank)
        ]
    refined = _refine(axes, extents)
    if refined is not None:  # the adjoint's domain: the source's memory split into digits
        shape, equations = refined
        rank = len(shape)
    # solved variable -> (coefficients over the source's index, constant)
    solved: dict[int, tuple[tuple[int, ...], int]] = {
        v: ((0,) * rank, 0) for v, e in enumerate(extents) if e == 1
    }
    pending = list(equations)
    progress = True
    while progress:
        progress = False
        for eqn in list(pending):
            lhs, row, c0 = eqn
            unknown = [v for v, k in enumerate(row) if k and v not in solved]
            if len(unknown) != 1 or row[unknown[0]] not in (1, -1):
                continue
            v = unknown[0]
            k = row[v]
            coeffs = list(lhs)
            const_ = -c0
            for u, ku in enumerate(row):
                if u != v and ku:
                    su, cu = solved[u]
                    coeffs = [a - ku * b for a, b in zip(coeffs, su)]
                    const_ -= ku * cu
            solved[v] = (tuple(k * a for a in coeffs), k * const_)
            pending.remove(eqn)
            progress = True
    free = [v for v in range(len(extents)) if v not in solved]
    names = index_names(rank) + reduce_names(len(free))
    domain = tuple(zip(names, tuple(shape) + tuple(extents[v] for v in free)))
    width = len(domain)
    rows, consts = [], []
    for v in range(len(extents)):
        if v in solved:
            coeffs, k0 = solved[v]
            rows.append(tuple(coeffs) + (0,) * len(free))
            consts.append(k0)
        else:
            rows.append(tuple(int(u == rank + free.index(v)) for u in range(width)))
            consts.append(0)
    imap = IndexMap(tuple(e for _, e in domain), tuple(rows), tuple(consts))
    (body,), reads = substitute(c, [term], domain, imap)
    guards = []
    for lhs, row, c0 in pending:  # equations no variable could be solved from
        left = affine_node(tuple(lhs) + (0,) * len(free), 0, names)
        right_row = [sum(k * imap.rows[v][u] for v, k in enumerate(row)) for u in range(width)]
        right_const = c0 + sum(k * imap.consts[v] for v, k in enumerate(row))
        left_row = tuple(lhs) + (0,) * len(free)
        differs = [a - b for a, b in zip(left_row, right_row)]
        if right_const == 0 and all(d == 0 or e == 1 for d, (_, e) in zip(differs, domain)):
            continue  # the two sides agree everywhere (they differ only on extent-1 axes)
        guards.append(eq(left, affine_node(right_row, right_const, names)))
    for v, (coeffs, k0) in solved.items():  # a solved variable must stay in its range
        lo = k0 + sum(min(0, a * (n - 1)) for a, n in zip(coeffs, shape))
        hi = k0 + sum(max(0, a * (n - 1)) for a, n in zip(coeffs, shape))
        value = affine_node(tuple(coeffs) + (0,) * len(free), k0, names)
        if lo < 0:
            guards.append(le(0.0, value))
        if hi >= extents[v]:
            guards.append(lt(value, float(extents[v])))
    for g in guards:
        body = select(g, body, 0.0)
    reduce = domain[rank:]
    return Comprehension(
        name,
        tuple(shape),
        names[:rank],
        reduce,
        SUM if reduce else None,
        (body,),
        reads,
        None,
        dict(c.shapes),
    ).validate()


__all__ = ["grad"]
