"""The "An LLM" card's worker side: SmolLM2-135M-Instruct fetched only when the visitor asks,
kept in the browser's Cache Storage, checked against the site's manifest, put on the page's
WebGPU still 4-bit, and decoded one token per worker call, so the other panels' requests
run between tokens and Stop lands within one token.

    llm_card.status()           the model's size, the adapter (or why there is none), cached?
    llm_card.load()             start loading: the cached copy if there is one, else the site
    llm_card.load_step()        one slice of it: {stage, done_bytes, total_bytes, source, done}
    llm_card.load_stop()        drop a load in progress (nothing half-loaded stays)
    llm_card.forget()           delete the cached copy and free the model
    llm_card.chat(prompt, temperature, seed, max_tokens)   start a reply: {prompt_tokens, …}
    llm_card.chat_step()        one forward step: {text, done, finish, stats}
    llm_card.chat_stop()        end the reply (the page also just stops asking)

``Loader`` is the loading itself over any source of byte chunks (the page's is a fetch or a
Cache Storage response, read a chunk at a time); ``Reply`` is one reply, a step at a time.
Both run in CPython too (tests/test_llm_card_worker.py, on a file and wgpu-py).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from demos.api import SITE, handler
from demos.common import finite_param, session_state

if TYPE_CHECKING:  # tang.llm is imported when a model loads, not when the card asks status
    from tang.llm.sampling import Sampling

MODEL = "SmolLM2-135M-Instruct"
CACHE = "tang-models-v1"  # the Cache Storage bucket the card keeps model files in
STEP_BYTES = 8 << 20  # bytes one load_step reads at most
TOP_K = 50  # candidates a draw at a temperature chooses among
MAX_TOKENS = 256
MAX_PROMPT = 2000  # characters
COMMAND = 'python -m demos.llm --chat "What is the capital of France?"'
STAGES = ("download", "check", "parse", "upload", "compile", "measure", "ready")


class LoadError(ValueError):
    """A model file the card refuses (the message says why, in one line)."""


# ---- loading -----------------------------------------------------------------------------


class Loader:
    """Loading one model file in slices: the bytes (hashed as they come), the check against
    the expected size and sha256, the GGUF reader, the weights onto ``device``, the decode
    step's kernels, and the device's copy bandwidth. ``read()`` gives the next chunk (b""
    at the end)."""

    def __init__(
        self,
        read: Callable[[], Awaitable[bytes]],
        *,
        size: int,
        sha256: str,
        device: Any,
        source: str,
        capacity: int = 512,
    ) -> None:
        self.read, self.size, self.sha256 = read, size, sha256
        self.device, self.source, self.capacity = device, source, capacity
        self.data = bytearray()
        self.hash = hashlib.sha256()
        self.stage = "download"
        self.model: Any = None
        self.tokenizer: Any = None
        self.copy_gbs = 0.0
        self.seconds = dict.fromkeys(STAGES[:-1], 0.0)

    @property
    def done(self) -> bool:
        return self.stage == "ready"

    def progress(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "source": self.source,
            "done_bytes": len(self.data) if self.stage == "download" else self.size,
            "total_bytes": self.size,
            "done": self.done,
        }

    async def step(self) -> dict[str, Any]:
        """One slice: up to STEP_BYTES of the file, or one later stage."""
        start, stage = time.perf_counter(), self.stage
        if stage == "download":
            await self._download()
        elif stage == "check":
            self._check()
        elif stage == "parse":
            self._parse()
        elif stage == "upload":
            from tang.llm.engine import Llama

            # one decode graph, compiled at load with progress shown: not one per span
            self.model = Llama.from_gguf(
                self.file, self.device, capacity=self.capacity, spans=False
            )
            self.data = bytearray()  # the device holds the weights now
            self.stage = "compile"
        elif stage == "compile":
            await self.model.compiled_async(1)
            self.stage = "measure"
        elif stage == "measure":
            from tang.gpu.bandwidth import copy_bandwidth_async

            self.copy_gbs = await copy_bandwidth_async(self.device)
            self.stage = "ready"
        self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start
        return self.progress()

    async def _download(self) -> None:
        wanted = len(self.data) + STEP_BYTES
        while len(self.data) < wanted:
            chunk = await self.read()
            if not chunk:
                self.stage = "check"
                return
            if len(self.data) + len(chunk) > self.size:
                raise LoadError(
                    f"the model file is longer than the {self.size:,} bytes the site lists"
                )
            self.data += chunk
            self.hash.update(chunk)

    def _check(self) -> None:
        if len(self.data) != self.size:
            raise LoadError(
                f"the model file stopped after {len(self.data):,} of {self.size:,} bytes"
            )
        digest = self.hash.hexdigest()
        if digest != self.sha256:
            raise LoadError(
                f"the model file's sha256 is {digest[:16]}…, not the {self.sha256[:16]}… the "
                "site lists: it is damaged"
            )
        self.stage = "parse"

    def _parse(self) -> None:
        from tang.io import gguf
        from tang.llm.tokenizer import Tokenizer

        try:
            self.file = gguf.read(memoryview(self.data))
            self.tokenizer = Tokenizer.from_gguf(self.file.metadata)
        except (ValueError, KeyError, TypeError) as exc:
            raise LoadError(f"the model file is not a usable GGUF: {exc}") from None
        self.stage = "upload"

    def facts(self) -> dict[str, Any]:
        """What the card shows about the loaded model."""
        m = self.model
        weights = m.weight_bytes
        return {
            "model": MODEL,
            "parameters": m.parameters,
            "device": {"name": self.device.name, "kind": self.device.kind},
            "weights": ", ".join(sorted(set(m.formats.values()))) or "F32",
            "weight_bytes": weights,
            "device_bytes": m.device_bytes,
            "copy_gbs": self.copy_gbs,
            "light_tok_s": self.copy_gbs * 1e9 / weights if weights else 0.0,
            "kernels_per_token": m.kernels_per_step(1),
            "kernels_lowered": sum(len(c.steps) for c in m.compiled(1)),
            "comprehensions": sum(len(c.graph.comprehensions) for c in m.compiled(1)),
            "capacity": m.capacity,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "source": self.source,
        }


# ---- one reply ---------------------------------------------------------------------------


class Reply:
    """One reply to ``ids``, a forward step at a time: the prompt token by token, then each
    new token from the last one's logits, until an end-of-turn token or ``max_tokens``."""

    def __init__(
        self, model: Any, tokenizer: Any, ids: list[int], max_tokens: int, sampling: Sampling
    ) -> None:
        from tang.llm.generate import check_request
        from tang.llm.sampling import Sampler

        check_request(ids, max_tokens, model.capacity)
        self.model, self.tokenizer, self.ids = model, tokenizer, ids
        self.max_tokens = max_tokens
        self.sampler = Sampler(sampling)
        self.decoder = tokenizer.decoder()
        self.ends = set(tokenizer.special_ids)
        self.pos = 0  # tokens the cache holds
        self.tokens: list[int] = []
        self.finish: str | None = None
        self.prefill_seconds = self.decode_seconds = 0.0

    @property
    def done(self) -> bool:
        return self.finish is not None

    async def step(self) -> dict[str, Any]:
        """One forward step; the text it adds (maybe "" while a character is split)."""
        if self.done:
            return self.answer("")
        start = time.perf_counter()
        prompt = self.pos < len(self.ids)
        token = self.ids[self.pos] if prompt else self.tokens[-1]
        rows = await self.model.forward_async([token], self.pos)
        self.pos += 1
        elapsed = time.perf_counter() - start
        if prompt:
            self.prefill_seconds += elapsed
            if self.pos < len(self.ids):
                return self.answer("")
        else:
            self.decode_seconds += elapsed
        chosen = self.sampler(rows[0])
        self.tokens.append(chosen)
        text = ""
        if chosen in self.ends:
            self.finish = "stop"
        else:
            text = self.decoder.push(chosen)
            if len(self.tokens) >= self.max_tokens:
                self.finish = "length"
        if self.done:
            text += self.decoder.flush()
        return self.answer(text)

    def answer(self, text: str) -> dict[str, Any]:
        decoded = len(self.tokens) - 1  # tokens after the first, which the prompt's step chose
        return {
            "text": text,
            "done": self.done,
            "finish": self.finish,
            "prompt_tokens": len(self.ids),
            "prompt_done": min(self.pos, len(self.ids)),
            "tokens": [t for t in self.tokens if t not in self.ends],
            "prefill_tok_s": len(self.ids) / self.prefill_seconds if self.prefill_seconds else 0.0,
            "decode_tok_s": decoded / self.decode_seconds if decoded > 0 else 0.0,
        }


# ---- the browser's side: the manifest, fetch, Cache Storage ------------------------------


async def _manifest_entry() -> dict[str, Any]:
    """The model's entry in the site's manifest.json: path, size, sha256."""
    state = session_state("llm")
    if "entry" not in state:
        import json

        import js  # type: ignore[import-not-found]

        response = await js.fetch(f"{SITE['base']}manifest.json")
        manifest = json.loads(await response.text())
        entry = manifest.get("models", {}).get(MODEL)
        if entry is None:
            raise LoadError(f"this site was built without {MODEL} (see `python build.py model`)")
        state["entry"] = entry
    return state["entry"]


def _url(entry: dict[str, Any]) -> str:
    import js  # type: ignore[import-not-found]

    return str(js.URL.new(entry["path"], SITE["base"] or js.location.href).href)


async def _cache() -> Any:
    import js  # type: ignore[import-not-found]

    return await js.caches.open(CACHE)


def _missing(x: Any) -> bool:
    return x is None or type(x).__name__ in ("JsNull", "JsUndefined")


async def _cached_response(url: str) -> Any:
    found = await (await _cache()).match(url)
    return None if _missing(found) else found


def _reader(response: Any) -> Callable[[], Awaitable[bytes]]:
    reader = response.body.getReader()

    async def read() -> bytes:
        chunk = await reader.read()
        return b"" if chunk.done else chunk.value.to_bytes()

    read.cancel = reader.cancel  # type: ignore[attr-defined]
    return read


async def _open_source(entry: dict[str, Any], device: Any, prefer_cache: bool = True) -> Loader:
    import js  # type: ignore[import-not-found]

    url = _url(entry)
    response = await _cached_response(url) if prefer_cache else None
    source = "cache"
    if response is None:
        source = "network"
        response = await js.fetch(url)
        if not response.ok:
            raise LoadError(f"the site answered {response.status} for {entry['path']}")
    return Loader(
        _reader(response), size=entry["size"], sha256=entry["sha256"], device=device, source=source
    )


async def _keep(url: str, data: bytearray) -> None:
    """Store the checked file in Cache Storage, so a reload reads it from there."""
    import js  # type: ignore[import-not-found]

    body = js.Uint8Array.new(len(data))
    body.assign(memoryview(data))
    headers = js.Headers.new()
    headers.set("Content-Type", "application/octet-stream")
    options = js.Object.fromEntries([["headers", headers]])
    await (await _cache()).put(url, js.Response.new(body, options))


async def _device() -> tuple[Any, str | None]:
    """The page's WebGPU device, or None and why there is none."""
    import tang.gpu as gpu

    try:
        return await gpu.device_async("browser", fallback=False), None
    except gpu.GPUError as exc:
        return None, str(getattr(exc, "why", None) or exc)


# ---- the worker methods --------------------------------------------------------------------


@handler("llm_card.status")
async def status() -> dict[str, Any]:
    """What the card can offer before anything is fetched."""
    entry = await _manifest_entry()
    dev, why = await _device()
    state = session_state("llm")
    cached = await _cached_response(_url(entry)) is not None
    return {
        "model": MODEL,
        "size": entry["size"],
        "cached": cached,
        "adapter": None if dev is None else {"name": dev.name, "kind": dev.kind},
        "no_adapter": why,
        "loaded": "loaded" in state,
        "command": COMMAND,
    }


@handler("llm_card.load")
async def load() -> dict[str, Any]:
    """Start loading the model (the cached copy when there is one)."""
    state = session_state("llm")
    if "loaded" in state:
        return {**state["loaded"].progress(), "facts": state["loaded"].facts()}
    dev, why = await _device()
    if dev is None:
        raise LoadError(f"no WebGPU adapter: {why}")
    state["loading"] = await _open_source(await _manifest_entry(), dev)
    state.pop("note", None)
    return state["loading"].progress()


@handler("llm_card.load_step")
async def load_step() -> dict[str, Any]:
    """One slice of the load in progress; ``facts`` once the model is ready."""
    state = session_state("llm")
    loader: Loader | None = state.get("loading")
    if loader is None:
        if "loaded" in state:
            return {**state["loaded"].progress(), "facts": state["loaded"].facts()}
        raise LoadError("no load in progress (call llm_card.load first)")
    try:
        progress = await loader.step()
    except LoadError as exc:
        await _drop(loader)
        if loader.source == "cache":  # a damaged copy: forget it, fetch the file again
            entry = await _manifest_entry()
            await (await _cache()).delete(_url(entry))
            state["loading"] = await _open_source(entry, loader.device, prefer_cache=False)
            state["note"] = f"The cached copy was refused ({exc}); it is fetched again."
            return {**state["loading"].progress(), "note": state["note"]}
        state.pop("loading", None)
        raise
    except BaseException:
        await _drop(loader)
        state.pop("loading", None)
        raise
    if loader.stage == "parse" and loader.source == "network":
        await _keep(_url(await _manifest_entry()), loader.data)
    if loader.done:
        state["loaded"] = state.pop("loading")
        return {**progress, "facts": loader.facts(), "note": state.get("note")}
    return {**progress, "note": state.get("note")}


async def _drop(loader: Loader) -> None:
    """Free what a load made so far (the bytes, the weights on the device)."""
    cancel = getattr(loader.read, "cancel", None)
    if cancel is not None and loader.stage == "download":
        with contextlib.suppress(Exception):  # a stream already closed
            await cancel()
    loader.data = bytearray()
    if loader.model is not None:
        loader.model.release()
        loader.model = None


@handler("llm_card.load_stop")
async def load_stop() -> dict[str, Any]:
    """Drop the load in progress."""
    state = session_state("llm")
    loader = state.pop("loading", None)
    if loader is not None:
        await _drop(loader)
    return {"stopped": loader is not None}


@handler("llm_card.forget")
async def forget() -> dict[str, Any]:
    """Delete the cached copy and free the model from the device."""
    state = session_state("llm")
    for key in ("loading", "loaded"):
        loader = state.pop(key, None)
        if loader is not None:
            await _drop(loader)
    state.pop("reply", None)
    deleted = bool(await (await _cache()).delete(_url(await _manifest_entry())))
    return {"deleted": deleted}


@handler("llm_card.chat")
def chat(
    prompt: str, temperature: float = 0.0, seed: int = 0, max_tokens: int = 64
) -> dict[str, Any]:
    """Start the assistant's reply to ``prompt`` (one user message, the chat template)."""
    state = session_state("llm")
    loader: Loader | None = state.get("loaded")
    if loader is None:
        raise LoadError("load the model first")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("the message is empty")
    if len(prompt) > MAX_PROMPT:
        raise ValueError(f"the message is {len(prompt):,} characters; at most {MAX_PROMPT:,}")
    temperature = finite_param(temperature, "temperature")
    if not 0 <= temperature <= 2:
        raise ValueError(f"temperature is 0 (greedy) … 2, not {temperature:g}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, not {seed!r}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise ValueError(f"max_tokens must be a whole number, not {max_tokens!r}")
    if not 1 <= max_tokens <= MAX_TOKENS:
        raise ValueError(f"max_tokens is 1 … {MAX_TOKENS}, not {max_tokens}")
    from tang.llm.sampling import Sampling

    ids = loader.tokenizer.encode_chat([{"role": "user", "content": prompt}])
    sampling = Sampling(temperature, TOP_K if temperature else 0, 1.0, seed)
    state["reply"] = Reply(loader.model, loader.tokenizer, ids, max_tokens, sampling)
    return state["reply"].answer("")


@handler("llm_card.chat_step")
async def chat_step() -> dict[str, Any]:
    """One forward step of the reply in progress."""
    reply: Reply | None = session_state("llm").get("reply")
    if reply is None:
        raise ValueError("no reply in progress (call llm_card.chat first)")
    return await reply.step()


@handler("llm_card.chat_stop")
def chat_stop() -> dict[str, Any]:
    """End the reply in progress (its cache rows are simply overwritten by the next)."""
    reply = session_state("llm").pop("reply", None)
    return {"stopped": reply is not None, "tokens": len(reply.tokens) if reply else 0}
