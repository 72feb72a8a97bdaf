"""demos.api's routing of the page's interrupt (SIGINT) in CPython: a KeyboardInterrupt only
inside the handler of the request the signal names, dropped anywhere else. The browser runs
the same code under Pyodide in e2e/test_foundation.py."""

from __future__ import annotations

import _thread
import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from demos import api

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def signalled() -> Iterator[list[int]]:
    """Route interrupts as the worker does; the list holds the id the page 'signalled'."""
    target = [-1]
    previous = signal.getsignal(signal.SIGINT)
    api.route_interrupts(lambda: target[0])
    try:
        yield target
    finally:
        signal.signal(signal.SIGINT, previous)
        api._signalled[0] = None


def interrupt_soon(seconds: float = 0.05) -> threading.Timer:
    timer = threading.Timer(seconds, _thread.interrupt_main, args=(signal.SIGINT,))
    timer.start()
    return timer


def spin(seconds: float, request: int) -> tuple[dict, float]:
    start = time.monotonic()
    params = json.dumps({"seconds": seconds})
    reply = json.loads(asyncio.run(api.dispatch_json("spin", params, request)))
    return reply, time.monotonic() - start


def test_the_request_the_signal_names_is_cancelled(signalled):
    signalled[0] = 7
    interrupt_soon()
    reply, took = spin(5.0, request=7)
    assert not reply["ok"] and reply["error"]["type"] == "Cancelled", reply
    assert took < 2.5, took  # stopped, not run to its end


def test_a_signal_meant_for_another_request_is_dropped(signalled):
    signalled[0] = 7
    timer = interrupt_soon()
    reply, took = spin(0.4, request=8)
    timer.join()
    assert reply["ok"] and reply["result"] > 0, reply
    assert took >= 0.4


def test_a_signal_outside_any_request_is_dropped(signalled):
    signalled[0] = 7
    timer = interrupt_soon()
    end = time.monotonic() + 0.3
    n = 0
    while time.monotonic() < end:  # Python running, as the event loop's own code would
        n += 1
    timer.join()
    assert n > 0


def test_running_tang_without_routing_leaves_sigint_as_it_found_it():
    """Routing is the worker's choice: importing tang and serving a request leaves SIGINT's
    handler alone, whatever the process started with (a shell's ``cmd &`` starts it ignored)."""
    code = (
        "import asyncio, json, signal\n"
        "before = signal.getsignal(signal.SIGINT)\n"
        "import tang\n"
        "from demos import api\n"
        "reply = json.loads(asyncio.run(api.dispatch_json('spin', '{\"seconds\": 0.01}', 1)))\n"
        "assert reply['ok'], reply\n"
        "tang.grad(lambda x: tang.sin(x) * x)(1.0)\n"
        "print(repr(before), signal.getsignal(signal.SIGINT) is before)\n"
    )
    for start in (signal.SIG_DFL, signal.SIG_IGN):  # SIG_DFL: Python installs its own handler
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=lambda start=start: signal.signal(signal.SIGINT, start),
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split()[-1] == "True", (start, proc.stdout)


def test_without_routing_sigint_stays_a_keyboard_interrupt():
    """With Python's own handler in place, a SIGINT during a request is a KeyboardInterrupt:
    only the worker turns it into a cancelled request."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever we started with
    try:
        interrupt_soon()
        with pytest.raises(KeyboardInterrupt):
            spin(5.0, request=3)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
