"""Exact gradients and Jacobians for the solvers, never finite differences.

Three ways, chosen by ``jac``:

- ``"dual"`` (the default): one forward pass of the user's function on ``tang.Dual`` numbers
  carrying n tangents at once (one per unknown) gives the value(s) and every partial
  derivative together.
- ``"graph"``: the function is traced once on graph nodes (``tang.trace``), differentiated
  in reverse mode (one backward sweep per output), and the graph of values and partials is
  then evaluated at each point: cheap per point when n is large. Tracing fixes the code path,
  so the function may not branch on its inputs' values (``tang.where`` does it in the graph).
- a callable: the user's own gradient (``minimize``) or Jacobian (``least_squares``).

The wrappers here also check what the user's functions return (one number, m numbers, the
right shapes, finite at the start) and count evaluations; an exception raised inside a user
function comes back as an ``EvaluationError`` naming the function and the point.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from .. import dual
from ..dual import Dual, Tangents
from ..expr.grad import backward
from ..expr.graph import Graph, Node, Tape
from ..expr.trace import trace

Vector = list[float]
Matrix = list[Vector]  # rows


class EvaluationError(RuntimeError):
    """A user function raised while a solver called it. The message names the function and
    the point; the original exception is the ``__cause__``."""


# ---------------------------------------------------------------------------------------
# checking numbers


def describe(x: Sequence[float], limit: int = 8) -> str:
    """A point for a message: its first ``limit`` entries."""
    shown = ", ".join(repr(float(v)) for v in x[:limit])
    return f"[{shown}{', …' if len(x) > limit else ''}] (n = {len(x)})"


def start_point(x0: Any) -> Vector:
    """``x0`` as a list of finite floats, or a clear error naming the bad entry."""
    fast = plain_floats(x0)
    if fast and all(map(math.isfinite, fast)):
        return fast
    if isinstance(x0, (str, bytes)) or not hasattr(x0, "__iter__"):
        raise TypeError(
            f"x0 must be a sequence of numbers (a list), not {type(x0).__name__}; "
            "for one unknown write [x0]"
        )
    x = list(x0)
    if not x:
        raise ValueError("x0 is empty: give at least one starting value")
    out = []
    for i, v in enumerate(x):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"x0[{i}] is {v!r} ({type(v).__name__}), not a real number")
        v = float(v)
        if not math.isfinite(v):
            raise ValueError(f"x0[{i}] is {v}: the starting point must be finite")
        out.append(v)
    return out


def real(v: Any, what: str) -> float:
    """``v`` as a float (a plain one: numpy's float64 too becomes a float), or a TypeError
    saying what ``what`` returned instead."""
    if v.__class__ is float:
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        kind = type(v).__name__
        hint = " (a Dual from another derivative, or a graph node?)" if _is_number_like(v) else ""
        raise TypeError(f"{what} is {v!r:.60} ({kind}), not a real number{hint}")
    return float(v)


def _is_number_like(v: Any) -> bool:
    return isinstance(v, (Dual, Node))


def _sequence(out: Any, what: str, hint: str = "") -> list[Any]:
    """A function's several results as a list (lists, tuples, numpy arrays…)."""
    if isinstance(out, (str, bytes, dict)) or not hasattr(out, "__iter__"):
        raise TypeError(f"{what} must be a sequence of numbers, got {type(out).__name__}{hint}")
    return list(out)


_JUST_FLOAT = frozenset([float])
_WRAP = " (wrap a single residual in a list)"  # the hint when residuals are not a sequence


def plain_floats(items: Any) -> Vector | None:
    """``items`` as a new list when it is a list or tuple of floats only (the common case,
    checked without composing a message per entry), else None."""
    plain = items.__class__ is list or items.__class__ is tuple
    return list(items) if plain and _JUST_FLOAT.issuperset(map(type, items)) else None


def first_bad(values: Sequence[float]) -> int | None:
    """Index of the first nan/inf entry, or None."""
    for i, v in enumerate(values):
        if not math.isfinite(v):
            return i
    return None


# ---------------------------------------------------------------------------------------
# calling user functions


def _label(fn: Callable[..., Any], role: str) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return f"the {role} {name!r}" if name != "<lambda>" else f"the {role} (a lambda)"


_HINTS = {
    "dual": (
        " (jac='dual' calls it on tang.Dual numbers: use tang.exp, tang.sin, … instead of "
        "math's, compare values or use tang.where instead of branching on a Dual's truth; "
        "or pass jac='graph' or a derivative function)"
    ),
    "graph": (
        " (jac='graph' traces it once on graph nodes: no `if` on the inputs' values (use "
        "tang.where), and tang.exp, tang.sin, … instead of math's; or use jac='dual')"
    ),
}


def call(fn: Callable[..., Any], arg: Any, label: str, x: Sequence[float], mode: str = "") -> Any:
    """``fn(arg)``, turning any exception into an EvaluationError that names ``label`` and
    the point ``x`` (the original chained as its cause)."""
    try:
        return fn(arg)
    except Exception as exc:
        raise _failure(exc, label, x, mode) from exc


def _failure(exc: Exception, label: str, x: Sequence[float], mode: str = "") -> EvaluationError:
    """The EvaluationError saying that the user function ``label`` raised ``exc`` at x: for
    ``call``, and for the hot paths that call a function in their own ``try`` (a frame less)."""
    hint = _HINTS.get(mode, "") if isinstance(exc, TypeError) else ""
    return EvaluationError(f"{label} raised {type(exc).__name__} at x = {describe(x)}: {exc}{hint}")


def _units(n: int) -> list[Tangents]:
    return [Tangents(1.0 if j == i else 0.0 for j in range(n)) for i in range(n)]


def _dual_pass(
    fn: Callable[..., Any], x: Sequence[float], units: list[Tangents], label: str
) -> tuple[Any, type[Dual]]:
    """``fn`` on Duals seeded with the unit tangents (a tuple of them if x is a tuple, else a
    list): (its raw result, the Dual class)."""
    with dual.perturbation() as level:
        seeds = [dual.seed(level, xi, u) for xi, u in zip(x, units)]
        arg = tuple(seeds) if x.__class__ is tuple else seeds
        return call(fn, arg, label, x, "dual"), level


def _split(
    out: Any, level: type[Dual], n: int, what: str, index: int | None = None
) -> tuple[float, Vector]:
    """(value, gradient) of one result of a Dual pass: ``what`` itself, or its result number
    ``index`` (the message composed only for an error)."""
    if out.__class__ is not level and isinstance(out, Dual) and out.level > level.level:
        raise TypeError(
            f"{_result_name(what, index)} is a Dual number from a derivative taken inside the "
            "function"
        )
    value, tangent = dual.parts(out, level)  # the tangent None for a constant
    if value.__class__ is not float:
        value = real(value, _result_name(what, index))
    if tangent is None:  # a constant: no slope
        return value, [0.0] * n
    if not isinstance(tangent, Tangents) or len(tangent) != n:
        raise TypeError(f"{_result_name(what, index)} carries a malformed tangent {tangent!r:.60}")
    if _JUST_FLOAT.issuperset(map(type, tangent)):  # the common case
        return value, list(tangent)
    name = _result_name(what, index)
    return value, [real(t, f"a partial derivative of {name}") for t in tangent]


def _result_name(what: str, index: int | None) -> str:
    return what if index is None else f"residual {index} from {what}"


# ---------------------------------------------------------------------------------------
# evaluating a traced graph fast: the node order and kernels looked up once


class CompiledGraph:
    """A Graph evaluated at many points on floats, its inputs by position: a ``Tape``
    (tang.expr.graph) built once, then each call runs its flat list of float kernels (IEEE
    results: inf/nan, never exceptions)."""

    def __init__(self, graph: Graph) -> None:
        self.tape = Tape(graph.outputs)
        position = {name: i for i, name in enumerate(graph.inputs)}
        for _, name in self.tape.leaves:
            if name not in position:
                raise ValueError(
                    f"the traced function uses the graph variable {name!r}, which is "
                    "not one of its inputs"
                )
        self.inputs = [(k, position[name]) for k, name in self.tape.leaves]

    def __call__(self, x: Sequence[float]) -> list[float]:
        values = self.tape.template[:]
        for k, i in self.inputs:
            values[k] = x[i]
        return [float(v) for v in self.tape.compute(values)]


_trace_ids = itertools.count()


def traced(fn: Callable[..., Any], n: int, label: str) -> tuple[Graph, list[str]]:
    """Trace ``fn`` (taking a list) on n fresh variables: (its graph, the variable names)."""
    k = next(_trace_ids)
    names = [f"x{i}#solve{k}" for i in range(n)]

    def on_nodes(*xs: Any) -> Any:
        return fn(list(xs))

    try:
        graph = trace(on_nodes, names)
    except Exception as exc:
        hint = _HINTS["graph"] if isinstance(exc, TypeError) else ""
        raise EvaluationError(
            f"{label} raised {type(exc).__name__} while being traced for jac='graph': {exc}{hint}"
        ) from exc
    return graph, names


# ---------------------------------------------------------------------------------------
# the objective of minimize: value and gradient at each point


class Objective:
    """f and its gradient at each point, counting evaluations. With ``jac`` ``"dual"`` or
    ``"graph"`` one pass gives both, and counts as one function and one gradient evaluation;
    with a gradient callable, f and the callable run once each; with ``jac=True``, f
    returns (value, gradient)."""

    def __init__(self, f: Callable[..., Any], n: int, jac: Any) -> None:
        if not callable(f):
            raise TypeError(f"f must be callable, not {type(f).__name__}")
        self.f, self.n = f, n
        self.label = _label(f, "objective")
        self.nfev = self.njev = 0
        if jac is None or jac == "dual":
            self.mode = "dual"
            self.units = _units(n)
        elif jac == "graph":
            self.mode = "graph"
            graph, names = traced(f, n, self.label)
            if len(graph.outputs) != 1:
                raise TypeError(
                    f"{self.label} must return one number, it returned {len(graph.outputs)}"
                )
            self.program = CompiledGraph(Graph(names, _gradient_outputs(graph.outputs[0], names)))
        elif jac is True:
            self.mode = "combined"
        elif callable(jac):
            self.mode = "callable"
            self.jac = jac
            self.jac_label = _label(jac, "gradient function")
        else:
            raise ValueError(f"jac must be None, 'dual', 'graph', True or a callable, not {jac!r}")

    def __call__(self, x: Vector) -> tuple[float, Vector]:
        """(f(x), ∇f(x))."""
        self.nfev += 1
        self.njev += 1
        n = self.n
        if self.mode == "dual":
            out, level = _dual_pass(self.f, x, self.units, self.label)
            if isinstance(out, (list, tuple)):
                raise TypeError(
                    f"{self.label} must return one number, it returned a {type(out).__name__} "
                    f"of {len(out)} (for residuals use least_squares)"
                )
            return _split(out, level, n, f"the value of {self.label}")
        if self.mode == "graph":
            value, *gradient = self.program(x)
            return value, gradient
        if self.mode == "combined":
            out = call(self.f, list(x), self.label, x)
            pair = _sequence(out, f"{self.label} with jac=True")
            if len(pair) != 2:
                raise TypeError(f"{self.label} with jac=True must return (value, gradient)")
            value = real(pair[0], f"the value of {self.label}")
            return value, self._gradient(pair[1], self.label)
        value = real(call(self.f, list(x), self.label, x), f"the value of {self.label}")
        return value, self._gradient(call(self.jac, list(x), self.jac_label, x), self.jac_label)

    def _gradient(self, out: Any, label: str) -> Vector:
        g = _sequence(out, f"the gradient from {label}")
        if len(g) != self.n:
            raise ValueError(f"the gradient from {label} has {len(g)} entries, x has {self.n}")
        return [real(v, f"gradient entry {i} from {label}") for i, v in enumerate(g)]


def _gradient_outputs(output: Node | float, names: list[str]) -> list[Node | float]:
    """[value, ∂value/∂name for each name] for one traced output (a constant: zeros)."""
    if not isinstance(output, Node):
        return [output, *([0.0] * len(names))]
    return [output, *backward(output, names)]


# ---------------------------------------------------------------------------------------
# the residuals of least_squares: values, and the Jacobian at each point


class Residuals:
    """r(x) and its Jacobian, with the number of residuals m fixed by the first call and
    checked at each later one (m ≥ n, or m ≥ 1 with ``underdetermined``, for a damped
    solver). ``values`` counts one function evaluation (a plain float call); ``jacobian``
    counts one Jacobian evaluation (one Dual pass or graph evaluation, which yields the
    residuals too, or one call of the Jacobian callable, which with ``paired`` returns
    (r, J) together). A tuple point reaches the user's functions as a tuple, else a list."""

    def __init__(
        self,
        fun: Callable[..., Any],
        n: int,
        jac: Any,
        *,
        paired: bool = False,
        underdetermined: bool = False,
    ) -> None:
        if not callable(fun):
            raise TypeError(f"the residuals function must be callable, not {type(fun).__name__}")
        self.fun, self.n = fun, n
        self.m: int | None = None
        self.underdetermined = underdetermined
        self.nfev = self.njev = 0
        if callable(jac):
            self.mode = "paired" if paired else "callable"
            self.jac = jac
        elif jac is None or jac == "dual":
            self.mode = "dual"
            self.units = _units(n)
        elif jac == "graph":
            self.mode = "graph"
            graph, names = traced(fun, n, self.label)
            outputs: list[Node | float] = list(graph.outputs)
            for o in graph.outputs:
                outputs += _gradient_outputs(o, names)[1:]
            self.traced_m = len(graph.outputs)
            self.program = CompiledGraph(Graph(names, outputs))
        else:
            raise ValueError(f"jac must be None, 'dual', 'graph' or a callable, not {jac!r}")

    @functools.cached_property
    def label(self) -> str:
        """The residuals function as messages name it (composed when first needed)."""
        return _label(self.fun, "residuals function")

    @functools.cached_property
    def jac_label(self) -> str:
        """The Jacobian callable as messages name it."""
        return _label(self.jac, "Jacobian function")

    def _check_length(self, count: int, x: Sequence[float], by_jacobian: bool = False) -> None:
        """Fix m at the first call, then hold every later count to it (the message names the
        Jacobian callable when ``by_jacobian`` gave the residuals, else the function)."""
        if self.m is None:
            if count < (1 if self.underdetermined else self.n):
                need = (
                    "at least one residual is needed"
                    if self.underdetermined
                    else "least squares needs at least as many residuals as unknowns (m ≥ n)"
                )
                raise ValueError(
                    f"{self._source(by_jacobian)} returned {count} residuals for {self.n} "
                    f"unknowns: {need}"
                )
            self.m = count
        elif count != self.m:
            raise ValueError(
                f"{self._source(by_jacobian)} returned {count} residuals at x = {describe(x)}, "
                f"but {self.m} at x0: the number of residuals must not change"
            )

    def _source(self, by_jacobian: bool) -> str:
        return self.jac_label if by_jacobian else self.label

    def values(self, x: Sequence[float]) -> Vector:
        """r(x) on floats."""
        return self.checked_values(self.evaluate(x), x)

    def evaluate(self, x: Sequence[float]) -> Any:
        """r(x) as the residuals function returns it, unchecked (one function evaluation): for
        a hot loop that calls ``checked_values`` only when its own use of the result fails."""
        self.nfev += 1
        try:  # ``call`` inline: one frame less on a solver's hot path
            return self.fun(x if x.__class__ is tuple else list(x))
        except Exception as exc:
            raise _failure(exc, self.label, x) from exc

    def checked_values(self, out: Any, x: Sequence[float], by_jacobian: bool = False) -> Vector:
        """``out``, the residuals at x (from the Jacobian callable with ``by_jacobian``, else
        from the function), as m floats, or an error naming what is wrong. The messages are
        composed only for an error: this runs at every point of a solve."""
        values = plain_floats(out)
        plain = values is not None
        if not plain:
            source = self._source(by_jacobian)
            what = f"the residuals from {source}" if by_jacobian else f"{source}'s result"
            values = _sequence(out, what, _WRAP)
        self._check_length(len(values), x, by_jacobian)
        if not plain:
            source = self._source(by_jacobian)
            values = [real(v, f"residual {i} from {source}") for i, v in enumerate(values)]
        return values

    def jacobian(self, x: Sequence[float], *, lazy: bool = False) -> tuple[Vector | None, Matrix]:
        """(r(x) where this pass gives it, else None; the m×n Jacobian as rows). ``lazy``: a
        callable's r and J are checked for their lengths only, their entries left to the
        caller (who calls ``checked`` when they fail it): for hot loops."""
        self.njev += 1
        mode = self.mode
        if mode == "paired" or mode == "callable":
            try:  # ``call`` inline, as in ``evaluate``
                out = self.jac(x if x.__class__ is tuple else list(x))
            except Exception as exc:
                raise _failure(exc, self.jac_label, x) from exc
            r = None
            if mode == "paired":
                try:
                    r, out = out
                except (TypeError, ValueError):
                    raise TypeError(
                        f"{self.jac_label} must return (r, J), got {out!r:.200}"
                    ) from None
            if lazy:
                m = self.m
                try:
                    if len(out) == m and (r is None or len(r) == m):
                        return r, out
                except TypeError:
                    pass
            return self.checked(r, out, x)
        n = self.n
        if mode == "dual":
            raw, level = _dual_pass(self.fun, x, self.units, self.label)
            outs = raw if raw.__class__ is list else _sequence(raw, f"{self.label}'s result", _WRAP)
            self._check_length(len(outs), x)
            pairs = [_split(o, level, n, self.label, i) for i, o in enumerate(outs)]
            return [p[0] for p in pairs], [p[1] for p in pairs]
        flat = self.program(x)
        m = self.traced_m
        self._check_length(m, x)
        return flat[:m], [flat[m + i * n : m + (i + 1) * n] for i in range(m)]

    def checked(self, r: Any, rows: Any, x: Sequence[float]) -> tuple[Vector | None, Matrix]:
        """(r or None, J) from the Jacobian callable as floats in the right shapes, or an error
        naming what is wrong (composed only then, as in ``checked_values``)."""
        if r is not None:
            r = self.checked_values(r, x, by_jacobian=True)
        n = self.n
        if rows.__class__ is not list and rows.__class__ is not tuple:
            rows = _sequence(rows, f"the Jacobian from {self.jac_label}")
        if len(rows) != self.m:
            raise ValueError(
                f"{self.jac_label} returned {len(rows)} rows, there are {self.m} residuals"
            )
        matrix = []
        for i, row in enumerate(rows):
            values = plain_floats(row)
            plain = values is not None
            if not plain:
                values = _sequence(row, f"row {i} from {self.jac_label}")
            if len(values) != n:
                label = self.jac_label
                raise ValueError(f"row {i} from {label} has {len(values)} entries, x has {n}")
            if not plain:
                label = self.jac_label
                values = [real(v, f"entry ({i}, {j}) from {label}") for j, v in enumerate(values)]
            matrix.append(values)
        return r, matrix
