"""The tree stays ruff clean (lint and format), as configured in pyproject.toml."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff_is_clean(command: list[str]) -> None:
    ruff = shutil.which("ruff")
    assert ruff, "ruff is a dev dependency: pip install -e .[dev]"
    done = subprocess.run([ruff, *command], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
