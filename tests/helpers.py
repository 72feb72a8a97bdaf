"""Helpers several test modules share: a demo's command line run as a real subprocess, and the
check of its one-line usage error. (Devices: tests/conftest.py's fixtures, tests/skips.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_module(module: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` from the repository root, with its output captured as text;
    the exit status is the caller's to check."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=timeout,
        check=False,
    )


def assert_usage_error(run: subprocess.CompletedProcess[str], fragment: str) -> None:
    """A command line that refused its input: exit status 2, nothing on stdout, and one line
    on stderr that contains ``fragment``."""
    # a plain module, not rewritten by pytest: each assertion says what it saw
    assert run.returncode == 2, f"exit status {run.returncode}, stderr {run.stderr!r}"
    assert run.stdout == "", run.stdout
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
