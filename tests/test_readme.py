"""Every command and snippet in README.md runs as written.

The README's fenced blocks are read by language: each line of a ```sh block is a command,
each ```python block a program, each ```js block code that runs in the page. ``python -m …``
commands run here exactly as written and must exit 0; Python blocks run in a fresh
interpreter with the repository on its path and must exit 0; the worker methods a JS block
calls must exist and take the parameters it passes. A command of any other shape must be
listed in ELSEWHERE with the test that covers it, so a new README command is never skipped
silently.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from tests.command_marks import marks_for

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

# README commands not run as written by test_python_m_commands, and where each is tested.
ELSEWHERE = {
    # the test runner itself: .ci/run runs it, and this suite is what it runs
    "python build.py test": "the suite itself (.ci/run)",
    # a server that runs until stopped: started with --port 0, its URL read and fetched, then
    # stopped (test_serve_prints_its_url_and_serves_the_page); the page in e2e/ (Chromium)
    "python build.py serve": "test_serve_prints_its_url_and_serves_the_page",
    # installing into this interpreter would change it: installed into a temp folder instead
    "pip install .": "test_pip_install_gives_a_library_with_no_dependency",
    # needs the network: its requirements are read from the built metadata instead; wgpu-py
    # itself runs in tests/test_gpu_native.py
    "pip install '.[native]'": "test_pip_install_gives_a_library_with_no_dependency",
    # the model download: the same function fetches it for the tests (tests/conftest.py)
    "python build.py model": "test_gguf.py::test_fetch_model_and_build_py_model",
    # a server that runs until stopped: started on a free port, then the README's curl and
    # openai examples are run against it
    "python -m demos.llm serve --port 8000": "test_the_llm_server_examples_run",
}
SERVER_URL = "http://127.0.0.1:8000"  # what the README's server examples talk to


def blocks(language: str) -> list[str]:
    """The bodies of the README's fenced blocks in ``language``, in order."""
    return [body for lang, body in FENCE.findall(README) if lang == language]


def commands() -> list[str]:
    """Every command line of the ```sh blocks, without its trailing comment."""
    lines = (line for body in blocks("sh") for line in body.splitlines())
    return [shlex.join(argv) for line in lines if (argv := shlex.split(line, comments=True))]


def test_the_readme_opens_with_the_two_commands() -> None:
    assert README.startswith(
        "# tang\n\n```sh\npython build.py serve   # build the offline site and serve it"
    )
    assert commands()[:2] == ["python build.py serve", "python build.py test"]


def test_every_command_is_run_here_or_listed_with_its_test() -> None:
    found = commands()
    assert len(found) >= 8, found
    for command in found:
        runnable = command.startswith("python -m ") or server_example(command)
        assert runnable or command in ELSEWHERE, f"no test runs the README command {command!r}"
    assert set(ELSEWHERE) <= set(found), "ELSEWHERE lists a command the README no longer has"
    for test in set(ELSEWHERE.values()) - {"the suite itself (.ci/run)"}:
        path, _, name = test.rpartition("::")
        module = importlib.import_module(f"tests.{path.removesuffix('.py')}") if path else None
        assert name in (vars(module) if module else globals()), test


def server_example(code: str) -> bool:
    """A README example that talks to the LLM server (run by test_the_llm_server_examples_run)."""
    return SERVER_URL in code


def command_sessions() -> list[list[str]]:
    """The ``python -m …`` commands of each ```sh block, in order. A block is one terminal
    session: a later command may read what an earlier one wrote (a saved weights file)."""
    sessions = []
    for body in blocks("sh"):
        argvs = (shlex.split(line, comments=True) for line in body.splitlines())
        session = [
            shlex.join(a)
            for a in argvs
            if a and shlex.join(a).startswith("python -m ") and shlex.join(a) not in ELSEWHERE
        ]
        if session:
            sessions.append(session)
    return sessions


@pytest.mark.parametrize(
    "session",
    [pytest.param(s, marks=[m for c in s for m in marks_for(c)]) for s in command_sessions()],
    ids=lambda s: s[0][:50],
)
def test_python_m_commands(session: list[str], tmp_path: Path) -> None:
    for command in session:  # in a fresh folder, so files they write land there
        argv = [sys.executable, *shlex.split(command)[1:]]
        proc = subprocess.run(
            argv, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300, check=False
        )
        assert proc.returncode == 0, f"{command}\n{proc.stderr}"
        assert proc.stdout.strip(), f"{command} printed nothing"


@pytest.mark.parametrize(
    "snippet",
    [s for s in blocks("python") if not server_example(s)],
    ids=lambda s: s.splitlines()[0][:40],
)
def test_python_snippet(snippet: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", snippet],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{snippet}\n{proc.stderr}"


# call("method") or call("method", { a: …, b: … }): the name and the parameter names
JS_CALL = re.compile(r"""\bcall\(\s*["']([\w.]+)["']\s*(?:,\s*\{([^}]*)\})?""")


def test_js_snippets_call_worker_methods_that_exist() -> None:
    from demos.api import lookup

    calls = [m for body in blocks("js") for m in JS_CALL.findall(body)]
    assert calls, "the README shows how a panel calls Python"
    for method, params in calls:
        fn = lookup(method)  # UnknownMethod for a method nobody registers
        names = re.findall(r"(\w+)\s*:", params)
        inspect.signature(fn).bind_partial(**dict.fromkeys(names))  # TypeError if unknown


def test_relative_links_reach_a_file_and_heading() -> None:
    """Links like [docs/design.md](docs/design.md#the-worker-protocol) and images resolve."""
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    assert any(link.startswith("docs/design.md") for link in links)
    for link in links:
        path, _, anchor = link.partition("#")
        if re.match(r"\w+:", path):
            continue  # an absolute URL
        assert (ROOT / path).is_file(), link
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), re.MULTILINE)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            assert anchor in slugs, (link, sorted(slugs))


# ------------------------------------------------------------------------------------------
# the commands this file cannot run as written


def test_the_test_setup_installs_the_build_backend_the_pip_test_uses() -> None:
    """The pip test builds with ``--no-build-isolation``, i.e. with this environment's own
    build backend: a fresh machine only has it (new enough) if the dev extra asks for it."""
    sys.path.insert(0, str(ROOT))
    from buildtools.testenv import dev_requirements

    with open(ROOT / "pyproject.toml", "rb") as f:
        backend = tomllib.load(f)["build-system"]["requires"]
    assert set(backend) <= set(dev_requirements()), (backend, dev_requirements())


@pytest.mark.slow  # seconds of CPU: out of the fast lane, in the full suite
def test_pip_install_gives_a_library_with_no_dependency(tmp_path: Path) -> None:
    """``pip install .`` of a copy of the sources, into a folder, with no index to fetch
    from: it only succeeds when nothing is required. The README's library snippet then runs
    with that folder and the standard library only (``-S``: no site-packages)."""
    source, target = tmp_path / "source", tmp_path / "installed"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("tang", "demos"):
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    for file in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / file, source / file)
    argv = [sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation"]
    proc = subprocess.run(
        [*argv, "--quiet", "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (metadata,) = target.glob("tang-*.dist-info/METADATA")
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata.read_text(), re.MULTILINE)
    assert all("extra ==" in r for r in requires), requires  # nothing without an extra
    native = sorted(r.split(";")[0].strip() for r in requires if 'extra == "native"' in r)
    assert native == ["numpy", "wgpu"]

    (library,) = [s for s in blocks("python") if s.startswith("import tang")]
    program = f"import sys\nsys.path.insert(0, {str(target)!r})\n{library}\n"
    program += "assert tang.__file__.startswith(sys.path[0]), tang.__file__\n"
    program += "assert 'numpy' not in sys.modules and 'wgpu' not in sys.modules\n"
    proc = subprocess.run(
        [sys.executable, "-S", "-c", program],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(
    not (shutil.which("node") and shutil.which("npm")),
    reason="building the site needs node and npm (python build.py test installs the rest)",
)
def test_serve_prints_its_url_and_serves_the_page() -> None:
    """``python build.py serve`` as written, plus ``--port 0`` (any free port, so that runs
    never collide): it builds dist/, prints its URL, serves the page with the isolation
    headers, and Ctrl-C stops it with status 0."""
    proc = subprocess.Popen(
        [sys.executable, "build.py", "serve", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    seen: list[str] = []
    try:
        url = None
        deadline = time.monotonic() + 900  # a first build fetches Pyodide and the wheels
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
            if match := re.search(r" at (http://127\.0\.0\.1:\d+/) ", seen[-1]):
                url = match[1]
        assert url, f"serve printed no URL:\n{''.join(seen)}"
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
            assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
            assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
            assert b"<html" in response.read().lower()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            status = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert status == 0, "".join(seen)


# ------------------------------------------------------------------------------------------
# the help of the README's two commands


@pytest.mark.parametrize("command", ["build", "serve"])
def test_build_py_help_shows_every_default(command: str) -> None:
    proc = subprocess.run(
        [sys.executable, "build.py", command, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "options:\n" in proc.stdout, proc.stdout
    options = proc.stdout.split("options:\n", 1)[1]
    entries = re.split(r"\n(?=  -)", options.strip("\n"))  # one per option, wrapped lines joined
    for entry in entries:
        if not entry.lstrip().startswith("-h, --help"):
            assert "(default: " in " ".join(entry.split()), entry
    if command == "serve":
        text = " ".join(proc.stdout.split())
        assert "(default: 8000)" in text and "http://127.0.0.1:PORT/" in text


@pytest.mark.toolchain  # the server runs the model on the compiled C device
def test_the_llm_server_examples_run(tmp_path: Path) -> None:
    """The README's server command, on a free port, answers its curl and openai examples."""
    pytest.importorskip(
        "openai",
        reason="the openai client is absent: pip install -e '.[dev]' (python build.py test "
        "installs it, so CI runs this)",
    )
    pytest.importorskip(
        "starlette",
        reason="the server's extra is absent: pip install -e '.[dev]' (python build.py test "
        "installs it, so CI runs this)",
    )
    argv = [sys.executable, "-m", "demos.llm", "serve", "--port", "0", "--device", "c"]
    server = subprocess.Popen(
        argv, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in server.stdout], daemon=True).start()
    try:
        url = None
        deadline = time.monotonic() + 240
        while url is None and time.monotonic() < deadline:
            try:
                found = re.search(r"http://127\.0\.0\.1:\d+", lines.get(timeout=5))
            except queue.Empty:
                assert server.poll() is None, "the server stopped"
                continue
            url = found.group() if found else None
        assert url, "the server printed no URL"
        examples = [c for c in commands() if server_example(c)]
        examples += [s for s in blocks("python") if server_example(s)]
        assert len(examples) == 2, examples
        curl, client = (x.replace(SERVER_URL, url) for x in examples)
        if shutil.which("curl") is not None:  # else the openai example below still runs
            proc = subprocess.run(shlex.split(curl), capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr
            assert json.loads(proc.stdout)["choices"][0]["message"]["content"]
        proc = subprocess.run(
            [sys.executable, "-c", client], env=ENV, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip(), "the openai example printed nothing"
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
