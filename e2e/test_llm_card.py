"""The "An LLM" card in headless Chromium on the lavapipe adapter (and, for one reply,
SwiftShader): nothing is fetched until Load; loading shows its progress in MB; greedy
replies to two fixed prompts are the desktop CPU reference's tokens, one for one; Stop ends
a reply within one token; a reload loads from Cache Storage without fetching the model
again; a damaged cached copy is refused and fetched again; Forget deletes it. Without an
adapter the card says so and Load stays off. No request leaves localhost (the network
guard), and the page logs no error. The replies are 16 greedy tokens each (the France
prompt: 7, then the model ends its turn)."""

from __future__ import annotations

import json

import pytest
from conftest import ADAPTERS, TangPage

CARD = "#panel-llm .panel-body"
MODEL = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPTS = ("Write one sentence about the ocean.", "List three fruits.")  # 16 tokens each
FRANCE = "What is the capital of France?"  # 7 tokens, then the model ends its turn
TOKENS = 16
REPLY_TIMEOUT_MS = 300_000  # lavapipe decodes about two tokens a second here


def card_state(tp: TangPage) -> str:
    return tp.page.eval_on_selector(CARD, "e => e.dataset.state")


def wait_state(tp: TangPage, states: tuple[str, ...], timeout: float = 120_000) -> str:
    tp.page.wait_for_function(
        "([s, want]) => want.includes(document.querySelector(s)?.dataset.state)",
        arg=[CARD, [*states, "error"]],
        timeout=timeout,
    )
    state = card_state(tp)
    assert state in states, tp.page.inner_text(f"{CARD} .llm-message")
    return state


def open_card(context, site) -> TangPage:
    page = context.pages[0] if context.pages else context.new_page()
    tp = TangPage(page, site.url).open()
    wait_state(tp, ("idle", "no-adapter"))
    tp.page.locator(CARD).scroll_into_view_if_needed()
    return tp


def load(tp: TangPage) -> list[str]:
    """Press Load and wait for the model; the progress texts seen on the way."""
    tp.page.click(f"{CARD} .llm-load")
    seen: list[str] = []
    while card_state(tp) not in ("ready", "error", "idle"):
        text = tp.page.inner_text(f"{CARD} .llm-progress-text")
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        tp.page.wait_for_timeout(50)
    assert card_state(tp) == "ready", tp.page.inner_text(f"{CARD} .llm-message")
    return seen


def reply(tp: TangPage, prompt: str, tokens: int = TOKENS) -> dict:
    tp.page.fill(f"{CARD} .llm-prompt", prompt)
    tp.page.fill(f"{CARD} .llm-max-tokens", str(tokens))
    tp.page.fill(f"{CARD} .llm-temperature", "0")
    tp.page.click(f"{CARD} .llm-send")
    wait_state(tp, ("done",), REPLY_TIMEOUT_MS)
    return tp.page.eval_on_selector(CARD, "e => ({...e.dataset})")


@pytest.fixture(scope="module")
def reference(site) -> dict[str, list[int]]:
    """Greedy tokens of the same model on the desktop (the compiled C device, or wgpu-py)."""
    from tang.gpu.native_c import find_compiler
    from tang.llm.engine import Llama
    from tang.llm.generate import generate
    from tang.llm.tokenizer import Tokenizer

    model = Llama.from_gguf(site.dir / MODEL, "c" if find_compiler() else "native")
    from tang.io import gguf

    tokenizer = Tokenizer.from_gguf(gguf.read(site.dir / MODEL).metadata)
    ends = sorted(tokenizer.special_ids)
    out = {}
    for prompt in (*PROMPTS, FRANCE):
        ids = tokenizer.encode_chat([{"role": "user", "content": prompt}])
        got = list(generate(model, ids, max_tokens=TOKENS, stop=ends))
        out[prompt] = [t for t in got if t not in ends]
    model.release()
    return out


def model_requests(context) -> list[str]:
    """Every request for the model file from now on (page and worker)."""
    seen: list[str] = []
    context.on("request", lambda r: seen.append(r.url) if r.url.endswith(MODEL) else None)
    return seen


def test_the_llm_decodes_in_the_tab_and_caches_the_model(launch, site, reference, tmp_path):
    profile = tmp_path / "profile"
    context = launch(*ADAPTERS["lavapipe"], profile=profile)
    fetched = model_requests(context)
    tp = open_card(context, site)
    assert card_state(tp) == "idle"
    assert tp.page.inner_text(f"{CARD} .llm-load") == "Load SmolLM2-135M-Instruct (98.4 MB)"
    assert fetched == []  # nothing until Load
    seen = load(tp)
    assert any(" MB of 98.4 MB from the site" in s for s in seen), seen
    assert len(fetched) == 1
    weights = tp.page.inner_text(f"{CARD} [data-readout='weights']")
    assert weights.startswith("Q4_1, Q8_0 blocks as in the file: 96.6 MB read per token")
    kernels = tp.page.inner_text(f"{CARD} [data-readout='kernels']")
    assert kernels.endswith("kernels, all lowered by the tensor IR")

    for prompt in PROMPTS:
        data = reply(tp, prompt)
        assert json.loads(data["tokens"]) == reference[prompt], prompt
        assert len(reference[prompt]) == TOKENS and data["finish"] == "length"
    assert "The ocean is a vast" in tp.page.inner_text(f"{CARD} .llm-chat")
    speed = tp.page.inner_text(f"{CARD} [data-readout='speed']")
    assert speed.startswith("prompt ") and " · decode " in speed and speed.endswith(" tok/s")
    assert "% of it" in tp.page.inner_text(f"{CARD} [data-readout='light']")

    # Stop lands within one token: the worker decodes at most one more than the page showed
    tp.page.fill(f"{CARD} .llm-prompt", "Tell me a long story about a robot.")
    tp.page.fill(f"{CARD} .llm-max-tokens", "64")
    tp.page.click(f"{CARD} .llm-send")
    tp.page.wait_for_function(
        "s => JSON.parse(document.querySelector(s).dataset.tokens || '[]').length >= 3",
        arg=CARD,
        timeout=REPLY_TIMEOUT_MS,
    )
    # while it decodes, other cards' requests are answered between its tokens
    waits = [
        tp.page.evaluate(
            "async () => { const t = performance.now(); "
            "await window.tang.call('ping', {}); return performance.now() - t; }"
        )
        for _ in range(3)
    ]
    assert card_state(tp) == "generating" and max(waits) < 5_000, waits
    tp.page.click(f"{CARD} .llm-stop")
    wait_state(tp, ("stopped",))
    data = tp.page.eval_on_selector(CARD, "e => ({...e.dataset})")
    assert 0 <= int(data["workerTokens"]) - int(data["stoppedAt"]) <= 1
    assert tp.console_errors == []

    # a reload finds the file in Cache Storage: no second fetch
    tp.page.reload()
    tp.wait_for("ready")
    wait_state(tp, ("idle",))
    label = tp.page.inner_text(f"{CARD} .llm-load")
    assert label == "Load SmolLM2-135M-Instruct (98.4 MB, cached in this browser)"
    load(tp)
    assert tp.page.eval_on_selector(CARD, "e => e.dataset.loadedFrom") == "cache"
    assert len(fetched) == 1, fetched

    # a damaged cached copy is refused by its sha256 and fetched again
    tp.page.evaluate(
        """async (path) => {
             const cache = await caches.open("tang-models-v1");
             const url = new URL(path, location.href).href;
             const bytes = new Uint8Array(await (await cache.match(url)).arrayBuffer());
             bytes[123456] ^= 0xff;
             await cache.put(url, new Response(bytes));
           }""",
        MODEL,
    )
    tp.page.reload()
    tp.wait_for("ready")
    wait_state(tp, ("idle",))
    load(tp)
    assert tp.page.eval_on_selector(CARD, "e => e.dataset.loadedFrom") == "network"
    message = tp.page.inner_text(f"{CARD} .llm-message")
    assert "The cached copy was refused (the model file's sha256 is" in message, message
    assert len(fetched) == 2, fetched
    data = reply(tp, FRANCE)
    assert json.loads(data["tokens"]) == reference[FRANCE] and data["finish"] == "stop"
    assert "Paris" in tp.page.inner_text(f"{CARD} .llm-chat")

    # Forget deletes the cached copy and frees the model
    tp.page.click(f"{CARD} .llm-forget")
    wait_state(tp, ("idle",))
    kept = tp.page.evaluate(
        """async (path) => !!(await (await caches.open("tang-models-v1"))
             .match(new URL(path, location.href).href))""",
        MODEL,
    )
    assert kept is False
    assert tp.page.inner_text(f"{CARD} .llm-load") == "Load SmolLM2-135M-Instruct (98.4 MB)"
    assert tp.console_errors == []


def test_without_an_adapter_the_card_says_so_and_load_stays_off(launch, site):
    context = launch()
    fetched = model_requests(context)
    tp = open_card(context, site)
    assert card_state(tp) == "no-adapter"
    assert tp.page.is_disabled(f"{CARD} .llm-load")
    message = tp.page.inner_text(f"{CARD} .llm-message")
    assert message.startswith("No WebGPU adapter here (")
    assert "minutes per token" in message and "desktop command below" in message
    assert tp.page.inner_text(f"{CARD} .command-text").startswith("python -m demos.llm --chat")
    assert fetched == []
    assert tp.console_errors == []


def test_swiftshader_decodes_the_same_greedy_reply(launch, site, reference):
    """Google's software adapter: slower (about 0.7 tokens/s here), the same tokens."""
    context = launch(*ADAPTERS["swiftshader"])
    tp = open_card(context, site)
    load(tp)
    assert "swiftshader" in tp.page.inner_text(f"{CARD} [data-readout='device']").lower()
    data = reply(tp, FRANCE)
    assert json.loads(data["tokens"]) == reference[FRANCE]
    assert data["finish"] == "stop"  # "The capital of France is Paris." ends its turn
    assert tp.console_errors == []
