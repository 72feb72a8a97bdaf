"""The core's checks (tests/core_checks.py, the module pytest runs in CPython) inside Pyodide:
CPython 3.14 in WebAssembly in headless Chromium, through the test-only page."""

from __future__ import annotations

import json
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
SOURCES = ("core_programs.py", "core_checks.py")


def _load(py_runner) -> None:
    """Write the two test modules into Pyodide's file system and put them on sys.path."""
    files = {name: (TESTS / name).read_text() for name in SOURCES}
    py_runner.run(
        f"""
import json, os, sys
os.makedirs("/tmp/core_tests", exist_ok=True)
for name, text in json.loads({json.dumps(json.dumps(files))}).items():
    with open("/tmp/core_tests/" + name, "w") as f:
        f.write(text)
sys.path.insert(0, "/tmp/core_tests")
"""
    )


def test_core_checks_pass_in_pyodide(py_runner) -> None:
    _load(py_runner)
    report = py_runner.run(
        "import sys, core_checks; [list(sys.version_info[:2]), core_checks.run()]",
        timeout_ms=300_000,
    )
    version, results = report
    assert version == [3, 14]
    assert len(results) >= 9
    failed = {name: trace for name, trace in results.items() if trace != "ok"}
    assert not failed, "\n".join(f"{n}:\n{t}" for n, t in failed.items())


def test_deep_chain_in_pyodide(py_runner) -> None:
    # 200,000 nodes: WebAssembly has a small stack, so any recursion would kill the runtime
    _load(py_runner)
    results = py_runner.run(
        "import core_checks; core_checks.run([], deep_steps=100_000)", timeout_ms=300_000
    )
    assert results == {"deep_chain": "ok"}, results.get("deep_chain")
