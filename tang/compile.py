"""One compile pipeline: text or a function → graph → gradient → simplified graph →
program → kernel with its binding layout.

The editor (``demos.playground``) and Run (``demos.explain`` over ``tang.gpu``) both come
through here, so one expression is one graph, its outputs carry one set of names (the
function's own, ``f`` unless the text declares another such as ``g(a, b) = …``, then
``df/dx`` for each input x) and its kernels are printed from one program wherever it
is shown or run. ``tang.gpu`` only runs what comes out: it imports neither the parser, the
gradient nor the simplifier.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .expr.grad import gradient
from .expr.graph import Graph, Node, as_node, topo_order
from .expr.parse import DEFAULT_VARIABLES, parse_declaration
from .expr.simplify import simplify
from .expr.trace import trace
from .lower import BACKENDS, Lowered, Program, schedule
from .lower.base import check_name, identifiers
from .lower.plan import Plan

VALUE = "f"  # the name of a compiled function's value, unless its text declares another


def derivative_name(variable: str, function: str = VALUE) -> str:
    """The name of the output ∂function/∂variable, the same in kernels, the editor and Run."""
    return f"d{function}/d{variable}"


def function_graph(
    source: str | Callable[..., Any] | Graph, *, must_have: str | None = None
) -> Graph:
    """The function ``source`` defines: text (read by tang's parser; its inputs are those
    ``f(a, b) = …`` declares, else the x, y, z it uses, plus ``must_have``), a Python
    function (traced over its parameters) or a Graph (as it is)."""
    if isinstance(source, Graph):
        return source
    if callable(source):
        return trace(source)
    if not isinstance(source, str):
        raise TypeError(f"expected text, a function or a Graph, got {type(source).__name__}")
    node, declared, name = parse_declaration(source)
    if declared is not None:
        return Graph(declared, [node], name=name or VALUE)
    order = topo_order([node])  # walked once: the graph keeps it for grad
    used = {n.name for n in order if n.op == "var"}
    inputs = [v for v in DEFAULT_VARIABLES if v in used or v == must_have]
    return Graph(inputs, [node], nodes=order)


def with_derivatives(graph: Graph | Node | float, inputs: Sequence[str] | None = None) -> Graph:
    """The value and its partial derivative in each input (reverse mode, then only the
    simplifier's exact rules, which keep every IEEE result) as one graph."""
    target = graph if isinstance(graph, Graph) else as_node(graph)
    return simplify(gradient(target, inputs), assume_finite=False)


def output_names(inputs: Sequence[str], grad: bool, function: str = VALUE) -> tuple[str, ...]:
    """``f`` (the function's name), then ``df/dx`` for each input with ``grad``."""
    if not grad:
        return (function,)
    return (function, *(derivative_name(v, function) for v in inputs))


def definition_text(text: str, name: str, inputs: Sequence[str]) -> str:
    """How the function ``text`` (parsed: its ``name`` and ``inputs``) reads with its name
    once: ``g(a, b) = a**b`` as typed, or ``f(x, y) = x*y`` for the bare ``x*y``."""
    body = text.strip()
    if re.match(rf"{re.escape(name)}\s*\([^()]*\)\s*=", body):
        return body  # it declares itself: the parser read this header
    return f"{name}({', '.join(inputs)}) = {body}"


@dataclass(frozen=True)
class Compiled:
    """One function compiled: what it defines, what is computed (the value, then each
    partial), the outputs' names and the program every backend prints."""

    function: Graph
    graph: Graph
    names: tuple[str, ...]
    program: Program

    @property
    def entry(self) -> str:
        """The kernel's function name: the function's own where it can name one (not a
        keyword, temporary or input of the kernel), else ``f``."""
        name = self.function.name
        try:
            check_name(name)
        except ValueError:
            return VALUE
        return VALUE if name in identifiers(self.program.inputs).values() else name

    def kernel(self, backend: str = "wgsl", **options: Any) -> Lowered:
        """The program printed for ``backend`` (a GPU kernel carries its bindings:
        ``Lowered.info``), named ``entry``; ``options`` as for ``Printer.render``."""
        return BACKENDS[backend].render(self.program, **{"name": self.entry, **options})

    @property
    def plan(self) -> Plan:
        """What ``tang.gpu.batch.evaluate`` runs."""
        return Plan(self.program.inputs, self.program.outputs, self.names)


def compile_function(
    source: str | Callable[..., Any] | Graph,
    *,
    grad: bool = True,
    must_have: str | None = None,
    inline: bool = True,
) -> Compiled:
    """Compile ``source`` (see ``function_graph``): with ``grad`` its gradient too."""
    function = function_graph(source, must_have=must_have)
    graph = with_derivatives(function) if grad else function
    names = output_names(graph.inputs, grad, function.name)
    program = schedule(graph, inline=inline, output_names=names)
    return Compiled(function, graph, names, program)


def expression_plan(text: str, grad: bool = False) -> Plan:
    """Parse ``text`` into what ``tang.gpu`` runs: the value, and with ``grad`` every
    partial derivative. Raises ``tang.ParseError`` with the column."""
    return compile_function(text, grad=grad).plan


def with_gradient(expr: Graph | Node | float, inputs: Sequence[str] | None = None) -> Plan:
    """The value of ``expr`` and its partial derivative in each input, as one plan."""
    graph = with_derivatives(expr, inputs)
    program = schedule(graph, graph.inputs, output_names=output_names(graph.inputs, True))
    return Plan(program.inputs, program.outputs, program.output_names)
