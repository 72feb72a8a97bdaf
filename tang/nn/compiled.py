"""A tang.nn model's whole training step compiled from the tensor IR (docs/tensor-ir.md).

Each tang.nn op the trainer uses has its comprehension definition here (``LAYERS``, a table
keyed by module type, and ``LOSSES``, keyed by loss function): a model becomes a
``tang.tensor`` graph with its parameters and the batch as inputs and the loss as output.
``tang.tensor.grad`` derives the backward, and Adam is written as element-wise
comprehensions over the gradients. The result is one graph, compiled once with
``tang.tensor.compile``. Its outputs ``next_*`` are the parameters and Adam moments after
the step. Between steps their device buffers swap with the inputs ``p_*``, ``m_*`` and
``v_*``, so the model and the optimizer state stay on the device. Each step uploads only
the batch (with its row count) and two Adam scalars, and reads back one number, the loss,
only when asked: the loss is also summed on the device (``next_loss_total``), so a loop
reads once per epoch. :class:`CompiledStep` is that step, batch by batch; the training
loop is ``nn.Trainer``'s, which runs eager or compiled and switches between them mid-epoch::

    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=5e-3), nn.cross_entropy)
    losses = trainer.compile("native").epochs(5).fit(loader)  # the same loop, compiled
    trainer.eager()  # parameters, Adam moments and the running loss back in the model

``build_async``, ``step_async``, ``read_async``, ``state_dict_async`` and ``sync_async`` are
the awaitable spellings: in the page, WebGPU compiles and reads asynchronously.

The batch size is fixed when the graph is built (from the first batch, or ``batch_size``).
A shorter batch (an epoch's last) is padded with zero rows of sample weight 0. The loss is
the sample-weighted sum, so the padding changes neither the loss nor the gradients.

A one-hot input (the Poet's) is uploaded as the one-hot matrix. Reads in the IR go through
affine views, so a gather by uploaded indices would still be a 240-wide compare-and-sum per
output. It would only save the upload: 0.55 ms of an 11 ms step on lavapipe (7,680 floats
against 256).

This lives in tang.nn, not tang.tensor: it maps tang.nn's modules, losses and optimizer, and
tang.tensor stays free of any model library. tang.tensor is imported only when a graph is
built, so ``import tang.nn`` stays light (the page's worker).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from . import functional as F
from .modules import Elementwise, Linear, Module, Sequential
from .optim import Adam, Optimizer
from .tensor import Tensor as EagerTensor

if TYPE_CHECKING:
    from ..tensor import Tensor, TensorGraph

REFERENCE = "reference"  # device name: the f64 reference evaluator, state kept on the host
DEVICES = ("native", "browser", "cpu", REFERENCE)  # the names a device may be given by


# ── the op definitions: tang.nn modules and losses as comprehensions ──────────────────────
def _linear(module: Linear, x: Tensor, params: Mapping[str, Tensor]) -> Tensor:
    """x·Wᵀ + b: a sum comprehension over the input features, then a broadcast add."""
    return F.ir_linear(x, params["weight"], None if module.bias is None else params["bias"])


def _elementwise(module: Elementwise, x: Tensor, params: Mapping[str, Tensor]) -> Tensor:
    """The module's tensor IR op, element by element: the op its eager forward runs."""
    from .. import tensor

    return getattr(tensor, module.op)(x)


# module type → (module, its input, its parameters by local name) → its output; every
# Elementwise subclass (Tanh, ReLU, Sigmoid, SiLU…) is _elementwise
LAYERS: dict[type, Callable[[Any, Tensor, Mapping[str, Tensor]], Tensor]] = {
    Linear: _linear,
    Elementwise: _elementwise,
}


def _cross_entropy(logits: Tensor, target: Tensor, weight: Tensor) -> Tensor:
    """Σ_rows weight[row] · −log softmax(logits)[row, target[row]]: the tensor IR's own
    (``tang.tensor.cross_entropy`` with per-sample weights)."""
    from .. import tensor

    return tensor.cross_entropy(logits, target, weight)


def _mse(prediction: Tensor, target: Tensor, weight: Tensor) -> Tensor:
    """Σ_rows weight[row] · mean over the row's features of (prediction − target)²."""
    from .. import tensor

    width = math.prod(prediction.shape[1:])
    letters = "abcdefgh"[: prediction.ndim]
    return tensor.comprehend(
        "",
        [(prediction, letters), (target, letters), (weight, "a")],
        lambda p, t, w: (p - t) * (p - t) * w * (1.0 / width),
    )


# loss function → (output, target, per-sample weight) → the weighted loss (a 0-d tensor)
LOSSES: dict[Callable[..., Any], Callable[[Tensor, Tensor, Tensor], Tensor]] = {
    F.cross_entropy: _cross_entropy,
    F.mse: _mse,
}


def forward(model: Module, x: Tensor, names: Mapping[int, str]) -> Tensor:
    """``model(x)`` as comprehensions; ``names`` maps id(parameter) → its graph input."""
    from .. import tensor

    if isinstance(model, Sequential):
        for child in model:
            x = forward(child, x, names)
        return x
    layer = LAYERS.get(Elementwise if isinstance(model, Elementwise) else type(model))
    if layer is None:
        known = ", ".join(sorted(t.__name__ for t in (*LAYERS, Sequential)))
        raise TypeError(f"no comprehension definition for {type(model).__name__} (known: {known})")
    params = {
        local: tensor.input(names[id(p)], p.shape)
        for local, p in model.named_parameters()
        if "." not in local
    }
    return layer(model, x, params)


def graph_name(parameter: str) -> str:
    """A parameter's graph input name: ``0.weight`` → ``p_0_weight``."""
    return "p_" + "".join(c if c.isalnum() else "_" for c in parameter)


# ── the training step as one graph ─────────────────────────────────────────────────────────
def loss_graph(
    model: Module, loss: Callable[..., Any], x_shape: tuple[int, ...], y_shape: tuple[int, ...]
) -> TensorGraph:
    """Inputs ``x``, ``y``, ``weight`` (per sample) and one ``p_*`` per parameter; output
    ``loss``, the weighted sum of the per-sample losses."""
    from .. import tensor

    definition = LOSSES.get(loss)
    if definition is None:
        raise TypeError(f"no comprehension definition for the loss {loss!r} (cross_entropy, mse)")
    names = {id(p): graph_name(n) for n, p in model.named_parameters()}
    x = tensor.input("x", x_shape)
    y = tensor.input("y", y_shape)
    weight = tensor.input("weight", x_shape[:1])
    return tensor.graph(loss=definition(forward(model, x, names), y, weight))


def adam_update(
    shapes: Mapping[str, tuple[int, ...]], grads: Mapping[str, str], opt: Adam
) -> dict[str, Tensor]:
    """Adam as element-wise comprehensions of the eager step's own rule (``opt.rule()``):
    for each parameter ``p`` with gradient ``grads[p]``, the outputs ``next_p``,
    ``next_m_*``, ``next_v_*``. Inputs ``step_size`` and ``inv_root2`` (``AdamRule.numbers``)
    change per step; the rest stays."""
    from .. import tensor

    rule = opt.rule()
    step_size = tensor.input("step_size", (1,))
    inv_root2 = tensor.input("inv_root2", (1,))
    outputs: dict[str, Tensor] = {}
    for p_name, shape in shapes.items():
        p = tensor.input(p_name, shape)
        grad = tensor.input(grads[p_name], shape)
        m = tensor.input("m_" + p_name[2:], shape)
        v = tensor.input("v_" + p_name[2:], shape)
        if rule.decay:
            grad = tensor.map_(rule.decayed, grad, p)
        m2 = tensor.map_(rule.m, m, grad)
        v2 = tensor.map_(rule.v, v, grad)
        outputs["next_" + p_name] = tensor.map_(rule.p, p, m2, v2, step_size, inv_root2)
        outputs["next_m_" + p_name[2:]] = m2
        outputs["next_v_" + p_name[2:]] = v2
    return outputs


def loss_total_update() -> dict[str, Tensor]:
    """``next_loss_total = loss_total + loss · rows``: the epoch's summed loss kept on the
    device, so an epoch needs one read back, not one per step."""
    from .. import tensor

    total, loss, rows = (
        tensor.input(n, s) for n, s in (("loss_total", (1,)), ("loss", ()), ("rows", (1,)))
    )
    return {"next_loss_total": tensor.map_(lambda t, v, n: t + v * n, total, loss, rows)}


def merge(first: TensorGraph, second: TensorGraph, outputs: Iterable[str]) -> TensorGraph:
    """``second`` run after ``first``: an input of ``second`` named like a buffer of
    ``first`` reads that buffer; ``second``'s unnamed buffers are renamed ``u*`` so they
    cannot clash."""
    from ..tensor import TensorGraph
    from ..tensor.comprehension import rename

    made = set(first.inputs) | {c.name for c in first.comprehensions}
    renames: dict[str, str] = {}
    comps = list(first.comprehensions)
    for c in second.comprehensions:
        name = c.name if c.name in second.outputs else f"u{len(renames)}_{c.name}"
        if name in made:
            raise ValueError(f"merge: both graphs define {name!r}")
        renames[c.name] = name
        made.add(name)
        comps.append(rename(c, name, renames))
    inputs = dict(first.inputs)
    for k, shape in second.inputs.items():
        if k not in made:
            inputs[k] = shape
    return TensorGraph(inputs, comps, list(outputs))


def training_graph(
    model: Module,
    optimizer: Optimizer,
    loss: Callable[..., Any],
    x_shape: tuple[int, ...],
    y_shape: tuple[int, ...],
    *,
    fused: bool = False,
) -> TensorGraph:
    """Forward, derived backward and the Adam update as one graph: inputs ``x``, ``y``,
    ``weight``, ``rows``, ``d_loss`` (1), ``step_size``, ``inv_root2`` and the state ``p_*``,
    ``m_*``, ``v_*``, ``loss_total``; outputs ``loss`` and the next state ``next_*``.

    ``fused`` runs ``tang.tensor.fuse`` (35 kernels for the Poet instead of 63). It is off by
    default: fusion has no cost model yet and recomputes each ``tanh`` inside every
    consumer's reduction: 0.75 s per Poet epoch on lavapipe against 0.58 s as derived."""
    from .. import tensor

    if not isinstance(optimizer, Adam):
        raise TypeError(f"compiled training has Adam's update only, not {type(optimizer).__name__}")
    forward_graph = loss_graph(model, loss, x_shape, y_shape)
    params = [graph_name(n) for n, _ in model.named_parameters()]
    backward = tensor.grad(forward_graph, "loss", wrt=params)
    grads = dict(zip(params, backward.outputs[1:]))
    shapes = {graph_name(n): p.shape for n, p in model.named_parameters()}
    update = tensor.graph(**adam_update(shapes, grads, optimizer), **loss_total_update())
    full = merge(backward, update, ["loss", *update.outputs])
    return tensor.fuse(full) if fused else full


# ── running it ─────────────────────────────────────────────────────────────────────────────
class _DeviceState:
    """The graph compiled on a tang.gpu device; the state lives in its buffers."""

    def __init__(self, compiled: Any, state: Mapping[str, Any]) -> None:
        graph = compiled.graph
        self.compiled, self.device = compiled, compiled.device
        blank = {k: [0.0] * math.prod(shape) for k, shape in graph.inputs.items()}
        self.compiled.write({**blank, **state, "d_loss": [1.0]})

    def step(self, inputs: Mapping[str, Any], names: Iterable[str]) -> None:
        c = self.compiled
        c.write(inputs)
        c.dispatch()
        for name in names:  # the next state becomes the state: swap the two buffers
            c.buffers[name], c.buffers["next_" + name] = c.buffers["next_" + name], c.buffers[name]

    def read_many(self, names: list[str]) -> dict[str, list[float]]:
        return self._flat(names, self.device.read_many(self._buffers(names)))

    async def read_many_async(self, names: list[str]) -> dict[str, list[float]]:
        return self._flat(names, await self.device.read_many_async(self._buffers(names)))

    def _buffers(self, names: list[str]) -> list[Any]:
        return [self.compiled.buffers[n] for n in names]

    def _flat(self, names: list[str], raws: list[Any]) -> dict[str, list[float]]:
        shape = self.compiled.graph.shape
        return {
            n: raw.tolist()[: max(1, math.prod(shape(n)))]
            for n, raw in zip(names, raws, strict=True)
        }

    def set(self, name: str, values: list[float]) -> None:
        self.compiled.write({name: values})


class _ReferenceState:
    """The graph run by ``tang.tensor.evaluate`` in float64; the state is host memory."""

    def __init__(self, graph: TensorGraph, state: Mapping[str, Any]) -> None:
        self.graph = graph
        self.state = {k: _flat(v) for k, v in state.items()}
        self.state["d_loss"] = [1.0]

    def step(self, inputs: Mapping[str, Any], names: Iterable[str]) -> None:
        from .. import tensor

        values = {**self.state, **{k: _flat(v) for k, v in inputs.items()}}
        values = {k: _shaped(values[k], shape) for k, shape in self.graph.inputs.items()}
        out = tensor.evaluate(self.graph, values)
        for name in names:
            self.state[name] = _flat(out["next_" + name])
        self.state["loss"] = _flat(out["loss"])

    def read_many(self, names: list[str]) -> dict[str, list[float]]:
        return {n: list(self.state[n]) for n in names}

    async def read_many_async(self, names: list[str]) -> dict[str, list[float]]:
        return self.read_many(names)

    def set(self, name: str, values: list[float]) -> None:
        self.state[name] = list(values)


def _flat(value: Any) -> list[float]:
    """Any tensor, array, number or nested list as one row-major list of floats."""
    if isinstance(value, EagerTensor):
        return value.flat()
    if hasattr(value, "reshape") and hasattr(value, "tolist"):
        return [float(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, (int, float)):
        return [float(value)]
    out: list[float] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        else:
            out.append(float(item))
    return out


def _shaped(flat: list[float], shape: tuple[int, ...]) -> Any:
    try:
        import numpy as np

        return np.asarray(flat, dtype=np.float64).reshape(shape)
    except ImportError:
        from ..tensor.evaluate import _nest

        return _nest(flat, shape)


class CompiledStep:
    """``model``'s training step compiled once and run on a device, the parameters and the
    Adam state resident there between steps. ``step(batch)`` → the batch's loss (read back
    only when asked); ``state_dict()`` → the parameters (``model.load_state_dict`` takes
    it); ``sync()`` puts parameters and Adam state back into the eager model and optimizer.
    The graph is built at the first step (or ``build``), from the model and optimizer as
    they are then; ``loss_total``, the epoch's summed loss so far, starts there too."""

    def __init__(
        self,
        model: Module,
        optimizer: Optimizer,
        loss: Callable[..., Any],
        device: Any = None,
        *,
        batch_size: int | None = None,
        fused: bool = False,
        loss_total: float = 0.0,
    ) -> None:
        if not isinstance(optimizer, Adam):
            raise TypeError(
                f"compiled training has Adam's update only, not {type(optimizer).__name__}"
            )
        if loss not in LOSSES:
            raise TypeError(f"no comprehension definition for the loss {loss!r}")
        owned = {id(p) for p in model.parameters()}
        if [id(p) for p in optimizer.params] != [id(p) for p in model.parameters()]:
            if not {id(p) for p in optimizer.params} <= owned:
                raise ValueError("the optimizer holds parameters that are not the model's")
            raise ValueError("the optimizer must hold all of the model's parameters, in order")
        if isinstance(device, str) and device not in DEVICES:
            raise ValueError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive whole number, not {batch_size!r}")
        self.model, self.optimizer, self.loss = model, optimizer, loss
        self.device_choice = device
        self.batch_size = batch_size
        self.fused = fused
        self.names = [graph_name(n) for n, _ in model.named_parameters()]
        self.state_names = [kind + n[2:] for n in self.names for kind in ("p_", "m_", "v_")]
        self.state_names.append("loss_total")
        first = optimizer.state[0] if optimizer.state else {}
        self.adam_steps = int(first.get("step", 0))
        self.graph: TensorGraph | None = None
        self._run: _DeviceState | _ReferenceState | None = None
        self.classes = 0  # the model's output width, known once the graph is built
        self._loss_total = float(loss_total)

    # -- building --------------------------------------------------------------------------
    def _initial_state(self) -> dict[str, list[float]]:
        state: dict[str, list[float]] = {}
        for name, p, s in zip(self.names, self.optimizer.params, self.optimizer.state):
            zero = [0.0] * p.numel()
            state[name] = p.flat()
            m, v = s.get("exp_avg"), s.get("exp_avg_sq")
            state["m_" + name[2:]] = zero if m is None else p.backend.to_flat(m)
            state["v_" + name[2:]] = zero if v is None else p.backend.to_flat(v)
        state["loss_total"] = [self._loss_total]
        return state

    def _graph_for(self, shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> TensorGraph:
        from .. import tensor

        x_shape, y_shape = shapes
        graph = training_graph(
            self.model, self.optimizer, self.loss, x_shape, y_shape, fused=self.fused
        )
        names = {id(p): graph_name(n) for n, p in self.model.named_parameters()}
        self.classes = forward(self.model, tensor.input("x", x_shape), names).shape[-1]
        return graph

    def _build(self, shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
        from .. import tensor

        graph = self._graph_for(shapes)
        if self.device_choice == REFERENCE:
            self._run = _ReferenceState(graph, self._initial_state())
        else:
            compiled = tensor.compile(graph, self.device_choice)
            self._run = _DeviceState(compiled, self._initial_state())
        self.graph = graph

    async def build_async(self, batch: Any, tune: float = 0.0) -> CompiledStep:
        """``build``, awaitable: in the page, WebGPU compiles kernels asynchronously.
        ``tune``: seconds for the autotuner to try the step's schedules on the device
        first (``tang.tensor.tune_async``; a graph tuned before is not tuned again)."""
        from .. import tensor
        from ..tensor.tuning_cache import tuned

        if self._run is None:
            graph = self._graph_for(self._shapes(batch))
            if self.device_choice == REFERENCE:
                self._run = _ReferenceState(graph, self._initial_state())
            else:
                device = self.device_choice
                if device is None or isinstance(device, str):
                    from .. import gpu

                    device = await gpu.device_async(device)
                if tune > 0 and device.kind != "cpu" and tuned(graph, device) is None:
                    await tensor.tune_async(graph, device, budget=tune)
                compiled = await tensor.compile_async(graph, device)
                self._run = _DeviceState(compiled, self._initial_state())
            self.graph = graph
        self._inputs(batch)
        return self

    @property
    def device(self) -> Any:
        """The tang.gpu device the step runs on (None for the reference evaluator)."""
        return getattr(self._run, "device", None)

    # -- running ---------------------------------------------------------------------------
    def build(self, batch: Any) -> CompiledStep:
        """Compile now, for batches shaped like ``batch`` (else the first step does)."""
        self._inputs(batch)
        return self

    def step(self, batch: Any, read: bool = True) -> float | None:
        """One training step on ``batch`` = (inputs, targets): its mean loss, read back
        from the device, or None with ``read=False`` (the device is not waited for)."""
        self._advance(batch)
        assert self._run is not None
        return self.read("loss")[0] if read else None

    async def step_async(self, batch: Any, read: bool = True) -> float | None:
        """``step``, awaitable (the page reads WebGPU buffers asynchronously)."""
        if self._run is None:
            await self.build_async(batch)
        self._advance(batch)
        return (await self.read_async("loss"))[0] if read else None

    def _advance(self, batch: Any) -> None:
        """Upload the batch and Adam's two scalars, and run the step's kernels."""
        inputs = self._inputs(batch)
        assert self._run is not None
        self.adam_steps += 1
        step_size, inv_root2 = self.optimizer.rule().numbers(self.optimizer.lr, self.adam_steps)
        inputs["step_size"], inputs["inv_root2"] = [step_size], [inv_root2]
        self._run.step(inputs, self.state_names)

    def _parse(self, batch: Any) -> tuple[Any, list[float], tuple[int, ...], int]:
        """(inputs flat, targets flat, the inputs' shape, target values per row), checked."""
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise TypeError("a batch is a pair (inputs, targets)")
        x, y = _batch_values(batch[0]), _flat(batch[1])
        x_rows = _rows(batch[0])
        n = x_rows[0] if x_rows else 0
        width = len(x) // n if n else 0
        y_width = len(y) // n if n else 0
        if n == 0 or len(x) != n * width or len(y) != n * y_width:
            raise ValueError(f"a batch of {n} inputs and {len(y)} targets does not pair up")
        if self.loss is F.cross_entropy and y_width != 1:
            raise ValueError(f"cross_entropy targets are one class per row, got {len(y)}")
        return x, y, x_rows, y_width

    def _shapes(self, batch: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The graph's x and y shapes for batches like ``batch`` (fixing the batch size)."""
        _, _, x_rows, y_width = self._parse(batch)
        self.batch_size = self.batch_size or x_rows[0]
        size = self.batch_size
        y_shape = (size,) if y_width == 1 else (size, *_rows(batch[1])[1:])
        return (size, *x_rows[1:]), y_shape

    def _inputs(self, batch: Any) -> dict[str, Any]:
        """The batch as graph inputs (padded to the compiled size), compiling if needed."""
        x, y, x_rows, y_width = self._parse(batch)
        n, width = x_rows[0], len(x) // x_rows[0]
        if self._run is None:
            self._build(self._shapes(batch))
        assert self.graph is not None and self._run is not None
        size = self.batch_size
        if n > size:
            raise ValueError(f"a batch of {n} rows; this step was compiled for {size}")
        if (size, *x_rows[1:]) != self.graph.inputs["x"]:
            raise ValueError(
                f"inputs shaped {x_rows}; this step was compiled for {self.graph.inputs['x']}"
            )
        if self.loss is F.cross_entropy:
            for row, t in enumerate(y):
                if t != int(t) or not 0 <= t < self.classes:
                    shown = int(t) if t == int(t) else t
                    raise ValueError(
                        f"cross_entropy: target {shown} in row {row} is not a class in "
                        f"[0, {self.classes})"
                    )
        pad = size - n
        return {
            "x": _padded(x, pad * width),
            "y": y + [0.0] * (pad * y_width),
            "weight": [1.0 / n] * n + [0.0] * pad,
            "rows": [float(n)],
        }

    @property
    def loss_total(self) -> float:
        """The epoch's summed loss (Σ loss · rows) as last set or synced."""
        return self._loss_total

    def set_loss_total(self, value: float) -> None:
        """The epoch's summed loss so far (0 when an epoch starts), on the device once built."""
        self._loss_total = float(value)
        if self._run is not None:
            self._run.set("loss_total", [self._loss_total])

    @property
    def built(self) -> bool:
        return self._run is not None

    # -- state -----------------------------------------------------------------------------
    def read(self, name: str) -> list[float]:
        """A state buffer (``p_*``, ``m_*``, ``v_*``) read back, flat."""
        return self.read_many([name])[name]

    async def read_async(self, name: str) -> list[float]:
        """``read``, awaitable (the page reads WebGPU buffers asynchronously)."""
        return (await self.read_many_async([name]))[name]

    def read_many(self, names: list[str]) -> dict[str, list[float]]:
        """Several buffers read back, flat, by name: one wait for the device, not one each."""
        if self._run is None:
            initial = self._initial_state()
            return {n: initial[n] for n in names}
        return self._run.read_many(names)

    async def read_many_async(self, names: list[str]) -> dict[str, list[float]]:
        """``read_many``, awaitable."""
        if self._run is None:
            return self.read_many(names)
        return await self._run.read_many_async(names)

    def state_dict(self) -> dict[str, Any]:
        """The parameters by the model's names, nested lists (``model.load_state_dict``)."""
        return self._params(self.read_many(self.names))

    async def state_dict_async(self) -> dict[str, Any]:
        """``state_dict``, awaitable."""
        return self._params(await self.read_many_async(self.names))

    def sync(self) -> Module:
        """Copy the parameters into the eager model and the Adam moments and step count
        into its optimizer, so eager training can carry on from here (and the summed loss
        into ``loss_total``)."""
        return self._apply(self.read_many(self.state_names))

    async def sync_async(self) -> Module:
        """``sync``, awaitable."""
        return self._apply(await self.read_many_async(self.state_names))

    def _params(self, flat: Mapping[str, list[float]]) -> dict[str, Any]:
        from ..tensor.evaluate import _nest

        named = self.model.named_parameters()
        return {n: _nest(flat[graph_name(n)], p.shape) for n, p in named}

    def _apply(self, flat: Mapping[str, list[float]]) -> Module:
        from ..tensor.evaluate import _nest

        self.model.load_state_dict(self._params(flat))
        self._loss_total = flat["loss_total"][0]
        if self.adam_steps:
            state = self.optimizer.state_dict()
            for i, (name, p) in enumerate(zip(self.names, self.optimizer.params)):
                state["state"][i] = {
                    "step": self.adam_steps,
                    "exp_avg": _nest(flat["m_" + name[2:]], p.shape),
                    "exp_avg_sq": _nest(flat["v_" + name[2:]], p.shape),
                }
            self.optimizer.load_state_dict(state)
        return self.model


def _batch_values(value: Any) -> Any:
    """A batch's inputs, flat: the numpy array itself when they are on tang.nn's numpy
    backend (uploaded without a detour through Python floats), else a list."""
    data = getattr(value, "data", None) if isinstance(value, EagerTensor) else value
    if type(data).__module__ == "numpy" and hasattr(data, "reshape"):
        return data.reshape(-1)
    return _flat(value)


def _padded(values: Any, extra: int) -> Any:
    """``values`` followed by ``extra`` zeros (a list or a 1-d numpy array)."""
    if not extra:
        return values
    if isinstance(values, list):
        return values + [0.0] * extra
    import numpy as np

    return np.concatenate([values, np.zeros(extra, dtype=values.dtype)])


def _rows(value: Any) -> tuple[int, ...]:
    """The shape of a batch part (a tensor, an array or nested lists)."""
    if hasattr(value, "shape"):
        return tuple(value.shape)
    shape = []
    while isinstance(value, (list, tuple)):
        shape.append(len(value))
        value = value[0] if value else None
    return tuple(shape)


def compile_training(
    model: Module,
    optimizer: Optimizer,
    loss: Callable[..., Any],
    device: Any = None,
    **options: Any,
) -> CompiledStep:
    """``model``'s training step (forward, derived backward, Adam) compiled for ``device``:
    a tang.gpu Device, "native", "cpu", None for the best one, or "reference" for the f64
    evaluator. Compiled at the first step, from that batch's shape. ``nn.Trainer(…,
    compiled=device)`` runs its loop on it."""
    return CompiledStep(model, optimizer, loss, device, **options)


__all__ = ["LAYERS", "LOSSES", "CompiledStep", "compile_training", "training_graph"]
