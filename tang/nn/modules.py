"""``Module`` and the layers built on it, named and keyed as in PyTorch (``0.weight``)."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

from . import functional as F
from .backend import Backend, get_backend
from .tensor import Parameter, Tensor, _array_from, _wrap


class Module:
    """A callable holding parameters and sub-modules, registered by attribute assignment."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"call Module.__init__() in {type(self).__name__}.__init__")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # -- walking -----------------------------------------------------------------------------
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            yield name, module
            children = [(f"{name}.{k}" if name else k, m) for k, m in module._modules.items()]
            stack.extend(reversed(children))

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        for name, module in self.named_modules(prefix):
            for key, p in module._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{name}.{key}" if name else key), p

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    def children(self) -> Iterator[Module]:
        yield from self._modules.values()

    def num_parameters(self) -> int:
        """How many numbers the parameters hold."""
        return sum(p.numel() for p in self.parameters())

    # -- modes and gradients -----------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        for _, m in self.named_modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def to(self, backend: str | Backend) -> Module:
        """Move every parameter to ``backend`` in place (the Parameter objects stay; make
        the optimizer afterwards, as its state lives on the parameters' backend)."""
        B = get_backend(backend)
        for p in self.parameters():
            if p.backend is not B:
                p.data = _array_from(p.data, B)
                p.backend = B
                p.grad = None
        return self

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Tensor]:
        """Name → a copy of each parameter, keyed as in PyTorch (``0.weight``)."""
        return {name: p.clone() for name, p in self.named_parameters()}

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> None:
        """Copy ``state`` into the parameters. Every key and shape is checked first; on any
        problem nothing is assigned and one ValueError lists them all. ``strict=False``
        allows missing and unexpected keys (shapes are always checked)."""
        params = dict(self.named_parameters())
        problems: list[str] = []
        if not hasattr(state, "items"):
            raise TypeError(f"load_state_dict needs a mapping, not {type(state).__name__}")
        missing = [k for k in params if k not in state]
        unexpected = [k for k in state if k not in params]
        if missing and strict:
            problems.append(f"missing keys {missing}")
        if unexpected and strict:
            problems.append(f"unexpected keys {unexpected}")
        ready: dict[str, Any] = {}
        for name, p in params.items():
            if name not in state:
                continue
            value = state[name]
            try:
                arr = _array_from(value.data if isinstance(value, Tensor) else value, p.backend)
            except (TypeError, ValueError) as exc:
                problems.append(f"{name!r}: {exc}")
                continue
            shape = tuple(arr.shape)
            if shape != p.shape:
                problems.append(f"{name!r} has shape {shape} but the model's is {p.shape}")
                continue
            flat = p.backend.to_flat(arr)
            if not all(math.isfinite(v) for v in flat):
                problems.append(f"{name!r} holds a non-finite number")
                continue
            ready[name] = arr
        if problems:
            raise ValueError("load_state_dict: " + "; ".join(problems))
        for name, arr in ready.items():
            params[name].data = arr
            params[name].grad = None


INITS = ("uniform", "glorot")


class Linear(Module):
    """y = x·Wᵀ + b with W [out, in]. ``init="uniform"`` (the default, PyTorch's): W and b
    uniform in ±1/√in; ``init="glorot"``: W uniform in ±√(6 / (in + out)) (Glorot, the range
    meant for tanh layers) and b zero. The numbers come from ``random.Random(seed)`` so every
    backend starts from the same ones; ``seed`` may also be a ``random.Random`` that several
    layers draw from in turn (as layers share the global generator after torch.manual_seed)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        seed: int | random.Random | None = None,
        backend: str | Backend | None = None,
        init: str = "uniform",
    ) -> None:
        super().__init__()
        if in_features <= 0 or out_features <= 0:
            raise ValueError(f"Linear({in_features}, {out_features}): sizes must be positive")
        if init not in INITS:
            raise ValueError(f"Linear: init must be one of {list(INITS)}, not {init!r}")
        self.in_features, self.out_features = in_features, out_features
        B = get_backend(backend)
        rng = seed if isinstance(seed, random.Random) else random.Random(seed)
        if init == "glorot":
            bound = math.sqrt(6.0 / (in_features + out_features))
        else:
            bound = 1.0 / math.sqrt(in_features)
        w = [rng.uniform(-bound, bound) for _ in range(out_features * in_features)]
        self.weight = _param(B, w, (out_features, in_features))
        if not bias:
            self.bias = None
        elif init == "glorot":
            self.bias = _param(B, [0.0] * out_features, (out_features,))
        else:
            b = [rng.uniform(-bound, bound) for _ in range(out_features)]
            self.bias = _param(B, b, (out_features,))

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def __repr__(self) -> str:
        return f"Linear({self.in_features}, {self.out_features}, bias={self.bias is not None})"


def _param(B: Backend, flat: list[float], shape: tuple[int, ...]) -> Parameter:
    return _wrap(B, B.from_flat(flat, shape), True, Parameter)


class Elementwise(Module):
    """A layer that applies the tensor IR's element-wise op ``op`` (a ``tang.tensor``
    function) to every element: eager through :mod:`tang.nn.maps`, compiled as that op's
    comprehension; its gradient derived either way. A new one is a subclass naming ``op``."""

    op = ""

    def forward(self, x: Tensor) -> Tensor:
        return F.elementwise(self.op, x)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Tanh(Elementwise):
    op = "tanh"


class ReLU(Elementwise):
    op = "relu"


class Sigmoid(Elementwise):
    op = "sigmoid"


class SiLU(Elementwise):
    """x·σ(x) (also called swish), the gate of SwiGLU."""

    op = "silu"


class Sequential(Module):
    """Modules applied in order, registered as ``"0"``, ``"1"``, … (PyTorch's keys)."""

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential item {i} is a {type(m).__name__}, not a Module")
            setattr(self, str(i), m)

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __repr__(self) -> str:
        inner = "".join(f"\n  ({k}): {m!r}" for k, m in self._modules.items())
        return f"Sequential({inner}\n)"
