"""The compiled C device (``tang.gpu.device("c")``): C source built by the system compiler,
loaded with ctypes and cached on disk by a hash of source and command line; clear errors for
a rejected kernel and a missing compiler; and the choice ``device()`` makes between it and a
software GPU adapter."""

from __future__ import annotations

from pathlib import Path

import pytest

import tang.gpu as gpu
from tang.gpu.native_c import CDevice, CKernel, cache_dir, find_compiler
from tests.skips import skip_missing

# building and running C needs a compiler (the c_device fixture skips, saying so, without
# one); the refusal is tested below either way
needs_cc = pytest.mark.usefixtures("c_device")

SCALE = """
#include <stddef.h>
void run(const float *restrict x, float *restrict y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
}
"""


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TANG_CACHE", str(tmp_path))
    return tmp_path


@needs_cc
def test_a_kernel_runs_over_buffers_and_a_count(fresh_cache) -> None:
    dev = CDevice.open()
    assert dev.kind == "c" and dev.printer == "c" and "-O3 -march=native" in dev.name
    x, y = dev.buffer([1.0, 2.0, 3.0, 4.0]), dev.empty(4)
    dev.dispatch(dev.kernel(SCALE), [x, y, 3], 1)  # the count covers three of the four
    assert list(dev.read(y)) == [3.0, 5.0, 7.0, 0.0]


@needs_cc
def test_a_library_is_built_once_per_machine(fresh_cache) -> None:
    first = CDevice.open()
    first.kernel(CKernel(SCALE))
    assert first.builds == 1 and len(list((fresh_cache / "c").glob("*.so"))) == 1
    second = CDevice.open()  # another process would see the same cache
    second.kernel(CKernel(SCALE))
    assert second.builds == 0 and second.compiles == 1
    assert cache_dir() == fresh_cache / "c"


@needs_cc
def test_loops_of_maths_call_glibc_s_vector_functions_where_it_links_them(fresh_cache) -> None:
    """Where glibc's vector maths can be linked (x86-64 glibc with its development files),
    the device links it and the kernels' header declares its functions, so a loop of expf,
    logf or tanhf calls becomes calls of their vector variants. With or without them, each
    value is within 4 ulp of numpy's (glibc's bound for the vector maths)."""
    import subprocess

    import numpy as np

    from tang.gpu.native_c import build_library
    from tang.lower.c import C

    dev = CDevice.open()
    debian_libmvec = Path("/usr/lib/x86_64-linux-gnu/libmvec.so")
    assert dev.libmvec or not debian_libmvec.exists(), "libmvec is here but was not found"
    assert ("glibc vector maths" in dev.name) == dev.libmvec
    body = "y[i] = expf(x[i]); y[n + i] = logf(x[i]); y[2 * n + i] = tanhf(x[i]);"
    source = "\n".join(
        [
            *C.nest_header,
            "void run(const float *restrict x, float *restrict y, size_t n) {",
            f"    for (size_t i = 0; i < n; ++i) {{ {body} }}",
            "}",
        ]
    )
    library, _ = build_library(dev.compiler, dev.flags, source, None, dev.libraries)
    symbols = subprocess.run(["nm", "-D", str(library)], capture_output=True, text=True).stdout
    called = {s.split("@")[0].rsplit("_", 1)[-1] for s in symbols.split() if s.startswith("_ZGV")}
    assert called >= {"expf", "logf", "tanhf"} if dev.libmvec else not called, symbols
    x = np.linspace(0.01, 20.0, 1003, dtype=np.float32)
    y = dev.empty(3 * x.size)
    dev.dispatch(dev.kernel(source), [dev.buffer(x.tolist()), y, x.size], 1)
    got = np.asarray(dev.read(y), dtype=np.float32).reshape(3, -1)
    for row, want in zip(got, (np.exp(x), np.log(x), np.tanh(x)), strict=True):
        ulp = np.spacing(np.abs(want).astype(np.float32))
        assert np.all(np.abs(row - want) <= 4 * ulp)


def test_without_glibc_s_vector_maths_the_header_declares_nothing_extra() -> None:
    """The declarations sit behind TANG_LIBMVEC, which only the device defines where the
    library links: elsewhere (clang on macOS, musl) the header is plain C99."""
    from tang.lower.c import VECTOR_MATH

    assert VECTOR_MATH[0] == "#ifdef TANG_LIBMVEC" and VECTOR_MATH[-2] == "#endif"
    assert not CDevice("cc", "", openmp=False).libraries  # libmvec is off unless probed
    assert "-DTANG_LIBMVEC" not in CDevice("cc", "", openmp=False).flags


@needs_cc
def test_a_rejected_kernel_is_a_shader_error_with_its_position(fresh_cache) -> None:
    dev = CDevice.open()
    with pytest.raises(gpu.ShaderError, match="the C compiler rejected the kernel") as caught:
        dev.kernel("void run(float *x) {\n    x[0] = undeclared;\n}\n")
    assert caught.value.line == 2 and "undeclared" in str(caught.value)
    with pytest.raises(gpu.ShaderError, match="defines no function 'other'"):
        dev.kernel(CKernel(SCALE, "other"))
    with pytest.raises(gpu.ShaderError, match="cannot name a C function"):
        dev.kernel(CKernel(SCALE, "not a name"))
    with pytest.raises(gpu.DataError, match="takes buffers and counts"):
        dev.dispatch(dev.kernel(SCALE), [dev.empty(1), dev.empty(1), -1], 1)


def test_no_compiler_is_a_clear_no_device_error(monkeypatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-here")
    with pytest.raises(gpu.NoDeviceError, match="compiled C: no C compiler on PATH"):
        gpu.device("c", fallback=False, fresh=True)
    fallen = gpu.device("c", fresh=True)  # with fallback: the next device, saying why
    assert fallen.kind in ("native", "cpu")
    assert ("compiled C", "no C compiler on PATH (cc, gcc or clang; or set CC)") in fallen.skipped


def test_a_software_adapter_gives_way_to_compiled_c() -> None:
    dev = gpu.device(fresh=True)
    skipped = list(dev.skipped)  # before device("native") tells the same device its own
    native = gpu.device("native")
    if native.kind != "native":
        skip_missing("adapter", "wgpu-py", f"none here ({native.skipped}): nothing gives way")
    if gpu.software(native) and find_compiler():
        assert dev.kind == "c"
        assert ("wgpu-py", f"{native.name} is a software adapter") in skipped
    else:  # a real GPU stays the first choice, and so does a software one without a compiler
        assert dev is native
        if find_compiler() is None:
            assert ("compiled C", "no C compiler on PATH (cc, gcc or clang; or set CC)") in skipped
    assert gpu.device("native").kind == "native"  # lavapipe stays available by name
