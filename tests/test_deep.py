"""No recursion anywhere: a 200,000-node chain traces, differentiates, simplifies,
evaluates and is freed — under a recursion limit far below its depth."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import tang
from tang.expr.sparsity import dependency_masks

STEPS = 100_000  # two nodes a step: a chain of 200,000 nodes


def chain(x):
    y = x
    for _ in range(STEPS):
        y = y * 0.999 + x
    return y


@contextmanager
def shallow_stack(frames: int = 120) -> Iterator[None]:
    """Allow only ``frames`` more Python frames than the caller already uses."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.fixture(scope="module")
def graph() -> tang.Graph:
    with shallow_stack():
        return tang.trace(chain)


@pytest.fixture(scope="module")
def gradient(graph: tang.Graph) -> tang.Graph:
    with shallow_stack():
        return tang.grad(graph)


def test_trace_builds_the_whole_chain(graph: tang.Graph) -> None:
    assert len(graph) == 2 * STEPS + 2  # x, 0.999 and the chain


def test_differentiate_and_evaluate(gradient: tang.Graph) -> None:
    with shallow_stack():
        value, slope = gradient.eval([0.3])
    assert value == pytest.approx(chain(0.3), rel=1e-12)
    assert slope == pytest.approx(tang.derivative(chain)(0.3), rel=1e-12)
    assert slope == pytest.approx((1 - 0.999 ** (STEPS + 1)) / (1 - 0.999), rel=1e-9)


def test_replay_on_floats_and_on_duals(gradient: tang.Graph) -> None:
    with shallow_stack():
        floats = tang.replay(gradient, [0.3])
        value, slope = tang.replay(gradient, [tang.Dual(0.3, 1.0)])
    assert floats == gradient.eval([0.3])
    assert value.value == floats[0] and value.tangent == pytest.approx(floats[1], rel=1e-12)
    assert slope == floats[1]  # the chain is linear: its slope folded to a constant


def test_simplify(graph: tang.Graph) -> None:
    bigger = tang.Graph(graph.inputs, [graph.outputs[0] * 1.0 + -0.0])
    with shallow_stack():
        small = tang.simplify(bigger, assume_finite=False)
        assert small.outputs[0] is graph.outputs[0]


def test_sparsity(graph: tang.Graph) -> None:
    with shallow_stack():
        assert dependency_masks(graph) == [1]


@pytest.mark.slow  # seconds of CPU: out of the fast lane, in the full suite
def test_dropping_deep_graphs_and_duals_does_not_crash() -> None:
    # in a child process: a crash in the deallocator must fail this test, not kill pytest
    code = textwrap.dedent(
        """
        import gc, tang
        x = tang.var("x")
        y = x
        for _ in range(100_000):
            y = y * 1.5 + x
        n = tang.Dual(x, 1.0)  # a Dual whose value and tangent are deep graphs
        for _ in range(100_000):
            n = tang.sin(n)
        del y, n
        gc.collect()
        tang.expr.graph.collect()
        print("freed")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "freed"
