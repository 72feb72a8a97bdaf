"""demos.api's routing of the page's interrupt (SIGINT) in CPython: a KeyboardInterrupt only
inside the handler of the request the signal names, dropped anywhere else. The browser runs
the same code under Pyodide in e2e/test_foundation.py."""

from __future__ import annotations

import _thread
import asyncio
import json
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from demos import api


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


def test_without_routing_sigint_stays_a_keyboard_interrupt():
    """The command line and the tests keep Python's default: routing is the worker's choice."""
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    interrupt_soon()
    with pytest.raises(KeyboardInterrupt):
        end = time.monotonic() + 5
        while time.monotonic() < end:
            pass
