"""A chat model as text: the GGUF's tokenizer around ``tang.llm``'s compiled Llama, loaded once
and shared by the command line (``python -m demos.llm``) and the OpenAI-compatible server
(``python -m demos.llm serve``, in ``server.py``)::

    tm = TextModel.open().load("auto")          # tokenizer first (fast), then the weights
    for piece in tm.chat([{"role": "user", "content": "Hi"}], max_tokens=32):
        print(piece, end="", flush=True)        # text as it decodes
    tm.last_stats.as_dict()                     # tokens, tok/s, finish_reason, …

Every problem with a model file (missing, unreadable, malformed) is a ``ModelFileError``: a
ValueError whose message is one line.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tang.llm.generate import Stats, check_request, generate
from tang.llm.sampling import Sampling

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEVICES",
    "MAX_TEMPERATURE",
    "ModelFileError",
    "StopText",
    "TextModel",
    "model_device",
    "model_id",
]

DEVICES = ("auto", "gpu", "native", "c", "cpu")  # what --device accepts
DEFAULT_MAX_TOKENS = 256  # new tokens when none are asked for (fewer if the context is full)
MAX_TEMPERATURE = 2.0  # the OpenAI API's range is 0 … 2


class ModelFileError(ValueError):
    """A model file that is missing, unreadable or malformed (the message is one line)."""


def model_device(choice: str) -> str | None:
    """The ``tang.gpu`` backend for a ``--device`` choice (None: tang's own order, where a
    software GPU adapter gives way to the compiled C device)."""
    from demos.common import device_choice

    if choice not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {choice!r}")
    return device_choice(choice) if choice in ("auto", "gpu") else choice


def model_id(path: str | Path) -> str:
    """The name a model is served under: its file name without the quantisation suffix,
    lower case (``SmolLM2-135M-Instruct.Q4_1.gguf`` → ``smollm2-135m-instruct``)."""
    return Path(path).name.split(".")[0].lower()


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


class StopText:
    """Cuts streamed text before the first of ``stops``, holding back a tail that may be the
    start of one until the next piece shows whether it is."""

    def __init__(self, stops: Iterable[str] = ()) -> None:
        self.stops = [s for s in stops if s]
        self.pending = ""
        self.hit = False

    def push(self, text: str) -> str:
        """The text that is safe to show now (all of it up to a stop, once one is found)."""
        if not self.stops:
            return text
        pending = self.pending + text
        found = [i for i in (pending.find(s) for s in self.stops) if i >= 0]
        if found:
            self.hit, self.pending = True, ""
            return pending[: min(found)]
        keep = 0
        for s in self.stops:
            for k in range(min(len(s) - 1, len(pending)), keep, -1):
                if pending.endswith(s[:k]):
                    keep = k
                    break
        self.pending = pending[len(pending) - keep :]
        return pending[: len(pending) - keep]

    def flush(self) -> str:
        """The held-back text (no stop followed it)."""
        text, self.pending = self.pending, ""
        return text


class TextModel:
    """A model and its tokenizer, with a lock so that one generation runs at a time."""

    def __init__(self, tokenizer: Any, context: int, *, name: str, path: Path | None = None):
        """Prefer ``TextModel.open(path)``; ``load(device)`` then puts the weights on a device."""
        self.tokenizer = tokenizer
        self.context = context
        self.name = name
        self.path = path
        self.model: Any = None
        self.lock = threading.Lock()
        self.last_stats = Stats()
        self._file: Any = None

    # ---- opening and loading ----
    @classmethod
    def open(cls, path: str | Path | None = None) -> TextModel:
        """The tokenizer and context of a GGUF model file (found by ``tang.io.find_model``);
        the weights wait for ``load``. Raises ModelFileError."""
        from tang.io import gguf, models
        from tang.llm.model import LlamaConfig
        from tang.llm.tokenizer import Tokenizer

        if path is not None and Path(path).is_dir():
            raise ModelFileError(f"{path} is a folder, not a GGUF model file")
        try:
            found = models.find_model(path)
            f = gguf.read(found)
        except (OSError, ValueError) as exc:  # FileNotFoundError, IsADirectoryError, GGUFError
            raise ModelFileError(_one_line(exc)) from None
        try:
            cfg = LlamaConfig.from_gguf(f.metadata)
            tokenizer = Tokenizer.from_gguf(f.metadata)
        except (KeyError, TypeError, ValueError) as exc:
            f.close()
            raise ModelFileError(f"{found}: not a usable model: {_one_line(exc)}") from None
        tm = cls(tokenizer, cfg.context, name=model_id(found), path=found)
        tm._file = f
        return tm

    def load(self, device: str | None = "auto") -> TextModel:
        """Put the weights on ``device`` (a ``--device`` choice; once: later calls keep the
        first). Raises ModelFileError for bad tensors, ``tang.gpu.GPUError`` for no device."""
        from tang.llm.engine import Llama

        if self.model is None:
            backend = model_device(device) if device is not None else None
            try:
                self.model = Llama.from_gguf(self._file, device=backend)
            except (KeyError, ValueError) as exc:
                raise ModelFileError(f"{self.path}: not a usable model: {_one_line(exc)}") from None
            self._file.close()
            self._file = None
        return self

    @property
    def device(self) -> str:
        """The backend the weights are on (``c``, ``native``, ``cpu``, ``reference``)."""
        if self.model is None:
            return "none"
        dev = self.model.device
        return "reference" if dev is None else str(dev.kind)

    def release(self) -> None:
        """Free the model's device buffers (``load`` does not come back from this)."""
        if self.model is not None:
            self.model.release()
        if self._file is not None:
            self._file.close()
            self._file = None

    # ---- text to tokens ----
    def encode(self, prompt: str) -> list[int]:
        """Token ids for a plain completion prompt (ChatML markers in it count)."""
        return self.tokenizer.encode(prompt, special=True)

    def encode_chat(self, messages: Sequence[Mapping[str, str]]) -> list[int]:
        """Token ids for a conversation in the chat template, ready for the assistant's turn."""
        return self.tokenizer.encode_chat(messages)

    def check(self, ids: Sequence[int], max_tokens: int, name: str = "max_tokens") -> None:
        """A ValueError (one line, naming ``name``) unless ``max_tokens`` new tokens after
        ``ids`` are a request the model can answer."""
        check_request(ids, max_tokens, self.context, name)

    def room(self, ids: Sequence[int], wanted: int | None = None) -> int:
        """``wanted`` new tokens, or DEFAULT_MAX_TOKENS capped to what the context has left."""
        return (
            wanted
            if wanted is not None
            else max(1, min(DEFAULT_MAX_TOKENS, self.context - len(ids)))
        )

    # ---- generating ----
    def stream(
        self,
        ids: Sequence[int],
        *,
        max_tokens: int | None = None,
        sampling: Sampling | None = None,
        stop: Iterable[str] = (),
        speculate: int = 0,
        stats: Stats | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[str]:
        """Text after ``ids`` piece by piece as it decodes, ending at an end-of-turn token,
        ``max_tokens``, the first of the ``stop`` strings (not shown) or ``cancel`` being set
        (checked between tokens). ``stats`` (also ``last_stats``) says what happened. Checks
        the request at once (ValueError); the lock is held while the pieces are read."""
        ids = list(ids)
        max_tokens = self.room(ids, max_tokens)
        self.check(ids, max_tokens)
        stats = stats if stats is not None else Stats()
        return self._pieces(ids, max_tokens, sampling, StopText(stop), speculate, stats, cancel)

    def _pieces(
        self,
        ids: list[int],
        max_tokens: int,
        sampling: Sampling | None,
        cut: StopText,
        speculate: int,
        stats: Stats,
        cancel: threading.Event | None,
    ) -> Iterator[str]:
        ends = sorted(self.tokenizer.special_ids)
        decoder = self.tokenizer.decoder()
        with self.lock:
            if self.model is None:
                self.load()
            self.last_stats = stats
            tokens = generate(
                self.model,
                ids,
                max_tokens=max_tokens,
                sampling=sampling,
                stop=ends,
                speculate=speculate,
                stats=stats,
            )
            try:
                for token in tokens:
                    if token in ends:
                        stats.finish_reason = "stop"
                        break
                    text = cut.push(decoder.push(token))
                    if text:
                        yield text
                    if cut.hit:
                        stats.finish_reason = "stop"
                        return
                    if cancel is not None and cancel.is_set():
                        stats.finish_reason = "cancelled"
                        return
            finally:
                tokens.close()
            text = cut.push(decoder.flush())
            if cut.hit:
                stats.finish_reason = "stop"
            else:
                text += cut.flush()
            if text:
                yield text

    def complete(self, prompt: str, **options: Any) -> Iterator[str]:
        """``stream`` after a plain text prompt (options as ``stream``'s)."""
        return self.stream(self.encode(prompt), **options)

    def chat(self, messages: Sequence[Mapping[str, str]], **options: Any) -> Iterator[str]:
        """``stream`` of the assistant's reply to ``messages`` ({"role", "content"} dicts)."""
        return self.stream(self.encode_chat(messages), **options)
