"""The page's WebGPU device and wgpu-py's share one encode/submit path (tang/gpu/webgpu.py)
over a naming adapter. Here, without a browser: every call the shared path makes has a JS
spelling, browser.py imports in CPython without ``js`` or wgpu, and the page device, driven
over a recording stand-in for Pyodide's ``js`` module, makes the JS API's calls (camelCase,
descriptors as JS objects, one submit per batch, cached bind groups). The real page runs in
e2e/test_gpu_browser.py; wgpu-py on lavapipe in tests/test_gpu_native.py."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
import types
from pathlib import Path

import pytest

import tang.gpu as gpu
from tang.gpu import browser, webgpu
from tang.gpu.base import WEBGPU_NAMES

ROOT = Path(__file__).resolve().parent.parent


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def shared_calls() -> set[str]:
    """The method names webgpu.py passes to ``spelling.call`` (or its local alias ``call``)."""
    tree = ast.parse(Path(webgpu.__file__).read_text())
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr == "call") or (
            isinstance(func, ast.Name) and func.id == "call"
        ):
            assert isinstance(node.args[1], ast.Constant), ast.unparse(node)
            names.add(node.args[1].value)
    return names


def test_every_call_of_the_shared_path_has_its_js_spelling():
    names = shared_calls()
    assert {"create_bind_group", "dispatch_workgroups", "submit"} <= names
    assert names == set(browser.NAMES), "a call without a JS spelling, or a spelling unused"
    assert all(browser.NAMES[n] == camel(n) for n in names)


def test_browser_imports_in_cpython_without_js_or_wgpu():
    code = (
        "import sys; sys.modules['wgpu'] = None\n"  # any `import wgpu` now fails
        "import tang.gpu.browser, tang.gpu.webgpu\n"
        "assert 'js' not in sys.modules and 'pyodide' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


# ---- a recording stand-in for the parts of Pyodide's js module the page device uses ----


class JsObject(dict):
    """What ``to_js(dict, dict_converter=Object.fromEntries)`` makes."""


class JsArray(list):
    """What ``to_js(list)`` makes (``length`` as the compiler's messages have it)."""

    length = property(len)


class Done:
    """A settled JS promise."""

    def __init__(self, value=None):
        self.value = value

    def __await__(self):
        return self.value
        yield  # a generator that never suspends


class U8:
    """``Uint8Array``: ``new(n)`` then ``assign(bytes)``, or ``new(mapped range)``."""

    def __init__(self, data):
        self.data = bytes(data)  # n zero bytes, or a copy

    @classmethod
    def new(cls, arg):
        return cls(arg)

    def assign(self, raw):
        self.data = bytes(raw)

    def to_bytes(self):
        return self.data


class Recorder:
    """A JS object whose every method call is logged as (name, args); the answers the page
    device reads are given by name."""

    def __init__(self, log, **answers):
        self._log, self._answers, self.data = log, answers, b""

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)

        def fn(*args):
            self._log.append((method, args))
            answer = self._answers.get(method)
            return answer(*args) if callable(answer) else Recorder(self._log)

        return fn


def to_js(value, dict_converter=None):
    if isinstance(value, dict):
        return dict_converter([(k, to_js(v, dict_converter)) for k, v in value.items()])
    if isinstance(value, list):
        return JsArray(to_js(v, dict_converter) for v in value)
    return value


def fake_page(monkeypatch, log):
    """Install ``js`` and ``pyodide.ffi`` stand-ins; return (adapter, device)."""
    flags = types.SimpleNamespace(STORAGE=128, COPY_SRC=4, COPY_DST=8, UNIFORM=64, MAP_READ=1)
    js = types.SimpleNamespace(
        GPUBufferUsage=flags,
        GPUMapMode=types.SimpleNamespace(READ=1),
        Object=types.SimpleNamespace(fromEntries=JsObject),
        Uint8Array=U8,
    )
    ffi = types.SimpleNamespace(
        to_js=to_js, create_proxy=lambda f: f, can_run_sync=lambda: False, run_sync=None
    )
    monkeypatch.setitem(sys.modules, "js", js)
    monkeypatch.setitem(sys.modules, "pyodide", types.SimpleNamespace(ffi=ffi))
    monkeypatch.setitem(sys.modules, "pyodide.ffi", ffi)

    def create_buffer(desc):
        buf = Recorder(log, getMappedRange=lambda: buf.data, mapAsync=lambda mode: Done())
        buf.data = bytes(desc["size"])
        return buf

    def write(handle, offset, u8):
        handle.data = u8.data

    def copy(src, src_offset, dst, dst_offset, n):
        data = bytearray(dst.data)
        data[dst_offset : dst_offset + n] = src.data[src_offset : src_offset + n]
        dst.data = bytes(data)

    def encoder():
        return Recorder(log, copyBufferToBuffer=copy)

    queue = Recorder(log, writeBuffer=write)
    pipeline = Recorder(log)
    device = Recorder(
        log,
        createBuffer=create_buffer,
        createCommandEncoder=encoder,
        createShaderModule=lambda desc: Recorder(
            log, getCompilationInfo=lambda: Done(types.SimpleNamespace(messages=JsArray()))
        ),
        popErrorScope=lambda: Done(None),
        createComputePipelineAsync=lambda desc: Done(pipeline),
    )
    device.queue = queue
    device.limits = types.SimpleNamespace(**dict.fromkeys(WEBGPU_NAMES.values(), 1 << 16))
    device.lost = Recorder(log)
    info = types.SimpleNamespace(vendor="fake", architecture="", device="", description="")
    return types.SimpleNamespace(info=info), device


KERNEL = """
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&y)) { y[gid.x] = y[gid.x] + 1.0; }
}
"""


def test_the_page_device_makes_the_js_calls_through_the_shared_path(monkeypatch):
    log: list = []
    adapter, device = fake_page(monkeypatch, log)
    dev = browser.BrowserDevice(adapter, device, "core")
    assert dev.name == "fake, WebGPU core" and dev.limits.max_buffer_size == 1 << 16

    y = dev.buffer([1.0, 2.0])
    create, write = log[-2:]
    assert create == ("createBuffer", (JsObject(size=8, usage=128 | 4 | 8),))
    assert write[0] == "writeBuffer" and isinstance(write[1][2], U8)

    k = asyncio.run(dev.kernel_async(KERNEL))
    assert asyncio.run(dev.kernel_async(KERNEL)) is k and dev.compiles == 1
    del log[:]
    with dev.batch():
        dev.dispatch(k, [y], 2)
        dev.dispatch(k, [y], 2)  # the same buffers: the bind group is reused
    names = [name for name, _ in log]
    assert names == [  # a batch records its dispatches into one compute pass
        "createCommandEncoder",
        *("beginComputePass", "setPipeline", "getBindGroupLayout", "createBindGroup"),
        *("setBindGroup", "dispatchWorkgroups"),
        *("setPipeline", "setBindGroup", "dispatchWorkgroups", "end"),
        *("finish", "submit"),
    ]
    (desc,) = log[names.index("createBindGroup")][1]
    entry = desc["entries"][0]
    assert isinstance(desc, JsObject) and isinstance(desc["entries"], JsArray)
    assert entry == JsObject(binding=0, resource=JsObject(buffer=y.handle, offset=0, size=8))
    assert log[names.index("dispatchWorkgroups")][1] == (1, 1, 1)
    assert isinstance(log[-1][1][0], JsArray) and len(log[-1][1][0]) == 1
    assert dev.submits == 1

    # read-back through a mapped staging buffer; the blocking spelling names the awaitable
    assert asyncio.run(dev.read_async(y)).tolist() == [1.0, 2.0]
    with pytest.raises(gpu.GPUError, match=r"use 'await dev.read_async\(buf\)'"):
        dev.read(y)

    # several buffers: copied end to end into one staging buffer, one submit, one map
    z = dev.buffer([3.0, 4.0, 5.0])
    del log[:]
    got = asyncio.run(dev.read_many_async([y, z, y]))
    assert [a.tolist() for a in got] == [[1.0, 2.0], [3.0, 4.0, 5.0], [1.0, 2.0]]
    names = [name for name, _ in log]
    assert names.count("submit") == names.count("mapAsync") == 1
    staging = log[names.index("createBuffer")][1][0]
    assert staging == JsObject(size=28, usage=1 | 8)
    copies = [args for name, args in log if name == "copyBufferToBuffer"]
    assert [(c[1], c[3], c[4]) for c in copies] == [(0, 0, 8), (0, 8, 12), (0, 20, 8)]


def test_the_page_device_maps_js_errors_and_loss_to_tang_errors(monkeypatch):
    log: list = []
    adapter, device = fake_page(monkeypatch, log)
    dev = browser.BrowserDevice(adapter, device, "core")

    def refuse(desc):
        raise RuntimeError("Error: out of memory\n  at createBuffer")

    device._answers["createBuffer"] = refuse
    with pytest.raises(gpu.GPUError) as info:
        dev.empty(4)
    assert info.value.reason == "WebGPU: at createBuffer"
    assert "out of memory" in info.value.detail
    on_lost = next(args[0] for name, args in log if name == "then")
    on_lost(types.SimpleNamespace(reason="destroyed", message="gone"))
    with pytest.raises(gpu.DeviceLostError, match="browser device lost: destroyed: gone"):
        dev.empty(4)


def test_the_page_device_asks_for_the_adapters_limits_and_needs_navigator_gpu(monkeypatch):
    log: list = []
    adapter, device = fake_page(monkeypatch, log)
    adapter.limits = types.SimpleNamespace(**dict.fromkeys(WEBGPU_NAMES.values(), 1 << 20))
    asked = []
    adapter.requestDevice = lambda desc: asked.append(desc) or Done(device)
    js = sys.modules["js"]
    js.navigator = types.SimpleNamespace(
        gpu=types.SimpleNamespace(requestAdapter=lambda: Done(adapter))
    )
    dev = asyncio.run(browser.BrowserDevice.open())
    assert dev.feature_level == "core" and dev.kind == "browser"
    raised = {WEBGPU_NAMES[f]: 1 << 20 for f in webgpu.RAISED_LIMITS}
    assert asked == [JsObject(requiredLimits=JsObject(raised))]
    # a browser without WebGPU has neither navigator.gpu nor the GPU* globals
    js.navigator = types.SimpleNamespace()
    del js.GPUBufferUsage
    with pytest.raises(gpu.NoDeviceError, match=r"no navigator\.gpu"):
        asyncio.run(browser.BrowserDevice.open())
