#!/usr/bin/env python3
"""Build, serve and test tang's offline static site.

    python build.py build [--out DIR] [--with-tests]   make dist/ (incremental)
    python build.py serve [--port N]                   build, then serve dist/ on 127.0.0.1
    python build.py test [PYTEST ARGS...]              install test needs, build, run pytest

Standard library only at import time: e2e/conftest.py and benchmarks/boot.py import this
module for `build()` and `make_server()`.

What dist/ holds (every file listed with its sha256 in dist/manifest.json):

    index.html main.js rpc.js worker.js boot.js style.css panels/   the page (from web/)
    editor.js                                                     web/editor/ bundled (esbuild)
    bare.html bare.js bare-worker.js                              Pyodide alone (benchmarks)
    pyodide/                                                      the runtime (npm `pyodide`)
    wheels/                                                       tang (+ demos), micropip,
                                                                  sympy, mpmath
    _test/                                                        only with --with-tests

Downloads are cached in .cache/ (npm tarball, wheels) and checked against pinned sha256
digests, so a build is the same on every machine and a second build is quick.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import email.utils
import functools
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parent
WEB = ROOT / "web"
TEST_SITE = ROOT / "e2e" / "site"
EDITOR = WEB / "editor"  # CodeMirror sources: bundled into dist/editor.js, not copied
CACHE = Path(os.environ.get("TANG_BUILD_CACHE") or ROOT / ".cache")
DIST = ROOT / "dist"

PYODIDE_VERSION = "314.0.7"  # CPython 3.14 in WebAssembly
PYODIDE_TGZ_SHA256 = "66b7949e5a0cba2250b586d7e368bf12fb482800748d182c4618254b685ffaa0"
# The runtime files the page needs from the npm package (no .map, no console pages).
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
    "package.json",
)

# A memory snapshot of a started interpreter, made at build time by running Pyodide under
# node: the page restores it instead of initialising Python (seconds faster on a cold boot),
# and falls back to a plain start if the browser cannot use it. Only stdlib and Pyodide's
# own modules are imported before the snapshot: the snapshot holds the wasm memory, not the
# in-memory file system, so tang itself is installed (from its wheel) after the restore.
_PRELOAD = (
    # what the worker and demos.api use
    """asyncio importlib.metadata importlib.util inspect json traceback pyodide.ffi
    pyodide.webloop pyodide.code pyodide.http pyodide._package_loader"""
    # what tang and micropip import (each is compiled from source on every boot otherwise)
    """ array ast base64 collections contextvars copy dataclasses decimal difflib dis email
    email.message email.parser fractions functools hashlib heapq itertools linecache locale
    logging math numbers operator pathlib random re shutil string struct sysconfig tempfile
    textwrap token tokenize typing weakref zipfile"""
)
SNAPSHOT_PRELOAD = tuple(_PRELOAD.split())
SNAPSHOT_SCRIPT = """\
import { pathToFileURL } from "node:url";
import { writeFileSync } from "node:fs";
const [runtime, out, preload] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(runtime + "/pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL: runtime + "/", _makeSnapshot: true });
pyodide.runPython(`
import sys
sys.path[:] = [p for p in sys.path if p]
for name in ${JSON.stringify(preload)}.split():
    try:
        __import__(name)
    except ImportError:
        pass
del name
`);
writeFileSync(out, pyodide.makeMemorySnapshot());
"""

# Pyodide never writes bytecode, so the tang wheel carries its own: each module compiled by
# Pyodide's CPython 3.14 (under node) into __pycache__ as an unchecked hash-based .pyc
# (PEP 552), used as is whatever the file times. Sources stay in the wheel for tracebacks.
PYC_SCRIPT = """\
import { pathToFileURL } from "node:url";
import { readFileSync, writeFileSync } from "node:fs";
const [runtime, snapshot, jobsFile] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(runtime + "/pyodide.mjs").href);
const pyodide = await loadPyodide({
  indexURL: runtime + "/",
  _loadSnapshot: new Uint8Array(readFileSync(snapshot)),
});
const compile = pyodide.runPython(`
import importlib._bootstrap_external as bx, importlib.util, sys
def compile_pyc(source, filename):
    data = bytes(source)
    code = compile(data, filename, "exec", dont_inherit=True)
    return bytes(bx._code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))
compile_pyc
`);
for (const job of JSON.parse(readFileSync(jobsFile, "utf8"))) {
  let pyc;
  try {
    pyc = compile(new Uint8Array(readFileSync(job.src)), job.filename);
  } catch (err) {
    continue; // not valid 3.14 source (left as .py: the import reports it, not the build)
  }
  writeFileSync(job.out, pyc.toJs());
  pyc.destroy();
}
"""
PYODIDE_SITE_PACKAGES = "/lib/python3.14/site-packages"

# Wheels the page installs, fetched with pip for Python 3.14 (the interpreter in Pyodide).
# name -> (pip requirement, file name, sha256)
WHEELS = {
    "micropip": (
        "micropip==0.11.1",
        "micropip-0.11.1-py3-none-any.whl",
        "768de165adb8e66906039d8fec4127a57f522dfdf8e6fbff877a4616941ecfd3",
    ),
    "mpmath": (
        "mpmath==1.3.0",  # sympy 1.14 needs mpmath < 1.4
        "mpmath-1.3.0-py3-none-any.whl",
        "a0b2b9fe80bbcd81a6647ff13108738cfb482d481d826cc0e02f5b35e5c88d2c",
    ),
    "sympy": (
        "sympy==1.14.0",
        "sympy-1.14.0-py3-none-any.whl",
        "e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5",
    ),
}

# Wheels shipped with bytecode added (big ones: Pyodide would compile them on every import).
PRECOMPILE = ("sympy", "mpmath")

APT_PACKAGES = (
    "chromium",
    "mesa-vulkan-drivers",
    "libvulkan1",
    "glslang-tools",
    "pocl-opencl-icd",
    "ocl-icd-libopencl1",
)
DEV_DISTRIBUTIONS = (
    "pytest",
    "hypothesis",
    "playwright",
    "sympy",
    "numpy",
    "wgpu",
    "ruff",
    "pyopencl",
)

# A fixed timestamp keeps the tang wheel byte-for-byte reproducible.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SUBPROCESS_TIMEOUT = 600
GZIP_MIN_SIZE = 100_000


class BuildError(Exception):
    """A problem the user can fix; main() prints it as one line and exits 1."""


def log(msg: str) -> None:
    print(f"build.py: {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def require(tool: str, what: str, how: str) -> None:
    if shutil.which(tool) is None:
        raise BuildError(f"{tool} not found, needed to {what}; {how}")


def run_tool(
    argv: list[str], what: str, how: str, cwd: Path | None = None, env: dict | None = None
) -> str:
    """Run an external client; any failure becomes a one-line BuildError."""
    if os.sep not in argv[0]:
        require(argv[0], what, how)
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env},
        )
    except subprocess.TimeoutExpired:
        raise BuildError(
            f"`{' '.join(argv)}` gave no answer in {SUBPROCESS_TIMEOUT} s while "
            f"trying to {what}: is the package registry reachable?"
        ) from None
    if proc.returncode != 0:
        raise BuildError(
            f"`{' '.join(argv)}` failed while trying to {what} "
            f"(is the package registry reachable?): {_gist(proc)}"
        )
    return proc.stdout


def _gist(proc: subprocess.CompletedProcess) -> str:
    """The line of a failed tool's output most likely to say why (errors first), shortened."""
    lines = [ln.strip() for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\b(error|ERR!|Error:)", ln) and len(ln) < 2000]
    line = (errors or lines or [f"exit code {proc.returncode}"])[-1]
    return line if len(line) <= 300 else line[:297] + "..."


# ---------------------------------------------------------------------------------------------
# downloads (cached)


def fetch_pyodide() -> Path:
    """The unpacked runtime folder in .cache/, fetched with `npm pack` on first use."""
    unpacked = CACHE / f"pyodide-{PYODIDE_VERSION}"
    stamp = unpacked / ".complete"
    if stamp.exists():
        return unpacked
    CACHE.mkdir(parents=True, exist_ok=True)
    tgz = CACHE / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tgz.exists() or sha256_file(tgz) != PYODIDE_TGZ_SHA256:
        what = f"download the Pyodide runtime (npm package pyodide@{PYODIDE_VERSION})"
        how = "install Node.js and npm (Debian: apt-get install nodejs npm)"
        require("npm", what, how)
        log(f"downloading pyodide@{PYODIDE_VERSION} with npm pack")
        run_tool(
            [
                "npm",
                "pack",
                f"pyodide@{PYODIDE_VERSION}",
                "--silent",
                "--pack-destination",
                str(CACHE),
            ],
            what=what,
            how=how,
            cwd=CACHE,
        )
        if not tgz.exists():
            raise BuildError(f"npm pack did not write {tgz.name} into {CACHE}")
        digest = sha256_file(tgz)
        if digest != PYODIDE_TGZ_SHA256:
            raise BuildError(
                f"{tgz.name} has sha256 {digest}, expected {PYODIDE_TGZ_SHA256}; "
                f"delete it and build again"
            )
    shutil.rmtree(unpacked, ignore_errors=True)
    unpacked.mkdir(parents=True)
    with tarfile.open(tgz) as tar:
        for name in PYODIDE_FILES:
            member = tar.getmember(f"package/{name}")
            src = tar.extractfile(member)
            assert src is not None
            (unpacked / name).write_bytes(src.read())
    stamp.write_text(PYODIDE_VERSION)
    return unpacked


def make_snapshot(runtime: Path) -> Path:
    """The interpreter snapshot in .cache/, made with node on first use."""
    key = hashlib.sha256(
        "\n".join((PYODIDE_VERSION, SNAPSHOT_SCRIPT, *SNAPSHOT_PRELOAD)).encode()
    ).hexdigest()[:16]
    path = CACHE / f"snapshot-{PYODIDE_VERSION}-{key}.bin"
    if path.exists():
        return path
    log("making the Python memory snapshot with node (once per Pyodide version)")
    script = CACHE / "make-snapshot.mjs"
    script.write_text(SNAPSHOT_SCRIPT)
    tmp = path.with_suffix(".tmp")
    run_tool(
        ["node", str(script), str(runtime), str(tmp), " ".join(SNAPSHOT_PRELOAD)],
        what="make the Python memory snapshot (runs Pyodide under node)",
        how="install Node.js 18 or newer (Debian: apt-get install nodejs)",
    )
    tmp.replace(path)
    for old in CACHE.glob("snapshot-*.bin"):
        if old != path:
            old.unlink()
    return path


def bundle_editor() -> Path | None:
    """web/editor/ (CodeMirror) bundled by esbuild into one ES module, cached in .cache/editor/.

    The npm packages are installed with `npm ci` from web/editor/package-lock.json into
    .cache/editor/deps/ (never into web/), once per lock file.
    """
    if not (EDITOR / "package.json").exists():
        return None
    files = [
        p
        for p in sorted(EDITOR.rglob("*"))
        if p.is_file() and "node_modules" not in p.relative_to(EDITOR).parts
    ]
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(EDITOR).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    folder = CACHE / "editor"
    out = folder / f"editor-{h.hexdigest()[:16]}.js"
    if out.exists():
        return out
    what = "bundle the editor (web/editor: CodeMirror with esbuild)"
    how = "install Node.js and npm (Debian: apt-get install nodejs npm)"
    deps = folder / "deps"
    manifests = [EDITOR / "package.json", EDITOR / "package-lock.json"]
    lock_key = hashlib.sha256(b"".join(m.read_bytes() for m in manifests if m.exists()))
    stamp = deps / ".installed"
    if not (stamp.exists() and stamp.read_text() == lock_key.hexdigest()):
        require("npm", what, how)
        log("installing the editor's npm packages (npm ci)")
        shutil.rmtree(deps, ignore_errors=True)
        deps.mkdir(parents=True)
        for m in manifests:
            if m.exists():
                shutil.copy(m, deps / m.name)
        command = "ci" if (deps / "package-lock.json").exists() else "install"
        run_tool(["npm", command, "--silent", "--no-audit", "--no-fund"], what, how, cwd=deps)
        stamp.write_text(lock_key.hexdigest())
    esbuild = deps / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists():
        raise BuildError(f"esbuild is missing from {EDITOR / 'package.json'}'s dependencies")
    tmp = out.with_suffix(".tmp.js")
    run_tool(
        [
            str(esbuild),
            str(EDITOR / "index.js"),
            "--bundle",
            "--format=esm",
            "--minify",
            "--log-level=error",
            f"--outfile={tmp}",
        ],
        what,
        how,
        env={"NODE_PATH": str(deps / "node_modules")},
    )
    tmp.replace(out)
    for old in folder.glob("editor-*.js"):
        if old != out:
            old.unlink()
    return out


def gzipped(src: Path) -> Path:
    """A gzip copy of src in .cache/gz/ (deterministic: no name, mtime 0), cached by content."""
    import gzip

    digest = _cached_sha256(src)
    path = CACHE / "gz" / f"{digest}.gz"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(src, "rb") as f:
            data = gzip.compress(f.read(), compresslevel=6, mtime=0)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


def fetch_wheels() -> dict[str, Path]:
    """The pinned wheels in .cache/wheels/, fetched with pip (for Python 3.14) when missing."""
    folder = CACHE / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {}
    missing = []
    for name, (req, filename, digest) in WHEELS.items():
        path = folder / filename
        wanted[name] = path
        if not (path.exists() and sha256_file(path) == digest):
            missing.append(req)
    if missing:
        log(f"downloading {', '.join(missing)} with pip")
        run_tool(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--python-version",
                "3.14",
                "--only-binary=:all:",
                "--no-deps",
                "-d",
                str(folder),
                *missing,
            ],
            what="download the wheels the page installs",
            how="install pip for this Python (python -m ensurepip, or apt-get install python3-pip)",
        )
        for _req, filename, digest in WHEELS.values():
            path = folder / filename
            if not path.exists():
                raise BuildError(f"pip did not download {filename} into {folder}")
            got = sha256_file(path)
            if got != digest:
                raise BuildError(f"{filename} has sha256 {got}, expected {digest}")
    return wanted


# ---------------------------------------------------------------------------------------------
# the tang wheel (built here with zipfile: no network, no build isolation, deterministic)


def tang_version() -> str:
    text = (ROOT / "tang" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    if not match:
        raise BuildError("tang/__init__.py has no __version__ = '...' line")
    return match.group(1)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def wheel_sources() -> list[tuple[str, Path]]:
    files = []
    for package in ("tang", "demos"):
        for path in sorted((ROOT / package).rglob("*")):
            if (
                path.is_file()
                and path.suffix in (".py", ".json", ".txt")
                and "__pycache__" not in path.parts
            ):
                files.append((path.relative_to(ROOT).as_posix(), path))
    return files


def compile_pyc(
    sources: list[tuple[str, Path]],
    runtime: Path,
    snapshot: Path,
    quiet: bool = False,
    label: str = "tang",
) -> dict[str, Path]:
    """arc name of each .py -> its CPython 3.14 .pyc in .cache/pyc/ (cached by content)."""
    folder = CACHE / "pyc"
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256((PYODIDE_VERSION + PYC_SCRIPT).encode()).hexdigest()[:8]
    found, jobs = {}, []
    for arc, src in sources:
        if not arc.endswith(".py"):
            continue
        filename = f"{PYODIDE_SITE_PACKAGES}/{arc}"
        digest = hashlib.sha256(src.read_bytes() + filename.encode()).hexdigest()[:32]
        out = folder / f"{key}-{digest}.pyc"
        found[arc] = out
        if not out.exists():
            jobs.append({"src": str(src), "filename": filename, "out": str(out)})
    if jobs:
        if not quiet:
            log(f"compiling {len(jobs)} module(s) of {label} to CPython 3.14 bytecode (Pyodide)")
        script = CACHE / "compile-pyc.mjs"
        script.write_text(PYC_SCRIPT)
        jobs_file = CACHE / "pyc-jobs.json"
        jobs_file.write_text(json.dumps(jobs))
        run_tool(
            ["node", str(script), str(runtime), str(snapshot), str(jobs_file)],
            what="compile tang to bytecode (runs Pyodide under node)",
            how="install Node.js 18 or newer (Debian: apt-get install nodejs)",
        )
    return {arc: pyc for arc, pyc in found.items() if pyc.exists()}


def pyc_name(arc: str) -> str:
    folder, _, name = arc.rpartition("/")
    return f"{folder}/__pycache__/{name[:-3]}.cpython-314.pyc"


def _wheel_bytes(entries: list[tuple[str, bytes]], dist_info: str) -> bytes:
    """A wheel (zip) of `entries` plus a fresh RECORD, with fixed timestamps."""
    entries = [(arc, data) for arc, data in entries if arc != f"{dist_info}/RECORD"]
    record = "".join(f"{arc},{_record_hash(data)},{len(data)}\n" for arc, data in entries)
    record += f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return buf.getvalue()


def precompile_wheel(src: Path, runtime: Path, snapshot: Path) -> Path:
    """`src` with CPython 3.14 bytecode added and its tests left out (cached in
    .cache/wheels-pyc/)."""
    out = CACHE / "wheels-pyc" / src.name
    stamp = out.with_suffix(".source-sha256")
    digest = _cached_sha256(src)
    if out.exists() and stamp.exists() and stamp.read_text() == digest:
        return out
    (CACHE / "wheels-pyc").mkdir(parents=True, exist_ok=True)
    unpacked = Path(tempfile.mkdtemp(prefix="unpacked-", dir=CACHE / "wheels-pyc"))
    with zipfile.ZipFile(src) as zf:
        names = zf.namelist()
        zf.extractall(unpacked)
    dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
    names = [n for n in names if "/tests/" not in n]  # as Pyodide does: tests stay out
    sources = [(n, unpacked / n) for n in names if n.endswith(".py")]
    pycs = compile_pyc(sources, runtime, snapshot, quiet=False, label=src.name)
    entries = [(n, (unpacked / n).read_bytes()) for n in names if not n.endswith("/")]
    entries += [(pyc_name(arc), pyc.read_bytes()) for arc, pyc in sorted(pycs.items())]
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(_wheel_bytes(entries, dist_info))
    tmp.replace(out)
    stamp.write_text(digest)
    shutil.rmtree(unpacked, ignore_errors=True)
    return out


def build_tang_wheel(out_dir: Path, pycs: dict[str, Path] | None = None) -> Path:
    version = tang_version()
    dist_info = f"tang-{version}.dist-info"
    path = out_dir / f"tang-{version}-py3-none-any.whl"
    sources = wheel_sources()
    entries: list[tuple[str, bytes]] = [(arc, src.read_bytes()) for arc, src in sources]
    entries += [(pyc_name(arc), pyc.read_bytes()) for arc, pyc in sorted((pycs or {}).items())]
    metadata = (
        f"Metadata-Version: 2.1\nName: tang\nVersion: {version}\n"
        "Summary: Plain Python math, written once, run on floats, dual numbers and "
        "traced graphs.\nRequires-Python: >=3.11\n"
    )
    entries += [
        (f"{dist_info}/METADATA", metadata.encode()),
        (
            f"{dist_info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: tang build.py\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        (f"{dist_info}/top_level.txt", b"demos\ntang\n"),
    ]
    data = _wheel_bytes(entries, dist_info)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------------------------
# dist/


def _place(src: Path | bytes, dest: Path) -> None:
    """Copy (or write) into dest unless it already holds the same bytes."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(src, bytes):
        if not dest.exists() or dest.read_bytes() != src:
            dest.write_bytes(src)
        return
    if dest.exists():
        s, d = src.stat(), dest.stat()
        if s.st_size == d.st_size and int(s.st_mtime) == int(d.st_mtime):
            return
    shutil.copy2(src, dest)


def _tree(folder: Path) -> list[tuple[str, Path]]:
    return [
        (p.relative_to(folder).as_posix(), p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")
    ]


@contextlib.contextmanager
def _build_lock():
    """One build at a time per cache folder (tests and a dev server may build at once)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    with open(CACHE / "build.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build(out: Path = DIST, with_tests: bool = False, quiet: bool = False) -> dict:
    """Make the static site in `out`; returns the manifest. Cheap when nothing changed."""
    with _build_lock():
        return _build(Path(out), with_tests, quiet)


def _build(out: Path, with_tests: bool, quiet: bool) -> dict:
    started = time.perf_counter()
    runtime = fetch_pyodide()
    wheels = fetch_wheels()
    placed: set[str] = set()

    def place(rel: str, src: Path | bytes) -> None:
        _place(src, out / rel)
        placed.add(rel)

    for rel, src in _tree(WEB):
        if not rel.startswith("editor/"):
            place(rel, src)
    editor = bundle_editor()
    if editor is not None:
        place("editor.js", editor)
    for name in PYODIDE_FILES:
        place(f"pyodide/{name}", runtime / name)
    snapshot = make_snapshot(runtime)
    place("pyodide/snapshot.bin", snapshot)
    wheel_files = {}
    for name, path in wheels.items():
        if name in PRECOMPILE:
            path = precompile_wheel(path, runtime, snapshot)
        place(f"wheels/{path.name}", path)
        wheel_files[name] = f"wheels/{path.name}"
    tang_whl = build_tang_wheel(
        CACHE / "tang-wheel", compile_pyc(wheel_sources(), runtime, snapshot)
    )
    place(f"wheels/{tang_whl.name}", tang_whl)
    wheel_files["tang"] = f"wheels/{tang_whl.name}"
    if with_tests:
        for rel, src in _tree(TEST_SITE):
            place(f"_test/{rel}", src)

    # Precompressed copies of the big runtime files: make_server() sends them with
    # Content-Encoding: gzip (any static host that compresses does the same).
    for rel in sorted(placed):
        if (
            rel.startswith("pyodide/")
            and (out / rel).stat().st_size > GZIP_MIN_SIZE
            and not rel.endswith(".zip")
        ):
            place(rel + ".gz", gzipped(out / rel))

    # Drop whatever an earlier build left that this one did not produce.
    for path in sorted(out.rglob("*"), reverse=True):
        rel = path.relative_to(out).as_posix()
        if path.is_file() and rel not in placed and rel != "manifest.json":
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()

    files = {}
    for rel in sorted(placed):
        path = out / rel
        files[rel] = {"sha256": _cached_sha256(path), "size": path.stat().st_size}
    manifest = {
        "tang": tang_version(),
        "pyodide": PYODIDE_VERSION,
        "wheels": dict(sorted(wheel_files.items())),
        "files": files,
    }
    place("manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
    if not quiet:
        total = sum(f["size"] for f in files.values())
        log(
            f"dist ready: {out} ({len(files)} files, {total / 1e6:.1f} MB, "
            f"{time.perf_counter() - started:.2f} s)"
        )
    return manifest


_HASH_CACHE: dict[tuple[str, int, int], str] = {}


def _cached_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _HASH_CACHE:
        _HASH_CACHE[key] = sha256_file(path)
    return _HASH_CACHE[key]


# ---------------------------------------------------------------------------------------------
# serve


MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".wasm": "application/wasm",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with the headers the page needs.

    COOP/COEP make the page cross-origin isolated, so the page can share an interrupt buffer
    (SharedArrayBuffer) with the worker and cancel running Python. `no-cache` lets the browser
    keep files but revalidate them (a 304 on an unchanged file), so a reload is warm and a
    rebuild is never stale.
    """

    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        **MIME_TYPES,
    }
    protocol_version = "HTTP/1.1"

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def send_head(self):
        """Send `<file>.gz` with Content-Encoding: gzip when it exists and the client takes it."""
        path = Path(self.translate_path(self.path))
        gz = path.with_name(path.name + ".gz")
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and gz.is_file()):
            return super().send_head()
        stat = path.stat()
        since = self.headers.get("If-Modified-Since")
        if since and "If-None-Match" not in self.headers:
            with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
                when = email.utils.parsedate_to_datetime(since)
                if when.tzinfo is None:
                    when = when.replace(tzinfo=datetime.UTC)
                if int(stat.st_mtime) <= when.timestamp():
                    self.send_response(http.HTTPStatus.NOT_MODIFIED)
                    self.send_header("Vary", "Accept-Encoding")
                    self.end_headers()
                    return None
        f = open(gz, "rb")  # noqa: SIM115 (closed by the base class after copying)
        self.send_response(http.HTTPStatus.OK)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(gz.stat().st_size))
        self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
        self.end_headers()
        return f

    def log_message(self, format: str, *args) -> None:
        pass  # quiet: errors still reach the browser as status codes

    def handle_one_request(self) -> None:
        with contextlib.suppress(ConnectionError):
            super().handle_one_request()


class SiteServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(directory: Path = DIST, port: int = 8000, host: str = "127.0.0.1") -> SiteServer:
    """A threaded server for `directory`; port 0 picks a free port (see .server_address)."""
    handler = functools.partial(SiteHandler, directory=str(directory))
    return SiteServer((host, port), handler)


def serve(port: int, out: Path = DIST) -> None:
    build(out)
    try:
        server = make_server(out, port)
    except OSError as exc:
        raise BuildError(
            f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); try --port with another number"
        ) from None
    host, real_port = server.server_address[:2]
    print(f"Serving {out} at http://{host}:{real_port}/  (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


# ---------------------------------------------------------------------------------------------
# test


def _missing_distributions() -> list[str]:
    from importlib import metadata

    missing = []
    for name in DEV_DISTRIBUTIONS:
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def _missing_apt_packages() -> list[str]:
    if shutil.which("dpkg-query") is None:
        return [] if Path("/usr/bin/chromium").exists() else ["chromium"]
    missing = []
    for name in APT_PACKAGES:
        proc = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True
        )
        if "install ok installed" not in proc.stdout:
            missing.append(name)
    return missing


def ensure_test_requirements() -> None:
    missing = _missing_distributions()
    if missing:
        log(f"installing Python test requirements ({', '.join(missing)}): pip install -e .[dev]")
        run_tool(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-e",
                f"{ROOT}[dev]",
            ],
            what="install the test requirements (pip install -e .[dev])",
            how="install pip for this Python (python -m ensurepip, or apt-get install python3-pip)",
        )
    missing = _missing_apt_packages()
    if not missing:
        return
    names = " ".join(missing)
    if shutil.which("apt-get") is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise BuildError(
            f"missing system packages: {names}; install them as root with "
            f"`apt-get install -y {names}` (Debian/Ubuntu), then run again"
        )
    log(f"installing system packages: {names}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
    ):
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=1800
        )
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
            raise BuildError(
                f"`{' '.join(argv)}` failed (is the Debian mirror reachable?): "
                f"{lines[-1] if lines else proc.returncode}"
            )


def test(pytest_args: list[str]) -> int:
    started = time.perf_counter()
    ensure_test_requirements()
    build(DIST)
    targets = [d for d in ("tests", "e2e") if (ROOT / d).is_dir()]
    if any(Path(ROOT, a.split("::")[0]).exists() for a in pytest_args if not a.startswith("-")):
        targets = []  # the caller named what to run
    argv = [sys.executable, "-m", "pytest", *targets, *pytest_args]
    log(" ".join(argv[2:]))
    code = subprocess.run(argv, cwd=ROOT).returncode
    if code == 5:
        log("pytest collected no tests: counting that as a failure")
        code = 1
    log(f"{'passed' if code == 0 else 'FAILED'} in {time.perf_counter() - started:.0f} s")
    return code


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="make dist/ (incremental)")
    p_build.add_argument("--out", type=Path, default=DIST, help="output folder (default dist/)")
    p_build.add_argument(
        "--with-tests",
        action="store_true",
        help="add the e2e test harness under _test/ (never in a shipped site)",
    )
    p_serve = sub.add_parser("serve", help="build, then serve dist/ on 127.0.0.1")
    p_serve.add_argument("--port", type=int, default=8000, help="port (0: any free port)")
    sub.add_parser(
        "test", help="install test needs, build, run pytest over tests/ and e2e/", add_help=False
    )
    args, rest = parser.parse_known_args(argv)
    try:
        if args.command == "test":
            return test(rest)
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        if args.command == "build":
            build(args.out, with_tests=args.with_tests)
        elif args.command == "serve":
            serve(args.port)
    except BuildError as exc:
        print(f"build.py: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
