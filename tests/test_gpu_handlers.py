"""The page's ``gpu.*`` worker methods, called through demos.api on the desktop (where
"auto" is a GPU adapter through wgpu-py, else compiled C before a software adapter): the
same code the worker runs with WebGPU."""

from __future__ import annotations

import asyncio
import json

import pytest

import tang.gpu as gpu
from demos import api

# "auto" is wgpu-py here when it has an adapter: most of these run on it.
pytestmark = pytest.mark.toolchain


def call(method, **params):
    reply = json.loads(asyncio.run(api.dispatch_json(method, json.dumps(params))))
    if not reply["ok"]:
        raise RuntimeError(f"{reply['error']['type']}: {reply['error']['message']}")
    return reply["result"]


def test_info_names_the_device_and_the_skipped_backends():
    out = call("gpu.info", device="cpu")
    assert out["kind"] == "cpu" and out["report"][0].startswith("using cpu")
    auto = call("gpu.info")
    assert auto["kind"] in ("native", "c", "cpu")
    if auto["kind"] != "native":
        assert auto["skipped"], "a CPU choice must say why the GPU was skipped"


def test_evaluate_on_the_best_device_matches_the_cpu():
    params = {"expr": "sin(x*y) + sqrt(x)", "grad": True, "points": 5000, "sample": 7}
    best = call("gpu.evaluate", **params)
    cpu = call("gpu.evaluate", device="cpu", **params)
    assert cpu["device"] == "cpu" and best["outputs"] == ["f", "df/dx", "df/dy"]
    assert best["inputs"] == ["x", "y"] and best["n"] == 5000
    assert best["sample"]["index"] == cpu["sample"]["index"] == [i * 5000 // 7 for i in range(7)]
    assert best["sample"]["points"] == cpu["sample"]["points"]
    for a_col, b_col in zip(best["sample"]["outputs"], cpu["sample"]["outputs"], strict=True):
        for a, b in zip(a_col, b_col, strict=True):
            if isinstance(b, str):  # nan / inf travel as strings
                assert a == b
            else:
                assert a == pytest.approx(b, rel=1e-5, abs=1e-5)
    assert best["checksum"] == pytest.approx(cpu["checksum"], rel=1e-6)
    assert best["nonfinite"] == cpu["nonfinite"] > 0  # sqrt(x) for x < 0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"expr": "sin(x*"}, "ParseError: unexpected end of input at column 7"),
        ({"expr": "x", "points": 0}, "points must be an integer from 1"),
        ({"expr": "x", "points": 1 << 30}, "points must be an integer from 1"),
        ({"expr": "x", "device": "tpu"}, "device must be one of auto, gpu, cpu"),
        ({"expr": "x", "lo": 1.0, "hi": 0.0}, "DataError: the range must be finite"),
    ],
)
def test_bad_requests_are_errors_with_the_reason(params, message):
    with pytest.raises(RuntimeError, match=message):
        call("gpu.evaluate", **params)


def test_reset_releases_the_gpu_and_the_next_call_opens_a_fresh_one():
    first = call("gpu.evaluate", expr="x*y", points=100, grad=False)
    released = call("gpu.reset")["released"]
    if first["device"] == "native":
        assert released == [first["device_info"]["name"]]
    again = call("gpu.evaluate", expr="x*y", points=100, grad=False)
    assert again["device"] == first["device"] and again["checksum"] == first["checksum"]
    # the same GPU devices were opened again (a software adapter too, though C ran the work)
    assert gpu.release() == released
