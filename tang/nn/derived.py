"""The ops of ``tang.nn`` that are not element-wise (products, reductions, moves, losses),
each defined once as a ``tang.tensor`` function; forward and backward are the op's
comprehension graph and the graph ``tang.tensor.grad`` derives from it.

:func:`program` builds both graphs once per op, shapes and wanted gradients, and translates
each comprehension into calls of a backend's array primitives by its structure alone (its
views, its body, its monoid; never an op's name), so the Python and numpy backends run the
same derived graphs at the speed of their own primitives:

- a copy through a view: nothing (same memory), a reshape, transpose, broadcast, or a gather
  of precomputed positions;
- a sum or max of one read: the backend's reduction over the read's axes;
- a sum over one axis of the product of two matrices: the backend's ``matmul`` (a constant
  one-hot operand: a row gather, and its adjoint a scatter-add);
- a sum that keeps one element where an index equals a number read from a buffer
  (``tensor.take`` and its adjoint): a gather or scatter-add of positions read at run time;
- any other body: ``B.map`` of the body over the reads and index variables it uses,
  broadcast over the domain, then the reduction, then the epilogue (``B.map`` again);
- what none of these covers (a product or min monoid, a state of several numbers): the
  IR's reference evaluator.

The graphs go through ``tang.tensor.fuse`` first, so an element-wise chain is one ``map``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..expr.graph import Node, replace_nodes, topo_order, var
from .hot import Hot
from .maps import Scalar
from .ops import Op

Array = Any
Env = dict[str, Array]
Step = Callable[[Any, Env], Array]

VALUE, SEED = "y", "d_y"


class Derived(Op):
    """``define(*tensors, *params)`` as an op of ``tang.nn``: ``define`` is the name of an op
    of ``tang.tensor`` or a module-level function composing them. ``hot`` maps an input's
    position to its hot columns per row where it is a constant one-hot matrix (products
    with it are gathers)."""

    def __init__(
        self,
        define: str | Callable[..., Any],
        *params: Any,
        hot: dict[int, Hot] | None = None,
    ) -> None:
        self.define, self.params, self.hot = define, params, hot or {}

    def forward(self, B, *xs):
        shapes = tuple([x.shape for x in xs])
        key = (self.define, self.params, shapes, self.needs, tuple(self.hot))
        prog = _PROGRAMS.get(key)
        if prog is None:
            if len(_PROGRAMS) >= PROGRAMS_KEPT:
                del _PROGRAMS[next(iter(_PROGRAMS))]  # the oldest
            prog = _PROGRAMS[key] = program(
                self.define, self.params, shapes, self.needs, frozenset(self.hot)
            )
        self.program = prog
        env: Env = dict(zip(prog.inputs, xs))
        for k, hot in self.hot.items():
            env[f"hot:x{k}"] = hot
        if prog.maps:
            with B.ieee():  # one IEEE context for the op's maps, not one per map
                for name, step in prog.forward:
                    env[name] = step(B, env)
        else:
            for name, step in prog.forward:
                env[name] = step(B, env)
        self.env = {k: env[k] for k in prog.keep} if prog.keep else {}
        y = env[VALUE]
        return y if y.shape == prog.out_shape else B.reshape(y, prog.out_shape)

    def backward(self, B, g):
        prog = self.program
        env = {**self.env, SEED: g}  # the forward's buffers stay for another backward
        for name, step in prog.backward:
            env[name] = step(B, env)
        grads = [None if name is None else env[name] for name in prog.grad_names]
        if prog.reshaped:  # a gradient computed over a finer shape of the same memory
            grads = [g if g is None else _reshaped(B, g, s) for g, (_, s) in zip(grads, prog.grads)]
        return grads


_PROGRAMS: dict[Any, Program] = {}  # by op, parameters, shapes, wanted gradients
PROGRAMS_KEPT = 1024


class Program:
    """Steps that compute an op's value (``forward``) and its inputs' gradients
    (``backward``) from named arrays: the inputs ``x0, x1…``, the seed ``d_y``, and the
    buffers of the steps before; ``keep``: the forward buffers the backward reads."""

    def __init__(self, forward, backward, keep, out_shape, grads) -> None:
        self.forward: list[tuple[str, Step]] = forward
        self.backward: list[tuple[str, Step]] = backward
        self.keep: tuple[str, ...] = keep
        self.out_shape: tuple[int, ...] = out_shape
        self.grads: tuple[tuple[str | None, tuple[int, ...]], ...] = grads
        self.inputs = tuple(f"x{k}" for k in range(len(grads)))
        self.grad_names = tuple(name for name, _ in grads)
        self.reshaped = False  # set by program() when a gradient's buffer has another shape
        self.maps = any(  # the forward runs B.map: one IEEE context for all of them
            step.kind in MAPS or hasattr(step, "epilogue") for _, step in forward
        )


MAPS = ("mapped", "gather", "scatter_add")  # kinds of step that run B.map (their fallback)


def program(
    define: str | Callable[..., Any],
    params: tuple[Any, ...],
    shapes: tuple[tuple[int, ...], ...],
    needs: tuple[bool, ...],
    hot: frozenset[int] = frozenset(),
) -> Program:
    """The steps of ``define(*inputs, *params)`` on inputs of ``shapes`` and of its gradient
    with respect to the inputs ``needs`` marks (see the module docstring)."""
    from .. import tensor

    if isinstance(define, str):
        define = tensor.ops.OPS[define]
    names = [f"x{k}" for k in range(len(shapes))]
    inputs = [_input(n, s) for n, s in zip(names, shapes)]
    graph = tensor.graph(**{VALUE: define(*inputs, *params)})
    wrt = [n for n, need in zip(names, needs) if need]
    full = tensor.grad(graph, VALUE, wrt) if wrt else graph
    done = {c.name for c in graph.comprehensions}
    buffers = {**full.inputs, **full.buffers()}
    hot_names = {f"x{k}" for k in hot}
    comps = _materialized(tensor.fuse(tensor.prune(full)).comprehensions, buffers)
    steps = [(c.name, translate(c, buffers, hot_names)) for c in comps]
    forward = [s for s in steps if s[0] in done]
    backward = [s for s in steps if s[0] not in done]
    read_later = set()
    for c in comps:
        if c.name not in done:
            read_later |= c.sources()
    keep = tuple(sorted((read_later - {SEED}) & (done | set(names))))
    keep += tuple(f"hot:{n}" for n in sorted(hot_names) if n in read_later)
    grads = tuple(
        (f"d_{n}", full.output_shape(f"d_{n}")) if n in wrt else (None, s)
        for n, s in zip(names, shapes)
    )
    made = Program(forward, backward, keep, graph.output_shape(VALUE), grads)
    made.reshaped = any(n is not None and buffers[n] != s for n, s in grads)
    return made


def _materialized(comps: Sequence[Any], shapes: dict[str, tuple[int, ...]]) -> list[Any]:
    """``comps`` with each producer fusion evaluated in place (an ``Inline`` read) computed
    into its own buffer first and read through a view: a backend has no in-place
    evaluation, but it keeps the fused element-wise chains and epilogues. ``shapes`` gains
    the new buffers."""
    from ..tensor import Inline, Load
    from ..tensor.view import View, row_major

    out: list[Any] = []
    made: set[str] = set()

    def visit(comp: Any) -> Any:
        reads = dict(comp.reads)
        for name, read in comp.reads.items():
            if not isinstance(read, Inline):
                continue
            inner = read.comp
            if inner.name not in made:
                made.add(inner.name)
                out.append(visit(inner))
                shapes[inner.name] = inner.shape
            rm = row_major(inner.shape)
            strides = tuple(
                sum(r * row[v] for r, row in zip(rm, read.index.rows))
                for v in range(len(comp.extents))
            )
            offset = sum(r * c for r, c in zip(rm, read.index.consts))
            reads[name] = Load(inner.name, View(comp.extents, strides, offset))
        if reads == dict(comp.reads):
            return comp
        return dataclasses.replace(comp, reads=reads, shapes={**comp.shapes, **shapes})

    for comp in comps:
        out.append(visit(comp))
    return out


def _input(name: str, shape: tuple[int, ...]) -> Any:
    """``tensor.input``, an extent of 0 included: nn's tensors may be empty, and a domain
    with no elements becomes a step that fills the output (see ``translate``)."""
    from ..tensor.frontend import InputBuffer, Tensor
    from ..tensor.view import View

    return Tensor(InputBuffer(name, shape), View.contiguous(shape))


# ---------------------------------------------------------------------------------------
# one comprehension → one step


def translate(comp: Any, shapes: dict[str, tuple[int, ...]], hot: set[str]) -> Step:
    """The step computing ``comp`` from the arrays of the buffers it reads (the module
    docstring lists the cases, tried in order). Its ``kind`` names the case taken."""
    from ..tensor import Load

    if not math.prod(comp.extents):  # an empty domain: the monoid's identity, or nothing
        fill = comp.monoid.identity[0] if comp.reduce else 0.0
        return _tagged("empty", lambda B, env: B.full(comp.shape, fill))
    if not all(isinstance(r, Load) for r in comp.reads.values()):
        return _tagged("reference", _reference(comp, shapes))
    kind = comp.monoid.name if comp.reduce else None
    if kind not in (None, "sum", "max") or (comp.epilogue is not None and comp.monoid.arity > 1):
        return _tagged("reference", _reference(comp, shapes))
    if comp.epilogue is not None:
        bare = dataclasses.replace(comp, epilogue=None)
        bias = _bias(comp, shapes) if kind == "sum" else None
        product = _matmul(bare, shapes, hot, bias) if bias is not None else None
        if product is not None:
            return product
        return _with_epilogue(comp, translate(bare, shapes, hot), shapes)
    body = comp.body[0]
    if body.op == "var" and body.name in comp.reads:
        read = comp.reads[body.name]
        source = _source_axes(read.view, shapes[read.source], comp.extents)
        if kind is None:
            return _tagged("copy", _copy(comp, read, source, shapes[read.source]))
        if source is not None and _reads_every_reduced(comp, source):
            return _tagged("reduce_read", _reduce_read(comp, read.source, source, kind))
    if kind == "sum":
        special = _matmul(comp, shapes, hot) or _picked(comp, shapes)
        if special is not None:
            return special
    return _tagged("mapped", _mapped(comp, shapes, kind))


def _source_axes(view: Any, shape: tuple[int, ...], extents: tuple[int, ...]) -> list | None:
    """For a read that picks each axis of its row-major source by one domain variable: the
    domain position of each source axis (None for an axis of extent 1); else None."""
    if view.offset:
        return None
    by_stride, step = {}, 1
    for a in range(len(shape) - 1, -1, -1):
        if shape[a] > 1:
            by_stride[step] = a
        step *= shape[a]
    at: list[int | None] = [None] * len(shape)
    for v, (e, s) in enumerate(zip(extents, view.strides)):
        if e == 1 or s == 0:
            continue
        a = by_stride.get(s)
        if a is None or shape[a] != e or at[a] is not None:
            return None
        at[a] = v
    if any(p is None and n > 1 for p, n in zip(at, shape)):
        return None
    return at


def _reads_every_reduced(comp: Any, source: list) -> bool:
    first = len(comp.index)
    read = set(source)
    return all(v in read for v in range(first, len(comp.extents)) if comp.extents[v] > 1)


def _arranger(
    source: list, shape: tuple[int, ...], order: Sequence[int], extents: Sequence[int]
) -> Callable[[Any, Array], Array]:
    """``f(B, array)``: the source's axes put in ``order`` (domain positions), with an axis
    of extent 1 for each position the source does not read (ready to broadcast)."""
    used = [(p, n) for p, n in zip(source, shape) if p is not None]
    squeezed = tuple(n for _, n in used)
    rank = {p: k for k, p in enumerate(order)}
    perm = tuple(sorted(range(len(used)), key=lambda k: rank[used[k][0]]))
    read = {p for p, _ in used}
    final = tuple(extents[p] if p in read else 1 for p in order)
    steps: list[Callable[[Any, Array], Array]] = []
    if squeezed != shape:
        steps.append(lambda B, a: B.reshape(a, squeezed))
    if perm != tuple(range(len(perm))):
        steps.append(lambda B, a: B.transpose(a, perm))
    if tuple(used[k][1] for k in perm) != final:
        steps.append(lambda B, a: B.reshape(a, final))

    def arrange(B, a):
        for s in steps:
            a = s(B, a)
        return a

    arrange.identity = not steps  # type: ignore[attr-defined]
    return arrange


def _positions(view: Any, size: int | None) -> list[int]:
    """The memory position of every element of ``view`` (row-major over its shape), clamped
    into a buffer of ``size``: a position outside it is read only under a guard that
    discards it."""
    out = [view.offset]
    for n, s in zip(view.shape, view.strides):
        out = [p + k * s for p in out for k in range(n)]
    if size is None:
        return out
    top = size - 1
    return [0 if p < 0 else top if p > top else p for p in out]


def _copy(comp: Any, read: Any, source: list | None, shape: tuple[int, ...]) -> Step:
    """``comp`` copies one read: no work, a reshape, an arrangement, or a gather."""
    out, name = comp.shape, read.source
    if source is None:
        if read.view.is_contiguous and read.view.offset == 0 and comp.size == math.prod(shape):
            return lambda B, env: B.reshape(env[name], out)
        index = _positions(read.view, math.prod(shape))
        return lambda B, env: B.gather_flat(env[name], index, out)
    arrange = _arranger(source, shape, range(len(out)), out)
    if arrange.identity and shape == out:  # the same array
        return lambda B, env: env[name]

    def step(B, env):
        a = arrange(B, env[name])
        return a if tuple(a.shape) == out else B.broadcast_to(a, out)

    return step


def _reduce_read(comp: Any, name: str, source: list, kind: str) -> Step:
    """A sum or max of one read: reduce the source's axes the reduction runs over, then put
    the rest in the output's order."""
    first = len(comp.index)
    dims = tuple(a for a, p in enumerate(source) if p is not None and p >= first)
    rest = [p for p in source if p is None or p < first]
    kept_shape = tuple(1 if p is None else comp.extents[p] for p in rest)
    arrange = _arranger(rest, kept_shape, range(first), comp.shape)
    out = comp.shape
    reducer = "sum" if kind == "sum" else "amax"
    if dims and kept_shape == out and arrange.identity:  # the reduction alone
        if kind == "sum":
            return lambda B, env: B.sum(env[name], dims, False)
        return lambda B, env: B.amax(env[name], dims, False)

    def step(B, env):
        a = getattr(B, reducer)(env[name], dims, False) if dims else env[name]
        a = arrange(B, _reshaped(B, a, kept_shape))
        return a if tuple(a.shape) == out else B.broadcast_to(a, out)

    return step


def _bias(comp: Any, shapes: dict) -> str | None:
    """The buffer of a 2-D comprehension's epilogue ``state + bias[i1]`` (a number per
    output column), else None."""
    epilogue, state = comp.epilogue, comp.monoid.state[0]
    if len(comp.index) != 2 or epilogue.op != "add":
        return None
    names = [a.name for a in epilogue.args if a.op == "var"]
    if len(names) != 2 or state not in names:
        return None
    read = comp.reads.get(names[1 - names.index(state)])
    if read is None or len(shapes[read.source]) != 1:
        return None
    view = type(read.view)(comp.shape, read.view.strides[:2], read.view.offset)
    return read.source if _source_axes(view, shapes[read.source], comp.shape) == [1] else None


def _matmul(comp: Any, shapes: dict, hot: set[str], bias: str | None = None) -> Step | None:
    """A sum over one axis of the product of two matrices that share it: ``B.matmul``
    (+ ``bias``, a buffer of one number per output column)."""
    body = comp.body[0]
    if len(comp.index) != 2 or len(comp.reduce) != 1 or body.op != "mul":
        return None
    sides = []
    for leaf in body.args:
        read = comp.reads.get(leaf.name) if leaf.op == "var" else None
        shape = shapes.get(read.source) if read is not None else None
        if shape is None or len(shape) != 2:
            return None
        at = _source_axes(read.view, shape, comp.extents)
        if at is None or None in at or 2 not in at:
            return None
        sides.append((read.source, at))
    (a, at_a), (b, at_b) = sides
    if 0 in at_b and 1 in at_a:
        (a, at_a), (b, at_b) = (b, at_b), (a, at_a)
    if not (0 in at_a and 1 in at_b):
        return None
    ta, tb = at_a[0] == 2, at_b[1] == 2
    out = comp.shape
    if a in hot and not ta and tb:
        if bias is None:
            return _tagged("hot_matmul", lambda B, env: B.hot_matmul(env["hot:" + a], env[b]))
        return _tagged(
            "hot_matmul", lambda B, env: B.hot_matmul(env["hot:" + a], env[b], env[bias])
        )
    if b in hot and ta and not tb and bias is None:
        return _tagged(
            "hot_matmul_grad", lambda B, env: B.hot_matmul_grad(env["hot:" + b], env[a], out)
        )
    if bias is None:
        return _tagged("matmul", lambda B, env: B.matmul(env[a], env[b], ta, tb))
    return _tagged("matmul", lambda B, env: B.matmul(env[a], env[b], ta, tb, env[bias]))


def _picked(comp: Any, shapes: dict) -> Step | None:
    """A sum over one axis ``r`` whose body is zero unless ``r`` (or an output index)
    equals a number read from an index buffer: the body at ``r = p`` alone, a gather
    (``Σ_r where(p == r, v, 0)·f``: reads of ``r`` picked at the positions ``p`` gives), or
    its adjoint, a scatter-add (``Σ_r g[r] · where(i == p[r], 1, 0)``), the positions read
    from the index buffer when the step runs (a fallback to the whole sum where one is not
    a whole number in range). Another pattern: None."""
    if len(comp.reduce) != 1:
        return None
    r = len(comp.index)
    body = comp.body[0]
    test = _pin_test(body, comp)
    if test is None:
        return None
    select, free, index = test
    at = comp.names.index(free.name)
    if at == r:
        pinned = replace_nodes([body], {id(select): select.args[1]})[0]
        return _gather_pinned(comp, shapes, pinned, index, _mapped(comp, shapes, "sum"))
    out = comp.shape
    if body.op != "mul" or select.args[1].op != "const" or select.args[1].value != 1.0:
        return None
    value = body.args[0] if body.args[1] is select else body.args[1]
    data = comp.reads.get(value.name) if value.op == "var" else None
    if data is None or len(out) != 1 or at != 0 or not comp.extents[0]:
        return None
    if any(s for s in index.view.strides[:r]) or any(s for s in data.view.strides[:r]):
        return None
    fallback = _mapped(comp, shapes, "sum")
    picks = _positions(_only(index.view, r), None)
    values = _positions(_only(data.view, r), None)
    valid = _whole_numbers(out[0])

    def scatter(B, env):  # Σ_r g[r]·[i == p[r]]: a scatter-add of g at the positions p
        found = B.to_flat(env[index.source])
        where = [found[k] for k in picks]
        if not all(map(valid.__contains__, where)):
            return fallback(B, env)
        g = B.gather_flat(env[data.source], values, (len(values),))
        return B.scatter_add_flat(g, [int(v) for v in where], out)

    return _tagged("scatter_add", scatter)


def _pin_test(body: Node, comp: Any) -> tuple[Node, Node, Any] | None:
    """In a product ``body``, the one factor ``where(p == v, value, 0)`` with ``v`` a domain
    variable and ``p`` a read (that does not vary with the reduction when ``v`` is its
    variable): (that factor, ``v``, ``p``'s read), else None."""
    from ..tensor import Load

    factors, stack = [], [body]
    while stack:
        node = stack.pop()
        if node.op == "mul":
            stack.extend(node.args)
        else:
            factors.append(node)
    found = []
    r = len(comp.index)
    for f in factors:
        if f.op != "select" or f.args[0].op != "eq" or f.args[2].op != "const":
            continue
        if f.args[2].value != 0.0:
            continue
        a, b = f.args[0].args
        if a.op == "var" and a.name in comp.names:
            a, b = b, a
        read = comp.reads.get(a.name) if a.op == "var" else None
        if b.op != "var" or b.name not in comp.names or not isinstance(read, Load):
            continue
        if b.name != comp.names[r] or not read.view.strides[r]:
            found.append((f, b, read))
    return found[0] if len(found) == 1 else None


def _gather_pinned(comp: Any, shapes: dict, body: Node, index: Any, fallback: Step) -> Step:
    """``body`` (the sum's body with its pin ``where(p == r, v, 0)`` replaced by ``v``) at
    ``r = p`` over the output's domain: ``r`` is ``p``'s values, reads of ``r`` are gathered
    at the positions they give, other reads broadcast as in ``_body``."""
    r, out = len(comp.index), comp.shape
    valid, key = _whole_numbers(comp.extents[r]), f"pin:{comp.name}"
    picks = _positions(_without(index.view, r), None)
    given: dict[str, Step] = {comp.names[r]: lambda B, env: B.from_flat(env[key], out)}
    for leaf in topo_order([body]):
        read = comp.reads.get(leaf.name) if leaf.op == "var" else None
        if read is not None and read.view.strides[r]:
            base = _positions(_without(read.view, r), None)
            given[leaf.name] = _pinned_read(read.source, base, read.view.strides[r], key, out)
    scalar, fetch = _body(comp, body, shapes, out, given)

    def gather(B, env):
        found = B.to_flat(env[index.source])
        at = [found[k] for k in picks]
        if not all(map(valid.__contains__, at)):
            return fallback(B, env)
        env[key] = at
        arrays = [f(B, env) for f in fetch]
        return arrays[0] if scalar.is_leaf else B.map(scalar, arrays, out)

    return _tagged("gather", gather)


def _whole_numbers(n: int) -> frozenset[float]:
    """0.0, 1.0, … n − 1 as floats: an index read from a buffer is valid when it is one
    (nan, inf and fractions are not; the test is one C loop)."""
    return frozenset(map(float, range(n)))


def _pinned_read(source: str, base: list[int], stride: int, key: str, out: tuple) -> Step:
    """A read at ``r = p``: its positions over the output's domain, ``p`` from ``env[key]``."""
    return lambda B, env: B.gather_flat(
        env[source], [b + int(v) * stride for b, v in zip(base, env[key])], out
    )


def _without(view: Any, axis: int) -> Any:
    """``view`` over the domain without ``axis`` (its stride dropped)."""
    keep = [k for k in range(len(view.shape)) if k != axis]
    return type(view)(
        tuple(view.shape[k] for k in keep), tuple(view.strides[k] for k in keep), view.offset
    )


def _only(view: Any, axis: int) -> Any:
    """``view`` along ``axis`` alone."""
    return type(view)((view.shape[axis],), (view.strides[axis],), view.offset)


def _mapped(comp: Any, shapes: dict, kind: str | None) -> Step:
    """The body over the whole domain (``B.map``: reads and index variables broadcast
    against each other), then the reduction over the reduced axes."""
    scalar, fetch = _body(comp, comp.body[0], shapes, comp.extents)
    dims = tuple(range(len(comp.index), len(comp.extents)))
    reducer = {"sum": "sum", "max": "amax"}.get(kind or "")
    extents = comp.extents

    def step(B, env):
        value = B.map(scalar, [f(B, env) for f in fetch], extents)
        if reducer and dims:
            value = getattr(B, reducer)(value, dims, False)
        return value

    return step


def _with_epilogue(comp: Any, core: Step, shapes: dict) -> Step:
    """``core`` (the reduced state) carried through the comprehension's epilogue."""
    state = comp.monoid.state[0]
    scalar, fetch = _body(comp, comp.epilogue, shapes, comp.shape, {state: core})
    out = comp.shape

    def step(B, env):
        return B.map(scalar, [f(B, env) for f in fetch], out)

    step.kind = core.kind  # type: ignore[attr-defined]
    step.epilogue = True  # type: ignore[attr-defined]
    return step


def _body(
    comp: Any,
    node: Node,
    shapes: dict,
    extents: tuple[int, ...],
    given: dict[str, Step] | None = None,
) -> tuple[Scalar, list[Step]]:
    """``node`` as a body for ``B.map`` over the first ``len(extents)`` domain positions,
    and one fetch per leaf: a read arranged (or gathered) to broadcast over them, an index
    variable's ``arange``, or a ``given`` step's array."""
    from ..tensor import TensorIRError

    order = range(len(extents))
    leaves: list[tuple[str, Step]] = []
    for leaf in topo_order([node]):
        if leaf.op != "var":
            continue
        if given and leaf.name in given:
            leaves.append((leaf.name, given[leaf.name]))
            continue
        if leaf.name in comp.names:
            v = comp.names.index(leaf.name)
            index_shape = tuple(e if k == v else 1 for k, e in enumerate(extents))
            leaves.append((leaf.name, _index_array(extents[v], index_shape)))
            continue
        read = comp.reads.get(leaf.name)
        if read is None:
            raise TensorIRError(f"{comp.name}: nothing gives {leaf.name!r} a value")
        shape = shapes[read.source]
        view = read.view
        if len(extents) < len(comp.extents):  # the epilogue: reads vary with outputs only
            view = type(view)(extents, view.strides[: len(extents)], view.offset)
        source = _source_axes(view, shape, extents)
        if source is None:
            index = _positions(view, math.prod(shape))
            leaves.append((leaf.name, _gathered(read.source, index, extents)))
        else:
            arrange = _arranger(source, shape, order, extents)
            leaves.append((leaf.name, _arranged(read.source, arrange)))
    names = [f"a{k}" for k in range(len(leaves))]
    at = {name: k for k, (name, _) in enumerate(leaves)}
    swap = {id(n): var(names[at[n.name]]) for n in topo_order([node]) if n.op == "var"}
    return Scalar(replace_nodes([node], swap)[0], names), [f for _, f in leaves]


def _index_array(n: int, shape: tuple[int, ...]) -> Callable[[Any, Env], Array]:
    made: dict[str, Array] = {}

    def fetch(B, env):
        a = made.get(B.name)
        if a is None:
            a = made[B.name] = B.from_flat([float(k) for k in range(n)], shape)
        return a

    return fetch


def _gathered(name: str, index: list[int], shape: tuple[int, ...]):
    return lambda B, env: B.gather_flat(env[name], index, shape)


def _arranged(name: str, arrange):
    return lambda B, env: arrange(B, env[name])


def _reference(comp: Any, shapes: dict[str, tuple[int, ...]]) -> Step:
    """``comp`` by the IR's reference evaluator: what no primitive covers."""
    from ..tensor import TensorGraph, evaluate
    from ..tensor.evaluate import _flatten, _nest

    graph = TensorGraph({s: shapes[s] for s in sorted(comp.sources())}, [comp], [comp.name])

    def step(B, env):
        values = {s: _nest(B.to_flat(env[s]), shape) for s, shape in graph.inputs.items()}
        nested = evaluate(graph, values, backend="python")[comp.name]
        return B.from_flat(_flatten(nested, comp.shape, comp.name), comp.shape)

    return step


def _tagged(kind: str, step: Step) -> Step:
    step.kind = kind  # type: ignore[attr-defined]
    return step


def _reshaped(B, a: Array, shape: tuple[int, ...]) -> Array:
    return a if tuple(a.shape) == tuple(shape) else B.reshape(a, shape)


__all__ = ["Derived", "Program", "program", "translate"]
