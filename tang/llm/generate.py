"""The decoding loop: prefill the prompt in batched steps, then one compiled step per token
(or, with speculation, one step that checks several drafted tokens at once), yielding each
token as it is chosen.

Speculative decoding without a second model: prompt lookup drafts the tokens that followed
the latest earlier occurrence of the context's last n-gram, and one forward step over
``[current] + drafts`` verifies them all: a draft is kept while it equals the token the
model picks itself, so greedy output is identical to plain decoding.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .engine import bucket
from .sampling import Sampler, Sampling, argmax

NGRAM_MAX = 3  # the longest context suffix prompt lookup matches


@dataclass
class Stats:
    """What one generation did, for ``--json``, the server's usage and the benchmark."""

    prompt_tokens: int = 0
    tokens: int = 0
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    steps: int = 0  # forward steps after the prefill
    drafted: int = 0
    accepted: int = 0
    finish_reason: str = "length"

    @property
    def prefill_tok_s(self) -> float:
        return self.prompt_tokens / self.prefill_seconds if self.prefill_seconds else 0.0

    @property
    def decode_tok_s(self) -> float:
        """Tokens per second after the first (which the prefill chose)."""
        later = self.tokens - 1
        return later / self.decode_seconds if later > 0 and self.decode_seconds else 0.0

    @property
    def acceptance(self) -> float:
        """The fraction of drafted tokens the model kept."""
        return self.accepted / self.drafted if self.drafted else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "tokens": self.tokens,
            "prefill_tok_s": round(self.prefill_tok_s, 2),
            "decode_tok_s": round(self.decode_tok_s, 2),
            "steps": self.steps,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "finish_reason": self.finish_reason,
        }


def lookup_draft(context: Sequence[int], k: int, ngram_max: int = NGRAM_MAX) -> list[int]:
    """Up to ``k`` tokens that followed the latest earlier occurrence of the context's last
    n-gram (longest n first, down to one token); empty when nothing repeats."""
    size = len(context)
    for n in range(min(ngram_max, size - 1), 0, -1):
        tail = list(context[size - n :])
        for start in range(size - n - 1, -1, -1):
            if list(context[start : start + n]) == tail:
                follow = list(context[start + n : start + n + k])
                if follow:
                    return follow
    return []


def prefill(model: Any, prompt: Sequence[int]) -> Any:
    """Run the prompt through the model from position 0 in as few steps as fit the cache;
    the last token's logits."""
    chunk = bucket(model.capacity)
    while chunk > model.capacity:
        chunk //= 2
    rows = None
    for start in range(0, len(prompt), chunk):
        rows = model.forward(prompt[start : start + chunk], start)
    return rows[-1]


def check_request(
    prompt: Sequence[int], max_tokens: Any, context: int, name: str = "max_tokens"
) -> None:
    """A ValueError (one line, naming ``name``) unless ``max_tokens`` new tokens after
    ``prompt`` are a request a model of ``context`` positions can answer."""
    if not prompt:
        raise ValueError("the prompt is empty")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"{name} must be a whole number ≥ 1, not {max_tokens!r}")
    if len(prompt) + max_tokens > context:
        raise ValueError(
            f"{len(prompt)} prompt tokens + {name} {max_tokens} exceed the model's context of "
            f"{context} tokens"
        )


def generate(
    model: Any,
    prompt: Sequence[int],
    *,
    max_tokens: int,
    sampling: Sampling | None = None,
    stop: Sequence[int] = (),
    speculate: int = 0,
    stats: Stats | None = None,
) -> Iterator[int]:
    """Tokens after ``prompt``, one at a time, until ``max_tokens`` or a token in ``stop``
    (which is yielded last). ``speculate`` > 0 drafts that many tokens per step by prompt
    lookup (greedy only: with sampling it is ignored)."""
    prompt = [int(t) for t in prompt]
    check_request(prompt, max_tokens, model.cfg.context)
    model.reserve(len(prompt) + max_tokens)
    sampler = Sampler(sampling)
    stats = stats if stats is not None else Stats()
    stats.prompt_tokens = len(prompt)
    stop_set = set(stop)
    speculate = speculate if sampler.sampling.greedy else 0

    start = time.perf_counter()
    current = sampler(prefill(model, prompt))
    stats.prefill_seconds = time.perf_counter() - start
    context = [*prompt, current]
    pos = len(prompt)  # tokens the cache holds
    start = time.perf_counter()
    stats.tokens = 1
    yield current
    while stats.tokens < max_tokens and current not in stop_set:
        room = min(speculate, max_tokens - stats.tokens - 1, model.capacity - pos - 1)
        drafts = lookup_draft(context, room) if room > 0 else []
        rows = model.forward([current, *drafts], pos)
        stats.steps += 1
        accepted = 0
        while accepted < len(drafts) and argmax(rows[accepted]) == drafts[accepted]:
            accepted += 1
        stats.drafted += len(drafts)
        stats.accepted += accepted
        new = [*drafts[:accepted], sampler(rows[accepted])]
        pos += accepted + 1
        for token in new:
            current = token
            context.append(token)
            stats.tokens += 1
            stats.decode_seconds = time.perf_counter() - start
            yield token
            if token in stop_set or stats.tokens >= max_tokens:
                break
    stats.finish_reason = "stop" if current in stop_set else "length"


__all__ = ["NGRAM_MAX", "Stats", "check_request", "generate", "lookup_draft", "prefill"]
