"""``python -m demos.llm serve``: the OpenAI-compatible server, started once for the module on
a free port with the compiled C device, driven by the official ``openai`` client (and httpx
for requests that client would never send). Greedy answers equal a direct
``tang.llm.generate`` call's, streamed or not, alone or 16 at once; bad requests get their
status and OpenAI's error body; a client that hangs up frees the queue."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from demos.llm import TextModel

MISSING = [
    m for m in ("openai", "starlette", "uvicorn", "httpx") if not importlib.util.find_spec(m)
]
pytestmark = [
    pytest.mark.toolchain,
    pytest.mark.skipif(
        bool(MISSING), reason=f"needs {', '.join(MISSING)}: pip install -e '.[dev]'"
    ),
    pytest.mark.usefixtures("c_device"),  # --device c: a skip without a C compiler
]

ROOT = Path(__file__).resolve().parent.parent
NAME = "smollm2-135m-instruct"
CHAT = [{"role": "user", "content": "What is the capital of France?"}]
PROMPTS = ["The capital of France is", "Once upon a time", "def add(a, b):", "1, 2, 3,"]
TOKENS = 8


class Oracle:
    """Greedy ``generate`` on the C device in this process, each prompt run once at the
    longest length asked (a shorter greedy run is a prefix of a longer one)."""

    def __init__(self, path: Path) -> None:
        from tang.llm.engine import Llama

        self.tm = TextModel.open(path)
        self.model = Llama.from_gguf(path, device="c")
        self.runs: dict[tuple[int, ...], list[int]] = {}

    def answer(self, ids: list[int], tokens: int) -> tuple[str, str]:
        """The text of ``tokens`` greedy tokens after ``ids`` and the finish reason."""
        from tang.llm.generate import generate

        ends = self.tm.tokenizer.special_ids
        run = self.runs.get(tuple(ids), [])
        if len(run) < tokens and not (run and run[-1] in ends):
            run = list(generate(self.model, ids, max_tokens=tokens, stop=sorted(ends)))
            self.runs[tuple(ids)] = run
        out = run[:tokens]
        finish = "stop" if out[-1] in ends else "length"
        return self.tm.tokenizer.decode([t for t in out if t not in ends]), finish

    def chat(self, messages, tokens: int = TOKENS) -> tuple[str, str]:
        return self.answer(self.tm.encode_chat(messages), tokens)

    def complete(self, prompt: str, tokens: int = TOKENS) -> tuple[str, str]:
        return self.answer(self.tm.encode(prompt), tokens)


@pytest.fixture(scope="module")
def oracle(smollm2_gguf: Path):
    o = Oracle(smollm2_gguf)
    yield o
    o.model.release()


@pytest.fixture(scope="module")
def server(smollm2_gguf: Path, tmp_path_factory):
    """The base URL (``…/v1``) of a server subprocess on a free port."""
    log = tmp_path_factory.mktemp("server") / "stderr.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "demos.llm",
                "serve",
                "--port",
                "0",
                "--device",
                "c",
                "--model",
                str(smollm2_gguf),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=300)
    if not lines or "http://" not in lines[0]:
        proc.kill()
        pytest.fail(f"the server did not start: {lines} {log.read_text()[-2000:]}")
    yield lines[0].split()[-1]
    alive = proc.poll() is None
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    assert alive, f"the server died: {log.read_text()[-2000:]}"


def client(url: str):
    from openai import OpenAI

    return OpenAI(base_url=url, api_key="x", max_retries=0, timeout=600)


def test_the_one_model_is_listed(server: str) -> None:
    assert [m.id for m in client(server).models.list()] == [NAME]


def test_a_chat_completion_equals_generate(server: str, oracle: Oracle) -> None:
    got = client(server).chat.completions.create(
        model=NAME, messages=CHAT, max_tokens=TOKENS, temperature=0
    )
    text, finish = oracle.chat(CHAT)
    choice = got.choices[0]
    assert (choice.message.content, choice.finish_reason) == (text, finish) and text.strip()
    assert choice.message.role == "assistant" and got.object == "chat.completion"
    prompt = len(oracle.tm.encode_chat(CHAT))
    assert got.usage.prompt_tokens == prompt and 1 <= got.usage.completion_tokens <= TOKENS
    assert got.usage.total_tokens == prompt + got.usage.completion_tokens


def test_a_streamed_chat_completion_equals_generate(server: str, oracle: Oracle) -> None:
    chunks = list(
        client(server).chat.completions.create(
            model=NAME, messages=CHAT, max_tokens=TOKENS, temperature=0, stream=True
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert (text, chunks[-1].choices[0].finish_reason) == oracle.chat(CHAT)
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


def test_completions_equal_generate_streamed_or_not(server: str, oracle: Oracle) -> None:
    api = client(server)
    prompt = PROMPTS[0]
    whole = api.completions.create(model=NAME, prompt=prompt, max_tokens=TOKENS, temperature=0)
    chunks = list(
        api.completions.create(
            model=NAME, prompt=prompt, max_tokens=TOKENS, temperature=0, stream=True
        )
    )
    want = oracle.complete(prompt)
    assert (whole.choices[0].text, whole.choices[0].finish_reason) == want
    assert ("".join(c.choices[0].text for c in chunks), chunks[-1].choices[0].finish_reason) == want
    assert whole.usage.prompt_tokens == len(oracle.tm.encode(prompt))


def test_sixteen_concurrent_streams_get_their_sequential_answers(
    server: str, oracle: Oracle
) -> None:
    tokens = 4
    start = threading.Barrier(16)

    def one(i: int) -> str:
        api = client(server)
        start.wait()
        stream = api.completions.create(
            model=NAME,
            prompt=PROMPTS[i % len(PROMPTS)],
            max_tokens=tokens,
            temperature=0,
            stream=True,
        )
        return "".join(c.choices[0].text for c in stream)

    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(one, range(16)))
    want = [oracle.complete(PROMPTS[i % len(PROMPTS)], tokens)[0] for i in range(16)]
    assert got == want


def test_stop_strings_cut_the_text(server: str, oracle: Oracle) -> None:
    text, _ = oracle.chat(CHAT)
    word = text.split()[2]  # cut before the third word
    got = client(server).chat.completions.create(
        model=NAME, messages=CHAT, max_tokens=TOKENS, temperature=0, stop=[word, "zzz"]
    )
    assert got.choices[0].message.content == text[: text.index(word)]
    assert got.choices[0].finish_reason == "stop"


def error_cases(url: str) -> list[tuple[str, str, object, int, str | None]]:
    chat, comp = f"{url}/chat/completions", f"{url}/completions"
    msgs = {"messages": CHAT, "max_tokens": 2}
    return [
        ("POST", chat, b"{not json", 400, None),
        ("POST", chat, b"[1, 2]", 400, None),
        ("POST", chat, {"model": NAME}, 400, "messages"),
        ("POST", chat, {"messages": "hi"}, 400, "messages"),
        ("POST", chat, {"messages": [{"role": "wizard", "content": "x"}]}, 400, "messages[0]"),
        ("POST", comp, {"max_tokens": 2}, 400, "prompt"),
        ("POST", comp, {"prompt": 42}, 400, "prompt"),
        ("POST", chat, {**msgs, "max_tokens": 0}, 400, "max_tokens"),
        ("POST", chat, {**msgs, "max_completion_tokens": -3}, 400, "max_completion_tokens"),
        ("POST", chat, {**msgs, "max_tokens": "8"}, 400, "max_tokens"),
        ("POST", chat, {**msgs, "max_tokens": 8192}, 400, "max_tokens"),
        ("POST", chat, {**msgs, "max_completion_tokens": 8190}, 400, "max_completion_tokens"),
        ("POST", comp, {"prompt": "hi", "max_tokens": 8192}, 400, "max_tokens"),
        ("POST", chat, {**msgs, "temperature": 2.5}, 400, "temperature"),
        ("POST", chat, {**msgs, "temperature": -0.1}, 400, "temperature"),
        ("POST", chat, {**msgs, "temperature": "hot"}, 400, "temperature"),
        ("POST", chat, {**msgs, "top_p": 0}, 400, "top_p"),
        ("POST", chat, {**msgs, "n": 2}, 400, "n"),
        ("POST", chat, {**msgs, "stream": "yes"}, 400, "stream"),
        ("POST", chat, {**msgs, "stop": [1]}, 400, "stop"),
        ("POST", chat, {**msgs, "model": "gpt-4o"}, 404, "model"),
        ("GET", f"{url}/models/gpt-4o", None, 404, "model"),
        ("GET", f"{url}/embeddings", None, 404, None),
        ("POST", f"{url}/models", {}, 405, None),
        ("GET", chat, None, 405, None),
        ("POST", chat, b"{" + b" " * (1 << 20) + b"}", 413, None),
        ("POST", comp, iter([b"{", b" " * (1 << 20), b"}"]), 413, None),  # chunked: no length
    ]


def test_bad_requests_get_openai_errors(server: str) -> None:
    import httpx
    import openai

    with httpx.Client(timeout=60) as http:
        for method, url, body, status, param in error_cases(server):
            kind = "json" if isinstance(body, dict) else "content"
            r = http.request(method, url, **({kind: body} if body is not None else {}))
            what = f"{method} {url} {str(body)[:80]}"
            assert r.status_code == status, f"{what}: {r.status_code} {r.text}"
            error = r.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}, what
            assert error["param"] == param and error["message"], what
            assert error["type"] == "invalid_request_error", what
    with pytest.raises(openai.BadRequestError) as exc:
        client(server).chat.completions.create(model=NAME, messages=CHAT, temperature=3)
    assert exc.value.status_code == 400 and exc.value.param == "temperature"


def health(url: str) -> dict:
    import httpx

    return httpx.get(url.removesuffix("/v1") + "/health", timeout=60).json()


def test_clients_that_hang_up_free_the_queue(server: str, oracle: Oracle) -> None:
    """A runs (500 tokens would take minutes), B waits behind it; B hangs up, then A after its
    first piece: B never runs, A stops between tokens, and the next request is served."""
    import httpx

    before = health(server)
    long = {"prompt": PROMPTS[1], "max_tokens": 500, "temperature": 0, "stream": True}
    url = f"{server}/completions"
    with httpx.Client(timeout=60) as a, httpx.Client(timeout=60) as b:
        with a.stream("POST", url, json=long) as first:
            lines = first.iter_lines()
            assert next(line for line in lines if line.startswith("data: {"))  # A is running
            with b.stream("POST", url, json=long) as second:
                assert second.status_code == 200  # B is queued
            time.sleep(0.5)  # B's hang-up reaches the server before A's
        start = time.monotonic()
        while (now := health(server))["busy"] or now["queued"]:
            assert time.monotonic() - start < 120, f"the queue is still busy: {now}"
            time.sleep(0.1)
    assert now["cancelled"] - before["cancelled"] == 2, now
    assert now["started"] - before["started"] == 1, now
    got = client(server).completions.create(
        model=NAME, prompt=PROMPTS[0], max_tokens=2, temperature=0
    )
    assert got.choices[0].text == oracle.complete(PROMPTS[0], 2)[0]


def test_the_server_still_answers_after_all_that(server: str, oracle: Oracle) -> None:
    got = client(server).chat.completions.create(
        model=NAME, messages=CHAT, max_tokens=3, temperature=0
    )
    assert got.choices[0].message.content == oracle.chat(CHAT, 3)[0]
