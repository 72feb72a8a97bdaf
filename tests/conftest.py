"""Fixtures shared by the tests under tests/: the model file, and the devices the device tests
run on, each opened in one place (tests/skips.py ``open_or_skip``) or skipped saying what is
missing; strict mode (``TANG_STRICT_SKIPS=1``, set by .ci/run) turns such a skip into a
failure unless tests/skips.py ``ALLOWED`` names it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.skips import open_or_skip, register


def pytest_configure(config: pytest.Config) -> None:
    register(config)


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct.Q4_1.gguf (98 MB) in .cache/models/, fetched by `python build.py
    model`'s own function when absent. A failed fetch fails the test: never a skip, since
    `python build.py test` always fetches the model first."""
    from buildtools.fetch import fetch_model

    return fetch_model()


@pytest.fixture(scope="session")
def open_device() -> Callable[[str], Any]:
    """``open_device(kind)``: a device of kind "native" (a fresh wgpu-py device, lavapipe here)
    or "c" (the compiled C device), or a skip for the missing adapter or compiler."""
    return open_or_skip


@pytest.fixture(scope="session")
def native_device() -> Any:
    """One wgpu-py device (lavapipe here) for the session's tests that need no fresh one;
    not tang.gpu's shared device, so ``tang.gpu.release()`` leaves it open."""
    return open_or_skip("native")


@pytest.fixture(scope="session")
def c_device() -> Any:
    """The compiled C device (``tang.gpu.device("c")``), or a skip: no C compiler here."""
    return open_or_skip("c")
