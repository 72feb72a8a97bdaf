"""Choosing the next token from a row of logits: greedy, or a draw at a temperature from the
top-k / top-p (nucleus) candidates, seeded. Pure Python (the page has no numpy); numpy rows
are read through their buffer."""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sampling:
    """How to pick a token: ``temperature`` 0 is greedy; ``top_k`` 0 keeps every token,
    ``top_p`` 1 keeps the whole distribution."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and 0 <= self.temperature <= 100):
            raise ValueError(f"temperature is a number from 0 to 100, not {self.temperature!r}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k is a whole number ≥ 0, not {self.top_k!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p is a number in (0, 1], not {self.top_p!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0 or self.top_k == 1


def _values(row: Any) -> Sequence[float]:
    return row.tolist() if hasattr(row, "tolist") else row


def argmax(row: Any) -> int:
    """The index of the largest logit (the first, on ties)."""
    if hasattr(row, "argmax"):
        return int(row.argmax())
    values = _values(row)
    return max(range(len(values)), key=values.__getitem__)


class Sampler:
    """Draws tokens under one ``Sampling``, with its own seeded random stream."""

    def __init__(self, sampling: Sampling | None = None) -> None:
        self.sampling = sampling or Sampling()
        self.random = random.Random(self.sampling.seed)

    def __call__(self, row: Any) -> int:
        s = self.sampling
        if s.greedy:
            return argmax(row)
        values = _values(row)
        if s.top_k:
            candidates = heapq.nlargest(s.top_k, range(len(values)), key=values.__getitem__)
        else:
            candidates = sorted(range(len(values)), key=values.__getitem__, reverse=True)
        top = values[candidates[0]]
        weights = [math.exp((values[i] - top) / s.temperature) for i in candidates]
        if s.top_p < 1:
            total, kept, limit = math.fsum(weights), 0.0, 0
            for limit, w in enumerate(weights, start=1):  # noqa: B007 - limit is read after
                kept += w
                if kept >= s.top_p * total:
                    break
            candidates, weights = candidates[:limit], weights[:limit]
        return self.random.choices(candidates, weights)[0]


__all__ = ["Sampler", "Sampling", "argmax"]
