"""Every command of the page's "What you can build" (``demos.examples``) runs, from the
repository root, as a real subprocess, and exits 0."""

from __future__ import annotations

import asyncio
import json
import shlex

import pytest

from demos import api
from demos.examples import EXAMPLES, Example
from tests.command_marks import marks_for
from tests.helpers import run_module


@pytest.mark.parametrize(
    "example",
    [pytest.param(e, marks=marks_for(e.command)) for e in EXAMPLES],
    ids=lambda e: e.module + ":" + e.argv[1],
)
def test_example_command_runs(example: Example) -> None:
    argv = shlex.split(example.command)  # exactly the text the page shows
    assert argv[:2] == ["python", "-m"]
    run = run_module(argv[2], *argv[3:], timeout=300)
    assert run.returncode == 0, f"{example.command}\n{run.stderr}"
    assert run.stdout.strip(), f"{example.command} printed nothing"


def test_the_worker_lists_the_available_commands() -> None:
    envelope = json.loads(asyncio.run(api.dispatch_json("examples.list", "{}")))
    assert envelope["ok"], envelope
    listed = envelope["result"]
    assert [e["command"] for e in listed] == [e.command for e in EXAMPLES]
    assert all(e["title"] and e["what"] for e in listed)
    assert "python -m tang eval 'x*sin(x)' --at x=2 --grad" in [e["command"] for e in listed]
