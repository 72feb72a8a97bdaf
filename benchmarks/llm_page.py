"""The LLM card's speed in the tab (benchmarks/llm.py --page): the built site served locally,
Debian's Chromium on one WebGPU adapter, the card loading SmolLM2 and answering the
benchmark's prompt greedily, its own readouts read back (decode tok/s, the copy bandwidth
it measured at load, the speed of light that gives).

The tab feeds the prompt a token per worker call (so Stop and the other cards get their
turn), so its prompt speed is not the desktop's batched prefill; decode is the same work.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "e2e"))

CARD = "#panel-llm .panel-body"


def page_figures(adapters: list[str], prompt: str, tokens: int) -> dict[str, dict | str]:
    """Per adapter ("lavapipe", "swiftshader"): the card's figures, or why there are none."""
    import harness
    from conftest import ADAPTERS, BASE_ARGS, TangPage
    from playwright.sync_api import sync_playwright

    import build

    out: dict[str, dict | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        build.build(Path(tmp) / "site", quiet=True)
        server, url = harness.serve(Path(tmp) / "site")
        try:
            with sync_playwright() as pw:
                for name in adapters:
                    args, env = ADAPTERS[name]
                    context = pw.chromium.launch_persistent_context(
                        str(Path(tmp) / f"profile-{name}"),
                        executable_path=harness.CHROMIUM,
                        headless=True,
                        args=[*BASE_ARGS, *args],
                        env={**os.environ, **(env or {})},
                    )
                    try:
                        out[name] = _one(TangPage(context.pages[0], url), prompt, tokens)
                    except Exception as exc:
                        out[name] = f"failed: {str(exc).splitlines()[0]}"
                    finally:
                        context.close()
        finally:
            server.shutdown()
            server.server_close()
    return out


def _one(tp, prompt: str, tokens: int) -> dict:
    page = tp.open().page
    page.wait_for_function(
        "s => ['idle', 'no-adapter', 'error'].includes(document.querySelector(s)?.dataset.state)",
        arg=CARD,
        timeout=120_000,
    )
    state = page.eval_on_selector(CARD, "e => e.dataset.state")
    if state != "idle":
        return page.inner_text(f"{CARD} .llm-message")
    page.click(f"{CARD} .llm-load")
    page.wait_for_function(
        "s => ['ready', 'error'].includes(document.querySelector(s).dataset.state)",
        arg=CARD,
        timeout=600_000,
    )
    page.fill(f"{CARD} .llm-prompt", prompt)
    page.fill(f"{CARD} .llm-max-tokens", str(tokens))
    page.click(f"{CARD} .llm-send")
    page.wait_for_function(
        "s => ['done', 'error'].includes(document.querySelector(s).dataset.state)",
        arg=CARD,
        timeout=3_600_000,
    )
    data = page.eval_on_selector(CARD, "e => ({...e.dataset})")
    if data["state"] != "done":
        return page.inner_text(f"{CARD} .llm-message")
    return {
        "adapter": data["adapter"],
        "copy_gbs": float(data["copyGbs"]),
        "light_tok_s": float(data["lightTokS"]),
        "prompt_tok_s": float(data["prefillTokS"]),
        "decode_tok_s": float(data["decodeTokS"]),
        "tokens": len(data["tokens"].split(",")),
        "kernels": page.inner_text(f"{CARD} [data-readout='kernels']"),
    }


__all__ = ["page_figures"]
