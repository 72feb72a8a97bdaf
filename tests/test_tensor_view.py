"""Views are affine maps that compose without copying: each transformation is checked against
numpy's own strided view of the same memory (``as_strided`` over one base buffer) on random
shapes, reshapes succeed exactly when numpy's no-copy reshape does, and substitution
(``compose``) agrees with applying the maps one after the other."""

from __future__ import annotations

import random

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from tang import tensor
from tang.tensor.view import IndexMap, NonAffineReshape, View


def strided(base: np.ndarray, view: View) -> np.ndarray:
    """The elements ``view`` addresses in ``base`` (a 1-d float64 buffer), read by numpy."""
    item = base.itemsize
    return as_strided(base[view.offset :], view.shape, tuple(s * item for s in view.strides))


def random_step(rng: random.Random, view: View, arr: np.ndarray) -> tuple[View, np.ndarray]:
    """One random view transformation applied to both our View and numpy's array."""
    kind = rng.choice(["permute", "T", "slice", "index", "broadcast", "expand", "reshape_split"])
    nd = view.ndim
    if kind == "permute" and nd:
        axes = list(range(nd))
        rng.shuffle(axes)
        return view.permute(axes), arr.transpose(axes)
    if kind == "T":
        return view.T, arr.T
    if kind == "slice" and nd:
        axis = rng.randrange(nd)
        n = view.shape[axis]
        start = rng.choice([None, rng.randrange(-n, n) if n else 0])
        stop = rng.choice([None, rng.randrange(-n - 1, n + 1)])
        step = rng.choice([None, 1, 2, -1, -2, 3])
        key = [slice(None)] * nd
        key[axis] = slice(start, stop, step)
        return view.slice(axis, start, stop, step), arr[tuple(key)]
    if kind == "index" and nd and view.shape[rng.randrange(nd)] > 0:
        axis = rng.randrange(nd)
        if view.shape[axis] == 0:
            return view, arr
        i = rng.randrange(-view.shape[axis], view.shape[axis])
        key = [slice(None)] * nd
        key[axis] = i
        return view.index(axis, i), arr[(*key, ...)]  # '...' keeps a 0-d view, not a copy
    if kind == "broadcast":
        shape = [rng.choice([n, n]) if n != 1 else rng.choice([1, 3]) for n in view.shape]
        shape = [rng.choice([1, 2]), *shape]
        return view.broadcast_to(shape), np.broadcast_to(arr, shape)
    if kind == "expand":
        axis = rng.randrange(nd + 1)
        return view.expand_dims(axis), np.expand_dims(arr, axis)
    if kind == "reshape_split" and nd and view.shape[-1] % 2 == 0 and view.shape[-1] > 0:
        shape = (*view.shape[:-1], 2, view.shape[-1] // 2)
        return view.reshape(shape), arr.reshape(shape)
    return view, arr


@pytest.mark.parametrize("seed", range(40))
def test_random_view_chains_match_numpys_strided_views(seed: int) -> None:
    rng = random.Random(seed)
    shape = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 3)))
    base = np.arange(float(np.prod(shape)))
    view, arr = View.contiguous(shape), base.reshape(shape)
    for _ in range(6):
        view, arr = random_step(rng, view, arr)
        assert view.shape == arr.shape
        if arr.size:
            np.testing.assert_array_equal(strided(base, view), arr)
            assert view.offset == (arr.__array_interface__["data"][0] - base.ctypes.data) // 8
            for n, ours, theirs in zip(view.shape, view.strides, arr.strides):
                if n > 1:
                    assert ours * 8 == theirs


@pytest.mark.parametrize("seed", range(40))
def test_reshape_is_affine_exactly_when_numpy_needs_no_copy(seed: int) -> None:
    rng = random.Random(1000 + seed)
    shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(2, 4)))
    base = np.arange(float(np.prod(shape)))
    view, arr = View.contiguous(shape), base.reshape(shape)
    for _ in range(3):
        view, arr = random_step(rng, view, arr)
    size = int(np.prod(arr.shape))
    targets = [(size,), (1, size), (size, 1)]
    if len(arr.shape) >= 2:
        targets.append((int(np.prod(arr.shape[:2])), *arr.shape[2:]))
        targets.append((*arr.shape[:-2], int(np.prod(arr.shape[-2:]))))
    for target in targets:
        try:
            theirs = np.reshape(arr, target, copy=False)
        except ValueError:
            with pytest.raises(NonAffineReshape, match="not affine"):
                view.reshape(target)
            continue
        ours = view.reshape(target)
        if size:
            np.testing.assert_array_equal(strided(base, ours), theirs)


def test_a_non_affine_reshape_says_so_and_the_front_end_materialises() -> None:
    v = View.contiguous((3, 4)).T
    with pytest.raises(NonAffineReshape, match="materialise"):
        v.reshape((12,))
    x = tensor.input("x", (3, 4))
    flat = x.T.reshape(12)  # the front end copies explicitly, then reshapes the copy
    assert flat.buffer is not x.buffer and flat.shape == (12,)
    g = tensor.graph(y=flat)
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(tensor.evaluate(g, {"x": a})["y"], a.T.reshape(12))


def test_front_end_views_never_copy() -> None:
    x = tensor.input("x", (4, 6))
    y = x.T[1:, ::-2].broadcast_to((2, 5, 2)).reshape(2, 5, 2)[:, None, 0]
    assert y.buffer is x.buffer  # still the input: no comprehension was recorded
    g = tensor.graph(y=y)
    assert len(g) == 1  # the one copy an output that is a view needs
    a = np.arange(24.0).reshape(4, 6)
    ref = np.broadcast_to(a.T[1:, ::-2], (2, 5, 2))[:, None, 0]
    np.testing.assert_array_equal(tensor.evaluate(g, {"x": a})["y"], ref)


@pytest.mark.parametrize("seed", range(20))
def test_compose_is_substitution(seed: int) -> None:
    rng = random.Random(seed)
    view = View(
        tuple(rng.randint(1, 4) for _ in range(3)), tuple(rng.randint(-5, 5) for _ in range(3)), 50
    )
    domain = tuple(rng.randint(1, 4) for _ in range(2))
    rows = tuple(tuple(rng.randint(-1, 1) for _ in domain) for _ in range(3))
    index = IndexMap(domain, rows, tuple(rng.randint(0, 2) for _ in range(3)))
    inner = IndexMap((3,), tuple((rng.randint(-1, 1),) for _ in domain), (1, 1))
    for point in np.ndindex(*domain):
        position = view.offset + sum(s * i for s, i in zip(view.strides, index(point)))
        composed = view.compose(index)
        assert composed.offset + sum(s * i for s, i in zip(composed.strides, point)) == position
    for point in np.ndindex(3):
        assert index.compose(inner)(point) == index(inner(point))


def test_unravel_recovers_the_row_major_index_or_refuses() -> None:
    base = View.contiguous((4, 6))
    v = base.T[::2, 1:]
    m = v.unravel((4, 6))
    assert m is not None
    for point in np.ndindex(*v.shape):
        assert np.ravel_multi_index(m(point), (4, 6)) == v.offset + sum(
            s * i for s, i in zip(v.strides, point)
        )
    assert View.contiguous((24,)).unravel((4, 6)) is None  # a flat walk is no affine index


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda v: v.permute((0, 0)), "not a permutation"),
        (lambda v: v.broadcast_to((5, 3)), "cannot broadcast"),
        (lambda v: v.index(0, 7), "out of range"),
        (lambda v: v.slice(0, 0, 2, 0), "cannot be zero"),
        (lambda v: v.reshape((5,)), "cannot reshape"),
        (lambda v: v[0, 0, 0], "too many indices"),
        (lambda v: v.address((3, 0)), "out of range"),
    ],
)
def test_bad_view_operations_say_why(call, message: str) -> None:
    with pytest.raises((ValueError, IndexError), match=message):
        call(View.contiguous((3, 4)))
