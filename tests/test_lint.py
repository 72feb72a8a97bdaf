"""The tree stays ruff clean (lint and format), as configured in pyproject.toml."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff_is_clean(command: list[str]) -> None:
    # the ruff of this interpreter's environment (a virtual environment need not be on PATH)
    ruff = [sys.executable, "-m", "ruff"]
    done = subprocess.run([*ruff, *command], cwd=ROOT, capture_output=True, text=True)
    assert "No module named ruff" not in done.stderr, (
        "ruff is a dev dependency: pip install -e .[dev]"
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_two_test_modules_share_a_name() -> None:
    # tests/ and e2e/ are not packages: pytest imports each file by its base name, so a
    # second test_x.py in the other folder stops the whole run at collection
    seen: dict[str, Path] = {}
    for path in sorted([*ROOT.glob("tests/test_*.py"), *ROOT.glob("e2e/test_*.py")]):
        assert path.name not in seen, f"{path} and {seen[path.name]} share a name"
        seen[path.name] = path
