"""The autotuner (``tang.tensor.tune``): candidate schedules timed on the device, only those
agreeing with the reference can win, the winner is kept (in memory and on disk, keyed by
graph, shapes and device) and ``tang.tensor.compile`` uses it; a tuned gradient graph still
equals the float64 evaluator."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tang.gpu as gpu
from tang import tensor as T
from tang.tensor import autotune as tuner
from tang.tensor import tuning_cache


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TANG_CACHE", str(tmp_path))
    monkeypatch.setattr(tuning_cache, "_TUNED", {})
    return tmp_path


@pytest.fixture
def compiled_c(c_device):
    return c_device


def prologue_graph() -> T.TensorGraph:
    x, w = T.input("x", (37, 50)), T.input("w", (50, 45))
    return T.fuse(T.graph(y=T.tanh(x * 0.5) @ w))


def close_in_f32(got, want) -> None:
    want = np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.toolchain
def test_the_winner_is_a_correct_candidate_and_compile_uses_it(compiled_c, own_cache) -> None:
    g = prologue_graph()
    result = T.tune(g, compiled_c, budget=60)
    assert [t.options for t in result.trials] == tuner.CANDIDATES["c"]  # all fit the budget
    timed = [t for t in result.trials if t.seconds is not None]
    assert len(timed) >= 4 and all(not t.rejected for t in timed)  # distinct block shapes
    for t in result.trials:  # the rest print kernels an earlier candidate already printed
        assert t in timed or t.rejected.startswith("the same kernels as candidate")
    fastest = min(timed, key=lambda t: t.seconds)
    default = result.trials[0]
    assert result.best in (fastest.options, default.options) and result.speedup >= 1.0
    if result.best == default.options and fastest is not default:
        assert fastest.seconds > tuner.MARGIN * default.seconds  # within the noise
    fn = T.compile(g, compiled_c)
    assert fn.schedule == result.best
    vals = {"x": np.linspace(-2, 2, 37 * 50).reshape(37, 50), "w": np.ones((50, 45))}
    close_in_f32(fn(vals)["y"], T.evaluate(g, vals)["y"])
    # kept on disk under the graph's key: a new process finds it
    stored = json.loads((own_cache / "tuned.json").read_text())
    assert stored[result.key] == json.loads(json.dumps(result.best))
    tuning_cache._TUNED.clear()
    assert tuning_cache.tuned(g, compiled_c) == result.best
    other = T.graph(y=T.input("x", (37, 50)) @ T.input("w", (50, 46)))  # another shape
    assert tuning_cache.tuned(other, compiled_c) is None


def test_a_kept_winner_with_options_this_version_lacks_gives_way_to_the_default() -> None:
    """A tuned.json written by another version of tang (an option renamed or gone) must not
    stop ``compile``: the default schedule runs. Options given by hand are still checked."""
    g, dev = prologue_graph(), gpu.CPUDevice()
    tuning_cache.remember(tuning_cache.key(g, dev), {"block": (8, 8), "retired": 16})
    tuning_cache._TUNED.clear()  # read back from disk, as a new process would
    fn = T.compile(g, dev)
    assert fn.schedule == {}
    vals = {"x": np.linspace(-2, 2, 37 * 50).reshape(37, 50), "w": np.ones((50, 45))}
    close_in_f32(fn(vals)["y"], T.evaluate(g, vals)["y"])
    with pytest.raises(TypeError, match="unknown schedule option 'retired'"):
        T.compile(g, dev, schedule={"retired": 16})


@pytest.mark.toolchain
def test_a_refused_candidate_is_rejected_with_its_reason(compiled_c) -> None:
    g = prologue_graph()
    result = T.tune(g, compiled_c, candidates=[{}, {"no_such_option": 1}])
    refused = result.trials[1]
    assert refused.seconds is None and "no_such_option" in refused.rejected
    assert result.best == {}


def test_schedules_are_described_in_words() -> None:
    assert tuner.describe({}) == "the default"
    assert tuner.describe({"block": (8, 8), "workgroups": False}) == (
        "8×8 register blocks, no workgroup tiles"
    )
    assert tuner.describe({"vector_rows": 4, "lanes": 16}) == "4 rows at a time, 16-lane sums"


def test_disagreement_beyond_f32_rounding_is_a_rejection() -> None:
    for kind in (np.array, list):  # numpy on the desktop, lists and arrays in the page
        want = {"y": kind([1.0, 2.0, 1000.0, float("nan")])}
        close = kind([1.0 + 1e-6, 2.0, 1000.0 * (1 + 1e-6), float("nan")])
        assert tuner._disagrees({"y": close}, want) == ""
        off = kind([1.0, 2.5, 1000.0, float("nan")])
        assert "output y differs from the reference by 5.00e-01" in tuner._disagrees(
            {"y": off}, want
        )
    assert "is 1.0 where the reference has nan" in tuner._disagrees(
        {"y": [1.0]}, {"y": [float("nan")]}
    )


def test_the_page_spelling_tunes_without_numpy(monkeypatch) -> None:
    """``tune_async`` on the CPU device with the numpy paths cut off: array inputs, the
    default schedule as the reference, the winner kept in memory only."""
    import asyncio
    import sys

    monkeypatch.setitem(sys.modules, "numpy", None)
    monkeypatch.setattr(gpu, "in_browser", lambda: True)
    g = T.graph(y=T.input("x", (3, 4)) @ T.input("w", (4, 2)))
    result = asyncio.run(tuner.tune_async(g, gpu.CPUDevice(), candidates=[{}, {"bad": 1}]))
    assert result.best == {} and result.trials[0].seconds is not None
    assert "bad" in result.trials[1].rejected
    assert tuning_cache._store() is None


@pytest.mark.toolchain
def test_a_tuned_gradient_graph_equals_the_evaluator(compiled_c) -> None:
    x, w = T.input("x", (24, 40)), T.input("w", (40, 33))
    g = T.graph(y=T.softmax(T.tanh(x) @ w))
    back = T.fuse(T.grad(g, "y", ["x", "w"]))
    T.tune(back, compiled_c, budget=60)
    rng = np.random.default_rng(3)
    vals = {n: rng.normal(size=s) for n, s in back.inputs.items()}
    got = T.compile(back, compiled_c)(vals)
    want = T.evaluate(back, vals)
    for name in back.outputs:
        close_in_f32(got[name], want[name])


@pytest.mark.toolchain
def test_tuning_on_wgpu_picks_a_candidate_that_matches_numpy(open_device) -> None:
    dev = open_device("native")
    g = prologue_graph()
    result = T.tune(g, dev, budget=60)
    assert result.best in tuner.CANDIDATES["wgsl"]
    vals = {"x": np.linspace(-2, 2, 37 * 50).reshape(37, 50), "w": np.eye(50, 45)}
    close_in_f32(T.compile(g, dev)(vals)["y"], T.evaluate(g, vals)["y"])
