"""Language models on tang.tensor: a GGUF model's weights, its tokenizer and a decoder.

    from tang.io import find_model, read
    from tang.llm import Llama, Tokenizer, generate
    model = Llama.from_gguf(find_model(), "c")    # weights packed on the device
    tok = Tokenizer.from_gguf(read(find_model()).metadata)
    ids = tok.encode_chat([{"role": "user", "content": "Hi"}])
    print(tok.decode(list(generate(model, ids, max_tokens=16, stop=tok.special_ids))))

See docs/llm.md.
"""

from __future__ import annotations

from .engine import Llama
from .generate import Stats, generate, lookup_draft
from .model import LlamaConfig
from .sampling import Sampler, Sampling
from .tokenizer import Tokenizer

__all__ = [
    "Llama",
    "LlamaConfig",
    "Sampler",
    "Sampling",
    "Stats",
    "Tokenizer",
    "generate",
    "lookup_draft",
]
