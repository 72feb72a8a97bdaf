"""Jacobian sparsity: which outputs depend on which inputs, with no 64-input limit."""

from __future__ import annotations

import tang
from tang.expr import graph as g
from tang.expr.sparsity import dependency_masks, jacobian_sparsity


def test_pattern_of_a_small_function() -> None:
    graph = tang.trace(lambda x, y, z: [x * y, tang.sin(z), 3.0, x + x])
    assert jacobian_sparsity(graph) == [
        [True, True, False],
        [False, False, True],
        [False, False, False],
        [True, False, False],
    ]


def test_select_conditions_count_only_when_asked() -> None:
    graph = tang.trace(lambda x, y: tang.where(x < 0, y, 2.0 * y))
    assert jacobian_sparsity(graph) == [[False, True]]  # d/dx is zero almost everywhere
    assert dependency_masks(graph, through_conditions=True) == [0b11]


def test_variables_outside_the_inputs_are_ignored() -> None:
    graph = tang.Graph(["x"], [g.var("x") * g.var("w")])
    assert dependency_masks(graph) == [1]


def test_a_thousand_inputs() -> None:
    n = 1000
    names = [f"v{i}" for i in range(n)]

    def f(*v):  # output i depends on inputs i and i+1 (a banded Jacobian), and one on all
        return [v[i] * v[(i + 1) % n] for i in range(n)] + [sum(v)]

    graph = tang.trace(f, names)
    masks = dependency_masks(graph)
    assert masks[5] == (1 << 5) | (1 << 6) and masks[n - 1] == (1 << (n - 1)) | 1
    assert masks[n] == (1 << n) - 1  # beyond any 64-bit word
    rows = jacobian_sparsity(graph)
    assert sum(map(sum, rows)) == 2 * n + n
    # the structural pattern agrees with the numbers where they are nonzero
    jac = tang.jacobian(lambda *v: [v[i] * v[i + 1] for i in range(3)])(
        *[1.0 + i for i in range(n)]
    )
    assert [[d != 0.0 for d in row] for row in jac] == rows[:3]
