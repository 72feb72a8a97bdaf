"""Demos as plug-ins: demos.api finds the demos and runs their warm-up and idle hooks without
naming any, serves the one backend catalogue the page reads, and demos.common holds what
every demo shares (device choice, JSON numbers, per-page state)."""

from __future__ import annotations

import asyncio
import importlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from demos import api, common
from tang.lower import BACKENDS

ROOT = Path(__file__).resolve().parents[1]
EDITOR_MODES = ("cpp", "javascript", "python", "wgsl")  # web/editor/index.js `language`


def call(method: str, **params):
    reply = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    assert reply["ok"], reply
    return reply["result"]


@pytest.fixture
def hooks() -> Iterator[tuple[list, list]]:
    """The hook lists, restored afterwards with the real demos' hooks (imported first, so
    that they are registered before the copy is taken)."""
    for module in api.demo_modules():
        importlib.import_module(module)
    warm, idle = list(api._WARM_UPS), list(api._IDLE_HOOKS)
    try:
        yield api._WARM_UPS, api._IDLE_HOOKS
    finally:
        api._WARM_UPS[:], api._IDLE_HOOKS[:] = warm, idle


def test_demo_modules_are_found_on_disk_and_exclude_the_plumbing():
    found = api.demo_modules()
    on_disk = {
        f"demos.{p.stem}"
        for p in (ROOT / "demos").glob("*.py")
        if not p.stem.startswith("_") and p.stem not in api.NOT_DEMOS
    }
    assert set(found) == on_disk and found == sorted(found)
    assert "demos.playground" in found and "demos.api" not in found
    assert "demos.common" not in found


def test_warm_up_runs_each_hook_to_its_end_one_slice_per_step(hooks):
    warm, _ = hooks  # the demos are imported: step 0 imports nothing new
    calls: list[tuple[str, int]] = []

    def two(step: int) -> bool:
        calls.append(("two", step))
        return step + 1 < 2

    def three(step: int) -> bool:
        calls.append(("three", step))
        return step + 1 < 3

    warm[:] = []
    assert api.warm_up_hook(two) is two and api.warm_up_hook(three) is three
    api.warm_up_hook(two)  # registering twice is once
    slices = 1
    while api.warm_up(slices - 1):
        slices += 1
        assert slices < 100
    assert calls == [("two", 0), ("two", 1), ("three", 0), ("three", 1), ("three", 2)]
    assert slices == 5  # one slice per step, nothing more
    assert not api.warm_up(slices)  # done stays done until the worker starts at 0 again
    calls.clear()
    assert api.warm_up(0) and calls == [("two", 0)]  # step 0 starts over


def test_the_editor_registers_its_warm_up_when_imported():
    import demos.playground as playground

    assert playground.warm_up in api._WARM_UPS


def test_a_demo_that_fails_to_import_is_reported_and_skipped(hooks, monkeypatch, capsys):
    warm, _ = hooks
    warm[:] = [lambda step: step < 1]
    missing = ["demos.no_such_demo", "demos.nor_this_one"]
    monkeypatch.setattr(api, "demo_modules", lambda: missing)
    assert api.warm_up(0)  # one import per slice: a request waits for one at most
    err = capsys.readouterr().err
    assert "warm-up: cannot import demos.no_such_demo: ModuleNotFoundError" in err
    assert "nor_this_one" not in err
    assert api.warm_up(1) and "demos.nor_this_one" in capsys.readouterr().err
    assert api.warm_up(2) and not api.warm_up(3)  # then the hook: two steps


def test_idle_runs_the_demos_hooks_then_collects(hooks):
    _, idle = hooks
    idle[:] = []
    ran: list[str] = []
    api.idle_hook(lambda: ran.append("a"))
    api.idle_hook(lambda: ran.append("b"))
    freed = api.idle()
    assert ran == ["a", "b"] and isinstance(freed, int) and freed >= 0


def test_backends_is_the_catalogue_of_tang_lower():
    listed = call("backends")
    assert [b["name"] for b in listed] == list(BACKENDS)
    for b in listed:
        printer = BACKENDS[b["name"]]
        assert b["label"] and b["extension"].isalnum(), b
        assert b["language"] in EDITOR_MODES, b
        assert b["precision"] == list(printer.dtypes) and set(b["precision"]) <= {"f32", "f64"}
    assert len({b["label"] for b in listed}) == len(listed)  # one tab each


def test_the_page_keeps_no_backend_list_of_its_own():
    """state.js and the editor panel read the catalogue (setBackends, call("backends"))."""
    for rel in ("web/state.js", "web/panels/editor.js", "web/panels/editor-view.js"):
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert '"opencl"' not in text and '"OpenCL"' not in text, rel
    assert 'call("backends")' in (ROOT / "web/panels/editor.js").read_text(encoding="utf-8")


@pytest.mark.parametrize(("device", "want"), [("auto", None), ("cpu", "cpu")])
def test_device_choice(device, want):
    assert common.device_choice(device) == want


def test_device_choice_gpu_is_the_native_device_on_the_desktop():
    assert common.device_choice("gpu") == "native"


def test_device_choice_rejects_other_names():
    with pytest.raises(ValueError, match="device must be one of auto, gpu, cpu, got 'tpu'"):
        common.device_choice("tpu")


@pytest.mark.parametrize("bad", [True, "1", None, math.nan, math.inf, -math.inf, [1.0]])
def test_finite_param_names_the_parameter(bad):
    with pytest.raises(ValueError, match=r"^x must be a finite number, got "):
        common.finite_param(bad, "x")


def test_finite_param_gives_a_float():
    assert common.finite_param(3, "x") == 3.0 and isinstance(common.finite_param(3, "x"), float)


def test_json_numbers_survive_strict_json():
    values = [1.5, -0.0, math.nan, math.inf, -math.inf]
    strings = [common.json_number(v) for v in values]
    assert strings == [1.5, -0.0, "nan", "inf", "-inf"]
    nones = [common.finite_or_none(v) for v in values]
    assert nones == [1.5, -0.0, None, None, None]
    assert common.finite_or_none(math.pi, 3) == 3.142
    json.dumps([strings, nones], allow_nan=False)  # raises if anything slipped through


def test_session_state_is_kept_per_prefix_and_resets():
    arm = common.session_state("test-arm")
    arm["pose"] = [1.0, 2.0]
    assert common.session_state("test-arm") is arm and arm["pose"] == [1.0, 2.0]
    other = common.session_state("test-orbit")
    assert other is not arm and "pose" not in other
    arm.reset()
    assert common.session_state("test-arm") == {} and common.session_state("test-arm") is arm
    with pytest.raises(ValueError, match="non-empty prefix"):
        common.session_state("")


def test_the_dispatcher_and_the_shared_module_name_no_demo():
    """api and common are plumbing: neither mentions a demo module by name."""
    demos = {m.rsplit(".", 1)[1] for m in api.demo_modules()}
    for rel in ("demos/api.py", "demos/common.py"):
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert not [d for d in demos if f"demos.{d}" in text or f'"{d}.' in text], rel
