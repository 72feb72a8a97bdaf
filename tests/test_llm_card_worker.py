"""The LLM card's worker side (demos/llm_card.py) in CPython: the Loader reads the real model
file in slices, refuses a short, long, damaged or non-GGUF file with its reason, and leaves a
model whose decode step is compiled (wgpu-py on lavapipe, the page's WGSL); a Reply decodes
the same greedy tokens as ``tang.llm.generate``, a step per call, and the chat handler checks
its parameters. The browser's side (fetch, Cache Storage, the card) is e2e/test_llm_card.py."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from demos import api, llm_card
from demos.common import session_state
from tang.io import gguf
from tang.llm.engine import Llama
from tang.llm.generate import generate
from tang.llm.sampling import Sampling
from tang.llm.tokenizer import Tokenizer

pytestmark = pytest.mark.toolchain


def chunks(data: bytes, size: int = 3 << 20):
    """A source like the page's stream reader: the next chunk per call, b"" at the end."""
    parts = iter([data[k : k + size] for k in range(0, len(data), size)])

    async def read() -> bytes:
        return next(parts, b"")

    return read


def run_loader(loader: llm_card.Loader) -> list[str]:
    async def go() -> list[str]:
        stages = [loader.stage]
        while not loader.done:
            await loader.step()
            if loader.stage != stages[-1]:
                stages.append(loader.stage)
        return stages

    return asyncio.run(go())


@pytest.fixture(scope="module")
def file_bytes(smollm2_gguf) -> bytes:
    return smollm2_gguf.read_bytes()


def loader_for(data: bytes, size: int, sha: str, device=None) -> llm_card.Loader:
    return llm_card.Loader(chunks(data), size=size, sha256=sha, device=device, source="network")


def test_the_loader_reads_checks_uploads_compiles_and_measures(file_bytes, open_device) -> None:
    dev = open_device("native")
    sha = hashlib.sha256(file_bytes).hexdigest()
    loader = loader_for(file_bytes, len(file_bytes), sha, dev)
    assert run_loader(loader) == list(llm_card.STAGES)
    assert len(loader.data) == 0  # the bytes are dropped once the device holds the weights
    facts = loader.facts()
    assert facts["weights"] == "Q4_1, Q8_0" and round(facts["weight_bytes"] / 1e6, 1) == 96.6
    block, head, *lookup = loader.model.compiled(1)
    assert len(lookup) == 1  # the tied table: tokens are looked up on the device
    extra = len(lookup[0].steps)
    assert facts["kernels_lowered"] == len(block.steps) + len(head.steps) + extra
    assert facts["kernels_per_token"] == 30 * len(block.steps) + len(head.steps) + extra
    assert facts["device_bytes"] > facts["weight_bytes"]
    assert facts["copy_gbs"] > 0 and facts["light_tok_s"] == pytest.approx(
        facts["copy_gbs"] * 1e9 / facts["weight_bytes"]
    )
    assert loader.tokenizer.decode(loader.tokenizer.encode("Paris")) == "Paris"
    loader.model.release()


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (lambda b: b[:-1000], "the model file stopped after"),
        (lambda b: b + b"x", "is longer than the"),
        (lambda b: b[:5000] + bytes([b[5000] ^ 1]) + b[5001:], "it is damaged"),
    ],
)
def test_the_loader_refuses_a_short_long_or_damaged_file(file_bytes, cut, message) -> None:
    sha = hashlib.sha256(file_bytes).hexdigest()
    loader = loader_for(cut(file_bytes), len(file_bytes), sha)
    with pytest.raises(llm_card.LoadError, match=message):
        run_loader(loader)
    assert loader.model is None


def test_the_loader_refuses_a_file_that_is_not_gguf() -> None:
    junk = b"GGUF" + bytes(100)
    loader = loader_for(junk, len(junk), hashlib.sha256(junk).hexdigest())
    with pytest.raises(llm_card.LoadError, match="the model file is not a usable GGUF: "):
        run_loader(loader)


@pytest.fixture(scope="module")
def c_model(smollm2_gguf, c_device):
    f = gguf.read(smollm2_gguf)
    model = Llama.from_gguf(f, "c", capacity=128)
    yield model, Tokenizer.from_gguf(f.metadata)
    model.release()


def reply_tokens(reply: llm_card.Reply) -> tuple[list[int], list[dict]]:
    async def go() -> list[dict]:
        answers = []
        while not reply.done:
            answers.append(await reply.step())
        return answers

    answers = asyncio.run(go())
    return answers[-1]["tokens"], answers


def test_a_reply_decodes_the_tokens_generate_decodes(c_model) -> None:
    model, tokenizer = c_model
    ids = tokenizer.encode_chat([{"role": "user", "content": "What is the capital of France?"}])
    ends = sorted(tokenizer.special_ids)
    want = [t for t in generate(model, ids, max_tokens=12, stop=ends) if t not in ends]
    tokens, answers = reply_tokens(llm_card.Reply(model, tokenizer, ids, 12, Sampling()))
    assert tokens == want
    assert len(answers) == len(ids) + len(want) - 1 + (answers[-1]["finish"] == "stop")
    assert all(a["text"] == "" for a in answers[: len(ids) - 1])  # the prompt, a token a step
    text = "".join(a["text"] for a in answers)
    assert "Paris" in text and text == tokenizer.decode(want)
    last = answers[-1]
    assert last["done"] and last["prefill_tok_s"] > 0 and last["prompt_done"] == len(ids)


def test_a_reply_stops_at_its_length_and_a_seed_repeats_a_draw(c_model) -> None:
    model, tokenizer = c_model
    ids = tokenizer.encode_chat([{"role": "user", "content": "Tell me a story."}])
    greedy, _ = reply_tokens(llm_card.Reply(model, tokenizer, ids, 3, Sampling()))
    assert len(greedy) == 3
    warm = Sampling(0.9, llm_card.TOP_K, 1.0, 7)
    first, answers = reply_tokens(llm_card.Reply(model, tokenizer, ids, 5, warm))
    again, _ = reply_tokens(llm_card.Reply(model, tokenizer, ids, 5, warm))
    assert first == again and answers[-1]["finish"] in ("length", "stop")


def call(method: str, **params) -> dict:
    return json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"prompt": "  "}, "the message is empty"),
        ({"prompt": "x" * 2001}, "the message is 2,001 characters; at most 2,000"),
        ({"prompt": "hi", "temperature": 3}, "temperature is 0 (greedy) … 2, not 3"),
        ({"prompt": "hi", "temperature": "hot"}, "temperature must be a finite number"),
        ({"prompt": "hi", "seed": 1.5}, "seed must be a whole number, not 1.5"),
        ({"prompt": "hi", "max_tokens": 0}, "max_tokens is 1 … 256, not 0"),
    ],
)
def test_the_chat_handler_checks_its_parameters(c_model, params, message) -> None:
    state = session_state("llm")
    state.reset()
    assert "load the model first" in call("llm_card.chat", prompt="hi")["error"]["message"]
    loader = llm_card.Loader(chunks(b""), size=0, sha256="", device=None, source="network")
    loader.model, loader.tokenizer = c_model
    state["loaded"] = loader
    try:
        envelope = call("llm_card.chat", **params)
        assert not envelope["ok"] and message in envelope["error"]["message"]
        assert call("llm_card.chat", prompt="hi", max_tokens=2)["ok"]
        steps = 0
        while not (answer := call("llm_card.chat_step"))["result"]["done"]:
            steps += 1
        assert answer["ok"] and len(answer["result"]["tokens"]) <= 2
        assert call("llm_card.chat_stop")["result"]["stopped"] is True
        assert "no reply in progress" in call("llm_card.chat_step")["error"]["message"]
    finally:
        state.reset()
