"""``python -m demos.llm``: a greedy run on the compiled C device streams exactly the text a
direct ``tang.llm.generate`` call decodes to (plain and ``--json``), and every bad input exits
2 with one line on stderr (most before the model file is even opened)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from demos.llm import TextModel
from demos.llm.cli import main

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "What is the capital of France?"
TOKENS = 8

needs_cc = pytest.mark.usefixtures("c_device")  # --device c: a skip without a C compiler


def greedy_text(path: Path, ids_of, tokens: int) -> tuple[str, str]:
    """The oracle: ``generate`` on the C device, the ids decoded with end-of-turn tokens
    dropped, and the finish reason."""
    from tang.llm.engine import Llama
    from tang.llm.generate import generate

    tm = TextModel.open(path)
    ids = ids_of(tm)
    model = Llama.from_gguf(path, device="c")
    try:
        ends = tm.tokenizer.special_ids
        out = list(generate(model, ids, max_tokens=tokens, stop=sorted(ends)))
    finally:
        model.release()
    finish = "stop" if out[-1] in ends else "length"
    return tm.tokenizer.decode([t for t in out if t not in ends]), finish


def run_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "demos.llm", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.fixture(scope="module")
def expected(smollm2_gguf: Path) -> tuple[str, str]:
    chat = [{"role": "user", "content": PROMPT}]
    return greedy_text(smollm2_gguf, lambda tm: tm.encode_chat(chat), TOKENS)


@pytest.mark.toolchain
@needs_cc
def test_json_run_equals_a_direct_generate_call(smollm2_gguf: Path, expected) -> None:
    argv = [PROMPT, "--chat", "--max-tokens", str(TOKENS), "--device", "c", "--temperature", "0"]
    proc = run_cli(*argv, "--model", str(smollm2_gguf), "--json")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()
    got = json.loads(out)  # only the one object on stdout
    text, finish = expected
    assert (got["text"], got["finish_reason"]) == (text, finish) and text.strip()
    assert got["tokens"] <= TOKENS and got["device"] == "c"
    assert got["prompt_tokens"] > 20  # the template's system prompt is there
    assert set(got) == {
        "text",
        "tokens",
        "prompt_tokens",
        "decode_tok_s",
        "prefill_tok_s",
        "device",
        "finish_reason",
    }


@pytest.mark.toolchain
@needs_cc
def test_text_streams_to_stdout_as_it_decodes(smollm2_gguf: Path, expected) -> None:
    argv = [PROMPT, "--chat", "--max-tokens", str(TOKENS), "--device", "c"]
    proc = run_cli(*argv, "--model", str(smollm2_gguf))
    first = os.read(proc.stdout.fileno(), 4096)  # the first piece, flushed on its own
    still_running = proc.poll() is None
    rest, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()
    text = expected[0]
    assert (first + rest).decode() == text + ("" if text.endswith("\n") else "\n")
    assert first and still_running, "the first piece came only when the run had ended"


BAD = {
    "empty prompt": ([""], "the prompt is empty"),
    "no new tokens": (["hi", "--max-tokens", "0"], "--max-tokens must be ≥ 1"),
    "cold": (["hi", "--temperature", "-0.5"], "--temperature must be from 0 to 2"),
    "hot": (["hi", "--temperature", "2.5"], "--temperature must be from 0 to 2"),
    "not a number": (["hi", "--temperature", "warm"], "invalid float value"),
    "no nucleus": (["hi", "--top-p", "0"], "--top-p must be in (0, 1]"),
    "over one": (["hi", "--top-p", "1.5"], "--top-p must be in (0, 1]"),
    "unknown device": (["hi", "--device", "tpu"], "invalid choice"),
    "missing file": (["hi", "--model", "/nonexistent/model.gguf"], "does not exist"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_2_with_one_line(case: str, capsys) -> None:
    argv, message = BAD[case]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("python -m demos.llm: error: "), err
    assert message in err


def test_prompt_beyond_the_context_needs_only_the_tokenizer(smollm2_gguf: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["one two three", "--max-tokens", "8190", "--model", str(smollm2_gguf)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert "3 prompt tokens + --max-tokens 8190 exceed the model's context of 8192" in err


def test_a_malformed_model_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 40)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    for path in (bad, empty, tmp_path):
        proc = run_cli("hi", "--model", str(path))
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2 and out == b"", err.decode()
        assert err.decode().count("\n") == 1 and "Traceback" not in err.decode(), err.decode()
