"""``DataLoader``: a dataset cut into batches, reshuffled each epoch from a seed, so batch
``i`` of epoch ``e`` is the same every time it is asked for (what an exact resume needs)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .backend import Backend, get_backend
from .tensor import Tensor


def default_collate(items: list[Any], backend: Backend) -> Any:
    """Samples → a batch: tuples become a tuple of stacked tensors (one per field), other
    samples one stacked tensor."""
    first = items[0]
    if isinstance(first, tuple):
        return tuple(
            Tensor([item[k] for item in items], backend=backend) for k in range(len(first))
        )
    return Tensor(items, backend=backend)


class DataLoader:
    """Batches of ``dataset`` (any sequence of samples), shuffled per epoch with
    ``random.Random`` seeded from ``seed`` and the epoch number."""

    def __init__(
        self,
        dataset: Sequence[Any],
        batch_size: int = 1,
        shuffle: bool = True,
        seed: int | None = None,
        drop_last: bool = False,
        collate: Callable[[list[Any]], Any] | None = None,
        backend: str | Backend | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if len(dataset) == 0:
            raise ValueError("the dataset is empty")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = random.randrange(2**32) if seed is None else int(seed)
        self.drop_last = bool(drop_last)
        self.backend = get_backend(backend)
        self.collate = collate or (lambda items: default_collate(items, self.backend))
        self.epoch = 0  # the epoch plain iteration (``for batch in loader``) serves next
        self._order: tuple[int, list[int]] | None = None
        if len(self) == 0:
            raise ValueError(
                f"drop_last with {len(dataset)} samples and batch_size {batch_size} leaves no batch"
            )

    def __len__(self) -> int:
        """Batches per epoch."""
        n, b = len(self.dataset), self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def order(self, epoch: int) -> list[int]:
        """The sample order of ``epoch`` (a permutation when shuffling)."""
        if self._order is not None and self._order[0] == epoch:
            return self._order[1]
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
        self._order = (epoch, order)
        return order

    def indices(self, epoch: int, index: int) -> list[int]:
        """The sample indices of batch ``index`` of ``epoch``."""
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of an epoch of {len(self)}")
        start = index * self.batch_size
        return self.order(epoch)[start : start + self.batch_size]

    def batch(self, epoch: int, index: int) -> Any:
        """Batch ``index`` of ``epoch``, collated."""
        return self.collate([self.dataset[i] for i in self.indices(epoch, index)])

    def __iter__(self) -> Iterator[Any]:
        epoch = self.epoch
        self.epoch += 1
        for i in range(len(self)):
            yield self.batch(epoch, i)
