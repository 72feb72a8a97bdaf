"""The pytest-free core checks under CPython; e2e/test_core_in_pyodide.py runs the very
same module inside Pyodide."""

from __future__ import annotations

import pytest

from tests.core_checks import CHECKS, run


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_core_check(check) -> None:
    check()


def test_run_reports_each_check() -> None:
    report = run(["one_function_three_number_types", "simplifier_rules"], deep_steps=1000)
    assert report == {
        "one_function_three_number_types": "ok",
        "simplifier_rules": "ok",
        "deep_chain": "ok",
    }
