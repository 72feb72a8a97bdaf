"""The compiled C device: tang's C kernels built by the system compiler (``cc -O3
-march=native``, OpenMP over the outer loops where the compiler has it), loaded with
``ctypes``, over buffers in this process's memory. A tensor graph is one C function, so a
step is one call; a compiled library is cached on disk by a hash of its source and the
compiler's command line, so a kernel is built once per machine.

    dev = tang.gpu.device("c")
    fn = tang.tensor.compile(graph, dev)      # one shared library for the whole graph

A missing compiler is a ``NoDeviceError`` when the device is opened; a kernel the compiler
rejects is a ``ShaderError`` quoting its first error.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..lower.c import VECTOR_MATH, VECTOR_MATH_FUNCTIONS
from .base import Buffer, Kernel
from .cache import cache_dir as tang_cache
from .cpu import CPUDevice
from .errors import DataError, NoDeviceError, ShaderError

COMPILERS = ("cc", "gcc", "clang")
# -fno-trapping-math: no kernel unmasks floating-point traps, and without it the compiler
# will not vectorise floor (the unpacking of quantized weights); values are unchanged.
# -fno-math-errno: no kernel reads errno, and without it a call such as expf in one arm of
# a select is not made unconditionally, so its loop does not vectorise
FLAGS = ("-O3", "-march=native", "-fno-trapping-math", "-fno-math-errno", "-shared", "-fPIC")
OPENMP = "-fopenmp"
# glibc's vector maths: the kernels' header declares its functions (tang.lower.c)
LIBMVEC = ("-DTANG_LIBMVEC",)
LIBMVEC_LINK = "-lmvec"
# the longest a build may take before it is an error, in seconds
BUILD_SECONDS = 300


@dataclass(frozen=True)
class CKernel:
    """C source defining ``entry``, called with each binding in order: a buffer as a
    pointer to its first element, a number as ``size_t``."""

    source: str
    entry: str = "run"


def cache_dir() -> Path:
    """Where compiled kernels are kept: ``c`` in tang's cache folder (``tang/gpu/cache.py``)."""
    return tang_cache() / "c"


def find_compiler() -> str | None:
    """The C compiler to use: ``$CC`` if set, else the first of cc, gcc, clang on PATH."""
    names = [os.environ["CC"]] if os.environ.get("CC") else list(COMPILERS)
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(command: list[str], cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False
    )


def _version(compiler: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        out = _run([compiler, "--version"], tmp)
    return (out.stdout or out.stderr).splitlines()[0].strip() if out.returncode == 0 else ""


def _has_openmp(compiler: str) -> bool:
    """Whether ``compiler`` builds and links a shared library with OpenMP."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "probe.c").write_text(
            "#include <omp.h>\nint probe(void) { return omp_get_max_threads(); }\n"
        )
        out = _run([compiler, *FLAGS, OPENMP, "probe.c", "-o", "probe.so"], tmp)
        return out.returncode == 0


def _has_libmvec(compiler: str, flags: Sequence[str]) -> bool:
    """Whether ``compiler`` links a program whose loops call glibc's vector maths."""
    calls = " + ".join(f"{f}(a[i]{', a[i]' * (f == 'powf')})" for f in VECTOR_MATH_FUNCTIONS)
    probe = "\n".join(
        [
            "#include <math.h>",
            *VECTOR_MATH,
            "float a[256];",
            "int main(void) {",
            f"    for (int i = 0; i < 256; ++i) a[i] = {calls};",
            "    return a[7] > 0.0f;",
            "}",
        ]
    )
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "probe.c").write_text(probe)
        program = [f for f in flags if f not in ("-shared", "-fPIC")]
        command = [compiler, *program, *LIBMVEC, "probe.c", "-o", "probe", LIBMVEC_LINK, "-lm"]
        return _run(command, tmp).returncode == 0


def _first_error(stderr: str) -> tuple[str, int, int]:
    """The compiler's first error line as (message, line, column)."""
    for line in stderr.splitlines():
        if "error" in line:
            parts = line.split(":", 3)
            if len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit():
                return parts[3].strip(), int(parts[1]), int(parts[2])
            return line.strip(), 0, 0
    return (stderr.strip().splitlines() or ["the compiler failed"])[-1], 0, 0


def build_library(
    compiler: str,
    flags: Sequence[str],
    source: str,
    key: str | None = None,
    libraries: Sequence[str] = (),
) -> tuple[Path, bool]:
    """The shared library of C ``source`` built by ``compiler`` with ``flags``, and whether
    it was compiled now (linked with ``libraries`` and libm): libraries are kept in
    ``cache_dir()`` by ``key`` (default: a hash of the compiler, flags, libraries and
    source), so each is built once per machine. A rejected
    source is a ``ShaderError`` quoting the compiler's first error."""
    if key is None:
        key = hashlib.sha256("\0".join([compiler, *flags, *libraries, source]).encode())
        key = key.hexdigest()
    folder = cache_dir()
    library = folder / f"{key[:32]}.so"
    if library.exists():
        return library, False
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        Path(tmp, "kernel.c").write_text(source)
        command = [compiler, *flags, "kernel.c", "-o", "kernel.so", *libraries, "-lm"]
        try:
            out = _run(command, tmp)
        except subprocess.TimeoutExpired:
            raise ShaderError(f"the C compiler took over {BUILD_SECONDS} s") from None
        if out.returncode != 0:
            message, line, column = _first_error(out.stderr)
            raise ShaderError(
                f"the C compiler rejected the kernel: {message}", out.stderr, line, column
            )
        os.replace(Path(tmp, "kernel.so"), library)  # atomic: a reader sees all or none
    return library, True


class CDevice(CPUDevice):
    """Kernels are C functions compiled to shared libraries and called through ctypes;
    buffers are ``array.array`` memory (4-byte elements, as on every tang device)."""

    kind = "c"
    printer = "c"  # graph kernels run here as tang's C loop nests (f32)

    def __init__(self, compiler: str, version: str, openmp: bool, libmvec: bool = False) -> None:
        super().__init__()
        self.compiler, self.openmp, self.libmvec = compiler, openmp, libmvec
        self.flags = (*FLAGS, OPENMP) if openmp else FLAGS
        self.libraries: tuple[str, ...] = ()
        if libmvec:
            self.flags, self.libraries = (*self.flags, *LIBMVEC), (LIBMVEC_LINK,)
        threads = f"OpenMP, {os.cpu_count()} cores" if openmp else "one thread: no OpenMP"
        maths = ", glibc vector maths" if libmvec else ""
        self.name = f"{version or Path(compiler).name} {' '.join(FLAGS[:2])} ({threads}{maths})"
        self._identity = "\0".join([compiler, version, *self.flags, *self.libraries])
        self.builds = 0  # libraries compiled in this process (not found in the cache)

    @classmethod
    def open(cls) -> CDevice:
        """The device, or NoDeviceError when no C compiler is installed."""
        compiler = find_compiler()
        if compiler is None:
            raise NoDeviceError("compiled C", "no C compiler on PATH (cc, gcc or clang; or set CC)")
        openmp = _has_openmp(compiler)
        flags = (*FLAGS, OPENMP) if openmp else FLAGS
        return cls(compiler, _version(compiler), openmp, _has_libmvec(compiler, flags))

    # ---- kernels ----
    def _prepare_kernel(self, source: Any, entry: str | None) -> tuple[str, None, Any]:
        self._check_alive()
        if isinstance(source, str):
            source = CKernel(source, entry or "run")
        elif getattr(source, "backend", None) == "c":  # a kernel printed by tang.lower
            source = CKernel(source.source, source.name)
        if not isinstance(source, CKernel):
            raise ShaderError(f"the C device compiles C source, not {type(source).__name__}")
        if not source.entry.isidentifier():
            raise ShaderError(f"{source.entry!r} cannot name a C function")
        key = hashlib.sha256(f"{self._identity}\0{source.source}".encode()).hexdigest()
        return key, None, source

    def kernel(self, source: Any, entry: str | None = None) -> Kernel:
        """Compile C ``source`` (text, a ``CKernel`` or a kernel printed by tang.lower) once
        per machine; returns the Kernel."""
        key, _, c = self._prepare_kernel(source, entry)
        cached = self._kernels.get(key)
        if cached is None:
            library = ctypes.CDLL(str(self._build(key, c.source)))
            try:
                fn = getattr(library, c.entry)
            except AttributeError:
                raise ShaderError(f"the C source defines no function {c.entry!r}") from None
            fn.restype = None
            cached = self._kernels[key] = Kernel(self, None, fn, key)
            self.compiles += 1
        return cached

    def _build(self, key: str, source: str) -> Path:
        """The shared library of ``source``: from the cache, else compiled into it."""
        library, built = build_library(self.compiler, self.flags, source, key, self.libraries)
        self.builds += built
        return library

    # ---- dispatch ----
    def _bind(self, kernel: Kernel, bindings: Any) -> list[tuple[bool, int]]:
        """(is a buffer, its address or the count) in the C function's parameter order:
        buffers checked to be this device's and alive, counts to be whole numbers ≥ 0 (a
        model step binds some 2,000 buffers a token, so nothing else is built per call)."""
        if isinstance(bindings, Mapping):
            raise DataError("a C kernel takes its bindings as a list, in parameter order")
        out = []
        for value in bindings:
            if value.__class__ is Buffer and value.device is self and value.handle is not None:
                out.append((True, value.handle.buffer_info()[0]))
                continue
            if isinstance(value, Buffer):
                self._own(value)  # raises, saying why
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise DataError(f"a C kernel takes buffers and counts, not {value!r}")
            out.append((False, value))
        return out

    def _dispatch(self, kernel: Kernel, bound: list, n: int, groups: tuple[int, int]) -> None:
        fn = kernel.handle
        if fn.argtypes is None:  # fixed at the first call: pointers, then counts as size_t
            fn.argtypes = [ctypes.c_void_p if pointer else ctypes.c_size_t for pointer, _ in bound]
        fn(*[value for _, value in bound])


__all__ = ["CDevice", "CKernel", "cache_dir", "find_compiler"]
