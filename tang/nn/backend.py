"""Choosing where tensors keep their numbers: ``"python"`` (flat lists, runs everywhere,
Pyodide included) or ``"numpy"`` (desktop, optional import). A backend is picked per tensor
(``backend=`` arguments) with a process-wide default (:func:`set_backend`).

A backend is an object with a ``name`` and the array primitives that the steps of
:mod:`tang.nn.maps` and :mod:`tang.nn.derived` call — making (``from_flat``, ``adopt``,
``full``, ``one_hot``, ``copy``, ``to_flat``), element-wise (``map``: a body of the tensor IR
over whole arrays, broadcast, see :mod:`tang.nn.maps`; ``add``), reductions (``sum amax``
over dims, ``sum_to`` a broadcast source's shape, ``argmax_flat``), moves (``broadcast_to
reshape transpose gather_flat scatter_add_flat``), products (``matmul`` with transpose
flags, ``hot_matmul`` (+ b) and its gradient for one-hot inputs). The optimizers' updates
are ``map`` too (:mod:`tang.nn.optim`). Arrays expose ``.shape``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .pybackend import PythonBackend

Backend = Any  # PythonBackend or NumpyBackend: the same primitives, duck-typed

_instances: dict[str, Backend] = {"python": PythonBackend()}
_default: list[Backend] = [_instances["python"]]


def available_backends() -> list[str]:
    """Names of the backends this interpreter can run."""
    names = ["python"]
    try:
        import numpy  # noqa: F401
    except ImportError:
        return names
    return [*names, "numpy"]


def get_backend(which: str | Backend | None = None) -> Backend:
    """The backend named ``which`` (or that object itself); ``None`` is the default."""
    if which is None:
        return _default[0]
    if not isinstance(which, str):
        if not hasattr(which, "matmul") or not hasattr(which, "name"):
            raise TypeError(f"not a backend: {which!r}")
        return which
    found = _instances.get(which)
    if found is not None:
        return found
    if which == "numpy":
        try:
            from .npbackend import NumpyBackend
        except ImportError as exc:
            raise ValueError(
                "backend 'numpy' needs numpy, which is not installed here "
                "(in the browser only 'python' exists)"
            ) from exc
        _instances["numpy"] = NumpyBackend()
        return _instances["numpy"]
    raise ValueError(f"unknown backend {which!r}: choose from {available_backends()}")


def set_backend(which: str | Backend) -> Backend:
    """Make ``which`` the default for new tensors and modules; returns the previous one."""
    previous = _default[0]
    _default[0] = get_backend(which)
    return previous


@contextmanager
def use_backend(which: str | Backend) -> Iterator[Backend]:
    """``with use_backend("numpy"): ...`` — the default backend inside the block."""
    previous = set_backend(which)
    try:
        yield _default[0]
    finally:
        _default[0] = previous
