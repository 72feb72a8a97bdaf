"""Fixtures shared by the tests under tests/."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct.Q4_1.gguf (98 MB) in .cache/models/, fetched by `python build.py
    model`'s own function when absent. A failed fetch fails the test: never a skip, since
    `python build.py test` always fetches the model first."""
    from buildtools.fetch import fetch_model

    return fetch_model()
