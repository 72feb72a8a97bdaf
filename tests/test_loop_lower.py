"""``tang.fori_loop`` traced into a ``loop`` node is a real loop in every backend: printed,
compiled and run.

Ten loop bodies over inputs x, y and a count n (a plain recurrence, a branch, an unchanged
state, a swap and a rotation (the ``Copy`` statement), the step number, captured inputs, a
hoisted expression of inputs, a loop inside a loop and Duals carrying two tangents) are
printed as one kernel per backend and run over one batch of points, whose counts include
fractional, negative, -0.0 and nan values (rounded down; negatives and nan run no step):

- Python kernel and function: bit for bit ``tang.expr.graph.evaluate`` (the reference), and
  the plain-float run of the same Python function (``fori_loop`` on floats, count rounded
  down by hand);
- C (gcc -Werror, address and undefined-behaviour sanitizers) and JavaScript (node), kernel
  and function: rtol 1e-12 against the reference;
- f32 backends (WGSL and GLSL→SPIR-V on lavapipe, OpenCL on PoCL, Metal and CUDA compiled
  and run as C++, CUDA compiled by nvcc): within 5e-4·max(1, |value|) of the f64 reference
  wherever an ideal f32 machine (every constant, input and step rounded to f32, loops
  included: ``evaluate_f32_loops`` below, ``toolchains.evaluate_f32`` knows no loop node)
  agrees with f64 to 1e-5. The loops are short (at most 12 steps), so the rounding of each
  step (2⁻²⁴) and a GPU's sin (lavapipe's errs by ~1e-7) stay far below that tolerance;
  the gate only drops points where f32 itself flips a branch. Fewer than 15 % may drop.

The node ↔ line map is checked line by line against the program's statements, the kernel
size against the step count, and reverse mode and the text form at the end.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import struct
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import toolchains as tc
from toolchains import kind

import tang
from tang.expr.grad import backward, gradient
from tang.expr.graph import PRIMITIVES, Graph, Node, evaluate, topo_order, var
from tang.expr.loop import LoopGradientError, count_nodes
from tang.lower import BACKENDS, lower, schedule
from tang.lower.base import to_f32
from tang.lower.program import Copy, Let, Load, Loop, Store, walk
from tests.skips import skip_missing, skip_missing_tool

INPUTS = ("x", "y", "n")
F64_RTOL = 1e-12
F32_TOL = 5e-4  # relative to max(1, |value|)
F32_TRUST = 1e-5  # ideal-f32 vs f64 agreement needed before a point is compared
MAX_UNSTABLE = 0.15

# x, y, n: counts fractional, negative, -0.0, nan, and whole
POINTS = [
    (0.5, 1.5, 3.0),
    (-1.0, 0.25, 2.7),
    (2.0, -0.5, -1.0),
    (1.0, 1.0, math.nan),
    (0.0, 2.0, 0.0),
    (0.3, -1.2, 7.999),
    (-2.0, 0.9, -0.0),
    (1.7, 0.6, 0.5),
    (0.8, -0.3, 12.0),
    (-0.6, 1.1, 5.0),
    (1.2, 0.4, -0.5),
    (-1.4, -0.8, 9.25),
]


# ---------------------------------------------------------------------------------------
# the loop bodies: each a Python function of (x, y, n), written once over any number


def pendulum(x, y, n):
    """The plain recurrence: a pendulum stepped n times, its force reading the step."""
    return tang.fori_loop(
        n, lambda i, s: (s[0] + 0.01 * s[1], s[1] - 0.01 * tang.sin(s[0]) + 1e-4 * i), (x, y)
    )


def branch(x, y, n):
    """A body with a branch on a captured input."""
    return tang.fori_loop(9, lambda i, s: tang.where(s > y, s * 0.5 - 0.25, s * 1.75 + 0.1), x)


def unchanged(x, y, n):
    """State 0 never changes (no update line), state 1 reads it."""
    return tang.fori_loop(n, lambda i, s: (s[0], s[1] * 0.75 + s[0]), (x, y))


def swap(x, y, n):
    """Two states trade places each step: the second update reads a Copy."""
    return tang.fori_loop(n, lambda i, s: (s[1], s[0]), (x, y))


def rotate(x, y, n):
    """Three states rotate, the third starting from an expression of inputs."""
    return tang.fori_loop(n, lambda i, s: (s[1], s[2], s[0]), (x, y, x * y))


def step(x, y, n):
    """A body that reads the step number."""
    return tang.fori_loop(n, lambda i, s: s * 0.5 + i * i - 0.25 * i, x)


def capture(x, y, n):
    """A body that closes over two outer inputs; the state starts from a constant."""
    return tang.fori_loop(6, lambda i, s: s * y + x, 0.5)


def hoisted(x, y, n):
    """A body that closes over an expression of inputs: computed once, before the loop."""
    return tang.fori_loop(5, lambda i, s: s * 0.5 + tang.sin(x * y), x)


def nested(x, y, n):
    """A loop inside a loop's body, reading the outer state and both step numbers."""
    return tang.fori_loop(
        3, lambda i, s: tang.fori_loop(4, lambda j, t: t * 0.5 + s * y + j * i, s), x
    )


def forward(x, y, n):
    """Forward mode: Duals whose parts are nodes carry two tangents (d/dx, d/dy) through the
    state and through a Dual the body closes over."""
    dx, dy = tang.Dual(x, (1.0, 0.0)), tang.Dual(y, (0.0, 1.0))
    return tang.fori_loop(
        7, lambda i, s: (s[0] + 0.1 * s[1], s[1] - 0.1 * tang.sin(s[0]) * dy), (dx, dy)
    )


CASES: list[Callable] = [
    pendulum,
    branch,
    unchanged,
    swap,
    rotate,
    step,
    capture,
    hoisted,
    nested,
    forward,
]


def flatten(result) -> list:
    """A case's result as a flat list: tuples opened, each Dual as value then tangents."""
    out: list = []
    stack = [result]
    while stack:
        v = stack.pop()
        if isinstance(v, (tuple, list)):
            stack.extend(reversed(v))
        elif isinstance(v, tang.Dual):
            stack.extend((v.tangent, v.value))
        else:
            out.append(v)
    return out


def whole(n: float) -> int:
    """The steps a traced count runs: rounded down, nan and negatives none."""
    return max(math.floor(n), 0) if n == n else 0


# ---------------------------------------------------------------------------------------
# an ideal f32 machine that runs loops (toolchains.evaluate_f32 knows no loop node)


def _run_f32(order: Sequence[Node], val: dict[Node, object]) -> None:
    for node in order:
        if node in val:
            continue  # an input or a body parameter, filled in by the caller
        args = [val[a] for a in node.args]
        if node.op == "const":
            val[node] = to_f32(node.value)  # type: ignore[arg-type]
        elif node.op == "loop_out":
            val[node] = args[0][node.value]  # type: ignore[index]
        elif node.op == "loop":
            val[node] = _loop_f32(node, args)
        else:
            r = PRIMITIVES[node.op][1](*args)  # type: ignore[misc]
            val[node] = r if isinstance(r, bool) else to_f32(r)


def _loop_f32(node: Node, args: list) -> list:
    body = node.value
    n = body.nstate  # type: ignore[union-attr]
    state, captured = list(args[1 : 1 + n]), list(args[1 + n :])
    order = body.nodes()  # type: ignore[union-attr]
    for i in range(whole(args[0])):
        val = dict(zip(body.params, [float(i), *state, *captured]))  # type: ignore[union-attr]
        _run_f32(order, val)
        state = [val[o] for o in body.outputs]  # type: ignore[union-attr]
    return state


def evaluate_f32_loops(outputs: Sequence[Node], values: dict[str, float]) -> list[float]:
    """``outputs`` on an ideal f32 machine: inputs, constants and every step rounded to f32."""
    order = topo_order(outputs)
    val: dict[Node, object] = {n: to_f32(values[n.name]) for n in order if n.op == "var"}  # type: ignore[index]
    _run_f32(order, val)
    return [val[o] for o in outputs]  # type: ignore[misc]


# ---------------------------------------------------------------------------------------
# the batch: every case's outputs in one program


class Batch:
    def __init__(self) -> None:
        self.var = [var(name) for name in INPUTS]
        self.results = [c(*self.var) for c in CASES]
        per_case = [flatten(r) for r in self.results]
        self.owner = [c.__name__ for c, outs in zip(CASES, per_case) for _ in outs]
        self.outputs: list[Node] = [o for outs in per_case for o in outs]
        self.n, self.m = len(POINTS), len(self.outputs)
        self.src = [p[k] for k in range(len(INPUTS)) for p in POINTS]  # packed columns
        self.ref = [evaluate(self.outputs, dict(zip(INPUTS, p))) for p in POINTS]
        self.ref32 = [evaluate_f32_loops(self.outputs, dict(zip(INPUTS, p))) for p in POINTS]
        self.program = schedule(self.outputs, INPUTS)

    def where(self, j: int, i: int) -> str:
        return f"output {j} ({self.owner[j]}) at {dict(zip(INPUTS, POINTS[i]))}"

    def check_f64(self, got, rtol: float, label: str) -> None:
        """``got[j*n + i]`` against the reference: same nan/inf, finite within rtol."""
        bad = []
        for i in range(self.n):
            for j in range(self.m):
                v, r = got[j * self.n + i], self.ref[i][j]
                if kind(v) != kind(r) or (kind(r) == "num" and abs(v - r) > rtol * abs(r)):
                    bad.append(f"{self.where(j, i)}: {label} {v!r}, Python {r!r}")
        assert not bad, f"{len(bad)} mismatches, e.g.\n" + "\n".join(bad[:5])

    def check_f32(self, got, label: str) -> None:
        """``got[j*n + i]`` against the reference within f32 precision (module docstring)."""
        bad, unstable = [], 0
        for i in range(self.n):
            for j in range(self.m):
                v, r, e = got[j * self.n + i], self.ref[i][j], self.ref32[i][j]
                scale = max(1.0, abs(r)) if kind(r) == "num" else 1.0
                if kind(e) != kind(r) or (kind(r) == "num" and abs(e - r) > F32_TRUST * scale):
                    unstable += 1  # f32 itself cannot reproduce the f64 value here
                    continue
                if kind(v) != kind(r) or (kind(r) == "num" and abs(v - r) > F32_TOL * scale):
                    bad.append(f"{self.where(j, i)}: {label} {v!r}, Python {r!r}, f32 {e!r}")
        assert not bad, f"{len(bad)} mismatches, e.g.\n" + "\n".join(bad[:5])
        assert unstable < MAX_UNSTABLE * self.n * self.m, f"{unstable} values beyond f32"


@pytest.fixture(scope="module")
def batch() -> Batch:
    return Batch()


def need(backend: str) -> None:
    missing = tc.missing_tool(backend)
    if missing is not None:
        skip_missing_tool(missing, f"{missing} is not available here, so {backend} is not run")


def kernel(batch: Batch, backend: str, **kw) -> str:
    return BACKENDS[backend].render(batch.program, **kw).source


def by_point(batch: Batch, out: Sequence[float]) -> list[float]:
    """Function results (ordered point, output) as kernel results (output, point)."""
    return [out[i * batch.m + j] for j in range(batch.m) for i in range(batch.n)]


# ---------------------------------------------------------------------------------------
# the graph: loops, not unrolled steps


def test_every_case_is_traced_into_loop_nodes(batch):
    for case, result in zip(CASES, batch.results):
        outs = flatten(result)
        assert all(isinstance(o, Node) and o.op == "loop_out" for o in outs), case.__name__
        ops = {n.op for n in topo_order(outs)}
        assert "loop" in ops, case.__name__
    assert len(batch.program.loops) == len(CASES) + 1  # nested holds a second loop
    inner = [lp for lp in batch.program.loops if any(s.__class__ is Loop for s in lp.body)]
    assert len(inner) == 1  # one loop's body holds a Loop statement
    copies = [s for s in walk(batch.program.statements) if s.__class__ is Copy]
    assert len(copies) == 2  # swap and rotate each keep one old value before the updates


def test_captures_and_hoisting():
    x, y = var("x"), var("y")
    (out,) = flatten(hoisted(x, y, None))
    loop = out.args[0]
    body = loop.value
    assert loop.args[2:] == (tang.sin(x * y),)  # the expression of inputs is an operand
    assert all(n.op != "sin" for n in body.nodes())  # ... and not in the body
    source = lower([out], ["x", "y"], "c").source.splitlines()
    at_for = next(k for k, line in enumerate(source) if "for (int" in line)
    assert any("sin(" in line for line in source[:at_for])  # computed once, before the loop
    assert not any("sin(" in line for line in source[at_for:])
    (out,) = flatten(capture(x, y, None))
    assert set(out.args[0].args[2:]) == {x, y}  # captured inputs, read by name in the body
    # in a loop inside a loop, an expression of the outer state is hoisted out of the inner
    (out,) = flatten(nested(x, y, None))
    outer = out.args[0].value
    inner = outer.outputs[0].args[0]
    assert inner.op == "loop" and inner.args[2] is outer.states[0] * outer.captures[0]


def test_counts_round_down_and_nan_runs_no_step(batch):
    kinds = {kind(v) for row in batch.ref for v in row}
    assert kinds == {"num"}  # every count, even nan, runs a finite number of steps
    # the count rounds down; nan, -0.0 and negatives run no step: states keep their start
    j = batch.owner.index("swap")
    for i, (x, y, n) in enumerate(POINTS):
        assert batch.ref[i][j : j + 2] == ([y, x] if whole(n) % 2 else [x, y])
    assert {whole(p[2]) for p in POINTS} >= {0, 2, 3, 7, 9, 12}


# ---------------------------------------------------------------------------------------
# Python: bit for bit


def bits(v: float) -> bytes:
    return struct.pack("<d", v)


def test_reference_is_the_plain_float_run(batch):
    """evaluate(loop node) == the same Python function run on floats (count rounded)."""
    for i, (x, y, n) in enumerate(POINTS):
        plain = [float(v) for c in CASES for v in flatten(c(x, y, whole(n)))]
        assert len(plain) == batch.m
        for j, (p, r) in enumerate(zip(plain, batch.ref[i])):
            assert bits(p) == bits(r), f"{batch.where(j, i)}: plain {p!r}, evaluate {r!r}"


def test_python_kernel_is_bit_identical_to_evaluate(batch):
    got = tc.run_python_kernel(kernel(batch, "python"), "f", batch.src, batch.n, batch.m)
    for i in range(batch.n):
        for j in range(batch.m):
            v, r = got[j * batch.n + i], batch.ref[i][j]
            assert bits(v) == bits(r), f"{batch.where(j, i)}: kernel {v!r}, evaluate {r!r}"


def test_python_function_is_bit_identical_to_evaluate(batch):
    namespace: dict = {}
    exec(kernel(batch, "python", shape="function"), namespace)  # our printer's output
    for i, p in enumerate(POINTS):
        got = namespace["f"](*p)
        assert [bits(v) for v in got] == [bits(r) for r in batch.ref[i]], POINTS[i]


def test_forward_mode_tangents_are_the_derivatives():
    """The Duals' tangents after the loop match central differences of its values."""
    h = 1e-6

    def values(x: float, y: float) -> list[float]:
        out = flatten(forward(x, y, None))
        return [out[0], out[3]]  # each state: value, d/dx, d/dy

    for x, y, _ in POINTS[:6]:
        out = flatten(forward(x, y, None))
        for k, value in enumerate(values(x, y)):
            assert value == out[3 * k]
            dx = (values(x + h, y)[k] - values(x - h, y)[k]) / (2 * h)
            dy = (values(x, y + h)[k] - values(x, y - h)[k]) / (2 * h)
            assert out[3 * k + 1] == pytest.approx(dx, rel=1e-6, abs=1e-8)
            assert out[3 * k + 2] == pytest.approx(dy, rel=1e-6, abs=1e-8)


# ---------------------------------------------------------------------------------------
# f64: C and JavaScript


@pytest.mark.toolchain
def test_c_kernel_and_function_gcc_sanitized(batch):
    need("c")
    got = tc.run_c_kernel(kernel(batch, "c"), "f", batch.src, batch.n, batch.m)
    batch.check_f64(got, F64_RTOL, "C kernel")
    points = [v for p in POINTS for v in p]
    out = tc.run_c_functions(kernel(batch, "c", shape="function"), ["f"], points, 3, batch.m)
    batch.check_f64(by_point(batch, out), F64_RTOL, "C function")


@pytest.mark.toolchain
def test_javascript_kernel_and_function_node(batch):
    need("javascript")
    got = tc.run_js_kernel(kernel(batch, "javascript"), "f", batch.src, batch.n, batch.m)
    batch.check_f64(got, F64_RTOL, "JavaScript kernel")
    points = [v for p in POINTS for v in p]
    text = kernel(batch, "javascript", shape="function")
    out = tc.run_js_functions(text, ["f"], points, 3, batch.m)
    batch.check_f64(by_point(batch, out), F64_RTOL, "JavaScript function")


# ---------------------------------------------------------------------------------------
# f32: WGSL and GLSL on lavapipe, OpenCL on PoCL, Metal and CUDA as C++ (and nvcc)


@pytest.mark.toolchain
@pytest.mark.parametrize("backend", ["wgsl", "glsl", "opencl", "metal", "cuda"])
def test_f32_backend_runs_the_loops(batch, backend):
    need(backend)
    text = kernel(batch, backend)
    assert text.count("for (") == len(CASES) + 1  # real loops, one per loop node
    got = tc.run_kernel(backend, text, batch.src, batch.n, batch.m, "f32")
    batch.check_f32(got, backend)


@pytest.mark.toolchain
def test_cuda_compiled_by_nvcc_f32_and_f64(batch):
    if not tc.available("nvcc"):
        skip_missing_tool("nvcc", "not installed here; the CUDA source still runs as C++ above")
    text = kernel(batch, "cuda") + kernel(batch, "cuda", dtype="f64", name="g")
    tc.nvcc_compile(text)  # raises with nvcc's diagnostic (warnings are errors)
    assert "void g(const double" in text


@pytest.mark.toolchain
def test_cuda_on_a_gpu(batch):
    """Where a CUDA device exists the kernel runs on it; elsewhere nvcc still builds the
    kernel and its host driver, and the test says why it stops there."""
    if not tc.available("nvcc"):
        skip_missing_tool("nvcc", "nvcc is not installed here")
    try:
        got = tc.run_cuda_on_gpu(kernel(batch, "cuda"), "f", batch.src, batch.n, batch.m)
    except tc.NoCudaDevice as err:
        reason = f"no CUDA device here ({err}); nvcc built the kernel and its driver"
        skip_missing("device", "a CUDA GPU", reason)
    batch.check_f32(got, "CUDA")


# ---------------------------------------------------------------------------------------
# the node ↔ line map


DEFINES = r"\b{}\b\s*(:\s*\w+\s*)?=(?!=)"  # `t4 = `, `const double t4 = `, `var t4: f32 = `


def expected_lines(printer, program, shape: str) -> list[tuple[tuple[Node, ...], str]]:
    """What each line from the first load to the last store must compute (its nodes) and
    look like (a pattern), in print order, from the program's statements."""
    kernel_shape = shape == "kernel"
    out: list[tuple[tuple[Node, ...], str]] = []
    returned: list[Node] = []

    def walk(statements, depth: int) -> None:
        at = rf"^(?:{re.escape(printer.indent)}){{{depth}}}"  # the statement's own indent
        pad = at + r"(?=\S)"
        for st in statements:
            if st.__class__ is Load:
                if kernel_shape:
                    out.append(((st.node,), pad + r".*src\["))
            elif st.__class__ is Let:
                out.append((st.nodes, pad + ".*" + DEFINES.format(st.name)))
            elif st.__class__ is Copy:  # saves a state's old value: computes no node
                out.append(((), pad + ".*" + DEFINES.format(st.name)))
            elif st.__class__ is Loop:
                read = {name: node for node, name in st.outs}
                for _, name, _ in st.states:  # the state's loop_out, or the loop when unread
                    out.append(((read.get(name, st.node),), pad + ".*" + DEFINES.format(name)))
                out.append(((st.node,), at + rf"for\b.*\b{st.counter}\b"))
                walk(st.body, depth + 1)
                inner = rf"^(?:{re.escape(printer.indent)}){{{depth + 1}}}"
                for name, node, _ in st.updates:
                    out.append(((node,), inner + DEFINES.format(name)))
                if printer.repeat_end is not None:
                    out.append(((), at + re.escape(printer.repeat_end) + "$"))
            else:
                assert st.__class__ is Store
                nodes = st.nodes or (st.node,)
                if kernel_shape:
                    out.append((nodes, pad + r".*dst\["))
                elif printer.fn_return is None:
                    out.append((nodes, pad + r".*\bout\["))
                else:
                    returned.extend(nodes)

    walk(program.statements, 0)
    if returned:
        out.append((tuple(returned), r"^\s*return\b"))
    return out


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_line_map_is_exact_around_loops(batch, backend):
    """Each printed line from the first load to the last store maps to the nodes of its
    statement: a Let line to its nodes, a state's line to its loop_out, the ``for`` line to
    the loop node, an update to the state's next value, the closing line to nothing; the
    lines are contiguous, a loop's body lies inside it, and every node is reachable."""
    printer = BACKENDS[backend]
    shapes = ["kernel", "function"] if backend in ("python", "c", "javascript") else ["kernel"]
    for shape in shapes:
        for inline in (True, False):
            prog = schedule(batch.outputs, INPUTS, inline=inline)
            low = printer.render(prog, shape=shape)
            lines = low.source.splitlines()
            want = expected_lines(printer, prog, shape)
            assert len(low.body_nodes) == len(want), (backend, shape, inline)
            base = None
            for k, ((nodes, pattern), got) in enumerate(zip(want, low.body_nodes)):
                number = low.first_line + k
                text = lines[number - 1]
                if base is None:
                    base = len(text) - len(text.lstrip())
                assert got == nodes, (backend, shape, inline, number, text)
                assert re.search(pattern, text[base:]), (backend, shape, inline, pattern, text)
            assert sorted(low.line_nodes) == list(range(low.first_line, low.first_line + len(want)))
            # after the last mapped line only the frame closes: nothing computes
            rest = [t.strip() for t in lines[low.first_line - 1 + len(want) :]]
            assert all(t in ("", "}") for t in rest), (backend, shape, rest)
            check_loop_blocks(low, prog, lines)


def check_loop_blocks(low, prog, lines: list[str]) -> None:
    """Every loop's ``for`` line maps to the loop node alone; the lines of its body (those
    indented deeper) map only to nodes of its body, every body operation to one of them;
    every operation of the program, bodies included, maps to some line. (Loops with equal
    bodies share those nodes, so a node's lines may lie in several loops.)"""
    node_lines = low.node_lines
    for st in prog.loops:
        (for_line,) = (
            k for k, ns in low.line_nodes.items() if ns == (st.node,) and "for" in lines[k - 1]
        )
        indent = len(lines[for_line - 1]) - len(lines[for_line - 1].lstrip())
        end = for_line
        while len(lines[end]) - len(lines[end].lstrip()) > indent:
            end += 1  # lines for_line+1 … end are the body and the updates
        block = range(for_line + 1, end + 1)
        body = all_nodes(st.node.value.outputs)
        inside = {n for k in block for n in low.line_nodes[k]}
        assert inside <= set(body), (for_line, inside - set(body))
        for node in body:
            if node.op not in ("var", "const"):
                assert any(k in block for k in node_lines[node]), (node, for_line, end)
    ops = [n for n in all_nodes(prog.outputs) if n.op not in ("var", "const")]
    assert len(ops) > 50 and all(n in node_lines for n in ops)


def all_nodes(outputs: Sequence[Node]) -> list[Node]:
    """The nodes ``outputs`` reach, those of loop bodies (nested ones too) included."""
    seen: dict[Node, None] = {}
    pending = [list(outputs)]
    while pending:
        for node in topo_order(pending.pop()):
            if node not in seen:
                seen[node] = None
                if node.op == "loop":
                    pending.append(list(node.value.outputs))
    return list(seen)


# ---------------------------------------------------------------------------------------
# size, reverse mode, text


def test_kernel_size_does_not_grow_with_the_step_count():
    x, v = var("x"), var("v")

    def flight(steps: int) -> list[Node]:
        def body(i, s):
            return s[0] + 0.01 * s[1], s[1] - 0.01 * tang.sin(s[0]) + 1e-4 * i

        return list(tang.fori_loop(steps, body, (x, v)))

    short, long = flight(16), flight(1600)
    assert count_nodes(short) == count_nodes(long) < 40
    for name in BACKENDS:
        small = lower(short, ["x", "v"], name).source
        big = lower(long, ["x", "v"], name).source
        assert big.count("1600") == 1 and len(big) == len(small) + 2, name
        assert re.sub(r"\b1600\b", "16", big) == small, name


def test_reverse_mode_through_a_loop_is_a_clear_error():
    x, y, n = (var(name) for name in INPUTS)
    out = pendulum(x, y, n)[0]
    message = r"reverse mode does not pass the loop node #\d+ \(tang\.fori_loop\).*forward"
    with pytest.raises(LoopGradientError, match=message):
        backward(out, ["x", "y"])
    with pytest.raises(LoopGradientError, match=message):
        gradient(out)
    graph = tang.trace(lambda x, y: hoisted(x, y, None))
    with pytest.raises(LoopGradientError, match=message):
        tang.grad(graph)
    with pytest.raises(LoopGradientError, match=message):
        gradient(Graph(["x", "y", "n"], [step(x, y, n)]), ["x"])
    with pytest.raises(LoopGradientError, match=message):
        tang.grad(lambda x: tang.fori_loop(3, lambda i, s: s * x, 1.0))(2.0)
    assert issubclass(LoopGradientError, ValueError)
    # forward mode is the way through: the same loop on Duals gives the derivative
    assert tang.derivative(lambda x: tang.fori_loop(3, lambda i, s: s * x, 1.0))(2.0) == 12.0


def test_to_text_prints_the_loop_with_its_body():
    """In a fresh interpreter: a product's operands print in the order their nodes were
    first made, which earlier tests in this process would change."""
    script = "\n".join(
        [
            "import inspect, tang",
            *(inspect.getsource(f) for f in (hoisted, swap, nested)),
            "x, y, n = tang.var('x'), tang.var('y'), tang.var('n')",
            "print(tang.to_text(hoisted(x, y, n)))",
            "print(tang.to_text(swap(x, y, n)[1]))",
            "print(tang.to_text(nested(x, y, n)))",
        ]
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "loop(5, (x), (i, s0) -> (s0 * 0.5 + c0) with c0 = sin(x * y))[0]",
        "loop(where(0 <= n, where(n < 16777216, floor(n), 16777216), 0), (x, y), "
        "(i, s0, s1) -> (s1, s0))[1]",
        "loop(3, (x), (i, s0) -> (loop(4, (s0), (i_2, s0_2) -> (0.5 * s0_2 + c0_2 + i_2 * c1_2)"
        " with c0_2 = s0 * c0, c1_2 = i)[0]) with c0 = y)[0]",
    ]


# ---------------------------------------------------------------------------------------
# dead states: a state nothing reads is not printed (gcc -Werror would reject it)


@pytest.mark.toolchain
def test_a_state_nobody_reads_compiles_with_warnings_as_errors():
    need("c")
    x, y, n = (var(name) for name in INPUTS)
    kept = tang.fori_loop(n, lambda i, s: (s[0], s[1] * 2.0), (x, y))[1]
    constant = tang.fori_loop(n, lambda i, s: (2.0, s[1] * 2.0), (x, y))[1]
    text = lower([kept, constant], INPUTS, "c").source
    assert text.count("for (int") == 1  # both loops keep one state, the same: one loop
    got = tc.run_c_kernel(text, "f", [1.0, 3.0, 2.0], 1, 2)
    assert list(got) == [12.0, 12.0]
