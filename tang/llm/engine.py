"""A Llama model resident on a ``tang.gpu`` device: the block and head graphs of
``tang.llm.model`` compiled once per token count, every weight and both caches of every
block in device buffers written once, and a forward step that binds them per block.

    model = Llama.from_gguf(path, device="c")   # or "native", "cpu", "reference"
    logits = model.forward([1, 2, 3], pos=0)    # (T, vocab) rows; the cache remembers

``device="reference"`` runs the same graphs with ``tang.tensor.evaluate`` (numpy, f64):
the oracle the compiled devices are checked against.
"""

from __future__ import annotations

import functools
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from math import prod
from typing import Any

from ..tensor.comprehension import TensorGraph
from ..tensor.packed import as_words, decode
from .model import (
    BLOCK_WEIGHTS,
    DENSE,
    LlamaConfig,
    block_graph,
    embed_graph,
    head_graph,
    weight_inputs,
)
from .quantized import nbytes, packable

REFERENCE = "reference"  # the device name of the numpy evaluator
MIN_BUCKET = 8  # prefill lengths are padded to a power of two at least this long
MIN_CAPACITY = 256  # the smallest cache ``reserve`` grows to
MIN_SPAN = 64  # the fewest cache rows a step's attention reads (``spans``)


def bucket(tokens: int) -> int:
    """The token count a step of ``tokens`` runs at: 1 for decode, else the next power of
    two (so a handful of compiled graphs serve every prompt length)."""
    if tokens <= 1:
        return 1
    return max(MIN_BUCKET, 1 << (tokens - 1).bit_length())


class Llama:
    """A Llama-family model on one device, with a key/value cache of ``capacity`` rows."""

    def __init__(
        self,
        cfg: LlamaConfig,
        weights: Callable[[str, str], Any],
        embedding: Callable[[int], Sequence[float]],
        device: Any = None,
        *,
        capacity: int = 512,
        formats: Mapping[str, str] | None = None,
        tied: bool = False,
        spans: bool = True,
    ) -> None:
        """``weights(name, format)`` gives a GGUF tensor by name: flat f32 numbers (numpy or
        array) for the dense format, else its bytes as stored (``tang.llm.quantized``);
        ``formats``: each weight's format by its graph name ("wq", …, "output"; dense when
        absent); ``embedding(token)`` one row of the token embedding, read on the host
        unless ``tied``: then the output projection's weights are the embedding table, and
        a device looks the tokens up in them with a gather (``embed_graph``). With
        ``spans`` a step's attention reads only the cache rows up to the next power of two
        at or past its position (at least ``MIN_SPAN``), a graph compiled per span, so
        its cost follows the position, not the capacity; without, every step reads all
        (one graph per step width: what a page that compiles at load wants)."""
        if not 1 <= capacity <= cfg.context:
            raise ValueError(f"capacity is 1 … {cfg.context} (the model's context), not {capacity}")
        self.cfg = cfg
        self.capacity = capacity
        self.embedding = embedding
        self.tied = tied
        self.spans = spans
        self.formats = dict(formats or {})
        self.reference = device == REFERENCE
        self.timings = {"load": 0.0, "compile": 0.0}
        start = time.perf_counter()
        values = self._load(weights)
        specs = self._shapes()
        if self.reference:
            import numpy as np

            self.device = None
            self.host = {}
            for k, v in values.items():
                shape, kind = specs[k]
                flat = np.asarray(v, np.float64) if kind is None else decode(kind, v, prod(shape))
                self.host[k] = flat.reshape(shape)
        else:
            from ..tensor.runtime import _device

            self.device = dev = _device(device)
            self.buffers = {}
            stored: dict[int, Any] = {}  # one device buffer per weight's bytes
            for k, v in values.items():
                shape, kind = specs[k]
                if kind is None:
                    self.buffers[k] = dev.buffer(v)
                    continue
                if id(v) not in stored:
                    stored[id(v)] = dev.buffer(as_words(v, prod(shape), kind, k), "u32")
                self.buffers[k] = stored[id(v)]
            self.pos_buffer = dev.empty(1)
            self.x_buffers: dict[int, list[Any]] = {}
            self.id_buffers: dict[int, Any] = {}
        self._allocate_caches()
        self.timings["load"] = time.perf_counter() - start
        self._compiled: dict[tuple[int, int], tuple[Any, ...]] = {}

    # ---- loading ----
    @classmethod
    def from_gguf(
        cls,
        source: Any,
        device: Any = None,
        *,
        capacity: int = 512,
        quantized: bool = True,
        device_lookup: bool = True,
        spans: bool = True,
    ) -> Llama:
        """The model in a GGUF file (a path or an open ``tang.io.gguf`` file). With
        ``quantized`` its Q4_0, Q4_1 and Q8_0 matrices stay as stored on the device
        (dequantized in the products); otherwise every weight is f32. A tied model looks
        its tokens up on the device unless ``device_lookup`` is False (the host then
        writes the rows, as for an untied one: what the lookup is measured against).
        ``spans``: see ``Llama``."""
        from ..io import gguf
        from ..io.quant import block_format, dequantize

        f = source if isinstance(source, gguf.GGUFFile) else gguf.read(source)
        cfg = LlamaConfig.from_gguf(f.metadata)
        tied = "output.weight" not in f.tensors
        width = cfg.width

        def stored(name: str) -> str:
            return "token_embd.weight" if name == "output.weight" and tied else name

        def weight(name: str, fmt: str) -> Any:
            info = f.tensors[stored(name)]
            if fmt == DENSE:
                return f.tensor(info.name)
            return f.data(info.name)

        formats = {}
        if quantized:
            for short, long in {**BLOCK_WEIGHTS, "output": "output.weight"}.items():
                info = f.tensors[stored(long if short == "output" else f"blk.0.{long}")]
                if packable(info.type, info.shape):
                    formats[short] = info.type
        table = f.tensors["token_embd.weight"]
        raw = bytes(f.data(table.name))  # kept: the file may be closed after loading
        size = block_format(table.type).nbytes(width)

        def row(token: int) -> Any:  # one row dequantized from the file's bytes, when asked
            return dequantize(raw[token * size : (token + 1) * size], table.type, width)

        lookup = tied and device_lookup
        return cls(
            cfg, weight, row, device, capacity=capacity, formats=formats, tied=lookup, spans=spans
        )

    def _weight_inputs(
        self, short: str, shape: tuple[int, ...]
    ) -> dict[str, tuple[tuple[int, ...], str | None]]:
        return weight_inputs(short, shape, self.formats.get(short, DENSE))

    def _named(self) -> list[tuple[str, str, str, tuple[int, ...]]]:
        """Every weight: (input name prefix, graph name, GGUF name, shape)."""
        cfg, block = self.cfg, self.cfg.block_shapes()
        named = [
            (f"{layer}.", short, f"blk.{layer}.{long}", block[short])
            for layer in range(cfg.layers)
            for short, long in BLOCK_WEIGHTS.items()
        ]
        named += [
            ("", "norm", "output_norm.weight", (cfg.width,)),
            ("", "output", "output.weight", (cfg.vocab, cfg.width)),
        ]
        return named

    def _load(self, weights: Callable[[str, str], Any]) -> dict[str, Any]:
        """Every weight input's value by ``layer.input`` name (the graphs' input names): a
        quantized weight's bytes stand under both of its inputs' names."""
        out = {}
        for prefix, short, name, shape in self._named():
            value = weights(name, self.formats.get(short, DENSE))
            out |= {prefix + k: value for k in self._weight_inputs(short, shape)}
        return out

    def _shapes(self) -> dict[str, tuple[tuple[int, ...], str | None]]:
        """Every weight input's shape and packed element type by ``layer.input`` name."""
        return {
            prefix + k: spec
            for prefix, short, _, shape in self._named()
            for k, spec in self._weight_inputs(short, shape).items()
        }

    @functools.cached_property
    def block_inputs(self) -> list[str]:
        """The weight inputs of a block graph (the same in every block)."""
        block = self.cfg.block_shapes()
        return [n for short, shape in block.items() for n in self._weight_inputs(short, shape)]

    @functools.cached_property
    def head_inputs(self) -> list[str]:
        return ["norm", *self._weight_inputs("output", (self.cfg.vocab, self.cfg.width))]

    @functools.cached_property
    def _block_buffers(self) -> list[dict[str, Any]]:
        """Each block's weight buffers by graph input name (what a step binds)."""
        return [
            {k: self.buffers[f"{layer}.{k}"] for k in self.block_inputs}
            for layer in range(self.cfg.layers)
        ]

    @property
    def device_bytes(self) -> int:
        """Bytes this model holds on its device now: weights (each stored once), caches,
        step inputs and every compiled graph's own buffers."""
        if self.reference:
            return 0
        held = {id(b): b for b in self.buffers.values()}
        held |= {id(b): b for layer in self.caches for b in layer}
        held |= {id(b): b for pair in self.x_buffers.values() for b in pair}
        held |= {id(b): b for b in self.id_buffers.values()}
        held[id(self.pos_buffer)] = self.pos_buffer
        for compiled in self._compiled.values():
            held |= {id(b): b for b in (buf for c in compiled for buf in c.buffers.values())}
        return sum(b.nbytes for b in held.values())

    @property
    def weight_bytes(self) -> int:
        """Bytes of weights a decode step reads (every block's and the head's)."""
        total = 0
        for _, short, _, shape in self._named():
            fmt = self.formats.get(short, DENSE)
            total += 4 * prod(shape) if fmt == DENSE else nbytes(fmt, *shape)
        return total

    def _allocate_caches(self) -> None:
        """Both caches of every block, empty, shaped (capacity, kv heads, head size): host
        arrays on the reference, device buffers elsewhere. A step appends its rows to them
        in place (``_launch`` copies each step's rows in)."""
        cfg = self.cfg
        shape = (self.capacity, cfg.kv_heads, cfg.head_dim)
        if self.reference:
            import numpy as np

            self.caches = [[np.zeros(shape), np.zeros(shape)] for _ in range(cfg.layers)]
        else:
            size = prod(shape)
            self.caches = [[self.device.empty(size) for _ in range(2)] for _ in range(cfg.layers)]

    def reserve(self, positions: int) -> None:
        """Make the cache hold at least ``positions`` rows: the next power of two (at least
        MIN_CAPACITY, at most the context); the cache then starts empty and the graphs are
        compiled again for the new size (their kernels are cached on disk)."""
        if positions <= self.capacity:
            return
        if positions > self.cfg.context:
            raise ValueError(
                f"{positions} positions exceed the model's context of {self.cfg.context}"
            )
        self.release_graphs()
        self.capacity = min(self.cfg.context, max(MIN_CAPACITY, 1 << (positions - 1).bit_length()))
        self._allocate_caches()

    @property
    def parameters(self) -> int:
        return self.cfg.parameters

    # ---- graphs ----
    def span(self, pos: int) -> int:
        """The cache rows a step at ``pos`` attends over: rows 0 … pos-1 hold what it may
        see, so the next power of two at or past ``pos`` (at least ``MIN_SPAN``, at most the
        capacity), or the whole cache without ``spans``."""
        if not self.spans:
            return self.capacity
        return min(self.capacity, max(MIN_SPAN, 1 << max(pos - 1, 0).bit_length()))

    def graphs(self, tokens: int, span: int | None = None) -> tuple[TensorGraph, TensorGraph]:
        """The block and head graphs a step of ``tokens`` (a bucket) runs, its attention
        over ``span`` cache rows (default: all of them)."""
        block = block_graph(self.cfg, tokens, span or self.capacity, self.formats)
        return block, head_graph(self.cfg, tokens, self.formats.get("output", DENSE))

    def compiled(self, tokens: int, span: int | None = None) -> tuple[Any, ...]:
        """The block and head graphs for ``tokens`` and ``span`` compiled on the device
        (once), then the embedding lookup where the device runs it (``_unbuilt``)."""
        key = (tokens, span or self.capacity)
        found = self._compiled.get(key)
        if found is None:
            start = time.perf_counter()
            found = self._unbuilt(*key)
            if not self.reference:
                for c in found:
                    c.build()
            self._compiled[key] = found
            self.timings["compile"] += time.perf_counter() - start
        return found

    async def compiled_async(self, tokens: int, span: int | None = None) -> tuple[Any, ...]:
        """``compiled`` with the awaitable kernel builds (the page's WebGPU)."""
        key = (tokens, span or self.capacity)
        found = self._compiled.get(key)
        if found is None:
            start = time.perf_counter()
            found = self._unbuilt(*key)
            for c in found:
                await c.build_async()
            self._compiled[key] = found
            self.timings["compile"] += time.perf_counter() - start
        return found

    @property
    def embeds_on_device(self) -> bool:
        """Whether a step looks its tokens up on the device (a tied model not on the numpy
        reference) rather than writing rows read on the host."""
        return self.tied and not self.reference

    def _unbuilt(self, tokens: int, span: int) -> tuple[Any, ...]:
        """The graphs for ``tokens`` and ``span`` (the reference) or their compiled forms,
        kernels not built yet, the head (and the embedding lookup, when on the device)
        bound to their weights: (block, head[, embed])."""
        block, head = self.graphs(tokens, span)
        if self.reference:
            return block, head
        from ..tensor.runtime import Compiled

        found: tuple[Any, ...] = (
            Compiled(block, self.device, build=False),
            Compiled(head, self.device, build=False),
        )
        table = {n: self.buffers[n] for n in self.head_inputs}
        found[1].bind(**table)
        if self.embeds_on_device:
            embed = embed_graph(self.cfg, tokens, self.formats.get("output", DENSE))
            found += (Compiled(embed, self.device, build=False),)
            found[2].bind(**{n: b for n, b in table.items() if n in embed.inputs})
        return found

    def kernels_per_step(self, tokens: int = 1) -> int:
        """Kernels one forward step dispatches (every block's, then the head's)."""
        block, head = self.compiled(tokens)[:2]
        if self.reference:
            return self.cfg.layers * len(block.comprehensions) + len(head.comprehensions)
        embed = self.compiled(tokens)[2:]
        return (
            self.cfg.layers * len(block.steps) + len(head.steps) + sum(len(e.steps) for e in embed)
        )

    # ---- running ----
    def _check_tokens(self, tokens: Sequence[int]) -> None:
        for t in tokens:
            if not 0 <= t < self.cfg.vocab:
                raise ValueError(f"token {t} is outside the vocabulary (0 … {self.cfg.vocab - 1})")

    def _rows(self, tokens: Sequence[int], width: int) -> list[float] | Any:
        self._check_tokens(tokens)
        rows = [self.embedding(t) for t in tokens]
        if rows and hasattr(rows[0], "dtype"):
            import numpy as np

            out = np.zeros((width, self.cfg.width), np.float32)
            out[: len(rows)] = rows
            return out
        flat = array("f")
        for r in rows:
            flat.extend(r)
        flat.extend(array("f", bytes(4 * self.cfg.width * (width - len(rows)))))
        return flat

    def forward(self, tokens: Sequence[int], pos: int) -> Any:
        """Logits (one row per token, numpy when it is present) for ``tokens`` at positions
        ``pos …``; their keys and values join the cache, which holds positions 0 … pos-1."""
        width = self._check_step(tokens, pos)
        if self.reference:
            return self._forward_reference(self._rows(tokens, width), pos, width)[: len(tokens)]
        head = self._launch(tokens, pos, self.compiled(width, self.span(pos)))
        return _logit_rows(self.device.read(head.buffers["logits"]), len(tokens), self.cfg.vocab)

    async def forward_async(self, tokens: Sequence[int], pos: int) -> Any:
        """``forward`` with the awaitable compile and read-back (the page's WebGPU)."""
        width = self._check_step(tokens, pos)
        head = self._launch(tokens, pos, await self.compiled_async(width, self.span(pos)))
        raw = await self.device.read_async(head.buffers["logits"])
        return _logit_rows(raw, len(tokens), self.cfg.vocab)

    def _check_step(self, tokens: Sequence[int], pos: int) -> int:
        """The bucket a step of ``tokens`` at ``pos`` runs at (a ValueError if it cannot)."""
        n = len(tokens)
        if n < 1:
            raise ValueError("forward needs at least one token")
        if pos < 0 or pos + n > self.capacity:
            raise ValueError(
                f"positions {pos} … {pos + n - 1} do not fit the cache of {self.capacity}"
            )
        return bucket(n)

    def _kept_rows(self, pos: int, width: int) -> int:
        """How many of a step's ``width`` rows (its tokens, then padding) join the cache at
        ``pos``: all that fit (padded rows land past the step's tokens, where the mask
        hides them until a later step writes over them)."""
        return min(width, self.capacity - pos)

    def _launch(self, tokens: Sequence[int], pos: int, compiled: tuple[Any, ...]) -> Any:
        """Record one step's dispatches on the device (the lookup when it runs there, every
        block, then the head) and return the compiled head, whose ``logits`` buffer holds
        the answer."""
        block, head, *embed = compiled
        width = bucket(len(tokens))
        dev = self.device
        pair = self.x_buffers.get(width)
        if pair is None:
            pair = self.x_buffers[width] = [dev.empty(width * self.cfg.width) for _ in range(2)]
        if embed:
            self._check_tokens(tokens)
            ids = self.id_buffers.get(width)
            if ids is None:
                ids = self.id_buffers[width] = dev.empty(width)
            padded = [float(t) for t in tokens] + [-1.0] * (width - len(tokens))  # -1: zeros
            dev.write(ids, array("f", padded))
        else:
            dev.write(pair[0], self._rows(tokens, width))
        dev.write(self.pos_buffer, array("f", [float(pos)]))
        with dev.batch():
            if embed:
                embed[0].bind(ids=ids, x=pair[0])
                embed[0].dispatch()
            rows = self._kept_rows(pos, width)
            for layer in range(self.cfg.layers):
                k_cache, v_cache = self.caches[layer]
                block.bind(
                    x=pair[layer % 2],
                    y=pair[1 - layer % 2],
                    pos=self.pos_buffer,
                    k_cache=k_cache,
                    v_cache=v_cache,
                    **self._block_buffers[layer],
                )
                block.dispatch()
                for new, cache in (
                    (block.buffers["k_new"], k_cache),
                    (block.buffers["v_new"], v_cache),
                ):
                    dev.copy(new, cache, rows * self.cfg.kv_width, 0, pos * self.cfg.kv_width)
            head.bind(x=pair[self.cfg.layers % 2])
            head.dispatch()
        return head

    def _forward_reference(self, x: Any, pos: int, width: int) -> Any:
        import numpy as np

        from ..tensor.evaluate import evaluate

        span = self.span(pos)
        block, head = self.compiled(width, span)
        x = np.asarray(x, np.float64).reshape(width, self.cfg.width)
        p = np.array([float(pos)])
        for layer in range(self.cfg.layers):
            w = {k: self.host[f"{layer}.{k}"] for k in self.block_inputs}
            k_cache, v_cache = self.caches[layer]
            seen = {"k_cache": k_cache[:span], "v_cache": v_cache[:span]}
            out = evaluate(block, {**w, "x": x, "pos": p, **seen})
            x = out["y"]
            rows = self._kept_rows(pos, width)
            k_cache[pos : pos + rows] = out["k_new"][:rows]
            v_cache[pos : pos + rows] = out["v_new"][:rows]
        out = evaluate(head, {"x": x, **{n: self.host[n] for n in self.head_inputs}})
        return out["logits"]

    def release_graphs(self) -> None:
        """Drop the compiled graphs and the caches (``reserve`` makes new ones)."""
        if not self.reference:
            for compiled in self._compiled.values():
                for c in compiled:
                    c.release()
            for layer in self.caches:
                for buf in layer:
                    buf.release()
            for pair in self.x_buffers.values():
                for buf in pair:
                    buf.release()
            self.x_buffers.clear()
            for buf in self.id_buffers.values():
                buf.release()
            self.id_buffers.clear()
        self._compiled.clear()

    def release(self) -> None:
        """Free every device buffer now."""
        self.release_graphs()
        if not self.reference:
            for buf in self.buffers.values():
                buf.release()  # twice for a quantized weight's bytes: a no-op the second time
            self.pos_buffer.release()


def _logit_rows(raw: array, rows: int, vocab: int) -> Any:
    try:
        import numpy as np
    except ImportError:
        return [raw[r * vocab : (r + 1) * vocab] for r in range(rows)]
    return np.frombuffer(raw, np.float32, rows * vocab).reshape(rows, vocab)


def weights_from(tensors: Mapping[str, Any]) -> Callable[[str, str], Any]:
    """A ``weights`` callable over a mapping of GGUF names to dense f32 values (tied output
    when absent)."""

    def weight(name: str, fmt: str = DENSE) -> Any:
        if fmt != DENSE:
            raise ValueError(f"{name}: these weights are dense, not {fmt}")
        if name == "output.weight" and name not in tensors:
            return tensors["token_embd.weight"]
        return tensors[name]

    return weight


__all__ = ["REFERENCE", "Llama", "bucket", "weights_from"]
