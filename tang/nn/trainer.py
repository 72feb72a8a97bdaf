"""``Trainer``: the training loop, one step at a time so a caller can run it in chunks
(the page's worker runs a few steps per request), stop it between any two steps, and
resume it exactly: the position (epoch, batch), the running loss, the optimizer's state and
the loader's seed are all it needs, and all are in :meth:`Trainer.state_dict`.

Each step runs eagerly (tang.nn's backend) or compiled: the whole step from the tensor IR
on a device (``compiled=``, :meth:`Trainer.compile`; ``tang.nn.compiled``). The loop, the
position and the per-epoch losses are this one class's either way, and :meth:`compile` /
:meth:`eager` switch between them at any step, mid-epoch included: the parameters, the
Adam moments and the epoch's running loss move with them."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .data import DataLoader
from .modules import Module
from .optim import Optimizer
from .tensor import Tensor

if TYPE_CHECKING:
    from .compiled import CompiledStep


@dataclass(frozen=True)
class Step:
    """One finished training step. ``epoch_loss`` is set on the step that ends an epoch:
    the epoch's mean loss over its samples. A compiled step's ``loss`` is None where it was
    left on the device (read back only when asked, or when someone listens)."""

    epoch: int  # 0-based epoch this step belongs to
    index: int  # the batch's position in that epoch
    loss: float | None  # this batch's loss
    samples: int  # this batch's size
    epoch_loss: float | None = None


class Trainer:
    """``Trainer(model, optimizer, loss).epochs(n).fit(loader)`` → per-epoch mean losses.

    ``loss(model(x), y)`` is computed for each batch ``(x, y)``. ``on_step(step)`` runs after
    every step and ``on_epoch(epoch, mean_loss)`` after every epoch; either may call
    :meth:`stop`, which ends the run after the current step. Calling ``fit`` again resumes
    where it stopped. ``compiled``: a device to run each step compiled on from the start
    (see :meth:`compile`); None trains eagerly."""

    def __init__(
        self,
        model: Module,
        optimizer: Optimizer,
        loss: Callable[[Tensor, Any], Tensor],
        on_step: Callable[[Step], Any] | None = None,
        on_epoch: Callable[[int, float], Any] | None = None,
        *,
        compiled: Any = None,
    ) -> None:
        self.model, self.optimizer, self.loss = model, optimizer, loss
        self.on_step, self.on_epoch = on_step, on_epoch
        self.target_epochs = 1
        self.epoch = 0  # epochs completed
        self.position = 0  # batches done in the current epoch
        self.losses: list[float] = []
        self._sum = 0.0
        self._count = 0
        self._stop = False
        self.stopped = False
        self._batches: dict[str, Any] | None = None  # the loader the position refers to
        self._compiled: CompiledStep | None = None
        self._behind = False  # the model and optimizer lag the compiled step's buffers
        if compiled is not None:
            self.compile(compiled)

    def epochs(self, n: int) -> Trainer:
        """Train until ``n`` epochs are complete in all (not ``n`` more)."""
        if n < 0:
            raise ValueError(f"epochs must be ≥ 0, not {n}")
        self.target_epochs = int(n)
        return self

    @property
    def done(self) -> bool:
        return self.epoch >= self.target_epochs

    def stop(self) -> None:
        """Ask the loop to stop before its next step."""
        self._stop = True

    # -- where each step runs -----------------------------------------------------------------
    @property
    def compiled(self) -> CompiledStep | None:
        """The compiled step training runs on (``tang.nn.compiled``), None when eager."""
        return self._compiled

    def compile(self, device: Any = None, **options: Any) -> Trainer:
        """Run each step from here on compiled from the tensor IR on ``device`` (a tang.gpu
        Device, "native", "cpu", None for the best one, or "reference"; ``options``:
        ``fused``, ``batch_size``). Parameters, Adam moments and the epoch's running loss
        move there at the next step, which builds the step for its batch's shape."""
        from .compiled import compile_training

        self.sync()
        self._compiled = compile_training(
            self.model, self.optimizer, self.loss, device, loss_total=self._sum, **options
        )
        return self

    async def compile_async(
        self,
        device: Any = None,
        loader: DataLoader | None = None,
        *,
        tune: float = 0.0,
        **options: Any,
    ) -> Trainer:
        """:meth:`compile`, awaitable, built now for ``loader``'s next batch when given (in
        the page, WebGPU compiles asynchronously); ``tune``: seconds for the autotuner to
        try the step's schedules first."""
        from .compiled import compile_training

        await self.sync_async()
        step = compile_training(
            self.model, self.optimizer, self.loss, device, loss_total=self._sum, **options
        )
        self._compiled = step
        if loader is not None:
            self._size_for(loader)
            await step.build_async(loader.batch(self.epoch, self.position), tune=tune)
        return self

    def eager(self) -> Trainer:
        """Run each step eagerly from here on, the compiled step's state copied back."""
        self.sync()
        self._compiled = None
        return self

    async def eager_async(self) -> Trainer:
        """:meth:`eager`, awaitable."""
        await self.sync_async()
        self._compiled = None
        return self

    def sync(self) -> Module:
        """Bring the model, the optimizer and the running loss up to date with the compiled
        step's buffers (a read back from the device; nothing to do when eager). Training
        stays where it runs."""
        if self._compiled is not None and self._behind:
            self._compiled.sync()
            self._took(self._compiled)
        return self.model

    async def sync_async(self) -> Module:
        """:meth:`sync`, awaitable."""
        if self._compiled is not None and self._behind:
            await self._compiled.sync_async()
            self._took(self._compiled)
        return self.model

    def _size_for(self, loader: DataLoader) -> None:
        """A step compiled mid-epoch (on a short last batch, say) is built for the loader's
        full batches."""
        step = self._compiled
        if step is not None and not step.built and step.batch_size is None:
            step.batch_size = loader.batch_size

    def _took(self, step: CompiledStep) -> None:
        self._sum, self._behind = step.loss_total, False

    # -- running -----------------------------------------------------------------------------
    def step(self, loader: DataLoader, read: bool = True) -> Step:
        """Train on the next batch and return what happened. A compiled step reads its loss
        back only with ``read`` (and at an epoch's end, the epoch's summed loss)."""
        epoch, index, n, batch = self._next_batch(loader)
        compiled = self._compiled
        if compiled is None:
            loss: float | None = self._eager_step(batch, n)
            return self._finish(loader, epoch, index, n, loss, self._sum)
        self._size_for(loader)
        compiled.step(batch, read=False)
        names = self._wanted(loader, read)
        loss, total = self._read_back(compiled.read_many(names) if names else {})
        return self._finish(loader, epoch, index, n, loss, total)

    async def step_async(self, loader: DataLoader, read: bool = True) -> Step:
        """:meth:`step`, awaitable (the page builds and reads WebGPU buffers asynchronously)."""
        compiled = self._compiled
        if compiled is None:
            return self.step(loader)
        epoch, index, n, batch = self._next_batch(loader)
        self._size_for(loader)
        await compiled.step_async(batch, read=False)
        names = self._wanted(loader, read)
        loss, total = self._read_back(await compiled.read_many_async(names) if names else {})
        return self._finish(loader, epoch, index, n, loss, total)

    def _wanted(self, loader: DataLoader, read: bool) -> list[str]:
        """After a compiled step (the model now lags the device): the buffers to read back,
        in one wait: its loss if asked, the epoch's summed loss when the step ends one."""
        self._behind = True
        return ["loss"] * read + ["loss_total"] * (self.position + 1 == len(loader))

    @staticmethod
    def _read_back(values: dict[str, list[float]]) -> tuple[float | None, float]:
        loss, total = values.get("loss"), values.get("loss_total")
        return (None if loss is None else loss[0]), (0.0 if total is None else total[0])

    def _next_batch(self, loader: DataLoader) -> tuple[int, int, int, Any]:
        """(epoch, index, rows, batch) of the next step, checked against the loader."""
        if self.done:
            raise RuntimeError(f"all {self.target_epochs} epochs are done")
        batches = _batches_of(loader)
        if self._batches is not None and batches != self._batches:
            raise ValueError(
                f"this training was positioned on another loader ({self._batches}); "
                f"this one has {batches}: resuming on it would not continue the same run"
            )
        self._batches = batches
        epoch, index = self.epoch, self.position
        n = len(loader.indices(epoch, index))
        batch = loader.batch(epoch, index)
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise TypeError("each batch must be a pair (inputs, targets)")
        return epoch, index, n, batch

    def _eager_step(self, batch: Any, n: int) -> float:
        x, y = batch
        value = self.loss(self.model(x), y)
        self.optimizer.zero_grad()
        value.backward()
        self.optimizer.step()
        loss = value.item()
        self._sum += loss * n
        return loss

    def _finish(
        self, loader: DataLoader, epoch: int, index: int, n: int, loss: float | None, total: float
    ) -> Step:
        """Advance the position by one step; at an epoch's end, record its mean loss."""
        self._count += n
        self.position += 1
        epoch_loss = None
        if self.position == len(loader):
            epoch_loss = total / self._count
            self.losses.append(epoch_loss)
            self.epoch += 1
            self.position = 0
            self._sum, self._count = 0.0, 0
            if self._compiled is not None:
                self._compiled.set_loss_total(0.0)
        step = Step(epoch, index, loss, n, epoch_loss)
        if self.on_step is not None:
            self.on_step(step)
        if epoch_loss is not None and self.on_epoch is not None:
            self.on_epoch(epoch, epoch_loss)
        return step

    def steps(self, loader: DataLoader) -> Iterator[Step]:
        """One step per ``next()``, until the epochs are done or :meth:`stop` is called. A
        compiled step's loss is read back only when ``on_step`` listens."""
        self._stop = self.stopped = False
        while self._may_step():
            yield self.step(loader, read=self.on_step is not None)

    def _may_step(self) -> bool:
        """Whether a loop takes another step: not when done, nor once :meth:`stop` asked."""
        if self._stop and not self.done:
            self.stopped = True
        return not (self.done or self._stop)

    def run(self, loader: DataLoader, max_steps: int, seconds: float | None = None) -> list[Step]:
        """At most ``max_steps`` steps (fewer when done or stopped, or once a step ends past
        ``seconds`` from the start: at least one): a chunk of training. Compiled, only the
        chunk's last loss is read back."""
        out: list[Step] = []
        end = math.inf if seconds is None else time.perf_counter() + seconds
        for step in self.steps(loader):
            out.append(step)
            if len(out) >= max_steps or time.perf_counter() >= end:
                break
        if out and out[-1].loss is None and self._compiled is not None:
            out[-1] = replace(out[-1], loss=self._compiled.read("loss")[0])
        return out

    async def run_async(
        self, loader: DataLoader, max_steps: int, seconds: float | None = None
    ) -> list[Step]:
        """:meth:`run`, awaitable."""
        out: list[Step] = []
        end = math.inf if seconds is None else time.perf_counter() + seconds
        self._stop = self.stopped = False
        while self._may_step():
            out.append(await self.step_async(loader, read=self.on_step is not None))
            if len(out) >= max_steps or time.perf_counter() >= end:
                break
        if out and out[-1].loss is None and self._compiled is not None:
            out[-1] = replace(out[-1], loss=(await self._compiled.read_async("loss"))[0])
        return out

    def fit(self, loader: DataLoader) -> list[float]:
        """Train to the target epoch count (or until stopped); the per-epoch mean losses
        of every epoch completed so far."""
        for _ in self.steps(loader):
            pass
        return list(self.losses)

    async def fit_async(self, loader: DataLoader) -> list[float]:
        """:meth:`fit`, awaitable."""
        self._stop = self.stopped = False
        while self._may_step():
            await self.step_async(loader, read=self.on_step is not None)
        return list(self.losses)

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything an exact resume needs: model, optimizer, position, running loss (read
        back first when training runs compiled: ``sync_async`` first in the page)."""
        self.sync()
        return {
            "epoch": self.epoch,
            "position": self.position,
            "target_epochs": self.target_epochs,
            "losses": list(self.losses),
            "loss_sum": self._sum,
            "loss_count": self._count,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "batches": self._batches,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output (model and optimizer checked first)."""
        for key in ("epoch", "position", "losses", "loss_sum", "loss_count"):
            if key not in state:
                raise ValueError(f"trainer state lacks {key!r}")
        backup = self.model.state_dict()
        self.model.load_state_dict(state["model"])
        try:
            self.optimizer.load_state_dict(state["optimizer"])
        except Exception:
            self.model.load_state_dict(backup)  # all or nothing
            raise
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self.target_epochs = int(state.get("target_epochs", self.target_epochs))
        self.losses = [float(v) for v in state["losses"]]
        self._sum, self._count = float(state["loss_sum"]), int(state["loss_count"])
        self._batches = state.get("batches")
        self.reload()

    def reload(self) -> None:
        """After the model or optimizer was changed by hand (weights loaded): a compiled
        step starts again from them, and the running loss, at the next step."""
        if self._compiled is not None:
            c = self._compiled
            self._behind = False
            self.compile(c.device or c.device_choice, fused=c.fused, batch_size=c.batch_size)


def _batches_of(loader: DataLoader) -> dict[str, Any]:
    """What fixes the batch sequence: with these equal, batch i of epoch e is the same."""
    return {
        "samples": len(loader.dataset),
        "batch_size": loader.batch_size,
        "shuffle": loader.shuffle,
        "seed": loader.seed,
        "drop_last": loader.drop_last,
    }
