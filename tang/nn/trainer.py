"""``Trainer``: the training loop, one step at a time so a caller can run it in chunks
(the page's worker runs a few steps per request), stop it between any two steps, and
resume it exactly: the position (epoch, batch), the running loss, the optimizer's state and
the loader's seed are all it needs, and all are in :meth:`Trainer.state_dict`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .data import DataLoader
from .modules import Module
from .optim import Optimizer
from .tensor import Tensor


@dataclass(frozen=True)
class Step:
    """One finished training step. ``epoch_loss`` is set on the step that ends an epoch:
    the epoch's mean loss over its samples."""

    epoch: int  # 0-based epoch this step belongs to
    index: int  # the batch's position in that epoch
    loss: float  # this batch's loss
    samples: int  # this batch's size
    epoch_loss: float | None = None


class Trainer:
    """``Trainer(model, optimizer, loss).epochs(n).fit(loader)`` → per-epoch mean losses.

    ``loss(model(x), y)`` is computed for each batch ``(x, y)``. ``on_step(step)`` runs after
    every step and ``on_epoch(epoch, mean_loss)`` after every epoch; either may call
    :meth:`stop`, which ends the run after the current step. Calling ``fit`` again resumes
    where it stopped."""

    def __init__(
        self,
        model: Module,
        optimizer: Optimizer,
        loss: Callable[[Tensor, Any], Tensor],
        on_step: Callable[[Step], Any] | None = None,
        on_epoch: Callable[[int, float], Any] | None = None,
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

    # -- running -----------------------------------------------------------------------------
    def step(self, loader: DataLoader) -> Step:
        """Train on the next batch and return what happened."""
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
        x, y = batch
        value = self.loss(self.model(x), y)
        self.optimizer.zero_grad()
        value.backward()
        self.optimizer.step()
        loss = value.item()
        self._sum += loss * n
        self._count += n
        self.position += 1
        epoch_loss = None
        if self.position == len(loader):
            epoch_loss = self._sum / self._count
            self.losses.append(epoch_loss)
            self.epoch += 1
            self.position = 0
            self._sum, self._count = 0.0, 0
        step = Step(epoch, index, loss, n, epoch_loss)
        if self.on_step is not None:
            self.on_step(step)
        if epoch_loss is not None and self.on_epoch is not None:
            self.on_epoch(epoch, epoch_loss)
        return step

    def steps(self, loader: DataLoader) -> Iterator[Step]:
        """One step per ``next()``, until the epochs are done or :meth:`stop` is called."""
        self._stop = False
        self.stopped = False
        while not self.done:
            if self._stop:
                self.stopped = True
                return
            yield self.step(loader)

    def run(self, loader: DataLoader, max_steps: int) -> list[Step]:
        """At most ``max_steps`` steps (fewer when done or stopped): a chunk of training."""
        out = []
        for step in self.steps(loader):
            out.append(step)
            if len(out) >= max_steps:
                break
        return out

    def fit(self, loader: DataLoader) -> list[float]:
        """Train to the target epoch count (or until stopped); the per-epoch mean losses
        of every epoch completed so far."""
        for _ in self.steps(loader):
            pass
        return list(self.losses)

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything an exact resume needs: model, optimizer, position, running loss."""
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


def _batches_of(loader: DataLoader) -> dict[str, Any]:
    """What fixes the batch sequence: with these equal, batch i of epoch e is the same."""
    return {
        "samples": len(loader.dataset),
        "batch_size": loader.batch_size,
        "shuffle": loader.shuffle,
        "seed": loader.seed,
        "drop_last": loader.drop_last,
    }
