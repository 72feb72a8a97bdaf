"""What an op of ``tang.nn`` is to the autograd of :mod:`tang.nn.tensor`. There are two
kinds, and neither writes a derivative: :class:`tang.nn.maps.Map` runs an element-wise op
of the tensor IR, :class:`tang.nn.derived.Derived` any other; both run the gradient that
``tang.tensor.grad`` derives.

``forward(B, *arrays)`` computes the value with the backend ``B``'s array primitives and
keeps on ``self`` what the gradient reads; ``backward(B, g)`` turns the output's gradient
``g`` into one gradient per input, ``None`` where ``self.needs`` says that input wants none.
"""

from __future__ import annotations

from typing import Any

Array = Any
Grads = tuple[Array | None, ...]


class Op:
    """One differentiable primitive (see the module docstring)."""

    needs: tuple[bool, ...] = ()

    def forward(self, B, *xs: Array) -> Array:
        raise NotImplementedError

    def backward(self, B, g: Array) -> Grads:
        raise NotImplementedError
