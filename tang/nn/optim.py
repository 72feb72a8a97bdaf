"""Optimizers: ``SGD`` (with momentum) and ``Adam``, PyTorch's names and defaults. Each
update is written once, element by element, as plain arithmetic on any number type
(:class:`AdamRule`, :class:`SGDRule`): the eager step runs it over whole arrays through the
backend's ``map`` (one list comprehension per line in pure Python), the compiled step
(:mod:`tang.nn.compiled`) as map comprehensions on the device. The whole state round-trips
through ``state_dict`` for an exact resume."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import scalar
from .tensor import Parameter, Tensor, _array_from, _wrap


@dataclass(frozen=True)
class AdamRule:
    """Adam's update of one element (Kingma & Ba, PyTorch's order of operations).
    ``step_size`` = lr / (1 − β₁ᵗ) and ``inv_root2`` = 1/√(1 − β₂ᵗ) change per step (made
    on the host once, not per element)."""

    b1: float
    b2: float
    eps: float
    decay: float

    def decayed(self, g: Any, p: Any) -> Any:
        return g + self.decay * p

    def m(self, m: Any, g: Any) -> Any:
        return self.b1 * m + (1.0 - self.b1) * g

    def v(self, v: Any, g: Any) -> Any:
        return self.b2 * v + (1.0 - self.b2) * g * g

    def p(self, p: Any, m: Any, v: Any, step_size: Any, inv_root2: Any) -> Any:
        return p - step_size * m / (scalar.sqrt(v) * inv_root2 + self.eps)

    def numbers(self, lr: float, step: int) -> tuple[float, float]:
        """(step_size, inv_root2) at ``step`` (from 1): the bias corrections."""
        return lr / (1.0 - self.b1**step), 1.0 / math.sqrt(1.0 - self.b2**step)

    def update(self, p: Any, g: Any, m: Any, v: Any, step_size: Any, inv_root2: Any) -> tuple:
        """The whole step, composed of the above: (new p, new m, new v)."""
        if self.decay:
            g = self.decayed(g, p)
        m, v = self.m(m, g), self.v(v, g)
        return self.p(p, m, v, step_size, inv_root2), m, v


@dataclass(frozen=True)
class SGDRule:
    """SGD's update of one element: buf ← momentum·buf + g, p ← p − lr·buf (PyTorch's
    SGD without dampening; the first step's buffer is g)."""

    momentum: float
    decay: float

    def decayed(self, g: Any, p: Any) -> Any:
        return g + self.decay * p

    def buf(self, buf: Any, g: Any) -> Any:
        return self.momentum * buf + g

    def p(self, p: Any, g: Any, lr: Any) -> Any:
        return p - lr * g

    def update(self, p: Any, g: Any, buf: Any, lr: Any) -> tuple:
        """The whole step after the first (with momentum): (new p, new buffer)."""
        if self.decay:
            g = self.decayed(g, p)
        buf = self.buf(buf, g)
        return self.p(p, buf, lr), buf


def _body(fn: Callable[..., Any], arrays: int, numbers: int = 0) -> Any:
    """``fn`` as a body over that many arrays and per-call numbers, traced once
    (tang.nn.maps): a backend's ``map`` runs it over whole arrays."""
    from .maps import scalar_of

    return scalar_of(fn, arrays, numbers)


def _by_backend(pairs: Iterable[tuple[Parameter, dict[str, Any]]]) -> Iterator[tuple[Any, list]]:
    """(backend, [(parameter, state)…]) for each backend among ``pairs``, in first-seen
    order: a step runs each group's maps under one ``B.ieee()``."""
    groups: dict[int, tuple[Any, list]] = {}
    for p, s in pairs:
        groups.setdefault(id(p.backend), (p.backend, []))[1].append((p, s))
    yield from groups.values()


class Optimizer:
    """Holds the parameters to update and the per-parameter state."""

    def __init__(self, params: Iterable[Parameter], lr: float) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("the optimizer got no parameters")
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor):
                raise TypeError(f"parameter {i} is a {type(p).__name__}, not a Tensor")
        if not lr > 0:
            raise ValueError(f"lr must be positive, not {lr}")
        self.lr = float(lr)
        self.state: list[dict[str, Any]] = [{} for _ in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        raise NotImplementedError

    def _with_grad(self) -> Iterator[tuple[Parameter, dict[str, Any]]]:
        """Each parameter that has a gradient, with its state: what ``step`` updates."""
        for p, s in zip(self.params, self.state):
            if p.grad is not None:
                yield p, s

    def hyper(self) -> dict[str, Any]:
        return {"lr": self.lr}

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {i: {name: Tensor or int}}, "param_groups": [{hyper…, "params"}]}``,
        shaped like PyTorch's; tensors are copies."""
        state = {}
        for i, s in enumerate(self.state):
            if s:
                state[i] = {
                    k: (
                        _wrap(self.params[i].backend, self.params[i].backend.copy(v))
                        if not isinstance(v, int)
                        else v
                    )
                    for k, v in s.items()
                }
        group = {**self.hyper(), "params": list(range(len(self.params)))}
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output, checked in full before anything is set."""
        try:
            groups, state = state_dict["param_groups"], state_dict["state"]
        except (KeyError, TypeError) as exc:
            raise ValueError("optimizer state needs 'state' and 'param_groups'") from exc
        if len(groups) != 1 or len(groups[0].get("params", ())) != len(self.params):
            raise ValueError(
                f"optimizer state is for a different parameter list ({len(self.params)} here)"
            )
        new_state: list[dict[str, Any]] = [{} for _ in self.params]
        for key, entry in state.items():
            i = int(key)
            if not 0 <= i < len(self.params):
                raise ValueError(f"optimizer state names parameter {i}, which does not exist")
            p = self.params[i]
            for name, value in entry.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    new_state[i][name] = value
                    continue
                arr = _array_from(value.data if isinstance(value, Tensor) else value, p.backend)
                if tuple(arr.shape) != p.shape:
                    raise ValueError(
                        f"optimizer state {name!r} of parameter {i} has shape "
                        f"{tuple(arr.shape)}, the parameter {p.shape}"
                    )
                new_state[i][name] = arr
        hyper = {k: v for k, v in groups[0].items() if k != "params"}
        self._set_hyper(hyper)
        self.state = new_state

    def _set_hyper(self, hyper: dict[str, Any]) -> None:
        if "lr" in hyper:
            self.lr = float(hyper["lr"])


class SGD(Optimizer):
    """p ← p − lr·buf, buf ← momentum·buf + g (PyTorch's SGD without dampening)."""

    def __init__(
        self,
        params: Iterable[Parameter],
        lr: float = 0.01,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr)
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)

    def hyper(self) -> dict[str, Any]:
        return {"lr": self.lr, "momentum": self.momentum, "weight_decay": self.weight_decay}

    def _set_hyper(self, hyper: dict[str, Any]) -> None:
        super()._set_hyper(hyper)
        self.momentum = float(hyper.get("momentum", self.momentum))
        self.weight_decay = float(hyper.get("weight_decay", self.weight_decay))

    def rule(self) -> SGDRule:
        """The update as it stands (hyperparameters may change between steps)."""
        return SGDRule(self.momentum, self.weight_decay)

    def step(self) -> None:
        rule, lr = self.rule(), (self.lr,)
        update, decayed, plain = (
            _body(rule.update, 3, 1),
            _body(rule.decayed, 2),
            _body(rule.p, 2, 1),
        )
        for B, group in _by_backend(self._with_grad()):
            with B.ieee():
                for p, s in group:
                    g, buf = p.grad.data, s.get("momentum_buffer")
                    if rule.momentum and buf is not None:  # buf is the optimizer's: given up
                        new = B.map(update, (p.data, g, buf), p.shape, lr, (2,))
                        p.data, s["momentum_buffer"] = new
                        continue
                    if rule.decay:
                        g = B.map(decayed, (g, p.data), p.shape)
                    if rule.momentum:  # the first step's buffer is the gradient (a copy)
                        s["momentum_buffer"] = g if rule.decay else B.copy(g)
                    p.data = B.map(plain, (p.data, g), p.shape, lr)


MOMENTS = ("exp_avg", "exp_avg_sq")


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction: β = (0.9, 0.999), ε = 1e-8 by default."""

    def __init__(
        self,
        params: Iterable[Parameter],
        lr: float = 0.001,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr)
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = float(eps)
        self.weight_decay = float(weight_decay)
        self._joined: tuple | None = None  # the last joined step's (views, array) per part

    def hyper(self) -> dict[str, Any]:
        return {
            "lr": self.lr,
            "betas": list(self.betas),
            "eps": self.eps,
            "weight_decay": self.weight_decay,
        }

    def _set_hyper(self, hyper: dict[str, Any]) -> None:
        super()._set_hyper(hyper)
        if "betas" in hyper:
            self.betas = (float(hyper["betas"][0]), float(hyper["betas"][1]))
        self.eps = float(hyper.get("eps", self.eps))
        self.weight_decay = float(hyper.get("weight_decay", self.weight_decay))

    def rule(self) -> AdamRule:
        """The update as it stands (hyperparameters may change between steps)."""
        return AdamRule(*self.betas, self.eps, self.weight_decay)

    def step(self) -> None:
        rule = self.rule()
        update = _body(rule.update, 4, 2)
        for B, group in _by_backend(self._with_grad()):
            with B.ieee():
                for p, s in group:
                    if not s:
                        s.update(step=0, exp_avg=B.full(p.shape, 0.0))
                        s["exp_avg_sq"] = B.full(p.shape, 0.0)
                    s["step"] += 1
                if hasattr(B, "join") and len({s["step"] for _, s in group}) == 1:
                    self._step_joined(B, group, update, rule.numbers(self.lr, group[0][1]["step"]))
                    continue
                for p, s in group:
                    arrays = (p.data, p.grad.data, s["exp_avg"], s["exp_avg_sq"])
                    numbers = rule.numbers(self.lr, s["step"])
                    # the moments are the optimizer's own: given up to hold the new ones
                    new = B.map(update, arrays, p.shape, numbers, (2, 3))
                    p.data, s["exp_avg"], s["exp_avg_sq"] = new

    def _step_joined(self, B: Any, group: list, update: Any, numbers: tuple) -> None:
        """Every parameter of ``group`` in one ``map`` over the arrays joined end to end (a
        backend with ``join``: numpy), the same bits as one map each. Parameters and moments
        stay views of the last step's joined arrays, which the next step reads again
        unless something else was put in their place."""
        kept = self._joined
        parts = ([p.data for p, _ in group], *([s[k] for _, s in group] for k in MOMENTS))
        joined = []
        for k, arrays in enumerate(parts):
            same = kept is not None and len(kept[k][0]) == len(arrays)
            same = same and all(a is b for a, b in zip(arrays, kept[k][0]))
            joined.append(kept[k][1] if same else B.join(arrays))
        grads = B.join([p.grad.data for p, _ in group])
        flat = joined[0]
        # the moments are the optimizer's own, joined or kept: given up to hold the new ones
        new = B.map(update, (flat, grads, *joined[1:]), flat.shape, numbers, (2, 3))
        shapes = [p.shape for p, _ in group]
        views = [B.split(a, shapes) for a in new]
        for (p, s), pv, mv, vv in zip(group, *views):
            p.data, s["exp_avg"], s["exp_avg_sq"] = pv, mv, vv
        self._joined = tuple(zip(views, new))
