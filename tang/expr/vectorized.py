"""Graph nodes over numpy arrays: the one numpy interpreter of scalar graphs. The GPU tests'
oracle (``tang.gpu.numpy_eval``) and the tensor IR's numpy evaluator both run it. numpy
stays optional: the caller passes the module in, and every op is the registry's numpy
spelling (``tang.expr.ops``), IEEE like ``tang.ieee`` under ``np.errstate(all="ignore")``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from .graph import Node, topo_order
from .ops import OPS


def _no_column(name: str) -> Exception:
    return KeyError(f"no column for input {name!r}")


def numpy_values(
    np: Any,
    outputs: Sequence[Node],
    env: Mapping[str, Any],
    *,
    points: int = 1,
    dtype: str = "float64",
    missing: Callable[[str], Exception] = _no_column,
) -> list[Any]:
    """Each output's array, its variables read from ``env`` (arrays over ``points`` points,
    or scalars); ``missing(name)`` is raised for a variable ``env`` lacks."""
    values = _run(np, topo_order(outputs), env, points, dtype, missing)
    return [values[o] for o in outputs]


def numpy_function(
    np: Any,
    output: Node | Sequence[Node],
    names: Sequence[str],
    *,
    same_shape: Collection[str] = (),
    consume: Collection[str] = (),
) -> Callable[..., Any]:
    """``output`` as a function of the arrays of ``names``, in that order: the graph walked
    once into straight-line code, one call of its registry rule per node (tang's own text),
    so a caller that runs the same small body many times pays for the arithmetic only.
    Several outputs give a tuple. ``same_shape`` names arrays the caller promises share one
    shape: a temporary computed from them is overwritten (``out=``) once no later node
    reads it, so a long body makes few fresh arrays; so is an array of ``consume`` (same
    shaped too), which the caller gives up. Loop nodes are not taken (``numpy_values`` runs
    those)."""
    outputs = [output] if isinstance(output, Node) else list(output)
    kept = set(outputs)  # never written over
    order = topo_order(outputs)
    symbol: dict[Node, str] = {}
    scope: dict[str, Any] = {"np": np}
    uses = Counter(a for node in order for a in node.args)
    # a + (−b) is a − b, exactly: the negation read once by a sum is not made on its own
    folded: set[Node] = set()
    for node in order:
        negated = [b for b in node.args if b.op == "neg" and uses[b] == 1 and b not in kept]
        if node.op == "add" and negated:
            folded.add(negated[-1])  # one per sum: (−b) + (−c) is not b − c
    reads = {  # what each node's line reads: a sum that subtracts reads the negated node
        node: tuple(a.args[0] if a in folded else a for a in node.args) for node in order
    }
    last_use = {a: k for k, node in enumerate(order) if node not in folded for a in reads[node]}
    full: set[Node] = set()  # nodes shaped like the same_shape arrays: reusable once dead
    free: list[str] = []  # dead temporaries of that shape, to write into
    lines = []
    for k, node in enumerate(order):
        if node.op == "const":
            symbol[node] = f"c{k}"
            scope[f"c{k}"] = np.asarray(node.value, dtype="float64")
        elif node.op == "var":
            if node.name not in names:
                raise _no_column(node.name)  # type: ignore[arg-type]
            symbol[node] = f"a{list(names).index(node.name)}"  # type: ignore[arg-type]
            if node.name in same_shape:
                full.add(node)
        elif node.op in ("loop", "loop_out"):
            raise ValueError("numpy_function takes no loop nodes: use numpy_values")
        elif node in folded:
            symbol[node] = symbol[node.args[0]]  # the sum that reads it subtracts instead
            if node.args[0] in full:
                full.add(node)
        else:
            rule = OPS[node.op].numpy_rule(np)
            args = reads[node]
            if node.op == "add" and any(a in folded for a in node.args):
                rule = np.subtract
                if node.args[0] in folded:
                    args = args[::-1]  # (−b) + a = a − b
            scope[f"r{k}"] = rule
            operands = ", ".join(symbol[a] for a in args)
            into = ""
            if any(a in full for a in node.args) and not OPS[node.op].boolean:
                full.add(node)
                if free and isinstance(rule, np.ufunc):
                    into = f", out={free.pop()}"
            symbol[node] = f"v{k}" if not into else into[len(", out=") :]
            lines.append(f"    {symbol[node]} = r{k}({operands}{into})")
            for a in dict.fromkeys(args):  # operands read for the last time
                given = a.op != "var" or a.name in consume
                if last_use[a] == k and a in full and given and a not in kept:
                    free.append(symbol[a])
    params = ", ".join(f"a{i}" for i in range(len(names)))
    result = ", ".join(symbol[o] for o in outputs) + ("," if len(outputs) > 1 else "")
    source = "\n".join([f"def run({params}):", *lines, f"    return {result}", ""])
    exec(compile(source, "<tang numpy function>", "exec"), scope)
    return scope["run"]


def _run(
    np: Any,
    order: Sequence[Node],
    env: Mapping[str, Any],
    points: int,
    dtype: str,
    missing: Callable[[str], Exception],
) -> dict[Node, Any]:
    """Every node of ``order`` over the arrays of ``env`` (variables by name)."""
    values: dict[Node, Any] = {}
    for node in order:
        if node.op == "const":
            values[node] = np.asarray(node.value, dtype=dtype)
        elif node.op == "var":
            if node.name not in env:
                raise missing(node.name)  # type: ignore[arg-type]
            values[node] = env[node.name]  # type: ignore[index]
        elif node.op == "loop_out":
            values[node] = values[node.args[0]][node.value]  # type: ignore[index]
        elif node.op == "loop":
            operands = [values[a] for a in node.args]
            values[node] = _loop(np, node, operands, points, dtype, missing)
        else:
            rule = OPS[node.op].numpy_rule(np)  # each primitive's numpy spelling: the registry's
            values[node] = rule(*(values[a] for a in node.args))
    return values


def _loop(
    np: Any,
    node: Node,
    args: list[Any],
    points: int,
    dtype: str,
    missing: Callable[[str], Exception],
) -> list[Any]:
    """A loop node's states over all points: each point runs its own count of steps (the
    body runs to the largest count; a point past its own keeps its state)."""
    body = node.value
    k = body.nstate  # type: ignore[union-attr]
    counts = np.broadcast_to(args[0], (points,))
    state = [np.array(np.broadcast_to(a, (points,)), dtype=dtype) for a in args[1 : 1 + k]]
    names = [p.name for p in body.params]  # type: ignore[union-attr]
    env = dict(zip(names[1 + k :], args[1 + k :]))
    order = topo_order(body.outputs)  # type: ignore[union-attr]
    steps = int(counts.max()) if points else 0
    for i in range(steps):
        env[names[0]] = np.asarray(float(i), dtype=dtype)
        env.update(zip(names[1 : 1 + k], state))
        values = _run(np, order, env, points, dtype, missing)
        active = i < counts
        state = [np.where(active, values[o], s) for o, s in zip(body.outputs, state)]  # type: ignore[union-attr]
    return state
